/*
 * wl_gz_none.c -- built when configure found no zlib: gzip input is
 * refused with a clear message (wl_io.c asks wl__gz_available() first).
 */
#include "config.h"

#include "workloads/wl_int.h"

bool
wl__gz_available(void)
{
	return false;
}

struct wl_gz *
wl__gz_new(void)
{
	return NULL;
}

wl_err
wl__gz_inflate(struct wl_gz *z, const unsigned char **in, size_t *in_len,
    char *out, size_t out_cap, size_t *produced, char *what,
    size_t what_size)
{
	(void)z;
	(void)in;
	(void)in_len;
	(void)out;
	(void)out_cap;
	*produced = 0;
	snprintf(what, what_size, "gzip input needs zlib");
	return WL_EGZIP;
}

bool
wl__gz_complete(const struct wl_gz *z)
{
	(void)z;
	return false;
}

void
wl__gz_free(struct wl_gz *z)
{
	(void)z;
}
