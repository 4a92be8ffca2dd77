/*
 * runcfg_knobs.c -- vLLM's scheduler and engine knobs of issue 20 under
 * engine: (runcfg_knobs.h): their values, their checks and how they reach
 * the scheduler.
 *
 * Reference: vLLM v0.15.1 (commit 01230b40128e): vllm/config/scheduler.py
 * (SchedulerConfig: max_num_partial_prefills and max_long_partial_prefills
 * >= 1, default 1; long_prefill_token_threshold 0, or int(max_model_len *
 * 0.04) when max_num_partial_prefills > 1; verify_max_model_len's checks),
 * vllm/config/parallel.py (pipeline_parallel_size), vllm/config/cache.py
 * (cpu_offload_gb >= 0) and vllm/model_executor/layers/quantization
 * (QuantizationMethods).  The v1 scheduler (vllm/v1/core/sched/
 * scheduler.py) reads long_prefill_token_threshold only: it caps every
 * request's tokens in a step, and the partial-prefill counts have no
 * other effect there (docs/scheduler.md R120-R122).
 */
#include "sim/runcfg_knobs.h"

#include "sim/pdcfg.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

enum { KNOB_LONG = 0, KNOB_NPART, KNOB_NLONG };

static const char *const knob_names[] = {
	"engine.long_prefill_token_threshold",
	"engine.max_num_partial_prefills",
	"engine.max_long_partial_prefills",
	"engine.pipeline_parallel_size",
	"engine.quantization",
	"engine.cpu_offload_gb",
};
#define KNOB_N (sizeof(knob_names) / sizeof(knob_names[0]))

/* vLLM's quantization methods kvsim does not model (QuantizationMethods
 * at v0.15.1, the common ones): named in the refusal. */
static const char *const quant_other =
	"awq, awq_marlin, gptq, gptq_marlin, compressed-tensors, "
	"bitsandbytes, gguf, modelopt, modelopt_fp4, mxfp4, fbgemm_fp8, "
	"ptpc_fp8, experts_int8, moe_wna16, torchao, quark, inc";

static kv_err
knobs_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (err != NULL && errlen > 0)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return KV_EINVAL;
}

void
sim_knobs_init(struct sim_knobs_config *k)
{
	memset(k, 0, sizeof(*k));
	k->long_prefill_token_threshold = -1;
	k->max_num_partial_prefills = -1;
	k->max_long_partial_prefills = -1;
}

bool
sim_knobs_key(const char *key)
{
	for (size_t i = 0; i < KNOB_N; i++)
		if (strcmp(key, knob_names[i]) == 0)
			return true;
	return false;
}

static bool
knobs_null(const char *v)
{
	return v[0] == '\0' || strcmp(v, "~") == 0 ||
	       strcasecmp(v, "null") == 0 || strcmp(v, "auto") == 0;
}

/* engine.quantization: fp8, or none (the checkpoint's weights). */
static kv_err
knobs_quant(struct sim_config *c, const char *key, const char *v,
	    const char *where, char *err, size_t errlen)
{
	if (knobs_null(v) || strcmp(v, "none") == 0) {
		c->eng.quantization[0] = '\0';
		return KV_OK;
	}
	if (strcmp(v, "fp8") == 0) {
		snprintf(c->eng.quantization, sizeof(c->eng.quantization),
			 "fp8");
		return KV_OK;
	}
	return knobs_fail(err, errlen, "%s: %s: kvsim models fp8 only (one "
			  "byte per weight, fp8 GEMMs); vLLM's other methods "
			  "(%s) are not modelled, got '%s'", where, key,
			  quant_other, v);
}

