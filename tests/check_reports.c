/*
 * check_reports.c -- the metrics of reports/rpt.h and the capacity search
 * of reports/capacity.h.
 *
 * Quantiles: on known data the values are worked out by hand (linear
 * interpolation between order statistics: the p-quantile of x[0..n) sorted
 * is x[h] + (h - floor h)(x[h+1] - x[h]) with h = p (n - 1)) and checked
 * against GSL computed independently here.  The ITL histogram is checked
 * against the exact quantiles of the same gaps: within its 1/256 bound.
 * The search is run against synthetic models whose threshold is known.
 * rpt_check() holds on accumulated data, and each of its invariants,
 * broken by hand through the struct (reports/rpt_int.h), is reported by
 * its number.
 */
#include "reports/capacity.h"
#include "reports/rpt.h"
#include "reports/rpt_int.h"

#include <check.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A request with a given TTFT, E2E and queueing delay (ns), 10 tokens. */
static void
add(rpt *r, uint64_t id, int64_t ttft, int64_t e2e, int64_t queue)
{
	struct rpt_req q;

	memset(&q, 0, sizeof(q));
	q.id = id;
	q.arrival_ns = 1000;
	q.first_scheduled_ns = 1000 + queue;
	q.first_token_ns = 1000 + ttft;
	q.finish_ns = 1000 + e2e;
	q.input_tokens = 5;
	q.output_tokens = 10;
	ck_assert_int_eq(rpt_add_request(r, &q), 0);
}

/*
 * A requests.csv row, against snprintf of the same fields: seconds with 9
 * exact decimals (0, one ns, a second less a ns, a long run), 64-bit
 * counters at their limit, empty TPOT and ITL for one output token.
 */
START_TEST(test_request_row)
{
	static const int64_t t[] = { 0, 1, 999999999, 1000000000,
				     86400123456789, INT64_MAX / 2 };
	int64_t a = t[_i % 6], d = t[(_i + 3) % 6];
	struct rpt_req q;
	char *buf = NULL, want[1024];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	rpt *r;

	ck_assert_ptr_nonnull(f);
	r = rpt_new("ab12", f, NULL);
	ck_assert_ptr_nonnull(r);
	memset(&q, 0, sizeof(q));
	q.id = UINT64_MAX - (uint64_t)_i;
	q.replica = (uint32_t)_i;
	q.arrival_ns = a;
	q.first_scheduled_ns = a + d / 4;
	q.first_token_ns = a + d / 2;
	q.finish_ns = a + d;
	q.input_tokens = UINT32_MAX;
	q.output_tokens = _i < 3 ? 1 : 7;
	q.cached_prefix_tokens = 16 * (uint32_t)_i;
	q.itl_sum_ns = (d - d / 2) / 3 * 6;
	q.itl_max_ns = d / 3;
	q.preemptions = 2;
	q.recomputed_tokens = 10;
	q.swapped_out_blocks = 3;
	q.swapped_out_bytes = UINT64_MAX;
	q.frontend_in_ns = d / 4;
	q.frontend_out_ns = d / 8 + 1;
	ck_assert_int_eq(rpt_add_request(r, &q), 0);
	fflush(f);
#define S(ns) (long long)((ns) / 1000000000), (long long)((ns) % 1000000000)
	if (q.output_tokens > 1) {
		int64_t tpot = (q.finish_ns - q.first_token_ns) / 6;

		snprintf(want, sizeof(want), "ab12,%llu,%d,%lld.%09lld,"
			 "%lld.%09lld,%lld.%09lld,%lld.%09lld,%u,7,%u,"
			 "%lld.%09lld,%lld.%09lld,%lld.%09lld,%lld.%09lld,"
			 "%lld.%09lld,%lld.%09lld,2,10,3,%llu,"
			 "%lld.%09lld,%lld.%09lld\n",
			 (unsigned long long)q.id, _i, S(a), S(a + d / 4),
			 S(a + d / 2), S(a + d), UINT32_MAX,
			 q.cached_prefix_tokens, S(d / 2), S(tpot), S(d),
			 S(d / 4), S(q.itl_sum_ns / 6), S(q.itl_max_ns),
			 (unsigned long long)UINT64_MAX,
			 S(q.frontend_in_ns), S(q.frontend_out_ns));
	} else {
		snprintf(want, sizeof(want), "ab12,%llu,%d,%lld.%09lld,"
			 "%lld.%09lld,%lld.%09lld,%lld.%09lld,%u,1,%u,"
			 "%lld.%09lld,,%lld.%09lld,%lld.%09lld,,,2,10,3,%llu,"
			 "%lld.%09lld,%lld.%09lld\n",
			 (unsigned long long)q.id, _i, S(a), S(a + d / 4),
			 S(a + d / 2), S(a + d), UINT32_MAX,
			 q.cached_prefix_tokens, S(d / 2), S(d), S(d / 4),
			 (unsigned long long)UINT64_MAX,
			 S(q.frontend_in_ns), S(q.frontend_out_ns));
	}
#undef S
	ck_assert_str_eq(buf, want);
	rpt_free(r);
	fclose(f);
	free(buf);
}
END_TEST

