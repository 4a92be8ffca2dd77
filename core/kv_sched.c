/*
 * kv_sched.c -- what every scheduler policy shares: requests, the three
 * queues, the step record, the model-output half of a step, abort and the
 * scheduler invariants.  The policies (kvs_*.c) only decide.
 *
 * Queues are plain arrays in order, head at index 0: a step touches each
 * request a constant number of times, and insertion at the front or removal
 * from the middle moves at most the queue (bounded by max_num_seqs for
 * running; the waiting queue's front insertions are preemptions, rare).
 *
 * Cost of a step outside the policy: O(scheduled + preempted + finished).
 * Memory grows only when a request or a step list outgrows its capacity.
 */
#include "kvs_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const struct kvs_policy kvs__v0_policy;
extern const struct kvs_policy kvs__v1_policy;
extern const struct kvs_policy kvs__sarathi_policy;
extern const struct kvs_policy kvs__fastgen_policy;
extern const struct kvs_policy kvs__kvsim_policy;

static const struct kvs_policy *const kvs__builtin[] = {
	&kvs__v0_policy, &kvs__v1_policy, &kvs__sarathi_policy,
	&kvs__fastgen_policy, &kvs__kvsim_policy
};

const struct kvs_policy *
kvs_builtin_policy(const char *name)
{
	for (size_t i = 0; i < sizeof(kvs__builtin) / sizeof(*kvs__builtin);
	     i++)
		if (strcmp(kvs__builtin[i]->name, name) == 0)
			return kvs__builtin[i];
	return NULL;
}

void
kvs_config_init(struct kvs_config *c)
{
	memset(c, 0, sizeof(*c));
	c->max_num_seqs = KVS_UNSET;
	c->max_num_batched_tokens = KVS_UNSET;
	c->chunked_prefill = KVS_UNSET;
	c->long_prefill_threshold = KVS_UNSET;
	c->preemption = KVS_UNSET;
	c->chunk_size = KVS_UNSET;
	c->priority = KVS_UNSET;
	c->lookahead = KVS_UNSET;
	c->capacity_check = KVS_UNSET;
	c->max_loras = KVS_UNSET;
	c->spec_tokens = KVS_UNSET;
}

kv_err
kvs__fail(kvs *s, kv_err e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->msg, sizeof(s->msg), fmt, ap);
	va_end(ap);
	return e;
}

kv_err
kvs__grow(void **p, uint32_t *cap, uint32_t n, size_t sz)
{
	uint32_t c;
	void *q;

	if (n <= *cap)
		return KV_OK;
	c = *cap ? *cap : 16;
	while (c < n)
		c *= 2;
	q = realloc(*p, (size_t)c * sz);
	if (q == NULL)
		return KV_ENOMEM;
	*p = q;
	*cap = c;
	return KV_OK;
}

/* Room for n entries in queue u, its entries moved back to the
 * allocation's start first. */
static kv_err
kvs__qgrow(struct kvs_qu *u, uint32_t n)
{
	if (u->off > 0 && n > u->cap) {
		memmove(u->a - u->off, u->a, u->n * sizeof(*u->a));
		u->a -= u->off;
		u->cap += u->off;
		u->off = 0;
	}
	return kvs__grow((void **)&u->a, &u->cap, n, sizeof(*u->a));
}

kvs *
kvs_new_policy(const struct kvs_policy *p, const struct kvs_config *sc,
	       const struct kvc_config *kc, kv_err *err, char *why,
	       size_t whylen)
{
	struct kvc_config kcfg = *kc;
	kvs *s = NULL;
	kv_err e;

	if (why != NULL && whylen > 0)
		why[0] = '\0';
	if (p == NULL || p->abi != KVS_ABI || p->schedule == NULL ||
	    p->name == NULL) {
		e = kvc__failbuf(why, whylen, KV_ECONFIG, "policy: bad "
				 "descriptor (ABI %u, kvsim speaks %u)",
				 p ? p->abi : 0, KVS_ABI);
		goto out;
	}
	if (sc->spec_tokens > 0 && p != &kvs__v1_policy) {
		e = kvc__failbuf(why, whylen, KV_ECONFIG, "spec_tokens: "
				 "policy %s has no speculative decoding "
				 "(vllm-v1 has)", p->name);
		goto out;
	}
	if (kcfg.mode == KVC_EXACT)
		kcfg.mode = p->mode;
	if (kcfg.mode != p->mode) {
		e = kvc__failbuf(why, whylen, KV_ECONFIG, "policy %s runs on "
				 "allocator mode %s, not %s", p->name,
				 kvc_mode_name(p->mode),
				 kvc_mode_name(kcfg.mode));
		goto out;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		e = KV_ENOMEM;
		goto out;
	}
	s->cfg = *sc;
	s->pol = p;
	if ((e = kvs__lora_configure(p, &s->cfg, why, whylen)) != KV_OK)
		goto out_free;
	/* the policies' configure turns it into blocks */
	if ((e = kvc__watermark_check(kcfg.watermark, why, whylen)) != KV_OK)
		goto out_free;
	if (p->configure != NULL &&
	    (e = p->configure(&s->cfg, &kcfg, why, whylen)) != KV_OK)
		goto out_free;
	s->k = kvc_new(&kcfg, &e, why, whylen);
	if (s->k == NULL)
		goto out_free;
	if (p->init != NULL && (e = p->init(s, &s->pstate)) != KV_OK) {
		kvc__failbuf(why, whylen, e, "policy %s: %s", p->name,
			     s->msg[0] ? s->msg : kv_strerror(e));
		goto out_free;
	}
	if (err != NULL)
		*err = KV_OK;
	return s;
out_free:
	kvs_free(s);
	s = NULL;
out:
	if (err != NULL)
		*err = e;
	return s;
}

