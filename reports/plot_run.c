/*
 * plot_run.c -- the plots of one `kvsim run`: latency CDFs (the runs
 * overlaid) and the timeseries charts of KV usage and throughput.
 *
 * CDFs are thinned: a point is kept when the fraction or the value has
 * moved by 1/1000 of its range since the last kept point, so a curve has
 * at most about 2,000 points whatever the number of requests.  Drawn
 * `with steps`, it is the exact empirical CDF to within 1/1000 in fraction
 * at every value, tails included.
 */
#define _XOPEN_SOURCE 700	/* unlink() */

#include "config.h"

#include "reports/plot_int.h"

#include <math.h>
#include <stdio.h>
#include <unistd.h>

static const struct {
	const char *name, *heading, *xlabel;
} cdfs[NLAT] = {
	{ "ttft_cdf", "TTFT CDF", "time to first token (s)" },
	{ "tpot_cdf", "TPOT CDF", "time per output token (s)" },
	{ "e2e_cdf", "E2E latency CDF", "end-to-end latency (s)" },
	{ "queue_cdf", "Queueing delay CDF", "queueing delay (s)" },
};

void
plot_forget_run(const char *dir)
{
	static const char *const charts[] = { "kv_usage", "throughput" };
	static const char *const ext[] = { "gp", "dat", "png", "svg" };
	char p[PATH_MAX];

	for (size_t i = 0; i < NLAT + 2; i++)
		for (size_t e = 0; e < 4; e++) {
			snprintf(p, sizeof(p), "%s/%s.%s", dir, i < NLAT ?
				 cdfs[i].name : charts[i - NLAT], ext[e]);
			(void)unlink(p);
		}
	snprintf(p, sizeof(p), "%s/index.html", dir);
	(void)unlink(p);
}

/* Sorted values -> (value, fraction of values <= it), thinned. */
static void
cdf_data(struct buf *b, const char *col, const double *v, size_t n)
{
	double step_v = (v[n - 1] - v[0]) / PLOT_CDF_STEPS;
	double step_f = 1.0 / PLOT_CDF_STEPS;
	double last_v = v[0], last_f = 0;

	plot__buf_printf(b, "%s,fraction\n%.9f,%.6f\n", col, v[0], 0.0);
	for (size_t i = 0; i < n; i++) {
		double f = (double)(i + 1) / (double)n;
		if (i + 1 < n && v[i + 1] == v[i])
			continue;	/* the top of a run of equal values */
		if (i + 1 < n && f - last_f < step_f &&
		    v[i] - last_v < step_v)
			continue;
		plot__buf_printf(b, "%.9f,%.6f\n", v[i], f);
		last_v = v[i];
		last_f = f;
	}
}

int
plot__cdfs(struct ctx *c)
{
	int rc;

	for (int m = 0; m < NLAT; m++) {
		double xmax = 0;
		size_t have = 0;
		for (size_t i = 0; i < c->nruns; i++)
			if (c->runs[i].nlat[m]) {
				have++;
				xmax = fmax(xmax, c->runs[i].lat[m]
					    [c->runs[i].nlat[m] - 1]);
			}
		if (!have)
			continue;
		struct plot *p = plot__add_plot(c, cdfs[m].name,
						cdfs[m].heading);
		if (!p)
			return plot__oom(c);
		struct buf gp = { 0 }, cmd = { 0 };
		plot__gp_begin(c, &gp, p);
		plot__buf_printf(&gp,
		    "set xlabel '%s'\nset ylabel 'fraction of "
		    "requests'\nset xrange [0:%.9g]\nset yrange [0:1]\n"
		    "set key bottom right\n", cdfs[m].xlabel,
		    xmax > 0 ? xmax * 1.02 : 1.0);
		for (size_t i = 0; i < c->nruns; i++) {
			struct run *r = &c->runs[i];
			char name[96];
			if (!r->nlat[m])
				continue;
			if (c->nruns > 1)
				snprintf(name, sizeof(name), "%s_%zu.dat",
					 cdfs[m].name, i + 1);
			else
				snprintf(name, sizeof(name), "%s.dat",
					 cdfs[m].name);
			struct buf d = { 0 };
			cdf_data(&d, plot__lat_col[m], r->lat[m], r->nlat[m]);
			rc = plot__write_file(c, name, &d);
			plot__buf_release(&d);
			if (rc) {
				plot__buf_release(&gp);
				plot__buf_release(&cmd);
				return rc;
			}
			plot__file(p, name);
			if (cmd.n)
				plot__buf_puts(&cmd, ", \\\n\t\t");
			plot__buf_printf(&cmd,
			    "'%s' using 1:2 with steps lw 2 title ", name);
			plot__gp_str(&cmd, r->label);
		}
		plot__gp_end(&gp, p, cmd.oom ? "" : cmd.p);
		if (cmd.oom)
			gp.oom = true;
		plot__buf_release(&cmd);
		if ((rc = plot__finish_plot(c, p, &gp)) != PLOT_OK)
			return rc;
	}
	return PLOT_OK;
}

