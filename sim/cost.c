/*
 * cost.c -- the cost model (cost.h; formulas and sources in
 * docs/cost-model.md).
 *
 * Main invariant: a step's time is a function of the multiset of its
 * (q, ctx) pairs only.  The per-sequence work is summed as integers first
 * (tokens, query-key pairs, KV tokens touched), then turned into FLOPs and
 * bytes once, so the order of the batch cannot change the result and the
 * cost of a step is O(nseq * ngroups) integer operations plus O(ngroups)
 * floating-point ones.
 *
 * What differs between token-mixer kinds (KV bytes a token, FLOPs a
 * query-key pair, the recurrent state and its scan, which pairs a window
 * sees) is the kind's row in sim/model/mixer.c; this file sums over
 * groups of layers of one kind.
 *
 * No libm: the expert-coverage power is computed by squaring and the final
 * rounding by hand, so nothing here depends on the C library's math.
 */
#include "config.h"

#include "sim/cost.h"

#include "core/kvsize.h"

#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

/* ---- defaults and their sources ----------------------------------------- */

/*
 * Each default is a number and the sentence that justifies it; the same
 * sentences are in docs/cost-model.md §5 with the links.
 */
#define EFF_COMPUTE 0.65
static const char SRC_EFF_COMPUTE[] =
	"BLIS (inference-sim) hardware_config.json mfuPrefill 0.65 for H100 "
	"and A100, fitted to vLLM; ceiling: bf16 GEMM 769-798 of 989 TFLOP/s "
	"measured on the H200 (gpu-design.md §2)";

#define EFF_MEMORY 0.72
static const char SRC_EFF_MEMORY[] =
	"BLIS (inference-sim) hardware_config.json BwEffConstant 0.72 for "
	"H100 and A100, fitted to vLLM; a bare D2D copy reaches 0.9 on the "
	"H200 (gpu-design.md §2)";

#define EFF_INTERCONNECT 0.82
static const char SRC_EFF_INTERCONNECT[] =
	"NCCL ring reaches ~370 of the 450 GB/s NVLink4 line rate per "
	"direction, ~20% protocol overhead (NCCL maintainer, "
	"NVIDIA/nccl-tests#212)";

#define ALLREDUCE_NS 20000.0
static const char SRC_ALLREDUCE[] =
	"20 us per all-reduce: BLIS (inference-sim) hardware_config.json "
	"allReduceLatency for H100 and A100";

#define CPU_STEP_NS 500000.0
static const char SRC_CPU_STEP[] =
	"500 us: BLIS (inference-sim) hardware_config.json TOverheadMicros; "
	"vLLM's scheduler.schedule() takes 0.5-2 ms a step "
	"(inference-sim#482: without it TTFT was under-predicted by 17-56%)";

#define CPU_SEQ_NS 10000.0
static const char SRC_CPU_SEQ[] =
	"10 us per sequence: input preparation takes 1-5 ms a step "
	"(inference-sim#482) for steps of 100-500 sequences, and grows with "
	"sequences, not tokens (WukLab, 'Can Scheduling Overhead Dominate LLM "
	"Inference Performance?', 2024)";

#define CPU_TOKEN_NS 0.0
static const char SRC_CPU_TOKEN[] =
	"0: the overhead follows sequences, not tokens (WukLab 2024); "
	"calibration may set one";

#define ALLREDUCE_RANK_NS 0.0
static const char SRC_ALLREDUCE_RANK[] =
	"0: BLIS's allReduceLatency is one constant at every degree; NCCL's "
	"own tuning model (src/graph/tuning.cc, NVIDIA/nccl#1334) charges "
	"0.6 us a ring step on NVLink (LL), 2(p-1) steps: 1.2 us a rank, "
	"for a calibration to set";

#define CPU_SCHED_SEQ_NS 0.0
#define CPU_SCHED_TOKEN_NS 0.0
#define CPU_PREP_STEP_NS 0.0
static const char SRC_CPU_SCHED_SEQ[] =
	"0: the scheduler's per-step cost is in cpu_sched_step_ns "
	"(inference-sim#482 measures it a step); calibration may set one";
static const char SRC_CPU_SCHED_TOKEN[] =
	"0: scheduling follows requests, not tokens (WukLab 2024)";
static const char SRC_CPU_PREP_STEP[] =
	"0: input preparation follows sequences (cpu_prep_seq_ns; WukLab "
	"2024); calibration may set a fixed part";

/*
 * CUDA-graph launch floors.  A kernel launch costs 4-6 us of CPU
 * (gpu-design.md §2, S16); a Llama decoder layer is about 10 kernels under
 * torch.compile (2 norms, QKV, rotary, cache write, attention, O, gate-up,
 * SiLU-and-mul, down); a piecewise step launches the attention op (2
 * kernels) and replays one graph piece a layer.
 */
#define GRAPH_PIECEWISE_LAYER_NS 15000.0
#define GRAPH_EAGER_LAYER_NS 50000.0
static const char SRC_GRAPH_PIECEWISE[] =
	"15 us an attention layer: 3 launches (cache write, attention, the "
	"next graph piece) at ~5 us (gpu-design.md §2, S16); fit";
static const char SRC_GRAPH_EAGER[] =
	"50 us a layer: ~10 kernels a Llama layer under torch.compile at ~5 "
	"us a launch (gpu-design.md §2, S16); fit";

/*
 * Fixed GPU time of a forward pass (docs/cost-model.md §2): a step's, a
 * decoder layer's and a sequence's in each attention layer, what the
 * kernels take beyond their FLOPs and bytes (the sampler; norms, rotary,
 * the KV-cache write, each kernel's own floor; a sequence's block table
 * and its share of the split-KV reduction).  All three 0 by default: the
 * roofline alone; a calibration fitted to serving runs sets them.
 */
#define GPU_FIXED_NS 0.0
static const char SRC_GPU_FIXED[] =
	"0: the roofline alone; kvsim calibrate serving fits one";

/*
 * The API server (docs/cost-model.md §5.5): defaults for the vLLM
 * policies only (cost_config.frontend); 0 for the others.
 */
#define FRONTEND_REQUEST_NS 1000000.0
static const char SRC_FE_REQUEST[] =
	"1 ms per request: estimate of the OpenAI server's request handling "
	"(HTTP and JSON parsing, validation, hand-off to the engine process "
	"over ZMQ), unmeasured; fit it with kvsim calibrate";

#define FRONTEND_TOKENIZE_NS 1100.0
static const char SRC_FE_TOKENIZE[] =
	"1.1 us per prompt token: HF tokenizers take 1.1 s for a 4 MB "
	"document of ~1M tokens (charlesxu.io/parallel-tokenizer); its "
	"Python binding encodes 2.5-2.7 MiB/s a thread, ~1.4 us a token "
	"(IREE tokenizer benchmark, 2026)";

#define FRONTEND_STREAM_NS 25000.0
static const char SRC_FE_STREAM[] =
	"25 us per output token (detokenise, build and send the stream "
	"chunk, serialised on the server's event loop): below the 78 us "
	"bound of one API server process streaming 12,850 tokens/s to 400 "
	"clients (vLLM PR #12287)";

static const char SRC_FE_NONE[] =
	"0: no API server is modelled for this policy";

/* PCIe efficiency of the DMA engines: 50 GB/s of the 64 GB/s a Gen5 x16
 * link carries per direction (H100, S2), 25 of 32 on Gen4 (A100, S14). */
#define DMA_EFF 0.78125
/* the SM gather kernel: 45 GB/s of 64 (gpu-design.md §3 defaults, S2) */
#define GATHER_EFF 0.703125

#define DMA_ALPHA_NS 10000.0
#define DMA_BETA_NS 5000.0
#define GATHER_ALPHA_NS 6000.0
#define GATHER_BETA_NS 50.0

static const char SRC_DMA_ALPHA[] =
	"10 us per call: gpu-design.md §3 DMA defaults (H100/H200, Gen5)";
