/*
 * check_fork.c -- parallel sampling by forked sequences in policy vllm-v0
 * (kvs_set_n, core/kvs_fork.c and core/kvs_v0.c; docs/scheduler.md
 * R110-R119).
 *
 * A seeded random walk adds requests of n = 1..4 and runs them to the
 * end under kvs_audit() after every step, in the four shapes of the
 * policy (chunked prefill off and on, preemption recompute and swap) with
 * and without prefix caching.  Each step is checked against the rules: a
 * group has one sequence until its first token and n after it; its
 * sequences have the root's length, computed count and state; a forked
 * group's decode schedules one token a sequence; the running groups count
 * n each against max_num_seqs.  Every request ends with its output and
 * every block, GPU and CPU, is free again.  Then the exact blocks of one
 * group against n requests of one sequence, and the refusals.
 */
#include "core/kvsched.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#define GPU 40
#define CPU 256
#define MML 48
#define SEQS 8

struct fwalk {
	kvs *s;
	uint64_t rng;
	uint32_t nadded;
};

static uint32_t
frnd(struct fwalk *w, uint32_t n)
{
	w->rng = w->rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(w->rng >> 33) % n;
}

static kvs *
fork_new(bool chunked, bool swap, bool caching, const char *policy,
	 kvc_mode mode)
{
	struct kvs_config sc;
	struct kvc_config kc;
	char why[256];
	kv_err e;
	kvs *s;

	kvs_config_init(&sc);
	snprintf(sc.policy, sizeof(sc.policy), "%s", policy);
	sc.max_num_seqs = SEQS;
	sc.max_num_batched_tokens = chunked ? 32 : 64;
	sc.chunked_prefill = mode == KVC_VLLM_V0 ? chunked : KVS_UNSET;
	sc.preemption = mode == KVC_VLLM_V0 ? swap : KVS_UNSET;
	sc.capacity_check = 0;
	kvc_config_default(&kc, mode);
	kc.block_size = 4;
	kc.gpu_blocks = GPU;
	kc.cpu_blocks = mode == KVC_VLLM_V0 ? CPU : 0;
	kc.max_model_len = MML;
	kc.prefix_caching = caching;
	s = kvs_new(&sc, &kc, &e, why, sizeof(why));
	ck_assert_msg(s != NULL, "kvs_new: %s", why);
	return s;
}

/* The live sequences of r's group; all of them have the root's length,
 * computed count and state. */
static uint32_t
group_live(kvs *s, kvs_req r)
{
	kvc *k = kvs_kv(s);
	int32_t root = kvs_req_seq(s, r);
	uint32_t n = 0;

	for (uint32_t t = 0; t < kvc_nseqs(k); t++) {
		if (kvc_seq_state(k, (int32_t)t) == KVC_DEAD ||
		    kvc_seq_request(k, (int32_t)t) != root)
			continue;
		ck_assert_uint_eq(kvc_seq_len(k, (int32_t)t),
				  kvc_seq_len(k, root));
		ck_assert_uint_eq(kvc_seq_computed(k, (int32_t)t),
				  kvc_seq_computed(k, root));
		ck_assert_int_eq(kvc_seq_state(k, (int32_t)t),
				 kvc_seq_state(k, root));
		n++;
	}
	return n;
}

static void
fwalk_check(struct fwalk *w, const struct kvs_step *st)
{
	char why[512];
	uint32_t nseq = 0;

	ck_assert_msg(kvs_audit(w->s, why, sizeof(why)) == 0, "%s", why);
	for (uint32_t i = 0; i < st->nsched; i++) {
		kvs_req r = st->sched[i].req;

		if (kvs_req_n(w->s, r) > 1 &&
		    kvs_req_status(w->s, r) == KVS_RUNNING &&
		    kvs_req_generated(w->s, r) > 1)
			ck_assert_uint_eq(st->sched[i].ntokens,
					  kvs_req_n(w->s, r));
	}
	for (uint32_t q = KVS_Q_WAITING; q <= KVS_Q_SWAPPED; q++)
		for (uint32_t i = 0; i < kvs_queue_len(w->s, q); i++) {
			kvs_req r = kvs_queue_at(w->s, q, i);
			uint32_t live = group_live(w->s, r);

			if (q == KVS_Q_WAITING)
				continue;
			ck_assert_uint_eq(live, kvs_req_generated(w->s, r) ?
					  kvs_req_n(w->s, r) : 1);
			if (q == KVS_Q_RUNNING)
				nseq += kvs_req_n(w->s, r);
		}
	ck_assert_uint_le(nseq, SEQS);
}

static void
fwalk_add(struct fwalk *w)
{
	uint32_t tok[32], n = 1 + frnd(w, 30), base = frnd(w, 3) * 100;
	kvs_req r;

	for (uint32_t i = 0; i < n; i++)
		tok[i] = base + (i < 8 ? i : frnd(w, 1000));
	ck_assert_int_eq(kvs_add(w->s, tok, n, 1 + frnd(w, 16), 0, &r),
			 KV_OK);
	ck_assert_int_eq(kvs_set_n(w->s, r, 1 + frnd(w, 3)), KV_OK);
	w->nadded++;
}

