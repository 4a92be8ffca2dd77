/*
 * spf.c -- an example kvsim policy plugin: shortest prompt first.
 *
 * Build it against the installed headers and load it from a replay script
 * or a run configuration:
 *
 *   cc -shared -fPIC $(pkg-config --cflags kvcore) -o libspf.so spf.c
 *   policy ./libspf.so          (replay script)
 *   policy: ./libspf.so         (YAML)
 *
 * Do not link it with libkvcore: the kvs_* and kvc_* calls below resolve to
 * the kvsim executable's own.
 *
 * The policy, on the `exact` allocator with one full-attention group:
 *   1. every running request decodes one token; one that does not fit
 *      preempts the most recently admitted running request (recompute),
 *      or itself when it is the last;
 *   2. if nobody was preempted, waiting requests are admitted whole,
 *      SHORTEST PROMPT FIRST (ties: earliest arrival), while can_allocate
 *      says OK, the prompt (minus its prefix-cache hit) fits the token
 *      budget left and fewer than max_num_seqs run.
 * Short requests overtake long ones, so under a steady stream of short
 * prompts a long one can wait indefinitely: the classic trade of SJF.
 */
#include <kvsched.h>

#include <stdio.h>

static kv_err
spf_configure(struct kvs_config *c, const struct kvc_config *kc, char *why,
	      size_t whylen)
{
	const char *bad = NULL;
	uint32_t bs = kc->block_size ? kc->block_size : 16;

	if (c->chunk_size != KVS_UNSET || c->long_prefill_threshold > 0 ||
	    c->chunked_prefill == 1)
		bad = "spf admits whole prompts (no chunking options)";
	else if (c->preemption == 1 || c->priority == 1 || c->lookahead > 0)
		bad = "spf preempts by recompute, has no priorities and no "
		      "lookahead";
	else if (kc->ngroups > 1 || (kc->ngroups == 1 &&
				     kc->group[0].kind != KVC_FULL))
		bad = "spf handles one full-attention group";
	if (bad == NULL) {
		if (c->max_num_seqs == KVS_UNSET)
			c->max_num_seqs = 64;
		if (c->max_num_batched_tokens == KVS_UNSET)
			c->max_num_batched_tokens = kc->max_model_len > 2048 ?
						    kc->max_model_len : 2048;
		if (kc->ngroups == 1 && kc->group[0].block_size)
			bs = kc->group[0].block_size;
		if (c->max_num_seqs < 1 ||
		    c->max_num_batched_tokens < kc->max_model_len ||
		    c->max_num_batched_tokens < c->max_num_seqs)
			bad = "spf needs max_num_batched_tokens >= "
			      "max_model_len and >= max_num_seqs >= 1";
		else if ((kc->max_model_len + bs - 1) / bs > kc->gpu_blocks)
			bad = "one max_model_len request does not fit";
	}
	if (bad != NULL) {
		snprintf(why, whylen, "%s", bad);
		return KV_ECONFIG;
	}
	c->chunked_prefill = 0;
	c->preemption = 0;
	c->priority = 0;
	c->lookahead = 0;
	c->long_prefill_threshold = 0;
	return KV_OK;
}

/* Preempt running[j] by recompute: back to the waiting queue. */
static kv_err
spf_preempt(kvs *s, uint32_t j)
{
	kvs_req v = kvs_queue_at(s, KVS_Q_RUNNING, j);
	kv_err e = kvs_preempt_recompute(s, v);

	if (e != KV_OK)
		return e;
	(void)kvs_queue_remove(s, KVS_Q_RUNNING, j);
	return kvs_queue_insert(s, KVS_Q_WAITING, 0, v);
}

static kv_err
spf_schedule(kvs *s, void *state)
{
	const struct kvs_config *c = kvs_config_of(s);
	uint32_t budget = (uint32_t)c->max_num_batched_tokens, used = 0, i;
	kvc *k = kvs_kv(s);
	kv_err e;

	(void)state;
	/* 1. Decodes. */
	for (i = 0; i < kvs_queue_len(s, KVS_Q_RUNNING); i++) {
		kvs_req r = kvs_queue_at(s, KVS_Q_RUNNING, i);

		while ((e = kvc_append_slots(k, kvs_req_seq(s, r), 0)) ==
		       KV_ENOSPC) {
			uint32_t last = kvs_queue_len(s, KVS_Q_RUNNING) - 1;

			if ((e = spf_preempt(s, last)) != KV_OK)
				return e;
			if (last == i)
				break;
		}
		if (e == KV_ENOSPC)
			break;	/* it preempted itself: nobody after it */
		if (e != KV_OK ||
		    (e = kvs_emit_pairs(s, KVS_COW)) != KV_OK ||
		    (e = kvs_emit_sched(s, r, 1)) != KV_OK)
			return e;
		used++;
	}
	if (kvs_current_step(s)->npreempt > 0)
		return KV_OK;

	/* 2. Admissions, shortest prompt first. */
	while (kvs_queue_len(s, KVS_Q_RUNNING) < (uint32_t)c->max_num_seqs) {
		uint32_t n = kvs_queue_len(s, KVS_Q_WAITING), best = n, T;
		size_t bestlen = 0, hit;
		kvc_verdict v;
		kvs_req r;
		int32_t q;

		for (i = 0; i < n; i++) {
			size_t len = kvc_seq_len(k, kvs_req_seq(s,
					kvs_queue_at(s, KVS_Q_WAITING, i)));

			if (best == n || len < bestlen ||
			    (len == bestlen && kvs_queue_at(s, KVS_Q_WAITING,
			     i) < kvs_queue_at(s, KVS_Q_WAITING, best))) {
				best = i;
				bestlen = len;
			}
		}
		if (best == n)
			break;
		r = kvs_queue_at(s, KVS_Q_WAITING, best);
		q = kvs_req_seq(s, r);
		if ((e = kvc_can_allocate(k, q, 0, &v)) != KV_OK)
			return e;
		if (v != KVC_VERDICT_OK)
			break;
		if ((e = kvc_cached(k, q, &hit)) != KV_OK)
			return e;
		T = (uint32_t)(bestlen - hit);
		if (T > budget - used)
			break;
		if ((e = kvc_allocate(k, q, 0)) != KV_OK)
			return e;	/* OK said it fits */
		(void)kvs_queue_remove(s, KVS_Q_WAITING, best);
		if ((e = kvs_queue_insert(s, KVS_Q_RUNNING,
					  kvs_queue_len(s, KVS_Q_RUNNING),
					  r)) != KV_OK ||
		    (e = kvs_emit_sched(s, r, T)) != KV_OK)
			return e;
		used += T;
	}
	return KV_OK;
}

static const struct kvs_policy spf_policy = {
	.abi = KVS_ABI,
	.name = "spf",
	.mode = KVC_EXACT,
	.configure = spf_configure,
	.schedule = spf_schedule,
};

#ifndef SPF_NO_ENTRY	/* tests/plugin.sh: a module without it */
/* The one symbol kvsim looks up. */
const struct kvs_policy *kvs_policy_entry(void);

const struct kvs_policy *
kvs_policy_entry(void)
{
#ifdef SPF_WRONG_ABI
	/* tests/plugin.sh: a plugin built for another ABI is refused. */
	static struct kvs_policy old;

	old = spf_policy;
	old.abi = KVS_ABI + 1;
	return &old;
#else
	return &spf_policy;
#endif
}
#else
/* Keep the unit non-empty and spf_policy used. */
const struct kvs_policy *spf_no_entry(void);

const struct kvs_policy *
spf_no_entry(void)
{
	return &spf_policy;
}
#endif
