/*
 * wl_io.c -- a buffered line reader over plain or gzip-compressed input.
 *
 * Invariant: buf[start, end) holds text not yet returned; scan >= start is
 * where the search for the next '\n' resumes.  Memory is one text buffer
 * (grown only for a line longer than it, up to WL_LINE_MAX) and, for gzip,
 * one input buffer.  Gzip is recognised by its magic bytes, not by the
 * file name, and inflated here (zlib), so standard input works too.
 * Rejected: stdio fgets (an extra copy and no CRLF/last-line handling),
 * mmap (no gzip, no pipes).
 */
#include "config.h"

#include "workloads/wl_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WL_BUF_INIT ((size_t)1 << 20)
#define WL_RAW_SIZE ((size_t)1 << 18)
#define WL_LINE_MAX ((size_t)1 << 30)

static wl_err
read_raw(struct wl_lines *lr, void *dst, size_t cap, size_t *got,
    struct wl_error *err)
{
	ssize_t k;

	for (;;) {
		k = read(lr->fd, dst, cap);
		if (k >= 0)
			break;
		if (errno == EINTR)
			continue;
		wl__error_set(err, lr->name, 0, 0, "read error: %s",
		    strerror(errno));
		return WL_EIO;
	}
	*got = (size_t)k;
	return WL_OK;
}

wl_err
wl__lines_open(struct wl_lines *lr, const char *path, struct wl_error *err)
{
	size_t got = 0;
	wl_err rc;

	memset(lr, 0, sizeof(*lr));
	lr->fd = -1;
	if (strcmp(path, "-") == 0) {
		snprintf(lr->name, sizeof(lr->name), "<stdin>");
		lr->fd = STDIN_FILENO;
	} else {
		snprintf(lr->name, sizeof(lr->name), "%s", path);
		lr->fd = open(path, O_RDONLY);
		if (lr->fd < 0) {
			wl__error_set(err, path, 0, 0, "cannot open: %s",
			    strerror(errno));
			return WL_EIO;
		}
		lr->own_fd = true;
	}
	lr->cap = WL_BUF_INIT;
	lr->buf = malloc(lr->cap);
	if (lr->buf == NULL) {
		wl__lines_close(lr);
		wl__error_set(err, lr->name, 0, 0, "out of memory");
		return WL_ENOMEM;
	}
	/* Sniff the first bytes; they stay in buf (or raw) for later. */
	while (got < 2) {
		size_t k;

		rc = read_raw(lr, lr->buf + got, lr->cap - got, &k, err);
		if (rc != WL_OK) {
			wl__lines_close(lr);
			return rc;
		}
		if (k == 0) {
			lr->eof = true;
			break;
		}
		got += k;
	}
	if (got >= 2 && (unsigned char)lr->buf[0] == 0x1f &&
	    (unsigned char)lr->buf[1] == 0x8b) {
		if (!wl__gz_available()) {
			wl__lines_close(lr);
			wl__error_set(err, lr->name, 0, 0,
			    "gzip-compressed input, and this kvsim was built "
			    "without zlib; decompress it first (gzip -dc)");
			return WL_EGZIP;
		}
		lr->gz = true;
		lr->z = wl__gz_new();
		lr->raw_cap = got > WL_RAW_SIZE ? got : WL_RAW_SIZE;
		lr->raw = malloc(lr->raw_cap);
		if (lr->z == NULL || lr->raw == NULL) {
			wl__lines_close(lr);
			wl__error_set(err, lr->name, 0, 0, "out of memory");
			return WL_ENOMEM;
		}
		memcpy(lr->raw, lr->buf, got);
		lr->raw_len = got;
		lr->raw_pos = 0;
	} else {
		lr->end = got;
		lr->bytes = 0;
	}
	return WL_OK;
}

/*
 * Inflate into out[0, room): *got bytes (> 0 unless *more is false, at the
 * end of the stream).
 */
