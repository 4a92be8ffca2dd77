/*
 * cmd_compare.c -- `kvsim compare BASE CAND` and `kvsim compare --suite`.
 *
 * BASE and CAND are result directories (a run's summary.csv or a sweep's
 * sweep.csv); reports/compare.h reads them, groups a sweep's rows by
 * configuration (the swept keys other than the seed) and judges every
 * metric of every configuration found on both sides.  A suite file names
 * run configurations, seeds, and the overrides that make the baseline and
 * the candidate; its runs are child `kvsim run`s (reports/sweep.h's pool)
 * under --out, and each configuration is compared as a group.
 *
 * Exit: 0 no regression; 1 a regression (or a suite run failed); 2 bad
 * usage or input.
 */
#define _XOPEN_SOURCE 700	/* realpath() */

#include "config.h"

#include "sim/cli/cmd_compare.h"

#include "reports/compare.h"
#include "reports/sweep.h"
#include "sim/cli/children.h"
#include "sim/cli/opts.h"
#include "sim/cli/outdir.h"
#include "sim/cli/simrun.h"
#include "sim/run.h"
#include "sim/runcfg.h"
#include "util/ydoc.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int compare_main(int argc, char **argv);
/* cmd_sweep.c: a --set error message less its "--set KEY=VALUE: " */
const char *sweep_set_message(const char *msg, const char *assign);
int auto_plot(const char *prog, const char *dir, bool quiet); /* cmd_run.c */

static void
compare_usage(FILE *f)
{
	fprintf(f,
"usage: kvsim compare BASE CAND [--fail-on METRIC:THRESHOLD]... [--alpha A]\n"
"                     [--no-defaults] [--out FILE|DIR] [--no-plot] [--quiet]\n"
"       kvsim compare --suite SUITE.yaml [--out DIR] [--jobs K] [--resume]\n"
"                     [--force] [--fail-on ...] [--alpha A] [--quiet]\n"
"\n"
"Compare a candidate's results with a baseline's, metric by metric, and\n"
"exit 1 on a regression.  BASE and CAND are `kvsim run` directories\n"
"(summary.csv) or `kvsim sweep` directories (sweep.csv: the seeds of each\n"
"configuration are pooled and tested with Welch's t-test).\n"
"\n"
"  --fail-on M:T      threshold for metric M (a summary.csv column, or\n"
"                     NAME_s:QUANTILE): +5%% fails when the candidate is more\n"
"                     than 5%% higher, -2%% when more than 2%% lower, +0 on any\n"
"                     increase, +10%%+5 when more than 10%% and more than 5\n"
"                     higher (what decides from a baseline of 0), off\n"
"                     never; repeatable; replaces M's default\n"
"  --no-defaults      only the --fail-on metrics have thresholds\n"
"  --alpha A          significance level of the t-test (default 0.05)\n"
"  -o, --out PATH     compare.csv, or a directory for it (default:\n"
"                     ./compare-BASE-vs-CAND, named by the inputs' last\n"
"                     parts; with --suite, kvsim-out/suite)\n"
"  --suite FILE       run the suite's configurations for both sides first\n"
"  -j, --jobs K       suite runs at once (default: the online CPUs)\n"
"  -r, --resume       suite: keep runs already complete\n"
"  -f, --force        suite: run everything again\n"
"      --no-plot      no plots (made beside a file named compare.csv when\n"
"                     gnuplot is installed)\n"
"  -q, --quiet        no table, only the verdict line\n"
"  -h, --help         this help\n"
"\n"
"docs/compare.md lists the metrics, their default thresholds and the test.\n"
"Exit status: 0 no regression, 1 a regression, 2 bad usage or input.\n");
}

struct opts {
	struct cli_opts c;		/* --out, --jobs, --resume, --force,
					 * --no-plot, --quiet */
	struct cmp_threshold *th;	/* the user's --fail-on */
	size_t nth;
	bool no_defaults;
	double alpha;
};

/* The thresholds in report order: defaults (less those overridden), then
 * the user's others; with --no-defaults the user's alone. */
static struct cmp_threshold *
thresholds(const struct opts *o, size_t *n)
{
	const struct cmp_threshold *d;
	size_t nd = cmp_default_thresholds(&d), k = 0;
	struct cmp_threshold *t = calloc(nd + o->nth + 1, sizeof(*t));

	if (t == NULL)
		return NULL;
	for (size_t i = 0; i < nd && !o->no_defaults; i++) {
		t[k] = d[i];
		for (size_t j = 0; j < o->nth; j++)
			if (strcmp(o->th[j].metric, d[i].metric) == 0)
				t[k] = o->th[j];
		k++;
	}
	/* a metric given again: the last --fail-on wins, as over a
	 * default */
	for (size_t j = 0; j < o->nth; j++) {
		size_t i = 0;

		while (i < k && strcmp(t[i].metric, o->th[j].metric) != 0)
			i++;
		t[i] = o->th[j];
		if (i == k)
			k++;
	}
	*n = k;
	return t;
}

/* Where compare.csv goes: PATH if it ends in .csv, else PATH/compare.csv
 * (the directory is created). */
static int
out_path(const char *path, char *buf, size_t len)
{
	size_t n = strlen(path);

	if (n >= 4 && strcmp(path + n - 4, ".csv") == 0) {
		snprintf(buf, len, "%s", path);
		return 0;
	}
	if (outdir_mkdir_p(path) != 0) {
		fprintf(stderr, "kvsim compare: --out %s: %s\n", path,
			strerror(errno));
		return KVSIM_EXIT_USAGE;
	}
	while (n > 1 && path[n - 1] == '/')
		n--;
	snprintf(buf, len, "%.*s/compare.csv", (int)n, path);
	return 0;
}

static const char *
base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL ? slash + 1 : path;
}

