/*
 * kv_v1.c -- mode vllm-v1: vLLM v1's KVCacheManager over one BlockPool
 * (vllm-project/vllm at 5e5a7eb16f12: vllm/v1/core/{kv_cache_manager,
 * block_pool,kv_cache_coordinator,single_type_kv_cache_manager}.py),
 * reproduced decision for decision and id for id (docs/replay.md R11,
 * R18-R27; core-spec §3).
 *
 * The pool.  Ids 0..G-1, all groups share them; id 0 is the null block,
 * taken out at start-up and never freed (tables show it as KVC_NULL).  The
 * free queue is a FIFO (a ring of ids, v1q_*): allocation pops the front, a
 * free appends at the back, so it is also the eviction order.  A request is
 * freed group by group, each table tail first, so within a request the
 * deepest block is evicted first and across requests the earlier-freed one
 * (LRU).  Touching a cached free block (a prefix hit) takes it out of the
 * middle.
 *
 * The prefix index.  With caching on, a block that becomes full inside
 * allocate_slots() gets the chain hash of its tokens and is entered under
 * (hash, group).  Duplicates are allowed (v1 never de-duplicates, so tables
 * stay append-only): each (hash, group) keeps its blocks in a ring in
 * insertion order and a hit returns the oldest one still present (the first
 * key of the reference's dict).  Eviction is lazy: a freed block keeps its
 * hash and stays findable until it is popped for reuse, which clears it.
 *
 * allocate_slots(req, k, h, hits, L), the one action, in the reference's
 * order: (1) k > 0; (2) remove_skipped_blocks() with the request's current
 * C frees sliding-window blocks that left the window, newest first --
 * before the capacity check, so a failure keeps that release (R16); (3)
 * need = min(C + h + k + L, max_model_len); (4) per group cdiv(need, bs) -
 * hits - held + hits that are free now, summed *signed* over the groups;
 * (5) sum > free -> fail, nothing else changes; (6) touch the hits, add
 * them, pop the new blocks group by group; (7) cache the full blocks of
 * the first min(C + h + k, T) tokens (lookahead slots never).  Where the
 * signed sum passes but the blocks really taken exceed the free count (a
 * group holding surplus lookahead blocks offsets another's need) the
 * reference raises in get_new_blocks(); we fail with KV_EREF instead.
 *
 * Hits (get_computed_blocks) are capped at T - 1 tokens.  One group: the
 * group's own search (full: leftmost run; sliding: from the right, the
 * first cdiv(W-1, bs) contiguous hits, nulls to their left, or else a run
 * from block 0; state/Mamba: the right-most cached block, nulls to its
 * left).  Several groups with caching: the full-attention hit first, then
 * the other kind within it, and the full hit cut to that length.
 *
 * Invariants (kvc_audit, numbered as core-spec §8.3 where they match):
 *   1  ref[b] == table slots naming b, for every non-null id;
 *   2  free queue == { b != 0 : ref[b] == 0 }, well linked, no id twice;
 *   3  used + free == G - 1;
 *   4  every hashed block sits in the ring of its (hash, group), every ring
 *      member carries that key, one map entry per ring; a block in use
 *      carries the hash of its own slot in its table (no stale hash), and
 *      every slot below the request's cached count is hashed or null (a
 *      lazily cached sequence's may be unmarked while it runs);
 *   5  full-attention tables hold no null, other tables nulls only as a
 *      prefix; a RUNNING table covers its computed tokens and never more
 *      than max_model_len;
 *   8  WAITING: C = 0, no blocks; RUNNING: 1 <= C <= T <= max_model_len;
 *   9  the per-sequence hash cache matches the tokens.
 *
 * Costs.  Everything is sized at init from gpu_blocks and max_model_len;
 * an operation allocates only when a table or a sequence's hash cache
 * outgrows its capacity (doubling).  allocate_slots is O(blocks it touches
 * + the hit search); the hit search is O(T / bs) at worst (sliding window
 * from the right, Mamba); hashes are computed once per full block.
 *
 * Rejected: keeping the reference's per-request dict of blocks (the tables
 * of kv_mgr.c are that list already); de-duplicating on fill like v0 (would
 * change ids the reference hands out); clamping a group's negative need to
 * zero (the reference sums signed needs at the pinned commit).
 */
#include "kv_int.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define V1_NULL 0		/* the null block's id in the pool */
#define V1_NOSHIFT 0xff		/* block size not a power of two */
#define V1_AHEAD 4		/* prefetch index slots this far ahead */
/*
 * dnext of a block a keyed sequence cached that is not in the index yet
 * (v1_cache_blocks): only that sequence can hit it, and it looks blocks up
 * only when it is scheduled again, so it enters the index then
 * (v1_lazy_flush), behind whatever was cached before it, if it is still
 * cached.  Until then its hkey holds its position in the sequence + 1 (set
 * when the sequence is freed but not for good: v1_lazy_marks), and its
 * hash is taken only at the flush: the index is spared one insert and
 * one delete, and the hash chain one link, per block of every prompt no
 * other can share.
 */
#define V1_LAZY (-2)

/* Per sequence, mode-private. */
struct v1_sx {
	uint64_t *h;		/* chain hashes of the full blocks of tok[] */
	uint32_t nh, caph;
	uint32_t ncached[KVC_MAX_GROUPS];	/* num_cached_block */
	uint64_t extra;		/* the block hashes' extra key: the LoRA
				 * adapter (kvc__v1_set_extra); 0 none */
	/* V1_LAZY blocks it held when last freed, cache order, each with
	 * its generation then (v1_lazy_keep) */
	int32_t *lazy;
	uint32_t *lazygen;
	uint32_t nlazy, caplazy;
};

/* What allocate_slots() would do now; v1_plan() fills it, purely. */
struct v1_plan {
	int64_t sum;		/* the reference's signed total */
	uint64_t take;		/* blocks really leaving the free queue */
	uint32_t skipfree;	/* blocks remove_skipped_blocks() would free */
	uint32_t need;		/* num_tokens_need_slot */
	uint32_t pop[KVC_MAX_GROUPS];	/* fresh blocks per group */
	uint32_t evict[KVC_MAX_GROUPS];	/* free hit blocks reclaimed */
	bool fits;		/* sum <= free after the skip */
	bool eref;		/* fits, but the reference would raise */
	int32_t defer;		/* the state group whose hit was cached in
				 * this step (then not fits), or -1 */
};

/*
 * Per block, in one record: popping a block for reuse reads and clears all
 * of it, and separate arrays cost a cache miss each.
 */
struct v1_blk {
	uint64_t hkey;		/* its hash, 0 = none (V1_LAZY: position + 1) */
	uint32_t ref;
	int32_t qslot;		/* its free-queue slot, -1 = none (next to
				 * ref: a free or a take writes both) */
	int32_t dnext, dprev;	/* ring of one (hash, group) */
	uint32_t gen;		/* hashes it lost (v1_evict): v1_hit_memo */
	uint8_t hgrp;		/* the group of its hash */
};

/* ref and qslot as the one 64-bit word they make in the record, for a
 * free's usual block: one load and one store where each field took its
 * own. */
_Static_assert(offsetof(struct v1_blk, qslot) ==
	       offsetof(struct v1_blk, ref) + sizeof(uint32_t),
	       "ref and qslot must be adjacent");

static inline uint64_t
v1_refslot(uint32_t ref, int32_t qslot)
{
	const struct { uint32_t ref; int32_t qslot; } r = { ref, qslot };
	uint64_t w;

	memcpy(&w, &r, sizeof(w));
	return w;
}

/* The word of bk (the bytes of the record, not of its ref alone). */
static inline uint64_t
v1_refslot_of(const struct v1_blk *bk)
{
	uint64_t w;

	memcpy(&w, (const char *)bk + offsetof(struct v1_blk, ref), sizeof(w));
	return w;
}

static inline void
v1_refslot_set(struct v1_blk *bk, uint64_t w)
{
	memcpy((char *)bk + offsetof(struct v1_blk, ref), &w, sizeof(w));
}

/*
 * The free queue: FreeKVCacheBlockQueue's order (append at the back, pop
 * the front, take out of the middle) kept in a ring of ids rather than a
 * linked list.  Taking an id out of the middle leaves a hole (-1) that
 * pops skip; the ring holds at least twice the pool, so when it fills at
 * least half of it is holes, and squeezing them out (order kept) costs O(1)
 * amortised.  Pops and appends then walk memory in order where the list
 * chased a link, two cache misses per block, for every block reused.
 */
struct v1_fifo {
	int32_t *ring;		/* ids, -1 = hole */
	uint32_t mask;		/* capacity - 1, a power of two */
	uint32_t head;		/* slot of the front */
	uint32_t used;		/* slots from head on, holes included */
	uint32_t n;		/* ids queued */
};

struct v1 {
	uint32_t nblk;		/* G, the null block included */
	struct v1_blk *blk;
	struct v1_fifo fq;	/* the free queue */
	struct kv_hmap map[KVC_MAX_GROUPS];	/* hash -> oldest block */
	bool caching;
	bool lazyok;		/* keyed sequences cache lazily (v1_lazy_on) */
	bool hybrid;		/* HybridKVCacheCoordinator */
	uint32_t fullmask, othermask;	/* groups by kind, hybrid only */
	uint32_t slidemask;	/* sliding-window groups (skipped blocks) */
	bool onegroup;		/* one full group, block size 2^k */
	uint8_t bshift[KVC_MAX_GROUPS];	/* log2 of the block size */
	struct v1_sx *sx;
	uint32_t capsx;
	/*
	 * With caching and a state group (track): the (hash, group, block)
	 * of every state-group block cached since kvc_step_begin(), vLLM's
	 * cached_blocks_this_step.  defer_same_step_state_hits (guard) makes
	 * an admission whose state hit ends on such a hash wait; without it
	 * the hit is stale (kvc__v1_stale).  A step caches few state blocks
	 * (512-token blocks), so a list is searched.
	 */
	bool track, guard;
	struct v1_key {
		uint64_t h;
		uint32_t g;
		int32_t b;
	} *stepk;
	uint32_t nstepk, capstepk;
	/*
	 * Blocks whose hash outlived their KV: the chunk that filled them was
	 * withdrawn in the step that cached them (kvc__v1_withdraw).
	 * lost[b] = 1 + the leading slots of b that hold KV; 0 = nothing
	 * lost.  Allocated at the first withdrawal; a mark goes with the
	 * hash (v1_evict).  nlost: blocks marked.
	 */
	uint32_t *lost;
	uint32_t nlost;
	/* scratch for the hit of the request being planned (0 = null) */
	int32_t *hit[KVC_MAX_GROUPS];
	uint32_t caphit[KVC_MAX_GROUPS];
	uint32_t nhit[KVC_MAX_GROUPS];
	/*
	 * The last full-attention hit found (v1_hit_memo): sequence s with
	 * ntok tokens hit n blocks b[], each then of generation gen[]; its
	 * hashes at n - 1 and n (the first miss).  A request waiting for
	 * room is looked up again every step, its hit unchanged while those
	 * blocks keep their hashes and the miss stays a miss.
	 */
	struct v1_memo {
		bool valid;
		int32_t s;
		uint32_t ntok, n, cap;
		uint64_t hlast, hmiss;
		int32_t *b;
		uint32_t *gen;
		uint64_t nevict;	/* v1.nevict when gen[] held */
	} memo;
	uint64_t nevict;	/* hashes lost (v1_evict), all blocks */
};

static inline struct v1 *
v1_of(const kvc *k)
{
	return (struct v1 *)k->ms;
}

static inline uint32_t
v1_cdiv(uint64_t a, uint32_t b)
{
	return (uint32_t)((a + b - 1) / b);
}

static inline kvc_kind
v1_kind(const kvc *k, uint32_t g)
{
	return k->cfg.group[g].kind;
}

/*
 * n / bs and cdiv(n, bs) for group g: a shift for the usual power-of-two
 * block sizes (a division per decode step was measurable), else a divide.
 */
static inline uint64_t
v1_div(const kvc *k, const struct v1 *m, uint32_t g, uint64_t n)
{
	return m->bshift[g] != V1_NOSHIFT ? n >> m->bshift[g] :
	    n / kvc__bs(k, g);
}

static inline uint32_t
v1_cdiv_g(const kvc *k, const struct v1 *m, uint32_t g, uint64_t n)
{
	return (uint32_t)v1_div(k, m, g, n + kvc__bs(k, g) - 1);
}

/* ---- configuration -------------------------------------------------- */

