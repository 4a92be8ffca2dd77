/*
 * check_size.c -- the block-aligned sizing helpers (core/kvsize.h).
 *
 * Fixtures: core-spec §9 cases 35 (seed bug 2) and 36, docs/ecosystem.md
 * §1.2 (bytes per token), §1.3 (hybrid state bytes and forced block sizes),
 * §3.1-§3.2 (vLLM's start-up log lines and worked numbers), and vLLM's own
 * test_get_max_concurrency_for_kv_cache_config.
 */
#include "core/kvsize.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

/* "%.2f" as vLLM prints the concurrency. */
static void
assert_2f(double x, const char *want)
{
	char got[32];

	snprintf(got, sizeof(got), "%.2f", x);
	ck_assert_str_eq(got, want);
}

/* ---- seed bug 2 --------------------------------------------------------- */

/*
 * vllm-metal's single-sequence estimate used raw max_model_len tokens while
 * the allocator reserves whole blocks: bs 400 (Granite-4.0-H) on 2048 tokens
 * takes 6 blocks = 2400 slots.  core-spec §9 case 35.
 */
START_TEST(test_seedbug2_block_aligned_bytes)
{
	uint64_t unaligned = 2ull * 4 * 2048 * 4 * 64 * 2;

	ck_assert_uint_eq(unaligned, 8388608u);
	ck_assert_uint_eq(kvc_aligned_tokens(2048, 400), 2400);
	ck_assert_uint_eq(kvc_seq_bytes(4, 4, 64, 2, 2048, 400), 9830400u);
	ck_assert_uint_ne(kvc_seq_bytes(4, 4, 64, 2, 2048, 400), unaligned);
	/* with bs 16 the two agree */
	ck_assert_uint_eq(kvc_seq_bytes(4, 4, 64, 2, 2048, 16), unaligned);
	/* the same figure through the generic per-layer worst case */
	{
		struct kvc_spec s = {
			.kind = KVC_SPEC_FULL, .block_size = 400,
			.page_bytes = kvc_page_bytes(4, 64, 2, 400, false),
			.nlayers = 4,
		};
		struct kvc_limits lim = { .max_model_len = 2048 };

		ck_assert_uint_eq(kvc_request_bytes(&s, 1, &lim), 9830400u);
		/* a budget of the unaligned figure must not pass */
		ck_assert_int_eq(kvc_check_enough(&s, 1, &lim, 8388608, NULL,
						  NULL), KV_ENOSPC);
		ck_assert_int_eq(kvc_check_enough(&s, 1, &lim, 9830400, NULL,
						  NULL), KV_OK);
	}
}
END_TEST

struct seq_case {
	uint32_t layers, heads, head, dt;
	uint64_t mml;
	uint32_t bs;
	uint64_t bytes;
};

static const struct seq_case seq_cases[] = {
	{ 4, 4, 64, 2, 2048, 400, 9830400 },		/* case 35 */
	{ 4, 4, 64, 2, 2048, 16, 8388608 },
	/* vllm-metal TestOneSequenceKvBytes: 16 layers, bs 16 divides 2048 */
	{ 16, 8, 64, 2, 2048, 16, 2ull * 16 * 2048 * 8 * 64 * 2 },
	{ 16, 8, 128, 2, 2048, 16, 2ull * 16 * 2048 * 8 * 128 * 2 },
	/* one token over a block boundary costs a whole block */
	{ 1, 1, 1, 1, 17, 16, 2 * 32 },
	{ 1, 1, 1, 1, 1, 400, 2 * 400 },
	{ 0, 4, 64, 2, 2048, 400, 0 },
	{ 4, 4, 64, 2, 0, 400, 0 },
};

