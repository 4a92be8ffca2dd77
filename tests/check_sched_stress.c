/*
 * check_sched_stress.c -- randomized scheduler runs, every policy.
 *
 * Each policy runs episodes until at least KVSIM_SCHED_STEPS steps (default
 * 10^5) have run: a fresh kvs with a random configuration (block sizes,
 * pool sizes, groups, prefix caching, CPU pool, budgets, lookahead, the
 * policy's own knobs), random arrivals (prompts drawn from a few shared
 * prefixes, so prefix caching hits), random aborts, then a drain until
 * every request has ended.  After every step:
 *   - kvs_audit() (kvc_audit() inside: KV block conservation);
 *   - batch tokens <= the token budget, sum of sched[].ntokens ==
 *     batch_tokens, scheduled requests distinct, each n >= 1;
 *   - scheduled requests <= max_num_seqs, running <= max_num_seqs;
 *   - request conservation, checked against the test's own ledger: every
 *     request added and not yet finished or aborted is in exactly one
 *     queue with the matching status, every other in none; a finished
 *     request was scheduled in its step and reached its output length or
 *     max_model_len; a preempted one was not scheduled in its step and
 *     holds no GPU blocks;
 *   - decision/action consistency of every admission the policy made (a
 *     request WAITING or SWAPPED before the step and scheduled by it): on a
 *     clone of the allocator as it was before the step, the admission
 *     verdict (can_allocate, or can_swap_in with the lookahead) is not
 *     NEVER, OK means a trial of the action on a second clone succeeds,
 *     and, except in vllm-v0 (worst case by design), a trial that succeeds
 *     leaving the watermark free means OK; and the allocator did exactly
 *     what the step says: a request's computed count moved by its n (plus a
 *     prefix hit, block-aligned, for an admission).
 * After each drain every block is free again in every group and the CPU
 * pool.  Under FCFS no request may starve: each ends within STARVE_STEPS
 * steps of its arrival (the largest wait seen is printed).
 *
 * Not generated: configurations in which the reference engine itself never
 * finishes (vllm-v0 with prefix caching and a budget under one block, R62;
 * vllm-v0 swapping chunked prefills with a budget under max_model_len,
 * R64.2), and aborts of a SWAPPED request in vllm-v0 with prefix caching
 * (the reference raises, R72: the allocator refuses).  Episodes are short
 * (EPISODE_STEPS) because the consistency check clones the allocator, whose
 * size grows with the requests an episode has seen.
 */
#include "core/kvsched.h"
#include "core/kvspolicy.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Check's ck_assert_* record a checkpoint on every PASSING assertion (a
 * write to its message file): far too slow for millions of checks.  These
 * only call into Check on failure.
 */
#define REQUIRE(cond, ...)                                                  \
	do {                                                                \
		if (!(cond))                                                \
			ck_abort_msg(__VA_ARGS__);                          \
	} while (0)
#define REQUIRE_OK(expr)                                                    \
	do {                                                                \
		kv_err req_e_ = (expr);                                     \
		if (req_e_ != KV_OK)                                        \
			ck_abort_msg("%s: %s", #expr,                       \
				     kv_strerror(req_e_));                  \
	} while (0)

#define MAXREQ 2048		/* requests per episode, at most */
#define EPISODE_STEPS 150	/* steps with arrivals, then a drain */
#define DRAIN_STEPS 40000	/* a drain longer than this is a livelock */
#define STARVE_STEPS 6000	/* FCFS: arrival to end, at most */

struct rng {
	uint64_t s;
};

static uint32_t
rnd(struct rng *r, uint32_t n)
{
	r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
	return n ? (uint32_t)((r->s >> 33) % n) : 0;
}

static uint32_t
rrange(struct rng *r, uint32_t lo, uint32_t hi)
{
	return lo + rnd(r, hi - lo + 1);
}

