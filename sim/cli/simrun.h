/*
 * simrun.h -- the simulator's run calls as every command makes them: the
 * library returns kv_err with its message (sim/run.h); here the message
 * is printed and the error becomes the command's exit status.
 */
#ifndef SIM_CLI_SIMRUN_H
#define SIM_CLI_SIMRUN_H

#include "sim/run.h"

#include <stdbool.h>

/* sim_run_open with stdout for vLLM's startup lines and stderr for
 * warnings and progress (unless o says otherwise), and the invariants
 * checked when o->check or simrun_checks() asks; KVSIM_EXIT_OK, or the
 * message printed and the exit status: KVSIM_EXIT_USAGE for bad input
 * (KV_EINVAL), KVSIM_EXIT_FAIL for a run that could not finish. */
int simrun_open(sim_run **out, const struct sim_config *cfg,
		struct sim_run_opts *o);

/*
 * Whether the environment asks for the expensive check level
 * (KVSIM_CHECK set, not empty and not "0"; `make check` sets it): every
 * module's invariants during runs (sim_run_opts.invariants) and the
 * backend's after every copy in `kvsim validate` (kvval_opts.check).
 */
bool simrun_checks(void);

/* Whether the environment asks for single steps only
 * (KVSIM_NO_FAST_FORWARD set, not empty and not "0"):
 * sim_run_opts.no_fast_forward for every command that runs. */
bool simrun_no_ff(void);
/* An environment switch: set, not empty and not "0". */
bool simrun_env(const char *name);

/* KVSIM_CHECK=report: the checks, and `kvsim run` says at the end how
 * many ran (tests/run.sh proves the level is wired with it). */
bool simrun_checks_report(void);

/* sim_run_exec: KVSIM_EXIT_OK, or the message printed and the status,
 * as simrun_open's. */
int simrun_exec(sim_run *R);

#endif
