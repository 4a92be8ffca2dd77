/*
 * tiers.h -- the KV tier catalog (data/tiers.yaml): the media below the
 * GPU that KV offload uses, with their bandwidth and latency, and the
 * time of a transfer on one.
 *
 * A medium with `link: host` is the GPU's host link: its transfers are
 * timed with the cost model's swap copy (cost_swap_ns), so that a CPU-tier
 * store or load of N blocks costs what a swap of N blocks costs.  The
 * others: latency + bytes / bandwidth, plus the host-link copy the bytes
 * also make (H2D after a load, D2H before a store).
 */
#ifndef SIM_TIERS_H
#define SIM_TIERS_H

#include "core/kvcore.h"
#include "sim/cost.h"
#include "sim/runcfg.h"

#include <stdbool.h>
#include <stdint.h>

struct sim_tier {
	char id[32];			/* "cpu-dram" */
	char tier[16];			/* the kvo tier: cpu, disk, remote */
	bool host;			/* link: host (no override) */
	double read_gbps, write_gbps, latency_us;
};

struct sim_tiers {
	struct sim_tier m[SIM_TIER_NMEDIA];	/* enum sim_tier_medium */
};

/*
 * Load DIR/tiers.yaml (dir NULL: cat_datadir()) and apply the run's
 * overrides (o->tier).  KV_OK; KV_EINVAL or KV_ENOENT with
 * "FILE:LINE:COL: what" (or "FILE: what") in err.
 */
kv_err sim_tiers_load(struct sim_tiers *t, const char *dir,
		      const struct sim_offload_config *o, char *err,
		      size_t errlen);

/* The medium backing kvo tier name ("cpu", "disk", "remote"), or NULL. */
const struct sim_tier *sim_tiers_find(const struct sim_tiers *t,
				      const char *tier);

/*
 * Nanoseconds to move nblocks GPU blocks (bytes: their size on every
 * rank) to (store) or from (load) the medium, with cm's host link and
 * the GPU's KV layout `layout` (its chunks a block).
 */
int64_t sim_tier_xfer_ns(const struct sim_tier *m,
			 const struct cost_model *cm, enum cost_layout layout,
			 bool store, uint64_t nblocks, uint64_t bytes);

#endif
