/*
 * cmd_calserve.h -- `kvsim calibrate serving`: fit cost terms to measured
 * serving runs (docs/cost-model.md §5.4).  argv[0] is "serving"; returns
 * the exit status (sim/cli/opts.h).
 */
#ifndef SIM_CLI_CMD_CALSERVE_H
#define SIM_CLI_CMD_CALSERVE_H

#include <stdio.h>

int calibrate_serving_main(int argc, char **argv);

/* Its usage text (also the end of `kvsim calibrate --help`). */
void calibrate_serving_usage(FILE *f);

#endif
