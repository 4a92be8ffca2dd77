/*
 * compare.c -- thresholds, Welch's t-test, verdicts, and the sides of a
 * comparison read from summary.csv / sweep.csv (compare.h).
 *
 * Why Welch's t-test: the per-seed values of one configuration are few
 * (3-10 seeds) and the two sides need not have equal variances (a policy
 * change can make a metric steadier or noisier).  Mann-Whitney U was
 * rejected: with three seeds a side its smallest two-sided p-value is
 * 0.1, so it could never call a difference significant at 0.05.
 */
#include "config.h"

#include "reports/compare.h"
#include "reports/rpt.h"
#include "reports/sweep_csv.h"

#include <errno.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- thresholds ---------------------------------------------------------- */

/* Latencies: 5 % higher (queueing delay, small and jumpy: 10 %); the
 * throughputs: 2 % lower; preemption and swap work: 10 % more and more
 * than a floor of about one long request's worth (5 preemptions, 4,096
 * recomputed tokens, 256 swapped blocks of 16 tokens), so that a few from
 * none are not a regression; prefix hits: 2 % fewer; KV usage: reported,
 * no direction; engine hazards (stale cached tokens): 10 % more, any from
 * none. */
static const struct cmp_threshold defaults[] = {
	{ "ttft_p50_s", 1, true, 5, 0, "+5%" },
	{ "ttft_p99_s", 1, true, 5, 0, "+5%" },
	{ "tpot_p50_s", 1, true, 5, 0, "+5%" },
	{ "tpot_p99_s", 1, true, 5, 0, "+5%" },
	{ "e2e_p50_s", 1, true, 5, 0, "+5%" },
	{ "e2e_p99_s", 1, true, 5, 0, "+5%" },
	{ "queue_p50_s", 1, true, 10, 0, "+10%" },
	{ "queue_p99_s", 1, true, 10, 0, "+10%" },
	{ "throughput_req_s", -1, true, 2, 0, "-2%" },
	{ "throughput_out_tok_s", -1, true, 2, 0, "-2%" },
	{ "preemptions", 1, true, 10, 5, "+10%+5" },
	{ "recomputed_tokens", 1, true, 10, 4096, "+10%+4096" },
	{ "swap_out_blocks", 1, true, 10, 256, "+10%+256" },
	{ "kv_usage_mean", 0, false, 0, 0, "none" },
	{ "prefix_hit_rate", -1, true, 2, 0, "-2%" },
	{ "stale_cached_tokens", 1, true, 10, 0, "+10%" },
};

size_t
cmp_default_thresholds(const struct cmp_threshold **t)
{
	*t = defaults;
	return sizeof(defaults) / sizeof(defaults[0]);
}

/* The Y of +X%+Y: a finite number >= 0 and nothing after it. */
static bool
cmp__min_abs(const char *s, double *y)
{
	char *end;
	double v;

	if (*s == '+' || *s == '-' || *s == '\0')
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < 0)
		return false;
	*y = v;
	return true;
}

