/*
 * cmd_sweep.c -- `kvsim sweep SWEEP.yaml`: a grid of `kvsim run`s.
 *
 * SWEEP.yaml is a run configuration plus a `sweep:` mapping of dotted keys
 * to lists of values (docs/sweep.md).  Every point is a child `kvsim run
 * SWEEP.yaml --set KEY=VALUE ... --out DIR/points/ID` (run skips the
 * `sweep:` key), K at a time; reports/sweep.h has the ids, the pool and the
 * merge into DIR/sweep.csv.
 *
 * Everything that can be checked before a point runs is checked first, so
 * a bad sweep file runs nothing: the YAML and the base configuration, each
 * swept value applied to the base as run would apply it, each point (the
 * base with all its values) set up as run sets up (sizing, its own
 * policy's checks, the trace opened; errors point at a value in
 * SWEEP.yaml), and the output directories.  A point's configuration
 * digest goes into its id (reports/sweep.h), so that --resume never takes
 * a point run from another base for this one.
 *
 * Exit: 0 every selected point ran; 1 a point failed, the sweep was
 * interrupted, or --merge found points missing; 2 bad usage or input.
 */
#include "config.h"

#include "sim/cli/cmd_sweep.h"

#include "reports/sweep.h"
#include "sim/cli/children.h"
#include "sim/cli/mpipool.h"
#include "sim/cli/opts.h"
#include "sim/cli/outdir.h"
#include "sim/cli/simrun.h"
#include "sim/run.h"
#include "sim/runcfg.h"
#include "util/ydoc.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sweep_main(int argc, char **argv);
const char *sweep_set_message(const char *msg, const char *assign);
int auto_plot(const char *prog, const char *dir, bool quiet); /* cmd_run.c */

static void
sweep_usage(FILE *f)
{
	fprintf(f,
"usage: kvsim sweep SWEEP.yaml [--out DIR] [--jobs K] [--resume] [--shard I/N]\n"
"                   [--merge] [--list] [--force] [--no-plot] [--quiet]\n"
"\n"
"Run the cross product of the values listed under `sweep:` in SWEEP.yaml (a\n"
"kvsim run configuration), one `kvsim run` per point, and merge the points'\n"
"summaries into DIR/sweep.csv.\n"
"\n"
"  -o, --out DIR      the sweep directory (default kvsim-out/<SWEEP name>);\n"
"                     each point runs in DIR/points/<id>\n"
"  -j, --jobs K       points run at once (default: the online CPUs)\n"
"  -r, --resume       skip points whose summary.csv is complete\n"
"      --shard I/N    run only the points whose index %% N is I\n"
"      --merge        run nothing: write DIR/sweep.csv from the points\n"
"      --list         print the points (index, id, assignments) and stop\n"
"  -f, --force        run every selected point again\n"
"      --no-plot      no plots of sweep.csv (made when gnuplot is installed;\n"
"                     the points never plot)\n"
"  -q, --quiet        no progress lines\n"
"  -h, --help         this help\n"
"\n"
"sweep.csv is written when every point of the grid is complete.  docs/sweep.md\n"
"has the file format and the directory layout.\n"
"Exit status: 0 ok, 1 a point failed or points are missing, 2 bad usage or\n"
"input.\n");
}

/* "--set KEY=VALUE: what" or "--set KEY=VALUE:L:C: what" -> "what"; also
 * used by cmd_compare.c for a suite's overrides. */
const char *
sweep_set_message(const char *msg, const char *assign)
{
	size_t la = strlen(assign);
	const char *p;

	if (strncmp(msg, "--set ", 6) != 0 || strncmp(msg + 6, assign, la))
		return msg;
	p = msg + 6 + la;
	if (*p == ':' && p[1] >= '0' && p[1] <= '9') {
		const char *q = p + 1;

		while (*q >= '0' && *q <= '9')
			q++;
		if (*q == ':' && q[1] >= '0' && q[1] <= '9') {
			q++;
			while (*q >= '0' && *q <= '9')
				q++;
		}
		p = q;
	}
	if (*p == ':')
		p++;
	while (*p == ' ')
		p++;
	return p;
}

/* "key=value", allocated; NULL without memory. */
static char *
assign_new(const char *key, const char *val)
{
	size_t n = strlen(key) + strlen(val) + 2;
	char *a = malloc(n);

	if (a != NULL)
		snprintf(a, n, "%s=%s", key, val);
	return a;
}