/* The rows' number writers against printf, digit for digit. */
/*
 * The run id leads every requests.csv and timeseries.csv row as
 * rpt_csv_field writes it: as is, or quoted with its quotes doubled, up
 * to the longest id kept (127 characters, all quotes).
 */
START_TEST(test_run_id_field)
{
	char id[128], *rb = NULL, *tb = NULL, *wb = NULL;
	size_t rn = 0, tn = 0, wn = 0;
	FILE *rf = open_memstream(&rb, &rn), *tf = open_memstream(&tb, &tn);
	FILE *wf = open_memstream(&wb, &wn);
	struct rpt_req q;
	struct rpt_sample sm;
	rpt *r;

	ck_assert(rf != NULL && tf != NULL && wf != NULL);
	switch (_i) {
	case 0: snprintf(id, sizeof(id), "ab12"); break;
	case 1: snprintf(id, sizeof(id), "a,b"); break;
	case 2: snprintf(id, sizeof(id), "say \"x\"\n"); break;
	default: memset(id, '"', 127); id[127] = '\0'; break;
	}
	r = rpt_new(id, rf, tf);
	ck_assert_ptr_nonnull(r);
	memset(&q, 0, sizeof(q));
	q.output_tokens = 1;
	memset(&sm, 0, sizeof(sm));
	ck_assert_int_eq(rpt_add_request(r, &q), 0);
	ck_assert_int_eq(rpt_add_sample(r, &sm), 0);
	rpt_csv_field(wf, id);
	fputc(',', wf);
	fflush(rf);
	fflush(tf);
	fflush(wf);
	ck_assert_uint_gt(wn, _i == 3 ? 256 : 2);
	ck_assert_msg(rn > wn && memcmp(rb, wb, wn) == 0,
		      "requests row: %s", rb);
	ck_assert_msg(tn > wn && memcmp(tb, wb, wn) == 0,
		      "timeseries row: %s", tb);
	rpt_free(r);
	fclose(rf);
	fclose(tf);
	fclose(wf);
	free(rb);
	free(tb);
	free(wb);
}
END_TEST

START_TEST(test_put_numbers)
{
	static const int64_t edge[] = {
		0, 1, 9, 10, 99, 100, 999999999, 1000000000, 1000000001,
		-1, -999999999, -1000000000, 123456789012345678, INT64_MAX,
		INT64_MIN, 5000000, 99999999999,
	};
	uint64_t x = 0x9e3779b97f4a7c15ull;
	char a[64], b[64];

	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]) + 20000; i++) {
		int64_t v;
		uint64_t u, m;

		if (i < sizeof(edge) / sizeof(edge[0])) {
			v = edge[i];
		} else {	/* every length of either sign */
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			v = (int64_t)(x >> (x % 64));
			if (x & 1)
				v = -v;
		}
		u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
		m = u % 1000000000;
		snprintf(b, sizeof(b), "%s%" PRIu64 ".%09" PRIu64,
			 v < 0 ? "-" : "", u / 1000000000, m);
		*rpt__put_sec(a, v) = '\0';
		ck_assert_str_eq(a, b);
		snprintf(b, sizeof(b), "%" PRIu64, u);
		*rpt__put_u(a, u) = '\0';
		ck_assert_str_eq(a, b);
	}
	/* the nine digits after the point (one product, then times 100):
	 * fractions across the whole range, and beside every power of ten
	 * and every multiple of 10^k below 10^9 that a digit turns at */
	for (uint64_t f = 0; f < 1000000000; f += 9973) {
		for (uint64_t d = 1; d <= 100000000; d *= 10) {
			uint64_t g = f / d * d, v;

			for (int k = -1; k <= 1; k++) {
				v = g + (uint64_t)k;
				if ((g == 0 && k < 0) || v >= 1000000000)
					continue;
				snprintf(b, sizeof(b), "7.%09" PRIu64, v);
				*rpt__put_sec(a, 7000000000 + (int64_t)v) =
				    '\0';
				ck_assert_str_eq(a, b);
			}
		}
	}
}
END_TEST

