/*
 * plot.c -- gnuplot scripts, images and an HTML index from result folders
 * (the contract is in plot.h; the plots are listed in docs/plot.md).
 *
 * Phases.  First every input CSV is read and checked: small files become
 * tables of strings, requests.csv keeps four latencies a request and
 * timeseries.csv only its ranges, since the scripts read it directly.
 * Then every plot is made once without writing (c->dry), which checks the
 * values of the tables; so bad input (PLOT_EINPUT) writes nothing.  Then
 * the scripts and their data are written, one `gnuplot` process renders
 * them all to temporary image names that are renamed when it succeeds, and
 * index.html is written last.
 *
 * Why gnuplot scripts and not images drawn here: the scripts are the
 * restylable artefact users asked for, and gnuplot's cairo and SVG
 * terminals draw better text than anything small we could write.  The
 * scripts read run CSVs by column name (`column('t_s')`, gnuplot 5.4's
 * `set datafile columnheaders`), so a reordered file still plots right.
 *
 * CDFs are thinned: a point is kept when the fraction or the value has
 * moved by 1/1000 of its range since the last kept point, so a curve has
 * at most about 2,000 points whatever the number of requests.  Drawn
 * `with steps`, it is the exact empirical CDF to within 1/1000 in fraction
 * at every value, tails included.
 */
#define _XOPEN_SOURCE 700	/* realpath() */

#include "config.h"

#include "reports/plot.h"
#include "util/csv.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define PLOT_CDF_STEPS	1000	/* thinning resolution, see above */
#define PLOT_TABLE_ROWS	200	/* rows of a CSV shown in index.html */
#define PLOT_MAX_FILES	8	/* data files one plot may link */

/* ------------------------------------------------------------------ */
/* A growing string.  Out of memory is remembered and reported once.   */

struct buf {
	char *p;
	size_t n, cap;
	bool oom;
};

