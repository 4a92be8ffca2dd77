/*
 * check_wl_bench.c -- vLLM's benchmark datasets as workloads
 * (workloads/wl_bench.c, docs/workloads.md section 5): random lengths
 * within vLLM's bounds and with their mean, one shared prefix; the
 * prefixes of prefix_repetition; the ShareGPT fixture's pairs after
 * vLLM's filters, with and without output_len; determinism; and every
 * bad input with its FILE:LINE:COL.
 */
#include "config.h"

#include "workloads/wl.h"
#include "workloads/wl_int.h"
#include "util/ydoc.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fixture `name` of tests/fixtures/wl/sharegpt in buf. */
static const char *
fx(char *buf, size_t len, const char *name)
{
	const char *top = getenv("top_srcdir");

	snprintf(buf, len, "%s/tests/fixtures/wl/sharegpt/%s",
	    top != NULL ? top : ".", name);
	return buf;
}

/* Apply a YAML text to c, as a file named `name` holding it. */
static wl_err
apply(const char *text, const char *name, struct wl_config *c,
    struct wl_error *err)
{
	struct yd_doc doc;
	char msg[512];
	FILE *in = fmemopen((void *)text, strlen(text), "r");
	wl_err rc = WL_EIO;

	ck_assert_ptr_nonnull(in);
	if (yd_read(&doc, in, name, YD_LOADER, msg, sizeof(msg)) == KV_OK) {
		rc = wl_config_from_yaml(doc.root, name, c, err);
		yd_release(&doc);
	} else
		ck_abort_msg("%s", msg);
	fclose(in);
	return rc;
}

static void
config(const char *text, struct wl_config *c)
{
	struct wl_error err;
	char msg[1200];

	wl_config_init(c);
	if (apply(text, "--set", c, &err) != WL_OK) {
		wl_error_format(&err, msg, sizeof(msg));
		ck_abort_msg("%s", msg);
	}
}

/* The message of a config that must be refused. */
static void
refused(const char *text, const char *want)
{
	struct wl_config c;
	struct wl_error err;
	char msg[1200];

	wl_config_init(&c);
	ck_assert_int_eq(apply(text, "t.yaml", &c, &err), WL_ECONFIG);
	wl_error_format(&err, msg, sizeof(msg));
	ck_assert_msg(strstr(msg, want) != NULL, "got '%s', want '%s'", msg,
	    want);
	wl_config_release(&c);
}

struct req {
	uint32_t in, out, nsegs;
	uint64_t key0;
	uint32_t len0;
};

/* Every request; returns how many (at most max). */
static size_t
drain(const struct wl_config *c, struct req *r, size_t max, wl_err *end,
    char *msg, size_t msglen)
{
	wl_stream *s;
	struct wl_error err;
	struct wl_request q;
	size_t n = 0;

	msg[0] = '\0';
	*end = wl_open(c, &s, &err);
	if (*end != WL_OK) {
		wl_error_format(&err, msg, msglen);
		return 0;
	}
	while ((*end = wl_stream_next(s, &q)) == WL_OK) {
		ck_assert_uint_lt(n, max);
		r[n].in = q.prompt_tokens;
		r[n].out = q.output_tokens;
		r[n].nsegs = q.nsegs;
		r[n].key0 = q.segs[0].key;
		r[n].len0 = q.segs[0].len;
		n++;
	}
	if (*end != WL_END)
		wl_error_format(wl_stream_error(s), msg, msglen);
	wl_stream_free(s);
	return n;
}

#define N 20000

/*
 * random: input uniform on [floor(1000 * 0.75), ceil(1000 * 1.25)] =
 * [750, 1250] after the 32-token prefix, output on [75, 125]; their
 * means 1000 (+32) and 100 within 4 standard errors; every prompt starts
 * with the same 32-token prefix.
 */