/* rpt__put_fixed against printf's "%.*f", byte for byte: every precision,
 * values of every size, ties and their neighbours (where a product's
 * rounding could go the wrong way), and what printf must write itself. */
START_TEST(test_put_fixed)
{
	static const double edge[] = {
		0.0, -0.0, 0.5, 1.5, 2.5, 0.125, 0.375, 1e-300, 4e-324,
		0.0005, 0.0015, 0.9999995, 0.0000005, 1.0, 12345.6785,
		0x1p52, 0x1p53, 4503599627370495.5, 1e22, 1.7976931348623157e308,
		-1.25, -123.456, 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0, 0.030479,
	};
	uint64_t x = 0x2545f4914f6cdd1dull;
	char a[RPT_FIXED_MAX + 8], b[RPT_FIXED_MAX + 8];
	size_t ne = sizeof(edge) / sizeof(edge[0]);

	for (size_t i = 0; i < ne + 60000; i++) {
		double v;
		int prec = (int)(i % 10);

		if (i < ne * 10) {
			v = edge[i / 10];
		} else {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			switch (x >> 62) {
			case 0:	/* uniform in [0, 10^k) */
				v = (double)(x >> 11) * 0x1p-53 *
				    pow(10.0, (double)((x >> 3) % 16));
				break;
			case 1:	/* a tie at this precision, and beside it */
				v = ((double)((x >> 20) % 100000) + 0.5) /
				    pow(10.0, prec);
				if (x & 2)
					v = nextafter(v, (x & 4) ? 1e300 : 0);
				break;
			case 2:	/* the ratios a timeseries row prints */
				v = (double)((x >> 8) % 30000) /
				    (double)(1 + (x >> 40) % 30000);
				break;
			default: /* any bits */
				memcpy(&v, &x, sizeof(v));
				break;
			}
		}
		snprintf(b, sizeof(b), "%.*f", prec, v);
		*rpt__put_fixed(a, v, prec) = '\0';
		ck_assert_msg(strcmp(a, b) == 0, "%.17g at %d: %s, printf %s",
			      v, prec, a, b);
	}
}
END_TEST

START_TEST(test_quantiles_known)
{
	rpt *r = rpt_new("t", NULL, NULL);

	ck_assert_ptr_nonnull(r);
	/* TTFT 1..100 s, in a shuffled order (i * 37 mod 100 visits all). */
	for (int i = 0; i < 100; i++) {
		int64_t v = (int64_t)((i * 37) % 100 + 1) * 1000000000;

		add(r, (uint64_t)i, v, v + 9000000000, v / 2);
	}
	/* h = 0.99 * 99 = 98.01: x[98] = 99, x[99] = 100 -> 99.01 */
	ck_assert_double_eq_tol(rpt_quantile(r, "ttft", 0.99), 99.01, 1e-9);
	/* h = 49.5: (50 + 51) / 2 */
	ck_assert_double_eq_tol(rpt_quantile(r, "ttft", 0.5), 50.5, 1e-9);
	ck_assert_double_eq_tol(rpt_quantile(r, "ttft", 0.0), 1.0, 1e-12);
	ck_assert_double_eq_tol(rpt_quantile(r, "ttft", 1.0), 100.0, 1e-12);
	/* p99.9: h = 98.901 -> 99.901 */
	ck_assert_double_eq_tol(rpt_quantile(r, "ttft", 0.999), 99.901,
				1e-9);
	ck_assert_double_eq_tol(rpt_mean(r, "ttft"), 50.5, 1e-9);
	/* E2E is TTFT + 9 s; TPOT = 9 s / 9 gaps = 1 s for everyone */
	ck_assert_double_eq_tol(rpt_quantile(r, "e2e", 0.99), 108.01, 1e-9);
	ck_assert_double_eq_tol(rpt_quantile(r, "tpot", 0.9), 1.0, 1e-12);
	ck_assert_double_eq_tol(rpt_quantile(r, "queue", 0.5), 25.25, 1e-9);
	/* counting over a threshold, then kept up to date */
	ck_assert_uint_eq(rpt_count_over(r, "ttft", 90.0), 10);
	add(r, 100, 95000000000, 96000000000, 0);
	ck_assert_uint_eq(rpt_count_over(r, "ttft", 90.0), 11);
	ck_assert_uint_eq(rpt_count_over(r, "ttft", 99.5), 1);
	rpt_free(r);
}
END_TEST