kvs *
kvs_new(const struct kvs_config *sc, const struct kvc_config *kc,
	kv_err *err, char *why, size_t whylen)
{
	const struct kvs_policy *p = kvs_builtin_policy(sc->policy);

	if (p == NULL) {
		if (err != NULL)
			*err = KV_ECONFIG;
		kvc__failbuf(why, whylen, KV_ECONFIG, "unknown policy '%s' "
			     "(vllm-v0, vllm-v1, sarathi, deepspeed-fastgen, "
			     "kvsim, or a plugin path)", sc->policy);
		return NULL;
	}
	return kvs_new_policy(p, sc, kc, err, why, whylen);
}

void
kvs_free(kvs *s)
{
	if (s == NULL)
		return;
	if (s->pol != NULL && s->pol->release != NULL && s->pstate != NULL)
		s->pol->release(s->pstate);
	kvc_free(s->k);
	free(s->rq);
	free(s->rqx);
	for (int i = 0; i < 3; i++) {
		if (s->q[i].a != NULL)	/* its allocation's start */
			free(s->q[i].a - s->q[i].off);
		free(s->pairs[i]);
	}
	free(s->sched);
	free(s->pre);
	free(s->preswap);
	free(s->fin);
	free(s->ign);
	free(s->load);
	free(s->held);
	free(s->cto);
	free(s->ff);
	free(s->ffq);
	free(s->fffin);
	free(s->ffr);
	free(s->crq);
	free(s);
}

kvc *
kvs_kv(kvs *s)
{
	return s->k;
}

const struct kvs_config *
kvs_config_of(const kvs *s)
{
	return &s->cfg;
}

const char *
kvs_policy_name(const kvs *s)
{
	return s->pol->name;
}

const char *
kvs_errmsg(const kvs *s)
{
	return s->msg;
}

static bool
kvs__valid(const kvs *s, kvs_req r)
{
	return r >= 0 && (uint32_t)r < s->nrq;
}

/* ---- requests ------------------------------------------------------- */

static kv_err kvs__add(kvs *s, const uint32_t *tok, uint64_t key,
		       size_t ntok, uint32_t max_output, int32_t priority,
		       kvs_req *out);

kv_err
kvs_add(kvs *s, const uint32_t *tok, size_t ntok, uint32_t max_output,
	int32_t priority, kvs_req *out)
{
	s->msg[0] = '\0';
	if (ntok == 0 || tok == NULL)
		return kvs__fail(s, KV_EINVAL, "a request needs a prompt");
	return kvs__add(s, tok, 0, ntok, max_output, priority, out);
}

kv_err
kvs_add_keyed(kvs *s, uint64_t key, size_t ntok, uint32_t max_output,
	      int32_t priority, kvs_req *out)
{
	s->msg[0] = '\0';
	if (ntok == 0 || key == 0)
		return kvs__fail(s, KV_EINVAL, "a keyed request needs a "
				 "prompt and a key other than 0");
	if (kvc_config_of(s->k)->mode != KVC_VLLM_V1)
		return kvs__fail(s, KV_ENOTSUP, "keyed requests need "
				 "allocator mode vllm-v1");
	return kvs__add(s, NULL, key, ntok, max_output, priority, out);
}

