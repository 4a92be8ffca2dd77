/*
 * kv_v0.c -- mode `vllm-v0`: vLLM's v0 block manager, reproduced exactly.
 *
 * Reference: vllm-project/vllm at 72dd1595b466, vllm/core/block_manager.py
 * (SelfAttnBlockSpaceManager) over vllm/core/block/cpu_gpu_block_allocator.py
 * with NaiveBlockAllocator (naive_block.py) or PrefixCachingBlockAllocator
 * (prefix_caching_block.py, evictor.py), BlockTable (block_table.py) and the
 * CopyOnWriteTracker / RefCounter of common.py.  docs/replay.md R10, R18-R34
 * is the normative contract; core-spec §1 describes the reference.
 *
 * Model.  Two pools, GPU and CPU, each the reference's per-device
 * allocator: a refcount per id, a LIFO free list of hashless ids (the
 * deque: pop left, push left), and with prefix caching a content-hash index
 * (`_cached_blocks`), a tracker per id (active, last_accessed, computed), the
 * LRU evictor's free table and its lazy heap, and the set of ids promoted
 * since the last mark_blocks_as_computed.  A table slot holds the GPU id
 * (RUNNING) or CPU id (SWAPPED) of the block, KVC_NULL for the sliding
 * window's NullBlock, and in tab.aux the content hash of a full block (0
 * for a block not full) with prefix caching, or the id of the Python block
 * object in its BlockPool without it (see struct v0_opool: the one place
 * where the reference's object pools become observable).  The number of
 * tokens written into a table (BlockTable.num_full_slots) is kept per
 * sequence in nfs[]; tokens beyond it are "unseen".
 *
 * Main invariants.  Every id's refcount equals the table slots naming it
 * (plus one for the sliding-window null block); a refcount-0 id is either
 * in the free list or, with prefix caching, in the evictor, never both;
 * an id is in the hash index under at most one key, and then it is a full
 * block in use or an evictor entry; blocks in use are exactly the tracked
 * ones (v0_audit, numbered as core-spec §8.3).
 *
 * Atomicity.  The reference is not atomic (allocate leaks, swap frees the
 * source before the destination can fail, an eviction can assert halfway).
 * Every mutation here goes through a few journaled primitives; an action
 * that fails rolls the journal back, so a failed call changes nothing
 * (KV_ENOSPC for the reference's NoFreeBlocksError, KV_EREF where the
 * reference raises anything else: R34).  The journal is a grow-only array
 * reused by every call, so steady state allocates nothing.
 *
 * The evictor.  LRUEvictor keeps a heap of (last_accessed, -tokens, id,
 * hash) with lazy deletion and rebuilds it when it exceeds 50 times its
 * live entries.  The heap is simulated entry for entry (the multiset of
 * entries, and hence every eviction and rebuild, is independent of the
 * heap's internal layout), so a stale entry that the reference would
 * mistake for a live one is detected and reported as KV_EREF.
 *
 * Costs: allocate, append, fork, swap and free are O(blocks touched +
 * evictions x log heap); decisions are O(blocks of the request); cached is
 * O(tokens / bs); audit is O(blocks + table slots + heap + tokens).
 *
 * Rejected alternative: exact pre-checks instead of a journal.  Whether
 * an action fails is countable in advance, but whether an eviction meets a
 * stale heap entry (R34) is not without simulating the evictions, and then
 * the simulation is the action; undo is simpler and cannot drift from it.
 */
#include "kv_int.h"

#include <stdlib.h>
#include <string.h>

enum { V0_GPU = 0, V0_CPU = 1 };

#define V0_CLEANUP 50	/* LRUEvictor.CLEANUP_THRESHOLD */

/* Per physical id of a pool. */
struct v0_blk {
	uint64_t hash;		/* key of this id in the hash index, 0 = none */
	int64_t time;		/* tracker last_accessed (-1 = never) */
	int64_t ev_time;	/* evictor entry: last_accessed */
	uint32_t ev_ntok;	/* evictor entry: num_hashed_tokens */
	int32_t ref;
	uint8_t active;		/* tracker: block in use (prefix caching) */
	uint8_t computed;	/* tracker: computed */
	uint8_t in_ev;		/* in the evictor's free table */
	uint32_t evpos;		/* its index in v0_pool.evm while in_ev */
	uint8_t touched;	/* in _touched_blocks */
	uint32_t kvn;		/* leading slots whose KV is computed (not
				 * vLLM's: kvsim's, for kvc__v0_cached_now
				 * and kvc__v0_lost); bs: the whole block */
};

/* One heap entry of the LRU evictor. */
struct v0_hent {
	int64_t t;
	uint64_t h;
	uint32_t ntok;
	int32_t id;
};

struct v0_pool {
	uint32_t n;		/* ids 0..n-1 (device-relative) */
	struct v0_blk *b;
	struct kv_list fl;	/* hashless free ids: LIFO via push/pop front */
	struct kv_hmap map;	/* prefix caching: content hash -> id */
	uint32_t nev;		/* evictor entries */
	int32_t *evm;		/* the evictor's members, evm[0..nev) */
	struct v0_hent *heap;
	uint32_t nheap, capheap;
	int32_t *touched;	/* ids promoted since the last mark */
	uint32_t ntouched;
};

enum v0_jkind {
	J_BLK,		/* pool, id a: old per-id state */
	J_FLPUSH,	/* pool, id a pushed on the free list's front */
	J_FLPOP,	/* pool, id a popped from the free list's front */
	J_MAP,		/* pool, key: old value a (-1 = absent) */
	J_HEAP,		/* pool, index a: old heap entry */
	J_U32,		/* a uint32_t cell: old value */
	J_I32,		/* an int32_t cell: old value */
	J_TAB,		/* sequence, slot a: old id and aux */
	J_OBJ		/* object pool, stack index a: old entry */
};

struct v0_jrec {
	uint8_t kind, pool;
	int32_t a;
	union {
		struct v0_blk blk;
		struct v0_hent he;
		struct {
			uint64_t aux;
			int32_t id, seq;
		} tab;
		uint64_t key;
		struct {
			void *p;
			int64_t v;
		} cell;
	} u;
};

/*
 * The reference's BlockPool of one device (naive allocator only): the
 * deque of free block-object ids, modelled as a stack of pushed ids (its
 * left end) over the never-used range [fresh, size).  Only the CPU one can
 * go wrong: freeing a SWAPPED table returns GPU-pool objects to the CPU
 * pool, and a later CPU block allocation that pops such an id past the
 * CPU pool's end raises IndexError.
 */
struct v0_opool {
	uint32_t size;		/* objects in the pool (len(_pool)) */
	uint32_t fresh;		/* next never-used id */
	int32_t *stk;		/* pushed ids, top = the deque's left end */
	uint32_t nstk, capstk;
};

struct v0 {
	struct v0_pool pool[2];
	struct v0_opool obj[2];	/* naive allocator: block object pools */
	bool pc;		/* prefix caching */
	bool sw;		/* sliding window */
	uint32_t bs;
	uint32_t wm;		/* watermark blocks, floor(watermark * G) */
	uint32_t maxsw;		/* max_block_sliding_window = W / bs + 2 */
	int32_t null_id;	/* GPU id behind the null block, -1: none yet */
	uint32_t *nfs;		/* per sequence: BlockTable.num_full_slots */
	uint32_t capnfs;
	struct v0_jrec *j;	/* undo journal of the running call */
	uint32_t nj, capj;
	/*
	 * Set for a call that was shown not to fail once it starts mutating
	 * (its ids come from the hashless free list, its memory is reserved):
	 * it skips the journal, which is most of the cost of a call.
	 */
	bool nojournal;
	int32_t *scratch;	/* audit: one counter per id */
	/*
	 * The last append_slots, of sequence lost_seq: the first of its
	 * computed positions that promotion moved onto a cached block whose
	 * KV is not computed (UINT32_MAX: none), and that block;
	 * kvc__v0_lost.
	 */
	int32_t lost_seq;
	uint32_t lost_from;
	int32_t lost_block;
};

static struct v0 *
v0_of(const kvc *k)
{
	return k->ms;
}

static uint32_t
v0_nfs(const struct v0 *m, int32_t s)
{
	return (uint32_t)s < m->capnfs ? m->nfs[s] : 0;
}

static kv_err
v0_nfs_reserve(kvc *k, struct v0 *m)
{
	uint32_t cap;
	uint32_t *p;

	if (k->nseq <= m->capnfs)
		return KV_OK;
	cap = m->capnfs ? m->capnfs : 16;
	while (cap < k->nseq)
		cap *= 2;
	p = realloc(m->nfs, cap * sizeof(*p));
	if (p == NULL)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	memset(p + m->capnfs, 0, (cap - m->capnfs) * sizeof(*p));
	m->nfs = p;
	m->capnfs = cap;
	return KV_OK;
}

static uint32_t
v0_pool_free(const struct v0_pool *p)
{
	return p->fl.n + p->nev;
}

/*
 * BlockTable.get_num_blocks_touched_by_append_slots for a table holding
 * `full` tokens: 1 + ceil((n + L - first) / bs), a real-valued ceiling.
 */
static int64_t
v0_touched(uint32_t bs, uint64_t full, uint64_t n, uint64_t L)
{
	int64_t first = (int64_t)bs - (int64_t)(full % bs);
	int64_t x = (int64_t)(n + L) - first;
	int64_t c;

	if (x >= 0)
		c = (x + (int64_t)bs - 1) / (int64_t)bs;
	else
		c = -((-x) / (int64_t)bs);
	return 1 + c;
}

/* Chain hash of full block i of sequence q (parent: slot i-1's hash). */
static uint64_t
v0_hash_at(const struct v0 *m, const struct kvc_seq *q, uint64_t parent,
	   uint32_t i)
{
	return kv_hash_block(i == 0 ? KV_HASH_ROOT : parent,
			     q->tok + (size_t)i * m->bs, m->bs, 0);
}

/* ---- journal ---------------------------------------------------------- */

static kv_err
v0_jpush(struct v0 *m, const struct v0_jrec *r)
{
	if (m->nojournal)
		return KV_OK;
	if (m->nj == m->capj) {
		uint32_t cap = m->capj ? 2 * m->capj : 256;
		struct v0_jrec *j = realloc(m->j, cap * sizeof(*j));

		if (j == NULL)
			return KV_ENOMEM;
		m->j = j;
		m->capj = cap;
	}
	m->j[m->nj++] = *r;
	return KV_OK;
}

