/*
 * kvs_v1.c -- policy "vllm-v1": vLLM v1's Scheduler.schedule()
 * (vllm-project/vllm at 5e5a7eb16f12, vllm/v1/core/sched/scheduler.py) over
 * the allocator in mode vllm-v1.  Normative: docs/replay.md R48-R58 of the
 * design folder; our own words in docs/scheduler.md.
 *
 * One token budget B per step, no prefill or decode phase: every request
 * advances its computed count C toward its length T.
 *
 *   running phase  for each running request in list order while the budget
 *                  lasts: n = T - C, capped by long_prefill_threshold, the
 *                  budget and min(P + N, max_model_len) - 1 - C; n = 0 skips
 *                  it.  allocate_slots(n); while that fails, preempt the
 *                  last running request (priority: the largest (priority,
 *                  arrival), even one already scheduled this step, whose
 *                  tokens go back to the budget and whose chunk is
 *                  withdrawn, kvc__v1_withdraw), recompute-style, onto
 *                  the front of the waiting queue; preempting the
 *                  requester itself ends the phase.
 *   waiting phase  only when nobody was preempted: admit from the head
 *                  while the budget lasts and fewer than max_num_seqs run:
 *                  prefix hit h, n = T - h (capped); without chunked prefill
 *                  a request that does not fit the budget is set aside and
 *                  the loop goes on; an allocation failure stops the phase.
 *                  The hit's stale tokens (kvc__v1_stale) go with the
 *                  admission.
 *                  Set-aside requests return to the front in reverse order
 *                  of skipping (vLLM's FCFSRequestQueue.prepend_requests
 *                  before PR #32173 reversed them twice).
 *
 * The model output is kvs_complete_default(): it is update_from_output()
 * for this configuration (R53).
 *
 * With a KV connector (kvs_set_connector; vLLM 0.15.1's connector path,
 * docs/scheduler.md R73-R80) the waiting phase also starts loads (blocks
 * for the prefix hit and the external tokens, status KVS_WAITING_REMOTE,
 * set aside without budget), sets aside loads in flight, admits landed
 * ones from their computed count, and puts set-aside requests back in
 * their own order (0.15.1 has PR #32173).
 *
 * The waiting queue under sched_policy priority is kept sorted by
 * (priority, arrival), arrival being the kvs_req number: vLLM's heap has no
 * front, a "prepend" is an ordinary push, and (priority, arrival) is a total
 * order here, so sorted order is the heap's pop order.
 *
 * lookahead L > 0 is our extension (the pinned reference runs without
 * speculative decoding, R48): a running request whose n completes its
 * tokens (a decode, or the last prefill chunk) reserves L more slots, as
 * allocate_slots(num_lookahead_tokens=L) does; admissions reserve none, as
 * vLLM's effective_lookahead_tokens is 0 for a request with C = 0.
 *
 * LoRA (docs/scheduler.md R100-R104): with max_loras set, the waiting
 * phase sets aside a head request whose adapter would be one more than
 * max_loras beside the adapters the step schedules (vLLM's
 * scheduled_loras), after the connector's checks and before its hit.
 *
 * Speculative decoding (spec_tokens k > 0; vLLM 0.15.1, docs/scheduler.md
 * R81-R91): a running request with d proposed drafts (kvs_propose) asks
 * for T - C + d tokens, cut by the threshold, the budget and
 * max_model_len - 1 - C only; the drafts that fit are its entry's spec,
 * reserved as lookahead slots (so never cached), and its drafts are spent
 * once it is scheduled.  kvs_complete_spec (kvs_spec.c) applies the
 * acceptance.
 *
 * Cost per step: O(running + admitted + preempted) plus the queue moves of
 * kv_sched.c; the priority victim search is O(running) per preemption.
 * Scratch arrays grow with the running list and never shrink.
 */
