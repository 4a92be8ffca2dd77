/*
 * csv.c -- the CSV reader (csv.h).
 *
 * The input is read in 64 KiB chunks; a field is copied out of the chunk
 * into the record buffer as it is unquoted, runs of plain bytes at a time.
 * A record's fields lie back to back in that buffer, NUL-terminated, and
 * c->field points into it once the record is complete (the buffer may
 * move while it grows, so offsets are kept until then).  Looking ahead
 * one byte (CR before LF, a quote after a quote) may move the unread tail
 * of the chunk to its front; nothing else is copied twice.
 *
 * The table reader is the streaming reader plus one text buffer holding
 * every record, so the two cannot disagree on what a file means.
 */
#include "config.h"

#include "util/csv.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CSV_CHUNK	65536

/* The bytes that end a run of plain field text. */
static const bool csv__stop[256] = {
	[','] = true, ['\n'] = true, ['"'] = true, ['\r'] = true,
};

const char *
csv_what(enum csv_errkind kind)
{
	switch (kind) {
	case CSV_OK:
		return "no error";
	case CSV_EOPEN:
		return "cannot open";
	case CSV_EREAD:
		return "read error";
	case CSV_ENOMEM:
		return "out of memory";
	case CSV_EEMPTY:
		return "empty file (no header row)";
	case CSV_EUNTERMINATED:
		return "unterminated quoted field";
	case CSV_ETEXT_AFTER_QUOTE:
		return "text after a closing quote";
	case CSV_EQUOTE_IN_FIELD:
		return "quote inside an unquoted field";
	case CSV_EWIDTH:
		return "wrong number of fields";
	case CSV_EDUPCOL:
		return "a column name appears twice";
	}
	return "unknown error";
}

void
csv_error_format(const struct csv_error *e, const char *path, char *buf,
		 size_t len)
{
	if (len == 0)
		return;
	if (e->kind == CSV_EOPEN)
		snprintf(buf, len, "%s: %s", path, strerror(e->sys_errno));
	else if (e->kind == CSV_EREAD)
		snprintf(buf, len, "%s:%lu:%lu: %s: %s", path, e->line, e->col,
			 csv_what(e->kind), strerror(e->sys_errno));
	else if (e->kind == CSV_EWIDTH)
		snprintf(buf, len, "%s:%lu:%lu: %s (%zu, the header has %zu)",
			 path, e->line, e->col, csv_what(e->kind), e->nfield,
			 e->nhead);
	else if (e->kind == CSV_EDUPCOL)
		snprintf(buf, len, "%s:%lu:%lu: column '%s' appears twice "
			 "(first at column %lu)", path, e->line, e->col,
			 e->name, e->first_col);
	else
		snprintf(buf, len, "%s:%lu:%lu: %s", path, e->line, e->col,
			 csv_what(e->kind));
}

static kv_err
csv__fail(struct csv_error *e, enum csv_errkind kind, unsigned long line,
	  unsigned long col, unsigned long record)
{
	if (e != NULL) {
		memset(e, 0, sizeof(*e));
		e->kind = kind;
		e->line = line;
		e->col = col;
		e->record = record;
	}
	if (kind == CSV_ENOMEM)
		return KV_ENOMEM;
	return kind == CSV_EOPEN ? KV_ENOENT : KV_EINVAL;
}

static kv_err
csv__read_error(struct csv *c, struct csv_error *e)
{
	csv__fail(e, CSV_EREAD, c->lno, c->cno, c->line);
	if (e != NULL)
		e->sys_errno = c->rerr;
	return KV_EINVAL;
}

static kv_err
csv__nomem(struct csv *c, struct csv_error *e)
{
	return csv__fail(e, CSV_ENOMEM, c->lno, c->cno, c->line);
}

/*
 * At least k (1 or 2) unread bytes at c->in + c->pos unless the file ends
 * first; returns how many there are.  0: the end (or a read error, in
 * c->rerr).
 */
