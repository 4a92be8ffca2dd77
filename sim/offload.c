/*
 * offload.c -- KV offload in a run: resolving the configuration, timing
 * each replica's transfers on its tiers' links (offload.h).
 */
#include "config.h"

#include "sim/offload.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define GIB 1073741824.0

/* A transfer in flight: its id and when the scheduler sees it done. */
struct off_xf {
	uint64_t id;
	int64_t done;
};

struct sim_offload {
	kvo *k;
	kvs *s;
	struct sim_offload_setup su;
	struct cost_fifo link[KVO_MAX_TIERS][2];	/* [tier][enum kvo_dir] */
	struct off_xf *q;	/* in flight, in start order */
	size_t n, cap;
	struct sim_offload_tier_stats st[KVO_MAX_TIERS];
};

/* "WHERE: what" into err; KV_EINVAL. */
#define off__fail(err, errlen, where, fmt, ...)				\
	(snprintf((err), (errlen), "%s: " fmt, (where), __VA_ARGS__),	\
	 KV_EINVAL)

/* Tier i of out: its name, its capacity (bytes over block bytes), and the
 * catalog medium backing it. */
static kv_err
off__tier(struct sim_offload_setup *out, const struct sim_tiers *cat,
	  const char *name, double bytes, double per_block, const char *where,
	  const char *key, char *err, size_t errlen)
{
	struct kvo_tier_config *t = &out->kc.tier[out->kc.ntiers];
	const struct sim_tier *m = sim_tiers_find(cat, name);
	double nb = per_block > 0 ? bytes / per_block : 0;

	if (nb < 1)
		return off__fail(err, errlen, where, "%s: %.9g GiB holds no "
				 "offloaded block of %.0f bytes (%s tier)",
				 key, bytes / GIB, per_block, name);
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->blocks = (uint64_t)nb;
	out->media[out->kc.ntiers] = *m;
	out->kc.ntiers++;
	return KV_OK;
}

/*
 * vLLM's native connector: kv_offloading_size GiB in all, split over the
 * TP ranks (kv_bytes_per_rank = size / TP); each rank's blocks hold its
 * share of an offloaded block (block_size / GPU block size GPU blocks), so
 * the count is size / (offloaded block bytes on every rank).
 */
static kv_err
off__native(const struct sim_config *cfg, uint32_t gpu_block,
	    const struct sim_tiers *cat, struct sim_offload_setup *out,
	    char *err, size_t errlen)
{
	const struct sim_offload_config *o = &cfg->offload;
	uint32_t bt = o->block_size ? o->block_size : gpu_block;

	if (bt % gpu_block != 0)
		return off__fail(err, errlen, o->block_where[0] ?
				 o->block_where : cfg->source,
				 "kv_offload.block_size: %" PRIu32 " tokens "
				 "is not a multiple of the GPU block size "
				 "(%" PRIu32 ")", bt, gpu_block);
	out->kc.kind = KVO_NATIVE;
	out->kc.block_tokens = bt;
	return off__tier(out, cat, "cpu", o->size_gib * GIB,
			 (double)out->block_bytes * (bt / gpu_block),
			 o->size_where, "engine.kv_offloading_size", err,
			 errlen);
}

/*
 * LMCache: chunks of chunk_size tokens; max_local_cpu_size and
 * max_local_disk_size are per worker (TP rank), as LMCache reads them,
 * and kv_offloading_size sets max_local_cpu_size to size / TP as vLLM
 * does; remote_size is the whole store's.
 */
