/*
 * backend_cuda.cu -- the CUDA backend (kvgpu.h): the timing oracle on a
 * real device, and the same semantics as the host backend, bit for bit.
 *
 * Pools: the device pool is one cudaMalloc (never managed memory); the
 * host pool is cudaHostAlloc'd mapped (pinned, not write-combined: the
 * verifier reads it on the CPU) or malloc'd (pageable).
 * Everything runs on one non-default stream (cudaMemcpyBatchAsync refuses
 * the legacy stream) and every call is checked, kernels included.
 *
 * Copy strategies (docs/gpu-design.md §3):
 *   per-chunk  one cudaMemcpyAsync per contiguous chunk (vLLM V0
 *              swap_blocks);
 *   batch      one cudaMemcpyBatchAsync over every chunk (CUDA >= 12.8;
 *              12.8 and 12.9 take a failIdx, 13 does not);
 *   gather     one kernel: a warp-strided 16-byte copy of every chunk,
 *              reading or writing pinned host memory through its mapped
 *              device address (LMCache); pageable host memory: KV_ENOTSUP;
 *   staged     a kernel gathers the chunks into a device staging buffer,
 *              one DMA moves it, the other side scatters (host: memcpy,
 *              device: kernel).
 * D2D (copy-on-write) uses per-chunk memcpy or the gather kernel (batch
 * and staged fall back to them).
 *
 * Timing: CUDA events around the enqueued work (dev_ns, resolution about
 * 0.5 us) and the host clock around the enqueueing (submit_ns); the chunk
 * pointer lists a kernel needs are uploaded inside the timed span, as an
 * engine would have to.
 *
 * Fill, verify, poison, scan and digest run as kernels on the device pool
 * and with the host code of cpu_pool.c on the host pool, after a stream
 * synchronisation.
 */
#include "config.h"

#include "gpu/kvgpu_int.h"

#include <cuda_runtime.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CU_THREADS 256
#define CU_MAX_GRID 4096
#define CU_SEG_BYTES 4096u	/* gather: bytes a warp copies at a time */
#define CU_STAGE_BYTES (64u << 20)	/* staging buffer, each side */

struct cuda {
	uint32_t *dev, *host;
	uint32_t *tier[KVGPU_MAX_TIERS];	/* tier pools, as host */
	int devid;
	uint32_t *stage_d, *stage_h;	/* staged strategy */
	cudaStream_t st;
	cudaEvent_t e0, e1;
	void *dscr;			/* device scratch (lists) */
	size_t capd;
	void *hscr;			/* pinned host scratch */
	size_t caph;
	unsigned long long *dres;	/* 2 device counters */
	struct kvgpu_mem mem;
	bool pinned;
};

struct cu_chunk {
	uint64_t src, dst;		/* device-visible addresses */
};

/*
 * A failed call: its message, KV_ENOMEM when memory ran out, else
 * KV_ESTATE.  The runtime's last-error slot is cleared, so that a later
 * launch check (cudaGetLastError) does not report this call's error as
 * its own; a sticky error (a kernel fault) stays in the context anyway
 * and fails every later call with its own message.
 */
static kv_err
cu_fail(kvgpu *g, cudaError_t e, const char *what)
{
	(void)cudaGetLastError();
	return kvgpu__fail(g, e == cudaErrorMemoryAllocation ? KV_ENOMEM :
			   KV_ESTATE, "cuda: %s: %s (%d)", what,
			   cudaGetErrorString(e), (int)e);
}

#define CU(call, what)                                                     \
	do {                                                               \
		cudaError_t cu_e_ = (call);                                \
		if (cu_e_ != cudaSuccess)                                  \
			return cu_fail(g, cu_e_, what);                    \
	} while (0)

#define CU_LAUNCHED(what) CU(cudaGetLastError(), what)

static unsigned
grid_for(uint64_t n)
{
	uint64_t b = (n + CU_THREADS - 1) / CU_THREADS;

	return (unsigned)(b == 0 ? 1 : b > CU_MAX_GRID ? CU_MAX_GRID : b);
}

/* ---- kernels ------------------------------------------------------------ */

__global__ void
k_poison_blocks(uint32_t *pool, struct kvgpu_lay y, const int32_t *blocks,
		uint64_t n)
{
	uint64_t bw = (uint64_t)2 * y.layers * y.bs * y.tw;
	uint64_t cw = kvgpu_lay_chunk_words(&y);
	uint64_t total = n * bw;

	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	     i < total; i += (uint64_t)gridDim.x * blockDim.x) {
		uint64_t b = i / bw, w = i % bw;

		pool[kvgpu_chunk_at(&y, blocks[b], (uint32_t)(w / cw)) +
		     w % cw] = KVGPU_POISON;
	}
}

__global__ void
k_poison_all(uint32_t *pool, uint64_t n)
{
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	     i < n; i += (uint64_t)gridDim.x * blockDim.x)
		pool[i] = KVGPU_POISON;
}

/* One thread per (slot, layer, K/V, word). */
__global__ void
k_fill(uint32_t *pool, struct kvgpu_lay y, const struct kvgpu_slot *s,
       uint64_t n)
{
	uint64_t per = (uint64_t)2 * y.layers * y.tw;
	uint64_t total = n * per;

	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	     i < total; i += (uint64_t)gridDim.x * blockDim.x) {
		const struct kvgpu_slot *q = &s[i / per];
		uint64_t r = i % per;
		uint32_t l = (uint32_t)(r / (2 * y.tw));
		uint32_t kv = (uint32_t)(r / y.tw % 2);
		uint32_t w = (uint32_t)(r % y.tw);

		pool[kvgpu_word_at(&y, q->block, l, kv, q->slot, w)] =
			kvgpu_pattern(q->key, q->pos, l, kv, w);
	}
}

