/*
 * kvsize.h -- block-aligned KV-cache sizing arithmetic (libkvcore).
 *
 * Pure functions: no handle, no state, no allocation, no I/O.  They compute
 * what vLLM v1 computes at start-up (vllm-project/vllm at 5e5a7eb16f12:
 * vllm/v1/kv_cache_interface.py, vllm/v1/core/kv_cache_utils.py,
 * vllm/model_executor/models/config.py, vllm/model_executor/layers/mamba/
 * mamba_utils.py), which docs/core-spec.md §3.5 and §8.2 and
 * docs/ecosystem.md §1.2-§3 summarise.
 *
 * Main rule (seed bug 2, vllm-metal "test_block_alignment_rounds_up_token_
 * count"): every byte count is a whole number of blocks, because the
 * allocator reserves cdiv(tokens, block_size) blocks.  An estimate from raw
 * max_model_len tokens under-reports whenever block_size does not divide
 * max_model_len (bs 400 on Granite-4.0-H: 2048 tokens take 2400 slots), and
 * the start-up check then fails with "needed > available".  Nothing here
 * offers the unaligned figure.
 *
 * Units: bytes and tokens are uint64_t; a "page" is one block of one layer.
 * Arithmetic saturates at UINT64_MAX instead of wrapping.  A zero block
 * size, page or layer count where one is divided by gives 0, never a trap.
 */
#ifndef KVSIZE_H
#define KVSIZE_H

#include "kvcore.h"

