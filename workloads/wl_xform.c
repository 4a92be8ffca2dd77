/*
 * wl_xform.c -- stages that transform a stream: sort window, time window,
 * length filters and caps, first N, time scale, tiling.
 *
 * Each stage pulls from the one below and keeps O(1) state, except the
 * sort window (W deep-copied requests) and the stages that rewrite
 * segments (one request's worth).  A rejected request is counted in
 * wl_counts under one reason and never reaches the consumer; nothing is
 * shortened unless cap.* asked for it.
 */
#include "config.h"

#include "workloads/wl_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Sort window ---------------------------------------------------------- */

static bool
slot_less(const struct wl__sorter *s, uint32_t a, uint32_t b)
{
	const struct wl__slot *x = &s->slots[a], *y = &s->slots[b];

	if (x->r.arrival_ns != y->r.arrival_ns)
		return x->r.arrival_ns < y->r.arrival_ns;
	return x->seq < y->seq;
}

static void
heap_push(struct wl__sorter *s, uint32_t v)
{
	uint32_t i = s->nheap++;

	s->heap[i] = v;
	while (i > 0) {
		uint32_t up = (i - 1) / 2;

		if (!slot_less(s, s->heap[i], s->heap[up]))
			break;
		s->heap[i] = s->heap[up];
		s->heap[up] = v;
		i = up;
	}
}

static uint32_t
heap_pop(struct wl__sorter *s)
{
	uint32_t top = s->heap[0], i = 0;

	s->heap[0] = s->heap[--s->nheap];
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i, tmp;

		if (l < s->nheap && slot_less(s, s->heap[l], s->heap[m]))
			m = l;
		if (r < s->nheap && slot_less(s, s->heap[r], s->heap[m]))
			m = r;
		if (m == i)
			break;
		tmp = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = tmp;
		i = m;
	}
	return top;
}

/* Deep-copy r into slot k. */
static bool
slot_fill(struct wl__slot *k, const struct wl_request *r, uint64_t seq)
{
	if (!wl__grow((void **)&k->segs, &k->segcap, r->nsegs,
	    sizeof(*k->segs)))
		return false;
	if (r->nsegs > 0)
		memcpy(k->segs, r->segs, (size_t)r->nsegs * sizeof(*k->segs));
	if (r->tokens != NULL) {
		if (!wl__grow((void **)&k->toks, &k->tokcap, r->prompt_tokens,
		    sizeof(*k->toks)))
			return false;
		memcpy(k->toks, r->tokens,
		    (size_t)r->prompt_tokens * sizeof(*k->toks));
	}
	k->r = *r;
	k->r.segs = k->segs;
	k->r.tokens = r->tokens != NULL ? k->toks : NULL;
	k->seq = seq;
	return true;
}

static wl_err
sorter_next(struct wl_stage *st, struct wl_request *out)
{
	struct wl__sorter *s = (struct wl__sorter *)st;
	struct wl_stream *p = st->p;
	struct wl_request r;
	uint32_t k;
	wl_err rc;

	if (s->held >= 0) {
		s->freel[s->nfree++] = (uint32_t)s->held;
		s->held = -1;
	}
	while (!s->in_done && s->nfree > 0) {
		rc = wl__stage_next(s->in, &r);
		if (rc == WL_END) {
			s->in_done = true;
			break;
		}
		if (rc != WL_OK)
			return rc;
		k = s->freel[--s->nfree];
		if (!slot_fill(&s->slots[k], &r, s->seq_in++))
			return wl__fail(p, WL_ENOMEM, p->cfg.trace, r.src_line,
			    0, "out of memory in the sort window");
		heap_push(s, k);
	}
	if (s->nheap == 0)
		return WL_END;
	k = heap_pop(s);
	if (s->have_last && s->slots[k].r.arrival_ns < s->last)
		return wl__fail(p, WL_EORDER, p->cfg.trace,
		    s->slots[k].r.src_line, 0, "timestamp %.9f s is more than "
		    "sort_window=%" PRIu32 " rows out of order (previous "
		    "%.9f s); raise sort_window",
		    (double)s->slots[k].r.arrival_ns / 1e9, s->w,
		    (double)s->last / 1e9);
	if (s->slots[k].seq != s->seq_out)
		p->cnt.sorted++;
	s->seq_out++;
	s->have_last = true;
	s->last = s->slots[k].r.arrival_ns;
	s->held = (int32_t)k;
	*out = s->slots[k].r;
	return WL_OK;
}