static size_t
csv__avail(struct csv *c, size_t k)
{
	if (c->len - c->pos >= k || c->eof)
		return c->len - c->pos;
	memmove(c->in, c->in + c->pos, c->len - c->pos);
	c->len -= c->pos;
	c->pos = 0;
	while (c->len < k && !c->eof) {
		size_t n = fread(c->in + c->len, 1, CSV_CHUNK - c->len, c->f);

		c->len += n;
		if (n == 0) {
			c->eof = true;
			if (ferror(c->f))
				c->rerr = errno != 0 ? errno : EIO;
		}
	}
	return c->len - c->pos;
}

/* Append n bytes to the record; -1: no memory. */
static int
csv__put(struct csv *c, const char *s, size_t n)
{
	if (n == 0)
		return 0;	/* an empty field: rec may still be NULL */
	if (c->reclen + n > c->reccap) {
		size_t cap = c->reccap ? c->reccap : 256;
		char *p;

		while (cap < c->reclen + n)
			cap *= 2;
		if ((p = realloc(c->rec, cap)) == NULL)
			return -1;
		c->rec = p;
		c->reccap = cap;
	}
	memcpy(c->rec + c->reclen, s, n);
	c->reclen += n;
	return 0;
}

/* Room for one more field's offset and position; -1: no memory. */
static int
csv__grow_fields(struct csv *c)
{
	size_t cap = c->fcap ? 2 * c->fcap : 16;
	size_t *off;
	unsigned long *fl, *fc;
	char **fld;

	if (c->nfield < c->fcap)
		return 0;
	if ((off = realloc(c->off, cap * sizeof(*off))) == NULL)
		return -1;
	c->off = off;
	if ((fl = realloc(c->fline, cap * sizeof(*fl))) == NULL)
		return -1;
	c->fline = fl;
	if ((fc = realloc(c->fcol, cap * sizeof(*fc))) == NULL)
		return -1;
	c->fcol = fc;
	if ((fld = realloc(c->field, cap * sizeof(*fld))) == NULL)
		return -1;
	c->field = fld;
	c->fcap = cap;
	return 0;
}

/*
 * The length of the line break (LF, CRLF, or a CR that ends the file) at
 * c->pos, given n bytes there; 0: none.
 */
static size_t
csv__eol(const struct csv *c, size_t n)
{
	const char *s = c->in + c->pos;

	if (n == 0)
		return 0;
	if (s[0] == '\n')
		return 1;
	if (s[0] != '\r')
		return 0;
	if (n > 1)
		return s[1] == '\n' ? 2 : 0;
	return c->eof ? 1 : 0;
}

static void
csv__eat_eol(struct csv *c, size_t k)
{
	c->pos += k;
	c->lno++;
	c->cno = 1;
	c->terminated = true;
}

/* A field without quotes, up to a comma, a line break or the end. */
static kv_err
csv__bare(struct csv *c, struct csv_error *e)
{
	size_t n, i;

	while ((n = csv__avail(c, 2)) > 0) {
		const char *s = c->in + c->pos;

		for (i = 0; i < n && !csv__stop[(unsigned char)s[i]]; i++)
			;
		if (csv__put(c, s, i) != 0)
			return csv__nomem(c, e);
		c->pos += i;
		c->cno += i;
		if (i == n)
			continue;
		if (s[i] == '"')
			return csv__fail(e, CSV_EQUOTE_IN_FIELD, c->lno, c->cno,
					 c->line);
		if (s[i] != '\r')
			break;
		if (i + 1 == n && !c->eof)
			continue;	/* look at the byte after the CR */
		if (csv__eol(c, n - i) > 0)
			break;
		if (csv__put(c, "\r", 1) != 0)	/* a lone CR is data */
			return csv__nomem(c, e);
		c->pos++;
		c->cno++;
	}
	return KV_OK;
}