/* res[0]: mismatches; res[1]: smallest mismatching thread index. */
__global__ void
k_verify(const uint32_t *pool, struct kvgpu_lay y,
	 const struct kvgpu_slot *s, uint64_t n, unsigned long long *res)
{
	uint64_t per = (uint64_t)2 * y.layers * y.tw;
	uint64_t total = n * per;

	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	     i < total; i += (uint64_t)gridDim.x * blockDim.x) {
		const struct kvgpu_slot *q = &s[i / per];
		uint64_t r = i % per;
		uint32_t l = (uint32_t)(r / (2 * y.tw));
		uint32_t kv = (uint32_t)(r / y.tw % 2);
		uint32_t w = (uint32_t)(r % y.tw);

		if (pool[kvgpu_word_at(&y, q->block, l, kv, q->slot, w)] !=
		    kvgpu_pattern(q->key, q->pos, l, kv, w)) {
			atomicAdd(&res[0], 1ull);
			atomicMin(&res[1], (unsigned long long)i);
		}
	}
}

/* One thread per (block, slot): its layer-0 K words all poison. */
__global__ void
k_scan(const uint32_t *pool, struct kvgpu_lay y, const int32_t *blocks,
       uint64_t n, unsigned long long *res)
{
	uint64_t total = n * y.bs;

	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	     i < total; i += (uint64_t)gridDim.x * blockDim.x) {
		const uint32_t *w = pool + kvgpu_word_at(&y, blocks[i / y.bs],
							 0, 0,
							 (uint32_t)(i % y.bs),
							 0);
		uint32_t k = 0;

		while (k < y.tw && w[k] == KVGPU_POISON)
			k++;
		if (k == y.tw)
			atomicAdd(&res[0], 1ull);
	}
}

/* Sum of kvgpu_digest_term over the blocks, in logical word order. */
__global__ void
k_digest(const uint32_t *pool, struct kvgpu_lay y, const int32_t *blocks,
	 uint64_t n, unsigned long long *res)
{
	uint64_t bw = (uint64_t)2 * y.layers * y.bs * y.tw;
	uint64_t total = n * bw;
	unsigned long long sum = 0;

	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	     i < total; i += (uint64_t)gridDim.x * blockDim.x) {
		uint64_t b = i / bw, idx = i % bw;
		uint32_t w = (uint32_t)(idx % y.tw);
		uint32_t t = (uint32_t)(idx / y.tw % y.bs);
		uint32_t kv = (uint32_t)(idx / ((uint64_t)y.tw * y.bs) % 2);
		uint32_t l = (uint32_t)(idx / ((uint64_t)2 * y.tw * y.bs));

		sum += kvgpu_digest_term(
			pool[kvgpu_word_at(&y, blocks[b], l, kv, t, w)], b,
			idx);
	}
	atomicAdd(&res[0], sum);
}

/*
 * Copy chunks of `bytes` each.  Every chunk is cut into segments of
 * CU_SEG_BYTES and each warp copies one segment at a time, in 16-byte
 * words when everything is 16-byte aligned (a segment starts at a
 * multiple of CU_SEG_BYTES, so it keeps its chunk's alignment).  With a
 * warp per whole chunk, a few large chunks (a cross-layer block is one
 * 2 MiB chunk) ran on a few warps: one 2 MiB chunk read from pinned host
 * memory moved 0.4 GB/s on an H200 (docs/gpu.md §5.1).
 */
__global__ void
k_gather(const struct cu_chunk *c, uint64_t n, uint64_t bytes)
{
	uint64_t lane = threadIdx.x % 32;
	uint64_t warp = (blockIdx.x * (uint64_t)blockDim.x + threadIdx.x) / 32;
	uint64_t warps = (uint64_t)gridDim.x * blockDim.x / 32;
	uint64_t segs = (bytes + CU_SEG_BYTES - 1) / CU_SEG_BYTES;

	for (uint64_t j = warp; j < n * segs; j += warps) {
		const struct cu_chunk *q = &c[j / segs];
		uint64_t off = j % segs * CU_SEG_BYTES;
		uint64_t len = bytes - off < CU_SEG_BYTES ? bytes - off :
			       CU_SEG_BYTES;

		if (len % 16 == 0 && q->src % 16 == 0 && q->dst % 16 == 0) {
			const uint4 *s = (const uint4 *)(q->src + off);
			uint4 *d = (uint4 *)(q->dst + off);

			for (uint64_t k = lane; k < len / 16; k += 32)
				d[k] = s[k];
		} else {
			const uint32_t *s = (const uint32_t *)(q->src + off);
			uint32_t *d = (uint32_t *)(q->dst + off);

			for (uint64_t k = lane; k < len / 4; k += 32)
				d[k] = s[k];
		}
	}
}

/* ---- scratch ------------------------------------------------------------ */

static kv_err
dscratch(kvgpu *g, size_t bytes, void **out)
{
	struct cuda *c = (struct cuda *)g->impl;

	if (bytes > c->capd) {
		size_t n = bytes * 2;

		if (c->dscr != NULL)
			CU(cudaFree(c->dscr), "cudaFree");
		c->dscr = NULL;
		c->capd = 0;
		CU(cudaMalloc(&c->dscr, n), "cudaMalloc (scratch)");
		c->capd = n;
	}
	*out = c->dscr;
	return KV_OK;
}

static kv_err
hscratch(kvgpu *g, size_t bytes, void **out)
{
	struct cuda *c = (struct cuda *)g->impl;

	if (bytes > c->caph) {
		size_t n = bytes * 2;

		if (c->hscr != NULL)
			CU(cudaFreeHost(c->hscr), "cudaFreeHost");
		c->hscr = NULL;
		c->caph = 0;
		CU(cudaHostAlloc(&c->hscr, n, cudaHostAllocDefault),
		   "cudaHostAlloc (scratch)");
		c->caph = n;
	}
	*out = c->hscr;
	return KV_OK;
}

