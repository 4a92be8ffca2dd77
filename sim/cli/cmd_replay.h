/*
 * cmd_replay.h -- `kvsim replay`: run a replay script against libkvcore (docs/replay.md).
 * (argv[0] is "replay"; returns the exit status, sim/cli/opts.h).
 */
#ifndef SIM_CLI_CMD_REPLAY_H
#define SIM_CLI_CMD_REPLAY_H

int replay_main(int argc, char **argv);

#endif