static const char SRC_DMA_BETA[] =
	"5 us per chunk: cudaMemcpyAsync submission 5-7 us a call for small "
	"chunks (gpu-design.md §2, S15)";
static const char SRC_DMA_BW[] =
	"host link x 0.78: ~50 GB/s one way on PCIe Gen5 (64 GB/s), vLLM "
	"offloading blog (S2); ~25 GB/s on A100 Gen4 (S14)";
static const char SRC_BATCH_BETA[] =
	"5 us per chunk: unknown until measured, taken = DMA "
	"(gpu-design.md §3)";
static const char SRC_GATHER_ALPHA[] =
	"6 us per call: one kernel launch, 4-6 us (gpu-design.md §2, S16)";
static const char SRC_GATHER_BETA[] =
	"0.05 us per chunk: gather kernel (gpu-design.md §3 defaults)";
static const char SRC_GATHER_BW[] =
	"host link x 0.70: gather kernel ~45 GB/s on Gen5 (gpu-design.md §3, "
	"S2)";
static const char SRC_STAGED_ALPHA[] =
	"16 us: one gather kernel (6 us) plus one DMA call (10 us) "
	"(gpu-design.md §3)";
static const char SRC_PAGEABLE[] =
	"pageable host memory: half the pinned bandwidth, staged by the "
	"driver (gpu-design.md §2, S17-S19)";

static const char SRC_NONE[] = "no host link in the GPU catalog entry";

/* ---- small helpers ------------------------------------------------------ */

/* x^e by squaring (no libm). */
static double
ipow(double x, uint64_t e)
{
	double r = 1.0;

	while (e > 0) {
		if (e & 1)
			r *= x;
		x *= x;
		e >>= 1;
	}
	return r;
}

/* Round a non-negative duration to int64 ns (half up), saturating. */
static int64_t
to_ns(double x)
{
	if (!(x > 0.0))
		return 0;
	if (x >= 9.2e18)
		return INT64_MAX;
	return (int64_t)(x + 0.5);
}

static double
dmax(double a, double b)
{
	return a > b ? a : b;
}

/* ---- names -------------------------------------------------------------- */

static const char *const layout_names[COST_NLAYOUTS] = {
	"fa-split", "fi-fused", "ds-interleaved", "cross-layer",
};
static const char *const copy_names[COST_NCOPIES] = {
	"per-chunk", "batch", "gather", "staged",
};
static const char *const hostmem_names[COST_NHOSTMEMS] = {
	"pinned", "pageable",
};
static const char *const dir_names[COST_NDIRS] = { "d2h", "h2d" };

const char *
cost_layout_name(enum cost_layout l)
{
	return (unsigned)l < COST_NLAYOUTS ? layout_names[l] : "?";
}

const char *
cost_copy_name(enum cost_copy c)
{
	return (unsigned)c < COST_NCOPIES ? copy_names[c] : "?";
}

const char *
cost_hostmem_name(enum cost_hostmem h)
{
	return (unsigned)h < COST_NHOSTMEMS ? hostmem_names[h] : "?";
}

const char *
cost_dir_name(enum cost_dir d)
{
	return (unsigned)d < COST_NDIRS ? dir_names[d] : "?";
}

static bool
parse_name(const char *s, const char *const *names, int n, int *out)
{
	if (s == NULL)
		return false;
	for (int i = 0; i < n; i++)
		if (strcasecmp(s, names[i]) == 0) {
			*out = i;
			return true;
		}
	return false;
}

bool
cost_layout_parse(const char *s, enum cost_layout *out)
{
	int i;

	if (!parse_name(s, layout_names, COST_NLAYOUTS, &i))
		return false;
	*out = (enum cost_layout)i;
	return true;
}

bool
cost_copy_parse(const char *s, enum cost_copy *out)
{
	int i;

	if (!parse_name(s, copy_names, COST_NCOPIES, &i))
		return false;
	*out = (enum cost_copy)i;
	return true;
}

bool
cost_hostmem_parse(const char *s, enum cost_hostmem *out)
{
	int i;

	if (!parse_name(s, hostmem_names, COST_NHOSTMEMS, &i))
		return false;
	*out = (enum cost_hostmem)i;
	return true;
}

/* ---- CUDA graphs -------------------------------------------------------- */

/*
 * vLLM's capture sizes (vllm/config/compilation.py, v0.15):
 * [1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16).  The next one at
 * or above n, and the largest at or below n.
 */
static uint64_t
graph_ceil(uint64_t n)
{
	if (n <= 2)
		return n;
	if (n <= 4)
		return 4;
	if (n <= 256)
		return (n + 7) / 8 * 8;
	return (n + 15) / 16 * 16;
}

static uint64_t
graph_floor(uint64_t n)
{
	if (n < 4)
		return n < 2 ? n : 2;
	if (n < 8)
		return 4;
	if (n < 256)
		return n / 8 * 8;
	return n / 16 * 16;
}

uint32_t
cost_graph_max(uint32_t max_num_seqs, uint64_t max_num_batched_tokens)
{
	uint64_t m = (uint64_t)max_num_seqs * 2;

	if (m > 512)
		m = 512;
	if (max_num_batched_tokens > 0 && m > max_num_batched_tokens)
		m = max_num_batched_tokens;
	return (uint32_t)graph_floor(m);
}

uint64_t
cost_graph_pad(uint64_t n, uint32_t max)
{
	if (max == 0 || n > max)
		return n;
	return graph_ceil(n);
}

/* ---- configuration ------------------------------------------------------ */

void
cost_calib_init(struct cost_calib *c)
{
	memset(c, 0, sizeof(*c));
}

void
cost_config_init(struct cost_config *c)
{
	memset(c, 0, sizeof(*c));
	c->tp = 1;
	c->block_size = 16;
	c->layout = COST_LAYOUT_FA_SPLIT;
	c->copy = COST_COPY_PER_CHUNK;
	c->hostmem = COST_HOST_PINNED;
	c->calib = NULL;
}

/* dst = the override if set, else the default. */
static void
pick(struct cost_term *dst, const struct cost_term *over, double v,
     const char *src)
{
	if (over != NULL && over->src != NULL) {
		*dst = *over;
	} else {
		dst->v = v;
		dst->src = src;
	}
}

/* The copy defaults of gpu-design.md §3 for one (copy, hostmem). */
static void
copy_defaults(struct cost_copy_terms *t, enum cost_copy copy,
	      enum cost_hostmem hm, double host_bw)
{
	double eff = copy == COST_COPY_GATHER ? GATHER_EFF : DMA_EFF;
	double bw = host_bw * eff;

	switch (copy) {
	case COST_COPY_PER_CHUNK:
	case COST_COPY_BATCH:
		t->alpha_ns = (struct cost_term){ DMA_ALPHA_NS, SRC_DMA_ALPHA };
		t->beta_ns = (struct cost_term){
			DMA_BETA_NS, copy == COST_COPY_BATCH ? SRC_BATCH_BETA :
				     SRC_DMA_BETA };
		break;
	case COST_COPY_GATHER:
		t->alpha_ns = (struct cost_term){ GATHER_ALPHA_NS,
						  SRC_GATHER_ALPHA };
		t->beta_ns = (struct cost_term){ GATHER_BETA_NS,
						 SRC_GATHER_BETA };
		break;
	default:
		t->alpha_ns = (struct cost_term){
			GATHER_ALPHA_NS + DMA_ALPHA_NS, SRC_STAGED_ALPHA };
		t->beta_ns = (struct cost_term){ GATHER_BETA_NS,
						 SRC_GATHER_BETA };
		break;
	}
	if (!(bw > 0.0)) {
		t->ns_per_byte = (struct cost_term){ 0.0, SRC_NONE };
		return;
	}
	if (hm == COST_HOST_PAGEABLE)
		bw /= 2.0;
	t->ns_per_byte = (struct cost_term){
		1e9 / bw, hm == COST_HOST_PAGEABLE ? SRC_PAGEABLE :
			  copy == COST_COPY_GATHER ? SRC_GATHER_BW :
						     SRC_DMA_BW };
}

