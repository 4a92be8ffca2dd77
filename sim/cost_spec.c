/*
 * cost_spec.c -- the drafter's time in a speculative decoding step
 * (cost_spec.h).  Pure: doubles summed in a fixed order, integer ns.
 */
#include "config.h"

#include "sim/cost_spec.h"

#include <stdlib.h>

/* One forward of an EAGLE head over `tokens` tokens with `ctx` context
 * tokens read in its KV layer: the roofline max of FLOPs and bytes. */
static double
cost_spec__head_fwd(const struct cost_spec *cs, uint64_t tokens, uint64_t ctx)
{
	const struct cost_model *cm = cs->target;
	double pc = cm->peak_flops * cm->eff_compute.v / 1e9;
	double pm = cm->hbm_bw * cm->eff_memory.v / 1e9;
	double tc = pc > 0 ? cs->head_flops_token * (double)tokens / pc : 0;
	double tm = pm > 0 ? (cs->head_bytes + cs->head_kv_token *
			      (double)(ctx + tokens)) / pm : 0;

	return tc > tm ? tc : tm;
}

/* k forwards of the draft model, the first over the verified tokens. */
static double
cost_spec__model(const struct cost_spec *cs, const struct cat_mixer_seq *seq,
		 size_t n)
{
	struct cat_mixer_seq *b = malloc(n * sizeof(*b));
	struct cost_batch cb = { b, n };
	double t = 0;

	if (b == NULL)
		return 0;
	for (uint32_t j = 0; j < cs->k; j++) {
		for (size_t i = 0; i < n; i++) {
			b[i].q = j == 0 ? seq[i].q : 1;
			b[i].ctx = seq[i].ctx + (j == 0 ? 0 : seq[i].q + j - 1);
		}
		t += (double)cost_step_ns(cs->draft, &cb);
	}
	free(b);
	return t;
}

int64_t
cost_spec_draft_ns(const struct cost_spec *cs, const struct cat_mixer_seq *seq,
		   size_t n)
{
	uint64_t tok = 0, ctx = 0;
	double t = 0;

	if (cs == NULL || cs->kind == COST_SPEC_NONE || n == 0)
		return 0;
	if (cs->kind == COST_SPEC_NGRAM)
		return (int64_t)(COST_SPEC_NGRAM_NS * (double)n + 0.5);
	if (cs->kind == COST_SPEC_MODEL)
		return (int64_t)(cost_spec__model(cs, seq, n) + 0.5);
	for (size_t i = 0; i < n; i++) {
		tok += seq[i].q;
		ctx += seq[i].ctx;
	}
	t = cost_spec__head_fwd(cs, tok, ctx);
	for (uint32_t j = 1; j < cs->k; j++)
		t += cost_spec__head_fwd(cs, n, ctx + tok + (uint64_t)(j - 1) *
					 n);
	return (int64_t)(t + 0.5);
}
