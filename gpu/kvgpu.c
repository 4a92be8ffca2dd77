/*
 * kvgpu.c -- the backend handle (kvgpu.h): opening by name, geometry,
 * argument checks shared by every backend, names.
 *
 * Every public call checks its arguments here (block ids inside the pool,
 * slots inside a block, independent copy batches) so that a backend only
 * ever sees valid work: the CUDA kernels do no bounds checks of their own.
 */
#include "config.h"

#include "gpu/kvgpu_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

kv_err
kvgpu__fail(kvgpu *g, kv_err e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g->msg, sizeof(g->msg), fmt, ap);
	va_end(ap);
	return e;
}

int64_t
kvgpu__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- geometry ----------------------------------------------------------- */

uint64_t
kvgpu_slot_bytes(const struct kvgpu_geom *g)
{
	return (uint64_t)g->kv_heads * g->head_dim * g->dtype_bytes;
}

uint64_t
kvgpu_block_bytes(const struct kvgpu_geom *g)
{
	return 2ull * g->layers * g->block_size * kvgpu_slot_bytes(g);
}

uint32_t
kvgpu_chunks(const struct kvgpu_geom *g)
{
	return g->layout == KVGPU_FA_SPLIT ? 2 * g->layers :
	       g->layout == KVGPU_CROSS_LAYER ? 1 : g->layers;
}

uint64_t
kvgpu_chunk_bytes(const struct kvgpu_geom *g)
{
	return kvgpu_block_bytes(g) / kvgpu_chunks(g);
}

#define KVGPU_MAX_POOL (1ull << 40)

kv_err
kvgpu_geom_check(const struct kvgpu_geom *g, char *why, size_t len)
{
	uint64_t sb = kvgpu_slot_bytes(g);

	if (g->layers == 0 || g->kv_heads == 0 || g->head_dim == 0 ||
	    g->dtype_bytes == 0 || g->block_size == 0) {
		snprintf(why, len, "geometry: layers, kv_heads, head_dim, "
			 "dtype_bytes and block_size must be positive");
		return KV_EINVAL;
	}
	if (sb % 4 != 0) {
		snprintf(why, len, "geometry: a slot of %llu bytes is not "
			 "whole 32-bit words", (unsigned long long)sb);
		return KV_EINVAL;
	}
	if ((unsigned)g->layout >= KVGPU_NLAYOUTS ||
	    (unsigned)g->hostmem >= KVGPU_NHOSTMEMS) {
		snprintf(why, len, "geometry: unknown layout or host memory");
		return KV_EINVAL;
	}
	if (g->dev_blocks == 0 || g->dev_blocks > INT32_MAX ||
	    g->host_blocks > INT32_MAX) {
		snprintf(why, len, "geometry: the device pool needs blocks");
		return KV_EINVAL;
	}
	if (g->tiers > KVGPU_MAX_TIERS) {
		snprintf(why, len, "geometry: %u tiers (at most %d)", g->tiers,
			 KVGPU_MAX_TIERS);
		return KV_EINVAL;
	}
	for (uint32_t t = 0; t < g->tiers; t++)
		if (g->tier_blocks[t] > INT32_MAX ||
		    kvgpu_block_bytes(g) * g->tier_blocks[t] >
		    KVGPU_MAX_POOL) {
			snprintf(why, len, "geometry: tier %u: a pool over "
				 "1 TiB", t);
			return KV_EINVAL;
		}
	if (sb > KVGPU_MAX_POOL ||
	    kvgpu_block_bytes(g) * g->dev_blocks > KVGPU_MAX_POOL ||
	    kvgpu_block_bytes(g) * g->host_blocks > KVGPU_MAX_POOL) {
		snprintf(why, len, "geometry: a pool over 1 TiB");
		return KV_EINVAL;
	}
	return KV_OK;
}

/* Blocks of pool `side` in geometry g (0 for a tier it lacks). */
static uint64_t
side_blocks(const struct kvgpu_geom *g, int side)
{
	if (side == KVGPU_DEV)
		return g->dev_blocks;
	if (side == KVGPU_HOST)
		return g->host_blocks;
	return (uint32_t)(side - KVGPU_TIER0) < g->tiers ?
	       g->tier_blocks[side - KVGPU_TIER0] : 0;
}

