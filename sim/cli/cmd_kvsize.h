/*
 * cmd_kvsize.h -- `kvsim kv-size`: vLLM's start-up KV cache sizing and its log lines (docs/catalog.md).
 * (argv[0] is "kv-size"; returns the exit status, sim/cli/opts.h).
 */
#ifndef SIM_CLI_CMD_KVSIZE_H
#define SIM_CLI_CMD_KVSIZE_H

int kvsize_main(int argc, char **argv);

#endif
