/*
 * backend_host.c -- the reference backend: both pools are malloc'd host
 * memory and a copy is memcpy.  It is the semantic oracle in CI (every
 * verify, digest and poison count of the CUDA backend must equal it) and
 * gives host timings: wall-clock time of the copy loop, not of a device.
 *
 * The strategies differ as they would on a device, so the host numbers
 * are not all one: per-chunk and batch copy chunk by chunk with memcpy,
 * gather copies word by word (a kernel's loop), staged gathers into a
 * staging buffer and copies that once more.
 */
#include "config.h"

#include "gpu/kvgpu_int.h"

#include <stdlib.h>
#include <string.h>

struct host {
	uint32_t *pool[KVGPU_NSIDES];	/* by enum kvgpu_side */
	uint32_t *stage;	/* one block, for the staged strategy */
};

static kv_err
host_open(kvgpu *g, const char *arg)
{
	struct host *h;

	if (arg != NULL)
		return kvgpu__fail(g, KV_EINVAL, "host: takes no argument "
				   "('%s')", arg);
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return kvgpu__fail(g, KV_ENOMEM, "host: out of memory");
	g->impl = h;
	for (int s = 0; s < 2; s++) {
		size_t bytes = (size_t)(g->lay[s].nb ? g->lay[s].nb : 1) *
			       kvgpu_block_bytes(&g->geom);

		h->pool[s] = malloc(bytes);
		if (h->pool[s] == NULL)
			goto nomem;
		kvgpu__cpu_poison_all(h->pool[s], &g->lay[s]);
	}
	h->stage = malloc(kvgpu_block_bytes(&g->geom));
	if (h->stage == NULL)
		goto nomem;
	return KV_OK;
nomem:
	free(h->pool[0]);
	free(h->pool[1]);
	free(h);
	g->impl = NULL;
	return kvgpu__fail(g, KV_ENOMEM, "host: cannot allocate the pools "
			   "(%llu + %llu blocks of %llu bytes)",
			   (unsigned long long)g->geom.dev_blocks,
			   (unsigned long long)g->geom.host_blocks,
			   (unsigned long long)kvgpu_block_bytes(&g->geom));
}

static void
host_close(kvgpu *g)
{
	struct host *h = g->impl;

	if (h == NULL)
		return;
	for (int s = 0; s < KVGPU_NSIDES; s++)
		free(h->pool[s]);
	free(h->stage);
	free(h);
}

static kv_err
host_poison(kvgpu *g, enum kvgpu_side side, const int32_t *b, size_t n)
{
	struct host *h = g->impl;

	kvgpu__cpu_poison(h->pool[side], &g->lay[side], b, n);
	return KV_OK;
}

static kv_err
host_fill(kvgpu *g, enum kvgpu_side side, const struct kvgpu_slot *s,
	  size_t n)
{
	struct host *h = g->impl;

	kvgpu__cpu_fill(h->pool[side], &g->lay[side], s, n);
	return KV_OK;
}

static void
copy_words(uint32_t *d, const uint32_t *s, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++)
		d[k] = s[k];
}

/* Copy blocks from pool (sp, ys) to pool (dp, yd) by strategy. */
static void
host_move(struct host *h, uint32_t *dp, const struct kvgpu_lay *yd,
	  const uint32_t *sp, const struct kvgpu_lay *ys,
	  enum kvgpu_strat strat, const struct kvgpu_pair *p, size_t n,
	  struct kvgpu_timing *t)
{
	uint32_t nc = kvgpu_lay_chunks(ys);
	uint64_t cw = kvgpu_lay_chunk_words(ys);
	int64_t t0 = kvgpu__now_ns();

	for (size_t i = 0; i < n; i++) {

		switch (strat) {
		case KVGPU_PER_CHUNK:
		case KVGPU_BATCH:
			kvgpu__cpu_copy_block(dp, yd, (uint64_t)p[i].dst, sp,
					      ys, (uint64_t)p[i].src);
			break;
		case KVGPU_GATHER:
			for (uint32_t c = 0; c < nc; c++)
				copy_words(dp + kvgpu_chunk_at(yd, p[i].dst, c),
					   sp + kvgpu_chunk_at(ys, p[i].src, c),
					   cw);
			break;
		default:	/* staged */
			for (uint32_t c = 0; c < nc; c++)
				copy_words(h->stage + c * cw,
					   sp + kvgpu_chunk_at(ys, p[i].src, c),
					   cw);
			for (uint32_t c = 0; c < nc; c++)
				memcpy(dp + kvgpu_chunk_at(yd, p[i].dst, c),
				       h->stage + c * cw, (size_t)cw * 4);
			break;
		}
	}
	t->dev_ns = kvgpu__now_ns() - t0;
	t->submit_ns = t->dev_ns;
}

