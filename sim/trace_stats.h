/*
 * trace_stats.h -- `kvsim trace-stats FILE`: statistics of a trace or
 * workload stream (see workloads/wl.h and docs/workloads.md).
 */
#ifndef KVSIM_TRACE_STATS_H
#define KVSIM_TRACE_STATS_H

/* argv[0] is "trace-stats"; returns the exit status (0 ok, 2 bad input). */
int trace_stats_main(int argc, char **argv);

#endif /* KVSIM_TRACE_STATS_H */