/*
 * Apply `key=value` to the base configuration as `kvsim run` would, and
 * check the names it gives (model, GPU, policy).  What depends on the
 * other values of a point (the policy's setup) is check_points's.
 * false with the message, located at `v` in the sweep file, printed.
 */
static bool
check_value(const char *file, const struct yd_node *k,
	    const struct yd_node *v)
{
	const char *key = k->str, *bad;
	struct sim_config c;
	char err[1400], *assign;
	bool ok = true;

	if ((assign = assign_new(key, v->str)) == NULL)
		return false;
	sim_config_init(&c);
	if (sim_config_load(&c, file, err, sizeof(err)) != KV_OK) {
		fprintf(stderr, "%s\n", err);
		ok = false;
	} else if (sim_config_set(&c, assign, err, sizeof(err)) != KV_OK ||
		   sim_config_finish(&c, err, sizeof(err)) != KV_OK) {
		const char *m = sweep_set_message(err, assign);
		const struct yd_node *at = strncmp(m, "unknown key", 11) == 0
					   ? k : v;

		fprintf(stderr, "%s:%lu:%lu: %s\n", file, at->line, at->col,
			m);
		ok = false;
	} else if (sim_run_check_names(&c, &bad, err, sizeof(err)) != 0) {
		/* a model, GPU or policy name `kvsim run` would refuse */
		if (strcmp(bad, key) == 0)
			fprintf(stderr, "%s:%lu:%lu: %s\n", file, v->line,
				v->col, err);
		else if (bad[0] != '\0')
			fprintf(stderr, "%s: %s\n", sim_config_where(&c, bad),
				err);
		else
			fprintf(stderr, "%s\n", err);
		ok = false;
	}
	sim_config_release(&c);
	free(assign);
	return ok;
}

/*
 * The configuration `kvsim run FILE --set sets[0] ...` runs, set up as
 * run sets it up (sizing, the policy's checks, the trace opened) without
 * a word: KV_OK, or the reason in err as ": what" (a --set's message
 * without its "--set KEY=VALUE" prefix).  *digest (if not NULL): the configuration's,
 * taken before the bundled trace is filled in (its installed path is no
 * part of what runs).
 */
static kv_err
point_setup(const char *file, char *const *sets, size_t n,
	    uint64_t *digest, char *err, size_t errlen)
{
	struct sim_config c;
	struct sim_run_opts ro;
	sim_run *R = NULL;
	kv_err e;

	sim_config_init(&c);
	if ((e = sim_config_load(&c, file, err, errlen)) != KV_OK)
		goto out;
	for (size_t i = 0; i < n; i++)
		if ((e = sim_config_set(&c, sets[i], err, errlen)) != KV_OK) {
			/* "--set KEY=VALUE: what" -> ": what" (shorter) */
			const char *m = sweep_set_message(err, sets[i]);

			if (m - err >= 2) {
				memmove(err + 2, m, strlen(m) + 1);
				memcpy(err, ": ", 2);
			}
			goto out;
		}
	if (digest != NULL &&
	    (e = sim_config_digest(&c, NULL, digest)) != KV_OK)
		goto out;
	if ((e = sim_config_finish(&c, err, errlen)) != KV_OK)
		goto out;
	memset(&ro, 0, sizeof(ro));
	ro.prog = "";
	ro.quiet = true;
	e = sim_run_open(&R, &c, &ro, err, errlen);
	sim_run_close(R);
out:
	sim_config_release(&c);
	return e;
}

/* The assignments of point p, "key=value" each in axis order (as its
 * `kvsim run` takes them); NULL without memory. */
static char **
point_sets(const sweep *s, size_t p)
{
	size_t na = sweep_naxes(s);
	char **a = calloc(na + 1, sizeof(*a));

	for (size_t x = 0; a != NULL && x < na; x++)
		if ((a[x] = assign_new(sweep_axis_key(s, x),
				       sweep_value(s, p, x))) == NULL) {
			for (size_t m = 0; m < x; m++)
				free(a[m]);
			free(a);
			a = NULL;
		}
	return a;
}

static void
sets_free(char **a)
{
	for (char **p = a; p != NULL && *p != NULL; p++)
		free(*p);
	free(a);
}