START_TEST(test_seq_bytes_table)
{
	const struct seq_case *c = &seq_cases[_i];
	uint64_t raw = 2ull * c->layers * c->mml * c->heads * c->head * c->dt;
	uint64_t got = kvc_seq_bytes(c->layers, c->heads, c->head, c->dt,
				     c->mml, c->bs);

	ck_assert_uint_eq(got, c->bytes);
	/* never below the raw figure; equal iff bs divides max_model_len */
	ck_assert_uint_ge(got, raw);
	ck_assert((got == raw) == (c->mml % c->bs == 0 || raw == 0));
}
END_TEST

/* ---- pages and bytes per token (ecosystem.md §1.2) ---------------------- */

struct page_case {
	const char *model;
	uint32_t heads, head, dt, layers;
	bool mla;
	uint64_t per_token;	/* all layers, one token */
};

static const struct page_case page_cases[] = {
	{ "Llama-3.1-8B", 8, 128, 2, 32, false, 131072 },
	{ "Llama-3.1-8B fp8", 8, 128, 1, 32, false, 65536 },
	{ "Llama-3.1-70B", 8, 128, 2, 80, false, 327680 },
	{ "Qwen2.5-7B", 4, 128, 2, 28, false, 57344 },
	{ "Qwen3-8B", 8, 128, 2, 36, false, 147456 },
	{ "Qwen3-30B-A3B", 4, 128, 2, 48, false, 98304 },
	{ "DeepSeek-V3 MLA 512+64", 1, 576, 2, 61, true, 70272 },
	{ "DeepSeek-V3 MLA fp8", 1, 576, 1, 61, true, 35136 },
	{ "Granite-4.0-H-tiny attention", 4, 128, 2, 4, false, 8192 },
	{ "Qwen3-Next attention", 2, 256, 2, 12, false, 24576 },
};

START_TEST(test_page_bytes_table)
{
	const struct page_case *c = &page_cases[_i];

	ck_assert_msg(c->layers * kvc_page_bytes(c->heads, c->head, c->dt, 1,
						 c->mla) == c->per_token,
		      "%s", c->model);
	/* a page is block_size tokens */
	ck_assert_uint_eq(kvc_page_bytes(c->heads, c->head, c->dt, 16, c->mla),
			  16 * kvc_page_bytes(c->heads, c->head, c->dt, 1,
					      c->mla));
}
END_TEST

START_TEST(test_fp8_ds_mla)
{
	/* DeepSeek-V3, 61 layers: 40,016 bytes per token */
	ck_assert_uint_eq(61 * kvc_page_bytes_fp8_ds_mla(1), 40016);
	ck_assert_uint_eq(kvc_page_bytes_fp8_ds_mla(64), 64 * 656);
}
END_TEST

/* ---- worst case per layer, per kind (core-spec §3.5) ------------------ */

struct worst_case {
	struct kvc_spec s;
	struct kvc_limits lim;
	uint64_t blocks;
};

static const struct worst_case worst_cases[] = {
	/* full: cdiv(mml, bs) */
	{ { KVC_SPEC_FULL, 16, 1, 0, 0, 1 }, { 16384, 1024, 0 }, 1024 },
	{ { KVC_SPEC_FULL, 400, 1, 0, 0, 1 }, { 2048, 1024, 0 }, 6 },
	/* sliding: cdiv(min(W - 1 + batched, mml), bs) + 1 */
	{ { KVC_SPEC_SLIDING, 16, 1, 1024, 0, 1 }, { 16384, 1024, 0 }, 129 },
	{ { KVC_SPEC_SLIDING, 16, 1, 4096, 0, 1 }, { 32768, 2048, 0 }, 385 },
	{ { KVC_SPEC_SLIDING, 16, 1, 4096, 0, 1 }, { 1000, 2048, 0 }, 64 },
	{ { KVC_SPEC_SLIDING, 4, 1, 1, 0, 1 }, { 100, 1, 0 }, 2 },
	/* chunked local: cdiv(min(C + batched, mml), bs) */
	{ { KVC_SPEC_CHUNKED, 16, 1, 0, 8192, 1 }, { 131072, 2048, 0 }, 640 },
	{ { KVC_SPEC_CHUNKED, 16, 1, 0, 8192, 1 }, { 4000, 2048, 0 }, 250 },
	/* state: one page without prefix caching (bs = mml), else cdiv */
	{ { KVC_SPEC_STATE, 2048, 1, 0, 0, 1 }, { 2048, 1024, 0 }, 1 },
	{ { KVC_SPEC_STATE, 0, 1, 0, 0, 1 }, { 131072, 1024, 0 }, 1 },
	{ { KVC_SPEC_STATE, 512, 1, 0, 0, 1 }, { 2048, 1024, 0 }, 4 },
	{ { KVC_SPEC_STATE, 400, 1, 0, 0, 1 }, { 2048, 1024, 0 }, 6 },
	/* cross: cdiv(max_encoder_len, bs) (Whisper 1500) */
	{ { KVC_SPEC_CROSS, 16, 1, 0, 0, 1 }, { 448, 1024, 1500 }, 94 },
	/* encoder-only: no KV cache */
	{ { KVC_SPEC_ENCODER_ONLY, 16, 1, 0, 0, 1 }, { 512, 1024, 0 }, 0 },
};

