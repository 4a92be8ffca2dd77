/*
 * catalog.h -- the model and GPU catalogs (data/models.yaml, data/gpus.yaml)
 * and the Hugging Face config.json reader.
 *
 * A model is what the KV sizing (sim/sizing.h) and the cost model need to
 * know about an LLM: its layers, one entry per decoder layer saying which
 * token mixer (full / sliding-window / chunked attention, MLA, Mamba-1,
 * Mamba-2, Gated DeltaNet, none) and which feed-forward block (dense, MoE,
 * none) it has, plus the dimensions of each.  A GPU is memory, bandwidths
 * and dense FLOPs.  Every number carries a source: a catalog entry names
 * the document it was copied from, per field or for the whole entry, and
 * `kvsim catalog show` prints them side by side (docs/catalog.md).
 *
 * Catalog model entries are written in Hugging Face config.json field names
 * (`config:` block), so one reader interprets both the catalog and a user's
 * `--model path/config.json`; the catalog reader is strict (an unknown
 * field is an error, it is probably a typo), the config.json reader ignores
 * fields it does not use.
 *
 * Errors: every loader returns kv_err and fills a struct cat_err with
 * "FILE:LINE:COL: what" (bad YAML, a bad value, a missing field).  KV_EINVAL
 * is bad input, KV_ENOENT an unreadable file, KV_ENOMEM out of memory.
 * Nothing here prints or exits.
 *
 * Units: bytes and tokens are integers; bandwidths are bytes per second in
 * each direction; FLOPs are dense (no structured sparsity) per second.
 */
#ifndef SIM_MODEL_CATALOG_H
#define SIM_MODEL_CATALOG_H

#include "core/kvcore.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cat_err {
	char msg[512];
};

/* ---- models ------------------------------------------------------------ */

enum cat_mixer {
	CAT_MIX_NONE = 0,	/* no token mixer (Nemotron-H "-" / "E") */
	CAT_MIX_FULL,		/* full attention */
	CAT_MIX_SLIDING,	/* sliding-window attention (layer.window) */
	CAT_MIX_CHUNKED,	/* chunked local attention (layer.window) */
	CAT_MIX_MLA,		/* multi-head latent attention (DeepSeek) */
	CAT_MIX_MAMBA1,		/* Mamba-1 selective scan (Jamba) */
	CAT_MIX_MAMBA2,		/* Mamba-2 (Granite-4.0-H, Nemotron-H) */
	CAT_MIX_GDN,		/* Gated DeltaNet (Qwen3-Next) */
	CAT_NMIXERS		/* the number of kinds (sim/model/mixer.h) */
};

enum cat_ffn {
	CAT_FFN_NONE = 0,
	CAT_FFN_DENSE,		/* gated (SwiGLU) unless !mlp_gated */
	CAT_FFN_MOE		/* routed experts (+ shared expert if any) */
};

struct cat_layer {
	uint8_t mixer;		/* enum cat_mixer */
	uint8_t ffn;		/* enum cat_ffn */
	uint32_t window;	/* SLIDING: window; CHUNKED: chunk size */
};

/* Recurrent-state dimensions, whole model (tensor parallel size 1). */
struct cat_ssm {
	/* Mamba-1 / Mamba-2 */
	uint32_t d_inner;	/* expand * hidden, or n_heads * head_dim */
	uint32_t d_state;
	uint32_t d_conv;
	uint32_t n_groups;	/* Mamba-2 */
	uint32_t n_heads;	/* Mamba-2 */
	uint32_t head_dim;	/* Mamba-2 */
	uint32_t dt_rank;	/* Mamba-1 */
	uint32_t chunk_size;	/* Mamba-2 SSD chunk (prefix caching) */
	/* Gated DeltaNet */
	uint32_t key_heads, key_dim, value_heads, value_dim, conv_kernel;
};

struct cat_model {
	char *id;		/* HF repo id, or the config.json path */
	char **alias;
	size_t nalias;
	char *source;		/* where the numbers come from */
	char *origin;		/* "FILE:LINE" of the entry, or the path */
	char *model_type;	/* config "model_type" */
	char *architecture;	/* config "architectures"[0], or "" */
	char *note;		/* free text from the catalog, or NULL */

	char dtype[16];		/* weights and activations: "bfloat16" */
	uint32_t dtype_bytes;
	uint32_t weight_bytes;	/* per parameter; 1 for fp8 ckpts */
	char ssm_cache_dtype[16];	/* mamba_ssm_cache_dtype or "" */

	uint32_t num_layers;
	uint32_t hidden_size;
	uint32_t num_heads;	/* query heads */
	uint32_t num_kv_heads;	/* 0 for MLA-only models */
	uint32_t head_dim;	/* q/k head size (MLA: nope + rope) */
	uint32_t v_head_dim;	/* v head size (= head_dim unless MLA) */
	uint32_t intermediate_size;	/* dense MLP */
	uint32_t vocab_size;
	uint64_t max_model_len;	/* derived as vLLM derives it */
	uint32_t rotary_dim;	/* 0: no rotary embedding (NoPE) */
	bool tie_word_embeddings;
	bool attention_bias;	/* q/k/v projections carry a bias */
	bool qk_norm;		/* per-head q/k RMSNorm (Qwen3, Gemma-3) */
	bool attn_output_gate;	/* gated attention output (Qwen3-Next) */
	bool mlp_gated;		/* gate/up/down; false: up/down */
	uint32_t norms_per_layer;	/* RMSNorm vectors of size hidden */

