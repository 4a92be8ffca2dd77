/*
 * replica.c -- one replica: scheduler step, cost, milestones, and the
 * invariants replica_check() verifies (replica.h).
 */
#include "config.h"

#include "sim/replica_int.h"

#include "core/kvspolicy.h"
#include "sim/cost_lora.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(RPT_MAX_TIERS == KVO_MAX_TIERS, "a report column per tier");

/*
 * The kvsim policy's preemption price in nanoseconds of the cost model:
 * a recompute costs the prefill of the tokens it computes again, a swap
 * the copies of its blocks out and back in.  A GPU without a host link
 * cannot swap.
 */
static int64_t
kvsim_cost(void *ctx, const struct kvs_victim *v, enum kvs_preempt_mode m)
{
	const struct cost_model *cm = ctx;
	int64_t out, in;

	if (m != KVS_PREEMPT_SWAP)
		return cost_recompute_ns(cm, v->computed);
	out = cost_swap_ns(cm, COST_D2H, v->gpu_blocks, cm->layout);
	in = cost_swap_ns(cm, COST_H2D, v->gpu_blocks, cm->layout);
	if (out < 0 || in < 0 || out > INT64_MAX - in)
		return INT64_MAX;
	return out + in;
}

static kv_err replica__pp_open(replica *rp, const struct replica_cfg *cfg);

replica *
replica_new(const struct replica_cfg *cfg, char *why, size_t whylen)
{
	replica *rp = calloc(1, sizeof(*rp));
	kv_err e;

	if (rp == NULL) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	rp->s = cfg->policy != NULL
		? kvs_new_policy(cfg->policy, cfg->sc, cfg->kc, &e, why,
				 whylen)
		: kvs_new(cfg->sc, cfg->kc, &e, why, whylen);
	if (rp->s == NULL) {
		free(rp);
		return NULL;
	}
	if (cfg->cm != NULL) {	/* KV_EINVAL: not the kvsim policy */
		struct kvs_kvsim_cost c = { (void *)cfg->cm, kvsim_cost };

		(void)kvs_kvsim_set_cost(rp->s, &c);
	}
	rp->index = cfg->index;
	rp->cm = cfg->cm;
	rp->step_ns = cfg->step_ns;
	rp->vocab = cfg->vocab;
	rp->check = cfg->check;
	rp->obs = cfg->obs;
	rp->rowh = cfg->rowh;
	rp->ct = cfg->ct;
	rp->async = cfg->async_sched;
	rp->fanout = cfg->fanout;
	rp->fork = cfg->fork;
	rp->ff = cfg->fast_forward;
	cost_fifo_init(&rp->fe);
	rp->cend_armed = -1;
	rp->block_size = kvc_config_of(kvs_kv(rp->s))->block_size;
	rp->max_model_len = kvc_config_of(kvs_kv(rp->s))->max_model_len;
	rp->blocks_total = kvc_free_blocks(kvs_kv(rp->s), 0);
	rp->st.ngroups = kvc_ngroups(kvs_kv(rp->s));
	for (uint32_t g = 0; g < rp->st.ngroups; g++)
		rp->st.group_blocks[g] = kvc_free_blocks(kvs_kv(rp->s), g);
	if (rp->ct != NULL)
		ctrace_replica(rp->ct, rp->index, kvs_policy_name(rp->s));
	rp->off_armed = -1;
	if (cfg->lora != NULL &&
	    (sim_lora_cache_init(&rp->lc, cfg->lora) != KV_OK ||
	     (rp->lids = calloc(cfg->lora->max_loras, sizeof(*rp->lids))) ==
	     NULL)) {
		snprintf(why, whylen, "out of memory");
		replica_free(rp);
		return NULL;
	}
	rp->lora_on = cfg->lora != NULL;
	/* what needs a prompt's ids: an observer (validate compares them),
	 * KV offload and connectors (they index blocks by content), P/D
	 * (the prompt goes to a second pool: every replica of a P/D run has
	 * its row hook), speculative decoding */
	rp->keyed = kvc_config_of(kvs_kv(rp->s))->mode == KVC_VLLM_V1 &&
		    cfg->obs == NULL && cfg->offload == NULL &&
		    cfg->rowh == NULL && cfg->spec == NULL && cfg->keyed;

	rp->spec = cfg->spec;
	rp->spec_cost = cfg->spec_cost;
	if (replica__pp_open(rp, cfg) != KV_OK) {
		snprintf(why, whylen, "out of memory");
		replica_free(rp);
		return NULL;
	}
	if (cfg->offload != NULL &&
	    (rp->off = sim_offload_new(cfg->offload, rp->s, why, whylen)) ==
	    NULL) {
		replica_free(rp);
		return NULL;
	}
	return rp;
}

void
replica_free(replica *rp)
{
	struct rq *q;

	if (rp == NULL)
		return;
	for (size_t i = 0; i < rp->nbyreq; i++) {
		if (rp->byreq[i] != NULL)
			rnsamp_put(rp->byreq[i]->grp);
		free(rp->byreq[i]);
	}
	while ((q = rp->freelist) != NULL) {
		rp->freelist = (struct rq *)(uintptr_t)q->id;
		free(q);
	}
	free(rp->byreq);
	free(rp->tok);
	free(rp->seq);
	free(rp->fseq);
	free(rp->sreq);
	free(rp->stok);
	free(rp->start);
	free(rp->spectok);
	free(rp->specacc);
	free(rp->abort);
	free(rp->tk);
	free(rp->late);
	free(rp->cend);
	for (size_t i = rp->phead; i < rp->npend; i++) {
		rnsamp_put(rp->pend[i].grp);
		free(rp->pend[i].tok);
	}
	free(rp->pend);
	free(rp->samp);
	free(rp->fftok);
	free(rp->fftaken);
	free(rp->fffreed);
	free(rp->fft);
	free(rp->fftokn);
	free(rp->ffrun);
	free(rp->ffend);
	free(rp->ffpos);
	free(rp->ffseq);
	free(rp->ffadm);
	free(rp->ffasched);
	free(rp->ffareq);
	free(rp->ffaseq);
	kvs_free(rp->s);
	sim_offload_free(rp->off);
	sim_lora_cache_release(&rp->lc);
	free(rp->lids);
	rpp_free(rp->pp);
	free(rp);
}

static struct rq *
rq_get(replica *rp)
{
	struct rq *q = rp->freelist;

	if (q != NULL)
		rp->freelist = (struct rq *)(uintptr_t)q->id;
	else
		q = malloc(sizeof(*q));
	if (q != NULL)
		memset(q, 0, sizeof(*q));
	return q;
}

static void
rq_put(replica *rp, struct rq *q)
{
	q->id = (uint64_t)(uintptr_t)rp->freelist;
	rp->freelist = q;
}

/* Close the KV-usage integral up to now and take the new level, the
 * groups' free blocks free[g]. */
void
replica__usage_free(replica *rp, int64_t now, const uint64_t *free)
{
	uint64_t used = rp->blocks_total - free[0];
	double u = rp->blocks_total ? (double)used / (double)rp->blocks_total
				    : 0.0;
	double dt = now > rp->st.usage_t ? (double)(now - rp->st.usage_t) : 0;

	rp->st.usage_area += rp->st.usage_now * dt;
	rp->st.usage_t = now;
	rp->st.usage_now = u;
	if (u > rp->st.usage_max)
		rp->st.usage_max = u;
	for (uint32_t g = 0; g < rp->st.ngroups; g++) {
		uint64_t nb = rp->st.group_blocks[g];
		double gu = nb ? (double)(nb - free[g]) / (double)nb : 0.0;

		rp->st.group_area[g] += rp->st.group_now[g] * dt;
		rp->st.group_now[g] = gu;
		if (gu > rp->st.group_max[g])
			rp->st.group_max[g] = gu;
	}
}

/* The same with the allocator's free blocks now. */
static void
usage_mark(replica *rp, int64_t now)
{
	const kvc *k = kvs_kv(rp->s);
	uint64_t free[KVC_MAX_GROUPS];

	for (uint32_t g = 0; g < rp->st.ngroups || g == 0; g++)
		free[g] = kvc_free_blocks(k, g);
	replica__usage_free(rp, now, free);
}

/*
 * Hand the scheduler the request p with its prompt ids tok: a record, or
 * *ignored (counted with the rejected) when the scheduler drops it at
 * once.  The caller keeps the outstanding tokens.
 */
static kv_err
replica__admit(replica *rp, const struct pend *p, const uint32_t *tok,
	       bool *ignored, char *why, size_t whylen)
{
	struct rq *q;
	kvs_req h;
	kv_err e;

	*ignored = false;
	if (rp->nbyreq == rp->capbyreq) {
		size_t cap = rp->capbyreq ? rp->capbyreq * 2 : 1024;
		struct rq **b = realloc(rp->byreq, cap * sizeof(*b));

		if (b == NULL)
			goto nomem;
		rp->byreq = b;
		rp->capbyreq = cap;
	}
	q = rq_get(rp);
	if (q == NULL)
		goto nomem;
	e = p->key != 0 ? kvs_add_keyed(rp->s, p->key, p->prompt, p->output,
					p->priority, &h)
			: kvs_add(rp->s, tok, p->prompt, p->output, p->priority,
				  &h);
	if (e == KV_OK && rp->lora_on && p->lora != 0)
		e = kvs_set_lora(rp->s, h, p->lora);
	if (e == KV_OK && rp->fork && p->nsamp > 1)
		e = kvs_set_n(rp->s, h, p->nsamp);
	if (e != KV_OK) {
		rq_put(rp, q);
		snprintf(why, whylen, "request %llu: %s",
			 (unsigned long long)p->id, kvs_errmsg(rp->s));
		return e;
	}
	assert((size_t)h == rp->nbyreq);
	if (kvs_req_status(rp->s, h) == KVS_IGNORED) {
		rq_put(rp, q);
		rp->byreq[rp->nbyreq++] = NULL;
		*ignored = true;
		/* a fanned-out request is rejected once, with its last
		 * child (the children share the prompt: all or none) */
		if (p->grp == NULL || rnsamp_put(p->grp))
			rp->st.rejected++;
		return KV_OK;
	}
	rp->byreq[rp->nbyreq++] = q;
	q->grp = p->grp;
	q->id = p->id;
	q->stage = p->stage;
	q->out_key = p->out_key;
	q->arrival = p->arrival;
	q->admit = p->at;
	q->prompt = p->prompt;
	q->output = p->output;
	q->lora = rp->lora_on ? p->lora : 0;
	q->nsamp = rp->fork && p->nsamp > 1 ? p->nsamp : 1;
	q->keyed = p->key != 0;
	rp->st.keyed += q->keyed;
	rp->st.added++;
	return KV_OK;
nomem:
	snprintf(why, whylen, "out of memory");
	return KV_ENOMEM;
}