static kv_err
v1_check_config(const struct kvc_config *c, char *why, size_t whylen)
{
	uint32_t ng = c->ngroups ? c->ngroups : 1;
	uint32_t bs0, nfull = 0, nother = 0, other = 0;
	int32_t maxfull = -1, minfull = -1, maxoth = -1, minoth = -1;

	if (c->cpu_blocks != 0)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				    "vllm-v1 has no CPU pool: cpu_blocks must "
				    "be 0");
	if (c->watermark != 0.0)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				    "vllm-v1 has no watermark: watermark must "
				    "be 0");
	if (c->reuse == KVC_REUSE_LIFO)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				    "vllm-v1 reuses blocks FIFO (its free "
				    "queue is the eviction order)");
	if (c->gpu_blocks < 1)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				    "gpu_blocks must be at least 1 (the null "
				    "block)");
	if (!c->prefix_caching || ng < 2)
		return KV_OK;
	bs0 = c->group[0].block_size ? c->group[0].block_size : c->block_size;
	for (uint32_t g = 0; g < ng; g++) {
		const struct kvc_group_config *gc = &c->group[g];
		uint32_t bs = gc->block_size ? gc->block_size : c->block_size;

		if (bs != bs0)
			return kvc__failbuf(why, whylen, KV_ECONFIG,
					    "vllm-v1 with prefix caching: all "
					    "groups share one block size "
					    "(group %s has %u, not %u)",
					    gc->name, bs, bs0);
		if (gc->kind == KVC_FULL) {
			nfull++;
			if (minfull < 0)
				minfull = (int32_t)g;
			maxfull = (int32_t)g;
			continue;
		}
		if (nother > 0 && (gc->kind != c->group[other].kind ||
				   gc->window != c->group[other].window))
			return kvc__failbuf(why, whylen, KV_ECONFIG,
					    "vllm-v1 with prefix caching: the "
					    "non-full groups must all be one "
					    "kind with one window (%s differs "
					    "from %s)", gc->name,
					    c->group[other].name);
		if (nother++ == 0)
			other = g;
		if (minoth < 0)
			minoth = (int32_t)g;
		maxoth = (int32_t)g;
	}
	if (nfull == 0 || nother == 0)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				    "vllm-v1 with prefix caching and several "
				    "groups needs full-attention groups and "
				    "exactly one other kind "
				    "(HybridKVCacheCoordinator)");
	if (!(maxfull < minoth || maxoth < minfull))
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				    "vllm-v1 with prefix caching: full and "
				    "other groups must not interleave");
	return KV_OK;
}

/* ---- the free queue --------------------------------------------------- */

static kv_err
v1q_init(struct v1_fifo *f, uint32_t G)
{
	uint32_t cap = 2;

	while (cap < 2 * (uint64_t)G)
		cap <<= 1;
	f->ring = malloc(cap * sizeof(*f->ring));
	if (f->ring == NULL)
		return KV_ENOMEM;
	f->mask = cap - 1;
	f->head = f->used = f->n = 0;
	return KV_OK;
}

static inline bool
v1q_has(const struct v1 *m, int32_t b)
{
	return m->blk[b].qslot >= 0;
}

/* Drop the holes, keeping the order of the ids. */
static void
v1q_squeeze(struct v1 *m)
{
	struct v1_fifo *f = &m->fq;
	uint32_t w = 0;

	for (uint32_t r = 0; r < f->used; r++) {
		int32_t b = f->ring[(f->head + r) & f->mask];
		uint32_t slot = (f->head + w) & f->mask;

		if (b < 0)
			continue;
		f->ring[slot] = b;	/* w <= r: nothing unread is hit */
		m->blk[b].qslot = (int32_t)slot;
		w++;
	}
	f->used = w;
}

/* Append b (not queued) at the back. */
static void
v1q_push(struct v1 *m, int32_t b)
{
	struct v1_fifo *f = &m->fq;
	uint32_t slot;

	if (f->used > f->mask)
		v1q_squeeze(m);	/* full: at least half of it holes */
	slot = (f->head + f->used) & f->mask;
	f->ring[slot] = b;
	m->blk[b].qslot = (int32_t)slot;
	f->used++;
	f->n++;
}

/* Take the front id off, or -1 when the queue is empty. */
static int32_t
v1q_pop(struct v1 *m)
{
	struct v1_fifo *f = &m->fq;
	int32_t b;

	if (f->n == 0)
		return -1;
	while ((b = f->ring[f->head]) < 0) {	/* holes at the front */
		f->head = (f->head + 1) & f->mask;
		f->used--;
	}
	f->head = (f->head + 1) & f->mask;
	f->used--;
	f->n--;
	m->blk[b].qslot = -1;
	return b;
}

/* Take queued b out of the middle. */
static void
v1q_remove(struct v1 *m, int32_t b)
{
	m->fq.ring[m->blk[b].qslot] = -1;
	m->blk[b].qslot = -1;
	m->fq.n--;
}

/* 0 when ring, slots and count agree, else a positive code. */
static int
v1q_check(const struct v1 *m)
{
	const struct v1_fifo *f = &m->fq;
	uint32_t live = 0;

	if (f->used > f->mask + 1 || f->n > f->used || f->head > f->mask)
		return 1;
	for (uint32_t r = 0; r < f->used; r++) {
		uint32_t slot = (f->head + r) & f->mask;
		int32_t b = f->ring[slot];

		if (b < 0)
			continue;
		if ((uint32_t)b >= m->nblk || m->blk[b].qslot != (int32_t)slot)
			return 2;	/* unknown id, or queued twice */
		live++;
	}
	if (live != f->n)
		return 3;
	for (uint32_t b = 0; b < m->nblk; b++) {
		int32_t q = m->blk[b].qslot;

		if (q >= 0 && ((uint32_t)q > f->mask ||
			       f->ring[q] != (int32_t)b ||
			       (((uint32_t)q - f->head) & f->mask) >= f->used))
			return 4;	/* a slot that does not hold it */
	}
	return 0;
}

/* ---- lifecycle -------------------------------------------------------- */

static void
v1_state_free(struct v1 *m)
{
	if (m == NULL)
		return;
	free(m->blk);
	free(m->fq.ring);
	for (uint32_t g = 0; g < KVC_MAX_GROUPS; g++) {
		kv_hmap_release(&m->map[g]);
		free(m->hit[g]);
	}
	for (uint32_t i = 0; i < m->capsx; i++) {
		free(m->sx[i].h);
		free(m->sx[i].lazy);
		free(m->sx[i].lazygen);
	}
	free(m->sx);
	free(m->stepk);
	free(m->lost);
	free(m->memo.b);
	free(m->memo.gen);
	free(m);
}

/* Per-block arrays and the scratch, shared by init and clone. */
static kv_err
v1_alloc_arrays(const kvc *k, struct v1 *m)
{
	uint32_t G = k->cfg.gpu_blocks;

	m->nblk = G;
	m->blk = calloc(G, sizeof(*m->blk));
	if (m->blk == NULL)
		return KV_ENOMEM;
	for (uint32_t b = 0; b < G; b++)
		m->blk[b].dnext = m->blk[b].dprev = m->blk[b].qslot = -1;
	if (!m->caching)
		return KV_OK;
	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		m->caphit[g] = k->cfg.max_model_len / kvc__bs(k, g) + 1;
		m->hit[g] = malloc(m->caphit[g] * sizeof(*m->hit[g]));
		if (m->hit[g] == NULL)
			return KV_ENOMEM;
	}
	return KV_OK;
}

static void
v1_coordinator(const kvc *k, struct v1 *m)
{
	m->caching = k->cfg.prefix_caching;
	m->hybrid = m->caching && k->cfg.ngroups > 1;
	m->fullmask = m->othermask = m->slidemask = 0;
	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		uint32_t bs = kvc__bs(k, g);

		if (v1_kind(k, g) == KVC_FULL)
			m->fullmask |= 1u << g;
		else
			m->othermask |= 1u << g;
		if (v1_kind(k, g) == KVC_SLIDING)
			m->slidemask |= 1u << g;
		m->bshift[g] = V1_NOSHIFT;
		for (uint8_t sh = 0; sh < 32; sh++)
			if (bs == 1u << sh)
				m->bshift[g] = sh;
	}
	m->onegroup = k->cfg.ngroups == 1 && v1_kind(k, 0) == KVC_FULL &&
	    m->bshift[0] != V1_NOSHIFT;
	m->track = false;
	for (uint32_t g = 0; g < k->cfg.ngroups; g++)
		m->track |= v1_kind(k, g) == KVC_STATE;
	m->track = m->track && m->caching;
	m->guard = m->track && k->cfg.defer_same_step_state_hits;
	m->lazyok = m->caching && !m->hybrid && !m->track &&
	    k->cfg.ngroups == 1 && v1_kind(k, 0) == KVC_FULL;
}

static kv_err
v1_init(kvc *k)
{
	struct v1 *m = calloc(1, sizeof(*m));
	uint32_t G = k->cfg.gpu_blocks;

	if (m == NULL)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	v1_coordinator(k, m);
	if (v1_alloc_arrays(k, m) != KV_OK || v1q_init(&m->fq, G) != KV_OK)
		goto out_free;
	for (uint32_t g = 0; m->caching && g < k->cfg.ngroups; g++)
		if (kv_hmap_init(&m->map[g], G) != KV_OK)
			goto out_free;
	/* BlockPool.__init__: every id queued in order, then 0 popped. */
	for (uint32_t b = 1; b < G; b++)
		v1q_push(m, (int32_t)b);
	k->ms = m;
	return KV_OK;
out_free:
	v1_state_free(m);
	return kvc__fail(k, KV_ENOMEM, "out of memory");
}

static void
v1_release(kvc *k)
{
	v1_state_free(v1_of(k));
	k->ms = NULL;
}

static kv_err
v1_clone(kvc *dst, const kvc *src)
{
	const struct v1 *s = v1_of(src);
	struct v1 *m = calloc(1, sizeof(*m));
	uint32_t G = s->nblk;

	dst->ms = NULL;
	if (m == NULL)
		return KV_ENOMEM;
	v1_coordinator(src, m);
	if (v1_alloc_arrays(src, m) != KV_OK)
		goto out_free;
	memcpy(m->blk, s->blk, G * sizeof(*m->blk));
	m->fq = s->fq;
	m->fq.ring = malloc(((size_t)s->fq.mask + 1) * sizeof(*m->fq.ring));
	if (m->fq.ring == NULL)
		goto out_free;
	memcpy(m->fq.ring, s->fq.ring,
	       ((size_t)s->fq.mask + 1) * sizeof(*m->fq.ring));
	for (uint32_t g = 0; m->caching && g < src->cfg.ngroups; g++)
		if (kv_hmap_copy(&m->map[g], &s->map[g]) != KV_OK)
			goto out_free;
	if (s->capsx > 0) {
		m->sx = calloc(s->capsx, sizeof(*m->sx));
		if (m->sx == NULL)
			goto out_free;
		m->capsx = s->capsx;
		for (uint32_t i = 0; i < s->capsx; i++) {
			const struct v1_sx *a = &s->sx[i];
			struct v1_sx *b = &m->sx[i];

			*b = *a;
			b->h = NULL;
			b->lazy = NULL;
			b->lazygen = NULL;
			b->caplazy = b->nlazy = 0;
			if (a->nlazy > 0) {
				b->lazy = malloc(a->nlazy * sizeof(*b->lazy));
				b->lazygen = malloc(a->nlazy *
						    sizeof(*b->lazygen));
				if (b->lazy == NULL || b->lazygen == NULL) {
					free(b->lazy);
					free(b->lazygen);
					b->lazy = NULL;
					b->lazygen = NULL;
					b->caph = b->nh = 0;
					goto out_free;
				}
				memcpy(b->lazy, a->lazy,
				       a->nlazy * sizeof(*b->lazy));
				memcpy(b->lazygen, a->lazygen,
				       a->nlazy * sizeof(*b->lazygen));
				b->caplazy = b->nlazy = a->nlazy;
			}
			if (a->caph == 0)
				continue;
			b->h = malloc(a->caph * sizeof(*b->h));
			if (b->h == NULL) {
				b->caph = b->nh = 0;
				goto out_free;
			}
			memcpy(b->h, a->h, a->nh * sizeof(*b->h));
		}
	}
	if (s->capstepk > 0) {
		m->stepk = malloc(s->capstepk * sizeof(*m->stepk));
		if (m->stepk == NULL)
			goto out_free;
		memcpy(m->stepk, s->stepk, s->nstepk * sizeof(*m->stepk));
		m->capstepk = s->capstepk;
		m->nstepk = s->nstepk;
	}
	if (s->lost != NULL) {
		m->lost = malloc(G * sizeof(*m->lost));
		if (m->lost == NULL)
			goto out_free;
		memcpy(m->lost, s->lost, G * sizeof(*m->lost));
		m->nlost = s->nlost;
	}
	dst->ms = m;
	return KV_OK;
out_free:
	v1_state_free(m);
	return KV_ENOMEM;
}

/* ---- per-sequence state: hash cache --------------------------------- */

static kv_err v1_sx_grow(kvc *k, int32_t s);

/* Make sure sequence s has its mode-private record. */
static inline kv_err
v1_sx_reserve(kvc *k, int32_t s)
{
	return (uint32_t)s < v1_of(k)->capsx ? KV_OK : v1_sx_grow(k, s);
}

static kv_err
v1_sx_grow(kvc *k, int32_t s)
{
	struct v1 *m = v1_of(k);
	uint32_t cap;
	struct v1_sx *p;

	cap = m->capsx ? m->capsx : 16;
	while (cap <= (uint32_t)s)
		cap *= 2;
	p = realloc(m->sx, cap * sizeof(*p));
	if (p == NULL)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	memset(p + m->capsx, 0, (cap - m->capsx) * sizeof(*p));
	m->sx = p;
	m->capsx = cap;
	return KV_OK;
}