/* One policy's episode configuration. */
struct ep {
	struct kvs_config sc;
	struct kvc_config kc;
	uint32_t arrive_pct;	/* chance of arrivals per step */
	uint32_t max_unfinished;
	uint32_t max_out;
	bool fcfs;
};

static void
group(struct kvc_config *kc, const char *name, kvc_kind kind, uint32_t win,
      uint32_t bs)
{
	struct kvc_group_config *g = &kc->group[kc->ngroups++];

	snprintf(g->name, sizeof(g->name), "%s", name);
	g->kind = kind;
	g->window = win;
	g->block_size = bs;
}

/* Blocks a lone max_model_len request needs, roughly (pool sizing). */
static uint32_t
alone(const struct kvc_config *kc, uint32_t extra)
{
	uint32_t sum = 0, n = kc->ngroups ? kc->ngroups : 1;

	for (uint32_t g = 0; g < n; g++) {
		uint32_t bs = kc->ngroups && kc->group[g].block_size ?
			      kc->group[g].block_size : kc->block_size;

		sum += (kc->max_model_len + extra + bs - 1) / bs + 2;
	}
	return sum;
}

static void
make_episode(const char *policy, struct rng *r, struct ep *e)
{
	struct kvc_config *kc = &e->kc;
	struct kvs_config *sc = &e->sc;
	static const uint32_t bss[] = { 1, 2, 4, 8, 16 };
	uint32_t bs = bss[rnd(r, 5)], mml = rrange(r, 16, 160), extra;

	memset(e, 0, sizeof(*e));
	kvs_config_init(sc);
	snprintf(sc->policy, sizeof(sc->policy), "%s", policy);
	sc->max_num_seqs = rrange(r, 1, 12);
	sc->max_num_batched_tokens = sc->max_num_seqs + rnd(r, 96);
	e->arrive_pct = rrange(r, 5, 60);
	e->max_unfinished = rrange(r, 2, 24);
	e->max_out = rrange(r, 1, 40);
	e->fcfs = true;

	if (strcmp(policy, "vllm-v0") == 0) {
		kvc_config_default(kc, KVC_VLLM_V0);
		kc->prefix_caching = rnd(r, 2);
		if (rnd(r, 2)) {
			kc->cpu_blocks = rrange(r, 8, 200);
			sc->preemption = rnd(r, 2);
		}
		sc->chunked_prefill = rnd(r, 2);
		sc->lookahead = rnd(r, 3) ? 0 : rrange(r, 1, 3);
	} else if (strcmp(policy, "vllm-v1") == 0) {
		kvc_config_default(kc, KVC_VLLM_V1);
		kc->prefix_caching = rnd(r, 2);
		if (rnd(r, 3) == 0) {
			group(kc, "full", KVC_FULL, 0, bs);
			group(kc, "swa", KVC_SLIDING, rrange(r, 1, 40), bs);
		} else if (rnd(r, 2) == 0) {
			group(kc, "full", KVC_FULL, 0, bs);
			group(kc, "mamba", KVC_STATE, 0, bs);
			kc->defer_same_step_state_hits = rnd(r, 2);
		}
		sc->chunked_prefill = rnd(r, 3) ? 1 : 0;
		if (rnd(r, 3) == 0)
			sc->long_prefill_threshold = rrange(r, 1, 32);
		if (rnd(r, 4) == 0) {
			sc->priority = 1;
			e->fcfs = false;
		}
	} else if (strcmp(policy, "deepspeed-fastgen") == 0) {
		kvc_config_default(kc, KVC_DEEPSPEED);
		if (rnd(r, 2)) {
			group(kc, "a", KVC_FULL, 0, bs);
			group(kc, "b", KVC_FULL, 0, bss[rnd(r, 5)]);
		}
	} else {
		kvc_config_default(kc, KVC_EXACT);
		kc->prefix_caching = rnd(r, 2);
		switch (rnd(r, 4)) {
		case 0:
			group(kc, "full", KVC_FULL, 0, bs);
			group(kc, "swa", KVC_SLIDING, rrange(r, 1, 40), bs);
			break;
		case 1:
			group(kc, "full", KVC_FULL, 0, bs);
			group(kc, "mamba", KVC_STATE, 0, bs);
			break;
		default:
			break;
		}
		if (rnd(r, 3) == 0)
			kc->watermark = 0.05;
		sc->lookahead = rnd(r, 3) ? 0 : rrange(r, 1, 3);
		if (strcmp(policy, "sarathi") == 0) {
			sc->chunk_size = sc->max_num_batched_tokens;
			sc->max_num_batched_tokens = KVS_UNSET;
		} else {
			if (rnd(r, 2))
				kc->cpu_blocks = rrange(r, 4, 200);
			sc->preemption = kc->cpu_blocks && rnd(r, 3) == 0 ?
					 1 : rnd(r, 2) ? KVS_UNSET : 0;
			if (rnd(r, 3) == 0)
				sc->long_prefill_threshold = rrange(r, 1, 32);
			if (rnd(r, 5) == 0) {
				sc->chunked_prefill = 0;
				sc->long_prefill_threshold = KVS_UNSET;
				sc->max_num_batched_tokens = mml +
							     rnd(r, 32);
			}
			if (rnd(r, 4) == 0) {
				sc->priority = 1;
				e->fcfs = false;
			}
		}
	}
	/*
	 * vLLM v0 with prefix caching cuts a chunk to whole blocks of the
	 * budget left (R62): a budget under one block schedules nothing,
	 * ever.  vLLM hangs there too; keep the budget at a block or more.
	 */
	if (kc->mode == KVC_VLLM_V0 && kc->prefix_caching &&
	    sc->max_num_batched_tokens < bs)
		sc->max_num_batched_tokens = bs + rnd(r, 32);
	/*
	 * vLLM v0 swaps a chunked prefill back in only when its whole rest
	 * fits the budget (R64.2): a smaller budget never resumes it (a real
	 * vLLM v0 hang).  Keep swap runs' budgets at max_model_len.
	 */
	if (kc->mode == KVC_VLLM_V0 && sc->preemption == 1)
		sc->max_num_batched_tokens = mml + rnd(r, 32);
	if (sc->chunked_prefill == 0 && sc->max_num_batched_tokens < mml)
		sc->max_num_batched_tokens = mml + rnd(r, 16);
	kc->block_size = bs;
	kc->max_model_len = mml;
	extra = 2 * (sc->lookahead > 0 ? (uint32_t)sc->lookahead : 0);
	kc->gpu_blocks = alone(kc, extra) + rnd(r, 3 * alone(kc, extra) + 1);
	kc->gpu_blocks += kc->gpu_blocks / 20 + 4;	/* watermark room */
}

