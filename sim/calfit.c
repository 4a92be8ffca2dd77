/*
 * calfit.c -- the copy-cost fit, and the device check's CSV read through
 * util/csv.h with calibrate's own messages (calfit.h).
 */
#include "config.h"

#include "sim/calfit.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>

double
calfit_predict(const struct calfit_result *r, double calls, double chunks,
	       double bytes)
{
	return r->alpha_ns * calls + r->beta_ns * chunks +
	       r->ns_per_byte * bytes;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double
calfit_quantile(double *x, size_t n, double q)
{
	double pos, fr;
	size_t i;

	if (n == 0)
		return NAN;
	qsort(x, n, sizeof(*x), cmp_double);
	pos = q * (double)(n - 1);
	i = (size_t)pos;
	fr = pos - (double)i;
	return i + 1 < n ? x[i] + fr * (x[i + 1] - x[i]) : x[i];
}

/*
 * Weighted fit over the terms in mask (bit 0 alpha, 1 beta, 2 1/B).
 * 0 with c[] (0 for terms not in the mask) and chisq; -1 when GSL fails.
 */
static int
fit_mask(const struct calfit_obs *o, size_t n, unsigned mask, double c[3],
	 double *chisq)
{
	size_t p = 0, j;
	gsl_matrix *X, *cov;
	gsl_vector *w, *y, *cv;
	gsl_multifit_linear_workspace *ws;
	int rc = -1;

	for (j = 0; j < 3; j++)
		p += (mask >> j) & 1;
	if (p == 0 || n < p)
		return -1;
	X = gsl_matrix_alloc(n, p);
	cov = gsl_matrix_alloc(p, p);
	w = gsl_vector_alloc(n);
	y = gsl_vector_alloc(n);
	cv = gsl_vector_alloc(p);
	ws = gsl_multifit_linear_alloc(n, p);
	if (X == NULL || cov == NULL || w == NULL || y == NULL || cv == NULL ||
	    ws == NULL)
		goto out;
	for (size_t i = 0; i < n; i++) {
		double x[3] = { o[i].calls, o[i].chunks, o[i].bytes };
		size_t k = 0;

		for (j = 0; j < 3; j++)
			if ((mask >> j) & 1)
				gsl_matrix_set(X, i, k++, x[j]);
		gsl_vector_set(y, i, o[i].t_ns);
		gsl_vector_set(w, i, 1.0 / (o[i].t_ns * o[i].t_ns));
	}
	if (gsl_multifit_wlinear(X, w, y, cv, cov, chisq, ws) != GSL_SUCCESS)
		goto out;
	for (j = 0, p = 0; j < 3; j++)
		c[j] = (mask >> j) & 1 ? gsl_vector_get(cv, p++) : 0.0;
	rc = 0;
out:
	gsl_multifit_linear_free(ws);
	gsl_vector_free(cv);
	gsl_vector_free(y);
	gsl_vector_free(w);
	gsl_matrix_free(cov);
	gsl_matrix_free(X);
	return rc;
}

int
calfit_copy(const struct calfit_obs *o, size_t n, struct calfit_result *r,
	    char *why, size_t whylen)
{
	/* the full model first, then the faces of the constraint */
	static const unsigned masks[] = { 7, 6, 5, 3, 4, 2, 1 };
	double best = INFINITY, c[3], chisq, *rel;
	gsl_error_handler_t *old;

	memset(r, 0, sizeof(*r));
	if (n < 2) {
		snprintf(why, whylen, "%zu observations: at least 2 needed", n);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (!(o[i].t_ns > 0) || !isfinite(o[i].t_ns)) {
			snprintf(why, whylen, "observation %zu: time %g is not "
				 "positive", i, o[i].t_ns);
			return -1;
		}
	old = gsl_set_error_handler_off();
	for (size_t m = 0; m < sizeof(masks) / sizeof(masks[0]); m++) {
		if (fit_mask(o, n, masks[m], c, &chisq) != 0)
			continue;
		if (c[0] < 0 || c[1] < 0 || c[2] < 0 || !(chisq < best))
			continue;
		best = chisq;
		r->alpha_ns = c[0];
		r->beta_ns = c[1];
		r->ns_per_byte = c[2];
		for (int j = 0; j < 3; j++)
			r->fixed[j] = !((masks[m] >> j) & 1);
		if (m == 0)
			break;	/* the unconstrained fit is feasible */
	}
	gsl_set_error_handler(old);
	if (best == INFINITY) {
		snprintf(why, whylen, "no non-negative fit of %zu observations",
			 n);
		return -1;
	}
	r->chisq = best;
	r->n = n;
	rel = malloc(n * sizeof(*rel));
	if (rel == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		rel[i] = fabs(calfit_predict(r, o[i].calls, o[i].chunks,
					     o[i].bytes) - o[i].t_ns) /
			 o[i].t_ns;
	r->med_rel = calfit_quantile(rel, n, 0.5);
	r->p90_rel = calfit_quantile(rel, n, 0.9);
	free(rel);
	return 0;
}

/* ---- CSV ----------------------------------------------------------------- */

/* c->err for a reader error, in the wording calibrate has always used. */
static void
csv_fail(struct calfit_csv *c, const struct csv_error *e)
{
	/* nothing could be read at all (a folder): an empty file, as the
	 * line reader this replaced saw it */
	bool unread = e->kind == CSV_EREAD && e->line == 1 && e->col == 1;

	if (e->kind == CSV_EEMPTY || unread)
		snprintf(c->err, sizeof(c->err), "%s:1:1: empty file, "
			 "expected a header row", c->path);
	else if (e->kind == CSV_EWIDTH)
		snprintf(c->err, sizeof(c->err), "%s:%lu:1: %zu fields, the "
			 "header has %zu", c->path, e->record, e->nfield,
			 e->nhead);
	else if (e->kind == CSV_ENOMEM)
		snprintf(c->err, sizeof(c->err), "%s: out of memory", c->path);
	else
		csv_error_format(e, c->path, c->err, sizeof(c->err));
}

int
calfit_csv_open(struct calfit_csv *c, const char *path)
{
	struct csv_error e;

	memset(c, 0, sizeof(*c));
	c->path = path;
	if (csv_open(&c->csv, path, &e) != KV_OK) {
		csv_fail(c, &e);
		return -1;
	}
	c->head = c->csv.head;
	c->nhead = c->csv.nhead;
	c->line = c->csv.head_line;
	return 0;
}

int
calfit_csv_next(struct calfit_csv *c)
{
	struct csv_error e;

	if (csv_next(&c->csv, &e) != KV_OK) {
		csv_fail(c, &e);
		return -1;
	}
	c->field = c->csv.field;
	c->col = c->csv.fcol;
	c->nfield = c->csv.nfield;
	c->line = c->csv.line;
	return c->nfield > 0;
}

int
calfit_csv_col(struct calfit_csv *c, const char *name)
{
	long i = csv_col(&c->csv, name);

	if (i < 0)
		snprintf(c->err, sizeof(c->err), "%s:1:1: no column '%s' in "
			 "the header", c->path, name);
	return (int)i;
}

int
calfit_csv_num(struct calfit_csv *c, int i, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(c->field[i], &end);
	if (errno != 0 || end == c->field[i] || *end != '\0' ||
	    !isfinite(*out)) {
		snprintf(c->err, sizeof(c->err), "%s:%lu:%lu: %s: expected a "
			 "number, got '%s'", c->path, c->line, c->col[i],
			 c->head[i], c->field[i]);
		return -1;
	}
	return 0;
}

void
calfit_csv_close(struct calfit_csv *c)
{
	csv_close(&c->csv);
	memset(c, 0, sizeof(*c));
}
