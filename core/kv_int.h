/*
 * kv_int.h -- internals shared by the modules of libkvcore.  Not installed.
 *
 * kv_mgr.c owns what every mode has in common: the configuration, the
 * sequences (tokens, computed count, state, request membership, one block
 * table per group), the pair buffer and the error message.  Each mode
 * (kv_exact.c, kv_v0.c, kv_v1.c, kv_ds.c) owns its pools and indexes behind
 * `ms` and implements struct kvc_ops.  kv_mgr.c validates the sequence id
 * (exists, not dead) before calling an op; every other precondition is the
 * mode's, because the modes disagree on them (docs/replay.md).
 *
 * Tables hold device-relative ids (GPU ids while RUNNING, CPU ids while
 * SWAPPED) and KVC_NULL for the null block, so kvc_table() is the same code
 * in every mode.  A mode that needs more per-slot state keeps it in its own
 * arrays (or in tab.aux, one 64-bit word per slot, free for the mode's use:
 * a content hash, for instance).
 */
#ifndef KV_INT_H
#define KV_INT_H

#include "kvcore.h"

#include <stdarg.h>

struct kvc_tab {
	int32_t *id;		/* device-relative, KVC_NULL = null block */
	uint64_t *aux;		/* per slot, the mode's (e.g. block hash) */
	uint32_t n, cap;
};

struct kvc_seq {
	int32_t req;		/* root sequence of the request (itself if root) */
	int32_t next;		/* next sequence of the request, creation order */
	uint8_t state;		/* kvc_state, request-wide */
	uint8_t prefill;	/* v0: still in the prefill stage */
	uint32_t *tok;		/* NULL for a keyed sequence (key != 0) */
	uint32_t ntok, captok;
	uint32_t ncomp;		/* computed tokens C (DeepSpeed: seen S) */
	int64_t access;		/* v0 LRU: the sequence's last access time */
	int64_t memo;		/* v0 cached-token memo, -1 = none */
	struct kvc_tab tab[KVC_MAX_GROUPS];
	/*
	 * kvc_seq_new_keyed: the content's name, 0 = the ids are in tok.  A
	 * keyed sequence shares no block of content with any other, so no id
	 * is kept: only ntok counts, and its block hashes are kv_hash_key's.
	 */
	uint64_t key;
};

struct kvc_ops {
	const char *name;
	/* Create/destroy the mode state k->ms (config already validated). */
	kv_err (*init)(kvc *k);
	void (*release)(kvc *k);
	/* Deep-copy src->ms into dst->ms; common state is already copied. */
	kv_err (*clone)(kvc *dst, const kvc *src);
	/* Mode-specific configuration checks; message via kvc__fail(). */
	kv_err (*check_config)(const struct kvc_config *c, char *why,
			       size_t whylen);

	kv_err (*can_allocate)(kvc *k, int32_t s, uint32_t L, kvc_verdict *o);
	kv_err (*allocate)(kvc *k, int32_t s, uint32_t n);
	kv_err (*append)(kvc *k, int32_t s, const uint32_t *tok, size_t ntok,
			 uint32_t L, bool has_L);
	/*
	 * Optional: add tokens to a RUNNING sequence without slots (NULL:
	 * kv_mgr.c pushes them onto q->tok).  ops->append must accept
	 * ntok == 0: "reserve slots for the unseen tokens" (append_slots).
	 */
	kv_err (*add_tokens)(kvc *k, int32_t s, const uint32_t *tok,
			     size_t ntok);
	/* Optional: drop the mode's per-sequence memory (kvc_seq_release). */
	void (*seq_release)(kvc *k, int32_t s);
	kv_err (*can_append)(kvc *k, int32_t s, uint32_t n, bool has_n,
			     uint32_t L, bool *o);
	kv_err (*computed)(kvc *k, int32_t s, uint32_t n, bool has_n);
	kv_err (*fork)(kvc *k, int32_t s, int32_t child);
	kv_err (*can_swap_out)(kvc *k, int32_t s, bool *o);
	kv_err (*swap_out)(kvc *k, int32_t s);
	kv_err (*can_swap_in)(kvc *k, int32_t s, uint32_t L, kvc_verdict *o);
	kv_err (*swap_in)(kvc *k, int32_t s, uint32_t L);
	kv_err (*free_seq)(kvc *k, int32_t s);
	kv_err (*cached)(kvc *k, int32_t s, size_t *tokens);
	kv_err (*blocks_needed)(kvc *k, int32_t s, uint32_t n, uint32_t L,
				uint32_t need[KVC_MAX_GROUPS]);
	uint32_t (*free_blocks)(const kvc *k, uint32_t g);
	uint32_t (*free_cpu)(const kvc *k);
	int (*audit)(const kvc *k, char *why, size_t whylen);
	/* Optional: kvc_step_begin(). */
	void (*step_begin)(kvc *k);
	/* Optional (NULL: KV_ENOTSUP): kvc_block_state(), kvc_evictor(). */
	kv_err (*block_state)(kvc *k, bool cpu, int32_t id,
			      struct kvc_block_state *out);
	kv_err (*evictor)(kvc *k, struct kvc_block_state *out, size_t cap,
			  size_t *n);
};