static kv_err
kvs__add(kvs *s, const uint32_t *tok, uint64_t key, size_t ntok,
	 uint32_t max_output, int32_t priority, kvs_req *out)
{
	const struct kvc_config *kc = kvc_config_of(s->k);
	struct kvs_rq *q;
	int32_t seq;
	kv_err e;

	if (max_output < 1)
		return kvs__fail(s, KV_EINVAL, "output must be at least 1");
	if (s->nrq == INT32_MAX)
		return kvs__fail(s, KV_ENOMEM, "too many requests");
	if (kvs__grow((void **)&s->rq, &s->caprq, s->nrq + 1,
		      sizeof(*s->rq)) != KV_OK ||
	    (s->has_conn && kvs__grow((void **)&s->crq, &s->capcrq,
				      s->nrq + 1, sizeof(*s->crq)) != KV_OK) ||
	    (s->rqx != NULL && kvs__grow((void **)&s->rqx, &s->caprqx,
				      s->nrq + 1, sizeof(*s->rqx)) != KV_OK) ||
	    kvs__qgrow(&s->q[KVS_Q_WAITING], s->q[KVS_Q_WAITING].n + 1) !=
	    KV_OK)
		return kvs__fail(s, KV_ENOMEM, "out of memory");
	if (ntok >= kc->max_model_len && kc->mode != KVC_VLLM_V0) {
		/* refused at input processing: never queued */
		q = &s->rq[s->nrq];
		memset(q, 0, sizeof(*q));
		if (s->has_conn)
			memset(&s->crq[s->nrq], 0, sizeof(*s->crq));
		if (s->rqx != NULL)
			memset(&s->rqx[s->nrq], 0, sizeof(*s->rqx));
		q->seq = -1;
		q->prompt = (uint32_t)ntok;
		q->max_output = max_output;
		q->priority = priority;
		q->status = KVS_IGNORED;
		*out = (kvs_req)s->nrq++;
		return KV_OK;
	}
	e = key != 0 ? kvc_seq_new_keyed(s->k, key, ntok, &seq) :
		       kvc_seq_new(s->k, tok, ntok, &seq);
	if (e != KV_OK)
		return kvs__fail(s, e, "%s", kvc_errmsg(s->k));
	q = &s->rq[s->nrq];
	memset(q, 0, sizeof(*q));
	if (s->has_conn)
		memset(&s->crq[s->nrq], 0, sizeof(*s->crq));
	if (s->rqx != NULL)
		memset(&s->rqx[s->nrq], 0, sizeof(*s->rqx));
	q->seq = seq;
	q->prompt = (uint32_t)ntok;
	q->max_output = max_output;
	q->priority = priority;
	q->status = KVS_WAITING;
	s->q[KVS_Q_WAITING].a[s->q[KVS_Q_WAITING].n++] = (kvs_req)s->nrq;
	s->nunfinished++;
	*out = (kvs_req)s->nrq++;
	return KV_OK;
}

kv_err
kvs__rqx_need(kvs *s)
{
	struct kvs_rqx *x;
	uint32_t cap = s->caprq > 0 ? s->caprq : 1;

	if (s->rqx != NULL)
		return KV_OK;
	if ((x = calloc(cap, sizeof(*x))) == NULL)
		return KV_ENOMEM;
	s->rqx = x;
	s->caprqx = cap;
	return KV_OK;
}

uint32_t
kvs_nreqs(const kvs *s)
{
	return s->nrq;
}

uint32_t
kvs_nunfinished(const kvs *s)
{
	return s->nunfinished;
}

kvs_status
kvs_req_status(const kvs *s, kvs_req r)
{
	return kvs__valid(s, r) ? (kvs_status)s->rq[r].status : KVS_ABORTED;
}

int32_t
kvs_req_seq(const kvs *s, kvs_req r)
{
	return kvs__valid(s, r) ? s->rq[r].seq : -1;
}

uint32_t
kvs_req_prompt_len(const kvs *s, kvs_req r)
{
	return kvs__valid(s, r) ? s->rq[r].prompt : 0;
}

uint32_t
kvs_req_max_output(const kvs *s, kvs_req r)
{
	return kvs__valid(s, r) ? s->rq[r].max_output : 0;
}

uint32_t
kvs_req_generated(const kvs *s, kvs_req r)
{
	return kvs__valid(s, r) ? s->rq[r].generated : 0;
}

int32_t
kvs_req_priority(const kvs *s, kvs_req r)
{
	return kvs__valid(s, r) ? s->rq[r].priority : 0;
}

uint32_t
kvs_req_preemptions(const kvs *s, kvs_req r)
{
	return kvs__valid(s, r) ? s->rq[r].npreempt : 0;
}

uint32_t
kvs_req_recomputed(const kvs *s, kvs_req r)
{
	return kvs__valid(s, r) ? s->rq[r].recomputed : 0;
}

