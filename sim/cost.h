/*
 * cost.h -- the cost model: how long one scheduler step, one swap and one
 * recomputation take for a model on a GPU at a tensor-parallel degree.
 *
 * Everything here is a pure function of its arguments: no I/O (except
 * cost_describe, which prints to the FILE * it is given), no global state,
 * no allocation.  Results are integer nanoseconds (DESIGN.md: simulated
 * time is int64 ns).  Inside, the terms are doubles summed in a fixed
 * order; the per-sequence parts of a step are first summed as integers
 * (tokens, query-key pairs), so a step's time does not depend on the order
 * of its sequences, and the same inputs give the same nanoseconds on the
 * same build (the code is C11 without -ffast-math and uses no libm).
 *
 * Step time (docs/cost-model.md has every formula with its source):
 *
 *   step = cpu + max(linear + attention + recurrent + allreduce, launch)
 *   cpu       = scheduling + input preparation, each
 *               a step + a sequence * sequences + a token * tokens
 *   linear    = max(flops / (peak * eff_compute),
 *                   weights / (hbm * eff_weights) + act / (hbm * eff_mem))
 *               weights read once a step (MoE: the experts the step's
 *               tokens are expected to touch), 2 FLOPs per active
 *               parameter per token, the LM head once per sequence
 *   attention = max(QK^T and AV FLOPs (causal inside the chunk) /
 *                   (peak * eff_attn_compute), the KV bytes each sequence
 *                   reads by its context / (hbm * eff_kv_read))
 *               (sliding window: at most W tokens; MLA: the latent)
 *   recurrent = the linear max over Mamba / linear-attention state bytes
 *               (a fixed state per sequence) and their scan FLOPs
 *   allreduce = tp > 1: per decoder block, latency(tp) + ring bytes
 *               2 (tp - 1) / tp * tokens * hidden * dtype / (link * eff)
 *   launch    = CUDA graphs on (cost_config.graph_max): the CPU time to
 *               launch a step without a full graph; tokens are padded to
 *               a capture size for the GEMMs
 *
 * Everything on the GPU is per rank: tensor parallelism divides weights,
 * FLOPs and KV heads (never below one KV head; an MLA latent is replicated
 * on every rank, as vLLM stores it).
 *
 * Swap time: T = alpha * calls + beta * chunks + bytes * ns_per_byte, with
 * the chunk and call counts from the KV layout (docs/gpu-design.md §1, §3).
 *
 * Calibration: every constant is a struct cost_term, a value and the
 * source it comes from.  struct cost_calib holds overrides (a calibration
 * file fills them: sim/calib.h); a term left unset takes its default, whose source is
 * printed by cost_describe.
 *
 * Alternatives rejected: a lookup table of profiled kernel times (Vidur)
 * needs a GPU per model; a sum of compute and memory times double-counts
 * overlapping work; one max over the whole step lets a memory-bound phase
 * hide a compute-bound one (weights and long-prefill attention).
 */
#ifndef SIM_COST_H
#define SIM_COST_H

#include "sim/model/catalog.h"
#include "sim/model/mixer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- KV layouts and copies (docs/gpu-design.md §1, §3) ------------------ */

enum cost_layout {
	COST_LAYOUT_FA_SPLIT = 0,	/* vLLM FlashAttention [2, nb, bs, H, D]
					 * per layer: K and V are separate
					 * chunks, 2 per layer (MLA: 1) */
	COST_LAYOUT_FI_FUSED,		/* vLLM FlashInfer [nb, 2, bs, H, D] per
					 * layer: 1 chunk per layer */
	COST_LAYOUT_DS_INTERLEAVED,	/* DeepSpeed (L, nb, bs, 2, H, D): 1
					 * chunk per layer */
	COST_LAYOUT_CROSS_LAYER,	/* vLLM >= 0.12 offloading connector:
					 * one chunk holds every layer */
	COST_NLAYOUTS
};

enum cost_dir { COST_D2H = 0, COST_H2D, COST_NDIRS };

enum cost_copy {
	COST_COPY_PER_CHUNK = 0,	/* one cudaMemcpyAsync per chunk, one
					 * call per layer (and per K/V), as
					 * vLLM V0 swap_blocks */
	COST_COPY_BATCH,		/* cudaMemcpyBatchAsync: one call */
	COST_COPY_GATHER,		/* SM gather kernel through mapped
					 * pinned memory (LMCache) */
	COST_COPY_STAGED,		/* gather into a device buffer, then
					 * one DMA */
	COST_NCOPIES
};

