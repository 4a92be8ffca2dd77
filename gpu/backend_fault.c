/*
 * backend_fault.c -- a test-only wrapper that spoils one copy batch, to
 * prove that the verifier is not vacuous (docs/gpu-design.md §4).
 *
 * Name: "fault[:MODE[/DIR][@PAIR][:INNER]]", MODE none|corrupt|drop|
 * reorder|invert, DIR the copies it spoils (kvgpu_dir_name: d2h, the
 * default, h2d, d2d, d2t a tier store, t2d a tier load, peer a P/D
 * transfer into this backend; invert is d2h's alone), PAIR the pair of
 * the batch that corrupt and drop spoil (a number, or "last"; default 0:
 * the first; past the end of a batch: its last), INNER a backend name
 * (default "host").  Every call goes to INNER; the armed fault changes
 * one copy batch:
 *
 *   corrupt  after the batch, bit 0 of the first word of the pair's
 *            first chunk is flipped;
 *   drop     the first chunk of the pair is not copied (its old contents
 *            are put back);
 *   reorder  pair i lands on the destination of pair i+1 (a batch of two
 *            or more pairs);
 *   invert   a D2H batch is held back and runs after the next H2D batch:
 *            the ordering hazard of a swap-in that reuses a block the
 *            swap-out of the same step frees.  Poisoning passes the held
 *            batch by (it would precede the copy anyway); any other call
 *            runs it first.  A held batch that no swap-in overtook onto
 *            a block it reads spoiled nothing: it is not counted and the
 *            next D2H batch is held instead, until one is spoiled.
 *
 * `injected` counts the batches really spoiled (kvgpu_fault_stats), so a
 * run that reads 0 tested nothing (kvsim validate fails it).  Only the
 * copy is spoiled; counting and checks stay the inner backend's.
 */
#include "config.h"

#include "gpu/kvgpu_int.h"

#include <stdlib.h>
#include <string.h>

struct fault {
	kvgpu *in;
	enum kvgpu_fault mode;
	enum kvgpu_dir dir;
	uint32_t skip;
	uint32_t pair;		/* corrupt, drop: this pair of the batch */
	bool done;		/* fired (invert: holding, or spoiled) */
	bool spoiled;		/* invert: the held batch was overtaken */
	uint64_t injected, hazards;
	struct kvgpu_pair *held;	/* invert: the held D2H batch */
	size_t nheld, capheld;
	enum kvgpu_strat held_strat;
	struct kvgpu_pair *tmp;
	size_t captmp;
};

static kv_err
fault_open(kvgpu *g, const char *arg)
{
	struct fault *f = calloc(1, sizeof(*f));
	const char *inner = "host";
	char mode[32] = "none";
	kv_err e;

	if (f == NULL)
		return kvgpu__fail(g, KV_ENOMEM, "fault: out of memory");
	if (arg != NULL) {
		size_t n = strcspn(arg, ":");

		if (n >= sizeof(mode)) {
			free(f);
			return kvgpu__fail(g, KV_EINVAL, "fault: bad mode "
					   "'%s'", arg);
		}
		memcpy(mode, arg, n);
		mode[n] = '\0';
		if (arg[n] == ':')
			inner = arg + n + 1;
	}
	f->dir = KVGPU_D2H;
	{
		char *at = strchr(mode, '@'), *end, *sl;

		if (at != NULL) {
			*at++ = '\0';
			if (strcmp(at, "last") == 0) {
				f->pair = UINT32_MAX;
			} else {
				unsigned long u = strtoul(at, &end, 10);

				if (*at < '0' || *at > '9' || *end != '\0' ||
				    u > UINT32_MAX) {
					free(f);
					return kvgpu__fail(g, KV_EINVAL,
							   "fault: bad pair "
							   "'%s' (a number "
							   "or last)", at);
				}
				f->pair = (uint32_t)u;
			}
		}
		if ((sl = strchr(mode, '/')) != NULL) {
			*sl++ = '\0';
			if (!kvgpu_dir_parse(sl, &f->dir) ||
			    (strcmp(mode, "invert") == 0 &&
			     f->dir != KVGPU_D2H)) {
				free(f);
				return kvgpu__fail(g, KV_EINVAL, "fault: bad "
						   "direction '%s' (d2h, h2d, "
						   "d2d, d2t, t2d, peer; "
						   "invert: d2h)", sl);
			}
		}
	}
	if (!kvgpu_fault_parse(mode, &f->mode)) {
		free(f);
		return kvgpu__fail(g, KV_EINVAL, "fault: unknown mode '%s' "
				   "(none, corrupt, drop, reorder, invert)",
				   mode);
	}
	if (strncmp(inner, "fault", 5) == 0) {
		free(f);
		return kvgpu__fail(g, KV_EINVAL, "fault: cannot wrap itself");
	}
	f->in = kvgpu_open(inner, &g->geom, &e, g->msg, sizeof(g->msg));
	if (f->in == NULL) {
		free(f);
		return e;
	}
	g->impl = f;
	return KV_OK;
}

