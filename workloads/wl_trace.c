/*
 * wl_trace.c -- the trace reader stage: one row in, one request out.
 *
 * CSV formats are tables of column names and roles, matched against the
 * header row, so a reordered or extended header still reads (unknown
 * columns are ignored, except in the kvsim format, which is ours and
 * strict).  JSON-lines formats walk each object with wl_json.c.
 *
 * Per row: a malformed field is an error "FILE:LINE:COL: what" (the stream
 * stops, or with on_error: skip the row is counted and dropped); a length
 * of 0 or >= 2^31 is a rejection (counted, dropped, never truncated); a
 * timestamp earlier than the previous row's is an error, a counted drop
 * or left to the sort stage, by `order`.
 *
 * Memory: the line reader's buffer plus the segment/token arrays of the
 * longest row so far.  Cost: linear in the bytes read.
 */
#include "config.h"

#include "workloads/wl_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum role {
	R_IGNORE,
	R_TIME,
	R_PROMPT,
	R_OUTPUT,
	R_N,
	R_PRIORITY,
	R_SESSION,
	R_TURN,
	R_THINK,
	R_OUTKEY,
	R_SEGMENTS,
	R_HASHES,
	R_TOKENS,
	R_AGENTIC,
	R_LORA,
	NROLES
};

enum tunit { T_DATETIME, T_S, T_MS, T_NS };

struct colspec {
	const char *name;
	enum role role;
	enum tunit unit;	/* R_TIME only */
	bool required;
};

struct fmtspec {
	enum wl_format fmt;
	const char *name;
	bool json;
	bool strict;		/* unknown columns are errors */
	bool absolute;		/* wall-clock times: rebased to the first row */
	bool hashes;		/* rows may carry hash ids */
	const struct colspec *cols;
	size_t ncols;
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const struct colspec azure_cols[] = {
	{ "TIMESTAMP", R_TIME, T_DATETIME, true },
	{ "ContextTokens", R_PROMPT, 0, true },
	{ "GeneratedTokens", R_OUTPUT, 0, true },
};
static const struct colspec burst_cols[] = {
	{ "Timestamp", R_TIME, T_S, true },
	{ "Request tokens", R_PROMPT, 0, true },
	{ "Response tokens", R_OUTPUT, 0, true },
	{ "Session ID", R_SESSION, 0, false },
	{ "Model", R_IGNORE, 0, false },
	{ "Total tokens", R_IGNORE, 0, false },
	{ "Log Type", R_IGNORE, 0, false },
	{ "Elapsed time", R_IGNORE, 0, false },
};
static const struct colspec splitwise_cols[] = {
	{ "arrival_timestamp", R_TIME, T_S, true },
	{ "prompt_size", R_PROMPT, 0, true },
	{ "token_size", R_OUTPUT, 0, true },
	{ "batch_size", R_N, 0, false },
	{ "request_id", R_IGNORE, 0, false },
	{ "request_type", R_IGNORE, 0, false },
	{ "application_id", R_IGNORE, 0, false },
};
static const struct colspec vidur_cols[] = {
	{ "arrived_at", R_TIME, T_S, true },
	{ "num_prefill_tokens", R_PROMPT, 0, true },
	{ "num_decode_tokens", R_OUTPUT, 0, true },
	{ "session_id", R_SESSION, 0, false },
	{ "session_turn_index", R_TURN, 0, false },
};
static const struct colspec kvsim_cols[] = {
	{ "arrival_ns", R_TIME, T_NS, false },
	{ "arrival_s", R_TIME, T_S, false },
	{ "prompt_tokens", R_PROMPT, 0, true },
	{ "output_tokens", R_OUTPUT, 0, true },
	{ "priority", R_PRIORITY, 0, false },
	{ "n", R_N, 0, false },
	{ "session", R_SESSION, 0, false },
	{ "turn", R_TURN, 0, false },
	{ "think_ns", R_THINK, 0, false },
	{ "out_key", R_OUTKEY, 0, false },
	{ "segments", R_SEGMENTS, 0, false },
	{ "hash_ids", R_HASHES, 0, false },
	{ "lora", R_LORA, 0, false },
};
static const struct colspec mooncake_keys[] = {
	{ "timestamp", R_TIME, T_MS, true },
	{ "input_length", R_PROMPT, 0, true },
	{ "output_length", R_OUTPUT, 0, true },
	{ "hash_ids", R_HASHES, 0, false },
};
static const struct colspec llmss_keys[] = {
	{ "arrival_time_ns", R_TIME, T_NS, true },
	{ "input_toks", R_PROMPT, 0, true },
	{ "output_toks", R_OUTPUT, 0, true },
	{ "input_tok_ids", R_TOKENS, 0, false },
	{ "output_tok_ids", R_IGNORE, 0, false },
	{ "session_id", R_SESSION, 0, false },
	{ "sub_requests", R_AGENTIC, 0, false },
};

static const struct fmtspec formats[] = {
	{ WL_FMT_AZURE, "azure", false, false, true, false, azure_cols,
	  NELEM(azure_cols) },
	{ WL_FMT_MOONCAKE, "mooncake", true, false, false, true,
	  mooncake_keys, NELEM(mooncake_keys) },
	{ WL_FMT_BURSTGPT, "burstgpt", false, false, false, false,
	  burst_cols, NELEM(burst_cols) },
	{ WL_FMT_SPLITWISE, "splitwise", false, false, false, false,
	  splitwise_cols, NELEM(splitwise_cols) },
	{ WL_FMT_VIDUR, "vidur", false, false, false, false, vidur_cols,
	  NELEM(vidur_cols) },
	{ WL_FMT_LLMSS, "llmservingsim", true, false, false, false,
	  llmss_keys, NELEM(llmss_keys) },
	{ WL_FMT_KVSIM, "kvsim", false, true, false, true, kvsim_cols,
	  NELEM(kvsim_cols) },
};

const char *
wl_format_name(enum wl_format f)
{
	if (f == WL_FMT_AUTO)
		return "auto";
	for (size_t i = 0; i < NELEM(formats); i++)
		if (formats[i].fmt == f)
			return formats[i].name;
	return "?";
}

bool
wl_format_parse(const char *name, enum wl_format *out)
{
	if (strcmp(name, "auto") == 0) {
		*out = WL_FMT_AUTO;
		return true;
	}
	if (strcmp(name, "llmss") == 0) {
		*out = WL_FMT_LLMSS;
		return true;
	}
	for (size_t i = 0; i < NELEM(formats); i++)
		if (strcmp(formats[i].name, name) == 0) {
			*out = formats[i].fmt;
			return true;
		}
	return false;
}

static const struct fmtspec *
spec_of(enum wl_format f)
{
	for (size_t i = 0; i < NELEM(formats); i++)
		if (formats[i].fmt == f)
			return &formats[i];
	return NULL;
}

#define MAX_COLS 64

struct trace {
	struct wl_stage base;
	struct wl_lines lr;
	const struct fmtspec *fs;
	enum wl_on_error on_error;
	enum wl_order order;
	uint32_t hb;		/* tokens per hash id */
	uint64_t seed;
	uint64_t row_ns, out_ns;	/* key namespaces of this seed */
	int ncols;		/* header fields (CSV) */
	int8_t colrole[MAX_COLS];	/* index into fs->cols, -1 ignored */
	bool quick;		/* rows may be read by wl__csv_quick */
	uint8_t qkind[MAX_COLS];	/* its kinds of the columns */
	const char *pending;	/* first JSON line, read at open */
	size_t pending_len;
	uint64_t data_rows;
	bool have_base, have_last;
	int64_t t_base, last;
	uint64_t base_line;	/* the line of the first row */
	struct wl_seg *segs;
	size_t segcap;
	uint32_t *toks;
	size_t tokcap;
	char **lnames;		/* LoRA adapters, id i + 1 at i */
	uint32_t nlnames, caplnames;
	const char *lfixed;	/* wl_config.lora_names, or NULL */
};

/* One row's values before they become a request. */
struct row {
	int64_t t;
	uint32_t prompt, output, n, turn;
	int32_t priority;
	uint64_t session, out_key;
	int64_t think;
	bool has_outkey;
	uint32_t nsegs, ntoks;
	bool has_segs, has_toks;
	bool rowkey;		/* its one segment is keyed by its row */
	uint32_t hash_col, seg_col, tok_col, prompt_col, time_col;
	bool zero, huge;
	uint32_t lora;
};

static bool
contains(const char *hay, size_t n, const char *needle)
{
	size_t k = strlen(needle);

	for (size_t i = 0; i + k <= n; i++)
		if (hay[i] == needle[0] && memcmp(hay + i, needle, k) == 0)
			return true;
	return false;
}

static uint64_t
hash_bytes(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ULL;
	}
	return wl_mix(h, WL_NS_SESS);
}

