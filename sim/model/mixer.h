/*
 * mixer.h -- one descriptor per token-mixer kind (enum cat_mixer in
 * catalog.h): its names, how its layers hold KV or state, its parameter
 * count and its cost-model terms.
 *
 * Everything that differs between full attention, a sliding window, MLA,
 * Mamba and the rest is a field or a hook of the kind's row, so the
 * catalog, the KV sizing, the cost model and the command line ask the row
 * instead of switching on the kind; a new kind is one more row in mixer.c
 * (tests/check_catalog.c fails on a kind without a complete row).
 *
 * The hooks are pure functions of the model; those that can fail return
 * kv_err with a message in a caller buffer.  The cost-model figures are
 * plain numbers (struct cat_mixer_cost), so this layer knows nothing of
 * sim/cost.h.
 */
#ifndef SIM_MODEL_MIXER_H
#define SIM_MODEL_MIXER_H

#include "core/kvcore.h"
#include "core/kvsize.h"
#include "sim/model/catalog.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a layer of the kind keeps between steps. */
enum cat_mixer_class {
	CAT_MIXC_NONE = 0,	/* nothing (no token mixer) */
	CAT_MIXC_ATTENTION,	/* KV pages, one slot per token */
	CAT_MIXC_RECURRENT	/* a fixed-size state per sequence */
};

/* The cost model's figures of one layer, per rank. */
struct cat_mixer_cost {
	double token_bytes;	/* attention: KV bytes of one token */
	double pair_flops;	/* per query-key pair (MLA: absorbed path) */
	double pair_flops_pf;	/* MLA prefill (expanded) path */
	double ctx_flops_pf;	/* MLA prefill: up-projection per context
				 * token */
	double state_bytes;	/* recurrent: conv + SSM state, one seq */
	double state_flops;	/* recurrent: scan FLOPs per token */
};

/* The run the cost figures are for. */
struct cat_mixer_dims {
	uint32_t tp;			/* tensor parallel size, >= 1 */
	uint32_t dtype_bytes;		/* activations (conv state) */
	uint32_t kv_dtype_bytes;	/* KV cache */
	uint32_t ssm_dtype_bytes;	/* SSM state */
};

/* One step's attention work of one layer kind, summed over sequences
 * (saturating, so the order of the sequences does not matter). */
/* One sequence of a step: q new tokens after ctx tokens of context (the
 * cost model's batch, sim/cost.h). */
struct cat_mixer_seq {
	uint64_t q;
	uint64_t ctx;
};

struct cat_mixer_work {
	uint64_t pairs;		/* query-key pairs (MLA: absorbed) */
	uint64_t pairs_pf;	/* MLA: pairs taken on the prefill path */
	uint64_t ctx_pf;	/* MLA: context tokens up-projected */
	uint64_t kvtok;		/* KV tokens read plus written */
};

struct cat_mixer_ops {
	const char *name;	/* cat_mixer_name: "full attention" */
	const char *key;	/* short name (cost_describe): "full" */
	char letter;		/* `kvsim catalog show` layer_pattern */
	enum cat_mixer_class cls;
	bool windowed;		/* cat_layer.window applies; it tells
				 * layers of the kind apart */
	bool latent;		/* MLA: one latent a token, replicated on
				 * every rank */
	bool prefix_caching;	/* recurrent: vLLM may keep prefix caching
				 * on (Mamba-2) */
	enum kvc_spec_kind spec;	/* vLLM's layer spec (cls != NONE) */

	/* Parameters of one layer's mixer (tensor parallel size 1). */
	uint64_t (*params)(const struct cat_model *m);
	/* Activation elements one token moves through the mixer: added to
	 * *rep (replicated on every rank) and *shard (split by TP). */
	void (*activations)(const struct cat_model *m, double *rep,
			    double *shard);
	/* Attention: KV bytes of `tokens` tokens of one layer on one of tp
	 * ranks (KV heads replicated when tp exceeds them). */
	uint64_t (*kv_bytes)(const struct cat_model *m, uint32_t tp,
			     uint32_t dtype_bytes, uint32_t tokens);
	/* Recurrent: one layer's state on one rank as vLLM shards it
	 * (MambaStateShapeCalculator), conv and SSM tensors in conv_b and
	 * ssm_b bytes; KV_EINVAL when tp does not divide the heads. */
	kv_err (*state_bytes)(const struct cat_model *m, uint32_t tp,
			      uint32_t conv_b, uint32_t ssm_b, uint64_t *out,
			      char *why, size_t whylen);
	/* The cost model's figures; KV_EINVAL when the model lacks a
	 * dimension the kind needs. */
	kv_err (*cost)(const struct cat_model *m,
		       const struct cat_mixer_dims *d,
		       struct cat_mixer_cost *out, char *why, size_t whylen);
	/* Attention: add the work of a step's n sequences (those with
	 * q = 0 add nothing) for a layer with figures c and window w.  One
	 * call a step and layer kind: the loop stays inside the kind. */
	void (*work)(const struct cat_mixer_cost *c, uint32_t w,
		     const struct cat_mixer_seq *s, size_t n,
		     struct cat_mixer_work *out);
};

/* The row of kind k; NULL when k is not a kind (k >= CAT_NMIXERS). */
const struct cat_mixer_ops *cat_mixer_ops(enum cat_mixer k);

/* The row of layer l's mixer (layers hold a valid kind). */
static inline const struct cat_mixer_ops *
cat_layer_mixer(const struct cat_layer *l)
{
	return cat_mixer_ops((enum cat_mixer)l->mixer);
}

/* Saturating arithmetic: the work sums and the cost model's byte counts
 * stop at UINT64_MAX instead of wrapping. */
static inline uint64_t
cat_sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static inline uint64_t
cat_sat_mul(uint64_t a, uint64_t b)
{
	/* Both below 2^32 cannot overflow: no divide on the per-step path. */
	if ((a | b) >> 32 == 0)
		return a * b;
	if (a != 0 && b > UINT64_MAX / a)
		return UINT64_MAX;
	return a * b;
}

#endif