/* "sweep: 2 configurations, 3 seeds each" */
static void
describe(const cmp_side *s, char *buf, size_t len)
{
	size_t lo = SIZE_MAX, hi = 0, ng = cmp_side_ngroups(s);

	for (size_t g = 0; g < ng; g++) {
		size_t n = cmp_side_group_size(s, g);

		lo = n < lo ? n : lo;
		hi = n > hi ? n : hi;
	}
	if (lo == hi)
		snprintf(buf, len, "%s: %zu configuration%s, %zu seed%s each",
			 cmp_side_kind(s), ng, ng == 1 ? "" : "s", lo,
			 lo == 1 ? "" : "s");
	else
		snprintf(buf, len, "%s: %zu configurations, %zu to %zu seeds "
			 "each", cmp_side_kind(s), ng, lo, hi);
}

/* A metric the user named must exist on both sides (a default one may
 * be absent: its rows are left out).  0, or 2 with the message. */
static int
named_metrics(const cmp_side *b, const cmp_side *c, const char *bname,
	      const char *cname, const struct opts *o)
{
	for (size_t j = 0; j < o->nth; j++)
		if (!cmp_side_has(b, o->th[j].metric) ||
		    !cmp_side_has(c, o->th[j].metric)) {
			fprintf(stderr, "kvsim compare: --fail-on %s: no "
				"column '%s' in %s\n", o->th[j].metric,
				o->th[j].metric, cmp_side_has(b,
				o->th[j].metric) ? cname : bname);
			return KVSIM_EXIT_USAGE;
		}
	return 0;
}

/*
 * Pair the configurations of the two sides: pb[k] and pc[k] with label
 * label[k] (allocated), *npair of them.  0, KVSIM_EXIT_USAGE with the
 * message, or -1 out of memory.
 */
static int
compare_pair(const cmp_side *b, const cmp_side *c, const char *bname,
	     const char *cname, size_t *pb, size_t *pc, char **label,
	     size_t *npair)
{
	if (cmp_side_ngroups(b) == 1 && cmp_side_ngroups(c) == 1) {
		const char *lb = cmp_side_group(b, 0);
		const char *lc = cmp_side_group(c, 0);
		size_t n = strlen(lb) + strlen(lc) + 8;

		if ((label[0] = malloc(n)) == NULL)
			return -1;
		if (strcmp(lb, lc) == 0)
			snprintf(label[0], n, "%s", lb);
		else
			snprintf(label[0], n, "%s vs %s", lb[0] ? lb : "-",
				 lc[0] ? lc : "-");
		*npair = 1;
		return KVSIM_EXIT_OK;
	}
	if (strcmp(cmp_side_keys(b), cmp_side_keys(c)) != 0) {
		fprintf(stderr, "kvsim compare: %s varies (%s) and %s varies "
			"(%s): their configurations cannot be matched\n",
			bname, cmp_side_keys(b)[0] ? cmp_side_keys(b)
			: "seed only", cname, cmp_side_keys(c)[0] ?
			cmp_side_keys(c) : "seed only");
		return KVSIM_EXIT_USAGE;
	}
	for (size_t g = 0; g < cmp_side_ngroups(b); g++) {
		size_t h;

		for (h = 0; h < cmp_side_ngroups(c); h++)
			if (strcmp(cmp_side_group(b, g),
				   cmp_side_group(c, h)) == 0)
				break;
		if (h == cmp_side_ngroups(c)) {
			fprintf(stderr, "kvsim compare: %s: only in %s, not "
				"compared\n", cmp_side_group(b, g), bname);
			continue;
		}
		pb[*npair] = g;
		pc[*npair] = h;
		if ((label[*npair] = strdup(cmp_side_group(b, g))) == NULL)
			return -1;
		(*npair)++;
	}
	for (size_t h = 0; h < cmp_side_ngroups(c); h++) {
		bool seen = false;

		for (size_t k = 0; k < *npair; k++)
			seen = seen || pc[k] == h;
		if (!seen)
			fprintf(stderr, "kvsim compare: %s: only in %s, not "
				"compared\n", cmp_side_group(c, h), cname);
	}
	if (*npair == 0) {
		fprintf(stderr, "kvsim compare: %s and %s have no "
			"configuration in common\n", bname, cname);
		return KVSIM_EXIT_USAGE;
	}
	return KVSIM_EXIT_OK;
}

/* The largest group of either side: room for its values. */
static size_t
compare_maxn(const cmp_side *b, const cmp_side *c)
{
	size_t maxn = 1;

	for (size_t g = 0; g < cmp_side_ngroups(b); g++)
		maxn = cmp_side_group_size(b, g) > maxn
		     ? cmp_side_group_size(b, g) : maxn;
	for (size_t g = 0; g < cmp_side_ngroups(c); g++)
		maxn = cmp_side_group_size(c, g) > maxn
		     ? cmp_side_group_size(c, g) : maxn;
	return maxn;
}

/* The `test` line: Welch's t-test where both sides have two seeds or
 * more, none where a side has one (the threshold alone decides). */
static void
print_test(const struct cmp_row *row, size_t nrow, double alpha)
{
	size_t one = 0;

	for (size_t i = 0; i < nrow; i++)
		one += row[i].nb < 2 || row[i].nc < 2;
	if (nrow > 0 && one == nrow)
		printf("  test       none: one seed on a side, the threshold "
		       "alone decides\n");
	else
		printf("  test       Welch's t-test on per-seed values that "
		       "the change exceeds the\n             threshold, "
		       "alpha %g%s\n", alpha, one > 0 ? " (none where a "
		       "side has one seed)" : "");
}

/* compare.csv at `csv`, the table, the verdict line and the plots;
 * returns the exit status. */
