/*
 * plot_series.c -- aggregated series: points grouped by label and x, their
 * mean, min and max written as one data file, and the plot of them with a
 * log y axis (the capacity knee, a sweep's p99 TTFT against its rate).
 * A log axis gets explicit tics: gnuplot's own put one label on a range
 * within a decade.
 */
#include "config.h"

#include "reports/plot_int.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
plot__cmp_pt(const void *a, const void *b)
{
	const struct pt *p = a, *q = b;
	if (p->series != q->series)
		return p->series < q->series ? -1 : 1;
	return (p->x > q->x) - (p->x < q->x);
}

void
plot__series_release(struct series *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->label[i]);
	free(s->label);
	free(s->pt);
	memset(s, 0, sizeof(*s));
}

/* The series number of a label, added when new; SIZE_MAX on no memory. */
size_t
plot__series_of(struct series *s, const char *label)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->label[i], label) == 0)
			return i;
	char **l = realloc(s->label, (s->n + 1) * sizeof(*l));
	if (!l)
		return SIZE_MAX;
	s->label = l;
	if (!(l[s->n] = strdup(label)))
		return SIZE_MAX;
	return s->n++;
}

bool
plot__series_add(struct series *s, size_t series, double x, double y, int ok,
		 bool stopped)
{
	if (s->npt == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct pt *p = realloc(s->pt, cap * sizeof(*p));
		if (!p)
			return false;
		s->pt = p;
		s->cap = cap;
	}
	s->pt[s->npt++] = (struct pt){ series, x, y, ok, stopped };
	return true;
}

/* Whether a tic at v falls in [lo, hi], beyond rounding. */
static bool
in_range(double v, double lo, double hi)
{
	return v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9);
}

/*
 * `set Ytics (...)` for a log axis over [lo, hi]: the decades, or when
 * fewer than four of them fall in the range, 1-2-5 of each decade, else
 * 1 to 9 of each; at most 40 tics.
 */
void
plot__log_tics(struct buf *b, char axis, double lo, double hi)
{
	static const double m[3][9] = {
		{ 1 }, { 1, 2, 5 }, { 1, 2, 3, 4, 5, 6, 7, 8, 9 },
	};
	static const int nm[3] = { 1, 3, 9 };

	if (!(lo > 0) || !(hi > lo) || !isfinite(hi))
		return;
	int k0 = (int)floor(log10(lo)), k1 = (int)ceil(log10(hi));
	for (int set = 0; set < 3; set++) {
		size_t n = 0;
		for (int k = k0; k <= k1; k++)
			for (int j = 0; j < nm[set]; j++) {
				double v = m[set][j] * pow(10, k);
				n += in_range(v, lo, hi);
			}
		if ((n < 4 && set < 2) || n > 40)
			continue;
		plot__buf_printf(b, "set %ctics (", axis);
		n = 0;
		for (int k = k0; k <= k1; k++)
			for (int j = 0; j < nm[set]; j++) {
				double v = m[set][j] * pow(10, k);
				if (in_range(v, lo, hi))
					plot__buf_printf(b, "%s%.6g", n++ ?
							 ", " : "", v);
			}
		plot__buf_puts(b, ")\n");
		return;
	}
}

/* One aggregate row: the points [i, j) of one series and x. */
static void
series_row(const struct series *s, size_t i, size_t j, struct buf *d,
	   bool knee)
{
	size_t ok = 0, ny = 0, stopped = 0;
	double sum = 0, lo = NAN, hi = NAN;

	for (size_t k = i; k < j; k++) {
		if (!isnan(s->pt[k].y)) {
			sum += s->pt[k].y;
			lo = fmin(lo, s->pt[k].y);
			hi = fmax(hi, s->pt[k].y);
			ny++;
		}
		ok += s->pt[k].ok > 0;
		stopped += s->pt[k].stopped;
	}
	plot__buf_printf(d, "%zu,", s->pt[i].series + 1);
	plot__dat_label(d, s->label[s->pt[i].series]);
	if (ny > 0)
		plot__buf_printf(d, ",%.9g,%.9g,%.9g,%.9g,%zu", s->pt[i].x,
				 sum / (double)ny, lo, hi, j - i);
	else	/* gnuplot skips NaN */
		plot__buf_printf(d, ",%.9g,NaN,NaN,NaN,%zu", s->pt[i].x, j - i);
	if (knee)
		plot__buf_printf(d, ",%.6f,%zu,%zu", (double)ok /
				 (double)(j - i), j - i - ny, stopped);
	plot__buf_puts(d, "\n");
}

/*
 * Write the aggregate as CSV (series,label,XCOL,YCOL_mean,YCOL_min,
 * YCOL_max,points[,meets_slo_fraction,no_value,stopped]) and append one
 * plot clause per series to cmd.  Returns the number of series with a
 * point.
 */
