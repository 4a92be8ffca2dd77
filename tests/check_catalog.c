/*
 * check_catalog.c -- the model/GPU catalogs, the config.json reader and
 * vLLM's start-up KV sizing (sim/catalog.h, sim/sizing.h).
 *
 * Fixtures: docs/ecosystem.md §1.1-§1.3 (models, bytes per token, hybrid
 * state bytes and forced block sizes), §2 (GPUs), §3.2 (vLLM's start-up
 * numbers), llm-d/llm-d-benchmark:config_explorer/empirical-vllm-memory-
 * results.md (vLLM v1 memory profile on an H100), and seed bug 2
 * (Granite-4.0-H at max_model_len 2048, block size 400).  The catalogs are
 * the source tree's (data/), found through $top_srcdir.
 */
#include "sim/model/catalog.h"
#include "sim/model/mixer.h"
#include "sim/model/sizing.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB 1073741824.0

static cat *C;

static const char *
srcdir(void)
{
	const char *s = getenv("top_srcdir");

	return s != NULL && *s != '\0' ? s : ".";
}

static void
path(char *buf, size_t len, const char *rel)
{
	snprintf(buf, len, "%s/%s", srcdir(), rel);
}

static void
setup(void)
{
	char dir[4096];
	struct cat_err e;

	path(dir, sizeof(dir), "data");
	ck_assert_msg(cat_load(&C, dir, &e) == KV_OK, "%s", e.msg);
}

static void
teardown(void)
{
	cat_free(C);
	C = NULL;
}

static const struct cat_model *
model(const char *name)
{
	const struct cat_model *m = cat_find_model(C, name);

	ck_assert_msg(m != NULL, "no model %s", name);
	return m;
}

static const struct cat_gpu *
gpu(const char *name)
{
	const struct cat_gpu *g = cat_find_gpu(C, name);

	ck_assert_msg(g != NULL, "no GPU %s", name);
	return g;
}

/* the log line that starts with `prefix`, or NULL */
static const char *
logline(const struct sz_result *r, const char *prefix)
{
	for (size_t i = 0; i < r->nlog; i++)
		if (strncmp(r->log[i], prefix, strlen(prefix)) == 0)
			return r->log[i];
	return NULL;
}

static void
assert_log(const struct sz_result *r, const char *line)
{
	for (size_t i = 0; i < r->nlog; i++)
		if (strcmp(r->log[i], line) == 0)
			return;
	ck_abort_msg("missing log line \"%s\"", line);
}

static struct sz_result *
size_it(const char *m, const char *g, const struct sz_engine *e)
{
	static struct sz_result r;
	char why[512];

	ck_assert_msg(sz_compute(model(m), gpu(g), e, &r, why, sizeof(why)) ==
		      KV_OK, "%s on %s: %s", m, g, why);
	return &r;
}

/* ---- the catalogs ------------------------------------------------------ */

START_TEST(test_catalog_has_the_models_and_gpus)
{
	/* docs/ecosystem.md §1.1 and §2 */
	static const char *const models[] = {
		"meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B",
		"Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen3-8B", "Qwen/Qwen3-32B",
		"Qwen/Qwen3-30B-A3B-Instruct-2507", "mistralai/Mistral-7B-v0.1",
		"mistralai/Mixtral-8x7B-v0.1", "google/gemma-2-9b",
		"deepseek-ai/DeepSeek-V3", "ibm-granite/granite-4.0-h-tiny",
		"ai21labs/AI21-Jamba-1.5-Mini", "nvidia/Nemotron-H-8B-Base-8K",
		"Qwen/Qwen3-Next-80B-A3B-Instruct", "google/gemma-3-1b-it",
	};
	static const char *const gpus[] = {
		"a100-80g", "h100-sxm", "h200", "b200", "l40s", "mi300x",
		"m4-pro-48g",
	};

	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
		const struct cat_model *m = model(models[i]);

		ck_assert_str_eq(m->id, models[i]);
		ck_assert(m->source != NULL && m->source[0] != '\0');
		ck_assert(cat_model_source(m, "hidden_size") != NULL);
		ck_assert(m->params_source != NULL);
	}
	for (size_t i = 0; i < sizeof(gpus) / sizeof(gpus[0]); i++) {
		const struct cat_gpu *g = gpu(gpus[i]);

		/* every number that is set has a source */
		ck_assert_msg(g->src[CAT_G_MEMORY] != NULL, "%s", g->id);
		ck_assert_msg(g->src[CAT_G_USABLE] != NULL, "%s", g->id);
		ck_assert_msg(g->src[CAT_G_HBM_BW] != NULL, "%s", g->id);
		for (int d = 0; d < CAT_NDTYPES; d++)
			ck_assert_msg((g->flops[d] > 0) ==
				      (g->src[CAT_G_FLOPS_FP32 + d] != NULL),
				      "%s flops %d", g->id, d);
		ck_assert((g->interconnect_bw > 0) ==
			  (g->src[CAT_G_INTERCONNECT] != NULL));
		ck_assert((g->host_bw > 0) == (g->src[CAT_G_HOST] != NULL));
		ck_assert_uint_le(g->usable_bytes, g->memory_bytes);
		ck_assert(g->hbm_bw > 0);
	}
	ck_assert_uint_ge(cat_nmodels(C), 15);
	ck_assert_uint_ge(cat_ngpus(C), 7);
}
END_TEST

START_TEST(test_lookup)
{
	/* ids and aliases, case-insensitive */
	ck_assert_ptr_eq(cat_find_model(C, "LLAMA-3.1-8B"),
			 model("meta-llama/Llama-3.1-8B"));
	ck_assert_ptr_eq(cat_find_model(C, "meta-llama/llama-3.1-8b-instruct"),
			 model("meta-llama/Llama-3.1-8B"));
	ck_assert_ptr_eq(cat_find_gpu(C, "H100"), gpu("h100-sxm"));
	ck_assert_ptr_eq(cat_find_gpu(C, "NVIDIA H200"), gpu("h200"));
	ck_assert_ptr_null(cat_find_model(C, "no/such-model"));
	ck_assert_ptr_null(cat_find_gpu(C, "h100-sxm "));
	ck_assert_ptr_null(cat_find_gpu(C, "llama-3.1-8b"));
}
END_TEST

START_TEST(test_gpu_numbers)
{
	const struct cat_gpu *h = gpu("h100-sxm"), *a = gpu("a100-80g");

	ck_assert_uint_eq(h->memory_bytes, 80ull << 30);
	/* 79.18 GiB */
	ck_assert_uint_eq(h->usable_bytes, 85018877624ull);
	ck_assert(h->hbm_bw == 3.35e12);
	ck_assert(h->flops[CAT_BF16] == 989.4e12);
	ck_assert(h->flops[CAT_FP8] == 1978.9e12);
	ck_assert(h->interconnect_bw == 450e9);
	ck_assert(h->host_bw == 64e9);
	ck_assert_uint_eq(h->cc_major, 9);
	ck_assert_str_eq(a->device_name, "NVIDIA A100-SXM4-80GB");
	ck_assert(a->flops[CAT_FP8] == 0);	/* Ampere has no FP8 */
	ck_assert(gpu("m4-pro-48g")->unified_memory);
	ck_assert(gpu("m4-pro-48g")->host_bw == 0);
	ck_assert_uint_eq(gpu("b200")->cc_major, 10);
	/* prices: USD per GPU-hour, with their source; none is 0 */
	ck_assert(h->usd_per_hour == 4.76);
	ck_assert_ptr_nonnull(h->src[CAT_G_PRICE]);
	ck_assert(strstr(h->src[CAT_G_PRICE], "https://") != NULL);
	ck_assert(gpu("mi300x")->usd_per_hour == 0);
	ck_assert_ptr_null(gpu("mi300x")->src[CAT_G_PRICE]);
}
END_TEST