/* Bytes of the independence scratch: the largest pool + 1. */
static size_t
mark_bytes(const struct kvgpu_geom *g)
{
	uint64_t m = 0;

	for (int s = 0; s < KVGPU_NSIDES; s++)
		if (side_blocks(g, s) > m)
			m = side_blocks(g, s);
	return (size_t)m + 1;
}

/* ---- open / close ------------------------------------------------------- */

kvgpu *
kvgpu_open(const char *name, const struct kvgpu_geom *geom, kv_err *err,
	   char *why, size_t whylen)
{
	static const struct kvgpu_ops *const all[] = {
		&kvgpu__host_ops, &kvgpu__cuda_ops, &kvgpu__fault_ops,
	};
	const struct kvgpu_ops *ops = NULL;
	const char *arg = NULL;
	size_t nlen = strcspn(name, ":");
	kvgpu *g;
	kv_err e;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (strlen(all[i]->name) == nlen &&
		    strncmp(all[i]->name, name, nlen) == 0)
			ops = all[i];
	if (ops == NULL || strlen(name) >= sizeof(g->name)) {
		snprintf(why, whylen, "unknown backend '%s' (host, cuda, "
			 "fault:MODE[:INNER])", name);
		*err = KV_EINVAL;
		return NULL;
	}
	if (name[nlen] == ':')
		arg = name + nlen + 1;
	if ((e = kvgpu_geom_check(geom, why, whylen)) != KV_OK) {
		*err = e;
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		goto nomem;
	g->ops = ops;
	g->geom = *geom;
	snprintf(g->name, sizeof(g->name), "%s", name);
	for (int s = 0; s < KVGPU_NSIDES; s++) {
		g->lay[s].layout = geom->layout;
		g->lay[s].layers = geom->layers;
		g->lay[s].bs = geom->block_size;
		g->lay[s].tw = (uint32_t)(kvgpu_slot_bytes(geom) / 4);
		g->lay[s].nb = s < KVGPU_TIER0 ? side_blocks(geom, s) : 0;
	}
	g->geom.tiers = 0;
	memset(g->geom.tier_blocks, 0, sizeof(g->geom.tier_blocks));
	g->nmark = mark_bytes(&g->geom);
	g->mark = calloc(g->nmark, 1);
	if (g->mark == NULL) {
		free(g);
		goto nomem;
	}
	if ((e = ops->open(g, arg)) != KV_OK) {
		snprintf(why, whylen, "%s", g->msg);
		free(g->mark);
		free(g);
		*err = e;
		return NULL;
	}
	for (uint32_t t = 0; t < geom->tiers; t++)
		if ((e = kvgpu_tier_grow(g, t, geom->tier_blocks[t])) !=
		    KV_OK) {
			snprintf(why, whylen, "%s", g->msg);
			kvgpu_close(g);
			*err = e;
			return NULL;
		}
	*err = KV_OK;
	return g;
nomem:
	snprintf(why, whylen, "out of memory");
	*err = KV_ENOMEM;
	return NULL;
}

void
kvgpu_close(kvgpu *g)
{
	if (g == NULL)
		return;
	g->ops->close(g);
	free(g->mark);
	free(g);
}

static bool
lay_agrees(const struct kvgpu_lay *y, const struct kvgpu_geom *geom,
	   uint64_t nb)
{
	return y->layout == (uint32_t)geom->layout &&
	       y->layers == geom->layers && y->bs == geom->block_size &&
	       y->tw == (uint32_t)(kvgpu_slot_bytes(geom) / 4) && y->nb == nb;
}

int
kvgpu_check(const kvgpu *g)
{
	const struct kvgpu_ops *o = g->ops;
	char why[128];
	size_t nlen, nmark;

	if (o == NULL || o->name == NULL || o->open == NULL ||
	    o->close == NULL || o->poison == NULL || o->fill == NULL ||
	    o->copy == NULL || o->verify == NULL || o->scan_poison == NULL ||
	    o->digest == NULL || o->mem_info == NULL || o->peek == NULL ||
	    o->poke == NULL)
		return 1;
	if (kvgpu_geom_check(&g->geom, why, sizeof(why)) != KV_OK)
		return 2;
	for (int s = 0; s < KVGPU_NSIDES; s++)
		if (!lay_agrees(&g->lay[s], &g->geom,
				side_blocks(&g->geom, s)))
			return 3;
	nlen = strlen(o->name);
	if (memchr(g->name, '\0', sizeof(g->name)) == NULL ||
	    strncmp(g->name, o->name, nlen) != 0 ||
	    (g->name[nlen] != '\0' && g->name[nlen] != ':'))
		return 4;
	nmark = mark_bytes(&g->geom);
	if (g->mark == NULL || g->nmark < nmark)
		return 5;
	for (size_t i = 0; i < nmark; i++)
		if (g->mark[i] != 0)
			return 5;
	if (g->impl == NULL)
		return 6;
	return o->check != NULL ? o->check(g) : 0;
}

const char *
kvgpu_name(const kvgpu *g)
{
	return g->name;
}

const struct kvgpu_geom *
kvgpu_geom_of(const kvgpu *g)
{
	return &g->geom;
}

const char *
kvgpu_errmsg(const kvgpu *g)
{
	return g->msg;
}

bool
kvgpu_cuda_available(char *why, size_t whylen)
{
	return kvgpu__cuda_probe(why, whylen) == KV_OK;
}

/* ---- checked calls ------------------------------------------------------ */

static kv_err
check_side(kvgpu *g, enum kvgpu_side side)
{
	if ((unsigned)side >= KVGPU_TIER0 + g->geom.tiers)
		return kvgpu__fail(g, KV_EINVAL, "bad pool side %d (%u "
				   "tiers)", (int)side, g->geom.tiers);
	return KV_OK;
}

static const char *
side_name(enum kvgpu_side side)
{
	return side == KVGPU_DEV ? "device" : side == KVGPU_HOST ? "host" :
	       "tier";
}

static kv_err
check_blocks(kvgpu *g, enum kvgpu_side side, const int32_t *b, size_t n)
{
	kv_err e = check_side(g, side);

	if (e != KV_OK)
		return e;
	for (size_t i = 0; i < n; i++)
		if (b[i] < 0 || (uint64_t)b[i] >= g->lay[side].nb)
			return kvgpu__fail(g, KV_EINVAL, "%s block %ld out of "
					   "range (%llu blocks)",
					   side_name(side), (long)b[i],
					   (unsigned long long)g->lay[side].nb);
	return KV_OK;
}

static kv_err
check_slots(kvgpu *g, enum kvgpu_side side, const struct kvgpu_slot *s,
	    size_t n)
{
	kv_err e = check_side(g, side);

	if (e != KV_OK)
		return e;
	for (size_t i = 0; i < n; i++) {
		if (s[i].block < 0 ||
		    (uint64_t)s[i].block >= g->lay[side].nb)
			return kvgpu__fail(g, KV_EINVAL, "slot %zu: block %ld "
					   "out of range", i,
					   (long)s[i].block);
		if (s[i].slot >= g->geom.block_size)
			return kvgpu__fail(g, KV_EINVAL, "slot %zu: slot %u "
					   "past the block size %u", i,
					   s[i].slot, g->geom.block_size);
	}
	return KV_OK;
}

kv_err
kvgpu_poison(kvgpu *g, enum kvgpu_side side, const int32_t *blocks,
	     size_t n)
{
	kv_err e = check_blocks(g, side, blocks, n);

	g->msg[0] = '\0';
	if (e != KV_OK || n == 0)
		return e;
	return g->ops->poison(g, side, blocks, n);
}

kv_err
kvgpu_fill(kvgpu *g, enum kvgpu_side side, const struct kvgpu_slot *s,
	   size_t n)
{
	kv_err e = check_slots(g, side, s, n);

	g->msg[0] = '\0';
	if (e != KV_OK || n == 0)
		return e;
	return g->ops->fill(g, side, s, n);
}

/*
 * The ids of a batch are in range and the batch is independent: no
 * destination twice, and (D2D) no source that is also a destination.
 */
static kv_err
check_pairs(kvgpu *g, enum kvgpu_dir dir, uint64_t ns, uint64_t nd,
	    const struct kvgpu_pair *p, size_t n)
{
	kv_err e = KV_OK;
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i].src < 0 || (uint64_t)p[i].src >= ns ||
		    p[i].dst < 0 || (uint64_t)p[i].dst >= nd)
			return kvgpu__fail(g, KV_EINVAL, "%s pair %zu "
					   "(%lld>%lld) out of range",
					   kvgpu_dir_name(dir), i,
					   (long long)p[i].src,
					   (long long)p[i].dst);
	for (i = 0; i < n && e == KV_OK; i++) {
		if (g->mark[p[i].dst])
			e = kvgpu__fail(g, KV_EINVAL, "%s batch not "
					"independent: destination %lld twice",
					kvgpu_dir_name(dir),
					(long long)p[i].dst);
		g->mark[p[i].dst] = 1;
	}
	for (size_t j = 0; dir == KVGPU_D2D && e == KV_OK && j < n; j++)
		if (g->mark[p[j].src])
			e = kvgpu__fail(g, KV_EINVAL, "d2d batch not "
					"independent: block %lld is a source "
					"and a destination",
					(long long)p[j].src);
	for (size_t j = 0; j < i; j++)
		g->mark[p[j].dst] = 0;
	return e;
}

