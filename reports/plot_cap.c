/*
 * plot_cap.c -- the capacity plots: the knee (every SLO over its bound
 * against QPS per configuration, with the SLO line, the probes that missed
 * and the answers) and the max QPS under the SLO per deployment (GPU, TP
 * and replicas).
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

#define KNEE_MAX_SLO 8

struct knee_slo {		/* one SLO the capacity search used */
	char col[32];		/* its capacity_points.csv column */
	char what[160];		/* "ttft_s p99 <= 2 s" */
	double bound;		/* 0: no bound known, raw values */
};

/*
 * The SLOs of capacity.csv's `slo` column (the first row that has one,
 * "ttft_s:p99<=2;tpot_s:p99<=0.1") whose sloK_value_s column (K its
 * position) capacity_points.csv has, in order, into m.
 */
static size_t
knee_slos(const struct csv_table *cap, const struct csv_table *pts,
	  struct knee_slo *m)
{
	int sc = cap->path ? plot__col_of(cap, "slo") : -1;
	size_t n = 0;

	for (size_t r = 0; sc >= 0 && r < cap->nrow && n == 0; r++) {
		const char *it = plot__cell(cap, r, sc);
		for (size_t k = 1; *it && n < KNEE_MAX_SLO; k++) {
			size_t len = strcspn(it, ";");
			char one[128], *le, *colon, *end;
			snprintf(one, sizeof(one), "%.*s", (int)len, it);
			it += len + (it[len] == ';');
			le = strstr(one, "<=");
			colon = strchr(one, ':');
			if (!le || !colon || colon > le)
				continue;
			double x = strtod(le + 2, &end);
			if (end == le + 2 || *end || !(x > 0) || !isfinite(x))
				continue;
			snprintf(m[n].col, sizeof(m[n].col), "slo%zu_value_s",
				 k);
			if (plot__col_of(pts, m[n].col) < 0)
				continue;
			*le = '\0';
			*colon = ' ';
			snprintf(m[n].what, sizeof(m[n].what), "%s <= %.9g s",
				 one, x);
			m[n].bound = x;
			n++;
		}
	}
	return n;
}

/*
 * The answers of capacity.csv (max_qps_under_slo per configuration) as
 * dotted vertical lines with their value, into pre; their span into
 * lo, hi.  Returns how many.
 */
static size_t
knee_answers(const struct csv_table *cap, struct buf *pre, double *lo,
	     double *hi)
{
	int cv = cap->path ? plot__col_of(cap, "max_qps_under_slo") : -1;
	int cid = cap->path ? plot__col_of(cap, "config_id") : -1;
	size_t n = 0;

	*lo = *hi = NAN;
	for (size_t r = 0; cv >= 0 && r < cap->nrow; r++) {
		char *end;
		const char *v = plot__cell(cap, r, cv);
		double x = strtod(v, &end);
		if (end == v || *end || !(x > 0) || !isfinite(x))
			continue;	/* met at no rate: no answer */
		plot__buf_printf(pre, "set arrow from %.9g, graph 0 to %.9g, "
				 "graph 1 nohead dt 3 lw 2 lc rgb '#2a7f2a'\n"
				 "set label ", x, x);
		struct buf l = { 0 };
		if (cid >= 0 && cap->nrow > 1)
			plot__buf_printf(&l, "%s: ", plot__cell(cap, r, cid));
		plot__buf_printf(&l, "%.4g req/s", x);
		plot__gp_str(pre, l.oom ? "" : l.p);
		plot__buf_release(&l);
		plot__buf_printf(pre, " at %.9g, graph 0.97 right rotate by 90 "
				 "offset -1,0 tc rgb '#2a7f2a' font ',9'\n",
				 x);
		*lo = fmin(*lo, x);
		*hi = fmax(*hi, x);
		n++;
	}
	return n;
}

