/*
 * kvgpu.h -- device backends: a KV-cache pool in device and host memory,
 * the block copies a scheduler asks for, and bit-exact verification.
 *
 * A backend holds two pools laid out alike (docs/gpu-design.md §1): the
 * device pool of geom.dev_blocks blocks and the host (swap) pool of
 * geom.host_blocks.  Each block holds block_size token slots of every
 * layer, K and V; a slot of one layer and one of K/V is `words` 32-bit
 * words.  Where the words of a block lie is the layout's (kv_layout.h):
 * the same block is 2L, L or 1 contiguous chunks.
 *
 * Every slot is either poisoned (KVGPU_POISON in every word) or holds the
 * pattern of one token position (kv_pattern.h): a word is a function of
 * (content key, position, layer, K/V, word), so a verify needs no copy of
 * the expected data and a wrong block, a stale block, a lost chunk or one
 * flipped bit all show.  The content key is the hash of the token prefix
 * up to the position (gpu/kvval.h), so blocks shared through the prefix
 * cache must hold the very same bits.
 *
 * Backends (kvgpu_open):
 *   "host"          malloc'd pools and memcpy: the reference, always built.
 *   "cuda"          cudaMalloc'd device pool, pinned (cudaHostAlloc) or
 *                   pageable host pool, copies by strategy, CUDA events
 *                   (built only when configure finds nvcc; otherwise
 *                   kvgpu_open says KV_ENOTSUP).
 *   "fault:MODE[/DIR][@PAIR][:INNER]"  test-only wrapper over INNER
 *                   (default host) that spoils one copy: corrupt (flip a
 *                   bit), drop (skip a chunk) in pair PAIR (a number or
 *                   "last"; default 0), reorder (rotate a batch's
 *                   destinations) or invert (run a swap-out after the
 *                   next swap-in); DIR (d2h by default, kvgpu_dir_name)
 *                   the copies it spoils: d2h, h2d, d2d, d2t (a tier
 *                   store), t2d (a tier load), peer (a P/D transfer
 *                   into this backend).
 *
 * Copies.  A batch of pairs {src, dst} (block ids of the source and
 * destination pools) is independent: no destination twice, and for D2D
 * no block both a source and a destination.  cudaMemcpyBatchAsync gives no
 * order inside a batch, so kvgpu_copy() refuses a dependent batch with
 * KV_EINVAL (both backends, before touching anything).  Batches run in the
 * order they are issued: a swap-out before a swap-in that reuses its
 * blocks.
 *
 * Errors are kv_err (core/kvcore.h): KV_EINVAL for a bad argument,
 * KV_ENOMEM, KV_ENOTSUP (no such backend, or a strategy it lacks),
 * KV_ESTATE for a device failure; kvgpu_errmsg() says why.  A failed call
 * leaves the pools as they were except after a device failure.
 *
 * Cost: fill and verify are O(slots * layers * words); copy O(pairs *
 * chunks); none allocates per call beyond the handle's scratch.
 */
#ifndef KVGPU_H
#define KVGPU_H

#include "core/kvcore.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The four layouts of docs/gpu-design.md §1 (same order as sim/cost.h). */
enum kvgpu_layout {
	KVGPU_FA_SPLIT = 0,	/* per layer [2, nb, bs, H, D]: 2L chunks */
	KVGPU_FI_FUSED,		/* per layer [nb, 2, bs, H, D]: L chunks */
	KVGPU_DS_INTERLEAVED,	/* (L, nb, bs, 2, H, D): L chunks */
	KVGPU_CROSS_LAYER,	/* [nb, L, 2, bs, H, D]: 1 chunk */
	KVGPU_NLAYOUTS
};

/*
 * Directions of kvgpu_copy (the first KVGPU_NDIRS), then the moves of the
 * tier pools and of the peer copy (kvgpu_tier_copy, kvgpu_peer_copy): a
 * fault is armed on any of them.
 */
enum kvgpu_dir {
	KVGPU_D2H = 0, KVGPU_H2D, KVGPU_D2D, KVGPU_NDIRS,
	KVGPU_D2T = KVGPU_NDIRS,	/* device block > tier slot (store) */
	KVGPU_T2D,			/* tier slot > device block (load) */
	KVGPU_PEER,			/* another backend's device block >
					 * this one's (P/D transfer) */
	KVGPU_NMOVES
};

