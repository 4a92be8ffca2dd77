/*
 * check_ff.c -- steady decode made k steps at once (kvs_decode_span,
 * kvs_decode_run, kvs_decode_plan; core/kvs_ff.c) against the same k
 * steps made one by one.
 *
 * Two schedulers, built alike, are given the same requests (prompts that
 * share prefixes, so the prefix cache indexes and evicts) and the same
 * steps.  Whenever kvs_decode_span finds steady steps ahead, a random
 * number of them is made at once in the first and one by one in the
 * second, with the same tokens (requests waiting behind a full batch of
 * max_num_seqs too); then every request's status, output,
 * length, computed count and block table, the free blocks, the step
 * number and the prefix hit of a probe prompt must agree, the blocks each
 * step took must be those the single steps took, and kvs_audit must hold
 * in both.  A span one step too long is refused and changes nothing.
 * Run with prefix caching on and off, on a pool small enough that the
 * span is often cut by the free blocks.
 */
#include "core/kvsched.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPU 48
#define MML 96
#define NREQ 40
#define KMAX 40

static uint64_t rng;

static uint32_t
rnd(uint32_t n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng >> 33) % n;
}

static kvs *
ff_new(bool caching, uint32_t seqs)
{
	struct kvs_config sc;
	struct kvc_config kc;
	char why[256];
	kv_err e;
	kvs *s;

	kvs_config_init(&sc);
	snprintf(sc.policy, sizeof(sc.policy), "vllm-v1");
	sc.max_num_seqs = seqs;
	sc.max_num_batched_tokens = 64;
	kvc_config_default(&kc, KVC_VLLM_V1);
	kc.block_size = 4;
	kc.gpu_blocks = GPU;
	kc.max_model_len = MML;
	kc.prefix_caching = caching;
	s = kvs_new(&sc, &kc, &e, why, sizeof(why));
	ck_assert_msg(s != NULL, "kvs_new: %s", why);
	return s;
}

static void
audit(const kvs *s, const char *when)
{
	char why[512];
	int bad = kvs_audit(s, why, sizeof(why));

	ck_assert_msg(bad == 0, "%s: audit %d: %s", when, bad, why);
}

/* Everything the two schedulers hold must agree. */
static void
same(kvs *a, kvs *b, const char *when)
{
	kvc *ka = kvs_kv(a), *kb = kvs_kv(b);
	uint32_t probe[24];
	size_t ha = 0, hb = 0;

	ck_assert_uint_eq(kvc_free_blocks(ka, 0), kvc_free_blocks(kb, 0));
	ck_assert_uint_eq(kvs_current_step(a)->number,
			  kvs_current_step(b)->number);
	for (kvs_req r = 0; r < (kvs_req)kvs_nreqs(a); r++) {
		int32_t sa = kvs_req_seq(a, r), sb = kvs_req_seq(b, r);

		ck_assert_int_eq(kvs_req_status(a, r), kvs_req_status(b, r));
		ck_assert_uint_eq(kvs_req_generated(a, r),
				  kvs_req_generated(b, r));
		ck_assert_int_eq(sa < 0, sb < 0);
		if (sa < 0)
			continue;
		ck_assert_uint_eq(kvc_seq_len(ka, sa), kvc_seq_len(kb, sb));
		ck_assert_uint_eq(kvc_seq_computed(ka, sa),
				  kvc_seq_computed(kb, sb));
		{
			size_t na = 0, nb = 0;
			const int32_t *ta = kvc_table(ka, sa, 0, &na);
			const int32_t *tb = kvc_table(kb, sb, 0, &nb);

			ck_assert_uint_eq(na, nb);
			ck_assert_msg(na == 0 || memcmp(ta, tb, na *
				      sizeof(*ta)) == 0,
				      "%s: request %d's blocks differ", when, r);
		}
	}
	/* the prefix index: a probe of the shared prefixes hits alike */
	for (uint32_t i = 0; i < 24; i++)
		probe[i] = i % 8;
	{
		kvs_req pa, pb;

		ck_assert_int_eq(kvs_add(a, probe, 24, 4, 0, &pa), KV_OK);
		ck_assert_int_eq(kvs_add(b, probe, 24, 4, 0, &pb), KV_OK);
		ck_assert_int_eq(kvc_cached(ka, kvs_req_seq(a, pa), &ha),
				 KV_OK);
		ck_assert_int_eq(kvc_cached(kb, kvs_req_seq(b, pb), &hb),
				 KV_OK);
		ck_assert_uint_eq(ha, hb);
		ck_assert_int_eq(kvs_abort(a, pa), KV_OK);
		ck_assert_int_eq(kvs_abort(b, pb), KV_OK);
	}
	audit(a, when);
	audit(b, when);
}

