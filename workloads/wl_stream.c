/*
 * wl_stream.c -- assembling the pipeline (wl.h, top comment) and the
 * public stream calls.
 *
 * target_rate needs the rate of the transformed trace before the first
 * request goes out: a pre-pass runs the same chain once to count requests
 * and measure their span (constant memory, one more read of the file).
 * Tiling reopens the chain for each copy the same way.  Errors are sticky:
 * once a stream has failed, every call returns the same error.
 */
#include "config.h"

#include "workloads/wl_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

wl_err wl__config_check(const struct wl_config *c, struct wl_error *err);

wl_err
wl__chain_open(struct wl_stream *p, struct wl_stage **out)
{
	const struct wl_config *c = &p->cfg;
	struct wl_stage *st;
	wl_err rc;

	if (c->kind == WL_KIND_IPERF) {
		rc = wl__iperf_open(p, c, &st);
	} else if (c->trace != NULL) {
		rc = wl__trace_open(p, c, c->trace, c->format, &st);
		if (rc == WL_OK && c->order == WL_ORDER_SORT)
			rc = wl__sort_open(p, st, c->sort_window, &st);
	} else {
		rc = wl__gen_open(p, c, &st);
	}
	if (rc != WL_OK)
		return rc;
	if (c->window_start_s > 0 || c->window_end_s > 0) {
		int64_t t0 = (int64_t)llround(c->window_start_s * 1e9);
		int64_t t1 = c->window_end_s > 0 ?
		    (int64_t)llround(c->window_end_s * 1e9) : 0;

		rc = wl__window_open(p, st, t0, t1, &st);
		if (rc != WL_OK)
			return rc;
	}
	if (c->min_prompt || c->max_prompt || c->min_output || c->max_output ||
	    c->max_total || c->max_model_len || c->cap_prompt ||
	    c->cap_output) {
		rc = wl__filter_open(p, st, c, &st);
		if (rc != WL_OK)
			return rc;
	}
	if (c->max_requests > 0) {
		rc = wl__head_open(p, st, c->max_requests, &st);
		if (rc != WL_OK)
			return rc;
	}
	if (p->scale != 1.0) {
		rc = wl__scale_open(p, st, p->scale, &st);
		if (rc != WL_OK)
			return rc;
		p->info.has_epoch = false;
	}
	if (p->gap_ns > 0) {
		rc = wl__spread_open(p, st, p->gap_ns, &st);
		if (rc != WL_OK)
			return rc;
	}
	*out = st;
	return WL_OK;
}

/*
 * The scale that brings the transformed stream to target_rate, and the
 * least gap of spread_bursts: F times the scaled stream's mean gap
 * (span / requests, the inverse of the rate below).
 */
static wl_err
prepass(struct wl_stream *p)
{
	struct wl_stage *st;
	struct wl_request r;
	uint64_t n = 0;
	int64_t first = 0, last = 0;
	double rate;
	wl_err rc;

	p->scale = 1.0;
	p->gap_ns = 0;
	rc = wl__chain_open(p, &st);
	if (rc != WL_OK)
		return rc;
	while ((rc = wl__stage_next(st, &r)) == WL_OK) {
		if (n++ == 0)
			first = r.arrival_ns;
		last = r.arrival_ns;
	}
	wl__stage_free(st);
	if (rc != WL_END)
		return rc;
	if (p->cfg.target_rate <= 0) {
		/* spread_bursts alone: time_scale's gap */
		p->scale = p->cfg.time_scale;
		if (n >= 2)
			p->gap_ns = (int64_t)llround(p->cfg.spread_bursts *
			    (double)(last - first) * p->scale / (double)n);
		memset(&p->cnt, 0, sizeof(p->cnt));
		return WL_OK;
	}
	if (n < 2 || last == first)
		return wl__fail(p, WL_ECONFIG, p->cfg.trace, 0, 0,
		    "target_rate needs at least two requests at different "
		    "times (found %llu%s)", (unsigned long long)n,
		    n < 2 ? "" : ", all at one time");
	/* Mean rate as traces/README.md defines it: rows / span. */
	rate = (double)n / ((double)(last - first) / 1e9);
	p->scale = rate / p->cfg.target_rate;
	p->gap_ns = (int64_t)llround(p->cfg.spread_bursts * 1e9 /
	    p->cfg.target_rate);
	memset(&p->cnt, 0, sizeof(p->cnt));
	return WL_OK;
}