/* The node of point p's value of axis x in the grid g. */
static const struct yd_node *
value_node(const struct yd_node *g, size_t p, size_t x)
{
	size_t stride = 1;

	for (size_t a = x + 1; a < g->n; a++)
		stride *= yd_val(g, a)->n;
	return yd_val(g, x)->kid[(p / stride) % yd_val(g, x)->n];
}

/*
 * The value a failing point is refused at: the first whose own
 * assignment, alone on the base, fails while the base runs; else the last
 * axis's (the values fail together).
 */
static size_t
blame_axis(const char *file, char *const *sets, size_t na)
{
	char err[1400];

	if (point_setup(file, NULL, 0, NULL, err, sizeof(err)) != KV_OK)
		return na - 1;
	for (size_t x = 0; x < na; x++)
		if (point_setup(file, &sets[x], 1, NULL, err, sizeof(err)) !=
		    KV_OK)
			return x;
	return na - 1;
}

/*
 * Every point set up as its `kvsim run` sets it up, with its own values
 * together (a value one policy refuses is checked against the policy of
 * its point, not of the base); their configuration digests go to the
 * grid's ids.  0, or 2 with the first failing point's message printed at
 * a value of it: "FILE:LINE:COL: KEY=VALUE ...: what".
 */
static int
check_points(const char *file, sweep *s, const struct yd_node *g)
{
	size_t np = sweep_npoints(s), na = sweep_naxes(s);
	uint64_t *dg = calloc(np, sizeof(*dg));
	char err[1400];
	int rc = 0;

	if (dg == NULL)
		return KVSIM_EXIT_FAIL;
	for (size_t p = 0; p < np && rc == 0; p++) {
		char **sets = point_sets(s, p);
		kv_err e;

		if (sets == NULL) {
			rc = KVSIM_EXIT_FAIL;
			break;
		}
		e = point_setup(file, sets, na, &dg[p], err, sizeof(err));
		if (e == KV_ENOMEM) {
			fprintf(stderr, "kvsim sweep: out of memory\n");
			rc = KVSIM_EXIT_FAIL;
		} else if (e != KV_OK) {
			const struct yd_node *at =
				value_node(g, p, blame_axis(file, sets, na));

			fprintf(stderr, "%s:%lu:%lu: ", file, at->line,
				at->col);
			for (size_t x = 0; x < na; x++)
				fprintf(stderr, "%s%s", x ? " " : "", sets[x]);
			fprintf(stderr, "%s\n", err);
			rc = KVSIM_EXIT_USAGE;
		}
		sets_free(sets);
	}
	if (rc == 0 && sweep_set_digests(s, dg) != KV_OK)
		rc = KVSIM_EXIT_FAIL;
	free(dg);
	return rc;
}

/* Read the grid of SWEEP.yaml.  0, or 2 with the message printed. */
static int
load_grid(const char *file, sweep *s)
{
	struct yd_doc d;
	const struct yd_node *g;
	char err[1400];
	int rc = 0;

	if (yd_load_path(&d, file, err, sizeof(err)) != KV_OK) {
		fprintf(stderr, "%s\n", err);
		return KVSIM_EXIT_USAGE;
	}
	g = d.root != NULL ? yd_get(d.root, "sweep") : NULL;
	if (g == NULL) {
		fprintf(stderr, "%s:1:1: no `sweep:` mapping of keys to lists "
			"of values (one run is `kvsim run`)\n", file);
		rc = KVSIM_EXIT_USAGE;
		goto out;
	}
	if (g->type != YD_MAP || g->n == 0) {
		fprintf(stderr, "%s:%lu:%lu: sweep: expected a mapping of "
			"keys to lists of values\n", file, g->line, g->col);
		rc = KVSIM_EXIT_USAGE;
		goto out;
	}
	for (size_t i = 0; i < g->n && rc == 0; i++) {
		const struct yd_node *k = yd_key(g, i), *v = yd_val(g, i);

		if (sweep_add_axis(s, k->str) != KV_OK) {
			fprintf(stderr, "%s:%lu:%lu: sweep: key '%s' twice\n",
				file, k->line, k->col, k->str);
			rc = KVSIM_EXIT_USAGE;
			break;
		}
		if (strcmp(k->str, "sweep") == 0) {
			fprintf(stderr, "%s:%lu:%lu: sweep: 'sweep' is not a "
				"configuration key\n", file, k->line, k->col);
			rc = KVSIM_EXIT_USAGE;
			break;
		}
		if (v->type != YD_SEQ || v->n == 0) {
			fprintf(stderr, "%s:%lu:%lu: sweep: %s: expected a "
				"non-empty list of values, e.g. [16, 32]\n",
				file, v->line, v->col, k->str);
			rc = KVSIM_EXIT_USAGE;
			break;
		}
		for (size_t j = 0; j < v->n; j++) {
			const struct yd_node *x = v->kid[j];

			if (x->type != YD_SCALAR) {
				fprintf(stderr, "%s:%lu:%lu: sweep: %s: "
					"expected a scalar value\n", file,
					x->line, x->col, k->str);
				rc = KVSIM_EXIT_USAGE;
				break;
			}
			if (sweep_add_value(s, x->str) != KV_OK) {
				fprintf(stderr, "%s:%lu:%lu: sweep: %s: "
					"value '%s' twice\n", file, x->line,
					x->col, k->str, x->str);
				rc = KVSIM_EXIT_USAGE;
				break;
			}
			if (!check_value(file, k, x)) {
				rc = KVSIM_EXIT_USAGE;
				break;
			}
		}
	}
	if (rc == 0 && sweep_npoints(s) == SIZE_MAX) {
		fprintf(stderr, "%s:%lu:%lu: sweep: more than %u points\n",
			file, g->line, g->col, SWEEP_MAX_POINTS);
		rc = KVSIM_EXIT_USAGE;
	}
	if (rc == 0)
		rc = check_points(file, s, g);
out:
	yd_release(&d);
	return rc;
}

