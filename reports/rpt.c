/*
 * rpt.c -- run metrics and CSV writers (rpt.h).
 *
 * Per request we keep four doubles (TTFT, TPOT, E2E, queueing delay) for
 * the quantiles; everything else is a running sum.  10^6 requests cost
 * 32 MB.  Rejected for these: a streaming quantile sketch (t-digest):
 * approximate, and the exact answer fits in memory at the scales we
 * target.  Per-token gaps do not fit (10^8 and more), so ITL quantiles
 * come from a fixed log-bucketed histogram with a stated bound (rpt.h).
 */
#include "config.h"

#include "reports/rpt.h"
#include "reports/rpt_int.h"

#include <gsl/gsl_statistics_double.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const char *const metric_name[RPT_M_N] = { "ttft", "tpot", "e2e",
					      "queue" };

int
rpt__vec_push(struct rpt_vec *v, double x)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 1024;
		double *p = realloc(v->v, cap * sizeof(*p));

		if (p == NULL)
			return -1;
		v->v = p;
		v->cap = cap;
	}
	v->v[v->n++] = x;
	v->sum += x;
	v->sorted = false;
	if (x > v->watch)
		v->over++;
	return 0;
}

/* r's run id as rpt_csv_field writes it, into run_csv: false where
 * that cannot be done (no memory). */
static bool
run_csv(rpt *r)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	if (f == NULL)
		return false;
	rpt_csv_field(f, r->run_id);
	if (fclose(f) != 0 || n > sizeof(r->run_csv)) {
		free(buf);
		return false;
	}
	memcpy(r->run_csv, buf, n);
	r->run_csv_n = n;
	free(buf);
	return true;
}

rpt *
rpt_new(const char *run_id, FILE *reqs, FILE *ts)
{
	rpt *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->itl_hist = calloc(RPT_ITL_NB, sizeof(*r->itl_hist));
	if (r->itl_hist == NULL) {
		free(r);
		return NULL;
	}
	snprintf(r->run_id, sizeof(r->run_id), "%s", run_id ? run_id : "");
	if (!run_csv(r)) {
		free(r->itl_hist);
		free(r);
		return NULL;
	}
	r->reqs = reqs;
	r->ts = ts;
	for (int i = 0; i < RPT_M_N; i++)
		r->m[i].watch = NAN;
	r->xfer.watch = NAN;
	return r;
}

void
rpt_set_files(rpt *r, FILE *reqs, FILE *ts)
{
	r->reqs = reqs;
	r->ts = ts;
}

void
rpt_set_slo(rpt *r, double ttft_s, double tpot_s, double e2e_s)
{
	r->slo_ttft = ttft_s;
	r->slo_tpot = tpot_s;
	r->slo_e2e = e2e_s;
}

uint64_t
rpt_good(const rpt *r)
{
	return r->good;
}

double
rpt_itl_value(size_t b)
{
	int msb;
	uint64_t sub, low, width;

	if (b < RPT_ITL_EXACT)
		return (double)b;
	msb = 8 + (int)((b - RPT_ITL_EXACT) / RPT_ITL_SUB);
	sub = (b - RPT_ITL_EXACT) % RPT_ITL_SUB;
	low = (RPT_ITL_SUB + sub) << (msb - 7);
	width = (uint64_t)1 << (msb - 7);
	return (double)low + (double)(width - 1) / 2.0;
}

void
rpt_add_itl(rpt *r, int64_t gap_ns)
{
	r->itl_hist[rpt_itl_bucket(gap_ns)]++;
	r->itl_count++;
}

void
rpt_add_itl_n(rpt *r, int64_t gap_ns, uint64_t n)
{
	r->itl_hist[rpt_itl_bucket(gap_ns)] += n;
	r->itl_count += n;
}

uint64_t *
rpt_itl_hist(rpt *r)
{
	return r->itl_hist;
}