/* Quote a field for a message: at most 40 bytes, printable. */
static const char *
quote(const char *p, size_t n, char *buf, size_t size)
{
	size_t k = 0;

	if (n > 40)
		n = 40;
	for (size_t i = 0; i < n && k + 1 < size; i++)
		buf[k++] = (p[i] >= 0x20 && p[i] < 0x7f) ? p[i] : '?';
	buf[k] = '\0';
	return buf;
}

static wl_err
row_error(struct trace *t, uint32_t col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static wl_err
row_error(struct trace *t, uint32_t col, const char *fmt, ...)
{
	struct wl_error *e = &t->base.p->err;
	va_list ap;

	snprintf(e->file, sizeof(e->file), "%s", t->lr.name);
	e->line = t->lr.line;
	e->col = col;
	va_start(ap, fmt);
	vsnprintf(e->what, sizeof(e->what), fmt, ap);
	va_end(ap);
	return WL_EPARSE;
}

static wl_err
parse_len_field(struct trace *t, struct row *r, const char *name,
    const char *p, size_t n, uint32_t col, uint32_t *out)
{
	char q[48];

	switch (wl__parse_len(p, n, out)) {
	case WL_NUM_OK:
		if (*out == 0)
			r->zero = true;
		return WL_OK;
	case WL_NUM_HUGE:
		r->huge = true;
		*out = 0;
		return WL_OK;
	case WL_NUM_NEG:
		return row_error(t, col, "%s is negative: '%s'", name,
		    quote(p, n, q, sizeof(q)));
	default:
		return row_error(t, col, "%s: expected a non-negative integer, "
		    "found '%s'", name, quote(p, n, q, sizeof(q)));
	}
}

static wl_err
parse_time_field(struct trace *t, struct row *r, const struct colspec *cs,
    const char *p, size_t n, uint32_t col)
{
	char q[48];
	enum wl_num rc;
	static const int64_t unit[] = { 0, 1000000000, 1000000, 1 };

	r->time_col = col;
	if (cs->unit == T_DATETIME) {
		rc = wl__parse_datetime(p, n, &r->t);
		if (rc == WL_NUM_HUGE)
			return row_error(t, col, "%s is out of range: '%s' "
			    "(times from 1677-09-21 00:12:43.145224192 to "
			    "2262-04-11 23:47:16.854775807 are read)", cs->name,
			    quote(p, n, q, sizeof(q)));
		if (rc != WL_NUM_OK)
			return row_error(t, col, "%s: expected YYYY-MM-DD "
			    "HH:MM:SS[.fffffff], found '%s'", cs->name,
			    quote(p, n, q, sizeof(q)));
		return WL_OK;
	}
	rc = wl__parse_time(p, n, unit[cs->unit], &r->t);
	switch (rc) {
	case WL_NUM_OK:
		return WL_OK;
	case WL_NUM_NEG:
		return row_error(t, col, "%s is negative: '%s'", cs->name,
		    quote(p, n, q, sizeof(q)));
	case WL_NUM_HUGE:
		return row_error(t, col, "%s is out of range: '%s'", cs->name,
		    quote(p, n, q, sizeof(q)));
	default:
		return row_error(t, col, "%s: expected a number%s, found '%s'",
		    cs->name, cs->unit == T_NS ? " of nanoseconds" :
		    cs->unit == T_MS ? " of milliseconds" : " of seconds",
		    quote(p, n, q, sizeof(q)));
	}
}

static bool
push_seg(struct trace *t, uint32_t *nsegs, uint64_t key, uint32_t len)
{
	if (!wl__grow((void **)&t->segs, &t->segcap, (size_t)*nsegs + 1,
	    sizeof(*t->segs)))
		return false;
	t->segs[*nsegs].key = key;
	t->segs[*nsegs].len = len;
	(*nsegs)++;
	return true;
}

/* Hash ids become hb-token segments; lengths are fixed later. */
static wl_err
push_hash(struct trace *t, struct row *r, const char *p, size_t n,
    uint32_t col)
{
	uint64_t id;
	char q[48];

	if (wl__parse_u64(p, n, &id) != WL_NUM_OK)
		return row_error(t, col, "hash id: expected a non-negative "
		    "integer, found '%s'", quote(p, n, q, sizeof(q)));
	if (!push_seg(t, &r->nsegs, wl_mix(WL_NS_HASH, id), t->hb))
		return row_error(t, col, "out of memory");
	r->has_segs = true;
	return WL_OK;
}

/* "key:len|key:len" (kvsim segments). */
static wl_err
parse_segments(struct trace *t, struct row *r, const char *p, size_t n,
    uint32_t col)
{
	const char *end = p + n;
	char q[48];

	r->has_segs = true;
	while (p < end) {
		const char *bar = memchr(p, '|', (size_t)(end - p));
		const char *stop = bar != NULL ? bar : end;
		const char *colon = memchr(p, ':', (size_t)(stop - p));
		uint64_t key, len;
		uint32_t c = col + (uint32_t)(p - (end - n));

		if (colon == NULL ||
		    wl__parse_u64(p, (size_t)(colon - p), &key) != WL_NUM_OK ||
		    wl__parse_u64(colon + 1, (size_t)(stop - colon - 1),
		    &len) != WL_NUM_OK || len == 0 || len >= (1u << 31))
			return row_error(t, c, "segments: expected key:len, "
			    "found '%s'", quote(p, (size_t)(stop - p), q,
			    sizeof(q)));
		if (!push_seg(t, &r->nsegs, key, (uint32_t)len))
			return row_error(t, c, "out of memory");
		p = bar != NULL ? bar + 1 : end;
	}
	return WL_OK;
}

static wl_err
hashes_csv(struct trace *t, struct row *r, const char *p, size_t n,
    uint32_t col)
{
	const char *end = p + n, *start = p;
	wl_err rc;

	while (p < end) {
		const char *bar = memchr(p, '|', (size_t)(end - p));
		const char *stop = bar != NULL ? bar : end;

		rc = push_hash(t, r, p, (size_t)(stop - p),
		    col + (uint32_t)(p - start));
		if (rc != WL_OK)
			return rc;
		p = bar != NULL ? bar + 1 : end;
	}
	r->has_segs = true;
	return WL_OK;
}

static wl_err
int_field(struct trace *t, const char *name, const char *p, size_t n,
    uint32_t col, int64_t lo, int64_t hi, int64_t *out)
{
	char q[48];

	if (wl__parse_i64(p, n, out) != WL_NUM_OK || *out < lo || *out > hi)
		return row_error(t, col, "%s: expected an integer in "
		    "[%" PRId64 ", %" PRId64 "], found '%s'", name, lo, hi,
		    quote(p, n, q, sizeof(q)));
	return WL_OK;
}

/* lora_field with workload.lora_adapters: the name's place in the list,
 * from 1, or an error naming the unknown adapter. */
static wl_err
lora_listed(struct trace *t, struct row *r, const char *p, size_t n,
    uint32_t col)
{
	uint32_t id = 1;

	for (const char *q = t->lfixed; *q != '\0'; id++) {
		const char *e = strchr(q, '\n');

		if ((size_t)(e - q) == n && memcmp(q, p, n) == 0) {
			r->lora = id;
			return WL_OK;
		}
		q = e + 1;
	}
	return row_error(t, col, "lora: unknown adapter '%.*s' (not in "
	    "workload.lora_adapters)", (int)(n > 64 ? 64 : n), p);
}

/* The id of adapter name p[0..n): its place in order of first
 * appearance, from 1. */
static wl_err
lora_field(struct trace *t, struct row *r, const char *p, size_t n,
    uint32_t col)
{
	char **nn;
	uint32_t cap;

	if (t->lfixed != NULL)
		return lora_listed(t, r, p, n, col);
	for (uint32_t i = 0; i < t->nlnames; i++)
		if (strlen(t->lnames[i]) == n &&
		    memcmp(t->lnames[i], p, n) == 0) {
			r->lora = i + 1;
			return WL_OK;
		}
	if (n > 255)
		return row_error(t, col, "lora: an adapter name of at most "
		    "255 bytes");
	if (t->nlnames == t->caplnames) {
		cap = t->caplnames ? t->caplnames * 2 : 8;
		nn = realloc(t->lnames, cap * sizeof(*nn));
		if (nn == NULL)
			return row_error(t, col, "out of memory");
		t->lnames = nn;
		t->caplnames = cap;
	}
	t->lnames[t->nlnames] = malloc(n + 1);
	if (t->lnames[t->nlnames] == NULL)
		return row_error(t, col, "out of memory");
	memcpy(t->lnames[t->nlnames], p, n);
	t->lnames[t->nlnames][n] = '\0';
	r->lora = ++t->nlnames;
	return WL_OK;
}

/* One value of role cs->role; raw text p[0..n) at column col. */
static wl_err
set_field(struct trace *t, struct row *r, const struct colspec *cs,
    const char *p, size_t n, uint32_t col, bool quoted)
{
	int64_t v;
	uint64_t u;
	wl_err rc;
	char q[48];

	switch (cs->role) {
	case R_TIME:
		return parse_time_field(t, r, cs, p, n, col);
	case R_PROMPT:
		r->prompt_col = col;
		return parse_len_field(t, r, cs->name, p, n, col, &r->prompt);
	case R_OUTPUT:
		return parse_len_field(t, r, cs->name, p, n, col, &r->output);
	case R_N:
		rc = int_field(t, cs->name, p, n, col, 1, INT32_MAX, &v);
		r->n = (uint32_t)v;
		return rc;
	case R_PRIORITY:
		rc = int_field(t, cs->name, p, n, col, INT32_MIN, INT32_MAX,
		    &v);
		r->priority = (int32_t)v;
		return rc;
	case R_TURN:
		rc = int_field(t, cs->name, p, n, col, 0, INT32_MAX, &v);
		r->turn = (uint32_t)v;
		return rc;
	case R_THINK:
		rc = int_field(t, cs->name, p, n, col, 0, INT64_MAX, &v);
		r->think = v;
		return rc;
	case R_OUTKEY:
		if (wl__parse_u64(p, n, &u) != WL_NUM_OK)
			return row_error(t, col, "%s: expected an unsigned "
			    "integer, found '%s'", cs->name,
			    quote(p, n, q, sizeof(q)));
		r->out_key = u;
		r->has_outkey = true;
		return WL_OK;
	case R_SESSION:
		if (n == 0 && !quoted)
			return WL_OK;	/* no session */
		if (t->fs->fmt == WL_FMT_KVSIM) {
			if (wl__parse_u64(p, n, &u) != WL_NUM_OK)
				return row_error(t, col, "%s: expected an "
				    "unsigned integer, found '%s'", cs->name,
				    quote(p, n, q, sizeof(q)));
			r->session = u;
		} else {
			r->session = hash_bytes(p, n) | 1;
		}
		return WL_OK;
	case R_SEGMENTS:
		if (n == 0)
			return WL_OK;
		r->seg_col = col;
		return parse_segments(t, r, p, n, col);
	case R_HASHES:
		if (n == 0)
			return WL_OK;
		r->hash_col = col;
		return hashes_csv(t, r, p, n, col);
	case R_LORA:
		return n == 0 ? WL_OK : lora_field(t, r, p, n, col);
	default:
		return WL_OK;
	}
}

static void quick_kinds(struct trace *t, const struct fmtspec *fs);

/* Map the header's columns onto fs->cols.  *ok false if not this format. */
static wl_err
map_header(struct trace *t, const struct fmtspec *fs, const char *line,
    size_t len, bool *ok, bool report)
{
	struct wl_field f[MAX_COLS + 1];
	bool seen[16] = { false };
	bool have_time = false;
	int k;

	*ok = false;
	k = wl__csv_split(line, len, f, MAX_COLS + 1);
	if (k < 0 || k > MAX_COLS) {
		if (report)
			return row_error(t, 1, "%s trace: cannot read the "
			    "header (%s)", fs->name, k < 0 ?
			    "unterminated quote" : "too many columns");
		return WL_OK;
	}
	for (int i = 0; i < k; i++) {
		const char *p = f[i].p;
		size_t n = f[i].n;

		t->colrole[i] = -1;
		if (i == 0 && n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) {
			p += 3;	/* UTF-8 byte order mark */
			n -= 3;
		}
		while (n > 0 && p[0] == ' ') {
			p++;
			n--;
		}
		while (n > 0 && p[n - 1] == ' ')
			n--;
		for (size_t c = 0; c < fs->ncols; c++) {
			if (strlen(fs->cols[c].name) != n ||
			    memcmp(fs->cols[c].name, p, n) != 0)
				continue;
			if (seen[c]) {
				if (report)
					return row_error(t, f[i].col,
					    "%s trace: column '%s' appears "
					    "twice", fs->name,
					    fs->cols[c].name);
				return WL_OK;
			}
			if (fs->cols[c].role == R_TIME) {
				if (have_time) {
					if (report)
						return row_error(t, f[i].col,
						    "%s trace: two time "
						    "columns", fs->name);
					return WL_OK;
				}
				have_time = true;
			}
			seen[c] = true;
			t->colrole[i] = (int8_t)c;
		}
		if (t->colrole[i] < 0 && fs->strict) {
			char q[48];

			if (report)
				return row_error(t, f[i].col, "%s trace: "
				    "unknown column '%s'", fs->name,
				    quote(p, n, q, sizeof(q)));
			return WL_OK;
		}
	}
	for (size_t c = 0; c < fs->ncols; c++)
		if (fs->cols[c].required && !seen[c]) {
			char q[48];

			if (report)
				return row_error(t, 1, "not %s format: the "
				    "header lacks column '%s' (header: '%s')",
				    fs->name, fs->cols[c].name,
				    quote(line, len, q, sizeof(q)));
			return WL_OK;
		}
	if (!have_time) {
		if (report)
			return row_error(t, 1, "%s trace: the header has no "
			    "time column", fs->name);
		return WL_OK;
	}
	t->ncols = k;
	*ok = true;
	quick_kinds(t, fs);
	return WL_OK;
}

/*
 * Whether the mapped columns are those wl__csv_quick reads -- a datetime,
 * the prompt's and the output's counts, and columns ignored (the azure
 * format) -- and each one's kind.
 */
static void
quick_kinds(struct trace *t, const struct fmtspec *fs)
{
	const unsigned all = 1u << WL_Q_TIME | 1u << WL_Q_COUNT0 |
	    1u << WL_Q_COUNT1;
	unsigned seen = 0;

	if (fs->json) {
		t->quick = false;
		return;
	}
	for (int i = 0; i < t->ncols; i++) {
		const struct colspec *cs = t->colrole[i] < 0 ? NULL :
		    &fs->cols[t->colrole[i]];

		if (cs == NULL || cs->role == R_IGNORE)
			t->qkind[i] = WL_Q_SKIP;
		else if (cs->role == R_TIME && cs->unit == T_DATETIME)
			t->qkind[i] = WL_Q_TIME;
		else if (cs->role == R_PROMPT)
			t->qkind[i] = WL_Q_COUNT0;
		else if (cs->role == R_OUTPUT)
			t->qkind[i] = WL_Q_COUNT1;
		else {
			t->quick = false;	/* a role it does not read */
			return;
		}
		seen |= 1u << t->qkind[i];
	}
	/* the three values (map_header maps each column once) */
	t->quick = (seen & all) == all;
}

static wl_err
parse_csv_row(struct trace *t, struct row *r, const char *line, size_t len)
{
	struct wl_field f[MAX_COLS + 1];
	struct wl_quick q;
	int k;
	wl_err rc;

	/* the usual row in one pass; any other as below, which reads the
	 * usual row the same way */
	if (t->quick && wl__csv_quick(line, len, t->qkind, t->ncols, &q)) {
		r->t = q.t;
		r->time_col = q.tcol;
		r->prompt = q.count[0];
		r->prompt_col = q.ccol[0];
		r->output = q.count[1];
		r->zero = q.count[0] == 0 || q.count[1] == 0;
		return WL_OK;
	}
	k = wl__csv_split(line, len, f, MAX_COLS + 1);
	if (k < 0)
		return row_error(t, 1, "unterminated quoted field");
	if (k != t->ncols)
		return row_error(t, k > t->ncols ? f[t->ncols].col :
		    (uint32_t)len + 1, "expected %d fields, found %d",
		    t->ncols, k);
	for (int i = 0; i < k; i++) {
		if (t->colrole[i] < 0)
			continue;
		rc = set_field(t, r, &t->fs->cols[t->colrole[i]], f[i].p,
		    f[i].n, f[i].col, f[i].quoted);
		if (rc != WL_OK)
			return rc;
	}
	return WL_OK;
}

static wl_err
jerr(struct trace *t, struct wl_jcur *j)
{
	return row_error(t, wl__j_col(j, j->at), "%s", j->what);
}

/* An array of unsigned integers: hash ids or token ids. */
static wl_err
json_uint_array(struct trace *t, struct row *r, struct wl_jcur *j,
    bool tokens)
{
	const char *s;
	size_t n;
	wl_err rc;

	if (!wl__j_expect(j, '['))
		return jerr(t, j);
	if (wl__j_peek(j, ']')) {
		j->p++;
		return WL_OK;
	}
	for (;;) {
		if (!wl__j_number(j, &s, &n))
			return jerr(t, j);
		if (tokens) {
			uint64_t v;
			char q[48];

			if (wl__parse_u64(s, n, &v) != WL_NUM_OK ||
			    v > UINT32_MAX)
				return row_error(t, wl__j_col(j, s), "token id:"
				    " expected an integer in [0, 2^32), found "
				    "'%s'", quote(s, n, q, sizeof(q)));
			if (!wl__grow((void **)&t->toks, &t->tokcap,
			    (size_t)r->ntoks + 1, sizeof(*t->toks)))
				return row_error(t, wl__j_col(j, s),
				    "out of memory");
			t->toks[r->ntoks++] = (uint32_t)v;
		} else {
			rc = push_hash(t, r, s, n, wl__j_col(j, s));
			if (rc != WL_OK)
				return rc;
		}
		if (wl__j_peek(j, ',')) {
			j->p++;
			continue;
		}
		if (!wl__j_expect(j, ']'))
			return jerr(t, j);
		return WL_OK;
	}
}

static wl_err
parse_json_row(struct trace *t, struct row *r, const char *line, size_t len)
{
	struct wl_jcur j;
	const struct fmtspec *fs = t->fs;
	bool seen[16] = { false };
	wl_err rc;

	wl__j_init(&j, line, len);
	if (!wl__j_expect(&j, '{')) {
		char q[48];

		return row_error(t, wl__j_col(&j, j.at), "expected a JSON "
		    "object, found '%s'", quote(line, len, q, sizeof(q)));
	}
	if (!wl__j_peek(&j, '}'))
		for (;;) {
			const char *key, *at;
			size_t kn;
			size_t c;

			wl__j_ws(&j);
			at = j.p;
			if (!wl__j_string(&j, &key, &kn) ||
			    !wl__j_expect(&j, ':'))
				return jerr(t, &j);
			wl__j_ws(&j);
			for (c = 0; c < fs->ncols; c++)
				if (strlen(fs->cols[c].name) == kn &&
				    memcmp(fs->cols[c].name, key, kn) == 0)
					break;
			if (c < fs->ncols && seen[c])
				return row_error(t, wl__j_col(&j, at),
				    "duplicate key \"%s\"", fs->cols[c].name);
			if (c == fs->ncols || fs->cols[c].role == R_IGNORE) {
				if (!wl__j_skip(&j))
					return jerr(t, &j);
			} else {
				const struct colspec *cs = &fs->cols[c];
				const char *s = j.p;
				size_t n;
				uint32_t col = wl__j_col(&j, j.p);

				seen[c] = true;
				switch (cs->role) {
				case R_HASHES:
					r->hash_col = col;
					r->has_segs = true;
					rc = json_uint_array(t, r, &j, false);
					break;
				case R_TOKENS:
					r->tok_col = col;
					r->has_toks = true;
					rc = json_uint_array(t, r, &j, true);
					break;
				case R_AGENTIC:
					return row_error(t, col, "agentic "
					    "sessions (sub_requests) are not "
					    "supported; flatten them into "
					    "one request per line");
				case R_SESSION:
					if (wl__j_peek(&j, '"')) {
						if (!wl__j_string(&j, &s, &n))
							return jerr(t, &j);
					} else if (!wl__j_number(&j, &s, &n)) {
						return jerr(t, &j);
					}
					rc = set_field(t, r, cs, s, n, col,
					    true);
					break;
				default:
					if (!wl__j_number(&j, &s, &n))
						return jerr(t, &j);
					rc = set_field(t, r, cs, s, n, col,
					    false);
					break;
				}
				if (rc != WL_OK)
					return rc;
			}
			if (wl__j_peek(&j, ',')) {
				j.p++;
				continue;
			}
			break;
		}
	if (!wl__j_expect(&j, '}'))
		return jerr(t, &j);
	wl__j_ws(&j);
	if (j.p != j.end)
		return row_error(t, wl__j_col(&j, j.p), "trailing characters "
		    "after the JSON object");
	for (size_t c = 0; c < fs->ncols; c++)
		if (fs->cols[c].required && !seen[c])
			return row_error(t, (uint32_t)len, "missing key \"%s\"",
			    fs->cols[c].name);
	return WL_OK;
}

/* Segments, tokens and identity of a parsed row; checks that they fit. */
static wl_err
finish_identity(struct trace *t, struct row *r)
{
	if (r->has_toks) {
		uint64_t h = WL_NS_TOK;

		if (r->ntoks != r->prompt)
			return row_error(t, r->tok_col, "input_tok_ids has %"
			    PRIu32 " ids, input_toks is %" PRIu32, r->ntoks,
			    r->prompt);
		for (uint32_t i = 0; i < r->ntoks; i++)
			h = wl_mix(h, t->toks[i]);
		r->nsegs = 0;
		if (!push_seg(t, &r->nsegs, h, r->prompt))
			return row_error(t, r->tok_col, "out of memory");
		return WL_OK;
	}
	if (r->seg_col != 0 && r->hash_col != 0)
		return row_error(t, r->hash_col, "a row has both segments and "
		    "hash_ids");
	if (r->has_segs && r->hash_col != 0) {
		uint64_t want = ((uint64_t)r->prompt + t->hb - 1) / t->hb;

		if (r->nsegs != want)
			return row_error(t, r->hash_col, "hash_ids has %" PRIu32
			    " ids; %" PRIu32 " tokens in blocks of %" PRIu32
			    " need %" PRIu64, r->nsegs, r->prompt, t->hb, want);
		if (r->nsegs > 0)
			t->segs[r->nsegs - 1].len = r->prompt -
			    (r->nsegs - 1) * t->hb;
		return WL_OK;
	}
	if (r->has_segs && r->nsegs > 0) {
		uint64_t sum = 0;

		for (uint32_t i = 0; i < r->nsegs; i++)
			sum += t->segs[i].len;
		if (sum != r->prompt)
			return row_error(t, r->seg_col, "segments cover %"
			    PRIu64 " tokens, prompt_tokens is %" PRIu32, sum,
			    r->prompt);
		return WL_OK;
	}
	r->nsegs = 0;
	if (!push_seg(t, &r->nsegs, wl_mix(t->row_ns, t->data_rows),
	    r->prompt))
		return row_error(t, 1, "out of memory");
	r->rowkey = true;
	return WL_OK;
}

/*
 * A row of gzip input that does not parse stops the stream: if the gzip
 * data is corrupt, say so rather than blame the garbage it inflated to.
 */
static wl_err
gz_blame(struct trace *t, wl_err rc)
{
	struct wl_error *e = &t->base.p->err, ge;
	char what[sizeof(e->what)];

	if ((rc != WL_EPARSE && rc != WL_EORDER) ||
	    !wl__lines_gz_corrupt(&t->lr, &ge))
		return rc;
	snprintf(what, sizeof(what), "%.200s; line %llu did not parse (%.250s)",
	    ge.what, (unsigned long long)e->line, e->what);
	snprintf(e->what, sizeof(e->what), "%s", what);
	e->line = 0;
	e->col = 0;
	return WL_EPARSE;
}

/*
 * A wall-clock time relative to the first row's.  A difference beyond
 * int64 nanoseconds (about 292 years either way) is an error for every
 * order mode, so it can neither wrap nor be dropped as out of order.
 */
static wl_err
rebase(struct trace *t, struct row *r)
{
	int64_t a = r->t, b = t->t_base;
	char x[48], y[48];

	if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b)) {
		wl__format_datetime(a, x, sizeof(x));
		wl__format_datetime(b, y, sizeof(y));
		return row_error(t, r->time_col, "timestamp %s is more than "
		    "292 years %s the first row's %s (line %" PRIu64 "): "
		    "arrival times count nanoseconds from the first row in "
		    "64 bits", x, a < b ? "before" : "after", y,
		    t->base_line);
	}
	r->t = a - b;
	return WL_OK;
}

