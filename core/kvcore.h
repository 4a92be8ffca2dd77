/*
 * kvcore.h -- the KV-cache block allocator of kvsim (libkvcore).
 *
 * A dependency-free C11 library: it includes only the C standard library,
 * never prints, exits or aborts, and sizes its state from the configuration.
 * One handle (kvc) holds a GPU pool, an optional CPU pool, one or more KV
 * cache groups, the sequences and their block tables.  The same handle runs
 * in one of four modes:
 *
 *   KVC_EXACT      our own exact accounting (the default): every query counts
 *                  exactly the blocks the matching action would take, swap
 *                  keeps sharing, no id is spent on a null block.
 *   KVC_VLLM_V0    vLLM v0 block manager v2 (SelfAttnBlockSpaceManager),
 *                  commit 72dd1595b466: LIFO reuse, worst-case checks,
 *                  watermark, promotion/de-dup, LRU evictor.
 *   KVC_VLLM_V1    vLLM v1 KVCacheManager/BlockPool, commit 5e5a7eb16f12:
 *                  id 0 is the null block, FIFO free queue that is also the
 *                  eviction order, lazy eviction, hybrid coordinator.
 *   KVC_DEEPSPEED  DeepSpeed FastGen ragged state, commit edaa7221267: one
 *                  BlockedAllocator per group, per-group scheduling contract.
 *
 * In the reference modes every verdict, block id, mapping and free count is
 * the reference's; where the reference corrupts itself the operation fails
 * cleanly (KV_EREF) instead.  The exact semantics of each operation in each
 * mode are those of docs/replay.md (rules R1-R47).
 *
 * Errors.  Fallible calls return kv_err.  KV_ENOSPC is the ordinary "does
 * not fit" outcome of an action ("allocate ID fail"); every other non-zero
 * code is misuse.  On any failure the state is exactly as before the call
 * (except where docs/replay.md R16 names v1's early sliding-window release),
 * and kvc_errmsg() says why.
 *
 * Ids.  Sequences are small integers handed out by kvc_seq_new() and
 * kvc_fork().  Block ids in tables and pairs are device-relative: GPU ids
 * 0..gpu_blocks-1, CPU ids 0..cpu_blocks-1; KVC_NULL marks the null block.
 */
#ifndef KVCORE_H
#define KVCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KVCORE_VERSION "0.1.0"
/* 3: struct kvc_config gained defer_same_step_state_hits (kvc_step_begin) */
#define KVCORE_ABI 3

#define KVC_MAX_GROUPS 16
#define KVC_NAME_MAX 32
#define KVC_NULL (-1)

/* One X-macro table: the enum and kv_strerror() come from it. */
#define KV_ERRORS(X)                                                        \
	X(KV_OK, "success")                                                 \
	X(KV_ENOSPC, "not enough free blocks")                              \
	X(KV_EINVAL, "invalid argument")                                    \
	X(KV_ESTATE, "operation not allowed in this sequence state")        \
	X(KV_ENOENT, "no such sequence")                                    \
	X(KV_ENOTSUP, "operation not supported in this mode")               \
	X(KV_ENOMEM, "out of memory")                                       \
	X(KV_EREF, "the reference implementation would fail here")          \
	X(KV_ECONFIG, "invalid configuration")

typedef enum kv_err {
#define KV__ENUM(name, text) name,
	KV_ERRORS(KV__ENUM)
#undef KV__ENUM
	KV__NERR
} kv_err;

const char *kv_strerror(kv_err e);

typedef enum kvc_mode {
	KVC_EXACT = 0,
	KVC_VLLM_V0,
	KVC_VLLM_V1,
	KVC_DEEPSPEED
} kvc_mode;

typedef enum kvc_kind {
	KVC_FULL = 0,	/* full attention (also MLA latent: one K/V-less page) */
	KVC_SLIDING,	/* sliding window of `window` tokens */
	KVC_STATE	/* Mamba / linear-attention state: one live block */
} kvc_kind;

typedef enum kvc_verdict {
	KVC_VERDICT_OK = 0,	/* fits now */
	KVC_VERDICT_LATER,	/* fits an empty cache, not now */
	KVC_VERDICT_NEVER	/* cannot fit even an empty cache */
} kvc_verdict;

typedef enum kvc_state {
	KVC_WAITING = 0,	/* no blocks */
	KVC_RUNNING,		/* GPU blocks */
	KVC_SWAPPED,		/* CPU blocks (v0, exact) */
	KVC_DEAD		/* a freed fork child: any use is an error */
} kvc_state;

/* Free-list reuse order (exact mode may choose; reference modes fix it). */
typedef enum kvc_reuse {
	KVC_REUSE_DEFAULT = 0,	/* the mode's own: v0/DS LIFO, v1 and exact FIFO */
	KVC_REUSE_LIFO,		/* most recently freed id first */
	KVC_REUSE_FIFO_LRU	/* least recently freed first; tail of a request first */
} kvc_reuse;