/* Hash of block i of q after `parent`: by its ids, or by its key. */
static inline uint64_t
v1_block_hash(const struct kvc_seq *q, uint64_t parent, uint32_t i,
	      uint32_t bs, uint64_t extra)
{
	if (q->key != 0)
		return kv_hash_key(parent, q->key, i, extra);
	return kv_hash_block(parent, q->tok + (size_t)i * bs, bs, extra);
}

/*
 * Bring s's chain hashes up to its full blocks (Request.block_hashes, which
 * the reference extends whenever tokens are added).  With caching every
 * group has group 0's block size (R11), so one chain serves all groups.
 */
static kv_err
v1_hashes(kvc *k, int32_t s)
{
	struct v1 *m = v1_of(k);
	const struct kvc_seq *q = kvc__seq(k, s);
	struct v1_sx *x;
	uint32_t bs = kvc__bs(k, 0), want;
	kv_err e;

	if (!m->caching)
		return KV_OK;
	if ((e = v1_sx_reserve(k, s)) != KV_OK)
		return e;
	x = &m->sx[s];
	want = (uint32_t)v1_div(k, m, 0, q->ntok);
	if (want <= x->nh)
		return KV_OK;	/* the common case: nothing new is full */
	if (want > x->caph) {
		uint32_t cap = x->caph ? x->caph : 8;
		uint64_t *h;

		while (cap < want)
			cap *= 2;
		h = realloc(x->h, cap * sizeof(*h));
		if (h == NULL)
			return kvc__fail(k, KV_ENOMEM, "out of memory");
		x->h = h;
		x->caph = cap;
	}
	for (uint32_t i = x->nh; i < want; i++)
		x->h[i] = v1_block_hash(q, i ? x->h[i - 1] : KV_HASH_ROOT, i,
					bs, x->extra);
	if (x->nh < want)
		x->nh = want;
	return KV_OK;
}

kv_err
kvc__v1_hashes(kvc *k, int32_t s, const uint64_t **h, uint32_t *n)
{
	kv_err e;

	*h = NULL;
	*n = 0;
	if (k->ops != &kvc__v1_ops || !v1_of(k)->caching)
		return KV_ENOTSUP;
	if ((e = v1_hashes(k, s)) != KV_OK)
		return e;
	*h = v1_of(k)->sx[s].h;
	*n = v1_of(k)->sx[s].nh;
	return KV_OK;
}

/*
 * The extra key of s's block hashes (vLLM's generate_block_hash_extra_keys:
 * the LoRA name enters every block's hash, so a hit needs the same
 * adapter).  Only before s holds blocks or computed tokens; the hashes
 * taken so far are dropped and taken again with the key.
 */
kv_err
kvc__v1_set_extra(kvc *k, int32_t s, uint64_t extra)
{
	const struct kvc_seq *q = kvc__seq(k, s);
	kv_err e;

	if (k->ops != &kvc__v1_ops)
		return KV_ENOTSUP;
	if (q->state != KVC_WAITING || q->ncomp != 0 || q->tab[0].n != 0)
		return kvc__fail(k, KV_ESTATE, "seq %d: the hash key is set "
				 "before the sequence is first scheduled", s);
	if ((e = v1_sx_reserve(k, s)) != KV_OK)
		return e;
	v1_of(k)->sx[s].extra = extra;
	v1_of(k)->sx[s].nh = 0;
	return KV_OK;
}

/* kvc_seq_release: the request is gone for good. */
static void
v1_seq_release(kvc *k, int32_t s)
{
	struct v1 *m = v1_of(k);

	if ((uint32_t)s >= m->capsx)
		return;
	free(m->sx[s].h);
	free(m->sx[s].lazy);
	free(m->sx[s].lazygen);
	memset(&m->sx[s], 0, sizeof(m->sx[s]));
}

/* Tokens were taken off s again: forget hashes of blocks no longer full. */
static void
v1_hashes_trim(kvc *k, int32_t s)
{
	struct v1 *m = v1_of(k);
	uint32_t full;

	if (!m->caching || (uint32_t)s >= m->capsx)
		return;
	full = kvc__seq(k, s)->ntok / kvc__bs(k, 0);
	if (m->sx[s].nh > full)
		m->sx[s].nh = full;
}

/* ---- the prefix index ----------------------------------------------- */

/* Oldest block cached under (h, g), or -1 (BlockHashToBlockMap). */
static inline int32_t
v1_map_get(const struct v1 *m, uint32_t g, uint64_t h)
{
	return kv_hmap_get(&m->map[g], h);
}

static void
v1_map_insert(struct v1 *m, uint32_t g, uint64_t h, int32_t b)
{
	bool found;
	int32_t *slot = kv_hmap_upsert(&m->map[g], h, &found), head, tail;

	m->blk[b].hkey = h;
	m->blk[b].hgrp = (uint8_t)g;
	if (!found) {
		*slot = b;
		m->blk[b].dnext = m->blk[b].dprev = b;
		return;
	}
	head = *slot;
	tail = m->blk[head].dprev;
	m->blk[tail].dnext = b;
	m->blk[b].dprev = tail;
	m->blk[b].dnext = head;
	m->blk[head].dprev = b;
}

/* Take indexed b (hash h, group g) out of the index's ring of its hash. */
static void
v1_unindex(struct v1 *m, int32_t b, uint64_t h, uint32_t g)
{
	int32_t *head;

	if (m->blk[b].dnext == b) {
		kv_hmap_del(&m->map[g], h);
		return;
	}
	m->blk[m->blk[b].dprev].dnext = m->blk[b].dnext;
	m->blk[m->blk[b].dnext].dprev = m->blk[b].dprev;
	head = kv_hmap_find(&m->map[g], h);
	if (head != NULL && *head == b)
		*head = m->blk[b].dnext;
}

/* A hashed block's hash dropped, out of the index already: its
 * generation moves (v1_hit_memo, v1_lazy_flush). */
static inline void
v1_hash_drop(struct v1 *m, struct v1_blk *bk)
{
	bk->hkey = 0;
	bk->hgrp = 0;
	bk->gen++;
	m->nevict++;
	bk->dnext = bk->dprev = -1;
}

/* _maybe_evict_cached_block(): drop b's hash as it is popped for reuse.
 * Inline: most blocks popped have no hash or a lazy one (V1_LAZY, not
 * in the index); only an indexed one calls out (v1_unindex). */
static inline void
v1_evict(struct v1 *m, int32_t b)
{
	struct v1_blk *bk = &m->blk[b];

	if (bk->hkey == 0)
		return;
	if (bk->dnext != V1_LAZY)
		v1_unindex(m, b, bk->hkey, bk->hgrp);
	v1_hash_drop(m, bk);
	if (m->nlost > 0 && m->lost[b] != 0) {
		m->lost[b] = 0;
		m->nlost--;
	}
}

/* v1_take's usual case: one group, nothing indexed, none lost. */
static inline bool
v1_take_lazy(const struct v1 *m)
{
	return m->onegroup && m->map[0].n == 0 && m->nlost == 0;
}

/*
 * v1_take's usual case, n blocks into id[] (aux[] cleared): a block's hash,
 * if any, is a lazy one (keyed prompts cache lazily), and dropping it
 * touches nothing but the block, so pop and evict in one pass.  n <= the
 * free blocks: the caller's plan counted them.
 */
static inline void
v1_take_lazy_n(struct v1 *m, int32_t *id, uint64_t *aux, uint32_t n)
{
	struct v1_fifo *f = &m->fq;
	uint32_t head = f->head, used = f->used;

	for (uint32_t i = 0; i < n; i++) {
		struct v1_blk *bk;

		/* v1q_pop, the queue's fields in locals */
		while (f->ring[head] < 0) {
			head = (head + 1) & f->mask;
			used--;
		}
		id[i] = f->ring[head];
		head = (head + 1) & f->mask;
		used--;
		bk = &m->blk[id[i]];
		bk->qslot = -1;
		aux[i] = 0;
		if (bk->hkey != 0)	/* v1_evict: lazy, none lost */
			v1_hash_drop(m, bk);
		bk->ref = 1;
	}
	f->head = head;
	f->used = used;
	f->n -= n;
}

/*
 * get_new_blocks(n) into table t (room reserved): pop n blocks off the free
 * queue, drop their stale hashes, reference them.  All pops first, then
 * the evictions in the same order: a pop touches only the queue and an
 * eviction only the index, so the result is that of pop-evict pairs, and
 * knowing the ids ahead lets the index slots be fetched early.
 */
static void
v1_take(struct v1 *m, struct kvc_tab *t, uint32_t n)
{
	int32_t *id = t->id + t->n;

	if (v1_take_lazy(m)) {
		v1_take_lazy_n(m, id, t->aux + t->n, n);
		t->n += n;
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		id[i] = v1q_pop(m);
		kv_prefetch(&m->blk[id[i]]);
		t->aux[t->n + i] = 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (i + V1_AHEAD < n && m->blk[id[i + V1_AHEAD]].hkey != 0 &&
		    m->blk[id[i + V1_AHEAD]].dnext != V1_LAZY)
			kv_hmap_prefetch(&m->map[m->blk[id[i + V1_AHEAD]].hgrp],
					 m->blk[id[i + V1_AHEAD]].hkey);
		v1_evict(m, id[i]);
		m->blk[id[i]].ref = 1;
	}
	t->n += n;
}

/* BlockPool.get_cached_block(): one block per group of `mask`, or false. */
static bool
v1_cached_block(const struct v1 *m, uint64_t h, uint32_t mask,
		int32_t out[KVC_MAX_GROUPS])
{
	for (uint32_t g = 0; g < KVC_MAX_GROUPS; g++) {
		if (!(mask & (1u << g)))
			continue;
		if ((out[g] = v1_map_get(m, g, h)) < 0)
			return false;
	}
	return true;
}

/* ---- hit search (find_longest_cache_hit of each manager) ------------ */

static void
v1_hit_set(struct v1 *m, uint32_t mask, uint32_t i,
	   const int32_t b[KVC_MAX_GROUPS])
{
	for (uint32_t g = 0; g < KVC_MAX_GROUPS; g++)
		if (mask & (1u << g))
			m->hit[g][i] = b ? b[g] : V1_NULL;
}

static void
v1_hit_len(struct v1 *m, uint32_t mask, uint32_t n)
{
	for (uint32_t g = 0; g < KVC_MAX_GROUPS; g++)
		if (mask & (1u << g))
			m->nhit[g] = n;
}

/* FullAttentionManager: the leftmost run of hits. */
static uint32_t
v1_hit_full(struct v1 *m, const uint64_t *h, uint32_t maxb, uint32_t mask)
{
	int32_t b[KVC_MAX_GROUPS];
	uint32_t n = 0;

	if (mask == 1u) {	/* one group: its index alone */
		int32_t *hit = m->hit[0];

		while (n < maxb && (hit[n] = v1_map_get(m, 0, h[n])) >= 0)
			n++;
		m->nhit[0] = n;
		return n;
	}
	while (n < maxb && v1_cached_block(m, h[n], mask, b)) {
		v1_hit_set(m, mask, n, b);
		n++;
	}
	v1_hit_len(m, mask, n);
	return n;
}

/*
 * v1_hit_full for one full-attention group (mask 1) of sequence s with
 * ntok tokens, remembered.  The index maps a hash to its oldest block, and
 * a block leaves it only by v1_evict (which moves its generation on), so
 * while each block of the last hit has its generation and the first miss
 * is still missing, the walk would find the same blocks: they are taken
 * from the memo, with one lookup instead of one a block.
 */
static uint32_t
v1_hit_memo(struct v1 *m, int32_t s, uint32_t ntok, const uint64_t *h,
	    uint32_t maxb)
{
	struct v1_memo *mm = &m->memo;
	uint32_t n;

	if (mm->valid && mm->s == s && mm->ntok == ntok && mm->n <= maxb &&
	    (mm->n == 0 || h[mm->n - 1] == mm->hlast) &&
	    (mm->n == maxb || (h[mm->n] == mm->hmiss &&
			       v1_map_get(m, 0, mm->hmiss) < 0))) {
		/* no block lost its hash since they were checked: all
		 * keep their generations */
		for (n = mm->nevict == m->nevict ? mm->n : 0; n < mm->n; n++)
			if (m->blk[mm->b[n]].gen != mm->gen[n])
				break;
		if (n == mm->n) {
			mm->nevict = m->nevict;
			if (n > 0)
				memcpy(m->hit[0], mm->b, n * sizeof(*mm->b));
			v1_hit_len(m, 1u, n);
			return n;
		}
	}
	n = v1_hit_full(m, h, maxb, 1u);
	mm->valid = false;
	if (n > mm->cap) {
		int32_t *b = realloc(mm->b, n * sizeof(*b));
		uint32_t *g;

		if (b == NULL)
			return n;
		mm->b = b;
		if ((g = realloc(mm->gen, n * sizeof(*g))) == NULL)
			return n;
		mm->gen = g;
		mm->cap = n;
	}
	for (uint32_t i = 0; i < n; i++) {
		mm->b[i] = m->hit[0][i];
		mm->gen[i] = m->blk[mm->b[i]].gen;
	}
	mm->nevict = m->nevict;
	mm->s = s;
	mm->ntok = ntok;
	mm->n = n;
	mm->hlast = n > 0 ? h[n - 1] : 0;
	mm->hmiss = n < maxb ? h[n] : 0;
	mm->valid = true;
	return n;
}

