/*
 * drive.c -- a synthetic run with the verifier attached (kvdrive.h).
 *
 * The loop is the simulator's step without time: schedule, execute the
 * block operations and write the computed slots (kvval), complete with
 * kvsched's deterministic output tokens.  A step that schedules nothing
 * while requests wait is an idle step; max_steps bounds a run that never
 * ends (it is an error).
 */
#include "config.h"

#include "gpu/kvdrive.h"
#include "gpu/kv_pattern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
kvdrive_opts_init(struct kvdrive_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->policy = "vllm-v0";
	o->preemption = 1;
	o->prefix_caching = true;
	o->block_size = 16;
	o->gpu_blocks = 64;
	o->cpu_blocks = 128;
	o->max_model_len = 512;
	o->max_num_seqs = KVS_UNSET;
	o->max_num_batched_tokens = KVS_UNSET;
	o->requests = 40;
	o->per_step = 2;
	o->prompt_min = 56;
	o->prompt_max = 200;
	o->out_min = 4;
	o->out_max = 64;
	o->share = 48;
	o->prefixes = 3;
	o->seed = 1;
}

void
kvdrive_kvc_config(const struct kvdrive_opts *o, struct kvc_config *kc)
{
	kvc_config_default(kc, KVC_EXACT);
	kc->block_size = o->block_size;
	kc->gpu_blocks = o->gpu_blocks;
	kc->cpu_blocks = o->cpu_blocks;
	kc->prefix_caching = o->prefix_caching;
	kc->max_model_len = o->max_model_len;
	kc->ngroups = o->ngroups;
	memcpy(kc->group, o->group, sizeof(kc->group));
	/* vLLM v1 and FastGen have no CPU pool (they never swap) */
	if (strcmp(o->policy, "vllm-v1") == 0 ||
	    strcmp(o->policy, "deepspeed-fastgen") == 0)
		kc->cpu_blocks = 0;
}

/* splitmix64: the stream of token ids and lengths */
static uint64_t
next(uint64_t *x)
{
	return kvgpu_mix64(*x += KVGPU_GOLDEN);
}

static uint32_t
uniform(uint64_t *x, uint32_t lo, uint32_t hi)
{
	return hi <= lo ? lo : lo + (uint32_t)(next(x) % (hi - lo + 1));
}

struct drive {
	kvs *s;
	uint32_t *tok, *start;
	size_t capstart;
};

static int
step(struct drive *d, kvval *v, struct kvdrive_result *res, char *why,
     size_t len)
{
	const struct kvs_step *st;
	kvc *k = kvs_kv(d->s);
	kv_err e;
	int rc = 0;

	if ((e = kvs_schedule(d->s, &st)) != KV_OK) {
		snprintf(why, len, "schedule: %s", kvs_errmsg(d->s));
		return 1;
	}
	if (st->nsched > d->capstart) {
		uint32_t *p = realloc(d->start, st->nsched * sizeof(*p));

		if (p == NULL) {
			snprintf(why, len, "out of memory");
			return 1;
		}
		d->start = p;
		d->capstart = st->nsched;
	}
	for (uint32_t i = 0; i < st->nsched; i++) {
		size_t c = kvc_seq_computed(k, kvs_req_seq(d->s,
							   st->sched[i].req));

		d->start[i] = (uint32_t)(c - st->sched[i].ntokens);
	}
	res->preemptions += st->npreempt;
	res->swap_out_blocks += st->nswap_out;
	res->swap_in_blocks += st->nswap_in;
	res->cow_blocks += st->ncow;
	if (v != NULL &&
	    ((rc = kvval_scheduled(v, d->s, st, d->start, why, len)) ||
	     (rc = kvval_computed(v, d->s, st, d->start, why, len))))
		return rc;
	if ((e = kvs_complete(d->s, NULL, &st)) != KV_OK) {
		snprintf(why, len, "complete: %s", kvs_errmsg(d->s));
		return 1;
	}
	res->finished += st->nfinish;
	if (v != NULL && (rc = kvval_completed(v, d->s, st, why, len)))
		return rc;
	return 0;
}

int
kvdrive_run(const struct kvdrive_opts *o, kvval *v,
	    struct kvdrive_result *res, bool *refused, char *why,
	    size_t whylen)
{
	struct kvs_config sc;
	struct kvc_config kc;
	struct drive d = { 0 };
	uint64_t rng = o->seed, max = o->max_steps ? o->max_steps : 1000000;
	uint32_t added = 0, *prefix = NULL;
	int rc = 0;
	kv_err e;

	memset(res, 0, sizeof(*res));
	*refused = false;
	kvs_config_init(&sc);
	snprintf(sc.policy, sizeof(sc.policy), "%s", o->policy);
	sc.preemption = o->preemption;
	sc.max_num_seqs = o->max_num_seqs;
	sc.max_num_batched_tokens = o->max_num_batched_tokens;
	kvdrive_kvc_config(o, &kc);
	d.s = kvs_new(&sc, &kc, &e, why, whylen);
	if (d.s == NULL) {
		*refused = e == KV_ECONFIG;
		return 2;
	}
	d.tok = malloc(((size_t)o->prompt_max + 1) * sizeof(*d.tok));
	prefix = malloc(((size_t)o->share * o->prefixes + 1) *
			sizeof(*prefix));
	if (d.tok == NULL || prefix == NULL) {
		snprintf(why, whylen, "out of memory");
		rc = 1;
		goto out;
	}
	for (size_t i = 0; i < (size_t)o->share * o->prefixes; i++)
		prefix[i] = (uint32_t)(next(&rng) % 32000);
	while (rc == 0) {
		for (uint32_t j = 0; j < o->per_step && added < o->requests;
		     j++, added++) {
			uint32_t n = uniform(&rng, o->prompt_min,
					     o->prompt_max);
			uint32_t out = uniform(&rng, o->out_min, o->out_max);
			uint32_t sh = !o->prefixes ? 0 :
				      o->share < n ? o->share : n;
			uint32_t pf = o->prefixes ? (uint32_t)(next(&rng) %
							      o->prefixes) : 0;
			kvs_req r;

			memcpy(d.tok, prefix + (size_t)pf * o->share,
			       sh * sizeof(*d.tok));
			for (uint32_t t = sh; t < n; t++)
				d.tok[t] = (uint32_t)(next(&rng) % 32000);
			if ((e = kvs_add(d.s, d.tok, n, out, 0, &r)) != KV_OK) {
				snprintf(why, whylen, "request %u: %s", added,
					 kvs_errmsg(d.s));
				rc = 1;
				goto out;
			}
		}
		if (added == o->requests && kvs_nunfinished(d.s) == 0)
			break;
		if (res->steps++ >= max) {
			snprintf(why, whylen, "no end after %llu steps",
				 (unsigned long long)max);
			rc = 1;
			break;
		}
		rc = step(&d, v, res, why, whylen);
	}
out:
	free(prefix);
	free(d.tok);
	free(d.start);
	kvs_free(d.s);
	return rc;
}
