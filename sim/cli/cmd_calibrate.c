/*
 * cmd_calibrate.c -- `kvsim calibrate`: fit the copy terms of the cost
 * model to the device check's CSVs and write a calibration file that
 * `kvsim run` reads (cost.calibration; docs/cost-model.md §5.1, §5.2).
 *
 *   copy_sweep.csv    per (dir, strategy, host memory): the median time of
 *                     each (chunk_bytes, n_chunks) point over its
 *                     repetitions, fitted by calfit_copy() (GSL weighted
 *                     least squares, weights 1/T^2) to
 *                     T = alpha + beta * n_chunks + bytes * ns_per_byte;
 *   layout_sweep.csv  held out: the same terms predict the Llama-3-8B
 *                     layout swaps (median relative error <= 15%, p90 <=
 *                     30% to pass), and the swap-vs-recompute decision of
 *                     each point (a swap round trip against the model's
 *                     recompute time of those tokens) must be the same
 *                     with measured and predicted times.
 *
 * alpha is per measured operation (one stream synchronisation); the run
 * charges it per call as vLLM V0 issues them (sim/cost.h).
 *
 * The file says where its numbers come from (meta: device, date, data,
 * measured).  --measured no marks a calibration made from host numbers or
 * synthetic data: usable, but not a device measurement.
 */
#include "config.h"

#include "sim/cli/cmd_calibrate.h"
#include "sim/cli/cmd_calkern.h"
#include "sim/cli/cmd_calserve.h"
#include "sim/cli/opts.h"

#include "sim/calfit.h"
#include "sim/calib.h"
#include "sim/model/catalog.h"
#include "sim/cost.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

int calibrate_main(int argc, char **argv);

/* One measured point: the median of its repetitions. */
struct pt {
	char key[96];			/* grouping key */
	int dir, strat, hostmem, layout;
	double chunk_bytes, chunks, bytes, blocks;
	double *t;
	size_t nt, capt;
};

struct pts {
	struct pt *p;
	size_t n, cap;
};

static struct pt *
pt_find(struct pts *s, const char *key)
{
	struct pt *q;

	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->p[i].key, key) == 0)
			return &s->p[i];
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;

		q = realloc(s->p, cap * sizeof(*q));
		if (q == NULL)
			return NULL;
		s->p = q;
		s->cap = cap;
	}
	q = &s->p[s->n++];
	memset(q, 0, sizeof(*q));
	snprintf(q->key, sizeof(q->key), "%s", key);
	return q;
}

static int
pt_add(struct pt *q, double t)
{
	if (q->nt == q->capt) {
		size_t cap = q->capt ? q->capt * 2 : 8;
		double *x = realloc(q->t, cap * sizeof(*x));

		if (x == NULL)
			return -1;
		q->t = x;
		q->capt = cap;
	}
	q->t[q->nt++] = t;
	return 0;
}

static double
pt_median(struct pt *q)
{
	return calfit_quantile(q->t, q->nt, 0.5);
}

static void
pts_free(struct pts *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->p[i].t);
	free(s->p);
	memset(s, 0, sizeof(*s));
}

