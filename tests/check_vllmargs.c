/*
 * check_vllmargs.c -- `kvsim run --vllm-args` (sim/vllmargs.h, docs/run.md
 * "vLLM's own flags"): the string split as a shell splits it; each vllm
 * serve option read as vLLM's argparse reads it and turned into the
 * settings it stands for, in order; the refusals and their words; the
 * settings applied to a configuration between the file and --set.
 */
#include "config.h"

#include "sim/runcfg.h"
#include "sim/vllmargs.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the splitter ---------------------------------------------------- */

/* Split s and compare the words with want (NULL-terminated). */
static void
split_is(const char *s, const char *const *want)
{
	struct sim_vargs_words w;
	char err[256];
	size_t n = 0;

	ck_assert_int_eq(sim_vargs_split(s, &w, err, sizeof(err)), KV_OK);
	while (want[n] != NULL)
		n++;
	ck_assert_msg(w.n == n, "%s: %zu words, want %zu", s, w.n, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_str_eq(w.w[i], want[i]);
	sim_vargs_words_release(&w);
}

static void
split_fails(const char *s, const char *msg)
{
	struct sim_vargs_words w;
	char err[256];

	ck_assert_int_eq(sim_vargs_split(s, &w, err, sizeof(err)), KV_EINVAL);
	ck_assert_str_eq(err, msg);
	sim_vargs_words_release(&w);
}

START_TEST(test_split)
{
	split_is("", (const char *[]){ NULL });
	split_is("  \t\n ", (const char *[]){ NULL });
	split_is("a  b\tc\nd", (const char *[]){ "a", "b", "c", "d", NULL });
	split_is("--x='a b' \"c d\"",
		 (const char *[]){ "--x=a b", "c d", NULL });
	/* single quotes keep everything, double quotes four escapes */
	split_is("'a\\\"b' \"a\\\"b\\\\c\\$d\\ne\"",
		 (const char *[]){ "a\\\"b", "a\"b\\c$d\\ne", NULL });
	split_is("a\\ b \\'c", (const char *[]){ "a b", "'c", NULL });
	/* an empty quoted word is a word; quotes join a word's parts */
	split_is("'' x", (const char *[]){ "", "x", NULL });
	split_is("a'b'\"c\"d", (const char *[]){ "abcd", NULL });
	/* a backslash-newline continues the line, in or out of a word */
	split_is("-tp \\\n 2 ab\\\ncd",
		 (const char *[]){ "-tp", "2", "abcd", NULL });
	split_is("{\"method\": \"eagle\"}",
		 (const char *[]){ "{method:", "eagle}", NULL });
	split_is("'{\"method\": \"eagle\"}'",
		 (const char *[]){ "{\"method\": \"eagle\"}", NULL });
	split_fails("a 'b c", "--vllm-args: unterminated ' at column 3");
	split_fails("a \"b", "--vllm-args: unterminated \" at column 3");
	split_fails("ab\\", "--vllm-args: trailing backslash at column 3");
}
END_TEST

/* ---- the mapping ----------------------------------------------------- */

/* The settings one map produced, as "where|key=value" lines. */
struct rec {
	char text[4096];
	int fail_at;		/* refuse the n-th setting (1-based); 0 none */
	int n;
};

static kv_err
rec_set(void *ctx, const char *key, const char *value, const char *where,
	char *err, size_t errlen)
{
	struct rec *r = ctx;
	size_t n = strlen(r->text);

	if (++r->n == r->fail_at) {
		snprintf(err, errlen, "%s: %s: refused", where, key);
		return KV_EINVAL;
	}
	snprintf(r->text + n, sizeof(r->text) - n, "%s|%s=%s\n", where, key,
		 value);
	return KV_OK;
}

/* Map args; the settings must be want, the ignored list ign. */
static void
map_is(const char *args, const char *want, const char *ign)
{
	struct rec r;
	char err[1024], ignored[512] = "";

	memset(&r, 0, sizeof(r));
	ck_assert_msg(sim_vargs_map(args, rec_set, &r, ignored,
				    sizeof(ignored), err, sizeof(err)) ==
		      KV_OK, "%s: %s", args, err);
	ck_assert_str_eq(r.text, want);
	ck_assert_str_eq(ignored, ign);
}

static void
map_fails(const char *args, const char *msg)
{
	struct rec r;
	char err[1024];

	memset(&r, 0, sizeof(r));
	ck_assert_msg(sim_vargs_map(args, rec_set, &r, NULL, 0, err,
				    sizeof(err)) == KV_EINVAL, "%s: accepted",
		      args);
	ck_assert_str_eq(err, msg);
}

START_TEST(test_map_forms)
{
	/* = and space forms, '_' for '-', the short alias, in order */
	map_is("--max-num-seqs 64 --max_num_batched_tokens=2048 -tp 2 "
	       "--tensor-parallel-size=4 -tp=8",
	       "--vllm-args: --max-num-seqs|engine.max_num_seqs=64\n"
	       "--vllm-args: --max-num-batched-tokens|"
	       "engine.max_num_batched_tokens=2048\n"
	       "--vllm-args: -tp|engine.tensor_parallel_size=2\n"
	       "--vllm-args: --tensor-parallel-size|"
	       "engine.tensor_parallel_size=4\n"
	       "--vllm-args: -tp|engine.tensor_parallel_size=8\n", "");
	/* both boolean forms, and --enforce-eager's */
	map_is("--enable-prefix-caching --no-enable-prefix-caching "
	       "--no-enable-chunked-prefill --async-scheduling "
	       "--enforce-eager --no-enforce-eager",
	       "--vllm-args: --enable-prefix-caching|"
	       "engine.enable_prefix_caching=true\n"
	       "--vllm-args: --no-enable-prefix-caching|"
	       "engine.enable_prefix_caching=false\n"
	       "--vllm-args: --no-enable-chunked-prefill|"
	       "engine.enable_chunked_prefill=false\n"
	       "--vllm-args: --async-scheduling|"
	       "engine.async_scheduling=true\n"
	       "--vllm-args: --enforce-eager|cost.cuda_graphs=off\n"
	       "--vllm-args: --no-enforce-eager|cost.cuda_graphs=vllm\n", "");
	/* the positional model comes last, over --model (vllm serve) */
	map_is("meta-llama/Llama-3.1-70B --model x/y --seed 7",
	       "--vllm-args: --model|model=x/y\n"
	       "--vllm-args: --seed|seed=7\n"
	       "--vllm-args: model_tag|model=meta-llama/Llama-3.1-70B\n",
	       "");
	/* a value may be a negative number */
	map_is("--max-model-len -1 --num-lookahead-slots -3",
	       "--vllm-args: --max-model-len|engine.max_model_len=auto\n"
	       "--vllm-args: --num-lookahead-slots|"
	       "engine.num_lookahead_slots=-3\n", "");
}
END_TEST

START_TEST(test_map_values)
{
	/* vLLM's human-readable integers */
	map_is("--max-model-len 8k --max-model-len 8K --max-model-len 25.6k "
	       "--max-model-len auto --max-num-batched-tokens 1M "
	       "--kv-cache-memory-bytes 40G --kv-cache-memory-bytes 2g "
	       "--max-model-len 4096",
	       "--vllm-args: --max-model-len|engine.max_model_len=8000\n"
	       "--vllm-args: --max-model-len|engine.max_model_len=8192\n"
	       "--vllm-args: --max-model-len|engine.max_model_len=25600\n"
	       "--vllm-args: --max-model-len|engine.max_model_len=auto\n"
	       "--vllm-args: --max-num-batched-tokens|"
	       "engine.max_num_batched_tokens=1048576\n"
	       "--vllm-args: --kv-cache-memory-bytes|"
	       "engine.kv_cache_memory_bytes=42949672960\n"
	       "--vllm-args: --kv-cache-memory-bytes|"
	       "engine.kv_cache_memory_bytes=2000000000\n"
	       "--vllm-args: --max-model-len|engine.max_model_len=4096\n", "");
	/* vLLM's other dtype names; a choice passes as given */
	map_is("--dtype half --dtype float --dtype bfloat16 --block-size 32 "
	       "--kv-cache-dtype fp8 --scheduling-policy priority",
	       "--vllm-args: --dtype|engine.dtype=float16\n"
	       "--vllm-args: --dtype|engine.dtype=float32\n"
	       "--vllm-args: --dtype|engine.dtype=bfloat16\n"
	       "--vllm-args: --block-size|engine.block_size=32\n"
	       "--vllm-args: --kv-cache-dtype|engine.kv_cache_dtype=fp8\n"
	       "--vllm-args: --scheduling-policy|"
	       "engine.scheduling_policy=priority\n", "");
	/* a JSON object: one setting per field, in its order; the dotted
	 * form sets one field */
	map_is("--speculative-config '{\"method\": \"eagle\", "
	       "\"num_speculative_tokens\": 3, \"model\": \"a/b\"}' "
	       "--speculative-config.prompt_lookup_max=4",
	       "--vllm-args: --speculative-config|"
	       "engine.speculative_config.method=eagle\n"
	       "--vllm-args: --speculative-config|"
	       "engine.speculative_config.num_speculative_tokens=3\n"
	       "--vllm-args: --speculative-config|"
	       "engine.speculative_config.model=a/b\n"
	       "--vllm-args: --speculative-config.prompt_lookup_max|"
	       "engine.speculative_config.prompt_lookup_max=4\n", "");
	/* the rows of the other parts of issue 20 */
	map_is("-pp 2 -q fp8 --cpu-offload-gb 4 --long-prefill-token-threshold "
	       "512 --max-num-partial-prefills 2 --max-long-partial-prefills 1 "
	       "--enable-lora --max-loras 4 --max-lora-rank 64 "
	       "--max-cpu-loras 8",
	       "--vllm-args: -pp|engine.pipeline_parallel_size=2\n"
	       "--vllm-args: -q|engine.quantization=fp8\n"
	       "--vllm-args: --cpu-offload-gb|engine.cpu_offload_gb=4\n"
	       "--vllm-args: --long-prefill-token-threshold|"
	       "engine.long_prefill_token_threshold=512\n"
	       "--vllm-args: --max-num-partial-prefills|"
	       "engine.max_num_partial_prefills=2\n"
	       "--vllm-args: --max-long-partial-prefills|"
	       "engine.max_long_partial_prefills=1\n"
	       "--vllm-args: --enable-lora|engine.enable_lora=true\n"
	       "--vllm-args: --max-loras|engine.max_loras=4\n"
	       "--vllm-args: --max-lora-rank|engine.max_lora_rank=64\n"
	       "--vllm-args: --max-cpu-loras|engine.max_cpu_loras=8\n", "");
}
END_TEST

START_TEST(test_map_ignored)
{
	map_is("--host 0.0.0.0 --port=8000 --api-key k --disable-log-stats "
	       "--no-enable-log-requests --served-model-name a b --hf-token "
	       "--block-size 16",
	       "--vllm-args: --block-size|engine.block_size=16\n",
	       "--host, --port, --api-key, --disable-log-stats, "
	       "--no-enable-log-requests, --served-model-name, --hf-token");
	/* --served-model-name and --api-key take one or more (nargs +), as
	 * argparse takes them; --hf-token's value is optional */
	map_is("m --served-model-name a b --api-key k1 k2 --hf-token t",
	       "--vllm-args: model_tag|model=m\n",
	       "--served-model-name, --api-key, --hf-token");
}
END_TEST

START_TEST(test_map_refusals)
{
	map_fails("--foo 3", "--vllm-args: --foo: not a vllm serve option");
	map_fails("--max-num-seq 3",
		  "--vllm-args: --max-num-seq: not a vllm serve option");
	map_fails("--preemption-mode swap",
		  "--vllm-args: --preemption-mode: not a vllm serve option");
	map_fails("--enable-eplb",
		  "--vllm-args: --enable-eplb: vLLM option kvsim does not "
		  "model");
	map_fails("--no-enable-eplb",
		  "--vllm-args: --no-enable-eplb: vLLM option kvsim does not "
		  "model");
	map_fails("-dp 2", "--vllm-args: -dp: vLLM option kvsim does not "
		  "model");
	map_fails("--data_parallel_size=2",
		  "--vllm-args: --data-parallel-size: vLLM option kvsim does "
		  "not model");
	map_fails("-x", "--vllm-args: -x: not a vllm serve option");
	map_fails("--no-block-size 3",
		  "--vllm-args: --no-block-size: not a vllm serve option");
	map_fails("--no-disable-log-stats",
		  "--vllm-args: --no-disable-log-stats: not a vllm serve "
		  "option");
	map_fails("--block-size", "--vllm-args: --block-size: expected a "
		  "value");
	map_fails("--block-size --max-num-seqs 3",
		  "--vllm-args: --block-size: expected a value");
	map_fails("--block-size 7",
		  "--vllm-args: --block-size: expected one of 1, 8, 16, 32, "
		  "64, 128, 256, got '7'");
	map_fails("--dtype fp8", "--vllm-args: --dtype: expected one of "
		  "auto, bfloat16, float, float16, float32, half, got 'fp8'");
	map_fails("--enable-prefix-caching=false",
		  "--vllm-args: --enable-prefix-caching: takes no value "
		  "(--enable-prefix-caching or --no-enable-prefix-caching)");
	map_fails("--max-model-len 1.5K",
		  "--vllm-args: --max-model-len: expected an integer (or 1k, "
		  "25.6k, 1K: powers of 1000 and 1024), -1 or auto, got "
		  "'1.5K'");
	map_fails("--max-num-batched-tokens auto",
		  "--vllm-args: --max-num-batched-tokens: expected an integer "
		  "(or 1k, 25.6k, 1K: powers of 1000 and 1024), got 'auto'");
	map_fails("a b", "--vllm-args: 'b': a second positional argument "
		  "(vllm serve takes one, the model)");
	map_fails("--speculative-config '[1, 2]'",
		  "--vllm-args: --speculative-config: expected a JSON object "
		  "({\"field\": value, ...}), got '[1, 2]'");
	map_fails("--speculative-config ''",
		  "--vllm-args: --speculative-config: expected a JSON object "
		  "({\"field\": value, ...}), got ''");
	map_fails("--speculative-config '{\"a\": 1, \"a\": 2}'",
		  "--vllm-args: --speculative-config: not valid JSON: "
		  "JSON:1:10: duplicate key 'a'");
	map_fails("--speculative-config '{\"a\": {\"b\": 1}}'",
		  "--vllm-args: --speculative-config: a: expected a number, a "
		  "string, true or false");
	map_fails("--block-size.x 3",
		  "--vllm-args: --block-size.x: not a vllm serve option");
	map_fails("--disable-log-stats=1",
		  "--vllm-args: --disable-log-stats: takes no value");
	map_fails("--port", "--vllm-args: --port: expected a value");
	map_fails("'--x", "--vllm-args: unterminated ' at column 1");
}
END_TEST

/* A setter's refusal stops the map there, its message as it is. */
START_TEST(test_map_stops)
{
	struct rec r;
	char err[512];

	memset(&r, 0, sizeof(r));
	r.fail_at = 2;
	ck_assert_int_eq(sim_vargs_map("--max-num-seqs 4 -tp 2 --seed 1",
				       rec_set, &r, NULL, 0, err,
				       sizeof(err)), KV_EINVAL);
	ck_assert_str_eq(err, "--vllm-args: -tp: "
			 "engine.tensor_parallel_size: refused");
	ck_assert_str_eq(r.text, "--vllm-args: --max-num-seqs|"
			 "engine.max_num_seqs=4\n");
	ck_assert_int_eq(r.n, 2);
}
END_TEST

/* ---- onto a configuration -------------------------------------------- */

START_TEST(test_config_order)
{
	static const char *const vargs[] = {
		"--max-num-seqs 64 --block-size 32 --no-enable-prefix-caching",
		"--max-num-seqs=96 --host h",
	};
	static const char *const sets[] = { "engine.block_size=64" };
	struct sim_config c;
	char err[1024], ign[256] = "";

	/* --vllm-args in order, then --set over them */
	ck_assert_int_eq(sim_vargs_config(&c, NULL, vargs, 2, sets, 1, ign,
					  sizeof(ign), err, sizeof(err)),
			 KV_OK);
	ck_assert_uint_eq(c.eng.max_num_seqs, 96);
	ck_assert_uint_eq(c.eng.block_size, 64);
	ck_assert_int_eq(c.eng.enable_prefix_caching, 0);
	ck_assert_str_eq(ign, "--host");
	sim_config_release(&c);
	/* a value runcfg refuses: its words, where the --vllm-args flag */
	ck_assert_int_eq(sim_vargs_config(&c, NULL, (const char *[]){
					  "--gpu-memory-utilization 1.5" }, 1,
					  NULL, 0, NULL, 0, err, sizeof(err)),
			 KV_EINVAL);
	ck_assert_str_eq(err, "--vllm-args: --gpu-memory-utilization: "
			 "engine.gpu_memory_utilization: expected a number in "
			 "(0, 1], got '1.5'");
	sim_config_release(&c);
}
END_TEST

START_TEST(test_table)
{
	const char *name, *alias, *key;
	size_t i = 0;
	bool tp = false;

	while (sim_vargs_mapped(i++, &name, &alias, &key)) {
		ck_assert(name[0] != '-' && key[0] != '\0');
		if (strcmp(name, "tensor-parallel-size") == 0)
			tp = alias != NULL && strcmp(alias, "-tp") == 0;
	}
	ck_assert(tp);
	ck_assert_uint_gt(i, 30);
}
END_TEST

static Suite *
vargs_suite(void)
{
	Suite *s = suite_create("vllmargs");
	TCase *tc = tcase_create("vllmargs");

	tcase_add_test(tc, test_split);
	tcase_add_test(tc, test_map_forms);
	tcase_add_test(tc, test_map_values);
	tcase_add_test(tc, test_map_ignored);
	tcase_add_test(tc, test_map_refusals);
	tcase_add_test(tc, test_map_stops);
	tcase_add_test(tc, test_config_order);
	tcase_add_test(tc, test_table);
	tcase_set_timeout(tc, 10);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(vargs_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