	/* MoE */
	uint32_t num_experts;	/* routed experts, 0 = dense */
	uint32_t experts_per_tok;
	uint32_t moe_intermediate_size;
	uint32_t shared_intermediate_size;	/* all shared experts */
	bool router_bias;	/* DeepSeek e_score_correction_bias */

	/* MLA */
	uint32_t q_lora_rank;	/* 0: full-rank q projection */
	uint32_t kv_lora_rank;
	uint32_t qk_nope_head_dim;
	uint32_t qk_rope_head_dim;

	struct cat_ssm ssm;
	struct cat_layer *layer;	/* num_layers entries */

	uint64_t params;	/* total parameters */
	uint64_t active_params;	/* per token (MoE: top-k + shared) */
	char *params_source;	/* computed, or the given source */

	/* per-field sources that differ from `source` */
	char **fsrc_field, **fsrc_text;
	size_t nfsrc;
};

/* Layers whose mixer is `kind`. */
uint32_t cat_model_count(const struct cat_model *m, enum cat_mixer kind);

/* true if the model has both attention and recurrent-state layers. */
bool cat_model_is_hybrid(const struct cat_model *m);

/* The source of a field ("hidden_size", "params", ...): its own or the
 * entry's. */
const char *cat_model_source(const struct cat_model *m, const char *field);

const char *cat_mixer_name(enum cat_mixer k);

/*
 * Read a Hugging Face config.json (or any YAML/JSON file holding one
 * config mapping), or the config.json of a model directory (path is a
 * directory: path/config.json; the model's id stays path).  Unknown fields
 * are ignored; missing required ones and bad values are errors with
 * FILE:LINE:COL.  *out is caller-owned (cat_model_free).
 */
kv_err cat_model_from_hf(struct cat_model **out, const char *path,
			 struct cat_err *e);

void cat_model_free(struct cat_model *m);

/* Parameter count from the architecture (total, active per token). */
void cat_model_count_params(const struct cat_model *m, uint64_t *total,
			    uint64_t *active);

/* ---- GPUs -------------------------------------------------------------- */

enum cat_dtype { CAT_FP32 = 0, CAT_BF16, CAT_FP16, CAT_FP8, CAT_NDTYPES };

enum cat_gpu_field {
	CAT_G_MEMORY = 0,
	CAT_G_USABLE,
	CAT_G_HBM_BW,
	CAT_G_FLOPS_FP32,
	CAT_G_FLOPS_BF16,
	CAT_G_FLOPS_FP16,
	CAT_G_FLOPS_FP8,
	CAT_G_INTERCONNECT,
	CAT_G_HOST,
	CAT_G_CC,
	CAT_G_DEVICE_NAME,
	CAT_G_PRICE,
	CAT_G_NFIELDS
};

struct cat_gpu {
	char *id;
	char **alias;
	size_t nalias;
	char *name;		/* marketing name */
	char *vendor;		/* nvidia, amd, apple */
	char *device_name;	/* as torch reports it (vLLM tests it) */
	char *origin;		/* "FILE:LINE" */
	char *note;
	uint32_t cc_major, cc_minor;	/* NVIDIA compute capability; 0.0 */
	uint64_t memory_bytes;	/* marketed memory capacity */
	uint64_t usable_bytes;	/* total the runtime reports (torch) */
	double hbm_bw;		/* memory bandwidth, bytes/s */
	double flops[CAT_NDTYPES];	/* dense FLOP/s, 0 = unknown */
	double interconnect_bw;	/* GPU to GPU, bytes/s per direction */
	double host_bw;		/* host link, bytes/s each way, 0 none */
	bool unified_memory;	/* CPU and GPU share one pool (Apple) */
	double usd_per_hour;	/* on-demand list price of one GPU, US
				 * dollars an hour; 0 unknown */
	char *src[CAT_G_NFIELDS];
};

/* ---- a catalog --------------------------------------------------------- */

typedef struct cat cat;

/*
 * The directory holding models.yaml and gpus.yaml: $KVSIM_DATADIR if set
 * and not empty, else the installed pkgdatadir, else (a build tree that is
 * not installed) the source tree's data/.  Borrowed static storage.
 */
const char *cat_datadir(void);

/* Load DIR/models.yaml and DIR/gpus.yaml (dir NULL: cat_datadir()). */
kv_err cat_load(cat **out, const char *dir, struct cat_err *e);

/* Load the two files; either path may be NULL (that half stays empty). */
kv_err cat_load_files(cat **out, const char *models_yaml,
		      const char *gpus_yaml, struct cat_err *e);

void cat_free(cat *c);

size_t cat_nmodels(const cat *c);
const struct cat_model *cat_model_at(const cat *c, size_t i);
size_t cat_ngpus(const cat *c);
const struct cat_gpu *cat_gpu_at(const cat *c, size_t i);

/* Lookup by id or alias, ASCII case-insensitive; NULL if none. */
const struct cat_model *cat_find_model(const cat *c, const char *name);
const struct cat_gpu *cat_find_gpu(const cat *c, const char *name);

/* ---- helpers shared with the sizing and the command line --------------- */

/*
 * Parse a byte size: an integer or decimal with an optional unit B, KB, MB,
 * GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g.
 * "79.18GiB", "80GB", "1048576".  Rounds to the nearest byte.  false on a
 * malformed or out-of-range value.
 */
bool cat_parse_bytes(const char *s, uint64_t *out);

/* Bytes per element of a dtype name ("bfloat16", "fp8", ...); 0 unknown. */
uint32_t cat_dtype_bytes(const char *name);

/* Write a printf message into why (when why != NULL and whylen > 0) and
 * return rc: the failure path of the sizing, the mixer hooks and the cost
 * model. */
kv_err cat_fail(char *why, size_t whylen, kv_err rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