static int
index_of(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

static const char *const dirs[] = { "d2h", "h2d" };
static const char *const strats[] = { "per-chunk", "batch", "gather",
				      "staged" };
static const char *const hms[] = { "pinned", "pageable" };
static const char *const layouts[] = { "fa-split", "fi-fused",
				       "ds-interleaved", "cross-layer" };

/* A text field naming one of names, or a message at its position. */
static int
field_enum(struct calfit_csv *c, int col, const char *const *names, int n,
	   int *out)
{
	*out = index_of(c->field[col], names, n);
	if (*out < 0) {
		snprintf(c->err, sizeof(c->err), "%s:%lu:%lu: %s: unknown "
			 "value '%s'", c->path, c->line, c->col[col],
			 c->head[col], c->field[col]);
		return -1;
	}
	return 0;
}

/* Field i (value v) is not a whole number from 1 (from 0 if zero_ok) to
 * 2^53: 1 with c->err at its position. */
static int
shape_bad(struct calfit_csv *c, int i, double v, bool zero_ok)
{
	if (v == floor(v) && v >= (zero_ok ? 0 : 1) && v <= 9007199254740992.0)
		return 0;
	snprintf(c->err, sizeof(c->err), "%s:%lu:%lu: %s: expected a whole "
		 "number %s, got '%s'", c->path, c->line, c->col[i],
		 c->head[i], zero_ok ? "of 0 or more" : "of 1 or more",
		 c->field[i]);
	return 1;
}

/*
 * The device CSVs share a shape: three named fields (each one of a list of
 * names), then four numbers, of which total_bytes is the third and dev_ns
 * the fourth.  A reader names its seven columns; a row comes back as three
 * indices and four numbers.
 */
struct dev_csv {
	const char *name[7];		/* columns, in the order looked up */
	const char *const *names[3];	/* what each named field may be */
	int nnames[3];
};

static const struct dev_csv sweep_csv = {
	{ "dir", "strategy", "hostmem", "chunk_bytes", "n_chunks",
	  "total_bytes", "dev_ns" },
	{ dirs, strats, hms }, { 2, 4, 2 },
};

static const struct dev_csv layout_csv = {
	{ "layout", "dir", "strategy", "logical_blocks", "chunks",
	  "total_bytes", "dev_ns" },
	{ layouts, dirs, strats }, { 4, 2, 4 },
};

/* Open path and find the seven columns, in order: 0, or -1 with the
 * message in c->err. */
static int
dev_open(struct calfit_csv *c, const char *path, const struct dev_csv *f,
	 int col[7])
{
	if (calfit_csv_open(c, path) != 0)
		return -1;
	for (int i = 0; i < 7; i++)
		if ((col[i] = calfit_csv_col(c, f->name[i])) < 0)
			return -1;
	return 0;
}

/* The current row: 0, or -1 with the message in c->err.  The first two
 * numbers are whole and at least 1, dev_ns whole and at least 0. */
static int
dev_row(struct calfit_csv *c, const struct dev_csv *f, const int col[7],
	int e[3], double v[4])
{
	for (int i = 0; i < 3; i++)
		if (field_enum(c, col[i], f->names[i], f->nnames[i], &e[i]))
			return -1;
	for (int i = 0; i < 4; i++)
		if (calfit_csv_num(c, col[3 + i], &v[i]))
			return -1;
	/* sizes are whole and positive; a time is not negative (0: below
	 * the timer's resolution, left out) */
	if (shape_bad(c, col[3], v[0], false) ||
	    shape_bad(c, col[4], v[1], false) ||
	    shape_bad(c, col[6], v[3], true))
		return -1;
	return 0;
}

/* A reader's end: the status, with c's message printed for bad input. */
static int
dev_close(struct calfit_csv *c, int rc)
{
	if (rc == KVSIM_EXIT_USAGE)
		fprintf(stderr, "%s\n", c->err);
	else if (rc == KVSIM_EXIT_FAIL)
		fprintf(stderr, "kvsim calibrate: out of memory\n");
	calfit_csv_close(c);
	return rc;
}

/* The point under key with one more time: NULL when memory runs out. */
static struct pt *
dev_point(struct pts *s, const char *key, double dev)
{
	struct pt *q = pt_find(s, key);

	return q != NULL && pt_add(q, dev) == 0 ? q : NULL;
}

/* copy_sweep.csv -> points keyed by dir/strategy/hostmem/chunk/n. */
static int
read_sweep(const char *path, struct pts *s, size_t *rows)
{
	struct calfit_csv c;
	int col[7], e[3], r;
	double v[4];	/* chunk_bytes, n_chunks, total_bytes, dev_ns */
	char key[96];
	struct pt *q;

	*rows = 0;
	if (dev_open(&c, path, &sweep_csv, col) != 0)
		return dev_close(&c, KVSIM_EXIT_USAGE);
	while ((r = calfit_csv_next(&c)) == 1) {
		if (dev_row(&c, &sweep_csv, col, e, v) != 0)
			return dev_close(&c, KVSIM_EXIT_USAGE);
		if (v[2] != v[0] * v[1]) {	/* sizes add up */
			snprintf(c.err, sizeof(c.err), "%s:%lu:%lu: "
				 "total_bytes %.17g is not chunk_bytes x "
				 "n_chunks (%.17g)", c.path, c.line,
				 c.col[col[5]], v[2], v[0] * v[1]);
			return dev_close(&c, KVSIM_EXIT_USAGE);
		}
		if (v[3] == 0)
			continue;
		snprintf(key, sizeof(key), "%d/%d/%d/%.0f/%.0f", e[0], e[1],
			 e[2], v[0], v[1]);
		if ((q = dev_point(s, key, v[3])) == NULL)
			return dev_close(&c, KVSIM_EXIT_FAIL);
		q->dir = e[0];
		q->strat = e[1];
		q->hostmem = e[2];
		q->chunk_bytes = v[0];
		q->chunks = v[1];
		q->bytes = v[2];
		(*rows)++;
	}
	if (r < 0)
		return dev_close(&c, KVSIM_EXIT_USAGE);
	if (*rows == 0) {
		snprintf(c.err, sizeof(c.err), "%s: no row with a measured "
			 "time (dev_ns > 0): nothing to fit", path);
		return dev_close(&c, KVSIM_EXIT_USAGE);
	}
	return dev_close(&c, KVSIM_EXIT_OK);
}

/* layout_sweep.csv -> points keyed by layout/dir/strategy/blocks. */
static int
read_layout(const char *path, struct pts *s)
{
	struct calfit_csv c;
	int col[7], e[3], r;
	double v[4];	/* logical_blocks, chunks, total_bytes, dev_ns */
	char key[96];
	struct pt *q;

	if (dev_open(&c, path, &layout_csv, col) != 0)
		return dev_close(&c, KVSIM_EXIT_USAGE);
	while ((r = calfit_csv_next(&c)) == 1) {
		if (dev_row(&c, &layout_csv, col, e, v) != 0)
			return dev_close(&c, KVSIM_EXIT_USAGE);
		if (!(v[3] > 0))
			continue;
		snprintf(key, sizeof(key), "%d/%d/%d/%.0f", e[0], e[1], e[2],
			 v[0]);
		if ((q = dev_point(s, key, v[3])) == NULL)
			return dev_close(&c, KVSIM_EXIT_FAIL);
		q->layout = e[0];
		q->dir = e[1];
		q->strat = e[2];
		q->blocks = v[0];
		q->chunks = v[1];
		q->bytes = v[2];
	}
	return dev_close(&c, r < 0 ? KVSIM_EXIT_USAGE : KVSIM_EXIT_OK);
}

struct fitted {
	bool ok;
	struct calfit_result r;
	size_t points;
};

/* ---- the held-out check and decision agreement ------------------------ */

struct holdout {
	size_t n;
	double med_rel, p90_rel;
	size_t decisions, agree;
};

static struct pt *
twin(struct pts *s, const struct pt *q)
{
	char key[96];

	snprintf(key, sizeof(key), "%d/%d/%d/%.0f", q->layout, 1 - q->dir,
		 q->strat, q->blocks);
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->p[i].key, key) == 0)
			return &s->p[i];
	return NULL;
}