static void
fault_close(kvgpu *g)
{
	struct fault *f = g->impl;

	if (f == NULL)
		return;
	kvgpu_close(f->in);
	free(f->held);
	free(f->tmp);
	free(f);
}

static kv_err
pass(kvgpu *g, kvgpu *in, kv_err e)
{
	if (e != KV_OK)
		return kvgpu__fail(g, e, "%s", kvgpu_errmsg(in));
	return KV_OK;
}

/* Run the held D2H batch, if any. */
static kv_err
flush(kvgpu *g)
{
	struct fault *f = g->impl;
	size_t n = f->nheld;

	if (n == 0)
		return KV_OK;
	f->nheld = 0;
	if (!f->spoiled)
		f->done = false;	/* overtaken by nothing: hold the next */
	f->spoiled = false;
	return pass(g, f->in, kvgpu_copy(f->in, KVGPU_D2H, f->held_strat,
					 f->held, n, NULL));
}

static kv_err
fault_poison(kvgpu *g, enum kvgpu_side side, const int32_t *b, size_t n)
{
	struct fault *f = g->impl;

	return pass(g, f->in, kvgpu_poison(f->in, side, b, n));
}

static kv_err
fault_fill(kvgpu *g, enum kvgpu_side side, const struct kvgpu_slot *s,
	   size_t n)
{
	struct fault *f = g->impl;
	kv_err e = flush(g);

	return e != KV_OK ? e : pass(g, f->in, kvgpu_fill(f->in, side, s, n));
}

static kv_err
reserve(kvgpu *g, struct kvgpu_pair **p, size_t *cap, size_t n)
{
	struct kvgpu_pair *q;

	if (n <= *cap)
		return KV_OK;
	q = realloc(*p, n * sizeof(*q));
	if (q == NULL)
		return kvgpu__fail(g, KV_ENOMEM, "fault: out of memory");
	*p = q;
	*cap = n;
	return KV_OK;
}

/* Whether this batch is the one to spoil. */
static bool
fires(struct fault *f, enum kvgpu_dir dir, size_t n)
{
	if (f->done || f->mode == KVGPU_FAULT_NONE)
		return false;
	if (f->mode == KVGPU_FAULT_INVERT) {
		if (dir != KVGPU_D2H)
			return false;
	} else if (dir != f->dir) {
		return false;
	}
	if (f->mode == KVGPU_FAULT_REORDER && n < 2)
		return false;
	if (f->skip > 0) {
		f->skip--;
		return false;
	}
	f->done = true;
	if (f->mode != KVGPU_FAULT_INVERT)
		f->injected++;	/* invert: once a swap-in overtakes it */
	return true;
}

/* One copy of any kind, as the caller asked it. */
struct fmove {
	enum kvgpu_dir dir;
	uint32_t tier;		/* d2t, t2d */
	enum kvgpu_strat strat;
	kvgpu *src;		/* peer */
	struct kvgpu_timing *t;
};

/* Run the move on the inner backend. */
static kv_err
inner_move(kvgpu *g, const struct fmove *m, const struct kvgpu_pair *p,
	   size_t n)
{
	struct fault *f = g->impl;
	kv_err e;

	switch (m->dir) {
	case KVGPU_D2T:
	case KVGPU_T2D:
		e = kvgpu_tier_copy(f->in, m->dir, m->tier, m->strat, p, n,
				    m->t);
		break;
	case KVGPU_PEER:
		e = kvgpu_peer_copy(f->in, m->src, m->strat, p, n, m->t);
		break;
	default:
		e = kvgpu_copy(f->in, m->dir, m->strat, p, n, m->t);
		break;
	}
	return pass(g, f->in, e);
}

