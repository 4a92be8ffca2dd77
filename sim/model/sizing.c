/*
 * sizing.c -- vLLM v1's start-up KV sizing (sizing.h).
 *
 * The steps, in vLLM's order (commit 5e5a7eb16f12):
 *   1. settings: dtype, kv_cache_dtype, max_model_len, vllm serve's batch
 *      defaults, prefix caching (off by default for hybrids);
 *   2. block size: 16, raised for hybrids so one attention page holds a
 *      Mamba state (HybridAttentionMambaModelConfig), forced to 64 / 128 for
 *      MLA on Hopper / Blackwell (CudaPlatform.check_and_update_config);
 *   3. memory: requested = total * gpu_memory_utilization; available =
 *      requested - weights - activation peak - non-torch (- CUDA graphs),
 *      or kv_cache_memory_bytes as given (gpu_worker);
 *   4. check_enough_kv_cache_memory over the per-layer specs;
 *   5. KV cache groups (_get_kv_cache_groups_uniform_page_size), num_blocks
 *      = available // page // layers per group, num_gpu_blocks_override;
 *   6. _report_kv_cache_config: the two log lines.
 * Steps 4-6 are libkvcore's block-aligned helpers; nothing here counts raw
 * tokens (seed bug 2).
 *
 * The estimates of step 3 (what vLLM measures by running the model) are
 * documented with their sources in docs/catalog.md §4.
 */
#include "config.h"

#include "sim/model/sizing.h"
#include "sim/model/mixer.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define GIB 1073741824.0

/*
 * Activation peak of vLLM v1's profiling run, dominated by the dummy
 * sampler pass over max_num_seqs rows of fp32 logits: SZ_SAMPLER_COPIES
 * logit-sized buffers, fitted to the five measurements of
 * llm-d/llm-d-benchmark:config_explorer/empirical-vllm-memory-results.md
 * (H100, vLLM v1; worst error 0.4%).  See docs/catalog.md §4.
 */
#define SZ_SAMPLER_COPIES 9.6

/* Non-torch memory growth during profiling (NCCL, cuBLAS workspaces):
 * 0.13 GiB at TP 1, 0.55 GiB at TP 2 (same measurements). */
#define SZ_NON_TORCH_TP1 0.13
#define SZ_NON_TORCH_TPN 0.55

/* vllm serve's batch defaults (EngineArgs.get_batch_defaults, usage
 * context OPENAI_API_SERVER): GPUs with >= 70 GiB that are not A100s get
 * the larger pair. */
#define SZ_BIG_GPU_BYTES (70ull << 30)

static const char *const sz_docs_link =
	"See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ "
	"for more details.";

void
sz_engine_init(struct sz_engine *e)
{
	memset(e, 0, sizeof(*e));
	e->gpu_memory_utilization = 0.9;
	snprintf(e->kv_cache_dtype, sizeof(e->kv_cache_dtype), "auto");
	snprintf(e->dtype, sizeof(e->dtype), "auto");
	snprintf(e->mamba_ssm_cache_dtype, sizeof(e->mamba_ssm_cache_dtype),
		 "auto");
	e->enable_prefix_caching = -1;
	e->kv_cache_memory_bytes = SZ_UNSET;
	e->num_gpu_blocks_override = SZ_UNSET;
	e->gpu_memory_bytes = SZ_UNSET;
	e->weights_bytes = SZ_UNSET;
	e->activation_bytes = SZ_UNSET;
	e->non_torch_bytes = SZ_UNSET;
	e->cudagraph_bytes = SZ_UNSET;
}

bool
sz_block_size_valid(uint64_t bs)
{
	/* a power of two from 8 to 256, or 1 */
	return bs == 1 || (bs >= 8 && bs <= 256 && (bs & (bs - 1)) == 0);
}

void
sz_commas(char *buf, size_t len, uint64_t v)
{
	char digits[32];
	size_t n, j = 0;

	snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v);
	n = strlen(digits);
	for (size_t i = 0; i < n && j + 1 < len; i++) {
		if (i > 0 && (n - i) % 3 == 0) {
			buf[j++] = ',';
			if (j + 1 >= len)
				break;
		}
		buf[j++] = digits[i];
	}
	if (len > 0)
		buf[j] = '\0';
}

