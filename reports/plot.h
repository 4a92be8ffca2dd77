/*
 * plot.h -- gnuplot scripts, images and an HTML index from result folders.
 *
 * plot_dir() reads the CSVs a kvsim command left in one or more result
 * folders (requests.csv, timeseries.csv, summary.csv, capacity.csv,
 * capacity_points.csv, sweep.csv, compare.csv; absent files are skipped)
 * and writes into one output folder, for each plot NAME:
 *
 *   NAME.gp           a gnuplot script; rerun it there: `gnuplot NAME.gp`
 *   NAME*.dat         the transformed data it needs, tidy CSV with a header
 *                     (a CDF, a capacity knee, ...); scripts read run CSVs
 *                     such as timeseries.csv directly, by a relative path
 *   NAME.png NAME.svg the images, rendered by one `gnuplot` process
 *
 * then index.html: every image, its script and data, and the tables of
 * summary.csv (one column per run), capacity.csv and compare.csv.  The
 * plots, and when each is made, are listed in docs/plot.md.
 *
 * Every CSV column is found by its header name.  All files are written
 * under a temporary name and renamed; the scripts, data and index.html are
 * byte-identical for the same inputs and options (the images are
 * gnuplot's).  Cost: one pass over each CSV; what is kept in memory is
 * four doubles a request plus the small files; the CDF data files hold at
 * most about 2,000 points whatever the number of requests.
 *
 * Nothing here prints: messages go to `why`.  gnuplot (5.4 or later) is
 * looked up on PATH; its own error messages go to this process's stderr.
 */
#ifndef REPORTS_PLOT_H
#define REPORTS_PLOT_H

#include <stdbool.h>
#include <stddef.h>

enum plot_format {
	PLOT_PNG = 1u << 0,	/* pngcairo */
	PLOT_SVG = 1u << 1,
};

/* Options; all-zero is the default. */
struct plot_opts {
	unsigned formats;	/* PLOT_PNG | PLOT_SVG; 0: both */
	const char *out;	/* output folder (made if missing); NULL: the
				 * result folder when there is one, else
				 * DIRS[0]/plots */
	const char *title;	/* NULL: none; else prefixes every plot's title
				 * and heads index.html */
	bool no_run;		/* write scripts, data and index.html only */
};

/* Return values of plot_dir(). */
enum plot_status {
	PLOT_OK = 0,		/* done (images rendered unless no_run) */
	PLOT_NO_GNUPLOT = 1,	/* done without images: no gnuplot on PATH;
				 * `why` holds a note for the user */
	PLOT_EINPUT = 2,	/* bad input: a missing folder, a folder with
				 * no kvsim CSV, or a malformed CSV
				 * ("FILE:LINE: what") */
	PLOT_EFAIL = 3,		/* the output could not be written, or gnuplot
				 * failed (its messages are on stderr) or
				 * left an image incomplete */
};

/*
 * Plot the results in dirs[0..ndirs-1] (ndirs >= 1).  Latency CDFs overlay
 * the runs, one curve each, labelled by the run's policy (summary.csv, else
 * config.yaml), else the folder's name; the other plots are made per
 * folder (NAME_I for folder I, 1-based, when there are several).
 *
 * Returns an enum plot_status; `why` (whylen bytes, may be 0) receives the
 * message or note of a nonzero status and is "" on PLOT_OK.  On
 * PLOT_EINPUT nothing has been written; on PLOT_EFAIL some scripts and
 * data may have been, but no half-written file is left.  Files of an
 * earlier call that this one does not make again are left alone.
 */
int plot_dir(const char *const *dirs, size_t ndirs,
	     const struct plot_opts *o, char *why, size_t whylen);

/* The folder plot_dir() writes to, as given (not resolved): o->out, or
 * dirs[0], or dirs[0]/plots.  0, or -1 when it does not fit in len. */
int plot_out_dir(const char *const *dirs, size_t ndirs,
		 const struct plot_opts *o, char *buf, size_t len);

/* Whether an executable `gnuplot` is on PATH. */
bool plot_have_gnuplot(void);

/*
 * Remove from dir what plot_dir() writes for one `kvsim run` folder
 * (index.html and the run charts' scripts, data and images), so that a
 * run replacing an earlier one with --force and no plots does not leave
 * the earlier run's charts beside its reports.  Missing files are fine.
 */
void plot_forget_run(const char *dir);

#endif
