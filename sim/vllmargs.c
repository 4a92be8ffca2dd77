/*
 * vllmargs.c -- `vllm serve` options onto kvsim's configuration keys
 * (vllmargs.h; docs/run.md "vLLM's own flags").
 *
 * The names, aliases and kinds of value are vLLM's (vllm/engine/
 * arg_utils.py EngineArgs.add_cli_args, vllm/entrypoints/openai/
 * cli_args.py for the server's own, vllm/utils/argparse_utils.py
 * FlexibleArgumentParser); docs/run.md names the versions read.  Three
 * tables: the options kvsim maps (va_map), the ones it accepts and
 * ignores (va_ignore), and every other option of `vllm serve`, refused by
 * name (va_unmodelled).  A name in none of them is not vLLM's.
 */
#include "config.h"

#include "sim/vllmargs.h"

#include "sim/pdcfg.h"
#include "util/ydoc.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VA_WHERE_LEN 320

/* How an option takes its value and what it becomes. */
enum va_kind {
	VA_VALUE,	/* --x V: key=V */
	VA_BOOL,	/* --x / --no-x: key=true / false */
	VA_HINT,	/* --x V, V a human-readable integer (1k, 2M) */
	VA_HINT_AUTO,	/* the same, -1 or auto: key=auto */
	VA_JSON,	/* --x '{"f": V}' or --x.f V: key.f=V per field */
	VA_EAGER	/* --enforce-eager: cost.cuda_graphs=off; --no-: vllm */
};

struct va_opt {
	const char *name;	/* vLLM's long name, without "--" */
	const char *alias;	/* "-tp", or NULL */
	enum va_kind kind;
	const char *key;	/* kvsim's key */
	const char *choices;	/* vLLM's choices, ", "-separated; NULL any */
};

#define VA_BLOCK_SIZES "1, 8, 16, 32, 64, 128, 256"
#define VA_DTYPES "auto, bfloat16, float, float16, float32, half"
#define VA_KV_DTYPES "auto, bfloat16, fp8, fp8_ds_mla, fp8_e4m3, " \
	"fp8_e5m2, fp8_inc"
#define VA_LORA_RANKS "1, 8, 16, 32, 64, 128, 256, 320, 512"

/*
 * What kvsim models.  The rows for keys of other parts of issue 20
 * (speculative_config, LoRA, the scheduler knobs) map as the contract
 * names them; a key the build lacks is refused by runcfg ("unknown key").
 */
