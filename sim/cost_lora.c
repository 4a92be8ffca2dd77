/*
 * cost_lora.c -- the LoRA term of a step's time (docs/lora.md): vLLM's
 * punica kernels shrink each LoRA token's activations to the adapter's
 * rank and expand them back on every targeted layer (flops_token per
 * token), reading each active adapter's weights once; the term is the
 * larger of the two times at the cost model's achieved rates, as the
 * model's linear layers are timed.
 */
#include "config.h"

#include "sim/cost.h"
#include "sim/cost_lora.h"

int64_t
cost_lora_ns(const struct cost_model *cm, uint64_t tokens,
	     uint32_t nadapters, double flops_token, double adapter_bytes)
{
	double pc = cm->peak_flops * cm->eff_compute.v;
	double bw = cm->hbm_bw * cm->eff_memory.v;
	double tc, tm;

	if (tokens == 0 || nadapters == 0)
		return 0;
	tc = pc > 0 ? (double)tokens * flops_token / pc : 0;
	tm = bw > 0 ? (double)nadapters * adapter_bytes / bw : 0;
	return (int64_t)((tc > tm ? tc : tm) * 1e9 + 0.5);
}
