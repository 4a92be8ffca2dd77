/*
 * ctrace.h -- a run's steps and requests as Chrome trace-event JSON
 * (`kvsim run --chrome-trace`), which Perfetto (ui.perfetto.dev) and
 * chrome://tracing open.
 *
 * One process per replica.  Thread 1 holds the steps as complete events
 * ("ph":"X": start and duration, with the batch in args); each request is
 * an async slice ("ph":"b"/"e", id = the workload's request id) from
 * arrival to finish with nested slices "queued" (arrival to first
 * scheduled), "prefill" (to the first token) and "decode" (to the
 * finish); counters ("ph":"C") carry running/waiting/swapped and KV usage
 * at each timeseries interval.  Times are microseconds with three
 * decimals, exact from the integer-ns clock.  Events are written as they
 * happen (the format does not need them sorted), so memory stays flat.
 */
#ifndef SIM_CTRACE_H
#define SIM_CTRACE_H

#include "reports/rpt.h"

#include <stdint.h>
#include <stdio.h>

typedef struct ctrace ctrace;

/* Starts the JSON document on f (the caller's).  NULL: out of memory. */
ctrace *ctrace_new(FILE *f, const char *run_id);

/* A replica's process name (once per replica). */
void ctrace_replica(ctrace *c, uint32_t replica, const char *policy);

struct ctrace_step {
	uint64_t number;
	uint32_t nsched, tokens, npreempt, nswap_out, nswap_in, ncow;
};

void ctrace_step(ctrace *c, uint32_t replica, int64_t t0_ns, int64_t dt_ns,
		 const struct ctrace_step *s);
void ctrace_request(ctrace *c, const struct rpt_req *q);
void ctrace_counters(ctrace *c, int64_t t_ns, const struct rpt_sample *s);

/* Closes the document; 0, or -1 if any write failed.  Frees c. */
int ctrace_end(ctrace *c);
/* Frees c without a write (its FILE may be closed: a failed run's). */
void ctrace_discard(ctrace *c);

#endif
