/*
 * wl_util.c -- growable arrays, a 64-bit hash set, key mixing, token ids.
 *
 * Token ids are a pure function of (segment key, position): the finaliser
 * of splitmix64 applied twice, mapped onto [0, vocab) by a multiply-shift
 * (no modulo bias worth the name at vocab < 2^32).  Rejected: a real
 * tokenizer (no text exists) and a per-run table (memory grows with the
 * trace).
 */
#include "config.h"

#include "workloads/wl_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool
wl__grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *n;

	if (need <= *cap)
		return true;
	ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return false;
		ncap *= 2;
	}
	n = realloc(*arr, ncap * elem);
	if (n == NULL)
		return false;
	*arr = n;
	*cap = ncap;
	return true;
}

/*
 * The mix, inlined into the token loops below: a replay generates every
 * prompt and output token through it, and the call itself cost about as
 * much as the arithmetic.
 */
#define WL__GOLDEN 0x9e3779b97f4a7c15ULL

/* The mix of z = a + WL__GOLDEN * (b + 1). */
static inline uint64_t
wl__fin(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	/* A second round decorrelates nearby (a, b) pairs. */
	z += WL__GOLDEN;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t
wl__mix(uint64_t a, uint64_t b)
{
	return wl__fin(a + WL__GOLDEN * (b + 1));
}

uint64_t
wl_mix(uint64_t a, uint64_t b)
{
	return wl__mix(a, b);
}

/* A mix onto [0, vocab). */
static inline uint32_t
wl__vocab(uint64_t h, uint32_t vocab)
{
	return (uint32_t)(((h >> 32) * (uint64_t)vocab) >> 32);
}

/*
 * Token ids take one round of the finaliser: token i of a segment is
 * then SplitMix64's output i on the segment's key (Steele, Lea, Flood,
 * OOPSLA 2014), a well-tested stream.  Only the equality of ids matters
 * downstream (prefix hashes); the second round cost a tenth of a long run.
 */
static inline uint32_t
wl__tok1(uint64_t z, uint32_t vocab)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return wl__vocab(z ^ (z >> 31), vocab);
}

static inline uint32_t
wl__token(uint64_t key, uint64_t pos, uint32_t vocab)
{
	return wl__tok1(key + WL__GOLDEN * (pos + 1), vocab);
}

uint32_t
wl_token(uint64_t key, uint64_t pos, uint32_t vocab)
{
	return wl__token(key, pos, vocab);
}

void
wl_request_tokens(const struct wl_request *r, uint32_t from, uint32_t count,
    uint32_t vocab, uint32_t *out)
{
	uint32_t end = from + count;
	uint32_t base = 0;

	if (r->tokens != NULL) {
		if (count > 0)
			memcpy(out, r->tokens + from,
			    (size_t)count * sizeof(*out));
		return;
	}
	for (uint32_t i = 0; i < r->nsegs && from < end; i++) {
		uint32_t len = r->segs[i].len;
		uint64_t key = r->segs[i].key;

		if (from < base + len) {
			uint32_t stop = end < base + len ? end : base + len;
			/* wl__token(key, t - base), its product stepped */
			uint64_t z = key + WL__GOLDEN *
			    ((uint64_t)(from - base) + 1);

			for (uint32_t t = from; t < stop; t++, z += WL__GOLDEN)
				*out++ = wl__tok1(z, vocab);
			from = stop;
		}
		base += len;
	}
}

void
wl_output_tokens(const struct wl_request *r, uint32_t sample, uint32_t from,
    uint32_t count, uint32_t vocab, uint32_t *out)
{
	uint64_t key = sample == 0 ? r->out_key : wl__mix(r->out_key, sample);

	for (uint32_t i = 0; i < count; i++)
		out[i] = wl__token(key, (uint64_t)from + i, vocab);
}

/*
 * Hash set: linear probing, power-of-two capacity, load <= 1/2.  A map
 * (wl__hmap_init) keeps a 32-bit value beside each key.
 */

static size_t
hset_slot(uint64_t k, size_t mask)
{
	return (size_t)(wl__mix(k, 0) & mask);
}

static bool
hset_alloc(struct wl_hset *h, bool map)
{
	memset(h, 0, sizeof(*h));
	h->cap = 1024;
	h->slot = calloc(h->cap, sizeof(*h->slot));
	if (map)
		h->val = calloc(h->cap, sizeof(*h->val));
	if (h->slot == NULL || (map && h->val == NULL)) {
		wl__hset_release(h);
		return false;
	}
	return true;
}

bool
wl__hset_init(struct wl_hset *h)
{
	return hset_alloc(h, false);
}

bool
wl__hmap_init(struct wl_hset *h)
{
	return hset_alloc(h, true);
}

static bool
hset_rehash(struct wl_hset *h)
{
	size_t ncap = h->cap * 2;
	uint64_t *ns = calloc(ncap, sizeof(*ns));
	uint32_t *nv = h->val != NULL ? calloc(ncap, sizeof(*nv)) : NULL;

	if (ns == NULL || (h->val != NULL && nv == NULL)) {
		free(ns);
		free(nv);
		return false;
	}
	for (size_t i = 0; i < h->cap; i++) {
		uint64_t k = h->slot[i];
		size_t j;

		if (k == 0)
			continue;
		for (j = hset_slot(k, ncap - 1); ns[j] != 0;
		    j = (j + 1) & (ncap - 1))
			;
		ns[j] = k;
		if (nv != NULL)
			nv[j] = h->val[i];
	}
	free(h->slot);
	free(h->val);
	h->slot = ns;
	h->val = nv;
	h->cap = ncap;
	return true;
}

/*
 * The slot of k (SIZE_MAX for the key 0, kept aside since 0 marks empty
 * slots): *found says whether k is there; when not and `insert`, it is
 * added with the value 0.  -1 and errno on no memory.
 */
static int
hset_find(struct wl_hset *h, uint64_t k, bool insert, size_t *at)
{
	size_t j;

	*at = SIZE_MAX;
	if (k == 0) {
		if (h->has_zero)
			return 1;
		if (insert) {
			h->has_zero = true;
			h->zero_val = 0;
			h->n++;
		}
		return 0;
	}
	for (j = hset_slot(k, h->cap - 1); h->slot[j] != 0;
	    j = (j + 1) & (h->cap - 1))
		if (h->slot[j] == k) {
			*at = j;
			return 1;
		}
	if (!insert)
		return 0;
	h->slot[j] = k;
	if (h->val != NULL)
		h->val[j] = 0;
	h->n++;
	if (h->n * 2 > h->cap) {
		if (!hset_rehash(h)) {
			errno = ENOMEM;
			return -1;
		}
		return hset_find(h, k, false, at) - 1;
	}
	*at = j;
	return 0;
}

int
wl__hset_has(struct wl_hset *h, uint64_t k, bool insert)
{
	size_t at;

	return hset_find(h, k, insert, &at);
}

uint32_t
wl__hmap_get(struct wl_hset *h, uint64_t k)
{
	size_t at;

	if (hset_find(h, k, false, &at) != 1)
		return 0;
	return at == SIZE_MAX ? h->zero_val : h->val[at];
}

int
wl__hmap_max(struct wl_hset *h, uint64_t k, uint32_t v)
{
	size_t at;
	uint32_t *cur;

	if (hset_find(h, k, true, &at) < 0)
		return -1;
	cur = at == SIZE_MAX ? &h->zero_val : &h->val[at];
	if (v > *cur)
		*cur = v;
	return 0;
}

void
wl__hset_release(struct wl_hset *h)
{
	free(h->slot);
	free(h->val);
	memset(h, 0, sizeof(*h));
}