/* A probe's value of one SLO into *y: NaN when it has none (a run stopped
 * early, a saturated rate); 1 when the probe is left out (no value and no
 * verdict, or a value not above 0 on the log axis). */
static int
knee_value(struct ctx *c, const struct csv_table *t, size_t r,
	   const struct knee_slo *m, int col, bool stopped, double ok,
	   double *y, bool *skip)
{
	const char *ys = plot__cell(t, r, col);
	int rc;

	*skip = false;
	if (stopped || *ys == '\0' || plot__contains_ci(ys, "inf")) {
		/* no place on a log axis, but the probe is marked and its
		 * verdict counts in the meets_slo fraction */
		*skip = ok < 0 && !stopped;
		*y = NAN;
		return PLOT_OK;
	}
	if ((rc = plot__num(c, t->path, t->line[r], t->head[col], ys, y)))
		return rc;
	*skip = !(*y > 0);
	if (m->bound > 0)
		*y /= m->bound;
	return PLOT_OK;
}

/* Row r of capacity_points.csv, one point per SLO, into s. */
static int
knee_row(struct ctx *c, size_t i, struct series *s, size_t r,
	 const struct knee_slo *m, size_t nm)
{
	const struct csv_table *t = &c->runs[i].capp;
	int cid = plot__col_of(t, "config_id"), cq = plot__col_of(t, "qps");
	int cok = plot__col_of(t, "meets_slo");
	int cst = plot__col_of(t, "stopped_early");
	double x, ok = -1, y;
	bool stopped = cst >= 0 && strcmp(plot__cell(t, r, cst), "1") == 0;
	int rc;

	if ((rc = plot__num(c, t->path, t->line[r], "qps",
			    plot__cell(t, r, cq), &x)))
		return rc;
	if (cok >= 0 && *plot__cell(t, r, cok) &&
	    (rc = plot__num(c, t->path, t->line[r], "meets_slo",
			    plot__cell(t, r, cok), &ok)))
		return rc;
	for (size_t j = 0; j < nm; j++) {
		bool skip;
		if ((rc = knee_value(c, t, r, &m[j], plot__col_of(t, m[j].col),
				     stopped, ok, &y, &skip)))
			return rc;
		if (skip)
			continue;
		struct buf l = { 0 };
		knee_label(&c->runs[i].cap, plot__cell(t, r, cid), &l);
		if (nm > 1)
			plot__buf_printf(&l, " / %s", m[j].what);
		size_t k = l.oom ? SIZE_MAX : plot__series_of(s, l.p);
		plot__buf_release(&l);
		if (k == SIZE_MAX ||
		    !plot__series_add(s, k, x, y, (int)ok, stopped))
			return plot__oom(c);
	}
	return PLOT_OK;
}

/*
 * The knee: every SLO the search used against the offered load, each as
 * its value over its bound (1: at the SLO; capacity_points.csv's
 * sloK_value_s over the bounds of capacity.csv's `slo`), so that a curve
 * under the line meets the SLOs and the answer cannot sit left of where
 * every curve crosses it.  Without those columns, p99 TTFT in seconds.
 * The probes some seed missed, those with no value, and the answers are
 * marked.
 */
