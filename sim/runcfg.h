/*
 * runcfg.h -- the configuration of one `kvsim run`: one YAML file (or the
 * embedded default), then `--set key=value` overrides, then --seed.
 *
 * Shape (docs/run.md has every key, its default and meaning):
 *
 *   model: meta-llama/Llama-3.1-8B    # catalog id or alias, or config.json
 *   gpu: h100-sxm                     # catalog id or alias
 *   policy: vllm-v1                   # kvsched.h policies, or a plugin
 *                                     # path (has a '/'; sim/plugin.h)
 *   replicas: 1
 *   router: round-robin               # | least-outstanding | prefix-affinity
 *   seed: 0
 *   engine: {block_size: 16, ...}     # vLLM's names
 *   cost: {step_ns: 0}                # 0: the roofline model of sim/cost.h
 *   cost: {calibration: calib.yaml}   # overrides of its terms (calib.h),
 *                                     # relative to this file's directory
 *   cost: {kv_layout: fa-split, copy: per-chunk, host_memory: pinned}
 *   output: {timeseries_interval_s: 1.0, heartbeat_interval_s: 600}
 *   slo: {ttft_s: 2.0, tpot_s: 0.1, e2e_s: 60}  # goodput thresholds
 *   workload: {...}                   # workloads/wl.h, wl_config_from_yaml
 *
 * Every key has a default; the workload defaults to the bundled excerpt of
 * the Azure conversation trace.  Unknown keys and bad values are errors
 * "FILE:LINE:COL: what" (for --set: "--set KEY=VALUE: what"); the caller
 * exits 2.
 */
#ifndef SIM_RUNCFG_H
#define SIM_RUNCFG_H

#include "sim/lora.h"
#include "sim/model/sizing.h"
#include "workloads/wl.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum sim_router {
	SIM_ROUTE_RR = 0,		/* round-robin */
	SIM_ROUTE_LEAST,		/* least outstanding tokens */
	SIM_ROUTE_PREFIX		/* same leading block hash, same replica */
};

#define SIM_WHERE_LEN 600

/*
 * The most blocks a run's pool may hold (the GPU's, and vLLM v0's CPU swap
 * space): the allocator keeps 36 (vLLM v1) to 57 (v0) bytes a block, so
 * 2^26 blocks is up to 4 GiB of the simulator's own memory.  The largest
 * pools the catalog gives, block_size 1 and an fp8 cache for Qwen2.5-7B
 * on 4 MI300X or Nemotron-H-8B on 8, are about 25M blocks.
 */
#define SIM_POOL_MAX_BLOCKS (1u << 26)

/* Prefill/decode disaggregation (sim/pdcfg.h, docs/pd.md). */
#define SIM_PD_MAX_ENGINE 16

struct sim_pd_set {		/* one engine key of a pool */
	char key[64];		/* "engine.max_num_seqs" */
	char val[128];
	char where[SIM_WHERE_LEN];
};

struct sim_pd_pool {
	uint32_t replicas;	/* 0: the top-level replicas */
	char gpu[128];		/* "": the top-level gpu */
	char gpu_where[SIM_WHERE_LEN];
	uint32_t tp;		/* 0: engine.tensor_parallel_size */
	int router;		/* -1: the top-level router */
	struct sim_pd_set eng[SIM_PD_MAX_ENGINE];
	uint32_t neng;
};

struct sim_pd_config {
	bool on;
	struct sim_pd_pool pool[2];	/* prefill, decode */
	char link[64];
	char link_where[SIM_WHERE_LEN];
	double timeout_s;	/* prefill holds blocks at most this long */
};

/*
 * KV offload (docs/run.md "KV offload"): vLLM's --kv-offloading-size and
 * --kv-offloading-backend, the native connector's offloaded block, and
 * LMCache's own settings.  Off while size_gib is 0.  Sizes in GiB; a
 * negative double: unset (its default, resolved at sim_run_open).
 */
enum sim_offload_backend { SIM_OFF_NATIVE = 0, SIM_OFF_LMCACHE };

/* The media of data/tiers.yaml a run can override (kv_offload.tiers). */
enum sim_tier_medium { SIM_TIER_CPU = 0, SIM_TIER_NVME, SIM_TIER_REMOTE,
		       SIM_TIER_NMEDIA };

struct sim_tier_override {
	double read_gbps, write_gbps, latency_us;	/* < 0: the catalog's */
};

