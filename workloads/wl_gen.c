/*
 * wl_gen.c -- the synthetic generator stage.
 *
 * The arrival process produces *session starts*; a session has T turns
 * (T from generator.sessions.turns, 1 by default, so a session is then
 * just a request).  Turn j's prompt is the session's system prompt (if
 * any), then every earlier turn's user text and answer, then its own user
 * text: shared prefixes at two levels, K system prompts chosen with Zipf
 * popularity and the growing conversation.  Turn j+1 arrives a think time
 * (exponential, mean think_s) after turn j's arrival: an open-loop model,
 * because a workload cannot know when the engine finishes turn j;
 * think_ns carries the gap for an engine that wants to close the loop.
 *
 * Live sessions wait in a min-heap on (next arrival, session id), so
 * requests come out in time order; memory is the live sessions (rate x
 * session length), not the stream length.  Independent RNG streams (one
 * per purpose) keep a change in one feature from reshuffling the others.
 *
 * Arrivals: Poisson, Gamma renewal with a given CV, constant, and
 * piecewise-constant Poisson rates (on/off is a two-piece repeating
 * schedule) by time rescaling: a unit-rate exponential "work" is spent
 * across the pieces, which is exact for piecewise-constant rates.
 */
#include "config.h"

#include "workloads/wl_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>

enum {
	RNG_ARR, RNG_LEN, RNG_SYS, RNG_SESS, RNG_MISC, RNG_SYSLEN, RNG_LORA,
	NRNG
};

struct sess {
	uint64_t id;
	uint32_t turn, turns;
	int64_t next_t, think;
	/* a next turn past the horizon (wl.h): next_t is INT64_MAX, and
	 * this its real time, which fails the stream if it is reached */
	double next_real;
	uint64_t ctx;		/* tokens of segs */
	uint32_t lora;		/* its LoRA adapter, 0 none */
	struct wl_seg *segs;
	uint32_t nsegs;
	size_t cap;
};

struct gen {
	struct wl_stage base;
	const struct wl_gen_config *g;
	uint64_t seed;
	gsl_rng *rng[NRNG];
	struct wl_sampler prompt, output, priority, n, turns, syslen;
	gsl_ran_discrete_t *sys_table;
	gsl_ran_discrete_t *lora_table;	/* adapter popularity */
	uint32_t *sys_len;
	uint32_t (*pairs)[2];	/* joint (prompt, output) lengths */
	size_t npairs;
	/* arrivals */
	int64_t t;		/* last session start */
	uint64_t starts;
	bool starts_done;
	int64_t next_start;
	double next_real;	/* next_start in double when past the horizon
				 * (next_start is INT64_MAX then), else 0 */
	bool have_next;
	struct wl_rate_seg *pieces;
	size_t npieces, piece;
	int64_t piece_end;
	bool pieces_repeat;
	/* sessions */
	struct sess **heap;
	size_t nheap, heapcap;
	uint64_t committed, made;
	int64_t dur_ns;
	struct wl_seg *out;	/* the returned request's segments */
	size_t outcap;
};

static int64_t
ns_of(double s)
{
	double v = s * 1e9;

	return v >= 9.2e18 ? INT64_MAX : (int64_t)llround(v);
}

/*
 * t + s seconds in ns, as t + ns_of(s).  Past the horizon (wl.h) it is
 * INT64_MAX instead (no overflow), and *real keeps the real time (else 0).
 */
static int64_t
time_after(int64_t t, double s, double *real)
{
	double v = (double)t + s * 1e9;

	if (wl__beyond_horizon(v)) {
		*real = v;
		return INT64_MAX;
	}
	*real = 0;
	return t + ns_of(s);
}

/* The next session's start, t + s seconds (time_after). */
static int64_t
start_at(struct gen *g, int64_t t, double s)
{
	return time_after(t, s, &g->next_real);
}

