/*
 * kvs_exact.c -- helpers shared by the policies on exact accounting; see
 * kvs_exact.h: the running view, and the phases of a step that kvsim and
 * sarathi share.  Cost: kvs__xview_read is O(running) plus one blocks-needed
 * query per running prefill.
 */
#include "kvs_exact.h"

#include <stdlib.h>
#include <string.h>

kv_err
kvs__xfail(char *why, size_t whylen, const char *msg)
{
	if (why != NULL && whylen > 0) {
		strncpy(why, msg, whylen - 1);
		why[whylen - 1] = '\0';
	}
	return KV_ECONFIG;
}

kv_err
kvs__xneed(kvc *k, int32_t seq, uint32_t L, uint64_t budget, uint64_t *out)
{
	const struct kvc_config *kc = kvc_config_of(k);
	uint32_t need[KVC_MAX_GROUPS], ng = kvc_ngroups(k);
	uint64_t sum = 0;
	kv_err e = kvc_blocks_needed(k, seq, 0, L, need);

	if (e != KV_OK)
		return e;
	for (uint32_t g = 0; g < ng; g++) {
		uint64_t n = need[g];

		/* A sliding window never holds more than the window plus a
		 * chunk in flight: the allocator releases the blocks that
		 * leave it as the prompt is computed, chunk by chunk.  The
		 * dry run takes every token at once, so it is capped here,
		 * as kvs__xalone_blocks counts it at setup. */
		if (kc->ngroups && kc->group[g].kind == KVC_SLIDING) {
			uint32_t bs = kc->group[g].block_size
				      ? kc->group[g].block_size
				      : kc->block_size;
			uint64_t cap = kvc_cdiv((uint64_t)kc->group[g].window +
						budget + L, bs) + 1;

			if (n > cap)
				n = cap;
		}
		sum += n;
	}
	*out = sum;
	return KV_OK;
}

uint64_t
kvs__xalone_blocks(const struct kvc_config *kc, uint64_t budget, uint64_t L)
{
	uint32_t ng = kc->ngroups ? kc->ngroups : 1;
	uint64_t mml = kc->max_model_len ? kc->max_model_len : 8192, sum = 0;

	for (uint32_t g = 0; g < ng; g++) {
		uint32_t bs = kc->block_size ? kc->block_size : 16;
		kvc_kind kind = kc->ngroups ? kc->group[g].kind : KVC_FULL;
		uint64_t n = 0;

		if (kc->ngroups && kc->group[g].block_size)
			bs = kc->group[g].block_size;
		switch (kind) {
		case KVC_FULL:
			n = kvc_cdiv(mml, bs);
			break;
		case KVC_SLIDING:
			n = kvc_cdiv(kc->group[g].window + budget + L, bs) + 1;
			if (n > kvc_cdiv(mml, bs))
				n = kvc_cdiv(mml, bs);
			break;
		case KVC_STATE:
			n = 1;
			break;
		}
		sum += n;
	}
	return sum;
}

kv_err
kvs__xview_read(kvs *s, struct kvs_xview *v)
{
	kvc *k = kvs_kv(s);
	uint32_t n = kvs_queue_len(s, KVS_Q_RUNNING);
	kv_err e;

	if (n > v->cap) {
		uint32_t c = v->cap ? v->cap : 64;
		struct kvs_xri *p;

		while (c < n)
			c *= 2;
		p = realloc(v->ri, (size_t)c * sizeof(*p));
		if (p == NULL)
			return KV_ENOMEM;
		v->ri = p;
		v->cap = c;
	}
	v->n = n;
	v->reserved = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct kvs_xri *ri = &v->ri[i];
		uint64_t rest;

		ri->r = kvs_queue_at(s, KVS_Q_RUNNING, i);
		ri->seq = kvs_req_seq(s, ri->r);
		ri->T = (uint32_t)kvc_seq_len(k, ri->seq);
		ri->C = (uint32_t)kvc_seq_computed(k, ri->seq);
		ri->decode = ri->T - ri->C == 1 &&
			     kvs_req_generated(s, ri->r) > 0;
		if (ri->decode || ri->C >= ri->T)
			continue;
		if ((e = kvs__xneed(k, ri->seq, 0,
				       (uint64_t)kvs_config_of(s)->
				       max_num_batched_tokens, &rest)) != KV_OK)
			return e;
		v->reserved += rest;
	}
	return KV_OK;
}

void
kvs__xview_release(struct kvs_xview *v)
{
	free(v->ri);
	memset(v, 0, sizeof(*v));
}

kv_err
kvs__xcow(kvs *s, kvc *k)
{
	size_t n;

	(void)kvc_pairs(k, &n);
	return n > 0 ? kvs_emit_pairs(s, KVS_COW) : KV_OK;
}

/* ---- the phases of a step ----------------------------------------- */

kv_err
kvs__xstep_begin(struct kvs_xstep *x, kvs *s, struct kvs_xview *v,
		 uint32_t budget)
{
	const struct kvs_config *c = kvs_config_of(s);
	const struct kvc_config *kc;
	kv_err e;

	x->s = s;
	x->k = kvs_kv(s);
	x->v = v;
	kc = kvc_config_of(x->k);
	x->L = (uint32_t)c->lookahead;
	x->budget = budget;
	x->used = 0;
	x->maxseqs = (uint32_t)c->max_num_seqs;
	x->wm = (uint64_t)(kc->watermark * (double)kc->gpu_blocks);
	x->nprefill = 0;
	e = kvs__xview_read(s, v);
	x->nrun = v->n;
	x->reserved = v->reserved;
	return e;
}