static int
check_holdout(struct pts *lay, struct fitted fit[2][4][2],
	      const struct cost_model *cm, uint32_t block_size,
	      struct holdout *h)
{
	double *rel = malloc((lay->n + 1) * sizeof(*rel));

	memset(h, 0, sizeof(*h));
	if (rel == NULL)
		return -1;
	for (size_t i = 0; i < lay->n; i++) {
		struct pt *q = &lay->p[i], *o;
		const struct fitted *f = &fit[q->dir][q->strat][0];
		double meas = pt_median(q), pred;

		if (!f->ok)
			continue;
		pred = calfit_predict(&f->r, 1, q->chunks, q->bytes);
		rel[h->n++] = fabs(pred - meas) / meas;
		/* each (layout, strategy, blocks) once: from its d2h row */
		if (cm == NULL || q->dir != 0 || (o = twin(lay, q)) == NULL ||
		    !fit[1][q->strat][0].ok)
			continue;
		{
			double rec = (double)cost_recompute_ns(
				cm, (uint64_t)q->blocks * block_size);
			double m2 = meas + pt_median(o);
			double p2 = pred + calfit_predict(
				&fit[1][q->strat][0].r, 1, o->chunks,
				o->bytes);

			h->decisions++;
			if ((m2 < rec) == (p2 < rec)) {
				h->agree++;
				continue;
			}
			printf("decision changed: %s %s, %.0f blocks: swap "
			       "out + in %.1f us measured, %.1f us "
			       "predicted; recompute %.1f us\n",
			       layouts[q->layout], strats[q->strat],
			       q->blocks, m2 / 1e3, p2 / 1e3, rec / 1e3);
		}
	}
	h->med_rel = calfit_quantile(rel, h->n, 0.5);
	h->p90_rel = calfit_quantile(rel, h->n, 0.9);
	free(rel);
	return 0;
}