wl_err
wl_open(const struct wl_config *c, wl_stream **out, struct wl_error *err)
{
	struct wl_stream *p;
	struct wl_stage *st = NULL;
	wl_err rc;

	*out = NULL;
	rc = wl__config_check(c, err);
	if (rc != WL_OK)
		return rc;
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		wl__error_set(err, NULL, 0, 0, "out of memory");
		return WL_ENOMEM;
	}
	rc = wl_config_copy(&p->cfg, c);
	if (rc != WL_OK) {
		free(p);
		wl__error_set(err, NULL, 0, 0, "out of memory");
		return rc;
	}
	p->scale = c->time_scale;
	if (c->target_rate > 0 || c->spread_bursts > 0)
		rc = prepass(p);
	if (rc == WL_OK)
		rc = wl__chain_open(p, &st);
	if (rc == WL_OK && c->tile_copies > 1)
		rc = wl__tile_open(p, st, &st);
	if (rc != WL_OK) {
		if (err != NULL)
			*err = p->err;
		wl_stream_free(p);
		return rc;
	}
	p->top = st;
	*out = p;
	return WL_OK;
}

wl_err
wl_stream_next(wl_stream *s, struct wl_request *r)
{
	wl_err rc;

	if (s->top == NULL)
		return s->last_rc;
	rc = wl__stage_next(s->top, r);
	if (rc == WL_OK && wl__beyond_horizon((double)r->arrival_ns))
		rc = wl__past_horizon(s, r, (double)r->arrival_ns);
	if (rc == WL_OK) {
		r->id = s->next_id++;
		s->cnt.emitted++;
		s->prev_arrival = s->last_arrival;
		s->last_arrival = r->arrival_ns;
		return WL_OK;
	}
	/* End or error: release the sources now; later calls repeat it. */
	if (rc != WL_END && s->err.what[0] == '\0')
		snprintf(s->err.what, sizeof(s->err.what), "%s",
		    wl_strerror(rc));
	wl__stage_free(s->top);
	s->top = NULL;
	s->last_rc = rc;
	return rc;
}

bool
wl__beyond_horizon(double arrival_ns)
{
	return !(fabs(arrival_ns) <= (double)WL_HORIZON_NS);
}

wl_err
wl__past_horizon(struct wl_stream *p, const struct wl_request *r,
    double arrival_ns)
{
	const char *trace = p->cfg.trace;
	bool row = r->src_line > 0 && trace != NULL;

	/* named as the trace's other errors name it (wl_io.c) */
	if (row && strcmp(trace, "-") == 0)
		trace = "<stdin>";
	return wl__fail(p, WL_ECONFIG, row ? trace : NULL,
	    row ? r->src_line : 0, 0, "request %" PRIu64 " arrives at "
	    "%.6g s, past the %.0f s (31.7-year) horizon of simulated time: "
	    "check the arrival rate, think_s, time_scale, window or the "
	    "trace's timestamps", p->next_id, arrival_ns / 1e9,
	    (double)WL_HORIZON_NS / 1e9);
}

int
wl_stream_check(const wl_stream *s)
{
	const struct wl_counts *c = &s->cnt;

	if (c->emitted != s->next_id)
		return WL_CHECK_IDS;
	if (c->emitted >= 2 && s->prev_arrival > s->last_arrival)
		return WL_CHECK_ORDER;
	if (c->emitted >= 1 && wl__beyond_horizon((double)s->last_arrival))
		return WL_CHECK_HORIZON;
	if (c->emitted + c->skipped + c->rej_zero + c->rej_huge +
	    c->rej_order + c->rej_filter + c->rej_max_len +
	    c->outside_window > c->rows)
		return WL_CHECK_COUNTS;
	if (c->capped > c->rows || c->sorted > c->rows)
		return WL_CHECK_MARKS;
	if ((s->top != NULL) != (s->last_rc == WL_OK))
		return WL_CHECK_END;
	if (s->top != NULL && s->top->nout != c->emitted)
		return WL_CHECK_TOP;
	return wl__stage_check(s->top);
}

const struct wl_error *
wl_stream_error(const wl_stream *s)
{
	return &s->err;
}

const struct wl_counts *
wl_stream_counts(const wl_stream *s)
{
	return &s->cnt;
}

const struct wl_info *
wl_stream_info(const wl_stream *s)
{
	return &s->info;
}

void
wl_stream_free(wl_stream *s)
{
	if (s == NULL)
		return;
	wl__stage_free(s->top);
	wl_config_release(&s->cfg);
	free(s);
}
