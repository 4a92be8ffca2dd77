/*
 * catalog.c -- model and GPU catalogs, and the config.json reader
 * (catalog.h).
 *
 * A file is read whole into a ydoc tree, then checked entry by entry; the
 * first bad value stops the load with FILE:LINE:COL.  A model entry's
 * `config:` block and a Hugging Face config.json go through the same
 * interpreter (cp_model_config), which turns the field spellings of each
 * model family (docs/ecosystem.md §1.1 "Parsing notes") into one struct
 * cat_model with a per-layer mixer/FFN table.
 *
 * Sources: an entry's `source:` covers every number in it; a number written
 * as {value: X, source: "..."} carries its own.  GPU entries must source
 * every number one way or the other; a model entry must have `source:`.
 *
 * Costs: loading is linear in the file; lookups are linear in the entries
 * (tens).  Rejected: a hash table (nothing here is hot).
 */
#include "config.h"

#include "sim/model/catalog.h"
#include "sim/model/mixer.h"
#include "util/ydoc.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#ifndef KVSIM_DATADIR
#define KVSIM_DATADIR "."
#endif
#ifndef KVSIM_SRCDATADIR
#define KVSIM_SRCDATADIR KVSIM_DATADIR
#endif

struct cat {
	struct cat_model **model;
	size_t nmodel;
	struct cat_gpu **gpu;
	size_t ngpu;
};

/* parse context: the file, the error sink, and what is being built */
struct cp {
	const char *file;
	struct cat_err *e;
	bool strict;		/* catalog: unknown keys are errors */
	struct cat_model *m;	/* per-field sources go here */
	struct cat_gpu *g;
	const char *entry_source;	/* GPU: the entry's source or NULL */
};

/* ---- small utilities --------------------------------------------------- */

static char *
cp_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);

	if (d != NULL)
		memcpy(d, s, n);
	return d;
}

