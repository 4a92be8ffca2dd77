/*
 * run.h -- one simulation run as a library call: what `kvsim run` does
 * between reading its configuration and writing its reports, reusable by
 * `kvsim capacity` (many runs in one process), `kvsim validate` (a run
 * with a device backend watching every block operation) and the tests.
 *
 *   sim_run *R;
 *   char err[SIM_RUN_ERRLEN];
 *   kv_err e = sim_run_open(&R, &cfg, &opts, err, sizeof(err));
 *   if (e == KV_OK) e = sim_run_exec(R, err, sizeof(err));   the event loop
 *   if (e != KV_OK) report err; a command exits 2 for KV_EINVAL, else 1
 *   ... sim_run_totals(R), sim_run_report(R) ...
 *   sim_run_close(R);
 *
 * The library prints nothing for the user and never exits.  A failure is a
 * kv_err with one line in the caller's err (no newline): "PROG: what"
 * (PROG is opts.prog) or "FILE:LINE:COL: what".  KV_EINVAL: bad input (the
 * configuration, a catalog, the trace, the sizing); a command exits 2.  Any
 * other code: the run could not finish (KV_ENOMEM; KV_ESTATE: a replica
 * stalled or failed, an observer or --check stopped it, an output could not
 * be written); a command exits 1.  What a run says along the way goes to
 * the streams in its options: vLLM's startup lines to opts.log, warnings
 * and progress to opts.diag (the command line passes stdout and stderr).
 */
#ifndef SIM_RUN_H
#define SIM_RUN_H

