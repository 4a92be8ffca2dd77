/*
 * check_wl_gen.c -- the synthetic generators, checked statistically with
 * fixed seeds.  Each distribution test is a goodness-of-fit test at the
 * 0.1% level (Kolmogorov-Smirnov: D < 1.95/sqrt(N); chi-square: the
 * 0.999 quantile), and each kind of test also has a negative control that
 * must *fail* it (a wrong CV, a wrong exponent), so a test that cannot
 * fail is caught here.  Then prefix sharing, sessions, n > 1, and
 * determinism: same seed, same bytes.
 */
#include "config.h"

#include "workloads/wl.h"
#include "workloads/wl_int.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

static void
gen_init(struct wl_config *c, uint64_t seed, uint64_t n)
{
	wl_config_init(c);
	c->seed = seed;
	c->gen.requests = n;
}

/* Every request of a config; arrays owned by the caller. */
struct sample {
	size_t n;
	int64_t *t;
	double *in, *out;
	uint32_t *nn;
};

static void
collect(const struct wl_config *c, struct sample *s)
{
	wl_stream *st;
	struct wl_error err;
	struct wl_request r;
	size_t cap = c->gen.requests ? c->gen.requests : 100000;
	wl_err rc;

	memset(s, 0, sizeof(*s));
	s->t = malloc(cap * sizeof(*s->t));
	s->in = malloc(cap * sizeof(*s->in));
	s->out = malloc(cap * sizeof(*s->out));
	s->nn = malloc(cap * sizeof(*s->nn));
	ck_assert_int_eq(wl_open(c, &st, &err), WL_OK);
	while ((rc = wl_stream_next(st, &r)) == WL_OK) {
		ck_assert_uint_lt(s->n, cap);
		s->t[s->n] = r.arrival_ns;
		s->in[s->n] = r.prompt_tokens;
		s->out[s->n] = r.output_tokens;
		s->nn[s->n] = r.n;
		if (s->n > 0)
			ck_assert_int_ge(r.arrival_ns, s->t[s->n - 1]);
		s->n++;
		ck_assert_int_eq(wl_stream_check(st), 0);
	}
	ck_assert_int_eq(rc, WL_END);
	ck_assert_int_eq(wl_stream_check(st), 0);
	wl_stream_free(st);
}

