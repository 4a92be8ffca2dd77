/*
 * runcfg.c -- one run's configuration from YAML and --set (runcfg.h).
 *
 * Every scalar key has one setter in run_keys[], reached through
 * set_key() whether the value comes from the file or from --set, so both
 * reject the same values with the same words; only the location differs
 * ("FILE:LINE:COL" or "--set KEY=VALUE").  The file is read by util/ydoc
 * as libyaml's document loader reads one (YD_LOADER: the messages are
 * worded by it), repeated keys and a second document refused.  The
 * workload: section is handed to wl_config_from_yaml; a --set
 * workload.a.b=v override is turned into the YAML "{a: {b: v}}" and
 * handed over the same way.  The user never sees that text, so its errors
 * name the override alone, without a LINE:COL.
 */
#include "config.h"

#include "sim/model/catalog.h"
#include "sim/pdcfg.h"
#include "sim/runcfg.h"
#include "sim/runcfg_knobs.h"

#include "sim/runcfg_spec.h"
#include "sim/vllmver.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/cost.h"
#include "util/ydoc.h"

static void offload_init(struct sim_offload_config *o);

void
sim_config_init(struct sim_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->source, sizeof(c->source), "(embedded default)");
	snprintf(c->model, sizeof(c->model), "meta-llama/Llama-3.1-8B");
	snprintf(c->gpu, sizeof(c->gpu), "h100-sxm");
	snprintf(c->policy, sizeof(c->policy), "vllm-v1");
	c->replicas = 1;
	c->router = SIM_ROUTE_RR;
	c->seed = 0;
	sz_engine_init(&c->eng);
	c->chunked_prefill = -1;
	c->preemption_mode = -1;
	c->scheduling_policy = -1;
	c->swap_space_gib = 4.0;
	c->num_lookahead_slots = -1;
	c->async_scheduling = -1;
	c->step_ns = 0;
	c->timeseries_interval_s = 1.0;
	c->heartbeat_interval_s = 600.0;
	c->kv_layout = c->copy = c->host_memory = -1;
	wl_config_init(&c->wl);
	c->wl_trace_default = true;
	snprintf(c->pd.link, sizeof(c->pd.link), "%s", SIM_PD_LINK_DEFAULT);
	c->pd.timeout_s = SIM_PD_TIMEOUT_DEFAULT;
	c->pd.pool[0].router = c->pd.pool[1].router = -1;
	offload_init(&c->offload);
	sim_knobs_init(&c->knobs);

	sim_lora_config_init(&c->lora);

	sim_spec_config_init(&c->spec);
}

void
sim_config_release(struct sim_config *c)
{
	if (c == NULL)
		return;
	wl_config_release(&c->wl);
}

static const char *const router_names[] = { "round-robin",
	"least-outstanding", "prefix-affinity" };

const char *
sim_router_name(enum sim_router r)
{
	return (unsigned)r < 3 ? router_names[r] : "?";
}

/* "WHERE: what" into err; KV_EINVAL (runcfg_spec.h: its files' too). */
#define fail sim_config_fail

kv_err
sim_config_fail(char *err, size_t errlen, const char *where, const char *fmt,
		...)
{
	va_list ap;
	size_t n;

	snprintf(err, errlen, "%s: ", where);
	n = strlen(err);
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - n, fmt, ap);
	va_end(ap);
	return KV_EINVAL;
}

static bool
is_null_text(const char *v)
{
	return v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
	       strcmp(v, "auto") == 0;
}

static bool
parse_u64(const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long x;

	if (v[0] < '0' || v[0] > '9')
		return false;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno != 0 || *end != '\0' || x < lo || x > hi)
		return false;
	*out = x;
	return true;
}

static bool
parse_dbl(const char *v, double lo, double hi, double *out)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (errno != 0 || end == v || *end != '\0' || !isfinite(x) ||
	    x < lo || x > hi)
		return false;
	*out = x;
	return true;
}

static int
parse_bool(const char *v)
{
	if (strcmp(v, "true") == 0 || strcmp(v, "True") == 0 ||
	    strcmp(v, "yes") == 0 || strcmp(v, "on") == 0)
		return 1;
	if (strcmp(v, "false") == 0 || strcmp(v, "False") == 0 ||
	    strcmp(v, "no") == 0 || strcmp(v, "off") == 0)
		return 0;
	return -1;
}

/* As sizing (sim/sizing.c) takes them: a KV cache in 16 or 8 bits; the
 * weights and activations in 16 or 32 (vLLM's names, `half` and `float`
 * too: any catalog dtype of 2 or 4 bytes). */
static const char *const kv_dtype_names[] = { "bfloat16", "float16",
	"fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla", NULL };

#define U32MAX 4294967295ull

/*
 * dst = path, taken relative to the directory of the file `file` (NULL:
 * the current directory), then made absolute so that the resolved
 * config.yaml names the same file wherever it is read.  false if too long.
 */
static bool
resolve_path(char *dst, size_t len, const char *path, const char *file)
{
	char cwd[4096];
	const char *slash = file != NULL ? strrchr(file, '/') : NULL;
	int dirlen = slash != NULL ? (int)(slash - file) : 0;
	int n;

	if (path[0] == '/') {
		n = snprintf(dst, len, "%s", path);
		return n >= 0 && (size_t)n < len;
	}
	if (slash != NULL && file[0] == '/') {
		n = snprintf(dst, len, "%.*s/%s", dirlen, file, path);
		return n >= 0 && (size_t)n < len;
	}
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		return false;
	if (slash != NULL)
		n = snprintf(dst, len, "%s/%.*s/%s", cwd, dirlen, file, path);
	else
		n = snprintf(dst, len, "%s/%s", cwd, path);
	return n >= 0 && (size_t)n < len;
}

/*
 * `auto` (or null) for a key whose default is a plain value: that value
 * back (docs/run.md).  False for the other keys, which take it themselves.
 */
static bool
restore_default(struct sim_config *c, const char *key)
{
	struct sim_config d;

	sim_config_init(&d);
	if (strcmp(key, "model") == 0)
		memcpy(c->model, d.model, sizeof(c->model));
	else if (strcmp(key, "gpu") == 0)
		memcpy(c->gpu, d.gpu, sizeof(c->gpu));
	else if (strcmp(key, "policy") == 0)
		memcpy(c->policy, d.policy, sizeof(c->policy));
	else if (strcmp(key, "replicas") == 0)
		c->replicas = d.replicas;
	else if (strcmp(key, "router") == 0)
		c->router = d.router;
	else if (strcmp(key, "seed") == 0)
		c->seed = c->wl.seed = d.seed;
	else if (strcmp(key, "engine.gpu_memory_utilization") == 0)
		c->eng.gpu_memory_utilization = d.eng.gpu_memory_utilization;
	else if (strcmp(key, "engine.swap_space") == 0)
		c->swap_space_gib = d.swap_space_gib;
	else if (strcmp(key, "engine.tensor_parallel_size") == 0)
		c->eng.tensor_parallel_size = d.eng.tensor_parallel_size;
	else if (strcmp(key, "engine.defer_same_step_state_hits") == 0)
		c->defer_same_step_state_hits = d.defer_same_step_state_hits;
	else if (strcmp(key, "cost.step_ns") == 0)
		c->step_ns = d.step_ns;
	else if (strcmp(key, "cost.gpu_usd_per_hour") == 0)
		c->gpu_usd_per_hour = d.gpu_usd_per_hour;
	else if (strcmp(key, "output.timeseries_interval_s") == 0)
		c->timeseries_interval_s = d.timeseries_interval_s;
	else if (strcmp(key, "output.heartbeat_interval_s") == 0)
		c->heartbeat_interval_s = d.heartbeat_interval_s;
	else {
		sim_config_release(&d);
		return false;
	}
	sim_config_release(&d);
	return true;
}

