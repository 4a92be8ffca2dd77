/*
 * check_sched_policies.c -- scenarios of the policies sarathi,
 * deepspeed-fastgen and kvsim (docs/policies.md), step by step.
 *
 * Each scenario builds a kvs, queues requests and compares every step with
 * the line `kvsim replay` would print for it (requests are named by their
 * handle: 0, 1, ...).  kvs_audit() holds after every step.  Covered per
 * policy: chunking boundaries, budget exhaustion, preemption order,
 * swap vs recompute, swapped requests resuming first, lookahead slots
 * forcing preemption, prefix hits reducing charged tokens, hybrid groups
 * where one group is full and another is not, and the first seed bug.
 */
#include "core/kvsched.h"
#include "core/kvspolicy.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------ */

struct sc {
	struct kvs_config s;
	struct kvc_config k;
};

static void
sc_init(struct sc *c, const char *policy, kvc_mode m, uint32_t bs,
	uint32_t gpu, uint32_t mml)
{
	kvs_config_init(&c->s);
	snprintf(c->s.policy, sizeof(c->s.policy), "%s", policy);
	kvc_config_default(&c->k, m);
	c->k.block_size = bs;
	c->k.gpu_blocks = gpu;
	c->k.max_model_len = mml;
}

static void
sc_group(struct sc *c, const char *name, kvc_kind kind, uint32_t win,
	 uint32_t bs)
{
	struct kvc_group_config *g = &c->k.group[c->k.ngroups++];

	snprintf(g->name, sizeof(g->name), "%s", name);
	g->kind = kind;
	g->window = win;
	g->block_size = bs;
}

static kvs *
mk(const struct sc *c)
{
	char why[256];
	kv_err e;
	kvs *s = kvs_new(&c->s, &c->k, &e, why, sizeof(why));

	ck_assert_msg(s != NULL, "kvs_new: %s", why);
	return s;
}

/* kvs_new must refuse c; why must contain `what`. */
static void
refused(const struct sc *c, const char *what)
{
	char why[256];
	kv_err e;
	kvs *s = kvs_new(&c->s, &c->k, &e, why, sizeof(why));

	ck_assert_ptr_null(s);
	ck_assert_int_eq(e, KV_ECONFIG);
	ck_assert_msg(strstr(why, what) != NULL, "'%s' does not say '%s'",
		      why, what);
}

/* A request of tokens base .. base+len-1. */
static kvs_req
req(kvs *s, uint32_t base, uint32_t len, uint32_t out)
{
	uint32_t tok[1024];
	kvs_req r;

	ck_assert_uint_le(len, 1024);
	for (uint32_t i = 0; i < len; i++)
		tok[i] = base + i;
	ck_assert_int_eq(kvs_add(s, tok, len, out, 0, &r), KV_OK);
	return r;
}

static void
list(char *b, size_t n, const char *key, const kvs_req *r,
     const uint32_t *num, const struct kvc_pair *p, uint32_t cnt)
{
	size_t at = strlen(b);

	if (cnt == 0)
		return;
	at += (size_t)snprintf(b + at, n - at, " %s=", key);
	for (uint32_t i = 0; i < cnt; i++) {
		if (p != NULL)
			at += (size_t)snprintf(b + at, n - at, "%s%d>%d",
					       i ? "," : "", p[i].src,
					       p[i].dst);
		else if (num != NULL)
			at += (size_t)snprintf(b + at, n - at, "%s%d:%u",
					       i ? "," : "", r[i], num[i]);
		else
			at += (size_t)snprintf(b + at, n - at, "%s%d",
					       i ? "," : "", r[i]);
	}
}

/* One step, as `kvsim replay` prints it (without "step K"). */
static const char *
step(kvs *s)
{
	static char b[2048];
	kvs_req r[256];
	uint32_t n[256];
	const struct kvs_step *st;
	char why[256];
	kv_err e = kvs_step(s, &st);

	ck_assert_msg(e == KV_OK, "step: %s", kvs_errmsg(s));
	ck_assert_msg(kvs_audit(s, why, sizeof(why)) == 0, "audit: %s", why);
	ck_assert_uint_le(st->nsched, 256);
	for (uint32_t i = 0; i < st->nsched; i++) {
		r[i] = st->sched[i].req;
		n[i] = st->sched[i].ntokens;
	}
	b[0] = '\0';
	list(b, sizeof(b), "sched", r, n, NULL, st->nsched);
	list(b, sizeof(b), "preempt", st->preempt, NULL, NULL, st->npreempt);
	list(b, sizeof(b), "finish", st->finish, NULL, NULL, st->nfinish);
	list(b, sizeof(b), "swap_out", NULL, NULL, st->swap_out,
	     st->nswap_out);
	list(b, sizeof(b), "swap_in", NULL, NULL, st->swap_in,
	     st->nswap_in);
	list(b, sizeof(b), "cow", NULL, NULL, st->cow, st->ncow);
	return b[0] == ' ' ? b + 1 : b;
}

#define STEP(s, want) ck_assert_str_eq(step(s), want)

static uint32_t
computed(kvs *s, kvs_req r)
{
	return (uint32_t)kvc_seq_computed(kvs_kv(s), kvs_req_seq(s, r));
}

/* ---- sarathi ------------------------------------------------------------- */

