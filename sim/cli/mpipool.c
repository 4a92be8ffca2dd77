/*
 * mpipool.c -- jobs on the ranks of an MPI job (mpipool.h), with MPI.
 *
 * The protocol, on MPI_COMM_WORLD (rank 0 the coordinator):
 *   a worker sends REQ when it is idle and waits for an answer: TASK (a
 *   job to run; it answers with RES, which asks for the next one too),
 *   PAUSE (nothing left in this round; it sends REQ again and waits) or
 *   STOP (the command is over).
 * So a worker that is not running a job always has exactly one request
 * waiting at rank 0, between rounds too (capacity runs a round per
 * configuration): rank 0 keeps no state of its own across rounds, and
 * mpipool_end answers each worker's waiting request with STOP.  While
 * jobs remain, rank 0 takes any message; once all have started it takes
 * only results, so the waiting requests stay queued.
 *
 * A TASK is the job's index, whether its standard output is wanted, then
 * NUL-terminated strings: rank 0's working directory, the job's dir ("" for
 * none) and its argv.  A RES is the index, the exit status, the wall time,
 * then the bytes of the job's output.  The worker runs the job through
 * util/pool.h (one job, in a child process), which gives the stderr.txt
 * handling and the exit status exactly as a serial run has them.
 */
#include "config.h"

#include "sim/cli/mpipool.h"

#include "sim/cli/children.h"

#include <mpi.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum {
	MPIPOOL_REQ = 1,
	MPIPOOL_RES,
	MPIPOOL_TASK,
	MPIPOOL_PAUSE,
	MPIPOOL_STOP
};

struct mpipool__task_head {
	uint64_t index;
	uint32_t capture;
	uint32_t argc;
};

struct mpipool__res_head {
	uint64_t index;
	int32_t status;
	int32_t pad;
	double wall_s;
};

/* A task on a worker, as its child runs it. */
struct mpipool__task {
	const char *exe;	/* this rank's own kvsim */
	const char *cwd;
	char **argv;
	char **envp;
	bool capture;
};

/* The variables an MPI launcher sets; a child that saw them would take
 * itself for a rank. */
static bool
mpipool__launcher_var(const char *v)
{
	static const char *const pfx[] = { "OMPI_", "PMIX_", "PMI_", "OPAL_",
		"PRTE_", "HYDRA_", "MPI_LOCALNRANKS", "MPI_LOCALRANKID" };

	for (size_t i = 0; i < sizeof(pfx) / sizeof(pfx[0]); i++)
		if (strncmp(v, pfx[i], strlen(pfx[i])) == 0)
			return true;
	return false;
}

/* Started by an MPI launcher (Open MPI's mpirun, or srun with PMI/PMIx). */
static bool
mpipool__launched(void)
{
	return getenv("OMPI_COMM_WORLD_SIZE") != NULL ||
	       getenv("PMIX_RANK") != NULL || getenv("PMI_RANK") != NULL ||
	       getenv("PMI_SIZE") != NULL;
}

bool
mpipool_active(void)
{
	int on = 0, off = 0, size = 1;

	MPI_Initialized(&on);
	if (!on)
		return false;
	MPI_Finalized(&off);
	if (off)
		return false;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	return size > 1;
}

/*
 * MPI_Probe, without its busy wait: Open MPI's blocking calls poll at
 * full speed, which would take a core from the jobs while a rank waits
 * (rank 0 all through a sweep, a worker between rounds).  A job is a
 * whole simulation, so a millisecond's delay in noticing a message is
 * nothing.
 */
static void
mpipool__probe(int source, int tag, MPI_Status *st)
{
	const struct timespec ms = { 0, 1000 * 1000 };
	int flag = 0;

	for (;;) {
		MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, st);
		if (flag)
			return;
		nanosleep(&ms, NULL);
	}
}

/* ---- worker ------------------------------------------------------------ */