enum cost_hostmem { COST_HOST_PINNED = 0, COST_HOST_PAGEABLE, COST_NHOSTMEMS };

/* ---- terms and calibration ---------------------------------------------- */

/* A constant and where it comes from.  src NULL: not set (calibration). */
struct cost_term {
	double v;
	const char *src;
};

struct cost_copy_terms {
	struct cost_term alpha_ns;	/* per call */
	struct cost_term beta_ns;	/* per contiguous chunk */
	struct cost_term ns_per_byte;	/* 1/B */
};

/*
 * Overrides.  Set a term by giving it a value and a source (the
 * calibration file's "FILE:LINE" or a note); the source string is borrowed
 * for as long as a model built from it is used.
 */
struct cost_calib {
	struct cost_copy_terms copy[COST_NDIRS][COST_NCOPIES][COST_NHOSTMEMS];
	struct cost_term eff_compute;	/* achieved / peak dense FLOP/s */
	struct cost_term eff_memory;	/* achieved / peak HBM bandwidth */
	struct cost_term eff_interconnect;	/* achieved / GPU link rate */
	struct cost_term allreduce_ns;	/* latency of one all-reduce */
	union {				/* the old name is the same term */
		struct cost_term cpu_step_ns;
		struct cost_term cpu_sched_step_ns;	/* scheduler, a step */
	};
	union {
		struct cost_term cpu_seq_ns;
		struct cost_term cpu_prep_seq_ns;	/* inputs, a sequence */
	};
	union {
		struct cost_term cpu_token_ns;
		struct cost_term cpu_prep_token_ns;	/* inputs, a token */
	};
	/* split terms (docs/cost-model.md §2); unset: see cost_model_init */
	struct cost_term eff_weights;	/* weight reads; unset: eff_memory */
	struct cost_term eff_kv_read;	/* paged KV; unset: eff_memory */
	struct cost_term eff_kv_read_gqa;	/* paged KV of grouped-query
						 * attention; unset:
						 * eff_kv_read */
	struct cost_term eff_experts;	/* routed experts' weight reads;
					 * unset: eff_weights */
	struct cost_term eff_attn_compute;	/* unset: eff_compute */
	struct cost_term allreduce_rank_ns;	/* latency a rank beyond 2 */
	struct cost_term cpu_sched_seq_ns;	/* scheduler, a sequence */
	struct cost_term cpu_sched_token_ns;	/* scheduler, a token */
	struct cost_term cpu_prep_step_ns;	/* inputs, a step */
	struct cost_term graph_piecewise_layer_ns;	/* launches outside the
							 * piecewise graphs,
							 * an attention layer */
	struct cost_term graph_eager_layer_ns;	/* launches without a graph,
						 * a layer */
	struct cost_term gpu_step_ns;	/* fixed GPU time, a forward pass */
	struct cost_term gpu_layer_ns;	/* fixed GPU time, a layer a pass */
	struct cost_term gpu_seq_layer_ns;	/* ... a sequence an attention
						 * layer */
	/* the API server (docs/cost-model.md §5.5): */
	struct cost_term frontend_request_ns;	/* per request, to the
						 * engine */
	struct cost_term frontend_tokenize_ns;	/* ... per prompt token */
	struct cost_term frontend_stream_ns;	/* per output token, engine
						 * to client */
};

/* Every term unset. */
void cost_calib_init(struct cost_calib *c);

/* ---- configuration ------------------------------------------------------ */

struct cost_config {
	uint32_t tp;			/* tensor parallel size; 0: 1 */
	uint32_t kv_dtype_bytes;	/* 0: the model's dtype */
	uint32_t ssm_dtype_bytes;	/* SSM state; 0: the model's dtype */
	uint32_t block_size;		/* tokens per KV block; 0: 16 */
	enum cost_layout layout;	/* the layout swaps default to */
	enum cost_copy copy;		/* how swaps copy */
	enum cost_hostmem hostmem;	/* the host side of swaps */
	bool frontend;			/* an API server is modelled (the
					 * vLLM policies): the frontend
					 * terms default to vLLM's; else
					 * to 0 */
	const struct cost_calib *calib;	/* NULL: all defaults */
	uint32_t graph_max;		/* CUDA graphs (vLLM V1's
					 * max_cudagraph_capture_size,
					 * cost_graph_max); 0: not modelled */
	/* issue 20 knobs (cost_knobs.c) */
	uint32_t pp;			/* pipeline stages; 0: 1 */
	double offload_bytes;		/* weights per rank in CPU memory,
					 * streamed in every step */
};

