/*
 * check_wl.c -- workloads/: parsers, every trace reader on the committed
 * fixtures (tests/fixtures/wl), bad input with its exact FILE:LINE:COL
 * message, transformations, the YAML `workload:` section (read, and
 * written back by wl_config_write_yaml to the same stream) and the kvsim
 * CSV round trip.  Generators: check_wl_gen.c; real traces:
 * check_wl_traces.c.
 */
#include "config.h"

#include "workloads/wl.h"
#include "workloads/wl_int.h"
#include "util/ydoc.h"

#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXR 64

/* A request with its identity copied out of the stream's buffers. */
struct req {
	struct wl_request r;
	struct wl_seg segs[16];
	uint32_t toks[8];
	bool has_toks;
};

static const char *
fx(const char *name)
{
	static char path[4][1024];
	static int k;
	const char *top = getenv("top_srcdir");

	k = (k + 1) % 4;
	snprintf(path[k], sizeof(path[k]), "%s/tests/fixtures/wl/%s",
	    top != NULL ? top : ".", name);
	return path[k];
}

static void
cfg_trace(struct wl_config *c, const char *name)
{
	wl_config_init(c);
	c->trace = strdup(fx(name));
	ck_assert_ptr_nonnull(c->trace);
}

/* Read up to MAXR requests; returns the final code. */
static wl_err
drain(const struct wl_config *c, struct req *out, size_t *n,
    struct wl_counts *cnt, char *msg, size_t msgsize)
{
	wl_stream *s;
	struct wl_error err;
	wl_err rc;

	*n = 0;
	msg[0] = '\0';
	rc = wl_open(c, &s, &err);
	if (rc != WL_OK) {
		wl_error_format(&err, msg, msgsize);
		return rc;
	}
	for (;;) {
		struct wl_request r;

		rc = wl_stream_next(s, &r);
		ck_assert_int_eq(wl_stream_check(s), 0);
		if (rc != WL_OK)
			break;
		ck_assert_uint_lt(*n, MAXR);
		out[*n].r = r;
		ck_assert_uint_le(r.nsegs, 16);
		memcpy(out[*n].segs, r.segs, r.nsegs * sizeof(r.segs[0]));
		out[*n].r.segs = out[*n].segs;
		out[*n].has_toks = r.tokens != NULL;
		if (r.tokens != NULL)
			memcpy(out[*n].toks, r.tokens, (r.prompt_tokens < 8 ?
			    r.prompt_tokens : 8) * sizeof(uint32_t));
		out[*n].r.tokens = NULL;
		(*n)++;
	}
	if (cnt != NULL)
		*cnt = *wl_stream_counts(s);
	if (rc != WL_END)
		wl_error_format(wl_stream_error(s), msg, msgsize);
	wl_stream_free(s);
	return rc;
}

/* ---------------------------------------------------------------- parse */

/* Datetimes: calendar fields, leap years, the int64 ns range. */
static void
datetime_ranges(void)
{
	static const struct {
		const char *text;
		enum wl_num rc;
		int64_t ns;
	} dt[] = {
		{ "2023-02-29 00:00:00", WL_NUM_BAD, 0 },
		{ "1900-02-29 00:00:00", WL_NUM_BAD, 0 },
		{ "2023-04-31 00:00:00", WL_NUM_BAD, 0 },
		{ "2023-00-10 00:00:00", WL_NUM_BAD, 0 },
		{ "2023-01-00 00:00:00", WL_NUM_BAD, 0 },
		{ "2023-01-01 00:60:00", WL_NUM_BAD, 0 },
		{ "2023-01-01 00:00:61", WL_NUM_BAD, 0 },
		{ "2023-06-30 12:59:60", WL_NUM_BAD, 0 },
		{ "2023-01-01 00:00:00.5e3", WL_NUM_BAD, 0 },
		{ "2023-01-01 00:00:00.-5", WL_NUM_BAD, 0 },
		{ "2023-01-01 00:00:00Z", WL_NUM_BAD, 0 },
		{ "2024-02-29 00:00:00", WL_NUM_OK, 1709164800000000000 },
		{ "2000-02-29 00:00:00", WL_NUM_OK, 951782400000000000 },
		{ "2016-12-31 23:59:60", WL_NUM_OK, 1483228800000000000 },
		{ "1969-12-31 23:59:59.25", WL_NUM_OK, -750000000 },
		{ "1970-01-01 00:00:00.9999999999", WL_NUM_OK, 1000000000 },
		{ "2262-04-11 23:47:16.854775807", WL_NUM_OK, INT64_MAX },
		{ "2262-04-11 23:47:16.854775808", WL_NUM_HUGE, 0 },
		{ "2262-04-11 23:47:16.8547758075", WL_NUM_HUGE, 0 },
		{ "1677-09-21 00:12:43.145224192", WL_NUM_OK, INT64_MIN },
		{ "1677-09-21 00:12:43.145224191", WL_NUM_HUGE, 0 },
		{ "9999-12-31 23:59:60.9999999999", WL_NUM_HUGE, 0 },
		{ "1600-01-01 00:00:00", WL_NUM_HUGE, 0 },
		{ "0000-01-01 00:00:00", WL_NUM_HUGE, 0 },
	};
	char many[128];
	int64_t t;

	for (size_t i = 0; i < sizeof(dt) / sizeof(dt[0]); i++) {
		enum wl_num rc = wl__parse_datetime(dt[i].text,
		    strlen(dt[i].text), &t);

		ck_assert_msg(rc == dt[i].rc, "%s: %d", dt[i].text, (int)rc);
		if (rc == WL_NUM_OK)
			ck_assert_msg(t == dt[i].ns, "%s: %" PRId64,
			    dt[i].text, t);
	}
	/* any number of fraction digits: the 10th rounds, the rest go */
	snprintf(many, sizeof(many), "2000-01-01 00:00:00.%0100d", 1);
	ck_assert_int_eq(wl__parse_datetime(many, strlen(many), &t),
	    WL_NUM_OK);
	ck_assert_int_eq(t, 946684800000000000);
	/* and back to text, across the whole range */
	wl__format_datetime(INT64_MIN, many, sizeof(many));
	ck_assert_str_eq(many, "1677-09-21 00:12:43.145224192");
	wl__format_datetime(INT64_MAX, many, sizeof(many));
	ck_assert_str_eq(many, "2262-04-11 23:47:16.854775807");
	wl__format_datetime(-750000000, many, sizeof(many));
	ck_assert_str_eq(many, "1969-12-31 23:59:59.250000000");
	wl__format_datetime(1709164800000000000, many, sizeof(many));
	ck_assert_str_eq(many, "2024-02-29 00:00:00");
}

/*
 * wl__csv_quick (and wl__datetime_quick) against the general reading --
 * wl__csv_split, wl__parse_datetime, wl__parse_len -- on rows built from
 * fields the quick reading takes and fields it must leave: every row it
 * reads, it reads as they do; every row it leaves is one they read
 * otherwise or refuse; and it reads the usual rows.
 */
static const char *const quick_times[] = {
	"2023-11-16 18:15:46.6805900", "2023-11-16T18:15:46.6805900",
	"2023-11-16 18:15:46", "2024-02-29 00:00:00.5",
	"2016-12-31 23:59:60.123456789", "1969-12-31 23:59:59.25",
	"2262-04-11 23:47:16.854775807", "1677-09-21 00:12:43.145224192",
	/* left to the general reading: read there, or refused */
	"2023-11-16 18:15:46.", "2023-11-16 18:15:46.1234567891",
	" 2023-11-16 18:15:46", "2023-11-16 18:15:46 ", "2023-02-29 00:00:00",
	"2023-11-16 18:15:46.68x", "2023-11-16 18:15:4", "2023/11/16 18:15:46",
	"2262-04-11 23:47:16.854775808", "9999-12-31 23:59:59", "",
	"2023-11-16 18:15:46.-5", "2023-11-16 24:00:00", "2023-13-01 00:00:00",
};
static const char *const quick_counts[] = {
	"374", "0", "007", "999999999", "1", "4096",
	/* left to the general reading */
	"1234567890", "0000000001", "2147483648", "", "-5", "+5", " 5",
	"5 ", "5.0", "x", "\"5\"",
};
static const char *const quick_skips[] = {
	"", "gpt-4", "a b", "\"a,b\"", "x\"y",
};

static bool
quick_general(const char *line, const uint8_t *kind, int ncols,
    struct wl_quick *q)
{
	struct wl_field f[8];
	int k = wl__csv_split(line, strlen(line), f, 8);

	if (k != ncols)
		return false;
	for (int i = 0; i < k; i++) {
		if (kind[i] == WL_Q_TIME) {
			if (wl__parse_datetime(f[i].p, f[i].n, &q->t) !=
			    WL_NUM_OK)
				return false;
			q->tcol = f[i].col;
		} else if (kind[i] != WL_Q_SKIP) {
			uint32_t c = kind[i] - WL_Q_COUNT0;

			if (wl__parse_len(f[i].p, f[i].n, &q->count[c]) !=
			    WL_NUM_OK)
				return false;
			q->ccol[c] = f[i].col;
		}
	}
	return true;
}

static void
quick_row(const char *line, const uint8_t *kind, int ncols, bool usual,
    unsigned *nquick)
{
	struct wl_quick a, b;
	bool qa, qb;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	qa = wl__csv_quick(line, strlen(line), kind, ncols, &a);
	qb = quick_general(line, kind, ncols, &b);
	/* read quick: read so by the general path too */
	ck_assert_msg(!qa || (qb && a.t == b.t && a.tcol == b.tcol &&
	    memcmp(a.count, b.count, sizeof(a.count)) == 0 &&
	    memcmp(a.ccol, b.ccol, sizeof(a.ccol)) == 0),
	    "'%s': quick %" PRId64 "@%u %u@%u %u@%u, general %d %" PRId64
	    "@%u %u@%u %u@%u", line, a.t, a.tcol, a.count[0], a.ccol[0],
	    a.count[1], a.ccol[1], qb, b.t, b.tcol, b.count[0], b.ccol[0],
	    b.count[1], b.ccol[1]);
	ck_assert_msg(qa || !usual, "'%s': a usual row left", line);
	*nquick += qa;
}