static void
v0_rollback(kvc *k, struct v0 *m)
{
	while (m->nj > 0) {
		struct v0_jrec *r = &m->j[--m->nj];
		struct v0_pool *p = &m->pool[r->pool];
		struct kvc_tab *t;

		switch (r->kind) {
		case J_BLK:
			p->b[r->a] = r->u.blk;
			break;
		case J_FLPUSH:
			kv_list_remove(&p->fl, r->a);
			break;
		case J_FLPOP:
			kv_list_push_front(&p->fl, r->a);
			break;
		case J_MAP:
			if (r->a < 0)
				kv_hmap_del(&p->map, r->u.key);
			else
				kv_hmap_put(&p->map, r->u.key, r->a);
			break;
		case J_HEAP:
			p->heap[r->a] = r->u.he;
			break;
		case J_U32:
			*(uint32_t *)r->u.cell.p = (uint32_t)r->u.cell.v;
			break;
		case J_I32:
			*(int32_t *)r->u.cell.p = (int32_t)r->u.cell.v;
			break;
		case J_TAB:
			t = &k->seq[r->u.tab.seq].tab[0];
			t->id[r->a] = r->u.tab.id;
			t->aux[r->a] = r->u.tab.aux;
			break;
		case J_OBJ:
			m->obj[r->pool].stk[r->a] = (int32_t)r->u.cell.v;
			break;
		}
	}
}

/* End a call: keep its effects on success, undo them all on failure. */
static kv_err
v0_end(kvc *k, struct v0 *m, kv_err e)
{
	if (m->nojournal) {
		m->nojournal = false;
		if (e != KV_OK)
			return kvc__fail(k, KV_EREF, "internal: a call taken "
					 "as infallible failed: %s",
					 kv_strerror(e));
	}
	if (e != KV_OK) {
		v0_rollback(k, m);
		k->npairs = 0;
		if (e == KV_ENOMEM)
			kvc__fail(k, e, "out of memory");
	}
	m->nj = 0;
	return e;
}

static kv_err
v0_jblk(struct v0 *m, int pi, int32_t id)
{
	struct v0_jrec r = { .kind = J_BLK, .pool = (uint8_t)pi, .a = id };

	r.u.blk = m->pool[pi].b[id];
	return v0_jpush(m, &r);
}

static kv_err
v0_set_u32(struct v0 *m, uint32_t *p, uint32_t v)
{
	struct v0_jrec r = { .kind = J_U32 };

	if (m->nojournal) {
		*p = v;
		return KV_OK;
	}
	r.u.cell.p = p;
	r.u.cell.v = *p;
	if (v0_jpush(m, &r) != KV_OK)
		return KV_ENOMEM;
	*p = v;
	return KV_OK;
}

static kv_err
v0_set_i32(struct v0 *m, int32_t *p, int32_t v)
{
	struct v0_jrec r = { .kind = J_I32 };

	r.u.cell.p = p;
	r.u.cell.v = *p;
	if (v0_jpush(m, &r) != KV_OK)
		return KV_ENOMEM;
	*p = v;
	return KV_OK;
}

/* Set slot i of sequence s's table (capacity already reserved). */
static kv_err
v0_tab_set(kvc *k, struct v0 *m, int32_t s, uint32_t i, int32_t id,
	   uint64_t aux)
{
	struct kvc_tab *t = &k->seq[s].tab[0];
	struct v0_jrec r = { .kind = J_TAB, .a = (int32_t)i };

	r.u.tab.seq = s;
	r.u.tab.id = t->id[i];
	r.u.tab.aux = t->aux[i];
	if (v0_jpush(m, &r) != KV_OK)
		return KV_ENOMEM;
	t->id[i] = id;
	t->aux[i] = aux;
	return KV_OK;
}

/* Append a slot (capacity already reserved). */
static kv_err
v0_tab_push(kvc *k, struct v0 *m, int32_t s, int32_t id, uint64_t aux)
{
	struct kvc_tab *t = &k->seq[s].tab[0];
	uint32_t i = t->n;

	if (v0_set_u32(m, &t->n, i + 1) != KV_OK)
		return KV_ENOMEM;
	/* The slot beyond the old n is dead data: overwrite it plainly. */
	t->id[i] = id;
	t->aux[i] = aux;
	return KV_OK;
}

/* ---- the free list and the hash index --------------------------------- */

static kv_err
v0_fl_pop(struct v0 *m, int pi, int32_t *id)
{
	struct v0_jrec r = { .kind = J_FLPOP, .pool = (uint8_t)pi };

	r.a = m->pool[pi].fl.head;
	if (v0_jpush(m, &r) != KV_OK)
		return KV_ENOMEM;
	*id = kv_list_pop_front(&m->pool[pi].fl);
	return KV_OK;
}

static kv_err
v0_fl_push(struct v0 *m, int pi, int32_t id)
{
	struct v0_jrec r = { .kind = J_FLPUSH, .pool = (uint8_t)pi, .a = id };

	if (v0_jpush(m, &r) != KV_OK)
		return KV_ENOMEM;
	kv_list_push_front(&m->pool[pi].fl, id);
	return KV_OK;
}

static kv_err
v0_map_put(struct v0 *m, int pi, uint64_t key, int32_t id)
{
	struct v0_jrec r = { .kind = J_MAP, .pool = (uint8_t)pi };

	r.a = kv_hmap_get(&m->pool[pi].map, key);
	r.u.key = key;
	if (v0_jpush(m, &r) != KV_OK)
		return KV_ENOMEM;
	kv_hmap_put(&m->pool[pi].map, key, id);
	return KV_OK;
}

static kv_err
v0_map_del(struct v0 *m, int pi, uint64_t key)
{
	struct v0_jrec r = { .kind = J_MAP, .pool = (uint8_t)pi };

	r.a = kv_hmap_get(&m->pool[pi].map, key);
	r.u.key = key;
	if (r.a < 0)
		return KV_OK;
	if (v0_jpush(m, &r) != KV_OK)
		return KV_ENOMEM;
	kv_hmap_del(&m->pool[pi].map, key);
	return KV_OK;
}

/* ---- block-object pools (naive allocator) ----------------------------- */

/* BlockPool.init_block: pop the deque's left end (growing it when empty). */
static kv_err
v0_obj_new(kvc *k, struct v0 *m, int pi, uint64_t *out)
{
	struct v0_opool *o = &m->obj[pi];

	if (m->pc) {
		*out = 0;
		return KV_OK;
	}
	if (o->nstk > 0) {
		*out = (uint64_t)o->stk[o->nstk - 1];
		return v0_set_u32(m, &o->nstk, o->nstk - 1);
	}
	if (o->fresh == o->size) {
		/* increase_pool doubles the pool; an empty one stays empty */
		if (o->size == 0 || o->size > UINT32_MAX / 2)
			return kvc__fail(k, KV_EREF, "the %s block-object "
					 "pool is empty and cannot grow "
					 "(AssertionError)",
					 pi == V0_GPU ? "GPU" : "CPU");
		if (v0_set_u32(m, &o->size, 2 * o->size) != KV_OK)
			return KV_ENOMEM;
	}
	*out = o->fresh;
	return v0_set_u32(m, &o->fresh, o->fresh + 1);
}

/* Room for `extra` more objects on the deque, so frees cannot fail. */
static kv_err
v0_obj_reserve(struct v0 *m, int pi, uint32_t extra)
{
	struct v0_opool *o = &m->obj[pi];
	uint32_t cap = o->capstk ? o->capstk : 64;
	int32_t *p;

	if (m->pc || o->nstk + (uint64_t)extra <= o->capstk)
		return KV_OK;
	while (cap < o->nstk + (uint64_t)extra)
		cap *= 2;
	p = realloc(o->stk, cap * sizeof(*p));
	if (p == NULL)
		return KV_ENOMEM;
	memset(p + o->capstk, 0, (cap - o->capstk) * sizeof(*p));
	o->stk = p;
	o->capstk = cap;
	return KV_OK;
}

/* BlockPool.free_block: push an object id on the deque's left end. */
static kv_err
v0_obj_free(struct v0 *m, int pi, uint64_t id)
{
	struct v0_opool *o = &m->obj[pi];
	struct v0_jrec r = { .kind = J_OBJ, .pool = (uint8_t)pi };

	if (m->pc)
		return KV_OK;
	if (o->nstk == o->capstk) {
		uint32_t cap = o->capstk ? 2 * o->capstk : 64;
		int32_t *p = realloc(o->stk, cap * sizeof(*p));

		if (p == NULL)
			return KV_ENOMEM;
		memset(p + o->capstk, 0, (cap - o->capstk) * sizeof(*p));
		o->stk = p;
		o->capstk = cap;
	}
	r.a = (int32_t)o->nstk;
	r.u.cell.v = o->stk[o->nstk];
	if (v0_jpush(m, &r) != KV_OK)
		return KV_ENOMEM;
	o->stk[o->nstk] = (int32_t)id;
	return v0_set_u32(m, &o->nstk, o->nstk + 1);
}

/*
 * A transient block object (swap_in's tmp_block): taken from the pool,
 * indexed (IndexError past the pool's end: a foreign id from a freed
 * SWAPPED table), and given back.
 */
static kv_err
v0_obj_tmp(kvc *k, struct v0 *m, int pi)
{
	uint64_t id;
	kv_err e;

	if (m->pc)
		return KV_OK;
	e = v0_obj_new(k, m, pi, &id);
	if (e != KV_OK)
		return e;
	if (id >= m->obj[pi].size)
		return kvc__fail(k, KV_EREF, "the %s block-object pool hands "
				 "out object %llu of %u, returned there when a "
				 "SWAPPED request was freed (IndexError)",
				 pi == V0_GPU ? "GPU" : "CPU",
				 (unsigned long long)id, m->obj[pi].size);
	return v0_obj_free(m, pi, id);
}

/* ---- the LRU evictor's heap ------------------------------------------- */

/* Python tuple order of (last_accessed, -num_hashed_tokens, id, hash). */
static bool
v0_hless(const struct v0_hent *a, const struct v0_hent *b)
{
	if (a->t != b->t)
		return a->t < b->t;
	if (a->ntok != b->ntok)
		return a->ntok > b->ntok;
	if (a->id != b->id)
		return a->id < b->id;
	return a->h < b->h;
}

static kv_err
v0_hset(struct v0 *m, int pi, uint32_t i, const struct v0_hent *e)
{
	struct v0_pool *p = &m->pool[pi];
	struct v0_jrec r = { .kind = J_HEAP, .pool = (uint8_t)pi };

	r.a = (int32_t)i;
	r.u.he = p->heap[i];
	if (v0_jpush(m, &r) != KV_OK)
		return KV_ENOMEM;
	p->heap[i] = *e;
	return KV_OK;
}

static kv_err
v0_sift_down(struct v0 *m, int pi, uint32_t i)
{
	struct v0_pool *p = &m->pool[pi];
	struct v0_hent e = p->heap[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= p->nheap)
			break;
		if (c + 1 < p->nheap && v0_hless(&p->heap[c + 1], &p->heap[c]))
			c++;
		if (!v0_hless(&p->heap[c], &e))
			break;
		if (v0_hset(m, pi, i, &p->heap[c]) != KV_OK)
			return KV_ENOMEM;
		i = c;
	}
	return v0_hset(m, pi, i, &e);
}

