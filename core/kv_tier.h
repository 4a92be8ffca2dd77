/*
 * kv_tier.h -- one offload tier: a pool of slots, each holding one
 * offloaded block under its hash (vLLM V1's LRUOffloadingManager over a
 * CPUBackend; docs/offload.md O9-O14).  Not installed; kv_offload.c builds
 * the connector on it.
 *
 * A slot is free, or holds a hash that is either pending (a store in
 * flight: found by kvt_has, never a hit, never evicted) or ready with a
 * count of loads in flight (evictable only at 0).  Ready and pending slots
 * sit on one LRU list, least recent first.  Free slots: never used ones in
 * id order first, then the freed ones, last freed first.
 */
#ifndef KV_TIER_H
#define KV_TIER_H

#include "kv_int.h"

#define KVT_PENDING (-1)	/* ref of a slot whose store is in flight */

struct kvt {
	uint32_t cap;		/* slots */
	uint32_t fresh;		/* slots never used: fresh .. cap - 1 */
	uint32_t nfree;		/* freed slots on the stack */
	int32_t *stack;		/* freed slots, last freed on top */
	uint64_t *hash;		/* per slot, 0 = free */
	int32_t *ref;		/* per slot: KVT_PENDING or loads in flight */
	struct kv_list lru;	/* used slots, least recent at the head */
	struct kv_hmap map;	/* hash -> slot */
	uint64_t evicted;	/* slots evicted so far */
};

kv_err kvt_init(struct kvt *t, uint32_t cap);
void kvt_release(struct kvt *t);

static inline uint32_t
kvt_used(const struct kvt *t)
{
	return t->fresh - t->nfree;
}

static inline uint32_t
kvt_free(const struct kvt *t)
{
	return t->cap - t->fresh + t->nfree;
}

/* The slot holding h (pending or ready), or -1. */
int32_t kvt_find(const struct kvt *t, uint64_t h);
/* lookup(): how many of h[0..n) are ready, counting from h[0]. */
uint32_t kvt_lookup(const struct kvt *t, const uint64_t *h, uint32_t n);
/* touch(): h[0..n) that are present become the most recent, h[0] last. */
void kvt_touch(struct kvt *t, const uint64_t *h, uint32_t n);
/* prepare_load(): one more load of ready slot; its id. */
int32_t kvt_load_begin(struct kvt *t, uint64_t h);
/* complete_load() of one slot named by kvt_load_begin. */
void kvt_load_end(struct kvt *t, int32_t slot);

/*
 * prepare_store(h[0..n)): the hashes not present get slots, pending, at
 * the recent end in order; ready unreferenced slots are evicted from the
 * least recent end first to make room.  *nnew of them, their positions in
 * h in idx[] and their slots in slot[] (both n long); *nevict evicted.
 * KV_ENOSPC when eviction cannot make room: nothing changes.
 */
kv_err kvt_store_begin(struct kvt *t, const uint64_t *h, uint32_t n,
		       uint32_t *idx, int32_t *slot, uint32_t *nnew,
		       uint32_t *nevict);
/* complete_store() of one slot kvt_store_begin gave: ok -> ready, else
 * freed.  A slot that is already ready is left alone. */
void kvt_store_end(struct kvt *t, int32_t slot, bool ok);
/* Take h into a free slot, ready (a copy up from a lower tier); evicts
 * like kvt_store_begin.  KV_ENOSPC: nothing changes. */
kv_err kvt_put_ready(struct kvt *t, uint64_t h, int32_t *slot,
		     uint32_t *nevict);

/* 0 when consistent, else an invariant number and a message. */
int kvt_check(const struct kvt *t, char *why, size_t whylen);

#endif /* KV_TIER_H */