void
kvs_set_status(kvs *s, kvs_req r, kvs_status st)
{
	if (kvs__valid(s, r))
		s->rq[r].status = (uint8_t)st;
}

/* ---- queues ------------------------------------------------------------ */

uint32_t
kvs_queue_len(const kvs *s, kvs_queue q)
{
	return (unsigned)q < 3 ? s->q[q].n : 0;
}

kvs_req
kvs_queue_at(const kvs *s, kvs_queue q, uint32_t i)
{
	if ((unsigned)q >= 3 || i >= s->q[q].n)
		return -1;
	return s->q[q].a[i];
}

kv_err
kvs_queue_insert(kvs *s, kvs_queue q, uint32_t i, kvs_req r)
{
	struct kvs_qu *u;

	if ((unsigned)q >= 3 || !kvs__valid(s, r) || i > s->q[q].n)
		return kvs__fail(s, KV_EINVAL, "queue insert out of range");
	u = &s->q[q];
	if (kvs__qgrow(u, u->n + 1) != KV_OK)
		return kvs__fail(s, KV_ENOMEM, "out of memory");
	memmove(u->a + i + 1, u->a + i, (u->n - i) * sizeof(kvs_req));
	u->a[i] = r;
	u->n++;
	return KV_OK;
}

kv_err
kvs__qreserve(kvs *s, kvs_queue q, uint32_t n)
{
	if (kvs__qgrow(&s->q[q], n) != KV_OK)
		return kvs__fail(s, KV_ENOMEM, "out of memory");
	return KV_OK;
}

kvs_req
kvs_queue_remove(kvs *s, kvs_queue q, uint32_t i)
{
	struct kvs_qu *u;
	kvs_req r;

	if ((unsigned)q >= 3 || i >= s->q[q].n)
		return -1;
	u = &s->q[q];
	r = u->a[i];
	if (i == 0 && u->n > 1) {	/* the head: the rest stays */
		u->a++;
		u->off++;
		u->cap--;
	} else {
		memmove(u->a + i, u->a + i + 1,
			(u->n - i - 1) * sizeof(kvs_req));
	}
	u->n--;
	return r;
}

uint64_t
kvs_running_unused(const kvs *s, uint32_t block_size, uint64_t *slots)
{
	const struct kvs_qu *u = &s->q[KVS_Q_RUNNING];
	uint64_t unused = 0, all = 0;

	for (uint32_t i = 0; i < u->n; i++) {
		int32_t seq = s->rq[u->a[i]].seq;
		const struct kvc_seq *q;
		uint64_t cap;

		if (seq < 0 || (uint32_t)seq >= s->k->nseq)
			continue;	/* as kvc_table(): nothing there */
		q = kvc__seq(s->k, seq);
		cap = (uint64_t)q->tab[0].n * block_size;
		all += cap;
		if (cap > q->ntok)
			unused += cap - q->ntok;
	}
	if (slots != NULL)
		*slots = all;
	return unused;
}

/* Position of r in queue q, or -1. */
static int64_t
kvs__find(const kvs *s, kvs_queue q, kvs_req r)
{
	for (uint32_t i = 0; i < s->q[q].n; i++)
		if (s->q[q].a[i] == r)
			return i;
	return -1;
}

/* ---- the step record -------------------------------------------------- */

void
kvs__publish(kvs *s)
{
	struct kvs_step *st = &s->step;

	st->sched = s->sched;
	st->nsched = s->nsched;
	st->preempt = s->pre;
	st->preempt_swap = s->preswap;
	st->npreempt = s->npre;
	st->finish = s->fin;
	st->nfinish = s->nfin;
	st->swap_out = s->pairs[KVS_SWAP_OUT];
	st->nswap_out = s->npairs[KVS_SWAP_OUT];
	st->swap_in = s->pairs[KVS_SWAP_IN];
	st->nswap_in = s->npairs[KVS_SWAP_IN];
	st->cow = s->pairs[KVS_COW];
	st->ncow = s->npairs[KVS_COW];
	st->ignored = s->ign;
	st->nignored = s->nign;
	st->load = s->load;
	st->nload = s->nload;
	st->held = s->held;
	st->nheld = s->nheld;
	/* batch_tokens is kept by kvs_emit_sched(): publishing stays O(1). */
}

const struct kvs_step *
kvs_current_step(const kvs *s)
{
	return &s->step;
}

void *
kvs_policy_state(const kvs *s, const struct kvs_policy *p)
{
	return s != NULL && p != NULL && s->pol == p ? s->pstate : NULL;
}

