/*
 * check_sweep.c -- the pieces under `kvsim sweep` and `kvsim compare`:
 * the report reader's messages (reports/sweep_csv.h), sweep grids and their ids
 * (reports/sweep.h), thresholds, Welch's t-test and verdicts
 * (reports/compare.h).
 *
 * Welch's reference values were worked out by hand: 1,2,3,4 against
 * 2,4,6,8 gives t = sqrt 3 (means 2.5 and 5, variances of the means 5/12
 * and 5/3), df = (25/12)^2 / ((5/12)^2/3 + (5/3)^2/3) = 4.4117647, and the
 * two-sided tail 2 Q(sqrt 3, 4.41) = 0.1515805 by numerical integration of
 * Student's density; with a margin of 0.5, t = 2 / sqrt(25/12) and p =
 * 0.2318007.
 */
#include "reports/compare.h"
#include "reports/sweep.h"
#include "reports/sweep_csv.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Write `text` to a temporary file; its name into path. */
static void
put(char *path, size_t len, const char *text)
{
	FILE *f;

	snprintf(path, len, "%s/check_sweep.%ld.csv",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(test_csv_quoting)
{
	char path[512], err[256];
	struct csv_table t;

	put(path, sizeof(path), "a,\"b,c\",d\r\n"
		"1,\"say \"\"hi\"\"\",\r\n"
		"\n"
		"\"x\ny\",2,3");
	ck_assert_int_eq(sweep_csv_read(&t, path, err, sizeof(err)), KV_OK);
	ck_assert_uint_eq(t.ncol, 3);
	ck_assert_str_eq(t.head[1], "b,c");
	ck_assert_uint_eq(t.nrow, 2);
	ck_assert_str_eq(t.row[0][1], "say \"hi\"");
	ck_assert_str_eq(t.row[0][2], "");
	ck_assert_str_eq(t.row[1][0], "x\ny");
	ck_assert_str_eq(t.row[1][2], "3");
	ck_assert(!t.terminated);
	ck_assert_int_eq(csv_table_col(&t, "d"), 2);
	ck_assert_int_eq(csv_table_col(&t, "e"), -1);
	csv_table_release(&t);
	unlink(path);
}
END_TEST

START_TEST(test_csv_malformed)
{
	static const char *const bad[] = {
		"a,b\n1,2,3\n",		/* too many fields */
		"a,b\n1\n",		/* too few */
		"a,b\n\"1,2\n",		/* unterminated quote */
		"a,b\n\"1\"x,2\n",	/* text after a closing quote */
		"a,b\n1\"2,3\n",	/* a quote inside a bare field */
		"",			/* no header */
	};
	char path[512], err[256];
	struct csv_table t;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put(path, sizeof(path), bad[i]);
		ck_assert_int_eq(sweep_csv_read(&t, path, err, sizeof(err)),
				 KV_EINVAL);
		ck_assert_ptr_nonnull(strstr(err, path));
		ck_assert_uint_eq(t.nrow, 0);
		csv_table_release(&t);
	}
	put(path, sizeof(path), "a,b\n1,2\n1,2,3\n");
	sweep_csv_read(&t, path, err, sizeof(err));
	ck_assert_msg(strstr(err, ":3:") != NULL, "no line 3 in '%s'", err);
	unlink(path);
	ck_assert_int_eq(sweep_csv_read(&t, path, err, sizeof(err)),
			 KV_ENOENT);
}
END_TEST

/* The wording sweep and compare users see, one error of each kind. */
START_TEST(test_csv_messages)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "", ":1: empty file (no header)" },
		{ "a,b\n1,2\n\n1,2,3\n", ":4: wrong number of fields "
		  "(expected 2 fields, got 3)" },
		{ "a,b\n1,\"2\n", ":2: unterminated quoted field" },
		{ "a,b\n\"x\ny\"z,2\n", ":3: text after a closing quote" },
		{ "a,b\n1,2\"\n", ":2: quote inside an unquoted field" },
	};
	char path[512], err[256], want[600];
	struct csv_table t;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put(path, sizeof(path), bad[i].text);
		ck_assert_int_eq(sweep_csv_read(&t, path, err, sizeof(err)),
				 KV_EINVAL);
		snprintf(want, sizeof(want), "%s%s", path, bad[i].msg);
		ck_assert_str_eq(err, want);
		csv_table_release(&t);
	}
	unlink(path);
	ck_assert_int_eq(sweep_csv_read(&t, path, err, sizeof(err)),
			 KV_ENOENT);
	snprintf(want, sizeof(want), "%s: No such file or directory", path);
	ck_assert_str_eq(err, want);
}
END_TEST

