/*
 * simrun.c -- sim_run_open/sim_run_exec for the commands (simrun.h).
 */
#include "sim/cli/simrun.h"
#include "sim/cli/opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
exit_status(kv_err e)
{
	return e == KV_OK ? KVSIM_EXIT_OK : e == KV_EINVAL ? KVSIM_EXIT_USAGE :
	       KVSIM_EXIT_FAIL;
}

bool
simrun_checks(void)
{
	const char *v = getenv("KVSIM_CHECK");

	return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

bool
simrun_checks_report(void)
{
	const char *v = getenv("KVSIM_CHECK");

	return v != NULL && strcmp(v, "report") == 0;
}

bool
simrun_env(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

bool
simrun_no_ff(void)
{
	return simrun_env("KVSIM_NO_FAST_FORWARD");
}

int
simrun_open(sim_run **out, const struct sim_config *cfg,
	    struct sim_run_opts *o)
{
	char err[SIM_RUN_ERRLEN];
	kv_err e;

	if (o->log == NULL)
		o->log = stdout;
	if (o->diag == NULL)
		o->diag = stderr;
	if (o->check || simrun_checks())
		o->invariants = true;
	if (simrun_no_ff())
		o->no_fast_forward = true;
	if (simrun_env("KVSIM_NO_KEYED"))
		o->no_keyed = true;
	if (simrun_env("KVSIM_NO_TAKE_IN"))
		o->no_take_in = true;
	if ((e = sim_run_open(out, cfg, o, err, sizeof(err))) != KV_OK) {
		fprintf(stderr, "%s\n", err);
		return exit_status(e);
	}
	return KVSIM_EXIT_OK;
}

int
simrun_exec(sim_run *R)
{
	char err[SIM_RUN_ERRLEN];
	kv_err e;

	if ((e = sim_run_exec(R, err, sizeof(err))) != KV_OK) {
		fprintf(stderr, "%s\n", err);
		return exit_status(e);
	}
	return KVSIM_EXIT_OK;
}