/* core-spec §9 case 38 under stall-free batching: decodes, then chunks. */
START_TEST(sarathi_chunking)
{
	struct sc c;
	kvs *s;

	sc_init(&c, "sarathi", KVC_EXACT, 4, 64, 128);
	c.s.chunk_size = 64;
	c.s.max_num_seqs = 4;
	s = mk(&c);
	ck_assert_int_eq(kvs_config_of(s)->max_num_batched_tokens, 64);
	req(s, 0, 60, 3);
	req(s, 100, 60, 2);
	STEP(s, "sched=0:60,1:4");
	STEP(s, "sched=0:1,1:56");
	STEP(s, "sched=0:1,1:1 finish=0,1");
	ck_assert_uint_eq(kvs_nunfinished(s), 0);
	/* A prompt of exactly the chunk size runs in one step. */
	req(s, 200, 64, 1);
	STEP(s, "sched=2:64 finish=2");
	kvs_free(s);
}
END_TEST

/* Decodes take the budget first; a prefill gets what is left. */
START_TEST(sarathi_budget)
{
	struct sc c;
	kvs *s;

	sc_init(&c, "sarathi", KVC_EXACT, 4, 64, 64);
	c.s.chunk_size = 8;
	c.s.max_num_seqs = 8;
	s = mk(&c);
	for (uint32_t i = 0; i < 6; i++)
		req(s, 100 * i, 1, 10);
	/* 6 one-token prompts fill 6 of the 8 tokens, a 10-token prompt
	 * gets the last 2. */
	req(s, 1000, 10, 1);
	STEP(s, "sched=0:1,1:1,2:1,3:1,4:1,5:1,6:2");
	STEP(s, "sched=0:1,1:1,2:1,3:1,4:1,5:1,6:2");
	STEP(s, "sched=0:1,1:1,2:1,3:1,4:1,5:1,6:2");
	STEP(s, "sched=0:1,1:1,2:1,3:1,4:1,5:1,6:2");
	STEP(s, "sched=0:1,1:1,2:1,3:1,4:1,5:1,6:2 finish=6");
	kvs_free(s);
}
END_TEST

/*
 * Preemption order: the decode that does not fit preempts the LAST running
 * request (recompute, to the waiting front); several victims keep their
 * arrival order in waiting; no admission on a step that preempted.
 */
START_TEST(sarathi_preempt_order)
{
	struct sc c;
	kvs *s;

	/* bs 2, 6 blocks: three 4-token prompts take 2 blocks each. */
	sc_init(&c, "sarathi", KVC_EXACT, 2, 6, 12);
	c.s.chunk_size = 16;
	c.s.max_num_seqs = 4;
	s = mk(&c);
	req(s, 0, 4, 8);
	req(s, 100, 4, 8);
	req(s, 200, 4, 8);
	STEP(s, "sched=0:4,1:4,2:4");
	ck_assert_uint_eq(kvc_free_blocks(kvs_kv(s), 0), 0);
	/* Token 5 needs a third block: 0 preempts the last (2), then 1
	 * takes the second block 2 freed. */
	STEP(s, "sched=0:1,1:1 preempt=2");
	ck_assert_uint_eq(kvs_req_recomputed(s, 2), 4);
	/* Token 6 fits; 2 (5 tokens, 3 blocks) cannot come back. */
	STEP(s, "sched=0:1,1:1");
	/* Token 7: 0 preempts 1, the last after it; 1 goes to the FRONT
	 * of waiting, before 2 (Sarathi's waiting.insert(0, seq)). */
	STEP(s, "sched=0:1 preempt=1");
	ck_assert_int_eq(kvs_queue_at(s, KVS_Q_WAITING, 0), 1);
	ck_assert_int_eq(kvs_queue_at(s, KVS_Q_WAITING, 1), 2);
	ck_assert_uint_eq(kvs_req_recomputed(s, 1), 6);
	/* 1 needs 4 blocks for its 7 tokens, 2 are free: it waits. */
	STEP(s, "sched=0:1");
	STEP(s, "sched=0:1");
	STEP(s, "sched=0:1");
	STEP(s, "sched=0:1 finish=0");
	/* 0 gone: 1 first, whole (prompt + 3 generated tokens, 4 blocks);
	 * 2 (5 tokens, 3 blocks) does not fit the 2 left. */
	STEP(s, "sched=1:7");
	kvs_free(s);
}
END_TEST

/* Lookahead slots make a decode need a block the plain token does not. */
START_TEST(sarathi_lookahead)
{
	struct sc c;
	kvs *s;

	sc_init(&c, "sarathi", KVC_EXACT, 4, 4, 16);
	c.s.chunk_size = 16;
	c.s.max_num_seqs = 2;
	s = mk(&c);
	req(s, 0, 6, 4);
	req(s, 100, 6, 4);
	STEP(s, "sched=0:6,1:6");	/* 2 blocks each, 0 free */
	/* Token 7 fits block 2 of each: no preemption. */
	STEP(s, "sched=0:1,1:1");
	kvs_free(s);

	c.s.lookahead = 2;
	s = mk(&c);
	req(s, 0, 6, 4);
	req(s, 100, 6, 4);
	STEP(s, "sched=0:6,1:6");
	/* 7 tokens + 2 lookahead slots = 9 > 8: a third block each. */
	STEP(s, "sched=0:1 preempt=1");
	kvs_free(s);
}
END_TEST