START_TEST(test_csv_quick)
{
	static const uint8_t azure[] = { WL_Q_TIME, WL_Q_COUNT0, WL_Q_COUNT1 };
	static const uint8_t wide[] = { WL_Q_SKIP, WL_Q_COUNT1, WL_Q_TIME,
		WL_Q_SKIP, WL_Q_COUNT0 };
	const size_t nt = sizeof(quick_times) / sizeof(quick_times[0]);
	const size_t nc = sizeof(quick_counts) / sizeof(quick_counts[0]);
	const size_t ns = sizeof(quick_skips) / sizeof(quick_skips[0]);
	unsigned nquick = 0, nrows = 0;
	char line[256];
	int64_t t;

	/* the times alone: the quick reading's are the general one's */
	for (size_t i = 0; i < nt; i++) {
		const char *s = quick_times[i];
		int64_t u;
		bool q = wl__datetime_quick(s, strlen(s), &t);

		ck_assert_msg(q == (i < 8), "'%s': %d", s, q);
		if (q) {
			ck_assert_int_eq(wl__parse_datetime(s, strlen(s), &u),
			    WL_NUM_OK);
			ck_assert_msg(t == u, "'%s': %" PRId64 " != %" PRId64,
			    s, t, u);
		}
	}
	/* every row of three fields, of five, and with one too many or few */
	for (size_t i = 0; i < nt; i++)
		for (size_t a = 0; a < nc; a++)
			for (size_t b = 0; b < nc; b++) {
				bool usual = i < 8 && a < 6 && b < 6;

				snprintf(line, sizeof(line), "%s,%s,%s",
				    quick_times[i], quick_counts[a],
				    quick_counts[b]);
				quick_row(line, azure, 3, usual, &nquick);
				snprintf(line, sizeof(line), "%s,%s,%s,",
				    quick_times[i], quick_counts[a],
				    quick_counts[b]);
				quick_row(line, azure, 3, false, &nquick);
				snprintf(line, sizeof(line), "%s,%s",
				    quick_times[i], quick_counts[a]);
				quick_row(line, azure, 3, false, &nquick);
				for (size_t k = 0; k < ns; k++) {
					snprintf(line, sizeof(line),
					    "%s,%s,%s,%s,%s", quick_skips[k],
					    quick_counts[b], quick_times[i],
					    quick_skips[ns - 1 - k],
					    quick_counts[a]);
					quick_row(line, wide, 5, usual &&
					    k < 3 && ns - 1 - k < 3, &nquick);
				}
				nrows += 3 + ns;
			}
	/* the checks checked both ways */
	ck_assert_uint_gt(nquick, 8 * 6 * 6);
	ck_assert_uint_lt(nquick, nrows / 2);
}
END_TEST

START_TEST(test_parse_numbers)
{
	uint32_t u;
	int64_t t;
	struct wl_field f[8];
	const char *line = "a,\"b,\"\"c\",,d";

	ck_assert_int_eq(wl__parse_len("374", 3, &u), WL_NUM_OK);
	ck_assert_uint_eq(u, 374);
	ck_assert_int_eq(wl__parse_len("2147483647", 10, &u), WL_NUM_OK);
	ck_assert_int_eq(wl__parse_len("2147483648", 10, &u), WL_NUM_HUGE);
	ck_assert_int_eq(wl__parse_len("99999999999999999999999", 23, &u),
	    WL_NUM_HUGE);
	ck_assert_int_eq(wl__parse_len("-5", 2, &u), WL_NUM_NEG);
	ck_assert_int_eq(wl__parse_len("5.0", 3, &u), WL_NUM_BAD);
	ck_assert_int_eq(wl__parse_len("", 0, &u), WL_NUM_BAD);
	ck_assert_int_eq(wl__parse_len("1,", 2, &u), WL_NUM_BAD);
	/* Decimal text to ns, exactly, half up below 1 ns. */
	ck_assert_int_eq(wl__parse_time("5.8926549999999995", 18,
	    1000000000, &t), WL_NUM_OK);
	ck_assert_int_eq(t, 5892655000LL);
	ck_assert_int_eq(wl__parse_time("4.314579", 8, 1000000000, &t),
	    WL_NUM_OK);
	ck_assert_int_eq(t, 4314579000LL);
	ck_assert_int_eq(wl__parse_time("0.0000000014", 12, 1000000000, &t),
	    WL_NUM_OK);
	ck_assert_int_eq(t, 1);
	ck_assert_int_eq(wl__parse_time("3536999", 7, 1000000, &t),
	    WL_NUM_OK);
	ck_assert_int_eq(t, 3536999000000LL);
	ck_assert_int_eq(wl__parse_time("1e1", 3, 1000000000, &t),
	    WL_NUM_OK);
	ck_assert_int_eq(t, 10000000000LL);
	ck_assert_int_eq(wl__parse_time(".5", 2, 1000000000, &t), WL_NUM_OK);
	ck_assert_int_eq(t, 500000000);
	ck_assert_int_eq(wl__parse_time("-1", 2, 1, &t), WL_NUM_NEG);
	ck_assert_int_eq(wl__parse_time("1.2.3", 5, 1, &t), WL_NUM_BAD);
	ck_assert_int_eq(wl__parse_time("x", 1, 1, &t), WL_NUM_BAD);
	ck_assert_int_eq(wl__parse_time("99999999999", 11, 1000000000, &t),
	    WL_NUM_HUGE);
	/* Calendar: 2023-11-16 is day 19677; leap days; round trips. */
	ck_assert_int_eq(wl__days_from_civil(1970, 1, 1), 0);
	ck_assert_int_eq(wl__days_from_civil(2023, 11, 16), 19677);
	ck_assert_int_eq(wl__days_from_civil(2024, 3, 1) -
	    wl__days_from_civil(2024, 2, 28), 2);
	for (int64_t d = -800000; d < 800000; d += 997) {
		int64_t y;
		unsigned m, dd;

		wl__civil_from_days(d, &y, &m, &dd);
		ck_assert_int_eq(wl__days_from_civil(y, m, dd), d);
	}
	ck_assert_int_eq(wl__parse_datetime("2023-11-16 18:15:46.6805900",
	    27, &t), WL_NUM_OK);
	ck_assert_int_eq(t, (19677LL * 86400 + 18 * 3600 + 15 * 60 + 46) *
	    1000000000LL + 680590000);
	ck_assert_int_eq(wl__parse_datetime("2023-02-30 00:00:00", 19, &t),
	    WL_NUM_BAD);
	ck_assert_int_eq(wl__parse_datetime("2023-11-16 24:00:00", 19, &t),
	    WL_NUM_BAD);
	ck_assert_int_eq(wl__parse_datetime("2023-11-16 18:15:46.", 20, &t),
	    WL_NUM_BAD);
	datetime_ranges();
	/* CSV with quotes. */
	ck_assert_int_eq(wl__csv_split(line, strlen(line), f, 8), 4);
	ck_assert_int_eq((int)f[1].n, 5);
	ck_assert(strncmp(f[1].p, "b,\"\"c", 5) == 0);
	ck_assert_uint_eq(f[1].col, 3);
	ck_assert_uint_eq(f[2].n, 0);
	ck_assert_uint_eq(f[3].col, 12);
	ck_assert_int_eq(wl__csv_split("\"x", 2, f, 8), -1);
}
END_TEST

/* -------------------------------------------------------------- readers */

START_TEST(test_azure)
{
	struct wl_config c;
	struct req q[MAXR];
	size_t n;
	char msg[1200];
	wl_stream *s;
	struct wl_error err;
	static const int64_t at[] = { 0, 4314579000LL, 4314579000LL,
		59319410100LL, 20653319409900LL, 20653319410000LL };
	static const uint32_t in[] = { 374, 396, 879, 2, 14050, 91 };
	static const uint32_t out[] = { 44, 109, 55, 7, 1000, 16 };

	cfg_trace(&c, "azure.csv");
	ck_assert_int_eq(drain(&c, q, &n, NULL, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 6);	/* CRLF, last row without newline */
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(q[i].r.id, i);
		ck_assert_int_eq(q[i].r.arrival_ns, at[i]);
		ck_assert_uint_eq(q[i].r.prompt_tokens, in[i]);
		ck_assert_uint_eq(q[i].r.output_tokens, out[i]);
		ck_assert_uint_eq(q[i].r.n, 1);
		ck_assert_uint_eq(q[i].r.nsegs, 1);
		ck_assert_uint_eq(q[i].segs[0].len, in[i]);
		ck_assert_uint_eq(q[i].r.src_line, i + 2);
	}
	/* Rows have distinct identities: no accidental prefix sharing. */
	ck_assert_uint_ne(q[0].segs[0].key, q[1].segs[0].key);
	ck_assert_int_eq(wl_open(&c, &s, &err), WL_OK);
	ck_assert_str_eq(wl_stream_info(s)->format, "azure");
	/* The wall clock of arrival 0 is known once a row has been read. */
	ck_assert_int_eq(wl_stream_next(s, &q[0].r), WL_OK);
	ck_assert(wl_stream_info(s)->has_epoch);
	ck_assert_int_eq(wl_stream_info(s)->epoch_ns, (19677LL * 86400 +
	    18 * 3600 + 15 * 60 + 46) * 1000000000LL + 680590000);
	wl_stream_free(s);
	wl_config_release(&c);
}
END_TEST

static void
same_requests(const struct req *a, size_t na, const struct req *b, size_t nb)
{
	ck_assert_uint_eq(na, nb);
	for (size_t i = 0; i < na; i++) {
		ck_assert_int_eq(a[i].r.arrival_ns, b[i].r.arrival_ns);
		ck_assert_uint_eq(a[i].r.prompt_tokens, b[i].r.prompt_tokens);
		ck_assert_uint_eq(a[i].r.output_tokens, b[i].r.output_tokens);
		ck_assert_uint_eq(a[i].r.out_key, b[i].r.out_key);
		ck_assert_uint_eq(a[i].r.nsegs, b[i].r.nsegs);
		for (uint32_t k = 0; k < a[i].r.nsegs; k++) {
			ck_assert_uint_eq(a[i].segs[k].key, b[i].segs[k].key);
			ck_assert_uint_eq(a[i].segs[k].len, b[i].segs[k].len);
		}
	}
}

