/*
 * kvs_fastgen.c -- policy "deepspeed-fastgen": DeepSpeed FastGen's Dynamic
 * SplitFuse, i.e. the ragged batching scheduler of DeepSpeed-MII
 * (microsoft/DeepSpeed-MII mii/batching/ragged_batching.py,
 * RaggedBatchBase.schedule_requests / _do_schedule_requests) over the
 * engine's query()/can_schedule() (deepspeedai/DeepSpeed
 * deepspeed/inference/v2/engine_v2.py) on the `deepspeed` allocator.
 * docs/policies.md is the normative description; this is its summary.
 *
 * THE BUFFER.  MII keeps every unfinished request in one ordered buffer:
 * arrivals join the tail; after a step a request that sent its last
 * pending token (it samples one) rejoins the tail, in scheduling order; a
 * request whose pending tokens were split ("decomposed") has its remainder
 * pushed on the FRONT at scheduling time; unscheduled requests keep their
 * places.  A request's pending tokens are the tokens the engine has not
 * seen: T - S while tracked (RUNNING), all T while not (WAITING).
 *
 * A STEP.  Two passes over the buffer in order: first the requests with
 * exactly one pending token (token generation), then those with more
 * (prompts).  For each: stop when max_num_seqs (max_ragged_sequence_count)
 * requests are scheduled or the token budget (max_ragged_batch_size) is
 * spent; a prompt whose WHOLE pending part does not fit the KV cache now
 * stops the prompt pass (MII's deadlock guard); then the grant is
 * query(min(pending, budget left)) and a grant of 0 skips the request.
 * Granted tokens are reserved at once (the allocation the engine's put()
 * makes), so the next query sees the blocks left.  If requests remain and
 * nothing was scheduled, MII resets: every tracked request is flushed and
 * recomputed (prompt + generated tokens), the step schedules nothing.
 *
 * THE PER-GROUP CONTRACT (seed bug 1 fixed).  query() is DeepSpeed's
 * get_kv_requirements asked of EVERY KV cache group with that group's own
 * held and free blocks: the grant is the least of the groups' grants, and
 * a request one group cannot hold is the KV-cache limit -- counted in
 * kvs_fastgen_stats() and never admitted -- while the upstream fix reads
 * group 0 only and admits it.
 *
 * Deviations: MII's `len(scheduled) > max_ragged_sequence_count` lets one
 * request more through (the engine's own can_schedule then refuses the
 * batch); here max_num_seqs is a hard limit.  Arrivals between two steps
 * join the buffer after the requests that step re-queued.
 *
 * Cost per step: MII walks its whole buffer; here the buffer is kept as
 * two lists, one per class, each in buffer order (a request's place is a
 * key: back keys increase, front keys decrease), so a step visits the
 * token-generation requests (at most max_num_seqs are tracked) and the
 * prompts up to the first that stops the pass: O(batch), not O(backlog).
 * Allocator calls O(scheduled); no allocation in a steady state.
 */
#include "kvspolicy.h"
#include "kv_ds.h"

#include <stdlib.h>
#include <string.h>

#define FG_SEQS_DEFAULT 512	/* max_ragged_sequence_count */
#define FG_TOKENS_DEFAULT 768	/* max_ragged_batch_size */

/*
 * MII's buffer, split by class: the two passes of a step each look at one
 * class only, so keeping each class in buffer order is the buffer.  A
 * request's place is a key: arrivals and re-queued requests take keys at
 * the back (increasing), split remainders at the front (decreasing).
 */
struct fg_list {
	kvs_req *a;		/* entries a[head .. head + n) */
	uint32_t head, n, cap;
};

struct fg {
	struct fg_list dec;	/* one pending token, in buffer order */
	struct fg_list pro;	/* more than one, in buffer order */
	kvs_req *tmp;		/* scratch for the reordering */
	int64_t *key;		/* per request: its place in the buffer */
	uint8_t *flag;		/* per request: FG_* for this step */
	int64_t front, back;	/* the next front and back keys */
	uint32_t known, capreq;
	struct kvs_fastgen_stats st;
};

enum { FG_SCHED = 1, FG_SPLIT = 2 };

extern const struct kvs_policy kvs__fastgen_policy;