static bool
parse_shard(const char *v, unsigned long *i, unsigned long *n)
{
	char *end;

	errno = 0;
	if (*v < '0' || *v > '9')
		return false;
	*i = strtoul(v, &end, 10);
	if (errno || *end != '/' || end[1] < '0' || end[1] > '9')
		return false;
	*n = strtoul(end + 1, &end, 10);
	return errno == 0 && *end == '\0' && *n >= 1 && *i < *n &&
	       *n <= SWEEP_MAX_POINTS;
}

static bool
dir_has_files(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	bool any = false;

	if (d == NULL)
		return false;
	while (!any && (e = readdir(d)) != NULL)
		any = strcmp(e->d_name, ".") != 0 &&
		      strcmp(e->d_name, "..") != 0;
	closedir(d);
	return any;
}

struct point {
	size_t index;
	char id[SWEEP_ID_LEN];
	char dir[4096];
	char **argv;
};

static void
points_free(struct point *p, size_t n)
{
	for (size_t i = 0; p != NULL && i < n; i++) {
		if (p[i].argv != NULL)
			for (char **a = p[i].argv + 1; *a != NULL; a++)
				free(*a);
		free(p[i].argv);
	}
	free(p);
}

/* argv of one point: EXE run FILE -q --no-plot -f --out DIR --set K=V ... */
static char **
point_argv(const sweep *s, size_t i, const char *exe, const char *file,
	   const char *pdir)
{
	size_t na = sweep_naxes(s), k = 0;
	char **a = calloc(9 + 2 * na, sizeof(*a));

	if (a == NULL)
		return NULL;
	a[k++] = (char *)exe;	/* borrowed; points_free skips it */
	a[k++] = strdup("run");
	a[k++] = strdup(file);
	a[k++] = strdup("--quiet");
	a[k++] = strdup("--no-plot");
	a[k++] = strdup("--force");
	a[k++] = strdup("--out");
	a[k++] = strdup(pdir);
	for (size_t x = 0; x < na; x++) {
		a[k++] = strdup("--set");
		a[k++] = assign_new(sweep_axis_key(s, x), sweep_value(s, i, x));
	}
	for (size_t j = 1; j < k; j++)
		if (a[j] == NULL) {
			for (size_t m = 1; m < k; m++)
				free(a[m]);
			free(a);
			return NULL;
		}
	return a;
}

static void
default_out(const char *file, char *out, size_t len)
{
	const char *b = strrchr(file, '/');
	const char *dot;
	size_t n;

	b = b != NULL ? b + 1 : file;
	dot = strrchr(b, '.');
	n = dot != NULL && dot != b ? (size_t)(dot - b) : strlen(b);
	snprintf(out, len, "kvsim-out/%.*s", (int)n, b);
}