static kv_err
v0_heap_push(struct v0 *m, int pi, const struct v0_hent *e)
{
	struct v0_pool *p = &m->pool[pi];
	uint32_t i;

	if (p->nheap == p->capheap) {
		uint32_t cap = p->capheap ? 2 * p->capheap : 64;
		struct v0_hent *h = realloc(p->heap, cap * sizeof(*h));

		if (h == NULL)
			return KV_ENOMEM;
		memset(h + p->capheap, 0, (cap - p->capheap) * sizeof(*h));
		p->heap = h;
		p->capheap = cap;
	}
	i = p->nheap;
	if (v0_set_u32(m, &p->nheap, i + 1) != KV_OK)
		return KV_ENOMEM;
	while (i > 0) {
		uint32_t up = (i - 1) / 2;

		if (!v0_hless(e, &p->heap[up]))
			break;
		if (v0_hset(m, pi, i, &p->heap[up]) != KV_OK)
			return KV_ENOMEM;
		i = up;
	}
	return v0_hset(m, pi, i, e);
}

static kv_err
v0_heap_pop(struct v0 *m, int pi, struct v0_hent *out)
{
	struct v0_pool *p = &m->pool[pi];
	uint32_t n = p->nheap - 1;

	*out = p->heap[0];
	if (v0_set_u32(m, &p->nheap, n) != KV_OK)
		return KV_ENOMEM;
	if (n == 0)
		return KV_OK;
	if (v0_hset(m, pi, 0, &p->heap[n]) != KV_OK)
		return KV_ENOMEM;
	return v0_sift_down(m, pi, 0);
}

/* LRUEvictor._cleanup: rebuild the heap from the live entries only. */
static kv_err
v0_heap_rebuild(struct v0 *m, int pi)
{
	struct v0_pool *p = &m->pool[pi];
	uint32_t n = 0;

	/*
	 * Over the live entries only, as the reference walks its free table:
	 * the order does not matter, the heap orders (time, -tokens, id).
	 */
	for (uint32_t i = 0; i < p->nev; i++) {
		int32_t id = p->evm[i];
		const struct v0_blk *b = &p->b[id];
		struct v0_hent e;

		e.t = b->ev_time;
		e.h = b->hash;
		e.ntok = b->ev_ntok;
		e.id = id;
		if (v0_hset(m, pi, n++, &e) != KV_OK)
			return KV_ENOMEM;
	}
	if (v0_set_u32(m, &p->nheap, n) != KV_OK)
		return KV_ENOMEM;
	for (uint32_t i = n / 2; i-- > 0;)
		if (v0_sift_down(m, pi, i) != KV_OK)
			return KV_ENOMEM;
	return KV_OK;
}

/*
 * Whether the heap, rooted at i, holds an entry that ties the popped one
 * on (time, tokens, id) but carries another hash: Python would order the
 * two by its own hash() of the content, which we cannot know.
 */
static bool
v0_tie_differs(const struct v0_pool *p, uint32_t i, const struct v0_hent *e,
	       uint64_t live)
{
	const struct v0_hent *h;

	if (i >= p->nheap)
		return false;
	h = &p->heap[i];
	if (h->t != e->t || h->ntok != e->ntok || h->id != e->id)
		return false;
	if (h->h != live)
		return true;
	return v0_tie_differs(p, 2 * i + 1, e, live) ||
	       v0_tie_differs(p, 2 * i + 2, e, live);
}

/* ---- tracker and evictor (PrefixCachingBlockAllocator) ---------------- */

static kv_err
v0_track(struct v0 *m, int pi, int32_t id, bool computed)
{
	struct v0_blk *b = &m->pool[pi].b[id];

	if (v0_jblk(m, pi, id) != KV_OK)
		return KV_ENOMEM;
	b->active = 1;
	b->time = -1;
	b->computed = computed;
	return KV_OK;
}

static void
v0_untrack_nojournal(struct v0_blk *b)
{
	b->active = 0;
	b->time = -1;
	b->computed = 0;
}

/*
 * Take id out of the evictor's member set (its heap entry goes stale).
 * The caller has journaled b[id]; the last member moves into its place.
 */
static kv_err
v0_ev_remove(struct v0 *m, int pi, int32_t id)
{
	struct v0_pool *p = &m->pool[pi];
	uint32_t pos = p->b[id].evpos;
	int32_t last = p->evm[p->nev - 1];

	if (last != id) {
		if (v0_jblk(m, pi, last) != KV_OK ||
		    v0_set_i32(m, &p->evm[pos], last) != KV_OK)
			return KV_ENOMEM;
		p->b[last].evpos = pos;
	}
	p->b[id].in_ev = 0;
	return v0_set_u32(m, &p->nev, p->nev - 1);
}

/* LRUEvictor.add, then its cleanup check. */
static kv_err
v0_evictor_add(struct v0 *m, int pi, int32_t id, uint32_t ntok)
{
	struct v0_pool *p = &m->pool[pi];
	struct v0_blk *b = &p->b[id];
	struct v0_hent e;

	if (v0_jblk(m, pi, id) != KV_OK)
		return KV_ENOMEM;
	b->in_ev = 1;
	b->ev_time = b->time;
	b->ev_ntok = ntok;
	b->evpos = p->nev;
	if (v0_set_i32(m, &p->evm[p->nev], id) != KV_OK ||
	    v0_set_u32(m, &p->nev, p->nev + 1) != KV_OK)
		return KV_ENOMEM;
	e.t = b->ev_time;
	e.h = b->hash;
	e.ntok = ntok;
	e.id = id;
	if (v0_heap_push(m, pi, &e) != KV_OK)
		return KV_ENOMEM;
	if (p->nheap > (uint64_t)V0_CLEANUP * p->nev)
		return v0_heap_rebuild(m, pi);
	return KV_OK;
}

/* _maybe_allocate_evicted_block_id, short of the refcount and tracking. */
static kv_err
v0_evict(kvc *k, struct v0 *m, int pi, int32_t *out)
{
	struct v0_pool *p = &m->pool[pi];
	struct v0_hent e;
	struct v0_blk *b;

	for (;;) {
		if (p->nheap == 0)
			return kvc__fail(k, KV_EREF, "the LRU evictor's heap "
					 "ran dry with live entries left");
		if (v0_heap_pop(m, pi, &e) != KV_OK)
			return KV_ENOMEM;
		b = &p->b[e.id];
		if (b->in_ev && b->ev_time == e.t)
			break;
		/* a stale entry: the reference discards it too */
	}
	if (e.h != b->hash || e.ntok != b->ev_ntok ||
	    v0_tie_differs(p, 0, &e, b->hash))
		return kvc__fail(k, KV_EREF, "eviction meets a stale LRU "
				 "evictor heap entry for block %d (the "
				 "reference asserts or evicts out of order)",
				 e.id);
	if (kv_hmap_get(&p->map, b->hash) != e.id)
		return kvc__fail(k, KV_EREF, "evicted block %d is not the "
				 "cached block of its hash", e.id);
	if (v0_jblk(m, pi, e.id) != KV_OK ||
	    v0_ev_remove(m, pi, e.id) != KV_OK ||
	    v0_map_del(m, pi, b->hash) != KV_OK)
		return KV_ENOMEM;
	b->hash = 0;
	*out = e.id;
	return KV_OK;
}

/*
 * Take a fresh id (_allocate_block_id): the hashless free list first, then
 * an eviction.  The id comes back with refcount 1 and, with prefix
 * caching, tracked and not computed.
 */
static kv_err
v0_draw(kvc *k, struct v0 *m, int pi, int32_t *out)
{
	struct v0_pool *p = &m->pool[pi];
	int32_t id = -1;
	kv_err e;

	if (p->fl.n > 0) {
		if (v0_fl_pop(m, pi, &id) != KV_OK)
			return KV_ENOMEM;
	} else if (m->pc && p->nev > 0) {
		e = v0_evict(k, m, pi, &id);
		if (e != KV_OK)
			return e;
	} else {
		return kvc__fail(k, KV_ENOSPC, "no free %s blocks "
				 "(NoFreeBlocksError)",
				 pi == V0_GPU ? "GPU" : "CPU");
	}
	if (v0_jblk(m, pi, id) != KV_OK)
		return KV_ENOMEM;
	p->b[id].ref++;
	p->b[id].kvn = 0;	/* new content, none computed yet */
	if (m->pc && v0_track(m, pi, id, false) != KV_OK)
		return KV_ENOMEM;
	*out = id;
	return KV_OK;
}

/* _incr_refcount_cached_block: a hit on a cached id. */
static kv_err
v0_hit(struct v0 *m, int pi, int32_t id)
{
	struct v0_pool *p = &m->pool[pi];
	struct v0_blk *b = &p->b[id];

	if (v0_jblk(m, pi, id) != KV_OK)
		return KV_ENOMEM;
	if (++b->ref == 1) {
		if (b->in_ev) {
			/* evictor.remove: the heap entry goes stale */
			if (v0_ev_remove(m, pi, id) != KV_OK)
				return KV_ENOMEM;
		}
		return v0_track(m, pi, id, true);
	}
	return KV_OK;
}

/* Add id to _touched_blocks (a set). */
static kv_err
v0_touch(struct v0 *m, int pi, int32_t id)
{
	struct v0_pool *p = &m->pool[pi];

	if (p->b[id].touched)
		return KV_OK;
	if (v0_jblk(m, pi, id) != KV_OK)
		return KV_ENOMEM;
	p->b[id].touched = 1;
	p->touched[p->ntouched] = id;
	return v0_set_u32(m, &p->ntouched, p->ntouched + 1);
}

/* Register a full block's hash for id (promotion of a new content). */
static kv_err
v0_register(struct v0 *m, int pi, int32_t id, uint64_t h)
{
	if (v0_map_put(m, pi, h, id) != KV_OK || v0_jblk(m, pi, id) != KV_OK)
		return KV_ENOMEM;
	m->pool[pi].b[id].hash = h;
	return v0_touch(m, pi, id);
}

/*
 * Release one reference of a table slot's block (_free_block_id).  `hash`
 * is the slot's content hash (prefix caching, full block) or 0; `ntok` the
 * tokens from the sequence start through the block.
 */
static kv_err
v0_release(struct v0 *m, int pi, int32_t id, uint64_t hash, uint32_t ntok)
{
	struct v0_pool *p = &m->pool[pi];
	struct v0_blk *b = &p->b[id];

	if (v0_jblk(m, pi, id) != KV_OK)
		return KV_ENOMEM;
	if (m->pc && hash != 0) {
		/* _decr_refcount_cached_block */
		if (--b->ref > 0)
			return KV_OK;
		if (v0_evictor_add(m, pi, id, ntok) != KV_OK)
			return KV_ENOMEM;
		v0_untrack_nojournal(b);
		return KV_OK;
	}
	/* _decr_refcount_hashless_block, or the naive allocator */
	if (m->pc && b->ref == 1)
		v0_untrack_nojournal(b);
	if (--b->ref == 0)
		return v0_fl_push(m, pi, id);
	return KV_OK;
}

