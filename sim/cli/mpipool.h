/*
 * mpipool.h -- sweep points and capacity searches spread over the ranks
 * of an MPI job (docs/sweep.md "MPI").
 *
 * Under `mpirun -np N kvsim sweep ...` (or srun) every rank starts kvsim;
 * rank 0 runs the command and the others only serve it: rank 0 hands out
 * jobs one at a time to whichever worker asks next (a worker asks again
 * when its job is done), so a slow job holds up one rank and not a round.
 * A job is a program (util/pool.h's argv job) that the worker runs as a
 * child process, in rank 0's working directory, with the MPI launcher's
 * variables taken out of its environment; its exit status, wall time
 * and, when asked for, its standard output come back to the job's own
 * slot on rank 0, so what the command writes does not depend on which
 * rank ran what or when.  The ranks must share the file system: a
 * worker's job writes its files where a serial run would.
 *
 * Built with --with-mpi (sim/cli/mpipool.c); without it
 * (mpipool_none.c) nothing here is ever active and kvsim needs no MPI.
 */
#ifndef SIM_CLI_MPIPOOL_H
#define SIM_CLI_MPIPOOL_H

#include "util/pool.h"

#include <stdbool.h>
#include <stddef.h>

/*
 * Before a command that can spread its jobs: when started by an MPI
 * launcher, join the MPI job.  On a worker rank, serve rank 0 until it
 * ends and return true with *rc the process's exit status; false on rank
 * 0, under a launcher with one rank, and when not started by one (the
 * command then runs as it would).
 */
bool mpipool_start(int *argc, char ***argv, int *rc);

/* On rank 0 after the command: the workers are let go, MPI ends. */
void mpipool_end(void);

/* Whether jobs go to worker ranks: MPI runs with more than one rank. */
bool mpipool_active(void);

/*
 * Run job[0..n) on the worker ranks, as pool_exec would run them (o's
 * stop_on_fail, who and log; its par, run and trap_signals do not apply:
 * there is one job at a time per worker, every job is a program, and a
 * signal ends the MPI job).  With `capture`, a job's standard output is
 * its result.
 */
enum pool_end mpipool_exec(struct pool_job *job, size_t n,
			   const struct pool_opts *o, bool capture,
			   char *err, size_t errlen);

#endif