static void
sz_log(struct sz_result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
sz_log(struct sz_result *r, const char *fmt, ...)
{
	va_list ap;

	if (r->nlog == SZ_MAX_LOG)
		return;
	va_start(ap, fmt);
	vsnprintf(r->log[r->nlog++], SZ_LOG_LEN, fmt, ap);
	va_end(ap);
}

/* ASCII case-insensitive substring test (vLLM lower-cases the name). */
static bool
sz_contains_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++)
		if (strncasecmp(hay, needle, n) == 0)
			return true;
	return false;
}

static bool
sz_is_attn(uint8_t mixer)
{
	return cat_mixer_ops((enum cat_mixer)mixer)->cls == CAT_MIXC_ATTENTION;
}

/*
 * The kind whose KV page every attention layer of m has: MLA models hold
 * latents in all of them (vLLM's use_mla is per model), every other
 * model K and V heads.
 */
static const struct cat_mixer_ops *
sz_attn_ops(const struct cat_model *m)
{
	for (uint32_t i = 0; i < m->num_layers; i++)
		if (cat_layer_mixer(&m->layer[i])->latent)
			return cat_layer_mixer(&m->layer[i]);
	return cat_mixer_ops(CAT_MIX_FULL);
}

/* ---- the estimates ----------------------------------------------------- */

uint64_t
sz_weights_bytes(const struct cat_model *m, uint32_t tp, uint32_t weight_bytes,
		 uint32_t dtype_bytes, uint64_t rope_len)
{
	uint64_t w = m->params * weight_bytes;

	if (tp > 1)
		w = (w + tp - 1) / tp;
	/* RotaryEmbedding.cos_sin_cache: max_position x rotary_dim in the
	 * model dtype, one per rank (vLLM caches the module) */
	return w + rope_len * m->rotary_dim * dtype_bytes;
}

uint64_t
sz_activation_bytes(const struct cat_model *m, uint32_t tp,
		    uint32_t dtype_bytes, uint64_t batched_tokens,
		    uint32_t max_num_seqs)
{
	uint64_t rows = max_num_seqs < batched_tokens ? max_num_seqs :
			batched_tokens;
	double sampler = SZ_SAMPLER_COPIES * (double)rows *
			 (double)m->vocab_size * 4.0;
	double fwd = 0;

	/* the largest per-token transient of one layer: q/k/v and the FFN's
	 * gate/up output and activation (fused MoE: per routed copy) */
	for (uint32_t i = 0; i < m->num_layers; i++) {
		const struct cat_layer *l = &m->layer[i];
		double t = 0, up = m->mlp_gated ? 3.0 : 2.0;

		if (sz_is_attn(l->mixer))
			t += ((double)m->num_heads +
			      2.0 * m->num_kv_heads) * m->head_dim / tp;
		if (l->ffn == CAT_FFN_DENSE)
			t += up * m->intermediate_size / tp;
		else if (l->ffn == CAT_FFN_MOE)
			t += m->experts_per_tok *
			     (up * m->moe_intermediate_size / tp +
			      m->hidden_size) +
			     up * m->shared_intermediate_size / tp;
		if (t > fwd)
			fwd = t;
	}
	fwd *= (double)batched_tokens * dtype_bytes;
	return (uint64_t)((sampler > fwd ? sampler : fwd) +
			  (double)batched_tokens * m->hidden_size *
			  dtype_bytes + 0.5);
}

uint64_t
sz_non_torch_bytes(uint32_t tp)
{
	return (uint64_t)((tp > 1 ? SZ_NON_TORCH_TPN : SZ_NON_TORCH_TP1) *
			  GIB + 0.5);
}

/* ---- settings ---------------------------------------------------------- */