/* One value being set: the key, its text and where it came from. */
struct setv {
	const char *key;
	const char *v;
	const char *where;	/* "FILE:LINE:COL", or "--set KEY=VALUE" */
	const char *file;	/* the file it is written in; NULL: --set */
	char *err;
	size_t errlen;
};

/* The value refused: "WHERE: KEY: what, got 'VALUE'". */
static kv_err
bad(const struct setv *s, const char *what)
{
	return fail(s->err, s->errlen, s->where, "%s: %s, got '%s'", s->key,
		    what, s->v);
}

/* `auto` (or null): 0; else an integer in [lo, hi].  False: neither. */
static bool
opt_u64(const struct setv *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	if (is_null_text(s->v)) {
		*out = 0;
		return true;
	}
	return parse_u64(s->v, lo, hi, out);
}

/* `auto` (or null): -1 (the policy's default); else true or false. */
static kv_err
set_tri_bool(const struct setv *s, int *dst)
{
	int b;

	if (is_null_text(s->v))
		*dst = -1;
	else if ((b = parse_bool(s->v)) < 0)
		return bad(s, "expected true or false");
	else
		*dst = b;
	return KV_OK;
}

/* `auto` (or null): -1 (the policy's default); else name0 0, name1 1. */
static kv_err
set_tri_name(const struct setv *s, const char *name0, const char *name1,
	     int *dst)
{
	char what[64];

	if (is_null_text(s->v))
		*dst = -1;
	else if (strcmp(s->v, name0) == 0)
		*dst = 0;
	else if (strcmp(s->v, name1) == 0)
		*dst = 1;
	else {
		snprintf(what, sizeof(what), "expected %s or %s", name0, name1);
		return bad(s, what);
	}
	return KV_OK;
}

static kv_err
set_model(struct sim_config *c, const struct setv *s)
{
	size_t n = strlen(s->v);

	if (s->v[0] == '\0')
		return bad(s, "expected a catalog model or a config.json");
	/* a config.json path, as a trace's: relative to the file it is
	 * written in (so a run's own config.yaml reads it from anywhere); a
	 * catalog name as it is */
	if (n > 5 && strcmp(s->v + n - 5, ".json") == 0) {
		if (!resolve_path(c->model, sizeof(c->model), s->v, s->file))
			return bad(s, "path too long");
	} else {
		snprintf(c->model, sizeof(c->model), "%s", s->v);
	}
	snprintf(c->model_where, sizeof(c->model_where), "%s", s->where);
	return KV_OK;
}

static kv_err
set_gpu(struct sim_config *c, const struct setv *s)
{
	if (s->v[0] == '\0')
		return bad(s, "expected a catalog GPU");
	snprintf(c->gpu, sizeof(c->gpu), "%s", s->v);
	snprintf(c->gpu_where, sizeof(c->gpu_where), "%s", s->where);
	return KV_OK;
}

static kv_err
set_policy(struct sim_config *c, const struct setv *s)
{
	if (s->v[0] == '\0')
		return bad(s, "expected a policy name");
	snprintf(c->policy, sizeof(c->policy), "%s", s->v);
	snprintf(c->policy_where, sizeof(c->policy_where), "%s", s->where);
	return KV_OK;
}

static kv_err
set_replicas(struct sim_config *c, const struct setv *s)
{
	uint64_t u;

	if (!parse_u64(s->v, 1, 4096, &u))
		return bad(s, "expected an integer in [1, 4096]");
	c->replicas = (uint32_t)u;
	return KV_OK;
}

static kv_err
set_router(struct sim_config *c, const struct setv *s)
{
	for (int r = 0; r < 3; r++) {
		if (strcmp(s->v, router_names[r]) == 0) {
			c->router = (enum sim_router)r;
			return KV_OK;
		}
	}
	return bad(s, "expected round-robin, least-outstanding or "
		   "prefix-affinity");
}

static kv_err
set_seed(struct sim_config *c, const struct setv *s)
{
	uint64_t u;

	if (!parse_u64(s->v, 0, UINT64_MAX, &u))
		return bad(s, "expected a non-negative integer");
	c->seed = u;
	c->wl.seed = u;
	return KV_OK;
}

static kv_err
set_block_size(struct sim_config *c, const struct setv *s)
{
	uint64_t u;

	if (!opt_u64(s, 1, 65536, &u))
		return bad(s, "expected an integer in [1, 65536]");
	c->eng.block_size = (uint32_t)u;
	return KV_OK;
}

static kv_err
set_gpu_memory_utilization(struct sim_config *c, const struct setv *s)
{
	double d;

	if (!parse_dbl(s->v, 1e-9, 1.0, &d))
		return bad(s, "expected a number in (0, 1]");
	c->eng.gpu_memory_utilization = d;
	return KV_OK;
}

static kv_err
set_max_num_seqs(struct sim_config *c, const struct setv *s)
{
	uint64_t u;

	if (!opt_u64(s, 1, U32MAX, &u))
		return bad(s, "expected a positive integer");
	c->eng.max_num_seqs = (uint32_t)u;
	return KV_OK;
}

static kv_err
set_max_num_batched_tokens(struct sim_config *c, const struct setv *s)
{
	uint64_t u;

	if (!opt_u64(s, 1, U32MAX, &u))
		return bad(s, "expected a positive integer");
	c->eng.max_num_batched_tokens = u;
	return KV_OK;
}

static kv_err
set_max_model_len(struct sim_config *c, const struct setv *s)
{
	uint64_t u;

	if (!opt_u64(s, 1, U32MAX, &u))
		return bad(s, "expected a positive integer");
	c->eng.max_model_len = u;
	return KV_OK;
}

static kv_err
set_enable_prefix_caching(struct sim_config *c, const struct setv *s)
{
	return set_tri_bool(s, &c->eng.enable_prefix_caching);
}

static kv_err
set_enable_chunked_prefill(struct sim_config *c, const struct setv *s)
{
	return set_tri_bool(s, &c->chunked_prefill);
}

static kv_err
set_preemption_mode(struct sim_config *c, const struct setv *s)
{
	return set_tri_name(s, "recompute", "swap", &c->preemption_mode);
}

static kv_err
set_scheduling_policy(struct sim_config *c, const struct setv *s)
{
	return set_tri_name(s, "fcfs", "priority", &c->scheduling_policy);
}

static kv_err
set_swap_space(struct sim_config *c, const struct setv *s)
{
	double d;

	if (!parse_dbl(s->v, 0.0, 1e6, &d))
		return bad(s, "expected GiB, a number >= 0");
	c->swap_space_gib = d;
	return KV_OK;
}

static kv_err
set_defer_same_step_state_hits(struct sim_config *c, const struct setv *s)
{
	int b = parse_bool(s->v);

	if (b < 0)
		return bad(s, "expected true or false");
	c->defer_same_step_state_hits = b != 0;
	return KV_OK;
}

static kv_err
set_num_lookahead_slots(struct sim_config *c, const struct setv *s)
{
	uint64_t u;

	if (is_null_text(s->v))
		c->num_lookahead_slots = -1;
	else if (!parse_u64(s->v, 0, 1024, &u))
		return bad(s, "expected an integer in [0, 1024]");
	else
		c->num_lookahead_slots = (int64_t)u;
	return KV_OK;
}

