/*
 * kvs_spec.c -- speculative decoding for policy vllm-v1: the drafter's
 * proposals (kvs_propose) and the model output of a step that verified
 * drafts (kvs__complete_spec, behind kvs_complete_spec in kv_sched.c).
 * vLLM 0.15.1's Scheduler.update_draft_token_ids and update_from_output;
 * docs/scheduler.md R81-R99 say which rule comes from where.
 *
 * A running request with d drafts is scheduled for (T - C) + d tokens,
 * d of them drafts (kvs_sched.spec, cut by the budget and max_model_len);
 * the allocator reserves their slots as lookahead, so its computed count
 * moves by the real tokens only and no draft is ever cached.  The verify
 * step accepts a <= d of them: the request gains a + 1 tokens (fewer when
 * it stops), its computed count becomes T + a, and the slots of the
 * rejected drafts stay allocated for its next step.
 */
#include "kvs_int.h"

kv_err
kvs_propose(kvs *s, kvs_req r, uint32_t ndraft)
{
	const struct kvc_seq *q;
	struct kvs_rq *rq;
	int64_t k = s->cfg.spec_tokens > 0 ? s->cfg.spec_tokens : 0;

	s->msg[0] = '\0';
	if (r < 0 || (uint32_t)r >= s->nrq)
		return kvs__fail(s, KV_ENOENT, "no such request");
	if (s->pending)
		return kvs__fail(s, KV_ESTATE, "propose between a step's "
				 "halves");
	if ((int64_t)ndraft > k)
		return kvs__fail(s, KV_EINVAL, "propose: %u draft tokens, but "
				 "spec_tokens is %lld", ndraft, (long long)k);
	rq = kvs__rq(s, r);
	if (ndraft == 0) {
		if (s->rqx != NULL)
			s->rqx[r].draft = 0;
		return KV_OK;
	}
	if (rq->status != KVS_RUNNING)
		return kvs__fail(s, KV_ESTATE, "propose: the request is not "
				 "running");
	q = kvc__seq(s->k, rq->seq);
	if (q->ncomp + 1 != q->ntok)
		return kvs__fail(s, KV_ESTATE, "propose: the request is not "
				 "decoding (%u of %u tokens computed)",
				 q->ncomp, q->ntok);
	if (kvs__rqx_need(s) != KV_OK)
		return kvs__fail(s, KV_ENOMEM, "out of memory");
	s->rqx[r].draft = ndraft;
	return KV_OK;
}

/* Entry e of the step: a + 1 tokens (ids from t, NULL: deterministic),
 * stop checks after each (check_stop), then C = T + a. */
static kv_err
spec_yield(kvs *s, const struct kvs_sched *e, const uint32_t *t,
	   uint32_t a)
{
	uint32_t mml = kvc_config_of(s->k)->max_model_len;
	struct kvs_rq *q = kvs__rq(s, e->req);
	uint32_t T = kvc__seq(s->k, q->seq)->ntok;
	kv_err err;

	for (uint32_t j = 0; j <= a; j++) {
		uint32_t id = t != NULL ? t[j] : 1000000u + T + j;

		if ((err = kvs__out_token(s, q, id)) != KV_OK)
			return err;
		if (q->generated >= q->max_output || T + j + 1 >= mml)
			return kvs__finish(s, e->req);
	}
	if ((err = kvc__v1_accept(s->k, q->seq, T + a)) != KV_OK)
		return kvs__fail(s, err, "accept: %s", kvc_errmsg(s->k));
	return KV_OK;
}

kv_err
kvs__complete_spec(kvs *s, const uint32_t *tokens, const uint32_t *accepted)
{
	uint32_t off = 0;

	for (uint32_t i = 0; i < s->nsched; i++) {
		const struct kvs_sched *e = &s->sched[i];
		const struct kvs_rq *q = kvs__rq(s, e->req);
		const struct kvc_seq *sq;
		uint32_t at = off;
		kv_err err;

		off += e->spec + 1;
		if (q->status != KVS_RUNNING || q->seq < 0)
			continue;
		sq = kvc__seq(s->k, q->seq);
		if (sq->ncomp != sq->ntok)
			continue;	/* a partial prefill chunk */
		err = spec_yield(s, e, tokens != NULL ? tokens + at : NULL,
				 accepted != NULL ? accepted[i] : 0);
		if (err != KV_OK)
			return err;
	}
	return KV_OK;
}
