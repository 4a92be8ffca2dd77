/*
 * replica_ff.c -- a replica's steady decode steps made at once
 * (replica.h replica_ff, docs/fastforward.md).
 *
 * Between two steps the single-step loop calls replica_begin (the
 * scheduler's batch, its time, the step's notes) and, at the step's end,
 * replica_end (the output tokens, their times at the client, the usage
 * integral).  When every running request is in steady decode
 * (kvs_decode_span), each such step's batch is the same requests with one
 * more token of context each, less those that ended, so its time needs
 * no scheduler: the steps that end by the caller's horizon are timed
 * first, then the scheduler makes them all in one call (kvs_decode_plan),
 * and the notes of every step are taken in the order the single steps
 * take them: the usage integral and the fragmentation mean are
 * floating-point sums, so each step's terms are added in turn, from the
 * blocks each step took and its ends freed.  The tokens' times at the
 * client and their gaps need no such order after a batch's first step
 * (ff_tokens).  The step in flight past the horizon may be made too, its
 * end left to replica_end at its time (the tail, replica__ff_end).
 */
#include "config.h"

#include "sim/replica_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Most steps in one call, and most tokens (running x steps) in scratch. */
#define FF_MAX_STEPS 4096u
#define FF_MAX_TOKENS (1u << 20)
/* Most arrivals one span takes in: each adds a request to the run's
 * records, which the planner's passes go over at each admission and end
 * (measured best on the Azure hour among 2 to 32: docs/BENCHMARKS.md). */
#define FF_MAX_TAKES 16u

/* What the fast-forward does not cover: single steps. */
static bool
ff_covered(const replica *rp)
{
	return rp->ff && !rp->busy && !rp->check && rp->obs == NULL &&
	       rp->ct == NULL && rp->off == NULL && !rp->lora_on &&
	       rp->spec == NULL && rp->pp == NULL && !rp->fork &&
	       rp->nabort == 0 && rp->st.ngroups == 1;
}

static kv_err
ff_room(replica *rp, uint32_t n, uint32_t k)
{
	size_t nt = (size_t)n * k;

	if (nt > rp->capfftok) {
		uint32_t *t = realloc(rp->fftok, nt * sizeof(*t));

		if (t == NULL)
			return KV_ENOMEM;
		/* defined contents: a keyed request's row is not written */
		memset(t + rp->capfftok, 0, (nt - rp->capfftok) * sizeof(*t));
		rp->fftok = t;
		rp->capfftok = nt;
	}
	if (k > rp->capffk) {
		uint32_t *a = realloc(rp->fftaken, k * sizeof(*a));
		int64_t *d;

		if (a == NULL)
			return KV_ENOMEM;
		rp->fftaken = a;
		if ((a = realloc(rp->fffreed, k * sizeof(*a))) == NULL)
			return KV_ENOMEM;
		rp->fffreed = a;
		if ((d = realloc(rp->fft, k * sizeof(*d))) == NULL)
			return KV_ENOMEM;
		rp->fft = d;
		if ((a = realloc(rp->fftokn, k * sizeof(*a))) == NULL)
			return KV_ENOMEM;
		rp->fftokn = a;
		rp->capffk = k;
	}
	if (n > rp->capffrun) {
		struct kvs_running *r = realloc(rp->ffrun, n * sizeof(*r));
		uint32_t *a;

		if (r == NULL)
			return KV_ENOMEM;
		rp->ffrun = r;
		if ((a = realloc(rp->ffend, n * sizeof(*a))) == NULL)
			return KV_ENOMEM;
		rp->ffend = a;
		if ((a = realloc(rp->ffpos, n * sizeof(*a))) == NULL)
			return KV_ENOMEM;
		rp->ffpos = a;
		rp->capffrun = n;
	}
	return KV_OK;
}

/* What replica_ff's planner (ff_plan) is told and finds. */
struct ff_plan {
	replica *rp;
	int64_t now, until, until_end, tail_until, ext_sched, ext_until;
	uint64_t slots, ntok;	/* the first step's, as note_step takes them */
	uint64_t free0;		/* free blocks before the run */
	uint32_t nend;		/* ffend's steps */
	bool tail;		/* the run ends with the tail */
	uint32_t next;		/* and so many steps after it */
	int64_t t_last;		/* the last step's end */
	kv_err err;		/* KV_ENOMEM: no room for the span */
	/* the step a request held for its step joins may be the run's
	 * last (adm_ok): it is (adm), begun at t_adm; the blocks its
	 * admissions took; the waiting requests before it; the message of
	 * a failed admission */
	bool adm_ok, adm;
	uint32_t n0;		/* the run's running requests */
	int64_t t_adm;
	uint32_t adm_taken;
	uint64_t wait0;
	char *why;
	size_t whylen;
	/* the run's most steps (tok's rows), its requests (ffrun's
	 * entries, those its admissions add included), the step that
	 * admits being made, and the admissions' entries so far */
	uint32_t kcap, nall, jcur, aoff;
	bool ids;		/* a request keeps its tokens' ids (not keyed) */
	/* the arrivals the span may take in (sp->arr; NULL: no more): the
	 * next, peek's ak-th (ar); the API server's free time (fe_t) once
	 * the steps before fe_j (ending by fe_e) and the requests taken in
	 * before fe_k have had their work; a token's work there (w); the
	 * taken requests held before the next admission (tk0 .. tk1) */
	struct replica_span *sp;
	const struct replica_arrivals *arr;
	const struct wl_request *ar;
	uint32_t ak, fe_j;
	int64_t fe_t, fe_e, w;
	uint64_t fe_k, tk0, tk1;
	uint32_t ntaken;
};

/*
 * Whether the span takes in request r, arriving after now: held for its
 * step as replica_add would hold it, its time at the engine after the API
 * server's work (in > 0: at > its arrival, after every step begun
 * before it), so only the step chosen at or after that takes it.
 */
static bool
ff_takes(const replica *rp, const struct ff_plan *x,
	 const struct wl_request *r, int64_t in)
{
	return r->arrival_ns > x->now && r->n == 1 && r->lora == 0 &&
	       r->prompt_tokens <= rp->max_model_len &&
	       replica__fe(rp) != NULL && in > 0 && rp->async &&
	       x->adm_ok && rp->client_tmo == 0 &&
	       r->arrival_ns < INT64_MAX / 4;
}

/*
 * The API server's free time at ta, before the work of a request that
 * arrives then: the output of each step that ends by ta (steps up to j;
 * step j ends at ej), and the work of the requests taken in before, in
 * the order the walk gives them (a request before the tokens of a step
 * that ends after it).  false where the times near overflow.
 */
static bool
ff_fe_to(replica *rp, struct ff_plan *x, uint32_t j, int64_t ej, int64_t ta)
{
	const int64_t *fft = rp->fft;
	const uint32_t *tokn = rp->fftokn;
	int64_t f = x->fe_t, e = x->fe_e, w = x->w;
	uint32_t k = x->fe_j, kend = ej <= ta ? j + 1 : j;

	for (;;) {
		/* the next request taken in before, whose work goes before
		 * the tokens of the steps that end after it arrives */
		int64_t jt = x->fe_k < rp->tk_n ?
			     rp->tk[x->fe_k - rp->tkbase].t : INT64_MAX;

		for (; k < kend && e + fft[k] <= jt; k++) {
			e += fft[k];
			if (tokn[k] > 0)
				f = (f > e ? f : e) + (int64_t)tokn[k] * w;
		}
		if (jt > ta)	/* (the steps up to kend are in) */
			break;
		f = (f > jt ? f : jt) + rp->tk[x->fe_k - rp->tkbase].in;
		x->fe_k++;
	}
	x->fe_t = f;
	x->fe_e = e;
	x->fe_j = k;
	/* (the times are far from overflow: ff_takes) */
	return e <= INT64_MAX / 4 && f <= INT64_MAX / 4;
}

/*
 * The arrivals at or before the end ej of step j (timed, its output
 * counted in fftokn): taken in while the span can (ff_takes, the one
 * after known, the horizons it leaves past the arrival), each held until
 * the API server gives it (ff_fe_to); the plan's horizons move past each.
 * After the first the span cannot take, no more.
 */