static bool
term_ok(const struct cost_term *t, bool positive)
{
	return positive ? t->v > 0.0 && t->v <= 1e18 :
			  t->v >= 0.0 && t->v <= 1e18;
}

/* ---- building the model ------------------------------------------------- */

/* The dense FLOP/s the model's matmuls run at, and its dtype name. */
static bool
pick_flops(struct cost_model *cm, const struct cat_model *m,
	   const struct cat_gpu *g)
{
	static const char *const name[CAT_NDTYPES] = {
		"fp32", "bf16", "fp16", "fp8",
	};
	enum cat_dtype want = CAT_BF16;
	enum cat_dtype order[3];
	int gf;

	if (strcmp(m->dtype, "float16") == 0 || strcmp(m->dtype, "fp16") == 0)
		want = CAT_FP16;
	else if (strcmp(m->dtype, "float32") == 0 ||
		 strcmp(m->dtype, "fp32") == 0)
		want = CAT_FP32;
	if (m->weight_bytes == 1)	/* fp8 checkpoint: fp8 GEMMs */
		want = CAT_FP8;
	order[0] = want;
	order[1] = CAT_BF16;
	order[2] = CAT_FP16;
	for (int i = 0; i < 3; i++) {
		enum cat_dtype d = order[i];

		if (g->flops[d] > 0.0) {
			cm->peak_flops = g->flops[d];
			cm->peak_flops_dtype = name[d];
			gf = d == CAT_FP32 ? CAT_G_FLOPS_FP32 :
			     d == CAT_BF16 ? CAT_G_FLOPS_BF16 :
			     d == CAT_FP16 ? CAT_G_FLOPS_FP16 :
					     CAT_G_FLOPS_FP8;
			cm->peak_flops_src = g->src[gf];
			return true;
		}
	}
	return false;
}

/* Activation elements moved per token by layer l: replicated on every
 * rank (rep) and sharded by tensor parallelism (shard). */
static void
layer_activations(const struct cat_model *m, const struct cat_layer *l,
		  double *rep, double *shard)
{
	const double h = m->hidden_size;
	double up = m->mlp_gated ? 6.0 : 4.0;

	cat_layer_mixer(l)->activations(m, rep, shard);
	switch ((enum cat_ffn)l->ffn) {
	case CAT_FFN_NONE:
		break;
	case CAT_FFN_DENSE:
		*rep += 5 * h;
		*shard += up * m->intermediate_size;
		break;
	case CAT_FFN_MOE:
		*rep += 5 * h + m->num_experts +
			2.0 * m->experts_per_tok * h;
		*shard += up * m->experts_per_tok * m->moe_intermediate_size +
			  up * m->shared_intermediate_size;
		break;
	}
}

static struct cost_group *
group_for(struct cost_model *cm, uint8_t mixer, uint32_t window)
{
	for (size_t i = 0; i < cm->ngroups; i++)
		if (cm->group[i].mixer == mixer &&
		    cm->group[i].window == window)
			return &cm->group[i];
	if (cm->ngroups == COST_MAX_GROUPS)
		return NULL;
	cm->group[cm->ngroups] = (struct cost_group){
		.mixer = mixer, .window = window,
		.ops = cat_mixer_ops((enum cat_mixer)mixer),
	};
	return &cm->group[cm->ngroups++];
}

/* The run's settings: dtypes, block size, how swaps copy. */
static kv_err
init_settings(struct cost_model *cm, const struct cat_model *m,
	      const struct cat_gpu *g, const struct cost_config *cfg,
	      char *why, size_t whylen)
{
	memset(cm, 0, sizeof(*cm));
	cm->model_id = m->id;
	cm->gpu_id = g->id;
	cm->tp = cfg->tp ? cfg->tp : 1;
	cm->dtype_bytes = m->dtype_bytes ? m->dtype_bytes : 2;
	cm->weight_bytes = m->weight_bytes ? m->weight_bytes : cm->dtype_bytes;
	cm->kv_dtype_bytes = cfg->kv_dtype_bytes ? cfg->kv_dtype_bytes :
						   cm->dtype_bytes;
	cm->ssm_dtype_bytes = cfg->ssm_dtype_bytes ? cfg->ssm_dtype_bytes :
						     cm->dtype_bytes;
	cm->block_size = cfg->block_size ? cfg->block_size : 16;
	if ((unsigned)cfg->layout >= COST_NLAYOUTS ||
	    (unsigned)cfg->copy >= COST_NCOPIES ||
	    (unsigned)cfg->hostmem >= COST_NHOSTMEMS)
		return cat_fail(why, whylen, KV_EINVAL,
				"bad KV layout, copy strategy or host memory");
	cm->layout = cfg->layout;
	cm->copy = cfg->copy;
	cm->hostmem = cfg->hostmem;
	cm->graph_max = cfg->graph_max > 0 ?
		(uint32_t)graph_floor(cfg->graph_max) : 0;
	cm->layers = m->num_layers;

	if (m->num_layers == 0 || m->layer == NULL || m->hidden_size == 0)
		return cat_fail(why, whylen, KV_EINVAL,
				"model %s has no layers or hidden size",
				m->id ? m->id : "?");
	if (m->num_heads > 0 && m->num_heads % cm->tp != 0)
		return cat_fail(why, whylen, KV_EINVAL,
				"Total number of attention heads (%u) must be "
				"divisible by tensor parallel size (%u).",
				m->num_heads, cm->tp);
	return KV_OK;
}

/* The GPU: compute, memory and the links, with their sources. */
static kv_err
init_gpu(struct cost_model *cm, const struct cat_model *m,
	 const struct cat_gpu *g, char *why, size_t whylen)
{
	if (!(g->hbm_bw > 0.0))
		return cat_fail(why, whylen, KV_EINVAL,
				"GPU %s has no memory bandwidth",
				g->id ? g->id : "?");
	if (!pick_flops(cm, m, g))
		return cat_fail(why, whylen, KV_EINVAL,
				"GPU %s has no dense FLOP/s for %s",
				g->id ? g->id : "?", m->dtype);
	cm->hbm_bw = g->hbm_bw;
	cm->hbm_bw_src = g->src[CAT_G_HBM_BW];
	cm->host_bw = g->host_bw;
	cm->host_bw_src = g->src[CAT_G_HOST];
	cm->unified_memory = g->unified_memory;
	if (g->interconnect_bw > 0.0) {
		cm->link_bw = g->interconnect_bw;
		cm->link_bw_src = g->src[CAT_G_INTERCONNECT];
	} else {
		/* no NVLink: peers talk over PCIe */
		cm->link_bw = g->host_bw;
		cm->link_bw_src = g->src[CAT_G_HOST];
	}
	if (cm->tp > 1 && !(cm->link_bw > 0.0))
		return cat_fail(why, whylen, KV_EINVAL,
				"GPU %s has no GPU-to-GPU or host link for "
				"tensor parallel size %u", g->id ? g->id : "?",
				cm->tp);
	return KV_OK;
}

/* Linear layers: decoder-layer active parameters, routed experts, LM head
 * (the input embedding is a gather, not a read). */
