/*
 * kv_hash.c -- the block hash chain and a fixed-size hash index.
 *
 * Prefix caching needs a content hash that is the same in every process and
 * on every platform (vLLM v0 used Python's seeded hash(), which is not), so
 * that two runs with one seed give byte-identical results.  The chain
 * h_i = H(h_{i-1}, tokens of block i, extra) is 64-bit.  Tokens go in
 * two at a time (a pair packs into one word without loss) through a
 * multiply-rotate-multiply round that is a bijection of the running state
 * for a given word and of the word for a given state, alternately into two
 * lanes so that two dependency chains run at once; the lanes are folded,
 * and the block's token count and `extra` enter a full avalanche (the
 * finaliser of SplitMix64), so an odd tail cannot alias a pair and every
 * output bit depends on every input bit.  The dependency chain per pair of
 * pairs is one add, one rotate and one multiply: prompt hashing, the
 * largest single item of a trace replay with the finaliser run per token,
 * costs a sixth of that.  Not cryptographic: a mode that must rule out
 * collisions compares tokens on a hit.
 *
 * kv_hmap is open addressing with linear probing and backward-shift
 * deletion, so lookups never wade through tombstones; it is sized once for
 * the number of blocks that can be cached and never grows.  Its keys are
 * block hashes, already uniform, so the home slot is one multiply (a
 * structured key set still spreads: the product's high half mixes all of
 * the key's low bits).
 */
#include "kv_int.h"

#include <stdlib.h>
#include <string.h>

static inline uint64_t
kv__mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* One word into the state: both multipliers odd, so each step inverts. */
static inline uint64_t
kv__round(uint64_t h, uint64_t w)
{
	h += w * 0x9e3779b97f4a7c15ull;
	h = h << 31 | h >> 33;
	return h * 0xbf58476d1ce4e5b9ull;
}

static inline uint64_t
kv__pair(const uint32_t *tok)
{
	return tok[0] | (uint64_t)tok[1] << 32;
}

uint64_t
kv_hash_block(uint64_t parent, const uint32_t *tok, size_t n, uint64_t extra)
{
	/* Two lanes, pairs alternating between them: two chains in flight. */
	uint64_t a = parent ^ 0x243f6a8885a308d3ull;
	uint64_t b = parent ^ 0xa4093822299f31d0ull;
	size_t i;

	for (i = 0; i + 3 < n; i += 4) {
		a = kv__round(a, kv__pair(tok + i));
		b = kv__round(b, kv__pair(tok + i + 2));
	}
	if (i + 1 < n) {
		a = kv__round(a, kv__pair(tok + i));
		i += 2;
	}
	if (i < n)
		b = kv__round(b, tok[i]);
	a ^= b << 32 | b >> 32;
	a = kv__mix(a ^ (extra + (uint64_t)n * 0x13198a2e03707344ull));
	return a ? a : 1;
}

uint64_t
kv_hash_key(uint64_t parent, uint64_t key, uint32_t i, uint64_t extra)
{
	uint64_t a = kv__round(parent ^ 0x452821e638d01377ull, key);

	a = kv__round(a, (uint64_t)i + 1);
	a = kv__mix(a ^ (extra + 0xbe5466cf34e90c6cull));
	return a ? a : 1;
}

kv_err
kv_hmap_init(struct kv_hmap *m, uint32_t cap)
{
	uint32_t size = 16;

	while (size < 2 * (uint64_t)cap + 2)
		size <<= 1;
	m->e = calloc(size, sizeof(*m->e));
	if (m->e == NULL)
		return KV_ENOMEM;
	m->mask = size - 1;
	m->n = 0;
	return KV_OK;
}

void
kv_hmap_release(struct kv_hmap *m)
{
	if (m == NULL)
		return;
	free(m->e);
	m->e = NULL;
	m->n = 0;
}

kv_err
kv_hmap_copy(struct kv_hmap *dst, const struct kv_hmap *src)
{
	size_t size = (size_t)src->mask + 1;

	dst->e = malloc(size * sizeof(*dst->e));
	if (dst->e == NULL)
		return KV_ENOMEM;
	memcpy(dst->e, src->e, size * sizeof(*dst->e));
	dst->mask = src->mask;
	dst->n = src->n;
	return KV_OK;
}


int32_t *
kv_hmap_find(const struct kv_hmap *m, uint64_t key)
{
	/* an empty index (keyed prompts cache lazily, docs/fastforward.md)
	 * answers without touching a slot: a probe is a cache miss in a
	 * large pool's table */
	if (m->n == 0)
		return NULL;
	for (uint32_t i = kv_hmap_slot(m, key);; i = (i + 1) & m->mask) {
		if (m->e[i].key == key)
			return &m->e[i].val;
		if (m->e[i].key == 0)
			return NULL;
	}
}

int32_t
kv_hmap_get(const struct kv_hmap *m, uint64_t key)
{
	const int32_t *v = kv_hmap_find(m, key);

	return v != NULL ? *v : -1;
}

int32_t *
kv_hmap_upsert(struct kv_hmap *m, uint64_t key, bool *found)
{
	uint32_t i = kv_hmap_slot(m, key);

	while (m->e[i].key != 0 && m->e[i].key != key)
		i = (i + 1) & m->mask;
	*found = m->e[i].key != 0;
	if (!*found) {
		m->e[i].key = key;
		m->n++;
	}
	return &m->e[i].val;
}

void
kv_hmap_put(struct kv_hmap *m, uint64_t key, int32_t val)
{
	bool found;

	*kv_hmap_upsert(m, key, &found) = val;
}

bool
kv_hmap_del(struct kv_hmap *m, uint64_t key)
{
	uint32_t i = kv_hmap_slot(m, key), j;

	while (m->e[i].key != key) {
		if (m->e[i].key == 0)
			return false;
		i = (i + 1) & m->mask;
	}
	/* Backward shift: pull later members of the probe run into the hole. */
	for (j = (i + 1) & m->mask; m->e[j].key != 0; j = (j + 1) & m->mask) {
		uint32_t home = kv_hmap_slot(m, m->e[j].key);

		/* Move j into i unless its home lies cyclically in (i, j]. */
		if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
			m->e[i] = m->e[j];
			i = j;
		}
	}
	m->e[i].key = 0;
	m->n--;
	return true;
}