static kv_err
cp_fail(struct cp *p, const struct yd_node *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static kv_err
cp_fail(struct cp *p, const struct yd_node *n, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (n != NULL)
		k = snprintf(p->e->msg, sizeof(p->e->msg), "%s:%lu:%lu: ",
			     p->file, n->line, n->col);
	else
		k = snprintf(p->e->msg, sizeof(p->e->msg), "%s: ", p->file);
	if (k < 0 || (size_t)k >= sizeof(p->e->msg))
		return KV_EINVAL;
	va_start(ap, fmt);
	vsnprintf(p->e->msg + k, sizeof(p->e->msg) - (size_t)k, fmt, ap);
	va_end(ap);
	return KV_EINVAL;
}

static kv_err
cp_nomem(struct cp *p)
{
	snprintf(p->e->msg, sizeof(p->e->msg), "%s: out of memory", p->file);
	return KV_ENOMEM;
}

static const char *
cp_type_name(const struct yd_node *n)
{
	switch (n->type) {
	case YD_MAP:
		return "a mapping";
	case YD_SEQ:
		return "a list";
	case YD_SCALAR:
		break;
	}
	return "a value";
}

/* ---- numbers with units ------------------------------------------------ */

/* A decimal number at the start of s (digits, optional fraction/exponent);
 * *end after it.  No sign, no hex, no inf/nan. */
static bool
cp_number(const char *s, double *out, const char **end)
{
	const char *q = s;
	char *e;

	if (!(*q >= '0' && *q <= '9') && *q != '.')
		return false;
	errno = 0;
	*out = strtod(s, &e);
	if (e == s || errno != 0 || !isfinite(*out) || *out < 0)
		return false;
	*end = e;
	return true;
}

struct cp_unit {
	const char *name;
	double mult;
};

static bool
cp_scaled(const char *s, const struct cp_unit *u, double *out)
{
	const char *rest;
	double v;

	if (!cp_number(s, &v, &rest))
		return false;
	while (*rest == ' ')
		rest++;
	for (; u->name != NULL; u++)
		if (strcmp(rest, u->name) == 0) {
			*out = v * u->mult;
			return isfinite(*out);
		}
	return false;
}

static const struct cp_unit cp_byte_units[] = {
	{ "", 1 }, { "B", 1 },
	{ "KB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 }, { "TB", 1e12 },
	{ "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", 1073741824.0 },
	{ "TiB", 1099511627776.0 },
	{ NULL, 0 }
};

static const struct cp_unit cp_rate_units[] = {
	{ "B/s", 1 }, { "KB/s", 1e3 }, { "MB/s", 1e6 }, { "GB/s", 1e9 },
	{ "TB/s", 1e12 },
	{ NULL, 0 }
};

/* a price: US dollars per GPU-hour */
static const struct cp_unit cp_price_units[] = {
	{ "USD/h", 1 },
	{ NULL, 0 }
};

static const struct cp_unit cp_flops_units[] = {
	{ "FLOPS", 1 }, { "GFLOPS", 1e9 }, { "TFLOPS", 1e12 },
	{ "PFLOPS", 1e15 },
	{ NULL, 0 }
};

bool
cat_parse_bytes(const char *s, uint64_t *out)
{
	double v;

	if (s == NULL || !cp_scaled(s, cp_byte_units, &v) ||
	    v >= 18446744073709549568.0)
		return false;
	*out = (uint64_t)(v + 0.5);
	return true;
}

uint32_t
cat_dtype_bytes(const char *name)
{
	static const struct {
		const char *name;
		uint32_t bytes;
	} t[] = {
		{ "bfloat16", 2 }, { "bf16", 2 }, { "float16", 2 },
		{ "fp16", 2 }, { "half", 2 }, { "float32", 4 },
		{ "fp32", 4 }, { "float", 4 }, { "fp8", 1 },
		{ "fp8_e4m3", 1 }, { "fp8_e5m2", 1 }, { "fp8_inc", 1 },
		{ "float8_e4m3fn", 1 }, { "int8", 1 },
	};

	if (name == NULL)
		return 0;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strcasecmp(name, t[i].name) == 0)
			return t[i].bytes;
	return 0;
}

kv_err
cat_fail(char *why, size_t whylen, kv_err rc, const char *fmt, ...)
{
	va_list ap;

	if (why != NULL && whylen > 0) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* ---- typed reads of YAML nodes ----------------------------------------- */

static kv_err
cp_add_fsrc(struct cp *p, const char *field, const char *text)
{
	struct cat_model *m = p->m;
	char **f, **t;

	if (m == NULL)
		return KV_OK;
	f = realloc(m->fsrc_field, (m->nfsrc + 1) * sizeof(*f));
	if (f == NULL)
		return cp_nomem(p);
	m->fsrc_field = f;
	t = realloc(m->fsrc_text, (m->nfsrc + 1) * sizeof(*t));
	if (t == NULL)
		return cp_nomem(p);
	m->fsrc_text = t;
	f[m->nfsrc] = cp_strdup(field);
	t[m->nfsrc] = cp_strdup(text);
	if (f[m->nfsrc] == NULL || t[m->nfsrc] == NULL) {
		free(f[m->nfsrc]);
		free(t[m->nfsrc]);
		return cp_nomem(p);
	}
	m->nfsrc++;
	return KV_OK;
}

/*
 * The value of `key` in `map`, looking through {value: X, source: S}.
 * *src gets S (borrowed from the tree) or NULL.  NULL if absent or null.
 */
static kv_err
cp_field(struct cp *p, const struct yd_node *map, const char *key,
	 const struct yd_node **out, const char **src)
{
	const struct yd_node *v = yd_get(map, key);

	*out = NULL;
	if (src != NULL)
		*src = NULL;
	if (v == NULL || yd_is_null(v))
		return KV_OK;
	if (v->type == YD_MAP && yd_get(v, "value") != NULL) {
		const struct yd_node *s = yd_get(v, "source");

		for (size_t i = 0; i < v->n; i++) {
			const char *k = yd_key(v, i)->str;

			if (strcmp(k, "value") != 0 &&
			    strcmp(k, "source") != 0 && strcmp(k, "note") != 0)
				return cp_fail(p, yd_key(v, i),
					       "unknown key '%s' in a sourced "
					       "value (value, source, note)",
					       k);
		}
		if (s == NULL || s->type != YD_SCALAR || s->str[0] == '\0')
			return cp_fail(p, v, "'%s': a {value: ...} needs a "
				       "non-empty source", key);
		if (src != NULL)
			*src = s->str;
		if (p->m != NULL) {
			kv_err rc = cp_add_fsrc(p, key, s->str);

			if (rc != KV_OK)
				return rc;
		}
		v = yd_get(v, "value");
		if (yd_is_null(v))
			return KV_OK;
	}
	*out = v;
	return KV_OK;
}

static kv_err
cp_u64_node(struct cp *p, const struct yd_node *v, const char *key,
	    uint64_t max, uint64_t *out)
{
	const char *s;
	uint64_t x = 0;

	if (v->type != YD_SCALAR)
		return cp_fail(p, v, "'%s' must be a number, not %s", key,
			       cp_type_name(v));
	s = v->str;
	if (*s == '\0')
		return cp_fail(p, v, "'%s' must be a number", key);
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return cp_fail(p, v, "'%s' must be a non-negative "
				       "integer, not '%s'", key, v->str);
		if (x > (max - (uint64_t)(*s - '0')) / 10)
			return cp_fail(p, v, "'%s' is too large: %s", key,
				       v->str);
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*out = x;
	return KV_OK;
}

/* An optional integer field; *out unchanged when absent. */
static kv_err
cp_u32(struct cp *p, const struct yd_node *map, const char *key,
       uint32_t *out)
{
	const struct yd_node *v;
	uint64_t x;
	kv_err rc = cp_field(p, map, key, &v, NULL);

	if (rc != KV_OK || v == NULL)
		return rc;
	rc = cp_u64_node(p, v, key, UINT32_MAX, &x);
	if (rc == KV_OK)
		*out = (uint32_t)x;
	return rc;
}

static kv_err
cp_u32_req(struct cp *p, const struct yd_node *map, const char *key,
	   uint32_t *out, bool positive)
{
	const struct yd_node *v;
	kv_err rc = cp_field(p, map, key, &v, NULL);

	if (rc != KV_OK)
		return rc;
	if (v == NULL)
		return cp_fail(p, map, "missing '%s'", key);
	rc = cp_u32(p, map, key, out);
	if (rc == KV_OK && positive && *out == 0)
		return cp_fail(p, v, "'%s' must be positive", key);
	return rc;
}

static kv_err
cp_double(struct cp *p, const struct yd_node *map, const char *key,
	  double *out)
{
	const struct yd_node *v;
	const char *end;
	double x;
	kv_err rc = cp_field(p, map, key, &v, NULL);

	if (rc != KV_OK || v == NULL)
		return rc;
	if (v->type != YD_SCALAR || !cp_number(v->str, &x, &end) ||
	    *end != '\0')
		return cp_fail(p, v, "'%s' must be a non-negative number",
			       key);
	*out = x;
	return KV_OK;
}

static kv_err
cp_bool(struct cp *p, const struct yd_node *map, const char *key, bool *out)
{
	const struct yd_node *v;
	kv_err rc = cp_field(p, map, key, &v, NULL);

	if (rc != KV_OK || v == NULL)
		return rc;
	if (v->type == YD_SCALAR && (strcmp(v->str, "true") == 0 ||
				     strcmp(v->str, "True") == 0)) {
		*out = true;
	} else if (v->type == YD_SCALAR && (strcmp(v->str, "false") == 0 ||
					    strcmp(v->str, "False") == 0)) {
		*out = false;
	} else {
		return cp_fail(p, v, "'%s' must be true or false", key);
	}
	return KV_OK;
}

/* A string field; *out borrowed from the tree, NULL when absent. */
static kv_err
cp_str(struct cp *p, const struct yd_node *map, const char *key,
       const char **out, const char **src)
{
	const struct yd_node *v;
	kv_err rc = cp_field(p, map, key, &v, src);

	*out = NULL;
	if (rc != KV_OK || v == NULL)
		return rc;
	if (v->type != YD_SCALAR)
		return cp_fail(p, v, "'%s' must be a string, not %s", key,
			       cp_type_name(v));
	*out = v->str;
	return KV_OK;
}

/* Every key of `map` must be in the NULL-terminated list `known`. */
static kv_err
cp_known(struct cp *p, const struct yd_node *map, const char *const *known,
	 const char *what)
{
	for (size_t i = 0; i < map->n; i++) {
		const struct yd_node *k = yd_key(map, i);
		const char *const *q;

		for (q = known; *q != NULL; q++)
			if (strcmp(*q, k->str) == 0)
				break;
		if (*q == NULL)
			return cp_fail(p, k, "unknown key '%s' in %s", k->str,
				       what);
	}
	return KV_OK;
}

static kv_err
cp_aliases(struct cp *p, const struct yd_node *entry, char ***alias,
	   size_t *nalias)
{
	const struct yd_node *a = yd_get(entry, "aliases");

	if (a == NULL || yd_is_null(a))
		return KV_OK;
	if (a->type != YD_SEQ)
		return cp_fail(p, a, "'aliases' must be a list of names");
	*alias = calloc(a->n ? a->n : 1, sizeof(char *));
	if (*alias == NULL)
		return cp_nomem(p);
	for (size_t i = 0; i < a->n; i++) {
		if (a->kid[i]->type != YD_SCALAR || a->kid[i]->str[0] == '\0')
			return cp_fail(p, a->kid[i], "an alias must be a "
				       "non-empty name");
		(*alias)[i] = cp_strdup(a->kid[i]->str);
		if ((*alias)[i] == NULL)
			return cp_nomem(p);
		*nalias = i + 1;
	}
	return KV_OK;
}

/* ---- models: config.json field families -------------------------------- */

static const char *const cp_config_keys[] = {
	"model_type", "architectures", "torch_dtype", "dtype",
	"num_hidden_layers", "hidden_size", "num_attention_heads",
	"num_key_value_heads", "head_dim", "attention_head_dim",
	"intermediate_size", "vocab_size", "max_position_embeddings",
	"n_positions", "max_seq_len", "seq_length", "model_max_length",
	"max_sequence_length", "max_seq_length", "seq_len",
	"rope_scaling", "rope_theta", "partial_rotary_factor",
	"position_embedding_type", "tie_word_embeddings", "attention_bias",
	"sliding_window", "use_sliding_window", "max_window_layers",
	"layer_types", "hybrid_override_pattern", "attn_layer_period",
	"attn_layer_offset", "expert_layer_period", "expert_layer_offset",
	"full_attention_interval", "sliding_window_pattern",
	"_sliding_window_pattern", "cache_implementation",
	"attention_chunk_size", "num_experts", "num_local_experts",
	"n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
	"shared_expert_intermediate_size", "shared_intermediate_size",
	"n_shared_experts", "first_k_dense_replace", "moe_layer_freq",
	"decoder_sparse_step", "mlp_only_layers", "kv_lora_rank",
	"q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
	"num_nextn_predict_layers", "mamba_d_state", "mamba_d_conv",
	"mamba_expand", "mamba_n_heads", "mamba_d_head", "mamba_n_groups",
	"mamba_chunk_size", "mamba_dt_rank", "mamba_num_heads",
	"mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel",
	"expand", "chunk_size", "mamba_ssm_cache_dtype",
	"linear_num_key_heads", "linear_num_value_heads",
	"linear_key_head_dim", "linear_value_head_dim",
	"linear_conv_kernel_dim", "quantization_config", "hidden_act",
	"rms_norm_eps", "text_config",
	NULL
};

static bool
cp_type_is(const struct cat_model *m, const char *t)
{
	return strcmp(m->model_type, t) == 0;
}

/* vLLM's derived max_model_len (config/model.py _get_and_verify_max_len):
 * the smallest of the length keys present, scaled by rope_scaling. */
static kv_err
cp_max_len(struct cp *p, const struct yd_node *cfg, struct cat_model *m)
{
	static const char *const keys[] = {
		"max_position_embeddings", "n_positions", "max_seq_len",
		"seq_length", "model_max_length", "max_sequence_length",
		"max_seq_length", "seq_len",
	};
	const struct yd_node *rs = yd_get(cfg, "rope_scaling");
	uint64_t best = 0;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		uint32_t v = 0;
		kv_err rc = cp_u32(p, cfg, keys[i], &v);

		if (rc != KV_OK)
			return rc;
		if (v > 0 && (best == 0 || v < best))
			best = v;
	}
	if (best == 0)
		best = 2048;	/* vLLM: "assumed 2048" */
	if (rs != NULL && rs->type == YD_MAP && !cp_type_is(m, "gemma3") &&
	    !cp_type_is(m, "gemma3_text")) {
		const char *type = NULL;
		double factor = 1.0;
		kv_err rc = cp_str(p, rs, "rope_type", &type, NULL);

		if (rc == KV_OK && type == NULL)
			rc = cp_str(p, rs, "type", &type, NULL);
		if (rc == KV_OK)
			rc = cp_double(p, rs, "factor", &factor);
		if (rc != KV_OK)
			return rc;
		if (type != NULL && strcmp(type, "su") != 0 &&
		    strcmp(type, "longrope") != 0 &&
		    strcmp(type, "llama3") != 0 &&
		    strcmp(type, "default") != 0) {
			if (strcmp(type, "yarn") == 0) {
				uint32_t orig = 0;

				rc = cp_u32(p, rs,
					    "original_max_position_embeddings",
					    &orig);
				if (rc != KV_OK)
					return rc;
				if (orig > 0)
					best = orig;
			}
			if ((double)best * factor >= 4294967296.0)
				return cp_fail(p, yd_get(rs, "factor"),
					       "'rope_scaling.factor' makes a "
					       "context of %.4g tokens (at most "
					       "2^32 - 1)",
					       (double)best * factor);
			best = (uint64_t)((double)best * factor);
		}
	}
	m->max_model_len = best;
	return KV_OK;
}

static kv_err
cp_layers_from_types(struct cp *p, const struct yd_node *lt,
		     struct cat_model *m, uint32_t sliding, uint32_t chunk)
{
	if (lt->type != YD_SEQ)
		return cp_fail(p, lt, "'layer_types' must be a list");
	if (lt->n != m->num_layers)
		return cp_fail(p, lt, "'layer_types' has %zu entries for %u "
			       "layers", lt->n, m->num_layers);
	for (size_t i = 0; i < lt->n; i++) {
		const struct yd_node *t = lt->kid[i];
		struct cat_layer *l = &m->layer[i];

		if (t->type != YD_SCALAR)
			return cp_fail(p, t, "a layer type must be a name");
		if (strcmp(t->str, "full_attention") == 0 ||
		    strcmp(t->str, "attention") == 0) {
			l->mixer = m->kv_lora_rank ? CAT_MIX_MLA : CAT_MIX_FULL;
		} else if (strcmp(t->str, "sliding_attention") == 0) {
			if (sliding == 0)
				return cp_fail(p, t, "sliding_attention "
					       "without 'sliding_window'");
			l->mixer = CAT_MIX_SLIDING;
			l->window = sliding;
		} else if (strcmp(t->str, "chunked_attention") == 0) {
			if (chunk == 0)
				return cp_fail(p, t, "chunked_attention "
					       "without "
					       "'attention_chunk_size'");
			l->mixer = CAT_MIX_CHUNKED;
			l->window = chunk;
		} else if (strcmp(t->str, "linear_attention") == 0 &&
			   cp_type_is(m, "qwen3_next")) {
			l->mixer = CAT_MIX_GDN;
		} else if (strcmp(t->str, "mamba") == 0) {
			l->mixer = cp_type_is(m, "jamba") ? CAT_MIX_MAMBA1 :
				   CAT_MIX_MAMBA2;
		} else {
			return cp_fail(p, t, "unsupported layer type '%s'",
				       t->str);
		}
	}
	return KV_OK;
}

/* Nemotron-H: M Mamba-2, * attention, - MLP, E MoE; one block each. */
static kv_err
cp_layers_from_pattern(struct cp *p, const struct yd_node *pat,
		       struct cat_model *m)
{
	size_t n;

	if (pat->type != YD_SCALAR)
		return cp_fail(p, pat, "'hybrid_override_pattern' must be a "
			       "string");
	n = strlen(pat->str);
	if (n != m->num_layers)
		return cp_fail(p, pat, "'hybrid_override_pattern' has %zu "
			       "characters for %u layers", n, m->num_layers);
	for (size_t i = 0; i < n; i++) {
		struct cat_layer *l = &m->layer[i];

		switch (pat->str[i]) {
		case 'M':
			l->mixer = CAT_MIX_MAMBA2;
			l->ffn = CAT_FFN_NONE;
			break;
		case '*':
			l->mixer = CAT_MIX_FULL;
			l->ffn = CAT_FFN_NONE;
			break;
		case '-':
			l->mixer = CAT_MIX_NONE;
			l->ffn = CAT_FFN_DENSE;
			break;
		case 'E':
			l->mixer = CAT_MIX_NONE;
			l->ffn = CAT_FFN_MOE;
			break;
		default:
			return cp_fail(p, pat, "'hybrid_override_pattern': "
				       "unknown block '%c' at %zu (M, *, -, "
				       "E)", pat->str[i], i);
		}
	}
	return KV_OK;
}

/* Does layer i use the MoE block (families without a per-layer pattern)? */
static kv_err
cp_moe_layers(struct cp *p, const struct yd_node *cfg, struct cat_model *m)
{
	uint32_t first_dense = 0, freq = 1, step = 1, period = 1, offset = 0;
	const struct yd_node *only = yd_get(cfg, "mlp_only_layers");
	kv_err rc;

	if ((rc = cp_u32(p, cfg, "first_k_dense_replace", &first_dense)) ||
	    (rc = cp_u32(p, cfg, "moe_layer_freq", &freq)) ||
	    (rc = cp_u32(p, cfg, "decoder_sparse_step", &step)) ||
	    (rc = cp_u32(p, cfg, "expert_layer_period", &period)) ||
	    (rc = cp_u32(p, cfg, "expert_layer_offset", &offset)))
		return rc;
	if (freq == 0 || step == 0 || period == 0)
		return cp_fail(p, cfg, "a MoE layer period must be positive");
	if (only != NULL && !yd_is_null(only) && only->type != YD_SEQ)
		return cp_fail(p, only, "'mlp_only_layers' must be a list");
	for (uint32_t i = 0; i < m->num_layers; i++) {
		struct cat_layer *l = &m->layer[i];
		bool moe = m->num_experts > 0;

		if (l->ffn != CAT_FFN_DENSE)
			continue;	/* set by a pattern */
		if (cp_type_is(m, "deepseek_v2") ||
		    cp_type_is(m, "deepseek_v3"))
			moe = moe && i >= first_dense && i % freq == 0;
		else if (cp_type_is(m, "jamba"))
			moe = m->num_experts > 1 && i % period == offset;
		else if (cp_type_is(m, "qwen2_moe") ||
			 cp_type_is(m, "qwen3_moe") ||
			 cp_type_is(m, "qwen3_next"))
			moe = moe && (i + 1) % step == 0;
		if (moe && only != NULL && only->type == YD_SEQ)
			for (size_t k = 0; k < only->n; k++) {
				uint64_t idx;

				rc = cp_u64_node(p, only->kid[k],
						 "mlp_only_layers", UINT32_MAX,
						 &idx);
				if (rc != KV_OK)
					return rc;
				if (idx == i)
					moe = false;
			}
		l->ffn = moe ? CAT_FFN_MOE : CAT_FFN_DENSE;
	}
	return KV_OK;
}

static kv_err
cp_ssm(struct cp *p, const struct yd_node *cfg, struct cat_model *m)
{
	struct cat_ssm *s = &m->ssm;
	uint32_t expand = 0;
	kv_err rc = KV_OK;

	if (cat_model_count(m, CAT_MIX_MAMBA2) > 0) {
		if (yd_get(cfg, "mamba_n_heads") != NULL) {	/* Granite */
			if ((rc = cp_u32_req(p, cfg, "mamba_n_heads",
					     &s->n_heads, true)) ||
			    (rc = cp_u32_req(p, cfg, "mamba_d_head",
					     &s->head_dim, true)) ||
			    (rc = cp_u32_req(p, cfg, "mamba_d_state",
					     &s->d_state, true)) ||
			    (rc = cp_u32_req(p, cfg, "mamba_n_groups",
					     &s->n_groups, true)) ||
			    (rc = cp_u32_req(p, cfg, "mamba_d_conv",
					     &s->d_conv, true)) ||
			    (rc = cp_u32(p, cfg, "mamba_expand", &expand)) ||
			    (rc = cp_u32(p, cfg, "mamba_chunk_size",
					 &s->chunk_size)))
				return rc;
			/* vLLM granitemoehybrid: mamba_expand * hidden_size */
			s->d_inner = expand ? expand * m->hidden_size :
				     s->n_heads * s->head_dim;
		} else {				/* Nemotron-H */
			if ((rc = cp_u32_req(p, cfg, "mamba_num_heads",
					     &s->n_heads, true)) ||
			    (rc = cp_u32_req(p, cfg, "mamba_head_dim",
					     &s->head_dim, true)) ||
			    (rc = cp_u32_req(p, cfg, "ssm_state_size",
					     &s->d_state, true)) ||
			    (rc = cp_u32_req(p, cfg, "n_groups", &s->n_groups,
					     true)) ||
			    (rc = cp_u32_req(p, cfg, "conv_kernel", &s->d_conv,
					     true)) ||
			    (rc = cp_u32(p, cfg, "chunk_size",
					 &s->chunk_size)))
				return rc;
			s->d_inner = s->n_heads * s->head_dim;
		}
	}
	if (cat_model_count(m, CAT_MIX_MAMBA1) > 0) {
		if ((rc = cp_u32_req(p, cfg, "mamba_d_state", &s->d_state,
				     true)) ||
		    (rc = cp_u32_req(p, cfg, "mamba_d_conv", &s->d_conv,
				     true)) ||
		    (rc = cp_u32_req(p, cfg, "mamba_expand", &expand, true)) ||
		    (rc = cp_u32(p, cfg, "mamba_dt_rank", &s->dt_rank)))
			return rc;
		s->d_inner = expand * m->hidden_size;
		if (s->dt_rank == 0)	/* HF "auto": ceil(hidden / 16) */
			s->dt_rank = (m->hidden_size + 15) / 16;
	}
	if (cat_model_count(m, CAT_MIX_GDN) > 0) {
		if ((rc = cp_u32_req(p, cfg, "linear_num_key_heads",
				     &s->key_heads, true)) ||
		    (rc = cp_u32_req(p, cfg, "linear_num_value_heads",
				     &s->value_heads, true)) ||
		    (rc = cp_u32_req(p, cfg, "linear_key_head_dim",
				     &s->key_dim, true)) ||
		    (rc = cp_u32_req(p, cfg, "linear_value_head_dim",
				     &s->value_dim, true)) ||
		    (rc = cp_u32_req(p, cfg, "linear_conv_kernel_dim",
				     &s->conv_kernel, true)))
			return rc;
	}
	return rc;
}

/* The mapping that holds the language model's fields: the config itself,
 * or its text_config (VLM wrappers). */
static kv_err
cp_config_map(struct cp *p, const struct yd_node *top,
	      const struct yd_node **cfg)
{
	const struct yd_node *v;
	kv_err rc;

	*cfg = top;
	if (top->type != YD_MAP)
		return cp_fail(p, top, "a model config must be a mapping");
	if (p->strict && (rc = cp_known(p, top, cp_config_keys, "a config")))
		return rc;
	v = yd_get(top, "text_config");
	if (v != NULL && !yd_is_null(v)) {
		if (v->type != YD_MAP)
			return cp_fail(p, v, "'text_config' must be a mapping");
		*cfg = v;	/* VLM wrappers: the language model's fields */
		if (p->strict &&
		    (rc = cp_known(p, v, cp_config_keys, "text_config")))
			return rc;
	}
	return KV_OK;
}

/* model_type (the family the defaults below key on) and
 * architectures[0]. */
static kv_err
cp_identity(struct cp *p, const struct yd_node *top,
	    const struct yd_node *cfg, struct cat_model *m)
{
	const struct yd_node *v;
	const char *s;
	kv_err rc;

	if ((rc = cp_str(p, cfg, "model_type", &s, NULL)))
		return rc;
	if (s == NULL && cfg != top && (rc = cp_str(p, top, "model_type", &s,
						    NULL)))
		return rc;
	if (s == NULL)
		return cp_fail(p, cfg, "missing 'model_type'");
	m->model_type = cp_strdup(s);
	v = yd_get(top, "architectures");
	s = "";
	if (v != NULL && v->type == YD_SEQ && v->n > 0 &&
	    v->kid[0]->type == YD_SCALAR)
		s = v->kid[0]->str;
	else if (v != NULL && !yd_is_null(v) && v->type != YD_SEQ)
		return cp_fail(p, v, "'architectures' must be a list");
	m->architecture = cp_strdup(s);
	if (m->model_type == NULL || m->architecture == NULL)
		return cp_nomem(p);
	return KV_OK;
}

/* The weights' dtype (torch_dtype, newer transformers spell it dtype),
 * fp8 checkpoints, and the SSM cache dtype. */
static kv_err
cp_dtypes(struct cp *p, const struct yd_node *top, const struct yd_node *cfg,
	  struct cat_model *m)
{
	const struct yd_node *v;
	const char *s;
	kv_err rc;

	if ((rc = cp_str(p, cfg, "torch_dtype", &s, NULL)))
		return rc;
	if (s == NULL && (rc = cp_str(p, cfg, "dtype", &s, NULL)))
		return rc;
	if (s == NULL && cfg != top &&
	    (rc = cp_str(p, top, "torch_dtype", &s, NULL)))
		return rc;
	if (s == NULL)
		s = "bfloat16";
	if (cat_dtype_bytes(s) == 0 || strlen(s) >= sizeof(m->dtype))
		return cp_fail(p, yd_get(cfg, "torch_dtype"), "unknown dtype "
			       "'%s'", s);
	snprintf(m->dtype, sizeof(m->dtype), "%s", s);
	m->dtype_bytes = cat_dtype_bytes(s);
	m->weight_bytes = m->dtype_bytes;
	v = yd_get(top, "quantization_config");
	if (v != NULL && v->type == YD_MAP) {
		const char *qm = NULL;

		if ((rc = cp_str(p, v, "quant_method", &qm, NULL)))
			return rc;
		if (qm != NULL && (strcmp(qm, "fp8") == 0 ||
				   strcmp(qm, "fbgemm_fp8") == 0))
			m->weight_bytes = 1;
	}
	if ((rc = cp_str(p, cfg, "mamba_ssm_cache_dtype", &s, NULL)))
		return rc;
	if (s != NULL)
		snprintf(m->ssm_cache_dtype, sizeof(m->ssm_cache_dtype), "%s",
			 s);
	return KV_OK;
}

/* The sizes every model has; head_dim from hidden_size when absent. */
static kv_err
cp_dims(struct cp *p, const struct yd_node *cfg, struct cat_model *m)
{
	kv_err rc;

	if ((rc = cp_u32_req(p, cfg, "num_hidden_layers", &m->num_layers,
			     true)) ||
	    (rc = cp_u32_req(p, cfg, "hidden_size", &m->hidden_size, true)) ||
	    (rc = cp_u32_req(p, cfg, "num_attention_heads", &m->num_heads,
			     true)) ||
	    (rc = cp_u32_req(p, cfg, "vocab_size", &m->vocab_size, true)))
		return rc;
	if (m->num_layers > 100000)
		return cp_fail(p, yd_get(cfg, "num_hidden_layers"), "too many "
			       "layers: %u", m->num_layers);
	m->num_kv_heads = m->num_heads;
	m->intermediate_size = 0;
	if ((rc = cp_u32(p, cfg, "num_key_value_heads", &m->num_kv_heads)) ||
	    (rc = cp_u32(p, cfg, "intermediate_size", &m->intermediate_size)))
		return rc;
	if (m->num_kv_heads == 0)
		return cp_fail(p, yd_get(cfg, "num_key_value_heads"),
			       "'num_key_value_heads' must be positive");
	m->head_dim = 0;
	if ((rc = cp_u32(p, cfg, "head_dim", &m->head_dim)))
		return rc;
	if (m->head_dim == 0 &&
	    (rc = cp_u32(p, cfg, "attention_head_dim", &m->head_dim)))
		return rc;
	if (m->head_dim == 0) {
		if (m->hidden_size % m->num_heads != 0)
			return cp_fail(p, cfg, "no 'head_dim' and hidden_size "
				       "%u is not a multiple of %u heads",
				       m->hidden_size, m->num_heads);
		m->head_dim = m->hidden_size / m->num_heads;
	}
	m->v_head_dim = m->head_dim;
	return KV_OK;
}

/* MLA (DeepSeek): the latent rank and the split q/k head. */
static kv_err
cp_mla(struct cp *p, const struct yd_node *cfg, struct cat_model *m)
{
	kv_err rc;

	if ((rc = cp_u32(p, cfg, "kv_lora_rank", &m->kv_lora_rank)) ||
	    (rc = cp_u32(p, cfg, "q_lora_rank", &m->q_lora_rank)))
		return rc;
	if (m->kv_lora_rank > 0) {
		if ((rc = cp_u32_req(p, cfg, "qk_rope_head_dim",
				     &m->qk_rope_head_dim, true)) ||
		    (rc = cp_u32_req(p, cfg, "qk_nope_head_dim",
				     &m->qk_nope_head_dim, true)) ||
		    (rc = cp_u32_req(p, cfg, "v_head_dim", &m->v_head_dim,
				     true)))
			return rc;
		m->head_dim = m->qk_nope_head_dim + m->qk_rope_head_dim;
	}
	return KV_OK;
}

/* MoE: the experts under each family's spelling, shared experts. */
static kv_err
cp_moe(struct cp *p, const struct yd_node *cfg, struct cat_model *m)
{
	uint32_t n_shared = 0;
	kv_err rc;

	if ((rc = cp_u32(p, cfg, "num_experts", &m->num_experts)))
		return rc;
	if (m->num_experts == 0 &&
	    (rc = cp_u32(p, cfg, "num_local_experts", &m->num_experts)))
		return rc;
	if (m->num_experts == 0 &&
	    (rc = cp_u32(p, cfg, "n_routed_experts", &m->num_experts)))
		return rc;
	if ((rc = cp_u32(p, cfg, "num_experts_per_tok", &m->experts_per_tok)) ||
	    (rc = cp_u32(p, cfg, "moe_intermediate_size",
			 &m->moe_intermediate_size)) ||
	    (rc = cp_u32(p, cfg, "shared_expert_intermediate_size",
			 &m->shared_intermediate_size)) ||
	    (rc = cp_u32(p, cfg, "n_shared_experts", &n_shared)))
		return rc;
	if (m->shared_intermediate_size == 0 &&
	    (rc = cp_u32(p, cfg, "shared_intermediate_size",
			 &m->shared_intermediate_size)))
		return rc;
	if (m->num_experts > 1 && m->experts_per_tok == 0)
		return cp_fail(p, cfg, "%u experts but no "
			       "'num_experts_per_tok'", m->num_experts);
	if (m->num_experts > 0 && m->moe_intermediate_size == 0)
		m->moe_intermediate_size = m->intermediate_size;
	if (n_shared > 0 && m->shared_intermediate_size == 0)
		m->shared_intermediate_size = n_shared *
					      m->moe_intermediate_size;
	m->router_bias = cp_type_is(m, "deepseek_v3");
	return KV_OK;
}

/* Flags by family; tie_word_embeddings and attention_bias may be given. */
static kv_err
cp_flags(struct cp *p, const struct yd_node *cfg, struct cat_model *m)
{
	kv_err rc;

	m->tie_word_embeddings = cp_type_is(m, "gemma2") ||
				 cp_type_is(m, "gemma3") ||
				 cp_type_is(m, "gemma3_text");
	m->attention_bias = cp_type_is(m, "qwen2") ||
			    cp_type_is(m, "qwen2_moe");
	if ((rc = cp_bool(p, cfg, "tie_word_embeddings",
			  &m->tie_word_embeddings)) ||
	    (rc = cp_bool(p, cfg, "attention_bias", &m->attention_bias)))
		return rc;
	m->qk_norm = cp_type_is(m, "qwen3") || cp_type_is(m, "qwen3_moe") ||
		     cp_type_is(m, "qwen3_next") ||
		     cp_type_is(m, "gemma3") || cp_type_is(m, "gemma3_text");
	m->attn_output_gate = cp_type_is(m, "qwen3_next");
	m->mlp_gated = !cp_type_is(m, "nemotron_h");
	m->norms_per_layer = 2;
	if (cp_type_is(m, "gemma2") || cp_type_is(m, "gemma3") ||
	    cp_type_is(m, "gemma3_text"))
		m->norms_per_layer = 4;
	else if (cp_type_is(m, "nemotron_h"))
		m->norms_per_layer = 1;
	return KV_OK;
}

/* The config keys that place the mixers when there is no per-layer list. */
struct cp_layer_keys {
	uint32_t sliding, chunk, interval, pattern;
	uint32_t attn_period, attn_offset, max_window_layers;
};

static kv_err
cp_layer_keys(struct cp *p, const struct yd_node *cfg,
	      struct cp_layer_keys *k)
{
	bool use_sliding = true;
	kv_err rc;

	memset(k, 0, sizeof(*k));
	if ((rc = cp_u32(p, cfg, "sliding_window", &k->sliding)) ||
	    (rc = cp_u32(p, cfg, "attention_chunk_size", &k->chunk)) ||
	    (rc = cp_bool(p, cfg, "use_sliding_window", &use_sliding)) ||
	    (rc = cp_u32(p, cfg, "max_window_layers",
			 &k->max_window_layers)) ||
	    (rc = cp_u32(p, cfg, "full_attention_interval", &k->interval)) ||
	    (rc = cp_u32(p, cfg, "attn_layer_period", &k->attn_period)) ||
	    (rc = cp_u32(p, cfg, "attn_layer_offset", &k->attn_offset)) ||
	    (rc = cp_u32(p, cfg, "sliding_window_pattern", &k->pattern)))
		return rc;
	if (k->pattern == 0 &&
	    (rc = cp_u32(p, cfg, "_sliding_window_pattern", &k->pattern)))
		return rc;
	if (!use_sliding)
		k->sliding = 0;
	return KV_OK;
}

/* Mixers from the family's periods and window rules. */
static kv_err
cp_layers_by_family(struct cp *p, const struct yd_node *cfg,
		    struct cat_model *m, const struct cp_layer_keys *k)
{
	if (cp_type_is(m, "jamba")) {
		if (k->attn_period == 0)
			return cp_fail(p, cfg, "jamba needs "
				       "'attn_layer_period'");
		for (uint32_t i = 0; i < m->num_layers; i++)
			m->layer[i].mixer =
				i % k->attn_period == k->attn_offset ?
				CAT_MIX_FULL : CAT_MIX_MAMBA1;
	} else if (cp_type_is(m, "qwen3_next")) {
		if (k->interval == 0)
			return cp_fail(p, cfg, "qwen3_next needs "
				       "'full_attention_interval' or "
				       "'layer_types'");
		for (uint32_t i = 0; i < m->num_layers; i++)
			m->layer[i].mixer = (i + 1) % k->interval == 0 ?
					    CAT_MIX_FULL : CAT_MIX_GDN;
	} else if (k->sliding > 0 && cp_type_is(m, "gemma2")) {
		/* HF Gemma2: even layers slide, odd layers are global */
		for (uint32_t i = 0; i < m->num_layers; i += 2) {
			m->layer[i].mixer = CAT_MIX_SLIDING;
			m->layer[i].window = k->sliding;
		}
	} else if (k->sliding > 0 && k->pattern > 0) {
		/* Gemma-3: every pattern-th layer is global */
		for (uint32_t i = 0; i < m->num_layers; i++)
			if ((i + 1) % k->pattern != 0) {
				m->layer[i].mixer = CAT_MIX_SLIDING;
				m->layer[i].window = k->sliding;
			}
	} else if (k->sliding > 0 && m->kv_lora_rank == 0) {
		/* Mistral: every layer; Qwen2 with use_sliding_window: the
		 * layers from max_window_layers on */
		bool qwen2 = cp_type_is(m, "qwen2") ||
			     cp_type_is(m, "qwen2_moe");

		for (uint32_t i = 0; i < m->num_layers; i++)
			if (!qwen2 || i >= k->max_window_layers) {
				m->layer[i].mixer = CAT_MIX_SLIDING;
				m->layer[i].window = k->sliding;
			}
	}
	return KV_OK;
}

/* The per-layer table: every layer full attention (MLA when the model has
 * a latent) with a dense FFN, unless a family field says otherwise. */
static kv_err
cp_layers(struct cp *p, const struct yd_node *cfg, struct cat_model *m)
{
	const struct yd_node *v;
	struct cp_layer_keys k;
	kv_err rc;

	m->layer = calloc(m->num_layers, sizeof(*m->layer));
	if (m->layer == NULL)
		return cp_nomem(p);
	for (uint32_t i = 0; i < m->num_layers; i++) {
		m->layer[i].mixer = m->kv_lora_rank ? CAT_MIX_MLA :
				    CAT_MIX_FULL;
		m->layer[i].ffn = CAT_FFN_DENSE;
	}
	if ((rc = cp_layer_keys(p, cfg, &k)))
		return rc;
	if ((v = yd_get(cfg, "hybrid_override_pattern")) != NULL &&
	    !yd_is_null(v))
		return cp_layers_from_pattern(p, v, m);
	if ((v = yd_get(cfg, "layer_types")) != NULL && !yd_is_null(v))
		return cp_layers_from_types(p, v, m, k.sliding, k.chunk);
	return cp_layers_by_family(p, cfg, m, &k);
}

/* Every FFN has its sizes. */
static kv_err
cp_check_ffn(struct cp *p, const struct yd_node *cfg,
	     const struct cat_model *m)
{
	for (uint32_t i = 0; i < m->num_layers; i++) {
		const struct cat_layer *l = &m->layer[i];

		if (l->ffn == CAT_FFN_DENSE && m->intermediate_size == 0)
			return cp_fail(p, cfg, "layer %u has an MLP but there "
				       "is no 'intermediate_size'", i);
		if (l->ffn == CAT_FFN_MOE && m->num_experts == 0)
			return cp_fail(p, cfg, "layer %u is MoE but there are "
				       "no experts", i);
	}
	return KV_OK;
}

/* Rotary embedding: NoPE families and position_embedding_type nope. */
static kv_err
cp_rotary(struct cp *p, const struct yd_node *cfg, struct cat_model *m)
{
	const char *s;
	double partial = 1.0;
	kv_err rc;

	if ((rc = cp_str(p, cfg, "position_embedding_type", &s, NULL)) ||
	    (rc = cp_double(p, cfg, "partial_rotary_factor", &partial)))
		return rc;
	if (partial > 1.0)
		return cp_fail(p, yd_get(cfg, "partial_rotary_factor"),
			       "'partial_rotary_factor' must be at most 1");
	if ((s != NULL && strcmp(s, "nope") == 0) || cp_type_is(m, "jamba") ||
	    cp_type_is(m, "nemotron_h"))
		m->rotary_dim = 0;
	else if (m->kv_lora_rank > 0)
		m->rotary_dim = m->qk_rope_head_dim;
	else
		m->rotary_dim = (uint32_t)((double)m->head_dim * partial);
	return KV_OK;
}

/*
 * Interpret one config mapping.  `m` has id/source set by the caller;
 * everything else is filled here, in this order (a field's per-field
 * source and the first error depend on it).  Field semantics:
 * docs/catalog.md.
 */
static kv_err
cp_model_config(struct cp *p, const struct yd_node *top, struct cat_model *m)
{
	const struct yd_node *cfg;
	kv_err rc;

	if ((rc = cp_config_map(p, top, &cfg)) ||
	    (rc = cp_identity(p, top, cfg, m)) ||
	    (rc = cp_dtypes(p, top, cfg, m)) ||
	    (rc = cp_dims(p, cfg, m)) ||
	    (rc = cp_mla(p, cfg, m)) ||
	    (rc = cp_moe(p, cfg, m)) ||
	    (rc = cp_flags(p, cfg, m)) ||
	    (rc = cp_max_len(p, cfg, m)) ||
	    (rc = cp_layers(p, cfg, m)) ||
	    (rc = cp_moe_layers(p, cfg, m)) ||
	    (rc = cp_ssm(p, cfg, m)) ||
	    (rc = cp_check_ffn(p, cfg, m)))
		return rc;
	return cp_rotary(p, cfg, m);
}

/* ---- parameter count --------------------------------------------------- */

void
cat_model_count_params(const struct cat_model *m, uint64_t *total,
		       uint64_t *active)
{
	const uint64_t h = m->hidden_size;
	uint64_t tot = (uint64_t)m->vocab_size * h, act;

	if (!m->tie_word_embeddings)
		tot += (uint64_t)m->vocab_size * h;
	tot += h;			/* final norm */
	act = tot;
	for (uint32_t i = 0; i < m->num_layers; i++) {
		const struct cat_layer *l = &m->layer[i];
		uint64_t mix, ffn = 0, ffn_act = 0;
		uint64_t up = m->mlp_gated ? 3 : 2;

		mix = cat_layer_mixer(l)->params(m);
		switch ((enum cat_ffn)l->ffn) {
		case CAT_FFN_NONE:
			break;
		case CAT_FFN_DENSE:
			ffn = ffn_act = up * h * m->intermediate_size;
			break;
		case CAT_FFN_MOE: {
			uint64_t one = up * h * m->moe_intermediate_size;
			uint64_t shared = up * h * m->shared_intermediate_size;
			uint64_t router = h * m->num_experts +
					  (m->router_bias ? m->num_experts : 0);

			if (m->shared_intermediate_size > 0 &&
			    (strcmp(m->model_type, "qwen2_moe") == 0 ||
			     strcmp(m->model_type, "qwen3_next") == 0))
				shared += h;	/* shared_expert_gate */
			ffn = m->num_experts * one + shared + router;
			ffn_act = m->experts_per_tok * one + shared + router;
			break;
		}
		}
		tot += mix + ffn + m->norms_per_layer * h;
		act += mix + ffn_act + m->norms_per_layer * h;
	}
	*total = tot;
	*active = act;
}

/* ---- models: entries and the public reader ----------------------------- */

uint32_t
cat_model_count(const struct cat_model *m, enum cat_mixer kind)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < m->num_layers; i++)
		n += m->layer[i].mixer == kind;
	return n;
}