START_TEST(test_worst_blocks_table)
{
	const struct worst_case *c = &worst_cases[_i];
	const struct kvc_spec *s = &c->s;
	const struct kvc_limits *l = &c->lim;
	uint64_t direct = 0;

	ck_assert_uint_eq(kvc_worst_blocks(s, l), c->blocks);
	ck_assert_uint_eq(kvc_worst_bytes(s, l), c->blocks * s->page_bytes);
	switch (s->kind) {
	case KVC_SPEC_FULL:
		direct = kvc_worst_blocks_full(l->max_model_len, s->block_size);
		break;
	case KVC_SPEC_SLIDING:
		direct = kvc_worst_blocks_sliding(s->window, l->max_model_len,
						  l->max_num_batched_tokens,
						  s->block_size);
		break;
	case KVC_SPEC_CHUNKED:
		direct = kvc_worst_blocks_chunked(s->chunk, l->max_model_len,
						  l->max_num_batched_tokens,
						  s->block_size);
		break;
	case KVC_SPEC_STATE:
		direct = kvc_worst_blocks_state(l->max_model_len,
						s->block_size);
		break;
	case KVC_SPEC_CROSS:
		direct = kvc_worst_blocks_cross(l->max_encoder_len,
						s->block_size);
		break;
	case KVC_SPEC_ENCODER_ONLY:
		direct = 0;
		break;
	}
	ck_assert_uint_eq(direct, c->blocks);
}
END_TEST

START_TEST(test_zero_guards)
{
	struct kvc_limits lim = { 2048, 1024, 0 };
	struct kvc_spec s = { KVC_SPEC_FULL, 0, 100, 0, 0, 1 };

	ck_assert_uint_eq(kvc_worst_blocks_full(2048, 0), 0);
	ck_assert_uint_eq(kvc_worst_blocks_sliding(8, 2048, 1024, 0), 0);
	ck_assert_uint_eq(kvc_worst_blocks_chunked(8, 2048, 1024, 0), 0);
	ck_assert_uint_eq(kvc_worst_blocks(&s, &lim), 0);
	ck_assert_uint_eq(kvc_blocks_for_budget(1000, 0, 1), 0);
	ck_assert_uint_eq(kvc_blocks_for_budget(1000, 10, 0), 0);
	ck_assert_uint_eq(kvc_blocks_per_request(NULL, 0, &lim), 0);
	ck_assert(kvc_max_concurrency(10, NULL, 0, &lim) == 0.0);
	ck_assert_uint_eq(kvc_cache_tokens(10, NULL, 0), 0);
	ck_assert_int_eq(kvc_check_enough(NULL, 0, &lim, 0, NULL, NULL),
			 KV_OK);
	/* saturation, not wrap-around */
	ck_assert_uint_eq(kvc_seq_bytes(UINT32_MAX, UINT32_MAX, UINT32_MAX,
					UINT32_MAX, UINT64_MAX, 1),
			  UINT64_MAX);
}
END_TEST