static kv_err
off__lmcache(const struct sim_config *cfg, uint32_t tp, uint32_t gpu_block,
	     const struct sim_tiers *cat, struct sim_offload_setup *out,
	     char *err, size_t errlen)
{
	const struct sim_offload_config *o = &cfg->offload;
	const char *w = o->lmcache_where[0] ? o->lmcache_where : o->size_where;
	double chunk = (double)out->block_bytes / gpu_block * o->chunk_size;
	double cpu = o->max_local_cpu_gib >= 0 ? o->max_local_cpu_gib
					       : o->size_gib / tp;
	kv_err e = KV_OK;

	if (o->chunk_size % gpu_block != 0)
		return off__fail(err, errlen, w, "kv_offload.lmcache."
				 "chunk_size: %" PRIu32 " tokens is not a "
				 "multiple of the GPU block size (%" PRIu32
				 ")", o->chunk_size, gpu_block);
	if (o->local_disk[0] != '\0' && o->max_local_disk_gib <= 0)
		return off__fail(err, errlen, w, "%s needs max_local_disk_size "
				 "(GiB per TP rank) > 0",
				 "kv_offload.lmcache.local_disk");
	if (o->remote_url[0] != '\0' && o->remote_gib <= 0)
		return off__fail(err, errlen, w, "%s needs remote_size (GiB) "
				 "> 0", "kv_offload.lmcache.remote_url");
	out->kc.kind = KVO_LMCACHE;
	out->kc.block_tokens = o->chunk_size;
	if (o->local_cpu)
		e = off__tier(out, cat, "cpu", cpu * tp * GIB, chunk, w,
			      "kv_offload.lmcache.max_local_cpu_size", err,
			      errlen);
	if (e == KV_OK && o->local_disk[0] != '\0')
		e = off__tier(out, cat, "disk",
			      o->max_local_disk_gib * tp * GIB, chunk, w,
			      "kv_offload.lmcache.max_local_disk_size", err,
			      errlen);
	if (e == KV_OK && o->remote_url[0] != '\0')
		e = off__tier(out, cat, "remote", o->remote_gib * GIB, chunk,
			      w, "kv_offload.lmcache.remote_size", err,
			      errlen);
	if (e == KV_OK && out->kc.ntiers == 0)
		e = off__fail(err, errlen, w, "%s: no tier (local_cpu false, "
			      "no local_disk, no remote_url)",
			      "kv_offload.lmcache");
	return e;
}

kv_err
sim_offload_resolve(const struct sim_config *cfg, const char *policy,
		    uint32_t tp, uint32_t gpu_block,
		    const struct cost_model *cm,
		    struct sim_offload_setup *out, char *err, size_t errlen)
{
	const struct sim_offload_config *o = &cfg->offload;
	const char *w = o->size_where[0] ? o->size_where : cfg->source;
	struct sim_tiers cat;
	kv_err e;

	memset(out, 0, sizeof(*out));
	if (cfg->pd.on)
		return off__fail(err, errlen, w, "engine.kv_offloading_size: "
				 "KV offload in a disaggregated run is not "
				 "simulated (a replica has one KV connector, "
				 "the P/D transfer's)%s", "");
	if (strcmp(policy, "vllm-v1") != 0)
		return off__fail(err, errlen, w, "engine.kv_offloading_size: "
				 "KV offload needs policy vllm-v1 (vLLM V1's "
				 "KV connector); the policy is %s", policy);
	if ((e = sim_tiers_load(&cat, NULL, o, err, errlen)) != KV_OK)
		return e;
	out->cm = cm;
	out->free = cfg->step_ns > 0;
	out->block_bytes = cm->block_bytes * (tp ? tp : 1);
	/* vLLM >= 0.12's offloading connector allocates cross-layer KV
	 * blocks (one chunk a block, docs/cost-model.md); LMCache copies
	 * the engine's own layout; cost.kv_layout overrides both */
	out->layout = cfg->kv_layout >= 0 ? (enum cost_layout)cfg->kv_layout
		    : o->backend == SIM_OFF_NATIVE ? COST_LAYOUT_CROSS_LAYER
		    : cm->layout;
	if (o->backend == SIM_OFF_LMCACHE)
		return off__lmcache(cfg, tp ? tp : 1, gpu_block, &cat, out,
				    err, errlen);
	return off__native(cfg, gpu_block, &cat, out, err, errlen);
}

sim_offload *
sim_offload_new(const struct sim_offload_setup *su, kvs *s, char *why,
		size_t whylen)
{
	sim_offload *o = calloc(1, sizeof(*o));
	kv_err e;

	if (o == NULL) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	o->su = *su;
	o->s = s;
	o->k = kvo_new(&su->kc, &e, why, whylen);
	if (o->k == NULL) {
		free(o);
		return NULL;
	}
	if ((e = kvo_attach(o->k, s)) != KV_OK) {
		snprintf(why, whylen, "KV offload: %s", kvs_errmsg(s));
		sim_offload_free(o);
		return NULL;
	}
	for (uint32_t t = 0; t < KVO_MAX_TIERS; t++) {
		cost_fifo_init(&o->link[t][KVO_LOAD]);
		cost_fifo_init(&o->link[t][KVO_STORE]);
	}
	return o;
}

void
sim_offload_free(sim_offload *o)
{
	if (o == NULL)
		return;
	kvo_free(o->k);
	free(o->q);
	free(o);
}

/* Time transfer x from now on its link; into the in-flight list, seen
 * done at the later of its end and `seen`. */
