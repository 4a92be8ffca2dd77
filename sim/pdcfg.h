/*
 * pdcfg.h -- the `disaggregation:` section of a run's configuration
 * (prefill/decode pools, docs/pd.md) and the link catalog
 * (data/links.yaml).  Internal to sim/: runcfg.c reads and writes the
 * section through these calls; run.c and pd.c resolve it.
 *
 *   disaggregation:
 *     link: ib-ndr-400              # data/links.yaml
 *     kv_transfer_timeout_s: 480    # VLLM_NIXL_ABORT_REQUEST_TIMEOUT
 *     prefill: {replicas: 1, gpu: h100-sxm, tensor_parallel_size: 1,
 *               router: round-robin, engine: {max_num_seqs: 64}}
 *     decode:  {...}
 *
 * A pool key left out takes the top-level value (replicas, gpu,
 * engine.tensor_parallel_size, router, every engine key).  Bad values:
 * "FILE:LINE:COL: what" (or "--set KEY=VALUE: what"), KV_EINVAL.
 */
#ifndef SIM_PDCFG_H
#define SIM_PDCFG_H

#include "core/kvcore.h"
#include "sim/runcfg.h"
#include "util/ydoc.h"

#include <stdio.h>

enum { SIM_PD_PREFILL = 0, SIM_PD_DECODE = 1 };

/* The default link and the prefill side's hold timeout (vLLM's
 * VLLM_NIXL_ABORT_REQUEST_TIMEOUT default, seconds). */
#define SIM_PD_LINK_DEFAULT "ib-ndr-400"
#define SIM_PD_TIMEOUT_DEFAULT 480.0

const char *sim_pd_pool_name(int pool);

/* The `disaggregation:` mapping vn of file. */
kv_err sim_pd_load(struct sim_config *c, const struct yd_node *vn,
		   const char *file, char *err, size_t errlen);

/* --set disaggregation.KEY=v (key without the "disaggregation."). */
kv_err sim_pd_set(struct sim_config *c, const char *key, const char *v,
		  const char *where, char *err, size_t errlen);

/* The section as YAML that sim_pd_load reads back; nothing when off. */
void sim_pd_write(const struct sim_config *c, FILE *f);

/*
 * The configuration pool `pool` runs with: *out = *c (shallow: the
 * workload stays c's, never release out) with the pool's gpu, tensor
 * parallel size, router and engine keys applied.
 */
kv_err sim_pd_pool_config(const struct sim_config *c, int pool,
			  struct sim_config *out, char *err, size_t errlen);

/* A link of data/links.yaml: GB/s each way and a one-way latency. */
struct sim_link {
	char id[64];
	double gbps;		/* GB/s (1e9 bytes/s) each way, per GPU */
	double latency_us;
};

/*
 * Link `id` of DIR/links.yaml (dir NULL: cat_datadir()).  KV_OK;
 * KV_EINVAL "FILE:LINE:COL: what" for a bad file or "WHERE: unknown link"
 * (where: the configuration's place of the name); KV_ENOENT unreadable.
 */
kv_err sim_link_find(const char *dir, const char *id, const char *where,
		     struct sim_link *out, char *err, size_t errlen);

/* Every link of the catalog, for `kvsim catalog`: *out malloc'ed. */
kv_err sim_link_list(const char *dir, struct sim_link **out, size_t *n,
		     char *err, size_t errlen);

/* runcfg.c's number parsers: v in [lo, hi], all of it. */
bool sim_config_parse_u64(const char *v, uint64_t lo, uint64_t hi,
			  uint64_t *out);
bool sim_config_parse_dbl(const char *v, double lo, double hi, double *out);

/* runcfg.c's setter of one scalar key (validation of pool overrides). */
kv_err sim_config_set_key(struct sim_config *c, const char *key,
			  const char *v, const char *where, char *err,
			  size_t errlen);

#endif
