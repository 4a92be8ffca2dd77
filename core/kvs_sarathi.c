/*
 * kvs_sarathi.c -- policy "sarathi": Sarathi-Serve's stall-free batching
 * (microsoft/sarathi-serve, sarathi/core/scheduler/sarathi_scheduler.py,
 * SarathiScheduler with a fixed chunk size) on the `exact` allocator.
 * docs/policies.md is the normative description; this is its summary.
 *
 * A step has one token budget, chunk_size.  Running requests are kept in
 * arrival order (Sarathi re-sorts them FCFS every step).
 *   1. Decodes first, in running order, one token each (+ lookahead slots).
 *      A decode that does not fit preempts the LAST running request not yet
 *      visited in this step (recompute: blocks freed, pushed on the front of
 *      waiting), or itself when none is left.
 *   2. Running prefills (deferred in step 1) in running order: the next
 *      chunk min(T - C, budget left); 0 skips the request.
 *   3. Waiting requests from the head while: the whole remaining prompt
 *      fits (below), fewer than max_num_seqs run, and the chunk is not 0.
 * Memory (Sarathi reserves a prompt's blocks at admission): the rest of
 * every running prefill is RESERVED.  A decode fits iff its exact need is
 * at most free - reserved; an admission iff the blocks of its whole prompt
 * (prefix hits claimed) are at most free - reserved - watermark; a prefill
 * chunk always fits (it draws on its own reservation).  So a prefill never
 * stalls for memory and admission never causes a later preemption of a
 * half-computed prompt.  Exact counts replace Sarathi's "one free block per
 * decode" heuristic, so nobody is preempted while the step still fits.
 *
 * Invariants kept: batch tokens <= chunk_size (decodes fit because
 * chunk_size >= max_num_seqs is a setup check), running <= max_num_seqs,
 * free >= reserved between steps, every action the policy checked succeeds
 * (a failure after a positive check is reported as KV_EREF).
 *
 * Cost per step: O(running + admitted) allocator calls; preemption moves a
 * victim with O(queue) array shifts (rare).  No allocation after init.
 */
#include "kvsched.h"
#include "kvs_exact.h"

#include <stdlib.h>
#include <string.h>

#define SARATHI_CHUNK_DEFAULT 512	/* SarathiSchedulerConfig.chunk_size */
#define SARATHI_SEQS_DEFAULT 128	/* max_num_seqs */

static kv_err
sar_configure(struct kvs_config *c, const struct kvc_config *kc, char *why,
	      size_t whylen)
{
	uint64_t wm, G;

	if (c->chunked_prefill == 0)
		return kvs__xfail(why, whylen, "sarathi always chunks prefills "
				"(chunked_prefill off is not supported)");
	if (c->long_prefill_threshold != KVS_UNSET)
		return kvs__xfail(why, whylen, "sarathi has no "
				"long_prefill_threshold (its chunk_size "
				"bounds every prefill)");
	if (c->preemption == 1)
		return kvs__xfail(why, whylen, "sarathi preempts by recompute "
				"only (preemption swap is not supported)");
	if (c->priority == 1)
		return kvs__xfail(why, whylen, "sarathi schedules fcfs only");
	if (c->chunk_size == KVS_UNSET)
		c->chunk_size = c->max_num_batched_tokens != KVS_UNSET ?
				c->max_num_batched_tokens :
				SARATHI_CHUNK_DEFAULT;
	if (c->max_num_batched_tokens == KVS_UNSET)
		c->max_num_batched_tokens = c->chunk_size;
	if (c->chunk_size < 1 || c->chunk_size > UINT32_MAX)
		return kvs__xfail(why, whylen, "chunk_size must be at least 1");
	if (c->max_num_batched_tokens != c->chunk_size)
		return kvs__xfail(why, whylen, "sarathi's token budget is its "
				"chunk_size: max_num_batched_tokens, if given, "
				"must equal it");
	if (c->max_num_seqs == KVS_UNSET)
		c->max_num_seqs = SARATHI_SEQS_DEFAULT;
	if (c->max_num_seqs < 1 || c->max_num_seqs > UINT32_MAX)
		return kvs__xfail(why, whylen,
				  "max_num_seqs must be at least 1");
	if (c->chunk_size < c->max_num_seqs)
		return kvs__xfail(why, whylen, "chunk_size must be at least "
				"max_num_seqs (every running decode must fit "
				"in one step)");
	if (c->lookahead == KVS_UNSET)
		c->lookahead = 0;
	if (c->lookahead < 0 || c->lookahead > 65536)
		return kvs__xfail(why, whylen, "lookahead out of range");
	c->chunked_prefill = 1;
	c->preemption = 0;
	c->priority = 0;
	c->long_prefill_threshold = 0;
	G = kc->gpu_blocks;
	wm = (uint64_t)(kc->watermark * (double)G);
	if (kvs__xalone_blocks(kc, (uint64_t)c->chunk_size,
			     (uint64_t)c->lookahead) + wm > G)
		return kvs__xfail(why, whylen, "one max_model_len request does "
				"not fit in gpu_blocks minus the watermark");
	return KV_OK;
}

