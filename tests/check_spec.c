/*
 * check_spec.c -- speculative decoding in policy vllm-v1 (core/kvs_spec.c,
 * docs/scheduler.md R81-R99): kvs_propose, the drafts the running phase
 * schedules, and kvs_complete_spec.
 *
 * A seeded random walk runs thousands of steps with drafts and random
 * acceptance under kvs_audit(), checking each step against the rules: an
 * entry verifies no more drafts than were proposed for it since its last
 * step (none after a preemption), at most k, fewer than its tokens; a
 * request whose tokens were all computed gains accepted + 1 tokens, cut
 * by max_output and max_model_len, and is left with C = T - 1; the batch
 * stays within the budget.  Once arrivals stop every request finishes and
 * every block is free again.  Then the refusals and the equivalence of
 * kvs_complete_spec without drafts with kvs_complete.
 */
#include "core/kvsched.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXREQ 4096

struct walk {
	kvs *s;
	uint32_t k, mml, budget;
	uint64_t rng;
	uint32_t prop[MAXREQ];	/* drafts proposed since the last step */
	uint32_t gen[MAXREQ];	/* generated before the step */
	size_t len[MAXREQ], comp[MAXREQ];
	uint64_t verified, accepted;
};

static uint32_t
rnd(struct walk *w, uint32_t n)
{
	w->rng = w->rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(w->rng >> 33) % n;
}

static kvs *
spec_new(uint32_t bs, uint32_t gpu, uint32_t mml, bool caching,
	 int64_t k, int64_t L, int64_t budget, const char *policy)
{
	struct kvs_config sc;
	struct kvc_config kc;
	char why[256];
	kv_err e;
	kvs *s;

	kvs_config_init(&sc);
	snprintf(sc.policy, sizeof(sc.policy), "%s", policy);
	sc.spec_tokens = k;
	sc.lookahead = L;
	sc.max_num_batched_tokens = budget;
	sc.max_num_seqs = budget < 8 ? budget : 8;
	sc.capacity_check = 0;
	kvc_config_default(&kc, KVC_EXACT);
	kc.block_size = bs;
	kc.gpu_blocks = gpu;
	kc.max_model_len = mml;
	kc.prefix_caching = caching;
	s = kvs_new(&sc, &kc, &e, why, sizeof(why));
	ck_assert_msg(s != NULL, "kvs_new: %s", why);
	return s;
}

static void
audit(const kvs *s)
{
	char why[512];

	ck_assert_msg(kvs_audit(s, why, sizeof(why)) == 0, "%s", why);
}

/* Before kvs_complete_spec: each entry's drafts against the proposals. */
static void
walk_check_sched(struct walk *w, const struct kvs_step *st)
{
	uint32_t sum = 0;
	kvc *k = kvs_kv(w->s);

	ck_assert_uint_le(st->batch_tokens, w->budget);
	for (uint32_t i = 0; i < st->nsched; i++) {
		const struct kvs_sched *e = &st->sched[i];
		int32_t q = kvs_req_seq(w->s, e->req);

		sum += e->ntokens;
		ck_assert_uint_le(e->spec, w->prop[e->req]);
		ck_assert_uint_le(e->spec, w->k);
		ck_assert_uint_lt(e->spec, e->ntokens);
		w->prop[e->req] = 0;
		w->gen[e->req] = kvs_req_generated(w->s, e->req);
		w->len[e->req] = kvc_seq_len(k, q);
		w->comp[e->req] = kvc_seq_computed(k, q);
		w->verified += e->spec;
	}
	ck_assert_uint_eq(sum, st->batch_tokens);
	for (uint32_t i = 0; i < st->npreempt; i++)
		w->prop[st->preempt[i]] = 0;
}