void
rpt_itl_counted(rpt *r, uint64_t n)
{
	r->itl_count += n;
}

/* The k-th smallest gap (0-based) in ns, from the histogram. */
static double
itl_order(const rpt *r, uint64_t k)
{
	uint64_t c = 0;

	for (size_t b = 0; b < RPT_ITL_NB; b++) {
		c += r->itl_hist[b];
		if (c > k)
			return rpt_itl_value(b);
	}
	return 0.0;
}

static double
itl_quantile(const rpt *r, double p)
{
	double h, lo, hi;
	uint64_t k;

	if (r->itl_count == 0)
		return 0.0;
	if (p >= 1.0)	/* the maximum is kept exactly */
		return (double)r->itl_max_ns / 1e9;
	h = p * (double)(r->itl_count - 1);
	k = (uint64_t)h;
	lo = itl_order(r, k);
	if (h == (double)k || k + 1 >= r->itl_count)
		return lo / 1e9;
	hi = itl_order(r, k + 1);
	return (lo + (h - (double)k) * (hi - lo)) / 1e9;
}

void
rpt_free(rpt *r)
{
	if (r == NULL)
		return;
	for (int i = 0; i < RPT_M_N; i++)
		free(r->m[i].v);
	free(r->itl_hist);
	rpt__client_free(r);
	rpt__pd_free(r);
	free(r);
}

