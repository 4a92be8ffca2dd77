/*
 * rpt_lora.c -- the LoRA columns of requests.csv and summary.csv (rpt.h
 * rpt_set_lora), appended at the end of each and written only when a
 * run has LoRA on.
 */
#include "config.h"

#include "reports/rpt.h"
#include "reports/rpt_int.h"

#include <inttypes.h>

void
rpt_set_lora(rpt *r, bool on)
{
	r->col_lora = on;
}

void
rpt__lora_head(const rpt *r, FILE *f, int which)
{
	if (!r->col_lora)
		return;
	fputs(which == 0 ? ",lora" : ",lora_adapters,lora_loads,lora_load_s",
	      f);
}

char *
rpt__put_lora(const rpt *r, const struct rpt_req *q, char *p)
{
	if (!r->col_lora)
		return p;
	*p++ = ',';
	return rpt__put_u(p, q->lora);
}

void
rpt__lora_summary(const rpt *r, const struct rpt_totals *t, FILE *f)
{
	if (!r->col_lora)
		return;
	fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%.9f", t->lora_adapters,
		t->lora_loads, (double)t->lora_load_ns / 1e9);
}
