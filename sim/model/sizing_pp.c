/*
 * sizing_pp.c -- KV sizing of a pipeline-parallel engine
 * (--pipeline-parallel-size P): each stage's GPUs hold their share of the
 * decoder layers' weights and KV cache, and the engine's pool is the
 * smallest stage's.
 *
 * Reference: vLLM v0.15.1 (commit 01230b40128e, docs/run.md "Pipeline
 * parallel"): vllm/distributed/utils.py get_pp_indices splits L layers as
 * L // P each, the L % P left over one each to the stages before the last
 * (the last holds the LM head); every stage's worker profiles its own
 * memory, and get_kv_cache_configs gives every worker the smallest
 * num_blocks of all of them, one scheduler driving all stages.  The first
 * stage holds the input embedding, the last the LM head (a copy of the
 * embedding when the two are tied: the stages do not share a tensor).
 */
#include "sim/model/sizing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Layers of stage s of P (get_pp_indices without VLLM_PP_LAYER_PARTITION). */
static uint32_t
szpp_layers(uint32_t L, uint32_t P, uint32_t s, uint32_t *first)
{
	uint32_t base = L / P, rem = L % P, n, at = 0;

	for (uint32_t i = 0; i <= s; i++) {
		/* the rem stages just before the last one get one more */
		n = base + (rem > 0 && i + 1 < P && i + 1 + rem >= P);
		if (i < s)
			at += n;
	}
	*first = at;
	return n;
}

/* The stage's share of the parameters: the decoder layers' evenly per
 * layer, the embedding on the first stage, the LM head on the last. */
static uint64_t
szpp_params(const struct cat_model *m, uint32_t P, uint32_t s, uint32_t n)
{
	uint64_t emb = (uint64_t)m->vocab_size * m->hidden_size;
	uint64_t whole = m->tie_word_embeddings ? emb : 2 * emb;
	uint64_t body = m->params > whole ? m->params - whole : 0;
	uint64_t p = (uint64_t)((double)body * n / m->num_layers);

	if (s == 0)
		p += emb;
	if (s + 1 == P)
		p += emb;
	return p;
}

kv_err
sz_compute(const struct cat_model *m, const struct cat_gpu *g,
	   const struct sz_engine *e, struct sz_result *r, char *why,
	   size_t whylen)
{
	uint32_t P = e->pipeline_parallel_size > 1 ?
		     e->pipeline_parallel_size : 1;
	struct sz_result *st;
	kv_err rc = KV_OK;
	bool have = false;

	if (P == 1) {
		rc = sz__compute_one(m, g, e, r, why, whylen);
		r->pp = 1;
		return rc;
	}
	if (P > m->num_layers) {
		memset(r, 0, sizeof(*r));
		snprintf(why, whylen, "pipeline_parallel_size %u: the model "
			 "has %u layers, one stage at least each", P,
			 m->num_layers);
		return KV_EINVAL;
	}
	if ((st = malloc(sizeof(*st))) == NULL)
		return KV_ENOMEM;
	for (uint32_t s = 0; s < P && rc == KV_OK; s++) {
		struct cat_model sm = *m;
		uint32_t first, n = szpp_layers(m->num_layers, P, s, &first);

		sm.layer = m->layer + first;
		sm.num_layers = n;
		sm.params = szpp_params(m, P, s, n);
		rc = sz__compute_one(&sm, g, e, st, why, whylen);
		st->pp = P;
		st->pp_stage = s;
		if (rc != KV_OK) {
			*r = *st;
		} else if (!have || (r->fits && !st->fits) ||
			   (st->fits && r->fits &&
			    st->num_blocks < r->num_blocks)) {
			/* a stage that does not fit stops the engine; else
			 * the smallest pool is every stage's */
			*r = *st;
			have = true;
		}
	}
	free(st);
	return rc;
}