struct kvc_group_config {
	char name[KVC_NAME_MAX];
	kvc_kind kind;
	uint32_t window;	/* tokens, KVC_SLIDING only */
	uint32_t block_size;	/* 0 = the global block size */
};

struct kvc_config {
	kvc_mode mode;
	uint32_t block_size;	/* default 16 */
	uint32_t gpu_blocks;	/* required; v1: includes the null block */
	uint32_t cpu_blocks;	/* default 0 */
	double watermark;	/* fraction of gpu_blocks; v0 default 0.01 */
	bool prefix_caching;
	uint32_t max_model_len;	/* default 8192 */
	kvc_reuse reuse;
	uint32_t ngroups;	/* 0 = one full-attention group "attn" */
	struct kvc_group_config group[KVC_MAX_GROUPS];
	/*
	 * vllm-v1 only: an admission whose state-group prefix hit ends on a
	 * block cached in the current step (kvc_step_begin()) does not fit
	 * now: vLLM's fix of that hazard (#29387), later than the pinned
	 * commit, which lets the hit through although the state is written
	 * by the same forward pass.  Default off: the pinned behaviour.
	 */
	bool defer_same_step_state_hits;
};

/* Fill *c with the defaults of mode m (docs/replay.md R7). */
void kvc_config_default(struct kvc_config *c, kvc_mode m);

/* Parse/format mode names: "exact", "vllm-v0", "vllm-v1", "deepspeed". */
int kvc_mode_parse(const char *s, kvc_mode *out);
const char *kvc_mode_name(kvc_mode m);

typedef struct kvc kvc;

struct kvc_pair {
	int32_t src, dst;	/* device-relative ids */
};

/*
 * Lifecycle.  kvc_new() validates the configuration (R6-R11, R35) and on
 * failure returns NULL with *err set and, if why is not NULL, a message in
 * why[0..whylen).  kvc_clone() deep-copies a handle (used by the
 * decision/action consistency check).  kvc_free(NULL) is a no-op.
 */
kvc *kvc_new(const struct kvc_config *c, kv_err *err, char *why,
	     size_t whylen);
kvc *kvc_clone(const kvc *k);
void kvc_free(kvc *k);

const struct kvc_config *kvc_config_of(const kvc *k);
uint32_t kvc_ngroups(const kvc *k);
const char *kvc_group_name(const kvc *k, uint32_t g);

/* Why the last failing call failed (empty after a success). */
const char *kvc_errmsg(const kvc *k);

/*
 * The clock: an integer time stamped on accessed blocks (vLLM v0's LRU
 * evictor; the replay driver sets it to the line number, R30).
 */
void kvc_set_time(kvc *k, int64_t t);

/*
 * A scheduler step starts (vLLM v1's new_step_starts()): the blocks cached
 * from now on are this step's.  Mode vllm-v1 with a state group reads it:
 * defer_same_step_state_hits, and the stale tokens of a hit on a state
 * the step writes.
 */
void kvc_step_begin(kvc *k);

/* Sequences. */
kv_err kvc_seq_new(kvc *k, const uint32_t *tok, size_t n, int32_t *out);
/*
 * A sequence of n tokens whose ids are not given: `key` (not 0) names its
 * content, and the caller promises that no other sequence of k shares a
 * block of it (its prompt begins unlike any other, so no prefix hit can
 * join them).  Its tokens, and those added later, are counted, not kept
 * (kvc_seq_tokens gives NULL), and its blocks hash by key and position;
 * block ids, hits on its own blocks after a preemption and every count
 * are those the same sequence with ids would get.  Mode vllm-v1 only
 * (KV_ENOTSUP otherwise).
 */
kv_err kvc_seq_new_keyed(kvc *k, uint64_t key, size_t n, int32_t *out);
kvc_state kvc_seq_state(const kvc *k, int32_t s);
size_t kvc_seq_len(const kvc *k, int32_t s);
size_t kvc_seq_computed(const kvc *k, int32_t s);
/* The token ids of s (kvc_seq_len of them), borrowed until the next call
 * that changes s; NULL with *n = 0 for an unknown sequence, NULL with *n
 * its length for a keyed one. */
const uint32_t *kvc_seq_tokens(const kvc *k, int32_t s, size_t *n);
int32_t kvc_seq_request(const kvc *k, int32_t s);	/* root sequence */
uint32_t kvc_nseqs(const kvc *k);

/*
 * Operations: the lines of a replay script (docs/replay.md §5, §8).
 * `n` = 0 means "not given".  Actions return KV_ENOSPC when they do not fit.
 * Pairs (copy-on-write, swap maps) of the last action are read with
 * kvc_pairs(), borrowed until the next call on k.
 */
kv_err kvc_can_allocate(kvc *k, int32_t s, uint32_t lookahead,
			kvc_verdict *out);