static kv_err
fg_fail(char *why, size_t whylen, const char *msg)
{
	if (why != NULL && whylen > 0) {
		strncpy(why, msg, whylen - 1);
		why[whylen - 1] = '\0';
	}
	return KV_ECONFIG;
}

static kv_err
fg_configure(struct kvs_config *c, const struct kvc_config *kc, char *why,
	     size_t whylen)
{
	uint32_t ng = kc->ngroups ? kc->ngroups : 1;
	uint64_t mml = kc->max_model_len ? kc->max_model_len : 8192;

	if (c->chunked_prefill == 0)
		return fg_fail(why, whylen, "Dynamic SplitFuse always splits "
			       "prompts (chunked_prefill off is not "
			       "supported)");
	if (c->long_prefill_threshold != KVS_UNSET)
		return fg_fail(why, whylen, "deepspeed-fastgen has no "
			       "long_prefill_threshold");
	if (c->chunk_size != KVS_UNSET)
		return fg_fail(why, whylen, "deepspeed-fastgen has no "
			       "chunk_size (max_num_batched_tokens is "
			       "max_ragged_batch_size)");
	if (c->preemption == 1)
		return fg_fail(why, whylen, "deepspeed-fastgen cannot swap "
			       "(no KV offload)");
	if (c->priority == 1)
		return fg_fail(why, whylen, "deepspeed-fastgen schedules fcfs "
			       "only");
	if (c->lookahead > 0)
		return fg_fail(why, whylen, "deepspeed-fastgen reserves no "
			       "lookahead slots");
	if (c->max_num_seqs == KVS_UNSET)
		c->max_num_seqs = FG_SEQS_DEFAULT;
	if (c->max_num_batched_tokens == KVS_UNSET)
		c->max_num_batched_tokens = FG_TOKENS_DEFAULT;
	if (c->max_num_seqs < 1 || c->max_num_seqs > UINT32_MAX)
		return fg_fail(why, whylen, "max_num_seqs must be at least 1");
	if (c->max_num_batched_tokens < 1 ||
	    c->max_num_batched_tokens > UINT32_MAX)
		return fg_fail(why, whylen, "max_num_batched_tokens must be at "
			       "least 1");
	/* DSStateManagerConfig's validator (validate_all: the defaults are
	 * checked too) */
	if (c->max_num_seqs > c->max_num_batched_tokens)
		return kvc__failbuf(why, whylen, KV_ECONFIG, "max_num_seqs "
				    "(%lld) exceeds max_num_batched_tokens "
				    "(%lld): DeepSpeed's "
				    "max_ragged_sequence_count cannot be "
				    "larger than max_ragged_batch_size",
				    (long long)c->max_num_seqs,
				    (long long)c->max_num_batched_tokens);
	if (c->max_num_seqs > KVS_DS_MAX_TRACKED)
		return kvc__failbuf(why, whylen, KV_ECONFIG, "max_num_seqs "
				    "(%lld) exceeds DeepSpeed's "
				    "max_tracked_sequences (%u)",
				    (long long)c->max_num_seqs,
				    (unsigned)KVS_DS_MAX_TRACKED);
	c->chunked_prefill = 1;
	c->preemption = 0;
	c->priority = 0;
	c->lookahead = 0;
	c->long_prefill_threshold = 0;
	for (uint32_t g = 0; g < ng; g++) {
		uint32_t bs = kc->block_size ? kc->block_size : 16;

		if (kc->ngroups && kc->group[g].block_size)
			bs = kc->group[g].block_size;
		if (kvc_cdiv(mml, bs) > kc->gpu_blocks)
			return fg_fail(why, whylen, "one max_model_len request "
				       "does not fit a group's gpu_blocks");
	}
	return KV_OK;
}

static kv_err
fg_init(kvs *s, void **state)
{
	struct fg *f = calloc(1, sizeof(*f));

	(void)s;
	if (f == NULL)
		return KV_ENOMEM;
	f->front = -1;
	*state = f;
	return KV_OK;
}

static void
fg_release(void *state)
{
	struct fg *f = state;

	if (f == NULL)
		return;
	free(f->dec.a);
	free(f->pro.a);
	free(f->tmp);
	free(f->key);
	free(f->flag);
	free(f);
}

