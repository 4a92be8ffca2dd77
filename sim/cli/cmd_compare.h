/*
 * cmd_compare.h -- `kvsim compare`: regression verdicts between results or over a suite (docs/compare.md).
 * (argv[0] is "compare"; returns the exit status, sim/cli/opts.h).
 */
#ifndef SIM_CLI_CMD_COMPARE_H
#define SIM_CLI_CMD_COMPARE_H

int compare_main(int argc, char **argv);

#endif