static wl_err
trace_next(struct wl_stage *st, struct wl_request *out)
{
	struct trace *t = (struct trace *)st;
	struct wl_stream *p = st->p;

	for (;;) {
		const char *line;
		size_t len;
		struct row r;
		wl_err rc;

		if (t->pending != NULL) {
			line = t->pending;
			len = t->pending_len;
			t->pending = NULL;
		} else {
			rc = wl__lines_next(&t->lr, &line, &len, &p->err);
			if (rc == WL_END) {
				if (t->data_rows == 0)
					return wl__fail(p, WL_EPARSE,
					    t->lr.name, t->lr.line + 1, 1,
					    "no requests in the trace");
				return WL_END;
			}
			if (rc != WL_OK)
				return rc;
		}
		if (len == 0 || (t->fs->fmt == WL_FMT_KVSIM && line[0] == '#'))
			continue;
		p->cnt.rows++;
		memset(&r, 0, sizeof(r));
		r.n = 1;
		r.t = -1;
		rc = t->fs->json ? parse_json_row(t, &r, line, len) :
		    parse_csv_row(t, &r, line, len);
		if (rc == WL_OK && !r.zero && !r.huge)
			rc = finish_identity(t, &r);
		if (rc == WL_OK && t->fs->absolute) {
			if (!t->have_base) {
				t->have_base = true;
				t->t_base = r.t;
				t->base_line = t->lr.line;
				p->info.has_epoch = true;
				p->info.epoch_ns = r.t;
			}
			if (rebase(t, &r) != WL_OK) {
				/* not this row's fault alone: never skipped */
				t->data_rows++;
				return gz_blame(t, WL_EPARSE);
			}
			if (r.t < 0 && t->order == WL_ORDER_SORT)
				rc = row_error(t, 1, "timestamp is earlier "
				    "than the first row's; a sorted trace must "
				    "start with its earliest row");
		}
		t->data_rows++;
		if (rc != WL_OK) {
			if (rc != WL_EPARSE || t->on_error != WL_ON_ERROR_SKIP)
				return gz_blame(t, rc);
			if (p->cnt.skipped++ == 0)
				p->cnt.first_skip = p->err;
			wl_error_clear(&p->err);
			continue;
		}
		if (r.zero || r.huge) {
			if (r.huge)
				p->cnt.rej_huge++;
			else
				p->cnt.rej_zero++;
			continue;
		}
		if (t->have_last && r.t < t->last &&
		    t->order != WL_ORDER_SORT) {
			if (t->order == WL_ORDER_SKIP) {
				p->cnt.rej_order++;
				continue;
			}
			rc = wl__fail(p, WL_EORDER, t->lr.name, t->lr.line,
			    r.time_col,
			    "timestamp %.9f s is earlier than the previous "
			    "row's %.9f s (set order: sort or order: skip)",
			    (double)r.t / 1e9, (double)t->last / 1e9);
			return gz_blame(t, rc);
		}
		t->have_last = true;
		t->last = r.t;
		memset(out, 0, sizeof(*out));
		out->arrival_ns = r.t;
		out->prompt_tokens = r.prompt;
		out->output_tokens = r.output;
		out->priority = r.priority;
		out->n = r.n;
		out->session = r.session;
		out->turn = r.turn;
		out->think_ns = r.think;
		out->out_key = r.has_outkey ? r.out_key :
		    wl_mix(t->out_ns, t->data_rows - 1);
		out->src_line = t->lr.line;
		out->nsegs = r.nsegs;
		out->segs = t->segs;
		out->tokens = r.has_toks ? t->toks : NULL;
		out->lora = r.lora;
		/* a session's later turns may begin with its earlier ones */
		out->unique = r.rowkey && r.session == 0;
		return WL_OK;
	}
}