static void
sorter_free(struct wl_stage *st)
{
	struct wl__sorter *s = (struct wl__sorter *)st;

	wl__stage_free(s->in);
	if (s->slots != NULL)
		for (uint32_t i = 0; i < s->w; i++) {
			free(s->slots[i].segs);
			free(s->slots[i].toks);
		}
	free(s->slots);
	free(s->heap);
	free(s->freel);
	free(s);
}

static int
sorter_check(const struct wl_stage *st)
{
	const struct wl__sorter *s = (const struct wl__sorter *)st;

	if ((uint64_t)s->nfree + s->nheap + (s->held >= 0) != s->w)
		return WL_CHECK_SORT_SLOTS;
	if (s->seq_in != s->in->nout || s->seq_out != st->nout ||
	    s->seq_in - s->seq_out != s->nheap)
		return WL_CHECK_SORT_SEQ;
	for (uint32_t i = 1; i < s->nheap; i++)
		if (slot_less(s, s->heap[i], s->heap[(i - 1) / 2]))
			return WL_CHECK_SORT_HEAP;
	return wl__stage_check(s->in);
}

static const struct wl_stage_ops sorter_ops = { sorter_next, sorter_free,
	sorter_check };

wl_err
wl__sort_open(struct wl_stream *p, struct wl_stage *in, uint32_t window,
    struct wl_stage **out)
{
	struct wl__sorter *s = calloc(1, sizeof(*s));

	if (s == NULL)
		goto nomem;
	s->base.ops = &sorter_ops;
	s->base.p = p;
	s->in = in;
	s->w = window;
	s->held = -1;
	s->slots = calloc(window, sizeof(*s->slots));
	s->heap = calloc(window, sizeof(*s->heap));
	s->freel = calloc(window, sizeof(*s->freel));
	if (s->slots == NULL || s->heap == NULL || s->freel == NULL) {
		sorter_free(&s->base);
		return wl__fail(p, WL_ENOMEM, NULL, 0, 0, "out of memory");
	}
	for (uint32_t i = 0; i < window; i++)
		s->freel[s->nfree++] = window - 1 - i;
	*out = &s->base;
	return WL_OK;
nomem:
	wl__stage_free(in);
	return wl__fail(p, WL_ENOMEM, NULL, 0, 0, "out of memory");
}

/* Time window [t0, t1), shifted to start at 0. -------------------------- */

static wl_err
window_next(struct wl_stage *st, struct wl_request *r)
{
	struct wl__window *w = (struct wl__window *)st;
	wl_err rc;

	if (w->done)
		return WL_END;
	for (;;) {
		rc = wl__stage_next(w->in, r);
		if (rc != WL_OK)
			return rc;
		if (r->arrival_ns < w->t0) {
			st->p->cnt.outside_window++;
			continue;
		}
		if (w->t1 > 0 && r->arrival_ns >= w->t1) {
			/* Sorted input: nothing later can fall inside. */
			w->done = true;
			return WL_END;
		}
		r->arrival_ns -= w->t0;
		return WL_OK;
	}
}

static void
simple_free(struct wl_stage *st)
{
	struct wl__window *w = (struct wl__window *)st;

	wl__stage_free(w->in);
	free(w);
}

static int
window_check(const struct wl_stage *st)
{
	const struct wl__window *w = (const struct wl__window *)st;

	if (w->t0 < 0 || (w->t1 != 0 && w->t1 <= w->t0) ||
	    st->nout > w->in->nout)
		return WL_CHECK_WINDOW;
	return wl__stage_check(w->in);
}

static const struct wl_stage_ops window_ops = { window_next, simple_free,
	window_check };

wl_err
wl__window_open(struct wl_stream *p, struct wl_stage *in, int64_t t0,
    int64_t t1, struct wl_stage **out)
{
	struct wl__window *w = calloc(1, sizeof(*w));

	if (w == NULL) {
		wl__stage_free(in);
		return wl__fail(p, WL_ENOMEM, NULL, 0, 0, "out of memory");
	}
	w->base.ops = &window_ops;
	w->base.p = p;
	w->in = in;
	w->t0 = t0;
	w->t1 = t1;
	*out = &w->base;
	return WL_OK;
}