static int
compare_report(const cmp_side *b, const cmp_side *c, const char *bname,
	       const char *cname, const struct opts *o, const char *csv,
	       const struct cmp_row *row, size_t nrow, size_t nreg)
{
	char tmp[4400];
	FILE *f;
	int rc = KVSIM_EXIT_OK;

	if ((f = sweep_create(csv, tmp, sizeof(tmp))) == NULL) {
		fprintf(stderr, "kvsim compare: %s: %s\n", csv,
			strerror(errno));
		return KVSIM_EXIT_USAGE;
	}
	if (cmp_write_csv(f, row, nrow) != 0 ||
	    sweep_commit(f, tmp, csv) != 0) {
		fprintf(stderr, "kvsim compare: %s: %s\n", csv,
			strerror(errno));
		return KVSIM_EXIT_USAGE;
	}
	if (!o->c.quiet) {
		char db[128], dc[128];

		describe(b, db, sizeof(db));
		describe(c, dc, sizeof(dc));
		printf("kvsim compare\n");
		printf("  baseline   %s (%s)\n", bname, db);
		printf("  candidate  %s (%s)\n", cname, dc);
		print_test(row, nrow, o->alpha);
		cmp_print_table(stdout, row, nrow);
		printf("\n");
	}
	if (nreg > 0) {
		size_t shown = 0;

		printf("kvsim compare: %zu regression%s:", nreg,
		       nreg == 1 ? "" : "s");
		for (size_t i = 0; i < nrow && shown < 6; i++)
			if (row[i].verdict == CMP_REGRESSION)
				printf("%s %s%s%s%s", shown++ ? "," : "",
				       row[i].metric,
				       row[i].config[0] ? " (" : "",
				       row[i].config,
				       row[i].config[0] ? ")" : "");
		printf("%s; %s\n", nreg > shown ? ", ..." : "", csv);
		rc = KVSIM_EXIT_FAIL;
	} else {
		printf("kvsim compare: no regression (%zu metric%s compared); "
		       "%s\n", nrow, nrow == 1 ? "" : "s", csv);
	}
	if (!o->c.no_plot && strcmp(base_name(csv), "compare.csv") == 0) {
		/* plots beside compare.csv (plot_dir finds it by name) */
		const char *slash = strrchr(csv, '/');

		snprintf(tmp, sizeof(tmp), "%.*s", slash != NULL ?
			 (int)(slash - csv) : 1, slash != NULL ? csv : ".");
		fflush(stdout);
		if (auto_plot("kvsim compare", tmp, o->c.quiet) != 0)
			rc = KVSIM_EXIT_FAIL;
	}
	return rc;
}

/*
 * Judge every metric of every configuration on both sides; write
 * compare.csv at `csv` and print the table.  Returns the exit status.
 */
static int
compare_sides(const cmp_side *b, const cmp_side *c, const char *bname,
	      const char *cname, const struct opts *o, const char *csv)
{
	size_t nth, npair = 0, nrow = 0, nreg = 0, cap = 0, maxn;
	struct cmp_threshold *th = thresholds(o, &nth);
	struct cmp_row *row = NULL;
	size_t *pb = NULL, *pc = NULL;
	char **label = NULL, err[1400];
	double *vb = NULL, *vc = NULL;
	int rc = 0;

	if (th == NULL)
		goto oom;
	if ((rc = named_metrics(b, c, bname, cname, o)) != 0)
		goto out;
	cap = cmp_side_ngroups(b) + 1;
	pb = calloc(cap, sizeof(*pb));
	pc = calloc(cap, sizeof(*pc));
	label = calloc(cap, sizeof(*label));
	if (pb == NULL || pc == NULL || label == NULL)
		goto oom;
	if ((rc = compare_pair(b, c, bname, cname, pb, pc, label,
			       &npair)) < 0)
		goto oom;
	if (rc != 0)
		goto out;
	maxn = compare_maxn(b, c);
	vb = calloc(maxn, sizeof(*vb));
	vc = calloc(maxn, sizeof(*vc));
	row = calloc(npair * nth + 1, sizeof(*row));
	if (vb == NULL || vc == NULL || row == NULL)
		goto oom;
	for (size_t k = 0; k < npair; k++)
		for (size_t i = 0; i < nth; i++) {
			size_t nb, nc;

			if (cmp_side_values(b, pb[k], th[i].metric, vb, &nb,
					    err, sizeof(err)) != KV_OK ||
			    cmp_side_values(c, pc[k], th[i].metric, vc, &nc,
					    err, sizeof(err)) != KV_OK) {
				fprintf(stderr, "kvsim compare: %s\n", err);
				rc = KVSIM_EXIT_USAGE;
				goto out;
			}
			if (nb == 0 || nc == 0)
				continue;	/* absent or empty (tpot) */
			row[nrow].config = label[k];
			snprintf(row[nrow].metric, sizeof(row[nrow].metric),
				 "%s", th[i].metric);
			cmp_judge(vb, nb, vc, nc, &th[i], o->alpha,
				  &row[nrow]);
			if (row[nrow].verdict == CMP_REGRESSION)
				nreg++;
			nrow++;
		}
	rc = compare_report(b, c, bname, cname, o, csv, row, nrow, nreg);
	goto out;
oom:
	fprintf(stderr, "kvsim compare: out of memory\n");
	rc = KVSIM_EXIT_USAGE;
out:
	for (size_t k = 0; label != NULL && k < cap; k++)
		free(label[k]);
	free(label);
	free(pb);
	free(pc);
	free(vb);
	free(vc);
	free(row);
	free(th);
	return rc;
}

/* ---- suite mode -------------------------------------------------------- */

struct assign {
	char *text;		/* "key=value" */
	char where[SIM_WHERE_LEN];	/* FILE:LINE:COL of the value */
};

struct suite {
	char **config;		/* paths as run takes them; NULL: the
				 * embedded default */
	char **trace;		/* "workload.trace=PATH" or NULL */
	char **name;		/* result names, unique */
	char (*cwhere)[SIM_WHERE_LEN];
	size_t nconfig;
	char **seed;
	size_t nseed;
	struct assign *side[3];	/* common, baseline, candidate */
	size_t nside[3];
};

static void
suite_release(struct suite *s)
{
	for (size_t i = 0; i < s->nconfig; i++) {
		free(s->config[i]);
		free(s->trace[i]);
		free(s->name[i]);
	}
	for (size_t i = 0; i < s->nseed; i++)
		free(s->seed[i]);
	for (int k = 0; k < 3; k++) {
		for (size_t i = 0; i < s->nside[k]; i++)
			free(s->side[k][i].text);
		free(s->side[k]);
	}
	free(s->config);
	free(s->trace);
	free(s->name);
	free(s->cwhere);
	free(s->seed);
}