/*
 * Allocate the block for full slot i holding content hash h on pool pi
 * (allocate_immutable_block): a hit takes the cached id, a miss a fresh id
 * that is promoted at once.  The naive allocator ignores h.
 */
static kv_err
v0_immutable(kvc *k, struct v0 *m, int pi, uint64_t h, int32_t *out)
{
	int32_t id;
	kv_err e;

	if (m->pc) {
		id = kv_hmap_get(&m->pool[pi].map, h);
		if (id >= 0) {
			*out = id;
			return v0_hit(m, pi, id);
		}
	}
	e = v0_draw(k, m, pi, &id);
	if (e != KV_OK)
		return e;
	if (m->pc && v0_register(m, pi, id, h) != KV_OK)
		return KV_ENOMEM;
	*out = id;
	return KV_OK;
}

/* ---- helpers over sequences ------------------------------------------- */

static kvc_state
v0_state(const kvc *k, int32_t s)
{
	return (kvc_state)k->seq[k->seq[s].req].state;
}

/* Next live sequence of a request in creation order, from t (inclusive). */
static int32_t
v0_live(const kvc *k, int32_t t)
{
	while (t >= 0 && k->seq[t].state == KVC_DEAD)
		t = k->seq[t].next;
	return t;
}

#define V0_FOREACH(k, t, root)                                              \
	for (int32_t t = v0_live(k, root); t >= 0;                          \
	     t = v0_live(k, (k)->seq[t].next))

static kv_err
v0_want(kvc *k, int32_t s, kvc_state want, const char *op)
{
	static const char *const names[] = {
		"WAITING", "RUNNING", "SWAPPED", "DEAD"
	};
	kvc_state st = v0_state(k, s);

	if (st == want)
		return KV_OK;
	return kvc__fail(k, KV_ESTATE, "%s needs a %s request, this one is "
			 "%s", op, names[want], names[st]);
}

/* Whether slot i of a table with `full` tokens is a full block. */
static bool
v0_slot_full(const struct v0 *m, const struct kvc_tab *t, uint32_t full,
	     uint32_t i)
{
	if (t->id[i] == KVC_NULL)
		return false;
	return ((uint64_t)i + 1) * m->bs <= full;
}

static bool
v0_has_null(const struct kvc_tab *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		if (t->id[i] == KVC_NULL)
			return true;
	return false;
}

static kv_err
v0_reserve_tab(kvc *k, int32_t s, uint64_t n)
{
	if (n > UINT32_MAX / 2)
		return kvc__fail(k, KV_EINVAL, "sequence too long");
	if (kvc__tab_reserve(k, &k->seq[s].tab[0], (uint32_t)n) != KV_OK)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	return KV_OK;
}

/*
 * BlockTable.append_token_ids for sequence s (RUNNING, GPU): the sliding
 * window drop, ensure_num_empty_slots(unseen + L), then the unseen tokens
 * written block by block (copy-on-write of shared blocks, promotion of
 * blocks that fill).  Copy-on-write pairs go to the pair buffer.
 */
static kv_err
v0_append_slots(kvc *k, struct v0 *m, int32_t s, uint32_t L)
{
	struct kvc_seq *q = &k->seq[s];
	struct kvc_tab *t = &q->tab[0];
	uint32_t bs = m->bs, full = v0_nfs(m, s);
	uint32_t unseen = q->ntok - full;
	uint64_t empty, need;
	int32_t id;
	kv_err e;

	m->lost_seq = s;
	m->lost_from = UINT32_MAX;
	m->lost_block = -1;
	if (m->sw) {
		int64_t end;

		if (m->null_id < 0) {
			uint64_t obj;

			e = v0_draw(k, m, V0_GPU, &id);
			if (e == KV_OK)
				e = v0_obj_new(k, m, V0_GPU, &obj);
			if (e != KV_OK)
				return e;
			if (v0_set_i32(m, &m->null_id, id) != KV_OK)
				return KV_ENOMEM;
		}
		end = (int64_t)(q->ncomp / bs) - (int64_t)m->maxsw;
		for (int64_t i = 0; i < end && i < (int64_t)t->n; i++) {
			if (t->id[i] == KVC_NULL)
				continue;
			if (v0_release(m, V0_GPU, t->id[i], 0, 0) != KV_OK ||
			    v0_obj_free(m, V0_GPU, t->aux[i]) != KV_OK ||
			    v0_tab_set(k, m, s, (uint32_t)i, KVC_NULL, 0) !=
			    KV_OK)
				return KV_ENOMEM;
		}
	}
	empty = (uint64_t)t->n * bs - full;
	need = (uint64_t)unseen + L;
	if (empty < need) {
		uint64_t cnt = kvc_cdiv(need - empty, bs);

		e = v0_reserve_tab(k, s, t->n + cnt);
		if (e != KV_OK)
			return e;
		for (uint64_t i = 0; i < cnt; i++) {
			uint64_t obj;

			e = v0_draw(k, m, V0_GPU, &id);
			if (e == KV_OK)
				e = v0_obj_new(k, m, V0_GPU, &obj);
			if (e != KV_OK)
				return e;
			if (v0_tab_push(k, m, s, id, obj) != KV_OK)
				return KV_ENOMEM;
		}
	}
	/* write the unseen tokens */
	for (uint32_t pos = full; pos < q->ntok;) {
		uint32_t i = pos / bs;
		uint32_t chunk = bs - pos % bs;

		if (chunk > q->ntok - pos)
			chunk = q->ntok - pos;
		id = t->id[i];
		if (m->pool[V0_GPU].b[id].ref > 1) {
			int32_t nid;

			/* cow_block_if_not_appendable: free, then take */
			if (v0_release(m, V0_GPU, id, 0, 0) != KV_OK)
				return KV_ENOMEM;
			e = v0_draw(k, m, V0_GPU, &nid);
			if (e != KV_OK)
				return e;
			if (v0_tab_set(k, m, s, i, nid, t->aux[i]) != KV_OK ||
			    kvc__pair_push(k, id, nid) != KV_OK)
				return KV_ENOMEM;
			id = nid;
		}
		pos += chunk;
		if (m->pc && pos % bs == 0) {
			/* promote_to_immutable_block */
			uint64_t h = v0_hash_at(m, q, i ? t->aux[i - 1] : 0,
						i);
			int32_t cid = kv_hmap_get(&m->pool[V0_GPU].map, h);

			if (cid < 0) {
				if (v0_register(m, V0_GPU, id, h) != KV_OK ||
				    v0_tab_set(k, m, s, i, id, h) != KV_OK)
					return KV_ENOMEM;
			} else {
				/*
				 * The block the sequence computed its
				 * positions of slot i in is dropped for the
				 * cached one; where that one's KV is not
				 * computed yet (another request allocated
				 * it, its chunk has not run), they are gone.
				 */
				uint32_t need = q->ncomp > i * bs ?
						q->ncomp - i * bs : 0;

				if (need > bs)
					need = bs;
				if (cid != id &&
				    m->pool[V0_GPU].b[cid].kvn < need &&
				    i * bs < m->lost_from) {
					m->lost_from = i * bs;
					m->lost_block = cid;
				}
				if (v0_release(m, V0_GPU, id, 0, 0) != KV_OK ||
				    v0_hit(m, V0_GPU, cid) != KV_OK ||
				    v0_tab_set(k, m, s, i, cid, h) != KV_OK)
					return KV_ENOMEM;
			}
		}
	}
	return v0_set_u32(m, &m->nfs[s], q->ntok);
}

/* ---- configuration and lifecycle -------------------------------------- */

static kv_err
v0_check_config(const struct kvc_config *c, char *why, size_t whylen)
{
	if (c->ngroups != 1)
		return kvc__failbuf(why, whylen, KV_ECONFIG, "vllm-v0 has "
				    "exactly one KV cache group, not %u",
				    c->ngroups);
	if (c->group[0].kind != KVC_FULL && c->group[0].kind != KVC_SLIDING)
		return kvc__failbuf(why, whylen, KV_ECONFIG, "vllm-v0 groups "
				    "are kind=full or kind=sliding");
	if (c->reuse == KVC_REUSE_FIFO_LRU)
		return kvc__failbuf(why, whylen, KV_ECONFIG, "vllm-v0 reuses "
				    "free blocks LIFO (its deque)");
	if (c->group[0].kind == KVC_SLIDING && c->prefix_caching)
		return kvc__failbuf(why, whylen, KV_ECONFIG, "vllm-v0: prefix "
				    "caching is not supported with a sliding "
				    "window (CacheConfig."
				    "_verify_prefix_caching)");
	return KV_OK;
}

static void
v0_pool_release(struct v0_pool *p)
{
	free(p->b);
	kv_list_release(&p->fl);
	kv_hmap_release(&p->map);
	free(p->heap);
	free(p->touched);
	free(p->evm);
	memset(p, 0, sizeof(*p));
}

static kv_err
v0_pool_init(struct v0_pool *p, uint32_t n, bool pc)
{
	memset(p, 0, sizeof(*p));
	p->n = n;
	p->b = calloc(n ? n : 1, sizeof(*p->b));
	p->touched = malloc((n ? n : 1) * sizeof(*p->touched));
	p->evm = malloc((n ? n : 1) * sizeof(*p->evm));
	if (p->b == NULL || p->touched == NULL || p->evm == NULL)
		goto fail;
	if (kv_list_init(&p->fl, n) != KV_OK)
		goto fail;
	if (pc && kv_hmap_init(&p->map, n) != KV_OK)
		goto fail;
	for (uint32_t i = 0; i < n; i++) {
		p->b[i].time = -1;
		p->b[i].ev_time = -1;
		kv_list_push_back(&p->fl, (int32_t)i);
	}
	return KV_OK;
fail:
	v0_pool_release(p);
	return KV_ENOMEM;
}

static void
v0_release_all(kvc *k)
{
	struct v0 *m = v0_of(k);

	if (m == NULL)
		return;
	v0_pool_release(&m->pool[V0_GPU]);
	v0_pool_release(&m->pool[V0_CPU]);
	free(m->obj[V0_GPU].stk);
	free(m->obj[V0_CPU].stk);
	free(m->nfs);
	free(m->j);
	free(m->scratch);
	free(m);
	k->ms = NULL;
}

