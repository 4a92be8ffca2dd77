/*
 * benchfmt.c -- vllm_bench.json and inference_perf_summary.json from a
 * run's requests.csv (benchfmt.h; the keys are listed in docs/run.md).
 *
 * Statistics follow the tools': the mean, numpy's median and its
 * percentile with linear interpolation (GSL's quantile from sorted data
 * is the same rule), the population standard deviation (numpy's std).
 */
#include "config.h"

#include "reports/benchfmt.h"

#include "util/csv.h"

#include <errno.h>
#include <gsl/gsl_statistics_double.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One finished request, as requests.csv gives it. */
struct breq {
	uint64_t id;
	int64_t arrival_ns, first_ns, finish_ns;
	uint32_t in, out, cached;
	double ttft, tpot, e2e;	/* seconds; tpot NAN: 1 output token */
};

struct bset {
	struct breq *r;
	size_t n, cap;
	uint64_t in, out, cached;	/* sums */
	double gap_s;		/* sum of finish - first token */
	uint64_t gaps;		/* sum of output - 1 */
};

/* Columns read, in this order. */
enum { C_ID, C_ARR, C_FT, C_FIN, C_IN, C_OUT, C_CACHED, C_TTFT, C_TPOT,
	C_E2E, C_N };
static const char *const cols[C_N] = { "request_id", "arrival_s",
	"first_token_s", "finish_s", "input_tokens", "output_tokens",
	"cached_prefix_tokens", "ttft_s", "tpot_s", "e2e_s" };