START_TEST(test_parse_bytes)
{
	uint64_t v;

	ck_assert(cat_parse_bytes("80GB", &v) && v == 80000000000ull);
	ck_assert(cat_parse_bytes("80GiB", &v) && v == 85899345920ull);
	ck_assert(cat_parse_bytes("53.29GiB", &v) && v == 57219701801ull);
	ck_assert(cat_parse_bytes("1048576", &v) && v == 1048576);
	ck_assert(cat_parse_bytes("0", &v) && v == 0);
	ck_assert(cat_parse_bytes("1.5 KiB", &v) && v == 1536);
	ck_assert(!cat_parse_bytes("", &v));
	ck_assert(!cat_parse_bytes("-1GB", &v));
	ck_assert(!cat_parse_bytes("80 GBs", &v));
	ck_assert(!cat_parse_bytes("GB", &v));
	ck_assert(!cat_parse_bytes("1e30", &v));
	ck_assert(!cat_parse_bytes("nan", &v));
}
END_TEST

/* ---- models: layers, bytes per token, parameters ------------------------ */

static uint64_t
attn_token_bytes(const struct cat_model *m, uint32_t dt)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < m->num_layers; i++) {
		uint8_t k = m->layer[i].mixer;

		if (k == CAT_MIX_MLA)
			sum += kvc_page_bytes(1, m->kv_lora_rank +
					      m->qk_rope_head_dim, dt, 1, true);
		else if (k == CAT_MIX_FULL)
			sum += kvc_page_bytes(m->num_kv_heads, m->head_dim, dt,
					      1, false);
	}
	return sum;
}

struct kv_case {
	const char *model;
	uint32_t full, sliding, window, state;
	uint64_t bf16, fp8;	/* full/MLA layers, bytes per token */
};

/* docs/ecosystem.md §1.2 */
static const struct kv_case kv_cases[] = {
	{ "meta-llama/Llama-3.1-8B", 32, 0, 0, 0, 131072, 65536 },
	{ "meta-llama/Llama-3.1-70B", 80, 0, 0, 0, 327680, 163840 },
	{ "Qwen/Qwen2.5-7B-Instruct", 28, 0, 0, 0, 57344, 28672 },
	{ "Qwen/Qwen3-8B", 36, 0, 0, 0, 147456, 73728 },
	{ "Qwen/Qwen3-32B", 64, 0, 0, 0, 262144, 131072 },
	{ "Qwen/Qwen3-30B-A3B-Instruct-2507", 48, 0, 0, 0, 98304, 49152 },
	{ "mistralai/Mistral-7B-v0.1", 0, 32, 4096, 0, 0, 0 },
	{ "mistralai/Mixtral-8x7B-v0.1", 32, 0, 0, 0, 131072, 65536 },
	{ "google/gemma-2-9b", 21, 21, 4096, 0, 172032, 86016 },
	{ "google/gemma-3-1b-it", 4, 22, 512, 0, 4 * 1024, 4 * 512 },
	{ "deepseek-ai/DeepSeek-V3", 61, 0, 0, 0, 70272, 35136 },
	{ "ibm-granite/granite-4.0-h-tiny", 4, 0, 0, 36, 8192, 4096 },
	{ "ai21labs/AI21-Jamba-1.5-Mini", 4, 0, 0, 28, 16384, 8192 },
	{ "nvidia/Nemotron-H-8B-Base-8K", 4, 0, 0, 24, 16384, 8192 },
	{ "Qwen/Qwen3-Next-80B-A3B-Instruct", 12, 0, 0, 36, 24576, 12288 },
};

START_TEST(test_layers_and_kv_bytes)
{
	const struct kv_case *c = &kv_cases[_i];
	const struct cat_model *m = model(c->model);
	uint32_t full = cat_model_count(m, CAT_MIX_FULL) +
			cat_model_count(m, CAT_MIX_MLA);
	uint32_t state = cat_model_count(m, CAT_MIX_MAMBA1) +
			 cat_model_count(m, CAT_MIX_MAMBA2) +
			 cat_model_count(m, CAT_MIX_GDN);

	ck_assert_msg(full == c->full, "%s: %u full", c->model, full);
	ck_assert_uint_eq(cat_model_count(m, CAT_MIX_SLIDING), c->sliding);
	ck_assert_uint_eq(state, c->state);
	ck_assert(cat_model_is_hybrid(m) == (c->state > 0));
	ck_assert_msg(attn_token_bytes(m, 2) == c->bf16, "%s: %llu", c->model,
		      (unsigned long long)attn_token_bytes(m, 2));
	ck_assert_uint_eq(attn_token_bytes(m, 1), c->fp8);
	for (uint32_t i = 0; i < m->num_layers; i++)
		if (m->layer[i].mixer == CAT_MIX_SLIDING)
			ck_assert_uint_eq(m->layer[i].window, c->window);
}
END_TEST

START_TEST(test_layer_patterns)
{
	const struct cat_model *g = model("ibm-granite/granite-4.0-h-tiny");
	const struct cat_model *j = model("ai21labs/AI21-Jamba-1.5-Mini");
	const struct cat_model *n = model("nvidia/Nemotron-H-8B-Base-8K");
	const struct cat_model *q = model("Qwen/Qwen3-Next-80B-A3B-Instruct");
	const struct cat_model *g2 = model("google/gemma-2-9b");
	const struct cat_model *d = model("deepseek-ai/DeepSeek-V3");

	for (uint32_t i = 0; i < 40; i++)
		ck_assert_uint_eq(g->layer[i].mixer, (i % 10 == 5) ?
				  CAT_MIX_FULL : CAT_MIX_MAMBA2);
	for (uint32_t i = 0; i < 32; i++) {
		ck_assert_uint_eq(j->layer[i].mixer, i % 8 == 4 ?
				  CAT_MIX_FULL : CAT_MIX_MAMBA1);
		ck_assert_uint_eq(j->layer[i].ffn, i % 2 == 1 ?
				  CAT_FFN_MOE : CAT_FFN_DENSE);
	}
	ck_assert_uint_eq(n->num_layers, 52);
	ck_assert_uint_eq(cat_model_count(n, CAT_MIX_NONE), 24);
	ck_assert_uint_eq(n->layer[7].mixer, CAT_MIX_FULL);
	ck_assert_uint_eq(n->layer[7].ffn, CAT_FFN_NONE);
	ck_assert_uint_eq(n->layer[1].ffn, CAT_FFN_DENSE);
	for (uint32_t i = 0; i < 48; i++)
		ck_assert_uint_eq(q->layer[i].mixer, i % 4 == 3 ?
				  CAT_MIX_FULL : CAT_MIX_GDN);
	ck_assert_uint_eq(g2->layer[0].mixer, CAT_MIX_SLIDING);
	ck_assert_uint_eq(g2->layer[1].mixer, CAT_MIX_FULL);
	for (uint32_t i = 0; i < 61; i++)
		ck_assert_uint_eq(d->layer[i].ffn, i < 3 ? CAT_FFN_DENSE :
				  CAT_FFN_MOE);
	ck_assert_uint_eq(d->weight_bytes, 1);	/* fp8 checkpoint */
	ck_assert_uint_eq(d->max_model_len, 163840);	/* yarn 4096 x 40 */
	ck_assert_uint_eq(model("meta-llama/Llama-3.1-8B")->max_model_len,
			  131072);	/* llama3 rope: not scaled */
	ck_assert_uint_eq(g->rotary_dim, 0);	/* NoPE */
	ck_assert_uint_eq(q->rotary_dim, 64);	/* partial 0.25 of 256 */
}
END_TEST