static kv_err
v0_init(kvc *k)
{
	const struct kvc_config *c = &k->cfg;
	uint32_t most = c->gpu_blocks > c->cpu_blocks ? c->gpu_blocks :
		c->cpu_blocks;
	struct v0 *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	k->ms = m;
	m->pc = c->prefix_caching;
	m->sw = c->group[0].kind == KVC_SLIDING;
	m->bs = c->group[0].block_size;
	m->wm = (uint32_t)(c->watermark * (double)c->gpu_blocks);
	m->maxsw = m->sw ? c->group[0].window / m->bs + 2 : 0;
	m->null_id = -1;
	m->lost_seq = -1;
	m->lost_from = UINT32_MAX;
	m->lost_block = -1;
	/* BlockPool(num_blocks * extra_factor), extra_factor = 4 */
	m->obj[V0_GPU].size = 4 * c->gpu_blocks;
	m->obj[V0_CPU].size = 4 * c->cpu_blocks;
	m->scratch = malloc((most ? most : 1) * sizeof(*m->scratch));
	if (m->scratch == NULL ||
	    v0_pool_init(&m->pool[V0_GPU], c->gpu_blocks, m->pc) != KV_OK ||
	    v0_pool_init(&m->pool[V0_CPU], c->cpu_blocks, m->pc) != KV_OK) {
		v0_release_all(k);
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	}
	return KV_OK;
}

static kv_err
v0_pool_copy(struct v0_pool *d, const struct v0_pool *s, bool pc)
{
	uint32_t n = s->n ? s->n : 1;

	memset(d, 0, sizeof(*d));
	d->n = s->n;
	d->nev = s->nev;
	d->ntouched = s->ntouched;
	d->b = malloc(n * sizeof(*d->b));
	d->touched = malloc(n * sizeof(*d->touched));
	d->evm = malloc(n * sizeof(*d->evm));
	if (d->b == NULL || d->touched == NULL || d->evm == NULL)
		goto fail;
	memcpy(d->b, s->b, s->n * sizeof(*d->b));
	memcpy(d->evm, s->evm, s->nev * sizeof(*d->evm));
	memcpy(d->touched, s->touched, s->ntouched * sizeof(*d->touched));
	if (kv_list_copy(&d->fl, &s->fl) != KV_OK)
		goto fail;
	if (pc && kv_hmap_copy(&d->map, &s->map) != KV_OK)
		goto fail;
	if (s->capheap > 0) {
		d->heap = malloc(s->capheap * sizeof(*d->heap));
		if (d->heap == NULL)
			goto fail;
		memcpy(d->heap, s->heap, s->nheap * sizeof(*d->heap));
		d->capheap = s->capheap;
		d->nheap = s->nheap;
	}
	return KV_OK;
fail:
	v0_pool_release(d);
	return KV_ENOMEM;
}

static kv_err
v0_clone(kvc *dst, const kvc *src)
{
	const struct v0 *s = v0_of(src);
	uint32_t most = src->cfg.gpu_blocks > src->cfg.cpu_blocks ?
		src->cfg.gpu_blocks : src->cfg.cpu_blocks;
	struct v0 *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return KV_ENOMEM;
	*m = *s;
	memset(m->pool, 0, sizeof(m->pool));
	for (int pi = 0; pi < 2; pi++) {
		m->obj[pi].stk = NULL;
		m->obj[pi].capstk = 0;
	}
	m->nfs = NULL;
	m->capnfs = 0;
	m->j = NULL;
	m->nj = m->capj = 0;
	m->scratch = NULL;
	dst->ms = m;
	m->scratch = malloc((most ? most : 1) * sizeof(*m->scratch));
	if (m->scratch == NULL)
		goto fail;
	if (s->capnfs > 0) {
		m->nfs = malloc(s->capnfs * sizeof(*m->nfs));
		if (m->nfs == NULL)
			goto fail;
		memcpy(m->nfs, s->nfs, s->capnfs * sizeof(*m->nfs));
		m->capnfs = s->capnfs;
	}
	if (v0_pool_copy(&m->pool[V0_GPU], &s->pool[V0_GPU], s->pc) != KV_OK ||
	    v0_pool_copy(&m->pool[V0_CPU], &s->pool[V0_CPU], s->pc) != KV_OK)
		goto fail;
	for (int pi = 0; pi < 2; pi++) {
		const struct v0_opool *o = &s->obj[pi];

		if (o->capstk == 0)
			continue;
		m->obj[pi].stk = malloc(o->capstk * sizeof(*o->stk));
		if (m->obj[pi].stk == NULL)
			goto fail;
		memcpy(m->obj[pi].stk, o->stk, o->capstk * sizeof(*o->stk));
		m->obj[pi].capstk = o->capstk;
	}
	return KV_OK;
fail:
	v0_release_all(dst);
	return KV_ENOMEM;
}

/* ---- decisions -------------------------------------------------------- */

static kv_err
v0_can_allocate(kvc *k, int32_t s, uint32_t L, kvc_verdict *o)
{
	struct v0 *m = v0_of(k);
	int64_t req, G = k->cfg.gpu_blocks, F, wm = m->wm;
	kv_err e = v0_want(k, s, KVC_WAITING, "can_allocate");

	if (e != KV_OK)
		return e;
	/* the first WAITING sequence: the root (its children are dead) */
	req = (int64_t)kvc_cdiv((uint64_t)k->seq[k->seq[s].req].ntok + L,
				m->bs);
	if (m->sw && req > (int64_t)m->maxsw)
		req = m->maxsw;
	F = v0_pool_free(&m->pool[V0_GPU]);
	if (G - req < wm)
		*o = KVC_VERDICT_NEVER;
	else if (F - req >= wm)
		*o = KVC_VERDICT_OK;
	else
		*o = KVC_VERDICT_LATER;
	return KV_OK;
}

static kv_err
v0_can_append(kvc *k, int32_t s, uint32_t n, bool has_n, uint32_t L,
	      bool *o)
{
	struct v0 *m = v0_of(k);
	const struct kvc_seq *q = &k->seq[s];
	uint32_t full = v0_nfs(m, s);
	kv_err e = v0_want(k, s, KVC_RUNNING, "can_append");

	if (e != KV_OK)
		return e;
	if (!has_n)
		n = 1;
	*o = v0_touched(m->bs, full, (uint64_t)(q->ntok - full) + n, L) <=
		(int64_t)v0_pool_free(&m->pool[V0_GPU]);
	return KV_OK;
}

/*
 * vLLM v0's can_append_slots for the request of s: the blocks every
 * running sequence of it touches by appending its unseen tokens plus L
 * lookahead slots, summed, against the free GPU blocks.
 */
kv_err
kvc__v0_can_append_group(kvc *k, int32_t s, uint32_t L, bool *o)
{
	struct v0 *m = v0_of(k);
	int64_t touched = 0;
	kv_err e = v0_want(k, s, KVC_RUNNING, "can_append");

	if (e != KV_OK)
		return e;
	V0_FOREACH(k, t, k->seq[s].req) {
		uint32_t full = v0_nfs(m, t);

		touched += v0_touched(m->bs, full,
				      (uint64_t)(k->seq[t].ntok - full), L);
	}
	*o = touched <= (int64_t)v0_pool_free(&m->pool[V0_GPU]);
	return KV_OK;
}

uint32_t
kvc__v0_group(const kvc *k, int32_t s, int32_t *out, uint32_t cap)
{
	uint32_t n = 0;

	if (s < 0 || (uint32_t)s >= k->nseq || k->seq[s].state == KVC_DEAD)
		return 0;
	V0_FOREACH(k, t, k->seq[s].req) {
		if (n < cap)
			out[n] = t;
		n++;
	}
	return n;
}

/*
 * Whether full slot i of sequence t holds the block that an earlier live
 * sequence of its request holds at slot i too (a block forked sequences
 * share: same content hash with prefix caching).
 */
static bool
v0_slot_shared(const kvc *k, const struct v0 *m, int32_t t, uint32_t i)
{
	const struct kvc_tab *tb = &k->seq[t].tab[0];

	V0_FOREACH(k, u, k->seq[t].req) {
		const struct kvc_tab *ub = &k->seq[u].tab[0];

		if (u == t)
			return false;
		if (i < ub->n && v0_slot_full(m, ub, v0_nfs(m, u), i) &&
		    ub->id[i] == tb->id[i] && ub->aux[i] == tb->aux[i])
			return true;
	}
	return false;
}

/*
 * SelfAttnBlockSpaceManager._can_swap onto pool pi.  `once`: count a full
 * block the request's sequences share once, not once per sequence (not
 * the reference's count: kvc__v0_swap_in_shared_never).
 */
static kvc_verdict
v0_can_swap(kvc *k, struct v0 *m, int32_t s, int pi, uint32_t L, bool once)
{
	const struct v0_pool *p = &m->pool[pi];
	int64_t touched = 0, wm = pi == V0_GPU ? m->wm : 0;

	V0_FOREACH(k, t, k->seq[s].req) {
		const struct kvc_seq *q = &k->seq[t];
		const struct kvc_tab *tb = &q->tab[0];
		uint32_t full = v0_nfs(m, t);

		touched += v0_touched(m->bs, full, q->ntok - full, L);
		/* get_num_full_blocks_touched, one count per block object */
		for (uint32_t i = 0; i < tb->n; i++) {
			int32_t id;

			if (!v0_slot_full(m, tb, full, i) ||
			    (once && v0_slot_shared(k, m, t, i)))
				continue;
			if (!m->pc) {
				touched++;
				continue;
			}
			id = kv_hmap_get(&p->map, tb->aux[i]);
			if (id < 0 || p->b[id].in_ev)
				touched++;
		}
	}
	if ((int64_t)p->n < touched)
		return KVC_VERDICT_NEVER;
	if ((int64_t)v0_pool_free(p) - touched >= wm)
		return KVC_VERDICT_OK;
	return KVC_VERDICT_LATER;
}

static kv_err
v0_can_swap_out(kvc *k, int32_t s, bool *o)
{
	kv_err e = v0_want(k, s, KVC_RUNNING, "can_swap_out");

	if (e != KV_OK)
		return e;
	*o = v0_can_swap(k, v0_of(k), s, V0_CPU, 0, false) ==
	    KVC_VERDICT_OK;
	return KV_OK;
}

static kv_err
v0_can_swap_in(kvc *k, int32_t s, uint32_t L, kvc_verdict *o)
{
	kv_err e = v0_want(k, s, KVC_SWAPPED, "can_swap_in");

	if (e != KV_OK)
		return e;
	*o = v0_can_swap(k, v0_of(k), s, V0_GPU, L, false);
	return KV_OK;
}

kv_err
kvc__v0_swap_in_shared_never(kvc *k, int32_t s, uint32_t L, bool *o)
{
	struct v0 *m;
	kv_err e;

	*o = false;
	if (k->cfg.mode != KVC_VLLM_V0 || !(m = v0_of(k))->pc)
		return KV_OK;
	if ((e = v0_want(k, s, KVC_SWAPPED, "can_swap_in")) != KV_OK)
		return e;
	*o = v0_can_swap(k, m, s, V0_GPU, L, false) == KVC_VERDICT_NEVER &&
	    v0_can_swap(k, m, s, V0_GPU, L, true) != KVC_VERDICT_NEVER;
	return KV_OK;
}

/* ---- actions ---------------------------------------------------------- */

