/*
 * replay_spec.c -- speculative decoding in replay scripts (policy
 * vllm-v1, docs/scheduler.md R81-R99): the setup key `spec_tokens K`, the
 * lines `propose ID n=N` and `accept ID A`, and the steps that verify
 * drafts.
 *
 * `propose` is the drafter's output after a step (kvs_propose); `accept
 * ID A` says that the next step's verification of ID accepts its first A
 * drafts (A <= the drafts proposed; when the budget or max_model_len cut
 * the drafts to fewer than A, all of those scheduled are accepted).  A
 * request with no `accept` line accepts none.  Accept lines apply to the
 * next step only.
 */
#include "sim/replay_int.h"

#include <stdlib.h>
#include <string.h>

#define RP_SPEC_NONE UINT32_MAX

struct rp_spec {
	uint32_t *prop;		/* drafts proposed, by kvs_req */
	uint32_t *acc;		/* `accept` for the next step, or NONE */
	uint32_t cap;
	uint32_t nacc;		/* `accept` lines since the last step */
	uint32_t *step_acc;	/* by sched entry, for kvs_complete_spec */
	uint32_t capstep;
};

void
rp_spec_free(struct rp *r)
{
	if (r->spec == NULL)
		return;
	free(r->spec->prop);
	free(r->spec->acc);
	free(r->spec->step_acc);
	free(r->spec);
	r->spec = NULL;
}

/* `spec_tokens K`: num_speculative_tokens, K >= 1. */
int
rp_spec_setup(struct rp *r, struct rp_line *l)
{
	uint32_t k;

	if (rp_u32(r, l->kw, l->pos[0], &k))
		return RP_BAD;
	if (k < 1)
		return rp_error(r, "spec_tokens must be at least 1 (leave "
				"the line out for no speculative decoding)");
	r->scfg.spec_tokens = k;
	return RP_OK;
}

/* Room for request q in the per-request arrays. */
static int
rp_spec_room(struct rp *r, kvs_req q)
{
	struct rp_spec *p = r->spec;
	uint32_t cap;

	if (p == NULL) {
		if ((p = rp_xrealloc(r, NULL, sizeof(*p))) == NULL)
			return RP_BAD;
		memset(p, 0, sizeof(*p));
		r->spec = p;
	}
	if ((uint32_t)q < p->cap)
		return RP_OK;
	cap = 2 * (uint32_t)q + 16;
	if ((p->prop = rp_xrealloc(r, p->prop, cap * sizeof(*p->prop))) ==
	    NULL ||
	    (p->acc = rp_xrealloc(r, p->acc, cap * sizeof(*p->acc))) == NULL)
		return RP_BAD;
	for (uint32_t i = p->cap; i < cap; i++) {
		p->prop[i] = 0;
		p->acc[i] = RP_SPEC_NONE;
	}
	p->cap = cap;
	return RP_OK;
}

/* `propose ID n=N`: N drafts for ID's next step (prints nothing). */
int
rp_spec_propose(struct rp *r, struct rp_line *l, const char *text)
{
	const char *v = rp_opt(l, "n");
	uint32_t n;
	kvs_req q;
	kv_err e;

	if (rp_npos(r, l, 1) || rp_opts_allowed(r, l, "n") ||
	    rp_req(r, l, 0, &q))
		return RP_BAD;
	if (v == NULL)
		return rp_error(r, "propose: n= is required");
	if (rp_u32(r, "n", v, &n) || rp_spec_room(r, q))
		return RP_BAD;
	e = kvs_propose(r->s, q, n);
	if (e != KV_OK)
		return rp_error(r, "%s", kvs_errmsg(r->s)[0] ?
				kvs_errmsg(r->s) : kv_strerror(e));
	r->spec->prop[q] = n;
	r->spec->acc[q] = RP_SPEC_NONE;
	rp_hist_push(r, text);
	return RP_OK;
}

/* `accept ID A`: the next step accepts A of ID's drafts. */
int
rp_spec_accept(struct rp *r, struct rp_line *l, const char *text)
{
	uint32_t a;
	kvs_req q;

	if (rp_npos(r, l, 2) || rp_opts_allowed(r, l, "") ||
	    rp_req(r, l, 0, &q) || rp_u32(r, "accept", l->pos[1], &a) ||
	    rp_spec_room(r, q))
		return RP_BAD;
	if (a > r->spec->prop[q])
		return rp_error(r, "accept: %u draft tokens accepted, but %s "
				"has %u proposed", a, l->pos[0],
				r->spec->prop[q]);
	r->spec->acc[q] = a;
	r->spec->nacc++;
	rp_hist_push(r, text);
	return RP_OK;
}

/*
 * kvs_complete_spec for the step just scheduled: each entry's accepted
 * drafts (its `accept`, cut to the drafts it verifies), then the lines'
 * state cleared: a scheduled or preempted request's drafts are spent.
 */
int
rp_spec_complete(struct rp *r, const struct kvs_step **out)
{
	const struct kvs_step *st = kvs_current_step(r->s);
	struct rp_spec *p = r->spec;
	kv_err e;

	if (p != NULL && st->nsched > p->capstep) {
		uint32_t *a = rp_xrealloc(r, p->step_acc,
					  st->nsched * sizeof(*a));

		if (a == NULL)
			return RP_BAD;
		p->step_acc = a;
		p->capstep = st->nsched;
	}
	for (uint32_t i = 0; p != NULL && i < st->nsched; i++) {
		kvs_req q = st->sched[i].req;
		uint32_t a = (uint32_t)q < p->cap ? p->acc[q] : RP_SPEC_NONE;

		if (a == RP_SPEC_NONE)
			a = 0;
		p->step_acc[i] = a < st->sched[i].spec ? a :
		    st->sched[i].spec;
		if ((uint32_t)q < p->cap)
			p->prop[q] = 0;
	}
	for (uint32_t i = 0; p != NULL && i < st->npreempt; i++)
		if ((uint32_t)st->preempt[i] < p->cap)
			p->prop[st->preempt[i]] = 0;
	e = kvs_complete_spec(r->s, NULL, p != NULL ? p->step_acc : NULL,
			      out);
	for (uint32_t i = 0; p != NULL && p->nacc > 0 && i < p->cap; i++)
		p->acc[i] = RP_SPEC_NONE;
	if (p != NULL)
		p->nacc = 0;
	if (e != KV_OK)
		return rp_error(r, "step: %s", kvs_errmsg(r->s)[0] ?
				kvs_errmsg(r->s) : kv_strerror(e));
	return RP_OK;
}

/* ` spec=ID:N,...`: the entries that verify drafts. */
void
rp_spec_step(struct rp *r, struct rp_buf *b, const struct kvs_step *st)
{
	bool first = true;

	for (uint32_t i = 0; i < st->nsched; i++) {
		if (st->sched[i].spec == 0)
			continue;
		rp_buf_add(b, "%s%s:%u", first ? " spec=" : ",",
			   r->reqname[st->sched[i].req], st->sched[i].spec);
		first = false;
	}
}