/* Prefix hits are not charged: the chunk starts after the hit. */
START_TEST(sarathi_prefix_hits)
{
	struct sc c;
	kvs *s;
	kvs_req b;

	sc_init(&c, "sarathi", KVC_EXACT, 4, 64, 128);
	c.k.prefix_caching = true;
	c.s.chunk_size = 64;
	c.s.max_num_seqs = 4;
	s = mk(&c);
	req(s, 0, 32, 1);
	STEP(s, "sched=0:32 finish=0");
	b = req(s, 0, 36, 1);	/* the same 32 tokens, then 4 more */
	STEP(s, "sched=1:4 finish=1");
	(void)b;
	/* A full hit still computes its last block's worth (h <= T - 1). */
	req(s, 0, 32, 1);
	STEP(s, "sched=2:4 finish=2");
	kvs_free(s);
}
END_TEST

/*
 * A hybrid (full + Mamba state) request needs blocks in both groups: in
 * exact mode they share one pool, and admission counts both.  The running
 * prefill's rest is reserved: a later prompt is not admitted into it.
 */
START_TEST(sarathi_hybrid_reserve)
{
	struct sc c;
	kvs *s;

	sc_init(&c, "sarathi", KVC_EXACT, 4, 9, 32);
	sc_group(&c, "attn", KVC_FULL, 0, 4);
	sc_group(&c, "mamba", KVC_STATE, 0, 4);
	c.s.chunk_size = 8;
	c.s.max_num_seqs = 4;
	s = mk(&c);
	req(s, 0, 28, 1);	/* 7 + 1 blocks, computed 8 tokens a step */
	req(s, 100, 4, 1);	/* 1 + 1 blocks */
	STEP(s, "sched=0:8");	/* 3 blocks taken, 5 reserved for 0 */
	ck_assert_uint_eq(kvc_free_blocks(kvs_kv(s), 0), 6);
	/* 2 blocks for request 1 would fit the pool, not the reservation. */
	STEP(s, "sched=0:8");
	STEP(s, "sched=0:8");
	STEP(s, "sched=0:4 finish=0");
	STEP(s, "sched=1:4 finish=1");
	kvs_free(s);
}
END_TEST

START_TEST(sarathi_config)
{
	struct sc c;
	kvs *s;

	sc_init(&c, "sarathi", KVC_EXACT, 16, 1000, 2048);
	s = mk(&c);
	ck_assert_int_eq(kvs_config_of(s)->chunk_size, 512);
	ck_assert_int_eq(kvs_config_of(s)->max_num_batched_tokens, 512);
	ck_assert_int_eq(kvs_config_of(s)->max_num_seqs, 128);
	kvs_free(s);
	c.s.preemption = 1;
	refused(&c, "recompute only");
	c.s.preemption = KVS_UNSET;
	c.s.chunk_size = 64;
	c.s.max_num_batched_tokens = 128;
	refused(&c, "must equal");
	c.s.max_num_batched_tokens = KVS_UNSET;
	c.s.chunk_size = 8;
	c.s.max_num_seqs = 16;
	refused(&c, "at least max_num_seqs");
	c.s.chunk_size = KVS_UNSET;
	c.s.max_num_seqs = KVS_UNSET;
	c.k.gpu_blocks = 100;	/* 2048 tokens need 128 blocks */
	refused(&c, "does not fit");
	c.k.mode = KVC_VLLM_V1;
	c.k.gpu_blocks = 1000;
	c.k.watermark = 0;
	refused(&c, "mode");
}
END_TEST

/* ---- deepspeed-fastgen --------------------------------------------------- */

/* Dynamic SplitFuse: decodes first, prompts split to the token budget. */
START_TEST(fastgen_splitfuse)
{
	struct sc c;
	kvs *s;

	sc_init(&c, "deepspeed-fastgen", KVC_DEEPSPEED, 4, 64, 64);
	c.s.max_num_batched_tokens = 8;
	c.s.max_num_seqs = 4;
	s = mk(&c);
	ck_assert_str_eq(kvs_policy_name(s), "deepspeed-fastgen");
	req(s, 0, 3, 3);
	req(s, 100, 20, 1);
	/* Prompt 0 whole, prompt 1 decomposed: 5 of 20. */
	STEP(s, "sched=0:3,1:5");
	/* The token of 0 first, then 1's remainder (now at the front). */
	STEP(s, "sched=0:1,1:7");
	STEP(s, "sched=0:1,1:7 finish=0");
	STEP(s, "sched=1:1 finish=1");
	/* A remainder of one token is token generation, still in front. */
	req(s, 200, 1, 3);	/* 2: one-token prompt */
	req(s, 300, 8, 2);	/* 3: 7 tokens fit, 1 remains */
	STEP(s, "sched=2:1,3:7");
	STEP(s, "sched=3:1,2:1");
	STEP(s, "sched=3:1,2:1 finish=3,2");	/* re-queued in order */
	kvs_free(s);
}
END_TEST

/*
 * The buffer's order: requests the token budget left out keep their place
 * at the head and go first next time; the scheduled ones rejoin the tail.
 */