/* ---- case 36: max concurrency (vLLM test_kv_cache_utils) --------------- */

/* Qwen1.5-7B-like: 32 KV heads x 128, fp16, bs 16; mml 16384, batched 1024 */
static struct kvc_spec
qwen_spec(enum kvc_spec_kind kind, uint32_t window)
{
	struct kvc_spec s = {
		.kind = kind, .block_size = 16,
		.page_bytes = kvc_page_bytes(32, 128, 2, 16, false),
		.window = window, .nlayers = 32,
	};

	return s;
}

START_TEST(test_max_concurrency_case36)
{
	struct kvc_limits lim = { .max_model_len = 16384,
				  .max_num_batched_tokens = 1024 };
	struct kvc_spec full = qwen_spec(KVC_SPEC_FULL, 0);
	struct kvc_spec sw = qwen_spec(KVC_SPEC_SLIDING, 1024);
	struct kvc_spec hybrid[2] = { full, sw };

	ck_assert_uint_eq(kvc_blocks_per_request(&full, 1, &lim), 1024);
	ck_assert(kvc_max_concurrency(1536, &full, 1, &lim) == 1.5);
	ck_assert_uint_eq(kvc_blocks_per_request(&sw, 1, &lim), 129);
	ck_assert(kvc_max_concurrency(129 * 3, &sw, 1, &lim) == 3.0);
	ck_assert_uint_eq(kvc_blocks_per_request(hybrid, 2, &lim), 1153);
	ck_assert(kvc_max_concurrency((1024 + 129) * 3, hybrid, 2, &lim) ==
		  3.0);
}
END_TEST

/* ---- ecosystem.md §3: vLLM's start-up numbers --------------------------- */

/* Llama-3.x-8B: 32 layers, 8 KV heads x 128, bf16, bs 16 */
static struct kvc_spec
llama_spec(void)
{
	struct kvc_spec s = {
		.kind = KVC_SPEC_FULL, .block_size = 16,
		.page_bytes = kvc_page_bytes(8, 128, 2, 16, false),
		.nlayers = 32,
	};

	return s;
}

START_TEST(test_llama3_8b_h100)
{
	/* 53.29 GiB reserved for KV (vllm-project/vllm PR #10511 log) */
	int64_t avail = (int64_t)(53.29 * GIB);
	struct kvc_spec s = llama_spec();
	struct kvc_limits lim = { .max_model_len = 131072,
				  .max_num_batched_tokens = 8192 };
	uint64_t blocks = kvc_blocks_for_budget((uint64_t)avail, s.page_bytes,
						s.nlayers);

	ck_assert_uint_eq(s.page_bytes, 65536);
	ck_assert_uint_eq(blocks, 27284);
	/* "GPU KV cache size: 436,544 tokens" */
	ck_assert_uint_eq(kvc_cache_tokens(blocks, &s, 1), 436544);
	/* "Maximum concurrency for 131,072 tokens per request: 3.33x" */
	assert_2f(kvc_max_concurrency(blocks, &s, 1, &lim), "3.33");
	lim.max_model_len = 8192;
	assert_2f(kvc_max_concurrency(blocks, &s, 1, &lim), "53.29");
	ck_assert_int_eq(kvc_check_enough(&s, 1, &lim, avail, NULL, NULL),
			 KV_OK);
}
END_TEST

START_TEST(test_llama31_8b_l40s)
{
	/* vllm-project/vllm PR #17122: 158,656 tokens, 4.84x at 32,768 */
	struct kvc_spec s = llama_spec();
	struct kvc_limits lim = { .max_model_len = 32768 };

	ck_assert_uint_eq(kvc_cache_tokens(9916, &s, 1), 158656);
	assert_2f(kvc_max_concurrency(9916, &s, 1, &lim), "4.84");
}
END_TEST

