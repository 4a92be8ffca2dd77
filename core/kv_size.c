/*
 * kv_size.c -- block-aligned KV-cache sizing arithmetic (kvsize.h).
 *
 * Every figure is a whole number of blocks times a page, the same
 * arithmetic the allocator uses (seed bug 2); the sources of each formula
 * are in kvsize.h.  Saturating uint64 arithmetic: a nonsense configuration
 * gives a huge number that fails every budget, never a wrapped small one
 * that passes.
 */
#include "kvsize.h"

#include <stdint.h>

static uint64_t
kv__mul(uint64_t a, uint64_t b)
{
	if (a != 0 && b > UINT64_MAX / a)
		return UINT64_MAX;
	return a * b;
}

static uint64_t
kv__add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t
kv__min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* cdiv without overflow at the top and 0 for a zero divisor. */
static uint64_t
kv__cdiv(uint64_t a, uint64_t b)
{
	if (b == 0)
		return 0;
	return a / b + (a % b != 0);
}

static uint64_t
kv__gcd(uint64_t a, uint64_t b)
{
	while (b != 0) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* ---- pages ---------------------------------------------------------- */

uint64_t
kvc_page_bytes(uint32_t kv_heads, uint32_t head_size, uint32_t dtype_bytes,
	       uint32_t block_size, bool mla)
{
	uint64_t b = kv__mul((uint64_t)block_size, kv_heads);

	b = kv__mul(b, kv__mul(head_size, dtype_bytes));
	return mla ? b : kv__mul(b, 2);
}

uint64_t
kvc_page_bytes_fp8_ds_mla(uint32_t block_size)
{
	return (uint64_t)block_size * KVC_FP8_DS_MLA_TOKEN_BYTES;
}

uint64_t
kvc_mamba2_state_bytes(uint32_t d_conv, uint32_t d_inner, uint32_t n_groups,
		       uint32_t d_state, uint32_t n_heads, uint32_t head_dim,
		       uint32_t conv_bytes, uint32_t ssm_bytes)
{
	uint64_t conv_dim = kv__add(d_inner,
				    kv__mul(2 * (uint64_t)n_groups, d_state));
	uint64_t conv = kv__mul(d_conv ? d_conv - 1 : 0, conv_dim);
	uint64_t ssm = kv__mul(kv__mul(n_heads, head_dim), d_state);

	return kv__add(kv__mul(conv, conv_bytes), kv__mul(ssm, ssm_bytes));
}

uint64_t
kvc_mamba1_state_bytes(uint32_t d_conv, uint32_t d_inner, uint32_t d_state,
		       uint32_t conv_bytes, uint32_t ssm_bytes)
{
	uint64_t conv = kv__mul(d_conv ? d_conv - 1 : 0, d_inner);
	uint64_t ssm = kv__mul(d_inner, d_state);

	return kv__add(kv__mul(conv, conv_bytes), kv__mul(ssm, ssm_bytes));
}

uint64_t
kvc_gdn_state_bytes(uint32_t conv_kernel, uint32_t key_heads, uint32_t key_dim,
		    uint32_t value_heads, uint32_t value_dim,
		    uint32_t conv_bytes, uint32_t ssm_bytes)
{
	uint64_t conv_dim = kv__add(kv__mul(2 * (uint64_t)key_heads, key_dim),
				    kv__mul(value_heads, value_dim));
	uint64_t conv = kv__mul(conv_kernel ? conv_kernel - 1 : 0, conv_dim);
	uint64_t ssm = kv__mul(kv__mul(value_heads, key_dim), value_dim);

	return kv__add(kv__mul(conv, conv_bytes), kv__mul(ssm, ssm_bytes));
}

/* ---- one sequence --------------------------------------------------- */

uint64_t
kvc_seq_bytes(uint32_t layers, uint32_t kv_heads, uint32_t head_size,
	      uint32_t dtype_bytes, uint64_t max_model_len, uint32_t block_size)
{
	uint64_t blocks = kvc_worst_blocks_full(max_model_len, block_size);
	uint64_t page = kvc_page_bytes(kv_heads, head_size, dtype_bytes,
				       block_size, false);

	return kv__mul(layers, kv__mul(blocks, page));
}

/* ---- worst case per layer ------------------------------------------- */

uint64_t
kvc_worst_blocks_full(uint64_t max_model_len, uint32_t bs)
{
	return kv__cdiv(max_model_len, bs);
}

uint64_t
kvc_worst_blocks_sliding(uint32_t window, uint64_t max_model_len,
			 uint64_t batched, uint32_t bs)
{
	uint64_t tokens;

	if (bs == 0)
		return 0;
	tokens = kv__min(kv__add(window ? window - 1 : 0, batched),
			 max_model_len);
	return kv__cdiv(tokens, bs) + 1;
}

uint64_t
kvc_worst_blocks_chunked(uint32_t chunk, uint64_t max_model_len,
			 uint64_t batched, uint32_t bs)
{
	return kv__cdiv(kv__min(kv__add(chunk, batched), max_model_len), bs);
}

uint64_t
kvc_worst_blocks_state(uint64_t max_model_len, uint32_t bs)
{
	return bs == 0 ? 1 : kv__cdiv(max_model_len, bs);
}

uint64_t
kvc_worst_blocks_cross(uint64_t max_encoder_len, uint32_t bs)
{
	return kv__cdiv(max_encoder_len, bs);
}

uint64_t
kvc_worst_blocks(const struct kvc_spec *s, const struct kvc_limits *lim)
{
	switch (s->kind) {
	case KVC_SPEC_FULL:
		return kvc_worst_blocks_full(lim->max_model_len,
					     s->block_size);
	case KVC_SPEC_SLIDING:
		return kvc_worst_blocks_sliding(s->window, lim->max_model_len,
						lim->max_num_batched_tokens,
						s->block_size);
	case KVC_SPEC_CHUNKED:
		return kvc_worst_blocks_chunked(s->chunk, lim->max_model_len,
						lim->max_num_batched_tokens,
						s->block_size);
	case KVC_SPEC_STATE:
		return kvc_worst_blocks_state(lim->max_model_len,
					      s->block_size);
	case KVC_SPEC_CROSS:
		return kvc_worst_blocks_cross(lim->max_encoder_len,
					      s->block_size);
	case KVC_SPEC_ENCODER_ONLY:
		return 0;
	}
	return 0;
}

uint64_t
kvc_worst_bytes(const struct kvc_spec *s, const struct kvc_limits *lim)
{
	return kv__mul(kvc_worst_blocks(s, lim), s->page_bytes);
}

uint64_t
kvc_request_bytes(const struct kvc_spec *specs, size_t n,
		  const struct kvc_limits *lim)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++)
		sum = kv__add(sum, kv__mul(specs[i].nlayers,
					   kvc_worst_bytes(&specs[i], lim)));
	return sum;
}

