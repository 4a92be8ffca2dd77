/*
 * cmd_sweep.h -- `kvsim sweep`: a grid of runs merged into sweep.csv (docs/sweep.md).
 * (argv[0] is "sweep"; returns the exit status, sim/cli/opts.h).
 */
#ifndef SIM_CLI_CMD_SWEEP_H
#define SIM_CLI_CMD_SWEEP_H

int sweep_main(int argc, char **argv);

#endif