/* The request's fields a pend keeps (not its prompt ids). */
static void
pend_set(struct pend *p, const struct wl_request *r)
{
	p->id = r->id;
	p->stage = r->stage;
	p->failed = false;
	p->fail_ns = 0;
	p->out_key = r->out_key;
	p->arrival = r->arrival_ns;
	p->at = r->arrival_ns;
	p->prompt = r->prompt_tokens;
	p->output = r->output_tokens;
	p->priority = r->priority;
	p->tok = NULL;
	p->key = 0;
	p->grp = NULL;
	p->lora = r->lora;
	p->nsamp = r->n;
	p->taken = false;
}

/*
 * The key a request of group g (NULL: none) goes to the scheduler by, or 0
 * for its token ids (kvs_add_keyed).  A prompt that begins unlike any other
 * of the run (wl_request.unique) can share no block, so its ids are never
 * needed: only its blocks' hashes, which its key gives.  Children of a
 * fanned-out request share their prompt, so they go by ids.
 */
static uint64_t
replica__key(const replica *rp, const struct wl_request *r,
	     const struct rnsamp_group *g)
{
	if (!rp->keyed || !r->unique || g != NULL || r->n > 1 ||
	    r->tokens != NULL || r->nsegs == 0)
		return 0;
	return r->segs[0].key != 0 ? r->segs[0].key : 1;
}

/*
 * Keep the request (and its prompt ids) until it reaches the engine at
 * `at` (the API server) and, under async scheduling, until the step it
 * can join is chosen (replica__admit_due).
 */
static kv_err
replica__defer(replica *rp, const struct wl_request *r, int64_t at,
	       struct rnsamp_group *g, char *why, size_t whylen)
{
	struct pend *p;

	if (rp->npend == rp->cappend && rp->phead > 0) {
		memmove(rp->pend, rp->pend + rp->phead,
			(rp->npend - rp->phead) * sizeof(*rp->pend));
		rp->npend -= rp->phead;
		rp->phead = 0;
	}
	if (rp->npend == rp->cappend) {
		size_t cap = rp->cappend ? rp->cappend * 2 : 64;
		struct pend *b = realloc(rp->pend, cap * sizeof(*b));

		if (b == NULL)
			goto nomem;
		rp->pend = b;
		rp->cappend = cap;
	}
	p = &rp->pend[rp->npend];
	pend_set(p, r);
	p->at = at;
	p->grp = g;
	if ((p->key = replica__key(rp, r, g)) == 0) {
		p->tok = malloc((size_t)r->prompt_tokens * sizeof(*p->tok));
		if (p->tok == NULL)
			goto nomem;
		wl_request_tokens(r, 0, r->prompt_tokens, rp->vocab, p->tok);
	}
	rp->npend++;
	rp->outstanding += (uint64_t)r->prompt_tokens + r->output_tokens;
	return KV_OK;
nomem:
	snprintf(why, whylen, "out of memory");
	return KV_ENOMEM;
}

/* Async scheduling: the requests that arrived by t go to the scheduler,
 * in arrival order. */
static kv_err replica__abort_later(replica *rp, kvs_req h, char *why,
				  size_t whylen);

/*
 * The client of the request just admitted from p left while it waited
 * for its step (replica_fail on a held request): it fails now and is
 * aborted at the end of the step in flight, or of the next one.
 */
static kv_err
replica__fail_late(replica *rp, const struct pend *p, char *why,
		   size_t whylen)
{
	kvs_req h = (kvs_req)rp->nbyreq - 1;
	struct rq *q = rp->byreq[h];

	q->failed = true;
	q->fail_ns = p->fail_ns;
	return replica__abort_later(rp, h, why, whylen);
}

kv_err
replica__admit_due(replica *rp, int64_t t, char *why, size_t whylen)
{
	while (rp->phead < rp->npend && rp->pend[rp->phead].at <= t) {
		struct pend *p = &rp->pend[rp->phead];
		bool ign;
		kv_err e = replica__admit(rp, p, p->tok, &ign, why, whylen);

		if (e != KV_OK)
			return e;
		if (ign)
			rp->outstanding -= (uint64_t)p->prompt + p->output;
		else if (p->failed && (e = replica__fail_late(rp, p, why,
							     whylen)) != KV_OK)
			return e;
		free(p->tok);
		p->tok = NULL;
		rp->tk_adm += p->taken;
		rp->phead++;
	}
	if (rp->phead == rp->npend)
		rp->phead = rp->npend = 0;
	return KV_OK;
}

/* Room for one more taken request, those no record needs dropped. */
static kv_err
taken_room(replica *rp)
{
	uint64_t lo = rp->tk_served;

	if (rp->tk_arrived < lo)
		lo = rp->tk_arrived;
	if (rp->tk_adm < lo)
		lo = rp->tk_adm;
	if (lo > rp->tkbase) {
		size_t d = (size_t)(lo - rp->tkbase);

		memmove(rp->tk, rp->tk + d, (rp->ntk - d) * sizeof(*rp->tk));
		rp->ntk -= d;
		rp->tkbase = lo;
	}
	if (rp->ntk == rp->captk) {
		size_t cap = rp->captk ? 2 * rp->captk : 16;
		struct rtaken *t = realloc(rp->tk, cap * sizeof(*t));

		if (t == NULL)
			return KV_ENOMEM;
		rp->tk = t;
		rp->captk = cap;
	}
	return KV_OK;
}

kv_err
replica__take(replica *rp, const struct wl_request *r, int64_t in,
	      int64_t at, char *why, size_t whylen)
{
	struct rtaken *k;
	kv_err e;

	if (taken_room(rp) != KV_OK) {
		snprintf(why, whylen, "out of memory");
		return KV_ENOMEM;
	}
	if ((e = replica__defer(rp, r, at, NULL, why, whylen)) != KV_OK)
		return e;
	rp->pend[rp->npend - 1].taken = true;
	k = &rp->tk[rp->ntk++];
	k->id = r->id;
	k->t = r->arrival_ns;
	k->in = in;
	k->at = at;
	rp->tk_n++;
	return KV_OK;
}

kv_err
replica__taken_serve(replica *rp, char *why, size_t whylen)
{
	const struct rtaken *k = &rp->tk[rp->tk_served - rp->tkbase];
	int64_t at = cost_fifo_serve(&rp->fe, k->t, k->in);

	if (at != k->at) {
		snprintf(why, whylen, "replica %u: fast-forward: request "
			 "%" PRIu64 " reaches the engine at %" PRId64 " ns, "
			 "the span said %" PRId64, rp->index, k->id, at,
			 k->at);
		return KV_ESTATE;
	}
	rp->tk_served++;
	return KV_OK;
}

uint64_t
replica_taken_pending(const replica *rp)
{
	return rp->tk_n - rp->tk_arrived;
}

uint64_t
replica_taken_total(const replica *rp)
{
	return rp->tk_n;
}

kv_err
replica_taken_arrive(replica *rp, const struct wl_request *r,
		     bool *admitted, char *why, size_t whylen)
{
	const struct rtaken *k = &rp->tk[rp->tk_arrived - rp->tkbase];
	kv_err e;

	*admitted = false;
	if (k->id != r->id || k->t != r->arrival_ns) {
		snprintf(why, whylen, "replica %u: fast-forward: request "
			 "%" PRIu64 " arrives at %" PRId64 " ns where a span "
			 "took in request %" PRIu64 " at %" PRId64 " ns",
			 rp->index, r->id, r->arrival_ns, k->id, k->t);
		return KV_ESTATE;
	}
	/* its work in the API server, after the steps ended by now (the
	 * caller's replica_ff_catch), where the span's steps left it */
	if (rp->tk_served == rp->tk_arrived &&
	    (e = replica__taken_serve(rp, why, whylen)) != KV_OK)
		return e;
	*admitted = rp->tk_arrived < rp->tk_adm;
	rp->admit_at = k->at;
	rp->tk_arrived++;
	return KV_OK;
}


int64_t
replica_admit_at(const replica *rp)
{
	return rp->admit_at;
}

/* Request r, reaching the engine at `at`, to the scheduler or held
 * (replica__defer); a child of group g, or g NULL. */
static kv_err
replica__add1(replica *rp, const struct wl_request *r, int64_t at,
	      struct rnsamp_group *g, bool *rejected, char *why,
	      size_t whylen)
{
	struct pend p;
	kv_err e;

	if (rp->async || at > r->arrival_ns || rp->phead < rp->npend)
		return replica__defer(rp, r, at, g, why, whylen);
	pend_set(&p, r);
	p.grp = g;
	if ((p.key = replica__key(rp, r, g)) != 0)
		goto add;
	if (r->prompt_tokens > rp->captok) {
		size_t cap = r->prompt_tokens * 2u;
		uint32_t *t = realloc(rp->tok, cap * sizeof(*t));

		if (t == NULL) {
			snprintf(why, whylen, "out of memory");
			return KV_ENOMEM;
		}
		rp->tok = t;
		rp->captok = cap;
	}
	wl_request_tokens(r, 0, r->prompt_tokens, rp->vocab, rp->tok);
add:
	e = replica__admit(rp, &p, p.key != 0 ? NULL : rp->tok, rejected,
			   why, whylen);
	if (e == KV_OK && !*rejected)
		rp->outstanding += (uint64_t)r->prompt_tokens +
				   r->output_tokens;
	return e;
}

/*
 * Parallel sampling fanned out, as vLLM v1's ParentRequest and the
 * pinned v0's ParallelSampleSequenceGroup do: n child requests, added in
 * order, the same prompt, each sample's own output tokens
 * (wl_output_tokens).  Handles h..h+n-1 record their sample index.
 */
