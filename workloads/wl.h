/*
 * wl.h -- workloads: request streams from real traces and synthetic
 * generators.
 *
 * A workload is a *stream* of requests in non-decreasing arrival order,
 * pulled one at a time with wl_stream_next().  Streams are iterators: their
 * memory does not grow with the length of the trace (a reader holds one
 * line, a generator its live sessions, a sort window its W rows).  The
 * request a call returns borrows the stream's buffers until the next call.
 *
 * A stream is built from a struct wl_config (defaults: wl_config_init();
 * the YAML `workload:` section: wl_config_from_yaml()) by wl_open().  The
 * pipeline is fixed:
 *
 *   source (trace reader | generator)
 *     -> order check or sort window      (trace only)
 *     -> window [start_s, end_s)          (times shifted so start_s is 0)
 *     -> length checks, filters and caps  (rejections counted)
 *     -> first max_requests
 *     -> time_scale / target_rate
 *     -> spread_bursts (each arrival at least F mean gaps after the last)
 *     -> tiling k times
 *
 * Prompt identity.  A request's prompt is a list of segments (key, length);
 * token i of a segment is wl_token(key, i, vocab).  Two prompts that share
 * leading segments therefore share leading token ids, whatever the block
 * size of the allocator that later hashes them (Mooncake hash ids become
 * 512-token segments).  When a trace carries explicit token ids
 * (LLMServingSim), `tokens` holds them and wins.  Same seed and config,
 * same stream, byte for byte.
 *
 * Errors.  Fallible calls return a wl_err (WL_OK is 0) and fill a
 * struct wl_error {file, line, col, what}; wl_error_format() renders
 * "FILE:LINE:COL: what".  A malformed row stops the stream unless
 * on_error is skip, in which case it is counted in struct wl_counts.
 */
#ifndef KVSIM_WL_H
#define KVSIM_WL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A node of a YAML document read by util/ydoc.h. */
struct yd_node;

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes, one X-macro table (wl_strerror). */
#define WL_ERRORS(X) \
	X(WL_OK, "ok") \
	X(WL_END, "end of stream") \
	X(WL_EINVAL, "invalid argument") \
	X(WL_ENOMEM, "out of memory") \
	X(WL_EIO, "input/output error") \
	X(WL_EPARSE, "malformed input") \
	X(WL_EFORMAT, "wrong or unknown trace format") \
	X(WL_EORDER, "timestamps out of order") \
	X(WL_EGZIP, "gzip input not supported") \
	X(WL_ECONFIG, "bad workload configuration")

typedef enum wl_err {
#define WL_X_ENUM(name, text) name,
	WL_ERRORS(WL_X_ENUM)
#undef WL_X_ENUM
} wl_err;

const char *wl_strerror(wl_err e);

/*
 * The horizon of simulated time: 10^18 ns (about 31.7 years).  A request
 * arriving later stops the stream with WL_ECONFIG (a rate, time_scale or
 * window that pushes arrivals there is a mistake, and the simulator's
 * int64 clock must keep room to run past the last arrival).
 */
#define WL_HORIZON_NS INT64_C(1000000000000000000)
/*
 * The most requests a generator bounded by its duration alone may be
 * expected to make, 2^44: a replica's scheduler holds 2^31 - 1, a run
 * (or each P/D pool, which every request passes through) has at most
 * 4,096 replicas, and at a few microseconds a request 2^44 would take
 * years.  More is refused as a mistake (a rate in the wrong
 * unit) that would otherwise run, or draw for target_rate, without end.
 */
#define WL_GEN_MOST 17592186044416.0

/* Where and what.  line/col are 1-based; 0 means unknown. */
struct wl_error {
	char file[512];
	uint64_t line;
	uint32_t col;
	char what[512];
};

/* "FILE:LINE:COL: what" (parts that are unknown are left out). */
void wl_error_format(const struct wl_error *e, char *buf, size_t size);
void wl_error_clear(struct wl_error *e);

