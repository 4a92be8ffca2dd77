/*
 * check_keyed.c -- requests added by key (kvs_add_keyed, kvc_seq_new_keyed;
 * core/kv_v1.c's V1_LAZY blocks) against the same requests added by their
 * token ids.
 *
 * Two vllm-v1 schedulers, built alike, are given the same requests: the
 * first by ids, each prompt beginning with a token no other has (so no
 * block is shared), the second by key.  They run the same steps, single
 * or fast-forwarded, on a pool small enough that requests are preempted
 * and come back to hit their own blocks, with now and then a request
 * aborted.  Every step must schedule, preempt and finish the same
 * requests with the same hits; every request's status, output, length,
 * computed count and block table, and the free blocks, must agree; and
 * kvs_audit (the prefix index included) must hold in both.  The walks
 * must have preempted requests and seen them hit their own blocks.
 */
#include "core/kvsched.h"
#include "core/kv_int.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NREQ 60
#define KMAX 24

static uint64_t rng;
static uint32_t selfhits;	/* waiting requests found with a hit */

static uint32_t
rnd(uint32_t n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng >> 33) % n;
}

static kvs *
kd_new(bool caching, uint32_t seqs, uint32_t gpu)
{
	struct kvs_config sc;
	struct kvc_config kc;
	char why[256];
	kv_err e;
	kvs *s;

	kvs_config_init(&sc);
	snprintf(sc.policy, sizeof(sc.policy), "vllm-v1");
	sc.max_num_seqs = seqs;
	sc.max_num_batched_tokens = 48;
	kvc_config_default(&kc, KVC_VLLM_V1);
	kc.block_size = 4;
	kc.gpu_blocks = gpu;
	kc.max_model_len = 96;
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

/* The two steps must be the same decisions. */
static void
same_step(const struct kvs_step *x, const struct kvs_step *y)
{
	ck_assert_uint_eq(x->nsched, y->nsched);
	ck_assert_uint_eq(x->npreempt, y->npreempt);
	ck_assert_uint_eq(x->nfinish, y->nfinish);
	ck_assert_uint_eq(x->batch_tokens, y->batch_tokens);
	for (uint32_t i = 0; i < x->nsched; i++) {
		ck_assert_int_eq(x->sched[i].req, y->sched[i].req);
		ck_assert_uint_eq(x->sched[i].ntokens, y->sched[i].ntokens);
		ck_assert_uint_eq(x->sched[i].cached, y->sched[i].cached);
		ck_assert_uint_eq(x->sched[i].stale, y->sched[i].stale);
	}
	for (uint32_t i = 0; i < x->npreempt; i++)
		ck_assert_int_eq(x->preempt[i], y->preempt[i]);
	for (uint32_t i = 0; i < x->nfinish; i++)
		ck_assert_int_eq(x->finish[i], y->finish[i]);
}

/* Everything the two schedulers hold must agree. */
static void
same(kvs *a, kvs *b, const char *when)
{
	kvc *ka = kvs_kv(a), *kb = kvs_kv(b);

	ck_assert_uint_eq(kvc_free_blocks(ka, 0), kvc_free_blocks(kb, 0));
	ck_assert_uint_eq(kvs_nreqs(a), kvs_nreqs(b));
	for (kvs_req r = 0; r < (kvs_req)kvs_nreqs(a); r++) {
		int32_t sa = kvs_req_seq(a, r), sb = kvs_req_seq(b, r);
		size_t na = 0, nb = 0;
		const int32_t *ta, *tb;

		ck_assert_int_eq(kvs_req_status(a, r), kvs_req_status(b, r));
		ck_assert_uint_eq(kvs_req_generated(a, r),
				  kvs_req_generated(b, r));
		ck_assert_int_eq(sa < 0, sb < 0);
		if (sa < 0)
			continue;
		ck_assert_uint_eq(kvc_seq_len(ka, sa), kvc_seq_len(kb, sb));
		ck_assert_uint_eq(kvc_seq_computed(ka, sa),
				  kvc_seq_computed(kb, sb));
		ta = kvc_table(ka, sa, 0, &na);
		tb = kvc_table(kb, sb, 0, &nb);
		ck_assert_uint_eq(na, nb);
		ck_assert_msg(na == 0 || memcmp(ta, tb, na * sizeof(*ta)) == 0,
			      "%s: request %d's blocks differ", when, r);
		/* a waiting request's hit on its own blocks */
		if (kvc_seq_state(ka, sa) == KVC_WAITING) {
			size_t ha = 0, hb = 0;

			ck_assert_int_eq(kvc_cached(ka, sa, &ha), KV_OK);
			ck_assert_int_eq(kvc_cached(kb, sb, &hb), KV_OK);
			ck_assert_uint_eq(ha, hb);
			selfhits += ha > 0;
		}
	}
	audit(a, when);
	audit(b, when);
}

struct tally {
	uint32_t preempted, selfhits, spans, aborts, ended;
};

static void
walk(bool caching, uint32_t seqs, uint32_t gpu, uint64_t seed,
     struct tally *t)
{
	kvs *a = kd_new(caching, seqs, gpu);
	kvs *b = kd_new(caching, seqs, gpu);
	uint32_t added = 0, tok[16 * KMAX], col[16], ta[KMAX], tb[KMAX];

	rng = seed;
	for (int iter = 0; iter < 5000; iter++) {
		const struct kvs_step *sa, *sb;
		uint32_t span, k, n;

		if (added < NREQ && rnd(4) == 0) {
			uint32_t p[64], len = 4 + rnd(56), out = 2 + rnd(30);
			kvs_req ra, rb;

			/* the first token is the request's own: no block is
			 * shared; the rest repeat across requests */
			p[0] = 100000 + added;
			for (uint32_t i = 1; i < len; i++)
				p[i] = rnd(6);
			ck_assert_int_eq(kvs_add(a, p, len, out, 0, &ra),
					 KV_OK);
			ck_assert_int_eq(kvs_add_keyed(b, 7777 + added, len,
						       out, 0, &rb), KV_OK);
			ck_assert_int_eq(ra, rb);
			added++;
			continue;
		}
		if (kvs_nunfinished(a) == 0) {
			if (added == NREQ)
				break;
			continue;
		}
		if (rnd(40) == 0) {	/* a client leaves */
			kvs_req r = (kvs_req)rnd(added);

			if (kvs_req_status(a, r) != KVS_FINISHED &&
			    kvs_req_status(a, r) != KVS_IGNORED &&
			    kvs_req_status(a, r) != KVS_ABORTED) {
				ck_assert_int_eq(kvs_abort(a, r), KV_OK);
				ck_assert_int_eq(kvs_abort(b, r), KV_OK);
				t->aborts++;
				same(a, b, "abort");
			}
			continue;
		}
		/* spans whose last step may end requests, or not */
		if (rnd(2) == 0) {
			span = kvs_decode_span_end(a, KMAX, NULL);
			ck_assert_uint_eq(span, kvs_decode_span_end(b, KMAX, NULL));
		} else {
			span = kvs_decode_span(a, KMAX);
			ck_assert_uint_eq(span, kvs_decode_span(b, KMAX));
		}
		n = kvs_queue_len(a, KVS_Q_RUNNING);
		if (span > 0 && n <= 16 && rnd(2) == 0) {
			k = 1 + rnd(span);
			for (uint32_t i = 0; i < n * k; i++)
				tok[i] = rnd(6);
			ck_assert_int_eq(kvs_decode_run(a, k, tok, ta), KV_OK);
			ck_assert_int_eq(kvs_decode_run(b, k, tok, tb), KV_OK);
			ck_assert(memcmp(ta, tb, k * sizeof(*ta)) == 0);
			t->ended += kvs_current_step(a)->nfinish;
			ck_assert_uint_eq(kvs_current_step(a)->nfinish,
					  kvs_current_step(b)->nfinish);
			t->spans++;
			same(a, b, "fast-forward");
			continue;
		}
		ck_assert_int_eq(kvs_schedule(a, &sa), KV_OK);
		ck_assert_int_eq(kvs_schedule(b, &sb), KV_OK);
		t->preempted += sa->npreempt;
		for (uint32_t i = 0; i < 16; i++)
			col[i] = rnd(6);
		ck_assert_int_eq(kvs_complete(a, col, &sa), KV_OK);
		ck_assert_int_eq(kvs_complete(b, col, &sb), KV_OK);
		same_step(sa, sb);
		same(a, b, "step");
	}
	ck_assert_uint_eq(added, NREQ);
	t->selfhits = selfhits;
	kvs_free(a);
	kvs_free(b);
}

START_TEST(keyed_walks)
{
	struct tally t = { 0, 0, 0, 0, 0 };

	selfhits = 0;
	for (uint64_t seed = 1; seed <= 12; seed++)
		walk(seed % 3 != 0, seed % 2 ? 8 : 3, seed % 4 == 0 ? 28 : seed % 4 == 1 ? 40 : 64,
		     seed * 104729, &t);
	fprintf(stderr, "keyed walks: %u preempted, %u self-hits, %u spans, "
		"%u ended by a span, %u aborts\n", t.preempted, t.selfhits,
		t.spans, t.ended, t.aborts);
	/* what the walks are for happened: preemptions, requests back on
	 * their own blocks, fast-forwarded spans, aborts */
	ck_assert_uint_gt(t.preempted, 50);
	ck_assert_uint_gt(t.selfhits, 20);
	ck_assert_uint_gt(t.spans, 50);
	ck_assert_uint_gt(t.ended, 10);
	ck_assert_uint_gt(t.aborts, 10);
}
END_TEST

/*
 * A keyed sequence freed with its blocks cached, then cloned: the copy
 * remembers the blocks it may hit (V1_LAZY), and both find the same hit.
 * Its ids are not kept.
 */
START_TEST(keyed_clone_and_api)
{
	struct kvc_config kc;
	char why[256];
	kv_err e;
	kvc *k, *c;
	int32_t s;
	size_t n = 0, h1 = 0, h2 = 0;
	uint32_t t = 9;

	kvc_config_default(&kc, KVC_VLLM_V1);
	kc.block_size = 4;
	kc.gpu_blocks = 16;
	kc.max_model_len = 64;
	kc.prefix_caching = true;
	k = kvc_new(&kc, &e, why, sizeof(why));
	ck_assert_msg(k != NULL, "kvc_new: %s", why);
	ck_assert_int_eq(kvc_seq_new_keyed(k, 0, 10, &s), KV_EINVAL);
	ck_assert_int_eq(kvc_seq_new_keyed(k, 5, 0, &s), KV_EINVAL);
	ck_assert_int_eq(kvc_seq_new_keyed(k, 5, 21, &s), KV_OK);
	ck_assert_ptr_null(kvc_seq_tokens(k, s, &n));
	ck_assert_uint_eq(n, 21);
	ck_assert_int_eq(kvc_allocate(k, s, 0), KV_OK);
	ck_assert_int_eq(kvc_add_tokens(k, s, &t, 1), KV_OK);
	ck_assert_uint_eq(kvc_seq_len(k, s), 22);
	ck_assert_int_eq(kvc_free_seq(k, s), KV_OK);
	c = kvc_clone(k);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(kvc_cached(k, s, &h1), KV_OK);
	ck_assert_int_eq(kvc_cached(c, s, &h2), KV_OK);
	/* 21 tokens computed: blocks 0..4 full and cached; 21 of 22 may hit */
	ck_assert_uint_eq(h1, 20);
	ck_assert_uint_eq(h2, 20);
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);
	ck_assert_int_eq(kvc_audit(c, why, sizeof(why)), 0);
	kvc_free(c);
	/* the lookup indexed them: a new sequence of the same key hits
	 * them (its chain is taken once block 0's hash is found), one of
	 * another key does not */
	ck_assert_int_eq(kvc_seq_release(k, s), KV_OK);
	ck_assert_int_eq(kvc_seq_new_keyed(k, 5, 13, &s), KV_OK);
	ck_assert_int_eq(kvc_cached(k, s, &h1), KV_OK);
	ck_assert_uint_eq(h1, 12);
	ck_assert_int_eq(kvc_seq_new_keyed(k, 6, 21, &s), KV_OK);
	ck_assert_int_eq(kvc_cached(k, s, &h2), KV_OK);
	ck_assert_uint_eq(h2, 0);
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);
	kvc_free(k);

	/* other modes refuse keys */
	kvc_config_default(&kc, KVC_VLLM_V0);
	kc.block_size = 4;
	kc.gpu_blocks = 16;
	k = kvc_new(&kc, &e, why, sizeof(why));
	ck_assert_msg(k != NULL, "kvc_new: %s", why);
	ck_assert_int_eq(kvc_seq_new_keyed(k, 5, 10, &s), KV_ENOTSUP);
	kvc_free(k);
}
END_TEST

