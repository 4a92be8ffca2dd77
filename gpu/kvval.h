/*
 * kvval.h -- the verifier: executes a scheduler's block operations on a
 * backend (kvgpu.h), writes the pattern of every computed token slot and
 * checks the slots bit-exactly after every swap, recompute and copy-on-
 * write, and at completion.
 *
 * One kvval watches one scheduler (kvsched.h) through three calls a step,
 * made in this order (the hooks of sim/run.h's struct sim_observer, or the
 * loop of gpu/kvdrive.h):
 *
 *   kvval_scheduled  after kvs_schedule(): runs the step's swap-out (D2H),
 *                    then checks the host copies of every request swapped
 *                    out; runs the swap-in (H2D) and the copy-on-write
 *                    (D2D) pairs; poisons the blocks newly allocated to a
 *                    request for positions it has not computed, unless
 *                    they hold its own data already (validate.c), and
 *                    its state blocks while it has computed nothing.
 *   kvval_computed   the forward pass is over: checks the states the step
 *                    reads (requests admitted, swapped in, recomputed or
 *                    touched by a CoW), writes positions start ..
 *                    start+ntokens-1 of each scheduled request and its new
 *                    states, then verifies positions 0 .. start+ntokens-1
 *                    and the states of every request that was just
 *                    admitted (prefix-cache hits included), swapped in,
 *                    recomputed, touched by a CoW, or is about to finish.
 *   kvval_completed  after kvs_complete(): forgets finished requests.
 *
 * What a slot must hold.  Position p of a request holds the pattern of
 * (key(p), p): key(p) chains the token ids 0..p (kv_pattern.h), so the KV
 * data of equal prefixes is equal -- prefix-cache sharing is checked, not
 * excused -- and a block holding another prefix's data fails.
 *
 * The digest folds, at every verify, the kvgpu_digest of the verified
 * requests' whole blocks, every group's: equal on two backends that
 * executed the same run correctly (the host/CUDA equivalence check).
 *
 * Fragmentation: every frag_every steps, the poisoned slots of the live
 * blocks (blocks of running requests in every group, each once) are
 * counted on the device and compared with the slots no running request
 * has written, sum over blocks of (block_size - written slots); a state
 * block has state_slots written once its request has computed a token.
 * A block that holds data past its holders' computed tokens (theirs,
 * written by a request that shared it and has gone) counts those slots
 * as written (frag_ahead_slots).
 *
 * Groups.  Every KV cache group of the allocator is executed, in one pool
 * whose blocks all have one page size (vLLM's hybrid page-size
 * unification; kvval_pool gives the pool an allocator needs).  Group g's
 * slots use the key kvgpu_group_key(key(p), g), so a block of one group
 * holding another group's data fails.  A sliding-window group keeps only
 * the blocks of its window: null entries are neither written nor checked,
 * the tokens in its held blocks are.  A state group (Mamba) holds the
 * state after the request's computed tokens T in the table entry of token
 * T - 1 (one entry when its block is max_model_len; with Mamba prefix
 * caching every full block also keeps the state at its end), written to
 * the first state_slots slots of the block with the key
 * kvgpu_state_key(key(T - 1), g) (slot j as position j), rewritten at
 * every step that computes tokens and
 * checked with the request's other slots (swap-out, swap-in, recompute,
 * copy-on-write, finish) and, after a swap-in, a recompute with a hit or
 * a copy, before the step that reads it rewrites it.  A state block is
 * fresh (poisoned) while its request has no computed token.
 *
 * Integrity failures are counted, not returned: the calls return non-zero
 * only when the backend fails, its pools cannot hold the allocator's
 * (kvval_pool), or a mode whose groups have their own ids copies blocks
 * (message in why), so a run can report every failure.
 * stats.first_failure describes the first.
 */
#ifndef KVVAL_H
#define KVVAL_H

#include "core/kvsched.h"
#include "gpu/kvgpu.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kvval_opts {
	enum kvgpu_strat strat;		/* swaps and CoW */
	uint32_t frag_every;		/* steps between scans; 0: never */
	uint32_t state_slots;		/* slots a Mamba state fills; 0 (or
					 * more than a block): the block */
	bool skip_stale;		/* leave an engine hazard's positions
					 * (kvs_sched.stale) unwritten, as the
					 * engine modelled does: they fail */
	bool check;			/* kvgpu_check() after every batch of
					 * copies: a broken backend invariant
					 * fails the step (the expensive
					 * check level) */
};

