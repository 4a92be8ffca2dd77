/*
 * replica_pp.c -- pipeline parallel's stage timeline and batch queue
 * (replica_pp.h).
 */
#include "sim/replica_pp.h"

#include <stdint.h>
#include <stdlib.h>

struct rpp *
rpp_new(uint32_t p)
{
	struct rpp *q = calloc(1, sizeof(*q));

	if (q == NULL)
		return NULL;
	q->p = p;
	q->free = calloc(p, sizeof(*q->free));
	q->b = calloc(p, sizeof(*q->b));
	if (q->free == NULL || q->b == NULL) {
		rpp_free(q);
		return NULL;
	}
	return q;
}

void
rpp_free(struct rpp *q)
{
	if (q == NULL)
		return;
	if (q->b != NULL)
		for (uint32_t i = 0; i < q->p; i++) {
			free(q->b[i].req);
			free(q->b[i].fin);
		}
	free(q->b);
	free(q->free);
	free(q);
}

int64_t
rpp_stage_ns(const struct rpp *q, int64_t dt, uint32_t j)
{
	return dt / q->p + (j < (uint32_t)(dt % q->p) ? 1 : 0);
}

int64_t
rpp_time(struct rpp *q, int64_t now, int64_t dt)
{
	int64_t t = now;

	for (uint32_t j = 0; j < q->p; j++) {
		if (q->free[j] > t)
			t = q->free[j];
		t += rpp_stage_ns(q, dt, j);
		q->free[j] = t;
	}
	return t;
}

bool
rpp_full(const struct rpp *q)
{
	return q->n == q->p;
}

struct rpp_batch *
rpp_oldest(struct rpp *q)
{
	return q->n > 0 ? &q->b[q->head] : NULL;
}

struct rpp_batch *
rpp_push(struct rpp *q, int64_t ret)
{
	struct rpp_batch *b;

	if (rpp_full(q))
		return NULL;
	b = &q->b[(q->head + q->n) % q->p];
	b->ret = ret;
	b->nreq = 0;
	b->nfin = 0;
	q->n++;
	return b;
}

void
rpp_pop(struct rpp *q)
{
	if (q->n == 0)
		return;
	q->head = (q->head + 1) % q->p;
	q->n--;
}

kv_err
rpp_add(kvs_req **v, uint32_t *n, uint32_t *cap, kvs_req h)
{
	if (*n == *cap) {
		uint32_t c = *cap > 0 ? *cap * 2 : 16;
		kvs_req *v2 = realloc(*v, c * sizeof(*v2));

		if (v2 == NULL)
			return KV_ENOMEM;
		*v = v2;
		*cap = c;
	}
	(*v)[(*n)++] = h;
	return KV_OK;
}

int64_t
rpp_wake(const struct rpp *q)
{
	return q->n > 0 ? q->b[q->head].ret : INT64_MAX;
}

bool
rpp_finishing(const struct rpp *q, kvs_req h)
{
	for (uint32_t k = 0; k < q->n; k++) {
		const struct rpp_batch *b = &q->b[(q->head + k) % q->p];

		for (uint32_t i = 0; i < b->nfin; i++)
			if (b->fin[i] == h)
				return true;
	}
	return false;
}
