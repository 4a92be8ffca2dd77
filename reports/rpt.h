/*
 * rpt.h -- run metrics and the CSV reports of `kvsim run`.
 *
 * The simulator hands over one struct rpt_req per request as it finishes
 * (milestones in integer ns) and one struct rpt_sample per timeseries
 * interval; rpt writes requests.csv and timeseries.csv rows as they come
 * (streaming: nothing per token is kept) and keeps only the per-request
 * latencies it needs for quantiles (TTFT, TPOT, E2E, queueing delay: four
 * doubles a request).  At the end rpt_summary_write() sorts them and takes
 * the quantiles with GSL (gsl_stats_quantile_from_sorted_data: linear
 * interpolation between order statistics, the same as numpy's default):
 * exact, whatever the run's size (10^6 requests: 32 MB).
 *
 * Inter-token latencies are one sample per generated token -- 10^8 and
 * more in a long run -- so they go to a log-bucketed histogram instead:
 * gaps under 256 ns exactly, larger ones in buckets 1/128 of a power of
 * two wide, read at their midpoints; a quantile is then within 0.4% of
 * the exact one (relative), in 59 KB whatever the count.
 *
 * Definitions (docs/ecosystem.md §5.1; docs/run.md):
 *   TTFT  = first token - arrival
 *   TPOT  = (finish - first token) / (output tokens - 1), requests with at
 *           least two output tokens only
 *   ITL   = the gap between consecutive output tokens (mean and max over
 *           all gaps; not kept per token)
 *   E2E   = finish - arrival
 *   queue = first scheduled - arrival
 *
 * Number formatting is fixed ("%.9f" for seconds, exact for integer ns), so
 * the same inputs give byte-identical files.  Errors: the int calls
 * return 0, or -1 on a write error (ferror) or out of memory; nothing here
 * prints or exits.
 */
#ifndef REPORTS_RPT_H
#define REPORTS_RPT_H

#include "core/kvcore.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* KV offload tiers a run reports on (rpt_set_offload). */
#define RPT_MAX_TIERS 3

/* One finished request. */
struct rpt_req {
	uint64_t id;			/* workload request id */
	uint32_t replica;
	int64_t arrival_ns, first_scheduled_ns, first_token_ns, finish_ns;
	uint32_t input_tokens, output_tokens;
	uint32_t cached_prefix_tokens;	/* prefix-cache hit at first admission */
	uint32_t preemptions;
	uint64_t recomputed_tokens;
	uint64_t swapped_out_blocks;
	uint64_t swapped_out_bytes;
	int64_t itl_sum_ns, itl_max_ns;	/* over output_tokens - 1 gaps */
	uint32_t stage;			/* load stage (rpt_set_client) */
	/* the client gave up on it (a timeout) at finish_ns: counted as
	 * failed, in no latency metric; first_scheduled_ns and
	 * first_token_ns are -1 when it never got that far */
	bool failed;
	/* the API server: client arrival to the engine, and the last
	 * token's engine time to the client (0 without one) */
	int64_t frontend_in_ns, frontend_out_ns;
	/* a disaggregated run (rpt_set_pd): the prefill and decode
	 * replicas, the KV transfer's time and bytes, and the decode side's
	 * wait from reaching its engine to the transfer's start */
	uint32_t prefill_replica, decode_replica;
	int64_t kv_transfer_ns, decode_queue_ns;
	uint64_t kv_transfer_bytes;
	/* KV offload (rpt_set_offload): prompt tokens loaded from each tier
	 * at admission, and the time its loads took */
	uint64_t offload_hit_tokens[RPT_MAX_TIERS];
	int64_t offload_load_ns;
	/* parallel sampling: 0 or 1, one sequence; n > 1, the row of a
	 * request whose n samples ran (docs/metrics.md): its tokens are all
	 * samples', its TPOT and ITL over output_tokens - n gaps */
	uint32_t samples;

	uint32_t lora;			/* LoRA adapter (rpt_set_lora); 0 */

