/*
 * kv_exact.c -- mode `exact`: kvsim's own block allocator, with exact
 * accounting (docs/replay-exact.md, rules E1-E6, is the normative
 * description; this comment is its summary for readers of the code).
 *
 * POOLS.  One GPU pool of gpu_blocks ids, all usable (no id is spent on a
 * null block: KVC_NULL in a table marks a slot that a sliding window
 * released), shared by every group, and one CPU pool of cpu_blocks ids.
 * Each id has a reference count (the number of table slots naming it).
 * Free ids sit in one kv_list per pool; cfg.reuse picks the order:
 * DEFAULT and FIFO_LRU push freed ids at the back and pop the front, a
 * request's blocks pushed tail first (so the LRU order evicts a request's
 * tail before its head, and earlier-freed requests before later ones);
 * LIFO pushes and pops the front, a table pushed head first (so its tail is
 * reused first, as in vLLM v0 / DeepSpeed).
 *
 * PREFIX CACHE (cfg.prefix_caching, and no `state` group: with a state
 * group caching is off, because a state snapshot exists only at the end of
 * a sequence, never at a block boundary).  Per group a deterministic chain
 * h_i = kv_hash_block(h_{i-1}, tokens of block i, g + 1) over full blocks,
 * kept per table slot in tab.aux.  A full block enters the index (one map
 * for all groups: the group is in the hash) once C covers it; an id appears
 * under at most one hash and a hash names one id (a second block with
 * equal contents is simply not indexed).  A freed indexed block stays
 * findable until the free list pops it for reuse; the pop removes its hash
 * (lazy LRU eviction; never a stale hash, never a findable evicted block).
 * A hit is the longest h, a multiple of every group's block size, h <= T-1
 * (at least one token is computed), such that every full group has blocks
 * 0..h/bs-1 indexed and every sliding group has the blocks that the window
 * of position h needs (nskip(h)..h/bs-1) indexed; the sliding group's
 * earlier slots are KVC_NULL.
 *
 * STATES (request-wide; kvc_seq_new() creates a request WAITING):
 *
 *              allocate [n]               swap_out
 *    WAITING --------------> RUNNING --------------> SWAPPED
 *      ^  ^                  |  ^  |                    |
 *      |  |      free        |  |  +-- fork, append,    |
 *      |  +------------------+  |      allocate n       |
 *      |                        +------- swap_in -------+
 *      +------------------------ free ------------------+
 *
 *   free kills the fork children (DEAD) and makes the root WAITING, C = 0.
 *
 * ACTIONS.  T = tokens, C = computed tokens, L = lookahead, bs = the group's
 * block size, mml = max_model_len; T <= mml while holding blocks.  "Slots
 * for S tokens" means cdiv(S, bs) table slots in a full or sliding group
 * and exactly one block in a state group; tables never shrink (sliding
 * slots become null).
 *   allocate (WAITING): hit h; k = T - h or min(n, T - h); slots for h + k
 *     tokens; C = h + k; RUNNING.
 *   allocate n (RUNNING, C < T): k = T - C or min(n, T - C); slots for
 *     C + k; C += k.
 *   append (RUNNING): tokens added, slots for min(T + L, mml), C = T.  On
 *     another state the tokens are only added (lookahead is an error).
 *   swap_out: one CPU block per distinct GPU id (sharing kept).
 *   swap_in: sliding slots outside the window of C are dropped; every
 *     other distinct CPU block comes back once (or is found again in the
 *     GPU prefix cache: no copy), then every sequence is advanced as append
 *     does with its unseen tokens T - C and L; a shared partial block it
 *     writes is copied straight from the CPU (an extra map pair).
 * Each advance from C0 to C1 first releases the sliding-window slots the
 * window of position C0 no longer needs (nskip(C0) = (C0 - W + 1) / bs whole
 * blocks), then gives a private copy of every existing slot it writes
 * (positions C0..C1-1; a state group's block whenever C1 > C0) that other
 * slots share (copy-on-write; a pair src>dst when the block holds computed
 * tokens), then appends fresh slots.  computed: validation only (C moves
 * when tokens are scheduled, as in vLLM v1).  fork (RUNNING, C = T): the
 * child shares every block.  free: request-wide, validated as a whole
 * first; children die, the root waits again with C = 0.
 *
 * EXACT COUNTING.  Every query runs the action's own code in "dry" mode
 * (struct tx): the same walk, counting instead of mutating, so a verdict
 * cannot disagree with the action.  An action runs dry first and commits
 * only when the count fits: a failure changes nothing.  Inside one action
 * releases always precede takes, so "fits" is "net need <= free".
 * can_allocate / can_swap_in: OK iff the dry run fits leaving wm =
 * floor(watermark * G) free; else NEVER iff the same action without prefix
 * hits cannot fit G - wm (a scheduler waiting for OK would wait forever);
 * else LATER.  can_append / can_swap_out: yes iff the action fits.
 *
 * MAIN INVARIANT (ex_audit, numbered as core-spec §8.3): ref[id] == number
 * of table slots naming id; free list == {ids with ref 0}; every index
 * entry names a block that carries that hash and whose slots hold it.
 *
 * COSTS.  Everything is sized at init (pools, index, scratch); an action
 * costs O(slots it touches), a hit search O(T), free/swap O(slots of the
 * request).  Tables and token arrays grow by doubling (kv_mgr.c).
 *
 * REJECTED.  Worst-case counting (v0's touched_by_append) admits less than
 * fits; undo logs for queries would double the code paths that must agree;
 * de-duplication on fill (v0 promotion) rewrites table ids under a running
 * sequence.
 */
#include "kv_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xpool {
	uint32_t n;
	int32_t *ref;		/* n entries (at least 1 allocated) */
	struct kv_list fl;	/* ids with ref 0 */
};

struct ex {
	struct xpool gpu, cpu;
	uint64_t *bhash;	/* GPU id -> its key in idx, 0 = not indexed */
	struct kv_hmap idx;	/* group-salted block hash -> GPU id */
	bool pc;		/* prefix caching in effect */
	bool lifo;		/* reuse order */
	uint32_t wm;		/* watermark in blocks */
	uint32_t lcm;		/* lcm of the block sizes, 0 = above mml */
	uint32_t nscr;		/* max(G, C, 1) */
	/* Scratch, all -1 (maps) or 0 (cnt) between calls. */
	int32_t *gmap;		/* CPU id -> GPU id during swap_in */
	int32_t *cmap;		/* GPU id -> CPU id (swap) or mark */
	int32_t *cnt;		/* per-id counters */
	int32_t *lst;		/* distinct ids met by a walk */
	/* Hit search scratch, per group: cdiv(mml, bs) + 1 entries. */
	uint64_t *hh[KVC_MAX_GROUPS];
	int32_t *hid[KVC_MAX_GROUPS];
	uint32_t *hrun[KVC_MAX_GROUPS];
};

/* One action, dry (count only) or committed. */
struct tx {
	bool dry;
	bool swapin;		/* advancing after swap_in: no window release */
	int64_t vfree;		/* dry: GPU blocks left */
	int64_t need[KVC_MAX_GROUPS];	/* net blocks taken per group */
};

struct hit {
	uint32_t h;			/* tokens */
	uint32_t nslot[KVC_MAX_GROUPS];	/* slots the hit fills */
	uint32_t first[KVC_MAX_GROUPS];	/* leading null slots (sliding) */
};

static inline struct ex *
ex_of(const kvc *k)
{
	return k->ms;
}

static inline kvc_kind
gkind(const kvc *k, uint32_t g)
{
	return k->cfg.group[g].kind;
}