static kv_err
ff_take(replica *rp, struct ff_plan *x, uint32_t j, int64_t ej)
{
	while (x->arr != NULL && x->ar != NULL && x->ar->arrival_ns <= ej &&
	       x->ntaken < FF_MAX_TAKES) {
		const struct wl_request *r = x->ar, *next;
		struct replica_span nsp = *x->sp;
		int64_t in = cost_frontend_in_ns(rp->cm, r->prompt_tokens);
		int64_t at;
		bool end;
		kv_err e;

		/* (one not taken in: none after it either, the API server
		 * serving them in order) */
		if (!ff_takes(rp, x, r, in)) {
			x->arr = NULL;
			break;
		}
		next = x->arr->peek(x->arr->arg, x->ak + 1, &end);
		if (next == NULL && !end) {
			x->arr = NULL;
			break;
		}
		/* (reading ahead may have moved r: peek's pointers hold
		 * until its next call) */
		r = x->arr->peek(x->arr->arg, x->ak, &end);
		x->arr->bounds(x->arr->arg, x->now, next, &nsp);
		if (nsp.until < r->arrival_ns ||
		    !ff_fe_to(rp, x, j, ej, r->arrival_ns)) {
			/* the horizons it left */
			x->arr->bounds(x->arr->arg, x->now, r, &nsp);
			x->arr = NULL;
			break;
		}
		at = (x->fe_t > r->arrival_ns ? x->fe_t : r->arrival_ns) + in;
		if ((e = replica__take(rp, r, in, at, x->why, x->whylen)) !=
		    KV_OK)
			return e;
		x->fe_t = at;
		x->fe_k = rp->tk_n;
		*x->sp = nsp;
		x->until = nsp.until;
		x->until_end = nsp.until_end;
		x->tail_until = nsp.tail_until;
		x->ext_sched = nsp.ext_sched;
		x->ext_until = nsp.ext_until;
		x->ak++;
		x->ar = next;
		x->ntaken++;
	}
	return KV_OK;
}

/* The horizon until, or before the next arrival the span may take in
 * (ff_take looks at each step that ends at or after it). */
static inline int64_t
ff_take_until(const struct ff_plan *x, int64_t until)
{
	return x->arr != NULL && x->ar != NULL &&
	       x->ar->arrival_ns - 1 < until ? x->ar->arrival_ns - 1 : until;
}

/*
 * replica__decode_time, its usual case inline (ff_time asks it once a
 * step): the memo's time, then the step's floor and CPU part.
 */
static inline int64_t
ff_decode_time(replica *rp, struct cost_decode_memo *m, uint32_t n,
	       uint64_t ctx_sum, int64_t *cpu)
{
	int64_t dt;

	if (rp->step_ns > 0 || rp->fork || rp->spec_cost != NULL ||
	    (dt = cost_decode_memo_quick(rp->cm, m, n, ctx_sum)) < 0)
		return replica__decode_time(rp, m, n, ctx_sum, cpu);
	*cpu = 0;
	return replica__step_tail(dt, &m->bd, cpu);
}

/*
 * ff_time's usual steps, j from j0 up to jend, before the next step that
 * ends requests: async scheduling, each step's time from n's memo (m,
 * made), no request held for its step, none past the horizon until.  Each
 * step as ff_time's loop makes it (replica__async_choose's frame, the
 * memo's time with its tests made once, replica__step_tail,
 * replica__async_dt), with the pipeline's state in locals: the stores to
 * fft cannot alias them.  Stops before a step that ff_time's loop must
 * look at; returns it.  *tp: the time, moved to its start.
 */
static uint32_t
ff_time_run(replica *rp, const struct cost_decode_memo *m, int64_t *tp,
	    uint32_t j0, uint32_t jend, uint32_t n, uint64_t ctx,
	    int64_t until)
{
	const struct cost_decode_memo lm = *m;
	int64_t t = *tp, sched_t = rp->sched_t, next_s = rp->next_s;
	int64_t pipe_t = rp->pipe_t, *fft = rp->fft, s;
	uint32_t *tokn = rp->fftokn;
	int64_t held = rp->phead < rp->npend ? rp->pend[rp->phead].at :
					       INT64_MAX;
	bool piped = rp->piped;
	uint64_t room, c;
	uint32_t j;

	/* the memo's tests once, and the contexts' sums below its bound
	 * (ctx + j n < 2^61): past it, ff_time's loop asks the model */
	if (rp->cm == NULL || lm.cm != rp->cm || lm.n != n || !lm.one ||
	    n == 0 || ctx >= (1ull << 61))
		return j0;
	room = ((1ull << 61) - 1 - ctx) / n + 1;
	if (room < jend)
		jend = (uint32_t)room;
	/* a step is chosen when the one before it is launched (the
	 * pipeline's), else now; from the second step on, always the
	 * launch before (s: the next choice) */
	s = piped && pipe_t == t ? next_s : t;
	c = ctx + (uint64_t)j0 * n;
	for (j = j0; j < jend; j++, c += n) {
		int64_t dt, cpu = 0, start, end;

		if (held <= s)
			break;
		dt = replica__step_tail(cost_decode_memo_ns(&lm, n, c),
					&lm.bd, &cpu);
		start = s + cpu > t ? s + cpu : t;
		end = start + (dt - cpu);
		if (end - t > until - t)
			break;
		fft[j] = end - t;
		tokn[j] = n;
		sched_t = s;
		t = end;
		s = start;
	}
	if (j > j0) {
		rp->sched_t = sched_t;
		rp->piped = true;
		rp->next_s = s;
		rp->pipe_t = t;
	}
	*tp = t;
	return j;
}

/* ff_time's batch at step j0 of r[0..nall), in rp->seq: one token each
 * of the requests not ended before it. */
static void
ff_time_batch(replica *rp, const struct kvs_running *r, uint32_t nall,
	      uint32_t j0)
{
	for (uint32_t i = 0, k = 0; i < nall; i++) {
		if (r[i].ends_at < j0)
			continue;
		rp->seq[k].q = 1;
		rp->seq[k++].ctx = r[i].computed + (j0 - r[i].start);
	}
}

/*
 * ff_time at step j, after the requests of r[0..nall) that the step
 * before (was) ended: their contexts out of *ctx and of the *n running,
 * and where the batch is asked for (seq), that of the others in rp->seq.
 * Returns the next step that ends requests.
 */
static uint32_t
ff_time_ends(replica *rp, const struct kvs_running *r, uint32_t nall,
	     uint32_t j, uint32_t was, bool seq, uint64_t *ctx, uint32_t *n)
{
	uint32_t nxt = UINT32_MAX, m = 0;

	for (uint32_t i = 0; i < nall; i++) {
		if (r[i].ends_at == was) {
			*ctx -= (uint64_t)r[i].computed - r[i].start;
			(*n)--;
		} else if (r[i].ends_at > was) {
			if (r[i].ends_at < nxt)
				nxt = r[i].ends_at;
			if (seq) {
				rp->seq[m].q = 1;
				rp->seq[m++].ctx = r[i].computed +
						   (j - r[i].start);
			}
		}
	}
	return nxt;
}

/*
 * The run's steps from j0 on, begun at t0, that end by until, up to step
 * kmax, a step that ends requests by until_end: their durations as
 * replica_begin returns them, in fft[]; the async pipeline's state left
 * as after the last of them.  r[0..nall) are the run's requests; step j's
 * batch is those from their start to the step that ends them (ends_at),
 * each with a token of context more a step (rp->seq holds step j0's).
 * *nend: the steps made that end requests, added to ffend[].  The first
 * step past the horizon is made too, as the tail (*tail), when it ends by
 * tail_until; after a tail that ends no request, *next more steps, each
 * chosen before ext_sched, that end no request and end by ext_until.
 * *t_end: the last step's end.  Returns the step after the last made.
 */
