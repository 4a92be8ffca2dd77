/*
 * check_replica_pp.c -- pipeline parallel's batches in flight in a replica
 * (sim/replica_pp.h, docs/scheduler.md R122), its timeline pinned by hand.
 *
 * A vllm-v1 replica with 2 stages and a constant step time of 10 ms (the
 * whole model; 5 ms a stage) is driven as the run's loop drives it, and
 * after every step end the clock and each request's tokens must be the
 * ones derived in the comments: batches are scheduled while fewer than 2
 * are in flight (each enters the first stage when it frees), their
 * tokens come back two stages after they enter, and a request in a
 * batch in flight is not scheduled again, while a prompt's next chunk
 * is.  replica_check() holds after every call.
 */
#include "sim/replica.h"
#include "sim/replica_pp.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000LL

struct pp_drive {
	struct kvs_config sc;
	struct kvc_config kc;
	struct cost_model cm;
	replica *rp;
	rpt *rep;
	uint32_t tok[64];
	int64_t now;
};

static void
pp_open(struct pp_drive *d, uint32_t pp, int64_t budget)
{
	const struct kvs_policy *p = kvs_builtin_policy("vllm-v1");
	struct replica_cfg rc;
	char why[512];

	memset(d, 0, sizeof(*d));
	kvc_config_default(&d->kc, p->mode);
	d->kc.block_size = 16;
	d->kc.gpu_blocks = 64;
	d->kc.max_model_len = 512;
	kvs_config_init(&d->sc);
	snprintf(d->sc.policy, sizeof(d->sc.policy), "vllm-v1");
	d->sc.max_num_seqs = 4;
	d->sc.max_num_batched_tokens = budget;
	d->cm.pp = pp;
	for (uint32_t i = 0; i < 64; i++)
		d->tok[i] = 100 + i;
	memset(&rc, 0, sizeof(rc));
	rc.sc = &d->sc;
	rc.kc = &d->kc;
	rc.policy = p;
	rc.cm = &d->cm;
	rc.step_ns = 10 * MS;
	rc.vocab = 32000;
	rc.check = true;
	d->rp = replica_new(&rc, why, sizeof(why));
	ck_assert_msg(d->rp != NULL, "%s", why);
	d->rep = rpt_new("check_replica_pp", NULL, NULL);
	ck_assert_ptr_nonnull(d->rep);
}

static void
pp_add(struct pp_drive *d, uint64_t id, uint32_t prompt, uint32_t output)
{
	struct wl_request r;
	char why[512];
	bool rej;

	memset(&r, 0, sizeof(r));
	r.id = id;
	r.arrival_ns = d->now;
	r.prompt_tokens = prompt;
	r.output_tokens = output;
	r.n = 1;
	r.out_key = 17 + id;
	r.tokens = d->tok + 20 * id;	/* no shared prefix */
	ck_assert_int_eq(replica_add(d->rp, &r, &rej, why, sizeof(why)),
			 KV_OK);
	ck_assert(!rej);
}

static void
pp_ok(struct pp_drive *d)
{
	char why[512] = "";

	ck_assert_msg(replica_check(d->rp, why, sizeof(why)) == 0, "%s", why);
}

/* The output tokens the report has seen, and the requests it ended. */
static uint64_t
pp_seen(struct pp_drive *d)
{
	return replica_stats(d->rp)->gen_tokens_done;
}

static uint64_t
pp_done(struct pp_drive *d)
{
	return replica_stats(d->rp)->finished;
}

/*
 * One step: begin at d->now, which must last dt_ms; its end.  false when
 * the replica had nothing to start.
 */
static bool
pp_step(struct pp_drive *d, int64_t dt_ms)
{
	char why[512];
	int64_t dt;
	bool started;

	ck_assert_int_eq(replica_begin(d->rp, d->now, &dt, &started, why,
				       sizeof(why)), KV_OK);
	pp_ok(d);
	if (!started)
		return false;
	ck_assert_int_eq(dt, dt_ms * MS);
	d->now += dt;
	ck_assert_int_eq(replica_end(d->rp, d->now, d->rep, why, sizeof(why)),
			 KV_OK);
	pp_ok(d);
	return true;
}

static void
pp_close(struct pp_drive *d)
{
	ck_assert(!replica_has_work(d->rp));
	replica_close(d->rp, d->now);
	pp_ok(d);
	replica_free(d->rp);
	rpt_free(d->rep);
}

/*
 * Two requests A (0) and B (1) of 4 prompt tokens and 3 output tokens at
 * 0, a budget of 4 tokens a batch.  At 0 batch 1 takes A's prompt
 * (stage 1 0-5, stage 2 5-10, back at 10) and, A being in flight, batch
 * 2 B's (stage 1 5-10, back at 15); two batches in flight, the replica
 * waits for the oldest.  At 10 A's first token is back and batch 3
 * decodes A (back at 20); at 15 B's first token, batch 4 decodes B (back
 * at 25); and so on: A's tokens at 10, 20, 30 and B's at 15, 25, 35, one
 * token of each every 10 ms (two stages), one batch every 5 ms.  One
 * batch at a time (pp 1) the same requests take until 50 ms (A's
 * prompt; A and 3 tokens of B; A and B's last; B; B).
 */
