/*
 * check_wl_iperf.c -- the request stream of an inference-perf config
 * (workloads/wl_iperf.c, docs/workloads.md section 10): int(rate x
 * duration) requests a stage, constant or poisson; a constant stage's
 * gaps sum to its duration after the 1 s lead; stage numbers and starts;
 * prompts cycling through the shuffled list (groups share their system
 * prompt, prompt k mod N repeats exactly); fixed outputs; determinism;
 * the kind written back to YAML and read again.
 */
#include "config.h"

#include "workloads/wl.h"
#include "util/ydoc.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Write an inference-perf config with these load and shared_prefix
 * lines to a temporary file; its path in buf. */
static void
ipfile(char *buf, size_t len, const char *type, const char *stages)
{
	FILE *f;
	int fd;

	snprintf(buf, len, "%s/kvsim-ip-XXXXXX", getenv("TMPDIR") ?
	    getenv("TMPDIR") : "/tmp");
	fd = mkstemp(buf);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "data:\n  type: shared_prefix\n  shared_prefix:\n"
	    "    num_groups: 2\n    num_prompts_per_group: 3\n"
	    "    system_prompt_len: 40\n    question_len: 10\n"
	    "    output_len: 7\nload:\n  type: %s\n  interval: 2.5\n"
	    "  stages:\n%s", type, stages);
	fclose(f);
}

static void
open_ip(const char *path, uint64_t seed, wl_stream **s)
{
	struct wl_config c;
	struct wl_error err;
	char msg[1200];

	wl_config_init(&c);
	c.kind = WL_KIND_IPERF;
	c.ip_config = strdup(path);
	c.seed = seed;
	if (wl_open(&c, s, &err) != WL_OK) {
		wl_error_format(&err, msg, sizeof(msg));
		ck_abort_msg("%s", msg);
	}
	wl_config_release(&c);
}

START_TEST(test_counts)
{
	static const char *const types[] = { "constant", "poisson" };
	char path[512];
	struct wl_request r;
	wl_stream *s;

	/* 3.5 x 3 = 10.5: int() keeps 10; 7 x 2 = 14 */
	ipfile(path, sizeof(path), types[_i], "  - {rate: 3.5, duration: 3}\n"
	    "  - {rate: 7, duration: 2}\n");
	open_ip(path, 1, &s);
	ck_assert_uint_eq(wl_stream_info(s)->nstages, 2);
	ck_assert(wl_stream_info(s)->stages_drain);
	ck_assert_int_eq(wl_stream_info(s)->stage_gap_ns, 2500000000LL);
	/* no request_timeout: aiohttp's default, 300 s */
	ck_assert(wl_stream_info(s)->ip_timeout_s == 300.0);
	{
		uint64_t n[2] = { 0, 0 };
		int64_t last0 = 0, start1 = -1;

		while (wl_stream_next(s, &r) == WL_OK) {
			ck_assert_uint_lt(r.stage, 2);
			n[r.stage]++;
			ck_assert_uint_eq(r.output_tokens, 7);
			ck_assert_uint_eq(r.prompt_tokens, 50);
			ck_assert_int_ge(r.arrival_ns, r.stage_ns + 1000000000LL);
			if (r.stage == 0) {
				ck_assert_int_eq(r.stage_ns, 0);
				last0 = r.arrival_ns;
			} else if (start1 < 0) {
				start1 = r.stage_ns;
			}
		}
		ck_assert_uint_eq(n[0], 10);
		ck_assert_uint_eq(n[1], 14);
		/* stage 1 starts (in stream time) at stage 0's last arrival */
		ck_assert_int_eq(start1, last0);
		/* constant: the gaps sum to the duration after the lead */
		if (_i == 0)
			ck_assert_int_le(llabs(last0 - 4000000000LL), 1);
	}
	ck_assert_int_eq(wl_stream_check(s), 0);
	wl_stream_free(s);
	unlink(path);
}
END_TEST

