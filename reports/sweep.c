/*
 * sweep.c -- sweep grids, their run directories and sweep.csv (sweep.h).
 *
 * The points run as child processes (util/pool.h): a process per point
 * makes a point reproducible by hand, its command line being the sweep's
 * with the point's --set assignments.
 */
#include "config.h"

#include "reports/rpt.h"
#include "reports/sweep.h"
#include "reports/sweep_csv.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct axis {
	char *key;
	char **val;
	size_t nval, cap;
};

struct sweep {
	struct axis *ax;
	size_t nax, cap;
	uint64_t *digest;	/* per point (sweep_set_digests), or NULL */
	size_t ndigest;
};

/* The grid changes: the points' digests no longer belong to them. */
static void
drop_digests(sweep *s)
{
	free(s->digest);
	s->digest = NULL;
	s->ndigest = 0;
}

sweep *
sweep_new(void)
{
	return calloc(1, sizeof(sweep));
}

void
sweep_free(sweep *s)
{
	if (s == NULL)
		return;
	for (size_t a = 0; a < s->nax; a++) {
		for (size_t v = 0; v < s->ax[a].nval; v++)
			free(s->ax[a].val[v]);
		free(s->ax[a].val);
		free(s->ax[a].key);
	}
	free(s->ax);
	drop_digests(s);
	free(s);
}

kv_err
sweep_add_axis(sweep *s, const char *key)
{
	struct axis *ax;

	for (size_t a = 0; a < s->nax; a++)
		if (strcmp(s->ax[a].key, key) == 0)
			return KV_EINVAL;
	drop_digests(s);
	if (s->nax == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;

		if ((ax = realloc(s->ax, cap * sizeof(*ax))) == NULL)
			return KV_ENOMEM;
		s->ax = ax;
		s->cap = cap;
	}
	ax = &s->ax[s->nax];
	memset(ax, 0, sizeof(*ax));
	if ((ax->key = strdup(key)) == NULL)
		return KV_ENOMEM;
	s->nax++;
	return KV_OK;
}

kv_err
sweep_add_value(sweep *s, const char *value)
{
	struct axis *ax;

	if (s->nax == 0)
		return KV_EINVAL;
	ax = &s->ax[s->nax - 1];
	for (size_t v = 0; v < ax->nval; v++)
		if (strcmp(ax->val[v], value) == 0)
			return KV_EINVAL;
	drop_digests(s);
	if (ax->nval == ax->cap) {
		size_t cap = ax->cap ? ax->cap * 2 : 8;
		char **p = realloc(ax->val, cap * sizeof(*p));

		if (p == NULL)
			return KV_ENOMEM;
		ax->val = p;
		ax->cap = cap;
	}
	if ((ax->val[ax->nval] = strdup(value)) == NULL)
		return KV_ENOMEM;
	ax->nval++;
	return KV_OK;
}

size_t
sweep_naxes(const sweep *s)
{
	return s->nax;
}

const char *
sweep_axis_key(const sweep *s, size_t axis)
{
	return axis < s->nax ? s->ax[axis].key : NULL;
}

size_t
sweep_npoints(const sweep *s)
{
	size_t n = s->nax ? 1 : 0;

	for (size_t a = 0; a < s->nax; a++) {
		if (s->ax[a].nval == 0)
			return 0;
		if (n > SWEEP_MAX_POINTS / s->ax[a].nval)
			return SIZE_MAX;
		n *= s->ax[a].nval;
	}
	return n;
}

const char *
sweep_value(const sweep *s, size_t point, size_t axis)
{
	size_t stride = 1;

	if (axis >= s->nax)
		return NULL;
	for (size_t a = axis + 1; a < s->nax; a++)
		stride *= s->ax[a].nval;
	return s->ax[axis].val[(point / stride) % s->ax[axis].nval];
}

static uint64_t
fnv1a(uint64_t h, const char *p)
{
	for (; *p; p++) {
		h ^= (unsigned char)*p;
		h *= 1099511628211ull;
	}
	return h;
}

