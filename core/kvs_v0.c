/*
 * kvs_v0.c -- policy "vllm-v0": vLLM v0's Scheduler (vllm-project/vllm at
 * 72dd1595b466, vllm/core/scheduler.py) over the allocator in mode
 * vllm-v0, and the engine's handling of a step's output.  Normative:
 * docs/replay.md R59-R72 of the design folder.
 *
 * Three FIFO queues: waiting (new and recompute-preempted requests),
 * running, swapped (swap-preempted).  A request in its prefill stage has
 * u uncached and c prefix-cached new tokens (R62); only u is charged to
 * the token budget B.  Two step shapes:
 *
 *   default  (_schedule_default, chunked prefill off) prefills from the
 *            waiting head, only while swapped is empty, each a whole
 *            sequence (all T tokens); only if none was admitted, one
 *            decode per running request with preemption of the *last*
 *            running request while can_append_slots fails; only if nobody
 *            was preempted, swap-ins from the swapped head.  A step never
 *            mixes prefills and decodes.
 *   chunked  (_schedule_chunked_prefill) the running queue first, prefill
 *            chunks and decodes alike, cut to the budget left; swap-ins
 *            if nobody was preempted; then admissions, each chunked to the
 *            budget left but allocating all T tokens.
 *
 * Preemption is recompute (free, back to the waiting front) or, with
 * `preemption swap`, swap-out to the CPU pool.  Lookahead slots (R66): L
 * per decode in can_append_slots, append_slots, can_swap_in and the
 * post-swap append_slots, 0 for a sequence in its prefill stage.
 *
 * After the decisions (R67): the allocator clock is the step number (set
 * by kvs_schedule), so every block a scheduled request touched carries
 * time K, as access_all_blocks_in_seq(seq, K) makes it; then, in sched
 * order, C += n and mark_blocks_as_computed (kvc_computed).  The model
 * output is kvs_complete_default(): a request whose C reaches T samples
 * token 1000000 + T, finishes with its output length or at max_model_len,
 * and is freed at once, in sched order (R68).
 *
 * Where the reference raises (R72): a swap-out that can_swap_out refuses
 * ("lack of CPU swap space") or that the allocator cannot do preempts by
 * recompute instead; a cached-token count the reference cannot compute
 * (R34) counts as 0; an admission or swap-in the allocator refuses with
 * KV_EREF (a stale evictor entry, R34) waits like LATER, and such an
 * append_slots preempts the request itself; an infeasible swap-in (NEVER,
 * unreachable under R60) waits like LATER.
 *
 * Cost per step: O(running + swapped-in + admitted + preempted) plus the
 * queue moves of kv_sched.c (the running queue is rebuilt once per step).
 * Scratch arrays grow with the queues and never shrink.
 */
#include "kvsched.h"
#include "kvs_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A scheduled request and its token_chunk_size. */
struct v0s_ent {
	kvs_req r;
	uint32_t n;
	uint32_t c;	/* of n, found in the prefix cache */
	uint32_t stale;	/* of c, without computed KV (kvsched.h); a
			 * decode: its positions promotion lost */
	int32_t lblk;	/* a decode: the block it reads them in, or -1 */
	uint32_t lneed;	/* ... and the leading slots of it it reads */
};

struct v0s_list {
	struct v0s_ent *a;
	uint32_t n, cap;
};

enum {
	V0S_RUN,	/* snapshot of the running queue at the step start */
	V0S_ADM,	/* admitted prefills */
	V0S_RPF,	/* running-phase prefills (chunked) */
	V0S_RDC,	/* running-phase decodes */
	V0S_SPF,	/* swapped-in prefills (chunked) */
	V0S_SDC,	/* swapped-in decodes */
	V0S_VRC,	/* recompute victims, in preemption order */
	V0S_VSW,	/* swap victims, in preemption order */
	V0S_NLIST
};

struct v0s {
	/* resolved configuration */
	uint64_t B;		/* max_num_batched_tokens */
	uint32_t S;		/* max_num_seqs */
	uint32_t L;		/* lookahead slots per decode */
	uint32_t bs;
	bool chunked, swap, pc;
	/* per request: 1 once its prefill completed (SequenceStage.DECODE) */
	uint8_t *dec;
	uint32_t capdec;
	/* SchedulingBudget of the step being scheduled */
	uint64_t tokens;
	uint32_t seqs;
	struct v0s_list l[V0S_NLIST];
	/* the live sequences of one group (kvs_set_n) */
	int32_t *grp;
	uint32_t capgrp;
};

static int64_t
v0s_default(int64_t v, int64_t d)
{
	return v == KVS_UNSET ? d : v;
}

static uint32_t
v0s_block_size(const struct kvc_config *kc)
{
	if (kc->ngroups > 0 && kc->group[0].block_size != 0)
		return kc->group[0].block_size;
	return kc->block_size;
}