/* `set xrange` for a time axis that may be a single instant. */
static void
time_range(struct buf *b, const struct run *r)
{
	double lo = r->t_min, hi = r->t_max;
	if (!(hi > lo)) {
		lo -= 1;
		hi += 1;
	}
	plot__buf_printf(b, "set xlabel 'simulated time (s)'\n"
			 "set xrange [%.9g:%.9g]\n", lo, hi);
}

/* Row k's interval of timeseries.csv: since the row before; the first
 * row's, the one after it (rows are one interval apart but the last). */
static double
row_len(const struct run *r, size_t k)
{
	if (k > 0)
		return r->tput[k][0] - r->tput[k - 1][0];
	return r->ts_rows > 1 ? r->tput[1][0] - r->tput[0][0] : 1.0;
}

/*
 * The throughput chart's data (t_s,prompt_tok_s,gen_tok_s): the rows in
 * bins of n consecutive rows, n the smallest of 1, 2, 5, 10, 20, 50, ...
 * that makes at most PLOT_MAX_BINS bins, each the mean rate over the time
 * its rows cover (the rates weighted by their intervals, so tokens add
 * up), stamped at the bin's start, and a last row at the end of the last
 * bin to close its step.  Returns n; *width is n intervals in seconds,
 * *ymax the highest rate.
 */
static size_t
tput_bins(const struct run *r, struct buf *d, double *width, double *ymax)
{
	size_t n = 1;
	double pr = 0, ge = 0;

	for (size_t m = 1; (r->ts_rows + n - 1) / n > PLOT_MAX_BINS; m++)
		n = (size_t)((m % 3 == 1 ? 2 : m % 3 == 2 ? 5 : 10) *
			     pow(10, (double)((m - 1) / 3)));
	*width = (double)n * row_len(r, r->ts_rows > 1 ? 1 : 0);
	*ymax = 0;
	plot__buf_puts(d, "t_s,prompt_tok_s,gen_tok_s\n");
	for (size_t a = 0; a < r->ts_rows; a += n) {
		size_t b = a + n < r->ts_rows ? a + n : r->ts_rows;
		double len = 0;
		pr = ge = 0;
		for (size_t k = a; k < b; k++) {
			double l = row_len(r, k);
			pr += r->tput[k][1] * l;
			ge += r->tput[k][2] * l;
			len += l;
		}
		if (len > 0) {
			pr /= len;
			ge /= len;
		}
		*ymax = fmax(*ymax, fmax(pr, ge));
		plot__buf_printf(d, "%.9g,%.9g,%.9g\n", r->tput[a][0] -
				 row_len(r, a), pr, ge);
	}
	plot__buf_printf(d, "%.9g,%.9g,%.9g\n", r->tput[r->ts_rows - 1][0],
			 pr, ge);
	return n;
}