/*
 * SlidingWindowManager: from the right, the first run of cdiv(W - 1, bs)
 * hits wins and everything left of it is null; with no such run, the run
 * that starts at block 0 (possibly empty).
 */
static uint32_t
v1_hit_sliding(struct v1 *m, const uint64_t *h, uint32_t maxb, uint32_t mask,
	       uint32_t window, uint32_t bs)
{
	int32_t b[KVC_MAX_GROUPS];
	uint32_t want = v1_cdiv(window - 1, bs), run = 0, n;
	bool found = false;

	for (uint32_t i = 0; i < maxb; i++)
		v1_hit_set(m, mask, i, NULL);
	n = maxb;
	for (uint32_t j = maxb; j-- > 0;) {
		if (!v1_cached_block(m, h[j], mask, b)) {
			run = 0;
			continue;
		}
		v1_hit_set(m, mask, j, b);
		if (++run >= want) {
			n = j + run;
			found = true;
			break;
		}
	}
	if (!found)
		n = run;
	v1_hit_len(m, mask, n);
	return n;
}

/* MambaManager: the right-most cached block, nulls to its left. */
static uint32_t
v1_hit_state(struct v1 *m, const uint64_t *h, uint32_t maxb, uint32_t mask)
{
	int32_t b[KVC_MAX_GROUPS];

	for (uint32_t j = maxb; j-- > 0;) {
		if (!v1_cached_block(m, h[j], mask, b))
			continue;
		for (uint32_t i = 0; i < j; i++)
			v1_hit_set(m, mask, i, NULL);
		v1_hit_set(m, mask, j, b);
		v1_hit_len(m, mask, j + 1);
		return j + 1;
	}
	v1_hit_len(m, mask, 0);
	return 0;
}

static uint32_t
v1_hit_kind(const kvc *k, uint32_t g, const uint64_t *h, uint32_t maxb,
	    uint32_t mask)
{
	struct v1 *m = v1_of(k);

	switch (v1_kind(k, g)) {
	case KVC_SLIDING:
		return v1_hit_sliding(m, h, maxb, mask, k->cfg.group[g].window,
				      kvc__bs(k, g));
	case KVC_STATE:
		return v1_hit_state(m, h, maxb, mask);
	case KVC_FULL:
	default:
		return v1_hit_full(m, h, maxb, mask);
	}
}

static void
v1_hit_clear(const kvc *k)
{
	memset(v1_of(k)->nhit, 0, sizeof(v1_of(k)->nhit));
}

/*
 * Whether q's blocks are cached lazily (V1_LAZY): a keyed sequence, one
 * group of full attention (a sliding window drops blocks while the
 * sequence runs, and a state group's hits need them indexed).
 */
static inline bool
v1_lazy_on(const kvc *k, const struct kvc_seq *q)
{
	return q->key != 0 && v1_of(k)->lazyok;
}

/* s is freed: remember its V1_LAZY blocks (table order is cache order). */
static kv_err
v1_lazy_keep(kvc *k, int32_t s)
{
	struct v1 *m = v1_of(k);
	const struct kvc_tab *t = &kvc__seq(k, s)->tab[0];
	struct v1_sx *x = &m->sx[s];
	uint32_t n = x->ncached[0] < t->n ? x->ncached[0] : t->n;

	if (x->nlazy + n > x->caplazy) {
		uint32_t cap = x->caplazy ? x->caplazy : 8;
		int32_t *b;
		uint32_t *g;

		while (cap < x->nlazy + n)
			cap *= 2;
		if ((b = realloc(x->lazy, cap * sizeof(*b))) == NULL)
			return KV_ENOMEM;
		x->lazy = b;
		if ((g = realloc(x->lazygen, cap * sizeof(*g))) == NULL)
			return KV_ENOMEM;
		x->lazygen = g;
		x->caplazy = cap;
	}
	for (uint32_t i = 0; i < n; i++) {
		int32_t b = t->id[i];

		if (b > V1_NULL && m->blk[b].dnext == V1_LAZY) {
			x->lazy[x->nlazy] = b;
			x->lazygen[x->nlazy++] = m->blk[b].gen;
		}
	}
	return KV_OK;
}

/* Before s looks blocks up: its remembered blocks still cached enter the
 * index, in the order they were cached, under their hashes (s's hash
 * cache covers them: a V1_LAZY block's hkey is its position + 1). */
static void
v1_lazy_flush(struct v1 *m, int32_t s)
{
	struct v1_sx *x = &m->sx[s];

	for (uint32_t i = 0; i < x->nlazy; i++) {
		int32_t b = x->lazy[i];
		uint64_t pos = m->blk[b].hkey - 1;

		if (m->blk[b].gen == x->lazygen[i] &&
		    m->blk[b].dnext == V1_LAZY && pos < x->nh)
			v1_map_insert(m, 0, x->h[pos], b);
	}
	x->nlazy = 0;
}

/*
 * Whether lazily cached s can hit at all.  Its blocks enter the index
 * only through v1_lazy_flush, under hashes of its key, and a hit starts
 * with block 0: while that block's hash is not indexed (nor any of s's
 * blocks remembered), the walk would stop at once.  One hash instead of
 * the chain: the rest is taken only when a lookup can use it.
 */
static bool
v1_lazy_cold(const kvc *k, int32_t s, uint32_t maxb)
{
	const struct v1 *m = v1_of(k);
	const struct kvc_seq *q = kvc__seq(k, s);
	const struct v1_sx *x = (uint32_t)s < m->capsx ? &m->sx[s] : NULL;

	if (x != NULL && x->nlazy > 0)
		return false;
	if (maxb == 0)
		return true;
	return v1_map_get(m, 0, v1_block_hash(q, KV_HASH_ROOT, 0,
	    kvc__bs(k, 0), x != NULL ? x->extra : 0)) < 0;
}

/* The hash cache allocate_slots' caching needs: none for a lazily cached
 * sequence (v1_cache_blocks marks its blocks by position). */
static inline kv_err
v1_hashes_cache(kvc *k, int32_t s)
{
	if (v1_lazy_on(k, kvc__seq(k, s)))
		return KV_OK;
	return v1_hashes(k, s);
}

/*
 * get_computed_blocks(): fill the hit scratch for s and return the hit in
 * tokens.  Pure but for s's hash cache.
 */
static kv_err
v1_find_hit(kvc *k, int32_t s, uint32_t *htok)
{
	struct v1 *m = v1_of(k);
	const struct kvc_seq *q = kvc__seq(k, s);
	uint32_t bs = kvc__bs(k, 0), maxlen, n, nf, no, fg = 0;
	const uint64_t *h;
	kv_err e;

	v1_hit_clear(k);
	*htok = 0;
	if (!m->caching || q->ntok == 0)
		return KV_OK;
	if (v1_lazy_on(k, q) && v1_lazy_cold(k, s, (q->ntok - 1) / bs))
		return KV_OK;
	if ((e = v1_hashes(k, s)) != KV_OK)
		return e;
	if (m->sx[s].nlazy > 0)
		v1_lazy_flush(m, s);
	h = m->sx[s].h;
	maxlen = q->ntok - 1;	/* the last token is always recomputed */
	if (!m->hybrid) {
		n = v1_kind(k, 0) == KVC_FULL ?
		    v1_hit_memo(m, s, q->ntok, h, maxlen / bs) :
		    v1_hit_kind(k, 0, h, maxlen / bs, 1u);
		*htok = n * bs;
		return KV_OK;
	}
	/* HybridKVCacheCoordinator: full attention, then the other kind. */
	while (!(m->fullmask & (1u << fg)))
		fg++;
	nf = v1_hit_full(m, h, maxlen / bs, m->fullmask);
	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		if (!(m->othermask & (1u << g)))
			continue;
		no = v1_hit_kind(k, g, h, nf * bs / kvc__bs(k, g),
				 m->othermask);
		*htok = no * kvc__bs(k, g);
		break;
	}
	v1_hit_len(m, m->fullmask, *htok / kvc__bs(k, fg));
	return KV_OK;
}

/* ---- allocate_slots ------------------------------------------------- */

/*
 * Blocks of sliding group g that remove_skipped_blocks() would drop at C
 * computed tokens: slots [lo, hi), walked from hi - 1 down to the first
 * null.  Returns lo; hi is set.
 */
static uint32_t
v1_skip_range(const kvc *k, int32_t s, uint32_t g, uint32_t *hi)
{
	const struct kvc_seq *q = kvc__seq(k, s);
	const struct kvc_tab *t = &q->tab[g];
	uint32_t W = k->cfg.group[g].window, lub, lo;

	*hi = 0;
	if (v1_kind(k, g) != KVC_SLIDING || q->ncomp + 1 <= W)
		return 0;
	lub = (q->ncomp - W + 1) / kvc__bs(k, g);
	if (lub > t->n)
		lub = t->n;
	for (lo = lub; lo > 0 && t->id[lo - 1] != KVC_NULL; lo--)
		;
	*hi = lub;
	return lo;
}

static uint32_t
v1_skip_count(const kvc *k, int32_t s)
{
	const struct v1 *m = v1_of(k);
	const struct kvc_seq *q = kvc__seq(k, s);
	uint32_t freed = 0, hi, lo;

	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		lo = v1_skip_range(k, s, g, &hi);
		for (uint32_t i = lo; i < hi; i++)
			if (m->blk[q->tab[g].id[i]].ref == 1)
				freed++;
	}
	return freed;
}

/* Release one reference; a block reaching 0 joins the back of the queue. */
static void
v1_unref(struct v1 *m, int32_t b)
{
	if (b <= V1_NULL || m->blk[b].ref == 0)
		return;		/* cannot happen: tables are audited */
	if (--m->blk[b].ref == 0 && !v1q_has(m, b))
		v1q_push(m, b);
}

/* remove_skipped_blocks() in every group, newest block first. */
static void
v1_skip_apply(kvc *k, int32_t s)
{
	struct v1 *m = v1_of(k);
	struct kvc_seq *q = kvc__seq(k, s);
	uint32_t hi, lo;

	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		lo = v1_skip_range(k, s, g, &hi);
		for (uint32_t i = hi; i-- > lo;) {
			v1_unref(m, q->tab[g].id[i]);
			q->tab[g].id[i] = KVC_NULL;
		}
	}
}

static uint32_t
v1_need_tokens(const kvc *k, uint64_t tokens)
{
	return tokens < k->cfg.max_model_len ? (uint32_t)tokens :
	    k->cfg.max_model_len;
}

/*
 * The first state group whose hit (its last block) carries a hash cached
 * in this step, or -1.  vLLM's MambaManager then asks for num_gpu_blocks
 * + 1 blocks, so the admission waits for a step that has not cached it.
 */
static int32_t
v1_hit_this_step(const kvc *k, const struct v1 *m)
{
	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		int32_t b;

		if (v1_kind(k, g) != KVC_STATE || m->nhit[g] == 0 ||
		    (b = m->hit[g][m->nhit[g] - 1]) == V1_NULL)
			continue;
		for (uint32_t i = 0; i < m->nstepk; i++)
			if (m->stepk[i].g == g &&
			    m->stepk[i].h == m->blk[b].hkey)
				return (int32_t)g;
	}
	return -1;
}

/* Room in stepk for the state blocks caching up to ntc tokens may add. */
static kv_err
v1_stepk_reserve(kvc *k, struct v1 *m, uint32_t ntc)
{
	uint64_t n = m->nstepk;
	struct v1_key *p;
	uint32_t cap;

	for (uint32_t g = 0; g < k->cfg.ngroups; g++)
		if (v1_kind(k, g) == KVC_STATE)
			n += v1_div(k, m, g, ntc);
	if (n <= m->capstepk)
		return KV_OK;
	for (cap = m->capstepk ? m->capstepk : 16; cap < n; cap *= 2)
		if (cap > UINT32_MAX / 2)
			return kvc__fail(k, KV_ENOMEM, "out of memory");
	if ((p = realloc(m->stepk, cap * sizeof(*p))) == NULL)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	m->stepk = p;
	m->capstepk = cap;
	return KV_OK;
}

static void
v1_step_begin(kvc *k)
{
	v1_of(k)->nstepk = 0;
}

/*
 * Plan allocate_slots(s, nnew, hcomp, hits in the scratch, L) without
 * changing anything.  C is s's computed count.
 */
static void
v1_plan(const kvc *k, int32_t s, uint32_t nnew, uint32_t hcomp, uint32_t L,
	struct v1_plan *p)
{
	const struct v1 *m = v1_of(k);
	const struct kvc_seq *q = kvc__seq(k, s);
	uint64_t free_after;

