/*
 * capacity.c -- SLO parsing and the bracketing-and-bisection search
 * (capacity.h).
 */
#include "config.h"

#include "reports/capacity.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const metrics[] = { "ttft", "tpot", "itl", "e2e", "queue",
				       NULL };

int
cap_slo_parse(const char *text, struct cap_slo *out, char *why,
	      size_t whylen)
{
	const char *colon = strchr(text, ':');
	const char *le = strstr(text, "<=");
	size_t mlen, slen;
	char stat[16], *end;
	bool known = false;

	memset(out, 0, sizeof(*out));
	if (colon == NULL || le == NULL || le < colon) {
		snprintf(why, whylen, "--slo %s: expected METRIC:STAT<=SECONDS "
			 "(e.g. ttft_s:p99<=2.0)", text);
		return -1;
	}
	mlen = (size_t)(colon - text);
	if (mlen > 2 && strncmp(colon - 2, "_s", 2) == 0)
		mlen -= 2;
	for (size_t i = 0; metrics[i] != NULL; i++)
		if (strlen(metrics[i]) == mlen &&
		    strncmp(text, metrics[i], mlen) == 0) {
			memcpy(out->metric, metrics[i], mlen + 1);
			known = true;
		}
	if (!known) {
		snprintf(why, whylen, "--slo %s: unknown metric '%.*s' (ttft_s, "
			 "tpot_s, itl_s, e2e_s, queue_s)", text,
			 (int)(colon - text), text);
		return -1;
	}
	slen = (size_t)(le - colon - 1);
	if (slen == 0 || slen >= sizeof(stat)) {
		snprintf(why, whylen, "--slo %s: expected a statistic (p50, "
			 "p90, p95, p99, p999, mean, max)", text);
		return -1;
	}
	memcpy(stat, colon + 1, slen);
	stat[slen] = '\0';
	if (strcmp(stat, "mean") == 0) {
		out->p = -1;
	} else if (strcmp(stat, "max") == 0) {
		out->p = 1.0;
	} else if (stat[0] == 'p' && stat[1] >= '0' && stat[1] <= '9') {
		/* p99 = 0.99, p999 = 0.999, p50 = 0.5 */
		long v;
		size_t digits = strlen(stat + 1);

		errno = 0;
		v = strtol(stat + 1, &end, 10);
		if (*end != '\0' || errno != 0 || digits > 6 || v <= 0) {
			snprintf(why, whylen, "--slo %s: bad statistic '%s'",
				 text, stat);
			return -1;
		}
		/* p100 would read as 0.100 (p10): a trailing zero past
		 * two digits is refused, the maximum is `max` */
		if (digits > 2 && stat[digits] == '0') {
			snprintf(why, whylen, "--slo %s: '%s' is ambiguous "
				 "(the digits are a fraction: p99 = 0.99, "
				 "p999 = 0.999); the maximum is 'max'", text,
				 stat);
			return -1;
		}
		out->p = (double)v / pow(10.0, digits < 2 ? 2.0
					       : (double)digits);
		if (out->p >= 1.0) {
			snprintf(why, whylen, "--slo %s: bad statistic '%s'",
				 text, stat);
			return -1;
		}
	} else {
		snprintf(why, whylen, "--slo %s: bad statistic '%s' (p50, p90, "
			 "p95, p99, p999, mean, max)", text, stat);
		return -1;
	}
	snprintf(out->stat, sizeof(out->stat), "%s", stat);
	errno = 0;
	out->limit_s = strtod(le + 2, &end);
	if (le[2] == '\0' || *end != '\0' || errno != 0 ||
	    !(out->limit_s > 0) || !isfinite(out->limit_s)) {
		snprintf(why, whylen, "--slo %s: expected a number of seconds "
			 "> 0 after <=", text);
		return -1;
	}
	return 0;
}

void
cap_slo_format(const struct cap_slo *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s_s:%s<=%.15g", s->metric, s->stat, s->limit_s);
}

int
cap_search(const struct cap_search_opts *o, cap_eval_fn eval, void *ctx,
	   struct cap_search_result *r)
{
	double lo = 0, hi = 0, q = o->qps_start;
	bool met;
	int rc;

	memset(r, 0, sizeof(*r));
	if (q < o->qps_min)
		q = o->qps_min;
	if (q > o->qps_max)
		q = o->qps_max;
	/* Bracket. */
	for (;;) {
		if (r->sims >= o->max_sims) {
			/* the budget ended the bracket: no rate met (no
			 * answer) or none missed (a lower bound) */
			r->none = lo == 0;
			r->capped = lo > 0 && hi == 0;
			goto out;
		}
		if ((rc = eval(ctx, q, &met)) != 0)
			return rc;
		r->sims++;
		if (met) {
			lo = q;
			if (hi > 0)
				break;
			if (q >= o->qps_max) {
				r->capped = true;
				goto out;
			}
			q = q * 2 < o->qps_max ? q * 2 : o->qps_max;
		} else {
			hi = q;
			if (lo > 0)
				break;
			if (q <= o->qps_min) {
				r->none = true;
				goto out;
			}
			q = q / 2 > o->qps_min ? q / 2 : o->qps_min;
		}
	}
	/* Bisect [lo, hi]. */
	while (hi - lo > o->tol * hi && r->sims < o->max_sims) {
		q = (lo + hi) / 2;
		if ((rc = eval(ctx, q, &met)) != 0)
			return rc;
		r->sims++;
		if (met)
			lo = q;
		else
			hi = q;
	}
out:
	r->max_qps = lo;
	r->min_fail_qps = hi;
	return 0;
}