/* Filters, caps, max_model_len. ---------------------------------------- */

static wl_err
filter_next(struct wl_stage *st, struct wl_request *r)
{
	struct wl__filter *f = (struct wl__filter *)st;
	struct wl_counts *c = &st->p->cnt;
	wl_err rc;

	for (;;) {
		bool capped = false;

		rc = wl__stage_next(f->in, r);
		if (rc != WL_OK)
			return rc;
		if (r->prompt_tokens < f->min_prompt ||
		    (f->max_prompt && r->prompt_tokens > f->max_prompt) ||
		    r->output_tokens < f->min_output ||
		    (f->max_output && r->output_tokens > f->max_output) ||
		    (f->max_total && (uint64_t)r->prompt_tokens +
		    r->output_tokens > f->max_total)) {
			c->rej_filter++;
			continue;
		}
		if (f->cap_output && r->output_tokens > f->cap_output) {
			r->output_tokens = (uint32_t)f->cap_output;
			capped = true;
		}
		if (f->cap_prompt && r->prompt_tokens > f->cap_prompt) {
			uint32_t left = (uint32_t)f->cap_prompt, k = 0;

			if (!wl__grow((void **)&f->segs, &f->segcap, r->nsegs,
			    sizeof(*f->segs)))
				return wl__fail(st->p, WL_ENOMEM, NULL, 0, 0,
				    "out of memory");
			for (uint32_t i = 0; i < r->nsegs && left > 0; i++) {
				f->segs[k] = r->segs[i];
				if (f->segs[k].len > left)
					f->segs[k].len = left;
				left -= f->segs[k].len;
				k++;
			}
			r->segs = f->segs;
			r->nsegs = k;
			r->prompt_tokens = (uint32_t)f->cap_prompt;
			capped = true;
		}
		if (f->max_model_len && (uint64_t)r->prompt_tokens +
		    r->output_tokens > f->max_model_len) {
			c->rej_max_len++;
			continue;
		}
		if (capped)
			c->capped++;
		return WL_OK;
	}
}

static void
filter_free(struct wl_stage *st)
{
	struct wl__filter *f = (struct wl__filter *)st;

	wl__stage_free(f->in);
	free(f->segs);
	free(f);
}

static int
filter_check(const struct wl_stage *st)
{
	const struct wl__filter *f = (const struct wl__filter *)st;

	if (st->nout > f->in->nout)
		return WL_CHECK_FILTER;
	return wl__stage_check(f->in);
}

static const struct wl_stage_ops filter_ops = { filter_next, filter_free,
	filter_check };

wl_err
wl__filter_open(struct wl_stream *p, struct wl_stage *in,
    const struct wl_config *c, struct wl_stage **out)
{
	struct wl__filter *f = calloc(1, sizeof(*f));

	if (f == NULL) {
		wl__stage_free(in);
		return wl__fail(p, WL_ENOMEM, NULL, 0, 0, "out of memory");
	}
	f->base.ops = &filter_ops;
	f->base.p = p;
	f->in = in;
	f->min_prompt = c->min_prompt;
	f->max_prompt = c->max_prompt;
	f->min_output = c->min_output;
	f->max_output = c->max_output;
	f->max_total = c->max_total;
	f->cap_prompt = c->cap_prompt;
	f->cap_output = c->cap_output;
	f->max_model_len = c->max_model_len;
	*out = &f->base;
	return WL_OK;
}

/* First N. -------------------------------------------------------------- */

static wl_err
head_next(struct wl_stage *st, struct wl_request *r)
{
	struct wl__head *h = (struct wl__head *)st;
	wl_err rc;

	if (h->left == 0)
		return WL_END;
	rc = wl__stage_next(h->in, r);
	if (rc == WL_OK)
		h->left--;
	return rc;
}

static void
head_free(struct wl_stage *st)
{
	struct wl__head *h = (struct wl__head *)st;

	wl__stage_free(h->in);
	free(h);
}

static int
head_check(const struct wl_stage *st)
{
	const struct wl__head *h = (const struct wl__head *)st;

	if (st->nout + h->left != h->n || st->nout != h->in->nout)
		return WL_CHECK_HEAD;
	return wl__stage_check(h->in);
}

