/*
 * pd.c -- prefill/decode disaggregation in a run (pd.h; the rules are
 * docs/pd.md's P1..P12).
 */
#include "config.h"

#include "sim/pd.h"

#include "core/kvcore.h"
#include "core/kvsched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One request between its arrival and its end. */
struct pd_req {
	struct wl_request r;	/* the client's (segs, tokens: below) */
	struct wl_seg *segs;
	uint32_t *tokens;
	uint32_t gen;		/* bumped when the record is reused */
	uint32_t pre, dec;	/* replicas */
	kvs_req ph, dh;		/* their handles */
	int64_t first_sched, fe_in;	/* the prefill side's */
	uint32_t hit;		/* prefix hit on the prefill side */
	int64_t dec_at;		/* reaches the decode engine */
	int64_t xfer_start, xfer_ns;
	uint64_t bytes;
	bool remote;		/* do_remote_prefill: not loaded yet */
	bool held, released, expired, live;
	bool started;		/* the read has begun */
	uint32_t next_free;
};

/* The record number of each handle a replica gave out. */
struct pd_map {
	uint32_t *slot;
	size_t n, cap;
};

/* A connector's context: the run's P/D state and the replica. */
struct pd_side_ctx {
	sim_pd *pd;
	uint32_t replica;
};

/* A hold that times out at t (rule P6), in time order. */
struct pd_hold {
	int64_t t;
	uint32_t slot, gen;
};

struct sim_pd {
	struct sim_pd_side side[2];
	struct sim_link link;
	int64_t timeout_ns;
	struct sim_pd_env env;
	uint32_t np, nd;
	struct pd_req *req;
	uint32_t nreq, capreq, free_head;
	struct pd_map *map;		/* per replica */
	struct pd_side_ctx *sctx;	/* per replica */
	int64_t *link_free;		/* per decode replica */
	struct pd_hold *hold;		/* holds: hold[hh .. hh + hn) */
	size_t hh, hn, hcap;
	uint64_t rr[2];
	int64_t now;
	struct replica_row_hook rowh;
	uint64_t handoffs, transfers, bytes;
};

#define PD_NONE UINT32_MAX

static kv_err
pd_nomem(char *why, size_t whylen)
{
	snprintf(why, whylen, "out of memory");
	return KV_ENOMEM;
}

static kv_err
pd_row(void *ctx, uint32_t replica, kvs_req h, struct rpt_req *out,
       bool *drop, char *why, size_t whylen);

sim_pd *
sim_pd_new(const struct sim_pd_side side[2], const struct sim_link *link,
	   double timeout_s, const struct sim_pd_env *env, char *why,
	   size_t whylen)
{
	sim_pd *pd = calloc(1, sizeof(*pd));
	uint32_t n;

	if (pd == NULL) {
		(void)pd_nomem(why, whylen);
		return NULL;
	}
	pd->side[0] = side[0];
	pd->side[1] = side[1];
	pd->link = *link;
	pd->timeout_ns = (int64_t)llround(timeout_s * 1e9);
	pd->env = *env;
	pd->np = side[0].replicas;
	pd->nd = side[1].replicas;
	pd->free_head = PD_NONE;
	n = pd->np + pd->nd;
	pd->map = calloc(n, sizeof(*pd->map));
	pd->sctx = calloc(n, sizeof(*pd->sctx));
	pd->link_free = calloc(pd->nd, sizeof(*pd->link_free));
	if (pd->map == NULL || pd->sctx == NULL || pd->link_free == NULL) {
		sim_pd_free(pd);
		(void)pd_nomem(why, whylen);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		pd->sctx[i].pd = pd;
		pd->sctx[i].replica = i;
	}
	pd->rowh.ctx = pd;
	pd->rowh.row = pd_row;
	return pd;
}

static void
req_clear(struct pd_req *e)
{
	free(e->segs);
	free(e->tokens);
	e->segs = NULL;
	e->tokens = NULL;
}

void
sim_pd_free(sim_pd *pd)
{
	if (pd == NULL)
		return;
	for (uint32_t i = 0; i < pd->nreq; i++)
		req_clear(&pd->req[i]);
	for (uint32_t i = 0; pd->map != NULL && i < pd->np + pd->nd; i++)
		free(pd->map[i].slot);
	free(pd->req);
	free(pd->map);
	free(pd->sctx);
	free(pd->link_free);
	free(pd->hold);
	free(pd);
}

