/*
 * rpt_spec.c -- the speculative decoding columns of requests.csv and
 * summary.csv (rpt.h rpt_set_spec), appended at the end of each file and
 * written only when a run speculates.
 */
#include "config.h"

#include "reports/rpt.h"
#include "reports/rpt_int.h"

#include <inttypes.h>

void
rpt_set_spec(rpt *r, bool on)
{
	r->col_spec = on;
}

void
rpt__spec_head(const rpt *r, FILE *f, int which)
{
	if (!r->col_spec)
		return;
	if (which == 0)
		fputs(",spec_draft_tokens,spec_accepted_tokens", f);
	else if (which == 2)
		fputs(",spec_draft_tokens,spec_accepted_tokens,"
		      "spec_acceptance_rate,spec_mean_accepted_len", f);
}

char *
rpt__put_spec(const rpt *r, const struct rpt_req *q, char *p)
{
	if (!r->col_spec)
		return p;
	*p++ = ',';
	p = rpt__put_u(p, q->spec_draft_tokens);
	*p++ = ',';
	return rpt__put_u(p, q->spec_accepted_tokens);
}

void
rpt__spec_summary(const rpt *r, const struct rpt_totals *t, FILE *f)
{
	if (!r->col_spec)
		return;
	fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%.6f,%.6f", t->spec_drafts,
		t->spec_accepted, t->spec_drafts > 0 ?
		(double)t->spec_accepted / (double)t->spec_drafts : 0.0,
		t->spec_verifies > 0 ? 1.0 + (double)t->spec_accepted /
		(double)t->spec_verifies : 0.0);
}
