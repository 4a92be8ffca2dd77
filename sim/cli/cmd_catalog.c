/*
 * cmd_catalog.c -- `kvsim catalog list|show`: what the model and GPU
 * catalogs hold, every number next to its source.
 *
 * `list` prints one line per entry; `show NAME` prints one entry (or a
 * Hugging Face config.json as kvsim reads it).  Loading the catalog checks
 * it, so a bad entry fails here with FILE:LINE:COL and exit status 2.
 */
#include "config.h"

#include "sim/cli/cmd_catalog.h"
#include "sim/cli/opts.h"

#include "sim/model/catalog.h"
#include "sim/model/mixer.h"
#include "sim/model/sizing.h"
#include "sim/pdcfg.h"
#include "sim/tiers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB 1073741824.0

static void
catalog_usage(FILE *f)
{
	fprintf(f,
"usage: kvsim catalog list [models|gpus|links|tiers]\n"
"       kvsim catalog show [models|gpus] NAME\n"
"       kvsim catalog show CONFIG.json\n"
"\n"
"List the model and GPU catalogs, or show one entry with the source of every\n"
"number.  NAME is an id or an alias (case-insensitive).  A config.json is\n"
"shown as kvsim reads it.  `list tiers' lists the KV offload media\n"
"(tiers.yaml).\n"
"\n"
"  --datadir DIR   catalog directory (default $KVSIM_DATADIR or the installed\n"
"                  one: %s)\n"
"  -h, --help      this help\n"
"\n"
"Exit status: 0 ok, 2 bad usage, unknown name or a bad catalog entry.\n"
"Docs: docs/catalog.md.\n", cat_datadir());
}

/* Attention KV bytes per token over all layers at the model dtype, TP 1
 * (sliding layers counted too: their window bounds them). */
static uint64_t
catalog_kv_token(const struct cat_model *m)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < m->num_layers; i++) {
		const struct cat_mixer_ops *k = cat_layer_mixer(&m->layer[i]);

		if (k->kv_bytes != NULL)
			sum += k->kv_bytes(m, 1, m->dtype_bytes, 1);
	}
	return sum;
}

static void
catalog_layers_summary(const struct cat_model *m, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int k = CAT_MIX_FULL; k < CAT_NMIXERS; k++) {
		uint32_t n = cat_model_count(m, (enum cat_mixer)k);
		int w;

		if (n == 0)
			continue;
		w = snprintf(buf + used, len - used, "%s%u %s",
			     used ? " + " : "", n,
			     cat_mixer_name((enum cat_mixer)k));
		if (w < 0 || (size_t)w >= len - used)
			return;
		used += (size_t)w;
	}
}

static void
catalog_params(char *buf, size_t len, uint64_t p)
{
	if (p >= 999500000ull)
		snprintf(buf, len, "%.2fB", (double)p / 1e9);
	else
		snprintf(buf, len, "%.0fM", (double)p / 1e6);
}

static void
catalog_list_models(const cat *c)
{
	printf("%-40s %-17s %-40s %8s %13s\n", "MODEL", "TYPE", "LAYERS",
	       "PARAMS", "KV B/TOKEN");
	for (size_t i = 0; i < cat_nmodels(c); i++) {
		const struct cat_model *m = cat_model_at(c, i);
		char layers[160], params[32], kv[32];

		catalog_layers_summary(m, layers, sizeof(layers));
		catalog_params(params, sizeof(params), m->params);
		sz_commas(kv, sizeof(kv), catalog_kv_token(m));
		printf("%-40s %-17s %-40s %8s %13s\n", m->id, m->model_type,
		       layers, params, kv);
	}
}

/* The links of disaggregated runs (data/links.yaml, docs/pd.md). */
static int
catalog_list_links(const char *datadir)
{
	struct sim_link *ls;
	char err[1400];
	size_t n;

	if (sim_link_list(datadir, &ls, &n, err, sizeof(err)) != KV_OK) {
		fprintf(stderr, "kvsim catalog: %s\n", err);
		return KVSIM_EXIT_USAGE;
	}
	printf("%-14s %14s %12s\n", "LINK", "GB/s EACH WAY", "LATENCY");
	for (size_t i = 0; i < n; i++)
		printf("%-14s %14g %9g us\n", ls[i].id, ls[i].gbps,
		       ls[i].latency_us);
	free(ls);
	return KVSIM_EXIT_OK;
}

