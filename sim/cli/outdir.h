/*
 * outdir.h -- a command's output directory, written atomically.
 *
 * Every report is written under a temporary name (".NAME.tmp.PID") in the
 * directory and renamed when the command has succeeded, so a run that
 * fails or is killed leaves no half-written report and never clobbers a
 * complete one.  The directory is refused when it exists and is not empty,
 * unless `force`; one created here is removed again on failure.
 */
#ifndef SIM_CLI_OUTDIR_H
#define SIM_CLI_OUTDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define OUTDIR_MAX 10
#define OUTDIR_BUF (256u << 10)	/* each file's stdio buffer */

struct outdir {
	const char *prog;		/* message prefix */
	char dir[1024];
	size_t n;
	char tmp[OUTDIR_MAX][1200], fin[OUTDIR_MAX][1200];
	FILE *f[OUTDIR_MAX];
	char *buf[OUTDIR_MAX];		/* their stdio buffers (OUTDIR_BUF) */
	bool created;
};

/*
 * Open names[0..n) for writing in dir.  0 ok; 2 refused or impossible
 * (message printed "PROG: --out DIR: why"); call outdir_abort either way
 * on failure.
 */
int outdir_open(struct outdir *o, const char *prog, const char *dir,
		bool force, const char *const *names, size_t n);

/* Close and rename every file; 0, or 1 with a message (all removed). */
int outdir_commit(struct outdir *o);

/* Close and remove the temporaries (and the directory if created). */
void outdir_abort(struct outdir *o);

/* "kvsim-out/YYYYmmdd-HHMMSS[-K]": a fresh default --out. */
void outdir_default(char *buf, size_t len);

/* mkdir -p; 0 or -1 with errno. */
int outdir_mkdir_p(const char *path);

#endif