/* R59 defaults, R59/R60 checks. */
static kv_err
v0s_configure(struct kvs_config *c, const struct kvc_config *kc, char *why,
	      size_t whylen)
{
	uint64_t mml = kc->max_model_len, G = kc->gpu_blocks, wm, need, bs;

	if (why != NULL && whylen > 0)
		why[0] = '\0';
	if (kc->mode != KVC_VLLM_V0)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				 "policy vllm-v0 runs on "
				 "allocator mode vllm-v0, not %s",
				 kvc_mode_name(kc->mode));
	if (kc->ngroups > 1 ||
	    (kc->ngroups == 1 && kc->group[0].kind != KVC_FULL))
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				 "policy vllm-v0 takes one KV "
				 "cache group of kind=full (sliding windows "
				 "and hybrid groups are outside its contract)");
	if (c->chunk_size != KVS_UNSET)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				 "chunk_size: vllm-v0 has no "
				 "fixed chunk size (its chunks come from the "
				 "token budget)");
	if (c->long_prefill_threshold != KVS_UNSET)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				 "long_prefill_threshold: vllm-v0 "
				 "uses it only with concurrent partial "
				 "prefills, fixed at one here");
	if (c->priority == 1)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				 "sched_policy priority is "
				 "outside the contract of policy vllm-v0 "
				 "(fcfs only)");
	c->max_num_seqs = v0s_default(c->max_num_seqs, 128);
	c->chunked_prefill = v0s_default(c->chunked_prefill, 0);
	c->preemption = v0s_default(c->preemption, 0);
	c->priority = v0s_default(c->priority, 0);
	c->lookahead = v0s_default(c->lookahead, 0);
	if (c->max_num_seqs < 1 || c->max_num_seqs > UINT32_MAX)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				 "max_num_seqs must be between 1 "
				 "and %u", UINT32_MAX);
	if (c->chunked_prefill < 0 || c->chunked_prefill > 1 ||
	    c->preemption < 0 || c->preemption > 1 || c->priority != 0 ||
	    c->lookahead < 0 || c->lookahead > UINT32_MAX / 4)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
					    "scheduler option out of range");
	if (c->max_num_batched_tokens == KVS_UNSET) {
		/* SchedulerConfig.__post_init__ */
		uint64_t b = c->chunked_prefill ? 2048 :
		    (mml > 2048 ? mml : 2048);
		uint64_t cap = (uint64_t)c->max_num_seqs * mml;

		c->max_num_batched_tokens = (int64_t)(b < cap ? b : cap);
	}
	if (c->max_num_batched_tokens < 1 ||
	    c->max_num_batched_tokens > UINT32_MAX)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				 "max_num_batched_tokens must be "
				 "between 1 and %u", UINT32_MAX);
	/* SchedulerConfig._verify_args */
	if (!c->chunked_prefill && (uint64_t)c->max_num_batched_tokens < mml)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				 "max_num_batched_tokens (%lld) "
				 "is smaller than max_model_len (%u) with "
				 "chunked prefill off: vLLM would reject every "
				 "longer sequence; raise "
				 "max_num_batched_tokens or turn "
				 "chunked_prefill on",
				 (long long)c->max_num_batched_tokens,
				 kc->max_model_len);
	if (c->max_num_batched_tokens < c->max_num_seqs)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				 "max_num_batched_tokens (%lld) "
				 "must be greater than or equal to "
				 "max_num_seqs (%lld)",
				 (long long)c->max_num_batched_tokens,
				 (long long)c->max_num_seqs);
	if (c->preemption == 1 && kc->cpu_blocks == 0)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				 "preemption swap needs "
				 "cpu_blocks (the swap space)");
	/* one request running alone always completes (R60) */
	bs = v0s_block_size(kc);
	if (bs == 0)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
					    "block_size must be at least 1");
	/* with prefix caching the chunked budget is rounded down to whole
	 * blocks: below one block nothing would ever be scheduled (vLLM v0
	 * would spin on empty steps) */
	if (c->chunked_prefill && kc->prefix_caching &&
	    (uint64_t)c->max_num_batched_tokens < bs)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				 "max_num_batched_tokens (%lld) is "
				 "smaller than block_size (%llu) with chunked "
				 "prefill and prefix caching: vLLM v0 rounds "
				 "the token budget down to whole blocks, so no "
				 "token would ever be scheduled",
				 (long long)c->max_num_batched_tokens,
				 (unsigned long long)bs);
	wm = (uint64_t)(kc->watermark * (double)kc->gpu_blocks);
	need = kvc_cdiv(mml + 2 * (uint64_t)c->lookahead, bs) + 2;
	if (c->capacity_check != 0 && (G < wm || G - wm < need))
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				 "one request of max_model_len %u "
				 "tokens with lookahead %lld needs %llu blocks "
				 "above the watermark (%llu of %u): raise "
				 "gpu_blocks or lower max_model_len",
				 kc->max_model_len, (long long)c->lookahead,
				 (unsigned long long)need,
				 (unsigned long long)wm, kc->gpu_blocks);
	return KV_OK;
}

static kv_err
v0s_init(kvs *s, void **state)
{
	const struct kvs_config *c = kvs_config_of(s);
	const struct kvc_config *kc = kvc_config_of(kvs_kv(s));
	struct v0s *v = calloc(1, sizeof(*v));

	if (v == NULL)
		return KV_ENOMEM;
	v->B = (uint64_t)c->max_num_batched_tokens;
	v->S = (uint32_t)c->max_num_seqs;
	v->L = (uint32_t)c->lookahead;
	v->chunked = c->chunked_prefill == 1;
	v->swap = c->preemption == 1;
	v->pc = kc->prefix_caching;
	v->bs = kc->group[0].block_size ? kc->group[0].block_size :
	    kc->block_size;
	*state = v;
	return KV_OK;
}

