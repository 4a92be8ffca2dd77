/*
 * kv_tier.c -- one offload tier (kv_tier.h): slots, a hash index, an LRU
 * list, load references and pending stores, as vLLM V1's
 * LRUOffloadingManager keeps them over a CPUBackend (docs/offload.md).
 *
 * Nothing allocates after kvt_init(): the LRU list and the index are sized
 * for every slot, and freed slots go on a stack of the same size.
 *
 * Invariants (kvt_check):
 *   1  used + free == cap; fresh <= cap; the stack holds distinct slots
 *      below fresh, each with no hash;
 *   2  a slot below fresh not on the stack has a hash, is on the LRU list,
 *      and the index maps its hash to it; nothing else is indexed or listed;
 *   3  ref >= KVT_PENDING for every used slot, 0 for every free one;
 *   4  the LRU list is well linked.
 */
#include "kv_tier.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

kv_err
kvt_init(struct kvt *t, uint32_t cap)
{
	memset(t, 0, sizeof(*t));
	if (cap > INT32_MAX / 2)
		return KV_EINVAL;
	t->cap = cap;
	t->stack = malloc((cap ? cap : 1) * sizeof(*t->stack));
	t->hash = calloc(cap ? cap : 1, sizeof(*t->hash));
	t->ref = calloc(cap ? cap : 1, sizeof(*t->ref));
	if (t->stack == NULL || t->hash == NULL || t->ref == NULL)
		goto nomem;
	if (kv_list_init(&t->lru, cap) != KV_OK)
		goto nomem;
	if (kv_hmap_init(&t->map, cap) != KV_OK)
		goto nomem;
	return KV_OK;
nomem:
	kvt_release(t);
	return KV_ENOMEM;
}

void
kvt_release(struct kvt *t)
{
	if (t == NULL)
		return;
	free(t->stack);
	free(t->hash);
	free(t->ref);
	kv_list_release(&t->lru);
	kv_hmap_release(&t->map);
	memset(t, 0, sizeof(*t));
}

int32_t
kvt_find(const struct kvt *t, uint64_t h)
{
	return h == 0 || t->cap == 0 ? -1 : kv_hmap_get(&t->map, h);
}

uint32_t
kvt_lookup(const struct kvt *t, const uint64_t *h, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		int32_t b = kvt_find(t, h[i]);

		if (b < 0 || t->ref[b] == KVT_PENDING)
			break;
	}
	return i;
}

void
kvt_touch(struct kvt *t, const uint64_t *h, uint32_t n)
{
	for (uint32_t i = n; i-- > 0;) {
		int32_t b = kvt_find(t, h[i]);

		if (b < 0)
			continue;
		kv_list_remove(&t->lru, b);
		kv_list_push_back(&t->lru, b);
	}
}

int32_t
kvt_load_begin(struct kvt *t, uint64_t h)
{
	int32_t b = kvt_find(t, h);

	if (b < 0 || t->ref[b] == KVT_PENDING)
		return -1;
	t->ref[b]++;
	return b;
}

void
kvt_load_end(struct kvt *t, int32_t slot)
{
	if (slot >= 0 && (uint32_t)slot < t->fresh && t->ref[slot] > 0)
		t->ref[slot]--;
}

/* Whether `need` ready unreferenced slots can be evicted. */
static bool
kvt__can_evict(const struct kvt *t, uint32_t need)
{
	for (int32_t b = t->lru.head; b >= 0 && need > 0;
	     b = t->lru.lk[b].next)
		if (t->ref[b] == 0)
			need--;
	return need == 0;
}

/* Evict `need` ready unreferenced slots, least recent first. */
static void
kvt__evict(struct kvt *t, uint32_t need)
{
	int32_t b = t->lru.head;

	while (b >= 0 && need > 0) {
		int32_t next = t->lru.lk[b].next;

		if (t->ref[b] == 0) {
			kv_list_remove(&t->lru, b);
			kv_hmap_del(&t->map, t->hash[b]);
			t->hash[b] = 0;
			t->stack[t->nfree++] = b;
			t->evicted++;
			need--;
		}
		b = next;
	}
}

/* A free slot (fresh ones in id order, then the last freed). */
static int32_t
kvt__take(struct kvt *t)
{
	if (t->fresh < t->cap)
		return (int32_t)t->fresh++;
	return t->stack[--t->nfree];
}