/* Flatten a mapping of overrides (dotted keys, or nested mappings) into
 * "a.b=v" assignments.  0, or 2 with the message printed. */
static int
flatten(const char *file, const struct yd_node *m, const char *prefix,
	struct assign **a, size_t *n)
{
	if (m->type != YD_MAP) {
		fprintf(stderr, "%s:%lu:%lu: %s: expected a mapping of keys "
			"to values\n", file, m->line, m->col, prefix);
		return KVSIM_EXIT_USAGE;
	}
	for (size_t i = 0; i < m->n; i++) {
		const struct yd_node *k = yd_key(m, i), *v = yd_val(m, i);
		size_t len = strlen(prefix) + strlen(k->str) + 2;
		char *key = malloc(len);
		int rc = 0;

		if (key == NULL)
			return KVSIM_EXIT_USAGE;
		snprintf(key, len, "%s%s%s", prefix, prefix[0] ? "." : "",
			 k->str);
		if (v->type == YD_MAP && strcmp(key, "set") != 0) {
			rc = flatten(file, v, key, a, n);
		} else if (v->type != YD_SCALAR) {
			fprintf(stderr, "%s:%lu:%lu: %s: expected a scalar "
				"value\n", file, v->line, v->col, key);
			rc = KVSIM_EXIT_USAGE;
		} else {
			struct assign *p = realloc(*a, (*n + 1) * sizeof(*p));
			size_t tl = strlen(key) + strlen(v->str) + 2;

			if (p == NULL || (p[*n].text = malloc(tl)) == NULL) {
				if (p != NULL)
					*a = p;
				free(key);
				return KVSIM_EXIT_USAGE;
			}
			*a = p;
			snprintf(p[*n].text, tl, "%s=%s", key, v->str);
			snprintf(p[*n].where, sizeof(p[*n].where),
				 "%s:%lu:%lu", file, v->line, v->col);
			(*n)++;
		}
		free(key);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static const char *const side_key[3] = { "set", "baseline", "candidate" };

/*
 * The model, GPU and policy of one side's configuration are ones `kvsim
 * run` takes; an error names the override that set the bad one (the
 * side's own, else a common one), else the configuration's value.
 */
static int
suite_names(const struct suite *s, int side, const struct sim_config *c)
{
	const struct assign *by = NULL;
	const char *bad;
	char err[1400];
	size_t n;

	if (sim_run_check_names(c, &bad, err, sizeof(err)) == 0)
		return 0;
	n = strlen(bad);
	for (int x = 0; x < 2; x++) {
		int k = x == 0 ? 0 : side;

		for (size_t j = 0; j < s->nside[k]; j++)
			if (n > 0 && strncmp(s->side[k][j].text, bad, n) == 0 &&
			    s->side[k][j].text[n] == '=')
				by = &s->side[k][j];
	}
	if (by != NULL)
		fprintf(stderr, "%s: %s\n", by->where, err);
	else if (n > 0)
		fprintf(stderr, "%s: %s\n", sim_config_where(c, bad), err);
	else
		fprintf(stderr, "%s\n", err);
	return KVSIM_EXIT_USAGE;
}

/* Each configuration loads, and takes the overrides of both sides. */
static int
suite_check(const struct suite *s)
{
	char err[1400];

	for (size_t i = 0; i < s->nconfig; i++)
		for (int side = 1; side < 3; side++) {
			struct sim_config c;
			int rc = 0;

			sim_config_init(&c);
			if (s->config[i] != NULL &&
			    sim_config_load(&c, s->config[i], err,
					    sizeof(err)) != KV_OK) {
				fprintf(stderr, "%s\n", err);
				rc = KVSIM_EXIT_USAGE;
			}
			if (rc == 0 && s->trace[i] != NULL &&
			    sim_config_set(&c, s->trace[i], err, sizeof(err))
			    != KV_OK) {
				fprintf(stderr, "%s: %s\n", s->cwhere[i],
					sweep_set_message(err, s->trace[i]));
				rc = KVSIM_EXIT_USAGE;
			}
			/* the common overrides, then this side's */
			for (int x = 0; x < 2 && rc == 0; x++) {
				int k = x == 0 ? 0 : side;

				for (size_t j = 0; j < s->nside[k] && rc == 0;
				     j++) {
					const struct assign *a = &s->side[k][j];

					if (sim_config_set(&c, a->text, err,
							   sizeof(err)) ==
					    KV_OK)
						continue;
					fprintf(stderr, "%s: %s\n", a->where,
						sweep_set_message(err,
								  a->text));
					rc = KVSIM_EXIT_USAGE;
				}
			}
			if (rc == 0 && sim_config_finish(&c, err, sizeof(err))
			    != KV_OK) {
				fprintf(stderr, "%s: %s\n", s->cwhere[i], err);
				rc = KVSIM_EXIT_USAGE;
			}
			if (rc == 0)
				rc = suite_names(s, side, &c);
			if (rc == 0) {
				/* everything else a run would refuse before
				 * it starts (sizing, the policy's setup, the
				 * trace), before any run starts, as sweep */
				struct sim_run_opts ro;
				sim_run *R = NULL;
				char prog[SIM_WHERE_LEN + 32];

				memset(&ro, 0, sizeof(ro));
				snprintf(prog, sizeof(prog), "%s: %s",
					 s->cwhere[i], side == 1 ?
					 "baseline" : "candidate");
				ro.prog = prog;
				ro.quiet = true;
				/* any failure here is the suite's input */
				if (simrun_open(&R, &c, &ro) != KVSIM_EXIT_OK)
					rc = KVSIM_EXIT_USAGE;
				sim_run_close(R);
			}
			sim_config_release(&c);
			if (rc != 0)
				return rc;
		}
	return 0;
}

static char *
dup_path(const char *suite, const char *p)
{
	const char *slash = strrchr(suite, '/');
	size_t n;
	char *r;

	if (p[0] == '/' || slash == NULL)
		return strdup(p);
	n = (size_t)(slash - suite) + strlen(p) + 2;
	if ((r = malloc(n)) != NULL)
		snprintf(r, n, "%.*s/%s", (int)(slash - suite), suite, p);
	return r;
}

/* The name of a configuration's results: its file name less .yaml,
 * made unique with -2, -3 ... */
static char *
result_name(const struct suite *s, const char *path)
{
	const char *b = base_name(path), *dot = strrchr(b, '.');
	char buf[256];
	size_t n;

	n = dot != NULL && dot != b ? (size_t)(dot - b) : strlen(b);
	snprintf(buf, sizeof(buf), "%.*s", (int)(n < 200 ? n : 200), b);
	for (int k = 2;; k++) {
		bool seen = false;

		for (size_t i = 0; i < s->nconfig; i++)
			seen = seen || (s->name[i] != NULL &&
					strcmp(s->name[i], buf) == 0);
		if (!seen)
			return strdup(buf);
		snprintf(buf, sizeof(buf), "%.*s-%d",
			 (int)(n < 200 ? n : 200), b, k);
	}
}

/* The suite's keys, and its configs:, traces: and config: entries. */
static int
suite_top(const char *file, const struct yd_node *r,
	  const struct yd_node **cfp, const struct yd_node **trp,
	  const struct yd_node **basep)
{
	const struct yd_node *cf, *tr, *base;

	for (size_t i = 0; i < r->n; i++) {
		const struct yd_node *k = yd_key(r, i);
		static const char *const known[] = { "configs", "traces",
			"config", "seeds", "set", "baseline", "candidate" };
		bool ok = false;

		for (size_t j = 0; j < 7; j++)
			ok = ok || strcmp(k->str, known[j]) == 0;
		if (!ok) {
			fprintf(stderr, "%s:%lu:%lu: unknown key '%s' (configs, "
				"traces, config, seeds, set, baseline, "
				"candidate)\n", file, k->line, k->col, k->str);
			return KVSIM_EXIT_USAGE;
		}
	}
	*cfp = cf = yd_get(r, "configs");
	*trp = tr = yd_get(r, "traces");
	*basep = base = yd_get(r, "config");
	for (int l = 0; l < 2; l++) {
		const struct yd_node *x = l == 0 ? cf : tr;

		if (x != NULL && (x->type != YD_SEQ || x->n == 0)) {
			fprintf(stderr, "%s:%lu:%lu: %s: expected a non-empty "
				"list of files\n", file, x->line, x->col,
				l == 0 ? "configs" : "traces");
			return KVSIM_EXIT_USAGE;
		}
	}
	if (cf == NULL && tr == NULL) {
		fprintf(stderr, "%s:1:1: no configs: or traces: list to run\n",
			file);
		return KVSIM_EXIT_USAGE;
	}
	if (base != NULL && (base->type != YD_SCALAR || tr == NULL)) {
		fprintf(stderr, "%s:%lu:%lu: config: %s\n", file, base->line,
			base->col, tr == NULL ? "the base configuration of "
			"traces:, and there are none" : "expected a file name");
		return KVSIM_EXIT_USAGE;
	}
	return KVSIM_EXIT_OK;
}

/* The configurations: configs: files, then traces: over config:. */
static int
suite_configs(const char *file, struct suite *s, const struct yd_node *cf,
	      const struct yd_node *tr, const struct yd_node *base)
{
	size_t n;
	int rc = 0;

	n = (cf != NULL ? cf->n : 0) + (tr != NULL ? tr->n : 0);
	s->config = calloc(n, sizeof(*s->config));
	s->trace = calloc(n, sizeof(*s->trace));
	s->name = calloc(n, sizeof(*s->name));
	s->cwhere = calloc(n, sizeof(*s->cwhere));
	if (s->config == NULL || s->trace == NULL || s->name == NULL ||
	    s->cwhere == NULL) {
		return KVSIM_EXIT_USAGE;
	}
	for (size_t i = 0; i < n; i++) {
		bool is_trace = cf == NULL || i >= cf->n;
		const struct yd_node *x = is_trace
			? tr->kid[i - (cf != NULL ? cf->n : 0)] : cf->kid[i];
		char *path;
		struct stat sb;

		if (x->type != YD_SCALAR || x->str[0] == '\0') {
			fprintf(stderr, "%s:%lu:%lu: %s: expected a file "
				"name\n", file, x->line, x->col,
				is_trace ? "traces" : "configs");
			return KVSIM_EXIT_USAGE;
		}
		snprintf(s->cwhere[i], sizeof(s->cwhere[i]), "%s:%lu:%lu",
			 file, x->line, x->col);
		if ((path = dup_path(file, x->str)) == NULL) {
			return KVSIM_EXIT_USAGE;
		}
		s->nconfig++;
		if (is_trace) {
			size_t tl = strlen(path) + 20;

			s->trace[i] = malloc(tl);
			if (s->trace[i] != NULL)
				snprintf(s->trace[i], tl, "workload.trace=%s",
					 path);
			if (base != NULL &&
			    (s->config[i] = dup_path(file, base->str)) ==
			    NULL) {
				free(path);
				return KVSIM_EXIT_USAGE;
			}
		} else {
			s->config[i] = path;
		}
		s->name[i] = result_name(s, path);
		if (stat(path, &sb) != 0) {
			fprintf(stderr, "%s: %s: %s\n", s->cwhere[i], path,
				strerror(errno));
			rc = KVSIM_EXIT_USAGE;
		}
		if (is_trace)
			free(path);
		if (rc != 0 || s->name[i] == NULL ||
		    (is_trace && s->trace[i] == NULL)) {
			return KVSIM_EXIT_USAGE;
		}
	}
	if (base != NULL) {
		struct stat sb;

		if (stat(s->config[n - 1], &sb) != 0) {
			fprintf(stderr, "%s:%lu:%lu: config: %s: %s\n", file,
				base->line, base->col, s->config[n - 1],
				strerror(errno));
			return KVSIM_EXIT_USAGE;
		}
	}
	return KVSIM_EXIT_OK;
}

/* seeds: (default one seed, 0), each once. */
static int
suite_seeds(const char *file, struct suite *s, const struct yd_node *r)
{
	const struct yd_node *sd;

	sd = yd_get(r, "seeds");
	if (sd != NULL && (sd->type != YD_SEQ || sd->n == 0)) {
		fprintf(stderr, "%s:%lu:%lu: seeds: expected a non-empty list "
			"of seeds\n", file, sd->line, sd->col);
		return KVSIM_EXIT_USAGE;
	}
	s->seed = calloc(sd != NULL ? sd->n : 1, sizeof(*s->seed));
	if (s->seed == NULL) {
		return KVSIM_EXIT_USAGE;
	}
	for (size_t i = 0; i < (sd != NULL ? sd->n : 1); i++) {
		const struct yd_node *x = sd != NULL ? sd->kid[i] : NULL;
		const char *v = x != NULL ? x->str : "0";
		char *end;

		errno = 0;
		if (x != NULL && (x->type != YD_SCALAR || v[0] < '0' ||
				  v[0] > '9' || (strtoull(v, &end, 10),
						 errno != 0 || *end != '\0'))) {
			fprintf(stderr, "%s:%lu:%lu: seeds: expected a "
				"non-negative integer\n", file, x->line,
				x->col);
			return KVSIM_EXIT_USAGE;
		}
		for (size_t j = 0; j < s->nseed; j++)
			if (strcmp(s->seed[j], v) == 0) {
				fprintf(stderr, "%s:%lu:%lu: seeds: %s twice\n",
					file, x->line, x->col, v);
				return KVSIM_EXIT_USAGE;
			}
		if ((s->seed[s->nseed] = strdup(v)) == NULL) {
			return KVSIM_EXIT_USAGE;
		}
		s->nseed++;
	}
	return KVSIM_EXIT_OK;
}

/* set:, baseline: and candidate:, flattened into assignments. */
static int
suite_sides(const char *file, struct suite *s, const struct yd_node *r)
{
	int rc;

	for (int k = 0; k < 3; k++) {
		const struct yd_node *m = yd_get(r, side_key[k]);

		if (m == NULL && k > 0) {
			fprintf(stderr, "%s:1:1: no `%s:` mapping of overrides "
				"(e.g. %s: {policy: vllm-v1})\n", file,
				side_key[k], side_key[k]);
			return KVSIM_EXIT_USAGE;
		}
		if (m != NULL && (rc = flatten(file, m, "", &s->side[k],
					       &s->nside[k])) != 0)
			return rc;
	}
	return KVSIM_EXIT_OK;
}

static int
suite_load(const char *file, struct suite *s)
{
	struct yd_doc d;
	const struct yd_node *cf, *tr, *base, *r;
	char err[1400];
	int rc = 0;

	memset(s, 0, sizeof(*s));
	if (yd_load_path(&d, file, err, sizeof(err)) != KV_OK) {
		fprintf(stderr, "%s\n", err);
		return KVSIM_EXIT_USAGE;
	}
	r = d.root;
	if (r == NULL || r->type != YD_MAP) {
		fprintf(stderr, "%s:1:1: expected a mapping with configs, "
			"seeds, baseline and candidate\n", file);
		rc = KVSIM_EXIT_USAGE;
		goto out;
	}
	if ((rc = suite_top(file, r, &cf, &tr, &base)) != 0 ||
	    (rc = suite_configs(file, s, cf, tr, base)) != 0 ||
	    (rc = suite_seeds(file, s, r)) != 0 ||
	    (rc = suite_sides(file, s, r)) != 0)
		goto out;
	rc = suite_check(s);
out:
	yd_release(&d);
	return rc;
}

/* The run directories of a suite, all checked before anything runs. */
static int
suite_dirs(const struct suite *s, const struct opts *o, const char *out,
	   char **dirs)
{
	char dir[4096];
	size_t k = 0;

	for (size_t i = 0; i < s->nconfig; i++)
		for (int side = 1; side < 3; side++)
			for (size_t j = 0; j < s->nseed; j++, k++) {
				snprintf(dir, sizeof(dir), "%s/%s/%s/seed-%s",
					 out, s->name[i], side_key[side],
					 s->seed[j]);
				if ((dirs[k] = strdup(dir)) == NULL) {
					fprintf(stderr, "kvsim compare: out "
						"of memory\n");
					return KVSIM_EXIT_USAGE;
				}
				/* --resume keeps complete runs and runs
				 * the rest again (an interrupted or failed
				 * suite); it used to refuse the rest */
				if (access(dir, F_OK) == 0 && !o->c.force &&
				    !o->c.resume) {
					fprintf(stderr, "kvsim compare: %s "
						"exists; use --resume to keep "
						"complete runs or --force to "
						"run them again\n", dir);
					return KVSIM_EXIT_USAGE;
				}
			}
	return KVSIM_EXIT_OK;
}

/* argv of the run of configuration i, side `side`, seed j in dir. */
static char **
suite_argv(const struct suite *s, size_t i, int side, size_t j,
	   char *exe, char *dir)
{
	size_t na = 13 + 2 * (s->nside[0] + s->nside[side]), m = 0;
	char **a = calloc(na, sizeof(*a));

	if (a == NULL)
		return NULL;
	a[m++] = exe;
	a[m++] = "run";
	if (s->config[i] != NULL)
		a[m++] = s->config[i];
	a[m++] = "--quiet";
	a[m++] = "--no-plot";
	a[m++] = "--force";
	a[m++] = "--out";
	a[m++] = dir;
	a[m++] = "--seed";
	a[m++] = s->seed[j];
	if (s->trace[i] != NULL) {
		a[m++] = "--set";
		a[m++] = s->trace[i];
	}
	for (size_t x = 0; x < s->nside[0]; x++) {
		a[m++] = "--set";
		a[m++] = s->side[0][x].text;
	}
	for (size_t x = 0; x < s->nside[side]; x++) {
		a[m++] = "--set";
		a[m++] = s->side[side][x].text;
	}
	return a;
}

/* The jobs of the runs to do (those --resume does not keep). */
static int
suite_jobs(const struct suite *s, const struct opts *o, char *exe,
	   char **dirs, char ***argvs, struct pool_job *job, size_t *nrun,
	   size_t *nskip)
{
	size_t k = 0;
	int rc;

	for (size_t i = 0; i < s->nconfig; i++)
		for (int side = 1; side < 3; side++)
			for (size_t j = 0; j < s->nseed; j++, k++) {
				if (o->c.resume && !o->c.force &&
				    sweep_run_complete(dirs[k])) {
					(*nskip)++;
					continue;
				}
				rc = children_dir_ready("kvsim compare",
							dirs[k]);
				if (rc != 0)
					return rc;
				argvs[k] = suite_argv(s, i, side, j, exe,
						      dirs[k]);
				if (argvs[k] == NULL) {
					fprintf(stderr, "kvsim compare: out "
						"of memory\n");
					return KVSIM_EXIT_USAGE;
				}
				job[*nrun].argv = argvs[k];
				job[*nrun].dir = dirs[k];
				job[*nrun].id = dirs[k];
				(*nrun)++;
			}
	return KVSIM_EXIT_OK;
}

/* Compare the suite's results, once every run is complete. */
static int
suite_compare(const struct suite *s, const struct opts *o, const char *out,
	      char **dirs)
{
	cmp_side *b = cmp_side_new(), *c = cmp_side_new();
	char err[1400], csv[4400];
	size_t k = 0;
	int rc = KVSIM_EXIT_OK;

	if (b == NULL || c == NULL) {
		fprintf(stderr, "kvsim compare: out of memory\n");
		rc = KVSIM_EXIT_USAGE;
		goto done;
	}
	for (size_t i = 0; i < s->nconfig; i++)
		for (int side = 1; side < 3; side++)
			for (size_t j = 0; j < s->nseed; j++, k++)
				if (cmp_side_add_run(side == 1 ? b : c,
						     s->name[i], dirs[k], err,
						     sizeof(err)) != KV_OK) {
					fprintf(stderr, "kvsim compare: %s\n",
						err);
					rc = KVSIM_EXIT_FAIL;
					goto done;
				}
	if (o->c.out != NULL && strlen(o->c.out) >= 4 &&
	    strcmp(o->c.out + strlen(o->c.out) - 4, ".csv") == 0)
		snprintf(csv, sizeof(csv), "%s", o->c.out);
	else if ((rc = out_path(out, csv, sizeof(csv))) != 0)
		goto done;
	rc = compare_sides(b, c, "baseline", "candidate", o, csv);
done:
	cmp_side_free(b);
	cmp_side_free(c);
	return rc;
}

/* Run the suite's jobs; KVSIM_EXIT_OK when every one succeeded. */
static int
suite_run(const char *file, const struct suite *s, const struct opts *o,
	  const char *out, struct pool_job *job, size_t nrun, size_t nskip)
{
	char err[1400];
	enum pool_end end;
	size_t nfail = 0;

	if (!o->c.quiet)
		fprintf(stderr, "kvsim compare: suite %s: %zu configuration%s x "
			"%zu seed%s x 2 sides: %zu run%s to do, %zu complete "
			"already, in %s\n", file, s->nconfig,
			s->nconfig == 1 ? "" : "s", s->nseed,
			s->nseed == 1 ? "" : "s", nrun, nrun == 1 ? "" : "s",
			nskip, out);
	end = children_run("kvsim compare", job, nrun, o->c.jobs, o->c.quiet,
			   err, sizeof(err));
	if (end == POOL_ERROR) {
		fprintf(stderr, "kvsim compare: %s\n", err);
		return KVSIM_EXIT_FAIL;
	}
	for (size_t i = 0; i < nrun; i++)
		nfail += job[i].status != 0;
	if (end == POOL_INTERRUPTED || nfail > 0) {
		fprintf(stderr, "kvsim compare: %s; nothing compared\n",
			end == POOL_INTERRUPTED ? "interrupted"
			: "a suite run failed");
		return KVSIM_EXIT_FAIL;
	}
	return KVSIM_EXIT_OK;
}

static int
suite_main(const char *file, const struct opts *o)
{
	struct suite s;
	char exe[PATH_MAX];
	const char *out = o->c.out != NULL ? o->c.out : "kvsim-out/suite";
	struct pool_job *job = NULL;
	char ***argvs = NULL, **dirs = NULL;
	size_t nrun = 0, total, nskip = 0;
	int rc;

	if ((rc = suite_load(file, &s)) != 0) {
		suite_release(&s);
		return rc;
	}
	total = s.nconfig * 2 * s.nseed;
	job = calloc(total, sizeof(*job));
	argvs = calloc(total, sizeof(*argvs));
	dirs = calloc(total, sizeof(*dirs));
	if (job == NULL || argvs == NULL || dirs == NULL) {
		fprintf(stderr, "kvsim compare: out of memory\n");
		rc = KVSIM_EXIT_USAGE;
		goto done;
	}
	if (!children_self_exe(exe, sizeof(exe))) {
		fprintf(stderr, "kvsim compare: cannot find the kvsim "
			"executable (/proc/self/exe)\n");
		rc = KVSIM_EXIT_FAIL;
		goto done;
	}
	if ((rc = suite_dirs(&s, o, out, dirs)) != 0 ||
	    (rc = suite_jobs(&s, o, exe, dirs, argvs, job, &nrun,
			     &nskip)) != 0 ||
	    (rc = suite_run(file, &s, o, out, job, nrun, nskip)) != 0)
		goto done;
	rc = suite_compare(&s, o, out, dirs);
done:
	for (size_t i = 0; i < total; i++) {
		if (argvs != NULL)
			free(argvs[i]);
		if (dirs != NULL)
			free(dirs[i]);
	}
	free(argvs);
	free(dirs);
	pool_jobs_release(job, nrun);
	free(job);
	suite_release(&s);
	return rc;
}

/* The options; -1 after --help.  *suite: --suite's file. */
static int
compare_parse(struct opts *o, const char **suite, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "fail-on", required_argument, NULL, 'F' },
		{ "no-defaults", no_argument, NULL, 'N' },
		{ "alpha", required_argument, NULL, 'a' },
		CLI_LO_OUT,
		{ "suite", required_argument, NULL, 'S' },
		CLI_LO_JOBS,
		CLI_LO_RESUME,
		CLI_LO_FORCE,
		CLI_LO_NO_PLOT,
		CLI_LO_QUIET,
		CLI_LO_HELP,
		CLI_LO_END
	};
	char err[1400], *end;
	int ch;

