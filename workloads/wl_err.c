/*
 * wl_err.c -- error codes, error records and the rejection report.
 */
#include "config.h"

#include "workloads/wl_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

static const char *const wl_err_text[] = {
#define WL_X_TEXT(name, text) text,
	WL_ERRORS(WL_X_TEXT)
#undef WL_X_TEXT
};

const char *
wl_strerror(wl_err e)
{
	if ((size_t)e >= sizeof(wl_err_text) / sizeof(wl_err_text[0]))
		return "unknown error";
	return wl_err_text[e];
}

void
wl_error_clear(struct wl_error *e)
{
	memset(e, 0, sizeof(*e));
}

void
wl__error_set(struct wl_error *e, const char *file, uint64_t line,
    uint32_t col, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return;
	snprintf(e->file, sizeof(e->file), "%s", file != NULL ? file : "");
	e->line = line;
	e->col = col;
	va_start(ap, fmt);
	vsnprintf(e->what, sizeof(e->what), fmt, ap);
	va_end(ap);
}

wl_err
wl__fail(struct wl_stream *p, wl_err code, const char *file, uint64_t line,
    uint32_t col, const char *fmt, ...)
{
	va_list ap;
	struct wl_error *e = &p->err;

	snprintf(e->file, sizeof(e->file), "%s", file != NULL ? file : "");
	e->line = line;
	e->col = col;
	va_start(ap, fmt);
	vsnprintf(e->what, sizeof(e->what), fmt, ap);
	va_end(ap);
	return code;
}

void
wl_error_format(const struct wl_error *e, char *buf, size_t size)
{
	if (e->file[0] == '\0')
		snprintf(buf, size, "%s", e->what);
	else if (e->line == 0)
		snprintf(buf, size, "%s: %s", e->file, e->what);
	else if (e->col == 0)
		snprintf(buf, size, "%s:%" PRIu64 ": %s", e->file, e->line,
		    e->what);
	else
		snprintf(buf, size, "%s:%" PRIu64 ":%" PRIu32 ": %s", e->file,
		    e->line, e->col, e->what);
}

void
wl_counts_format(const struct wl_counts *c, char *buf, size_t size)
{
	static const struct {
		size_t off;
		const char *name;
	} f[] = {
		{ offsetof(struct wl_counts, skipped),
		  "malformed rows skipped" },
		{ offsetof(struct wl_counts, rej_zero),
		  "rejected: zero length" },
		{ offsetof(struct wl_counts, rej_huge),
		  "rejected: length >= 2^31" },
		{ offsetof(struct wl_counts, rej_order),
		  "rejected: out of order" },
		{ offsetof(struct wl_counts, rej_filter),
		  "rejected: length filter" },
		{ offsetof(struct wl_counts, rej_max_len),
		  "rejected: longer than max_model_len" },
		{ offsetof(struct wl_counts, capped), "capped (cap.*)" },
		{ offsetof(struct wl_counts, sorted), "reordered by sort" },
	};
	size_t used = 0;

	if (size == 0)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		uint64_t v;
		int k;

		memcpy(&v, (const char *)c + f[i].off, sizeof(v));
		if (v == 0)
			continue;
		k = snprintf(buf + used, size - used, "%s%s %" PRIu64,
		    used ? ", " : "", f[i].name, v);
		if (k < 0 || (size_t)k >= size - used)
			return;
		used += (size_t)k;
	}
}