START_TEST(test_llama31_8b_l4_too_small)
{
	/* 4.91 GiB of KV: 40,208 tokens, 0.31x at 131,072: vLLM won't start */
	int64_t avail = (int64_t)(4.91 * GIB);
	struct kvc_spec s = llama_spec();
	struct kvc_limits lim = { .max_model_len = 131072 };
	uint64_t blocks = kvc_blocks_for_budget((uint64_t)avail, s.page_bytes,
						s.nlayers);
	uint64_t needed = 0, max_len = 0;
	struct kvc_limits at;

	ck_assert_uint_eq(blocks, 2513);
	ck_assert_uint_eq(kvc_cache_tokens(blocks, &s, 1), 40208);
	assert_2f(kvc_max_concurrency(blocks, &s, 1, &lim), "0.31");
	ck_assert_int_eq(kvc_check_enough(&s, 1, &lim, avail, &needed,
					  &max_len), KV_ENOSPC);
	ck_assert_uint_eq(needed, 16ull << 30);	/* 16 GiB at 131,072 */
	/*
	 * vLLM's estimate_max_model_len: the largest length whose aligned
	 * blocks fit, 2513 blocks = 40,208 tokens.  (kvplan's suggestion of
	 * 40,192 in ecosystem.md §3.2 is its own rounding, not vLLM's.)
	 */
	ck_assert_uint_eq(max_len, 40208);
	at = lim;
	at.max_model_len = max_len;
	ck_assert_uint_le(kvc_request_bytes(&s, 1, &at), (uint64_t)avail);
	at.max_model_len = max_len + 1;
	ck_assert_uint_gt(kvc_request_bytes(&s, 1, &at), (uint64_t)avail);
}
END_TEST

START_TEST(test_check_enough_edges)
{
	struct kvc_spec s = llama_spec();
	struct kvc_limits lim = { .max_model_len = 1024 };
	uint64_t needed = 0, max_len = 99;

	/* available <= 0: "No available memory for the cache blocks" */
	ck_assert_int_eq(kvc_check_enough(&s, 1, &lim, 0, &needed, &max_len),
			 KV_ENOSPC);
	ck_assert_uint_eq(max_len, 0);
	ck_assert_uint_eq(needed, 1024ull * 131072);
	ck_assert_int_eq(kvc_check_enough(&s, 1, &lim, -5, NULL, &max_len),
			 KV_ENOSPC);
	/* not even one block of every layer fits */
	ck_assert_int_eq(kvc_check_enough(&s, 1, &lim, 32 * 65536 - 1, NULL,
					  &max_len), KV_ENOSPC);
	ck_assert_uint_eq(max_len, 0);
	/* exactly one block: 16 tokens */
	ck_assert_int_eq(kvc_check_enough(&s, 1, &lim, 32 * 65536, NULL,
					  &max_len), KV_ENOSPC);
	ck_assert_uint_eq(max_len, 16);
	/* fits exactly */
	ck_assert_int_eq(kvc_check_enough(&s, 1, &lim, 1024 * 131072, NULL,
					  &max_len), KV_OK);
	ck_assert_uint_eq(max_len, 1024);
	ck_assert_uint_eq(kvc_estimate_max_model_len(&s, 1, &lim,
						     1024 * 131072), 1024);
	lim.max_model_len = 0;
	ck_assert_uint_eq(kvc_estimate_max_model_len(&s, 1, &lim, 1 << 30),
			  0);
}
END_TEST

/* ---- hybrid state bytes and forced block sizes (ecosystem.md §1.3) ------ */

enum state_kind { MAMBA1, MAMBA2, GDN };

struct hybrid_case {
	const char *model;
	enum state_kind kind;
	uint32_t a, b, c, d, e, f;	/* the state dims, per kind */
	uint32_t kv_heads, head;	/* attention, bf16 KV */
	uint64_t state_bf16, state_fp32;	/* ssm state bf16 / fp32 */
	uint32_t bs_bf16, bs_fp32;	/* forced attention block size */
};