static void
buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void
buf_puts(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

static void __attribute__((format(printf, 2, 3)))
buf_printf(struct buf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	if ((size_t)n < sizeof(tmp)) {
		buf_add(b, tmp, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (!big) {
		b->oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	buf_add(b, big, (size_t)n);
	free(big);
}

static void
buf_release(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* A gnuplot single-quoted string: '' stands for ', control characters
 * become spaces (titles are shown with `noenhanced`, so _ ^ { } are
 * literal). */
static void
gp_str(struct buf *b, const char *s)
{
	buf_puts(b, "'");
	for (; *s; s++) {
		if (*s == '\'')
			buf_puts(b, "''");
		else if ((unsigned char)*s < 0x20)
			buf_puts(b, " ");
		else
			buf_add(b, s, 1);
	}
	buf_puts(b, "'");
}

static void
html_esc(struct buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': buf_puts(b, "&amp;"); break;
		case '<': buf_puts(b, "&lt;"); break;
		case '>': buf_puts(b, "&gt;"); break;
		case '"': buf_puts(b, "&quot;"); break;
		default: buf_add(b, s, 1);
		}
	}
}

/* A label for a field of our own .dat files: no separators, quotes or
 * control characters. */
static void
dat_label(struct buf *b, const char *s)
{
	for (; *s; s++) {
		char ch = *s;
		if ((ch == ',' || ch == ';') && s[1] == ' ')
			continue;	/* "a, b" -> "a b" */
		if (ch == ',' || ch == ';')
			ch = ' ';
		else if (ch == '"')
			ch = '\'';
		else if ((unsigned char)ch < 0x20)
			ch = ' ';
		buf_add(b, &ch, 1);
	}
}

static bool
contains_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);
	for (; *hay; hay++) {
		size_t i = 0;
		while (i < n && hay[i] &&
		       (hay[i] | 0x20) == (needle[i] | 0x20))
			i++;
		if (i == n)
			return true;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* Context and errors.                                                */


enum { LAT_TTFT, LAT_TPOT, LAT_E2E, LAT_QUEUE, NLAT };

struct run {				/* one result folder */
	const char *dir;
	char *base;			/* the folder's own name */
	char *label;
	char rel[PATH_MAX];		/* from the output folder, "" or ".../" */
	double *lat[NLAT];
	size_t nlat[NLAT];
	bool has_req;
	/* timeseries.csv */
	bool has_ts;
	size_t ts_rows;
	double t_min, t_max, kv_max, count_max, tok_max;
	struct csv_table sum, cap, capp, sweep, cmp;
};

struct plot {				/* one plot made (for rendering, html) */
	char name[64];
	char heading[256];
	char files[PLOT_MAX_FILES][96];	/* its data files in the output folder */
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

static int __attribute__((format(printf, 3, 4)))
fail(struct ctx *c, int status, const char *fmt, ...)
{
	if (c->whylen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->why, c->whylen, fmt, ap);
		va_end(ap);
	}
	return status;
}

static int
oom(struct ctx *c)
{
	return fail(c, PLOT_EFAIL, "out of memory");
}

/* ------------------------------------------------------------------ */
/* CSV errors and columns (the reading is util/csv.h's).               */

/* A reader error as a status and message, in plot's wording. */
static int
csv_fail(struct ctx *c, const char *path, const struct csv_error *e)
{
	switch (e->kind) {
	case CSV_ENOMEM:
		return oom(c);
	case CSV_EEMPTY:
		return fail(c, PLOT_EINPUT, "%s:1: empty file (no header row)",
			    path);
	case CSV_EUNTERMINATED:
		return fail(c, PLOT_EINPUT, "%s:%lu: unterminated quoted field",
			    path, e->record);
	case CSV_ETEXT_AFTER_QUOTE:
		return fail(c, PLOT_EINPUT, "%s:%lu: text after a quoted field",
			    path, e->line);
	case CSV_EWIDTH:
		return fail(c, PLOT_EINPUT, "%s:%lu: %zu fields, the header "
			    "has %zu", path, e->record, e->nfield, e->nhead);
	case CSV_EOPEN:
		return fail(c, PLOT_EINPUT, "%s: %s", path,
			    strerror(e->sys_errno));
	default:	/* a quote inside a field, a read error */
		return fail(c, PLOT_EINPUT, "%s:%lu: %s", path, e->line,
			    csv_what(e->kind));
	}
}

static int
col_of(const struct csv_table *t, const char *name)
{
	return (int)csv_table_col(t, name);
}

static int
no_col(struct ctx *c, const char *path, const char *name)
{
	return fail(c, PLOT_EINPUT, "%s:1: no column '%s'", path, name);
}

/* Column `name` of a table, or PLOT_EINPUT "FILE:1: no column". */
static int
need_col(struct ctx *c, const struct csv_table *t, const char *name,
	 int *col)
{
	*col = col_of(t, name);
	return *col < 0 ? no_col(c, t->path, name) : PLOT_OK;
}

/* A finite number in a field. */
static int
num(struct ctx *c, const char *path, unsigned long line, const char *col,
    const char *s, double *v)
{
	char *end;
	errno = 0;
	*v = strtod(s, &end);
	if (end == s || *end != '\0' || !isfinite(*v))
		return fail(c, PLOT_EINPUT, "%s:%lu: column '%s': '%s' is not "
			    "a finite number", path, line, col, s);
	return PLOT_OK;
}

/* ------------------------------------------------------------------ */
/* Tables.                                                            */

static const char *
cell(const struct csv_table *t, size_t row, int col)
{
	return t->row[row][col];
}

/* Whether two rows share a value of a column. */
static bool
column_repeats(const struct csv_table *t, int col)
{
	for (size_t r = 0; r < t->nrow; r++)
		for (size_t q = 0; q < r; q++)
			if (strcmp(cell(t, r, col), cell(t, q, col)) == 0)
				return true;
	return false;
}

/* Whether a column holds more than one value. */
static bool
column_varies(const struct csv_table *t, int col)
{
	for (size_t r = 1; r < t->nrow; r++)
		if (strcmp(cell(t, r, col), cell(t, 0, col)) != 0)
			return true;
	return false;
}

/* Open a CSV and read its header; PLOT_OK with v->head == NULL: absent. */
static int
open_csv(struct ctx *c, struct csv *v, const char *path)
{
	struct csv_error e;

	if (csv_open(v, path, &e) == KV_OK)
		return PLOT_OK;
	if (e.kind == CSV_EOPEN && e.sys_errno == ENOENT)
		return PLOT_OK;
	return csv_fail(c, path, &e);
}

/* Read dir/name whole into t; t->path == NULL when the file is absent. */
static int
table_load(struct ctx *c, const char *dir, const char *name,
	   struct csv_table *t)
{
	char path[PATH_MAX + 64];
	struct csv_error e;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (csv_table_read(t, path, &e) == KV_OK)
		return PLOT_OK;
	if (e.kind == CSV_EOPEN && e.sys_errno == ENOENT)
		return PLOT_OK;
	return csv_fail(c, path, &e);
}

/* ------------------------------------------------------------------ */
/* Reading one result folder.                                         */

static const char *const lat_col[NLAT] = {
	"ttft_s", "tpot_s", "e2e_s", "queue_s"
};

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int
load_requests(struct ctx *c, struct run *r)
{
	struct csv v;
	struct csv_error e;
	char path[PATH_MAX + 64];
	int col[NLAT], rc = PLOT_OK;
	size_t cap[NLAT] = { 0 };

	snprintf(path, sizeof(path), "%s/requests.csv", r->dir);
	if ((rc = open_csv(c, &v, path)) != PLOT_OK || !v.head)
		return rc;
	r->has_req = true;
	for (int m = 0; m < NLAT; m++)
		if ((col[m] = (int)csv_col(&v, lat_col[m])) < 0) {
			rc = no_col(c, path, lat_col[m]);
			goto out;
		}
	for (;;) {
		if (csv_next(&v, &e) != KV_OK) {
			rc = csv_fail(c, path, &e);
			break;
		}
		if (v.nfield == 0)
			break;
		for (int m = 0; m < NLAT; m++) {
			const char *s = v.field[col[m]];
			double x;
			if (*s == '\0')	/* e.g. TPOT of one output token */
				continue;
			if ((rc = num(c, path, v.line, lat_col[m], s, &x)))
				goto out;
			if (r->nlat[m] == cap[m]) {
				cap[m] = cap[m] ? 2 * cap[m] : 1024;
				double *p = realloc(r->lat[m],
						    cap[m] * sizeof(*p));
				if (!p) {
					rc = oom(c);
					goto out;
				}
				r->lat[m] = p;
			}
			r->lat[m][r->nlat[m]++] = x;
		}
	}
	for (int m = 0; m < NLAT; m++)
		if (r->nlat[m])
			qsort(r->lat[m], r->nlat[m], sizeof(double),
			      cmp_double);
out:
	csv_close(&v);
	return rc;
}

static const char *const ts_col[] = {
	"t_s", "kv_usage", "running", "waiting", "swapped", "prompt_tok_s",
	"gen_tok_s",
};
#define NTS (sizeof(ts_col) / sizeof(ts_col[0]))

static int
load_timeseries(struct ctx *c, struct run *r)
{
	struct csv v;
	struct csv_error e;
	char path[PATH_MAX + 64];
	int col[NTS], rc = PLOT_OK;

	snprintf(path, sizeof(path), "%s/timeseries.csv", r->dir);
	if ((rc = open_csv(c, &v, path)) != PLOT_OK || !v.head)
		return rc;
	r->has_ts = true;
	for (size_t k = 0; k < NTS; k++)
		if ((col[k] = (int)csv_col(&v, ts_col[k])) < 0) {
			rc = no_col(c, path, ts_col[k]);
			goto out;
		}
	for (;;) {
		double x[NTS];
		if (csv_next(&v, &e) != KV_OK) {
			rc = csv_fail(c, path, &e);
			break;
		}
		if (v.nfield == 0)
			break;
		for (size_t k = 0; k < NTS; k++)
			if ((rc = num(c, path, v.line, ts_col[k],
				      v.field[col[k]], &x[k])) != PLOT_OK)
				goto out;
		if (r->ts_rows == 0 || x[0] < r->t_min)
			r->t_min = x[0];
		if (r->ts_rows == 0 || x[0] > r->t_max)
			r->t_max = x[0];
		r->kv_max = fmax(r->kv_max, x[1]);
		r->count_max = fmax(r->count_max, fmax(x[2], fmax(x[3], x[4])));
		r->tok_max = fmax(r->tok_max, fmax(x[5], x[6]));
		r->ts_rows++;
	}
out:
	csv_close(&v);
	return rc;
}

/* config.yaml's top-level `policy:` value, or NULL. */
static char *
config_policy(const char *dir)
{
	char path[PATH_MAX + 64], *line = NULL, *res = NULL;
	size_t cap = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/config.yaml", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	while (!res && (n = getline(&line, &cap, f)) >= 0) {
		if (strncmp(line, "policy:", 7) != 0)
			continue;
		char *s = line + 7, *e;
		while (*s == ' ' || *s == '\t')
			s++;
		e = s + strlen(s);
		while (e > s && (e[-1] == '\n' || e[-1] == '\r' ||
				 e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		if (e - s >= 2 && (*s == '"' || *s == '\'') && e[-1] == *s) {
			e[-1] = '\0';
			s++;
		}
		if (*s)
			res = strdup(s);
	}
	free(line);
	fclose(f);
	return res;
}

static int
load_run(struct ctx *c, struct run *r)
{
	struct stat st;
	char real[PATH_MAX];
	int rc;

	if (stat(r->dir, &st) != 0)
		return fail(c, PLOT_EINPUT, "%s: %s", r->dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fail(c, PLOT_EINPUT, "%s: not a folder", r->dir);
	if (!realpath(r->dir, real))
		return fail(c, PLOT_EINPUT, "%s: %s", r->dir, strerror(errno));
	const char *b = strrchr(real, '/');
	b = b && b[1] ? b + 1 : real;
	if (!(r->base = strdup(b)))
		return oom(c);
	if ((rc = load_requests(c, r)) || (rc = load_timeseries(c, r)) ||
	    (rc = table_load(c, r->dir, "summary.csv", &r->sum)) ||
	    (rc = table_load(c, r->dir, "capacity.csv", &r->cap)) ||
	    (rc = table_load(c, r->dir, "capacity_points.csv", &r->capp)) ||
	    (rc = table_load(c, r->dir, "sweep.csv", &r->sweep)) ||
	    (rc = table_load(c, r->dir, "compare.csv", &r->cmp)))
		return rc;
	if (!r->has_req && !r->has_ts && !r->sum.path && !r->cap.path &&
	    !r->capp.path && !r->sweep.path && !r->cmp.path)
		return fail(c, PLOT_EINPUT, "%s: no kvsim results (requests.csv, "
			    "timeseries.csv, summary.csv, capacity.csv, "
			    "capacity_points.csv, sweep.csv or compare.csv)",
			    r->dir);
	/* The label: the policy, else the folder's name. */
	int pc = r->sum.path ? col_of(&r->sum, "policy") : -1;
	if (pc >= 0 && r->sum.nrow && *cell(&r->sum, 0, pc))
		r->label = strdup(cell(&r->sum, 0, pc));
	else if (!(r->label = config_policy(r->dir)))
		r->label = strdup(r->base);
	return r->label ? PLOT_OK : oom(c);
}

/* Labels that two runs share get the folder's name, then the position. */
static int
unique_labels(struct ctx *c)
{
	for (int pass = 0; pass < 2; pass++) {
		bool *dup = calloc(c->nruns, sizeof(*dup));
		if (!dup)
			return oom(c);
		for (size_t i = 0; i < c->nruns; i++)
			for (size_t j = 0; j < c->nruns; j++)
				if (i != j && strcmp(c->runs[i].label,
						     c->runs[j].label) == 0)
					dup[i] = true;
		for (size_t i = 0; i < c->nruns; i++) {
			if (!dup[i])
				continue;
			struct run *r = &c->runs[i];
			struct buf b = { 0 };
			if (pass == 0)
				buf_printf(&b, "%s (%s)", r->label, r->base);
			else
				buf_printf(&b, "%s #%zu", r->label, i + 1);
			if (b.oom) {
				free(dup);
				return oom(c);
			}
			free(r->label);
			r->label = b.p;
		}
		free(dup);
	}
	return PLOT_OK;
}

/* ------------------------------------------------------------------ */
/* Writing files.                                                     */

static int
mkdir_p(struct ctx *c, const char *dir)
{
	char p[PATH_MAX];
	struct stat st;

	if (strlen(dir) >= sizeof(p))
		return fail(c, PLOT_EFAIL, "%s: name too long", dir);
	strcpy(p, dir);
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char ch = *s;
		*s = '\0';
		if (mkdir(p, 0777) != 0 && errno != EEXIST)
			return fail(c, PLOT_EFAIL, "%s: %s", p, strerror(errno));
		*s = ch;
		if (!ch)
			break;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return fail(c, PLOT_EFAIL, "%s: not a folder", dir);
	return PLOT_OK;
}

/* out/name <- b, through a temporary name. */
static int
write_file(struct ctx *c, const char *name, const struct buf *b)
{
	char path[PATH_MAX + 64], tmp[PATH_MAX + 96];

	if (b->oom)
		return oom(c);
	if (c->dry)
		return PLOT_OK;
	snprintf(path, sizeof(path), "%s/%s", c->out, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp.%ld", c->out, name, c->pid);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return fail(c, PLOT_EFAIL, "%s: %s", tmp, strerror(errno));
	size_t n = b->n ? fwrite(b->p, 1, b->n, f) : 0;
	int err = n != b->n || ferror(f);
	if (fclose(f) != 0 || err) {
		int e = errno;
		unlink(tmp);
		return fail(c, PLOT_EFAIL, "%s: %s", tmp, strerror(e));
	}
	if (rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		return fail(c, PLOT_EFAIL, "%s: %s", path, strerror(e));
	}
	return PLOT_OK;
}

/* rel <- the path of `to` seen from `from` (both absolute), "" when they
 * are the same folder, else ending with '/'. */
static void
rel_path(const char *from, const char *to, char *rel, size_t len)
{
	size_t i = 0, common = 0;
	struct buf b = { 0 };

	while (from[i] && from[i] == to[i]) {
		if (from[i] == '/')
			common = i;
		i++;
	}
	if (from[i] == '\0' && (to[i] == '/' || to[i] == '\0'))
		common = i;
	else if (to[i] == '\0' && from[i] == '/')
		common = i;
	for (const char *s = from + common; *s; s++)
		if (*s == '/' && s[1])
			buf_puts(&b, "../");
	if (to[common] == '/' && to[common + 1]) {
		buf_puts(&b, to + common + 1);
		buf_puts(&b, "/");
	}
	snprintf(rel, len, "%s", b.p && !b.oom ? b.p : "");
	buf_release(&b);
}

static struct plot *
add_plot(struct ctx *c, const char *name, const char *heading)
{
	if (c->nplots == c->plotcap) {
		size_t cap = c->plotcap ? 2 * c->plotcap : 16;
		struct plot *p = realloc(c->plots, cap * sizeof(*p));
		if (!p)
			return NULL;
		c->plots = p;
		c->plotcap = cap;
	}
	struct plot *p = &c->plots[c->nplots++];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->heading, sizeof(p->heading), "%s", heading);
	return p;
}

static void
plot_file(struct plot *p, const char *file)
{
	if (p->nfiles < PLOT_MAX_FILES)
		snprintf(p->files[p->nfiles++], sizeof(p->files[0]), "%s",
			 file);
}

/* The top of every script. */
static void
gp_begin(struct ctx *c, struct buf *b, const struct plot *p)
{
	buf_printf(b, "# %s.gp -- %s (kvsim plot).\n", p->name, p->heading);
	buf_printf(b, "# Rerun in this folder: gnuplot %s.gp\n"
		   "# One format only: gnuplot -e \"formats='svg'\" %s.gp\n"
		   "# (suffix, when set, is appended to the image names.)\n",
		   p->name, p->name);
	buf_puts(b, "reset\n"
		 "if (!exists('formats')) formats = 'png svg'\n"
		 "if (!exists('suffix')) suffix = ''\n"
		 "set datafile separator ','\n"
		 "set datafile columnheaders\n"
		 "set grid\n"
		 "set title ");
	struct buf t = { 0 };
	if (c->o->title && *c->o->title)
		buf_printf(&t, "%s: ", c->o->title);
	buf_puts(&t, p->heading);
	gp_str(b, t.oom ? "" : t.p);
	buf_release(&t);
	buf_puts(b, "\n");
}

/* The render loop around a plot command (lines joined by ", \\\n"). */
static void
gp_end(struct buf *b, const struct plot *p, const char *plot)
{
	buf_puts(b, "do for [f in formats] {\n"
		 "\tif (f eq 'png') { set terminal pngcairo size 960,600 "
		 "noenhanced font ',11' }\n"
		 "\tif (f eq 'svg') { set terminal svg size 960,600 noenhanced "
		 "font 'sans,11' background '#ffffff' }\n"
		 "\tif (f ne 'png' && f ne 'svg') { print 'unknown format: '.f; "
		 "continue }\n");
	buf_printf(b, "\tset output '%s.'.f.suffix\n", p->name);
	buf_printf(b, "\tplot %s\n", plot);
	buf_puts(b, "\tunset output\n}\n");
}

/* A per-folder plot's name and heading: NAME_I and "HEADING: label"
 * when there are several folders. */
static struct plot *
add_run_plot(struct ctx *c, size_t i, const char *name, const char *heading)
{
	char n[64], h[256];
	if (c->nruns > 1) {
		snprintf(n, sizeof(n), "%s_%zu", name, i + 1);
		snprintf(h, sizeof(h), "%s: %s", heading, c->runs[i].label);
	} else {
		snprintf(n, sizeof(n), "%s", name);
		snprintf(h, sizeof(h), "%s", heading);
	}
	return add_plot(c, n, h);
}

static int
finish_plot(struct ctx *c, struct plot *p, struct buf *gp)
{
	char name[80];
	snprintf(name, sizeof(name), "%s.gp", p->name);
	int rc = write_file(c, name, gp);
	buf_release(gp);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The plots.                                                         */

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

	buf_printf(b, "%s,fraction\n%.9f,%.6f\n", col, v[0], 0.0);
	for (size_t i = 0; i < n; i++) {
		double f = (double)(i + 1) / (double)n;
		if (i + 1 < n && v[i + 1] == v[i])
			continue;	/* the top of a run of equal values */
		if (i + 1 < n && f - last_f < step_f &&
		    v[i] - last_v < step_v)
			continue;
		buf_printf(b, "%.9f,%.6f\n", v[i], f);
		last_v = v[i];
		last_f = f;
	}
}

static int
plot_cdfs(struct ctx *c)
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
		struct plot *p = add_plot(c, cdfs[m].name, cdfs[m].heading);
		if (!p)
			return oom(c);
		struct buf gp = { 0 }, cmd = { 0 };
		gp_begin(c, &gp, p);
		buf_printf(&gp, "set xlabel '%s'\nset ylabel 'fraction of "
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
			cdf_data(&d, lat_col[m], r->lat[m], r->nlat[m]);
			rc = write_file(c, name, &d);
			buf_release(&d);
			if (rc) {
				buf_release(&gp);
				buf_release(&cmd);
				return rc;
			}
			plot_file(p, name);
			if (cmd.n)
				buf_puts(&cmd, ", \\\n\t\t");
			buf_printf(&cmd, "'%s' using 1:2 with steps lw 2 title ",
				   name);
			gp_str(&cmd, r->label);
		}
		gp_end(&gp, p, cmd.oom ? "" : cmd.p);
		if (cmd.oom)
			gp.oom = true;
		buf_release(&cmd);
		if ((rc = finish_plot(c, p, &gp)) != PLOT_OK)
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
	buf_printf(b, "set xlabel 'simulated time (s)'\n"
		   "set xrange [%.9g:%.9g]\n", lo, hi);
}

static int
plot_timeseries(struct ctx *c, size_t i)
{
	struct run *r = &c->runs[i];
	struct plot *p;
	struct buf gp = { 0 }, data = { 0 };
	int rc;

	if (!r->ts_rows)
		return PLOT_OK;
	buf_puts(&data, "data = ");
	buf_printf(&data, "'%stimeseries.csv'", r->rel);	/* no quote in
								 * a path we
								 * made */
	if (!(p = add_run_plot(c, i, "kv_usage",
			       "KV cache usage and requests")))
		return oom(c);
	gp_begin(c, &gp, p);
	time_range(&gp, r);
	buf_printf(&gp, "set ylabel 'KV cache usage (fraction of blocks)'\n"
		   "set y2label 'requests'\n"
		   "set ytics nomirror\nset y2tics\n"
		   "set yrange [0:%.9g]\nset y2range [0:%.9g]\n"
		   "set key top left\n%s\n",
		   r->kv_max > 0 ? r->kv_max * 1.1 : 1.0,
		   r->count_max > 0 ? r->count_max * 1.1 : 1.0,
		   data.oom ? "" : data.p);
	gp_end(&gp, p, "data using (column('t_s')):(column('kv_usage')) "
	       "with lines lw 2 title 'KV usage' axes x1y1, \\\n"
	       "\t\tdata using (column('t_s')):(column('running')) "
	       "with steps title 'running' axes x1y2, \\\n"
	       "\t\tdata using (column('t_s')):(column('waiting')) "
	       "with steps title 'waiting' axes x1y2, \\\n"
	       "\t\tdata using (column('t_s')):(column('swapped')) "
	       "with steps title 'swapped' axes x1y2");
	if ((rc = finish_plot(c, p, &gp)) != PLOT_OK)
		goto out;

	if (!(p = add_run_plot(c, i, "throughput", "Throughput"))) {
		rc = oom(c);
		goto out;
	}
	gp_begin(c, &gp, p);
	time_range(&gp, r);
	buf_printf(&gp, "set ylabel 'tokens/s'\nset yrange [0:%.9g]\n"
		   "set key top left\n%s\n",
		   r->tok_max > 0 ? r->tok_max * 1.1 : 1.0,
		   data.oom ? "" : data.p);
	gp_end(&gp, p, "data using (column('t_s')):(column('prompt_tok_s')) "
	       "with steps lw 2 title 'prompt tokens/s', \\\n"
	       "\t\tdata using (column('t_s')):(column('gen_tok_s')) "
	       "with steps lw 2 title 'generated tokens/s'");
	if (data.oom)
		gp.oom = true;
	rc = finish_plot(c, p, &gp);
out:
	buf_release(&data);
	return rc;
}

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
};

static int
cmp_pt(const void *a, const void *b)
{
	const struct pt *p = a, *q = b;
	if (p->series != q->series)
		return p->series < q->series ? -1 : 1;
	return (p->x > q->x) - (p->x < q->x);
}

struct series {
	char **label;
	size_t n;
	struct pt *pt;
	size_t npt, cap;
};

static void
series_release(struct series *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->label[i]);
	free(s->label);
	free(s->pt);
	memset(s, 0, sizeof(*s));
}

/* The series number of a label, added when new; SIZE_MAX on no memory. */
static size_t
series_of(struct series *s, const char *label)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->label[i], label) == 0)
			return i;
	char **l = realloc(s->label, (s->n + 1) * sizeof(*l));
	if (!l)
		return SIZE_MAX;
	s->label = l;
	if (!(l[s->n] = strdup(label)))
		return SIZE_MAX;
	return s->n++;
}