/* A quoted field, c->pos at its opening quote. */
static kv_err
csv__quoted(struct csv *c, struct csv_error *e, unsigned long qline,
	    unsigned long qcol)
{
	size_t n, i;

	c->pos++;
	c->cno++;
	for (;;) {
		const char *s;

		if ((n = csv__avail(c, 2)) == 0) {
			if (c->rerr != 0)
				return csv__read_error(c, e);
			return csv__fail(e, CSV_EUNTERMINATED, qline, qcol,
					 c->line);
		}
		s = c->in + c->pos;
		for (i = 0; i < n && s[i] != '"' && s[i] != '\n'; i++)
			;
		if (csv__put(c, s, i) != 0)
			goto nomem;
		c->pos += i;
		c->cno += i;
		if (i == n)
			continue;
		if (s[i] == '\n') {
			if (csv__put(c, "\n", 1) != 0)
				goto nomem;
			c->pos++;
			c->lno++;
			c->cno = 1;
			continue;
		}
		if (i + 1 == n && !c->eof)
			continue;	/* look at the byte after the quote */
		c->pos++;
		c->cno++;
		if (i + 1 == n || s[i + 1] != '"')
			break;
		if (csv__put(c, "\"", 1) != 0)	/* "" */
			goto nomem;
		c->pos++;
		c->cno++;
	}
	n = csv__avail(c, 2);
	if (n > 0 && c->in[c->pos] != ',' && csv__eol(c, n) == 0)
		return csv__fail(e, CSV_ETEXT_AFTER_QUOTE, c->lno, c->cno,
				 c->line);
	return KV_OK;
nomem:
	return csv__nomem(c, e);
}

/* Skip blank lines; false at the end of the input. */
static bool
csv__skip_blank(struct csv *c)
{
	size_t n, k;

	while ((n = csv__avail(c, 2)) > 0 && (k = csv__eol(c, n)) > 0)
		csv__eat_eol(c, k);
	return n > 0;
}

/* The next record into c->field, unchecked; nfield == 0 at the end. */
static kv_err
csv__record(struct csv *c, struct csv_error *e)
{
	kv_err rc;
	size_t n;

	c->nfield = 0;
	c->reclen = 0;
	if (!csv__skip_blank(c))
		return c->rerr != 0 ? csv__read_error(c, e) : KV_OK;
	c->line = c->lno;
	for (;;) {
		if (csv__grow_fields(c) != 0)
			return csv__nomem(c, e);
		c->off[c->nfield] = c->reclen;
		c->fline[c->nfield] = c->lno;
		c->fcol[c->nfield] = c->cno;
		/* nothing after a last comma: an empty field (bare) */
		n = csv__avail(c, 1);
		if (n > 0 && c->in[c->pos] == '"')
			rc = csv__quoted(c, e, c->lno, c->cno);
		else
			rc = csv__bare(c, e);
		if (rc != KV_OK)
			return rc;
		if (csv__put(c, "", 1) != 0)
			return csv__nomem(c, e);
		c->nfield++;
		if ((n = csv__avail(c, 2)) == 0) {
			if (c->rerr != 0)
				return csv__read_error(c, e);
			c->terminated = false;
			break;
		}
		if (c->in[c->pos] != ',') {
			csv__eat_eol(c, csv__eol(c, n));
			break;
		}
		c->pos++;
		c->cno++;
	}
	for (size_t i = 0; i < c->nfield; i++)
		c->field[i] = c->rec + c->off[i];
	return KV_OK;
}

struct csv__name {
	const char *name;
	size_t i;
};

/* Header names in order, equal names in column order. */
static int
csv__cmp_name(const void *a, const void *b)
{
	const struct csv__name *x = a, *y = b;
	int d = strcmp(x->name, y->name);

	return d != 0 ? d : (x->i > y->i) - (x->i < y->i);
}

/*
 * Refuse a header that names a column twice (csv.h): the leftmost column
 * whose non-empty name an earlier column has.  O(n log n) in the header's
 * width.
 */