START_TEST(test_mooncake_gzip)
{
	struct wl_config c;
	struct req a[MAXR], b[MAXR];
	size_t na, nb;
	char msg[1200], want[1200];
	wl_err rc;

	cfg_trace(&c, "mooncake.jsonl");
	ck_assert_int_eq(drain(&c, a, &na, NULL, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(na, 5);
	wl_config_release(&c);
	cfg_trace(&c, "mooncake.jsonl.gz");
	rc = drain(&c, b, &nb, NULL, msg, sizeof(msg));
	if (!wl_gzip_supported()) {
		snprintf(want, sizeof(want), "%s: gzip-compressed input, and "
		    "this kvsim was built without zlib; decompress it first "
		    "(gzip -dc)", c.trace);
		ck_assert_int_eq(rc, WL_EGZIP);
		ck_assert_str_eq(msg, want);
		wl_config_release(&c);
		return;
	}
	ck_assert_int_eq(rc, WL_END);
	same_requests(a, na, b, nb);
	wl_config_release(&c);
	/* Truncated and corrupt gzip are refused, never read short. */
	cfg_trace(&c, "truncated.jsonl.gz");
	ck_assert_int_eq(drain(&c, b, &nb, NULL, msg, sizeof(msg)),
	    WL_EPARSE);
	snprintf(want, sizeof(want), "%s: truncated gzip stream", c.trace);
	ck_assert_str_eq(msg, want);
	wl_config_release(&c);
	cfg_trace(&c, "corrupt.jsonl.gz");
	rc = drain(&c, b, &nb, NULL, msg, sizeof(msg));
	ck_assert(rc == WL_EPARSE);
	ck_assert_msg(strstr(msg, "gzip data is corrupt") != NULL, "%s", msg);
	wl_config_release(&c);
}
END_TEST

static uint32_t
crc32_of(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
	}
	return ~c;
}

static void
put_le(FILE *f, uint32_t v, int n)
{
	for (int i = 0; i < n; i++)
		fputc((int)(v >> (8 * i)) & 0xff, f);
}

/*
 * A gzip member of stored deflate blocks holding text, its CRC right or
 * wrong; written to a temporary file whose name goes to path.
 */
static void
write_gzip(char *path, size_t len, const unsigned char *text, size_t n,
    bool good_crc)
{
	const char *t = getenv("TMPDIR");
	int fd;
	FILE *f;

	/* mkstemp() fills in the unique suffix */
	snprintf(path, len, "%s/kvsim-check-gz.XXXXXX", t ? t : "/tmp");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "wb");
	ck_assert_ptr_nonnull(f);
	fwrite("\x1f\x8b\x08\0\0\0\0\0\0\xff", 1, 10, f);
	for (size_t at = 0; at < n; at += 65535) {
		uint32_t len = n - at > 65535 ? 65535 : (uint32_t)(n - at);

		fputc(at + len == n ? 1 : 0, f);	/* BFINAL, stored */
		put_le(f, len, 2);
		put_le(f, ~len & 0xffff, 2);
		fwrite(text + at, 1, len, f);
	}
	put_le(f, crc32_of(text, n) ^ (good_crc ? 0 : 1), 4);
	put_le(f, (uint32_t)n, 4);
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * A corrupt byte inflates to garbage before zlib's check at the end of the
 * member sees it: a line that does not parse in gzip input is blamed on
 * the gzip data when the data is corrupt, on the line when it is not.
 * Over 1 MiB of text, so that the line is read before the end.
 */
START_TEST(test_gzip_corrupt_text)
{
	static const char row[] = "{\"timestamp\": 0, \"input_length\": 1200, "
	    "\"output_length\": 10, \"hash_ids\": [0, 1, 2]}\n";
	size_t rl = sizeof(row) - 1, n = 0, cap = 16000 * rl;
	unsigned char *text = malloc(cap);
	struct wl_config c;
	struct req q[MAXR];
	size_t nq;
	char path[512], msg[1200], want[1200];

	if (!wl_gzip_supported()) {
		free(text);
		return;
	}
	ck_assert_ptr_nonnull(text);
	for (int i = 0; i < 16000; i++) {
		memcpy(text + n, row, rl);
		if (i == 2)	/* line 3: "timestamp": @ */
			text[n + 14] = '@';
		n += rl;
	}
	for (int good = 0; good < 2; good++) {
		write_gzip(path, sizeof(path), text, n, good);
		wl_config_init(&c);
		c.trace = strdup(path);
		ck_assert_int_eq(drain(&c, q, &nq, NULL, msg, sizeof(msg)),
		    WL_EPARSE);
		ck_assert_uint_eq(nq, 2);
		if (good)
			snprintf(want, sizeof(want), "%s:3:15: expected a "
			    "number", path);
		else
			snprintf(want, sizeof(want), "%s: gzip data is corrupt "
			    "(zlib: incorrect data check); line 3 did not "
			    "parse (expected a number)", path);
		ck_assert_str_eq(msg, want);
		wl_config_release(&c);
		unlink(path);
	}
	free(text);
}
END_TEST

/* Shared hash ids give shared leading token ids at any block size. */
START_TEST(test_mooncake_mapping)
{
	struct wl_config c;
	struct req q[MAXR];
	size_t n;
	char msg[1200];
	uint32_t *t0 = malloc(2049 * sizeof(uint32_t));
	uint32_t *t1 = malloc(2049 * sizeof(uint32_t));
	uint32_t *t4 = malloc(2049 * sizeof(uint32_t));
	bool differ = false;

	cfg_trace(&c, "mooncake.jsonl");
	ck_assert_int_eq(drain(&c, q, &n, NULL, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 5);
	ck_assert_int_eq(q[2].r.arrival_ns, 3000000000LL);	/* ms */
	ck_assert_int_eq(q[4].r.arrival_ns, 6001000000LL);
	/* 1200 tokens in ids [0,1,2]: 512 + 512 + 176. */
	ck_assert_uint_eq(q[0].r.nsegs, 3);
	ck_assert_uint_eq(q[0].segs[0].len, 512);
	ck_assert_uint_eq(q[0].segs[2].len, 176);
	ck_assert_uint_eq(q[1].segs[2].len, 76);
	ck_assert_uint_eq(q[0].segs[0].key, q[1].segs[0].key);
	ck_assert_uint_ne(q[0].segs[2].key, q[1].segs[2].key);
	wl_request_tokens(&q[0].r, 0, 1200, 32000, t0);
	wl_request_tokens(&q[1].r, 0, 1100, 32000, t1);
	wl_request_tokens(&q[4].r, 0, 2049, 32000, t4);
	ck_assert(memcmp(t0, t1, 1024 * sizeof(uint32_t)) == 0);
	for (int i = 1024; i < 1100; i++)
		differ |= t0[i] != t1[i];
	ck_assert(differ);
	/* r4 = [0,1,3,5,6]: shares r1's 1,100 tokens, block 3 included. */
	ck_assert(memcmp(t1, t4, 1100 * sizeof(uint32_t)) == 0);
	/* Token ids stay in the vocabulary; a tail range is consistent. */
	for (int i = 0; i < 2049; i++)
		ck_assert_uint_lt(t4[i], 32000);
	wl_request_tokens(&q[4].r, 1500, 10, 32000, t1);
	ck_assert(memcmp(t1, t4 + 1500, 10 * sizeof(uint32_t)) == 0);
	wl_config_release(&c);
	free(t0);
	free(t1);
	free(t4);
}
END_TEST

START_TEST(test_formats)
{
	struct wl_config c;
	struct req q[MAXR];
	struct wl_counts cnt;
	size_t n;
	char msg[1200];

	/* BurstGPT: seconds, a failed (0-token) response rejected, quotes. */
	cfg_trace(&c, "burstgpt.csv");
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(cnt.rows, 4);
	ck_assert_uint_eq(cnt.rej_zero, 1);
	ck_assert_int_eq(q[0].r.arrival_ns, 5000000000LL);
	ck_assert_int_eq(q[2].r.arrival_ns, 118000000000LL);
	ck_assert_uint_eq(q[1].r.prompt_tokens, 1087);
	ck_assert_uint_eq(q[2].r.output_tokens, 40);
	wl_config_release(&c);
	/* BurstGPT with session ids. */
	cfg_trace(&c, "burstgpt3.csv");
	ck_assert_int_eq(drain(&c, q, &n, NULL, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_ne(q[0].r.session, 0);
	ck_assert_uint_eq(q[0].r.session, q[1].r.session);
	ck_assert_uint_ne(q[0].r.session, q[2].r.session);
	ck_assert_int_eq(q[0].r.arrival_ns, 250000000);
	wl_config_release(&c);
	/* splitwise-sim: batch_size is n. */
	cfg_trace(&c, "splitwise.csv");
	ck_assert_int_eq(drain(&c, q, &n, NULL, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(q[2].r.arrival_ns, 4000000001LL);
	ck_assert_uint_eq(q[2].r.n, 2);
	ck_assert_uint_eq(q[0].r.prompt_tokens, 4096);
	ck_assert_uint_eq(q[0].r.output_tokens, 32);
	wl_config_release(&c);
	/* Vidur: float seconds to exact ns. */
	cfg_trace(&c, "vidur.csv");
	ck_assert_int_eq(drain(&c, q, &n, NULL, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(q[2].r.arrival_ns, 5892655000LL);
	ck_assert_int_eq(q[3].r.arrival_ns, 10000000000LL);
	wl_config_release(&c);
	/* LLMServingSim: token ids when present. */
	cfg_trace(&c, "llmss.jsonl");
	ck_assert_int_eq(drain(&c, q, &n, NULL, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 3);
	ck_assert(q[0].has_toks && q[1].has_toks && !q[2].has_toks);
	ck_assert_uint_eq(q[0].toks[3], 4);
	ck_assert_uint_eq(q[1].toks[2], 7);
	ck_assert_int_eq(q[2].r.arrival_ns, 2000);
	ck_assert_uint_eq(q[2].r.prompt_tokens, 600);
	wl_config_release(&c);
	/* kvsim CSV: every optional column, comments, blank lines. */
	cfg_trace(&c, "kvsim.csv");
	ck_assert_int_eq(drain(&c, q, &n, NULL, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(q[0].r.arrival_ns, 500000000);
	ck_assert_int_eq(q[0].r.priority, 1);
	ck_assert_uint_eq(q[0].r.n, 2);
	ck_assert_uint_eq(q[1].r.session, 7);
	ck_assert_uint_eq(q[1].r.turn, 1);
	ck_assert_int_eq(q[1].r.priority, -1);
	ck_assert_uint_eq(q[1].r.nsegs, 3);
	ck_assert_uint_eq(q[1].segs[0].key, 11);
	ck_assert_uint_eq(q[1].segs[2].len, 400);
	ck_assert_uint_eq(q[2].r.nsegs, 3);
	ck_assert_uint_eq(q[2].segs[2].len, 76);
	wl_config_release(&c);
}
END_TEST

/* ------------------------------------------------------------ bad input */

struct bad_case {
	const char *file;
	enum wl_format fmt;
	wl_err rc;
	const char *msg;	/* after "PATH" */
};

#define SPAN_BACK ":3:1: timestamp 1678-01-01 00:00:00 is more than 292 " \
	"years before the first row's 2262-01-01 00:00:00 (line 2): arrival " \
	"times count nanoseconds from the first row in 64 bits"

static const struct bad_case bad_cases[] = {
	{ "bad/empty.csv", WL_FMT_AUTO, WL_EPARSE, ": empty file" },
	{ "bad/blank.csv", WL_FMT_AUTO, WL_EPARSE, ": empty file" },
	{ "bad/header_only.csv", WL_FMT_AUTO, WL_EPARSE,
	  ":2:1: no requests in the trace" },
	{ "bad/azure_bad_time.csv", WL_FMT_AUTO, WL_EPARSE,
	  ":3:1: TIMESTAMP: expected YYYY-MM-DD HH:MM:SS[.fffffff], found "
	  "'2023-13-16 18:15:50.9951690'" },
	{ "bad/azure_negative.csv", WL_FMT_AZURE, WL_EPARSE,
	  ":3:29: ContextTokens is negative: '-5'" },
	{ "bad/azure_fields.csv", WL_FMT_AUTO, WL_EPARSE,
	  ":3:32: expected 3 fields, found 2" },
	{ "bad/azure_unsorted.csv", WL_FMT_AUTO, WL_EORDER,
	  ":4:1: timestamp 1.000000000 s is earlier than the previous row's "
	  "4.000000000 s (set order: sort or order: skip)" },
	{ "bad/azure_year9999.csv", WL_FMT_AUTO, WL_EPARSE,
	  ":3:1: TIMESTAMP is out of range: '9999-01-01 00:00:00' (times "
	  "from 1677-09-21 00:12:43.145224192 to 2262-04-11 "
	  "23:47:16.854775807 are read)" },
	{ "bad/azure_year1600.csv", WL_FMT_AUTO, WL_EPARSE,
	  ":2:1: TIMESTAMP is out of range: '1600-01-01 00:00:00.0000000' "
	  "(times from 1677-09-21 00:12:43.145224192 to 2262-04-11 "
	  "23:47:16.854775807 are read)" },
	{ "bad/azure_feb29.csv", WL_FMT_AUTO, WL_EPARSE,
	  ":3:1: TIMESTAMP: expected YYYY-MM-DD HH:MM:SS[.fffffff], found "
	  "'2023-02-29 00:00:00.0000000'" },
	{ "bad/azure_span_back.csv", WL_FMT_AUTO, WL_EPARSE, SPAN_BACK },
	{ "bad/azure_span_fwd.csv", WL_FMT_AUTO, WL_EPARSE,
	  ":3:1: timestamp 2262-01-01 00:00:00.500000000 is more than 292 "
	  "years after the first row's 1678-01-01 00:00:00 (line 2): "
	  "arrival times count nanoseconds from the first row in 64 bits" },
	{ "bad/vidur_negative.csv", WL_FMT_AUTO, WL_EPARSE,
	  ":3:1: arrived_at is negative: '-1.5'" },
	{ "bad/mooncake_bad.jsonl", WL_FMT_AUTO, WL_EPARSE,
	  ":2:53: missing key \"output_length\"" },
	{ "bad/unknown.txt", WL_FMT_AUTO, WL_EFORMAT,
	  ":1:1: cannot detect the trace format from 'hello,world'; set "
	  "format: (azure, mooncake, burstgpt, splitwise, vidur, "
	  "llmservingsim, kvsim)" },
	{ "bad/llmss_agentic.jsonl", WL_FMT_AUTO, WL_EPARSE,
	  ":1:60: agentic sessions (sub_requests) are not supported; "
	  "flatten them into one request per line" },
	{ "azure.csv", WL_FMT_MOONCAKE, WL_EFORMAT,
	  ":1:1: not mooncake format: expected a JSON object per line, found "
	  "'TIMESTAMP,ContextTokens,GeneratedTokens'" },
	{ "mooncake.jsonl", WL_FMT_AZURE, WL_EFORMAT,
	  ":1:1: not azure format: the header lacks column 'TIMESTAMP' "
	  "(header: '{\"timestamp\": 0, \"input_length\": 1200, \"')" },
	{ "vidur.csv", WL_FMT_KVSIM, WL_EFORMAT,
	  ":1:1: kvsim trace: unknown column 'arrived_at'" },
	{ "bad/no_such_file.csv", WL_FMT_AUTO, WL_EIO,
	  ": cannot open: No such file or directory" },
};

START_TEST(test_bad_input)
{
	const struct bad_case *b = &bad_cases[_i];
	struct wl_config c;
	struct req q[MAXR];
	size_t n;
	char msg[1200], want[1200];

	cfg_trace(&c, b->file);
	c.format = b->fmt;
	ck_assert_int_eq(drain(&c, q, &n, NULL, msg, sizeof(msg)), b->rc);
	snprintf(want, sizeof(want), "%s%s", c.trace, b->msg);
	ck_assert_str_eq(msg, want);
	wl_config_release(&c);
}
END_TEST

START_TEST(test_skip_and_reject)
{
	struct wl_config c;
	struct req q[MAXR];
	struct wl_counts cnt;
	size_t n;
	char msg[1200], want[1200];

	/* on_error: skip -- counted, the first one kept for the report. */
	cfg_trace(&c, "bad/mooncake_bad.jsonl");
	c.on_error = WL_ON_ERROR_SKIP;
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(cnt.rows, 6);
	ck_assert_uint_eq(cnt.skipped, 4);
	ck_assert_uint_eq(q[1].r.output_tokens, 2);
	wl_error_format(&cnt.first_skip, msg, sizeof(msg));
	snprintf(want, sizeof(want), "%s:2:53: missing key \"output_length\"",
	    c.trace);
	ck_assert_str_eq(msg, want);
	wl_config_release(&c);
	/* Every kind of malformed row is skippable; the good one is read. */
	cfg_trace(&c, "bad/azure_fields.csv");
	c.on_error = WL_ON_ERROR_SKIP;
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(cnt.skipped, 3);
	wl_config_release(&c);
	/* Zero and >= 2^31 lengths: rejected and counted, never truncated. */
	cfg_trace(&c, "bad/azure_lengths.csv");
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(cnt.rej_zero, 1);
	ck_assert_uint_eq(cnt.rej_huge, 2);
	ck_assert_uint_eq(q[1].r.prompt_tokens, 2147483647u);
	wl_counts_format(&cnt, msg, sizeof(msg));
	ck_assert_str_eq(msg, "rejected: zero length 1, rejected: length "
	    ">= 2^31 2");
	wl_config_release(&c);
}
END_TEST

START_TEST(test_order)
{
	struct wl_config c;
	struct req q[MAXR];
	struct wl_counts cnt;
	size_t n;
	char msg[1200], want[1200];

	cfg_trace(&c, "bad/azure_unsorted.csv");
	c.order = WL_ORDER_SKIP;
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(cnt.rej_order, 1);
	ck_assert_uint_eq(q[2].r.prompt_tokens, 40);
	c.order = WL_ORDER_SORT;
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(cnt.sorted, 2);
	ck_assert_uint_eq(q[0].r.prompt_tokens, 10);
	ck_assert_uint_eq(q[1].r.prompt_tokens, 30);
	ck_assert_uint_eq(q[2].r.prompt_tokens, 20);
	ck_assert_uint_eq(q[3].r.prompt_tokens, 40);
	ck_assert_int_eq(q[1].r.arrival_ns, 1000000000);
	/* A window too small to repair the order is an error. */
	c.sort_window = 1;
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_EORDER);
	snprintf(want, sizeof(want), "%s:4: timestamp 1.000000000 s is more "
	    "than sort_window=1 rows out of order (previous 4.000000000 s); "
	    "raise sort_window", c.trace);
	ck_assert_str_eq(msg, want);
	wl_config_release(&c);
}
END_TEST

/*
 * Wall-clock times more than 292 years apart: an error in every order
 * mode, also with on_error: skip (the first row is as much at fault),
 * never a wrapped time or a row dropped as out of order.
 */
START_TEST(test_span)
{
	static const enum wl_order orders[] = { WL_ORDER_ERROR, WL_ORDER_SKIP,
		WL_ORDER_SORT };
	char msg[1200], want[1200];
	struct req q[MAXR];
	struct wl_counts cnt;
	struct wl_config c;
	size_t n;

	cfg_trace(&c, "bad/azure_span_back.csv");
	snprintf(want, sizeof(want), "%s%s", c.trace, SPAN_BACK);
	for (int skip = 0; skip < 2; skip++)
		for (size_t i = 0; i < 3; i++) {
			c.order = orders[i];
			c.on_error = skip ? WL_ON_ERROR_SKIP :
			    WL_ON_ERROR_STOP;
			ck_assert_int_eq(drain(&c, q, &n, &cnt, msg,
			    sizeof(msg)), WL_EPARSE);
			ck_assert_str_eq(msg, want);
			ck_assert_uint_eq(cnt.rej_order, 0);
			ck_assert_uint_eq(cnt.skipped, 0);
		}
	wl_config_release(&c);
	cfg_trace(&c, "bad/azure_span_fwd.csv");
	for (size_t i = 0; i < 3; i++) {
		c.order = orders[i];
		ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)),
		    WL_EPARSE);
		ck_assert_ptr_nonnull(strstr(msg, ":3:1: timestamp 2262-01-01 "
		    "00:00:00.500000000 is more than 292 years after"));
	}
	wl_config_release(&c);
}
END_TEST

/* 29 February exists in leap years only; 2024's is read. */
START_TEST(test_leap_day)
{
	struct wl_config c;
	struct req q[MAXR];
	size_t n;
	char msg[1200];

	cfg_trace(&c, "azure_leap.csv");
	ck_assert_int_eq(drain(&c, q, &n, NULL, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(q[1].r.arrival_ns, 12 * 3600 * 1000000000LL +
	    500000000);
	ck_assert_int_eq(q[2].r.arrival_ns, 24 * 3600 * 1000000000LL +
	    500000000);
	wl_config_release(&c);
}
END_TEST

/* ---------------------------------------------------------- statistics */

/* Feed prompts of segments to a wl_stats; the token-block hits. */
static uint64_t
block_hits(uint32_t block, const struct wl_seg *segs, const uint32_t *nsegs,
    size_t nreq, uint64_t *total)
{
	wl_stats *st = wl_stats_new(block, 32000, 0);
	struct wl_summary sum;
	uint64_t hits;

	ck_assert_ptr_nonnull(st);
	for (size_t i = 0; i < nreq; i++) {
		struct wl_request r;

		memset(&r, 0, sizeof(r));
		r.arrival_ns = (int64_t)i;
		r.output_tokens = 1;
		r.n = 1;
		r.segs = segs;
		r.nsegs = nsegs[i];
		for (uint32_t k = 0; k < r.nsegs; k++)
			r.prompt_tokens += segs[k].len;
		ck_assert_int_eq(wl_stats_add(st, &r), WL_OK);
		segs += nsegs[i];
	}
	wl_stats_summary(st, &sum);
	hits = sum.blk_hit;
	*total = sum.blk_total;
	wl_stats_free(st);
	return hits;
}

/* A key whose token 0 equals token `pos` of `key` (a chance match). */
static uint64_t
twin(uint64_t key, uint32_t pos)
{
	uint32_t want = wl_token(key, pos, 32000);
	uint64_t k = 1000;

	while (wl_token(k, 0, 32000) != want)
		k++;
	return k;
}

/*
 * Token-block reuse as a cache of token ids sees it: shared segments,
 * and a single token equal by chance where a block ends (found, not
 * assumed).  And its cost: per segment, so a 2^31 - 1-token prompt (it
 * took about a minute and 4 GiB, token by token) is immediate.
 */
START_TEST(test_stats_blocks)
{
	const uint32_t big = 2147483647u;
	uint64_t a = 11, b = 22, total;
	struct wl_seg s1[] = { { a, 10 }, { a, 4 }, { twin(a, 4), 3 } };
	struct wl_seg s2[] = { { a, 4 }, { twin(a, 4), 6 }, { a, 8 } };
	struct wl_seg s3[] = { { a, 5 }, { twin(a, 0), 3 } };
	struct wl_seg s4[] = { { a, big }, { a, big }, { a, 1000 }, { b, 5 } };
	uint32_t n1[] = { 1, 2 }, n2[] = { 2, 1 }, n3[] = { 1, 1 };
	uint32_t n4[] = { 1, 1, 2 };
	clock_t t0;

	/* (a,4) then a token equal to a's 5th: 5 tokens, one 5-block */
	ck_assert_uint_eq(block_hits(5, s1, n1, 2, &total), 1);
	ck_assert_uint_eq(total, 3);
	ck_assert_uint_eq(block_hits(4, s1, n1, 2, &total), 1);
	/* the earlier prompt continued with the twin; the later one runs on */
	ck_assert_uint_eq(block_hits(5, s2, n2, 2, &total), 1);
	ck_assert_uint_eq(block_hits(3, s2, n2, 2, &total), 1);
	/* a first token equal by chance is a hit at block size 1 */
	ck_assert_uint_eq(block_hits(1, s3, n3, 2, &total), 1);
	ck_assert_uint_eq(total, 8);
	ck_assert_uint_eq(block_hits(2, s3, n3, 2, &total), 0);
	t0 = clock();
	ck_assert_uint_eq(block_hits(16, s4, n4, 3, &total), big / 16 + 62);
	ck_assert_uint_eq(total, 2 * (uint64_t)(big / 16) + 62);
	ck_assert_double_lt((double)(clock() - t0) / CLOCKS_PER_SEC, 5.0);
}
END_TEST

/* ------------------------------------------------------- transformations */

START_TEST(test_transforms)
{
	struct wl_config c;
	struct req q[MAXR];
	struct wl_counts cnt;
	size_t n;
	char msg[1200];
	uint32_t a[600], b[600];

	/* window [4 s, 60 s): three rows, shifted to start at 0. */
	cfg_trace(&c, "azure.csv");
	c.window_start_s = 4;
	c.window_end_s = 60;
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(cnt.outside_window, 1);
	ck_assert_int_eq(q[0].r.arrival_ns, 314579000);
	ck_assert_int_eq(q[2].r.arrival_ns, 55319410100LL);
	/* first N */
	c.window_start_s = c.window_end_s = 0;
	c.max_requests = 2;
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 2);
	/* filters count what they drop; caps are explicit and counted. */
	c.max_requests = 0;
	c.min_prompt = 10;
	c.max_output = 500;
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(cnt.rej_filter, 2);
	c.min_prompt = 0;
	c.max_output = 0;
	c.max_model_len = 1000;
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(cnt.rej_max_len, 1);
	c.cap_prompt = 900;
	c.cap_output = 100;
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 6);
	ck_assert_uint_eq(cnt.capped, 2);
	ck_assert_uint_eq(cnt.rej_max_len, 0);
	ck_assert_uint_eq(q[4].r.prompt_tokens, 900);
	ck_assert_uint_eq(q[4].segs[0].len, 900);
	ck_assert_uint_eq(q[4].r.output_tokens, 100);
	/* time scale */
	c.cap_prompt = c.cap_output = 0;
	c.max_model_len = 0;
	c.time_scale = 0.5;
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	ck_assert_int_eq(q[1].r.arrival_ns, 2157289500LL);
	wl_config_release(&c);

	/* A capped prompt keeps its leading identity. */
	cfg_trace(&c, "mooncake.jsonl");
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	wl_request_tokens(&q[0].r, 0, 600, 1000, a);
	c.cap_prompt = 600;
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(q[0].r.nsegs, 2);
	ck_assert_uint_eq(q[0].segs[1].len, 88);
	wl_request_tokens(&q[0].r, 0, 600, 1000, b);
	ck_assert(memcmp(a, b, sizeof(a)) == 0);
	wl_config_release(&c);

	/* target_rate: rows / span becomes the target. */
	cfg_trace(&c, "vidur.csv");
	c.target_rate = 0.8;
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(q[3].r.arrival_ns, 5000000000LL);
	ck_assert_double_eq_tol(4.0 / ((double)q[3].r.arrival_ns / 1e9), 0.8,
	    1e-9);
	ck_assert_uint_eq(cnt.rows, 4);	/* the pre-pass is not counted */
	wl_config_release(&c);
}
END_TEST

START_TEST(test_tile)
{
	struct wl_config c;
	struct req q[MAXR], one[MAXR];
	struct wl_counts cnt;
	size_t n, n1;
	char msg[1200];
	/* span 6.001 s over 5 rows: period = span + span / 4. */
	const int64_t period = 6001000000LL + 6001000000LL / 4;

	cfg_trace(&c, "mooncake.jsonl");
	ck_assert_int_eq(drain(&c, one, &n1, NULL, msg, sizeof(msg)), WL_END);
	c.tile_copies = 3;
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, 15);
	ck_assert_uint_eq(cnt.rows, 15);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(q[i].r.id, i);
		ck_assert_int_eq(q[i].r.arrival_ns, one[i % 5].r.arrival_ns +
		    (int64_t)(i / 5) * period);
		ck_assert_uint_eq(q[i].r.prompt_tokens,
		    one[i % 5].r.prompt_tokens);
		if (i > 0)
			ck_assert_int_ge(q[i].r.arrival_ns,
			    q[i - 1].r.arrival_ns);
	}
	/* Copies get their own identities unless asked to share. */
	ck_assert_uint_eq(q[0].segs[0].key, one[0].segs[0].key);
	ck_assert_uint_ne(q[5].segs[0].key, one[0].segs[0].key);
	ck_assert_uint_ne(q[10].segs[0].key, q[5].segs[0].key);
	ck_assert_uint_eq(q[5].segs[0].key, q[6].segs[0].key);
	c.tile_share = true;
	c.tile_period_s = 10;
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(q[5].segs[0].key, one[0].segs[0].key);
	ck_assert_int_eq(q[14].r.arrival_ns, 20000000000LL + 6001000000LL);
	/* A period shorter than a copy would break the order. */
	c.tile_period_s = 1;
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)),
	    WL_ECONFIG);
	ck_assert_str_eq(msg, "tile.period_s (1.000000000 s) is shorter than "
	    "the span of one copy");
	wl_config_release(&c);
}
END_TEST

/* ---------------------------------------------------- wl_stream_check */

/*
 * Each invariant broken on purpose.  Three pipelines: A every stage over a
 * trace (tile, scale, head, filter, window, sort window, trace), B a
 * filter over the generator, C a filter over a trace.  Stages are reached
 * from the top down; each break leaves the stages above it consistent, so
 * that the invariant broken is the first one found.
 */
enum chain { CHAIN_A, CHAIN_B, CHAIN_C };

static struct wl__tile *
a_tile(wl_stream *s)
{
	return (struct wl__tile *)s->top;
}

static struct wl__head *
a_head(wl_stream *s)
{
	return (struct wl__head *)((struct wl__scale *)a_tile(s)->in)->in;
}

static struct wl__filter *
a_filter(wl_stream *s)
{
	return (struct wl__filter *)a_head(s)->in;
}

static struct wl__window *
a_window(wl_stream *s)
{
	return (struct wl__window *)a_filter(s)->in;
}

static struct wl__sorter *
a_sorter(wl_stream *s)
{
	return (struct wl__sorter *)a_window(s)->in;
}

static void
brk_ids(wl_stream *s)
{
	s->next_id++;
}

static void
brk_order(wl_stream *s)
{
	s->prev_arrival = s->last_arrival + 1;
}

static void
brk_horizon(wl_stream *s)
{
	s->last_arrival = 2 * WL_HORIZON_NS;
}

static void
brk_counts(wl_stream *s)
{
	s->cnt.skipped = s->cnt.rows;
}

static void
brk_marks(wl_stream *s)
{
	s->cnt.sorted = s->cnt.rows + 1;
}

static void
brk_end(wl_stream *s)
{
	s->last_rc = WL_END;
}

static void
brk_top(wl_stream *s)
{
	s->top->nout++;
}

static void
brk_sort_slots(wl_stream *s)
{
	a_sorter(s)->nfree++;
}

static void
brk_sort_seq(wl_stream *s)
{
	a_sorter(s)->seq_in++;
}

static void
brk_sort_heap(wl_stream *s)
{
	struct wl__sorter *so = a_sorter(s);
	uint32_t k = so->heap[0];

	ck_assert_uint_ge(so->nheap, 2);
	so->heap[0] = so->heap[1];
	so->heap[1] = k;
}

static void
brk_window(wl_stream *s)
{
	a_window(s)->t0 = -1;
}

static void
brk_filter(wl_stream *s)
{
	/* less in than out (the window's own check allows fewer out) */
	a_window(s)->base.nout = 0;
}

static void
brk_head(wl_stream *s)
{
	a_head(s)->left++;
}

static void
brk_scale(wl_stream *s)
{
	((struct wl__scale *)a_tile(s)->in)->k = 0;
}

static void
brk_tile_copy(wl_stream *s)
{
	a_tile(s)->copy = a_tile(s)->copies;
}

static void
brk_tile_period(wl_stream *s)
{
	a_tile(s)->copy = 1;
	a_tile(s)->period = 0;
}

static void
brk_tile_first(wl_stream *s)
{
	a_tile(s)->n0++;
}

/* B and C: the source below the filter returned more than it made. */
static void
brk_source(wl_stream *s)
{
	((struct wl__filter *)s->top)->in->nout += 100;
}

static const struct {
	enum chain chain;
	void (*brk)(wl_stream *s);
	int want;
} broken[] = {
	{ CHAIN_A, brk_ids, WL_CHECK_IDS },
	{ CHAIN_A, brk_order, WL_CHECK_ORDER },
	{ CHAIN_A, brk_horizon, WL_CHECK_HORIZON },
	{ CHAIN_A, brk_counts, WL_CHECK_COUNTS },
	{ CHAIN_A, brk_marks, WL_CHECK_MARKS },
	{ CHAIN_A, brk_end, WL_CHECK_END },
	{ CHAIN_A, brk_top, WL_CHECK_TOP },
	{ CHAIN_A, brk_sort_slots, WL_CHECK_SORT_SLOTS },
	{ CHAIN_A, brk_sort_seq, WL_CHECK_SORT_SEQ },
	{ CHAIN_A, brk_sort_heap, WL_CHECK_SORT_HEAP },
	{ CHAIN_A, brk_window, WL_CHECK_WINDOW },
	{ CHAIN_A, brk_filter, WL_CHECK_FILTER },
	{ CHAIN_A, brk_head, WL_CHECK_HEAD },
	{ CHAIN_A, brk_scale, WL_CHECK_SCALE },
	{ CHAIN_A, brk_tile_copy, WL_CHECK_TILE_COPY },
	{ CHAIN_A, brk_tile_period, WL_CHECK_TILE_PERIOD },
	{ CHAIN_A, brk_tile_first, WL_CHECK_TILE_FIRST },
	{ CHAIN_B, brk_source, WL_CHECK_GEN },
	{ CHAIN_C, brk_source, WL_CHECK_TRACE },
};

static void
cfg_chain(struct wl_config *c, enum chain ch)
{
	if (ch == CHAIN_B)
		wl_config_init(c);
	else
		cfg_trace(c, "azure.csv");
	c->min_prompt = 1;
	if (ch != CHAIN_A)
		return;
	c->order = WL_ORDER_SORT;
	c->sort_window = 4;
	c->window_start_s = 1;
	c->max_requests = 100;
	c->time_scale = 2;
	c->tile_copies = 2;
}

START_TEST(test_check_broken)
{
	struct wl_config c;
	struct wl_error err;
	struct wl_request r;
	wl_stream *s;

	cfg_chain(&c, broken[_i].chain);
	ck_assert_int_eq(wl_open(&c, &s, &err), WL_OK);
	ck_assert_int_eq(wl_stream_check(s), 0);
	for (int k = 0; k < 2; k++) {
		ck_assert_int_eq(wl_stream_next(s, &r), WL_OK);
		ck_assert_int_eq(wl_stream_check(s), 0);
	}
	broken[_i].brk(s);
	ck_assert_int_eq(wl_stream_check(s), broken[_i].want);
	wl_stream_free(s);
	wl_config_release(&c);
}
END_TEST

/* The pipelines above, and the generator tiled, streamed to the end. */
START_TEST(test_check_streams)
{
	struct wl_config c;
	struct req q[MAXR];
	struct wl_counts cnt;
	size_t n;
	char msg[1200];

	for (int ch = CHAIN_A; ch <= CHAIN_C; ch++) {
		cfg_chain(&c, (enum chain)ch);
		c.gen.requests = MAXR / 2;
		/* drain() checks the invariants after every request */
		ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)),
		    WL_END);
		ck_assert_uint_gt(n, 0);
		wl_config_release(&c);
	}
	ck_assert_int_eq(wl_config_load(fx("yaml/gen.yaml"), &c, NULL),
	    WL_OK);
	c.gen.requests = MAXR / 2;
	c.tile_copies = 2;
	ck_assert_int_eq(drain(&c, q, &n, &cnt, msg, sizeof(msg)), WL_END);
	ck_assert_uint_eq(n, MAXR);
	wl_config_release(&c);
}
END_TEST

