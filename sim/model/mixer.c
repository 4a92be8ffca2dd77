/*
 * mixer.c -- the table of token-mixer kinds (mixer.h): one row per enum
 * cat_mixer value, each with the hooks of its kind.
 *
 * Invariant: cat_mixer_ops(k) is a complete row for every k below
 * CAT_NMIXERS (name, key, letter; params and activations always; kv_bytes
 * and work for attention; state_bytes for recurrent kinds; cost for every
 * kind that is not NONE).  tests/check_catalog.c checks it.
 *
 * The formulas were the per-kind branches of the catalog's parameter
 * count, the KV sizing and the cost model; their floating-point
 * expressions are kept term for term, since the outputs are compared
 * byte for byte.  Sources: docs/catalog.md (parameters, state shapes),
 * docs/cost-model.md (FLOPs and bytes).
 */
#include "config.h"

#include "sim/model/mixer.h"

#include <stdio.h>
#include <string.h>

/*
 * Mamba / linear-attention scan: per state element and token, the update
 * h = a*h + b*x (about 4 FLOPs with the input product) and the read-out
 * y = C*h (2): 6.  Our derivation; small next to the projections.
 */
#define SCAN_FLOPS_PER_ELEM 6.0

static uint32_t
mx_div_at_least_one(uint32_t a, uint32_t tp)
{
	return a / tp > 0 ? a / tp : 1;
}

/* ---- attention pairs ---------------------------------------------------- */

/* sum of x for x = a..b (a <= b) */
static uint64_t
mx_sum_range(uint64_t a, uint64_t b)
{
	uint64_t n = b - a + 1, s = a + b;

	/* one of n, s is even */
	return n % 2 == 0 ? cat_sat_mul(n / 2, s) : cat_sat_mul(n, s / 2);
}

/* Keys seen by the q tokens at positions c..c+q-1, causal, full. */
static uint64_t
mx_pairs_full(uint64_t c, uint64_t q)
{
	return mx_sum_range(c + 1, c + q);
}

/* ... with a window of w keys: sum of min(w, p + 1). */
static uint64_t
mx_pairs_window(uint64_t c, uint64_t q, uint64_t w)
{
	uint64_t a = c + 1, b = c + q;

	if (w == 0 || b <= w)
		return mx_sum_range(a, b);
	if (a >= w)
		return cat_sat_mul(w, q);
	return cat_sat_add(mx_sum_range(a, w), cat_sat_mul(w, b - w));
}

/* chunked local attention: position p sees (p mod n) + 1 keys; the sum
 * over p < x */
static uint64_t
mx_chunk_prefix(uint64_t x, uint64_t n)
{
	uint64_t r = x % n;

	return cat_sat_add(cat_sat_mul(x / n, n * (n + 1) / 2),
			   r * (r + 1) / 2);
}

static uint64_t
mx_pairs_chunked(uint64_t c, uint64_t q, uint64_t n)
{
	if (n == 0)
		return mx_pairs_full(c, q);
	return mx_chunk_prefix(c + q, n) - mx_chunk_prefix(c, n);
}

/* KV tokens of one layer a sequence touches: `read` (the context it sees
 * and the new tokens) plus the new tokens written. */
static void
mx_add_kvtok(struct cat_mixer_work *out, uint64_t read, uint64_t q)
{
	out->kvtok = cat_sat_add(out->kvtok, cat_sat_add(read, q));
}

/*
 * A recurrent layer's figures on one of tp ranks: its whole state (st
 * bytes) split over the ranks, and SCAN_FLOPS_PER_ELEM a token for each
 * element of an a x b x c state (c = 1 for a two-factor state).  The
 * products run left to right, as the docs' formulas read.
 */
static void
mx_state_cost(struct cat_mixer_cost *out, uint32_t tp, uint64_t st,
	      double a, double b, double c)
{
	out->state_bytes = (double)st / tp;
	out->state_flops = SCAN_FLOPS_PER_ELEM * a * b * c / tp;
}