static const struct va_opt va_map[] = {
	{ "model", NULL, VA_VALUE, "model", NULL },
	{ "seed", NULL, VA_VALUE, "seed", NULL },
	{ "tensor-parallel-size", "-tp", VA_VALUE,
	  "engine.tensor_parallel_size", NULL },
	{ "pipeline-parallel-size", "-pp", VA_VALUE,
	  "engine.pipeline_parallel_size", NULL },
	{ "max-model-len", NULL, VA_HINT_AUTO, "engine.max_model_len", NULL },
	{ "gpu-memory-utilization", NULL, VA_VALUE,
	  "engine.gpu_memory_utilization", NULL },
	{ "max-num-seqs", NULL, VA_VALUE, "engine.max_num_seqs", NULL },
	{ "max-num-batched-tokens", NULL, VA_HINT,
	  "engine.max_num_batched_tokens", NULL },
	{ "block-size", NULL, VA_VALUE, "engine.block_size", VA_BLOCK_SIZES },
	{ "enable-prefix-caching", NULL, VA_BOOL,
	  "engine.enable_prefix_caching", NULL },
	{ "enable-chunked-prefill", NULL, VA_BOOL,
	  "engine.enable_chunked_prefill", NULL },
	{ "kv-cache-dtype", NULL, VA_VALUE, "engine.kv_cache_dtype",
	  VA_KV_DTYPES },
	{ "dtype", NULL, VA_VALUE, "engine.dtype", VA_DTYPES },
	{ "swap-space", NULL, VA_VALUE, "engine.swap_space", NULL },
	{ "num-gpu-blocks-override", NULL, VA_VALUE,
	  "engine.num_gpu_blocks_override", NULL },
	{ "kv-cache-memory-bytes", NULL, VA_HINT,
	  "engine.kv_cache_memory_bytes", NULL },
	{ "num-lookahead-slots", NULL, VA_VALUE,
	  "engine.num_lookahead_slots", NULL },
	{ "scheduling-policy", NULL, VA_VALUE, "engine.scheduling_policy",
	  "fcfs, priority" },
	{ "async-scheduling", NULL, VA_BOOL, "engine.async_scheduling", NULL },
	{ "kv-offloading-size", NULL, VA_VALUE, "engine.kv_offloading_size",
	  NULL },
	{ "kv-offloading-backend", NULL, VA_VALUE,
	  "engine.kv_offloading_backend", "lmcache, native" },
	{ "enforce-eager", NULL, VA_EAGER, "cost.cuda_graphs", NULL },
	{ "max-cudagraph-capture-size", NULL, VA_VALUE, "cost.cuda_graphs",
	  NULL },
	{ "speculative-config", NULL, VA_JSON, "engine.speculative_config",
	  NULL },
	{ "long-prefill-token-threshold", NULL, VA_VALUE,
	  "engine.long_prefill_token_threshold", NULL },
	{ "max-num-partial-prefills", NULL, VA_VALUE,
	  "engine.max_num_partial_prefills", NULL },
	{ "max-long-partial-prefills", NULL, VA_VALUE,
	  "engine.max_long_partial_prefills", NULL },
	{ "quantization", "-q", VA_VALUE, "engine.quantization", NULL },
	{ "cpu-offload-gb", NULL, VA_VALUE, "engine.cpu_offload_gb", NULL },
	{ "enable-lora", NULL, VA_BOOL, "engine.enable_lora", NULL },
	{ "max-loras", NULL, VA_VALUE, "engine.max_loras", NULL },
	{ "max-lora-rank", NULL, VA_VALUE, "engine.max_lora_rank",
	  VA_LORA_RANKS },
	{ "max-cpu-loras", NULL, VA_VALUE, "engine.max_cpu_loras", NULL },
	{ NULL, NULL, 0, NULL, NULL }
};

/* How an ignored option takes its value. */
enum va_arity {
	VA_ARG,		/* one value */
	VA_ARGS,	/* one or more (argparse nargs "+") */
	VA_FLAG,	/* none (store_true) */
	VA_BOOLFLAG,	/* none, --x or --no-x */
	VA_OPTARG	/* an optional one (nargs "?") */
};

/* Accepted and ignored: they name, address, secure or log the server and
 * cannot change the KV cache or a step's time. */
static const struct va_ign {
	const char *name;
	enum va_arity arity;
} va_ignore[] = {
	{ "host", VA_ARG },
	{ "port", VA_ARG },
	{ "uds", VA_ARG },
	{ "root-path", VA_ARG },
	{ "api-key", VA_ARGS },
	{ "served-model-name", VA_ARGS },
	{ "allowed-origins", VA_ARG },
	{ "allowed-methods", VA_ARG },
	{ "allowed-headers", VA_ARG },
	{ "allow-credentials", VA_BOOLFLAG },
	{ "ssl-keyfile", VA_ARG },
	{ "ssl-certfile", VA_ARG },
	{ "ssl-ca-certs", VA_ARG },
	{ "ssl-cert-reqs", VA_ARG },
	{ "ssl-ciphers", VA_ARG },
	{ "uvicorn-log-level", VA_ARG },
	{ "disable-uvicorn-access-log", VA_BOOLFLAG },
	{ "disable-log-requests", VA_FLAG },
	{ "enable-log-requests", VA_BOOLFLAG },
	{ "enable-log-outputs", VA_BOOLFLAG },
	{ "disable-log-stats", VA_FLAG },
	{ "log-config-file", VA_ARG },
	{ "max-log-len", VA_ARG },
	{ "disable-fastapi-docs", VA_BOOLFLAG },
	{ "trust-remote-code", VA_BOOLFLAG },
	{ "download-dir", VA_ARG },
	{ "revision", VA_ARG },
	{ "code-revision", VA_ARG },
	{ "tokenizer-revision", VA_ARG },
	{ "hf-token", VA_OPTARG },
	{ NULL, 0 }
};