/* ----------------------------------------------------------------- YAML */

START_TEST(test_yaml_trace)
{
	struct wl_config c;
	struct wl_error err;
	char want[1200];

	wl_config_init(&c);
	ck_assert_int_eq(wl_config_load(fx("yaml/trace.yaml"), &c, &err),
	    WL_OK);
	snprintf(want, sizeof(want), "%s/../mooncake.jsonl",
	    fx("yaml"));
	ck_assert_str_eq(c.trace, want);
	ck_assert_int_eq(c.format, WL_FMT_MOONCAKE);
	ck_assert_int_eq(c.on_error, WL_ON_ERROR_SKIP);
	ck_assert_int_eq(c.order, WL_ORDER_SORT);
	ck_assert_uint_eq(c.sort_window, 128);
	ck_assert_uint_eq(c.seed, 42);
	ck_assert_uint_eq(c.vocab_size, 128256);
	ck_assert_double_eq(c.time_scale, 0.5);
	ck_assert_double_eq(c.window_end_s, 0);
	ck_assert_uint_eq(c.max_requests, 100);
	ck_assert_uint_eq(c.max_model_len, 8192);
	ck_assert_uint_eq(c.max_prompt, 100000);
	ck_assert_uint_eq(c.max_total, 200000);
	ck_assert_uint_eq(c.cap_output, 2048);
	ck_assert_uint_eq(c.tile_copies, 2);
	ck_assert(!c.tile_share);
	wl_config_release(&c);
}
END_TEST

