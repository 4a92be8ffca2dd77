/*
 * kvs_kvsim.c -- policy "kvsim": kvsim's own scheduler on the `exact`
 * allocator.  docs/policies.md is the normative description; this is its
 * summary.
 *
 * Goals: no preemption while the step still fits (exact counts, no
 * worst-case heuristics); no admission that later forces the preemption of
 * a half-computed prompt (the rest of every running prefill is reserved);
 * when memory does run out, lose the least work (the victim and its mode,
 * swap or recompute, come from a cost hook the caller may replace).
 *
 * Order of a step (queues kept sorted by (priority, arrival) -- arrival
 * alone under fcfs -- so the head of each queue is the first to serve):
 *   1. Running decodes, one token each plus `lookahead` slots.  A decode
 *      that does not fit (exact need > free - reserved) preempts, one at a
 *      time, the cheapest running request LATER in the order and not yet
 *      scheduled in this step (ties: the latest), else itself.
 *   2. Swapped requests resume, if nobody was preempted in this step: from
 *      the head while the swap-in (unseen tokens + lookahead, shared
 *      blocks once) fits free - reserved - watermark, the budget and
 *      max_num_seqs.
 *   3. Running prefills: their next chunk, min(T - C, budget left,
 *      long_prefill_threshold); always fits (reserved).
 *   4. Waiting requests, if nobody was preempted and none is swapped: from
 *      the head while the blocks of the WHOLE prompt (prefix hits
 *      claimed) fit free - reserved - watermark, fewer than max_num_seqs
 *      run and the chunk (prompt minus its hit, capped by the budget and
 *      the threshold) is not 0 (with chunked_prefill off: the whole rest
 *      must fit the budget).  Hit tokens are never charged.
 *
 * Swap is offered only for a request past its prefill (one unseen token):
 * exact swap-in computes every unseen token at once, which a chunked step
 * budget cannot promise for the rest of a prompt.
 *
 * Cost per step: O(running) allocator calls plus O(running) per
 * preemption (the victim search).  No allocation after init beyond the
 * kvs's own lists.
 */
#include "kvspolicy.h"
#include "kvs_exact.h"

#include <stdlib.h>
#include <string.h>

#define KS_SEQS_DEFAULT 128
#define KS_TOKENS_DEFAULT 2048

struct ks {
	struct kvs_kvsim_cost cost;
	uint32_t known;		/* requests already placed in waiting */
	struct kvs_xview v;	/* scratch parallel to running (grows) */
};

extern const struct kvs_policy kvs__kvsim_policy;

static int64_t
ks_cost_default(void *ctx, const struct kvs_victim *v,
		enum kvs_preempt_mode m)
{
	(void)ctx;
	return m == KVS_PREEMPT_SWAP ? KVS_KVSIM_SWAP_TOKENS
				     : (int64_t)v->computed;
}

void
kvs_kvsim_cost_default(struct kvs_kvsim_cost *c)
{
	c->ctx = NULL;
	c->cost = ks_cost_default;
}

kv_err
kvs_kvsim_set_cost(kvs *s, const struct kvs_kvsim_cost *c)
{
	struct ks *ks = kvs_policy_state(s, &kvs__kvsim_policy);

	if (ks == NULL || (c != NULL && c->cost == NULL))
		return KV_EINVAL;
	if (c == NULL)
		kvs_kvsim_cost_default(&ks->cost);
	else
		ks->cost = *c;
	return KV_OK;
}