struct param_case {
	const char *model;
	uint64_t total;		/* exact, or 0 */
	double approx, approx_active;	/* published, billions */
};

/*
 * Exact totals: the Hugging Face safetensors parameter counts of those
 * repos.  Rounded ones: the model cards (Qwen3 "8.2B", "32.8B", "30.5B /
 * 3.3B activated"; DeepSeek-V3 "671B / 37B activated"; Granite-4.0-H-Tiny
 * "7B / 1B active"; Jamba-1.5-Mini "52B / 12B active"; Nemotron-H "8B";
 * Qwen3-Next "80B / 3B activated").
 */
static const struct param_case param_cases[] = {
	{ "meta-llama/Llama-3.1-8B", 8030261248ull, 0, 0 },
	{ "meta-llama/Llama-3.1-70B", 70553706496ull, 0, 0 },
	{ "Qwen/Qwen2.5-7B-Instruct", 7615616512ull, 0, 0 },
	{ "mistralai/Mistral-7B-v0.1", 7241732096ull, 0, 0 },
	/* the models of bench/accuracy's measured runs */
	{ "meta-llama/Llama-2-7b-hf", 6738415616ull, 0, 0 },
	{ "meta-llama/Llama-2-70b-hf", 68976648192ull, 0, 0 },
	{ "codellama/CodeLlama-34b-hf", 33743970304ull, 0, 0 },
	{ "mistralai/Mixtral-8x7B-v0.1", 46702792704ull, 0, 12.9 },
	{ "google/gemma-2-9b", 9241705984ull, 0, 0 },
	{ "google/gemma-3-1b-it", 999885952ull, 0, 0 },
	{ "Qwen/Qwen3-8B", 0, 8.2, 0 },
	{ "Qwen/Qwen3-32B", 0, 32.8, 0 },
	{ "Qwen/Qwen3-30B-A3B-Instruct-2507", 0, 30.5, 3.3 },
	{ "deepseek-ai/DeepSeek-V3", 0, 671, 37 },
	{ "ibm-granite/granite-4.0-h-tiny", 0, 7, 1.4 },
	{ "ai21labs/AI21-Jamba-1.5-Mini", 0, 52, 12 },
	{ "nvidia/Nemotron-H-8B-Base-8K", 0, 8, 0 },
	{ "Qwen/Qwen3-Next-80B-A3B-Instruct", 0, 80, 3.5 },
};

START_TEST(test_param_counts)
{
	const struct param_case *c = &param_cases[_i];
	const struct cat_model *m = model(c->model);
	double b = (double)m->params / 1e9, a = (double)m->active_params / 1e9;

	ck_assert_uint_le(m->active_params, m->params);
	if (c->total != 0)
		ck_assert_msg(m->params == c->total, "%s: %llu", c->model,
			      (unsigned long long)m->params);
	if (c->approx > 0)
		ck_assert_msg(b > c->approx * 0.985 && b < c->approx * 1.015,
			      "%s: %.3fB", c->model, b);
	if (c->approx_active > 0)
		ck_assert_msg(a > c->approx_active * 0.85 &&
			      a < c->approx_active * 1.15, "%s: active %.3fB",
			      c->model, a);
	if (m->num_experts == 0)
		ck_assert_uint_eq(m->active_params, m->params);
}
END_TEST

/* ---- config.json ------------------------------------------------------- */

static void
assert_same_model(const struct cat_model *a, const struct cat_model *b)
{
	ck_assert_uint_eq(a->num_layers, b->num_layers);
	ck_assert_uint_eq(a->hidden_size, b->hidden_size);
	ck_assert_uint_eq(a->num_heads, b->num_heads);
	ck_assert_uint_eq(a->num_kv_heads, b->num_kv_heads);
	ck_assert_uint_eq(a->head_dim, b->head_dim);
	ck_assert_uint_eq(a->vocab_size, b->vocab_size);
	ck_assert_uint_eq(a->max_model_len, b->max_model_len);
	ck_assert_uint_eq(a->params, b->params);
	ck_assert_uint_eq(a->active_params, b->active_params);
	ck_assert_uint_eq(a->rotary_dim, b->rotary_dim);
	ck_assert_int_eq(memcmp(&a->ssm, &b->ssm, sizeof(a->ssm)), 0);
	ck_assert_int_eq(memcmp(a->layer, b->layer,
				a->num_layers * sizeof(*a->layer)), 0);
}

START_TEST(test_hf_config_matches_catalog)
{
	static const char *const files[][2] = {
		{ "tests/catalog/llama-3.1-8b.config.json",
		  "meta-llama/Llama-3.1-8B" },
		{ "tests/catalog/granite-4.0-h-tiny.config.json",
		  "ibm-granite/granite-4.0-h-tiny" },
	};
	char p[4096];
	struct cat_model *m;
	struct cat_err e;

	for (size_t i = 0; i < 2; i++) {
		path(p, sizeof(p), files[i][0]);
		ck_assert_msg(cat_model_from_hf(&m, p, &e) == KV_OK, "%s",
			      e.msg);
		assert_same_model(m, model(files[i][1]));
		ck_assert_str_eq(m->id, p);
		cat_model_free(m);
	}
}
END_TEST

START_TEST(test_hf_config_text_config)
{
	char p[4096];
	struct cat_model *m;
	struct cat_err e;

	/* Gemma-3 4B: a VLM wrapper, the language model in text_config */
	path(p, sizeof(p), "tests/catalog/gemma-3-4b.config.json");
	ck_assert_msg(cat_model_from_hf(&m, p, &e) == KV_OK, "%s", e.msg);
	ck_assert_str_eq(m->model_type, "gemma3_text");
	ck_assert_str_eq(m->architecture, "Gemma3ForConditionalGeneration");
	ck_assert_uint_eq(m->num_layers, 34);
	ck_assert_uint_eq(cat_model_count(m, CAT_MIX_FULL), 5);
	ck_assert_uint_eq(cat_model_count(m, CAT_MIX_SLIDING), 29);
	ck_assert_uint_eq(m->layer[5].mixer, CAT_MIX_FULL);
	ck_assert_uint_eq(m->layer[0].window, 1024);
	/* vLLM does not scale Gemma-3's max length by rope_scaling */
	ck_assert_uint_eq(m->max_model_len, 131072);
	ck_assert(m->tie_word_embeddings);
	cat_model_free(m);
}
END_TEST