/* ---- no mixer ----------------------------------------------------------- */

static uint64_t
none_params(const struct cat_model *m)
{
	(void)m;
	return 0;
}

static void
none_activations(const struct cat_model *m, double *rep, double *shard)
{
	(void)m;
	(void)rep;
	(void)shard;
}

/* ---- attention with KV heads: full, sliding window, chunked ------------ */

static uint64_t
attn_params(const struct cat_model *m)
{
	const uint64_t h = m->hidden_size;
	uint64_t q = (uint64_t)m->num_heads * m->head_dim;
	uint64_t kv = (uint64_t)m->num_kv_heads * m->head_dim;
	uint64_t mix;

	mix = h * q * (m->attn_output_gate ? 2 : 1) + 2 * h * kv + q * h;
	if (m->attention_bias)
		mix += q + 2 * kv;
	if (m->qk_norm)
		mix += 2 * (uint64_t)m->head_dim;
	return mix;
}

static void
attn_activations(const struct cat_model *m, double *rep, double *shard)
{
	const double h = m->hidden_size;
	double q = (double)m->num_heads * m->head_dim;
	double kv = (double)m->num_kv_heads * m->head_dim;

	*rep += 5 * h;
	*shard += q * (m->attn_output_gate ? 3 : 2) + 2 * kv;
}

static uint64_t
attn_kv_bytes(const struct cat_model *m, uint32_t tp, uint32_t dtype_bytes,
	      uint32_t tokens)
{
	return kvc_page_bytes(mx_div_at_least_one(m->num_kv_heads, tp),
			      m->head_dim, dtype_bytes, tokens, false);
}

static kv_err
attn_cost(const struct cat_model *m, const struct cat_mixer_dims *d,
	  struct cat_mixer_cost *out, char *why, size_t whylen)
{
	double nh = (double)m->num_heads / d->tp;
	uint32_t vhd = m->v_head_dim ? m->v_head_dim : m->head_dim;

	if (m->num_kv_heads == 0 || m->head_dim == 0)
		return cat_fail(why, whylen, KV_EINVAL, "attention layers "
				"need num_key_value_heads and head_dim");
	out->token_bytes = (double)attn_kv_bytes(m, d->tp, d->kv_dtype_bytes,
						 1);
	out->pair_flops = 2.0 * nh * ((double)m->head_dim + vhd);
	return KV_OK;
}

static inline void
full_one(const struct cat_mixer_cost *c, uint32_t w, uint64_t ctx,
	 uint64_t q, struct cat_mixer_work *out)
{
	(void)c;
	(void)w;
	/* a decode sees ctx + 1 keys: mx_pairs_full() without the product,
	 * exact below 2^62 */
	out->pairs = cat_sat_add(out->pairs, q == 1 && ctx < (1ull << 62) ?
				 ctx + 1 : mx_pairs_full(ctx, q));
	mx_add_kvtok(out, ctx + q, q);
}

static void
full_work(const struct cat_mixer_cost *c, uint32_t w,
	  const struct cat_mixer_seq *s, size_t n,
	  struct cat_mixer_work *out)
{
	for (size_t i = 0; i < n; i++)
		if (s[i].q > 0)
			full_one(c, w, s[i].ctx, s[i].q, out);
}

static inline void
sliding_one(const struct cat_mixer_cost *c, uint32_t w, uint64_t ctx,
	    uint64_t q, struct cat_mixer_work *out)
{
	uint64_t read = ctx + q;

	(void)c;
	out->pairs = cat_sat_add(out->pairs, mx_pairs_window(ctx, q, w));
	if (w > 0 && read > w - 1 + q)
		read = w - 1 + q;
	mx_add_kvtok(out, read, q);
}

static void
sliding_work(const struct cat_mixer_cost *c, uint32_t w,
	     const struct cat_mixer_seq *s, size_t n,
	     struct cat_mixer_work *out)
{
	for (size_t i = 0; i < n; i++)
		if (s[i].q > 0)
			sliding_one(c, w, s[i].ctx, s[i].q, out);
}