static kv_err
csv__dup_check(struct csv *c, struct csv_error *e)
{
	size_t n = c->nhead, dup = n, first = 0;
	struct csv__name *v;

	if (n < 2)
		return KV_OK;
	if ((v = malloc(n * sizeof(*v))) == NULL)
		return csv__fail(e, CSV_ENOMEM, c->head_line, 1,
				 c->head_line);
	for (size_t i = 0; i < n; i++) {
		v[i].name = c->head[i];
		v[i].i = i;
	}
	qsort(v, n, sizeof(*v), csv__cmp_name);
	/* in a run of equal names the second is the first repeat */
	for (size_t k = 1; k < n; k++)
		if (v[k].name[0] != '\0' &&
		    strcmp(v[k].name, v[k - 1].name) == 0 &&
		    (k < 2 || strcmp(v[k].name, v[k - 2].name) != 0) &&
		    v[k].i < dup) {
			dup = v[k].i;
			first = v[k - 1].i;
		}
	free(v);
	if (dup == n)
		return KV_OK;
	csv__fail(e, CSV_EDUPCOL, c->fline[dup], c->fcol[dup], c->head_line);
	if (e != NULL) {
		e->first_col = c->fcol[first];
		snprintf(e->name, sizeof(e->name), "%s", c->head[dup]);
	}
	return KV_EINVAL;
}

kv_err
csv_init(struct csv *c, FILE *f, struct csv_error *e)
{
	kv_err rc;

	memset(c, 0, sizeof(*c));
	c->f = f;
	c->lno = 1;
	c->cno = 1;
	if ((c->in = malloc(CSV_CHUNK)) == NULL) {
		rc = csv__fail(e, CSV_ENOMEM, 1, 1, 1);
		goto out_close;
	}
	if ((rc = csv__record(c, e)) != KV_OK)
		goto out_close;
	if (c->nfield == 0) {
		rc = csv__fail(e, CSV_EEMPTY, 1, 1, 1);
		goto out_close;
	}
	if ((c->headbuf = malloc(c->reclen)) == NULL ||
	    (c->head = malloc(c->nfield * sizeof(*c->head))) == NULL) {
		rc = csv__fail(e, CSV_ENOMEM, c->lno, c->cno, c->line);
		goto out_close;
	}
	memcpy(c->headbuf, c->rec, c->reclen);
	for (size_t i = 0; i < c->nfield; i++)
		c->head[i] = c->headbuf + c->off[i];
	c->nhead = c->nfield;
	c->head_line = c->line;
	if ((rc = csv__dup_check(c, e)) == KV_OK)
		return KV_OK;
out_close:
	csv_close(c);
	return rc;
}

kv_err
csv_open(struct csv *c, const char *path, struct csv_error *e)
{
	FILE *f = fopen(path, "r");
	kv_err rc;

	if (f == NULL) {
		int err = errno;

		memset(c, 0, sizeof(*c));
		rc = csv__fail(e, CSV_EOPEN, 0, 0, 0);
		if (e != NULL)
			e->sys_errno = err;
		return rc;
	}
	if ((rc = csv_init(c, f, e)) != KV_OK) {
		fclose(f);
		return rc;
	}
	c->own = true;
	return KV_OK;
}

kv_err
csv_next(struct csv *c, struct csv_error *e)
{
	kv_err rc = csv__record(c, e);

	if (rc != KV_OK || c->nfield == 0 || c->nfield == c->nhead)
		return rc;
	rc = csv__fail(e, CSV_EWIDTH, c->line, 1, c->line);
	if (e != NULL) {
		e->nfield = c->nfield;
		e->nhead = c->nhead;
	}
	return rc;
}

static long
csv__find(char *const *head, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(head[i], name) == 0)
			return (long)i;
	return -1;
}

long
csv_col(const struct csv *c, const char *name)
{
	return csv__find(c->head, c->nhead, name);
}

void
csv_close(struct csv *c)
{
	if (c == NULL)
		return;
	if (c->own && c->f != NULL)
		fclose(c->f);
	free(c->in);
	free(c->rec);
	free(c->off);
	free(c->field);
	free(c->fline);
	free(c->fcol);
	free(c->head);
	free(c->headbuf);
	memset(c, 0, sizeof(*c));
}

/* ---- a whole table ------------------------------------------------------ */