/* ---- budgets, concurrency, log lines --------------------------------- */

uint64_t
kvc_blocks_for_budget(uint64_t bytes, uint64_t page_bytes,
		      uint32_t layers_per_group)
{
	if (page_bytes == 0 || layers_per_group == 0)
		return 0;
	return bytes / page_bytes / layers_per_group;
}

static uint32_t
kv__layers_per_group(const struct kvc_spec *groups, size_t ngroups)
{
	uint32_t l = 0;

	for (size_t i = 0; i < ngroups; i++)
		if (groups[i].nlayers > l)
			l = groups[i].nlayers;
	return l;
}

uint64_t
kvc_blocks_per_request(const struct kvc_spec *groups, size_t ngroups,
		       const struct kvc_limits *lim)
{
	uint64_t lpg, worst = 0;

	if (ngroups == 0)
		return 0;
	lpg = kv__layers_per_group(groups, ngroups);
	for (size_t i = 0; i < ngroups; i++)
		worst = kv__add(worst, kvc_worst_bytes(&groups[i], lim));
	return kv__cdiv(kv__mul(lpg, worst), kv__mul(groups[0].page_bytes,
						     lpg));
}

double
kvc_max_concurrency(uint64_t num_blocks, const struct kvc_spec *groups,
		    size_t ngroups, const struct kvc_limits *lim)
{
	uint64_t per = kvc_blocks_per_request(groups, ngroups, lim);

	return per == 0 ? 0.0 : (double)num_blocks / (double)per;
}