/* Copy strategies (docs/gpu-design.md §3; same order as sim/cost.h). */
enum kvgpu_strat {
	KVGPU_PER_CHUNK = 0,	/* one memcpy per contiguous chunk */
	KVGPU_BATCH,		/* one batched call (cudaMemcpyBatchAsync) */
	KVGPU_GATHER,		/* one kernel copying every chunk */
	KVGPU_STAGED,		/* gather into a staging buffer, one DMA */
	KVGPU_NSTRATS
};

enum kvgpu_hostmem { KVGPU_PINNED = 0, KVGPU_PAGEABLE, KVGPU_NHOSTMEMS };

/* Offload tiers a backend holds pools for (core/kvoffload.h's). */
#define KVGPU_MAX_TIERS 3

/* The pools: device, host (swap), and tier t as KVGPU_TIER0 + t. */
enum kvgpu_side { KVGPU_DEV = 0, KVGPU_HOST, KVGPU_TIER0,
		  KVGPU_NSIDES = KVGPU_TIER0 + KVGPU_MAX_TIERS };

struct kvgpu_geom {
	uint32_t layers;
	uint32_t kv_heads;
	uint32_t head_dim;
	uint32_t dtype_bytes;	/* kv_heads * head_dim * dtype_bytes % 4 == 0 */
	uint32_t block_size;	/* token slots a block */
	enum kvgpu_layout layout;
	uint32_t dev_blocks;
	uint32_t host_blocks;
	enum kvgpu_hostmem hostmem;
	/* offload tier pools (host memory; pinned on CUDA when hostmem
	 * is): tiers of tier_blocks[t] blocks each, laid out as the device
	 * pool; 0 tiers: none (kvgpu_tier_grow adds them; docs/gpu.md §1.1) */
	uint32_t tiers;
	uint32_t tier_blocks[KVGPU_MAX_TIERS];
};

struct kvgpu_pair {
	int64_t src, dst;
};

/* One token slot: block, slot in the block, and what it must hold. */
struct kvgpu_slot {
	int32_t block;
	uint32_t slot;
	uint32_t pos;
	uint32_t pad_;
	uint64_t key;
};

struct kvgpu_timing {
	int64_t dev_ns;		/* device time (host: wall time) */
	int64_t submit_ns;	/* host time to submit */
};

/* The outcome of a verify: mismatching words, and the first one. */
struct kvgpu_verdict {
	uint64_t words;		/* words compared */
	uint64_t mismatches;	/* words that differ */
	int64_t first;		/* index into the slot list, -1: none */
	uint32_t first_layer, first_kv, first_word;
	uint32_t want, got;	/* the first mismatching word */
};

struct kvgpu_mem {
	uint64_t free0, total;		/* cudaMemGetInfo before the pools */
	uint64_t free1;			/* after */
	uint64_t dev_bytes, host_bytes;	/* the pools */
};

typedef struct kvgpu kvgpu;

/* Bytes of one slot of one layer and K or V, of a block, of a chunk. */
uint64_t kvgpu_slot_bytes(const struct kvgpu_geom *g);
uint64_t kvgpu_block_bytes(const struct kvgpu_geom *g);
uint32_t kvgpu_chunks(const struct kvgpu_geom *g);	/* per block */
uint64_t kvgpu_chunk_bytes(const struct kvgpu_geom *g);

/* KV_OK or KV_EINVAL with a message: zero sizes, words not whole, a pool
 * over 2^40 bytes. */
kv_err kvgpu_geom_check(const struct kvgpu_geom *g, char *why, size_t len);

/*
 * Open a backend by name (see the top of this file) with the pools of
 * geom, every slot poisoned.  NULL with *err and a message in why when the
 * name is unknown, the backend is not built (KV_ENOTSUP), no device
 * answers (KV_ENOTSUP: "no CUDA device: ..."), or memory runs out.
 */
kvgpu *kvgpu_open(const char *name, const struct kvgpu_geom *geom,
		  kv_err *err, char *why, size_t whylen);
void kvgpu_close(kvgpu *g);