static kv_err
sz_settings(const struct cat_model *m, const struct cat_gpu *g,
	    const struct sz_engine *e, struct sz_result *r, char *why,
	    size_t wl)
{
	const char *kvd = e->kv_cache_dtype;
	uint64_t total;

	r->tp = e->tensor_parallel_size ? e->tensor_parallel_size : 1;
	if (m->num_heads % r->tp != 0)
		return cat_fail(why, wl, KV_EINVAL, "Total number of attention "
				"heads (%u) must be divisible by tensor "
				"parallel size (%u).", m->num_heads, r->tp);
	if (!(e->gpu_memory_utilization > 0 &&
	      e->gpu_memory_utilization <= 1.0))
		return cat_fail(why, wl, KV_EINVAL, "gpu_memory_utilization "
				"must be in (0, 1], got %g",
				e->gpu_memory_utilization);

	/* dtype "auto": the checkpoint's, float32 checkpoints run bf16 */
	if (e->dtype[0] == '\0' || strcmp(e->dtype, "auto") == 0) {
		r->dtype_bytes = m->dtype_bytes == 4 ? 2 : m->dtype_bytes;
	} else {
		r->dtype_bytes = cat_dtype_bytes(e->dtype);
		if (r->dtype_bytes == 0 || r->dtype_bytes == 1)
			return cat_fail(why, wl, KV_EINVAL, "unknown dtype "
					"'%s' (auto, bfloat16, float16, "
					"float32)", e->dtype);
	}
	if (kvd[0] == '\0' || strcmp(kvd, "auto") == 0) {
		r->kv_dtype_bytes = r->dtype_bytes;
	} else if (strcmp(kvd, "fp8_ds_mla") == 0) {
		if (!sz_attn_ops(m)->latent)
			return cat_fail(why, wl, KV_EINVAL, "kv_cache_dtype "
					"fp8_ds_mla needs an MLA model");
		r->kv_dtype_bytes = 1;
	} else if (strcmp(kvd, "bfloat16") == 0 ||
		   strcmp(kvd, "float16") == 0 || strcmp(kvd, "fp8") == 0 ||
		   strcmp(kvd, "fp8_e4m3") == 0 ||
		   strcmp(kvd, "fp8_e5m2") == 0 ||
		   strcmp(kvd, "fp8_inc") == 0) {
		r->kv_dtype_bytes = cat_dtype_bytes(kvd);
	} else {
		return cat_fail(why, wl, KV_EINVAL, "unknown kv_cache_dtype "
				"'%s' (auto, bfloat16, float16, fp8, fp8_e4m3, "
				"fp8_e5m2, fp8_inc, fp8_ds_mla)", kvd);
	}
	if (e->quantization[0] != '\0' &&
	    strcmp(e->quantization, "fp8") != 0)
		return cat_fail(why, wl, KV_EINVAL, "quantization '%s': kvsim "
				"sizes fp8 weights only (--quantization fp8)",
				e->quantization);
	if (e->mamba_ssm_cache_dtype[0] == '\0' ||
	    strcmp(e->mamba_ssm_cache_dtype, "auto") == 0) {
		r->ssm_dtype_bytes = r->dtype_bytes;
	} else {
		r->ssm_dtype_bytes = cat_dtype_bytes(e->mamba_ssm_cache_dtype);
		if (r->ssm_dtype_bytes < 2)
			return cat_fail(why, wl, KV_EINVAL, "unknown "
					"mamba_ssm_cache_dtype '%s' (auto, "
					"float32, bfloat16, float16)",
					e->mamba_ssm_cache_dtype);
	}

	r->max_model_len = e->max_model_len ? e->max_model_len :
			   m->max_model_len;
	if (r->max_model_len > UINT32_MAX)
		return cat_fail(why, wl, KV_EINVAL, "max_model_len %llu is too "
				"large", (unsigned long long)r->max_model_len);
	if (r->max_model_len > m->max_model_len)
		return cat_fail(why, wl, KV_EINVAL, "User-specified "
				"max_model_len (%llu) is greater than the "
				"derived max_model_len (%llu) of %s.",
				(unsigned long long)r->max_model_len,
				(unsigned long long)m->max_model_len, m->id);

	total = e->gpu_memory_bytes >= 0 ? (uint64_t)e->gpu_memory_bytes :
		g->usable_bytes;
	if (total >= SZ_BIG_GPU_BYTES &&
	    !sz_contains_ci(g->device_name, "a100")) {
		r->max_num_batched_tokens = 8192;
		r->max_num_seqs = 1024;
	} else {
		r->max_num_batched_tokens = 2048;
		r->max_num_seqs = 256;
	}
	if (e->max_num_batched_tokens)
		r->max_num_batched_tokens = e->max_num_batched_tokens;
	if (e->max_num_seqs)
		r->max_num_seqs = e->max_num_seqs;
	if (r->max_num_batched_tokens < r->max_num_seqs)
		return cat_fail(why, wl, KV_EINVAL, "max_num_batched_tokens "
				"(%llu) must be greater than or equal to "
				"max_num_seqs (%u).",
				(unsigned long long)r->max_num_batched_tokens,
				r->max_num_seqs);
	r->total_bytes = total;
	return KV_OK;
}