START_TEST(fastgen_seq_limit)
{
	struct sc c;
	kvs *s;

	sc_init(&c, "deepspeed-fastgen", KVC_DEEPSPEED, 4, 64, 64);
	/* max_num_seqs <= max_num_batched_tokens (DeepSpeed refuses more),
	 * so the budget never leaves a tracked decode out: a one-token
	 * prompt ("token generation" too) waits for a tracked slot */
	c.s.max_num_batched_tokens = 2;
	c.s.max_num_seqs = 2;
	s = mk(&c);
	req(s, 0, 1, 2);
	req(s, 100, 1, 2);
	req(s, 200, 1, 2);
	STEP(s, "sched=0:1,1:1");
	STEP(s, "sched=0:1,1:1 finish=0,1");
	STEP(s, "sched=2:1");
	kvs_free(s);

	/* Decodes go before prompts, so a prompt waits for a free slot
	 * (no more requests are tracked than max_num_seqs). */
	c.s.max_num_batched_tokens = 64;
	c.s.max_num_seqs = 2;
	s = mk(&c);
	req(s, 0, 2, 2);
	req(s, 100, 2, 2);
	req(s, 200, 2, 2);
	STEP(s, "sched=0:2,1:2");
	STEP(s, "sched=0:1,1:1 finish=0,1");
	STEP(s, "sched=2:2");
	kvs_free(s);
}
END_TEST

/*
 * A prompt whose whole rest does not fit the KV cache stops the prompt pass
 * (MII's deadlock guard): it is the KV-cache limit, counted, never split
 * into what fits.
 */
START_TEST(fastgen_kv_limit)
{
	struct kvs_fastgen_stats fs;
	struct sc c;
	kvs *s;

	sc_init(&c, "deepspeed-fastgen", KVC_DEEPSPEED, 4, 8, 32);
	c.s.max_num_batched_tokens = 64;
	c.s.max_num_seqs = 4;
	s = mk(&c);
	req(s, 0, 20, 2);	/* 5 blocks */
	req(s, 100, 16, 2);	/* 4 blocks: 3 free after 0 */
	req(s, 200, 4, 2);	/* would fit, but FCFS stops at 1 */
	STEP(s, "sched=0:20");
	ck_assert_int_eq(kvs_fastgen_stats(s, &fs), KV_OK);
	ck_assert_uint_eq(fs.kv_limit, 1);
	ck_assert_uint_eq(fs.kv_limit_group, 0);
	STEP(s, "sched=0:1 finish=0");
	STEP(s, "sched=1:16,2:4");
	kvs_free(s);
}
END_TEST

/*
 * Seed bug 1: two KV cache groups, only the second exhausted.  The
 * upstream fix checks group 0 and admits; the per-group contract reports
 * the KV-cache limit for group 1 and admits nothing, and nothing breaks.
 */
START_TEST(fastgen_seed_bug)
{
	struct kvs_fastgen_stats fs;
	enum kvs_ds_result res;
	uint32_t g = 99, at = 99, len;
	struct sc c;
	kvs_req x, y;
	kvs *s;

	sc_init(&c, "deepspeed-fastgen", KVC_DEEPSPEED, 16, 8, 32);
	sc_group(&c, "a", KVC_FULL, 0, 16);	/* 8 blocks = 128 tokens */
	sc_group(&c, "b", KVC_FULL, 0, 4);	/* 8 blocks = 32 tokens */
	c.s.max_num_batched_tokens = 64;
	c.s.max_num_seqs = 4;
	s = mk(&c);
	x = req(s, 0, 24, 4);	/* a: 2 blocks, b: 6 */
	STEP(s, "sched=0:24");
	ck_assert_uint_eq(kvc_free_blocks(kvs_kv(s), 0), 6);
	ck_assert_uint_eq(kvc_free_blocks(kvs_kv(s), 1), 2);
	y = req(s, 100, 12, 1);	/* a: 1 block (6 free), b: 3 (2 free) */
	len = 12;
	ck_assert_int_eq(kvs_fastgen_can_schedule(s, &y, &len, 1, &res, &g,
						  &at), KV_OK);
	ck_assert_int_eq(res, KVS_DS_KV_CACHE_LIMIT);
	ck_assert_uint_eq(g, 1);
	ck_assert_uint_eq(at, 0);
	/* The decode of x fits (its 25th token shares b's 7th block). */
	len = 1;
	ck_assert_int_eq(kvs_fastgen_can_schedule(s, &x, &len, 1, &res, &g,
						  &at), KV_OK);
	ck_assert_int_eq(res, KVS_DS_SUCCESS);
	STEP(s, "sched=0:1");
	ck_assert_int_eq(kvs_req_status(s, y), KVS_WAITING);
	ck_assert_int_eq(kvs_fastgen_stats(s, &fs), KV_OK);
	ck_assert_uint_ge(fs.kv_limit, 1);
	ck_assert_uint_eq(fs.kv_limit_group, 1);
	STEP(s, "sched=0:1");
	STEP(s, "sched=0:1 finish=0");
	/* x gone: y fits both groups now. */
	STEP(s, "sched=1:12 finish=1");
	/* The other verdicts of can_schedule. */
	x = req(s, 200, 8, 1);
	len = 100;
	ck_assert_int_eq(kvs_fastgen_can_schedule(s, &x, &len, 0, &res, NULL,
						  NULL), KV_OK);
	ck_assert_int_eq(res, KVS_DS_SUCCESS);
	len = 8;
	c.s.max_num_seqs = 4;
	{
		kvs_req many[5] = { x, x, x, x, x };
		uint32_t lens[5] = { 1, 1, 1, 1, 1 };

		ck_assert_int_eq(kvs_fastgen_can_schedule(s, many, lens, 5,
							  &res, NULL, NULL),
				 KV_OK);
		ck_assert_int_eq(res, KVS_DS_BATCH_SEQUENCE_LIMIT);
	}
	kvs_free(s);
}
END_TEST

