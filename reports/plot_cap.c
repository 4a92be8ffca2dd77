/*
 * plot_cap.c -- the capacity plots: the knee (p99 TTFT against QPS per
 * configuration, with the SLO line) and the max QPS under the SLO per GPU.
 */
#include "config.h"

#include "reports/plot_int.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether an SLO statistic is the p99 the knee plots. */
static bool
is_p99(const char *stat)
{
	return strcmp(stat, "p99") == 0 || strcmp(stat, "0.99") == 0;
}

static double
slo_clause(struct buf *b, const char *what, double x)
{
	struct buf title = { 0 };
	plot__buf_printf(&title, "SLO: %s <= %.9g s", what, x);
	plot__buf_printf(b, "%.9g with lines dt 2 lw 2 lc rgb '#c00000' title ",
			 x);
	plot__gp_str(b, title.oom ? "SLO" : title.p);
	plot__buf_release(&title);
	return x;
}

/*
 * The p99 TTFT SLO of capacity.csv as a plot clause: from its `slo`
 * column ("ttft_s:p99<=2;tpot_s:p99<=0.1", kvsim capacity's), else from
 * slo_metric, slo_quantile and slo_value_s.  Returns its value, 0 (and
 * nothing written) when there is none.
 */
static double
slo_line(const struct csv_table *t, struct buf *b)
{
	int sc = plot__col_of(t, "slo");
	int m = plot__col_of(t, "slo_metric");
	int v = plot__col_of(t, "slo_value_s");
	int q = plot__col_of(t, "slo_quantile");

	for (size_t r = 0; r < t->nrow; r++) {
		char *end;
		double x;
		if (sc >= 0) {
			const char *it = plot__cell(t, r, sc);
			while (*it) {
				size_t n = strcspn(it, ";");
				char one[128], stat[32];
				snprintf(one, sizeof(one), "%.*s", (int)n, it);
				char *colon = strchr(one, ':');
				char *le = strstr(one, "<=");
				if (colon && le && le > colon &&
				    plot__contains_ci(one, "ttft")) {
					snprintf(stat, sizeof(stat), "%.*s",
						 (int)(le - colon - 1),
						 colon + 1);
					x = strtod(le + 2, &end);
					if (is_p99(stat) && end != le + 2 &&
					    !*end && x > 0 && isfinite(x)) {
						*le = '\0';
						*colon = ' ';
						return slo_clause(b, one, x);
					}
				}
				it += n + (it[n] == ';');
			}
		}
		if (m < 0 || v < 0)
			continue;
		x = strtod(plot__cell(t, r, v), &end);
		if (!plot__contains_ci(plot__cell(t, r, m), "ttft") || *end ||
		    end == plot__cell(t, r, v) || !(x > 0) || !isfinite(x) ||
		    (q >= 0 && !is_p99(plot__cell(t, r, q))))
			continue;
		char what[160];
		snprintf(what, sizeof(what), "%s p99", plot__cell(t, r, m));
		return slo_clause(b, what, x);
	}
	return 0;
}

/*
 * The values of row `row` in the columns named in keys[] that vary over
 * the table, ", "-separated, into b (with "NAME=" when names is set).
 */
static void
varying(const struct csv_table *t, size_t row, const char *const *keys,
	size_t nkeys, bool names, struct buf *b)
{
	size_t n0 = b->n;
	for (size_t k = 0; k < nkeys; k++) {
		int c = plot__col_of(t, keys[k]);
		if (c < 0 || !plot__column_varies(t, c))
			continue;
		if (b->n > n0)
			plot__buf_puts(b, ", ");
		if (names)
			plot__buf_printf(b, "%s=", keys[k]);
		plot__buf_puts(b, plot__cell(t, row, c));
	}
}

/* Columns that tell capacity configurations apart, for labels. */
static const char *const cap_keys[] = {
	"model", "gpu", "tp", "policy", "block_size",
	"kv_cache_dtype", "gpu_memory_utilization", "max_model_len", "trace",
};

#define NCAP_KEYS (sizeof(cap_keys) / sizeof(cap_keys[0]))

/* What makes row r of capacity.csv differ from the others: its --across
 * assignment, else the values of cap_keys[] that vary. */
static void
cap_describe(const struct csv_table *t, size_t r, struct buf *b)
{
	int a = plot__col_of(t, "across");
	if (a >= 0 && *plot__cell(t, r, a) && plot__column_varies(t, a))
		plot__buf_puts(b, plot__cell(t, r, a));
	else
		varying(t, r, cap_keys, NCAP_KEYS, false, b);
}

/* A knee series' label: the config_id, and what capacity.csv says makes
 * that configuration differ from the others. */
static void
knee_label(const struct csv_table *cap, const char *id, struct buf *b)
{
	plot__buf_puts(b, id);
	int c = cap->path ? plot__col_of(cap, "config_id") : -1;
	for (size_t r = 0; c >= 0 && r < cap->nrow; r++) {
		if (strcmp(plot__cell(cap, r, c), id) != 0)
			continue;
		struct buf v = { 0 };
		cap_describe(cap, r, &v);
		if (v.n && !v.oom)
			plot__buf_printf(b, ": %s", v.p);
		plot__buf_release(&v);
		return;
	}
}