/* engine.vllm_version: a release sim/vllmver.h knows; auto: "". */
static kv_err
set_vllm_version(struct sim_config *c, const struct setv *s)
{
	struct sim_vllm_ver v;
	char why[128];

	if (is_null_text(s->v)) {
		c->vllm_version[0] = '\0';
		return KV_OK;
	}
	if (sim_vllm_parse(s->v, &v, why, sizeof(why)) != KV_OK)
		return bad(s, why);
	if (strlen(s->v) >= sizeof(c->vllm_version))
		return bad(s, "too long");
	snprintf(c->vllm_version, sizeof(c->vllm_version), "%s", s->v);
	return KV_OK;
}

/* engine.async_scheduling: auto, true or false; where it was set, for the
 * checks that need the policy (sim/run.c). */
static kv_err
set_async_scheduling(struct sim_config *c, const struct setv *s)
{
	kv_err e = set_tri_bool(s, &c->async_scheduling);

	if (e == KV_OK)
		snprintf(c->async_where, sizeof(c->async_where), "%s",
			 s->where);
	return e;
}

/* engine.kv_cache_dtype: kv_dtype_names; engine.dtype: a catalog dtype of
 * 2 or 4 bytes. */
static kv_err
set_dtype(struct sim_config *c, const struct setv *s)
{
	bool kv = strcmp(s->key, "engine.kv_cache_dtype") == 0, ok;
	char *dst = kv ? c->eng.kv_cache_dtype : c->eng.dtype;
	size_t i;

	if (is_null_text(s->v)) {
		snprintf(dst, sizeof(c->eng.dtype), "auto");
		return KV_OK;
	}
	for (i = 0; kv_dtype_names[i] != NULL; i++)
		if (strcmp(s->v, kv_dtype_names[i]) == 0)
			break;
	ok = kv ? kv_dtype_names[i] != NULL
		: cat_dtype_bytes(s->v) == 2 || cat_dtype_bytes(s->v) == 4;
	if (!ok)
		return bad(s, kv ? "expected auto, bfloat16, float16, fp8, "
			   "fp8_e4m3, fp8_e5m2, fp8_inc or fp8_ds_mla"
			   : "expected auto, bfloat16, float16 or float32");
	snprintf(dst, sizeof(c->eng.dtype), "%s", s->v);
	return KV_OK;
}

static kv_err
set_kv_cache_memory_bytes(struct sim_config *c, const struct setv *s)
{
	uint64_t u;

	if (is_null_text(s->v))
		c->eng.kv_cache_memory_bytes = SZ_UNSET;
	else if (!cat_parse_bytes(s->v, &u) || u == 0 ||
		 u > (uint64_t)INT64_MAX)
		return bad(s, "expected a size (bytes, or 40GiB, 80GB)");
	else
		c->eng.kv_cache_memory_bytes = (int64_t)u;
	return KV_OK;
}

static kv_err
set_num_gpu_blocks_override(struct sim_config *c, const struct setv *s)
{
	uint64_t u;

	if (is_null_text(s->v))
		c->eng.num_gpu_blocks_override = SZ_UNSET;
	else if (!parse_u64(s->v, 1, SIM_POOL_MAX_BLOCKS, &u))
		return bad(s, "expected a block count from 1 to 2^26 (the "
			   "simulator's pools)");
	else
		c->eng.num_gpu_blocks_override = (int64_t)u;
	return KV_OK;
}

static kv_err
set_tensor_parallel_size(struct sim_config *c, const struct setv *s)
{
	uint64_t u;

	if (!parse_u64(s->v, 1, 1024, &u))
		return bad(s, "expected an integer in [1, 1024]");
	c->eng.tensor_parallel_size = (uint32_t)u;
	return KV_OK;
}

static kv_err
set_step_ns(struct sim_config *c, const struct setv *s)
{
	uint64_t u;

	if (!parse_u64(s->v, 0, (uint64_t)INT64_MAX / 4, &u))
		return bad(s, "expected an integer >= 0 (0: the roofline "
			   "model)");
	c->step_ns = (int64_t)u;
	return KV_OK;
}

static kv_err
set_gpu_price(struct sim_config *c, const struct setv *s)
{
	double d;

	if (!parse_dbl(s->v, 0.0, 1e9, &d))
		return bad(s, "expected US dollars per GPU-hour, a number >= 0 "
			   "(0: the catalog's price)");
	c->gpu_usd_per_hour = d;
	return KV_OK;
}

static kv_err
set_calibration(struct sim_config *c, const struct setv *s)
{
	c->calibration_none = strcmp(s->v, "none") == 0;
	if (is_null_text(s->v) || c->calibration_none) {
		c->calibration[0] = '\0';
	} else if (!resolve_path(c->calibration, sizeof(c->calibration),
				 s->v, s->file)) {
		c->calibration[0] = '\0';
		return bad(s, "path too long");
	}
	snprintf(c->calibration_where, sizeof(c->calibration_where), "%s",
		 s->where);
	return KV_OK;
}

static kv_err
set_kv_layout(struct sim_config *c, const struct setv *s)
{
	enum cost_layout l;

	if (is_null_text(s->v))
		c->kv_layout = -1;
	else if (cost_layout_parse(s->v, &l))
		c->kv_layout = (int)l;
	else
		return bad(s, "expected fa-split, fi-fused, ds-interleaved or "
			   "cross-layer");
	return KV_OK;
}

static kv_err
set_copy(struct sim_config *c, const struct setv *s)
{
	enum cost_copy cp;

	if (is_null_text(s->v))
		c->copy = -1;
	else if (cost_copy_parse(s->v, &cp))
		c->copy = (int)cp;
	else
		return bad(s, "expected per-chunk, batch, gather or staged");
	return KV_OK;
}

/* cost.cuda_graphs: off, vllm (vLLM V1's default capture sizes) or the
 * largest capture size (docs/cost-model.md §2.7). */
static kv_err
set_cuda_graphs(struct sim_config *c, const struct setv *s)
{
	uint64_t u;

	if (is_null_text(s->v) || strcmp(s->v, "off") == 0)
		c->cuda_graphs = 0;
	else if (strcmp(s->v, "vllm") == 0)
		c->cuda_graphs = -1;
	else if (parse_u64(s->v, 1, 1u << 20, &u))
		c->cuda_graphs = (int64_t)u;
	else
		return bad(s, "expected off, vllm or the largest capture size "
			   "(1 to 1048576 tokens)");
	return KV_OK;
}

static kv_err
set_host_memory(struct sim_config *c, const struct setv *s)
{
	enum cost_hostmem h;

	if (is_null_text(s->v))
		c->host_memory = -1;
	else if (cost_hostmem_parse(s->v, &h))
		c->host_memory = (int)h;
	else
		return bad(s, "expected pinned or pageable");
	return KV_OK;
}

static kv_err
set_timeseries_interval(struct sim_config *c, const struct setv *s)
{
	double d;

	if (!parse_dbl(s->v, 1e-6, 1e9, &d))
		return bad(s, "expected a number of seconds from 1e-6 to 1e9");
	c->timeseries_interval_s = d;
	return KV_OK;
}

static kv_err
set_heartbeat_interval(struct sim_config *c, const struct setv *s)
{
	double d;

	if (!parse_dbl(s->v, 1e-3, 1e12, &d))
		return bad(s, "expected a number of seconds from 1e-3 to 1e12");
	c->heartbeat_interval_s = d;
	return KV_OK;
}