/*
 * Every other option of `vllm serve` (v0.15.1's, and a few of earlier
 * releases users still pass), refused by name.  Long names without "--",
 * aliases with their "-".
 */
static const char *const va_unmodelled[] = {
	/* the server and its frontend */
	"config", "headless", "api-server-count", "-asc",
	"aggregate-engine-logging", "fail-on-environ-validation",
	"chat-template", "chat-template-content-format",
	"default-chat-template-kwargs", "disable-access-log-for-endpoints",
	"disable-frontend-multiprocessing", "enable-auto-tool-choice",
	"enable-force-include-usage", "enable-log-deltas",
	"enable-offline-docs", "enable-prompt-tokens-details",
	"enable-request-id-headers", "enable-server-load-tracking",
	"enable-ssl-refresh", "enable-tokenizer-info-endpoint",
	"exclude-tools-when-tool-choice-none", "h11-max-header-count",
	"h11-max-incomplete-event-size", "log-error-stack", "lora-modules",
	"middleware", "response-role", "return-tokens-as-token-ids",
	"tokens-only", "tool-call-parser", "tool-parser-plugin",
	"tool-server", "trust-request-chat-template",
	"use-gpu-for-pooling-score", "enable-metrics", "help", "-h",
	/* ModelConfig */
	"allow-deprecated-quantization", "allowed-local-media-path",
	"allowed-media-domains", "config-format", "convert",
	"disable-cascade-attn", "disable-sliding-window",
	"enable-prompt-embeds", "enable-return-routed-experts",
	"enable-sleep-mode", "generation-config", "hf-config-path",
	"hf-overrides", "io-processor-plugin", "logits-processors",
	"logits-processor-pattern", "logprobs-mode", "max-logprobs",
	"model-impl", "override-attention-dtype",
	"override-generation-config", "pooler-config",
	"override-pooler-config", "rope-scaling", "rope-theta", "runner",
	"skip-tokenizer-init", "task", "tokenizer", "tokenizer-mode",
	/* LoadConfig */
	"ignore-patterns", "load-format", "model-loader-extra-config",
	"pt-load-map-location", "safetensors-load-strategy",
	"use-tqdm-on-load",
	/* AttentionConfig, StructuredOutputsConfig */
	"attention-backend", "reasoning-parser", "reasoning-parser-plugin",
	"guided-decoding-backend",
	/* ParallelConfig */
	"all2all-backend", "cp-kv-cache-interleave-size",
	"data-parallel-address", "-dpa", "data-parallel-backend", "-dpb",
	"data-parallel-external-lb", "-dpe", "data-parallel-hybrid-lb",
	"-dph", "data-parallel-rank", "-dpn", "data-parallel-rpc-port",
	"-dpp", "data-parallel-size", "-dp", "data-parallel-size-local",
	"-dpl", "data-parallel-start-rank", "-dpr",
	"dbo-decode-token-threshold", "dbo-prefill-token-threshold",
	"dcp-kv-cache-interleave-size", "decode-context-parallel-size",
	"-dcp", "disable-custom-all-reduce",
	"disable-nccl-for-dp-synchronization",
	"distributed-executor-backend", "enable-dbo", "enable-elastic-ep",
	"enable-eplb", "enable-expert-parallel", "-ep", "eplb-config",
	"expert-placement-strategy", "master-addr", "master-port",
	"max-parallel-loading-workers", "nnodes", "-n", "node-rank", "-r",
	"prefill-context-parallel-size", "-pcp", "ray-workers-use-nsight",
	"ubatch-size", "worker-cls", "worker-extension-cls",
	/* CacheConfig */
	"calculate-kv-scales", "kv-sharing-fast-prefill", "mamba-block-size",
	"mamba-cache-dtype", "mamba-cache-mode", "mamba-ssm-cache-dtype",
	"prefix-caching-hash-algo",
	/* OffloadConfig */
	"cpu-offload-params", "offload-backend", "offload-group-size",
	"offload-num-in-group", "offload-params", "offload-prefetch-step",
	/* MultiModalConfig */
	"enable-mm-embeds", "interleave-mm-strings", "language-model-only",
	"limit-mm-per-prompt", "media-io-kwargs", "mm-encoder-attn-backend",
	"mm-encoder-only", "mm-encoder-tp-mode", "mm-processor-cache-gb",
	"mm-processor-cache-type", "mm-processor-kwargs",
	"mm-shm-cache-max-object-size-mb", "skip-mm-profiling",
	"video-pruning-rate", "disable-mm-preprocessor-cache",
	/* LoRAConfig */
	"default-mm-loras", "enable-tower-connector-lora",
	"fully-sharded-loras", "lora-dtype", "lora-extra-vocab-size",
	"specialize-active-lora",
	/* ObservabilityConfig */
	"collect-detailed-traces", "cudagraph-metrics",
	"enable-layerwise-nvtx-tracing", "enable-logging-iteration-details",
	"enable-mfu-metrics", "kv-cache-metrics", "kv-cache-metrics-sample",
	"otlp-traces-endpoint", "show-hidden-metrics-for-version",
	/* SchedulerConfig */
	"disable-chunked-mm-input", "disable-hybrid-kv-cache-manager",
	"scheduler-cls", "stream-interval",
	/* CompilationConfig, KernelConfig, VllmConfig */
	"cudagraph-capture-sizes", "cuda-graph-sizes",
	"enable-flashinfer-autotune", "moe-backend", "additional-config",
	"attention-config", "-ac", "compilation-config", "-cc", "-O",
	"ec-transfer-config", "kernel-config", "kv-events-config",
	"kv-transfer-config", "optimization-level", "performance-mode",
	"profiler-config", "structured-outputs-config",
	"weight-transfer-config",
	NULL
};