#include "kvs_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct v1s {
	/* running-phase schedule, emitted when the phase ends */
	struct kvs_sched *run;
	uint32_t nrun, caprun;
	/* requests set aside by the waiting phase, in skipping order */
	kvs_req *skip;
	uint32_t nskip, capskip;
	/* the adapters the step schedules (vLLM's scheduled_loras) */
	struct kvs_loraset loras;
};

/* num_speculative_tokens: at most this many (a bound of ours) */
#define V1S_SPEC_MAX 1024

static int64_t
v1s_default(int64_t v, int64_t d)
{
	return v == KVS_UNSET ? d : v;
}

/* R48 defaults, R48/R49 checks. */
static kv_err
v1s_configure(struct kvs_config *c, const struct kvc_config *kc, char *why,
	      size_t whylen)
{
	uint32_t ng = kc->ngroups ? kc->ngroups : 1;
	uint64_t need = 0, mml = kc->max_model_len;

	if (why != NULL && whylen > 0)
		why[0] = '\0';
	if (c->chunk_size != KVS_UNSET)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				"chunk_size: vllm-v1 has no fixed "
				"chunk size (its chunks come from the token "
				"budget and long_prefill_threshold)");
	if (c->preemption == 1)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				"preemption swap: vllm-v1 has no "
				"swap, only recompute");
	c->max_num_seqs = v1s_default(c->max_num_seqs, 128);
	c->max_num_batched_tokens = v1s_default(c->max_num_batched_tokens,
						2048);
	c->chunked_prefill = v1s_default(c->chunked_prefill, 1);
	c->long_prefill_threshold = v1s_default(c->long_prefill_threshold, 0);
	c->preemption = 0;
	c->priority = v1s_default(c->priority, 0);
	c->lookahead = v1s_default(c->lookahead, 0);
	c->spec_tokens = v1s_default(c->spec_tokens, 0);
	if (c->max_num_seqs < 1 || c->max_num_seqs > UINT32_MAX)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				"max_num_seqs must be between 1 "
				"and %u", UINT32_MAX);
	if (c->max_num_batched_tokens < 1 ||
	    c->max_num_batched_tokens > UINT32_MAX)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				"max_num_batched_tokens must be "
				"between 1 and %u", UINT32_MAX);
	if (c->chunked_prefill < 0 || c->chunked_prefill > 1 ||
	    c->priority < 0 || c->priority > 1 ||
	    c->long_prefill_threshold < 0 ||
	    c->long_prefill_threshold > UINT32_MAX ||
	    c->lookahead < 0 || c->lookahead > UINT32_MAX ||
	    c->spec_tokens < 0 || c->spec_tokens > V1S_SPEC_MAX)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
					    "scheduler option out of range");
	/* SchedulerConfig.verify_max_model_len */
	if (!c->chunked_prefill && (uint64_t)c->max_num_batched_tokens < mml)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				"max_num_batched_tokens (%lld) is "
				"smaller than max_model_len (%u) with chunked "
				"prefill off: vLLM would reject every longer "
				"sequence; raise max_num_batched_tokens or "
				"lower max_model_len",
				(long long)c->max_num_batched_tokens,
				kc->max_model_len);
	if (c->max_num_batched_tokens < c->max_num_seqs)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				"max_num_batched_tokens (%lld) "
				"must be greater than or equal to max_num_seqs "
				"(%lld)", (long long)c->max_num_batched_tokens,
				(long long)c->max_num_seqs);
	if (kc->mode != KVC_VLLM_V1)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				"policy vllm-v1 runs on allocator "
				"mode vllm-v1, not %s",
				kvc_mode_name(kc->mode));
	/* check_enough_kv_cache_memory, in usable blocks (R49) */
	for (uint32_t g = 0; g < ng; g++) {
		const struct kvc_group_config *gc = &kc->group[g];
		kvc_kind kind = kc->ngroups ? gc->kind : KVC_FULL;
		uint64_t bs = kc->ngroups && gc->block_size ? gc->block_size :
		    kc->block_size;
		uint64_t t;

		if (bs == 0)
			return kvc__failbuf(why, whylen, KV_ECONFIG,
					"block_size must be at "
					"least 1");
		switch (kind) {
		case KVC_FULL:
			need += kvc_cdiv(mml, bs);
			break;
		case KVC_SLIDING:
			t = (uint64_t)gc->window - 1 +
			    (uint64_t)c->max_num_batched_tokens;
			need += kvc_cdiv(t < mml ? t : mml, bs) + 1;
			break;
		case KVC_STATE:
			/* MambaSpec.max_memory_usage_bytes: a page a block of
			 * max_model_len -- one page (the state of one request,
			 * whatever its length) when the block is
			 * max_model_len; with Mamba prefix caching (512-token
			 * blocks) the allocator holds a block a 512 tokens,
			 * as sizing counts (kvc_worst_blocks_state) */
			need += kvc_cdiv(mml, bs);
			break;
		default:
			return kvc__failbuf(why, whylen, KV_ECONFIG,
					"group %s: kind %d is not available "
					"with policy vllm-v1", gc->name,
					(int)kind);
		}
	}
	if (kc->gpu_blocks < 1 ||
	    (c->capacity_check != 0 && need > (uint64_t)kc->gpu_blocks - 1))
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				"one request of max_model_len %u "
				"tokens needs %llu blocks, but only %u are "
				"usable (gpu_blocks %u less the null block); "
				"raise gpu_blocks or lower max_model_len",
				kc->max_model_len, (unsigned long long)need,
				kc->gpu_blocks ? kc->gpu_blocks - 1 : 0,
				kc->gpu_blocks);
	return KV_OK;
}

