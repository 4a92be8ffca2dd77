/*
 * runcfg_knobs.h -- the engine knobs of issue 20 (docs/run.md "Scheduler
 * and engine knobs"): vLLM's long_prefill_token_threshold,
 * max_num_partial_prefills, max_long_partial_prefills,
 * pipeline_parallel_size, quantization and cpu_offload_gb under engine:.
 * Internal to sim/: runcfg.c reads and writes them through these calls,
 * run.c resolves them against the policy and the sizing.
 */
#ifndef SIM_RUNCFG_KNOBS_H
#define SIM_RUNCFG_KNOBS_H

#include "core/kvsched.h"
#include "sim/runcfg.h"

#include <stdio.h>

/* Every knob not given. */
void sim_knobs_init(struct sim_knobs_config *k);

/* Whether key is one of this file's (the engine.* names above). */
bool sim_knobs_key(const char *key);

/*
 * Set key to v (null or `auto`: the default).  KV_OK, or KV_EINVAL with
 * "WHERE: KEY: what, got 'V'" in err.
 */
kv_err sim_knobs_set(struct sim_config *c, const char *key, const char *v,
		     const char *where, char *err, size_t errlen);

/* The keys given, as engine: lines (sim_config_write). */
void sim_knobs_write(const struct sim_config *c, FILE *f);

/*
 * The scheduler settings of the knobs, after the sizing (sr): vLLM's
 * SchedulerConfig checks and its derived long_prefill_token_threshold,
 * into sc.  KV_OK, or KV_EINVAL with "WHERE: what" in err.
 */
kv_err sim_knobs_sched(const struct sim_config *c, const struct sz_result *sr,
		       struct kvs_config *sc, char *err, size_t errlen);

#endif