	/* speculative decoding (rpt_set_spec): draft tokens verified and
	 * of them accepted */
	uint64_t spec_draft_tokens, spec_accepted_tokens;
};

/* One timeseries row: the state at t_ns and rates over the interval. */
struct rpt_sample {
	int64_t t_ns;
	uint64_t running, waiting, swapped;
	uint64_t kv_blocks_used, kv_blocks_total;
	uint64_t kv_frag_internal_tokens;
	double prefix_hit_rate;		/* cumulative */
	double prompt_tok_s, gen_tok_s;	/* over the interval */
	uint64_t preemptions_cum;
	uint64_t offload_used_blocks[RPT_MAX_TIERS];	/* per tier */
};

/* Run totals and settings the simulator fills for the summary. */
struct rpt_totals {
	const char *run_id, *model, *gpu, *policy, *router, *trace;
	const char *calibration;	/* its file's name, or NULL: none */
	uint32_t tp, block_size, replicas;
	uint64_t seed;
	uint64_t requests;		/* arrived */
	uint64_t rejected;		/* can never fit */
	int64_t duration_ns;		/* first arrival .. last event */
	uint64_t preemptions, recomputed_tokens;
	uint64_t swap_out_blocks, swap_in_blocks, cow_blocks;
	double kv_usage_mean, kv_usage_max;	/* time-weighted mean */
	double frag_internal_mean;	/* mean over steps, fraction of the
					 * allocated slots left empty */
	uint64_t prefix_hit_tokens, prompt_tokens_admitted;
	uint64_t stale_cached_tokens;	/* taken as cached, not in the cache */
	uint64_t num_gpu_blocks, kv_cache_tokens;
	double max_concurrency;
	uint64_t steps, events;
	double sim_wall_s;
	uint64_t block_bytes;		/* one KV block id: every paged
					 * layer, or one group's layers
					 * (sim/cost.h) */
	double slo_ttft_s, slo_tpot_s, slo_e2e_s;	/* goodput; 0 none */
	bool stopped;			/* stopped early (SLO missed) */
	uint64_t max_running;		/* most requests in one replica's
					 * step */
	/* KV offload, per tier (rpt_set_offload): prompt tokens loaded,
	 * bytes loaded and stored, blocks evicted */
	struct rpt_tier_totals {
		uint64_t hit_tokens, load_bytes, store_bytes, evicted_blocks;
	} offload[RPT_MAX_TIERS];
	/* a disaggregated run's pools (rpt_set_pd), or NULL */
	const struct rpt_pd_pools *pd;
	/* parallel sampling: requests that asked for n > 1 samples and
	 * their samples (summary.csv columns only when there are any) */
	uint64_t parallel_requests, parallel_samples;

	/* LoRA (rpt_set_lora): adapters requested, GPU loads, their time */
	uint64_t lora_adapters, lora_loads;
	int64_t lora_load_ns;

	/* speculative decoding (rpt_set_spec): draft tokens verified, of
	 * them accepted, and verifies (request-steps with drafts) */
	uint64_t spec_drafts, spec_accepted, spec_verifies;
};

/* The pools of a disaggregated run, for summary.csv (rpt_set_pd). */
struct rpt_pd_pool {
	const char *gpu;
	uint32_t replicas, tp;
	double utilization;	/* busy time / (duration * replicas) */
};

struct rpt_pd_pools {
	struct rpt_pd_pool pool[2];	/* prefill, decode */
};

typedef struct rpt rpt;

/*
 * A collector writing requests.csv rows to `reqs` and timeseries rows to
 * `ts` (either may be NULL: not written).  The files stay the caller's.
 * run_id is copied.  NULL on out of memory.
 */
rpt *rpt_new(const char *run_id, FILE *reqs, FILE *ts);
void rpt_free(rpt *r);

/* Where rows go (before rpt_begin); either may be NULL. */
void rpt_set_files(rpt *r, FILE *reqs, FILE *ts);

/*
 * Per-request SLO thresholds in seconds (0: none) for goodput: a request
 * counts when it meets all of them.  Before the first request.
 */