/* One segment of a prompt: `len` tokens whose ids derive from `key`. */
struct wl_seg {
	uint64_t key;
	uint32_t len;
};

struct wl_request {
	uint64_t id;		/* 0, 1, 2, ... in stream order */
	int64_t arrival_ns;	/* non-decreasing along the stream */
	uint32_t prompt_tokens;	/* >= 1; equals the sum of segs[].len */
	uint32_t output_tokens;	/* >= 1 */
	int32_t priority;	/* lower is more urgent (vLLM); default 0 */
	uint32_t n;		/* parallel sampling width, >= 1 */
	uint64_t session;	/* 0: not part of a session */
	uint32_t turn;		/* 0-based turn within the session */
	int64_t think_ns;	/* gap after the previous turn (turn > 0) */
	uint64_t out_key;	/* identity of the generated tokens */
	uint64_t src_line;	/* line in the trace file; 0 for generators */
	uint32_t nsegs;
	const struct wl_seg *segs;	/* borrowed until the next call */
	const uint32_t *tokens;	/* explicit prompt ids, or NULL (borrowed) */
	/*
	 * Load stages (workload.kind inference-perf; 0 and 0 otherwise):
	 * the request's stage and the stream time its stage starts at.
	 * When wl_info.stages_drain is set, a client starts stage k + 1 only
	 * once every request of stage k has ended, shifting its arrivals by
	 * (that time + wl_info.stage_gap_ns - stage_ns).
	 */
	uint32_t stage;
	int64_t stage_ns;
	/*
	 * LoRA adapter (kvsim CSV column `lora`, or the generator's `lora`
	 * option): 1..N, names numbered in order of first appearance; 0 the
	 * base model.  wl_lora_name() gives a trace's name back.
	 */
	uint32_t lora;
	/*
	 * No other request of the stream begins with the same first segment,
	 * so none shares a block of prompt with this one (set by the trace
	 * readers for rows keyed by their line, kept by tiling that salts its
	 * copies; false where unknown).
	 */
	bool unique;
};

/* Token id of position `pos` within a segment with `key`: in [0, vocab). */
uint32_t wl_token(uint64_t key, uint64_t pos, uint32_t vocab);
/*
 * Prompt token ids [from, from + count) of `r` into out[]; count must not
 * run past prompt_tokens.  Uses r->tokens when present.
 */
void wl_request_tokens(const struct wl_request *r, uint32_t from,
    uint32_t count, uint32_t vocab, uint32_t *out);
/*
 * Generated token ids [from, from + count) of sample `sample` (0..n-1):
 * the identity a later turn's prompt reuses for sample 0.
 */
void wl_output_tokens(const struct wl_request *r, uint32_t sample,
    uint32_t from, uint32_t count, uint32_t vocab, uint32_t *out);
/* 64-bit mixing used for every derived key (splitmix64 finaliser). */
uint64_t wl_mix(uint64_t a, uint64_t b);

/* Configuration ------------------------------------------------------- */

enum wl_format {
	WL_FMT_AUTO,
	WL_FMT_AZURE,		/* TIMESTAMP,ContextTokens,GeneratedTokens */
	WL_FMT_MOONCAKE,	/* JSONL timestamp(ms),input_length,... */
	WL_FMT_BURSTGPT,	/* Timestamp(s),Model,Request tokens,... */
	WL_FMT_SPLITWISE,	/* splitwise-sim request_id,...,token_size */
	WL_FMT_VIDUR,		/* arrived_at,num_prefill_tokens,... */
	WL_FMT_LLMSS,		/* LLMServingSim JSONL input_toks,... */
	WL_FMT_KVSIM		/* docs/workloads.md, "kvsim CSV" */
};
const char *wl_format_name(enum wl_format f);
/* Name to enum; false if unknown. */
bool wl_format_parse(const char *name, enum wl_format *out);

