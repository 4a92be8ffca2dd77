/*
 * pd.h -- prefill/decode disaggregation in a run (docs/pd.md): replicas
 * 0..P-1 prefill, P..P+D-1 decode.  An arrival goes to a prefill replica
 * with one output token; its blocks are held when it finishes
 * (NixlConnector's delay_free_blocks); the request then goes to a decode
 * replica, whose connector offers the prompt's KV (the scheduler leaves
 * the last token to compute) and starts its transfer when the blocks are
 * allocated; at the transfer's end the decode side's load is done and
 * the prefill side's blocks are freed.  One transfer at a time per
 * decode replica (a FIFO on its link), each taking latency + bytes /
 * bandwidth.  The decode replica's row is the request's, with the
 * client's arrival; the prefill replica's is dropped.
 *
 * Memory: one record per request between its arrival and its end, and a
 * slot number per request a replica was ever given (as the replica's own
 * handle table).
 */
#ifndef SIM_PD_H
#define SIM_PD_H

#include "core/kvsched.h"
#include "sim/engine.h"
#include "sim/pdcfg.h"
#include "sim/replica.h"
#include "sim/runcfg.h"
#include "workloads/wl.h"

#include <stdbool.h>
#include <stdint.h>

/* The run's event kinds for P/D (arg: the request's record). */
#define SIM_EV_PD_HANDOFF (SIM_EV_USER + 1)	/* reaches the decode pool */
#define SIM_EV_PD_XFER (SIM_EV_USER + 2)	/* a transfer ends */
#define SIM_EV_PD_EXPIRE (SIM_EV_USER + 3)	/* a hold times out */

typedef struct sim_pd sim_pd;

/* One pool as the transfers see it. */
struct sim_pd_side {
	uint32_t replicas, tp, block_size;
	uint64_t block_bytes;	/* one block id on one rank (cost.h) */
	enum sim_router router;
};

/* What the run lends (borrowed for the run's life). */
struct sim_pd_env {
	replica **rp;
	struct sim_evq *q;
	const struct sim_observer *obs;
	void *ctx;
	/* the replica of [base, base + n) router picks for r */
	uint32_t (*route)(void *ctx, const struct wl_request *r,
			  uint32_t base, uint32_t n, enum sim_router router,
			  uint64_t *rr);
	/* replica i was given a request at now: wake it when due */
	kv_err (*added)(void *ctx, uint32_t i, int64_t now);
	/* replica i may have work: wake it now */
	kv_err (*wake)(void *ctx, uint32_t i, int64_t now);
};

sim_pd *sim_pd_new(const struct sim_pd_side side[2],
		   const struct sim_link *link, double timeout_s,
		   const struct sim_pd_env *env, char *why, size_t whylen);
void sim_pd_free(sim_pd *pd);

/* The row hook every replica takes (replica_cfg.rowh). */
const struct replica_row_hook *sim_pd_row_hook(sim_pd *pd);

/* Attach the connectors (after the replicas exist). */
kv_err sim_pd_attach(sim_pd *pd, char *why, size_t whylen);

/* The run's clock before each replica_begin and replica_end. */
void sim_pd_now(sim_pd *pd, int64_t now);

/*
 * An arrival: route it to a prefill replica and add it there with one
 * output token.  *replica: where; *rejected as replica_add's.
 */
kv_err sim_pd_add(sim_pd *pd, const struct wl_request *r, uint32_t *replica,
		  bool *rejected, char *why, size_t whylen);

/* One of the SIM_EV_PD_* events. */
kv_err sim_pd_event(sim_pd *pd, const struct sim_ev *ev, char *why,
		    size_t whylen);

/* Requests handed between pools, transfers done, bytes moved. */
void sim_pd_counts(const sim_pd *pd, uint64_t *handoffs,
		   uint64_t *transfers, uint64_t *bytes);

#endif