static kv_err
va__fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static kv_err
va__fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return KV_EINVAL;
}

void
sim_vargs_words_release(struct sim_vargs_words *w)
{
	free(w->w);
	free(w->buf);
	memset(w, 0, sizeof(*w));
}

/* A quoted run from s[i] (the quote); *o advances.  The index after the
 * closing quote, or 0 when there is none. */
static size_t
va__quoted(const char *s, size_t i, char **o)
{
	char q = s[i++];

	while (s[i] != '\0' && s[i] != q) {
		if (q == '"' && s[i] == '\\' && s[i + 1] != '\0' &&
		    strchr("\"\\$`\n", s[i + 1]) != NULL) {
			if (s[i + 1] != '\n')
				*(*o)++ = s[i + 1];
			i += 2;
			continue;
		}
		*(*o)++ = s[i++];
	}
	return s[i] == q ? i + 1 : 0;
}

kv_err
sim_vargs_split(const char *s, struct sim_vargs_words *out, char *err,
		size_t errlen)
{
	size_t len = strlen(s), i = 0, j;
	bool inword = false;
	char *o;

	memset(out, 0, sizeof(*out));
	out->buf = malloc(len + 1);
	out->w = calloc(len + 1, sizeof(*out->w));
	if (out->buf == NULL || out->w == NULL) {
		snprintf(err, errlen, "out of memory");
		return KV_ENOMEM;
	}
	o = out->buf;
	while (s[i] != '\0') {
		if (s[i] == '\\' && s[i + 1] == '\n') {
			i += 2;		/* a line continued */
			continue;
		}
		if (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
			if (inword)
				*o++ = '\0';
			inword = false;
			i++;
			continue;
		}
		if (!inword)
			out->w[out->n++] = o;
		inword = true;
		if (s[i] == '\'' || s[i] == '"') {
			if ((j = va__quoted(s, i, &o)) == 0)
				return va__fail(err, errlen, "--vllm-args: "
						"unterminated %c at column %zu",
						s[i], i + 1);
			i = j;
		} else if (s[i] == '\\') {
			if (s[i + 1] == '\0')
				return va__fail(err, errlen, "--vllm-args: "
						"trailing backslash at column "
						"%zu", i + 1);
			*o++ = s[i + 1];
			i += 2;
		} else
			*o++ = s[i++];
	}
	if (inword)
		*o = '\0';
	return KV_OK;
}