static sweep *
grid(const char *const *keys, const char *const *const *vals, size_t n)
{
	sweep *s = sweep_new();

	ck_assert_ptr_nonnull(s);
	for (size_t a = 0; a < n; a++) {
		ck_assert_int_eq(sweep_add_axis(s, keys[a]), KV_OK);
		for (const char *const *v = vals[a]; *v != NULL; v++)
			ck_assert_int_eq(sweep_add_value(s, *v), KV_OK);
	}
	return s;
}

START_TEST(test_grid_order_and_ids)
{
	static const char *const keys[] = { "gpu", "engine.block_size",
		"seed" };
	static const char *const g[] = { "a100", "h100", NULL };
	static const char *const b[] = { "16", "32", NULL };
	static const char *const b3[] = { "16", "32", "64", NULL };
	static const char *const sd[] = { "0", "1", "2", NULL };
	const char *const *v2[] = { g, b, sd }, *const *v3[] = { g, b3, sd };
	static const char *const rkeys[] = { "seed", "gpu",
		"engine.block_size" };
	const char *const *rv[] = { sd, g, b };
	sweep *s = grid(keys, v2, 3), *t = grid(keys, v3, 3);
	sweep *r = grid(rkeys, rv, 3);
	char id[SWEEP_ID_LEN], id2[SWEEP_ID_LEN];
	size_t a, c;

	ck_assert_uint_eq(sweep_npoints(s), 12);
	/* first key slowest: point 7 = (h100, 16, 1) */
	ck_assert_str_eq(sweep_value(s, 7, 0), "h100");
	ck_assert_str_eq(sweep_value(s, 7, 1), "16");
	ck_assert_str_eq(sweep_value(s, 7, 2), "1");
	ck_assert(sweep_ids_unique(s, &a, &c));
	/* ids follow the assignments, not the index or the key order */
	for (size_t i = 0; i < sweep_npoints(s); i++) {
		size_t j, k;

		sweep_point_id(s, i, id);
		ck_assert_uint_eq(strlen(id), 12);
		j = (i / 6) * 9 + ((i / 3) % 2) * 3 + i % 3;
		sweep_point_id(t, j, id2);
		ck_assert_str_eq(id, id2);
		k = (i % 3) * 4 + (i / 6) * 2 + (i / 3) % 2;
		sweep_point_id(r, k, id2);
		ck_assert_str_eq(id, id2);
	}
	/* docs/sweep.md: 64-bit FNV-1a of "key=value\n" in key order
	 * (computed independently; the offset basis once lacked a digit) */
	{
		static const char *const fk[] = { "workload.target_rate",
			"seed", "policy" };
		static const char *const fr[] = { "4", NULL };
		static const char *const fs[] = { "0", NULL };
		static const char *const fp[] = { "vllm-v1", NULL };
		const char *const *fv[] = { fr, fs, fp };
		sweep *f = grid(fk, fv, 3);

		sweep_point_id(f, 0, id);
		ck_assert_str_eq(id, "a7a12eb029c1");
		sweep_free(f);
	}
	/* a repeated key or value is refused */
	ck_assert_int_eq(sweep_add_value(s, "1"), KV_EINVAL);
	ck_assert_int_eq(sweep_add_axis(s, "gpu"), KV_EINVAL);
	sweep_free(s);
	sweep_free(t);
	sweep_free(r);
}
END_TEST

/* A point's id covers its configuration's digest (issue 22: a 70B sweep
 * and an 8B sweep with the same axes shared their ids, so --resume took
 * one's points for the other's). */
