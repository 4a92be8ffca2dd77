/*
 * kv_list.c -- intrusive doubly linked list over block ids.
 *
 * Every pool in libkvcore keeps its free ids in one of these: the links are
 * two int32 arrays indexed by id, so membership, removal from the middle
 * (vLLM v1 touching a cached free block) and both reuse orders are O(1) and
 * nothing is allocated after kv_list_init().  A non-member has both links
 * set to -2; -1 ends the list.  An id's two links sit side by side: a pop
 * or a removal then misses the cache once per id it touches, not twice.
 */
#include "kv_int.h"

#include <stdlib.h>
#include <string.h>

kv_err
kv_list_init(struct kv_list *l, uint32_t cap)
{
	l->lk = malloc((cap ? cap : 1) * sizeof(*l->lk));
	if (l->lk == NULL)
		return KV_ENOMEM;
	for (uint32_t i = 0; i < cap; i++)
		l->lk[i].prev = l->lk[i].next = -2;
	l->head = l->tail = -1;
	l->n = 0;
	l->cap = cap;
	return KV_OK;
}

void
kv_list_release(struct kv_list *l)
{
	if (l == NULL)
		return;
	free(l->lk);
	l->lk = NULL;
	l->n = l->cap = 0;
}

kv_err
kv_list_copy(struct kv_list *dst, const struct kv_list *src)
{
	kv_err e = kv_list_init(dst, src->cap);

	if (e != KV_OK)
		return e;
	memcpy(dst->lk, src->lk, src->cap * sizeof(*src->lk));
	dst->head = src->head;
	dst->tail = src->tail;
	dst->n = src->n;
	return KV_OK;
}

void
kv_list_push_front(struct kv_list *l, int32_t id)
{
	l->lk[id].prev = -1;
	l->lk[id].next = l->head;
	if (l->head >= 0)
		l->lk[l->head].prev = id;
	else
		l->tail = id;
	l->head = id;
	l->n++;
}

void
kv_list_push_back(struct kv_list *l, int32_t id)
{
	l->lk[id].next = -1;
	l->lk[id].prev = l->tail;
	if (l->tail >= 0)
		l->lk[l->tail].next = id;
	else
		l->head = id;
	l->tail = id;
	l->n++;
}

void
kv_list_remove(struct kv_list *l, int32_t id)
{
	int32_t p = l->lk[id].prev, q = l->lk[id].next;

	if (p >= 0)
		l->lk[p].next = q;
	else
		l->head = q;
	if (q >= 0)
		l->lk[q].prev = p;
	else
		l->tail = p;
	l->lk[id].prev = l->lk[id].next = -2;
	l->n--;
}

int32_t
kv_list_pop_front(struct kv_list *l)
{
	int32_t id = l->head;

	if (id >= 0)
		kv_list_remove(l, id);
	return id;
}

int
kv_list_check(const struct kv_list *l)
{
	uint32_t seen = 0, members = 0;
	int32_t prev = -1;

	for (int32_t id = l->head; id >= 0; id = l->lk[id].next) {
		if ((uint32_t)id >= l->cap || l->lk[id].prev != prev)
			return 1;	/* broken back link or bad id */
		if (++seen > l->n)
			return 2;	/* longer than its count: a cycle */
		prev = id;
	}
	if (prev != l->tail || seen != l->n)
		return 3;		/* tail or count wrong */
	for (uint32_t i = 0; i < l->cap; i++)
		if (l->lk[i].prev != -2)
			members++;
	if (members != l->n)
		return 4;		/* a non-member still linked */
	return 0;
}