/* The state of one sim_vargs_map. */
struct va_run {
	struct sim_vargs_words w;
	size_t i;		/* the next word */
	sim_vargs_set_fn set;
	void *ctx;
	char *ignored;
	size_t ignlen;
	char *err;
	size_t errlen;
	const char *model;	/* the positional model, or NULL */
	char where[VA_WHERE_LEN];
};

static const struct va_opt *
va__find(const char *name, bool alias)
{
	for (const struct va_opt *o = va_map; o->name != NULL; o++)
		if (alias ? o->alias != NULL && strcmp(o->alias, name) == 0
			  : strcmp(o->name, name) == 0)
			return o;
	return NULL;
}

static const struct va_ign *
va__find_ignored(const char *name)
{
	for (const struct va_ign *g = va_ignore; g->name != NULL; g++)
		if (strcmp(g->name, name) == 0)
			return g;
	return NULL;
}

static bool
va__is_unmodelled(const char *name)
{
	for (size_t i = 0; va_unmodelled[i] != NULL; i++)
		if (strcmp(va_unmodelled[i], name) == 0)
			return true;
	return false;
}

/* argparse takes a word that starts with '-' as a value only when it is
 * a negative number. */
static bool
va__negative_number(const char *v)
{
	char *end;

	if (v[0] != '-' || !(isdigit((unsigned char)v[1]) || v[1] == '.'))
		return false;
	(void)strtod(v, &end);
	return *end == '\0';
}

/* The value of the option at word `opt`: after '=' (eq), else the next
 * word. */
static kv_err
va__value(struct va_run *r, const char *opt, const char *eq, const char **v)
{
	const char *nx;

	if (eq != NULL) {
		*v = eq + 1;
		return KV_OK;
	}
	nx = r->i < r->w.n ? r->w.w[r->i] : NULL;
	if (nx == NULL || (nx[0] == '-' && !va__negative_number(nx)))
		return va__fail(r->err, r->errlen, "--vllm-args: %s: expected "
				"a value", opt);
	r->i++;
	*v = nx;
	return KV_OK;
}

/*
 * vLLM's human_readable_int: an integer, or a number and one of k m g t
 * (powers of 1000, a decimal number allowed) or K M G T (powers of 1024,
 * an integer only); -1 or auto where auto_ok.  The integer's text in buf;
 * false: not one of them.
 */
static bool
va__human_int(const char *v, bool auto_ok, char *buf, size_t len)
{
	static const char suf[] = "kmgtKMGT";
	size_t n = strlen(v);
	const char *p;
	char *end;
	double x;
	int k;

	if (auto_ok && (strcmp(v, "-1") == 0 || strcmp(v, "auto") == 0)) {
		snprintf(buf, len, "auto");
		return true;
	}
	if (n < 2 || (p = strchr(suf, v[n - 1])) == NULL) {
		/* an integer, as Python's int() reads one; runcfg judges
		 * its range */
		(void)strtoll(v, &end, 10);
		if (n == 0 || *end != '\0' || isspace((unsigned char)v[0]))
			return false;
		snprintf(buf, len, "%s", v);
		return true;
	}
	k = (int)(p - suf);
	for (size_t i = 0; i + 1 < n; i++)
		if (!isdigit((unsigned char)v[i]) &&
		    !(v[i] == '.' && k < 4 && i > 0 && i + 2 < n))
			return false;
	x = strtod(v, &end);
	if (end != v + n - 1)
		return false;
	x *= k < 4 ? pow(1000.0, k % 4 + 1) : pow(1024.0, k % 4 + 1);
	if (x >= 1.8e19)
		return false;
	snprintf(buf, len, "%.0f", floor(x));
	return true;
}