static inline uint32_t
umin(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* min(t + l, cap) without wrapping: a lookahead near 2^32 must reach the
 * cap (and be refused), not wrap round to a small reservation. */
static inline uint32_t
end_at(uint32_t t, uint32_t l, uint32_t cap)
{
	uint64_t e = (uint64_t)t + l;

	return e < cap ? (uint32_t)e : cap;
}

/* Whole blocks the window of position c no longer needs. */
static inline uint32_t
nskip(const kvc *k, uint32_t g, uint32_t c)
{
	uint32_t w = k->cfg.group[g].window, bs = kvc__bs(k, g);

	return c + 1 > w ? (c + 1 - w) / bs : 0;
}

/* Slots of group g for s tokens (full/sliding). */
static inline uint32_t
nslots(const kvc *k, uint32_t g, uint32_t s)
{
	return (uint32_t)kvc_cdiv(s, kvc__bs(k, g));
}

/* First non-null slot (nulls are a prefix). */
static uint32_t
first_live(const struct kvc_tab *t)
{
	uint32_t lo = 0, hi = t->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->id[mid] == KVC_NULL)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Append a slot; capacity was reserved before the commit. */
static inline void
slot_push(struct kvc_tab *t, int32_t id, uint64_t aux)
{
	t->id[t->n] = id;
	t->aux[t->n] = aux;
	t->n++;
}

/* ---- pools ---------------------------------------------------------- */

static kv_err
pool_init(struct xpool *p, uint32_t n)
{
	uint32_t i;

	p->n = n;
	p->ref = calloc(n ? n : 1, sizeof(*p->ref));
	if (p->ref == NULL)
		return KV_ENOMEM;
	if (kv_list_init(&p->fl, n ? n : 1) != KV_OK) {
		free(p->ref);
		p->ref = NULL;
		return KV_ENOMEM;
	}
	/* kv_list_init gives an empty list; fill it in id order. */
	for (i = 0; i < n; i++)
		if (!kv_list_has(&p->fl, (int32_t)i))
			kv_list_push_back(&p->fl, (int32_t)i);
	return KV_OK;
}

static void
pool_release(struct xpool *p)
{
	free(p->ref);
	p->ref = NULL;
	kv_list_release(&p->fl);
}

static kv_err
pool_copy(struct xpool *d, const struct xpool *s)
{
	d->n = s->n;
	d->ref = malloc((s->n ? s->n : 1) * sizeof(*d->ref));
	if (d->ref == NULL)
		return KV_ENOMEM;
	memcpy(d->ref, s->ref, (s->n ? s->n : 1) * sizeof(*d->ref));
	if (kv_list_copy(&d->fl, &s->fl) != KV_OK) {
		free(d->ref);
		d->ref = NULL;
		return KV_ENOMEM;
	}
	return KV_OK;
}

/* Queue a block whose count reached 0. */
static void
pool_put(const struct ex *x, struct xpool *p, int32_t id)
{
	if (x->lifo)
		kv_list_push_front(&p->fl, id);
	else
		kv_list_push_back(&p->fl, id);
}

/* Take the next free GPU id (count stays 0: the caller sets it). */
static int32_t
gpu_pop(struct ex *x)
{
	int32_t id = kv_list_pop_front(&x->gpu.fl);

	if (id >= 0 && x->bhash[id] != 0) {
		kv_hmap_del(&x->idx, x->bhash[id]);	/* lazy eviction */
		x->bhash[id] = 0;
	}
	return id;
}

/* ---- the request ------------------------------------------------------ */

static inline int32_t
req_root(const kvc *k, int32_t s)
{
	return kvc__seq(k, s)->req;
}

/* Next live sequence of the request after s, -1 at the end. */
static inline int32_t
req_next(const kvc *k, int32_t s)
{
	int32_t n = kvc__seq(k, s)->next;

	while (n >= 0 && kvc__seq(k, n)->state == KVC_DEAD)
		n = kvc__seq(k, n)->next;
	return n;
}

#define FOR_REQ(k, root, s) \
	for ((s) = (root); (s) >= 0; (s) = req_next((k), (s)))

static void
req_set_state(kvc *k, int32_t root, kvc_state st)
{
	int32_t s;

	FOR_REQ(k, root, s)
		kvc__seq(k, s)->state = (uint8_t)st;
}

/*
 * Validate a whole release before any mutation (core-spec §8.3 item 6):
 * every id of the request's tables is in range and its count covers every
 * slot of the request naming it.  0 or KV_EINVAL with the message.
 */
static kv_err
req_validate(kvc *k, int32_t root, const struct xpool *p, const char *dev)
{
	struct ex *x = ex_of(k);
	uint32_t g, i;
	int32_t s, id;
	kv_err e = KV_OK;

	FOR_REQ(k, root, s) {
		for (g = 0; g < k->cfg.ngroups; g++) {
			const struct kvc_tab *t = &kvc__seq(k, s)->tab[g];

			for (i = 0; i < t->n; i++) {
				id = t->id[i];
				if (id == KVC_NULL)
					continue;
				if (id < 0 || (uint32_t)id >= p->n) {
					if (e == KV_OK)
						e = kvc__fail(k, KV_EINVAL,
						    "%s block %d out of range",
						    dev, (int)id);
					continue;
				}
				if (++x->cnt[id] > p->ref[id] && e == KV_OK)
					e = kvc__fail(k, KV_EINVAL,
					    "%s block %d has %d references, "
					    "released more often", dev,
					    (int)id, (int)p->ref[id]);
			}
		}
	}
	/* Reset the counters. */
	FOR_REQ(k, root, s) {
		for (g = 0; g < k->cfg.ngroups; g++) {
			const struct kvc_tab *t = &kvc__seq(k, s)->tab[g];

			for (i = 0; i < t->n; i++) {
				id = t->id[i];
				if (id >= 0 && (uint32_t)id < p->n)
					x->cnt[id] = 0;
			}
		}
	}
	return e;
}

/*
 * Drop one reference of every slot of the request, in release order:
 * sequences in creation order, groups in order, each table tail first
 * (FIFO: pushed at the back) or head first (LIFO: pushed at the front),
 * so either way a table's tail is reused first.  Tables keep their ids.
 */
static void
req_release(kvc *k, int32_t root, struct xpool *p)
{
	struct ex *x = ex_of(k);
	uint32_t g, i, n;
	int32_t s, id;

	FOR_REQ(k, root, s) {
		for (g = 0; g < k->cfg.ngroups; g++) {
			const struct kvc_tab *t = &kvc__seq(k, s)->tab[g];

			n = t->n;
			for (i = 0; i < n; i++) {
				id = t->id[x->lifo ? i : n - 1 - i];
				if (id != KVC_NULL && --p->ref[id] == 0)
					pool_put(x, p, id);
			}
		}
	}
}

/* Slots of the whole request, for reservations. */
static uint32_t
req_slots(const kvc *k, int32_t root)
{
	uint32_t g, n = 0;
	int32_t s;

	FOR_REQ(k, root, s)
		for (g = 0; g < k->cfg.ngroups; g++)
			n += kvc__seq(k, s)->tab[g].n;
	return n;
}

/* ---- prefix cache ----------------------------------------------------- */

/*
 * Enter the computed full blocks of sequence q in the index.  Hashes are a
 * prefix of the slots, so only the new ones are hashed, unless `all` (after
 * swap_in every slot's block is new on the GPU).
 */
static void
reg_blocks(kvc *k, struct kvc_seq *q, bool all)
{
	struct ex *x = ex_of(k);
	uint32_t g, i, nb, bs;
	uint64_t prev;
	int32_t id;

	if (!x->pc)
		return;
	for (g = 0; g < k->cfg.ngroups; g++) {
		struct kvc_tab *t = &q->tab[g];

		bs = kvc__bs(k, g);
		nb = umin(q->ncomp / bs, t->n);
		i = nb;
		if (all)
			i = 0;
		else
			while (i > 0 && t->aux[i - 1] == 0)
				i--;
		prev = i > 0 ? t->aux[i - 1] : KV_HASH_ROOT;
		for (; i < nb; i++) {
			if (t->aux[i] == 0)
				t->aux[i] = kv_hash_block(prev, q->tok + i * bs,
				    bs, g + 1);
			prev = t->aux[i];
			id = t->id[i];
			if (id == KVC_NULL || x->bhash[id] != 0 ||
			    kv_hmap_get(&x->idx, prev) >= 0)
				continue;
			kv_hmap_put(&x->idx, prev, id);
			x->bhash[id] = prev;
		}
	}
}

/*
 * The prefix-cache hit of sequence q now (see the file comment).  Fills
 * the scratch: x->hid[g][i] (id, -1 when not indexed) and x->hh[g][i]
 * (hash) for every slot i < r->nslot[g].
 */
static void
hit_find(kvc *k, const struct kvc_seq *q, struct hit *r)
{
	struct ex *x = ex_of(k);
	uint32_t ng = k->cfg.ngroups, g, i, nb, bs, hmax, h, first, last;
	uint64_t prev;
	int32_t id;
	bool ok;

	memset(r, 0, sizeof(*r));
	if (!x->pc || x->lcm == 0 || q->ntok < 2)
		return;
	hmax = (q->ntok - 1) / x->lcm * x->lcm;
	/* Full groups: the leading indexed run bounds the hit. */
	for (g = 0; g < ng && hmax > 0; g++) {
		if (gkind(k, g) != KVC_FULL)
			continue;
		bs = kvc__bs(k, g);
		nb = hmax / bs;
		prev = KV_HASH_ROOT;
		for (i = 0; i < nb; i++) {
			prev = kv_hash_block(prev, q->tok + i * bs, bs, g + 1);
			id = kv_hmap_get(&x->idx, prev);
			if (id < 0)
				break;
			x->hh[g][i] = prev;
			x->hid[g][i] = id;
		}
		if (i * bs < hmax)
			hmax = i * bs / x->lcm * x->lcm;
	}
	/* Sliding groups: indexed runs, then the longest valid h. */
	for (g = 0; g < ng; g++) {
		if (gkind(k, g) != KVC_SLIDING)
			continue;
		bs = kvc__bs(k, g);
		nb = hmax / bs;
		prev = KV_HASH_ROOT;
		for (i = 0; i < nb; i++) {
			prev = kv_hash_block(prev, q->tok + i * bs, bs, g + 1);
			id = kv_hmap_get(&x->idx, prev);
			x->hh[g][i] = prev;
			x->hid[g][i] = id;
			x->hrun[g][i] = id < 0 ? 0 :
			    (i > 0 ? x->hrun[g][i - 1] : 0) + 1;
		}
	}
	for (h = hmax; h > 0; h -= x->lcm) {
		ok = true;
		for (g = 0; g < ng && ok; g++) {
			if (gkind(k, g) != KVC_SLIDING)
				continue;
			first = nskip(k, g, h);
			last = h / kvc__bs(k, g) - 1;
			if (x->hrun[g][last] < last - first + 1)
				ok = false;
		}
		if (ok)
			break;
	}
	r->h = h;
	for (g = 0; g < ng; g++) {
		if (gkind(k, g) == KVC_STATE)
			continue;
		r->nslot[g] = h / kvc__bs(k, g);
		r->first[g] = gkind(k, g) == KVC_SLIDING ? nskip(k, g, h) : 0;
	}
}

/* ---- the shared walk of every action ---------------------------------- */

static int32_t
tx_take(kvc *k, struct tx *t, uint32_t g)
{
	t->need[g]++;
	if (t->dry) {
		t->vfree--;
		return -1;
	}
	return gpu_pop(ex_of(k));
}

/* Release one reference held by a single sequence. */
static void
tx_give(kvc *k, struct tx *t, uint32_t g, int32_t id)
{
	struct ex *x = ex_of(k);

	if (t->dry) {
		if (x->gpu.ref[id] == 1) {
			t->vfree++;
			t->need[g]--;
		}
		return;
	}
	if (--x->gpu.ref[id] == 0) {
		pool_put(x, &x->gpu, id);
		t->need[g]--;
	}
}

/* References of a slot's block (dry swap_in: slots still hold CPU ids). */
static inline int32_t
tx_ref(const kvc *k, const struct tx *t, int32_t id)
{
	const struct ex *x = ex_of(k);

	return t->dry && t->swapin ? x->cnt[id] : x->gpu.ref[id];
}

static void
tx_cow(kvc *k, struct tx *t, struct kvc_seq *q, uint32_t g, uint32_t i,
       bool content)
{
	struct ex *x = ex_of(k);
	struct kvc_tab *tb = &q->tab[g];
	int32_t src = tb->id[i], z;

	z = tx_take(k, t, g);
	if (t->dry) {
		if (t->swapin)
			x->cnt[src]--;
		return;
	}
	x->gpu.ref[src]--;
	x->gpu.ref[z] = 1;
	tb->id[i] = z;
	if (content)
		(void)kvc__pair_push(k, t->swapin ? x->cmap[src] : src, z);
}

/* Phase 1 of an advance: release the slots outside the window of c0. */
static void
adv_release(kvc *k, struct tx *t, struct kvc_seq *q, uint32_t c0)
{
	struct ex *x = ex_of(k);
	uint32_t g, f, ns, j, i;

	if (t->swapin)
		return;
	for (g = 0; g < k->cfg.ngroups; g++) {
		struct kvc_tab *tb = &q->tab[g];

		if (gkind(k, g) != KVC_SLIDING)
			continue;
		ns = umin(nskip(k, g, c0), tb->n);
		f = first_live(tb);
		for (j = f; j < ns; j++) {
			/* Newest first under FIFO, oldest first under LIFO:
			 * the newest is reused first either way. */
			i = x->lifo ? j : ns - 1 - (j - f);
			tx_give(k, t, g, tb->id[i]);
			if (!t->dry)
				tb->id[i] = KVC_NULL;
		}
	}
}

/*
 * Phase 2: write positions c0..c1-1 (copy-on-write of shared slots), then
 * grow to slots for s1 tokens.
 */
static void
adv_grow(kvc *k, struct tx *t, struct kvc_seq *q, uint32_t c0, uint32_t c1,
	 uint32_t s1)
{
	struct ex *x = ex_of(k);
	uint32_t g, i, lo, hi, bs, target;
	int32_t id;

	for (g = 0; g < k->cfg.ngroups; g++) {
		struct kvc_tab *tb = &q->tab[g];

		if (gkind(k, g) == KVC_STATE) {
			if (tb->n == 0) {
				id = tx_take(k, t, g);
				if (!t->dry) {
					x->gpu.ref[id] = 1;
					slot_push(tb, id, 0);
				}
			} else if (c1 > c0 && tx_ref(k, t, tb->id[0]) > 1) {
				tx_cow(k, t, q, g, 0, c0 > 0);
			}
			continue;
		}
		bs = kvc__bs(k, g);
		if (c1 > c0) {
			lo = c0 / bs;
			hi = umin(tb->n, nslots(k, g, c1));
			for (i = lo; i < hi; i++)
				if (tx_ref(k, t, tb->id[i]) > 1)
					tx_cow(k, t, q, g, i, i * bs < c0);
		}
		target = nslots(k, g, s1);
		if (target <= tb->n)
			continue;
		if (t->dry) {
			t->need[g] += target - tb->n;
			t->vfree -= target - tb->n;
			continue;
		}
		for (i = tb->n; i < target; i++) {
			id = tx_take(k, t, g);
			x->gpu.ref[id] = 1;
			slot_push(tb, id, 0);
		}
	}
}

/*
 * Admission of a WAITING request's root q with hit r: computed up to c1,
 * slots for s1 tokens.  Hits are claimed (every group) before any fresh
 * block is popped, so a pop never evicts a block this admission reuses.
 */
static void
tx_admit(kvc *k, struct tx *t, struct kvc_seq *q, const struct hit *r,
	 uint32_t c1, uint32_t s1)
{
	struct ex *x = ex_of(k);
	uint32_t g, i, target;
	int32_t id;

	for (g = 0; g < k->cfg.ngroups; g++) {
		for (i = 0; i < r->nslot[g]; i++) {
			id = i < r->first[g] ? KVC_NULL : x->hid[g][i];
			if (id != KVC_NULL && x->gpu.ref[id] == 0) {
				/* reclaiming a cached free block */
				t->need[g]++;
				if (t->dry)
					t->vfree--;
				else
					kv_list_remove(&x->gpu.fl, id);
			}
			if (!t->dry) {
				if (id != KVC_NULL)
					x->gpu.ref[id]++;
				slot_push(&q->tab[g], id, x->hh[g][i]);
			}
		}
	}
	for (g = 0; g < k->cfg.ngroups; g++) {
		target = gkind(k, g) == KVC_STATE ? 1 : nslots(k, g, s1);
		if (t->dry) {
			t->need[g] += target - r->nslot[g];
			t->vfree -= target - r->nslot[g];
			continue;
		}
		for (i = r->nslot[g]; i < target; i++) {
			id = tx_take(k, t, g);
			x->gpu.ref[id] = 1;
			slot_push(&q->tab[g], id, 0);
		}
	}
	if (!t->dry) {
		q->ncomp = c1;
		q->state = KVC_RUNNING;
		reg_blocks(k, q, false);
	}
}

/*
 * swap_in of the request at root, then every sequence advanced to C = T
 * with slots for min(T + L, mml).  Map pairs: one per distinct CPU block
 * that is copied, in walk order (sequence creation, group, table order);
 * a block found in the GPU prefix cache is not copied.
 */
static void
tx_swapin(kvc *k, struct tx *t, int32_t root, uint32_t L, bool hits)
{
	struct ex *x = ex_of(k);
	uint32_t g, i, nl = 0, j;
	int32_t s, cid, y;
	uint64_t a;

	/* Phase 0: in-window references per CPU block. */
	FOR_REQ(k, root, s) {
		struct kvc_seq *q = kvc__seq(k, s);

		for (g = 0; g < k->cfg.ngroups; g++) {
			struct kvc_tab *tb = &q->tab[g];
			uint32_t ns = gkind(k, g) == KVC_SLIDING ?
			    nskip(k, g, q->ncomp) : 0;

			for (i = ns; i < tb->n; i++) {
				cid = tb->id[i];
				if (cid == KVC_NULL)
					continue;
				if (x->cnt[cid]++ == 0)
					x->lst[nl++] = cid;
			}
		}
	}
	/* Phase A: blocks still in the GPU prefix cache. */
	FOR_REQ(k, root, s) {
		struct kvc_seq *q = kvc__seq(k, s);

		for (g = 0; g < k->cfg.ngroups && hits && x->pc; g++) {
			struct kvc_tab *tb = &q->tab[g];

			for (i = 0; i < tb->n; i++) {
				cid = tb->id[i];
				a = tb->aux[i];
				if (cid == KVC_NULL || x->cnt[cid] == 0 ||
				    x->gmap[cid] != -1 || a == 0)
					continue;
				y = kv_hmap_get(&x->idx, a);
				if (y < 0)
					continue;
				if (x->gpu.ref[y] == 0 && x->cmap[y] == -1) {
					t->need[g]++;
					if (t->dry)
						t->vfree--;
					else
						kv_list_remove(&x->gpu.fl, y);
				}
				x->cmap[y] = cid;
				x->gmap[cid] = y;
			}
		}
	}
	/* Phase B: fresh GPU blocks, copied from the CPU. */
	FOR_REQ(k, root, s) {
		struct kvc_seq *q = kvc__seq(k, s);

		for (g = 0; g < k->cfg.ngroups; g++) {
			struct kvc_tab *tb = &q->tab[g];

			for (i = 0; i < tb->n; i++) {
				cid = tb->id[i];
				if (cid == KVC_NULL || x->cnt[cid] == 0 ||
				    x->gmap[cid] != -1)
					continue;
				y = tx_take(k, t, g);
				if (t->dry) {
					x->gmap[cid] = -2;
					continue;
				}
				x->gmap[cid] = y;
				x->cmap[y] = cid;
				(void)kvc__pair_push(k, cid, y);
			}
		}
	}
	/* Phase C: CPU released, tables rewritten to GPU ids. */
	if (!t->dry) {
		req_release(k, root, &x->cpu);
		FOR_REQ(k, root, s) {
			struct kvc_seq *q = kvc__seq(k, s);

			for (g = 0; g < k->cfg.ngroups; g++) {
				struct kvc_tab *tb = &q->tab[g];
				uint32_t ns = gkind(k, g) == KVC_SLIDING ?
				    nskip(k, g, q->ncomp) : 0;

				for (i = 0; i < tb->n; i++) {
					cid = tb->id[i];
					if (cid == KVC_NULL)
						continue;
					if (i < ns) {
						tb->id[i] = KVC_NULL;
						continue;
					}
					y = x->gmap[cid];
					tb->id[i] = y;
					x->gpu.ref[y]++;
				}
			}
			q->state = KVC_RUNNING;
			reg_blocks(k, q, true);
		}
	}
	/* Phase D: unseen tokens and lookahead. */
	FOR_REQ(k, root, s) {
		struct kvc_seq *q = kvc__seq(k, s);
		uint32_t s1 = end_at(q->ntok, L, k->cfg.max_model_len);

		adv_grow(k, t, q, q->ncomp, q->ntok, s1);
		if (!t->dry) {
			q->ncomp = q->ntok;
			reg_blocks(k, q, false);
		}
	}
	/* Scratch back to rest. */
	for (j = 0; j < nl; j++) {
		cid = x->lst[j];
		y = x->gmap[cid];
		if (y >= 0)
			x->cmap[y] = -1;
		x->gmap[cid] = -1;
		x->cnt[cid] = 0;
	}
}

/* ---- entry points ---------------------------------------------------- */

static void
tx_start(const kvc *k, struct tx *t, bool dry, int64_t vfree)
{
	t->dry = dry;
	t->swapin = false;
	t->vfree = vfree;
	/* only the groups in use: this runs per running request per step */
	memset(t->need, 0, k->cfg.ngroups * sizeof(t->need[0]));
}

static inline uint32_t
gpu_free(const kvc *k)
{
	return ex_of(k)->gpu.fl.n;
}

/* Capacity for slots for s tokens in every group of q (before a commit). */
static kv_err
reserve_tabs(kvc *k, struct kvc_seq *q, uint32_t s)
{
	uint32_t g, n;

	for (g = 0; g < k->cfg.ngroups; g++) {
		n = gkind(k, g) == KVC_STATE ? 1 : nslots(k, g, s);
		if (n < q->tab[g].n)
			n = q->tab[g].n;
		if (kvc__tab_reserve(k, &q->tab[g], n) != KV_OK)
			return kvc__fail(k, KV_ENOMEM, "out of memory");
	}
	return KV_OK;
}

static kv_err
ex_no_fit(kvc *k, const struct tx *t, const char *what)
{
	return kvc__fail(k, KV_ENOSPC, "%s needs %lld more GPU blocks than "
	    "the %u free", what, (long long)-t->vfree, gpu_free(k));
}

static kv_err
ex_can_allocate(kvc *k, int32_t s, uint32_t L, kvc_verdict *o)
{
	struct ex *x = ex_of(k);
	int32_t root = req_root(k, s);
	struct kvc_seq *q = kvc__seq(k, root);
	struct hit r;
	struct tx t;
	uint32_t G = x->gpu.n, T = q->ntok;

	if (q->state != KVC_WAITING)
		return kvc__fail(k, KV_ESTATE, "can_allocate needs a WAITING "
		    "request");
	if (T == 0)
		return kvc__fail(k, KV_EINVAL, "the sequence has no tokens");
	if (T > k->cfg.max_model_len) {
		*o = KVC_VERDICT_NEVER;
		return KV_OK;
	}
	hit_find(k, q, &r);
	tx_start(k, &t, true, gpu_free(k));
	tx_admit(k, &t, q, &r, T, end_at(T, L, k->cfg.max_model_len));
	if (t.vfree >= (int64_t)x->wm) {
		*o = KVC_VERDICT_OK;
		return KV_OK;
	}
	/* NEVER when an empty pool (no hits) minus the watermark cannot
	 * hold it: a scheduler that waits for OK would wait forever. */
	memset(&r, 0, sizeof(r));
	tx_start(k, &t, true, (int64_t)G - x->wm);
	tx_admit(k, &t, q, &r, T, end_at(T, L, k->cfg.max_model_len));
	*o = t.vfree < 0 ? KVC_VERDICT_NEVER : KVC_VERDICT_LATER;
	return KV_OK;
}

/*
 * Whether advancing q from c0 to c1 with slots for s1 takes, frees and
 * copies nothing: full-attention groups only, every slot already there and
 * every slot written not shared.  The decode of a request whose last block
 * has room -- most calls -- then needs neither the dry run nor the commit
 * walk, which would find nothing to do.
 */
static bool
adv_plain(const kvc *k, const struct kvc_seq *q, uint32_t c0, uint32_t c1,
	  uint32_t s1)
{
	const struct ex *x = ex_of(k);

	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		const struct kvc_tab *tb = &q->tab[g];
		uint32_t bs = kvc__bs(k, g), hi;

		if (gkind(k, g) != KVC_FULL || nslots(k, g, s1) > tb->n)
			return false;
		hi = umin(tb->n, nslots(k, g, c1));
		for (uint32_t i = c0 / bs; c1 > c0 && i < hi; i++)
			if (x->gpu.ref[tb->id[i]] > 1)
				return false;
	}
	return true;
}