void
rpt_csv_field(FILE *f, const char *s)
{
	if (s == NULL)
		s = "";
	if (strpbrk(s, ",\"\r\n") == NULL) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/*
 * A row is built in a buffer and written with one fwrite: a long run
 * writes a requests.csv row per request, and printf's parsing cost more
 * than the simulation of the request's decode steps.
 */

/* "00" to "99": two digits a division. */
static const char digits2[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233"
	"34353637383940414243444546474849505152535455565758596061626364656667"
	"6869707172737475767778798081828384858687888990919293949596979899";

/* Decimal v < 10^4 at p, in one to four digits; returns the end. */
static inline char *
put_small(char *p, uint32_t v)
{
	if (v < 10) {
		*p = (char)('0' + v);
		return p + 1;
	}
	if (v < 100) {
		memcpy(p, digits2 + 2 * v, 2);
		return p + 2;
	}
	if (v < 1000) {
		*p = (char)('0' + v / 100);
		memcpy(p + 1, digits2 + 2 * (v % 100), 2);
		return p + 3;
	}
	memcpy(p, digits2 + 2 * (v / 100), 2);
	memcpy(p + 2, digits2 + 2 * (v % 100), 2);
	return p + 4;
}

/* Decimal v at p; returns the end.  Below 10^4, put_small; else the
 * digits are counted first and written from the last, in place. */
char *
rpt__put_u(char *p, uint64_t v)
{
	static const uint64_t pow10[] = {
		1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
		10000000ull, 100000000ull, 1000000000ull, 10000000000ull,
		100000000000ull, 1000000000000ull, 10000000000000ull,
		100000000000000ull, 1000000000000000ull,
		10000000000000000ull, 100000000000000000ull,
		1000000000000000000ull, 10000000000000000000ull,
	};
	char *e;
	int n = 5;

	if (v < 10000)
		return put_small(p, (uint32_t)v);
	while (n < 20 && v >= pow10[n])	/* its digits, by compares */
		n++;
	e = p + n;
	p = e;
	while (v >= 100) {
		uint32_t r = (uint32_t)(v % 100);

		v /= 100;
		*--p = digits2[2 * r + 1];
		*--p = digits2[2 * r];
	}
	if (v >= 10) {
		*--p = digits2[2 * v + 1];
		*--p = digits2[2 * v];
	} else {
		*--p = (char)('0' + v);
	}
	return e;
}

/* A requests.csv row's run id (written to the file), then its request id
 * and replica into line, each after its comma; returns the end. */
char *
rpt__put_head(rpt *r, const struct rpt_req *q, char *line)
{
	char *p = line + r->run_csv_n;

	memcpy(line, r->run_csv, r->run_csv_n);
	*p++ = ',';
	p = rpt__put_u(p, q->id);
	*p++ = ',';
	return rpt__put_u(p, q->replica);
}

/* A row's last fields, each after its comma: preemptions, recomputed
 * tokens, swapped-out blocks and bytes, the frontend times in and out. */
char *
rpt__put_tail(char *p, const struct rpt_req *q)
{
	const uint64_t v[] = { q->preemptions, q->recomputed_tokens,
			       q->swapped_out_blocks, q->swapped_out_bytes };

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		*p++ = ',';
		p = rpt__put_u(p, v[i]);
	}
	*p++ = ',';
	p = rpt__put_sec(p, q->frontend_in_ns);
	*p++ = ',';
	return rpt__put_sec(p, q->frontend_out_ns);
}

/* Integer ns as seconds, exactly: "12.345678901". */
char *
rpt__put_sec(char *p, int64_t ns)
{
	const uint64_t mask = (UINT64_C(1) << 57) - 1;
	uint64_t u = (uint64_t)ns, t;
	uint32_t frac;

	if (ns < 0) {
		*p++ = '-';
		u = 0 - u;
	}
	t = u / 1000000000;
	p = t < 10000 ? put_small(p, (uint32_t)t) : rpt__put_u(p, t);
	*p++ = '.';
	frac = (uint32_t)(u % 1000000000);
	/* the nine digits from one product: t / 2^57 is frac / 10^8 and
	 * each further 100 (t's fraction) times gives the next two, exact
	 * for every frac below 10^9 (checked against the divisions for
	 * all of them); below 2^61, and the fraction times 100 below 2^64 */
	t = (uint64_t)frac * ((UINT64_C(1) << 57) / 100000000 + 1);
	p[0] = (char)('0' + (t >> 57));
	t = (t & mask) * 100;
	memcpy(p + 1, digits2 + 2 * (t >> 57), 2);
	t = (t & mask) * 100;
	memcpy(p + 3, digits2 + 2 * (t >> 57), 2);
	t = (t & mask) * 100;
	memcpy(p + 5, digits2 + 2 * (t >> 57), 2);
	t = (t & mask) * 100;
	memcpy(p + 7, digits2 + 2 * (t >> 57), 2);
	return p + 9;
}

/*
 * x as "%.*f": the digits of x * 10^prec rounded to an integer.  printf
 * rounds the exact product X; v is X rounded to a double.  Below 2^52
 * every k + 1/2 is a double, and rounding is monotonic, so v lies on the
 * same side of each k + 1/2 as X, or on it: only a fraction of exactly
 * one half (a tie, or X beside one) is in doubt, and printf writes that,
 * as it does a product at or past 2^52 and a negative, -0 or a number
 * that is not finite.
 */
char *
rpt__put_fixed(char *p, double x, int prec)
{
	static const double pow10[] = { 1e0, 1e1, 1e2, 1e3, 1e4,
					1e5, 1e6, 1e7, 1e8, 1e9 };
	double v, r, f;
	uint64_t n, scale;

	if (prec < 0 || prec > 9)
		prec = prec < 0 ? 0 : 9;
	v = x * pow10[prec];
	if (!(x >= 0.0) || signbit(x) || !(v < 0x1p52))
		return p + snprintf(p, RPT_FIXED_MAX, "%.*f", prec, x);
	r = floor(v);
	f = v - r;		/* exact below 2^52 */
	if (f == 0.5)
		return p + snprintf(p, RPT_FIXED_MAX, "%.*f", prec, x);
	n = (uint64_t)r + (f > 0.5);
	scale = (uint64_t)pow10[prec];	/* exact */
	p = rpt__put_u(p, n / scale);
	if (prec > 0) {
		uint64_t d = n % scale;

		*p++ = '.';
		for (int i = prec - 1; i >= 0; i--) {
			p[i] = (char)('0' + d % 10);
			d /= 10;
		}
		p += prec;
	}
	return p;
}

static void
put_s(FILE *f, int64_t ns)
{
	char b[24];

	fwrite(b, 1, (size_t)(rpt__put_sec(b, ns) - b), f);
}

int
rpt_begin(rpt *r)
{
	if (r->reqs != NULL)
		fprintf(r->reqs, "run_id,request_id,replica,arrival_s,"
			"first_scheduled_s,first_token_s,finish_s,"
			"input_tokens,output_tokens,cached_prefix_tokens,"
			"ttft_s,tpot_s,e2e_s,queue_s,itl_mean_s,itl_max_s,"
			"preemptions,recomputed_tokens,swapped_out_blocks,"
			"swapped_out_bytes,frontend_in_s,frontend_out_s"
			"%s%s%s",
			r->col_pd ? ",prefill_replica,decode_replica,"
			"kv_transfer_s,decode_queue_s" : "",
			r->col_stage ? ",stage" : "",
			r->col_status ? ",status" : "");
	if (r->reqs != NULL) {
		rpt__offload_head(r, r->reqs, 0);
		rpt__lora_head(r, r->reqs, 0);

		rpt__spec_head(r, r->reqs, 0);
		fputc('\n', r->reqs);
	}
	if (r->ts != NULL) {
		fputs("run_id,t_s,running,waiting,swapped,kv_blocks_used,"
		      "kv_blocks_total,kv_usage,kv_frag_internal_tokens,"
		      "prefix_hit_rate,prompt_tok_s,gen_tok_s,"
		      "preemptions_cum", r->ts);
		rpt__offload_head(r, r->ts, 1);
		fputc('\n', r->ts);
	}
	if ((r->reqs != NULL && ferror(r->reqs)) ||
	    (r->ts != NULL && ferror(r->ts)))
		return -1;
	return 0;
}

int
rpt_add_request(rpt *r, const struct rpt_req *q)
{
	int64_t ttft = q->first_token_ns - q->arrival_ns;
	int64_t e2e = q->finish_ns - q->arrival_ns;
	int64_t queue = q->first_scheduled_ns - q->arrival_ns;
	int64_t tpot_ns = 0;
	/* a row of n samples (parallel sampling) has n first tokens: its
	 * inter-token gaps are output_tokens - n, its TPOT a sample's */
	int64_t nsamp = q->samples > 1 ? q->samples : 1;
	uint32_t gaps = q->output_tokens > nsamp ?
			q->output_tokens - (uint32_t)nsamp : 0;
	/* the run id, then 37 fields of at most 21 characters */
	char line[RPT_RUN_CSV_MAX + 39 * 24], *p;
	int e;

	rpt__span(r, q);
	if (q->failed)
		return rpt__add_failed(r, q);
	if (r->col_stage && (e = rpt__stage_add(r, q)) != 0)
		return e;
	if (gaps > 0)
		tpot_ns = (q->finish_ns - q->first_token_ns) * nsamp /
			  (int64_t)gaps;
	if ((e = rpt__vec_push(&r->m[RPT_M_TTFT], (double)ttft / 1e9)) != 0 ||
	    (e = rpt__vec_push(&r->m[RPT_M_E2E], (double)e2e / 1e9)) != 0 ||
	    (e = rpt__vec_push(&r->m[RPT_M_QUEUE], (double)queue / 1e9)) != 0)
		return e;
	if (gaps > 0 &&
	    (e = rpt__vec_push(&r->m[RPT_M_TPOT], (double)tpot_ns / 1e9)) != 0)
		return e;
	if ((r->slo_ttft <= 0 || (double)ttft / 1e9 <= r->slo_ttft) &&
	    (r->slo_e2e <= 0 || (double)e2e / 1e9 <= r->slo_e2e) &&
	    (r->slo_tpot <= 0 || gaps == 0 ||
	     (double)tpot_ns / 1e9 <= r->slo_tpot))
		r->good++;
	if (r->col_pd && (e = rpt__pd_add(r, q)) != 0)
		return e;
	r->completed++;
	r->fe_in_sum += (double)q->frontend_in_ns;
	r->fe_out_sum += (double)q->frontend_out_ns;
	r->out_tokens += q->output_tokens;
	r->in_tokens += q->input_tokens;
	if (gaps > 0) {
		r->itl_sum_ns += q->itl_sum_ns;
		r->itl_n += gaps;
		if (q->itl_max_ns > r->itl_max_ns)
			r->itl_max_ns = q->itl_max_ns;
	}
	if (r->reqs == NULL)
		return 0;
	p = rpt__put_head(r, q, line);
	*p++ = ',';
	p = rpt__put_sec(p, q->arrival_ns);
	*p++ = ',';
	p = rpt__put_sec(p, q->first_scheduled_ns);
	*p++ = ',';
	p = rpt__put_sec(p, q->first_token_ns);
	*p++ = ',';
	p = rpt__put_sec(p, q->finish_ns);
	*p++ = ',';
	p = rpt__put_u(p, q->input_tokens);
	*p++ = ',';
	p = rpt__put_u(p, q->output_tokens);
	*p++ = ',';
	p = rpt__put_u(p, q->cached_prefix_tokens);
	*p++ = ',';
	p = rpt__put_sec(p, ttft);
	*p++ = ',';
	if (gaps > 0)
		p = rpt__put_sec(p, tpot_ns);
	*p++ = ',';
	p = rpt__put_sec(p, e2e);
	*p++ = ',';
	p = rpt__put_sec(p, queue);
	*p++ = ',';
	if (gaps > 0)
		p = rpt__put_sec(p, q->itl_sum_ns / (int64_t)gaps);
	*p++ = ',';
	if (gaps > 0)
		p = rpt__put_sec(p, q->itl_max_ns);
	p = rpt__put_tail(p, q);
	if (r->col_pd)
		p = rpt__put_pd(r, q, p);
	p = rpt__put_client(r, q, true, p);
	fwrite(line, 1, (size_t)(p - line), r->reqs);
	return ferror(r->reqs) ? -1 : 0;
}

int
rpt_add_sample(rpt *r, const struct rpt_sample *s)
{
	double usage = s->kv_blocks_total
		? (double)s->kv_blocks_used / (double)s->kv_blocks_total : 0.0;
	char line[RPT_RUN_CSV_MAX + 8 * 24 + 4 * RPT_FIXED_MAX], *p = line;
	const uint64_t c[] = { s->running, s->waiting, s->swapped,
			       s->kv_blocks_used, s->kv_blocks_total };

	if (r->ts == NULL)
		return 0;
	memcpy(p, r->run_csv, r->run_csv_n);
	p += r->run_csv_n;
	*p++ = ',';
	p = rpt__put_sec(p, s->t_ns);
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		*p++ = ',';
		p = rpt__put_u(p, c[i]);
	}
	*p++ = ',';
	p = rpt__put_fixed(p, usage, 6);
	*p++ = ',';
	p = rpt__put_u(p, s->kv_frag_internal_tokens);
	*p++ = ',';
	p = rpt__put_fixed(p, s->prefix_hit_rate, 6);
	*p++ = ',';
	p = rpt__put_fixed(p, s->prompt_tok_s, 3);
	*p++ = ',';
	p = rpt__put_fixed(p, s->gen_tok_s, 3);
	*p++ = ',';
	p = rpt__put_u(p, s->preemptions_cum);
	fwrite(line, 1, (size_t)(p - line), r->ts);
	rpt__offload_sample(r, s);
	fputc('\n', r->ts);
	return ferror(r->ts) ? -1 : 0;
}