START_TEST(test_yaml_generator)
{
	struct wl_config c, d;
	struct wl_error err;
	const struct wl_gen_config *g;

	wl_config_init(&c);
	ck_assert_int_eq(wl_config_load(fx("yaml/gen.yaml"), &c, &err),
	    WL_OK);
	g = &c.gen;
	ck_assert_ptr_null(c.trace);
	ck_assert_uint_eq(c.seed, 3);
	ck_assert_uint_eq(g->requests, 500);
	ck_assert_int_eq(g->arrival.kind, WL_ARR_GAMMA);
	ck_assert_double_eq(g->arrival.cv, 2.5);
	ck_assert_int_eq(g->prompt.kind, WL_DIST_LOGNORMAL);
	ck_assert_double_eq_tol(g->prompt.sigma, sqrt(log(1 + 1.44)), 1e-12);
	ck_assert_int_eq(g->prompt.min, 16);
	ck_assert_int_eq(g->output.kind, WL_DIST_ZIPF);
	ck_assert_int_eq(g->n.kind, WL_DIST_EMPIRICAL);
	ck_assert_uint_eq(g->n.nvalues, 3);
	ck_assert_double_eq(g->n.weights[2], 0.05);
	ck_assert_uint_eq(g->systems, 4);
	ck_assert_int_eq(g->system_len.kind, WL_DIST_NORMAL);
	ck_assert_double_eq(g->system_fraction, 0.9);
	ck_assert_int_eq(g->turns.max, 4);
	ck_assert_uint_eq(g->max_context, 32768);
	/* A deep copy survives the original. */
	ck_assert_int_eq(wl_config_copy(&d, &c), WL_OK);
	wl_config_release(&c);
	ck_assert_double_eq(d.gen.n.values[2], 4);
	wl_config_release(&d);
	/* No `workload:` key: the whole document is the section. */
	wl_config_init(&c);
	ck_assert_int_eq(wl_config_load(fx("yaml/schedule.yaml"), &c, &err),
	    WL_OK);
	ck_assert_int_eq(c.gen.arrival.kind, WL_ARR_SCHEDULE);
	ck_assert_uint_eq(c.gen.arrival.nsegs, 3);
	ck_assert_double_eq(c.gen.arrival.segs[2].rate, 8);
	ck_assert_int_eq(c.gen.prompt.kind, WL_DIST_FIXED);
	ck_assert_double_eq(c.gen.prompt.value, 128);
	wl_config_release(&c);
}
END_TEST

