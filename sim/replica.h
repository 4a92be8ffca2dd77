/*
 * replica.h -- one serving replica: a scheduler (kvsched.h) over its own
 * allocator, driven by the event engine, timed by the cost model.
 *
 * A step has two halves, as in kvsched.h.  replica_begin() runs
 * kvs_schedule() at the current time, records first-scheduled and
 * prefix-hit milestones and preemptions, and returns the step's duration:
 * the cost model's time for the batch (sim/cost.h) plus the swap-out,
 * swap-in and copy-on-write copies the step asked for.  The caller queues
 * STEP_DONE at now + duration; replica_end() then runs kvs_complete() with
 * the workload's own output tokens (wl_output_tokens), stamps first-token
 * and inter-token times, and hands every finished request to the report.
 *
 * Requests that can never run (prompt >= max_model_len) are rejected at
 * replica_add() and counted, never queued (DESIGN.md "No silent caps").
 *
 * Async scheduling (cfg.async_sched; vllm-v1, docs/run.md "Engine loop:
 * async scheduling"): vLLM chooses step N+1 while step N runs.  The
 * scheduler still sees its calls in the order above (so its decisions are
 * the synchronous loop's, given the same requests), but a request joins
 * the scheduler only at the first step chosen after it arrived: it is held
 * in the replica until then.  A step's CPU time (cost_breakdown cpu_ns)
 * overlaps the GPU time of the step before it, first-scheduled times are
 * when the step was chosen, and a step's output tokens reach their
 * requests at the end of its GPU time, when replica_end() is called.
 *
 * Pipeline parallel (cost_model.pp P > 1, policy vllm-v1, no observer,
 * KV offload or P/D hook; replica_pp.h, docs/scheduler.md R122): up to P
 * batches in flight.  replica_begin() schedules batches while fewer than
 * P are in flight, completing each in the scheduler at once and marking
 * the requests it gave a token in flight (kvs_set_inflight); its step
 * lasts until the oldest batch returns, and replica_end() then hands that
 * batch's tokens and finished requests to the report at its return.
 *
 * The API server in front (cost.h, "the API server"): a request reaches
 * the scheduler at replica_admit_at(), and each output token reaches its
 * client when the server's FIFO has sent it; first-token, inter-token
 * and finish times in the report are the client's.  A constant step time
 * (step_ns > 0) replaces the whole cost model: no API server then.
 *
 * Memory: one record per unfinished request (freed at finish) plus a
 * pointer per request ever added (kvs handles are dense).  Cost per step:
 * O(batch + running) -- the running scan measures internal fragmentation.
 */
#ifndef SIM_REPLICA_H
#define SIM_REPLICA_H

#include "core/kvsched.h"
#include "reports/rpt.h"
#include "sim/cost.h"
#include "sim/ctrace.h"
#include "sim/lora.h"
#include "sim/offload.h"
#include "sim/run.h"
#include "sim/spec.h"
#include "sim/cost_spec.h"
#include "workloads/wl.h"

#include <stdbool.h>
#include <stdint.h>

/* Totals over a replica's life (summed over replicas by the caller). */
struct replica_stats {
	uint64_t added, rejected, finished, truncated;
	uint64_t failed;	/* their client left (replica_fail) */
	uint64_t keyed;		/* of the added, those by key (no ids) */
	uint64_t ends;		/* finished or dropped by the scheduler,
				 * failed ones not counted: what a client
				 * sees end at a step's end */
	uint64_t steps, preemptions, recomputed_tokens;
	uint64_t swap_out_blocks, swap_in_blocks, cow_blocks;
	uint64_t prefix_hit_tokens, prompt_tokens_admitted;
	uint64_t stale_cached_tokens;	/* kvsched.h's kvs_sched.stale */
	uint64_t prompt_tokens_done, gen_tokens_done;	/* computed */
	uint64_t max_batch;	/* most requests in one step */
	double usage_area;	/* sum of kv_usage * ns */
	double usage_max;
	double frag_sum;	/* sum over steps of the internal fraction */
	uint64_t frag_steps;
	int64_t usage_t;	/* last change */
	double usage_now;
	/* per KV cache group (hybrid models): blocks, usage mean and max */
	uint32_t ngroups;
	uint64_t group_blocks[KVC_MAX_GROUPS];
	double group_area[KVC_MAX_GROUPS], group_max[KVC_MAX_GROUPS];
	double group_now[KVC_MAX_GROUPS];
	int64_t busy_ns;	/* steps' time (utilisation) */
	/* LoRA: adapters copied to a GPU slot, of them read from disk
	 * first, and the time those loads took */
	uint64_t lora_loads, lora_disk_loads;
	int64_t lora_load_ns;