static kv_err
v1s_init(kvs *s, void **state)
{
	(void)s;
	*state = calloc(1, sizeof(struct v1s));
	return *state != NULL ? KV_OK : KV_ENOMEM;
}

static void
v1s_release(void *state)
{
	struct v1s *v = state;

	if (v == NULL)
		return;
	free(v->run);
	free(v->skip);
	free(v->loras.a);
	free(v);
}

/* (priority, arrival) of a before that of b. */
static bool
v1s_before(const kvs *s, kvs_req a, kvs_req b)
{
	int32_t pa = kvs_req_priority(s, a), pb = kvs_req_priority(s, b);

	return pa != pb ? pa < pb : a < b;
}

/* Put r back into the waiting queue: front (FCFS) or its sorted place. */
static kv_err
v1s_requeue(kvs *s, bool prio, kvs_req r)
{
	uint32_t i = 0, n = kvs_queue_len(s, KVS_Q_WAITING);

	if (prio)
		while (i < n && v1s_before(s, kvs_queue_at(s, KVS_Q_WAITING,
							   i), r))
			i++;
	return kvs_queue_insert(s, KVS_Q_WAITING, i, r);
}

/*
 * Sort the waiting queue by (priority, arrival): only new requests (added
 * at the tail by kvs_add) are out of place, so insertion sort is linear in
 * the queue plus the distance they move.
 */
static kv_err
v1s_sort_waiting(kvs *s)
{
	uint32_t n = kvs_queue_len(s, KVS_Q_WAITING);

	for (uint32_t i = 1; i < n; i++) {
		kvs_req r = kvs_queue_at(s, KVS_Q_WAITING, i);
		uint32_t j = i;

		while (j > 0 && v1s_before(s, r, kvs_queue_at(s, KVS_Q_WAITING,
							      j - 1)))
			j--;
		if (j != i) {
			kvs_queue_remove(s, KVS_Q_WAITING, i);
			if (kvs_queue_insert(s, KVS_Q_WAITING, j, r) != KV_OK)
				return KV_ENOMEM;
		}
	}
	return KV_OK;
}