	optind = 1;
	while ((ch = cli_getopt(&o->c, argc, argv, "o:j:rfqh", lo)) != -1) {
		switch (ch) {
		case 'F':
			if (cmp_threshold_parse(optarg, &o->th[o->nth], err,
						sizeof(err)) != KV_OK) {
				fprintf(stderr, "kvsim compare: %s\n", err);
				return KVSIM_EXIT_USAGE;
			}
			o->nth++;
			break;
		case 'N':
			o->no_defaults = true;
			break;
		case 'a':
			errno = 0;
			o->alpha = strtod(optarg, &end);
			if (errno || *end || !(o->alpha > 0 && o->alpha < 1)) {
				fprintf(stderr, "kvsim compare: --alpha %s: "
					"expected a number in (0, 1)\n", optarg);
				return KVSIM_EXIT_USAGE;
			}
			break;
		case 'S':
			*suite = optarg;
			break;
		case 'h':
			compare_usage(stdout);
			return -1;
		case CLI_OPT_BAD:
			return KVSIM_EXIT_USAGE;
		default:
			compare_usage(stderr);
			return KVSIM_EXIT_USAGE;
		}
	}
	return KVSIM_EXIT_OK;
}

/*
 * What a side is called in the default output folder: the last part of
 * its resolved path, or of its folder when it names a file (a sweep.csv);
 * characters other than letters, digits, '.', '_' and '-' become '_'.
 */