/* Whether v is one of choices (", "-separated). */
static bool
va__choice(const char *choices, const char *v)
{
	size_t n = strlen(v);

	for (const char *p = choices; *p != '\0';) {
		size_t k = strcspn(p, ",");

		if (k == n && strncmp(p, v, n) == 0)
			return true;
		p += k;
		p += strspn(p, ", ");
	}
	return false;
}

/* Give one setting to the caller's setter. */
static kv_err
va__emit(struct va_run *r, const char *key, const char *v)
{
	return r->set(r->ctx, key, v, r->where, r->err, r->errlen);
}

/* One field of a JSON-valued option: key.field=v. */
static kv_err
va__emit_field(struct va_run *r, const char *key, const char *field,
	       const char *v)
{
	char k[256];

	if ((size_t)snprintf(k, sizeof(k), "%s.%s", key, field) >= sizeof(k))
		return va__fail(r->err, r->errlen, "%s: %s: name too long",
				r->where, field);
	return va__emit(r, k, v);
}

/* A JSON object's fields, each a scalar, in the object's order. */
static kv_err
va__json(struct va_run *r, const char *key, const char *v)
{
	struct yd_doc d;
	char yerr[512];
	FILE *f;
	kv_err e;

	if (v[0] == '\0')
		return va__fail(r->err, r->errlen, "%s: expected a JSON object "
				"({\"field\": value, ...}), got ''", r->where);
	if ((f = fmemopen((void *)v, strlen(v), "r")) == NULL)
		return va__fail(r->err, r->errlen, "out of memory");
	e = yd_read(&d, f, "JSON", 0, yerr, sizeof(yerr));
	fclose(f);
	if (e == KV_ENOMEM)
		return va__fail(r->err, r->errlen, "out of memory");
	if (e != KV_OK) {
		yd_release(&d);
		return va__fail(r->err, r->errlen, "%s: not valid JSON: %s",
				r->where, yerr);
	}
	if (d.root == NULL || d.root->type != YD_MAP) {
		yd_release(&d);
		return va__fail(r->err, r->errlen, "%s: expected a JSON object "
				"({\"field\": value, ...}), got '%s'",
				r->where, v);
	}
	for (size_t i = 0; i < d.root->n && e == KV_OK; i++) {
		const struct yd_node *kn = yd_key(d.root, i);
		const struct yd_node *vn = yd_val(d.root, i);

		if (vn->type != YD_SCALAR)
			e = va__fail(r->err, r->errlen, "%s: %s: expected a "
				     "number, a string, true or false",
				     r->where, kn->str);
		else
			e = va__emit_field(r, key, kn->str, vn->str);
	}
	yd_release(&d);
	return e;
}

/* Append name to the ignored list. */
static void
va__ignore(struct va_run *r, const char *name)
{
	size_t n;

	if (r->ignored == NULL || r->ignlen == 0)
		return;
	n = strlen(r->ignored);
	snprintf(r->ignored + n, r->ignlen - n, "%s%s", n > 0 ? ", " : "",
		 name);
}

