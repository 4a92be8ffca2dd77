/*
 * wl_dist.c -- integer distributions on GSL, and seeded RNG streams.
 *
 * Continuous draws are rounded to the nearest integer, then truncated to
 * [min, max] by resampling (never by clamping, which would pile mass on
 * the bounds).  wl__dist_check() refuses bounds that keep under 1% of the
 * mass, so resampling ends quickly.  Zipf and empirical draws use GSL's
 * alias tables (O(1) per draw, O(support) memory once).
 */
#include "config.h"

#include "workloads/wl_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>

#define WL_TABLE_MAX ((int64_t)1 << 24)

gsl_rng *
wl__rng_new(uint64_t seed, uint64_t stream)
{
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);

	if (r == NULL)
		return NULL;
	/* mt19937 takes 32 bits of seed; mix run seed and stream first. */
	gsl_rng_set(r, (unsigned long)(wl_mix(wl_mix(seed, WL_NS_RNG),
	    stream) & 0xffffffffUL));
	return r;
}

/* Mass of [min - 0.5, max + 0.5] under the continuous law. */
static double
kept_mass(const struct wl_dist *d)
{
	double lo = (double)d->min - 0.5, hi = (double)d->max + 0.5;

	switch (d->kind) {
	case WL_DIST_NORMAL:
		return gsl_cdf_gaussian_P(hi - d->mean, d->sd) -
		    gsl_cdf_gaussian_P(lo - d->mean, d->sd);
	case WL_DIST_LOGNORMAL:
		return gsl_cdf_lognormal_P(hi, d->mu, d->sigma) -
		    (lo > 0 ? gsl_cdf_lognormal_P(lo, d->mu, d->sigma) : 0);
	default:
		return 1;
	}
}

bool
wl__dist_check(const struct wl_dist *d, char *what, size_t size)
{
	if (d->min > d->max) {
		snprintf(what, size, "min (%lld) is greater than max (%lld)",
		    (long long)d->min, (long long)d->max);
		return false;
	}
	switch (d->kind) {
	case WL_DIST_FIXED:
		if (!isfinite(d->value) || llround(d->value) < d->min ||
		    llround(d->value) > d->max) {
			snprintf(what, size, "value %g is outside [%lld, %lld]",
			    d->value, (long long)d->min, (long long)d->max);
			return false;
		}
		return true;
	case WL_DIST_UNIFORM:
		if ((uint64_t)(d->max - d->min) >= 0xffffffffULL) {
			snprintf(what, size, "uniform range too wide "
			    "(max - min must be < 2^32 - 1)");
			return false;
		}
		return true;
	case WL_DIST_NORMAL:
		if (!(d->sd > 0) || !isfinite(d->mean) || !isfinite(d->sd)) {
			snprintf(what, size, "normal needs a finite mean and "
			    "sd > 0");
			return false;
		}
		break;
	case WL_DIST_LOGNORMAL:
		if (!(d->sigma > 0) || !isfinite(d->mu) ||
		    !isfinite(d->sigma)) {
			snprintf(what, size, "lognormal needs finite mu and "
			    "sigma > 0 (or mean > 0 and cv > 0)");
			return false;
		}
		break;
	case WL_DIST_ZIPF:
		if (!(d->s > 0) || !isfinite(d->s) || d->min < 1) {
			snprintf(what, size, "zipf needs s > 0 and min >= 1");
			return false;
		}
		if (d->max - d->min >= WL_TABLE_MAX) {
			snprintf(what, size, "zipf support too large "
			    "(max - min must be < 2^24)");
			return false;
		}
		return true;
	case WL_DIST_EMPIRICAL:
		if (d->nvalues == 0) {
			snprintf(what, size, "empirical needs values");
			return false;
		}
		for (size_t i = 0; i < d->nvalues; i++) {
			if (!isfinite(d->values[i]) ||
			    llround(d->values[i]) < d->min ||
			    llround(d->values[i]) > d->max) {
				snprintf(what, size, "value %g is outside "
				    "[%lld, %lld]", d->values[i],
				    (long long)d->min, (long long)d->max);
				return false;
			}
			if (d->weights != NULL &&
			    (!isfinite(d->weights[i]) || d->weights[i] < 0)) {
				snprintf(what, size, "weights must be finite "
				    "and >= 0");
				return false;
			}
		}
		if (d->weights != NULL) {
			double sum = 0;

			for (size_t i = 0; i < d->nvalues; i++)
				sum += d->weights[i];
			if (!(sum > 0)) {
				snprintf(what, size, "weights sum to 0");
				return false;
			}
		}
		return true;
	}
	if (kept_mass(d) < 0.01) {
		snprintf(what, size, "bounds [%lld, %lld] keep under 1%% of "
		    "the distribution", (long long)d->min, (long long)d->max);
		return false;
	}
	return true;
}

wl_err
wl__sampler_init(struct wl_sampler *s, const struct wl_dist *d, char *what,
    size_t what_size)
{
	double *w = NULL;
	size_t n = 0;

	memset(s, 0, sizeof(*s));
	s->d = d;
	if (!wl__dist_check(d, what, what_size))
		return WL_ECONFIG;
	if (d->kind == WL_DIST_ZIPF) {
		n = (size_t)(d->max - d->min + 1);
		w = malloc(n * sizeof(*w));
		if (w == NULL)
			goto nomem;
		for (size_t i = 0; i < n; i++)
			w[i] = pow((double)d->min + (double)i, -d->s);
		s->base = d->min;
	} else if (d->kind == WL_DIST_EMPIRICAL) {
		n = d->nvalues;
		w = malloc(n * sizeof(*w));
		if (w == NULL)
			goto nomem;
		for (size_t i = 0; i < n; i++)
			w[i] = d->weights != NULL ? d->weights[i] : 1.0;
	} else {
		return WL_OK;
	}
	s->table = gsl_ran_discrete_preproc(n, w);
	free(w);
	if (s->table == NULL)
		goto nomem;
	return WL_OK;
nomem:
	snprintf(what, what_size, "out of memory for a distribution table");
	return WL_ENOMEM;
}

int64_t
wl__sample(struct wl_sampler *s, gsl_rng *r)
{
	const struct wl_dist *d = s->d;
	int64_t v;

	switch (d->kind) {
	case WL_DIST_FIXED:
		return (int64_t)llround(d->value);
	case WL_DIST_UNIFORM:
		return d->min + (int64_t)gsl_rng_uniform_int(r,
		    (unsigned long)(d->max - d->min + 1));
	case WL_DIST_ZIPF:
		return s->base + (int64_t)gsl_ran_discrete(r, s->table);
	case WL_DIST_EMPIRICAL:
		return (int64_t)llround(d->values[gsl_ran_discrete(r,
		    s->table)]);
	case WL_DIST_NORMAL:
		do {
			double x = d->mean +
			    gsl_ran_gaussian_ziggurat(r, d->sd);

			v = x < -9e18 ? INT64_MIN : x > 9e18 ? INT64_MAX :
			    (int64_t)llround(x);
		} while (v < d->min || v > d->max);
		return v;
	case WL_DIST_LOGNORMAL:
		do {
			double x = gsl_ran_lognormal(r, d->mu, d->sigma);

			v = x > 9e18 ? INT64_MAX : (int64_t)llround(x);
		} while (v < d->min || v > d->max);
		return v;
	}
	return d->min;
}

void
wl__sampler_release(struct wl_sampler *s)
{
	if (s->table != NULL)
		gsl_ran_discrete_free(s->table);
	memset(s, 0, sizeof(*s));
}
