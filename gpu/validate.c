/*
 * validate.c -- the verifier (kvval.h).
 *
 * Per request (by kvs handle) it keeps how many positions hold KV data
 * (valid), how many table entries it has seen (nblk), whether it must be
 * checked whole at the next computed() (full), and the content key of its
 * last written position, so a decode step costs O(1) keys.
 *
 * Poison rule: a table entry the request had not seen before, for
 * positions it has not computed, is a fresh block and is poisoned before
 * the step writes it.  A prefix-cache hit covers computed positions only,
 * so a shared block is never poisoned; if the allocator ever handed out a
 * block another request still uses, the poison shows in that request's
 * next check.
 *
 * Cost: a step costs O(tokens written + blocks moved); a whole check costs
 * O(context) and happens on admission, swap-in, recompute, CoW and finish
 * only.  Memory: one small record per request ever seen, a few words per
 * device block, and scratch lists that grow to the largest step.
 */
#include "config.h"

#include "gpu/kvval.h"
#include "gpu/kv_pattern.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vreq {
	uint32_t valid;		/* positions 0..valid-1 hold KV data */
	uint32_t nblk;		/* table entries seen while running */
	uint32_t kpos;		/* khash = key(kpos - 1) */
	uint8_t running, full;
	uint64_t khash;
};

struct vrange {
	kvs_req r;
	size_t from;		/* first slot in the verify list */
};

struct kvval {
	kvgpu *g;
	struct kvval_opts o;
	struct kvval_stats st;
	uint32_t bs, nblocks;
	struct vreq *req;
	size_t capreq;
	struct kvgpu_slot *slot;
	size_t nslot, capslot;
	struct kvgpu_pair *pair;
	size_t cappair;
	int32_t *blk;
	size_t nblk, capblk;
	struct vrange *vr;
	size_t nvr, capvr;
	uint64_t *stamp;	/* per device block: last scan or CoW mark */
	uint32_t *fill;		/* per device block: written slots */
	uint8_t *seen;		/* per block of either pool: dedup */
	uint64_t tick;
};

static int
grow(void *pp, size_t *cap, size_t need, size_t size)
{
	void **p = pp;
	size_t n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * size);
	if (q == NULL)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

kvval *
kvval_new(kvgpu *g, const struct kvval_opts *o)
{
	kvval *v = calloc(1, sizeof(*v));
	const struct kvgpu_geom *geo = kvgpu_geom_of(g);

	if (v == NULL)
		return NULL;
	v->g = g;
	v->o = *o;
	v->bs = geo->block_size;
	v->nblocks = geo->dev_blocks;
	v->stamp = calloc(v->nblocks, sizeof(*v->stamp));
	v->fill = calloc(v->nblocks, sizeof(*v->fill));
	v->seen = calloc((size_t)(geo->dev_blocks > geo->host_blocks ?
				  geo->dev_blocks : geo->host_blocks), 1);
	if (v->stamp == NULL || v->fill == NULL || v->seen == NULL) {
		kvval_free(v);
		return NULL;
	}
	return v;
}

void
kvval_free(kvval *v)
{
	if (v == NULL)
		return;
	free(v->req);
	free(v->slot);
	free(v->pair);
	free(v->blk);
	free(v->vr);
	free(v->stamp);
	free(v->fill);
	free(v->seen);
	free(v);
}

const struct kvval_stats *
kvval_stats(const kvval *v)
{
	return &v->st;
}

static int
oom(char *why, size_t len)
{
	snprintf(why, len, "verifier: out of memory");
	return 1;
}

static int
dev_fail(kvval *v, const char *what, char *why, size_t len)
{
	snprintf(why, len, "%s: %s: %s", kvgpu_name(v->g), what,
		 kvgpu_errmsg(v->g));
	return 1;
}