uint64_t
kvc_cache_tokens(uint64_t num_blocks, const struct kvc_spec *groups,
		 size_t ngroups)
{
	uint32_t min_bs = UINT32_MAX;

	if (ngroups == 0)
		return 0;
	for (size_t i = 0; i < ngroups; i++)
		if (groups[i].block_size < min_bs)
			min_bs = groups[i].block_size;
	return kv__mul(num_blocks / ngroups, min_bs);
}

/* ---- start-up check ------------------------------------------------- */

static bool
kv__fits(const struct kvc_spec *specs, size_t n, const struct kvc_limits *lim,
	 uint64_t model_len, uint64_t available)
{
	struct kvc_limits l = *lim;

	l.max_model_len = model_len;
	return kvc_request_bytes(specs, n, &l) <= available;
}

uint64_t
kvc_estimate_max_model_len(const struct kvc_spec *specs, size_t n,
			   const struct kvc_limits *lim, int64_t available)
{
	uint64_t left = 1, right = lim->max_model_len, result = 1;

	if (available <= 0 || right == 0 || !kv__fits(specs, n, lim, left,
					(uint64_t)available))
		return 0;
	while (left <= right) {
		uint64_t mid = left + (right - left) / 2;

		if (kv__fits(specs, n, lim, mid, (uint64_t)available)) {
			result = mid;
			left = mid + 1;
		} else {
			right = mid - 1;
		}
	}
	return result;
}

kv_err
kvc_check_enough(const struct kvc_spec *specs, size_t n,
		 const struct kvc_limits *lim, int64_t available,
		 uint64_t *needed, uint64_t *max_len)
{
	uint64_t need = kvc_request_bytes(specs, n, lim);

	if (needed != NULL)
		*needed = need;
	if (max_len != NULL)
		*max_len = lim->max_model_len;
	if (n == 0)
		return KV_OK;
	if (available > 0 && need <= (uint64_t)available)
		return KV_OK;
	if (max_len != NULL)
		*max_len = kvc_estimate_max_model_len(specs, n, lim,
						      available);
	return KV_ENOSPC;
}

/* ---- hybrid page unification ---------------------------------------- */

kv_err
kvc_hybrid_unify(const struct kvc_hybrid *h, struct kvc_hybrid_result *r)
{
	struct kvc_hybrid_result o = { .block_size = h->block_size };
	uint64_t unit, bs;

	if (h->attn_token_bytes == 0 || h->align == 0 ||
	    (h->prefix_caching && h->mamba_chunk == 0))
		return KV_EINVAL;
	if (h->mamba_page_bytes != 0) {
		unit = h->align;
		if (h->prefix_caching)
			unit = kv__mul(h->mamba_chunk /
				       kv__gcd(h->mamba_chunk, h->align),
				       h->align);	/* lcm */
		/* u * cdiv(m, u * a) == u * cdiv(cdiv(m, a), u) */
		bs = kv__mul(unit, kv__cdiv(kv__cdiv(h->mamba_page_bytes,
						     h->attn_token_bytes),
					    unit));
		if (bs > UINT32_MAX)
			return KV_EINVAL;
		if (h->prefix_caching)
			o.mamba_block_size = (uint32_t)bs;
		if (h->block_size == 0 || h->block_size < bs) {
			o.block_size = (uint32_t)bs;
			o.overridden = true;
		}
	}
	o.page_bytes = kv__mul(o.block_size, h->attn_token_bytes);
	if (h->mamba_page_bytes != 0)
		o.mamba_padding = o.page_bytes - h->mamba_page_bytes;
	*r = o;
	return KV_OK;
}