/* Next session start after g->t; false when the schedule has ended. */
static bool
next_arrival(struct gen *g, int64_t *out)
{
	const struct wl_arrival *a = &g->g->arrival;
	gsl_rng *r = g->rng[RNG_ARR];

	switch (a->kind) {
	case WL_ARR_POISSON:
		*out = start_at(g, g->t,
		    gsl_ran_exponential(r, 1.0 / a->rate));
		return true;
	case WL_ARR_GAMMA: {
		double k = 1.0 / (a->cv * a->cv);

		*out = start_at(g, g->t,
		    gsl_ran_gamma(r, k, 1.0 / (a->rate * k)));
		return true;
	}
	case WL_ARR_CONSTANT:
		*out = start_at(g, 0, (double)(g->starts + 1) / a->rate);
		return true;
	case WL_ARR_ONOFF:
	case WL_ARR_SCHEDULE: {
		double work = gsl_ran_exponential(r, 1.0);
		int64_t t = g->t;

		for (;;) {
			double rate = g->pieces[g->piece].rate;

			if (rate > 0) {
				double dt = work / rate;

				if ((double)t + dt * 1e9 <
				    (double)g->piece_end) {
					*out = start_at(g, t, dt);
					return true;
				}
				work -= rate * (double)(g->piece_end - t) / 1e9;
			}
			t = g->piece_end;
			if (++g->piece == g->npieces) {
				if (!g->pieces_repeat)
					return false;
				g->piece = 0;
			}
			g->piece_end = t +
			    ns_of(g->pieces[g->piece].duration_s);
		}
	}
	}
	return false;
}

static bool
heap_less(const struct sess *a, const struct sess *b)
{
	if (a->next_t != b->next_t)
		return a->next_t < b->next_t;
	return a->id < b->id;
}

static bool
heap_push(struct gen *g, struct sess *s)
{
	size_t i;

	if (!wl__grow((void **)&g->heap, &g->heapcap, g->nheap + 1,
	    sizeof(*g->heap)))
		return false;
	i = g->nheap++;
	g->heap[i] = s;
	while (i > 0) {
		size_t up = (i - 1) / 2;

		if (!heap_less(g->heap[i], g->heap[up]))
			break;
		g->heap[i] = g->heap[up];
		g->heap[up] = s;
		i = up;
	}
	return true;
}

static struct sess *
heap_pop(struct gen *g)
{
	struct sess *top = g->heap[0];
	size_t i = 0;

	g->heap[0] = g->heap[--g->nheap];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct sess *tmp;

		if (l < g->nheap && heap_less(g->heap[l], g->heap[m]))
			m = l;
		if (r < g->nheap && heap_less(g->heap[r], g->heap[m]))
			m = r;
		if (m == i)
			break;
		tmp = g->heap[i];
		g->heap[i] = g->heap[m];
		g->heap[m] = tmp;
		i = m;
	}
	return top;
}

static void
sess_free(struct sess *s)
{
	if (s != NULL) {
		free(s->segs);
		free(s);
	}
}

static bool
sess_push(struct sess *s, uint64_t key, uint32_t len)
{
	if (!wl__grow((void **)&s->segs, &s->cap, (size_t)s->nsegs + 1,
	    sizeof(*s->segs)))
		return false;
	s->segs[s->nsegs].key = key;
	s->segs[s->nsegs].len = len;
	s->nsegs++;
	s->ctx += len;
	return true;
}

static uint32_t
clamp_len(int64_t v)
{
	return v < 1 ? 1 : v > INT32_MAX ? (uint32_t)INT32_MAX : (uint32_t)v;
}

/* Start a session at time t; NULL + *rc on failure. */
/* P(adapter k) ~ k^-s over 1..adapters: adapter 1 the most popular. */
static gsl_ran_discrete_t *
gen_lora_table(const struct wl_gen_config *c)
{
	double *w = malloc(c->lora_adapters * sizeof(*w));
	gsl_ran_discrete_t *t;

	if (w == NULL)
		return NULL;
	for (uint32_t k = 0; k < c->lora_adapters; k++)
		w[k] = pow((double)k + 1, -c->lora_zipf_s);
	t = gsl_ran_discrete_preproc(c->lora_adapters, w);
	free(w);
	return t;
}

static struct sess *
sess_start(struct gen *g, int64_t t, wl_err *rc)
{
	const struct wl_gen_config *c = g->g;
	struct sess *s = calloc(1, sizeof(*s));

	*rc = WL_OK;
	if (s == NULL)
		goto nomem;
	s->id = ++g->starts;
	s->next_t = t;
	s->turns = clamp_len(wl__sample(&g->turns, g->rng[RNG_SESS]));
	if (c->systems > 0 && (c->system_fraction >= 1 ||
	    gsl_rng_uniform(g->rng[RNG_SYS]) < c->system_fraction)) {
		size_t k = gsl_ran_discrete(g->rng[RNG_SYS], g->sys_table);

		if (!sess_push(s, wl_mix(wl_mix(g->seed, WL_NS_SYS), k),
		    g->sys_len[k]))
			goto nomem;
	}
	/* a session talks to one adapter (its own stream: the other
	 * draws are the same with or without LoRA) */
	if (c->lora_adapters > 0 && (c->lora_fraction >= 1 ||
	    gsl_rng_uniform(g->rng[RNG_LORA]) < c->lora_fraction))
		s->lora = 1 + (uint32_t)gsl_ran_discrete(g->rng[RNG_LORA],
		    g->lora_table);
	return s;
nomem:
	sess_free(s);
	*rc = wl__fail(g->base.p, WL_ENOMEM, NULL, 0, 0, "out of memory");
	return NULL;
}

