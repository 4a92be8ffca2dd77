/*
 * stepbench.h -- the device half of kvsim-stepbench (docs/gpu.md §5.2):
 * times one GEMM, one paged KV read or one device-to-device copy on a
 * CUDA device.  stepbench_cuda.cu implements it with CUDA and cuBLAS
 * (loaded at run time: the toolkit has no static cuBLAS to link, and the
 * program must start where cuBLAS is missing to run its other sections);
 * stepbench_stub.c, in a build without CUDA, says so.
 *
 * Every call returns 0, or -1 with a message in err.  Times are the mean
 * over iters back-to-back launches, measured with CUDA events, in ns.
 */
#ifndef GPU_TOOLS_STEPBENCH_H
#define GPU_TOOLS_STEPBENCH_H

#include <stddef.h>

struct sb_dev;

/* 0 when a CUDA device answers, -1 otherwise (no message). */
int sb_dev_probe(void);

int sb_dev_open(struct sb_dev **d, char *name, size_t namelen, char *err,
		size_t errlen);
void sb_dev_close(struct sb_dev *d);

/* Y[m x n] = X[m x k] W[n x k]^T in bf16, fp32 accumulation (cuBLAS
 * GemmEx, as a linear layer).  -1 also when cuBLAS cannot be loaded. */
int sb_dev_gemm(struct sb_dev *d, long m, long n, long k, int iters,
		double *ns, char *err, size_t errlen);

/* Read every K and V slot of batch sequences of ctx tokens through a
 * block table of block-token pages (scattered over the pool), kvh heads
 * of hd bf16 values, and reduce them; one layer. */
int sb_dev_kvread(struct sb_dev *d, long batch, long ctx, long block,
		  long kvh, long hd, int iters, double *ns, char *err,
		  size_t errlen);

/* cudaMemcpyAsync of bytes, device to device. */
int sb_dev_copy(struct sb_dev *d, size_t bytes, int iters, double *ns,
		char *err, size_t errlen);

#endif