kv_err kvc_allocate(kvc *k, int32_t s, uint32_t n);
kv_err kvc_append(kvc *k, int32_t s, const uint32_t *tok, size_t ntok,
		  uint32_t lookahead, bool has_lookahead);
kv_err kvc_can_append(kvc *k, int32_t s, uint32_t n, bool has_n,
		      uint32_t lookahead, bool *out);
kv_err kvc_computed(kvc *k, int32_t s, uint32_t n, bool has_n);
kv_err kvc_fork(kvc *k, int32_t s, int32_t *child);
kv_err kvc_can_swap_out(kvc *k, int32_t s, bool *out);
kv_err kvc_swap_out(kvc *k, int32_t s);
kv_err kvc_can_swap_in(kvc *k, int32_t s, uint32_t lookahead,
		       kvc_verdict *out);
kv_err kvc_swap_in(kvc *k, int32_t s, uint32_t lookahead);
kv_err kvc_free_seq(kvc *k, int32_t s);
kv_err kvc_cached(kvc *k, int32_t s, size_t *tokens);

const struct kvc_pair *kvc_pairs(const kvc *k, size_t *n);

/*
 * Scheduler primitives (kvsched.h builds on them).
 * kvc_add_tokens(): add tokens to a sequence without reserving slots for
 * them (a RUNNING sequence's new tokens become "unseen" until the next
 * kvc_append_slots() or allocation; on any other sequence it is `append`).
 * kvc_append_slots(): reserve slots for every unseen token of a RUNNING
 * sequence plus `lookahead` (vLLM v0's append_slots; in vllm-v1 the
 * equivalent is kvc_allocate(k, s, n) with the unseen count).  CoW pairs
 * are left in kvc_pairs() as for append.
 */
kv_err kvc_add_tokens(kvc *k, int32_t s, const uint32_t *tok, size_t ntok);

/*
 * Retire the request of s for good: it must hold no blocks (WAITING after a
 * free, or never admitted).  Its tokens are freed, its tables' room goes
 * to a bounded pool that later sequences' tables take, all its sequences
 * become DEAD, and their slots are handed out again by later kvc_seq_new()
 * calls -- so the caller must forget these ids -- and a long simulation
 * keeps no memory per finished request.
 */
kv_err kvc_seq_release(kvc *k, int32_t s);
kv_err kvc_append_slots(kvc *k, int32_t s, uint32_t lookahead);

/* Block table of sequence s in group g (device-relative, KVC_NULL). */
const int32_t *kvc_table(const kvc *k, int32_t s, uint32_t g, size_t *n);

/*
 * Introspection for replay's `state` and `evictor` lines (vllm-v0 and
 * vllm-v1; KV_ENOTSUP in the other modes).  kvc_block_state(): block `id`
 * of the GPU pool (cpu false) or the CPU pool (vllm-v0): its reference
 * count, whether it is in the prefix-cache index (cached), whether v0's
 * tracker marks it computed (v0 with prefix caching; false elsewhere), and
 * v0's last access time (-1 where none).  kvc_evictor(): the GPU blocks an
 * allocation would evict, first first -- v0's LRU evictor (ordered by last
 * access, deepest block first, id), or v1's free queue restricted to the
 * blocks that still carry a hash -- at most cap of them into out[], the
 * count into *n (which may exceed cap).
 */
struct kvc_block_state {
	int32_t id;
	int32_t ref;
	bool cached;
	bool computed;
	int64_t time;
};

kv_err kvc_block_state(kvc *k, bool cpu, int32_t id,
		       struct kvc_block_state *out);
kv_err kvc_evictor(kvc *k, struct kvc_block_state *out, size_t cap,
		   size_t *n);

/* Free blocks of group g (per group, never summed) and of the CPU pool. */
uint32_t kvc_free_blocks(const kvc *k, uint32_t g);
uint32_t kvc_free_cpu(const kvc *k);

/*
 * Per-group blocks an action would take now, exactly (pure).  For a WAITING
 * request: admission of all its tokens plus lookahead; for a RUNNING
 * sequence: `n` more tokens plus lookahead.  need[g] per group; the return
 * is KV_OK or misuse.
 */
kv_err kvc_blocks_needed(kvc *k, int32_t s, uint32_t n, uint32_t lookahead,
			 uint32_t need[KVC_MAX_GROUPS]);

/*
 * Check every invariant of core-spec §8.3.  Returns 0, or the number of the
 * first broken invariant with a message in why.
 */
int kvc_audit(const kvc *k, char *why, size_t whylen);

/* ---- sizing helpers (kv_size.c): block-aligned arithmetic ---------- */

static inline uint64_t
kvc_cdiv(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/* Tokens the allocator really reserves for `tokens`: rounded up to blocks. */
static inline uint64_t
kvc_aligned_tokens(uint64_t tokens, uint32_t block_size)
{
	return kvc_cdiv(tokens, block_size) * block_size;
}

#ifdef __cplusplus
}
#endif
#endif /* KVCORE_H */