/* After it: the tokens each entry yielded. */
static void
walk_check_output(struct walk *w, const struct kvs_step *st,
		  const uint32_t *acc)
{
	for (uint32_t i = 0; i < st->nsched; i++) {
		kvs_req r = st->sched[i].req;
		uint32_t g = kvs_req_generated(w->s, r) - w->gen[r];
		uint32_t want = 0, left, room;

		if (w->comp[r] == w->len[r]) {	/* all computed: samples */
			want = acc[i] + 1;
			left = kvs_req_max_output(w->s, r) - w->gen[r];
			room = w->mml - (uint32_t)w->len[r];
			want = want < left ? want : left;
			want = want < room ? want : room;
			w->accepted += acc[i];
		}
		ck_assert_msg(g == want, "step %llu entry %u: %u tokens, "
			      "want %u", (unsigned long long)st->number, i, g,
			      want);
		if (kvs_req_status(w->s, r) == KVS_RUNNING && want > 0) {
			int32_t q = kvs_req_seq(w->s, r);

			ck_assert_uint_eq(kvc_seq_computed(kvs_kv(w->s), q) + 1,
					  kvc_seq_len(kvs_kv(w->s), q));
		}
	}
}

static void
walk_step(struct walk *w)
{
	const struct kvs_step *st;
	uint32_t acc[256];

	ck_assert_int_eq(kvs_schedule(w->s, &st), KV_OK);
	walk_check_sched(w, st);
	ck_assert_uint_le(st->nsched, 256);
	for (uint32_t i = 0; i < st->nsched; i++)
		acc[i] = rnd(w, 4) == 0 ? st->sched[i].spec :
		    rnd(w, st->sched[i].spec + 1);
	ck_assert_int_eq(kvs_complete_spec(w->s, NULL, acc, &st), KV_OK);
	walk_check_output(w, st, acc);
	audit(w->s);
	/* the drafter: some running requests get up to k drafts */
	for (uint32_t i = 0; i < kvs_queue_len(w->s, KVS_Q_RUNNING); i++) {
		kvs_req r = kvs_queue_at(w->s, KVS_Q_RUNNING, i);
		int32_t q = kvs_req_seq(w->s, r);
		uint32_t n = rnd(w, w->k + 1);
		kv_err e;

		if (rnd(w, 3) == 0)
			continue;	/* no proposal: any drafts stay */
		e = kvs_propose(w->s, r, n);

		if (kvc_seq_computed(kvs_kv(w->s), q) + 1 ==
		    kvc_seq_len(kvs_kv(w->s), q) || n == 0) {
			ck_assert_int_eq(e, KV_OK);
			w->prop[r] = n;
		} else {
			ck_assert_int_eq(e, KV_ESTATE);
		}
	}
}

static void
walk_add(struct walk *w)
{
	uint32_t tok[64], n = 1 + rnd(w, w->mml < 40 ? w->mml - 2 : 38);
	uint32_t base = rnd(w, 3) * 100;	/* shared prefixes */
	kvs_req r;

	for (uint32_t i = 0; i < n; i++)
		tok[i] = base + (i < 8 ? i : rnd(w, 1000));
	ck_assert_int_eq(kvs_add(w->s, tok, n, 1 + rnd(w, 40), 0, &r),
			 KV_OK);
	ck_assert_int_lt(r, MAXREQ);
	w->prop[r] = 0;
}

START_TEST(test_spec_random)
{
	static const uint32_t bss[] = { 1, 4, 16 };
	uint64_t verified = 0, accepted = 0;

	for (int seed = 0; seed < 12; seed++) {
		struct walk *w = calloc(1, sizeof(*w));
		uint32_t bs = bss[seed % 3], gpu;
		uint32_t steps = 0;

		ck_assert_ptr_nonnull(w);
		w->rng = (uint64_t)seed * 7919 + 1;
		w->k = 1 + (uint32_t)seed % 5;
		w->mml = 48;
		w->budget = 16 + rnd(w, 48);
		gpu = 1 + (48 + bs - 1) / bs + 4 * (uint32_t)seed;
		w->s = spec_new(bs, gpu, w->mml, seed % 2 == 0, w->k,
				seed % 3 == 1 ? (int64_t)w->k : 0, w->budget,
				"vllm-v1");
		for (int i = 0; i < 2000; i++, steps++) {
			if (kvs_nreqs(w->s) < MAXREQ - 1 && rnd(w, 3) == 0)
				walk_add(w);
			walk_step(w);
		}
		while (kvs_nunfinished(w->s) > 0 && steps < 200000) {
			walk_step(w);
			steps++;
		}
		ck_assert_uint_eq(kvs_nunfinished(w->s), 0);
		ck_assert_uint_eq(kvc_free_blocks(kvs_kv(w->s), 0), gpu - 1);
		verified += w->verified;
		accepted += w->accepted;
		kvs_free(w->s);
		free(w);
	}
	/* the walk did verify and accept drafts */
	ck_assert_uint_gt(verified, 1000);
	ck_assert_uint_gt(accepted, 500);
}
END_TEST