static void
v0s_release(void *state)
{
	struct v0s *v = state;

	if (v == NULL)
		return;
	for (int i = 0; i < V0S_NLIST; i++)
		free(v->l[i].a);
	free(v->dec);
	free(v->grp);
	free(v);
}

static kv_err
v0s_reserve(struct v0s_list *l, uint64_t n)
{
	struct v0s_ent *a;
	uint32_t c;

	if (n <= l->cap)
		return KV_OK;
	if (n > UINT32_MAX / 2)
		return KV_ENOMEM;
	c = l->cap ? l->cap : 16;
	while (c < n)
		c *= 2;
	a = realloc(l->a, (size_t)c * sizeof(*a));
	if (a == NULL)
		return KV_ENOMEM;
	l->a = a;
	l->cap = c;
	return KV_OK;
}

/* Lists are reserved at the step start: a push cannot fail. */
static void
v0s_push(struct v0s_list *l, kvs_req r, uint32_t n, uint32_t c,
	 uint32_t stale)
{
	l->a[l->n].r = r;
	l->a[l->n].n = n;
	l->a[l->n].c = c;
	l->a[l->n].stale = stale;
	l->a[l->n].lblk = -1;
	l->a[l->n].lneed = 0;
	l->n++;
}

/* A decode whose block promotion moved onto an uncomputed one. */
static void
v0s_push_decode(struct v0s_list *l, kvs_req r, uint32_t n,
		const struct kvc__lost *x)
{
	v0s_push(l, r, n, 0, x->tokens);
	l->a[l->n - 1].lblk = x->tokens > 0 ? x->block : -1;
	l->a[l->n - 1].lneed = x->need;
}

/*
 * Whether the step computes, before any read, the first `need` slots of
 * GPU block b that are not computed yet: some other scheduled request
 * holds b at table entry j and its chunk starts at or before the block's
 * first uncomputed slot and reaches slot need - 1.  The forward pass
 * writes every scheduled token's KV of a layer before attention reads
 * any (reshape_and_cache, then the attention kernels), so a decode that
 * reads b in the same step reads it computed.
 */
static bool
v0s_written_now(kvs *s, const struct v0s *v, kvs_req self, int32_t b,
		uint32_t need)
{
	static const int lists[] = { V0S_ADM, V0S_RPF, V0S_SPF, V0S_RDC,
				     V0S_SDC };
	kvc *k = kvs_kv(s);
	uint64_t have = kvc__v0_kvn(k, b);

	if (have >= need)
		return true;
	for (size_t li = 0; li < sizeof(lists) / sizeof(lists[0]); li++) {
		const struct v0s_list *l = &v->l[lists[li]];

		for (uint32_t i = 0; i < l->n; i++) {
			const struct v0s_ent *e = &l->a[i];
			int32_t q = kvs_req_seq(s, e->r);
			uint64_t from = kvc_seq_computed(k, q) + e->c;
			uint64_t to = kvc_seq_computed(k, q) + e->n;
			size_t nt;
			const int32_t *tab;

			if (e->r == self || e->n == e->c)
				continue;
			tab = kvc_table(k, q, 0, &nt);
			for (size_t j = 0; j < nt; j++)
				if (tab[j] == b &&
				    from <= (uint64_t)j * v->bs + have &&
				    to >= (uint64_t)j * v->bs + need)
					return true;
		}
	}
	return false;
}

/*
 * Stale tokens another request computes in this step are not stale
 * (v0s_written_now).  A decode's lost positions are one block's; an
 * admission's (or a chunked swap-in's) stale cached ones, the last
 * positions before its computed ones, span blocks: they stay stale from
 * the first one neither computed nor computed in this step.
 */
static void
v0s_lost_settle(kvs *s, struct v0s *v)
{
	static const int dec[] = { V0S_RDC, V0S_SDC }, pre[] = { V0S_ADM,
								  V0S_SPF };
	kvc *k = kvs_kv(s);

	for (size_t li = 0; li < 2; li++) {
		struct v0s_list *l = &v->l[dec[li]];

		for (uint32_t i = 0; i < l->n; i++) {
			struct v0s_ent *e = &l->a[i];

			if (e->lblk >= 0 &&
			    v0s_written_now(s, v, e->r, e->lblk, e->lneed)) {
				e->stale = 0;
				e->lblk = -1;
			}
		}
	}
	for (size_t li = 0; li < 2; li++) {
		struct v0s_list *l = &v->l[pre[li]];

		for (uint32_t i = 0; i < l->n; i++) {
			struct v0s_ent *e = &l->a[i];
			int32_t q = kvs_req_seq(s, e->r);
			uint64_t end = kvc_seq_computed(k, q) + e->c;
			uint64_t p = end - e->stale, bad = end;
			const int32_t *tab;
			size_t nt;

			if (e->stale == 0)
				continue;
			tab = kvc_table(k, q, 0, &nt);
			while (p < end) {
				uint64_t j = p / v->bs, hi = (j + 1) * v->bs;

				if (hi > end)
					hi = end;
				if (j >= nt || !v0s_written_now(s, v, e->r,
				    tab[j], (uint32_t)(hi - j * v->bs))) {
					bad = p;
					break;
				}
				p = hi;
			}
			e->stale = (uint32_t)(end - bad);
		}
	}
}