static kv_err
replica__add_n(replica *rp, const struct wl_request *r, int64_t at,
	       bool *rejected, char *why, size_t whylen)
{
	struct rnsamp_group *g = rnsamp_new(r->n);
	size_t h = (size_t)replica_last_handle(rp) + 1;
	kv_err e = KV_OK;

	if (g == NULL || h + r->n > rp->capsamp) {
		size_t cap = (h + r->n) * 2;
		uint32_t *b = g ? realloc(rp->samp, cap * sizeof(*b)) : NULL;

		if (b == NULL) {
			free(g);
			snprintf(why, whylen, "out of memory");
			return KV_ENOMEM;
		}
		/* handles of requests with n = 1: sample 0 */
		memset(b + rp->capsamp, 0,
		       (cap - rp->capsamp) * sizeof(*b));
		rp->samp = b;
		rp->capsamp = cap;
	}
	for (uint32_t i = 0; i < r->n; i++) {
		struct wl_request c = *r;

		c.n = 1;
		c.out_key = i == 0 ? r->out_key : wl_mix(r->out_key, i);
		rp->samp[h + i] = i;
		e = replica__add1(rp, &c, at, g, rejected, why, whylen);
		if (e != KV_OK) {
			/* the children not added never end */
			g->left -= r->n - i;
			if (g->left == 0)
				free(g);
			return e;
		}
	}
	return e;
}

int64_t
replica_admit_lb(const replica *rp, const struct wl_request *r)
{
	/* replica_add's at: its service in the FIFO starts at the arrival
	 * or later, and every later request's after it; a prompt the
	 * replica refuses takes no service, and bounds only by its
	 * arrival */
	if (replica__fe(rp) == NULL || r->prompt_tokens > rp->max_model_len)
		return r->arrival_ns;
	return r->arrival_ns + cost_frontend_in_ns(rp->cm, r->prompt_tokens);
}

kv_err
replica_add(replica *rp, const struct wl_request *r, bool *rejected,
	    char *why, size_t whylen)
{
	int64_t at = r->arrival_ns;

	*rejected = false;
	/* both engines' input processing refuse a prompt over
	 * max_model_len; kvs_add refuses one of exactly max_model_len where
	 * vLLM v1 does (replica__admit) */
	if (r->prompt_tokens > rp->max_model_len) {
		*rejected = true;
		rp->st.rejected++;
		return KV_OK;
	}
	/* the API server: request handling and tokenisation, in its FIFO
	 * (once for a parent and its children) */
	if (replica__fe(rp) != NULL)
		at = cost_fifo_serve(&rp->fe, r->arrival_ns,
				     cost_frontend_in_ns(rp->cm,
							 r->prompt_tokens));
	rp->admit_at = at;
	if (rp->fanout && r->n > 1)
		return replica__add_n(rp, r, at, rejected, why, whylen);
	return replica__add1(rp, r, at, NULL, rejected, why, whylen);
}

static kv_err
audit(replica *rp, const char *when, char *why, size_t whylen)
{
	char msg[512];
	int bad = kvs_audit(rp->s, msg, sizeof(msg));

	if (bad == 0)
		return KV_OK;
	snprintf(why, whylen, "--check: replica %u, %s: invariant %d: %s",
		 rp->index, when, bad, msg);
	return KV_ESTATE;
}

static uint64_t
frag_tokens(replica *rp, uint64_t *slots)
{
	return kvs_running_unused(rp->s, rp->block_size, slots);
}

/* Room for n scheduled requests in the step's scratch arrays. */
kv_err
replica__sched_reserve(replica *rp, uint32_t n)
{
	size_t cap = n * 2u;
	struct cat_mixer_seq *s2;
	kvs_req *r2;
	uint32_t *t2;

	if (n <= rp->capsched)
		return KV_OK;
	if ((s2 = realloc(rp->seq, cap * sizeof(*s2))) == NULL)
		return KV_ENOMEM;
	rp->seq = s2;
	if ((r2 = realloc(rp->sreq, cap * sizeof(*r2))) == NULL)
		return KV_ENOMEM;
	rp->sreq = r2;
	if ((t2 = realloc(rp->stok, cap * sizeof(*t2))) == NULL)
		return KV_ENOMEM;
	rp->stok = t2;
	if ((t2 = realloc(rp->start, cap * sizeof(*t2))) == NULL)
		return KV_ENOMEM;
	rp->start = t2;
	rp->capsched = cap;
	return KV_OK;
}

static uint64_t replica__off_tokens(const struct rq *q);

/* A batch entry as note_sched reads it: the request, the tokens it
 * computes, its context before them, the positions the step advances. */
struct sched_ent {
	struct rq *q;
	uint64_t n, ctx, per;
};

/* Entry i of the step's batch, at rp->seq[off + i]: the tokens it
 * computes and its context before them. */
static inline struct sched_ent
sched_entry(replica *rp, const kvc *k, const struct kvs_step *st,
	    uint32_t i, uint32_t off)
{
	kvs_req h = st->sched[i].req;
	struct sched_ent e;
	uint64_t comp = kvc_seq_computed(k, kvs_req_seq(rp->s, h));

	e.q = rp->byreq[h];
	/* cached tokens a policy schedules (vllm-v0) are not computed:
	 * they are context, as a prefix hit is */
	e.n = st->sched[i].ntokens - st->sched[i].cached;
	/* positions the step advances: a forked group's decode computes
	 * one of each of its sequences (R113) */
	e.per = e.q->nsamp > 1 && e.q->gen > 0 ? 1 : e.n;
	e.ctx = comp >= e.per ? comp - e.per : 0;
	e.q->gdec = e.per != e.n;
	rp->sreq[off + i] = h;
	rp->seq[off + i].q = e.n;
	rp->seq[off + i].ctx = e.ctx;
	/* the observer (validate) writes the stale cached tokens too, as a
	 * correct engine would: the hazard is counted, not turned into a
	 * data failure */
	rp->start[off + i] = (uint32_t)e.ctx - st->sched[i].stale;
	return e;
}

/* Entry i's first-scheduled and prefix-hit milestones, and the
 * recomputation and prompt work counted. */
static inline void
sched_entry_notes(replica *rp, const struct kvs_sched *se,
		  const struct sched_ent *e)
{
	struct rq *q = e->q;
	uint64_t sp = se->spec, end;

	if (!q->scheduled) {
		q->scheduled = true;
		q->first_sched = rp->sched_t;
		/* the GPU prefix hit: tokens loaded from the tiers are
		 * counted apart (offload_hit_tokens_*) */
		q->hit = (uint32_t)(e->ctx > replica__off_tokens(q) ?
				    e->ctx - replica__off_tokens(q) : 0);
		rp->st.prefix_hit_tokens += q->hit;
		rp->st.prompt_tokens_admitted += q->prompt;
	}
	/* Work on positions computed before (and dropped by a recompute
	 * preemption) is recomputation; positions the prefix cache
	 * restored are not computed at all. */
	rp->st.stale_cached_tokens += se->stale;
	/* draft positions are not kept unless accepted: not counted as
	 * computed for good (speculative decoding) */
	end = e->ctx + e->per - sp;
	if (q->high > e->ctx)
		q->recomputed += (end < q->high ? end : q->high) - e->ctx;
	if (end > q->high)
		q->high = (uint32_t)end;
	/* Prefill (first or recomputed) is prompt work. */
	if (q->gen == 0 || e->per - sp > 1)
		rp->st.prompt_tokens_done += e->n - sp;
}

/*
 * The step's batch for the cost model (tokens computed, context before
 * them), each request's first-scheduled and prefix-hit milestones, and
 * the recomputation and prompt work counted.
 */
static void
note_sched(replica *rp, const struct kvs_step *st)
{
	const kvc *k = kvs_kv(rp->s);

	rp->nsched = st->nsched;
	if (st->nsched > rp->st.max_batch)
		rp->st.max_batch = st->nsched;
	for (uint32_t i = 0; i < st->nsched; i++) {
		struct sched_ent e = sched_entry(rp, k, st, i, 0);

		sched_entry_notes(rp, &st->sched[i], &e);
	}
}

void
replica__sched_batch(replica *rp, const struct kvs_step *st, uint32_t off)
{
	const kvc *k = kvs_kv(rp->s);

	for (uint32_t i = 0; i < st->nsched; i++)
		(void)sched_entry(rp, k, st, i, off);
}

void
replica__sched_notes(replica *rp, const struct kvs_sched *sched,
		     const struct cat_mixer_seq *seq, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct sched_ent e = { rp->byreq[sched[i].req], seq[i].q,
				       seq[i].ctx, 0 };

		e.per = e.q->gdec ? 1 : e.n;
		sched_entry_notes(rp, &sched[i], &e);
	}
}

/* Preemptions, the blocks swapped out, and the step's copies. */
static void
note_preempt(replica *rp, const struct kvs_step *st)
{
	const kvc *k = kvs_kv(rp->s);

	for (uint32_t i = 0; i < st->npreempt; i++) {
		kvs_req h = st->preempt[i];

		rp->st.preemptions++;
		if (!st->preempt_swap[i])
			continue;
		/* every group's blocks (a sliding window's null entries move
		 * nothing) */
		for (uint32_t g = 0; g < kvc_ngroups(k); g++) {
			size_t nb = 0;
			const int32_t *t = kvc_table(k, kvs_req_seq(rp->s, h),
						     g, &nb);

			for (size_t j = 0; j < nb; j++)
				rp->byreq[h]->swapped_blocks +=
					t[j] != KVC_NULL;
		}
	}
	rp->st.swap_out_blocks += st->nswap_out;
	rp->st.swap_in_blocks += st->nswap_in;
	rp->st.cow_blocks += st->ncow;
}

/* ---- KV offload (sim/offload.h) ---- */

/* A transfer started: a load's tokens and time go to its request. */
static void
replica__off_note(void *ctx, const struct kvo_xfer *x, int64_t start,
		  int64_t done)
{
	replica *rp = ctx;
	struct rq *q;

	if (x->dir != KVO_LOAD || (size_t)x->req >= rp->nbyreq ||
	    (q = rp->byreq[x->req]) == NULL)
		return;
	q->off_hit[x->tier] += x->ntokens;
	q->off_load_ns += done - start;
}

/* The transfers the scheduler's last half step started, timed from now;
 * seen done no earlier than `seen` (the end of the step starting them). */
static kv_err
replica__off_collect(replica *rp, int64_t now, int64_t seen, char *why,
		     size_t whylen)
{
	if (rp->off == NULL)
		return KV_OK;
	return sim_offload_collect(rp->off, now, seen, rp->index, rp->obs,
				   replica__off_note, rp, why, whylen);
}

/* Complete the transfers due by t (the step being chosen sees them). */
static kv_err
replica__off_due(replica *rp, int64_t t, int64_t now, char *why,
		 size_t whylen)
{
	uint32_t n = 0;
	kv_err e;

	if (rp->off == NULL)
		return KV_OK;
	e = sim_offload_complete(rp->off, t, &n, why, whylen);
	if (e != KV_OK)
		return e;
	if (n > 0)	/* held blocks freed: the usage level moved */
		usage_mark(rp, now);
	return KV_OK;
}