static const struct hybrid_case hybrid_cases[] = {
	/* Mamba-2: d_conv, d_inner, n_groups, d_state, n_heads, head_dim */
	{ "Granite-4.0-H-tiny", MAMBA2, 4, 3072, 1, 128, 48, 64, 4, 128,
	  806400, 1592832, 400, 784 },
	{ "Nemotron-H-8B", MAMBA2, 4, 8192, 8, 128, 128, 64, 8, 128,
	  2158592, 4255744, 528, 1040 },
	/* Mamba-1: d_conv, d_inner, d_state */
	{ "Jamba-1.5-Mini", MAMBA1, 4, 8192, 16, 0, 0, 0, 8, 128,
	  311296, 573440, 80, 144 },
	/* GDN: conv kernel, key heads, key dim, value heads, value dim */
	{ "Qwen3-Next-80B-A3B", GDN, 4, 16, 128, 32, 128, 0, 2, 256,
	  1097728, 2146304, 544, 1056 },
};

static uint64_t
state_bytes(const struct hybrid_case *c, uint32_t ssm_bytes)
{
	switch (c->kind) {
	case MAMBA1:
		return kvc_mamba1_state_bytes(c->a, c->b, c->c, 2, ssm_bytes);
	case MAMBA2:
		return kvc_mamba2_state_bytes(c->a, c->b, c->c, c->d, c->e,
					      c->f, 2, ssm_bytes);
	case GDN:
		return kvc_gdn_state_bytes(c->a, c->b, c->c, c->d, c->e, 2,
					   ssm_bytes);
	}
	return 0;
}

START_TEST(test_hybrid_table)
{
	const struct hybrid_case *c = &hybrid_cases[_i];
	struct kvc_hybrid h = {
		.attn_token_bytes = kvc_page_bytes(c->kv_heads, c->head, 2, 1,
						   false),
		.align = 16,
	};
	struct kvc_hybrid_result r;

	ck_assert_msg(state_bytes(c, 2) == c->state_bf16, "%s: %llu",
		      c->model, (unsigned long long)state_bytes(c, 2));
	ck_assert_msg(state_bytes(c, 4) == c->state_fp32, "%s: %llu",
		      c->model, (unsigned long long)state_bytes(c, 4));
	h.mamba_page_bytes = c->state_bf16;
	ck_assert_int_eq(kvc_hybrid_unify(&h, &r), KV_OK);
	ck_assert_msg(r.block_size == c->bs_bf16, "%s: bs %u", c->model,
		      r.block_size);
	ck_assert(r.overridden);
	ck_assert_uint_eq(r.page_bytes, r.block_size * h.attn_token_bytes);
	ck_assert_uint_eq(r.mamba_padding, r.page_bytes - c->state_bf16);
	/* the page holds a state; one alignment unit less would not */
	ck_assert_uint_ge(r.page_bytes, c->state_bf16);
	ck_assert_uint_lt((r.block_size - 16) * h.attn_token_bytes,
			  c->state_bf16);
	h.mamba_page_bytes = c->state_fp32;
	ck_assert_int_eq(kvc_hybrid_unify(&h, &r), KV_OK);
	ck_assert_msg(r.block_size == c->bs_fp32, "%s: fp32 bs %u", c->model,
		      r.block_size);
}
END_TEST