static const struct wl_stage_ops head_ops = { head_next, head_free,
	head_check };

wl_err
wl__head_open(struct wl_stream *p, struct wl_stage *in, uint64_t n,
    struct wl_stage **out)
{
	struct wl__head *h = calloc(1, sizeof(*h));

	if (h == NULL) {
		wl__stage_free(in);
		return wl__fail(p, WL_ENOMEM, NULL, 0, 0, "out of memory");
	}
	h->base.ops = &head_ops;
	h->base.p = p;
	h->in = in;
	h->n = n;
	h->left = n;
	*out = &h->base;
	return WL_OK;
}

/* Time scale. ----------------------------------------------------------- */

static int64_t
scale_ns(int64_t t, double k)
{
	double v = (double)t * k;

	return v >= 9.2e18 ? INT64_MAX : (int64_t)llround(v);
}

static wl_err
scale_next(struct wl_stage *st, struct wl_request *r)
{
	struct wl__scale *s = (struct wl__scale *)st;
	wl_err rc = wl__stage_next(s->in, r);

	if (rc == WL_OK) {
		double v = (double)r->arrival_ns * s->k;

		/* Here, before scale_ns clamps it, the real arrival. */
		if (wl__beyond_horizon(v))
			return wl__past_horizon(st->p, r, v);
		r->arrival_ns = scale_ns(r->arrival_ns, s->k);
		r->think_ns = scale_ns(r->think_ns, s->k);
	}
	return rc;
}

static void
scale_free(struct wl_stage *st)
{
	struct wl__scale *s = (struct wl__scale *)st;

	wl__stage_free(s->in);
	free(s);
}

static int
scale_check(const struct wl_stage *st)
{
	const struct wl__scale *s = (const struct wl__scale *)st;

	if (!isfinite(s->k) || !(s->k > 0) || st->nout != s->in->nout)
		return WL_CHECK_SCALE;
	return wl__stage_check(s->in);
}

static const struct wl_stage_ops scale_ops = { scale_next, scale_free,
	scale_check };

wl_err
wl__scale_open(struct wl_stream *p, struct wl_stage *in, double k,
    struct wl_stage **out)
{
	struct wl__scale *s = calloc(1, sizeof(*s));

	if (s == NULL) {
		wl__stage_free(in);
		return wl__fail(p, WL_ENOMEM, NULL, 0, 0, "out of memory");
	}
	s->base.ops = &scale_ops;
	s->base.p = p;
	s->in = in;
	s->k = k;
	*out = &s->base;
	return WL_OK;
}

/*
 * Burst spreading: each arrival at least gap_ns after the one before it
 * (t'[i] = max(t[i], t'[i-1] + gap)).  Requests of one instant leave one
 * gap apart, in their order; an arrival is never moved earlier, and the
 * first is not moved.  Streaming: only the last arrival is kept.
 */
static wl_err
spread_next(struct wl_stage *st, struct wl_request *r)
{
	struct wl__spread *s = (struct wl__spread *)st;
	wl_err rc = wl__stage_next(s->in, r);

	if (rc != WL_OK)
		return rc;
	if (st->nout > 0) {
		double least = (double)s->prev + (double)s->gap_ns;

		if ((double)r->arrival_ns < least) {
			if (wl__beyond_horizon(least))
				return wl__past_horizon(st->p, r, least);
			r->arrival_ns = s->prev + s->gap_ns;
		}
	}
	s->prev = r->arrival_ns;
	return WL_OK;
}

static void
spread_free(struct wl_stage *st)
{
	struct wl__spread *s = (struct wl__spread *)st;

	wl__stage_free(s->in);
	free(s);
}

static int
spread_check(const struct wl_stage *st)
{
	const struct wl__spread *s = (const struct wl__spread *)st;

	if (s->gap_ns < 0 || st->nout != s->in->nout)
		return WL_CHECK_SPREAD;
	return wl__stage_check(s->in);
}

static const struct wl_stage_ops spread_ops = { spread_next, spread_free,
	spread_check };

wl_err
wl__spread_open(struct wl_stream *p, struct wl_stage *in, int64_t gap_ns,
    struct wl_stage **out)
{
	struct wl__spread *s = calloc(1, sizeof(*s));