	/* speculative decoding (replica_cfg.spec): draft tokens verified,
	 * of them accepted, and verifies (entries with drafts) */
	uint64_t spec_drafts, spec_accepted, spec_verifies;
};

/*
 * A finished request's row, before it goes to the report (a
 * disaggregated run, sim/pd.h): the hook may amend it, or set *drop to
 * keep it out of the report (a prefill replica's half of a request).
 * Not called for failed requests.
 */
struct replica_row_hook {
	void *ctx;
	kv_err (*row)(void *ctx, uint32_t replica, kvs_req h,
		      struct rpt_req *out, bool *drop, char *why,
		      size_t whylen);
};

struct replica_cfg {
	uint32_t index;
	const struct kvs_config *sc;
	const struct kvc_config *kc;
	const struct kvs_policy *policy;	/* NULL: sc->policy by name;
						 * else this one (a plugin's) */
	const struct cost_model *cm;	/* step and copy times (unused for
					 * them with step_ns > 0), swapped
					 * bytes, and the kvsim policy's
					 * preemption prices */
	int64_t step_ns;		/* > 0: constant step time */
	uint32_t vocab;
	bool check;			/* kvs_audit after every half step */
	const struct sim_observer *obs;	/* or NULL */
	ctrace *ct;			/* or NULL */
	bool async_sched;		/* vLLM V1's async scheduling (below) */
	const struct replica_row_hook *rowh;	/* or NULL */

	/* KV offload (sim/offload.h): a manager on the replica's scheduler,
	 * its transfers timed on their links; NULL: none */
	const struct sim_offload_setup *offload;

	/* parallel sampling: a request with n > 1 becomes n child requests
	 * (replica_nsamp.h); false: it runs as one sequence */
	bool fanout;

	/* LoRA adapters (sim/lora.h): requests' adapters go to the
	 * scheduler, their loads and GEMMs into the step time; NULL: off */
	const struct sim_lora_setup *lora;

	/* speculative decoding (sim/spec.h, sim/cost_spec.h): the drafter
	 * and its time; NULL: none */
	const struct sim_spec *spec;
	const struct cost_spec *spec_cost;

	/* parallel sampling as vLLM v0 up to 0.6.3 runs it: a request with
	 * n > 1 is one group of sequences forked after its prompt
	 * (kvs_set_n; policy vllm-v0) */
	bool fork;

	/* fast-forward of steady decode (replica_ff); false: single steps */
	bool fast_forward;
	/* prompts that share no block go to the scheduler by key, without
	 * their ids (kvs_add_keyed; false: every prompt by its ids) */
	bool keyed;
};

typedef struct replica replica;

/* NULL with a message in why on a bad configuration. */
replica *replica_new(const struct replica_cfg *cfg, char *why,
		     size_t whylen);
void replica_free(replica *r);