/* ---- output -------------------------------------------------------------- */

static int
write_yaml(const char *path, struct fitted fit[2][4][2], const char *data,
	   size_t rows, const char *device, const char *date, bool measured,
	   const struct holdout *h, bool have_h)
{
	char tmp[1100];
	FILE *f = cli_tmp_open("kvsim calibrate", path, tmp, sizeof(tmp));

	if (f == NULL)
		return KVSIM_EXIT_USAGE;
	fprintf(f, "# Copy terms fitted by kvsim calibrate (docs/cost-model.md "
		"5.2):\n# T = alpha * calls + beta * chunks + bytes * "
		"ns_per_byte, weighted least squares\n# (weights 1/T^2); alpha "
		"is per measured operation.\nmeta:\n  device: ");
	cli_yaml_str(f, device);
	fprintf(f, "\n  date: ");
	cli_yaml_str(f, date);
	fprintf(f, "\n  measured: %s\n  data: ", measured ? "true" : "false");
	{
		char d[1200];

		snprintf(d, sizeof(d), "%s (%zu rows)", data, rows);
		cli_yaml_str(f, d);
	}
	if (have_h) {
		char d[256];

		snprintf(d, sizeof(d), "held out: median %.1f%%, p90 %.1f%% "
			 "over %zu points; decision agreement %zu/%zu",
			 100 * h->med_rel, 100 * h->p90_rel, h->n, h->agree,
			 h->decisions);
		fprintf(f, "\n  holdout: ");
		cli_yaml_str(f, d);
	}
	fprintf(f, "\ncopy:\n");
	for (int d = 0; d < 2; d++) {
		bool any = false;

		for (int s = 0; s < 4; s++)
			for (int m = 0; m < 2; m++)
				any |= fit[d][s][m].ok;
		if (!any)
			continue;
		fprintf(f, "  %s:\n", dirs[d]);
		for (int s = 0; s < 4; s++) {
			if (!fit[d][s][0].ok && !fit[d][s][1].ok)
				continue;
			fprintf(f, "    %s:\n", strats[s]);
			for (int m = 0; m < 2; m++) {
				const struct fitted *t = &fit[d][s][m];
				char src[200];

				if (!t->ok)
					continue;
				snprintf(src, sizeof(src), "fit of %zu points, "
					 "median error %.1f%%%s", t->points,
					 100 * t->r.med_rel,
					 measured ? "" : ", not a device "
					 "measurement");
				fprintf(f, "      %s:\n", hms[m]);
				fprintf(f, "        alpha_ns: {value: %.6g, "
					"source: ", t->r.alpha_ns);
				cli_yaml_str(f, src);
				fprintf(f, "}\n        beta_ns: {value: %.6g, "
					"source: ", t->r.beta_ns);
				cli_yaml_str(f, src);
				fprintf(f, "}\n        ns_per_byte: {value: "
					"%.6g, source: ", t->r.ns_per_byte);
				cli_yaml_str(f, src);
				fprintf(f, "}\n");
			}
		}
	}
	return cli_tmp_commit("kvsim calibrate", f, tmp, path) == 0 ?
	       KVSIM_EXIT_OK : KVSIM_EXIT_USAGE;
}

static void
calibrate_usage(FILE *f)
{
	fprintf(f,
"usage: kvsim calibrate COPY_SWEEP.csv [--holdout LAYOUT_SWEEP.csv]\n"
"                       [--out FILE] [--device NAME] [--date DATE]\n"
"                       [--measured yes|no] [--model M] [--gpu G]\n"
"\n"
"Fit alpha, beta and 1/B per direction x strategy x host memory to the\n"
"device check's copy sweep and write a calibration file for\n"
"cost.calibration (docs/cost-model.md 5.2).\n"
"\n"
"  -o, --out FILE     the calibration file (default calibration.yaml)\n"
"      --holdout CSV  predict layout_sweep.csv: median error <= 15%%,\n"
"                     p90 <= 30%%, and swap-vs-recompute decisions\n"
"      --device NAME  recorded in meta.device (default \"unknown\")\n"
"      --date DATE    recorded in meta.date (default \"unknown\")\n"
"      --measured B   yes: device measurements; no (default): host or\n"
"                     synthetic numbers\n"
"      --model M, --gpu G  for the recompute times of the decisions\n"
"                     (default meta-llama/Meta-Llama-3-8B on h200)\n"
"\n"
"Exit status: 0 ok, 1 the held-out check failed (the file is written),\n"
"2 bad usage or input.\n\n");
	calibrate_serving_usage(f);
}

