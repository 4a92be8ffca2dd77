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
};

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
 * memo's time, replica__async_dt), with the pipeline's state in locals: the
 * stores to fft cannot alias them.  Stops before a step that ff_time's
 * loop must look at; returns it.  *tp: the time, moved to its start.
 */
static uint32_t
ff_time_run(replica *rp, const struct cost_decode_memo *m, int64_t *tp,
	    uint32_t j0, uint32_t jend, uint32_t n, uint64_t ctx,
	    int64_t until)
{
	const struct cost_decode_memo lm = *m;
	const struct cost_model *cm = rp->cm;
	int64_t t = *tp, sched_t = rp->sched_t, next_s = rp->next_s;
	int64_t pipe_t = rp->pipe_t, *fft = rp->fft;
	int64_t held = rp->phead < rp->npend ? rp->pend[rp->phead].at :
					       INT64_MAX;
	bool piped = rp->piped;
	uint32_t j;

	for (j = j0; j < jend; j++) {
		int64_t s = piped && pipe_t == t ? next_s : t;
		int64_t dt, cpu = 0, start;

		if (held <= s)
			break;
		dt = cost_decode_memo_quick(cm, &lm, n, ctx + (uint64_t)j * n);
		dt = replica__step_tail(dt, &lm.bd, &cpu);
		start = s + cpu > t ? s + cpu : t;
		if (start + (dt - cpu) - t > until - t)
			break;
		sched_t = s;
		piped = true;
		next_s = start;
		pipe_t = start + (dt - cpu);
		fft[j] = pipe_t - t;
		t = pipe_t;
	}
	rp->sched_t = sched_t;
	rp->piped = piped;
	rp->next_s = next_s;
	rp->pipe_t = pipe_t;
	*tp = t;
	return j;
}

/*
 * The steps from now that end by until, at most kmax, a step that ends
 * requests by until_end: their durations as replica_begin returns them,
 * in fft[]; the async pipeline's state left as after the last of them.
 * r[0..n) is the first step's batch (rp->seq holds it); each step adds a
 * token of context to every entry, and a request is in the steps up to
 * the one that ends it (ends_at).  *nend: the steps made that end
 * requests, in ffend[].  The first step past the horizon is made too,
 * as the tail (*tail), when it ends by tail_until; after a tail that
 * ends no request, *next more steps, each chosen before ext_sched, that
 * end no request and end by ext_until.  *t_end: the last step's end.
 */