/* RUNNING allocate n / append: advance q to c1, slots for s1. */
static kv_err
ex_advance(kvc *k, struct kvc_seq *q, uint32_t c1, uint32_t s1,
	   const uint32_t *tok, size_t ntok, const char *what)
{
	struct tx t;
	uint32_t c0 = q->ncomp, g, cow = 0;

	if (adv_plain(k, q, c0, c1, s1)) {
		if (ntok > 0 && (kvc__tok_reserve(q, q->ntok + (uint32_t)ntok)
				 != KV_OK))
			return kvc__fail(k, KV_ENOMEM, "out of memory");
		if (ntok > 0)
			(void)kvc__tok_push(q, tok, ntok);
		q->ncomp = c1;
		reg_blocks(k, q, false);
		return KV_OK;
	}

	tx_start(k, &t, true, gpu_free(k));
	adv_release(k, &t, q, c0);
	adv_grow(k, &t, q, c0, c1, s1);
	if (t.vfree < 0)
		return ex_no_fit(k, &t, what);
	if (reserve_tabs(k, q, s1) != KV_OK)
		return KV_ENOMEM;
	for (g = 0; g < k->cfg.ngroups; g++)
		cow += q->tab[g].n;
	if (kvc__pairs_reserve(k, cow + 1) != KV_OK ||
	    (ntok > 0 && kvc__tok_reserve(q, q->ntok + (uint32_t)ntok) !=
	    KV_OK))
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	if (ntok > 0)
		(void)kvc__tok_push(q, tok, ntok);
	tx_start(k, &t, false, 0);
	adv_release(k, &t, q, c0);
	adv_grow(k, &t, q, c0, c1, s1);
	q->ncomp = c1;
	reg_blocks(k, q, false);
	return KV_OK;
}