static uint32_t
ff_time(replica *rp, int64_t t0, struct ff_plan *x,
	const struct kvs_running *r, uint32_t nall, uint32_t j0,
	uint32_t kmax, uint32_t *nend, bool *tail, uint32_t *next,
	int64_t *t_end)
{
	struct kvs_step st;
	int64_t t = t0, cpu, until = x->until, now = x->now;
	uint64_t ctx = 0;
	uint32_t j, n = 0, nxt = UINT32_MAX;	/* the next step that ends */
	bool sum, fast;

	memset(&st, 0, sizeof(st));
	*tail = false;
	*next = 0;
	/* step j's contexts add up to ctx + j n (modulo 2^64: a request
	 * that joins at its start counts computed - start) */
	for (uint32_t i = 0; i < nall; i++) {
		if (r[i].ends_at < j0)
			continue;	/* ended before */
		ctx += (uint64_t)r[i].computed - r[i].start;
		if (r[i].ends_at < nxt)
			nxt = r[i].ends_at;
		n++;
	}
	st.nsched = n;
	/* the time from the contexts' sum when the cost model allows; else
	 * from the batch, each request's context (rp->seq) */
	sum = replica__decode_time(rp, &rp->ffmemo[n % FF_MEMOS], n,
				   ctx + (uint64_t)j0 * n, &cpu) >= 0;
	if (!sum)
		ff_time_batch(rp, r, nall, j0);
	fast = sum && rp->async && rp->cm != NULL && rp->step_ns <= 0 &&
	       !rp->fork && rp->spec_cost == NULL;
	for (j = j0; j < kmax; j++) {
		bool piped, fresh = false, held;
		int64_t pipe_t, next_s, sched_t, dt;
		const struct cost_decode_memo *m = &rp->ffmemo[n % FF_MEMOS];

		/* the usual steps, in their own loop (the memo made by the
		 * step before, or by the search above) */
		if (fast && j < nxt && !*tail && m->cm == rp->cm &&
		    m->n == n && m->one &&
		    ctx + (uint64_t)kmax * n < (1ull << 61)) {
			j = ff_time_run(rp, m, &t, j, nxt < kmax ? nxt : kmax,
					n, ctx, ff_take_until(x, until));
			if (j >= kmax)
				break;
		}
		piped = rp->piped;
		pipe_t = rp->pipe_t;
		next_s = rp->next_s;
		sched_t = rp->sched_t;
		/* replica_begin's frame (replica__async_choose) */
		rp->sched_t = rp->async && rp->piped && rp->pipe_t == t ?
		    rp->next_s : t;
		rp->piped = false;
		/* a request held for its step (replica__admit_due) joins
		 * this one: not a steady step, but where adm_ok the run's
		 * last (the scheduler admits the request in it; replica_ff
		 * takes its time once it is chosen, and makes it the tail
		 * when it ends past the horizon); after the tail, none
		 * that a request may join (chosen from ext_sched on) nor
		 * one that ends requests */
		held = rp->phead < rp->npend &&
		       rp->pend[rp->phead].at <= rp->sched_t;
		if (held && x->adm_ok && !*tail) {
			/* the requests it ends, where the run goes on past
			 * it (nxt is the step before's, when that one
			 * ended requests) */
			uint32_t e = j > nxt ? UINT32_MAX : nxt;

			for (uint32_t i = 0; j > nxt && i < nall; i++)
				if (r[i].ends_at >= j && r[i].ends_at < e)
					e = r[i].ends_at;
			if (e == j)
				rp->ffend[(*nend)++] = j;
			x->adm = true;
			x->t_adm = t;
			rp->fft[j++] = 0;
			break;
		}
		if (held ||
		    (*tail && (rp->sched_t >= x->ext_sched || j == nxt))) {
			rp->piped = piped;
			rp->sched_t = sched_t;
			break;
		}
		/* those the step before ended are gone from this one */
		if (j > nxt) {
			nxt = ff_time_ends(rp, r, nall, j, nxt, !sum, &ctx,
					   &n);
			st.nsched = n;
			fresh = true;
		}
		if (sum) {
			dt = ff_decode_time(rp, &rp->ffmemo[n % FF_MEMOS], n,
					    ctx + (uint64_t)j * n, &cpu);
		} else {
			if (j > j0 && !fresh)
				for (uint32_t i = 0; i < n; i++)
					rp->seq[i].ctx++;
			dt = replica__step_time(rp, &st, &cpu);
		}
		if (rp->async)
			dt = replica__async_dt(rp, t, dt, cpu);
		/* arrivals in its time or at its end, taken in, move the
		 * horizon past them (its output before theirs, when it ends
		 * as they arrive) */
		rp->fft[j] = dt;
		rp->fftokn[j] = n;
		if (!*tail && x->arr != NULL && x->ar != NULL &&
		    x->ar->arrival_ns <= t + dt) {
			if ((x->err = ff_take(rp, x, j, t + dt)) != KV_OK)
				break;
			until = x->until;
		}
		/* it ends past the horizon: made as the tail when it ends by
		 * tail_until (the pipeline's state left as after it), else
		 * not made; after the tail, made when it ends by ext_until */
		if (*tail ? dt > x->ext_until - t :
		    dt > (j == nxt && x->until_end < until ? x->until_end :
			  until) - t) {
			if (!*tail && x->tail_until > t &&
			    dt <= x->tail_until - t) {
				*tail = true;
				if (j == nxt)
					rp->ffend[(*nend)++] = j;
				rp->fft[j] = dt;
				t += dt;
				if (j == nxt || x->ext_sched <= now) {
					j++;
					break;
				}
				continue;
			}
			rp->piped = piped;
			rp->pipe_t = pipe_t;
			rp->next_s = next_s;
			rp->sched_t = sched_t;
			break;
		}
		if (*tail)
			(*next)++;
		else if (j == nxt)
			rp->ffend[(*nend)++] = j;
		rp->fft[j] = dt;
		t += dt;
	}
	*t_end = t;
	return j;
}

/*
 * The tokens of step j of a batch (from the span's first step, or from
 * the first after an end moved the requests' places), at its end t
 * (replica_end's replica__gain).  The batch's first step's go one by one.
 * From the second on, the API server serves the same n tokens in the
 * same order, each taking w: the step's service starts at s = max(the
 * server's free time, t) and request i's token reaches its client at
 * s + (i + 1) w, so every request's gap since the step before is the
 * same, s less the last step's start: the histogram takes n of it at
 * once, and each request's sum, maximum and last token are closed at the
 * batch's end (ff_tokens_end).
 */
static void
ff_tokens(replica *rp, uint32_t j, uint32_t n, int64_t t, int64_t w,
	  rpt *rep)
{
	int64_t s = t, g;
	uint64_t *hist;

	if (j == 0) {
		/* replica__gain's, request by request: the server takes the
		 * n tokens back to back from s, token i out at s + (i + 1) w
		 * (cost_fifo_serve's sums, below its INT64_MAX clamp); every
		 * request has a token before (ff_plan), so each makes a gap */
		if (replica__fe(rp) != NULL)
			s = rp->fe.free_at > t ? rp->fe.free_at : t;
		if (s > INT64_MAX - (int64_t)n * w) {
			for (uint32_t i = 0; i < n; i++) {
				struct rq *q = rp->byreq[rp->sreq[i]];

				replica__gain(rp, q, q->gen + 1, t, rep);
			}
			rp->ffs = rp->byreq[rp->sreq[0]]->cl_last - w;
			rp->ffgmax = 0;
			return;
		}
		hist = rpt_itl_hist(rep);
		for (uint32_t i = 0; i < n; i++) {
			struct rq *q = rp->byreq[rp->sreq[i]];
			int64_t cl = s + (int64_t)(i + 1) * w;

			g = cl - q->cl_last;
			q->itl_sum += g;
			if (g > q->itl_max)
				q->itl_max = g;
			hist[rpt_itl_bucket(g)]++;	/* rpt_add_itl */
			rp->st.gen_tokens_done += q->nsamp;
			q->gen++;
			q->last_tok = t;
			q->cl_last = cl;
		}
		rpt_itl_counted(rep, n);
		if (replica__fe(rp) != NULL) {
			rp->fe.free_at = s + (int64_t)n * w;
			rp->fe.jobs += n;
			rp->fe.busy_ns += (int64_t)n * w;
		}
		rp->ffs = s;	/* the step's service start */
		rp->ffgmax = 0;
		return;
	}
	if (replica__fe(rp) != NULL) {
		s = rp->fe.free_at > t ? rp->fe.free_at : t;
		rp->fe.free_at = s + (int64_t)n * w;
		rp->fe.jobs += n;
		rp->fe.busy_ns += (int64_t)n * w;
	}
	g = s - rp->ffs;
	rpt_add_itl_n(rep, g, n);
	if (g > rp->ffgmax)
		rp->ffgmax = g;
	rp->ffs = s;
}