static uint32_t
ff_time(replica *rp, int64_t now, struct ff_plan *x,
	const struct kvs_running *r, uint32_t n, uint32_t kmax,
	uint32_t *nend, bool *tail, uint32_t *next, int64_t *t_end)
{
	struct kvs_step st;
	int64_t t = now, cpu, until = x->until;
	uint64_t ctx = 0;
	uint32_t j, n0 = n, nxt = UINT32_MAX;	/* the next step that ends */
	bool sum, fast;

	memset(&st, 0, sizeof(st));
	st.nsched = n;
	*nend = 0;
	*tail = false;
	*next = 0;
	for (uint32_t i = 0; i < n; i++) {
		ctx += r[i].computed;
		if (r[i].ends_at < nxt)
			nxt = r[i].ends_at;
	}
	/* the time from the contexts' sum when the cost model allows */
	sum = replica__decode_time(rp, &rp->ffmemo[n % FF_MEMOS], n, ctx,
				   &cpu) >= 0;
	fast = sum && rp->async && rp->cm != NULL && rp->step_ns <= 0 &&
	       !rp->fork && rp->spec_cost == NULL;
	for (j = 0; j < kmax; j++) {
		bool piped, fresh = false, held;
		int64_t pipe_t, next_s, sched_t, dt;
		const struct cost_decode_memo *m = &rp->ffmemo[n % FF_MEMOS];

		/* the usual steps, in their own loop (the memo made by the
		 * step before, or by the search above) */
		if (fast && j < nxt && !*tail && m->cm == rp->cm &&
		    m->n == n && m->one &&
		    ctx + (uint64_t)kmax * n < (1ull << 61)) {
			j = ff_time_run(rp, m, &t, j, nxt < kmax ? nxt : kmax,
					n, ctx, until);
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
			uint32_t was = nxt, m = 0;

			nxt = UINT32_MAX;
			for (uint32_t i = 0; i < n0; i++) {
				if (r[i].ends_at == was) {
					ctx -= r[i].computed;
					n--;
				} else if (r[i].ends_at > was) {
					if (r[i].ends_at < nxt)
						nxt = r[i].ends_at;
					rp->seq[m].q = 1;
					rp->seq[m++].ctx = r[i].computed + j;
				}
			}
			st.nsched = n;
			fresh = true;
		}
		if (sum) {
			dt = ff_decode_time(rp, &rp->ffmemo[n % FF_MEMOS], n,
					    ctx + (uint64_t)j * n, &cpu);
		} else {
			if (j > 0 && !fresh)
				for (uint32_t i = 0; i < n; i++)
					rp->seq[i].ctx++;
			dt = replica__step_time(rp, &st, &cpu);
		}
		if (rp->async)
			dt = replica__async_dt(rp, t, dt, cpu);
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
		for (uint32_t i = 0; i < n; i++) {
			struct rq *q = rp->byreq[rp->sreq[i]];
			int64_t cl = s + (int64_t)(i + 1) * w;

			g = cl - q->cl_last;
			q->itl_sum += g;
			if (g > q->itl_max)
				q->itl_max = g;
			rpt_add_itl(rep, g);
			rp->st.gen_tokens_done += q->nsamp;
			q->gen++;
			q->last_tok = t;
			q->cl_last = cl;
		}
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

/* The closing of ff_tokens: steps 1..k-1's tokens of each request. */
static void
ff_tokens_end(replica *rp, uint32_t k, uint32_t n, int64_t t, int64_t w)
{
	if (k < 2)
		return;
	for (uint32_t i = 0; i < n; i++) {
		struct rq *q = rp->byreq[rp->sreq[i]];
		int64_t cl = rp->ffs + (int64_t)(i + 1) * w;

		q->itl_sum += cl - q->cl_last;
		if (rp->ffgmax > q->itl_max)
			q->itl_max = rp->ffgmax;
		rp->st.gen_tokens_done += (uint64_t)(k - 1) * q->nsamp;
		q->gen += k - 1;
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
static void
ff_usage_level(replica *rp, uint64_t free)
{
	uint64_t nb = rp->st.group_blocks[0];
	double u = rp->blocks_total ? (double)(rp->blocks_total - free) /
				      (double)rp->blocks_total : 0.0;
	double gu = nb ? (double)(nb - free) / (double)nb : 0.0;

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

/* and scheduled: the admitted requests' batch entries, note_sched's,
 * while their tables stand (one may end with its first token), kept from
 * rp->seq[n] on (n: the run's running requests), past the walk's batch. */
static kv_err
ff_scheduled(void *arg)
{
	struct ff_plan *x = arg;
	const struct kvs_step *st = kvs_current_step(x->rp->s);

	if (replica__sched_reserve(x->rp, x->n0 + st->nsched) != KV_OK) {
		snprintf(x->why, x->whylen, "out of memory");
		return KV_ENOMEM;
	}
	replica__sched_batch(x->rp, st, x->n0);
	return KV_OK;
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
		rp->sreq[i] = r[i].req;
		rp->seq[i].q = 1;
		rp->seq[i].ctx = r[i].computed;
	}
	if (ff_room(rp, n, kmax) != KV_OK) {
		x->err = KV_ENOMEM;
		return 0;
	}
	memcpy(rp->ffrun, r, n * sizeof(*r));
	if ((kn = ff_time(rp, x->now, x, r, n, kmax, &x->nend, &x->tail,
			  &x->next, &x->t_last)) == 0)
		return 0;
	/* note_sched's high after the steps each makes: every position
	 * computed (C + its steps; C <= high, so it only grows); the
	 * scheduler's steps: token j of request i is its output token
	 * number gen + j (replica__complete's); a keyed request's ids are
	 * not kept, so its row is left as it is */
	for (uint32_t i = 0; i < n; i++) {
		struct rq *q = rp->byreq[r[i].req];
		uint32_t k = r[i].ends_at < kn ? r[i].ends_at + 1 : kn;

		q->high = r[i].computed + k;
		if (q->keyed)
			continue;
		for (uint32_t j = 0; j < k; j++)
			rp->fftok[(size_t)i * kn + j] =
			    wl_token(q->out_key, q->gen + j, rp->vocab);
	}
	x->free0 = kvc_free_blocks(kvs_kv(rp->s), 0);
	b->tok = rp->fftok;
	b->taken = rp->fftaken;
	b->freed = rp->fffreed;
	if (x->adm) {
		x->wait0 = kvs_queue_len(rp->s, KVS_Q_WAITING) +
			   (rp->npend - rp->phead);
		x->n0 = n;
		b->admit = ff_admit;
		b->scheduled = ff_scheduled;
		b->first = ff_first;
		b->arg = x;
		b->adm_taken = &x->adm_taken;
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

	ff_tokens_end(rp, j - w->seg + 1, n, w->t, w->w);
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
		b = ((uint64_t)r->computed + j + bs) / bs;
		if (b < r->blocks)
			b = r->blocks;
		w->slots -= b * bs;
		w->ntok -= (uint64_t)r->tokens + j + 1u;
		if ((e = replica__finish(rp, r->req, w->t, rep, why, whylen)) !=
		    KV_OK)
			return e;
	}
	w->n = m;
	return KV_OK;
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
	uint64_t gen = w->gen, steps = 0, frag_steps = 0;
	int64_t t = w->t, busy = 0, ffs = rp->ffs, gmax = rp->ffgmax;
	int64_t nw = (int64_t)n * w->w;
	double frag = rp->st.frag_sum, area = rp->st.usage_area;
	double garea = rp->st.group_area[0];
	bool fe = replica__fe(rp) != NULL;

	if (w->e < w->nend && rp->ffend[w->e] < jend)
		jend = rp->ffend[w->e];
	if (w->begun || j <= w->seg)
		return;
	for (; j < jend; j++) {
		int64_t dt = fft[j], s = t + dt, g;

		if (rows != NULL && *rows->next < s &&
		    *rows->next <= rows->limit && *rows->next >= t)
			break;
		used += taken[j];
		slots += (uint64_t)taken[j] * bs;
		busy += dt;
		if (slots > 0) {
			frag += (double)(slots - ntok) / (double)slots;
			frag_steps++;
		}
		steps++;
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
		rpt_add_itl_n(rep, g, n);
		if (g > gmax)
			gmax = g;
		ffs = s;
		ntok += n;
		gen += n;
		{
			double d = dt > 0 ? (double)dt : 0;

			area += rp->st.usage_now * d;
			garea += rp->st.group_now[0] * d;
		}
	}
	if (j == w->j)
		return;
	w->j = j;
	w->used = used;
	w->slots = slots;
	w->ntok = ntok;
	w->gen = gen;
	w->t = t;
	w->ended = false;
	rp->ffs = ffs;
	rp->ffgmax = gmax;
	rp->st.busy_ns += busy;
	rp->st.frag_sum = frag;
	rp->st.frag_steps += frag_steps;
	rp->st.steps += steps;
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
			if (j == w->jadm) {	/* its admissions' tables */
				tk += w->adm_taken;
				w->slots += w->adm_slots;
				w->ntok += w->adm_ntok;
				w->n += w->nadm;
			}
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
			if (j == w->jadm) {	/* note_sched's, theirs */
				replica__sched_notes(rp, kvs_current_step(rp->s),
						     w->adm_off);
				if (w->n > rp->st.max_batch)
					rp->st.max_batch = w->n;
			}
			if (rows != NULL) {
				/* before the admissions, the requests they
				 * hand over still wait in the replica */
				rp->ffrow_waitset = j < w->jadm &&
						    w->jadm < w->kn;
				rp->ffrow_wait = w->wait0;
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
		/* replica_end: a token each, in running order */
		w->t += dt;
		if (j == w->jadm)	/* the running requests' */
			w->n -= w->nadm;
		ff_tokens(rp, j - w->seg, w->n, w->t, w->w, rep);
		w->ntok += w->n;
		w->gen += w->n;
		w->ended = w->e < w->nend && rp->ffend[w->e] == j;
		w->j = j + 1;
		if (!w->ended && j + 1 < w->kn) {
			ff_usage_area(rp, w->t, dt);
			continue;
		}
		/* then the admitted requests' first tokens, in the
		 * scheduler's order after them */
		if (j == w->jadm &&
		    (e = replica__note_tokens(rp, rp->sreq + w->adm_off,
					      w->nadm, w->t, rep, why,
					      whylen)) != KV_OK)
			return e;
		/* the step's finishes (or the span's end), then the usage
		 * after them; the batch goes on without them */
		if ((e = ff_step_ends(rp, w, j, st, rep, why, whylen)) !=
		    KV_OK)
			return e;
		/* and the admitted requests' that ended with their first
		 * token (the scheduler lists them last) */
		while (j == w->jadm && w->f < st->nfinish) {
			kvs_req h = st->finish[w->f++];
			uint32_t i = 0;

			while (i < w->nadm && rp->sreq[w->adm_off + i] != h)
				i++;
			if (i == w->nadm) {
				snprintf(why, whylen, "replica %u: fast-forward: "
					 "request %d's end in step %u is not an "
					 "admitted one's", rp->index, (int)h, j);
				return KV_ESTATE;
			}
			if ((e = replica__finish(rp, h, w->t, rep, why,
						 whylen)) != KV_OK)
				return e;
		}
		w->back += rp->fffreed[j];
		free += rp->fffreed[j];
		replica__usage_free(rp, w->t, &free);
		w->seg = j + 1;
		w->e += w->ended;
	}
	w->on = false;
	if ((e = ff_ends_all(rp, st, w->f, why, whylen)) != KV_OK)
		return e;
	rp->nsched = w->n;
	return KV_OK;
}

/*
 * The run's last step admitted the requests held for it (x->adm): its
 * batch for the cost model, the requests still running (one token each,
 * in running order) and then those the scheduler admitted (the step
 * record's, note_sched's entries, kept from rp->seq[n0] on for the walk's
 * notes); its time as replica_begin takes it, async scheduling's overlap
 * from its chosen time; and the walk's view of the admissions: the
 * blocks they took, their tables' slots (C computed tokens in whole
 * blocks) and their tokens before their output, at most those slots.
 */
static kv_err
ff_admission(replica *rp, struct ff_plan *x, struct ff_walk *w,
	     uint32_t n0)
{
	const struct kvs_step *st = kvs_current_step(rp->s);
	uint32_t j = w->kn - 1, m = 0, bs = rp->block_size;
	struct kvs_step b;
	int64_t dt, cpu;

	if (n0 + st->nsched > rp->capffseq) {
		struct cat_mixer_seq *q = realloc(rp->ffseq, (n0 + st->nsched) *
						  sizeof(*q));

		if (q == NULL)
			return KV_ENOMEM;
		rp->ffseq = q;
		rp->capffseq = n0 + st->nsched;
	}
	for (uint32_t i = 0; i < n0; i++) {
		const struct kvs_running *r = &rp->ffrun[i];

		if (r->ends_at < j)
			continue;
		rp->ffseq[m].q = 1;
		rp->ffseq[m++].ctx = r->computed + j;
	}
	for (uint32_t i = 0; i < st->nsched; i++) {
		const struct cat_mixer_seq *q = &rp->seq[n0 + i];
		uint64_t c = q->ctx + q->q, cap = (c + bs - 1) / bs * bs;
		uint64_t t = rp->byreq[st->sched[i].req]->prompt;

		rp->ffseq[m + i] = *q;
		/* a chunk of its prompt leaves none of its slots unused
		 * (kvs_running_unused) */
		w->adm_slots += cap;
		w->adm_ntok += t < cap ? t : cap;
	}
	memset(&b, 0, sizeof(b));
	b.nsched = m + st->nsched;
	dt = replica__batch_time(rp, rp->ffseq, &b, &cpu);
	dt = replica__async_dt(rp, x->t_adm, dt, cpu);
	rp->fft[j] = dt;
	x->t_last = x->t_adm + dt;
	w->jadm = j;
	w->nadm = st->nsched;
	w->adm_off = n0;
	w->adm_taken = x->adm_taken;
	w->wait0 = x->wait0;
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
	sp->ended = sp->admitted = false;
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
	/* a step that admits requests ends the run, its time taken once
	 * the scheduler has chosen it: where nothing but arrivals and rows
	 * can come before its end (it is the tail when it ends past the
	 * horizon) */
	x.adm_ok = x.tail_until == INT64_MAX;
	x.why = why;
	x.whylen = whylen;
	/* (replica_ff_ready's test too: the caller's later calls, after a
	 * span that ended requests, come without it) */
	if (!x.adm_ok && ff_held_due(rp, now))
		return KV_OK;
	why[0] = '\0';
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
	/* each step's notes, as replica_begin and replica_end take them;
	 * w: a token's time in the API server (cost_fifo_serve's, >= 0) */
	w = &rp->ffw;
	memset(w, 0, sizeof(*w));
	w->kn = kn;
	w->jt = x.tail ? kn - 1 - x.next : kn;
	w->jadm = kn;
	if (x.adm) {
		sp->admitted = true;
		if (ff_admission(rp, &x, w, n) != KV_OK) {
			snprintf(why, whylen, "out of memory");
			return KV_ENOMEM;
		}
		/* past the horizon (or past the second, as it may end
		 * requests): in flight, the tail */
		if (x.t_last > (x.until_end < x.until ? x.until_end :
				x.until))
			w->jt = w->jadm;
	}
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
