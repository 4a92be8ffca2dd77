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
			 r->kv_max > 0 ? r->kv_max * 1.1 : 1.0,
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
	if ((rc = plot__finish_plot(c, p, &gp)) != PLOT_OK)
		goto out;

	if (!(p = plot__add_run_plot(c, i, "throughput", "Throughput"))) {
		rc = plot__oom(c);
		goto out;
	}
	plot__gp_begin(c, &gp, p);
	time_range(&gp, r);
	plot__buf_printf(&gp, "set ylabel 'tokens/s'\nset yrange [0:%.9g]\n"
			 "set key top left\n%s\n",
			 r->tok_max > 0 ? r->tok_max * 1.1 : 1.0,
			 data.oom ? "" : data.p);
	plot__gp_end(&gp, p,
		     "data using (column('t_s')):(column('prompt_tok_s')) "
		     "with steps lw 2 title 'prompt tokens/s', \\\n"
		     "\t\tdata using (column('t_s')):(column('gen_tok_s')) "
		     "with steps lw 2 title 'generated tokens/s'");
	if (data.oom)
		gp.oom = true;
	rc = plot__finish_plot(c, p, &gp);
out:
	plot__buf_release(&data);
	return rc;
}
