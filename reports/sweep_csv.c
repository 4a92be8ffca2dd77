/*
 * sweep_csv.c -- read a small CSV table whole (sweep_csv.h).
 *
 * The file is read into one buffer and unescaped in place: a field never
 * grows when its quotes are removed, so every field is a NUL-terminated
 * slice of that buffer and the table costs two allocations plus the
 * pointer arrays.
 */
#include "config.h"

#include "reports/sweep_csv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
sweep_csv_release(struct sweep_csv *t)
{
	if (t == NULL)
		return;
	free(t->buf);
	free(t->cells);
	free(t->row);
	free(t->line);
	memset(t, 0, sizeof(*t));
}

/* Double *p's room of *cap elements (64 the first time); -1: no memory,
 * *p untouched. */
static int
grow(void **p, size_t *cap, size_t size)
{
	size_t nc = *cap ? *cap * 2 : 64;
	void *q = realloc(*p, nc * size);

	if (q == NULL)
		return -1;
	*p = q;
	*cap = nc;
	return 0;
}

static char *
slurp(FILE *f, size_t *len)
{
	size_t cap = 4096, n = 0, r;
	char *b = malloc(cap + 1), *p;

	while (b != NULL && (r = fread(b + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n < cap)
			continue;
		cap *= 2;
		if ((p = realloc(b, cap + 1)) == NULL) {
			free(b);
			return NULL;
		}
		b = p;
	}
	if (b != NULL)
		b[n] = '\0';
	*len = b != NULL ? n : 0;
	return b;
}

static kv_err
bad(struct sweep_csv *t, char *err, size_t errlen, const char *path,
    unsigned long line, const char *what, size_t got)
{
	snprintf(err, errlen, "%s:%lu: %s", path, line, what);
	if (got != (size_t)-1) {
		size_t n = strlen(err);

		snprintf(err + n, errlen - n, " (expected %zu fields, got %zu)",
			 t->ncol, got);
	}
	sweep_csv_release(t);
	return KV_EINVAL;
}

kv_err
sweep_csv_read(struct sweep_csv *t, const char *path, char *err,
	       size_t errlen)
{
	FILE *f;
	size_t len = 0, cap = 0, nrec_fields = 0;
	char *r, *w, *end;
	unsigned long line = 1, rec_line = 1;
	size_t caplines = 0;

	memset(t, 0, sizeof(*t));
	if ((f = fopen(path, "r")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return KV_ENOENT;
	}
	t->buf = slurp(f, &len);
	fclose(f);
	if (t->buf == NULL)
		return KV_ENOMEM;
	if (len == 0)
		return bad(t, err, errlen, path, 1, "empty file (no header)",
			   (size_t)-1);
	t->terminated = t->buf[len - 1] == '\n';
	r = w = t->buf;
	end = t->buf + len;
	/* One field per iteration; r reads, w writes the unescaped text. */
	while (r < end) {
		char *start = w;
		bool eol = false;

		if (*r == '"') {
			r++;
			for (;;) {
				if (r >= end)
					return bad(t, err, errlen, path,
						   rec_line,
						   "unterminated quoted field",
						   (size_t)-1);
				if (*r == '"' && r + 1 < end && r[1] == '"') {
					*w++ = '"';
					r += 2;
				} else if (*r == '"') {
					r++;
					break;
				} else {
					if (*r == '\n')
						line++;
					*w++ = *r++;
				}
			}
			if (r < end && *r != ',' && *r != '\n' &&
			    !(*r == '\r' && r + 1 < end && r[1] == '\n'))
				return bad(t, err, errlen, path, line,
					   "text after a closing quote",
					   (size_t)-1);
		} else {
			while (r < end && *r != ',' && *r != '\n' &&
			       !(*r == '\r' && r + 1 < end && r[1] == '\n')) {
				if (*r == '"')
					return bad(t, err, errlen, path, line,
						   "quote inside an unquoted "
						   "field", (size_t)-1);
				*w++ = *r++;
			}
		}
		if (r < end && *r == '\r')
			r++;
		if (r >= end || *r == '\n')
			eol = true;
		if (r < end)
			r++;
		*w++ = '\0';
		if (t->ncells == cap && grow((void **)&t->cells, &cap,
					     sizeof(*t->cells)) != 0) {
			sweep_csv_release(t);
			return KV_ENOMEM;
		}
		t->cells[t->ncells++] = start;
		nrec_fields++;
		if (!eol)
			continue;
		/* A record ends: the header fixes the width. */
		if (t->ncol == 0)
			t->ncol = nrec_fields;
		else if (nrec_fields == 1 && start[0] == '\0')
			t->ncells--;	/* a blank line */
		else if (nrec_fields != t->ncol)
			return bad(t, err, errlen, path, rec_line,
				   "wrong number of fields", nrec_fields);
		else {
			if (t->nrow == caplines &&
			    grow((void **)&t->line, &caplines,
				 sizeof(*t->line)) != 0) {
				sweep_csv_release(t);
				return KV_ENOMEM;
			}
			t->line[t->nrow++] = rec_line;
		}
		nrec_fields = 0;
		line++;
		rec_line = line;
	}
	if (t->ncol == 0)
		return bad(t, err, errlen, path, 1, "no header", (size_t)-1);
	t->head = t->cells;
	t->row = calloc(t->nrow ? t->nrow : 1, sizeof(*t->row));
	if (t->row == NULL) {
		sweep_csv_release(t);
		return KV_ENOMEM;
	}
	for (size_t i = 0; i < t->nrow; i++)
		t->row[i] = t->cells + (i + 1) * t->ncol;
	return KV_OK;
}

long
sweep_csv_col(const struct sweep_csv *t, const char *name)
{
	for (size_t i = 0; i < t->ncol; i++)
		if (strcmp(t->head[i], name) == 0)
			return (long)i;
	return -1;
}