struct sweep_cmd {
	struct cli_opts o;
	char out[3800];
	const char *file;
	unsigned long shard_i, shard_n;
	bool sharded, merge, list;
	sweep *s;
	size_t np;			/* points of the grid */
	struct point *pt;		/* the selected ones (this shard) */
	size_t nsel;
};

/* The options; -1 after --help. */
static int
sweep_parse(struct sweep_cmd *x, int argc, char **argv)
{
	static const struct option lo[] = {
		CLI_LO_OUT,
		CLI_LO_JOBS,
		CLI_LO_RESUME,
		{ "shard", required_argument, NULL, 'S' },
		{ "merge", no_argument, NULL, 'M' },
		{ "list", no_argument, NULL, 'L' },
		CLI_LO_FORCE,
		CLI_LO_NO_PLOT,
		CLI_LO_QUIET,
		CLI_LO_HELP,
		CLI_LO_END
	};
	int c;

	optind = 1;
	while ((c = cli_getopt(&x->o, argc, argv, "o:j:rfqh", lo)) != -1) {
		switch (c) {
		case 'S':
			if (!parse_shard(optarg, &x->shard_i, &x->shard_n)) {
				fprintf(stderr, "kvsim sweep: --shard %s: "
					"expected I/N with 0 <= I < N\n",
					optarg);
				return KVSIM_EXIT_USAGE;
			}
			x->sharded = true;
			break;
		case 'M':
			x->merge = true;
			break;
		case 'L':
			x->list = true;
			break;
		case 'h':
			sweep_usage(stdout);
			return -1;
		case CLI_OPT_BAD:
			return KVSIM_EXIT_USAGE;
		default:
			sweep_usage(stderr);
			return KVSIM_EXIT_USAGE;
		}
	}
	if (x->o.out != NULL)
		snprintf(x->out, sizeof(x->out), "%s", x->o.out);
	if (optind != argc - 1) {
		fprintf(stderr, "kvsim sweep: expected one SWEEP.yaml\n");
		sweep_usage(stderr);
		return KVSIM_EXIT_USAGE;
	}
	if (x->merge && (x->sharded || x->o.force || x->o.resume)) {
		fprintf(stderr, "kvsim sweep: --merge runs nothing; it takes "
			"no --shard, --force or --resume\n");
		return KVSIM_EXIT_USAGE;
	}
	x->file = argv[optind];
	if (x->out[0] == '\0')
		default_out(x->file, x->out, sizeof(x->out));
	return KVSIM_EXIT_OK;
}

/* The points of this shard, with their ids and directories. */
static int
sweep_select(struct sweep_cmd *x)
{
	size_t a, b;

	x->np = sweep_npoints(x->s);
	if (!sweep_ids_unique(x->s, &a, &b)) {
		char id[SWEEP_ID_LEN];

		sweep_point_id(x->s, a, id);
		fprintf(stderr, "%s: points %zu and %zu share the id %s; "
			"change a value's spelling\n", x->file, a, b, id);
		return KVSIM_EXIT_USAGE;
	}
	x->pt = calloc(x->np, sizeof(*x->pt));
	if (x->pt == NULL) {
		fprintf(stderr, "kvsim sweep: out of memory\n");
		return KVSIM_EXIT_FAIL;
	}
	for (size_t i = x->shard_i; i < x->np; i += x->shard_n) {
		struct point *p = &x->pt[x->nsel++];

		p->index = i;
		sweep_point_id(x->s, i, p->id);
		if (!sweep_point_dir(x->s, x->out, i, p->dir,
				     sizeof(p->dir))) {
			fprintf(stderr, "kvsim sweep: --out %s: path too "
				"long\n", x->out);
			return KVSIM_EXIT_USAGE;
		}
	}
	return KVSIM_EXIT_OK;
}

/* --list: index, id and assignments of each selected point. */
static void
sweep_list(const struct sweep_cmd *x)
{
	for (size_t i = 0; i < x->nsel; i++) {
		printf("%zu %s", x->pt[i].index, x->pt[i].id);
		for (size_t a = 0; a < sweep_naxes(x->s); a++)
			printf(" %s=%s", sweep_axis_key(x->s, a),
			       sweep_value(x->s, x->pt[i].index, a));
		printf("\n");
	}
}

/* Refuse to overwrite sweep.csv (at `csv`) or a point, before anything
 * runs. */