static kv_err
ex_allocate(kvc *k, int32_t s, uint32_t n)
{
	int32_t root = req_root(k, s);
	struct kvc_seq *q = kvc__seq(k, root);
	uint32_t T = q->ntok, kk, c1;
	struct hit r;
	struct tx t;

	if (q->state == KVC_RUNNING) {
		q = kvc__seq(k, s);
		if (q->ncomp >= q->ntok)
			return kvc__fail(k, KV_ESTATE, "allocate on a RUNNING "
			    "sequence continues a prefill, and it has none "
			    "left (C = T = %u)", (unsigned)q->ntok);
		kk = q->ntok - q->ncomp;
		if (n > 0 && n < kk)
			kk = n;
		c1 = q->ncomp + kk;
		return ex_advance(k, q, c1, c1, NULL, 0, "allocate");
	}
	if (q->state != KVC_WAITING)
		return kvc__fail(k, KV_ESTATE, "allocate needs a WAITING or "
		    "RUNNING request");
	if (T == 0)
		return kvc__fail(k, KV_EINVAL, "the sequence has no tokens");
	if (T > k->cfg.max_model_len)
		return kvc__fail(k, KV_EINVAL, "%u tokens exceed max_model_len "
		    "%u", (unsigned)T, (unsigned)k->cfg.max_model_len);
	hit_find(k, q, &r);
	kk = T - r.h;
	if (n > 0 && n < kk)
		kk = n;
	c1 = r.h + kk;
	tx_start(k, &t, true, gpu_free(k));
	tx_admit(k, &t, q, &r, c1, c1);
	if (t.vfree < 0)
		return ex_no_fit(k, &t, "allocate");
	if (reserve_tabs(k, q, c1) != KV_OK)
		return KV_ENOMEM;
	tx_start(k, &t, false, 0);
	tx_admit(k, &t, q, &r, c1, c1);
	return KV_OK;
}

