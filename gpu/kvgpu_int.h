/*
 * kvgpu_int.h -- what the backends of gpu/ share.  Not installed.
 *
 * kvgpu.c owns the handle, the argument checks (ids in range, independent
 * batches) and the names; a backend implements struct kvgpu_ops and sees
 * only arguments that passed those checks.  The kvgpu__cpu_* helpers do
 * the work on a pool in host memory: the whole host backend, and the host
 * pool of the CUDA backend.
 */
#ifndef KVGPU_INT_H
#define KVGPU_INT_H

#include "gpu/kvgpu.h"
#include "gpu/kv_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kvgpu_ops {
	const char *name;
	kv_err (*open)(kvgpu *g, const char *arg);	/* arg: after ':' */
	void (*close)(kvgpu *g);
	kv_err (*poison)(kvgpu *g, enum kvgpu_side side,
			 const int32_t *blocks, size_t n);
	kv_err (*fill)(kvgpu *g, enum kvgpu_side side,
		       const struct kvgpu_slot *s, size_t n);
	kv_err (*copy)(kvgpu *g, enum kvgpu_dir dir, enum kvgpu_strat strat,
		       const struct kvgpu_pair *p, size_t n,
		       struct kvgpu_timing *t);
	kv_err (*verify)(kvgpu *g, enum kvgpu_side side,
			 const struct kvgpu_slot *s, size_t n,
			 struct kvgpu_verdict *out);
	kv_err (*scan_poison)(kvgpu *g, enum kvgpu_side side,
			      const int32_t *blocks, size_t n,
			      uint64_t *slots);
	kv_err (*digest)(kvgpu *g, enum kvgpu_side side,
			 const int32_t *blocks, size_t n, uint64_t *out);
	kv_err (*mem_info)(kvgpu *g, struct kvgpu_mem *m);
	/* Read / write n raw words at a word offset (the fault wrapper). */
	kv_err (*peek)(kvgpu *g, enum kvgpu_side side, uint64_t off,
		       uint32_t *w, size_t n);
	kv_err (*poke)(kvgpu *g, enum kvgpu_side side, uint64_t off,
		       const uint32_t *w, size_t n);
	/* Optional: device facts as key/value pairs (kvgpu_describe). */
	kv_err (*describe)(kvgpu *g, kvgpu_fact_fn fn, void *ctx);
	/* Optional: the backend's own invariants for kvgpu_check(), 0 or
	 * the number (kvgpu.h) of the first one broken. */
	int (*check)(const kvgpu *g);
	/* Tier pools (needed once a geometry has tiers): reallocate tier
	 * pool `tier` for g->lay[KVGPU_TIER0 + tier] (already grown; old:
	 * its record before, nb 0 for a new tier), keeping its blocks. */
	kv_err (*tier_grow)(kvgpu *g, uint32_t tier,
			    const struct kvgpu_lay *old);
	/* dir KVGPU_D2T or KVGPU_T2D, checked arguments. */
	kv_err (*tier_copy)(kvgpu *g, enum kvgpu_dir dir, uint32_t tier,
			    enum kvgpu_strat strat,
			    const struct kvgpu_pair *p, size_t n,
			    struct kvgpu_timing *t);
	/* Optional: the peer copy into g (kvgpu_peer_copy); NULL: the
	 * generic copy through host memory (kvgpu__peer_generic). */
	kv_err (*peer)(kvgpu *g, kvgpu *src, enum kvgpu_strat strat,
		       const struct kvgpu_pair *p, size_t n,
		       struct kvgpu_timing *t);
};

struct kvgpu {
	const struct kvgpu_ops *ops;
	struct kvgpu_geom geom;
	struct kvgpu_lay lay[KVGPU_NSIDES];	/* by enum kvgpu_side */
	char name[64];
	void *impl;
	uint8_t *mark;			/* independence check scratch */
	size_t nmark;			/* its bytes: the largest pool + 1 */
	char msg[256];
};

kv_err kvgpu__fail(kvgpu *g, kv_err e, const char *fmt, ...)
#ifdef __GNUC__
	__attribute__((format(printf, 3, 4)))
#endif
	;

/* The peer copy through host memory, chunk by chunk (peek, poke). */
kv_err kvgpu__peer_generic(kvgpu *dst, kvgpu *src,
			   const struct kvgpu_pair *p, size_t n,
			   struct kvgpu_timing *t);

/* Monotonic clock, ns. */
int64_t kvgpu__now_ns(void);

/* ---- a pool in host memory ---------------------------------------------- */

void kvgpu__cpu_poison(uint32_t *pool, const struct kvgpu_lay *y,
		       const int32_t *blocks, size_t n);
void kvgpu__cpu_poison_all(uint32_t *pool, const struct kvgpu_lay *y);
void kvgpu__cpu_fill(uint32_t *pool, const struct kvgpu_lay *y,
		     const struct kvgpu_slot *s, size_t n);
void kvgpu__cpu_verify(const uint32_t *pool, const struct kvgpu_lay *y,
		       const struct kvgpu_slot *s, size_t n,
		       struct kvgpu_verdict *out);
uint64_t kvgpu__cpu_scan(const uint32_t *pool, const struct kvgpu_lay *y,
			 const int32_t *blocks, size_t n);
uint64_t kvgpu__cpu_digest(const uint32_t *pool, const struct kvgpu_lay *y,
			   const int32_t *blocks, size_t n);
/* Copy block sb of (src, ys) to block db of (dst, yd), chunk by chunk. */
void kvgpu__cpu_copy_block(uint32_t *dst, const struct kvgpu_lay *yd,
			   uint64_t db, const uint32_t *src,
			   const struct kvgpu_lay *ys, uint64_t sb);

/* Copy every block of pool (src, ys) to the same id of (dst, yd), whose
 * other blocks the caller has poisoned (a tier pool that grew). */
void kvgpu__cpu_copy_pool(uint32_t *dst, const struct kvgpu_lay *yd,
			  const uint32_t *src, const struct kvgpu_lay *ys);

extern const struct kvgpu_ops kvgpu__host_ops;
extern const struct kvgpu_ops kvgpu__fault_ops;
extern const struct kvgpu_ops kvgpu__cuda_ops;	/* or the stub's */

/* The CUDA backend's device probe (the stub: KV_ENOTSUP). */
kv_err kvgpu__cuda_probe(char *why, size_t whylen);

#ifdef __cplusplus
}
#endif
#endif /* KVGPU_INT_H */