/*
 * The handle's invariants: 0, or the number of the first one broken.
 * O(blocks) for the scratch; no pool word is read.  Tests call it after
 * operations; gpu/drive.c after every batch when its caller asks for
 * checks.
 *   1  a backend with every operation (describe and check are optional)
 *   2  the geometry passes kvgpu_geom_check()
 *   3  each pool's layout record agrees with the geometry (tier pools
 *      included)
 *   4  the name is NUL-terminated and is the backend's, alone or followed
 *      by ':' and its argument
 *   5  the independence scratch exists and is clear between calls
 *   6  the backend's state exists
 *  10  host: both pools, every tier pool and the staging block exist
 *  20  fault: the wrapped backend passes kvgpu_check()
 *  21  fault: the wrapped backend has this handle's geometry
 *  22  fault: the armed mode and direction are known ones
 *  23  fault: a held swap-out batch only under invert, within its capacity
 *  24  fault: a fault marked done has been counted as injected, or
 *      (invert) holds its batch
 *  30  cuda: the pools (tier pools included), the stream, its events
 *      and the staging buffers exist
 */
int kvgpu_check(const kvgpu *g);

const char *kvgpu_name(const kvgpu *g);
const struct kvgpu_geom *kvgpu_geom_of(const kvgpu *g);
const char *kvgpu_errmsg(const kvgpu *g);

/* Whether a CUDA device answers (false in a build without CUDA). */
bool kvgpu_cuda_available(char *why, size_t whylen);

/* Poison whole blocks of one side. */
kv_err kvgpu_poison(kvgpu *g, enum kvgpu_side side, const int32_t *blocks,
		    size_t n);

/* Write the pattern of each slot (every layer, K and V). */
kv_err kvgpu_fill(kvgpu *g, enum kvgpu_side side,
		  const struct kvgpu_slot *s, size_t n);

/*
 * Copy whole blocks: D2H (device -> host pool), H2D, D2D (copy-on-write).
 * t (may be NULL) gets the time of the batch.
 */
kv_err kvgpu_copy(kvgpu *g, enum kvgpu_dir dir, enum kvgpu_strat strat,
		  const struct kvgpu_pair *p, size_t n,
		  struct kvgpu_timing *t);

/*
 * Tier pools (docs/gpu.md §1.1).  Grow tier pool `tier` to at least
 * `blocks` blocks, keeping the blocks it holds (new ones poisoned);
 * tier == geom.tiers adds a tier.  KV_EINVAL past KVGPU_MAX_TIERS or a
 * pool over 1 TiB; KV_ENOMEM.
 */
kv_err kvgpu_tier_grow(kvgpu *g, uint32_t tier, uint32_t blocks);

/*
 * Copy whole blocks between the device pool and tier pool `tier`: dir
 * KVGPU_D2T (pairs device block > tier block, an offload store) or
 * KVGPU_T2D (tier block > device block, a load).  A batch is independent
 * (no destination twice).  Every strategy (CUDA: as the host pool's;
 * gather needs pinned memory).
 */
kv_err kvgpu_tier_copy(kvgpu *g, enum kvgpu_dir dir, uint32_t tier,
		       enum kvgpu_strat strat, const struct kvgpu_pair *p,
		       size_t n, struct kvgpu_timing *t);

/*
 * The peer copy of a disaggregated run: device blocks p[i].src of src
 * into device blocks p[i].dst of dst (two handles; the same slot
 * geometry and layout, any pool sizes).  Host: memcpy; CUDA to CUDA:
 * cudaMemcpyPeerAsync (one device or two); any other pair of backends
 * goes through host memory, chunk by chunk.  A fault wrapper spoils the
 * copy into it (dst) when armed on KVGPU_PEER.  KV_EINVAL: dst == src,
 * geometries that differ, ids out of range, a destination twice.
 */
kv_err kvgpu_peer_copy(kvgpu *dst, kvgpu *src, enum kvgpu_strat strat,
		       const struct kvgpu_pair *p, size_t n,
		       struct kvgpu_timing *t);

/* Compare each slot with its pattern; the verdict counts mismatches. */
kv_err kvgpu_verify(kvgpu *g, enum kvgpu_side side,
		    const struct kvgpu_slot *s, size_t n,
		    struct kvgpu_verdict *out);