static void
side_name(const char *path, char *buf, size_t len)
{
	char real[PATH_MAX], *p, *slash;
	struct stat sb;
	size_t n;

	if (realpath(path, real) == NULL)
		snprintf(real, sizeof(real), "%s", path);
	if (stat(real, &sb) == 0 && !S_ISDIR(sb.st_mode) &&
	    (slash = strrchr(real, '/')) != NULL && slash != real)
		*slash = '\0';	/* a file: its folder's name */
	p = strrchr(real, '/');
	p = p != NULL && p[1] != '\0' ? p + 1 : real;
	if (*p == '\0' || strcmp(p, "/") == 0)
		p = "root";
	n = strlen(p) < len ? strlen(p) : len - 1;
	memcpy(buf, p, n);
	buf[n] = '\0';
	for (p = buf; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
		      *p == '-'))
			*p = '_';
}

/* `kvsim compare BASE CAND` (argv[0], argv[1]). */
static int
compare_two(const struct opts *o, char **argv)
{
	char err[1400], csv[4400];
	cmp_side *b = cmp_side_new(), *c = cmp_side_new();
	int rc;

	if (b == NULL || c == NULL) {
		rc = KVSIM_EXIT_USAGE;
		goto done;
	}
	if (cmp_side_load(b, argv[0], err, sizeof(err)) != KV_OK ||
	    cmp_side_load(c, argv[1], err, sizeof(err)) != KV_OK) {
		fprintf(stderr, "kvsim compare: %s\n", err);
		rc = KVSIM_EXIT_USAGE;
		goto done;
	}
	/* bad input before --out DIR is made */
	if ((rc = named_metrics(b, c, argv[0], argv[1], o)))
		goto done;
	if (o->c.out != NULL) {
		if ((rc = out_path(o->c.out, csv, sizeof(csv))) != 0)
			goto done;
	} else {
		/* neither input's folder: ./compare-BASE-vs-CAND */
		char a[128], c2[128], dir[300];

		side_name(argv[0], a, sizeof(a));
		side_name(argv[1], c2, sizeof(c2));
		snprintf(dir, sizeof(dir), "compare-%s-vs-%s", a, c2);
		if ((rc = out_path(dir, csv, sizeof(csv))) != 0)
			goto done;
	}
	rc = compare_sides(b, c, argv[0], argv[1], o, csv);
done:
	cmp_side_free(b);
	cmp_side_free(c);
	return rc;
}

