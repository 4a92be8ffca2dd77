/*
 * cmd_validate.h -- `kvsim validate`: block operations on a KV pool, every slot checked (docs/gpu.md).
 * (argv[0] is "validate"; returns the exit status, sim/cli/opts.h).
 */
#ifndef SIM_CLI_CMD_VALIDATE_H
#define SIM_CLI_CMD_VALIDATE_H

int validate_main(int argc, char **argv);

#endif