/* The body of both: inlined into each (one call a scheduled request). */
static inline kv_err
emit_sched(kvs *s, kvs_req r, uint32_t n, uint32_t cached, uint32_t stale)
{
	if (!kvs__valid(s, r))
		return kvs__fail(s, KV_EINVAL, "no such request");
	if (cached > n ||
	    (stale > cached &&
	     stale - cached > kvc_seq_computed(s->k, kvs_req_seq(s, r))))
		return kvs__fail(s, KV_EINVAL, "%u cached tokens (%u stale) "
				 "of %u scheduled", cached, stale, n);
	if (kvs__grow((void **)&s->sched, &s->capsched, s->nsched + 1,
		      sizeof(*s->sched)) != KV_OK)
		return kvs__fail(s, KV_ENOMEM, "out of memory");
	s->sched[s->nsched].req = r;
	s->sched[s->nsched].ntokens = n;
	s->sched[s->nsched].cached = cached;
	s->sched[s->nsched].stale = stale;
	s->sched[s->nsched].spec = 0;
	s->nsched++;
	s->step.batch_tokens += n;
	s->rq[r].status = KVS_RUNNING;
	/* kvs__publish(), narrowed to the two fields this changes */
	s->step.sched = s->sched;
	s->step.nsched = s->nsched;
	return KV_OK;
}

kv_err
kvs_emit_sched(kvs *s, kvs_req r, uint32_t n)
{
	return emit_sched(s, r, n, 0, 0);
}

kv_err
kvs_emit_sched_cached(kvs *s, kvs_req r, uint32_t n, uint32_t cached,
		      uint32_t stale)
{
	return emit_sched(s, r, n, cached, stale);
}

/* Room for one more preemption record in pre[] and preswap[] alike. */
static kv_err
kvs__reserve_pre(kvs *s)
{
	if (kvs__grow((void **)&s->pre, &s->cappre, s->npre + 1,
		      sizeof(*s->pre)) != KV_OK)
		return kvs__fail(s, KV_ENOMEM, "out of memory");
	if (s->capswap < s->cappre) {
		uint8_t *p = realloc(s->preswap, s->cappre);

		if (p == NULL)
			return kvs__fail(s, KV_ENOMEM, "out of memory");
		s->preswap = p;
		s->capswap = s->cappre;
	}
	return KV_OK;
}

static kv_err
kvs__push_pre(kvs *s, kvs_req r, bool swapped)
{
	kv_err e = kvs__reserve_pre(s);

	if (e != KV_OK)
		return e;
	s->pre[s->npre] = r;
	s->preswap[s->npre] = swapped;
	s->npre++;
	s->rq[r].npreempt++;
	kvs__publish(s);
	return KV_OK;
}

kv_err
kvs_emit_pairs(kvs *s, enum kvs_pairs which)
{
	size_t n;
	const struct kvc_pair *p = kvc_pairs(s->k, &n);
	uint32_t *np = &s->npairs[which];

	if ((unsigned)which >= 3)
		return kvs__fail(s, KV_EINVAL, "bad pair list");
	if (n == 0)
		return KV_OK;
	if (kvs__grow((void **)&s->pairs[which], &s->cappairs[which],
		      *np + (uint32_t)n, sizeof(*p)) != KV_OK)
		return kvs__fail(s, KV_ENOMEM, "out of memory");
	memcpy(s->pairs[which] + *np, p, n * sizeof(*p));
	*np += (uint32_t)n;
	kvs__publish(s);
	return KV_OK;
}

kv_err
kvs_preempt_recompute(kvs *s, kvs_req r)
{
	uint32_t c;
	kv_err e;

	if (!kvs__valid(s, r))
		return kvs__fail(s, KV_EINVAL, "no such request");
	c = (uint32_t)kvc_seq_computed(s->k, s->rq[r].seq);
	/* reserve the record first: a preemption must not half-happen */
	if ((e = kvs__reserve_pre(s)) != KV_OK)
		return e;
	e = kvc_free_seq(s->k, s->rq[r].seq);
	if (e != KV_OK)
		return kvs__fail(s, e, "preempt: %s", kvc_errmsg(s->k));
	s->rq[r].status = KVS_WAITING;
	s->rq[r].recomputed += c;
	if (s->rqx != NULL)	/* _preempt_request clears spec_token_ids */
		s->rqx[r].draft = 0;
	return kvs__push_pre(s, r, false);
}

kv_err
kvs_preempt_swap(kvs *s, kvs_req r)
{
	kv_err e;

	if (!kvs__valid(s, r))
		return kvs__fail(s, KV_EINVAL, "no such request");
	if ((e = kvs__reserve_pre(s)) != KV_OK)
		return e;
	e = kvc_swap_out(s->k, s->rq[r].seq);
	if (e != KV_OK)
		return kvs__fail(s, e, "swap out: %s", kvc_errmsg(s->k));
	if ((e = kvs_emit_pairs(s, KVS_SWAP_OUT)) != KV_OK)
		return e;
	s->rq[r].status = KVS_SWAPPED;
	return kvs__push_pre(s, r, true);
}

