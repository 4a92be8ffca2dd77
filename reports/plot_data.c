/*
 * plot_data.c -- reading result folders: the CSVs (through util/csv.h,
 * with plot's own messages), the latencies of requests.csv, the ranges of
 * timeseries.csv, the small report tables whole, and each run's label.
 * Every column is found by its header name.
 */
#define _XOPEN_SOURCE 700	/* realpath(), getline() */

#include "config.h"

#include "reports/plot_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

/* A reader error as a status and message, in plot's wording. */
static int
csv_fail(struct ctx *c, const char *path, const struct csv_error *e)
{
	switch (e->kind) {
	case CSV_ENOMEM:
		return plot__oom(c);
	case CSV_EEMPTY:
		return plot__fail(c, PLOT_EINPUT,
				  "%s:1: empty file (no header row)", path);
	case CSV_EUNTERMINATED:
		return plot__fail(c, PLOT_EINPUT,
				  "%s:%lu: unterminated quoted field", path,
				  e->record);
	case CSV_ETEXT_AFTER_QUOTE:
		return plot__fail(c, PLOT_EINPUT,
				  "%s:%lu: text after a quoted field", path,
				  e->line);
	case CSV_EWIDTH:
		return plot__fail(c, PLOT_EINPUT,
				  "%s:%lu: %zu fields, the header has %zu",
				  path, e->record, e->nfield, e->nhead);
	case CSV_EOPEN:
		return plot__fail(c, PLOT_EINPUT, "%s: %s", path,
				  strerror(e->sys_errno));
	case CSV_EDUPCOL: {
		char m[PATH_MAX + 256];

		csv_error_format(e, path, m, sizeof(m));
		return plot__fail(c, PLOT_EINPUT, "%s", m);
	}
	default:	/* a quote inside a field, a read error */
		return plot__fail(c, PLOT_EINPUT, "%s:%lu: %s", path, e->line,
				  csv_what(e->kind));
	}
}

int
plot__col_of(const struct csv_table *t, const char *name)
{
	return (int)csv_table_col(t, name);
}

static int
no_col(struct ctx *c, const char *path, const char *name)
{
	return plot__fail(c, PLOT_EINPUT, "%s:1: no column '%s'", path, name);
}

/* Column `name` of a table, or PLOT_EINPUT "FILE:1: no column". */
int
plot__need_col(struct ctx *c, const struct csv_table *t, const char *name,
	       int *col)
{
	*col = plot__col_of(t, name);
	return *col < 0 ? no_col(c, t->path, name) : PLOT_OK;
}

/* A finite number in a field. */
int
plot__num(struct ctx *c, const char *path, unsigned long line, const char *col,
	  const char *s, double *v)
{
	char *end;
	errno = 0;
	*v = strtod(s, &end);
	if (end == s || *end != '\0' || !isfinite(*v))
		return plot__fail(c, PLOT_EINPUT,
				  "%s:%lu: column '%s': '%s' is not "
				  "a finite number", path, line, col, s);
	return PLOT_OK;
}

const char *
plot__cell(const struct csv_table *t, size_t row, int col)
{
	return t->row[row][col];
}

/* Whether two rows share a value of a column. */
bool
plot__column_repeats(const struct csv_table *t, int col)
{
	for (size_t r = 0; r < t->nrow; r++)
		for (size_t q = 0; q < r; q++)
			if (strcmp(plot__cell(t, r, col),
				   plot__cell(t, q, col)) == 0)
				return true;
	return false;
}

/* Whether a column holds more than one value. */
bool
plot__column_varies(const struct csv_table *t, int col)
{
	for (size_t r = 1; r < t->nrow; r++)
		if (strcmp(plot__cell(t, r, col), plot__cell(t, 0, col)) != 0)
			return true;
	return false;
}

/*
 * Open a CSV, read its header and find the columns names[0..n) in it,
 * into col.  PLOT_OK with v->head == NULL: the file is absent.  On an
 * error v is closed.
 */
static int
open_cols(struct ctx *c, struct csv *v, const char *path,
	  const char *const *names, size_t n, int *col)
{
	struct csv_error e;

	if (csv_open(v, path, &e) != KV_OK) {
		if (e.kind == CSV_EOPEN && e.sys_errno == ENOENT)
			return PLOT_OK;
		return csv_fail(c, path, &e);
	}
	for (size_t k = 0; k < n; k++)
		if ((col[k] = (int)csv_col(v, names[k])) < 0) {
			csv_close(v);
			return no_col(c, path, names[k]);
		}
	return PLOT_OK;
}