/* The throughput chart of run i, from its rows binned (tput_bins). */
static int
throughput(struct ctx *c, size_t i)
{
	struct run *r = &c->runs[i];
	struct buf gp = { 0 }, d = { 0 };
	struct plot *p;
	char file[96];
	double width, ymax;
	int rc;

	if (!(p = plot__add_run_plot(c, i, "throughput", "Throughput")))
		return plot__oom(c);
	snprintf(file, sizeof(file), "%s.dat", p->name);
	size_t n = tput_bins(r, &d, &width, &ymax);
	if ((rc = plot__write_file(c, file, &d)) != PLOT_OK)
		goto out;
	plot__file(p, file);
	plot__gp_begin(c, &gp, p);
	plot__buf_printf(&gp, "set xlabel 'simulated time (s)'\n"
			 "set xrange [%.9g:%.9g]\n", r->tput[0][0] -
			 row_len(r, 0), r->tput[r->ts_rows - 1][0]);
	if (n > 1)
		plot__buf_printf(&gp, "set ylabel 'tokens/s (mean over %.6g s "
				 "bins of %zu rows)'\n", width, n);
	else
		plot__buf_puts(&gp, "set ylabel 'tokens/s'\n");
	plot__buf_printf(&gp, "set yrange [0:%.9g]\nset key top left\n",
			 ymax > 0 ? ymax * 1.1 : 1.0);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "'%s' using (column('t_s')):"
		 "(column('prompt_tok_s')) with steps lw 2 title 'prompt "
		 "tokens/s', \\\n\t\t'%s' using (column('t_s')):"
		 "(column('gen_tok_s')) with steps lw 2 title 'generated "
		 "tokens/s'", file, file);
	plot__gp_end(&gp, p, cmd);
	rc = plot__finish_plot(c, p, &gp);
out:
	plot__buf_release(&d);
	plot__buf_release(&gp);
	return rc;
}

int
plot__timeseries(struct ctx *c, size_t i)
{
	struct run *r = &c->runs[i];
	struct plot *p;
	struct buf gp = { 0 }, data = { 0 };
	int rc;

	if (!r->ts_rows)
		return PLOT_OK;
	plot__buf_puts(&data, "data = ");
	plot__buf_printf(&data, "'%stimeseries.csv'", r->rel);	/* no quote in
								 * a path we
								 * made */
	if (!(p = plot__add_run_plot(c, i, "kv_usage",
				     "KV cache usage and requests")))
		return plot__oom(c);
	plot__gp_begin(c, &gp, p);
	time_range(&gp, r);
	plot__buf_printf(&gp,
			 "set ylabel 'KV cache usage (fraction of blocks)'\n"
			 "set y2label 'requests'\n"
			 "set ytics nomirror\nset y2tics\n"
			 "set yrange [0:%.9g]\nset y2range [0:%.9g]\n"
			 "set key top left\n%s\n",
			 /* a fraction: 0.08 must not look full */
			 r->kv_max > 1 ? r->kv_max * 1.05 : 1.0,
			 r->count_max > 0 ? r->count_max * 1.1 : 1.0,
			 data.oom ? "" : data.p);
	plot__gp_end(&gp, p, "data using (column('t_s')):(column('kv_usage')) "
		     "with lines lw 2 title 'KV usage' axes x1y1, \\\n"
		     "\t\tdata using (column('t_s')):(column('running')) "
		     "with steps title 'running' axes x1y2, \\\n"
		     "\t\tdata using (column('t_s')):(column('waiting')) "
		     "with steps title 'waiting' axes x1y2, \\\n"
		     "\t\tdata using (column('t_s')):(column('swapped')) "
		     "with steps title 'swapped' axes x1y2");
	if (data.oom)
		gp.oom = true;
	if ((rc = plot__finish_plot(c, p, &gp)) == PLOT_OK)
		rc = throughput(c, i);
	plot__buf_release(&data);
	return rc;
}