/* ---- a step ------------------------------------------------------------ */

kv_err
kvs_schedule(kvs *s, const struct kvs_step **out)
{
	kv_err e;

	s->msg[0] = '\0';
	if (s->pending)
		return kvs__fail(s, KV_ESTATE, "the previous step has not "
				 "been completed");
	s->nsched = s->npre = s->nfin = s->nign = 0;
	s->nload = s->nheld = 0;
	s->step.batch_tokens = 0;
	s->npairs[0] = s->npairs[1] = s->npairs[2] = 0;
	s->step.number++;
	kvs__publish(s);
	kvc_set_time(s->k, (int64_t)s->step.number);
	kvc_step_begin(s->k);
	e = s->pol->schedule(s, s->pstate);
	kvs__publish(s);
	if (e != KV_OK) {
		if (s->msg[0] == '\0')
			kvs__fail(s, e, "policy %s: %s", s->pol->name,
				  kvc_errmsg(s->k)[0] ? kvc_errmsg(s->k) :
				  kv_strerror(e));
		return e;
	}
	s->pending = true;
	if (out != NULL)
		*out = &s->step;
	return KV_OK;
}

static kv_err
kvs__push_fin(kvs *s, kvs_req r)
{
	if (kvs__grow((void **)&s->fin, &s->capfin, s->nfin + 1,
		      sizeof(*s->fin)) != KV_OK)
		return kvs__fail(s, KV_ENOMEM, "out of memory");
	s->fin[s->nfin++] = r;
	return KV_OK;
}

kv_err
kvs_emit_ignored(kvs *s, kvs_req r)
{
	struct kvs_rq *q;
	kv_err e;

	if (!kvs__valid(s, r))
		return kvs__fail(s, KV_ENOENT, "no such request");
	q = &s->rq[r];
	if (q->status != KVS_WAITING && q->status != KVS_SWAPPED)
		return kvs__fail(s, KV_ESTATE, "only a waiting or swapped "
				 "request can be ignored");
	if (kvs__grow((void **)&s->ign, &s->capign, s->nign + 1,
		      sizeof(*s->ign)) != KV_OK)
		return kvs__fail(s, KV_ENOMEM, "out of memory");
	if (q->status == KVS_SWAPPED &&
	    (e = kvc_free_seq(s->k, q->seq)) != KV_OK)
		return kvs__fail(s, e, "ignore: %s", kvc_errmsg(s->k));
	if (kvc_seq_release(s->k, q->seq) == KV_OK)
		q->seq = -1;
	s->ign[s->nign++] = r;
	q->status = KVS_IGNORED;
	s->nunfinished--;
	kvs__publish(s);
	return KV_OK;
}

/* Finish r: free its blocks, take it out of running (kvs_int.h). */
kv_err
kvs__finish(kvs *s, kvs_req r)
{
	int64_t at = kvs__find(s, KVS_Q_RUNNING, r);
	kv_err e;

	if ((e = kvs__push_fin(s, r)) != KV_OK)
		return e;
	if (s->has_conn) {
		if (at >= 0)
			kvs_queue_remove(s, KVS_Q_RUNNING, (uint32_t)at);
		s->rq[r].status = KVS_FINISHED;
		s->nunfinished--;
		return kvs__conn_end(s, r, true);
	}
	e = kvc__free_final(s->k, s->rq[r].seq);
	if (e != KV_OK)
		return kvs__fail(s, e, "finish: %s", kvc_errmsg(s->k));
	s->rq[r].seq = -1;	/* its slot may serve a new request */
	if (at >= 0)
		kvs_queue_remove(s, KVS_Q_RUNNING, (uint32_t)at);
	s->rq[r].status = KVS_FINISHED;
	s->nunfinished--;
	return KV_OK;
}

/*
 * The model output (docs/replay.md R53): in sched order, a request whose
 * computed tokens reach its length samples one token; it finishes with its
 * output length or at max_model_len, and is freed at once.  Computed counts
 * were advanced when the tokens were scheduled (vllm-v1, exact, deepspeed).
 */