START_TEST(test_quantiles_match_gsl)
{
	gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
	rpt *r = rpt_new("t", NULL, NULL);
	size_t n = 5001;
	double *x = malloc(n * sizeof(*x));
	static const double ps[] = { 0.5, 0.9, 0.95, 0.99, 0.999 };

	gsl_rng_set(g, 42);
	for (size_t i = 0; i < n; i++) {
		/* log-normal-ish TTFTs in whole ns */
		int64_t v = (int64_t)(exp(gsl_rng_uniform(g) * 8) * 1e6);

		x[i] = (double)v / 1e9;
		add(r, i, v, v + 1, 0);
	}
	gsl_sort(x, 1, n);
	for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++)
		ck_assert_double_eq_tol(rpt_quantile(r, "ttft", ps[k]),
			gsl_stats_quantile_from_sorted_data(x, 1, n, ps[k]),
			1e-12);
	free(x);
	rpt_free(r);
	gsl_rng_free(g);
}
END_TEST

/*
 * rpt__sort against gsl_sort, bit for bit: sizes around the insertion
 * cut-off and the byte buckets, samples that share their leading bytes
 * (whole ns as seconds), duplicates, negatives, and spans of exponents.
 */
START_TEST(test_sort_matches_gsl)
{
	static const size_t ns[] = { 0, 1, 2, 47, 48, 49, 255, 256, 257,
				     5000, 100003 };
	gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
	size_t cap = 100003;
	double *a = malloc(cap * sizeof(*a)), *b = malloc(cap * sizeof(*b));
	int sorted = 0;

	gsl_rng_set(g, 7);
	for (int kind = 0; kind < 5; kind++)
		for (size_t z = 0; z < sizeof(ns) / sizeof(ns[0]); z++) {
			size_t n = ns[z];

			for (size_t i = 0; i < n; i++) {
				double u = gsl_rng_uniform(g);

				switch (kind) {
				case 0:	/* TTFT-like: whole ns, log-spread */
					a[i] = (double)(int64_t)(exp(u * 12) *
								 1e4) / 1e9;
					break;
				case 1:	/* few distinct values */
					a[i] = (double)gsl_rng_uniform_int(g,
									   7);
					break;
				case 2:	/* signs and exponents all over */
					a[i] = (u - 0.5) * pow(10.0,
					    (double)gsl_rng_uniform_int(g,
									 40) -
					    20.0);
					break;
				case 3:	/* one value */
					a[i] = 0.125;
					break;
				default: /* close neighbours: one ulp apart */
					a[i] = nextafter(1.0, 2.0 + u) +
					       (double)gsl_rng_uniform_int(g,
									   3) *
						   0x1p-52;
					break;
				}
				b[i] = a[i];
			}
			rpt__sort(a, n);
			gsl_sort(b, 1, n);
			ck_assert_msg(n == 0 || memcmp(a, b, n * sizeof(*a)) == 0,
				      "kind %d, n %zu: order differs", kind, n);
			sorted += n > 1;
		}
	ck_assert_int_eq(sorted, 5 * 9);
	free(a);
	free(b);
	gsl_rng_free(g);
}
END_TEST