int
plot__knee(struct ctx *c, size_t i)
{
	const struct csv_table *t = &c->runs[i].capp;
	struct knee_slo m[KNEE_MAX_SLO];
	struct series s = { 0 };
	struct buf extra = { 0 }, pre = { 0 }, yl = { 0 };
	struct series_look lk = {
		.name = "capacity_knee", .xcol = "qps",
		.xlabel = "offered load (requests/s)", .knee = true,
	};
	size_t nm;
	int col, rc;

	if (!t->path)
		return PLOT_OK;
	if ((rc = plot__need_col(c, t, "config_id", &col)) ||
	    (rc = plot__need_col(c, t, "qps", &col)))
		return rc;
	if (!(nm = knee_slos(&c->runs[i].cap, t, m))) {
		/* no bounds known: p99 TTFT in seconds */
		if ((rc = plot__need_col(c, t, "ttft_p99_s", &col)))
			return rc;
		m[0] = (struct knee_slo){ "ttft_p99_s", "p99 TTFT", 0 };
		nm = 1;
	}
	for (size_t r = 0; r < t->nrow; r++)
		if ((rc = knee_row(c, i, &s, r, m, nm)))
			goto out;
	if (m[0].bound > 0) {
		lk.heading = "Capacity knee: each SLO over its bound vs "
			     "offered load";
		lk.ycol = "slo_ratio";
		if (nm == 1)
			plot__buf_printf(&yl, "%s, over the bound", m[0].what);
		else
			plot__buf_puts(&yl, "SLO statistic over its bound");
		plot__buf_puts(&yl, " (1: at the SLO)");
		plot__buf_puts(&extra, "1 with lines dt 2 lw 2 lc rgb "
			       "'#c00000' title 'SLO bound'");
		lk.extra_y = 1;
	} else {
		lk.heading = "Capacity knee: p99 TTFT vs offered load";
		lk.ycol = "ttft_p99_s";
		plot__buf_puts(&yl, "p99 TTFT (s)");
		lk.extra_y = c->runs[i].cap.path ?
			slo_line(&c->runs[i].cap, &extra) : 0;
	}
	if (knee_answers(&c->runs[i].cap, &pre, &lk.x_lo, &lk.x_hi))
		plot__buf_printf(&extra, "%sNaN with lines dt 3 lw 2 lc rgb "
				 "'#2a7f2a' title 'answer: max rate under the "
				 "SLO'", extra.n ? ", \\\n\t\t" : "");
	if (extra.oom || pre.oom || yl.oom) {
		rc = plot__oom(c);
		goto out;
	}
	lk.ylabel = yl.p;
	lk.extra = extra.n ? extra.p : NULL;
	lk.pre = pre.n ? pre.p : NULL;
	rc = plot__series(c, i, &s, &lk);
out:
	plot__series_release(&s);
	plot__buf_release(&extra);
	plot__buf_release(&pre);
	plot__buf_release(&yl);
	return rc;
}

/* A deployment: the GPU, its tensor-parallel degree and, when there are
 * several, the replicas ("h100-sxm TP2 x3"), from capacity.csv's gpu, tp
 * and replicas columns. */
static void
deploy_label(const struct csv_table *t, size_t r, int cg, struct buf *b)
{
	int ct = plot__col_of(t, "tp"), cr = plot__col_of(t, "replicas");

	plot__buf_puts(b, plot__cell(t, r, cg));
	if (ct >= 0 && *plot__cell(t, r, ct))
		plot__buf_printf(b, " TP%s", plot__cell(t, r, ct));
	if (cr >= 0 && *plot__cell(t, r, cr) &&
	    strcmp(plot__cell(t, r, cr), "1") != 0)
		plot__buf_printf(b, " x%s", plot__cell(t, r, cr));
}

/* Whether two rows of capacity.csv are the same deployment. */
static bool
deploy_repeats(const struct csv_table *t, int cg)
{
	bool rep = false;

	for (size_t r = 0; r < t->nrow && !rep; r++)
		for (size_t q = 0; q < r && !rep; q++) {
			struct buf a = { 0 }, b = { 0 };
			deploy_label(t, r, cg, &a);
			deploy_label(t, q, cg, &b);
			rep = a.oom || b.oom || strcmp(a.p, b.p) == 0;
			plot__buf_release(&a);
			plot__buf_release(&b);
		}
	return rep;
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
	bool repeat = deploy_repeats(t, cg);
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
		struct buf dl = { 0 };
		deploy_label(t, r, cg, &dl);
		plot__dat_label(&d, dl.oom ? "" : dl.p);
		if (dl.oom)
			d.oom = true;
		plot__buf_release(&dl);
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
