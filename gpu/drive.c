/*
 * drive.c -- a synthetic run with the verifier attached (kvdrive.h).
 *
 * The loop is the simulator's step without time: schedule, execute the
 * block operations and write the computed slots (kvval), complete with
 * kvsched's deterministic output tokens.  A step that schedules nothing
 * while requests wait is an idle step; max_steps bounds a run that never
 * ends (it is an error).
 */
#include "config.h"

#include "gpu/kvdrive.h"
#include "gpu/kv_pattern.h"
#include "core/kvoffload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
kvdrive_opts_init(struct kvdrive_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->policy = "vllm-v0";
	o->preemption = 1;
	o->prefix_caching = true;
	o->block_size = 16;
	o->gpu_blocks = 64;
	o->cpu_blocks = 128;
	o->max_model_len = 512;
	o->max_num_seqs = KVS_UNSET;
	o->max_num_batched_tokens = KVS_UNSET;
	o->requests = 40;
	o->per_step = 2;
	o->prompt_min = 56;
	o->prompt_max = 200;
	o->out_min = 4;
	o->out_max = 64;
	o->share = 48;
	o->prefixes = 3;
	o->seed = 1;
}

void
kvdrive_kvc_config(const struct kvdrive_opts *o, struct kvc_config *kc)
{
	kvc_config_default(kc, KVC_EXACT);
	kc->block_size = o->block_size;
	kc->gpu_blocks = o->gpu_blocks;
	kc->cpu_blocks = o->cpu_blocks;
	kc->prefix_caching = o->prefix_caching;
	kc->max_model_len = o->max_model_len;
	kc->ngroups = o->ngroups;
	memcpy(kc->group, o->group, sizeof(kc->group));
	/* vLLM v1 and FastGen have no CPU pool (they never swap) */
	if (strcmp(o->policy, "vllm-v1") == 0 ||
	    strcmp(o->policy, "deepspeed-fastgen") == 0)
		kc->cpu_blocks = 0;
}

void
kvdrive_pool(const struct kvdrive_opts *o, struct kvval_pool *out)
{
	const struct kvs_policy *p = kvs_builtin_policy(o->policy);
	struct kvc_config kc;

	kvdrive_kvc_config(o, &kc);
	if (p != NULL)
		kc.mode = p->mode;
	kvval_pool(&kc, kc.ngroups ? kc.ngroups : 1, out);
}

static void
group(struct kvc_group_config *g, const char *name, kvc_kind kind,
      uint32_t window, uint32_t block_size)
{
	snprintf(g->name, sizeof(g->name), "%s", name);
	g->kind = kind;
	g->window = window;
	g->block_size = block_size;
}

void
kvdrive_hybrid(struct kvdrive_opts *o, enum kvdrive_shape shape)
{
	struct kvc_group_config *g = o->group;

	memset(g, 0, sizeof(o->group));
	o->block_size = 16;
	switch (shape) {
	case KVDRIVE_MAMBA:
		o->ngroups = 4;
		group(&g[0], "g0", KVC_STATE, 0, o->max_model_len);
		group(&g[1], "g1", KVC_STATE, 0, o->max_model_len);
		group(&g[2], "g2", KVC_FULL, 0, 16);
		group(&g[3], "g3", KVC_STATE, 0, o->max_model_len);
		break;
	case KVDRIVE_SLIDING:
		o->ngroups = 2;
		group(&g[0], "sw", KVC_SLIDING, 40, 16);
		group(&g[1], "full", KVC_FULL, 0, 16);
		break;
	case KVDRIVE_HALF:
		o->ngroups = 2;
		group(&g[0], "full", KVC_FULL, 0, 16);
		group(&g[1], "sw", KVC_SLIDING, 40, 8);
		break;
	}
}

/* splitmix64: the stream of token ids and lengths */
static uint64_t
next(uint64_t *x)
{
	return kvgpu_mix64(*x += KVGPU_GOLDEN);
}

static uint32_t
uniform(uint64_t *x, uint32_t lo, uint32_t hi)
{
	return hi <= lo ? lo : lo + (uint32_t)(next(x) % (hi - lo + 1));
}

struct drive {
	kvs *s;
	uint32_t *tok, *start;
	size_t capstart;
	kvo *o;			/* offload, or NULL */
	uint64_t *ids;		/* transfers started this step */
	size_t nids, capids;
};

