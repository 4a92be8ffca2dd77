/*
 * kvs_ff.c -- steady decode, k steps at once (kvsched.h kvs_decode_span,
 * kvs_decode_run; docs/fastforward.md).
 *
 * A step of policy vllm-v1 in which every unfinished request is running
 * and has one token to compute (T = C + 1) schedules each of them for one
 * token, in running order, and completes each with one sampled token.
 * Nothing else happens in it unless a block cannot be had (a preemption)
 * or a request reaches its end (a finish).  kvs_decode_span finds how many
 * such steps lie ahead that end no request, kvs_decode_span_end how many
 * when the last may; kvs_decode_run makes them: the allocator calls of
 * every step in the order the steps would make them, so the blocks taken,
 * the prefix cache's evictions and the blocks it indexes are those of the
 * single steps, without the scheduler's per-step work, then the last
 * step's finishes in running order, as kvs_complete makes them.
 * kvs_decode_plan does both in one call: the search, a caller's choice of
 * length (and tokens) from what it found, and the run, not searched again.
 */
#include "core/kvs_int.h"

#include <stdlib.h>
#include <string.h>

extern const struct kvs_policy kvs__v1_policy;

/*
 * The steps from now whose token request r (sequence q) samples before it
 * ends: step left + 1 ends it, with max_output tokens or at max_model_len
 * (kvs_complete_default's test, on the counts after its token).
 */
static uint32_t
ff_left(const kvs *s, const struct kvs_rq *r, const struct kvc_seq *q)
{
	uint32_t mml = s->k->cfg.max_model_len;
	uint32_t left = r->max_output - r->generated - 1u;

	if (mml - q->ntok - 1u < left)
		left = mml - q->ntok - 1u;
	return left;
}

/*
 * Blocks the running requests take in the next k steady steps, from the
 * running queue as it stands; with `any`, a request takes none after the
 * step that ends it (the blocks its end frees are not counted: the span
 * they allow is a lower bound).
 */
static uint64_t
ff_blocks(const kvs *s, uint32_t k, bool any)
{
	const kvc *kc = s->k;
	uint32_t bs = kc->cfg.block_size;
	uint64_t need = 0;

	for (uint32_t i = 0; i < kvs__qlen(s, KVS_Q_RUNNING); i++) {
		const struct kvs_rq *r = kvs__rq(s, kvs__qat(s,
						 KVS_Q_RUNNING, i));
		const struct kvc_seq *q = kvc__seq(kc, r->seq);
		uint32_t kk = k;
		uint64_t b;

		if (any && ff_left(s, r, q) < kk)
			kk = ff_left(s, r, q) + 1u;
		/* step j allocates C + j + 1 slots; the last, C + kk */
		b = ((uint64_t)q->ncomp + kk + bs - 1) / bs;
		if (b > q->tab[0].n)
			need += b - q->tab[0].n;
	}
	return need;
}

/*
 * ff_blocks' count for the kk steps from a run's step j0, from records
 * r[0..n) of the run's requests (those ended before j0 passed over): a
 * request's C at j0 is its computed count and the steps since its start;
 * its table is the record's when it starts at j0, else the allocator's
 * now.
 */
static uint64_t
ff_need(const kvs *s, const struct kvs_running *r, uint32_t n, uint32_t j0,
	uint32_t kk, bool any)
{
	uint32_t bs = s->k->cfg.block_size;
	uint64_t need = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t tn, ki = kk;
		uint64_t b;

		if (r[i].ends_at < j0)
			continue;
		if (any && r[i].ends_at - j0 < kk)
			ki = r[i].ends_at - j0 + 1u;
		tn = j0 == r[i].start ? r[i].blocks :
		    kvc__seq(s->k, r[i].seq)->tab[0].n;
		b = ((uint64_t)r[i].computed + (j0 - r[i].start) + ki +
		     bs - 1) / bs;
		if (b > tn)
			need += b - tn;
	}
	return need;
}

/*
 * The most steps, kmax at most, whose blocks are free (the need grows
 * with the steps): ff_need's from step j0 of records r (live of them
 * running then), or ff_blocks' (r NULL).  A request's table covers its C,
 * so k steps take it ceil(k / bs) blocks at most: where live times one
 * more than that are free, no table is read.
 */
