/*
 * fz_util.c -- the helpers of fuzz.h, and LLVMFuzzerInitialize.
 *
 * Set-up done once per process: a temporary directory under $TMPDIR,
 * removed at exit; stdin reopened on /dev/null, so a document naming "-"
 * as its trace reads an empty input instead of waiting on the terminal;
 * the harness's own fz_setup().  The fuzz build compiles sim/plugin.c
 * with dlopen renamed to fz_dlopen (tests/fuzz/fuzz.mk): a policy that
 * names a path never loads a shared object here.
 */
#include "tests/fuzz/fuzz.h"

#include "workloads/wl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Set once by LLVMFuzzerInitialize, read-only afterwards. */
static char fz__path[4096];

void *fz_dlopen(const char *path, int flags);

void *
fz_dlopen(const char *path, int flags)
{
	(void)path;
	(void)flags;
	return NULL;
}

const char *
fz_dir(void)
{
	return fz__path;
}

/* atexit: remove the files of the temporary directory, then it. */
static void
fz__cleanup(void)
{
	DIR *d;
	struct dirent *e;
	char p[sizeof(fz__path) + 300];

	if (fz__path[0] == '\0' || (d = opendir(fz__path)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", fz__path, e->d_name);
		(void)unlink(p);
	}
	closedir(d);
	(void)rmdir(fz__path);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *t = getenv("TMPDIR");

	(void)argc;
	(void)argv;
	if (t == NULL || t[0] == '\0')
		t = "/tmp";
	snprintf(fz__path, sizeof(fz__path), "%s/kvsim-fuzz-XXXXXX", t);
	if (mkdtemp(fz__path) == NULL) {
		fprintf(stderr, "fuzz: cannot make a directory %s: %s\n",
			fz__path, strerror(errno));
		abort();
	}
	atexit(fz__cleanup);
	if (freopen("/dev/null", "r", stdin) == NULL)
		abort();
	fz_setup();
	return 0;
}

const char *
fz_write(const char *name, const void *data, size_t size, char *path,
	 size_t len)
{
	FILE *f;
	int n = snprintf(path, len, "%s/%s", fz__path, name);

	if (n < 0 || (size_t)n >= len || (f = fopen(path, "wb")) == NULL)
		return NULL;
	if (size > 0 && fwrite(data, 1, size, f) != size) {
		fclose(f);
		return NULL;
	}
	if (fclose(f) != 0)
		return NULL;
	return path;
}

char *
fz_strdup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s == NULL)
		return NULL;
	if (size > 0)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

FILE *
fz_open_mem(const uint8_t *data, size_t size)
{
	FILE *f;

	if (size == 0)
		f = fopen("/dev/null", "r");
	else
		f = fmemopen((void *)(uintptr_t)data, size, "r");
	if (f == NULL)
		abort();
	return f;
}

FILE *
fz_sink(void)
{
	FILE *f = fopen("/dev/null", "w");

	if (f == NULL)
		abort();
	return f;
}

int
fz_wl_bounded(const struct wl_config *c)
{
	if (c->trace != NULL || !(c->target_rate > 0 || c->spread_bursts > 0 ||
				  c->window_start_s > 0))
		return 1;
	return c->gen.requests > 0 && c->gen.requests <= FZ_WL_ROWS;
}