START_TEST(test_grid_digests)
{
	static const char *const fk[] = { "workload.target_rate", "seed",
		"policy" };
	static const char *const fr[] = { "4", NULL };
	static const char *const fs[] = { "0", "1", NULL };
	static const char *const fp[] = { "vllm-v1", NULL };
	const char *const *fv[] = { fr, fs, fp };
	sweep *f = grid(fk, fv, 3), *g = grid(fk, fv, 3);
	uint64_t d[2] = { 0x0123456789abcdefull, 7 }, e[2] = { 8, 7 };
	char id[SWEEP_ID_LEN], id2[SWEEP_ID_LEN], bare[SWEEP_ID_LEN];
	size_t a, b;

	sweep_point_id(f, 0, bare);
	ck_assert_str_eq(bare, "a7a12eb029c1");
	ck_assert_int_eq(sweep_set_digests(f, d), KV_OK);
	ck_assert_int_eq(sweep_set_digests(g, e), KV_OK);
	/* FNV-1a of "0123456789abcdef\n" then the assignments (computed
	 * independently) */
	sweep_point_id(f, 0, id);
	ck_assert_str_eq(id, "f60cc25d4611");
	/* another base, another id; the same base, the same id */
	sweep_point_id(g, 0, id2);
	ck_assert_str_ne(id, id2);
	sweep_point_id(f, 1, id);
	sweep_point_id(g, 1, id2);
	ck_assert_str_eq(id, id2);
	/* the assignments still tell points of one digest apart */
	e[0] = 7;
	ck_assert_int_eq(sweep_set_digests(g, e), KV_OK);
	ck_assert(sweep_ids_unique(g, &a, &b));
	/* a value added: the digests belonged to the old grid */
	ck_assert_int_eq(sweep_add_value(f, "vllm-v0"), KV_OK);
	sweep_point_id(f, 0, id);
	ck_assert_str_eq(id, bare);
	sweep_free(f);
	sweep_free(g);
	/* no points: nothing to set */
	f = sweep_new();
	ck_assert_int_eq(sweep_set_digests(f, d), KV_EINVAL);
	sweep_free(f);
}
END_TEST

START_TEST(test_grid_too_big)
{
	sweep *s = sweep_new();
	char v[32];

	for (int a = 0; a < 3; a++) {
		snprintf(v, sizeof(v), "k%d", a);
		ck_assert_int_eq(sweep_add_axis(s, v), KV_OK);
		for (int i = 0; i < 101; i++) {
			snprintf(v, sizeof(v), "%d", i);
			ck_assert_int_eq(sweep_add_value(s, v), KV_OK);
		}
	}
	/* 101^3 points: more than SWEEP_MAX_POINTS */
	ck_assert(sweep_npoints(s) == SIZE_MAX);
	sweep_free(s);
}
END_TEST

START_TEST(test_thresholds)
{
	struct cmp_threshold t;
	char err[256];
	static const char *const bad[] = { "ttft_p99_s:5%", "ttft_p99_s",
		":+5%", "ttft_p99_s:+x", "ttft_p99_s:+-5%", "ttft_p99_s:+5%%",
		"ttft:p99:+5%", "a:b:c:+5%" };

	ck_assert_int_eq(cmp_threshold_parse("ttft_p99_s:+5%", &t, err,
					     sizeof(err)), KV_OK);
	ck_assert_str_eq(t.metric, "ttft_p99_s");
	ck_assert(t.dir == 1 && t.pct && t.value == 5.0);
	ck_assert_int_eq(cmp_threshold_parse("throughput_req_s:-2.5%", &t,
					     err, sizeof(err)), KV_OK);
	ck_assert(t.dir == -1 && t.pct && t.value == 2.5);
	ck_assert_int_eq(cmp_threshold_parse("preemptions:+0", &t, err,
					     sizeof(err)), KV_OK);
	ck_assert(t.dir == 1 && !t.pct && t.value == 0.0);
	ck_assert_str_eq(t.text, "+0");
	ck_assert_int_eq(cmp_threshold_parse("ttft_s:p99:+5%", &t, err,
					     sizeof(err)), KV_OK);
	ck_assert_str_eq(t.metric, "ttft_p99_s");
	ck_assert_int_eq(cmp_threshold_parse("kv_usage_mean:off", &t, err,
					     sizeof(err)), KV_OK);
	ck_assert(t.dir == 0);
	ck_assert_str_eq(t.text, "none");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(cmp_threshold_parse(bad[i], &t, err,
						  sizeof(err)) == KV_EINVAL,
			      "accepted %s", bad[i]);
}
END_TEST

