/*
 * mpipool_none.c -- mpipool.h without MPI (configured without
 * --with-mpi): never active, so sweep and capacity run their jobs in
 * local processes only.
 */
#include "config.h"

#include "sim/cli/mpipool.h"

#include <stdio.h>

bool
mpipool_start(int *argc, char ***argv, int *rc)
{
	(void)argc;
	(void)argv;
	(void)rc;
	return false;
}

void
mpipool_end(void)
{
}

bool
mpipool_active(void)
{
	return false;
}

enum pool_end
mpipool_exec(struct pool_job *job, size_t n, const struct pool_opts *o,
	     bool capture, char *err, size_t errlen)
{
	(void)job;
	(void)n;
	(void)o;
	(void)capture;
	snprintf(err, errlen, "this kvsim was built without MPI");
	return POOL_ERROR;
}