bool
cat_model_is_hybrid(const struct cat_model *m)
{
	uint32_t state = 0, none = 0;

	for (uint32_t i = 0; i < m->num_layers; i++) {
		enum cat_mixer_class c = cat_layer_mixer(&m->layer[i])->cls;

		state += c == CAT_MIXC_RECURRENT;
		none += c == CAT_MIXC_NONE;
	}

	return state > 0 && state + none < m->num_layers;
}

const char *
cat_model_source(const struct cat_model *m, const char *field)
{
	for (size_t i = m->nfsrc; i-- > 0;)
		if (strcmp(m->fsrc_field[i], field) == 0)
			return m->fsrc_text[i];
	return m->source;
}

const char *
cat_mixer_name(enum cat_mixer k)
{
	const struct cat_mixer_ops *ops = cat_mixer_ops(k);

	return ops != NULL ? ops->name : "?";
}

void
cat_model_free(struct cat_model *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->nalias; i++)
		free(m->alias[i]);
	for (size_t i = 0; i < m->nfsrc; i++) {
		free(m->fsrc_field[i]);
		free(m->fsrc_text[i]);
	}
	free(m->fsrc_field);
	free(m->fsrc_text);
	free(m->alias);
	free(m->id);
	free(m->source);
	free(m->origin);
	free(m->model_type);
	free(m->architecture);
	free(m->note);
	free(m->layer);
	free(m->params_source);
	free(m);
}