int
plot__knee(struct ctx *c, size_t i)
{
	const struct csv_table *t = &c->runs[i].capp;
	struct series s = { 0 };
	struct buf slo = { 0 };
	int cid, cq, cy, rc, cok;

	if (!t->path)
		return PLOT_OK;
	if ((rc = plot__need_col(c, t, "config_id", &cid)) ||
	    (rc = plot__need_col(c, t, "qps", &cq)) ||
	    (rc = plot__need_col(c, t, "ttft_p99_s", &cy)))
		return rc;
	cok = plot__col_of(t, "meets_slo");
	for (size_t r = 0; r < t->nrow; r++) {
		double x, y, ok = -1;
		const char *ys = plot__cell(t, r, cy);
		if ((rc = plot__num(c, t->path, t->line[r], "qps",
				    plot__cell(t, r, cq), &x)))
			goto out;
		if (cok >= 0 && *plot__cell(t, r, cok) &&
		    (rc = plot__num(c, t->path, t->line[r], "meets_slo",
				    plot__cell(t, r, cok), &ok)))
			goto out;
		/* an empty or infinite p99 (a run stopped early, a
		 * saturated point) has no place on a log axis, but its
		 * verdict counts in the meets_slo fraction */
		if (*ys == '\0' || plot__contains_ci(ys, "inf")) {
			if (ok < 0)
				continue;
			y = NAN;
		} else {
			if ((rc = plot__num(c, t->path, t->line[r],
					    "ttft_p99_s", ys, &y)))
				goto out;
			if (!(y > 0))
				continue;
		}
		struct buf l = { 0 };
		knee_label(&c->runs[i].cap, plot__cell(t, r, cid), &l);
		size_t k = l.oom ? SIZE_MAX : plot__series_of(&s, l.p);
		plot__buf_release(&l);
		if (k == SIZE_MAX || !plot__series_add(&s, k, x, y, (int)ok)) {
			rc = plot__oom(c);
			goto out;
		}
	}
	double slo_s = c->runs[i].cap.path ? slo_line(&c->runs[i].cap, &slo)
		       : 0;
	rc = plot__series(c, i, &s, "capacity_knee", "Capacity knee: p99 TTFT "
			  "vs offered load", "qps", "offered load (requests/s)",
			 "meets_slo_fraction", slo.n && !slo.oom ? slo.p : NULL,
			 slo_s);
out:
	plot__series_release(&s);
	plot__buf_release(&slo);
	return rc;
}

int
plot__capacity(struct ctx *c, size_t i)
{
	const struct csv_table *t = &c->runs[i].cap;
	struct buf d = { 0 }, gp = { 0 };
	struct plot *p;
	int cg, cv, clo, chi, cid, rc;
	double ymax = 0;

	if (!t->path || !t->nrow)
		return PLOT_OK;
	if ((rc = plot__need_col(c, t, "gpu", &cg)) ||
	    (rc = plot__need_col(c, t, "max_qps_under_slo",
				 &cv)))
		return rc;
	clo = plot__col_of(t, "max_qps_min");
	chi = plot__col_of(t, "max_qps_max");
	cid = plot__col_of(t, "config_id");
	bool bars = clo >= 0 && chi >= 0;
	bool repeat = plot__column_repeats(t, cg);
	if (!(p = plot__add_run_plot(c, i, "capacity_gpu",
			       "Capacity per GPU: max request rate under the "
			       "SLO")))
		return plot__oom(c);
	char file[96];
	snprintf(file, sizeof(file), "%s.dat", p->name);
	plot__buf_puts(&d, "label,max_qps_under_slo,max_qps_min,max_qps_max\n");
	for (size_t r = 0; r < t->nrow; r++) {
		double v[3] = { 0, 0, 0 };
		int cols[3] = { cv, clo, chi };
		const char *names[3] = { "max_qps_under_slo", "max_qps_min",
					 "max_qps_max" };
		for (int k = 0; k < 3; k++) {
			if (cols[k] < 0 || *plot__cell(t, r, cols[k]) == '\0') {
				v[k] = v[0];	/* none met: 0 */
				continue;
			}
			if ((rc = plot__num(c, t->path, t->line[r], names[k],
					    plot__cell(t, r, cols[k]), &v[k])))
				goto out;
		}
		ymax = fmax(ymax, fmax(v[0], v[2]));
		plot__dat_label(&d, plot__cell(t, r, cg));
		if (repeat) {
			/* several rows of one GPU: say what differs */
			struct buf l = { 0 };
			cap_describe(t, r, &l);
			if (!l.n && cid >= 0)
				plot__buf_puts(&l, plot__cell(t, r, cid));
			if (!l.n)
				plot__buf_printf(&l, "#%zu", r + 1);
			plot__buf_puts(&d, " (");
			plot__dat_label(&d, l.oom ? "" : l.p);
			plot__buf_puts(&d, ")");
			plot__buf_release(&l);
		}
		plot__buf_printf(&d, ",%.9g,%.9g,%.9g\n", v[0], v[1], v[2]);
	}
	if ((rc = plot__write_file(c, file, &d)) != PLOT_OK)
		goto out;
	plot__file(p, file);
	plot__gp_begin(c, &gp, p);
	plot__buf_printf(&gp, "set ylabel 'requests/s'\nset yrange [0:%.9g]\n"
			 "set style data histograms\n"
			 "set style histogram %s\n"
			 "set style fill solid 0.6 border -1\n"
			 "set xtics rotate by 30 right\nset key top right\n",
			 ymax > 0 ? ymax * 1.15 : 1.0,
			 bars ? "errorbars gap 2 lw 1" : "clustered gap 2");
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "'%s' using 2%s:xtic(1) title "
		 "'max QPS under the SLO%s'", file, bars ? ":3:4" : "",
		 bars ? " (bars: seed min..max)" : "");
	plot__gp_end(&gp, p, cmd);
	rc = plot__finish_plot(c, p, &gp);
out:
	plot__buf_release(&d);
	plot__buf_release(&gp);
	return rc;
}