static kv_err
host_copy(kvgpu *g, enum kvgpu_dir dir, enum kvgpu_strat strat,
	  const struct kvgpu_pair *p, size_t n, struct kvgpu_timing *t)
{
	struct host *h = g->impl;
	int sside = dir == KVGPU_H2D ? KVGPU_HOST : KVGPU_DEV;
	int dside = dir == KVGPU_D2H ? KVGPU_HOST : KVGPU_DEV;

	host_move(h, h->pool[dside], &g->lay[dside], h->pool[sside],
		  &g->lay[sside], strat, p, n, t);
	return KV_OK;
}

static kv_err
host_tier_grow(kvgpu *g, uint32_t tier, const struct kvgpu_lay *old)
{
	struct host *h = g->impl;
	int side = KVGPU_TIER0 + (int)tier;
	const struct kvgpu_lay *y = &g->lay[side];
	uint32_t *np = malloc((size_t)(y->nb ? y->nb : 1) *
			      kvgpu_block_bytes(&g->geom));

	if (np == NULL)
		return kvgpu__fail(g, KV_ENOMEM, "host: cannot allocate tier "
				   "%u (%llu blocks)", tier,
				   (unsigned long long)y->nb);
	kvgpu__cpu_poison_all(np, y);
	if (h->pool[side] != NULL)
		kvgpu__cpu_copy_pool(np, y, h->pool[side], old);
	free(h->pool[side]);
	h->pool[side] = np;
	return KV_OK;
}

static kv_err
host_tier_copy(kvgpu *g, enum kvgpu_dir dir, uint32_t tier,
	       enum kvgpu_strat strat, const struct kvgpu_pair *p, size_t n,
	       struct kvgpu_timing *t)
{
	struct host *h = g->impl;
	int ts = KVGPU_TIER0 + (int)tier;
	int sside = dir == KVGPU_T2D ? ts : KVGPU_DEV;
	int dside = dir == KVGPU_D2T ? ts : KVGPU_DEV;

	host_move(h, h->pool[dside], &g->lay[dside], h->pool[sside],
		  &g->lay[sside], strat, p, n, t);
	return KV_OK;
}

/* Host to host: memcpy from the source's pool; else through words. */
static kv_err
host_peer(kvgpu *g, kvgpu *src, enum kvgpu_strat strat,
	  const struct kvgpu_pair *p, size_t n, struct kvgpu_timing *t)
{
	struct host *h = g->impl, *s = src->impl;

	if (src->ops != &kvgpu__host_ops)
		return kvgpu__peer_generic(g, src, p, n, t);
	host_move(h, h->pool[KVGPU_DEV], &g->lay[KVGPU_DEV],
		  s->pool[KVGPU_DEV], &src->lay[KVGPU_DEV], strat, p, n, t);
	return KV_OK;
}

static kv_err
host_verify(kvgpu *g, enum kvgpu_side side, const struct kvgpu_slot *s,
	    size_t n, struct kvgpu_verdict *out)
{
	struct host *h = g->impl;

	kvgpu__cpu_verify(h->pool[side], &g->lay[side], s, n, out);
	return KV_OK;
}

static kv_err
host_scan(kvgpu *g, enum kvgpu_side side, const int32_t *b, size_t n,
	  uint64_t *slots)
{
	struct host *h = g->impl;

	*slots = kvgpu__cpu_scan(h->pool[side], &g->lay[side], b, n);
	return KV_OK;
}

static kv_err
host_digest(kvgpu *g, enum kvgpu_side side, const int32_t *b, size_t n,
	    uint64_t *out)
{
	struct host *h = g->impl;

	*out = kvgpu__cpu_digest(h->pool[side], &g->lay[side], b, n);
	return KV_OK;
}

static kv_err
host_mem_info(kvgpu *g, struct kvgpu_mem *m)
{
	(void)g;
	(void)m;
	return KV_OK;
}

static kv_err
host_peek(kvgpu *g, enum kvgpu_side side, uint64_t off, uint32_t *w,
	  size_t n)
{
	struct host *h = g->impl;

	memcpy(w, h->pool[side] + off, n * 4);
	return KV_OK;
}

static kv_err
host_poke(kvgpu *g, enum kvgpu_side side, uint64_t off, const uint32_t *w,
	  size_t n)
{
	struct host *h = g->impl;

	memcpy(h->pool[side] + off, w, n * 4);
	return KV_OK;
}

static int
host_check(const kvgpu *g)
{
	const struct host *h = g->impl;

	if (h->pool[0] == NULL || h->pool[1] == NULL || h->stage == NULL)
		return 10;
	for (uint32_t t = 0; t < g->geom.tiers; t++)
		if (h->pool[KVGPU_TIER0 + t] == NULL)
			return 10;
	return 0;
}

const struct kvgpu_ops kvgpu__host_ops = {
	.name = "host",
	.open = host_open,
	.close = host_close,
	.poison = host_poison,
	.fill = host_fill,
	.copy = host_copy,
	.verify = host_verify,
	.scan_poison = host_scan,
	.digest = host_digest,
	.mem_info = host_mem_info,
	.peek = host_peek,
	.poke = host_poke,
	.check = host_check,
	.tier_grow = host_tier_grow,
	.tier_copy = host_tier_copy,
	.peer = host_peer,
};