static kv_err
init_linear(struct cost_model *cm, const struct cat_model *m, char *why,
	    size_t whylen)
{
	uint64_t h, emb, head_emb, dec, per_expert, routed;
	uint32_t up;

	h = m->hidden_size;
	emb = (uint64_t)m->vocab_size * h;
	head_emb = m->tie_word_embeddings ? emb : 2 * emb;
	if (m->active_params <= head_emb + h)
		return cat_fail(why, whylen, KV_EINVAL,
				"model %s has no (or too small a) parameter "
				"count", m->id ? m->id : "?");
	dec = m->active_params - head_emb - h;
	up = m->mlp_gated ? 3 : 2;
	per_expert = (uint64_t)up * h * m->moe_intermediate_size;
	for (uint32_t i = 0; i < m->num_layers; i++)
		cm->moe_layers += m->layer[i].ffn == CAT_FFN_MOE;
	if (cm->moe_layers > 0 && (m->num_experts == 0 ||
				   m->experts_per_tok == 0 ||
				   m->experts_per_tok > m->num_experts))
		return cat_fail(why, whylen, KV_EINVAL,
				"MoE layers need num_experts >= "
				"experts_per_tok > 0");
	routed = (uint64_t)cm->moe_layers * m->experts_per_tok * per_expert;
	if (routed > dec)
		return cat_fail(why, whylen, KV_EINVAL,
				"model %s: active parameters (%llu) smaller "
				"than its routed experts", m->id ? m->id : "?",
				(unsigned long long)m->active_params);
	cm->num_experts = m->num_experts;
	cm->experts_per_tok = m->experts_per_tok;
	cm->weight_bytes_fixed = (double)(dec - routed + emb) *
				 cm->weight_bytes / cm->tp;
	cm->expert_bytes = (double)cm->moe_layers * per_expert *
			   cm->weight_bytes / cm->tp;
	cm->flops_token = 2.0 * (double)dec / cm->tp;
	cm->flops_seq = 2.0 * (double)emb / cm->tp;
	return KV_OK;
}

/* Per layer: activations, groups and their figures, all-reduces, KV
 * pages. */
static kv_err
init_layers(struct cost_model *cm, const struct cat_model *m, char *why,
	    size_t whylen)
{
	const struct cat_mixer_dims dims = {
		.tp = cm->tp, .dtype_bytes = cm->dtype_bytes,
		.kv_dtype_bytes = cm->kv_dtype_bytes,
		.ssm_dtype_bytes = cm->ssm_dtype_bytes,
	};
	const uint64_t h = m->hidden_size;
	double rep = 0, shard = 0;
	kv_err rc;

	for (uint32_t i = 0; i < m->num_layers; i++) {
		const struct cat_layer *l = &m->layer[i];
		const struct cat_mixer_ops *ops = cat_layer_mixer(l);
		uint32_t w = ops->windowed ? l->window : 0;
		struct cost_group *gr;

		layer_activations(m, l, &rep, &shard);
		cm->allreduces += (ops->cls != CAT_MIXC_NONE) +
				  (l->ffn != CAT_FFN_NONE);
		if (ops->cls == CAT_MIXC_NONE)
			continue;
		if ((gr = group_for(cm, l->mixer, w)) == NULL)
			return cat_fail(why, whylen, KV_ENOTSUP,
					"model %s has more than %d kinds of "
					"layer", m->id ? m->id : "?",
					COST_MAX_GROUPS);
		gr->nlayers++;
		if (ops->cls == CAT_MIXC_ATTENTION) {
			cm->paged_layers++;
			cm->mla_layers += ops->latent;
			cm->block_bytes = cat_sat_add(
				cm->block_bytes,
				ops->kv_bytes(m, cm->tp, cm->kv_dtype_bytes,
					      cm->block_size));
		}
	}
	for (size_t i = 0; i < cm->ngroups; i++) {
		struct cost_group *g = &cm->group[i];

		rc = g->ops->cost(m, &dims, &g->fig, why, whylen);
		if (rc != KV_OK)
			return rc;
	}
	cm->block_layers = cm->paged_layers;
	cm->block_mla = cm->mla_layers;
	/* embedding row, final norm, LM head input */
	rep += 3.0 * (double)h;
	cm->act_bytes_token = (rep + shard / cm->tp) * cm->dtype_bytes;
	cm->allreduces += 1;	/* VocabParallelEmbedding */
	cm->allreduce_token_bytes = (double)h * cm->dtype_bytes;
	return KV_OK;
}

/* The swap copy terms, each direction, strategy and host memory: the
 * calibration's where it has one, else the default. */
static kv_err
init_copy_terms(struct cost_model *cm, const struct cost_calib *cal,
		char *why, size_t whylen)
{
	for (int d = 0; d < COST_NDIRS; d++)
		for (int c = 0; c < COST_NCOPIES; c++)
			for (int k = 0; k < COST_NHOSTMEMS; k++) {
				struct cost_copy_terms def, *t;
				const struct cost_copy_terms *o;

				copy_defaults(&def, (enum cost_copy)c,
					      (enum cost_hostmem)k,
					      cm->host_bw);
				t = &cm->copy_t[d][c][k];
				o = cal ? &cal->copy[d][c][k] : NULL;
				pick(&t->alpha_ns, o ? &o->alpha_ns : NULL,
				     def.alpha_ns.v, def.alpha_ns.src);
				pick(&t->beta_ns, o ? &o->beta_ns : NULL,
				     def.beta_ns.v, def.beta_ns.src);
				pick(&t->ns_per_byte,
				     o ? &o->ns_per_byte : NULL,
				     def.ns_per_byte.v, def.ns_per_byte.src);
				if (!term_ok(&t->alpha_ns, false) ||
				    !term_ok(&t->beta_ns, false) ||
				    !term_ok(&t->ns_per_byte, false))
					return cat_fail(why, whylen, KV_EINVAL,
							"calibration: copy "
							"terms must be >= 0");
			}
	return KV_OK;
}

/*
 * The terms that are one number: where each sits in the calibration and
 * in the model, its default and source, and whether it must be > 0 (an
 * efficiency) or >= 0 (a time).  A row without a default (src NULL)
 * follows the term named by `like` (already resolved: the table is in
 * order) when the calibration leaves it unset.
 */
struct term_row {
	size_t cal, mod, like;
	double v;
	const char *src;
	bool positive;
};

#define TROW(name, v, src, pos) { offsetof(struct cost_calib, name), \
	offsetof(struct cost_model, name), 0, v, src, pos }
#define TLIKE(name, like) { offsetof(struct cost_calib, name), \
	offsetof(struct cost_model, name), offsetof(struct cost_model, like), \
	0.0, NULL, true }

static const struct term_row term_rows[] = {
	TROW(eff_compute, EFF_COMPUTE, SRC_EFF_COMPUTE, true),
	TROW(eff_memory, EFF_MEMORY, SRC_EFF_MEMORY, true),
	TROW(eff_interconnect, EFF_INTERCONNECT, SRC_EFF_INTERCONNECT, true),
	TLIKE(eff_weights, eff_memory),
	TLIKE(eff_kv_read, eff_memory),
	TLIKE(eff_kv_read_gqa, eff_kv_read),
	TLIKE(eff_experts, eff_weights),
	TLIKE(eff_attn_compute, eff_compute),
	TROW(allreduce_ns, ALLREDUCE_NS, SRC_ALLREDUCE, false),
	TROW(allreduce_rank_ns, ALLREDUCE_RANK_NS, SRC_ALLREDUCE_RANK, false),
	TROW(cpu_sched_step_ns, CPU_STEP_NS, SRC_CPU_STEP, false),
	TROW(cpu_sched_seq_ns, CPU_SCHED_SEQ_NS, SRC_CPU_SCHED_SEQ, false),
	TROW(cpu_sched_token_ns, CPU_SCHED_TOKEN_NS, SRC_CPU_SCHED_TOKEN,
	     false),
	TROW(cpu_prep_step_ns, CPU_PREP_STEP_NS, SRC_CPU_PREP_STEP, false),
	TROW(cpu_prep_seq_ns, CPU_SEQ_NS, SRC_CPU_SEQ, false),
	TROW(cpu_prep_token_ns, CPU_TOKEN_NS, SRC_CPU_TOKEN, false),
	TROW(graph_piecewise_layer_ns, GRAPH_PIECEWISE_LAYER_NS,
	     SRC_GRAPH_PIECEWISE, false),
	TROW(graph_eager_layer_ns, GRAPH_EAGER_LAYER_NS, SRC_GRAPH_EAGER,
	     false),
	TROW(gpu_step_ns, GPU_FIXED_NS, SRC_GPU_FIXED, false),
	TROW(gpu_layer_ns, GPU_FIXED_NS, SRC_GPU_FIXED, false),
	TROW(gpu_seq_layer_ns, GPU_FIXED_NS, SRC_GPU_FIXED, false),
};