/* Nothing schedulable while requests remain: MII resets (recompute all). */
START_TEST(fastgen_reset)
{
	struct kvs_fastgen_stats fs;
	struct sc c;
	kvs *s;

	sc_init(&c, "deepspeed-fastgen", KVC_DEEPSPEED, 2, 4, 8);
	c.s.max_num_batched_tokens = 16;
	c.s.max_num_seqs = 4;
	s = mk(&c);
	req(s, 0, 4, 4);
	req(s, 100, 4, 4);
	STEP(s, "sched=0:4,1:4");	/* 2 + 2 blocks, none free */
	/* Both need a third block for token 5: nothing fits. */
	STEP(s, "preempt=0,1");
	ck_assert_int_eq(kvs_fastgen_stats(s, &fs), KV_OK);
	ck_assert_uint_eq(fs.resets, 1);
	/* Recomputed whole (prompt + generated), the first one only fits. */
	STEP(s, "sched=0:5");
	kvs_free(s);
}
END_TEST

/*
 * A reset of 40 running requests: more recompute preemptions in one step
 * than the record arrays first hold (16), so they grow mid-step; every
 * record is a recompute (the swap flags grew with them -- they once did
 * not, and the 17th flag was written past its array).
 */
START_TEST(fastgen_reset_many)
{
	const struct kvs_step *st;
	struct sc c;
	kvs *s;

	sc_init(&c, "deepspeed-fastgen", KVC_DEEPSPEED, 2, 80, 8);
	c.s.max_num_batched_tokens = 160;
	c.s.max_num_seqs = 64;
	s = mk(&c);
	for (uint32_t i = 0; i < 40; i++)
		req(s, 100 * i, 4, 4);
	ck_assert_int_eq(kvs_step(s, &st), KV_OK);
	ck_assert_uint_eq(st->nsched, 40);	/* 80 blocks, none free */
	ck_assert_int_eq(kvs_step(s, &st), KV_OK);
	ck_assert_uint_eq(st->nsched, 0);
	ck_assert_uint_eq(st->npreempt, 40);
	for (uint32_t i = 0; i < 40; i++) {
		ck_assert_int_eq(st->preempt[i], (kvs_req)i);
		ck_assert_int_eq(st->preempt_swap[i], 0);
	}
	kvs_free(s);
}
END_TEST

START_TEST(fastgen_config)
{
	struct sc c;
	kvs *s;

	sc_init(&c, "deepspeed-fastgen", KVC_DEEPSPEED, 16, 1000, 2048);
	s = mk(&c);
	ck_assert_int_eq(kvs_config_of(s)->max_num_seqs, 512);
	ck_assert_int_eq(kvs_config_of(s)->max_num_batched_tokens, 768);
	kvs_free(s);
	c.s.preemption = 1;
	refused(&c, "swap");
	c.s.preemption = KVS_UNSET;
	c.s.lookahead = 1;
	refused(&c, "lookahead");
	c.s.lookahead = KVS_UNSET;
	c.s.chunk_size = 64;
	refused(&c, "chunk_size");
	c.s.chunk_size = KVS_UNSET;
	c.k.gpu_blocks = 100;
	refused(&c, "does not fit");
	/* DSStateManagerConfig: max_ragged_sequence_count is at most
	 * max_ragged_batch_size and max_tracked_sequences, its default 512
	 * included */
	c.k.gpu_blocks = 1000;
	c.s.max_num_batched_tokens = 100;
	refused(&c, "cannot be larger than max_ragged_batch_size");
	c.s.max_num_seqs = 3000;
	c.s.max_num_batched_tokens = 4000;
	refused(&c, "max_tracked_sequences (2048)");
	c.s.max_num_seqs = 100;
	c.s.max_num_batched_tokens = 100;
	kvs_free(mk(&c));
}
END_TEST

/* ---- kvsim --------------------------------------------------------------- */

/* long_prefill_threshold cuts every chunk; decodes go first. */
START_TEST(kvsim_chunking)
{
	struct sc c;
	kvs *s;

	sc_init(&c, "kvsim", KVC_EXACT, 4, 64, 128);
	c.s.max_num_batched_tokens = 32;
	c.s.max_num_seqs = 4;
	c.s.long_prefill_threshold = 16;
	s = mk(&c);
	req(s, 0, 40, 2);
	req(s, 100, 8, 2);
	STEP(s, "sched=0:16,1:8");
	STEP(s, "sched=1:1,0:16 finish=1");
	STEP(s, "sched=0:8");
	STEP(s, "sched=0:1 finish=0");
	kvs_free(s);
}
END_TEST

/*
 * Victims waste least work: the decode that does not fit preempts the later
 * running request with the fewest computed tokens, not simply the last.
 */
