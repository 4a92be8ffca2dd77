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
	if (r->nxfer == r->capxfer) {
		size_t cap = r->capxfer ? r->capxfer * 2 : 1024;
		double *b = realloc(r->xfer, cap * sizeof(*b));

		if (b == NULL)
			return -1;
		r->xfer = b;
		r->capxfer = cap;
	}
	r->xfer[r->nxfer++] = (double)q->kv_transfer_ns / 1e9;
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

static int
cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The p-quantile of the transfers, interpolated as rpt_quantile. */
static double
xfer_quantile(rpt *r, double p)
{
	double h, lo;
	size_t k;

	if (r->nxfer == 0)
		return 0.0;
	qsort(r->xfer, r->nxfer, sizeof(*r->xfer), cmp_dbl);
	h = p * (double)(r->nxfer - 1);
	k = (size_t)h;
	lo = r->xfer[k];
	if (k + 1 >= r->nxfer)
		return lo;
	return lo + (h - (double)k) * (r->xfer[k + 1] - lo);
}

void
rpt__pd_summary(rpt *r, const struct rpt_totals *t, FILE *f)
{
	double sum = 0;

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
	for (size_t i = 0; i < r->nxfer; i++)
		sum += r->xfer[i];
	fprintf(f, ",%.9f,%.9f,%" PRIu64, r->nxfer ? sum /
		(double)r->nxfer : 0.0, xfer_quantile(r, 0.99),
		r->xfer_bytes);
}

void
rpt__pd_free(rpt *r)
{
	free(r->xfer);
}
