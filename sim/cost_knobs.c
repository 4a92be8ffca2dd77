/*
 * cost_knobs.c -- the cost of two engine knobs of issue 20
 * (docs/cost-model.md "Pipeline parallel and CPU weight offload").
 *
 * Pipeline parallel (--pipeline-parallel-size P): the stages run one
 * batch's layers one after another, so a batch takes what the whole model
 * takes on one stage's GPUs (the sum of the stages' L/P layers) plus P-1
 * sends of its activations to the next stage.  vLLM v0.15.1 sends a
 * stage's IntermediateTensors, hidden_states and residual, each tokens x
 * hidden in the model dtype (vllm/model_executor/models/llama.py
 * LlamaModel.forward; vllm/distributed/parallel_state.py
 * send_tensor_dict, each TP rank its 1/TP slice); a send costs the link's
 * latency (the allreduce_ns term) and its bytes at the link's rate.
 *
 * CPU weight offload (--cpu-offload-gb): vLLM keeps that many GiB of
 * each GPU's weights in pinned CPU memory and every forward pass reads
 * them over the host link (vllm/model_executor/models/utils.py
 * maybe_offload_to_cpu: the module's forward moves its parameters to the
 * device before it runs); a step takes their bytes at the GPU's host
 * link rate (data/gpus.yaml host link).
 */
#include "sim/cost.h"

kv_err
cost_knobs_init(struct cost_model *cm, const struct cat_model *m,
		const struct cost_config *cfg, char *why, size_t whylen)
{
	cm->pp = cfg->pp > 1 ? cfg->pp : 1;
	cm->pp_send_token_bytes = 2.0 * (double)m->hidden_size *
				  cm->dtype_bytes / cm->tp;
	cm->offload_bytes = cfg->offload_bytes > 0 ? cfg->offload_bytes : 0;
	if (cm->pp > 1 && !(cm->link_bw > 0.0))
		return cat_fail(why, whylen, KV_EINVAL,
				"GPU %s has no GPU-to-GPU or host link for "
				"pipeline parallel size %u",
				cm->gpu_id ? cm->gpu_id : "?", cm->pp);
	if (cm->offload_bytes > 0 && !(cm->host_bw > 0.0) &&
	    !cm->unified_memory)
		return cat_fail(why, whylen, KV_EINVAL,
				"GPU %s has no host link for cpu_offload_gb",
				cm->gpu_id ? cm->gpu_id : "?");
	return KV_OK;
}

void
cost_knobs_step(const struct cost_model *cm, struct cost_breakdown *bd)
{
	double pp, off;

	if (cm->pp > 1) {
		double link = cm->link_bw * cm->eff_interconnect.v / 1e9;
		double bytes = (double)bd->tokens * cm->pp_send_token_bytes;

		bd->pp_send_ns = (cm->pp - 1) *
				 (cm->allreduce_ns.v + bytes / link);
	}
	if (cm->offload_bytes > 0 && cm->host_bw > 0.0)
		bd->offload_ns = cm->offload_bytes / cm->host_bw * 1e9;
	cost_knobs_terms(cm, bd, &pp, &off);
	bd->gpu_ns = bd->gpu_ns + pp + off;
}