/* An option kvsim maps: its setting(s).  neg: the --no- form. */
static kv_err
va__mapped(struct va_run *r, const struct va_opt *o, const char *opt,
	   const char *eq, const char *field, bool neg)
{
	char num[64];
	const char *v;
	kv_err e;

	if (o->kind == VA_BOOL || o->kind == VA_EAGER) {
		if (eq != NULL)
			return va__fail(r->err, r->errlen, "--vllm-args: %s: "
					"takes no value (--%s or --no-%s)",
					opt, o->name, o->name);
		if (o->kind == VA_EAGER)
			return va__emit(r, o->key, neg ? "vllm" : "off");
		return va__emit(r, o->key, neg ? "false" : "true");
	}
	if ((e = va__value(r, opt, eq, &v)) != KV_OK)
		return e;
	if (o->kind == VA_JSON)
		return field != NULL ? va__emit_field(r, o->key, field, v)
				     : va__json(r, o->key, v);
	if (o->kind == VA_HINT || o->kind == VA_HINT_AUTO) {
		if (!va__human_int(v, o->kind == VA_HINT_AUTO, num,
				   sizeof(num)))
			return va__fail(r->err, r->errlen, "--vllm-args: %s: "
					"expected an integer (or 1k, 25.6k, "
					"1K: powers of 1000 and 1024)%s, got "
					"'%s'", opt, o->kind == VA_HINT_AUTO ?
					", -1 or auto" : "", v);
		v = num;
	}
	if (o->choices != NULL && !va__choice(o->choices, v))
		return va__fail(r->err, r->errlen, "--vllm-args: %s: expected "
				"one of %s, got '%s'", opt, o->choices, v);
	/* vLLM's other names of two dtypes */
	if (strcmp(o->key, "engine.dtype") == 0)
		v = strcmp(v, "half") == 0 ? "float16" :
		    strcmp(v, "float") == 0 ? "float32" : v;
	return va__emit(r, o->key, v);
}

/* An option kvsim accepts and ignores: skip its value. */
static kv_err
va__ignored(struct va_run *r, const struct va_ign *g, const char *opt,
	    const char *eq, bool neg)
{
	const char *v;
	kv_err e;

	if (neg && g->arity != VA_BOOLFLAG)
		return va__fail(r->err, r->errlen, "--vllm-args: %s: not a "
				"vllm serve option", opt);
	if ((g->arity == VA_ARG || g->arity == VA_ARGS) &&
	    (e = va__value(r, opt, eq, &v)) != KV_OK)
		return e;
	while (g->arity == VA_ARGS && eq == NULL && r->i < r->w.n &&
	       (r->w.w[r->i][0] != '-' || va__negative_number(r->w.w[r->i])))
		r->i++;
	if ((g->arity == VA_FLAG || g->arity == VA_BOOLFLAG) && eq != NULL)
		return va__fail(r->err, r->errlen, "--vllm-args: %s: takes no "
				"value", opt);
	if (g->arity == VA_OPTARG && eq == NULL && r->i < r->w.n &&
	    r->w.w[r->i][0] != '-')
		r->i++;
	va__ignore(r, opt);
	return KV_OK;
}

/*
 * Split word (an option) into its name in buf (no leading dashes, '_' as
 * '-' before the first '.'), the '=' of an inline value (*eq) and the
 * field after a '.' (*field, in buf).  False: not an option's shape.
 */
static bool
va__name(const char *word, char *buf, size_t len, const char **eq,
	 const char **field)
{
	bool dot = false;
	size_t n, skip = word[1] == '-' ? 2 : 1;

	*eq = strchr(word, '=');
	n = *eq != NULL ? (size_t)(*eq - word) : strlen(word);
	if (n <= skip || n - skip >= len)
		return false;
	*field = NULL;
	for (size_t i = 0; i < n - skip; i++) {
		char ch = word[skip + i];

		if (ch == '.' && !dot) {
			dot = true;
			buf[i] = '\0';
			*field = buf + i + 1;
			continue;
		}
		buf[i] = ch == '_' && !dot && skip == 2 ? '-' : ch;
	}
	buf[n - skip] = '\0';
	return true;
}