/* Poisoned slots in the listed blocks (a slot counts when its layer-0 K
 * words are all KVGPU_POISON). */
kv_err kvgpu_scan_poison(kvgpu *g, enum kvgpu_side side,
			 const int32_t *blocks, size_t n, uint64_t *slots);

/*
 * Digest of the listed blocks, whole (every byte): the sum over words of
 * kvgpu_mix64(word value, block list index, word index), so it does not
 * depend on the order a device reduces in.  Equal on every correct backend
 * that performed the same operations.
 */
kv_err kvgpu_digest(kvgpu *g, enum kvgpu_side side, const int32_t *blocks,
		    size_t n, uint64_t *out);

kv_err kvgpu_mem_info(kvgpu *g, struct kvgpu_mem *m);

/*
 * Facts about the device, one fn(ctx, key, value) call each: name, SMs,
 * L2, copy engines, host-memory mapping, memory clock and bus width, the
 * time to pin 1 GiB, the largest single allocation (binary search) and
 * the allocation granularity (docs/gpu.md §5).  KV_ENOTSUP for a backend
 * without a device (host).  It allocates and frees device memory: call it
 * before opening other pools.
 */
typedef void (*kvgpu_fact_fn)(void *ctx, const char *key, const char *value);
kv_err kvgpu_describe(kvgpu *g, kvgpu_fact_fn fn, void *ctx);

/* ---- the fault wrapper ------------------------------------------------ */

enum kvgpu_fault {
	KVGPU_FAULT_NONE = 0,
	KVGPU_FAULT_CORRUPT,	/* flip bit 0 of the first word of a chunk */
	KVGPU_FAULT_DROP,	/* skip one chunk */
	KVGPU_FAULT_REORDER,	/* pair i lands on pair i+1's destination */
	KVGPU_FAULT_INVERT	/* a D2H batch runs after the next H2D */
};

/*
 * Arm a fault wrapper: the fault hits the (skip+1)-th copy batch in
 * direction dir that it can spoil (reorder needs two pairs), once
 * (invert: the first held batch from there that a swap-in overtakes).
 * KV_EINVAL on a backend that is not "fault:...".  Invert ignores dir.
 */
kv_err kvgpu_fault_arm(kvgpu *g, enum kvgpu_fault f, enum kvgpu_dir dir,
		       uint32_t skip);

/*
 * Which pair of the spoiled batch corrupt and drop hit: 0 (the default)
 * the first, UINT32_MAX or anything past the batch's end its last (the
 * name's "@PAIR").  KV_EINVAL on a backend that is not "fault:...".
 */
kv_err kvgpu_fault_pair(kvgpu *g, uint32_t pair);

/*
 * injected: batches spoiled (invert: held swap-outs a swap-in overtook
 * onto a block they read; one that none overtook is not counted, and the
 * next is held); hazards: for invert, swap-in destinations that were the
 * source of the held swap-out (the data really was lost).
 */
kv_err kvgpu_fault_stats(const kvgpu *g, uint64_t *injected,
			 uint64_t *hazards);

/* ---- names -------------------------------------------------------------- */

const char *kvgpu_layout_name(enum kvgpu_layout l);	/* "fa-split" */
const char *kvgpu_strat_name(enum kvgpu_strat s);	/* "per-chunk" */
const char *kvgpu_dir_name(enum kvgpu_dir d);		/* "d2h" */
bool kvgpu_dir_parse(const char *s, enum kvgpu_dir *out); /* any move */
const char *kvgpu_hostmem_name(enum kvgpu_hostmem h);	/* "pinned" */
const char *kvgpu_fault_name(enum kvgpu_fault f);	/* "corrupt" */
bool kvgpu_layout_parse(const char *s, enum kvgpu_layout *out);
bool kvgpu_strat_parse(const char *s, enum kvgpu_strat *out);
bool kvgpu_hostmem_parse(const char *s, enum kvgpu_hostmem *out);
bool kvgpu_fault_parse(const char *s, enum kvgpu_fault *out);

#ifdef __cplusplus
}
#endif
#endif /* KVGPU_H */