/* One single step of s with tokens tok[i] for running request i. */
static const struct kvs_step *
single(kvs *s, const uint32_t *tok)
{
	const struct kvs_step *st;

	ck_assert_int_eq(kvs_schedule(s, &st), KV_OK);
	ck_assert_int_eq(kvs_complete(s, tok, &st), KV_OK);
	return st;
}

/*
 * The finishes of single step sb are the next of the run's list (sa's,
 * from *f on); returns how many of them are r.
 */
static uint32_t
next_finishes(const struct kvs_step *sa, const struct kvs_step *sb,
	      uint32_t *f, kvs_req r)
{
	uint32_t hit = 0;

	for (uint32_t i = 0; i < sb->nfinish; i++) {
		ck_assert_uint_lt(*f, sa->nfinish);
		ck_assert_int_eq(sa->finish[(*f)++], sb->finish[i]);
		hit += sb->finish[i] == r;
	}
	return hit;
}

/*
 * A planner for kvs_decode_plan: it checks what it is told against the
 * scheduler's own answers (the span, its last flag, every running
 * request's handle, sequence, counts and end) and asks for `want` steps.
 */
struct tplan {
	const kvs *s;
	uint32_t k;		/* the span it must be told */
	bool last;
	const uint32_t *left;	/* each request's end, by running order */
	uint32_t want;
	uint32_t *tok, *taken, *freed;
	uint32_t calls;
};

static uint32_t
tplan(void *arg, const struct kvs_running *r, uint32_t n, uint32_t k,
      bool last, struct kvs_decode_bufs *b)
{
	struct tplan *x = arg;
	const kvc *kc = kvs_kv((kvs *)x->s);

	x->calls++;
	ck_assert_uint_eq(k, x->k);
	ck_assert(last == x->last);
	ck_assert_uint_eq(n, kvs_queue_len(x->s, KVS_Q_RUNNING));
	for (uint32_t i = 0; i < n; i++) {
		size_t nb;

		ck_assert_int_eq(r[i].req, kvs_queue_at(x->s, KVS_Q_RUNNING,
							i));
		ck_assert_int_eq(r[i].seq, kvs_req_seq(x->s, r[i].req));
		ck_assert_uint_eq(r[i].computed,
				  kvc_seq_computed(kc, r[i].seq));
		ck_assert_uint_eq(r[i].tokens, kvc_seq_len(kc, r[i].seq));
		ck_assert_uint_eq(r[i].tokens, r[i].computed + 1);
		(void)kvc_table(kc, r[i].seq, 0, &nb);
		ck_assert_uint_eq(r[i].blocks, nb);
		ck_assert_uint_eq(r[i].generated,
				  kvs_req_generated(x->s, r[i].req));
		ck_assert_uint_eq(r[i].ends_at, x->left[i]);
	}
	b->tok = x->tok;
	b->taken = x->taken;
	b->freed = x->freed;
	return x->want;
}

/*
 * The span of KVS_ENDS_ANY found anew from what the scheduler shows:
 * up to the end of the last request, as long as the blocks the requests
 * take up to their ends are free; *last: whether its last step ends one.
 */
static uint32_t
span_any(const kvs *s, const uint32_t *left, uint32_t n, bool *last)
{
	const kvc *kc = kvs_kv((kvs *)s);
	uint32_t k = 0, most = 0;

	for (uint32_t i = 0; i < n; i++)
		most = left[i] > most ? left[i] : most;
	for (uint32_t kk = 1; kk <= KMAX && kk <= most + 1; kk++) {
		uint64_t need = 0;

		for (uint32_t i = 0; i < n; i++) {
			int32_t q = kvs_req_seq(s, kvs_queue_at(s,
						KVS_Q_RUNNING, i));
			uint32_t steps = left[i] < kk ? left[i] + 1 : kk;
			uint64_t b = (kvc_seq_computed(kc, q) + steps + 3) / 4;
			size_t nb;

			(void)kvc_table(kc, q, 0, &nb);
			need += b > nb ? b - nb : 0;
		}
		if (need > kvc_free_blocks(kc, 0))
			break;
		k = kk;
	}
	*last = false;
	for (uint32_t i = 0; i < n && k > 0; i++)
		*last = *last || left[i] == k - 1;
	return k;
}

/* The walks' steps where kvs_decode_ready said no. */
static uint32_t notready;