START_TEST(test_spec_refused)
{
	static const char *const other[] = {
		"vllm-v0", "sarathi", "deepspeed-fastgen", "kvsim"
	};
	struct kvs_config sc;
	struct kvc_config kc;
	char why[256];
	kv_err e;

	for (size_t i = 0; i < sizeof(other) / sizeof(*other); i++) {
		kvs_config_init(&sc);
		snprintf(sc.policy, sizeof(sc.policy), "%s", other[i]);
		sc.spec_tokens = 2;
		kvc_config_default(&kc, KVC_EXACT);
		kc.block_size = 16;
		kc.gpu_blocks = 64;
		kc.max_model_len = 256;
		ck_assert_ptr_null(kvs_new(&sc, &kc, &e, why, sizeof(why)));
		ck_assert_int_eq(e, KV_ECONFIG);
		ck_assert_ptr_nonnull(strstr(why, "speculative"));
		sc.spec_tokens = 0;	/* 0: none, accepted everywhere */
		kvs_free(kvs_new(&sc, &kc, &e, why, sizeof(why)));
		ck_assert_msg(e == KV_OK, "%s: %s", other[i], why);
	}
	kvs_config_init(&sc);
	strcpy(sc.policy, "vllm-v1");
	sc.spec_tokens = -2;
	ck_assert_ptr_null(kvs_new(&sc, &kc, &e, why, sizeof(why)));
	ck_assert_int_eq(e, KV_ECONFIG);
}
END_TEST

START_TEST(test_spec_misuse)
{
	kvs *s = spec_new(4, 32, 64, false, 3, 0, 64, "vllm-v1");
	const struct kvs_step *st;
	uint32_t tok[5] = { 1, 2, 3, 4, 5 }, acc[1] = { 3 };
	kvs_req r;

	ck_assert_int_eq(kvs_add(s, tok, 5, 10, 0, &r), KV_OK);
	ck_assert_int_eq(kvs_propose(s, r, 2), KV_ESTATE);	/* waiting */
	ck_assert_int_eq(kvs_step(s, &st), KV_OK);
	ck_assert_int_eq(kvs_propose(s, r, 4), KV_EINVAL);	/* > k */
	ck_assert_int_eq(kvs_propose(s, 7, 1), KV_ENOENT);
	ck_assert_int_eq(kvs_propose(s, r, 2), KV_OK);
	ck_assert_int_eq(kvs_schedule(s, &st), KV_OK);
	ck_assert_uint_eq(st->sched[0].ntokens, 3);
	ck_assert_uint_eq(st->sched[0].spec, 2);
	ck_assert_int_eq(kvs_propose(s, r, 1), KV_ESTATE);	/* pending */
	/* 3 accepted of 2 verified: refused, nothing changes */
	ck_assert_int_eq(kvs_complete_spec(s, NULL, acc, &st), KV_EINVAL);
	ck_assert_uint_eq(kvs_req_generated(s, r), 1);
	acc[0] = 2;
	ck_assert_int_eq(kvs_complete_spec(s, NULL, acc, &st), KV_OK);
	ck_assert_uint_eq(kvs_req_generated(s, r), 4);
	ck_assert_uint_eq(kvc_seq_len(kvs_kv(s), kvs_req_seq(s, r)), 9);
	ck_assert_uint_eq(kvc_seq_computed(kvs_kv(s), kvs_req_seq(s, r)), 8);
	audit(s);
	kvs_free(s);
}
END_TEST