static kv_err
ex_append(kvc *k, int32_t s, const uint32_t *tok, size_t ntok, uint32_t L,
	  bool has_L)
{
	struct kvc_seq *q = kvc__seq(k, s);
	uint32_t mml = k->cfg.max_model_len, T1;

	if (ntok > mml || q->ntok + ntok > mml)
		return kvc__fail(k, KV_EINVAL, "append makes %zu tokens, over "
		    "max_model_len %u", q->ntok + ntok, (unsigned)mml);
	T1 = q->ntok + (uint32_t)ntok;
	if (q->state != KVC_RUNNING) {
		if (has_L)
			return kvc__fail(k, KV_EINVAL, "lookahead needs a "
			    "RUNNING sequence");
		if (ntok == 0)
			return KV_OK;
		if (kvc__tok_reserve(q, T1) != KV_OK)
			return kvc__fail(k, KV_ENOMEM, "out of memory");
		(void)kvc__tok_push(q, tok, ntok);
		return KV_OK;
	}
	return ex_advance(k, q, T1, end_at(T1, L, mml), tok, ntok, "append");
}

static kv_err
ex_can_append(kvc *k, int32_t s, uint32_t n, bool has_n, uint32_t L,
	      bool *o)
{
	struct kvc_seq *q = kvc__seq(k, s);
	uint32_t mml = k->cfg.max_model_len, N = has_n ? n : 1, T1;
	struct tx t;

	if (q->state != KVC_RUNNING)
		return kvc__fail(k, KV_ESTATE, "can_append needs a RUNNING "
		    "sequence");
	if (N > mml || (uint64_t)q->ntok + N > mml)
		return kvc__fail(k, KV_EINVAL, "%u more tokens exceed "
		    "max_model_len %u", (unsigned)N, (unsigned)mml);
	T1 = q->ntok + N;
	tx_start(k, &t, true, gpu_free(k));
	adv_release(k, &t, q, q->ncomp);
	adv_grow(k, &t, q, q->ncomp, T1, end_at(T1, L, mml));
	*o = t.vfree >= 0;
	return KV_OK;
}

static kv_err
ex_computed(kvc *k, int32_t s, uint32_t n, bool has_n)
{
	struct kvc_seq *q = kvc__seq(k, s);

	if (q->state != KVC_RUNNING)
		return kvc__fail(k, KV_ESTATE, "computed needs a RUNNING "
		    "sequence");
	if (has_n && n > q->ntok)
		return kvc__fail(k, KV_EINVAL, "n=%u exceeds the %u tokens",
		    (unsigned)n, (unsigned)q->ntok);
	return KV_OK;
}