/* ---- block size and pages ---------------------------------------------- */

/*
 * The model's kind of recurrent state (NULL: none) and whether it has
 * attention layers.  vLLM groups one kind of state only.
 */
static kv_err
sz_kinds(const struct cat_model *m, bool *has_attn,
	 const struct cat_mixer_ops **state, char *why, size_t wl)
{
	*has_attn = false;
	*state = NULL;
	for (uint32_t i = 0; i < m->num_layers; i++) {
		const struct cat_mixer_ops *k = cat_layer_mixer(&m->layer[i]);

		*has_attn |= k->cls == CAT_MIXC_ATTENTION;
		if (k->cls == CAT_MIXC_RECURRENT) {
			if (*state != NULL && k != *state)
				return cat_fail(why, wl, KV_ENOTSUP, "%s mixes "
						"two kinds of recurrent state",
						m->id);
			*state = k;
		}
	}
	return KV_OK;
}

/* prefix caching: on by default except for hybrids (EngineArgs); only
 * Mamba-2 hybrids may keep it (MambaModelConfig) */
static void
sz_prefix_caching(const struct sz_engine *e,
		  const struct cat_mixer_ops *state, struct sz_result *r)
{
	r->prefix_caching = e->enable_prefix_caching < 0 ?
			    state == NULL : e->enable_prefix_caching != 0;
	if (state == NULL || !r->prefix_caching)
		return;
	if (state->prefix_caching) {
		sz_log(r, "Warning: Prefix caching is currently enabled. Its "
		       "support for Mamba2 layers is experimental. Please "
		       "report any issues you may observe.");
	} else {
		sz_log(r, "Hybrid or mamba-based model detected without "
		       "support for prefix caching: disabling.");
		r->prefix_caching = false;
	}
}

/* A hybrid: one page size for the attention and state layers
 * (HybridAttentionMambaModelConfig). */
static kv_err
sz_hybrid_pages(const struct cat_model *m, const struct cat_gpu *g,
		const struct sz_engine *e, struct sz_result *r, bool mla,
		char *why, size_t wl)
{
	bool nv = strcmp(g->vendor, "nvidia") == 0;
	struct kvc_hybrid h = {
		.attn_token_bytes = r->attn_token_bytes,
		.mamba_page_bytes = r->mamba_state_bytes,
		.align = 16,
		.mamba_chunk = m->ssm.chunk_size,
		.prefix_caching = r->prefix_caching,
		.block_size = e->block_size,
	};
	struct kvc_hybrid_result hr;

	if (mla)
		h.align = nv && g->cc_major == 10 ? 128 : 64;
	else if (nv && g->cc_major == 10 && m->head_dim == 256)
		h.align = 32;	/* FlashInfer on Blackwell */
	if (r->prefix_caching && h.mamba_chunk == 0)
		return cat_fail(why, wl, KV_EINVAL, "prefix caching on %s "
				"needs the Mamba chunk size (chunk_size in "
				"the config)", m->id);
	if (kvc_hybrid_unify(&h, &hr) != KV_OK)
		return cat_fail(why, wl, KV_EINVAL, "cannot align the "
				"attention and Mamba pages of %s", m->id);
	if (hr.overridden)
		sz_log(r, "Setting attention block size to %u tokens to ensure "
		       "that attention page size is >= mamba page size.",
		       hr.block_size);
	if (hr.mamba_padding > 0)
		sz_log(r, "Padding mamba page size by %.2f%% to ensure that "
		       "mamba page size and attention page size are exactly "
		       "equal.", 100.0 * (double)hr.mamba_padding /
		       (double)r->mamba_state_bytes);
	r->block_size = hr.block_size;
	if (r->prefix_caching)
		r->mamba_block_size = hr.mamba_block_size;
	r->page_bytes = hr.page_bytes;
	return KV_OK;
}

