/*
 * capacity.h -- the search behind `kvsim capacity`: the highest request
 * rate at which a configuration still meets its SLOs, and the SLO syntax.
 *
 * The search assumes that meeting the SLOs is monotone in the rate (true
 * of a queue fed faster, up to simulation noise, which is why the command
 * repeats it over seeds and reports the spread).  It brackets first --
 * from a start rate it doubles while the SLOs hold, or halves while they
 * fail -- then bisects the bracket [lo met, hi missed] until its width is
 * within `tol` of hi.  The answer is lo: a rate that was simulated and
 * met every SLO.
 */
#ifndef REPORTS_CAPACITY_H
#define REPORTS_CAPACITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One SLO: METRIC:STAT<=VALUE, e.g. "ttft_s:p99<=2.0", "tpot_s:mean<=0.05". */
struct cap_slo {
	char metric[8];		/* "ttft", "tpot", "itl", "e2e", "queue" */
	char stat[16];		/* "p50", "p99", "p999", "mean", "max", ... */
	double p;		/* the quantile in [0, 1]; < 0 for the mean */
	double limit_s;
};

/* 0, or -1 with a message in why. */
int cap_slo_parse(const char *text, struct cap_slo *out, char *why,
		  size_t whylen);

/* "ttft_s:p99<=2" (shortest exact form of the value). */
void cap_slo_format(const struct cap_slo *s, char *buf, size_t len);

struct cap_search_opts {
	double qps_start;	/* first rate tried (> 0) */
	double qps_min;		/* below this: no capacity */
	double qps_max;		/* above this: not searched (capped) */
	double tol;		/* relative bracket width to stop at */
	uint32_t max_sims;	/* a bound on simulations */
};

struct cap_search_result {
	double max_qps;		/* highest rate met; 0 when none */
	double min_fail_qps;	/* lowest rate missed; 0 when none */
	uint32_t sims;		/* evaluations spent */
	bool capped;		/* still met at qps_max, or at the highest
				 * rate the max_sims budget let it try */
	bool none;		/* missed even at qps_min, or at every rate
				 * the budget let it try: no answer */
};

/*
 * eval(ctx, qps, &met): simulate at qps; returns 0, or an exit status that
 * stops the search (returned as is).
 */
typedef int (*cap_eval_fn)(void *ctx, double qps, bool *met);

int cap_search(const struct cap_search_opts *o, cap_eval_fn eval, void *ctx,
	       struct cap_search_result *r);

#endif