struct bad_case {
	const char *file;	/* under tests/catalog/ */
	bool gpus;		/* a gpus.yaml (else models / config.json) */
	const char *where;	/* "LINE:COL" */
	const char *what;	/* part of the message */
};

static const struct bad_case bad_cases[] = {
	{ "bad-syntax.yaml", false, "7:24",
	  "did not find expected ',' or ']'" },
	{ "bad-unknown-key.yaml", false, "9:7", "unknown key 'num_kv_heads'" },
	{ "bad-no-source.yaml", false, "2:5", "needs a 'source'" },
	{ "bad-negative.yaml", false, "6:26", "non-negative integer" },
	{ "bad-dup-key.yaml", false, "9:7", "duplicate key 'hidden_size'" },
	{ "bad-dup-name.yaml", false, "6:5", "name 'X/Y' is already used" },
	{ "bad-layer-types.yaml", false, "11:20", "2 entries for 3 layers" },
	{ "bad-sourced-value.yaml", false, "6:26", "needs a non-empty source" },
	{ "bad-alias.yaml", false, "5:5", "aliases (*m) are not supported" },
	{ "bad-top.yaml", false, "1:1", "unknown key 'model'" },
	{ "bad-gpu-unit.yaml", true, "5:13", "cannot read '80 GBs'" },
	{ "bad-gpu-nosource.yaml", true, "5:23", "has no source" },
	{ "bad-gpu-usable.yaml", true, "6:20", "at most 'memory'" },
	{ "bad-gpu-usable0.yaml", true, "7:7",
	  "'usable_memory' must be positive" },
	{ "bad-gpu-vendor.yaml", true, "3:13", "nvidia, amd or apple" },
	{ "bad-gpu-price.yaml", true, "7:12", "e.g. 2.99USD/h" },
	{ "bad-gpu-huge.yaml", true, "5:13", "'memory' must be below 1 PiB" },
	{ "bad-syntax.config.json", false, "5:15", "expected ',' or '}'" },
	{ "bad-value.config.json", false, "3:24", "'thirty-two'" },
	{ "bad-missing.config.json", false, "1:1",
	  "missing 'num_hidden_layers'" },
	{ "bad-rope-factor.config.json", false, "7:51",
	  "context of 8.192e+303 tokens" },
};

START_TEST(test_bad_input_file_line_col)
{
	const struct bad_case *c = &bad_cases[_i];
	char p[4096], want[4200];
	struct cat_err e;
	kv_err rc;
	cat *k = NULL;

	path(p, sizeof(p), "tests/catalog/");
	strncat(p, c->file, sizeof(p) - strlen(p) - 1);
	if (strstr(c->file, ".json") != NULL) {
		struct cat_model *m = NULL;

		rc = cat_model_from_hf(&m, p, &e);
		ck_assert_ptr_null(m);
	} else {
		rc = cat_load_files(&k, c->gpus ? NULL : p, c->gpus ? p : NULL,
				    &e);
		ck_assert_ptr_null(k);
	}
	ck_assert_int_eq(rc, KV_EINVAL);
	snprintf(want, sizeof(want), "%s:%s: ", p, c->where);
	ck_assert_msg(strncmp(e.msg, want, strlen(want)) == 0,
		      "got \"%s\", want \"%s...\"", e.msg, want);
	ck_assert_msg(strstr(e.msg, c->what) != NULL, "got \"%s\"", e.msg);
}
END_TEST

START_TEST(test_missing_files)
{
	struct cat_err e;
	struct cat_model *m = NULL;
	cat *k = NULL;

	ck_assert_int_eq(cat_load(&k, "/nonexistent", &e), KV_ENOENT);
	ck_assert_ptr_null(k);
	ck_assert(strstr(e.msg, "/nonexistent/models.yaml") != NULL);
	ck_assert_int_eq(cat_model_from_hf(&m, "/nonexistent.json", &e),
			 KV_ENOENT);
	ck_assert_ptr_null(m);
}
END_TEST

/* ---- sizing: §3.2 fixtures --------------------------------------------- */

/*
 * Llama-3-8B on 1 x H100, vllm-project/vllm PR #10511: total 79.22 GiB x
 * 0.90; weights 14.96 GiB, non-torch 1.79 GiB, activation 1.26 GiB: "the
 * rest of the memory reserved for KV Cache is 53.29GiB".
 */
START_TEST(test_fixture_pr10511_memory)
{
	struct sz_engine e;
	struct sz_result *r;

	sz_engine_init(&e);
	ck_assert(cat_parse_bytes("79.22GiB", (uint64_t *)&e.gpu_memory_bytes));
	ck_assert(cat_parse_bytes("14.96GiB", (uint64_t *)&e.weights_bytes));
	ck_assert(cat_parse_bytes("1.79GiB", (uint64_t *)&e.non_torch_bytes));
	ck_assert(cat_parse_bytes("1.26GiB", (uint64_t *)&e.activation_bytes));
	r = size_it("meta-llama/Llama-3.1-8B", "h100-sxm", &e);
	ck_assert(r->fits);
	assert_log(r, "Available KV cache memory: 53.29 GiB");
	assert_log(r, "Model loading took 14.9600 GiB");
	/* the inputs are rounded to 0.01 GiB: 53.288 GiB, 27,283 blocks */
	ck_assert_uint_eq(r->num_blocks, 27283);
	assert_log(r, "GPU KV cache size: 436,528 tokens");
	assert_log(r, "Maximum concurrency for 131,072 tokens per request: "
		   "3.33x");
}
END_TEST

/* The same budget given exactly (DESIGN.md's example lines). */
START_TEST(test_fixture_436544_tokens)
{
	struct sz_engine e;
	struct sz_result *r;
	uint64_t kv;

	sz_engine_init(&e);
	ck_assert(cat_parse_bytes("53.29GiB", &kv));
	e.kv_cache_memory_bytes = (int64_t)kv;
	r = size_it("meta-llama/Llama-3.1-8B", "h100-sxm", &e);
	ck_assert(r->kv_memory_given);
	ck_assert_uint_eq(r->page_bytes, 65536);
	ck_assert_uint_eq(r->ngroup, 1);
	ck_assert_uint_eq(r->layers_per_group, 32);
	ck_assert_uint_eq(r->num_blocks, 27284);
	ck_assert_uint_eq(r->cache_tokens, 436544);
	assert_log(r, "GPU KV cache size: 436,544 tokens");
	assert_log(r, "Maximum concurrency for 131,072 tokens per request: "
		   "3.33x");
	ck_assert_ptr_null(logline(r, "Available KV cache memory"));
	ck_assert_ptr_nonnull(logline(r, "Initial free memory 79.18 GiB, "
				      "reserved 53.29 GiB memory for KV "
				      "Cache as specified by "
				      "kv_cache_memory_bytes"));
	e.max_model_len = 8192;
	r = size_it("meta-llama/Llama-3.1-8B", "h100-sxm", &e);
	assert_log(r, "Maximum concurrency for 8,192 tokens per request: "
		   "53.29x");
}
END_TEST