kv_err
kvgpu_copy(kvgpu *g, enum kvgpu_dir dir, enum kvgpu_strat strat,
	   const struct kvgpu_pair *p, size_t n, struct kvgpu_timing *t)
{
	struct kvgpu_timing dummy;
	kv_err e;

	g->msg[0] = '\0';
	if (t == NULL)
		t = &dummy;
	t->dev_ns = t->submit_ns = 0;
	if ((unsigned)dir >= KVGPU_NDIRS || (unsigned)strat >= KVGPU_NSTRATS)
		return kvgpu__fail(g, KV_EINVAL, "bad direction or strategy");
	if ((e = check_pairs(g, dir,
			     g->lay[dir == KVGPU_H2D ? KVGPU_HOST :
				    KVGPU_DEV].nb,
			     g->lay[dir == KVGPU_D2H ? KVGPU_HOST :
				    KVGPU_DEV].nb, p, n)) != KV_OK || n == 0)
		return e;
	return g->ops->copy(g, dir, strat, p, n, t);
}

/* ---- tier pools and the peer copy --------------------------------------- */

kv_err
kvgpu_tier_grow(kvgpu *g, uint32_t tier, uint32_t blocks)
{
	struct kvgpu_geom ng = g->geom;
	struct kvgpu_lay old;
	struct kvgpu_lay *y = &g->lay[KVGPU_TIER0 + tier];
	char why[128];
	size_t nm;
	kv_err e;

	g->msg[0] = '\0';
	if (tier >= KVGPU_MAX_TIERS || tier > g->geom.tiers)
		return kvgpu__fail(g, KV_EINVAL, "tier %u: the next is %u "
				   "(at most %d)", tier, g->geom.tiers,
				   KVGPU_MAX_TIERS);
	if (g->ops->tier_grow == NULL || g->ops->tier_copy == NULL)
		return kvgpu__fail(g, KV_ENOTSUP, "%s: no tier pools",
				   g->name);
	if (tier < g->geom.tiers && blocks <= g->geom.tier_blocks[tier])
		return KV_OK;
	if (tier == ng.tiers)
		ng.tiers++;
	ng.tier_blocks[tier] = blocks;
	if (kvgpu_geom_check(&ng, why, sizeof(why)) != KV_OK)
		return kvgpu__fail(g, KV_EINVAL, "%s", why);
	nm = mark_bytes(&ng);
	if (nm > g->nmark) {
		uint8_t *m = realloc(g->mark, nm);

		if (m == NULL)
			return kvgpu__fail(g, KV_ENOMEM, "out of memory");
		memset(m + g->nmark, 0, nm - g->nmark);
		g->mark = m;
		g->nmark = nm;
	}
	old = *y;
	if (tier == g->geom.tiers)
		old.nb = 0;
	y->nb = blocks;
	if ((e = g->ops->tier_grow(g, tier, &old)) != KV_OK) {
		*y = old;
		return e;
	}
	g->geom = ng;
	return KV_OK;
}