	/* Only groups < ngroups are filled; no reader looks further. */
	p->sum = 0;
	p->take = 0;
	p->skipfree = m->slidemask ? v1_skip_count(k, s) : 0;
	p->need = v1_need_tokens(k, (uint64_t)q->ncomp + hcomp + nnew + L);
	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		int64_t req = v1_cdiv_g(k, m, g, p->need);
		int64_t sn = req - m->nhit[g] - q->tab[g].n;
		uint32_t ev = 0;

		for (uint32_t i = 0; i < m->nhit[g]; i++) {
			int32_t b = m->hit[g][i];

			if (b != V1_NULL && m->blk[b].ref == 0)
				ev++;
		}
		p->evict[g] = ev;
		p->pop[g] = sn > 0 ? (uint32_t)sn : 0;
		p->sum += sn + ev;
		p->take += (uint64_t)p->pop[g] + ev;
	}
	free_after = (uint64_t)m->fq.n + p->skipfree;
	p->fits = p->sum <= (int64_t)free_after;
	p->eref = p->fits && p->take > free_after;
	p->defer = m->guard ? v1_hit_this_step(k, m) : -1;
	if (p->defer >= 0)
		p->fits = p->eref = false;
}

/* Tables must take the new slots without failing once we start. */
static kv_err
v1_reserve(kvc *k, int32_t s, const struct v1_plan *p)
{
	const struct v1 *m = v1_of(k);
	struct kvc_seq *q = kvc__seq(k, s);

	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		uint64_t n = (uint64_t)q->tab[g].n + m->nhit[g] + p->pop[g];

		if (n <= q->tab[g].cap)
			continue;
		if (n > UINT32_MAX ||
		    kvc__tab_reserve(k, &q->tab[g], (uint32_t)n) != KV_OK)
			return kvc__fail(k, KV_ENOMEM, "out of memory");
	}
	return KV_OK;
}

/*
 * Would allocate_slots(s, nnew, 0, no hits, L) change nothing?  The usual
 * decode step: the blocks s holds cover C + nnew + L, no block of s fills
 * (none to hash or to cache), nothing to skip.  Then the plan is "pop 0,
 * evict 0, sum <= 0 <= free", and the full path would only confirm it.
 */
static inline bool
v1_noop(const kvc *k, const struct v1 *m, int32_t s, uint32_t nnew,
	uint32_t L)
{
	const struct kvc_seq *q = kvc__seq(k, s);
	const struct v1_sx *x;
	uint32_t need, ntc, ntok = q->ntok, ncomp = q->ncomp;
	bool lazy = v1_lazy_on(k, q);	/* needs no hash cache */

	if (m->slidemask || (uint32_t)s >= m->capsx)
		return false;
	x = &m->sx[s];
	need = v1_need_tokens(k, (uint64_t)ncomp + nnew + L);
	ntc = (uint32_t)((uint64_t)ncomp + nnew);
	if (ntc > ntok)
		ntc = ntok;
	if (m->onegroup) {	/* one full group, a power-of-two block */
		uint32_t sh = m->bshift[0], bs = 1u << sh;

		return ((uint64_t)need + bs - 1) >> sh <= q->tab[0].n &&
		    m->nhit[0] == 0 &&
		    (!m->caching || (((ntok >> sh) <= x->nh || lazy) &&
				     (ntc >> sh) <= x->ncached[0]));
	}
	if (m->caching && !lazy && v1_div(k, m, 0, ntok) > x->nh)
		return false;
	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		if (m->nhit[g] != 0 ||
		    v1_cdiv_g(k, m, g, need) > q->tab[g].n)
			return false;
		if (m->caching && v1_div(k, m, g, ntc) > x->ncached[g])
			return false;
	}
	return true;
}

/*
 * Steady decode (core/kvs_ff.c, kv_int.h): of s's next decode steps --
 * each allocate(s, 1), then a token added -- how many in a row find
 * allocate_slots a no-op (v1_noop's one-group test): the blocks cover
 * C + j + 1 slots and no block of T + j tokens is left to hash or cache.
 * 0 where the test is not the one-group one.
 */
static inline uint32_t
v1_quiet(const kvc *k, int32_t s)
{
	const struct v1 *m = v1_of(k);
	const struct kvc_seq *q = kvc__seq(k, s);
	uint64_t bs, c = q->ncomp, t = q->ntok, j, cap;

	if (!m->onegroup || (uint32_t)s >= m->capsx || t != c + 1 ||
	    q->state != KVC_RUNNING)
		return 0;
	bs = 1ull << m->bshift[0];
	cap = (uint64_t)q->tab[0].n * bs;
	j = cap > c ? cap - c : 0;
	/* a lazily cached sequence's filled blocks are marked by
	 * kvc__v1_quiet_steps: only a fresh block is work */
	if (m->caching && !v1_lazy_on(k, q)) {
		const struct v1_sx *x = &m->sx[s];
		uint64_t h = x->nh < x->ncached[0] ? x->nh : x->ncached[0];
		uint64_t end = (h + 1) * bs;

		if (end <= t)
			return 0;
		if (end - t < j)
			j = end - t;
	}
	return j < UINT32_MAX ? (uint32_t)j : UINT32_MAX;
}

uint32_t
kvc__v1_quiet(const kvc *k, int32_t s)
{
	return v1_quiet(k, s);
}

static void v1_cache_blocks(kvc *k, struct v1 *m, int32_t s, uint32_t ntc);

/*
 * cache_blocks of lazily cached s (v1_lazy_on): its first `full` blocks
 * count as cached.  Their marks wait for v1_lazy_marks: while s runs, no
 * one reads them (only s can hit them, after it is freed), and a sequence
 * that finishes frees them with no mark to drop when they are reused.
 */
static inline void
v1_lazy_count(struct v1 *m, int32_t s, uint32_t full)
{
	uint32_t *nc = &m->sx[s].ncached[0];

	if (*nc < full)
		*nc = full;
}

/*
 * The marks of running lazily cached s's cached blocks, before anything
 * reads them (it is freed but not for good, or a chunk is withdrawn):
 * each block below its cached count that carries no hash gets its
 * position.  The rest carry the index's hashes (hits) or marks made here.
 */
static void
v1_lazy_marks(struct v1 *m, const struct kvc_seq *q, int32_t s)
{
	const struct kvc_tab *t = &q->tab[0];
	uint32_t n = m->sx[s].ncached[0] < t->n ? m->sx[s].ncached[0] : t->n;

	for (uint32_t i = 0; i < n; i++) {
		int32_t b = t->id[i];
		struct v1_blk *bk;

		if (b <= V1_NULL || (uint32_t)b >= m->nblk)
			continue;
		bk = &m->blk[b];
		if (bk->hkey != 0)
			continue;
		bk->hkey = (uint64_t)i + 1;	/* its position */
		bk->hgrp = 0;
		bk->dnext = bk->dprev = V1_LAZY;
	}
}

/* The counts of d quiet steps: C and T move by d, tok[0..d) added. */
static inline kv_err
v1_quiet_push(kvc *k, struct kvc_seq *q, uint32_t d, const uint32_t *tok)
{
	if (d == 0)
		return KV_OK;
	if (kvc__tok_push(q, tok, d) != KV_OK)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	q->ncomp += d;
	return KV_OK;
}

/*
 * d quiet steps (kvc__v1_quiet_steps), then the step kvc__v1_quiet leads
 * to, where allocate_slots has work: allocate(s, 1) -- a fresh block when
 * C + 1 passes the table, the block that the T tokens fill hashed and
 * cached -- then token tok[d] added; *next: the quiet steps after it.  What
 * v1_allocate and kvc_add_tokens do in that case, without the general
 * plan: one group of full attention, nothing hit, nothing to skip, no
 * lookahead.  Anything else, and a block that is not there, goes the
 * general way (whose error is the one to report).  A lazily cached
 * sequence's blocks that the quiet steps filled are counted with the
 * event's: the blocks the event takes are free ones, never s's.
 */
static KV_NOINLINE kv_err
v1_decode_event_any(kvc *k, int32_t s, uint32_t d, const uint32_t *tok,
		    uint32_t *next)
{
	struct v1 *m = v1_of(k);
	struct kvc_seq *q = kvc__seq(k, s);
	struct kvc_tab *tb = &q->tab[0];
	uint32_t sh = m->bshift[0], need, want, pop, ntc, t = tok[d];
	bool lazy;
	kv_err e;

	*next = 0;
	if ((e = v1_quiet_push(k, q, d, tok)) != KV_OK)
		return e;
	lazy = m->caching && v1_lazy_on(k, q);
	if (!m->onegroup || m->track || m->slidemask ||
	    (uint32_t)s >= m->capsx || q->state != KVC_RUNNING ||
	    q->ntok != q->ncomp + 1)
		goto general;
	need = v1_need_tokens(k, (uint64_t)q->ncomp + 1);
	want = (uint32_t)(((uint64_t)need + (1u << sh) - 1) >> sh);
	pop = want > tb->n ? want - tb->n : 0;
	if (pop > m->fq.n)
		goto general;
	k->msg[0] = '\0';
	k->npairs = 0;
	v1_hit_clear(k);
	if (tb->n + pop > tb->cap &&
	    kvc__tab_reserve(k, tb, tb->n + pop) != KV_OK)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	if (m->caching && !lazy && (e = v1_hashes(k, s)) != KV_OK)
		return e;
	if (pop == 1 && v1_take_lazy(m)) {	/* the usual event, inline */
		v1_take_lazy_n(m, tb->id + tb->n, tb->aux + tb->n, 1);
		tb->n++;
	} else {
		v1_take(m, tb, pop);
	}
	ntc = q->ncomp + 1;	/* <= T */
	if (lazy)
		v1_lazy_count(m, s, (uint32_t)v1_div(k, m, 0, ntc));
	else if (m->caching)
		v1_cache_blocks(k, m, s, ntc);
	q->ncomp = ntc;
	if (!kvc__add_token_fast(k, s, t) &&
	    (e = kvc_add_tokens(k, s, &t, 1)) != KV_OK)
		return e;
	*next = v1_quiet(k, s);
	return KV_OK;
general:
	if (lazy && (uint32_t)s < m->capsx)
		v1_lazy_count(m, s, (uint32_t)v1_div(k, m, 0, q->ncomp));
	if ((e = kvc_allocate(k, s, 1)) != KV_OK ||
	    (e = kvc_add_tokens(k, s, &t, 1)) != KV_OK)
		return e;
	*next = v1_quiet(k, s);
	return KV_OK;
}

/*
 * The event of a keyed, lazily cached sequence that takes one block, as
 * v1_decode_event_any makes it, without its general tests: the d quiet
 * steps counted, the block popped (v1_take_lazy_n), the full blocks
 * counted as cached, C and T moved by one, *next from the table's room.
 * Any other event, and one that would meet max_model_len, goes the
 * general way.
 */
kv_err
kvc__v1_decode_event(kvc *k, int32_t s, uint32_t d, const uint32_t *tok,
		     uint32_t *next)
{
	struct v1 *m = v1_of(k);
	struct kvc_seq *q = &k->seq[s];
	struct kvc_tab *tb = &q->tab[0];
	uint32_t sh = m->bshift[0];
	uint64_t ntc = (uint64_t)q->ncomp + d + 1, room;

	/* (lazyok: one full-attention group, no state; onegroup: its block
	 * a power of two) */
	if (!m->lazyok || q->key == 0 || !m->onegroup ||
	    (uint32_t)s >= m->capsx || q->state != KVC_RUNNING ||
	    q->ntok != q->ncomp + 1 || ntc >= k->cfg.max_model_len ||
	    ((ntc + (1u << sh) - 1) >> sh) != (uint64_t)tb->n + 1 ||
	    tb->n >= tb->cap || m->fq.n == 0 || !v1_take_lazy(m))
		return v1_decode_event_any(k, s, d, tok, next);
	k->msg[0] = '\0';
	k->npairs = 0;
	v1_hit_clear(k);
	v1_take_lazy_n(m, tb->id + tb->n, tb->aux + tb->n, 1);
	tb->n++;
	v1_lazy_count(m, s, (uint32_t)(ntc >> sh));
	q->ncomp = (uint32_t)ntc;
	q->ntok = (uint32_t)ntc + 1;
	room = ((uint64_t)tb->n << sh) - ntc;
	*next = room < UINT32_MAX ? (uint32_t)room : UINT32_MAX;
	return KV_OK;
}

/* d <= kvc__v1_quiet(k, s) such steps: C and T move by d, the tokens
 * tok[0..d) added; the blocks a lazily cached sequence filled, counted as
 * cached (the only sequence that can see them is this one, so the count
 * of d steps may wait for the last, and their marks for v1_lazy_marks). */