/* The transfers the offload manager started: run and check them on the
 * verifier's backend, keep their ids for the step's end. */
static int
xfers_started(struct drive *d, kvval *v, struct kvdrive_result *res,
	      char *why, size_t len)
{
	const struct kvo_xfer *x;
	uint32_t n = kvo_started(d->o, &x);
	int rc;

	if (d->nids + n > d->capids) {
		size_t cap = (d->nids + n) * 2;
		uint64_t *p = realloc(d->ids, cap * sizeof(*p));

		if (p == NULL) {
			snprintf(why, len, "out of memory");
			return 1;
		}
		d->ids = p;
		d->capids = cap;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (v != NULL && (rc = kvval_offload(v, d->s, &x[i], why, len)))
			return rc;
		d->ids[d->nids++] = x[i].id;
		if (x[i].dir == KVO_STORE) {
			res->offload_stores++;
			res->offload_store_blocks += x[i].nblocks;
		} else {
			res->offload_loads++;
			res->offload_load_blocks += x[i].nblocks;
		}
	}
	return 0;
}

/* The step is over: every transfer it started has finished. */
static int
xfers_done(struct drive *d, char *why, size_t len)
{
	for (size_t i = 0; i < d->nids; i++)
		if (kvo_done(d->o, d->ids[i], true) != KV_OK) {
			snprintf(why, len, "offload: %s", kvo_errmsg(d->o));
			return 1;
		}
	d->nids = 0;
	return 0;
}

static int
step(struct drive *d, kvval *v, struct kvdrive_result *res, char *why,
     size_t len)
{
	const struct kvs_step *st;
	kvc *k = kvs_kv(d->s);
	kv_err e;
	int rc = 0;

	if ((e = kvs_schedule(d->s, &st)) != KV_OK) {
		snprintf(why, len, "schedule: %s", kvs_errmsg(d->s));
		return 1;
	}
	if (d->o != NULL && (rc = xfers_started(d, v, res, why, len)))
		return rc;
	if (st->nsched > d->capstart) {
		uint32_t *p = realloc(d->start, st->nsched * sizeof(*p));

		if (p == NULL) {
			snprintf(why, len, "out of memory");
			return 1;
		}
		d->start = p;
		d->capstart = st->nsched;
	}
	for (uint32_t i = 0; i < st->nsched; i++) {
		size_t c = kvc_seq_computed(k, kvs_req_seq(d->s,
							   st->sched[i].req));

		/* cached tokens (vllm-v0) are scheduled, not computed;
		 * stale ones are written as a correct engine would */
		d->start[i] = (uint32_t)(c - kvs_sched_written(&st->sched[i]));
	}
	res->preemptions += st->npreempt;
	res->swap_out_blocks += st->nswap_out;
	res->swap_in_blocks += st->nswap_in;
	res->cow_blocks += st->ncow;
	if (v != NULL &&
	    ((rc = kvval_scheduled(v, d->s, st, d->start, why, len)) ||
	     (rc = kvval_computed(v, d->s, st, d->start, why, len))))
		return rc;
	if ((e = kvs_complete(d->s, NULL, &st)) != KV_OK) {
		snprintf(why, len, "complete: %s", kvs_errmsg(d->s));
		return 1;
	}
	res->finished += st->nfinish;
	if (d->o != NULL && (rc = xfers_started(d, v, res, why, len)))
		return rc;
	if (v != NULL && (rc = kvval_completed(v, d->s, st, why, len)))
		return rc;
	return d->o != NULL ? xfers_done(d, why, len) : 0;
}

/* A native CPU tier over d->s (kvdrive_opts.offload_blocks). */
static int
offload_open(struct drive *d, const struct kvdrive_opts *o, char *why,
	     size_t len)
{
	struct kvo_config c;
	kv_err e;

	memset(&c, 0, sizeof(c));
	c.kind = KVO_NATIVE;
	c.block_tokens = o->offload_block_tokens ? o->offload_block_tokens :
			 o->block_size;
	c.ntiers = 1;
	snprintf(c.tier[0].name, sizeof(c.tier[0].name), "cpu");
	c.tier[0].blocks = o->offload_blocks;
	if ((d->o = kvo_new(&c, &e, why, len)) == NULL)
		return 2;
	if (kvo_attach(d->o, d->s) != KV_OK) {
		snprintf(why, len, "offload: %s", kvo_errmsg(d->o));
		return 2;
	}
	return 0;
}

