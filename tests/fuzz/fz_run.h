/*
 * fz_run.h -- the checks fuzz_runcfg and fuzz_set share (fz_run.c).
 */
#ifndef TESTS_FUZZ_FZ_RUN_H
#define TESTS_FUZZ_FZ_RUN_H

#include "tests/fuzz/fuzz.h"

#include "sim/runcfg.h"

/* Round trip, name check and sim_run_open of a configuration that was
 * read and finished; aborts when the written form does not read back. */
void fz_run_config(const struct sim_config *c);

#endif