/* tp 1, dtypes from the model, block 16, FA split, per-chunk, pinned. */
void cost_config_init(struct cost_config *c);

/* ---- the model ---------------------------------------------------------- */

#define COST_MAX_GROUPS 8	/* distinct (mixer, window) layer kinds */

/*
 * Layers that cost the same: one mixer kind and window.  All figures are
 * per layer and per rank.
 */
struct cost_group {
	uint8_t mixer;		/* enum cat_mixer */
	const struct cat_mixer_ops *ops;	/* its row (mixer.h) */
	uint32_t window;	/* SLIDING: window, CHUNKED: chunk, else 0 */
	uint32_t nlayers;
	struct cat_mixer_cost fig;	/* the kind's figures (mixer.h) */
};

/*
 * A resolved model.  Caller storage; it owns nothing (no release).  The
 * fields are read by tests and by cost_describe; treat them as read-only.
 * Strings are borrowed from the catalog entries and the calibration.
 */
struct cost_model {
	const char *model_id, *gpu_id;
	uint32_t tp, kv_dtype_bytes, ssm_dtype_bytes, dtype_bytes;
	uint32_t weight_bytes, block_size;
	enum cost_layout layout;
	enum cost_copy copy;
	enum cost_hostmem hostmem;

	/* the GPU, per rank */
	double peak_flops;		/* dense FLOP/s of the compute dtype */
	const char *peak_flops_dtype, *peak_flops_src;
	double hbm_bw, link_bw, host_bw;	/* bytes/s */
	const char *hbm_bw_src, *link_bw_src, *host_bw_src;
	bool unified_memory;

	/* linear layers, per rank */
	double weight_bytes_fixed;	/* read every step: all but the
					 * routed experts, LM head included */
	double expert_bytes;		/* one routed expert, all MoE layers */
	double flops_token;		/* 2 * decoder active params / tp */
	double flops_seq;		/* LM head: 2 * vocab * hidden / tp */
	double act_bytes_token;		/* activations moved per token */
	uint32_t num_experts, experts_per_tok, moe_layers;

	/* attention and recurrent layers */
	struct cost_group group[COST_MAX_GROUPS];
	size_t ngroups;

	/* tensor parallel */
	uint32_t allreduces;		/* per step (blocks + embedding) */
	double allreduce_token_bytes;	/* hidden * dtype */

	/* swaps: one block, per rank */
	uint64_t block_bytes;		/* the layers one block id holds */
	uint32_t paged_layers, mla_layers;	/* layers with a KV page */
	uint32_t block_layers, block_mla;	/* of them, one block id's:
						 * all, or one group's
						 * (cost_model_groups) */

	/* CUDA graphs: the largest capture size (0: not modelled) */
	uint32_t graph_max;
	uint32_t layers;		/* decoder layers (launches) */

	/* resolved terms */
	struct cost_copy_terms copy_t[COST_NDIRS][COST_NCOPIES][COST_NHOSTMEMS];
	struct cost_term eff_compute, eff_memory, eff_interconnect;
	struct cost_term eff_weights, eff_kv_read, eff_attn_compute;
	struct cost_term eff_kv_read_gqa, eff_experts;
	double kv_eff;			/* the KV reads' own: eff_kv_read, or
					 * eff_kv_read_gqa for a GQA model */
	struct cost_term allreduce_ns, allreduce_rank_ns;
	union {
		struct cost_term cpu_step_ns;
		struct cost_term cpu_sched_step_ns;
	};
	union {
		struct cost_term cpu_seq_ns;
		struct cost_term cpu_prep_seq_ns;
	};
	union {
		struct cost_term cpu_token_ns;
		struct cost_term cpu_prep_token_ns;
	};
	struct cost_term cpu_sched_seq_ns, cpu_sched_token_ns;
	struct cost_term cpu_prep_step_ns;
	struct cost_term gpu_step_ns, gpu_layer_ns, gpu_seq_layer_ns;
	struct cost_term graph_piecewise_layer_ns, graph_eager_layer_ns;
	struct cost_term frontend_request_ns, frontend_tokenize_ns;
	struct cost_term frontend_stream_ns;

	/* issue 20 knobs (cost_knobs.c) */
	uint32_t pp;			/* pipeline stages (1) */
	double pp_send_token_bytes;	/* a token's activations a stage
					 * sends the next, per rank */
	double offload_bytes;		/* weights streamed from the host */
};