struct sim_offload_config {
	double size_gib;		/* engine.kv_offloading_size; 0 off */
	char size_where[SIM_WHERE_LEN];	/* of size_gib, or "" */
	enum sim_offload_backend backend;
	uint32_t block_size;		/* kv_offload.block_size; 0: GPU's */
	char block_where[SIM_WHERE_LEN];
	/* kv_offload.lmcache: LMCache's names; sizes per TP rank */
	uint32_t chunk_size;		/* 256 */
	bool local_cpu;			/* true */
	double max_local_cpu_gib;	/* < 0: size_gib / TP (vLLM's) */
	char local_disk[512];		/* "" none; a path or "true" */
	double max_local_disk_gib;	/* 0 */
	char remote_url[512];		/* "" none */
	double remote_gib;		/* the whole store's, 0 */
	char lmcache_where[SIM_WHERE_LEN];	/* of the last lmcache key */
	struct sim_tier_override tier[SIM_TIER_NMEDIA];
};

/*
 * vLLM's scheduler knobs of issue 20 (runcfg_knobs.c); pipeline parallel,
 * quantization and CPU weight offload are sizing settings (eng).  -1:
 * not given.
 */
struct sim_knobs_config {
	int64_t long_prefill_token_threshold;
	int64_t max_num_partial_prefills;
	int64_t max_long_partial_prefills;
	char where[3][SIM_WHERE_LEN];	/* of each of the three, or "" */
	char pp_where[SIM_WHERE_LEN];	/* of pipeline_parallel_size */
};

/* The catalog id of a medium ("cpu-dram", "local-nvme", "remote-store"). */
const char *sim_tier_medium_name(enum sim_tier_medium m);

/*
 * engine.parallel_sampling: how a request with n > 1 samples runs
 * (docs/run.md).  auto: as the policy's reference engine runs it (vLLM
 * v1 and the pinned v0 both fan a parent out into n child requests).
 */
enum sim_nsamp_mode {
	SIM_NSAMP_AUTO = 0,
	SIM_NSAMP_FANOUT,	/* n child requests sharing the prompt */
	SIM_NSAMP_FORK		/* one sequence group forked after prefill */
};

struct sim_nsamp_config {
	int mode;			/* enum sim_nsamp_mode */
	char where[SIM_WHERE_LEN];	/* of the key, or "" */
};

/*
 * Speculative decoding (docs/speculative.md): engine.speculative_config, vLLM's
 * names, and kvsim's acceptance model.  Off while method is SIM_SPEC_OFF.
 */
enum sim_spec_method { SIM_SPEC_OFF = 0, SIM_SPEC_NGRAM, SIM_SPEC_EAGLE,
		       SIM_SPEC_EAGLE3, SIM_SPEC_DRAFT };

#define SIM_SPEC_MAX_K 64	/* num_speculative_tokens kvsim takes */

struct sim_spec_config {
	enum sim_spec_method method;
	uint32_t k;			/* num_speculative_tokens; 0 unset */
	char model[512];		/* the draft model or EAGLE head */
	uint32_t draft_tp;		/* draft_tensor_parallel_size; 0 */
	uint32_t lookup_max, lookup_min;	/* ngram; 0 unset */
	/* acceptance: conditional per position; nacc 0: the default,
	 * acc_const: one number for every position, else a list (or the
	 * file's), resolved by sim_spec_config_finish */
	double acc[SIM_SPEC_MAX_K];
	uint32_t nacc;
	bool acc_const;
	char acc_file[1024];		/* measured acceptance; "" none */
	double ngram_match;		/* < 0: the default */
	char method_where[SIM_WHERE_LEN], k_where[SIM_WHERE_LEN];
	char model_where[SIM_WHERE_LEN], tp_where[SIM_WHERE_LEN];
	char acc_where[SIM_WHERE_LEN], lookup_where[SIM_WHERE_LEN];
};

struct sim_config {
	char source[512];		/* the file, or "(embedded default)" */
	char model[512];
	char model_where[SIM_WHERE_LEN];	/* "FILE:LINE:COL" of the value */
	char gpu[128];
	char gpu_where[SIM_WHERE_LEN];
	char policy[256];
	char policy_where[SIM_WHERE_LEN];
	uint32_t replicas;		/* >= 1 */
	enum sim_router router;
	uint64_t seed;