/*
 * Fast-forward (docs/fastforward.md).  The replica, between steps at now
 * (after replica_end, before replica_begin), makes at once the steady
 * decode steps (kvsched.h kvs_decode_span) that start from now one after
 * another and end by sp->until: the same allocator calls, times, tokens,
 * statistics and report entries the pairs of replica_begin and
 * replica_end would have made.  A step may end requests (finished as
 * replica_end finishes them, and the steps go on with the rest) if it
 * ends by sp->until_end: the caller makes sure no event in (now,
 * until_end] writes a report row or reacts to an end (clients do);
 * until_end <= now: none ends.  Then the tail: the step after them, when
 * it is steady but ends past until, by sp->tail_until, is begun as
 * replica_begin begins it (its time, its notes), and its end waits for
 * replica_end at sp->tail_end (else INT64_MIN): the replica is busy
 * until then, and its state to replica_state is that of the step in
 * flight.  The caller makes sure no event in (now, tail_until] does more
 * to the replica than an arrival held for its step (async scheduling)
 * or a timeseries row; tail_until <= now: no tail.  When the tail ends
 * no request, the steady steps after it that end none are made with it
 * too, while each is chosen before sp->ext_sched and ends by
 * sp->ext_until: sp->ext of them, and sp->tail_end is the last one's
 * end.  The caller makes sure that no request can reach the replica's
 * scheduler before ext_sched (replica_admit_lb), that nothing in (now,
 * ext_until] reads the replica's state or writes a row, and that a
 * request sent to the replica in that time goes after replica_ff_catch
 * (the tokens of the steps ended by then go through the API server
 * first); ext_sched <= now: none.  sp->t_end is the end of the last step
 * made but the tail (now when none), sp->nsteps how many, sp->ended
 * whether the last ended requests.
 * Nothing is done (0 steps) when cfg.fast_forward is off, for a step
 * that is not steady, and where the replica uses what the fast-forward
 * does not cover: an observer, a trace, --check, KV offload, LoRA,
 * speculative decoding, pipeline batches in flight, forked groups, held
 * requests.
 * The caller makes sure no event that can touch the replica falls in
 * (now, until].
 * With sp->arr (NULL: none), the span may take in the requests that
 * arrive in it (docs/fastforward.md): the bounds above are those where
 * the first arrival it does not take in is arr's peek(0); for each it
 * takes in, in order, it asks peek for the one after and bounds for the
 * horizons that one leaves (in sp).  Such a request is held for its step
 * (or admitted in the span) at once, at the time the API server will
 * give it (the span's steps' output before it, and the requests taken in
 * before it); when it arrives the caller hands it over with
 * replica_taken_arrive, not replica_add, after replica_ff_catch.
 */
struct replica_span;
struct replica_arrivals {
	/* the k-th request to arrive (0: the next), valid until the next
	 * call; NULL with *end set when none comes, clear when it is not
	 * known */
	const struct wl_request *(*peek)(void *arg, uint32_t k, bool *end);
	/* sp's horizons from now when r (NULL: none) is the first arrival
	 * not taken in */
	void (*bounds)(void *arg, int64_t now, const struct wl_request *r,
		       struct replica_span *sp);
	void *arg;
};
struct replica_span {
	const struct replica_arrivals *arr;
	int64_t until, until_end, tail_until, ext_sched, ext_until;
	int64_t t_end, tail_end;
	uint64_t nsteps, ext;
	bool ended;
	/* its steps that admitted requests held for them, and whether the
	 * last did (the others the span went past) */
	uint32_t admitted;
	bool adm_last;
};
struct replica_rows;
/* Whether replica_ff may find a span now: false when it would make
 * nothing whatever the horizon (a cheap test, before the caller looks
 * for one). */
bool replica_ff_ready(const replica *rp, int64_t now);
kv_err replica_ff(replica *rp, int64_t now, struct replica_span *sp,
		  const struct replica_rows *rows, rpt *rep, char *why,
		  size_t whylen);
/* A request reaches the replica now: the steps of a span's tail (sp->ext)
 * that end by now are ended first, as their own events would have been
 * (their tokens in the API server before the request). */
