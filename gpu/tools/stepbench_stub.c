/*
 * stepbench_stub.c -- stepbench.h in a build without CUDA: no device.
 */
#include "config.h"

#include "gpu/tools/stepbench.h"

#include <stdio.h>

static int
sb__none(char *err, size_t errlen)
{
	snprintf(err, errlen, "built without CUDA");
	return -1;
}

int
sb_dev_probe(void)
{
	return -1;
}

int
sb_dev_open(struct sb_dev **d, char *name, size_t namelen, char *err,
	    size_t errlen)
{
	*d = NULL;
	if (namelen > 0)
		name[0] = '\0';
	return sb__none(err, errlen);
}

void
sb_dev_close(struct sb_dev *d)
{
	(void)d;
}

int
sb_dev_gemm(struct sb_dev *d, long m, long n, long k, int iters, double *ns,
	    char *err, size_t errlen)
{
	(void)d, (void)m, (void)n, (void)k, (void)iters, (void)ns;
	return sb__none(err, errlen);
}

int
sb_dev_kvread(struct sb_dev *d, long batch, long ctx, long block, long kvh,
	      long hd, int iters, double *ns, char *err, size_t errlen)
{
	(void)d, (void)batch, (void)ctx, (void)block, (void)kvh, (void)hd;
	(void)iters, (void)ns;
	return sb__none(err, errlen);
}

int
sb_dev_copy(struct sb_dev *d, size_t bytes, int iters, double *ns,
	    char *err, size_t errlen)
{
	(void)d, (void)bytes, (void)iters, (void)ns;
	return sb__none(err, errlen);
}
