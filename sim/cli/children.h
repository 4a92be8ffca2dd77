/*
 * children.h -- child `kvsim run`s in run directories, for sweep and
 * compare --suite: the executable to run, each directory made ready, and
 * the pool (util/pool.h) with its progress lines on stderr.
 */
#ifndef SIM_CLI_CHILDREN_H
#define SIM_CLI_CHILDREN_H

#include "util/pool.h"

#include <stdbool.h>
#include <stddef.h>

/* The running kvsim's path (/proc/self/exe) into buf; false with errno. */
bool children_self_exe(char *buf, size_t len);

/*
 * Make `dir` ready for a run: created (mkdir -p), and the reports, the
 * stderr.txt and the temporaries of an earlier, incomplete run removed.
 * KVSIM_EXIT_OK, or KVSIM_EXIT_USAGE with "PROG: DIR: why" printed.
 */
int children_dir_ready(const char *prog, const char *dir);

/*
 * Run job[0..n), `jobs` at a time, with a progress line per job on
 * stderr unless `quiet`; SIGINT and SIGTERM stop them (pool.h).
 */
enum pool_end children_run(const char *prog, struct pool_job *job, size_t n,
			   long jobs, bool quiet, char *err, size_t errlen);

#endif