static kv_err
sz_pages(const struct cat_model *m, const struct cat_gpu *g,
	 const struct sz_engine *e, struct sz_result *r, char *why, size_t wl)
{
	bool nv = strcmp(g->vendor, "nvidia") == 0;
	const struct cat_mixer_ops *attn = sz_attn_ops(m), *state;
	bool mla = attn->latent, has_attn;
	kv_err rc;

	if ((rc = sz_kinds(m, &has_attn, &state, why, wl)))
		return rc;
	sz_prefix_caching(e, state, r);

	/* one token of one attention layer, per rank */
	if (mla && strcmp(e->kv_cache_dtype, "fp8_ds_mla") == 0)
		r->attn_token_bytes = kvc_page_bytes_fp8_ds_mla(1);
	else
		r->attn_token_bytes = attn->kv_bytes(m, r->tp,
						     r->kv_dtype_bytes, 1);
	if (state != NULL) {
		rc = state->state_bytes(m, r->tp, r->dtype_bytes,
					r->ssm_dtype_bytes,
					&r->mamba_state_bytes, why, wl);
		if (rc != KV_OK)
			return rc;
	}

	r->block_size = e->block_size;
	r->mamba_block_size = (uint32_t)r->max_model_len;
	r->page_bytes = 0;
	if (has_attn && state != NULL) {
		if ((rc = sz_hybrid_pages(m, g, e, r, mla, why, wl)))
			return rc;
	} else if (r->block_size == 0) {
		r->block_size = 16;	/* CudaPlatform: block_size None */
	}
	if (mla && nv && g->cc_major == 9 && r->block_size % 64 != 0) {
		r->block_size = 64;
		sz_log(r, "Forcing kv cache block size to 64 for FlashMLA "
		       "backend.");
	} else if (mla && nv && g->cc_major == 10 &&
		   r->block_size % 128 != 0) {
		r->block_size = 128;
		sz_log(r, "Forcing kv cache block size to 128 for CUTLASS_MLA "
		       "backend.");
	}
	return KV_OK;
}

kv_err
sz_check_block_size(const struct cat_model *m, const struct cat_gpu *g,
		    const struct sz_engine *e, char *why, size_t whylen)
{
	struct sz_engine auto_bs = *e;
	struct sz_result *r;
	uint32_t computed = 0;
	kv_err rc;

	if (e->block_size == 0 || sz_block_size_valid(e->block_size))
		return KV_OK;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return cat_fail(why, whylen, KV_ENOMEM, "out of memory");
	auto_bs.block_size = 0;
	rc = sz_settings(m, g, &auto_bs, r, why, whylen);
	if (rc == KV_OK)
		rc = sz_pages(m, g, &auto_bs, r, why, whylen);
	if (rc == KV_OK && r->page_bytes != 0)	/* a hybrid's own size */
		computed = r->block_size;
	free(r);
	if (rc != KV_OK || computed == e->block_size)
		return rc;
	if (computed != 0)
		return cat_fail(why, whylen, KV_EINVAL, "block_size %u: vLLM "
				"takes 1, 8, 16, 32, 64, 128 or 256, or the "
				"%u it computes for %s", e->block_size,
				computed, m->id);
	return cat_fail(why, whylen, KV_EINVAL, "block_size %u: vLLM takes "
			"1, 8, 16, 32, 64, 128 or 256", e->block_size);
}

/* ---- specs and groups -------------------------------------------------- */

static bool
sz_spec_eq(const struct kvc_spec *a, const struct kvc_spec *b)
{
	return a->kind == b->kind && a->block_size == b->block_size &&
	       a->page_bytes == b->page_bytes && a->window == b->window &&
	       a->chunk == b->chunk;
}

