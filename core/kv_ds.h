/*
 * kv_ds.h -- DeepSpeed FastGen's per-group block allocator, for kv_ds.c and
 * its tests.  Internal: not installed.
 *
 * struct kv_dsa is deepspeedai/DeepSpeed (edaa7221267)
 * deepspeed/inference/v2/ragged/blocked_allocator.py, BlockedAllocator: ids
 * 0..n-1 on a singly linked free list, initially in id order; allocate(k)
 * takes the first k ids of the list, free(ids) pushes the ids on the front
 * one by one in the order given, so the last id freed is the first reused
 * (LIFO).  The reference keeps the list in a `next` array whose tail points
 * at the sentinel n; here it is a kv_list (push_front + pop_front), which
 * visits the same ids in the same order.
 *
 * One deliberate difference (core-spec §7 item 7, §8.3 item 6): the
 * reference validates every id of a free call before changing anything but
 * accepts the same id twice in one call, which makes a self-loop, counts
 * two free blocks for one and later hands the id out twice.
 * kv_dsa_free_check() rejects the whole call on a repeated id too, so a
 * free call either frees every id it names exactly once or changes nothing.
 *
 * Costs: allocate O(k), free O(n ids), nothing allocated after init.
 */
#ifndef KV_DS_H
#define KV_DS_H

#include "kv_int.h"

struct kv_dsa {
	struct kv_list free;	/* head = the next id handed out */
	uint32_t nblocks;	/* ids 0..nblocks-1 */
	/*
	 * Scratch for whole-call validation and audits (not state: never
	 * compared, not copied): stamp[id] == epoch marks an id seen in the
	 * current pass.
	 */
	uint32_t *stamp;
	uint32_t epoch;
};

/* Why kv_dsa_free_check() rejected a call. */
enum kv_dsa_fault_kind {
	KV_DSA_OK = 0,
	KV_DSA_RANGE,		/* id < 0 or id >= nblocks */
	KV_DSA_FREE,		/* id is on the free list ("already free") */
	KV_DSA_REPEAT		/* id named twice in one call */
};

struct kv_dsa_fault {
	enum kv_dsa_fault_kind kind;
	size_t index;		/* position of the first bad id in the call */
	int32_t id;
};

/* All ids free, in id order.  KV_ENOMEM leaves *a released. */
kv_err kv_dsa_init(struct kv_dsa *a, uint32_t nblocks);
void kv_dsa_release(struct kv_dsa *a);
/* dst = a deep copy of src (dst uninitialised).  KV_ENOMEM: dst released. */
kv_err kv_dsa_copy(struct kv_dsa *dst, const struct kv_dsa *src);

static inline uint32_t
kv_dsa_nfree(const struct kv_dsa *a)
{
	return a->free.n;
}

/* Is id in range and handed out (not on the free list)? */
static inline bool
kv_dsa_used(const struct kv_dsa *a, int32_t id)
{
	return id >= 0 && (uint32_t)id < a->nblocks && !kv_list_has(&a->free,
								      id);
}

/*
 * Take the first k ids of the free list into out[0..k).  KV_ENOSPC, with
 * nothing taken, when k > kv_dsa_nfree(a) (BlockedAllocator.allocate checks
 * the count before taking an id, so it is atomic).
 */
kv_err kv_dsa_allocate(struct kv_dsa *a, uint32_t k, int32_t *out);

/*
 * Whole-call validation of free(ids[0..n)): every id in range, currently
 * handed out, and named once.  KV_OK, or KV_EINVAL with the first bad id in
 * *f (f may be NULL).  Changes only the scratch stamps.
 */
kv_err kv_dsa_free_check(struct kv_dsa *a, const int32_t *ids, size_t n,
			 struct kv_dsa_fault *f);

/*
 * free(ids): kv_dsa_free_check(), then push each id on the front of the free
 * list in the order given.  On KV_EINVAL nothing changed.
 */
kv_err kv_dsa_free(struct kv_dsa *a, const int32_t *ids, size_t n,
		   struct kv_dsa_fault *f);

/* Start a marking pass over the scratch stamps. */
void kv_dsa_mark_begin(struct kv_dsa *a);
/* Mark id (in range) in the current pass; true if it was marked already. */
bool kv_dsa_mark(struct kv_dsa *a, int32_t id);

/*
 * Invariants: 0, or 1 the free list is broken (links, cycle, count,
 * membership: kv_list_check), 2 more free ids than blocks.
 */
int kv_dsa_check(const struct kv_dsa *a);

/* The mode's state, k->ms: one allocator per group, all of gpu_blocks. */
struct kvc_ds {
	struct kv_dsa grp[KVC_MAX_GROUPS];
};

/*
 * DeepSpeed's dense-model get_kv_requirements (inference_transformer_base.py)
 * for one group: a sequence that has seen `seen` tokens and holds `held`
 * blocks of `bs` tokens asks for `new_tokens` more while `max_new_blocks`
 * blocks are free.  req = cdiv(seen + new_tokens, bs) - held; if
 * req <= max_new_blocks the answer is (new_tokens, req), else the tokens
 * that fit, (max_new_blocks + held) * bs - seen, and max_new_blocks.
 * can_schedule reports KVCacheLimitExceeded when *tokens != new_tokens.
 */
void kv_ds_kv_requirements(uint64_t seen, uint64_t new_tokens, uint64_t held,
			   uint32_t bs, uint64_t max_new_blocks,
			   uint64_t *tokens, int64_t *blocks);

#endif /* KV_DS_H */
