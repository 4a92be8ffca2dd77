/*
 * validate.c -- the verifier (kvval.h).
 *
 * Per request (by kvs handle) it keeps how many positions hold KV data
 * (valid), how many table entries of each group it has seen (nblk),
 * whether it must be checked whole at the next computed() (full), and the
 * content key of its last written position, so a decode step costs O(1)
 * keys.
 *
 * Groups.  Every KV cache group of the allocator is executed.  All groups
 * share one page size (vLLM's hybrid page-size unification): a pool block
 * has `bs` slots, at least the block size of every full or sliding group
 * (kvval_pool); a group of a smaller block size uses the first slots of
 * its pages.  Position p of a full or sliding group lies in table entry
 * p / bs_g, slot p % bs_g, with the group's key (kvgpu_group_key); a
 * sliding group's null entries (blocks that left the window) are skipped.
 * A state group's state after T tokens is in the table entry of token
 * T - 1 (state_at), in its first state_slots slots (kvgpu_state_key),
 * rewritten at every step; a full block of a smaller state block size
 * (Mamba prefix caching) keeps the state at its end.  Where groups share
 * the pool's ids (every mode but deepspeed) a block id is a pool block;
 * deepspeed gives every group its own ids, so group g's block b is pool
 * block g * gpu_blocks + b (deepspeed never copies blocks).
 *
 * Poison rule: a table entry the request had not seen before, for
 * positions it has not computed, is poisoned before the step writes it --
 * unless the block already holds this request's own data there.  Per
 * block of each pool the verifier records how many leading slots hold
 * data (written since the block was last poisoned or copied over) and the
 * slot key of the last of them; a block whose last such slot has the key
 * this request would write at that position holds a prefix of its data
 * (keys chain the tokens), and a real engine computing those positions
 * again rewrites the same KV.  That is the block a request meets when it
 * computes again what it shares -- vLLM v0 schedules a request with the
 * cached-token count it memoised before its blocks were cached, and
 * recomputes blocks a running request or the cache holds -- and poisoning
 * it would spoil the other holder's data (a false failure).  Any other
 * new block is fresh; if the allocator ever handed out a block another
 * request still uses for other data, the poison shows in that request's
 * next check.
 *
 * Cost: a step costs O(tokens written + blocks moved); a whole check costs
 * O(context) and happens on admission, swap-in, recompute, CoW and finish
 * only.  Memory: one small record per request ever seen, a few words per
 * device block, and scratch lists that grow to the largest step.
 */
#include "config.h"

#include "gpu/kvval.h"
#include "gpu/kv_pattern.h"
#include "core/kvoffload.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vreq {
	uint32_t valid;		/* positions 0..valid-1 hold KV data */
	uint32_t kpos;		/* khash = key(kpos - 1) */
	uint8_t running, full;
	uint64_t khash;
	uint32_t nblk[KVC_MAX_GROUPS];	/* table entries seen while running */
};

/* A slot's group in the verify list; VSTATE marks a state slot. */
#define VSTATE 0x80u

struct vrange {
	kvs_req r;
	size_t from;		/* first slot in the verify list */
};

struct kvval {
	kvgpu *g;
	struct kvval_opts o;
	struct kvval_stats st;
	uint32_t bs, nblocks;
	bool ready;		/* groups read from the allocator */
	uint32_t ng, ntokg, nstg;
	uint32_t tokg[KVC_MAX_GROUPS];	/* full and sliding groups */
	uint32_t stg[KVC_MAX_GROUPS];	/* state groups */
	uint32_t gbs[KVC_MAX_GROUPS];	/* block size per group */
	bool gstate[KVC_MAX_GROUPS];	/* a state group */
	uint32_t stride;	/* pool blocks per group's ids (deepspeed) */
	uint32_t sslots;	/* slots a state occupies */
	uint64_t nnull;		/* null slots met since the last list */
	struct vreq *req;
	size_t capreq;
	struct kvgpu_slot *slot;
	uint8_t *sgrp;		/* per slot: group, | VSTATE */
	size_t nslot, capslot, capsgrp;
	struct kvgpu_pair *pair;
	size_t cappair;
	int32_t *blk;
	size_t nblk, capblk;
	struct vrange *vr;
	size_t nvr, capvr;
	uint64_t *stamp;	/* per device block: last scan or CoW mark */
	uint32_t *fill;		/* per device block: written slots */
	uint8_t *seen;		/* per block of either pool: dedup */
	uint32_t *cfill[KVGPU_NSIDES];	/* per block of a pool (kvgpu_side),
				 * tier pools grown with them: leading
				 * slots holding data since its last poison */
	uint64_t *ckey[KVGPU_NSIDES];	/* the slot key of the last of
					 * them */
	size_t ntier[KVGPU_MAX_TIERS];	/* blocks of cfill, ckey of a tier */
	uint64_t tick;
	uint32_t *start;	/* skip_stale: the step's starts past them */
	size_t capstart;
};

static int
grow(void *pp, size_t *cap, size_t need, size_t size)
{
	void **p = pp;
	size_t n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * size);
	if (q == NULL)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

kvval *
kvval_new(kvgpu *g, const struct kvval_opts *o)
{
	kvval *v = calloc(1, sizeof(*v));
	const struct kvgpu_geom *geo = kvgpu_geom_of(g);

	if (v == NULL)
		return NULL;
	v->g = g;
	v->o = *o;
	v->bs = geo->block_size;
	v->nblocks = geo->dev_blocks;
	v->stamp = calloc(v->nblocks, sizeof(*v->stamp));
	v->fill = calloc(v->nblocks, sizeof(*v->fill));
	v->seen = calloc((size_t)(geo->dev_blocks > geo->host_blocks ?
				  geo->dev_blocks : geo->host_blocks), 1);
	v->cfill[KVGPU_DEV] = calloc(v->nblocks, sizeof(uint32_t));
	v->ckey[KVGPU_DEV] = calloc(v->nblocks, sizeof(uint64_t));
	v->cfill[KVGPU_HOST] = calloc((size_t)geo->host_blocks + 1,
				      sizeof(uint32_t));
	v->ckey[KVGPU_HOST] = calloc((size_t)geo->host_blocks + 1,
				     sizeof(uint64_t));
	if (v->stamp == NULL || v->fill == NULL || v->seen == NULL ||
	    v->cfill[0] == NULL || v->cfill[1] == NULL ||
	    v->ckey[0] == NULL || v->ckey[1] == NULL) {
		kvval_free(v);
		return NULL;
	}
	return v;
}

void
kvval_free(kvval *v)
{
	if (v == NULL)
		return;
	free(v->req);
	free(v->slot);
	free(v->sgrp);
	free(v->pair);
	free(v->blk);
	free(v->vr);
	free(v->stamp);
	free(v->fill);
	free(v->seen);
	free(v->start);
	for (int i = 0; i < KVGPU_NSIDES; i++) {
		free(v->cfill[i]);
		free(v->ckey[i]);
	}
	free(v);
}

