/*
 * wl_write.c -- write a stream as kvsim CSV (docs/workloads.md), so any
 * workload (a generator, a transformed trace) can be saved and read back
 * as the same stream: the reader of the kvsim format takes every column
 * written here.  Explicit token ids (LLMServingSim) are not written; their
 * segment stands for them.
 */
#include "config.h"

#include "workloads/wl_int.h"

#include <inttypes.h>

wl_err
wl_write_kvsim_header(FILE *f)
{
	if (fputs("arrival_ns,prompt_tokens,output_tokens,priority,n,session,"
	    "turn,think_ns,out_key,segments\n", f) < 0)
		return WL_EIO;
	return WL_OK;
}

wl_err
wl_write_kvsim_row(FILE *f, const struct wl_request *r)
{
	if (fprintf(f, "%" PRId64 ",%" PRIu32 ",%" PRIu32 ",%" PRId32 ",%"
	    PRIu32 ",%" PRIu64 ",%" PRIu32 ",%" PRId64 ",%" PRIu64 ",",
	    r->arrival_ns, r->prompt_tokens, r->output_tokens, r->priority,
	    r->n, r->session, r->turn, r->think_ns, r->out_key) < 0)
		return WL_EIO;
	for (uint32_t i = 0; i < r->nsegs; i++)
		if (fprintf(f, "%s%" PRIu64 ":%" PRIu32, i ? "|" : "",
		    r->segs[i].key, r->segs[i].len) < 0)
			return WL_EIO;
	if (fputc('\n', f) == EOF)
		return WL_EIO;
	return WL_OK;
}
