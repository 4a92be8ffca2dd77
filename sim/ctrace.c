/*
 * ctrace.c -- Chrome trace-event JSON writer (ctrace.h).
 */
#include "config.h"

#include "sim/ctrace.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>

struct ctrace {
	FILE *f;
	bool first;
};

/* Integer ns as microseconds with three decimals. */
static void
put_us(FILE *f, int64_t ns)
{
	if (ns < 0) {
		fputc('-', f);
		ns = -ns;
	}
	fprintf(f, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
}

/* A JSON string of plain text (run ids, policy names, paths). */
static void
put_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s != NULL && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void
sep(ctrace *c)
{
	fputs(c->first ? "\n" : ",\n", c->f);
	c->first = false;
}

ctrace *
ctrace_new(FILE *f, const char *run_id)
{
	ctrace *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->f = f;
	c->first = true;
	fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"run_id\":", f);
	put_str(f, run_id);
	fputs("},\"traceEvents\":[", f);
	return c;
}

void
ctrace_replica(ctrace *c, uint32_t replica, const char *policy)
{
	sep(c);
	fprintf(c->f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%"
		PRIu32 ",\"args\":{\"name\":\"replica %" PRIu32 " (", replica
		+ 1, replica);
	/* the policy inside the name string: escape by hand */
	for (const char *p = policy; p != NULL && *p; p++)
		if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
			fputc(*p, c->f);
	fputs(")\"}}", c->f);
	sep(c);
	fprintf(c->f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%"
		PRIu32 ",\"tid\":1,\"args\":{\"name\":\"steps\"}}", replica + 1);
}

void
ctrace_step(ctrace *c, uint32_t replica, int64_t t0_ns, int64_t dt_ns,
	    const struct ctrace_step *s)
{
	sep(c);
	fprintf(c->f, "{\"name\":\"step\",\"cat\":\"step\",\"ph\":\"X\","
		"\"pid\":%" PRIu32 ",\"tid\":1,\"ts\":", replica + 1);
	put_us(c->f, t0_ns);
	fputs(",\"dur\":", c->f);
	put_us(c->f, dt_ns);
	fprintf(c->f, ",\"args\":{\"step\":%" PRIu64 ",\"requests\":%" PRIu32
		",\"tokens\":%" PRIu32 ",\"preempted\":%" PRIu32
		",\"swap_out_blocks\":%" PRIu32 ",\"swap_in_blocks\":%" PRIu32
		",\"cow_blocks\":%" PRIu32 "}}", s->number, s->nsched,
		s->tokens, s->npreempt, s->nswap_out, s->nswap_in, s->ncow);
}

static void
async(ctrace *c, const struct rpt_req *q, const char *name, char ph,
      int64_t t)
{
	sep(c);
	fprintf(c->f, "{\"name\":\"%s\",\"cat\":\"request\",\"ph\":\"%c\","
		"\"id\":%" PRIu64 ",\"pid\":%" PRIu32 ",\"tid\":2,\"ts\":",
		name, ph, q->id, q->replica + 1);
	put_us(c->f, t);
	fputc('}', c->f);
}

void
ctrace_request(ctrace *c, const struct rpt_req *q)
{
	sep(c);
	fprintf(c->f, "{\"name\":\"request\",\"cat\":\"request\",\"ph\":\"b\","
		"\"id\":%" PRIu64 ",\"pid\":%" PRIu32 ",\"tid\":2,\"ts\":",
		q->id, q->replica + 1);
	put_us(c->f, q->arrival_ns);
	fprintf(c->f, ",\"args\":{\"request_id\":%" PRIu64 ",\"input_tokens\":%"
		PRIu32 ",\"output_tokens\":%" PRIu32 ",\"cached_prefix_tokens"
		"\":%" PRIu32 ",\"preemptions\":%" PRIu32 "}}", q->id,
		q->input_tokens, q->output_tokens, q->cached_prefix_tokens,
		q->preemptions);
	async(c, q, "queued", 'b', q->arrival_ns);
	async(c, q, "queued", 'e', q->first_scheduled_ns);
	async(c, q, "prefill", 'b', q->first_scheduled_ns);
	async(c, q, "prefill", 'e', q->first_token_ns);
	async(c, q, "decode", 'b', q->first_token_ns);
	async(c, q, "decode", 'e', q->finish_ns);
	async(c, q, "request", 'e', q->finish_ns);
}

void
ctrace_counters(ctrace *c, int64_t t_ns, const struct rpt_sample *s)
{
	double u = s->kv_blocks_total ? (double)s->kv_blocks_used /
		   (double)s->kv_blocks_total : 0.0;

	sep(c);
	fputs("{\"name\":\"requests\",\"ph\":\"C\",\"pid\":1,\"ts\":", c->f);
	put_us(c->f, t_ns);
	fprintf(c->f, ",\"args\":{\"running\":%" PRIu64 ",\"waiting\":%" PRIu64
		",\"swapped\":%" PRIu64 "}}", s->running, s->waiting,
		s->swapped);
	sep(c);
	fputs("{\"name\":\"kv_usage\",\"ph\":\"C\",\"pid\":1,\"ts\":", c->f);
	put_us(c->f, t_ns);
	fprintf(c->f, ",\"args\":{\"kv_usage\":%.6f}}", u);
}

void
ctrace_discard(ctrace *c)
{
	free(c);
}

int
ctrace_end(ctrace *c)
{
	int rc;

	if (c == NULL)
		return 0;
	fputs("\n]}\n", c->f);
	rc = ferror(c->f) ? -1 : 0;
	free(c);
	return rc;
}