START_TEST(test_random)
{
	static struct req r[N];
	struct wl_config c;
	wl_err end;
	char msg[1200];
	size_t n;
	double si = 0, so = 0, se_in, se_out;
	uint32_t imin = UINT32_MAX, imax = 0, omin = UINT32_MAX, omax = 0;

	config("generator: {requests: 20000}\n"
	    "dataset: {name: random, input_len: 1000, output_len: 100, "
	    "range_ratio: 0.25, prefix_len: 32}\n", &c);
	n = drain(&c, r, N, &end, msg, sizeof(msg));
	ck_assert_msg(end == WL_END, "%s", msg);
	ck_assert_uint_eq(n, N);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(r[i].nsegs, 2);
		ck_assert_uint_eq(r[i].len0, 32);
		ck_assert(r[i].key0 == r[0].key0);
		imin = r[i].in < imin ? r[i].in : imin;
		imax = r[i].in > imax ? r[i].in : imax;
		omin = r[i].out < omin ? r[i].out : omin;
		omax = r[i].out > omax ? r[i].out : omax;
		si += r[i].in;
		so += r[i].out;
	}
	/* bounds reached and kept */
	ck_assert_uint_eq(imin, 750 + 32);
	ck_assert_uint_eq(imax, 1250 + 32);
	ck_assert_uint_eq(omin, 75);
	ck_assert_uint_eq(omax, 125);
	/* discrete uniform on [a, b]: sd = sqrt(((b-a+1)^2 - 1) / 12) */
	se_in = sqrt((501.0 * 501 - 1) / 12) / sqrt((double)n);
	se_out = sqrt((51.0 * 51 - 1) / 12) / sqrt((double)n);
	ck_assert_msg(fabs(si / n - 1032) < 4 * se_in, "mean in %g",
	    si / n);
	ck_assert_msg(fabs(so / n - 100) < 4 * se_out, "mean out %g",
	    so / n);
	wl_config_release(&c);
}
END_TEST

/* range_ratio 0: every length exact; an odd ratio rounds outward. */
START_TEST(test_random_bounds)
{
	static struct req r[2000];
	struct wl_config c;
	wl_err end;
	char msg[1200];
	size_t n;

	config("generator: {requests: 2000}\n"
	    "dataset: {name: random, input_len: 10, output_len: 1}\n", &c);
	n = drain(&c, r, 2000, &end, msg, sizeof(msg));
	ck_assert_msg(end == WL_END, "%s", msg);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(r[i].in, 10);
		ck_assert_uint_eq(r[i].out, 1);
		ck_assert_uint_eq(r[i].nsegs, 1);	/* no prefix */
	}
	wl_config_release(&c);
	/* 10 * 0.34 = 3.4 -> 3, 10 * 1.66 = 16.6 -> 17; output 3 * 0.34
	 * = 1.02 -> 1, 3 * 1.66 = 4.98 -> 5 */
	config("generator: {requests: 2000}\n"
	    "dataset: {name: random, input_len: 10, output_len: 3, "
	    "range_ratio: 0.66}\n", &c);
	n = drain(&c, r, 2000, &end, msg, sizeof(msg));
	ck_assert_msg(end == WL_END, "%s", msg);
	{
		uint32_t lo = 99, hi = 0, olo = 99, ohi = 0;

		for (size_t i = 0; i < n; i++) {
			lo = r[i].in < lo ? r[i].in : lo;
			hi = r[i].in > hi ? r[i].in : hi;
			olo = r[i].out < olo ? r[i].out : olo;
			ohi = r[i].out > ohi ? r[i].out : ohi;
		}
		ck_assert_uint_eq(lo, 3);
		ck_assert_uint_eq(hi, 17);
		ck_assert_uint_eq(olo, 1);
		ck_assert_uint_eq(ohi, 5);
	}
	wl_config_release(&c);
}
END_TEST

/*
 * prefix_repetition: every prompt is one of num_prefixes prefixes of
 * prefix_len tokens and suffix_len of its own; all 5 prefixes are used,
 * about equally often.
 */