/*
 * The closing of ff_tokens at step j, the k-th of the batch: the tokens
 * since each request's last counted one (its first step's, or the first
 * token of one that joined the batch at an admission): gen from its run
 * record (ffrun, by ffpos), the telescoped gaps and the largest common
 * one.
 */
static void
ff_tokens_end(replica *rp, uint32_t j, uint32_t k, uint32_t n, int64_t t,
	      int64_t w)
{
	if (k < 2)
		return;
	for (uint32_t i = 0; i < n; i++) {
		struct rq *q = rp->byreq[rp->sreq[i]];
		const struct kvs_running *r = &rp->ffrun[rp->ffpos[i]];
		int64_t cl = rp->ffs + (int64_t)(i + 1) * w;
		uint32_t g = r->generated + (j + 1 - r->start);

		q->itl_sum += cl - q->cl_last;
		if (rp->ffgmax > q->itl_max)
			q->itl_max = rp->ffgmax;
		rp->st.gen_tokens_done += (uint64_t)(g - q->gen) * q->nsamp;
		q->gen = g;
		q->last_tok = t;
		q->cl_last = cl;
	}
}

/*
 * replica__usage_free inside a span, one group (ff_covered): at the start
 * of step j > 0, the step before ended now (usage_t), so its area term is
 * dt = 0 and adds +0.0, which leaves the non-negative sums as they are:
 * only the levels move, and only when the step took blocks.
 */
static inline void
ff_usage_level(replica *rp, uint64_t free)
{
	uint64_t nb = rp->st.group_blocks[0];
	double u = rp->blocks_total ? (double)(rp->blocks_total - free) /
				      (double)rp->blocks_total : 0.0;
	/* (the one group's pool is the replica's: the same quotient) */
	double gu = nb == rp->blocks_total ? u :
		    nb ? (double)(nb - free) / (double)nb : 0.0;

	rp->st.usage_now = u;
	if (u > rp->st.usage_max)
		rp->st.usage_max = u;
	rp->st.group_now[0] = gu;
	if (gu > rp->st.group_max[0])
		rp->st.group_max[0] = gu;
}

/* At its end t, a step's dt of the levels (the tokens free no block). */
static void
ff_usage_area(replica *rp, int64_t t, int64_t dt)
{
	double d = dt > 0 ? (double)dt : 0;

	rp->st.usage_area += rp->st.usage_now * d;
	rp->st.group_area[0] += rp->st.group_now[0] * d;
	rp->st.usage_t = t;
}

/* kvs_decode_bufs' admit: the requests held for the last step, handed
 * to the scheduler as replica_begin hands them (at its chosen time). */
static kv_err
ff_admit(void *arg)
{
	struct ff_plan *x = arg;

	return replica__admit_due(x->rp, x->rp->sched_t, x->why, x->whylen);
}

/* Room for n admissions' entries and one admission more. */
static kv_err
ff_adm_room(replica *rp, uint32_t n)
{
	if (rp->nffadm == rp->capffadm) {
		uint32_t c = rp->capffadm ? 2 * rp->capffadm : 4;
		struct ff_adm *a = realloc(rp->ffadm, c * sizeof(*a));

		if (a == NULL)
			return KV_ENOMEM;
		rp->ffadm = a;
		rp->capffadm = c;
	}
	if (n > rp->capffa || rp->ffasched == NULL) {
		uint32_t c = n > 2 * rp->capffa ? n : 2 * rp->capffa;
		struct kvs_sched *e;
		kvs_req *h;
		struct cat_mixer_seq *q;

		if (c < 4)
			c = 4;
		if ((e = realloc(rp->ffasched, c * sizeof(*e))) == NULL)
			return KV_ENOMEM;
		rp->ffasched = e;
		if ((h = realloc(rp->ffareq, c * sizeof(*h))) == NULL)
			return KV_ENOMEM;
		rp->ffareq = h;
		if ((q = realloc(rp->ffaseq, c * sizeof(*q))) == NULL)
			return KV_ENOMEM;
		rp->ffaseq = q;
		rp->capffa = c;
	}
	return KV_OK;
}

/*
 * and scheduled: the step that admits (x->jcur), while its tables stand
 * (one may end with its first token): its admitted requests' entries,
 * note_sched's (made at rp->seq[n0] on, past the walk's batch, and kept
 * for the walk), and its time, as replica_begin takes it: the batch for
 * the cost model, the requests running (one token each, in running
 * order) and then those admitted, async scheduling's overlap from its
 * chosen time; and the walk's view of the admissions: the blocks they
 * took, their tables' slots (C computed tokens in whole blocks) and their
 * tokens before their output, at most those slots.
 */
static kv_err
ff_scheduled(void *arg)
{
	struct ff_plan *x = arg;
	replica *rp = x->rp;
	const struct kvs_step *st = kvs_current_step(rp->s);
	uint32_t j = x->jcur, m = 0, bs = rp->block_size, na = st->nsched;
	uint64_t ctx = 0;
	struct ff_adm *A;
	struct kvs_step b;
	int64_t dt, cpu;

	if (replica__sched_reserve(rp, x->n0 + na) != KV_OK ||
	    ff_adm_room(rp, x->aoff + na) != KV_OK)
		goto oom;
	if (x->nall + na > rp->capffseq) {
		struct cat_mixer_seq *q = realloc(rp->ffseq, (x->nall + na) *
						  sizeof(*q));

		if (q == NULL)
			goto oom;
		rp->ffseq = q;
		rp->capffseq = x->nall + na;
	}
	replica__sched_batch(rp, st, x->n0);
	A = &rp->ffadm[rp->nffadm++];
	memset(A, 0, sizeof(*A));
	A->j = j;
	A->nadm = na;
	A->off = x->aoff;
	A->taken = x->adm_taken;
	A->wait0 = x->wait0;
	A->tk0 = x->tk0;
	A->tk1 = x->tk1;
	A->sched_t = rp->sched_t;
	A->nend = UINT32_MAX;
	if (na > 0) {	/* (none: the step record's list may be NULL) */
		memcpy(rp->ffasched + A->off, st->sched,
		       na * sizeof(*st->sched));
		memcpy(rp->ffareq + A->off, rp->sreq + x->n0,
		       na * sizeof(kvs_req));
		memcpy(rp->ffaseq + A->off, rp->seq + x->n0,
		       na * sizeof(*rp->ffaseq));
	}
	x->aoff += na;
	for (uint32_t i = 0; i < na; i++) {
		const struct cat_mixer_seq *q = &rp->ffaseq[A->off + i];
		uint64_t c = q->ctx + q->q, cap = (c + bs - 1) / bs * bs;
		uint64_t t = rp->byreq[st->sched[i].req]->prompt;

		/* a chunk of its prompt leaves none of its slots unused
		 * (kvs_running_unused) */
		A->slots += cap;
		A->ntok += t < cap ? t : cap;
	}
	/* the batch: a token of each running request, then the admitted
	 * ones' chunks; its time from the running ones' contexts' sum, or
	 * else from the batch's entries */
	for (uint32_t i = 0; i < x->nall; i++) {
		const struct kvs_running *r = &rp->ffrun[i];

		if (r->ends_at < j)
			continue;
		ctx += r->computed + (j - r->start);
		m++;
	}
	if ((dt = replica__sums_time(rp, m, ctx, rp->ffaseq + A->off, na,
				     &cpu)) < 0) {
		for (uint32_t i = 0, k = 0; i < x->nall; i++) {
			const struct kvs_running *r = &rp->ffrun[i];

			if (r->ends_at < j)
				continue;
			rp->ffseq[k].q = 1;
			rp->ffseq[k++].ctx = r->computed + (j - r->start);
		}
		memcpy(rp->ffseq + m, rp->ffaseq + A->off,
		       na * sizeof(*rp->ffseq));
		memset(&b, 0, sizeof(b));
		b.nsched = m + na;
		dt = replica__batch_time(rp, rp->ffseq, &b, &cpu);
	}
	dt = replica__async_dt(rp, x->t_adm, dt, cpu);
	rp->fft[j] = dt;
	/* its output, where the run goes on past it (ff_more): a token of
	 * each running request, the first of each admitted one */
	rp->fftokn[j] = m + na;
	x->t_last = x->t_adm + dt;
	return KV_OK;
oom:
	snprintf(x->why, x->whylen, "out of memory");
	return KV_ENOMEM;
}