/* Efficiencies and overheads: the calibration's, else the defaults. */
static kv_err
init_terms(struct cost_model *cm, const struct cost_calib *cal, bool fe,
	   char *why, size_t whylen)
{
	for (size_t i = 0; i < sizeof(term_rows) / sizeof(term_rows[0]); i++) {
		const struct term_row *r = &term_rows[i];
		struct cost_term *t = (struct cost_term *)((char *)cm + r->mod);
		const struct cost_term *o = cal == NULL ? NULL :
			(const struct cost_term *)((const char *)cal + r->cal);

		if (r->src == NULL) {
			const struct cost_term *l = (const struct cost_term *)
				((const char *)cm + r->like);

			pick(t, o, l->v, l->src);
		} else {
			pick(t, o, r->v, r->src);
		}
		if (!term_ok(t, r->positive))
			return cat_fail(why, whylen, KV_EINVAL,
					"calibration: efficiencies must be > 0 "
					"and times >= 0");
	}
	pick(&cm->frontend_request_ns, cal ? &cal->frontend_request_ns : NULL,
	     fe ? FRONTEND_REQUEST_NS : 0.0, fe ? SRC_FE_REQUEST : SRC_FE_NONE);
	pick(&cm->frontend_tokenize_ns,
	     cal ? &cal->frontend_tokenize_ns : NULL,
	     fe ? FRONTEND_TOKENIZE_NS : 0.0,
	     fe ? SRC_FE_TOKENIZE : SRC_FE_NONE);
	pick(&cm->frontend_stream_ns, cal ? &cal->frontend_stream_ns : NULL,
	     fe ? FRONTEND_STREAM_NS : 0.0, fe ? SRC_FE_STREAM : SRC_FE_NONE);
	if (!term_ok(&cm->frontend_request_ns, false) ||
	    !term_ok(&cm->frontend_tokenize_ns, false) ||
	    !term_ok(&cm->frontend_stream_ns, false))
		return cat_fail(why, whylen, KV_EINVAL,
				"calibration: efficiencies must be > 0 and "
				"times >= 0");
	return init_copy_terms(cm, cal, why, whylen);
}

kv_err
cost_model_init(struct cost_model *cm, const struct cat_model *m,
		const struct cat_gpu *g, const struct cost_config *cfg,
		char *why, size_t whylen)
{
	struct cost_config defcfg;
	kv_err rc;

	if (why != NULL && whylen > 0)
		why[0] = '\0';
	if (cm == NULL || m == NULL || g == NULL)
		return cat_fail(why, whylen, KV_EINVAL, "no model or GPU");
	if (cfg == NULL) {
		cost_config_init(&defcfg);
		cfg = &defcfg;
	}
	if ((rc = init_settings(cm, m, g, cfg, why, whylen)) ||
	    (rc = init_gpu(cm, m, g, why, whylen)) ||
	    (rc = init_linear(cm, m, why, whylen)) ||
	    (rc = init_layers(cm, m, why, whylen)) ||
	    (rc = cost_knobs_init(cm, m, cfg, why, whylen)) ||
	    (rc = init_terms(cm, cfg->calib, cfg->frontend, why, whylen)))
		return rc;
	/* grouped-query attention: fewer KV heads than query heads (MLA,
	 * with none, reads its latent at eff_kv_read) */
	cm->kv_eff = m->num_kv_heads > 0 && m->num_kv_heads < m->num_heads ?
		     cm->eff_kv_read_gqa.v : cm->eff_kv_read.v;
	return KV_OK;
}

/* ---- a step ------------------------------------------------------------- */

/*
 * Attention pairs and KV tokens of group g over the batch.  Group by group,
 * the mixer chosen once (per sequence and group it was a visible part of a
 * replay); the sums saturate and so do not depend on the order.
 */
static void
group_work(const struct cost_group *g, const struct cost_batch *b,
	   struct cat_mixer_work *w)
{
	if (g->ops->cls != CAT_MIXC_ATTENTION)
		return;		/* recurrent: per sequence */
	g->ops->work(&g->fig, g->window, b->seq, b->nseq, w);
}

/*
 * How the step runs under CUDA graphs (cost.h enum cost_graph), and the
 * tokens its GEMMs compute: a graph replays at its capture size, so the
 * batch is padded up to it (vLLM's gpu_model_runner pads num_input_tokens
 * for full and piecewise graphs alike).
 */
static void
step_graph(const struct cost_model *cm, uint64_t qmax,
	   struct cost_breakdown *bd)
{
	bd->graph_tokens = bd->tokens;
	if (cm->graph_max == 0) {
		bd->graph = COST_GRAPH_OFF;
		return;
	}
	if (bd->tokens > cm->graph_max) {
		bd->graph = COST_GRAPH_EAGER;
		bd->launch_ns = cm->layers * cm->graph_eager_layer_ns.v;
		return;
	}
	bd->graph_tokens = cost_graph_pad(bd->tokens, cm->graph_max);
	if (qmax == 1) {	/* uniform decode: one full graph */
		bd->graph = COST_GRAPH_FULL;
		return;
	}
	bd->graph = COST_GRAPH_PIECEWISE;
	bd->launch_ns = cm->paged_layers * cm->graph_piecewise_layer_ns.v;
}

/* Linear layers: weights once, experts by expected coverage; FLOPs and
 * activations of the tokens the GEMMs run. */
static void
step_linear(const struct cost_model *cm, struct cost_breakdown *bd)
{
	double gt = (double)bd->graph_tokens, seqs = (double)bd->seqs;
	double pm = cm->hbm_bw * cm->eff_memory.v / 1e9;
	double pw = cm->hbm_bw * cm->eff_weights.v / 1e9;
	double wb, act;

	bd->lin_flops = gt * cm->flops_token + seqs * cm->flops_seq;
	if (cm->moe_layers > 0) {
		double e = cm->num_experts;

		bd->experts = e * (1.0 - ipow(1.0 - cm->experts_per_tok / e,
					      bd->tokens));
	}
	wb = cm->weight_bytes_fixed + bd->experts * cm->expert_bytes;
	act = gt * cm->act_bytes_token;
	bd->lin_bytes = wb + act;
	bd->lin_compute_ns = bd->lin_flops /
			     (cm->peak_flops * cm->eff_compute.v / 1e9);
	/* one division when the weights share eff_memory: the same ns as
	 * before the split */
	if (cm->eff_experts.v != cm->eff_weights.v)
		bd->lin_memory_ns = cm->weight_bytes_fixed / pw +
			bd->experts * cm->expert_bytes /
			(cm->hbm_bw * cm->eff_experts.v / 1e9) + act / pm;
	else if (cm->eff_weights.v == cm->eff_memory.v)
		bd->lin_memory_ns = bd->lin_bytes / pm;
	else
		bd->lin_memory_ns = wb / pw + act / pm;
}

/* Attention layers: KV reads and attention FLOPs. */
static void
step_attention(const struct cost_model *cm,
	       const struct cat_mixer_work *work, struct cost_breakdown *bd)
{
	for (size_t k = 0; k < cm->ngroups; k++) {
		const struct cost_group *g = &cm->group[k];
		double nl = g->nlayers;
		const struct cat_mixer_cost *f = &g->fig;
		const struct cat_mixer_work *w = &work[k];

		if (g->ops->cls == CAT_MIXC_RECURRENT)
			continue;
		bd->attn_flops += nl * ((double)w->pairs * f->pair_flops +
					(double)w->pairs_pf * f->pair_flops_pf +
					(double)w->ctx_pf * f->ctx_flops_pf);
		bd->attn_bytes += nl * f->token_bytes * (double)w->kvtok;
	}
	bd->attn_compute_ns = bd->attn_flops /
		(cm->peak_flops * cm->eff_attn_compute.v / 1e9);
	bd->attn_memory_ns = bd->attn_bytes /
			     (cm->hbm_bw * cm->kv_eff / 1e9);
}

