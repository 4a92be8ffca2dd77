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
 * swept value applied to the base as run would apply it and set up as run
 * sets up (sizing, the policy's checks, the trace opened; errors point at
 * the value in SWEEP.yaml), and the output directories.
 *
 * Exit: 0 every selected point ran; 1 a point failed, the sweep was
 * interrupted, or --merge found points missing; 2 bad usage or input.
 */
#include "config.h"

#include "sim/cli/cmd_sweep.h"

#include "reports/sweep.h"
#include "sim/cli/outdir.h"
#include "sim/run.h"
#include "sim/runcfg.h"
#include "util/ydoc.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sweep_main(int argc, char **argv);
const char *sweep_set_message(const char *msg, const char *assign);
void auto_plot(const char *prog, const char *dir, bool quiet); /* cmd_run.c */

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

/*
 * Apply `key=value` to the base configuration as `kvsim run` would.
 * false with the message, located at `v` in the sweep file, printed.
 */
static bool
check_value(const char *file, const struct yd_node *k,
	    const struct yd_node *v)
{
	const char *key = k->str;
	struct sim_config c;
	char err[1400], *assign;
	size_t n = strlen(key) + strlen(v->str) + 2;
	bool ok = true;

	if ((assign = malloc(n)) == NULL)
		return false;
	snprintf(assign, n, "%s=%s", key, v->str);
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
	} else {
		/* a model, GPU or policy name `kvsim run` would refuse */
		const char *bad;

		if (sim_run_check_names(&c, &bad, err, sizeof(err)) != 0) {
			if (strcmp(bad, key) == 0)
				fprintf(stderr, "%s:%lu:%lu: %s\n", file,
					v->line, v->col, err);
			else if (bad[0] != '\0')
				fprintf(stderr, "%s: %s\n",
					sim_config_where(&c, bad), err);
			else
				fprintf(stderr, "%s\n", err);
			ok = false;
		} else {
			/* everything else the run would refuse before it
			 * starts: sizing, the policy's setup, the trace */
			struct sim_run_opts ro;
			sim_run *R = NULL;
			char prog[1600], rerr[SIM_RUN_ERRLEN];

			memset(&ro, 0, sizeof(ro));
			snprintf(prog, sizeof(prog), "%s:%lu:%lu: %s", file,
				 v->line, v->col, assign);
			ro.prog = prog;
			ro.quiet = true;
			ro.log = stdout;
			ro.diag = stderr;
			if (sim_run_open(&R, &c, &ro, rerr, sizeof(rerr)) !=
			    KV_OK) {
				fprintf(stderr, "%s\n", rerr);
				ok = false;
			}
			sim_run_close(R);
		}
	}
	sim_config_release(&c);
	free(assign);
	return ok;
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
		return 2;
	}
	g = d.root != NULL ? yd_get(d.root, "sweep") : NULL;
	if (g == NULL) {
		fprintf(stderr, "%s:1:1: no `sweep:` mapping of keys to lists "
			"of values (one run is `kvsim run`)\n", file);
		rc = 2;
		goto out;
	}
	if (g->type != YD_MAP || g->n == 0) {
		fprintf(stderr, "%s:%lu:%lu: sweep: expected a mapping of "
			"keys to lists of values\n", file, g->line, g->col);
		rc = 2;
		goto out;
	}
	for (size_t i = 0; i < g->n && rc == 0; i++) {
		const struct yd_node *k = yd_key(g, i), *v = yd_val(g, i);

		if (sweep_add_axis(s, k->str) != KV_OK) {
			fprintf(stderr, "%s:%lu:%lu: sweep: key '%s' twice\n",
				file, k->line, k->col, k->str);
			rc = 2;
			break;
		}
		if (strcmp(k->str, "sweep") == 0) {
			fprintf(stderr, "%s:%lu:%lu: sweep: 'sweep' is not a "
				"configuration key\n", file, k->line, k->col);
			rc = 2;
			break;
		}
		if (v->type != YD_SEQ || v->n == 0) {
			fprintf(stderr, "%s:%lu:%lu: sweep: %s: expected a "
				"non-empty list of values, e.g. [16, 32]\n",
				file, v->line, v->col, k->str);
			rc = 2;
			break;
		}
		for (size_t j = 0; j < v->n; j++) {
			const struct yd_node *x = v->kid[j];

			if (x->type != YD_SCALAR) {
				fprintf(stderr, "%s:%lu:%lu: sweep: %s: "
					"expected a scalar value\n", file,
					x->line, x->col, k->str);
				rc = 2;
				break;
			}
			if (sweep_add_value(s, x->str) != KV_OK) {
				fprintf(stderr, "%s:%lu:%lu: sweep: %s: "
					"value '%s' twice\n", file, x->line,
					x->col, k->str, x->str);
				rc = 2;
				break;
			}
			if (!check_value(file, k, x)) {
				rc = 2;
				break;
			}
		}
	}
	if (rc == 0 && sweep_npoints(s) == SIZE_MAX) {
		fprintf(stderr, "%s:%lu:%lu: sweep: more than %u points\n",
			file, g->line, g->col, SWEEP_MAX_POINTS);
		rc = 2;
	}
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
		const char *key = sweep_axis_key(s, x);
		const char *val = sweep_value(s, i, x);
		size_t n = strlen(key) + strlen(val) + 2;

		a[k++] = strdup("--set");
		if ((a[k] = malloc(n)) != NULL)
			snprintf(a[k], n, "%s=%s", key, val);
		k++;
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