START_TEST(test_prompts)
{
	char path[512];
	struct wl_request r;
	struct wl_seg seg[2][20];
	wl_stream *s;
	uint32_t k = 0;

	ipfile(path, sizeof(path), "constant",
	    "  - {rate: 5, duration: 4}\n");
	open_ip(path, 9, &s);
	while (wl_stream_next(s, &r) == WL_OK) {
		ck_assert_uint_eq(r.nsegs, 2);
		ck_assert_uint_eq(r.segs[0].len, 40);
		ck_assert_uint_eq(r.segs[1].len, 10);
		if (k < 20) {
			seg[0][k] = r.segs[0];
			seg[1][k] = r.segs[1];
		}
		k++;
	}
	ck_assert_uint_eq(k, 20);
	for (uint32_t i = 0; i < 20; i++) {
		uint32_t same_sys = 0, same_q = 0;

		/* prompt i mod 6 repeats exactly */
		if (i >= 6) {
			ck_assert_uint_eq(seg[0][i].key, seg[0][i - 6].key);
			ck_assert_uint_eq(seg[1][i].key, seg[1][i - 6].key);
		}
		for (uint32_t j = 0; j < 6; j++) {
			same_sys += seg[0][j].key == seg[0][i].key;
			same_q += seg[1][j].key == seg[1][i].key;
		}
		/* a group of 3 shares the system prompt, questions differ */
		ck_assert_uint_eq(same_sys, 3);
		ck_assert_uint_eq(same_q, 1);
	}
	wl_stream_free(s);
	unlink(path);
}
END_TEST

START_TEST(test_determinism)
{
	char path[512];
	struct wl_request a, b;
	wl_stream *s, *t;
	bool differs = false;

	ipfile(path, sizeof(path), "poisson", "  - {rate: 9, duration: 5}\n");
	open_ip(path, 4, &s);
	open_ip(path, 4, &t);
	while (wl_stream_next(s, &a) == WL_OK) {
		ck_assert_int_eq(wl_stream_next(t, &b), WL_OK);
		ck_assert_int_eq(a.arrival_ns, b.arrival_ns);
		ck_assert_uint_eq(a.segs[1].key, b.segs[1].key);
	}
	ck_assert_int_eq(wl_stream_next(t, &b), WL_END);
	wl_stream_free(s);
	wl_stream_free(t);
	/* another seed: other gaps */
	open_ip(path, 4, &s);
	open_ip(path, 5, &t);
	while (wl_stream_next(s, &a) == WL_OK &&
	    wl_stream_next(t, &b) == WL_OK)
		differs |= a.arrival_ns != b.arrival_ns;
	ck_assert(differs);
	wl_stream_free(s);
	wl_stream_free(t);
	unlink(path);
}
END_TEST

START_TEST(test_roundtrip)
{
	struct wl_config c, d;
	struct wl_error err;
	struct yd_doc doc;
	char *text = NULL, msg[512];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	wl_config_init(&c);
	c.kind = WL_KIND_IPERF;
	c.ip_config = strdup("/x/config.yaml");
	c.max_concurrency = 16;
	c.timeout_s = 300;
	wl_config_write_yaml(&c, f, 0);
	fclose(f);
	f = fmemopen(text, len, "r");
	ck_assert_int_eq(yd_read(&doc, f, "t", YD_LOADER, msg, sizeof(msg)),
	    KV_OK);
	wl_config_init(&d);
	ck_assert_int_eq(wl_config_from_yaml(doc.root, "t", &d, &err), WL_OK);
	ck_assert_int_eq(d.kind, WL_KIND_IPERF);
	ck_assert_str_eq(d.ip_config, "/x/config.yaml");
	ck_assert_uint_eq(d.max_concurrency, 16);
	ck_assert(d.timeout_s == 300);
	yd_release(&doc);
	fclose(f);
	free(text);
	wl_config_release(&c);
	wl_config_release(&d);
}
END_TEST

static Suite *
iperf_suite(void)
{
	Suite *s = suite_create("wl_iperf");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_counts, 0, 2);
	tcase_add_test(tc, test_prompts);
	tcase_add_test(tc, test_determinism);
	tcase_add_test(tc, test_roundtrip);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(iperf_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
