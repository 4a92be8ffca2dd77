/*
 * cmd_kvsize.c -- `kvsim kv-size`: vLLM's start-up KV sizing for a model on
 * a GPU, printed as vLLM prints it.
 *
 * stdout gets the lines vLLM logs, in its order and format ("GPU KV cache
 * size: 436,544 tokens", "Maximum concurrency for 131,072 tokens per
 * request: 3.33x"); --verbose adds the memory breakdown and the KV cache
 * groups.  When one max_model_len request cannot fit, vLLM's ValueError
 * (with the largest max_model_len that would fit) goes to stderr and the
 * exit status is 1.  Bad usage, unknown names and bad files exit 2.
 */
#include "config.h"

#include "sim/cli/cmd_kvsize.h"
#include "sim/cli/opts.h"

#include "sim/model/catalog.h"
#include "sim/model/sizing.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB 1073741824.0

static void
kvsize_usage(FILE *f)
{
	fprintf(f,
"usage: kvsim kv-size --model ID|CONFIG.json|DIR --gpu ID [OPTIONS]\n"
"\n"
"Print the KV-cache sizing vLLM v1 does at start-up (num_gpu_blocks,\n"
"\"GPU KV cache size\", \"Maximum concurrency\") for a model on a GPU,\n"
"computed with the allocator's own block-aligned arithmetic.\n"
"\n"
"  -m, --model ID|FILE|DIR       catalog model (id or alias), a Hugging\n"
"                                Face config.json or a model directory\n"
"                                holding one\n"
"  -g, --gpu, --device ID        catalog GPU (id or alias)\n"
"  -t, --tensor-parallel-size N  tensor parallel degree (default 1)\n"
"      --gpu-memory-utilization F  fraction of GPU memory vLLM may use (0.9)\n"
"      --block-size N            tokens per block: 1, 8, 16, 32, 64, 128\n"
"                                or 256, or a hybrid's own (16; hybrids\n"
"                                and MLA raise it)\n"
"      --kv-cache-dtype T        auto, bfloat16, float16, fp8, fp8_e4m3,\n"
"                                fp8_e5m2, fp8_inc, fp8_ds_mla (auto)\n"
"      --dtype T                 auto, bfloat16, float16, float32 (auto)\n"
"  -q, --quantization fp8        fp8 weights, 1 byte per parameter (default:\n"
"                                the checkpoint's own)\n"
"      --mamba-ssm-cache-dtype T auto, float32, bfloat16, float16 (auto)\n"
"      --max-model-len N         tokens per request (the model's maximum)\n"
"      --max-num-batched-tokens N  token budget per step (vllm serve: 8192 on\n"
"                                GPUs with >= 70 GiB except A100, else 2048)\n"
"      --max-num-seqs N          running requests (1024, or 256 likewise)\n"
"      --enable-prefix-caching, --no-enable-prefix-caching\n"
"                                (default: on, off for Mamba hybrids)\n"
"      --kv-cache-memory-bytes SIZE  KV cache memory, skipping the estimate\n"
"      --num-gpu-blocks-override N   use N blocks whatever the memory\n"
"\n"
"Measured values that replace kvsim's estimates (SIZE: 14.96GiB, 80GB or\n"
"bytes):\n"
"      --gpu-memory SIZE         total GPU memory (default: the catalog's)\n"
"      --weights SIZE            model weights per GPU\n"
"      --activation SIZE         PyTorch activation peak of the profiling run\n"
"      --non-torch SIZE          non-torch memory (NCCL, CUDA runtime)\n"
"      --cudagraph SIZE          CUDA graph memory counted before the KV\n"
"                                cache\n"
"\n"
"      --datadir DIR             catalog directory (default $KVSIM_DATADIR or\n"
"                                the installed one)\n"
"  -v, --verbose                 also print the memory breakdown and groups\n"
"  -h, --help                    this help\n"
"\n"
"Exit status: 0 the model starts, 1 one max-length request does not fit (as\n"
"vLLM refuses to start), 2 bad usage or input.  Docs: docs/catalog.md.\n");
}

enum {
	OPT_UTIL = 0x200, OPT_BS, OPT_KVDT, OPT_DTYPE, OPT_SSMDT, OPT_MML,
	OPT_MNBT, OPT_MNS, OPT_PC, OPT_NOPC, OPT_KVMEM, OPT_OVERRIDE,
	OPT_GPUMEM, OPT_WEIGHTS, OPT_ACT, OPT_NONTORCH, OPT_CUDAGRAPH,
	OPT_DATADIR, OPT_QUANT = 'q'
};

