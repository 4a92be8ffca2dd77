/*
 * opts.c -- the options several kvsim commands share (opts.h).
 *
 * One parser, so that --jobs is checked the same way in sweep and
 * compare, and --set collects the same way in run, capacity and
 * validate.  Values are borrowed from argv, as getopt_long leaves them.
 */
#include "config.h"

#include "sim/cli/opts.h"
#include "sim/runcfg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int
cli_opts_init(struct cli_opts *o, const char *prog, unsigned accept, int argc)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	*o = (struct cli_opts){ .prog = prog, .accept = accept };
	o->jobs = cpus > 0 ? cpus : 1;
	o->sets = calloc((size_t)argc + 2, sizeof(*o->sets));
	if (o->sets == NULL) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return KVSIM_EXIT_FAIL;
	}
	return KVSIM_EXIT_OK;
}

void
cli_opts_release(struct cli_opts *o)
{
	free(o->sets);
	o->sets = NULL;
	o->nsets = 0;
}

/* --jobs K: an integer in [1, 4096]. */
static bool
cli__jobs(struct cli_opts *o, const char *v)
{
	char *end;

	errno = 0;
	o->jobs = strtol(v, &end, 10);
	if (errno || *end || o->jobs < 1 || o->jobs > 4096) {
		fprintf(stderr, "%s: --jobs %s: expected an integer in "
			"[1, 4096]\n", o->prog, v);
		return false;
	}
	return true;
}

/* Take option c when it is a shared one `o` accepts; false if not. */
static bool
cli__take(struct cli_opts *o, int c, const char *v, bool *bad)
{
	switch (c) {
	case 's':
		if (!(o->accept & CLI_SET))
			return false;
		o->sets[o->nsets++] = v;
		return true;
	case CLI_OPT_SEED:
		if (!(o->accept & CLI_SEED))
			return false;
		o->seed = v;
		return true;
	case 'o':
		if (!(o->accept & CLI_OUT))
			return false;
		o->out = v;
		return true;
	case 'j':
		if (!(o->accept & CLI_JOBS))
			return false;
		*bad = !cli__jobs(o, v);
		return true;
	default:
		break;
	}
	return false;
}

/* The shared flags: --force, --quiet, --no-plot, --resume. */
static bool
cli__flag(struct cli_opts *o, int c)
{
	if (c == 'f' && (o->accept & CLI_FORCE))
		o->force = true;
	else if (c == 'q' && (o->accept & CLI_QUIET))
		o->quiet = true;
	else if (c == CLI_OPT_NO_PLOT && (o->accept & CLI_NO_PLOT))
		o->no_plot = true;
	else if (c == 'r' && (o->accept & CLI_RESUME))
		o->resume = true;
	else
		return false;
	return true;
}

int
cli_getopt_long(const char *prog, int argc, char **argv,
		const char *shortopts, const struct option *lo,
		int *longindex)
{
	char *self = argv[0];
	int c;

	/* getopt prefixes its messages with argv[0] */
	argv[0] = (char *)prog;
	opterr = 1;
	c = getopt_long(argc, argv, shortopts, lo, longindex);
	argv[0] = self;
	if (c == '?' || c == ':') {
		fprintf(stderr, "Try '%s --help'.\n", prog);
		return CLI_OPT_BAD;
	}
	return c;
}

int
cli_bad_option(const char *prog, const char *opt)
{
	fprintf(stderr, "%s: unrecognized option '%s'\nTry '%s --help'.\n",
		prog, opt, prog);
	return KVSIM_EXIT_USAGE;
}

int
cli_missing_value(const char *prog, const char *opt)
{
	fprintf(stderr, "%s: option '%s' requires an argument\n"
		"Try '%s --help'.\n", prog, opt, prog);
	return KVSIM_EXIT_USAGE;
}

int
cli_getopt(struct cli_opts *o, int argc, char **argv, const char *shortopts,
	   const struct option *lo)
{
	int c;
	bool bad = false;

	while ((c = cli_getopt_long(o->prog, argc, argv, shortopts, lo,
				    NULL)) != -1) {
		if (c == CLI_OPT_BAD)
			return c;
		if (cli__flag(o, c))
			continue;
		if (!cli__take(o, c, optarg, &bad))
			return c;
		if (bad)
			return CLI_OPT_BAD;
	}
	return -1;
}

int
cli_positional(const char *prog, int argc, char **argv, int first,
	       const char **sets, size_t *nsets, const char **file,
	       const char *seed, char *seedbuf, size_t seedlen)
{
	char err[SIM_WHERE_LEN + 256];

	for (int i = first; i < argc; i++) {
		if (strchr(argv[i], '=') != NULL) {
			sets[(*nsets)++] = argv[i];
			continue;
		}
		if (*file != NULL) {
			fprintf(stderr, "%s: more than one config file\n", prog);
			return KVSIM_EXIT_USAGE;
		}
		*file = argv[i];
	}
	if (seed != NULL) {
		/* checked here, where the value is known to be --seed's, so
		 * that a bad one is named as the user gave it */
		if (sim_config_check_seed(seed, err, sizeof(err)) != KV_OK) {
			fprintf(stderr, "%s\n", err);
			return KVSIM_EXIT_USAGE;
		}
		snprintf(seedbuf, seedlen, "seed=%s", seed);
		sets[(*nsets)++] = seedbuf;
	}
	return KVSIM_EXIT_OK;
}

double
cli_wall_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void
cli_yaml_esc(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s == '\n' ? ' ' : *s, f);
	}
}

void
cli_yaml_str(FILE *f, const char *s)
{
	fputc('"', f);
	cli_yaml_esc(f, s);
	fputc('"', f);
}

FILE *
cli_tmp_open(const char *prog, const char *path, char *tmp, size_t tmplen)
{
	FILE *f;

	snprintf(tmp, tmplen, "%s.tmp", path);
	if ((f = fopen(tmp, "w")) == NULL)
		fprintf(stderr, "%s: %s: %s\n", prog, tmp, strerror(errno));
	return f;
}

int
cli_tmp_commit(const char *prog, FILE *f, const char *tmp, const char *path)
{
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		remove(tmp);
		return -1;
	}
	return 0;
}