static void
kvt__enter(struct kvt *t, int32_t b, uint64_t h, int32_t ref)
{
	t->hash[b] = h;
	t->ref[b] = ref;
	kv_hmap_put(&t->map, h, b);
	kv_list_push_back(&t->lru, b);
}

kv_err
kvt_store_begin(struct kvt *t, const uint64_t *h, uint32_t n, uint32_t *idx,
		int32_t *slot, uint32_t *nnew, uint32_t *nevict)
{
	uint32_t k = 0, nf = kvt_free(t);

	*nnew = *nevict = 0;
	for (uint32_t i = 0; i < n; i++)
		if (kvt_find(t, h[i]) < 0)
			idx[k++] = i;
	if (k > nf && !kvt__can_evict(t, k - nf))
		return KV_ENOSPC;
	/* the blocks to store are chosen first: eviction may then drop a
	 * present block of the same request (LRUOffloadingManager does) */
	if (k > nf) {
		kvt__evict(t, k - nf);
		*nevict = k - nf;
	}
	for (uint32_t i = 0; i < k; i++) {
		slot[i] = kvt__take(t);
		kvt__enter(t, slot[i], h[idx[i]], KVT_PENDING);
	}
	*nnew = k;
	return KV_OK;
}

void
kvt_store_end(struct kvt *t, int32_t slot, bool ok)
{
	if (slot < 0 || (uint32_t)slot >= t->fresh || t->hash[slot] == 0 ||
	    t->ref[slot] != KVT_PENDING)
		return;
	if (ok) {
		t->ref[slot] = 0;
		return;
	}
	kv_list_remove(&t->lru, slot);
	kv_hmap_del(&t->map, t->hash[slot]);
	t->hash[slot] = 0;
	t->ref[slot] = 0;
	t->stack[t->nfree++] = slot;
}

kv_err
kvt_put_ready(struct kvt *t, uint64_t h, int32_t *slot, uint32_t *nevict)
{
	*nevict = 0;
	if ((*slot = kvt_find(t, h)) >= 0)
		return KV_OK;
	if (kvt_free(t) == 0) {
		if (!kvt__can_evict(t, 1))
			return KV_ENOSPC;
		kvt__evict(t, 1);
		*nevict = 1;
	}
	*slot = kvt__take(t);
	kvt__enter(t, *slot, h, 0);
	return KV_OK;
}

#define KVT_BAD(code, ...)                                                  \
	do {                                                                \
		if (why != NULL && whylen > 0)                              \
			snprintf(why, whylen, __VA_ARGS__);                 \
		rc = (code);                                                \
		goto out;                                                   \
	} while (0)

int
kvt_check(const struct kvt *t, char *why, size_t whylen)
{
	uint8_t *onstack;
	int rc = 0;

	if ((onstack = calloc(t->cap ? t->cap : 1, 1)) == NULL)
		KVT_BAD(99, "out of memory");
	if (t->fresh > t->cap || t->nfree > t->fresh)
		KVT_BAD(1, "fresh %u, freed %u, cap %u", t->fresh, t->nfree,
			t->cap);
	for (uint32_t i = 0; i < t->nfree; i++) {
		int32_t b = t->stack[i];

		if (b < 0 || (uint32_t)b >= t->fresh || onstack[b])
			KVT_BAD(1, "free stack entry %u: slot %d", i, b);
		onstack[b] = 1;
		if (t->hash[b] != 0 || t->ref[b] != 0)
			KVT_BAD(3, "free slot %d holds a hash or a reference",
				b);
	}
	if (kv_list_check(&t->lru) != 0)
		KVT_BAD(4, "the LRU list is broken");
	if (t->lru.n != kvt_used(t) || t->map.n != kvt_used(t))
		KVT_BAD(2, "%u used, %u listed, %u indexed", kvt_used(t),
			t->lru.n, t->map.n);
	for (uint32_t b = 0; b < t->fresh; b++) {
		if (onstack[b])
			continue;
		if (t->hash[b] == 0 || !kv_list_has(&t->lru, (int32_t)b) ||
		    kv_hmap_get(&t->map, t->hash[b]) != (int32_t)b)
			KVT_BAD(2, "used slot %u is not listed or indexed", b);
		if (t->ref[b] < KVT_PENDING)
			KVT_BAD(3, "slot %u: reference %d", b, t->ref[b]);
	}
out:
	free(onstack);
	return rc;
}
