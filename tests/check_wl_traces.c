/*
 * check_wl_traces.c -- the readers on the real traces of ../shared/traces
 * (the folder named by $KVSIM_TRACES): every statistic that
 * ../shared/traces/README.md publishes, at its precision, through the
 * library; the Mooncake mapping onto 16-token blocks gives the documented
 * reuse ratio; transformations on a real trace.  Exits 77 (skip) when the
 * traces are absent, as in a tarball built elsewhere.
 */
#include "config.h"

#include "workloads/wl.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *
trace(const char *name)
{
	static char path[1024];
	const char *dir = getenv("KVSIM_TRACES");

	snprintf(path, sizeof(path), "%s/%s", dir != NULL ? dir :
	    "../shared/traces", name);
	return path;
}

struct expect {
	const char *file;
	uint64_t rows;
	double span_s, rate;
	uint64_t bin_min;
	double bin_median;
	uint64_t bin_max, bins_empty;
	double cv;
	double in_mean, in_median;
	uint64_t in_p99, in_min, in_max;
	double out_mean, out_median;
	uint64_t out_p99, out_min, out_max;
	double in_tok_s, out_tok_s;
	uint64_t blocks, unique;
	double reuse_blocks, reuse_tokens;
	uint64_t reuse_req;
};

/* ../shared/traces/README.md, sections 1 and 2. */
static const struct expect readme[] = {
	{ "azure_llm_2023_code.csv", 8819, 3435.9, 2.57, 0, 111, 632, 12,
	  13.2, 2047.8, 1469, 7436, 3, 7437, 27.9, 13, 252, 6, 1899, 5256,
	  71.6, 0, 0, 0, 0, 0 },
	{ "azure_llm_2023_conv.csv", 19366, 3501.7, 5.53, 191, 327.5, 507, 0,
	  1.09, 1154.7, 1020, 4142, 2, 14050, 211.1, 129, 601, 7, 1000, 6386,
	  1167.6, 0, 0, 0, 0, 0 },
	{ "mooncake_fast25_conversation_trace.jsonl.gz", 12031, 3537.0, 3.40,
	  144, 207.5, 247, 0, -1, 12035.1, 6909, 85401, 891, 126195, 342.6,
	  350, 1120, 1, 2000, 40937, 1165.4, 288500, 182790, 36.64, 37.36,
	  12030 },
	{ "mooncake_fast25_synthetic_trace.jsonl.gz", 3993, 1022.0, 3.91, 208,
	  235, 273, 0, -1, 15325.5, 11587, 66458, 13, 191378, 149.1, 69, 769,
	  1, 893, 59876, 582.6, 121877, 43924, 63.96, 65.12, 1782 },
};

/* |a - b| within half a unit of the published last digit. */
#define ROUNDS(a, b, unit) \
	ck_assert_double_le(fabs((a) - (b)), (unit) / 2.0)

static void
summarize(const struct wl_config *c, uint32_t block, struct wl_summary *s,
    uint64_t *emitted)
{
	wl_stream *st;
	wl_stats *ws;
	struct wl_error err;
	struct wl_request r;
	wl_err rc;
	char msg[1200];

	rc = wl_open(c, &st, &err);
	wl_error_format(&err, msg, sizeof(msg));
	ck_assert_msg(rc == WL_OK, "%s", msg);
	ws = wl_stats_new(block, c->vocab_size, wl_stream_info(st)->hash_block);
	ck_assert_ptr_nonnull(ws);
	while ((rc = wl_stream_next(st, &r)) == WL_OK) {
		ck_assert_int_eq(wl_stats_add(ws, &r), WL_OK);
		/* the invariants (a sort window's cost) now and then */
		if (r.id % 4096 == 0)
			ck_assert_int_eq(wl_stream_check(st), 0);
	}
	wl_error_format(wl_stream_error(st), msg, sizeof(msg));
	ck_assert_msg(rc == WL_END, "%s", msg);
	ck_assert_int_eq(wl_stream_check(st), 0);
	wl_stats_summary(ws, s);
	if (emitted != NULL)
		*emitted = wl_stream_counts(st)->emitted;
	wl_stats_free(ws);
	wl_stream_free(st);
}