kv_err
kvc__v1_quiet_steps(kvc *k, int32_t s, uint32_t d, const uint32_t *tok)
{
	struct kvc_seq *q = kvc__seq(k, s);
	struct v1 *m = v1_of(k);
	kv_err e;

	if (d == 0)
		return KV_OK;
	if ((e = v1_quiet_push(k, q, d, tok)) != KV_OK)
		return e;
	if (v1_lazy_on(k, q) && (uint32_t)s < m->capsx)
		v1_lazy_count(m, s, (uint32_t)v1_div(k, m, 0, q->ncomp));
	return KV_OK;
}

void
kvc__v1_quiet_all(const kvc *k, struct kvc_ffreq *f, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		f[i].next = f[i].made + v1_quiet(k, f[i].seq);
}

/* kvc__v1_quiet_steps of each request that makes the run's `steps`,
 * from its steps made to the run's end. */
kv_err
kvc__v1_catch_up_all(kvc *k, struct kvc_ffreq *f, uint32_t n, uint32_t steps,
		     const uint32_t *tok, uint32_t stride)
{
	struct v1 *m = v1_of(k);
	bool lazyok = m->lazyok;
	kv_err e;

	for (uint32_t i = 0; i < n; i++) {
		struct kvc_seq *q;
		uint32_t d = steps - f[i].made;

		if (f[i].steps < steps || d == 0)
			continue;
		q = kvc__seq(k, f[i].seq);
		if ((e = v1_quiet_push(k, q, d, tok + (size_t)i * stride +
				       f[i].made)) != KV_OK)
			return e;
		f[i].made = steps;
		if (lazyok && q->key != 0 && (uint32_t)f[i].seq < m->capsx)
			v1_lazy_count(m, f[i].seq,
				     (uint32_t)v1_div(k, m, 0, q->ncomp));
	}
	return KV_OK;
}

/*
 * cache_blocks(request, ntc): enter the full blocks of s's first ntc
 * tokens not cached yet into the prefix index (caching on; the hash cache
 * covers them; with a tracked state group, v1_stepk_reserve made room).
 */
static void
v1_cache_blocks(kvc *k, struct v1 *m, int32_t s, uint32_t ntc)
{
	const struct kvc_seq *q = kvc__seq(k, s);

	if (v1_lazy_on(k, q)) {
		v1_lazy_count(m, s, (uint32_t)v1_div(k, m, 0, ntc));
		return;
	}
	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		uint32_t full = (uint32_t)v1_div(k, m, g, ntc);
		uint32_t *nc = &m->sx[s].ncached[g];
		bool step = m->track && v1_kind(k, g) == KVC_STATE;

		for (uint32_t i = *nc; i < full; i++) {
			int32_t b = q->tab[g].id[i];

			if (i + V1_AHEAD < full)
				kv_hmap_prefetch(&m->map[g],
						 m->sx[s].h[i + V1_AHEAD]);
			if (b == KVC_NULL)
				continue;
			v1_map_insert(m, g, m->sx[s].h[i], b);
			if (step)	/* v1_stepk_reserve made the room */
				m->stepk[m->nstepk++] = (struct v1_key){
					m->sx[s].h[i], g, b };
		}
		if (*nc < full)
			*nc = full;
	}
}

/*
 * allocate_slots(): on success s holds the slots and its full blocks up
 * to C + hcomp + nnew tokens are cached; the caller moves C.  `admit` is
 * true for a WAITING request (save_new_computed_blocks); `delay` is
 * delay_cache_blocks (a KV connector's load: nothing new is cached).
 */
static kv_err
v1_allocate_slots(kvc *k, int32_t s, uint32_t nnew, uint32_t hcomp,
		  uint32_t L, bool admit, bool delay)
{
	struct v1 *m = v1_of(k);
	struct kvc_seq *q = kvc__seq(k, s);
	struct v1_plan p;
	uint32_t ntc;
	kv_err e;

	if (nnew == 0)
		return kvc__fail(k, KV_EINVAL, "allocate_slots needs at least "
				 "one new token");
	if (!admit && hcomp == 0 && v1_noop(k, m, s, nnew, L))
		return KV_OK;
	if ((e = v1_sx_reserve(k, s)) != KV_OK)
		return e;
	if (m->caching && (e = v1_hashes_cache(k, s)) != KV_OK)
		return e;
	v1_plan(k, s, nnew, hcomp, L, &p);
	if ((e = v1_reserve(k, s, &p)) != KV_OK)
		return e;
	ntc = (uint32_t)((uint64_t)q->ncomp + hcomp + nnew);
	if (ntc > q->ntok)
		ntc = q->ntok;
	if (m->track && (e = v1_stepk_reserve(k, m, ntc)) != KV_OK)
		return e;
	/* From here on the reference's own order (R22, R23). */
	if (m->slidemask)
		v1_skip_apply(k, s);
	if (p.defer >= 0)
		return kvc__fail(k, KV_ENOSPC, "its state hit ends on a block "
				 "cached in this step, whose state the step "
				 "has not computed yet: it waits a step "
				 "(defer_same_step_state_hits)");
	if (!p.fits)
		return kvc__fail_room(k, (long long)p.sum, p.need, m->fq.n);
	if (p.eref)
		return kvc__fail(k, KV_EREF, "the signed per-group sum (%lld) "
				 "fits but %llu blocks are taken from %u free: "
				 "get_new_blocks() raises ValueError",
				 (long long)p.sum, (unsigned long long)p.take,
				 m->fq.n);
	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {	/* touch */
		struct kvc_tab *t = &q->tab[g];

		for (uint32_t i = 0; i < m->nhit[g]; i++) {
			int32_t b = m->hit[g][i];

			if (b != V1_NULL) {
				if (m->blk[b].ref == 0)
					v1q_remove(m, b);
				m->blk[b].ref++;
			}
			/* v1_reserve made the room */
			t->id[t->n] = b == V1_NULL ? KVC_NULL : b;
			t->aux[t->n++] = 0;
		}
		if (admit)
			m->sx[s].ncached[g] = m->nhit[g];
	}
	for (uint32_t g = 0; g < k->cfg.ngroups; g++)	/* new blocks */
		v1_take(m, &q->tab[g], p.pop[g]);
	if (m->caching && !delay)
		v1_cache_blocks(k, m, s, ntc);
	return KV_OK;
}

/* ---- operations ------------------------------------------------------ */

static kv_err
v1_not_running(kvc *k, int32_t s, const char *op)
{
	return kvc__fail(k, KV_ESTATE, "%s needs a RUNNING sequence; this one "
			 "is %s", op, kvc__seq(k, s)->state == KVC_WAITING ?
			 "WAITING" : "not RUNNING");
}

/* R21. */
static kv_err
v1_can_allocate(kvc *k, int32_t s, uint32_t L, kvc_verdict *o)
{
	const struct kvc_seq *q = kvc__seq(k, s);
	struct v1_plan p;
	uint64_t total = 0;
	uint32_t h;
	kv_err e;

	if (q->state != KVC_WAITING)
		return kvc__fail(k, KV_ESTATE, "request is not "
				 "WAITING");
	if ((e = v1_find_hit(k, s, &h)) != KV_OK)
		return e;
	v1_plan(k, s, q->ntok - h, h, L, &p);
	if (p.fits && !p.eref) {
		*o = KVC_VERDICT_OK;
		return KV_OK;
	}
	for (uint32_t g = 0; g < k->cfg.ngroups; g++)
		total += v1_cdiv(v1_need_tokens(k, (uint64_t)q->ntok + L),
				 kvc__bs(k, g));
	*o = total > k->cfg.gpu_blocks - 1 ? KVC_VERDICT_NEVER :
	    KVC_VERDICT_LATER;
	return KV_OK;
}

/* R22. */
static kv_err
v1_allocate(kvc *k, int32_t s, uint32_t n)
{
	struct kvc_seq *q = kvc__seq(k, s);
	uint32_t h = 0, left;
	kv_err e;

	if (q->state == KVC_WAITING) {
		if ((e = v1_find_hit(k, s, &h)) != KV_OK)
			return e;
		left = q->ntok - h;
		if (n > 0 && n < left)
			left = n;
		e = v1_allocate_slots(k, s, left, h, 0, true, false);
		if (e != KV_OK)
			return e;
		q->ncomp = h + left;
		q->state = KVC_RUNNING;
		return KV_OK;
	}
	if (q->state != KVC_RUNNING)
		return v1_not_running(k, s, "allocate");
	if (q->ncomp >= q->ntok)
		return kvc__fail(k, KV_ESTATE, "prefill complete "
				 "(C = T = %u); use append", q->ntok);
	left = q->ntok - q->ncomp;
	if (n > 0 && n < left)
		left = n;
	v1_hit_clear(k);
	/* left >= 1 here: the no-op test is allocate_slots' own first step */
	if (!v1_noop(k, v1_of(k), s, left, 0) &&
	    (e = v1_allocate_slots(k, s, left, 0, 0, false, false)) !=
	    KV_OK)
		return e;
	q->ncomp += left;
	return KV_OK;
}

/*
 * vLLM's running loop: allocate_slots(request, n, num_lookahead_tokens=L)
 * for any chunk of a RUNNING sequence -- a partial prefill chunk too, not
 * only the chunk that completes its tokens.  C moves by n; the L slots
 * beyond (capped at max_model_len) are reserved.  For policy vllm-v1.
 */
kv_err
kvc__v1_allocate_ahead(kvc *k, int32_t s, uint32_t n, uint32_t L)
{
	struct kvc_seq *q;
	kv_err e;

	if ((e = kvc__enter(k, s)) != KV_OK)
		return e;
	q = kvc__seq(k, s);
	if (q->state != KVC_RUNNING)
		return v1_not_running(k, s, "allocate");
	if (n == 0 || n > q->ntok - q->ncomp)
		return kvc__fail(k, KV_EINVAL, "allocate: %u new tokens of "
				 "%u unseen", n, q->ntok - q->ncomp);
	v1_hit_clear(k);
	if (!v1_noop(k, v1_of(k), s, n, L) &&
	    (e = v1_allocate_slots(k, s, n, 0, L, false, false)) !=
	    KV_OK)
		return e;
	q->ncomp += n;
	return KV_OK;
}

/*
 * A KV connector's load at admission (vLLM's waiting loop with
 * load_kv_async): allocate_slots(s, 0, the prefix hit,
 * num_external_computed_tokens=ext, delay_cache_blocks=True) for a
 * WAITING sequence.  The hit's blocks are touched and count as cached,
 * fresh blocks cover the hit and ext more tokens, nothing new is cached;
 * s becomes RUNNING with C = hit + ext (the blocks the load fills), which
 * kvc__v1_set_computed() moves when the load ends.  *hit: the hit, in
 * tokens.  KV_ENOSPC changes nothing.
 */
kv_err
kvc__v1_allocate_external(kvc *k, int32_t s, uint32_t ext, uint32_t *hit)
{
	struct kvc_seq *q;
	uint32_t h;
	kv_err e;

	if ((e = kvc__enter(k, s)) != KV_OK)
		return e;
	q = kvc__seq(k, s);
	if (k->cfg.mode != KVC_VLLM_V1 || q->state != KVC_WAITING)
		return kvc__fail(k, KV_ESTATE, "external tokens need a "
				 "WAITING vllm-v1 sequence");
	if ((e = v1_find_hit(k, s, &h)) != KV_OK)
		return e;
	if (ext == 0 || ext > q->ntok - h)
		return kvc__fail(k, KV_EINVAL, "%u external tokens past a "
				 "hit of %u of %u", ext, h, q->ntok);
	if ((e = v1_allocate_slots(k, s, ext, h, 0, true, true)) != KV_OK)
		return e;
	q->ncomp = h + ext;
	q->state = KVC_RUNNING;
	*hit = h;
	return KV_OK;
}

/*
 * A connector's load ended (_update_waiting_for_remote_kv): s's computed
 * count becomes c (1 <= c <= T, within the blocks it holds) and
 * cache_blocks(request, c) enters its full blocks into the prefix index.
 */
kv_err
kvc__v1_set_computed(kvc *k, int32_t s, uint32_t c)
{
	struct v1 *m;
	struct kvc_seq *q;
	kv_err e;

	if ((e = kvc__enter(k, s)) != KV_OK)
		return e;
	m = v1_of(k);
	q = kvc__seq(k, s);
	if (k->cfg.mode != KVC_VLLM_V1 || q->state != KVC_RUNNING ||
	    c == 0 || c > q->ntok ||
	    (uint64_t)c > (uint64_t)q->tab[0].n * kvc__bs(k, 0))
		return kvc__fail(k, KV_EINVAL, "set_computed: %u tokens for "
				 "a sequence of %u", c, q->ntok);
	q->ncomp = c;
	if (!m->caching)
		return KV_OK;
	if ((e = v1_sx_reserve(k, s)) != KV_OK ||
	    (e = v1_hashes_cache(k, s)) != KV_OK ||
	    (m->track && (e = v1_stepk_reserve(k, m, c)) != KV_OK))
		return e;
	v1_cache_blocks(k, m, s, c);
	return KV_OK;
}

/*
 * Speculative decoding: the verify step's accepted drafts of s are
 * computed (update_from_output: num_computed_tokens -= num_rejected), so
 * C becomes c (C <= c <= T, within the slots s holds).  Nothing is cached
 * here: allocate_slots caches them with the next step of s, as vLLM's
 * num_tokens_to_cache does.
 */