kv_err
kvs__xpreempt(struct kvs_xstep *x, uint32_t j, enum kvs_preempt_mode m,
	      kvs_req *r)
{
	struct kvs_xri *ri = &x->v->ri[j];
	kv_err e;

	*r = ri->r;
	if (!ri->decode && ri->C < ri->T) {
		uint64_t rest;

		if ((e = kvs__xneed(x->k, ri->seq, 0, x->budget,
				    &rest)) != KV_OK)
			return e;
		x->reserved -= rest < x->reserved ? rest : x->reserved;
	}
	e = m == KVS_PREEMPT_SWAP ? kvs_preempt_swap(x->s, *r)
				  : kvs_preempt_recompute(x->s, *r);
	if (e != KV_OK)
		return e;
	(void)kvs_queue_remove(x->s, KVS_Q_RUNNING, j);
	memmove(ri, ri + 1, (x->nrun - j - 1) * sizeof(*ri));
	x->nrun--;
	return KV_OK;
}

kv_err
kvs__xdecodes(struct kvs_xstep *x)
{
	kv_err e;

	for (uint32_t i = 0; i < x->nrun;) {
		struct kvs_xri *ri = &x->v->ri[i];
		uint64_t need;
		bool self;

		if (!ri->decode) {
			x->nprefill += ri->C < ri->T;
			i++;
			continue;
		}
		if (x->reserved == 0) {
			/* Nothing reserved: the action is its own check. */
			e = kvc_append_slots(x->k, ri->seq, x->L);
			if (e == KV_OK)
				goto scheduled;
			if (e != KV_ENOSPC)
				return e;
		}
		if ((e = kvs__xneed(x->k, ri->seq, x->L, x->budget,
				    &need)) != KV_OK ||
		    (e = x->make_room(x, i, need, &self)) != KV_OK)
			return e;
		if (self)
			break;	/* nobody after it is left */
		e = kvc_append_slots(x->k, ri->seq, x->L);
		if (e == KV_ENOSPC)
			return KV_EREF;	/* the check said it fits */
		if (e != KV_OK)
			return e;
scheduled:
		if ((e = kvs__xcow(x->s, x->k)) != KV_OK ||
		    (e = kvs_emit_sched(x->s, ri->r, 1)) != KV_OK)
			return e;
		x->used++;
		i++;
	}
	return KV_OK;
}

/* The chunk of a prefill with `left` tokens to compute. */
static inline uint32_t
xchunk(const struct kvs_xstep *x, uint32_t left)
{
	uint32_t chunk = x->budget - x->used;

	if (left < chunk)
		chunk = left;
	if (x->thr > 0 && x->thr < chunk)
		chunk = x->thr;
	return chunk;
}

kv_err
kvs__xprefills(struct kvs_xstep *x)
{
	kv_err e;

	for (uint32_t i = 0; x->nprefill > 0 && i < x->nrun; i++) {
		struct kvs_xri *ri = &x->v->ri[i];
		uint32_t chunk;

		if (ri->decode || ri->C >= ri->T)
			continue;
		chunk = xchunk(x, ri->T - ri->C);
		if (chunk == 0)
			break;
		e = kvc_allocate(x->k, ri->seq, chunk);
		if (e == KV_ENOSPC)
			return KV_EREF;	/* reserved at admission */
		if (e != KV_OK)
			return e;
		if ((e = kvs_emit_sched(x->s, ri->r, chunk)) != KV_OK)
			return e;
		x->used += chunk;
	}
	return KV_OK;
}

kv_err
kvs__xadmit(struct kvs_xstep *x)
{
	kvs *s = x->s;
	kv_err e;

	if (x->used >= x->budget)
		return KV_OK;
	/* The prefills that ran in this step reserve what is left of
	 * them; a preempted one is no longer in the view. */
	x->reserved = 0;
	for (uint32_t i = 0; x->nprefill > 0 && i < x->nrun; i++) {
		struct kvs_xri *ri = &x->v->ri[i];
		uint64_t rest;

		if (ri->decode || kvc_seq_computed(x->k, ri->seq) >= ri->T)
			continue;
		if ((e = kvs__xneed(x->k, ri->seq, 0, x->budget,
				    &rest)) != KV_OK)
			return e;
		x->reserved += rest;
	}
	while (kvs_queue_len(s, KVS_Q_WAITING) > 0 && x->used < x->budget) {
		kvs_req r = kvs_queue_at(s, KVS_Q_WAITING, 0);
		int32_t q = kvs_req_seq(s, r);
		uint64_t need, rest;
		uint32_t T, chunk;
		size_t hit;

		if ((e = kvs__xneed(x->k, q, 0, x->budget, &need)) != KV_OK)
			return e;
		if (need + x->reserved + x->wm > kvs__xfree(x->k) ||
		    kvs_queue_len(s, KVS_Q_RUNNING) >= x->maxseqs)
			break;
		if ((e = kvc_cached(x->k, q, &hit)) != KV_OK)
			return e;
		T = (uint32_t)kvc_seq_len(x->k, q);
		chunk = xchunk(x, T - (uint32_t)hit);
		if (chunk == 0 || (x->whole && chunk < T - (uint32_t)hit))
			break;
		e = kvc_allocate(x->k, q, chunk);
		if (e == KV_ENOSPC)
			return KV_EREF;
		if (e != KV_OK)
			return e;
		(void)kvs_queue_remove(s, KVS_Q_WAITING, 0);
		if ((e = x->run_insert(x, r)) != KV_OK ||
		    (e = kvs_emit_sched(s, r, chunk)) != KV_OK)
			return e;
		x->used += chunk;
		if (kvc_seq_computed(x->k, q) < T) {
			if ((e = kvs__xneed(x->k, q, 0, x->budget,
					    &rest)) != KV_OK)
				return e;
			x->reserved += rest;
		}
	}
	return KV_OK;
}