static kv_err
sz_specs(const struct cat_model *m, struct sz_result *r, char *why,
	 size_t wl)
{
	for (uint32_t i = 0; i < m->num_layers; i++) {
		const struct cat_layer *l = &m->layer[i];
		const struct cat_mixer_ops *ops = cat_layer_mixer(l);
		struct kvc_spec s = { .block_size = r->block_size,
				      .nlayers = 1 };
		size_t k;

		if (ops->cls == CAT_MIXC_NONE)
			continue;
		s.kind = ops->spec;
		if (s.kind == KVC_SPEC_SLIDING) {
			s.window = l->window;
		} else if (s.kind == KVC_SPEC_CHUNKED) {
			s.chunk = l->window;
		} else if (s.kind == KVC_SPEC_STATE) {
			s.block_size = r->mamba_block_size;
			/* page_size_padded when a hybrid unified it */
			s.page_bytes = r->page_bytes ? r->page_bytes :
				       r->mamba_state_bytes;
		}
		if (s.kind != KVC_SPEC_STATE)
			s.page_bytes = r->attn_token_bytes * r->block_size;
		for (k = 0; k < r->nspec; k++)
			if (sz_spec_eq(&r->spec[k], &s))
				break;
		if (k < r->nspec) {
			r->spec[k].nlayers++;
		} else if (r->nspec == SZ_MAX_SPECS) {
			return cat_fail(why, wl, KV_ENOTSUP, "%s has more than "
					"%d kinds of KV cache layers", m->id,
					SZ_MAX_SPECS);
		} else {
			r->spec[r->nspec++] = s;
		}
	}
	if (r->nspec == 0)
		return cat_fail(why, wl, KV_ENOTSUP, "%s is attention-free: it "
				"has no KV cache to size", m->id);
	return KV_OK;
}

/*
 * A speculative drafter's attention layers (e->spec_kv_layers): vLLM v1
 * gives them KV cache specs of their own in the same KV cache config
 * (gpu_model_runner.get_kv_cache_spec walks the drafter's attention layers
 * too); of the target's shape, they join its full-attention spec, so a
 * block holds more bytes and the budget fewer blocks.  Hybrid targets are
 * not sized with a drafter yet.
 */
static kv_err
sz_spec_layers(const struct cat_model *m, const struct sz_engine *e,
	       struct sz_result *r, char *why, size_t wl)
{
	if (e->spec_kv_layers == 0)
		return KV_OK;
	if (r->nspec != 1 || r->spec[0].kind != KVC_SPEC_FULL)
		return cat_fail(why, wl, KV_ENOTSUP, "%s: speculative decoding "
				"is sized for models of full attention only",
				m->id);
	r->spec[0].nlayers += e->spec_kv_layers;
	return KV_OK;
}

/*
 * get_kv_cache_groups: one group when every layer has the same spec;
 * otherwise unify the page sizes (unify_kv_cache_spec_page_size) and split
 * each spec's layers into groups of group_size layers
 * (_get_kv_cache_groups_uniform_page_size).
 */
static kv_err
sz_groups(const struct cat_model *m, struct sz_result *r, char *why,
	  size_t wl)
{
	struct kvc_spec u[SZ_MAX_SPECS];
	uint64_t maxpage = 0;
	uint32_t mn = UINT32_MAX, mx = 0, gs;

	memcpy(u, r->spec, sizeof(u));
	if (r->nspec == 1) {
		r->group[0] = u[0];
		r->ngroup = 1;
		r->layers_per_group = u[0].nlayers;
		r->page_bytes = u[0].page_bytes;
		return KV_OK;
	}
	for (size_t k = 0; k < r->nspec; k++)
		if (u[k].page_bytes > maxpage)
			maxpage = u[k].page_bytes;
	for (size_t k = 0; k < r->nspec; k++) {
		if (u[k].page_bytes == maxpage)
			continue;
		if (u[k].kind == KVC_SPEC_STATE ||
		    maxpage % u[k].page_bytes != 0)
			return cat_fail(why, wl, KV_ENOTSUP, "%s: The page "
					"size of the layer is not divisible by "
					"the maximum page size. Cannot unify "
					"by adjusting block_size.", m->id);
		u[k].block_size *= (uint32_t)(maxpage / u[k].page_bytes);
		u[k].page_bytes = maxpage;
	}
	for (size_t k = 0; k < r->nspec; k++) {
		if (u[k].nlayers < mn)
			mn = u[k].nlayers;
		if (u[k].nlayers > mx)
			mx = u[k].nlayers;
	}
	/* n:1 patterns group by the "1"; near-equal counts by the larger
	 * (gpt-oss + eagle: 12 sw + 13 full) */
	gs = (double)mx < (double)mn * 1.25 ? mx : mn;
	r->ngroup = 0;
	r->layers_per_group = 0;
	for (size_t k = 0; k < r->nspec; k++) {
		uint32_t n = u[k].nlayers, pad = gs - n % gs;
		uint32_t ng = (n + gs - 1) / gs;

		if (pad != gs) {
			r->padding_layers += pad;
			sz_log(r, "Add %u padding layers, may waste at most "
			       "%.2f%% KV cache memory", pad,
			       100.0 * pad / n);
		}
		for (uint32_t j = 0; j < ng; j++) {
			struct kvc_spec g = u[k];

			if (r->ngroup == SZ_MAX_GROUPS)
				return cat_fail(why, wl, KV_ENOTSUP, "%s needs "
						"more than %d KV cache groups",
						m->id, SZ_MAX_GROUPS);
			/* layers[j::ng] */
			g.nlayers = n / ng + (j < n % ng);
			if (g.nlayers > r->layers_per_group)
				r->layers_per_group = g.nlayers;
			r->group[r->ngroup++] = g;
		}
	}
	r->page_bytes = maxpage;
	return KV_OK;
}