/* Emit s's next turn into r; false (no request) if it would overflow. */
static wl_err
sess_turn(struct gen *g, struct sess *s, struct wl_request *r, bool *made)
{
	const struct wl_gen_config *c = g->g;
	uint32_t user, output;
	uint64_t ukey, okey;

	*made = false;
	if (g->npairs > 0) {
		size_t i = gsl_rng_uniform_int(g->rng[RNG_LEN],
		    (unsigned long)g->npairs);

		user = g->pairs[i][0];
		output = g->pairs[i][1];
	} else {
		user = clamp_len(wl__sample(&g->prompt, g->rng[RNG_LEN]));
		output = clamp_len(wl__sample(&g->output, g->rng[RNG_LEN]));
	}
	if (c->max_context && s->ctx + user + output > c->max_context)
		return WL_OK;	/* the session ends here */
	if (s->ctx + user > INT32_MAX)
		return WL_OK;
	ukey = wl_mix(wl_mix(wl_mix(g->seed, WL_NS_USER), s->id), s->turn);
	okey = wl_mix(wl_mix(wl_mix(g->seed, WL_NS_OUT), s->id), s->turn);
	if (!wl__grow((void **)&g->out, &g->outcap, (size_t)s->nsegs + 1,
	    sizeof(*g->out)))
		return wl__fail(g->base.p, WL_ENOMEM, NULL, 0, 0,
		    "out of memory");
	if (s->nsegs > 0)
		memcpy(g->out, s->segs, (size_t)s->nsegs * sizeof(*g->out));
	g->out[s->nsegs].key = ukey;
	g->out[s->nsegs].len = user;
	memset(r, 0, sizeof(*r));
	r->arrival_ns = s->next_t;
	r->prompt_tokens = (uint32_t)(s->ctx + user);
	r->output_tokens = output;
	r->priority = (int32_t)wl__sample(&g->priority, g->rng[RNG_MISC]);
	r->n = clamp_len(wl__sample(&g->n, g->rng[RNG_MISC]));
	r->session = s->turns > 1 ? s->id : 0;
	r->turn = s->turn;
	r->think_ns = s->think;
	r->out_key = okey;
	r->nsegs = s->nsegs + 1;
	r->segs = g->out;
	r->lora = s->lora;
	/* its own text alone, and no later turn begins with it */
	r->unique = s->nsegs == 0 && s->turns <= 1;
	*made = true;
	/* The conversation grows by this turn's text and answer. */
	if (!sess_push(s, ukey, user) || !sess_push(s, okey, output))
		return wl__fail(g->base.p, WL_ENOMEM, NULL, 0, 0,
		    "out of memory");
	s->turn++;
	return WL_OK;
}