/* Index of the running request with the largest (priority, arrival). */
static uint32_t
v1s_prio_victim(const kvs *s)
{
	uint32_t n = kvs_queue_len(s, KVS_Q_RUNNING), best = 0;

	for (uint32_t i = 1; i < n; i++)
		if (v1s_before(s, kvs_queue_at(s, KVS_Q_RUNNING, best),
			       kvs_queue_at(s, KVS_Q_RUNNING, i)))
			best = i;
	return best;
}

/* allocate_slots(req, n, num_lookahead_tokens) for a RUNNING request. */
static kv_err
v1s_alloc_running(kvc *k, int32_t seq, uint32_t n, uint32_t L)
{
	/* vLLM passes num_lookahead_tokens for every running request,
	 * whether or not its chunk completes its tokens; with none, the
	 * same as kvc_allocate for 1 <= n <= T - C, without its dispatch */
	return kvc__v1_allocate_ahead(k, seq, n, L);
}

/*
 * Preempt one victim for the running phase.  *i is the index of the
 * request being scheduled; it moves down when a victim already scheduled
 * this step (priority only) leaves the list in front of it.  *self says
 * the victim was the requester.
 */
static kv_err
v1s_preempt_one(kvs *s, struct v1s *v, bool prio, kvs_req req,
		uint32_t *i, uint32_t *budget, bool *self)
{
	uint32_t at = prio ? v1s_prio_victim(s) :
	    kvs_queue_len(s, KVS_Q_RUNNING) - 1;
	kvs_req victim = kvs_queue_remove(s, KVS_Q_RUNNING, at);
	kv_err e;

	if (prio)
		for (uint32_t j = 0; j < v->nrun; j++) {
			int32_t q;

			if (v->run[j].req != victim)
				continue;
			/* its chunk will not run: the blocks it cached keep
			 * their hashes without the KV (kvc__v1_withdraw) */
			q = kvs_req_seq(s, victim);
			if ((e = kvc__v1_withdraw(kvs_kv(s), q, (uint32_t)
			    (kvc_seq_computed(kvs_kv(s), q) -
			     (v->run[j].ntokens - v->run[j].spec)))) !=
			    KV_OK)
				return e;
			*budget += v->run[j].ntokens;
			memmove(v->run + j, v->run + j + 1,
				(v->nrun - j - 1) * sizeof(*v->run));
			v->nrun--;
			(*i)--;
			break;
		}
	if ((e = kvs_preempt_recompute(s, victim)) != KV_OK)
		return e;
	if ((e = v1s_requeue(s, prio, victim)) != KV_OK)
		return e;
	*self = victim == req;
	return KV_OK;
}