static void
walk(bool caching, uint32_t seqs, uint64_t seed, uint32_t *spans,
     uint32_t *cut, uint32_t *queued, uint32_t *ended, uint32_t *planned,
     uint32_t *through)
{
	kvs *a = ff_new(caching, seqs), *b = ff_new(caching, seqs);
	uint32_t added = 0, tok[8 * KMAX], col[8], taken[KMAX], freed[KMAX];
	uint32_t outs[NREQ + 4200], left[8];	/* outs: by handle (the
						 * probes take some) */

	rng = seed;
	for (int iter = 0; iter < 4000; iter++) {
		uint32_t n = kvs_queue_len(a, KVS_Q_RUNNING), span, send, k;
		uint32_t made, f, sany = 0, early = 0;
		bool last, lany = false, plan;
		enum kvs_ends ends;
		struct tplan x;
		const struct kvs_step *sa, *sb = NULL;

		if (added < NREQ && rnd(6) == 0) {
			uint32_t p[40], len = 4 + rnd(30), fam = rnd(3);
			uint32_t out = 2 + rnd(40);
			kvs_req ra, rb;

			for (uint32_t i = 0; i < len; i++)
				p[i] = i < 12 ? fam * 100 + i % 8 :
				    1000 + rnd(50);
			ck_assert_int_eq(kvs_add(a, p, len, out, 0, &ra),
					 KV_OK);
			ck_assert_int_eq(kvs_add(b, p, len, out, 0, &rb),
					 KV_OK);
			ck_assert_int_lt(ra, NREQ + 4200);
			outs[ra] = out;
			added++;
			continue;
		}
		if (kvs_nunfinished(a) == 0) {
			if (added == NREQ)
				break;
			continue;
		}
		/* each running request's end, from what the scheduler shows:
		 * the step whose token makes its output or max_model_len */
		for (uint32_t i = 0; i < n && i < 8; i++) {
			kvs_req h = kvs_queue_at(a, KVS_Q_RUNNING, i);
			uint32_t g = kvs_req_generated(a, h);
			size_t T = kvc_seq_len(kvs_kv(a), kvs_req_seq(a, h));

			left[i] = g < outs[h] && T < MML ? outs[h] - g - 1 : 0;
			if (T < MML && MML - (uint32_t)T - 1 < left[i])
				left[i] = MML - (uint32_t)T - 1;
		}
		span = kvs_decode_span(a, KMAX);
		ck_assert_uint_eq(span, kvs_decode_span(b, KMAX));
		send = kvs_decode_span_end(a, KMAX, &last);
		ck_assert_uint_eq(send, kvs_decode_span_end(b, KMAX, NULL));
		/* the engine's test alone: where it says no, no span */
		ck_assert(kvs_decode_ready(a) == kvs_decode_ready(b));
		if (!kvs_decode_ready(a)) {
			ck_assert_uint_eq(send, 0);
			notready++;
		}
		/* a span that may end requests is the one that may not, or
		 * one step longer: the step that ends them */
		ck_assert(send == span || (send == span + 1 && send <= KMAX));
		ck_assert(last == (send == span + 1));
		if (send > 0 && kvs_queue_len(a, KVS_Q_WAITING) == 0)
			sany = span_any(a, left, n, &lany);
		else if (send > 0) {	/* something waits: KVS_ENDS_LAST */
			sany = send;
			lany = last;
		}
		ends = (enum kvs_ends)rnd(3);
		plan = rnd(2) == 0;
		if (ends == KVS_ENDS_ANY && !plan)
			plan = true;	/* the plan call's alone */
		if (ends == KVS_ENDS_LAST)
			span = send;
		else if (ends == KVS_ENDS_ANY) {
			span = sany;
			last = lany;
		}
		if (span == 0) {	/* a step of both, ids by step */
			for (uint32_t i = 0; i < 8; i++)
				col[i] = 500 + (uint32_t)iter + i;
			single(a, col);
			single(b, col);
			same(a, b, "single step");
			continue;
		}
		(*spans)++;
		if (span < KMAX)
			(*cut)++;
		if (kvs_queue_len(a, KVS_Q_WAITING) > 0)
			(*queued)++;
		k = 1 + rnd(span);
		for (uint32_t i = 0; i < n; i++)
			for (uint32_t j = 0; j < k; j++)
				tok[i * k + j] = 2000 + rnd(20);
		/* one step too many is refused, changing nothing */
		if (send < KMAX) {
			ck_assert_int_eq(kvs_decode_run(a, send + 1, NULL,
							NULL), KV_EINVAL);
			same(a, b, "refused span");
		}
		/* the same with the plan call: told the span the search
		 * finds, asking one step more is refused, 0 makes none */
		x = (struct tplan){ .s = a, .k = span,
				    .last = ends != KVS_ENDS_NONE && last,
				    .left = left, .tok = tok, .taken = taken,
				    .freed = freed };
		memset(freed, 0xff, sizeof(freed));
		if (plan) {
			if (rnd(4) == 0) {
				x.want = span + 1;
				ck_assert_int_eq(kvs_decode_plan(a, KMAX, ends,
					tplan, &x, &made), KV_EINVAL);
				ck_assert_uint_eq(made, 0);
				x.want = 0;
				ck_assert_int_eq(kvs_decode_plan(a, KMAX, ends,
					tplan, &x, &made), KV_OK);
				ck_assert_uint_eq(made, 0);
				same(a, b, "refused plan");
			}
			x.want = k;
			ck_assert_int_eq(kvs_decode_plan(a, KMAX, ends, tplan,
							 &x, &made), KV_OK);
			ck_assert_uint_eq(made, k);
			ck_assert_uint_gt(x.calls, 0);
			(*planned)++;
		} else {
			ck_assert_int_eq(kvs_decode_run(a, k, tok, taken),
					 KV_OK);
		}
		sa = kvs_current_step(a);
		ck_assert_uint_eq(sa->nsched, 0);
		/* the same steps one by one: step j's batch is the requests
		 * not ended before it, each its token of step j; its
		 * finishes are the next of the run's list */
		f = 0;
		for (uint32_t j = 0; j < k; j++) {
			uint32_t before = kvc_free_blocks(kvs_kv(b), 0), mid;
			uint32_t m = 0;

			for (uint32_t i = 0; i < n; i++)
				if (left[i] >= j)
					col[m++] = tok[i * k + j];
			ck_assert_uint_eq(m, kvs_queue_len(b, KVS_Q_RUNNING));
			/* the blocks the step took, before its finishes */
			ck_assert_int_eq(kvs_schedule(b, &sb), KV_OK);
			mid = kvc_free_blocks(kvs_kv(b), 0);
			ck_assert_uint_eq(taken[j], before - mid);
			ck_assert_int_eq(kvs_complete(b, col, &sb), KV_OK);
			if (plan)	/* and those its finishes freed */
				ck_assert_uint_eq(freed[j], kvc_free_blocks(
					kvs_kv(b), 0) - mid);
			(void)next_finishes(sa, sb, &f, -1);
			early += j + 1 < k && sb->nfinish > 0;
		}
		ck_assert_uint_eq(f, sa->nfinish);
		/* only a span of KVS_ENDS_ANY ends requests before its last
		 * step; the others, at their last only when told so */
		if (ends != KVS_ENDS_ANY)
			ck_assert((sa->nfinish > 0) == (last && k == send));
		ck_assert(early == 0 || (ends == KVS_ENDS_ANY &&
					 kvs_queue_len(a, KVS_Q_WAITING) == 0));
		*ended += sb->nfinish > 0;
		*through += early > 0;
		same(a, b, "fast-forward");
	}
	ck_assert_uint_eq(added, NREQ);
	kvs_free(a);
	kvs_free(b);
}