START_TEST(test_granite_bs400)
{
	struct kvc_hybrid h = {
		.attn_token_bytes = kvc_page_bytes(4, 128, 2, 1, false),
		.mamba_page_bytes = kvc_mamba2_state_bytes(4, 3072, 1, 128,
							   48, 64, 2, 2),
		.align = 16,
		.block_size = 16,	/* the user's default: too small */
	};
	struct kvc_hybrid_result r;

	ck_assert_uint_eq(h.attn_token_bytes, 2048);
	ck_assert_uint_eq(h.mamba_page_bytes, 806400);
	ck_assert_int_eq(kvc_hybrid_unify(&h, &r), KV_OK);
	ck_assert_uint_eq(r.block_size, 400);	/* 16 * cdiv(806400, 32768) */
	ck_assert(r.overridden);
	ck_assert_uint_eq(r.mamba_block_size, 0);
	ck_assert_uint_eq(r.page_bytes, 819200);
	ck_assert_uint_eq(r.mamba_padding, 12800);

	/* a larger user block size is kept, the Mamba page padded to it */
	h.block_size = 1024;
	ck_assert_int_eq(kvc_hybrid_unify(&h, &r), KV_OK);
	ck_assert_uint_eq(r.block_size, 1024);
	ck_assert(!r.overridden);
	ck_assert_uint_eq(r.mamba_padding, 1024 * 2048 - 806400);
	h.block_size = 400;
	ck_assert_int_eq(kvc_hybrid_unify(&h, &r), KV_OK);
	ck_assert(!r.overridden);

	/* prefix caching: 394 tokens per state rounded to lcm(256, 16) */
	h.block_size = 0;
	h.prefix_caching = true;
	h.mamba_chunk = 256;
	ck_assert_int_eq(kvc_hybrid_unify(&h, &r), KV_OK);
	ck_assert_uint_eq(r.block_size, 512);
	ck_assert_uint_eq(r.mamba_block_size, 512);
	/* lcm of a chunk that is not a multiple of the alignment */
	h.mamba_chunk = 24;			/* lcm(24, 16) = 48 */
	ck_assert_int_eq(kvc_hybrid_unify(&h, &r), KV_OK);
	ck_assert_uint_eq(r.block_size, 432);	/* 48 * cdiv(394, 48) */

	/* fp8 KV halves the attention page: the block size doubles */
	h.prefix_caching = false;
	h.attn_token_bytes = kvc_page_bytes(4, 128, 1, 1, false);
	ck_assert_int_eq(kvc_hybrid_unify(&h, &r), KV_OK);
	ck_assert_uint_eq(r.block_size, 800);

	/* MLA-style alignment 64 */
	h.attn_token_bytes = 2048;
	h.align = 64;
	ck_assert_int_eq(kvc_hybrid_unify(&h, &r), KV_OK);
	ck_assert_uint_eq(r.block_size, 448);	/* 64 * cdiv(394, 64) */
}
END_TEST

START_TEST(test_hybrid_errors)
{
	struct kvc_hybrid h = { .attn_token_bytes = 2048,
				.mamba_page_bytes = 806400, .align = 16 };
	struct kvc_hybrid_result r = { .block_size = 77 }, r0;

	r0 = r;
	h.align = 0;
	ck_assert_int_eq(kvc_hybrid_unify(&h, &r), KV_EINVAL);
	h.align = 16;
	h.attn_token_bytes = 0;
	ck_assert_int_eq(kvc_hybrid_unify(&h, &r), KV_EINVAL);
	h.attn_token_bytes = 2048;
	h.prefix_caching = true;	/* no chunk size */
	ck_assert_int_eq(kvc_hybrid_unify(&h, &r), KV_EINVAL);
	h.prefix_caching = false;
	h.attn_token_bytes = 1;
	h.mamba_page_bytes = UINT64_MAX / 2;	/* block size > 2^32 */
	ck_assert_int_eq(kvc_hybrid_unify(&h, &r), KV_EINVAL);
	ck_assert_uint_eq(r.block_size, r0.block_size);	/* untouched */
	/* no state layers: the block size is left alone */
	h.attn_token_bytes = 2048;
	h.mamba_page_bytes = 0;
	h.block_size = 16;
	ck_assert_int_eq(kvc_hybrid_unify(&h, &r), KV_OK);
	ck_assert_uint_eq(r.block_size, 16);
	ck_assert(!r.overridden);
	ck_assert_uint_eq(r.page_bytes, 16 * 2048);
	ck_assert_uint_eq(r.mamba_padding, 0);
}
END_TEST

