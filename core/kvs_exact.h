/*
 * kvs_exact.h -- what the policies on exact accounting (sarathi, kvsim)
 * share: blocks a request needs now, the blocks one max_model_len request
 * holds running alone (their setup check), and a view of the running queue
 * that tells decodes from prefills and counts the blocks the running
 * prefills still need (their reservation).  Internal to libkvcore.
 */
#ifndef KVS_EXACT_H
#define KVS_EXACT_H

#include "kvspolicy.h"

/* One running request as a step sees it. */
struct kvs_xri {
	kvs_req r;
	int32_t seq;
	uint32_t T, C;
	bool decode;	/* one unseen token after a generated one */
};

/*
 * The running queue in order, in a scratch array that grows and never
 * shrinks (no allocation in a steady state).  reserved = blocks the
 * running prefills still need for the rest of their prompts.
 */
struct kvs_xview {
	struct kvs_xri *ri;
	uint32_t n, cap;
	uint64_t reserved;
};

/* Copy msg into why and return KV_ECONFIG. */
kv_err kvs__xfail(char *why, size_t whylen, const char *msg);

/*
 * Blocks (all groups, one pool) the allocator would take for seq now, a
 * sliding group's capped at what it can hold at once while its prompt is
 * computed in chunks of at most `budget` tokens (kvs__xalone_blocks's
 * count): the admission check and the reservation agree with setup.
 */
kv_err kvs__xneed(kvc *k, int32_t seq, uint32_t L, uint64_t budget,
		  uint64_t *out);

/*
 * Blocks one request of max_model_len tokens holds at most while it runs
 * alone: full groups cdiv(mml, bs); sliding groups the window plus one
 * chunk of `budget` tokens and L lookahead slots; a state group one block.
 */
uint64_t kvs__xalone_blocks(const struct kvc_config *kc, uint64_t budget,
			    uint64_t L);

/* Read the running queue of s into v. */
kv_err kvs__xview_read(kvs *s, struct kvs_xview *v);
void kvs__xview_release(struct kvs_xview *v);

/* Copy-on-write pairs of the last allocator call, if any, to the step. */
kv_err kvs__xcow(kvs *s, kvc *k);

/*
 * A step of a policy on exact accounting, as the phases both policies
 * share see it; a policy's own step record begins with one.  `v` is the
 * running queue read at the start of the step (kvs__xstep_begin), kept in
 * step with it as requests are preempted; requests admitted or resumed in
 * the step are not added to it.
 */
struct kvs_xstep {
	kvs *s;
	kvc *k;
	struct kvs_xview *v;
	uint32_t L, budget, used, maxseqs, nrun;
	uint32_t thr;		/* a prefill chunk's cap, 0 = none */
	uint64_t reserved;	/* blocks the running prefills still need */
	uint64_t wm;		/* the watermark, in blocks */
	bool whole;		/* admission: the prompt's rest must fit */
	uint32_t nprefill;	/* running prefills with tokens left */
	/* Put r, just admitted, into running at its place. */
	kv_err (*run_insert)(struct kvs_xstep *x, kvs_req r);
	/* Make room for running[i]'s decode (need blocks), preempting; set
	 * *self when running[i] itself had to go. */
	kv_err (*make_room)(struct kvs_xstep *x, uint32_t i, uint64_t need,
			    bool *self);
};

/* Fill x's common fields for a step of s and read the running queue. */
kv_err kvs__xstep_begin(struct kvs_xstep *x, kvs *s, struct kvs_xview *v,
			uint32_t budget);

/* Phase: every running decode, one token plus L slots, in running order;
 * prefills are counted in x->nprefill and left to kvs__xprefills. */
kv_err kvs__xdecodes(struct kvs_xstep *x);

/* Phase: the next chunk of every running prefill (it draws on its
 * reservation, so it always fits). */
kv_err kvs__xprefills(struct kvs_xstep *x);

/* Phase: waiting requests from the head while the blocks of the whole
 * prompt fit free - reserved - watermark, fewer than maxseqs run and the
 * chunk is not 0. */
kv_err kvs__xadmit(struct kvs_xstep *x);

/*
 * Preempt running[j] of the view in mode m (its reservation released, the
 * request taken out of running and of the view).  The caller puts *r into
 * waiting or swapped.
 */
kv_err kvs__xpreempt(struct kvs_xstep *x, uint32_t j,
		     enum kvs_preempt_mode m, kvs_req *r);

/* Free blocks of the one pool every group shares in exact mode. */
static inline uint64_t
kvs__xfree(const kvc *k)
{
	return kvc_free_blocks(k, 0);
}

#endif /* KVS_EXACT_H */