/* slo.ttft_s, slo.tpot_s, slo.e2e_s: seconds, or none (0). */
static kv_err
set_slo(struct sim_config *c, const struct setv *s)
{
	double *dst = strcmp(s->key, "slo.ttft_s") == 0 ? &c->slo_ttft_s
		: strcmp(s->key, "slo.tpot_s") == 0 ? &c->slo_tpot_s
		: &c->slo_e2e_s;
	double d;

	if (is_null_text(s->v) || strcmp(s->v, "none") == 0)
		*dst = 0;
	else if (!parse_dbl(s->v, 1e-9, 1e12, &d))
		return bad(s, "expected a number of seconds > 0 (or none)");
	else
		*dst = d;
	return KV_OK;
}


/* ---- KV offload keys (runcfg.h struct sim_offload_config) ---- */

static const char *const tier_medium_names[SIM_TIER_NMEDIA] = {
	"cpu-dram", "local-nvme", "remote-store"
};

const char *
sim_tier_medium_name(enum sim_tier_medium m)
{
	return (unsigned)m < SIM_TIER_NMEDIA ? tier_medium_names[m] : "?";
}

static void
offload_init(struct sim_offload_config *o)
{
	memset(o, 0, sizeof(*o));
	o->backend = SIM_OFF_NATIVE;
	o->chunk_size = 256;
	o->local_cpu = true;
	o->max_local_cpu_gib = -1;
	for (int m = 0; m < SIM_TIER_NMEDIA; m++)
		o->tier[m].read_gbps = o->tier[m].write_gbps =
			o->tier[m].latency_us = -1;
}

/* A size in GiB (>= 0); `auto` or null: unset (-1) when unset_ok. */
static kv_err
set_gib(const struct setv *s, bool unset_ok, double *dst)
{
	double d;

	if (is_null_text(s->v)) {
		*dst = unset_ok ? -1 : 0;
		return KV_OK;
	}
	if (!parse_dbl(s->v, 0.0, 1e9, &d))
		return bad(s, "expected GiB, a number >= 0");
	*dst = d;
	return KV_OK;
}

static kv_err
set_kv_offloading_size(struct sim_config *c, const struct setv *s)
{
	snprintf(c->offload.size_where, sizeof(c->offload.size_where), "%s",
		 s->where);
	return set_gib(s, false, &c->offload.size_gib);
}

static kv_err
set_kv_offloading_backend(struct sim_config *c, const struct setv *s)
{
	int b = 0;
	kv_err e = set_tri_name(s, "native", "lmcache", &b);

	if (e == KV_OK)
		c->offload.backend = b == 1 ? SIM_OFF_LMCACHE : SIM_OFF_NATIVE;
	return e;
}

static kv_err
set_offload_block_size(struct sim_config *c, const struct setv *s)
{
	uint64_t v;

	if (!opt_u64(s, 1, 1u << 20, &v))
		return bad(s, "expected tokens, an integer from 1 to 1048576 "
			   "(or auto: the GPU block size)");
	c->offload.block_size = (uint32_t)v;
	snprintf(c->offload.block_where, sizeof(c->offload.block_where), "%s",
		 s->where);
	return KV_OK;
}

/* kv_offload.lmcache.*: LMCache's configuration names. */
static kv_err
set_lmcache(struct sim_config *c, const struct setv *s)
{
	struct sim_offload_config *o = &c->offload;
	const char *k = s->key + strlen("kv_offload.lmcache.");
	uint64_t v;
	int b;

	snprintf(o->lmcache_where, sizeof(o->lmcache_where), "%s", s->where);
	if (strcmp(k, "chunk_size") == 0) {
		if (is_null_text(s->v))
			v = 256;
		else if (!parse_u64(s->v, 1, 1u << 20, &v))
			return bad(s, "expected tokens, an integer from 1 to "
				   "1048576");
		o->chunk_size = (uint32_t)v;
		return KV_OK;
	}
	if (strcmp(k, "local_cpu") == 0) {
		if ((b = parse_bool(s->v)) < 0)
			return bad(s, "expected true or false");
		o->local_cpu = b == 1;
		return KV_OK;
	}
	if (strcmp(k, "max_local_cpu_size") == 0)
		return set_gib(s, true, &o->max_local_cpu_gib);
	if (strcmp(k, "max_local_disk_size") == 0)
		return set_gib(s, false, &o->max_local_disk_gib);
	if (strcmp(k, "remote_size") == 0)
		return set_gib(s, false, &o->remote_gib);
	if (strcmp(k, "local_disk") == 0) {
		b = parse_bool(s->v);
		if (is_null_text(s->v) || b == 0)
			o->local_disk[0] = '\0';
		else if (snprintf(o->local_disk, sizeof(o->local_disk), "%s",
				  b == 1 ? "true" : s->v) >=
			 (int)sizeof(o->local_disk))
			return bad(s, "path too long");
		return KV_OK;
	}
	/* remote_url: LMCache's "lm://host:port" and the like; "" none */
	if (is_null_text(s->v))
		o->remote_url[0] = '\0';
	else if (snprintf(o->remote_url, sizeof(o->remote_url), "%s", s->v) >=
		 (int)sizeof(o->remote_url))
		return bad(s, "URL too long");
	return KV_OK;
}

/* kv_offload.tiers.MEDIUM.{read_gbps,write_gbps,latency_us}. */
static kv_err
set_tier_override(struct sim_config *c, const struct setv *s)
{
	const char *k = s->key + strlen("kv_offload.tiers.");
	struct sim_tier_override *t = NULL;
	const char *field;
	double *dst, d;

	for (int m = 0; m < SIM_TIER_NMEDIA; m++) {
		size_t n = strlen(tier_medium_names[m]);

		if (strncmp(k, tier_medium_names[m], n) == 0 && k[n] == '.')
			t = &c->offload.tier[m];
	}
	field = strrchr(k, '.') + 1;
	dst = strcmp(field, "read_gbps") == 0 ? &t->read_gbps
	    : strcmp(field, "write_gbps") == 0 ? &t->write_gbps
	    : &t->latency_us;
	if (is_null_text(s->v)) {
		*dst = -1;
		return KV_OK;
	}
	if (dst == &t->latency_us ? !parse_dbl(s->v, 0.0, 1e9, &d)
				  : !parse_dbl(s->v, 1e-6, 1e6, &d))
		return bad(s, dst == &t->latency_us
			   ? "expected microseconds, a number >= 0"
			   : "expected GB/s, a number > 0");
	*dst = d;
	return KV_OK;
}

static kv_err
set_knob(struct sim_config *c, const struct setv *s)
{
	return sim_knobs_set(c, s->key, s->v, s->where, s->err, s->errlen);
}

/* engine.parallel_sampling: auto, fanout or fork (sim_nsamp_mode); the
 * policy's refusal of fork is sim/run.c's. */
static kv_err
set_parallel_sampling(struct sim_config *c, const struct setv *s)
{
	static const char *const names[] = { "auto", "fanout", "fork" };

	for (int i = 0; i < 3; i++)
		if (strcmp(s->v, names[i]) == 0 ||
		    (i == 0 && is_null_text(s->v))) {
			c->nsamp.mode = i;
			snprintf(c->nsamp.where, sizeof(c->nsamp.where), "%s",
				 s->where);
			return KV_OK;
		}
	return bad(s, "expected auto, fanout or fork");
}