/* Prompt tokens the request loaded from the tiers. */
static uint64_t
replica__off_tokens(const struct rq *q)
{
	uint64_t n = 0;

	for (uint32_t t = 0; t < KVO_MAX_TIERS; t++)
		n += q->off_hit[t];
	return n;
}

const sim_offload *
replica_offload(const replica *rp)
{
	return rp->off;
}

int64_t
replica_offload_wake(replica *rp, int64_t now)
{
	int64_t t = rp->off != NULL ? sim_offload_next(rp->off) : -1;

	/* a wake told before for a time still to come is pending; one for
	 * now may have been taken already (a transfer started at this
	 * instant ends in it): told again */
	if (t < 0 || (t == rp->off_armed && t > now))
		return -1;
	rp->off_armed = t;
	return t;
}

/*
 * Nothing runnable: close the step and idle until the next arrival or
 * finish.  (A step that only preempted -- FastGen's reset -- changed the
 * queues: it is timed like any other and the next one follows.)
 */
static void ignored(replica *rp, kvs_req h);

static kv_err
idle_step(replica *rp, const struct kvs_step *st, int64_t now, char *why,
	  size_t whylen)
{
	kv_err e;

	rp->nsched = 0;
	if (rp->obs != NULL && rp->obs->computed != NULL &&
	    rp->obs->computed(rp->obs->ctx, rp->index, rp->s, st, rp->start,
			      now, why, whylen) != 0)
		return KV_ESTATE;
	e = kvs_complete(rp->s, NULL, &st);
	if (e != KV_OK) {
		snprintf(why, whylen, "replica %u: complete: %s", rp->index,
			 kvs_errmsg(rp->s));
		return e;
	}
	if ((e = replica__off_collect(rp, now, now, why, whylen)) != KV_OK)
		return e;
	if (rp->obs != NULL && rp->obs->completed != NULL &&
	    rp->obs->completed(rp->obs->ctx, rp->index, rp->s, st, now, why,
			       whylen) != 0)
		return KV_ESTATE;
	for (uint32_t i = 0; i < st->nignored; i++)
		ignored(rp, st->ignored[i]);
	usage_mark(rp, now);
	return KV_OK;
}

/*
 * The step's duration: the batch's time and its copies', at least 1 ns;
 * *cpu the part of it that is the cost model's CPU time (cost_breakdown
 * cpu_ns; 0 with a constant step time), the rest runs on the GPU.
 */
/*
 * The batch the cost model sees.  A forked group's decode (R113) is n
 * sequences of one token at one position, each reading its own block
 * table as v0's paged attention does: one entry a sequence.  Out of
 * memory: the step's entries as they are.
 */
static struct cost_batch
fork_batch(replica *rp, uint32_t nsched)
{
	struct cost_batch b = { rp->seq, nsched };
	size_t n = 0, k = 0;

	for (uint32_t i = 0; i < nsched; i++)
		n += rp->byreq[rp->sreq[i]]->gdec ? rp->seq[i].q : 1;
	if (n == nsched)
		return b;
	if (n > rp->capfseq) {
		struct cat_mixer_seq *f = realloc(rp->fseq, n * sizeof(*f));

		if (f == NULL)
			return b;
		rp->fseq = f;
		rp->capfseq = n;
	}
	for (uint32_t i = 0; i < nsched; i++) {
		bool g = rp->byreq[rp->sreq[i]]->gdec;

		for (uint64_t j = 0; j < (g ? rp->seq[i].q : 1); j++) {
			rp->fseq[k] = rp->seq[i];
			if (g)
				rp->fseq[k].q = 1;
			k++;
		}
	}
	b.seq = rp->fseq;
	b.nseq = n;
	return b;
}

int64_t
replica__step_time(replica *rp, const struct kvs_step *st, int64_t *cpu)
{
	return replica__batch_time(rp, rp->seq, st, cpu);
}

int64_t
replica__batch_time(replica *rp, const struct cat_mixer_seq *seq,
		    const struct kvs_step *st, int64_t *cpu)
{
	struct cost_batch b = rp->fork ? fork_batch(rp, st->nsched) :
	    (struct cost_batch){ seq, st->nsched };
	struct cost_breakdown bd;
	const struct cost_breakdown *part = &bd;	/* its CPU term */
	int64_t dt = -1, so, si;
	uint64_t ctx = 0;
	uint32_t n;

	*cpu = 0;
	if (rp->step_ns > 0)
		return rp->step_ns;
	so = cost_swap_ns(rp->cm, COST_D2H, st->nswap_out, rp->cm->layout);
	si = cost_swap_ns(rp->cm, COST_H2D, st->nswap_in, rp->cm->layout);
	/* a batch of decodes alone: the time from the contexts' sum, to
	 * the bit cost_step_explain's (cost_step_decode_memo, with n's memo
	 * that the fast-forward keeps), where the model allows */
	n = rp->fork || st->nsched == 0 || seq[st->nsched - 1].q != 1 ?
	    0 : st->nsched;	/* (vllm-v1 schedules a prompt's chunk last) */
	for (uint32_t i = 0; i < n; i++) {
		if (seq[i].q != 1) {
			n = 0;
			break;
		}
		ctx += seq[i].ctx;
	}
	if (n > 0) {
		struct cost_decode_memo *m = &rp->ffmemo[n % FF_MEMOS];

		if ((dt = cost_step_decode_memo(rp->cm, m, n, ctx, NULL)) >= 0)
			part = &m->bd;
	}
	if (dt < 0)
		dt = cost_step_explain(rp->cm, &b, &bd);
	dt += cost_spec_draft_ns(rp->spec_cost, seq, st->nsched);
	dt += so > 0 ? so : 0;
	dt += si > 0 ? si : 0;
	if (st->ncow > 0 && rp->cm->hbm_bw > 0)
		/* A device-to-device copy reads and writes each block
		 * once. */
		dt += (int64_t)(2.0 * (double)st->ncow *
				(double)rp->cm->block_bytes /
				rp->cm->hbm_bw * 1e9);
	return replica__step_tail(dt, part, cpu);
}

int64_t
replica__sums_time(replica *rp, uint32_t n, uint64_t ctx,
		   const struct cat_mixer_seq *seq, uint32_t ns, int64_t *cpu)
{
	struct cost_breakdown bd;
	int64_t dt;

	*cpu = 0;
	if (rp->step_ns > 0)
		return rp->step_ns;
	if (rp->fork || rp->spec_cost != NULL ||
	    (dt = cost_step_decodes_and(rp->cm, n, ctx, seq, ns, &bd)) < 0)
		return -1;
	return replica__step_tail(dt, &bd, cpu);
}

int64_t
replica__decode_time(replica *rp, struct cost_decode_memo *m, uint32_t n,
		     uint64_t ctx_sum, int64_t *cpu)
{
	int64_t dt;

	*cpu = 0;
	if (rp->step_ns > 0)
		return rp->step_ns;
	if (rp->fork || rp->spec_cost != NULL ||
	    (dt = cost_step_decode_memo(rp->cm, m, n, ctx_sum, NULL)) < 0)
		return -1;
	return replica__step_tail(dt, &m->bd, cpu);	/* its CPU term: n's */
}

/*
 * LoRA's part of a step (docs/lora.md): the loads of the adapters it
 * runs that are not in a GPU slot, and the shrink/expand GEMMs of its
 * LoRA tokens (with the cost model only).
 */
static int64_t
replica__lora_ns(replica *rp, const struct kvs_step *st)
{
	const struct sim_lora_setup *su = rp->lc.su;
	uint32_t n = 0;
	uint64_t tokens = 0;
	int64_t dt;

	for (uint32_t i = 0; i < st->nsched; i++) {
		uint32_t a = kvs_req_lora(rp->s, st->sched[i].req), j;

		if (a == 0)
			continue;
		tokens += st->sched[i].ntokens;
		for (j = 0; j < n && rp->lids[j] != a; j++)
			;
		if (j == n && n < su->max_loras)
			rp->lids[n++] = a;
	}
	dt = sim_lora_cache_step(&rp->lc, rp->lids, n);
	if (rp->step_ns <= 0)
		dt += cost_lora_ns(rp->cm, tokens, n, su->flops_token,
				   su->bytes);
	rp->st.lora_loads = rp->lc.loads;
	rp->st.lora_disk_loads = rp->lc.disk_loads;
	rp->st.lora_load_ns = rp->lc.load_ns;
	return dt;
}

/* The per-step metrics of a step that runs: fragmentation, usage, trace. */
static void
note_step(replica *rp, const struct kvs_step *st, int64_t now, int64_t dt)
{
	uint64_t slots = 0, frag = frag_tokens(rp, &slots);

	rp->st.busy_ns += dt;
	if (slots > 0) {
		rp->st.frag_sum += (double)frag / (double)slots;
		rp->st.frag_steps++;
	}
	rp->st.steps++;
	usage_mark(rp, now);
	if (rp->ct != NULL) {
		struct ctrace_step cs = {
			.number = st->number, .nsched = st->nsched,
			.tokens = st->batch_tokens, .npreempt = st->npreempt,
			.nswap_out = st->nswap_out, .nswap_in = st->nswap_in,
			.ncow = st->ncow,
		};

		ctrace_step(rp->ct, rp->index, now, dt, &cs);
	}
}

/*
 * Async scheduling: when the step about to be chosen was chosen -- right
 * after the step before it was launched, when that one ended at now with
 * this one chosen behind it, else now -- and the requests that had
 * arrived by then, handed to the scheduler.  When the scheduler has
 * nothing then, vLLM waits for the step in flight and chooses at now.
 */
static kv_err
replica__async_choose(replica *rp, int64_t now, char *why, size_t whylen)
{
	kv_err e;

	rp->sched_t = rp->piped && rp->pipe_t == now ? rp->next_s : now;
	rp->piped = false;
	if ((e = replica__admit_due(rp, rp->sched_t, why, whylen)) != KV_OK)
		return e;
	if (kvs_nunfinished(rp->s) == 0 && rp->sched_t < now) {
		rp->sched_t = now;
		return replica__admit_due(rp, now, why, whylen);
	}
	return KV_OK;
}

/*
 * The first half of a step: the scheduler's batch, checked, and the
 * replica's notes of it (batch, milestones, preemptions).
 */
