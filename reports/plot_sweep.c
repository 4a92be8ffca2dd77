/*
 * plot_sweep.c -- the sweep plots (p99 TTFT against the swept rate, or
 * bars per configuration when the rate does not vary) and the compare
 * plot (candidate against baseline, in percent, coloured by verdict).
 */
#include "config.h"

#include "reports/plot_int.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Columns a sweep may vary its rate by, in order of preference. */
static const char *const rate_cols[] = {
	"workload.target_rate", "target_rate", "qps", "rate",
	"workload.rate", "request_rate", "arrival_rate",
};

/* The rate column of a sweep that varies: one of rate_cols[], else a
 * swept key whose last part is `rate`, `target_rate` or `qps` (e.g.
 * workload.generator.arrival.rate); -1 if none. */
static int
rate_col(const struct csv_table *t)
{
	int c;
	for (size_t k = 0; k < sizeof(rate_cols) / sizeof(rate_cols[0]); k++)
		if ((c = plot__col_of(t, rate_cols[k])) >= 0 &&
		    plot__column_varies(t, c))
			return c;
	for (size_t k = 0; k < t->ncol; k++) {
		const char *last = strrchr(t->head[k], '.');
		if (last && (strcmp(last, ".rate") == 0 ||
			     strcmp(last, ".target_rate") == 0 ||
			     strcmp(last, ".qps") == 0) &&
		    plot__column_varies(t, (int)k))
			return (int)k;
	}
	return -1;
}

/* Whether a sweep column is a configuration key (not a metric or id). */
static bool
sweep_key(const char *name)
{
	static const char *const keys[] = {
		"model", "gpu", "policy", "block_size", "router", "replicas",
		"tp", "trace", "kv_dtype", "preemption_mode",
	};
	size_t n = strlen(name);
	if (plot__contains_ci(name, "seed") ||
	    strcmp(name, "point_index") == 0 ||
	    (n >= 3 && strcmp(name + n - 3, "_id") == 0))
		return false;
	if (strchr(name, '.'))
		return true;
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		if (strcmp(name, keys[k]) == 0)
			return true;
	return false;
}

/* What a bar chart needs to know of its rows. */
struct bar_rows {
	size_t n;			/* rows (bars) */
	size_t first_len, max_len;	/* of the labels, in characters */
	const char *ycol;		/* the column the bars show */
	bool err;			/* columns 3 and 4: an error bar */
	bool notes;			/* a `note` column: text at the bar's
					 * end (a clipped bar's value) */
};

/* The longest label so far, and the first: room for rotated tics. */
static void
bar_label_len(struct bar_rows *br, const char *label)
{
	size_t n = strlen(label);

	if (br->n == 0)
		br->first_len = n;
	if (n > br->max_len)
		br->max_len = n;
}

/*
 * A bar chart of the rows of d (CSV: label, value, ..., rgb) as plot p,
 * values in [lo, hi] (lo <= 0 <= hi).  xlabel may be NULL.  No rows: no
 * plot.  The margins hold the rotated labels: below, the longest one's
 * drop; on the left, how far the first one reaches.
 */