/*
 * Build a cost model.  KV_OK, or KV_EINVAL (why: the message) for a model
 * without a parameter count or layers, a GPU without HBM bandwidth or dense
 * FLOP/s, or a tensor-parallel size that does not divide the attention
 * heads; KV_ENOTSUP for more than COST_MAX_GROUPS layer kinds.  On failure
 * *cm is unspecified.  m and g are read, not kept (their id strings are
 * borrowed).
 */
kv_err cost_model_init(struct cost_model *cm, const struct cat_model *m,
		       const struct cat_gpu *g, const struct cost_config *cfg,
		       char *why, size_t whylen);

/*
 * The knobs' terms (cost_knobs.c): pipeline stages and CPU weight offload
 * from cfg, after the rest of cm is built; and their share of a step,
 * added to bd's gpu_ns.
 */
struct cost_breakdown;
kv_err cost_knobs_init(struct cost_model *cm, const struct cat_model *m,
		       const struct cost_config *cfg, char *why,
		       size_t whylen);
void cost_knobs_step(const struct cost_model *cm, struct cost_breakdown *bd);

/* ---- a step ------------------------------------------------------------- */

/*
 * One scheduled sequence: q tokens computed this step (a prefill chunk, or
 * 1 + lookahead for decode) after ctx tokens already in its KV cache.
 */
struct cost_batch {
	const struct cat_mixer_seq *seq;	/* sim/model/mixer.h */
	size_t nseq;
};

/*
 * How vLLM V1 runs a step's forward pass (CUDAGraphMode
 * FULL_AND_PIECEWISE, its default): a decode-only batch within the largest
 * capture size replays one full graph; a batch with a prefill within it
 * replays piecewise graphs with attention launched between them; a larger
 * batch launches every kernel.  COST_GRAPH_OFF: not modelled.
 */
enum cost_graph {
	COST_GRAPH_OFF = 0, COST_GRAPH_FULL, COST_GRAPH_PIECEWISE,
	COST_GRAPH_EAGER
};

/*
 * vLLM's default max_cudagraph_capture_size: min(2 max_num_seqs, 512),
 * and no more than max_num_batched_tokens (0: no limit); then the largest
 * capture size of the list [1, 2, 4, 8, 16, ..., 248, 256, 272, ...] (steps
 * of 8 to 256, of 16 above) not above it.
 */
uint32_t cost_graph_max(uint32_t max_num_seqs, uint64_t max_num_batched_tokens);

/* The capture size a batch of n tokens is padded to (n <= max); n if n is
 * above max or max is 0. */
uint64_t cost_graph_pad(uint64_t n, uint32_t max);

/* What a step is made of (cost_step_explain).  Bytes and FLOPs per rank. */
struct cost_breakdown {
	uint64_t tokens, seqs;
	double experts;			/* routed experts touched per layer */
	double lin_flops, lin_bytes;
	double attn_flops, attn_bytes;
	double rec_flops, rec_bytes;
	double lin_compute_ns, lin_memory_ns;
	double attn_compute_ns, attn_memory_ns;
	double rec_compute_ns, rec_memory_ns;
	double allreduce_ns, cpu_ns, gpu_ns;
	double fixed_ns;		/* gpu_step_ns + layers · gpu_layer_ns
					 * + seqs · attention layers ·
					 * gpu_seq_layer_ns (in gpu_ns) */
	double cpu_sched_ns, cpu_prep_ns;	/* their sum is cpu_ns */
	uint64_t graph_tokens;		/* tokens the GEMMs run: padded to a
					 * capture size under a CUDA graph */
	enum cost_graph graph;		/* how the step runs */
	double launch_ns;		/* the launch floor of gpu_ns */
	int64_t total_ns;		/* = cost_step_ns */
	double pp_send_ns;		/* activations between stages */
	double offload_ns;		/* offloaded weights over the host
					 * link (both in gpu_ns) */
};

/* The terms cost_knobs_step puts in bd, as numbers the GPU time adds in
 * this order: -0.0 where a knob is off (x + -0.0 is x for every x, -0.0
 * and NaN included), so a loop that adds them tests nothing. */
static inline void
cost_knobs_terms(const struct cost_model *cm, const struct cost_breakdown *bd,
		 double *pp, double *off)
{
	*pp = cm->pp > 1 ? bd->pp_send_ns : -0.0;
	*off = cm->offload_bytes > 0 && cm->host_bw > 0.0 ? bd->offload_ns :
							     -0.0;
}