static bool
series_add(struct series *s, size_t series, double x, double y, int ok)
{
	if (s->npt == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct pt *p = realloc(s->pt, cap * sizeof(*p));
		if (!p)
			return false;
		s->pt = p;
		s->cap = cap;
	}
	s->pt[s->npt++] = (struct pt){ series, x, y, ok };
	return true;
}

/*
 * Write the aggregate as CSV (series,label,XCOL,YCOL_mean,YCOL_min,
 * YCOL_max,points[,okcol]) and append one plot clause per series to cmd.
 * Returns the number of series with a point.
 */
static size_t
series_write(struct series *s, struct buf *d, struct buf *cmd,
	     const char *file, const char *xcol, const char *ycol,
	     const char *okcol)
{
	size_t nser = 0;

	qsort(s->pt, s->npt, sizeof(*s->pt), cmp_pt);
	buf_printf(d, "series,label,%s,%s_mean,%s_min,%s_max,points", xcol,
		   ycol, ycol, ycol);
	if (okcol)
		buf_printf(d, ",%s", okcol);
	buf_puts(d, "\n");
	for (size_t i = 0; i < s->npt;) {
		size_t j = i, ok = 0, ny = 0;
		double sum = 0, lo = NAN, hi = NAN;
		while (j < s->npt && s->pt[j].series == s->pt[i].series &&
		       s->pt[j].x == s->pt[i].x) {
			if (!isnan(s->pt[j].y)) {
				sum += s->pt[j].y;
				lo = fmin(lo, s->pt[j].y);
				hi = fmax(hi, s->pt[j].y);
				ny++;
			}
			ok += s->pt[j].ok > 0;
			j++;
		}
		buf_printf(d, "%zu,", s->pt[i].series + 1);
		dat_label(d, s->label[s->pt[i].series]);
		if (ny > 0)
			buf_printf(d, ",%.9g,%.9g,%.9g,%.9g,%zu", s->pt[i].x,
				   sum / (double)ny, lo, hi, j - i);
		else	/* gnuplot skips NaN */
			buf_printf(d, ",%.9g,NaN,NaN,NaN,%zu", s->pt[i].x,
				   j - i);
		if (okcol)
			buf_printf(d, ",%.6f", (double)ok / (double)(j - i));
		buf_puts(d, "\n");
		i = j;
	}
	for (size_t k = 0; k < s->n; k++) {
		bool any = false;
		for (size_t i = 0; i < s->npt && !any; i++)
			any = s->pt[i].series == k;
		if (!any)
			continue;
		if (cmd->n)
			buf_puts(cmd, ", \\\n\t\t");
		buf_printf(cmd, "'%s' using (column('series') == %zu ? "
			   "column('%s') : NaN):(column('%s_mean')):"
			   "(column('%s_min')):(column('%s_max')) with "
			   "yerrorlines lw 2 title ", file, k + 1, xcol, ycol,
			   ycol, ycol);
		gp_str(cmd, s->label[k]);
		nser++;
	}
	return nser;
}