static kv_err
v1s_running_phase(kvs *s, struct v1s *v, uint32_t *budget)
{
	const struct kvs_config *c = kvs_config_of(s);
	kvc *k = kvs_kv(s);
	uint64_t mml = kvc_config_of(k)->max_model_len;
	uint64_t H = (uint64_t)c->long_prefill_threshold;
	uint32_t L = (uint32_t)c->lookahead;
	bool spec = c->spec_tokens > 0;
	bool prio = c->priority == 1;
	uint32_t i = 0;
	kv_err e;

	v->nrun = 0;
	/* at most one entry a running request (preemptions only remove) */
	if ((e = kvs__grow((void **)&v->run, &v->caprun,
			   kvs__qlen(s, KVS_Q_RUNNING), sizeof(*v->run))) !=
	    KV_OK)
		return e;
	while (i < kvs__qlen(s, KVS_Q_RUNNING) && *budget > 0) {
		kvs_req r = kvs__qat(s, KVS_Q_RUNNING, i);
		const struct kvs_rq *rq = kvs__rq(s, r);
		int32_t seq = rq->seq;	/* running: a live sequence */
		uint64_t T = kvc__seq(k, seq)->ntok;
		uint64_t C = kvc__seq(k, seq)->ncomp;
		uint64_t total = (uint64_t)rq->prompt + rq->max_output;
		int64_t n = (int64_t)(T - C), cap;
		bool self = false;
		uint32_t d = 0;

		if (rq->inflight) {	/* R122: num_new_tokens 0 */
			i++;
			continue;
		}
		if (spec && kvs__draft(s, r) > 0) {
			/* num_tokens_with_spec; R83: only max_model_len caps */
			n += kvs__draft(s, r);
			total = mml;
		}
		if (H > 0 && (uint64_t)n > H)
			n = (int64_t)H;
		if (n > (int64_t)*budget)
			n = *budget;
		cap = (int64_t)(total < mml ? total : mml) - 1 - (int64_t)C;
		if (n > cap)
			n = cap;
		if (n <= 0) {
			i++;
			continue;
		}
		if (spec && (uint64_t)n > T - C)	/* R84: drafts that fit */
			d = (uint32_t)((uint64_t)n - (T - C));
		while ((e = v1s_alloc_running(k, seq, (uint32_t)n - d,
					      L + d)) != KV_OK) {
			if (e != KV_ENOSPC)
				return e;
			if ((e = v1s_preempt_one(s, v, prio, r, &i, budget,
						 &self)) != KV_OK)
				return e;
			if (self)
				break;
		}
		if (self)
			break;
		v->run[v->nrun].req = r;
		v->run[v->nrun].ntokens = (uint32_t)n;
		v->run[v->nrun].spec = d;
		v->nrun++;
		if (spec && kvs__draft(s, r) > 0)	/* R85: spec_token_ids
							 * = [] */
			s->rqx[r].draft = 0;
		*budget -= (uint32_t)n;
		i++;
	}
	for (uint32_t j = 0; j < v->nrun; j++) {
		if ((e = kvs_emit_sched(s, v->run[j].req, v->run[j].ntokens)) !=
		    KV_OK)
			return e;
		if (spec)
			s->sched[s->nsched - 1].spec = v->run[j].spec;
	}
	return KV_OK;
}

/* Set r, the head of the waiting queue, aside for this step. */
static kv_err
v1s_skip_head(kvs *s, struct v1s *v, kvs_req r)
{
	kv_err e;

	if ((e = kvs__grow((void **)&v->skip, &v->capskip, v->nskip + 1,
			   sizeof(*v->skip))) != KV_OK)
		return e;
	kvs_queue_remove(s, KVS_Q_WAITING, 0);
	v->skip[v->nskip++] = r;
	return KV_OK;
}

enum v1s_head { V1S_NEXT, V1S_STOP, V1S_NEW, V1S_LOADED };

/*
 * max_loras (R101): r, the head, is set aside when its adapter is not one
 * the step schedules already and those are max_loras (vLLM compares with
 * ==).  *skipped says so.
 */
static kv_err
v1s_lora_head(kvs *s, struct v1s *v, kvs_req r, bool *skipped)
{
	int64_t max = kvs_config_of(s)->max_loras;
	uint32_t lora;

	*skipped = false;
	if (max == KVS_UNSET || v->loras.n != (uint64_t)max)
		return KV_OK;
	lora = kvs__lora(s, r);
	*skipped = lora != 0 && !kvs__loraset_has(&v->loras, lora);
	return *skipped ? v1s_skip_head(s, v, r) : KV_OK;
}

/*
 * The connector's part of the waiting loop for r at the head (vLLM's
 * schedule(): the WAITING_FOR_REMOTE_KVS check, then for a request with
 * no computed tokens get_num_new_matched_tokens and, with tokens to load,
 * allocate_slots(delay_cache_blocks) and update_state_after_alloc).
 * *next: V1S_NEXT (r set aside, go on), V1S_STOP (no blocks for the
 * load), V1S_NEW (admit r as usual), V1S_LOADED (r holds blocks and C
 * computed tokens: admit it from C).
 */
