/*
 * replay.h -- `kvsim replay`: drive libkvcore from a script.
 *
 * The format is DESIGN.md "Replay scripts"; docs/replay.md fixes the meaning
 * of every line in every mode (R1-R47) and docs/scheduler.md the scheduler
 * lines (R48-R72).  One result line per operation goes to `out`; errors go
 * to `err` as "FILE:LINE: message".  Writing to those two streams is the
 * interpreter's job; nothing else is printed, and it never exits.
 *
 * A `policy` line names a built-in policy or a plugin's path
 * (sim_policy_find, sim/plugin.h).
 */
#ifndef SIM_REPLAY_H
#define SIM_REPLAY_H

#include "core/kvcore.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct replay_opts {
	bool check;	/* decision/action consistency on every query */
	/* 0, or the most scheduler steps the script may make (`step`, `run`):
	 * past them it stops as a bad script.  The fuzz harness's bound on
	 * a script that asks for billions of steps; `kvsim replay` has none. */
	uint64_t max_steps;
};

/* What a script came to (`kvsim replay` exits with it).  Output printed
 * before an error stays printed. */
enum replay_result {
	REPLAY_OK = 0,
	REPLAY_FAIL = 1,	/* an `expect` failed, or (with check) a
				 * decision disagreed with its action */
	REPLAY_BAD = 2		/* a malformed script or misuse */
};

/*
 * Run the script read from `in`, called `name` in messages.  KV_OK with
 * *res the script's result; KV_ENOMEM when memory ran out (the script
 * stopped there, nothing was said about it on err: the caller reports it;
 * *res is REPLAY_BAD).
 */
kv_err replay_run(FILE *in, const char *name, FILE *out, FILE *err,
		  const struct replay_opts *o, enum replay_result *res);

#endif
