/*
 * kvs_lora.c -- LoRA adapters in the scheduler: a request's adapter
 * (kvs_set_lora), the max_loras limit's configuration, the set of
 * adapters a step schedules (vLLM's scheduled_loras) and its audit.
 * The policy's use of the limit is in kvs_v1.c (docs/scheduler.md
 * R100-R109).
 */
#include "kvs_int.h"

#include <stdlib.h>
#include <string.h>

extern const struct kvs_policy kvs__v1_policy;

kv_err
kvs__lora_configure(const struct kvs_policy *p, struct kvs_config *c,
		    char *why, size_t whylen)
{
	if (c->max_loras == KVS_UNSET)
		return KV_OK;
	if (p != &kvs__v1_policy)
		return kvc__failbuf(why, whylen, KV_ECONFIG, "max_loras: "
				    "policy %s does not model LoRA adapters "
				    "(vllm-v1 does)", p->name);
	if (c->max_loras < 1 || c->max_loras > UINT32_MAX)
		return kvc__failbuf(why, whylen, KV_ECONFIG, "max_loras must "
				    "be between 1 and %u (vLLM's max_loras "
				    "is at least 1)", UINT32_MAX);
	return KV_OK;
}

kv_err
kvs_set_lora(kvs *s, kvs_req r, uint32_t lora)
{
	struct kvs_rq *q;
	kv_err e;

	s->msg[0] = '\0';
	if (r < 0 || (uint32_t)r >= s->nrq)
		return kvs__fail(s, KV_EINVAL, "no request %d", r);
	q = kvs__rq(s, r);
	if (lora != 0 && kvs__rqx_need(s) != KV_OK)
		return kvs__fail(s, KV_ENOMEM, "out of memory");
	if (q->status == KVS_IGNORED && q->seq < 0) {
		if (s->rqx != NULL)	/* refused at kvs_add: never hashed */
			s->rqx[r].lora = lora;
		return KV_OK;
	}
	if (q->status != KVS_WAITING || q->npreempt != 0 ||
	    kvc_seq_state(s->k, q->seq) != KVC_WAITING)
		return kvs__fail(s, KV_ESTATE, "request %d: the adapter is "
				 "set before the request is first scheduled",
				 r);
	if (lora == kvs__lora(s, r))
		return KV_OK;
	e = kvc__v1_set_extra(s->k, q->seq, lora);
	if (e == KV_ENOTSUP)
		return kvs__fail(s, e, "LoRA adapters need allocator mode "
				 "vllm-v1 (policy vllm-v1), not %s",
				 kvc_mode_name(kvc_config_of(s->k)->mode));
	if (e != KV_OK)
		return kvs__fail(s, e, "%s", kvc_errmsg(s->k));
	s->rqx[r].lora = lora;	/* lora != 0 or the table was there */
	return KV_OK;
}

uint32_t
kvs_req_lora(const kvs *s, kvs_req r)
{
	return r >= 0 && (uint32_t)r < s->nrq ? kvs__lora(s, r) : 0;
}

bool
kvs__loraset_has(const struct kvs_loraset *set, uint32_t lora)
{
	for (uint32_t i = 0; i < set->n; i++)
		if (set->a[i] == lora)
			return true;
	return false;
}

kv_err
kvs__loraset_add(struct kvs_loraset *set, uint32_t lora)
{
	kv_err e;

	if (lora == 0 || kvs__loraset_has(set, lora))
		return KV_OK;
	if ((e = kvs__grow((void **)&set->a, &set->cap, set->n + 1,
			   sizeof(*set->a))) != KV_OK)
		return e;
	set->a[set->n++] = lora;
	return KV_OK;
}

int
kvs__lora_audit(const kvs *s, char *why, size_t whylen)
{
	struct kvs_loraset set = { NULL, 0, 0 };
	int rc = 0;

	if (s->cfg.max_loras == KVS_UNSET)
		return 0;
	for (uint32_t i = 0; i < s->step.nsched; i++)
		if (kvs__loraset_add(&set, kvs__lora(s,
		    s->step.sched[i].req)) != KV_OK) {
			kvc__failbuf(why, whylen, KV_ENOMEM, "out of memory");
			rc = 200;
			goto out;
		}
	if (set.n > (uint64_t)s->cfg.max_loras) {
		kvc__failbuf(why, whylen, KV_EINVAL, "step %llu schedules %u "
			     "LoRA adapters, max_loras %lld",
			     (unsigned long long)s->step.number, set.n,
			     (long long)s->cfg.max_loras);
		rc = 208;
	}
out:
	free(set.a);
	return rc;
}