/*
 * Of the c cached tokens R62 schedules for q beyond its computed ones, how
 * many have no computed KV in the prefix cache: get_num_cached_tokens is
 * memoised from the first time a waiting request is looked at, and its
 * blocks may be evicted before it is admitted; and v0 marks every block a
 * prompt was allocated computed after its first chunk, so a preemption
 * before the later chunks leaves uncomputed blocks in the cache.  vLLM
 * v0's model runner skips the memoised count
 * (get_common_computed_block_ids), so these tokens' KV is never computed.
 * Called before the allocation.
 */
static kv_err
v0s_stale(kvc *k, int32_t q, uint32_t c, uint32_t *stale)
{
	size_t now, C = kvc_seq_computed(k, q), have;
	kv_err e;

	*stale = 0;
	if (c == 0)
		return KV_OK;
	if ((e = kvc__v0_cached_now(k, q, &now)) != KV_OK)
		return e;
	have = now > C ? now - C : 0;
	*stale = c > have ? c - (uint32_t)have : 0;
	return KV_OK;
}

/* Reserve everything a step can need, before it changes anything. */
static kv_err
v0s_prepare(kvs *s, struct v0s *v)
{
	uint64_t nrun = kvs_queue_len(s, KVS_Q_RUNNING);
	uint64_t nsw = kvs_queue_len(s, KVS_Q_SWAPPED);
	uint64_t nwait = kvs_queue_len(s, KVS_Q_WAITING);
	uint64_t nadm = nwait < v->S ? nwait : v->S;
	uint64_t nsin = nsw < v->S ? nsw : v->S;
	uint32_t nreq = kvs_nreqs(s);

	if (nreq > v->capdec) {
		uint32_t c = v->capdec ? v->capdec : 64;
		uint8_t *d;

		while (c < nreq)
			c = c > UINT32_MAX / 2 ? UINT32_MAX : c * 2;
		d = realloc(v->dec, c);
		if (d == NULL)
			return KV_ENOMEM;
		memset(d + v->capdec, 0, c - v->capdec);
		v->dec = d;
		v->capdec = c;
	}
	if (v0s_reserve(&v->l[V0S_RUN], nrun) != KV_OK ||
	    v0s_reserve(&v->l[V0S_ADM], nadm) != KV_OK ||
	    v0s_reserve(&v->l[V0S_RPF], nrun) != KV_OK ||
	    v0s_reserve(&v->l[V0S_RDC], nrun) != KV_OK ||
	    v0s_reserve(&v->l[V0S_SPF], nsin) != KV_OK ||
	    v0s_reserve(&v->l[V0S_SDC], nsin) != KV_OK ||
	    v0s_reserve(&v->l[V0S_VRC], nrun) != KV_OK ||
	    v0s_reserve(&v->l[V0S_VSW], nrun) != KV_OK)
		return KV_ENOMEM;
	for (int i = 0; i < V0S_NLIST; i++)
		v->l[i].n = 0;
	v->tokens = 0;
	v->seqs = 0;
	return KV_OK;
}

static bool
v0s_prefill(const struct v0s *v, kvs_req r)
{
	return v->dec[r] == 0;
}

/* SchedulingBudget.can_schedule(num_new_tokens=u, num_new_seqs=m). */
static bool
v0s_fits(const struct v0s *v, uint32_t u, uint32_t m)
{
	return v->tokens + u <= v->B && (uint64_t)v->seqs + m <= v->S;
}

/* Whether r is a group of forked sequences (kvs_set_n, R110). */
static bool
v0s_isgroup(const kvs *s, kvs_req r)
{
	return kvs__nsamp(s, r) > 1;
}

/* get_max_num_running_seqs: a group counts its n sequences from its
 * prompt on, before they are forked (R111). */
static uint32_t
v0s_nseq(const kvs *s, kvs_req r)
{
	return v0s_isgroup(s, r) ? kvs__nsamp(s, r) : 1;
}

/* The live sequences of r's group into v->grp, root first; their count,
 * 0 when out of memory. */
static uint32_t
v0s_group(kvs *s, struct v0s *v, kvs_req r)
{
	kvc *k = kvs_kv(s);
	int32_t q = kvs_req_seq(s, r);
	uint32_t n = kvc__v0_group(k, q, v->grp, v->capgrp);

	if (n > v->capgrp) {
		if (kvs__grow((void **)&v->grp, &v->capgrp, n,
			      sizeof(*v->grp)) != KV_OK)
			return 0;
		n = kvc__v0_group(k, q, v->grp, v->capgrp);
	}
	return n;
}

/*
 * _get_num_new_uncached_and_cached_tokens (R62): the uncached u and the
 * cached c new tokens of r, u cut to the budget left when `chunk`.
 */