/* ---- per-request ledger --------------------------------------------- */

struct led {
	uint32_t arrive, prompt, out;
	uint8_t live;		/* added, not ended */
};

struct run {
	const char *policy;
	kvs *s;
	kvc_mode mode;
	struct ep ep;
	struct led led[MAXREQ];
	uint32_t nreq;
	uint64_t step, steps, max_wait;
	uint64_t admissions, preemptions, swaps, hits;
	/* before-step snapshot */
	uint8_t st0[MAXREQ];
	uint32_t c0[MAXREQ];
	uint8_t mark[MAXREQ];
};

static uint32_t
budget_of(const struct run *u)
{
	return (uint32_t)kvs_config_of(u->s)->max_num_batched_tokens;
}

static void
add_requests(struct run *u, struct rng *r)
{
	static const uint32_t fam[4][8] = {
		{ 7, 7, 7, 7, 7, 7, 7, 7 },
		{ 1, 2, 3, 4, 5, 6, 7, 8 },
		{ 42, 43, 44, 45, 46, 47, 48, 49 },
		{ 9, 8, 7, 6, 5, 4, 3, 2 },
	};
	uint32_t tok[512], n = rrange(r, 1, 3), mml;

	mml = kvc_config_of(kvs_kv(u->s))->max_model_len;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t len, f = rnd(r, 5), out;
		kvs_req q;

		if (kvs_nunfinished(u->s) >= u->ep.max_unfinished ||
		    u->nreq >= MAXREQ)
			return;
		/* Mostly short prompts, sometimes up to max_model_len - 1. */
		len = rnd(r, 4) ? rrange(r, 1, mml / 3 + 1)
				: rrange(r, 1, mml - 1);
		for (uint32_t j = 0; j < len; j++)
			tok[j] = f < 4 ? fam[f][(j / 8) % 8] * 100 + j % 8 +
					 (j >= 24 ? u->nreq * 1000 : 0)
				       : u->nreq * 1000 + j;
		out = rrange(r, 1, u->ep.max_out);
		REQUIRE_OK(kvs_add(u->s, tok, len, out, (int32_t)rnd(r,
				 3), &q));
		REQUIRE((uint32_t)q == u->nreq, "request id %d", q);
		u->led[q].arrive = (uint32_t)u->step;
		u->led[q].prompt = len;
		u->led[q].out = out;
		u->led[q].live = 1;
		u->nreq++;
	}
}

