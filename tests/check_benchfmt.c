/*
 * check_benchfmt.c -- reports/benchfmt.c: vllm_bench.json and
 * inference_perf_summary.json from a requests.csv whose every value is
 * worked out by hand below (means, numpy's median and linear percentile,
 * the population standard deviation, the pooled inter-token mean, the
 * peak concurrency with a departure and an arrival at one instant), read
 * back with util/ydoc.h's JSON reader; format names; a bad requests.csv.
 */
#include "config.h"

#include "reports/benchfmt.h"
#include "util/ydoc.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Four finished requests of five arrived, in finish order (ids 1, 2, 0,
 * 3).  Request 3 arrives at 0.7 s as request 2 finishes.
 *
 *   id  arrival  first  finish  in  out  cached  ttft  tpot  e2e
 *    0   0.0     0.25   1.0     50   6    16     0.25  0.15  1.0
 *    1   0.1     0.2    0.2     10   1     0     0.1   -     0.1
 *    2   0.3     0.4    0.7    100   4     0     0.1   0.1   0.4
 *    3   0.7     1.0    1.5     40   2    32     0.3   0.5   0.8
 */
static const char reqs_csv[] =
"run_id,request_id,replica,arrival_s,first_scheduled_s,first_token_s,"
"finish_s,input_tokens,output_tokens,cached_prefix_tokens,ttft_s,tpot_s,"
"e2e_s,queue_s,itl_mean_s,itl_max_s,preemptions,recomputed_tokens,"
"swapped_out_blocks,swapped_out_bytes\n"
"abc,1,0,0.100000000,0.100000000,0.200000000,0.200000000,10,1,0,"
"0.100000000,,0.100000000,0.000000000,,,0,0,0,0\n"
"abc,2,0,0.300000000,0.300000000,0.400000000,0.700000000,100,4,0,"
"0.100000000,0.100000000,0.400000000,0.000000000,0.1,0.1,0,0,0,0\n"
"abc,0,0,0.000000000,0.000000000,0.250000000,1.000000000,50,6,16,"
"0.250000000,0.150000000,1.000000000,0.000000000,0.15,0.15,0,0,0,0\n"
"abc,3,0,0.700000000,0.700000000,1.000000000,1.500000000,40,2,32,"
"0.300000000,0.500000000,0.800000000,0.000000000,0.5,0.5,0,0,0,0\n";

static const struct bench_info info = {
	.model = "m/x", .requests = 5, .duration_ns = 2000000000,
	.have_slo = true, .good = 3, .itl_p50_s = 0.125, .itl_p99_s = 0.5,
};

/* Write format f of reqs_csv and read the JSON back into d. */
static void
produce(enum bench_format f, struct yd_doc *d)
{
	FILE *in = fmemopen((void *)reqs_csv, sizeof(reqs_csv) - 1, "r");
	FILE *out = tmpfile();
	char err[600];

	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(out);
	ck_assert_msg(bench_write(f, in, &info, out, err, sizeof(err)) ==
	    KV_OK, "%s", err);
	rewind(out);
	ck_assert_msg(yd_read(d, out, "out.json", 0, err, sizeof(err)) ==
	    KV_OK, "%s", err);
	fclose(in);
	fclose(out);
}

/* The number at a path of keys ("a/b/c"). */
static double
num(const struct yd_node *n, const char *path)
{
	char buf[200], *save, *k;

	snprintf(buf, sizeof(buf), "%s", path);
	for (k = strtok_r(buf, "/", &save); k != NULL;
	    k = strtok_r(NULL, "/", &save)) {
		n = yd_get(n, k);
		ck_assert_msg(n != NULL, "no key %s", path);
	}
	ck_assert_msg(n->type == YD_SCALAR && n->plain, "%s", path);
	return strtod(n->str, NULL);
}

static void
near(const struct yd_node *n, const char *path, double want)
{
	double got = num(n, path);

	ck_assert_msg(fabs(got - want) <= 1e-9 * (fabs(want) + 1e-9),
	    "%s = %.17g, want %.17g", path, got, want);
}

#define NEAR(n, path, want) near(n, path, (double)(want))

