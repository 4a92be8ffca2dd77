/*
 * fuzz_suite.c -- a `kvsim compare --suite` file: suite_load of
 * sim/cli/cmd_compare.c (included here to reach that static reader),
 * which reads the suite and checks each configuration with both sides'
 * overrides as the command does before any run.  The temporary directory
 * holds a run configuration run.yaml and an Azure trace trace.csv for
 * the suite's configs: and traces: to name.
 */
#include "sim/cli/cmd_compare.c"

#include "tests/fuzz/fuzz.h"

static const char fz__run[] =
	"model: meta-llama/Llama-3.1-8B\n"
	"gpu: h100-sxm\n"
	"engine:\n"
	"  max_model_len: 1024\n"
	"workload:\n"
	"  generator:\n"
	"    requests: 4\n"
	"    prompt: {dist: uniform, min: 64, max: 512}\n";

static const char fz__trace[] =
	"TIMESTAMP,ContextTokens,GeneratedTokens\n"
	"2023-11-16 18:15:46.6805900,374,44\n"
	"2023-11-16 18:15:50.9951690,396,109\n";

void
fz_setup(void)
{
	char path[4200];

	if (fz_write("run.yaml", fz__run, sizeof(fz__run) - 1, path,
		     sizeof(path)) == NULL ||
	    fz_write("trace.csv", fz__trace, sizeof(fz__trace) - 1, path,
		     sizeof(path)) == NULL)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct suite s;
	char path[4200];

	if (fz_write("suite.yaml", data, size, path, sizeof(path)) == NULL)
		return 0;
	(void)suite_load(path, &s);
	suite_release(&s);
	return 0;
}
