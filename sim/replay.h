/*
 * replay.h -- `kvsim replay`: drive libkvcore from a script.
 *
 * The format is DESIGN.md "Replay scripts"; docs/replay.md fixes the meaning
 * of every line in every mode (R1-R47) and docs/scheduler.md the scheduler
 * lines (R48-R72).  One result line per operation goes to `out`; errors go
 * to `err` as "FILE:LINE: message".
 *
 * Exit status: 0 ok, 1 an `expect` failed or (with check) a decision
 * disagreed with its action, 2 a malformed script or misuse.  Output
 * printed before an error stays printed.
 */
#ifndef SIM_REPLAY_H
#define SIM_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct replay_opts {
	bool check;	/* decision/action consistency on every query */
};

int replay_run(FILE *in, const char *name, FILE *out, FILE *err,
	       const struct replay_opts *o);

/*
 * The plugin hook: a `policy` line naming a path (it contains '/') loads a
 * user policy from a shared object (sim/plugin.c; kvsched.h's plugin ABI).
 * Returns the policy, valid until replay_unload_policy(*handle), or NULL
 * with a message in why[0..whylen).  replay_unload_policy(NULL) is a no-op.
 */
struct kvs_policy;
const struct kvs_policy *replay_load_policy(const char *path, void **handle,
					    char *why, size_t whylen);
void replay_unload_policy(void *handle);

#endif