static int
bars(struct ctx *c, struct plot *p, const char *file, const struct buf *d,
     const struct bar_rows *br, const char *ylabel, const char *xlabel,
     double lo, double hi)
{
	struct buf gp = { 0 };
	int rc;

	if (!br->n) {
		c->nplots--;
		return PLOT_OK;
	}
	if (!(hi > lo)) {
		lo = -1;
		hi = 1;
	}
	if ((rc = plot__write_file(c, file, d)) != PLOT_OK)
		return rc;
	plot__file(p, file);
	plot__gp_begin(c, &gp, p);
	plot__buf_puts(&gp, "set ylabel ");
	plot__gp_str(&gp, ylabel);
	if (xlabel) {
		plot__buf_puts(&gp, "\nset xlabel ");
		plot__gp_str(&gp, xlabel);
	}
	plot__buf_printf(&gp,
	    "\nset xrange [-0.6:%.1f]\nset yrange [%.9g:%.9g]\n"
	    "set xzeroaxis lt -1\nset style fill solid 0.7 border -1\n"
	    "set boxwidth 0.7\n", (double)br->n - 0.4,
	    lo < 0 ? lo - 0.1 * (hi - lo) : lo, hi + 0.1 * (hi - lo));
	/* many bars (a sweep's configurations times the metrics), or long
	 * labels (a suite's trace:metric): upright labels in a smaller font,
	 * with the room below they need (a character is about 0.4 of a
	 * line).  Else at 30 degrees, reaching left of their bar by 0.87 of
	 * their length: a left margin for the first one (gnuplot leaves
	 * none, and warns about labels of 30 characters or more). */
	if (br->n > 16 || br->max_len > 28)
		plot__buf_printf(&gp, "set xtics rotate by 90 right font ',%d'"
				 "\nset bmargin %zu\n", br->n > 16 ? 7 : 9,
				 2 + (br->max_len * 4 + 9) / 10);
	else
		plot__buf_printf(&gp, "set xtics rotate by 30 right\n"
				 "set bmargin %zu\n", 3 + (br->max_len * 2 +
							   9) / 10);
	if (br->n <= 16 && br->max_len <= 28 && br->first_len > 18)
		plot__buf_printf(&gp, "set lmargin %zu\n",
				 br->first_len * 7 / 10 - 3);
	char cmd[768];
	snprintf(cmd, sizeof(cmd), "'%s' using 0:(column('%s')):"
		 "(column('rgb')):xtic(1) with boxes lc rgb variable "
		 "notitle%s%s", file, br->ycol, br->err ?
		 ", \\\n\t\t'' using 0:2:3:4 with yerrorbars lc rgb '#333333' "
		 "pointsize 0 notitle" : "", br->notes ?
		 ", \\\n\t\t'' using 0:(column('note_y')):(stringcolumn("
		 "'note')) with labels font ',9' notitle" :
		 "");
	plot__gp_end(&gp, p, cmd);
	return plot__finish_plot(c, p, &gp);
}

/* What sets row r of a sweep apart: the swept keys that vary, but column
 * `skip`, as "KEY=VALUE, ..." (names) or "VALUE / ..."; r == SIZE_MAX
 * without names: "KEY / ...". */
static void
sweep_label(const struct csv_table *t, size_t r, int skip, bool names,
	    struct buf *l)
{
	for (size_t k = 0; k < t->ncol; k++) {
		const char *name = t->head[k], *dot = strrchr(name, '.');
		bool echo = false;
		if ((int)k == skip || !sweep_key(name) ||
		    !plot__column_varies(t, (int)k))
			continue;
		/* a summary column that repeats a swept key (block_size
		 * beside engine.block_size) says nothing new */
		for (size_t j = 0; !dot && j < t->ncol && !echo; j++) {
			const char *d = strrchr(t->head[j], '.');
			echo = d && strcmp(d + 1, name) == 0;
		}
		if (echo)
			continue;
		if (names)
			plot__buf_printf(l, "%s%s=%s", l->n ? ", " : "",
					 dot ? dot + 1 : name,
					 plot__cell(t, r, (int)k));
		else if (r == SIZE_MAX)		/* the names only */
			plot__buf_printf(l, "%s%s", l->n ? " / " : "",
					 dot ? dot + 1 : name);
		else
			plot__buf_printf(l, "%s%s", l->n ? " / " : "",
					 plot__cell(t, r, (int)k));
	}
}

/*
 * A sweep whose rate does not vary: p99 TTFT per configuration as bars,
 * the mean over the points that share a label (the seeds), with bars
 * from the lowest to the highest.
 */