kv_err
cmp_threshold_parse(const char *spec, struct cmp_threshold *t, char *err,
		    size_t errlen)
{
	const char *colon = strrchr(spec, ':'), *v, *rest;
	char name[96], *end;
	size_t n;
	double x;

	memset(t, 0, sizeof(*t));
	if (colon == NULL || colon == spec) {
		snprintf(err, errlen, "--fail-on %s: expected METRIC:+X%% "
			 "(e.g. ttft_p99_s:+5%%, preemptions:+0)", spec);
		return KV_EINVAL;
	}
	n = (size_t)(colon - spec);
	if (n >= sizeof(name)) {
		snprintf(err, errlen, "--fail-on %s: metric name too long",
			 spec);
		return KV_EINVAL;
	}
	memcpy(name, spec, n);
	name[n] = '\0';
	/* NAME_s:QUANTILE, the spelling, is the column
	 * NAME_QUANTILE_s. */
	{
		char *q = strchr(name, ':');

		if (q != NULL) {
			size_t bl = (size_t)(q - name);

			if (bl > 2 && strncmp(name + bl - 2, "_s", 2) == 0 &&
			    q[1] != '\0' && strchr(q + 1, ':') == NULL) {
				snprintf(t->metric, sizeof(t->metric),
					 "%.*s_%s_s", (int)(bl - 2), name,
					 q + 1);
			} else {
				snprintf(err, errlen, "--fail-on %s: expected "
					 "METRIC or NAME_s:QUANTILE before the "
					 "threshold", spec);
				return KV_EINVAL;
			}
		} else {
			snprintf(t->metric, sizeof(t->metric), "%s", name);
		}
	}
	v = colon + 1;
	if (strcmp(v, "off") == 0 || strcmp(v, "none") == 0) {
		snprintf(t->text, sizeof(t->text), "none");
		return KV_OK;
	}
	if (*v != '+' && *v != '-') {
		snprintf(err, errlen, "--fail-on %s: the threshold needs a "
			 "direction: +X (higher is worse) or -X (lower is "
			 "worse), X a number or a percentage", spec);
		return KV_EINVAL;
	}
	errno = 0;
	x = strtod(v + 1, &end);
	rest = end;
	if (errno == 0 && end != v + 1 && *end == '%' && end[1] == *v &&
	    cmp__min_abs(end + 2, &t->min_abs))
		rest = "%";	/* +X%+Y: a percentage with a floor */
	if (errno != 0 || end == v + 1 || !isfinite(x) || x < 0 ||
	    (*rest != '\0' && strcmp(rest, "%") != 0) || v[1] == '-' ||
	    v[1] == '+') {
		snprintf(err, errlen, "--fail-on %s: expected +X, -X, +X%%, "
			 "-X%%, +X%%+Y or -X%%-Y with X, Y >= 0", spec);
		return KV_EINVAL;
	}
	t->dir = *v == '+' ? 1 : -1;
	t->pct = *rest == '%';
	t->value = x;
	snprintf(t->text, sizeof(t->text), "%s", v);
	return KV_OK;
}

/* ---- statistics and verdicts -------------------------------------------- */

static const char *const verdict_names[] = { "ok", "regression",
	"improvement", "not-significant" };

const char *
cmp_verdict_name(enum cmp_verdict v)
{
	return (unsigned)v < 4 ? verdict_names[v] : "?";
}

double
cmp_welch(const double *a, size_t na, const double *b, size_t nb,
	  double margin, double *t, double *df)
{
	double ma = gsl_stats_mean(a, 1, na), mb = gsl_stats_mean(b, 1, nb);
	double va = gsl_stats_variance_m(a, 1, na, ma) / (double)na;
	double vb = gsl_stats_variance_m(b, 1, nb, mb) / (double)nb;
	double se2 = va + vb, excess = fabs(mb - ma) - margin, tt, d, p;

	if (!(se2 > 0)) {
		if (t != NULL)
			*t = excess > 0 ? INFINITY : excess < 0 ? -INFINITY : 0;
		if (df != NULL)
			*df = (double)(na + nb - 2);
		return excess > 0 ? 0.0 : 1.0;
	}
	/* values so large that their variance overflows: no test */
	if (!isfinite(se2) || !isfinite(excess))
		return NAN;
	tt = excess / sqrt(se2);
	d = se2 * se2 / (va * va / (double)(na - 1) +
			 vb * vb / (double)(nb - 1));
	/* Welch's degrees of freedom lie in [min(na, nb) - 1, na + nb - 2];
	 * rounding (or an overflow of the squares) must not take them out */
	if (!(d >= 1.0))
		d = 1.0;
	if (!(d <= (double)(na + nb - 2)))
		d = (double)(na + nb - 2);
	p = 2.0 * gsl_cdf_tdist_Q(tt, d);
	if (t != NULL)
		*t = tt;
	if (df != NULL)
		*df = d;
	return p > 1.0 ? 1.0 : p;
}