static const char *
status_name(kvs_status s)
{
	switch (s) {
	case KVS_WAITING:
		return "waiting";
	case KVS_RUNNING:
		return "running";
	case KVS_SWAPPED:
		return "swapped";
	case KVS_FINISHED:
		return "finished";
	default:
		return "aborted";
	}
}

/* Request conservation against the ledger. */
static void
check_conservation(struct run *u)
{
	static const kvs_status want[3] = { KVS_WAITING, KVS_RUNNING,
					    KVS_SWAPPED };
	uint32_t live = 0;

	memset(u->mark, 0, u->nreq);
	for (int q = 0; q < 3; q++)
		for (uint32_t i = 0; i < kvs_queue_len(u->s, (kvs_queue)q);
		     i++) {
			kvs_req r = kvs_queue_at(u->s, (kvs_queue)q, i);

			REQUIRE(r >= 0 && (uint32_t)r < u->nreq,
				      "bad request %d in queue %d", r, q);
			REQUIRE(!u->mark[r], "%s step %llu: request %d "
				      "in two queues", u->policy,
				      (unsigned long long)u->step, r);
			u->mark[r] = 1;
			REQUIRE(kvs_req_status(u->s, r) == want[q],
				      "%s step %llu: request %d in queue %d "
				      "is %s", u->policy,
				      (unsigned long long)u->step, r, q,
				      status_name(kvs_req_status(u->s, r)));
		}
	for (uint32_t r = 0; r < u->nreq; r++) {
		REQUIRE(u->mark[r] == u->led[r].live, "%s step %llu: "
			      "request %u %s but %s", u->policy,
			      (unsigned long long)u->step, r,
			      u->led[r].live ? "unfinished" : "ended",
			      u->mark[r] ? "queued" : "in no queue");
		live += u->led[r].live;
	}
	REQUIRE(live == kvs_nunfinished(u->s), "%u live, kvs says %u",
		live, kvs_nunfinished(u->s));
}