static void
v0s_new_tokens(kvs *s, struct v0s *v, kvs_req r, bool chunk, uint32_t *u,
	       uint32_t *c)
{
	kvc *k = kvs_kv(s);
	int32_t q = kvs_req_seq(s, r);

	*u = 1;
	*c = 0;
	if (!v0s_prefill(v, r) && v0s_isgroup(s, r))
		*u = kvc__v0_group(k, q, NULL, 0);	/* one a sequence */
	if (v0s_prefill(v, r)) {
		uint32_t T = (uint32_t)kvc_seq_len(k, q);
		uint32_t C = (uint32_t)kvc_seq_computed(k, q);
		size_t h = 0;

		/*
		 * get_num_cached_tokens, with its memo.  Where the
		 * reference cannot count (R34) the hit counts as none.
		 */
		if (v->pc && kvc_cached(k, q, &h) != KV_OK)
			h = 0;
		*c = h > C ? (uint32_t)h - C : 0;
		if (*c > T - C)
			*c = T - C;
		*u = T - C - *c;
		if (*u == 0 && *c > 0) {
			/* the last token is recomputed for its logits */
			*u = 1;
			(*c)--;
		}
	}
	if (chunk) {
		uint64_t left = v->B - v->tokens;

		if (v->pc)
			left = left / v->bs * v->bs;
		if (*u > left)
			*u = (uint32_t)left;
	}
}

/* Report the allocator's last pairs, if any (most steps have none). */
static kv_err
v0s_pairs(kvs *s, enum kvs_pairs which)
{
	size_t n;

	kvc_pairs(kvs_kv(s), &n);
	return n > 0 ? kvs_emit_pairs(s, which) : KV_OK;
}

/*
 * _preempt: swap the victim out (preemption swap) or free it for
 * recompute.  A swap the CPU pool refuses is the reference's RuntimeError
 * (R65, R72); we recompute that victim instead.  A group (R116) is
 * swapped whatever `preemption` says, as v0 does when the user names no
 * mode; one of several running sequences cannot be recomputed (v0
 * asserts a single sequence there), so a swap the CPU pool refuses fails
 * the step with KV_EREF.
 */
static kv_err
v0s_preempt(kvs *s, struct v0s *v, kvs_req r)
{
	kvc *k = kvs_kv(s);
	bool grp = v0s_isgroup(s, r);
	kv_err e;

	if (v->swap || grp) {
		bool ok = false;

		e = kvc_can_swap_out(k, kvs_req_seq(s, r), &ok);
		if (e != KV_OK)
			return e;
		if (ok) {
			e = kvs_preempt_swap(s, r);
			if (e == KV_OK)
				v0s_push(&v->l[V0S_VSW], r, 0, 0, 0);
			if (e != KV_ENOSPC && e != KV_EREF)
				return e;
		}
	}
	if (grp && kvc__v0_group(k, kvs_req_seq(s, r), NULL, 0) > 1)
		return kvs__fail(s, KV_EREF, "request %d: a group of %u "
				 "running sequences must be swapped out and "
				 "the CPU swap space cannot take it (vLLM v0 "
				 "raises: \"Aborted due to the lack of CPU "
				 "swap space\")", r,
				 kvc__v0_group(k, kvs_req_seq(s, r), NULL, 0));
	e = kvs_preempt_recompute(s, r);
	if (e != KV_OK)
		return e;
	v->dec[r] = 0;
	v0s_push(&v->l[V0S_VRC], r, 0, 0, 0);
	return KV_OK;
}

/*
 * append_slots for every running sequence of r, root first (the
 * scheduler's _append_slots), each one's copy-on-write pairs to the
 * step's list.
 */
static kv_err
v0s_append(kvs *s, struct v0s *v, kvs_req r, uint32_t L)
{
	kvc *k = kvs_kv(s);
	uint32_t n;
	kv_err e;

	if (!v0s_isgroup(s, r)) {
		e = kvc_append_slots(k, kvs_req_seq(s, r), L);
		return e == KV_OK ? v0s_pairs(s, KVS_COW) : e;
	}
	if ((n = v0s_group(s, v, r)) == 0)
		return KV_ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		if ((e = kvc_append_slots(k, v->grp[i], L)) != KV_OK ||
		    (e = v0s_pairs(s, KVS_COW)) != KV_OK)
			return e;
	return KV_OK;
}

/*
 * _schedule_running: the running requests from the head of the snapshot.
 * `*head`/`*tail` delimit the requests not yet reached (victims are taken
 * from the tail).  Returns with *preempted set when anyone was preempted.
 */