/* Room for n entries in l (compacting to head 0 if needed). */
static kv_err
fg_list_room(struct fg_list *l, uint32_t n)
{
	if (l->head + n <= l->cap)
		return KV_OK;
	if (n > l->cap) {
		uint32_t c = l->cap ? l->cap : 64;
		kvs_req *p;

		while (c < n)
			c *= 2;
		p = realloc(l->a, (size_t)c * sizeof(*p));
		if (p == NULL)
			return KV_ENOMEM;
		l->a = p;
		l->cap = c;
	}
	memmove(l->a, l->a + l->head, (size_t)l->n * sizeof(*l->a));
	l->head = 0;
	return KV_OK;
}

/* Put src[0..m) in front of l's entries. */
static kv_err
fg_list_prepend(struct fg_list *l, const kvs_req *src, uint32_t m)
{
	if (m > l->head) {
		if (m + l->n > l->cap) {
			uint32_t c = l->cap ? l->cap : 64;
			kvs_req *p;

			while (c < m + l->n)
				c *= 2;
			p = realloc(l->a, (size_t)c * sizeof(*p));
			if (p == NULL)
				return KV_ENOMEM;
			l->a = p;
			l->cap = c;
		}
		memmove(l->a + m, l->a + l->head, (size_t)l->n *
			sizeof(*l->a));
		l->head = m;
	}
	l->head -= m;
	l->n += m;
	if (m > 0)
		memcpy(l->a + l->head, src, (size_t)m * sizeof(*src));
	return KV_OK;
}

/* Per-request arrays and the scratch for nreq requests. */
static kv_err
fg_grow(struct fg *f, uint32_t nreq)
{
	uint32_t c;
	kvs_req *t;
	int64_t *k;
	uint8_t *p;

	if (nreq <= f->capreq)
		return KV_OK;
	c = f->capreq ? f->capreq : 64;
	while (c < nreq)
		c *= 2;
	t = realloc(f->tmp, (size_t)c * sizeof(*t));
	if (t == NULL)
		return KV_ENOMEM;
	f->tmp = t;
	k = realloc(f->key, (size_t)c * sizeof(*k));
	if (k == NULL)
		return KV_ENOMEM;
	f->key = k;
	p = realloc(f->flag, c);
	if (p == NULL)
		return KV_ENOMEM;
	memset(p + f->capreq, 0, c - f->capreq);
	f->flag = p;
	f->capreq = c;
	return KV_OK;
}

/* ---- the engine's query, per group ------------------------------------ */

/*
 * get_kv_requirements of every group for `want` more tokens of seq, each
 * group against avail[g] blocks.  Returns the grant (the least of the
 * groups'), the blocks per group it takes, and the first group that
 * could not grant all of want (or -1).
 */
static uint64_t
fg_query(const kvc *k, int32_t seq, uint64_t want, const uint64_t *avail,
	 uint64_t *blocks, int32_t *short_group)
{
	const struct kvc_config *kc = kvc_config_of(k);
	uint64_t seen = kvc_seq_computed(k, seq), grant = want;
	uint32_t g;

	*short_group = -1;
	for (g = 0; g < kc->ngroups; g++) {
		uint64_t tok;
		int64_t blk;
		size_t held;

		(void)kvc_table(k, seq, g, &held);
		kv_ds_kv_requirements(seen, want, held, kc->group[g].block_size,
				      avail[g], &tok, &blk);
		if (tok < grant)
			grant = tok;
		if (tok != want && *short_group < 0)
			*short_group = (int32_t)g;
	}
	for (g = 0; g < kc->ngroups; g++) {
		uint64_t want_b = kvc_cdiv(seen + grant,
					   kc->group[g].block_size);
		size_t held;

		(void)kvc_table(k, seq, g, &held);
		blocks[g] = want_b > held ? want_b - held : 0;
	}
	return grant;
}

static void
fg_avail(const kvc *k, uint64_t *avail)
{
	for (uint32_t g = 0; g < kvc_ngroups(k); g++)
		avail[g] = kvc_free_blocks(k, g);
}

static struct fg *
fg_of(const kvs *s)
{
	return kvs_policy_state(s, &kvs__fastgen_policy);
}