void rpt_set_slo(rpt *r, double ttft_s, double tpot_s, double e2e_s);

/*
 * Benchmark clients (before rpt_begin): stages adds a `stage` column to
 * requests.csv and keeps a summary per stage (rpt_stages_write);
 * failures adds a `status` column (ok, failed) to requests.csv and a
 * `failed` column to summary.csv.  Off by default: the files keep
 * their columns.  -1 on out of memory.
 */
int rpt_set_client(rpt *r, bool stages, bool failures);
/*
 * KV offload (before rpt_begin): columns per tier, named names[i] ("cpu",
 * "disk", "remote"), appended at the end of each file: requests.csv
 * offload_hit_tokens_<tier>... and offload_load_s; summary.csv
 * offload_<tier>_hit_tokens, _load_bytes, _store_bytes, _evicted_blocks;
 * timeseries.csv offload_<tier>_used_blocks.  ntiers 0 (the default): no
 * columns.  -1 when ntiers > RPT_MAX_TIERS.
 */
int rpt_set_offload(rpt *r, uint32_t ntiers, const char *const *names);

/*
 * LoRA (before rpt_begin): requests.csv gains `lora` (the adapter id, 0
 * the base model) and summary.csv lora_adapters, lora_loads and
 * lora_load_s, at the end of each.  Off by default: no columns.
 */
void rpt_set_lora(rpt *r, bool on);

/*
 * Speculative decoding (before rpt_begin): requests.csv gains
 * spec_draft_tokens and spec_accepted_tokens, summary.csv
 * spec_acceptance_rate (accepted / drafts) and spec_mean_accepted_len
 * (1 + accepted / verifies), at the end of each.  Off by default.
 */
void rpt_set_spec(rpt *r, bool on);

/* Requests that failed (rpt_req.failed). */
uint64_t rpt_failed(const rpt *r);
/*
 * summary_stages.csv: one row per stage that had a request: its
 * requests completed and failed, its span (first arrival .. last end),
 * throughput, tokens, and the mean, p50, p90 and p99 of TTFT, TPOT and
 * E2E and the mean ITL over its completed requests.
 */
int rpt_stages_write(rpt *r, FILE *f);
/* The collector of stage s (its requests only), or NULL when the stage
 * had none or stages are off. */
const rpt *rpt_stage(const rpt *r, uint32_t s);

/* Write the two headers (once, before any row). */
int rpt_begin(rpt *r);

int rpt_add_request(rpt *r, const struct rpt_req *q);
int rpt_add_sample(rpt *r, const struct rpt_sample *s);

/* One inter-token gap (ns >= 0) into the ITL histogram. */
void rpt_add_itl(rpt *r, int64_t gap_ns);
/* n gaps of gap_ns each (rpt_add_itl n times). */
void rpt_add_itl_n(rpt *r, int64_t gap_ns, uint64_t n);

/*
 * Finished requests whose metric ("ttft", "tpot", "e2e", "queue") is
 * greater than x seconds.  O(1) when x is the value last asked for that
 * metric (kept up to date as requests come); O(requests) otherwise.
 */
uint64_t rpt_count_over(rpt *r, const char *metric, double x);

/* Completed requests so far, and their output tokens. */
uint64_t rpt_completed(const rpt *r);
uint64_t rpt_output_tokens(const rpt *r);

/*
 * Quantile p in [0, 1] of a metric ("ttft", "tpot", "e2e", "queue";
 * "itl" from the histogram, but for p = 1, its exact maximum) over the
 * requests so far; 0 when there are none.  Sorts the samples (cheap when
 * called again).  The mean: "itl" exactly, over every gap (summary.csv's
 * itl_mean_s).
 */
double rpt_quantile(rpt *r, const char *metric, double p);
double rpt_mean(const rpt *r, const char *metric);

/* summary.csv: header and one row.  The required columns of DESIGN.md come
 * first, in its order; extra columns follow. */
int rpt_summary_write(rpt *r, const struct rpt_totals *t, FILE *f);

