/*
 * pool.c -- child processes, K at a time (pool.h).
 *
 * Invariant: job i has a child (pid[i] > 0) from its start until it is
 * reaped, when its status becomes >= 0; jobs start in index order, so
 * jobs [0, next) have started.  A run job's pipe (fd[i]) is read
 * without blocking on every turn of the loop, so a child never waits on
 * a full pipe for long, and to its end when the child is reaped.
 *
 * The loop waits with sigtimedwait() and a short timeout: SIGCHLD wakes
 * it for a child that ended, and the timeout bounds the wait for a pipe
 * to drain (a poll() on the pipes would need the signals as descriptors,
 * which is Linux's signalfd).
 */
#include "config.h"

#include "util/pool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct pool__state {
	struct pool_job *job;
	size_t n;
	const struct pool_opts *o;
	pid_t *pid;
	double *t0;
	int *fd;		/* a run job's pipe, -1 when none or closed */
	size_t *cap;		/* room in job[i].result */
	size_t next, running, done;
	bool stopping;		/* no more jobs start */
	bool killed;		/* the running jobs were sent SIGTERM */
	sigset_t set, old;
};

static double
pool__now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Remove ".NAME.tmp.PID" files a killed child left in dir. */
static void
pool__remove_temporaries(const char *dir, pid_t pid)
{
	char suffix[64], path[4600];
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t ls;

	if (d == NULL)
		return;
	snprintf(suffix, sizeof(suffix), ".tmp.%ld", (long)pid);
	ls = strlen(suffix);
	while ((e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);

		if (e->d_name[0] == '.' && n > ls &&
		    strcmp(e->d_name + n - ls, suffix) == 0) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	}
	closedir(d);
}

void
pool_first_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (f == NULL)
		return;
	if (fgets(buf, (int)len, f) != NULL)
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* In the child: standard output and error as job j asks, then run. */
static void
pool__child(struct pool__state *p, size_t i, int wfd)
{
	const struct pool_job *j = &p->job[i];
	char path[4200];

	sigprocmask(SIG_SETMASK, &p->old, NULL);
	if (j->dir != NULL) {
		int fd, nul;

		snprintf(path, sizeof(path), "%s/stderr.txt", j->dir);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		nul = open("/dev/null", O_WRONLY);
		if (fd >= 0) {
			dup2(fd, STDERR_FILENO);
			close(fd);
		}
		if (nul >= 0) {
			dup2(nul, STDOUT_FILENO);
			close(nul);
		}
	}
	if (j->argv == NULL)
		_exit(p->o->run(p->o->ctx, i, wfd) & 0xff);
	execv(j->argv[0], j->argv);
	fprintf(stderr, "cannot run %s: %s\n", j->argv[0], strerror(errno));
	_exit(127);
}

/* Start job i; false with err set when it cannot be. */
static bool
pool__start(struct pool__state *p, size_t i, char *err, size_t errlen)
{
	int fds[2] = { -1, -1 };
	pid_t pid;

	if (p->job[i].argv == NULL && pipe(fds) != 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return false;
	}
	fflush(stdout);
	fflush(stderr);
	p->t0[i] = pool__now();
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		if (fds[0] >= 0) {
			close(fds[0]);
			close(fds[1]);
		}
		return false;
	}
	if (pid == 0) {
		if (fds[0] >= 0)
			close(fds[0]);
		pool__child(p, i, fds[1]);
	}
	if (fds[0] >= 0) {
		close(fds[1]);
		fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
	}
	p->pid[i] = pid;
	p->fd[i] = fds[0];
	return true;
}

/* Read what job i's pipe holds now; at its end (or on an error) close
 * it.  `all`: the child has ended, read to the end. */
static void
pool__drain(struct pool__state *p, size_t i, bool all)
{
	struct pool_job *j = &p->job[i];

	while (p->fd[i] >= 0) {
		ssize_t r;

		if (j->resultlen == p->cap[i]) {
			size_t cap = p->cap[i] ? p->cap[i] * 2 : 4096;
			char *b = realloc(j->result, cap);

			if (b == NULL)
				break;	/* the job is failed when reaped */
			j->result = b;
			p->cap[i] = cap;
		}
		r = read(p->fd[i], j->result + j->resultlen,
			 p->cap[i] - j->resultlen);
		if (r > 0) {
			j->resultlen += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN && !all)
			return;
		close(p->fd[i]);
		p->fd[i] = -1;
	}
	if (p->fd[i] >= 0 && all) {
		close(p->fd[i]);
		p->fd[i] = -1;
		j->status = 1;	/* out of memory: the result is short */
	}
}