/* and first: an admitted request's first token, as replica__complete
 * samples it. */
static uint32_t
ff_first(void *arg, kvs_req h)
{
	const struct ff_plan *x = arg;
	const struct rq *q = x->rp->byreq[h];

	return q == NULL || q->keyed ? 0 :
	    wl_token(q->out_key, q->gen, x->rp->vocab);
}

/*
 * The tokens of the run's steps [j0, j1), replica__complete's: token j
 * of request i (row i of x->kcap) is its output token number generated +
 * j - start; a keyed request's ids are not kept, so its row is left as it
 * is.
 */
static void
ff_tokens_fill(replica *rp, const struct ff_plan *x, uint32_t j0,
	       uint32_t j1)
{
	for (uint32_t i = 0; x->ids && i < x->nall; i++) {
		const struct kvs_running *r = &rp->ffrun[i];
		const struct rq *q = rp->byreq[r->req];
		uint32_t a = j0 > r->start ? j0 : r->start;
		uint32_t e = r->ends_at < j1 ? r->ends_at + 1 : j1;

		if (q->keyed)
			continue;
		for (uint32_t j = a; j < e; j++)
			rp->fftok[(size_t)i * x->kcap + j] =
			    wl_token(q->out_key, r->generated + (j - r->start),
				     rp->vocab);
	}
}

/* The step that x->adm says admits, the run's last so far (x->jcur). */
static void
ff_admits(replica *rp, struct ff_plan *x, uint32_t kn,
	  struct kvs_decode_bufs *b)
{
	x->wait0 = kvs_queue_len(rp->s, KVS_Q_WAITING) +
		   (rp->npend - rp->phead);
	x->tk0 = rp->tk_adm;
	x->tk1 = rp->tk_n;
	x->jcur = kn - 1;
	b->admit = ff_admit;
}

/*
 * kvs_decode_bufs' more: the run past its admission step, with the
 * requests it admitted that go on running, r[0..nj) (added to ffrun),
 * up to kmax steps more: ff_time's steps from the one after it, as the
 * first ones.  0 when the step is past the horizon (it is the tail), or
 * a request is one the span does not cover.
 */
static uint32_t
ff_more(void *arg, const struct kvs_running *r, uint32_t nj, uint32_t kmax,
	bool last, struct kvs_decode_bufs *b)
{
	struct ff_plan *x = arg;
	replica *rp = x->rp;
	struct ff_adm *A = &rp->ffadm[rp->nffadm - 1];
	uint32_t j0 = A->j + 1, kn, ke;
	size_t nt = (size_t)(x->nall + nj) * x->kcap;
	int64_t t0 = x->t_last;

	(void)last;
	/* the arrivals in its time, taken in before its end is judged */
	if (x->arr != NULL && x->ar != NULL && x->ar->arrival_ns <= t0 &&
	    (x->err = ff_take(rp, x, A->j, t0)) != KV_OK)
		return 0;
	if (x->t_last > (x->until_end < x->until ? x->until_end : x->until) ||
	    nt > 2 * (size_t)FF_MAX_TOKENS || j0 >= x->kcap)
		return 0;
	/* each a new request with its first token, whose notes the walk
	 * takes at the admission */
	for (uint32_t i = 0; i < nj; i++) {
		const struct rq *q = rp->byreq[r[i].req];

		if (q == NULL || q->gen != 0 || q->scheduled ||
		    q->nsamp > 1 || r[i].generated != 1)
			return 0;
		x->ids |= !q->keyed;
	}
	if (ff_room(rp, x->nall + nj, x->kcap) != KV_OK ||
	    replica__sched_reserve(rp, x->nall + nj) != KV_OK) {
		x->err = KV_ENOMEM;
		return 0;
	}
	memcpy(rp->ffrun + x->nall, r, nj * sizeof(*r));
	x->nall += nj;
	x->adm = false;
	ke = j0 + (kmax < x->kcap - j0 ? kmax : x->kcap - j0);
	kn = ff_time(rp, t0, x, rp->ffrun, x->nall, j0, ke, &x->nend,
		     &x->tail, &x->next, &x->t_last);
	if (kn <= j0) {	/* none: the admission ends the run */
		x->nall -= nj;
		x->adm = true;
		return 0;
	}
	A->join = x->nall - nj;
	A->njoin = nj;
	A->nend = A->nadm - nj;
	ff_tokens_fill(rp, x, j0, kn);
	b->tok = rp->fftok;
	b->admit = NULL;
	if (x->adm)
		ff_admits(rp, x, kn, b);
	return kn - j0;
}

/*
 * kvs_decode_plan's planner: the batch of the first step, as note_sched
 * makes it, from the running requests r[] (kept in ffrun); the steps
 * that end by the horizon (ff_time); their tokens.  0 (nothing made) when a
 * request is one the span does not cover.
 */
static uint32_t
ff_plan(void *arg, const struct kvs_running *r, uint32_t n, uint32_t kmax,
	bool last, struct kvs_decode_bufs *b)
{
	struct ff_plan *x = arg;
	replica *rp = x->rp;
	uint32_t kn;

	(void)last;	/* ends_at says which steps end requests */
	for (uint32_t i = 0; i < n; i++) {
		const struct rq *q = rp->byreq[r[i].req];

		/* a request recomputing positions it had (high > C) is
		 * counted step by step */
		if (q == NULL || q->gen == 0 || q->nsamp > 1 ||
		    q->high > r[i].computed || q->gen != r[i].generated)
			return 0;
		x->slots += (uint64_t)r[i].blocks * rp->block_size;
		x->ntok += r[i].tokens;
		x->ids |= !q->keyed;
		rp->sreq[i] = r[i].req;
	}
	if (ff_room(rp, n, x->kcap) != KV_OK) {
		x->err = KV_ENOMEM;
		return 0;
	}
	memcpy(rp->ffrun, r, n * sizeof(*r));
	x->nall = x->n0 = n;
	x->nend = 0;
	if ((kn = ff_time(rp, x->now, x, rp->ffrun, n, 0, kmax, &x->nend,
			  &x->tail, &x->next, &x->t_last)) == 0)
		return 0;
	ff_tokens_fill(rp, x, 0, kn);
	x->free0 = kvc_free_blocks(kvs_kv(rp->s), 0);
	b->tok = rp->fftok;
	b->taken = rp->fftaken;
	b->freed = rp->fffreed;
	b->stride = x->kcap;
	if (x->adm) {
		ff_admits(rp, x, kn, b);
		b->scheduled = ff_scheduled;
		b->first = ff_first;
		b->arg = x;
		b->adm_taken = &x->adm_taken;
		b->more = ff_more;
	}
	return kn;
}

/*
 * The rows due while step j of a span is in flight, [t, t_end): the step's
 * blocks taken (used of the total), n running, the unused slots after its
 * allocations (note_step's), and the output of the steps before it: gen
 * tokens, where replica_end has not counted them yet (ff_tokens_end).
 */
static void
ff_rows(replica *rp, const struct replica_rows *rows, int64_t t,
	int64_t t_end, uint32_t n, uint64_t used, uint64_t frag,
	uint64_t gen)
{
	uint64_t keep;

	if (*rows->next >= t_end || *rows->next > rows->limit ||
	    *rows->next < t)
		return;
	keep = rp->st.gen_tokens_done;
	rp->ffrow = true;
	rp->ffrow_running = n;
	rp->ffrow_used = used;
	rp->ffrow_frag = frag;
	rp->st.gen_tokens_done = gen;
	while (*rows->next < t_end && *rows->next <= rows->limit)
		rows->row(rows->arg);
	rp->st.gen_tokens_done = keep;
	rp->ffrow = false;
}

/*
 * The end of w's step j, which ends requests (or is the span's last): the
 * tokens since the batch's first step closed (ff_tokens_end), the
 * requests it ends finished in running order, as the scheduler listed
 * them (fin, from w->f on), and the batch left (sreq, and ffpos: where
 * each is in ffrun) without them, their slots and tokens taken from the
 * walk's.
 */