/* Llama-3.1-8B-Instruct on an L40S, vllm-project/vllm PR #17122:
 * "GPU KV cache size: 158,656 tokens", "Maximum concurrency for 32,768
 * tokens per request: 4.84x" -- 9,916 blocks. */
START_TEST(test_fixture_pr17122_l40s)
{
	struct sz_engine e;
	struct sz_result *r;

	sz_engine_init(&e);
	e.max_model_len = 32768;
	e.num_gpu_blocks_override = 9916;
	r = size_it("meta-llama/Llama-3.1-8B-Instruct", "l40s", &e);
	ck_assert_ptr_nonnull(logline(r, "Overriding num_gpu_blocks="));
	assert_log(r, "GPU KV cache size: 158,656 tokens");
	assert_log(r, "Maximum concurrency for 32,768 tokens per request: "
		   "4.84x");
	/* the same through the budget: 9,916 blocks of 2 MiB */
	sz_engine_init(&e);
	e.max_model_len = 32768;
	e.kv_cache_memory_bytes = 9916ll << 21;
	r = size_it("meta-llama/Llama-3.1-8B-Instruct", "l40s", &e);
	ck_assert_uint_eq(r->num_blocks, 9916);
	assert_log(r, "GPU KV cache size: 158,656 tokens");
	/* the L40S gets vllm serve's small batch defaults */
	ck_assert_uint_eq(r->max_num_batched_tokens, 2048);
	ck_assert_uint_eq(r->max_num_seqs, 256);
}
END_TEST

/* Llama-3.1-8B with 4.91 GiB of KV at 131,072 (kvplan's L4 case): vLLM
 * will not start; its estimate is the largest block-aligned length that
 * fits, 2,513 blocks = 40,208 tokens. */
START_TEST(test_fixture_l4_does_not_start)
{
	struct sz_engine e;
	struct sz_result *r;
	uint64_t kv;

	sz_engine_init(&e);
	ck_assert(cat_parse_bytes("4.91GiB", &kv));
	e.kv_cache_memory_bytes = (int64_t)kv;
	r = size_it("meta-llama/Llama-3.1-8B", "l40s", &e);
	ck_assert(!r->fits);
	ck_assert_uint_eq(r->needed_bytes, 16ull << 30);
	ck_assert_uint_eq(r->max_len_fit, 40208);
	ck_assert_str_eq(r->error, "To serve at least one request with the "
			 "models's max seq len (131072), (16.00 GiB KV cache "
			 "is needed, which is larger than the available KV "
			 "cache memory (4.91 GiB). Based on the available "
			 "memory, the estimated maximum model length is "
			 "40208. Try increasing `gpu_memory_utilization` or "
			 "decreasing `max_model_len` when initializing the "
			 "engine. See https://docs.vllm.ai/en/latest/"
			 "configuration/conserving_memory/ for more details.");
	ck_assert_ptr_null(logline(r, "GPU KV cache size"));
	/* at the suggested length it starts, with one request exactly */
	e.max_model_len = 40208;
	r = size_it("meta-llama/Llama-3.1-8B", "l40s", &e);
	ck_assert(r->fits);
	ck_assert_uint_eq(r->num_blocks, 2513);
	assert_log(r, "Maximum concurrency for 40,208 tokens per request: "
		   "1.00x");
	/* no memory at all */
	e.kv_cache_memory_bytes = 0;
	r = size_it("meta-llama/Llama-3.1-8B", "l40s", &e);
	ck_assert(!r->fits);
	ck_assert(strncmp(r->error, "No available memory for the cache "
			  "blocks.", 40) == 0);
}
END_TEST

/*
 * vLLM v1 on an H100 (79.18 GiB), llm-d/llm-d-benchmark:config_explorer/
 * empirical-vllm-memory-results.md: Llama-3.1-8B-Instruct, max-model-len
 * 16000, prefix caching, block size 128, util 0.9: "Model loading took
 * 14.99 GiB", activation 4.76, non-torch 0.13, "Available KV cache memory:
 * 51.38 GiB" -- every input from the catalog and kvsim's estimates.
 */
START_TEST(test_fixture_llmd_h100_estimates)
{
	struct sz_engine e;
	struct sz_result *r;
	const struct cat_model *l70 = model("meta-llama/Llama-3.1-70B");
	double act;

	sz_engine_init(&e);
	e.max_model_len = 16000;
	e.block_size = 128;
	e.enable_prefix_caching = 1;
	r = size_it("meta-llama/Llama-3.1-8B-Instruct", "h100-sxm", &e);
	ck_assert(r->fits);
	ck_assert_uint_eq(r->max_num_batched_tokens, 8192);
	ck_assert_uint_eq(r->max_num_seqs, 1024);
	assert_log(r, "Model loading took 14.9888 GiB");
	assert_log(r, "Available KV cache memory: 51.38 GiB");
	ck_assert_msg((double)r->activation_bytes / GIB > 4.755 &&
		      (double)r->activation_bytes / GIB < 4.765, "%f",
		      (double)r->activation_bytes / GIB);
	ck_assert_uint_eq(r->non_torch_bytes, (uint64_t)(0.13 * GIB + 0.5));
	ck_assert_uint_eq(r->block_size, 128);
	/* Llama-70B at TP 2 (measured 4.84 GiB activation, 0.55 non-torch) */
	act = (double)sz_activation_bytes(l70, 2, 2, 8192, 1024) / GIB;
	ck_assert_msg(act > 4.81 && act < 4.87, "%f", act);
	ck_assert_uint_eq(sz_non_torch_bytes(2),
			  (uint64_t)(0.55 * GIB + 0.5));
	/* the weights per rank halve with TP 2 (plus the rope cache) */
	ck_assert_uint_eq(sz_weights_bytes(l70, 2, 2, 2, 131072),
			  70553706496ull + 131072ull * 128 * 2);
}
END_TEST

/* ---- sizing: hybrids, seed bug 2 --------------------------------------- */

struct hybrid_case {
	const char *model;
	uint64_t state_bf16, state_fp32;	/* one layer, ssm bf16/fp32 */
	uint32_t bs_bf16, bs_fp32;
	uint32_t groups;
};

/* docs/ecosystem.md §1.3 (Qwen3-Next's SSM dtype follows the conv state in
 * vLLM: gated_delta_net_state_dtype) */
static const struct hybrid_case hybrid_cases[] = {
	{ "ibm-granite/granite-4.0-h-tiny", 806400, 1592832, 400, 784, 10 },
	{ "ai21labs/AI21-Jamba-1.5-Mini", 311296, 573440, 80, 144, 8 },
	{ "nvidia/Nemotron-H-8B-Base-8K", 2158592, 4255744, 528, 1040, 7 },
	{ "Qwen/Qwen3-Next-80B-A3B-Instruct", 1097728, 1097728, 544, 544, 4 },
};