void
cmp_judge(const double *b, size_t nb, const double *c, size_t nc,
	  const struct cmp_threshold *t, double alpha, struct cmp_row *r)
{
	bool worse = false, better = false;

	r->nb = nb;
	r->nc = nc;
	r->baseline = gsl_stats_mean(b, 1, nb);
	r->candidate = gsl_stats_mean(c, 1, nc);
	r->delta = r->candidate - r->baseline;
	r->delta_pct = r->baseline != 0
		? 100.0 * r->delta / fabs(r->baseline)
		: r->delta == 0 ? 0.0 : NAN;
	snprintf(r->threshold, sizeof(r->threshold), "%s", t->text);
	if (nb >= 2 && nc >= 2) {
		/* the threshold in the metric's unit: the margin the change
		 * must exceed */
		double margin = t->dir == 0 ? 0.0
			      : !t->pct ? t->value
			      : fmax(t->value / 100.0 * fabs(r->baseline),
				     t->min_abs);

		r->p = cmp_welch(b, nb, c, nc, margin, NULL, NULL);
		r->test = isnan(r->p) ? "none" : "welch-t";
	} else {
		r->test = "none";
		r->p = NAN;
	}
	if (t->dir != 0 && r->delta != 0) {
		/* how far, in the threshold's unit; a baseline of 0 makes
		 * any change infinitely many percent */
		double mag = !t->pct ? fabs(r->delta)
			   : r->baseline != 0 ? fabs(r->delta_pct) : INFINITY;
		/* beyond it by more than the rounding of the CSVs' 9-10
		 * digits: 1 -> 1.05 is +5%, not over a +5% threshold */
		bool beyond = mag > t->value * (1.0 + 1e-9) &&
			      fabs(r->delta) > t->min_abs * (1.0 + 1e-9);

		worse = beyond && (double)t->dir * r->delta > 0;
		better = beyond && (double)t->dir * r->delta < 0;
	}
	if (!worse && !better)
		r->verdict = CMP_OK;
	else if (!isnan(r->p) && !(r->p < alpha))
		r->verdict = CMP_NOT_SIGNIFICANT;
	else
		r->verdict = worse ? CMP_REGRESSION : CMP_IMPROVEMENT;
}

static void
put_num(FILE *f, double x)
{
	if (isnan(x))
		return;		/* an empty field */
	if (isinf(x))
		fputs(x > 0 ? "inf" : "-inf", f);
	else
		fprintf(f, "%.10g", x);
}

int
cmp_write_csv(FILE *f, const struct cmp_row *r, size_t n)
{
	fputs("config,metric,baseline,candidate,delta,delta_pct,threshold,"
	      "test,p_value,verdict,n_baseline,n_candidate\n", f);
	for (size_t i = 0; i < n; i++) {
		rpt_csv_field(f, r[i].config);
		fputc(',', f);
		rpt_csv_field(f, r[i].metric);
		fputc(',', f);
		put_num(f, r[i].baseline);
		fputc(',', f);
		put_num(f, r[i].candidate);
		fputc(',', f);
		put_num(f, r[i].delta);
		fputc(',', f);
		if (!isnan(r[i].delta_pct))
			fprintf(f, "%.4f", r[i].delta_pct);
		fprintf(f, ",%s,%s,", r[i].threshold, r[i].test);
		if (!isnan(r[i].p))
			fprintf(f, "%.6g", r[i].p);
		fprintf(f, ",%s,%zu,%zu\n", cmp_verdict_name(r[i].verdict),
			r[i].nb, r[i].nc);
	}
	return ferror(f) ? -1 : 0;
}

void
cmp_print_table(FILE *f, const struct cmp_row *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char pct[32], p[32];

		if (i == 0 || strcmp(r[i].config, r[i - 1].config) != 0) {
			if (r[i].config[0] != '\0')
				fprintf(f, "\n%s\n", r[i].config);
			else if (i > 0)
				fputc('\n', f);
			fprintf(f, "  %-22s %13s %13s %13s %11s %9s %8s  %s\n",
				"metric", "baseline", "candidate", "delta",
				"delta%", "threshold", "p", "verdict");
		}
		if (isnan(r[i].delta_pct))
			snprintf(pct, sizeof(pct), "%s",
				 r[i].delta > 0 ? "+inf" : "-inf");
		else
			snprintf(pct, sizeof(pct), "%+.2f%%", r[i].delta_pct);
		if (isnan(r[i].p))
			snprintf(p, sizeof(p), "-");
		else
			snprintf(p, sizeof(p), "%.4f", r[i].p);
		fprintf(f, "  %-22s %13.6g %13.6g %+13.6g %11s %9s %8s  %s%s\n",
			r[i].metric, r[i].baseline, r[i].candidate,
			r[i].delta, pct, r[i].threshold, p,
			cmp_verdict_name(r[i].verdict),
			r[i].verdict == CMP_REGRESSION ? "  <<" : "");
	}
}

/* ---- sides --------------------------------------------------------------- */

struct ref {
	size_t tab, row;
};

struct group {
	char *label;
	struct ref *r;
	size_t n, cap;
};