static kv_err
off__start(sim_offload *o, const struct kvo_xfer *x, int64_t now,
	   int64_t seen, int64_t *done)
{
	bool store = x->dir == KVO_STORE;
	uint64_t bytes = (uint64_t)x->nblocks * o->su.block_bytes;
	/* a copy up (docs/offload.md O24) moved with its load: no time,
	 * no place on the link */
	int64_t ns = o->su.free || x->copyup ? 0 :
		sim_tier_xfer_ns(&o->su.media[x->tier], o->su.cm,
				 o->su.layout, store, x->nblocks, bytes);
	struct sim_offload_tier_stats *st = &o->st[x->tier];

	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 64;
		struct off_xf *b = realloc(o->q, cap * sizeof(*b));

		if (b == NULL)
			return KV_ENOMEM;
		o->q = b;
		o->cap = cap;
	}
	*done = x->copyup ? now :
		cost_fifo_serve(&o->link[x->tier][store], now, ns);
	o->q[o->n].id = x->id;
	o->q[o->n].done = *done > seen ? *done : seen;
	o->n++;
	if (store) {
		st->store_bytes += bytes;
	} else {
		st->load_bytes += bytes;
		st->hit_tokens += x->ntokens;
	}
	return KV_OK;
}

kv_err
sim_offload_collect(sim_offload *o, int64_t now, int64_t seen,
		    uint32_t replica, const struct sim_observer *obs,
		    sim_offload_note note, void *ctx, char *why,
		    size_t whylen)
{
	const struct kvo_xfer *x;
	uint32_t n = kvo_started(o->k, &x);

	for (uint32_t i = 0; i < n; i++) {
		int64_t done;

		if (x[i].tier >= o->su.kc.ntiers) {
			snprintf(why, whylen, "replica %u: KV offload: "
				 "transfer on tier %u of %u", replica,
				 x[i].tier, o->su.kc.ntiers);
			return KV_ESTATE;
		}
		if (off__start(o, &x[i], now, seen, &done) != KV_OK) {
			snprintf(why, whylen, "out of memory");
			return KV_ENOMEM;
		}
		if (note != NULL)
			note(ctx, &x[i], now, done);
		if (obs != NULL && obs->offload_xfer != NULL &&
		    obs->offload_xfer(obs->ctx, replica, o->s, &x[i], now, why,
				      whylen) != 0)
			return KV_ESTATE;
	}
	return KV_OK;
}

static int
off__cmp(const void *a, const void *b)
{
	const struct off_xf *x = a, *y = b;

	if (x->done != y->done)
		return x->done < y->done ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

kv_err
sim_offload_complete(sim_offload *o, int64_t t, uint32_t *n, char *why,
		     size_t whylen)
{
	size_t keep = 0, due;
	kv_err e;

	*n = 0;
	/* the due ones to the front, in (completion, start) order */
	for (size_t i = 0; i < o->n; i++)
		if (o->q[i].done <= t) {
			struct off_xf tmp = o->q[i];

			o->q[i] = o->q[keep];
			o->q[keep++] = tmp;
		}
	due = keep;
	if (due == 0)
		return KV_OK;
	qsort(o->q, due, sizeof(*o->q), off__cmp);
	for (size_t i = 0; i < due; i++)
		if ((e = kvo_done(o->k, o->q[i].id, true)) != KV_OK) {
			snprintf(why, whylen, "KV offload: transfer %" PRIu64
				 ": %s", o->q[i].id, kvo_errmsg(o->k));
			return e;
		}
	memmove(o->q, o->q + due, (o->n - due) * sizeof(*o->q));
	o->n -= due;
	*n = (uint32_t)due;
	return KV_OK;
}

int64_t
sim_offload_next(const sim_offload *o)
{
	int64_t t = -1;

	for (size_t i = 0; i < o->n; i++)
		if (t < 0 || o->q[i].done < t)
			t = o->q[i].done;
	return t;
}

uint32_t
sim_offload_ntiers(const sim_offload *o)
{
	return o->su.kc.ntiers;
}

void
sim_offload_stats(const sim_offload *o, uint32_t tier,
		  struct sim_offload_tier_stats *st)
{
	const struct kvo_tier_stats *k = kvo_stats(o->k, tier);

	*st = o->st[tier];
	if (k != NULL) {
		st->used_blocks = k->used_blocks;
		st->evicted_blocks = k->evicted_blocks;
		st->capacity_blocks = k->capacity_blocks;
	}
}
