/*
 * kv_offload.c -- the offloading connector (kvoffload.h): vLLM V1's
 * OffloadingConnector, scheduler side, over one CPU tier (KVO_NATIVE), or
 * an LMCache-like chain of tiers (KVO_LMCACHE), as kvsched.h connector
 * hooks for policy vllm-v1.  Rules O1-O24 of docs/offload.md; each tier is
 * a struct kvt (kv_tier.c).
 *
 * Units.  GPU blocks of bs tokens; an offloaded block (native) or chunk
 * (lmcache) of block_tokens = f * bs tokens, named by the chain hash of
 * its last GPU block (O2).  A tier slot holds one offloaded block; in the
 * pairs of a transfer a tier slot is split into its f GPU-block-sized
 * parts, part i of slot b being b * f + i, so every pair moves one GPU
 * block's bytes.
 *
 * Per request (indexed by kvs_req): the next offloaded block to store,
 * the stores in flight and the slots they wrote (pending until the
 * request finishes or is preempted, native O7), the loads in flight and
 * the slots they read.  Transfers are records found by id; kvo_started
 * hands out the new ones and frees the finished ones it handed out before.
 */
#include "kvoffload.h"
#include "kv_tier.h"
#include "kvs_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kvo__slot {
	uint8_t tier;
	int32_t slot;
};

struct kvo__slots {
	struct kvo__slot *a;
	uint32_t n, cap;
};

struct kvo__rq {
	uint32_t next;		/* next offloaded block to store */
	uint32_t nstore;	/* store transfers in flight */
	uint32_t nload;		/* load transfers in flight */
	bool storing;		/* vLLM's _reqs_being_stored has an entry */
	bool finished;		/* request_finished was called */
	bool held;		/* its blocks are held for the stores */
	bool loadfail;		/* a load transfer of its last load failed */
	struct kvo__slots pend;	/* slots of its stores, not yet ready */
};

struct kvo__x {
	struct kvo_xfer x;	/* x.pairs points into pairs */
	struct kvc_pair *pairs;
	struct kvo__slots slots;	/* load: read; store: written */
	uint64_t *up;		/* lmcache load: chunk hashes to copy up */
	uint32_t nup, capup;
	bool done, listed;
};

struct kvo {
	struct kvo_config cfg;
	kvs *s;
	uint32_t f;		/* GPU blocks per offloaded block */
	uint32_t bs;		/* GPU block size */
	struct kvt tier[KVO_MAX_TIERS];
	struct kvo_tier_stats st[KVO_MAX_TIERS];
	struct kvo__rq *rq;
	uint32_t nrq;
	struct kvo__x **x;	/* records, oldest first */
	uint32_t nx, capx;
	struct kvo_xfer *out;	/* kvo_started's answer */
	uint32_t capout;
	uint64_t nextid;
	uint64_t step;		/* the last step whose preemptions we saw */
	uint64_t *hbuf;		/* offloaded-block hashes of one request */
	uint32_t caphbuf;
	uint32_t *ibuf;
	int32_t *sbuf;
	uint32_t capibuf, capsbuf;
	char msg[256];
};

static kv_err
kvo__fail(kvo *o, kv_err e, const char *fmt, const char *arg)
{
	snprintf(o->msg, sizeof(o->msg), fmt, arg);
	return e;
}

static kv_err
kvo__grow(void **p, uint32_t *cap, uint32_t n, size_t sz)
{
	uint32_t c = *cap ? *cap : 8;
	void *q;

	if (n <= *cap)
		return KV_OK;
	while (c < n)
		c *= 2;
	if ((q = realloc(*p, (size_t)c * sz)) == NULL)
		return KV_ENOMEM;
	*p = q;
	*cap = c;
	return KV_OK;
}

static kv_err
kvo__slots_push(struct kvo__slots *v, uint8_t tier, int32_t slot)
{
	if (kvo__grow((void **)&v->a, &v->cap, v->n + 1, sizeof(*v->a)) !=
	    KV_OK)
		return KV_ENOMEM;
	v->a[v->n].tier = tier;
	v->a[v->n++].slot = slot;
	return KV_OK;
}