kv_err
kvgpu_tier_copy(kvgpu *g, enum kvgpu_dir dir, uint32_t tier,
		enum kvgpu_strat strat, const struct kvgpu_pair *p, size_t n,
		struct kvgpu_timing *t)
{
	struct kvgpu_timing dummy;
	uint64_t nt;
	kv_err e;

	g->msg[0] = '\0';
	if (t == NULL)
		t = &dummy;
	t->dev_ns = t->submit_ns = 0;
	if ((dir != KVGPU_D2T && dir != KVGPU_T2D) ||
	    (unsigned)strat >= KVGPU_NSTRATS)
		return kvgpu__fail(g, KV_EINVAL, "tier copy: bad direction "
				   "or strategy");
	if (tier >= g->geom.tiers)
		return kvgpu__fail(g, KV_EINVAL, "tier copy: no tier %u (%u "
				   "tiers)", tier, g->geom.tiers);
	nt = g->lay[KVGPU_TIER0 + tier].nb;
	if ((e = check_pairs(g, dir, dir == KVGPU_T2D ? nt :
			     g->lay[KVGPU_DEV].nb,
			     dir == KVGPU_D2T ? nt : g->lay[KVGPU_DEV].nb, p,
			     n)) != KV_OK || n == 0)
		return e;
	return g->ops->tier_copy(g, dir, tier, strat, p, n, t);
}

