/*
 * wl_json.c -- a cursor over one JSON object per line (Mooncake,
 * LLMServingSim).  It validates what it reads and never allocates: strings
 * come back as raw slices of the line, numbers as their text, so the
 * caller parses exactly the fields it needs.  Rejected: a general JSON DOM
 * (allocates per row, and the rows are flat).
 */
#include "config.h"

#include "workloads/wl_int.h"

#include <string.h>

#define WL_JSON_DEPTH 64

void
wl__j_init(struct wl_jcur *j, const char *line, size_t len)
{
	j->line = j->p = line;
	j->end = line + len;
	j->what = NULL;
	j->at = line;
}

static bool
jfail(struct wl_jcur *j, const char *at, const char *what)
{
	j->what = what;
	j->at = at;
	return false;
}

void
wl__j_ws(struct wl_jcur *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
	    *j->p == '\r' || *j->p == '\n'))
		j->p++;
}

bool
wl__j_peek(struct wl_jcur *j, char c)
{
	wl__j_ws(j);
	return j->p < j->end && *j->p == c;
}

bool
wl__j_expect(struct wl_jcur *j, char c)
{
	wl__j_ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return true;
	}
	switch (c) {
	case '{': return jfail(j, j->p, "expected '{'");
	case '}': return jfail(j, j->p, "expected ',' or '}'");
	case ':': return jfail(j, j->p, "expected ':'");
	case ']': return jfail(j, j->p, "expected ',' or ']'");
	case '[': return jfail(j, j->p, "expected '['");
	default:
		return jfail(j, j->p, "unexpected character");
	}
}

bool
wl__j_string(struct wl_jcur *j, const char **s, size_t *n)
{
	const char *q;

	wl__j_ws(j);
	if (j->p >= j->end || *j->p != '"')
		return jfail(j, j->p, "expected a string");
	q = j->p + 1;
	while (q < j->end && *q != '"') {
		if ((unsigned char)*q < 0x20)
			return jfail(j, q, "control character in a string");
		if (*q == '\\') {
			if (q + 1 >= j->end)
				break;
			q++;
		}
		q++;
	}
	if (q >= j->end)
		return jfail(j, j->p, "unterminated string");
	*s = j->p + 1;
	*n = (size_t)(q - j->p - 1);
	j->p = q + 1;
	return true;
}

bool
wl__j_number(struct wl_jcur *j, const char **s, size_t *n)
{
	const char *q;

	wl__j_ws(j);
	q = j->p;
	if (q < j->end && *q == '-')
		q++;
	if (q >= j->end || !WL_ISDIGIT(*q))
		return jfail(j, j->p, "expected a number");
	while (q < j->end && (WL_ISDIGIT(*q) || *q == '.' ||
	    *q == 'e' || *q == 'E' || *q == '+' || *q == '-'))
		q++;
	*s = j->p;
	*n = (size_t)(q - j->p);
	j->p = q;
	return true;
}

static bool
literal(struct wl_jcur *j, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
		return jfail(j, j->p, "unexpected character");
	j->p += n;
	return true;
}

static bool
skip_depth(struct wl_jcur *j, int depth)
{
	const char *s;
	size_t n;

	if (depth > WL_JSON_DEPTH)
		return jfail(j, j->p, "nested too deeply");
	wl__j_ws(j);
	if (j->p >= j->end)
		return jfail(j, j->p, "expected a value");
	switch (*j->p) {
	case '"':
		return wl__j_string(j, &s, &n);
	case '{':
		j->p++;
		if (wl__j_peek(j, '}')) {
			j->p++;
			return true;
		}
		for (;;) {
			if (!wl__j_string(j, &s, &n) || !wl__j_expect(j, ':') ||
			    !skip_depth(j, depth + 1))
				return false;
			if (wl__j_peek(j, ',')) {
				j->p++;
				continue;
			}
			return wl__j_expect(j, '}');
		}
	case '[':
		j->p++;
		if (wl__j_peek(j, ']')) {
			j->p++;
			return true;
		}
		for (;;) {
			if (!skip_depth(j, depth + 1))
				return false;
			if (wl__j_peek(j, ',')) {
				j->p++;
				continue;
			}
			return wl__j_expect(j, ']');
		}
	case 't':
		return literal(j, "true");
	case 'f':
		return literal(j, "false");
	case 'n':
		return literal(j, "null");
	default:
		return wl__j_number(j, &s, &n);
	}
}

bool
wl__j_skip(struct wl_jcur *j)
{
	return skip_depth(j, 0);
}