static char *
cp_origin(const char *file, const struct yd_node *n)
{
	char buf[1024];

	if (n != NULL)
		snprintf(buf, sizeof(buf), "%s:%lu", file, n->line);
	else
		snprintf(buf, sizeof(buf), "%s", file);
	return cp_strdup(buf);
}

static kv_err
cp_finish_params(struct cp *p, const struct yd_node *entry,
		 struct cat_model *m)
{
	uint64_t total, active;
	const struct yd_node *v = NULL;
	const char *src = NULL;
	kv_err rc;

	cat_model_count_params(m, &total, &active);
	m->params = total;
	m->active_params = active;
	if (entry != NULL && (rc = cp_field(p, entry, "params", &v, &src)))
		return rc;
	if (v != NULL) {
		if ((rc = cp_u64_node(p, v, "params", UINT64_MAX,
				      &m->params)))
			return rc;
		if (m->params == 0)
			return cp_fail(p, v, "'params' must be positive");
		m->params_source = cp_strdup(src ? src : m->source);
	} else {
		m->params_source = cp_strdup("computed from the architecture "
					     "(docs/catalog.md)");
	}
	return m->params_source ? KV_OK : cp_nomem(p);
}

/*
 * The file to read for path: path itself, or path/config.json when path
 * is a directory (a Hugging Face model folder), as vLLM takes either.
 * *file is caller-owned.
 */
