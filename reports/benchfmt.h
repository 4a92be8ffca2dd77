/*
 * benchfmt.h -- a run's result in other benchmarks' vocabulary.
 *
 * `kvsim run --result-format vllm-bench,inference-perf` writes, beside
 * requests.csv and summary.csv:
 *
 *   vllm_bench.json: the JSON `vllm bench serve --save-result
 *     --save-detailed` writes (keys and units of vllm/benchmarks/serve.py:
 *     seconds for duration and the per-request lists, milliseconds for
 *     mean_/median_/std_/p99_ ttft, tpot, itl and e2el);
 *   inference_perf_summary.json: inference-perf's
 *     summary_lifecycle_metrics.json (seconds; its default percentiles
 *     0.1 ... 99.9).
 *
 * Both are computed from the run's requests.csv (one row per finished
 * request, in finish order) and the run's totals; docs/run.md lists every
 * key, how it is computed, and the keys left out because a simulation
 * does not know them.  Numbers are written in the fewest digits (up to
 * 17) that read back bit for bit, so the same run gives the same bytes.
 */
#ifndef REPORTS_BENCHFMT_H
#define REPORTS_BENCHFMT_H

#include "core/kvcore.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum bench_format {
	BENCH_VLLM = 1u << 0,		/* vllm_bench.json */
	BENCH_INFERENCE_PERF = 1u << 1	/* inference_perf_summary.json */
};

/* What the writers take besides requests.csv (the run's totals). */
struct bench_info {
	const char *model;
	uint64_t requests;	/* arrived */
	int64_t duration_ns;	/* first arrival .. last event */
	bool have_slo;		/* slo.* set: goodput is known */
	uint64_t good;		/* requests meeting the SLOs */
	/* every inter-token gap of the run, from reports/rpt.h's histogram
	 * (within 0.4 %); the mean is computed exactly from requests.csv */
	double itl_p50_s, itl_p99_s;
};

/*
 * "vllm-bench", "inference-perf" or both, comma-separated, into a mask of
 * enum bench_format.  false on an unknown name (with `err` saying so).
 */
bool bench_format_parse(const char *list, unsigned *mask, char *err,
    size_t errlen);

/* The file name a format is written to in --out. */
const char *bench_format_file(enum bench_format f);

/*
 * Read requests.csv from `reqs` (from its start) and write format `fmt`
 * to `out`.  KV_OK; KV_EINVAL with `err` for a requests.csv that does not
 * read, KV_ENOMEM; KV_EINVAL "write error" when `out` fails.
 */
kv_err bench_write(enum bench_format fmt, FILE *reqs,
    const struct bench_info *bi, FILE *out, char *err, size_t errlen);

#endif