/* pool_run_fn, in the worker's child: the task's program. */
static int
mpipool__child(void *ctx, size_t index, int fd)
{
	const struct mpipool__task *t = ctx;

	(void)index;
	/* killed with its rank (scancel, Ctrl-C at mpirun): a job must not
	 * outlive the MPI job and race a --resume */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (chdir(t->cwd) != 0) {
		fprintf(stderr, "kvsim: rank working directory %s: %s\n",
			t->cwd, strerror(errno));
		return 127;
	}
	if (t->capture)
		dup2(fd, STDOUT_FILENO);
	close(fd);
	execve(t->argv[0], t->argv, t->envp);
	fprintf(stderr, "cannot run %s: %s\n", t->argv[0], strerror(errno));
	return 127;
}

/* Run the TASK in buf[0..len); its RES into *res (malloc'ed). */
static bool
mpipool__run(char *buf, size_t len, struct mpipool__task *t,
	     char **res, size_t *reslen)
{
	struct mpipool__task_head h;
	struct mpipool__res_head r;
	struct pool_job job;
	struct pool_opts po = { .par = 1, .run = mpipool__child, .ctx = t };
	char **argv, *p = buf + sizeof(h), *end = buf + len, *dir, err[256];
	char *out;

	if (len <= sizeof(h) || buf[len - 1] != '\0')
		return false;
	memcpy(&h, buf, sizeof(h));
	if ((argv = calloc((size_t)h.argc + 1, sizeof(*argv))) == NULL)
		return false;
	t->cwd = p;
	p += strlen(p) + 1;
	dir = p < end ? p : NULL;
	p += dir ? strlen(p) + 1 : 0;
	for (uint32_t i = 0; i < h.argc && p < end; i++) {
		argv[i] = p;
		p += strlen(p) + 1;
	}
	if (h.argc == 0 || argv[h.argc - 1] == NULL) {
		free(argv);
		return false;
	}
	argv[0] = (char *)t->exe;
	t->argv = argv;
	t->capture = h.capture != 0;
	memset(&job, 0, sizeof(job));
	job.dir = dir != NULL && dir[0] ? dir : NULL;
	job.id = "";
	if (pool_exec(&job, 1, &po, err, sizeof(err)) == POOL_ERROR) {
		fprintf(stderr, "kvsim: rank: %s\n", err);
		job.status = 127;
	}
	t->argv = NULL;
	free(argv);
	memset(&r, 0, sizeof(r));
	r.index = h.index;
	r.status = job.status;
	r.wall_s = job.wall_s;
	out = malloc(sizeof(r) + job.resultlen);
	if (out != NULL) {
		memcpy(out, &r, sizeof(r));
		if (job.resultlen)
			memcpy(out + sizeof(r), job.result, job.resultlen);
	}
	*res = out;
	*reslen = sizeof(r) + job.resultlen;
	pool_jobs_release(&job, 1);
	return out != NULL;
}

/* The launcher's variables left out of the environment. */
static char **
mpipool__env(void)
{
	size_t n = 0, k = 0;
	char **e;

	while (environ[n] != NULL)
		n++;
	if ((e = calloc(n + 1, sizeof(*e))) == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!mpipool__launcher_var(environ[i]))
			e[k++] = environ[i];
	return e;
}