static kv_err
v1s_conn_head(kvs *s, struct v1s *v, kvs_req r, enum v1s_head *next)
{
	kvc *k = kvs_kv(s);
	int32_t seq = kvs__rq(s, r)->seq;
	uint32_t ext, hit;
	size_t h;
	bool skipped;
	kv_err e;

	*next = V1S_NEXT;
	if (kvs__rq(s, r)->status == KVS_WAITING_REMOTE) {
		if (kvs__rq(s, r)->conn & KVS__C_LOADING)
			return v1s_skip_head(s, v, r);
		if ((e = kvs__conn_ready(s, r)) != KV_OK)
			return e;
	}
	if ((e = v1s_lora_head(s, v, r, &skipped)) != KV_OK || skipped)
		return e;
	if (kvc_seq_state(k, seq) == KVC_RUNNING) {
		*next = V1S_LOADED;
		return KV_OK;
	}
	if ((e = kvc_cached(k, seq, &h)) != KV_OK ||
	    (e = kvs__conn_match(s, r, (uint32_t)h, &ext)) != KV_OK)
		return e;
	if (ext == 0) {
		*next = V1S_NEW;
		return KV_OK;
	}
	e = kvc__v1_allocate_external(k, seq, ext, &hit);
	if (e == KV_ENOSPC) {
		*next = V1S_STOP;
		return KV_OK;
	}
	if (e != KV_OK || (e = kvs__conn_loading(s, r, hit, ext)) != KV_OK)
		return e;
	return v1s_skip_head(s, v, r);
}

/* Admit r, the head: n of its tokens past its computed (or cached) h. */
static kv_err
v1s_admit(kvs *s, kvs_req r, uint32_t h, uint32_t n, bool loaded)
{
	const struct kvs_config *c = kvs_config_of(s);
	kvc *k = kvs_kv(s);
	int32_t seq = kvs_req_seq(s, r);
	uint32_t stale = 0;
	kv_err e;

	/* effective_lookahead_tokens: none for a request with C = 0 */
	if (loaded && c->lookahead > 0)
		e = kvc__v1_allocate_ahead(k, seq, n, (uint32_t)c->lookahead);
	else
		e = kvc_allocate(k, seq, n);
	if (e != KV_OK)
		return e;
	if ((!loaded && (e = kvc__v1_stale(k, seq, h, &stale)) != KV_OK) ||
	    (e = kvs_queue_insert(s, KVS_Q_RUNNING,
				  kvs_queue_len(s, KVS_Q_RUNNING), r)) !=
	    KV_OK)
		return e;
	kvs_queue_remove(s, KVS_Q_WAITING, 0);
	return kvs_emit_sched_cached(s, r, n, 0, stale);
}

