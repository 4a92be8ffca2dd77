/*
 * cmd_capacity.h -- `kvsim capacity`: static KV capacity and the highest rate meeting SLOs (docs/capacity.md).
 * (argv[0] is "capacity"; returns the exit status, sim/cli/opts.h).
 */
#ifndef SIM_CLI_CMD_CAPACITY_H
#define SIM_CLI_CMD_CAPACITY_H

int capacity_main(int argc, char **argv);

#endif