const struct replica_row_hook *
sim_pd_row_hook(sim_pd *pd)
{
	return &pd->rowh;
}

void
sim_pd_now(sim_pd *pd, int64_t now)
{
	pd->now = now;
}

void
sim_pd_counts(const sim_pd *pd, uint64_t *handoffs, uint64_t *transfers,
	      uint64_t *bytes)
{
	*handoffs = pd->handoffs;
	*transfers = pd->transfers;
	*bytes = pd->bytes;
}

/* A free record, its request copied (segments and token ids owned). */
static kv_err
req_new(sim_pd *pd, const struct wl_request *r, uint32_t *slot)
{
	struct pd_req *e;
	uint32_t gen;

	if (pd->free_head == PD_NONE) {
		if (pd->nreq == pd->capreq) {
			uint32_t cap = pd->capreq ? pd->capreq * 2 : 256;
			struct pd_req *b = realloc(pd->req, cap * sizeof(*b));

			if (b == NULL)
				return KV_ENOMEM;
			pd->req = b;
			pd->capreq = cap;
		}
		memset(&pd->req[pd->nreq], 0, sizeof(pd->req[0]));
		pd->free_head = pd->nreq++;
		pd->req[pd->free_head].next_free = PD_NONE;
	}
	*slot = pd->free_head;
	e = &pd->req[*slot];
	pd->free_head = e->next_free;
	gen = e->gen;
	memset(e, 0, sizeof(*e));
	e->gen = gen;
	e->live = true;
	e->r = *r;
	if (r->nsegs > 0 &&
	    (e->segs = malloc(r->nsegs * sizeof(*e->segs))) == NULL)
		return KV_ENOMEM;
	if (r->nsegs > 0)
		memcpy(e->segs, r->segs, r->nsegs * sizeof(*e->segs));
	if (r->tokens != NULL) {
		e->tokens = malloc((size_t)r->prompt_tokens *
				   sizeof(*e->tokens));
		if (e->tokens == NULL)
			return KV_ENOMEM;
		memcpy(e->tokens, r->tokens, (size_t)r->prompt_tokens *
		       sizeof(*e->tokens));
	}
	e->r.segs = e->segs;
	e->r.tokens = e->tokens;
	return KV_OK;
}

static void
req_free(sim_pd *pd, uint32_t slot)
{
	struct pd_req *e = &pd->req[slot];

	req_clear(e);
	e->live = false;
	e->gen++;
	e->next_free = pd->free_head;
	pd->free_head = slot;
}

/* Replica i's next handle is record slot's. */
static kv_err
map_push(sim_pd *pd, uint32_t i, uint32_t slot)
{
	struct pd_map *m = &pd->map[i];

	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 1024;
		uint32_t *b = realloc(m->slot, cap * sizeof(*b));

		if (b == NULL)
			return KV_ENOMEM;
		m->slot = b;
		m->cap = cap;
	}
	m->slot[m->n++] = slot;
	return KV_OK;
}

static struct pd_req *
req_of(sim_pd *pd, uint32_t i, kvs_req h)
{
	const struct pd_map *m = &pd->map[i];

	if (h < 0 || (size_t)h >= m->n || m->slot[h] == PD_NONE)
		return NULL;
	return &pd->req[m->slot[h]];
}

kv_err
sim_pd_add(sim_pd *pd, const struct wl_request *r, uint32_t *replica,
	   bool *rejected, char *why, size_t whylen)
{
	struct wl_request one = *r;
	uint32_t slot, i;
	kv_err e;

	i = pd->env.route(pd->env.ctx, r, 0, pd->np, pd->side[0].router,
			  &pd->rr[0]);
	*replica = i;
	if (req_new(pd, r, &slot) != KV_OK)
		return pd_nomem(why, whylen);
	pd->req[slot].pre = i;
	/* the proxy asks the prefill instance for one token (rule P1) */
	one.output_tokens = 1;
	e = replica_add(pd->env.rp[i], &one, rejected, why, whylen);
	if (e != KV_OK || *rejected) {
		req_free(pd, slot);
		return e;
	}
	if (map_push(pd, i, slot) != KV_OK)
		return pd_nomem(why, whylen);
	return KV_OK;
}