static kv_err
replica__schedule(replica *rp, const struct kvs_step **st, char *why,
		  size_t whylen)
{
	kv_err e;

	if ((e = kvs_schedule(rp->s, st)) != KV_OK) {
		snprintf(why, whylen, "replica %u: schedule: %s", rp->index,
			 kvs_errmsg(rp->s));
		return e;
	}
	if (rp->check && (e = audit(rp, "after schedule", why, whylen)) !=
	    KV_OK)
		return e;
	if ((*st)->nsched > rp->capsched &&
	    replica__sched_reserve(rp, (*st)->nsched) != KV_OK) {
		snprintf(why, whylen, "out of memory");
		return KV_ENOMEM;
	}
	note_sched(rp, *st);
	note_preempt(rp, *st);
	return KV_OK;
}

static kv_err replica__spec_complete(replica *rp,
				     const struct kvs_step **out);

/* The second half: the scheduled requests' output tokens applied. */
static kv_err
replica__complete(replica *rp, const struct kvs_step **st, char *why,
		  size_t whylen)
{
	kv_err e;

	if (rp->spec != NULL) {
		e = replica__spec_complete(rp, st);
	} else {
		for (uint32_t i = 0; i < rp->nsched; i++) {
			const struct rq *q = rp->byreq[rp->sreq[i]];

			/* wl_output_tokens' token of sample 0, without its
			 * call (a keyed request's are only counted) */
			rp->stok[i] = q->keyed ? 0 :
				      wl_token(q->out_key, q->gen, rp->vocab);
		}
		e = kvs_complete(rp->s, rp->stok, st);
	}
	if (e != KV_OK)
		snprintf(why, whylen, "replica %u: complete: %s", rp->index,
			 e == KV_ENOMEM ? "out of memory" : kvs_errmsg(rp->s));
	return e;
}

/*
 * Pipeline parallel's batches in flight (docs/scheduler.md R122): vLLM's
 * batch queue of P batches (max_concurrent_batches) with policy
 * vllm-v1.  A run with an observer, KV offload, a P/D pool, speculative
 * decoding or LoRA runs one batch at a time.  Async scheduling's one step
 * ahead gives way to the queue (vLLM 0.15.1 runs the same queue with it,
 * PR #32359).
 */
static kv_err
replica__pp_open(replica *rp, const struct replica_cfg *cfg)
{
	uint32_t p = cfg->cm != NULL ? cfg->cm->pp : 1;

	if (p < 2 || strcmp(kvs_policy_name(rp->s), "vllm-v1") != 0 ||
	    cfg->obs != NULL || cfg->offload != NULL || cfg->rowh != NULL ||
	    cfg->spec != NULL || cfg->lora != NULL)
		return KV_OK;
	rp->async = false;
	rp->pp = rpp_new(p);
	return rp->pp != NULL ? KV_OK : KV_ENOMEM;
}

/*
 * A batch enters the pipeline at now: the scheduler completes it at
 * once (its tokens are the workload's, known in advance), each request
 * that gained a token is in flight until the batch returns, and what the
 * report sees of it waits in the queue for that return.
 */
static kv_err
replica__pp_launch(replica *rp, const struct kvs_step *st, int64_t now,
		   char *why, size_t whylen)
{
	const struct kvs_step *done;
	struct rpp_batch *b;
	int64_t cpu, dt = replica__step_time(rp, st, &cpu);
	kv_err e;

	if (rp->lora_on)
		dt += replica__lora_ns(rp, st);
	note_step(rp, st, now, rpp_stage_ns(rp->pp, dt, 0));
	b = rpp_push(rp->pp, rpp_time(rp->pp, now, dt));
	if ((e = replica__complete(rp, &done, why, whylen)) != KV_OK)
		return e;
	if (rp->check && (e = audit(rp, "after complete", why, whylen)) !=
	    KV_OK)
		return e;
	for (uint32_t i = 0; i < done->nfinish; i++)
		if (rpp_add(&b->fin, &b->nfin, &b->capfin, done->finish[i]) !=
		    KV_OK)
			goto oom;
	for (uint32_t i = 0; i < done->nignored; i++)
		ignored(rp, done->ignored[i]);
	for (uint32_t i = 0; i < rp->nsched; i++) {
		kvs_req h = rp->sreq[i];

		if (kvs_req_generated(rp->s, h) <= rp->byreq[h]->gen)
			continue;	/* a prompt chunk before the last */
		if (rpp_add(&b->req, &b->nreq, &b->capreq, h) != KV_OK)
			goto oom;
		if (kvs_req_status(rp->s, h) == KVS_RUNNING &&
		    kvs_set_inflight(rp->s, h, true) != KV_OK) {
			snprintf(why, whylen, "replica %u: %s", rp->index,
				 kvs_errmsg(rp->s));
			return KV_ESTATE;
		}
	}
	usage_mark(rp, now);
	return KV_OK;
oom:
	snprintf(why, whylen, "out of memory");
	return KV_ENOMEM;
}

/*
 * The pipelined replica's step, as vLLM's step_with_batch_queue: new
 * batches while fewer than P are in flight and the scheduler finds work
 * (each waits for the first stage to free), then a wait for the oldest
 * batch to return (vLLM blocks on it when the queue is full or nothing
 * more was scheduled).
 */
static kv_err
replica__pp_begin(replica *rp, int64_t now, int64_t *dt_ns, bool *started,
		  char *why, size_t whylen)
{
	const struct kvs_step *st;
	bool added = true;
	int64_t wake;
	kv_err e;

	if ((e = replica__admit_due(rp, now, why, whylen)) != KV_OK)
		return e;
	while (added && !rpp_full(rp->pp) && kvs_nunfinished(rp->s) > 0) {
		if ((e = replica__schedule(rp, &st, why, whylen)) != KV_OK)
			return e;
		added = st->nsched > 0 || st->nswap_out > 0 ||
			st->nswap_in > 0 || st->npreempt > 0;
		e = added ? replica__pp_launch(rp, st, now, why, whylen)
			  : idle_step(rp, st, now, why, whylen);
		if (e != KV_OK)
			return e;
	}
	if ((wake = rpp_wake(rp->pp)) == INT64_MAX)
		return KV_OK;
	assert(wake > now);
	rp->busy = true;
	*dt_ns = wake - now;
	*started = true;
	return KV_OK;
}

static kv_err abort_now(replica *rp, kvs_req h, rpt *rep, char *why,
			size_t whylen);

/*
 * The end of a pipelined replica's step: every batch back by now gives
 * its tokens and finished requests to the report at its return, and its
 * requests can be scheduled again; clients that left meanwhile are
 * aborted (one whose request finished in a batch still in flight gets
 * its failed row when that batch returns).
 */
static kv_err
replica__pp_end(replica *rp, int64_t now, rpt *rep, char *why,
		size_t whylen)
{
	struct rpp_batch *b;
	kv_err e;

	rp->busy = false;
	while ((b = rpp_oldest(rp->pp)) != NULL && b->ret <= now) {
		for (uint32_t i = 0; i < b->nreq; i++)
			(void)kvs_set_inflight(rp->s, b->req[i], false);
		if ((e = replica__note_tokens(rp, b->req, b->nreq, b->ret,
					      rep, why, whylen)) != KV_OK)
			return e;
		for (uint32_t i = 0; i < b->nfin; i++)
			if (rp->byreq[b->fin[i]] != NULL &&
			    (e = replica__finish(rp, b->fin[i], b->ret, rep,
						 why, whylen)) != KV_OK)
				return e;
		rpp_pop(rp->pp);
	}
	for (size_t i = 0; i < rp->nabort; i++) {
		kvs_req h = rp->abort[i];

		if (rp->byreq[h] != NULL &&
		    kvs_req_status(rp->s, h) != KVS_FINISHED &&
		    (e = abort_now(rp, h, rep, why, whylen)) != KV_OK)
			return e;
	}
	rp->nabort = 0;
	usage_mark(rp, now);
	return KV_OK;
}

kv_err
replica_begin(replica *rp, int64_t now, int64_t *dt_ns, bool *started,
	      char *why, size_t whylen)
{
	const struct kvs_step *st;
	int64_t dt, cpu;
	kv_err e;

	*dt_ns = 0;
	*started = false;
	assert(!rp->busy);
	rp->sched_t = now;
	if (rp->pp != NULL)
		return replica__pp_begin(rp, now, dt_ns, started, why, whylen);
	if (rp->async && (e = replica__async_choose(rp, now, why, whylen)) !=
	    KV_OK)
		return e;
	if (!rp->async && (e = replica__admit_due(rp, now, why, whylen)) !=
	    KV_OK)
		return e;
	if ((e = replica__off_due(rp, rp->sched_t, now, why, whylen)) !=
	    KV_OK)
		return e;
	if (kvs_nunfinished(rp->s) == 0)
		return KV_OK;
	if ((e = replica__schedule(rp, &st, why, whylen)) != KV_OK)
		return e;
	if (rp->obs != NULL && rp->obs->scheduled != NULL &&
	    rp->obs->scheduled(rp->obs->ctx, rp->index, rp->s, st, rp->start,
			       now, why, whylen) != 0)
		return KV_ESTATE;
	if (st->nsched == 0 && st->nswap_out == 0 && st->nswap_in == 0 &&
	    st->npreempt == 0) {
		e = idle_step(rp, st, now, why, whylen);
		/* async: requests held back for a later step can run now
		 * (those still in the API server wake the replica later) */
		if (e == KV_OK && rp->async && rp->phead < rp->npend &&
		    rp->pend[rp->phead].at <= now)
			return replica_begin(rp, now, dt_ns, started, why,
					     whylen);
		return e;
	}
	dt = replica__step_time(rp, st, &cpu);
	if (rp->lora_on)
		dt += replica__lora_ns(rp, st);
	if (rp->async)
		dt = replica__async_dt(rp, now, dt, cpu);
	/* the step's loads are reported in its output, at its end */
	if ((e = replica__off_collect(rp, now, now + dt, why, whylen)) !=
	    KV_OK)
		return e;
	note_step(rp, st, now, dt);
	rp->busy = true;
	*dt_ns = dt;
	*started = true;
	return KV_OK;
}

/*
 * The tokens a step generated, its requests req[0..n): first-token and
 * inter-token times (a request that ended since is skipped).
 */