static void
list_eq(const struct yd_node *root, const char *key, const double *want)
{
	const struct yd_node *l = yd_get(root, key);

	ck_assert_msg(l != NULL && l->type == YD_SEQ && l->n == 4, "%s", key);
	for (size_t i = 0; i < 4; i++)
		ck_assert_msg(fabs(strtod(l->kid[i]->str, NULL) - want[i]) <
		    1e-12, "%s[%zu]", key, i);
}

START_TEST(test_vllm)
{
	struct yd_doc d;
	const struct yd_node *r;
	static const double ttfts[] = { 0.25, 0.1, 0.1, 0.3 };
	static const double lat[] = { 1.0, 0.1, 0.4, 0.8 };
	static const double starts[] = { 0, 0.1, 0.3, 0.7 };
	static const double ins[] = { 50, 10, 100, 40 };
	static const double outs[] = { 6, 1, 4, 2 };

	produce(BENCH_VLLM, &d);
	r = d.root;
	ck_assert_str_eq(yd_get(r, "model_id")->str, "m/x");
	NEAR(r, "duration", 2.0);
	NEAR(r, "completed", 4);
	NEAR(r, "failed", 1);
	NEAR(r, "num_prompts", 5);
	NEAR(r, "total_input_tokens", 200);
	NEAR(r, "total_output_tokens", 13);
	NEAR(r, "request_throughput", 2.0);
	NEAR(r, "request_goodput", 1.5);
	NEAR(r, "output_throughput", 6.5);
	NEAR(r, "total_token_throughput", 106.5);
	list_eq(r, "ttfts", ttfts);
	list_eq(r, "latencies", lat);
	list_eq(r, "start_times", starts);
	list_eq(r, "input_lens", ins);
	list_eq(r, "output_lens", outs);
	/* [0, 1) [0.1, 0.2) [0.3, 0.7) [0.7, 1.5): never more than 2 */
	NEAR(r, "max_concurrent_requests", 2);
	/* ttft: sorted 0.1 0.1 0.25 0.3 */
	NEAR(r, "mean_ttft_ms", 187.5);
	NEAR(r, "median_ttft_ms", 175);
	NEAR(r, "std_ttft_ms", sqrt(0.031875 / 4) * 1000);
	NEAR(r, "p99_ttft_ms", (0.25 + 0.97 * 0.05) * 1000);
	/* tpot: requests of 2+ tokens, 0.1 0.15 0.5 */
	NEAR(r, "mean_tpot_ms", 250);
	NEAR(r, "median_tpot_ms", 150);
	NEAR(r, "p99_tpot_ms", (0.15 + 0.98 * 0.35) * 1000);
	/* itl: 0.3 + 0.75 + 0 + 0.5 s over 3 + 5 + 0 + 1 gaps */
	NEAR(r, "mean_itl_ms", 1.55 / 9 * 1000);
	NEAR(r, "median_itl_ms", 125);
	NEAR(r, "p99_itl_ms", 500);
	ck_assert_ptr_null(yd_get(r, "std_itl_ms"));
	ck_assert_ptr_null(yd_get(r, "itls"));
	/* e2el: 0.1 0.4 0.8 1.0 */
	NEAR(r, "mean_e2el_ms", 575);
	NEAR(r, "median_e2el_ms", 600);
	NEAR(r, "p99_e2el_ms", (0.8 + 0.97 * 0.2) * 1000);
	yd_release(&d);
}
END_TEST