static kv_err
ks_configure(struct kvs_config *c, const struct kvc_config *kc, char *why,
	     size_t whylen)
{
	uint64_t G = kc->gpu_blocks, mml = kc->max_model_len ?
		     kc->max_model_len : 8192;
	uint64_t wm = (uint64_t)(kc->watermark * (double)G);

	if (c->chunk_size != KVS_UNSET)
		return kvs__xfail(why, whylen, "kvsim has no chunk_size (use "
			       "max_num_batched_tokens and "
			       "long_prefill_threshold)");
	if (c->max_num_seqs == KVS_UNSET)
		c->max_num_seqs = KS_SEQS_DEFAULT;
	if (c->max_num_batched_tokens == KVS_UNSET)
		c->max_num_batched_tokens = KS_TOKENS_DEFAULT;
	if (c->chunked_prefill == KVS_UNSET)
		c->chunked_prefill = 1;
	if (c->long_prefill_threshold == KVS_UNSET)
		c->long_prefill_threshold = 0;
	if (c->priority == KVS_UNSET)
		c->priority = 0;
	if (c->lookahead == KVS_UNSET)
		c->lookahead = 0;
	if (c->max_num_seqs < 1 || c->max_num_seqs > UINT32_MAX)
		return kvs__xfail(why, whylen,
				  "max_num_seqs must be at least 1");
	if (c->max_num_batched_tokens < c->max_num_seqs ||
	    c->max_num_batched_tokens > UINT32_MAX)
		return kvs__xfail(why, whylen, "max_num_batched_tokens must be "
			       "at least max_num_seqs");
	if (c->chunked_prefill == 0 &&
	    (uint64_t)c->max_num_batched_tokens < mml)
		return kvs__xfail(why, whylen, "with chunked_prefill off, "
			       "max_num_batched_tokens must be at least "
			       "max_model_len");
	if (c->chunked_prefill == 0 && c->long_prefill_threshold > 0)
		return kvs__xfail(why, whylen, "long_prefill_threshold cuts "
			       "prefills into chunks: it needs chunked_prefill "
			       "on");
	if (c->long_prefill_threshold < 0 ||
	    c->long_prefill_threshold > UINT32_MAX)
		return kvs__xfail(why, whylen, "long_prefill_threshold out of "
			       "range");
	if (c->lookahead < 0 || c->lookahead > 65536)
		return kvs__xfail(why, whylen, "lookahead out of range");
	if (c->preemption == 1 && kc->cpu_blocks == 0)
		return kvs__xfail(why, whylen,
				  "preemption swap needs cpu_blocks");
	if (kvs__xalone_blocks(kc, (uint64_t)c->max_num_batched_tokens,
			    (uint64_t)c->lookahead) + wm > G)
		return kvs__xfail(why, whylen, "one max_model_len request does "
			       "not fit in gpu_blocks minus the watermark");
	return KV_OK;
}

static kv_err
ks_init(kvs *s, void **state)
{
	struct ks *ks = calloc(1, sizeof(*ks));

	(void)s;
	if (ks == NULL)
		return KV_ENOMEM;
	kvs_kvsim_cost_default(&ks->cost);
	*state = ks;
	return KV_OK;
}

static void
ks_release(void *state)
{
	struct ks *ks = state;

	if (ks != NULL)
		kvs__xview_release(&ks->v);
	free(ks);
}

/* ---- a step ------------------------------------------------------------ */

struct ks_step {
	struct kvs_xstep x;	/* first: the shared phases' view */
	struct ks *ks;
	const struct kvs_config *c;
	bool preempted;
};

/* Scheduling order: (priority, arrival) under priority, else arrival. */
static inline bool
ks_before(const struct ks_step *st, kvs_req a, kvs_req b)
{
	if (st->c->priority == 1) {
		int32_t pa = kvs_req_priority(st->x.s, a);
		int32_t pb = kvs_req_priority(st->x.s, b);

		if (pa != pb)
			return pa < pb;
	}
	return a < b;
}

/* Insert r into queue q at its place in the order (after equals). */
static kv_err
ks_insert(struct ks_step *st, kvs_queue q, kvs_req r)
{
	uint32_t lo = 0, hi = kvs_queue_len(st->x.s, q);

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ks_before(st, r, kvs_queue_at(st->x.s, q, mid)))
			hi = mid;
		else
			lo = mid + 1;
	}
	return kvs_queue_insert(st->x.s, q, lo, r);
}

/*
 * Arrivals since the last step sit at the tail of waiting (kvs_add()): under
 * priority, move each into its place in the sorted part before it.
 */
