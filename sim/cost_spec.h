/*
 * cost_spec.h -- the drafter's time in a speculative decoding step
 * (docs/cost-model.md "Speculative decoding").  The verify half needs no
 * term of its own: a request with drafts is scheduled 1 + drafts tokens
 * (kvsched.h kvs_sched.spec), which the target's roofline (cost.h) takes
 * as it takes any query tokens.
 *
 * The draft half, after the verify in the same step (vLLM v0.15.1
 * gpu_model_runner: propose_draft_token_ids after sampling):
 *   EAGLE, EAGLE-3  k sequential forwards of the draft head over the
 *                   batch, the first over each request's verified tokens,
 *                   the rest one token each; a forward is the roofline max
 *                   of its FLOPs (2 per head parameter and token, the LM
 *                   head per token) and its bytes (the head's weights, its
 *                   one KV layer read by each context)
 *   draft_model     k forwards of the draft model (its own cost model,
 *                   cost_step_ns), batched the same way
 *   ngram           CPU time per request (the prompt lookup runs on the
 *                   host between the GPU halves): a kvsim assumption,
 *                   COST_SPEC_NGRAM_NS, not a measurement
 */
#ifndef SIM_COST_SPEC_H
#define SIM_COST_SPEC_H

#include "sim/cost.h"

#include <stdint.h>

#define COST_SPEC_NGRAM_NS 20000.0	/* per request proposed for */

enum cost_spec_kind { COST_SPEC_NONE = 0, COST_SPEC_HEAD, COST_SPEC_MODEL,
		      COST_SPEC_NGRAM };

struct cost_spec {
	enum cost_spec_kind kind;
	uint32_t k;
	const struct cost_model *target;	/* the GPU's rates */
	const struct cost_model *draft;		/* COST_SPEC_MODEL */
	double head_bytes;	/* HEAD: weights read a forward, per rank */
	double head_flops_token;	/* 2 * head params (LM head too) */
	double head_kv_token;	/* its KV layer's bytes a context token */
};

/*
 * The draft time of a step whose batch is seq[0..n) (q: the tokens the
 * verify computed, ctx: the context before them).  0 for COST_SPEC_NONE.
 */
int64_t cost_spec_draft_ns(const struct cost_spec *cs,
			   const struct cat_mixer_seq *seq, size_t n);

#endif