static kv_err
v0_allocate(kvc *k, int32_t s, uint32_t n)
{
	struct v0 *m = v0_of(k);
	int32_t r = k->seq[s].req, id;
	struct kvc_seq *q = &k->seq[r];
	uint32_t nfull, bs = m->bs;
	uint64_t h = 0, aux;
	kv_err e;

	(void)n;	/* v0 reserves the whole prompt at admission (R22) */
	e = v0_want(k, s, KVC_WAITING, "allocate");
	if (e != KV_OK)
		return e;
	if ((e = v0_nfs_reserve(k, m)) != KV_OK ||
	    (e = v0_reserve_tab(k, r, kvc_cdiv(q->ntok, bs))) != KV_OK)
		return e;
	nfull = q->ntok / bs;
	/* Every id from the hashless list: no eviction, nothing can fail. */
	m->nojournal = m->pool[V0_GPU].fl.n >= kvc_cdiv(q->ntok, bs);
	for (uint32_t i = 0; i < nfull; i++) {
		if (m->pc)
			h = v0_hash_at(m, q, h, i);
		/* slot aux: the content hash, or the block object (naive) */
		aux = h;
		e = v0_immutable(k, m, V0_GPU, h, &id);
		if (e == KV_OK && !m->pc)
			e = v0_obj_new(k, m, V0_GPU, &aux);
		if (e != KV_OK)
			return v0_end(k, m, e);
		if (v0_tab_push(k, m, r, id, aux) != KV_OK)
			return v0_end(k, m, KV_ENOMEM);
	}
	if (q->ntok % bs != 0) {
		e = v0_draw(k, m, V0_GPU, &id);
		if (e == KV_OK)
			e = v0_obj_new(k, m, V0_GPU, &aux);
		if (e != KV_OK)
			return v0_end(k, m, e);
		if (v0_tab_push(k, m, r, id, aux) != KV_OK)
			return v0_end(k, m, KV_ENOMEM);
	}
	v0_end(k, m, KV_OK);
	m->nfs[r] = q->ntok;
	q->state = KVC_RUNNING;
	q->access = k->now;
	return KV_OK;
}

/*
 * Whether append_slots(s, L), its tokens already added, only writes into
 * blocks the table holds and owns alone: no block to take, none to copy,
 * none filling up to be promoted (prefix caching), no sliding window.  Such
 * a call cannot fail, so it skips the journal (a decode's usual case).
 */
static bool
v0_append_infallible(const kvc *k, const struct v0 *m, int32_t s, uint32_t L)
{
	const struct kvc_seq *q = &k->seq[s];
	const struct kvc_tab *t = &q->tab[0];
	uint32_t full = v0_nfs(m, s), bs = m->bs;

	if (m->sw ||
	    (uint64_t)t->n * bs - full < (uint64_t)(q->ntok - full) + L)
		return false;
	if (m->pc && q->ntok / bs > full / bs)
		return false;
	for (uint64_t i = full / bs; i * bs < q->ntok; i++)
		if (m->pool[V0_GPU].b[t->id[i]].ref > 1)
			return false;
	return true;
}

static kv_err
v0_append(kvc *k, int32_t s, const uint32_t *tok, size_t ntok, uint32_t L,
	  bool has_L)
{
	struct v0 *m = v0_of(k);
	struct kvc_seq *q = &k->seq[s];
	uint32_t old = q->ntok;
	kv_err e;

	if (v0_state(k, s) != KVC_RUNNING) {
		if (has_L)
			return kvc__fail(k, KV_EINVAL, "lookahead= needs a "
					 "RUNNING sequence");
		if (kvc__tok_push(q, tok, ntok) != KV_OK)
			return kvc__fail(k, KV_ENOMEM, "out of memory");
		return KV_OK;
	}
	if ((e = v0_nfs_reserve(k, m)) != KV_OK)
		return e;
	/* ntok == 0: append_slots for the unseen tokens (kvc_append_slots) */
	if (ntok > 0 && kvc__tok_push(q, tok, ntok) != KV_OK)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	m->nojournal = v0_append_infallible(k, m, s, L);
	e = v0_append_slots(k, m, s, L);
	if (e != KV_OK) {
		v0_end(k, m, e);
		q->ntok = old;	/* R23: the tokens are not added */
		return e;
	}
	v0_end(k, m, KV_OK);
	q->access = k->now;
	return KV_OK;
}

static kv_err
v0_computed(kvc *k, int32_t s, uint32_t n, bool has_n)
{
	struct v0 *m = v0_of(k);
	struct kvc_seq *q = &k->seq[s];
	struct v0_pool *p = &m->pool[V0_GPU];
	kv_err e = v0_want(k, s, KVC_RUNNING, "computed");

	if (e != KV_OK)
		return e;
	if (!has_n)
		n = q->ntok - q->ncomp;
	if (n > q->ntok - q->ncomp)
		return kvc__fail(k, KV_EINVAL, "n=%u exceeds the %u tokens not "
				 "yet computed", n, q->ntok - q->ncomp);
	/* the blocks' slots the computed tokens now cover hold their KV */
	for (uint32_t i = q->ncomp / m->bs; i < q->tab[0].n &&
	     (uint64_t)i * m->bs < (uint64_t)q->ncomp + n; i++) {
		uint64_t end = (uint64_t)q->ncomp + n - (uint64_t)i * m->bs;
		int32_t id = q->tab[0].id[i];

		if (end > m->bs)
			end = m->bs;
		if (id >= 0 && p->b[id].kvn < end)
			p->b[id].kvn = (uint32_t)end;
	}
	q->ncomp += n;
	if (q->ncomp == q->ntok)
		q->prefill = 0;
	/* mark_blocks_as_computed: every block promoted since the last */
	for (uint32_t i = 0; i < p->ntouched; i++) {
		struct v0_blk *b = &p->b[p->touched[i]];

		b->computed = 1;
		b->touched = 0;
	}
	p->ntouched = 0;
	return KV_OK;
}

static kv_err
v0_fork(kvc *k, int32_t s, int32_t c)
{
	struct v0 *m = v0_of(k);
	struct kvc_seq *q = &k->seq[s], *d = &k->seq[c];
	const struct kvc_tab *t = &q->tab[0];
	kv_err e = v0_want(k, s, KVC_RUNNING, "fork");

	if (e != KV_OK)
		return e;
	if (v0_has_null(t))
		return kvc__fail(k, KV_EREF, "fork of a table holding "
				 "sliding-window null blocks (the reference "
				 "walks freed block objects)");
	if ((e = v0_nfs_reserve(k, m)) != KV_OK ||
	    (e = v0_reserve_tab(k, c, t->n)) != KV_OK)
		return e;
	if (kvc__tok_push(d, q->tok, q->ntok) != KV_OK)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	/* a new block object per block, sharing its id */
	for (uint32_t i = 0; i < t->n; i++) {
		uint64_t aux = t->aux[i];

		if ((e = v0_obj_new(k, m, V0_GPU, &aux)) != KV_OK ||
		    (e = v0_jblk(m, V0_GPU, t->id[i])) != KV_OK)
			return v0_end(k, m, e);
		m->pool[V0_GPU].b[t->id[i]].ref++;
		d->tab[0].id[i] = t->id[i];
		d->tab[0].aux[i] = m->pc ? t->aux[i] : aux;
	}
	v0_end(k, m, KV_OK);
	d->tab[0].n = t->n;
	d->ncomp = q->ncomp;
	d->prefill = q->prefill;
	d->state = KVC_RUNNING;
	d->access = k->now;
	d->memo = -1;
	m->nfs[c] = m->nfs[s];
	return KV_OK;
}

/*
 * Move every live sequence of the request from pool `from` to pool `to`
 * (CpuGpuBlockAllocator.swap per sequence: the source frees the whole
 * table, then the destination allocates it block by block).  The pairs of
 * one sequence form a dict keyed by the source id.
 */
static kv_err
v0_swap_tables(kvc *k, struct v0 *m, int32_t r, int from, int to)
{
	kv_err e;

	V0_FOREACH(k, t, r) {
		struct kvc_tab *tb = &k->seq[t].tab[0];
		uint32_t full = v0_nfs(m, t), first = k->npairs;

		/*
		 * The reference frees the null block's id, then raises trying
		 * to clear the NullBlock's id; sequences before this one were
		 * swapped (or failed) normally.
		 */
		if (v0_has_null(tb))
			return kvc__fail(k, KV_EREF, "swap of a table holding "
					 "sliding-window null blocks (the "
					 "reference frees the null block)");
		for (uint32_t i = 0; i < tb->n; i++)
			if (v0_release(m, from, tb->id[i],
				       m->pc ? tb->aux[i] : 0,
				       (i + 1) * m->bs) != KV_OK)
				return KV_ENOMEM;
		for (uint32_t i = 0; i < tb->n; i++) {
			int32_t src = tb->id[i], dst;
			uint32_t j;

			if (v0_slot_full(m, tb, full, i))
				e = v0_immutable(k, m, to, tb->aux[i], &dst);
			else
				e = v0_draw(k, m, to, &dst);
			if (e == KV_OK)
				e = v0_obj_tmp(k, m, to);
			if (e != KV_OK)
				return e;
			if (v0_tab_set(k, m, t, i, dst, tb->aux[i]) != KV_OK)
				return KV_ENOMEM;
			/* the copy brings src's content (dst was journalled
			 * by the draw or the hit) */
			m->pool[to].b[dst].kvn = m->pool[from].b[src].kvn;
			for (j = first; j < k->npairs; j++)
				if (k->pairs[j].src == src)
					break;
			if (j < k->npairs)
				k->pairs[j].dst = dst;
			else if (kvc__pair_push(k, src, dst) != KV_OK)
				return KV_ENOMEM;
		}
	}
	return KV_OK;
}

static kv_err
v0_swap_out(kvc *k, int32_t s)
{
	struct v0 *m = v0_of(k);
	int32_t r = k->seq[s].req;
	kv_err e = v0_want(k, s, KVC_RUNNING, "swap_out");

	if (e != KV_OK)
		return e;
	/*
	 * With prefix caching and no CPU blocks the CPU allocator's block
	 * object pool is empty and cannot grow: the first full block asserts
	 * in BlockPool.init_block, while a first block not full raises
	 * NoFreeBlocksError (an ordinary failure) before reaching it.
	 */
	if (m->pc && k->cfg.cpu_blocks == 0 &&
	    k->seq[v0_live(k, r)].tab[0].aux[0] != 0)
		return kvc__fail(k, KV_EREF, "swap_out with prefix caching "
				 "and no CPU blocks (the reference's empty "
				 "block pool asserts)");
	e = v0_swap_tables(k, m, r, V0_GPU, V0_CPU);
	if (e != KV_OK)
		return v0_end(k, m, e);
	v0_end(k, m, KV_OK);
	V0_FOREACH(k, t, r)
		k->seq[t].state = KVC_SWAPPED;
	return KV_OK;
}