/* Apply a YAML text to c, as the run config's --set overrides do. */
static wl_err
apply_yaml(const char *text, struct wl_config *c, struct wl_error *err)
{
	struct yd_doc doc;
	char msg[512];
	FILE *in = fmemopen((void *)text, strlen(text), "r");
	wl_err rc;

	ck_assert_ptr_nonnull(in);
	ck_assert_msg(yd_read(&doc, in, "--set", YD_LOADER, msg,
	    sizeof(msg)) == KV_OK, "%s", msg);
	fclose(in);
	rc = wl_config_from_yaml(doc.root, "--set", c, err);
	yd_release(&doc);
	return rc;
}

/* A mapping without `dist` updates the distribution in place. */
START_TEST(test_yaml_override)
{
	struct wl_config c;
	struct wl_error err;
	double cv;

	wl_config_init(&c);
	ck_assert_int_eq(wl_config_load(fx("yaml/gen.yaml"), &c, &err),
	    WL_OK);
	ck_assert_int_eq(apply_yaml("{generator: {prompt: {mean: 900}, "
	    "n: {values: [1, 8]}, arrival: {rate: 9}}, max_requests: 7}", &c,
	    &err), WL_OK);
	ck_assert_int_eq(c.gen.prompt.kind, WL_DIST_LOGNORMAL);
	ck_assert_double_eq_tol(exp(c.gen.prompt.mu + c.gen.prompt.sigma *
	    c.gen.prompt.sigma / 2), 900, 1e-9);
	cv = sqrt(expm1(c.gen.prompt.sigma * c.gen.prompt.sigma));
	ck_assert_double_eq_tol(cv, 1.2, 1e-12);
	ck_assert_int_eq(c.gen.prompt.min, 16);
	ck_assert_uint_eq(c.gen.n.nvalues, 2);
	ck_assert_ptr_null(c.gen.n.weights);
	ck_assert_int_eq(c.gen.arrival.kind, WL_ARR_GAMMA);
	ck_assert_double_eq(c.gen.arrival.rate, 9);
	ck_assert_uint_eq(c.max_requests, 7);
	ck_assert_uint_eq(c.gen.requests, 500);
	/* Errors name the override's position. */
	ck_assert_int_eq(apply_yaml("{generator: {output: {s: -1}}}", &c,
	    &err), WL_ECONFIG);
	ck_assert_str_eq(err.file, "--set");
	ck_assert_str_eq(err.what, "s: must be >= 0, found -1");
	wl_config_release(&c);
}
END_TEST

static const struct {
	const char *file, *msg;
} yaml_bad[] = {
	{ "yaml/bad_key.yaml", ":3:3: unknown key 'generatr' in workload" },
	{ "yaml/bad_dist.yaml",
	  ":3:13: prompt: normal needs mean and sd" },
	{ "yaml/bad_enum.yaml",
	  ":2:10: order: expected one of error, skip, sort, found 'shuffle'" },
	{ "yaml/bad_cv.yaml", ":3:44: cv: must be >= 0, found -1" },
	/* the default max is the longest length there is: every request
	 * was refused, and the run exited 0 with nothing completed */
	{ "yaml/bad_uniform.yaml",
	  ":3:13: prompt: uniform needs max (and min, default 1)" },
	{ "yaml/bad_type.yaml", ":2:15: time_scale: expected a number" },
	/* an overflow is out of range (an underflow, a subnormal, is a
	 * number: both read as "expected a number") */
	{ "yaml/bad_range.yaml", ":2:15: time_scale: 1e400 is out of range" },
	{ "yaml/bad_syntax.yaml",
	  ":3:1: found unexpected end of stream" },
	{ "yaml/none.yaml", ": cannot open: No such file or directory" },
};

