/*
 * plot.c -- gnuplot scripts, images and an HTML index from result folders
 * (the contract is in plot.h; the plots are listed in docs/plot.md): the
 * entry point and its phases.
 *
 * Phases.  First every input CSV is read and checked (plot_data.c): small
 * files become tables of strings, requests.csv keeps four latencies a
 * request and timeseries.csv only its ranges, since the scripts read it
 * directly.  Then every plot is made once without writing (c->dry), which
 * checks the values of the tables; so bad input (PLOT_EINPUT) writes
 * nothing.  Then the scripts and their data are written (plot_run.c,
 * plot_cap.c, plot_sweep.c), one `gnuplot` process renders them all to
 * temporary image names that are renamed when it succeeds (plot_gp.c),
 * and index.html is written last (plot_html.c).
 *
 * Why gnuplot scripts and not images drawn here: the scripts are the
 * restylable artefact users asked for, and gnuplot's cairo and SVG
 * terminals draw better text than anything small we could write.  The
 * scripts read run CSVs by column name (`column('t_s')`, gnuplot 5.4's
 * `set datafile columnheaders`), so a reordered file still plots right.
 */
#define _XOPEN_SOURCE 700	/* realpath() */

#include "config.h"

#include "reports/plot_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int __attribute__((format(printf, 3, 4)))
plot__fail(struct ctx *c, int status, const char *fmt, ...)
{
	if (c->whylen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->why, c->whylen, fmt, ap);
		va_end(ap);
	}
	return status;
}

int
plot__oom(struct ctx *c)
{
	return plot__fail(c, PLOT_EFAIL, "out of memory");
}

/* ------------------------------------------------------------------ */

int
plot_out_dir(const char *const *dirs, size_t ndirs,
	     const struct plot_opts *o, char *buf, size_t len)
{
	int n;
	if (o && o->out)
		n = snprintf(buf, len, "%s", o->out);
	else if (ndirs > 1)
		n = snprintf(buf, len, "%s/plots", dirs[0]);
	else
		n = snprintf(buf, len, "%s", ndirs ? dirs[0] : ".");
	return n >= 0 && (size_t)n < len ? 0 : -1;
}

static void
release(struct ctx *c)
{
	for (size_t i = 0; i < c->nruns; i++) {
		struct run *r = &c->runs[i];
		for (int m = 0; m < NLAT; m++)
			free(r->lat[m]);
		free(r->base);
		free(r->label);
		free(r->tput);
		csv_table_release(&r->sum);
		csv_table_release(&r->cap);
		csv_table_release(&r->capp);
		csv_table_release(&r->sweep);
		csv_table_release(&r->cmp);
	}
	free(c->runs);
	free(c->plots);
}

/* Every plot: scripts and data (unless c->dry), and c->plots. */
static int
make_plots(struct ctx *c)
{
	int rc;

	if ((rc = plot__cdfs(c)) != PLOT_OK)
		return rc;
	for (size_t i = 0; i < c->nruns; i++)
		if ((rc = plot__timeseries(c, i)) || (rc = plot__knee(c, i)) ||
		    (rc = plot__capacity(c, i)) || (rc = plot__sweep(c, i)) ||
		    (rc = plot__compare(c, i)))
			return rc;
	return PLOT_OK;
}

static int
plot_all(struct ctx *c, const char *const *dirs, size_t ndirs)
{
	int rc;
	char gnuplot[PATH_MAX];

	if (!ndirs)
		return plot__fail(c, PLOT_EINPUT, "no result folder given");
	if (plot_out_dir(dirs, ndirs, c->o, c->out, sizeof(c->out)) != 0)
		return plot__fail(c, PLOT_EINPUT,
				  "output folder name too long");
	if (!(c->runs = calloc(ndirs, sizeof(*c->runs))))
		return plot__oom(c);
	c->nruns = ndirs;
	for (size_t i = 0; i < ndirs; i++) {
		c->runs[i].dir = dirs[i];
		if ((rc = plot__load_run(c, &c->runs[i])) != PLOT_OK)
			return rc;
	}
	if ((rc = plot__unique_labels(c)) != PLOT_OK)
		return rc;
	/* Every plot once without writing: bad values in the tables are
	 * found before any file is written. */
	c->dry = true;
	rc = make_plots(c);
	c->dry = false;
	c->nplots = 0;
	if (rc != PLOT_OK)
		return rc;

	/* From here on files are written. */
	if ((rc = plot__mkdir_p(c, c->out)) != PLOT_OK)
		return rc;
	if (!realpath(c->out, c->out_real))
		return plot__fail(c, PLOT_EFAIL, "%s: %s", c->out,
				  strerror(errno));
	for (size_t i = 0; i < ndirs; i++) {
		char real[PATH_MAX];
		if (!realpath(dirs[i], real))
			return plot__fail(c, PLOT_EFAIL, "%s: %s", dirs[i],
					  strerror(errno));
		plot__rel_path(c->out_real, real, c->runs[i].rel,
			       sizeof(c->runs[i].rel));
		if (strchr(c->runs[i].rel, '\''))
			return plot__fail(c, PLOT_EFAIL,
					  "%s: a folder name with a "
					  "quote cannot be named in a gnuplot "
					  "script", dirs[i]);
	}
	if ((rc = make_plots(c)) != PLOT_OK)
		return rc;

	bool images = false;
	if (!c->o->no_run && c->nplots) {
		if (!plot__find_gnuplot(gnuplot, sizeof(gnuplot))) {
			rc = plot__fail(c, PLOT_NO_GNUPLOT, "gnuplot not "
			    "found on PATH: wrote the scripts only (run "
			    "`gnuplot NAME.gp` in %s)", c->out);
		} else {
			if ((rc = plot__render(c, gnuplot)) != PLOT_OK)
				return rc;
			images = true;
		}
	}
	int wrc = plot__write_index(c, images);
	return wrc != PLOT_OK ? wrc : rc;
}

int
plot_dir(const char *const *dirs, size_t ndirs, const struct plot_opts *o,
	 char *why, size_t whylen)
{
	static const struct plot_opts defaults;
	char dummy[1];
	struct ctx c = {
		.o = o ? o : &defaults,
		.why = whylen ? why : dummy,
		.whylen = whylen ? whylen : sizeof(dummy),
		.pid = (long)getpid(),
	};

	c.why[0] = '\0';
	int rc = plot_all(&c, dirs, ndirs);
	release(&c);
	return rc;
}