/* The admission verdict of r on clone c (WAITING or SWAPPED before). */
static void
check_admission(struct run *u, kvc *c, kvs_req r)
{
	const struct kvc_config *kc = kvc_config_of(c);
	int32_t seq = kvs_req_seq(u->s, r);
	uint32_t L = u->st0[r] == KVS_SWAPPED ?
		     (uint32_t)(kvs_config_of(u->s)->lookahead > 0 ?
				kvs_config_of(u->s)->lookahead : 0) : 0;
	uint32_t wm = (uint32_t)(kc->watermark * (double)kc->gpu_blocks);
	kvc_verdict v;
	kvc *t;
	kv_err e;
	bool ok;

	if (u->st0[r] == KVS_SWAPPED)
		REQUIRE_OK(kvc_can_swap_in(c, seq, L, &v));
	else
		REQUIRE_OK(kvc_can_allocate(c, seq, 0, &v));
	REQUIRE(v != KVC_VERDICT_NEVER, "%s step %llu: admitted "
		      "request %d whose verdict was NEVER", u->policy,
		      (unsigned long long)u->step, r);
	t = kvc_clone(c);
	REQUIRE(t != NULL, "clone");
	e = u->st0[r] == KVS_SWAPPED ? kvc_swap_in(t, seq, L)
				     : kvc_allocate(t, seq, 0);
	ok = e == KV_OK;
	if (v == KVC_VERDICT_OK)
		REQUIRE(ok, "%s step %llu: request %d: verdict OK, "
			      "action failed (%s)", u->policy,
			      (unsigned long long)u->step, r, kvc_errmsg(t));
	if (ok && u->mode != KVC_VLLM_V0 && kvc_free_blocks(t, 0) >= wm)
		REQUIRE(v == KVC_VERDICT_OK, "%s step %llu: request "
			      "%d: action fits, verdict %d", u->policy,
			      (unsigned long long)u->step, r, (int)v);
	kvc_free(t);
}