struct cmp_side {
	struct csv_table *tab;
	char **path;		/* tab[i]'s file, for messages */
	size_t ntab, captab;
	struct group *g;
	size_t ng, capg;
	char keys[1024];
	const char *kind;
};

cmp_side *
cmp_side_new(void)
{
	cmp_side *s = calloc(1, sizeof(*s));

	if (s != NULL)
		s->kind = "runs";
	return s;
}

void
cmp_side_free(cmp_side *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->ntab; i++) {
		csv_table_release(&s->tab[i]);
		free(s->path[i]);
	}
	for (size_t i = 0; i < s->ng; i++) {
		free(s->g[i].label);
		free(s->g[i].r);
	}
	free(s->tab);
	free(s->path);
	free(s->g);
	free(s);
}

static struct csv_table *
add_table(cmp_side *s)
{
	if (s->ntab == s->captab) {
		size_t cap = s->captab ? s->captab * 2 : 8;
		struct csv_table *p = realloc(s->tab, cap * sizeof(*p));
		char **q;

		if (p == NULL)
			return NULL;
		s->tab = p;
		q = realloc(s->path, cap * sizeof(*q));
		if (q == NULL)
			return NULL;
		s->path = q;
		s->captab = cap;
	}
	memset(&s->tab[s->ntab], 0, sizeof(s->tab[0]));
	return &s->tab[s->ntab];
}

static kv_err
add_ref(cmp_side *s, const char *label, size_t tab, size_t row)
{
	struct group *g = NULL;

	for (size_t i = 0; i < s->ng && g == NULL; i++)
		if (strcmp(s->g[i].label, label) == 0)
			g = &s->g[i];
	if (g == NULL) {
		if (s->ng == s->capg) {
			size_t cap = s->capg ? s->capg * 2 : 8;
			struct group *p = realloc(s->g, cap * sizeof(*p));

			if (p == NULL)
				return KV_ENOMEM;
			s->g = p;
			s->capg = cap;
		}
		g = &s->g[s->ng];
		memset(g, 0, sizeof(*g));
		if ((g->label = strdup(label)) == NULL)
			return KV_ENOMEM;
		s->ng++;
	}
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 4;
		struct ref *p = realloc(g->r, cap * sizeof(*p));

		if (p == NULL)
			return KV_ENOMEM;
		g->r = p;
		g->cap = cap;
	}
	g->r[g->n].tab = tab;
	g->r[g->n].row = row;
	g->n++;
	return KV_OK;
}

static bool
is_seed_key(const char *k)
{
	return strcmp(k, "seed") == 0 || strcmp(k, "workload.seed") == 0;
}

/* Group a sweep.csv's rows by the swept keys other than the seed: the
 * columns between point_index and requests (docs/sweep.md). */
static kv_err
group_sweep(cmp_side *s, const char *path, char *err, size_t errlen)
{
	struct csv_table *t = &s->tab[s->ntab - 1];
	long pi = csv_table_col(t, "point_index");
	long rq = csv_table_col(t, "requests");
	char *label;
	size_t cap = 16, kl = 0;
	kv_err e = KV_OK;

	if (pi < 0 || rq <= pi) {
		snprintf(err, errlen, "%s: not a sweep.csv (no point_index "
			 "... requests columns)", path);
		return KV_EINVAL;
	}
	s->kind = "sweep";
	s->keys[0] = '\0';
	for (long c = pi + 1; c < rq; c++)
		if (!is_seed_key(t->head[c])) {
			kl += (size_t)snprintf(s->keys + kl,
					       sizeof(s->keys) - kl, "%s%s",
					       kl ? "," : "", t->head[c]);
			if (kl >= sizeof(s->keys))
				kl = sizeof(s->keys) - 1;
		}
	for (size_t r = 0; r < t->nrow; r++)
		for (long c = pi + 1; c < rq; c++)
			cap += strlen(t->head[c]) + strlen(t->row[r][c]) + 2;
	if ((label = malloc(cap)) == NULL)
		return KV_ENOMEM;
	for (size_t r = 0; r < t->nrow && e == KV_OK; r++) {
		size_t n = 0;

		label[0] = '\0';
		for (long c = pi + 1; c < rq; c++)
			if (!is_seed_key(t->head[c]))
				n += (size_t)snprintf(label + n, cap - n,
						      "%s%s=%s", n ? " " : "",
						      t->head[c], t->row[r][c]);
		e = add_ref(s, label, s->ntab - 1, r);
	}
	free(label);
	return e;
}