static kv_err
cp_hf_file(const char *path, char **file, struct cat_err *e)
{
	struct stat sb;
	size_t n = strlen(path), len = n + sizeof("/config.json");

	*file = NULL;
	if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
		len = n + 1;
	if ((*file = malloc(len)) == NULL) {
		snprintf(e->msg, sizeof(e->msg), "%s: out of memory", path);
		return KV_ENOMEM;
	}
	if (len == n + 1) {
		memcpy(*file, path, len);
		return KV_OK;
	}
	snprintf(*file, len, "%s%sconfig.json", path,
		 n > 0 && path[n - 1] == '/' ? "" : "/");
	if (stat(*file, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		snprintf(e->msg, sizeof(e->msg), "%s: a directory without a "
			 "config.json (a Hugging Face model directory holds "
			 "one)", path);
		free(*file);
		*file = NULL;
		return KV_EINVAL;
	}
	return KV_OK;
}

/* The model of config.json d, read from file; its id is path. */
static kv_err
cp_hf_read(struct cat_model **out, const char *path, const char *file,
	   struct yd_doc *d, struct cat_err *e)
{
	struct cp p = { .file = file, .e = e, .strict = false };
	struct cat_model *m;
	kv_err rc = KV_OK;

	if (d->root == NULL) {
		yd_release(d);
		return cp_fail(&p, NULL, "empty file");
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		yd_release(d);
		return cp_nomem(&p);
	}
	m->id = cp_strdup(path);
	m->source = cp_strdup(file);
	m->origin = cp_strdup(file);
	if (m->id == NULL || m->source == NULL || m->origin == NULL)
		rc = cp_nomem(&p);
	if (rc == KV_OK)
		rc = cp_model_config(&p, d->root, m);
	if (rc == KV_OK)
		rc = cp_finish_params(&p, NULL, m);
	yd_release(d);
	if (rc != KV_OK) {
		cat_model_free(m);
		return rc;
	}
	*out = m;
	return KV_OK;
}

kv_err
cat_model_from_hf(struct cat_model **out, const char *path, struct cat_err *e)
{
	struct yd_doc d;
	char *file;
	kv_err rc;

	*out = NULL;
	e->msg[0] = '\0';
	if ((rc = cp_hf_file(path, &file, e)) != KV_OK)
		return rc;
	rc = yd_load_path(&d, file, e->msg, sizeof(e->msg));
	if (rc == KV_OK)
		rc = cp_hf_read(out, path, file, &d, e);
	free(file);
	return rc;
}

static const char *const cp_model_keys[] = {
	"id", "aliases", "source", "sources", "note", "params", "config",
	NULL
};

static kv_err
cp_model_entry(struct cp *p, const struct yd_node *ent, struct cat_model *m)
{
	const struct yd_node *cfg, *srcs;
	const char *s;
	kv_err rc;

	if (ent->type != YD_MAP)
		return cp_fail(p, ent, "a model entry must be a mapping");
	if ((rc = cp_known(p, ent, cp_model_keys, "a model entry")))
		return rc;
	m->origin = cp_origin(p->file, ent);
	if (m->origin == NULL)
		return cp_nomem(p);
	if ((rc = cp_str(p, ent, "id", &s, NULL)))
		return rc;
	if (s == NULL || *s == '\0')
		return cp_fail(p, ent, "a model entry needs an 'id'");
	m->id = cp_strdup(s);
	if ((rc = cp_str(p, ent, "source", &s, NULL)))
		return rc;
	if (s == NULL || *s == '\0')
		return cp_fail(p, ent, "model '%s' needs a 'source' for its "
			       "numbers", m->id);
	m->source = cp_strdup(s);
	if ((rc = cp_str(p, ent, "note", &s, NULL)))
		return rc;
	if (s != NULL)
		m->note = cp_strdup(s);
	if (m->id == NULL || m->source == NULL)
		return cp_nomem(p);
	if ((rc = cp_aliases(p, ent, &m->alias, &m->nalias)))
		return rc;
	srcs = yd_get(ent, "sources");
	if (srcs != NULL && !yd_is_null(srcs)) {
		if (srcs->type != YD_MAP)
			return cp_fail(p, srcs, "'sources' must map field "
				       "names to sources");
		for (size_t i = 0; i < srcs->n; i++) {
			const struct yd_node *t = yd_val(srcs, i);

			if (t->type != YD_SCALAR || t->str[0] == '\0')
				return cp_fail(p, t, "a source must be text");
			if ((rc = cp_add_fsrc(p, yd_key(srcs, i)->str,
					      t->str)))
				return rc;
		}
	}
	cfg = yd_get(ent, "config");
	if (cfg == NULL || yd_is_null(cfg))
		return cp_fail(p, ent, "model '%s' needs a 'config'", m->id);
	if ((rc = cp_model_config(p, cfg, m)))
		return rc;
	return cp_finish_params(p, ent, m);
}

/* ---- GPUs -------------------------------------------------------------- */

static const char *const cp_gpu_keys[] = {
	"id", "aliases", "name", "vendor", "device_name",
	"compute_capability", "memory", "usable_memory", "memory_bandwidth",
	"flops", "interconnect", "host_link", "unified_memory", "price",
	"source", "note", NULL
};

/* A sourced GPU number; *src gets the inline or the entry source. */
static kv_err
cp_gpu_num(struct cp *p, const struct yd_node *map, const char *key,
	   const struct cp_unit *units, bool required, double *out,
	   enum cat_gpu_field f)
{
	const struct yd_node *v;
	const char *src;
	double x;
	kv_err rc = cp_field(p, map, key, &v, &src);

	if (rc != KV_OK)
		return rc;
	if (v == NULL) {
		if (required)
			return cp_fail(p, map, "missing '%s'", key);
		return KV_OK;
	}
	if (v->type != YD_SCALAR || !cp_scaled(v->str, units, &x))
		return cp_fail(p, v, "'%s': cannot read '%s' (a number with a "
			       "unit, e.g. %s)", key,
			       v->type == YD_SCALAR ? v->str : "?",
			       units == cp_byte_units ? "80GB or 79.18GiB" :
			       units == cp_rate_units ? "3.35TB/s" :
			       units == cp_price_units ? "2.99USD/h" :
			       "989.4TFLOPS");
	if (src == NULL)
		src = p->entry_source;
	if (src == NULL)
		return cp_fail(p, v, "'%s' has no source (write {value: ..., "
			       "source: ...} or give the entry a 'source')",
			       key);
	p->g->src[f] = cp_strdup(src);
	if (p->g->src[f] == NULL)
		return cp_nomem(p);
	*out = x;
	return KV_OK;
}

/* id, name, vendor, note, device name and aliases. */
static kv_err
cp_gpu_names(struct cp *p, const struct yd_node *ent, struct cat_gpu *g)
{
	const struct yd_node *vendor;
	const char *s, *src;
	kv_err rc;

	if ((rc = cp_str(p, ent, "id", &s, NULL)))
		return rc;
	if (s == NULL || *s == '\0')
		return cp_fail(p, ent, "a GPU entry needs an 'id'");
	g->id = cp_strdup(s);
	if ((rc = cp_str(p, ent, "source", &p->entry_source, NULL)))
		return rc;
	if ((rc = cp_str(p, ent, "name", &s, NULL)))
		return rc;
	g->name = cp_strdup(s ? s : g->id);
	if ((rc = cp_str(p, ent, "vendor", &s, NULL)))
		return rc;
	vendor = yd_get(ent, "vendor");
	if (s == NULL || (strcmp(s, "nvidia") != 0 && strcmp(s, "amd") != 0 &&
			  strcmp(s, "apple") != 0))
		return cp_fail(p, vendor ? vendor : ent, "'vendor' must be "
			       "nvidia, amd or apple");
	g->vendor = cp_strdup(s);
	if ((rc = cp_str(p, ent, "note", &s, NULL)))
		return rc;
	if (s != NULL && (g->note = cp_strdup(s)) == NULL)
		return cp_nomem(p);
	if ((rc = cp_str(p, ent, "device_name", &s, &src)))
		return rc;
	g->device_name = cp_strdup(s ? s : "");
	g->src[CAT_G_DEVICE_NAME] = cp_strdup(src ? src : p->entry_source ?
					      p->entry_source : "-");
	if (g->id == NULL || g->name == NULL || g->vendor == NULL ||
	    g->device_name == NULL || g->src[CAT_G_DEVICE_NAME] == NULL)
		return cp_nomem(p);
	if ((rc = cp_aliases(p, ent, &g->alias, &g->nalias)))
		return rc;
	return KV_OK;
}

static kv_err
cp_gpu_cc(struct cp *p, const struct yd_node *ent, struct cat_gpu *g)
{
	const char *s, *src;
	kv_err rc;

	if ((rc = cp_str(p, ent, "compute_capability", &s, &src)))
		return rc;
	if (s != NULL) {
		unsigned maj, min;
		char tail;

		if (sscanf(s, "%u.%u%c", &maj, &min, &tail) != 2 || maj > 99 ||
		    min > 99)
			return cp_fail(p, yd_get(ent, "compute_capability"),
				       "'compute_capability' must look like "
				       "9.0");
		g->cc_major = maj;
		g->cc_minor = min;
		g->src[CAT_G_CC] = cp_strdup(src ? src : p->entry_source ?
					     p->entry_source : "-");
		if (g->src[CAT_G_CC] == NULL)
			return cp_nomem(p);
	}
	return KV_OK;
}

/*
 * memory, and usable_memory (the runtime's total; memory when absent).  Both
 * below 1 PiB: far above any device, and exact in a double after the sizing
 * arithmetic's products.
 */
#define CP_MAX_GPU_BYTES 1125899906842624.0
static kv_err
cp_gpu_memory(struct cp *p, const struct yd_node *ent, struct cat_gpu *g)
{
	double x;
	kv_err rc;

	if ((rc = cp_gpu_num(p, ent, "memory", cp_byte_units, true, &x,
			     CAT_G_MEMORY)))
		return rc;
	if (x >= CP_MAX_GPU_BYTES)
		return cp_fail(p, yd_get(ent, "memory"), "'memory' must be "
			       "below 1 PiB");
	g->memory_bytes = (uint64_t)(x + 0.5);
	x = 0;
	if ((rc = cp_gpu_num(p, ent, "usable_memory", cp_byte_units, false,
			     &x, CAT_G_USABLE)))
		return rc;
	if (x >= CP_MAX_GPU_BYTES)
		return cp_fail(p, yd_get(ent, "usable_memory"),
			       "'usable_memory' must be below 1 PiB");
	if (x <= 0 && g->src[CAT_G_USABLE] != NULL)	/* given, as 0 */
		return cp_fail(p, yd_get(ent, "usable_memory"),
			       "'usable_memory' must be positive (leave it "
			       "out to mean 'memory')");
	g->usable_bytes = x > 0 ? (uint64_t)(x + 0.5) : g->memory_bytes;
	if (x <= 0) {
		g->src[CAT_G_USABLE] = cp_strdup("= memory (no runtime-visible "
						 "total recorded)");
		if (g->src[CAT_G_USABLE] == NULL)
			return cp_nomem(p);
	}
	if (g->memory_bytes == 0 || g->usable_bytes > g->memory_bytes)
		return cp_fail(p, yd_get(ent, "usable_memory") ?
			       yd_get(ent, "usable_memory") : ent,
			       "'usable_memory' must be at most 'memory'");
	return KV_OK;
}

/* dense FLOP/s per dtype */
static kv_err
cp_gpu_flops(struct cp *p, const struct yd_node *ent, struct cat_gpu *g)
{
	static const struct {
		const char *key;
		enum cat_dtype dt;
		enum cat_gpu_field f;
	} fl[] = {
		{ "fp32", CAT_FP32, CAT_G_FLOPS_FP32 },
		{ "bf16", CAT_BF16, CAT_G_FLOPS_BF16 },
		{ "fp16", CAT_FP16, CAT_G_FLOPS_FP16 },
		{ "fp8", CAT_FP8, CAT_G_FLOPS_FP8 },
	};
	static const char *const fkeys[] = { "fp32", "bf16", "fp16", "fp8",
					     NULL };
	const struct yd_node *flops;
	kv_err rc;

	flops = yd_get(ent, "flops");
	if (flops != NULL && !yd_is_null(flops)) {
		if (flops->type != YD_MAP)
			return cp_fail(p, flops, "'flops' must map dtypes "
				       "(fp32, bf16, fp16, fp8) to dense "
				       "FLOP/s");
		if ((rc = cp_known(p, flops, fkeys, "flops")))
			return rc;
		for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++)
			if ((rc = cp_gpu_num(p, flops, fl[i].key,
					     cp_flops_units, false,
					     &g->flops[fl[i].dt], fl[i].f)))
				return rc;
	}
	return KV_OK;
}

