/*
 * fuzz_sweep.c -- a `kvsim sweep` file: its grid read and every value
 * checked as the command checks them before any run (load_grid of
 * sim/cli/cmd_sweep.c, included here to reach that static reader; the
 * file is also the base configuration), then each point's id.
 */
#include "sim/cli/cmd_sweep.c"

#include "tests/fuzz/fuzz.h"

#define MAXPOINTS 64

void
fz_setup(void)
{
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[4200], id[SWEEP_ID_LEN];
	sweep *s;

	if (fz_write("sweep.yaml", data, size, path, sizeof(path)) == NULL ||
	    (s = sweep_new()) == NULL)
		return 0;
	if (load_grid(path, s) == 0) {
		size_t n = sweep_npoints(s), a, b;

		for (size_t i = 0; i < n && i < MAXPOINTS; i++)
			sweep_point_id(s, i, id);
		(void)sweep_ids_unique(s, &a, &b);
	}
	sweep_free(s);
	return 0;
}