static kv_err
load_table(cmp_side *s, const char *file, char *err, size_t errlen)
{
	struct csv_table *t = add_table(s);
	kv_err e;

	if (t == NULL)
		return KV_ENOMEM;
	if ((e = sweep_csv_read(t, file, err, errlen)) != KV_OK)
		return e;
	if ((s->path[s->ntab] = strdup(file)) == NULL) {
		csv_table_release(t);
		return KV_ENOMEM;
	}
	s->ntab++;
	if (t->nrow == 0) {
		snprintf(err, errlen, "%s: no rows", file);
		return KV_EINVAL;
	}
	return KV_OK;
}

kv_err
cmp_side_load(cmp_side *s, const char *path, char *err, size_t errlen)
{
	char file[4200];
	struct stat sb;
	kv_err e;

	if (stat(path, &sb) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return KV_ENOENT;
	}
	if (S_ISDIR(sb.st_mode)) {
		snprintf(file, sizeof(file), "%s/sweep.csv", path);
		if (stat(file, &sb) != 0)
			snprintf(file, sizeof(file), "%s/summary.csv", path);
		if (stat(file, &sb) != 0) {
			snprintf(err, errlen, "%s: no sweep.csv or summary.csv "
				 "(not a kvsim run or sweep directory)", path);
			return KV_ENOENT;
		}
	} else {
		snprintf(file, sizeof(file), "%s", path);
	}
	if ((e = load_table(s, file, err, errlen)) != KV_OK)
		return e;
	if (csv_table_col(&s->tab[s->ntab - 1], "point_index") >= 0)
		return group_sweep(s, file, err, errlen);
	s->kind = "run";
	for (size_t r = 0; r < s->tab[s->ntab - 1].nrow; r++)
		if ((e = add_ref(s, "", s->ntab - 1, r)) != KV_OK)
			return e;
	return KV_OK;
}

kv_err
cmp_side_add_run(cmp_side *s, const char *config, const char *rundir,
		 char *err, size_t errlen)
{
	char file[4200];
	kv_err e;

	snprintf(file, sizeof(file), "%s/summary.csv", rundir);
	if ((e = load_table(s, file, err, errlen)) != KV_OK)
		return e;
	s->kind = "runs";
	return add_ref(s, config, s->ntab - 1, 0);
}

const char *
cmp_side_kind(const cmp_side *s)
{
	return s->kind;
}

const char *
cmp_side_keys(const cmp_side *s)
{
	return s->keys;
}

size_t
cmp_side_ngroups(const cmp_side *s)
{
	return s->ng;
}

const char *
cmp_side_group(const cmp_side *s, size_t g)
{
	return g < s->ng ? s->g[g].label : NULL;
}

size_t
cmp_side_group_size(const cmp_side *s, size_t g)
{
	return g < s->ng ? s->g[g].n : 0;
}

bool
cmp_side_has(const cmp_side *s, const char *metric)
{
	for (size_t i = 0; i < s->ntab; i++)
		if (csv_table_col(&s->tab[i], metric) < 0)
			return false;
	return s->ntab > 0;
}

kv_err
cmp_side_values(const cmp_side *s, size_t g, const char *metric,
		double *out, size_t *n, char *err, size_t errlen)
{
	size_t k = 0;

	*n = 0;
	if (g >= s->ng)
		return KV_OK;
	for (size_t i = 0; i < s->g[g].n; i++) {
		const struct csv_table *t = &s->tab[s->g[g].r[i].tab];
		long c = csv_table_col(t, metric);
		const char *v;
		char *end;
		double x;

		if (c < 0)
			continue;
		v = t->row[s->g[g].r[i].row][c];
		if (v[0] == '\0')
			continue;	/* no value (tpot of one-token outputs) */
		errno = 0;
		x = strtod(v, &end);
		if (*end != '\0' || errno != 0 || isnan(x) || isinf(x)) {
			snprintf(err, errlen, "%s:%lu: %s: not a number: '%s'",
				 s->path[s->g[g].r[i].tab],
				 t->line[s->g[g].r[i].row], metric, v);
			return KV_EINVAL;
		}
		out[k++] = x;
	}
	*n = k;
	return KV_OK;
}