struct kvc {
	struct kvc_config cfg;	/* resolved: ngroups >= 1, block sizes set */
	const struct kvc_ops *ops;
	void *ms;		/* the mode's state */
	struct kvc_seq *seq;
	uint32_t nseq, capseq;
	int32_t *spare;		/* released sequence slots, reused by seq_new */
	uint32_t nspare, capspare;
	/* released sequences' tables, empty, for the next ones to take
	 * (kvc__tab_reserve): at most KVC_TABPOOL of them, KVC_TABPOOL_BYTES
	 * in all */
	struct kvc_tab *tabpool;
	uint32_t ntabpool;
	size_t tabpool_bytes;
	struct kvc_pair *pairs;
	uint32_t npairs, cappairs;
	int64_t now;		/* kvc_set_time() */
	bool final;		/* in kvc__free_final: the sequence freed is
				 * released next, never looked up again */
	char msg[256];		/* KVC_MSG_LATER first: kvc__fail_room's */
	long long room_sum;	/* kvc__fail_room's figures */
	uint32_t room_need, room_free;
};

/* msg[0] of a message kvc_errmsg writes when it is asked for. */
#define KVC_MSG_LATER '\001'

extern const struct kvc_ops kvc__exact_ops;
extern const struct kvc_ops kvc__v0_ops;
extern const struct kvc_ops kvc__v1_ops;
extern const struct kvc_ops kvc__ds_ops;

/* The prologue of every operation on sequence s: clears the message and
 * the pairs; KV_ENOENT for a bad or dead sequence (kv_mgr.c). */
kv_err kvc__enter(kvc *k, int32_t s);
/* kvc_free_seq, then kvc_seq_release (a request that is done): a mode
 * need not remember s's blocks for a lookup of s that cannot come. */
kv_err kvc__free_final(kvc *k, int32_t s);

/* vllm-v1 (kv_v1.c): allocate_slots with lookahead for any chunk of a
 * RUNNING sequence (policy vllm-v1's running loop). */
kv_err kvc__v1_allocate_ahead(kvc *k, int32_t s, uint32_t n, uint32_t L);
/*
 * vllm-v1 with prefix caching: the chain hashes of s's full blocks (group
 * 0's block size), brought up to its tokens: *h valid until s's tokens
 * change.  KV_ENOTSUP in other modes or without prefix caching.
 */
kv_err kvc__v1_hashes(kvc *k, int32_t s, const uint64_t **h, uint32_t *n);
/* vllm-v1: the chunk of RUNNING s from position `from` on, allocated in
 * this step, will not be computed (a withdrawn chunk): its cached blocks
 * keep their hashes without that KV. */
kv_err kvc__v1_withdraw(kvc *k, int32_t s, uint32_t from);
/* vllm-v1, a KV connector's load: allocate for the prefix hit and ext
 * external tokens without caching them; the sequence becomes RUNNING. */
kv_err kvc__v1_allocate_external(kvc *k, int32_t s, uint32_t ext,
				 uint32_t *hit);
/* vllm-v1: the extra key of s's block hashes (a LoRA adapter), set before
 * s is first scheduled; KV_ENOTSUP in other modes. */
kv_err kvc__v1_set_extra(kvc *k, int32_t s, uint64_t extra);
/* vllm-v1: C = c and cache_blocks(c), when a connector's load ends. */
kv_err kvc__v1_set_computed(kvc *k, int32_t s, uint32_t c);
/* vllm-v1, speculative decoding: C = c (accepted drafts), nothing
 * cached. */
kv_err kvc__v1_accept(kvc *k, int32_t s, uint32_t c);
/* vllm-v1: of the h tokens s was just admitted with from the prefix cache,
 * the last *stale whose KV (or state) the blocks do not hold. */
