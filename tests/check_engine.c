/*
 * check_engine.c -- the event queue (sim/engine.h): order by (time,
 * insertion number), FIFO among equal times, a clock that never goes back,
 * and the heap invariant after every operation on random inputs.
 */
#include "sim/engine.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

START_TEST(test_order)
{
	struct sim_evq q;
	static const int64_t t[] = { 50, 10, 40, 10, 30, 0, 20 };
	int64_t last = -1;
	struct sim_ev ev;
	size_t n = 0;

	sim_evq_init(&q);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ck_assert_int_eq(sim_evq_push(&q, t[i], SIM_EV_USER,
					      (uint32_t)i, NULL), KV_OK);
	ck_assert_uint_eq(sim_evq_len(&q), 7);
	ck_assert_int_eq(sim_evq_check(&q), 0);
	while (sim_evq_pop(&q, &ev)) {
		ck_assert_int_ge(ev.t, last);
		ck_assert_int_eq(q.now, ev.t);
		last = ev.t;
		n++;
	}
	ck_assert_uint_eq(n, 7);
	ck_assert_uint_eq(q.popped, 7);
	sim_evq_release(&q);
}
END_TEST

/* Equal times come out in insertion order, whatever the heap does. */
START_TEST(test_ties_fifo)
{
	struct sim_evq q;
	struct sim_ev ev;
	uint32_t expect = 0;

	sim_evq_init(&q);
	for (uint32_t i = 0; i < 1000; i++)
		ck_assert_int_eq(sim_evq_push(&q, 7, SIM_EV_USER, i, NULL),
				 KV_OK);
	while (sim_evq_pop(&q, &ev)) {
		ck_assert_uint_eq(ev.arg, expect);
		ck_assert_uint_eq(ev.seq, expect);
		expect++;
	}
	ck_assert_uint_eq(expect, 1000);
	sim_evq_release(&q);
}
END_TEST

/*
 * At one instant: step ends, then arrivals, then wake-ups, whatever the
 * order of the pushes; FIFO within a kind.  (An arrival pushed before a
 * step's end at its time used to come first and be routed on the state
 * before the step's finishes.)
 */
START_TEST(test_kind_order)
{
	static const uint32_t kind[6] = { SIM_EV_WAKE, SIM_EV_ARRIVAL,
		SIM_EV_STEP_DONE, SIM_EV_ARRIVAL, SIM_EV_STEP_DONE,
		SIM_EV_WAKE };
	static const uint32_t want[6] = { 2, 4, 1, 3, 0, 5 };
	struct sim_evq q;
	struct sim_ev ev;

	sim_evq_init(&q);
	ck_assert_int_eq(sim_evq_push(&q, 9, SIM_EV_USER, 99, NULL), KV_OK);
	for (uint32_t i = 0; i < 6; i++)
		ck_assert_int_eq(sim_evq_push(&q, 5, kind[i], i, NULL), KV_OK);
	for (uint32_t i = 0; i < 6; i++) {
		ck_assert(sim_evq_pop(&q, &ev));
		ck_assert_int_eq(ev.t, 5);
		ck_assert_uint_eq(ev.arg, want[i]);
		ck_assert_int_eq(sim_evq_check(&q), 0);
	}
	ck_assert(sim_evq_pop(&q, &ev));
	ck_assert_uint_eq(ev.arg, 99);
	sim_evq_release(&q);
}
END_TEST

/* Pushing before the clock is refused and changes nothing. */
START_TEST(test_monotonic)
{
	struct sim_evq q;
	struct sim_ev ev;
	uint64_t seq;

	sim_evq_init(&q);
	ck_assert_int_eq(sim_evq_push(&q, 100, SIM_EV_USER, 0, &seq), KV_OK);
	ck_assert_uint_eq(seq, 0);
	ck_assert(sim_evq_pop(&q, &ev));
	ck_assert_int_eq(q.now, 100);
	ck_assert_int_eq(sim_evq_push(&q, 99, SIM_EV_USER, 1, NULL),
			 KV_EINVAL);
	ck_assert_uint_eq(sim_evq_len(&q), 0);
	ck_assert_int_eq(sim_evq_push(&q, 100, SIM_EV_USER, 2, &seq), KV_OK);
	ck_assert_uint_eq(seq, 1);	/* the refused push took no number */
	ck_assert_ptr_nonnull(sim_evq_peek(&q));
	ck_assert(sim_evq_pop(&q, &ev));
	ck_assert_int_eq(ev.t, 100);
	ck_assert(!sim_evq_pop(&q, &ev));
	ck_assert_ptr_null(sim_evq_peek(&q));
	sim_evq_release(&q);
}
END_TEST

/* Random interleaved pushes and pops against the (t, seq) order. */
START_TEST(test_random)
{
	struct sim_evq q;
	struct sim_ev ev, prev = { -1, 0, 0, 0 };
	uint64_t x = 88172645463325252ull;
	bool have_prev = false;

	sim_evq_init(&q);
	for (int i = 0; i < 200000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (x % 3 != 0 || sim_evq_len(&q) == 0) {
			ck_assert_int_eq(sim_evq_push(&q, q.now +
				(int64_t)(x >> 40) % 50, SIM_EV_USER, 0, NULL),
				KV_OK);
		} else {
			ck_assert(sim_evq_pop(&q, &ev));
			if (have_prev) {
				ck_assert_int_ge(ev.t, prev.t);
				if (ev.t == prev.t)
					ck_assert_uint_gt(ev.seq, prev.seq);
			}
			prev = ev;
			have_prev = true;
		}
		if (i % 997 == 0)
			ck_assert_int_eq(sim_evq_check(&q), 0);
	}
	ck_assert_int_eq(sim_evq_check(&q), 0);
	sim_evq_release(&q);
}
END_TEST

static Suite *
engine_suite(void)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("evq");

	tcase_add_test(tc, test_order);
	tcase_add_test(tc, test_ties_fifo);
	tcase_add_test(tc, test_kind_order);
	tcase_add_test(tc, test_monotonic);
	tcase_add_test(tc, test_random);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(engine_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