static int
plot_sweep_bars(struct ctx *c, size_t i, int cy)
{
	const struct csv_table *t = &c->runs[i].sweep;
	struct series s = { 0 };
	struct buf d = { 0 };
	struct bar_rows br = { .ycol = "ttft_p99_s_mean", .err = true };
	struct plot *p;
	int rc = PLOT_OK;
	double hi = 0;
	char file[96];

	for (size_t r = 0; r < t->nrow; r++) {
		double y;
		const char *ys = plot__cell(t, r, cy);
		if (*ys == '\0' || plot__contains_ci(ys, "inf"))
			continue;
		if ((rc = plot__num(c, t->path, t->line[r], "ttft_p99_s", ys,
				    &y)))
			goto out;
		struct buf l = { 0 };
		sweep_label(t, r, -1, false, &l);
		/* nothing but the seed varies: one configuration, one bar
		 * over its seeds */
		if (!l.n)
			plot__buf_puts(&l, "all points");
		size_t k = l.oom ? SIZE_MAX : plot__series_of(&s, l.p);
		plot__buf_release(&l);
		if (k == SIZE_MAX ||
		    !plot__series_add(&s, k, 0, y, -1, false)) {
			rc = plot__oom(c);
			goto out;
		}
	}
	if (!(p = plot__add_run_plot(c, i, "sweep_ttft", "Sweep: p99 TTFT per "
				     "configuration"))) {
		rc = plot__oom(c);
		goto out;
	}
	snprintf(file, sizeof(file), "%s.dat", p->name);
	plot__buf_puts(&d,
		       "label,ttft_p99_s_mean,ttft_p99_s_min,ttft_p99_s_max,"
		       "points,rgb\n");
	qsort(s.pt, s.npt, sizeof(*s.pt), plot__cmp_pt);
	for (size_t a = 0; a < s.npt;) {
		size_t b = a;
		double sum = 0, lo = s.pt[a].y, up = s.pt[a].y;
		for (; b < s.npt && s.pt[b].series == s.pt[a].series; b++) {
			sum += s.pt[b].y;
			lo = fmin(lo, s.pt[b].y);
			up = fmax(up, s.pt[b].y);
		}
		bar_label_len(&br, s.label[s.pt[a].series]);
		br.n++;
		plot__dat_label(&d, s.label[s.pt[a].series]);
		plot__buf_printf(&d, ",%.9g,%.9g,%.9g,%zu,%ld\n",
				 sum / (double)(b - a), lo, up, b - a,
				 0x4a78b0L);
		hi = fmax(hi, up);
		a = b;
	}
	struct buf xl = { 0 };
	sweep_label(t, SIZE_MAX, -1, false, &xl);
	rc = bars(c, p, file, &d, &br, "p99 TTFT (s)", xl.n && !xl.oom ?
		  xl.p : NULL, 0, hi);
	plot__buf_release(&xl);
out:
	plot__series_release(&s);
	plot__buf_release(&d);
	return rc;
}

int
plot__sweep(struct ctx *c, size_t i)
{
	const struct csv_table *t = &c->runs[i].sweep;
	struct series s = { 0 };
	int rate = -1, cy, rc = PLOT_OK;

	if (!t->path || (cy = plot__col_of(t, "ttft_p99_s")) < 0)
		return PLOT_OK;
	if ((rate = rate_col(t)) < 0)
		return plot_sweep_bars(c, i, cy);
	for (size_t r = 0; r < t->nrow; r++) {
		char *end;
		double x = strtod(plot__cell(t, r, rate), &end), y;
		const char *ys = plot__cell(t, r, cy);
		/* a point without a numeric rate (the trace's own) is not
		 * on this plot */
		if (end == plot__cell(t, r, rate) || *end || !isfinite(x))
			continue;
		if (*ys == '\0' || plot__contains_ci(ys, "inf"))
			continue;
		if ((rc = plot__num(c, t->path, t->line[r], "ttft_p99_s", ys,
				    &y)))
			goto out;
		if (!(y > 0))
			continue;
		struct buf l = { 0 };
		sweep_label(t, r, rate, true, &l);
		size_t ser = l.oom ? SIZE_MAX :
			plot__series_of(&s, l.n ? l.p : "all points");
		plot__buf_release(&l);
		if (ser == SIZE_MAX || !plot__series_add(&s, ser, x, y, -1,
							     false)) {
			rc = plot__oom(c);
			goto out;
		}
	}
	struct series_look lk = {
		.name = "sweep_ttft", .heading = "Sweep: p99 TTFT vs rate",
		.xcol = t->head[rate], .xlabel = t->head[rate],
		.ycol = "ttft_p99_s", .ylabel = "p99 TTFT (s)",
		.x_lo = NAN, .x_hi = NAN,
	};
	rc = plot__series(c, i, &s, &lk);
out:
	plot__series_release(&s);
	return rc;
}

/* Whether a compare.csv row has a threshold (a `threshold` other than
 * none; every row when there is no such column). */
static bool
has_threshold(const struct csv_table *t, size_t r, int col)
{
	const char *v = col >= 0 ? plot__cell(t, r, col) : "x";

	return *v && strcmp(v, "none") != 0 && strcmp(v, "off") != 0;
}

/* The colour of a verdict: red a regression, green an improvement, grey
 * a metric without a threshold, else blue. */
static long
verdict_rgb(const char *v, bool judged)
{
	if (plot__contains_ci(v, "regress") || plot__contains_ci(v, "fail") ||
	    plot__contains_ci(v, "worse"))
		return 0xc00000;
	if (plot__contains_ci(v, "improv") || plot__contains_ci(v, "better"))
		return 0x2a7f2a;
	return judged ? 0x4a78b0 : 0x9a9a9a;
}