enum wl_on_error { WL_ON_ERROR_STOP, WL_ON_ERROR_SKIP };
enum wl_order { WL_ORDER_ERROR, WL_ORDER_SKIP, WL_ORDER_SORT };

enum wl_dist_kind {
	WL_DIST_FIXED,		/* value */
	WL_DIST_UNIFORM,	/* integers in [min, max] */
	WL_DIST_NORMAL,		/* mean, sd; truncated to [min, max] */
	WL_DIST_LOGNORMAL,	/* mu, sigma (or mean, cv); truncated */
	WL_DIST_ZIPF,		/* P(k) ~ k^-s on [min, max] */
	WL_DIST_EMPIRICAL	/* values[] with optional weights[] */
};

/* An integer distribution (lengths, n, priority, turns). */
struct wl_dist {
	enum wl_dist_kind kind;
	double value;		/* fixed */
	double mean, sd;	/* normal */
	double mu, sigma;	/* lognormal (set from mean/cv when given) */
	double s;		/* zipf exponent */
	int64_t min, max;	/* inclusive bounds, kept by resampling */
	double *values, *weights;	/* empirical; owned */
	size_t nvalues;
};

enum wl_arrival_kind {
	WL_ARR_POISSON,
	WL_ARR_GAMMA,		/* renewal process, gaps Gamma with given cv */
	WL_ARR_CONSTANT,
	WL_ARR_ONOFF,		/* `rate` for on_s, then off_rate for off_s */
	WL_ARR_SCHEDULE		/* piecewise-constant Poisson rates */
};

struct wl_rate_seg {
	double duration_s;
	double rate;
};

struct wl_arrival {
	enum wl_arrival_kind kind;
	double rate;		/* requests (or sessions) per second */
	double cv;		/* gamma */
	double on_s, off_s, off_rate;	/* onoff */
	struct wl_rate_seg *segs;	/* schedule; owned */
	size_t nsegs;
	bool repeat;		/* schedule repeats; else it ends the stream */
};

struct wl_gen_config {
	uint64_t requests;	/* stop after this many (0: no limit) */
	double duration_s;	/* stop at this arrival time (0: no limit) */
	struct wl_arrival arrival;
	struct wl_dist prompt;	/* user part of each prompt */
	struct wl_dist output;
	struct wl_dist priority;
	struct wl_dist n;
	char *lengths_trace;	/* joint (prompt, output) resampling; owned */
	enum wl_format lengths_format;
	bool lengths_sharegpt;	/* lengths_trace is a ShareGPT JSON file */
	uint32_t lengths_output;	/* ShareGPT: every output this long (0:
					 * the reply's estimated length) */
	uint32_t systems;	/* K shared system prompts (0: none) */
	double system_zipf_s;	/* popularity exponent over the K */
	struct wl_dist system_len;
	double system_fraction;	/* share of requests with a system prompt */
	struct wl_dist turns;	/* turns per session (fixed 1: no sessions) */
	double think_s;		/* mean think time between turns (exp.) */
	/*
	 * LoRA adapters (`lora:`): a session runs adapter k in 1..adapters
	 * with weight k^-lora_zipf_s (0: uniform) with probability
	 * lora_fraction, else the base model; adapters 0: none.
	 */
	uint32_t lora_adapters;
	double lora_zipf_s, lora_fraction;
	uint64_t max_context;	/* a session ends before exceeding this */
};

/*
 * vLLM's benchmark datasets (`vllm bench serve --dataset-name`), each a
 * setting of the generator (wl_bench.c; docs/workloads.md, section 5).
 */
enum wl_dataset_kind {
	WL_DS_NONE,
	WL_DS_RANDOM,		/* input_len, output_len, range_ratio,
				 * prefix_len */
	WL_DS_SHAREGPT,		/* lengths from a ShareGPT JSON file */
	WL_DS_PREFIX_REP	/* prefix_len, suffix_len, num_prefixes,
				 * output_len */
};