int
kvdrive_run(const struct kvdrive_opts *o, kvval *v,
	    struct kvdrive_result *res, bool *refused, char *why,
	    size_t whylen)
{
	struct kvs_config sc;
	struct kvc_config kc;
	struct drive d = { 0 };
	uint64_t rng = o->seed, max = o->max_steps ? o->max_steps : 1000000;
	uint32_t added = 0, *prefix = NULL;
	int rc = 0;
	kv_err e;

	memset(res, 0, sizeof(*res));
	*refused = false;
	kvs_config_init(&sc);
	snprintf(sc.policy, sizeof(sc.policy), "%s", o->policy);
	sc.preemption = o->preemption;
	sc.max_num_seqs = o->max_num_seqs;
	sc.max_num_batched_tokens = o->max_num_batched_tokens;
	kvdrive_kvc_config(o, &kc);
	d.s = kvs_new(&sc, &kc, &e, why, whylen);
	if (d.s == NULL) {
		*refused = e == KV_ECONFIG;
		return 2;
	}
	if (o->offload_blocks > 0 &&
	    (rc = offload_open(&d, o, why, whylen)) != 0)
		goto out;
	d.tok = malloc(((size_t)o->prompt_max + 1) * sizeof(*d.tok));
	prefix = malloc(((size_t)o->share * o->prefixes + 1) *
			sizeof(*prefix));
	if (d.tok == NULL || prefix == NULL) {
		snprintf(why, whylen, "out of memory");
		rc = 1;
		goto out;
	}
	for (size_t i = 0; i < (size_t)o->share * o->prefixes; i++)
		prefix[i] = (uint32_t)(next(&rng) % 32000);
	while (rc == 0) {
		for (uint32_t j = 0; j < o->per_step && added < o->requests;
		     j++, added++) {
			uint32_t n = uniform(&rng, o->prompt_min,
					     o->prompt_max);
			uint32_t out = uniform(&rng, o->out_min, o->out_max);
			uint32_t sh = !o->prefixes ? 0 :
				      o->share < n ? o->share : n;
			uint32_t pf = o->prefixes ? (uint32_t)(next(&rng) %
							      o->prefixes) : 0;
			kvs_req r;

			memcpy(d.tok, prefix + (size_t)pf * o->share,
			       sh * sizeof(*d.tok));
			for (uint32_t t = sh; t < n; t++)
				d.tok[t] = (uint32_t)(next(&rng) % 32000);
			if ((e = kvs_add(d.s, d.tok, n, out, 0, &r)) != KV_OK) {
				snprintf(why, whylen, "request %u: %s", added,
					 kvs_errmsg(d.s));
				rc = 1;
				goto out;
			}
		}
		if (added == o->requests && kvs_nunfinished(d.s) == 0)
			break;
		if (res->steps++ >= max) {
			snprintf(why, whylen, "no end after %llu steps",
				 (unsigned long long)max);
			rc = 1;
			break;
		}
		rc = step(&d, v, res, why, whylen);
	}
out:
	free(prefix);
	free(d.tok);
	free(d.start);
	free(d.ids);
	kvs_free(d.s);
	kvo_free(d.o);
	return rc;
}

/* ---- the ordering hazard and copy-on-write ------------------------ */

struct hz {
	kvc *k;
	kvgpu *b;
	char *why;
	size_t len;
};

/* An exact-mode allocator of blocks of 4 tokens and a backend over it. */
static int
hz_open(struct hz *h, const char *name, uint32_t gpu, uint32_t cpu)
{
	struct kvc_config kc;
	struct kvgpu_geom g = { 2, 1, 4, 2, 4, KVGPU_FA_SPLIT, gpu, cpu,
				KVGPU_PINNED, 0, { 0 } };
	kv_err e;

	kvc_config_default(&kc, KVC_EXACT);
	kc.block_size = 4;
	kc.gpu_blocks = gpu;
	kc.cpu_blocks = cpu;
	if ((h->k = kvc_new(&kc, &e, h->why, h->len)) == NULL)
		return 1;
	if ((h->b = kvgpu_open(name, &g, &e, h->why, h->len)) == NULL) {
		kvc_free(h->k);
		return 1;
	}
	return 0;
}