/* The span of delta_pct over the rows that have a threshold (all rows
 * when none has), into lo <= 0 <= hi. */
static int
compare_span(struct ctx *c, const struct csv_table *t, int cd, int cth,
	     double *lo, double *hi)
{
	int rc;
	bool any = false;

	for (size_t r = 0; r < t->nrow && !any; r++)
		any = has_threshold(t, r, cth);
	*lo = *hi = 0;
	for (size_t r = 0; r < t->nrow; r++) {
		const char *ds = plot__cell(t, r, cd);
		double x;
		if (*ds == '\0' || plot__contains_ci(ds, "inf") ||
		    (any && !has_threshold(t, r, cth)))
			continue;
		if ((rc = plot__num(c, t->path, t->line[r], "delta_pct", ds,
				    &x)))
			return rc;
		*lo = fmin(*lo, x);
		*hi = fmax(*hi, x);
	}
	return PLOT_OK;
}

/*
 * Candidate against baseline, one bar per metric in %.  The axis spans
 * the metrics that have a threshold: one without (kv_usage_mean) that
 * changed by more is clipped at the edge, grey, its value written there
 * (it squashed the bars that decide).
 */
int
plot__compare(struct ctx *c, size_t i)
{
	const struct csv_table *t = &c->runs[i].cmp;
	struct buf d = { 0 };
	struct bar_rows br = { .ycol = "shown_pct", .notes = true };
	struct plot *p;
	int cm, cd, ct, cv, cth, rc;
	double lo, hi;

	if (!t->path)
		return PLOT_OK;
	if ((rc = plot__need_col(c, t, "metric", &cm)) ||
	    (rc = plot__need_col(c, t, "delta_pct", &cd)))
		return rc;
	/* the group a metric belongs to: kvsim compare's `config`, or a
	 * trace suite's `trace`, when there are several */
	ct = plot__col_of(t, "config");
	if (ct < 0 || !plot__column_varies(t, ct))
		ct = plot__col_of(t, "trace");
	cv = plot__col_of(t, "verdict");
	cth = plot__col_of(t, "threshold");
	bool traces = ct >= 0 && plot__column_varies(t, ct);
	if ((rc = compare_span(c, t, cd, cth, &lo, &hi)))
		return rc;
	if (!(hi > lo)) {
		lo = -1;
		hi = 1;
	}
	if (!(p = plot__add_run_plot(c, i, "compare_delta",
			       "Candidate vs baseline: change per metric")))
		return plot__oom(c);
	char file[96];
	snprintf(file, sizeof(file), "%s.dat", p->name);
	plot__buf_puts(&d, "label,delta_pct,verdict,rgb,shown_pct,note_y,"
		       "note\n");
	for (size_t r = 0; r < t->nrow; r++) {
		double x;
		const char *v = cv >= 0 ? plot__cell(t, r, cv) : "";
		const char *ds = plot__cell(t, r, cd);
		/* no delta (a zero baseline), or an infinite one: no bar */
		if (*ds == '\0' || plot__contains_ci(ds, "inf"))
			continue;
		if ((rc = plot__num(c, t->path, t->line[r], "delta_pct", ds,
				    &x)))
			goto out;
		size_t n0 = d.n;
		if (traces) {
			plot__dat_label(&d, plot__cell(t, r, ct));
			plot__buf_puts(&d, ":");
		}
		plot__dat_label(&d, plot__cell(t, r, cm));
		if (!d.oom) {
			d.p[d.n] = '\0';
			bar_label_len(&br, d.p + n0);
		}
		plot__buf_printf(&d, ",%.9g,", x);
		plot__dat_label(&d, *v ? v : "-");
		double shown = fmin(fmax(x, lo), hi);
		/* a clipped bar's value written across its middle (note_y
		 * NaN: no note; a note is never empty, which gnuplot
		 * misreads) */
		plot__buf_printf(&d, ",%ld,%.9g,", verdict_rgb(v,
				 has_threshold(t, r, cth)), shown);
		if (shown != x)
			plot__buf_printf(&d, "%.9g,", shown / 2);
		else
			plot__buf_puts(&d, "NaN,");
		plot__buf_printf(&d, "%+.3g%%\n", x);
		br.n++;
	}
	rc = bars(c, p, file, &d, &br, "candidate vs baseline (%)", NULL, lo,
		  hi);
out:
	plot__buf_release(&d);
	return rc;
}
