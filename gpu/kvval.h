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
 *                    request for positions it has not computed.
 *   kvval_computed   the forward pass is over: writes positions start ..
 *                    start+ntokens-1 of each scheduled request, then
 *                    verifies positions 0 .. start+ntokens-1 of every
 *                    request that was just admitted (prefix-cache hits
 *                    included), swapped in, recomputed, touched by a CoW,
 *                    or is about to finish.
 *   kvval_completed  after kvs_complete(): forgets finished requests.
 *
 * What a slot must hold.  Position p of a request holds the pattern of
 * (key(p), p): key(p) chains the token ids 0..p (kv_pattern.h), so the KV
 * data of equal prefixes is equal -- prefix-cache sharing is checked, not
 * excused -- and a block holding another prefix's data fails.
 *
 * The digest folds, at every verify, the kvgpu_digest of the verified
 * requests' whole blocks: equal on two backends that executed the same
 * run correctly (the host/CUDA equivalence check).
 *
 * Fragmentation: every frag_every steps, the poisoned slots of the live
 * blocks (blocks of running requests, each once) are counted on the
 * device and compared with the slots no running request has written,
 * sum over blocks of (block_size - written slots).
 *
 * Only group 0 of the allocator is executed (the full-attention group of
 * a hybrid model; sliding-window null blocks are skipped); Mamba state
 * and other groups are not.
 *
 * Integrity failures are counted, not returned: the calls return non-zero
 * only when the backend fails (message in why), so a run can report every
 * failure.  stats.first_failure describes the first.
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
};

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
	uint64_t dup_dsts;		/* pairs overwritten by a later pair to
					 * the same destination (vLLM v0) */
	uint64_t digest;
	struct kvval_class cls[KVGPU_NDIRS];	/* d2h swap-out, h2d swap-in,
						 * d2d CoW */
	char first_failure[320];
};

typedef struct kvval kvval;

/* The backend is borrowed; its block size must be the allocator's. */
kvval *kvval_new(kvgpu *g, const struct kvval_opts *o);
void kvval_free(kvval *v);

int kvval_scheduled(kvval *v, kvs *s, const struct kvs_step *st,
		    const uint32_t *start, char *why, size_t whylen);
int kvval_computed(kvval *v, kvs *s, const struct kvs_step *st,
		   const uint32_t *start, char *why, size_t whylen);
int kvval_completed(kvval *v, kvs *s, const struct kvs_step *st,
		    char *why, size_t whylen);

const struct kvval_stats *kvval_stats(const kvval *v);

#ifdef __cplusplus
}
#endif
#endif /* KVVAL_H */
