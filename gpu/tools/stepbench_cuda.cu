/*
 * stepbench_cuda.cu -- stepbench.h on a CUDA device.
 *
 * GEMMs go through cuBLAS's GemmEx in bf16 with fp32 accumulation, the
 * way a linear layer runs; cuBLAS is opened with dlopen (libcublas.so.13,
 * then .12, then libcublas.so) on the first GEMM, because this toolkit
 * ships no static cuBLAS and the KV-read and copy sections must run where
 * it is missing.  The KV read is our own kernel: each CTA takes one
 * sequence and KV head and a 256-token slice of its context, follows the
 * block table to each page and reads every K and V value of that head
 * with 16-byte loads, summing them (the sum is written, so nothing is
 * optimised away).  It is a bandwidth probe shaped like paged attention's
 * reads, not an attention kernel.
 */
#include "config.h"

extern "C" {
#include "gpu/tools/stepbench.h"
}

#include <cuda_runtime_api.h>
#include <cuda_bf16.h>
#include <cublas_api.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef cublasStatus_t (*sb_create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*sb_stream_fn)(cublasHandle_t, cudaStream_t);
typedef cublasStatus_t (*sb_destroy_fn)(cublasHandle_t);
typedef cublasStatus_t (*sb_gemm_fn)(cublasHandle_t, cublasOperation_t,
	cublasOperation_t, int, int, int, const void *, const void *,
	cudaDataType, int, const void *, cudaDataType, int, const void *,
	void *, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

struct sb_dev {
	cudaStream_t st;
	cudaEvent_t e0, e1;
	void *lib;
	cublasHandle_t h;
	sb_gemm_fn gemm;
	sb_destroy_fn destroy;
};

static int
sb__cuda(cudaError_t e, const char *what, char *err, size_t errlen)
{
	if (e == cudaSuccess)
		return 0;
	snprintf(err, errlen, "%s: %s", what, cudaGetErrorString(e));
	return -1;
}

extern "C" int
sb_dev_probe(void)
{
	int n = 0;

	return cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? 0 : -1;
}

extern "C" int
sb_dev_open(struct sb_dev **out, char *name, size_t namelen, char *err,
	    size_t errlen)
{
	struct cudaDeviceProp p;
	struct sb_dev *d;

	*out = NULL;
	if (sb_dev_probe() != 0) {
		snprintf(err, errlen, "no CUDA device");
		return -1;
	}
	if (sb__cuda(cudaGetDeviceProperties(&p, 0), "device properties",
		     err, errlen))
		return -1;
	snprintf(name, namelen, "%s", p.name);
	d = (struct sb_dev *)calloc(1, sizeof(*d));
	if (d == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (sb__cuda(cudaStreamCreateWithFlags(&d->st, cudaStreamNonBlocking),
		     "stream", err, errlen) ||
	    sb__cuda(cudaEventCreate(&d->e0), "event", err, errlen) ||
	    sb__cuda(cudaEventCreate(&d->e1), "event", err, errlen)) {
		free(d);
		return -1;
	}
	*out = d;
	return 0;
}

extern "C" void
sb_dev_close(struct sb_dev *d)
{
	if (d == NULL)
		return;
	if (d->destroy != NULL)
		d->destroy(d->h);
	cudaEventDestroy(d->e0);
	cudaEventDestroy(d->e1);
	cudaStreamDestroy(d->st);
	if (d->lib != NULL)
		dlclose(d->lib);
	free(d);
}

/* Load cuBLAS and make a handle on d's stream, once. */
static int
sb__cublas(struct sb_dev *d, char *err, size_t errlen)
{
	static const char *const libs[] = { "libcublas.so.13",
					    "libcublas.so.12",
					    "libcublas.so" };
	sb_create_fn create;
	sb_stream_fn stream;

	if (d->gemm != NULL)
		return 0;
	for (size_t i = 0; i < 3 && d->lib == NULL; i++)
		d->lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
	if (d->lib == NULL) {
		snprintf(err, errlen, "cuBLAS not found (libcublas.so.13; set "
			 "LD_LIBRARY_PATH to the toolkit's lib64)");
		return -1;
	}
	create = (sb_create_fn)dlsym(d->lib, "cublasCreate_v2");
	stream = (sb_stream_fn)dlsym(d->lib, "cublasSetStream_v2");
	d->destroy = (sb_destroy_fn)dlsym(d->lib, "cublasDestroy_v2");
	d->gemm = (sb_gemm_fn)dlsym(d->lib, "cublasGemmEx");
	if (create == NULL || stream == NULL || d->destroy == NULL ||
	    d->gemm == NULL || create(&d->h) != CUBLAS_STATUS_SUCCESS ||
	    stream(d->h, d->st) != CUBLAS_STATUS_SUCCESS) {
		snprintf(err, errlen, "cuBLAS: no usable handle");
		d->gemm = NULL;
		d->destroy = NULL;
		return -1;
	}
	return 0;
}

/* Small pseudo-random bf16 values (not zeros: power and timing differ). */
__global__ void
sb_fill(__nv_bfloat16 *x, size_t n, uint32_t seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint32_t h = (uint32_t)i * 2654435761u ^ seed;

		h ^= h >> 15;
		x[i] = __float2bfloat16(((float)(h & 1023) - 512.0f) / 4096.0f);
	}
}

/* Time iters launches of f on d's stream. */
template <typename F>
static int
sb__time(struct sb_dev *d, int iters, double *ns, F f, char *err,
	 size_t errlen)
{
	float ms = 0;

	for (int w = 0; w < 2; w++)	/* warm-up */
		if (f() != 0)
			goto fail;
	if (sb__cuda(cudaEventRecord(d->e0, d->st), "event", err, errlen))
		return -1;
	for (int i = 0; i < iters; i++)
		if (f() != 0)
			goto fail;
	if (sb__cuda(cudaEventRecord(d->e1, d->st), "event", err, errlen) ||
	    sb__cuda(cudaEventSynchronize(d->e1), "kernel", err, errlen) ||
	    sb__cuda(cudaEventElapsedTime(&ms, d->e0, d->e1), "event", err,
		     errlen))
		return -1;
	*ns = (double)ms * 1e6 / iters;
	return 0;
fail:
	snprintf(err, errlen, "launch failed: %s",
		 cudaGetErrorString(cudaGetLastError()));
	return -1;
}

extern "C" int
sb_dev_gemm(struct sb_dev *d, long m, long n, long k, int iters, double *ns,
	    char *err, size_t errlen)
{
	__nv_bfloat16 *x = NULL, *w = NULL, *y = NULL;
	const float one = 1.0f, zero = 0.0f;
	int rc = -1;

	if (sb__cublas(d, err, errlen) != 0)
		return -1;
	if (sb__cuda(cudaMalloc(&x, (size_t)m * k * 2), "malloc", err,
		     errlen) ||
	    sb__cuda(cudaMalloc(&w, (size_t)n * k * 2), "malloc", err,
		     errlen) ||
	    sb__cuda(cudaMalloc(&y, (size_t)m * n * 2), "malloc", err, errlen))
		goto out;
	sb_fill<<<1024, 256, 0, d->st>>>(x, (size_t)m * k, 1);
	sb_fill<<<1024, 256, 0, d->st>>>(w, (size_t)n * k, 2);
	/* row-major Y = X W^T is column-major Y^T = W^T' X': op T on W */
	rc = sb__time(d, iters, ns, [&]() {
		return d->gemm(d->h, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m,
			       (int)k, &one, w, CUDA_R_16BF, (int)k, x,
			       CUDA_R_16BF, (int)k, &zero, y, CUDA_R_16BF,
			       (int)n, CUBLAS_COMPUTE_32F,
			       CUBLAS_GEMM_DEFAULT) ==
		       CUBLAS_STATUS_SUCCESS ? 0 : -1;
	}, err, errlen);
out:
	cudaFree(x);
	cudaFree(w);
	cudaFree(y);
	return rc;
}

#define SB_SLICE 256	/* tokens a CTA reads */

/*
 * grid (batch * kvh, slices): CTA (s, h, slice) reads tokens
 * [slice*256, +256) of sequence s, head h; a page is [2][block][kvh][hd].
 */
__global__ void
sb_kvread(const uint4 *pool, const int32_t *table, long ctx, long block,
	  long kvh, long hd, long nblk_seq, float *out)
{
	long s = blockIdx.x / kvh, h = blockIdx.x % kvh;
	long vec = hd / 8;		/* 16-byte vectors a head row */
	long t0 = (long)blockIdx.y * SB_SLICE;
	long t1 = t0 + SB_SLICE < ctx ? t0 + SB_SLICE : ctx;
	float acc = 0;

	for (long i = threadIdx.x; i < (t1 - t0) * 2 * vec; i += blockDim.x) {
		long t = t0 + i / (2 * vec), kv = (i / vec) % 2, v = i % vec;
		long page = table[s * nblk_seq + t / block];
		long off = (((page * 2 + kv) * block + t % block) * kvh + h) *
			   vec + v;
		uint4 q = pool[off];

		acc += (float)(q.x ^ q.y ^ q.z ^ q.w);
	}
	atomicAdd(&out[s], acc);
}

extern "C" int
sb_dev_kvread(struct sb_dev *d, long batch, long ctx, long block, long kvh,
	      long hd, int iters, double *ns, char *err, size_t errlen)
{
	long nblk_seq = (ctx + block - 1) / block, nblk = batch * nblk_seq;
	size_t page = (size_t)2 * block * kvh * hd * 2;
	int32_t *tab = (int32_t *)malloc(nblk * sizeof(int32_t)), *dtab = NULL;
	void *pool = NULL;
	float *out = NULL;
	uint64_t r = 0x9e3779b97f4a7c15ull;
	int rc = -1;

	if (tab == NULL || hd % 8 != 0) {
		snprintf(err, errlen, tab ? "head size not a multiple of 8" :
			 "out of memory");
		free(tab);
		return -1;
	}
	for (long i = 0; i < nblk; i++)	/* a shuffled free list */
		tab[i] = (int32_t)i;
	for (long i = nblk - 1; i > 0; i--) {
		long j;
		int32_t t;

		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		j = (long)(r % (uint64_t)(i + 1));
		t = tab[i], tab[i] = tab[j], tab[j] = t;
	}
	if (sb__cuda(cudaMalloc(&pool, page * nblk), "malloc", err, errlen) ||
	    sb__cuda(cudaMalloc(&dtab, nblk * sizeof(int32_t)), "malloc", err,
		     errlen) ||
	    sb__cuda(cudaMalloc(&out, batch * sizeof(float)), "malloc", err,
		     errlen) ||
	    sb__cuda(cudaMemcpy(dtab, tab, nblk * sizeof(int32_t),
				cudaMemcpyHostToDevice), "copy", err, errlen))
		goto out;
	sb_fill<<<1024, 256, 0, d->st>>>((__nv_bfloat16 *)pool,
					 page * nblk / 2, 3);
	rc = sb__time(d, iters, ns, [&]() {
		dim3 g((unsigned)(batch * kvh),
		       (unsigned)((ctx + SB_SLICE - 1) / SB_SLICE));

		sb_kvread<<<g, 256, 0, d->st>>>((const uint4 *)pool, dtab,
						ctx, block, kvh, hd,
						nblk_seq, out);
		return cudaPeekAtLastError() == cudaSuccess ? 0 : -1;
	}, err, errlen);
out:
	free(tab);
	cudaFree(pool);
	cudaFree(dtab);
	cudaFree(out);
	return rc;
}

extern "C" int
sb_dev_copy(struct sb_dev *d, size_t bytes, int iters, double *ns,
	    char *err, size_t errlen)
{
	void *a = NULL, *b = NULL;
	int rc = -1;

	if (sb__cuda(cudaMalloc(&a, bytes), "malloc", err, errlen) ||
	    sb__cuda(cudaMalloc(&b, bytes), "malloc", err, errlen))
		goto out;
	rc = sb__time(d, iters, ns, [&]() {
		return cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice,
				       d->st) == cudaSuccess ? 0 : -1;
	}, err, errlen);
out:
	cudaFree(a);
	cudaFree(b);
	return rc;
}