kv_err
kvs_fastgen_can_schedule(kvs *s, const kvs_req *reqs, const uint32_t *lengths,
			 uint32_t n, enum kvs_ds_result *res, uint32_t *group,
			 uint32_t *index)
{
	const struct kvs_config *c;
	uint64_t avail[KVC_MAX_GROUPS], blocks[KVC_MAX_GROUPS], len = 0;
	uint32_t tracked, i, g;
	kvc *k;

	if (fg_of(s) == NULL || res == NULL || (n > 0 && (reqs == NULL ||
	    lengths == NULL)))
		return KV_EINVAL;
	c = kvs_config_of(s);
	k = kvs_kv(s);
	for (i = 0; i < n; i++)
		if (kvs_req_status(s, reqs[i]) != KVS_WAITING &&
		    kvs_req_status(s, reqs[i]) != KVS_RUNNING)
			return KV_EINVAL;
	if (n > (uint64_t)c->max_num_seqs) {
		*res = KVS_DS_BATCH_SEQUENCE_LIMIT;
		return KV_OK;
	}
	fg_avail(k, avail);
	tracked = kvs_queue_len(s, KVS_Q_RUNNING);
	for (i = 0; i < n; i++) {
		int32_t seq = kvs_req_seq(s, reqs[i]), sg;

		if (kvs_req_status(s, reqs[i]) == KVS_WAITING)
			tracked++;
		if (fg_query(k, seq, lengths[i], avail, blocks, &sg) !=
		    lengths[i]) {
			*res = KVS_DS_KV_CACHE_LIMIT;
			if (group != NULL)
				*group = (uint32_t)sg;
			if (index != NULL)
				*index = i;
			return KV_OK;
		}
		for (g = 0; g < kvc_ngroups(k); g++)
			avail[g] -= blocks[g];
		len += lengths[i];
	}
	if (tracked > KVS_DS_MAX_TRACKED)
		*res = KVS_DS_ENGINE_SEQUENCE_LIMIT;
	else if (len > (uint64_t)c->max_num_batched_tokens)
		*res = KVS_DS_BATCH_TOKEN_LIMIT;
	else
		*res = KVS_DS_SUCCESS;
	return KV_OK;
}

kv_err
kvs_fastgen_stats(const kvs *s, struct kvs_fastgen_stats *out)
{
	const struct fg *f = fg_of(s);

	if (f == NULL || out == NULL)
		return KV_EINVAL;
	*out = f->st;
	return KV_OK;
}

/* ---- a step ------------------------------------------------------------ */

struct fg_step {
	kvs *s;
	kvc *k;
	struct fg *f;
	uint64_t budget, used;
	uint32_t maxseqs, nsched;
	uint32_t maxtracked;	/* min(max_tracked_sequences, S) */
};

static uint64_t
fg_pending(const kvc *k, int32_t seq)
{
	return kvc_seq_len(k, seq) - kvc_seq_computed(k, seq);
}

/* Remove r from queue q (it is there). */
static void
fg_queue_drop(kvs *s, kvs_queue q, kvs_req r)
{
	uint32_t n = kvs_queue_len(s, q);

	for (uint32_t i = 0; i < n; i++)
		if (kvs_queue_at(s, q, i) == r) {
			(void)kvs_queue_remove(s, q, i);
			return;
		}
}

/*
 * One request of _do_schedule_requests.  Returns 1 to go on, 0 to stop the
 * pass, or a negative kv_err.
 */