void
replica__gain(replica *rp, struct rq *q, uint32_t g, int64_t now, rpt *rep)
{
	/* the token reaches its client through the API server */
	int64_t cl = replica__fe(rp) != NULL ? cost_fifo_serve(&rp->fe, now,
			cost_frontend_out_ns(rp->cm)) : now;

	if (q->gen == 0) {
		q->first_tok = now;
		q->cl_first = cl;
	} else {
		int64_t gap = cl - q->cl_last;

		q->itl_sum += gap;
		if (gap > q->itl_max)
			q->itl_max = gap;
		rpt_add_itl(rep, gap);
	}
	rp->st.gen_tokens_done += (uint64_t)(g - q->gen) * q->nsamp;
	q->gen = g;
	q->last_tok = now;
	q->cl_last = cl;
}

kv_err
replica__note_tokens(replica *rp, const kvs_req *req, uint32_t n,
		     int64_t now, rpt *rep, char *why, size_t whylen)
{
	for (uint32_t i = 0; i < n; i++) {
		kvs_req h = req[i];
		struct rq *q = rp->byreq[h];
		uint32_t g;
		/* one token a step, or the accepted drafts and one */
		uint32_t most = rp->spec != NULL ? rp->specacc[i] + 1 : 1;

		if (q == NULL || (g = kvs_req_generated(rp->s, h)) <= q->gen)
			continue;
		if (rp->check && g - q->gen > most) {
			snprintf(why, whylen, "--check: replica %u: request "
				 "%llu gained %u tokens in one step",
				 rp->index, (unsigned long long)q->id,
				 g - q->gen);
			return KV_ESTATE;
		}
		replica__gain(rp, q, g, now, rep);
	}
	return KV_OK;
}

/* The tokens the step just completed generated. */
static kv_err
note_tokens(replica *rp, int64_t now, rpt *rep, char *why, size_t whylen)
{
	return replica__note_tokens(rp, rp->sreq, rp->nsched, now, rep, why,
			      whylen);
}

/* A request the client will see end at t (t is never before the last). */
static kv_err
replica__cend_push(replica *rp, int64_t t)
{
	if (rp->hcend == rp->ncend)
		rp->hcend = rp->ncend = 0;
	/* ends already seen leave room at the front: when they are half of
	 * it, the rest moves down (a busy run never drains them all) */
	if (rp->hcend > 0 && rp->ncend == rp->capcend &&
	    rp->hcend >= rp->capcend / 2) {
		memmove(rp->cend, rp->cend + rp->hcend,
			(rp->ncend - rp->hcend) * sizeof(*rp->cend));
		rp->ncend -= rp->hcend;
		rp->hcend = 0;
	}
	if (rp->ncend == rp->capcend) {
		size_t cap = rp->capcend ? rp->capcend * 2 : 64;
		int64_t *b = realloc(rp->cend, cap * sizeof(*b));

		if (b == NULL)
			return KV_ENOMEM;
		rp->cend = b;
		rp->capcend = cap;
	}
	rp->cend[rp->ncend++] = t;
	return KV_OK;
}

int64_t
replica_client_ends(replica *rp, int64_t now)
{
	while (rp->hcend < rp->ncend && rp->cend[rp->hcend] <= now) {
		rp->hcend++;
		rp->st.ends++;
	}
	if (rp->hcend == rp->ncend || rp->cend[rp->hcend] == rp->cend_armed)
		return -1;	/* nothing to come, or already told */
	rp->cend_armed = rp->cend[rp->hcend];
	return rp->cend_armed;
}

/* The client sees a request end when its last token reaches it, at t. */
static kv_err
replica__client_end(replica *rp, int64_t t, int64_t now)
{
	if (t > now)
		return replica__cend_push(rp, t);
	rp->st.ends++;
	return KV_OK;
}

/*
 * Child h of a fanned-out request ended with row out: merged into its
 * group's row, which goes to the report with the last child.
 */
static kv_err
replica__finish_child(replica *rp, kvs_req h, struct rpt_req *out,
		      int64_t now, rpt *rep, char *why, size_t whylen)
{
	struct rq *q = rp->byreq[h];
	struct rnsamp_group *g = q->grp;
	int rc;

	rnsamp_merge(g, out);
	rp->byreq[h] = NULL;
	rq_put(rp, q);
	if (--g->left > 0)
		return KV_OK;
	*out = g->row;
	out->samples = g->nrows;
	free(g);
	if (!out->failed && replica__client_end(rp, out->finish_ns, now) !=
	    KV_OK) {
		snprintf(why, whylen, "out of memory");
		return KV_ENOMEM;
	}
	rc = rpt_add_request(rep, out);
	if (rp->ct != NULL && !out->failed)
		ctrace_request(rp->ct, out);
	if (rc != 0) {
		snprintf(why, whylen, "writing requests.csv failed");
		return KV_ENOMEM;
	}
	return KV_OK;
}

/* A request failed at finish() whose TIMEOUT is still to come. */
static kv_err
late_push(replica *rp, kvs_req h)
{
	if (rp->nlate == rp->caplate) {
		size_t cap = rp->caplate ? rp->caplate * 2 : 16;
		kvs_req *a = realloc(rp->late, cap * sizeof(*a));

		if (a == NULL)
			return KV_ENOMEM;
		rp->late = a;
		rp->caplate = cap;
	}
	rp->late[rp->nlate++] = h;
	return KV_OK;
}

/* h's TIMEOUT came: true when h was in late (and is no longer). */
static bool
late_pop(replica *rp, kvs_req h)
{
	for (size_t i = 0; i < rp->nlate; i++)
		if (rp->late[i] == h) {
			rp->late[i] = rp->late[--rp->nlate];
			return true;
		}
	return false;
}

void
replica_set_client_timeout(replica *rp, int64_t timeout_ns)
{
	rp->client_tmo = timeout_ns > 0 ? timeout_ns : 0;
}

/* A finished request's row for the report (and the trace); its record
 * goes back to the free list. */
kv_err
replica__finish(replica *rp, kvs_req h, int64_t now, rpt *rep, char *why,
		size_t whylen)
{
	struct rq *q = rp->byreq[h];
	struct rpt_req out;
	bool drop = false;
	int rc;

	memset(&out, 0, sizeof(out));
	out.id = q->id;
	out.replica = rp->index;
	out.arrival_ns = q->arrival;
	out.first_scheduled_ns = q->first_sched;
	out.first_token_ns = q->cl_first;
	/* the client has the request when its last token reaches it */
	out.finish_ns = q->gen > 0 && q->last_tok == now ? q->cl_last : now;
	out.frontend_in_ns = q->admit - q->arrival;
	out.frontend_out_ns = out.finish_ns - now;
	out.input_tokens = q->prompt;
	out.output_tokens = q->gen * q->nsamp;
	out.cached_prefix_tokens = q->hit;
	out.preemptions = kvs_req_preemptions(rp->s, h);
	out.recomputed_tokens = q->recomputed;
	out.swapped_out_blocks = q->swapped_blocks;
	out.swapped_out_bytes = rp->cm ? q->swapped_blocks *
				rp->cm->block_bytes : 0;
	out.itl_sum_ns = q->itl_sum * q->nsamp;
	out.itl_max_ns = q->itl_max;
	if (q->nsamp > 1)	/* a forked group: its sequences' tokens */
		out.samples = q->nsamp;
	out.stage = q->stage;
	memcpy(out.offload_hit_tokens, q->off_hit, sizeof(q->off_hit));
	out.offload_load_ns = q->off_load_ns;
	out.lora = q->lora;

	out.spec_draft_tokens = q->spec_drafts;
	out.spec_accepted_tokens = q->spec_accepted;
	if (!q->failed && q->grp == NULL && rp->client_tmo > 0 &&
	    out.finish_ns > q->arrival + rp->client_tmo) {
		/* the end reaches a client already gone: its TIMEOUT, still
		 * to come, finds it in late (replica__fail1) */
		if (late_push(rp, h) != KV_OK) {
			snprintf(why, whylen, "out of memory");
			return KV_ENOMEM;
		}
		q->failed = true;
		q->fail_ns = q->arrival + rp->client_tmo;
		out.frontend_out_ns = q->fail_ns - now;
		if (q->cl_first > q->fail_ns)
			out.first_token_ns = -1;	/* none reached it */
	}
	if (q->failed) {
		/* the client left before the end: no token after fail_ns
		 * counts */
		out.failed = true;
		out.finish_ns = q->fail_ns;
		if (!q->scheduled)
			out.first_scheduled_ns = -1;
		if (q->gen == 0)
			out.first_token_ns = -1;
		rp->st.failed++;
	} else {
		rp->st.finished++;
	}
	if (q->gen < q->output && !q->failed)
		rp->st.truncated++;
	rp->st.recomputed_tokens += out.recomputed_tokens;
	rp->outstanding -= (uint64_t)q->prompt + q->output;
	if (q->grp != NULL)
		return replica__finish_child(rp, h, &out, now, rep, why,
					     whylen);
	if (!out.failed && replica__client_end(rp, out.finish_ns, now) !=
	    KV_OK) {
		snprintf(why, whylen, "out of memory");
		return KV_ENOMEM;
	}
	if (rp->rowh != NULL && !out.failed &&
	    rp->rowh->row(rp->rowh->ctx, rp->index, h, &out, &drop, why,
			  whylen) != KV_OK) {
		rp->byreq[h] = NULL;
		rq_put(rp, q);
		return KV_ESTATE;
	}
	rc = drop ? 0 : rpt_add_request(rep, &out);
	if (rp->ct != NULL && !out.failed && !drop)
		ctrace_request(rp->ct, &out);
	rp->byreq[h] = NULL;
	rq_put(rp, q);
	if (rc != 0) {
		snprintf(why, whylen, "writing requests.csv failed");
		return KV_ENOMEM;
	}
	return KV_OK;
}

/* replica__finish of each request step st finished, in its order. */
static kv_err
replica__finish_step(replica *rp, const struct kvs_step *st, int64_t now,
		     rpt *rep, char *why, size_t whylen)
{
	kv_err e;

	for (uint32_t i = 0; i < st->nfinish; i++)
		if ((e = replica__finish(rp, st->finish[i], now, rep, why,
					 whylen)) != KV_OK)
			return e;
	return KV_OK;
}

/* A request the scheduler dropped without running it (vLLM v0's
 * FINISHED_IGNORED): counted with the rejected ones, no row. */
static void
ignored(replica *rp, kvs_req h)
{
	struct rq *q = rp->byreq[h];

	rp->st.added--;
	rp->st.keyed -= q->keyed;
	/* a fanned-out request: once, with its last child (the children
	 * share the prompt, the scheduler drops all or none) */
	if (q->grp == NULL || rnsamp_put(q->grp)) {
		rp->st.rejected++;
		if (!q->failed)
			rp->st.ends++;
	}
	rp->outstanding -= (uint64_t)q->prompt + q->output;
	rp->byreq[h] = NULL;
	rq_put(rp, q);
}