/* ---- lifecycle ---------------------------------------------------- */

static kv_err
kvo__check_config(const struct kvo_config *c, char *why, size_t whylen)
{
	if (c->kind != KVO_NATIVE && c->kind != KVO_LMCACHE) {
		snprintf(why, whylen, "unknown offload kind %d", (int)c->kind);
		return KV_ECONFIG;
	}
	if (c->block_tokens == 0) {
		snprintf(why, whylen, "offload block_tokens must be positive");
		return KV_ECONFIG;
	}
	if (c->ntiers == 0 || c->ntiers > KVO_MAX_TIERS ||
	    (c->kind == KVO_NATIVE && c->ntiers != 1)) {
		snprintf(why, whylen, "offload %s: %u tiers (native: 1; "
			 "lmcache: 1 to %d)", c->kind == KVO_NATIVE ?
			 "native" : "lmcache", c->ntiers, KVO_MAX_TIERS);
		return KV_ECONFIG;
	}
	for (uint32_t i = 0; i < c->ntiers; i++)
		if (c->tier[i].blocks > INT32_MAX / 2) {
			snprintf(why, whylen, "offload tier %u: %llu blocks "
				 "(at most %d)", i,
				 (unsigned long long)c->tier[i].blocks,
				 INT32_MAX / 2);
			return KV_ECONFIG;
		}
	return KV_OK;
}

kvo *
kvo_new(const struct kvo_config *c, kv_err *err, char *why, size_t whylen)
{
	kvo *o;
	kv_err e;

	if (why != NULL && whylen > 0)
		why[0] = '\0';
	if ((e = kvo__check_config(c, why, whylen)) != KV_OK) {
		*err = e;
		return NULL;
	}
	if ((o = calloc(1, sizeof(*o))) == NULL) {
		*err = KV_ENOMEM;
		return NULL;
	}
	o->cfg = *c;
	for (uint32_t i = 0; i < c->ntiers; i++) {
		o->cfg.tier[i].name[sizeof(o->cfg.tier[i].name) - 1] = '\0';
		if (kvt_init(&o->tier[i], (uint32_t)c->tier[i].blocks) !=
		    KV_OK) {
			kvo_free(o);
			*err = KV_ENOMEM;
			return NULL;
		}
		o->st[i].capacity_blocks = c->tier[i].blocks;
	}
	*err = KV_OK;
	return o;
}

static void
kvo__x_free(struct kvo__x *x)
{
	if (x == NULL)
		return;
	free(x->pairs);
	free(x->slots.a);
	free(x->up);
	free(x);
}

void
kvo_free(kvo *o)
{
	if (o == NULL)
		return;
	for (uint32_t i = 0; i < KVO_MAX_TIERS; i++)
		kvt_release(&o->tier[i]);
	for (uint32_t i = 0; i < o->nrq; i++)
		free(o->rq[i].pend.a);
	for (uint32_t i = 0; i < o->nx; i++)
		kvo__x_free(o->x[i]);
	free(o->rq);
	free(o->x);
	free(o->out);
	free(o->hbuf);
	free(o->ibuf);
	free(o->sbuf);
	free(o);
}

uint32_t
kvo_ntiers(const kvo *o)
{
	return o->cfg.ntiers;
}

const struct kvo_tier_stats *
kvo_stats(const kvo *o, uint32_t tier)
{
	struct kvo_tier_stats *st;

	if (tier >= o->cfg.ntiers)
		return NULL;
	st = (struct kvo_tier_stats *)&o->st[tier];
	st->used_blocks = kvt_used(&o->tier[tier]);
	st->evicted_blocks = o->tier[tier].evicted;
	return st;
}

const char *
kvo_errmsg(const kvo *o)
{
	return o->msg;
}