/* LoRA's keys (sim/lora.c). */
static kv_err
set_lora(struct sim_config *c, const struct setv *s)
{
	char what[200];

	if (sim_lora_set_key(&c->lora, s->key, s->v, what, sizeof(what)) !=
	    KV_OK)
		return bad(s, what);
	return KV_OK;
}

/* engine.speculative_config.* (runcfg_spec.c). */
static kv_err
set_spec(struct sim_config *c, const struct setv *s)
{
	return sim_spec_config_set(c, s->key, s->v, s->where, s->file,
				   s->err, s->errlen);
}

bool
sim_config_resolve_path(char *dst, size_t len, const char *path,
			const char *file)
{
	return resolve_path(dst, len, path, file);
}

/* The scalar keys (docs/run.md), each with its setter. */
static const struct run_key {
	const char *name;
	kv_err (*set)(struct sim_config *c, const struct setv *s);
} run_keys[] = {
	{ "model", set_model },
	{ "gpu", set_gpu },
	{ "policy", set_policy },
	{ "replicas", set_replicas },
	{ "router", set_router },
	{ "seed", set_seed },
	{ "engine.block_size", set_block_size },
	{ "engine.gpu_memory_utilization", set_gpu_memory_utilization },
	{ "engine.max_num_seqs", set_max_num_seqs },
	{ "engine.max_num_batched_tokens", set_max_num_batched_tokens },
	{ "engine.max_model_len", set_max_model_len },
	{ "engine.enable_prefix_caching", set_enable_prefix_caching },
	{ "engine.enable_chunked_prefill", set_enable_chunked_prefill },
	{ "engine.preemption_mode", set_preemption_mode },
	{ "engine.scheduling_policy", set_scheduling_policy },
	{ "engine.swap_space", set_swap_space },
	{ "engine.num_lookahead_slots", set_num_lookahead_slots },
	{ "engine.kv_cache_dtype", set_dtype },
	{ "engine.kv_cache_memory_bytes", set_kv_cache_memory_bytes },
	{ "engine.num_gpu_blocks_override", set_num_gpu_blocks_override },
	{ "engine.tensor_parallel_size", set_tensor_parallel_size },
	{ "engine.dtype", set_dtype },
	{ "engine.defer_same_step_state_hits",
	  set_defer_same_step_state_hits },
	{ "engine.vllm_version", set_vllm_version },
	{ "engine.async_scheduling", set_async_scheduling },
	{ "cost.step_ns", set_step_ns },
	{ "cost.calibration", set_calibration },
	{ "cost.kv_layout", set_kv_layout },
	{ "cost.copy", set_copy },
	{ "cost.host_memory", set_host_memory },
	{ "cost.cuda_graphs", set_cuda_graphs },
	{ "cost.gpu_usd_per_hour", set_gpu_price },
	{ "output.timeseries_interval_s", set_timeseries_interval },
	{ "output.heartbeat_interval_s", set_heartbeat_interval },
	{ "slo.ttft_s", set_slo },
	{ "slo.tpot_s", set_slo },
	{ "slo.e2e_s", set_slo },
	{ "engine.kv_offloading_size", set_kv_offloading_size },
	{ "engine.kv_offloading_backend", set_kv_offloading_backend },
	{ "kv_offload.block_size", set_offload_block_size },
	{ "kv_offload.lmcache.chunk_size", set_lmcache },
	{ "kv_offload.lmcache.local_cpu", set_lmcache },
	{ "kv_offload.lmcache.max_local_cpu_size", set_lmcache },
	{ "kv_offload.lmcache.local_disk", set_lmcache },
	{ "kv_offload.lmcache.max_local_disk_size", set_lmcache },
	{ "kv_offload.lmcache.remote_url", set_lmcache },
	{ "kv_offload.lmcache.remote_size", set_lmcache },
	{ "kv_offload.tiers.cpu-dram.read_gbps", set_tier_override },
	{ "kv_offload.tiers.cpu-dram.write_gbps", set_tier_override },
	{ "kv_offload.tiers.cpu-dram.latency_us", set_tier_override },
	{ "kv_offload.tiers.local-nvme.read_gbps", set_tier_override },
	{ "kv_offload.tiers.local-nvme.write_gbps", set_tier_override },
	{ "kv_offload.tiers.local-nvme.latency_us", set_tier_override },
	{ "kv_offload.tiers.remote-store.read_gbps", set_tier_override },
	{ "kv_offload.tiers.remote-store.write_gbps", set_tier_override },
	{ "kv_offload.tiers.remote-store.latency_us", set_tier_override },
	/* issue 20 knobs (runcfg_knobs.c) */
	{ "engine.long_prefill_token_threshold", set_knob },
	{ "engine.max_num_partial_prefills", set_knob },
	{ "engine.max_long_partial_prefills", set_knob },
	{ "engine.pipeline_parallel_size", set_knob },
	{ "engine.quantization", set_knob },
	{ "engine.cpu_offload_gb", set_knob },

	/* parallel sampling (n > 1) */
	{ "engine.parallel_sampling", set_parallel_sampling },

	{ "engine.enable_lora", set_lora },
	{ "engine.max_loras", set_lora },
	{ "engine.max_lora_rank", set_lora },
	{ "engine.max_cpu_loras", set_lora },
	{ "lora.load_gbps", set_lora },
	{ "lora.disk_gbps", set_lora },

	{ "engine.speculative_config.method", set_spec },
	{ "engine.speculative_config.num_speculative_tokens", set_spec },
	{ "engine.speculative_config.model", set_spec },
	{ "engine.speculative_config.draft_tensor_parallel_size", set_spec },
	{ "engine.speculative_config.prompt_lookup_max", set_spec },
	{ "engine.speculative_config.prompt_lookup_min", set_spec },
	{ "engine.speculative_config.acceptance", set_spec },
	{ "engine.speculative_config.ngram_match_rate", set_spec },
	{ NULL, NULL }
};

static const struct run_key *
run_key_find(const char *key)
{
	for (const struct run_key *k = run_keys; k->name != NULL; k++)
		if (strcmp(k->name, key) == 0)
			return k;
	return NULL;
}

/* file: the configuration file the value comes from (NULL: --set). */
static kv_err
set_key(struct sim_config *c, const char *key, const char *v,
	const char *where, const char *file, char *err, size_t errlen)
{
	const struct setv s = { key, v, where, file, err, errlen };
	const struct run_key *k;

	if (is_null_text(v) && restore_default(c, key))
		return KV_OK;
	if ((k = run_key_find(key)) == NULL)
		return fail(err, errlen, where, "unknown key '%s'", key);
	return k->set(c, &s);
}

bool
sim_config_parse_u64(const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	return parse_u64(v, lo, hi, out);
}

bool
sim_config_parse_dbl(const char *v, double lo, double hi, double *out)
{
	return parse_dbl(v, lo, hi, out);
}

kv_err
sim_config_set_key(struct sim_config *c, const char *key, const char *v,
		   const char *where, char *err, size_t errlen)
{
	return set_key(c, key, v, where, NULL, err, errlen);
}

/* A section of scalar keys: engine, cost, output, slo. */
static bool
section_known(const char *s)
{
	size_t n = strlen(s);

	for (const struct run_key *k = run_keys; k->name != NULL; k++)
		if (strncmp(k->name, s, n) == 0 && k->name[n] == '.')
			return true;
	return false;
}

static void
mark(char *buf, size_t len, const char *file, const struct yd_node *n)
{
	snprintf(buf, len, "%s:%lu:%lu", file, n->line, n->col);
}

