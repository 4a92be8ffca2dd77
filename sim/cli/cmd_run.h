/*
 * cmd_run.h -- `kvsim run`: simulate serving a workload (docs/run.md).
 * (argv[0] is "run"; returns the exit status, sim/cli/opts.h).
 */
#ifndef SIM_CLI_CMD_RUN_H
#define SIM_CLI_CMD_RUN_H

int run_main(int argc, char **argv);

#endif