/* Attention and recurrent layers (the state's reads and FLOPs). */
static void
step_mixers(const struct cost_model *cm, const struct cat_mixer_work *work,
	    struct cost_breakdown *bd)
{
	double tok = (double)bd->tokens, seqs = (double)bd->seqs;
	double pc = cm->peak_flops * cm->eff_compute.v / 1e9;
	double pm = cm->hbm_bw * cm->eff_memory.v / 1e9;

	for (size_t k = 0; k < cm->ngroups; k++) {
		const struct cost_group *g = &cm->group[k];
		double nl = g->nlayers;
		const struct cat_mixer_cost *f = &g->fig;

		if (g->ops->cls != CAT_MIXC_RECURRENT)
			continue;
		bd->rec_bytes += nl * 2.0 * f->state_bytes * seqs;
		bd->rec_flops += nl * f->state_flops * tok;
	}
	step_attention(cm, work, bd);
	bd->rec_compute_ns = bd->rec_flops / pc;
	bd->rec_memory_ns = bd->rec_bytes / pm;
}

/* The GPU time from the parts, the knobs' terms, and the total. */
static void
step_total(const struct cost_model *cm, struct cost_breakdown *bd)
{
	bd->gpu_ns = dmax(bd->lin_compute_ns, bd->lin_memory_ns) +
		     dmax(bd->attn_compute_ns, bd->attn_memory_ns) +
		     dmax(bd->rec_compute_ns, bd->rec_memory_ns) +
		     bd->allreduce_ns + bd->fixed_ns;
	/* kernels cannot run faster than the CPU launches them */
	bd->gpu_ns = dmax(bd->gpu_ns, bd->launch_ns);
	cost_knobs_step(cm, bd);
	bd->total_ns = to_ns(bd->cpu_ns + bd->gpu_ns);
}

/* All-reduces, the launch floor, the CPU split and the total. */
static void
step_finish(const struct cost_model *cm, struct cost_breakdown *bd)
{
	double tok = (double)bd->tokens, seqs = (double)bd->seqs;

	if (cm->tp > 1) {
		double p = cm->tp;
		double bytes = 2.0 * (p - 1.0) / p * (double)bd->graph_tokens *
			       cm->allreduce_token_bytes;
		double link = cm->link_bw * cm->eff_interconnect.v / 1e9;
		double lat = cm->allreduce_ns.v +
			     (p - 2.0) * cm->allreduce_rank_ns.v;

		bd->allreduce_ns = cm->allreduces * (lat + bytes / link);
	}
	bd->fixed_ns = cm->gpu_step_ns.v + cm->layers * cm->gpu_layer_ns.v +
		       seqs * cm->paged_layers * cm->gpu_seq_layer_ns.v;
	bd->cpu_sched_ns = cm->cpu_sched_step_ns.v +
			   cm->cpu_sched_seq_ns.v * seqs +
			   cm->cpu_sched_token_ns.v * tok;
	bd->cpu_prep_ns = cm->cpu_prep_step_ns.v +
			  cm->cpu_prep_seq_ns.v * seqs +
			  cm->cpu_prep_token_ns.v * tok;
	bd->cpu_ns = bd->cpu_sched_ns + bd->cpu_prep_ns;
	step_total(cm, bd);
}

/* The batch's tokens and sequences into bd (sequences with q = 0 count
 * for nothing), *qmax raised to its largest q. */
static void
batch_counts(const struct cost_batch *b, struct cost_breakdown *bd,
	     uint64_t *qmax)
{
	for (size_t i = 0; i < b->nseq; i++) {
		uint64_t q = b->seq[i].q;

		if (q == 0)
			continue;
		bd->tokens = cat_sat_add(bd->tokens, q);
		bd->seqs++;
		*qmax = q > *qmax ? q : *qmax;
	}
}

/* The step from its counts in bd and the groups' work: its parts, into
 * *out (may be NULL), and its time. */
static int64_t
step_of_work(const struct cost_model *cm, const struct cat_mixer_work *work,
	     uint64_t qmax, struct cost_breakdown *bd,
	     struct cost_breakdown *out)
{
	if (bd->tokens > 0) {
		step_graph(cm, qmax, bd);
		step_linear(cm, bd);
		step_mixers(cm, work, bd);
		step_finish(cm, bd);
	}
	if (out != NULL)
		*out = *bd;
	return bd->tokens > 0 ? bd->total_ns : 0;
}

int64_t
cost_step_explain(const struct cost_model *cm, const struct cost_batch *b,
		  struct cost_breakdown *out)
{
	struct cat_mixer_work work[COST_MAX_GROUPS];
	static const struct cost_breakdown zero;
	struct cost_breakdown bd = zero;
	uint64_t qmax = 0;

	if (cm == NULL || b == NULL || (b->seq == NULL && b->nseq > 0)) {
		if (out != NULL)
			*out = bd;
		return 0;
	}
	/* the groups in use only: this runs every step */
	memset(work, 0, cm->ngroups * sizeof(work[0]));
	batch_counts(b, &bd, &qmax);
	for (size_t k = 0; k < cm->ngroups; k++)
		group_work(&cm->group[k], b, &work[k]);
	return step_of_work(cm, work, qmax, &bd, out);
}

/* Whether every attention group of cm is full attention (a decode's work
 * is then affine in its context). */
static bool
cost_full_only(const struct cost_model *cm)
{
	const struct cat_mixer_ops *full = cat_mixer_ops(CAT_MIX_FULL);

	for (size_t k = 0; k < cm->ngroups; k++)
		if (cm->group[k].ops->cls == CAT_MIXC_ATTENTION &&
		    cm->group[k].ops != full)
			return false;
	return true;
}

/* The work of n decodes whose contexts sum to ctx_sum, every attention
 * group full attention: ctx + 1 pairs and ctx + 2 KV tokens a decode in
 * each (full_one, exact below 2^62, so the sums are too); none in the
 * others, whose work is per sequence. */
static void
decodes_work(const struct cost_model *cm, uint64_t n, uint64_t ctx_sum,
	     struct cat_mixer_work *work)
{
	memset(work, 0, cm->ngroups * sizeof(*work));
	for (size_t k = 0; k < cm->ngroups; k++)
		if (cm->group[k].ops->cls == CAT_MIXC_ATTENTION) {
			work[k].pairs = ctx_sum + n;
			work[k].kvtok = ctx_sum + 2 * n;
		}
}

/*
 * The decodes first, as the batch lists them (decodes_work), then the
 * others through the group's own work.  The sums saturate, and a
 * saturating sum of counts does not depend on their order.
 */
int64_t
cost_step_decodes_and(const struct cost_model *cm, uint64_t n,
		      uint64_t ctx_sum, const struct cat_mixer_seq *s,
		      size_t ns, struct cost_breakdown *out)
{
	struct cat_mixer_work work[COST_MAX_GROUPS];
	static const struct cost_breakdown zero;
	struct cost_breakdown bd = zero;
	struct cost_batch b = { s, ns };
	uint64_t qmax = n > 0 ? 1 : 0;

	if (cm == NULL || ctx_sum >= (1ull << 61) || n >= (1ull << 30) ||
	    (s == NULL && ns > 0) || !cost_full_only(cm))
		return -1;
	bd.tokens = n;
	bd.seqs = n;
	batch_counts(&b, &bd, &qmax);
	decodes_work(cm, n, ctx_sum, work);
	for (size_t k = 0; k < cm->ngroups; k++)
		group_work(&cm->group[k], &b, &work[k]);
	return step_of_work(cm, work, qmax, &bd, out);
}

int64_t
cost_step_decode(const struct cost_model *cm, uint64_t n, uint64_t ctx_sum,
		 struct cost_breakdown *out)
{
	struct cost_decode_memo m = { .cm = NULL };

	return cost_step_decode_memo(cm, &m, n, ctx_sum, out);
}

/*
 * The memo holds the breakdown of n decodes with no attention work: every
 * term but attention's depends on n alone.  A call for n's contexts adds
 * attention's sums to it and the terms of the total in the same order as
 * step_finish, so the result is cost_step_decode's to the bit.
 */