/* Whether invariant `inv` (4, 5 or 6 of rpt.h) holds for one vector. */
static bool
vec_ok(const struct rpt_vec *v, int inv)
{
	uint64_t over = 0;

	switch (inv) {
	case RPT_INV_STORAGE:
		return v->n <= v->cap && (v->n == 0 || v->v != NULL);
	case RPT_INV_SORTED:
		for (size_t i = 1; v->sorted && i < v->n; i++)
			if (v->v[i - 1] > v->v[i])
				return false;
		return true;
	default:
		if (isnan(v->watch))
			return true;
		for (size_t i = 0; i < v->n; i++)
			over += v->v[i] > v->watch;
		return over == v->over;
	}
}

int
rpt_check(const rpt *r)
{
	const struct rpt_vec *m = r->m;
	uint64_t tpot = m[RPT_M_TPOT].n, hist = 0;

	if (m[RPT_M_TTFT].n != r->completed || m[RPT_M_E2E].n != r->completed ||
	    m[RPT_M_QUEUE].n != r->completed)
		return RPT_INV_SAMPLES;
	if (tpot > r->completed)
		return RPT_INV_TPOT;
	if (r->good > r->completed)
		return RPT_INV_GOOD;
	for (int inv = RPT_INV_STORAGE; inv <= RPT_INV_WATCH; inv++)
		for (int i = 0; i < RPT_M_N; i++)
			if (!vec_ok(&m[i], inv))
				return inv;
	for (size_t b = 0; b < RPT_ITL_NB; b++)
		hist += r->itl_hist[b];
	if (hist != r->itl_count)
		return RPT_INV_HIST;
	if (tpot > r->itl_n || tpot > r->out_tokens ||
	    r->itl_n > r->out_tokens - tpot)
		return RPT_INV_GAPS;
	if (r->itl_sum_ns < 0 || r->itl_max_ns < 0 ||
	    (r->itl_n == 0 && (r->itl_sum_ns != 0 || r->itl_max_ns != 0)) ||
	    (double)r->itl_sum_ns > (double)r->itl_max_ns * (double)r->itl_n)
		return RPT_INV_ITL;
	for (int i = 0; i < RPT_M_N; i++)
		if (!(m[i].sum >= 0))
			return RPT_INV_SUMS;
	return 0;
}