static int
sweep_refuse(const struct sweep_cmd *x, const char *csv)
{
	bool resume = x->o.resume, force = x->o.force;

	if (!resume && !force && !x->sharded && access(csv, F_OK) == 0) {
		fprintf(stderr, "kvsim sweep: %s exists; refusing to overwrite "
			"it (use --resume or --force)\n", csv);
		return KVSIM_EXIT_USAGE;
	}
	for (size_t i = 0; i < x->nsel; i++) {
		const struct point *p = &x->pt[i];

		if (!dir_has_files(p->dir))
			continue;
		if (resume && sweep_run_complete(p->dir))
			continue;	/* skipped */
		if (!resume && !force) {
			fprintf(stderr, "kvsim sweep: %s exists and is not "
				"empty; refusing to overwrite it (use --resume "
				"or --force)\n", p->dir);
			return KVSIM_EXIT_USAGE;
		}
	}
	return KVSIM_EXIT_OK;
}

/* The jobs of the points to run (those --resume does not skip), their
 * directories made ready; *nrun of them, *nskip skipped. */
static int
sweep_jobs(struct sweep_cmd *x, const char *exe, struct pool_job *job,
	   size_t *nrun, size_t *nskip)
{
	int rc;

	for (size_t i = 0; i < x->nsel; i++) {
		struct point *p = &x->pt[i];

		if (x->o.resume && sweep_run_complete(p->dir)) {
			(*nskip)++;
			continue;
		}
		if ((rc = children_dir_ready("kvsim sweep", p->dir)) != 0)
			return rc;
		p->argv = point_argv(x->s, p->index, exe, x->file, p->dir);
		if (p->argv == NULL) {
			fprintf(stderr, "kvsim sweep: out of memory\n");
			return KVSIM_EXIT_FAIL;
		}
		job[*nrun].argv = p->argv;
		job[*nrun].dir = p->dir;
		job[*nrun].id = p->id;
		(*nrun)++;
	}
	return KVSIM_EXIT_OK;
}

/* After the pool: interrupted, or the points that failed. */
static int
sweep_failures(const struct pool_job *job, size_t nrun, enum pool_end end)
{
	size_t nfail = 0;

	for (size_t i = 0; i < nrun; i++)
		if (job[i].status != 0)
			nfail++;
	if (end == POOL_INTERRUPTED) {
		fprintf(stderr, "kvsim sweep: interrupted; no sweep.csv (run "
			"again with --resume to finish)\n");
		return KVSIM_EXIT_FAIL;
	}
	if (nfail > 0) {
		fprintf(stderr, "kvsim sweep: %zu of %zu point%s failed (their "
			"stderr.txt is kept); no sweep.csv\n", nfail, nrun,
			nrun == 1 ? "" : "s");
		for (size_t i = 0; i < nrun; i++)
			if (job[i].status != 0)
				fprintf(stderr, "  %s  exit %d  %s/stderr.txt\n",
					job[i].id, job[i].status, job[i].dir);
		return KVSIM_EXIT_FAIL;
	}
	return KVSIM_EXIT_OK;
}

/* The points' jobs run: on the worker ranks of an MPI job (mpipool.h),
 * else here, --jobs at a time. */
static enum pool_end
sweep_pool(const struct sweep_cmd *x, struct pool_job *job, size_t nrun,
	   char *err, size_t errlen)
{
	struct pool_opts po = {
		.who = "kvsim sweep",
		.log = x->o.quiet ? NULL : stderr,
	};

	if (!mpipool_active())
		return children_run("kvsim sweep", job, nrun, x->o.jobs,
				    x->o.quiet, err, errlen);
	if (!x->o.quiet)
		fprintf(stderr, "kvsim sweep: the points go to the MPI "
			"job's worker ranks, one at a time each\n");
	return mpipool_exec(job, nrun, &po, false, err, errlen);
}