/* Upload n bytes to device scratch (synchronous: untimed calls). */
static kv_err
upload(kvgpu *g, const void *src, size_t bytes, void **out)
{
	struct cuda *c = (struct cuda *)g->impl;
	kv_err e = dscratch(g, bytes, out);

	if (e != KV_OK)
		return e;
	CU(cudaMemcpyAsync(*out, src, bytes, cudaMemcpyHostToDevice, c->st),
	   "upload");
	return KV_OK;
}

static kv_err
sync(kvgpu *g)
{
	struct cuda *c = (struct cuda *)g->impl;

	CU(cudaStreamSynchronize(c->st), "cudaStreamSynchronize");
	return KV_OK;
}

/* ---- open / close ------------------------------------------------------- */

extern "C" kv_err
kvgpu__cuda_probe(char *why, size_t whylen)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess || n == 0) {
		snprintf(why, whylen, "no CUDA device: %s",
			 e != cudaSuccess ? cudaGetErrorString(e) :
			 "device count 0");
		return KV_ENOTSUP;
	}
	return KV_OK;
}

static void
cuda_close(kvgpu *g)
{
	struct cuda *c = (struct cuda *)g->impl;

	if (c == NULL)
		return;
	if (c->st != NULL)
		(void)cudaStreamSynchronize(c->st);
	(void)cudaFree(c->dev);
	(void)cudaFree(c->stage_d);
	(void)cudaFree(c->dscr);
	(void)cudaFree(c->dres);
	for (int t = -1; t < KVGPU_MAX_TIERS; t++) {
		uint32_t *h = t < 0 ? c->host : c->tier[t];

		if (c->pinned)
			(void)cudaFreeHost(h);
		else
			free(h);
	}
	(void)cudaFreeHost(c->stage_h);
	(void)cudaFreeHost(c->hscr);
	if (c->e0 != NULL)
		(void)cudaEventDestroy(c->e0);
	if (c->e1 != NULL)
		(void)cudaEventDestroy(c->e1);
	if (c->st != NULL)
		(void)cudaStreamDestroy(c->st);
	free(c);
	g->impl = NULL;
}