START_TEST(kvsim_victim)
{
	struct sc c;
	kvs *s;

	sc_init(&c, "kvsim", KVC_EXACT, 4, 10, 32);
	c.s.max_num_batched_tokens = 64;
	c.s.max_num_seqs = 4;
	s = mk(&c);
	req(s, 0, 8, 8);	/* 2 blocks */
	req(s, 100, 4, 8);	/* 1 block, the cheapest victim */
	req(s, 200, 24, 8);	/* 6 blocks, admitted last */
	STEP(s, "sched=0:8,1:4,2:24");
	ck_assert_uint_eq(kvc_free_blocks(kvs_kv(s), 0), 1);
	/* 0 takes the last block; 1 needs one: victim 2 (24 computed)
	 * or nobody after 1... 1 preempts 2, the only one after it. */
	STEP(s, "sched=0:1,1:1 preempt=2");
	kvs_free(s);

	/* The least-work victim is not the last one. */
	sc_init(&c, "kvsim", KVC_EXACT, 4, 8, 32);
	c.s.max_num_batched_tokens = 64;
	c.s.max_num_seqs = 4;
	s = mk(&c);
	req(s, 0, 4, 8);	/* 1 block */
	req(s, 100, 4, 8);	/* 1 block, 4 computed: cheapest */
	req(s, 200, 22, 8);	/* 6 blocks, 22 computed, room for 2 */
	STEP(s, "sched=0:4,1:4,2:22");
	ck_assert_uint_eq(kvc_free_blocks(kvs_kv(s), 0), 0);
	/* 0 needs a block: victims 1 (4 tokens) and 2 (22): 1 goes, not
	 * the last; 2's token fits its last block. */
	STEP(s, "sched=0:1,2:1 preempt=1");
	kvs_free(s);
}
END_TEST

static int64_t
swap_cheap(void *ctx, const struct kvs_victim *v, enum kvs_preempt_mode m)
{
	(void)ctx;
	return m == KVS_PREEMPT_SWAP ? 0 : (int64_t)v->computed;
}

/*
 * Swap vs recompute per victim (default hook: recompute under
 * KVS_KVSIM_SWAP_TOKENS computed tokens, swap above when the CPU pool has
 * room), and swapped requests resume before any new admission.
 */
START_TEST(kvsim_swap)
{
	struct kvs_kvsim_cost h = { NULL, swap_cheap };
	struct sc c;
	kvs *s;

	/* Short victim: recomputed even with a CPU pool. */
	sc_init(&c, "kvsim", KVC_EXACT, 4, 8, 32);
	c.k.cpu_blocks = 16;
	c.s.max_num_batched_tokens = 64;
	c.s.max_num_seqs = 4;
	s = mk(&c);
	req(s, 0, 4, 8);
	req(s, 100, 4, 8);
	req(s, 200, 22, 8);
	STEP(s, "sched=0:4,1:4,2:22");
	STEP(s, "sched=0:1,2:1 preempt=1");
	ck_assert_int_eq(kvs_req_status(s, 1), KVS_WAITING);
	kvs_free(s);

	/* Long victim: swapped (300 computed tokens > 256). */
	sc_init(&c, "kvsim", KVC_EXACT, 16, 40, 512);
	c.k.cpu_blocks = 40;
	c.s.max_num_batched_tokens = 1024;
	c.s.max_num_seqs = 4;
	s = mk(&c);
	req(s, 0, 320, 40);	/* 20 blocks */
	req(s, 1000, 304, 40);	/* 19 blocks */
	STEP(s, "sched=0:320,1:304");
	ck_assert_uint_eq(kvc_free_blocks(kvs_kv(s), 0), 1);
	/* 0 takes the last block; 1 needs a 20th, nobody is after it: it
	 * goes itself, swapped (304 computed tokens cost more than a
	 * swap). */
	STEP(s, "sched=0:1 preempt=1 swap_out=20>0,21>1,22>2,23>3,24>4,"
	     "25>5,26>6,27>7,28>8,29>9,30>10,31>11,32>12,33>13,34>14,35>15,"
	     "36>16,37>17,38>18");
	ck_assert_int_eq(kvs_req_status(s, 1), KVS_SWAPPED);
	/* A newcomer waits while 1 is swapped, although it would fit. */
	req(s, 5000, 4, 1);
	STEP(s, "sched=0:1");
	{
		const struct kvs_step *st;

		for (;;) {
			ck_assert_int_eq(kvs_step(s, &st), KV_OK);
			if (st->nswap_in > 0)
				break;
			ck_assert_int_eq(kvs_req_status(s, 2), KVS_WAITING);
		}
		/* 0 finished the step before; 1 resumes first, with its
		 * unseen token, and only then the newcomer is admitted. */
		ck_assert_uint_eq(st->nswap_in, 19);
		ck_assert_uint_eq(st->nsched, 2);
		ck_assert_int_eq(st->sched[0].req, 1);
		ck_assert_uint_eq(st->sched[0].ntokens, 1);
		ck_assert_int_eq(st->sched[1].req, 2);
		ck_assert_uint_eq(st->sched[1].ntokens, 4);
	}
	kvs_free(s);

	/* The hook decides: a cheap swap for a short victim. */
	sc_init(&c, "kvsim", KVC_EXACT, 4, 8, 32);
	c.k.cpu_blocks = 16;
	c.s.max_num_batched_tokens = 64;
	c.s.max_num_seqs = 4;
	s = mk(&c);
	ck_assert_int_eq(kvs_kvsim_set_cost(s, &h), KV_OK);
	req(s, 0, 4, 3);
	req(s, 100, 4, 8);
	req(s, 200, 24, 8);
	STEP(s, "sched=0:4,1:4,2:24");
	/* Equal cost 0 for both swaps: the later one (2) goes. */
	STEP(s, "sched=0:1,1:1 preempt=2 swap_out=2>0,3>1,4>2,5>3,6>4,7>5");
	STEP(s, "sched=0:1,1:1 finish=0");
	/* 0 finished: 1 block free + ...; 2 needs 7 for 26 tokens + its
	 * unseen one: not yet. */
	ck_assert_int_eq(kvs_req_status(s, 2), KVS_SWAPPED);
	kvs_free(s);
}
END_TEST