kv_err
sweep_set_digests(sweep *s, const uint64_t *digest)
{
	size_t n = sweep_npoints(s);
	uint64_t *d;

	if (n == 0 || n == SIZE_MAX)
		return KV_EINVAL;
	if ((d = malloc(n * sizeof(*d))) == NULL)
		return KV_ENOMEM;
	memcpy(d, digest, n * sizeof(*d));
	drop_digests(s);
	s->digest = d;
	s->ndigest = n;
	return KV_OK;
}

void
sweep_point_id(const sweep *s, size_t point, char id[SWEEP_ID_LEN])
{
	uint64_t h = 14695981039346656037ull;	/* FNV-1a offset basis */
	const char *last = NULL;

	if (s->digest != NULL && point < s->ndigest) {
		char hex[24];

		snprintf(hex, sizeof(hex), "%016" PRIx64 "\n",
			 s->digest[point]);
		h = fnv1a(h, hex);
	}

	/* The assignments in key order: a selection sort over the few axes,
	 * no allocation. */
	for (size_t k = 0; k < s->nax; k++) {
		size_t best = s->nax;

		for (size_t a = 0; a < s->nax; a++)
			if ((last == NULL || strcmp(s->ax[a].key, last) > 0) &&
			    (best == s->nax ||
			     strcmp(s->ax[a].key, s->ax[best].key) < 0))
				best = a;
		last = s->ax[best].key;
		h = fnv1a(h, last);
		h = fnv1a(h, "=");
		h = fnv1a(h, sweep_value(s, point, best));
		h = fnv1a(h, "\n");
	}
	snprintf(id, SWEEP_ID_LEN, "%012" PRIx64,
		 (uint64_t)(h & 0xffffffffffffull));
}

struct idx {
	char id[SWEEP_ID_LEN];
	size_t point;
};

static int
idx_cmp(const void *a, const void *b)
{
	const struct idx *x = a, *y = b;
	int c = strcmp(x->id, y->id);

	if (c != 0)
		return c;
	return x->point < y->point ? -1 : x->point > y->point;
}

bool
sweep_ids_unique(const sweep *s, size_t *a, size_t *b)
{
	size_t n = sweep_npoints(s);
	struct idx *v;
	bool ok = true;

	if (n == 0 || n == SIZE_MAX || (v = calloc(n, sizeof(*v))) == NULL)
		return true;	/* nothing to compare (caller checks n) */
	for (size_t i = 0; i < n; i++) {
		sweep_point_id(s, i, v[i].id);
		v[i].point = i;
	}
	qsort(v, n, sizeof(*v), idx_cmp);
	for (size_t i = 1; i < n && ok; i++)
		if (strcmp(v[i - 1].id, v[i].id) == 0) {
			*a = v[i - 1].point;
			*b = v[i].point;
			ok = false;
		}
	free(v);
	return ok;
}

bool
sweep_point_dir(const sweep *s, const char *dir, size_t point, char *buf,
		size_t len)
{
	char id[SWEEP_ID_LEN];
	int n;

	sweep_point_id(s, point, id);
	n = snprintf(buf, len, "%s/points/%s", dir, id);
	return n >= 0 && (size_t)n < len;
}

bool
sweep_run_complete(const char *rundir)
{
	char path[4096], err[256];
	struct csv_table t;
	bool ok;

	if ((size_t)snprintf(path, sizeof(path), "%s/summary.csv", rundir) >=
	    sizeof(path))
		return false;
	if (sweep_csv_read(&t, path, err, sizeof(err)) != KV_OK)
		return false;
	ok = t.nrow == 1 && t.terminated;
	csv_table_release(&t);
	return ok;
}

void
sweep_run_clean(const char *pdir)
{
	static const char *const names[] = { "requests.csv", "timeseries.csv",
		"summary.csv", "config.yaml", "stderr.txt" };
	char path[4400];
	DIR *d;
	struct dirent *e;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", pdir, names[i]);
		unlink(path);
	}
	if ((d = opendir(pdir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] == '.' && strstr(e->d_name, ".tmp.")) {
			snprintf(path, sizeof(path), "%s/%s", pdir, e->d_name);
			unlink(path);
		}
	closedir(d);
}