static kv_err
v0_swap_in(kvc *k, int32_t s, uint32_t L)
{
	struct v0 *m = v0_of(k);
	int32_t r = k->seq[s].req;
	uint32_t maps;
	kv_err e = v0_want(k, s, KVC_SWAPPED, "swap_in");

	if (e != KV_OK || (e = v0_nfs_reserve(k, m)) != KV_OK)
		return e;
	e = v0_swap_tables(k, m, r, V0_CPU, V0_GPU);
	maps = k->npairs;
	/* then append_slots(seq, L) for each sequence, as the scheduler does */
	V0_FOREACH(k, t, r) {
		if (e != KV_OK)
			break;
		e = v0_append_slots(k, m, t, L);
	}
	if (e != KV_OK)
		return v0_end(k, m, e);
	v0_end(k, m, KV_OK);
	k->npairs = maps;	/* a swapped-in table shares no partial block */
	V0_FOREACH(k, t, r) {
		k->seq[t].state = KVC_RUNNING;
		k->seq[t].access = k->now;
	}
	return KV_OK;
}

static kv_err
v0_free_seq(kvc *k, int32_t s)
{
	struct v0 *m = v0_of(k);
	int32_t r = k->seq[s].req;
	kvc_state st = v0_state(k, s);
	int pi = st == KVC_SWAPPED ? V0_CPU : V0_GPU;
	kv_err e = KV_OK;

	if (st == KVC_WAITING)
		return kvc__fail(k, KV_ESTATE, "nothing to free: the request "
				 "holds no blocks");
	if (m->pc && st == KVC_SWAPPED)
		return kvc__fail(k, KV_EREF, "free of a SWAPPED request with "
				 "prefix caching (the reference stamps CPU ids "
				 "in the GPU tracker: KeyError)");
	if (!m->pc) {
		uint32_t slots = 0;

		V0_FOREACH(k, t, r)
			slots += k->seq[t].tab[0].n;
		if (v0_obj_reserve(m, pi, slots) != KV_OK)
			return kvc__fail(k, KV_ENOMEM, "out of memory");
	}
	/* Past the checks above a free only releases: it cannot fail. */
	m->nojournal = true;
	V0_FOREACH(k, t, r) {
		struct kvc_tab *tb = &k->seq[t].tab[0];

		/* LastAccessBlocksTracker.update_seq_blocks_last_access */
		if (m->pc)
			for (uint32_t i = 0; i < tb->n; i++) {
				struct v0_blk *b;

				if (tb->id[i] == KVC_NULL)
					continue;
				b = &m->pool[pi].b[tb->id[i]];
				if (v0_jblk(m, pi, tb->id[i]) != KV_OK) {
					e = KV_ENOMEM;
					break;
				}
				if (b->active)
					b->time = k->seq[t].access;
			}
		for (uint32_t i = 0; e == KV_OK && i < tb->n; i++)
			if (tb->id[i] != KVC_NULL &&
			    (v0_release(m, pi, tb->id[i],
					m->pc ? tb->aux[i] : 0,
					(i + 1) * m->bs) != KV_OK ||
			     v0_obj_free(m, pi, tb->aux[i]) != KV_OK))
				e = KV_ENOMEM;
		if (e != KV_OK)
			return v0_end(k, m, e);
	}
	v0_end(k, m, KV_OK);
	V0_FOREACH(k, t, r) {
		struct kvc_seq *q = &k->seq[t];

		q->tab[0].n = 0;
		if ((uint32_t)t < m->capnfs)
			m->nfs[t] = 0;
		q->memo = -1;
		if (t != r) {
			q->state = KVC_DEAD;
			continue;
		}
		q->state = KVC_WAITING;
		q->ncomp = 0;
		q->prefill = 1;
	}
	return KV_OK;
}

/*
 * find_cached_blocks_prefix of s's full blocks now: the leading blocks whose
 * hash is on the GPU and computed (or evictable), in tokens.
 */
static kv_err
v0_cached_prefix(kvc *k, const struct kvc_seq *q, bool filled,
		 uint32_t *tokens)
{
	struct v0 *m = v0_of(k);
	const struct v0_pool *p = &m->pool[V0_GPU];
	uint32_t nb = q->ntok / m->bs, prefix = filled ? 0 : nb;
	uint64_t h = 0;

	for (uint32_t i = 0; i < nb; i++) {
		int32_t id;
		bool hit;

		h = v0_hash_at(m, q, h, i);
		id = kv_hmap_get(&p->map, h);
		hit = id >= 0 && (p->b[id].active ? p->b[id].computed != 0 :
				  p->b[id].in_ev != 0);
		if (filled) {
			/* kvsim's question, not vLLM's: the leading run of
			 * blocks in the cache whose KV was computed */
			if (!hit || p->b[id].kvn < m->bs)
				break;
			prefix = i + 1;
			continue;
		}
		if (!hit && prefix == nb)
			prefix = i;
		else if (hit && prefix < nb)
			return kvc__fail(k, KV_EREF, "cached: block %u is "
					 "cached but block %u before it is not "
					 "(the reference binary-searches a "
					 "prefix it assumes contiguous)", i,
					 prefix);
	}
	*tokens = prefix * m->bs;
	return KV_OK;
}

static kv_err
v0_cached(kvc *k, int32_t s, size_t *tokens)
{
	struct v0 *m = v0_of(k);
	struct kvc_seq *q = &k->seq[s];
	uint32_t now;
	kv_err e;

	*tokens = 0;
	if (!m->pc)
		return KV_OK;
	if (q->memo >= 0 && q->prefill) {
		*tokens = (size_t)q->memo;
		return KV_OK;
	}
	if ((e = v0_cached_prefix(k, q, false, &now)) != KV_OK)
		return e;
	q->memo = (int64_t)now;
	*tokens = now;
	return KV_OK;
}

void
kvc__v0_forget_cached(kvc *k, int32_t s)
{
	if (k->cfg.mode == KVC_VLLM_V0 && s >= 0 && (uint32_t)s < k->nseq)
		k->seq[s].memo = -1;
}

kv_err
kvc__v0_lost(kvc *k, int32_t s, struct kvc__lost *out)
{
	const struct v0 *m;

	memset(out, 0, sizeof(*out));
	out->block = -1;
	if (k->cfg.mode != KVC_VLLM_V0)
		return KV_OK;
	m = v0_of(k);
	if (m->pc && m->lost_seq == s && m->lost_from < k->seq[s].ncomp) {
		out->tokens = k->seq[s].ncomp - m->lost_from;
		out->block = m->lost_block;
		/* the block's slots the sequence reads: up to its
		 * computed count, within the block */
		out->need = out->tokens < m->bs ? out->tokens : m->bs;
	}
	return KV_OK;
}

uint32_t
kvc__v0_kvn(const kvc *k, int32_t id)
{
	const struct v0 *m;

	if (k->cfg.mode != KVC_VLLM_V0 || id < 0)
		return 0;
	m = v0_of(k);
	return (uint32_t)id < m->pool[V0_GPU].n ? m->pool[V0_GPU].b[id].kvn :
						 0;
}

kv_err
kvc__v0_cached_now(kvc *k, int32_t s, size_t *tokens)
{
	uint32_t now = 0;
	kv_err e;

	*tokens = 0;
	if (k->cfg.mode != KVC_VLLM_V0 || !v0_of(k)->pc)
		return KV_OK;
	if ((e = kvc__enter(k, s)) != KV_OK ||
	    (e = v0_cached_prefix(k, &k->seq[s], true, &now)) != KV_OK)
		return e;
	*tokens = now;
	return KV_OK;
}

static kv_err
v0_blocks_needed(kvc *k, int32_t s, uint32_t n, uint32_t L,
		 uint32_t need[KVC_MAX_GROUPS])
{
	struct v0 *m = v0_of(k);
	const struct v0_pool *p = &m->pool[V0_GPU];
	const struct kvc_seq *q = &k->seq[s];
	uint32_t bs = m->bs;
	uint64_t cnt = 0;

	switch (v0_state(k, s)) {
	case KVC_WAITING: {
		uint64_t h = 0;

		q = &k->seq[q->req];
		for (uint32_t i = 0; i < q->ntok / bs; i++) {
			int32_t id;

			if (!m->pc) {
				cnt++;
				continue;
			}
			h = v0_hash_at(m, q, h, i);
			id = kv_hmap_get(&p->map, h);
			if (id < 0 || p->b[id].ref == 0)
				cnt++;
		}
		cnt += (q->ntok % bs != 0) +
			kvc_cdiv((uint64_t)q->ntok + L, bs) -
			kvc_cdiv(q->ntok, bs);
		break;
	}
	case KVC_RUNNING: {
		const struct kvc_tab *t = &q->tab[0];
		uint32_t full = v0_nfs(m, s);
		uint64_t unseen = (uint64_t)q->ntok - full + n;
		uint64_t empty = (uint64_t)t->n * bs - full;

		cnt = m->sw && m->null_id < 0;
		if (empty < unseen + L)
			cnt += kvc_cdiv(unseen + L - empty, bs);
		for (uint64_t i = full / bs; unseen > 0 && i < t->n &&
		     i * bs < full + unseen; i++)
			if (t->id[i] != KVC_NULL &&
			    p->b[t->id[i]].ref > 1)
				cnt++;
		break;
	}
	default:
		return kvc__fail(k, KV_ESTATE, "blocks_needed: the request "
				 "is swapped out");
	}
	need[0] = cnt > UINT32_MAX ? UINT32_MAX : (uint32_t)cnt;
	return KV_OK;
}

static uint32_t
v0_free_blocks(const kvc *k, uint32_t g)
{
	(void)g;
	return v0_pool_free(&v0_of(k)->pool[V0_GPU]);
}

static uint32_t
v0_free_cpu(const kvc *k)
{
	return v0_pool_free(&v0_of(k)->pool[V0_CPU]);
}

/* ---- audit (core-spec §8.3) ------------------------------------------- */