struct wl_dataset {
	enum wl_dataset_kind kind;
	uint32_t input_len, output_len, prefix_len, suffix_len;
	uint32_t num_prefixes;
	double range_ratio;
};

/* Where requests come from (workload.kind). */
enum wl_kind {
	WL_KIND_KVSIM,		/* the trace, or the generator */
	WL_KIND_IPERF		/* an inference-perf config file (config) */
};

struct wl_config {
	enum wl_kind kind;
	char *ip_config;	/* kind inference-perf: its config.yaml; owned */
	/*
	 * Clients (any kind): at most max_concurrency requests in flight
	 * (0: no limit; a request waits client-side for a slot and is sent
	 * when one frees), and a request not finished timeout_s after it was
	 * sent fails (0: never).
	 */
	uint32_t max_concurrency;
	double timeout_s;
	char *trace;		/* NULL: use the generator; "-": stdin; owned */
	enum wl_format format;
	enum wl_on_error on_error;
	enum wl_order order;
	uint32_t sort_window;
	uint32_t hash_block_tokens;	/* tokens per hash id (Mooncake: 512) */
	uint64_t seed;
	uint32_t vocab_size;
	double time_scale;	/* arrival times multiplied by this */
	double target_rate;	/* req/s; 0: off (overrides time_scale) */
	double spread_bursts;	/* F in [0, 1]: after the scaling, arrivals
				 * at least F mean gaps apart; 0: off */
	double window_start_s, window_end_s;	/* end 0: open */
	uint64_t max_requests;	/* 0: all */
	uint64_t min_prompt, max_prompt, min_output, max_output;
	uint64_t max_total;	/* prompt + output; 0: no limit */
	uint64_t max_model_len;	/* prompt + output must fit; 0: unset */
	uint64_t cap_prompt, cap_output; /* explicit truncation; 0: off */
	uint32_t tile_copies;
	double tile_period_s;	/* 0: span + one mean gap of the first copy */
	bool tile_share;	/* copies share prompt identities */
	/*
	 * workload.lora_adapters: the LoRA adapters a trace's `lora` column
	 * may name, one per line; an adapter's id is its place in the list,
	 * from 1, and a row naming another is an error.  NULL: any name,
	 * numbered in order of first appearance.  Owned.
	 */
	char *lora_names;
	struct wl_gen_config gen;
	struct wl_dataset dataset;	/* the last dataset set (it has
					 * been applied to gen already) */
};

void wl_config_init(struct wl_config *c);
void wl_config_release(struct wl_config *c);
/* Deep copy; on failure dst is released and WL_ENOMEM returned. */
wl_err wl_config_copy(struct wl_config *dst, const struct wl_config *src);
/*
 * Read the `workload:` mapping `node` (of a document util/ydoc.h read
 * from `file`) into c, over whatever c already holds (start from
 * wl_config_init()).  Unknown keys and bad values are errors with the
 * node's line and column.  Relative trace paths are resolved against the
 * directory of `file` (none when it starts with "--": a command line's).
 * On error c may be partly updated; release it.
 */
wl_err wl_config_from_yaml(const struct yd_node *node, const char *file,
    struct wl_config *c, struct wl_error *err);
/*
 * Parse a YAML file (as libyaml's document loader reads one: ydoc.h's
 * YD_LOADER): its `workload:` key if the top level is a mapping holding
 * one, else the whole top-level mapping.
 */
wl_err wl_config_load(const char *path, struct wl_config *c,
    struct wl_error *err);
/*
 * The inverse of wl_config_from_yaml: c as the body of a `workload:`
 * mapping, each key at `indent` spaces.  Read back over wl_config_init()
 * it gives the same stream: the same value in every field the stream
 * reads (a trace's settings, or the generator's, each distribution's
 * and arrival process's own parameters; a lognormal as mu and sigma),
 * numbers in the fewest digits that read back bit for bit.  Relative
 * paths are written absolute (against the current directory), so the
 * text names the same files wherever it is read.
 */