START_TEST(test_welch)
{
	static const double a[] = { 1, 2, 3, 4 }, b[] = { 2, 4, 6, 8 };
	static const double k1[] = { 3, 3, 3 }, k2[] = { 4, 4 };
	double t, df, p;

	p = cmp_welch(a, 4, b, 4, 0.0, &t, &df);
	ck_assert_double_eq_tol(t, sqrt(3.0), 1e-12);
	ck_assert_double_eq_tol(df, 4.4117647058823529, 1e-12);
	ck_assert_double_eq_tol(p, 0.1515805, 1e-6);
	/* symmetric in the sides */
	ck_assert_double_eq_tol(cmp_welch(b, 4, a, 4, 0.0, NULL, NULL), p,
				1e-15);
	p = cmp_welch(a, 4, b, 4, 0.5, &t, NULL);
	ck_assert_double_eq_tol(t, 2.0 / sqrt(25.0 / 12.0), 1e-12);
	ck_assert_double_eq_tol(p, 0.2318007, 1e-6);
	/* a margin beyond the difference: p capped at 1 */
	ck_assert_double_eq(cmp_welch(a, 4, b, 4, 10.0, NULL, NULL), 1.0);
	/* constant samples */
	ck_assert_double_eq(cmp_welch(k1, 3, k2, 2, 0.0, NULL, NULL), 0.0);
	ck_assert_double_eq(cmp_welch(k1, 3, k2, 2, 1.0, NULL, NULL), 1.0);
	ck_assert_double_eq(cmp_welch(k1, 3, k1, 2, 0.0, NULL, NULL), 1.0);
	/* values whose variance overflows: no test (it once aborted in
	 * GSL's gamma function), and the verdict goes by the threshold */
	{
		static const double h[] = { 2.5, 2.5, 2.5, 1e308 };
		static const double g[] = { 2.5, 2.6, 2.4, 2.5 };
		struct cmp_threshold up5;
		struct cmp_row r;
		char err[128];

		ck_assert(isnan(cmp_welch(g, 4, h, 4, 0.0, NULL, NULL)));
		ck_assert_int_eq(cmp_threshold_parse("ttft_p99_s:+5%", &up5, err,
						     sizeof(err)), KV_OK);
		cmp_judge(g, 4, h, 4, &up5, 0.05, &r);
		ck_assert_str_eq(r.test, "none");
		ck_assert_int_eq(r.verdict, CMP_REGRESSION);
	}
}
END_TEST

START_TEST(test_verdicts)
{
	struct cmp_threshold up5, down2, any, none;
	struct cmp_row r;
	char err[128];
	static const double b1[] = { 100 }, c1[] = { 106 }, c2[] = { 104 };
	static const double z[] = { 0 }, one[] = { 1 };
	static const double bn[] = { 100, 101, 99 }, cn[] = { 130, 90, 120 };
	static const double cs[] = { 120, 121, 119 };

	cmp_threshold_parse("x:+5%", &up5, err, sizeof(err));
	cmp_threshold_parse("x:-2%", &down2, err, sizeof(err));
	cmp_threshold_parse("x:+0", &any, err, sizeof(err));
	cmp_threshold_parse("x:off", &none, err, sizeof(err));
	/* one seed a side: the threshold alone */
	cmp_judge(b1, 1, c1, 1, &up5, 0.05, &r);
	ck_assert_int_eq(r.verdict, CMP_REGRESSION);
	ck_assert_str_eq(r.test, "none");
	ck_assert(isnan(r.p));
	ck_assert_double_eq_tol(r.delta_pct, 6.0, 1e-12);
	cmp_judge(b1, 1, c2, 1, &up5, 0.05, &r);
	ck_assert_int_eq(r.verdict, CMP_OK);
	cmp_judge(c1, 1, b1, 1, &up5, 0.05, &r);
	ck_assert_int_eq(r.verdict, CMP_IMPROVEMENT);
	/* lower is worse */
	cmp_judge(c1, 1, b1, 1, &down2, 0.05, &r);
	ck_assert_int_eq(r.verdict, CMP_REGRESSION);
	/* from zero: any increase, delta_pct undefined */
	cmp_judge(z, 1, one, 1, &any, 0.05, &r);
	ck_assert_int_eq(r.verdict, CMP_REGRESSION);
	ck_assert(isnan(r.delta_pct));
	cmp_judge(z, 1, one, 1, &up5, 0.05, &r);
	ck_assert_int_eq(r.verdict, CMP_REGRESSION);
	cmp_judge(z, 1, z, 1, &any, 0.05, &r);
	ck_assert_int_eq(r.verdict, CMP_OK);
	ck_assert_double_eq(r.delta_pct, 0.0);
	/* no threshold: ok whatever the change */
	cmp_judge(b1, 1, c1, 1, &none, 0.05, &r);
	ck_assert_int_eq(r.verdict, CMP_OK);
	/* seeds: +13 % on noisy seeds is not significant, on steady ones
	 * it is */
	cmp_judge(bn, 3, cn, 3, &up5, 0.05, &r);
	ck_assert_str_eq(r.test, "welch-t");
	ck_assert_int_eq(r.verdict, CMP_NOT_SIGNIFICANT);
	cmp_judge(bn, 3, cs, 3, &up5, 0.05, &r);
	ck_assert_int_eq(r.verdict, CMP_REGRESSION);
	ck_assert(r.p < 0.05);
	ck_assert_uint_eq(r.nb, 3);
}
END_TEST