kv_err
kvc__v1_accept(kvc *k, int32_t s, uint32_t c)
{
	struct kvc_seq *q;
	kv_err e;

	if ((e = kvc__enter(k, s)) != KV_OK)
		return e;
	q = kvc__seq(k, s);
	if (k->cfg.mode != KVC_VLLM_V1 || q->state != KVC_RUNNING ||
	    c < q->ncomp || c > q->ntok ||
	    (uint64_t)c > (uint64_t)q->tab[0].n * kvc__bs(k, 0))
		return kvc__fail(k, KV_EINVAL, "accept: %u computed tokens "
				 "for a sequence of %u (%u computed)", c,
				 q->ntok, q->ncomp);
	q->ncomp = c;
	return KV_OK;
}

/*
 * The scheduler withdraws the chunk it allocated s in this step (vLLM v1's
 * priority preemption of a request scheduled earlier in the step): the
 * forward pass will not compute s's positions from `from` on, but the
 * blocks allocate_slots cached for them keep their hashes.  Mark them with
 * the leading slots that do hold KV, before s frees them.
 */
kv_err
kvc__v1_withdraw(kvc *k, int32_t s, uint32_t from)
{
	struct v1 *m;
	const struct kvc_seq *q;
	kv_err e;

	if ((e = kvc__enter(k, s)) != KV_OK)
		return e;
	m = v1_of(k);
	q = kvc__seq(k, s);
	if (k->cfg.mode != KVC_VLLM_V1 || q->state != KVC_RUNNING ||
	    from > q->ncomp)
		return kvc__fail(k, KV_EINVAL, "withdraw: no chunk of a "
				 "running vllm-v1 sequence from %u", from);
	if (!m->caching)
		return KV_OK;
	if (v1_lazy_on(k, q) && (uint32_t)s < m->capsx)
		v1_lazy_marks(m, q, s);
	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		const struct kvc_tab *t = &q->tab[g];
		uint32_t bs = kvc__bs(k, g);

		for (uint32_t i = from / bs; i < t->n; i++) {
			int32_t b = t->id[i];
			uint64_t lo = (uint64_t)i * bs;

			if (b == KVC_NULL || m->blk[b].hkey == 0 ||
			    (m->lost != NULL && m->lost[b] != 0))
				continue;
			if (m->lost == NULL &&
			    (m->lost = calloc(m->nblk, sizeof(*m->lost))) ==
			    NULL)
				return kvc__fail(k, KV_ENOMEM, "out of memory");
			m->lost[b] = 1 + (from > lo ? (uint32_t)(from - lo) : 0);
			m->nlost++;
		}
	}
	return KV_OK;
}

/* Whether state block b of group g was cached in this step. */
static bool
v1_cached_this_step(const struct v1 *m, uint32_t g, int32_t b)
{
	for (uint32_t i = 0; i < m->nstepk; i++)
		if (m->stepk[i].b == b && m->stepk[i].g == g &&
		    m->stepk[i].h == m->blk[b].hkey)
			return true;
	return false;
}

/*
 * Of the h tokens s was admitted with from the prefix cache, how many the
 * engine reads from blocks that do not hold them: from the first slot a
 * withdrawn chunk left without KV, or all h when a state hit's state was
 * never written (a withdrawn chunk) or is written by the forward pass of
 * this very step, which reads it first (the pinned vLLM without
 * defer_same_step_state_hits): the hit keeps only its last state block,
 * so the request holds no earlier state to start from.  Attention KV a
 * block gains in this step is written before any layer reads it.
 */
kv_err
kvc__v1_stale(const kvc *k, int32_t s, uint32_t h, uint32_t *stale)
{
	const struct v1 *m = v1_of(k);
	const struct kvc_seq *q = kvc__seq(k, s);
	uint64_t first = h;

	*stale = 0;
	if (k->cfg.mode != KVC_VLLM_V1 || q->state != KVC_RUNNING ||
	    h > q->ncomp)
		return KV_EINVAL;
	if (!m->caching || (m->nlost == 0 && !m->track))
		return KV_OK;
	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		const struct kvc_tab *t = &q->tab[g];
		uint32_t bs = kvc__bs(k, g), nb = h / bs;
		int32_t b;

		if (nb > t->n)
			nb = t->n;
		if (v1_kind(k, g) == KVC_STATE) {
			if (nb == 0 || (b = t->id[nb - 1]) == KVC_NULL)
				continue;
			/* the request holds no earlier state to start from */
			if ((m->nlost > 0 && m->lost[b] != 0) ||
			    v1_cached_this_step(m, g, b))
				first = 0;
			continue;
		}
		for (uint32_t i = 0; m->nlost > 0 && i < nb; i++) {
			b = t->id[i];
			if (b == KVC_NULL || m->lost[b] == 0)
				continue;
			if ((uint64_t)i * bs + m->lost[b] - 1 < first)
				first = (uint64_t)i * bs + m->lost[b] - 1;
			break;
		}
	}
	*stale = (uint32_t)(h - first);
	return KV_OK;
}

/* R23. */
static kv_err
v1_append(kvc *k, int32_t s, const uint32_t *tok, size_t ntok, uint32_t L,
	  bool has_L)
{
	struct kvc_seq *q = kvc__seq(k, s);
	uint32_t mml = k->cfg.max_model_len;
	kv_err e;

	if (ntok > mml || q->ntok > mml - ntok)
		return kvc__fail(k, KV_EINVAL, "%u + %zu tokens is "
				 "longer than max_model_len %u", q->ntok, ntok,
				 mml);
	if (q->state != KVC_RUNNING && has_L)
		return kvc__fail(k, KV_EINVAL, "lookahead is only for "
				 "a RUNNING sequence");
	if ((e = kvc__tok_push(q, tok, ntok)) != KV_OK)
		return kvc__fail(k, e, "out of memory");
	if (q->state != KVC_RUNNING)
		return KV_OK;
	v1_hit_clear(k);
	e = v1_allocate_slots(k, s, q->ntok - q->ncomp, 0, L, false,
			      false);
	if (e != KV_OK) {
		q->ntok -= (uint32_t)ntok;
		v1_hashes_trim(k, s);
		return e;
	}
	q->ncomp = q->ntok;
	return KV_OK;
}

/* R24. */
static kv_err
v1_can_append(kvc *k, int32_t s, uint32_t n, bool has_n, uint32_t L, bool *o)
{
	const struct kvc_seq *q = kvc__seq(k, s);
	struct v1_plan p;

	if (q->state != KVC_RUNNING)
		return v1_not_running(k, s, "can_append");
	if (!has_n)
		n = 1;
	if (n == 0 && q->ntok == q->ncomp)	/* n=0: the unseen tokens */
		return kvc__fail(k, KV_EINVAL, "n must be at "
				 "least 1 in vllm-v1");
	if ((uint64_t)q->ntok + n > k->cfg.max_model_len)
		return kvc__fail(k, KV_EINVAL, "%u + %u tokens is "
				 "longer than max_model_len %u", q->ntok, n,
				 k->cfg.max_model_len);
	v1_hit_clear(k);
	v1_plan(k, s, q->ntok + n - q->ncomp, 0, L, &p);
	*o = p.fits && !p.eref;
	return KV_OK;
}

/* R25: v1 moves C when tokens are scheduled; nothing to do. */
static kv_err
v1_computed(kvc *k, int32_t s, uint32_t n, bool has_n)
{
	(void)n;
	(void)has_n;
	if (kvc__seq(k, s)->state != KVC_RUNNING)
		return v1_not_running(k, s, "computed");
	return KV_OK;
}

static kv_err
v1_fork(kvc *k, int32_t s, int32_t child)
{
	(void)s;
	(void)child;
	return kvc__fail(k, KV_ENOTSUP, "vLLM v1 has no fork (no "
			 "beam search, no copy-on-write)");
}

static kv_err
v1_no_swap(kvc *k)
{
	return kvc__fail(k, KV_ENOTSUP, "vLLM v1 has no swap (recompute "
			 "preemption only, no CPU pool)");
}

static kv_err
v1_can_swap_out(kvc *k, int32_t s, bool *o)
{
	(void)s;
	(void)o;
	return v1_no_swap(k);
}

static kv_err
v1_swap_out(kvc *k, int32_t s)
{
	(void)s;
	return v1_no_swap(k);
}

static kv_err
v1_can_swap_in(kvc *k, int32_t s, uint32_t L, kvc_verdict *o)
{
	(void)s;
	(void)L;
	(void)o;
	return v1_no_swap(k);
}

static kv_err
v1_swap_in(kvc *k, int32_t s, uint32_t L)
{
	(void)s;
	(void)L;
	return v1_no_swap(k);
}

/*
 * v1_free_seq's check and release of one table in one pass, tail first,
 * while the free queue has room for every block: true when done.  At the
 * first block the check would refuse -- or that the release would skip,
 * a block twice in the table -- everything this pass did is undone, last
 * first, and false leaves the two passes to do it (and to say why).
 */
static bool
v1_free_one_pass(struct v1 *m, struct kvc_tab *t)
{
	struct v1_fifo *f = &m->fq;
	uint32_t at = f->head + f->used, i;
	/* in locals: the stores below may alias them as far as C knows */
	uint32_t mask = f->mask, nreal = m->nblk > 0 ? m->nblk - 1u : 0;
	int32_t *ring = f->ring;
	const int32_t *id = t->id;
	struct v1_blk *blk = m->blk;
	const uint64_t last = v1_refslot(1, -1);

	if (f->used + (uint64_t)t->n > (uint64_t)mask + 1)
		return false;
	for (i = t->n; i-- > 0;) {
		int32_t b = id[i];
		struct v1_blk *bk;

		/* one compare for ids outside 1 .. nblk - 1 (V1_NULL is 0):
		 * a sliding window's KVC_NULL is passed over, the rest bad */
		if ((uint32_t)b - 1u >= nreal) {
			if (b == KVC_NULL)
				continue;
			break;
		}
		bk = &blk[b];
		if (v1_refslot_of(bk) == last) {	/* its last holder,
							 * not queued */
			uint32_t slot = at++ & mask;

			ring[slot] = b;
			v1_refslot_set(bk, v1_refslot(0, (int32_t)slot));
			continue;
		}
		if (bk->ref == 0 || bk->qslot >= 0)
			break;
		if (--bk->ref == 0) {
			ring[at & mask] = b;
			bk->qslot = (int32_t)(at & mask);
			at++;
		}
	}
	if (i != UINT32_MAX) {
		/* undo blocks i + 1 .. n - 1 (the queue's own fields were
		 * not written: the appends past its end are dropped) */
		for (uint32_t j = i + 1; j < t->n; j++) {
			int32_t b = t->id[j];

			if (b == KVC_NULL)
				continue;
			if (m->blk[b].ref == 0)		/* it was appended */
				m->blk[b].qslot = -1;
			m->blk[b].ref++;
		}
		return false;
	}
	f->n += at - (f->head + f->used);
	f->used = at - f->head;
	t->n = 0;
	return true;
}

/*
 * R26: KVCacheManager.free(), group by group, each table tail first.  The
 * whole call is validated before anything moves (core-spec §8.3 item 6):
 * an id out of range or already free would be PR #42615's double append.
 */
static kv_err
v1_free_seq(kvc *k, int32_t s)
{
	struct v1 *m = v1_of(k);
	struct kvc_seq *q = kvc__seq(k, s);

	if (q->state != KVC_RUNNING)
		return kvc__fail(k, KV_ESTATE, "request holds no blocks");
	/* one group, and no lazy blocks to remember first: one pass */
	if (k->cfg.ngroups == 1 &&
	    (k->final || !v1_lazy_on(k, q) || (uint32_t)s >= m->capsx) &&
	    v1_free_one_pass(m, &q->tab[0]))
		goto done;
	for (uint32_t g = 0; g < k->cfg.ngroups; g++)
		for (uint32_t i = 0; i < q->tab[g].n; i++) {
			int32_t b = q->tab[g].id[i];

			if (b == KVC_NULL)
				continue;
			if (b <= V1_NULL || (uint32_t)b >= m->nblk ||
			    m->blk[b].ref == 0 || v1q_has(m, b))
				return kvc__fail(k, KV_EREF, "block %d "
						 "is not in use (double free)",
						 b);
		}
	if (!k->final && v1_lazy_on(k, q) && (uint32_t)s < m->capsx) {
		v1_lazy_marks(m, q, s);
		if (v1_lazy_keep(k, s) != KV_OK)
			return kvc__fail(k, KV_ENOMEM, "out of memory");
	}
	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		struct kvc_tab *t = &q->tab[g];

		/* checked above: one pass, unless the queue needs a squeeze
		 * or a block is twice in the table (v1_unref skips it) */
		if (v1_free_one_pass(m, t))
			continue;
		for (uint32_t i = t->n; i-- > 0;)
			if (t->id[i] != KVC_NULL)
				v1_unref(m, t->id[i]);
		t->n = 0;
	}