void wl_config_write_yaml(const struct wl_config *c, FILE *f, int indent);
/*
 * s escaped for the inside of a YAML double-quoted scalar: `"`, `\`,
 * control characters and line separators as escapes, other valid UTF-8
 * as is, each byte of invalid UTF-8 as \xHH (which reads back as the code
 * point, not the byte: libyaml reads UTF-8 only).
 */
void wl_yaml_escape(FILE *f, const char *s);
/* v in the fewest digits (15 to 17) that strtod reads back bit for bit
 * (0.9, not 0.90000000000000002). */
void wl_yaml_num(FILE *f, double v);

/* Streams ------------------------------------------------------------- */

typedef struct wl_stream wl_stream;

/* What a stream ended up with: each request is counted once. */
struct wl_counts {
	uint64_t rows;		/* rows read or requests generated */
	uint64_t emitted;	/* requests returned by wl_stream_next */
	uint64_t skipped;	/* malformed rows skipped (on_error: skip) */
	uint64_t rej_zero;	/* prompt or output of 0 tokens */
	uint64_t rej_huge;	/* a length >= 2^31 */
	uint64_t rej_order;	/* out of order, dropped (order: skip) */
	uint64_t rej_filter;	/* outside min/max filters or max_total */
	uint64_t rej_max_len;	/* prompt + output > max_model_len */
	uint64_t capped;	/* shortened by cap.* (explicit) */
	uint64_t sorted;	/* rows the sort window moved */
	uint64_t outside_window;	/* before window.start_s (not errors) */
	struct wl_error first_skip;	/* the first skipped row's error */
};

/* What the source is; epoch_ns is known once the first row is read. */
struct wl_info {
	const char *format;	/* "azure", ..., "generator" */
	int64_t epoch_ns;	/* wall clock of arrival 0, if known */
	bool has_epoch;
	uint32_t hash_block;	/* tokens per hash id; 0 if no hash ids */
	bool has_tokens;	/* requests carry explicit token ids */
	/* kind inference-perf: stages drain before the next starts, which
	 * then waits stage_gap_ns more (load.interval); load.request_timeout
	 * in seconds (0: none) */
	bool stages_drain;
	int64_t stage_gap_ns;
	double ip_timeout_s;
	uint32_t nstages;
	/* the first warning about the source ("" none: keys inference-perf
	 * ignores), "FILE:LINE:COL: what", and how many there were */
	char warning[640];
	uint32_t nwarnings;
};

/*
 * Build the stream `c` describes (c is copied).  Opens the trace and reads
 * its header; errors (missing file, empty file, unknown format, bad
 * config) come back here with *err filled.
 */
wl_err wl_open(const struct wl_config *c, wl_stream **out,
    struct wl_error *err);
/* WL_OK and *r filled, WL_END at the end, or an error (wl_stream_error). */
wl_err wl_stream_next(wl_stream *s, struct wl_request *r);
const struct wl_error *wl_stream_error(const wl_stream *s);
const struct wl_counts *wl_stream_counts(const wl_stream *s);
const struct wl_info *wl_stream_info(const wl_stream *s);
/* Accepts NULL. */
void wl_stream_free(wl_stream *s);

/*
 * The stream's invariants, numbered as wl_stream_check() reports the first
 * one broken (0: all hold).  The stream's own, then each stage's from the
 * top of the pipeline down (a stage's "out" is the requests it returned,
 * its "in" those the stage below it returned).  Cost: O(sort window).
 */