int
kvo_check(const kvo *o, char *why, size_t whylen)
{
	for (uint32_t i = 0; i < o->cfg.ntiers; i++) {
		int rc = kvt_check(&o->tier[i], why, whylen);

		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ---- requests and hashes ------------------------------------------ */

static struct kvo__rq *
kvo__rq(kvo *o, kvs_req r)
{
	uint32_t cap = o->nrq;

	if (r < 0)
		return NULL;
	if ((uint32_t)r >= o->nrq) {
		struct kvo__rq *q;

		cap = cap ? cap : 64;
		while (cap <= (uint32_t)r)
			cap *= 2;
		if ((q = realloc(o->rq, cap * sizeof(*q))) == NULL)
			return NULL;
		memset(q + o->nrq, 0, (cap - o->nrq) * sizeof(*q));
		o->rq = q;
		o->nrq = cap;
	}
	return &o->rq[r];
}

/*
 * The hashes of r's first nb offloaded blocks into o->hbuf (O2: the hash
 * of each one's last GPU block); nb is cut to the full blocks r has.
 */
static kv_err
kvo__hashes(kvo *o, kvs_req r, uint32_t *nb)
{
	kvc *k = kvs_kv(o->s);
	const uint64_t *h;
	uint32_t n;
	kv_err e;

	if ((e = kvc__v1_hashes(k, kvs_req_seq(o->s, r), &h, &n)) != KV_OK)
		return kvo__fail(o, e, "offload: %s", kvc_errmsg(k));
	if (*nb > n / o->f)
		*nb = n / o->f;
	if (kvo__grow((void **)&o->hbuf, &o->caphbuf, *nb + 1,
		      sizeof(*o->hbuf)) != KV_OK)
		return KV_ENOMEM;
	for (uint32_t j = 0; j < *nb; j++)
		o->hbuf[j] = h[(size_t)j * o->f + o->f - 1];
	return KV_OK;
}

static kv_err
kvo__bufs(kvo *o, uint32_t n)
{
	if (kvo__grow((void **)&o->ibuf, &o->capibuf, n, sizeof(*o->ibuf)) !=
	    KV_OK ||
	    kvo__grow((void **)&o->sbuf, &o->capsbuf, n, sizeof(*o->sbuf)) !=
	    KV_OK)
		return KV_ENOMEM;
	return KV_OK;
}

/* A new transfer record, not yet listed. */
static struct kvo__x *
kvo__x_new(kvo *o, kvs_req r, uint32_t tier, enum kvo_dir dir,
	   uint32_t npairs)
{
	struct kvo__x *x;

	if (kvo__grow((void **)&o->x, &o->capx, o->nx + 1, sizeof(*o->x)) !=
	    KV_OK)
		return NULL;
	if ((x = calloc(1, sizeof(*x))) == NULL)
		return NULL;
	if ((x->pairs = malloc((npairs ? npairs : 1) * sizeof(*x->pairs))) ==
	    NULL) {
		free(x);
		return NULL;
	}
	x->x.id = o->nextid++;
	x->x.req = r;
	x->x.tier = (uint8_t)tier;
	x->x.dir = (uint8_t)dir;
	x->x.pairs = x->pairs;
	o->x[o->nx++] = x;
	return x;
}

/* ---- stores (O3-O8, O21) -------------------------------------------- */

/* The pending stores of q become hits (complete_store). */
static void
kvo__ready(kvo *o, struct kvo__rq *q)
{
	for (uint32_t i = 0; i < q->pend.n; i++)
		kvt_store_end(&o->tier[q->pend.a[i].tier], q->pend.a[i].slot,
			      true);
	q->pend.n = 0;
	q->storing = false;
	if (q->finished) {
		free(q->pend.a);
		q->pend.a = NULL;
		q->pend.cap = 0;
	}
}

/* One tier's store of offloaded blocks [start, nb) of r (hashes in hbuf);
 * false when the tier cannot take them (O8). */
static kv_err
kvo__store_tier(kvo *o, kvs_req r, struct kvo__rq *q, uint32_t t,
		uint32_t start, uint32_t nb, bool *taken)
{
	kvc *k = kvs_kv(o->s);
	const int32_t *tab;
	size_t ntab;
	uint32_t nnew, nev;
	struct kvo__x *x;

	*taken = false;
	if (kvo__bufs(o, nb - start) != KV_OK)
		return KV_ENOMEM;
	if (kvt_store_begin(&o->tier[t], o->hbuf + start, nb - start, o->ibuf,
			    o->sbuf, &nnew, &nev) != KV_OK)
		return KV_OK;
	*taken = true;
	if (nnew == 0)
		return KV_OK;
	kvt_touch(&o->tier[t], o->hbuf, nb);
	tab = kvc_table(k, kvs_req_seq(o->s, r), 0, &ntab);
	if ((x = kvo__x_new(o, r, t, KVO_STORE, nnew * o->f)) == NULL)
		return KV_ENOMEM;
	for (uint32_t i = 0; i < nnew; i++) {
		uint32_t j = start + o->ibuf[i];

		for (uint32_t p = 0; p < o->f; p++) {
			size_t g = (size_t)j * o->f + p;

			x->pairs[x->x.npairs].src = g < ntab ? tab[g] : -1;
			x->pairs[x->x.npairs++].dst =
			    o->sbuf[i] * (int32_t)o->f + (int32_t)p;
		}
		if (kvo__slots_push(&x->slots, (uint8_t)t, o->sbuf[i]) !=
		    KV_OK ||
		    kvo__slots_push(&q->pend, (uint8_t)t, o->sbuf[i]) != KV_OK)
			return KV_ENOMEM;
	}
	x->x.nblocks = x->x.npairs;
	x->x.ntokens = x->x.npairs * o->bs;
	o->st[t].store_blocks += nnew;
	q->nstore++;
	q->storing = true;
	return KV_OK;
}

/* _get_reqs_to_store for r, whose computed tokens reached `to` (O3). */
static kv_err
kvo__store(kvo *o, kvs_req r, struct kvo__rq *q, uint32_t to)
{
	uint32_t nb = to / o->cfg.block_tokens, start = q->next;
	bool any = false;
	kv_err e;

	if (nb <= start)
		return KV_OK;
	if ((e = kvo__hashes(o, r, &nb)) != KV_OK)
		return e;
	if (nb <= start)
		return KV_OK;
	for (uint32_t t = 0; t < o->cfg.ntiers; t++) {
		bool taken;

		if ((e = kvo__store_tier(o, r, q, t, start, nb, &taken)) !=
		    KV_OK)
			return e;
		any |= taken;
	}
	if (any || o->cfg.kind == KVO_LMCACHE)
		q->next = nb;
	return KV_OK;
}

/* ---- preemption (O7) ---------------------------------------------- */

/* Once per step: the stores of requests it preempted become hits. */
static void
kvo__sync(kvo *o)
{
	const struct kvs_step *st = kvs_current_step(o->s);

	if (st == NULL || st->number == o->step)
		return;
	o->step = st->number;
	for (uint32_t i = 0; i < st->npreempt; i++) {
		struct kvo__rq *q = kvo__rq(o, st->preempt[i]);

		if (q != NULL && q->storing)
			kvo__ready(o, q);
	}
}

/* ---- hooks -------------------------------------------------------- */

/* The tier nearest the GPU holding hash h ready, or -1 (O23). */
static int
kvo__nearest(const kvo *o, uint64_t h)
{
	for (uint32_t t = 0; t < o->cfg.ntiers; t++)
		if (kvt_lookup(&o->tier[t], &h, 1) == 1)
			return (int)t;
	return -1;
}

/* get_num_new_matched_tokens (O9-O12, O23). */
static kv_err
kvo__match(void *ctx, kvs *s, kvs_req r, uint32_t local, uint32_t *ext)
{
	kvo *o = ctx;
	uint32_t B = o->cfg.block_tokens, ntok, nb, start, hits = 0;
	kv_err e;

	(void)s;
	*ext = 0;
	kvo__sync(o);
	ntok = (uint32_t)kvc_seq_len(kvs_kv(o->s), kvs_req_seq(o->s, r));
	nb = ntok / B;
	if ((e = kvo__hashes(o, r, &nb)) != KV_OK)
		return e;
	for (uint32_t t = 0; t < o->cfg.ntiers; t++)
		kvt_touch(&o->tier[t], o->hbuf, nb);
	if ((uint64_t)nb * B < (uint64_t)local + B)
		return KV_OK;
	start = local / B;
	if (o->cfg.kind == KVO_NATIVE)
		hits = kvt_lookup(&o->tier[0], o->hbuf + start, nb - start);
	else
		while (start + hits < nb &&
		       kvo__nearest(o, o->hbuf[start + hits]) >= 0)
			hits++;
	if (hits == 0 || (start + hits) * B - local < B)
		return KV_OK;
	*ext = (start + hits) * B - local;
	return KV_OK;
}

/* What one load brings: tokens [lo, hi) into GPU blocks [g0, g1). */
struct kvo__span {
	uint32_t lo, hi, g0, g1;
	const int32_t *tab;
};

/* The load pairs of offloaded block j from slot b of tier t (O14). */
static kv_err
kvo__load_block(kvo *o, struct kvo__x **xt, kvs_req r, uint32_t t,
		uint32_t j, int32_t b, const struct kvo__span *sp)
{
	struct kvo__x *x = xt[t];

	if (x == NULL && (x = xt[t] = kvo__x_new(o, r, t, KVO_LOAD,
						  sp->g1 - sp->g0)) == NULL)
		return KV_ENOMEM;
	for (uint32_t p = 0; p < o->f; p++) {
		uint32_t g = j * o->f + p, a, z;

		if (g < sp->g0 || g >= sp->g1)
			continue;
		x->pairs[x->x.npairs].src = b * (int32_t)o->f + (int32_t)p;
		x->pairs[x->x.npairs++].dst = sp->tab[g];
		a = g * o->bs > sp->lo ? g * o->bs : sp->lo;
		z = (g + 1) * o->bs < sp->hi ? (g + 1) * o->bs : sp->hi;
		x->x.ntokens += z - a;
		o->st[t].hit_tokens += z - a;
	}
	if (kvo__slots_push(&x->slots, (uint8_t)t, b) != KV_OK)
		return KV_ENOMEM;
	if (t > 0) {
		if (kvo__grow((void **)&x->up, &x->capup, x->nup + 1,
			      sizeof(*x->up)) != KV_OK)
			return KV_ENOMEM;
		x->up[x->nup++] = o->hbuf[j];
	}
	o->st[t].load_blocks++;
	return KV_OK;
}

/* update_state_after_alloc (O13-O15, O23). */
static kv_err
kvo__alloc(void *ctx, kvs *s, kvs_req r, uint32_t local, uint32_t ext)
{
	kvo *o = ctx;
	struct kvo__rq *q = kvo__rq(o, r);
	uint32_t B = o->cfg.block_tokens, end = local + ext, nb, ntok;
	struct kvo__x *xt[KVO_MAX_TIERS] = { NULL };
	struct kvo__span sp;
	size_t ntab;
	kv_err e;

	(void)s;
	if (q == NULL)
		return KV_ENOMEM;
	kvo__sync(o);
	q->loadfail = false;
	ntok = (uint32_t)kvc_seq_len(kvs_kv(o->s), kvs_req_seq(o->s, r));
	for (uint32_t t = 0; t < o->cfg.ntiers; t++)
		o->st[t].lookup_tokens += ntok > local ? ntok - local : 0;
	if (ext == 0)
		return KV_OK;
	nb = (end + B - 1) / B;
	if ((e = kvo__hashes(o, r, &nb)) != KV_OK)
		return e;
	sp.tab = kvc_table(kvs_kv(o->s), kvs_req_seq(o->s, r), 0, &ntab);
	sp.lo = local;
	sp.hi = end;
	sp.g0 = local / o->bs;
	sp.g1 = (end + o->bs - 1) / o->bs;
	if (sp.g1 > ntab || nb * B < end)
		return kvo__fail(o, KV_EINVAL, "offload: load past the "
				 "request's blocks%s", "");
	for (uint32_t j = local / B; j < nb; j++) {
		int t = o->cfg.kind == KVO_NATIVE ? 0 :
		    kvo__nearest(o, o->hbuf[j]);
		int32_t b = t < 0 ? -1 : kvt_load_begin(&o->tier[t],
							 o->hbuf[j]);

		if (b < 0)
			return kvo__fail(o, KV_EINVAL, "offload: a block to "
					 "load is not ready%s", "");
		if ((e = kvo__load_block(o, xt, r, (uint32_t)t, j, b, &sp)) !=
		    KV_OK)
			return e;
	}
	for (uint32_t t = 0; t < o->cfg.ntiers; t++)
		if (xt[t] != NULL) {
			xt[t]->x.nblocks = xt[t]->x.npairs;
			q->nload++;
		}
	q->next = end / B;
	return KV_OK;
}

/* The computed hook: stores after compute (O3). */
static kv_err
kvo__computed(void *ctx, kvs *s, kvs_req r, uint32_t from, uint32_t to)
{
	kvo *o = ctx;
	struct kvo__rq *q = kvo__rq(o, r);

	(void)s;
	(void)from;
	if (q == NULL)
		return KV_ENOMEM;
	kvo__sync(o);
	if (q->finished)
		return KV_OK;
	return kvo__store(o, r, q, to);
}

/* request_finished (O17-O19). */
static kv_err
kvo__finished(void *ctx, kvs *s, kvs_req r, bool *hold)
{
	kvo *o = ctx;
	struct kvo__rq *q = kvo__rq(o, r);
	kv_err e;

	(void)s;
	*hold = false;
	if (q == NULL)
		return KV_ENOMEM;
	kvo__sync(o);
	/* the blocks the finishing step filled (the computed hook comes
	 * after this one); an abort comes between steps: nothing new */
	if (!q->finished && q->nload == 0 &&
	    kvs_req_status(o->s, r) != KVS_ABORTED) {
		uint32_t to = (uint32_t)kvc_seq_computed(kvs_kv(o->s),
							 kvs_req_seq(o->s,
								     r));

		if ((e = kvo__store(o, r, q, to)) != KV_OK)
			return e;
	}
	q->finished = true;
	if (q->nstore > 0) {
		*hold = q->held = true;
		return KV_OK;
	}
	kvo__ready(o, q);
	return KV_OK;
}

kv_err
kvo_attach(kvo *o, kvs *s)
{
	struct kvs_connector c = {
		.ctx = o, .match = kvo__match, .alloc = kvo__alloc,
		.computed = kvo__computed, .finished = kvo__finished
	};
	const struct kvc_config *kc = kvc_config_of(kvs_kv(s));
	uint32_t bs = kc->group[0].block_size;
	kv_err e;

	o->msg[0] = '\0';
	if (kc->mode != KVC_VLLM_V1 || !kc->prefix_caching)
		return kvo__fail(o, KV_ENOTSUP, "offload needs policy vllm-v1 "
				 "with prefix caching%s", "");
	if (bs == 0 || o->cfg.block_tokens % bs != 0) {
		snprintf(o->msg, sizeof(o->msg), "offload block of %u tokens "
			 "is not a multiple of the GPU block size %u",
			 o->cfg.block_tokens, bs);
		return KV_ECONFIG;
	}
	o->bs = bs;
	o->f = o->cfg.block_tokens / bs;
	o->s = s;
	if ((e = kvs_set_connector(s, &c)) != KV_OK)
		return kvo__fail(o, e, "%s", kvs_errmsg(s));
	return KV_OK;
}

/* ---- transfers ---------------------------------------------------- */

uint32_t
kvo_started(kvo *o, const struct kvo_xfer **out)
{
	uint32_t n = 0, keep = 0;

	for (uint32_t i = 0; i < o->nx; i++) {
		struct kvo__x *x = o->x[i];

		if (x->done && x->listed)
			kvo__x_free(x);
		else
			o->x[keep++] = x;
	}
	o->nx = keep;
	if (kvo__grow((void **)&o->out, &o->capout, o->nx + 1,
		      sizeof(*o->out)) != KV_OK) {
		*out = NULL;
		return 0;
	}
	for (uint32_t i = 0; i < o->nx; i++)
		if (!o->x[i]->listed) {
			o->x[i]->listed = true;
			o->out[n++] = o->x[i]->x;
		}
	*out = o->out;
	return n;
}

/* A load transfer finished: complete_load (O15), copy up (O24),
 * kvs_load_done (O13). */
static kv_err
kvo__load_done(kvo *o, struct kvo__x *x, struct kvo__rq *q, bool ok)
{
	for (uint32_t i = 0; i < x->slots.n; i++)
		kvt_load_end(&o->tier[x->slots.a[i].tier], x->slots.a[i].slot);
	for (uint32_t i = 0; ok && i < x->nup; i++) {
		int32_t b;
		uint32_t nev;

		if (kvt_put_ready(&o->tier[0], x->up[i], &b, &nev) == KV_OK)
			o->st[0].store_blocks++;
	}
	if (!ok)
		q->loadfail = true;
	if (q->nload > 0 && --q->nload > 0)
		return KV_OK;
	/* an aborted request's blocks are freed by this call too */
	return kvs_load_done(o->s, x->x.req, !q->loadfail);
}

/* complete_store of slot v if it is still pending for q. */
static void
kvo__unpend(kvo *o, struct kvo__rq *q, struct kvo__slot v, bool ok)
{
	for (uint32_t j = 0; j < q->pend.n; j++)
		if (q->pend.a[j].tier == v.tier &&
		    q->pend.a[j].slot == v.slot) {
			kvt_store_end(&o->tier[v.tier], v.slot, ok);
			q->pend.a[j] = q->pend.a[--q->pend.n];
			return;
		}
}

/* A store transfer finished (O6, O7, O17, O22). */
static kv_err
kvo__store_done(kvo *o, struct kvo__x *x, struct kvo__rq *q, bool ok)
{
	/* native: a success waits for the request's end (O7); a slot no
	 * longer pending for q (made ready at a preemption, maybe evicted
	 * and reused since) is not q's to end */
	if (!ok || o->cfg.kind == KVO_LMCACHE)
		for (uint32_t i = 0; i < x->slots.n; i++)
			kvo__unpend(o, q, x->slots.a[i], ok);
	if (q->nstore > 0)
		q->nstore--;
	if (q->nstore > 0 || !q->finished)
		return KV_OK;
	kvo__ready(o, q);
	if (!q->held)
		return KV_OK;
	q->held = false;
	return kvs_release(o->s, x->x.req);
}

kv_err
kvo_done(kvo *o, uint64_t id, bool ok)
{
	struct kvo__x *x = NULL;
	struct kvo__rq *q;

	o->msg[0] = '\0';
	for (uint32_t i = 0; i < o->nx && x == NULL; i++)
		if (o->x[i]->x.id == id && !o->x[i]->done)
			x = o->x[i];
	if (x == NULL) {
		snprintf(o->msg, sizeof(o->msg), "no transfer %llu in flight",
			 (unsigned long long)id);
		return KV_ENOENT;
	}
	x->done = true;
	if ((q = kvo__rq(o, x->x.req)) == NULL)
		return KV_ENOMEM;
	if (x->x.dir == KVO_LOAD)
		return kvo__load_done(o, x, q, ok);
	return kvo__store_done(o, x, q, ok);
}
