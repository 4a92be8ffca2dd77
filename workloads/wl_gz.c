/*
 * wl_gz.c -- gzip input through zlib's inflate (built when configure finds
 * zlib; wl_gz_none.c otherwise).  Concatenated members are read as one
 * stream, as gzip -dc does.
 */
#include "config.h"

#include "workloads/wl_int.h"

#include <stdlib.h>
#include <string.h>

#include <zlib.h>

struct wl_gz {
	z_stream zs;
	bool member_done;	/* the last member ended (Z_STREAM_END) */
};

bool
wl__gz_available(void)
{
	return true;
}

struct wl_gz *
wl__gz_new(void)
{
	struct wl_gz *z = calloc(1, sizeof(*z));

	if (z == NULL)
		return NULL;
	/* 16 + MAX_WBITS: gzip wrapper only. */
	if (inflateInit2(&z->zs, 16 + MAX_WBITS) != Z_OK) {
		free(z);
		return NULL;
	}
	return z;
}

wl_err
wl__gz_inflate(struct wl_gz *z, const unsigned char **in, size_t *in_len,
    char *out, size_t out_cap, size_t *produced, char *what,
    size_t what_size)
{
	int zr;
	uInt in_n = *in_len > UINT32_MAX ? UINT32_MAX : (uInt)*in_len;
	uInt out_n = out_cap > UINT32_MAX ? UINT32_MAX : (uInt)out_cap;

	*produced = 0;
	if (z->member_done) {
		if (inflateReset(&z->zs) != Z_OK) {
			snprintf(what, what_size, "gzip: cannot reset inflate");
			return WL_EPARSE;
		}
		z->member_done = false;
	}
	z->zs.next_in = (Bytef *)(uintptr_t)*in;
	z->zs.avail_in = in_n;
	z->zs.next_out = (Bytef *)out;
	z->zs.avail_out = out_n;
	zr = inflate(&z->zs, Z_NO_FLUSH);
	*produced = out_n - z->zs.avail_out;
	*in += in_n - z->zs.avail_in;
	*in_len -= in_n - z->zs.avail_in;
	switch (zr) {
	case Z_STREAM_END:
		z->member_done = true;
		return WL_OK;
	case Z_OK:
		return WL_OK;
	case Z_BUF_ERROR:
		if (*produced > 0 || in_n != z->zs.avail_in)
			return WL_OK;
		snprintf(what, what_size, "gzip data is corrupt (no progress)");
		return WL_EPARSE;
	default:
		snprintf(what, what_size, "gzip data is corrupt (zlib: %s)",
		    z->zs.msg != NULL ? z->zs.msg : "error");
		return WL_EPARSE;
	}
}

bool
wl__gz_complete(const struct wl_gz *z)
{
	return z->member_done;
}

void
wl__gz_free(struct wl_gz *z)
{
	if (z == NULL)
		return;
	inflateEnd(&z->zs);
	free(z);
}