static void
catalog_list_gpus(const cat *c)
{
	printf("%-14s %-36s %9s %11s %10s %12s\n", "GPU", "NAME", "MEMORY",
	       "USABLE", "HBM", "BF16 DENSE");
	for (size_t i = 0; i < cat_ngpus(c); i++) {
		const struct cat_gpu *g = cat_gpu_at(c, i);
		char bf16[32] = "-";

		if (g->flops[CAT_BF16] > 0)
			snprintf(bf16, sizeof(bf16), "%.1f TF",
				 g->flops[CAT_BF16] / 1e12);
		printf("%-14s %-36s %5.0f GiB %7.2f GiB %5.2f TB/s %12s\n",
		       g->id, g->name, (double)g->memory_bytes / GIB,
		       (double)g->usable_bytes / GIB, g->hbm_bw / 1e12, bf16);
	}
}

static void
catalog_src(const char *s)
{
	if (s != NULL)
		printf("    source: %s\n", s);
}

static void
catalog_aliases(char *const *alias, size_t n)
{
	if (n == 0)
		return;
	printf("aliases:");
	for (size_t i = 0; i < n; i++)
		printf("%s %s", i ? "," : "", alias[i]);
	printf("\n");
}

/* A model field printed with its own source when it differs. */
static void
catalog_mfield(const struct cat_model *m, const char *field,
	       unsigned long long v)
{
	const char *s = cat_model_source(m, field);

	printf("%s: %llu\n", field, v);
	if (s != m->source)
		catalog_src(s);
}

static void
catalog_show_model(const struct cat_model *m)
{
	static const char ffn[] = "-de";
	char buf[64];

	printf("id: %s\n", m->id);
	catalog_aliases(m->alias, m->nalias);
	printf("origin: %s\n", m->origin);
	printf("source: %s\n", m->source);
	if (m->note != NULL)
		printf("note: %s\n", m->note);
	printf("model_type: %s%s%s%s\n", m->model_type,
	       m->architecture[0] ? " (" : "", m->architecture,
	       m->architecture[0] ? ")" : "");
	printf("dtype: %s (%u bytes; weights %u bytes per parameter)\n",
	       m->dtype, m->dtype_bytes, m->weight_bytes);
	catalog_mfield(m, "num_hidden_layers", m->num_layers);
	catalog_mfield(m, "hidden_size", m->hidden_size);
	catalog_mfield(m, "num_attention_heads", m->num_heads);
	catalog_mfield(m, "num_key_value_heads", m->num_kv_heads);
	catalog_mfield(m, "head_dim", m->head_dim);
	if (m->v_head_dim != m->head_dim)
		catalog_mfield(m, "v_head_dim", m->v_head_dim);
	if (m->intermediate_size)
		catalog_mfield(m, "intermediate_size", m->intermediate_size);
	catalog_mfield(m, "vocab_size", m->vocab_size);
	catalog_mfield(m, "max_model_len", m->max_model_len);
	printf("rotary_dim: %u\n", m->rotary_dim);
	if (m->num_experts) {
		catalog_mfield(m, "num_experts", m->num_experts);
		catalog_mfield(m, "num_experts_per_tok", m->experts_per_tok);
		catalog_mfield(m, "moe_intermediate_size",
			       m->moe_intermediate_size);
		if (m->shared_intermediate_size)
			catalog_mfield(m, "shared_intermediate_size",
				       m->shared_intermediate_size);
	}
	if (m->kv_lora_rank) {
		catalog_mfield(m, "kv_lora_rank", m->kv_lora_rank);
		catalog_mfield(m, "q_lora_rank", m->q_lora_rank);
		catalog_mfield(m, "qk_nope_head_dim", m->qk_nope_head_dim);
		catalog_mfield(m, "qk_rope_head_dim", m->qk_rope_head_dim);
	}
	if (m->ssm.d_inner || m->ssm.value_heads) {
		const struct cat_ssm *s = &m->ssm;

		if (s->value_heads)
			printf("linear_attention: key_heads %u x %u, "
			       "value_heads %u x %u, conv_kernel %u\n",
			       s->key_heads, s->key_dim, s->value_heads,
			       s->value_dim, s->conv_kernel);
		else
			printf("mamba: d_inner %u, d_state %u, d_conv %u, "
			       "n_groups %u, n_heads %u, head_dim %u, dt_rank "
			       "%u, chunk_size %u\n", s->d_inner, s->d_state,
			       s->d_conv, s->n_groups, s->n_heads, s->head_dim,
			       s->dt_rank, s->chunk_size);
		if (m->ssm_cache_dtype[0])
			printf("mamba_ssm_cache_dtype: %s (not read by vLLM "
			       "5e5a7eb16f12; --mamba-ssm-cache-dtype)\n",
			       m->ssm_cache_dtype);
	}
	catalog_layers_summary(m, buf, sizeof(buf));
	printf("layers: %s\n", buf);
	printf("layer_pattern: ");
	for (uint32_t i = 0; i < m->num_layers; i++)
		putchar(cat_layer_mixer(&m->layer[i])->letter);
	printf("  (F full, S sliding, C chunked, L MLA, m Mamba-1, "
	       "M Mamba-2, G GDN, - none)\n");
	printf("ffn_pattern: ");
	for (uint32_t i = 0; i < m->num_layers; i++)
		putchar(ffn[m->layer[i].ffn]);
	printf("  (d dense, e MoE, - none)\n");
	for (uint32_t i = 0; i < m->num_layers; i++)
		if (cat_layer_mixer(&m->layer[i])->windowed) {
			printf("window: %u tokens\n", m->layer[i].window);
			break;
		}
	sz_commas(buf, sizeof(buf), catalog_kv_token(m));
	printf("kv_bytes_per_token: %s (attention layers, %s, TP 1)\n", buf,
	       m->dtype);
	sz_commas(buf, sizeof(buf), m->params);
	printf("params: %s", buf);
	sz_commas(buf, sizeof(buf), m->active_params);
	printf(" (active per token %s)\n", buf);
	catalog_src(m->params_source);
}

