/*
 * children.c -- child `kvsim run`s for sweep and compare --suite
 * (children.h).  Each child is this executable again, so a point or a
 * suite run is the same program as `kvsim run` by hand.
 */
#include "config.h"

#include "sim/cli/children.h"

#include "reports/sweep.h"
#include "sim/cli/opts.h"
#include "sim/cli/outdir.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

bool
children_self_exe(char *buf, size_t len)
{
	ssize_t el = readlink("/proc/self/exe", buf, len - 1);

	if (el <= 0 || (size_t)el >= len - 1)
		return false;
	buf[el] = '\0';
	return true;
}

int
children_dir_ready(const char *prog, const char *dir)
{
	if (outdir_mkdir_p(dir) != 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, dir, strerror(errno));
		return KVSIM_EXIT_USAGE;
	}
	sweep_run_clean(dir);
	return KVSIM_EXIT_OK;
}

enum pool_end
children_run(const char *prog, struct pool_job *job, size_t n, long jobs,
	     bool quiet, char *err, size_t errlen)
{
	struct pool_opts po = {
		.par = (unsigned)jobs,
		.trap_signals = true,
		.who = prog,
		.log = quiet ? NULL : stderr,
	};

	return pool_exec(job, n, &po, err, errlen);
}