/* Run the move with the armed corrupt, drop or reorder. */
static kv_err
spoil(kvgpu *g, const struct fmove *m, const struct kvgpu_pair *p,
      size_t n)
{
	struct fault *f = g->impl;
	int dside = m->dir == KVGPU_D2H ? KVGPU_HOST :
		    m->dir == KVGPU_D2T ? KVGPU_TIER0 + (int)m->tier :
		    KVGPU_DEV;
	const struct kvgpu_lay *yd = &g->lay[dside];
	size_t at = f->pair < n ? f->pair : n - 1;
	uint64_t off = kvgpu_chunk_at(yd, (uint64_t)p[at].dst, 0);
	size_t cw = (size_t)kvgpu_lay_chunk_words(yd);
	uint32_t *save = NULL;
	kv_err e;

	switch (f->mode) {
	case KVGPU_FAULT_CORRUPT:
		e = inner_move(g, m, p, n);
		if (e == KV_OK) {
			uint32_t w;

			e = f->in->ops->peek(f->in, dside, off, &w, 1);
			w ^= 1u;
			if (e == KV_OK)
				e = f->in->ops->poke(f->in, dside, off, &w, 1);
		}
		return e;
	case KVGPU_FAULT_DROP:
		save = malloc(cw * 4);
		if (save == NULL)
			return kvgpu__fail(g, KV_ENOMEM, "fault: out of "
					   "memory");
		e = f->in->ops->peek(f->in, dside, off, save, cw);
		if (e == KV_OK)
			e = inner_move(g, m, p, n);
		if (e == KV_OK)
			e = f->in->ops->poke(f->in, dside, off, save, cw);
		free(save);
		return e;
	default:	/* reorder */
		if ((e = reserve(g, &f->tmp, &f->captmp, n)) != KV_OK)
			return e;
		for (size_t i = 0; i < n; i++) {
			f->tmp[i].src = p[i].src;
			f->tmp[i].dst = p[(i + 1) % n].dst;
		}
		return inner_move(g, m, f->tmp, n);
	}
}

static kv_err
fault_copy(kvgpu *g, enum kvgpu_dir dir, enum kvgpu_strat strat,
	   const struct kvgpu_pair *p, size_t n, struct kvgpu_timing *t)
{
	struct fault *f = g->impl;
	struct fmove m = { dir, 0, strat, NULL, t };
	kv_err e;

	if (dir != KVGPU_H2D && (e = flush(g)) != KV_OK)
		return e;
	if (!fires(f, dir, n)) {
		e = pass(g, f->in, kvgpu_copy(f->in, dir, strat, p, n, t));
		if (e == KV_OK && dir == KVGPU_H2D && f->nheld > 0) {
			uint64_t h = f->hazards;

			for (size_t i = 0; i < n; i++)
				for (size_t j = 0; j < f->nheld; j++)
					f->hazards += p[i].dst ==
						      f->held[j].src;
			if (f->hazards > h) {
				f->spoiled = true;
				f->injected++;
			}
			e = flush(g);
		}
		return e;
	}
	if (f->mode != KVGPU_FAULT_INVERT)
		return spoil(g, &m, p, n);
	/* invert: hold this D2H batch */
	if ((e = reserve(g, &f->held, &f->capheld, n)) != KV_OK)
		return e;
	memcpy(f->held, p, n * sizeof(*p));
	f->nheld = n;
	f->held_strat = strat;
	return KV_OK;
}

static kv_err
fault_tier_grow(kvgpu *g, uint32_t tier, const struct kvgpu_lay *old)
{
	struct fault *f = g->impl;
	kv_err e = flush(g);

	(void)old;
	return e != KV_OK ? e :
	       pass(g, f->in, kvgpu_tier_grow(f->in, tier,
					      (uint32_t)g->lay[KVGPU_TIER0 +
							       tier].nb));
}

static kv_err
fault_tier_copy(kvgpu *g, enum kvgpu_dir dir, uint32_t tier,
		enum kvgpu_strat strat, const struct kvgpu_pair *p, size_t n,
		struct kvgpu_timing *t)
{
	struct fault *f = g->impl;
	struct fmove m = { dir, tier, strat, NULL, t };
	kv_err e = flush(g);

	if (e != KV_OK)
		return e;
	return fires(f, dir, n) ? spoil(g, &m, p, n) : inner_move(g, &m, p, n);
}

static kv_err
fault_peer(kvgpu *g, kvgpu *src, enum kvgpu_strat strat,
	   const struct kvgpu_pair *p, size_t n, struct kvgpu_timing *t)
{
	struct fault *f = g->impl;
	struct fmove m = { KVGPU_PEER, 0, strat, src, t };
	kv_err e = flush(g);

	if (e != KV_OK)
		return e;
	return fires(f, KVGPU_PEER, n) ? spoil(g, &m, p, n) :
	       inner_move(g, &m, p, n);
}

