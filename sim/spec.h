/*
 * spec.h -- speculative decoding in a run (docs/speculative.md): the drafter's
 * proposals and the verifier's acceptance, drawn from the run's seed, and
 * the run-level checks and settings the scheduler and sizing take.
 *
 * The draws are keyed by the run's seed, the request's workload id, its
 * output tokens so far and the draft position (wl_mix), not by a stream:
 * a request's drafts and acceptances do not depend on the batch it shares,
 * the replica it runs on or the order of the step's entries.
 *
 * Proposals (vLLM v0.15.1's proposers, after each step, for each request
 * that is running and has sampled a token):
 *   ngram        k drafts when the context has a match, else none; whether
 *                it has one is drawn with ngram_match_rate (kvsim's
 *                stand-in for the prompt lookup over real token ids)
 *   eagle(3), draft_model   k drafts always (the scheduler trims them at
 *                max_model_len, kvsched.h)
 * Acceptance: position i of a chain is accepted with acc[i] (conditional
 * on the ones before it); the chain stops at the first rejection.
 */
#ifndef SIM_SPEC_H
#define SIM_SPEC_H

#include "core/kvsched.h"
#include "sim/cost_spec.h"
#include "sim/model/catalog.h"
#include "sim/model/sizing.h"
#include "sim/runcfg.h"

#include <stdbool.h>
#include <stdint.h>

struct sim_spec {
	enum sim_spec_method method;
	uint32_t k;
	double acc[SIM_SPEC_MAX_K];
	double match;		/* ngram: chance of a match */
	uint64_t key;		/* from the run's seed */
};

void sim_spec_init(struct sim_spec *sp, const struct sim_spec_config *c,
		   uint64_t seed);

/* Drafts for request `id` after it has `gen` output tokens. */
uint32_t sim_spec_propose(const struct sim_spec *sp, uint64_t id,
			  uint32_t gen);

/* How many of the ndraft drafts the verifier accepts (the chain). */
uint32_t sim_spec_accept(const struct sim_spec *sp, uint64_t id, uint32_t gen,
			 uint32_t ndraft);

/*
 * The run-level rules (docs/speculative.md), before sizing: only vllm-v1 runs
 * it (plugin: a policy plugin); async scheduling left auto runs
 * synchronously with it, and set true is refused (*async: the resolved
 * setting); draft_tensor_parallel_size is 1 or the target's.  KV_OK or
 * KV_EINVAL with "WHERE: what".
 */
kv_err sim_spec_check(struct sim_config *c, const char *policy, bool v1,
		      bool plugin, char *err, size_t errlen);

/*
 * The drafter's share of the GPU (docs/speculative.md "Sizing"): its weights per
 * rank go to e->weights_bytes' estimate through *weights, and its KV
 * layers, as layers of the target's shape, to *kv_layers.  EAGLE and
 * EAGLE-3: one decoder layer of the target's shape, the fc that mixes
 * hidden states (2 or 3 hidden by hidden), and EAGLE-3's own LM head over
 * its draft vocabulary; draft_model: the catalog model `draft` (its KV
 * bytes per token over the target's, rounded up to whole layers); ngram:
 * nothing.  draft NULL unless draft_model.
 */
void sim_spec_sizing(const struct sim_spec_config *c,
		     const struct cat_model *target,
		     const struct cat_model *draft, uint32_t tp,
		     uint32_t weight_bytes, uint64_t *weights,
		     uint32_t *kv_layers);

/* A run's speculative decoding: the drafter, its time, the draft model
 * (draft_model) and that model's cost model. */
struct sim_spec_run {
	bool on;
	struct sim_spec sp;
	struct cost_spec cost;
	const struct cat_model *draft;
	struct cost_model draft_cm;
};

/*
 * Before sizing: sim_spec_check, the draft model found in the catalog
 * (draft_model; an unknown one is refused at the key), and the drafter's
 * weights and KV layers put in c->eng (sim_spec_sizing).  Off: nothing.
 */
kv_err sim_spec_open(struct sim_spec_run *r, struct sim_config *c,
		     const cat *ct, const struct cat_model *target,
		     const char *policy, bool v1, bool plugin, char *err,
		     size_t errlen);

/*
 * After the scheduler's configuration: spec_tokens (and EAGLE's
 * lookahead, k, as vLLM sets num_lookahead_tokens) into sc, the drafter's
 * time (cost_spec.h) from the target's cost model cm and, for
 * draft_model, a cost model of its own on gpu g.
 */
kv_err sim_spec_ready(struct sim_spec_run *r, const struct sim_config *c,
		      const struct cat_gpu *g, const struct cost_model *cm,
		      struct kvs_config *sc, char *err, size_t errlen);

/* EAGLE-3's draft vocabulary (the published Llama-3.1 heads': 32000). */
#define SIM_SPEC_EAGLE3_VOCAB 32000

#endif
