/*
 * sizing.h -- KV-cache sizing the way vLLM v1 does it at start-up, from a
 * catalog model, a catalog GPU and the engine settings.
 *
 * Reference: vLLM at commit 5e5a7eb16f12 (DESIGN.md "Reference versions"):
 * gpu_worker.determine_available_memory, the model-config hooks that fix the
 * block size (HybridAttentionMambaModelConfig, the CUDA platform's MLA
 * rules), kv_cache_utils.get_kv_cache_configs (grouping, num_blocks,
 * check_enough_kv_cache_memory) and _report_kv_cache_config (the log
 * lines).  docs/ecosystem.md §3 and docs/core-spec.md §3.5 summarise it;
 * docs/catalog.md says where each default comes from.
 *
 * Every capacity figure comes from libkvcore's block-aligned helpers
 * (core/kvsize.h): the sizing never multiplies raw max_model_len tokens by
 * bytes per token (seed bug 2).
 *
 * What vLLM measures and we estimate: the weights (parameters x bytes, plus
 * the rotary cos/sin cache), the activation peak of the profiling run and
 * the non-torch memory; each can be overridden with a measured value, and
 * kv_cache_memory_bytes skips the estimate altogether, as in vLLM.
 */
#ifndef SIM_MODEL_SIZING_H
#define SIM_MODEL_SIZING_H

#include "core/kvsize.h"
#include "sim/model/catalog.h"

#include <stdio.h>

#define SZ_UNSET (-1)		/* an int64 override that is not given */
#define SZ_MAX_SPECS 8		/* distinct layer specs */
#define SZ_MAX_GROUPS 64	/* KV cache groups */
#define SZ_MAX_LOG 16
#define SZ_LOG_LEN 512

/* Engine settings, in vLLM's names.  0 / "" / SZ_UNSET mean "vLLM's
 * default" (sz_engine_init). */
struct sz_engine {
	double gpu_memory_utilization;	/* 0 < u <= 1; default 0.9 */
	uint32_t block_size;		/* 0: 16 or what the model forces */
	char kv_cache_dtype[16];	/* auto, bfloat16, float16, fp8,
					 * fp8_e4m3, fp8_e5m2, fp8_inc,
					 * fp8_ds_mla */
	char dtype[16];			/* auto, bfloat16, float16 ... */
	char mamba_ssm_cache_dtype[16];	/* auto, float32, bfloat16 */
	char quantization[16];		/* "": the checkpoint's weights;
					 * fp8: 1 byte per parameter, as
					 * vllm serve --quantization fp8 */
	uint64_t max_model_len;		/* 0: derived from the config */
	uint64_t max_num_batched_tokens;	/* 0: vllm serve default */
	uint32_t max_num_seqs;		/* 0: vllm serve default */
	uint32_t tensor_parallel_size;	/* 0: 1 */
	int enable_prefix_caching;	/* -1 default, 0 off, 1 on */
	int64_t kv_cache_memory_bytes;	/* skips profiling (SZ_UNSET) */
	int64_t num_gpu_blocks_override;	/* SZ_UNSET */
	/* kvsim: measured values replace the estimates */
	int64_t gpu_memory_bytes;	/* total memory (SZ_UNSET: usable) */
	int64_t weights_bytes;
	int64_t activation_bytes;
	int64_t non_torch_bytes;
	int64_t cudagraph_bytes;	/* 0 at the pinned commit */
	/* issue 20 knobs (sizing_pp.c); 0: vLLM's default */
	uint32_t pipeline_parallel_size;	/* 0: 1; the layers split
						 * over that many stages */
	double cpu_offload_gb;		/* GiB of weights per GPU kept in
					 * CPU memory (UVA) */

	/* LoRA (docs/lora.md): the adapter slots' weights vLLM allocates
	 * when it loads the model (max_loras adapters of max_lora_rank),
	 * per GPU; 0 without LoRA.  Added to the weights estimate. */
	uint64_t lora_bytes;

	/* speculative decoding (sim/spec.h sim_spec_sizing): the drafter's
	 * weights per rank, added to the estimate, and its KV layers, as
	 * layers of the target's shape in the target's KV cache group
	 * (0, 0: none) */
	uint64_t spec_weights_bytes;
	uint32_t spec_kv_layers;
};

void sz_engine_init(struct sz_engine *e);

