/*
 * opts.h -- what every kvsim command shares: its exit statuses, and the
 * options several commands take (--set, --seed, --out, --force, --quiet,
 * --no-plot, --jobs, --resume), parsed in one place.
 *
 * A command keeps its own getopt_long table, in the order its help text
 * lists the options (getopt_long names the candidates of an ambiguous
 * abbreviation in table order, so the order is part of the interface).
 * The shared options enter the table through the CLI_LO_* entries, and
 * cli_getopt() takes them; every other option comes back to the command.
 * A command declares the shared options it accepts in `accept`: an entry
 * of its table whose option it does not accept comes back to it as well
 * (capacity reads --seed and --jobs with rules of its own).
 */
#ifndef SIM_CLI_OPTS_H
#define SIM_CLI_OPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Exit statuses of every command (and of main). */
enum kvsim_exit {
	KVSIM_EXIT_OK = 0,	/* done, every check held */
	KVSIM_EXIT_FAIL = 1,	/* a failed check, SLO or regression, a run
				 * that could not finish, a failed child */
	KVSIM_EXIT_USAGE = 2	/* bad input or usage */
};

/* The shared options, as bits of cli_opts.accept. */
enum cli_opt_flags {
	CLI_SET = 1u << 0,	/* -s, --set KEY=VALUE (repeatable) */
	CLI_SEED = 1u << 1,	/* --seed N (kept as text) */
	CLI_OUT = 1u << 2,	/* -o, --out PATH */
	CLI_FORCE = 1u << 3,	/* -f, --force */
	CLI_QUIET = 1u << 4,	/* -q, --quiet */
	CLI_NO_PLOT = 1u << 5,	/* --no-plot */
	CLI_JOBS = 1u << 6,	/* -j, --jobs K in [1, 4096] */
	CLI_RESUME = 1u << 7	/* -r, --resume */
};

/* getopt_long codes of the long-only shared options, and what
 * cli_getopt() returns after a bad value (message printed). */
enum {
	CLI_OPT_SEED = 0x100,
	CLI_OPT_NO_PLOT,
	CLI_OPT_BAD
};

#define CLI_LO_SET	{ "set", required_argument, NULL, 's' }
#define CLI_LO_SEED	{ "seed", required_argument, NULL, CLI_OPT_SEED }
#define CLI_LO_OUT	{ "out", required_argument, NULL, 'o' }
#define CLI_LO_FORCE	{ "force", no_argument, NULL, 'f' }
#define CLI_LO_QUIET	{ "quiet", no_argument, NULL, 'q' }
#define CLI_LO_NO_PLOT	{ "no-plot", no_argument, NULL, CLI_OPT_NO_PLOT }
#define CLI_LO_JOBS	{ "jobs", required_argument, NULL, 'j' }
#define CLI_LO_RESUME	{ "resume", no_argument, NULL, 'r' }
#define CLI_LO_HELP	{ "help", no_argument, NULL, 'h' }
#define CLI_LO_END	{ NULL, 0, NULL, 0 }

struct cli_opts {
	const char *prog;	/* "kvsim run": the prefix of messages */
	unsigned accept;	/* enum cli_opt_flags */
	const char **sets;	/* --set values in order; room for argc + 2
				 * (positional KEY=VALUEs, one more) */
	size_t nsets;
	const char *seed;	/* NULL: not given */
	const char *out;	/* NULL: not given */
	bool force, quiet, no_plot, resume;
	long jobs;		/* default: the online CPUs, at least 1 */
};

/*
 * Set the defaults and allocate room for the --set values.  KVSIM_EXIT_OK,
 * or KVSIM_EXIT_FAIL with "PROG: out of memory" printed.  Call
 * cli_opts_release() either way.
 */
int cli_opts_init(struct cli_opts *o, const char *prog, unsigned accept,
		  int argc);
void cli_opts_release(struct cli_opts *o);

/*
 * getopt_long() over the command's table, taking the accepted shared
 * options into `o`.  Returns the next option for the command to handle,
 * -1 at the end, or CLI_OPT_BAD after a bad shared value or a bad option
 * (message printed, cli_getopt_long(); the exit status is
 * KVSIM_EXIT_USAGE).  Reset optind to 1 before the first call.
 */
int cli_getopt(struct cli_opts *o, int argc, char **argv,
	       const char *shortopts, const struct option *lo);

/*
 * getopt_long() for command prog ("kvsim run"), whose own messages name
 * prog: an unknown option, a missing value or an ambiguous abbreviation
 * prints getopt's one line ("kvsim run: unrecognized option '--foo'")
 * and "Try 'kvsim run --help'." on stderr, and returns CLI_OPT_BAD (the
 * exit status is KVSIM_EXIT_USAGE).  shortopts must not start with ':'.
 */
int cli_getopt_long(const char *prog, int argc, char **argv,
		    const char *shortopts, const struct option *lo,
		    int *longindex);

/*
 * The same two lines for a command that parses its arguments itself:
 * "PROG: unrecognized option 'OPT'" (cli_bad_option) or "PROG: option
 * 'OPT' requires an argument" (cli_missing_value), then "Try 'PROG
 * --help'.".  Both return KVSIM_EXIT_USAGE.
 */
int cli_bad_option(const char *prog, const char *opt);
int cli_missing_value(const char *prog, const char *opt);

/*
 * The positional arguments of a run-like command, argv[first..argc):
 * Hydra-style "a.b=c" overrides are appended to sets (room for argc + 1
 * entries), the one other argument is *file; then, when seed is not NULL,
 * "seed=SEED" (written in seedbuf) comes last.  KVSIM_EXIT_OK, or
 * KVSIM_EXIT_USAGE with "PROG: more than one config file" or a bad seed's
 * message printed.
 */
int cli_positional(const char *prog, int argc, char **argv, int first,
		   const char **sets, size_t *nsets, const char **file,
		   const char *seed, char *seedbuf, size_t seedlen);

/* Monotonic wall-clock seconds, for the times commands report. */
double cli_wall_s(void);

/* s as a double-quoted YAML scalar (cli_yaml_str), or its inside alone
 * (cli_yaml_esc): '"' and '\\' escaped, newlines as spaces. */
void cli_yaml_esc(FILE *f, const char *s);
void cli_yaml_str(FILE *f, const char *s);

/*
 * A file written whole or not at all: cli_tmp_open opens PATH.tmp (its
 * name in tmp), cli_tmp_commit closes it and renames it to path.  A
 * failure is printed ("PROG: PATH: why"; the temporary removed): NULL,
 * -1.
 */
FILE *cli_tmp_open(const char *prog, const char *path, char *tmp,
		   size_t tmplen);
int cli_tmp_commit(const char *prog, FILE *f, const char *tmp,
		   const char *path);

#endif