static kv_err
fault_verify(kvgpu *g, enum kvgpu_side side, const struct kvgpu_slot *s,
	     size_t n, struct kvgpu_verdict *out)
{
	struct fault *f = g->impl;
	kv_err e = flush(g);

	return e != KV_OK ? e :
	       pass(g, f->in, kvgpu_verify(f->in, side, s, n, out));
}

static kv_err
fault_scan(kvgpu *g, enum kvgpu_side side, const int32_t *b, size_t n,
	   uint64_t *slots)
{
	struct fault *f = g->impl;
	kv_err e = flush(g);

	return e != KV_OK ? e :
	       pass(g, f->in, kvgpu_scan_poison(f->in, side, b, n, slots));
}

static kv_err
fault_digest(kvgpu *g, enum kvgpu_side side, const int32_t *b, size_t n,
	     uint64_t *out)
{
	struct fault *f = g->impl;
	kv_err e = flush(g);

	return e != KV_OK ? e :
	       pass(g, f->in, kvgpu_digest(f->in, side, b, n, out));
}

static kv_err
fault_mem_info(kvgpu *g, struct kvgpu_mem *m)
{
	struct fault *f = g->impl;

	return pass(g, f->in, kvgpu_mem_info(f->in, m));
}

static kv_err
fault_peek(kvgpu *g, enum kvgpu_side side, uint64_t off, uint32_t *w,
	   size_t n)
{
	struct fault *f = g->impl;
	kv_err e = flush(g);

	return e != KV_OK ? e : f->in->ops->peek(f->in, side, off, w, n);
}

static kv_err
fault_poke(kvgpu *g, enum kvgpu_side side, uint64_t off, const uint32_t *w,
	   size_t n)
{
	struct fault *f = g->impl;
	kv_err e = flush(g);

	return e != KV_OK ? e : f->in->ops->poke(f->in, side, off, w, n);
}

static int
fault_check(const kvgpu *g)
{
	const struct fault *f = g->impl;

	if (f->in == NULL || kvgpu_check(f->in) != 0)
		return 20;
	if (memcmp(kvgpu_geom_of(f->in), &g->geom, sizeof(g->geom)) != 0)
		return 21;
	if ((unsigned)f->mode > KVGPU_FAULT_INVERT ||
	    (unsigned)f->dir >= KVGPU_NMOVES)
		return 22;
	if (f->nheld > f->capheld ||
	    (f->nheld > 0 && (f->held == NULL ||
			      f->mode != KVGPU_FAULT_INVERT)))
		return 23;
	if (f->done && f->injected == 0 && f->nheld == 0)
		return 24;
	return 0;
}

const struct kvgpu_ops kvgpu__fault_ops = {
	.name = "fault",
	.open = fault_open,
	.close = fault_close,
	.poison = fault_poison,
	.fill = fault_fill,
	.copy = fault_copy,
	.verify = fault_verify,
	.scan_poison = fault_scan,
	.digest = fault_digest,
	.mem_info = fault_mem_info,
	.peek = fault_peek,
	.poke = fault_poke,
	.check = fault_check,
	.tier_grow = fault_tier_grow,
	.tier_copy = fault_tier_copy,
	.peer = fault_peer,
};

kv_err
kvgpu_fault_arm(kvgpu *g, enum kvgpu_fault mode, enum kvgpu_dir dir,
		uint32_t skip)
{
	struct fault *f;

	if (g->ops != &kvgpu__fault_ops)
		return kvgpu__fail(g, KV_EINVAL, "%s: not a fault backend",
				   g->name);
	if ((unsigned)mode > KVGPU_FAULT_INVERT ||
	    (unsigned)dir >= KVGPU_NMOVES)
		return kvgpu__fail(g, KV_EINVAL, "fault: bad mode or "
				   "direction");
	f = g->impl;
	f->mode = mode;
	f->dir = dir;
	f->skip = skip;
	f->done = false;
	return KV_OK;
}

kv_err
kvgpu_fault_pair(kvgpu *g, uint32_t pair)
{
	if (g->ops != &kvgpu__fault_ops)
		return kvgpu__fail(g, KV_EINVAL, "%s: not a fault backend",
				   g->name);
	((struct fault *)g->impl)->pair = pair;
	return KV_OK;
}

kv_err
kvgpu_fault_stats(const kvgpu *g, uint64_t *injected, uint64_t *hazards)
{
	const struct fault *f;

	*injected = *hazards = 0;
	if (g->ops != &kvgpu__fault_ops)
		return KV_EINVAL;
	f = g->impl;
	*injected = f->injected;
	*hazards = f->hazards;
	return KV_OK;
}