/* Text and cell offsets of a table being read. */
struct csv__acc {
	char *text;
	size_t len, cap;
	size_t *off;
	size_t n, offcap;
	unsigned long *line;
	size_t linecap;
};

/* Append the record c holds (fields back to back) as cells; -1: memory. */
static int
csv__acc_record(struct csv__acc *a, const struct csv *c)
{
	if (a->len + c->reclen > a->cap) {
		size_t cap = a->cap ? a->cap : 4096;
		char *p;

		while (cap < a->len + c->reclen)
			cap *= 2;
		if ((p = realloc(a->text, cap)) == NULL)
			return -1;
		a->text = p;
		a->cap = cap;
	}
	if (a->n + c->nfield > a->offcap) {
		size_t cap = a->offcap ? a->offcap : 64;
		size_t *p;

		while (cap < a->n + c->nfield)
			cap *= 2;
		if ((p = realloc(a->off, cap * sizeof(*p))) == NULL)
			return -1;
		a->off = p;
		a->offcap = cap;
	}
	memcpy(a->text + a->len, c->rec, c->reclen);
	for (size_t i = 0; i < c->nfield; i++)
		a->off[a->n++] = a->len + c->off[i];
	a->len += c->reclen;
	return 0;
}

/* Remember the line of row `nrow`; -1: no memory. */
static int
csv__acc_line(struct csv__acc *a, size_t nrow, unsigned long line)
{
	if (nrow == a->linecap) {
		size_t cap = a->linecap ? 2 * a->linecap : 16;
		unsigned long *p = realloc(a->line, cap * sizeof(*p));

		if (p == NULL)
			return -1;
		a->line = p;
		a->linecap = cap;
	}
	a->line[nrow] = line;
	return 0;
}

/* Turn the offsets into the table's pointers; -1: no memory. */
static int
csv__acc_finish(struct csv__acc *a, struct csv_table *t)
{
	t->cells = malloc(a->n * sizeof(*t->cells));
	t->row = malloc((t->nrow ? t->nrow : 1) * sizeof(*t->row));
	if (t->cells == NULL || t->row == NULL)
		return -1;
	t->text = a->text;
	a->text = NULL;
	t->line = a->line;
	a->line = NULL;
	for (size_t i = 0; i < a->n; i++)
		t->cells[i] = t->text + a->off[i];
	t->head = t->cells;
	for (size_t r = 0; r < t->nrow; r++)
		t->row[r] = t->cells + (r + 1) * t->ncol;
	return 0;
}

kv_err
csv_table_read(struct csv_table *t, const char *path, struct csv_error *e)
{
	struct csv c;
	struct csv__acc a;
	kv_err rc;

	memset(t, 0, sizeof(*t));
	memset(&a, 0, sizeof(a));
	if ((rc = csv_open(&c, path, e)) != KV_OK)
		return rc;
	/* the header is the record c still holds */
	t->ncol = c.nhead;
	if ((t->path = strdup(path)) == NULL || csv__acc_record(&a, &c) != 0)
		goto nomem;
	while ((rc = csv_next(&c, e)) == KV_OK && c.nfield > 0) {
		if (csv__acc_record(&a, &c) != 0 ||
		    csv__acc_line(&a, t->nrow, c.line) != 0)
			goto nomem;
		t->nrow++;
	}
	if (rc == KV_OK) {
		t->terminated = c.terminated;
		if (csv__acc_finish(&a, t) != 0)
			goto nomem;
	}
	goto out;
nomem:
	rc = csv__fail(e, CSV_ENOMEM, c.lno, c.cno, c.line);
out:
	csv_close(&c);
	free(a.text);
	free(a.off);
	free(a.line);
	if (rc != KV_OK)
		csv_table_release(t);
	return rc;
}

void
csv_table_release(struct csv_table *t)
{
	if (t == NULL)
		return;
	free(t->path);
	free(t->row);
	free(t->line);
	free(t->text);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

long
csv_table_col(const struct csv_table *t, const char *name)
{
	return csv__find(t->head, t->ncol, name);
}