static wl_err
gen_next(struct wl_stage *st, struct wl_request *r)
{
	struct gen *g = (struct gen *)st;
	const struct wl_gen_config *c = g->g;

	for (;;) {
		struct sess *s;
		bool made;
		wl_err rc;

		if (c->requests && g->made >= c->requests)
			return WL_END;
		if (!g->starts_done && !g->have_next) {
			if (c->requests && g->committed >= c->requests) {
				g->starts_done = true;
			} else if (!next_arrival(g, &g->next_start) ||
			    (g->dur_ns && g->next_start >= g->dur_ns)) {
				g->starts_done = true;
			} else {
				g->have_next = true;
			}
		}
		if (g->have_next && (g->nheap == 0 ||
		    g->next_start < g->heap[0]->next_t)) {
			if (g->next_real != 0) {
				memset(r, 0, sizeof(*r));
				return wl__past_horizon(st->p, r,
				    g->next_real);
			}
			g->have_next = false;
			g->t = g->next_start;
			s = sess_start(g, g->t, &rc);
			if (s == NULL)
				return rc;
			g->committed += s->turns;
		} else if (g->nheap > 0) {
			s = heap_pop(g);
		} else {
			return WL_END;
		}
		if (g->dur_ns && s->next_t >= g->dur_ns) {
			sess_free(s);
			continue;
		}
		if (s->next_real != 0) {	/* a turn past the horizon */
			double v = s->next_real;

			sess_free(s);
			memset(r, 0, sizeof(*r));
			return wl__past_horizon(st->p, r, v);
		}
		rc = sess_turn(g, s, r, &made);
		if (rc != WL_OK) {
			sess_free(s);
			return rc;
		}
		if (made && s->turn < s->turns) {
			double think = c->think_s > 0 ?
			    gsl_ran_exponential(g->rng[RNG_SESS], c->think_s) :
			    0;

			s->think = ns_of(think);
			s->next_t = time_after(s->next_t, think, &s->next_real);
			if (!heap_push(g, s)) {
				sess_free(s);
				return wl__fail(st->p, WL_ENOMEM, NULL, 0, 0,
				    "out of memory");
			}
		} else {
			sess_free(s);
		}
		if (!made)
			continue;
		g->made++;
		st->p->cnt.rows++;
		return WL_OK;
	}
}

static void
gen_free(struct wl_stage *st)
{
	struct gen *g = (struct gen *)st;

	for (size_t i = 0; i < NRNG; i++)
		if (g->rng[i] != NULL)
			gsl_rng_free(g->rng[i]);
	wl__sampler_release(&g->prompt);
	wl__sampler_release(&g->output);
	wl__sampler_release(&g->priority);
	wl__sampler_release(&g->n);
	wl__sampler_release(&g->turns);
	wl__sampler_release(&g->syslen);
	if (g->sys_table != NULL)
		gsl_ran_discrete_free(g->sys_table);
	if (g->lora_table != NULL)
		gsl_ran_discrete_free(g->lora_table);
	free(g->sys_len);
	free(g->pairs);
	for (size_t i = 0; i < g->nheap; i++)
		sess_free(g->heap[i]);
	free(g->heap);
	free(g->pieces);
	free(g->out);
	free(g);
}

static int
gen_check(const struct wl_stage *st)
{
	const struct gen *g = (const struct gen *)st;

	return st->nout != g->made ? WL_CHECK_GEN : 0;
}

static const struct wl_stage_ops gen_ops = { gen_next, gen_free, gen_check };

/* Read every (prompt, output) pair of the lengths trace. */
static wl_err
load_pairs(struct gen *g, const struct wl_config *c)
{
	struct wl_stream tmp;
	struct wl_config tc;
	struct wl_stage *st;
	struct wl_request r;
	size_t cap = 0;
	wl_err rc;

	if (c->gen.lengths_sharegpt) {
		rc = wl__sharegpt_pairs(c->gen.lengths_trace,
		    c->gen.lengths_output, &g->pairs, &g->npairs,
		    &g->base.p->err);
		return rc;
	}
	memset(&tmp, 0, sizeof(tmp));
	wl_config_init(&tc);
	tc.format = c->gen.lengths_format;
	tc.hash_block_tokens = c->hash_block_tokens;
	tc.order = WL_ORDER_SORT;	/* order does not matter here */
	tmp.cfg = tc;
	rc = wl__trace_open(&tmp, &tc, c->gen.lengths_trace,
	    c->gen.lengths_format, &st);
	if (rc != WL_OK) {
		g->base.p->err = tmp.err;
		return rc;
	}
	while ((rc = wl__stage_next(st, &r)) == WL_OK) {
		if (!wl__grow((void **)&g->pairs, &cap, g->npairs + 1,
		    sizeof(*g->pairs))) {
			rc = wl__fail(g->base.p, WL_ENOMEM, NULL, 0, 0,
			    "out of memory");
			break;
		}
		g->pairs[g->npairs][0] = r.prompt_tokens;
		g->pairs[g->npairs][1] = r.output_tokens;
		g->npairs++;
	}
	wl__stage_free(st);
	if (rc != WL_END) {
		if (rc != WL_ENOMEM)
			g->base.p->err = tmp.err;
		return rc;
	}
	return WL_OK;
}

wl_err
wl__gen_open(struct wl_stream *p, const struct wl_config *c,
    struct wl_stage **out)
{
	const struct wl_gen_config *gc = &c->gen;
	struct gen *g = calloc(1, sizeof(*g));
	char what[256];
	wl_err rc = WL_OK;
	struct {
		struct wl_sampler *s;
		const struct wl_dist *d;
		const char *name;
	} samp[6];