int64_t
cost_step_decode_memo(const struct cost_model *cm, struct cost_decode_memo *m,
		      uint64_t n, uint64_t ctx_sum, struct cost_breakdown *out)
{
	struct cat_mixer_work work[COST_MAX_GROUPS];
	static const struct cost_breakdown zero;
	struct cost_breakdown bd;

	/* full_one's exact sums: below 2^62 every term, and the sums */
	if (cm == NULL || n == 0 || ctx_sum >= (1ull << 61) ||
	    n >= (1ull << 30))
		return -1;
	if (m->cm != cm || m->n != n) {
		m->cm = NULL;
		if (!cost_full_only(cm))
			return -1;
		memset(work, 0, cm->ngroups * sizeof(work[0]));
		bd = zero;
		bd.tokens = n;
		bd.seqs = n;
		step_graph(cm, 1, &bd);
		step_linear(cm, &bd);
		step_mixers(cm, work, &bd);
		step_finish(cm, &bd);
		m->bd = bd;
		m->bd.attn_flops = m->bd.attn_bytes = 0.0;
		m->one = cm->ngroups == 1 &&
		    cm->group[0].ops->cls == CAT_MIXC_ATTENTION;
		if (m->one) {
			const struct cost_group *g = &cm->group[0];

			/* step_attention's and step_total's operands */
			m->nl = g->nlayers;
			m->pf = g->fig.pair_flops;
			m->z1 = (double)0 * g->fig.pair_flops_pf;
			m->z2 = (double)0 * g->fig.ctx_flops_pf;
			m->nltb = m->nl * g->fig.token_bytes;
			m->dc = cm->peak_flops * cm->eff_attn_compute.v / 1e9;
			m->dm = cm->hbm_bw * cm->kv_eff / 1e9;
			m->lin = dmax(bd.lin_compute_ns, bd.lin_memory_ns);
			m->rec = dmax(bd.rec_compute_ns, bd.rec_memory_ns);
			cost_knobs_terms(cm, &bd, &m->kpp, &m->koff);
		}
		m->cm = cm;
		m->n = n;
	}
	if (out == NULL && m->one)
		return cost_decode_memo_quick(cm, m, n, ctx_sum);
	if (out == NULL)
		out = &bd;
	*out = m->bd;
	decodes_work(cm, n, ctx_sum, work);
	step_attention(cm, work, out);
	step_total(cm, out);
	return out->total_ns;
}

int64_t
cost_step_ns(const struct cost_model *cm, const struct cost_batch *b)
{
	return cost_step_explain(cm, b, NULL);
}

int64_t
cost_recompute_ns(const struct cost_model *cm, uint64_t n)
{
	struct cat_mixer_seq s = { .q = n, .ctx = 0 };
	struct cost_batch b = { .seq = &s, .nseq = 1 };
	struct cost_breakdown bd;

	if (n == 0)
		return 0;
	cost_step_explain(cm, &b, &bd);
	return to_ns(bd.gpu_ns);
}

/* ---- swaps -------------------------------------------------------------- */

int64_t
cost_copy_ns(const struct cost_model *cm, enum cost_dir dir,
	     enum cost_copy copy, enum cost_hostmem hostmem, uint64_t calls,
	     uint64_t chunks, uint64_t bytes)
{
	const struct cost_copy_terms *t;

	if (cm == NULL || (unsigned)dir >= COST_NDIRS ||
	    (unsigned)copy >= COST_NCOPIES ||
	    (unsigned)hostmem >= COST_NHOSTMEMS)
		return 0;
	if (bytes == 0 && chunks == 0)
		return 0;
	t = &cm->copy_t[dir][copy][hostmem];
	return to_ns(t->alpha_ns.v * (double)calls +
		     t->beta_ns.v * (double)chunks +
		     t->ns_per_byte.v * (double)bytes);
}

void
cost_model_groups(struct cost_model *cm, uint32_t layers_per_group,
		  uint64_t page_bytes)
{
	if (layers_per_group == 0 || cm->paged_layers == 0)
		return;
	cm->block_layers = layers_per_group;
	/* an MLA latent is one chunk a layer; a group of MLA layers only */
	cm->block_mla = cm->mla_layers == cm->paged_layers ? layers_per_group :
							     0;
	cm->block_bytes = cat_sat_mul(page_bytes, layers_per_group);
}

uint64_t
cost_layout_chunks(const struct cost_model *cm, enum cost_layout layout)
{
	switch (layout) {
	case COST_LAYOUT_FA_SPLIT:	/* K and V apart; an MLA latent is one */
		return 2ull * (cm->block_layers - cm->block_mla) +
		       cm->block_mla;
	case COST_LAYOUT_FI_FUSED:
	case COST_LAYOUT_DS_INTERLEAVED:
		return cm->block_layers;
	case COST_LAYOUT_CROSS_LAYER:
		return cm->block_layers > 0 ? 1 : 0;
	default:
		return 0;
	}
}

uint64_t
cost_swap_calls(const struct cost_model *cm, enum cost_layout layout,
		enum cost_copy copy)
{
	/* vLLM V0 swap_blocks: one call per layer and per K/V tensor, each
	 * a loop of cudaMemcpyAsync; everything else is one call a swap */
	if (copy == COST_COPY_PER_CHUNK)
		return cost_layout_chunks(cm, layout);
	return 1;
}

int64_t
cost_swap_ns(const struct cost_model *cm, enum cost_dir dir, uint64_t nblocks,
	     enum cost_layout layout)
{
	if (cm == NULL || nblocks == 0 || cm->paged_layers == 0)
		return 0;
	if (cm->unified_memory)
		return 0;
	if (!(cm->host_bw > 0.0))
		return -1;
	return cost_copy_ns(cm, dir, cm->copy, cm->hostmem,
			    cost_swap_calls(cm, layout, cm->copy),
			    cat_sat_mul(nblocks,
					cost_layout_chunks(cm, layout)),
			    cat_sat_mul(nblocks, cm->block_bytes));
}

/* ---- the API server ---------------------------------------------------- */

void
cost_fifo_init(struct cost_fifo *q)
{
	memset(q, 0, sizeof(*q));
	q->free_at = INT64_MIN;
}

int64_t
cost_fifo_serve(struct cost_fifo *q, int64_t t, int64_t work_ns)
{
	int64_t start = q->free_at > t ? q->free_at : t;

	if (work_ns < 0)
		work_ns = 0;
	q->free_at = start > INT64_MAX - work_ns ? INT64_MAX :
		     start + work_ns;
	q->jobs++;
	q->busy_ns += work_ns;
	return q->free_at;
}

/* A term's value in whole ns (the terms are at most 1e12: calib.c). */
static int64_t
term_ns(double v)
{
	return v > 0.0 ? (int64_t)(v + 0.5) : 0;
}

int64_t
cost_frontend_in_ns(const struct cost_model *cm, uint64_t prompt_tokens)
{
	return term_ns(cm->frontend_request_ns.v +
		       cm->frontend_tokenize_ns.v * (double)prompt_tokens);
}

int64_t
cost_frontend_out_ns(const struct cost_model *cm)
{
	return term_ns(cm->frontend_stream_ns.v);
}

/* ---- description -------------------------------------------------------- */

static const char *
src_or(const char *s)
{
	return s != NULL ? s : "GPU catalog entry";
}

static void
term_line(FILE *f, const char *name, const struct cost_term *t,
	  const char *unit)
{
	fprintf(f, "  %-22s %12.6g %-6s %s\n", name, t->v, unit, t->src);
}