/* One option at word r->i - 1. */
static kv_err
va__option(struct va_run *r, const char *word)
{
	char name[128], opt[264], sname[130];
	const char *eq, *field, *base, *look;
	const struct va_opt *o;
	const struct va_ign *g;
	bool lng = word[1] == '-', neg = false;

	if (!va__name(word, name, sizeof(name), &eq, &field))
		return va__fail(r->err, r->errlen, "--vllm-args: %s: not a "
				"vllm serve option", word);
	snprintf(opt, sizeof(opt), "%s%s%s%s", lng ? "--" : "-", name,
		 field != NULL ? "." : "", field != NULL ? field : "");
	snprintf(r->where, sizeof(r->where), "--vllm-args: %s", opt);
	base = name;
	if (lng && strncmp(name, "no-", 3) == 0 && va__find(name, false) ==
	    NULL && va__find_ignored(name) == NULL &&
	    !va__is_unmodelled(name)) {
		base = name + 3;
		neg = true;
	}
	snprintf(sname, sizeof(sname), "-%s", name);
	look = lng ? base : sname;
	if ((o = va__find(look, !lng)) != NULL && !(lng &&
	    field != NULL && o->kind != VA_JSON) && (!neg ||
	    o->kind == VA_BOOL || o->kind == VA_EAGER))
		return va__mapped(r, o, opt, eq, field, neg);
	if (lng && field == NULL && (g = va__find_ignored(base)) != NULL)
		return va__ignored(r, g, opt, eq, neg);
	if (va__is_unmodelled(look) && !(lng && field != NULL))
		return va__fail(r->err, r->errlen, "--vllm-args: %s: vLLM "
				"option kvsim does not model", opt);
	return va__fail(r->err, r->errlen, "--vllm-args: %s: not a vllm "
			"serve option", opt);
}

kv_err
sim_vargs_map(const char *args, sim_vargs_set_fn set, void *ctx,
	      char *ignored, size_t ignlen, char *err, size_t errlen)
{
	struct va_run r;
	kv_err e;

	memset(&r, 0, sizeof(r));
	r.set = set;
	r.ctx = ctx;
	r.ignored = ignored;
	r.ignlen = ignlen;
	r.err = err;
	r.errlen = errlen;
	if ((e = sim_vargs_split(args, &r.w, err, errlen)) != KV_OK)
		goto done;
	while (r.i < r.w.n && e == KV_OK) {
		const char *word = r.w.w[r.i++];

		if (word[0] == '-' && word[1] != '\0') {
			e = va__option(&r, word);
			continue;
		}
		if (r.model != NULL)
			e = va__fail(err, errlen, "--vllm-args: '%s': a second "
				     "positional argument (vllm serve takes "
				     "one, the model)", word);
		r.model = word;
	}
	if (e == KV_OK && r.model != NULL) {
		/* vllm serve: the positional model_tag wins over --model */
		snprintf(r.where, sizeof(r.where), "--vllm-args: model_tag");
		e = va__emit(&r, "model", r.model);
	}
done:
	sim_vargs_words_release(&r.w);
	return e;
}

static kv_err
va__set_config(void *ctx, const char *key, const char *value,
	       const char *where, char *err, size_t errlen)
{
	return sim_config_set_key(ctx, key, value, where, err, errlen);
}

kv_err
sim_vargs_apply(struct sim_config *c, const char *args, char *ignored,
		size_t ignlen, char *err, size_t errlen)
{
	return sim_vargs_map(args, va__set_config, c, ignored, ignlen, err,
			     errlen);
}

kv_err
sim_vargs_config(struct sim_config *c, const char *file,
		 const char *const *vargs, size_t nv,
		 const char *const *sets, size_t n, char *ignored,
		 size_t ignlen, char *err, size_t errlen)
{
	kv_err e;

	sim_config_init(c);
	if (file != NULL &&
	    (e = sim_config_load(c, file, err, errlen)) != KV_OK)
		return e;
	for (size_t i = 0; i < nv; i++)
		if ((e = sim_vargs_apply(c, vargs[i], ignored, ignlen, err,
					 errlen)) != KV_OK)
			return e;
	for (size_t i = 0; i < n; i++)
		if ((e = sim_config_set(c, sets[i], err, errlen)) != KV_OK)
			return e;
	return sim_config_finish(c, err, errlen);
}

bool
sim_vargs_mapped(size_t i, const char **name, const char **alias,
		 const char **key)
{
	if (i >= sizeof(va_map) / sizeof(va_map[0]) - 1)
		return false;
	*name = va_map[i].name;
	*alias = va_map[i].alias;
	*key = va_map[i].key;
	return true;
}