const struct kvval_stats *
kvval_stats(const kvval *v)
{
	return &v->st;
}

static int
oom(char *why, size_t len)
{
	snprintf(why, len, "verifier: out of memory");
	return 1;
}

static int
dev_fail(kvval *v, const char *what, char *why, size_t len)
{
	snprintf(why, len, "%s: %s: %s", kvgpu_name(v->g), what,
		 kvgpu_errmsg(v->g));
	return 1;
}

static void failure(kvval *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
failure(kvval *v, const char *fmt, ...)
{
	va_list ap;

	if (v->st.failures++ > 0)
		return;
	va_start(ap, fmt);
	vsnprintf(v->st.first_failure, sizeof(v->st.first_failure), fmt, ap);
	va_end(ap);
}

static struct vreq *
vreq_of(kvval *v, kvs_req r)
{
	size_t old = v->capreq;

	if ((size_t)r >= v->capreq) {
		if (grow(&v->req, &v->capreq, (size_t)r + 1, sizeof(*v->req)))
			return NULL;
		memset(v->req + old, 0, (v->capreq - old) * sizeof(*v->req));
	}
	return &v->req[r];
}

/* ---- groups ------------------------------------------------------------ */

void
kvval_pool(const struct kvc_config *kc, uint32_t ngroups,
	   struct kvval_pool *out)
{
	uint32_t bs = 0;

	for (uint32_t g = 0; g < ngroups; g++) {
		uint32_t b = kc->group[g].block_size ?
			     kc->group[g].block_size : kc->block_size;

		if (kc->group[g].kind != KVC_STATE && b > bs)
			bs = b;
	}
	out->block_size = bs ? bs : kc->block_size;
	out->dev_blocks = kc->gpu_blocks;
	if (kc->mode == KVC_DEEPSPEED && ngroups > 1)
		out->dev_blocks *= ngroups;
	out->host_blocks = kc->cpu_blocks;
}

/* Read the allocator's groups once; refuse a pool that cannot hold them. */
static int
setup(kvval *v, kvs *s, char *why, size_t len)
{
	const kvc *k = kvs_kv(s);
	const struct kvc_config *kc = kvc_config_of(k);
	const struct kvgpu_geom *geo = kvgpu_geom_of(v->g);
	struct kvval_pool want;

	if (v->ready)
		return 0;
	v->ng = kvc_ngroups(k);
	if (v->ng == 0 || v->ng > KVC_MAX_GROUPS) {
		snprintf(why, len, "verifier: %u KV cache groups", v->ng);
		return 1;
	}
	kvval_pool(kc, v->ng, &want);
	if (want.block_size > v->bs || want.dev_blocks > geo->dev_blocks ||
	    want.host_blocks > geo->host_blocks) {
		snprintf(why, len, "verifier: the backend's pools (%u and %u "
			 "blocks of %u slots) cannot hold the allocator's "
			 "(%u and %u of %u)", geo->dev_blocks,
			 geo->host_blocks, v->bs, want.dev_blocks,
			 want.host_blocks, want.block_size);
		return 1;
	}
	v->stride = kc->mode == KVC_DEEPSPEED && v->ng > 1 ?
		    kc->gpu_blocks : 0;
	v->ntokg = v->nstg = 0;
	for (uint32_t g = 0; g < v->ng; g++) {
		v->gbs[g] = kc->group[g].block_size ?
			    kc->group[g].block_size : kc->block_size;
		v->gstate[g] = kc->group[g].kind == KVC_STATE;
		if (v->gstate[g])
			v->stg[v->nstg++] = g;
		else
			v->tokg[v->ntokg++] = g;
	}
	v->sslots = v->o.state_slots && v->o.state_slots < v->bs ?
		    v->o.state_slots : v->bs;
	v->ready = true;
	return 0;
}

/* The pool block of id in group g (device side; host ids are shared). */
static inline int32_t
pidx(const kvval *v, enum kvgpu_side side, uint32_t g, int32_t id)
{
	return side == KVGPU_DEV ? (int32_t)(g * v->stride) + id : id;
}

/*
 * The entry of state group g's table that holds the state after T > 0
 * tokens: the block of token T - 1, or the table's last entry when it is
 * shorter (a state group of one entry whatever its block size: kvsim's
 * exact mode).  With vLLM's Mamba prefix caching (a block of 512 tokens,
 * not max_model_len) every full block keeps the state at its end, which
 * a later request's hit on that block reads.  -1: no such entry, or null.
 */
static int64_t
state_at(const kvval *v, uint32_t g, const int32_t *tab, size_t ntab,
	 uint32_t T)
{
	size_t e;

	if (T == 0 || ntab == 0)
		return -1;
	e = (T - 1) / v->gbs[g];
	if (e >= ntab)
		e = ntab - 1;
	return tab[e] != KVC_NULL ? (int64_t)e : -1;
}

/* ---- what each block holds -------------------------------------------- */

/* The blocks were poisoned: none of their slots holds data. */
static void
forget(kvval *v, enum kvgpu_side side, const int32_t *blk, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v->cfill[side][blk[i]] = 0;
}

/* Slots v->slot were written on the device. */
static void
record(kvval *v)
{
	for (size_t i = 0; i < v->nslot; i++) {
		const struct kvgpu_slot *x = &v->slot[i];

		if (x->slot + 1 >= v->cfill[KVGPU_DEV][x->block]) {
			v->cfill[KVGPU_DEV][x->block] = x->slot + 1;
			v->ckey[KVGPU_DEV][x->block] = x->key;
		}
	}
}

/* A key chain over a request's tokens: key(pos - 1) (KVGPU_KEY_ROOT at
 * pos 0), moved forward on demand, restarted from 0 to go back. */
struct chain {
	const uint32_t *tok;
	size_t ntok;
	uint32_t pos;
	uint64_t key;
};

/* The content key of position p (p < c->ntok). */
static uint64_t
chain_key(struct chain *c, uint32_t p)
{
	if (c->pos > p + 1) {
		c->pos = 0;
		c->key = KVGPU_KEY_ROOT;
	}
	for (; c->pos <= p; c->pos++)
		c->key = kvgpu_key_next(c->key, c->tok[c->pos]);
	return c->key;
}

/*
 * Whether device block id, entry b of token group g of a request (tokens
 * in c), already holds the request's data in every slot that holds data:
 * then the step may rewrite them, and poisoning would spoil the block for
 * its other holders (validate.c's poison rule).
 */
static bool
holds_own(kvval *v, struct chain *c, uint32_t g, size_t b, int32_t id)
{
	uint32_t f = v->cfill[KVGPU_DEV][id];
	uint64_t last = (uint64_t)b * v->gbs[g] + f - 1;

	if (f == 0 || f > v->gbs[g] || last >= c->ntok)
		return false;
	return v->ckey[KVGPU_DEV][id] ==
	       kvgpu_group_key(chain_key(c, (uint32_t)last), g);
}

/* ---- slot lists ------------------------------------------------------- */

/* Append one slot; room is the caller's. */
static void
push_slot(kvval *v, int32_t block, uint32_t slot, uint32_t pos, uint64_t key,
	  uint8_t grp)
{
	v->sgrp[v->nslot] = grp;
	v->slot[v->nslot++] = (struct kvgpu_slot){
		.block = block, .slot = slot, .pos = pos, .key = key };
}

/* Append the state after `to` tokens (key = key(to - 1)) of every state
 * group; room is the caller's. */
static void
add_states(kvval *v, kvs_req r, enum kvgpu_side side,
	   const int32_t *const *tab, const size_t *ntab, uint64_t key,
	   uint32_t to)
{
	for (uint32_t i = 0; i < v->nstg; i++) {
		uint32_t g = v->stg[i];
		int64_t e = state_at(v, g, tab[g], ntab[g], to);
		uint64_t sk = kvgpu_state_key(key, g);
		int32_t id;

		if (e < 0) {
			failure(v, "step %llu: request %ld: no state block in "
				"group %u after %u tokens",
				(unsigned long long)v->st.steps, (long)r, g,
				to);
			return;
		}
		id = pidx(v, side, g, tab[g][e]);
		for (uint32_t j = 0; j < v->sslots; j++)
			push_slot(v, id, j, j, sk, (uint8_t)(g | VSTATE));
	}
}

/*
 * The states at the block boundaries p + 1 crossed before `to` (Mamba
 * prefix caching, state_at): the state after p + 1 tokens (key = key(p))
 * in the entry of token p, where that entry is not the one that holds the
 * state after `to`.  Room is the caller's.
 */
static void
add_boundary_states(kvval *v, enum kvgpu_side side,
		    const int32_t *const *tab, const size_t *ntab,
		    uint64_t key, uint32_t p, uint32_t to)
{
	for (uint32_t i = 0; i < v->nstg; i++) {
		uint32_t g = v->stg[i], bs = v->gbs[g];
		int64_t last = state_at(v, g, tab[g], ntab[g], to);
		size_t e = p / bs;
		int32_t id;

		if ((p + 1) % bs != 0 || p + 1 >= to || last < 0 ||
		    (int64_t)e >= last || tab[g][e] == KVC_NULL)
			continue;
		id = pidx(v, side, g, tab[g][e]);
		for (uint32_t j = 0; j < v->sslots; j++)
			push_slot(v, id, j, j, kvgpu_state_key(key, g),
				  (uint8_t)(g | VSTATE));
	}
}

/*
 * Append the slots of positions [from, to) of request r, in every full
 * and sliding group, and the state after `to` tokens of every state group
 * (tables read from the allocator; side says which pool the ids name) to
 * v->slot; with positions false, the states alone (what a state block
 * must hold before the step that computes from `to` rewrites it).  Keys
 * are chained from the cached one when it is at `from`, else from
 * position 0.  A position without a block is a failure; null blocks
 * (sliding window) are skipped.
 */
static int
add_slots(kvval *v, kvs *s, kvs_req r, enum kvgpu_side side, uint32_t from,
	  uint32_t to, bool positions, char *why, size_t len)
{
	kvc *k = kvs_kv(s);
	int32_t seq = kvs_req_seq(s, r);
	struct vreq *q = &v->req[r];
	size_t ntok, ntab[KVC_MAX_GROUPS];
	const uint32_t *tok = kvc_seq_tokens(k, seq, &ntok);
	const int32_t *tab[KVC_MAX_GROUPS];
	uint64_t key = KVGPU_KEY_ROOT;
	uint32_t p = 0;
	size_t need;
	bool bad = false;

	if (to > ntok)
		to = (uint32_t)ntok;
	if (!positions) {
		if (v->nstg == 0 || to == 0)
			return 0;
		from = to;
	} else if (from >= to) {
		return 0;
	}
	for (uint32_t g = 0; g < v->ng; g++)
		tab[g] = kvc_table(k, seq, g, &ntab[g]);
	need = v->nslot + (size_t)(to - from) * v->ntokg +
	       (size_t)v->nstg * v->sslots;
	/* boundary states (add_boundary_states): one per state block */
	for (uint32_t i = 0; i < v->nstg; i++)
		need += (size_t)((to - from) / v->gbs[v->stg[i]] + 1) *
			v->sslots;
	if (grow(&v->slot, &v->capslot, need, sizeof(*v->slot)) ||
	    grow(&v->sgrp, &v->capsgrp, need, sizeof(*v->sgrp)))
		return oom(why, len);
	if (q->kpos > 0 && q->kpos <= from) {
		p = q->kpos;
		key = q->khash;
	}
	for (; p < from; p++)
		key = kvgpu_key_next(key, tok[p]);
	for (; p < to && !bad; p++) {
		key = kvgpu_key_next(key, tok[p]);
		for (uint32_t i = 0; i < v->ntokg; i++) {
			uint32_t g = v->tokg[i], bs = v->gbs[g];
			size_t b = p / bs;

			if (b >= ntab[g]) {
				failure(v, "step %llu: request %ld: position "
					"%u has no block in group %u (table "
					"of %zu)",
					(unsigned long long)v->st.steps,
					(long)r, p, g, ntab[g]);
				bad = true;
				break;
			}
			if (tab[g][b] == KVC_NULL) {
				v->nnull++;
				continue;
			}
			push_slot(v, pidx(v, side, g, tab[g][b]), p % bs, p,
				  kvgpu_group_key(key, g), (uint8_t)g);
		}
		if (v->nstg > 0 && !bad)
			add_boundary_states(v, side, tab, ntab, key, p, to);
	}
	q->kpos = p;
	q->khash = key;
	if (!bad)
		add_states(v, r, side, tab, ntab, key, to);
	return 0;
}

/* Verify v->slot (ranges in v->vr; whole: requests checked whole); count
 * failures, fold the digest. */
static int
check(kvval *v, kvs *s, enum kvgpu_side side, const char *what, bool whole,
      char *why, size_t len)
{
	struct kvgpu_verdict d;
	size_t i;
	kv_err e;

	v->st.window_slots += v->nnull;
	v->nnull = 0;
	if (v->nslot == 0)
		return 0;
	if (v->nstg > 0)
		for (i = 0; i < v->nslot; i++)
			v->st.state_checks += v->sgrp[i] & VSTATE &&
					      v->slot[i].slot == 0;
	e = kvgpu_verify(v->g, side, v->slot, v->nslot, &d);
	if (e != KV_OK)
		return dev_fail(v, "verify", why, len);
	v->st.verifies++;
	v->st.verified_slots += v->nslot;
	v->st.verified_words += d.words;
	if (whole)
		v->st.full_checks += v->nvr;
	if (d.mismatches > 0) {
		const struct kvgpu_slot *b = &v->slot[d.first];
		uint8_t sg = v->sgrp[d.first];
		kvs_req r;
		char at[64];

		for (i = 1; i < v->nvr && v->vr[i].from <= (size_t)d.first;
		     i++)
			;
		r = v->vr[i - 1].r;
		if (sg & VSTATE)
			snprintf(at, sizeof(at), "group %u state after %u "
				 "tokens", sg & ~VSTATE, v->req[r].valid);
		else
			snprintf(at, sizeof(at), "group %u position %u", sg,
				 b->pos);
		v->st.mismatched_words += d.mismatches;
		failure(v, "step %llu: %s: %llu of %llu words of %zu "
			"request(s) differ; first: request %ld %s "
			"(%s block %d slot %u) layer %u %s word %u: want %08x "
			"got %08x", (unsigned long long)v->st.steps, what,
			(unsigned long long)d.mismatches,
			(unsigned long long)d.words, v->nvr, (long)r, at,
			side == KVGPU_DEV ? "device" : "host", b->block,
			b->slot, d.first_layer, d.first_kv ? "V" : "K",
			d.first_word, d.want, d.got);
	}
	/* digest: the whole blocks of the checked requests, every group */
	v->nblk = 0;
	for (i = 0; i < v->nvr; i++) {
		kvc *k = kvs_kv(s);
		int32_t seq = kvs_req_seq(s, v->vr[i].r);

		for (uint32_t g = 0; g < v->ng; g++) {
			size_t ntab;
			const int32_t *tab = kvc_table(k, seq, g, &ntab);
			size_t j = 0;	/* a state group's too: every state
					 * its blocks hold (state_at) */

			if (grow(&v->blk, &v->capblk, v->nblk + ntab,
				 sizeof(*v->blk)))
				return oom(why, len);
			for (; j < ntab; j++)
				if (tab[j] != KVC_NULL)
					v->blk[v->nblk++] =
						pidx(v, side, g, tab[j]);
		}
	}
	if (v->nblk > 0) {
		uint64_t dg;

		if (kvgpu_digest(v->g, side, v->blk, v->nblk, &dg) != KV_OK)
			return dev_fail(v, "digest", why, len);
		v->st.digest = kvgpu_mix64(v->st.digest ^ dg) + side;
	}
	return 0;
}

static int
add_range(kvval *v, kvs_req r, char *why, size_t len)
{
	if (grow(&v->vr, &v->capvr, v->nvr + 1, sizeof(*v->vr)))
		return oom(why, len);
	v->vr[v->nvr].r = r;
	v->vr[v->nvr].from = v->nslot;
	v->nvr++;
	return 0;
}

/* ---- copies --------------------------------------------------------- */

static int
copy(kvval *v, enum kvgpu_dir dir, const struct kvc_pair *p, uint32_t n,
     char *why, size_t len)
{
	const struct kvgpu_geom *geo = kvgpu_geom_of(v->g);
	struct kvval_class *c = &v->st.cls[dir];
	struct kvgpu_timing t;
	size_t m;
	int k;

	if (n == 0)
		return 0;
	if (grow(&v->pair, &v->cappair, n, sizeof(*v->pair)) ||
	    grow(&v->blk, &v->capblk, n, sizeof(*v->blk)))
		return oom(why, len);
	/*
	 * vLLM v0 with prefix caching may name one destination twice in a
	 * map: swap-in copies a block to a fresh device block, promotion
	 * then finds the same content cached, frees the fresh block, and the
	 * next pair of the same map reuses it; or two device blocks of equal
	 * content go to one cached CPU block.  The engine copies block by
	 * block in map order, so the last pair to a destination wins.  A
	 * batch must be independent (kvgpu.h): keep only the last pair to
	 * each destination, in map order.  (An engine batching such a map
	 * into one unordered call would race.)
	 */
	m = n;
	for (uint32_t i = n; i-- > 0;) {
		if (v->seen[p[i].dst]) {
			v->st.dup_dsts++;
			continue;
		}
		v->seen[p[i].dst] = 1;
		m--;
		v->pair[m].src = p[i].src;
		v->pair[m].dst = p[i].dst;
		v->blk[m] = p[i].dst;
	}
	if (m > 0) {
		memmove(v->pair, v->pair + m, (n - m) * sizeof(*v->pair));
		memmove(v->blk, v->blk + m, (n - m) * sizeof(*v->blk));
	}
	m = n - m;
	for (size_t i = 0; i < m; i++)
		v->seen[v->blk[i]] = 0;
	/* a destination is overwritten whole: poison it first, so that a
	 * chunk that never arrives cannot pass for stale good data */
	if (kvgpu_poison(v->g, dir == KVGPU_D2H ? KVGPU_HOST : KVGPU_DEV,
			 v->blk, m) != KV_OK)
		return dev_fail(v, "poison", why, len);
	if (kvgpu_copy(v->g, dir, v->o.strat, v->pair, m, &t) != KV_OK)
		return dev_fail(v, kvgpu_dir_name(dir), why, len);
	if (v->o.check && (k = kvgpu_check(v->g)) != 0) {
		snprintf(why, len, "%s: backend invariant %d broken after a "
			 "%s batch (kvgpu.h)", kvgpu_name(v->g), k,
			 kvgpu_dir_name(dir));
		return 1;
	}
	{
		enum kvgpu_side from = dir == KVGPU_H2D ? KVGPU_HOST :
				       KVGPU_DEV;
		enum kvgpu_side to = dir == KVGPU_D2H ? KVGPU_HOST :
				     KVGPU_DEV;

		for (size_t i = 0; i < m; i++) {
			v->cfill[to][v->pair[i].dst] =
				v->cfill[from][v->pair[i].src];
			v->ckey[to][v->pair[i].dst] =
				v->ckey[from][v->pair[i].src];
		}
	}
	c->batches++;
	c->blocks += m;
	c->calls += v->o.strat == KVGPU_PER_CHUNK ? kvgpu_chunks(geo) : 1;
	c->chunks += (uint64_t)m * kvgpu_chunks(geo);
	c->bytes += (uint64_t)m * kvgpu_block_bytes(geo);
	c->dev_ns += t.dev_ns;
	c->submit_ns += t.submit_ns;
	return 0;
}

/* ---- the hooks -------------------------------------------------------- */

/*
 * The first position of each scheduled request the verifier writes in the
 * step: start, from the caller, counts a hazard's stale positions as
 * written (a correct engine computes them); with skip_stale they stay as
 * the engine modelled leaves them, and the reads of them fail.  NULL: out
 * of memory.
 */
static const uint32_t *
wstart(kvval *v, const struct kvs_step *st, const uint32_t *start)
{
	if (!v->o.skip_stale)
		return start;
	if (grow(&v->start, &v->capstart, st->nsched, sizeof(*v->start)))
		return NULL;
	for (uint32_t i = 0; i < st->nsched; i++)
		v->start[i] = start[i] + st->sched[i].stale;
	return v->start;
}

/* The tokens of e the verifier writes from wstart() on. */
static uint32_t
wcount(const kvval *v, const struct kvs_sched *e)
{
	return kvs_sched_written(e) - (v->o.skip_stale ? e->stale : 0);
}

int
kvval_scheduled(kvval *v, kvs *s, const struct kvs_step *st,
		const uint32_t *start, char *why, size_t len)
{
	kvc *k = kvs_kv(s);
	int rc;

	if ((rc = setup(v, s, why, len)))
		return rc;
	if (st->nsched > 0 && (start = wstart(v, st, start)) == NULL)
		return oom(why, len);
	v->st.steps++;
	v->tick++;
	for (uint32_t i = 0; i < st->nsched; i++)
		v->st.stale_tokens += st->sched[i].stale;
	if (v->stride > 0 && st->nswap_out + st->nswap_in + st->ncow > 0) {
		snprintf(why, len, "verifier: block copies in a mode whose "
			 "groups have their own ids");
		return 1;
	}
	if ((rc = copy(v, KVGPU_D2H, st->swap_out, st->nswap_out, why, len)))
		return rc;
	/* the host copies of every request swapped out */
	v->nslot = v->nvr = 0;
	for (uint32_t i = 0; i < st->npreempt; i++) {
		struct vreq *q = vreq_of(v, st->preempt[i]);

		if (q == NULL)
			return oom(why, len);
		q->running = 0;
		memset(q->nblk, 0, sizeof(q->nblk));
		if (!st->preempt_swap[i]) {
			v->st.preempt_recompute++;
			q->valid = 0;
			continue;
		}
		v->st.preempt_swap++;
		if ((rc = add_range(v, st->preempt[i], why, len)) ||
		    (rc = add_slots(v, s, st->preempt[i], KVGPU_HOST, 0,
				    q->valid, true, why, len)))
			return rc;
	}
	/*
	 * ... checked after the step's other copies: a swap-in may reuse a
	 * block the swap-out frees, and a backend that ran it first (fault
	 * "invert"; an engine racing its streams) spoils the host copy.  A
	 * check before it would run the swap-out first and hide that.
	 */
	if ((rc = copy(v, KVGPU_H2D, st->swap_in, st->nswap_in, why, len)) ||
	    (rc = copy(v, KVGPU_D2D, st->cow, st->ncow, why, len)))
		return rc;
	if ((rc = check(v, s, KVGPU_HOST, "after swap-out", true, why, len)))
		return rc;
	for (uint32_t i = 0; i < st->ncow; i++)
		v->stamp[st->cow[i].dst] = ~v->tick;
	/*
	 * Fresh blocks of the scheduled requests: entries not seen before
	 * for positions not computed yet, and the state block of a request
	 * with no computed token (no state yet).
	 */
	v->nblk = 0;
	for (uint32_t i = 0; i < st->nsched; i++) {
		kvs_req r = st->sched[i].req;
		struct vreq *q = vreq_of(v, r);
		struct chain c = { .key = KVGPU_KEY_ROOT };
		int32_t seq;

		if (q == NULL)
			return oom(why, len);
		seq = kvs_req_seq(s, r);
		c.tok = kvc_seq_tokens(k, seq, &c.ntok);
		/* from the key the last write kept (add_slots), not from
		 * token 0: a decode's new block asks for its first slot */
		if (q->kpos > 0 && q->kpos <= c.ntok) {
			c.pos = q->kpos;
			c.key = q->khash;
		}
		if (!q->running || q->valid != start[i])
			q->full = 1;
		q->running = 1;
		q->valid = start[i];
		for (uint32_t g = 0; g < v->ng; g++) {
			size_t ntab;
			const int32_t *tab = kvc_table(k, seq, g, &ntab);

			if (grow(&v->blk, &v->capblk, v->nblk + ntab,
				 sizeof(*v->blk)))
				return oom(why, len);
			if (v->gstate[g]) {
				/* blocks of no computed state: every one
				 * before the first token, else the new ones
				 * past the state after start (state_at) */
				int64_t e = state_at(v, g, tab, ntab,
						     start[i]);

				for (size_t b = start[i] ? q->nblk[g] : 0;
				     b < ntab; b++)
					if (tab[b] != KVC_NULL &&
					    (int64_t)b > e)
						v->blk[v->nblk++] =
							pidx(v, KVGPU_DEV, g,
							     tab[b]);
			} else {
				for (size_t b = q->nblk[g]; b < ntab; b++) {
					int32_t id;

					if (tab[b] == KVC_NULL ||
					    (uint64_t)b * v->gbs[g] < start[i])
						continue;
					id = pidx(v, KVGPU_DEV, g, tab[b]);
					if (holds_own(v, &c, g, b, id))
						v->st.own_blocks++;
					else
						v->blk[v->nblk++] = id;
				}
			}
			for (size_t b = 0; st->ncow > 0 && b < ntab; b++)
				if (tab[b] != KVC_NULL &&
				    v->stamp[pidx(v, KVGPU_DEV, g, tab[b])] ==
				    ~v->tick)
					q->full = 1;
			q->nblk[g] = (uint32_t)ntab;
		}
	}
	if (kvgpu_poison(v->g, KVGPU_DEV, v->blk, v->nblk) != KV_OK)
		return dev_fail(v, "poison", why, len);
	forget(v, KVGPU_DEV, v->blk, v->nblk);
	return 0;
}

/* Whether r gains its last token in this step (kvs_complete's rule). */
static bool
finishing(kvs *s, kvs_req r, uint32_t end, size_t ntok)
{
	const struct kvc_config *kc = kvc_config_of(kvs_kv(s));

	if (end < ntok)
		return false;
	return kvs_req_generated(s, r) + 1 >= kvs_req_max_output(s, r) ||
	       ntok + 1 >= kc->max_model_len;
}

/* Count a live block once per scan; f: slots of it written. */
static void
live(kvval *v, int32_t id, uint32_t f)
{
	if (v->stamp[id] != v->tick) {
		v->stamp[id] = v->tick;
		v->fill[id] = 0;
		v->blk[v->nblk++] = id;
	}
	if (f > v->fill[id])
		v->fill[id] = f;
}

static int
frag_scan(kvval *v, kvs *s, char *why, size_t len)
{
	kvc *k = kvs_kv(s);
	uint32_t nrun = kvs_queue_len(s, KVS_Q_RUNNING);
	uint64_t expect = 0, got;

	v->tick++;
	v->nblk = 0;
	for (uint32_t i = 0; i < nrun; i++) {
		kvs_req r = kvs_queue_at(s, KVS_Q_RUNNING, i);
		struct vreq *q = vreq_of(v, r);
		int32_t seq = kvs_req_seq(s, r);

		if (q == NULL)
			return oom(why, len);
		for (uint32_t g = 0; g < v->ng; g++) {
			size_t ntab;
			const int32_t *tab = kvc_table(k, seq, g, &ntab);
			uint32_t bs = v->gbs[g];

			if (grow(&v->blk, &v->capblk, v->nblk + ntab,
				 sizeof(*v->blk)))
				return oom(why, len);
			if (v->gstate[g]) {
				/* the state after valid tokens and those at
				 * the boundaries before it are written */
				int64_t e = state_at(v, g, tab, ntab,
						     q->valid);

				for (size_t b = 0; b < ntab; b++)
					if (tab[b] != KVC_NULL)
						live(v, pidx(v, KVGPU_DEV, g,
							     tab[b]),
						     (int64_t)b <= e ?
						     v->sslots : 0);
				continue;
			}
			for (size_t b = 0; b < ntab; b++) {
				uint64_t lo = (uint64_t)b * bs;

				if (tab[b] == KVC_NULL)
					continue;
				live(v, pidx(v, KVGPU_DEV, g, tab[b]),
				     q->valid <= lo ? 0 :
				     q->valid - lo >= bs ? bs :
				     (uint32_t)(q->valid - lo));
			}
		}
	}
	/*
	 * A block may hold data past its holders' computed tokens: theirs
	 * (computed once by a request the cache or a recompute shares it
	 * with), which they will rewrite.  Those slots are written, not
	 * fragmentation lost.
	 */
	for (size_t i = 0; i < v->nblk; i++) {
		int32_t id = v->blk[i];
		uint32_t f = v->fill[id], c = v->cfill[KVGPU_DEV][id];

		if (c > f) {
			v->st.frag_ahead_slots += c - f;
			f = c;
		}
		expect += v->bs - f;
	}
	if (kvgpu_scan_poison(v->g, KVGPU_DEV, v->blk, v->nblk, &got) !=
	    KV_OK)
		return dev_fail(v, "scan", why, len);
	v->st.frag_scans++;
	v->st.frag_live_blocks += v->nblk;
	v->st.frag_poison_slots += got;
	v->st.frag_expected_slots += expect;
	if (got != expect) {
		v->st.frag_mismatches++;
		failure(v, "step %llu: fragmentation: %llu poisoned slots in "
			"%zu live blocks, %llu unwritten expected",
			(unsigned long long)v->st.steps,
			(unsigned long long)got, v->nblk,
			(unsigned long long)expect);
	}
	return 0;
}

int
kvval_computed(kvval *v, kvs *s, const struct kvs_step *st,
	       const uint32_t *start, char *why, size_t len)
{
	kvc *k = kvs_kv(s);
	int rc;

	if ((rc = setup(v, s, why, len)))
		return rc;
	if (st->nsched > 0 && (start = wstart(v, st, start)) == NULL)
		return oom(why, len);
	/* the states the step reads, before it rewrites them */
	v->nslot = v->nvr = 0;
	for (uint32_t i = 0; i < st->nsched && v->nstg > 0; i++) {
		kvs_req r = st->sched[i].req;

		if (!v->req[r].full || start[i] == 0)
			continue;
		if ((rc = add_range(v, r, why, len)) ||
		    (rc = add_slots(v, s, r, KVGPU_DEV, 0, start[i], false,
				    why, len)))
			return rc;
	}
	if ((rc = check(v, s, KVGPU_DEV, "before compute", false, why,
			    len)))
		return rc;
	v->nslot = v->nvr = 0;
	for (uint32_t i = 0; i < st->nsched; i++) {
		kvs_req r = st->sched[i].req;
		size_t ntok;

		(void)kvc_seq_tokens(k, kvs_req_seq(s, r), &ntok);
		if ((rc = add_slots(v, s, r, KVGPU_DEV, start[i],
				    start[i] + wcount(v, &st->sched[i]),
				    true, why, len)))
			return rc;
	}
	if (kvgpu_fill(v->g, KVGPU_DEV, v->slot, v->nslot) != KV_OK)
		return dev_fail(v, "fill", why, len);
	record(v);
	v->nnull = 0;
	v->st.written_slots += v->nslot;
	v->nslot = 0;
	for (uint32_t i = 0; i < st->nsched; i++) {
		kvs_req r = st->sched[i].req;
		struct vreq *q = &v->req[r];
		uint32_t end = start[i] + wcount(v, &st->sched[i]);
		size_t ntok;

		(void)kvc_seq_tokens(k, kvs_req_seq(s, r), &ntok);
		if (end > ntok)
			end = (uint32_t)ntok;
		q->valid = end;
		if (!q->full && !finishing(s, r, end, ntok))
			continue;
		q->full = 0;
		if ((rc = add_range(v, r, why, len)) ||
		    (rc = add_slots(v, s, r, KVGPU_DEV, 0, q->valid, true,
				    why, len)))
			return rc;
	}
	if ((rc = check(v, s, KVGPU_DEV, "after compute", true, why, len)))
		return rc;
	if (v->o.frag_every > 0 && v->st.steps % v->o.frag_every == 0)
		return frag_scan(v, s, why, len);
	return 0;
}

int
kvval_completed(kvval *v, kvs *s, const struct kvs_step *st, char *why,
		size_t len)
{
	(void)s;
	for (uint32_t i = 0; i < st->nfinish; i++) {
		struct vreq *q = vreq_of(v, st->finish[i]);

		if (q == NULL)
			return oom(why, len);
		memset(q, 0, sizeof(*q));
	}
	return 0;
}

/* ---- offload tiers and P/D transfers ------------------------------------ */

/* Grow tier t's pool and records to hold block id `need - 1`. */
static int
tier_room(kvval *v, uint32_t t, uint64_t need, char *why, size_t len)
{
	const struct kvgpu_geom *geo = kvgpu_geom_of(v->g);
	int side = KVGPU_TIER0 + (int)t;
	size_t old = v->ntier[t], n;
	uint64_t have = t < geo->tiers ? geo->tier_blocks[t] : 0;
	void *a, *b;

	if (t >= KVGPU_MAX_TIERS) {
		snprintf(why, len, "verifier: tier %u (at most %d)", t,
			 KVGPU_MAX_TIERS);
		return 1;
	}
	for (uint32_t u = geo->tiers; u < t; u++)	/* the tiers before */
		if (kvgpu_tier_grow(v->g, u, 1) != KV_OK)
			return dev_fail(v, "tier pool", why, len);
	if (need > have) {
		n = (size_t)(need > 2 * have ? need : 2 * have);
		if (n > INT32_MAX)
			n = INT32_MAX;
		if (kvgpu_tier_grow(v->g, t, (uint32_t)n) != KV_OK)
			return dev_fail(v, "tier pool", why, len);
	}
	n = (size_t)kvgpu_geom_of(v->g)->tier_blocks[t];
	if (n <= old)
		return 0;
	a = realloc(v->cfill[side], n * sizeof(uint32_t));
	if (a != NULL)
		v->cfill[side] = a;
	b = realloc(v->ckey[side], n * sizeof(uint64_t));
	if (b != NULL)
		v->ckey[side] = b;
	if (a == NULL || b == NULL)
		return oom(why, len);
	memset(v->cfill[side] + old, 0, (n - old) * sizeof(uint32_t));
	memset(v->ckey[side] + old, 0, (n - old) * sizeof(uint64_t));
	v->ntier[t] = n;
	return 0;
}

/* The entry of device block id in tab, looked for from *hint on (pairs
 * come in position order), then from 0; -1: none. */
static int64_t
tab_index(const int32_t *tab, size_t ntab, int32_t id, size_t *hint)
{
	for (size_t k = 0; k < ntab; k++) {
		size_t j = (*hint + k) % ntab;

		if (tab[j] == id) {
			*hint = j + 1;
			return (int64_t)j;
		}
	}
	return -1;
}

/*
 * Verify blocks `blk` (on side) of request r of s against the pattern of
 * r's positions: block i is table entry idx[i] (device id dev[i]) and
 * holds its first nf[i] slots.  Counts failures under `what`.
 */
static int
verify_blocks(kvval *v, kvs *s, kvs_req r, enum kvgpu_side side,
	      const int32_t *blk, const int64_t *idx, const uint32_t *nf,
	      size_t n, const char *what, char *why, size_t len)
{
	kvc *k = kvs_kv(s);
	struct chain c = { .key = KVGPU_KEY_ROOT };
	struct kvgpu_verdict d;
	size_t need = 0;

	c.tok = kvc_seq_tokens(k, kvs_req_seq(s, r), &c.ntok);
	for (size_t i = 0; i < n; i++)
		need += nf[i];
	if (grow(&v->slot, &v->capslot, need, sizeof(*v->slot)) ||
	    grow(&v->sgrp, &v->capsgrp, need, sizeof(*v->sgrp)))
		return oom(why, len);
	v->nslot = 0;
	for (size_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < nf[i]; j++) {
			uint64_t p = (uint64_t)idx[i] * v->gbs[0] + j;

			if (p >= c.ntok)
				break;
			push_slot(v, blk[i], j, (uint32_t)p,
				  kvgpu_group_key(chain_key(&c, (uint32_t)p),
						  0), 0);
		}
	if (v->nslot == 0)
		return 0;
	if (kvgpu_verify(v->g, side, v->slot, v->nslot, &d) != KV_OK)
		return dev_fail(v, "verify", why, len);
	v->st.verifies++;
	v->st.verified_slots += v->nslot;
	v->st.verified_words += d.words;
	v->st.move_slots += v->nslot;
	if (d.mismatches > 0) {
		const struct kvgpu_slot *b = &v->slot[d.first];

		v->st.mismatched_words += d.mismatches;
		failure(v, "step %llu: %s: %llu of %llu words differ; first: "
			"request %ld position %u (%s block %d slot %u) layer "
			"%u %s word %u: want %08x got %08x",
			(unsigned long long)v->st.steps, what,
			(unsigned long long)d.mismatches,
			(unsigned long long)d.words, (long)r, b->pos,
			side == KVGPU_DEV ? "device" : "tier", b->block,
			b->slot, d.first_layer, d.first_kv ? "V" : "K",
			d.first_word, d.want, d.got);
	}
	return 0;
}

/* Scratch for n pairs: v->pair, v->blk, and the entries and fills. */
struct mscratch {
	int64_t *idx;
	uint32_t *nf;
};

static int
move_scratch(kvval *v, uint32_t n, struct mscratch *m, char *why,
	     size_t len)
{
	if (grow(&v->pair, &v->cappair, n, sizeof(*v->pair)) ||
	    grow(&v->blk, &v->capblk, n, sizeof(*v->blk)))
		return oom(why, len);
	m->idx = malloc((n ? n : 1) * sizeof(*m->idx));
	m->nf = malloc((n ? n : 1) * sizeof(*m->nf));
	if (m->idx == NULL || m->nf == NULL) {
		free(m->idx);
		free(m->nf);
		return oom(why, len);
	}
	return 0;
}

static void
count_move(kvval *v, enum kvgpu_dir dir, uint32_t n,
	   const struct kvgpu_timing *t)
{
	const struct kvgpu_geom *geo = kvgpu_geom_of(v->g);
	struct kvval_class *c = &v->st.move[dir - KVGPU_NDIRS];

	c->batches++;
	c->blocks += n;
	c->calls += v->o.strat == KVGPU_PER_CHUNK ? kvgpu_chunks(geo) : 1;
	c->chunks += (uint64_t)n * kvgpu_chunks(geo);
	c->bytes += (uint64_t)n * kvgpu_block_bytes(geo);
	c->dev_ns += t->dev_ns;
	c->submit_ns += t->submit_ns;
}

/*
 * A store: the tier blocks must hold what their device blocks held, slot
 * by slot: the pattern of the request's positions in them (the device
 * record's fill), or, for a request the scheduler no longer has, the
 * device block's whole digest.  A load: the device blocks must hold the
 * pattern of the request's positions, as many as the tier block's record.
 */
static int
offload_check(kvval *v, kvs *s, const struct kvo_xfer *x, int tside,
	      struct mscratch *m, char *why, size_t len)
{
	bool store = x->dir == KVO_STORE;
	int32_t seq = kvs_req_seq(s, x->req);
	size_t ntab = 0, hint = 0;
	const int32_t *tab = seq >= 0 ? kvc_table(kvs_kv(s), seq, 0, &ntab) :
			     NULL;

	for (uint32_t i = 0; i < x->npairs; i++) {
		int32_t dev = store ? x->pairs[i].src : x->pairs[i].dst;

		m->idx[i] = tab != NULL ? tab_index(tab, ntab, dev, &hint) :
			    -1;
		m->nf[i] = store ? v->cfill[KVGPU_DEV][dev] :
			   v->cfill[tside][x->pairs[i].src];
		if (m->idx[i] < 0 && !store) {
			failure(v, "step %llu: offload load: request %ld: "
				"device block %d is not in its table",
				(unsigned long long)v->st.steps, (long)x->req,
				dev);
			return 0;
		}
		if (m->idx[i] < 0) {	/* gone: compare whole blocks */
			uint64_t a, b;
			int32_t tb = x->pairs[i].dst;

			if (kvgpu_digest(v->g, KVGPU_DEV, &dev, 1, &a) !=
			    KV_OK ||
			    kvgpu_digest(v->g, (enum kvgpu_side)tside, &tb,
					 1, &b) != KV_OK)
				return dev_fail(v, "digest", why, len);
			v->st.move_digests++;
			if (a != b)
				failure(v, "step %llu: offload store: tier "
					"block %d differs from device block "
					"%d (digests)",
					(unsigned long long)v->st.steps, tb,
					dev);
			m->nf[i] = 0;
		}
	}
	return verify_blocks(v, s, x->req,
			     store ? (enum kvgpu_side)tside : KVGPU_DEV,
			     v->blk, m->idx, m->nf, x->npairs,
			     store ? "after an offload store" :
			     "after an offload load", why, len);
}

int
kvval_offload(kvval *v, kvs *s, const struct kvo_xfer *x, char *why,
	      size_t len)
{
	int tside = KVGPU_TIER0 + x->tier;
	bool store = x->dir == KVO_STORE;
	enum kvgpu_dir dir = store ? KVGPU_D2T : KVGPU_T2D;
	struct kvgpu_timing t;
	struct mscratch m;
	uint64_t top = 0;
	int rc;

	if ((rc = setup(v, s, why, len)))
		return rc;
	if (v->ng != 1 || v->nstg > 0) {
		snprintf(why, len, "verifier: offload with %u KV cache groups "
			 "(one full-attention group only)", v->ng);
		return 1;
	}
	if (x->npairs == 0)
		return 0;
	for (uint32_t i = 0; i < x->npairs; i++) {
		int32_t tb = store ? x->pairs[i].dst : x->pairs[i].src;
		int32_t db = store ? x->pairs[i].src : x->pairs[i].dst;

		if (tb < 0 || db < 0 || (uint32_t)db >= v->nblocks) {
			snprintf(why, len, "verifier: offload pair %u "
				 "(%d>%d) out of range", i, x->pairs[i].src,
				 x->pairs[i].dst);
			return 1;
		}
		if ((uint64_t)tb + 1 > top)
			top = (uint64_t)tb + 1;
	}
	if ((rc = tier_room(v, x->tier, top, why, len)) ||
	    (rc = move_scratch(v, x->npairs, &m, why, len)))
		return rc;
	for (uint32_t i = 0; i < x->npairs; i++) {
		v->pair[i].src = x->pairs[i].src;
		v->pair[i].dst = x->pairs[i].dst;
		v->blk[i] = x->pairs[i].dst;
	}
	/* the destination is overwritten whole: poison it first */
	if (kvgpu_poison(v->g, store ? (enum kvgpu_side)tside : KVGPU_DEV,
			 v->blk, x->npairs) != KV_OK) {
		rc = dev_fail(v, "poison", why, len);
		goto out;
	}
	if (kvgpu_tier_copy(v->g, dir, x->tier, v->o.strat, v->pair,
			    x->npairs, &t) != KV_OK) {
		rc = dev_fail(v, kvgpu_dir_name(dir), why, len);
		goto out;
	}
	count_move(v, dir, x->npairs, &t);
	rc = offload_check(v, s, x, tside, &m, why, len);
	for (uint32_t i = 0; rc == 0 && i < x->npairs; i++) {
		int from = store ? KVGPU_DEV : tside;
		int to = store ? tside : KVGPU_DEV;

		v->cfill[to][x->pairs[i].dst] =
			v->cfill[from][x->pairs[i].src];
		v->ckey[to][x->pairs[i].dst] = v->ckey[from][x->pairs[i].src];
	}
out:
	free(m.idx);
	free(m.nf);
	return rc;
}

int
kvval_transfer(kvval *dst, kvs *ds, kvs_req dr, kvval *src, kvs *ss,
	       kvs_req sr, const struct kvc_pair *p, uint32_t n, char *why,
	       size_t len)
{
	struct kvgpu_timing t;
	struct mscratch m;
	size_t ntab, hint = 0;
	const int32_t *tab;
	int rc;

	(void)sr;
	if ((rc = setup(dst, ds, why, len)) || (rc = setup(src, ss, why, len)))
		return rc;
	if (dst->ng != 1 || dst->nstg > 0) {
		snprintf(why, len, "verifier: a KV transfer with %u KV cache "
			 "groups (one full-attention group only)", dst->ng);
		return 1;
	}
	if (n == 0)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		if (p[i].src < 0 || (uint32_t)p[i].src >= src->nblocks ||
		    p[i].dst < 0 || (uint32_t)p[i].dst >= dst->nblocks) {
			snprintf(why, len, "verifier: transfer pair %u "
				 "(%d>%d) out of range", i, p[i].src,
				 p[i].dst);
			return 1;
		}
	if ((rc = move_scratch(dst, n, &m, why, len)))
		return rc;
	tab = kvc_table(kvs_kv(ds), kvs_req_seq(ds, dr), 0, &ntab);
	for (uint32_t i = 0; i < n; i++) {
		dst->pair[i].src = p[i].src;
		dst->pair[i].dst = p[i].dst;
		dst->blk[i] = p[i].dst;
		m.idx[i] = tab_index(tab, ntab, p[i].dst, &hint);
		m.nf[i] = src->cfill[KVGPU_DEV][p[i].src];
	}
	if (kvgpu_poison(dst->g, KVGPU_DEV, dst->blk, n) != KV_OK) {
		rc = dev_fail(dst, "poison", why, len);
		goto out;
	}
	if (kvgpu_peer_copy(dst->g, src->g, dst->o.strat, dst->pair, n,
			    &t) != KV_OK) {
		rc = dev_fail(dst, "peer copy", why, len);
		goto out;
	}
	count_move(dst, KVGPU_PEER, n, &t);
	for (uint32_t i = 0; i < n; i++) {
		if (m.idx[i] < 0) {
			failure(dst, "step %llu: KV transfer: request %ld: "
				"device block %d is not in its table",
				(unsigned long long)dst->st.steps, (long)dr,
				p[i].dst);
			goto out;
		}
		if (m.nf[i] == 0)
			failure(dst, "step %llu: KV transfer: request %ld: "
				"source block %d holds no data",
				(unsigned long long)dst->st.steps, (long)dr,
				p[i].src);
	}
	rc = verify_blocks(dst, ds, dr, KVGPU_DEV, dst->blk, m.idx, m.nf, n,
			   "after a KV transfer", why, len);
	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		dst->cfill[KVGPU_DEV][p[i].dst] = m.nf[i];
		dst->ckey[KVGPU_DEV][p[i].dst] =
			src->ckey[KVGPU_DEV][p[i].src];
	}
out:
	free(m.idx);
	free(m.nf);
	return rc;
}