/* Abort request h (its client left): blocks freed, a failed row. */
static kv_err
abort_now(replica *rp, kvs_req h, rpt *rep, char *why, size_t whylen)
{
	struct rq *q = rp->byreq[h];

	if (kvs_abort(rp->s, h) != KV_OK) {
		snprintf(why, whylen, "replica %u: abort of request %llu: %s",
			 rp->index, (unsigned long long)q->id,
			 kvs_errmsg(rp->s));
		return KV_ESTATE;
	}
	return replica__finish(rp, h, q->fail_ns, rep, why, whylen);
}

/* Room for n entries in a speculative scratch array. */
static kv_err
replica__spec_room(uint32_t **a, size_t *cap, size_t n)
{
	uint32_t *b;

	if (n <= *cap)
		return KV_OK;
	if ((b = realloc(*a, n * 2 * sizeof(*b))) == NULL)
		return KV_ENOMEM;
	*a = b;
	*cap = n * 2;
	return KV_OK;
}

/*
 * kvs_complete_spec for a step with drafts: each entry's verified tokens
 * (the workload's own ids, from its output so far) and the drafts the
 * verifier accepts (sim_spec_accept).
 */
static kv_err
replica__spec_complete(replica *rp, const struct kvs_step **out)
{
	const struct kvs_step *cur = kvs_current_step(rp->s);
	size_t ntok = 0, at = 0;

	for (uint32_t i = 0; i < rp->nsched; i++)
		ntok += cur->sched[i].spec + 1u;
	if (replica__spec_room(&rp->spectok, &rp->capspectok, ntok) != KV_OK ||
	    replica__spec_room(&rp->specacc, &rp->capspecacc, rp->nsched + 1u)
	    != KV_OK)
		return KV_ENOMEM;
	for (uint32_t i = 0; i < rp->nsched; i++) {
		struct rq *q = rp->byreq[rp->sreq[i]];
		uint32_t sp = cur->sched[i].spec;

		for (uint32_t j = 0; j <= sp; j++)
			rp->spectok[at++] = wl_token(q->out_key, q->gen + j,
						     rp->vocab);
		rp->specacc[i] = sim_spec_accept(rp->spec, q->id, q->gen, sp);
		if (sp == 0)
			continue;
		q->spec_drafts += sp;
		q->spec_accepted += rp->specacc[i];
		rp->st.spec_drafts += sp;
		rp->st.spec_accepted += rp->specacc[i];
		rp->st.spec_verifies++;
	}
	return kvs_complete_spec(rp->s, rp->spectok, rp->specacc, out);
}

/* The drafter's proposals for the requests that sampled a token. */
static kv_err
replica__spec_propose(replica *rp, char *why, size_t whylen)
{
	for (uint32_t i = 0; i < rp->nsched; i++) {
		kvs_req h = rp->sreq[i];
		const struct rq *q = rp->byreq[h];
		uint32_t g = kvs_req_generated(rp->s, h), n;

		if (q == NULL || g <= q->gen ||
		    kvs_req_status(rp->s, h) != KVS_RUNNING)
			continue;
		if ((n = sim_spec_propose(rp->spec, q->id, g)) > 0 &&
		    kvs_propose(rp->s, h, n) != KV_OK) {
			snprintf(why, whylen, "replica %u: propose: %s",
				 rp->index, kvs_errmsg(rp->s));
			return KV_ESTATE;
		}
	}
	return KV_OK;
}

kv_err
replica_end(replica *rp, int64_t now, rpt *rep, char *why, size_t whylen)
{
	const struct kvs_step *st;
	kv_err e;

	assert(rp->busy);
	if (rp->pp != NULL)
		return replica__pp_end(rp, now, rep, why, whylen);
	rp->busy = false;
	if (rp->ffw.on) {	/* a span's tail (replica_ff) */
		if ((e = replica__ff_end(rp, now, rep, why, whylen)) != KV_OK)
			return e;
		goto aborts;
	}
	if (rp->obs != NULL && rp->obs->computed != NULL &&
	    rp->obs->computed(rp->obs->ctx, rp->index, rp->s,
			      kvs_current_step(rp->s), rp->start, now, why,
			      whylen) != 0)
		return KV_ESTATE;
	if ((e = replica__complete(rp, &st, why, whylen)) != KV_OK)
		return e;
	if ((e = replica__off_collect(rp, now, now, why, whylen)) != KV_OK)
		return e;
	if (rp->spec != NULL &&
	    (e = replica__spec_propose(rp, why, whylen)) != KV_OK)
		return e;
	if (rp->check && (e = audit(rp, "after complete", why, whylen)) !=
	    KV_OK)
		return e;
	if (rp->obs != NULL && rp->obs->completed != NULL &&
	    rp->obs->completed(rp->obs->ctx, rp->index, rp->s, st, now, why,
			       whylen) != 0)
		return KV_ESTATE;
	if ((e = note_tokens(rp, now, rep, why, whylen)) != KV_OK)
		return e;
	if ((e = replica__finish_step(rp, st, now, rep, why, whylen)) !=
	    KV_OK)
		return e;
	for (uint32_t i = 0; i < st->nignored; i++)
		ignored(rp, st->ignored[i]);
aborts:
	/* requests whose client left during the step, unfinished at its
	 * end: aborted now, between steps, as vLLM aborts them */
	for (size_t i = 0; i < rp->nabort; i++)
		if (rp->byreq[rp->abort[i]] != NULL &&
		    (e = abort_now(rp, rp->abort[i], rep, why, whylen)) !=
		    KV_OK)
			return e;
	rp->nabort = 0;
	usage_mark(rp, now);
	return KV_OK;
}

/*
 * The handle of the request added last.  A request held for its step
 * (async scheduling) gets its handle when admitted; held requests are
 * admitted in order and each takes one handle, so it is known now.
 */
kvs_req
replica_last_handle(const replica *rp)
{
	return (kvs_req)(rp->nbyreq + (rp->npend - rp->phead)) - 1;
}

/* Abort request h at the end of the step in flight. */
static kv_err
replica__abort_later(replica *rp, kvs_req h, char *why, size_t whylen)
{
	if (rp->nabort == rp->capabort) {
		size_t cap = rp->capabort ? rp->capabort * 2 : 64;
		kvs_req *a = realloc(rp->abort, cap * sizeof(*a));

		if (a == NULL) {
			snprintf(why, whylen, "out of memory");
			return KV_ENOMEM;
		}
		rp->abort = a;
		rp->capabort = cap;
	}
	rp->abort[rp->nabort++] = h;
	return KV_OK;
}

static kv_err
replica__fail1(replica *rp, kvs_req h, int64_t now, rpt *rep, bool *ended,
	       char *why, size_t whylen)
{
	struct rq *q;

	*ended = false;
	if (h >= 0 && (size_t)h < rp->nbyreq && rp->byreq[h] == NULL &&
	    late_pop(rp, h)) {
		*ended = true;	/* failed at finish(): it ends here */
		return KV_OK;
	}
	if (h >= 0 && (size_t)h >= rp->nbyreq &&
	    (size_t)h - rp->nbyreq < rp->npend - rp->phead) {
		struct pend *p = &rp->pend[rp->phead + ((size_t)h -
							rp->nbyreq)];

		if (!p->failed) {	/* held for its step */
			p->failed = true;
			p->fail_ns = now;
			*ended = true;
		}
		return KV_OK;
	}
	if (h < 0 || (size_t)h >= rp->nbyreq || (q = rp->byreq[h]) == NULL ||
	    q->failed)
		return KV_OK;	/* it ended before its client left */
	*ended = true;
	q->failed = true;
	q->fail_ns = now;
	if (!rp->busy) {
		kv_err e = abort_now(rp, h, rep, why, whylen);

		usage_mark(rp, now);
		return e;
	}
	return replica__abort_later(rp, h, why, whylen);
}

/* h is the last child of a fanned-out request (replica_last_handle):
 * every child still running fails. */
kv_err
replica_fail(replica *rp, kvs_req h, int64_t now, rpt *rep, bool *ended,
	     char *why, size_t whylen)
{
	kvs_req first = h;

	if (rp->fanout && h >= 0 && (size_t)h < rp->capsamp)
		first = h - (kvs_req)rp->samp[h];
	*ended = false;
	for (kvs_req x = first; x <= h; x++) {
		bool one;
		kv_err e = replica__fail1(rp, x, now, rep, &one, why, whylen);

		if (e != KV_OK)
			return e;
		*ended = *ended || one;
	}
	return KV_OK;
}

bool
replica_busy(const replica *rp)
{
	return rp->busy;
}

bool
replica_has_work(const replica *rp)
{
	return kvs_nunfinished(rp->s) > 0 || rp->phead < rp->npend ||
	       (rp->pp != NULL && rp->pp->n > 0);
}

uint64_t
replica_outstanding(const replica *rp)
{
	return rp->outstanding;
}

uint32_t
replica_block_size(const replica *rp)
{
	return rp->block_size;
}

const struct replica_stats *
replica_stats(const replica *rp)
{
	return &rp->st;
}

void
replica_state(const replica *rp, int64_t t, uint64_t *running,
	      uint64_t *waiting, uint64_t *swapped, uint64_t *used,
	      uint64_t *total, uint64_t *frag)
{
	size_t held = rp->npend;

	/* requests a span took in wait from their arrival (they are the
	 * last held) */
	while (held > rp->phead && rp->pend[held - 1].taken &&
	       rp->pend[held - 1].arrival > t)
		held--;
	*running = kvs_queue_len(rp->s, KVS_Q_RUNNING);
	*waiting = kvs_queue_len(rp->s, KVS_Q_WAITING) + (held - rp->phead);
	*swapped = kvs_queue_len(rp->s, KVS_Q_SWAPPED);
	*total = rp->blocks_total;
	if (rp->ffrow) {	/* a row inside a span (replica_ff.c) */
		if (rp->ffrow_waitset) {
			*waiting = rp->ffrow_wait;
			/* (those dropped had arrived before the span) */
			for (uint64_t k = rp->ffrow_tk0 > rp->tkbase ?
					  rp->ffrow_tk0 : rp->tkbase;
			     k < rp->ffrow_tk1; k++)
				*waiting -= rp->tk[k - rp->tkbase].t > t;
		}
		*running = rp->ffrow_running;
		*used = rp->ffrow_used;
		*frag = rp->ffrow_frag;
		return;
	}
	*used = rp->blocks_total - kvc_free_blocks(kvs_kv(rp->s), 0);
	*frag = frag_tokens((replica *)rp, NULL);
}

