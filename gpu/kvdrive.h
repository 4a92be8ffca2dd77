/*
 * kvdrive.h -- a self-contained run for the verifier: a seeded synthetic
 * workload through a scheduler (kvsched.h) with a kvval watching every
 * step.  It needs core/ and gpu/ only, so the device check program (no
 * GSL, no libyaml on the GPU machine) and the unit tests use it; `kvsim
 * validate` drives the real simulator instead (sim/run.h).
 *
 * Workload: `requests` requests arrive `per_step` a step.  Prompts are
 * uniform in [prompt_min, prompt_max] tokens, outputs in [out_min,
 * out_max]; with share > 0 each prompt starts with one of `prefixes`
 * shared prefixes of `share` tokens (prefix-cache hits; a prompt no longer
 * than `share` is all prefix, so equal prompts recur).  Token ids come
 * from a splitmix64 stream seeded with `seed` (no libc rand()), so a seed
 * gives the same run on every machine.
 */
#ifndef KVDRIVE_H
#define KVDRIVE_H

#include "gpu/kvval.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kvdrive_opts {
	const char *policy;		/* kvsched.h name */
	int preemption;			/* 0 recompute, 1 swap, -1 default */
	bool prefix_caching;
	uint32_t block_size, gpu_blocks, cpu_blocks, max_model_len;
	int64_t max_num_seqs, max_num_batched_tokens;	/* KVS_UNSET ok */
	uint32_t requests, per_step;
	uint32_t prompt_min, prompt_max, out_min, out_max;
	uint32_t share, prefixes;
	uint64_t seed;
	uint64_t max_steps;		/* 0: 1,000,000 */
	uint32_t ngroups;		/* 0: one full-attention group */
	struct kvc_group_config group[KVC_MAX_GROUPS];	/* kvcore.h */
	/*
	 * KV offload (core/kvoffload.h; policy vllm-v1): a CPU tier of
	 * offload_blocks offloaded blocks of offload_block_tokens tokens
	 * (0: block_size), vLLM's native OffloadingConnector (kvo over the
	 * scheduler).  The transfers a step starts (loads at admission,
	 * stores after compute) run on the verifier's backend as they start
	 * (kvval_offload) and complete at the step's end.  0: no offload.
	 */
	uint64_t offload_blocks;
	uint32_t offload_block_tokens;
};

struct kvdrive_result {
	uint64_t steps, finished, preemptions;
	uint64_t swap_out_blocks, swap_in_blocks, cow_blocks;
	/* offload: transfers and the GPU blocks they moved */
	uint64_t offload_stores, offload_loads;
	uint64_t offload_store_blocks, offload_load_blocks;
};

/* Defaults: vllm-v0, swap, prefix caching, block 16, 64 GPU / 128 CPU
 * blocks, max_model_len 512, 40 requests of 56..200 prompt and 4..64
 * output tokens, 3 shared prefixes of 48 tokens. */
void kvdrive_opts_init(struct kvdrive_opts *o);

/* The allocator configuration the run uses (for the backend's geometry,
 * with kvval_pool; vllm-v1 and deepspeed-fastgen get no CPU pool). */
void kvdrive_kvc_config(const struct kvdrive_opts *o, struct kvc_config *kc);

/* The pool a backend needs for the run: kvval_pool of that configuration
 * in the allocator mode the policy picks (deepspeed: a pool per group). */
void kvdrive_pool(const struct kvdrive_opts *o, struct kvval_pool *out);

/*
 * KV cache groups of hybrid models, in one pool of one page size:
 *   KVDRIVE_MAMBA    three Mamba state groups around a full-attention
 *                    group, as Granite 4.0-H (a state's block size is
 *                    max_model_len);
 *   KVDRIVE_SLIDING  a 40-token sliding window and a full group, as
 *                    Gemma 2 (null entries once the window moves on);
 *   KVDRIVE_HALF     a full group and a 40-token window of half the block
 *                    size (half pages).
 * Sets block_size 16 and the groups; the rest of *o is left alone.
 */
enum kvdrive_shape { KVDRIVE_MAMBA, KVDRIVE_SLIDING, KVDRIVE_HALF };
void kvdrive_hybrid(struct kvdrive_opts *o, enum kvdrive_shape shape);

/*
 * Run to the end.  v may be NULL (no device).  0; 2 with a message for a
 * configuration the policy refuses (KV_ECONFIG: *refused set; offload
 * with a policy other than vllm-v1 or a bad tier); 1 with a message when
 * a step, the offload manager or the verifier's backend fails.
 */
int kvdrive_run(const struct kvdrive_opts *o, kvval *v,
		struct kvdrive_result *res, bool *refused, char *why,
		size_t whylen);

/*
 * The ordering hazard (docs/gpu.md), played on backend `name` with copy
 * strategy st: request B is swapped out; A fills every device block; in
 * one step A is swapped out and B swapped in, B reusing A's freed blocks.
 * Copied in the order issued, A's host copy and B's device blocks are
 * right; with the swap-in first (a "fault:invert" backend, armed here on
 * the second swap-out), A's host copy holds B's data.  The allocator is
 * core's exact mode, 4 device and 8 host blocks of 4 tokens.
 */
struct kvdrive_hazard {
	uint64_t a_bad, b_bad;		/* words wrong in A's host copy,
					 * B's device blocks */
	uint64_t hazards;		/* the fault backend's count */
	uint64_t reused;		/* B's blocks that were A's */
	uint64_t out_blocks, in_blocks;	/* swapped out (B, A), in (B) */
	uint64_t slots_checked;
};

/* 0; 1 with a message when the allocator or backend fails. */
int kvdrive_hazard(const char *name, enum kvgpu_strat st,
		   struct kvdrive_hazard *out, char *why, size_t whylen);

/*
 * Copy-on-write, played on backend `name` with strategy st: a 6-token
 * sequence (blocks of 4) is written and forked, and the child's first
 * append copies the shared partial block (kvc_fork, kvc_append); the
 * child's 6 positions are then verified.  With f other than
 * KVGPU_FAULT_NONE the backend is wrapped in "fault:none:NAME" and f armed
 * on that copy.  *mismatches: words wrong in the child.
 */
int kvdrive_cow(const char *name, enum kvgpu_fault f, enum kvgpu_strat st,
		uint64_t *mismatches, char *why, size_t whylen);

/*
 * Tier moves and a P/D transfer, played on two backends named `name`
 * (replicas 0 and 1; a "fault:MODE/DIR" name arms both) with strategy
 * st: policy vllm-v1, blocks of 4 tokens; each replica computes the same
 * 40-token prompt in one step.  Replica 0's 10 blocks are stored to tier
 * 0 (device block i > tier block 2i + 1: the pool grows and ids are not
 * the device's), loaded back into the same device blocks (poisoned
 * first), then copied into replica 1's blocks (kvval_offload,
 * kvval_transfer).  The counts are both verifiers' and both backends'.
 */
struct kvdrive_moves {
	uint64_t failures;		/* integrity failures */
	uint64_t move_slots;		/* slots checked after the moves */
	uint64_t injected;		/* faults that fired */
	uint64_t store_blocks, load_blocks, peer_blocks;
};

/* 0; 1 with a message when a scheduler, backend or verifier fails. */
int kvdrive_moves(const char *name, enum kvgpu_strat st,
		  struct kvdrive_moves *out, char *why, size_t whylen);

#ifdef __cplusplus
}
#endif
#endif /* KVDRIVE_H */