START_TEST(test_readme)
{
	const struct expect *e = &readme[_i];
	struct wl_config c;
	struct wl_summary s;

	if (!wl_gzip_supported() && strstr(e->file, ".gz") != NULL)
		return;	/* the gzip refusal is tested in check_wl */
	wl_config_init(&c);
	c.trace = strdup(trace(e->file));
	summarize(&c, 0, &s, NULL);
	ck_assert_uint_eq(s.rows, e->rows);
	ROUNDS(s.span_s, e->span_s, 0.1);
	ROUNDS(s.mean_rate, e->rate, 0.01);
	ck_assert_uint_eq(s.bin_min, e->bin_min);
	ck_assert_double_eq(s.bin_median, e->bin_median);
	ck_assert_uint_eq(s.bin_max, e->bin_max);
	ck_assert_uint_eq(s.bins_empty, e->bins_empty);
	if (e->cv > 0)
		ck_assert_double_le(fabs(s.gap_cv - e->cv) / e->cv, 0.005);
	ROUNDS(s.in.mean, e->in_mean, 0.1);
	ck_assert_double_eq(s.in.median, e->in_median);
	ck_assert_uint_eq(s.in.p99, e->in_p99);
	ck_assert_uint_eq(s.in.min, e->in_min);
	ck_assert_uint_eq(s.in.max, e->in_max);
	ROUNDS(s.out.mean, e->out_mean, 0.1);
	ck_assert_double_eq(s.out.median, e->out_median);
	ck_assert_uint_eq(s.out.p99, e->out_p99);
	ck_assert_uint_eq(s.out.min, e->out_min);
	ck_assert_uint_eq(s.out.max, e->out_max);
	ROUNDS(s.in_tok_s, e->in_tok_s, 1);
	ROUNDS(s.out_tok_s, e->out_tok_s, 0.1);
	ck_assert(s.has_hash == (e->blocks > 0));
	if (e->blocks > 0) {
		ck_assert_uint_eq(s.seg_total, e->blocks);
		ck_assert_uint_eq(s.seg_unique, e->unique);
		ck_assert_uint_eq(s.seg_total - s.seg_unique, s.seg_matched);
		ROUNDS(100.0 * (double)s.seg_matched / (double)s.seg_total,
		    e->reuse_blocks, 0.01);
		ROUNDS(100.0 * (double)s.tok_matched / (double)s.in.sum,
		    e->reuse_tokens, 0.01);
		ck_assert_uint_eq(s.reuse_requests, e->reuse_req);
	}
	wl_config_release(&c);
}
END_TEST

/*
 * The 512-token hash ids mapped onto 16-token blocks of token ids: the
 * infinite-cache reuse of those blocks is the documented token ratio,
 * because shared ids yield shared token prefixes (a 16-token block can
 * only lose the partial last block of a 512-token run: under 0.05 %).
 */
START_TEST(test_mapping)
{
	struct wl_config c;
	struct wl_summary s;

	if (!wl_gzip_supported())
		return;
	wl_config_init(&c);
	c.trace = strdup(trace("mooncake_fast25_synthetic_trace.jsonl.gz"));
	summarize(&c, 16, &s, NULL);
	ck_assert_uint_eq(s.block_tokens, 16);
	ck_assert_double_le(fabs(100.0 * (double)(s.blk_hit * 16) /
	    (double)s.in.sum - 65.12), 0.05);
	/* Some hit, not all: the blocks really are compared. */
	ck_assert_uint_gt(s.blk_hit, 0);
	ck_assert_uint_lt(s.blk_hit, s.blk_total);
	wl_config_release(&c);
}
END_TEST

START_TEST(test_transforms_real)
{
	struct wl_config c;
	struct wl_summary s;
	uint64_t n, one;

	wl_config_init(&c);
	c.trace = strdup(trace("azure_llm_2023_conv.csv"));
	/* target_rate: rows / span of the result is the target. */
	c.target_rate = 20;
	summarize(&c, 0, &s, NULL);
	ck_assert_uint_eq(s.rows, 19366);
	ck_assert_double_le(fabs(s.mean_rate - 20) / 20, 1e-6);
	/* The first ten minutes. */
	c.target_rate = 0;
	c.window_end_s = 600;
	summarize(&c, 0, &s, &n);
	ck_assert_uint_gt(n, 1900);
	ck_assert_uint_lt(n, 19366 / 5);
	ck_assert_double_lt(s.span_s, 600);
	/* Tiled 5 times: 5 x the rows at about the same rate. */
	c.window_end_s = 0;
	summarize(&c, 0, &s, NULL);
	one = s.in.sum;
	c.tile_copies = 5;
	summarize(&c, 0, &s, NULL);
	ck_assert_uint_eq(s.rows, 5 * 19366);
	ck_assert_uint_eq(s.in.sum, 5 * one);
	ck_assert_double_le(fabs(s.mean_rate - 5.53) / 5.53, 0.01);
	wl_config_release(&c);
}
END_TEST

static Suite *
traces_suite(void)
{
	Suite *s = suite_create("real traces");
	TCase *tc = tcase_create("readme");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_readme, 0,
	    sizeof(readme) / sizeof(readme[0]));
	tcase_add_test(tc, test_mapping);
	tcase_add_test(tc, test_transforms_real);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	if (access(trace("azure_llm_2023_code.csv"), R_OK) != 0) {
		printf("SKIP: no traces at %s\n", trace(""));
		return 77;
	}
	sr = srunner_create(traces_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