static uint32_t
ff_fit(const kvs *s, const struct kvs_running *r, uint32_t n, uint32_t j0,
       uint32_t kmax, bool any, uint32_t live)
{
	uint32_t bs = s->k->cfg.block_size, lo = 0, hi = kmax;
	uint64_t free = kvc_free_blocks(s->k, 0);

	if ((uint64_t)live * ((kmax + bs - 1) / bs + 1) <= free ||
	    (r != NULL ? ff_need(s, r, n, j0, kmax, any) :
			 ff_blocks(s, kmax, any)) <= free)
		return kmax;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if ((r != NULL ? ff_need(s, r, n, j0, mid, any) :
				 ff_blocks(s, mid, any)) <= free)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The engine as a whole: vllm-v1 with one full-attention group and
 * nothing but steady decodes. */
static bool
ff_engine(const kvs *s)
{
	const struct kvc_config *kc = &s->k->cfg;
	const struct kvs_config *c = &s->cfg;
	uint32_t n = kvs__qlen(s, KVS_Q_RUNNING);

	/* requests waiting stay so, untouched, while the running ones fill
	 * max_num_seqs or the whole budget: the waiting phase stops before
	 * it looks at the first (its priority sort is stable).  Tested
	 * first: under load, the usual no */
	if (kvs__qlen(s, KVS_Q_WAITING) != 0 &&
	    (uint64_t)n < (uint64_t)c->max_num_seqs &&
	    (uint64_t)n != (uint64_t)c->max_num_batched_tokens)
		return false;
	if (s->pol != &kvs__v1_policy || s->pending || s->has_conn ||
	    kc->mode != KVC_VLLM_V1 || kc->ngroups > 1 ||
	    (kc->ngroups == 1 && (kc->group[0].kind != KVC_FULL ||
				  (kc->group[0].block_size != 0 &&
				   kc->group[0].block_size != kc->block_size))))
		return false;
	if (c->lookahead > 0 || c->spec_tokens > 0 || n == 0 ||
	    c->max_loras != KVS_UNSET || kvs__qlen(s, KVS_Q_SWAPPED) != 0 ||
	    s->nunfinished != n + kvs__qlen(s, KVS_Q_WAITING))
		return false;
	/* every request gets its token: the budget and the threshold */
	return (uint64_t)n <= (uint64_t)c->max_num_batched_tokens;
}

/*
 * Running request r (h) makes steady steps: one token a step, nothing
 * drafted, one sequence, its table covering its C, short of its ends.
 * Its sequence, or NULL where it does not.
 */
static inline const struct kvc_seq *
ff_steady(const kvs *s, kvs_req h, const struct kvs_rq *r)
{
	const struct kvc_seq *q;

	if (r->status != KVS_RUNNING || r->inflight ||
	    kvs__draft(s, h) > 0 || kvs__nsamp(s, h) > 1 || r->seq < 0 ||
	    (uint32_t)r->seq >= s->k->nseq)
		return NULL;
	q = kvc__seq(s->k, r->seq);
	if (q->state != KVC_RUNNING || q->ntok != q->ncomp + 1u ||
	    q->tab[0].n * (uint64_t)s->k->cfg.block_size < q->ncomp)
		return NULL;
	/* step ff_left ends it when, with its token, it has max_output
	 * tokens or T + that step + 1 positions reach max_model_len
	 * (kvs_complete_default) */
	if (r->generated >= r->max_output ||
	    q->ntok >= s->k->cfg.max_model_len)
		return NULL;
	return q;
}

/* A steady request's record o, the run's step j its first, ends_at its
 * end from there (left: ff_left's). */
static inline void
ff_record(struct kvs_running *o, kvs_req h, const struct kvs_rq *r,
	  const struct kvc_seq *q, uint32_t j, uint32_t left)
{
	o->req = h;
	o->seq = r->seq;
	o->computed = q->ncomp;
	o->tokens = q->ntok;
	o->blocks = q->tab[0].n;
	o->generated = r->generated;
	o->ends_at = j + left;
	o->start = j;
}

/* kvs_decode_span (ends KVS_ENDS_NONE), kvs_decode_span_end
 * (KVS_ENDS_LAST), and kvs_decode_plan's KVS_ENDS_ANY; *last (NULL: not
 * wanted): whether the last step counted ends requests; out (NULL: not
 * wanted, else room for the running queue): the running requests
 * (kvs_decode_plan). */
static uint32_t
ff_span(const kvs *s, uint32_t kmax, enum kvs_ends ends, bool *last,
	struct kvs_running *out)
{
	uint32_t first = UINT32_MAX;	/* the first step that ends one */
	uint32_t most = 0;		/* the last, with `any` */
	uint32_t n, lo;
	bool none, any;

	if (last == NULL)
		last = &none;
	*last = false;
	if (s == NULL || kmax == 0 || !ff_engine(s))
		return 0;
	n = kvs__qlen(s, KVS_Q_RUNNING);
	/* past a finish only when nothing waits for the room it makes */
	any = ends == KVS_ENDS_ANY && kvs__qlen(s, KVS_Q_WAITING) == 0;
	for (uint32_t i = 0; i < n; i++) {
		kvs_req h = kvs__qat(s, KVS_Q_RUNNING, i);
		const struct kvs_rq *r = kvs__rq(s, h);
		const struct kvc_seq *q = ff_steady(s, h, r);
		uint32_t left;

		if (q == NULL)
			return 0;
		/* step left ends it: with `ends` that step may be the last,
		 * else the step before; with `any` the steps go on without
		 * it */
		left = ff_left(s, r, q);
		if (out != NULL)
			ff_record(&out[i], h, r, q, 0, left);
		if (left < first)
			first = left;
		if (left > most)
			most = left;
		if (!any && (uint64_t)left + (ends != KVS_ENDS_NONE) < kmax)
			kmax = left + (ends != KVS_ENDS_NONE);
		if (kmax == 0)
			return 0;
	}
	if (any && (uint64_t)most + 1u < kmax)
		kmax = most + 1u;
	/* the largest k whose blocks are free */
	lo = ff_fit(s, out, n, 0, kmax, any, n);
	if (lo > 0 && !any)
		*last = lo == first + 1;
	for (uint32_t i = 0; lo > 0 && any && i < n; i++) {
		const struct kvs_rq *r = kvs__rq(s, kvs__qat(s,
						 KVS_Q_RUNNING, i));

		if ((out != NULL ? out[i].ends_at :
		     ff_left(s, r, kvc__seq(s->k, r->seq))) == lo - 1)
			*last = true;
	}
	return lo;
}

bool
kvs_decode_ready(const kvs *s)
{
	return s != NULL && ff_engine(s);
}

uint32_t
kvs_decode_span(const kvs *s, uint32_t kmax)
{
	return ff_span(s, kmax, KVS_ENDS_NONE, NULL, NULL);
}

uint32_t
kvs_decode_span_end(const kvs *s, uint32_t kmax, bool *last)
{
	return ff_span(s, kmax, KVS_ENDS_LAST, last, NULL);
}

/*
 * Request i to step j: its no-op steps since the last it made, with their
 * tokens (row i of tok, k a row).
 */
static kv_err
ff_catch_up(kvs *s, uint32_t i, uint32_t j, uint32_t k, const uint32_t *tok)
{
	struct kvc_ffreq *f = &s->ff[i];
	kv_err e;

	if (j == f->made)
		return KV_OK;
	if ((e = kvc__v1_quiet_steps(s->k, f->seq, j - f->made,
				     tok + (size_t)i * k + f->made)) != KV_OK)
		return kvs__fail(s, e, "decode run: %s", kvc_errmsg(s->k));
	f->made = j;
	return KV_OK;
}

/*
 * Step j of request i when allocate_slots has work in it (a block to
 * take, one to hash and cache): its no-op steps since the last it made,
 * then the running phase's call and the step's token, in one call; its
 * next such step in ff[i].next.  The step's clock is set (kvc_set_time,
 * kvc_step_begin) before its first event.
 */
static kv_err
ff_event(kvs *s, uint32_t i, uint32_t j, uint32_t k, const uint32_t *tok)
{
	struct kvc_ffreq *f = &s->ff[i];
	const uint32_t *row = tok + (size_t)i * k;
	uint32_t quiet;
	kv_err e;

	/* row[j], the step's token, is read by the general path alone: a
	 * keyed request's row is not written, and the usual event's load of
	 * it missed the cache */
	if ((e = kvc__v1_decode_event(s->k, f->seq, j - f->made,
				      row + f->made, &quiet)) != KV_OK)
		return kvs__fail(s, e, "decode run, step %u: %s", j,
				 kvc_errmsg(s->k));
	f->made = j + 1;
	f->next = j + 1 + quiet;
	return KV_OK;
}

/*
 * The events due, a binary min-heap of (step << 32 | i): the single steps'
 * order is step by step, each in running order, so the least key is the
 * next allocator call.  A step without one costs nothing; before, each
 * step looked at every request.
 */
static void
ffq_push(uint64_t *h, uint32_t *n, uint64_t key)
{
	uint32_t c = (*n)++;

	while (c > 0 && h[(c - 1) / 2] > key) {
		h[c] = h[(c - 1) / 2];
		c = (c - 1) / 2;
	}
	h[c] = key;
}

static void
ffq_pop(uint64_t *h, uint32_t *n)
{
	uint64_t key = h[--*n];
	uint32_t c = 0, m = *n;

	for (;;) {
		uint32_t l = 2 * c + 1;

		if (l >= m)
			break;
		if (l + 1 < m && h[l + 1] < h[l])
			l++;
		if (h[l] >= key)
			break;
		h[c] = h[l];
		c = l;
	}
	if (m > 0)
		h[c] = key;
}

/*
 * The last step's admissions (kvs_decode_bufs' admit): the waiting phase
 * after the step's running phase (each running request took one token
 * of the budget), its blocks in b->adm_taken.
 */
static kv_err
ff_waiting(kvs *s, struct kvs_decode_bufs *b)
{
	uint64_t budget = s->cfg.max_num_batched_tokens;
	uint32_t before = kvc_free_blocks(s->k, 0), n;
	kv_err e;

	n = kvs__qlen(s, KVS_Q_RUNNING);
	s->nsched = 0;
	s->step.batch_tokens = 0;
	kvs__publish(s);
	e = kvs__v1_admit(s, budget > n ? (uint32_t)(budget - n) : 0);
	kvs__publish(s);
	if (e != KV_OK)
		return s->msg[0] != '\0' ? e :
		    kvs__fail(s, e, "decode run: admission: %s",
			      kvc_errmsg(s->k));
	if (b->adm_taken != NULL)
		*b->adm_taken = before - kvc_free_blocks(s->k, 0);
	return b->scheduled != NULL ? b->scheduled(b->arg) : KV_OK;
}

/*
 * The admitted requests' output at the last step's end, after the
 * running requests' finishes: kvs_complete's, on the step record's
 * entries (the admitted requests alone).
 */
static kv_err
ff_admitted_out(kvs *s, struct kvs_decode_bufs *b)
{
	uint32_t few[16], *t = NULL;	/* (most steps admit one or two) */
	kv_err e;

	if (s->nsched == 0)
		return KV_OK;
	if (b->first != NULL) {
		t = s->nsched <= 16 ? few : malloc(s->nsched * sizeof(*t));
		if (t == NULL)
			return kvs__fail(s, KV_ENOMEM, "out of memory");
		for (uint32_t i = 0; i < s->nsched; i++)
			t[i] = b->first(b->arg, s->sched[i].req);
	}
	e = kvs_complete_default(s, t);
	if (t != few)
		free(t);
	return e;
}

/* fin[0 .. *m) sorted, with key added in its place. */
static void
ff_fin_add(uint64_t *fin, uint32_t *m, uint64_t key)
{
	uint32_t c;

	for (c = (*m)++; c > 0 && fin[c - 1] > key; c--)
		fin[c] = fin[c - 1];
	fin[c] = key;
}

/* Room for n requests in the run's scratch. */
static kv_err
ff_room(kvs *s, uint32_t n)
{
	if (kvs__grow((void **)&s->ff, &s->capff, n, sizeof(*s->ff)) !=
	    KV_OK ||
	    kvs__grow((void **)&s->ffq, &s->capffq, n, sizeof(*s->ffq)) !=
	    KV_OK ||
	    kvs__grow((void **)&s->fffin, &s->capfffin, n,
		      sizeof(*s->fffin)) != KV_OK ||
	    kvs__grow((void **)&s->ffr, &s->capffr, n, sizeof(*s->ffr)) !=
	    KV_OK)
		return kvs__fail(s, KV_ENOMEM, "out of memory");
	return KV_OK;
}

/*
 * After the admission step j - 1 (ab's more): the requests it admitted
 * that go on running, steady, in s->ffr from n on (*nj of them, start j;
 * ff_room made room for every request the step scheduled; live of the n
 * before still run, the last of them to end at step most),
 * and the steady steps after it for every request running (ff_span's
 * rules, from the run's records), *last as ff_span's.  0 when the run
 * cannot go on: something waits, a request is not steady (a prompt in
 * chunks), or the engine no longer allows a steady step.
 */
static uint32_t
ff_more_span(kvs *s, uint32_t n, uint32_t j, enum kvs_ends ends,
	     uint32_t live, uint32_t most, uint32_t *nj, bool *last)
{
	uint32_t m = 0, first = UINT32_MAX, kmax = UINT32_MAX - j, lo;
	bool any = ends == KVS_ENDS_ANY;

	*nj = 0;
	*last = false;
	if (kvs__qlen(s, KVS_Q_WAITING) != 0 || s->nign != 0 || !ff_engine(s))
		return 0;
	for (uint32_t i = 0; i < s->nsched; i++) {
		kvs_req h = s->sched[i].req;
		const struct kvs_rq *r = kvs__rq(s, h);
		const struct kvc_seq *q;
		struct kvs_running *o = &s->ffr[n + m];

		if (r->status == KVS_FINISHED)
			continue;	/* it ended with its token */
		if ((q = ff_steady(s, h, r)) == NULL)
			return 0;
		ff_record(o, h, r, q, j, ff_left(s, r, q));
		if (o->ends_at > most)
			most = o->ends_at;
		m++;
	}
	live += m;
	if (live == 0)
		return 0;
	/* the ends, as ff_span counts them, of every request running: with
	 * `any`, the last's (the one that ends last is running, as some
	 * are); else each one's */
	if (any && (uint64_t)most - j + 1u < kmax)
		kmax = most - j + 1u;
	for (uint32_t i = 0; !any && i < n + m; i++) {
		uint32_t left;

		if (s->ffr[i].ends_at < j)
			continue;	/* ended */
		left = s->ffr[i].ends_at - j;
		if (left < first)
			first = left;
		if ((uint64_t)left + (ends != KVS_ENDS_NONE) < kmax)
			kmax = left + (ends != KVS_ENDS_NONE);
	}
	if (kmax == 0)
		return 0;
	lo = ff_fit(s, s->ffr, n + m, j, kmax, any, live);
	if (lo > 0 && !any)
		*last = lo == first + 1;
	if (lo > 0 && any && lo == kmax)
		*last = true;	/* the last to end, in step lo - 1 */
	for (uint32_t i = 0; lo > 0 && any && lo < kmax && i < n + m; i++)
		if (s->ffr[i].ends_at >= j &&
		    s->ffr[i].ends_at - j == lo - 1)
			*last = true;
	*nj = m;
	return lo;
}

/*
 * The ends of step j, the run's finishes from the *f-th on (of m, in
 * running order): each request's last tokens (rows of ts in tok), then
 * its finish, as kvs_complete makes it; *live loses them.
 */
static kv_err
ff_ends(kvs *s, uint32_t j, uint32_t ts, const uint32_t *tok, uint32_t *f,
	uint32_t m, uint32_t *live)
{
	const uint64_t *fin = s->fffin;
	kv_err e = KV_OK;

	kvc_set_time(s->k, (int64_t)s->step.number);
	while (*f < m && fin[*f] >> 32 == j && e == KV_OK) {
		uint32_t i = (uint32_t)fin[(*f)++];
		struct kvc_ffreq *x = &s->ff[i];

		if ((e = ff_catch_up(s, i, j + 1, ts, tok)) != KV_OK)
			break;
		kvs__rq(s, x->req)->generated += j + 1 - x->start;
		x->steps = 0;	/* ended */
		(*live)--;
		e = kvs__finish(s, x->req);
	}
	return e;
}

/*
 * Requests s->ffr[i0 .. i0 + nj) join the run at step j0, whose steps are
 * now k: each one's record, its allocator events due into the heap (*nq
 * keys) and its end, when the run makes it, into the finishes (*m of
 * them, (step, i) in order in s->fffin); *most, the last end.
 */
static inline void
ff_join(kvs *s, uint32_t i0, uint32_t nj, uint32_t j0, uint32_t k,
	uint32_t *nq, uint32_t *m, uint32_t *most)
{
	for (uint32_t i = i0; i < i0 + nj; i++) {
		struct kvc_ffreq *x = &s->ff[i];
		uint32_t left = s->ffr[i].ends_at;

		x->req = s->ffr[i].req;
		x->seq = s->ffr[i].seq;
		x->made = x->start = j0;
		x->steps = left < k ? left + 1u : k;
		if (left > *most)
			*most = left;
	}
	kvc__v1_quiet_all(s->k, s->ff + i0, nj);
	for (uint32_t i = i0; i < i0 + nj; i++) {
		struct kvc_ffreq *x = &s->ff[i];
		uint32_t left = s->ffr[i].ends_at;

		if (x->next < x->steps)
			ffq_push(s->ffq, nq, (uint64_t)x->next << 32 | i);
		if (left < k)
			ff_fin_add(s->fffin, m, (uint64_t)left << 32 | i);
	}
}

/*
 * The run's k steps become k + kk (ab's more): the n requests running
 * before whose steps stopped at k go on to their ends, their events and
 * ends then due into the heap and the finishes; the nj admitted ones,
 * s->ffr from n on, join from step k (ff_join).
 */
static void
ff_go_on(kvs *s, uint32_t n, uint32_t nj, uint32_t k, uint32_t kk,
	 uint32_t *nq, uint32_t *m, uint32_t *most)
{
	for (uint32_t i = 0; i < n; i++) {
		struct kvc_ffreq *x = &s->ff[i];
		uint32_t left = s->ffr[i].ends_at;

		if (x->steps != k)
			continue;	/* ended, or ends by k */
		x->steps = left < k + kk ? left + 1u : k + kk;
		if (x->next >= k && x->next < x->steps)
			ffq_push(s->ffq, nq, (uint64_t)x->next << 32 | i);
		if (left >= k && left < k + kk)
			ff_fin_add(s->fffin, m, (uint64_t)left << 32 | i);
	}
	ff_join(s, n, nj, k, k + kk, nq, m, most);
}

/* kvs_complete's ids, 1000000 + T, for the n requests' k steps. */
static uint32_t *
ff_ids(const kvs *s, uint32_t n, uint32_t k)
{
	uint32_t *t = malloc((size_t)n * k * sizeof(*t));

	for (uint32_t i = 0; t != NULL && i < n; i++)
		for (uint32_t j = 0; j < k; j++)
			t[(size_t)i * k + j] = 1000000u + s->ffr[i].tokens + j;
	return t;
}

/*
 * The steps in the single steps' order, but each request's no-op steps
 * (kvc__v1_quiet) in one call: per step, only the requests whose
 * allocation has work in it, in running order; then the requests the
 * step ends, in running order: their last tokens, and their finish (the
 * blocks they free serve the steps after).  The requests as ff_span
 * found them, in s->ffr.  With ab's admit set, the last step admits:
 * the held requests handed over at its start, its waiting phase after
 * its running phase, the admitted requests' output after its finishes;
 * then, with ab's more, the run may go on with the requests it admitted
 * (ff_more_span), ab's new answer read as the planner's.
 */
static kv_err
ff_run(kvs *s, uint32_t k, const uint32_t *tok, uint32_t *taken,
       uint32_t *freed, struct kvs_decode_bufs *ab, enum kvs_ends ends,
       uint32_t *made)
{
	uint32_t n, nq, m = 0, f = 0, before, ts, live, most = 0;
	uint32_t jadm = ab != NULL && ab->admit != NULL ? k - 1 : UINT32_MAX;
	uint64_t base;
	uint32_t *deft = NULL;
	uint64_t *fin;
	/* kvc_free_blocks(s->k, 0), read where it stands */
	const uint32_t *nfree = kvc__v1_free_count(s->k);
	kv_err e = KV_OK;

	n = kvs__qlen(s, KVS_Q_RUNNING);
	if ((e = ff_room(s, n)) != KV_OK)
		return e;
	ts = ab != NULL && ab->stride != 0 ? ab->stride : k;
	if (ts < k || (ab != NULL && ab->more != NULL && ab->stride == 0))
		return kvs__fail(s, KV_EINVAL, "decode run: tokens' rows of "
				 "%u for %u steps%s", ts, k,
				 ts < k ? "" : ", and more without a stride");
	if (tok == NULL) {	/* kvs_complete's ids: 1000000 + T */
		if ((deft = ff_ids(s, n, k)) == NULL)
			return kvs__fail(s, KV_ENOMEM, "out of memory");
		tok = deft;
		ts = k;
	}
	/* the requests' records (the running queue loses those that end),
	 * the allocator events' heap and the finishes */
	fin = s->fffin;
	nq = 0;
	ff_join(s, 0, n, 0, k, &nq, &m, &most);
	live = n;	/* running, and the last end */
	/* the step record lists the run's finishes; a step with neither an
	 * allocator event nor an end takes and frees nothing, and is
	 * passed over */
	s->nfin = 0;
	base = s->step.number;
	before = *nfree;
	if (taken != NULL)
		memset(taken, 0, (size_t)k * sizeof(*taken));
	if (freed != NULL)
		memset(freed, 0, (size_t)k * sizeof(*freed));
	for (uint32_t j = 0; e == KV_OK; j++) {
		uint32_t after, jfrom = j, nj, kk;
		bool last;

		if (nq > 0 && (uint32_t)(s->ffq[0] >> 32) > j)
			j = (uint32_t)(s->ffq[0] >> 32);
		else if (nq == 0)
			j = k;
		if (f < m && (uint32_t)(fin[f] >> 32) < j)
			j = (uint32_t)(fin[f] >> 32);
		if (jadm < j && jadm >= jfrom)
			j = jadm;
		if (j >= k)
			break;
		s->step.number = base + j + 1u;
		if (j == jadm) {	/* they join the step before it runs */
			if ((e = ab->admit(ab->arg)) != KV_OK)
				break;
		}
		if ((nq > 0 && s->ffq[0] >> 32 == j) || j == jadm) {
			kvc_set_time(s->k, (int64_t)s->step.number);
			kvc_step_begin(s->k);
		}
		while (nq > 0 && s->ffq[0] >> 32 == j && e == KV_OK) {
			uint32_t i = (uint32_t)s->ffq[0];

			ffq_pop(s->ffq, &nq);
			if ((e = ff_event(s, i, j, ts, tok)) == KV_OK &&
			    s->ff[i].next < s->ff[i].steps)
				ffq_push(s->ffq, &nq,
					 (uint64_t)s->ff[i].next << 32 | i);
		}
		after = *nfree;
		if (taken != NULL)
			taken[j] = before - after;
		if (j == jadm && e == KV_OK && (e = ff_waiting(s, ab)) == KV_OK)
			after = *nfree;
		before = after;
		if (f < m && fin[f] >> 32 == j && e == KV_OK) {
			e = ff_ends(s, j, ts, tok, &f, m, &live);
			before = *nfree;
		}
		if (j == jadm && e == KV_OK &&
		    (e = ff_admitted_out(s, ab)) == KV_OK)
			before = *nfree;
		if (freed != NULL)
			freed[j] = before - after;
		if (j != jadm || e != KV_OK || ab->more == NULL || deft != NULL)
			continue;
		/* the run past the admission: the planner's say */
		if ((e = ff_room(s, n + s->nsched)) != KV_OK)
			break;
		fin = s->fffin;
		if ((kk = ff_more_span(s, n, k, ends, live, most, &nj,
				       &last)) == 0 ||
		    (kk = ab->more(ab->arg, s->ffr + n, nj, kk, last, ab)) == 0)
			continue;
		if (kk > UINT32_MAX - k || ab->stride < k + kk ||
		    ab->tok == NULL) {
			e = kvs__fail(s, KV_EINVAL, "decode run: the run "
				      "past its admission asks for %u steps",
				      kk);
			break;
		}
		tok = ab->tok;
		ts = ab->stride;
		if (taken != NULL)
			memset(taken + k, 0, (size_t)kk * sizeof(*taken));
		if (freed != NULL)
			memset(freed + k, 0, (size_t)kk * sizeof(*freed));
		ff_go_on(s, n, nj, k, kk, &nq, &m, &most);
		n += nj;
		live += nj;
		k += kk;
		jadm = ab->admit != NULL ? k - 1 : UINT32_MAX;
	}
	if (e == KV_OK) {
		s->step.number = base + k;
		if ((e = kvc__v1_catch_up_all(s->k, s->ff, n, k, tok, ts)) !=
		    KV_OK)
			e = kvs__fail(s, e, "decode run: %s",
				      kvc_errmsg(s->k));
	}
	for (uint32_t i = 0; i < n && e == KV_OK; i++)
		if (s->ff[i].steps >= k)
			kvs__rq(s, s->ff[i].req)->generated += k -
							       s->ff[i].start;
	free(deft);
	if (e != KV_OK)
		return e;
	*made = k;
	kvc_set_time(s->k, (int64_t)s->step.number);
	/* the step record: the run left no step to complete; it lists the
	 * last step's admissions, if the last step admitted */
	if (jadm != k - 1) {
		s->nsched = 0;
		s->step.batch_tokens = 0;
	}
	s->npre = s->nign = 0;
	s->nload = s->nheld = 0;
	s->npairs[0] = s->npairs[1] = s->npairs[2] = 0;
	kvs__publish(s);
	return KV_OK;
}

kv_err
kvs_decode_run(kvs *s, uint32_t k, const uint32_t *tok, uint32_t *taken)
{
	uint32_t made;

	s->msg[0] = '\0';
	if (k == 0)
		return KV_OK;
	if (kvs__grow((void **)&s->ffr, &s->capffr,
		      kvs__qlen(s, KVS_Q_RUNNING), sizeof(*s->ffr)) != KV_OK)
		return kvs__fail(s, KV_ENOMEM, "out of memory");
	if (ff_span(s, k, KVS_ENDS_LAST, NULL, s->ffr) < k)
		return kvs__fail(s, KV_EINVAL, "%u steps are not all steady "
				 "decode steps", k);
	return ff_run(s, k, tok, taken, NULL, NULL, KVS_ENDS_LAST, &made);
}

kv_err
kvs_decode_plan(kvs *s, uint32_t kmax, enum kvs_ends ends,
		kvs_decode_planner plan, void *arg, uint32_t *made)
{
	uint32_t n = kvs__qlen(s, KVS_Q_RUNNING), k, kk;
	struct kvs_decode_bufs b;
	bool last;

	s->msg[0] = '\0';
	*made = 0;
	memset(&b, 0, sizeof(b));
	if (plan == NULL)
		return kvs__fail(s, KV_EINVAL, "a decode plan needs a planner");
	if (ends > KVS_ENDS_ANY)
		return kvs__fail(s, KV_EINVAL, "no such span kind %d",
				 (int)ends);
	if (kvs__grow((void **)&s->ffr, &s->capffr, n, sizeof(*s->ffr)) !=
	    KV_OK)
		return kvs__fail(s, KV_ENOMEM, "out of memory");
	if ((k = ff_span(s, kmax, ends, &last, s->ffr)) == 0)
		return KV_OK;
	if ((kk = plan(arg, s->ffr, n, k, last, &b)) == 0)
		return KV_OK;
	if (kk > k)
		return kvs__fail(s, KV_EINVAL, "the plan asks for %u steps, "
				 "%u are steady", kk, k);
	return ff_run(s, kk, b.tok, b.taken, b.freed, &b, ends, made);
}