static int
fg_consider(struct fg_step *st, kvs_req r)
{
	uint64_t avail[KVC_MAX_GROUPS], blocks[KVC_MAX_GROUPS];
	int32_t seq = kvs_req_seq(st->s, r), sg;
	uint64_t pending = fg_pending(st->k, seq), want, grant;
	bool waiting = kvs_req_status(st->s, r) == KVS_WAITING;
	/* query() answers (0, 0) for a new uid while the tracker is full */
	bool untracked = waiting &&
			 kvs_queue_len(st->s, KVS_Q_RUNNING) >= st->maxtracked;
	kv_err e;

	if (st->nsched >= st->maxseqs)
		return 0;
	if (st->used >= st->budget)
		return 0;
	if (untracked)
		return pending > 1 ? 0 : 1;	/* MII: break, or continue */
	fg_avail(st->k, avail);
	if (pending > 1) {
		/* MII's deadlock guard: the whole prompt must fit now. */
		if (fg_query(st->k, seq, pending, avail, blocks, &sg) <
		    pending) {
			st->f->st.kv_limit++;
			st->f->st.kv_limit_group = (uint32_t)sg;
			return 0;
		}
	}
	want = st->budget - st->used;
	if (pending < want)
		want = pending;
	grant = fg_query(st->k, seq, want, avail, blocks, &sg);
	if (grant == 0) {
		if (sg >= 0) {
			st->f->st.kv_limit++;
			st->f->st.kv_limit_group = (uint32_t)sg;
		}
		return 1;
	}
	e = kvc_allocate(st->k, seq, (uint32_t)grant);
	if (e == KV_ENOSPC)
		return -(int)KV_EREF;	/* every group said it fits */
	if (e != KV_OK)
		return -(int)e;
	if (waiting) {
		fg_queue_drop(st->s, KVS_Q_WAITING, r);
		e = kvs_queue_insert(st->s, KVS_Q_RUNNING,
				     kvs_queue_len(st->s, KVS_Q_RUNNING), r);
		if (e != KV_OK)
			return -(int)e;
	}
	e = kvs_emit_sched(st->s, r, (uint32_t)grant);
	if (e != KV_OK)
		return -(int)e;
	st->f->flag[r] = FG_SCHED | (grant < pending ? FG_SPLIT : 0);
	st->used += grant;
	st->nsched++;
	return 1;
}

static bool
fg_ended(const kvs *s, kvs_req r)
{
	kvs_status st = kvs_req_status(s, r);

	return st != KVS_WAITING && st != KVS_RUNNING;
}

/* Sort v[0..n) by buffer key (insertion sort: a rare path). */
static void
fg_sort(kvs_req *v, uint32_t n, const int64_t *keys)
{
	for (uint32_t i = 1; i < n; i++) {
		kvs_req r = v[i];
		uint32_t j = i;

		while (j > 0 && keys[v[j - 1]] > keys[r]) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = r;
	}
}

/*
 * MII's reset_request_status: every tracked request, in buffer order, is
 * flushed and comes back as a prompt of all its tokens (same place).
 */
static kv_err
fg_reset(kvs *s, struct fg *f)
{
	uint32_t m = 0, i, nd = 0;
	kv_err e;

	for (i = 0; i < f->dec.n; i++) {
		kvs_req r = f->dec.a[f->dec.head + i];

		if (fg_ended(s, r))
			continue;
		if (kvs_req_status(s, r) == KVS_RUNNING)
			f->tmp[m++] = r;
		else
			f->dec.a[f->dec.head + nd++] = r;
	}
	f->dec.n = nd;
	for (i = 0; i < f->pro.n; i++) {
		kvs_req r = f->pro.a[f->pro.head + i];

		if (!fg_ended(s, r))
			f->tmp[m++] = r;
	}
	fg_sort(f->tmp, m, f->key);
	for (i = 0; i < m; i++) {
		kvs_req r = f->tmp[i];

		if (kvs_req_status(s, r) != KVS_RUNNING)
			continue;
		if ((e = kvs_preempt_recompute(s, r)) != KV_OK)
			return e;
		fg_queue_drop(s, KVS_Q_RUNNING, r);
		e = kvs_queue_insert(s, KVS_Q_WAITING,
				     kvs_queue_len(s, KVS_Q_WAITING), r);
		if (e != KV_OK)
			return e;
	}
	f->pro.head = 0;
	f->pro.n = 0;
	if ((e = fg_list_room(&f->pro, m)) != KV_OK)
		return e;
	memcpy(f->pro.a, f->tmp, (size_t)m * sizeof(*f->tmp));
	f->pro.n = m;
	f->st.resets++;
	return KV_OK;
}