static void
sample_free(struct sample *s)
{
	free(s->t);
	free(s->in);
	free(s->out);
	free(s->nn);
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * Kolmogorov-Smirnov statistic D of x[0..n) (sorted here) against cdf,
 * for values rounded to a grid of step 2h (h = 0.5 for integer lengths,
 * 0.5 ns for times): the ECDF at x is compared with cdf(x + h), and the
 * ECDF just below x with cdf(x - h), so ties from rounding are fair.
 */
static double
ks(double *x, size_t n, double (*cdf)(double, const double *),
    const double *par, double h)
{
	double d = 0;

	qsort(x, n, sizeof(*x), cmp_d);
	for (size_t i = 0; i < n; i++) {
		double a = (double)(i + 1) / (double)n - cdf(x[i] + h, par);
		double b = cdf(x[i] - h, par) - (double)i / (double)n;

		if (a > d)
			d = a;
		if (b > d)
			d = b;
	}
	return d;
}

#define NS_H 0.5e-9	/* times are rounded to whole ns */

static double
ks_crit(size_t n)
{
	return 1.95 / sqrt((double)n);	/* alpha = 0.001 */
}

static double
cdf_exp(double x, const double *p)
{
	return x <= 0 ? 0 : gsl_cdf_exponential_P(x, p[0]);
}

static double
cdf_gamma(double x, const double *p)
{
	return x <= 0 ? 0 : gsl_cdf_gamma_P(x, p[0], p[1]);
}

/* Normal (p[0], p[1]) truncated below at p[2] - 0.5. */
static double
cdf_normal_trunc(double x, const double *p)
{
	double lo = gsl_cdf_gaussian_P(p[2] - 0.5 - p[0], p[1]);

	if (x < p[2] - 0.5)
		return 0;
	return (gsl_cdf_gaussian_P(x - p[0], p[1]) - lo) / (1 - lo);
}

static double
cdf_lognormal(double x, const double *p)
{
	return x <= 0 ? 0 : gsl_cdf_lognormal_P(x, p[0], p[1]);
}

/* Inter-arrival gaps in seconds, the first from time 0. */
static double *
gaps(const struct sample *s)
{
	double *g = malloc(s->n * sizeof(*g));

	for (size_t i = 0; i < s->n; i++)
		g[i] = (double)(s->t[i] - (i ? s->t[i - 1] : 0)) / 1e9;
	return g;
}

START_TEST(test_poisson)
{
	struct wl_config c;
	struct sample s;
	double *g, par[1] = { 1.0 / 5 }, mean = 0;

	gen_init(&c, 11, 20000);
	c.gen.arrival.rate = 5;
	collect(&c, &s);
	ck_assert_uint_eq(s.n, 20000);
	g = gaps(&s);
	for (size_t i = 0; i < s.n; i++)
		mean += g[i] / (double)s.n;
	ck_assert_double_eq_tol(mean, 0.2, 4 * 0.2 / sqrt(20000));
	ck_assert_double_lt(ks(g, s.n, cdf_exp, par, NS_H), ks_crit(s.n));
	free(g);
	sample_free(&s);
	/* Negative control: bursty gaps (CV 2) are not exponential. */
	c.gen.arrival.kind = WL_ARR_GAMMA;
	c.gen.arrival.cv = 2;
	collect(&c, &s);
	g = gaps(&s);
	ck_assert_double_gt(ks(g, s.n, cdf_exp, par, NS_H), ks_crit(s.n));
	free(g);
	sample_free(&s);
	wl_config_release(&c);
}
END_TEST

START_TEST(test_gamma)
{
	static const double cvs[] = { 0.5, 2.0, 4.0 };
	struct wl_config c;
	struct sample s;

	for (size_t i = 0; i < 3; i++) {
		double cv = cvs[i], k = 1 / (cv * cv), par[2], *g;

		gen_init(&c, 100 + i, 30000);
		c.gen.arrival.kind = WL_ARR_GAMMA;
		c.gen.arrival.rate = 8;
		c.gen.arrival.cv = cv;
		collect(&c, &s);
		g = gaps(&s);
		par[0] = k;
		par[1] = 1 / (8 * k);
		ck_assert_double_lt(ks(g, s.n, cdf_gamma, par, NS_H),
		    ks_crit(s.n));
		/* Negative control: the same sample against CV x 1.25. */
		k = 1 / (1.5625 * cv * cv);
		par[0] = k;
		par[1] = 1 / (8 * k);
		ck_assert_double_gt(ks(g, s.n, cdf_gamma, par, NS_H),
		    ks_crit(s.n));
		free(g);
		sample_free(&s);
		wl_config_release(&c);
	}
}
END_TEST

START_TEST(test_constant)
{
	struct wl_config c;
	struct sample s;

	gen_init(&c, 1, 1000);
	c.gen.arrival.kind = WL_ARR_CONSTANT;
	c.gen.arrival.rate = 3;
	collect(&c, &s);
	for (size_t i = 0; i < s.n; i++)
		ck_assert_int_eq(s.t[i], llround((double)(i + 1) * 1e9 / 3));
	sample_free(&s);
	wl_config_release(&c);
}
END_TEST

START_TEST(test_onoff_schedule)
{
	struct wl_config c;
	struct sample s;
	size_t on = 0;
	struct wl_rate_seg segs[3] = { { 60, 2 }, { 30, 0 }, { 60, 8 } };
	size_t cnt[3] = { 0, 0, 0 };

	/* 10 req/s for 5 s, silent for 5 s, for 100 s. */
	gen_init(&c, 5, 0);
	c.gen.duration_s = 100;
	c.gen.arrival.kind = WL_ARR_ONOFF;
	c.gen.arrival.rate = 10;
	c.gen.arrival.on_s = 5;
	c.gen.arrival.off_s = 5;
	collect(&c, &s);
	for (size_t i = 0; i < s.n; i++) {
		int64_t phase = s.t[i] % 10000000000LL;

		ck_assert_int_lt(s.t[i], 100000000000LL);
		ck_assert_int_lt(phase, 5000000000LL);
		on++;
	}
	ck_assert_double_eq_tol((double)on, 500, 4 * sqrt(500));
	sample_free(&s);
	wl_config_release(&c);
	/* A schedule that ends: counts per piece match rate x duration. */
	gen_init(&c, 6, 0);
	c.gen.arrival.kind = WL_ARR_SCHEDULE;
	c.gen.arrival.segs = malloc(sizeof(segs));
	memcpy(c.gen.arrival.segs, segs, sizeof(segs));
	c.gen.arrival.nsegs = 3;
	collect(&c, &s);
	for (size_t i = 0; i < s.n; i++) {
		double t = (double)s.t[i] / 1e9;

		ck_assert_double_lt(t, 150);
		cnt[t < 60 ? 0 : t < 90 ? 1 : 2]++;
	}
	ck_assert_uint_eq(cnt[1], 0);
	ck_assert_double_eq_tol((double)cnt[0], 120, 4 * sqrt(120));
	ck_assert_double_eq_tol((double)cnt[2], 480, 4 * sqrt(480));
	sample_free(&s);
	/* Repeating: the pattern goes on until duration_s. */
	c.gen.arrival.repeat = true;
	c.gen.duration_s = 1500;
	collect(&c, &s);
	ck_assert_double_eq_tol((double)s.n, 6000, 4 * sqrt(6000));
	sample_free(&s);
	wl_config_release(&c);
}
END_TEST

START_TEST(test_lengths_continuous)
{
	struct wl_config c;
	struct sample s;
	double par[3], mean = 0;

	/* Normal truncated to >= 1 by resampling, not clamping. */
	gen_init(&c, 21, 20000);
	c.gen.prompt.kind = WL_DIST_NORMAL;
	c.gen.prompt.mean = 100;
	c.gen.prompt.sd = 100;
	collect(&c, &s);
	for (size_t i = 0; i < s.n; i++)
		ck_assert_double_ge(s.in[i], 1);
	par[0] = 100;
	par[1] = 100;
	par[2] = 1;
	ck_assert_double_lt(ks(s.in, s.n, cdf_normal_trunc, par, 0.5),
	    ks_crit(s.n));
	/* Negative control: the untruncated law does not fit. */
	par[2] = -1e9;
	ck_assert_double_gt(ks(s.in, s.n, cdf_normal_trunc, par, 0.5),
	    ks_crit(s.n));
	sample_free(&s);
	wl_config_release(&c);
	/* Lognormal from mean and cv. */
	gen_init(&c, 22, 20000);
	c.gen.output.kind = WL_DIST_LOGNORMAL;
	c.gen.output.sigma = sqrt(log1p(1.5 * 1.5));
	c.gen.output.mu = log(1000) - c.gen.output.sigma *
	    c.gen.output.sigma / 2;
	collect(&c, &s);
	for (size_t i = 0; i < s.n; i++)
		mean += s.out[i] / (double)s.n;
	ck_assert_double_eq_tol(mean, 1000, 4 * 1500 / sqrt(20000));
	par[0] = c.gen.output.mu;
	par[1] = c.gen.output.sigma;
	ck_assert_double_lt(ks(s.out, s.n, cdf_lognormal, par, 0.5),
	    ks_crit(s.n));
	par[1] *= 1.1;
	ck_assert_double_gt(ks(s.out, s.n, cdf_lognormal, par, 0.5),
	    ks_crit(s.n));
	sample_free(&s);
	wl_config_release(&c);
}
END_TEST

/* Pearson chi-square of counts against probabilities. */
static double
chi2(const double *count, const double *p, size_t k, double n)
{
	double x = 0;

	for (size_t i = 0; i < k; i++)
		x += (count[i] - n * p[i]) * (count[i] - n * p[i]) / (n * p[i]);
	return x;
}

START_TEST(test_lengths_discrete)
{
	struct wl_config c;
	struct sample s;
	double count[12], p[12], p2[12], z = 0, z2 = 0;
	static double vals[] = { 1, 2, 4 }, wts[] = { 0.8, 0.15, 0.05 };

	/* Uniform on [10, 20]: chi-square, 10 df, 0.999 quantile 29.59. */
	gen_init(&c, 31, 22000);
	c.gen.prompt.kind = WL_DIST_UNIFORM;
	c.gen.prompt.min = 10;
	c.gen.prompt.max = 20;
	collect(&c, &s);
	memset(count, 0, sizeof(count));
	for (size_t i = 0; i < s.n; i++) {
		ck_assert(s.in[i] >= 10 && s.in[i] <= 20);
		count[(int)s.in[i] - 10]++;
	}
	for (int i = 0; i < 11; i++)
		p[i] = 1.0 / 11;
	ck_assert_double_lt(chi2(count, p, 11, (double)s.n), 29.59);
	sample_free(&s);
	wl_config_release(&c);
	/* Zipf s = 1.2 on [1, 1000]: k = 1..10 and the rest. */
	gen_init(&c, 32, 30000);
	c.gen.output.kind = WL_DIST_ZIPF;
	c.gen.output.s = 1.2;
	c.gen.output.min = 1;
	c.gen.output.max = 1000;
	collect(&c, &s);
	memset(count, 0, sizeof(count));
	for (size_t i = 0; i < s.n; i++)
		count[s.out[i] <= 10 ? (int)s.out[i] - 1 : 10]++;
	for (int k = 1; k <= 1000; k++) {
		z += pow(k, -1.2);
		z2 += pow(k, -1.0);
	}
	p[10] = p2[10] = 1;
	for (int k = 1; k <= 10; k++) {
		p[k - 1] = pow(k, -1.2) / z;
		p2[k - 1] = pow(k, -1.0) / z2;
		p[10] -= p[k - 1];
		p2[10] -= p2[k - 1];
	}
	ck_assert_double_lt(chi2(count, p, 11, (double)s.n), 29.59);
	/* Negative control: the exponent 1.0 is rejected. */
	ck_assert_double_gt(chi2(count, p2, 11, (double)s.n), 29.59);
	sample_free(&s);
	wl_config_release(&c);
	/* Empirical values and weights (n): 2 df, 0.999 quantile 13.82. */
	gen_init(&c, 33, 20000);
	c.gen.n.kind = WL_DIST_EMPIRICAL;
	c.gen.n.values = malloc(sizeof(vals));
	c.gen.n.weights = malloc(sizeof(wts));
	memcpy(c.gen.n.values, vals, sizeof(vals));
	memcpy(c.gen.n.weights, wts, sizeof(wts));
	c.gen.n.nvalues = 3;
	collect(&c, &s);
	memset(count, 0, sizeof(count));
	for (size_t i = 0; i < s.n; i++)
		count[s.nn[i] == 1 ? 0 : s.nn[i] == 2 ? 1 : 2]++;
	ck_assert_double_eq(count[0] + count[1] + count[2], (double)s.n);
	ck_assert_double_lt(chi2(count, wts, 3, (double)s.n), 13.82);
	sample_free(&s);
	/* Fixed: exactly the value. */
	c.gen.requests = 100;
	collect(&c, &s);
	for (size_t i = 0; i < s.n; i++) {
		ck_assert_double_eq(s.in[i], 512);
		ck_assert_double_eq(s.out[i], 128);
	}
	sample_free(&s);
	wl_config_release(&c);
}
END_TEST

START_TEST(test_system_prompts)
{
	struct wl_config c;
	wl_stream *st;
	struct wl_error err;
	struct wl_request r;
	double count[5] = { 0 }, p[5], h = 0, with = 0;
	uint64_t key[5];
	const size_t n = 20000;

	gen_init(&c, 41, n);
	c.gen.systems = 5;
	c.gen.system_zipf_s = 1.0;
	c.gen.system_len.value = 300;
	c.gen.system_fraction = 0.5;
	c.gen.prompt.kind = WL_DIST_UNIFORM;
	c.gen.prompt.min = 1;
	c.gen.prompt.max = 100;
	for (int k = 0; k < 5; k++) {
		key[k] = wl_mix(wl_mix(41, WL_NS_SYS), (uint64_t)k);
		h += 1.0 / (k + 1);
	}
	for (int k = 0; k < 5; k++)
		p[k] = 1.0 / (k + 1) / h;
	ck_assert_int_eq(wl_open(&c, &st, &err), WL_OK);
	while (wl_stream_next(st, &r) == WL_OK) {
		if (r.nsegs == 1) {
			ck_assert_uint_le(r.prompt_tokens, 100);
			continue;
		}
		ck_assert_uint_eq(r.nsegs, 2);
		ck_assert_uint_eq(r.segs[0].len, 300);
		ck_assert_uint_eq(r.prompt_tokens, 300 + r.segs[1].len);
		with++;
		for (int k = 0; k < 5; k++)
			if (r.segs[0].key == key[k])
				count[k]++;
	}
	wl_stream_free(st);
	ck_assert_double_eq(count[0] + count[1] + count[2] + count[3] +
	    count[4], with);
	ck_assert_double_eq_tol(with, n / 2.0, 4 * sqrt(n / 4.0));
	/* Popularity Zipf(1) over 5: 4 df, 0.999 quantile 18.47. */
	ck_assert_double_lt(chi2(count, p, 5, with), 18.47);
	for (int k = 0; k < 5; k++)
		p[k] = 0.2;
	ck_assert_double_gt(chi2(count, p, 5, with), 18.47);
	wl_config_release(&c);
}
END_TEST

#define NS 400

START_TEST(test_sessions)
{
	struct wl_config c;
	wl_stream *st;
	struct wl_error err;
	struct wl_request r;
	/* Per session: the last turn's prompt + answer, as tokens. */
	static uint32_t prev[NS][1200];
	static uint32_t prevlen[NS], turns[NS];
	uint32_t *tok = malloc(2000 * sizeof(uint32_t));
	double think = 0, nthink = 0;
	int64_t last = 0;
	size_t sessions = 0;

	gen_init(&c, 51, 1200);
	c.gen.systems = 1;
	c.gen.system_len.value = 50;
	c.gen.prompt.value = 100;
	c.gen.output.value = 20;
	c.gen.turns.value = 3;
	c.gen.think_s = 2;
	c.gen.arrival.rate = 4;
	memset(turns, 0, sizeof(turns));
	ck_assert_int_eq(wl_open(&c, &st, &err), WL_OK);
	while (wl_stream_next(st, &r) == WL_OK) {
		uint64_t sid = r.session;

		ck_assert_uint_ne(sid, 0);
		ck_assert_uint_le(sid, NS);
		ck_assert_int_ge(r.arrival_ns, last);
		last = r.arrival_ns;
		ck_assert_uint_eq(r.turn, turns[sid - 1]);
		ck_assert_uint_eq(r.prompt_tokens, 50 + r.turn * 120 + 100);
		wl_request_tokens(&r, 0, r.prompt_tokens, 32000, tok);
		if (r.turn > 0) {
			/* This turn extends the last prompt and its answer. */
			ck_assert_uint_eq(prevlen[sid - 1], r.prompt_tokens -
			    100);
			ck_assert(memcmp(prev[sid - 1], tok,
			    prevlen[sid - 1] * sizeof(uint32_t)) == 0);
			ck_assert_int_gt(r.think_ns, 0);
			think += (double)r.think_ns / 1e9;
			nthink++;
		} else {
			sessions++;
		}
		memcpy(prev[sid - 1], tok, r.prompt_tokens * sizeof(uint32_t));
		wl_output_tokens(&r, 0, 0, r.output_tokens, 32000,
		    prev[sid - 1] + r.prompt_tokens);
		prevlen[sid - 1] = r.prompt_tokens + r.output_tokens;
		turns[sid - 1]++;
	}
	wl_stream_free(st);
	ck_assert_uint_eq(sessions, 400);
	for (size_t i = 0; i < sessions; i++)
		ck_assert_uint_eq(turns[i], 3);
	ck_assert_double_eq_tol(think / nthink, 2.0, 4 * 2.0 / sqrt(nthink));
	/* max_context ends a session before it would overflow. */
	c.gen.turns.value = 10;
	c.gen.max_context = 500;
	c.gen.systems = 0;
	c.gen.requests = 400;
	ck_assert_int_eq(wl_open(&c, &st, &err), WL_OK);
	while (wl_stream_next(st, &r) == WL_OK) {
		ck_assert_uint_le(r.turn, 3);
		ck_assert_uint_le(r.prompt_tokens + r.output_tokens, 500);
	}
	wl_stream_free(st);
	wl_config_release(&c);
	free(tok);
}
END_TEST

START_TEST(test_parallel_sampling)
{
	struct wl_config c;
	wl_stream *st;
	struct wl_error err;
	struct wl_request r;
	uint32_t a[16], b[16];

	gen_init(&c, 61, 50);
	c.gen.n.value = 4;
	ck_assert_int_eq(wl_open(&c, &st, &err), WL_OK);
	while (wl_stream_next(st, &r) == WL_OK) {
		ck_assert_uint_eq(r.n, 4);
		wl_output_tokens(&r, 0, 0, 16, 32000, a);
		wl_output_tokens(&r, 1, 0, 16, 32000, b);
		ck_assert(memcmp(a, b, sizeof(a)) != 0);
	}
	wl_stream_free(st);
	wl_config_release(&c);
}
END_TEST

/* The whole stream as kvsim CSV bytes. */
static char *
dump(const struct wl_config *c, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	wl_stream *st;
	struct wl_error err;
	struct wl_request r;

	ck_assert_int_eq(wl_open(c, &st, &err), WL_OK);
	ck_assert_int_eq(wl_write_kvsim_header(f), WL_OK);
	while (wl_stream_next(st, &r) == WL_OK)
		ck_assert_int_eq(wl_write_kvsim_row(f, &r), WL_OK);
	wl_stream_free(st);
	fclose(f);
	return buf;
}

static void
rich(struct wl_config *c, uint64_t seed)
{
	gen_init(c, seed, 3000);
	c->gen.arrival.kind = WL_ARR_GAMMA;
	c->gen.arrival.cv = 3;
	c->gen.arrival.rate = 20;
	c->gen.prompt.kind = WL_DIST_LOGNORMAL;
	c->gen.prompt.mu = 6;
	c->gen.prompt.sigma = 1;
	c->gen.output.kind = WL_DIST_UNIFORM;
	c->gen.output.min = 1;
	c->gen.output.max = 500;
	c->gen.priority.kind = WL_DIST_UNIFORM;
	c->gen.priority.min = -2;
	c->gen.priority.max = 2;
	c->gen.systems = 7;
	c->gen.system_fraction = 0.7;
	c->gen.turns.kind = WL_DIST_UNIFORM;
	c->gen.turns.min = 1;
	c->gen.turns.max = 5;
}

START_TEST(test_determinism)
{
	struct wl_config c;
	size_t l1, l2, l3;
	char *a, *b, *d;

	rich(&c, 77);
	a = dump(&c, &l1);
	b = dump(&c, &l2);
	ck_assert_uint_eq(l1, l2);
	ck_assert(memcmp(a, b, l1) == 0);
	c.seed = 78;
	d = dump(&c, &l3);
	ck_assert(l1 != l3 || memcmp(a, d, l1) != 0);
	free(a);
	free(b);
	free(d);
	/* Tiled, scaled and filtered: still byte-identical. */
	c.tile_copies = 3;
	c.time_scale = 0.25;
	c.max_prompt = 2000;
	c.cap_output = 200;
	a = dump(&c, &l1);
	b = dump(&c, &l2);
	ck_assert_uint_eq(l1, l2);
	ck_assert(memcmp(a, b, l1) == 0);
	free(a);
	free(b);
	wl_config_release(&c);
}
END_TEST

/* Each purpose has its own RNG stream: lengths do not move arrivals. */
START_TEST(test_stream_independence)
{
	struct wl_config c;
	struct sample s1, s2;

	gen_init(&c, 81, 2000);
	collect(&c, &s1);
	c.gen.output.kind = WL_DIST_UNIFORM;
	c.gen.output.min = 1;
	c.gen.output.max = 1000;
	c.gen.n.kind = WL_DIST_UNIFORM;
	c.gen.n.min = 1;
	c.gen.n.max = 8;
	collect(&c, &s2);
	ck_assert(memcmp(s1.t, s2.t, s1.n * sizeof(*s1.t)) == 0);
	ck_assert(memcmp(s1.out, s2.out, s1.n * sizeof(*s1.out)) != 0);
	sample_free(&s1);
	sample_free(&s2);
	wl_config_release(&c);
}
END_TEST

/* lengths_from: (prompt, output) pairs resampled jointly from a trace. */
START_TEST(test_joint_lengths)
{
	static const uint32_t in[] = { 374, 396, 879, 2, 14050, 91 };
	static const uint32_t out[] = { 44, 109, 55, 7, 1000, 16 };
	struct wl_config c;
	struct wl_error err;
	struct sample s;
	wl_stream *st;
	double count[6] = { 0 }, p[6];
	char path[1024];
	const char *top = getenv("top_srcdir");

	snprintf(path, sizeof(path), "%s/tests/fixtures/wl/yaml/joint.yaml",
	    top != NULL ? top : ".");
	wl_config_init(&c);
	ck_assert_int_eq(wl_config_load(path, &c, &err), WL_OK);
	collect(&c, &s);
	ck_assert_uint_eq(s.n, 6000);
	for (size_t i = 0; i < s.n; i++) {
		int k = -1;

		for (int j = 0; j < 6; j++)
			if (s.in[i] == in[j] && s.out[i] == out[j])
				k = j;
		ck_assert_int_ge(k, 0);	/* a pair of the trace, never mixed */
		count[k]++;
	}
	for (int j = 0; j < 6; j++)
		p[j] = 1.0 / 6;
	ck_assert_double_lt(chi2(count, p, 6, (double)s.n), 20.52);
	sample_free(&s);
	wl_config_release(&c);
	/* A missing lengths trace fails at open, naming the file. */
	wl_config_init(&c);
	c.gen.lengths_trace = strdup("/nonexistent/lengths.csv");
	ck_assert_int_eq(wl_open(&c, &st, &err), WL_EIO);
	ck_assert_str_eq(err.file, "/nonexistent/lengths.csv");
	wl_config_release(&c);
}
END_TEST

static Suite *
gen_suite(void)
{
	Suite *s = suite_create("generators");
	TCase *tc = tcase_create("arrivals");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_poisson);
	tcase_add_test(tc, test_gamma);
	tcase_add_test(tc, test_constant);
	tcase_add_test(tc, test_onoff_schedule);
	suite_add_tcase(s, tc);
	tc = tcase_create("lengths");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_lengths_continuous);
	tcase_add_test(tc, test_lengths_discrete);
	tcase_add_test(tc, test_joint_lengths);
	suite_add_tcase(s, tc);
	tc = tcase_create("structure");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_system_prompts);
	tcase_add_test(tc, test_sessions);
	tcase_add_test(tc, test_parallel_sampling);
	tcase_add_test(tc, test_determinism);
	tcase_add_test(tc, test_stream_independence);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(gen_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
