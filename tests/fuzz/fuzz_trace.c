/*
 * fuzz_trace.c -- the trace readers of workloads/ (Azure, Mooncake,
 * BurstGPT, Splitwise, Vidur, LLMServingSim, kvsim CSV, and format
 * detection) through wl_open and wl_stream_next, plain or gzip.
 *
 * The first byte chooses: bits 0-2 the format (enum wl_format order:
 * auto, azure, mooncake, burstgpt, splitwise, vidur, llmss, kvsim);
 * bit 3 gzip-compresses the rest before the reader sees it (inputs that
 * are gzip already reach the inflater as they are); bit 4 on_error skip;
 * bits 5-6 the order handling (error, skip, sort with a small window).
 * The rest is the trace file.  Every request returned must keep the
 * stream's documented invariants (wl.h), checked after each call.
 * (trace-stats' accumulators are left out: their 2^20-entry tables cost
 * a second an input under the sanitizers.)
 */
#include "tests/fuzz/fuzz.h"

#include "workloads/wl.h"

#include <stdlib.h>
#include <string.h>
#ifdef FUZZ_HAVE_ZLIB
#include <zlib.h>
#endif

void
fz_setup(void)
{
}

/* gzip data[0..size) into a heap buffer; NULL when it cannot. */
static unsigned char *
gzip_buf(const uint8_t *data, size_t size, size_t *outlen)
{
#ifdef FUZZ_HAVE_ZLIB
	z_stream z;
	unsigned char *out;
	size_t cap = size + size / 100 + 64;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return NULL;
	if ((out = malloc(cap)) == NULL) {
		deflateEnd(&z);
		return NULL;
	}
	z.next_in = (unsigned char *)(uintptr_t)data;
	z.avail_in = (uInt)size;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(out);
		return NULL;
	}
	*outlen = cap - z.avail_out;
	deflateEnd(&z);
	return out;
#else
	(void)data;
	(void)size;
	(void)outlen;
	return NULL;
#endif
}

/* The invariants wl.h states for each returned request. */
static void
check_request(const struct wl_request *r, uint64_t id, int64_t prev)
{
	uint64_t sum = 0;
	uint32_t tok[16];

	if (r->id != id || r->arrival_ns < prev || r->prompt_tokens < 1 ||
	    r->output_tokens < 1 || r->n < 1)
		abort();
	for (uint32_t i = 0; i < r->nsegs; i++)
		sum += r->segs[i].len;
	if (r->nsegs > 0 && sum != r->prompt_tokens)
		abort();
	wl_request_tokens(r, 0, r->prompt_tokens < 16 ? r->prompt_tokens : 16,
			  32000, tok);
	for (size_t i = 0; i < 16 && i < r->prompt_tokens; i++)
		if (tok[i] >= 32000)
			abort();
}

static void
read_stream(const struct wl_config *c)
{
	struct wl_request r;
	struct wl_error e;
	wl_stream *s = NULL;
	char msg[2048];
	int64_t prev = INT64_MIN;
	uint64_t id = 0;
	wl_err rc;

	if (wl_open(c, &s, &e) != WL_OK) {
		wl_error_format(&e, msg, sizeof(msg));
		wl_stream_free(s);
		return;
	}
	while ((rc = wl_stream_next(s, &r)) == WL_OK) {
		check_request(&r, id++, prev);
		prev = r.arrival_ns;
		if (wl_stream_check(s) != WL_CHECK_OK)
			abort();
	}
	if (rc != WL_END)
		wl_error_format(wl_stream_error(s), msg, sizeof(msg));
	if (wl_stream_check(s) != WL_CHECK_OK)
		abort();
	wl_counts_format(wl_stream_counts(s), msg, sizeof(msg));
	wl_stream_free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wl_config c;
	char path[4200];
	unsigned char *gz = NULL;
	unsigned sel;

	if (size < 1)
		return 0;
	sel = data[0];
	data++;
	size--;
	if ((sel & 8) != 0) {
		size_t n;

		if ((gz = gzip_buf(data, size, &n)) != NULL) {
			data = gz;
			size = n;
		}
	}
	if (fz_write("trace", data, size, path, sizeof(path)) == NULL) {
		free(gz);
		return 0;
	}
	free(gz);
	wl_config_init(&c);
	c.format = (enum wl_format)(sel & 7);
	c.on_error = (sel & 16) != 0 ? WL_ON_ERROR_SKIP : WL_ON_ERROR_STOP;
	switch ((sel >> 5) & 3) {
	case 1:
		c.order = WL_ORDER_SKIP;
		break;
	case 2:
	case 3:
		c.order = WL_ORDER_SORT;
		c.sort_window = 4;
		break;
	default:
		c.order = WL_ORDER_ERROR;
		break;
	}
	if ((c.trace = strdup(path)) != NULL)
		read_stream(&c);
	wl_config_release(&c);
	return 0;
}