/*
 * Time of one step, integer ns; 0 for a batch without tokens (sequences
 * with q = 0 are skipped).  Non-decreasing in every q and ctx and in the
 * number of sequences.  O(nseq * ngroups).
 */
/*
 * Several KV cache groups (vLLM's hybrid allocator): a block id holds one
 * page of page_bytes in each of layers_per_group layers -- the layer
 * slots the groups share (vLLM's KVCacheTensors) -- not a page of every
 * layer.  Swaps, copies and the CPU pool then count page_bytes *
 * layers_per_group a block, in 2 chunks a layer (fa-split; one fused).
 * Nothing changes for layers_per_group 0 (one group).
 */
void cost_model_groups(struct cost_model *cm, uint32_t layers_per_group,
		       uint64_t page_bytes);

int64_t cost_step_ns(const struct cost_model *cm, const struct cost_batch *b);

/*
 * cost_step_explain for a batch of n decodes (one token each) whose
 * contexts sum to ctx_sum, then the sequences s[0..ns) (a step that admits
 * prompts): the decodes' work from their sums as cost_step_decode's, the
 * others' as the batch's, so the time is the batch's to the bit.  -1, *out
 * untouched, where cost_step_decode gives -1 (or ns > 0 and s == NULL).
 */
int64_t cost_step_decodes_and(const struct cost_model *cm, uint64_t n,
			      uint64_t ctx_sum, const struct cat_mixer_seq *s,
			      size_t ns, struct cost_breakdown *out);

/*
 * cost_step_explain for a batch of n decodes (one token each) whose
 * contexts sum to ctx_sum, without the batch: every attention group's
 * work is a sum over the sequences that is affine in the context (full
 * attention: ctx + 1 pairs and ctx + 2 KV tokens a decode), so the sums
 * are the batch's exactly and so is the time.  -1, *out untouched, for a
 * model with another attention (sliding or chunked windows, MLA), where
 * the batch is needed.
 */
int64_t cost_step_decode(const struct cost_model *cm, uint64_t n,
			 uint64_t ctx_sum, struct cost_breakdown *out);

/*
 * cost_step_decode, the same to the bit, with the terms that depend on n
 * alone kept in *m between calls: a run of steps of one batch size pays
 * for attention's sums only.  Zero-initialise *m; it follows n and which
 * model cm is, not changes made to *cm, so zero it again after those.
 * out may be NULL: only the time, then, and the CPU term in m->bd.cpu_ns.
 */
struct cost_decode_memo {
	const struct cost_model *cm;	/* NULL: empty */
	uint64_t n;
	struct cost_breakdown bd;	/* n's, without attention's work */
	/* one group of full attention: the factors of its terms and the
	 * other terms of the GPU time, for a call without a breakdown */
	bool one;
	double nl, pf, z1, z2, nltb, dc, dm, lin, rec;
	double kpp, koff;	/* cost_knobs_terms */
};

int64_t cost_step_decode_memo(const struct cost_model *cm,
			      struct cost_decode_memo *m, uint64_t n,
			      uint64_t ctx_sum, struct cost_breakdown *out);

/*
 * The time of m's n decodes whose contexts sum to ctx_sum < 2^61, for one
 * group of full attention (m->one), from the memo alone: the breakdown's
 * operations in its order, the knobs' terms added as cost_knobs_terms
 * gives them: loops that ask it once a step test nothing.
 */
static inline int64_t
cost_decode_memo_ns(const struct cost_decode_memo *m, uint64_t n,
		    uint64_t ctx_sum)
{
	double af, ab, a, gpu, x;

	/* (as signed: below 2^62, the same numbers, one instruction) */
	af = 0.0 + m->nl * ((double)(int64_t)(ctx_sum + n) * m->pf + m->z1 +
			    m->z2);
	ab = 0.0 + m->nltb * (double)(int64_t)(ctx_sum + 2 * n);
	af = af / m->dc;
	ab = ab / m->dm;
	a = af > ab ? af : ab;
	gpu = m->lin + a + m->rec + m->bd.allreduce_ns + m->bd.fixed_ns;
	gpu = gpu > m->bd.launch_ns ? gpu : m->bd.launch_ns;
	gpu = gpu + m->kpp;		/* cost_knobs_step's */
	gpu = gpu + m->koff;
	x = m->bd.cpu_ns + gpu;		/* to_ns */
	if (!(x > 0.0))
		return 0;
	return x >= 9.2e18 ? INT64_MAX : (int64_t)(x + 0.5);
}

