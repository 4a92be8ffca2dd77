/*
 * kv_pattern.h -- the word every token slot must hold, shared by the C
 * backends and the CUDA kernels (KV_HD is __host__ __device__ under nvcc).
 *
 * word = high half of mix64(mix64(key + pos * golden) ^ (layer, K/V, word))
 * where key is the content key of the position (the hash of the token
 * prefix, gpu/kvval.h).  Compared as uint32, so the KV dtype and NaN
 * encodings do not matter.  A pattern word never equals KVGPU_POISON, so a
 * poisoned slot and a written one are told apart exactly.
 *
 * mix64 is the splitmix64 finaliser (Steele, Lea, Flood, "Fast splittable
 * pseudorandom number generators", OOPSLA 2014): a bijection on 64 bits
 * with full avalanche, so neighbouring positions, layers and words give
 * unrelated words.
 */
#ifndef KV_PATTERN_H
#define KV_PATTERN_H

#include <stdint.h>

#ifdef __CUDACC__
#define KV_HD __host__ __device__
#else
#define KV_HD
#endif

#define KVGPU_POISON 0xdeadbeefu
#define KVGPU_GOLDEN 0x9e3779b97f4a7c15ull

KV_HD static inline uint64_t
kvgpu_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

KV_HD static inline uint32_t
kvgpu_pattern(uint64_t key, uint32_t pos, uint32_t layer, uint32_t kv,
	      uint32_t word)
{
	uint64_t h = kvgpu_mix64(key + KVGPU_GOLDEN * ((uint64_t)pos + 1));
	uint32_t v;

	h = kvgpu_mix64(h ^ ((uint64_t)layer << 33 | (uint64_t)kv << 32 |
			     word));
	v = (uint32_t)(h >> 32);
	return v == KVGPU_POISON ? v ^ 1u : v;
}

/* The digest term of one word (kvgpu_digest): order-free when summed. */
KV_HD static inline uint64_t
kvgpu_digest_term(uint32_t value, uint64_t block_index, uint64_t word)
{
	uint64_t where = kvgpu_mix64(block_index * KVGPU_GOLDEN + (word >> 32));

	return kvgpu_mix64(((uint64_t)value << 32 | (word & 0xffffffffu)) ^
			   where);
}

/* Content key of the next position: chain the previous key and a token. */
static inline uint64_t
kvgpu_key_next(uint64_t prev, uint32_t token)
{
	return kvgpu_mix64(prev ^ (KVGPU_GOLDEN * ((uint64_t)token + 0x51)));
}

#define KVGPU_KEY_ROOT 0x6b76636163686500ull	/* "kvcache" */

/*
 * KV cache groups (kvcore.h).  Group g > 0 salts the content key, so a
 * block of one group holding another group's data fails; group 0 keeps
 * the plain key (a one-group model's pattern is the one above).
 */
#define KVGPU_GROUP_SALT 0xd1b54a32d192ed03ull
#define KVGPU_STATE_SALT 0x5354415445000000ull	/* "STATE" */

static inline uint64_t
kvgpu_group_key(uint64_t key, uint32_t group)
{
	return group == 0 ? key :
	       kvgpu_mix64(key ^ (KVGPU_GROUP_SALT * (uint64_t)group));
}

/*
 * A state group's block (Mamba) holds the state after the first T tokens:
 * its slot j holds kvgpu_pattern(kvgpu_state_key(key(T - 1), g), j, ...).
 * key(T - 1) chains the tokens 0..T-1, so a state of another length or
 * another prefix fails.
 */
static inline uint64_t
kvgpu_state_key(uint64_t key, uint32_t group)
{
	return kvgpu_mix64(kvgpu_group_key(key, group) ^ KVGPU_STATE_SALT);
}

#endif /* KV_PATTERN_H */
