/*
 * fuzz.h -- what the libFuzzer harnesses of tests/fuzz/ share: a private
 * temporary directory for readers that take a path, a sink for output
 * nobody reads, and the two entry points libFuzzer calls.
 *
 * Each harness feeds one input to one reader through its public API and
 * releases everything it got, so no run sees state from an earlier one.
 * Nothing is written outside the directory fz_dir() names, which is made
 * under $TMPDIR (else /tmp) once per process and removed at exit.
 */
#ifndef TESTS_FUZZ_FUZZ_H
#define TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The process's temporary directory (made by LLVMFuzzerInitialize). */
const char *fz_dir(void);

/*
 * Write data[0..size) to fz_dir()/name (replacing it) and return its path
 * in path[0..len); NULL if that fails.
 */
const char *fz_write(const char *name, const void *data, size_t size,
		     char *path, size_t len);

/* data[0..size) as a NUL-terminated heap string (NUL bytes kept inside:
 * the reader sees the string up to the first). NULL on no memory. */
char *fz_strdup(const uint8_t *data, size_t size);

/* A FILE reading data[0..size) (an empty one when size is 0). */
FILE *fz_open_mem(const uint8_t *data, size_t size);

/* A FILE that discards what is written to it (fclose it when done). */
FILE *fz_sink(void);

/*
 * Whether opening c's stream is bounded work.  A generator is drawn whole
 * before its first request where target_rate or spread_bursts needs its
 * span (the prepass) or a window starts later (the requests before it are
 * drawn and dropped): there, only with generator.requests at most
 * FZ_WL_ROWS.  A configuration asking for 10^17 requests there is legal
 * and slow -- a timeout, not a finding -- so the harnesses that open
 * streams (workload; runcfg and set, through sim_run_open) leave it
 * unopened.  Traces are bounded by the input.
 */
#define FZ_WL_ROWS 100000u
struct wl_config;
int fz_wl_bounded(const struct wl_config *c);

/*
 * Per-harness setup run once from LLVMFuzzerInitialize, after the
 * temporary directory exists (each harness defines it; most do nothing).
 */
void fz_setup(void);

#endif