kv_err replica_ff_catch(replica *rp, int64_t now, rpt *rep, char *why,
			size_t whylen);
/* The tail's steps ended so (a count for the fast-forward's report). */
uint64_t replica_ff_caught(const replica *rp);
/* Spans' arrivals (replica_span.arr): how many were taken in whose
 * arrival has not come (when some, the next to arrive is the first of
 * them); and its arrival, r,
 * the API server's work on it now unless a span's steps did it (as
 * replica_add would have, to the same time), *admitted when a span
 * admitted it already.  KV_ESTATE when it is not the one taken in. */
uint64_t replica_taken_pending(const replica *rp);
uint64_t replica_taken_total(const replica *rp);	/* all taken in */
kv_err replica_taken_arrive(replica *rp, const struct wl_request *r,
			    bool *admitted, char *why, size_t whylen);
/* The earliest time replica_add can hold request r until (its admission
 * at, in the API server's FIFO): its arrival and its own service; a
 * bound on every later request's too (the FIFO serves them after it), so
 * only its arrival for a prompt it refuses (which takes no service). */
int64_t replica_admit_lb(const replica *rp, const struct wl_request *r);

/*
 * Timeseries rows inside a span (replica_ff; NULL: none).  *next is the
 * next row's time; a row at T falls in the step in flight at T (begun at
 * or before T, ending after it), and is written, if T <= limit, by
 * row(arg), which moves *next on.  While it runs, replica_state and
 * replica_stats give the replica as it stands at T: that step's blocks
 * taken, its tokens not out.  The caller makes sure nothing else would
 * change a row up to limit (no event of the run falls in it).
 */
struct replica_rows {
	const int64_t *next;
	int64_t limit;
	void (*row)(void *arg);
	void *arg;
};

/*
 * Queue a request that arrived at r->arrival_ns.  *rejected is set when
 * it can never fit (counted, not queued).  KV_ENOMEM or a scheduler error.
 */
kv_err replica_add(replica *rp, const struct wl_request *r, bool *rejected,
		   char *why, size_t whylen);

/*
 * When the request added last reaches the engine: its arrival plus its
 * time in the API server (cost.h, cost_fifo: request handling and
 * tokenisation, behind the server's backlog).  Until then it waits in the
 * replica, not in the scheduler; the caller wakes the replica then.
 */
int64_t replica_admit_at(const replica *rp);

/*
 * Start a step at `now`.  *dt_ns: its duration (0 and *started false when
 * there is nothing to run: the replica idles).  Errors come with why; a
 * --check violation is KV_ESTATE.
 */
kv_err replica_begin(replica *rp, int64_t now, int64_t *dt_ns,
		     bool *started, char *why, size_t whylen);

/* End the step begun last, at `now`; finished requests go to rep. */
kv_err replica_end(replica *rp, int64_t now, rpt *rep, char *why,
		   size_t whylen);

/* The scheduler's handle of the request replica_add queued last. */
/*
 * Count (in replica_stats' ends) the requests whose client has seen them
 * end by now: a finished request's end reaches its client through the
 * API server, after the step.  The next such time still to come, or -1
 * (-1 too when the same time was returned before).
 */
int64_t replica_client_ends(replica *rp, int64_t now);

kvs_req replica_last_handle(const replica *rp);

/*
 * Every request's client leaves timeout_ns after it sent it (arrival), as
 * replica_fail will say: a request the engine finishes before that but
 * whose last token reaches the client after it fails too, at that time
 * (a request of a fanned-out group excepted).  0: no timeout.
 */
void replica_set_client_timeout(replica *rp, int64_t timeout_ns);

/*
 * The client of request h gave up at `now` (a timeout): *ended is set
 * when it had not ended yet.  The request fails: its blocks are freed
 * and a failed row goes to rep, at once when no step is in flight, else
 * when the step ends (vLLM aborts between steps), unless it finished in
 * that step -- still a failure, its client is gone.
 */
