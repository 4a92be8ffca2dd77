/*
 * check_frontend.c -- the API server's delay arithmetic (sim/cost.h, "the
 * API server"): the FIFO server, its backlog under load, the work of a
 * request on its way in and of a token on its way out, and the frontend
 * means of summary.csv (reports/rpt.h).
 */
#include "reports/rpt.h"
#include "sim/cost.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One job at a time, in submission order; idle gaps are not banked. */
START_TEST(test_fifo_arithmetic)
{
	struct cost_fifo q;

	cost_fifo_init(&q);
	ck_assert_int_eq(cost_fifo_serve(&q, 100, 10), 110);	/* idle */
	ck_assert_int_eq(cost_fifo_serve(&q, 105, 10), 120);	/* behind */
	ck_assert_int_eq(cost_fifo_serve(&q, 120, 3), 123);	/* just free */
	ck_assert_int_eq(cost_fifo_serve(&q, 500, 0), 500);	/* no work */
	ck_assert_int_eq(cost_fifo_serve(&q, 500, 7), 507);
	/* a job without work still waits for the jobs before it */
	ck_assert_int_eq(cost_fifo_serve(&q, 501, 0), 507);
	/* a negative work counts as none */
	ck_assert_int_eq(cost_fifo_serve(&q, 600, -5), 600);
	ck_assert_uint_eq(q.jobs, 7);
	ck_assert_int_eq(q.busy_ns, 30);
	/* saturates instead of wrapping */
	ck_assert_int_eq(cost_fifo_serve(&q, INT64_MAX - 1, 10), INT64_MAX);
	/* all work 0: every job is done when it is submitted */
	cost_fifo_init(&q);
	for (int64_t t = 0; t < 50; t += 7)
		ck_assert_int_eq(cost_fifo_serve(&q, t, 0), t);
}
END_TEST

/*
 * Under load: a step of 8 tokens ends at 1 ms with 30 us of output work a
 * token; the k-th token (0-based) reaches its client at 1 ms + (k+1) 30
 * us.  A request arriving meanwhile (1.1 ms) with 200 us of input work
 * waits for the backlog (to 1.24 ms); the next step's tokens (ending at
 * 1.3 ms) queue behind it, one after another.  When a step is longer than
 * its output work the backlog is gone by its end: no carry-over.
 */
START_TEST(test_fifo_backlog_under_load)
{
	struct cost_fifo q;
	const int64_t s = 30000;

	cost_fifo_init(&q);
	for (int64_t k = 0; k < 8; k++)
		ck_assert_int_eq(cost_fifo_serve(&q, 1000000, s),
				 1000000 + (k + 1) * s);
	ck_assert_int_eq(cost_fifo_serve(&q, 1100000, 200000), 1440000);
	ck_assert_int_eq(cost_fifo_serve(&q, 1300000, s), 1470000);
	ck_assert_int_eq(cost_fifo_serve(&q, 1300000, s), 1500000);
	/* a step ending at 5 ms finds the server idle */
	ck_assert_int_eq(cost_fifo_serve(&q, 5000000, s), 5000000 + s);
	ck_assert_int_eq(q.busy_ns, 11 * s + 200000);
}
END_TEST

/* request + tokenize x prompt on the way in; stream a token out. */
START_TEST(test_frontend_work)
{
	struct cost_model cm;

	memset(&cm, 0, sizeof(cm));
	ck_assert_int_eq(cost_frontend_in_ns(&cm, 4096), 0);
	ck_assert_int_eq(cost_frontend_out_ns(&cm), 0);
	cm.frontend_request_ns = (struct cost_term){ 1000000.0, "t" };
	cm.frontend_tokenize_ns = (struct cost_term){ 1100.0, "t" };
	cm.frontend_stream_ns = (struct cost_term){ 25000.0, "t" };
	ck_assert_int_eq(cost_frontend_in_ns(&cm, 0), 1000000);
	ck_assert_int_eq(cost_frontend_in_ns(&cm, 1000), 2100000);
	ck_assert_int_eq(cost_frontend_out_ns(&cm), 25000);
	/* fractions of a ns round to the nearest */
	cm.frontend_tokenize_ns.v = 0.6;
	ck_assert_int_eq(cost_frontend_in_ns(&cm, 1), 1000001);
}
END_TEST

static double
col(const char *csv, const char *name)
{
	const char *nl = strchr(csv, '\n');
	const char *h = csv, *v = nl + 1;
	size_t len = strlen(name);

	for (;;) {
		const char *c = strchr(h, ',');

		if ((size_t)((c && c < nl ? c : nl) - h) == len &&
		    strncmp(h, name, len) == 0)
			return strtod(v, NULL);
		ck_assert_ptr_nonnull(c);
		ck_assert(c < nl);
		h = c + 1;
		v = strchr(v, ',') + 1;
	}
}

/* summary.csv: the frontend means over the completed requests. */
START_TEST(test_summary_means)
{
	struct rpt_totals t;
	struct rpt_req q;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	rpt *r = rpt_new("fe", NULL, NULL);

	ck_assert_ptr_nonnull(r);
	memset(&q, 0, sizeof(q));
	q.output_tokens = 2;
	q.first_token_ns = 10;
	q.finish_ns = 20;
	q.frontend_in_ns = 1000000;
	q.frontend_out_ns = 25000;
	ck_assert_int_eq(rpt_add_request(r, &q), 0);
	q.frontend_in_ns = 3000000;
	q.frontend_out_ns = 75000;
	ck_assert_int_eq(rpt_add_request(r, &q), 0);
	memset(&t, 0, sizeof(t));
	t.duration_ns = 1000000000;
	f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(rpt_summary_write(r, &t, f), 0);
	fclose(f);
	ck_assert_double_eq_tol(col(buf, "frontend_in_mean_s"), 0.002, 1e-12);
	ck_assert_double_eq_tol(col(buf, "frontend_out_mean_s"), 0.00005,
				1e-12);
	ck_assert(strstr(buf, "stale_cached_tokens,calibration,frontend_in_mean_s,"
			 "frontend_out_mean_s\n") != NULL);
	free(buf);
	rpt_free(r);
}
END_TEST

static Suite *
frontend_suite(void)
{
	Suite *s = suite_create("frontend");
	TCase *tc = tcase_create("frontend");

	tcase_add_test(tc, test_fifo_arithmetic);
	tcase_add_test(tc, test_fifo_backlog_under_load);
	tcase_add_test(tc, test_frontend_work);
	tcase_add_test(tc, test_summary_means);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(frontend_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