START_TEST(test_prefix_repetition)
{
	static struct req r[5000];
	struct wl_config c;
	uint64_t keys[8];
	size_t counts[8] = { 0 }, nk = 0, n;
	wl_err end;
	char msg[1200];

	config("generator: {requests: 5000}\n"
	    "dataset: {name: prefix_repetition, prefix_len: 48, "
	    "suffix_len: 20, num_prefixes: 5, output_len: 7}\n", &c);
	n = drain(&c, r, 5000, &end, msg, sizeof(msg));
	ck_assert_msg(end == WL_END, "%s", msg);
	ck_assert_uint_eq(n, 5000);
	for (size_t i = 0; i < n; i++) {
		size_t k;

		ck_assert_uint_eq(r[i].in, 68);
		ck_assert_uint_eq(r[i].out, 7);
		ck_assert_uint_eq(r[i].nsegs, 2);
		ck_assert_uint_eq(r[i].len0, 48);
		for (k = 0; k < nk && keys[k] != r[i].key0; k++)
			;
		if (k == nk) {
			ck_assert_uint_lt(nk, 8);
			keys[nk++] = r[i].key0;
		}
		counts[k]++;
	}
	ck_assert_uint_eq(nk, 5);
	for (size_t k = 0; k < nk; k++)	/* 1000 each, sd about 28 */
		ck_assert_msg(counts[k] > 850 && counts[k] < 1150,
		    "prefix %zu: %zu", k, counts[k]);
	wl_config_release(&c);
}
END_TEST

/* The pairs a config draws, as a set (each (in, out) seen). */
static bool
has_pair(const struct req *r, size_t n, uint32_t in, uint32_t out)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].in == in && r[i].out == out)
			return true;
	return false;
}

/*
 * ShareGPT fixture: (estimated) pairs A (12, 33), F (100, 1800), H (15,
 * 20) pass vLLM's filters; B has one turn, C a 1-token prompt, D a
 * 1-token reply, E a 1100-token prompt, G 2100 tokens together.  With
 * output_len 64, D and G pass too (the output checks are skipped or
 * fit) and every output is 64.
 */
START_TEST(test_sharegpt)
{
	static struct req r[3000];
	struct wl_config c;
	char text[2400], path[1024];
	wl_err end;
	char msg[1200];
	size_t n;

	ck_assert_uint_eq(wl__text_tokens("abcd"), 1);
	ck_assert_uint_eq(wl__text_tokens("abcde"), 2);
	ck_assert_uint_eq(wl__text_tokens("\xc3\xa9t\xc3\xa9!"), 1);
	snprintf(text, sizeof(text), "generator: {requests: 3000}\n"
	    "dataset: {name: sharegpt, path: '%s'}\n",
	    fx(path, sizeof(path), "small.json"));
	config(text, &c);
	n = drain(&c, r, 3000, &end, msg, sizeof(msg));
	ck_assert_msg(end == WL_END, "%s", msg);
	ck_assert_uint_eq(n, 3000);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg((r[i].in == 12 && r[i].out == 33) ||
		    (r[i].in == 100 && r[i].out == 1800) ||
		    (r[i].in == 15 && r[i].out == 20), "pair (%u, %u)",
		    r[i].in, r[i].out);
	ck_assert(has_pair(r, n, 12, 33) && has_pair(r, n, 100, 1800) &&
	    has_pair(r, n, 15, 20));
	/* --set of the output length alone keeps the file */
	ck_assert_int_eq(apply("dataset: {output_len: 64}\n", "--set", &c,
	    NULL), WL_OK);
	n = drain(&c, r, 3000, &end, msg, sizeof(msg));
	ck_assert_msg(end == WL_END, "%s", msg);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(r[i].out == 64 && (r[i].in == 12 ||
		    r[i].in == 11 || r[i].in == 100 || r[i].in == 500 ||
		    r[i].in == 15), "pair (%u, %u)", r[i].in, r[i].out);
	ck_assert(has_pair(r, n, 11, 64) && has_pair(r, n, 500, 64));
	wl_config_release(&c);
}
END_TEST