START_TEST(test_itl_histogram_bound)
{
	gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
	rpt *r = rpt_new("t", NULL, NULL);
	size_t n = 200000;
	double *x = malloc(n * sizeof(*x));
	static const double ps[] = { 0.01, 0.5, 0.9, 0.95, 0.99, 0.999 };

	gsl_rng_set(g, 7);
	for (size_t i = 0; i < n; i++) {
		/* gaps from 100 ns to ~3 s, spread over the buckets */
		int64_t v = (int64_t)(100.0 * exp(gsl_rng_uniform(g) * 17));

		x[i] = (double)v;
		rpt_add_itl(r, v);
	}
	gsl_sort(x, 1, n);
	for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++) {
		double exact = gsl_stats_quantile_from_sorted_data(x, 1, n,
								    ps[k]);
		double got = rpt_quantile(r, "itl", ps[k]) * 1e9;

		ck_assert_msg(fabs(got - exact) <= exact / 256.0 + 1e-9,
			      "p%g: %.3f vs exact %.3f", ps[k], got, exact);
	}
	/* exact below 256 ns; every bucket's value lies inside it */
	for (int64_t v = 0; v < 256; v++)
		ck_assert_double_eq(rpt_itl_value(rpt_itl_bucket(v)),
				    (double)v);
	for (int64_t v = 256; v < 5000000; v = v * 3 / 2 + 7) {
		size_t b = rpt_itl_bucket(v);

		ck_assert_msg(fabs(rpt_itl_value(b) - (double)v) <=
			      (double)v / 256.0, "gap %lld", (long long)v);
		ck_assert_uint_ge(rpt_itl_bucket(v + 1), b);
	}
	ck_assert_uint_gt(rpt_itl_bucket(INT64_MAX), rpt_itl_bucket(1LL << 40));
	free(x);
	rpt_free(r);
	gsl_rng_free(g);
}
END_TEST

START_TEST(test_goodput)
{
	rpt *r = rpt_new("t", NULL, NULL);

	/* TTFT <= 2 s and E2E <= 10 s: requests 0 and 1 meet both, 2 misses
	 * TTFT, 3 misses E2E */
	rpt_set_slo(r, 2.0, 0, 10.0);
	add(r, 0, 1000000000, 5000000000, 0);
	add(r, 1, 2000000000, 10000000000, 0);
	add(r, 2, 2000000001, 3000000000, 0);
	add(r, 3, 1000000000, 10000000001, 0);
	ck_assert_uint_eq(rpt_good(r), 2);
	ck_assert_uint_eq(rpt_completed(r), 4);
	rpt_free(r);
}
END_TEST

/* A collector fed a mix of requests, gaps and questions. */
static rpt *
accumulated(void)
{
	rpt *r = rpt_new("t", NULL, NULL);
	struct rpt_req q;

	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rpt_check(r), 0);	/* empty */
	rpt_set_slo(r, 2.0, 0.05, 0);
	for (uint64_t i = 0; i < 50; i++) {
		memset(&q, 0, sizeof(q));
		q.id = i;
		q.arrival_ns = (int64_t)i * 1000000;
		q.first_scheduled_ns = q.arrival_ns + (int64_t)(i % 7) * 1000;
		q.first_token_ns = q.first_scheduled_ns + 50000000 +
				   (int64_t)(i % 5) * 1000000000;
		q.output_tokens = (uint32_t)(i % 4);	/* 0..3 */
		q.input_tokens = 100;
		q.finish_ns = q.first_token_ns + 20000000 * q.output_tokens;
		if (q.output_tokens > 1) {
			q.itl_sum_ns = 20000000 *
				       (int64_t)(q.output_tokens - 1);
			q.itl_max_ns = 25000000;
			for (uint32_t k = 1; k < q.output_tokens; k++)
				rpt_add_itl(r, 20000000);
		}
		ck_assert_int_eq(rpt_add_request(r, &q), 0);
		if (i == 20) {
			rpt_quantile(r, "ttft", 0.5);	/* sorts */
			rpt_count_over(r, "e2e", 1.0);	/* watches */
		}
		ck_assert_int_eq(rpt_check(r), 0);
	}
	return r;
}

START_TEST(test_check_holds)
{
	rpt *r = accumulated();

	rpt_quantile(r, "tpot", 0.99);
	rpt_count_over(r, "ttft", 0.5);
	ck_assert_int_eq(rpt_check(r), 0);
	ck_assert_uint_gt(rpt_good(r), 0);
	rpt_free(r);
}
END_TEST