int
sweep_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "resume", no_argument, NULL, 'r' },
		{ "shard", required_argument, NULL, 'S' },
		{ "merge", no_argument, NULL, 'M' },
		{ "list", no_argument, NULL, 'L' },
		{ "force", no_argument, NULL, 'f' },
		{ "no-plot", no_argument, NULL, 'P' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char out[3800] = "", exe[PATH_MAX], err[1400], path[4200];
	const char *file;
	unsigned long shard_i = 0, shard_n = 1;
	long jobs = sysconf(_SC_NPROCESSORS_ONLN);
	bool resume = false, force = false, quiet = false, merge = false;
	bool list = false, sharded = false, no_plot = false;
	sweep *s = NULL;
	kv_err e;
	struct point *pt = NULL;
	struct sweep_job *job = NULL;
	size_t np, nsel = 0, nrun = 0, nskip = 0, nfail = 0, missing = 0;
	int c, rc = 0;
	ssize_t el;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:j:rfqh", lo, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'o':
			snprintf(out, sizeof(out), "%s", optarg);
			break;
		case 'j':
			errno = 0;
			jobs = strtol(optarg, &end, 10);
			if (errno || *end || jobs < 1 || jobs > 4096) {
				fprintf(stderr, "kvsim sweep: --jobs %s: "
					"expected an integer in [1, 4096]\n",
					optarg);
				return 2;
			}
			break;
		case 'r':
			resume = true;
			break;
		case 'S':
			if (!parse_shard(optarg, &shard_i, &shard_n)) {
				fprintf(stderr, "kvsim sweep: --shard %s: "
					"expected I/N with 0 <= I < N\n",
					optarg);
				return 2;
			}
			sharded = true;
			break;
		case 'M':
			merge = true;
			break;
		case 'L':
			list = true;
			break;
		case 'f':
			force = true;
			break;
		case 'P':
			no_plot = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			sweep_usage(stdout);
			return 0;
		default:
			sweep_usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "kvsim sweep: expected one SWEEP.yaml\n");
		sweep_usage(stderr);
		return 2;
	}
	if (merge && (sharded || force || resume)) {
		fprintf(stderr, "kvsim sweep: --merge runs nothing; it takes "
			"no --shard, --force or --resume\n");
		return 2;
	}
	file = argv[optind];
	if (jobs < 1)
		jobs = 1;
	if (out[0] == '\0')
		default_out(file, out, sizeof(out));
	if ((s = sweep_new()) == NULL) {
		fprintf(stderr, "kvsim sweep: out of memory\n");
		return 1;
	}
	if ((rc = load_grid(file, s)) != 0)
		goto done;
	np = sweep_npoints(s);
	{
		size_t a, b;

		if (!sweep_ids_unique(s, &a, &b)) {
			char id[SWEEP_ID_LEN];

			sweep_point_id(s, a, id);
			fprintf(stderr, "%s: points %zu and %zu share the id "
				"%s; change a value's spelling\n", file, a, b,
				id);
			rc = 2;
			goto done;
		}
	}
	pt = calloc(np, sizeof(*pt));
	if (pt == NULL) {
		fprintf(stderr, "kvsim sweep: out of memory\n");
		rc = 1;
		goto done;
	}
	for (size_t i = shard_i; i < np; i += shard_n) {
		struct point *p = &pt[nsel++];

		p->index = i;
		sweep_point_id(s, i, p->id);
		if (!sweep_point_dir(s, out, i, p->dir, sizeof(p->dir))) {
			fprintf(stderr, "kvsim sweep: --out %s: path too "
				"long\n", out);
			rc = 2;
			goto done;
		}
	}
	if (list) {
		for (size_t i = 0; i < nsel; i++) {
			printf("%zu %s", pt[i].index, pt[i].id);
			for (size_t a = 0; a < sweep_naxes(s); a++)
				printf(" %s=%s", sweep_axis_key(s, a),
				       sweep_value(s, pt[i].index, a));
			printf("\n");
		}
		goto done;
	}
	if (merge)
		goto merge;

	/* Refuse to overwrite, before anything runs. */
	snprintf(path, sizeof(path), "%s/sweep.csv", out);
	if (!resume && !force && !sharded && access(path, F_OK) == 0) {
		fprintf(stderr, "kvsim sweep: %s exists; refusing to overwrite "
			"it (use --resume or --force)\n", path);
		rc = 2;
		goto done;
	}
	for (size_t i = 0; i < nsel; i++) {
		struct point *p = &pt[i];

		if (!dir_has_files(p->dir))
			continue;
		if (resume && sweep_run_complete(p->dir))
			continue;	/* skipped below */
		if (!resume && !force) {
			fprintf(stderr, "kvsim sweep: %s exists and is not "
				"empty; refusing to overwrite it (use --resume "
				"or --force)\n", p->dir);
			rc = 2;
			goto done;
		}
	}
	el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (el <= 0 || (size_t)el >= sizeof(exe) - 1) {
		fprintf(stderr, "kvsim sweep: cannot find the kvsim executable "
			"(/proc/self/exe): %s\n", strerror(errno));
		rc = 1;
		goto done;
	}
	exe[el] = '\0';

	job = calloc(nsel ? nsel : 1, sizeof(*job));
	if (job == NULL) {
		fprintf(stderr, "kvsim sweep: out of memory\n");
		rc = 1;
		goto done;
	}
	for (size_t i = 0; i < nsel; i++) {
		struct point *p = &pt[i];

		if (resume && sweep_run_complete(p->dir)) {
			nskip++;
			continue;
		}
		if (outdir_mkdir_p(p->dir) != 0) {
			fprintf(stderr, "kvsim sweep: %s: %s\n", p->dir,
				strerror(errno));
			rc = 2;
			goto done;
		}
		sweep_run_clean(p->dir);
		p->argv = point_argv(s, p->index, exe, file, p->dir);
		if (p->argv == NULL) {
			fprintf(stderr, "kvsim sweep: out of memory\n");
			rc = 1;
			goto done;
		}
		job[nrun].argv = p->argv;
		job[nrun].dir = p->dir;
		job[nrun].id = p->id;
		nrun++;
	}
	/* A sweep.csv from before would no longer describe the points. */
	if (nrun > 0)
		unlink(path);
	if (!quiet)
		fprintf(stderr, "kvsim sweep: %zu point%s%s, %zu to run, %zu "
			"complete already, %ld at a time, in %s\n", nsel,
			nsel == 1 ? "" : "s", sharded ? " in this shard" : "",
			nrun, nskip, jobs, out);
	c = sweep_exec(job, nrun, (unsigned)jobs, "kvsim sweep",
		       quiet ? NULL : stderr, err, sizeof(err));
	if (c < 0) {
		fprintf(stderr, "kvsim sweep: %s\n", err);
		rc = 1;
		goto done;
	}
	for (size_t i = 0; i < nrun; i++)
		if (job[i].status != 0)
			nfail++;
	if (c == 1) {
		fprintf(stderr, "kvsim sweep: interrupted; no sweep.csv (run "
			"again with --resume to finish)\n");
		rc = 1;
		goto done;
	}
	if (nfail > 0) {
		fprintf(stderr, "kvsim sweep: %zu of %zu point%s failed (their "
			"stderr.txt is kept); no sweep.csv\n", nfail, nrun,
			nrun == 1 ? "" : "s");
		for (size_t i = 0; i < nrun; i++)
			if (job[i].status != 0)
				fprintf(stderr, "  %s  exit %d  %s/stderr.txt\n",
					job[i].id, job[i].status, job[i].dir);
		rc = 1;
		goto done;
	}
merge:
	switch ((e = sweep_merge(s, out, &missing, err, sizeof(err)))) {
	case KV_OK:
		if (!quiet)
			fprintf(stderr, "kvsim sweep: %s/sweep.csv: %zu "
				"points\n", out, np);
		if (!no_plot)
			auto_plot("kvsim sweep", out, quiet);
		break;
	case KV_ENOENT:
		if (merge) {
			fprintf(stderr, "kvsim sweep: %zu of %zu points are "
				"not complete in %s; no sweep.csv\n", missing,
				np, out);
			rc = 1;
		} else if (!quiet) {
			fprintf(stderr, "kvsim sweep: shard %lu/%lu done; %zu "
				"of %zu points of the grid are not complete "
				"yet (sweep.csv comes with the last of them, "
				"or with --merge)\n", shard_i, shard_n,
				missing, np);
		}
		break;
	default:
		/* points whose summary.csv columns differ, or a sweep.csv
		 * that cannot be made (the --out DIR): bad input */
		fprintf(stderr, "kvsim sweep: %s\n", err);
		rc = e == KV_EINVAL ? 2 : 1;
		break;
	}
done:
	points_free(pt, nsel);
	free(job);
	sweep_free(s);
	return rc;
}