/* ---- a step -------------------------------------------------------- */

/* Policy state: scratch parallel to the running queue (grows, never
 * shrinks: no allocation in a steady state). */
struct sar {
	struct kvs_xview v;
};

static kv_err
sar_init(kvs *s, void **state)
{
	(void)s;
	*state = calloc(1, sizeof(struct sar));
	return *state != NULL ? KV_OK : KV_ENOMEM;
}

static void
sar_release(void *state)
{
	struct sar *sa = state;

	if (sa != NULL)
		kvs__xview_release(&sa->v);
	free(sa);
}

/* Insert r into running keeping arrival (request id) order. */
static kv_err
sar_run_insert(struct kvs_xstep *x, kvs_req r)
{
	uint32_t i = kvs_queue_len(x->s, KVS_Q_RUNNING);

	while (i > 0 && kvs_queue_at(x->s, KVS_Q_RUNNING, i - 1) > r)
		i--;
	return kvs_queue_insert(x->s, KVS_Q_RUNNING, i, r);
}

/* Preempt running[j] by recompute; it goes to the front of waiting. */
static kv_err
sar_preempt(struct kvs_xstep *x, uint32_t j)
{
	kvs_req v;
	kv_err e = kvs__xpreempt(x, j, KVS_PREEMPT_RECOMPUTE, &v);

	return e != KV_OK ? e : kvs_queue_insert(x->s, KVS_Q_WAITING, 0, v);
}

/* Room for running[i]'s decode: preempt the last running request until
 * it fits, or running[i] itself when it is the last. */
static kv_err
sar_make_room(struct kvs_xstep *x, uint32_t i, uint64_t need, bool *self)
{
	kv_err e;

	*self = false;
	while (need + x->reserved > kvs__xfree(x->k)) {
		if (x->nrun - 1 == i) {
			*self = true;
			return sar_preempt(x, i);
		}
		if ((e = sar_preempt(x, x->nrun - 1)) != KV_OK)
			return e;
	}
	return KV_OK;
}

static kv_err
sar_schedule(kvs *s, void *state)
{
	struct sar *sa = state;
	struct kvs_xstep x;
	kv_err e;

	memset(&x, 0, sizeof(x));
	x.run_insert = sar_run_insert;
	x.make_room = sar_make_room;
	/* 1. Decodes, in running order; prefills are deferred to 2. */
	if ((e = kvs__xstep_begin(&x, s, &sa->v, (uint32_t)kvs_config_of(s)->
				  chunk_size)) != KV_OK ||
	    (e = kvs__xdecodes(&x)) != KV_OK)
		return e;
	/* 2. Running prefills: the next chunk of each (reserved). */
	if ((e = kvs__xprefills(&x)) != KV_OK)
		return e;
	/* 3. New prefills from the head of waiting, unless this step
	 * preempted (a victim would be re-admitted at once). */
	if (kvs_current_step(s)->npreempt > 0)
		return KV_OK;
	return kvs__xadmit(&x);
}

const struct kvs_policy kvs__sarathi_policy = {
	.abi = KVS_ABI,
	.name = "sarathi",
	.mode = KVC_EXACT,
	.configure = sar_configure,
	.init = sar_init,
	.release = sar_release,
	.schedule = sar_schedule,
};
