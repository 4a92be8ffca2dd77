/*
 * plot_int.h -- what the files of the plot module share (plot.c says which
 * file does what): the context of one plot_dir() call, the runs it read,
 * the plots it made, the growing string, the aggregated series, and the
 * functions one file calls in another (plot__name).  Nothing outside
 * reports/plot*.c includes it.
 */
#ifndef REPORTS_PLOT_INT_H
#define REPORTS_PLOT_INT_H

#include "reports/plot.h"
#include "util/csv.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define PLOT_CDF_STEPS	1000	/* CDF thinning resolution (plot_run.c) */
#define PLOT_TABLE_ROWS	200	/* rows of a CSV shown in index.html */
#define PLOT_MAX_FILES	8	/* data files one plot may link */
#define PLOT_MAX_BINS	200	/* bins of the throughput chart, at most */

struct buf {				/* a growing string (plot_buf.c) */
	char *p;
	size_t n, cap;
	bool oom;
};

enum { LAT_TTFT, LAT_TPOT, LAT_E2E, LAT_QUEUE, NLAT };

struct run {				/* one result folder */
	const char *dir;
	char *base;			/* the folder's own name */
	char *label;
	char rel[PATH_MAX];		/* from the output folder: "" or
					 * ".../" */
	double *lat[NLAT];
	size_t nlat[NLAT];
	bool has_req;
	/* timeseries.csv */
	bool has_ts;
	size_t ts_rows;
	double t_min, t_max, kv_max, count_max, tok_max;
	double (*tput)[3];		/* t_s, prompt_tok_s, gen_tok_s a row */
	struct csv_table sum, cap, capp, sweep, cmp;
};

struct plot {				/* one plot made (rendering, html) */
	char name[64];
	char heading[256];
	char files[PLOT_MAX_FILES][96];	/* its data files in the output
					 * folder */
	size_t nfiles;
};

struct ctx {
	const struct plot_opts *o;
	char *why;
	size_t whylen;
	struct run *runs;
	size_t nruns;
	char out[PATH_MAX];
	char out_real[PATH_MAX];
	struct plot *plots;
	size_t nplots, plotcap;
	long pid;
	bool dry;			/* make the plots, write nothing */
};

/*
 * Points (series, x, y) aggregated per (series, x): the mean, min and max
 * of y and the number of points; `ok` counts a 0/1 flag.  Series are
 * numbered in order of first appearance.
 */
struct pt {
	size_t series;
	double x, y;			/* y NaN: no value (a run stopped early,
					 * counted in the ok fraction only) */
	int ok;				/* 1, 0, or -1 when not given */
	bool stopped;			/* a run stopped early */
};

/* How plot__series() draws a set of series. */
struct series_look {
	const char *name, *heading;
	const char *xcol, *xlabel;	/* the x column and axis */
	const char *ycol, *ylabel;	/* the aggregated value and its axis */
	bool knee;			/* the data has meets_slo_fraction,
					 * no_value and stopped columns, and
					 * probes that missed the SLO or have
					 * no value are marked */
	const char *extra;		/* plot clauses after the series, or
					 * NULL (the SLO line) */
	double extra_y;			/* a y the range must hold, or 0 */
	const char *pre;		/* script lines before `plot`, or NULL
					 * (the answers' arrows) */
	double x_lo, x_hi;		/* an x span the range must hold; NaN:
					 * none */
};

struct series {
	char **label;
	size_t n;
	struct pt *pt;
	size_t npt, cap;
};

/* plot.c */
/* Put a message in c->why; returns status. */
int plot__fail(struct ctx *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int plot__oom(struct ctx *c);

/* plot_buf.c */
void plot__buf_puts(struct buf *b, const char *s);
void plot__buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void plot__buf_release(struct buf *b);
void plot__gp_str(struct buf *b, const char *s);
void plot__html_esc(struct buf *b, const char *s);
void plot__dat_label(struct buf *b, const char *s);
bool plot__contains_ci(const char *hay, const char *needle);

/* plot_data.c */
int plot__col_of(const struct csv_table *t, const char *name);
int plot__need_col(struct ctx *c, const struct csv_table *t, const char *name,
	int *col);
int plot__num(struct ctx *c, const char *path, unsigned long line,
	const char *col, const char *s, double *v);
const char *plot__cell(const struct csv_table *t, size_t row, int col);
bool plot__column_repeats(const struct csv_table *t, int col);
bool plot__column_varies(const struct csv_table *t, int col);
int plot__load_run(struct ctx *c, struct run *r);
int plot__unique_labels(struct ctx *c);
/* requests.csv's latency columns, in LAT_* order */
extern const char *const plot__lat_col[NLAT];

/* plot_gp.c */
int plot__mkdir_p(struct ctx *c, const char *dir);
int plot__write_file(struct ctx *c, const char *name, const struct buf *b);
void plot__rel_path(const char *from, const char *to, char *rel, size_t len);
struct plot *plot__add_plot(struct ctx *c, const char *name,
	const char *heading);
void plot__file(struct plot *p, const char *file);
void plot__gp_begin(struct ctx *c, struct buf *b, const struct plot *p);
void plot__gp_end(struct buf *b, const struct plot *p, const char *plot);
struct plot *plot__add_run_plot(struct ctx *c, size_t i, const char *name,
	const char *heading);
int plot__finish_plot(struct ctx *c, struct plot *p, struct buf *gp);
bool plot__find_gnuplot(char *buf, size_t len);
int plot__render(struct ctx *c, const char *gnuplot);

/* plot_run.c */
int plot__cdfs(struct ctx *c);
int plot__timeseries(struct ctx *c, size_t i);

/* plot_series.c */
int plot__cmp_pt(const void *a, const void *b);
void plot__series_release(struct series *s);
size_t plot__series_of(struct series *s, const char *label);
bool plot__series_add(struct series *s, size_t series, double x, double y,
	int ok, bool stopped);
void plot__log_tics(struct buf *b, char axis, double lo, double hi);
int plot__series(struct ctx *c, size_t i, struct series *s,
	const struct series_look *look);

/* plot_cap.c */
int plot__knee(struct ctx *c, size_t i);
int plot__capacity(struct ctx *c, size_t i);

/* plot_sweep.c */
int plot__sweep(struct ctx *c, size_t i);
int plot__compare(struct ctx *c, size_t i);

/* plot_html.c */
int plot__write_index(struct ctx *c, bool images);

#endif