FILE *
sweep_create(const char *path, char *tmp, size_t tmplen)
{
	const char *slash = strrchr(path, '/');
	int n;

	if (slash != NULL)
		n = snprintf(tmp, tmplen, "%.*s/.%s.tmp.%ld",
			     (int)(slash - path), path, slash + 1,
			     (long)getpid());
	else
		n = snprintf(tmp, tmplen, ".%s.tmp.%ld", path, (long)getpid());
	if (n < 0 || (size_t)n >= tmplen) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	return fopen(tmp, "w");
}

void
sweep_abandon(FILE *f, const char *tmp)
{
	if (f != NULL)
		fclose(f);
	unlink(tmp);
}

int
sweep_commit(FILE *f, const char *tmp, const char *path)
{
	bool bad = ferror(f) != 0;

	if (fclose(f) != 0 || bad) {
		unlink(tmp);
		return -1;
	}
	if (rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* ---- sweep.csv ------------------------------------------------------------ */

static bool
is_axis(const sweep *s, const char *name)
{
	for (size_t a = 0; a < s->nax; a++)
		if (strcmp(s->ax[a].key, name) == 0)
			return true;
	return false;
}

kv_err
sweep_merge(const sweep *s, const char *dir, size_t *missing, char *err,
	    size_t errlen)
{
	size_t np = sweep_npoints(s);
	char pdir[4096], path[4200], first[4200], out[4200], tmp[4300];
	struct csv_table head, t;
	FILE *f;
	kv_err e = KV_OK;

	*missing = 0;
	for (size_t i = 0; i < np; i++)
		if (!sweep_point_dir(s, dir, i, pdir, sizeof(pdir)) ||
		    !sweep_run_complete(pdir))
			(*missing)++;
	if (*missing > 0 || np == 0 || np == SIZE_MAX)
		return KV_ENOENT;
	snprintf(out, sizeof(out), "%s/sweep.csv", dir);
	if ((f = sweep_create(out, tmp, sizeof(tmp))) == NULL) {
		snprintf(err, errlen, "%s: %s", out, strerror(errno));
		return KV_EINVAL;
	}
	memset(&head, 0, sizeof(head));
	for (size_t i = 0; i < np && e == KV_OK; i++) {
		char id[SWEEP_ID_LEN];
		struct csv_table *cur = i == 0 ? &head : &t;

		sweep_point_id(s, i, id);
		sweep_point_dir(s, dir, i, pdir, sizeof(pdir));
		snprintf(path, sizeof(path), "%s/summary.csv", pdir);
		if ((e = sweep_csv_read(cur, path, err, errlen)) != KV_OK)
			break;
		if (i == 0) {
			snprintf(first, sizeof(first), "%s", path);
			fputs("point_id,point_index", f);
			for (size_t a = 0; a < s->nax; a++) {
				fputc(',', f);
				rpt_csv_field(f, s->ax[a].key);
			}
			for (size_t c = 0; c < head.ncol; c++) {
				if (is_axis(s, head.head[c]))
					continue;
				fputc(',', f);
				rpt_csv_field(f, head.head[c]);
			}
			fputc('\n', f);
		} else {
			bool same = t.ncol == head.ncol;

			for (size_t c = 0; same && c < t.ncol; c++)
				same = strcmp(t.head[c], head.head[c]) == 0;
			if (!same) {
				snprintf(err, errlen, "%s: its columns differ "
					 "from those of %s", path, first);
				e = KV_EINVAL;
				csv_table_release(&t);
				break;
			}
		}
		fprintf(f, "%s,%zu", id, i);
		for (size_t a = 0; a < s->nax; a++) {
			fputc(',', f);
			rpt_csv_field(f, sweep_value(s, i, a));
		}
		for (size_t c = 0; c < head.ncol; c++) {
			if (is_axis(s, head.head[c]))
				continue;
			fputc(',', f);
			rpt_csv_field(f, cur->row[0][c]);
		}
		fputc('\n', f);
		if (i > 0)
			csv_table_release(&t);
	}
	csv_table_release(&head);
	if (e != KV_OK) {
		sweep_abandon(f, tmp);
		return e;
	}
	if (sweep_commit(f, tmp, out) != 0) {
		snprintf(err, errlen, "%s: %s", out, strerror(errno));
		return KV_EINVAL;
	}
	return KV_OK;
}