/* ---- memory ------------------------------------------------------------ */

/* false when the weights alone do not fit (vLLM dies loading them) */
static bool
sz_memory(const struct cat_model *m, const struct sz_engine *e,
	  struct sz_result *r)
{
	uint32_t wb = m->weight_bytes;
	double nonkv;

	/* --quantization fp8 quantizes a 16-bit checkpoint's weights to
	 * one byte as vLLM loads them; the KV cache keeps its own dtype */
	if (strcmp(e->quantization, "fp8") == 0)
		wb = 1;
	else if (wb != 1 && e->dtype[0] != '\0' &&
		 strcmp(e->dtype, "auto") != 0)
		wb = r->dtype_bytes;
	else if (wb == 4)
		wb = r->dtype_bytes;
	r->weight_bytes = wb;
	r->requested_bytes = (double)r->total_bytes *
			     e->gpu_memory_utilization;
	r->weights_bytes = e->weights_bytes >= 0 ?
			   (uint64_t)e->weights_bytes :
			   sz_weights_bytes(m, r->tp, wb, r->dtype_bytes,
					    m->max_model_len) + e->lora_bytes +
			   e->spec_weights_bytes;
	/* --cpu-offload-gb: that much of the weights stays in CPU memory */
	if (e->cpu_offload_gb > 0) {
		double off = e->cpu_offload_gb * GIB;

		r->offload_bytes = off >= (double)r->weights_bytes ?
				   r->weights_bytes : (uint64_t)off;
		r->weights_bytes -= r->offload_bytes;
	}
	if (r->weights_bytes > r->total_bytes)
		return false;
	r->weights_fit = true;
	sz_log(r, "Model loading took %.4f GiB",
	       (double)r->weights_bytes / GIB);
	if (e->kv_cache_memory_bytes >= 0) {
		r->kv_memory_given = true;
		r->available_bytes = e->kv_cache_memory_bytes;
		sz_log(r, "Initial free memory %.2f GiB, reserved %.2f GiB "
		       "memory for KV Cache as specified by "
		       "kv_cache_memory_bytes config and skipped memory "
		       "profiling. This does not respect the "
		       "gpu_memory_utilization config.",
		       (double)r->total_bytes / GIB,
		       (double)r->available_bytes / GIB);
		return true;
	}
	r->activation_bytes = e->activation_bytes >= 0 ?
			      (uint64_t)e->activation_bytes :
			      sz_activation_bytes(m, r->tp, r->dtype_bytes,
						  r->max_num_batched_tokens,
						  r->max_num_seqs);
	r->non_torch_bytes = e->non_torch_bytes >= 0 ?
			     (uint64_t)e->non_torch_bytes :
			     sz_non_torch_bytes(r->tp);
	r->cudagraph_bytes = e->cudagraph_bytes >= 0 ?
			     (uint64_t)e->cudagraph_bytes : 0;
	nonkv = (double)r->weights_bytes + (double)r->activation_bytes +
		(double)r->non_torch_bytes + (double)r->cudagraph_bytes;
	/* Python int(): truncation toward zero */
	r->available_bytes = (int64_t)(r->requested_bytes - nonkv);
	sz_log(r, "Available KV cache memory: %.2f GiB",
	       (double)r->available_bytes / GIB);
	return true;
}