static kv_err
v0s_running(kvs *s, struct v0s *v, uint32_t *head, uint32_t *tail,
	    bool *preempted)
{
	struct v0s_list *run = &v->l[V0S_RUN];
	kvc *k = kvs_kv(s);
	kv_err e;

	*preempted = false;
	while (*head < *tail) {
		kvs_req r = run->a[*head].r;
		int32_t q = kvs_req_seq(s, r);
		bool pre = v0s_prefill(v, r), ok = false, self = false;
		bool counted = !v->chunked;	/* default: seqs pre-added */
		uint32_t L = pre ? 0 : v->L, u, c, m = v0s_nseq(s, r);
		struct kvc__lost lost;

		v0s_new_tokens(s, v, r, v->chunked, &u, &c);
		if (u == 0)
			break;	/* no budget left: the rest stay */
		(*head)++;
		for (;;) {
			kvs_req victim;

			e = m > 1 ? kvc__v0_can_append_group(k, q, L, &ok) :
			    kvc_can_append(k, q, 0, true, L, &ok);
			if (e != KV_OK)
				return e;
			if (ok)
				break;
			if (counted) {
				v->seqs -= m;	/* budget.subtract_num_seqs */
				counted = false;
			}
			if (*head < *tail) {
				victim = run->a[--*tail].r;
			} else {
				victim = r;
				self = true;
			}
			*preempted = true;
			if ((e = v0s_preempt(s, v, victim)) != KV_OK)
				return e;
			if (self)
				break;
		}
		if (self)
			break;
		e = v0s_append(s, v, r, L);
		if (e == KV_EREF) {
			/* the reference fails (R72): preempt it instead */
			*preempted = true;
			if ((e = v0s_preempt(s, v, r)) != KV_OK)
				return e;
			break;
		}
		if (e != KV_OK || (e = kvc__v0_lost(k, q, &lost)) != KV_OK)
			return e;
		/* a prefill saw its tokens when allocated: only a decode
		 * promotes (kvc__v0_lost) */
		if (pre)
			v0s_push(&v->l[V0S_RPF], r, u, 0, 0);
		else
			v0s_push_decode(&v->l[V0S_RDC], r, u, &lost);
		v->tokens += u;
		if (v->chunked)
			v->seqs += m;
	}
	return KV_OK;
}

/* _schedule_swapped: swap-ins from the head of the swapped queue. */
static kv_err
v0s_swapped(kvs *s, struct v0s *v)
{
	kvc *k = kvs_kv(s);
	kv_err e;

	while (kvs_queue_len(s, KVS_Q_SWAPPED) > 0) {
		kvs_req r = kvs_queue_at(s, KVS_Q_SWAPPED, 0);
		int32_t q = kvs_req_seq(s, r);
		bool pre = v0s_prefill(v, r);
		uint32_t L = pre ? 0 : v->L, u, c, stale = 0;
		uint32_t m = v0s_nseq(s, r);
		struct kvc__lost lost;
		kvc_verdict vd;

		e = kvc_can_swap_in(k, q, L, &vd);
		if (e != KV_OK)
			return e;
		if (vd == KVC_VERDICT_NEVER) {
			/* infeasible: FINISHED_IGNORED (vLLM PR #4557) */
			kvs_queue_remove(s, KVS_Q_SWAPPED, 0);
			if ((e = kvs_emit_ignored(s, r)) != KV_OK)
				return e;
			continue;
		}
		if (vd != KVC_VERDICT_OK)
			break;	/* LATER */
		v0s_new_tokens(s, v, r, false, &u, &c);
		if (u == 0 || !v0s_fits(v, u, m)) {
			kvc__v0_forget_cached(k, q);	/* PR #18957 */
			break;
		}
		if (pre && (e = v0s_stale(k, q, c, &stale)) != KV_OK)
			return e;
		/* swap_in, then append_slots(seq, L) (R29) */
		e = kvc_swap_in(k, q, L);
		if (e == KV_EREF)
			break;	/* the reference fails (R72): wait */
		if (e != KV_OK)
			return e;
		kvs_queue_remove(s, KVS_Q_SWAPPED, 0);
		if ((e = v0s_pairs(s, KVS_SWAP_IN)) != KV_OK ||
		    (e = kvc__v0_lost(k, q, &lost)) != KV_OK)
			return e;
		if (pre)
			v0s_push(&v->l[V0S_SPF], r, u + c, c, stale);
		else
			v0s_push_decode(&v->l[V0S_SDC], r, u, &lost);
		v->tokens += u;
		v->seqs += m;
	}
	return KV_OK;
}

/* _get_prompt_limit: max_model_len with chunking, else min(it, B). */
static uint64_t
v0s_prompt_limit(kvs *s, const struct v0s *v)
{
	uint64_t mml = kvc_config_of(kvs_kv(s))->max_model_len;

	return v->chunked || v->B >= mml ? mml : v->B;
}

/* _schedule_prefills: admissions from the head of the waiting queue. */
static kv_err
v0s_prefills(kvs *s, struct v0s *v)
{
	kvc *k = kvs_kv(s);
	kv_err e;

	if (v->tokens >= v->B)
		return KV_OK;
	while (kvs_queue_len(s, KVS_Q_WAITING) > 0) {
		kvs_req r = kvs_queue_at(s, KVS_Q_WAITING, 0);
		int32_t q = kvs_req_seq(s, r);
		uint32_t u, c, stale;
		kvc_verdict vd;

		v0s_new_tokens(s, v, r, v->chunked, &u, &c);
		/* over the prompt limit, or NEVER: FINISHED_IGNORED */
		e = kvc_can_allocate(k, q, 0, &vd);
		if (e != KV_OK)
			return e;
		if (u + c > v0s_prompt_limit(s, v) ||
		    vd == KVC_VERDICT_NEVER) {
			kvs_queue_remove(s, KVS_Q_WAITING, 0);
			if ((e = kvs_emit_ignored(s, r)) != KV_OK)
				return e;
			continue;
		}
		/*
		 * Not admitted (LATER or no budget): the memo of the cached
		 * count taken above is dropped
		 * (remove_seq_from_computed_blocks_tracker, vLLM PR #18957),
		 * so the count is taken again at the next look.  An ignored
		 * request's sequence is released with its memo.
		 */
		if (vd != KVC_VERDICT_OK || v->tokens >= v->B ||
		    u == 0 || !v0s_fits(v, u, v0s_nseq(s, r))) {
			kvc__v0_forget_cached(k, q);
			break;
		}
		if ((e = v0s_stale(k, q, c, &stale)) != KV_OK)
			return e;
		e = kvc_allocate(k, q, 0);	/* all T tokens */
		if (e == KV_EREF)
			break;	/* the reference fails (R72): wait */
		if (e != KV_OK)
			return e;
		kvs_queue_remove(s, KVS_Q_WAITING, 0);
		v0s_push(&v->l[V0S_ADM], r, u + c, c, stale);
		v->tokens += u;
		v->seqs += v0s_nseq(s, r);
	}
	return KV_OK;
}