/* cmdline: the text is a --set override's (top comment): no LINE:COL. */
static kv_err
wl_fail(char *err, size_t errlen, struct wl_error *we, bool cmdline)
{
	if (cmdline) {
		we->line = 0;
		we->col = 0;
	}
	wl_error_format(we, err, errlen);
	return KV_EINVAL;
}

/*
 * The value vn of the scalar key `name` (kn: its key in the file): set, or
 * refused.  An unknown key is named at the key, and beats a bad value,
 * which is named at the value.
 */
static kv_err
load_value(struct sim_config *c, const char *name, const struct yd_node *kn,
	   const struct yd_node *vn, const char *file, char *err,
	   size_t errlen)
{
	char where[SIM_WHERE_LEN];

	if (run_key_find(name) == NULL) {
		mark(where, sizeof(where), file, kn);
		return fail(err, errlen, where, "unknown key '%s'", name);
	}
	mark(where, sizeof(where), file, vn);
	if (vn->type == YD_SEQ &&
	    strcmp(name, "engine.speculative_config.acceptance") == 0)
		return sim_spec_config_seq(c, vn, file, err, errlen);
	if (vn->type != YD_SCALAR)
		return fail(err, errlen, where, "%s: expected a scalar value",
			    name);
	return set_key(c, name, vn->str, where, file, err, errlen);
}

/* engine:, cost:, output:, slo:, kv_offload: -- a mapping of scalar keys
 * (kv_offload's nest). */
static kv_err
load_section(struct sim_config *c, const char *k, const struct yd_node *vn,
	     const char *file, char *err, size_t errlen)
{
	char where[SIM_WHERE_LEN];

	if (vn->type != YD_MAP) {
		mark(where, sizeof(where), file, vn);
		return fail(err, errlen, where, "%s: expected a mapping", k);
	}
	for (size_t i = 0; i < vn->n; i++) {
		const struct yd_node *k2 = yd_key(vn, i);
		char full[256];
		kv_err e;

		if (k2->type != YD_SCALAR) {
			mark(where, sizeof(where), file, k2);
			return fail(err, errlen, where, "expected a key");
		}
		snprintf(full, sizeof(full), "%s.%s", k, k2->str);
		/* a mapping of keys one level down (kv_offload.lmcache:) */
		if (yd_val(vn, i)->type == YD_MAP && section_known(full))
			e = load_section(c, full, yd_val(vn, i), file, err,
					 errlen);
		else
			e = load_value(c, full, k2, yd_val(vn, i), file, err,
				       errlen);
		if (e != KV_OK)
			return e;
	}
	return KV_OK;
}

/*
 * workload: -- wl_config_from_yaml's.  A section that names its own source
 * replaces the bundled trace; `trace: auto` (or null) without a generator
 * brings it back.
 */
static kv_err
load_workload(struct sim_config *c, const struct yd_node *vn,
	      const char *file, bool cmdline, char *err, size_t errlen)
{
	struct wl_error we;
	bool had = c->wl.trace != NULL, gen = false, deflt = false;

	wl_error_clear(&we);
	if (wl_config_from_yaml(vn, file, &c->wl, &we) != WL_OK)
		return wl_fail(err, errlen, &we, cmdline);
	if (c->wl.trace != NULL && !had)
		c->wl_trace_default = false;
	if (vn->type != YD_MAP)
		return KV_OK;
	for (size_t i = 0; i < vn->n; i++) {
		const struct yd_node *k2 = yd_key(vn, i), *v2 = yd_val(vn, i);

		if (k2->type != YD_SCALAR)
			continue;
		if (strcmp(k2->str, "generator") == 0)
			gen = true;
		if (strcmp(k2->str, "trace") == 0 && v2->type == YD_SCALAR &&
		    is_null_text(v2->str))
			deflt = true;
		if (strcmp(k2->str, "generator") == 0 ||
		    strcmp(k2->str, "trace") == 0 ||
		    strcmp(k2->str, "kind") == 0)
			c->wl_trace_default = false;
	}
	if (deflt && !gen) {
		free(c->wl.trace);
		c->wl.trace = NULL;
		c->wl.format = WL_FMT_AUTO;
		c->wl_trace_default = true;
	}
	return KV_OK;
}

/* The document's top-level mapping, key by key. */
static kv_err
load_doc(struct sim_config *c, const struct yd_node *root, const char *file,
	 bool cmdline, char *err, size_t errlen)
{
	char where[SIM_WHERE_LEN];

	if (root == NULL)
		return KV_OK;	/* an empty file: every default */
	if (root->type != YD_MAP) {
		mark(where, sizeof(where), file, root);
		return fail(err, errlen, where, "expected a mapping of keys");
	}
	for (size_t i = 0; i < root->n; i++) {
		const struct yd_node *kn = yd_key(root, i);
		const struct yd_node *vn = yd_val(root, i);
		kv_err e;

		if (kn->type != YD_SCALAR) {
			mark(where, sizeof(where), file, kn);
			return fail(err, errlen, where, "expected a key");
		}
		/* A sweep file's grid is kvsim sweep's (docs/sweep.md): the
		 * rest of the file is the base run, which is what run runs. */
		if (strcmp(kn->str, "sweep") == 0)
			continue;
		if (strcmp(kn->str, "workload") == 0)
			e = load_workload(c, vn, file, cmdline, err, errlen);
		else if (strcmp(kn->str, "disaggregation") == 0)
			e = sim_pd_load(c, vn, file, err, errlen);
		else if (section_known(kn->str))
			e = load_section(c, kn->str, vn, file, err, errlen);
		else
			e = load_value(c, kn->str, kn, vn, file, err, errlen);
		if (e != KV_OK)
			return e;
	}
	return KV_OK;
}

/*
 * cmdline: the text is a --set override's (file is "--set KEY=VALUE").
 * Read as libyaml's document loader reads (ydoc.h YD_LOADER, which the
 * messages are worded by), repeated keys refused, one document a file.
 */
static kv_err
load_text(struct sim_config *c, FILE *in, const char *file, bool cmdline,
	  char *err, size_t errlen)
{
	struct yd_doc doc;
	size_t len = strlen(file) + 1024;
	char *msg = malloc(len), where[SIM_WHERE_LEN];
	kv_err e;

	if (msg == NULL) {
		snprintf(err, errlen, "%s: out of memory", file);
		return KV_ENOMEM;
	}
	e = yd_read(&doc, in, file, YD_LOADER | YD_UNIQUE | YD_NEXTDOC, msg,
		    len);
	if (e == KV_ENOMEM) {
		snprintf(err, errlen, "%s: out of memory", file);
	} else if (e != KV_OK && cmdline) {
		snprintf(err, errlen, "%s: %s", file, msg + doc.err_what);
	} else if (e != KV_OK) {
		snprintf(err, errlen, "%s", msg);
	} else if (doc.next != NULL) {
		/* a second document would be ignored silently */
		mark(where, sizeof(where), file, doc.next);
		e = fail(err, errlen, where, "a second YAML document (one "
			 "configuration a file)");
	} else {
		e = load_doc(c, doc.root, file, cmdline, err, errlen);
	}
	yd_release(&doc);
	free(msg);
	return e;
}

kv_err
sim_config_load(struct sim_config *c, const char *path, char *err,
		size_t errlen)
{
	FILE *f = fopen(path, "r");
	kv_err e;

	if (f == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return KV_ENOENT;
	}
	snprintf(c->source, sizeof(c->source), "%s", path);
	e = load_text(c, f, path, false, err, errlen);
	fclose(f);
	return e;
}