static kv_err
cp_gpu_entry(struct cp *p, const struct yd_node *ent, struct cat_gpu *g)
{
	kv_err rc;

	if (ent->type != YD_MAP)
		return cp_fail(p, ent, "a GPU entry must be a mapping");
	if ((rc = cp_known(p, ent, cp_gpu_keys, "a GPU entry")))
		return rc;
	g->origin = cp_origin(p->file, ent);
	if (g->origin == NULL)
		return cp_nomem(p);
	if ((rc = cp_gpu_names(p, ent, g)) || (rc = cp_gpu_cc(p, ent, g)) ||
	    (rc = cp_gpu_memory(p, ent, g)))
		return rc;
	if ((rc = cp_gpu_num(p, ent, "memory_bandwidth", cp_rate_units, true,
			     &g->hbm_bw, CAT_G_HBM_BW)) ||
	    (rc = cp_gpu_num(p, ent, "interconnect", cp_rate_units, false,
			     &g->interconnect_bw, CAT_G_INTERCONNECT)) ||
	    (rc = cp_gpu_num(p, ent, "host_link", cp_rate_units, false,
			     &g->host_bw, CAT_G_HOST)) ||
	    (rc = cp_gpu_num(p, ent, "price", cp_price_units, false,
			     &g->usd_per_hour, CAT_G_PRICE)) ||
	    (rc = cp_bool(p, ent, "unified_memory", &g->unified_memory)))
		return rc;
	return cp_gpu_flops(p, ent, g);
}

