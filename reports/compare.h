/*
 * compare.h -- regression verdicts between two sets of results
 * (`kvsim compare`, docs/compare.md).
 *
 * A side is one or more configurations ("groups"), each with one value of
 * every summary metric per seed: a run directory is one group of one
 * seed; a sweep directory's rows are grouped by the swept keys other than
 * the seed (`seed`, `workload.seed`); suite mode adds runs one by one.
 *
 * A verdict (cmp_judge): the candidate's mean is compared with the
 * baseline's under a threshold with a direction (`+5%`: more than 5 %
 * higher is worse; `-2%`: more than 2 % lower is worse; `+0`: any increase
 * is worse).  A difference beyond the threshold in the worse direction is
 * a regression, in the better direction an improvement -- unless both
 * sides have two or more seeds and Welch's t-test (cmp_welch) cannot tell
 * that the difference exceeds the threshold at level `alpha`: then it is
 * not-significant.  Testing the excess over the threshold, not the bare
 * difference, keeps seed noise from failing a CI job on one of the fifteen
 * metrics by chance.  With one seed on a side there is no test and the
 * threshold alone decides.
 *
 * Nothing here prints except cmp_print_table; errors are kv_err codes with
 * a message in the caller's buffer.
 */
#ifndef REPORTS_COMPARE_H
#define REPORTS_COMPARE_H

#include "core/kvcore.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* ---- thresholds ---------------------------------------------------------- */

struct cmp_threshold {
	char metric[96];	/* a summary.csv column */
	int dir;		/* +1 higher is worse, -1 lower is worse, 0 none */
	bool pct;		/* value is a percentage of the baseline */
	double value;		/* >= 0 */
	double min_abs;		/* with pct: the change must also exceed
				 * this, in the metric's unit (>= 0) */
	char text[32];		/* "+5%", "-2%", "+10%+5", "+0" or "none" */
};

/*
 * "METRIC:+X%", "METRIC:-X%", "METRIC:+X", "METRIC:-X", "METRIC:+X%+Y"
 * (more than X % and more than Y higher: a percentage with a floor in the
 * metric's unit, which decides from a baseline of 0), "METRIC:-X%-Y" or
 * "METRIC:off";
 * METRIC is a summary column (ttft_p99_s) or NAME:QUANTILE (ttft_s:p99,
 * read as ttft_p99_s).  KV_EINVAL with err set.
 */
kv_err cmp_threshold_parse(const char *spec, struct cmp_threshold *t,
			   char *err, size_t errlen);

/* The default thresholds, one per reported metric, in report order. */
size_t cmp_default_thresholds(const struct cmp_threshold **t);

/* ---- verdicts ------------------------------------------------------------ */

enum cmp_verdict {
	CMP_OK = 0,
	CMP_REGRESSION,
	CMP_IMPROVEMENT,
	CMP_NOT_SIGNIFICANT
};

const char *cmp_verdict_name(enum cmp_verdict v);

struct cmp_row {
	const char *config;	/* borrowed: the group's label ("" one) */
	char metric[96];
	double baseline, candidate;	/* means over the seeds */
	double delta;		/* candidate - baseline */
	double delta_pct;	/* 100 delta / |baseline|; NAN: baseline 0 */
	size_t nb, nc;		/* seeds on each side */
	char threshold[32];
	const char *test;	/* "welch-t" or "none" */
	double p;		/* cmp_welch's p-value; NAN without a test */
	enum cmp_verdict verdict;
};

/*
 * Welch's t-test (unequal variances) of whether the means of a and b
 * differ by more than `margin` >= 0: t = (|mean b - mean a| - margin) /
 * sqrt(var a / na + var b / nb) with Welch-Satterthwaite degrees of
 * freedom; returns min(1, 2 Q(t)), Q the upper tail of Student's t
 * (gsl_cdf_tdist_Q).  With margin 0 this is the usual two-sided p-value
 * of equal means.  Needs na, nb >= 2.  Two constant samples give 0 when
 * the difference exceeds the margin and 1 otherwise; NAN (no test) when
 * the values are so large that their variance overflows.  t and df may
 * be NULL.
 */
double cmp_welch(const double *a, size_t na, const double *b, size_t nb,
		 double margin, double *t, double *df);

/* Judge one metric: b[nb] baseline and c[nc] candidate values (nb, nc >=
 * 1), under threshold t (dir 0: the verdict is always ok). */
void cmp_judge(const double *b, size_t nb, const double *c, size_t nc,
	       const struct cmp_threshold *t, double alpha, struct cmp_row *r);

/* compare.csv: config, metric, baseline, candidate, delta, delta_pct,
 * threshold, test, p_value, verdict, n_baseline, n_candidate.  0 or -1 on
 * a write error. */
int cmp_write_csv(FILE *f, const struct cmp_row *r, size_t n);

/* The readable table, one block per configuration. */
void cmp_print_table(FILE *f, const struct cmp_row *r, size_t n);

/* ---- the two sides ------------------------------------------------------- */

typedef struct cmp_side cmp_side;

cmp_side *cmp_side_new(void);
void cmp_side_free(cmp_side *s);

/*
 * Load a result directory (or the CSV file itself): DIR/sweep.csv when
 * there is one, else DIR/summary.csv.  KV_OK; KV_ENOENT neither exists;
 * KV_EINVAL malformed (err); KV_ENOMEM.
 */
kv_err cmp_side_load(cmp_side *s, const char *path, char *err,
		     size_t errlen);

/* Add a run directory's summary row to the group `config` (created on
 * first use, groups keep that order). */
kv_err cmp_side_add_run(cmp_side *s, const char *config, const char *rundir,
			char *err, size_t errlen);

/* "run", "sweep" or "runs" (added one by one). */
const char *cmp_side_kind(const cmp_side *s);
/* The swept keys that define a group, comma-separated ("" none). */
const char *cmp_side_keys(const cmp_side *s);
size_t cmp_side_ngroups(const cmp_side *s);
const char *cmp_side_group(const cmp_side *s, size_t g);
size_t cmp_side_group_size(const cmp_side *s, size_t g);

/* Every table of the side has a column named `metric`. */
bool cmp_side_has(const cmp_side *s, const char *metric);

/*
 * The numeric values of `metric` in group g, one a seed (empty fields are
 * skipped), into out[] (room for cmp_side_group_size values), how many in
 * *n.  KV_EINVAL with FILE:LINE in err for a field that is not a number.
 */
kv_err cmp_side_values(const cmp_side *s, size_t g, const char *metric,
		       double *out, size_t *n, char *err, size_t errlen);

#endif
