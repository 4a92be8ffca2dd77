/*
 * kvspolicy.h -- what the built-in policies add to kvsched.h: FastGen's
 * scheduling verdict under the per-group contract, and the preemption
 * cost hook of the "kvsim" policy.  docs/policies.md describes each
 * policy's rules; these are the calls a caller may make beside kvs_step().
 *
 * Every function checks that the kvs runs the policy it is about and
 * answers KV_EINVAL otherwise; none changes the scheduler's state except
 * kvs_kvsim_set_cost().
 */
#ifndef KVSPOLICY_H
#define KVSPOLICY_H

#include "kvsched.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- deepspeed-fastgen ------------------------------------------------ */

/*
 * DeepSpeed's SchedulingResult (deepspeed/inference/v2/scheduling_utils.py)
 * in the order InferenceEngineV2.can_schedule() checks them.
 */
enum kvs_ds_result {
	KVS_DS_SUCCESS = 0,
	KVS_DS_BATCH_SEQUENCE_LIMIT,	/* > max_ragged_sequence_count */
	KVS_DS_KV_CACHE_LIMIT,		/* a group cannot hold one */
	KVS_DS_ENGINE_SEQUENCE_LIMIT,	/* > max_tracked_sequences */
	KVS_DS_BATCH_TOKEN_LIMIT	/* more than max_ragged_batch_size */
};

/* DSStateManagerConfig.max_tracked_sequences (not a kvs_config key). */
#define KVS_DS_MAX_TRACKED 2048

/*
 * InferenceEngineV2.can_schedule(uids, lengths) with the fixed form of seed
 * bug 1: each listed request asks for lengths[i] more tokens (a request
 * the engine does not track yet counts as a new sequence with nothing
 * seen); in every KV cache group the request's requirement
 * (get_kv_requirements) is checked against THAT group's free blocks minus
 * what the earlier requests of the list took from it, never against group
 * 0 alone or a sum.  *res gets the verdict; with KVS_DS_KV_CACHE_LIMIT,
 * *group (if not NULL) the first group that could not hold it and *index
 * (if not NULL) the list position.  Pure: no state changes.
 */
kv_err kvs_fastgen_can_schedule(kvs *s, const kvs_req *reqs,
				const uint32_t *lengths, uint32_t n,
				enum kvs_ds_result *res, uint32_t *group,
				uint32_t *index);

/* What the FastGen policy reported so far (all steps). */
struct kvs_fastgen_stats {
	uint64_t kv_limit;	/* requests a group's free blocks held back */
	uint32_t kv_limit_group;	/* the group of the latest one */
	uint64_t resets;	/* deadlock resets (every running request
				 * recomputed, MII's reset_request_status) */
};

kv_err kvs_fastgen_stats(const kvs *s, struct kvs_fastgen_stats *out);

/* ---- kvsim ---------------------------------------------------------- */

enum kvs_preempt_mode {
	KVS_PREEMPT_RECOMPUTE = 0,
	KVS_PREEMPT_SWAP = 1
};

/* A preemption candidate, as the kvsim policy sees it. */
struct kvs_victim {
	kvs_req req;
	uint32_t tokens;	/* T: prompt + generated */
	uint32_t computed;	/* C: what a recompute computes again */
	uint32_t gpu_blocks;	/* table slots it holds (all groups) */
	bool can_swap;		/* decoding, and the CPU has room */
};

/*
 * The cost of preempting v in mode m, in any unit as long as it is the
 * same for every call (the simulator uses nanoseconds from its cost
 * model).  The policy preempts the candidate whose cheapest allowed mode
 * costs least, in that mode; ties go to the candidate latest in the
 * scheduling order.  Negative costs are treated as 0.  A swap is offered
 * only when v->can_swap.
 */
struct kvs_kvsim_cost {
	void *ctx;
	int64_t (*cost)(void *ctx, const struct kvs_victim *v,
			enum kvs_preempt_mode m);
};

/*
 * The default hook: recompute costs the tokens it recomputes (C); a swap
 * costs KVS_KVSIM_SWAP_TOKENS token-equivalents whatever its size (PCIe
 * moves KV far faster than a GPU recomputes it; the fixed latency of the
 * round trip and the CPU pool dominate).  So short requests are recomputed
 * and long ones swapped when the CPU pool has room.
 */
#define KVS_KVSIM_SWAP_TOKENS 256
void kvs_kvsim_cost_default(struct kvs_kvsim_cost *c);

/* Install c (copied; NULL restores the default).  KV_EINVAL if s does
 * not run the kvsim policy or c->cost is NULL. */
kv_err kvs_kvsim_set_cost(kvs *s, const struct kvs_kvsim_cost *c);

#ifdef __cplusplus
}
#endif
#endif /* KVSPOLICY_H */