static inline void
chunked_one(const struct cat_mixer_cost *c, uint32_t w, uint64_t ctx,
	    uint64_t q, struct cat_mixer_work *out)
{
	uint64_t read = ctx + q;

	(void)c;
	out->pairs = cat_sat_add(out->pairs, mx_pairs_chunked(ctx, q, w));
	if (w > 0 && read > ctx % w + q)
		read = ctx % w + q;
	mx_add_kvtok(out, read, q);
}

static void
chunked_work(const struct cat_mixer_cost *c, uint32_t w,
	     const struct cat_mixer_seq *s, size_t n,
	     struct cat_mixer_work *out)
{
	for (size_t i = 0; i < n; i++)
		if (s[i].q > 0)
			chunked_one(c, w, s[i].ctx, s[i].q, out);
}

/* ---- multi-head latent attention (DeepSeek) ---------------------------- */

static uint64_t
mla_params(const struct cat_model *m)
{
	const uint64_t h = m->hidden_size;
	uint64_t qk = (uint64_t)m->qk_nope_head_dim + m->qk_rope_head_dim;
	uint64_t nh = m->num_heads;
	uint64_t mix;

	if (m->q_lora_rank > 0)
		mix = h * m->q_lora_rank + m->q_lora_rank +
		      (uint64_t)m->q_lora_rank * nh * qk;
	else
		mix = h * nh * qk;
	mix += h * ((uint64_t)m->kv_lora_rank + m->qk_rope_head_dim) +
	       m->kv_lora_rank;
	mix += (uint64_t)m->kv_lora_rank * nh *
	       ((uint64_t)m->qk_nope_head_dim + m->v_head_dim);
	mix += nh * m->v_head_dim * h;
	return mix;
}

static void
mla_activations(const struct cat_model *m, double *rep, double *shard)
{
	const double h = m->hidden_size;

	*rep += 5 * h + 2.0 * m->q_lora_rank + m->kv_lora_rank +
		m->qk_rope_head_dim;
	*shard += (double)m->num_heads *
		  ((double)m->qk_nope_head_dim + m->qk_rope_head_dim +
		   m->v_head_dim);
}

/* the latent is replicated on every rank: tp does not divide it */
static uint64_t
mla_kv_bytes(const struct cat_model *m, uint32_t tp, uint32_t dtype_bytes,
	     uint32_t tokens)
{
	(void)tp;
	return kvc_page_bytes(1, m->kv_lora_rank + m->qk_rope_head_dim,
			      dtype_bytes, tokens, true);
}

static kv_err
mla_cost(const struct cat_model *m, const struct cat_mixer_dims *d,
	 struct cat_mixer_cost *out, char *why, size_t whylen)
{
	double nh = (double)m->num_heads / d->tp;
	double r = m->kv_lora_rank, rope = m->qk_rope_head_dim;
	double nope = m->qk_nope_head_dim, v = m->v_head_dim;

	if (m->kv_lora_rank == 0)
		return cat_fail(why, whylen, KV_EINVAL,
				"MLA layers need kv_lora_rank");
	out->token_bytes = (double)mla_kv_bytes(m, d->tp, d->kv_dtype_bytes,
						1);
	out->pair_flops = 2.0 * nh * (r + rope) + 2.0 * nh * r;
	out->pair_flops_pf = 2.0 * nh * (nope + rope + v);
	out->ctx_flops_pf = 2.0 * r * nh * (nope + v);
	return KV_OK;
}

/*
 * MLA has two ways to attend (vllm/v1/attention/backends/mla/common.py):
 * the absorbed, data-movement friendly "decode" path and the expanded,
 * compute friendly "prefill" path, which first up-projects the context's
 * latents.  vLLM picks by query length (reorder_batch_threshold: 1 in
 * MLACommonMetadataBuilder, 128 for FlashMLA, a value marked untuned
 * there); we charge each sequence the cheaper of the two, which lands near
 * that threshold
 * (absorbed wins below q ~ 171 for DeepSeek-V3) and keeps the cost
 * non-decreasing in q and ctx (a minimum of non-decreasing functions).
 */