static kv_err
ff_step_ends(replica *rp, struct ff_walk *w, uint32_t j,
	     const struct kvs_step *fin, rpt *rep, char *why, size_t whylen)
{
	uint32_t bs = rp->block_size, n = w->n, m = 0;
	kv_err e;

	ff_tokens_end(rp, j, j - w->seg + 1, n, w->t, w->w);
	for (uint32_t i = 0; i < n; i++) {
		const struct kvs_running *r = &rp->ffrun[rp->ffpos[i]];
		uint64_t b;

		if (r->ends_at != j) {
			rp->sreq[m] = rp->sreq[i];
			rp->ffpos[m++] = rp->ffpos[i];
			continue;
		}
		if (w->f >= fin->nfinish || fin->finish[w->f] != r->req) {
			snprintf(why, whylen, "replica %u: fast-forward: "
				 "request %d's end in step %u is not the "
				 "scheduler's", rp->index, (int)r->req, j);
			return KV_ESTATE;
		}
		w->f++;
		/* its table: C + j + 1 slots (ff_blocks) */
		b = ((uint64_t)r->computed + (j - r->start) + bs) / bs;
		if (b < r->blocks)
			b = r->blocks;
		w->slots -= b * bs;
		w->ntok -= (uint64_t)r->tokens + (j - r->start) + 1u;
		if ((e = replica__finish(rp, r->req, w->t, rep, why, whylen)) !=
		    KV_OK)
			return e;
	}
	w->n = m;
	return KV_OK;
}

/*
 * An admission step's first tokens, in the scheduler's order: the last
 * step's as replica_end notes them (the requests' counts); one each at
 * a step the run goes past (A->nend set: each was admitted whole).
 */
static kv_err
ff_adm_tokens(replica *rp, const struct ff_adm *A, int64_t t, rpt *rep,
	      char *why, size_t whylen)
{
	if (A->nend == UINT32_MAX)
		return replica__note_tokens(rp, rp->ffareq + A->off, A->nadm,
					    t, rep, why, whylen);
	for (uint32_t i = 0; i < A->nadm; i++) {
		struct rq *q = rp->byreq[rp->ffareq[A->off + i]];

		if (q != NULL && q->gen == 0)
			replica__gain(rp, q, 1, t, rep);
	}
	return KV_OK;
}

/*
 * Admission step A's requests that go on running join the walk's batch
 * (after the running ones, as the scheduler runs them), with their
 * tables' slots and their tokens, and their high (note_sched's, after
 * the steps each makes); the output counts their first tokens.
 */
static void
ff_adm_join(replica *rp, struct ff_walk *w, const struct ff_adm *A)
{
	for (uint32_t p = A->join; p < A->join + A->njoin; p++) {
		const struct kvs_running *r = &rp->ffrun[p];
		uint32_t k = r->ends_at < w->kn ? r->ends_at + 1 : w->kn;

		rp->sreq[w->n] = r->req;
		rp->ffpos[w->n++] = p;
		rp->byreq[r->req]->high = r->computed + (k - r->start);
	}
	w->ntok += A->njoin;
	w->gen += A->nadm;
}

/*
 * The ends of admission step A's requests with their first token, from
 * st's list (w->f on): the rest of the run's at its last step, else
 * A->nend of them; then, where the run goes on, the others join the
 * batch (ff_adm_join).
 */
static kv_err
ff_adm_ends(replica *rp, struct ff_walk *w, const struct ff_adm *A,
	    const struct kvs_step *st, rpt *rep, char *why, size_t whylen)
{
	uint32_t bs = rp->block_size, ended = 0;
	kv_err e;

	while (ended < A->nend && w->f < st->nfinish) {
		kvs_req h = st->finish[w->f++];
		uint32_t i = 0;

		while (i < A->nadm && rp->ffareq[A->off + i] != h)
			i++;
		if (i == A->nadm) {
			snprintf(why, whylen, "replica %u: fast-forward: "
				 "request %d's end in step %u is not an "
				 "admitted one's", rp->index, (int)h, A->j);
			return KV_ESTATE;
		}
		if (A->nend != UINT32_MAX) {	/* out of the walk's sums */
			const struct cat_mixer_seq *q = &rp->ffaseq[A->off + i];
			uint64_t c = q->ctx + q->q, cap = (c + bs - 1) / bs * bs;
			uint64_t t = rp->byreq[h]->prompt;

			w->slots -= cap;
			w->ntok -= t < cap ? t : cap;
		}
		if ((e = replica__finish(rp, h, w->t, rep, why, whylen)) !=
		    KV_OK)
			return e;
		ended++;
	}
	if (A->nend == UINT32_MAX)
		return KV_OK;
	if (ended != A->nend) {
		snprintf(why, whylen, "replica %u: fast-forward: %u of the "
			 "requests admitted in step %u ended with their first "
			 "token, the plan %u", rp->index, ended, A->j,
			 A->nend);
		return KV_ESTATE;
	}
	ff_adm_join(rp, w, A);
	return KV_OK;
}

/* The walk's next admission step (kn: none). */
static void
ff_adm_next(const replica *rp, struct ff_walk *w)
{
	w->a++;
	w->jadm = w->a < rp->nffadm ? rp->ffadm[w->a].j : w->kn;
}

/* At the begin of admission step w->jadm: its admissions' tables in the
 * walk's batch and sums; the blocks its waiting phase took. */
static uint32_t
ff_adm_tables(const replica *rp, struct ff_walk *w)
{
	const struct ff_adm *A = &rp->ffadm[w->a];

	w->slots += A->slots;
	w->ntok += A->ntok;
	w->n += A->nadm;
	return A->taken;
}

/* and note_sched's notes of its admitted requests, at its chosen time. */
static void
ff_adm_notes(replica *rp, const struct ff_walk *w)
{
	const struct ff_adm *A = &rp->ffadm[w->a];
	int64_t keep = rp->sched_t;

	rp->sched_t = A->sched_t;
	replica__sched_notes(rp, rp->ffasched + A->off, rp->ffaseq + A->off,
			     A->nadm);
	rp->sched_t = keep;
	if (w->n > rp->st.max_batch)
		rp->st.max_batch = w->n;
}

/*
 * The end of admission step w->jadm when it ended no request and every
 * request it admitted goes on: the batch goes on with them at its end,
 * each in its place in the API server's queue, so the gaps stay common;
 * the largest so far is the running ones' alone.  Then the usage after
 * it (free: the blocks free).
 */
static void
ff_adm_keep(replica *rp, struct ff_walk *w, uint64_t free)
{
	for (uint32_t i = 0; i < w->n; i++) {
		struct rq *q = rp->byreq[rp->sreq[i]];

		if (rp->ffgmax > q->itl_max)
			q->itl_max = rp->ffgmax;
	}
	rp->ffgmax = 0;
	ff_adm_join(rp, w, &rp->ffadm[w->a]);
	free += rp->fffreed[w->jadm];
	w->back += rp->fffreed[w->jadm];
	replica__usage_free(rp, w->t, &free);
	ff_adm_next(rp, w);
}

/* The run's ends, st's list, all finished: f of them were. */
static kv_err
ff_ends_all(const replica *rp, const struct kvs_step *st, uint32_t f,
	    char *why, size_t whylen)
{
	if (f == st->nfinish)
		return KV_OK;
	snprintf(why, whylen, "replica %u: fast-forward: the scheduler ended "
		 "%u requests, the plan %u", rp->index, st->nfinish, f);
	return KV_ESTATE;
}

/*
 * ff_walk's usual steps, from w->j on: before the tail (jt), past a
 * batch's first step (seg), before the last and before the next that ends
 * requests, none with a row in its time.  Each step's notes as ff_walk
 * makes them (note_step's, ff_usage_level's, its tokens' from the second
 * of a batch on, ff_usage_area's), in the same order and the same
 * floating-point sums, kept in locals, which the histogram's calls cannot
 * reach.  Stops before a step that ff_walk must look at.
 */