/*
 * The pool a verifier needs for an allocator configuration with ngroups
 * groups (kvc_ngroups): blocks of block_size slots, the largest block
 * size of a full or sliding group (a state group's block is one page
 * whatever its token block size); gpu_blocks device blocks, times the
 * groups where each group has its own ids (deepspeed); cpu_blocks host
 * blocks.  The verifier refuses, at its first step, a backend whose pools
 * are smaller.
 */
struct kvval_pool {
	uint32_t block_size, dev_blocks, host_blocks;
};

void kvval_pool(const struct kvc_config *kc, uint32_t ngroups,
		struct kvval_pool *out);

/* The copies of one direction. */
struct kvval_class {
	uint64_t batches, blocks;
	uint64_t calls;		/* cost-model calls: per-chunk c(layout) a
				 * batch, else 1 (sim/cost.h) */
	uint64_t chunks, bytes;
	int64_t dev_ns, submit_ns;
};

struct kvval_stats {
	uint64_t steps;
	uint64_t preempt_swap, preempt_recompute;
	uint64_t written_slots;
	uint64_t verifies;		/* verify calls */
	uint64_t verified_slots, verified_words;
	uint64_t mismatched_words;
	uint64_t failures;		/* verifies or scans that failed */
	uint64_t full_checks;		/* requests checked whole */
	uint64_t frag_scans, frag_mismatches;
	uint64_t frag_poison_slots, frag_expected_slots;	/* summed */
	uint64_t frag_live_blocks;				/* summed */
	uint64_t frag_ahead_slots;	/* of the unpoisoned: holding data
					 * past their holders' computed tokens
					 * (summed) */
	uint64_t window_slots;		/* positions checked in a sliding
					 * group's null entries: skipped */
	uint64_t state_checks;		/* Mamba states verified */
	uint64_t own_blocks;		/* new to a request's table past its
					 * computed tokens, holding its data
					 * already: not poisoned (validate.c) */
	uint64_t dup_dsts;		/* pairs overwritten by a later pair to
					 * the same destination (vLLM v0) */
	uint64_t stale_tokens;		/* scheduled as cached, no longer in
					 * the cache (kvs_sched.stale): written
					 * here, skipped by the engine */
	uint64_t digest;
	struct kvval_class cls[KVGPU_NDIRS];	/* d2h swap-out, h2d swap-in,
						 * d2d CoW */
	char first_failure[320];
	/* offload and P/D moves, by dir - KVGPU_NDIRS: d2t store, t2d
	 * load, peer transfer (this verifier's backend the destination) */
	struct kvval_class move[KVGPU_NMOVES - KVGPU_NDIRS];
	uint64_t move_slots;		/* slots verified after them */
	uint64_t move_digests;		/* stores of a request the scheduler
					 * no longer has: whole blocks */
};

typedef struct kvval kvval;

/* The backend is borrowed; its pools must hold kvval_pool's. */
kvval *kvval_new(kvgpu *g, const struct kvval_opts *o);
void kvval_free(kvval *v);

int kvval_scheduled(kvval *v, kvs *s, const struct kvs_step *st,
		    const uint32_t *start, char *why, size_t whylen);
int kvval_computed(kvval *v, kvs *s, const struct kvs_step *st,
		   const uint32_t *start, char *why, size_t whylen);
int kvval_completed(kvval *v, kvs *s, const struct kvs_step *st,
		    char *why, size_t whylen);

/*
 * Offload (core/kvoffload.h; sim/run.h's offload_xfer): run transfer x of
 * s's offload manager on the backend -- a store copies device blocks to
 * tier x->tier's pool, a load tier blocks to device blocks (the tier
 * pool grows to the slots named) -- and check it slot by slot: a stored
 * tier block holds the pattern of the positions its device block held
 * (for a request s no longer has: the device block's digest), a loaded
 * device block the pattern of the request's positions, as many as its
 * tier block held.  Destinations are poisoned first.  One
 * full-attention group only.
 */
struct kvo_xfer;
int kvval_offload(kvval *v, kvs *s, const struct kvo_xfer *x, char *why,
		  size_t whylen);

/*
 * A P/D transfer (sim/run.h's kv_transfer): src's device blocks p[i].src
 * (request sr of ss) into dst's blocks p[i].dst (request dr of ds) by
 * kvgpu_peer_copy, then each destination block holds, in as many slots
 * as its source held data (src's record), the pattern of dr's positions
 * there: the content key is the token prefix, the same on both replicas.
 */
int kvval_transfer(kvval *dst, kvs *ds, kvs_req dr, kvval *src, kvs *ss,
		   kvs_req sr, const struct kvc_pair *p, uint32_t n,
		   char *why, size_t whylen);

const struct kvval_stats *kvval_stats(const kvval *v);

#ifdef __cplusplus
}
#endif
#endif /* KVVAL_H */