/* Token ids: entry i's spec + 1 ids at offset sum_{j<i}(spec_j + 1). */
START_TEST(test_spec_token_ids)
{
	kvs *s = spec_new(4, 32, 64, false, 2, 0, 64, "vllm-v1");
	const struct kvs_step *st;
	uint32_t p[3] = { 1, 2, 3 };
	uint32_t ids[4] = { 500, 501, 502, 600 }, acc[2] = { 2, 0 };
	const uint32_t *t;
	size_t n;
	kvs_req a, b;

	ck_assert_int_eq(kvs_add(s, p, 3, 20, 0, &a), KV_OK);
	ck_assert_int_eq(kvs_add(s, p, 3, 20, 0, &b), KV_OK);
	ck_assert_int_eq(kvs_step(s, &st), KV_OK);
	ck_assert_int_eq(kvs_propose(s, a, 2), KV_OK);
	ck_assert_int_eq(kvs_schedule(s, &st), KV_OK);
	ck_assert_uint_eq(st->nsched, 2);
	ck_assert_int_eq(kvs_complete_spec(s, ids, acc, &st), KV_OK);
	t = kvc_seq_tokens(kvs_kv(s), kvs_req_seq(s, a), &n);
	ck_assert_uint_eq(n, 7);
	ck_assert_uint_eq(t[4], 500);
	ck_assert_uint_eq(t[6], 502);
	t = kvc_seq_tokens(kvs_kv(s), kvs_req_seq(s, b), &n);
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(t[4], 600);
	kvs_free(s);
}
END_TEST

/* Without drafts kvs_complete_spec is kvs_complete, step for step. */
START_TEST(test_spec_no_drafts_same)
{
	kvs *a = spec_new(4, 12, 32, true, 0, 0, 16, "vllm-v1");
	kvs *b = spec_new(4, 12, 32, true, 3, 0, 16, "vllm-v1");
	const struct kvs_step *sa, *sb;
	uint32_t tok[20];
	kvs_req r;

	for (uint32_t i = 0; i < 6; i++) {
		for (uint32_t j = 0; j < 20; j++)
			tok[j] = j < 8 ? j : 100 * i + j;
		ck_assert_int_eq(kvs_add(a, tok, 9 + 2 * i, 5 + i, 0, &r),
				 KV_OK);
		ck_assert_int_eq(kvs_add(b, tok, 9 + 2 * i, 5 + i, 0, &r),
				 KV_OK);
	}
	while (kvs_nunfinished(a) > 0) {
		ck_assert_int_eq(kvs_step(a, &sa), KV_OK);
		ck_assert_int_eq(kvs_schedule(b, &sb), KV_OK);
		ck_assert_int_eq(kvs_complete_spec(b, NULL, NULL, &sb),
				 KV_OK);
		ck_assert_uint_eq(sa->nsched, sb->nsched);
		ck_assert_uint_eq(sa->npreempt, sb->npreempt);
		ck_assert_uint_eq(sa->nfinish, sb->nfinish);
		for (uint32_t i = 0; i < sa->nsched; i++) {
			ck_assert_int_eq(sa->sched[i].req, sb->sched[i].req);
			ck_assert_uint_eq(sa->sched[i].ntokens,
					  sb->sched[i].ntokens);
			ck_assert_uint_eq(sb->sched[i].spec, 0);
		}
	}
	ck_assert_uint_eq(kvs_nunfinished(b), 0);
	kvs_free(a);
	kvs_free(b);
}
END_TEST

static Suite *
spec_suite(void)
{
	Suite *s = suite_create("speculative decoding");
	TCase *tc = tcase_create("spec");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_spec_random);
	tcase_add_test(tc, test_spec_refused);
	tcase_add_test(tc, test_spec_misuse);
	tcase_add_test(tc, test_spec_token_ids);
	tcase_add_test(tc, test_spec_no_drafts_same);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(spec_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