static void failure(kvval *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
failure(kvval *v, const char *fmt, ...)
{
	va_list ap;

	if (v->st.failures++ > 0)
		return;
	va_start(ap, fmt);
	vsnprintf(v->st.first_failure, sizeof(v->st.first_failure), fmt, ap);
	va_end(ap);
}

static struct vreq *
vreq_of(kvval *v, kvs_req r)
{
	size_t old = v->capreq;

	if ((size_t)r >= v->capreq) {
		if (grow(&v->req, &v->capreq, (size_t)r + 1, sizeof(*v->req)))
			return NULL;
		memset(v->req + old, 0, (v->capreq - old) * sizeof(*v->req));
	}
	return &v->req[r];
}

/* ---- slot lists ------------------------------------------------------- */

/*
 * Append the slots of positions [from, to) of request r (whose table is
 * read from the allocator) to v->slot.  Keys are chained from the cached
 * one when it is at `from`, else from position 0.  A position without a
 * block is a failure; null blocks (sliding window) are skipped.
 */
static int
add_slots(kvval *v, kvs *s, kvs_req r, uint32_t from, uint32_t to,
	  char *why, size_t len)
{
	kvc *k = kvs_kv(s);
	int32_t seq = kvs_req_seq(s, r);
	struct vreq *q = &v->req[r];
	size_t ntok, ntab;
	const uint32_t *tok = kvc_seq_tokens(k, seq, &ntok);
	const int32_t *tab = kvc_table(k, seq, 0, &ntab);
	uint64_t key = KVGPU_KEY_ROOT;
	uint32_t p = 0;

	if (to > ntok)
		to = (uint32_t)ntok;
	if (from >= to)
		return 0;
	if (q->kpos > 0 && q->kpos <= from) {
		p = q->kpos;
		key = q->khash;
	}
	for (; p < from; p++)
		key = kvgpu_key_next(key, tok[p]);
	if (grow(&v->slot, &v->capslot, v->nslot + (to - from),
		 sizeof(*v->slot)))
		return oom(why, len);
	for (; p < to; p++) {
		size_t b = p / v->bs;

		key = kvgpu_key_next(key, tok[p]);
		if (b >= ntab) {
			failure(v, "step %llu: request %ld: position %u has no "
				"block (table of %zu)",
				(unsigned long long)v->st.steps, (long)r, p,
				ntab);
			break;
		}
		if (tab[b] == KVC_NULL)
			continue;
		v->slot[v->nslot++] = (struct kvgpu_slot){
			.block = tab[b], .slot = p % v->bs, .pos = p,
			.key = key };
	}
	q->kpos = p;
	q->khash = key;
	return 0;
}

/* Verify v->slot (ranges in v->vr); count failures, fold the digest. */
static int
check(kvval *v, kvs *s, enum kvgpu_side side, const char *what, char *why,
      size_t len)
{
	struct kvgpu_verdict d;
	size_t i;
	kv_err e;

	if (v->nslot == 0)
		return 0;
	e = kvgpu_verify(v->g, side, v->slot, v->nslot, &d);
	if (e != KV_OK)
		return dev_fail(v, "verify", why, len);
	v->st.verifies++;
	v->st.verified_slots += v->nslot;
	v->st.verified_words += d.words;
	v->st.full_checks += v->nvr;
	if (d.mismatches > 0) {
		const struct kvgpu_slot *b = &v->slot[d.first];

		for (i = 1; i < v->nvr && v->vr[i].from <= (size_t)d.first;
		     i++)
			;
		v->st.mismatched_words += d.mismatches;
		failure(v, "step %llu: %s: %llu of %llu words of %zu "
			"request(s) differ; first: request %ld position %u "
			"(%s block %d slot %u) layer %u %s word %u: want %08x "
			"got %08x", (unsigned long long)v->st.steps, what,
			(unsigned long long)d.mismatches,
			(unsigned long long)d.words, v->nvr,
			(long)v->vr[i - 1].r, b->pos,
			side == KVGPU_DEV ? "device" : "host", b->block,
			b->slot, d.first_layer, d.first_kv ? "V" : "K",
			d.first_word, d.want, d.got);
	}
	/* digest: the whole blocks of the checked requests */
	v->nblk = 0;
	for (i = 0; i < v->nvr; i++) {
		kvc *k = kvs_kv(s);
		size_t ntab;
		const int32_t *tab = kvc_table(k, kvs_req_seq(s, v->vr[i].r),
					       0, &ntab);

		if (grow(&v->blk, &v->capblk, v->nblk + ntab,
			 sizeof(*v->blk)))
			return oom(why, len);
		for (size_t j = 0; j < ntab; j++)
			if (tab[j] != KVC_NULL)
				v->blk[v->nblk++] = tab[j];
	}
	if (v->nblk > 0) {
		uint64_t dg;

		if (kvgpu_digest(v->g, side, v->blk, v->nblk, &dg) != KV_OK)
			return dev_fail(v, "digest", why, len);
		v->st.digest = kvgpu_mix64(v->st.digest ^ dg) + side;
	}
	return 0;
}

static int
add_range(kvval *v, kvs_req r, char *why, size_t len)
{
	if (grow(&v->vr, &v->capvr, v->nvr + 1, sizeof(*v->vr)))
		return oom(why, len);
	v->vr[v->nvr].r = r;
	v->vr[v->nvr].from = v->nslot;
	v->nvr++;
	return 0;
}

/* ---- copies --------------------------------------------------------- */

static int
copy(kvval *v, enum kvgpu_dir dir, const struct kvc_pair *p, uint32_t n,
     char *why, size_t len)
{
	const struct kvgpu_geom *geo = kvgpu_geom_of(v->g);
	struct kvval_class *c = &v->st.cls[dir];
	struct kvgpu_timing t;
	size_t m;

	if (n == 0)
		return 0;
	if (grow(&v->pair, &v->cappair, n, sizeof(*v->pair)) ||
	    grow(&v->blk, &v->capblk, n, sizeof(*v->blk)))
		return oom(why, len);
	/*
	 * vLLM v0 with prefix caching may name one destination twice in a
	 * map: swap-in copies a block to a fresh device block, promotion
	 * then finds the same content cached, frees the fresh block, and the
	 * next pair of the same map reuses it; or two device blocks of equal
	 * content go to one cached CPU block.  The engine copies block by
	 * block in map order, so the last pair to a destination wins.  A
	 * batch must be independent (kvgpu.h): keep only the last pair to
	 * each destination, in map order.  (An engine batching such a map
	 * into one unordered call would race.)
	 */
	m = n;
	for (uint32_t i = n; i-- > 0;) {
		if (v->seen[p[i].dst]) {
			v->st.dup_dsts++;
			continue;
		}
		v->seen[p[i].dst] = 1;
		m--;
		v->pair[m].src = p[i].src;
		v->pair[m].dst = p[i].dst;
		v->blk[m] = p[i].dst;
	}
	if (m > 0) {
		memmove(v->pair, v->pair + m, (n - m) * sizeof(*v->pair));
		memmove(v->blk, v->blk + m, (n - m) * sizeof(*v->blk));
	}
	m = n - m;
	for (size_t i = 0; i < m; i++)
		v->seen[v->blk[i]] = 0;
	/* a destination is overwritten whole: poison it first, so that a
	 * chunk that never arrives cannot pass for stale good data */
	if (kvgpu_poison(v->g, dir == KVGPU_D2H ? KVGPU_HOST : KVGPU_DEV,
			 v->blk, m) != KV_OK)
		return dev_fail(v, "poison", why, len);
	if (kvgpu_copy(v->g, dir, v->o.strat, v->pair, m, &t) != KV_OK)
		return dev_fail(v, kvgpu_dir_name(dir), why, len);
	c->batches++;
	c->blocks += m;
	c->calls += v->o.strat == KVGPU_PER_CHUNK ? kvgpu_chunks(geo) : 1;
	c->chunks += (uint64_t)m * kvgpu_chunks(geo);
	c->bytes += (uint64_t)m * kvgpu_block_bytes(geo);
	c->dev_ns += t.dev_ns;
	c->submit_ns += t.submit_ns;
	return 0;
}

/* ---- the hooks -------------------------------------------------------- */

int
kvval_scheduled(kvval *v, kvs *s, const struct kvs_step *st,
		const uint32_t *start, char *why, size_t len)
{
	kvc *k = kvs_kv(s);
	int rc;

	v->st.steps++;
	v->tick++;
	if ((rc = copy(v, KVGPU_D2H, st->swap_out, st->nswap_out, why, len)))
		return rc;
	/* the host copies of every request swapped out */
	v->nslot = v->nvr = 0;
	for (uint32_t i = 0; i < st->npreempt; i++) {
		struct vreq *q = vreq_of(v, st->preempt[i]);

		if (q == NULL)
			return oom(why, len);
		q->running = 0;
		q->nblk = 0;
		if (!st->preempt_swap[i]) {
			v->st.preempt_recompute++;
			q->valid = 0;
			continue;
		}
		v->st.preempt_swap++;
		if ((rc = add_range(v, st->preempt[i], why, len)) ||
		    (rc = add_slots(v, s, st->preempt[i], 0, q->valid, why,
				    len)))
			return rc;
	}
	if ((rc = check(v, s, KVGPU_HOST, "after swap-out", why, len)))
		return rc;
	if ((rc = copy(v, KVGPU_H2D, st->swap_in, st->nswap_in, why, len)) ||
	    (rc = copy(v, KVGPU_D2D, st->cow, st->ncow, why, len)))
		return rc;
	for (uint32_t i = 0; i < st->ncow; i++)
		v->stamp[st->cow[i].dst] = ~v->tick;
	/* fresh blocks of the scheduled requests */
	v->nblk = 0;
	for (uint32_t i = 0; i < st->nsched; i++) {
		kvs_req r = st->sched[i].req;
		struct vreq *q = vreq_of(v, r);
		size_t ntab;
		const int32_t *tab;

		if (q == NULL)
			return oom(why, len);
		tab = kvc_table(k, kvs_req_seq(s, r), 0, &ntab);
		if (!q->running || q->valid != start[i])
			q->full = 1;
		q->running = 1;
		q->valid = start[i];
		if (grow(&v->blk, &v->capblk, v->nblk + ntab,
			 sizeof(*v->blk)))
			return oom(why, len);
		for (size_t b = q->nblk; b < ntab; b++)
			if (tab[b] != KVC_NULL &&
			    (uint64_t)b * v->bs >= start[i])
				v->blk[v->nblk++] = tab[b];
		for (size_t b = 0; st->ncow > 0 && b < ntab; b++)
			if (tab[b] != KVC_NULL && v->stamp[tab[b]] == ~v->tick)
				q->full = 1;
		q->nblk = (uint32_t)ntab;
	}
	if (kvgpu_poison(v->g, KVGPU_DEV, v->blk, v->nblk) != KV_OK)
		return dev_fail(v, "poison", why, len);
	return 0;
}

/* Whether r gains its last token in this step (kvs_complete's rule). */
static bool
finishing(kvs *s, kvs_req r, uint32_t end, size_t ntok)
{
	const struct kvc_config *kc = kvc_config_of(kvs_kv(s));

	if (end < ntok)
		return false;
	return kvs_req_generated(s, r) + 1 >= kvs_req_max_output(s, r) ||
	       ntok + 1 >= kc->max_model_len;
}

static int
frag_scan(kvval *v, kvs *s, char *why, size_t len)
{
	kvc *k = kvs_kv(s);
	uint32_t nrun = kvs_queue_len(s, KVS_Q_RUNNING);
	uint64_t expect = 0, got;

	v->tick++;
	v->nblk = 0;
	for (uint32_t i = 0; i < nrun; i++) {
		kvs_req r = kvs_queue_at(s, KVS_Q_RUNNING, i);
		struct vreq *q = vreq_of(v, r);
		size_t ntab;
		const int32_t *tab = kvc_table(k, kvs_req_seq(s, r), 0, &ntab);

		if (q == NULL ||
		    grow(&v->blk, &v->capblk, v->nblk + ntab, sizeof(*v->blk)))
			return oom(why, len);
		for (size_t b = 0; b < ntab; b++) {
			int32_t id = tab[b];
			uint64_t lo = (uint64_t)b * v->bs;
			uint32_t f = q->valid <= lo ? 0 :
				     q->valid - lo >= v->bs ? v->bs :
				     (uint32_t)(q->valid - lo);

			if (id == KVC_NULL)
				continue;
			if (v->stamp[id] != v->tick) {
				v->stamp[id] = v->tick;
				v->fill[id] = 0;
				v->blk[v->nblk++] = id;
			}
			if (f > v->fill[id])
				v->fill[id] = f;
		}
	}
	for (size_t i = 0; i < v->nblk; i++)
		expect += v->bs - v->fill[v->blk[i]];
	if (kvgpu_scan_poison(v->g, KVGPU_DEV, v->blk, v->nblk, &got) !=
	    KV_OK)
		return dev_fail(v, "scan", why, len);
	v->st.frag_scans++;
	v->st.frag_live_blocks += v->nblk;
	v->st.frag_poison_slots += got;
	v->st.frag_expected_slots += expect;
	if (got != expect) {
		v->st.frag_mismatches++;
		failure(v, "step %llu: fragmentation: %llu poisoned slots in "
			"%zu live blocks, %llu unwritten expected",
			(unsigned long long)v->st.steps,
			(unsigned long long)got, v->nblk,
			(unsigned long long)expect);
	}
	return 0;
}

int
kvval_computed(kvval *v, kvs *s, const struct kvs_step *st,
	       const uint32_t *start, char *why, size_t len)
{
	kvc *k = kvs_kv(s);
	int rc;

	v->nslot = v->nvr = 0;
	for (uint32_t i = 0; i < st->nsched; i++) {
		kvs_req r = st->sched[i].req;
		size_t ntok;

		(void)kvc_seq_tokens(k, kvs_req_seq(s, r), &ntok);
		if ((rc = add_slots(v, s, r, start[i],
				    start[i] + st->sched[i].ntokens, why, len)))
			return rc;
	}
	if (kvgpu_fill(v->g, KVGPU_DEV, v->slot, v->nslot) != KV_OK)
		return dev_fail(v, "fill", why, len);
	v->st.written_slots += v->nslot;
	v->nslot = 0;
	for (uint32_t i = 0; i < st->nsched; i++) {
		kvs_req r = st->sched[i].req;
		struct vreq *q = &v->req[r];
		uint32_t end = start[i] + st->sched[i].ntokens;
		size_t ntok;

		(void)kvc_seq_tokens(k, kvs_req_seq(s, r), &ntok);
		if (end > ntok)
			end = (uint32_t)ntok;
		q->valid = end;
		if (!q->full && !finishing(s, r, end, ntok))
			continue;
		q->full = 0;
		if ((rc = add_range(v, r, why, len)) ||
		    (rc = add_slots(v, s, r, 0, q->valid, why, len)))
			return rc;
	}
	if ((rc = check(v, s, KVGPU_DEV, "after compute", why, len)))
		return rc;
	if (v->o.frag_every > 0 && v->st.steps % v->o.frag_every == 0)
		return frag_scan(v, s, why, len);
	return 0;
}

int
kvval_completed(kvval *v, kvs *s, const struct kvs_step *st, char *why,
		size_t len)
{
	(void)s;
	for (uint32_t i = 0; i < st->nfinish; i++) {
		struct vreq *q = vreq_of(v, st->finish[i]);

		if (q == NULL)
			return oom(why, len);
		memset(q, 0, sizeof(*q));
	}
	return 0;
}