int
compare_main(int argc, char **argv)
{
	struct opts o;
	const char *suite = NULL;
	int rc;

	memset(&o, 0, sizeof(o));
	o.alpha = 0.05;
	if (cli_opts_init(&o.c, "kvsim compare", CLI_OUT | CLI_JOBS |
			  CLI_RESUME | CLI_FORCE | CLI_NO_PLOT | CLI_QUIET,
			  argc) != 0 ||
	    (o.th = calloc((size_t)argc + 1, sizeof(*o.th))) == NULL) {
		rc = KVSIM_EXIT_USAGE;
		goto done;
	}
	if ((rc = compare_parse(&o, &suite, argc, argv)) != 0) {
		if (rc < 0)
			rc = KVSIM_EXIT_OK;
		goto done;
	}
	if (suite != NULL) {
		if (optind != argc) {
			fprintf(stderr, "kvsim compare: --suite takes no BASE "
				"or CAND\n");
			rc = KVSIM_EXIT_USAGE;
			goto done;
		}
		rc = suite_main(suite, &o);
		goto done;
	}
	if (optind != argc - 2) {
		fprintf(stderr, "kvsim compare: expected BASE and CAND (or "
			"--suite FILE)\n");
		compare_usage(stderr);
		rc = KVSIM_EXIT_USAGE;
		goto done;
	}
	if (o.c.resume || o.c.force) {
		fprintf(stderr, "kvsim compare: --resume and --force are for "
			"--suite\n");
		rc = KVSIM_EXIT_USAGE;
		goto done;
	}
	rc = compare_two(&o, argv + optind);
done:
	free(o.th);
	cli_opts_release(&o.c);
	return rc;
}