kv_err
kvgpu__peer_generic(kvgpu *dst, kvgpu *src, const struct kvgpu_pair *p,
		    size_t n, struct kvgpu_timing *t)
{
	const struct kvgpu_lay *ys = &src->lay[KVGPU_DEV];
	const struct kvgpu_lay *yd = &dst->lay[KVGPU_DEV];
	uint32_t nc = kvgpu_lay_chunks(ys);
	size_t cw = (size_t)kvgpu_lay_chunk_words(ys);
	uint32_t *buf = malloc(cw * 4);
	int64_t t0 = kvgpu__now_ns();
	kv_err e = KV_OK;

	if (buf == NULL)
		return kvgpu__fail(dst, KV_ENOMEM, "peer: out of memory");
	for (size_t i = 0; i < n && e == KV_OK; i++)
		for (uint32_t c = 0; c < nc && e == KV_OK; c++) {
			uint64_t so = kvgpu_chunk_at(ys, (uint64_t)p[i].src, c);
			uint64_t d = kvgpu_chunk_at(yd, (uint64_t)p[i].dst, c);

			e = src->ops->peek(src, KVGPU_DEV, so, buf, cw);
			if (e != KV_OK) {
				e = kvgpu__fail(dst, e, "peer: source %s: %s",
						src->name, src->msg);
				break;
			}
			e = dst->ops->poke(dst, KVGPU_DEV, d, buf, cw);
		}
	free(buf);
	t->dev_ns = t->submit_ns = kvgpu__now_ns() - t0;
	return e;
}

kv_err
kvgpu_peer_copy(kvgpu *dst, kvgpu *src, enum kvgpu_strat strat,
		const struct kvgpu_pair *p, size_t n, struct kvgpu_timing *t)
{
	const struct kvgpu_geom *a = &dst->geom, *b = &src->geom;
	struct kvgpu_timing dummy;
	kv_err e;

	dst->msg[0] = '\0';
	if (t == NULL)
		t = &dummy;
	t->dev_ns = t->submit_ns = 0;
	if (dst == src)
		return kvgpu__fail(dst, KV_EINVAL, "peer copy: one backend "
				   "(a copy inside one pool is d2d)");
	if ((unsigned)strat >= KVGPU_NSTRATS)
		return kvgpu__fail(dst, KV_EINVAL, "peer copy: bad strategy");
	if (a->layers != b->layers || a->kv_heads != b->kv_heads ||
	    a->head_dim != b->head_dim || a->dtype_bytes != b->dtype_bytes ||
	    a->block_size != b->block_size || a->layout != b->layout)
		return kvgpu__fail(dst, KV_EINVAL, "peer copy: %s and %s have "
				   "different block geometries", dst->name,
				   src->name);
	if ((e = check_pairs(dst, KVGPU_PEER, src->lay[KVGPU_DEV].nb,
			     dst->lay[KVGPU_DEV].nb, p, n)) != KV_OK ||
	    n == 0)
		return e;
	if (dst->ops->peer != NULL)
		return dst->ops->peer(dst, src, strat, p, n, t);
	return kvgpu__peer_generic(dst, src, p, n, t);
}

kv_err
kvgpu_verify(kvgpu *g, enum kvgpu_side side, const struct kvgpu_slot *s,
	     size_t n, struct kvgpu_verdict *out)
{
	kv_err e = check_slots(g, side, s, n);

	g->msg[0] = '\0';
	memset(out, 0, sizeof(*out));
	out->first = -1;
	if (e != KV_OK || n == 0)
		return e;
	return g->ops->verify(g, side, s, n, out);
}

