/*
 * calfit.c -- the copy-cost fit and the CSV reader (calfit.h).
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

static int
csv_line(struct calfit_csv *c)
{
	size_t len = 0;
	int ch;

	while ((ch = getc(c->f)) != EOF && ch != '\n') {
		if (len + 2 > c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 256;
			char *b = realloc(c->buf, cap);

			if (b == NULL) {
				snprintf(c->err, sizeof(c->err), "%s: out of "
					 "memory", c->path);
				return -1;
			}
			c->buf = b;
			c->cap = cap;
		}
		c->buf[len++] = (char)ch;
	}
	if (ch == EOF && len == 0)
		return 0;
	if (len > 0 && c->buf[len - 1] == '\r')
		len--;
	c->buf[len] = '\0';
	c->line++;
	return 1;
}

/* Split buf at commas into c->field. */
static int
csv_split(struct calfit_csv *c)
{
	size_t n = 1, i = 0;
	char *p;

	for (p = c->buf; *p; p++)
		n += *p == ',';
	free(c->field);
	free(c->col);
	c->field = malloc(n * sizeof(*c->field));
	c->col = malloc(n * sizeof(*c->col));
	if (c->field == NULL || c->col == NULL) {
		snprintf(c->err, sizeof(c->err), "%s: out of memory", c->path);
		return -1;
	}
	c->field[0] = c->buf;
	c->col[0] = 1;
	for (p = c->buf; *p; p++)
		if (*p == ',') {
			*p = '\0';
			c->field[++i] = p + 1;
			c->col[i] = (unsigned long)(p + 1 - c->buf) + 1;
		}
	c->nfield = n;
	return 0;
}

int
calfit_csv_open(struct calfit_csv *c, const char *path)
{
	int rc;

	memset(c, 0, sizeof(*c));
	c->path = path;
	c->f = fopen(path, "r");
	if (c->f == NULL) {
		snprintf(c->err, sizeof(c->err), "%s: %s", path,
			 strerror(errno));
		return -1;
	}
	if ((rc = csv_line(c)) <= 0) {
		if (rc == 0)
			snprintf(c->err, sizeof(c->err), "%s:1:1: empty file, "
				 "expected a header row", path);
		return -1;
	}
	if (csv_split(c) != 0)
		return -1;
	c->nhead = c->nfield;
	c->head = malloc(c->nhead * sizeof(*c->head));
	if (c->head == NULL) {
		snprintf(c->err, sizeof(c->err), "%s: out of memory", path);
		return -1;
	}
	for (size_t i = 0; i < c->nhead; i++) {
		c->head[i] = strdup(c->field[i]);
		if (c->head[i] == NULL) {
			c->nhead = i;
			snprintf(c->err, sizeof(c->err), "%s: out of memory",
				 path);
			return -1;
		}
	}
	return 0;
}

int
calfit_csv_next(struct calfit_csv *c)
{
	int rc;

	do {
		if ((rc = csv_line(c)) <= 0)
			return rc;
	} while (c->buf[0] == '\0');
	if (csv_split(c) != 0)
		return -1;
	if (c->nfield != c->nhead) {
		snprintf(c->err, sizeof(c->err), "%s:%lu:1: %zu fields, the "
			 "header has %zu", c->path, c->line, c->nfield,
			 c->nhead);
		return -1;
	}
	return 1;
}

int
calfit_csv_col(struct calfit_csv *c, const char *name)
{
	for (size_t i = 0; i < c->nhead; i++)
		if (strcmp(c->head[i], name) == 0)
			return (int)i;
	snprintf(c->err, sizeof(c->err), "%s:1:1: no column '%s' in the "
		 "header", c->path, name);
	return -1;
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
	if (c->f != NULL)
		fclose(c->f);
	for (size_t i = 0; i < c->nhead; i++)
		free(c->head[i]);
	free(c->head);
	free(c->buf);
	free(c->field);
	free(c->col);
	memset(c, 0, sizeof(*c));
}
