/*
 * backend_cuda_stub.c -- the "cuda" backend of a build without CUDA
 * (configure found no nvcc): it opens nothing and says so, so that no
 * caller needs an #ifdef (docs/style.md §6.2).
 */
#include "config.h"

#include "gpu/kvgpu_int.h"

#include <stdio.h>

kv_err
kvgpu__cuda_probe(char *why, size_t whylen)
{
	snprintf(why, whylen, "built without CUDA (configure found no nvcc)");
	return KV_ENOTSUP;
}

static kv_err
stub_open(kvgpu *g, const char *arg)
{
	(void)arg;
	return kvgpu__fail(g, KV_ENOTSUP, "cuda: built without CUDA "
			   "(configure found no nvcc)");
}

static void
stub_close(kvgpu *g)
{
	(void)g;
}

const struct kvgpu_ops kvgpu__cuda_ops = {
	.name = "cuda",
	.open = stub_open,
	.close = stub_close,
};
