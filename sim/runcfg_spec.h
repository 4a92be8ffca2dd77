/*
 * runcfg_spec.h -- engine.speculative_config of a run (runcfg.h struct
 * sim_spec_config; docs/speculative.md): its keys' setters, its checks once every
 * key is read, and its part of the resolved config.yaml.
 *
 * vLLM's names (SpeculativeConfig, vLLM v0.15.1): method (ngram, eagle,
 * eagle3, draft_model), num_speculative_tokens, model,
 * draft_tensor_parallel_size, prompt_lookup_max, prompt_lookup_min; and
 * kvsim's: acceptance (a number in [0, 1], a list of one per position, or
 * a file of vLLM's measured per-position acceptance rates) and
 * ngram_match_rate.
 */
#ifndef SIM_RUNCFG_SPEC_H
#define SIM_RUNCFG_SPEC_H

#include "sim/runcfg.h"
#include "util/ydoc.h"

#include <stdbool.h>
#include <stdio.h>

/* The default conditional acceptance of each position and the default
 * chance that the n-gram proposer finds a match (docs/speculative.md). */
#define SIM_SPEC_ACC_DEFAULT 0.7
#define SIM_SPEC_NGRAM_MATCH_DEFAULT 0.5

void sim_spec_config_init(struct sim_spec_config *s);

/* "ngram", "eagle", "eagle3", "draft_model"; "off" for SIM_SPEC_OFF. */
const char *sim_spec_method_name(enum sim_spec_method m);

/*
 * One key under engine.speculative_config (key: the full name): set, or
 * KV_EINVAL with "WHERE: KEY: what, got 'VALUE'".  file: the file the
 * value is written in (a path is taken relative to it), NULL for --set.
 */
kv_err sim_spec_config_set(struct sim_config *c, const char *key,
			   const char *v, const char *where, const char *file,
			   char *err, size_t errlen);

/* engine.speculative_config.acceptance given as a YAML sequence. */
kv_err sim_spec_config_seq(struct sim_config *c, const struct yd_node *seq,
			   const char *file, char *err, size_t errlen);

/*
 * After every key: the rules that need more than one key (a method needs
 * num_speculative_tokens; eagle, eagle3 and draft_model need a model; an
 * acceptance list has one value per position; prompt_lookup_min <=
 * prompt_lookup_max), vLLM's n-gram defaults, and the acceptance file
 * read.  KV_OK, or KV_EINVAL with "WHERE: what".
 */
kv_err sim_spec_config_finish(struct sim_config *c, char *err,
			      size_t errlen);

/* Its lines of the resolved configuration, inside engine: (nothing when
 * off, so that a run without it keeps its text and digest). */
void sim_spec_config_write(const struct sim_config *c, FILE *f);

/* runcfg.c's: "WHERE: what" (printf's format) into err; KV_EINVAL. */
kv_err sim_config_fail(char *err, size_t errlen, const char *where,
		       const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* runcfg.c's: path taken relative to the directory of `file` (NULL: the
 * current directory), made absolute.  False if too long. */
bool sim_config_resolve_path(char *dst, size_t len, const char *path,
			     const char *file);

#endif