static void
hz_close(struct hz *h)
{
	kvgpu_close(h->b);
	kvc_free(h->k);
}

static int
hz_fail(struct hz *h, const char *what, bool backend)
{
	snprintf(h->why, h->len, "hazard: %s: %s", what,
		 backend ? kvgpu_errmsg(h->b) : kvc_errmsg(h->k));
	return 1;
}

/* The slots of seq's n tokens, keys key0 + position. */
static void
hz_slots(kvc *k, int32_t seq, uint32_t n, uint64_t key0,
	 struct kvgpu_slot *sl)
{
	size_t nt;
	const int32_t *tab = kvc_table(k, seq, 0, &nt);

	for (uint32_t i = 0; i < n; i++)
		sl[i] = (struct kvgpu_slot){ .block = tab[i / 4],
					     .slot = i % 4, .pos = i,
					     .key = key0 + i };
}

/* A sequence of n tokens tok0.., allocated and written with keys key0 +
 * position. */
static int
hz_seq(struct hz *h, uint32_t tok0, uint32_t n, uint64_t key0,
       struct kvgpu_slot *sl, int32_t *seq)
{
	uint32_t tok[16];

	for (uint32_t i = 0; i < n; i++)
		tok[i] = tok0 + i;
	if (kvc_seq_new(h->k, tok, n, seq) || kvc_allocate(h->k, *seq, 0))
		return hz_fail(h, "sequence", false);
	hz_slots(h->k, *seq, n, key0, sl);
	if (kvgpu_fill(h->b, KVGPU_DEV, sl, n))
		return hz_fail(h, "fill", true);
	return 0;
}

/* The allocator's last map as backend pairs. */
static size_t
hz_pairs(kvc *k, struct kvgpu_pair *out)
{
	size_t n;
	const struct kvc_pair *p = kvc_pairs(k, &n);

	for (size_t i = 0; i < n; i++)
		out[i] = (struct kvgpu_pair){ p[i].src, p[i].dst };
	return n;
}

int
kvdrive_hazard(const char *name, enum kvgpu_strat st,
	       struct kvdrive_hazard *out, char *why, size_t whylen)
{
	struct kvgpu_pair po[4], pi[4];
	struct kvgpu_slot sa[16], sb[8];
	struct kvgpu_verdict d;
	struct hz h = { NULL, NULL, why, whylen };
	int32_t A, B;
	size_t nout, nin, nt;
	const int32_t *tab;
	uint64_t injected;
	int rc = 1;

	memset(out, 0, sizeof(*out));
	if (hz_open(&h, name, 4, 8))
		return 1;
	/* spoil the second swap-out (A's), not B's earlier one */
	if (strncmp(name, "fault", 5) == 0 &&
	    kvgpu_fault_arm(h.b, KVGPU_FAULT_INVERT, KVGPU_D2H, 1) != KV_OK) {
		rc = hz_fail(&h, "arm", true);
		goto done;
	}
	/* B: 2 blocks, written, swapped out (its host copy is right) */
	if (hz_seq(&h, 900, 8, 0xb0, sb, &B))
		goto done;
	if (kvc_swap_out(h.k, B)) {
		rc = hz_fail(&h, "swap out B", false);
		goto done;
	}
	nout = hz_pairs(h.k, po);
	out->out_blocks += nout;
	if (kvgpu_copy(h.b, KVGPU_D2H, st, po, nout, NULL)) {
		rc = hz_fail(&h, "copy B out", true);
		goto done;
	}
	/* A: every device block */
	if (hz_seq(&h, 100, 16, 0xa0, sa, &A))
		goto done;
	/* one step: A out, B in over A's blocks */
	if (kvc_swap_out(h.k, A)) {
		rc = hz_fail(&h, "swap out A", false);
		goto done;
	}
	nout = hz_pairs(h.k, po);
	if (kvc_swap_in(h.k, B, 0)) {
		rc = hz_fail(&h, "swap in B", false);
		goto done;
	}
	nin = hz_pairs(h.k, pi);
	out->out_blocks += nout;
	out->in_blocks = nin;
	for (size_t i = 0; i < nin; i++)
		for (size_t j = 0; j < nout; j++)
			out->reused += pi[i].dst == po[j].src;
	if (kvgpu_copy(h.b, KVGPU_D2H, st, po, nout, NULL) ||
	    kvgpu_copy(h.b, KVGPU_H2D, st, pi, nin, NULL)) {
		rc = hz_fail(&h, "copy", true);
		goto done;
	}
	/* A's host copy, B's device blocks */
	tab = kvc_table(h.k, A, 0, &nt);
	for (uint32_t i = 0; i < 16; i++)
		sa[i].block = tab[i / 4];
	if (kvgpu_verify(h.b, KVGPU_HOST, sa, 16, &d)) {
		rc = hz_fail(&h, "verify A", true);
		goto done;
	}
	out->a_bad = d.mismatches;
	hz_slots(h.k, B, 8, 0xb0, sb);
	if (kvgpu_verify(h.b, KVGPU_DEV, sb, 8, &d)) {
		rc = hz_fail(&h, "verify B", true);
		goto done;
	}
	out->b_bad = d.mismatches;
	out->slots_checked = 16 + 8;
	if (strncmp(name, "fault", 5) == 0)
		kvgpu_fault_stats(h.b, &injected, &out->hazards);
	rc = 0;
done:
	hz_close(&h);
	return rc;
}