static inline void
mla_one(const struct cat_mixer_cost *c, uint32_t w, uint64_t ctx,
	uint64_t q, struct cat_mixer_work *out)
{
	uint64_t p = mx_pairs_full(ctx, q);

	(void)w;
	if ((double)p * c->pair_flops <=
	    (double)p * c->pair_flops_pf + (double)ctx * c->ctx_flops_pf) {
		out->pairs = cat_sat_add(out->pairs, p);
	} else {
		out->pairs_pf = cat_sat_add(out->pairs_pf, p);
		out->ctx_pf = cat_sat_add(out->ctx_pf, ctx);
	}
	mx_add_kvtok(out, ctx + q, q);
}

static void
mla_work(const struct cat_mixer_cost *c, uint32_t w,
	 const struct cat_mixer_seq *s, size_t n,
	 struct cat_mixer_work *out)
{
	for (size_t i = 0; i < n; i++)
		if (s[i].q > 0)
			mla_one(c, w, s[i].ctx, s[i].q, out);
}

/* ---- Mamba-1 (Jamba) ---------------------------------------------------- */

static uint64_t
mamba1_params(const struct cat_model *m)
{
	const uint64_t h = m->hidden_size;
	const struct cat_ssm *s = &m->ssm;
	uint64_t di = s->d_inner;
	uint64_t mix;

	mix = h * 2 * di + di * s->d_conv + di +
	      di * ((uint64_t)s->dt_rank + 2 * s->d_state) +
	      (uint64_t)s->dt_rank * di + di +
	      di * s->d_state + di + di * h;
	if (strcmp(m->model_type, "jamba") == 0)
		mix += s->dt_rank + 2 * (uint64_t)s->d_state;
	return mix;
}

static void
mamba1_activations(const struct cat_model *m, double *rep, double *shard)
{
	const double h = m->hidden_size;

	*rep += 5 * h;
	*shard += 3.0 * m->ssm.d_inner;
}

static kv_err
mamba1_state_bytes(const struct cat_model *m, uint32_t tp, uint32_t conv_b,
		   uint32_t ssm_b, uint64_t *out, char *why, size_t whylen)
{
	const struct cat_ssm *s = &m->ssm;

	if (s->d_inner % tp)
		return cat_fail(why, whylen, KV_EINVAL, "Mamba inner size %u "
				"is not divisible by tensor parallel size %u",
				s->d_inner, tp);
	*out = kvc_mamba1_state_bytes(s->d_conv, s->d_inner / tp, s->d_state,
				      conv_b, ssm_b);
	return KV_OK;
}

static kv_err
mamba1_cost(const struct cat_model *m, const struct cat_mixer_dims *d,
	    struct cat_mixer_cost *out, char *why, size_t whylen)
{
	const struct cat_ssm *s = &m->ssm;

	(void)why;
	(void)whylen;
	mx_state_cost(out, d->tp,
		      kvc_mamba1_state_bytes(s->d_conv, s->d_inner, s->d_state,
					     d->dtype_bytes,
					     d->ssm_dtype_bytes),
		      s->d_inner, s->d_state, 1);
	return KV_OK;
}

/* ---- Mamba-2 (Granite-4.0-H, Nemotron-H) -------------------------------- */

static uint64_t
mamba2_params(const struct cat_model *m)
{
	const uint64_t h = m->hidden_size;
	const struct cat_ssm *s = &m->ssm;
	uint64_t conv = s->d_inner + 2 * (uint64_t)s->n_groups * s->d_state;

	return h * (s->d_inner + conv + s->n_heads) + conv * s->d_conv + conv +
	       3 * (uint64_t)s->n_heads + s->d_inner +
	       (uint64_t)s->d_inner * h;
}

