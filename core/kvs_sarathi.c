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

/* ---- per-step helpers ---------------------------------------------- */

/* What a step needs to know of a running request, read once. */

/* Policy state: scratch parallel to the running queue (grows, never
 * shrinks: no allocation in a steady state). */
struct sar {
	struct kvs_xview v;
};

struct sar_step {
	kvs *s;
	kvc *k;
	struct sar *sa;
	uint32_t L, budget, used, maxseqs, nrun;
	uint64_t reserved;	/* blocks the running prefills still need */
	uint64_t wm;
};

/* Read the running queue; the rest of every prefill is reserved. */
static kv_err
sar_classify(struct sar_step *st)
{
	kv_err e = kvs__xview_read(st->s, &st->sa->v);

	st->nrun = st->sa->v.n;
	st->reserved = st->sa->v.reserved;
	return e;
}

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
sar_run_insert(kvs *s, kvs_req r)
{
	uint32_t n = kvs_queue_len(s, KVS_Q_RUNNING), i = n;

	while (i > 0 && kvs_queue_at(s, KVS_Q_RUNNING, i - 1) > r)
		i--;
	return kvs_queue_insert(s, KVS_Q_RUNNING, i, r);
}

/* Preempt running[j] by recompute; it goes to the front of waiting. */
static kv_err
sar_preempt(struct sar_step *st, uint32_t j)
{
	struct kvs_xri *ri = &st->sa->v.ri[j];
	kvs_req v = ri->r;
	kv_err e;

	if (!ri->decode && ri->C < ri->T) {
		uint64_t rest;

		if ((e = kvs__xneed(st->k, ri->seq, 0,
		    st->budget, &rest)) != KV_OK)
			return e;
		st->reserved -= rest < st->reserved ? rest : st->reserved;
	}
	if ((e = kvs_preempt_recompute(st->s, v)) != KV_OK)
		return e;
	(void)kvs_queue_remove(st->s, KVS_Q_RUNNING, j);
	memmove(ri, ri + 1, (st->nrun - j - 1) * sizeof(*ri));
	st->nrun--;
	return kvs_queue_insert(st->s, KVS_Q_WAITING, 0, v);
}


static kv_err
sar_schedule(kvs *s, void *state)
{
	const struct kvs_config *c = kvs_config_of(s);
	const struct kvc_config *kc;
	struct sar_step st;
	uint32_t i, nprefill = 0;
	kv_err e;

	memset(&st, 0, sizeof(st));
	st.s = s;
	st.k = kvs_kv(s);
	st.sa = state;
	kc = kvc_config_of(st.k);
	st.L = (uint32_t)c->lookahead;
	st.budget = (uint32_t)c->chunk_size;
	st.maxseqs = (uint32_t)c->max_num_seqs;
	st.wm = (uint64_t)(kc->watermark * (double)kc->gpu_blocks);
	if ((e = sar_classify(&st)) != KV_OK)
		return e;

	/* 1. Decodes, in running order; prefills are deferred to 2. */
	for (i = 0; i < st.nrun;) {
		struct kvs_xri *ri = &st.sa->v.ri[i];
		bool self = false;
		uint64_t need;

		if (!ri->decode) {
			nprefill += ri->C < ri->T;
			i++;
			continue;
		}
		if (st.reserved == 0) {
			/* Nothing reserved: the action is its own check. */
			e = kvc_append_slots(st.k, ri->seq, st.L);
			if (e == KV_OK)
				goto scheduled;
			if (e != KV_ENOSPC)
				return e;
		}
		if ((e = kvs__xneed(st.k, ri->seq, st.L,
		    st.budget, &need)) != KV_OK)
			return e;
		while (need + st.reserved > kvs__xfree(st.k)) {
			if (st.nrun - 1 == i) {
				self = true;
				break;
			}
			if ((e = sar_preempt(&st, st.nrun - 1)) != KV_OK)
				return e;
		}
		if (self) {
			if ((e = sar_preempt(&st, i)) != KV_OK)
				return e;
			break;	/* nobody after it is left */
		}
		e = kvc_append_slots(st.k, ri->seq, st.L);
		if (e == KV_ENOSPC)
			return KV_EREF;	/* the check said it fits */
		if (e != KV_OK)
			return e;
scheduled:
		if ((e = kvs__xcow(s, st.k)) != KV_OK ||
		    (e = kvs_emit_sched(s, ri->r, 1)) != KV_OK)
			return e;
		st.used++;
		i++;
	}

	/* 2. Running prefills: the next chunk of each (reserved). */
	for (i = 0; nprefill > 0 && i < st.nrun; i++) {
		struct kvs_xri *ri = &st.sa->v.ri[i];
		uint32_t chunk = st.budget - st.used;

		if (ri->decode || ri->C >= ri->T)
			continue;
		if (ri->T - ri->C < chunk)
			chunk = ri->T - ri->C;
		if (chunk == 0)
			break;
		e = kvc_allocate(st.k, ri->seq, chunk);
		if (e == KV_ENOSPC)
			return KV_EREF;	/* reserved at admission */
		if (e != KV_OK)
			return e;
		if ((e = kvs_emit_sched(s, ri->r, chunk)) != KV_OK)
			return e;
		st.used += chunk;
	}

	/* 3. New prefills from the head of waiting, unless this step
	 * preempted (a victim would be re-admitted at once). */
	if (kvs_queue_len(s, KVS_Q_WAITING) == 0 ||
	    kvs_current_step(s)->npreempt > 0 || st.used >= st.budget)
		return KV_OK;
	st.reserved = 0;
	for (i = 0; nprefill > 0 && i < st.nrun; i++) {
		struct kvs_xri *ri = &st.sa->v.ri[i];
		uint64_t rest;

		if (ri->decode ||
		    kvc_seq_computed(st.k, ri->seq) >= ri->T)
			continue;
		if ((e = kvs__xneed(st.k, ri->seq, 0,
		    st.budget, &rest)) != KV_OK)
			return e;
		st.reserved += rest;
	}
	while (kvs_queue_len(s, KVS_Q_WAITING) > 0) {
		kvs_req r = kvs_queue_at(s, KVS_Q_WAITING, 0);
		int32_t q = kvs_req_seq(s, r);
		uint64_t need, rest;
		size_t hit;
		uint32_t chunk, T;

		if ((e = kvs__xneed(st.k, q, 0, st.budget, &need)) != KV_OK)
			return e;
		if (need + st.reserved + st.wm > kvs__xfree(st.k))
			break;
		if (kvs_queue_len(s, KVS_Q_RUNNING) >= st.maxseqs)
			break;
		if ((e = kvc_cached(st.k, q, &hit)) != KV_OK)
			return e;
		T = (uint32_t)kvc_seq_len(st.k, q);
		chunk = st.budget - st.used;
		if (T - (uint32_t)hit < chunk)
			chunk = T - (uint32_t)hit;
		if (chunk == 0)
			break;
		e = kvc_allocate(st.k, q, chunk);
		if (e == KV_ENOSPC)
			return KV_EREF;
		if (e != KV_OK)
			return e;
		(void)kvs_queue_remove(s, KVS_Q_WAITING, 0);
		if ((e = sar_run_insert(s, r)) != KV_OK ||
		    (e = kvs_emit_sched(s, r, chunk)) != KV_OK)
			return e;
		st.used += chunk;
		if (kvc_seq_computed(st.k, q) < T) {
			if ((e = kvs__xneed(st.k, q, 0,
			    st.budget, &rest)) != KV_OK)
				return e;
			st.reserved += rest;
		}
	}
	return KV_OK;
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