int
kvdrive_cow(const char *name, enum kvgpu_fault f, enum kvgpu_strat st,
	    uint64_t *mismatches, char *why, size_t whylen)
{
	char wrapped[96];
	struct hz h = { NULL, NULL, why, whylen };
	struct kvgpu_slot sl[6];
	struct kvgpu_pair pr[1];
	struct kvgpu_verdict d;
	uint32_t next = 6;
	int32_t a, child;
	size_t np, nt;
	const int32_t *tab;
	int rc = 1;

	*mismatches = 0;
	snprintf(wrapped, sizeof(wrapped), "fault:none:%s", name);
	if (hz_open(&h, f != KVGPU_FAULT_NONE ? wrapped : name, 8, 0))
		return 1;
	if (f != KVGPU_FAULT_NONE &&
	    kvgpu_fault_arm(h.b, f, KVGPU_D2D, 0) != KV_OK) {
		rc = hz_fail(&h, "arm", true);
		goto done;
	}
	if (hz_seq(&h, 5, 6, 0xc0, sl, &a))
		goto done;
	if (kvc_fork(h.k, a, &child) ||
	    kvc_append(h.k, child, &next, 1, 0, false)) {
		rc = hz_fail(&h, "fork", false);
		goto done;
	}
	(void)kvc_pairs(h.k, &np);
	if (np != 1) {	/* the shared partial block */
		snprintf(why, whylen, "cow: %zu copies, want 1", np);
		goto done;
	}
	hz_pairs(h.k, pr);
	if (kvgpu_copy(h.b, KVGPU_D2D, st, pr, 1, NULL)) {
		rc = hz_fail(&h, "copy", true);
		goto done;
	}
	tab = kvc_table(h.k, child, 0, &nt);
	for (uint32_t i = 0; i < 6; i++)
		sl[i].block = tab[i / 4];
	if (kvgpu_verify(h.b, KVGPU_DEV, sl, 6, &d)) {
		rc = hz_fail(&h, "verify", true);
		goto done;
	}
	*mismatches = d.mismatches;
	rc = 0;
done:
	hz_close(&h);
	return rc;
}

/* ---- tier moves and a P/D transfer ------------------------------------- */

#define MV_TOKENS 40
#define MV_BLOCKS (MV_TOKENS / 4)

struct mv_rep {
	struct drive d;
	kvgpu *b;
	kvval *v;
	kvs_req r;
};