uint64_t
rpt_completed(const rpt *r)
{
	return r->completed;
}

uint64_t
rpt_output_tokens(const rpt *r)
{
	return r->out_tokens;
}

static int
metric_index(const char *m)
{
	for (int i = 0; i < RPT_M_N; i++)
		if (strcmp(m, metric_name[i]) == 0)
			return i;
	return -1;
}

double
rpt_quantile(rpt *r, const char *metric, double p)
{
	int i = metric_index(metric);

	if (strcmp(metric, "itl") == 0)
		return itl_quantile(r, p);
	if (i < 0)
		return 0.0;
	return rpt__vec_quantile(&r->m[i], p);
}

double
rpt__vec_quantile(struct rpt_vec *v, double p)
{
	if (v->n == 0)
		return 0.0;
	if (!v->sorted) {
		rpt__sort(v->v, v->n);
		v->sorted = true;
	}
	return gsl_stats_quantile_from_sorted_data(v->v, 1, v->n, p);
}

uint64_t
rpt_count_over(rpt *r, const char *metric, double x)
{
	int i = metric_index(metric);
	struct rpt_vec *v;

	if (i < 0)
		return 0;
	v = &r->m[i];
	if (v->watch != x) {
		v->watch = x;
		v->over = 0;
		for (size_t j = 0; j < v->n; j++)
			if (v->v[j] > x)
				v->over++;
	}
	return v->over;
}