/* Prefix hits and the exact check: no needless preemption. */
START_TEST(kvsim_exact)
{
	struct sc c;
	kvs *s;

	/* core-spec case 15: pool full, the token fits the partial block. */
	sc_init(&c, "kvsim", KVC_EXACT, 4, 3, 12);
	c.s.max_num_batched_tokens = 16;
	c.s.max_num_seqs = 2;
	s = mk(&c);
	req(s, 0, 6, 2);
	req(s, 100, 3, 2);
	STEP(s, "sched=0:6,1:3");
	ck_assert_uint_eq(kvc_free_blocks(kvs_kv(s), 0), 0);
	STEP(s, "sched=0:1,1:1 finish=0,1");
	kvs_free(s);

	sc_init(&c, "kvsim", KVC_EXACT, 4, 64, 128);
	c.k.prefix_caching = true;
	c.s.max_num_batched_tokens = 64;
	c.s.max_num_seqs = 4;
	s = mk(&c);
	req(s, 0, 40, 1);
	STEP(s, "sched=0:40 finish=0");
	req(s, 0, 44, 1);
	STEP(s, "sched=1:4 finish=1");
	ck_assert_uint_eq(computed(s, 1), 0);	/* finished: freed */
	kvs_free(s);
}
END_TEST

/* Lookahead forces a preemption a plain decode would not need. */
START_TEST(kvsim_lookahead)
{
	struct sc c;
	kvs *s;

	sc_init(&c, "kvsim", KVC_EXACT, 4, 4, 16);
	c.s.max_num_batched_tokens = 16;
	c.s.max_num_seqs = 2;
	c.s.lookahead = 2;
	s = mk(&c);
	req(s, 0, 6, 4);
	req(s, 100, 6, 4);
	STEP(s, "sched=0:6,1:6");
	STEP(s, "sched=0:1 preempt=1");
	kvs_free(s);
}
END_TEST

/*
 * Hybrid: full attention + a sliding window.  The window's released
 * blocks return to the shared pool, so a long request runs in less than
 * its full-attention footprint twice over.
 */
START_TEST(kvsim_hybrid)
{
	struct sc c;
	kvs *s;

	sc_init(&c, "kvsim", KVC_EXACT, 4, 16, 40);
	sc_group(&c, "full", KVC_FULL, 0, 4);
	sc_group(&c, "swa", KVC_SLIDING, 4, 4);
	c.s.max_num_batched_tokens = 8;
	c.s.max_num_seqs = 2;
	s = mk(&c);
	req(s, 0, 32, 2);	/* full: 8 blocks; window: at most 3 live */
	STEP(s, "sched=0:8");
	STEP(s, "sched=0:8");
	STEP(s, "sched=0:8");
	STEP(s, "sched=0:8");
	/* 16 blocks if both groups kept every block; the window's
	 * released ones are back in the pool. */
	ck_assert_uint_le(16 - kvc_free_blocks(kvs_kv(s), 0), 8 + 3);
	STEP(s, "sched=0:1 finish=0");
	kvs_free(s);
}
END_TEST

/* Priority: lower value first among the waiting. */
START_TEST(kvsim_priority)
{
	uint32_t t[4] = { 1, 2, 3, 4 };
	struct sc c;
	kvs_req r;
	kvs *s;

	sc_init(&c, "kvsim", KVC_EXACT, 4, 64, 64);
	c.s.max_num_batched_tokens = 8;
	c.s.max_num_seqs = 4;
	c.s.priority = 1;
	s = mk(&c);
	ck_assert_int_eq(kvs_add(s, t, 4, 1, 5, &r), KV_OK);
	ck_assert_int_eq(kvs_add(s, t, 4, 1, 1, &r), KV_OK);
	ck_assert_int_eq(kvs_add(s, t, 4, 1, 3, &r), KV_OK);
	STEP(s, "sched=1:4,2:4 finish=1,2");
	STEP(s, "sched=0:4 finish=0");
	kvs_free(s);
}
END_TEST

START_TEST(kvsim_config)
{
	struct kvs_kvsim_cost h = { NULL, NULL };
	struct sc c;
	kvs *s;

	sc_init(&c, "kvsim", KVC_EXACT, 16, 1000, 2048);
	s = mk(&c);
	ck_assert_int_eq(kvs_config_of(s)->max_num_seqs, 128);
	ck_assert_int_eq(kvs_config_of(s)->max_num_batched_tokens, 2048);
	ck_assert_int_eq(kvs_kvsim_set_cost(s, &h), KV_EINVAL);
	ck_assert_int_eq(kvs_kvsim_set_cost(s, NULL), KV_OK);
	kvs_free(s);
	c.s.preemption = 1;
	refused(&c, "cpu_blocks");
	c.s.preemption = KVS_UNSET;
	c.s.chunk_size = 8;
	refused(&c, "chunk_size");
	c.s.chunk_size = KVS_UNSET;
	c.s.chunked_prefill = 0;
	c.s.long_prefill_threshold = 8;
	refused(&c, "chunked_prefill");
	/* Policy extras refuse a kvs of another policy. */
	sc_init(&c, "sarathi", KVC_EXACT, 16, 1000, 2048);
	s = mk(&c);
	ck_assert_int_eq(kvs_kvsim_set_cost(s, NULL), KV_EINVAL);
	{
		struct kvs_fastgen_stats fs;

		ck_assert_int_eq(kvs_fastgen_stats(s, &fs), KV_EINVAL);
	}
	kvs_free(s);
}
END_TEST