/* "a.b.c": names of letters, digits and underscores, joined by dots. */
static bool
workload_key_ok(const char *k)
{
	bool empty = true;

	for (; *k != '\0'; k++) {
		if (*k == '.') {
			if (empty)
				return false;
			empty = true;
		} else if (isalnum((unsigned char)*k) || *k == '_') {
			empty = false;
		} else {
			return false;
		}
	}
	return !empty;
}

/*
 * --set workload.a.b.c=v: "{workload: {a: {b: {c: "v"}}}}" through the
 * YAML reader; v escaped, so that no character of it is taken as syntax
 * (or refused, or folded) by the reader.
 */
static kv_err
set_workload(struct sim_config *c, const char *key, const char *value,
	     const char *where, char *err, size_t errlen)
{
	char *text = NULL;
	size_t n = 0, depth = 0;
	FILE *mf;
	kv_err e;

	/* Only names go into the text below, never YAML syntax. */
	if (!workload_key_ok(key + 9))
		return fail(err, errlen, where, "unknown key '%s'", key);
	mf = open_memstream(&text, &n);
	if (mf == NULL)
		return KV_ENOMEM;
	fputs("{workload: {", mf);
	for (const char *s = key + 9; *s; s++) {
		if (*s == '.') {
			fputs(": {", mf);
			depth++;
		} else
			fputc(*s, mf);
	}
	fputs(": \"", mf);
	wl_yaml_escape(mf, value);
	fputc('"', mf);
	for (size_t i = 0; i < depth + 2; i++)
		fputc('}', mf);
	if (fclose(mf) != 0) {
		free(text);
		return KV_ENOMEM;
	}
	mf = fmemopen(text, strlen(text), "r");
	if (mf == NULL) {
		free(text);
		return KV_ENOMEM;
	}
	e = load_text(c, mf, where, true, err, errlen);
	fclose(mf);
	free(text);
	return e;
}

kv_err
sim_config_set(struct sim_config *c, const char *assign, char *err,
	       size_t errlen)
{
	const char *eq = strchr(assign, '=');
	char where[SIM_WHERE_LEN], key[256];
	size_t klen;

	snprintf(where, sizeof(where), "--set %s", assign);
	if (eq == NULL || eq == assign)
		return fail(err, errlen, where, "expected KEY=VALUE");
	klen = (size_t)(eq - assign);
	if (klen >= sizeof(key))
		return fail(err, errlen, where, "key too long");
	memcpy(key, assign, klen);
	key[klen] = '\0';
	if (strncmp(key, "workload.", 9) == 0)
		return set_workload(c, key, eq + 1, where, err, errlen);
	if (strncmp(key, "disaggregation.", 15) == 0)
		return sim_pd_set(c, key + 15, eq + 1, where, err, errlen);
	if (run_key_find(key) == NULL)
		return fail(err, errlen, where, "unknown key '%s'", key);
	return set_key(c, key, eq + 1, where, NULL, err, errlen);
}

kv_err
sim_config_finish(struct sim_config *c, char *err, size_t errlen)
{
	kv_err e;

	if ((e = sim_spec_config_finish(c, err, errlen)) != KV_OK)
		return e;
	if (c->wl_trace_default && c->wl.trace == NULL) {
		char path[1024];

		snprintf(path, sizeof(path), "%s/%s", cat_datadir(),
			 SIM_DEFAULT_TRACE);
		c->wl.trace = strdup(path);
		if (c->wl.trace == NULL) {
			snprintf(err, errlen, "out of memory");
			return KV_ENOMEM;
		}
		c->wl.format = WL_FMT_AZURE;
	}
	return KV_OK;
}

const char *
sim_config_where(const struct sim_config *c, const char *key)
{
	const char *w = strcmp(key, "model") == 0 ? c->model_where :
			strcmp(key, "gpu") == 0 ? c->gpu_where :
			strcmp(key, "policy") == 0 ? c->policy_where : "";

	return w[0] ? w : c->source;
}

kv_err
sim_config_from_args(struct sim_config *c, const char *file,
		     const char *const *sets, size_t n, char *err,
		     size_t errlen)
{
	kv_err e;

	sim_config_init(c);
	if (file != NULL &&
	    (e = sim_config_load(c, file, err, errlen)) != KV_OK)
		return e;
	for (size_t i = 0; i < n; i++)
		if ((e = sim_config_set(c, sets[i], err, errlen)) != KV_OK)
			return e;
	return sim_config_finish(c, err, errlen);
}

kv_err
sim_config_check_seed(const char *seed, char *err, size_t errlen)
{
	/* the words are set_key's, the place the option as given */
	struct sim_config tmp;
	char where[SIM_WHERE_LEN];
	kv_err e;

	sim_config_init(&tmp);
	snprintf(where, sizeof(where), "--seed %s", seed);
	e = set_key(&tmp, "seed", seed, where, NULL, err, errlen);
	sim_config_release(&tmp);
	return e;
}

static void
put_opt_u64(FILE *f, const char *k, uint64_t v, bool set)
{
	if (set)
		fprintf(f, "  %s: %" PRIu64 "\n", k, v);
	else
		fprintf(f, "  %s: auto\n", k);
}

/* "KEY: "VALUE"", the value escaped for a YAML double-quoted scalar. */
static void
put_str(FILE *f, const char *k, const char *v)
{
	fprintf(f, "%s: \"", k);
	wl_yaml_escape(f, v);
	fputs("\"\n", f);
}

/* "KEY: v" in the fewest digits that read back as v. */
static void
put_num(FILE *f, const char *key, double v)
{
	fprintf(f, "%s: ", key);
	wl_yaml_num(f, v);
	fputc('\n', f);
}


/* engine.kv_offloading_*: written only when offload is on (a run without
 * it keeps its text and digest). */
static void
offload_write_engine(const struct sim_config *c, FILE *f)
{
	if (c->offload.size_gib <= 0)
		return;
	put_num(f, "  kv_offloading_size", c->offload.size_gib);
	fprintf(f, "  kv_offloading_backend: %s\n",
		c->offload.backend == SIM_OFF_LMCACHE ? "lmcache" : "native");
}

/* A GiB value, or auto when unset. */
static void
put_gib(FILE *f, const char *k, double v)
{
	if (v < 0)
		fprintf(f, "%s: auto\n", k);
	else
		put_num(f, k, v);
}

/* kv_offload: its keys, when offload is on. */
static void
offload_write(const struct sim_config *c, FILE *f)
{
	const struct sim_offload_config *o = &c->offload;
	bool head = false;

	if (o->size_gib <= 0)
		return;
	fprintf(f, "kv_offload:\n");
	put_opt_u64(f, "block_size", o->block_size, o->block_size != 0);
	fprintf(f, "  lmcache:\n    chunk_size: %" PRIu32 "\n"
		"    local_cpu: %s\n", o->chunk_size,
		o->local_cpu ? "true" : "false");
	put_gib(f, "    max_local_cpu_size", o->max_local_cpu_gib);
	put_str(f, "    local_disk", o->local_disk);
	put_num(f, "    max_local_disk_size", o->max_local_disk_gib);
	put_str(f, "    remote_url", o->remote_url);
	put_num(f, "    remote_size", o->remote_gib);
	for (int m = 0; m < SIM_TIER_NMEDIA; m++) {
		const struct sim_tier_override *t = &o->tier[m];

		if (t->read_gbps < 0 && t->write_gbps < 0 &&
		    t->latency_us < 0)
			continue;
		if (!head)
			fprintf(f, "  tiers:\n");
		head = true;
		fprintf(f, "    %s:\n", tier_medium_names[m]);
		if (t->read_gbps >= 0)
			put_num(f, "      read_gbps", t->read_gbps);
		if (t->write_gbps >= 0)
			put_num(f, "      write_gbps", t->write_gbps);
		if (t->latency_us >= 0)
			put_num(f, "      latency_us", t->latency_us);
	}
}