START_TEST(test_hybrid_state_and_block_size)
{
	const struct hybrid_case *c = &hybrid_cases[_i];
	struct sz_engine e;
	struct sz_result *r;
	char line[160];

	sz_engine_init(&e);
	e.weights_bytes = 1ll << 30;	/* Qwen3-Next: weights need TP */
	r = size_it(c->model, "h200", &e);
	ck_assert(r->fits);
	ck_assert(!r->prefix_caching);		/* off for hybrids */
	ck_assert_uint_eq(r->mamba_state_bytes, c->state_bf16);
	ck_assert_uint_eq(r->block_size, c->bs_bf16);
	ck_assert_uint_eq(r->page_bytes, r->block_size * r->attn_token_bytes);
	ck_assert_uint_ge(r->page_bytes, r->mamba_state_bytes);
	ck_assert_uint_eq(r->ngroup, c->groups);
	ck_assert_uint_eq(r->mamba_block_size, r->max_model_len);
	snprintf(line, sizeof(line), "Setting attention block size to %u "
		 "tokens to ensure that attention page size is >= mamba page "
		 "size.", c->bs_bf16);
	assert_log(r, line);
	/* blocks per request: every attention group's aligned blocks plus
	 * one page per state group */
	ck_assert_uint_eq(r->blocks_per_request,
			  (r->max_model_len + r->block_size - 1) /
			  r->block_size + (c->groups - 1));
	snprintf(e.mamba_ssm_cache_dtype, sizeof(e.mamba_ssm_cache_dtype),
		 "float32");
	r = size_it(c->model, "h200", &e);
	ck_assert_uint_eq(r->mamba_state_bytes, c->state_fp32);
	ck_assert_uint_eq(r->block_size, c->bs_fp32);
}
END_TEST

/*
 * Seed bug 2: Granite-4.0-H-tiny at max_model_len 2048 with block size
 * 400.  One request takes 6 attention blocks (2,400 slots, not 2,048) in
 * each of the 4 attention layers and one padded 819,200-byte page in each
 * of the 36 Mamba layers: 60 pages.  A budget of exactly that starts
 * (vLLM 5e5a7eb16f12 logs "GPU KV cache size: 400 tokens"); one byte less
 * does not, and the raw-token estimate of the bug does not either.
 */
START_TEST(test_seed_bug2_granite_bs400)
{
	const uint64_t page = 819200, need = 60 * page;
	const uint64_t raw = 4ull * 2048 * 2048 + 36ull * 806400;
	struct sz_engine e;
	struct sz_result *r;

	sz_engine_init(&e);
	e.max_model_len = 2048;
	e.block_size = 400;
	e.kv_cache_memory_bytes = (int64_t)need;
	r = size_it("ibm-granite/granite-4.0-h-tiny", "h100-sxm", &e);
	ck_assert(r->fits);
	ck_assert_uint_eq(r->block_size, 400);
	ck_assert_uint_eq(r->page_bytes, page);
	ck_assert_uint_eq(r->needed_bytes, need);
	ck_assert_uint_gt(r->needed_bytes, raw);
	ck_assert_uint_eq(r->ngroup, 10);
	ck_assert_uint_eq(r->layers_per_group, 4);
	ck_assert_uint_eq(r->num_blocks, 15);
	ck_assert_uint_eq(r->blocks_per_request, 15);
	ck_assert_uint_eq(r->cache_tokens, 400);
	assert_log(r, "GPU KV cache size: 400 tokens");
	assert_log(r, "Maximum concurrency for 2,048 tokens per request: "
		   "1.00x");
	/* the user asked for 400: no "Setting attention block size" line */
	ck_assert_ptr_null(logline(r, "Setting attention block size"));
	assert_log(r, "Padding mamba page size by 1.59% to ensure that mamba "
		   "page size and attention page size are exactly equal.");

	e.kv_cache_memory_bytes = (int64_t)need - 1;
	r = size_it("ibm-granite/granite-4.0-h-tiny", "h100-sxm", &e);
	ck_assert(!r->fits);
	ck_assert_uint_eq(r->max_len_fit, 2000);
	ck_assert(strstr(r->error, "max seq len (2048)") != NULL);
	ck_assert(strstr(r->error, "estimated maximum model length is "
			 "2000.") != NULL);
	e.kv_cache_memory_bytes = (int64_t)raw;
	r = size_it("ibm-granite/granite-4.0-h-tiny", "h100-sxm", &e);
	ck_assert(!r->fits);
	ck_assert_uint_eq(r->max_len_fit, 1600);

	/* the default block size (16) is raised to 400 and says so */
	e.block_size = 0;
	e.kv_cache_memory_bytes = (int64_t)need;
	r = size_it("ibm-granite/granite-4.0-h-tiny", "h100-sxm", &e);
	ck_assert_uint_eq(r->block_size, 400);
	assert_log(r, "Setting attention block size to 400 tokens to ensure "
		   "that attention page size is >= mamba page size.");
	e.block_size = 16;
	r = size_it("ibm-granite/granite-4.0-h-tiny", "h100-sxm", &e);
	ck_assert_uint_eq(r->block_size, 400);
	/* a larger user block size is kept, the state padded to it */
	e.block_size = 1024;
	e.kv_cache_memory_bytes = SZ_UNSET;
	r = size_it("ibm-granite/granite-4.0-h-tiny", "h100-sxm", &e);
	ck_assert_uint_eq(r->block_size, 1024);
	ck_assert_uint_eq(r->page_bytes, 1024 * 2048);
	/* fp8 KV halves the attention page: the block size doubles */
	e.block_size = 0;
	snprintf(e.kv_cache_dtype, sizeof(e.kv_cache_dtype), "fp8");
	r = size_it("ibm-granite/granite-4.0-h-tiny", "h100-sxm", &e);
	ck_assert_uint_eq(r->block_size, 800);
	/* prefix caching (Mamba-2 may keep it): lcm(256, 16) alignment */
	snprintf(e.kv_cache_dtype, sizeof(e.kv_cache_dtype), "auto");
	e.enable_prefix_caching = 1;
	r = size_it("ibm-granite/granite-4.0-h-tiny", "h100-sxm", &e);
	ck_assert(r->prefix_caching);
	ck_assert_uint_eq(r->block_size, 512);
	ck_assert_uint_eq(r->mamba_block_size, 512);
	ck_assert_ptr_nonnull(logline(r, "Warning: Prefix caching is "
				      "currently enabled."));
}
END_TEST

START_TEST(test_prefix_caching_refused_for_mamba1)
{
	struct sz_engine e;
	struct sz_result *r;

	sz_engine_init(&e);
	e.enable_prefix_caching = 1;
	r = size_it("ai21labs/AI21-Jamba-1.5-Mini", "h200", &e);
	ck_assert(!r->prefix_caching);
	assert_log(r, "Hybrid or mamba-based model detected without support "
		   "for prefix caching: disabling.");
	ck_assert_uint_eq(r->block_size, 80);
}
END_TEST

/* ---- sizing: groups, sliding windows, MLA, TP --------------------------- */