/* kvs_running_unused() against the loop over the public accessors. */
static uint64_t
unused_by_hand(kvs *s, uint32_t bs, uint64_t *slots)
{
	kvc *k = kvs_kv(s);
	uint64_t unused = 0, all = 0;

	for (uint32_t i = 0; i < kvs_queue_len(s, KVS_Q_RUNNING); i++) {
		int32_t seq = kvs_req_seq(s, kvs_queue_at(s, KVS_Q_RUNNING,
							  i));
		size_t nb = 0, len = kvc_seq_len(k, seq);

		(void)kvc_table(k, seq, 0, &nb);
		all += (uint64_t)nb * bs;
		if ((uint64_t)nb * bs > len)
			unused += (uint64_t)nb * bs - len;
	}
	*slots = all;
	return unused;
}

START_TEST(running_unused)
{
	static const char *const pol[] = { "vllm-v1", "vllm-v0", "kvsim" };
	static const kvc_mode mode[] = { KVC_VLLM_V1, KVC_VLLM_V0, KVC_EXACT };
	struct sc c;
	uint64_t slots, want_slots;
	kvs *s;

	sc_init(&c, pol[_i], mode[_i], 4, 128, 256);
	s = mk(&c);
	ck_assert_uint_eq(kvs_running_unused(s, 4, &slots), 0);
	ck_assert_uint_eq(slots, 0);
	req(s, 0, 5, 3);
	req(s, 100, 9, 6);
	req(s, 200, 16, 2);
	while (kvs_nunfinished(s) > 0) {
		const struct kvs_step *st;

		ck_assert_int_eq(kvs_step(s, &st), KV_OK);
		ck_assert_uint_eq(kvs_running_unused(s, 4, &slots),
				  unused_by_hand(s, 4, &want_slots));
		ck_assert_uint_eq(slots, want_slots);
		/* any block size, NULL for the slots */
		ck_assert_uint_eq(kvs_running_unused(s, 7, NULL),
				  unused_by_hand(s, 7, &want_slots));
	}
	ck_assert_uint_eq(kvs_running_unused(s, 4, &slots), 0);
	kvs_free(s);
}
END_TEST

/* The first step by hand: 5 tokens prefilled in 2 blocks of 4, plus one
 * generated token: 8 slots, 6 tokens. */
START_TEST(running_unused_v1)
{
	struct sc c;
	uint64_t slots;
	kvs *s;

	sc_init(&c, "vllm-v1", KVC_VLLM_V1, 4, 128, 256);
	s = mk(&c);
	req(s, 0, 5, 3);
	STEP(s, "sched=0:5");
	ck_assert_uint_eq(kvs_running_unused(s, 4, &slots), 2);
	ck_assert_uint_eq(slots, 8);
	kvs_free(s);
}
END_TEST

static Suite *
sched_policies_suite(void)
{
	Suite *s = suite_create("sched_policies");
	TCase *ts = tcase_create("sarathi"), *tf = tcase_create("fastgen");
	TCase *tk = tcase_create("kvsim");

	tcase_add_test(ts, sarathi_chunking);
	tcase_add_test(ts, sarathi_budget);
	tcase_add_test(ts, sarathi_preempt_order);
	tcase_add_test(ts, sarathi_lookahead);
	tcase_add_test(ts, sarathi_prefix_hits);
	tcase_add_test(ts, sarathi_hybrid_reserve);
	tcase_add_test(ts, sarathi_config);
	tcase_add_test(tf, fastgen_splitfuse);
	tcase_add_test(tf, fastgen_seq_limit);
	tcase_add_test(tf, fastgen_kv_limit);
	tcase_add_test(tf, fastgen_seed_bug);
	tcase_add_test(tf, fastgen_reset);
	tcase_add_test(tf, fastgen_reset_many);
	tcase_add_test(tf, fastgen_config);
	tcase_add_test(tk, kvsim_chunking);
	tcase_add_test(tk, kvsim_victim);
	tcase_add_test(tk, kvsim_swap);
	tcase_add_test(tk, kvsim_exact);
	tcase_add_test(tk, kvsim_lookahead);
	tcase_add_test(tk, kvsim_hybrid);
	tcase_add_test(tk, kvsim_priority);
	tcase_add_test(tk, kvsim_config);
	tcase_add_loop_test(tk, running_unused, 0, 3);
	tcase_add_test(tk, running_unused_v1);
	tcase_set_timeout(ts, 60);
	suite_add_tcase(s, ts);
	tcase_set_timeout(tf, 60);
	suite_add_tcase(s, tf);
	tcase_set_timeout(tk, 60);
	suite_add_tcase(s, tk);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(sched_policies_suite());
	int nf;

	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