static void
fwalk_run(bool chunked, bool swap, bool caching, uint64_t seed)
{
	struct fwalk w = { .rng = seed };
	const struct kvs_step *st;
	uint64_t steps = 0, gswap = 0;
	bool grouped = false;
	kvc *k;

	w.s = fork_new(chunked, swap, caching, "vllm-v0", KVC_VLLM_V0);
	k = kvs_kv(w.s);
	while (w.nadded < 300 || kvs_nunfinished(w.s) > 0) {
		if (w.nadded < 300 && frnd(&w, 2) == 0)
			fwalk_add(&w);
		ck_assert_int_eq(kvs_schedule(w.s, &st), KV_OK);
		ck_assert_int_eq(kvs_complete(w.s, NULL, &st), KV_OK);
		fwalk_check(&w, st);
		for (uint32_t i = 0; i < st->nsched; i++)
			grouped |= st->sched[i].ntokens > 1 &&
			    kvs_req_generated(w.s, st->sched[i].req) > 1;
		for (uint32_t i = 0; i < st->npreempt; i++) {
			/* a forked group is swapped, never recomputed */
			if (group_live(w.s, st->preempt[i]) > 1)
				ck_assert(st->preempt_swap[i]);
			gswap += st->preempt_swap[i] &&
			    group_live(w.s, st->preempt[i]) > 1;
		}
		ck_assert_uint_lt(++steps, 200000);
	}
	ck_assert(grouped);	/* some group decoded its sequences */
	ck_assert_uint_gt(gswap, 0);	/* and some group was swapped */
	for (kvs_req r = 0; r < (kvs_req)kvs_nreqs(w.s); r++) {
		ck_assert_int_eq(kvs_req_status(w.s, r), KVS_FINISHED);
		ck_assert_uint_eq(kvs_req_generated(w.s, r),
				  kvs_req_max_output(w.s, r) <
				  MML - kvs_req_prompt_len(w.s, r) ?
				  kvs_req_max_output(w.s, r) :
				  MML - kvs_req_prompt_len(w.s, r));
	}
	ck_assert_uint_eq(kvc_free_blocks(k, 0), GPU);
	ck_assert_uint_eq(kvc_free_cpu(k), CPU);
	kvs_free(w.s);
}

START_TEST(test_fork_random)
{
	for (int shape = 0; shape < 8; shape++)
		fwalk_run(shape & 1, shape & 2, shape & 4,
			  0x5eed0000u + (uint64_t)shape);
}
END_TEST

/* Blocks in use after each step for one request of n = 3 sequences, and
 * for three requests of one sequence with the same prompt (6 tokens,
 * blocks of 4, no prefix caching). */
static void
blocks_used(bool group, uint32_t used[3])
{
	static const uint32_t tok[] = { 0, 1, 2, 3, 4, 5 };
	kvs *s = fork_new(false, false, false, "vllm-v0", KVC_VLLM_V0);
	const struct kvs_step *st;
	kvs_req r;

	for (int i = 0; i < (group ? 1 : 3); i++) {
		ck_assert_int_eq(kvs_add(s, tok, 6, 3, 0, &r), KV_OK);
		if (group)
			ck_assert_int_eq(kvs_set_n(s, r, 3), KV_OK);
	}
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(kvs_step(s, &st), KV_OK);
		used[i] = GPU - kvc_free_blocks(kvs_kv(s), 0);
		if (group && i == 1)
			ck_assert_uint_eq(st->ncow, 2);
	}
	ck_assert_uint_eq(kvs_nunfinished(s), 0);
	kvs_free(s);
}

START_TEST(test_fork_shares_blocks)
{
	uint32_t g[3], f[3];

	blocks_used(true, g);
	blocks_used(false, f);
	/* the prompt once (2 blocks); then each sequence its own last
	 * block, the first one shared: 4 against 6 */
	ck_assert_uint_eq(g[0], 2);
	ck_assert_uint_eq(g[1], 4);
	ck_assert_uint_eq(f[0], 6);
	ck_assert_uint_eq(f[1], 6);
	ck_assert_uint_eq(g[2], 0);
	ck_assert_uint_eq(f[2], 0);
}
END_TEST

START_TEST(test_fork_refused)
{
	static const uint32_t tok[] = { 1, 2, 3 };
	kvs *s = fork_new(false, false, false, "vllm-v1", KVC_VLLM_V1);
	const struct kvs_step *st;
	kvs_req r;

	ck_assert_int_eq(kvs_add(s, tok, 3, 2, 0, &r), KV_OK);
	ck_assert_int_eq(kvs_set_n(s, r, 2), KV_ENOTSUP);
	ck_assert_uint_eq(kvs_req_n(s, r), 1);
	kvs_free(s);
	s = fork_new(false, false, false, "vllm-v0", KVC_VLLM_V0);
	ck_assert_int_eq(kvs_add(s, tok, 3, 2, 0, &r), KV_OK);
	ck_assert_int_eq(kvs_set_n(s, 5, 2), KV_EINVAL);
	ck_assert_int_eq(kvs_set_n(s, r, 2), KV_OK);
	ck_assert_uint_eq(kvs_req_n(s, r), 2);
	ck_assert_int_eq(kvs_step(s, &st), KV_OK);
	ck_assert_int_eq(kvs_set_n(s, r, 3), KV_ESTATE);
	ck_assert_uint_eq(kvs_req_n(s, r), 2);
	kvs_free(s);
}
END_TEST

static Suite *
fork_suite(void)
{
	Suite *s = suite_create("forked parallel sampling");
	TCase *tc = tcase_create("fork");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_fork_random);
	tcase_add_test(tc, test_fork_shares_blocks);
	tcase_add_test(tc, test_fork_refused);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(fork_suite());
	int nfail;

	srunner_run_all(sr, CK_NORMAL);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nfail == 0 ? 0 : 1;
}