START_TEST(test_sliding_window_groups)
{
	struct sz_engine e;
	struct sz_result *r;

	sz_engine_init(&e);
	/* Mistral: one sliding group; a request needs at most
	 * cdiv(4095 + 2048, 16) + 1 = 385 blocks (A100: batch 2048) */
	e.kv_cache_memory_bytes = 385ll * 32 * 65536 * 2;
	r = size_it("mistralai/Mistral-7B-v0.1", "a100-80g", &e);
	ck_assert_uint_eq(r->max_num_batched_tokens, 2048);
	ck_assert_uint_eq(r->ngroup, 1);
	ck_assert_uint_eq(r->group[0].kind, KVC_SPEC_SLIDING);
	ck_assert_uint_eq(r->blocks_per_request, 385);
	ck_assert_uint_eq(r->num_blocks, 770);
	assert_log(r, "Maximum concurrency for 32,768 tokens per request: "
		   "2.00x");
	assert_log(r, "GPU KV cache size: 12,320 tokens");
	/* Gemma-2: 21 sliding + 21 full, two groups of 21 layers */
	sz_engine_init(&e);
	e.kv_cache_memory_bytes = 1ll << 34;
	r = size_it("google/gemma-2-9b", "h100-sxm", &e);
	ck_assert_uint_eq(r->ngroup, 2);
	ck_assert_uint_eq(r->layers_per_group, 21);
	ck_assert_uint_eq(r->padding_layers, 0);
	ck_assert_uint_eq(r->page_bytes, 16 * 8192);
	/* 16 GiB // 128 KiB // 21 = 6241 blocks, // 2 groups * 16 */
	ck_assert_uint_eq(r->num_blocks, 6241);
	ck_assert_uint_eq(r->cache_tokens, 3120 * 16);
	/* full 512 + sliding cdiv(min(4095 + 8192, 8192), 16) + 1 = 513 */
	ck_assert_uint_eq(r->blocks_per_request, 512 + 513);
	/* Gemma-3-1B: 22 sliding + 4 full: groups of 4, 2 padding layers */
	r = size_it("google/gemma-3-1b-it", "h100-sxm", &e);
	ck_assert_uint_eq(r->ngroup, 7);
	ck_assert_uint_eq(r->layers_per_group, 4);
	ck_assert_uint_eq(r->padding_layers, 2);
	assert_log(r, "Add 2 padding layers, may waste at most 9.09% KV cache "
		   "memory");
}
END_TEST

START_TEST(test_mla_block_sizes)
{
	struct sz_engine e;
	struct sz_result *r;

	sz_engine_init(&e);
	e.tensor_parallel_size = 8;
	e.kv_cache_memory_bytes = 1ll << 36;
	/* one 576-element latent per token and layer, whatever the TP */
	r = size_it("deepseek-ai/DeepSeek-V3", "h200", &e);
	ck_assert_uint_eq(r->attn_token_bytes, 1152);
	ck_assert_uint_eq(r->block_size, 64);	/* FlashMLA on Hopper */
	assert_log(r, "Forcing kv cache block size to 64 for FlashMLA "
		   "backend.");
	r = size_it("deepseek-ai/DeepSeek-V3", "b200", &e);
	ck_assert_uint_eq(r->block_size, 128);	/* CUTLASS MLA */
	r = size_it("deepseek-ai/DeepSeek-V3", "a100-80g", &e);
	ck_assert_uint_eq(r->block_size, 16);
	ck_assert_ptr_null(logline(r, "Forcing"));
	e.block_size = 128;			/* a multiple of 64 stays */
	r = size_it("deepseek-ai/DeepSeek-V3", "h200", &e);
	ck_assert_uint_eq(r->block_size, 128);
	e.block_size = 0;
	snprintf(e.kv_cache_dtype, sizeof(e.kv_cache_dtype), "fp8_ds_mla");
	r = size_it("deepseek-ai/DeepSeek-V3", "h200", &e);
	ck_assert_uint_eq(r->attn_token_bytes, 656);
	snprintf(e.kv_cache_dtype, sizeof(e.kv_cache_dtype), "fp8");
	r = size_it("deepseek-ai/DeepSeek-V3", "h200", &e);
	ck_assert_uint_eq(r->attn_token_bytes, 576);
}
END_TEST

START_TEST(test_tensor_parallel)
{
	struct sz_engine e;
	struct sz_result *r;
	char why[256];
	struct sz_result rr;

	sz_engine_init(&e);
	e.kv_cache_memory_bytes = 1ll << 34;
	e.tensor_parallel_size = 4;	/* 8 KV heads -> 2 per rank */
	r = size_it("meta-llama/Llama-3.1-70B", "h100-sxm", &e);
	ck_assert_uint_eq(r->attn_token_bytes, 2 * 2 * 128 * 2);
	e.tensor_parallel_size = 16;	/* fewer KV heads than ranks */
	r = size_it("meta-llama/Llama-3.1-70B", "h100-sxm", &e);
	ck_assert_uint_eq(r->attn_token_bytes, 2 * 1 * 128 * 2);
	/* Granite Mamba state per rank: groups replicated, heads split */
	e.tensor_parallel_size = 2;
	r = size_it("ibm-granite/granite-4.0-h-tiny", "h100-sxm", &e);
	ck_assert_uint_eq(r->mamba_state_bytes,
			  kvc_mamba2_state_bytes(4, 1536, 1, 128, 24, 64, 2,
						 2));
	ck_assert_uint_eq(r->attn_token_bytes, 2 * 2 * 128 * 2);
	/* 12 attention heads do not split 8 ways */
	e.tensor_parallel_size = 8;
	ck_assert_int_eq(sz_compute(model("ibm-granite/granite-4.0-h-tiny"),
				    gpu("h100-sxm"), &e, &rr, why,
				    sizeof(why)), KV_EINVAL);
	ck_assert_str_eq(why, "Total number of attention heads (12) must be "
			 "divisible by tensor parallel size (8).");
}
END_TEST

START_TEST(test_bad_settings)
{
	struct sz_engine e;
	struct sz_result r;
	char why[256];
	const struct cat_model *m = model("meta-llama/Llama-3.1-8B");
	const struct cat_gpu *g = gpu("h100-sxm");

	sz_engine_init(&e);
	e.max_model_len = 131073;
	ck_assert_int_eq(sz_compute(m, g, &e, &r, why, sizeof(why)),
			 KV_EINVAL);
	ck_assert(strstr(why, "User-specified max_model_len (131073)") !=
		  NULL);
	sz_engine_init(&e);
	snprintf(e.kv_cache_dtype, sizeof(e.kv_cache_dtype), "fp4");
	ck_assert_int_eq(sz_compute(m, g, &e, &r, why, sizeof(why)),
			 KV_EINVAL);
	snprintf(e.kv_cache_dtype, sizeof(e.kv_cache_dtype), "fp8_ds_mla");
	ck_assert_int_eq(sz_compute(m, g, &e, &r, why, sizeof(why)),
			 KV_EINVAL);
	sz_engine_init(&e);
	e.gpu_memory_utilization = 1.5;
	ck_assert_int_eq(sz_compute(m, g, &e, &r, why, sizeof(why)),
			 KV_EINVAL);
	sz_engine_init(&e);
	e.max_num_batched_tokens = 512;	/* < 1024 seqs */
	ck_assert_int_eq(sz_compute(m, g, &e, &r, why, sizeof(why)),
			 KV_EINVAL);
	ck_assert_str_eq(why, "max_num_batched_tokens (512) must be greater "
			 "than or equal to max_num_seqs (1024).");
	/* weights larger than the GPU: vLLM dies loading them */
	sz_engine_init(&e);
	ck_assert_int_eq(sz_compute(model("meta-llama/Llama-3.1-70B"), g, &e,
				    &r, why, sizeof(why)), KV_OK);
	ck_assert(!r.fits);
	ck_assert(strncmp(r.error, "CUDA out of memory", 18) == 0);
}
END_TEST