static kv_err
cuda_open2(kvgpu *g, int dev)
{
	struct cuda *c = (struct cuda *)g->impl;
	size_t dbytes = (size_t)g->lay[KVGPU_DEV].nb *
			kvgpu_block_bytes(&g->geom);
	size_t hbytes = (size_t)(g->lay[KVGPU_HOST].nb ?
				 g->lay[KVGPU_HOST].nb : 1) *
			kvgpu_block_bytes(&g->geom);
	size_t fr, tot;

	c->devid = dev;
	CU(cudaSetDevice(dev), "cudaSetDevice");
	CU(cudaFree(0), "context");
	CU(cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo");
	c->mem.free0 = fr;
	c->mem.total = tot;
	/* free1 right after the pool: free0 - free1 - dev_bytes is the
	 * pool's own allocation overhead, nothing else's */
	CU(cudaMalloc(&c->dev, dbytes), "cudaMalloc (device pool)");
	CU(cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo");
	c->mem.free1 = fr;
	CU(cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking),
	   "cudaStreamCreate");
	CU(cudaEventCreate(&c->e0), "cudaEventCreate");
	CU(cudaEventCreate(&c->e1), "cudaEventCreate");
	CU(cudaMalloc(&c->dres, 2 * sizeof(unsigned long long)),
	   "cudaMalloc");
	CU(cudaMalloc(&c->stage_d, CU_STAGE_BYTES), "cudaMalloc (staging)");
	CU(cudaHostAlloc(&c->stage_h, CU_STAGE_BYTES, cudaHostAllocDefault),
	   "cudaHostAlloc (staging)");
	if (g->geom.hostmem == KVGPU_PINNED) {
		CU(cudaHostAlloc(&c->host, hbytes, cudaHostAllocMapped),
		   "cudaHostAlloc (host pool)");
		c->pinned = true;
	} else {
		c->host = (uint32_t *)malloc(hbytes);
		if (c->host == NULL)
			return kvgpu__fail(g, KV_ENOMEM, "cuda: host pool");
	}
	k_poison_all<<<grid_for(dbytes / 4), CU_THREADS, 0, c->st>>>(
		c->dev, dbytes / 4);
	CU_LAUNCHED("poison kernel");
	kvgpu__cpu_poison_all(c->host, &g->lay[KVGPU_HOST]);
	return sync(g);
}

static kv_err
cuda_open(kvgpu *g, const char *arg)
{
	struct cuda *c;
	int dev = arg != NULL ? atoi(arg) : 0;
	char why[200];
	kv_err e;

	if ((e = kvgpu__cuda_probe(why, sizeof(why))) != KV_OK)
		return kvgpu__fail(g, e, "cuda: %s", why);
	if (kvgpu_block_bytes(&g->geom) > CU_STAGE_BYTES)
		return kvgpu__fail(g, KV_EINVAL, "cuda: a block over the "
				   "64 MiB staging buffer");
	c = (struct cuda *)calloc(1, sizeof(*c));
	if (c == NULL)
		return kvgpu__fail(g, KV_ENOMEM, "cuda: out of memory");
	g->impl = c;
	if ((e = cuda_open2(g, dev)) != KV_OK) {
		char msg[sizeof(g->msg)];

		memcpy(msg, g->msg, sizeof(msg));
		cuda_close(g);
		memcpy(g->msg, msg, sizeof(msg));
	}
	return e;
}

/* ---- pool operations ---------------------------------------------------- */

/* The host memory of a pool other than the device's. */
static uint32_t *
hpool(struct cuda *c, int side)
{
	return side == KVGPU_HOST ? c->host : c->tier[side - KVGPU_TIER0];
}

static kv_err
cuda_poison(kvgpu *g, enum kvgpu_side side, const int32_t *b, size_t n)
{
	struct cuda *c = (struct cuda *)g->impl;
	void *d;
	kv_err e;

	if (side != KVGPU_DEV) {
		if ((e = sync(g)) != KV_OK)
			return e;
		kvgpu__cpu_poison(hpool(c, side), &g->lay[side], b, n);
		return KV_OK;
	}
	if ((e = upload(g, b, n * sizeof(*b), &d)) != KV_OK)
		return e;
	k_poison_blocks<<<grid_for(n * kvgpu_block_bytes(&g->geom) / 4),
			  CU_THREADS, 0, c->st>>>(c->dev, g->lay[side],
						  (const int32_t *)d, n);
	CU_LAUNCHED("poison kernel");
	return sync(g);
}

static kv_err
cuda_fill(kvgpu *g, enum kvgpu_side side, const struct kvgpu_slot *s,
	  size_t n)
{
	struct cuda *c = (struct cuda *)g->impl;
	void *d;
	kv_err e;

	if (side != KVGPU_DEV) {
		if ((e = sync(g)) != KV_OK)
			return e;
		kvgpu__cpu_fill(hpool(c, side), &g->lay[side], s, n);
		return KV_OK;
	}
	if ((e = upload(g, s, n * sizeof(*s), &d)) != KV_OK)
		return e;
	k_fill<<<grid_for(n * 2 * g->geom.layers * g->lay[side].tw),
		 CU_THREADS, 0, c->st>>>(c->dev, g->lay[side],
					 (const struct kvgpu_slot *)d, n);
	CU_LAUNCHED("fill kernel");
	return sync(g);
}

static kv_err
cuda_verify(kvgpu *g, enum kvgpu_side side, const struct kvgpu_slot *s,
	    size_t n, struct kvgpu_verdict *out)
{
	struct cuda *c = (struct cuda *)g->impl;
	const struct kvgpu_lay *y = &g->lay[side];
	unsigned long long res[2] = { 0, ~0ull };
	uint64_t per = (uint64_t)2 * y->layers * y->tw;
	void *d;
	kv_err e;

	if ((e = sync(g)) != KV_OK)
		return e;
	if (side != KVGPU_DEV) {
		kvgpu__cpu_verify(hpool(c, side), y, s, n, out);
		return KV_OK;
	}
	if ((e = upload(g, s, n * sizeof(*s), &d)) != KV_OK)
		return e;
	CU(cudaMemcpyAsync(c->dres, res, sizeof(res), cudaMemcpyHostToDevice,
			   c->st), "upload");
	k_verify<<<grid_for(n * per), CU_THREADS, 0, c->st>>>(
		c->dev, *y, (const struct kvgpu_slot *)d, n, c->dres);
	CU_LAUNCHED("verify kernel");
	CU(cudaMemcpyAsync(res, c->dres, sizeof(res), cudaMemcpyDeviceToHost,
			   c->st), "download");
	if ((e = sync(g)) != KV_OK)
		return e;
	out->words = n * per;
	out->mismatches = res[0];
	if (res[0] > 0) {
		uint64_t i = res[1], r = i % per;
		const struct kvgpu_slot *q = &s[i / per];
		uint32_t l = (uint32_t)(r / (2 * y->tw));
		uint32_t kv = (uint32_t)(r / y->tw % 2);
		uint32_t w = (uint32_t)(r % y->tw);

		out->first = (int64_t)(i / per);
		out->first_layer = l;
		out->first_kv = kv;
		out->first_word = w;
		out->want = kvgpu_pattern(q->key, q->pos, l, kv, w);
		CU(cudaMemcpyAsync(&out->got,
				   c->dev + kvgpu_word_at(y, q->block, l, kv,
							  q->slot, w),
				   4, cudaMemcpyDeviceToHost, c->st),
		   "download");
		return sync(g);
	}
	return KV_OK;
}

/*
 * A reduction over whole blocks of the device pool into one counter:
 * the poisoned slots (scan) or the digest.  The host pool is the host
 * code's.
 */
static kv_err
block_sum(kvgpu *g, enum kvgpu_side side, const int32_t *b, size_t n,
	  bool digest, uint64_t *out)
{
	struct cuda *c = (struct cuda *)g->impl;
	const struct kvgpu_lay *y = &g->lay[side];
	unsigned long long res[2] = { 0, 0 };
	void *d;
	kv_err e;

	if ((e = sync(g)) != KV_OK)
		return e;
	if (side != KVGPU_DEV) {
		*out = digest ? kvgpu__cpu_digest(hpool(c, side), y, b, n) :
		       kvgpu__cpu_scan(hpool(c, side), y, b, n);
		return KV_OK;
	}
	if ((e = upload(g, b, n * sizeof(*b), &d)) != KV_OK)
		return e;
	CU(cudaMemcpyAsync(c->dres, res, sizeof(res), cudaMemcpyHostToDevice,
			   c->st), "upload");
	if (digest)
		k_digest<<<grid_for(n * kvgpu_block_bytes(&g->geom) / 4),
			   CU_THREADS, 0, c->st>>>(c->dev, *y,
						   (const int32_t *)d, n,
						   c->dres);
	else
		k_scan<<<grid_for(n * g->geom.block_size), CU_THREADS, 0,
			 c->st>>>(c->dev, *y, (const int32_t *)d, n, c->dres);
	CU_LAUNCHED(digest ? "digest kernel" : "scan kernel");
	CU(cudaMemcpyAsync(res, c->dres, sizeof(res), cudaMemcpyDeviceToHost,
			   c->st), "download");
	if ((e = sync(g)) != KV_OK)
		return e;
	*out = res[0];
	return KV_OK;
}

static kv_err
cuda_scan(kvgpu *g, enum kvgpu_side side, const int32_t *b, size_t n,
	  uint64_t *slots)
{
	return block_sum(g, side, b, n, false, slots);
}

static kv_err
cuda_digest(kvgpu *g, enum kvgpu_side side, const int32_t *b, size_t n,
	    uint64_t *out)
{
	return block_sum(g, side, b, n, true, out);
}

static kv_err
cuda_mem_info(kvgpu *g, struct kvgpu_mem *m)
{
	struct cuda *c = (struct cuda *)g->impl;

	m->free0 = c->mem.free0;
	m->total = c->mem.total;
	m->free1 = c->mem.free1;
	return KV_OK;
}

static kv_err
cuda_peek(kvgpu *g, enum kvgpu_side side, uint64_t off, uint32_t *w,
	  size_t n)
{
	struct cuda *c = (struct cuda *)g->impl;
	kv_err e = sync(g);

	if (e != KV_OK)
		return e;
	if (side != KVGPU_DEV)
		memcpy(w, hpool(c, side) + off, n * 4);
	else	/* on the stream: the legacy stream is not ordered with it */
		CU(cudaMemcpyAsync(w, c->dev + off, n * 4,
				   cudaMemcpyDeviceToHost, c->st), "peek");
	return sync(g);
}

static kv_err
cuda_poke(kvgpu *g, enum kvgpu_side side, uint64_t off, const uint32_t *w,
	  size_t n)
{
	struct cuda *c = (struct cuda *)g->impl;
	kv_err e = sync(g);

	if (e != KV_OK)
		return e;
	if (side != KVGPU_DEV)
		memcpy(hpool(c, side) + off, w, n * 4);
	else
		CU(cudaMemcpyAsync(c->dev + off, w, n * 4,
				   cudaMemcpyHostToDevice, c->st), "poke");
	return sync(g);
}

/* ---- copies ------------------------------------------------------------- */

struct cu_plan {
	uint32_t *sbase, *dbase;	/* pools */
	const struct kvgpu_lay *ys, *yd;
	enum cudaMemcpyKind kind;
	uint32_t nc;			/* chunks a block */
	size_t cb;			/* bytes a chunk */
};

/* Chunk k of source block b, of destination block b. */
static uint32_t *
src_at(const struct cu_plan *p, int64_t b, uint32_t k)
{
	return p->sbase + kvgpu_chunk_at(p->ys, (uint64_t)b, k);
}

static uint32_t *
dst_at(const struct cu_plan *p, int64_t b, uint32_t k)
{
	return p->dbase + kvgpu_chunk_at(p->yd, (uint64_t)b, k);
}

static kv_err
copy_per_chunk(kvgpu *g, const struct cu_plan *p,
	       const struct kvgpu_pair *pr, size_t n)
{
	struct cuda *c = (struct cuda *)g->impl;

	for (size_t i = 0; i < n; i++)
		for (uint32_t k = 0; k < p->nc; k++)
			CU(cudaMemcpyAsync(dst_at(p, pr[i].dst, k),
					   src_at(p, pr[i].src, k), p->cb,
					   p->kind, c->st), "cudaMemcpyAsync");
	return KV_OK;
}

#if defined(CUDART_VERSION) && CUDART_VERSION >= 12080
static struct cudaMemLocation
host_loc(void)
{
	struct cudaMemLocation l;

	memset(&l, 0, sizeof(l));
	l.type = cudaMemLocationTypeHost;
	return l;
}

/* The current device (cuda_open2 made it current). */
static struct cudaMemLocation
dev_loc(void)
{
	struct cudaMemLocation l;
	int d = 0;

	memset(&l, 0, sizeof(l));
	(void)cudaGetDevice(&d);
	l.type = cudaMemLocationTypeDevice;
	l.id = d;
	return l;
}
#endif

static kv_err
copy_batch(kvgpu *g, const struct cu_plan *p, const struct kvgpu_pair *pr,
	   size_t n)
{
#if defined(CUDART_VERSION) && CUDART_VERSION >= 12080
	struct cuda *c = (struct cuda *)g->impl;
	size_t m = n * p->nc;
	void *buf;
	void **dsts;
	const void **srcs;
	size_t *sizes;
	struct cudaMemcpyAttributes attr;
	size_t idx = 0;
	kv_err e = hscratch(g, m * (2 * sizeof(void *) + sizeof(size_t)),
			    &buf);

	if (e != KV_OK)
		return e;
	dsts = (void **)buf;
	srcs = (const void **)(dsts + m);
	sizes = (size_t *)(srcs + m);
	for (size_t i = 0, j = 0; i < n; i++)
		for (uint32_t k = 0; k < p->nc; k++, j++) {
			dsts[j] = dst_at(p, pr[i].dst, k);
			srcs[j] = src_at(p, pr[i].src, k);
			sizes[j] = p->cb;
		}
	memset(&attr, 0, sizeof(attr));
	attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
	/* where each side lives (the runtime may use it for pageable or
	 * HMM-managed host memory; CUDA memory it knows anyway) */
	attr.srcLocHint = p->kind == cudaMemcpyHostToDevice ? host_loc() :
			  dev_loc();
	attr.dstLocHint = p->kind == cudaMemcpyDeviceToHost ? host_loc() :
			  dev_loc();
#if CUDART_VERSION >= 13000
	CU(cudaMemcpyBatchAsync((void *const *)dsts, (const void *const *)srcs,
				sizes, m, &attr, &idx, 1, c->st),
	   "cudaMemcpyBatchAsync");
#else	/* CUDA 12.8 and 12.9: a failIdx before the stream */
	{
		size_t fail = 0;

		CU(cudaMemcpyBatchAsync(dsts, (void **)srcs, sizes, m, &attr,
					&idx, 1, &fail, c->st),
		   "cudaMemcpyBatchAsync");
	}
#endif
	return KV_OK;
#else
	(void)p;
	(void)pr;
	(void)n;
	return kvgpu__fail(g, KV_ENOTSUP, "cuda: batch copies need CUDA "
			   ">= 12.8");
#endif
}

/* Device-visible address of a word of a pool. */
static kv_err
dev_addr(kvgpu *g, uint32_t *base, bool host, uint64_t *out)
{
	void *d = base;

	if (host)
		CU(cudaHostGetDevicePointer(&d, base, 0),
		   "cudaHostGetDevicePointer");
	*out = (uint64_t)(uintptr_t)d;
	return KV_OK;
}

/* Gather kernel over a chunk list built in pinned scratch and uploaded
 * on the stream (timed). */
static kv_err
run_gather(kvgpu *g, struct cu_chunk *hc, size_t m, size_t cb)
{
	struct cuda *c = (struct cuda *)g->impl;
	void *d;
	kv_err e = dscratch(g, m * sizeof(*hc), &d);

	if (e != KV_OK)
		return e;
	CU(cudaMemcpyAsync(d, hc, m * sizeof(*hc), cudaMemcpyHostToDevice,
			   c->st), "upload chunks");
	k_gather<<<grid_for(m * ((cb + CU_SEG_BYTES - 1) / CU_SEG_BYTES) * 32),
		   CU_THREADS, 0, c->st>>>(
		(const struct cu_chunk *)d, m, cb);
	CU_LAUNCHED("gather kernel");
	return KV_OK;
}

static kv_err
copy_gather(kvgpu *g, const struct cu_plan *p, const struct kvgpu_pair *pr,
	    size_t n, bool shost, bool dhost)
{
	size_t m = n * p->nc;
	uint64_t sb, db;
	void *buf;
	struct cu_chunk *hc;
	kv_err e;

	if ((e = dev_addr(g, p->sbase, shost, &sb)) != KV_OK ||
	    (e = dev_addr(g, p->dbase, dhost, &db)) != KV_OK ||
	    (e = hscratch(g, m * sizeof(*hc), &buf)) != KV_OK)
		return e;
	hc = (struct cu_chunk *)buf;
	for (size_t i = 0, j = 0; i < n; i++)
		for (uint32_t k = 0; k < p->nc; k++, j++) {
			hc[j].src = sb + (uint64_t)((char *)src_at(p, pr[i].src,
								   k) -
						    (char *)p->sbase);
			hc[j].dst = db + (uint64_t)((char *)dst_at(p, pr[i].dst,
								   k) -
						    (char *)p->dbase);
		}
	return run_gather(g, hc, m, p->cb);
}

/*
 * Staged: the blocks go through the staging buffers in rounds of what
 * fits.  D2H: gather kernel into stage_d, one DMA to stage_h, CPU scatter.
 * H2D: CPU gather into stage_h, one DMA to stage_d, scatter kernel.
 */
static kv_err
copy_staged(kvgpu *g, const struct cu_plan *p, const struct kvgpu_pair *pr,
	    size_t n, bool d2h)
{
	struct cuda *c = (struct cuda *)g->impl;
	size_t bb = (size_t)p->nc * p->cb;
	size_t per = CU_STAGE_BYTES / bb;
	uint64_t devbase = (uint64_t)(uintptr_t)c->dev;
	uint64_t stbase = (uint64_t)(uintptr_t)c->stage_d;
	kv_err e;

	for (size_t i0 = 0; i0 < n; i0 += per) {
		size_t nn = n - i0 < per ? n - i0 : per;
		size_t m = nn * p->nc;
		struct cu_chunk *hc;
		void *buf;

		if ((e = hscratch(g, m * sizeof(*hc), &buf)) != KV_OK)
			return e;
		hc = (struct cu_chunk *)buf;
		if (d2h) {
			for (size_t i = 0, j = 0; i < nn; i++)
				for (uint32_t k = 0; k < p->nc; k++, j++) {
					hc[j].src = devbase + 4 *
						kvgpu_chunk_at(p->ys,
							       pr[i0 + i].src,
							       k);
					hc[j].dst = stbase + j * p->cb;
				}
			if ((e = run_gather(g, hc, m, p->cb)) != KV_OK)
				return e;
			CU(cudaMemcpyAsync(c->stage_h, c->stage_d, m * p->cb,
					   cudaMemcpyDeviceToHost, c->st),
			   "staged DMA");
			if ((e = sync(g)) != KV_OK)
				return e;
			for (size_t i = 0, j = 0; i < nn; i++)
				for (uint32_t k = 0; k < p->nc; k++, j++)
					memcpy(p->dbase +
					       kvgpu_chunk_at(p->yd,
							      pr[i0 + i].dst,
							      k),
					       (char *)c->stage_h + j * p->cb,
					       p->cb);
		} else {
			for (size_t i = 0, j = 0; i < nn; i++)
				for (uint32_t k = 0; k < p->nc; k++, j++) {
					memcpy((char *)c->stage_h + j * p->cb,
					       p->sbase +
					       kvgpu_chunk_at(p->ys,
							      pr[i0 + i].src,
							      k), p->cb);
					hc[j].src = stbase + j * p->cb;
					hc[j].dst = devbase + 4 *
						kvgpu_chunk_at(p->yd,
							       pr[i0 + i].dst,
							       k);
				}
			CU(cudaMemcpyAsync(c->stage_d, c->stage_h, m * p->cb,
					   cudaMemcpyHostToDevice, c->st),
			   "staged DMA");
			if ((e = run_gather(g, hc, m, p->cb)) != KV_OK)
				return e;
			/* the chunk list lives in host scratch until the
			 * upload ran */
			if ((e = sync(g)) != KV_OK)
				return e;
		}
	}
	return KV_OK;
}

/* The end of a timed span that began at host time h0 with event e0. */
static kv_err
timed_end(kvgpu *g, int64_t h0, struct kvgpu_timing *t)
{
	struct cuda *c = (struct cuda *)g->impl;
	float ms = 0;

	CU(cudaEventRecord(c->e1, c->st), "cudaEventRecord");
	t->submit_ns = kvgpu__now_ns() - h0;
	CU(cudaEventSynchronize(c->e1), "cudaEventSynchronize");
	CU(cudaEventElapsedTime(&ms, c->e0, c->e1), "cudaEventElapsedTime");
	t->dev_ns = (int64_t)((double)ms * 1e6);
	return KV_OK;
}

/* Copy blocks from pool sside to pool dside (not both host memory). */
static kv_err
cuda_move(kvgpu *g, int sside, int dside, enum kvgpu_strat strat,
	  const struct kvgpu_pair *pr, size_t n, struct kvgpu_timing *t)
{
	struct cuda *c = (struct cuda *)g->impl;
	bool shost = sside != KVGPU_DEV, dhost = dside != KVGPU_DEV;
	struct cu_plan p;
	int64_t h0;
	kv_err e;

	p.ys = &g->lay[sside];
	p.yd = &g->lay[dside];
	p.sbase = shost ? hpool(c, sside) : c->dev;
	p.dbase = dhost ? hpool(c, dside) : c->dev;
	p.kind = dhost ? cudaMemcpyDeviceToHost :
		 shost ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice;
	p.nc = kvgpu_lay_chunks(p.ys);
	p.cb = (size_t)kvgpu_lay_chunk_words(p.ys) * 4;
	if (!shost && !dhost && (strat == KVGPU_BATCH ||
				 strat == KVGPU_STAGED))
		strat = strat == KVGPU_BATCH ? KVGPU_PER_CHUNK : KVGPU_GATHER;
	if (strat == KVGPU_GATHER && !c->pinned && (shost || dhost))
		return kvgpu__fail(g, KV_ENOTSUP, "cuda: the gather kernel "
				   "needs pinned host memory");
	if ((e = sync(g)) != KV_OK)
		return e;
	h0 = kvgpu__now_ns();
	CU(cudaEventRecord(c->e0, c->st), "cudaEventRecord");
	switch (strat) {
	case KVGPU_PER_CHUNK:
		e = copy_per_chunk(g, &p, pr, n);
		break;
	case KVGPU_BATCH:
		e = copy_batch(g, &p, pr, n);
		break;
	case KVGPU_GATHER:
		e = copy_gather(g, &p, pr, n, shost, dhost);
		break;
	default:
		e = copy_staged(g, &p, pr, n, dhost);
		break;
	}
	if (e != KV_OK)
		return e;
	return timed_end(g, h0, t);
}

static kv_err
cuda_copy(kvgpu *g, enum kvgpu_dir dir, enum kvgpu_strat strat,
	  const struct kvgpu_pair *pr, size_t n, struct kvgpu_timing *t)
{
	return cuda_move(g, dir == KVGPU_H2D ? KVGPU_HOST : KVGPU_DEV,
			 dir == KVGPU_D2H ? KVGPU_HOST : KVGPU_DEV, strat, pr,
			 n, t);
}

/* Tier pools: host memory as the host pool (pinned and mapped, or
 * pageable), so every strategy runs on them as on the host pool. */
static kv_err
cuda_tier_grow(kvgpu *g, uint32_t tier, const struct kvgpu_lay *old)
{
	struct cuda *c = (struct cuda *)g->impl;
	const struct kvgpu_lay *y = &g->lay[KVGPU_TIER0 + tier];
	size_t bytes = (size_t)(y->nb ? y->nb : 1) *
		       kvgpu_block_bytes(&g->geom);
	uint32_t *np = NULL;
	kv_err e;

	if ((e = sync(g)) != KV_OK)
		return e;
	if (c->pinned)
		CU(cudaHostAlloc(&np, bytes, cudaHostAllocMapped),
		   "cudaHostAlloc (tier pool)");
	else if ((np = (uint32_t *)malloc(bytes)) == NULL)
		return kvgpu__fail(g, KV_ENOMEM, "cuda: tier pool");
	kvgpu__cpu_poison_all(np, y);
	if (c->tier[tier] != NULL) {
		kvgpu__cpu_copy_pool(np, y, c->tier[tier], old);
		if (c->pinned)
			(void)cudaFreeHost(c->tier[tier]);
		else
			free(c->tier[tier]);
	}
	c->tier[tier] = np;
	return KV_OK;
}

static kv_err
cuda_tier_copy(kvgpu *g, enum kvgpu_dir dir, uint32_t tier,
	       enum kvgpu_strat strat, const struct kvgpu_pair *pr, size_t n,
	       struct kvgpu_timing *t)
{
	int ts = KVGPU_TIER0 + (int)tier;

	return cuda_move(g, dir == KVGPU_T2D ? ts : KVGPU_DEV,
			 dir == KVGPU_D2T ? ts : KVGPU_DEV, strat, pr, n, t);
}

/*
 * CUDA to CUDA: a peer copy chunk by chunk on this stream (one device: a
 * copy between the two device pools; two devices: over the peer link
 * where the driver has one, else staged by it).  Another source: through
 * host memory (kvgpu__peer_generic).
 */
static kv_err
cuda_peer(kvgpu *g, kvgpu *src, enum kvgpu_strat strat,
	  const struct kvgpu_pair *pr, size_t n, struct kvgpu_timing *t)
{
	struct cuda *c = (struct cuda *)g->impl, *sc;
	const struct kvgpu_lay *ys = &src->lay[KVGPU_DEV];
	const struct kvgpu_lay *yd = &g->lay[KVGPU_DEV];
	uint32_t nc = kvgpu_lay_chunks(ys);
	size_t cb = (size_t)kvgpu_lay_chunk_words(ys) * 4;
	int64_t h0;
	kv_err e;

	(void)strat;
	if (src->ops != &kvgpu__cuda_ops)
		return kvgpu__peer_generic(g, src, pr, n, t);
	sc = (struct cuda *)src->impl;
	if ((e = sync(src)) != KV_OK)
		return kvgpu__fail(g, e, "peer: source %s: %s", src->name,
				   src->msg);
	if ((e = sync(g)) != KV_OK)
		return e;
	h0 = kvgpu__now_ns();
	CU(cudaEventRecord(c->e0, c->st), "cudaEventRecord");
	for (size_t i = 0; i < n; i++)
		for (uint32_t k = 0; k < nc; k++) {
			uint64_t d = kvgpu_chunk_at(yd, (uint64_t)pr[i].dst, k);
			uint64_t o = kvgpu_chunk_at(ys, (uint64_t)pr[i].src, k);

			CU(cudaMemcpyPeerAsync(c->dev + d, c->devid,
					       sc->dev + o, sc->devid, cb,
					       c->st), "cudaMemcpyPeerAsync");
		}
	return timed_end(g, h0, t);
}

/* ---- device facts -------------------------------------------------------- */

static void
fact(kvgpu_fact_fn fn, void *ctx, const char *key, const char *fmt, ...)
{
	char v[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(v, sizeof(v), fmt, ap);
	va_end(ap);
	fn(ctx, key, v);
}

/* The largest single cudaMalloc: binary search in 64 MiB steps. */
static size_t
largest_alloc(size_t hi)
{
	size_t lo = 0, step = 64u << 20;

	for (int i = 0; i < 25 && hi - lo > step; i++) {
		size_t mid = lo + (hi - lo) / 2 / step * step;
		void *p = NULL;

		if (mid == lo)
			break;
		if (cudaMalloc(&p, mid) == cudaSuccess) {
			(void)cudaFree(p);
			lo = mid;
		} else {
			(void)cudaGetLastError();	/* clear it */
			hi = mid;
		}
	}
	return lo;
}

/* Free memory consumed by one allocation of `bytes` (granularity). */
static long long
alloc_delta(size_t bytes)
{
	size_t f0, f1, t;
	void *p = NULL;
	long long d;

	if (cudaMemGetInfo(&f0, &t) != cudaSuccess ||
	    cudaMalloc(&p, bytes) != cudaSuccess)
		return -1;
	d = cudaMemGetInfo(&f1, &t) == cudaSuccess ?
	    (long long)f0 - (long long)f1 : -1;
	(void)cudaFree(p);
	return d;
}

static kv_err
cuda_describe(kvgpu *g, kvgpu_fact_fn fn, void *ctx)
{
	static const struct {
		const char *key;
		enum cudaDeviceAttr a;
	} attrs[] = {
		{ "sm_count", cudaDevAttrMultiProcessorCount },
		{ "l2_bytes", cudaDevAttrL2CacheSize },
		{ "async_engines", cudaDevAttrAsyncEngineCount },
		{ "can_map_host_memory", cudaDevAttrCanMapHostMemory },
		{ "unified_addressing", cudaDevAttrUnifiedAddressing },
		{ "pageable_memory_access", cudaDevAttrPageableMemoryAccess },
		{ "memory_clock_khz", cudaDevAttrMemoryClockRate },
		{ "memory_bus_bits", cudaDevAttrGlobalMemoryBusWidth },
	};
	struct cudaDeviceProp prop;
	int dev = 0, v = 0, rt = 0, drv = 0;
	size_t fr, tot;
	void *h = NULL;
	int64_t t0;

	CU(cudaGetDevice(&dev), "cudaGetDevice");
	CU(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
	fact(fn, ctx, "device_name", "%s", prop.name);
	fact(fn, ctx, "compute_capability", "%d.%d", prop.major,
	     prop.minor);
	CU(cudaRuntimeGetVersion(&rt), "cudaRuntimeGetVersion");
	CU(cudaDriverGetVersion(&drv), "cudaDriverGetVersion");
	fact(fn, ctx, "cuda_runtime", "%d", rt);
	fact(fn, ctx, "cuda_driver", "%d", drv);
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		if (cudaDeviceGetAttribute(&v, attrs[i].a, dev) !=
		    cudaSuccess) {
			(void)cudaGetLastError();
			fact(fn, ctx, attrs[i].key, "unknown");
			continue;
		}
		fact(fn, ctx, attrs[i].key, "%d", v);
	}
	/* pinning: 1 GiB with cudaHostAlloc, default flags */
	t0 = kvgpu__now_ns();
	if (cudaHostAlloc(&h, 1u << 30, cudaHostAllocDefault) == cudaSuccess) {
		fact(fn, ctx, "pin_1gib_ns", "%lld",
		     (long long)(kvgpu__now_ns() - t0));
		(void)cudaFreeHost(h);
	} else {
		(void)cudaGetLastError();
		fact(fn, ctx, "pin_1gib_ns", "failed");
	}
	CU(cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo");
	fact(fn, ctx, "mem_free_bytes", "%zu", fr);
	fact(fn, ctx, "mem_total_bytes", "%zu", tot);
	fact(fn, ctx, "largest_alloc_bytes", "%zu", largest_alloc(fr));
	fact(fn, ctx, "alloc_1b_delta_bytes", "%lld", alloc_delta(1));
	fact(fn, ctx, "alloc_1mib_delta_bytes", "%lld", alloc_delta(1u << 20));
	return KV_OK;
}

static int
cuda_check(const kvgpu *g)
{
	const struct cuda *c = (const struct cuda *)g->impl;

	if (c->dev == NULL || c->host == NULL || c->st == NULL ||
	    c->e0 == NULL || c->e1 == NULL || c->dres == NULL ||
	    c->stage_d == NULL || c->stage_h == NULL)
		return 30;
	for (uint32_t t = 0; t < g->geom.tiers; t++)
		if (c->tier[t] == NULL)
			return 30;
	return 0;
}

const struct kvgpu_ops kvgpu__cuda_ops = {
	"cuda",
	cuda_open,
	cuda_close,
	cuda_poison,
	cuda_fill,
	cuda_copy,
	cuda_verify,
	cuda_scan,
	cuda_digest,
	cuda_mem_info,
	cuda_peek,
	cuda_poke,
	cuda_describe,
	cuda_check,
	cuda_tier_grow,
	cuda_tier_copy,
	cuda_peer,
};