/* Break invariant _i + 1 of rpt.h by hand; rpt_check names it. */
START_TEST(test_check_each)
{
	rpt *r = accumulated();
	struct rpt_vec *e2e = &r->m[RPT_M_E2E];
	int inv = _i + 1;

	rpt_quantile(r, "e2e", 0.5);
	switch (inv) {
	case RPT_INV_SAMPLES:
		r->m[RPT_M_QUEUE].n--;
		break;
	case RPT_INV_TPOT:
		r->m[RPT_M_TPOT].n = r->completed + 1;
		break;
	case RPT_INV_GOOD:
		r->good = r->completed + 1;
		break;
	case RPT_INV_STORAGE:
		e2e->cap = e2e->n - 1;
		break;
	case RPT_INV_SORTED: {
		double x = e2e->v[0];

		e2e->v[0] = e2e->v[e2e->n - 1];
		e2e->v[e2e->n - 1] = x;
		break;
	}
	case RPT_INV_WATCH:
		rpt_count_over(r, "queue", 0.0);
		r->m[RPT_M_QUEUE].over++;
		break;
	case RPT_INV_HIST:
		r->itl_hist[rpt_itl_bucket(7)]++;
		break;
	case RPT_INV_GAPS:
		r->itl_n = r->out_tokens;
		break;
	case RPT_INV_ITL:
		r->itl_sum_ns = r->itl_max_ns * (int64_t)r->itl_n + 1;
		break;
	case RPT_INV_SUMS:
		r->m[RPT_M_TTFT].sum = -1.0;
		break;
	}
	ck_assert_int_eq(rpt_check(r), inv);
	rpt_free(r);
}
END_TEST

START_TEST(test_slo_parse)
{
	struct cap_slo s;
	char why[256], buf[128];
	static const char *const bad[] = { "ttft", "ttft_s:p99", "ttft_s<=2",
		"foo_s:p99<=2", "ttft_s:q99<=2", "ttft_s:p99<=0",
		"ttft_s:p99<=-1", "ttft_s:p99<=x", "ttft_s:p99<=", "ttft_s:<=1",
		"ttft_s:p0<=1", "ttft_s:p99x<=1", NULL };

	ck_assert_int_eq(cap_slo_parse("ttft_s:p99<=2.0", &s, why,
				       sizeof(why)), 0);
	ck_assert_str_eq(s.metric, "ttft");
	ck_assert_double_eq_tol(s.p, 0.99, 1e-15);
	ck_assert_double_eq(s.limit_s, 2.0);
	cap_slo_format(&s, buf, sizeof(buf));
	ck_assert_str_eq(buf, "ttft_s:p99<=2");
	ck_assert_int_eq(cap_slo_parse("tpot_s:p999<=0.05", &s, why,
				       sizeof(why)), 0);
	ck_assert_double_eq_tol(s.p, 0.999, 1e-15);
	ck_assert_int_eq(cap_slo_parse("e2e:p50<=30", &s, why, sizeof(why)),
			 0);
	ck_assert_double_eq_tol(s.p, 0.5, 1e-15);
	ck_assert_int_eq(cap_slo_parse("queue_s:mean<=1", &s, why,
				       sizeof(why)), 0);
	ck_assert(s.p < 0);
	/* p100 is not p10 read as 0.100 */
	ck_assert_int_eq(cap_slo_parse("ttft_s:p100<=1", &s, why,
				       sizeof(why)), -1);
	ck_assert_ptr_nonnull(strstr(why, "'max'"));
	ck_assert_int_eq(cap_slo_parse("ttft_s:p10<=1", &s, why, sizeof(why)),
			 0);
	ck_assert(fabs(s.p - 0.1) < 1e-12);
	ck_assert_int_eq(cap_slo_parse("itl_s:max<=1", &s, why, sizeof(why)),
			 0);
	ck_assert_double_eq(s.p, 1.0);
	for (size_t i = 0; bad[i] != NULL; i++) {
		why[0] = '\0';
		ck_assert_msg(cap_slo_parse(bad[i], &s, why, sizeof(why)) != 0,
			      "accepted %s", bad[i]);
		ck_assert_msg(strstr(why, "--slo") != NULL, "%s: %s", bad[i],
			      why);
	}
}
END_TEST

/* A synthetic system: the SLO holds exactly up to `threshold` req/s. */
struct synth {
	double threshold;
	unsigned calls;
	double last;
	int fail_at;		/* return this status on that call (0: never) */
};

static int
synth_eval(void *ctx, double qps, bool *met)
{
	struct synth *s = ctx;

	s->calls++;
	s->last = qps;
	if (s->fail_at && (int)s->calls == s->fail_at)
		return 3;
	*met = qps <= s->threshold;
	return 0;
}