/* Free the prefill side's held blocks of e, once. */
static kv_err
release_prefill(sim_pd *pd, struct pd_req *e, char *why, size_t whylen)
{
	kvs *s;

	if (!e->held || e->released)
		return KV_OK;
	e->released = true;
	s = replica_kvs(pd->env.rp[e->pre]);
	if (kvs_release(s, e->ph) != KV_OK) {
		snprintf(why, whylen, "replica %u: release of request %llu: "
			 "%s", e->pre, (unsigned long long)e->r.id,
			 kvs_errmsg(s));
		return KV_ESTATE;
	}
	replica_blocks_moved(pd->env.rp[e->pre], pd->now);
	/* freed blocks may admit what waits there */
	return pd->env.wake(pd->env.ctx, e->pre, pd->now);
}

/* ---- the connectors (kvsched.h) ---- */

/* Prefill: request_finished keeps the blocks for the decode side's read
 * (rule P3), until the read or the timeout (P6). */
static kv_err
pre_finished(void *ctx, kvs *s, kvs_req r, bool *hold)
{
	struct pd_side_ctx *c = ctx;
	sim_pd *pd = c->pd;
	struct pd_req *e = req_of(pd, c->replica, r);
	struct pd_hold *h;

	(void)s;
	*hold = false;
	if (e == NULL)
		return KV_OK;
	if (pd->hn > 0 && pd->hh + pd->hn == pd->hcap && pd->hh > 0) {
		memmove(pd->hold, pd->hold + pd->hh,
			pd->hn * sizeof(*pd->hold));
		pd->hh = 0;
	}
	if (pd->hn == 0)
		pd->hh = 0;
	if (pd->hh + pd->hn == pd->hcap) {
		size_t cap = pd->hcap ? pd->hcap * 2 : 256;
		struct pd_hold *b = realloc(pd->hold, cap * sizeof(*b));

		if (b == NULL)
			return KV_ENOMEM;
		pd->hold = b;
		pd->hcap = cap;
	}
	h = &pd->hold[pd->hh + pd->hn++];
	h->t = pd->now + pd->timeout_ns;
	h->slot = (uint32_t)(e - pd->req);
	h->gen = e->gen;
	/* one EXPIRE queued at a time: the oldest hold's */
	if (pd->hn == 1 && sim_evq_push(pd->env.q, h->t, SIM_EV_PD_EXPIRE, 0,
					NULL) != KV_OK)
		return KV_ENOMEM;
	e->held = true;
	e->ph = r;
	*hold = true;
	return KV_OK;
}

/* Decode: get_num_new_matched_tokens offers the prompt past the local
 * hit (rule P4); the scheduler leaves the last token to compute. */
static kv_err
dec_match(void *ctx, kvs *s, kvs_req r, uint32_t local, uint32_t *ext)
{
	struct pd_side_ctx *c = ctx;
	struct pd_req *e = req_of(c->pd, c->replica, r);
	uint32_t prompt = kvs_req_prompt_len(s, r);

	*ext = e != NULL && e->remote && prompt > local ? prompt - local : 0;
	return KV_OK;
}

/* The observer's block pairs: prefill block > decode block, for the
 * decode blocks [b0, b0 + nb) of group 0. */
static int
xfer_observe(sim_pd *pd, const struct pd_req *e, kvs *ds, uint32_t b0,
	     uint32_t nb, char *why, size_t whylen)
{
	const struct sim_observer *o = pd->env.obs;
	kvs *ps = replica_kvs(pd->env.rp[e->pre]);
	const int32_t *pt, *dt;
	struct kvc_pair *pairs;
	size_t pn, dn;
	uint32_t n = 0;
	int rc;

	if (o == NULL || o->kv_transfer == NULL)
		return 0;
	pt = kvc_table(kvs_kv(ps), kvs_req_seq(ps, e->ph), 0, &pn);
	dt = kvc_table(kvs_kv(ds), kvs_req_seq(ds, e->dh), 0, &dn);
	pairs = calloc(nb ? nb : 1, sizeof(*pairs));
	if (pairs == NULL)
		return -1;
	for (uint32_t k = b0; k < b0 + nb && k < pn && k < dn; k++) {
		pairs[n].src = pt[k];
		pairs[n].dst = dt[k];
		n++;
	}
	rc = o->kv_transfer(o->ctx, e->pre, ps, e->ph, e->dec, ds, e->dh,
			    pairs, n, pd->now, why, whylen);
	free(pairs);
	return rc;
}