static void
ff_walk_run(replica *rp, struct ff_walk *w, const struct replica_rows *rows,
	    rpt *rep)
{
	const int64_t *fft = rp->fft;
	const uint32_t *taken = rp->fftaken;
	uint32_t j = w->j, n = w->n, bs = rp->block_size;
	uint32_t jend = w->jt < w->kn - 1 ? w->jt : w->kn - 1;
	uint64_t used = w->used, slots = w->slots, ntok = w->ntok;
	uint64_t frag_steps = 0, steps;
	int64_t t = w->t, ffs = rp->ffs, gmax = rp->ffgmax;
	int64_t nw = (int64_t)n * w->w;
	double frag = rp->st.frag_sum, area = rp->st.usage_area;
	double garea = rp->st.group_area[0];
	bool fe = replica__fe(rp) != NULL;
	uint64_t *hist = rpt_itl_hist(rep);
	/* the first time a step must not pass: the row due in the run's
	 * time (one that is past, or beyond the rows' limit, never stops
	 * it; and a step that ends after the row stops the run, so the
	 * row stays ahead of each step's start), and the next request
	 * taken in whose work the API server has to do (before the tokens
	 * of a step that ends after it arrives) */
	int64_t stop = rows != NULL && *rows->next <= rows->limit &&
		       *rows->next >= t ? *rows->next : INT64_MAX;

	if (rp->tk_served < rp->tk_n &&
	    rp->tk[rp->tk_served - rp->tkbase].t < stop)
		stop = rp->tk[rp->tk_served - rp->tkbase].t;
	if (w->e < w->nend && rp->ffend[w->e] < jend)
		jend = rp->ffend[w->e];
	if (w->jadm < jend)
		jend = w->jadm;
	if (w->begun || j <= w->seg)
		return;
	for (; j < jend; j++) {
		int64_t dt = fft[j], s = t + dt, g;

		if (stop < s)
			break;
		used += taken[j];
		slots += (uint64_t)taken[j] * bs;
		if (slots > 0) {
			frag += (double)(slots - ntok) / (double)slots;
			frag_steps++;
		}
		if (taken[j] != 0)
			ff_usage_level(rp, w->free0 - used + w->back);
		t = s;
		if (fe) {
			if (rp->fe.free_at > t)
				s = rp->fe.free_at;
			rp->fe.free_at = s + nw;
			rp->fe.jobs += n;
			rp->fe.busy_ns += nw;
		}
		g = s - ffs;
		hist[rpt_itl_bucket(g)] += n;	/* rpt_add_itl_n */
		if (g > gmax)
			gmax = g;
		ffs = s;
		ntok += n;
		{
			double d = dt > 0 ? (double)dt : 0;

			area += rp->st.usage_now * d;
			garea += rp->st.group_now[0] * d;
		}
	}
	if (j == w->j)
		return;
	/* the counts each step added to */
	steps = j - w->j;
	rpt_itl_counted(rep, steps * n);
	rp->st.busy_ns += t - w->t;
	rp->st.steps += steps;
	w->gen += steps * n;
	w->j = j;
	w->used = used;
	w->slots = slots;
	w->ntok = ntok;
	w->t = t;
	w->ended = false;
	rp->ffs = ffs;
	rp->ffgmax = gmax;
	rp->st.frag_sum = frag;
	rp->st.frag_steps += frag_steps;
	rp->st.usage_area = area;
	rp->st.group_area[0] = garea;
	rp->st.usage_t = t;
}

/*
 * The span's notes from step w->j on, as replica_begin and replica_end
 * take them, for the steps that end by until: each step's begin notes
 * (the time busy, the fragmentation term, the step count, the usage
 * levels, the rows in its time), then at its end its tokens, and at an
 * end of requests or the last step its finishes and the usage after
 * them.  The tail is begun and left in flight (w->on), its begin notes
 * taken and the rows' view of it set; a step after it is begun only
 * when it ends by until (nothing but its end sees it: no row falls in
 * its time).  When every step has ended, the run's finishes are checked
 * against the scheduler's list.
 */
static kv_err
ff_walk(replica *rp, struct ff_walk *w, int64_t until,
	const struct replica_rows *rows, rpt *rep, char *why, size_t whylen)
{
	const struct kvs_step *st = kvs_current_step(rp->s);
	kv_err e;

	while (w->j < w->kn) {
		uint32_t j;
		int64_t dt;
		uint64_t free;

		ff_walk_run(rp, w, rows, rep);
		if ((j = w->j) >= w->kn)
			break;
		dt = rp->fft[j];
		if (!w->begun) {
			uint32_t tk = rp->fftaken[j];

			if (j > w->jt && dt > until - w->t)
				return KV_OK;
			w->slots += (uint64_t)tk * rp->block_size;
			if (j == w->jadm)	/* its admissions' tables */
				tk += ff_adm_tables(rp, w);
			w->used += tk;
			free = w->free0 - w->used + w->back;
			/* note_step: fragmentation after the step's
			 * allocations, before its tokens (T = C + 1 <= the
			 * slots) */
			rp->st.busy_ns += dt;
			if (w->slots > 0) {
				rp->st.frag_sum += (double)(w->slots -
							    w->ntok) /
						   (double)w->slots;
				rp->st.frag_steps++;
			}
			rp->st.steps++;
			if (j == 0)
				replica__usage_free(rp, w->t, &free);
			else if (tk != 0)
				ff_usage_level(rp, free);
			/* else: the levels of the step before */
			if (j == w->jadm)	/* note_sched's, theirs */
				ff_adm_notes(rp, w);
			if (rows != NULL) {
				/* before an admission, the requests it hands
				 * over still wait in the replica */
				uint32_t a = w->a + (j == w->jadm);

				rp->ffrow_waitset = a < rp->nffadm;
				if (rp->ffrow_waitset) {
					rp->ffrow_wait = rp->ffadm[a].wait0;
					rp->ffrow_tk0 = rp->ffadm[a].tk0;
					rp->ffrow_tk1 = rp->ffadm[a].tk1;
				}
				ff_rows(rp, rows, w->t, w->t + dt, w->n,
					rp->blocks_total - free,
					w->slots - w->ntok, w->gen);
				rp->ffrow_waitset = false;
			}
			if (j == w->jt) {
				/* the tail: in flight until t + dt, where
				 * replica_end (or replica_ff_catch) makes its
				 * end; replica_state shows it as it runs, with
				 * the output of the steps before, counted now
				 * (ff_tokens_end counts it at the batch's
				 * end) */
				w->on = w->begun = true;
				w->ahead = w->gen - rp->st.gen_tokens_done;
				rp->st.gen_tokens_done = w->gen;
				rp->ffrow = true;
				rp->ffrow_running = w->n;
				rp->ffrow_used = rp->blocks_total - free;
				rp->ffrow_frag = w->slots - w->ntok;
				rp->nsched = w->n;
				rp->busy = true;
				return KV_OK;
			}
		} else {	/* the tail's end */
			if (dt > until - w->t)
				return KV_OK;
			w->begun = false;
			rp->ffrow = false;
			rp->st.gen_tokens_done -= w->ahead;
			free = w->free0 - w->used + w->back;
		}
		/* the work of the requests taken in that arrive before its
		 * end (send's, had they come as events) */
		while (rp->tk_served < rp->tk_n &&
		       rp->tk[rp->tk_served - rp->tkbase].t < w->t + dt)
			if ((e = replica__taken_serve(rp, why, whylen)) !=
			    KV_OK)
				return e;
		/* replica_end: a token each, in running order */
		w->t += dt;
		if (j == w->jadm)	/* the running requests' */
			w->n -= rp->ffadm[w->a].nadm;
		ff_tokens(rp, j - w->seg, w->n, w->t, w->w, rep);
		w->ntok += w->n;
		w->gen += w->n;
		w->ended = w->e < w->nend && rp->ffend[w->e] == j;
		w->j = j + 1;
		if (!w->ended && j + 1 < w->kn && j != w->jadm) {
			ff_usage_area(rp, w->t, dt);
			continue;
		}
		/* then the admitted requests' first tokens, in the
		 * scheduler's order after them */
		if (j == w->jadm &&
		    (e = ff_adm_tokens(rp, &rp->ffadm[w->a], w->t, rep, why,
				       whylen)) != KV_OK)
			return e;
		if (j == w->jadm && !w->ended && rp->ffadm[w->a].nend == 0) {
			ff_adm_keep(rp, w, free);
			continue;
		}
		/* the step's finishes (or the span's end), then the usage
		 * after them; the batch goes on without them */
		if ((e = ff_step_ends(rp, w, j, st, rep, why, whylen)) !=
		    KV_OK)
			return e;
		/* and the admitted requests' that ended with their first
		 * token (the scheduler lists them after), then those that
		 * go on join the batch */
		if (j == w->jadm &&
		    (e = ff_adm_ends(rp, w, &rp->ffadm[w->a], st, rep, why,
				     whylen)) != KV_OK)
			return e;
		w->back += rp->fffreed[j];
		free += rp->fffreed[j];
		replica__usage_free(rp, w->t, &free);
		w->seg = j + 1;
		w->e += w->ended;
		if (j == w->jadm)
			ff_adm_next(rp, w);
	}
	w->on = false;
	if ((e = ff_ends_all(rp, st, w->f, why, whylen)) != KV_OK)
		return e;
	rp->nsched = w->n;
	return KV_OK;
}