struct sz_result {
	/* resolved settings */
	uint32_t tp;
	uint64_t max_model_len;
	uint64_t max_num_batched_tokens;
	uint32_t max_num_seqs;
	bool prefix_caching;
	uint32_t dtype_bytes, kv_dtype_bytes, ssm_dtype_bytes;
	uint32_t weight_bytes;	/* per parameter (1 for fp8 weights) */
	/* memory (bytes); available may be negative */
	bool kv_memory_given;	/* kv_cache_memory_bytes was given */
	uint64_t total_bytes;
	double requested_bytes;	/* total * gpu_memory_utilization */
	uint64_t weights_bytes, activation_bytes, non_torch_bytes;
	uint64_t cudagraph_bytes;
	int64_t available_bytes;
	/* pages */
	uint32_t block_size;	/* attention block size in effect */
	uint32_t mamba_block_size;	/* state specs' block size */
	uint64_t attn_token_bytes;	/* one token of one attention layer */
	uint64_t mamba_state_bytes;	/* one state layer, unpadded */
	uint64_t page_bytes;	/* one block of one layer (all groups) */
	/* layer specs (check_enough) and KV cache groups (num_blocks) */
	struct kvc_spec spec[SZ_MAX_SPECS];
	size_t nspec;
	struct kvc_spec group[SZ_MAX_GROUPS];
	size_t ngroup;
	uint32_t layers_per_group;
	uint32_t padding_layers;
	struct kvc_limits lim;
	/* the verdict */
	bool weights_fit;	/* false: vLLM fails loading the weights and
				 * sizes nothing (needed_bytes is still set) */
	bool fits;		/* one max_model_len request fits */
	uint64_t needed_bytes;	/* that request's KV bytes */
	uint64_t max_len_fit;	/* largest max_model_len that fits */
	uint64_t num_blocks_computed;	/* before the override */
	uint64_t num_blocks;
	uint64_t blocks_per_request;
	uint64_t cache_tokens;	/* "GPU KV cache size: N tokens" */
	double max_concurrency;	/* "Maximum concurrency ...: X.XXx" */
	/* vLLM's log lines in order, and its error (fits == false) */
	char log[SZ_MAX_LOG][SZ_LOG_LEN];
	size_t nlog;
	char error[1024];
	/* issue 20 knobs */
	uint32_t pp;		/* pipeline stages (1) */
	uint32_t pp_stage;	/* the stage whose pool is the smallest, whose
				 * figures the ones above are */
	uint64_t offload_bytes;	/* weights per GPU left in CPU memory */
};

/*
 * Size the KV cache.  KV_OK with r filled (r->fits says whether vLLM would
 * start; when it would not, r->error holds its ValueError text and the
 * blocks are not computed), or KV_EINVAL for settings vLLM rejects before
 * sizing (why: the message), or KV_ENOTSUP for a model vLLM cannot group.
 */
kv_err sz_compute(const struct cat_model *m, const struct cat_gpu *g,
		  const struct sz_engine *e, struct sz_result *r, char *why,
		  size_t whylen);

/*
 * One stage of a pipeline-parallel engine (sizing_pp.c): sz_compute with
 * e's pipeline_parallel_size ignored, for a model that is already the
 * stage's share of the layers.
 */
kv_err sz__compute_one(const struct cat_model *m, const struct cat_gpu *g,
		       const struct sz_engine *e, struct sz_result *r,
		       char *why, size_t whylen);

/* The estimates, exposed for tests and the cost model (bytes per rank). */
uint64_t sz_weights_bytes(const struct cat_model *m, uint32_t tp,
			  uint32_t weight_bytes, uint32_t dtype_bytes,
			  uint64_t rope_len);
uint64_t sz_activation_bytes(const struct cat_model *m, uint32_t tp,
			     uint32_t dtype_bytes, uint64_t batched_tokens,
			     uint32_t max_num_seqs);
uint64_t sz_non_torch_bytes(uint32_t tp);

/*
 * Whether vLLM accepts block_size as --block-size (CacheConfig's
 * BlockSize choices at the pinned commit: 1, 8, 16, 32, 64, 128, 256).
 */
bool sz_block_size_valid(uint64_t block_size);

/*
 * e->block_size as vllm serve takes it: unset, one of the choices above,
 * or for a hybrid model the attention block size vLLM computes for it
 * (sz_compute logs "Setting attention block size to N tokens"), which a
 * user may give back.  KV_OK, or KV_EINVAL with why (whose text starts
 * "block_size N:"), or the error sz_compute would return.
 */
kv_err sz_check_block_size(const struct cat_model *m,
			   const struct cat_gpu *g, const struct sz_engine *e,
			   char *why, size_t whylen);

/* vLLM's integer formatting with thousands separators: 436,544. */
void sz_commas(char *buf, size_t len, uint64_t v);

#endif