static wl_err
gz_more(struct wl_lines *lr, char *out, size_t room, size_t *got,
    bool *more, struct wl_error *err)
{
	wl_err rc;

	*more = true;
	*got = 0;
	for (;;) {
		const unsigned char *in = lr->raw + lr->raw_pos;
		size_t in_len = lr->raw_len - lr->raw_pos, k;
		char what[256];

		if (in_len > 0) {
			rc = wl__gz_inflate(lr->z, &in, &in_len, out, room,
			    got, what, sizeof(what));
			lr->raw_pos = (size_t)(in - lr->raw);
			if (rc != WL_OK) {
				wl__error_set(err, lr->name, 0, 0, "%s", what);
				return rc;
			}
			if (*got > 0)
				return WL_OK;
			if (in_len > 0)
				continue;	/* header bytes only */
		}
		if (lr->eof) {
			if (!wl__gz_complete(lr->z)) {
				wl__error_set(err, lr->name, 0, 0,
				    "truncated gzip stream");
				return WL_EPARSE;
			}
			*more = false;
			return WL_OK;
		}
		rc = read_raw(lr, lr->raw, lr->raw_cap, &k, err);
		if (rc != WL_OK)
			return rc;
		lr->raw_len = k;
		lr->raw_pos = 0;
		if (k == 0)
			lr->eof = true;
	}
}

/* Append more text at buf[end]; sets *more = false at end of input. */
static wl_err
fill(struct wl_lines *lr, bool *more, struct wl_error *err)
{
	size_t room = lr->cap - lr->end, got;
	wl_err rc;

	*more = true;
	if (lr->gz) {
		rc = gz_more(lr, lr->buf + lr->end, room, &got, more, err);
		if (rc == WL_OK)
			lr->end += got;
		return rc;
	}
	if (lr->eof) {
		*more = false;
		return WL_OK;
	}
	rc = read_raw(lr, lr->buf + lr->end, room, &got, err);
	if (rc != WL_OK)
		return rc;
	if (got == 0) {
		lr->eof = true;
		*more = false;
	}
	lr->end += got;
	return WL_OK;
}

bool
wl__lines_gz_corrupt(struct wl_lines *lr, struct wl_error *err)
{
	char out[1 << 16];
	size_t got;
	bool more = true;

	if (!lr->gz)
		return false;
	while (more)
		if (gz_more(lr, out, sizeof(out), &got, &more, err) != WL_OK)
			return true;
	return false;
}

wl_err
wl__lines_next(struct wl_lines *lr, const char **line, size_t *len,
    struct wl_error *err)
{
	for (;;) {
		char *nl = NULL;
		bool more;
		wl_err rc;

		if (lr->scan < lr->end)
			nl = memchr(lr->buf + lr->scan, '\n',
			    lr->end - lr->scan);
		if (nl != NULL) {
			size_t n = (size_t)(nl - (lr->buf + lr->start));

			*line = lr->buf + lr->start;
			lr->bytes += n + 1;
			lr->start = lr->scan = (size_t)(nl - lr->buf) + 1;
			if (n > 0 && (*line)[n - 1] == '\r')
				n--;
			*len = n;
			lr->line++;
			return WL_OK;
		}
		lr->scan = lr->end;
		/* Make room: move the partial line to the front, or grow. */
		if (lr->start > 0 && lr->end == lr->cap) {
			memmove(lr->buf, lr->buf + lr->start,
			    lr->end - lr->start);
			lr->end -= lr->start;
			lr->scan = lr->end;
			lr->start = 0;
		}
		if (lr->end == lr->cap) {
			char *nb;

			if (lr->cap >= WL_LINE_MAX) {
				wl__error_set(err, lr->name, lr->line + 1, 1,
				    "line longer than %zu bytes", WL_LINE_MAX);
				return WL_EPARSE;
			}
			nb = realloc(lr->buf, lr->cap * 2);
			if (nb == NULL) {
				wl__error_set(err, lr->name, lr->line + 1, 1,
				    "out of memory for a long line");
				return WL_ENOMEM;
			}
			lr->buf = nb;
			lr->cap *= 2;
		}
		rc = fill(lr, &more, err);
		if (rc != WL_OK)
			return rc;
		if (!more) {
			size_t n = lr->end - lr->start;

			if (n == 0)
				return WL_END;
			/* Last line without a terminator. */
			*line = lr->buf + lr->start;
			lr->bytes += n;
			lr->start = lr->scan = lr->end;
			if ((*line)[n - 1] == '\r')
				n--;
			*len = n;
			lr->line++;
			return WL_OK;
		}
	}
}

void
wl__lines_close(struct wl_lines *lr)
{
	if (lr->own_fd && lr->fd >= 0)
		close(lr->fd);
	lr->fd = -1;
	lr->own_fd = false;
	wl__gz_free(lr->z);
	lr->z = NULL;
	free(lr->raw);
	lr->raw = NULL;
	free(lr->buf);
	lr->buf = NULL;
}

bool
wl_gzip_supported(void)
{
	return wl__gz_available();
}
