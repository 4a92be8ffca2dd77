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

/*
 * A bar chart of the n rows of d (CSV: label, value, ..., rgb) as plot p,
 * values in [lo, hi] (lo <= 0 <= hi); with err, columns 3 and 4 are the
 * ends of an error bar.  xlabel may be NULL.  No rows: no plot.
 */
static int
bars(struct ctx *c, struct plot *p, const char *file, const struct buf *d,
     size_t n, const char *ylabel, const char *xlabel, double lo, double hi,
     bool err)
{
	struct buf gp = { 0 };
	int rc;

	if (!n) {
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
	    "set boxwidth 0.7\n", (double)n - 0.4,
	    lo < 0 ? lo - 0.1 * (hi - lo) : lo, hi + 0.1 * (hi - lo));
	/* many bars (a sweep's configurations times the metrics): upright
	 * labels in a smaller font, with the room they need below */
	if (n > 16)
		plot__buf_puts(&gp, "set xtics rotate by 90 right font ',7'\n"
			       "set bmargin 16\n");
	else
		plot__buf_puts(&gp, "set xtics rotate by 30 right\n");
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "'%s' using 0:2:(column('rgb')):xtic(1) "
		 "with boxes lc rgb variable notitle%s", file, err ?
		 ", \\\n\t\t'' using 0:2:3:4 with yerrorbars lc rgb '#333333' "
		 "pointsize 0 notitle" : "");
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
		if (k == SIZE_MAX || !plot__series_add(&s, k, 0, y, -1)) {
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
		plot__dat_label(&d, s.label[s.pt[a].series]);
		plot__buf_printf(&d, ",%.9g,%.9g,%.9g,%zu,%ld\n",
				 sum / (double)(b - a), lo, up, b - a,
				 0x4a78b0L);
		hi = fmax(hi, up);
		a = b;
	}
	struct buf xl = { 0 };
	sweep_label(t, SIZE_MAX, -1, false, &xl);
	rc = bars(c, p, file, &d, s.n, "p99 TTFT (s)", xl.n && !xl.oom ?
		  xl.p : NULL, 0, hi, true);
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
		if (ser == SIZE_MAX || !plot__series_add(&s, ser, x, y, -1)) {
			rc = plot__oom(c);
			goto out;
		}
	}
	rc = plot__series(c, i, &s, "sweep_ttft", "Sweep: p99 TTFT vs rate",
			  t->head[rate], t->head[rate], NULL, NULL, 0);
out:
	plot__series_release(&s);
	return rc;
}

int
plot__compare(struct ctx *c, size_t i)
{
	const struct csv_table *t = &c->runs[i].cmp;
	struct buf d = { 0 };
	struct plot *p;
	int cm, cd, ct, cv, rc;
	double lo = 0, hi = 0;
	size_t n = 0;

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
	bool traces = ct >= 0 && plot__column_varies(t, ct);
	if (!(p = plot__add_run_plot(c, i, "compare_delta",
			       "Candidate vs baseline: change per metric")))
		return plot__oom(c);
	char file[96];
	snprintf(file, sizeof(file), "%s.dat", p->name);
	plot__buf_puts(&d, "label,delta_pct,verdict,rgb\n");
	for (size_t r = 0; r < t->nrow; r++) {
		double x;
		const char *v = cv >= 0 ? plot__cell(t, r, cv) : "";
		const char *ds = plot__cell(t, r, cd);
		/* no delta (a zero baseline), or an infinite one: no bar */
		if (*ds == '\0' || plot__contains_ci(ds, "inf"))
			continue;
		if ((rc = plot__num(c, t->path, t->line[r], "delta_pct",
				    plot__cell(t, r, cd), &x)))
			goto out;
		long rgb = 0x4a78b0;
		if (plot__contains_ci(v, "regress") ||
		    plot__contains_ci(v, "fail") ||
		    plot__contains_ci(v, "worse"))
			rgb = 0xc00000;
		else if (plot__contains_ci(v, "improv") ||
			 plot__contains_ci(v, "better"))
			rgb = 0x2a7f2a;
		if (traces) {
			plot__dat_label(&d, plot__cell(t, r, ct));
			plot__buf_puts(&d, ":");
		}
		plot__dat_label(&d, plot__cell(t, r, cm));
		plot__buf_puts(&d, ",");
		plot__buf_printf(&d, "%.9g,", x);
		plot__dat_label(&d, *v ? v : "-");
		plot__buf_printf(&d, ",%ld\n", rgb);
		lo = fmin(lo, x);
		hi = fmax(hi, x);
		n++;
	}
	rc = bars(c, p, file, &d, n, "candidate vs baseline (%)", NULL, lo,
		  hi, false);
out:
	plot__buf_release(&d);
	return rc;
}