START_TEST(test_search_finds_threshold)
{
	static const double thr[] = { 7.3, 0.031, 123.456, 1.0, 999.0 };
	static const double starts[] = { 1.0, 50.0, 0.5 };

	for (size_t i = 0; i < sizeof(thr) / sizeof(thr[0]); i++)
		for (size_t j = 0; j < sizeof(starts) / sizeof(starts[0]);
		     j++) {
			struct synth s = { thr[i], 0, 0, 0 };
			struct cap_search_opts o = { starts[j], 0.01, 10000,
						     0.01, 100 };
			struct cap_search_result r;

			ck_assert_int_eq(cap_search(&o, synth_eval, &s, &r),
					 0);
			ck_assert(!r.capped && !r.none);
			/* met, and within the tolerance under the truth */
			ck_assert(r.max_qps <= thr[i]);
			ck_assert_msg(r.max_qps >= thr[i] * (1 - 0.01),
				      "thr %g start %g: got %g", thr[i],
				      starts[j], r.max_qps);
			ck_assert(r.min_fail_qps > thr[i]);
			ck_assert(r.min_fail_qps - r.max_qps <=
				  0.01 * r.min_fail_qps);
			ck_assert_uint_eq(r.sims, s.calls);
			/* bracketing is logarithmic, bisection too */
			ck_assert_uint_le(r.sims, 30);
		}
}
END_TEST

START_TEST(test_search_edges)
{
	struct synth s = { 1e9, 0, 0, 0 };
	struct cap_search_opts o = { 1.0, 0.01, 100, 0.05, 100 };
	struct cap_search_result r;

	/* never misses: capped at qps_max, which was simulated */
	ck_assert_int_eq(cap_search(&o, synth_eval, &s, &r), 0);
	ck_assert(r.capped);
	ck_assert_double_eq(r.max_qps, 100);
	ck_assert_double_eq(s.last, 100);
	/* never meets: none, after trying qps_min */
	s = (struct synth){ 0.001, 0, 0, 0 };
	ck_assert_int_eq(cap_search(&o, synth_eval, &s, &r), 0);
	ck_assert(r.none);
	ck_assert_double_eq(r.max_qps, 0);
	ck_assert_double_eq(s.last, 0.01);
	/* the simulation budget bounds the work */
	s = (struct synth){ 7.3, 0, 0, 0 };
	o.max_sims = 4;
	o.tol = 1e-9;
	ck_assert_int_eq(cap_search(&o, synth_eval, &s, &r), 0);
	ck_assert_uint_eq(r.sims, 4);
	ck_assert(r.max_qps <= 7.3 && r.max_qps > 0);
	ck_assert(!r.none && !r.capped);
	/* a budget spent before any rate met is no answer (it read as a
	 * capacity of 0 with exit status 0), and one spent before any rate
	 * missed only a lower bound */
	s = (struct synth){ 0.05, 0, 0, 0 };
	o.max_sims = 3;
	ck_assert_int_eq(cap_search(&o, synth_eval, &s, &r), 0);
	ck_assert_uint_eq(r.sims, 3);
	ck_assert(r.none && !r.capped);
	ck_assert_double_eq(r.max_qps, 0);
	s = (struct synth){ 50, 0, 0, 0 };
	ck_assert_int_eq(cap_search(&o, synth_eval, &s, &r), 0);
	ck_assert(r.capped && !r.none);
	ck_assert_double_eq(r.max_qps, 4);
	/* an evaluation error stops the search with its status */
	s = (struct synth){ 7.3, 0, 0, 2 };
	o.max_sims = 100;
	ck_assert_int_eq(cap_search(&o, synth_eval, &s, &r), 3);
	ck_assert_uint_eq(s.calls, 2);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("reports");
	TCase *tc = tcase_create("all");

	tcase_add_test(tc, test_put_numbers);
	tcase_add_test(tc, test_put_fixed);
	tcase_add_test(tc, test_quantiles_known);
	tcase_add_loop_test(tc, test_request_row, 0, 6);
	tcase_add_loop_test(tc, test_run_id_field, 0, 4);
	tcase_add_test(tc, test_quantiles_match_gsl);
	tcase_add_test(tc, test_sort_matches_gsl);
	tcase_add_test(tc, test_itl_histogram_bound);
	tcase_add_test(tc, test_goodput);
	tcase_add_test(tc, test_check_holds);
	tcase_add_loop_test(tc, test_check_each, 0, RPT_INV_SUMS);
	tcase_add_test(tc, test_slo_parse);
	tcase_add_test(tc, test_search_finds_threshold);
	tcase_add_test(tc, test_search_edges);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