START_TEST(test_yaml_bad)
{
	struct wl_config c;
	struct wl_error err;
	char msg[1200], want[1200];

	wl_config_init(&c);
	ck_assert_int_ne(wl_config_load(fx(yaml_bad[_i].file), &c, &err),
	    WL_OK);
	wl_error_format(&err, msg, sizeof(msg));
	snprintf(want, sizeof(want), "%s%s", fx(yaml_bad[_i].file),
	    yaml_bad[_i].msg);
	ck_assert_str_eq(msg, want);
	wl_config_release(&c);
}
END_TEST

START_TEST(test_config_check)
{
	struct wl_config c;
	struct wl_error err;
	wl_stream *s;

	wl_config_init(&c);
	c.gen.requests = 0;
	ck_assert_int_eq(wl_open(&c, &s, &err), WL_ECONFIG);
	ck_assert_str_eq(err.what, "workload.generator never ends: set "
	    "generator.requests or generator.duration_s");
	c.gen.requests = 10;
	c.gen.arrival.rate = 0;
	ck_assert_int_eq(wl_open(&c, &s, &err), WL_ECONFIG);
	c.gen.arrival.rate = 1;
	c.gen.prompt.kind = WL_DIST_NORMAL;
	c.gen.prompt.mean = -1000;
	c.gen.prompt.sd = 1;
	ck_assert_int_eq(wl_open(&c, &s, &err), WL_ECONFIG);
	ck_assert_str_eq(err.what, "generator.prompt: bounds [1, 2147483647] "
	    "keep under 1% of the distribution");
	wl_config_release(&c);
	/* a duration alone that would make more than 2^44 requests (a rate
	 * in the wrong unit): refused, at each arrival process's mean rate */
	wl_config_init(&c);
	c.gen.requests = 0;
	c.gen.duration_s = 5;
	c.gen.arrival.rate = 1.8e16;
	ck_assert_int_eq(wl_open(&c, &s, &err), WL_ECONFIG);
	ck_assert_str_eq(err.what, "workload.generator: about 9e+16 requests "
	    "(the arrival rate over duration_s), more than 2^44, which no "
	    "run could finish: set generator.requests or max_requests, or "
	    "lower the rate or duration_s");
	c.gen.arrival.rate = 3.5e12;	/* 1.75e13, just under 2^44 */
	ck_assert_int_eq(wl_open(&c, &s, &err), WL_OK);
	wl_stream_free(s);
	c.max_requests = 10;		/* bounded: as before */
	c.gen.arrival.rate = 1.8e16;
	ck_assert_int_eq(wl_open(&c, &s, &err), WL_OK);
	wl_stream_free(s);
	c.max_requests = 0;
	c.gen.arrival.kind = WL_ARR_ONOFF;	/* mean: 1e13 x 1 / 4 */
	c.gen.arrival.rate = 1e13;
	c.gen.arrival.on_s = 1;
	c.gen.arrival.off_s = 3;
	c.gen.arrival.off_rate = 0;
	c.gen.duration_s = 4000;
	ck_assert_int_eq(wl_open(&c, &s, &err), WL_ECONFIG);
	ck_assert_msg(strstr(err.what, "about 1e+16 requests") != NULL, "%s",
	    err.what);
	c.gen.duration_s = 4;
	ck_assert_int_eq(wl_open(&c, &s, &err), WL_OK);
	wl_stream_free(s);
	/* a schedule that ends: its pieces, cut at duration_s if any */
	c.gen.arrival.kind = WL_ARR_SCHEDULE;
	c.gen.arrival.segs = calloc(2, sizeof(*c.gen.arrival.segs));
	ck_assert_ptr_nonnull(c.gen.arrival.segs);
	c.gen.arrival.nsegs = 2;
	c.gen.arrival.segs[0] = (struct wl_rate_seg){ .duration_s = 100,
	    .rate = 1 };
	c.gen.arrival.segs[1] = (struct wl_rate_seg){ .duration_s = 10,
	    .rate = 1e13 };
	c.gen.duration_s = 0;
	ck_assert_int_eq(wl_open(&c, &s, &err), WL_ECONFIG);
	ck_assert_msg(strstr(err.what, "about 1e+14 requests") != NULL, "%s",
	    err.what);
	c.gen.duration_s = 101;		/* 100 + 1e13 */
	ck_assert_int_eq(wl_open(&c, &s, &err), WL_OK);
	wl_stream_free(s);
	wl_config_release(&c);
}
END_TEST

/* --------------------------------------------------- kvsim CSV round trip */

START_TEST(test_roundtrip)
{
	struct wl_config c;
	struct wl_error err;
	wl_stream *s;
	struct wl_request r;
	char *buf1 = NULL, *buf2 = NULL;
	size_t len1 = 0, len2 = 0;
	FILE *f;
	char tmp[] = "/tmp/check_wl.XXXXXX";
	int fd;

	wl_config_init(&c);
	ck_assert_int_eq(wl_config_load(fx("yaml/gen.yaml"), &c, &err),
	    WL_OK);
	f = open_memstream(&buf1, &len1);
	ck_assert_int_eq(wl_open(&c, &s, &err), WL_OK);
	ck_assert_int_eq(wl_write_kvsim_header(f), WL_OK);
	while (wl_stream_next(s, &r) == WL_OK)
		ck_assert_int_eq(wl_write_kvsim_row(f, &r), WL_OK);
	ck_assert_uint_eq(wl_stream_counts(s)->emitted, 500);
	wl_stream_free(s);
	fclose(f);
	wl_config_release(&c);
	/* Read it back as a trace and write it again: the same bytes. */
	fd = mkstemp(tmp);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_uint_eq(fwrite(buf1, 1, len1, f), len1);
	fclose(f);
	wl_config_init(&c);
	c.trace = strdup(tmp);
	f = open_memstream(&buf2, &len2);
	ck_assert_int_eq(wl_open(&c, &s, &err), WL_OK);
	ck_assert_str_eq(wl_stream_info(s)->format, "kvsim");
	ck_assert_int_eq(wl_write_kvsim_header(f), WL_OK);
	while (wl_stream_next(s, &r) == WL_OK)
		ck_assert_int_eq(wl_write_kvsim_row(f, &r), WL_OK);
	wl_stream_free(s);
	fclose(f);
	remove(tmp);
	ck_assert_uint_eq(len1, len2);
	ck_assert(memcmp(buf1, buf2, len1) == 0);
	free(buf1);
	free(buf2);
	wl_config_release(&c);
}
END_TEST

/* ------------------------------------------- the YAML section written back */

static void
same_bits(double a, double b)
{
	ck_assert_msg(memcmp(&a, &b, sizeof(a)) == 0, "%.17g != %.17g", a, b);
}

static void
same_dist(const struct wl_dist *a, const struct wl_dist *b)
{
	ck_assert_int_eq(a->kind, b->kind);
	ck_assert_int_eq(a->min, b->min);
	ck_assert_int_eq(a->max, b->max);
	switch (a->kind) {
	case WL_DIST_FIXED:
		same_bits(a->value, b->value);
		break;
	case WL_DIST_NORMAL:
		same_bits(a->mean, b->mean);
		same_bits(a->sd, b->sd);
		break;
	case WL_DIST_LOGNORMAL:
		same_bits(a->mu, b->mu);
		same_bits(a->sigma, b->sigma);
		break;
	case WL_DIST_ZIPF:
		same_bits(a->s, b->s);
		break;
	case WL_DIST_EMPIRICAL:
		ck_assert_uint_eq(a->nvalues, b->nvalues);
		ck_assert(memcmp(a->values, b->values,
		    a->nvalues * sizeof(double)) == 0);
		ck_assert((a->weights == NULL) == (b->weights == NULL));
		if (a->weights != NULL)
			ck_assert(memcmp(a->weights, b->weights,
			    a->nvalues * sizeof(double)) == 0);
		break;
	case WL_DIST_UNIFORM:
		break;
	}
}

/* b names the file a does, made absolute. */
static void
same_path(const char *a, const char *b)
{
	char want[5000], cwd[4096];

	if (a == NULL) {
		ck_assert_ptr_null(b);
		return;
	}
	ck_assert_ptr_nonnull(b);
	if (a[0] == '/' || strcmp(a, "-") == 0) {
		ck_assert_str_eq(a, b);
		return;
	}
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	snprintf(want, sizeof(want), "%s/%s", cwd, a);
	ck_assert_str_eq(b, want);
}

/* Every field the stream reads (the trace's settings or the generator's). */
static void
same_config(const struct wl_config *a, const struct wl_config *b)
{
	const struct wl_gen_config *g = &a->gen, *h = &b->gen;

	same_path(a->trace, b->trace);
	if (a->trace != NULL)
		ck_assert_int_eq(a->format, b->format);
	ck_assert_int_eq(a->on_error, b->on_error);
	ck_assert_int_eq(a->order, b->order);
	ck_assert_uint_eq(a->sort_window, b->sort_window);
	ck_assert_uint_eq(a->hash_block_tokens, b->hash_block_tokens);
	ck_assert_uint_eq(a->seed, b->seed);
	ck_assert_uint_eq(a->vocab_size, b->vocab_size);
	same_bits(a->time_scale, b->time_scale);
	same_bits(a->target_rate, b->target_rate);
	same_bits(a->window_start_s, b->window_start_s);
	same_bits(a->window_end_s, b->window_end_s);
	ck_assert_uint_eq(a->max_requests, b->max_requests);
	ck_assert_uint_eq(a->min_prompt, b->min_prompt);
	ck_assert_uint_eq(a->max_prompt, b->max_prompt);
	ck_assert_uint_eq(a->min_output, b->min_output);
	ck_assert_uint_eq(a->max_output, b->max_output);
	ck_assert_uint_eq(a->max_total, b->max_total);
	ck_assert_uint_eq(a->max_model_len, b->max_model_len);
	ck_assert_uint_eq(a->cap_prompt, b->cap_prompt);
	ck_assert_uint_eq(a->cap_output, b->cap_output);
	ck_assert_uint_eq(a->tile_copies, b->tile_copies);
	same_bits(a->tile_period_s, b->tile_period_s);
	ck_assert(a->tile_share == b->tile_share);
	if (a->trace != NULL)
		return;
	ck_assert_uint_eq(g->requests, h->requests);
	same_bits(g->duration_s, h->duration_s);
	ck_assert_int_eq(g->arrival.kind, h->arrival.kind);
	switch (g->arrival.kind) {
	case WL_ARR_GAMMA:
		same_bits(g->arrival.cv, h->arrival.cv);
		/* FALLTHROUGH */
	case WL_ARR_POISSON:
	case WL_ARR_CONSTANT:
		same_bits(g->arrival.rate, h->arrival.rate);
		break;
	case WL_ARR_ONOFF:
		same_bits(g->arrival.rate, h->arrival.rate);
		same_bits(g->arrival.on_s, h->arrival.on_s);
		same_bits(g->arrival.off_s, h->arrival.off_s);
		same_bits(g->arrival.off_rate, h->arrival.off_rate);
		break;
	case WL_ARR_SCHEDULE:
		ck_assert(g->arrival.repeat == h->arrival.repeat);
		ck_assert_uint_eq(g->arrival.nsegs, h->arrival.nsegs);
		for (size_t i = 0; i < g->arrival.nsegs; i++) {
			same_bits(g->arrival.segs[i].duration_s,
			    h->arrival.segs[i].duration_s);
			same_bits(g->arrival.segs[i].rate,
			    h->arrival.segs[i].rate);
		}
		break;
	}
	same_dist(&g->prompt, &h->prompt);
	same_dist(&g->output, &h->output);
	same_dist(&g->priority, &h->priority);
	same_dist(&g->n, &h->n);
	same_path(g->lengths_trace, h->lengths_trace);
	if (g->lengths_trace != NULL)
		ck_assert_int_eq(g->lengths_format, h->lengths_format);
	ck_assert_uint_eq(g->systems, h->systems);
	same_bits(g->system_zipf_s, h->system_zipf_s);
	same_dist(&g->system_len, &h->system_len);
	same_bits(g->system_fraction, h->system_fraction);
	same_dist(&g->turns, &h->turns);
	same_bits(g->think_s, h->think_s);
	ck_assert_uint_eq(g->max_context, h->max_context);
}