	if (g == NULL)
		return wl__fail(p, WL_ENOMEM, NULL, 0, 0, "out of memory");
	g->base.ops = &gen_ops;
	g->base.p = p;
	g->g = gc;
	g->seed = c->seed;
	g->dur_ns = ns_of(gc->duration_s);
	for (size_t i = 0; i < NRNG; i++) {
		g->rng[i] = wl__rng_new(c->seed, i);
		if (g->rng[i] == NULL) {
			rc = wl__fail(p, WL_ENOMEM, NULL, 0, 0,
			    "out of memory");
			goto fail;
		}
	}
	samp[0].s = &g->prompt; samp[0].d = &gc->prompt;
	samp[0].name = "generator.prompt";
	samp[1].s = &g->output; samp[1].d = &gc->output;
	samp[1].name = "generator.output";
	samp[2].s = &g->priority; samp[2].d = &gc->priority;
	samp[2].name = "generator.priority";
	samp[3].s = &g->n; samp[3].d = &gc->n;
	samp[3].name = "generator.n";
	samp[4].s = &g->turns; samp[4].d = &gc->turns;
	samp[4].name = "generator.sessions.turns";
	samp[5].s = &g->syslen; samp[5].d = &gc->system_len;
	samp[5].name = "generator.prefix.length";
	for (size_t i = 0; i < 6; i++) {
		rc = wl__sampler_init(samp[i].s, samp[i].d, what,
		    sizeof(what));
		if (rc != WL_OK) {
			wl__fail(p, rc, NULL, 0, 0, "%s: %s", samp[i].name,
			    what);
			goto fail;
		}
	}
	if (gc->systems > 0) {
		double *w = malloc(gc->systems * sizeof(*w));

		g->sys_len = malloc(gc->systems * sizeof(*g->sys_len));
		if (w == NULL || g->sys_len == NULL) {
			free(w);
			rc = wl__fail(p, WL_ENOMEM, NULL, 0, 0,
			    "out of memory");
			goto fail;
		}
		for (uint32_t k = 0; k < gc->systems; k++) {
			w[k] = pow((double)k + 1, -gc->system_zipf_s);
			g->sys_len[k] = clamp_len(wl__sample(&g->syslen,
			    g->rng[RNG_SYSLEN]));
		}
		g->sys_table = gsl_ran_discrete_preproc(gc->systems, w);
		free(w);
		if (g->sys_table == NULL) {
			rc = wl__fail(p, WL_ENOMEM, NULL, 0, 0,
			    "out of memory");
			goto fail;
		}
	}
	if (gc->lora_adapters > 0 && (g->lora_table =
	    gen_lora_table(gc)) == NULL) {
		rc = wl__fail(p, WL_ENOMEM, NULL, 0, 0, "out of memory");
		goto fail;
	}
	if (gc->arrival.kind == WL_ARR_ONOFF) {
		g->npieces = 2;
		g->pieces = malloc(2 * sizeof(*g->pieces));
		if (g->pieces == NULL) {
			rc = wl__fail(p, WL_ENOMEM, NULL, 0, 0,
			    "out of memory");
			goto fail;
		}
		g->pieces[0].duration_s = gc->arrival.on_s;
		g->pieces[0].rate = gc->arrival.rate;
		g->pieces[1].duration_s = gc->arrival.off_s;
		g->pieces[1].rate = gc->arrival.off_rate;
		g->pieces_repeat = true;
	} else if (gc->arrival.kind == WL_ARR_SCHEDULE) {
		g->npieces = gc->arrival.nsegs;
		g->pieces = malloc(g->npieces * sizeof(*g->pieces));
		if (g->pieces == NULL) {
			rc = wl__fail(p, WL_ENOMEM, NULL, 0, 0,
			    "out of memory");
			goto fail;
		}
		memcpy(g->pieces, gc->arrival.segs,
		    g->npieces * sizeof(*g->pieces));
		g->pieces_repeat = gc->arrival.repeat;
	}
	if (g->npieces > 0)
		g->piece_end = ns_of(g->pieces[0].duration_s);
	if (gc->lengths_trace != NULL) {
		rc = load_pairs(g, c);
		if (rc != WL_OK)
			goto fail;
	}
	p->info.format = "generator";
	*out = &g->base;
	return WL_OK;
fail:
	gen_free(&g->base);
	return rc;
}
