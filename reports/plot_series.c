/*
 * plot_series.c -- aggregated series: points grouped by label and x, their
 * mean, min and max written as one data file, and the plot of them with a
 * log y axis (the capacity knee, a sweep's p99 TTFT against its rate).
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
plot__series_add(struct series *s, size_t series, double x, double y, int ok)
{
	if (s->npt == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct pt *p = realloc(s->pt, cap * sizeof(*p));
		if (!p)
			return false;
		s->pt = p;
		s->cap = cap;
	}
	s->pt[s->npt++] = (struct pt){ series, x, y, ok };
	return true;
}

/*
 * Write the aggregate as CSV (series,label,XCOL,YCOL_mean,YCOL_min,
 * YCOL_max,points[,okcol]) and append one plot clause per series to cmd.
 * Returns the number of series with a point.
 */
static size_t
series_write(struct series *s, struct buf *d, struct buf *cmd,
	     const char *file, const char *xcol, const char *ycol,
	     const char *okcol)
{
	size_t nser = 0;

	qsort(s->pt, s->npt, sizeof(*s->pt), plot__cmp_pt);
	plot__buf_printf(d, "series,label,%s,%s_mean,%s_min,%s_max,points",
			 xcol, ycol, ycol, ycol);
	if (okcol)
		plot__buf_printf(d, ",%s", okcol);
	plot__buf_puts(d, "\n");
	for (size_t i = 0; i < s->npt;) {
		size_t j = i, ok = 0, ny = 0;
		double sum = 0, lo = NAN, hi = NAN;
		while (j < s->npt && s->pt[j].series == s->pt[i].series &&
		       s->pt[j].x == s->pt[i].x) {
			if (!isnan(s->pt[j].y)) {
				sum += s->pt[j].y;
				lo = fmin(lo, s->pt[j].y);
				hi = fmax(hi, s->pt[j].y);
				ny++;
			}
			ok += s->pt[j].ok > 0;
			j++;
		}
		plot__buf_printf(d, "%zu,", s->pt[i].series + 1);
		plot__dat_label(d, s->label[s->pt[i].series]);
		if (ny > 0)
			plot__buf_printf(d, ",%.9g,%.9g,%.9g,%.9g,%zu",
					 s->pt[i].x, sum / (double)ny, lo, hi,
					 j - i);
		else	/* gnuplot skips NaN */
			plot__buf_printf(d, ",%.9g,NaN,NaN,NaN,%zu", s->pt[i].x,
					 j - i);
		if (okcol)
			plot__buf_printf(d, ",%.6f",
					 (double)ok / (double)(j - i));
		plot__buf_puts(d, "\n");
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

/* A plot of aggregated series, log y: the capacity knee, a sweep. */
int
plot__series(struct ctx *c, size_t i, struct series *s, const char *name,
	     const char *heading, const char *xcol, const char *xlabel,
	     const char *okcol, const char *extra, double extra_y)
{
	struct buf d = { 0 }, cmd = { 0 }, gp = { 0 };
	char file[96];
	struct plot *p;
	int rc;
	double x0, x1, y0, y1;

	if (!(p = plot__add_run_plot(c, i, name, heading)))
		return plot__oom(c);
	snprintf(file, sizeof(file), "%s.dat", p->name);
	if (!series_write(s, &d, &cmd, file, xcol, "ttft_p99_s", okcol)) {
		c->nplots--;
		rc = PLOT_OK;
		goto out;
	}
	if (extra)
		plot__buf_printf(&cmd, ", \\\n\t\t%s", extra);
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
	if (isnan(y0)) {
		y0 = extra_y > 0 ? extra_y : 1;
		y1 = y0;
	}
	if (extra_y > 0) {
		y0 = fmin(y0, extra_y);
		y1 = fmax(y1, extra_y);
	}
	double pad = x1 > x0 ? 0.05 * (x1 - x0) : x0 != 0 ? 0.1 * fabs(x0) : 1;
	plot__gp_begin(c, &gp, p);
	plot__buf_printf(&gp, "set logscale y\nset xlabel '%s'\n"
			 "set ylabel 'p99 TTFT (s)'\nset key top left\n"
		   "set xrange [%.9g:%.9g]\nset yrange [%.9g:%.9g]\n", xlabel,
		   x0 - pad, x1 + pad, y0 / 1.5, y1 * 1.5);
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
