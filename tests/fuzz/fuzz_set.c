/*
 * fuzz_set.c -- `--set KEY=VALUE` overrides (sim_config_set through
 * sim_config_from_args) over the embedded default configuration: each
 * line of the input is one override, applied in order (at most 16).
 * An empty input is one empty override.
 */
#include "tests/fuzz/fz_run.h"

#include <stdlib.h>
#include <string.h>

#define MAXSET 16

void
fz_setup(void)
{
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sim_config c;
	const char *set[MAXSET];
	char *text = fz_strdup(data, size), *p, err[4096];
	size_t n = 0;

	if (text == NULL)
		return 0;
	/* one override a line; a final line break ends the last one */
	for (p = text; n < MAXSET && (n == 0 || *p != '\0'); ) {
		char *nl = strchr(p, '\n');

		set[n++] = p;
		if (nl == NULL)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	if (sim_config_from_args(&c, NULL, set, n, err, sizeof(err)) == KV_OK)
		fz_run_config(&c);
	sim_config_release(&c);
	free(text);
	return 0;
}