static void
trace_free(struct wl_stage *st)
{
	struct trace *t = (struct trace *)st;

	wl__lines_close(&t->lr);
	free(t->segs);
	free(t->toks);
	for (uint32_t i = 0; i < t->nlnames; i++)
		free(t->lnames[i]);
	free(t->lnames);
	free(t);
}

static int
trace_check(const struct wl_stage *st)
{
	const struct trace *t = (const struct trace *)st;

	return st->nout > t->data_rows ? WL_CHECK_TRACE : 0;
}

static const struct wl_stage_ops trace_ops = { trace_next, trace_free,
	trace_check };

/* First non-blank line (and, for kvsim CSV, non-comment); WL_END if none. */
static wl_err
first_line(struct trace *t, enum wl_format fmt, const char **line,
    size_t *len)
{
	bool comments = fmt == WL_FMT_AUTO || fmt == WL_FMT_KVSIM;
	wl_err rc;

	do {
		rc = wl__lines_next(&t->lr, line, len, &t->base.p->err);
		if (rc != WL_OK)
			return rc;
	} while (*len == 0 || (comments && (*line)[0] == '#'));
	return WL_OK;
}

static const struct fmtspec *
detect(struct trace *t, const char *line, size_t len)
{
	bool ok;

	if (len > 0 && line[0] == '{') {
		if (contains(line, len, "\"input_toks\"") ||
		    contains(line, len, "\"sub_requests\""))
			return spec_of(WL_FMT_LLMSS);
		if (contains(line, len, "\"input_length\""))
			return spec_of(WL_FMT_MOONCAKE);
		return NULL;
	}
	for (size_t i = 0; i < NELEM(formats); i++) {
		if (formats[i].json)
			continue;
		if (map_header(t, &formats[i], line, len, &ok, false) ==
		    WL_OK && ok)
			return &formats[i];
	}
	return NULL;
}

