/*
 * check_calibrate.c -- the copy-cost fit (sim/calfit.h): known alpha,
 * beta and 1/B come back from noisy synthetic sweeps; the non-negativity
 * constraint holds; the CSV reader reports positions.
 */
#include "sim/calfit.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t
mix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* uniform in [-1, 1) */
static double
unit(uint64_t *x)
{
	return (double)(mix(x) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/*
 * The device check's sweep: chunk {4K .. 8M} x n {1, 16, 256, 2048}
 * (at most 512 MiB), seven repetitions, multiplicative noise of +-noise.
 */
static size_t
sweep(struct calfit_obs *o, double a, double b, double nspb, double noise,
      uint64_t seed)
{
	static const double chunk[] = { 4096, 16384, 32768, 65536, 262144,
					2097152, 8388608 };
	static const double nn[] = { 1, 16, 256, 2048 };
	size_t k = 0;

	for (size_t i = 0; i < 7; i++)
		for (size_t j = 0; j < 4; j++) {
			if (chunk[i] * nn[j] > 512.0 * 1048576)
				continue;
			for (int rep = 0; rep < 7; rep++) {
				double t = a + b * nn[j] +
					   nspb * chunk[i] * nn[j];

				o[k].calls = 1;
				o[k].chunks = nn[j];
				o[k].bytes = chunk[i] * nn[j];
				o[k].t_ns = t * (1 + noise * unit(&seed));
				k++;
			}
		}
	return k;
}

static void
near(double got, double want, double rel)
{
	ck_assert_msg(fabs(got - want) <= rel * fabs(want),
		      "got %.6g, want %.6g within %.0f%%", got, want,
		      rel * 100);
}

/* DMA-like terms (gpu-design §3 defaults) and gather-like ones. */
START_TEST(recovers_known_terms)
{
	static const double truth[][3] = {
		{ 10000, 5000, 0.02 },		/* DMA: 50 GB/s */
		{ 6000, 50, 1.0 / 45 },		/* gather: 45 GB/s */
		{ 9000, 4800, 0.021 },
	};
	struct calfit_obs o[256];
	struct calfit_result r;
	char why[256];
	size_t n = sweep(o, truth[_i][0], truth[_i][1], truth[_i][2], 0.02,
			 42 + _i);

	ck_assert_int_eq(calfit_copy(o, n, &r, why, sizeof(why)), 0);
	near(r.alpha_ns, truth[_i][0], 0.10);
	near(r.beta_ns, truth[_i][1], 0.10);
	near(r.ns_per_byte, truth[_i][2], 0.02);
	ck_assert(!r.fixed[0] && !r.fixed[1] && !r.fixed[2]);
	ck_assert_double_le(r.med_rel, 0.02);
	ck_assert_double_le(r.p90_rel, 0.03);
	ck_assert_uint_eq(r.n, n);
}
END_TEST

/* Exact data: exact terms. */
START_TEST(exact_data)
{
	struct calfit_obs o[256];
	struct calfit_result r;
	char why[256];
	size_t n = sweep(o, 12345, 678, 0.0321, 0, 1);

	ck_assert_int_eq(calfit_copy(o, n, &r, why, sizeof(why)), 0);
	near(r.alpha_ns, 12345, 1e-6);
	near(r.beta_ns, 678, 1e-6);
	near(r.ns_per_byte, 0.0321, 1e-6);
	ck_assert_double_le(r.p90_rel, 1e-9);
}
END_TEST

/*
 * No per-chunk cost at all, and noise: the free fit of beta may go
 * negative; the constrained one holds it at 0 and still finds alpha, 1/B.
 */
START_TEST(nonnegative)
{
	struct calfit_obs o[256];
	struct calfit_result r;
	char why[256];
	size_t n = sweep(o, 20000, 0, 0.01, 0.05, 7);

	ck_assert_int_eq(calfit_copy(o, n, &r, why, sizeof(why)), 0);
	ck_assert_double_ge(r.alpha_ns, 0);
	ck_assert_double_ge(r.beta_ns, 0);
	ck_assert_double_ge(r.ns_per_byte, 0);
	ck_assert_double_lt(r.beta_ns, 50);	/* 1% of a 5 us chunk */
	near(r.alpha_ns, 20000, 0.15);
	near(r.ns_per_byte, 0.01, 0.03);
	/* a negative-slope world: the fit keeps every term >= 0 */
	for (size_t i = 0; i < n; i++)
		o[i].t_ns = 1e6 - 0.0001 * o[i].bytes;
	ck_assert_int_eq(calfit_copy(o, n, &r, why, sizeof(why)), 0);
	ck_assert_double_ge(r.beta_ns, 0);
	ck_assert_double_ge(r.ns_per_byte, 0);
	ck_assert(r.fixed[2]);
}
END_TEST

START_TEST(bad_input)
{
	struct calfit_obs o[2] = { { 1, 1, 100, 5 }, { 1, 2, 200, 0 } };
	struct calfit_result r;
	char why[256];

	ck_assert_int_eq(calfit_copy(o, 1, &r, why, sizeof(why)), -1);
	ck_assert_ptr_nonnull(strstr(why, "at least 2"));
	ck_assert_int_eq(calfit_copy(o, 2, &r, why, sizeof(why)), -1);
	ck_assert_ptr_nonnull(strstr(why, "not positive"));
}
END_TEST

START_TEST(quantiles)
{
	double x[] = { 5, 1, 4, 2, 3 };

	ck_assert_double_eq(calfit_quantile(x, 5, 0.5), 3);
	ck_assert_double_eq(calfit_quantile(x, 5, 0.0), 1);
	ck_assert_double_eq_tol(calfit_quantile(x, 5, 0.9), 4.6, 1e-12);
}
END_TEST

/* A mkstemp() template under TMPDIR (else /tmp). */
static void
tmp_name(char *buf, size_t len)
{
	const char *t = getenv("TMPDIR");

	snprintf(buf, len, "%s/kvsim-calfit-XXXXXX", t && *t ? t : "/tmp");
}

START_TEST(csv_reader)
{
	char path[512];
	int fd;
	FILE *f;
	struct calfit_csv c;
	double x;
	int col;

	tmp_name(path, sizeof(path));
	fd = mkstemp(path);
	f = fdopen(fd, "w");

	fputs("dir,n_chunks,dev_ns\nd2h,16,1200.5\n\nh2d,4,12x\nd2h,1\n", f);
	fclose(f);
	ck_assert_int_eq(calfit_csv_open(&c, path), 0);
	ck_assert_int_eq(calfit_csv_col(&c, "bytes"), -1);
	ck_assert_ptr_nonnull(strstr(c.err, "no column 'bytes'"));
	col = calfit_csv_col(&c, "dev_ns");
	ck_assert_int_eq(col, 2);
	ck_assert_int_eq(calfit_csv_next(&c), 1);
	ck_assert_int_eq(calfit_csv_num(&c, col, &x), 0);
	ck_assert_double_eq(x, 1200.5);
	ck_assert_int_eq(calfit_csv_next(&c), 1);	/* blank line skipped */
	ck_assert_int_eq(calfit_csv_num(&c, col, &x), -1);
	ck_assert_ptr_nonnull(strstr(c.err, ":4:7: dev_ns"));
	ck_assert_int_eq(calfit_csv_next(&c), -1);
	ck_assert_ptr_nonnull(strstr(c.err, ":5:1: 2 fields"));
	calfit_csv_close(&c);
	unlink(path);
}
END_TEST

/* A file of one blank line (it crashed the reader once), quoting. */
START_TEST(csv_reader_edges)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{ "\n", ":1:1: empty file, expected a header row" },
		{ "", ":1:1: empty file, expected a header row" },
		{ "dir,n\nd2h,\"4\n", ":2:5: unterminated quoted field" },
		{ "dir,n\nd2h,4\"\n", ":2:6: quote inside an unquoted field" },
	};
	char path[512];
	int fd;
	struct calfit_csv c;
	double x;

	tmp_name(path, sizeof(path));
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FILE *f = fopen(path, "w");

		fputs(cases[i].text, f);
		fclose(f);
		if (calfit_csv_open(&c, path) == 0) {
			ck_assert_int_eq(calfit_csv_next(&c), -1);
		}
		ck_assert_msg(strstr(c.err, cases[i].msg) != NULL, "'%s'",
			      c.err);
		calfit_csv_close(&c);
	}
	/* a quoted field is read as its text */
	{
		FILE *f = fopen(path, "w");

		fputs("dir,\"dev_ns\"\r\n\"d2h\",\"1,5\"\r\n\"h2d\",\"7\"", f);
		fclose(f);
	}
	ck_assert_int_eq(calfit_csv_open(&c, path), 0);
	ck_assert_int_eq(calfit_csv_col(&c, "dev_ns"), 1);
	ck_assert_int_eq(calfit_csv_next(&c), 1);
	ck_assert_str_eq(c.field[0], "d2h");
	ck_assert_int_eq(calfit_csv_num(&c, 1, &x), -1);
	ck_assert_ptr_nonnull(strstr(c.err, ":2:7: dev_ns: expected a number, "
				     "got '1,5'"));
	ck_assert_int_eq(calfit_csv_next(&c), 1);
	ck_assert_int_eq(calfit_csv_num(&c, 1, &x), 0);
	ck_assert_double_eq(x, 7);
	ck_assert_int_eq(calfit_csv_next(&c), 0);
	calfit_csv_close(&c);
	unlink(path);
}
END_TEST

static Suite *
calibrate_suite(void)
{
	Suite *s = suite_create("calibrate");
	TCase *t = tcase_create("fit");

	tcase_add_loop_test(t, recovers_known_terms, 0, 3);
	tcase_add_test(t, exact_data);
	tcase_add_test(t, nonnegative);
	tcase_add_test(t, bad_input);
	tcase_add_test(t, quantiles);
	tcase_add_test(t, csv_reader);
	tcase_add_test(t, csv_reader_edges);
	tcase_set_timeout(t, 60);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(calibrate_suite());
	int nf;

	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