/*
 * A chunk withdrawn from a keyed sequence (priority scheduling preempts
 * it after it was scheduled in the step): its cached blocks carry what
 * they hold of the chunk as a sequence of ids would, so its own hit after
 * the preemption has the same stale tokens.  A keyed sequence's blocks
 * get their marks only when something reads them (v1_lazy_marks): here
 * the withdrawal, before the free.
 */
START_TEST(keyed_withdraw)
{
	struct kvc_config kc;
	char why[256];
	uint32_t tok[21], stale[2] = { 0, 0 };
	size_t hit[2] = { 0, 0 };
	kv_err e;

	kvc_config_default(&kc, KVC_VLLM_V1);
	kc.block_size = 4;
	kc.gpu_blocks = 16;
	kc.max_model_len = 64;
	kc.prefix_caching = true;
	for (uint32_t i = 0; i < 21; i++)
		tok[i] = 7000 + i;
	for (int keyed = 0; keyed < 2; keyed++) {
		kvc *k = kvc_new(&kc, &e, why, sizeof(why));
		int32_t s;

		ck_assert_msg(k != NULL, "kvc_new: %s", why);
		ck_assert_int_eq(keyed ? kvc_seq_new_keyed(k, 5, 21, &s) :
				 kvc_seq_new(k, tok, 21, &s), KV_OK);
		ck_assert_int_eq(kvc_allocate(k, s, 0), KV_OK);
		ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);
		/* positions 10 on not computed: blocks 2 (two slots of KV),
		 * 3 and 4 (none) keep their hashes */
		ck_assert_int_eq(kvc__v1_withdraw(k, s, 10), KV_OK);
		ck_assert_int_eq(kvc_free_seq(k, s), KV_OK);
		ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);
		ck_assert_int_eq(kvc_cached(k, s, &hit[keyed]), KV_OK);
		ck_assert_int_eq(kvc_allocate(k, s, 0), KV_OK);
		ck_assert_int_eq(kvc__v1_stale(k, s, (uint32_t)hit[keyed],
					       &stale[keyed]), KV_OK);
		ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);
		kvc_free(k);
	}
	ck_assert_uint_eq(hit[0], 20);
	ck_assert_uint_eq(hit[1], 20);
	ck_assert_uint_eq(stale[0], 10);
	ck_assert_uint_eq(stale[1], 10);
}
END_TEST

int
main(void)
{
	Suite *su = suite_create("keyed");
	TCase *tc = tcase_create("keyed");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, keyed_walks);
	tcase_add_test(tc, keyed_clone_and_api);
	tcase_add_test(tc, keyed_withdraw);
	suite_add_tcase(su, tc);
	sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
