/*
 * plot_buf.c -- the growing string every script, data file and page is
 * built in, and the quoting each of them needs (gnuplot strings, HTML,
 * data-file labels).  Out of memory is remembered in the buffer and
 * reported once, when the buffer is written.
 */
#include "config.h"

#include "reports/plot_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void
plot__buf_puts(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void __attribute__((format(printf, 2, 3)))
plot__buf_printf(struct buf *b, const char *fmt, ...)
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

void
plot__buf_release(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* A gnuplot single-quoted string: '' stands for ', control characters
 * become spaces (titles are shown with `noenhanced`, so _ ^ { } are
 * literal). */
void
plot__gp_str(struct buf *b, const char *s)
{
	plot__buf_puts(b, "'");
	for (; *s; s++) {
		if (*s == '\'')
			plot__buf_puts(b, "''");
		else if ((unsigned char)*s < 0x20)
			plot__buf_puts(b, " ");
		else
			buf_add(b, s, 1);
	}
	plot__buf_puts(b, "'");
}

void
plot__html_esc(struct buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': plot__buf_puts(b, "&amp;"); break;
		case '<': plot__buf_puts(b, "&lt;"); break;
		case '>': plot__buf_puts(b, "&gt;"); break;
		case '"': plot__buf_puts(b, "&quot;"); break;
		default: buf_add(b, s, 1);
		}
	}
}

/* A label for a field of our own .dat files: no separators, quotes or
 * control characters. */
void
plot__dat_label(struct buf *b, const char *s)
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

bool
plot__contains_ci(const char *hay, const char *needle)
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