/* The progress line of job j, the done-th to finish. */
static void
pool__note(const struct pool__state *p, const struct pool_job *j, int st,
	   const char *path)
{
	const char *who = p->o->who;
	FILE *log = p->o->log;
	char line[512];

	if (j->status == 0) {
		fprintf(log, "%s: [%zu/%zu] %s ok (%.3f s)\n", who, p->done,
			p->n, j->id, j->wall_s);
	} else if (p->killed && WIFSIGNALED(st)) {
		fprintf(log, "%s: [%zu/%zu] %s stopped\n", who, p->done, p->n,
			j->id);
	} else {
		pool_first_line(path, line, sizeof(line));
		fprintf(log, "%s: [%zu/%zu] %s FAILED (exit %d): %s\n"
			"%s:   its standard error: %s\n", who, p->done, p->n,
			j->id, j->status, line[0] ? line : "(no message)", who,
			path);
	}
	fflush(log);
}

/* Job i's child ended with wait status st. */
static void
pool__finish(struct pool__state *p, size_t i, int st)
{
	struct pool_job *j = &p->job[i];
	char path[4200] = "";

	j->status = WIFEXITED(st) ? WEXITSTATUS(st)
		  : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
	j->wall_s = pool__now() - p->t0[i];
	pool__drain(p, i, true);
	p->running--;
	p->done++;
	if (j->dir != NULL) {
		snprintf(path, sizeof(path), "%s/stderr.txt", j->dir);
		if (j->status == 0) {
			unlink(path);
		} else {
			pool__remove_temporaries(j->dir, p->pid[i]);
			if (p->killed && WIFSIGNALED(st))
				unlink(path);	/* stopped: nothing to read */
		}
	}
	if (j->status != 0 && p->o->stop_on_fail)
		p->stopping = true;
	if (p->o->log != NULL)
		pool__note(p, j, st, path);
}

/* Reap every child that has ended; false when none had. */
static bool
pool__reap(struct pool__state *p)
{
	bool reaped = false;

	for (size_t i = 0; i < p->next; i++) {
		int st;

		if (p->pid[i] <= 0 || p->job[i].status >= 0)
			continue;
		if (waitpid(p->pid[i], &st, WNOHANG) != p->pid[i]) {
			if (p->fd[i] >= 0)
				pool__drain(p, i, false);
			continue;
		}
		pool__finish(p, i, st);
		reaped = true;
	}
	return reaped;
}

/* No more starts, and SIGTERM to every job still running. */
static void
pool__stop(struct pool__state *p)
{
	p->stopping = true;
	p->killed = true;
	for (size_t i = 0; i < p->next; i++)
		if (p->pid[i] > 0 && p->job[i].status < 0)
			kill(p->pid[i], SIGTERM);
}

/* Wait for a signal or the timeout; true on SIGINT or SIGTERM. */
static bool
pool__wait(struct pool__state *p)
{
	struct timespec to = { 0, 50 * 1000 * 1000 };
	int sig = sigtimedwait(&p->set, NULL, &to);

	return sig == SIGINT || sig == SIGTERM;
}

static enum pool_end
pool__loop(struct pool__state *p, char *err, size_t errlen)
{
	enum pool_end end = POOL_DONE;
	unsigned par = p->o->par ? p->o->par : 1;

	for (;;) {
		while (!p->stopping && p->running < par && p->next < p->n) {
			if (!pool__start(p, p->next, err, errlen)) {
				end = POOL_ERROR;
				pool__stop(p);
				break;
			}
			p->next++;
			p->running++;
		}
		if (p->running == 0)
			break;
		if (pool__reap(p) || !pool__wait(p) || p->killed)
			continue;
		end = POOL_INTERRUPTED;
		if (p->o->log != NULL)
			fprintf(p->o->log, "%s: interrupted; stopping %zu "
				"running job%s\n", p->o->who, p->running,
				p->running == 1 ? "" : "s");
		pool__stop(p);
	}
	return end;
}

enum pool_end
pool_exec(struct pool_job *job, size_t n, const struct pool_opts *o,
	  char *err, size_t errlen)
{
	struct pool__state p = { .job = job, .n = n, .o = o };
	size_t m = n ? n : 1;
	enum pool_end end;

	for (size_t i = 0; i < n; i++) {
		job[i].status = -1;
		job[i].wall_s = 0;
	}
	pool_jobs_release(job, n);
	p.pid = calloc(m, sizeof(*p.pid));
	p.t0 = calloc(m, sizeof(*p.t0));
	p.fd = calloc(m, sizeof(*p.fd));
	p.cap = calloc(m, sizeof(*p.cap));
	if (p.pid == NULL || p.t0 == NULL || p.fd == NULL || p.cap == NULL) {
		snprintf(err, errlen, "out of memory");
		end = POOL_ERROR;
		goto out;
	}
	sigemptyset(&p.set);
	if (o->trap_signals) {
		sigaddset(&p.set, SIGINT);
		sigaddset(&p.set, SIGTERM);
	}
	sigaddset(&p.set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &p.set, &p.old);
	end = pool__loop(&p, err, errlen);
	sigprocmask(SIG_SETMASK, &p.old, NULL);
out:
	free(p.pid);
	free(p.t0);
	free(p.fd);
	free(p.cap);
	return end;
}

void
pool_jobs_release(struct pool_job *job, size_t n)
{
	for (size_t i = 0; job != NULL && i < n; i++) {
		free(job[i].result);
		job[i].result = NULL;
		job[i].resultlen = 0;
	}
}
