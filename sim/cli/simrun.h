/*
 * simrun.h -- the simulator's run calls as every command makes them: the
 * library returns kv_err with its message (sim/run.h); here the message
 * is printed and the error becomes the command's exit status.
 */
#ifndef SIM_CLI_SIMRUN_H
#define SIM_CLI_SIMRUN_H

#include "sim/run.h"

/* sim_run_open with stdout for vLLM's startup lines and stderr for
 * warnings and progress (unless o says otherwise); KVSIM_EXIT_OK, or the
 * message printed and the exit status: KVSIM_EXIT_USAGE for bad input
 * (KV_EINVAL), KVSIM_EXIT_FAIL for a run that could not finish. */
int simrun_open(sim_run **out, const struct sim_config *cfg,
		struct sim_run_opts *o);

/* sim_run_exec: KVSIM_EXIT_OK, or the message printed and the status,
 * as simrun_open's. */
int simrun_exec(sim_run *R);

#endif