static kv_err
ex_fork(kvc *k, int32_t s, int32_t child)
{
	struct ex *x = ex_of(k);
	struct kvc_seq *p = kvc__seq(k, s), *c = kvc__seq(k, child);
	uint32_t g, i;

	if (p->state != KVC_RUNNING)
		return kvc__fail(k, KV_ESTATE, "fork needs a RUNNING sequence");
	if (p->ncomp != p->ntok)
		return kvc__fail(k, KV_ESTATE, "fork needs a computed sequence "
		    "(C = %u of T = %u)", (unsigned)p->ncomp,
		    (unsigned)p->ntok);
	if (kvc__tok_reserve(c, p->ntok) != KV_OK)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	for (g = 0; g < k->cfg.ngroups; g++)
		if (kvc__tab_reserve(k, &c->tab[g], p->tab[g].n) != KV_OK)
			return kvc__fail(k, KV_ENOMEM, "out of memory");
	c->ntok = 0;
	(void)kvc__tok_push(c, p->tok, p->ntok);
	c->ncomp = p->ncomp;
	c->prefill = p->prefill;
	c->access = p->access;
	c->state = KVC_RUNNING;
	for (g = 0; g < k->cfg.ngroups; g++) {
		c->tab[g].n = 0;
		for (i = 0; i < p->tab[g].n; i++) {
			slot_push(&c->tab[g], p->tab[g].id[i],
			    p->tab[g].aux[i]);
			if (p->tab[g].id[i] != KVC_NULL)
				x->gpu.ref[p->tab[g].id[i]]++;
		}
	}
	/* kvc_fork() (kv_mgr.c) links the child last in its request. */
	c->req = p->req;
	return KV_OK;
}

static kv_err
ex_can_swap_out(kvc *k, int32_t s, bool *o)
{
	struct ex *x = ex_of(k);
	int32_t root = req_root(k, s), it, id;
	uint32_t g, i, d = 0;

	if (kvc__seq(k, root)->state != KVC_RUNNING)
		return kvc__fail(k, KV_ESTATE, "can_swap_out needs a RUNNING "
		    "request");
	FOR_REQ(k, root, it)
		for (g = 0; g < k->cfg.ngroups; g++)
			for (i = 0; i < kvc__seq(k, it)->tab[g].n; i++) {
				id = kvc__seq(k, it)->tab[g].id[i];
				if (id != KVC_NULL && x->cnt[id]++ == 0)
					x->lst[d++] = id;
			}
	for (i = 0; i < d; i++)
		x->cnt[x->lst[i]] = 0;
	*o = d <= x->cpu.fl.n;
	return KV_OK;
}

static kv_err
ex_swap_out(kvc *k, int32_t s)
{
	struct ex *x = ex_of(k);
	int32_t root = req_root(k, s), it, id, cid;
	uint32_t g, i, np, nslot;
	bool ok;
	kv_err e;

	e = ex_can_swap_out(k, s, &ok);
	if (e != KV_OK)
		return e;
	if (!ok)
		return kvc__fail(k, KV_ENOSPC, "swap_out needs more CPU blocks "
		    "than the %u free", (unsigned)x->cpu.fl.n);
	e = req_validate(k, root, &x->gpu, "GPU");
	if (e != KV_OK)
		return e;
	nslot = req_slots(k, root);
	if (kvc__pairs_reserve(k, nslot) != KV_OK)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	k->npairs = 0;
	FOR_REQ(k, root, it)
		for (g = 0; g < k->cfg.ngroups; g++)
			for (i = 0; i < kvc__seq(k, it)->tab[g].n; i++) {
				id = kvc__seq(k, it)->tab[g].id[i];
				if (id == KVC_NULL || x->cmap[id] != -1)
					continue;
				cid = kv_list_pop_front(&x->cpu.fl);
				x->cmap[id] = cid;
				(void)kvc__pair_push(k, id, cid);
			}
	req_release(k, root, &x->gpu);
	FOR_REQ(k, root, it)
		for (g = 0; g < k->cfg.ngroups; g++)
			for (i = 0; i < kvc__seq(k, it)->tab[g].n; i++) {
				struct kvc_tab *tb = &kvc__seq(k, it)->tab[g];

				id = tb->id[i];
				if (id == KVC_NULL)
					continue;
				tb->id[i] = x->cmap[id];
				x->cpu.ref[tb->id[i]]++;
			}
	np = k->npairs;
	for (i = 0; i < np; i++)
		x->cmap[k->pairs[i].src] = -1;
	req_set_state(k, root, KVC_SWAPPED);
	return KV_OK;
}

static kv_err
ex_can_swap_in(kvc *k, int32_t s, uint32_t L, kvc_verdict *o)
{
	struct ex *x = ex_of(k);
	int32_t root = req_root(k, s);
	struct tx t;

	if (kvc__seq(k, root)->state != KVC_SWAPPED)
		return kvc__fail(k, KV_ESTATE, "can_swap_in needs a SWAPPED "
		    "request");
	tx_start(k, &t, true, gpu_free(k));
	t.swapin = true;
	tx_swapin(k, &t, root, L, true);
	if (t.vfree >= (int64_t)x->wm) {
		*o = KVC_VERDICT_OK;
		return KV_OK;
	}
	tx_start(k, &t, true, (int64_t)x->gpu.n - x->wm);
	t.swapin = true;
	tx_swapin(k, &t, root, L, false);
	*o = t.vfree < 0 ? KVC_VERDICT_NEVER : KVC_VERDICT_LATER;
	return KV_OK;
}

static kv_err
ex_swap_in(kvc *k, int32_t s, uint32_t L)
{
	struct ex *x = ex_of(k);
	int32_t root = req_root(k, s), it;
	uint32_t mml = k->cfg.max_model_len, nslot;
	struct tx t;
	kv_err e;

	if (kvc__seq(k, root)->state != KVC_SWAPPED)
		return kvc__fail(k, KV_ESTATE, "swap_in needs a SWAPPED "
		    "request");
	tx_start(k, &t, true, gpu_free(k));
	t.swapin = true;
	tx_swapin(k, &t, root, L, true);
	if (t.vfree < 0)
		return ex_no_fit(k, &t, "swap_in");
	e = req_validate(k, root, &x->cpu, "CPU");
	if (e != KV_OK)
		return e;
	FOR_REQ(k, root, it)
		if (reserve_tabs(k, kvc__seq(k, it),
		    end_at(kvc__seq(k, it)->ntok, L, mml)) != KV_OK)
			return KV_ENOMEM;
	nslot = req_slots(k, root);
	if (kvc__pairs_reserve(k, 2 * nslot + 1) != KV_OK)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	k->npairs = 0;
	tx_start(k, &t, false, 0);
	t.swapin = true;
	tx_swapin(k, &t, root, L, true);
	return KV_OK;
}

static kv_err
ex_free_seq(kvc *k, int32_t s)
{
	struct ex *x = ex_of(k);
	int32_t root = req_root(k, s), it, nx;
	struct kvc_seq *q = kvc__seq(k, root);
	struct xpool *p;
	uint32_t g;
	kv_err e;

	if (q->state == KVC_RUNNING)
		p = &x->gpu;
	else if (q->state == KVC_SWAPPED)
		p = &x->cpu;
	else
		return kvc__fail(k, KV_ESTATE, "free needs a RUNNING or "
		    "SWAPPED request (nothing to free)");
	e = req_validate(k, root, p, p == &x->gpu ? "GPU" : "CPU");
	if (e != KV_OK)
		return e;
	req_release(k, root, p);
	for (it = root; it >= 0; it = nx) {
		struct kvc_seq *c = kvc__seq(k, it);

		nx = c->next;
		for (g = 0; g < k->cfg.ngroups; g++)
			c->tab[g].n = 0;
		c->ncomp = 0;
		if (it != root) {
			c->state = KVC_DEAD;
			c->next = -1;
		}
	}
	q->state = KVC_WAITING;
	q->next = -1;
	return KV_OK;
}