static void
catalog_gfield(const struct cat_gpu *g, enum cat_gpu_field f,
	       const char *key, const char *value)
{
	if (g->src[f] == NULL)
		return;
	printf("%s: %s\n", key, value);
	catalog_src(g->src[f]);
}

static void
catalog_show_gpu(const struct cat_gpu *g)
{
	static const char *const fl[] = { "fp32", "bf16", "fp16", "fp8" };
	static const enum cat_gpu_field ff[] = {
		CAT_G_FLOPS_FP32, CAT_G_FLOPS_BF16, CAT_G_FLOPS_FP16,
		CAT_G_FLOPS_FP8
	};
	char v[128], n[32];

	printf("id: %s\n", g->id);
	catalog_aliases(g->alias, g->nalias);
	printf("origin: %s\n", g->origin);
	printf("name: %s\nvendor: %s\n", g->name, g->vendor);
	if (g->note != NULL)
		printf("note: %s\n", g->note);
	if (g->device_name[0]) {
		printf("device_name: %s\n", g->device_name);
		catalog_src(g->src[CAT_G_DEVICE_NAME]);
	}
	if (g->src[CAT_G_CC] != NULL) {
		printf("compute_capability: %u.%u\n", g->cc_major,
		       g->cc_minor);
		catalog_src(g->src[CAT_G_CC]);
	}
	sz_commas(n, sizeof(n), g->memory_bytes);
	snprintf(v, sizeof(v), "%.2f GiB (%s bytes)",
		 (double)g->memory_bytes / GIB, n);
	catalog_gfield(g, CAT_G_MEMORY, "memory", v);
	sz_commas(n, sizeof(n), g->usable_bytes);
	snprintf(v, sizeof(v), "%.2f GiB (%s bytes)",
		 (double)g->usable_bytes / GIB, n);
	catalog_gfield(g, CAT_G_USABLE, "usable_memory", v);
	snprintf(v, sizeof(v), "%g TB/s", g->hbm_bw / 1e12);
	catalog_gfield(g, CAT_G_HBM_BW, "memory_bandwidth", v);
	for (int i = 0; i < CAT_NDTYPES; i++) {
		char key[32];

		snprintf(key, sizeof(key), "flops.%s", fl[i]);
		snprintf(v, sizeof(v), "%g TFLOPS dense", g->flops[i] / 1e12);
		catalog_gfield(g, ff[i], key, v);
	}
	snprintf(v, sizeof(v), "%g GB/s per direction",
		 g->interconnect_bw / 1e9);
	catalog_gfield(g, CAT_G_INTERCONNECT, "interconnect", v);
	snprintf(v, sizeof(v), "%g GB/s per direction", g->host_bw / 1e9);
	catalog_gfield(g, CAT_G_HOST, "host_link", v);
	snprintf(v, sizeof(v), "%g USD per GPU-hour", g->usd_per_hour);
	catalog_gfield(g, CAT_G_PRICE, "price", v);
	printf("unified_memory: %s\n", g->unified_memory ? "true" : "false");
}

/* The KV tier catalog (tiers.yaml; sim/tiers.h). */
static int
catalog_list_tiers(const char *datadir)
{
	struct sim_tiers t;
	char err[1200];

	if (sim_tiers_load(&t, datadir, NULL, err, sizeof(err)) != KV_OK) {
		fprintf(stderr, "kvsim catalog: %s\n", err);
		return KVSIM_EXIT_USAGE;
	}
	printf("%-14s %-7s %-5s %12s %12s %10s\n", "MEDIUM", "TIER", "LINK",
	       "READ", "WRITE", "LATENCY");
	for (int k = 0; k < SIM_TIER_NMEDIA; k++) {
		const struct sim_tier *m = &t.m[k];

		if (m->host)
			printf("%-14s %-7s %-5s %12s %12s %10s\n", m->id,
			       m->tier, "host", "swap copy", "swap copy", "-");
		else
			printf("%-14s %-7s %-5s %7.1f GB/s %7.1f GB/s %7.0f us"
			       "\n", m->id, m->tier, "-", m->read_gbps,
			       m->write_gbps, m->latency_us);
	}
	return KVSIM_EXIT_OK;
}