START_TEST(test_two_decodes)
{
	/* the replica's steps end at 10, 15, ... 35 ms: the tokens seen
	 * then, the requests ended */
	static const int64_t dt_ms[] = { 10, 5, 5, 5, 5, 5 };
	static const uint64_t seen[] = { 1, 2, 3, 4, 5, 6 };
	static const uint64_t done[] = { 0, 0, 0, 0, 1, 2 };
	struct pp_drive d;

	pp_open(&d, 2, 4);
	pp_add(&d, 0, 4, 3);
	pp_add(&d, 1, 4, 3);
	for (size_t i = 0; i < sizeof(seen) / sizeof(seen[0]); i++) {
		ck_assert_msg(pp_step(&d, dt_ms[i]), "step %zu", i);
		ck_assert_msg(pp_seen(&d) == seen[i] && pp_done(&d) == done[i],
			      "at %lld ms: %llu tokens, %llu ended, expected "
			      "%llu, %llu", (long long)(d.now / MS),
			      (unsigned long long)pp_seen(&d),
			      (unsigned long long)pp_done(&d),
			      (unsigned long long)seen[i],
			      (unsigned long long)done[i]);
	}
	ck_assert_int_eq(d.now, 35 * MS);
	ck_assert(!pp_step(&d, 0));
	ck_assert_uint_eq(replica_stats(d.rp)->finished, 2);
	pp_close(&d);
}
END_TEST

/* The same requests one batch at a time: the last token at 50 ms. */
START_TEST(test_one_stage)
{
	struct pp_drive d;

	pp_open(&d, 1, 4);
	pp_add(&d, 0, 4, 3);
	pp_add(&d, 1, 4, 3);
	while (pp_step(&d, 10))
		;
	ck_assert_int_eq(d.now, 50 * MS);
	ck_assert_uint_eq(replica_stats(d.rp)->finished, 2);
	pp_close(&d);
}
END_TEST

/*
 * A prompt's chunks go in consecutive batches: A of 8 prompt tokens and
 * 2 output tokens, a budget of 4.  Batch 1 (0, back at 10) computes
 * tokens 0-3 and gives no token, so batch 2 computes 4-7 behind it
 * (stage 1 5-10, back at 15).  At 10 A is in flight in batch 2: nothing
 * to schedule, the replica waits for batch 2.  At 15 the first token;
 * batch 3 decodes (back at 25), and at 25 the second token ends A.
 */
START_TEST(test_prompt_chunks)
{
	/* steps end at 10, 15, 25 ms: tokens seen */
	static const int64_t dt_ms[] = { 10, 5, 10 };
	static const uint64_t seen[] = { 0, 1, 2 };
	struct pp_drive d;

	pp_open(&d, 2, 4);
	pp_add(&d, 0, 8, 2);
	for (size_t i = 0; i < sizeof(seen) / sizeof(seen[0]); i++) {
		ck_assert(pp_step(&d, dt_ms[i]));
		ck_assert_msg(pp_seen(&d) == seen[i], "at %lld ms: %llu "
			      "tokens", (long long)(d.now / MS),
			      (unsigned long long)pp_seen(&d));
	}
	ck_assert_int_eq(d.now, 25 * MS);
	ck_assert_uint_eq(replica_stats(d.rp)->finished, 1);
	ck_assert(!pp_step(&d, 0));
	pp_close(&d);
}
END_TEST

/* The stage timeline alone: uneven batches do not pass each other. */
START_TEST(test_timeline)
{
	struct rpp *q = rpp_new(2);

	ck_assert_ptr_nonnull(q);
	/* 10 ns: 5 a stage; 7 ns: 4 then 3 */
	ck_assert_int_eq(rpp_stage_ns(q, 7, 0), 4);
	ck_assert_int_eq(rpp_stage_ns(q, 7, 1), 3);
	ck_assert_int_eq(rpp_time(q, 0, 100), 100);	/* 0-50, 50-100 */
	ck_assert_ptr_nonnull(rpp_push(q, 100));
	ck_assert_int_eq(rpp_wake(q), 100);
	/* a short batch at 50: stage 1 50-55, stage 2 waits until 100 */
	ck_assert_int_eq(rpp_time(q, 50, 10), 105);
	ck_assert_ptr_nonnull(rpp_push(q, 105));
	ck_assert(rpp_full(q));
	ck_assert_ptr_null(rpp_push(q, 200));
	ck_assert_int_eq(rpp_wake(q), 100);	/* the oldest */
	rpp_pop(q);
	ck_assert_int_eq(rpp_oldest(q)->ret, 105);
	ck_assert_int_eq(rpp_wake(q), 105);
	rpp_pop(q);
	ck_assert_int_eq(rpp_wake(q), INT64_MAX);
	rpp_free(q);
}
END_TEST

static Suite *
pp_suite(void)
{
	Suite *s = suite_create("replica_pp");
	TCase *tc = tcase_create("batches in flight");

	tcase_add_test(tc, test_two_decodes);
	tcase_add_test(tc, test_one_stage);
	tcase_add_test(tc, test_prompt_chunks);
	tcase_add_test(tc, test_timeline);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(pp_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