static const struct option kvsize_opts[] = {
	{ "model", required_argument, NULL, 'm' },
	{ "gpu", required_argument, NULL, 'g' },
	{ "device", required_argument, NULL, 'g' },
	{ "tensor-parallel-size", required_argument, NULL, 't' },
	{ "tp", required_argument, NULL, 't' },
	{ "gpu-memory-utilization", required_argument, NULL, OPT_UTIL },
	{ "block-size", required_argument, NULL, OPT_BS },
	{ "kv-cache-dtype", required_argument, NULL, OPT_KVDT },
	{ "dtype", required_argument, NULL, OPT_DTYPE },
	{ "quantization", required_argument, NULL, OPT_QUANT },
	{ "mamba-ssm-cache-dtype", required_argument, NULL, OPT_SSMDT },
	{ "max-model-len", required_argument, NULL, OPT_MML },
	{ "max-num-batched-tokens", required_argument, NULL, OPT_MNBT },
	{ "max-num-seqs", required_argument, NULL, OPT_MNS },
	{ "enable-prefix-caching", no_argument, NULL, OPT_PC },
	{ "no-enable-prefix-caching", no_argument, NULL, OPT_NOPC },
	{ "kv-cache-memory-bytes", required_argument, NULL, OPT_KVMEM },
	{ "kv-cache-memory", required_argument, NULL, OPT_KVMEM },
	{ "num-gpu-blocks-override", required_argument, NULL, OPT_OVERRIDE },
	{ "gpu-memory", required_argument, NULL, OPT_GPUMEM },
	{ "weights", required_argument, NULL, OPT_WEIGHTS },
	{ "activation", required_argument, NULL, OPT_ACT },
	{ "non-torch", required_argument, NULL, OPT_NONTORCH },
	{ "cudagraph", required_argument, NULL, OPT_CUDAGRAPH },
	{ "datadir", required_argument, NULL, OPT_DATADIR },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static bool
kvsize_uint(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;

	if (*s == '\0')
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' ||
		    x > (max - (uint64_t)(*s - '0')) / 10)
			return false;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*out = x;
	return true;
}

static int
kvsize_bad(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "kvsim kv-size: %s: bad value '%s' (%s)\n", opt, val,
		want);
	return KVSIM_EXIT_USAGE;
}

static bool
kvsize_copy(char *dst, size_t len, const char *src)
{
	if (strlen(src) >= len)
		return false;
	memcpy(dst, src, strlen(src) + 1);
	return true;
}

/* A catalog name, or else a config.json path. */
static int
kvsize_model(const cat *c, const char *name, const struct cat_model **m,
	     struct cat_model **owned)
{
	size_t n = strlen(name);
	struct cat_err e;
	kv_err rc;
	FILE *f;

	*owned = NULL;
	if (!(n > 5 && strcmp(name + n - 5, ".json") == 0)) {
		*m = cat_find_model(c, name);
		if (*m != NULL)
			return KVSIM_EXIT_OK;
		f = fopen(name, "r");
		if (f == NULL) {
			fprintf(stderr, "kvsim kv-size: unknown model '%s': "
				"not in the catalog ('kvsim catalog list "
				"models') and not a config.json file\n", name);
			return KVSIM_EXIT_USAGE;
		}
		fclose(f);
	}
	rc = cat_model_from_hf(owned, name, &e);
	if (rc != KV_OK) {
		fprintf(stderr, "kvsim kv-size: %s\n", e.msg);
		return KVSIM_EXIT_USAGE;
	}
	*m = *owned;
	return KVSIM_EXIT_OK;
}