/* A vllm-v1 scheduler with one MV_TOKENS prompt computed, verified. */
static int
mv_open(struct mv_rep *m, const char *name, enum kvgpu_strat st, char *why,
	size_t len)
{
	struct kvdrive_opts o;
	struct kvs_config sc;
	struct kvc_config kc;
	struct kvval_pool pool;
	struct kvval_opts vo = { st, 0, 0, false, true };
	struct kvgpu_geom g = { 2, 1, 4, 2, 4, KVGPU_FA_SPLIT, 0, 0,
				KVGPU_PINNED, 0, { 0 } };
	struct kvdrive_result res;
	uint32_t tok[MV_TOKENS];
	kv_err e;

	kvdrive_opts_init(&o);
	o.policy = "vllm-v1";
	o.block_size = 4;
	o.gpu_blocks = 32;
	o.max_model_len = 64;
	kvs_config_init(&sc);
	snprintf(sc.policy, sizeof(sc.policy), "%s", o.policy);
	kvdrive_kvc_config(&o, &kc);
	kvdrive_pool(&o, &pool);
	g.dev_blocks = pool.dev_blocks;
	g.host_blocks = pool.host_blocks;
	if ((m->d.s = kvs_new(&sc, &kc, &e, why, len)) == NULL)
		return 1;
	if ((m->b = kvgpu_open(name, &g, &e, why, len)) == NULL)
		return 1;
	if ((m->v = kvval_new(m->b, &vo)) == NULL) {
		snprintf(why, len, "out of memory");
		return 1;
	}
	for (uint32_t i = 0; i < MV_TOKENS; i++)
		tok[i] = 1000 + 7 * i;
	if (kvs_add(m->d.s, tok, MV_TOKENS, 8, 0, &m->r) != KV_OK) {
		snprintf(why, len, "add: %s", kvs_errmsg(m->d.s));
		return 1;
	}
	memset(&res, 0, sizeof(res));
	return step(&m->d, m->v, &res, why, len);
}

static void
mv_close(struct mv_rep *m)
{
	kvval_free(m->v);
	kvgpu_close(m->b);
	free(m->d.start);
	kvs_free(m->d.s);
}

/* Replica r's first MV_BLOCKS device blocks. */
static int
mv_table(struct mv_rep *m, const int32_t **tab, char *why, size_t len)
{
	size_t n;

	*tab = kvc_table(kvs_kv(m->d.s), kvs_req_seq(m->d.s, m->r), 0, &n);
	if (n < MV_BLOCKS) {
		snprintf(why, len, "moves: %zu blocks, not %d", n, MV_BLOCKS);
		return 1;
	}
	return 0;
}

/* Store replica 0's blocks to tier 0, load them back, copy them to 1. */
static int
mv_play(struct mv_rep *m, char *why, size_t len)
{
	struct kvc_pair p[MV_BLOCKS];
	struct kvo_xfer x = { 1, m[0].r, 0, KVO_STORE, MV_TOKENS, MV_BLOCKS,
			      p, MV_BLOCKS };
	const int32_t *t0, *t1;
	int rc;

	if ((rc = mv_table(&m[0], &t0, why, len)) ||
	    (rc = mv_table(&m[1], &t1, why, len)))
		return rc;
	for (int32_t i = 0; i < MV_BLOCKS; i++)
		p[i] = (struct kvc_pair){ t0[i], 2 * i + 1 };
	if ((rc = kvval_offload(m[0].v, m[0].d.s, &x, why, len)))
		return rc;
	for (int32_t i = 0; i < MV_BLOCKS; i++)
		p[i] = (struct kvc_pair){ 2 * i + 1, t0[i] };
	x.id = 2;
	x.dir = KVO_LOAD;
	if ((rc = kvval_offload(m[0].v, m[0].d.s, &x, why, len)))
		return rc;
	for (int32_t i = 0; i < MV_BLOCKS; i++)
		p[i] = (struct kvc_pair){ t0[i], t1[i] };
	return kvval_transfer(m[1].v, m[1].d.s, m[1].r, m[0].v, m[0].d.s,
			      m[0].r, p, MV_BLOCKS, why, len);
}

int
kvdrive_moves(const char *name, enum kvgpu_strat st,
	      struct kvdrive_moves *out, char *why, size_t whylen)
{
	struct mv_rep m[2];
	int rc = 0;

	memset(out, 0, sizeof(*out));
	memset(m, 0, sizeof(m));
	for (int i = 0; i < 2 && rc == 0; i++)
		rc = mv_open(&m[i], name, st, why, whylen);
	if (rc == 0)
		rc = mv_play(m, why, whylen);
	for (int i = 0; i < 2; i++) {
		const struct kvval_stats *t;
		uint64_t inj, haz;

		if (m[i].v != NULL) {
			t = kvval_stats(m[i].v);
			out->failures += t->failures;
			out->move_slots += t->move_slots;
			out->store_blocks += t->move[0].blocks;
			out->load_blocks += t->move[1].blocks;
			out->peer_blocks += t->move[2].blocks;
		}
		if (m[i].b != NULL &&
		    kvgpu_fault_stats(m[i].b, &inj, &haz) == KV_OK)
			out->injected += inj;
		mv_close(&m[i]);
	}
	return rc;
}