#include "core/kvsched.h"
#include "core/kvoffload.h"
#include "reports/rpt.h"
#include "sim/cost.h"
#include "sim/runcfg.h"
#include "sim/model/sizing.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Watches the block operations of every step of every replica (a device
 * backend in `kvsim validate`).  Each hook may be NULL; a hook returning
 * non-zero stops the run with its message in why (exit 1).
 *
 * scheduled: right after kvs_schedule() of a step that runs.  The
 *   allocator (kvs_kv(s)) holds the step's block tables; st has the batch
 *   (sched[i].ntokens tokens computed for request sched[i].req, starting at
 *   position start[i]), the preemptions, and the swap-out, swap-in and
 *   copy-on-write pairs, which the engine performs before the forward
 *   pass in that order (swap-out, swap-in, CoW).
 * computed: the forward pass is over (the step's time has elapsed), just
 *   before kvs_complete().  The positions start[i] .. start[i]+ntokens-1
 *   of each scheduled request now hold KV data.  Requests whose last
 *   output token this is are still allocated here.
 * completed: after kvs_complete(); st->finish lists the requests that
 *   finished (their blocks are already freed, except st->held's).
 * offload_xfer: an offload transfer started on the replica (kvoffload.h;
 *   stores after the step's compute, loads at admission); its pairs are
 *   valid during the call.
 * kv_transfer: a disaggregated run moves request src_req's KV from
 *   replica src (prefill) into dst_req's blocks on replica dst (decode):
 *   pairs are (src block > dst block), device-relative, in position order.
 */
struct sim_observer {
	void *ctx;
	int (*scheduled)(void *ctx, uint32_t replica, kvs *s,
			 const struct kvs_step *st, const uint32_t *start,
			 int64_t now, char *why, size_t whylen);
	int (*computed)(void *ctx, uint32_t replica, kvs *s,
			const struct kvs_step *st, const uint32_t *start,
			int64_t now, char *why, size_t whylen);
	int (*completed)(void *ctx, uint32_t replica, kvs *s,
			 const struct kvs_step *st, int64_t now, char *why,
			 size_t whylen);
	int (*offload_xfer)(void *ctx, uint32_t replica, kvs *s,
			    const struct kvo_xfer *x, int64_t now, char *why,
			    size_t whylen);
	int (*kv_transfer)(void *ctx, uint32_t src, kvs *src_s,
			   kvs_req src_req, uint32_t dst, kvs *dst_s,
			   kvs_req dst_req, const struct kvc_pair *pairs,
			   uint32_t npairs, int64_t now, char *why,
			   size_t whylen);
};

/*
 * Stop a run early once an SLO on a latency quantile is certainly missed
 * (`kvsim capacity`): with at most n_max requests completing, the
 * p-quantile (linear interpolation between order statistics, as
 * rpt_quantile) exceeds T as soon as n_max - floor(p (n_max - 1))
 * requests are known to exceed T -- finished ones, and unfinished ones
 * that have waited longer than T for their first token (TTFT), to be
 * scheduled at all (queueing delay) or to finish (E2E).  Checked at every
 * timeseries interval, for each watch; any one certainly missed stops the
 * run.  nwatch = 0: off.
 */
enum sim_watch_metric { SIM_W_TTFT = 0, SIM_W_QUEUE, SIM_W_E2E, SIM_W_N };

#define SIM_MAX_WATCH 8

struct sim_watch {
	enum sim_watch_metric metric;
	double p;			/* the quantile, in [0, 1] */
	double limit_s;
};

struct sim_stop {
	struct sim_watch w[SIM_MAX_WATCH];
	size_t nwatch;
	uint64_t n_max;
};

struct sim_run_opts {
	const char *prog;		/* message prefix, "kvsim run" */
	bool check;			/* audits after every half step */
	/*
	 * The expensive check level: the invariants of every replica
	 * (replica_check), the request stream (wl_stream_check) and the
	 * report (rpt_check) after each of the first SIM_CHECK_DENSE events,
	 * then after every SIM_CHECK_DENSE-th, and at the end.  A broken one
	 * fails the run (KV_ESTATE, naming the module and the invariant's
	 * number in its header).  Outputs are unchanged.
	 */
	bool invariants;
	/*
	 * Single steps only: no fast-forward of steady decode (replica.h
	 * replica_ff, docs/fastforward.md).  The outputs are the same
	 * either way but for sim_wall_s.
	 */
	bool no_fast_forward;
	/*
	 * Every prompt by its token ids: none by key (kvs_add_keyed, for
	 * prompts that share no block).  The outputs are the same either way
	 * but for sim_wall_s (KVSIM_NO_KEYED=1).
	 */
	bool no_keyed;
	/*
	 * Spans take in no arrival (docs/fastforward.md, item 11): each ends
	 * before the next.  The outputs are the same either way but for
	 * sim_wall_s (KVSIM_NO_TAKE_IN=1).
	 */
	bool no_take_in;
	bool quiet;			/* no startup lines */
	bool progress;			/* progress, heartbeats on diag */
	/* startup lines (flushed after them, even when quiet); NULL: none */
	FILE *log;
	/* warnings, progress (a terminal gets one line redrawn); NULL:
	 * none */
	FILE *diag;
	const struct sim_observer *obs;	/* or NULL */
	struct sim_stop stop;
	/* terms set here replace those of cost.calibration (kvsim
	 * calibrate serving); borrowed until open returns; NULL: none */
	const struct cost_calib *calib;
};

typedef struct sim_run sim_run;

#define SIM_CHECK_DENSE 4096

/* How many times the invariants were checked (opts.invariants). */
uint64_t sim_run_invariant_checks(const sim_run *R);

/* How many steps the fast-forward made (replica_ff), of how many in all
 * (the replicas' steps). */
uint64_t sim_run_ff_steps(const sim_run *R, uint64_t *all);
/* The spans the fast-forward made (replica_ff calls that made steps),
 * *tails: those of them that left their last step in flight, *admits:
 * those whose last step admitted requests held for it. */
uint64_t sim_run_ff_spans(const sim_run *R, uint64_t *tails,
			  uint64_t *admits);
/* The steps made after the spans' tails (replica_span.ext), and
 * *caught: those of them ended at an arrival (replica_ff_catch). */
uint64_t sim_run_ff_ext(const sim_run *R, uint64_t *caught);
/* The arrivals the spans took in before their time (replica_span.arr),
 * of *all. */
uint64_t sim_run_ff_taken(const sim_run *R, uint64_t *all);
/* The spans' steps that admitted requests held for them, and *past:
 * those of them the span went on past (the others ended their span). */
uint64_t sim_run_ff_adm(const sim_run *R, uint64_t *past);
/* Timeseries rows written from inside a span (replica_rows), of *all. */
uint64_t sim_run_ff_rows(const sim_run *R, uint64_t *all);
/* Requests added by key (kvs_add_keyed), of *all added. */
uint64_t sim_run_keyed(const sim_run *R, uint64_t *all);

/* Room for any message of sim_run_open and sim_run_exec. */
#define SIM_RUN_ERRLEN 4096

/*
 * Resolve the configuration (catalogs, sizing, cost model, replicas,
 * workload).  cfg is copied (the caller keeps its own).  Writes vLLM's
 * startup lines to opts.log unless quiet.  KV_OK, or an error of the head
 * comment with its message in err.  On failure *out may still be set:
 * close it.
 */
kv_err sim_run_open(sim_run **out, const struct sim_config *cfg,
		    const struct sim_run_opts *o, char *err, size_t errlen);

/*
 * Whether cfg names a model, GPU and policy kvsim can run (what
 * sim_run_open checks first), without opening a run: for commands that
 * check every configuration before running any (sweep, compare --suite).
 * KV_OK; KV_EINVAL with "KEY: what" in err and *key the key at fault
 * ("model", "gpu", "policy"; "" when the catalog or a config.json itself
 * is bad).
 */
kv_err sim_run_check_names(const struct sim_config *cfg, const char **key,
			   char *err, size_t errlen);

/*
 * Where the rows go, before exec (each may be NULL: not written):
 * requests.csv and timeseries.csv rows, and a Chrome trace-event JSON of
 * every step and request (sim/ctrace.h).  The files stay the caller's.
 */
void sim_run_outputs(sim_run *R, FILE *requests, FILE *timeseries,
		     FILE *chrome_trace);

/* Run the event loop to the end of the workload (or an early stop).
 * KV_OK, or an error of the head comment with its message in err. */
kv_err sim_run_exec(sim_run *R, char *err, size_t errlen);

/* The run stopped early: its SLO (opts.stop) is certainly missed. */
bool sim_run_stopped(const sim_run *R);

/* After exec: totals (sim_wall_s is the open..exec wall time). */
const struct rpt_totals *sim_run_totals(const sim_run *R);
/* Requests that asked for parallel sampling (n > 1). */
uint64_t sim_run_parallel_requests(const sim_run *R);
/* Whether they ran as n child requests each (engine.parallel_sampling);
 * false: each as one sequence (a disaggregated run). */
bool sim_run_parallel_fanout(const sim_run *R);
/* Whether they ran as one group of sequences forked after the prompt
 * each (engine.parallel_sampling fork, policy vllm-v0). */
bool sim_run_parallel_fork(const sim_run *R);
/* The workload stream's counts (rows skipped, requests filtered out...),
 * NULL before the run has opened it. */
const struct wl_counts *sim_run_wl_counts(const sim_run *R);
rpt *sim_run_report(sim_run *R);
const struct sz_result *sim_run_sizing(const sim_run *R);
const struct cost_model *sim_run_cost(const sim_run *R);
const struct sim_config *sim_run_config(const sim_run *R);
const char *sim_run_id(const sim_run *R);	/* 12 hex digits */
const char *sim_run_model(const sim_run *R);	/* catalog ids */
const char *sim_run_gpu(const sim_run *R);
/* One GPU's price, USD an hour: cost.gpu_usd_per_hour, else the
 * catalog's; 0 unknown. */
double sim_run_gpu_usd_per_hour(const sim_run *R);
uint32_t sim_run_nreplicas(const sim_run *R);
/*
 * The deployment's GPUs: replicas x tensor parallel size, summed over
 * the pools of a disaggregated run; and what they cost, USD an hour (each
 * pool's GPUs at sim_run_gpu_usd_per_hour's price of its GPU; 0 when a
 * price is unknown).
 */
uint32_t sim_run_gpus(const sim_run *R);
double sim_run_usd_per_hour(const sim_run *R);

/*
 * groups.csv: one row per KV cache group (one for a plain model): kind,
 * block size, window, blocks, usage mean (time-weighted) and max.
 */
int sim_run_groups_write(const sim_run *R, FILE *f);

/*
 * Benchmark clients (workload.max_concurrency, timeout_s, inference-perf
 * stages): the most requests in flight at once (counted only when one of
 * them is on), the requests that failed at their timeout, and whether the
 * workload has stages (summary_stages.csv: rpt_stages_write).
 */
uint64_t sim_run_max_inflight(const sim_run *R);
uint64_t sim_run_failed(const sim_run *R);
bool sim_run_has_stages(const sim_run *R);

/*
 * The calibration file the run's cost model took its terms from (after
 * sim_run_open), or NULL for the defaults; *chosen says whether kvsim
 * chose it for the GPU and vLLM version (cost.calibration unset).
 */
const char *sim_run_calibration(const sim_run *R, bool *chosen);

void sim_run_close(sim_run *R);

#endif