/* One line per group of layers: what it keeps and what it costs. */
static void
describe_mixers(const struct cost_model *cm, FILE *f)
{
	fprintf(f, "token mixers (per layer, per rank)\n");
	for (size_t i = 0; i < cm->ngroups; i++) {
		const struct cost_group *g = &cm->group[i];
		const struct cat_mixer_ops *ops = g->ops;
		const struct cat_mixer_cost *c = &g->fig;
		const char *kind = ops->key;

		if (ops->cls == CAT_MIXC_RECURRENT)
			fprintf(f, "  %-8s x%-3u window %-7u state %.6g B a "
				"sequence (read + written a step), scan "
				"%.6g FLOPs a token\n", kind, g->nlayers,
				g->window, c->state_bytes, c->state_flops);
		else if (ops->latent)
			fprintf(f, "  %-8s x%-3u latent %.6g B a token "
				"(replicated), %.6g FLOPs a pair (decode), "
				"%.6g a pair + %.6g a context token "
				"(prefill)\n", kind, g->nlayers,
				c->token_bytes, c->pair_flops,
				c->pair_flops_pf, c->ctx_flops_pf);
		else
			fprintf(f, "  %-8s x%-3u window %-7u KV %.6g B a "
				"token, %.6g FLOPs a query-key pair\n", kind,
				g->nlayers, g->window, c->token_bytes,
				c->pair_flops);
	}
}

/* The swap copy terms, each direction, strategy and host memory. */
static void
describe_copies(const struct cost_model *cm, FILE *f)
{
	char name[64];

	for (int d = 0; d < COST_NDIRS; d++)
		for (int c = 0; c < COST_NCOPIES; c++)
			for (int k = 0; k < COST_NHOSTMEMS; k++) {
				const struct cost_copy_terms *t =
					&cm->copy_t[d][c][k];

				snprintf(name, sizeof(name), "%s %s %s",
					 cost_dir_name((enum cost_dir)d),
					 cost_copy_name((enum cost_copy)c),
					 cost_hostmem_name(
						 (enum cost_hostmem)k));
				fprintf(f, "  %s\n", name);
				term_line(f, "  alpha", &t->alpha_ns, "ns");
				term_line(f, "  beta", &t->beta_ns, "ns");
				term_line(f, "  1/B", &t->ns_per_byte, "ns/B");
			}
}

void
cost_describe(const struct cost_model *cm, FILE *f)
{
	char name[64];

	if (cm == NULL || f == NULL)
		return;
	fprintf(f, "cost model: %s on %s, tensor parallel %u\n",
		cm->model_id ? cm->model_id : "?",
		cm->gpu_id ? cm->gpu_id : "?", cm->tp);
	fprintf(f, "  dtype %u B, weights %u B/param, KV %u B, SSM state "
		"%u B, block %u tokens, swaps: %s layout, %s copy, %s host "
		"memory\n", cm->dtype_bytes, cm->weight_bytes,
		cm->kv_dtype_bytes, cm->ssm_dtype_bytes, cm->block_size,
		cost_layout_name(cm->layout), cost_copy_name(cm->copy),
		cost_hostmem_name(cm->hostmem));
	fprintf(f, "GPU (per rank)\n");
	snprintf(name, sizeof(name), "dense %s compute", cm->peak_flops_dtype);
	fprintf(f, "  %-22s %12.6g %-6s %s\n", name, cm->peak_flops / 1e12,
		"TFLOP/s", src_or(cm->peak_flops_src));
	fprintf(f, "  %-22s %12.6g %-6s %s\n", "HBM bandwidth",
		cm->hbm_bw / 1e9, "GB/s", src_or(cm->hbm_bw_src));
	fprintf(f, "  %-22s %12.6g %-6s %s\n", "GPU-GPU link",
		cm->link_bw / 1e9, "GB/s", src_or(cm->link_bw_src));
	fprintf(f, "  %-22s %12.6g %-6s %s\n", "host link",
		cm->host_bw / 1e9, "GB/s", src_or(cm->host_bw_src));
	fprintf(f, "efficiencies and overheads\n");
	term_line(f, "eff.compute", &cm->eff_compute, "");
	term_line(f, "eff.memory", &cm->eff_memory, "");
	term_line(f, "eff.weights", &cm->eff_weights, "");
	term_line(f, "eff.kv_read", &cm->eff_kv_read, "");
	term_line(f, "eff.kv_read_gqa", &cm->eff_kv_read_gqa, "");
	term_line(f, "eff.experts", &cm->eff_experts, "");
	term_line(f, "eff.attn_compute", &cm->eff_attn_compute, "");
	term_line(f, "eff.interconnect", &cm->eff_interconnect, "");
	term_line(f, "allreduce latency", &cm->allreduce_ns, "ns");
	term_line(f, "allreduce a rank > 2", &cm->allreduce_rank_ns, "ns");
	term_line(f, "cpu sched per step", &cm->cpu_sched_step_ns, "ns");
	term_line(f, "cpu sched per seq", &cm->cpu_sched_seq_ns, "ns");
	term_line(f, "cpu sched per token", &cm->cpu_sched_token_ns, "ns");
	term_line(f, "cpu prep per step", &cm->cpu_prep_step_ns, "ns");
	term_line(f, "cpu prep per seq", &cm->cpu_prep_seq_ns, "ns");
	term_line(f, "cpu prep per token", &cm->cpu_prep_token_ns, "ns");
	term_line(f, "graph piecewise layer", &cm->graph_piecewise_layer_ns,
		  "ns");
	term_line(f, "graph eager layer", &cm->graph_eager_layer_ns, "ns");
	term_line(f, "gpu fixed per step", &cm->gpu_step_ns, "ns");
	term_line(f, "gpu fixed per layer", &cm->gpu_layer_ns, "ns");
	term_line(f, "gpu fixed seq-layer", &cm->gpu_seq_layer_ns, "ns");
	if (cm->graph_max > 0)
		fprintf(f, "  CUDA graphs up to %u tokens (vLLM V1 "
			"FULL_AND_PIECEWISE; capture sizes 1, 2, 4, 8, ... "
			"steps of 8 to 256, of 16 above)\n", cm->graph_max);
	else
		fprintf(f, "  CUDA graphs not modelled (graph_max 0)\n");
	fprintf(f, "API server (one FIFO server a replica)\n");
	term_line(f, "frontend request", &cm->frontend_request_ns, "ns");
	term_line(f, "frontend tokenize", &cm->frontend_tokenize_ns, "ns");
	term_line(f, "frontend stream", &cm->frontend_stream_ns, "ns");
	fprintf(f, "linear layers (per rank; derived from the model)\n");
	fprintf(f, "  %-22s %12.6g %-6s all but routed experts, LM head "
		"included\n", "weights read a step", cm->weight_bytes_fixed /
		1e9, "GB");
	if (cm->moe_layers > 0)
		fprintf(f, "  %-22s %12.6g %-6s one routed expert over %u "
			"MoE layers; E[touched] = E(1-(1-k/E)^T), E %u, k "
			"%u\n", "expert weights", cm->expert_bytes / 1e6,
			"MB", cm->moe_layers, cm->num_experts,
			cm->experts_per_tok);
	fprintf(f, "  %-22s %12.6g %-6s 2 x decoder active params\n",
		"FLOPs per token", cm->flops_token, "");
	fprintf(f, "  %-22s %12.6g %-6s LM head, 2 x vocab x hidden\n",
		"FLOPs per sequence", cm->flops_seq, "");
	fprintf(f, "  %-22s %12.6g %-6s activations in and out of each "
		"matmul\n", "bytes per token", cm->act_bytes_token, "B");
	describe_mixers(cm, f);
	fprintf(f, "tensor parallel\n");
	fprintf(f, "  %u all-reduces a step of %.6g B a token (ring: "
		"2(p-1)/p of it on the link)\n", cm->allreduces,
		cm->allreduce_token_bytes);
	fprintf(f, "swaps: %llu B a block over %u paged layers; chunks a "
		"block:", (unsigned long long)cm->block_bytes,
		cm->block_layers);
	for (int l = 0; l < COST_NLAYOUTS; l++)
		fprintf(f, " %s %llu", cost_layout_name((enum cost_layout)l),
			(unsigned long long)cost_layout_chunks(
				cm, (enum cost_layout)l));
	fprintf(f, "\n");
	describe_copies(cm, f);
}
