/*
 * vllmargs.h -- `kvsim run --vllm-args "..."`: the options of `vllm serve`
 * mapped onto the configuration keys of runcfg.h (docs/run.md "vLLM's own
 * flags").
 *
 * The string is split into words as a POSIX shell splits a command line
 * (quotes and backslashes; no variables, globs or substitutions), then
 * read as vLLM's FlexibleArgumentParser reads `vllm serve`'s: --flag VALUE
 * and --flag=VALUE, `_` and `-` alike in a long name before its first
 * `.`, the short aliases (-tp, -pp, -q), --x / --no-x for a boolean, a
 * JSON object (or --json-flag.field VALUE) for a config class, the one
 * positional argument as the model.  Each option kvsim models becomes one
 * or more KEY=VALUE settings, in command-line order (the positional model
 * last, as `vllm serve` lets it win over --model).  An option of vLLM's
 * that kvsim does not model is refused by name; a short list that cannot
 * change the KV cache or a step's time (--host, --port, ...) is accepted
 * and reported as ignored.  Nothing here prints.
 */
#ifndef SIM_VLLMARGS_H
#define SIM_VLLMARGS_H

#include "core/kvcore.h"
#include "sim/runcfg.h"

#include <stddef.h>

/* The words of a string, split as a shell splits them. */
struct sim_vargs_words {
	char **w;		/* n words, NUL-terminated, in buf */
	size_t n;
	char *buf;		/* private */
};

/*
 * Split s: blanks (space, tab, newline) separate words; '...' is taken as
 * written; "..." as written except \" \\ \$ \` and backslash-newline;
 * outside quotes a backslash takes the next character as written (a
 * backslash-newline joins lines).  KV_OK; KV_EINVAL with "--vllm-args:
 * unterminated '" (or ", or a trailing backslash) and the column in err;
 * KV_ENOMEM.  Release with sim_vargs_words_release either way.
 */
kv_err sim_vargs_split(const char *s, struct sim_vargs_words *out, char *err,
		       size_t errlen);
void sim_vargs_words_release(struct sim_vargs_words *w);

/*
 * Receives each setting: key (a runcfg key, "engine.block_size"), value
 * (its text) and where ("--vllm-args: --block-size", for messages).  A
 * failure's message is in err; sim_vargs_map stops at it.
 */
typedef kv_err (*sim_vargs_set_fn)(void *ctx, const char *key,
				   const char *value, const char *where,
				   char *err, size_t errlen);

/*
 * Map the options of args (one --vllm-args value) onto settings, each
 * given to set(ctx, ...) in order.  ignored (may be NULL) receives the
 * ignored options, ", "-separated, appended to what it holds.  KV_OK, or
 * KV_EINVAL with "--vllm-args: --foo: not a vllm serve option", "...: vLLM
 * option kvsim does not model", a bad value's words, or set's message;
 * KV_ENOMEM.
 */
kv_err sim_vargs_map(const char *args, sim_vargs_set_fn set, void *ctx,
		     char *ignored, size_t ignlen, char *err, size_t errlen);

/* sim_vargs_map onto c through runcfg's setters. */
kv_err sim_vargs_apply(struct sim_config *c, const char *args,
		       char *ignored, size_t ignlen, char *err,
		       size_t errlen);

/*
 * sim_config_from_args with --vllm-args: init c, load file (NULL: the
 * embedded default), apply vargs[0..nv) in order, then sets[0..n), then
 * finish.  The message is in err on failure; release c either way.
 */
kv_err sim_vargs_config(struct sim_config *c, const char *file,
			const char *const *vargs, size_t nv,
			const char *const *sets, size_t n, char *ignored,
			size_t ignlen, char *err, size_t errlen);

/* The table, for docs and tests: the i-th option kvsim maps (its long
 * name without "--", its alias or NULL, the key it sets); false past the
 * end. */
bool sim_vargs_mapped(size_t i, const char **name, const char **alias,
		      const char **key);

#endif