static void
mamba2_activations(const struct cat_model *m, double *rep, double *shard)
{
	const double h = m->hidden_size;
	const struct cat_ssm *s = &m->ssm;

	*rep += 5 * h;
	*shard += 3.0 * s->d_inner + 2.0 * s->n_groups * s->d_state;
}

/* extra_groups_for_head_shards: groups are replicated so that each head
 * shard has its group */
static uint32_t
mamba2_extra_groups(uint32_t ngroups, uint32_t tp)
{
	return ngroups % tp == 0 ? 0 : tp - ngroups;
}

static kv_err
mamba2_state_bytes(const struct cat_model *m, uint32_t tp, uint32_t conv_b,
		   uint32_t ssm_b, uint64_t *out, char *why, size_t whylen)
{
	const struct cat_ssm *s = &m->ssm;
	uint32_t ng = s->n_groups;

	if (ng % tp != 0 && ng > tp)
		return cat_fail(why, whylen, KV_EINVAL, "Mamba n_groups %u "
				"cannot be sharded over tensor parallel size "
				"%u", ng, tp);
	ng += mamba2_extra_groups(ng, tp);
	if (s->n_heads % tp || s->d_inner % tp || ng % tp)
		return cat_fail(why, whylen, KV_EINVAL, "Mamba heads (%u) are "
				"not divisible by tensor parallel size %u",
				s->n_heads, tp);
	*out = kvc_mamba2_state_bytes(s->d_conv, s->d_inner / tp, ng / tp,
				      s->d_state, s->n_heads / tp, s->head_dim,
				      conv_b, ssm_b);
	return KV_OK;
}

static kv_err
mamba2_cost(const struct cat_model *m, const struct cat_mixer_dims *d,
	    struct cat_mixer_cost *out, char *why, size_t whylen)
{
	const struct cat_ssm *s = &m->ssm;

	(void)why;
	(void)whylen;
	mx_state_cost(out, d->tp,
		      kvc_mamba2_state_bytes(s->d_conv, s->d_inner,
					     s->n_groups, s->d_state,
					     s->n_heads, s->head_dim,
					     d->dtype_bytes,
					     d->ssm_dtype_bytes),
		      s->n_heads, s->head_dim, s->d_state);
	return KV_OK;
}

/* ---- Gated DeltaNet (Qwen3-Next) ---------------------------------------- */

static uint64_t
gdn_params(const struct cat_model *m)
{
	const uint64_t h = m->hidden_size;
	const struct cat_ssm *s = &m->ssm;
	uint64_t kd = (uint64_t)s->key_heads * s->key_dim;
	uint64_t vd = (uint64_t)s->value_heads * s->value_dim;

	return h * (2 * kd + 2 * vd) + h * 2 * s->value_heads +
	       (2 * kd + vd) * s->conv_kernel +
	       2 * (uint64_t)s->value_heads + s->value_dim + vd * h;
}

static void
gdn_activations(const struct cat_model *m, double *rep, double *shard)
{
	const double h = m->hidden_size;
	const struct cat_ssm *s = &m->ssm;

	*rep += 5 * h;
	*shard += 2.0 * s->key_heads * s->key_dim +
		  3.0 * s->value_heads * s->value_dim;
}

static kv_err
gdn_state_bytes(const struct cat_model *m, uint32_t tp, uint32_t conv_b,
		uint32_t ssm_b, uint64_t *out, char *why, size_t whylen)
{
	const struct cat_ssm *s = &m->ssm;

	(void)ssm_b;
	if (s->key_heads % tp || s->value_heads % tp)
		return cat_fail(why, whylen, KV_EINVAL, "linear attention "
				"heads (%u key, %u value) are not divisible "
				"by tensor parallel size %u", s->key_heads,
				s->value_heads, tp);
	/* gated_delta_net_state_dtype: both tensors in the mamba cache
	 * dtype */
	*out = kvc_gdn_state_bytes(s->conv_kernel, s->key_heads / tp,
				   s->key_dim, s->value_heads / tp,
				   s->value_dim, conv_b, conv_b);
	return KV_OK;
}