static void
one_step(struct run *u, struct rng *rg)
{
	const struct kvs_config *c = kvs_config_of(u->s);
	const struct kvs_step *st;
	kvc *k = kvs_kv(u->s), *pre = NULL;
	uint32_t bs0 = kvc_config_of(k)->group[0].block_size;
	uint32_t tok = 0, mml = kvc_config_of(k)->max_model_len;
	char why[256];
	kv_err e;

	(void)rg;
	for (uint32_t r = 0; r < u->nreq; r++) {
		u->st0[r] = (uint8_t)kvs_req_status(u->s, (kvs_req)r);
		u->c0[r] = (uint32_t)kvc_seq_computed(k, kvs_req_seq(u->s,
							(kvs_req)r));
	}
	if (kvs_queue_len(u->s, KVS_Q_WAITING) +
	    kvs_queue_len(u->s, KVS_Q_SWAPPED) > 0) {
		pre = kvc_clone(k);
		REQUIRE(pre != NULL, "clone");
	}
	e = kvs_schedule(u->s, &st);
	REQUIRE(e == KV_OK, "%s step %llu: schedule: %s (%s)",
		      u->policy, (unsigned long long)u->step, kv_strerror(e),
		      kvs_errmsg(u->s));
	REQUIRE(kvs_audit(u->s, why, sizeof(why)) == 0, "%s step %llu "
		      "after schedule: audit: %s", u->policy,
		      (unsigned long long)u->step, why);

	/* The batch. */
	memset(u->mark, 0, u->nreq);
	REQUIRE(st->nsched <= (uint32_t)c->max_num_seqs, "%s step %llu: %u "
		"scheduled, max_num_seqs %lld", u->policy,
		(unsigned long long)u->step, st->nsched,
		(long long)c->max_num_seqs);
	REQUIRE(kvs_queue_len(u->s, KVS_Q_RUNNING) <=
		(uint32_t)c->max_num_seqs, "%s step %llu: %u running",
		u->policy, (unsigned long long)u->step,
		kvs_queue_len(u->s, KVS_Q_RUNNING));
	for (uint32_t i = 0; i < st->nsched; i++) {
		kvs_req r = st->sched[i].req;
		int32_t seq = kvs_req_seq(u->s, r);
		uint32_t n = st->sched[i].ntokens, c1, d;

		REQUIRE(r >= 0 && (uint32_t)r < u->nreq && !u->mark[r],
			      "%s step %llu: request %d scheduled twice",
			      u->policy, (unsigned long long)u->step, r);
		u->mark[r] = 1;
		REQUIRE(n >= 1, "%s: request %d scheduled for 0 tokens",
			u->policy, r);
		tok += n;
		REQUIRE(kvs_req_status(u->s, r) == KVS_RUNNING &&
			      kvc_seq_state(k, seq) == KVC_RUNNING, "%s step "
			      "%llu: scheduled request %d not running",
			      u->policy, (unsigned long long)u->step, r);
		c1 = (uint32_t)kvc_seq_computed(k, seq);
		REQUIRE(c1 >= u->c0[r] + n, "%s step %llu: request %d "
			      "scheduled for %u tokens, computed %u -> %u",
			      u->policy, (unsigned long long)u->step, r, n,
			      u->c0[r], c1);
		d = c1 - u->c0[r] - n;
		if (d != 0) {
			/* Only an admission may add a prefix hit. */
			REQUIRE(u->st0[r] == KVS_WAITING &&
				      kvc_config_of(k)->prefix_caching &&
				      d % bs0 == 0 &&
				      c1 <= kvc_seq_len(k, seq), "%s step "
				      "%llu: request %d scheduled for %u, "
				      "computed %u -> %u", u->policy,
				      (unsigned long long)u->step, r, n,
				      u->c0[r], c1);
			u->hits += d;
		}
		if (u->st0[r] == KVS_WAITING || u->st0[r] == KVS_SWAPPED) {
			u->admissions++;
			if (pre != NULL)
				check_admission(u, pre, r);
		}
	}
	REQUIRE(tok == st->batch_tokens, "batch_tokens %u, sum %u",
		st->batch_tokens, tok);
	if (!(u->mode == KVC_VLLM_V0 && kvc_config_of(k)->prefix_caching))
		REQUIRE(tok <= budget_of(u), "%s step %llu: %u tokens, "
			      "budget %u", u->policy,
			      (unsigned long long)u->step, tok, budget_of(u));
	for (uint32_t i = 0; i < st->npreempt; i++) {
		kvs_req r = st->preempt[i];
		kvs_status want = st->preempt_swap[i] ? KVS_SWAPPED
						      : KVS_WAITING;

		REQUIRE(!u->mark[r], "%s step %llu: request %d both "
			      "scheduled and preempted", u->policy,
			      (unsigned long long)u->step, r);
		REQUIRE(kvs_req_status(u->s, r) == want, "%s step %llu: "
			      "preempted %d is %s", u->policy,
			      (unsigned long long)u->step, r,
			      status_name(kvs_req_status(u->s, r)));
		u->preemptions++;
		u->swaps += st->preempt_swap[i];
	}
	kvc_free(pre);
	check_conservation(u);

	e = kvs_complete(u->s, NULL, &st);
	REQUIRE(e == KV_OK, "%s step %llu: complete: %s (%s)",
		      u->policy, (unsigned long long)u->step, kv_strerror(e),
		      kvs_errmsg(u->s));
	for (uint32_t i = 0; i < st->nfinish; i++) {
		kvs_req r = st->finish[i];
		uint32_t gen = kvs_req_generated(u->s, r);

		REQUIRE(u->mark[r], "%s step %llu: %d finished without "
			      "being scheduled", u->policy,
			      (unsigned long long)u->step, r);
		REQUIRE(kvs_req_status(u->s, r) == KVS_FINISHED,
			"%s: finished %d is %s", u->policy, r,
			status_name(kvs_req_status(u->s, r)));
		REQUIRE(gen == u->led[r].out ||
			      u->led[r].prompt + gen >= mml, "%s: request "
			      "%d finished after %u of %u tokens", u->policy,
			      r, gen, u->led[r].out);
		REQUIRE(u->led[r].live, "%s: %d finished twice", u->policy,
			r);
		u->led[r].live = 0;
		if (u->ep.fcfs) {
			uint64_t w = u->step - u->led[r].arrive;

			if (w > u->max_wait)
				u->max_wait = w;
			REQUIRE(w <= STARVE_STEPS, "%s: request %d waited "
				      "%llu steps (FCFS)", u->policy, r,
				      (unsigned long long)w);
		}
	}
	REQUIRE(kvs_audit(u->s, why, sizeof(why)) == 0, "%s step %llu "
		      "after complete: audit: %s", u->policy,
		      (unsigned long long)u->step, why);
	check_conservation(u);
	u->step++;
	u->steps++;
}