static void
cat_gpu_free(struct cat_gpu *g)
{
	if (g == NULL)
		return;
	for (size_t i = 0; i < g->nalias; i++)
		free(g->alias[i]);
	for (int i = 0; i < CAT_G_NFIELDS; i++)
		free(g->src[i]);
	free(g->alias);
	free(g->id);
	free(g->name);
	free(g->vendor);
	free(g->device_name);
	free(g->origin);
	free(g->note);
	free(g);
}

/* ---- a catalog --------------------------------------------------------- */

static bool
cat__names_match(const char *name, const char *id, char *const *alias,
		 size_t nalias)
{
	if (strcasecmp(name, id) == 0)
		return true;
	for (size_t i = 0; i < nalias; i++)
		if (strcasecmp(name, alias[i]) == 0)
			return true;
	return false;
}

const struct cat_model *
cat_find_model(const cat *c, const char *name)
{
	for (size_t i = 0; c != NULL && i < c->nmodel; i++)
		if (cat__names_match(name, c->model[i]->id, c->model[i]->alias,
				     c->model[i]->nalias))
			return c->model[i];
	return NULL;
}

const struct cat_gpu *
cat_find_gpu(const cat *c, const char *name)
{
	for (size_t i = 0; c != NULL && i < c->ngpu; i++)
		if (cat__names_match(name, c->gpu[i]->id, c->gpu[i]->alias,
				     c->gpu[i]->nalias))
			return c->gpu[i];
	return NULL;
}

