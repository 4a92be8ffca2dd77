/*
 * pool.h -- run N jobs in child processes, at most K at a time.
 *
 * A job is either a program (argv, run with execv) or a function of the
 * caller's, called in a forked child, that writes its result to a pipe;
 * the pool collects each job's exit status, wall time and result bytes
 * into the job's own slot, so what a caller reads does not depend on the
 * order in which the children finish.  Jobs start in index order.
 *
 * Why processes and not threads: a job is a whole simulation (catalogs,
 * plugins, a workload stream, an output directory, an exit status), and
 * one that crashes or is killed must not take its siblings down.
 *
 * The pool blocks SIGCHLD (and, with `trap_signals`, SIGINT and SIGTERM)
 * while it runs and takes them with sigtimedwait(), so no handler and no
 * global flag are needed; the children get the caller's mask back.
 *
 * Nothing here exits.  With `log`, the pool writes one progress line per
 * finished job ("WHO: [i/n] ID ok (T s)", or FAILED with the first line
 * of the job's stderr.txt) and one when it is interrupted.
 */
#ifndef UTIL_POOL_H
#define UTIL_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct pool_job {
	char *const *argv;	/* argv[0]: the program's path; NULL-ended.
				 * NULL: the job is pool_opts.run */
	const char *dir;	/* an existing directory: the child's stderr
				 * goes to DIR/stderr.txt, kept only when the
				 * job fails, and its stdout to /dev/null.
				 * NULL: the child inherits both */
	const char *id;		/* its name in progress lines */
	/* out */
	int status;		/* exit status, 128 + signal number, or -1
				 * when it never ran */
	double wall_s;
	char *result;		/* what a run job wrote to its fd (owned by
				 * the job: pool_jobs_release frees it) */
	size_t resultlen;
};

/*
 * A job run in the child: job `index` writes its result to `fd` and
 * returns the child's exit status (0 ok).  It must not return to the
 * caller's code: the pool calls _exit() with the value.
 */
typedef int pool_run_fn(void *ctx, size_t index, int fd);

struct pool_opts {
	unsigned par;		/* at most this many at once (0: 1) */
	pool_run_fn *run;	/* for jobs without argv */
	void *ctx;
	bool trap_signals;	/* SIGINT and SIGTERM stop the launching,
				 * send SIGTERM to the running jobs, and the
				 * temporary files they left (".NAME.tmp.PID"
				 * in their dir) are removed; without, they
				 * act as they would (they end the process) */
	bool stop_on_fail;	/* a failed job stops the launching; the
				 * running ones finish */
	const char *who;	/* the caller's name in progress lines */
	FILE *log;		/* progress lines; NULL: none */
};

enum pool_end {
	POOL_ERROR = -1,	/* a child could not be started (err set);
				 * the running ones were stopped */
	POOL_DONE = 0,		/* every job ran or was left (check each
				 * status) */
	POOL_INTERRUPTED = 1	/* SIGINT or SIGTERM (trap_signals) */
};

/* Run job[0..n) under o.  Each job's outputs are reset first. */
enum pool_end pool_exec(struct pool_job *job, size_t n,
			const struct pool_opts *o, char *err, size_t errlen);

/* The first line of a failed job's stderr.txt at path, for a progress
 * line ("" when there is none). */
void pool_first_line(const char *path, char *buf, size_t len);

/* Free the results of job[0..n). */
void pool_jobs_release(struct pool_job *job, size_t n);

#endif