/* Append the entries of list i to the running queue (its room was made
 * at the step's start). */
static kv_err
v0s_run_extend(kvs *s, const struct v0s_list *l, bool finishing_first,
	       bool finishing)
{
	kvc *k = kvs_kv(s);

	for (uint32_t i = 0; i < l->n; i++) {
		if (finishing_first) {
			int32_t q = kvs_req_seq(s, l->a[i].r);
			bool fin = kvc_seq_len(k, q) - kvc_seq_computed(k, q) ==
			    l->a[i].n;

			if (fin != finishing)
				continue;
		}
		kvs__qpush(s, KVS_Q_RUNNING, l->a[i].r);
	}
	return KV_OK;
}

static kv_err
v0s_emit(kvs *s, const struct v0s_list *l)
{
	kv_err e;

	for (uint32_t i = 0; i < l->n; i++)
		if ((e = kvs_emit_sched_cached(s, l->a[i].r, l->a[i].n,
		    l->a[i].c, l->a[i].stale)) != KV_OK)
			return e;
	return KV_OK;
}

/* A group's decode: one token computed in each of its sequences. */
static kv_err
v0s_computed_group(kvs *s, struct v0s *v, kvs_req r)
{
	uint32_t n = v0s_group(s, v, r);
	kv_err e;

	if (n == 0)
		return KV_ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		if ((e = kvc_computed(kvs_kv(s), v->grp[i], 1, true)) != KV_OK)
			return e;
	return KV_OK;
}

static kv_err
v0s_schedule(kvs *s, void *state)
{
	struct v0s *v = state;
	struct v0s_list *run = &v->l[V0S_RUN];
	const struct kvs_step *st;
	kvc *k = kvs_kv(s);
	uint32_t head = 0, tail, nseq = 0;
	bool preempted = false;
	kv_err e;

	if ((e = v0s_prepare(s, v)) != KV_OK)
		return e;
	/* take the running queue out; it is rebuilt at the end (R63.4) from
	 * at most what runs now, is waiting or is swapped */
	if ((e = kvs__qreserve(s, KVS_Q_RUNNING, kvs__qlen(s, KVS_Q_RUNNING) +
			       kvs__qlen(s, KVS_Q_WAITING) +
			       kvs__qlen(s, KVS_Q_SWAPPED))) != KV_OK)
		return e;
	for (uint32_t i = 0; i < kvs__qlen(s, KVS_Q_RUNNING); i++) {
		kvs_req r = kvs__qat(s, KVS_Q_RUNNING, i);

		v0s_push(run, r, 0, 0, 0);
		nseq += v0s_nseq(s, r);
	}
	s->q[KVS_Q_RUNNING].n = 0;
	tail = run->n;

	if (!v->chunked) {
		/* _schedule_default (R63) */
		v->seqs = nseq;
		if (kvs_queue_len(s, KVS_Q_SWAPPED) == 0 &&
		    (e = v0s_prefills(s, v)) != KV_OK)
			return e;
		if (v->l[V0S_ADM].n == 0) {
			e = v0s_running(s, v, &head, &tail, &preempted);
			if (e == KV_OK && !preempted)
				e = v0s_swapped(s, v);
			if (e != KV_OK)
				return e;
		}
	} else {
		/* _schedule_chunked_prefill (R64) */
		e = v0s_running(s, v, &head, &tail, &preempted);
		if (e == KV_OK && !preempted)
			e = v0s_swapped(s, v);
		if (e == KV_OK)
			e = v0s_prefills(s, v);
		if (e != KV_OK)
			return e;
	}

	/* queues: recompute victims to the waiting front, one by one */
	for (uint32_t i = 0; i < v->l[V0S_VRC].n; i++)
		if ((e = kvs_queue_insert(s, KVS_Q_WAITING, 0,
					  v->l[V0S_VRC].a[i].r)) != KV_OK)
			return e;
	for (uint32_t i = 0; i < v->l[V0S_VSW].n; i++)
		if ((e = kvs_queue_insert(s, KVS_Q_SWAPPED,
					  kvs_queue_len(s, KVS_Q_SWAPPED),
					  v->l[V0S_VSW].a[i].r)) != KV_OK)
			return e;
	for (uint32_t i = head; i < tail; i++)
		kvs__qpush(s, KVS_Q_RUNNING, run->a[i].r);
	v0s_lost_settle(s, v);
	if (!v->chunked) {
		if ((e = v0s_run_extend(s, &v->l[V0S_ADM], false, 0)) ||
		    (e = v0s_run_extend(s, &v->l[V0S_RDC], false, 0)) ||
		    (e = v0s_run_extend(s, &v->l[V0S_SDC], false, 0)))
			return e;
		/* sched= : the admissions, or the decodes then swap-ins */
		if ((e = v0s_emit(s, &v->l[V0S_ADM])) ||
		    (e = v0s_emit(s, &v->l[V0S_RDC])) ||
		    (e = v0s_emit(s, &v->l[V0S_SDC])))
			return e;
	} else {
		if ((e = v0s_run_extend(s, &v->l[V0S_SDC], false, 0)) ||
		    (e = v0s_run_extend(s, &v->l[V0S_SPF], false, 0)) ||
		    (e = v0s_run_extend(s, &v->l[V0S_RDC], false, 0)) ||
		    (e = v0s_run_extend(s, &v->l[V0S_RPF], true, true)) ||
		    (e = v0s_run_extend(s, &v->l[V0S_RPF], true, false)) ||
		    (e = v0s_run_extend(s, &v->l[V0S_ADM], false, 0)))
			return e;
		if ((e = v0s_emit(s, &v->l[V0S_ADM])) ||
		    (e = v0s_emit(s, &v->l[V0S_RPF])) ||
		    (e = v0s_emit(s, &v->l[V0S_SPF])) ||
		    (e = v0s_emit(s, &v->l[V0S_RDC])) ||
		    (e = v0s_emit(s, &v->l[V0S_SDC])))
			return e;
	}

	/*
	 * R67: blocks accessed at time K (the clock kvs_schedule set), then
	 * C += n and mark_blocks_as_computed, in sched order.
	 */
	st = kvs_current_step(s);
	for (uint32_t i = 0; i < st->nsched; i++) {
		kvs_req r = st->sched[i].req;
		int32_t q = kvs_req_seq(s, r);

		if (v0s_isgroup(s, r) && !v0s_prefill(v, r)) {
			if ((e = v0s_computed_group(s, v, r)) != KV_OK)
				return e;
			continue;
		}
		e = kvc_computed(k, q, st->sched[i].ntokens, true);
		if (e != KV_OK)
			return e;
		if (kvc_seq_computed(k, q) == kvc_seq_len(k, q))
			v->dec[r] = 1;
	}
	return KV_OK;
}

