/*
 * wl_int.h -- internals shared by the files of workloads/.
 *
 * A wl_stream is a pipeline: one struct wl_stream owns the counts, the
 * error and the info that every stage writes, and the top stage.  Stages
 * pull from the stage below them; a stage that fails fills p->err and
 * returns the code, and every stage above passes it up unchanged.
 */
#ifndef KVSIM_WL_INT_H
#define KVSIM_WL_INT_H

#include "workloads/wl.h"

#include <gsl/gsl_rng.h>

struct wl_stage;

struct wl_stage_ops {
	wl_err (*next)(struct wl_stage *st, struct wl_request *r);
	void (*free)(struct wl_stage *st);
	/* The stage's invariants, then those of the stages below it:
	 * 0 or the first broken one's enum wl_check (wl.h). */
	int (*check)(const struct wl_stage *st);
};

struct wl_stage {
	const struct wl_stage_ops *ops;
	struct wl_stream *p;
	uint64_t nout;		/* requests returned (wl__stage_next) */
};

struct wl_stream {
	struct wl_config cfg;	/* private copy: tiling reopens the source */
	struct wl_stage *top;
	struct wl_counts cnt;
	struct wl_error err;
	struct wl_info info;
	uint64_t next_id;
	double scale;		/* time_scale, or the one target_rate implies */
	int64_t gap_ns;		/* spread_bursts' least gap; 0: no spreading */
	wl_err last_rc;		/* WL_END or the error, once top is gone */
	int64_t prev_arrival;	/* the arrivals of the last two requests */
	int64_t last_arrival;	/* returned (cnt.emitted of them) */
};

static inline wl_err
wl__stage_next(struct wl_stage *st, struct wl_request *r)
{
	wl_err rc = st->ops->next(st, r);

	if (rc == WL_OK)
		st->nout++;
	return rc;
}

/* The invariants of st and the stages below it (0 for NULL). */
static inline int
wl__stage_check(const struct wl_stage *st)
{
	return st != NULL && st->ops->check != NULL ? st->ops->check(st) : 0;
}

static inline void
wl__stage_free(struct wl_stage *st)
{
	if (st != NULL)
		st->ops->free(st);
}