static void
maybe_abort(struct run *u, struct rng *r)
{
	kvs_req q;

	if (u->nreq == 0 || rnd(r, 100) != 0)
		return;
	q = (kvs_req)rnd(r, u->nreq);
	if (!u->led[q].live) {
		REQUIRE(kvs_abort(u->s, q) != KV_OK, "abort of ended %d", q);
		return;
	}
	/*
	 * vLLM v0 raises on freeing a SWAPPED request with prefix caching
	 * (docs/replay.md R72): outside the contract, the allocator refuses.
	 */
	if (u->mode == KVC_VLLM_V0 &&
	    kvc_config_of(kvs_kv(u->s))->prefix_caching &&
	    kvs_req_status(u->s, q) == KVS_SWAPPED)
		return;
	REQUIRE_OK(kvs_abort(u->s, q));
	REQUIRE(kvs_req_status(u->s, q) == KVS_ABORTED, "aborted %d",
		q);
	u->led[q].live = 0;
	check_conservation(u);
}

/* Every block free again (after a drain). */
static void
check_empty(struct run *u)
{
	kvc *k = kvs_kv(u->s);
	const struct kvc_config *kc = kvc_config_of(k);
	uint32_t G = kc->gpu_blocks;

	for (uint32_t g = 0; g < kvc_ngroups(k); g++) {
		uint32_t f = kvc_free_blocks(k, g);

		if (u->mode == KVC_VLLM_V1)
			ck_assert_uint_eq(f, G - 1);
		else
			REQUIRE(f == G || (u->mode == KVC_VLLM_V0 &&
					       f + 1 == G), "%s: %u of %u "
				      "blocks free after the drain",
				      u->policy, f, G);
	}
	ck_assert_uint_eq(kvc_free_cpu(k), kc->cpu_blocks);
}

/* What a stuck episode looks like (printed before the failure). */
static void
dump(struct run *u)
{
	kvc *k = kvs_kv(u->s);
	const struct kvc_config *kc = kvc_config_of(k);
	const struct kvs_config *c = kvs_config_of(u->s);

	fprintf(stderr, "%s: G=%u cpu=%u bs=%u mml=%u groups=%u caching=%d "
		"wm=%g S=%lld B=%lld chunk=%lld L=%lld pre=%lld thr=%lld "
		"chunked=%lld prio=%lld defer=%d\n", u->policy, kc->gpu_blocks,
		kc->cpu_blocks, kc->block_size, kc->max_model_len, kc->ngroups,
		kc->prefix_caching, kc->watermark, (long long)c->max_num_seqs,
		(long long)c->max_num_batched_tokens,
		(long long)c->chunk_size, (long long)c->lookahead,
		(long long)c->preemption, (long long)c->long_prefill_threshold,
		(long long)c->chunked_prefill, (long long)c->priority,
		kc->defer_same_step_state_hits);
	for (uint32_t g = 0; g < kvc_ngroups(k); g++)
		fprintf(stderr, "  group %u free %u\n", g,
			kvc_free_blocks(k, g));
	fprintf(stderr, "  cpu free %u\n", kvc_free_cpu(k));
	for (int q = 0; q < 3; q++)
		for (uint32_t i = 0; i < kvs_queue_len(u->s, (kvs_queue)q);
		     i++) {
			kvs_req r = kvs_queue_at(u->s, (kvs_queue)q, i);
			int32_t seq = kvs_req_seq(u->s, r);

			fprintf(stderr, "  q%d req %d T=%zu C=%zu gen=%u/%u\n",
				q, r, kvc_seq_len(k, seq),
				kvc_seq_computed(k, seq),
				kvs_req_generated(u->s, r), u->led[r].out);
		}
}