wl_err
wl__trace_open(struct wl_stream *p, const struct wl_config *c,
    const char *path, enum wl_format fmt, struct wl_stage **out)
{
	struct trace *t;
	const char *line;
	size_t len;
	wl_err rc;
	bool ok;

	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return wl__fail(p, WL_ENOMEM, path, 0, 0, "out of memory");
	t->base.ops = &trace_ops;
	t->base.p = p;
	t->on_error = c->on_error;
	t->order = c->order;
	t->lfixed = c->lora_names;
	t->hb = c->hash_block_tokens;
	t->seed = c->seed;
	t->row_ns = wl_mix(c->seed, WL_NS_ROW);
	t->out_ns = wl_mix(c->seed, WL_NS_OUT);
	rc = wl__lines_open(&t->lr, path, &p->err);
	if (rc != WL_OK) {
		free(t);
		return rc;
	}
	rc = first_line(t, fmt, &line, &len);
	if (rc == WL_END) {
		rc = wl__fail(p, WL_EPARSE, t->lr.name, 0, 0, "empty file");
		goto fail;
	}
	if (rc != WL_OK)
		goto fail;
	if (fmt == WL_FMT_AUTO) {
		t->fs = detect(t, line, len);
		if (t->fs == NULL) {
			char q[48];

			rc = wl__fail(p, WL_EFORMAT, t->lr.name, t->lr.line, 1,
			    "cannot detect the trace format from '%s'; set "
			    "format: (azure, mooncake, burstgpt, splitwise, "
			    "vidur, llmservingsim, kvsim)",
			    quote(line, len, q, sizeof(q)));
			goto fail;
		}
	} else {
		t->fs = spec_of(fmt);
	}
	p->info.format = t->fs->name;
	if (t->fs->json) {
		if (line[0] != '{') {
			char q[48];

			rc = wl__fail(p, WL_EFORMAT, t->lr.name, t->lr.line, 1,
			    "not %s format: expected a JSON object per line, "
			    "found '%s'", t->fs->name,
			    quote(line, len, q, sizeof(q)));
			goto fail;
		}
		t->pending = line;
		t->pending_len = len;
	} else {
		rc = map_header(t, t->fs, line, len, &ok, true);
		if (rc != WL_OK) {
			rc = WL_EFORMAT;
			goto fail;
		}
	}
	if (t->fs->fmt == WL_FMT_MOONCAKE)
		p->info.hash_block = t->hb;
	if (t->fs->fmt == WL_FMT_KVSIM)
		for (int i = 0; i < t->ncols; i++)
			if (t->colrole[i] >= 0 &&
			    t->fs->cols[t->colrole[i]].role == R_HASHES)
				p->info.hash_block = t->hb;
	if (t->fs->fmt == WL_FMT_LLMSS)
		p->info.has_tokens = true;
	*out = &t->base;
	return WL_OK;
fail:
	trace_free(&t->base);
	return rc;
}