static kv_err
fg_schedule(kvs *s, void *state)
{
	const struct kvs_config *c = kvs_config_of(s);
	const struct kvs_step *cur = kvs_current_step(s);
	struct fg *f = state;
	struct fg_step st;
	uint32_t i, m, visited = 0, nreq = kvs_nreqs(s);
	kv_err e;
	int rc = 1;

	if ((e = fg_grow(f, nreq)) != KV_OK ||
	    (e = fg_list_room(&f->dec, f->dec.n + (nreq - f->known))) !=
	    KV_OK ||
	    (e = fg_list_room(&f->pro, f->pro.n + (nreq - f->known))) != KV_OK)
		return e;
	/* Arrivals join the tail of their class. */
	for (; f->known < nreq; f->known++) {
		kvs_req r = (kvs_req)f->known;
		struct fg_list *l;

		if (fg_ended(s, r))
			continue;
		l = fg_pending(kvs_kv(s), kvs_req_seq(s, r)) == 1 ? &f->dec
								   : &f->pro;
		l->a[l->head + l->n++] = r;
		f->key[r] = f->back++;
	}

	memset(&st, 0, sizeof(st));
	st.s = s;
	st.k = kvs_kv(s);
	st.f = f;
	st.budget = (uint64_t)c->max_num_batched_tokens;
	st.maxseqs = (uint32_t)c->max_num_seqs;
	st.maxtracked = st.maxseqs < KVS_DS_MAX_TRACKED ? st.maxseqs :
			KVS_DS_MAX_TRACKED;
	/* Token generation first, then the prompts, each in buffer order. */
	for (i = 0; rc > 0 && i < f->dec.n; i++) {
		kvs_req r = f->dec.a[f->dec.head + i];

		if (!fg_ended(s, r) && (rc = fg_consider(&st, r)) < 0)
			return (kv_err)-rc;
	}
	for (rc = 1; rc > 0 && visited < f->pro.n; visited++) {
		kvs_req r = f->pro.a[f->pro.head + visited];

		if (!fg_ended(s, r) && (rc = fg_consider(&st, r)) < 0)
			return (kv_err)-rc;
	}

	if (st.nsched == 0 && kvs_nunfinished(s) > 0)
		return fg_reset(s, f);

	/*
	 * Next order.  Prompt class: split remainders of more than one token
	 * on the front (the last split first), then the visited prompts not
	 * scheduled, then the unvisited ones as they were.  Decode class:
	 * one-token remainders on the front likewise, the decodes not
	 * scheduled, then every other scheduled request in scheduling order
	 * (it samples a token: one pending token next step).
	 */
	m = 0;
	for (i = cur->nsched; i-- > 0;) {
		kvs_req r = cur->sched[i].req;

		if ((f->flag[r] & FG_SPLIT) &&
		    fg_pending(st.k, kvs_req_seq(s, r)) > 1) {
			f->tmp[m++] = r;
			f->key[r] = f->front--;
		}
	}
	for (i = 0; i < visited; i++) {
		kvs_req r = f->pro.a[f->pro.head + i];

		if (!fg_ended(s, r) && !(f->flag[r] & FG_SCHED))
			f->tmp[m++] = r;
	}
	/* The new prefix replaces the visited one. */
	f->pro.head += visited;
	f->pro.n -= visited;
	if ((e = fg_list_prepend(&f->pro, f->tmp, m)) != KV_OK)
		return e;

	m = 0;
	for (i = cur->nsched; i-- > 0;) {
		kvs_req r = cur->sched[i].req;

		if ((f->flag[r] & FG_SPLIT) &&
		    fg_pending(st.k, kvs_req_seq(s, r)) == 1) {
			f->tmp[m++] = r;
			f->key[r] = f->front--;
		}
	}
	for (i = 0; i < f->dec.n; i++) {
		kvs_req r = f->dec.a[f->dec.head + i];

		if (!fg_ended(s, r) && !(f->flag[r] & FG_SCHED))
			f->tmp[m++] = r;
	}
	for (i = 0; i < cur->nsched; i++) {
		kvs_req r = cur->sched[i].req;

		if (!(f->flag[r] & FG_SPLIT)) {
			f->tmp[m++] = r;
			f->key[r] = f->back++;
		}
		f->flag[r] = 0;
	}
	f->dec.head = 0;
	f->dec.n = 0;
	if ((e = fg_list_room(&f->dec, m)) != KV_OK)
		return e;
	if (m > 0)
		memcpy(f->dec.a, f->tmp, (size_t)m * sizeof(*f->tmp));
	f->dec.n = m;
	return KV_OK;
}

const struct kvs_policy kvs__fastgen_policy = {
	.abi = KVS_ABI,
	.name = "deepspeed-fastgen",
	.mode = KVC_DEEPSPEED,
	.configure = fg_configure,
	.init = fg_init,
	.release = fg_release,
	.schedule = fg_schedule,
};