void
replica_close(replica *rp, int64_t now)
{
	usage_mark(rp, now);
}

/*
 * Child h of a fanned-out request is late for m (its arrival is): the
 * request counts once, through its lowest live child, and is late for
 * TTFT until a child has a token and for the queue until one was
 * scheduled (the parent's milestones, docs/metrics.md).
 */
static bool
replica__late_group(const replica *rp, kvs_req h, enum sim_watch_metric m)
{
	const struct rnsamp_group *g = rp->byreq[h]->grp;
	kvs_req first = h - (kvs_req)rp->samp[h];

	for (kvs_req x = first; x < first + (kvs_req)g->n; x++) {
		const struct rq *o = (size_t)x < rp->nbyreq ? rp->byreq[x] :
				     NULL;

		if (o == NULL)
			continue;
		if (x < h)
			return false;	/* counted through x */
		if ((m == SIM_W_TTFT && o->gen > 0) ||
		    (m == SIM_W_QUEUE && o->scheduled))
			return false;
	}
	return m == SIM_W_E2E || g->nrows == 0 ||
	       (m == SIM_W_TTFT ? g->row.first_token_ns :
		g->row.first_scheduled_ns) < 0;
}

uint64_t
replica_late(const replica *rp, int64_t now, enum sim_watch_metric m,
	     int64_t limit_ns)
{
	static const kvs_queue qs[] = { KVS_Q_WAITING, KVS_Q_RUNNING,
					KVS_Q_SWAPPED };
	uint64_t late = 0;

	for (size_t j = 0; j < sizeof(qs) / sizeof(qs[0]); j++) {
		uint32_t n = kvs_queue_len(rp->s, qs[j]);

		for (uint32_t i = 0; i < n; i++) {
			const struct rq *q =
				rp->byreq[kvs_queue_at(rp->s, qs[j], i)];

			if (now - q->arrival <= limit_ns)
				continue;
			if (q->grp != NULL) {
				late += replica__late_group(rp, kvs_queue_at(
					rp->s, qs[j], i), m);
				continue;
			}
			if (m == SIM_W_E2E ||
			    (m == SIM_W_TTFT && q->gen == 0) ||
			    (m == SIM_W_QUEUE && !q->scheduled))
				late++;
		}
	}
	/* held back (async): not scheduled, no token yet; the children of
	 * a fanned-out request are held and admitted together */
	for (size_t i = rp->phead; i < rp->npend; i++)
		late += now - rp->pend[i].arrival > limit_ns &&
			(rp->pend[i].grp == NULL || i == rp->phead ||
			 rp->pend[i - 1].grp != rp->pend[i].grp);
	return late;
}

void
replica_blocks_moved(replica *rp, int64_t now)
{
	usage_mark(rp, now);
}

void
replica_set_ctrace(replica *rp, ctrace *ct)
{
	rp->ct = ct;
	if (ct != NULL)
		ctrace_replica(ct, rp->index, kvs_policy_name(rp->s));
}

kvs *
replica_kvs(replica *rp)
{
	return rp->s;
}

/* ---- invariants (replica.h) ---------------------------------------- */

static int
check_fail(char *why, size_t whylen, int n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
check_fail(char *why, size_t whylen, int n, const char *fmt, ...)
{
	va_list ap;

	if (why != NULL && whylen > 0) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return n;
}

/* Invariants 3, 4 and 5: the records against the scheduler's requests. */
static int
check_records(const replica *rp, char *why, size_t whylen)
{
	uint64_t held = 0, tokens = 0, queued = 0, coming = 0;

	if (rp->nbyreq != kvs_nreqs(rp->s))
		return check_fail(why, whylen, 3, "%zu request records, %u "
				  "requests in the scheduler", rp->nbyreq,
				  kvs_nreqs(rp->s));
	for (size_t h = 0; h < rp->nbyreq; h++) {
		const struct rq *q = rp->byreq[h];
		kvs_status st = kvs_req_status(rp->s, (kvs_req)h);
		bool live = st != KVS_FINISHED && st != KVS_ABORTED &&
			    st != KVS_IGNORED;
		/* finished in a batch in flight: its row comes at the
		 * batch's return */
		bool later = q != NULL && !live && rp->pp != NULL &&
			     rpp_finishing(rp->pp, (kvs_req)h);

		coming += later;
		if ((q != NULL) != (live || later))
			return check_fail(why, whylen, 3, "request %zu "
					  "(status %d) %s a record", h,
					  (int)st, live ? "without" : "with");
		if (q != NULL) {
			held += !later;
			tokens += (uint64_t)q->prompt + q->output;
		}
	}
	for (size_t i = rp->phead; i < rp->npend; i++)
		tokens += (uint64_t)rp->pend[i].prompt + rp->pend[i].output;
	queued = (uint64_t)kvs_queue_len(rp->s, KVS_Q_WAITING) +
		 kvs_queue_len(rp->s, KVS_Q_RUNNING) +
		 kvs_queue_len(rp->s, KVS_Q_SWAPPED);
	if (held != kvs_nunfinished(rp->s) || held != queued ||
	    rp->st.added != rp->st.finished + rp->st.failed + held + coming)
		return check_fail(why, whylen, 4, "%llu records held, %u "
				  "unfinished, %llu queued, %llu added, %llu "
				  "finished", (unsigned long long)held,
				  kvs_nunfinished(rp->s),
				  (unsigned long long)queued,
				  (unsigned long long)rp->st.added,
				  (unsigned long long)rp->st.finished);
	if (tokens != rp->outstanding)
		return check_fail(why, whylen, 5, "%llu outstanding tokens, "
				  "the records hold %llu",
				  (unsigned long long)rp->outstanding,
				  (unsigned long long)tokens);
	return 0;
}

/* Invariant 6: blocks and usage against the allocator. */
static int
check_blocks(const replica *rp, char *why, size_t whylen)
{
	const kvc *k = kvs_kv(rp->s);
	uint64_t used;
	double u;

	if (rp->st.ngroups != kvc_ngroups(k))
		return check_fail(why, whylen, 6, "%u groups, the allocator "
				  "has %u", rp->st.ngroups, kvc_ngroups(k));
	for (uint32_t g = 0; g < rp->st.ngroups; g++)
		if (kvc_free_blocks(k, g) > rp->st.group_blocks[g])
			return check_fail(why, whylen, 6, "group %u: %u free "
					  "blocks of %llu", g,
					  kvc_free_blocks(k, g),
					  (unsigned long long)
					  rp->st.group_blocks[g]);
	/* as usage_mark computes it */
	used = rp->blocks_total - kvc_free_blocks(k, 0);
	u = rp->blocks_total ? (double)used / (double)rp->blocks_total : 0.0;
	if (u != rp->st.usage_now)
		return check_fail(why, whylen, 6, "usage %g at the last mark, "
				  "the allocator's is %g", rp->st.usage_now, u);
	return 0;
}

/* Invariant 7: every record's milestones in order, none after the clock. */
static int
check_time(const replica *rp, char *why, size_t whylen)
{
	int64_t clock = rp->st.usage_t;

	for (size_t h = 0; h < rp->nbyreq; h++) {
		const struct rq *q = rp->byreq[h];
		bool bad;

		if (q == NULL || !q->scheduled)
			continue;
		bad = q->first_sched < q->arrival || q->first_sched > clock;
		if (q->gen > 0)
			bad = bad || q->first_tok < q->first_sched ||
			      q->last_tok < q->first_tok ||
			      q->last_tok > clock;
		if (bad)
			return check_fail(why, whylen, 7, "request %llu: "
					  "arrival %lld, first scheduled %lld, "
					  "first token %lld, last token %lld, "
					  "clock %lld",
					  (unsigned long long)q->id,
					  (long long)q->arrival,
					  (long long)q->first_sched,
					  (long long)q->first_tok,
					  (long long)q->last_tok,
					  (long long)clock);
	}
	return 0;
}

/* Invariant 8: the step in flight and its token budget. */
static int
check_batch(const replica *rp, char *why, size_t whylen)
{
	const struct kvs_step *st = kvs_current_step(rp->s);
	int64_t budget = kvs_config_of(rp->s)->max_num_batched_tokens;
	uint64_t tokens = 0;

	if (!rp->busy)
		return 0;
	if (st == NULL || st->nsched != rp->nsched)
		return check_fail(why, whylen, 8, "%u requests in the step in "
				  "flight, the scheduler's has %u", rp->nsched,
				  st != NULL ? st->nsched : 0);
	for (uint32_t i = 0; i < rp->nsched; i++) {
		if (st->sched[i].req != rp->sreq[i])
			return check_fail(why, whylen, 8, "scheduled request "
					  "%u is %d, the scheduler's is %d", i,
					  (int)rp->sreq[i],
					  (int)st->sched[i].req);
		tokens += rp->seq[i].q;
	}
	if (budget > 0 && tokens > (uint64_t)budget)
		return check_fail(why, whylen, 8, "the step computes %llu "
				  "tokens, max_num_batched_tokens %lld",
				  (unsigned long long)tokens,
				  (long long)budget);
	return 0;
}

int
replica_check(const replica *rp, char *why, size_t whylen)
{
	char msg[512];
	int n;

	if (kvc_audit(kvs_kv(rp->s), msg, sizeof(msg)) != 0)
		return check_fail(why, whylen, 1, "allocator: %s", msg);
	if (kvs_audit(rp->s, msg, sizeof(msg)) != 0)
		return check_fail(why, whylen, 2, "scheduler: %s", msg);
	/* a span's tail in flight (replica_ff): the scheduler has made its
	 * step already, so the records, the blocks' notes and the batch
	 * are a step behind it until the tail's end, and checked then */
	if (rp->ffw.on)
		return rp->ffw.t_end > rp->st.usage_t ?
		    check_time(rp, why, whylen) :
		    check_fail(why, whylen, 8, "a tail in flight ends at %lld, "
			       "before the clock %lld",
			       (long long)rp->ffw.t_end,
			       (long long)rp->st.usage_t);
	if ((n = check_records(rp, why, whylen)) != 0 ||
	    (n = check_blocks(rp, why, whylen)) != 0 ||
	    (n = check_time(rp, why, whylen)) != 0)
		return n;
	return check_batch(rp, why, whylen);
}