enum wl_check {
	WL_CHECK_OK = 0,
	WL_CHECK_IDS = 1,	/* emitted == the next request id */
	WL_CHECK_ORDER = 2,	/* the last two arrivals returned in order */
	WL_CHECK_HORIZON = 3,	/* the last arrival returned within the
				 * horizon */
	WL_CHECK_COUNTS = 4,	/* emitted + skipped + rejected (each reason)
				 * + outside_window <= rows */
	WL_CHECK_MARKS = 5,	/* capped <= rows, sorted <= rows */
	WL_CHECK_END = 6,	/* a top stage while live (last code WL_OK),
				 * none once ended */
	WL_CHECK_TOP = 7,	/* the top stage's out == emitted */
	WL_CHECK_SORT_SLOTS = 10,	/* free + in the heap + the one lent
					 * out == the sort window */
	WL_CHECK_SORT_SEQ = 11,	/* rows in == in, rows out == out, in - out
				 * == rows in the heap */
	WL_CHECK_SORT_HEAP = 12,	/* heap order: (arrival, row order) */
	WL_CHECK_WINDOW = 20,	/* 0 <= start, end 0 or after it; out <= in */
	WL_CHECK_FILTER = 30,	/* out <= in */
	WL_CHECK_HEAD = 40,	/* out + left == N, out == in */
	WL_CHECK_SCALE = 50,	/* the factor finite and > 0; out == in */
	WL_CHECK_SPREAD = 51,	/* the gap >= 0; out == in */
	WL_CHECK_TILE_COPY = 60,	/* the copy < copies */
	WL_CHECK_TILE_PERIOD = 61,	/* copies after the first: period > 0 */
	WL_CHECK_TILE_FIRST = 62,	/* copy 0: its requests == out */
	WL_CHECK_GEN = 70,	/* requests generated == out */
	WL_CHECK_TRACE = 80	/* out <= data rows read */
};

/* 0, or the first broken invariant's enum wl_check (above).  Read-only;
 * any time between calls of wl_stream_next, ended streams too. */
int wl_stream_check(const wl_stream *s);

/* Whether gzip-compressed traces can be read (built with zlib). */
bool wl_gzip_supported(void);

/* Rejections and skips in one line ("" when there were none). */
void wl_counts_format(const struct wl_counts *c, char *buf, size_t size);

/* Statistics (kvsim trace-stats) -------------------------------------- */

typedef struct wl_stats wl_stats;

struct wl_len_summary {
	double mean, median;
	uint64_t p99, min, max, sum;
};

struct wl_summary {
	uint64_t rows;
	int64_t first_ns, last_ns;
	double span_s, mean_rate;
	uint64_t bins, bins_empty;	/* full 60 s bins from the first */
	uint64_t bin_min, bin_max;
	double bin_median;
	double gap_cv;		/* inter-arrival coefficient of variation */
	uint64_t distinct_ts;
	struct wl_len_summary in, out;
	double in_tok_s, out_tok_s;	/* offered load */
	/* Hash-id (segment) prefix reuse, infinite cache, arrival order. */
	bool has_hash;
	uint32_t hash_block;
	uint64_t seg_total, seg_unique, seg_matched;
	uint64_t tok_matched;	/* min(hash_block * matched, prompt) summed */
	uint64_t reuse_requests;	/* requests with >= 1 matched segment */
	/* Token-block reuse at block_tokens (when asked for). */
	uint32_t block_tokens;
	uint64_t blk_total, blk_hit;
};

/* block_tokens > 0 also hashes token ids in blocks of that size. */
wl_stats *wl_stats_new(uint32_t block_tokens, uint32_t vocab,
    uint32_t hash_block);
wl_err wl_stats_add(wl_stats *st, const struct wl_request *r);
/* Sorts internal tables, hence not const. */
void wl_stats_summary(wl_stats *st, struct wl_summary *out);
void wl_stats_free(wl_stats *st);

/* Writers ------------------------------------------------------------- */

/*
 * Write a stream as kvsim CSV (docs/workloads.md), segments as
 * `key:len|key:len...`.  Returns WL_EIO on a write error.
 */
wl_err wl_write_kvsim_header(FILE *f);
wl_err wl_write_kvsim_row(FILE *f, const struct wl_request *r);

#ifdef __cplusplus
}
#endif

#endif /* KVSIM_WL_H */
