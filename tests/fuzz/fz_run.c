/*
 * fz_run.c -- what the run configuration harnesses (fuzz_runcfg,
 * fuzz_set) do with a configuration that loaded: the round trip
 * sim_config_write documents (what it writes, sim_config_load reads back
 * and finishes), the name check sweep and compare --suite make, and the
 * resolution `kvsim run` makes before its first event (sim_run_open:
 * catalogs, sizing, cost model, replicas, the workload's header).
 */
#include "tests/fuzz/fz_run.h"

#include "sim/run.h"

#include <stdlib.h>

static void
round_trip(const struct sim_config *c)
{
	struct sim_config back;
	char *text = NULL, path[4200], err[4096];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (f == NULL)
		return;
	sim_config_write(c, NULL, f);
	if (fclose(f) != 0 || text == NULL ||
	    fz_write("back.yaml", text, len, path, sizeof(path)) == NULL) {
		free(text);
		return;
	}
	free(text);
	if (sim_config_from_args(&back, path, NULL, 0, err,
				 sizeof(err)) != KV_OK) {
		fprintf(stderr, "fuzz: the configuration written does not "
			"read back: %s\n", err);
		abort();
	}
	sim_config_release(&back);
}

void
fz_run_config(const struct sim_config *c)
{
	struct sim_run_opts o = { .prog = "fuzz", .quiet = true };
	sim_run *R = NULL;
	const char *key;
	char err[SIM_RUN_ERRLEN];

	round_trip(c);
	if (sim_run_check_names(c, &key, err, sizeof(err)) != KV_OK ||
	    !fz_wl_bounded(&c->wl))
		return;
	(void)sim_run_open(&R, c, &o, err, sizeof(err));
	sim_run_close(R);
}