static void
kvsize_explain(const struct cat_model *m, const struct cat_gpu *g,
	       const struct sz_result *r)
{
	char a[32], b[32];

	sz_commas(a, sizeof(a), m->params);
	printf("kvsim: model %s: %u layers", m->id, m->num_layers);
	for (int k = CAT_MIX_FULL; k < CAT_NMIXERS; k++) {
		uint32_t n = cat_model_count(m, (enum cat_mixer)k);

		if (n > 0)
			printf(", %u %s", n, cat_mixer_name((enum cat_mixer)k));
	}
	printf("; %s parameters\n", a);
	printf("kvsim: gpu %s (%s), %.2f GiB; tensor parallel %u; "
	       "max_num_batched_tokens %llu, max_num_seqs %u, prefix caching "
	       "%s\n", g->id, g->name, (double)r->total_bytes / GIB, r->tp,
	       (unsigned long long)r->max_num_batched_tokens, r->max_num_seqs,
	       r->prefix_caching ? "on" : "off");
	if (!r->kv_memory_given) {
		printf("the current vLLM instance can use total_gpu_memory "
		       "(%.2fGiB) x gpu_memory_utilization (%.2f) = "
		       "%.2fGiB\n", (double)r->total_bytes / GIB,
		       r->requested_bytes / (double)r->total_bytes,
		       r->requested_bytes / GIB);
	}
	if (!r->weights_fit) {
		printf("kvsim: model weights take %.2fGiB (%u byte%s per "
		       "parameter), more than the GPU's %.2fGiB: vLLM fails "
		       "loading them and sizes no KV cache\n",
		       (double)r->weights_bytes / GIB, r->weight_bytes,
		       r->weight_bytes == 1 ? "" : "s",
		       (double)r->total_bytes / GIB);
	} else if (!r->kv_memory_given) {
		printf("model weights take %.2fGiB; non_torch_memory takes "
		       "%.2fGiB; PyTorch activation peak memory takes %.2fGiB; "
		       "the rest of the memory reserved for KV Cache is "
		       "%.2fGiB.\n", (double)r->weights_bytes / GIB,
		       (double)r->non_torch_bytes / GIB,
		       (double)r->activation_bytes / GIB,
		       (double)r->available_bytes / GIB);
	}
	sz_commas(a, sizeof(a), r->page_bytes ? r->page_bytes :
		  r->attn_token_bytes * r->block_size);
	printf("kvsim: block size %u; %s bytes per block per layer",
	       r->block_size, a);
	if (r->mamba_state_bytes > 0) {
		sz_commas(b, sizeof(b), r->mamba_state_bytes);
		printf("; state %s bytes per layer", b);
	}
	printf("\n");
	if (!r->fits) {
		sz_commas(a, sizeof(a), r->needed_bytes);
		printf("kvsim: one %llu-token request needs %s bytes\n",
		       (unsigned long long)r->max_model_len, a);
		return;
	}
	sz_commas(a, sizeof(a), r->num_blocks);
	printf("kvsim: %zu KV cache group%s of %u layers%s; num_gpu_blocks "
	       "%s; %llu blocks per max-length request\n", r->ngroup,
	       r->ngroup == 1 ? "" : "s", r->layers_per_group,
	       r->padding_layers ? " (padded)" : "", a,
	       (unsigned long long)r->blocks_per_request);
}

/*
 * The counts: --tensor-parallel-size, --block-size, --max-model-len,
 * --max-num-batched-tokens, --max-num-seqs, --num-gpu-blocks-override,
 * each a positive integer up to its own limit.  0, KVSIM_EXIT_USAGE with
 * the message, or -1 when opt is not one of them.
 */
static int
kvsize_count_opt(struct sz_engine *e, int opt, const char *optarg)
{
	uint64_t u;

	switch (opt) {
	case 't':
		if (!kvsize_uint(optarg, 1024, &u) || u == 0)
			return kvsize_bad("--tensor-parallel-size",
					  optarg, "1 to 1024");
		e->tensor_parallel_size = (uint32_t)u;
		break;
	case OPT_BS:
		/* the choices are checked with the model known
		 * (sz_check_block_size: a hybrid's own size too) */
		if (!kvsize_uint(optarg, 1u << 20, &u) || u == 0)
			return kvsize_bad("--block-size", optarg,
					  "1, 8, 16, 32, 64, 128 or 256");
		e->block_size = (uint32_t)u;
		break;
	case OPT_MML:
		if (!kvsize_uint(optarg, UINT32_MAX, &u) || u == 0)
			return kvsize_bad("--max-model-len", optarg,
					  "a positive integer");
		e->max_model_len = u;
		break;
	case OPT_MNBT:
		if (!kvsize_uint(optarg, UINT32_MAX, &u) || u == 0)
			return kvsize_bad("--max-num-batched-tokens",
					  optarg, "a positive integer");
		e->max_num_batched_tokens = u;
		break;
	case OPT_MNS:
		if (!kvsize_uint(optarg, UINT32_MAX, &u) || u == 0)
			return kvsize_bad("--max-num-seqs", optarg,
					  "a positive integer");
		e->max_num_seqs = (uint32_t)u;
		break;
	case OPT_OVERRIDE:
		/* as engine->num_gpu_blocks_override: the pools
		 * libkvcore takes (at most 2^30 blocks) */
		if (!kvsize_uint(optarg, 1u << 30, &u) || u == 0)
			return kvsize_bad("--num-gpu-blocks-override",
					  optarg, "a block count "
					  "(1 to 2^30)");
		e->num_gpu_blocks_override = (int64_t)u;
		break;
	default:
		return -1;
	}
	return KVSIM_EXIT_OK;
}