kv_err kvc__v1_stale(const kvc *k, int32_t s, uint32_t h, uint32_t *stale);
/*
 * vllm-v0: the tokens of s's leading blocks the GPU prefix cache holds now
 * with their KV computed (find_cached_blocks_prefix, less blocks v0 marked
 * computed before their chunk ran), whatever get_num_cached_tokens' memo
 * says; 0 in other modes or without prefix caching.
 */
kv_err kvc__v0_cached_now(kvc *k, int32_t s, size_t *tokens);
/*
 * vllm-v0: drop get_num_cached_tokens' memo of s (the scheduler's
 * remove_seq_from_computed_blocks_tracker, vLLM PR #18957): its next
 * kvc_cached counts the cache as it is then.  No effect in other modes.
 */
void kvc__v0_forget_cached(kvc *k, int32_t s);
/*
 * vllm-v0: when the last kvc_append_slots or kvc_swap_in was of s, the
 * computed positions of s it took from the first one that promotion
 * (promote_to_immutable_block) moved onto a cached block whose KV is not
 * computed -- another request allocated it and has not run the chunk --
 * up to s's computed count (tokens; 0 otherwise, and in other modes):
 * the engine reads them there, the first `need` slots of GPU block
 * `block`, which hold KV only if some request computes them first.
 */
struct kvc__lost {
	uint32_t tokens, need;
	int32_t block;
};

kv_err kvc__v0_lost(kvc *k, int32_t s, struct kvc__lost *out);
/* vllm-v0: the leading slots of GPU block id whose KV is computed. */
uint32_t kvc__v0_kvn(const kvc *k, int32_t id);
/*
 * vllm-v0 with prefix caching, s SWAPPED: *o = can_swap_in(L) answers
 * NEVER only because it counts the full blocks the request's forked
 * sequences share once per sequence (get_num_full_blocks_touched over the
 * concatenated tables), where swap_in maps a shared block once: counted
 * once, the request fits the GPU pool.  The documented false negative of
 * the reference (docs/replay.md "--check"); false in other modes.
 */
kv_err kvc__v0_swap_in_shared_never(kvc *k, int32_t s, uint32_t L, bool *o);

/*
 * vllm-v0, for a request of forked sequences (kvs_set_n):
 * kvc__v0_can_append_group: can_append_slots(seq_group, L), the blocks
 * every running sequence touches summed against the free GPU blocks.
 * kvc__v0_group: the live sequences of s's request in creation order (the
 * root first), at most cap of them into out; returns their count.
 */
kv_err kvc__v0_can_append_group(kvc *k, int32_t s, uint32_t L, bool *o);
uint32_t kvc__v0_group(const kvc *k, int32_t s, int32_t *out, uint32_t cap);

/* ---- helpers in kv_mgr.c ------------------------------------------ */