bool
bench_format_parse(const char *list, unsigned *mask, char *err,
    size_t errlen)
{
	const char *p = list;

	*mask = 0;
	while (*p != '\0') {
		size_t n = strcspn(p, ",");

		if (n == 10 && strncmp(p, "vllm-bench", n) == 0)
			*mask |= BENCH_VLLM;
		else if (n == 14 && strncmp(p, "inference-perf", n) == 0)
			*mask |= BENCH_INFERENCE_PERF;
		else {
			snprintf(err, errlen, "unknown result format '%.*s' "
			    "(vllm-bench, inference-perf)", (int)n, p);
			return false;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	if (*mask == 0) {
		snprintf(err, errlen, "no result format given (vllm-bench, "
		    "inference-perf)");
		return false;
	}
	return true;
}

const char *
bench_format_file(enum bench_format f)
{
	return f == BENCH_VLLM ? "vllm_bench.json" :
	    "inference_perf_summary.json";
}

/* "S.NNNNNNNNN" (requests.csv's seconds) as integer ns. */
static bool
parse_ns(const char *s, int64_t *out)
{
	char *end;
	long long sec;
	int64_t frac = 0;
	int digits = 0;

	errno = 0;
	sec = strtoll(s, &end, 10);
	if (end == s || errno != 0 || sec < 0 || sec > INT64_MAX / 1000000000)
		return false;
	if (*end == '.')
		for (end++; *end >= '0' && *end <= '9'; end++)
			if (digits++ < 9)
				frac = frac * 10 + (*end - '0');
	if (*end != '\0')
		return false;
	for (; digits < 9; digits++)
		frac *= 10;
	*out = (int64_t)sec * 1000000000 + frac;
	return true;
}

static bool
parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || *end != '\0' || errno != 0 || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool
parse_sec(const char *s, double *out, bool empty_ok)
{
	char *end;

	if (s[0] == '\0' && empty_ok) {
		*out = NAN;
		return true;
	}
	*out = strtod(s, &end);
	return end != s && *end == '\0' && isfinite(*out);
}

/* One row into q; false names the bad column in *bad (-1: the row). */
static bool
parse_row(struct csv *c, const long *ix, struct breq *q, int *bad)
{
	*bad = C_ID;
	if (sscanf(c->field[ix[C_ID]], "%" SCNu64, &q->id) != 1)
		return false;
	if (!parse_ns(c->field[ix[*bad = C_ARR]], &q->arrival_ns) ||
	    !parse_ns(c->field[ix[*bad = C_FT]], &q->first_ns) ||
	    !parse_ns(c->field[ix[*bad = C_FIN]], &q->finish_ns) ||
	    !parse_u32(c->field[ix[*bad = C_IN]], &q->in) ||
	    !parse_u32(c->field[ix[*bad = C_OUT]], &q->out) ||
	    !parse_u32(c->field[ix[*bad = C_CACHED]], &q->cached) ||
	    !parse_sec(c->field[ix[*bad = C_TTFT]], &q->ttft, false) ||
	    !parse_sec(c->field[ix[*bad = C_TPOT]], &q->tpot, true) ||
	    !parse_sec(c->field[ix[*bad = C_E2E]], &q->e2e, false))
		return false;
	*bad = -1;
	if (q->first_ns < q->arrival_ns || q->finish_ns < q->first_ns ||
	    q->out < 1 || q->cached > q->in)
		return false;
	if (q->out == 1)
		q->tpot = NAN;
	return true;
}

static int
breq_by_id(const void *a, const void *b)
{
	const struct breq *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Every row of requests.csv into s, in request id order. */
static kv_err
read_reqs(FILE *f, struct bset *s, char *err, size_t errlen)
{
	struct csv c;
	struct csv_error e;
	long ix[C_N];
	kv_err rc;
	int bad;

	rewind(f);
	if ((rc = csv_init(&c, f, &e)) != KV_OK) {
		csv_error_format(&e, "requests.csv", err, errlen);
		return rc;
	}
	for (int i = 0; i < C_N; i++)
		if ((ix[i] = csv_col(&c, cols[i])) < 0) {
			snprintf(err, errlen, "requests.csv: no column %s",
			    cols[i]);
			csv_close(&c);
			return KV_EINVAL;
		}
	while ((rc = csv_next(&c, &e)) == KV_OK && c.nfield > 0) {
		struct breq q;

		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 1024;
			struct breq *r = realloc(s->r, cap * sizeof(*r));

			if (r == NULL) {
				rc = KV_ENOMEM;
				snprintf(err, errlen, "out of memory");
				break;
			}
			s->r = r;
			s->cap = cap;
		}
		memset(&q, 0, sizeof(q));
		if (!parse_row(&c, ix, &q, &bad)) {
			snprintf(err, errlen, "requests.csv:%lu: bad %s",
			    c.line, bad >= 0 ? cols[bad] : "row");
			rc = KV_EINVAL;
			break;
		}
		s->r[s->n++] = q;
		s->in += q.in;
		s->out += q.out;
		s->cached += q.cached;
		s->gap_s += (double)(q.finish_ns - q.first_ns) / 1e9;
		s->gaps += q.out - 1;
	}
	if (rc != KV_OK && rc != KV_ENOMEM && rc != KV_EINVAL)
		csv_error_format(&e, "requests.csv", err, errlen);
	else if (rc == KV_EINVAL && err[0] == '\0')
		csv_error_format(&e, "requests.csv", err, errlen);
	csv_close(&c);
	if (rc == KV_OK)
		qsort(s->r, s->n, sizeof(*s->r), breq_by_id);
	return rc;
}

/* JSON ----------------------------------------------------------------- */

/* A writer of pretty-printed JSON: commas and indentation kept here. */
struct jw {
	FILE *f;
	int depth;
	bool first[16];
};

/* v in the fewest digits (up to 17) that read back bit for bit. */
static void
j_num_raw(FILE *f, double v)
{
	char buf[40];

	if (!isfinite(v)) {
		fputs("null", f);
		return;
	}
	if (v == 0) {
		fputs("0", f);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	fputs(buf, f);
}

static void
j_key(struct jw *w, const char *key)
{
	if (!w->first[w->depth])
		fputc(',', w->f);
	w->first[w->depth] = false;
	fprintf(w->f, "\n%*s", 2 * w->depth, "");
	if (key != NULL)
		fprintf(w->f, "\"%s\": ", key);
}

static void
j_open(struct jw *w, const char *key, char brace)
{
	if (w->depth > 0 || key != NULL)
		j_key(w, key);
	fputc(brace, w->f);
	w->first[++w->depth] = true;
}

static void
j_close(struct jw *w, char brace)
{
	bool empty = w->first[w->depth];

	w->depth--;
	if (!empty)
		fprintf(w->f, "\n%*s", 2 * w->depth, "");
	fputc(brace, w->f);
}

static void
j_num(struct jw *w, const char *key, double v)
{
	j_key(w, key);
	j_num_raw(w->f, v);
}

static void
j_u64(struct jw *w, const char *key, uint64_t v)
{
	j_key(w, key);
	fprintf(w->f, "%" PRIu64, v);
}

/* A string of the run's own (model ids: no control characters). */
static void
j_str(struct jw *w, const char *key, const char *s)
{
	j_key(w, key);
	fputc('"', w->f);
	for (; s != NULL && *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', w->f);
		if ((unsigned char)*s < 0x20)
			fprintf(w->f, "\\u%04x", (unsigned)(unsigned char)*s);
		else
			fputc(*s, w->f);
	}
	fputc('"', w->f);
}

static void
j_null(struct jw *w, const char *key)
{
	j_key(w, key);
	fputs("null", w->f);
}

/* Statistics ---------------------------------------------------------- */

/* Values of one metric, sorted; n may be 0. */
struct vals {
	double *v;
	size_t n;
};

static int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

enum { M_TTFT, M_TPOT, M_E2E, M_NTPOT, M_IN, M_OUT, M_N };

/* Each metric's values over the finished requests (tpot: 2+ tokens). */
static bool
vals_fill(const struct bset *s, struct vals *m)
{
	for (int k = 0; k < M_N; k++) {
		m[k].n = 0;
		m[k].v = malloc((s->n ? s->n : 1) * sizeof(double));
		if (m[k].v == NULL)
			return false;
	}
	for (size_t i = 0; i < s->n; i++) {
		const struct breq *q = &s->r[i];

		m[M_TTFT].v[m[M_TTFT].n++] = q->ttft;
		if (!isnan(q->tpot))
			m[M_TPOT].v[m[M_TPOT].n++] = q->tpot;
		m[M_E2E].v[m[M_E2E].n++] = q->e2e;
		m[M_NTPOT].v[m[M_NTPOT].n++] = q->e2e / q->out;
		m[M_IN].v[m[M_IN].n++] = q->in;
		m[M_OUT].v[m[M_OUT].n++] = q->out;
	}
	for (int k = 0; k < M_N; k++)
		qsort(m[k].v, m[k].n, sizeof(double), dbl_cmp);
	return true;
}

static void
vals_free(struct vals *m)
{
	for (int k = 0; k < M_N; k++)
		free(m[k].v);
}

static double
v_mean(const struct vals *x)
{
	double sum = 0;

	for (size_t i = 0; i < x->n; i++)
		sum += x->v[i];
	return x->n ? sum / (double)x->n : 0;
}

/* numpy's percentile (linear), p in [0, 100]; 0 for no values, as vLLM
 * writes for an empty list. */
static double
v_pct(const struct vals *x, double p)
{
	return x->n ? gsl_stats_quantile_from_sorted_data(x->v, 1, x->n,
	    p / 100) : 0;
}

/* The population standard deviation (numpy's std). */
static double
v_std(const struct vals *x)
{
	return x->n ? gsl_stats_sd_with_fixed_mean(x->v, 1, x->n,
	    v_mean(x)) : 0;
}

static int
i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The most requests in flight at once: [arrival, finish) intervals, a
 * departure before an arrival at the same instant. */
static bool
peak_concurrency(const struct bset *s, uint64_t *out)
{
	int64_t *a = malloc((s->n ? s->n : 1) * sizeof(*a));
	int64_t *d = malloc((s->n ? s->n : 1) * sizeof(*d));
	uint64_t cur = 0, peak = 0;
	size_t i = 0, j = 0;

	if (a == NULL || d == NULL) {
		free(a);
		free(d);
		return false;
	}
	for (size_t k = 0; k < s->n; k++) {
		a[k] = s->r[k].arrival_ns;
		d[k] = s->r[k].finish_ns;
	}
	qsort(a, s->n, sizeof(*a), i64_cmp);
	qsort(d, s->n, sizeof(*d), i64_cmp);
	while (i < s->n) {
		if (j < s->n && d[j] <= a[i]) {
			cur--;
			j++;
		} else {
			cur++;
			i++;
			peak = cur > peak ? cur : peak;
		}
	}
	free(a);
	free(d);
	*out = peak;
	return true;
}

/* Writers ------------------------------------------------------------- */

/* vLLM's mean_/median_/std_/p99_<name>_ms for one metric. */
static void
vllm_metric(struct jw *w, const char *name, const struct vals *x)
{
	char k[64];

	snprintf(k, sizeof(k), "mean_%s_ms", name);
	j_num(w, k, v_mean(x) * 1000);
	snprintf(k, sizeof(k), "median_%s_ms", name);
	j_num(w, k, v_pct(x, 50) * 1000);
	snprintf(k, sizeof(k), "std_%s_ms", name);
	j_num(w, k, v_std(x) * 1000);
	snprintf(k, sizeof(k), "p99_%s_ms", name);
	j_num(w, k, v_pct(x, 99) * 1000);
}

/* One per-request list, in request id order. */
static void
vllm_list(struct jw *w, const char *key, const struct bset *s, int what)
{
	j_open(w, key, '[');
	for (size_t i = 0; i < s->n; i++) {
		const struct breq *q = &s->r[i];

		if (what == 0)
			j_u64(w, NULL, q->in);
		else if (what == 1)
			j_u64(w, NULL, q->out);
		else if (what == 2)
			j_num(w, NULL, q->ttft);
		else if (what == 3)
			j_num(w, NULL, q->e2e);
		else
			j_num(w, NULL, (double)q->arrival_ns / 1e9);
	}
	j_close(w, ']');
}

static void
write_vllm(struct jw *w, const struct bset *s, const struct vals *m,
    const struct bench_info *bi, uint64_t peak)
{
	double d = (double)bi->duration_ns / 1e9;
	double inv = d > 0 ? 1 / d : 0;
	static const char *const lists[] = { "input_lens", "output_lens",
		"ttfts", "latencies", "start_times" };

	j_open(w, NULL, '{');
	j_str(w, "backend", "kvsim");
	j_str(w, "model_id", bi->model);
	j_u64(w, "num_prompts", bi->requests);
	j_null(w, "max_concurrency");
	j_num(w, "duration", d);
	j_u64(w, "completed", s->n);
	j_u64(w, "failed", bi->requests - s->n);
	j_u64(w, "total_input_tokens", s->in);
	j_u64(w, "total_output_tokens", s->out);
	j_num(w, "request_throughput", (double)s->n * inv);
	if (bi->have_slo)
		j_num(w, "request_goodput", (double)bi->good * inv);
	else
		j_null(w, "request_goodput");
	j_num(w, "output_throughput", (double)s->out * inv);
	j_num(w, "total_token_throughput", (double)(s->in + s->out) * inv);
	for (int k = 0; k < 5; k++)
		vllm_list(w, lists[k], s, k);
	j_u64(w, "max_concurrent_requests", peak);
	vllm_metric(w, "ttft", &m[M_TTFT]);
	vllm_metric(w, "tpot", &m[M_TPOT]);
	/* every gap: the mean exactly (the gaps of a request add up to
	 * finish - first token), the quantiles from the histogram */
	j_num(w, "mean_itl_ms", s->gaps ? s->gap_s / (double)s->gaps * 1000 :
	    0);
	j_num(w, "median_itl_ms", bi->itl_p50_s * 1000);
	j_num(w, "p99_itl_ms", bi->itl_p99_s * 1000);
	vllm_metric(w, "e2el", &m[M_E2E]);
	j_close(w, '}');
}

/* inference-perf's summarize(): mean, min, max and its percentiles. */
static void
ip_summary(struct jw *w, const char *key, const struct vals *x)
{
	static const double pct[] = { 0.1, 1, 5, 10, 25, 50, 75, 90, 95, 99,
		99.9 };
	char k[16];

	if (key != NULL && x->n == 0) {
		j_null(w, key);
		return;
	}
	if (key != NULL)
		j_open(w, key, '{');
	j_num(w, "mean", v_mean(x));
	j_num(w, "min", x->n ? x->v[0] : 0);
	j_num(w, "max", x->n ? x->v[x->n - 1] : 0);
	for (size_t i = 0; i < sizeof(pct) / sizeof(pct[0]); i++) {
		if (pct[i] == 50)
			snprintf(k, sizeof(k), "median");
		else
			snprintf(k, sizeof(k), "p%g", pct[i]);
		j_num(w, k, v_pct(x, pct[i]));
	}
	if (key != NULL)
		j_close(w, '}');
}

static void
write_ip(struct jw *w, const struct bset *s, const struct vals *m,
    const struct bench_info *bi)
{
	double d = (double)bi->duration_ns / 1e9;
	double inv = d > 0 ? 1 / d : 0;

	j_open(w, NULL, '{');
	j_num(w, "benchmark_time_seconds", d);
	j_open(w, "load_summary", '{');
	j_u64(w, "count", bi->requests);
	j_close(w, '}');
	j_open(w, "successes", '{');
	j_u64(w, "count", s->n);
	j_open(w, "latency", '{');
	ip_summary(w, "request_latency", &m[M_E2E]);
	ip_summary(w, "normalized_time_per_output_token", &m[M_NTPOT]);
	ip_summary(w, "time_per_output_token", &m[M_TPOT]);
	ip_summary(w, "time_to_first_token", &m[M_TTFT]);
	j_close(w, '}');
	j_open(w, "throughput", '{');
	j_num(w, "input_tokens_per_sec", (double)s->in * inv);
	j_num(w, "output_tokens_per_sec", (double)s->out * inv);
	j_num(w, "total_tokens_per_sec", (double)(s->in + s->out) * inv);
	j_num(w, "requests_per_sec", (double)s->n * inv);
	j_close(w, '}');
	j_open(w, "prompt_tokens", '{');
	j_u64(w, "total", s->in);
	j_u64(w, "cached", s->cached);
	j_u64(w, "uncached", s->in - s->cached);
	if (s->n > 0)
		ip_summary(w, NULL, &m[M_IN]);
	j_close(w, '}');
	ip_summary(w, "output_len", &m[M_OUT]);
	j_open(w, "output_tokens", '{');
	j_u64(w, "total", s->out);
	if (s->n > 0)
		ip_summary(w, NULL, &m[M_OUT]);
	j_close(w, '}');
	j_close(w, '}');
	j_open(w, "failures", '{');
	j_u64(w, "count", bi->requests - s->n);
	j_close(w, '}');
	j_close(w, '}');
}

kv_err
bench_write(enum bench_format fmt, FILE *reqs, const struct bench_info *bi,
    FILE *out, char *err, size_t errlen)
{
	struct bset s;
	struct vals m[M_N];
	struct jw w;
	uint64_t peak = 0;
	kv_err rc;

	memset(&s, 0, sizeof(s));
	memset(m, 0, sizeof(m));
	memset(&w, 0, sizeof(w));
	w.f = out;
	err[0] = '\0';
	rc = read_reqs(reqs, &s, err, errlen);
	if (rc == KV_OK && s.n > bi->requests) {
		snprintf(err, errlen, "requests.csv: %zu finished requests of "
		    "%" PRIu64 " arrived", s.n, bi->requests);
		rc = KV_EINVAL;
	}
	if (rc == KV_OK && (!vals_fill(&s, m) ||
	    (fmt == BENCH_VLLM && !peak_concurrency(&s, &peak)))) {
		snprintf(err, errlen, "out of memory");
		rc = KV_ENOMEM;
	}
	if (rc == KV_OK) {
		if (fmt == BENCH_VLLM)
			write_vllm(&w, &s, m, bi, peak);
		else
			write_ip(&w, &s, m, bi);
		fputc('\n', out);
		if (fflush(out) != 0 || ferror(out)) {
			snprintf(err, errlen, "write error");
			rc = KV_EINVAL;
		}
	}
	vals_free(m);
	free(s.r);
	return rc;
}