kv_err
sim_knobs_set(struct sim_config *c, const char *key, const char *v,
	      const char *where, char *err, size_t errlen)
{
	struct sim_knobs_config *k = &c->knobs;
	uint64_t u;
	double d;
	size_t i;

	for (i = 0; i < KNOB_N && strcmp(key, knob_names[i]) != 0; i++)
		;
	if (i == 4)
		return knobs_quant(c, key, v, where, err, errlen);
	if (i == 5) {
		if (knobs_null(v))
			d = 0;
		else if (!sim_config_parse_dbl(v, 0.0, 1e6, &d))
			return knobs_fail(err, errlen, "%s: %s: expected GiB, "
					  "a number >= 0, got '%s'", where,
					  key, v);
		c->eng.cpu_offload_gb = d;
		return KV_OK;
	}
	if (knobs_null(v)) {
		u = 0;
	} else if (!sim_config_parse_u64(v, i == KNOB_LONG ? 0 : 1,
					 i == 3 ? 64 : UINT32_MAX, &u)) {
		return knobs_fail(err, errlen, "%s: %s: expected an integer "
				  "in [%d, %s], got '%s'", where, key,
				  i == KNOB_LONG ? 0 : 1,
				  i == 3 ? "64" : "4294967295", v);
	}
	if (i == 3) {
		c->eng.pipeline_parallel_size = (uint32_t)u;
		snprintf(k->pp_where, sizeof(k->pp_where), "%s", where);
		return KV_OK;
	}
	if (i == KNOB_LONG)
		k->long_prefill_token_threshold = knobs_null(v) ? -1 :
						  (int64_t)u;
	else if (i == KNOB_NPART)
		k->max_num_partial_prefills = knobs_null(v) ? -1 : (int64_t)u;
	else
		k->max_long_partial_prefills = knobs_null(v) ? -1 :
					       (int64_t)u;
	snprintf(k->where[i], sizeof(k->where[i]), "%s", where);
	return KV_OK;
}

void
sim_knobs_write(const struct sim_config *c, FILE *f)
{
	const struct sim_knobs_config *k = &c->knobs;
	const int64_t v[3] = { k->long_prefill_token_threshold,
			       k->max_num_partial_prefills,
			       k->max_long_partial_prefills };

	/* the defaults (0, 1, 1) are not written: a run that gives them is
	 * the run without them, the same run id */
	for (int i = 0; i < 3; i++)
		if (v[i] > (i == KNOB_LONG ? 0 : 1))
			fprintf(f, "  %s: %" PRId64 "\n",
				knob_names[i] + strlen("engine."), v[i]);
	if (c->eng.pipeline_parallel_size > 1)
		fprintf(f, "  pipeline_parallel_size: %" PRIu32 "\n",
			c->eng.pipeline_parallel_size);
	if (c->eng.quantization[0] != '\0')
		fprintf(f, "  quantization: %s\n", c->eng.quantization);
	if (c->eng.cpu_offload_gb > 0)
		fprintf(f, "  cpu_offload_gb: %.17g\n", c->eng.cpu_offload_gb);
}

kv_err
sim_knobs_sched(const struct sim_config *c, const struct sz_result *sr,
		struct kvs_config *sc, char *err, size_t errlen)
{
	const struct sim_knobs_config *k = &c->knobs;
	int64_t npart = k->max_num_partial_prefills > 0 ?
			k->max_num_partial_prefills : 1;
	int64_t nlong = k->max_long_partial_prefills > 0 ?
			k->max_long_partial_prefills : 1;
	int64_t lpt = k->long_prefill_token_threshold;
	const char *w = k->where[KNOB_NPART];

	if (nlong > npart)
		return knobs_fail(err, errlen, "%s: "
				  "max_long_partial_prefills (%" PRId64 ") "
				  "must be less than or equal to "
				  "max_num_partial_prefills (%" PRId64 ")",
				  k->where[KNOB_NLONG][0] ? k->where[KNOB_NLONG]
				  : w, nlong, npart);
	if (npart > 1) {
		if (strcmp(sc->policy, "vllm-v1") != 0)
			return knobs_fail(err, errlen, "%s: "
					  "max_num_partial_prefills > 1: "
					  "kvsim models it for policy "
					  "vllm-v1 only (whose scheduler "
					  "reads long_prefill_token_threshold"
					  " alone), not %s", w, sc->policy);
		if (sc->chunked_prefill == 0)
			return knobs_fail(err, errlen, "%s: Chunked prefill "
					  "must be enabled to set "
					  "max_num_partial_prefills > 1.", w);
		/* SchedulerConfig.__post_init__ */
		if (lpt <= 0)
			lpt = (int64_t)((double)sr->max_model_len * 0.04);
		if ((uint64_t)lpt > sr->max_model_len)
			return knobs_fail(err, errlen, "%s: "
					  "long_prefill_token_threshold "
					  "(%" PRId64 ") cannot be greater "
					  "than the max_model_len (%" PRIu64
					  ")", k->where[KNOB_LONG],
					  lpt, sr->max_model_len);
	}
	if (lpt >= 0)
		sc->long_prefill_threshold = lpt;
	return KV_OK;
}
