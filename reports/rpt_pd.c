/*
 * rpt_pd.c -- the columns of a disaggregated run (rpt_set_pd): per
 * request its two replicas, its KV transfer and its wait on the decode
 * side; in the summary each pool's size and utilisation and the
 * transfers' mean, p99 and bytes.
 */
#include "config.h"

#include "reports/rpt_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void
rpt_set_pd(rpt *r, bool on)
{
	r->col_pd = on;
}

int
rpt__pd_add(rpt *r, const struct rpt_req *q)
{
	if (rpt__vec_push(&r->xfer, (double)q->kv_transfer_ns / 1e9) != 0)
		return -1;
	r->dq_sum += (double)q->decode_queue_ns / 1e9;
	r->xfer_bytes += q->kv_transfer_bytes;
	return 0;
}

char *
rpt__put_pd(const rpt *r, const struct rpt_req *q, char *p)
{
	(void)r;
	*p++ = ',';
	p = rpt__put_u(p, q->prefill_replica);
	*p++ = ',';
	p = rpt__put_u(p, q->decode_replica);
	*p++ = ',';
	p = rpt__put_sec(p, q->kv_transfer_ns);
	*p++ = ',';
	return rpt__put_sec(p, q->decode_queue_ns);
}

void
rpt__pd_summary_head(const rpt *r, FILE *f)
{
	if (!r->col_pd)
		return;
	for (int i = 0; i < 2; i++)
		fprintf(f, ",%s_replicas,%s_gpu,%s_tp,%s_utilization,"
			"%s_queue_mean_s", i ? "decode" : "prefill",
			i ? "decode" : "prefill", i ? "decode" : "prefill",
			i ? "decode" : "prefill", i ? "decode" : "prefill");
	fputs(",kv_transfer_mean_s,kv_transfer_p99_s,kv_transfer_bytes", f);
}

void
rpt__pd_summary(rpt *r, const struct rpt_totals *t, FILE *f)
{
	if (!r->col_pd)
		return;
	for (int i = 0; i < 2; i++) {
		const struct rpt_pd_pool *p = t->pd != NULL ?
			&t->pd->pool[i] : NULL;

		fprintf(f, ",%" PRIu32 ",", p ? p->replicas : 0);
		rpt_csv_field(f, p && p->gpu ? p->gpu : "");
		/* the prefill side's queue is the request's queue_s (to
		 * its first scheduling); the decode side's decode_queue_s */
		fprintf(f, ",%" PRIu32 ",%.6f,%.9f", p ? p->tp : 0,
			p ? p->utilization : 0.0,
			r->completed == 0 ? 0.0 : i == 0 ?
			rpt_mean(r, "queue") : r->dq_sum /
			(double)r->completed);
	}
	fprintf(f, ",%.9f,%.9f,%" PRIu64, r->xfer.n ? r->xfer.sum /
		(double)r->xfer.n : 0.0, rpt__vec_quantile(&r->xfer, 0.99),
		r->xfer_bytes);
}

void
rpt__pd_free(rpt *r)
{
	free(r->xfer.v);
}
