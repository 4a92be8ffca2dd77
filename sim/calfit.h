/*
 * calfit.h -- fitting the copy-cost terms of the cost model to device
 * measurements (`kvsim calibrate`, docs/cost-model.md §5.2).
 *
 *   T = alpha * calls + beta * chunks + bytes * ns_per_byte
 *
 * is fitted by weighted linear least squares (GSL gsl_multifit_wlinear)
 * with weights 1/T^2, so the fit minimises relative error: a 10 us copy
 * counts as much as a 10 ms one.  The terms are times and must not be
 * negative; when the unconstrained fit gives a negative term the fit is
 * the best one (least weighted chi^2) over the subsets of terms whose fit
 * is non-negative -- the non-negative least-squares optimum, which lies
 * on one of those faces.
 *
 * The CSV is the device check's format (docs/gpu-design.md §6): one header
 * row, comma-separated, read by util/csv.h (RFC 4180, so a field may be
 * quoted).  Errors come as "FILE:LINE:COL: what".
 */
#ifndef SIM_CALFIT_H
#define SIM_CALFIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/csv.h"

struct calfit_obs {
	double calls, chunks, bytes;
	double t_ns;			/* > 0 */
};

struct calfit_result {
	double alpha_ns, beta_ns, ns_per_byte;
	bool fixed[3];			/* held at 0 by the constraint */
	double chisq;			/* weighted, of the chosen fit */
	size_t n;
	double med_rel, p90_rel;	/* in-sample |pred - t| / t */
};

/*
 * Fit.  0, or -1 with a message in why: fewer than 2 observations, a
 * time that is not positive, or no subset with a non-negative fit.
 */
int calfit_copy(const struct calfit_obs *o, size_t n, struct calfit_result *r,
		char *why, size_t whylen);

double calfit_predict(const struct calfit_result *r, double calls,
		      double chunks, double bytes);

/* Quantile q in [0, 1] of x[0..n) (sorted in place; linear interpolation). */
double calfit_quantile(double *x, size_t n, double q);

/* ---- CSV ----------------------------------------------------------------- */

struct calfit_csv {
	const char *path;
	struct csv csv;
	/* views of csv, valid until the next calfit_csv_next() */
	unsigned long line;	/* the current row's line */
	char **field;		/* the current row */
	unsigned long *col;	/* 1-based column of each field */
	size_t nfield;
	char **head;		/* header names */
	size_t nhead;
	char err[512];
};

/* Open and read the header.  0, or -1 with c->err. */
int calfit_csv_open(struct calfit_csv *c, const char *path);
/* Next row: 1, 0 at the end, -1 with c->err (wrong field count). */
int calfit_csv_next(struct calfit_csv *c);
/* Index of a header column, or -1 (c->err names the missing column). */
int calfit_csv_col(struct calfit_csv *c, const char *name);
/* Field i of the row as a number; -1 with c->err at its position. */
int calfit_csv_num(struct calfit_csv *c, int i, double *out);
void calfit_csv_close(struct calfit_csv *c);

#endif