/*
 * Granite-4.0-H-tiny at max_model_len 2048 with a budget of exactly one
 * block-aligned request (ecosystem.md §3.1): 4 attention layers at bs 400,
 * 36 Mamba layers, 10 groups of 4 layers sharing 819,200-byte pages.
 * vLLM 5e5a7eb16f12 logs "GPU KV cache size: 400 tokens" and 1.00x.
 */
START_TEST(test_granite_one_request_budget)
{
	const uint64_t page = 819200;
	struct kvc_limits lim = { .max_model_len = 2048,
				  .max_num_batched_tokens = 2048 };
	struct kvc_spec layers[2] = {
		{ .kind = KVC_SPEC_FULL, .block_size = 400,
		  .page_bytes = page, .nlayers = 4 },
		/* no prefix caching: the Mamba block is max_model_len */
		{ .kind = KVC_SPEC_STATE, .block_size = 2048,
		  .page_bytes = page, .nlayers = 36 },
	};
	struct kvc_spec groups[10];
	uint64_t need = kvc_request_bytes(layers, 2, &lim), blocks, max_len;
	/* the seed bug's figure: raw tokens and the unpadded state */
	uint64_t raw = 4ull * 2048 * 2048 + 36ull * 806400;

	groups[0] = layers[0];
	for (int i = 1; i < 10; i++) {
		groups[i] = layers[1];
		groups[i].nlayers = 4;
	}
	ck_assert_uint_eq(need, 60 * page);		/* 4*6 + 36 pages */
	ck_assert_uint_gt(need, raw);
	blocks = kvc_blocks_for_budget(need, page, 4);
	ck_assert_uint_eq(blocks, 15);
	ck_assert_uint_eq(kvc_blocks_per_request(groups, 10, &lim), 15);
	ck_assert_uint_eq(kvc_cache_tokens(blocks, groups, 10), 400);
	assert_2f(kvc_max_concurrency(blocks, groups, 10, &lim), "1.00");
	ck_assert_int_eq(kvc_check_enough(layers, 2, &lim, (int64_t)need,
					  NULL, NULL), KV_OK);
	/* the unaligned budget fails; 5 attention blocks = 2000 tokens fit */
	ck_assert_int_eq(kvc_check_enough(layers, 2, &lim, (int64_t)raw, NULL,
					  &max_len), KV_ENOSPC);
	ck_assert_uint_eq(max_len, 1600);		/* 4 blocks: 52 pages */
	ck_assert_int_eq(kvc_check_enough(layers, 2, &lim, (int64_t)need - 1,
					  NULL, &max_len), KV_ENOSPC);
	ck_assert_uint_eq(max_len, 2000);
}
END_TEST

static Suite *
size_suite(void)
{
	Suite *s = suite_create("size");
	TCase *tc = tcase_create("sizing");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_seedbug2_block_aligned_bytes);
	tcase_add_loop_test(tc, test_seq_bytes_table, 0,
			    sizeof(seq_cases) / sizeof(seq_cases[0]));
	tcase_add_loop_test(tc, test_page_bytes_table, 0,
			    sizeof(page_cases) / sizeof(page_cases[0]));
	tcase_add_test(tc, test_fp8_ds_mla);
	tcase_add_loop_test(tc, test_worst_blocks_table, 0,
			    sizeof(worst_cases) / sizeof(worst_cases[0]));
	tcase_add_test(tc, test_zero_guards);
	tcase_add_test(tc, test_max_concurrency_case36);
	tcase_add_test(tc, test_llama3_8b_h100);
	tcase_add_test(tc, test_llama31_8b_l40s);
	tcase_add_test(tc, test_llama31_8b_l4_too_small);
	tcase_add_test(tc, test_check_enough_edges);
	tcase_add_loop_test(tc, test_hybrid_table, 0,
			    sizeof(hybrid_cases) / sizeof(hybrid_cases[0]));
	tcase_add_test(tc, test_granite_bs400);
	tcase_add_test(tc, test_hybrid_errors);
	tcase_add_test(tc, test_granite_one_request_budget);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(size_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
