/*
 * cmd_calkern.h -- `kvsim calibrate kernels` (cmd_calkern.c): step shapes
 * for the device bench, and efficiencies fitted from its CSVs.
 */
#ifndef SIM_CLI_CMD_CALKERN_H
#define SIM_CLI_CMD_CALKERN_H

/* argv[0] is "kernels"; the exit status (opts.h). */
int calkern_main(int argc, char **argv);

#endif