	/* engine: vLLM's names.  Sizing settings live in eng. */
	struct sz_engine eng;
	int chunked_prefill;		/* -1 policy default, 0, 1 */
	int preemption_mode;		/* -1 policy default, 0 recompute,
					 * 1 swap */
	double swap_space_gib;		/* CPU swap space per GPU (4) */
	int64_t num_lookahead_slots;	/* -1 policy default */
	bool defer_same_step_state_hits;	/* vllm-v1: vLLM #29387 */
	int scheduling_policy;		/* -1 policy default, 0 fcfs,
					 * 1 priority */
	char vllm_version[32];		/* vllm-v1's engine loop; "" auto */
	int async_scheduling;		/* -1 the version's default, 0, 1 */
	char async_where[SIM_WHERE_LEN];	/* of async_scheduling, or "" */

	/* cost */
	int64_t step_ns;		/* > 0: every step takes this long */
	char calibration[1024];		/* a calibration file (sim/calib.h),
					 * absolute; "" none */
	char calibration_where[SIM_WHERE_LEN];
	bool calibration_none;		/* cost.calibration: none -- not even
					 * the one chosen for the GPU and vLLM
					 * version (sim_run_calibration) */
	int kv_layout;			/* enum cost_layout; -1 the default */
	int copy;			/* enum cost_copy; -1 the default */
	int host_memory;		/* enum cost_hostmem; -1 the default */
	int64_t cuda_graphs;		/* 0 off, -1 vllm (vLLM's), > 0 the
					 * largest capture size */
	double gpu_usd_per_hour;	/* > 0: a GPU's price (capacity's
					 * cost columns); 0: the catalog's */

	/* output */
	double timeseries_interval_s;	/* simulated seconds (1.0) */
	double heartbeat_interval_s;	/* simulated seconds (600) */

	/* slo: per-request thresholds for goodput (0: none) */
	double slo_ttft_s, slo_tpot_s, slo_e2e_s;

	struct wl_config wl;
	bool wl_trace_default;		/* the bundled excerpt */

	struct sim_pd_config pd;	/* disaggregation: (off: every replica
					 * colocated) */

	struct sim_offload_config offload;	/* KV offload (above) */

	struct sim_knobs_config knobs;	/* issue 20 knobs (runcfg_knobs.h) */

	struct sim_nsamp_config nsamp;	/* parallel sampling (n > 1) */

	struct sim_lora_config lora;	/* LoRA adapters (sim/lora.h) */

	struct sim_spec_config spec;	/* speculative decoding (above) */
};

/* Defaults (the embedded default run).  Release with sim_config_release. */
void sim_config_init(struct sim_config *c);
void sim_config_release(struct sim_config *c);

/* The bundled trace excerpt's path (under cat_datadir()). */
#define SIM_DEFAULT_TRACE "azure_llm_2023_conv_excerpt.csv"

/*
 * Read a YAML file over c.  KV_OK, or KV_EINVAL with "FILE:LINE:COL: what"
 * in err, KV_ENOENT if it cannot be read.
 */
kv_err sim_config_load(struct sim_config *c, const char *path, char *err,
		       size_t errlen);

/* Apply one "a.b=c" override. */
kv_err sim_config_set(struct sim_config *c, const char *assign, char *err,
		      size_t errlen);

/*
 * The usual sequence in one call: init c, load file (NULL: the embedded
 * default), apply sets[0..n) in order, finish.  On failure the message is
 * in err ("FILE:LINE:COL: ..." or "--set ...: ...", ready to print) and c
 * must still be released.
 */
kv_err sim_config_from_args(struct sim_config *c, const char *file,
			    const char *const *sets, size_t n, char *err,
			    size_t errlen);

/* Whether `seed` is a value the seed key takes, as --seed gave it: KV_OK,
 * or KV_EINVAL with the message, which names "--seed SEED". */
kv_err sim_config_check_seed(const char *seed, char *err, size_t errlen);

/* Resolve the workload trace default (after all overrides). */
kv_err sim_config_finish(struct sim_config *c, char *err, size_t errlen);

/* Where key ("model", "gpu", "policy") got its value: "FILE:LINE:COL",
 * "--set ...", or the configuration's source when neither is known. */
const char *sim_config_where(const struct sim_config *c, const char *key);

const char *sim_router_name(enum sim_router r);

/*
 * Write the resolved configuration as YAML that sim_config_load reads
 * back; sr (may be NULL) supplies the values the sizing resolved.
 */
void sim_config_write(const struct sim_config *c, const struct sz_result *sr,
		      FILE *f);

/*
 * *digest = 64-bit FNV-1a of sim_config_write's text less its comment
 * lines (the first names the file the configuration was read from: the
 * same configuration read from another place has the same digest).  The
 * run id is its last 12 hex digits.  KV_OK or KV_ENOMEM.
 */
kv_err sim_config_digest(const struct sim_config *c,
			 const struct sz_result *sr, uint64_t *digest);

#endif
