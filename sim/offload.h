/*
 * offload.h -- KV offload in a simulation run: the run's offload setting
 * resolved into the offload manager's configuration (core/kvoffload.h),
 * and one manager per replica whose transfers are timed on their tiers'
 * links.
 *
 * Timing (docs/run.md "KV offload"): every transfer the manager starts
 * (a load at admission, after kvs_schedule; a store after kvs_complete)
 * is queued on its tier's link, one FIFO per direction per tier per
 * replica (cost.h's cost_fifo), and takes sim_tier_xfer_ns.  It completes
 * (kvo_done) at the first step chosen at or after its end, and not before
 * the end of the step that started it: vLLM reports a finished transfer
 * in a step's output and the scheduler admits the request in the step it
 * chooses after that output.  Transfers run beside the forward
 * pass (vLLM's own CUDA stream): they add no step time.
 *
 * Memory: the transfers in flight, O(requests waiting on a load + stores
 * in flight).
 */
#ifndef SIM_OFFLOAD_H
#define SIM_OFFLOAD_H

#include "core/kvoffload.h"
#include "sim/cost.h"
#include "sim/run.h"
#include "sim/runcfg.h"
#include "sim/tiers.h"

#include <stdbool.h>
#include <stdint.h>

/* A run's offload, resolved once (sim_offload_resolve). */
struct sim_offload_setup {
	struct kvo_config kc;
	struct sim_tier media[KVO_MAX_TIERS];	/* of kc.tier[i] */
	uint64_t block_bytes;	/* one GPU block, every rank */
	const struct cost_model *cm;	/* the host link */
	enum cost_layout layout;	/* the GPU KV layout transfers copy */
	bool free;		/* cost.step_ns > 0: copies are free */
};

/*
 * The manager's configuration for cfg's offload (cfg->offload.size_gib >
 * 0): tiers and their capacity in offloaded blocks (docs/run.md "KV
 * offload" has the arithmetic), for policy name `policy`, tp ranks of
 * blocks of gpu_block tokens, block_bytes (one GPU block id on one rank,
 * cost.h's) each.  KV_OK; KV_EINVAL with "WHERE: KEY: what" (the key's
 * FILE:LINE:COL when known) in err.
 */
kv_err sim_offload_resolve(const struct sim_config *cfg, const char *policy,
			   uint32_t tp, uint32_t gpu_block,
			   const struct cost_model *cm,
			   struct sim_offload_setup *out, char *err,
			   size_t errlen);

typedef struct sim_offload sim_offload;

/* What a transfer did for its request (replica's per-request columns). */
typedef void (*sim_offload_note)(void *ctx, const struct kvo_xfer *x,
				 int64_t start, int64_t done);

/* One replica's manager, attached to s.  NULL with a message in why. */
sim_offload *sim_offload_new(const struct sim_offload_setup *su, kvs *s,
			     char *why, size_t whylen);
void sim_offload_free(sim_offload *o);

/*
 * The transfers started since the last call: each timed from now on its
 * link, told to the observer (obs may be NULL) and to note (at start,
 * with its end).  The scheduler sees one done at the later of its end and
 * `seen` (a load the step about to run starts is reported in that step's
 * output, at its end).  KV_ESTATE when the observer stops the run.
 */
kv_err sim_offload_collect(sim_offload *o, int64_t now, int64_t seen,
			   uint32_t replica, const struct sim_observer *obs,
			   sim_offload_note note, void *ctx, char *why,
			   size_t whylen);

/* Complete (kvo_done) every transfer due at or before t; *n: how many. */
kv_err sim_offload_complete(sim_offload *o, int64_t t, uint32_t *n,
			    char *why, size_t whylen);

/* The earliest completion still to come, or -1. */
int64_t sim_offload_next(const sim_offload *o);

/* Per tier: bytes loaded and stored, tokens loaded; blocks used and
 * evicted (kvo_stats). */
struct sim_offload_tier_stats {
	uint64_t load_bytes, store_bytes, hit_tokens;
	uint64_t used_blocks, evicted_blocks, capacity_blocks;
};
uint32_t sim_offload_ntiers(const sim_offload *o);
void sim_offload_stats(const sim_offload *o, uint32_t tier,
		       struct sim_offload_tier_stats *st);

#endif
