/*
 * replica_nsamp.c -- the row of a fanned-out request (replica_nsamp.h):
 * n child requests, one requests.csv row as the client sees the parent.
 */
#include "config.h"

#include "sim/replica_nsamp.h"

#include <stdlib.h>

struct rnsamp_group *
rnsamp_new(uint32_t n)
{
	struct rnsamp_group *g = calloc(1, sizeof(*g));

	if (g != NULL)
		g->n = g->left = n;
	return g;
}

bool
rnsamp_put(struct rnsamp_group *g)
{
	if (g == NULL || --g->left > 0)
		return false;
	free(g);
	return true;
}

/* The earlier of two times, -1 standing for "never". */
static int64_t
rnsamp__first(int64_t a, int64_t b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

void
rnsamp_merge(struct rnsamp_group *g, const struct rpt_req *o)
{
	struct rpt_req *m = &g->row;

	if (g->nrows++ == 0) {
		*m = *o;
		return;
	}
	m->first_scheduled_ns = rnsamp__first(m->first_scheduled_ns,
					      o->first_scheduled_ns);
	m->first_token_ns = rnsamp__first(m->first_token_ns,
					  o->first_token_ns);
	if (o->finish_ns >= m->finish_ns) {
		m->finish_ns = o->finish_ns;
		m->frontend_out_ns = o->frontend_out_ns;
	}
	m->output_tokens += o->output_tokens;
	if (o->cached_prefix_tokens > m->cached_prefix_tokens)
		m->cached_prefix_tokens = o->cached_prefix_tokens;
	m->preemptions += o->preemptions;
	m->recomputed_tokens += o->recomputed_tokens;
	m->swapped_out_blocks += o->swapped_out_blocks;
	m->swapped_out_bytes += o->swapped_out_bytes;
	m->itl_sum_ns += o->itl_sum_ns;
	if (o->itl_max_ns > m->itl_max_ns)
		m->itl_max_ns = o->itl_max_ns;
	for (int t = 0; t < RPT_MAX_TIERS; t++)
		if (o->offload_hit_tokens[t] > m->offload_hit_tokens[t])
			m->offload_hit_tokens[t] = o->offload_hit_tokens[t];
	if (o->offload_load_ns > m->offload_load_ns)
		m->offload_load_ns = o->offload_load_ns;
	m->failed = m->failed || o->failed;
}
