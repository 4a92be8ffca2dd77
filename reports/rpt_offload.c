/*
 * rpt_offload.c -- the KV offload columns of requests.csv, timeseries.csv
 * and summary.csv (rpt.h rpt_set_offload), appended at the end of each
 * file and written only when a run has offload tiers.
 */
#include "config.h"

#include "reports/rpt.h"
#include "reports/rpt_int.h"

#include <inttypes.h>
#include <string.h>

int
rpt_set_offload(rpt *r, uint32_t ntiers, const char *const *names)
{
	if (ntiers > RPT_MAX_TIERS)
		return -1;
	r->noff = ntiers;
	for (uint32_t i = 0; i < ntiers; i++)
		snprintf(r->offname[i], sizeof(r->offname[i]), "%s",
			 names[i]);
	return 0;
}

void
rpt__offload_head(const rpt *r, FILE *f, int which)
{
	static const char *const sum[] = { "hit_tokens", "load_bytes",
					   "store_bytes", "evicted_blocks" };

	for (uint32_t i = 0; i < r->noff; i++) {
		if (which == 0)
			fprintf(f, ",offload_hit_tokens_%s", r->offname[i]);
		else if (which == 1)
			fprintf(f, ",offload_%s_used_blocks", r->offname[i]);
		else
			for (size_t k = 0; k < 4; k++)
				fprintf(f, ",offload_%s_%s", r->offname[i],
					sum[k]);
	}
	if (which == 0 && r->noff > 0)
		fputs(",offload_load_s", f);
}

char *
rpt__put_offload(const rpt *r, const struct rpt_req *q, char *p)
{
	if (r->noff == 0)
		return p;
	for (uint32_t i = 0; i < r->noff; i++) {
		*p++ = ',';
		p = rpt__put_u(p, q->offload_hit_tokens[i]);
	}
	*p++ = ',';
	return rpt__put_sec(p, q->offload_load_ns);
}

void
rpt__offload_sample(const rpt *r, const struct rpt_sample *s)
{
	for (uint32_t i = 0; i < r->noff; i++)
		fprintf(r->ts, ",%" PRIu64, s->offload_used_blocks[i]);
}

void
rpt__offload_summary(const rpt *r, const struct rpt_totals *t, FILE *f)
{
	for (uint32_t i = 0; i < r->noff; i++) {
		const struct rpt_tier_totals *o = &t->offload[i];

		fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
			o->hit_tokens, o->load_bytes, o->store_bytes,
			o->evicted_blocks);
	}
}