int
catalog_main(int argc, char **argv)
{
	const char *datadir = NULL, *what = NULL, *name = NULL, *verb = NULL;
	struct cat_err e;
	cat *c;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			catalog_usage(stdout);
			return KVSIM_EXIT_OK;
		} else if (strcmp(argv[i], "--datadir") == 0) {
			if (++i == argc)
				return cli_missing_value("kvsim catalog",
							 argv[i - 1]);
			datadir = argv[i];
		} else if (strncmp(argv[i], "--datadir=", 10) == 0) {
			datadir = argv[i] + 10;
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			return cli_bad_option("kvsim catalog", argv[i]);
		} else if (verb == NULL) {
			verb = argv[i];
		} else if (what == NULL &&
			   (strcmp(argv[i], "models") == 0 ||
			    strcmp(argv[i], "gpus") == 0 ||
			    strcmp(argv[i], "links") == 0 ||
			    strcmp(argv[i], "tiers") == 0 ||
			    strcmp(argv[i], "devices") == 0) && name == NULL) {
			what = argv[i];
		} else if (name == NULL) {
			name = argv[i];
		} else {
			fprintf(stderr, "kvsim catalog: unexpected argument "
				"'%s'\n", argv[i]);
			return KVSIM_EXIT_USAGE;
		}
	}
	if (verb == NULL || (strcmp(verb, "list") != 0 &&
			     strcmp(verb, "show") != 0)) {
		catalog_usage(stderr);
		return KVSIM_EXIT_USAGE;
	}
	if (strcmp(verb, "list") == 0 && name != NULL) {
		fprintf(stderr, "kvsim catalog list: unexpected argument '%s' "
			"(models or gpus)\n", name);
		return KVSIM_EXIT_USAGE;
	}
	if (strcmp(verb, "show") == 0 && name == NULL) {
		fprintf(stderr, "kvsim catalog show: which entry?\n"
			"usage: kvsim catalog show [models|gpus] NAME\n");
		return KVSIM_EXIT_USAGE;
	}
	if (strcmp(verb, "list") == 0 && what != NULL &&
	    strcmp(what, "links") == 0)
		return catalog_list_links(datadir);
	if (what != NULL && strcmp(what, "tiers") == 0 &&
	    strcmp(verb, "list") == 0)
		return catalog_list_tiers(datadir);
	if (what != NULL && strcmp(what, "tiers") == 0) {
		fprintf(stderr, "kvsim catalog show: the tiers are listed, not "
			"shown ('kvsim catalog list tiers')\n");
		return KVSIM_EXIT_USAGE;
	}
	if (name != NULL && what == NULL && strlen(name) > 5 &&
	    strcmp(name + strlen(name) - 5, ".json") == 0) {
		struct cat_model *m;

		if (cat_model_from_hf(&m, name, &e) != KV_OK) {
			fprintf(stderr, "kvsim catalog: %s\n", e.msg);
			return KVSIM_EXIT_USAGE;
		}
		catalog_show_model(m);
		cat_model_free(m);
		return KVSIM_EXIT_OK;
	}
	if (cat_load(&c, datadir, &e) != KV_OK) {
		fprintf(stderr, "kvsim catalog: %s\n", e.msg);
		return KVSIM_EXIT_USAGE;
	}
	if (strcmp(verb, "list") == 0) {
		if (what == NULL || strcmp(what, "models") == 0)
			catalog_list_models(c);
		if (what == NULL)
			printf("\n");
		if (what == NULL || strcmp(what, "models") != 0)
			catalog_list_gpus(c);
	} else {
		const struct cat_model *m = NULL;
		const struct cat_gpu *g = NULL;

		if (what == NULL || strcmp(what, "models") == 0)
			m = cat_find_model(c, name);
		if (m == NULL && (what == NULL || strcmp(what, "models") != 0))
			g = cat_find_gpu(c, name);
		if (m != NULL) {
			catalog_show_model(m);
		} else if (g != NULL) {
			catalog_show_gpu(g);
		} else {
			fprintf(stderr, "kvsim catalog: no %s named '%s' "
				"('kvsim catalog list')\n",
				what == NULL ? "model or GPU" :
				strcmp(what, "models") == 0 ? "model" : "GPU",
				name);
			rc = KVSIM_EXIT_USAGE;
		}
	}
	cat_free(c);
	return rc;
}
