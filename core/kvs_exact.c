/*
 * kvs_exact.c -- helpers shared by the policies on exact accounting; see
 * kvs_exact.h.  Cost: kvs__xview_read is O(running) plus one blocks-needed
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