static kv_err
gdn_cost(const struct cat_model *m, const struct cat_mixer_dims *d,
	 struct cat_mixer_cost *out, char *why, size_t whylen)
{
	const struct cat_ssm *s = &m->ssm;

	(void)why;
	(void)whylen;
	mx_state_cost(out, d->tp,
		      kvc_gdn_state_bytes(s->conv_kernel, s->key_heads,
					  s->key_dim, s->value_heads,
					  s->value_dim, d->dtype_bytes,
					  d->ssm_dtype_bytes),
		      s->value_heads, s->key_dim, s->value_dim);
	return KV_OK;
}

/* ---- the table ---------------------------------------------------------- */

static const struct cat_mixer_ops mx_table[CAT_NMIXERS] = {
	[CAT_MIX_NONE] = {
		.name = "none", .key = "none", .letter = '-',
		.cls = CAT_MIXC_NONE,
		.params = none_params, .activations = none_activations,
	},
	[CAT_MIX_FULL] = {
		.name = "full attention", .key = "full", .letter = 'F',
		.cls = CAT_MIXC_ATTENTION, .spec = KVC_SPEC_FULL,
		.params = attn_params, .activations = attn_activations,
		.kv_bytes = attn_kv_bytes, .cost = attn_cost,
		.work = full_work,
	},
	[CAT_MIX_SLIDING] = {
		.name = "sliding window", .key = "sliding", .letter = 'S',
		.cls = CAT_MIXC_ATTENTION, .spec = KVC_SPEC_SLIDING,
		.windowed = true,
		.params = attn_params, .activations = attn_activations,
		.kv_bytes = attn_kv_bytes, .cost = attn_cost,
		.work = sliding_work,
	},
	[CAT_MIX_CHUNKED] = {
		.name = "chunked local attention", .key = "chunked",
		.letter = 'C',
		.cls = CAT_MIXC_ATTENTION, .spec = KVC_SPEC_CHUNKED,
		.windowed = true,
		.params = attn_params, .activations = attn_activations,
		.kv_bytes = attn_kv_bytes, .cost = attn_cost,
		.work = chunked_work,
	},
	[CAT_MIX_MLA] = {
		.name = "MLA", .key = "mla", .letter = 'L',
		.cls = CAT_MIXC_ATTENTION, .spec = KVC_SPEC_FULL,
		.latent = true,
		.params = mla_params, .activations = mla_activations,
		.kv_bytes = mla_kv_bytes, .cost = mla_cost, .work = mla_work,
	},
	[CAT_MIX_MAMBA1] = {
		.name = "Mamba-1", .key = "mamba1", .letter = 'm',
		.cls = CAT_MIXC_RECURRENT, .spec = KVC_SPEC_STATE,
		.params = mamba1_params, .activations = mamba1_activations,
		.state_bytes = mamba1_state_bytes, .cost = mamba1_cost,
	},
	[CAT_MIX_MAMBA2] = {
		.name = "Mamba-2", .key = "mamba2", .letter = 'M',
		.cls = CAT_MIXC_RECURRENT, .spec = KVC_SPEC_STATE,
		.prefix_caching = true,
		.params = mamba2_params, .activations = mamba2_activations,
		.state_bytes = mamba2_state_bytes, .cost = mamba2_cost,
	},
	[CAT_MIX_GDN] = {
		.name = "Gated DeltaNet", .key = "gdn", .letter = 'G',
		.cls = CAT_MIXC_RECURRENT, .spec = KVC_SPEC_STATE,
		.params = gdn_params, .activations = gdn_activations,
		.state_bytes = gdn_state_bytes, .cost = gdn_cost,
	},
};

const struct cat_mixer_ops *
cat_mixer_ops(enum cat_mixer k)
{
	return (unsigned)k < CAT_NMIXERS ? &mx_table[k] : NULL;
}
