/*
 * engine.c -- the event queue: a binary min-heap on (time, kind,
 * insertion number).  See engine.h for the contract.
 */
#include "config.h"

#include "sim/engine.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static bool
ev_before(const struct sim_ev *a, const struct sim_ev *b)
{
	if (a->t != b->t)
		return a->t < b->t;
	if (a->kind != b->kind)
		return a->kind < b->kind;
	return a->seq < b->seq;
}

void
sim_evq_init(struct sim_evq *q)
{
	memset(q, 0, sizeof(*q));
}

void
sim_evq_release(struct sim_evq *q)
{
	if (q == NULL)
		return;
	free(q->h);
	memset(q, 0, sizeof(*q));
}

kv_err
sim_evq_push(struct sim_evq *q, int64_t t, uint32_t kind, uint32_t arg,
	     uint64_t *seq)
{
	struct sim_ev ev;
	size_t i;

	if (t < q->now)
		return KV_EINVAL;
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 16;
		struct sim_ev *h = realloc(q->h, cap * sizeof(*h));

		if (h == NULL)
			return KV_ENOMEM;
		q->h = h;
		q->cap = cap;
	}
	ev.t = t;
	ev.seq = q->next_seq++;
	ev.kind = kind;
	ev.arg = arg;
	i = q->n++;
	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!ev_before(&ev, &q->h[p]))
			break;
		q->h[i] = q->h[p];
		i = p;
	}
	q->h[i] = ev;
	if (seq != NULL)
		*seq = ev.seq;
	return KV_OK;
}

bool
sim_evq_pop(struct sim_evq *q, struct sim_ev *ev)
{
	struct sim_ev last;
	size_t i = 0;

	if (q->n == 0)
		return false;
	*ev = q->h[0];
	last = q->h[--q->n];
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= q->n)
			break;
		if (c + 1 < q->n && ev_before(&q->h[c + 1], &q->h[c]))
			c++;
		if (!ev_before(&q->h[c], &last))
			break;
		q->h[i] = q->h[c];
		i = c;
	}
	if (q->n > 0)
		q->h[i] = last;
	/* The clock never goes back: pushes before `now` are refused. */
	assert(ev->t >= q->now);
	q->now = ev->t;
	q->popped++;
	return true;
}

const struct sim_ev *
sim_evq_peek(const struct sim_evq *q)
{
	return q->n ? &q->h[0] : NULL;
}

int
sim_evq_check(const struct sim_evq *q)
{
	for (size_t i = 0; i < q->n; i++) {
		if (i > 0 && ev_before(&q->h[i], &q->h[(i - 1) / 2]))
			return 1;
		if (q->h[i].t < q->now)
			return 2;
		if (q->h[i].seq >= q->next_seq)
			return 3;
	}
	return 0;
}
