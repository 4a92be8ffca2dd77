/*
 * lora.h -- LoRA adapters in `kvsim run`: the configuration (engine keys
 * enable_lora, max_loras, max_lora_rank, max_cpu_loras; kvsim's lora:
 * load_gbps, disk_gbps), an adapter's size from the model, and a
 * replica's adapter caches (GPU slots and the CPU LRU) whose misses cost
 * load time in the step that first needs the adapter.  docs/lora.md.
 */
#ifndef SIM_LORA_H
#define SIM_LORA_H

#include "core/kvcore.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct cat_model;

/* vLLM's LoRAConfig and kvsim's load model. */
struct sim_lora_config {
	bool enable;		/* engine.enable_lora */
	int64_t max_loras;	/* adapters in one batch (1) */
	int64_t max_lora_rank;	/* 1, 8, 16 (default), ... 512 */
	int64_t max_cpu_loras;	/* adapters the CPU cache holds; -1:
				 * max_loras */
	double load_gbps;	/* host to GPU, GB/s; -1: the GPU's host
				 * link (cost model) */
	double disk_gbps;	/* disk to host, GB/s (3) */
};

void sim_lora_config_init(struct sim_lora_config *c);
/*
 * Set key (engine.enable_lora, engine.max_loras, engine.max_lora_rank,
 * engine.max_cpu_loras, lora.load_gbps, lora.disk_gbps) from text v;
 * "null" restores the default.  KV_ENOTSUP: not one of these keys;
 * KV_ECONFIG: a bad value, what says what is expected.
 */
kv_err sim_lora_set_key(struct sim_lora_config *c, const char *key,
			const char *v, char *what, size_t whatlen);
bool sim_lora_is_key(const char *key);
/* Whole-configuration checks (max_cpu_loras >= max_loras); KV_ECONFIG. */
kv_err sim_lora_check(const struct sim_lora_config *c, char *what,
		      size_t whatlen);
/* The engine block's lines, and the lora: section; nothing when off. */
void sim_lora_write_engine(const struct sim_lora_config *c, FILE *f);
void sim_lora_write_section(const struct sim_lora_config *c, FILE *f);

/* What a replica needs: sizes and rates resolved for a model and GPU. */
struct sim_lora_setup {
	uint32_t max_loras, max_cpu, rank;
	double bytes;		/* one adapter at max_lora_rank, per GPU */
	double flops_token;	/* shrink + expand FLOPs per token, per GPU */
	double load_bps, disk_bps;	/* bytes/s */
};

/*
 * The adapter of rank r on the dense linear layers vLLM targets (qkv,
 * o, gate_up, down): r * (in + out) weights per layer and module, in
 * the model's dtype, split over tp GPUs.
 */
void sim_lora_setup_make(const struct sim_lora_config *c,
			 const struct cat_model *m, uint32_t tp,
			 double host_bw, struct sim_lora_setup *out);

/* A replica's adapter caches: GPU slots (max_loras) and the CPU LRU. */
struct sim_lora_cache {
	const struct sim_lora_setup *su;
	uint32_t *gpu, *cpu;	/* adapter ids, 0 free */
	uint64_t *gpu_t, *cpu_t;	/* last use */
	uint64_t clock;
	uint64_t loads, disk_loads;
	int64_t load_ns;
};

kv_err sim_lora_cache_init(struct sim_lora_cache *lc,
			   const struct sim_lora_setup *su);
void sim_lora_cache_release(struct sim_lora_cache *lc);
/*
 * A step runs adapters ids[0..n) (distinct, not 0, n <= max_loras):
 * each one not in a GPU slot is copied into the least recently used
 * slot the step does not use, read from disk first when the CPU cache
 * lacks it (then kept there, evicting its least recently used entry the
 * step does not use).  Returns the time those loads take.
 */
int64_t sim_lora_cache_step(struct sim_lora_cache *lc, const uint32_t *ids,
			    uint32_t n);

#endif /* SIM_LORA_H */