/* A percentage with a floor, +X%+Y: from a baseline of 0 the floor
 * decides (swaps from none were a regression at any count); above it both
 * must be exceeded; the default swap and preemption thresholds have one. */
START_TEST(test_floor_threshold)
{
	struct cmp_threshold t;
	struct cmp_row r;
	char err[256];
	const struct cmp_threshold *d;
	size_t nd = cmp_default_thresholds(&d);
	static const double z[] = { 0 }, few[] = { 200 }, many[] = { 300 };
	static const double b[] = { 1000 }, c1[] = { 1150 }, c2[] = { 1350 };

	ck_assert_int_eq(cmp_threshold_parse("swap_out_blocks:+10%+256", &t,
					     err, sizeof(err)), KV_OK);
	ck_assert(t.dir == 1 && t.pct && t.value == 10.0 &&
		  t.min_abs == 256.0);
	ck_assert_str_eq(t.text, "+10%+256");
	cmp_judge(z, 1, few, 1, &t, 0.05, &r);
	ck_assert_int_eq(r.verdict, CMP_OK);
	cmp_judge(z, 1, many, 1, &t, 0.05, &r);
	ck_assert_int_eq(r.verdict, CMP_REGRESSION);
	cmp_judge(b, 1, c1, 1, &t, 0.05, &r);	/* +15 %, +150 */
	ck_assert_int_eq(r.verdict, CMP_OK);
	cmp_judge(b, 1, c2, 1, &t, 0.05, &r);	/* +35 %, +350 */
	ck_assert_int_eq(r.verdict, CMP_REGRESSION);
	cmp_judge(c2, 1, b, 1, &t, 0.05, &r);
	ck_assert_int_eq(r.verdict, CMP_IMPROVEMENT);
	ck_assert_int_eq(cmp_threshold_parse("x:-2%-5", &t, err, sizeof(err)),
			 KV_OK);
	ck_assert(t.dir == -1 && t.min_abs == 5.0);
	static const char *const bad[] = { "x:+10%-5", "x:+10%+", "x:+10%+-5",
		"x:+10%+5%", "x:+10+5", "x:+10%+5x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(cmp_threshold_parse(bad[i], &t, err,
						  sizeof(err)) == KV_EINVAL,
			      "accepted %s", bad[i]);
	for (size_t i = 0; i < nd; i++)
		if (strcmp(d[i].metric, "swap_out_blocks") == 0 ||
		    strcmp(d[i].metric, "preemptions") == 0)
			ck_assert_msg(d[i].min_abs > 0, "%s has no floor",
				      d[i].metric);
}
END_TEST

static Suite *
sweep_suite(void)
{
	Suite *s = suite_create("sweep");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_csv_quoting);
	tcase_add_test(tc, test_csv_messages);
	tcase_add_test(tc, test_csv_malformed);
	tcase_add_test(tc, test_grid_order_and_ids);
	tcase_add_test(tc, test_grid_digests);
	tcase_add_test(tc, test_grid_too_big);
	tcase_add_test(tc, test_thresholds);
	tcase_add_test(tc, test_welch);
	tcase_add_test(tc, test_verdicts);
	tcase_add_test(tc, test_floor_threshold);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(sweep_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