/*
 * Decode: update_state_after_alloc starts the read of the blocks past
 * the local hit (rule P5): latency + bytes / bandwidth on the decode
 * replica's link, after the transfers queued on it (P8, P9).
 */
static kv_err
dec_alloc(void *ctx, kvs *s, kvs_req r, uint32_t local, uint32_t ext)
{
	struct pd_side_ctx *c = ctx;
	sim_pd *pd = c->pd;
	struct pd_req *e = req_of(pd, c->replica, r);
	const struct sim_pd_side *d = &pd->side[1];
	uint32_t bs = d->block_size, b0, nb, lanes;
	int64_t *lf, start;
	double sec;
	char why[256];

	if (e == NULL || !e->remote)
		return KV_OK;
	e->remote = false;
	e->dh = r;
	if (ext == 0 || e->expired) {
		/* nothing to read (a full local hit: the prefill side's
		 * blocks are freed at once), or nothing left to read: the
		 * load fails and is computed (P6) */
		e->xfer_start = pd->now;
		if (ext == 0)
			return release_prefill(pd, e, why, sizeof(why));
		return sim_evq_push(pd->env.q, pd->now, SIM_EV_PD_XFER,
				    (uint32_t)(e - pd->req), NULL);
	}
	b0 = local / bs;
	nb = (local + ext + bs - 1) / bs - b0;
	lanes = pd->side[0].tp < d->tp ? pd->side[0].tp : d->tp;
	e->bytes = (uint64_t)nb * d->block_bytes * d->tp;
	sec = pd->link.latency_us * 1e-6 + (double)e->bytes /
	      (pd->link.gbps * 1e9 * (double)(lanes ? lanes : 1));
	e->xfer_ns = (int64_t)llround(sec * 1e9);
	e->started = true;
	lf = &pd->link_free[c->replica - pd->np];
	start = *lf > pd->now ? *lf : pd->now;
	e->xfer_start = start;
	*lf = start + e->xfer_ns;
	if (xfer_observe(pd, e, s, b0, nb, why, sizeof(why)) != 0)
		return KV_ESTATE;
	return sim_evq_push(pd->env.q, *lf, SIM_EV_PD_XFER,
			    (uint32_t)(e - pd->req), NULL);
}

kv_err
sim_pd_attach(sim_pd *pd, char *why, size_t whylen)
{
	for (uint32_t i = 0; i < pd->np + pd->nd; i++) {
		kvs *s = replica_kvs(pd->env.rp[i]);
		struct kvs_connector c;

		memset(&c, 0, sizeof(c));
		c.ctx = &pd->sctx[i];
		if (i < pd->np) {
			c.finished = pre_finished;
		} else {
			c.match = dec_match;
			c.alloc = dec_alloc;
		}
		if (kvs_set_connector(s, &c) != KV_OK) {
			snprintf(why, whylen, "replica %u: %s", i,
				 kvs_errmsg(s));
			return KV_EINVAL;
		}
	}
	return KV_OK;
}

/* ---- rows and events ---- */

static kv_err
pd_row(void *ctx, uint32_t replica, kvs_req h, struct rpt_req *out,
       bool *drop, char *why, size_t whylen)
{
	sim_pd *pd = ctx;
	struct pd_req *e = req_of(pd, replica, h);
	uint32_t slot;

	if (e == NULL) {
		snprintf(why, whylen, "replica %u: request %llu has no P/D "
			 "record", replica, (unsigned long long)out->id);
		return KV_ESTATE;
	}
	slot = (uint32_t)(e - pd->req);
	pd->map[replica].slot[h] = PD_NONE;
	if (replica < pd->np) {
		/* the prefill half: the proxy sends the request on when
		 * the one token has reached it (rule P2) */
		e->first_sched = out->first_scheduled_ns;
		e->fe_in = out->frontend_in_ns;
		e->hit = out->cached_prefix_tokens;
		*drop = true;
		if (!e->held) {
			snprintf(why, whylen, "replica %u: request %llu "
				 "finished its prefill without its blocks "
				 "held", replica, (unsigned long long)out->id);
			return KV_ESTATE;
		}
		return sim_evq_push(pd->env.q, out->finish_ns,
				    SIM_EV_PD_HANDOFF, slot, NULL);
	}
	/* the decode half is the client's request (rules P2, P10) */
	out->arrival_ns = e->r.arrival_ns;
	out->first_scheduled_ns = e->first_sched;
	out->frontend_in_ns = e->fe_in;
	out->cached_prefix_tokens = e->hit;
	out->prefill_replica = e->pre;
	out->decode_replica = replica;
	out->kv_transfer_ns = e->xfer_ns;
	out->decode_queue_ns = e->xfer_start > e->dec_at ?
			       e->xfer_start - e->dec_at : 0;
	out->kv_transfer_bytes = e->bytes;
	req_free(pd, slot);
	return KV_OK;
}

