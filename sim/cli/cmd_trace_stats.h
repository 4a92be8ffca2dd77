/*
 * cmd_trace_stats.h -- `kvsim trace-stats`: statistics of a trace or a generated workload (docs/workloads.md).
 * (argv[0] is "trace-stats"; returns the exit status, sim/cli/opts.h).
 */
#ifndef SIM_CLI_CMD_TRACE_STATS_H
#define SIM_CLI_CMD_TRACE_STATS_H

int trace_stats_main(int argc, char **argv);

#endif