static kv_err
ex_cached(kvc *k, int32_t s, size_t *tokens)
{
	struct hit r;

	hit_find(k, kvc__seq(k, s), &r);
	*tokens = r.h;
	return KV_OK;
}

static kv_err
ex_blocks_needed(kvc *k, int32_t s, uint32_t n, uint32_t L,
		 uint32_t need[KVC_MAX_GROUPS])
{
	int32_t root = req_root(k, s);
	struct kvc_seq *q = kvc__seq(k, root);
	uint32_t mml = k->cfg.max_model_len, g, T1;
	struct hit r;
	struct tx t;

	tx_start(k, &t, true, gpu_free(k));
	switch ((kvc_state)q->state) {
	case KVC_WAITING:
		if (q->ntok > mml)
			return kvc__fail(k, KV_EINVAL, "%u tokens exceed "
			    "max_model_len %u", (unsigned)q->ntok,
			    (unsigned)mml);
		hit_find(k, q, &r);
		tx_admit(k, &t, q, &r, q->ntok, end_at(q->ntok, L, mml));
		break;
	case KVC_RUNNING:
		q = kvc__seq(k, s);
		if (n > mml || (uint64_t)q->ntok + n > mml)
			return kvc__fail(k, KV_EINVAL, "%u more tokens exceed "
			    "max_model_len %u", (unsigned)n, (unsigned)mml);
		T1 = q->ntok + n;
		adv_release(k, &t, q, q->ncomp);
		adv_grow(k, &t, q, q->ncomp, T1, end_at(T1, L, mml));
		break;
	case KVC_SWAPPED:
		t.swapin = true;
		tx_swapin(k, &t, root, L, true);
		break;
	default:
		return kvc__fail(k, KV_ESTATE, "dead sequence");
	}
	for (g = 0; g < k->cfg.ngroups; g++)
		need[g] = t.need[g] > 0 ? (uint32_t)t.need[g] : 0;
	return KV_OK;
}

static uint32_t
ex_free_blocks(const kvc *k, uint32_t g)
{
	(void)g;
	return gpu_free(k);
}

static uint32_t
ex_free_cpu(const kvc *k)
{
	return ex_of(k)->cpu.fl.n;
}

/* ---- lifecycle ------------------------------------------------------- */

static uint32_t
gcd32(uint32_t a, uint32_t b)
{
	uint32_t t;

	while (b != 0) {
		t = a % b;
		a = b;
		b = t;
	}
	return a;
}

static void
ex_release(kvc *k)
{
	struct ex *x = ex_of(k);
	uint32_t g;

	if (x == NULL)
		return;
	pool_release(&x->gpu);
	pool_release(&x->cpu);
	kv_hmap_release(&x->idx);
	free(x->bhash);
	free(x->gmap);
	free(x->cmap);
	free(x->cnt);
	free(x->lst);
	for (g = 0; g < KVC_MAX_GROUPS; g++) {
		free(x->hh[g]);
		free(x->hid[g]);
		free(x->hrun[g]);
	}
	free(x);
	k->ms = NULL;
}

/* Allocate the arrays of x (pools and index are the caller's). */
static kv_err
ex_alloc_arrays(kvc *k, struct ex *x)
{
	uint32_t g, n;

	x->bhash = calloc(x->gpu.n ? x->gpu.n : 1, sizeof(*x->bhash));
	x->gmap = malloc(x->nscr * sizeof(*x->gmap));
	x->cmap = malloc(x->nscr * sizeof(*x->cmap));
	x->cnt = calloc(x->nscr, sizeof(*x->cnt));
	x->lst = malloc(x->nscr * sizeof(*x->lst));
	if (!x->bhash || !x->gmap || !x->cmap || !x->cnt || !x->lst)
		return KV_ENOMEM;
	memset(x->gmap, 0xff, x->nscr * sizeof(*x->gmap));
	memset(x->cmap, 0xff, x->nscr * sizeof(*x->cmap));
	for (g = 0; g < k->cfg.ngroups; g++) {
		n = k->cfg.max_model_len / kvc__bs(k, g) + 1;
		x->hh[g] = malloc(n * sizeof(*x->hh[g]));
		x->hid[g] = malloc(n * sizeof(*x->hid[g]));
		x->hrun[g] = malloc(n * sizeof(*x->hrun[g]));
		if (!x->hh[g] || !x->hid[g] || !x->hrun[g])
			return KV_ENOMEM;
	}
	return KV_OK;
}

static kv_err
ex_init(kvc *k)
{
	const struct kvc_config *c = &k->cfg;
	struct ex *x;
	uint64_t l = 1;
	uint32_t g, G = c->gpu_blocks, C = c->cpu_blocks;
	bool state = false;

	x = calloc(1, sizeof(*x));
	if (x == NULL)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	k->ms = x;
	x->lifo = c->reuse == KVC_REUSE_LIFO;
	x->wm = (uint32_t)(c->watermark * (double)G);
	for (g = 0; g < c->ngroups; g++) {
		if (c->group[g].kind == KVC_STATE)
			state = true;
		if (l <= c->max_model_len)
			l = l / gcd32((uint32_t)l, kvc__bs(k, g)) *
			    kvc__bs(k, g);
	}
	x->lcm = l <= c->max_model_len ? (uint32_t)l : 0;
	x->pc = c->prefix_caching && !state;
	x->nscr = G > C ? G : C;
	if (x->nscr == 0)
		x->nscr = 1;
	if (pool_init(&x->gpu, G) != KV_OK || pool_init(&x->cpu, C) != KV_OK ||
	    kv_hmap_init(&x->idx, G ? G : 1) != KV_OK ||
	    ex_alloc_arrays(k, x) != KV_OK) {
		ex_release(k);	/* frees what was allocated, NULL-safe */
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	}
	return KV_OK;
}

static kv_err
ex_clone(kvc *dst, const kvc *src)
{
	const struct ex *s = ex_of(src);
	struct ex *d;
	uint32_t G = s->gpu.n ? s->gpu.n : 1;

	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return KV_ENOMEM;
	dst->ms = d;
	d->pc = s->pc;
	d->lifo = s->lifo;
	d->wm = s->wm;
	d->lcm = s->lcm;
	d->nscr = s->nscr;
	if (pool_copy(&d->gpu, &s->gpu) != KV_OK ||
	    pool_copy(&d->cpu, &s->cpu) != KV_OK ||
	    kv_hmap_copy(&d->idx, &s->idx) != KV_OK ||
	    ex_alloc_arrays(dst, d) != KV_OK) {
		ex_release(dst);
		return KV_ENOMEM;
	}
	memcpy(d->bhash, s->bhash, G * sizeof(*d->bhash));
	return KV_OK;
}

static kv_err
ex_check_config(const struct kvc_config *c, char *why, size_t whylen)
{
	uint32_t g;

	if (c->gpu_blocks == 0)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
		    "gpu_blocks must be at least 1");
	if (!(c->watermark >= 0.0 && c->watermark < 1.0))
		return kvc__failbuf(why, whylen, KV_ECONFIG,
		    "watermark must be in [0, 1)");
	if (c->max_model_len == 0)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
		    "max_model_len must be at least 1");
	if (c->reuse > KVC_REUSE_FIFO_LRU)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
		    "unknown reuse order");
	for (g = 0; g < c->ngroups; g++) {
		if (c->group[g].kind > KVC_STATE)
			return kvc__failbuf(why, whylen, KV_ECONFIG,
			    "group %s: unknown kind", c->group[g].name);
		if (c->group[g].kind == KVC_SLIDING && c->group[g].window == 0)
			return kvc__failbuf(why, whylen, KV_ECONFIG,
			    "group %s: a sliding window needs window >= 1",
			    c->group[g].name);
	}
	return KV_OK;
}

/* ---- audit ------------------------------------------------------------ */