START_TEST(ff_walks)
{
	notready = 0;
	uint32_t spans = 0, cut = 0, queued = 0, ended = 0, planned = 0;
	uint32_t through = 0;

	/* max_num_seqs 8, and 3: requests wait behind a full batch */
	for (uint64_t seed = 1; seed <= 16; seed++)
		walk(seed % 2 == 0, seed % 4 < 2 ? 8 : 3, seed * 7919, &spans,
		     &cut, &queued, &ended, &planned, &through);
	/* the walks met spans, spans cut short by the free blocks or by a
	 * request's end, spans with requests waiting, and spans whose last
	 * step ended requests */
	ck_assert_uint_gt(spans, 50);
	ck_assert_uint_gt(cut, 10);
	ck_assert_uint_gt(queued, 10);
	ck_assert_uint_gt(ended, 20);
	ck_assert_uint_gt(planned, 20);
	/* and spans that went on past requests they ended */
	ck_assert_uint_gt(through, 20);
	/* and steps the engine's test alone ruled out */
	ck_assert_uint_gt(notready, 10);
}
END_TEST

START_TEST(ff_not_steady)
{
	kvs *s = ff_new(true, 8);
	uint32_t p[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	kvs_req r;

	/* nothing running; then a prefill ahead: no span, run refused */
	ck_assert(!kvs_decode_ready(NULL));
	ck_assert(!kvs_decode_ready(s));
	ck_assert_uint_eq(kvs_decode_span(s, 8), 0);
	ck_assert_int_eq(kvs_add(s, p, 8, 5, 0, &r), KV_OK);
	ck_assert_uint_eq(kvs_decode_span(s, 8), 0);
	ck_assert_int_eq(kvs_decode_run(s, 1, NULL, NULL), KV_EINVAL);
	single(s, NULL);	/* the prefill: one token out */
	ck_assert(kvs_decode_ready(s));
	/* 5 outputs: 1 done, the span stops before the step that ends it,
	 * or at it */
	ck_assert_uint_eq(kvs_decode_span(s, 8), 3);
	ck_assert_uint_eq(kvs_decode_span_end(s, 8, NULL), 4);
	ck_assert_int_eq(kvs_decode_run(s, 5, NULL, NULL), KV_EINVAL);
	ck_assert_int_eq(kvs_decode_run(s, 3, NULL, NULL), KV_OK);
	ck_assert_uint_eq(kvs_req_generated(s, r), 4);
	ck_assert_uint_eq(kvs_decode_span(s, 8), 0);
	ck_assert_uint_eq(kvs_decode_span_end(s, 8, NULL), 1);
	single(s, NULL);
	ck_assert_int_eq(kvs_req_status(s, r), KVS_FINISHED);
	audit(s, "end");
	/* the same request again, its last step made at once */
	ck_assert_int_eq(kvs_add(s, p, 8, 5, 0, &r), KV_OK);
	single(s, NULL);
	ck_assert_int_eq(kvs_decode_run(s, 4, NULL, NULL), KV_OK);
	ck_assert_int_eq(kvs_req_status(s, r), KVS_FINISHED);
	ck_assert_uint_eq(kvs_req_generated(s, r), 5);
	ck_assert_uint_eq(kvs_current_step(s)->nfinish, 1);
	ck_assert_int_eq(kvs_current_step(s)->finish[0], r);
	ck_assert_uint_eq(kvs_nunfinished(s), 0);
	audit(s, "end at once");
	kvs_free(s);
}
END_TEST

/*
 * A run whose last step admits (kvs_decode_bufs' admit): the planner's
 * callbacks add a held request to the first scheduler at the last step's
 * start, see the step record list what the waiting phase scheduled, and
 * give each admitted request its first token.  With `on`, the run may go
 * on past the admission (more), and its new last step admit a second
 * held request.
 */
struct aplan {
	kvs *s;
	const uint32_t *p[2];	/* the held prompts */
	uint32_t len[2], out[2], want, admits, scheduled;
	uint32_t nadm[2], tk[2], at[2], adm_taken;
	kvs_req r[2];
	uint32_t *tok, *taken, *freed;
	struct kvs_sched sched[2][4];
	/* with `on`: rows of stride tokens; the steps planned so far;
	 * what more was told (the requests that go on, the steps offered)
	 * and the steps it added */
	bool on;
	uint32_t stride, total, mores, nj, offered, added, again;
	struct kvs_running joined[2];
};

static kv_err
aplan_admit(void *arg)
{
	struct aplan *x = arg;
	uint32_t a = x->admits++;

	ck_assert_uint_lt(a, 2);
	return kvs_add(x->s, x->p[a], x->len[a], x->out[a], 0, &x->r[a]);
}

static kv_err
aplan_scheduled(void *arg)
{
	struct aplan *x = arg;
	const struct kvs_step *st = kvs_current_step(x->s);
	uint32_t a = x->scheduled++;

	ck_assert_uint_eq(x->scheduled, x->admits);
	ck_assert_uint_le(st->nsched, 1);
	x->nadm[a] = st->nsched;
	x->tk[a] = x->adm_taken;
	memcpy(x->sched[a], st->sched, st->nsched * sizeof(*st->sched));
	return KV_OK;
}

static uint32_t
aplan_first(void *arg, kvs_req r)
{
	(void)arg;
	return 3000u + (uint32_t)r;
}

/* more: the steps told, now and then all of them, or none; now and then
 * the new last step admits the second held request */
static uint32_t
aplan_more(void *arg, const struct kvs_running *r, uint32_t n, uint32_t k,
	   bool last, struct kvs_decode_bufs *b)
{
	struct aplan *x = arg;
	uint32_t room = x->stride - x->total;

	(void)last;
	x->mores++;
	ck_assert_uint_eq(x->mores, x->admits);
	ck_assert_uint_le(n, 1);
	for (uint32_t i = 0; i < n; i++) {
		ck_assert_int_eq(r[i].req, x->r[x->admits - 1]);
		ck_assert_uint_eq(r[i].start, x->total);
		/* its first token, or (a chunk left one) not yet */
		ck_assert_uint_le(r[i].generated, 1);
		x->joined[x->nj++] = r[i];
	}
	x->offered = k;
	b->admit = NULL;
	if (k > room)
		k = room;
	if (k == 0)
		return 0;
	k = rnd(5) == 0 ? 0 : rnd(3) == 0 ? k : 1 + rnd(k);
	if (k > 0 && x->admits == 1 && rnd(3) == 0) {
		b->admit = aplan_admit;
		x->at[1] = x->total + k - 1;
		x->again++;
	}
	x->total += k;
	x->added += k;
	return k;
}

static uint32_t
aplan(void *arg, const struct kvs_running *r, uint32_t n, uint32_t k,
      bool last, struct kvs_decode_bufs *b)
{
	struct aplan *x = arg;

	(void)r;
	(void)n;
	(void)last;
	if (x->want > k)
		x->want = k;
	x->at[0] = x->want - 1;
	x->total = x->want;
	b->tok = x->tok;
	b->taken = x->taken;
	b->freed = x->freed;
	b->admit = aplan_admit;
	b->scheduled = aplan_scheduled;
	b->first = aplan_first;
	b->arg = x;
	b->adm_taken = &x->adm_taken;
	if (x->on) {
		b->stride = x->stride;
		b->more = aplan_more;
	}
	return x->want;
}

/*
 * Random runs whose last step admits a request held back until then,
 * against the same steps made one by one with the request added before
 * the last: the blocks each step takes (the last's running phase and its
 * admission apart), the admission the step record lists, the finishes
 * (an admitted request may end with its first token) and everything the
 * schedulers hold must agree.  Prompts long enough to be chunked by the
 * budget and a pool small enough to refuse some admissions are met.
 * With `on`, the run goes on past the admission for the steps more adds
 * (kvs_decode_bufs' more), the admitted request running with the rest,
 * and the single steps go on alike.
 */
static void
admits(bool on)
{
	uint32_t runs = 0, admitted = 0, chunked = 0, refused = 0;
	uint32_t first_end = 0, goes_on = 0, after = 0, told_all = 0;
	uint32_t twice = 0;

	for (uint64_t seed = 1; seed <= 12; seed++) {
		kvs *a = ff_new(seed % 2 == 0, 8), *b = ff_new(seed % 2 == 0,
							       8);
		uint32_t tok[10 * 2 * KMAX], taken[2 * KMAX], freed[2 * KMAX];
		uint32_t outs[4400], left[8], held[2][MML], col[12];

		rng = seed * 104729 + on;
		for (int iter = 0; iter < 1500; iter++) {
			uint32_t n = kvs_queue_len(a, KVS_Q_RUNNING), made, k;
			uint32_t f = 0, stride;
			bool lany;
			struct aplan x;
			const struct kvs_step *sa, *sb;

			if (n < 6 && rnd(3) == 0) {	/* one joins both */
				uint32_t p[40], l = 4 + rnd(30), out;
				kvs_req ra, rb;

				for (uint32_t i = 0; i < l; i++)
					p[i] = i < 12 ? rnd(3) * 100 + i % 8 :
					    1000 + rnd(50);
				out = 2 + rnd(30);
				ck_assert_int_eq(kvs_add(a, p, l, out, 0,
							 &ra), KV_OK);
				ck_assert_int_eq(kvs_add(b, p, l, out, 0,
							 &rb), KV_OK);
				outs[ra] = out;
				continue;
			}
			for (uint32_t i = 0; i < n; i++) {
				kvs_req h = kvs_queue_at(a, KVS_Q_RUNNING, i);
				uint32_t g = kvs_req_generated(a, h);
				size_t T = kvc_seq_len(kvs_kv(a),
						       kvs_req_seq(a, h));

				left[i] = g < outs[h] && T < MML ?
				    outs[h] - g - 1 : 0;
				if (T < MML && MML - (uint32_t)T - 1 < left[i])
					left[i] = MML - (uint32_t)T - 1;
			}
			k = kvs_queue_len(a, KVS_Q_WAITING) == 0 &&
			    kvs_decode_span_end(a, KMAX, NULL) > 0 ?
			    span_any(a, left, n, &lany) : 0;
			if (n == 0 || k == 0 || !kvs_decode_ready(a)) {
				for (uint32_t i = 0; i < 12; i++)
					col[i] = 500 + (uint32_t)iter + i;
				if (kvs_nunfinished(a) > 0) {
					single(a, col);
					single(b, col);
				}
				continue;
			}
			k = 1 + rnd(k);
			stride = on ? 2 * KMAX : k;
			x = (struct aplan){ .s = a, .want = k, .tok = tok,
					    .taken = taken, .freed = freed,
					    .on = on, .stride = stride };
			/* the held requests: a prefix shared or not, now
			 * and then longer than the budget left, or their
			 * output one token */
			for (uint32_t h = 0; h < 2; h++) {
				x.p[h] = held[h];
				x.len[h] = rnd(4) == 0 ? 50 + rnd(40) :
				    4 + rnd(30);
				x.out[h] = rnd(5) == 0 ? 1 : 2 + rnd(30);
				for (uint32_t i = 0; i < x.len[h]; i++)
					held[h][i] = i < 12 ?
					    rnd(3) * 100 + i % 8 :
					    1000 + rnd(50);
			}
			for (uint32_t i = 0; i < n + 2; i++)
				for (uint32_t j = 0; j < stride; j++)
					tok[i * stride + j] = 2000 + rnd(20);
			ck_assert_int_eq(kvs_decode_plan(a, KMAX, KVS_ENDS_ANY,
							 aplan, &x, &made),
					 KV_OK);
			ck_assert_uint_eq(made, k + x.added);
			ck_assert_uint_eq(made, x.total);
			ck_assert_uint_ge(x.admits, 1);
			ck_assert_uint_eq(x.scheduled, x.admits);
			for (uint32_t h = 0; h < x.admits; h++)
				outs[x.r[h]] = x.out[h];
			sa = kvs_current_step(a);
			/* the record lists the last step's admissions */
			ck_assert_uint_eq(sa->nsched,
					  x.at[x.admits - 1] + 1 == made ?
					  x.nadm[x.admits - 1] : 0);
			runs++;
			goes_on += x.added > 0;
			after += x.added;
			told_all += x.added > 0 && x.added == x.offered;
			twice += x.admits == 2;
			/* the same one by one, each held request added
			 * before its admission step; after it, those
			 * admitted run last, in turn */
			for (uint32_t j = 0; j < made; j++) {
				uint32_t before = kvc_free_blocks(kvs_kv(b), 0);
				uint32_t m = 0, mid, h = x.admits;
				kvs_req rb;

				for (uint32_t i = 0; i < n; i++)
					if (left[i] >= j)
						col[m++] = tok[i * stride + j];
				for (uint32_t q = 0; q < x.nj; q++)
					if (j >= x.joined[q].start &&
					    x.joined[q].ends_at >= j)
						col[m++] = tok[(n + q) *
							       stride + j];
				for (uint32_t c = 0; c < x.admits; c++)
					if (x.at[c] == j)
						h = c;
				if (h < x.admits) {
					ck_assert_int_eq(kvs_add(b, x.p[h],
								 x.len[h],
								 x.out[h], 0,
								 &rb), KV_OK);
					ck_assert_int_eq(rb, x.r[h]);
				}
				ck_assert_int_eq(kvs_schedule(b, &sb), KV_OK);
				mid = kvc_free_blocks(kvs_kv(b), 0);
				if (h == x.admits) {
					ck_assert_uint_eq(taken[j], before - mid);
					ck_assert_uint_eq(sb->nsched, m);
				} else {
					ck_assert_uint_eq(taken[j] + x.tk[h],
							  before - mid);
					ck_assert_uint_eq(sb->nsched,
							  m + x.nadm[h]);
					for (uint32_t i = 0; i < x.nadm[h]; i++) {
						const struct kvs_sched *e =
						    &sb->sched[m + i];

						ck_assert_int_eq(e->req,
							x.sched[h][i].req);
						ck_assert_uint_eq(e->ntokens,
							x.sched[h][i].ntokens);
						ck_assert_uint_eq(e->cached,
							x.sched[h][i].cached);
						ck_assert_uint_eq(e->stale,
							x.sched[h][i].stale);
						chunked += e->ntokens <
							   x.len[h];
						col[m + i] = aplan_first(NULL,
									 e->req);
					}
					admitted += x.nadm[h];
					refused += x.nadm[h] == 0;
				}
				ck_assert_int_eq(kvs_complete(b, col, &sb),
						 KV_OK);
				ck_assert_uint_eq(freed[j], kvc_free_blocks(
					kvs_kv(b), 0) - mid);
				first_end += next_finishes(sa, sb, &f,
					h < x.admits ? x.r[h] : -1);
			}
			ck_assert_uint_eq(f, sa->nfinish);
			same(a, b, on ? "admission, on" : "admission");
		}
		kvs_free(a);
		kvs_free(b);
	}
	/* runs admitted requests, whole and in chunks, and refused some
	 * for want of blocks; some ended with their first token; with
	 * `on`, many went on, some for every step offered, some to a
	 * second admission */
	ck_assert_uint_gt(runs, 500);
	ck_assert_uint_gt(admitted, 300);
	ck_assert_uint_gt(chunked, 50);
	ck_assert_uint_gt(refused, 50);
	ck_assert_uint_gt(first_end, 50);
	if (on) {
		ck_assert_uint_gt(goes_on, 300);
		ck_assert_uint_gt(after, 1000);
		ck_assert_uint_gt(told_all, 50);
		ck_assert_uint_gt(twice, 50);
	}
}

START_TEST(ff_admits)
{
	admits(false);
}
END_TEST

START_TEST(ff_admits_on)
{
	admits(true);
}
END_TEST

/*
 * The prefix hit of a request looked up step after step (kv_v1.c's
 * v1_hit_memo) against a fresh walk: a random life of sequences that
 * share prefixes (admitted, decoding, freed, their blocks reused and
 * their hashes evicted) on a pool of 24 blocks; before each change a
 * waiting sequence's hit and its admission in k must be those of a clone
 * of k, whose lookups start with nothing remembered.
 */
START_TEST(ff_hit_memo)
{
	struct kvc_config kc;
	int32_t live[16], wait = -1;
	uint32_t nlive = 0, tok[48], fam[16], wfam = 0;
	kv_err e;
	char why[256];
	kvc *k;
	uint32_t checks = 0, hits = 0;

	kvc_config_default(&kc, KVC_VLLM_V1);
	kc.block_size = 4;
	kc.gpu_blocks = 24;
	kc.max_model_len = 64;
	kc.prefix_caching = true;
	k = kvc_new(&kc, &e, why, sizeof(why));
	ck_assert_msg(k != NULL, "kvc_new: %s", why);
	rng = 42;
	for (int iter = 0; iter < 6000; iter++) {
		uint32_t op = rnd(4);

		if (wait < 0) {	/* a new waiting sequence */
			uint32_t len = 5 + rnd(30);

			wfam = rnd(3);
			for (uint32_t i = 0; i < len; i++)
				tok[i] = i < 20 ? wfam * 100 + i : rnd(40);
			ck_assert_int_eq(kvc_seq_new(k, tok, len, &wait),
					 KV_OK);
		}
		{
			kvc *c = kvc_clone(k);
			size_t h1 = 0, h2 = 0;
			kv_err a, b;

			ck_assert_ptr_nonnull(c);
			ck_assert_int_eq(kvc_cached(k, wait, &h1), KV_OK);
			ck_assert_int_eq(kvc_cached(c, wait, &h2), KV_OK);
			ck_assert_uint_eq(h1, h2);
			hits += h1 > 0;
			checks++;
			if (op == 0 && nlive < 16) {	/* admit it */
				size_t na = 0, nb = 0;
				const int32_t *ta, *tb;

				a = kvc_allocate(k, wait, 0);
				b = kvc_allocate(c, wait, 0);
				ck_assert_int_eq(a, b);
				ta = kvc_table(k, wait, 0, &na);
				tb = kvc_table(c, wait, 0, &nb);
				ck_assert_uint_eq(na, nb);
				ck_assert(na == 0 ||
					  memcmp(ta, tb, na * sizeof(*ta)) == 0);
				if (a == KV_OK) {
					fam[nlive] = wfam;
					live[nlive++] = wait;
					wait = -1;
				}
			}
			kvc_free(c);
		}
		if (op == 1 && nlive > 0) {	/* one decodes a token: its
						 * family's next, the waiting
						 * one's hit can grow */
			uint32_t i = rnd(nlive);
			int32_t q = live[i];
			uint32_t p = (uint32_t)kvc_seq_len(k, q);
			uint32_t t = p < 20 ? fam[i] * 100 + p : rnd(40);

			if (kvc_seq_len(k, q) + 1 < 64 &&
			    kvc_add_tokens(k, q, &t, 1) == KV_OK)
				(void)kvc_allocate(k, q, 1);
		}
		if (op >= 2 && nlive > 0) {	/* one ends */
			uint32_t i = rnd(nlive);

			ck_assert_int_eq(kvc_free_seq(k, live[i]), KV_OK);
			ck_assert_int_eq(kvc_seq_release(k, live[i]), KV_OK);
			live[i] = live[--nlive];
			fam[i] = fam[nlive];
		}
	}
	/* lookups were made, and some of them hit */
	ck_assert_uint_gt(checks, 5000);
	ck_assert_uint_gt(hits, 500);
	kvc_free(k);
}
END_TEST

int
main(void)
{
	Suite *su = suite_create("ff");
	TCase *tc = tcase_create("decode_run");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, ff_walks);
	tcase_add_test(tc, ff_not_steady);
	tcase_add_test(tc, ff_admits);
	tcase_add_test(tc, ff_admits_on);
	tcase_add_test(tc, ff_hit_memo);
	suite_add_tcase(su, tc);
	sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