/* The request reaches the decode pool (rule P2). */
static kv_err
handoff(sim_pd *pd, uint32_t slot, int64_t now, char *why, size_t whylen)
{
	struct pd_req *e = &pd->req[slot];
	struct wl_request r = e->r;
	uint32_t i;
	bool rej;
	kv_err rc;

	pd->handoffs++;
	i = pd->env.route(pd->env.ctx, &e->r, pd->np, pd->nd,
			  pd->side[1].router, &pd->rr[1]);
	e->dec = i;
	e->remote = true;
	r.arrival_ns = now;
	rc = replica_add(pd->env.rp[i], &r, &rej, why, whylen);
	if (rc != KV_OK)
		return rc;
	if (rej) {
		/* the decode side refuses it (max_model_len): counted as
		 * rejected there; the prefill side's blocks go */
		rc = release_prefill(pd, e, why, whylen);
		req_free(pd, slot);
		return rc;
	}
	e->dec_at = replica_admit_at(pd->env.rp[i]);
	if (map_push(pd, i, slot) != KV_OK)
		return pd_nomem(why, whylen);
	return pd->env.added(pd->env.ctx, i, now);
}

/* A transfer ended: the decode side's load is done, the prefill side's
 * blocks are freed (rule P7). */
static kv_err
xfer_done(sim_pd *pd, uint32_t slot, char *why, size_t whylen)
{
	struct pd_req *e = &pd->req[slot];
	kvs *s = replica_kvs(pd->env.rp[e->dec]);
	kv_err rc;

	if (kvs_load_done(s, e->dh, !e->expired) != KV_OK) {
		snprintf(why, whylen, "replica %u: load of request %llu: %s",
			 e->dec, (unsigned long long)e->r.id, kvs_errmsg(s));
		return KV_ESTATE;
	}
	pd->transfers++;
	pd->bytes += e->bytes;
	if ((rc = release_prefill(pd, e, why, whylen)) != KV_OK)
		return rc;
	return pd->env.wake(pd->env.ctx, e->dec, pd->now);
}

/* The oldest hold times out: its blocks go unless read (rule P6). */
static kv_err
expire(sim_pd *pd, char *why, size_t whylen)
{
	struct pd_hold h;
	struct pd_req *e;

	if (pd->hn == 0)
		return KV_OK;
	h = pd->hold[pd->hh++];
	pd->hn--;
	if (pd->hn > 0 && sim_evq_push(pd->env.q, pd->hold[pd->hh].t,
				       SIM_EV_PD_EXPIRE, 0, NULL) != KV_OK)
		return pd_nomem(why, whylen);
	e = &pd->req[h.slot];
	if (!e->live || e->gen != h.gen || e->released || e->started)
		return KV_OK;
	e->expired = true;
	return release_prefill(pd, e, why, whylen);
}

kv_err
sim_pd_event(sim_pd *pd, const struct sim_ev *ev, char *why, size_t whylen)
{
	pd->now = ev->t;
	switch (ev->kind) {
	case SIM_EV_PD_HANDOFF:
		return handoff(pd, ev->arg, ev->t, why, whylen);
	case SIM_EV_PD_XFER:
		return xfer_done(pd, ev->arg, why, whylen);
	case SIM_EV_PD_EXPIRE:
		return expire(pd, why, whylen);
	default:
		snprintf(why, whylen, "P/D event of unknown kind %u",
			 (unsigned)ev->kind);
		return KV_ESTATE;
	}
}