kv_err
kvgpu_scan_poison(kvgpu *g, enum kvgpu_side side, const int32_t *blocks,
		  size_t n, uint64_t *slots)
{
	kv_err e = check_blocks(g, side, blocks, n);

	g->msg[0] = '\0';
	*slots = 0;
	if (e != KV_OK || n == 0)
		return e;
	return g->ops->scan_poison(g, side, blocks, n, slots);
}

kv_err
kvgpu_digest(kvgpu *g, enum kvgpu_side side, const int32_t *blocks,
	     size_t n, uint64_t *out)
{
	kv_err e = check_blocks(g, side, blocks, n);

	g->msg[0] = '\0';
	*out = 0;
	if (e != KV_OK || n == 0)
		return e;
	return g->ops->digest(g, side, blocks, n, out);
}

kv_err
kvgpu_mem_info(kvgpu *g, struct kvgpu_mem *m)
{
	memset(m, 0, sizeof(*m));
	m->dev_bytes = kvgpu_block_bytes(&g->geom) * g->geom.dev_blocks;
	m->host_bytes = kvgpu_block_bytes(&g->geom) * g->geom.host_blocks;
	return g->ops->mem_info(g, m);
}

kv_err
kvgpu_describe(kvgpu *g, kvgpu_fact_fn fn, void *ctx)
{
	g->msg[0] = '\0';
	if (g->ops->describe == NULL)
		return kvgpu__fail(g, KV_ENOTSUP, "%s: no device to describe",
				   g->name);
	return g->ops->describe(g, fn, ctx);
}

/* ---- names -------------------------------------------------------------- */

static const char *const layout_names[] = {
	"fa-split", "fi-fused", "ds-interleaved", "cross-layer"
};
static const char *const strat_names[] = {
	"per-chunk", "batch", "gather", "staged"
};
static const char *const dir_names[] = {
	"d2h", "h2d", "d2d", "d2t", "t2d", "peer"
};
static const char *const hostmem_names[] = { "pinned", "pageable" };
static const char *const fault_names[] = {
	"none", "corrupt", "drop", "reorder", "invert"
};

#define NAME_OF(tab, v) \
	((unsigned)(v) < sizeof(tab) / sizeof(tab[0]) ? tab[v] : "?")

const char *
kvgpu_layout_name(enum kvgpu_layout l)
{
	return NAME_OF(layout_names, l);
}

const char *
kvgpu_strat_name(enum kvgpu_strat s)
{
	return NAME_OF(strat_names, s);
}

const char *
kvgpu_dir_name(enum kvgpu_dir d)
{
	return NAME_OF(dir_names, d);
}

const char *
kvgpu_hostmem_name(enum kvgpu_hostmem h)
{
	return NAME_OF(hostmem_names, h);
}

const char *
kvgpu_fault_name(enum kvgpu_fault f)
{
	return NAME_OF(fault_names, f);
}

static bool
parse(const char *const *tab, size_t n, const char *s, int *out)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(tab[i], s) == 0) {
			*out = (int)i;
			return true;
		}
	return false;
}

#define PARSE(tab, s, out, type)                                          \
	do {                                                              \
		int v_;                                                   \
		if (!parse(tab, sizeof(tab) / sizeof(tab[0]), s, &v_))    \
			return false;                                     \
		*(out) = (type)v_;                                        \
		return true;                                              \
	} while (0)

bool
kvgpu_layout_parse(const char *s, enum kvgpu_layout *out)
{
	PARSE(layout_names, s, out, enum kvgpu_layout);
}

bool
kvgpu_dir_parse(const char *s, enum kvgpu_dir *out)
{
	PARSE(dir_names, s, out, enum kvgpu_dir);
}

bool
kvgpu_strat_parse(const char *s, enum kvgpu_strat *out)
{
	PARSE(strat_names, s, out, enum kvgpu_strat);
}

bool
kvgpu_hostmem_parse(const char *s, enum kvgpu_hostmem *out)
{
	PARSE(hostmem_names, s, out, enum kvgpu_hostmem);
}

bool
kvgpu_fault_parse(const char *s, enum kvgpu_fault *out)
{
	PARSE(fault_names, s, out, enum kvgpu_fault);
}
