/*
 * kvoffload.h -- KV tiers below the GPU: an offload manager (a CPU tier,
 * or a chain of CPU, disk and remote tiers) and the KV connector over it
 * (kvsched.h's struct kvs_connector) for policy vllm-v1.
 *
 *   KVO_NATIVE   vLLM V1's OffloadingConnector with its CPU backend: one
 *                tier, blocks of block_tokens tokens (a multiple of the
 *                GPU block size), LRU.  Semantics: docs/offload.md.
 *   KVO_LMCACHE  an LMCache-like chain: chunks of block_tokens tokens,
 *                written to every tier, each tier its own LRU; a hit is
 *                loaded from the nearest tier holding it.
 *
 * The connector starts transfers (stores after compute, loads at
 * admission); the caller times them and reports each one finished with
 * kvo_done().  Block ids in pairs are device-relative: GPU blocks as
 * kvcore.h's; a tier slot (one offloaded block of f = block_tokens / GPU
 * block size GPU blocks) appears as its f parts, part i of slot b being
 * b * f + i (0 .. tier blocks * f - 1), so each pair moves one GPU block.
 *
 * Stats, per tier, in offloaded blocks and tokens: lookup_tokens, the
 * tokens past the GPU hit of every admitted request; hit_tokens, the
 * tokens loaded from the tier; load_blocks / store_blocks, offloaded
 * blocks read / written (lmcache: a copy up into the CPU tier counts as a
 * store there); evicted_blocks; used_blocks and capacity_blocks now.
 */
#ifndef KVOFFLOAD_H
#define KVOFFLOAD_H

#include "kvsched.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kvo kvo;

enum kvo_kind { KVO_NATIVE = 0, KVO_LMCACHE };

#define KVO_MAX_TIERS 3

struct kvo_tier_config {
	char name[16];		/* "cpu", "disk", "remote" */
	uint64_t blocks;	/* capacity in offloaded blocks */
};

struct kvo_config {
	enum kvo_kind kind;
	uint32_t block_tokens;	/* offloaded block (native) or chunk */
	uint32_t ntiers;	/* 1 for KVO_NATIVE */
	struct kvo_tier_config tier[KVO_MAX_TIERS];
};

kvo *kvo_new(const struct kvo_config *c, kv_err *err, char *why,
	     size_t whylen);
void kvo_free(kvo *o);

/* kvs_set_connector(s) with o's hooks; o serves one kvs. */
kv_err kvo_attach(kvo *o, kvs *s);

enum kvo_dir { KVO_LOAD = 0, KVO_STORE };

struct kvo_xfer {
	uint64_t id;
	kvs_req req;
	uint8_t tier;
	uint8_t dir;		/* enum kvo_dir */
	uint32_t ntokens;	/* tokens moved */
	uint32_t nblocks;	/* GPU blocks moved */
	const struct kvc_pair *pairs;	/* store: GPU > slot; load: slot >
					 * GPU */
	uint32_t npairs;
};

/* Transfers started since the last call, in start order; valid until the
 * next call. */
uint32_t kvo_started(kvo *o, const struct kvo_xfer **out);

/*
 * Transfer id finished (ok) or failed.  A load: kvs_load_done.  A store:
 * its blocks become hits.  A finished request's held blocks are released
 * with its last store.
 */
kv_err kvo_done(kvo *o, uint64_t id, bool ok);

struct kvo_tier_stats {
	uint64_t lookup_tokens, hit_tokens;
	uint64_t load_blocks, store_blocks, evicted_blocks;
	uint64_t used_blocks, capacity_blocks;
};

uint32_t kvo_ntiers(const kvo *o);
const struct kvo_tier_stats *kvo_stats(const kvo *o, uint32_t tier);
const char *kvo_errmsg(const kvo *o);
/* Invariants of every tier (kv_tier.c); 0 when consistent, else a positive
 * code and a message in why. */
int kvo_check(const kvo *o, char *why, size_t whylen);

#ifdef __cplusplus
}
#endif
#endif /* KVOFFLOAD_H */