/* wl_err.c: fill an error; printf-style `what`. */
void wl__error_set(struct wl_error *e, const char *file, uint64_t line,
    uint32_t col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
wl_err wl__fail(struct wl_stream *p, wl_err code, const char *file,
    uint64_t line, uint32_t col, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/*
 * wl_stream.c: true when an arrival of arrival_ns (computed in double, so
 * that a value past INT64_MAX is not clamped) is past the horizon (wl.h).
 * wl__past_horizon fails the stream for r with that arrival: the next
 * request id, the trace's FILE:LINE of its row when known.
 */
bool wl__beyond_horizon(double arrival_ns);
wl_err wl__past_horizon(struct wl_stream *p, const struct wl_request *r,
    double arrival_ns);

/* wl_io.c: buffered line reader over a plain or gzip file. ------------- */

struct wl_gz;

struct wl_lines {
	char name[512];
	int fd;
	bool own_fd;
	bool eof;		/* no more raw input */
	bool gz;		/* input is gzip */
	struct wl_gz *z;
	unsigned char *raw;	/* compressed input (gz only) */
	size_t raw_len, raw_pos, raw_cap;
	char *buf;		/* decompressed text */
	size_t cap, start, end, scan;
	uint64_t line;		/* number of the last line returned */
	uint64_t bytes;		/* text bytes consumed */
};

/* path "-" is standard input.  err gets FILE-only messages. */
wl_err wl__lines_open(struct wl_lines *lr, const char *path,
    struct wl_error *err);
/*
 * Next line without its terminator (LF or CRLF; a last line without one is
 * returned too).  *line points into the reader's buffer until the next
 * call.  WL_END at the end of input.
 */
wl_err wl__lines_next(struct wl_lines *lr, const char **line, size_t *len,
    struct wl_error *err);
void wl__lines_close(struct wl_lines *lr);
/*
 * A line of gzip input did not parse: read the rest of the stream, which
 * is spent, and say whether the gzip data is corrupt (err then gets that
 * message: a corrupt byte inflates to garbage text before zlib's check at
 * the end of the member sees it).  False for plain input.
 */
bool wl__lines_gz_corrupt(struct wl_lines *lr, struct wl_error *err);

/* wl_gz.c / wl_gz_none.c ------------------------------------------------ */

bool wl__gz_available(void);
struct wl_gz *wl__gz_new(void);
/*
 * Inflate from *in (advanced) into out; *produced bytes written.  Handles
 * concatenated members.  WL_EPARSE with `what` on corrupt data.
 */
wl_err wl__gz_inflate(struct wl_gz *z, const unsigned char **in,
    size_t *in_len, char *out, size_t out_cap, size_t *produced,
    char *what, size_t what_size);
/* true if the last member ended cleanly (no truncated stream). */
bool wl__gz_complete(const struct wl_gz *z);
void wl__gz_free(struct wl_gz *z);

/* wl_parse.c: numbers and fields. -------------------------------------- */

#define WL_ISDIGIT(c) ((unsigned)((c) - '0') < 10u)

enum wl_num {
	WL_NUM_OK,
	WL_NUM_BAD,		/* not a number of the expected form */
	WL_NUM_NEG,		/* negative */
	WL_NUM_HUGE		/* does not fit (lengths: >= 2^31) */
};

/* Non-negative integer length: digits only; HUGE when >= 2^31. */
enum wl_num wl__parse_len(const char *p, size_t n, uint32_t *out);
/* Signed 64-bit integer. */
enum wl_num wl__parse_i64(const char *p, size_t n, int64_t *out);
/* Unsigned 64-bit integer. */
enum wl_num wl__parse_u64(const char *p, size_t n, uint64_t *out);
/*
 * A non-negative decimal time in a unit of unit_ns nanoseconds (1e9 for
 * seconds, 1e6 for ms, 1 for ns) to ns.  Exact for plain decimals (rounded
 * half up below 1 ns); exponents are accepted (via strtod).
 */
enum wl_num wl__parse_time(const char *p, size_t n, int64_t unit_ns,
    int64_t *out);
/* A finite double. */
enum wl_num wl__parse_double(const char *p, size_t n, double *out);
/*
 * "YYYY-MM-DD HH:MM:SS[.f...]" to ns since 1970-01-01 (no time zone):
 * BAD for a malformed text or a date or time that does not exist
 * (proleptic Gregorian; second 60 only at 23:59), HUGE when the count
 * does not fit in int64 (before 1677-09-21 00:12:43.145224192 or after
 * 2262-04-11 23:47:16.854775807).
 */
enum wl_num wl__parse_datetime(const char *p, size_t n, int64_t *out);
/*
 * wl__parse_datetime's usual text alone: "YYYY-MM-DD HH:MM:SS" (or 'T'
 * between), with '.' and 1 to 9 digits or none, nothing around it.  True
 * with *out as wl__parse_datetime reads it; false for any other text,
 * which wl__parse_datetime reads (or refuses).  A reading of its own, in
 * one pass: tests/check_wl.c holds the two to the same answers.
 */
bool wl__datetime_quick(const char *p, size_t n, int64_t *out);
/* ns since 1970-01-01 as "YYYY-MM-DD HH:MM:SS[.fffffffff]" (any int64). */
void wl__format_datetime(int64_t ns, char *buf, size_t size);
/* Days since 1970-01-01 of a proleptic Gregorian date. */
int64_t wl__days_from_civil(int64_t y, unsigned m, unsigned d);
/* Inverse of the above, for printing. */
void wl__civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);

/* CSV: split one line into fields (RFC 4180 quotes; "" inside quotes). */
struct wl_field {
	const char *p;		/* content (quotes stripped) */
	size_t n;
	uint32_t col;		/* 1-based column of the field's first byte */
	bool quoted;		/* had quotes (content may hold "" pairs) */
};

/* Returns the number of fields (up to max); -1 on an unterminated quote. */
int wl__csv_split(const char *line, size_t len, struct wl_field *f, int max);

/*
 * A trace's usual CSV row read in one pass (wl__csv_quick): field i of
 * kind[i], WL_Q_TIME wl__datetime_quick's text, WL_Q_COUNT0 or
 * WL_Q_COUNT1 a count of 1 to 9 digits (into count[0] or [1]), WL_Q_SKIP
 * any text; its column from 1 beside each value.
 */
enum { WL_Q_SKIP, WL_Q_TIME, WL_Q_COUNT0, WL_Q_COUNT1 };

struct wl_quick {
	int64_t t;
	uint32_t tcol;
	uint32_t count[2], ccol[2];
};

/*
 * True when the row is ncols such fields and has no quote: the values in
 * *q, as wl__csv_split and the fields' readers (wl__parse_datetime,
 * wl__parse_len) read them.  False for any other row, which those then
 * read themselves, and name what is wrong with.
 */
bool wl__csv_quick(const char *line, size_t len, const uint8_t *kind,
    int ncols, struct wl_quick *q);

/* wl_json.c: a small JSON cursor for one-object-per-line files. -------- */

struct wl_jcur {
	const char *line, *p, *end;
	const char *what;	/* error text when a call returns false */
	const char *at;		/* error position */
};

void wl__j_init(struct wl_jcur *j, const char *line, size_t len);
void wl__j_ws(struct wl_jcur *j);
bool wl__j_peek(struct wl_jcur *j, char c);	/* skips ws first */
bool wl__j_expect(struct wl_jcur *j, char c);
/* A string's raw content (escapes kept) into [*s, *s + *n). */
bool wl__j_string(struct wl_jcur *j, const char **s, size_t *n);
/* The raw text of a number. */
bool wl__j_number(struct wl_jcur *j, const char **s, size_t *n);
/* Skip any value. */
bool wl__j_skip(struct wl_jcur *j);
static inline uint32_t
wl__j_col(const struct wl_jcur *j, const char *at)
{
	return (uint32_t)(at - j->line) + 1;
}

/* Growable arrays. ------------------------------------------------------ */

bool wl__grow(void **arr, size_t *cap, size_t need, size_t elem);

/* Hash set of 64-bit keys (open addressing). ---------------------------- */

struct wl_hset {
	uint64_t *slot;
	uint32_t *val;		/* a map's values; NULL in a set */
	size_t cap, n;
	bool has_zero;
	uint32_t zero_val;	/* the value of the key 0 */
};

bool wl__hset_init(struct wl_hset *h);
/* 1 if present, else 0; inserts when `insert`.  -1 + errno on no memory. */
int wl__hset_has(struct wl_hset *h, uint64_t k, bool insert);
/* A map of 64-bit keys to 32-bit values (an absent key reads 0). */
bool wl__hmap_init(struct wl_hset *h);
uint32_t wl__hmap_get(struct wl_hset *h, uint64_t k);
/* value(k) = max(value(k), v), adding k if absent; -1 on no memory. */
int wl__hmap_max(struct wl_hset *h, uint64_t k, uint32_t v);
void wl__hset_release(struct wl_hset *h);

/* Stages (wl_trace.c, wl_xform.c, wl_gen.c). ---------------------------- */

/* Key namespaces for wl_mix. */
enum {
	WL_NS_ROW = 0x524f57,	/* rows of traces without identity */
	WL_NS_HASH = 0x48415348,	/* trace hash ids */
	WL_NS_OUT = 0x4f5554,	/* outputs */
	WL_NS_SYS = 0x535953,	/* system prompts */
	WL_NS_USER = 0x55534552,	/* user turns */
	WL_NS_TOK = 0x544f4b,	/* explicit token lists */
	WL_NS_SESS = 0x53455353,	/* session ids from strings */
	WL_NS_COPY = 0x434f5059,	/* tile copies */
	WL_NS_RNG = 0x524e47	/* RNG streams */
};

wl_err wl__trace_open(struct wl_stream *p, const struct wl_config *c,
    const char *path, enum wl_format fmt, struct wl_stage **out);
wl_err wl__gen_open(struct wl_stream *p, const struct wl_config *c,
    struct wl_stage **out);

wl_err wl__sort_open(struct wl_stream *p, struct wl_stage *in,
    uint32_t window, struct wl_stage **out);
wl_err wl__window_open(struct wl_stream *p, struct wl_stage *in,
    int64_t t0, int64_t t1, struct wl_stage **out);
wl_err wl__filter_open(struct wl_stream *p, struct wl_stage *in,
    const struct wl_config *c, struct wl_stage **out);
wl_err wl__head_open(struct wl_stream *p, struct wl_stage *in, uint64_t n,
    struct wl_stage **out);
wl_err wl__scale_open(struct wl_stream *p, struct wl_stage *in,
    double scale, struct wl_stage **out);
wl_err wl__spread_open(struct wl_stream *p, struct wl_stage *in,
    int64_t gap_ns, struct wl_stage **out);
/* Open the source chain (source .. spread) for tile copy `copy`. */
wl_err wl__chain_open(struct wl_stream *p, struct wl_stage **out);
wl_err wl__tile_open(struct wl_stream *p, struct wl_stage *first,
    struct wl_stage **out);

/*
 * The transforming stages' state (wl_xform.c), here so that the tests can
 * break each invariant wl_stream_check() names.
 */
struct wl__slot {
	struct wl_request r;
	uint64_t seq;
	struct wl_seg *segs;
	size_t segcap;
	uint32_t *toks;
	size_t tokcap;
};

struct wl__sorter {
	struct wl_stage base;
	struct wl_stage *in;
	uint32_t w;
	struct wl__slot *slots;
	uint32_t *heap;		/* slot indices, min-heap on (arrival, seq) */
	uint32_t nheap;
	uint32_t *freel;	/* free slot indices */
	uint32_t nfree;
	uint64_t seq_in, seq_out;
	bool in_done, have_last;
	int64_t last;
	int32_t held;		/* slot returned last time, or -1 */
};

struct wl__window {
	struct wl_stage base;
	struct wl_stage *in;
	int64_t t0, t1;
	bool done;
};

struct wl__filter {
	struct wl_stage base;
	struct wl_stage *in;
	uint64_t min_prompt, max_prompt, min_output, max_output, max_total;
	uint64_t cap_prompt, cap_output, max_model_len;
	struct wl_seg *segs;
	size_t segcap;
};

struct wl__head {
	struct wl_stage base;
	struct wl_stage *in;
	uint64_t n;		/* N */
	uint64_t left;
};

struct wl__scale {
	struct wl_stage base;
	struct wl_stage *in;
	double k;
};

struct wl__spread {
	struct wl_stage base;
	struct wl_stage *in;
	int64_t gap_ns;		/* the least gap between two arrivals */
	int64_t prev;		/* the last arrival returned */
};

struct wl__tile {
	struct wl_stage base;
	struct wl_stage *in;	/* the current copy's chain */
	uint32_t copy, copies;
	bool share;
	int64_t period;		/* 0 until known */
	int64_t first, last;
	uint64_t n0;		/* requests in copy 0 */
	int64_t last_out;	/* last arrival returned, any copy */
	uint64_t salt;		/* key salt of the current copy */
	struct wl_seg *segs;
	size_t segcap;
};

/* wl_iperf.c: an inference-perf config's stages and prompts. */
wl_err wl__iperf_open(struct wl_stream *p, const struct wl_config *c,
    struct wl_stage **out);

/* A seeded RNG for stream `stream` of run seed `seed` (mt19937). */
gsl_rng *wl__rng_new(uint64_t seed, uint64_t stream);

/* Sample an integer distribution (wl_dist.c).  Tables in `ds`. */
struct wl_sampler {
	const struct wl_dist *d;
	void *table;		/* gsl_ran_discrete_t for zipf/empirical */
	int64_t base;		/* value of table index 0 */
};

wl_err wl__sampler_init(struct wl_sampler *s, const struct wl_dist *d,
    char *what, size_t what_size);
int64_t wl__sample(struct wl_sampler *s, gsl_rng *r);
void wl__sampler_release(struct wl_sampler *s);
/* Check a distribution's parameters; false with `what` filled. */
bool wl__dist_check(const struct wl_dist *d, char *what, size_t size);

/* wl_bench.c: vLLM's benchmark datasets (docs/workloads.md, section 5). */
bool wl__dataset_parse(const char *name, enum wl_dataset_kind *out);
const char *wl__dataset_name(enum wl_dataset_kind k);
void wl__dataset_defaults(struct wl_dataset *ds, enum wl_dataset_kind k);
wl_err wl__dataset_apply(const struct wl_dataset *ds,
    struct wl_gen_config *g, char *why, size_t len);
uint64_t wl__text_tokens(const char *s);
wl_err wl__sharegpt_pairs(const char *path, uint32_t output_len,
    uint32_t (**pairs)[2], size_t *npairs, struct wl_error *err);

#endif /* KVSIM_WL_INT_H */