static kv_err
ks_admit_arrivals(struct ks_step *st)
{
	uint32_t n = kvs_queue_len(st->x.s, KVS_Q_WAITING), m = 0, base, t;
	kv_err e;

	if (st->c->priority == 1) {
		while (m < n && (uint32_t)kvs_queue_at(st->x.s, KVS_Q_WAITING,
						       n - 1 - m) >=
		       st->ks->known)
			m++;
		base = n - m;
		for (t = 0; t < m; t++) {
			kvs_req r = kvs_queue_remove(st->x.s, KVS_Q_WAITING,
						     base + t);
			uint32_t lo = 0, hi = base + t;

			while (lo < hi) {
				uint32_t mid = lo + (hi - lo) / 2;

				if (ks_before(st, r, kvs_queue_at(st->x.s,
				    KVS_Q_WAITING, mid)))
					hi = mid;
				else
					lo = mid + 1;
			}
			e = kvs_queue_insert(st->x.s, KVS_Q_WAITING, lo, r);
			if (e != KV_OK)
				return e;
		}
	}
	st->ks->known = kvs_nreqs(st->x.s);
	return KV_OK;
}

/* Describe running[j] as a preemption candidate. */
static void
ks_victim(struct ks_step *st, const struct kvs_xri *ri, struct kvs_victim *v)
{
	uint32_t g, ng = kvc_ngroups(st->x.k);
	bool ok = false;

	memset(v, 0, sizeof(*v));
	v->req = ri->r;
	v->tokens = ri->T;
	v->computed = ri->C;
	for (g = 0; g < ng; g++) {
		size_t n, i;
		const int32_t *t = kvc_table(st->x.k, ri->seq, g, &n);

		for (i = 0; i < n; i++)
			v->gpu_blocks += t[i] != KVC_NULL;
	}
	if (st->c->preemption != 0 && ri->decode &&
	    kvc_free_cpu(st->x.k) > 0 &&
	    kvc_can_swap_out(st->x.k, ri->seq, &ok) == KV_OK)
		v->can_swap = ok;
}

/* The mode v would be preempted in, and its cost. */
static int64_t
ks_price(struct ks_step *st, const struct kvs_victim *v,
	 enum kvs_preempt_mode *mode)
{
	const struct kvs_kvsim_cost *h = &st->ks->cost;
	int64_t rc, sc;

	rc = h->cost(h->ctx, v, KVS_PREEMPT_RECOMPUTE);
	if (rc < 0)
		rc = 0;
	*mode = KVS_PREEMPT_RECOMPUTE;
	if (!v->can_swap)
		return rc;
	sc = h->cost(h->ctx, v, KVS_PREEMPT_SWAP);
	if (sc < 0)
		sc = 0;
	if (st->c->preemption == 1 || sc < rc) {
		*mode = KVS_PREEMPT_SWAP;
		return sc;
	}
	return rc;
}

/* Preempt running[j] in mode m (into swapped or waiting, in order). */
static kv_err
ks_preempt(struct ks_step *st, uint32_t j, enum kvs_preempt_mode m)
{
	kvs_req v;
	kv_err e = kvs__xpreempt(&st->x, j, m, &v);

	if (e != KV_OK)
		return e;
	st->preempted = true;
	return ks_insert(st, m == KVS_PREEMPT_SWAP ? KVS_Q_SWAPPED :
			 KVS_Q_WAITING, v);
}

/*
 * Make room for running[i]'s decode (need blocks).  Returns KV_OK with
 * *self set when running[i] itself had to go.
 */