static int
load_cost(const char *model, const char *gpu, cat **c, struct cost_model *cm)
{
	struct cost_config cc;
	struct cat_err ce;
	const struct cat_model *m;
	const struct cat_gpu *g;
	char why[512];

	if (cat_load(c, NULL, &ce) != KV_OK) {
		fprintf(stderr, "kvsim calibrate: %s\n", ce.msg);
		return KVSIM_EXIT_USAGE;
	}
	m = cat_find_model(*c, model);
	g = cat_find_gpu(*c, gpu);
	if (m == NULL || g == NULL) {
		fprintf(stderr, "kvsim calibrate: unknown %s '%s'\n",
			m == NULL ? "model" : "GPU", m == NULL ? model : gpu);
		return KVSIM_EXIT_USAGE;
	}
	cost_config_init(&cc);
	if (cost_model_init(cm, m, g, &cc, why, sizeof(why)) != KV_OK) {
		fprintf(stderr, "kvsim calibrate: cost model: %s\n", why);
		return KVSIM_EXIT_USAGE;
	}
	return KVSIM_EXIT_OK;
}

struct calib_cmd {
	struct cli_opts o;	/* --out */
	const char *hold, *device, *date, *model, *gpu;
	bool measured;
};

/* The options and the one CSV; -1 after --help. */
static int
calibrate_parse(struct calib_cmd *x, int argc, char **argv)
{
	static const struct option lo[] = {
		CLI_LO_OUT,
		{ "holdout", required_argument, NULL, 'H' },
		{ "device", required_argument, NULL, 'D' },
		{ "date", required_argument, NULL, 'd' },
		{ "measured", required_argument, NULL, 'M' },
		{ "model", required_argument, NULL, 'm' },
		{ "gpu", required_argument, NULL, 'g' },
		CLI_LO_HELP,
		CLI_LO_END
	};
	int c;

	optind = 1;
	while ((c = cli_getopt(&x->o, argc, argv, "o:h", lo)) != -1) {
		switch (c) {
		case 'H':
			x->hold = optarg;
			break;
		case 'D':
			x->device = optarg;
			break;
		case 'd':
			x->date = optarg;
			break;
		case 'M':
			if (strcmp(optarg, "yes") != 0 &&
			    strcmp(optarg, "no") != 0) {
				fprintf(stderr, "kvsim calibrate: --measured: "
					"yes or no, not '%s'\n", optarg);
				return KVSIM_EXIT_USAGE;
			}
			x->measured = strcmp(optarg, "yes") == 0;
			break;
		case 'm':
			x->model = optarg;
			break;
		case 'g':
			x->gpu = optarg;
			break;
		case 'h':
			calibrate_usage(stdout);
			return -1;
		case CLI_OPT_BAD:
			return KVSIM_EXIT_USAGE;
		default:
			calibrate_usage(stderr);
			return KVSIM_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		calibrate_usage(stderr);
		return KVSIM_EXIT_USAGE;
	}
	return KVSIM_EXIT_OK;
}

/* Fit one direction x strategy x host memory class of the sweep and print
 * its row (a class with too few points is a note on stderr). */
static int
calibrate_fit_class(const struct pts *sw, int d, int s, int m,
		    struct fitted *f)
{
	struct calfit_obs *o = malloc((sw->n + 1) * sizeof(*o));
	char why[256];
	size_t n = 0;

	if (o == NULL)
		return KVSIM_EXIT_FAIL;
	for (size_t i = 0; i < sw->n; i++) {
		struct pt *q = &sw->p[i];

		if (q->dir != d || q->strat != s || q->hostmem != m)
			continue;
		o[n++] = (struct calfit_obs){ 1, q->chunks, q->bytes,
					      pt_median(q) };
	}
	if (n >= 3 && calfit_copy(o, n, &f->r, why, sizeof(why)) == 0) {
		f->ok = true;
		f->points = n;
		printf("%-4s %-10s %-9s %6zu %12.1f %10.3f %9.2f %7.1f%% "
		       "%7.1f%%\n", dirs[d], strats[s], hms[m], n,
		       f->r.alpha_ns, f->r.beta_ns, f->r.ns_per_byte > 0 ?
		       1 / f->r.ns_per_byte : 0.0, 100 * f->r.med_rel,
		       100 * f->r.p90_rel);
	} else if (n > 0) {
		fprintf(stderr, "kvsim calibrate: %s %s %s: %zu points, no "
			"fit%s%s\n", dirs[d], strats[s], hms[m], n,
			n >= 3 ? ": " : "", n >= 3 ? why : "");
	}
	free(o);
	return KVSIM_EXIT_OK;
}

/* Every class of the sweep, under one table header. */
static int
calibrate_fit(const struct pts *sw, struct fitted fit[2][4][2])
{
	printf("%-4s %-10s %-9s %6s %12s %10s %9s %8s %8s\n", "dir",
	       "strategy", "hostmem", "points", "alpha_ns", "beta_ns", "GB/s",
	       "med_err", "p90_err");
	for (int d = 0; d < 2; d++)
		for (int s = 0; s < 4; s++)
			for (int m = 0; m < 2; m++)
				if (calibrate_fit_class(sw, d, s, m,
							&fit[d][s][m]) != 0)
					return KVSIM_EXIT_FAIL;
	return KVSIM_EXIT_OK;
}

/* --holdout: predict the layout sweep with the fitted terms. */
static int
calibrate_holdout(const struct calib_cmd *x, struct fitted fit[2][4][2],
		  struct holdout *h)
{
	struct pts lay = { 0 };
	struct cost_model cm;
	cat *catalog = NULL;
	int rc;

	if ((rc = read_layout(x->hold, &lay)) != 0 ||
	    (rc = load_cost(x->model, x->gpu, &catalog, &cm)) != 0)
		goto done;
	if (check_holdout(&lay, fit, &cm, cm.block_size, h) != 0) {
		rc = KVSIM_EXIT_FAIL;
		goto done;
	}
	printf("held out (%s): %zu points, median error %.1f%%, p90 "
	       "%.1f%% (pass: <= 15%%, <= 30%%); swap-vs-recompute "
	       "decisions unchanged %zu/%zu\n", x->hold, h->n,
	       100 * h->med_rel, 100 * h->p90_rel, h->agree, h->decisions);
done:
	pts_free(&lay);
	cat_free(catalog);
	return rc;
}

/* Fit, check the held-out sweep, write the file. */
static int
calibrate_exec(const struct calib_cmd *x, const char *data)
{
	const char *out = x->o.out != NULL ? x->o.out : "calibration.yaml";
	struct fitted fit[2][4][2];
	struct pts sw = { 0 };
	struct holdout h;
	size_t rows = 0;
	int rc;

	memset(fit, 0, sizeof(fit));
	memset(&h, 0, sizeof(h));
	gsl_set_error_handler_off();
	if ((rc = read_sweep(data, &sw, &rows)) != 0 ||
	    (rc = calibrate_fit(&sw, fit)) != 0)
		goto done;
	if (x->hold != NULL && (rc = calibrate_holdout(x, fit, &h)) != 0)
		goto done;
	if ((rc = write_yaml(out, fit, data, rows, x->device, x->date,
			     x->measured, &h, x->hold != NULL)) != 0)
		goto done;
	printf("wrote %s (%s)\n", out, x->measured ? "measured" :
	       "not a device measurement");
	if (x->hold != NULL && (h.n == 0 || !(h.med_rel <= 0.15) ||
				!(h.p90_rel <= 0.30))) {
		printf("held-out check FAILED\n");
		rc = KVSIM_EXIT_FAIL;
	}
done:
	pts_free(&sw);
	return rc;
}

int
calibrate_main(int argc, char **argv)
{
	struct calib_cmd x = {
		.device = "unknown", .date = "unknown",
		.model = "meta-llama/Meta-Llama-3-8B", .gpu = "h200"
	};
	int rc;

	if (argc > 1 && strcmp(argv[1], "kernels") == 0)
		return calkern_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "serving") == 0)
		return calibrate_serving_main(argc - 1, argv + 1);
	if (cli_opts_init(&x.o, "kvsim calibrate", CLI_OUT, argc) != 0) {
		cli_opts_release(&x.o);
		return KVSIM_EXIT_FAIL;
	}
	rc = calibrate_parse(&x, argc, argv);
	if (rc == KVSIM_EXIT_OK)
		rc = calibrate_exec(&x, argv[optind]);
	else if (rc < 0)
		rc = KVSIM_EXIT_OK;
	cli_opts_release(&x.o);
	return rc;
}