	if (s == NULL) {
		wl__stage_free(in);
		return wl__fail(p, WL_ENOMEM, NULL, 0, 0, "out of memory");
	}
	s->base.ops = &spread_ops;
	s->base.p = p;
	s->in = in;
	s->gap_ns = gap_ns;
	*out = &s->base;
	return WL_OK;
}

/* Tiling: the chain again, k times, each copy shifted by one period. --- */

static wl_err
tile_next(struct wl_stage *st, struct wl_request *r)
{
	struct wl__tile *t = (struct wl__tile *)st;
	struct wl_stream *p = st->p;
	wl_err rc;

	for (;;) {
		rc = wl__stage_next(t->in, r);
		if (rc == WL_END) {
			if (t->copy + 1 >= t->copies)
				return WL_END;
			if (t->copy == 0 && t->period == 0) {
				int64_t span = t->last - t->first;

				if (t->n0 == 0)
					return WL_END;
				t->period = t->n0 > 1 && span > 0 ? span +
				    span / (int64_t)(t->n0 - 1) : 1000000000;
			}
			wl__stage_free(t->in);
			t->in = NULL;
			rc = wl__chain_open(p, &t->in);
			if (rc != WL_OK)
				return rc;
			t->copy++;
			t->salt = wl_mix(WL_NS_COPY, t->copy);
			continue;
		}
		if (rc != WL_OK)
			return rc;
		break;
	}
	if (t->share)
		r->unique = false;	/* every copy has the same prompts */
	if (t->copy == 0) {
		if (t->n0 == 0)
			t->first = r->arrival_ns;
		t->last = t->last_out = r->arrival_ns;
		t->n0++;
		return WL_OK;
	}
	{
		/* In double first: copy * period may not fit in int64. */
		double v = (double)r->arrival_ns +
		    (double)t->copy * (double)t->period;

		if (wl__beyond_horizon(v))
			return wl__past_horizon(p, r, v);
	}
	r->arrival_ns += (int64_t)t->copy * t->period;
	if (r->arrival_ns < t->last_out)
		return wl__fail(p, WL_ECONFIG, NULL, 0, 0, "tile.period_s "
		    "(%.9f s) is shorter than the span of one copy",
		    (double)t->period / 1e9);
	t->last_out = r->arrival_ns;
	if (!t->share) {
		uint64_t salt = t->salt;

		if (!wl__grow((void **)&t->segs, &t->segcap, r->nsegs,
		    sizeof(*t->segs)))
			return wl__fail(p, WL_ENOMEM, NULL, 0, 0,
			    "out of memory");
		for (uint32_t i = 0; i < r->nsegs; i++) {
			t->segs[i].key = wl_mix(r->segs[i].key, salt);
			t->segs[i].len = r->segs[i].len;
		}
		r->segs = t->segs;
		r->out_key = wl_mix(r->out_key, salt);
		if (r->session != 0)
			r->session = wl_mix(r->session, salt) | 1;
	}
	return WL_OK;
}

static void
tile_free(struct wl_stage *st)
{
	struct wl__tile *t = (struct wl__tile *)st;

	wl__stage_free(t->in);
	free(t->segs);
	free(t);
}

static int
tile_check(const struct wl_stage *st)
{
	const struct wl__tile *t = (const struct wl__tile *)st;

	if (t->copy >= t->copies)
		return WL_CHECK_TILE_COPY;
	if (t->copy > 0 && !(t->period > 0))
		return WL_CHECK_TILE_PERIOD;
	if (t->copy == 0 && t->n0 != st->nout)
		return WL_CHECK_TILE_FIRST;
	return wl__stage_check(t->in);
}

static const struct wl_stage_ops tile_ops = { tile_next, tile_free,
	tile_check };

wl_err
wl__tile_open(struct wl_stream *p, struct wl_stage *first,
    struct wl_stage **out)
{
	struct wl__tile *t = calloc(1, sizeof(*t));

	if (t == NULL) {
		wl__stage_free(first);
		return wl__fail(p, WL_ENOMEM, NULL, 0, 0, "out of memory");
	}
	t->base.ops = &tile_ops;
	t->base.p = p;
	t->in = first;
	t->copies = p->cfg.tile_copies;
	t->share = p->cfg.tile_share;
	t->period = (int64_t)llround(p->cfg.tile_period_s * 1e9);
	*out = &t->base;
	return WL_OK;
}