/* The dtype names, copied as given (sz_compute() reads them). */
static int
kvsize_dtype_opt(struct sz_engine *e, int opt, const char *optarg)
{
	switch (opt) {
	case OPT_KVDT:
		if (!kvsize_copy(e->kv_cache_dtype,
				 sizeof(e->kv_cache_dtype), optarg))
			return kvsize_bad("--kv-cache-dtype", optarg,
					  "a dtype name");
		break;
	case OPT_DTYPE:
		if (!kvsize_copy(e->dtype, sizeof(e->dtype), optarg))
			return kvsize_bad("--dtype", optarg,
					  "a dtype name");
		break;
	case OPT_SSMDT:
		if (!kvsize_copy(e->mamba_ssm_cache_dtype,
				 sizeof(e->mamba_ssm_cache_dtype),
				 optarg))
			return kvsize_bad("--mamba-ssm-cache-dtype",
					  optarg, "a dtype name");
		break;
	case OPT_QUANT:
		if (strcmp(optarg, "fp8") != 0 ||
		    !kvsize_copy(e->quantization, sizeof(e->quantization),
				 optarg))
			return kvsize_bad("--quantization", optarg,
					  "kvsim sizes fp8 weights only");
		break;
	default:
		return -1;
	}
	return KVSIM_EXIT_OK;
}

/* The field of a measured size (SIZE: 14.96GiB, 80GB or bytes); NULL when
 * opt is not a size option. */
static int64_t *
kvsize_size_field(struct sz_engine *e, int opt)
{
	switch (opt) {
	case OPT_KVMEM:
		return &e->kv_cache_memory_bytes;
	case OPT_GPUMEM:
		return &e->gpu_memory_bytes;
	case OPT_WEIGHTS:
		return &e->weights_bytes;
	case OPT_ACT:
		return &e->activation_bytes;
	case OPT_NONTORCH:
		return &e->non_torch_bytes;
	case OPT_CUDAGRAPH:
		return &e->cudagraph_bytes;
	default:
		return NULL;
	}
}

/*
 * An engine option (into e); a size option only points *size at its
 * field, read by the caller.  0, KVSIM_EXIT_USAGE with the message, or
 * -1 when opt is not an engine option.
 */
static int
kvsize_engine_opt(struct sz_engine *e, int opt, const char *optarg,
		  int64_t **size)
{
	char *end;
	int rc;

	if ((rc = kvsize_count_opt(e, opt, optarg)) >= 0 ||
	    (rc = kvsize_dtype_opt(e, opt, optarg)) >= 0)
		return rc;
	if ((*size = kvsize_size_field(e, opt)) != NULL)
		return KVSIM_EXIT_OK;
	switch (opt) {
	case OPT_UTIL:
		errno = 0;
		e->gpu_memory_utilization = strtod(optarg, &end);
		if (*optarg == '\0' || *end != '\0' || errno != 0 ||
		    !(e->gpu_memory_utilization > 0 &&
		      e->gpu_memory_utilization <= 1))
			return kvsize_bad("--gpu-memory-utilization",
					  optarg,
					  "a fraction in (0, 1]");
		break;
	case OPT_PC:
		e->enable_prefix_caching = 1;
		break;
	case OPT_NOPC:
		e->enable_prefix_caching = 0;
		break;
	default:
		return -1;
	}
	return KVSIM_EXIT_OK;
}

struct kvsize_args {
	struct sz_engine e;
	const char *model, *gpu, *datadir;
	bool verbose;
};