void
sim_config_write(const struct sim_config *c, const struct sz_result *sr,
		 FILE *f)
{
	const struct sz_engine *e = &c->eng;

	/* Escaped in the comment too: a newline would end it, and libyaml
	 * refuses control characters anywhere in the file. */
	fputs("# kvsim run: the resolved configuration (source: ", f);
	wl_yaml_escape(f, c->source);
	fputs(")\n", f);
	put_str(f, "model", c->model);
	put_str(f, "gpu", c->gpu);
	put_str(f, "policy", c->policy);
	fprintf(f, "replicas: %" PRIu32 "\nrouter: %s\nseed: %" PRIu64 "\n",
		c->replicas, sim_router_name(c->router), c->seed);
	fprintf(f, "engine:\n");
	put_opt_u64(f, "block_size", sr ? sr->block_size : e->block_size,
		    sr != NULL || e->block_size != 0);
	put_num(f, "  gpu_memory_utilization", e->gpu_memory_utilization);
	put_opt_u64(f, "max_num_seqs", sr ? sr->max_num_seqs : e->max_num_seqs,
		    sr != NULL || e->max_num_seqs != 0);
	put_opt_u64(f, "max_num_batched_tokens",
		    sr ? sr->max_num_batched_tokens : e->max_num_batched_tokens,
		    sr != NULL || e->max_num_batched_tokens != 0);
	put_opt_u64(f, "max_model_len",
		    sr ? sr->max_model_len : e->max_model_len,
		    sr != NULL || e->max_model_len != 0);
	if (sr != NULL)
		fprintf(f, "  enable_prefix_caching: %s\n",
			sr->prefix_caching ? "true" : "false");
	else if (e->enable_prefix_caching < 0)
		fprintf(f, "  enable_prefix_caching: auto\n");
	else
		fprintf(f, "  enable_prefix_caching: %s\n",
			e->enable_prefix_caching ? "true" : "false");
	fprintf(f, "  enable_chunked_prefill: %s\n",
		c->chunked_prefill < 0 ? "auto"
		: c->chunked_prefill ? "true" : "false");
	fprintf(f, "  preemption_mode: %s\n",
		c->preemption_mode < 0 ? "auto"
		: c->preemption_mode ? "swap" : "recompute");
	fprintf(f, "  scheduling_policy: %s\n",
		c->scheduling_policy < 0 ? "auto"
		: c->scheduling_policy ? "priority" : "fcfs");
	put_num(f, "  swap_space", c->swap_space_gib);
	put_opt_u64(f, "num_lookahead_slots", (uint64_t)c->num_lookahead_slots,
		    c->num_lookahead_slots >= 0);
	fprintf(f, "  defer_same_step_state_hits: %s\n",
		c->defer_same_step_state_hits ? "true" : "false");
	if (c->vllm_version[0] != '\0')
		fprintf(f, "  vllm_version: \"%s\"\n", c->vllm_version);
	fprintf(f, "  async_scheduling: %s\n",
		c->async_scheduling < 0 ? "auto"
		: c->async_scheduling ? "true" : "false");
	fprintf(f, "  kv_cache_dtype: %s\n",
		e->kv_cache_dtype[0] ? e->kv_cache_dtype : "auto");
	fprintf(f, "  dtype: %s\n", e->dtype[0] ? e->dtype : "auto");
	put_opt_u64(f, "kv_cache_memory_bytes",
		    (uint64_t)e->kv_cache_memory_bytes,
		    e->kv_cache_memory_bytes != SZ_UNSET);
	put_opt_u64(f, "num_gpu_blocks_override",
		    (uint64_t)e->num_gpu_blocks_override,
		    e->num_gpu_blocks_override != SZ_UNSET);
	fprintf(f, "  tensor_parallel_size: %" PRIu32 "\n",
		sr ? sr->tp : e->tensor_parallel_size ?
		e->tensor_parallel_size : 1);
	offload_write_engine(c, f);
	sim_knobs_write(c, f);
	if (c->nsamp.mode != SIM_NSAMP_AUTO)
		fprintf(f, "  parallel_sampling: %s\n",
			c->nsamp.mode == SIM_NSAMP_FORK ? "fork" : "fanout");

	sim_lora_write_engine(&c->lora, f);
	sim_spec_config_write(c, f);
	fprintf(f, "cost:\n  step_ns: %" PRId64 "\n", c->step_ns);
	if (c->kv_layout >= 0)
		fprintf(f, "  kv_layout: %s\n",
			cost_layout_name((enum cost_layout)c->kv_layout));
	if (c->copy >= 0)
		fprintf(f, "  copy: %s\n", cost_copy_name((enum cost_copy)c->copy));
	if (c->host_memory >= 0)
		fprintf(f, "  host_memory: %s\n",
			cost_hostmem_name((enum cost_hostmem)c->host_memory));
	if (c->cuda_graphs < 0)
		fprintf(f, "  cuda_graphs: vllm\n");
	else if (c->cuda_graphs > 0)
		fprintf(f, "  cuda_graphs: %" PRId64 "\n", c->cuda_graphs);
	if (c->calibration[0] != '\0')
		put_str(f, "  calibration", c->calibration);
	else if (c->calibration_none)
		fprintf(f, "  calibration: none\n");
	if (c->gpu_usd_per_hour > 0)
		put_num(f, "  gpu_usd_per_hour", c->gpu_usd_per_hour);
	fprintf(f, "output:\n");
	put_num(f, "  timeseries_interval_s", c->timeseries_interval_s);
	put_num(f, "  heartbeat_interval_s", c->heartbeat_interval_s);
	if (c->slo_ttft_s > 0 || c->slo_tpot_s > 0 || c->slo_e2e_s > 0) {
		fprintf(f, "slo:\n");
		if (c->slo_ttft_s > 0)
			put_num(f, "  ttft_s", c->slo_ttft_s);
		if (c->slo_tpot_s > 0)
			put_num(f, "  tpot_s", c->slo_tpot_s);
		if (c->slo_e2e_s > 0)
			put_num(f, "  e2e_s", c->slo_e2e_s);
	}
	sim_pd_write(c, f);
	offload_write(c, f);
	sim_lora_write_section(&c->lora, f);
	fprintf(f, "workload:\n");
	wl_config_write_yaml(&c->wl, f, 2);
}

kv_err
sim_config_digest(const struct sim_config *c, const struct sz_result *sr,
		  uint64_t *digest)
{
	uint64_t h = 14695981039346656037ull;	/* FNV-1a offset basis */
	bool comment = false, bol = true;
	char *buf = NULL;
	size_t n = 0;
	FILE *mf = open_memstream(&buf, &n);

	if (mf == NULL)
		return KV_ENOMEM;
	sim_config_write(c, sr, mf);
	if (fclose(mf) != 0) {
		free(buf);
		return KV_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (bol)
			comment = buf[i] == '#';
		bol = buf[i] == '\n';
		if (comment)
			continue;
		h ^= (unsigned char)buf[i];
		h *= 1099511628211ull;
	}
	free(buf);
	*digest = h;
	return KV_OK;
}