/* A plot of aggregated series, log y: the capacity knee, a sweep. */
static int
plot_series(struct ctx *c, size_t i, struct series *s, const char *name,
	    const char *heading, const char *xcol, const char *xlabel,
	    const char *okcol, const char *extra, double extra_y)
{
	struct buf d = { 0 }, cmd = { 0 }, gp = { 0 };
	char file[96];
	struct plot *p;
	int rc;
	double x0, x1, y0, y1;

	if (!(p = add_run_plot(c, i, name, heading)))
		return oom(c);
	snprintf(file, sizeof(file), "%s.dat", p->name);
	if (!series_write(s, &d, &cmd, file, xcol, "ttft_p99_s", okcol)) {
		c->nplots--;
		rc = PLOT_OK;
		goto out;
	}
	if (extra)
		buf_printf(&cmd, ", \\\n\t\t%s", extra);
	if ((rc = write_file(c, file, &d)) != PLOT_OK)
		goto out;
	plot_file(p, file);
	/* explicit ranges: gnuplot warns about a range of one value (fmin
	 * and fmax pass over the NaN of runs without a value) */
	x0 = x1 = s->pt[0].x;
	y0 = y1 = s->pt[0].y;
	for (size_t k = 1; k < s->npt; k++) {
		x0 = fmin(x0, s->pt[k].x);
		x1 = fmax(x1, s->pt[k].x);
		y0 = fmin(y0, s->pt[k].y);
		y1 = fmax(y1, s->pt[k].y);
	}
	if (isnan(y0)) {
		y0 = extra_y > 0 ? extra_y : 1;
		y1 = y0;
	}
	if (extra_y > 0) {
		y0 = fmin(y0, extra_y);
		y1 = fmax(y1, extra_y);
	}
	double pad = x1 > x0 ? 0.05 * (x1 - x0) : x0 != 0 ? 0.1 * fabs(x0) : 1;
	gp_begin(c, &gp, p);
	buf_printf(&gp, "set logscale y\nset xlabel '%s'\n"
		   "set ylabel 'p99 TTFT (s)'\nset key top left\n"
		   "set xrange [%.9g:%.9g]\nset yrange [%.9g:%.9g]\n", xlabel,
		   x0 - pad, x1 + pad, y0 / 1.5, y1 * 1.5);
	gp_end(&gp, p, cmd.oom ? "" : cmd.p);
	if (cmd.oom)
		gp.oom = true;
	rc = finish_plot(c, p, &gp);
out:
	buf_release(&d);
	buf_release(&cmd);
	buf_release(&gp);
	return rc;
}

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
	buf_printf(&title, "SLO: %s <= %.9g s", what, x);
	buf_printf(b, "%.9g with lines dt 2 lw 2 lc rgb '#c00000' title ", x);
	gp_str(b, title.oom ? "SLO" : title.p);
	buf_release(&title);
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
	int sc = col_of(t, "slo");
	int m = col_of(t, "slo_metric");
	int v = col_of(t, "slo_value_s");
	int q = col_of(t, "slo_quantile");

	for (size_t r = 0; r < t->nrow; r++) {
		char *end;
		double x;
		if (sc >= 0) {
			const char *it = cell(t, r, sc);
			while (*it) {
				size_t n = strcspn(it, ";");
				char one[128], stat[32];
				snprintf(one, sizeof(one), "%.*s", (int)n, it);
				char *colon = strchr(one, ':');
				char *le = strstr(one, "<=");
				if (colon && le && le > colon &&
				    contains_ci(one, "ttft")) {
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
		x = strtod(cell(t, r, v), &end);
		if (!contains_ci(cell(t, r, m), "ttft") || *end ||
		    end == cell(t, r, v) || !(x > 0) || !isfinite(x) ||
		    (q >= 0 && !is_p99(cell(t, r, q))))
			continue;
		char what[160];
		snprintf(what, sizeof(what), "%s p99", cell(t, r, m));
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
		int c = col_of(t, keys[k]);
		if (c < 0 || !column_varies(t, c))
			continue;
		if (b->n > n0)
			buf_puts(b, ", ");
		if (names)
			buf_printf(b, "%s=", keys[k]);
		buf_puts(b, cell(t, row, c));
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
	int a = col_of(t, "across");
	if (a >= 0 && *cell(t, r, a) && column_varies(t, a))
		buf_puts(b, cell(t, r, a));
	else
		varying(t, r, cap_keys, NCAP_KEYS, false, b);
}

/* A knee series' label: the config_id, and what capacity.csv says makes
 * that configuration differ from the others. */
static void
knee_label(const struct csv_table *cap, const char *id, struct buf *b)
{
	buf_puts(b, id);
	int c = cap->path ? col_of(cap, "config_id") : -1;
	for (size_t r = 0; c >= 0 && r < cap->nrow; r++) {
		if (strcmp(cell(cap, r, c), id) != 0)
			continue;
		struct buf v = { 0 };
		cap_describe(cap, r, &v);
		if (v.n && !v.oom)
			buf_printf(b, ": %s", v.p);
		buf_release(&v);
		return;
	}
}

static int
plot_knee(struct ctx *c, size_t i)
{
	const struct csv_table *t = &c->runs[i].capp;
	struct series s = { 0 };
	struct buf slo = { 0 };
	int cid, cq, cy, rc, cok;

	if (!t->path)
		return PLOT_OK;
	if ((rc = need_col(c, t, "config_id", &cid)) ||
	    (rc = need_col(c, t, "qps", &cq)) ||
	    (rc = need_col(c, t, "ttft_p99_s", &cy)))
		return rc;
	cok = col_of(t, "meets_slo");
	for (size_t r = 0; r < t->nrow; r++) {
		double x, y, ok = -1;
		const char *ys = cell(t, r, cy);
		if ((rc = num(c, t->path, t->line[r], "qps", cell(t, r, cq),
			      &x)))
			goto out;
		if (cok >= 0 && *cell(t, r, cok) &&
		    (rc = num(c, t->path, t->line[r], "meets_slo",
			      cell(t, r, cok), &ok)))
			goto out;
		/* an empty or infinite p99 (a run stopped early, a
		 * saturated point) has no place on a log axis, but its
		 * verdict counts in the meets_slo fraction */
		if (*ys == '\0' || contains_ci(ys, "inf")) {
			if (ok < 0)
				continue;
			y = NAN;
		} else {
			if ((rc = num(c, t->path, t->line[r], "ttft_p99_s",
				      ys, &y)))
				goto out;
			if (!(y > 0))
				continue;
		}
		struct buf l = { 0 };
		knee_label(&c->runs[i].cap, cell(t, r, cid), &l);
		size_t k = l.oom ? SIZE_MAX : series_of(&s, l.p);
		buf_release(&l);
		if (k == SIZE_MAX || !series_add(&s, k, x, y, (int)ok)) {
			rc = oom(c);
			goto out;
		}
	}
	double slo_s = c->runs[i].cap.path ? slo_line(&c->runs[i].cap, &slo)
		       : 0;
	rc = plot_series(c, i, &s, "capacity_knee", "Capacity knee: p99 TTFT "
			 "vs offered load", "qps", "offered load (requests/s)",
			 "meets_slo_fraction", slo.n && !slo.oom ? slo.p : NULL,
			 slo_s);
out:
	series_release(&s);
	buf_release(&slo);
	return rc;
}

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
		if ((c = col_of(t, rate_cols[k])) >= 0 &&
		    column_varies(t, c))
			return c;
	for (size_t k = 0; k < t->ncol; k++) {
		const char *last = strrchr(t->head[k], '.');
		if (last && (strcmp(last, ".rate") == 0 ||
			     strcmp(last, ".target_rate") == 0 ||
			     strcmp(last, ".qps") == 0) &&
		    column_varies(t, (int)k))
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
	if (contains_ci(name, "seed") || strcmp(name, "point_index") == 0 ||
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
	if ((rc = write_file(c, file, d)) != PLOT_OK)
		return rc;
	plot_file(p, file);
	gp_begin(c, &gp, p);
	buf_puts(&gp, "set ylabel ");
	gp_str(&gp, ylabel);
	if (xlabel) {
		buf_puts(&gp, "\nset xlabel ");
		gp_str(&gp, xlabel);
	}
	buf_printf(&gp, "\nset xrange [-0.6:%.1f]\nset yrange [%.9g:%.9g]\n"
		   "set xzeroaxis lt -1\nset style fill solid 0.7 border -1\n"
		   "set boxwidth 0.7\n", (double)n - 0.4,
		   lo < 0 ? lo - 0.1 * (hi - lo) : lo, hi + 0.1 * (hi - lo));
	/* many bars (a sweep's configurations times the metrics): upright
	 * labels in a smaller font, with the room they need below */
	if (n > 16)
		buf_puts(&gp, "set xtics rotate by 90 right font ',7'\n"
			 "set bmargin 16\n");
	else
		buf_puts(&gp, "set xtics rotate by 30 right\n");
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "'%s' using 0:2:(column('rgb')):xtic(1) "
		 "with boxes lc rgb variable notitle%s", file, err ?
		 ", \\\n\t\t'' using 0:2:3:4 with yerrorbars lc rgb '#333333' "
		 "pointsize 0 notitle" : "");
	gp_end(&gp, p, cmd);
	return finish_plot(c, p, &gp);
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
		    !column_varies(t, (int)k))
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
			buf_printf(l, "%s%s=%s", l->n ? ", " : "",
				   dot ? dot + 1 : name, cell(t, r, (int)k));
		else if (r == SIZE_MAX)		/* the names only */
			buf_printf(l, "%s%s", l->n ? " / " : "",
				   dot ? dot + 1 : name);
		else
			buf_printf(l, "%s%s", l->n ? " / " : "",
				   cell(t, r, (int)k));
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
		const char *ys = cell(t, r, cy);
		if (*ys == '\0' || contains_ci(ys, "inf"))
			continue;
		if ((rc = num(c, t->path, t->line[r], "ttft_p99_s", ys, &y)))
			goto out;
		struct buf l = { 0 };
		sweep_label(t, r, -1, false, &l);
		/* nothing but the seed varies: one configuration, one bar
		 * over its seeds */
		if (!l.n)
			buf_puts(&l, "all points");
		size_t k = l.oom ? SIZE_MAX : series_of(&s, l.p);
		buf_release(&l);
		if (k == SIZE_MAX || !series_add(&s, k, 0, y, -1)) {
			rc = oom(c);
			goto out;
		}
	}
	if (!(p = add_run_plot(c, i, "sweep_ttft", "Sweep: p99 TTFT per "
			       "configuration"))) {
		rc = oom(c);
		goto out;
	}
	snprintf(file, sizeof(file), "%s.dat", p->name);
	buf_puts(&d, "label,ttft_p99_s_mean,ttft_p99_s_min,ttft_p99_s_max,"
		 "points,rgb\n");
	qsort(s.pt, s.npt, sizeof(*s.pt), cmp_pt);
	for (size_t a = 0; a < s.npt;) {
		size_t b = a;
		double sum = 0, lo = s.pt[a].y, up = s.pt[a].y;
		for (; b < s.npt && s.pt[b].series == s.pt[a].series; b++) {
			sum += s.pt[b].y;
			lo = fmin(lo, s.pt[b].y);
			up = fmax(up, s.pt[b].y);
		}
		dat_label(&d, s.label[s.pt[a].series]);
		buf_printf(&d, ",%.9g,%.9g,%.9g,%zu,%ld\n", sum / (double)(b - a),
			   lo, up, b - a, 0x4a78b0L);
		hi = fmax(hi, up);
		a = b;
	}
	struct buf xl = { 0 };
	sweep_label(t, SIZE_MAX, -1, false, &xl);
	rc = bars(c, p, file, &d, s.n, "p99 TTFT (s)", xl.n && !xl.oom ?
		  xl.p : NULL, 0, hi, true);
	buf_release(&xl);
out:
	series_release(&s);
	buf_release(&d);
	return rc;
}

static int
plot_sweep(struct ctx *c, size_t i)
{
	const struct csv_table *t = &c->runs[i].sweep;
	struct series s = { 0 };
	int rate = -1, cy, rc = PLOT_OK;

	if (!t->path || (cy = col_of(t, "ttft_p99_s")) < 0)
		return PLOT_OK;
	if ((rate = rate_col(t)) < 0)
		return plot_sweep_bars(c, i, cy);
	for (size_t r = 0; r < t->nrow; r++) {
		char *end;
		double x = strtod(cell(t, r, rate), &end), y;
		const char *ys = cell(t, r, cy);
		/* a point without a numeric rate (the trace's own) is not
		 * on this plot */
		if (end == cell(t, r, rate) || *end || !isfinite(x))
			continue;
		if (*ys == '\0' || contains_ci(ys, "inf"))
			continue;
		if ((rc = num(c, t->path, t->line[r], "ttft_p99_s", ys, &y)))
			goto out;
		if (!(y > 0))
			continue;
		struct buf l = { 0 };
		sweep_label(t, r, rate, true, &l);
		size_t ser = l.oom ? SIZE_MAX :
			series_of(&s, l.n ? l.p : "all points");
		buf_release(&l);
		if (ser == SIZE_MAX || !series_add(&s, ser, x, y, -1)) {
			rc = oom(c);
			goto out;
		}
	}
	rc = plot_series(c, i, &s, "sweep_ttft", "Sweep: p99 TTFT vs rate",
			 t->head[rate], t->head[rate], NULL, NULL, 0);
out:
	series_release(&s);
	return rc;
}

static int
plot_capacity(struct ctx *c, size_t i)
{
	const struct csv_table *t = &c->runs[i].cap;
	struct buf d = { 0 }, gp = { 0 };
	struct plot *p;
	int cg, cv, clo, chi, cid, rc;
	double ymax = 0;

	if (!t->path || !t->nrow)
		return PLOT_OK;
	if ((rc = need_col(c, t, "gpu", &cg)) ||
	    (rc = need_col(c, t, "max_qps_under_slo",
			   &cv)))
		return rc;
	clo = col_of(t, "max_qps_min");
	chi = col_of(t, "max_qps_max");
	cid = col_of(t, "config_id");
	bool bars = clo >= 0 && chi >= 0;
	bool repeat = column_repeats(t, cg);
	if (!(p = add_run_plot(c, i, "capacity_gpu",
			       "Capacity per GPU: max request rate under the "
			       "SLO")))
		return oom(c);
	char file[96];
	snprintf(file, sizeof(file), "%s.dat", p->name);
	buf_puts(&d, "label,max_qps_under_slo,max_qps_min,max_qps_max\n");
	for (size_t r = 0; r < t->nrow; r++) {
		double v[3] = { 0, 0, 0 };
		int cols[3] = { cv, clo, chi };
		const char *names[3] = { "max_qps_under_slo", "max_qps_min",
					 "max_qps_max" };
		for (int k = 0; k < 3; k++) {
			if (cols[k] < 0 || *cell(t, r, cols[k]) == '\0') {
				v[k] = v[0];	/* none met: 0 */
				continue;
			}
			if ((rc = num(c, t->path, t->line[r], names[k],
				      cell(t, r, cols[k]), &v[k])))
				goto out;
		}
		ymax = fmax(ymax, fmax(v[0], v[2]));
		dat_label(&d, cell(t, r, cg));
		if (repeat) {
			/* several rows of one GPU: say what differs */
			struct buf l = { 0 };
			cap_describe(t, r, &l);
			if (!l.n && cid >= 0)
				buf_puts(&l, cell(t, r, cid));
			if (!l.n)
				buf_printf(&l, "#%zu", r + 1);
			buf_puts(&d, " (");
			dat_label(&d, l.oom ? "" : l.p);
			buf_puts(&d, ")");
			buf_release(&l);
		}
		buf_printf(&d, ",%.9g,%.9g,%.9g\n", v[0], v[1], v[2]);
	}
	if ((rc = write_file(c, file, &d)) != PLOT_OK)
		goto out;
	plot_file(p, file);
	gp_begin(c, &gp, p);
	buf_printf(&gp, "set ylabel 'requests/s'\nset yrange [0:%.9g]\n"
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
	gp_end(&gp, p, cmd);
	rc = finish_plot(c, p, &gp);
out:
	buf_release(&d);
	buf_release(&gp);
	return rc;
}

static int
plot_compare(struct ctx *c, size_t i)
{
	const struct csv_table *t = &c->runs[i].cmp;
	struct buf d = { 0 };
	struct plot *p;
	int cm, cd, ct, cv, rc;
	double lo = 0, hi = 0;
	size_t n = 0;

	if (!t->path)
		return PLOT_OK;
	if ((rc = need_col(c, t, "metric", &cm)) ||
	    (rc = need_col(c, t, "delta_pct", &cd)))
		return rc;
	/* the group a metric belongs to: kvsim compare's `config`, or a
	 * trace suite's `trace`, when there are several */
	ct = col_of(t, "config");
	if (ct < 0 || !column_varies(t, ct))
		ct = col_of(t, "trace");
	cv = col_of(t, "verdict");
	bool traces = ct >= 0 && column_varies(t, ct);
	if (!(p = add_run_plot(c, i, "compare_delta",
			       "Candidate vs baseline: change per metric")))
		return oom(c);
	char file[96];
	snprintf(file, sizeof(file), "%s.dat", p->name);
	buf_puts(&d, "label,delta_pct,verdict,rgb\n");
	for (size_t r = 0; r < t->nrow; r++) {
		double x;
		const char *v = cv >= 0 ? cell(t, r, cv) : "";
		const char *ds = cell(t, r, cd);
		/* no delta (a zero baseline), or an infinite one: no bar */
		if (*ds == '\0' || contains_ci(ds, "inf"))
			continue;
		if ((rc = num(c, t->path, t->line[r], "delta_pct",
			      cell(t, r, cd), &x)))
			goto out;
		long rgb = 0x4a78b0;
		if (contains_ci(v, "regress") || contains_ci(v, "fail") ||
		    contains_ci(v, "worse"))
			rgb = 0xc00000;
		else if (contains_ci(v, "improv") || contains_ci(v, "better"))
			rgb = 0x2a7f2a;
		if (traces) {
			dat_label(&d, cell(t, r, ct));
			buf_puts(&d, ":");
		}
		dat_label(&d, cell(t, r, cm));
		buf_puts(&d, ",");
		buf_printf(&d, "%.9g,", x);
		dat_label(&d, *v ? v : "-");
		buf_printf(&d, ",%ld\n", rgb);
		lo = fmin(lo, x);
		hi = fmax(hi, x);
		n++;
	}
	rc = bars(c, p, file, &d, n, "candidate vs baseline (%)", NULL, lo,
		  hi, false);
out:
	buf_release(&d);
	return rc;
}

/* ------------------------------------------------------------------ */
/* index.html                                                         */

static void
html_table(struct buf *b, const struct csv_table *t)
{
	buf_puts(b, "<table>\n<tr>");
	for (size_t k = 0; k < t->ncol; k++) {
		buf_puts(b, "<th>");
		html_esc(b, t->head[k]);
		buf_puts(b, "</th>");
	}
	buf_puts(b, "</tr>\n");
	for (size_t r = 0; r < t->nrow && r < PLOT_TABLE_ROWS; r++) {
		buf_puts(b, "<tr>");
		for (size_t k = 0; k < t->ncol; k++) {
			buf_puts(b, "<td>");
			html_esc(b, cell(t, r, (int)k));
			buf_puts(b, "</td>");
		}
		buf_puts(b, "</tr>\n");
	}
	buf_puts(b, "</table>\n");
	if (t->nrow > PLOT_TABLE_ROWS)
		buf_printf(b, "<p>First %d of %zu rows.</p>\n",
			   PLOT_TABLE_ROWS, t->nrow);
}

/* summary.csv of every run: one row per column, one column per run. */
static void
html_summary(struct ctx *c, struct buf *b)
{
	size_t nsum = 0;
	for (size_t i = 0; i < c->nruns; i++)
		nsum += c->runs[i].sum.path && c->runs[i].sum.nrow;
	if (!nsum)
		return;
	buf_puts(b, "<h2 id=\"summary\">Summary</h2>\n<table>\n<tr><th>"
		 "</th>");
	for (size_t i = 0; i < c->nruns; i++) {
		if (!c->runs[i].sum.path || !c->runs[i].sum.nrow)
			continue;
		buf_puts(b, "<th>");
		html_esc(b, c->runs[i].label);
		buf_puts(b, "</th>");
	}
	buf_puts(b, "</tr>\n");
	/* columns in order of first appearance over the runs */
	for (size_t i = 0; i < c->nruns; i++) {
		const struct csv_table *t = &c->runs[i].sum;
		for (size_t k = 0; t->path && t->nrow && k < t->ncol; k++) {
			bool seen = false;
			for (size_t j = 0; j < i && !seen; j++)
				seen = c->runs[j].sum.path &&
				       c->runs[j].sum.nrow &&
				       col_of(&c->runs[j].sum, t->head[k]) >= 0;
			if (seen)
				continue;
			buf_puts(b, "<tr><td>");
			html_esc(b, t->head[k]);
			buf_puts(b, "</td>");
			for (size_t j = 0; j < c->nruns; j++) {
				const struct csv_table *u = &c->runs[j].sum;
				if (!u->path || !u->nrow)
					continue;
				int col = col_of(u, t->head[k]);
				buf_puts(b, "<td>");
				html_esc(b, col >= 0 ? cell(u, 0, col) : "");
				buf_puts(b, "</td>");
			}
			buf_puts(b, "</tr>\n");
		}
	}
	buf_puts(b, "</table>\n");
}

static int
write_index(struct ctx *c, bool images)
{
	struct buf b = { 0 };
	const char *title = c->o->title && *c->o->title ? c->o->title :
		"kvsim plots";
	unsigned fm = c->o->formats ? c->o->formats : PLOT_PNG | PLOT_SVG;
	const char *show = fm & PLOT_SVG ? "svg" : "png";

	buf_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
		 "<meta charset=\"utf-8\">\n<title>");
	html_esc(&b, title);
	buf_puts(&b, "</title>\n<style>\n"
		 "body { font-family: sans-serif; margin: 1.5em auto; "
		 "max-width: 1000px; padding: 0 1em; }\n"
		 "img { max-width: 100%; height: auto; border: 1px solid "
		 "#ddd; }\n"
		 "table { border-collapse: collapse; font-size: 0.85em; }\n"
		 "th, td { border: 1px solid #ccc; padding: 2px 6px; "
		 "text-align: right; }\n"
		 "th { background: #f2f2f2; }\n"
		 "td:first-child { text-align: left; }\n"
		 "</style>\n</head>\n<body>\n<h1>");
	html_esc(&b, title);
	buf_puts(&b, "</h1>\n<p>Runs:</p>\n<ul>\n");
	for (size_t i = 0; i < c->nruns; i++) {
		buf_puts(&b, "<li><b>");
		html_esc(&b, c->runs[i].label);
		buf_puts(&b, "</b>: ");
		html_esc(&b, *c->runs[i].rel ? c->runs[i].rel : "./");
		buf_puts(&b, "</li>\n");
	}
	buf_puts(&b, "</ul>\n");
	if (!images && c->nplots)
		buf_puts(&b, "<p>Not rendered: run <code>gnuplot NAME.gp"
			 "</code> in this folder for each script below.</p>\n");
	for (size_t k = 0; k < c->nplots; k++) {
		const struct plot *p = &c->plots[k];
		buf_printf(&b, "<h2 id=\"%s\">", p->name);
		html_esc(&b, p->heading);
		buf_puts(&b, "</h2>\n<p>");
		if (images) {
			buf_printf(&b, "<a href=\"%s.%s\"><img src=\"%s.%s\" "
				   "alt=\"", p->name, show, p->name, show);
			html_esc(&b, p->heading);
			buf_puts(&b, "\"></a><br>\n");
			if (fm & PLOT_PNG)
				buf_printf(&b, "<a href=\"%s.png\">PNG</a> | ",
					   p->name);
			if (fm & PLOT_SVG)
				buf_printf(&b, "<a href=\"%s.svg\">SVG</a> | ",
					   p->name);
		}
		buf_printf(&b, "<a href=\"%s.gp\">gnuplot script</a>",
			   p->name);
		for (size_t f = 0; f < p->nfiles; f++)
			buf_printf(&b, " | <a href=\"%s\">%s</a>", p->files[f],
				   p->files[f]);
		buf_puts(&b, "</p>\n");
	}
	html_summary(c, &b);
	for (size_t i = 0; i < c->nruns; i++) {
		const struct csv_table *ts[3] = { &c->runs[i].cap,
					      &c->runs[i].sweep,
					      &c->runs[i].cmp };
		const char *names[3] = { "capacity.csv", "sweep.csv",
					 "compare.csv" };
		for (int k = 0; k < 3; k++) {
			if (!ts[k]->path)
				continue;
			buf_printf(&b, "<h2>%s", names[k]);
			if (c->nruns > 1) {
				buf_puts(&b, ": ");
				html_esc(&b, c->runs[i].label);
			}
			buf_puts(&b, "</h2>\n");
			html_table(&b, ts[k]);
		}
	}
	buf_puts(&b, "</body>\n</html>\n");
	int rc = write_file(c, "index.html", &b);
	buf_release(&b);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Running gnuplot.                                                   */

/* The path of an executable gnuplot on PATH into buf; false if none. */
static bool
find_gnuplot(char *buf, size_t len)
{
	const char *path = getenv("PATH");
	if (!path)
		return false;
	while (*path) {
		size_t n = strcspn(path, ":");
		int w = snprintf(buf, len, "%.*s%sgnuplot", (int)n, path,
				 n ? "/" : "./");
		struct stat st;
		if (w > 0 && (size_t)w < len && stat(buf, &st) == 0 &&
		    S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
			return true;
		path += n;
		if (*path == ':')
			path++;
	}
	return false;
}

bool
plot_have_gnuplot(void)
{
	char p[PATH_MAX];
	return find_gnuplot(p, sizeof(p));
}

static void
image_name(const struct ctx *c, const struct plot *p, const char *fmt,
	   bool tmp, char *buf, size_t len)
{
	if (tmp)
		snprintf(buf, len, "%s/%s.%s.tmp.%ld", c->out, p->name, fmt,
			 c->pid);
	else
		snprintf(buf, len, "%s/%s.%s", c->out, p->name, fmt);
}

static void
unlink_images(const struct ctx *c, const char *const *fmts, size_t nf)
{
	char path[PATH_MAX + 128];
	for (size_t k = 0; k < c->nplots; k++)
		for (size_t f = 0; f < nf; f++) {
			image_name(c, &c->plots[k], fmts[f], true, path,
				   sizeof(path));
			unlink(path);
		}
}

static int
render(struct ctx *c, const char *gnuplot)
{
	const char *fmts[2];
	size_t nf = 0;
	unsigned fm = c->o->formats ? c->o->formats : PLOT_PNG | PLOT_SVG;
	char expr[128];
	int rc = PLOT_OK;

	if (fm & PLOT_PNG)
		fmts[nf++] = "png";
	if (fm & PLOT_SVG)
		fmts[nf++] = "svg";
	snprintf(expr, sizeof(expr), "formats='%s%s%s'; suffix='.tmp.%ld'",
		 fmts[0], nf > 1 ? " " : "", nf > 1 ? fmts[1] : "", c->pid);
	char **argv = calloc(c->nplots + 4, sizeof(*argv));
	if (!argv)
		return oom(c);
	argv[0] = "gnuplot";
	argv[1] = "-e";
	argv[2] = expr;
	for (size_t k = 0; k < c->nplots; k++) {
		argv[3 + k] = malloc(sizeof(c->plots[k].name) + 4);
		if (!argv[3 + k]) {
			rc = oom(c);
			goto out;
		}
		snprintf(argv[3 + k], sizeof(c->plots[k].name) + 4, "%s.gp",
			 c->plots[k].name);
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		rc = fail(c, PLOT_EFAIL, "cannot start gnuplot: %s",
			  strerror(errno));
		goto out;
	}
	if (pid == 0) {
		/* gnuplot's messages to stderr, nothing on our stdout */
		if (chdir(c->out) != 0 || dup2(2, 1) < 0)
			_exit(127);
		execv(gnuplot, argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			rc = fail(c, PLOT_EFAIL, "gnuplot: %s",
				  strerror(errno));
			goto out;
		}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		rc = fail(c, PLOT_EFAIL, "%s failed (%s %d) on the scripts in "
			  "%s", gnuplot, WIFEXITED(st) ? "exit status" :
			  "signal", WIFEXITED(st) ? WEXITSTATUS(st) :
			  WTERMSIG(st), c->out);
		goto out;
	}
	for (size_t k = 0; k < c->nplots && rc == PLOT_OK; k++)
		for (size_t f = 0; f < nf && rc == PLOT_OK; f++) {
			char tmp[PATH_MAX + 128], fin[PATH_MAX + 128];
			struct stat sb;
			image_name(c, &c->plots[k], fmts[f], true, tmp,
				   sizeof(tmp));
			image_name(c, &c->plots[k], fmts[f], false, fin,
				   sizeof(fin));
			if (stat(tmp, &sb) != 0 || sb.st_size == 0)
				rc = fail(c, PLOT_EFAIL, "gnuplot wrote no %s",
					  fin);
			else if (rename(tmp, fin) != 0)
				rc = fail(c, PLOT_EFAIL, "%s: %s", fin,
					  strerror(errno));
		}
out:
	if (rc != PLOT_OK)
		unlink_images(c, fmts, nf);
	for (size_t k = 0; k < c->nplots; k++)
		free(argv[3 + k]);
	free(argv);
	return rc;
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

	if ((rc = plot_cdfs(c)) != PLOT_OK)
		return rc;
	for (size_t i = 0; i < c->nruns; i++)
		if ((rc = plot_timeseries(c, i)) || (rc = plot_knee(c, i)) ||
		    (rc = plot_capacity(c, i)) || (rc = plot_sweep(c, i)) ||
		    (rc = plot_compare(c, i)))
			return rc;
	return PLOT_OK;
}

static int
plot_all(struct ctx *c, const char *const *dirs, size_t ndirs)
{
	int rc;
	char gnuplot[PATH_MAX];

	if (!ndirs)
		return fail(c, PLOT_EINPUT, "no result folder given");
	if (plot_out_dir(dirs, ndirs, c->o, c->out, sizeof(c->out)) != 0)
		return fail(c, PLOT_EINPUT, "output folder name too long");
	if (!(c->runs = calloc(ndirs, sizeof(*c->runs))))
		return oom(c);
	c->nruns = ndirs;
	for (size_t i = 0; i < ndirs; i++) {
		c->runs[i].dir = dirs[i];
		if ((rc = load_run(c, &c->runs[i])) != PLOT_OK)
			return rc;
	}
	if ((rc = unique_labels(c)) != PLOT_OK)
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
	if ((rc = mkdir_p(c, c->out)) != PLOT_OK)
		return rc;
	if (!realpath(c->out, c->out_real))
		return fail(c, PLOT_EFAIL, "%s: %s", c->out, strerror(errno));
	for (size_t i = 0; i < ndirs; i++) {
		char real[PATH_MAX];
		if (!realpath(dirs[i], real))
			return fail(c, PLOT_EFAIL, "%s: %s", dirs[i],
				    strerror(errno));
		rel_path(c->out_real, real, c->runs[i].rel,
			 sizeof(c->runs[i].rel));
		if (strchr(c->runs[i].rel, '\''))
			return fail(c, PLOT_EFAIL, "%s: a folder name with a "
				    "quote cannot be named in a gnuplot "
				    "script", dirs[i]);
	}
	if ((rc = make_plots(c)) != PLOT_OK)
		return rc;

	bool images = false;
	if (!c->o->no_run && c->nplots) {
		if (!find_gnuplot(gnuplot, sizeof(gnuplot))) {
			rc = fail(c, PLOT_NO_GNUPLOT, "gnuplot not found on "
				  "PATH: wrote the scripts only (run `gnuplot "
				  "NAME.gp` in %s)", c->out);
		} else {
			if ((rc = render(c, gnuplot)) != PLOT_OK)
				return rc;
			images = true;
		}
	}
	int wrc = write_index(c, images);
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