/* The options; -1 after --help. */
static int
kvsize_parse(struct kvsize_args *k, int argc, char **argv)
{
	int opt, rc;

	optind = 1;
	for (;;) {
		int li = -1;
		uint64_t u;
		int64_t *size = NULL;
		const char *name;
		char lname[64];

		opt = cli_getopt_long("kvsim kv-size", argc, argv, "m:g:t:q:vh",
				      kvsize_opts, &li);
		if (opt == -1)
			break;
		if (opt == CLI_OPT_BAD)
			return KVSIM_EXIT_USAGE;
		if (li >= 0) {
			snprintf(lname, sizeof(lname), "--%s",
				 kvsize_opts[li].name);
			name = lname;
		} else {
			name = optind > 0 && optind <= argc ?
			       argv[optind - 1] : "?";
		}
		rc = kvsize_engine_opt(&k->e, opt, optarg, &size);
		if (rc > 0)
			return rc;
		switch (rc == 0 ? 0 : opt) {
		case 0:
			break;
		case 'm':
			k->model = optarg;
			break;
		case 'g':
			k->gpu = optarg;
			break;
		case OPT_DATADIR:
			k->datadir = optarg;
			break;
		case 'v':
			k->verbose = true;
			break;
		case 'h':
			kvsize_usage(stdout);
			return -1;
		default:	/* an entry of the table not handled */
			return cli_bad_option("kvsim kv-size", name);
		}
		if (size != NULL) {
			if (!cat_parse_bytes(optarg, &u) || u > INT64_MAX)
				return kvsize_bad(name, optarg, "a size such "
						  "as 53.29GiB, 80GB or bytes");
			*size = (int64_t)u;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "kvsim kv-size: unexpected argument '%s'\n",
			argv[optind]);
		return KVSIM_EXIT_USAGE;
	}
	if (k->model == NULL || k->gpu == NULL) {
		fprintf(stderr, "kvsim kv-size: --model and --gpu are "
			"required\nTry 'kvsim kv-size --help'.\n");
		return KVSIM_EXIT_USAGE;
	}
	return KVSIM_EXIT_OK;
}

/* Size model m on GPU g and print vLLM's lines. */
static int
kvsize_print(const struct kvsize_args *k, const struct cat_model *m,
	     const struct cat_gpu *g)
{
	struct sz_result *r = malloc(sizeof(*r));
	char why[512];
	int rc = KVSIM_EXIT_OK;

	if (r == NULL) {
		fputs("kvsim: out of memory\n", stderr);
		return KVSIM_EXIT_USAGE;
	}
	if (sz_check_block_size(m, g, &k->e, why, sizeof(why)) != KV_OK ||
	    sz_compute(m, g, &k->e, r, why, sizeof(why)) != KV_OK) {
		fprintf(stderr, "kvsim kv-size: %s\n", why);
		rc = KVSIM_EXIT_USAGE;
	} else {
		for (size_t i = 0; i < r->nlog; i++)
			printf("%s\n", r->log[i]);
		if (k->verbose)
			kvsize_explain(m, g, r);
		fflush(stdout);
		if (!r->fits) {
			fprintf(stderr, "ValueError: %s\n", r->error);
			rc = KVSIM_EXIT_FAIL;
		}
	}
	free(r);
	return rc;
}

int
kvsize_main(int argc, char **argv)
{
	struct kvsize_args k;
	const struct cat_model *m;
	struct cat_model *owned = NULL;
	const struct cat_gpu *g;
	struct cat_err ce;
	cat *c;
	int rc;

	memset(&k, 0, sizeof(k));
	sz_engine_init(&k.e);
	if ((rc = kvsize_parse(&k, argc, argv)) != 0)
		return rc < 0 ? KVSIM_EXIT_OK : rc;
	if (cat_load(&c, k.datadir, &ce) != KV_OK) {
		fprintf(stderr, "kvsim kv-size: %s\n", ce.msg);
		return KVSIM_EXIT_USAGE;
	}
	g = cat_find_gpu(c, k.gpu);
	if (g == NULL) {
		fprintf(stderr, "kvsim kv-size: unknown GPU '%s' ('kvsim "
			"catalog list gpus')\n", k.gpu);
		cat_free(c);
		return KVSIM_EXIT_USAGE;
	}
	rc = kvsize_model(c, k.model, &m, &owned);
	if (rc == 0)
		rc = kvsize_print(&k, m, g);
	cat_model_free(owned);
	cat_free(c);
	return rc;
}
