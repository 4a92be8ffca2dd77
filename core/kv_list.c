/*
 * kv_list.c -- intrusive doubly linked list over block ids.
 *
 * Every pool in libkvcore keeps its free ids in one of these: the links are
 * two int32 arrays indexed by id, so membership, removal from the middle
 * (vLLM v1 touching a cached free block) and both reuse orders are O(1) and
 * nothing is allocated after kv_list_init().  A non-member has both links
 * set to -2; -1 ends the list.
 */
#include "kv_int.h"

#include <stdlib.h>
#include <string.h>

kv_err
kv_list_init(struct kv_list *l, uint32_t cap)
{
	size_t sz = (cap ? cap : 1) * sizeof(int32_t);

	l->prev = malloc(sz);
	l->next = malloc(sz);
	if (l->prev == NULL || l->next == NULL) {
		free(l->prev);
		free(l->next);
		l->prev = l->next = NULL;
		return KV_ENOMEM;
	}
	for (uint32_t i = 0; i < cap; i++)
		l->prev[i] = l->next[i] = -2;
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
	free(l->prev);
	free(l->next);
	l->prev = l->next = NULL;
	l->n = l->cap = 0;
}

kv_err
kv_list_copy(struct kv_list *dst, const struct kv_list *src)
{
	kv_err e = kv_list_init(dst, src->cap);

	if (e != KV_OK)
		return e;
	memcpy(dst->prev, src->prev, src->cap * sizeof(int32_t));
	memcpy(dst->next, src->next, src->cap * sizeof(int32_t));
	dst->head = src->head;
	dst->tail = src->tail;
	dst->n = src->n;
	return KV_OK;
}

void
kv_list_push_front(struct kv_list *l, int32_t id)
{
	l->prev[id] = -1;
	l->next[id] = l->head;
	if (l->head >= 0)
		l->prev[l->head] = id;
	else
		l->tail = id;
	l->head = id;
	l->n++;
}

void
kv_list_push_back(struct kv_list *l, int32_t id)
{
	l->next[id] = -1;
	l->prev[id] = l->tail;
	if (l->tail >= 0)
		l->next[l->tail] = id;
	else
		l->head = id;
	l->tail = id;
	l->n++;
}

void
kv_list_remove(struct kv_list *l, int32_t id)
{
	int32_t p = l->prev[id], q = l->next[id];

	if (p >= 0)
		l->next[p] = q;
	else
		l->head = q;
	if (q >= 0)
		l->prev[q] = p;
	else
		l->tail = p;
	l->prev[id] = l->next[id] = -2;
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

	for (int32_t id = l->head; id >= 0; id = l->next[id]) {
		if ((uint32_t)id >= l->cap || l->prev[id] != prev)
			return 1;	/* broken back link or bad id */
		if (++seen > l->n)
			return 2;	/* longer than its count: a cycle */
		prev = id;
	}
	if (prev != l->tail || seen != l->n)
		return 3;		/* tail or count wrong */
	for (uint32_t i = 0; i < l->cap; i++)
		if (l->prev[i] != -2)
			members++;
	if (members != l->n)
		return 4;		/* a non-member still linked */
	return 0;
}