static char *
write_yaml(const struct wl_config *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	wl_config_write_yaml(c, f, 0);
	ck_assert_int_eq(fclose(f), 0);
	return buf;
}

/* Sections covering every arrival process and distribution kind, both
 * lognormal forms, system prompts, sessions, lengths_from and a trace
 * with every setting; %s is the fixtures' folder. */
static const char *const rt_yaml[] = {
	"{seed: 11, generator: {requests: 40, arrival: {process: poisson, "
	"rate: 0.7}, prompt: {dist: lognormal, mu: 5.1, sigma: 0.3}, "
	"output: {dist: empirical, values: [3, 17, 40.5]}, priority: {dist: "
	"normal, mean: -2, sd: 3, min: -10, max: 10}, n: 2}}",
	"{generator: {requests: 30, arrival: {process: onoff, rate: 5, "
	"on_s: 2.5, off_s: 1, off_rate: 0.25}, prompt: {dist: uniform, "
	"min: 10, max: 90}, output: {dist: zipf, s: 0.7, min: 2, max: 50}}}",
	"{time_scale: 0.3, window: {start_s: 1, end_s: 30}, filter: "
	"{min_prompt_tokens: 20, max_total_tokens: 5000}, cap: "
	"{output_tokens: 64}, tile: {copies: 2, period_s: 40, "
	"share_prefixes: true}, max_requests: 30, generator: {requests: 50, "
	"arrival: {process: constant, rate: 3}, prompt: {dist: normal, "
	"mean: 300, sd: 100}}}",
	"{max_requests: 60, generator: {requests: 0, duration_s: 20.5, "
	"arrival: {process: schedule, repeat: true, segments: [{duration_s: "
	"2, rate: 3}, {duration_s: 1.5, rate: 0}]}, prefix: {systems: 3, "
	"zipf_s: 0.8, length: {dist: lognormal, mean: 200, cv: 0.5}, "
	"fraction: 0.6}}}",
	"{generator: {requests: 0, arrival: {process: schedule, segments: "
	"[{duration_s: 5, rate: 4}]}, prompt: {dist: fixed, value: 7, "
	"max: 9}}}",
	"{seed: 5, generator: {requests: 40, arrival: {process: gamma, "
	"rate: 2, cv: 0.4}, lengths_from: {trace: %s/azure.csv, format: "
	"azure}, sessions: {turns: {dist: empirical, values: [1, 3], "
	"weights: [1, 2]}, think_s: 0.5, max_context: 3000}}}",
	"{trace: %s/azure.csv, format: azure, on_error: skip, "
	"order: sort, sort_window: 7, hash_block_tokens: 16, vocab_size: "
	"1000, target_rate: 3, max_model_len: 4000}",
};

static void
same_stream(const struct wl_config *a, const struct wl_config *b)
{
	static struct req qa[MAXR], qb[MAXR];
	size_t na, nb;
	char msg[1200];

	ck_assert_msg(drain(a, qa, &na, NULL, msg, sizeof(msg)) == WL_END,
	    "%s", msg);
	ck_assert_msg(drain(b, qb, &nb, NULL, msg, sizeof(msg)) == WL_END,
	    "%s", msg);
	ck_assert_uint_gt(na, 0);
	ck_assert_uint_eq(na, nb);
	for (size_t i = 0; i < na; i++) {
		const struct wl_request *x = &qa[i].r, *y = &qb[i].r;

		ck_assert_int_eq(x->arrival_ns, y->arrival_ns);
		ck_assert_uint_eq(x->prompt_tokens, y->prompt_tokens);
		ck_assert_uint_eq(x->output_tokens, y->output_tokens);
		ck_assert_int_eq(x->priority, y->priority);
		ck_assert_uint_eq(x->n, y->n);
		ck_assert_uint_eq(x->session, y->session);
		ck_assert_uint_eq(x->turn, y->turn);
		ck_assert_int_eq(x->think_ns, y->think_ns);
		ck_assert_uint_eq(x->out_key, y->out_key);
		ck_assert_uint_eq(x->nsegs, y->nsegs);
		for (uint32_t k = 0; k < x->nsegs; k++) {
			ck_assert_uint_eq(x->segs[k].key, y->segs[k].key);
			ck_assert_uint_eq(x->segs[k].len, y->segs[k].len);
		}
	}
}

/* Written, read back over the defaults: the same fields, the same text
 * written again, the same stream. */
START_TEST(test_yaml_write)
{
	struct wl_config a, b;
	struct wl_error err;
	char text[2000], dir[1100];
	char *t1, *t2;

	wl_config_init(&a);
	if (_i == 0) {
		ck_assert_int_eq(wl_config_load(fx("yaml/gen.yaml"), &a, &err),
		    WL_OK);
		a.max_requests = 60;
	} else {
		snprintf(dir, sizeof(dir), "%s", fx("x"));
		dir[strlen(dir) - 2] = '\0';
		snprintf(text, sizeof(text), rt_yaml[_i - 1], dir);
		ck_assert_int_eq(apply_yaml(text, &a, &err), WL_OK);
	}
	t1 = write_yaml(&a);
	wl_config_init(&b);
	ck_assert_msg(apply_yaml(t1, &b, &err) == WL_OK, "%s: %s", t1,
	    err.what);
	same_config(&a, &b);
	t2 = write_yaml(&b);
	ck_assert_str_eq(t1, t2);
	same_stream(&a, &b);
	free(t1);
	free(t2);
	wl_config_release(&a);
	wl_config_release(&b);
}
END_TEST

/* Escaped strings are valid YAML and read back as they were. */
START_TEST(test_yaml_escape)
{
	static const char *const in[] = {
		"plain/path.csv",
		"a \"quoted\" back\\slash",
		"tab\tnew\nline\rcr \x01 \x1b \x7f",
		"caf\xc3\xa9 \xc2\x85 \xe2\x80\xa8 \xef\xbb\xbf "
		"\xf0\x9f\x98\x80",
	};
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	wl_yaml_escape(f, "q\"b\\ t\t n\n c\x01 d\x7f e\xc2\x85 l\xe2\x80\xa8"
	    " x\xff");
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_str_eq(buf, "q\\\"b\\\\ t\\t n\\n c\\x01 d\\x7F e\\x85 "
	    "l\\u2028 x\\xFF");
	free(buf);
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct yd_doc doc;
		char msg[512];
		FILE *rd;

		buf = NULL;
		f = open_memstream(&buf, &len);
		ck_assert_ptr_nonnull(f);
		fputc('"', f);
		wl_yaml_escape(f, in[i]);
		fputc('"', f);
		ck_assert_int_eq(fclose(f), 0);
		rd = fmemopen(buf, len, "r");
		ck_assert_ptr_nonnull(rd);
		ck_assert_msg(yd_read(&doc, rd, "escaped", YD_LOADER, msg,
		    sizeof(msg)) == KV_OK, "%s: %s", buf, msg);
		fclose(rd);
		ck_assert_ptr_nonnull(doc.root);
		ck_assert_int_eq(doc.root->type, YD_SCALAR);
		ck_assert_str_eq(doc.root->str, in[i]);
		yd_release(&doc);
		free(buf);
	}
}
END_TEST

static Suite *
wl_suite(void)
{
	Suite *s = suite_create("workloads");
	TCase *tc = tcase_create("readers");

	tcase_add_test(tc, test_parse_numbers);
	tcase_add_test(tc, test_csv_quick);
	tcase_add_test(tc, test_azure);
	tcase_add_test(tc, test_mooncake_gzip);
	tcase_add_test(tc, test_gzip_corrupt_text);
	tcase_add_test(tc, test_mooncake_mapping);
	tcase_add_test(tc, test_formats);
	tcase_add_loop_test(tc, test_bad_input, 0,
	    sizeof(bad_cases) / sizeof(bad_cases[0]));
	tcase_add_test(tc, test_skip_and_reject);
	tcase_add_test(tc, test_order);
	tcase_add_test(tc, test_span);
	tcase_add_test(tc, test_leap_day);
	tcase_add_test(tc, test_stats_blocks);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tc = tcase_create("transforms");
	tcase_add_test(tc, test_transforms);
	tcase_add_test(tc, test_tile);
	tcase_add_test(tc, test_check_streams);
	tcase_add_loop_test(tc, test_check_broken, 0,
	    sizeof(broken) / sizeof(broken[0]));
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tc = tcase_create("config");
	tcase_add_test(tc, test_yaml_trace);
	tcase_add_test(tc, test_yaml_generator);
	tcase_add_test(tc, test_yaml_override);
	tcase_add_loop_test(tc, test_yaml_bad, 0,
	    sizeof(yaml_bad) / sizeof(yaml_bad[0]));
	tcase_add_test(tc, test_config_check);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_loop_test(tc, test_yaml_write, 0,
	    1 + sizeof(rt_yaml) / sizeof(rt_yaml[0]));
	tcase_add_test(tc, test_yaml_escape);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(wl_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