double
rpt_mean(const rpt *r, const char *metric)
{
	int i = metric_index(metric);

	if (strcmp(metric, "itl") == 0)	/* summary.csv's itl_mean_s */
		return r->itl_n ? (double)(r->itl_sum_ns /
					   (int64_t)r->itl_n) / 1e9 : 0.0;
	if (i < 0 || r->m[i].n == 0)
		return 0.0;
	return r->m[i].sum / (double)r->m[i].n;
}

int
rpt_summary_write(rpt *r, const struct rpt_totals *t, FILE *f)
{
	double dur = (double)t->duration_ns / 1e9;
	double hit = t->prompt_tokens_admitted
		? (double)t->prefix_hit_tokens /
		  (double)t->prompt_tokens_admitted : 0.0;

	fputs("requests,completed,duration_s,throughput_req_s,"
	      "throughput_out_tok_s,ttft_p50_s,ttft_p99_s,tpot_p50_s,"
	      "tpot_p99_s,e2e_p50_s,e2e_p99_s,preemptions,recomputed_tokens,"
	      "swap_out_blocks,swap_in_blocks,kv_usage_mean,kv_usage_max,"
	      "frag_internal_mean,prefix_hit_rate,num_gpu_blocks,events,"
	      "sim_wall_s", f);
	fputs(",run_id,model,gpu,tp,policy,block_size,replicas,router,seed,"
	      "trace,rejected,input_tokens,output_tokens,kv_cache_tokens,"
	      "max_concurrency,steps,cow_blocks,throughput_in_tok_s", f);
	/* Beyond DESIGN.md's p50/p99: mean, p90, max, and the queueing
	 * delay's p50/p99. */
	for (int m = 0; m < RPT_M_N; m++)
		fprintf(f, ",%s_mean_s,%s_p90_s,%s_max_s", metric_name[m],
			metric_name[m], metric_name[m]);
	fputs(",queue_p50_s,queue_p99_s", f);
	fputs(",itl_mean_s,itl_max_s", f);
	/* The rest of the quantiles (issue 6): p95 and p99.9 per metric, and
	 * ITL's from its histogram. */
	for (int m = 0; m < RPT_M_N; m++)
		fprintf(f, ",%s_p95_s,%s_p999_s", metric_name[m],
			metric_name[m]);
	fputs(",itl_p50_s,itl_p90_s,itl_p95_s,itl_p99_s,itl_p999_s", f);
	fputs(",goodput_req_s,slo_attainment,slo_ttft_s,slo_tpot_s,slo_e2e_s"
	      ",swap_out_bytes,swap_in_bytes,prefix_hit_tokens,"
	      "stopped_early,stale_cached_tokens,calibration", f);
	fputs(",frontend_in_mean_s,frontend_out_mean_s", f);
	fputs(r->col_status ? ",failed" : "", f);
	rpt__pd_summary_head(r, f);
	rpt__offload_head(r, f, 2);
	if (t->parallel_requests > 0)
		fputs(",parallel_requests,parallel_samples", f);

	rpt__lora_head(r, f, 2);

	rpt__spec_head(r, f, 2);
	fputc('\n', f);

	fprintf(f, "%" PRIu64 ",%" PRIu64 ",", t->requests, r->completed);
	put_s(f, t->duration_ns);
	fprintf(f, ",%.6f,%.6f,%.9f,%.9f,%.9f,%.9f,%.9f,%.9f",
		dur > 0 ? (double)r->completed / dur : 0.0,
		dur > 0 ? (double)r->out_tokens / dur : 0.0,
		rpt_quantile(r, "ttft", 0.5), rpt_quantile(r, "ttft", 0.99),
		rpt_quantile(r, "tpot", 0.5), rpt_quantile(r, "tpot", 0.99),
		rpt_quantile(r, "e2e", 0.5), rpt_quantile(r, "e2e", 0.99));
	fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		",%.6f,%.6f,%.6f,%.6f,%" PRIu64 ",%" PRIu64 ",%.3f",
		t->preemptions, t->recomputed_tokens, t->swap_out_blocks,
		t->swap_in_blocks, t->kv_usage_mean, t->kv_usage_max,
		t->frag_internal_mean, hit, t->num_gpu_blocks, t->events,
		t->sim_wall_s);
	fputc(',', f);
	rpt_csv_field(f, t->run_id);
	fputc(',', f);
	rpt_csv_field(f, t->model);
	fputc(',', f);
	rpt_csv_field(f, t->gpu);
	fprintf(f, ",%" PRIu32 ",", t->tp);
	rpt_csv_field(f, t->policy);
	fprintf(f, ",%" PRIu32 ",%" PRIu32 ",", t->block_size, t->replicas);
	rpt_csv_field(f, t->router);
	fprintf(f, ",%" PRIu64 ",", t->seed);
	rpt_csv_field(f, t->trace);
	fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		",%.2f,%" PRIu64 ",%" PRIu64 ",%.6f",
		t->rejected, r->in_tokens, r->out_tokens, t->kv_cache_tokens,
		t->max_concurrency, t->steps, t->cow_blocks,
		dur > 0 ? (double)r->in_tokens / dur : 0.0);
	for (int m = 0; m < RPT_M_N; m++) {
		struct rpt_vec *v = &r->m[m];
		double p90 = rpt_quantile(r, metric_name[m], 0.9);

		fprintf(f, ",%.9f,%.9f,%.9f", rpt_mean(r, metric_name[m]), p90,
			v->n ? v->v[v->n - 1] : 0.0);
	}
	fprintf(f, ",%.9f,%.9f", rpt_quantile(r, "queue", 0.5),
		rpt_quantile(r, "queue", 0.99));
	fputc(',', f);
	put_s(f, r->itl_n ? r->itl_sum_ns / (int64_t)r->itl_n : 0);
	fputc(',', f);
	put_s(f, r->itl_max_ns);
	for (int m = 0; m < RPT_M_N; m++)
		fprintf(f, ",%.9f,%.9f", rpt_quantile(r, metric_name[m], 0.95),
			rpt_quantile(r, metric_name[m], 0.999));
	fprintf(f, ",%.9f,%.9f,%.9f,%.9f,%.9f", itl_quantile(r, 0.5),
		itl_quantile(r, 0.9), itl_quantile(r, 0.95),
		itl_quantile(r, 0.99), itl_quantile(r, 0.999));
	fprintf(f, ",%.6f,%.6f,%.9g,%.9g,%.9g,%" PRIu64 ",%" PRIu64 ",%"
		PRIu64 ",%d,%" PRIu64,
		dur > 0 ? (double)r->good / dur : 0.0,
		r->completed ? (double)r->good / (double)r->completed : 0.0,
		t->slo_ttft_s, t->slo_tpot_s, t->slo_e2e_s,
		t->swap_out_blocks * t->block_bytes,
		t->swap_in_blocks * t->block_bytes, t->prefix_hit_tokens,
		t->stopped ? 1 : 0, t->stale_cached_tokens);
	fputc(',', f);
	if (t->calibration != NULL)
		rpt_csv_field(f, t->calibration);
	fprintf(f, ",%.9f,%.9f",
		r->completed ? r->fe_in_sum / (double)r->completed / 1e9 : 0.0,
		r->completed ? r->fe_out_sum / (double)r->completed / 1e9 :
			       0.0);
	if (r->col_status)
		fprintf(f, ",%" PRIu64, r->failed);
	rpt__pd_summary(r, t, f);
	rpt__offload_summary(r, t, f);
	if (t->parallel_requests > 0)
		fprintf(f, ",%" PRIu64 ",%" PRIu64, t->parallel_requests,
			t->parallel_samples);

	rpt__lora_summary(r, t, f);

	rpt__spec_summary(r, t, f);
	fputc('\n', f);
	return ferror(f) ? -1 : 0;
}