/* A worker rank: ask, run, answer, until STOP; the exit status. */
static int
mpipool__serve(void)
{
	char exe[PATH_MAX], *buf = NULL, *res = NULL;
	struct mpipool__task t;
	size_t reslen = 0;

	memset(&t, 0, sizeof(t));
	t.exe = exe;
	if (!children_self_exe(exe, sizeof(exe)) ||
	    (t.envp = mpipool__env()) == NULL) {
		fprintf(stderr, "kvsim: rank: cannot find the kvsim "
			"executable or copy the environment\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
		return 1;
	}
	MPI_Send(NULL, 0, MPI_BYTE, 0, MPIPOOL_REQ, MPI_COMM_WORLD);
	for (;;) {
		MPI_Status st;
		int count;

		mpipool__probe(0, MPI_ANY_TAG, &st);
		MPI_Get_count(&st, MPI_BYTE, &count);
		free(buf);
		if ((buf = malloc((size_t)count + 1)) == NULL)
			MPI_Abort(MPI_COMM_WORLD, 1);
		MPI_Recv(buf, count, MPI_BYTE, 0, st.MPI_TAG, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		if (st.MPI_TAG == MPIPOOL_STOP)
			break;
		if (st.MPI_TAG != MPIPOOL_TASK) {
			MPI_Send(NULL, 0, MPI_BYTE, 0, MPIPOOL_REQ,
				 MPI_COMM_WORLD);
			continue;
		}
		if (!mpipool__run(buf, (size_t)count, &t, &res, &reslen) ||
		    reslen > INT_MAX) {
			fprintf(stderr, "kvsim: rank: a bad task, or out of "
				"memory\n");
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		MPI_Send(res, (int)reslen, MPI_BYTE, 0, MPIPOOL_RES,
			 MPI_COMM_WORLD);
		free(res);
	}
	free(buf);
	free(t.envp);
	return 0;
}

bool
mpipool_start(int *argc, char ***argv, int *rc)
{
	int rank = 0;

	if (!mpipool__launched())
		return false;
	if (MPI_Init(argc, argv) != MPI_SUCCESS) {
		fprintf(stderr, "kvsim: MPI_Init failed\n");
		*rc = 1;
		return true;
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rank == 0)
		return false;
	*rc = mpipool__serve();
	MPI_Finalize();
	return true;
}

void
mpipool_end(void)
{
	int on = 0, off = 0, size = 1;

	MPI_Initialized(&on);
	if (!on)
		return;
	MPI_Finalized(&off);
	if (off)
		return;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int w = 1; w < size; w++) {
		MPI_Status st;

		mpipool__probe(w, MPIPOOL_REQ, &st);
		MPI_Recv(NULL, 0, MPI_BYTE, w, MPIPOOL_REQ, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		MPI_Send(NULL, 0, MPI_BYTE, w, MPIPOOL_STOP, MPI_COMM_WORLD);
	}
	MPI_Finalize();
}

/* ---- rank 0 ------------------------------------------------------------- */

/* Job i as a TASK, sent to worker w; false when it cannot be. */
static bool
mpipool__send(const struct pool_job *j, size_t i, bool capture,
	      const char *cwd, int w)
{
	struct mpipool__task_head h = { .index = i, .capture = capture };
	size_t len = sizeof(h) + strlen(cwd) + 1, off;
	const char *dir = j->dir != NULL ? j->dir : "";
	char *buf;

	len += strlen(dir) + 1;
	for (h.argc = 0; j->argv[h.argc] != NULL; h.argc++)
		len += strlen(j->argv[h.argc]) + 1;
	if (len > INT_MAX || (buf = malloc(len)) == NULL)
		return false;
	memcpy(buf, &h, sizeof(h));
	off = sizeof(h);
	memcpy(buf + off, cwd, strlen(cwd) + 1);
	off += strlen(cwd) + 1;
	memcpy(buf + off, dir, strlen(dir) + 1);
	off += strlen(dir) + 1;
	for (uint32_t a = 0; a < h.argc; a++) {
		memcpy(buf + off, j->argv[a], strlen(j->argv[a]) + 1);
		off += strlen(j->argv[a]) + 1;
	}
	MPI_Send(buf, (int)len, MPI_BYTE, w, MPIPOOL_TASK, MPI_COMM_WORLD);
	free(buf);
	return true;
}

/* The progress line of job j, the done-th of n to finish, on rank w. */
static void
mpipool__note(const struct pool_opts *o, const struct pool_job *j,
	      size_t done, size_t n, int w)
{
	char path[4200], line[512];

	if (j->status == 0) {
		fprintf(o->log, "%s: [%zu/%zu] %s ok (%.3f s, rank %d)\n",
			o->who, done, n, j->id, j->wall_s, w);
	} else {
		snprintf(path, sizeof(path), "%s/stderr.txt",
			 j->dir != NULL ? j->dir : ".");
		pool_first_line(path, line, sizeof(line));
		fprintf(o->log, "%s: [%zu/%zu] %s FAILED (exit %d, rank %d): "
			"%s\n%s:   its standard error: %s\n", o->who, done, n,
			j->id, j->status, w, line[0] ? line : "(no message)",
			o->who, j->dir != NULL ? path : "(the rank's)");
	}
	fflush(o->log);
}

/* Take the RES waiting from st's source into its job; NULL when it is
 * not one of ours. */
static struct pool_job *
mpipool__take(struct pool_job *job, size_t n, const MPI_Status *st)
{
	struct mpipool__res_head r;
	struct pool_job *j;
	char *buf;
	int count;

	MPI_Get_count(st, MPI_BYTE, &count);
	if ((buf = malloc((size_t)count + 1)) == NULL)
		return NULL;
	MPI_Recv(buf, count, MPI_BYTE, st->MPI_SOURCE, MPIPOOL_RES,
		 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	if ((size_t)count < sizeof(r)) {
		free(buf);
		return NULL;
	}
	memcpy(&r, buf, sizeof(r));
	if (r.index >= n || job[r.index].status != -1) {
		free(buf);
		return NULL;
	}
	j = &job[r.index];
	j->status = r.status;
	j->wall_s = r.wall_s;
	j->resultlen = (size_t)count - sizeof(r);
	memmove(buf, buf + sizeof(r), j->resultlen);
	j->result = buf;
	return j;
}

enum pool_end
mpipool_exec(struct pool_job *job, size_t n, const struct pool_opts *o,
	     bool capture, char *err, size_t errlen)
{
	size_t next = 0, running = 0, done = 0;
	bool stopping = false;
	char cwd[PATH_MAX];

	pool_jobs_release(job, n);
	for (size_t i = 0; i < n; i++) {
		job[i].status = -1;
		job[i].wall_s = 0;
	}
	if (getcwd(cwd, sizeof(cwd)) == NULL) {
		snprintf(err, errlen, "getcwd: %s", strerror(errno));
		return POOL_ERROR;
	}
	while (running > 0 || (!stopping && next < n)) {
		bool more = !stopping && next < n;
		MPI_Status st;

		mpipool__probe(MPI_ANY_SOURCE, more ? MPI_ANY_TAG : MPIPOOL_RES,
			       &st);
		if (st.MPI_TAG == MPIPOOL_RES) {
			const struct pool_job *j = mpipool__take(job, n, &st);

			if (j == NULL) {
				snprintf(err, errlen, "rank %d sent a result "
					 "that is not a job's", st.MPI_SOURCE);
				MPI_Abort(MPI_COMM_WORLD, 1);
				return POOL_ERROR;
			}
			running--;
			done++;
			if (j->status != 0 && o->stop_on_fail)
				stopping = true;
			if (o->log != NULL)
				mpipool__note(o, j, done, n, st.MPI_SOURCE);
		} else {
			MPI_Recv(NULL, 0, MPI_BYTE, st.MPI_SOURCE,
				 MPIPOOL_REQ, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		}
		/* the worker st.MPI_SOURCE now waits for an answer */
		if (!stopping && next < n) {
			if (!mpipool__send(&job[next], next, capture, cwd,
					   st.MPI_SOURCE)) {
				snprintf(err, errlen, "out of memory");
				MPI_Abort(MPI_COMM_WORLD, 1);
				return POOL_ERROR;
			}
			next++;
			running++;
		} else {
			MPI_Send(NULL, 0, MPI_BYTE, st.MPI_SOURCE,
				 MPIPOOL_PAUSE, MPI_COMM_WORLD);
		}
	}
	return POOL_DONE;
}
