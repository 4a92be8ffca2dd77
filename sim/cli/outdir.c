/*
 * outdir.c -- atomic output directories (outdir.h).
 */
#include "config.h"

#include "sim/cli/outdir.h"
#include "sim/cli/opts.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int
outdir_mkdir_p(const char *path)
{
	char buf[1024];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0777) != 0 && errno != EEXIST)
		return -1;
	return 0;
}

static bool
dir_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	bool empty = true;

	if (d == NULL)
		return true;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			empty = false;
	closedir(d);
	return empty;
}

/*
 * The directory being written, for the signal handler: an interrupted
 * command (SIGINT, SIGTERM, SIGHUP) removes its temporaries -- unlink and
 * rmdir are async-signal-safe -- and then dies of the signal as before.
 */
static struct outdir *volatile active;

static void
on_signal(int sig)
{
	struct outdir *o = active;

	if (o != NULL) {
		for (size_t i = 0; i < o->n; i++)
			if (o->tmp[i][0])
				unlink(o->tmp[i]);
		if (o->created)
			rmdir(o->dir);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
watch(struct outdir *o)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa;

	active = o;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = o != NULL ? on_signal : SIG_DFL;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

int
outdir_open(struct outdir *o, const char *prog, const char *dir, bool force,
	    const char *const *names, size_t n)
{
	struct stat sb;

	memset(o, 0, sizeof(*o));
	o->prog = prog;
	if (n > OUTDIR_MAX || strlen(dir) >= sizeof(o->dir)) {
		fprintf(stderr, "%s: --out %s: name too long\n", prog, dir);
		return KVSIM_EXIT_USAGE;
	}
	snprintf(o->dir, sizeof(o->dir), "%s", dir);
	if (stat(dir, &sb) == 0) {
		if (!S_ISDIR(sb.st_mode)) {
			fprintf(stderr, "%s: --out %s: not a directory\n",
				prog, dir);
			return KVSIM_EXIT_USAGE;
		}
		if (!force && !dir_empty(dir)) {
			fprintf(stderr, "%s: --out %s exists and is not "
				"empty; refusing to overwrite it (use --force)\n",
				prog, dir);
			return KVSIM_EXIT_USAGE;
		}
	} else {
		if (outdir_mkdir_p(dir) != 0) {
			fprintf(stderr, "%s: --out %s: %s\n", prog, dir,
				strerror(errno));
			return KVSIM_EXIT_USAGE;
		}
		o->created = true;
	}
	o->n = 0;
	watch(o);
	for (size_t i = 0; i < n; i++) {
		snprintf(o->fin[i], sizeof(o->fin[i]), "%s/%s", dir, names[i]);
		snprintf(o->tmp[i], sizeof(o->tmp[i]), "%s/.%s.tmp.%ld", dir,
			 names[i], (long)getpid());
		o->f[i] = fopen(o->tmp[i], "w");
		o->n = i + 1;
		if (o->f[i] == NULL) {
			fprintf(stderr, "%s: %s: %s\n", prog, o->tmp[i],
				strerror(errno));
			return KVSIM_EXIT_USAGE;
		}
		/* a request's row is written as it ends: a write(2) per
		 * OUTDIR_BUF bytes, not per file-system block (4 KiB; glibc
		 * sizes a buffer it allocates itself by the block); without
		 * the memory, the block's */
		if ((o->buf[i] = malloc(OUTDIR_BUF)) != NULL)
			setvbuf(o->f[i], o->buf[i], _IOFBF, OUTDIR_BUF);
	}
	return 0;
}

void
outdir_abort(struct outdir *o)
{
	for (size_t i = 0; i < o->n; i++) {
		if (o->f[i] != NULL)
			fclose(o->f[i]);
		o->f[i] = NULL;
		free(o->buf[i]);
		o->buf[i] = NULL;
		if (o->tmp[i][0])
			unlink(o->tmp[i]);
	}
	if (o->created)
		rmdir(o->dir);
	o->n = 0;
	watch(NULL);
}

int
outdir_commit(struct outdir *o)
{
	for (size_t i = 0; i < o->n; i++) {
		int rc = fclose(o->f[i]), err = errno;

		o->f[i] = NULL;
		free(o->buf[i]);	/* after its file's last write */
		o->buf[i] = NULL;
		if (rc != 0) {
			fprintf(stderr, "%s: %s: %s\n", o->prog, o->tmp[i],
				strerror(err));
			outdir_abort(o);
			return KVSIM_EXIT_FAIL;
		}
	}
	for (size_t i = 0; i < o->n; i++)
		if (rename(o->tmp[i], o->fin[i]) != 0) {
			fprintf(stderr, "%s: %s: %s\n", o->prog, o->fin[i],
				strerror(errno));
			outdir_abort(o);
			return KVSIM_EXIT_FAIL;
		}
	o->n = 0;
	watch(NULL);
	return 0;
}

void
outdir_default(char *buf, size_t len)
{
	time_t now = time(NULL);
	struct tm tm;
	char stamp[64];

	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	snprintf(buf, len, "kvsim-out/%s", stamp);
	for (int k = 2; k < 1000 && access(buf, F_OK) == 0; k++)
		snprintf(buf, len, "kvsim-out/%s-%d", stamp, k);
}