static int
afail(char *why, size_t whylen, int inv, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
afail(char *why, size_t whylen, int inv, const char *fmt, ...)
{
	va_list ap;

	if (why != NULL && whylen > 0) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return inv;
}

/* Invariant 5 (and state shapes) for one sequence. */
static int
audit_seq(const kvc *k, int32_t s, char *why, size_t whylen)
{
	const struct ex *x = ex_of(k);
	const struct kvc_seq *q = kvc__seq(k, s);
	const struct kvc_seq *r;
	uint32_t g, i, f, bs, n, lim;
	int32_t id;

	/* kv_mgr.c lets a WAITING prompt exceed mml (never admitted). */
	if (q->ncomp > q->ntok || (q->ntok > k->cfg.max_model_len &&
	    q->state != KVC_WAITING && q->state != KVC_DEAD))
		return afail(why, whylen, 5, "seq %d: C %u, T %u, mml %u",
		    (int)s, (unsigned)q->ncomp, (unsigned)q->ntok,
		    (unsigned)k->cfg.max_model_len);
	if (q->req < 0 || (uint32_t)q->req >= k->nseq)
		return afail(why, whylen, 5, "seq %d: bad request %d",
		    (int)s, (int)q->req);
	r = kvc__seq(k, q->req);
	if (q->state != KVC_DEAD && q->state != r->state)
		return afail(why, whylen, 5, "seq %d: state %d, request %d",
		    (int)s, q->state, r->state);
	for (g = 0; g < k->cfg.ngroups; g++) {
		const struct kvc_tab *t = &q->tab[g];

		n = t->n;
		if (q->state == KVC_WAITING || q->state == KVC_DEAD) {
			if (n != 0)
				return afail(why, whylen, 5, "seq %d: %u slots "
				    "while holding nothing", (int)s,
				    (unsigned)n);
			continue;
		}
		lim = q->state == KVC_RUNNING ? x->gpu.n : x->cpu.n;
		for (i = 0; i < n; i++) {
			id = t->id[i];
			if (id != KVC_NULL && (id < 0 || (uint32_t)id >= lim))
				return afail(why, whylen, 1, "seq %d group %u: "
				    "id %d out of range", (int)s,
				    (unsigned)g, (int)id);
		}
		if (gkind(k, g) == KVC_STATE) {
			if (n != 1 || t->id[0] == KVC_NULL)
				return afail(why, whylen, 5, "seq %d group %u: "
				    "a state group holds exactly one block",
				    (int)s, (unsigned)g);
			continue;
		}
		bs = kvc__bs(k, g);
		if ((uint64_t)n * bs < q->ncomp ||
		    n > nslots(k, g, k->cfg.max_model_len))
			return afail(why, whylen, 5, "seq %d group %u: %u "
			    "slots for C %u", (int)s, (unsigned)g,
			    (unsigned)n, (unsigned)q->ncomp);
		f = first_live(t);
		for (i = f; i < n; i++)
			if (t->id[i] == KVC_NULL)
				return afail(why, whylen, 5, "seq %d group %u: "
				    "null slot %u after a live one", (int)s,
				    (unsigned)g, (unsigned)i);
		if (f > 0 && (gkind(k, g) != KVC_SLIDING ||
		    f > nskip(k, g, q->ncomp)))
			return afail(why, whylen, 5, "seq %d group %u: %u null "
			    "slots", (int)s, (unsigned)g, (unsigned)f);
		if (q->state != KVC_RUNNING)
			continue;
		for (i = f; i < n; i++) {
			id = t->id[i];
			if (x->bhash[id] == 0)
				continue;
			if (t->aux[i] != x->bhash[id] ||
			    (uint64_t)(i + 1) * bs > q->ncomp)
				return afail(why, whylen, 4, "seq %d group %u "
				    "slot %u: block %d carries a hash that is "
				    "not its contents'", (int)s, (unsigned)g,
				    (unsigned)i, (int)id);
		}
	}
	return 0;
}

/* Invariants 1-3 for one pool: counts, free list, conservation. */
static int
audit_pool(const kvc *k, const struct xpool *p, kvc_state st,
	   const char *dev, char *why, size_t whylen)
{
	struct ex *x = ex_of(k);
	uint32_t s, g, i, nfree = 0;
	int32_t id;
	int rc = 0;

	if (kv_list_check(&p->fl) != 0)
		return afail(why, whylen, 2, "%s free list is corrupt (%d)",
		    dev, kv_list_check(&p->fl));
	for (s = 0; s < k->nseq; s++) {
		const struct kvc_seq *q = kvc__seq(k, (int32_t)s);

		if (q->state != st)
			continue;
		for (g = 0; g < k->cfg.ngroups; g++)
			for (i = 0; i < q->tab[g].n; i++) {
				id = q->tab[g].id[i];
				if (id != KVC_NULL)
					x->cnt[id]++;
			}
	}
	for (i = 0; i < p->n && rc == 0; i++) {
		if (p->ref[i] != x->cnt[i])
			rc = afail(why, whylen, 1, "%s block %u: count %d, %d "
			    "table references", dev, (unsigned)i,
			    (int)p->ref[i], (int)x->cnt[i]);
		else if ((p->ref[i] == 0) != kv_list_has(&p->fl, (int32_t)i))
			rc = afail(why, whylen, 2, "%s block %u: count %d, "
			    "%s the free list", dev, (unsigned)i,
			    (int)p->ref[i], p->ref[i] ? "in" : "not in");
		nfree += p->ref[i] == 0;
	}
	memset(x->cnt, 0, x->nscr * sizeof(*x->cnt));
	if (rc != 0)
		return rc;
	if (nfree != p->fl.n)
		return afail(why, whylen, 3, "%s: %u free ids, free list of "
		    "%u", dev, (unsigned)nfree, (unsigned)p->fl.n);
	return 0;
}

static int
ex_audit(const kvc *k, char *why, size_t whylen)
{
	const struct ex *x = ex_of(k);
	uint32_t s, i, nidx = 0;
	int rc;

	if (why != NULL && whylen > 0)
		why[0] = '\0';
	for (s = 0; s < k->nseq; s++) {
		rc = audit_seq(k, (int32_t)s, why, whylen);
		if (rc != 0)
			return rc;
	}
	rc = audit_pool(k, &x->gpu, KVC_RUNNING, "GPU", why, whylen);
	if (rc == 0)
		rc = audit_pool(k, &x->cpu, KVC_SWAPPED, "CPU", why, whylen);
	if (rc != 0)
		return rc;
	for (i = 0; i < x->gpu.n; i++) {
		if (x->bhash[i] == 0)
			continue;
		nidx++;
		if (!x->pc || kv_hmap_get(&x->idx, x->bhash[i]) != (int32_t)i)
			return afail(why, whylen, 4, "GPU block %u carries a "
			    "hash the index does not map to it", (unsigned)i);
	}
	if (nidx != x->idx.n)
		return afail(why, whylen, 4, "index holds %u entries, %u "
		    "blocks carry a hash", (unsigned)x->idx.n, (unsigned)nidx);
	for (i = 0; i < x->nscr; i++)
		if (x->gmap[i] != -1 || x->cmap[i] != -1 || x->cnt[i] != 0)
			return afail(why, whylen, 2, "scratch entry %u not at "
			    "rest", (unsigned)i);
	return 0;
}

const struct kvc_ops kvc__exact_ops = {
	.name = "exact",
	.init = ex_init,
	.release = ex_release,
	.clone = ex_clone,
	.check_config = ex_check_config,
	.can_allocate = ex_can_allocate,
	.allocate = ex_allocate,
	.append = ex_append,
	.can_append = ex_can_append,
	.computed = ex_computed,
	.fork = ex_fork,
	.can_swap_out = ex_can_swap_out,
	.swap_out = ex_swap_out,
	.can_swap_in = ex_can_swap_in,
	.swap_in = ex_swap_in,
	.free_seq = ex_free_seq,
	.cached = ex_cached,
	.blocks_needed = ex_blocks_needed,
	.free_blocks = ex_free_blocks,
	.free_cpu = ex_free_cpu,
	.audit = ex_audit,
};