/* A name already used by an earlier entry (id or alias)? */
static bool
cat__taken(const cat *c, bool models, const char *name)
{
	return models ? cat_find_model(c, name) != NULL :
	       cat_find_gpu(c, name) != NULL;
}

/* The first of id and the aliases an earlier entry has; NULL if none. */
static const char *
cat__clash(const cat *c, bool models, const char *id, char *const *alias,
	   size_t nalias)
{
	if (cat__taken(c, models, id))
		return id;
	for (size_t k = 0; k < nalias; k++)
		if (cat__taken(c, models, alias[k]))
			return alias[k];
	return NULL;
}

static kv_err
cat__add_model(cat *c, struct cp *p, const struct yd_node *ent)
{
	struct cat_model *m = calloc(1, sizeof(*m)), **v;
	const char *clash;
	kv_err rc;

	if (m == NULL)
		return cp_nomem(p);
	p->m = m;
	rc = cp_model_entry(p, ent, m);
	p->m = NULL;
	if (rc == KV_OK &&
	    (clash = cat__clash(c, true, m->id, m->alias, m->nalias)) != NULL)
		rc = cp_fail(p, ent, "name '%s' is already used by another "
			     "model", clash);
	if (rc != KV_OK) {
		cat_model_free(m);
		return rc;
	}
	v = realloc(c->model, (c->nmodel + 1) * sizeof(*v));
	if (v == NULL) {
		cat_model_free(m);
		return cp_nomem(p);
	}
	c->model = v;
	c->model[c->nmodel++] = m;
	return KV_OK;
}

static kv_err
cat__add_gpu(cat *c, struct cp *p, const struct yd_node *ent)
{
	struct cat_gpu *g = calloc(1, sizeof(*g)), **v;
	const char *clash;
	kv_err rc;

	if (g == NULL)
		return cp_nomem(p);
	p->g = g;
	p->entry_source = NULL;
	rc = cp_gpu_entry(p, ent, g);
	p->g = NULL;
	if (rc == KV_OK &&
	    (clash = cat__clash(c, false, g->id, g->alias, g->nalias)) != NULL)
		rc = cp_fail(p, ent, "name '%s' is already used by another "
			     "GPU", clash);
	if (rc != KV_OK) {
		cat_gpu_free(g);
		return rc;
	}
	v = realloc(c->gpu, (c->ngpu + 1) * sizeof(*v));
	if (v == NULL) {
		cat_gpu_free(g);
		return cp_nomem(p);
	}
	c->gpu = v;
	c->gpu[c->ngpu++] = g;
	return KV_OK;
}

static kv_err
cat__load_list(cat *c, const char *path, bool models, struct cat_err *e)
{
	struct yd_doc d;
	struct cp p = { .file = path, .e = e, .strict = true };
	const char *top = models ? "models" : "gpus";
	const struct yd_node *list;
	kv_err rc;

	rc = yd_load_path(&d, path, e->msg, sizeof(e->msg));
	if (rc != KV_OK)
		return rc;
	if (d.root == NULL || d.root->type != YD_MAP) {
		rc = cp_fail(&p, d.root, "expected a mapping with '%s:'", top);
		goto out;
	}
	for (size_t i = 0; i < d.root->n; i++)
		if (strcmp(yd_key(d.root, i)->str, top) != 0) {
			rc = cp_fail(&p, yd_key(d.root, i), "unknown key '%s' "
				     "(expected '%s')", yd_key(d.root, i)->str,
				     top);
			goto out;
		}
	list = yd_get(d.root, top);
	if (list == NULL || list->type != YD_SEQ) {
		rc = cp_fail(&p, list ? list : d.root, "'%s' must be a list",
			     top);
		goto out;
	}
	for (size_t i = 0; i < list->n && rc == KV_OK; i++)
		rc = models ? cat__add_model(c, &p, list->kid[i]) :
			      cat__add_gpu(c, &p, list->kid[i]);
out:
	yd_release(&d);
	return rc;
}

kv_err
cat_load_files(cat **out, const char *models_yaml, const char *gpus_yaml,
	       struct cat_err *e)
{
	cat *c = calloc(1, sizeof(*c));
	kv_err rc = KV_OK;

	*out = NULL;
	e->msg[0] = '\0';
	if (c == NULL) {
		snprintf(e->msg, sizeof(e->msg), "out of memory");
		return KV_ENOMEM;
	}
	if (models_yaml != NULL)
		rc = cat__load_list(c, models_yaml, true, e);
	if (rc == KV_OK && gpus_yaml != NULL)
		rc = cat__load_list(c, gpus_yaml, false, e);
	if (rc != KV_OK) {
		cat_free(c);
		return rc;
	}
	*out = c;
	return KV_OK;
}

const char *
cat_datadir(void)
{
	const char *env = getenv("KVSIM_DATADIR");
	FILE *f;

	if (env != NULL && *env != '\0')
		return env;
	f = fopen(KVSIM_DATADIR "/models.yaml", "r");
	if (f != NULL) {
		fclose(f);
		return KVSIM_DATADIR;
	}
	return KVSIM_SRCDATADIR;
}

kv_err
cat_load(cat **out, const char *dir, struct cat_err *e)
{
	char mp[4096], gp[4096];

	if (dir == NULL)
		dir = cat_datadir();
	if ((size_t)snprintf(mp, sizeof(mp), "%s/models.yaml", dir) >=
	    sizeof(mp) ||
	    (size_t)snprintf(gp, sizeof(gp), "%s/gpus.yaml", dir) >=
	    sizeof(gp)) {
		*out = NULL;
		snprintf(e->msg, sizeof(e->msg), "%s: path too long", dir);
		return KV_EINVAL;
	}
	return cat_load_files(out, mp, gp, e);
}

void
cat_free(cat *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->nmodel; i++)
		cat_model_free(c->model[i]);
	for (size_t i = 0; i < c->ngpu; i++)
		cat_gpu_free(c->gpu[i]);
	free(c->model);
	free(c->gpu);
	free(c);
}

size_t
cat_nmodels(const cat *c)
{
	return c->nmodel;
}

const struct cat_model *
cat_model_at(const cat *c, size_t i)
{
	return i < c->nmodel ? c->model[i] : NULL;
}

size_t
cat_ngpus(const cat *c)
{
	return c->ngpu;
}

const struct cat_gpu *
cat_gpu_at(const cat *c, size_t i)
{
	return i < c->ngpu ? c->gpu[i] : NULL;
}