/* The next record into v; PLOT_OK with v->nfield == 0 at the end. */
static int
next_row(struct ctx *c, struct csv *v, const char *path)
{
	struct csv_error e;

	return csv_next(v, &e) == KV_OK ? PLOT_OK : csv_fail(c, path, &e);
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

const char *const plot__lat_col[NLAT] = {
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
	char path[PATH_MAX + 64];
	int col[NLAT], rc;
	size_t cap[NLAT] = { 0 };

	snprintf(path, sizeof(path), "%s/requests.csv", r->dir);
	if ((rc = open_cols(c, &v, path, plot__lat_col, NLAT, col)) !=
	    PLOT_OK || !v.head)
		return rc;
	r->has_req = true;
	while ((rc = next_row(c, &v, path)) == PLOT_OK && v.nfield > 0) {
		for (int m = 0; m < NLAT; m++) {
			const char *s = v.field[col[m]];
			double x;
			if (*s == '\0')	/* e.g. TPOT of one output token */
				continue;
			if ((rc = plot__num(c, path, v.line, plot__lat_col[m],
					    s, &x)))
				goto out;
			if (r->nlat[m] == cap[m]) {
				cap[m] = cap[m] ? 2 * cap[m] : 1024;
				double *p = realloc(r->lat[m],
						    cap[m] * sizeof(*p));
				if (!p) {
					rc = plot__oom(c);
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
	char path[PATH_MAX + 64];
	int col[NTS], rc;
	double x[NTS];

	snprintf(path, sizeof(path), "%s/timeseries.csv", r->dir);
	if ((rc = open_cols(c, &v, path, ts_col, NTS, col)) != PLOT_OK ||
	    !v.head)
		return rc;
	r->has_ts = true;
	while ((rc = next_row(c, &v, path)) == PLOT_OK && v.nfield > 0) {
		for (size_t k = 0; k < NTS; k++)
			if ((rc = plot__num(c, path, v.line, ts_col[k],
					    v.field[col[k]], &x[k])) != PLOT_OK)
				goto out;
		if (r->ts_rows == 0 || x[0] < r->t_min)
			r->t_min = x[0];
		if (r->ts_rows == 0 || x[0] > r->t_max)
			r->t_max = x[0];
		r->kv_max = fmax(r->kv_max, x[1]);
		r->count_max = fmax(r->count_max, fmax(x[2], fmax(x[3], x[4])));
		r->tok_max = fmax(r->tok_max, fmax(x[5], x[6]));
		/* room doubled at 0, 1, 2, 4, ... rows */
		if ((r->ts_rows & (r->ts_rows - 1)) == 0) {
			size_t cap = r->ts_rows ? 2 * r->ts_rows : 1;
			double (*p)[3] = realloc(r->tput, cap * sizeof(*p));
			if (!p) {
				rc = plot__oom(c);
				goto out;
			}
			r->tput = p;
		}
		r->tput[r->ts_rows][0] = x[0];
		r->tput[r->ts_rows][1] = x[5];
		r->tput[r->ts_rows][2] = x[6];
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

int
plot__load_run(struct ctx *c, struct run *r)
{
	struct stat st;
	char real[PATH_MAX];
	int rc;

	if (stat(r->dir, &st) != 0)
		return plot__fail(c, PLOT_EINPUT, "%s: %s", r->dir,
				  strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return plot__fail(c, PLOT_EINPUT, "%s: not a folder", r->dir);
	if (!realpath(r->dir, real))
		return plot__fail(c, PLOT_EINPUT, "%s: %s", r->dir,
				  strerror(errno));
	const char *b = strrchr(real, '/');
	b = b && b[1] ? b + 1 : real;
	if (!(r->base = strdup(b)))
		return plot__oom(c);
	if ((rc = load_requests(c, r)) || (rc = load_timeseries(c, r)) ||
	    (rc = table_load(c, r->dir, "summary.csv", &r->sum)) ||
	    (rc = table_load(c, r->dir, "capacity.csv", &r->cap)) ||
	    (rc = table_load(c, r->dir, "capacity_points.csv", &r->capp)) ||
	    (rc = table_load(c, r->dir, "sweep.csv", &r->sweep)) ||
	    (rc = table_load(c, r->dir, "compare.csv", &r->cmp)))
		return rc;
	if (!r->has_req && !r->has_ts && !r->sum.path && !r->cap.path &&
	    !r->capp.path && !r->sweep.path && !r->cmp.path)
		return plot__fail(c, PLOT_EINPUT,
		    "%s: no kvsim results (requests.csv, "
		    "timeseries.csv, summary.csv, capacity.csv, "
		    "capacity_points.csv, sweep.csv or compare.csv)", r->dir);
	/* The label: the policy, else the folder's name. */
	int pc = r->sum.path ? plot__col_of(&r->sum, "policy") : -1;
	if (pc >= 0 && r->sum.nrow && *plot__cell(&r->sum, 0, pc))
		r->label = strdup(plot__cell(&r->sum, 0, pc));
	else if (!(r->label = config_policy(r->dir)))
		r->label = strdup(r->base);
	return r->label ? PLOT_OK : plot__oom(c);
}

/* Labels that two runs share get the folder's name, then the position. */
int
plot__unique_labels(struct ctx *c)
{
	for (int pass = 0; pass < 2; pass++) {
		bool *dup = calloc(c->nruns, sizeof(*dup));
		if (!dup)
			return plot__oom(c);
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
				plot__buf_printf(&b, "%s (%s)", r->label,
						 r->base);
			else
				plot__buf_printf(&b, "%s #%zu", r->label,
						 i + 1);
			if (b.oom) {
				free(dup);
				return plot__oom(c);
			}
			free(r->label);
			r->label = b.p;
		}
		free(dup);
	}
	return PLOT_OK;
}
