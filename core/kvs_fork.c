/*
 * kvs_fork.c -- parallel sampling by forked sequences (kvs_set_n), as
 * vLLM v0 up to 0.6.3 runs a request with n > 1: one SequenceGroup whose
 * children are forked after the prompt.  The policy's side is in
 * kvs_v0.c (docs/scheduler.md R110-R119).
 */
#include "kvs_int.h"

extern const struct kvs_policy kvs__v0_policy;

kv_err
kvs_set_n(kvs *s, kvs_req r, uint32_t n)
{
	struct kvs_rq *q;

	s->msg[0] = '\0';
	if (r < 0 || (uint32_t)r >= s->nrq)
		return kvs__fail(s, KV_EINVAL, "no request %d", r);
	if (s->pol != &kvs__v0_policy)
		return kvs__fail(s, KV_ENOTSUP, "n > 1 as one group of forked "
				 "sequences is vLLM v0's (policy vllm-v0), "
				 "not %s's", s->pol->name);
	q = kvs__rq(s, r);
	if (n != 0 && kvs__rqx_need(s) != KV_OK)
		return kvs__fail(s, KV_ENOMEM, "out of memory");
	if (q->status == KVS_IGNORED && q->seq < 0) {
		if (s->rqx != NULL)
			s->rqx[r].nsamp = n;
		return KV_OK;
	}
	if (q->status != KVS_WAITING || q->npreempt != 0 ||
	    q->generated != 0 || kvc_seq_state(s->k, q->seq) != KVC_WAITING)
		return kvs__fail(s, KV_ESTATE, "request %d: n is set before "
				 "the request is first scheduled", r);
	if (s->rqx != NULL)
		s->rqx[r].nsamp = n;
	return KV_OK;
}

uint32_t
kvs_req_n(const kvs *s, kvs_req r)
{
	if (r < 0 || (uint32_t)r >= s->nrq || kvs__nsamp(s, r) == 0)
		return 1;
	return kvs__nsamp(s, r);
}