/*
 * cost_step_decode_memo(cm, m, n, ctx_sum, NULL) where m already holds
 * cm's n for one group of full attention (m->one): the time from the
 * memo's factors (cost_decode_memo_ns); inline, for loops that ask it
 * once a step, and the function's own way.  -1 otherwise: ask the
 * function.
 */
static inline int64_t
cost_decode_memo_quick(const struct cost_model *cm,
		       const struct cost_decode_memo *m, uint64_t n,
		       uint64_t ctx_sum)
{
	if (cm == NULL || m->cm != cm || m->n != n || !m->one ||
	    ctx_sum >= (1ull << 61))
		return -1;
	return cost_decode_memo_ns(m, n, ctx_sum);
}

/* cost_step_ns, with its parts in *out (may be NULL). */
int64_t cost_step_explain(const struct cost_model *cm,
			  const struct cost_batch *b,
			  struct cost_breakdown *out);

/*
 * GPU time of recomputing n tokens of one sequence from scratch: the
 * prefill step {q = n, ctx = 0} without the CPU term (the prefill work a
 * swap saves).  0 for n = 0.
 */
int64_t cost_recompute_ns(const struct cost_model *cm, uint64_t n);

/* ---- swaps -------------------------------------------------------------- */

/*
 * The copy formula: alpha * calls + beta * chunks + bytes * ns_per_byte,
 * with the (dir, copy, hostmem) terms of cm.  0 when nothing moves.
 */
int64_t cost_copy_ns(const struct cost_model *cm, enum cost_dir dir,
		     enum cost_copy copy, enum cost_hostmem hostmem,
		     uint64_t calls, uint64_t chunks, uint64_t bytes);

/* Contiguous chunks in one block, and calls per swap, for a layout. */
uint64_t cost_layout_chunks(const struct cost_model *cm,
			    enum cost_layout layout);
uint64_t cost_swap_calls(const struct cost_model *cm, enum cost_layout layout,
			 enum cost_copy copy);

/*
 * Moving nblocks KV blocks (the layers one block id holds: every paged
 * layer, or one group's with several groups, cost_model_groups) in
 * direction dir with cm's copy strategy and host memory:
 * cost_copy_ns(calls, nblocks * chunks, nblocks * block_bytes).  0 for
 * nblocks = 0 and on unified memory (nothing moves: one pool); -1 when the
 * GPU has no host link.
 */
int64_t cost_swap_ns(const struct cost_model *cm, enum cost_dir dir,
		     uint64_t nblocks, enum cost_layout layout);

/* ---- the API server (frontend) ---------------------------------------- */

/*
 * vLLM's OpenAI API server is one asyncio process: request handling,
 * tokenisation, and the per-token output work (detokenise, build and send
 * the stream chunk) of every stream run one at a time on its event loop.
 * It is modelled as one FIFO server per replica: a job submitted at t
 * with work w starts at max(t, the end of the job before) and is done w
 * later.  Jobs must be submitted in non-decreasing t (the event loop's
 * order); the done times are then non-decreasing too.  With all work 0 a
 * job is done when it is submitted.
 */
struct cost_fifo {
	int64_t free_at;	/* the end of the last job */
	uint64_t jobs;
	int64_t busy_ns;	/* work served */
};

/* Idle, no job served. */
void cost_fifo_init(struct cost_fifo *q);

/* Submit a job of work_ns (>= 0) at t; the time it is done. */
int64_t cost_fifo_serve(struct cost_fifo *q, int64_t t, int64_t work_ns);

/* Work of a request on its way in: request + tokenize * prompt tokens. */
int64_t cost_frontend_in_ns(const struct cost_model *cm,
			    uint64_t prompt_tokens);

/* Work of sending one output token to its client: stream. */
int64_t cost_frontend_out_ns(const struct cost_model *cm);

/* ---- names and description ---------------------------------------------- */

const char *cost_layout_name(enum cost_layout l);	/* "fa-split" */
const char *cost_copy_name(enum cost_copy c);		/* "per-chunk" */
const char *cost_hostmem_name(enum cost_hostmem h);	/* "pinned" */
const char *cost_dir_name(enum cost_dir d);		/* "d2h" */

/* Name -> enum; false if unknown. */
bool cost_layout_parse(const char *s, enum cost_layout *out);
bool cost_copy_parse(const char *s, enum cost_copy *out);
bool cost_hostmem_parse(const char *s, enum cost_hostmem *out);

/* Every term of cm with its value and source, one per line. */
void cost_describe(const struct cost_model *cm, FILE *f);

#endif