START_TEST(test_commas)
{
	char b[32];

	sz_commas(b, sizeof(b), 0);
	ck_assert_str_eq(b, "0");
	sz_commas(b, sizeof(b), 999);
	ck_assert_str_eq(b, "999");
	sz_commas(b, sizeof(b), 1000);
	ck_assert_str_eq(b, "1,000");
	sz_commas(b, sizeof(b), 436544);
	ck_assert_str_eq(b, "436,544");
	sz_commas(b, sizeof(b), 18446744073709551615ull);
	ck_assert_str_eq(b, "18,446,744,073,709,551,615");
	sz_commas(b, 4, 436544);
	ck_assert_str_eq(b, "436");
}
END_TEST

/*
 * Every mixer kind has a complete row in sim/model/mixer.c, with the hooks
 * its class needs: a kind added to enum cat_mixer without one fails here.
 */
static void
check_mixer_row(int k, const struct cat_mixer_ops *o)
{
	bool attn = o->cls == CAT_MIXC_ATTENTION;
	bool rec = o->cls == CAT_MIXC_RECURRENT;

	ck_assert_msg(o->name != NULL && o->key != NULL && o->letter != '\0',
		      "mixer kind %d has no row", k);
	ck_assert_str_eq(cat_mixer_name((enum cat_mixer)k), o->name);
	ck_assert_msg(o->params != NULL && o->activations != NULL,
		      "mixer %s: params and activations are required", o->key);
	ck_assert_msg((o->kv_bytes != NULL) == attn &&
		      (o->work != NULL) == attn,
		      "mixer %s: kv_bytes and work go with attention", o->key);
	ck_assert_msg((o->state_bytes != NULL) == rec,
		      "mixer %s: state_bytes goes with recurrent state",
		      o->key);
	ck_assert_msg((o->cost != NULL) == (o->cls != CAT_MIXC_NONE),
		      "mixer %s: every mixer has cost figures", o->key);
	ck_assert_msg((o->spec == KVC_SPEC_STATE) == rec || !(attn || rec),
		      "mixer %s: recurrent kinds and only they are state "
		      "specs", o->key);
	ck_assert_msg(!o->latent || attn, "mixer %s: a latent is attention",
		      o->key);
	ck_assert_msg(!o->prefix_caching || rec, "mixer %s: prefix caching "
		      "is a recurrent-state property", o->key);
	ck_assert_msg(!o->windowed || attn, "mixer %s: a window is "
		      "attention", o->key);
}

START_TEST(test_mixer_table_complete)
{
	ck_assert_ptr_null(cat_mixer_ops(CAT_NMIXERS));
	ck_assert_str_eq(cat_mixer_name(CAT_NMIXERS), "?");
	ck_assert_int_eq(cat_mixer_ops(CAT_MIX_NONE)->cls, CAT_MIXC_NONE);
	for (int k = 0; k < CAT_NMIXERS; k++) {
		const struct cat_mixer_ops *o =
			cat_mixer_ops((enum cat_mixer)k);

		ck_assert_ptr_nonnull(o);
		check_mixer_row(k, o);
		/* names, keys and letters tell the kinds apart */
		for (int j = 0; j < k; j++) {
			const struct cat_mixer_ops *p =
				cat_mixer_ops((enum cat_mixer)j);

			ck_assert_str_ne(p->name, o->name);
			ck_assert_str_ne(p->key, o->key);
			ck_assert_int_ne(p->letter, o->letter);
		}
	}
}
END_TEST

/* The KV hooks give the numbers the catalog documents: Llama-3.1-8B's
 * 131,072 B of KV a token (32 layers of 4 KiB; one KV head a rank from TP
 * 8 on), DeepSeek-V3's 70,272 (61 latents of 1,152 B, on every rank). */
START_TEST(test_mixer_kv_bytes)
{
	const struct cat_model *l = cat_find_model(C, "llama-3.1-8b");
	const struct cat_model *d = cat_find_model(C, "deepseek-v3");
	const struct cat_mixer_ops *full = cat_mixer_ops(CAT_MIX_FULL);
	const struct cat_mixer_ops *mla = cat_mixer_ops(CAT_MIX_MLA);

	ck_assert_ptr_nonnull(l);
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(full->kv_bytes(l, 1, 2, 1), 4096);
	ck_assert_uint_eq(full->kv_bytes(l, 8, 2, 1), 512);
	/* 16 ranks, 8 KV heads: each rank holds one (replicated) */
	ck_assert_uint_eq(full->kv_bytes(l, 16, 2, 1), 512);
	ck_assert_uint_eq(full->kv_bytes(l, 1, 2, 16), 65536);
	ck_assert_uint_eq(mla->kv_bytes(d, 1, 2, 1), 1152);
	ck_assert_uint_eq(mla->kv_bytes(d, 8, 2, 1), 1152);
}
END_TEST

static Suite *
catalog_suite(void)
{
	Suite *s = suite_create("catalog");
	TCase *tc = tcase_create("catalog");
	TCase *sz = tcase_create("sizing");

	tcase_set_timeout(tc, 60);
	tcase_set_timeout(sz, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_checked_fixture(sz, setup, teardown);
	tcase_add_test(tc, test_catalog_has_the_models_and_gpus);
	tcase_add_test(tc, test_lookup);
	tcase_add_test(tc, test_gpu_numbers);
	tcase_add_test(tc, test_parse_bytes);
	tcase_add_loop_test(tc, test_layers_and_kv_bytes, 0,
			    sizeof(kv_cases) / sizeof(kv_cases[0]));
	tcase_add_test(tc, test_layer_patterns);
	tcase_add_loop_test(tc, test_param_counts, 0,
			    sizeof(param_cases) / sizeof(param_cases[0]));
	tcase_add_test(tc, test_hf_config_matches_catalog);
	tcase_add_test(tc, test_hf_config_text_config);
	tcase_add_loop_test(tc, test_bad_input_file_line_col, 0,
			    sizeof(bad_cases) / sizeof(bad_cases[0]));
	tcase_add_test(tc, test_missing_files);
	tcase_add_test(tc, test_mixer_table_complete);
	tcase_add_test(tc, test_mixer_kv_bytes);
	tcase_add_test(sz, test_fixture_pr10511_memory);
	tcase_add_test(sz, test_fixture_436544_tokens);
	tcase_add_test(sz, test_fixture_pr17122_l40s);
	tcase_add_test(sz, test_fixture_l4_does_not_start);
	tcase_add_test(sz, test_fixture_llmd_h100_estimates);
	tcase_add_loop_test(sz, test_hybrid_state_and_block_size, 0,
			    sizeof(hybrid_cases) / sizeof(hybrid_cases[0]));
	tcase_add_test(sz, test_seed_bug2_granite_bs400);
	tcase_add_test(sz, test_prefix_caching_refused_for_mamba1);
	tcase_add_test(sz, test_sliding_window_groups);
	tcase_add_test(sz, test_mla_block_sizes);
	tcase_add_test(sz, test_tensor_parallel);
	tcase_add_test(sz, test_bad_settings);
	tcase_add_test(sz, test_commas);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, sz);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(catalog_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