/* Written back by wl_config_write_yaml and read again: the same stream. */
START_TEST(test_roundtrip)
{
	static const char *const cfgs[] = {
		"generator: {requests: 300}\ndataset: {name: random, "
		    "input_len: 64, output_len: 9, range_ratio: 0.5, "
		    "prefix_len: 5}\n",
		"generator: {requests: 300}\ndataset: {name: "
		    "prefix_repetition, num_prefixes: 3}\n",
		NULL,
	};
	static struct req a[300], b[300];
	char text[2400], path[1024], *buf;
	size_t len, na, nb;
	wl_err end;
	char msg[1200];

	snprintf(text, sizeof(text), "generator: {requests: 300}\n"
	    "dataset: {name: sharegpt, path: '%s', output_len: 50}\n",
	    fx(path, sizeof(path), "small.json"));
	for (int k = 0; k < 3; k++) {
		struct wl_config c, d;
		FILE *f = open_memstream(&buf, &len);

		config(k < 2 ? cfgs[k] : text, &c);
		na = drain(&c, a, 300, &end, msg, sizeof(msg));
		ck_assert_msg(end == WL_END, "%s", msg);
		wl_config_write_yaml(&c, f, 0);
		fclose(f);
		config(buf, &d);
		nb = drain(&d, b, 300, &end, msg, sizeof(msg));
		ck_assert_msg(end == WL_END, "%s", msg);
		ck_assert_uint_eq(na, nb);
		ck_assert(memcmp(a, b, na * sizeof(*a)) == 0);
		free(buf);
		wl_config_release(&c);
		wl_config_release(&d);
	}
}
END_TEST

START_TEST(test_bad_config)
{
	refused("dataset: {name: randm}\n",
	    "t.yaml:1:17: dataset: name: expected one of random, sharegpt, "
	    "prefix_repetition");
	refused("dataset: {input_len: 5}\n", "t.yaml:1:10: dataset: needs "
	    "name");
	refused("dataset: {name: random, suffix_len: 3}\n",
	    "t.yaml:1:25: dataset: suffix_len is not a key of random");
	refused("dataset: {name: random, range_ratio: 1}\n",
	    "t.yaml:1:10: dataset: range_ratio must be in [0, 1)");
	refused("dataset: {name: random, input_len: 1, range_ratio: 0.5}\n",
	    "can draw 0 tokens");
	refused("dataset: {name: prefix_repetition, num_prefixes: 0}\n",
	    "t.yaml:1:50: num_prefixes");
	refused("dataset: [random]\n", "t.yaml:1:10:");
}
END_TEST

/* A ShareGPT file that is not one: FILE:LINE:COL when the stream opens. */
START_TEST(test_bad_sharegpt)
{
	static const char *const cases[][2] = {
		{ "bad_object.json", "bad_object.json:1:1: not a ShareGPT "
		    "file: expected a JSON list of conversations" },
		{ "bad_entry.json", "bad_entry.json:2:2: an entry needs "
		    "\"conversations\"" },
		{ "bad_turn.json", "bad_turn.json:2:55: a turn needs "
		    "\"value\"" },
		{ "missing.json", "missing.json: No such file" },
		{ NULL, "dataset: sharegpt needs path (the ShareGPT JSON "
		    "file, vLLM's --dataset-path)" },
	};
	static struct req r[10];

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct wl_config c;
		char text[1400], msg[1200], path[1024];
		wl_err end;

		if (cases[k][0] != NULL)
			snprintf(text, sizeof(text), "generator: {requests: "
			    "10}\ndataset: {name: sharegpt, path: '%s'}\n",
			    fx(path, sizeof(path), cases[k][0]));
		else
			snprintf(text, sizeof(text), "dataset: {name: "
			    "sharegpt}\n");
		config(text, &c);
		(void)drain(&c, r, 10, &end, msg, sizeof(msg));
		ck_assert_int_ne(end, WL_END);
		ck_assert_int_ne(end, WL_OK);
		ck_assert_msg(strstr(msg, cases[k][1]) != NULL,
		    "got '%s', want '%s'", msg, cases[k][1]);
		wl_config_release(&c);
	}
}
END_TEST

static Suite *
bench_suite(void)
{
	Suite *s = suite_create("wl_bench");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_random);
	tcase_add_test(tc, test_random_bounds);
	tcase_add_test(tc, test_prefix_repetition);
	tcase_add_test(tc, test_sharegpt);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_bad_config);
	tcase_add_test(tc, test_bad_sharegpt);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(bench_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