/* Requests that met every SLO of rpt_set_slo (all, without one). */
uint64_t rpt_good(const rpt *r);

/* ITL histogram: 256 exact buckets, then 128 per power of two up to 2^62. */
#define RPT_ITL_EXACT 256
#define RPT_ITL_SUB 128

/*
 * The ITL histogram's bucket of a gap and the value it stands for (its
 * midpoint; exact under 256 ns).  Inline: a loop that adds a gap each
 * step keeps its numbers in registers (rpt_itl_hist).
 */
static inline size_t
rpt_itl_bucket(int64_t gap_ns)
{
	uint64_t v = gap_ns > 0 ? (uint64_t)gap_ns : 0;
	int msb;

	if (v < RPT_ITL_EXACT)
		return (size_t)v;
	msb = 63 - __builtin_clzll(v);
	return RPT_ITL_EXACT + (size_t)(msb - 8) * RPT_ITL_SUB +
	       (size_t)((v >> (msb - 7)) & (RPT_ITL_SUB - 1));
}
double rpt_itl_value(size_t bucket);

/*
 * rpt_add_itl_n's work for a loop of many gaps, without a call a gap:
 * h = rpt_itl_hist(r), then h[rpt_itl_bucket(gap)] += n for each gap,
 * then rpt_itl_counted(r, the n's sum) before anything else reads r.
 */
uint64_t *rpt_itl_hist(rpt *r);
void rpt_itl_counted(rpt *r, uint64_t n);

/*
 * The collector's invariants; rpt_check() returns 0 or the number of the
 * first one broken.  rpt keeps per-request samples, running sums and the
 * ITL histogram; admissions and arrivals are the simulator's (struct
 * rpt_totals), so they are not checked here.
 *
 *  1 RPT_INV_SAMPLES  the TTFT, E2E and queue vectors hold one sample per
 *                     completed request (an out-of-memory return from
 *                     rpt_add_request may leave them apart)
 *  2 RPT_INV_TPOT     TPOT samples (requests of 2+ output tokens) <=
 *                     completed
 *  3 RPT_INV_GOOD     requests meeting the SLOs <= completed
 *  4 RPT_INV_STORAGE  each vector: n <= capacity, storage present if n > 0
 *  5 RPT_INV_SORTED   a vector flagged sorted is in non-decreasing order
 *  6 RPT_INV_WATCH    rpt_count_over's cached count is the number of
 *                     samples above its threshold
 *  7 RPT_INV_HIST     the ITL histogram's buckets add up to its count
 *  8 RPT_INV_GAPS     each TPOT request gave 1 gap or more and 2 output
 *                     tokens or more: tpot <= gaps, gaps + tpot <= output
 *                     tokens
 *  9 RPT_INV_ITL      0 <= gap sum <= max gap x gaps; no gaps: sum and
 *                     max are 0
 * 10 RPT_INV_SUMS     each vector's running sum is a number >= 0 (no
 *                     latency is negative)
 *
 * Cost: O(samples + histogram buckets); for tests and expensive checks.
 */
enum rpt_invariant {
	RPT_INV_SAMPLES = 1,
	RPT_INV_TPOT,
	RPT_INV_GOOD,
	RPT_INV_STORAGE,
	RPT_INV_SORTED,
	RPT_INV_WATCH,
	RPT_INV_HIST,
	RPT_INV_GAPS,
	RPT_INV_ITL,
	RPT_INV_SUMS,
};

int rpt_check(const rpt *r);

/* A value in a CSV field: quoted if it holds a comma, quote or newline. */
void rpt_csv_field(FILE *f, const char *s);

/*
 * A disaggregated run (before rpt_begin): requests.csv gains
 * prefill_replica, decode_replica, kv_transfer_s, decode_queue_s;
 * summary.csv the pools' columns and the transfers' mean, p99 and bytes
 * (rpt_totals.pd).  Off by default: the files keep their columns.
 */
void rpt_set_pd(rpt *r, bool on);

#endif
