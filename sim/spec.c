/*
 * spec.c -- speculative decoding in a run (spec.h): proposals, acceptance
 * draws, the run-level checks and the drafter's share of the GPU.
 */
#include "config.h"

#include "sim/spec.h"
#include "sim/runcfg_spec.h"
#include "workloads/wl.h"

#include <string.h>

/* Salts that keep the draws of one request apart. */
#define SPEC_SALT 0x7370656364656331ull		/* the run's key */
#define SPEC_MATCH_POS 0xffffu			/* ngram's match draw */

void
sim_spec_init(struct sim_spec *sp, const struct sim_spec_config *c,
	      uint64_t seed)
{
	memset(sp, 0, sizeof(*sp));
	sp->method = c->method;
	sp->k = c->k;
	for (uint32_t i = 0; i < c->k && i < c->nacc; i++)
		sp->acc[i] = c->acc[i];
	sp->match = c->ngram_match >= 0 ? c->ngram_match
		  : SIM_SPEC_NGRAM_MATCH_DEFAULT;
	sp->key = wl_mix(seed, SPEC_SALT);
}

/* A uniform draw in [0, 1) for (request, output tokens, position). */
static double
spec_draw(const struct sim_spec *sp, uint64_t id, uint32_t gen, uint32_t pos)
{
	uint64_t h = wl_mix(wl_mix(sp->key, id),
			    ((uint64_t)gen << 16) | pos);

	return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

uint32_t
sim_spec_propose(const struct sim_spec *sp, uint64_t id, uint32_t gen)
{
	if (sp->method == SIM_SPEC_OFF)
		return 0;
	if (sp->method == SIM_SPEC_NGRAM &&
	    spec_draw(sp, id, gen, SPEC_MATCH_POS) >= sp->match)
		return 0;
	return sp->k;
}

uint32_t
sim_spec_accept(const struct sim_spec *sp, uint64_t id, uint32_t gen,
		uint32_t ndraft)
{
	uint32_t a = 0;

	while (a < ndraft && a < sp->k &&
	       spec_draw(sp, id, gen, a) < sp->acc[a])
		a++;
	return a;
}

#define spec_refuse sim_config_fail

kv_err
sim_spec_check(struct sim_config *c, const char *policy, bool v1,
	       bool plugin, char *err, size_t errlen)
{
	const struct sim_spec_config *s = &c->spec;
	uint32_t tp = c->eng.tensor_parallel_size ? c->eng.tensor_parallel_size
						  : 1;

	if (s->method == SIM_SPEC_OFF)
		return KV_OK;
	if (!v1 || plugin)
		return spec_refuse(err, errlen, s->method_where,
				   "engine.speculative_config: policy %s has no "
				   "speculative decoding (kvsim runs it on "
				   "vllm-v1 only)", policy);
	/* vLLM runs EAGLE async by default; kvsim's async loop does not
	 * carry drafts, so speculation runs on the synchronous loop */
	if (c->async_scheduling == 1)
		return spec_refuse(err, errlen, c->async_where[0] ?
				   c->async_where : c->source,
				   "engine.async_scheduling: kvsim runs "
				   "speculative decoding on the synchronous "
				   "loop only (set it to false or auto)");
	c->async_scheduling = 0;
	if (s->draft_tp != 0 && s->draft_tp != 1 && s->draft_tp != tp)
		return spec_refuse(err, errlen, s->tp_where,
				   "engine.speculative_config.draft_tensor_"
				   "parallel_size: %u, expected 1 or the "
				   "target's tensor_parallel_size %u",
				   s->draft_tp, tp);
	return KV_OK;
}

/* Bytes of one decoder layer's weights per rank, less the embedding and
 * LM head (the model's estimate spread over its layers). */
static uint64_t
spec_layer_bytes(const struct cat_model *m, uint32_t tp, uint32_t wb)
{
	uint64_t all = sz_weights_bytes(m, tp, wb, m->dtype_bytes, 0);
	uint64_t vh = (uint64_t)m->vocab_size * m->hidden_size * wb / tp;
	uint64_t ends = m->tie_word_embeddings ? vh : 2 * vh;

	if (m->num_layers == 0 || all <= ends)
		return 0;
	return (all - ends) / m->num_layers;
}

/* KV bytes one token takes in one layer on one rank. */
static uint64_t
spec_kv_token(const struct cat_model *m, uint32_t tp)
{
	uint32_t h = m->num_kv_heads / tp ? m->num_kv_heads / tp : 1;

	return (uint64_t)h * (m->head_dim + m->v_head_dim) * m->dtype_bytes;
}

void
sim_spec_sizing(const struct sim_spec_config *c,
		const struct cat_model *target, const struct cat_model *draft,
		uint32_t tp, uint32_t weight_bytes, uint64_t *weights,
		uint32_t *kv_layers)
{
	uint64_t h = target->hidden_size, per, dkv;
	uint32_t dtp;

	*weights = 0;
	*kv_layers = 0;
	if (tp == 0)
		tp = 1;
	switch (c->method) {
	case SIM_SPEC_EAGLE:
	case SIM_SPEC_EAGLE3:
		*weights = spec_layer_bytes(target, tp, weight_bytes) +
			   (c->method == SIM_SPEC_EAGLE3 ? 3 : 2) * h * h *
			   weight_bytes / tp;
		if (c->method == SIM_SPEC_EAGLE3)
			*weights += (uint64_t)SIM_SPEC_EAGLE3_VOCAB * h *
				    weight_bytes / tp;
		*kv_layers = 1;
		break;
	case SIM_SPEC_DRAFT:
		if (draft == NULL)
			break;
		dtp = c->draft_tp ? c->draft_tp : tp;
		*weights = sz_weights_bytes(draft, dtp, weight_bytes,
					    draft->dtype_bytes, 0);
		per = spec_kv_token(target, tp);
		dkv = spec_kv_token(draft, dtp) * draft->num_layers;
		*kv_layers = per ? (uint32_t)((dkv + per - 1) / per) : 0;
		break;
	default:
		break;
	}
}

kv_err
sim_spec_open(struct sim_spec_run *r, struct sim_config *c, const cat *ct,
	      const struct cat_model *target, const char *policy, bool v1,
	      bool plugin, char *err, size_t errlen)
{
	const struct sim_spec_config *s = &c->spec;
	uint32_t tp = c->eng.tensor_parallel_size ? c->eng.tensor_parallel_size
						  : 1;
	uint32_t wb = target->weight_bytes == 4 ? target->dtype_bytes
						: target->weight_bytes;
	kv_err e;

	memset(r, 0, sizeof(*r));
	if (s->method == SIM_SPEC_OFF)
		return KV_OK;
	if (c->pd.on)
		return spec_refuse(err, errlen, s->method_where,
				   "engine.speculative_config: not simulated "
				   "with disaggregation yet");
	if ((e = sim_spec_check(c, policy, v1, plugin, err, errlen)) != KV_OK)
		return e;
	if (s->method == SIM_SPEC_DRAFT &&
	    (r->draft = cat_find_model(ct, s->model)) == NULL)
		return spec_refuse(err, errlen, s->model_where,
				   "engine.speculative_config.model: unknown "
				   "draft model '%s' (kvsim catalog list)",
				   s->model);
	sim_spec_sizing(s, target, r->draft, tp, wb,
			&c->eng.spec_weights_bytes, &c->eng.spec_kv_layers);
	r->on = true;
	sim_spec_init(&r->sp, s, c->seed);
	return KV_OK;
}

kv_err
sim_spec_ready(struct sim_spec_run *r, const struct sim_config *c,
	       const struct cat_gpu *g, const struct cost_model *cm,
	       struct kvs_config *sc, char *err, size_t errlen)
{
	const struct sim_spec_config *s = &c->spec;
	struct cost_config cc;
	char why[512];

	if (!r->on)
		return KV_OK;
	sc->spec_tokens = s->k;
	if (s->method == SIM_SPEC_EAGLE || s->method == SIM_SPEC_EAGLE3)
		sc->lookahead = s->k;
	r->cost.k = s->k;
	r->cost.target = cm;
	if (s->method == SIM_SPEC_NGRAM) {
		r->cost.kind = COST_SPEC_NGRAM;
		return KV_OK;
	}
	if (s->method != SIM_SPEC_DRAFT) {
		r->cost.kind = COST_SPEC_HEAD;
		r->cost.head_bytes = (double)c->eng.spec_weights_bytes;
		/* EAGLE reads the target's LM head too */
		if (s->method == SIM_SPEC_EAGLE)
			r->cost.head_bytes += cm->flops_seq / 2 *
					      cm->weight_bytes;
		r->cost.head_flops_token = 2 * r->cost.head_bytes /
					   (cm->weight_bytes ? cm->weight_bytes
					    : 2);
		r->cost.head_kv_token = cm->paged_layers ?
			(double)cm->block_bytes / cm->block_size /
			cm->paged_layers : 0;
		return KV_OK;
	}
	cost_config_init(&cc);
	cc.tp = s->draft_tp ? s->draft_tp : cm->tp;
	cc.block_size = cm->block_size;
	cc.kv_dtype_bytes = cm->kv_dtype_bytes;
	if (cost_model_init(&r->draft_cm, r->draft, g, &cc, why,
			    sizeof(why)) != KV_OK)
		return spec_refuse(err, errlen, s->model_where,
				   "engine.speculative_config.model: %s", why);
	r->cost.kind = COST_SPEC_MODEL;
	r->cost.draft = &r->draft_cm;
	return KV_OK;
}