static kv_err
v1s_waiting_phase(kvs *s, struct v1s *v, uint32_t budget)
{
	const struct kvs_config *c = kvs_config_of(s);
	kvc *k = kvs_kv(s);
	uint64_t H = (uint64_t)c->long_prefill_threshold;
	bool prio = c->priority == 1, conn = s->has_conn;
	kv_err e = KV_OK;

	v->nskip = 0;
	while (kvs_queue_len(s, KVS_Q_WAITING) > 0 && budget > 0) {
		enum v1s_head next = V1S_NEW;
		kvs_req r;
		int32_t seq;
		size_t h;
		uint64_t n;
		bool skipped = false;

		if (kvs_queue_len(s, KVS_Q_RUNNING) >= c->max_num_seqs)
			break;
		r = kvs_queue_at(s, KVS_Q_WAITING, 0);
		seq = kvs_req_seq(s, r);
		if (conn && (e = v1s_conn_head(s, v, r, &next)) != KV_OK)
			goto out;
		if (!conn && (e = v1s_lora_head(s, v, r, &skipped)) != KV_OK)
			goto out;
		if (!skipped && next == V1S_NEW && kvs__rq(s, r)->inflight) {
			/* R122: preempted with its output in flight */
			if ((e = v1s_skip_head(s, v, r)) != KV_OK)
				goto out;
			continue;
		}
		if (next == V1S_NEXT || (!conn && skipped))
			continue;
		if (next == V1S_STOP)
			break;
		if (next == V1S_LOADED)
			h = kvc_seq_computed(k, seq);
		else if ((e = kvc_cached(k, seq, &h)) != KV_OK)
			goto out;
		n = kvc_seq_len(k, seq) - h;
		if (H > 0 && n > H)
			n = H;
		if (!c->chunked_prefill && n > budget) {
			if ((e = v1s_skip_head(s, v, r)) != KV_OK)
				goto out;
			continue;
		}
		if (n > budget)
			n = budget;
		e = v1s_admit(s, r, (uint32_t)h, (uint32_t)n,
			      next == V1S_LOADED);
		if (e == KV_ENOSPC) {
			e = KV_OK;
			break;
		}
		if (e != KV_OK || (c->max_loras != KVS_UNSET &&
		    (e = kvs__loraset_add(&v->loras, kvs__lora(s, r))) !=
		    KV_OK))
			goto out;
		budget -= (uint32_t)n;
	}
out:
	/*
	 * prepend_requests(skipped): the last one skipped ends up first.
	 * With a KV connector, vLLM 0.15.1's order instead (PR #32173):
	 * skipped requests keep theirs.
	 */
	for (uint32_t j = 0; j < v->nskip; j++) {
		kv_err e2 = v1s_requeue(s, prio, v->skip[conn ?
							 v->nskip - 1 - j : j]);

		if (e == KV_OK)
			e = e2;
	}
	v->nskip = 0;
	return e;
}

extern const struct kvs_policy kvs__v1_policy;

/*
 * The waiting phase of a step whose running phase the fast-forward made
 * (core/kvs_ff.c): every running request scheduled for one token, budget
 * tokens left, no preemption, no LoRA limit.  The waiting queue sorted
 * first with priority scheduling: the running phase does not read it, so
 * sorting it after the phase changes nothing.
 */
kv_err
kvs__v1_admit(kvs *s, uint32_t budget)
{
	struct v1s *v = s->pstate;
	kv_err e;

	if (s->pol != &kvs__v1_policy)
		return kvs__fail(s, KV_EINVAL, "admission in a decode run "
				 "needs policy vllm-v1");
	if (kvs_config_of(s)->priority == 1 &&
	    (e = v1s_sort_waiting(s)) != KV_OK)
		return e;
	v->nrun = 0;
	v->loras.n = 0;
	return v1s_waiting_phase(s, v, budget);
}

static kv_err
v1s_schedule(kvs *s, void *state)
{
	struct v1s *v = state;
	uint32_t budget = (uint32_t)kvs_config_of(s)->max_num_batched_tokens;
	bool lora = kvs_config_of(s)->max_loras != KVS_UNSET;
	kv_err e;

	if (kvs_config_of(s)->priority == 1 &&
	    (e = v1s_sort_waiting(s)) != KV_OK)
		return e;
	if ((e = v1s_running_phase(s, v, &budget)) != KV_OK)
		return e;
	v->loras.n = 0;
	for (uint32_t j = 0; lora && j < v->nrun; j++)
		if ((e = kvs__loraset_add(&v->loras,
		    kvs__lora(s, v->run[j].req))) != KV_OK)
			return e;
	if (kvs_current_step(s)->npreempt > 0)
		return KV_OK;
	return v1s_waiting_phase(s, v, budget);
}

const struct kvs_policy kvs__v1_policy = {
	.abi = KVS_ABI,
	.name = "vllm-v1",
	.mode = KVC_VLLM_V1,
	.configure = v1s_configure,
	.init = v1s_init,
	.release = v1s_release,
	.schedule = v1s_schedule,
	.complete = NULL,
};