/* A cost hook under which swapping is almost free (kvsim episodes). */
static int64_t
cheap_swap(void *ctx, const struct kvs_victim *v, enum kvs_preempt_mode m)
{
	(void)ctx;
	return m == KVS_PREEMPT_SWAP ? 1 : (int64_t)v->computed + 1;
}

static uint64_t
steps_wanted(void)
{
	const char *e = getenv("KVSIM_SCHED_STEPS");

	return e != NULL && atoll(e) > 0 ? (uint64_t)atoll(e) : 100000;
}

static void
run_policy(const char *policy, uint64_t seed)
{
	struct run *u = calloc(1, sizeof(*u));
	uint64_t want = steps_wanted(), episodes = 0, rejected = 0;
	struct rng r = { seed };

	ck_assert_ptr_nonnull(u);
	u->policy = policy;
	while (u->steps < want) {
		char why[256];
		kv_err e;
		uint64_t drain;

		make_episode(policy, &r, &u->ep);
		u->mode = u->ep.kc.mode;
		u->s = kvs_new(&u->ep.sc, &u->ep.kc, &e, why, sizeof(why));
		if (u->s == NULL) {
			/* A combination the policy refuses: never all. */
			ck_assert_int_eq(e, KV_ECONFIG);
			REQUIRE(++rejected < 20 * (episodes + 1),
				      "%s: configurations keep being "
				      "refused: %s", policy, why);
			continue;
		}
		episodes++;
		if (strcmp(policy, "kvsim") == 0 && rnd(&r, 3) == 0) {
			struct kvs_kvsim_cost h = { NULL, cheap_swap };

			REQUIRE_OK(kvs_kvsim_set_cost(u->s, &h));
		}
		memset(u->led, 0, sizeof(u->led));
		u->nreq = 0;
		u->step = 0;
		for (uint32_t i = 0; i < EPISODE_STEPS; i++) {
			if (rnd(&r, 100) < u->ep.arrive_pct)
				add_requests(u, &r);
			maybe_abort(u, &r);
			one_step(u, &r);
		}
		for (drain = 0; kvs_nunfinished(u->s) > 0; drain++) {
			if (drain >= DRAIN_STEPS)
				dump(u);
			REQUIRE(drain < DRAIN_STEPS, "%s: %u requests "
				      "never finish", policy,
				      kvs_nunfinished(u->s));
			one_step(u, &r);
		}
		check_empty(u);
		kvs_free(u->s);
		u->s = NULL;
	}
	printf("%s: %llu steps, %llu episodes (%llu configs refused), "
	       "%llu admissions, %llu preemptions (%llu swaps), %llu hit "
	       "tokens, longest FCFS wait %llu steps\n", policy,
	       (unsigned long long)u->steps, (unsigned long long)episodes,
	       (unsigned long long)rejected,
	       (unsigned long long)u->admissions,
	       (unsigned long long)u->preemptions,
	       (unsigned long long)u->swaps, (unsigned long long)u->hits,
	       (unsigned long long)u->max_wait);
	ck_assert_uint_gt(u->admissions, 0);
	free(u);
}

START_TEST(stress_v0)
{
	run_policy("vllm-v0", 1);
}
END_TEST

START_TEST(stress_v1)
{
	run_policy("vllm-v1", 2);
}
END_TEST

START_TEST(stress_sarathi)
{
	run_policy("sarathi", 3);
}
END_TEST

START_TEST(stress_fastgen)
{
	run_policy("deepspeed-fastgen", 4);
}
END_TEST

START_TEST(stress_kvsim)
{
	run_policy("kvsim", 5);
}
END_TEST

static Suite *
sched_stress_suite(void)
{
	Suite *s = suite_create("sched_stress");
	TCase *tc = tcase_create("policies");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, stress_v0);
	tcase_add_test(tc, stress_v1);
	tcase_add_test(tc, stress_sarathi);
	tcase_add_test(tc, stress_fastgen);
	tcase_add_test(tc, stress_kvsim);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(sched_stress_suite());
	int nf;

	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