/* ---- the whole start-up ------------------------------------------------ */

kv_err
sz__compute_one(const struct cat_model *m, const struct cat_gpu *g,
		const struct sz_engine *e, struct sz_result *r, char *why,
		size_t whylen)
{
	char a[32], b[32];
	kv_err rc;

	memset(r, 0, sizeof(*r));
	if (whylen > 0)
		why[0] = '\0';
	if ((rc = sz_settings(m, g, e, r, why, whylen)) ||
	    (rc = sz_pages(m, g, e, r, why, whylen)) ||
	    (rc = sz_specs(m, r, why, whylen)) ||
	    (rc = sz_spec_layers(m, e, r, why, whylen)))
		return rc;
	r->lim.max_model_len = r->max_model_len;
	r->lim.max_num_batched_tokens = r->max_num_batched_tokens;
	if (!sz_memory(m, e, r)) {
		/* vLLM dies loading the model, before any sizing; what one
		 * request would need is still known */
		r->fits = false;
		r->needed_bytes = kvc_request_bytes(r->spec, r->nspec,
						    &r->lim);
		snprintf(r->error, sizeof(r->error), "CUDA out of memory while "
			 "loading the model: its weights take %.2f GiB per "
			 "GPU, the GPU has %.2f GiB (kvsim: try a larger "
			 "--tensor-parallel-size)",
			 (double)r->weights_bytes / GIB,
			 (double)r->total_bytes / GIB);
		return KV_OK;
	}

	/* check_enough_kv_cache_memory, over the layers' own specs */
	if (kvc_check_enough(r->spec, r->nspec, &r->lim, r->available_bytes,
			     &r->needed_bytes, &r->max_len_fit) != KV_OK) {
		r->fits = false;
		if (r->available_bytes <= 0) {
			snprintf(r->error, sizeof(r->error), "No available "
				 "memory for the cache blocks. Try increasing "
				 "`gpu_memory_utilization` when initializing "
				 "the engine. %s", sz_docs_link);
		} else {
			char est[128] = "";

			if (r->max_len_fit > 0)
				snprintf(est, sizeof(est), "Based on the "
					 "available memory, the estimated "
					 "maximum model length is %llu. ",
					 (unsigned long long)r->max_len_fit);
			snprintf(r->error, sizeof(r->error), "To serve at "
				 "least one request with the models's max seq "
				 "len (%llu), (%.2f GiB KV cache is needed, "
				 "which is larger than the available KV cache "
				 "memory (%.2f GiB). %sTry increasing "
				 "`gpu_memory_utilization` or decreasing "
				 "`max_model_len` when initializing the "
				 "engine. %s",
				 (unsigned long long)r->max_model_len,
				 (double)r->needed_bytes / GIB,
				 (double)r->available_bytes / GIB, est,
				 sz_docs_link);
		}
		return KV_OK;
	}
	r->fits = true;
	if ((rc = sz_groups(m, r, why, whylen)))
		return rc;
	r->num_blocks_computed = kvc_blocks_for_budget(
		(uint64_t)r->available_bytes, r->page_bytes,
		r->layers_per_group);
	r->num_blocks = r->num_blocks_computed;
	if (e->num_gpu_blocks_override >= 0) {
		sz_log(r, "Overriding num_gpu_blocks=%llu with "
		       "num_gpu_blocks_override=%lld",
		       (unsigned long long)r->num_blocks_computed,
		       (long long)e->num_gpu_blocks_override);
		r->num_blocks = (uint64_t)e->num_gpu_blocks_override;
	}
	r->blocks_per_request = kvc_blocks_per_request(r->group, r->ngroup,
						       &r->lim);
	r->cache_tokens = kvc_cache_tokens(r->num_blocks, r->group, r->ngroup);
	r->max_concurrency = kvc_max_concurrency(r->num_blocks, r->group,
						 r->ngroup, &r->lim);
	sz_commas(a, sizeof(a), r->cache_tokens);
	sz_log(r, "GPU KV cache size: %s tokens", a);
	sz_commas(b, sizeof(b), r->max_model_len);
	sz_log(r, "Maximum concurrency for %s tokens per request: %.2fx", b,
	       r->max_concurrency);
	return KV_OK;
}