#ifdef __cplusplus
extern "C" {
#endif

/* vLLM's fp8_ds_mla format: 656 bytes per token per layer
 * (MLAAttentionSpec.page_size_bytes, flashmla_sparse.py). */
#define KVC_FP8_DS_MLA_TOKEN_BYTES 656u

/* ---- pages ------------------------------------------------------------ */

/*
 * Bytes of one block of one attention layer: AttentionSpec.page_size_bytes,
 * coef * block_size * kv_heads * head_size * dtype_bytes with coef 2 (K and
 * V) or 1 for an MLA latent (kv_heads 1, head_size kv_lora_rank +
 * qk_rope_head_dim, e.g. 576).  block_size 1 gives the bytes per token.
 * kv_heads is per rank (vLLM: max(1, kv_heads / tp); MLA stays 1).
 */
uint64_t kvc_page_bytes(uint32_t kv_heads, uint32_t head_size,
			uint32_t dtype_bytes, uint32_t block_size, bool mla);

/* MLA page in the fp8_ds_mla format: block_size * 656. */
uint64_t kvc_page_bytes_fp8_ds_mla(uint32_t block_size);

/*
 * One layer's recurrent state, the MambaSpec page before padding: the sum
 * of its tensors' bytes (mamba_utils.py MambaStateShapeCalculator, tp = 1).
 *
 * Mamba-2: conv (d_conv - 1) x (d_inner + 2 n_groups d_state),
 *          ssm  n_heads x head_dim x d_state.
 * Mamba-1: conv (d_conv - 1) x d_inner, ssm d_inner x d_state.
 * Gated DeltaNet (Qwen3-Next): conv (conv_kernel - 1) x
 *          (2 key_heads key_dim + value_heads value_dim),
 *          ssm value_heads x key_dim x value_dim.
 * conv_bytes / ssm_bytes: element sizes of the two tensors (bf16 2; the SSM
 * state may be fp32, 4).  Granite-4.0-H-tiny, bf16: 806,400 bytes.
 */
uint64_t kvc_mamba2_state_bytes(uint32_t d_conv, uint32_t d_inner,
				uint32_t n_groups, uint32_t d_state,
				uint32_t n_heads, uint32_t head_dim,
				uint32_t conv_bytes, uint32_t ssm_bytes);
uint64_t kvc_mamba1_state_bytes(uint32_t d_conv, uint32_t d_inner,
				uint32_t d_state, uint32_t conv_bytes,
				uint32_t ssm_bytes);
uint64_t kvc_gdn_state_bytes(uint32_t conv_kernel, uint32_t key_heads,
			     uint32_t key_dim, uint32_t value_heads,
			     uint32_t value_dim, uint32_t conv_bytes,
			     uint32_t ssm_bytes);

/* ---- one sequence ----------------------------------------------------- */

/*
 * Bytes of KV cache one max_model_len sequence really takes in `layers`
 * full-attention layers: layers * cdiv(max_model_len, block_size) *
 * kvc_page_bytes(kv_heads, head_size, dtype_bytes, block_size, false).
 * This is vllm-metal's fixed _one_sequence_kv_bytes (seed bug 2): 4 layers,
 * 4 KV heads, head 64, fp16, max_model_len 2048, bs 400 -> 9,830,400 bytes
 * (2400 aligned tokens), never the unaligned 8,388,608.  A hybrid model adds
 * its state layers' bytes (kvc_mamba2_state_bytes and friends) on top.
 */
uint64_t kvc_seq_bytes(uint32_t layers, uint32_t kv_heads, uint32_t head_size,
		       uint32_t dtype_bytes, uint64_t max_model_len,
		       uint32_t block_size);

/* ---- worst case of one request, per layer ------------------------------ */

/*
 * Blocks one layer of each kind may hold for one request
 * (KVCacheSpec.max_memory_usage_bytes / page_size_bytes).  `batched` is
 * max_num_batched_tokens.
 *
 * full:    cdiv(max_model_len, bs)                       FullAttentionSpec
 * sliding: cdiv(min(window - 1 + batched, mml), bs) + 1  SlidingWindowSpec
 *          (+1: the window need not start on a block boundary)
 * chunked: cdiv(min(chunk + batched, mml), bs)           ChunkedLocalAttn.
 * state:   cdiv(max_model_len, bs)                       MambaSpec; bs is the
 *          Mamba block size, max_model_len itself without prefix caching,
 *          so one page (pass bs = 0 for "one page" directly)
 * cross:   cdiv(max_encoder_len, bs)                     CrossAttentionSpec
 */
uint64_t kvc_worst_blocks_full(uint64_t max_model_len, uint32_t bs);
uint64_t kvc_worst_blocks_sliding(uint32_t window, uint64_t max_model_len,
				  uint64_t batched, uint32_t bs);
uint64_t kvc_worst_blocks_chunked(uint32_t chunk, uint64_t max_model_len,
				  uint64_t batched, uint32_t bs);
uint64_t kvc_worst_blocks_state(uint64_t max_model_len, uint32_t bs);
uint64_t kvc_worst_blocks_cross(uint64_t max_encoder_len, uint32_t bs);

/* ---- a model: layer specs and KV cache groups ------------------------- */

enum kvc_spec_kind {
	KVC_SPEC_FULL = 0,	/* FullAttentionSpec, MLAAttentionSpec */
	KVC_SPEC_SLIDING,	/* SlidingWindowSpec */
	KVC_SPEC_CHUNKED,	/* ChunkedLocalAttentionSpec */
	KVC_SPEC_STATE,		/* MambaSpec (Mamba, linear attention) */
	KVC_SPEC_CROSS,		/* CrossAttentionSpec */
	KVC_SPEC_ENCODER_ONLY	/* EncoderOnlyAttentionSpec: no KV cache */
};

/*
 * `nlayers` layers sharing one spec.  As a list of layers it is vLLM's
 * kv_cache_spec dict, compressed; as a list of KV cache groups
 * (kvc_max_concurrency, kvc_cache_tokens) each entry is one group and
 * nlayers its layer count.
 */
struct kvc_spec {
	enum kvc_spec_kind kind;
	uint32_t block_size;	/* tokens per block (STATE: see above) */
	uint64_t page_bytes;	/* one block of one layer, padded */
	uint32_t window;	/* SLIDING: sliding_window tokens */
	uint32_t chunk;		/* CHUNKED: attention_chunk_size */
	uint32_t nlayers;
};

struct kvc_limits {
	uint64_t max_model_len;
	uint64_t max_num_batched_tokens;	/* SLIDING, CHUNKED */
	uint64_t max_encoder_len;		/* CROSS */
};

/* Worst-case blocks / bytes of one layer with spec s (per the table above). */
uint64_t kvc_worst_blocks(const struct kvc_spec *s,
			  const struct kvc_limits *lim);
uint64_t kvc_worst_bytes(const struct kvc_spec *s,
			 const struct kvc_limits *lim);

/*
 * Bytes one max-length request needs over every layer:
 * sum of nlayers * kvc_worst_bytes (kv_cache_utils.max_memory_usage_bytes
 * over the layer dict).  The figure check_enough_kv_cache_memory compares.
 */
uint64_t kvc_request_bytes(const struct kvc_spec *specs, size_t n,
			   const struct kvc_limits *lim);

/*
 * Blocks a KV budget buys (kv_cache_utils.get_num_blocks):
 * bytes // page_bytes // layers_per_group, where layers_per_group is the
 * number of layers (one group) or the largest group's layer count (several
 * groups of uniform page size: one tensor per layer slot, shared by one
 * layer of every group).  num_gpu_blocks_override replaces it outright.
 */
uint64_t kvc_blocks_for_budget(uint64_t bytes, uint64_t page_bytes,
			       uint32_t layers_per_group);

/*
 * Blocks one max-length request takes across the groups, as the
 * concurrency log computes it (get_max_concurrency_for_kv_cache_config):
 * L = the largest group's nlayers, cdiv(L * sum over groups of
 * kvc_worst_bytes, groups[0].page_bytes * L).  Groups share one page size.
 */
uint64_t kvc_blocks_per_request(const struct kvc_spec *groups, size_t ngroups,
				const struct kvc_limits *lim);

/*
 * "Maximum concurrency for N tokens per request: X.XXx":
 * num_blocks / kvc_blocks_per_request.  Qwen1.5-7B-like (32 heads x 128,
 * fp16, bs 16, mml 16384, batched 1024): full with 1536 blocks -> 1.5;
 * sliding(1024) with 387 -> 3 (129 blocks a request); full + sliding with
 * (1024 + 129) * 3 -> 3.  0 when a request needs no block.
 */
double kvc_max_concurrency(uint64_t num_blocks, const struct kvc_spec *groups,
			   size_t ngroups, const struct kvc_limits *lim);

/*
 * "GPU KV cache size: N tokens" at vLLM 5e5a7eb16f12:
 * num_blocks // ngroups * (smallest block size over the groups).  For one
 * full-attention group this is num_blocks * block_size; Granite-4.0-H-tiny
 * (10 groups of 4 layers) with 15 blocks logs 400.
 */
uint64_t kvc_cache_tokens(uint64_t num_blocks, const struct kvc_spec *groups,
			  size_t ngroups);

/*
 * check_enough_kv_cache_memory: can one request of lim->max_model_len
 * tokens fit in `available` bytes?  *needed = kvc_request_bytes (may be
 * NULL).  KV_OK if it fits (or n == 0: nothing to check); KV_ENOSPC if
 * available <= 0 ("No available memory for the cache blocks", *max_len 0)
 * or needed > available, with *max_len (may be NULL) the largest
 * max_model_len that fits, by vLLM's binary search over [1, max_model_len]
 * (estimate_max_model_len; 0 if not even one token fits).  STATE specs keep
 * their block size during the search, as vLLM's do.
 */
kv_err kvc_check_enough(const struct kvc_spec *specs, size_t n,
			const struct kvc_limits *lim, int64_t available,
			uint64_t *needed, uint64_t *max_len);

/* estimate_max_model_len alone: the binary search of kvc_check_enough. */
uint64_t kvc_estimate_max_model_len(const struct kvc_spec *specs, size_t n,
				    const struct kvc_limits *lim,
				    int64_t available);

/* ---- hybrid attention + Mamba page unification ------------------------ */

/*
 * HybridAttentionMambaModelConfig.verify_and_update_config: one pool needs
 * one page size, so the attention block grows until its page holds a Mamba
 * state, and the Mamba page is padded up to the attention page.
 *
 *   without prefix caching: bs = align * cdiv(mamba, align * attn_token)
 *   with prefix caching:    u = lcm(mamba_chunk, align),
 *                           bs = u * cdiv(cdiv(mamba, attn_token), u),
 *                           and the Mamba block size becomes bs
 *
 * A user block size (block_size != 0) smaller than bs is overridden (vLLM
 * logs "Setting attention block size to %d tokens"); a larger one is kept.
 * Then page = block_size * attn_token and the Mamba page is padded to it.
 * Granite-4.0-H-tiny (4 KV heads x 128 bf16 = 2048 B/token, Mamba 806,400 B,
 * align 16): 400 tokens, 819,200-byte pages; with a float32 SSM state 784;
 * with prefix caching (chunk 256) 512.
 */
struct kvc_hybrid {
	uint64_t attn_token_bytes;	/* kvc_page_bytes(.., 1, ..): a token */
	uint64_t mamba_page_bytes;	/* one layer's state, unpadded */
	uint32_t align;		/* kernel block alignment: 16 (FlashAttention,
				 * FlashInfer), 32 (Blackwell, head 256),
				 * 64 or 128 (MLA; 64 on Hopper) */
	uint32_t mamba_chunk;	/* Mamba-2 SSD chunk size (prefix caching) */
	bool prefix_caching;
	uint32_t block_size;	/* the user's, 0 = not set */
};

struct kvc_hybrid_result {
	uint32_t block_size;	/* attention block size to run with */
	uint32_t mamba_block_size;	/* prefix caching: the computed block
					 * size; else 0 (= max_model_len) */
	uint64_t page_bytes;	/* attention page = padded Mamba page */
	uint64_t mamba_padding;	/* bytes added to the Mamba page */
	bool overridden;	/* the user's block size was replaced */
};

/*
 * KV_OK, or KV_EINVAL for a zero attn_token_bytes or align, a zero
 * mamba_chunk with prefix caching, or a block size over UINT32_MAX.  A zero
 * Mamba page (no state layers) leaves the block size alone, as vLLM does.
 */
kv_err kvc_hybrid_unify(const struct kvc_hybrid *h,
			struct kvc_hybrid_result *r);

#ifdef __cplusplus
}
#endif
#endif /* KVSIZE_H */
