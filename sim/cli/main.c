/*
 * main.c -- the kvsim command line: global options and subcommand dispatch.
 *
 * Each subcommand is a function taking (argc, argv) with argv[0] its own
 * name and returning the exit status (enum kvsim_exit, sim/cli/opts.h):
 * 0 ok, 1 a check, SLO or regression failed, 2 bad usage or bad input.
 * --help and --version print to stdout.
 */
#include "config.h"

#include "core/kvcore.h"
#include "sim/cli/cmd_calibrate.h"
#include "sim/cli/cmd_capacity.h"
#include "sim/cli/cmd_catalog.h"
#include "sim/cli/cmd_compare.h"
#include "sim/cli/cmd_kvsize.h"
#include "sim/cli/cmd_plot.h"
#include "sim/cli/cmd_replay.h"
#include "sim/cli/cmd_run.h"
#include "sim/cli/cmd_sweep.h"
#include "sim/cli/cmd_trace_stats.h"
#include "sim/cli/cmd_validate.h"
#include "sim/cli/mpipool.h"
#include "sim/cli/opts.h"

#include <gsl/gsl_errno.h>

#include <stdio.h>
#include <string.h>

struct cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct cmd cmds[] = {
	{ "run", run_main,
	  "simulate serving a workload (the embedded default without a file)" },
	{ "sweep", sweep_main,
	  "run a grid of configurations (sweep.csv), in parallel" },
	{ "compare", compare_main,
	  "compare two results (or a suite): exit 1 on a regression" },
	{ "capacity", capacity_main,
	  "the highest request rate meeting SLOs, and static KV capacity" },
	{ "replay", replay_main,
	  "run a replay script against the allocator core" },
	{ "kv-size", kvsize_main,
	  "vLLM's KV-cache sizing for a model on a GPU" },
	{ "catalog", catalog_main, "list or show catalog models and GPUs" },
	{ "trace-stats", trace_stats_main,
	  "statistics of a request trace or workload" },
	{ "plot", plot_main,
	  "gnuplot scripts, images and an HTML index from results" },
	{ "validate", validate_main,
	  "run with a device backend checking every KV block bit-exactly" },
	{ "calibrate", calibrate_main,
	  "fit cost terms: copies to device timings, steps to serving runs" },
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void
usage(FILE *f)
{
	fprintf(f, "usage: kvsim [--help] [--version] COMMAND [ARGS]\n\n"
		"kvsim simulates KV-cache scheduling for LLM serving on a real "
		"block allocator.\n\nCommands:\n");
	for (size_t i = 0; i < NCMDS; i++)
		fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "\nRun 'kvsim COMMAND --help' for a command's options.\n"
		"Exit status: 0 ok, 1 a check failed, 2 bad usage or input.\n");
}

/*
 * Run command c.  sweep and capacity can spread their jobs over the ranks
 * of an MPI job (mpipool.h): on a worker rank kvsim serves rank 0 instead.
 */
static int
main_run(const struct cmd *c, int argc, char **argv)
{
	int rc;

	if (strcmp(c->name, "sweep") != 0 && strcmp(c->name, "capacity") != 0)
		return c->run(argc - 1, argv + 1);
	if (mpipool_start(&argc, &argv, &rc))
		return rc;
	rc = c->run(argc - 1, argv + 1);
	mpipool_end();
	return rc;
}

int
main(int argc, char **argv)
{
	/* GSL reports through return values (NaN, status codes), which the
	 * callers check; its default handler would abort the process */
	gsl_set_error_handler_off();
	if (argc < 2) {
		usage(stderr);
		return KVSIM_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return KVSIM_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("kvsim %s (libkvcore %s, ABI %d)\n", PACKAGE_VERSION,
		       KVCORE_VERSION, KVCORE_ABI);
		return KVSIM_EXIT_OK;
	}
	for (size_t i = 0; i < NCMDS; i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			return main_run(&cmds[i], argc, argv);
	if (argv[1][0] == '-' && argv[1][1] != '\0')
		return cli_bad_option("kvsim", argv[1]);
	fprintf(stderr, "kvsim: unknown command '%s'\nTry 'kvsim --help'.\n",
		argv[1]);
	return KVSIM_EXIT_USAGE;
}
