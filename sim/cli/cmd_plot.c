/*
 * cmd_plot.c -- `kvsim plot DIR... [--format png,svg] [--out DIR]
 * [--title T] [--no-run]`: gnuplot scripts, images and index.html from
 * result folders (reports/plot.h; docs/plot.md).
 *
 * stdout carries one line, the path of index.html; notes and errors go to
 * stderr.  Exit status: 0 ok (also when gnuplot is missing: the scripts are
 * written and a note says so), 2 bad usage or input, or output that could
 * not be written or rendered.
 */
#include "config.h"

#include "sim/cli/cmd_plot.h"
#include "sim/cli/opts.h"

#include "reports/plot.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int plot_main(int argc, char **argv);

static void
plot_usage(FILE *f)
{
	fprintf(f, "usage: kvsim plot DIR... [--format png,svg] [--out DIR] "
		"[--title T] [--no-run]\n\n"
		"Plots the results in DIR (requests.csv, timeseries.csv, "
		"summary.csv,\ncapacity.csv, capacity_points.csv, sweep.csv, "
		"compare.csv): a gnuplot\nscript, its data and PNG/SVG images "
		"per plot, and index.html.  Several\nDIRs overlay their "
		"latency CDFs.\n\n"
		"  --format LIST  png, svg or png,svg (default: both)\n"
		"  -o, --out DIR  where to write (default: DIR, or "
		"DIR/plots for several)\n"
		"  --title T      a title for the plots and the index\n"
		"  --no-run       write the scripts and data, do not run "
		"gnuplot\n");
}

static int
parse_formats(const char *s, unsigned *fm)
{
	*fm = 0;
	while (*s) {
		size_t n = strcspn(s, ",");
		if (n == 3 && strncmp(s, "png", 3) == 0)
			*fm |= PLOT_PNG;
		else if (n == 3 && strncmp(s, "svg", 3) == 0)
			*fm |= PLOT_SVG;
		else
			return -1;
		s += n;
		if (*s == ',' && *++s == '\0')
			return -1;
	}
	return *fm ? 0 : -1;
}

/* The value of --opt V or --opt=V at argv[*i]; NULL if it is not opt. */
static const char *
opt_value(int argc, char **argv, int *i, const char *lng, const char *shrt,
	  bool *missing)
{
	const char *a = argv[*i];
	size_t n = strlen(lng);

	*missing = false;
	if (strncmp(a, lng, n) == 0 && a[n] == '=')
		return a + n + 1;
	if (strcmp(a, lng) != 0 && !(shrt && strcmp(a, shrt) == 0))
		return NULL;
	if (*i + 1 >= argc) {
		*missing = true;
		return NULL;
	}
	return argv[++*i];
}

int
plot_main(int argc, char **argv)
{
	struct plot_opts o = { 0 };
	const char **dirs = calloc((size_t)argc, sizeof(*dirs));
	size_t ndirs = 0;
	bool opts = true;
	int rc = KVSIM_EXIT_USAGE;

	if (!dirs) {
		fprintf(stderr, "kvsim plot: out of memory\n");
		return KVSIM_EXIT_USAGE;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		bool missing;
		if (!opts || a[0] != '-' || a[1] == '\0') {
			dirs[ndirs++] = a;
			continue;
		}
		if (strcmp(a, "--") == 0) {
			opts = false;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			plot_usage(stdout);
			rc = KVSIM_EXIT_OK;
			goto out;
		} else if (strcmp(a, "--no-run") == 0) {
			o.no_run = true;
		} else if ((v = opt_value(argc, argv, &i, "--format", NULL,
					  &missing))) {
			if (parse_formats(v, &o.formats) != 0) {
				fprintf(stderr, "kvsim plot: --format %s: "
					"expected png, svg or png,svg\n", v);
				goto out;
			}
		} else if (!missing && (v = opt_value(argc, argv, &i, "--out",
						      "-o", &missing))) {
			o.out = v;
		} else if (!missing && (v = opt_value(argc, argv, &i,
						      "--title", NULL,
						      &missing))) {
			o.title = v;
		} else {
			if (missing)
				cli_missing_value("kvsim plot", a);
			else
				cli_bad_option("kvsim plot", a);
			goto out;
		}
	}
	if (!ndirs) {
		fprintf(stderr, "kvsim plot: no result folder given\n");
		plot_usage(stderr);
		goto out;
	}

	char why[PATH_MAX + 256], out[PATH_MAX];
	int st = plot_dir(dirs, ndirs, &o, why, sizeof(why));
	switch (st) {
	case PLOT_OK:
		break;
	case PLOT_NO_GNUPLOT:
		fprintf(stderr, "kvsim plot: note: %s\n", why);
		break;
	default:
		fprintf(stderr, "kvsim plot: %s\n", why);
		goto out;
	}
	if (plot_out_dir(dirs, ndirs, &o, out, sizeof(out)) != 0) {
		fprintf(stderr, "kvsim plot: output folder name too long\n");
		goto out;
	}
	printf("%s/index.html\n", out);
	rc = fflush(stdout) == 0 ? KVSIM_EXIT_OK : KVSIM_EXIT_USAGE;
out:
	free(dirs);
	return rc;
}
