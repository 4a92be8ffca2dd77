/*
 * cmd_replay.c -- `kvsim replay [--check] [--max-steps N] FILE`: the
 * command line around the replay interpreter (sim/replay.h), which does
 * the work.
 */
#include "sim/cli/cmd_replay.h"
#include "sim/cli/opts.h"
#include "sim/replay.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Run one script; the exit status (2 when memory runs out). */
static int
replay_file(FILE *in, const char *name, const struct replay_opts *o)
{
	enum replay_result res;

	if (replay_run(in, name, stdout, stderr, o, &res) != KV_OK) {
		fputs("kvsim: out of memory\n", stderr);
		return KVSIM_EXIT_USAGE;
	}
	return res == REPLAY_OK ? KVSIM_EXIT_OK : res == REPLAY_FAIL ?
	       KVSIM_EXIT_FAIL : KVSIM_EXIT_USAGE;
}

int
replay_main(int argc, char **argv)
{
	struct replay_opts o = { 0 };
	const char *file = NULL;
	FILE *in;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--check") == 0) {
			o.check = true;
		} else if (strcmp(argv[i], "--max-steps") == 0) {
			char *end;

			if (i + 1 == argc)
				return cli_missing_value("kvsim replay",
							 argv[i]);
			errno = 0;
			o.max_steps = strtoull(argv[++i], &end, 10);
			if (errno != 0 || *end != '\0' ||
			    !isdigit((unsigned char)argv[i][0]) ||
			    o.max_steps == 0) {
				fprintf(stderr, "kvsim replay: --max-steps: "
					"expected a count of steps of at "
					"least 1, found '%s'\n", argv[i]);
				return KVSIM_EXIT_USAGE;
			}
		} else if (strcmp(argv[i], "--help") == 0 ||
			   strcmp(argv[i], "-h") == 0) {
			printf("usage: kvsim replay [--check] [--max-steps N] "
			       "FILE\n\n"
			       "Run a replay script against libkvcore and "
			       "print one line per operation.\n"
			       "FILE may be - for standard input.\n\n"
			       "  --check   try the action behind every query "
			       "on a copy of the state and\n"
			       "            report the first verdict that "
			       "disagrees with it (exit 1)\n"
			       "  --max-steps N  stop the script (exit 2) at "
			       "the scheduler step after N\n"
			       "            (step and run lines; no limit "
			       "without it)\n\n"
			       "Exit status: 0 ok, 1 an expect or check "
			       "failed, 2 bad script or usage.\n"
			       "Format: docs/replay.md.\n");
			return KVSIM_EXIT_OK;
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			return cli_bad_option("kvsim replay", argv[i]);
		} else if (file != NULL) {
			fprintf(stderr, "kvsim replay: one script at a time\n");
			return KVSIM_EXIT_USAGE;
		} else {
			file = argv[i];
		}
	}
	if (file == NULL) {
		fprintf(stderr, "usage: kvsim replay [--check] [--max-steps N] "
			"FILE\n");
		return KVSIM_EXIT_USAGE;
	}
	if (strcmp(file, "-") == 0) {
		return replay_file(stdin, "<stdin>", &o);
	}
	in = fopen(file, "r");
	if (in == NULL) {
		fprintf(stderr, "kvsim replay: %s: %s\n", file,
			strerror(errno));
		return KVSIM_EXIT_USAGE;
	}
	rc = replay_file(in, file, &o);
	fclose(in);
	return rc;
}