/* Run the selected points that need it; sweep.csv is at `csv`. */
static int
sweep_run(struct sweep_cmd *x, const char *csv)
{
	char exe[PATH_MAX], err[1400];
	struct pool_job *job;
	size_t nrun = 0, nskip = 0;
	enum pool_end end;
	int rc;

	if ((rc = sweep_refuse(x, csv)) != 0)
		return rc;
	if (!children_self_exe(exe, sizeof(exe))) {
		fprintf(stderr, "kvsim sweep: cannot find the kvsim executable "
			"(/proc/self/exe): %s\n", strerror(errno));
		return KVSIM_EXIT_FAIL;
	}
	job = calloc(x->nsel ? x->nsel : 1, sizeof(*job));
	if (job == NULL) {
		fprintf(stderr, "kvsim sweep: out of memory\n");
		return KVSIM_EXIT_FAIL;
	}
	if ((rc = sweep_jobs(x, exe, job, &nrun, &nskip)) != 0)
		goto done;
	/* A sweep.csv from before would no longer describe the points. */
	if (nrun > 0)
		unlink(csv);
	if (!x->o.quiet)
		fprintf(stderr, "kvsim sweep: %zu point%s%s, %zu to run, %zu "
			"complete already, %ld at a time, in %s\n", x->nsel,
			x->nsel == 1 ? "" : "s",
			x->sharded ? " in this shard" : "", nrun, nskip,
			x->o.jobs, x->out);
	end = sweep_pool(x, job, nrun, err, sizeof(err));
	if (end == POOL_ERROR) {
		fprintf(stderr, "kvsim sweep: %s\n", err);
		rc = KVSIM_EXIT_FAIL;
		goto done;
	}
	rc = sweep_failures(job, nrun, end);
done:
	pool_jobs_release(job, nrun);
	free(job);
	return rc;
}

/* sweep.csv from the points, when every point is complete. */
static int
sweep_write_csv(const struct sweep_cmd *x)
{
	char err[1400];
	size_t missing = 0;
	kv_err e;

	switch ((e = sweep_merge(x->s, x->out, &missing, err, sizeof(err)))) {
	case KV_OK:
		if (!x->o.quiet)
			fprintf(stderr, "kvsim sweep: %s/sweep.csv: %zu "
				"points\n", x->out, x->np);
		return x->o.no_plot ? KVSIM_EXIT_OK :
		       auto_plot("kvsim sweep", x->out, x->o.quiet);
	case KV_ENOENT:
		if (x->merge) {
			fprintf(stderr, "kvsim sweep: %zu of %zu points are "
				"not complete in %s; no sweep.csv\n", missing,
				x->np, x->out);
			return KVSIM_EXIT_FAIL;
		}
		if (!x->o.quiet)
			fprintf(stderr, "kvsim sweep: shard %lu/%lu done; %zu "
				"of %zu points of the grid are not complete "
				"yet (sweep.csv comes with the last of them, "
				"or with --merge)\n", x->shard_i, x->shard_n,
				missing, x->np);
		return KVSIM_EXIT_OK;
	default:
		/* points whose summary.csv columns differ, or a sweep.csv
		 * that cannot be made (the --out DIR): bad input */
		fprintf(stderr, "kvsim sweep: %s\n", err);
		return e == KV_EINVAL ? KVSIM_EXIT_USAGE : KVSIM_EXIT_FAIL;
	}
}

int
sweep_main(int argc, char **argv)
{
	struct sweep_cmd x;
	char csv[4200];
	int rc;

	memset(&x, 0, sizeof(x));
	x.shard_n = 1;
	rc = cli_opts_init(&x.o, "kvsim sweep", CLI_OUT | CLI_JOBS |
			   CLI_RESUME | CLI_FORCE | CLI_NO_PLOT | CLI_QUIET,
			   argc);
	if (rc != KVSIM_EXIT_OK)
		goto done;
	if ((rc = sweep_parse(&x, argc, argv)) != 0) {
		if (rc < 0)
			rc = KVSIM_EXIT_OK;
		goto done;
	}
	if ((x.s = sweep_new()) == NULL) {
		fprintf(stderr, "kvsim sweep: out of memory\n");
		rc = KVSIM_EXIT_FAIL;
		goto done;
	}
	if ((rc = load_grid(x.file, x.s)) != 0 ||
	    (rc = sweep_select(&x)) != 0)
		goto done;
	if (x.list) {
		sweep_list(&x);
		goto done;
	}
	snprintf(csv, sizeof(csv), "%s/sweep.csv", x.out);
	if (!x.merge && (rc = sweep_run(&x, csv)) != 0)
		goto done;
	rc = sweep_write_csv(&x);
done:
	points_free(x.pt, x.nsel);
	sweep_free(x.s);
	cli_opts_release(&x.o);
	return rc;
}