kv_err replica_fail(replica *rp, kvs_req h, int64_t now, rpt *rep,
		    bool *ended, char *why, size_t whylen);

bool replica_busy(const replica *rp);
bool replica_has_work(const replica *rp);	/* unfinished requests */
uint64_t replica_outstanding(const replica *rp);	/* tokens to do */
uint32_t replica_block_size(const replica *rp);
const struct replica_stats *replica_stats(const replica *rp);
/* Queue lengths and KV blocks, for the timeseries row at t (the requests
 * a span took in count as waiting from their arrival). */
void replica_state(const replica *rp, int64_t t, uint64_t *running,
		   uint64_t *waiting,
		   uint64_t *swapped, uint64_t *used, uint64_t *total,
		   uint64_t *frag_tokens);
/* Close the usage integral at `now` (end of run). */
void replica_close(replica *rp, int64_t now);

/*
 * Unfinished requests whose metric m is already over limit_ns at `now`:
 * waited longer than it without a first token (TTFT), without being
 * scheduled (queueing delay), or at all (E2E).  O(unfinished).
 */
uint64_t replica_late(const replica *rp, int64_t now,
		      enum sim_watch_metric m, int64_t limit_ns);

/*
 * Blocks of the replica's allocator changed at `now` outside its step
 * halves (a KV connector's kvs_release, sim/pd.h): the usage level is
 * taken again (the KV-usage integral, invariant 6).
 */
void replica_blocks_moved(replica *rp, int64_t now);

void replica_set_ctrace(replica *rp, ctrace *ct);
kvs *replica_kvs(replica *rp);

/*
 * The replica's invariants, for a caller to check after any call above (a
 * step half, an add, a close).  0, or the number of the first one broken
 * with a message in why (why may be NULL).  Cost: O(requests ever added +
 * the allocator's blocks), so meant for tests and expensive-check builds.
 *
 *  1  The allocator's own invariants hold (kvc_audit).
 *  2  The scheduler's own invariants hold (kvs_audit: every unfinished
 *     request in exactly one queue with the matching status, running
 *     ones within max_num_seqs, ...).
 *  3  Requests are accounted once: a record slot for every request the
 *     scheduler was given (kvs_nreqs), holding a record exactly while the
 *     request is unfinished.
 *  4  The counts agree: records held = the scheduler's unfinished
 *     requests = the lengths of its waiting, running and swapped queues,
 *     and requests added = finished + failed
 *     + held.
 *  5  The outstanding tokens (the router's measure) are the sum of prompt
 *     and output tokens over the records held and the requests held back
 *     (async scheduling).
 *  6  KV blocks agree with the allocator: as many groups, none with more
 *     free blocks than it had at the start, and the usage level taken at
 *     the last mark (every step half, replica_close) is the allocator's
 *     used / total (no block moves between marks).
 *  7  Time runs forward: each record's milestones are in order (arrival
 *     <= first scheduled <= first token <= last token) and none is later
 *     than the replica's clock, the time of its last mark (a call with an
 *     earlier time than the one before sets the clock back behind them).
 *  8  The step in flight (between replica_begin and replica_end) is the
 *     scheduler's current step, and the tokens its batch computes
 *     (scheduled less prefix-cached) keep within max_num_batched_tokens.
 *  While a span's tail is in flight (replica_ff), the scheduler has made
 *  that step already: 3 to 6 and 8 wait for the tail's end, and 8 asks
 *  only that the tail end after the clock.
 */
int replica_check(const replica *rp, char *why, size_t whylen);

/*
 * KV offload (replica_cfg.offload): the replica's manager (NULL: none),
 * and when an idle replica must be woken to complete a transfer: the
 * earliest completion still to come, or -1 (-1 too when the same time,
 * later than now, was returned before).
 */
const sim_offload *replica_offload(const replica *rp);
int64_t replica_offload_wake(replica *rp, int64_t now);

#endif