/* A request held for the step that would start now joins it (ff_time's
 * first test, made before the search): after a tail's steps, the usual
 * no. */
static bool
ff_held_due(const replica *rp, int64_t now)
{
	return rp->phead < rp->npend &&
	       rp->pend[rp->phead].at <= (rp->async && rp->piped &&
					  rp->pipe_t == now ? rp->next_s :
							      now);
}

bool
replica_ff_ready(const replica *rp, int64_t now)
{
	/* async scheduling: a span may end with the step that admits the
	 * request held for it (replica_ff) */
	return ff_covered(rp) && (rp->async || !ff_held_due(rp, now)) &&
	       kvs_decode_ready(rp->s);
}

kv_err
replica_ff(replica *rp, int64_t now, struct replica_span *sp,
	   const struct replica_rows *rows, rpt *rep, char *why,
	   size_t whylen)
{
	struct ff_plan x;
	struct ff_walk *w;
	uint32_t n, kmax, kn;
	kv_err e;

	sp->t_end = now;
	sp->tail_end = INT64_MIN;
	sp->nsteps = sp->ext = 0;
	sp->admitted = 0;
	sp->ended = sp->adm_last = false;
	if (!ff_covered(rp) || sp->until <= now)
		return KV_OK;
	n = kvs_queue_len(rp->s, KVS_Q_RUNNING);
	if (n == 0 || n > rp->capsched)
		return KV_OK;
	kmax = FF_MAX_TOKENS / n < FF_MAX_STEPS ? FF_MAX_TOKENS / n :
						   FF_MAX_STEPS;
	/* steps that end requests only when they can end by until_end; a
	 * tail only where nothing but an arrival held for its step can come
	 * in its time (async scheduling holds every arrival), and no client
	 * leaves */
	memset(&x, 0, sizeof(x));
	x.rp = rp;
	x.now = now;
	x.until = sp->until;
	x.until_end = sp->until_end;
	x.tail_until = rp->async && rp->client_tmo == 0 ? sp->tail_until :
							  INT64_MIN;
	x.ext_sched = sp->ext_sched;
	x.ext_until = sp->ext_until;
	x.kcap = kmax;
	/* a step that admits requests may be made, its time taken once
	 * the scheduler has chosen it, and the run go on past it: where
	 * nothing but arrivals and rows can come before its end (it is the
	 * tail, and the run's last, when it ends past the horizon) */
	x.adm_ok = x.tail_until == INT64_MAX;
	x.why = why;
	x.whylen = whylen;
	/* the arrivals it may take in: the first not taken yet on; the API
	 * server as the walk left it, the work of those taken in still to
	 * come */
	if (sp->arr != NULL && replica__fe(rp) != NULL) {
		bool end;

		x.sp = sp;
		x.arr = sp->arr;
		x.ak = (uint32_t)replica_taken_pending(rp);
		x.ar = x.arr->peek(x.arr->arg, x.ak, &end);
		x.fe_t = rp->fe.free_at;
		x.fe_e = now;
		x.fe_k = rp->tk_served;
		x.w = cost_frontend_out_ns(rp->cm);
		if (x.w < 0)
			x.w = 0;
	}
	/* (replica_ff_ready's test too: the caller's later calls, after a
	 * span that ended requests, come without it) */
	if (!x.adm_ok && ff_held_due(rp, now))
		return KV_OK;
	why[0] = '\0';
	rp->nffadm = 0;
	if ((e = kvs_decode_plan(rp->s, kmax, sp->until_end > now ?
				 KVS_ENDS_ANY : KVS_ENDS_NONE, ff_plan, &x,
				 &kn)) != KV_OK) {
		if (why[0] == '\0')	/* not the admission's own */
			snprintf(why, whylen, "replica %u: fast-forward: %s",
				 rp->index, kvs_errmsg(rp->s));
		return e;
	}
	if (x.err != KV_OK) {
		snprintf(why, whylen, "out of memory");
		return x.err;
	}
	if (kn == 0)
		return KV_OK;
	/* note_sched's high after the steps each makes: every position
	 * computed (C + its steps; C <= high, so it only grows); those
	 * admitted, when they join the walk's batch */
	for (uint32_t i = 0; i < n; i++) {
		const struct kvs_running *r = &rp->ffrun[i];
		uint32_t k = r->ends_at < kn ? r->ends_at + 1 : kn;

		rp->byreq[r->req]->high = r->computed + k;
	}
	/* each step's notes, as replica_begin and replica_end take them;
	 * w: a token's time in the API server (cost_fifo_serve's, >= 0) */
	w = &rp->ffw;
	memset(w, 0, sizeof(*w));
	w->kn = kn;
	w->jt = x.tail ? kn - 1 - x.next : kn;
	w->jadm = rp->nffadm > 0 ? rp->ffadm[0].j : kn;
	sp->admitted = rp->nffadm;
	sp->adm_last = x.adm;
	/* a last step that admits, past the horizon (or past the second,
	 * as it may end requests): in flight, the tail */
	if (x.adm && x.t_last > (x.until_end < x.until ? x.until_end :
				 x.until))
		w->jt = kn - 1;
	w->n = n;
	w->nend = x.nend;
	w->slots = x.slots;
	w->ntok = x.ntok;
	w->free0 = x.free0;
	/* the output tokens the steps before have added (ff_tokens,
	 * ff_tokens_end): a token a request a step */
	w->gen = rp->st.gen_tokens_done;
	w->t = now;
	w->w = replica__fe(rp) != NULL ? cost_frontend_out_ns(rp->cm) : 0;
	if (w->w < 0)
		w->w = 0;
	w->t_end = x.t_last;
	if (n > rp->st.max_batch)
		rp->st.max_batch = n;
	for (uint32_t i = 0; i < n; i++)
		rp->ffpos[i] = i;
	if ((e = ff_walk(rp, w, INT64_MAX, rows, rep, why, whylen)) != KV_OK)
		return e;
	sp->t_end = w->t;
	if (w->on) {	/* the tail, and the steps after it */
		sp->tail_end = w->t_end;
		sp->nsteps = w->jt;
		sp->ext = x.next;
		return KV_OK;
	}
	sp->nsteps = kn;
	/* after an admission the next span starts from the new batch */
	sp->ended = w->ended || x.adm;
	return KV_OK;
}

/*
 * replica_end of a span's tail at now, the end of its last step: the
 * steps' tokens, their ends (the scheduler made them with the span), the
 * usage after them.
 */
kv_err
replica__ff_end(replica *rp, int64_t now, rpt *rep, char *why,
		size_t whylen)
{
	struct ff_walk *w = &rp->ffw;
	kv_err e;

	if (now != w->t_end) {
		snprintf(why, whylen, "replica %u: fast-forward: a step made "
			 "to end at %" PRId64 " ns ends at %" PRId64 " ns",
			 rp->index, w->t_end, now);
		return KV_ESTATE;
	}
	if ((e = ff_walk(rp, w, now, NULL, rep, why, whylen)) != KV_OK)
		return e;
	if (w->on) {
		snprintf(why, whylen, "replica %u: fast-forward: step %u of a "
			 "tail is left at its end, %" PRId64 " ns", rp->index,
			 w->j, now);
		return KV_ESTATE;
	}
	return KV_OK;
}

kv_err
replica_ff_catch(replica *rp, int64_t now, rpt *rep, char *why,
		 size_t whylen)
{
	uint32_t j = rp->ffw.j;
	kv_err e;

	if (!rp->ffw.on)
		return KV_OK;
	e = ff_walk(rp, &rp->ffw, now, NULL, rep, why, whylen);
	rp->ffcaught += rp->ffw.j - j;
	return e;
}

uint64_t
replica_ff_caught(const replica *rp)
{
	return rp->ffcaught;
}