/* Set k->msg (printf-style) and return e.  Use for every failure. */
kv_err kvc__fail(kvc *k, kv_err e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * KV_ENOSPC, with "needs <sum> blocks for <need> tokens, <nfree> free":
 * an admission that does not fit is the scheduler's everyday answer, so
 * the message is written only when kvc_errmsg asks for it.
 */
kv_err kvc__fail_room(kvc *k, long long sum, uint32_t need, uint32_t nfree);
/* The same for a bare buffer (config checks before k exists). */
kv_err kvc__failbuf(char *why, size_t whylen, kv_err e, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/*
 * KV_ECONFIG unless the watermark is in [0, 1]: kvc_new's check, which
 * the schedulers' configure functions need first (they turn the watermark
 * into blocks before kvc_new runs).
 */
kv_err kvc__watermark_check(double watermark, char *why, size_t whylen);

static inline struct kvc_seq *
kvc__seq(const kvc *k, int32_t s)
{
	return &k->seq[s];
}

/*
 * kvc_add_tokens(k, s, &t, 1) for the common case, inline: a RUNNING
 * sequence of a mode without its own add_tokens, below max_model_len, with
 * room for the token.  Returns false, having changed nothing, in any other
 * case: the caller then makes the full call.  (The model-output half of
 * every step adds one token per running request.)
 */
static inline bool
kvc__add_token_fast(kvc *k, int32_t s, uint32_t t)
{
	struct kvc_seq *q;

	if (s < 0 || (uint32_t)s >= k->nseq || k->ops->add_tokens != NULL)
		return false;
	q = &k->seq[s];
	if (q->state != KVC_RUNNING || (q->key == 0 && q->ntok >= q->captok) ||
	    (k->cfg.mode != KVC_VLLM_V0 && q->ntok >= k->cfg.max_model_len))
		return false;
	k->msg[0] = '\0';
	k->npairs = 0;
	if (q->key == 0)
		q->tok[q->ntok] = t;
	q->ntok++;
	return true;
}

/* Block size of group g (resolved). */
static inline uint32_t
kvc__bs(const kvc *k, uint32_t g)
{
	return k->cfg.group[g].block_size;
}

/* Grow-only arrays.  Return KV_ENOMEM and leave the table untouched.  A
 * table with no room first takes a released one's from k's pool. */
kv_err kvc__tab_reserve(kvc *k, struct kvc_tab *t, uint32_t n);
kv_err kvc__tok_reserve(struct kvc_seq *q, uint32_t n);
kv_err kvc__tok_push_ids(struct kvc_seq *q, const uint32_t *tok, size_t n);

/* Append tok[0..n) to q: a keyed sequence counts them and keeps no ids
 * (a steady decode's every step comes here), others keep them
 * (kvc__tok_push_ids).  KV_EINVAL past 2^32 - 1 tokens, KV_ENOMEM. */
static inline kv_err
kvc__tok_push(struct kvc_seq *q, const uint32_t *tok, size_t n)
{
	if (n > UINT32_MAX - q->ntok)
		return KV_EINVAL;
	if (q->key != 0) {
		q->ntok += (uint32_t)n;
		return KV_OK;
	}
	return kvc__tok_push_ids(q, tok, n);
}

/*
 * Steady decode under vllm-v1 (kv_v1.c, for core/kvs_ff.c): how many of
 * running sequence s's next decode steps (allocate 1, add a token) leave
 * allocate_slots nothing to do; kvc__v1_quiet_steps makes d of them
 * (d <= the count) at once with their tokens.
 */
uint32_t kvc__v1_quiet(const kvc *k, int32_t s);
/*
 * A run's record of one request (core/kvs_ff.c's): its sequence, the
 * run's step it first makes (start: 0, or the step after the one that
 * admitted it), the steps up to which it runs (0 once ended), the steps
 * made so far, and the step of its next allocator event.
 * kvc__v1_quiet_all sets next = made + kvc__v1_quiet of each of f[0..n);
 * kvc__v1_catch_up_all brings each that runs to step k to it (its quiet
 * steps since `made`, with the tokens of its row of tok, `stride` a row),
 * one call for the run's requests.
 */
struct kvc_ffreq {
	uint32_t made;
	uint32_t next;
	uint32_t steps;
	uint32_t start;
	int32_t seq;
	int32_t req;
};
void kvc__v1_quiet_all(const kvc *k, struct kvc_ffreq *f, uint32_t n);
kv_err kvc__v1_catch_up_all(kvc *k, struct kvc_ffreq *f, uint32_t n,
			    uint32_t steps, const uint32_t *tok,
			    uint32_t stride);
/* d (<= the count) of those steps with tokens tok[0..d), then the step
 * after them: kvc_allocate(k, s, 1) and token tok[d] added
 * (kvc_add_tokens), with less of the general path; *next:
 * kvc__v1_quiet's count after.  A keyed sequence keeps no tokens: its
 * usual event reads none. */
kv_err kvc__v1_decode_event(kvc *k, int32_t s, uint32_t d,
			    const uint32_t *tok, uint32_t *next);
kv_err kvc__v1_quiet_steps(kvc *k, int32_t s, uint32_t d,
			   const uint32_t *tok);
/* The free queue's count (kvc_free_blocks of any group), where a loop
 * that reads it each step can: valid while k lives. */
const uint32_t *kvc__v1_free_count(const kvc *k);

/* Pair buffer: reset at the start of every public call. */
kv_err kvc__pairs_reserve(kvc *k, uint32_t n);
kv_err kvc__pair_push(kvc *k, int32_t src, int32_t dst);

/* Allocate a new sequence slot (for fork); fields zeroed, memo -1. */
kv_err kvc__seq_alloc(kvc *k, int32_t *out);

/* ---- kv_list.c: intrusive doubly linked free list over ids ---------- */

/*
 * A list of ids 0..cap-1, each at most once, O(1) push at either end, pop
 * at the front and removal from the middle.  LIFO reuse = push_front +
 * pop_front (v0's deque, DeepSpeed's linked list); FIFO/LRU reuse =
 * push_back + pop_front (v1's FreeKVCacheBlockQueue).
 */
struct kv_list {
	struct kv_link {
		int32_t prev, next;	/* -1 none; both -2: no member */
	} *lk;			/* per id */
	int32_t head, tail;
	uint32_t n, cap;
};

kv_err kv_list_init(struct kv_list *l, uint32_t cap);
void kv_list_release(struct kv_list *l);
kv_err kv_list_copy(struct kv_list *dst, const struct kv_list *src);
void kv_list_push_front(struct kv_list *l, int32_t id);
void kv_list_push_back(struct kv_list *l, int32_t id);
int32_t kv_list_pop_front(struct kv_list *l);	/* -1 when empty */
void kv_list_remove(struct kv_list *l, int32_t id);
static inline bool
kv_list_has(const struct kv_list *l, int32_t id)
{
	return l->lk[id].prev != -2;
}
/* 0 when consistent (links, count, membership), else a positive code. */
int kv_list_check(const struct kv_list *l);

/* ---- kv_hash.c: deterministic block hash chain and an index --------- */

/*
 * h_i = H(h_{i-1}, tokens of block i, extra).  The first block uses
 * KV_HASH_ROOT as parent.  64-bit, fixed seed, identical on every platform;
 * never 0 (0 means "no hash" in tables).
 */
#define KV_HASH_ROOT 0x9e3779b97f4a7c15ull
uint64_t kv_hash_block(uint64_t parent, const uint32_t *tok, size_t n,
		       uint64_t extra);
/*
 * The same chain for a keyed sequence (kvc_seq_new_keyed): block i of the
 * content named `key`.  Its values are not those of kv_hash_block on any
 * ids; they only have to differ from every other content's, as they do.
 */
uint64_t kv_hash_key(uint64_t parent, uint64_t key, uint32_t i,
		     uint64_t extra);

/*
 * Open-addressing map from a non-zero 64-bit key to an int32 value, with
 * backward-shift deletion (no tombstones).  Sized for `cap` live keys at
 * most; never grows after init, so no allocation per operation.
 */
struct kv_hmap {
	struct kv_hent {
		uint64_t key;	/* 0 = empty slot */
		int32_t val;
	} *e;			/* key beside value: one cache line */
	uint32_t mask, n;
};

/* Home slot of key (keys are block hashes: one multiply spreads them). */
static inline uint32_t
kv_hmap_slot(const struct kv_hmap *m, uint64_t key)
{
	return (uint32_t)((key ^ key >> 32) * 0x94d049bb133111ebull >> 32) &
	    m->mask;
}

/* A function kept out of line: the slow half of a hot call, so that the
 * fast half's frame stays small.  Nothing where the compiler has no
 * attribute for it. */
#if defined(__GNUC__)
#define KV_NOINLINE __attribute__((noinline))
#else
#define KV_NOINLINE
#endif

/*
 * Hint that *p will be written soon.  Indexing and evicting blocks touch
 * block records and index slots all over tables larger than the first-level
 * caches; a loop that knows its next ids overlaps those misses.  A no-op
 * where the compiler has no prefetch builtin.
 */
static inline void
kv_prefetch(const void *p)
{
#if defined(__GNUC__)
	__builtin_prefetch(p, 1);
#else
	(void)p;
#endif
}

/* ... and that key's home slot will be probed soon. */
static inline void
kv_hmap_prefetch(const struct kv_hmap *m, uint64_t key)
{
	kv_prefetch(&m->e[kv_hmap_slot(m, key)]);
}

kv_err kv_hmap_init(struct kv_hmap *m, uint32_t cap);
void kv_hmap_release(struct kv_hmap *m);
kv_err kv_hmap_copy(struct kv_hmap *dst, const struct kv_hmap *src);
/* Value of key, or -1. */
int32_t kv_hmap_get(const struct kv_hmap *m, uint64_t key);
/* Where key's value lives (writable), or NULL: one probe for get+put. */
int32_t *kv_hmap_find(const struct kv_hmap *m, uint64_t key);
/* The same, entering key when absent (*found false, value unset). */
int32_t *kv_hmap_upsert(struct kv_hmap *m, uint64_t key, bool *found);
/* Insert or overwrite. */
void kv_hmap_put(struct kv_hmap *m, uint64_t key, int32_t val);
/* Remove key if present; returns whether it was. */
bool kv_hmap_del(struct kv_hmap *m, uint64_t key);

#endif /* KV_INT_H */