static size_t
series_write(struct series *s, struct buf *d, struct buf *cmd,
	     const char *file, const struct series_look *lk)
{
	const char *xcol = lk->xcol, *ycol = lk->ycol;
	size_t nser = 0;

	qsort(s->pt, s->npt, sizeof(*s->pt), plot__cmp_pt);
	plot__buf_printf(d, "series,label,%s,%s_mean,%s_min,%s_max,points",
			 xcol, ycol, ycol, ycol);
	if (lk->knee)
		plot__buf_puts(d, ",meets_slo_fraction,no_value,stopped");
	plot__buf_puts(d, "\n");
	for (size_t i = 0; i < s->npt;) {
		size_t j = i;
		while (j < s->npt && s->pt[j].series == s->pt[i].series &&
		       s->pt[j].x == s->pt[i].x)
			j++;
		series_row(s, i, j, d, lk->knee);
		i = j;
	}
	for (size_t k = 0; k < s->n; k++) {
		bool any = false;
		for (size_t i = 0; i < s->npt && !any; i++)
			any = s->pt[i].series == k;
		if (!any)
			continue;
		if (cmd->n)
			plot__buf_puts(cmd, ", \\\n\t\t");
		plot__buf_printf(cmd, "'%s' using (column('series') == %zu ? "
				 "column('%s') : NaN):(column('%s_mean')):"
				 "(column('%s_min')):(column('%s_max')) with "
			   "yerrorlines lw 2 title ", file, k + 1, xcol, ycol,
			   ycol, ycol);
		plot__gp_str(cmd, s->label[k]);
		nser++;
	}
	return nser;
}

/* The knee's marks, on every series: the probes some seed of which missed
 * the SLO (circled), and those some seed of which has no value (stopped
 * early, or saturated) at `top`, above the curves. */
static void
knee_marks(struct buf *cmd, const char *file, const char *ycol, double top)
{
	plot__buf_printf(cmd, ", \\\n\t\t'%s' using (column('meets_slo_"
			 "fraction') < 1 ? column('qps') : NaN):(column('%s_"
			 "mean')) with points pt 6 ps 2 lc rgb '#c00000' "
			 "title 'SLO missed (one seed or more)'", file, ycol);
	plot__buf_printf(cmd, ", \\\n\t\t'%s' using (column('no_value') > 0 "
			 "? column('qps') : NaN):(%.9g) with points pt 2 ps 2 "
			 "lc rgb '#c00000' title 'stopped early or saturated "
			 "(SLO missed, no value)'", file, top);
}

/* A plot of aggregated series, log y: the capacity knee, a sweep. */
int
plot__series(struct ctx *c, size_t i, struct series *s,
	     const struct series_look *lk)
{
	struct buf d = { 0 }, cmd = { 0 }, gp = { 0 };
	char file[96];
	struct plot *p;
	int rc;
	double x0, x1, y0, y1;

	if (!(p = plot__add_run_plot(c, i, lk->name, lk->heading)))
		return plot__oom(c);
	snprintf(file, sizeof(file), "%s.dat", p->name);
	if (!series_write(s, &d, &cmd, file, lk)) {
		c->nplots--;
		rc = PLOT_OK;
		goto out;
	}
	if ((rc = plot__write_file(c, file, &d)) != PLOT_OK)
		goto out;
	plot__file(p, file);
	/* explicit ranges: gnuplot warns about a range of one value (fmin
	 * and fmax pass over the NaN of runs without a value) */
	x0 = x1 = s->pt[0].x;
	y0 = y1 = s->pt[0].y;
	for (size_t k = 1; k < s->npt; k++) {
		x0 = fmin(x0, s->pt[k].x);
		x1 = fmax(x1, s->pt[k].x);
		y0 = fmin(y0, s->pt[k].y);
		y1 = fmax(y1, s->pt[k].y);
	}
	x0 = fmin(x0, lk->x_lo);	/* fmin passes over NaN */
	x1 = fmax(x1, lk->x_hi);
	if (isnan(y0)) {
		y0 = lk->extra_y > 0 ? lk->extra_y : 1;
		y1 = y0;
	}
	if (lk->extra_y > 0) {
		y0 = fmin(y0, lk->extra_y);
		y1 = fmax(y1, lk->extra_y);
	}
	y0 /= 1.5;
	y1 *= lk->knee ? 2.0 : 1.5;	/* room for the marks of no value */
	if (lk->knee)
		knee_marks(&cmd, file, lk->ycol, y1 / 1.3);
	if (lk->extra)
		plot__buf_printf(&cmd, ", \\\n\t\t%s", lk->extra);
	double pad = x1 > x0 ? 0.05 * (x1 - x0) : x0 != 0 ? 0.1 * fabs(x0) : 1;
	plot__gp_begin(c, &gp, p);
	plot__buf_printf(&gp, "set logscale y\nset xlabel '%s'\n"
			 "set ylabel ", lk->xlabel);
	plot__gp_str(&gp, lk->ylabel);
	/* the key below the plot, where it covers no curve */
	plot__buf_printf(&gp, "\nset key below\n"
			 "set xrange [%.9g:%.9g]\nset yrange [%.9g:%.9g]\n",
			 x0 - pad, x1 + pad, y0, y1);
	plot__log_tics(&gp, 'y', y0, y1);
	if (lk->pre)
		plot__buf_puts(&gp, lk->pre);
	plot__gp_end(&gp, p, cmd.oom ? "" : cmd.p);
	if (cmd.oom)
		gp.oom = true;
	rc = plot__finish_plot(c, p, &gp);
out:
	plot__buf_release(&d);
	plot__buf_release(&cmd);
	plot__buf_release(&gp);
	return rc;
}