/*
 * The model output (R68), and for a group (R112, R113): when its prompt's
 * first token is sampled, n - 1 children are forked from the root before
 * the root takes its token (SingleStepOutputProcessor: parent.fork for
 * each sample but the last, which the parent keeps; fork_seq shares the
 * blocks), none when the group finishes with that token; each sequence
 * other than the root takes token t + i, i its place in the group (t the
 * root's), so no two share a block's content.  Then the default output,
 * which gives the root its token and frees the whole group when it
 * finishes (every sequence has as many tokens as the root).
 */
static kv_err
v0s_complete(kvs *s, void *state, const uint32_t *tokens)
{
	struct v0s *v = state;
	kvc *k = kvs_kv(s);
	uint32_t mml = kvc_config_of(k)->max_model_len;

	for (uint32_t i = 0; i < s->nsched; i++) {
		kvs_req r = s->sched[i].req;
		struct kvs_rq *q = kvs__rq(s, r);
		uint32_t T, t, n;
		kv_err e;

		if (kvs__nsamp(s, r) <= 1 || q->status != KVS_RUNNING)
			continue;
		T = (uint32_t)kvc_seq_len(k, q->seq);
		if (kvc_seq_computed(k, q->seq) != T ||
		    q->generated + 1 >= q->max_output || T + 1 >= mml)
			continue;
		t = tokens != NULL ? tokens[i] : 1000000u + T;
		if (kvc__v0_group(k, q->seq, NULL, 0) == 1)
			for (uint32_t j = 1; j < kvs__nsamp(s, r); j++) {
				int32_t child;

				if ((e = kvc_fork(k, q->seq, &child)) != KV_OK)
					return kvs__fail(s, e, "fork: %s",
							 kvc_errmsg(k));
			}
		if ((n = v0s_group(s, v, r)) == 0)
			return kvs__fail(s, KV_ENOMEM, "out of memory");
		for (uint32_t j = 1; j < n; j++) {
			uint32_t tj = t + j;

			if ((e = kvc_add_tokens(k, v->grp[j], &tj, 1)) !=
			    KV_OK)
				return kvs__fail(s, e, "output token: %s",
						 kvc_errmsg(k));
		}
	}
	return kvs_complete_default(s, tokens);
}

const struct kvs_policy kvs__v0_policy = {
	.abi = KVS_ABI,
	.name = "vllm-v0",
	.mode = KVC_VLLM_V0,
	.configure = v0s_configure,
	.init = v0s_init,
	.release = v0s_release,
	.schedule = v0s_schedule,
	.complete = v0s_complete,
};