static int
v0_audit_pool(const kvc *k, const struct v0 *m, int pi, char *why,
	      size_t len)
{
	const struct v0_pool *p = &m->pool[pi];
	const char *dev = pi == V0_GPU ? "GPU" : "CPU";
	kvc_state holder = pi == V0_GPU ? KVC_RUNNING : KVC_SWAPPED;
	int32_t *cnt = m->scratch;
	uint32_t used = 0, nev = 0, nhash = 0, ntouched = 0;

	/* 1: refcount == table references (+1 for the null block) */
	memset(cnt, 0, p->n * sizeof(*cnt));
	for (uint32_t s = 0; s < k->nseq; s++) {
		const struct kvc_tab *t = &k->seq[s].tab[0];

		if (k->seq[s].state != holder)
			continue;
		for (uint32_t i = 0; i < t->n; i++) {
			if (t->id[i] == KVC_NULL)
				continue;
			if (t->id[i] < 0 || (uint32_t)t->id[i] >= p->n) {
				kvc__failbuf(why, len, KV_EINVAL, "sequence "
					     "%u slot %u: %s id %d out of "
					     "range", s, i, dev, t->id[i]);
				return 5;
			}
			cnt[t->id[i]]++;
		}
	}
	if (pi == V0_GPU && m->null_id >= 0)
		cnt[m->null_id]++;
	for (uint32_t id = 0; id < p->n; id++)
		if (p->b[id].ref != cnt[id]) {
			kvc__failbuf(why, len, KV_EINVAL, "%s block %u: "
				     "refcount %d, %d references", dev, id,
				     p->b[id].ref, cnt[id]);
			return 1;
		}
	/* 2: free structures == refcount-0 ids, each once */
	if (kv_list_check(&p->fl) != 0 || p->fl.cap != p->n) {
		kvc__failbuf(why, len, KV_EINVAL, "%s free list broken", dev);
		return 2;
	}
	for (uint32_t id = 0; id < p->n; id++) {
		const struct v0_blk *b = &p->b[id];
		bool fr = kv_list_has(&p->fl, (int32_t)id);

		if (b->ref > 0)
			used++;
		nev += b->in_ev;
		nhash += b->hash != 0;
		ntouched += b->touched;
		if ((b->ref == 0) != (fr || b->in_ev) || (fr && b->in_ev) ||
		    (b->in_ev && !m->pc)) {
			kvc__failbuf(why, len, KV_EINVAL, "%s block %u: "
				     "refcount %d, free list %d, evictor %d",
				     dev, id, b->ref, fr, b->in_ev);
			return 2;
		}
		if (m->pc && (b->active != (b->ref > 0))) {
			kvc__failbuf(why, len, KV_EINVAL, "%s block %u: "
				     "tracked %d with refcount %d", dev, id,
				     b->active, b->ref);
			return 4;
		}
		if (b->hash != 0 && (!m->pc || fr ||
				     kv_hmap_get(&p->map, b->hash) !=
				     (int32_t)id)) {
			kvc__failbuf(why, len, KV_EINVAL, "%s block %u: stale "
				     "or unindexed hash", dev, id);
			return 4;
		}
		if (b->in_ev && b->hash == 0) {
			kvc__failbuf(why, len, KV_EINVAL, "%s block %u: "
				     "evictable without a hash", dev, id);
			return 4;
		}
	}
	/* 3: used + free == total */
	if (nev != p->nev || used + p->fl.n + p->nev != p->n) {
		kvc__failbuf(why, len, KV_EINVAL, "%s pool: %u used + %u free "
			     "+ %u evictable != %u (evictor count %u)", dev,
			     used, p->fl.n, nev, p->n, p->nev);
		return 3;
	}
	for (uint32_t i = 0; i < p->nev; i++) {
		int32_t id = p->evm[i];

		if (id < 0 || (uint32_t)id >= p->n || !p->b[id].in_ev ||
		    p->b[id].evpos != i) {
			kvc__failbuf(why, len, KV_EINVAL, "%s evictor member "
				     "set broken at %u", dev, i);
			return 2;
		}
	}
	/* 4: the index is a bijection with the hashed ids */
	if (m->pc && p->map.n != nhash) {
		kvc__failbuf(why, len, KV_EINVAL, "%s hash index holds %u "
			     "keys, %u ids carry a hash", dev, p->map.n,
			     nhash);
		return 4;
	}
	if (ntouched != p->ntouched) {
		kvc__failbuf(why, len, KV_EINVAL, "%s touched set: %u flags, "
			     "%u entries", dev, ntouched, p->ntouched);
		return 4;
	}
	/* every evictor entry has a live heap entry */
	memset(cnt, 0, p->n * sizeof(*cnt));
	for (uint32_t i = 0; i < p->nheap; i++) {
		const struct v0_hent *e = &p->heap[i];
		const struct v0_blk *b;

		if (e->id < 0 || (uint32_t)e->id >= p->n ||
		    (i > 0 && v0_hless(e, &p->heap[(i - 1) / 2]))) {
			kvc__failbuf(why, len, KV_EINVAL, "%s evictor heap "
				     "broken at %u", dev, i);
			return 4;
		}
		b = &p->b[e->id];
		if (b->in_ev && b->ev_time == e->t && b->hash == e->h &&
		    b->ev_ntok == e->ntok)
			cnt[e->id] = 1;
	}
	for (uint32_t id = 0; id < p->n; id++)
		if (p->b[id].in_ev && !cnt[id]) {
			kvc__failbuf(why, len, KV_EINVAL, "%s block %u: "
				     "evictable but not in the heap", dev, id);
			return 4;
		}
	return 0;
}

static int
v0_audit(const kvc *k, char *why, size_t len)
{
	const struct v0 *m = v0_of(k);
	int rc;

	for (uint32_t s = 0; s < k->nseq; s++) {
		const struct kvc_seq *q = &k->seq[s];
		const struct kvc_tab *t = &q->tab[0];
		const struct v0_pool *p = &m->pool[q->state == KVC_SWAPPED ?
						   V0_CPU : V0_GPU];
		uint32_t full = v0_nfs(m, (int32_t)s);
		bool held = q->state == KVC_RUNNING ||
			q->state == KVC_SWAPPED;
		uint64_t h = 0;

		for (uint32_t g = 1; g < KVC_MAX_GROUPS; g++)
			if (q->tab[g].n != 0) {
				kvc__failbuf(why, len, KV_EINVAL, "sequence "
					     "%u: a table in group %u", s, g);
				return 5;
			}
		if (!held) {
			if (t->n != 0 || full != 0) {
				kvc__failbuf(why, len, KV_EINVAL, "sequence "
					     "%u holds blocks while not "
					     "running or swapped", s);
				return 5;
			}
			continue;
		}
		if (full > q->ntok || t->n == 0 ||
		    (uint64_t)t->n * m->bs < full) {
			kvc__failbuf(why, len, KV_EINVAL, "sequence %u: %u "
				     "blocks for %u of %u tokens", s, t->n,
				     full, q->ntok);
			return 5;
		}
		for (uint32_t i = 0; i < t->n; i++) {
			bool isfull = ((uint64_t)i + 1) * m->bs <= full;

			if (t->id[i] == KVC_NULL) {
				if (!m->sw || q->state != KVC_RUNNING ||
				    (i > 0 && t->id[i - 1] != KVC_NULL) ||
				    t->aux[i] != 0) {
					kvc__failbuf(why, len, KV_EINVAL,
						     "sequence %u slot %u: "
						     "misplaced null block",
						     s, i);
					return 5;
				}
				continue;
			}
			if (t->id[i] < 0 || (uint32_t)t->id[i] >= p->n) {
				kvc__failbuf(why, len, KV_EINVAL, "sequence "
					     "%u slot %u: id %d out of range",
					     s, i, t->id[i]);
				return 5;
			}
			if (!m->pc) {
				if (t->aux[i] >= m->obj[V0_GPU].size) {
					kvc__failbuf(why, len, KV_EINVAL,
						     "sequence %u slot %u: "
						     "bad block object", s, i);
					return 5;
				}
				continue;
			}
			if (isfull)
				h = v0_hash_at(m, q, h, i);
			if (t->aux[i] != (isfull ? h : 0) ||
			    (t->aux[i] != 0 &&
			     p->b[t->id[i]].hash != t->aux[i])) {
				kvc__failbuf(why, len, KV_EINVAL, "sequence "
					     "%u slot %u: block hash does "
					     "not match its tokens", s, i);
				return 4;
			}
			if (t->aux[i] == 0 && p->b[t->id[i]].hash != 0) {
				kvc__failbuf(why, len, KV_EINVAL, "sequence "
					     "%u slot %u: a block not full "
					     "carries a hash", s, i);
				return 4;
			}
		}
	}
	if (m->null_id >= 0 && ((uint32_t)m->null_id >= m->pool[V0_GPU].n ||
				!m->sw)) {
		kvc__failbuf(why, len, KV_EINVAL, "bad null block id %d",
			     m->null_id);
		return 5;
	}
	if ((rc = v0_audit_pool(k, m, V0_GPU, why, len)) != 0)
		return rc;
	return v0_audit_pool(k, m, V0_CPU, why, len);
}

/* kvc_block_state(): the per-id record of either pool. */
static kv_err
v0_block_state(kvc *k, bool cpu, int32_t id, struct kvc_block_state *out)
{
	const struct v0 *m = v0_of(k);
	const struct v0_blk *b = &m->pool[cpu ? V0_CPU : V0_GPU].b[id];

	out->ref = b->ref;
	out->cached = m->pc && b->hash != 0;
	out->computed = m->pc && b->computed;
	out->time = m->pc ? b->time : -1;
	return KV_OK;
}

struct v0_evkey {
	int64_t t;
	uint32_t ntok;
	int32_t id;
};

static int
v0_evkey_cmp(const void *a, const void *b)
{
	const struct v0_evkey *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->ntok != y->ntok)
		return x->ntok > y->ntok ? -1 : 1;	/* deepest first */
	return (x->id > y->id) - (x->id < y->id);
}

/* kvc_evictor(): the GPU evictor's live entries in eviction order. */
static kv_err
v0_evictor(kvc *k, struct kvc_block_state *out, size_t cap, size_t *n)
{
	const struct v0 *m = v0_of(k);
	const struct v0_pool *p = &m->pool[V0_GPU];
	struct v0_evkey *e;

	if (!m->pc)
		return kvc__fail(k, KV_ENOTSUP, "vLLM v0 has an evictor only "
				 "with prefix caching");
	e = malloc((p->nev ? p->nev : 1) * sizeof(*e));
	if (e == NULL)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < p->nev; i++) {
		int32_t id = p->evm[i];

		e[i].t = p->b[id].ev_time;
		e[i].ntok = p->b[id].ev_ntok;
		e[i].id = id;
	}
	qsort(e, p->nev, sizeof(*e), v0_evkey_cmp);
	for (uint32_t i = 0; i < p->nev && i < cap; i++) {
		out[i].id = e[i].id;
		out[i].ref = p->b[e[i].id].ref;
		out[i].cached = true;
		out[i].computed = p->b[e[i].id].computed;
		out[i].time = e[i].t;
	}
	*n = p->nev;
	free(e);
	return KV_OK;
}

const struct kvc_ops kvc__v0_ops = {
	.name = "vllm-v0",
	.block_state = v0_block_state,
	.evictor = v0_evictor,
	.init = v0_init,
	.release = v0_release_all,
	.clone = v0_clone,
	.check_config = v0_check_config,
	.can_allocate = v0_can_allocate,
	.allocate = v0_allocate,
	.append = v0_append,
	.can_append = v0_can_append,
	.computed = v0_computed,
	.fork = v0_fork,
	.can_swap_out = v0_can_swap_out,
	.swap_out = v0_swap_out,
	.can_swap_in = v0_can_swap_in,
	.swap_in = v0_swap_in,
	.free_seq = v0_free_seq,
	.cached = v0_cached,
	.blocks_needed = v0_blocks_needed,
	.free_blocks = v0_free_blocks,
	.free_cpu = v0_free_cpu,
	.audit = v0_audit,
};