START_TEST(test_inference_perf)
{
	struct yd_doc d;
	const struct yd_node *r;

	produce(BENCH_INFERENCE_PERF, &d);
	r = d.root;
	NEAR(r, "benchmark_time_seconds", 2.0);
	NEAR(r, "load_summary/count", 5);
	NEAR(r, "successes/count", 4);
	NEAR(r, "failures/count", 1);
	NEAR(r, "successes/latency/request_latency/mean", 0.575);
	NEAR(r, "successes/latency/request_latency/min", 0.1);
	NEAR(r, "successes/latency/request_latency/max", 1.0);
	NEAR(r, "successes/latency/request_latency/median", 0.6);
	NEAR(r, "successes/latency/request_latency/p25", 0.325);
	NEAR(r, "successes/latency/request_latency/p0.1",
	    0.1 + 0.003 * 0.3);
	NEAR(r, "successes/latency/request_latency/p99.9",
	    0.8 + 0.997 * 0.2);
	/* e2e / output tokens: 1/6, 0.1, 0.1, 0.4 */
	NEAR(r, "successes/latency/normalized_time_per_output_token/mean",
	    (1.0 / 6 + 0.6) / 4);
	NEAR(r, "successes/latency/time_per_output_token/median", 0.15);
	NEAR(r, "successes/latency/time_to_first_token/p75", 0.2625);
	NEAR(r, "successes/throughput/input_tokens_per_sec", 100);
	NEAR(r, "successes/throughput/output_tokens_per_sec", 6.5);
	NEAR(r, "successes/throughput/total_tokens_per_sec", 106.5);
	NEAR(r, "successes/throughput/requests_per_sec", 2);
	NEAR(r, "successes/prompt_tokens/total", 200);
	NEAR(r, "successes/prompt_tokens/cached", 48);
	NEAR(r, "successes/prompt_tokens/uncached", 152);
	NEAR(r, "successes/prompt_tokens/median", 45);
	NEAR(r, "successes/output_len/max", 6);
	NEAR(r, "successes/output_tokens/total", 13);
	ck_assert_ptr_null(yd_get(yd_get(yd_get(r, "successes"), "latency"),
	    "inter_token_latency"));
	yd_release(&d);
}
END_TEST

/* The same input, the same bytes. */
START_TEST(test_deterministic)
{
	char *a = NULL, *b = NULL;
	size_t la, lb;
	char err[600];

	for (int k = 0; k < 2; k++) {
		FILE *in = fmemopen((void *)reqs_csv, sizeof(reqs_csv) - 1,
		    "r");
		FILE *out = open_memstream(k ? &b : &a, k ? &lb : &la);

		ck_assert_int_eq(bench_write(BENCH_VLLM, in, &info, out, err,
		    sizeof(err)), KV_OK);
		fclose(out);
		fclose(in);
	}
	ck_assert_uint_eq(la, lb);
	ck_assert(memcmp(a, b, la) == 0);
	free(a);
	free(b);
}
END_TEST

START_TEST(test_names_and_bad_input)
{
	unsigned m;
	char err[600];
	static const char bad[] = "request_id,arrival_s,first_token_s,"
	    "finish_s,input_tokens,output_tokens,cached_prefix_tokens,"
	    "ttft_s,tpot_s,e2e_s\n"
	    "0,0.0,0.1,0.2,5,2,0,0.1,0.1,0.2\n"
	    "1,0.0,0.1,0.2,5,2,0,x,0.1,0.2\n";
	FILE *in, *out;

	ck_assert(bench_format_parse("vllm-bench,inference-perf", &m, err,
	    sizeof(err)));
	ck_assert_uint_eq(m, BENCH_VLLM | BENCH_INFERENCE_PERF);
	ck_assert(bench_format_parse("inference-perf", &m, err,
	    sizeof(err)));
	ck_assert_uint_eq(m, BENCH_INFERENCE_PERF);
	ck_assert(!bench_format_parse("vllm", &m, err, sizeof(err)));
	ck_assert_str_eq(err, "unknown result format 'vllm' (vllm-bench, "
	    "inference-perf)");
	ck_assert(!bench_format_parse("", &m, err, sizeof(err)));
	ck_assert_str_eq(bench_format_file(BENCH_VLLM), "vllm_bench.json");
	in = fmemopen((void *)bad, sizeof(bad) - 1, "r");
	out = tmpfile();
	ck_assert_int_eq(bench_write(BENCH_VLLM, in, &info, out, err,
	    sizeof(err)), KV_EINVAL);
	ck_assert_str_eq(err, "requests.csv:3: bad ttft_s");
	fclose(in);
	fclose(out);
}
END_TEST

static Suite *
benchfmt_suite(void)
{
	Suite *s = suite_create("benchfmt");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_vllm);
	tcase_add_test(tc, test_inference_perf);
	tcase_add_test(tc, test_deterministic);
	tcase_add_test(tc, test_names_and_bad_input);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(benchfmt_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
