/*
 * cmd_calibrate.h -- `kvsim calibrate`: fit the copy-cost model from device timings (docs/cost-model.md).
 * (argv[0] is "calibrate"; returns the exit status, sim/cli/opts.h).
 */
#ifndef SIM_CLI_CMD_CALIBRATE_H
#define SIM_CLI_CMD_CALIBRATE_H

int calibrate_main(int argc, char **argv);

#endif