done:
	if ((uint32_t)s < m->capsx)
		memset(m->sx[s].ncached, 0, sizeof(m->sx[s].ncached));
	q->ncomp = 0;
	q->state = KVC_WAITING;
	return KV_OK;
}

/* R27. */
static kv_err
v1_cached(kvc *k, int32_t s, size_t *tokens)
{
	uint32_t h;
	kv_err e = v1_find_hit(k, s, &h);

	if (e == KV_OK)
		*tokens = h;
	return e;
}

static kv_err
v1_blocks_needed(kvc *k, int32_t s, uint32_t n, uint32_t L,
		 uint32_t need[KVC_MAX_GROUPS])
{
	const struct kvc_seq *q = kvc__seq(k, s);
	struct v1_plan p;
	uint32_t h = 0;
	kv_err e;

	if (q->state == KVC_WAITING) {
		if ((e = v1_find_hit(k, s, &h)) != KV_OK)
			return e;
		v1_plan(k, s, q->ntok - h, h, L, &p);
	} else if (q->state == KVC_RUNNING) {
		if ((uint64_t)q->ntok + n > k->cfg.max_model_len)
			return kvc__fail(k, KV_EINVAL, "%u + %u tokens is "
					 "longer than max_model_len %u",
					 q->ntok, n, k->cfg.max_model_len);
		v1_hit_clear(k);
		v1_plan(k, s, q->ntok + n - q->ncomp, 0, L, &p);
	} else {
		return v1_not_running(k, s, "blocks_needed");
	}
	for (uint32_t g = 0; g < k->cfg.ngroups; g++)
		need[g] = p.pop[g] + p.evict[g];
	if (p.defer >= 0)	/* get_num_blocks_to_allocate's answer */
		need[p.defer] = k->cfg.gpu_blocks + 1;
	return KV_OK;
}

static uint32_t
v1_free_blocks(const kvc *k, uint32_t g)
{
	(void)g;
	return v1_of(k)->fq.n;
}

const uint32_t *
kvc__v1_free_count(const kvc *k)
{
	return &v1_of(k)->fq.n;
}

static uint32_t
v1_free_cpu(const kvc *k)
{
	(void)k;
	return 0;
}

/* ---- audit ------------------------------------------------------------ */

#define V1_BAD(n, ...)                                                      \
	do {                                                                \
		kvc__failbuf(why, whylen, KV_EINVAL, __VA_ARGS__);          \
		return (n);                                                 \
	} while (0)

static int
v1_audit_seq(const kvc *k, int32_t s, uint32_t *refs, char *why,
	     size_t whylen)
{
	const struct v1 *m = v1_of(k);
	const struct kvc_seq *q = kvc__seq(k, s);
	const struct v1_sx *x = (uint32_t)s < m->capsx ? &m->sx[s] : NULL;
	uint32_t bs0 = kvc__bs(k, 0);
	uint64_t hash = KV_HASH_ROOT;

	if (q->ntok > k->cfg.max_model_len)
		V1_BAD(8, "seq %d: %u tokens, longer than max_model_len", s,
		       q->ntok);
	if (q->state == KVC_WAITING && q->ncomp != 0)
		V1_BAD(8, "seq %d: WAITING with C = %u", s, q->ncomp);
	if (q->state == KVC_RUNNING && (q->ncomp == 0 || q->ncomp > q->ntok))
		V1_BAD(8, "seq %d: RUNNING with C = %u, T = %u", s, q->ncomp,
		       q->ntok);
	if (q->state != KVC_WAITING && q->state != KVC_RUNNING)
		V1_BAD(8, "seq %d: state %u does not exist in vllm-v1", s,
		       q->state);
	if (x != NULL && m->caching) {
		if (x->nh > q->ntok / bs0)
			V1_BAD(9, "seq %d: %u hashes for %u tokens", s, x->nh,
			       q->ntok);
		for (uint32_t i = 0; i < x->nh; i++) {
			hash = v1_block_hash(q, hash, i, bs0, x->extra);
			if (x->h[i] != hash)
				V1_BAD(9, "seq %d: stale hash cache at block "
				       "%u", s, i);
		}
	}
	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		const struct kvc_tab *t = &q->tab[g];
		uint32_t bs = kvc__bs(k, g);
		uint32_t nc = x != NULL ? x->ncached[g] : 0;
		bool lead = true;

		hash = KV_HASH_ROOT;
		if (q->state == KVC_WAITING && (t->n != 0 || nc != 0))
			V1_BAD(8, "seq %d: WAITING but holds %u blocks in %s",
			       s, t->n, k->cfg.group[g].name);
		if (q->state != KVC_RUNNING)
			continue;
		if (t->n < v1_cdiv(q->ncomp, bs) ||
		    t->n > v1_cdiv(k->cfg.max_model_len, bs))
			V1_BAD(5, "seq %d: %u blocks in %s for C = %u", s,
			       t->n, k->cfg.group[g].name, q->ncomp);
		if (nc > t->n)
			V1_BAD(4, "seq %d: %u cached of %u blocks in %s", s,
			       nc, t->n, k->cfg.group[g].name);
		for (uint32_t i = 0; i < t->n; i++) {
			int32_t b = t->id[i];

			if (m->caching && i < q->ntok / bs0)
				hash = v1_block_hash(q, hash, i, bs0,
						     x != NULL ? x->extra : 0);
			if (b == KVC_NULL) {
				if (v1_kind(k, g) == KVC_FULL || !lead)
					V1_BAD(5, "seq %d: null block inside "
					       "%s at %u", s,
					       k->cfg.group[g].name, i);
				continue;
			}
			lead = false;
			if (b <= V1_NULL || (uint32_t)b >= m->nblk)
				V1_BAD(1, "seq %d: id %d out of range", s, b);
			refs[b]++;
			if (m->blk[b].hkey == 0) {
				/* (a lazily cached one's mark waits:
				 * v1_lazy_marks) */
				if (i < nc && !v1_lazy_on(k, q))
					V1_BAD(4, "seq %d: cached slot %u of "
					       "%s (block %d) has no hash", s,
					       i, k->cfg.group[g].name, b);
				continue;
			}
			if (m->blk[b].hgrp != g || i >= q->ntok / bs0 ||
			    m->blk[b].hkey != (m->blk[b].dnext == V1_LAZY ?
					       (uint64_t)i + 1 : hash))
				V1_BAD(4, "seq %d: block %d at %s[%u] carries "
				       "a stale hash", s, b,
				       k->cfg.group[g].name, i);
		}
	}
	return 0;
}

static int
v1_audit_index(const kvc *k, char *why, size_t whylen)
{
	const struct v1 *m = v1_of(k);

	for (uint32_t b = 0; b < m->nblk; b++)
		if (m->blk[b].hkey != 0 && (!m->caching || b == V1_NULL ||
					m->blk[b].hgrp >= k->cfg.ngroups))
			V1_BAD(4, "block %u carries a hash it cannot have", b);
	if (m->lost != NULL) {
		uint32_t n = 0;

		for (uint32_t b = 0; b < m->nblk; b++) {
			if (m->lost[b] == 0)
				continue;
			n++;
			if (m->blk[b].hkey == 0 ||
			    m->lost[b] > kvc__bs(k, m->blk[b].hgrp))
				V1_BAD(4, "block %u: a withdrawn chunk's mark "
				       "(%u) without its hash", b,
				       m->lost[b] - 1);
		}
		if (n != m->nlost)
			V1_BAD(4, "%u blocks marked withdrawn, %u counted", n,
			       m->nlost);
	}
	if (!m->caching)
		return 0;
	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		const struct kv_hmap *mp = &m->map[g];
		uint32_t hashed = 0, members = 0, rings = 0;

		for (uint32_t b = 0; b < m->nblk; b++)
			if (m->blk[b].hkey != 0 && m->blk[b].hgrp == g &&
			    m->blk[b].dnext != V1_LAZY)
				hashed++;
		for (uint32_t i = 0; i <= mp->mask; i++) {
			uint64_t key = mp->e[i].key;
			int32_t head, b;
			uint32_t steps = 0;

			if (key == 0)
				continue;
			rings++;
			head = mp->e[i].val;
			if (head <= V1_NULL || (uint32_t)head >= m->nblk)
				V1_BAD(4, "index of %s names id %d",
				       k->cfg.group[g].name, head);
			b = head;
			do {
				if (m->blk[b].hkey != key ||
				    m->blk[b].hgrp != g)
					V1_BAD(4, "block %d is indexed under "
					       "another hash", b);
				if (m->blk[b].dnext < 0 ||
				    (uint32_t)m->blk[b].dnext >= m->nblk ||
				    m->blk[m->blk[b].dnext].dprev != b)
					V1_BAD(4, "duplicate ring of block %d "
					       "is broken", b);
				if (++steps > m->nblk)
					V1_BAD(4, "duplicate ring of block %d "
					       "does not close", head);
				members++;
				b = m->blk[b].dnext;
			} while (b != head);
		}
		if (rings != mp->n || members != hashed)
			V1_BAD(4, "index of %s: %u entries / %u rings, %u in "
			       "rings, %u hashed blocks", k->cfg.group[g].name,
			       mp->n, rings, members, hashed);
	}
	return 0;
}

static int
v1_audit(const kvc *k, char *why, size_t whylen)
{
	const struct v1 *m = v1_of(k);
	uint32_t *refs, used = 0;
	int rc = 0;

	if (v1q_check(m) != 0)
		V1_BAD(2, "free queue is broken (v1q_check %d)", v1q_check(m));
	if (v1q_has(m, V1_NULL))
		V1_BAD(2, "the null block is in the free queue");
	refs = calloc(m->nblk, sizeof(*refs));
	if (refs == NULL)
		V1_BAD(99, "audit: out of memory");
	for (uint32_t s = 0; s < k->nseq && rc == 0; s++)
		if (k->seq[s].state != KVC_DEAD)
			rc = v1_audit_seq(k, (int32_t)s, refs, why, whylen);
	for (uint32_t b = 1; b < m->nblk && rc == 0; b++) {
		if (refs[b] != m->blk[b].ref) {
			kvc__failbuf(why, whylen, KV_EINVAL, "block %u: "
				     "refcount %u but %u table slots", b,
				     m->blk[b].ref, refs[b]);
			rc = 1;
		} else if ((m->blk[b].ref == 0) !=
			   v1q_has(m, (int32_t)b)) {
			kvc__failbuf(why, whylen, KV_EINVAL, "block %u: "
				     "refcount %u but %s the free queue", b,
				     m->blk[b].ref,
				     m->blk[b].ref ? "in" : "not in");
			rc = 2;
		} else if (m->blk[b].ref > 0) {
			used++;
		}
	}
	free(refs);
	if (rc != 0)
		return rc;
	if (used + m->fq.n != m->nblk - 1)
		V1_BAD(3, "%u used + %u free != %u usable", used, m->fq.n,
		       m->nblk - 1);
	return v1_audit_index(k, why, whylen);
}

/* kvc_block_state(): a GPU block's count and hash (no CPU pool in v1). */
static kv_err
v1_block_state(kvc *k, bool cpu, int32_t id, struct kvc_block_state *out)
{
	const struct v1 *m = v1_of(k);

	if (cpu)
		return kvc__fail(k, KV_ENOTSUP, "vLLM v1 has no CPU pool");
	out->ref = (int32_t)m->blk[id].ref;
	out->cached = m->blk[id].hkey != 0;
	return KV_OK;
}

/* kvc_evictor(): the free queue, front first, its blocks with a hash. */
static kv_err
v1_evictor(kvc *k, struct kvc_block_state *out, size_t cap, size_t *n)
{
	const struct v1 *m = v1_of(k);
	const struct v1_fifo *f = &m->fq;

	for (uint32_t i = 0; i < f->used; i++) {
		int32_t b = f->ring[(f->head + i) & f->mask];

		if (b < 0 || m->blk[b].hkey == 0)
			continue;
		if (*n < cap) {
			out[*n].id = b;
			out[*n].ref = (int32_t)m->blk[b].ref;
			out[*n].cached = true;
			out[*n].computed = false;
			out[*n].time = -1;
		}
		(*n)++;
	}
	return KV_OK;
}

const struct kvc_ops kvc__v1_ops = {
	.block_state = v1_block_state,
	.evictor = v1_evictor,
	.name = "vllm-v1",
	.init = v1_init,
	.release = v1_release,
	.clone = v1_clone,
	.check_config = v1_check_config,
	.can_allocate = v1_can_allocate,
	.allocate = v1_allocate,
	.append = v1_append,
	.can_append = v1_can_append,
	.computed = v1_computed,
	.fork = v1_fork,
	.can_swap_out = v1_can_swap_out,
	.swap_out = v1_swap_out,
	.can_swap_in = v1_can_swap_in,
	.swap_in = v1_swap_in,
	.free_seq = v1_free_seq,
	.seq_release = v1_seq_release,
	.cached = v1_cached,
	.blocks_needed = v1_blocks_needed,
	.free_blocks = v1_free_blocks,
	.free_cpu = v1_free_cpu,
	.audit = v1_audit,
	.step_begin = v1_step_begin,
};
