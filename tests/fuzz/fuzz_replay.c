/*
 * fuzz_replay.c -- the replay script parser and interpreter
 * (sim/replay.h replay_run) on the input as a script, with the
 * decision/action check (`kvsim replay --check`) when the input's length
 * is odd, without it when even: the seeds are scripts as written.  A
 * script makes at most 200,000 scheduler steps (replay_opts.max_steps).
 */
#include "tests/fuzz/fuzz.h"

#include "sim/replay.h"

void
fz_setup(void)
{
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* steps bounded: `run steps=4000000000` of a cycle, or a run of a
	 * request of billions of tokens, would be a timeout, not a finding */
	struct replay_opts o = { .check = (size & 1) != 0,
				 .max_steps = 200000 };
	enum replay_result res;
	FILE *in, *out;

	in = fz_open_mem(data, size);
	out = fz_sink();
	(void)replay_run(in, "fuzz.kvr", out, out, &o, &res);
	fclose(in);
	fclose(out);
	return 0;
}