kv_err
kvs_complete_default(kvs *s, const uint32_t *tokens)
{
	uint32_t mml = kvc_config_of(s->k)->max_model_len;

	for (uint32_t i = 0; i < s->nsched; i++) {
		kvs_req r = s->sched[i].req;
		struct kvs_rq *q = &s->rq[r];
		size_t T = 0, C = 0;
		uint32_t t;
		kv_err e;

		if (q->status != KVS_RUNNING)
			continue;
		if (q->seq >= 0 && (uint32_t)q->seq < s->k->nseq) {
			T = kvc__seq(s->k, q->seq)->ntok;
			C = kvc__seq(s->k, q->seq)->ncomp;
		}
		if (C != T)
			continue;
		t = tokens != NULL ? tokens[i] : 1000000u + (uint32_t)T;
		if ((e = kvs__out_token(s, q, t)) != KV_OK)
			return e;
		if (q->generated >= q->max_output || T + 1 >= mml) {
			e = kvs__finish(s, r);
			if (e != KV_OK)
				return e;
		}
	}
	return KV_OK;
}

/* Both kinds of model output: with drafts (spec) or without. */
static kv_err
kvs__complete(kvs *s, const uint32_t *tokens, const uint32_t *accepted,
	      bool spec, const struct kvs_step **out)
{
	kv_err e;

	s->pending = false;
	if (s->has_conn && (e = kvs__conn_before(s)) != KV_OK)
		return e;
	if (spec)
		e = kvs__complete_spec(s, tokens, accepted);
	else
		e = s->pol->complete != NULL ?
		    s->pol->complete(s, s->pstate, tokens) :
		    kvs_complete_default(s, tokens);
	if (e == KV_OK && s->has_conn)
		e = kvs__conn_after(s);
	kvs__publish(s);
	if (out != NULL)
		*out = &s->step;
	return e;
}

kv_err
kvs_complete(kvs *s, const uint32_t *tokens, const struct kvs_step **out)
{
	s->msg[0] = '\0';
	if (!s->pending)
		return kvs__fail(s, KV_ESTATE, "no step to complete");
	return kvs__complete(s, tokens, NULL, false, out);
}

kv_err
kvs_complete_spec(kvs *s, const uint32_t *tokens, const uint32_t *accepted,
		  const struct kvs_step **out)
{
	bool drafts = false;

	s->msg[0] = '\0';
	if (!s->pending)
		return kvs__fail(s, KV_ESTATE, "no step to complete");
	for (uint32_t i = 0; i < s->nsched; i++) {
		uint32_t a = accepted != NULL ? accepted[i] : 0;

		if (a > s->sched[i].spec)
			return kvs__fail(s, KV_EINVAL, "entry %u: %u draft "
					 "tokens accepted of %u verified", i,
					 a, s->sched[i].spec);
		drafts |= s->sched[i].spec > 0;
	}
	return kvs__complete(s, tokens, accepted, drafts, out);
}

kv_err
kvs_step(kvs *s, const struct kvs_step **out)
{
	kv_err e = kvs_schedule(s, NULL);

	if (e != KV_OK)
		return e;
	return kvs_complete(s, NULL, out);
}

kv_err
kvs_set_inflight(kvs *s, kvs_req r, bool inflight)
{
	struct kvs_rq *q;

	s->msg[0] = '\0';
	if (!kvs__valid(s, r))
		return kvs__fail(s, KV_ENOENT, "no such request");
	q = &s->rq[r];
	if (inflight && (q->status == KVS_FINISHED ||
			 q->status == KVS_ABORTED || q->status == KVS_IGNORED))
		return kvs__fail(s, KV_EINVAL, "request %d has ended", r);
	q->inflight = inflight;
	return KV_OK;
}

kv_err
kvs_abort(kvs *s, kvs_req r)
{
	static const kvs_queue qof[] = {
		[KVS_WAITING] = KVS_Q_WAITING,
		[KVS_RUNNING] = KVS_Q_RUNNING,
		[KVS_SWAPPED] = KVS_Q_SWAPPED,
	};
	struct kvs_rq *q;
	int64_t at;
	kv_err e;

	s->msg[0] = '\0';
	if (!kvs__valid(s, r))
		return kvs__fail(s, KV_ENOENT, "no such request");
	q = &s->rq[r];
	if (q->status == KVS_FINISHED || q->status == KVS_ABORTED ||
	    q->status == KVS_IGNORED)
		return kvs__fail(s, KV_ESTATE, "request already ended");
	if (s->pending)
		return kvs__fail(s, KV_ESTATE, "abort between a step's halves");
	if (s->has_conn)
		return kvs__conn_abort(s, r);
	at = kvs__find(s, qof[q->status], r);
	if (q->status != KVS_WAITING) {
		e = kvc_free_seq(s->k, q->seq);
		if (e != KV_OK)
			return kvs__fail(s, e, "%s", kvc_errmsg(s->k));
	}
	if (at >= 0)
		kvs_queue_remove(s, qof[q->status], (uint32_t)at);
	/* the request is over: keep no tokens for it */
	if (kvc_seq_release(s->k, q->seq) == KV_OK)
		q->seq = -1;
	q->status = KVS_ABORTED;
	s->nunfinished--;
	return KV_OK;
}

