/*
 * fuzz_runcfg.c -- a `kvsim run` configuration file (sim/runcfg.h) on
 * the input: sim_config_from_args (load, finish), then fz_run_config.
 */
#include "tests/fuzz/fz_run.h"

void
fz_setup(void)
{
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sim_config c;
	char path[4200], err[4096];

	if (fz_write("run.yaml", data, size, path, sizeof(path)) == NULL)
		return 0;
	if (sim_config_from_args(&c, path, NULL, 0, err, sizeof(err)) ==
	    KV_OK)
		fz_run_config(&c);
	sim_config_release(&c);
	return 0;
}
