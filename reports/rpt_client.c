/*
 * rpt_client.c -- what benchmark clients add to the run metrics (rpt.h,
 * rpt_set_client): failed requests (a client timeout), the stage of each
 * request, and a summary per stage.
 *
 * A failed request is counted and written to requests.csv with status
 * `failed`; it enters no latency metric (TTFT, TPOT, E2E, queueing delay
 * and ITL are over the requests that completed, as inference-perf and
 * vllm bench serve report them).  Each stage keeps a collector of its
 * own (an rpt without files), so its quantiles are exact as the run's.
 */
#include "config.h"

#include "reports/rpt.h"
#include "reports/rpt_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int
rpt_set_client(rpt *r, bool stages, bool failures)
{
	r->col_stage = stages;
	r->col_status = failures;
	return 0;
}

uint64_t
rpt_failed(const rpt *r)
{
	return r->failed;
}

void
rpt__span(rpt *r, const struct rpt_req *q)
{
	if (!r->any || q->arrival_ns < r->t0)
		r->t0 = q->arrival_ns;
	if (!r->any || q->finish_ns > r->t1)
		r->t1 = q->finish_ns;
	r->any = true;
}

/* The collector of stage s, made on first use; NULL on out of memory. */
static rpt *
stage_of(rpt *r, uint32_t s)
{
	if (s >= r->nstage) {
		size_t n = (size_t)s + 1;
		rpt **p = realloc(r->stage, n * sizeof(*p));

		if (p == NULL)
			return NULL;
		memset(p + r->nstage, 0, (n - r->nstage) * sizeof(*p));
		r->stage = p;
		r->nstage = n;
	}
	if (r->stage[s] == NULL)
		r->stage[s] = rpt_new(r->run_id, NULL, NULL);
	return r->stage[s];
}

const rpt *
rpt_stage(const rpt *r, uint32_t s)
{
	return s < r->nstage ? r->stage[s] : NULL;
}

int
rpt__stage_add(rpt *r, const struct rpt_req *q)
{
	rpt *s = stage_of(r, q->stage);

	if (s == NULL)
		return -1;
	return rpt_add_request(s, q);
}

void
rpt__client_free(rpt *r)
{
	for (size_t i = 0; i < r->nstage; i++)
		rpt_free(r->stage[i]);
	free(r->stage);
	r->stage = NULL;
	r->nstage = 0;
}

char *
rpt__put_client(const rpt *r, const struct rpt_req *q, bool ok, char *p)
{
	if (r->col_stage) {
		*p++ = ',';
		p = rpt__put_u(p, q->stage);
	}
	if (r->col_status) {
		memcpy(p, ok ? ",ok" : ",failed", ok ? 3 : 7);
		p += ok ? 3 : 7;
	}
	p = rpt__put_offload(r, q, p);
	p = rpt__put_lora(r, q, p);

	p = rpt__put_spec(r, q, p);
	*p++ = '\n';
	return p;
}

/* A milestone, or nothing when the request never reached it. */
static char *
put_opt(char *p, int64_t ns)
{
	*p++ = ',';
	return ns >= 0 ? rpt__put_sec(p, ns) : p;
}

int
rpt__add_failed(rpt *r, const struct rpt_req *q)
{
	const uint64_t tok[] = { q->input_tokens, q->output_tokens,
				 q->cached_prefix_tokens };
	char line[RPT_RUN_CSV_MAX + 34 * 24], *p;

	r->failed++;
	if (r->col_stage) {
		rpt *s = stage_of(r, q->stage);

		if (s == NULL)
			return -1;
		s->failed++;
		rpt__span(s, q);
	}
	if (r->reqs == NULL)
		return 0;
	p = rpt__put_head(r, q, line);
	p = put_opt(p, q->arrival_ns);
	p = put_opt(p, q->first_scheduled_ns);
	p = put_opt(p, q->first_token_ns);
	p = put_opt(p, q->finish_ns);
	for (size_t i = 0; i < 3; i++) {
		*p++ = ',';
		p = rpt__put_u(p, tok[i]);
	}
	/* ttft, tpot: none; e2e: until it failed; queue if it was
	 * scheduled; itl: none */
	p = put_opt(p, -1);
	p = put_opt(p, -1);
	p = put_opt(p, q->finish_ns - q->arrival_ns);
	p = put_opt(p, q->first_scheduled_ns >= 0 ? q->first_scheduled_ns -
		    q->arrival_ns : -1);
	p = put_opt(p, -1);
	p = put_opt(p, -1);
	p = rpt__put_tail(p, q);
	p = rpt__put_client(r, q, false, p);
	fwrite(line, 1, (size_t)(p - line), r->reqs);
	return ferror(r->reqs) ? -1 : 0;
}

int
rpt_stages_write(rpt *r, FILE *f)
{
	static const char *const m[] = { "ttft", "tpot", "e2e" };
	static const double q[] = { 0.5, 0.9, 0.99 };

	fputs("stage,completed,failed,first_arrival_s,last_end_s,duration_s,"
	      "throughput_req_s,input_tokens,output_tokens", f);
	for (size_t i = 0; i < 3; i++)
		fprintf(f, ",%s_mean_s,%s_p50_s,%s_p90_s,%s_p99_s", m[i], m[i],
			m[i], m[i]);
	fputs(",itl_mean_s\n", f);
	for (size_t s = 0; s < r->nstage; s++) {
		rpt *x = r->stage[s];
		double dur;

		if (x == NULL)
			continue;
		dur = (double)(x->t1 - x->t0) / 1e9;
		fprintf(f, "%zu,%" PRIu64 ",%" PRIu64 ",%.9f,%.9f,%.9f,%.6f,%"
			PRIu64 ",%" PRIu64, s, x->completed, x->failed,
			(double)x->t0 / 1e9, (double)x->t1 / 1e9, dur,
			dur > 0 ? (double)x->completed / dur : 0.0,
			x->in_tokens, x->out_tokens);
		for (size_t i = 0; i < 3; i++) {
			fprintf(f, ",%.9f", rpt_mean(x, m[i]));
			for (size_t j = 0; j < 3; j++)
				fprintf(f, ",%.9f", rpt_quantile(x, m[i],
					q[j]));
		}
		fprintf(f, ",%.9f\n", rpt_mean(x, "itl"));
	}
	return ferror(f) ? -1 : 0;
}