/* ---- invariants ------------------------------------------------------- */

int
kvs_audit(const kvs *s, char *why, size_t whylen)
{
	static const kvs_status want[3] = {
		KVS_WAITING, KVS_RUNNING, KVS_SWAPPED
	};
	static const kvc_state kvwant[3] = {
		KVC_WAITING, KVC_RUNNING, KVC_SWAPPED
	};
	uint32_t seen = 0, unfinished = 0;
	int rc = kvc_audit(s->k, why, whylen);
	uint8_t *mark;

	if (rc != 0)
		return rc;
	mark = calloc(s->nrq ? s->nrq : 1, 1);
	if (mark == NULL) {
		kvc__failbuf(why, whylen, KV_ENOMEM, "out of memory");
		return 200;
	}
	for (int q = 0; q < 3; q++)
		for (uint32_t i = 0; i < s->q[q].n; i++) {
			kvs_req r = s->q[q].a[i];

			if (!kvs__valid(s, r) || mark[r]) {
				kvc__failbuf(why, whylen, KV_EINVAL, "request "
					     "%d twice in the queues", r);
				rc = 201;
				goto out;
			}
			mark[r] = 1;
			seen++;
			if (q == KVS_Q_WAITING && s->has_conn &&
			    (s->rq[r].status == KVS_WAITING_REMOTE ||
			     kvc_seq_state(s->k, s->rq[r].seq) ==
			     KVC_RUNNING)) {
				/* a load, in flight or landed: checked apart */
				if ((rc = kvs__conn_audit_waiting(s, r, why,
				    whylen)) != 0)
					goto out;
				continue;
			}
			if (s->rq[r].status != want[q] ||
			    kvc_seq_state(s->k, s->rq[r].seq) != kvwant[q]) {
				kvc__failbuf(why, whylen, KV_EINVAL, "request "
					     "%d in queue %d has status %d, "
					     "allocator state %d", r, q,
					     s->rq[r].status,
					     kvc_seq_state(s->k,
							   s->rq[r].seq));
				rc = 202;
				goto out;
			}
			if (q == KVS_Q_WAITING &&
			    kvc_seq_computed(s->k, s->rq[r].seq) != 0) {
				kvc__failbuf(why, whylen, KV_EINVAL, "waiting "
					     "request %d has computed tokens",
					     r);
				rc = 203;
				goto out;
			}
		}
	for (uint32_t r = 0; r < s->nrq; r++) {
		bool live = s->rq[r].status != KVS_FINISHED &&
			    s->rq[r].status != KVS_ABORTED &&
			    s->rq[r].status != KVS_IGNORED;

		unfinished += live;
		if (live != (bool)mark[r]) {
			kvc__failbuf(why, whylen, KV_EINVAL, "request %u "
				     "(status %d) %s a queue", r,
				     s->rq[r].status, live ? "missing from" :
				     "still in");
			rc = 204;
			goto out;
		}
		if (!live && (s->rq[r].conn & (KVS__C_HELD |
		    KVS__C_LOADING)) != 0) {
			if ((rc = kvs__conn_audit_ended(s, (kvs_req)r, why,
			    whylen)) != 0)
				goto out;
			continue;
		}
		if (!live && kvc_seq_state(s->k, s->rq[r].seq) != KVC_DEAD) {
			kvc__failbuf(why, whylen, KV_EINVAL, "ended request "
				     "%u still holds blocks", r);
			rc = 205;
			goto out;
		}
	}
	if (unfinished != s->nunfinished || seen != unfinished) {
		kvc__failbuf(why, whylen, KV_EINVAL, "unfinished count %u, "
			     "queued %u, counted %u", s->nunfinished, seen,
			     unfinished);
		rc = 206;
		goto out;
	}
	if (s->cfg.max_num_seqs > 0 &&
	    s->q[KVS_Q_RUNNING].n > (uint64_t)s->cfg.max_num_seqs) {
		kvc__failbuf(why, whylen, KV_EINVAL, "%u running requests, "
			     "max_num_seqs %lld", s->q[KVS_Q_RUNNING].n,
			     (long long)s->cfg.max_num_seqs);
		rc = 207;
		goto out;
	}
	/*
	 * The token budget is the policy's to check: vLLM v0 does not
	 * charge prefix-cached tokens, so a batch may exceed it there.
	 */
	rc = kvs__lora_audit(s, why, whylen);
out:
	free(mark);
	return rc;
}