static kv_err
ks_make_room(struct kvs_xstep *x, uint32_t i, uint64_t need, bool *self)
{
	struct ks_step *st = (struct ks_step *)x;
	enum kvs_preempt_mode m, bm = KVS_PREEMPT_RECOMPUTE;
	struct kvs_victim v;
	kv_err e;

	*self = false;
	while (need + st->x.reserved > kvs__xfree(st->x.k)) {
		uint32_t best = i;
		int64_t bc = INT64_MAX, c;

		for (uint32_t j = st->x.nrun; j-- > i + 1;) {
			ks_victim(st, &st->ks->v.ri[j], &v);
			c = ks_price(st, &v, &m);
			if (c < bc) {
				bc = c;
				best = j;
				bm = m;
			}
		}
		if (best == i) {
			ks_victim(st, &st->ks->v.ri[i], &v);
			(void)ks_price(st, &v, &bm);
			*self = true;
			return ks_preempt(st, i, bm);
		}
		if ((e = ks_preempt(st, best, bm)) != KV_OK)
			return e;
	}
	return KV_OK;
}

/* Put r, just admitted, into running at its place in the order. */
static kv_err
ks_run_insert(struct kvs_xstep *x, kvs_req r)
{
	return ks_insert((struct ks_step *)x, KVS_Q_RUNNING, r);
}

static kv_err
ks_schedule(kvs *s, void *state)
{
	struct ks_step st;
	kv_err e;

	memset(&st, 0, sizeof(st));
	st.ks = state;
	st.c = kvs_config_of(s);
	st.x.s = s;
	st.x.thr = (uint32_t)st.c->long_prefill_threshold;
	st.x.whole = st.c->chunked_prefill == 0;
	st.x.run_insert = ks_run_insert;
	st.x.make_room = ks_make_room;
	if ((e = ks_admit_arrivals(&st)) != KV_OK ||
	    (e = kvs__xstep_begin(&st.x, s, &st.ks->v, (uint32_t)st.c->
				  max_num_batched_tokens)) != KV_OK)
		return e;

	/* 1. Running decodes. */
	if ((e = kvs__xdecodes(&st.x)) != KV_OK)
		return e;

	/* 2. Swapped requests resume first. */
	while (!st.preempted && kvs_queue_len(s, KVS_Q_SWAPPED) > 0) {
		kvs_req r = kvs_queue_at(s, KVS_Q_SWAPPED, 0);
		int32_t q = kvs_req_seq(s, r);
		uint32_t unseen = (uint32_t)(kvc_seq_len(st.x.k, q) -
					     kvc_seq_computed(st.x.k, q));
		uint64_t need;

		if ((e = kvs__xneed(st.x.k, q, st.x.L, st.x.budget,
				    &need)) != KV_OK)
			return e;
		if (need + st.x.reserved + st.x.wm > kvs__xfree(st.x.k) ||
		    kvs_queue_len(s, KVS_Q_RUNNING) >= st.x.maxseqs ||
		    unseen == 0 || unseen > st.x.budget - st.x.used)
			break;
		e = kvc_swap_in(st.x.k, q, st.x.L);
		if (e == KV_ENOSPC)
			return KV_EREF;
		if (e != KV_OK)
			return e;
		if ((e = kvs_emit_pairs(s, KVS_SWAP_IN)) != KV_OK)
			return e;
		(void)kvs_queue_remove(s, KVS_Q_SWAPPED, 0);
		if ((e = ks_insert(&st, KVS_Q_RUNNING, r)) != KV_OK ||
		    (e = kvs_emit_sched(s, r, unseen)) != KV_OK)
			return e;
		st.x.used += unseen;
	}

	/* 3. Running prefills: the next chunk of each (reserved).  The
	 * view still describes them (steps 1-2 touch no prefill). */
	if ((e = kvs__xprefills(&st.x)) != KV_OK)
		return e;

	/* 4. New prefills, only on a step without preemption. */
	if (st.preempted || kvs_queue_len(s, KVS_Q_SWAPPED) > 0)
		return KV_OK;
	return kvs__xadmit(&st.x);
}

const struct kvs_policy kvs__kvsim_policy = {
	.abi = KVS_ABI,
	.name = "kvsim",
	.mode = KVC_EXACT,
	.configure = ks_configure,
	.init = ks_init,
	.release = ks_release,
	.schedule = ks_schedule,
};
