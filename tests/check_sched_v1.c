/*
 * check_sched_v1.c -- policy vllm-v1 (core/kvs_v1.c): vLLM v1's
 * Scheduler.schedule() over mode vllm-v1 (docs/replay.md R48-R58).
 *
 * Scenario cases run as small op scripts: requests are queued, steps run,
 * and each step's decisions are compared with a line derived by hand from
 * the reference's Python (the same form as `kvsim replay` prints, less the
 * step number).  After every operation kvs_audit() must pass, and every
 * step must keep the scheduler's own promises: the batch within the token
 * budget, at most max_num_seqs running, every running request with its
 * computed tokens covered by blocks, no request both scheduled and
 * preempted.  Then the configuration rules (R48, R49) and a seeded random
 * walk that checks the same promises on thousands of steps, plus request
 * conservation and that every request finishes once arrivals stop.
 */
#include "core/kvsched.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NREQ 12
#define MAXOP 48

enum op {
	O_END = 0,
	O_REQ,		/* request slot i: tokens a..a+n-1, output, priority */
	O_STEP,		/* want: "sched=A:4 preempt=B finish=A", or "" */
	O_ABORT,	/* rc: KV_OK or KV_ESTATE */
	O_TABLE,	/* want: "[1,2] [-,3]", one [] per group */
	O_FREEB		/* want: free count (the same in every group) */
};

struct op_line {
	enum op op;
	int i;
	uint32_t a, n, out;
	int32_t prio;
	kv_err rc;
	const char *want;
};

struct grp {
	const char *name;
	kvc_kind kind;
	uint32_t window;
};

/* A state group's block size: max_model_len when 0 (no Mamba prefix
 * caching: one block a request, as sizing gives it). */
static uint32_t state_bs;

struct scase {
	const char *name;
	uint32_t bs, gpu, mml;
	bool caching;
	struct grp g[3];
	/* scheduler keys, KVS_UNSET (-1) for the default; 0 means 0 */
	int64_t S, B, chunked, H, prio, L;
	struct op_line s[MAXOP];
};

#define REQ(I, A, N, O) { .op = O_REQ, .i = (I), .a = (A), .n = (N),       \
			  .out = (O) }
#define REQP(I, A, N, O, P) { .op = O_REQ, .i = (I), .a = (A), .n = (N),   \
			      .out = (O), .prio = (P) }
#define STEP(W) { .op = O_STEP, .want = (W) }
#define ABORT(I, R) { .op = O_ABORT, .i = (I), .rc = (R) }
#define TAB(I, W) { .op = O_TABLE, .i = (I), .want = (W) }
#define FREEB(W) { .op = O_FREEB, .want = (W) }
#define ATTN { { "attn", KVC_FULL, 0 } }
#define U KVS_UNSET

/* Request slot i prints as the letter 'A' + i. */
static const struct scase cases[] = {
	/* core-spec case 37, v1 form (the replay twin: c37-preempt-abort) */
	{ "c37 decode preemption, abort, re-prefill", 4, 3, 8, false, ATTN,
	  2, U, U, U, U, U, {
		REQ(0, 1, 4, 3), REQ(1, 5, 4, 3),
		STEP("sched=A:4,B:4"), TAB(0, "[1]"),
		STEP("sched=A:1 preempt=B"), TAB(0, "[1,2]"), TAB(1, "[]"),
		FREEB("0"),
		ABORT(0, KV_OK),
		STEP("sched=B:5"), TAB(1, "[2,1]"),
		ABORT(0, KV_ESTATE),
		STEP("sched=B:1 finish=B"), FREEB("2"),
	} },
	/* core-spec case 38: 60 + 4, then 1 + 56 = 57 */
	{ "c38 chunking", 4, 64, 128, false, ATTN, 4, 64, U, U, U, U, {
		REQ(0, 0, 60, 3), REQ(1, 100, 60, 2),
		STEP("sched=A:60,B:4"),
		STEP("sched=A:1,B:56"),
		TAB(0, "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,17]"),
		FREEB("32"),
		STEP("sched=A:1,B:1 finish=A,B"), FREEB("63"),
	} },
	/* core-spec case 39: v1 does not round chunks to blocks: 50 + 14 */
	{ "c39 chunking with prefix caching, hits", 4, 64, 128, true, ATTN,
	  8, 64, U, U, U, U, {
		REQ(0, 0, 50, 3), REQ(1, 1000, 50, 2),
		STEP("sched=A:50,B:14"),
		REQ(2, 0, 50, 2),
		STEP("sched=A:1,B:36,C:2"),
		TAB(2, "[1,2,3,4,5,6,7,8,9,10,11,12,27]"), FREEB("36"),
		REQ(3, 2000, 40, 1), REQ(4, 2000, 40, 2),
		STEP("sched=A:1,B:1,C:1,D:40,E:4 finish=A,B,C,D"),
		TAB(4, "[28,29,30,31,32,33,34,35,36,38]"), FREEB("53"),
		STEP("sched=E:1 finish=E"),
	} },
	/*
	 * core-spec case 40 asks that a budget be charged once and given
	 * back once.  v1's form: a priority victim already scheduled in the
	 * step returns its token to the budget, so Z gets 15, not 14.
	 */
	{ "c40 budget returned once by a scheduled victim", 4, 10, 32, false,
	  ATTN, 4, 16, U, U, 1, U, {
		REQP(0, 0, 16, 5, 9),
		STEP("sched=A:16"),
		REQP(1, 100, 8, 5, 0), REQP(2, 200, 22, 5, 1),
		STEP("sched=A:1,B:8,C:7"), FREEB("0"),
		STEP("sched=B:1,C:15 preempt=A"),
		TAB(1, "[6,7,5]"), TAB(2, "[8,9,4,3,2,1]"), TAB(0, "[]"),
	} },
	{ "chunked prefill off: skip, reverse re-queue", 4, 40, 32, false,
	  ATTN, 4, 32, 0, U, U, U, {
		REQ(0, 0, 20, 2), REQ(1, 100, 30, 1), REQ(2, 200, 25, 1),
		REQ(3, 300, 5, 2),
		STEP("sched=A:20,D:5"),
		STEP("sched=A:1,D:1,C:25 finish=A,D,C"),
		STEP("sched=B:30 finish=B"),
	} },
	{ "long prefill threshold", 4, 40, 64, false, ATTN,
	  U, U, U, 8, U, U, {
		REQ(0, 0, 20, 2), REQ(1, 100, 6, 1),
		STEP("sched=A:8,B:6 finish=B"),
		STEP("sched=A:8"),
		STEP("sched=A:4"), TAB(0, "[1,2,5,6,7]"),
		STEP("sched=A:1 finish=A"),
	} },
	{ "budget exhaustion, max_num_seqs", 4, 40, 32, false, ATTN,
	  2, 8, U, U, U, U, {
		REQ(0, 0, 30, 2), REQ(1, 100, 3, 2),
		STEP("sched=A:8"), STEP("sched=A:8"), STEP("sched=A:8"),
		STEP("sched=A:6,B:2"),
		STEP("sched=A:1,B:1 finish=A"),
		STEP("sched=B:1 finish=B"),
		REQ(2, 200, 2, 3), REQ(3, 300, 2, 3), REQ(4, 400, 2, 3),
		STEP("sched=C:2,D:2"),
	} },
	{ "preemption order: last first, re-entry reversed", 4, 5, 16, false,
	  ATTN, 4, U, U, U, U, U, {
		REQ(0, 1, 4, 3), REQ(1, 5, 4, 3), REQ(2, 9, 4, 3),
		REQ(3, 13, 4, 3),
		STEP("sched=A:4,B:4,C:4,D:4"),
		STEP("sched=A:1,B:1 preempt=D,C"),
		TAB(0, "[1,4]"), TAB(1, "[2,3]"), TAB(2, "[]"),
		STEP("sched=A:1,B:1 finish=A,B"),
		STEP("sched=C:5,D:5"), TAB(2, "[4,1]"), TAB(3, "[3,2]"),
		STEP("sched=C:1,D:1 finish=C,D"),
	} },
	{ "priority order and victim", 4, 5, 16, false, ATTN,
	  4, U, U, U, 1, U, {
		REQP(0, 1, 4, 10, 9),
		STEP("sched=A:4"),
		REQP(1, 11, 8, 2, 0),
		STEP("sched=A:1,B:8"),
		STEP("sched=B:1 preempt=A finish=B"),
		STEP("sched=A:6"), TAB(0, "[1,2]"),
		REQP(2, 21, 4, 1, 3), REQP(3, 31, 4, 1, 1),
		REQP(4, 41, 4, 1, 3),
		STEP("sched=A:1,D:4,C:4 finish=D,C"),
		STEP("sched=A:1,E:4 finish=E"),
	} },
	{ "hybrid full + sliding: one pool, summed need", 4, 16, 32, false,
	  { { "attn", KVC_FULL, 0 }, { "swa", KVC_SLIDING, 8 } },
	  4, 16, U, U, U, U, {
		REQ(0, 0, 16, 4), REQ(1, 100, 16, 4),
		STEP("sched=A:16"), TAB(0, "[1,2,3,4] [5,6,7,8]"),
		STEP("sched=A:1"), TAB(0, "[1,2,3,4,9] [-,-,7,8,10]"),
		FREEB("7"),
		STEP("sched=A:1"), STEP("sched=A:1 finish=A"),
		STEP("sched=B:16"), TAB(1, "[11,12,13,14] [15,6,5,9]"),
		STEP("sched=B:1"), TAB(1, "[11,12,13,14,4] [-,-,5,9,3]"),
	} },
	{ "lookahead slots force a preemption", 4, 5, 16, false, ATTN,
	  2, U, U, U, U, 2, {
		REQ(0, 1, 3, 4), REQ(1, 11, 4, 4),
		STEP("sched=A:3,B:4"),
		STEP("sched=A:1,B:1"), TAB(0, "[1,3]"),
		STEP("sched=A:1,B:1"),
		STEP("sched=A:1 preempt=B finish=A"),
		STEP("sched=B:7 finish=B"),
	} },
	{ "recompute after preemption hits its own cached blocks", 4, 5, 16,
	  true, ATTN, 2, U, U, U, U, U, {
		REQ(0, 1, 4, 3), REQ(1, 101, 12, 3),
		STEP("sched=A:4,B:12"),
		STEP("sched=A:1 preempt=B"),
		STEP("sched=A:1 finish=A"),
		STEP("sched=B:5"), TAB(1, "[2,3,4,1]"),
		STEP("sched=B:1 finish=B"),
	} },
	{ "finish at max_model_len, abort in each state", 4, 10, 8, false,
	  ATTN, U, U, U, U, U, U, {
		REQ(0, 0, 6, 10), REQ(1, 10, 3, 1),
		STEP("sched=A:6,B:3 finish=B"),
		ABORT(1, KV_ESTATE),
		STEP("sched=A:1 finish=A"), TAB(0, "[]"),
		STEP(""),
		REQ(2, 20, 4, 5), ABORT(2, KV_OK), TAB(2, "[]"),
		REQ(3, 30, 4, 5), STEP("sched=D:4"), ABORT(3, KV_OK),
		ABORT(3, KV_ESTATE), FREEB("9"),
	} },
};

/* ---- the interpreter ------------------------------------------------- */

static kvs *
sv_make(const struct scase *c, kv_err *err, char *why, size_t whylen)
{
	struct kvs_config sc;
	struct kvc_config kc;

	kvs_config_init(&sc);
	strcpy(sc.policy, "vllm-v1");
	sc.max_num_seqs = c->S;
	sc.max_num_batched_tokens = c->B;
	sc.chunked_prefill = c->chunked;
	sc.long_prefill_threshold = c->H;
	sc.priority = c->prio;
	sc.lookahead = c->L;
	kvc_config_default(&kc, KVC_VLLM_V1);
	kc.block_size = c->bs;
	kc.gpu_blocks = c->gpu;
	kc.max_model_len = c->mml;
	kc.prefix_caching = c->caching;
	for (uint32_t g = 0; g < 3 && c->g[g].name != NULL; g++) {
		strcpy(kc.group[g].name, c->g[g].name);
		kc.group[g].kind = c->g[g].kind;
		kc.group[g].window = c->g[g].window;
		if (c->g[g].kind == KVC_STATE)
			kc.group[g].block_size = state_bs ? state_bs : c->mml;
		kc.ngroups = g + 1;
	}
	return kvs_new(&sc, &kc, err, why, whylen);
}

static void
sv_audit_ok(const kvs *s, const char *name, int step)
{
	char why[512];
	int rc = kvs_audit(s, why, sizeof(why));

	ck_assert_msg(rc == 0, "%s, op %d: audit %d: %s", name, step, rc, why);
}

/*
 * A step's decisions as text, request r printed as 'A' + slot[r]; a
 * scheduled request's stale tokens (kvs_sched.stale) follow a '~'.
 */
static void
sv_format(const struct kvs_step *st, const int *slot, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < st->nsched; i++) {
		len += (size_t)snprintf(buf + len, n - len, "%s%c:%u",
					i ? "," : "sched=",
					'A' + slot[st->sched[i].req],
					st->sched[i].ntokens);
		if (st->sched[i].stale > 0)
			len += (size_t)snprintf(buf + len, n - len, "~%u",
						st->sched[i].stale);
	}
	for (uint32_t i = 0; i < st->npreempt; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%c",
					i ? "," : len ? " preempt=" :
					"preempt=", 'A' + slot[st->preempt[i]]);
	for (uint32_t i = 0; i < st->nfinish; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%c",
					i ? "," : len ? " finish=" : "finish=",
					'A' + slot[st->finish[i]]);
}

static void
sv_table(const kvs *s, kvs_req r, char *buf, size_t n)
{
	kvc *k = kvs_kv((kvs *)s);
	size_t len = 0;

	buf[0] = '\0';
	for (uint32_t g = 0; g < kvc_ngroups(k); g++) {
		size_t tn;
		const int32_t *id = kvc_table(k, kvs_req_seq(s, r), g, &tn);

		len += (size_t)snprintf(buf + len, n - len, "%s[",
					g ? " " : "");
		for (size_t i = 0; i < tn; i++) {
			if (id[i] == KVC_NULL)
				len += (size_t)snprintf(buf + len, n - len,
							"%s-", i ? "," : "");
			else
				len += (size_t)snprintf(buf + len, n - len,
							"%s%d", i ? "," : "",
							id[i]);
		}
		len += (size_t)snprintf(buf + len, n - len, "]");
	}
}

/*
 * The scheduler's promises after the first half of a step (before the
 * model output): budget, sequence limit, blocks covering every running
 * request's computed tokens, nobody both scheduled and preempted.
 */
static void
sv_check_schedule(kvs *s, const struct kvs_step *st, const char *name,
		  int step)
{
	const struct kvs_config *c = kvs_config_of(s);
	kvc *k = kvs_kv(s);
	uint64_t tok = 0;

	ck_assert_msg(st->nsched <= (uint64_t)c->max_num_seqs,
		      "%s %d: %u scheduled", name, step, st->nsched);
	ck_assert_uint_le(kvs_queue_len(s, KVS_Q_RUNNING),
			  (uint64_t)c->max_num_seqs);
	for (uint32_t i = 0; i < st->nsched; i++) {
		kvs_req r = st->sched[i].req;

		ck_assert_uint_gt(st->sched[i].ntokens, 0);
		tok += st->sched[i].ntokens;
		ck_assert_int_eq(kvs_req_status(s, r), KVS_RUNNING);
		for (uint32_t j = 0; j < st->npreempt; j++)
			ck_assert_int_ne(st->preempt[j], r);
		for (uint32_t j = 0; j < i; j++)
			ck_assert_int_ne(st->sched[j].req, r);
	}
	ck_assert_msg(tok <= (uint64_t)c->max_num_batched_tokens,
		      "%s %d: batch %llu over budget", name, step,
		      (unsigned long long)tok);
	ck_assert_uint_eq(st->batch_tokens, tok);
	for (uint32_t i = 0; i < kvs_queue_len(s, KVS_Q_RUNNING); i++) {
		kvs_req r = kvs_queue_at(s, KVS_Q_RUNNING, i);
		int32_t q = kvs_req_seq(s, r);
		size_t C = kvc_seq_computed(k, q), T = kvc_seq_len(k, q);

		ck_assert_msg(C > 0 && C <= T, "%s %d: C %zu T %zu", name,
			      step, C, T);
		for (uint32_t g = 0; g < kvc_ngroups(k); g++) {
			size_t tn;
			uint32_t bs = kvc_config_of(k)->ngroups &&
			    kvc_config_of(k)->group[g].block_size ?
			    kvc_config_of(k)->group[g].block_size :
			    kvc_config_of(k)->block_size;

			kvc_table(k, q, g, &tn);
			ck_assert_msg(tn * bs >= C, "%s %d: %zu blocks hold "
				      "fewer than %zu tokens", name, step, tn,
				      C);
		}
	}
	for (uint32_t i = 0; i < kvs_queue_len(s, KVS_Q_WAITING); i++)
		ck_assert_uint_eq(kvc_seq_computed(k, kvs_req_seq(s,
		    kvs_queue_at(s, KVS_Q_WAITING, i))), 0);
}

START_TEST(test_v1_cases)
{
	const struct scase *c = &cases[_i];
	char why[256], got[512];
	kv_err e;
	kvs *s = sv_make(c, &e, why, sizeof(why));
	kvs_req req[NREQ];
	int slot[NREQ];
	uint32_t tok[256];

	ck_assert_msg(s != NULL, "%s: %s", c->name, why);
	sv_audit_ok(s, c->name, -1);
	for (int i = 0; i < MAXOP && c->s[i].op != O_END; i++) {
		const struct op_line *o = &c->s[i];
		const struct kvs_step *st;

		switch (o->op) {
		case O_REQ:
			for (uint32_t j = 0; j < o->n; j++)
				tok[j] = o->a + j;
			ck_assert_int_eq(kvs_add(s, tok, o->n, o->out, o->prio,
						 &req[o->i]), KV_OK);
			slot[req[o->i]] = o->i;
			break;
		case O_STEP:
			ck_assert_int_eq(kvs_schedule(s, &st), KV_OK);
			sv_check_schedule(s, st, c->name, i);
			ck_assert_int_eq(kvs_complete(s, NULL, &st), KV_OK);
			sv_format(st, slot, got, sizeof(got));
			ck_assert_msg(strcmp(got, o->want) == 0,
				      "%s, op %d: got '%s', want '%s'",
				      c->name, i, got, o->want);
			break;
		case O_ABORT:
			ck_assert_int_eq(kvs_abort(s, req[o->i]), o->rc);
			break;
		case O_TABLE:
			sv_table(s, req[o->i], got, sizeof(got));
			ck_assert_msg(strcmp(got, o->want) == 0,
				      "%s, op %d: table '%s', want '%s'",
				      c->name, i, got, o->want);
			break;
		case O_FREEB: {
			kvc *k = kvs_kv(s);

			for (uint32_t g = 0; g < kvc_ngroups(k); g++) {
				snprintf(got, sizeof(got), "%u",
					 kvc_free_blocks(k, g));
				ck_assert_str_eq(got, o->want);
			}
			break;
		}
		case O_END:
			break;
		}
		sv_audit_ok(s, c->name, i);
	}
	kvs_free(s);
}
END_TEST

/* ---- configuration (R48, R49) --------------------------------------- */

static kv_err
sv_config(const struct scase *c, const char *need_in_why)
{
	char why[256] = "";
	kv_err e = KV_OK;
	kvs *s = sv_make(c, &e, why, sizeof(why));

	if (s != NULL) {
		kvs_free(s);
		return KV_OK;
	}
	if (need_in_why != NULL)
		ck_assert_msg(strstr(why, need_in_why) != NULL, "'%s' lacks "
			      "'%s'", why, need_in_why);
	return e;
}

START_TEST(test_v1_config)
{
	struct scase c = { "config", 16, 513, 8192, false, ATTN,
			   U, U, U, U, U, U, { { 0 } } };
	struct kvs_config sc;
	struct kvc_config kc;
	const struct kvs_config *r;
	char why[256];
	kv_err e;
	kvs *s;

	/* Defaults (R48). */
	s = sv_make(&c, &e, why, sizeof(why));
	ck_assert_ptr_nonnull(s);
	r = kvs_config_of(s);
	ck_assert_int_eq(r->max_num_seqs, 128);
	ck_assert_int_eq(r->max_num_batched_tokens, 2048);
	ck_assert_int_eq(r->chunked_prefill, 1);
	ck_assert_int_eq(r->long_prefill_threshold, 0);
	ck_assert_int_eq(r->preemption, 0);
	ck_assert_int_eq(r->priority, 0);
	ck_assert_int_eq(r->lookahead, 0);
	ck_assert_str_eq(kvs_policy_name(s), "vllm-v1");
	ck_assert_int_eq(kvc_config_of(kvs_kv(s))->mode, KVC_VLLM_V1);
	kvs_free(s);

	/* One max_model_len request must fit the G - 1 usable blocks. */
	c.gpu = 512;
	ck_assert_int_eq(sv_config(&c, "needs 512 blocks, but only 511"),
			 KV_ECONFIG);
	c.gpu = 513;
	/* B >= S; B >= mml without chunking. */
	c.B = 64;
	c.S = 65;
	ck_assert_int_eq(sv_config(&c, "max_num_seqs (65)"), KV_ECONFIG);
	c.S = 64;
	ck_assert_int_eq(sv_config(&c, NULL), KV_OK);
	c.chunked = 0;
	ck_assert_int_eq(sv_config(&c, "smaller than max_model_len"),
			 KV_ECONFIG);
	c.B = 8192;
	ck_assert_int_eq(sv_config(&c, NULL), KV_OK);
	c.chunked = U;
	c.S = 0;
	ck_assert_int_eq(sv_config(&c, "max_num_seqs"), KV_ECONFIG);
	c.S = U;
	c.B = 0;
	ck_assert_int_eq(sv_config(&c, "max_num_batched_tokens"),
			 KV_ECONFIG);
	c.B = U;

	/* A sliding group needs cdiv(min(W - 1 + B, mml), bs) + 1. */
	{
		struct scase h = { "hybrid", 4, 16, 32, false,
		  { { "attn", KVC_FULL, 0 }, { "swa", KVC_SLIDING, 8 } },
		  4, 16, U, U, U, U, { { 0 } } };

		ck_assert_int_eq(sv_config(&h, NULL), KV_OK);
		h.gpu = 15;
		ck_assert_int_eq(sv_config(&h, "needs 15 blocks"), KV_ECONFIG);
		/* A Mamba state group needs a page a block of max_model_len
		 * (MambaSpec): with its block max_model_len, one page
		 * whatever the length, 8 + 1 blocks, the null block
		 * apart ... */
		h.g[1].kind = KVC_STATE;
		h.g[1].window = 0;
		h.gpu = 10;
		ck_assert_int_eq(sv_config(&h, NULL), KV_OK);
		h.gpu = 9;
		ck_assert_int_eq(sv_config(&h, "needs 9 blocks"), KV_ECONFIG);
		/* ... with a smaller block (Mamba prefix caching) the
		 * allocator holds one a block: 8 + 2 */
		state_bs = 16;
		h.gpu = 11;
		ck_assert_int_eq(sv_config(&h, NULL), KV_OK);
		h.gpu = 10;
		ck_assert_int_eq(sv_config(&h, "needs 10 blocks"),
				 KV_ECONFIG);
		state_bs = 0;
	}

	/* What v1 does not have. */
	kvs_config_init(&sc);
	strcpy(sc.policy, "vllm-v1");
	kvc_config_default(&kc, KVC_EXACT);
	kc.gpu_blocks = 1000;
	sc.preemption = 1;
	s = kvs_new(&sc, &kc, &e, why, sizeof(why));
	ck_assert_ptr_null(s);
	ck_assert_int_eq(e, KV_ECONFIG);
	ck_assert_ptr_nonnull(strstr(why, "no swap"));
	sc.preemption = 0;
	sc.chunk_size = 64;
	ck_assert_ptr_null(kvs_new(&sc, &kc, &e, why, sizeof(why)));
	ck_assert_ptr_nonnull(strstr(why, "chunk_size"));
	sc.chunk_size = KVS_UNSET;
	/* KVC_EXACT left as the default becomes the policy's mode ... */
	s = kvs_new(&sc, &kc, &e, why, sizeof(why));
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(kvc_config_of(kvs_kv(s))->mode, KVC_VLLM_V1);
	kvs_free(s);
	/* ... any other mode is refused. */
	kc.mode = KVC_VLLM_V0;
	ck_assert_ptr_null(kvs_new(&sc, &kc, &e, why, sizeof(why)));
	ck_assert_int_eq(e, KV_ECONFIG);
	/* v1 has no CPU pool (R11). */
	kc.mode = KVC_VLLM_V1;
	kc.cpu_blocks = 4;
	ck_assert_ptr_null(kvs_new(&sc, &kc, &e, why, sizeof(why)));
}
END_TEST

START_TEST(test_v1_misuse)
{
	struct scase c = { "misuse", 4, 40, 16, false, ATTN,
			   U, U, U, U, U, U, { { 0 } } };
	char why[256];
	kv_err e;
	kvs *s = sv_make(&c, &e, why, sizeof(why));
	uint32_t tok[16] = { 0 };
	const struct kvs_step *st;
	kvs_req r;

	ck_assert_ptr_nonnull(s);
	/* no room for an output token: refused as input processing does */
	ck_assert_int_eq(kvs_add(s, tok, 16, 1, 0, &r), KV_OK);
	ck_assert_int_eq(kvs_req_status(s, r), KVS_IGNORED);
	ck_assert_uint_eq(kvs_nunfinished(s), 0);
	ck_assert_int_eq(kvs_add(s, tok, 4, 0, 0, &r), KV_EINVAL);
	ck_assert_uint_eq(kvs_nreqs(s), 1);
	ck_assert_int_eq(kvs_add(s, tok, 15, 1, 0, &r), KV_OK);
	ck_assert_int_eq(kvs_schedule(s, &st), KV_OK);
	/* The second half must come before the next step or an abort. */
	ck_assert_int_eq(kvs_schedule(s, &st), KV_ESTATE);
	ck_assert_int_eq(kvs_abort(s, r), KV_ESTATE);
	ck_assert_int_eq(kvs_complete(s, NULL, &st), KV_OK);
	ck_assert_uint_eq(st->nfinish, 1);
	ck_assert_int_eq(kvs_complete(s, NULL, &st), KV_ESTATE);
	ck_assert_int_eq(kvs_abort(s, r), KV_ESTATE);
	ck_assert_int_eq(kvs_abort(s, 99), KV_ENOENT);
	sv_audit_ok(s, "misuse", 0);
	kvs_free(s);
}
END_TEST

/* ---- stale prefix-cache tokens (kvs_sched.stale) ------------------------ */

/* One step of s, its decisions compared with want, the audit passed. */
static void
sv_step(kvs *s, const int *slot, const char *want, const char *name)
{
	const struct kvs_step *st;
	char got[512];

	ck_assert_int_eq(kvs_schedule(s, &st), KV_OK);
	ck_assert_int_eq(kvs_complete(s, NULL, &st), KV_OK);
	sv_format(st, slot, got, sizeof(got));
	ck_assert_msg(strcmp(got, want) == 0, "%s: got '%s', want '%s'",
		      name, got, want);
	sv_audit_ok(s, name, 0);
}

/* Steps until nobody waits or runs; every stale count must be `stale`. */
static void
sv_drain(kvs *s, const char *name, uint32_t stale)
{
	const struct kvs_step *st;

	while (kvs_queue_len(s, KVS_Q_RUNNING) +
	       kvs_queue_len(s, KVS_Q_WAITING) > 0) {
		ck_assert_int_eq(kvs_schedule(s, &st), KV_OK);
		for (uint32_t i = 0; i < st->nsched; i++)
			ck_assert_uint_eq(st->sched[i].stale, stale);
		ck_assert_int_eq(kvs_complete(s, NULL, &st), KV_OK);
		sv_audit_ok(s, name, 1);
	}
}

static void
sv_add(kvs *s, const uint32_t *tok, uint32_t n, uint32_t out, int32_t prio,
       int *slot, int i)
{
	kvs_req r;

	ck_assert_int_eq(kvs_add(s, tok, n, out, prio, &r), KV_OK);
	slot[r] = i;
}

/*
 * Priority scheduling withdraws V's decode of position 3 in the step that
 * cached block 1 for it (tests/replay/sched-v1/priority-withdrawn-cached):
 * Y's hit on block 1 takes position 3, which nobody computed -- 1 stale
 * token.  Under fcfs the same requests run without one.  Once block 1 is
 * reused for other content, a hit on it is sound again.
 */
START_TEST(test_v1_stale_withdrawn)
{
	struct scase c = { "withdrawn", 4, 5, 16, true, ATTN,
			   4, 8, U, U, 1, U, { { 0 } } };
	static const uint32_t v[] = { 100, 101 }, o[] = { 200, 201, 202, 203 },
	    y[] = { 100, 101, 1000002, 1000003, 300, 301, 302, 303, 304, 305 };
	uint32_t z[13];
	char why[256];
	int slot[NREQ];
	kv_err e;
	kvs *s;
	kvc *cl;

	for (int fcfs = 0; fcfs < 2; fcfs++) {
		c.prio = fcfs ? 0 : 1;
		s = sv_make(&c, &e, why, sizeof(why));
		ck_assert_msg(s != NULL, "%s", why);
		sv_add(s, v, 2, 8, 9, slot, 0);
		sv_step(s, slot, "sched=A:2", c.name);
		sv_add(s, o, 4, 2, 0, slot, 1);
		sv_add(s, y, 10, 2, 1, slot, 2);
		sv_step(s, slot, "sched=A:1,B:4,C:3", c.name);
		if (fcfs) {
			/* the last running request goes, never one already
			 * scheduled: no step takes a stale token */
			sv_step(s, slot, "sched=A:1,B:1 preempt=C finish=B",
				c.name);
			sv_drain(s, c.name, 0);
			kvs_free(s);
			continue;
		}
		sv_step(s, slot, "sched=B:1 preempt=A,C finish=B", c.name);
		sv_step(s, slot, "sched=C:6~1,A:2", c.name);
		/* the mark goes with a clone */
		cl = kvc_clone(kvs_kv(s));
		ck_assert_ptr_nonnull(cl);
		ck_assert_int_eq(kvc_audit(cl, why, sizeof(why)), 0);
		kvc_free(cl);
		sv_drain(s, c.name, 0);
		/* new tokens take block 1 for other content: sound again */
		for (uint32_t j = 0; j < 13; j++)
			z[j] = 500 + j;
		sv_add(s, z, 12, 1, 0, slot, 3);
		sv_step(s, slot, "sched=D:8", c.name);
		sv_table(s, 3, why, sizeof(why));
		ck_assert_str_eq(why, "[1,3]");
		sv_step(s, slot, "sched=D:4 finish=D", c.name);
		sv_add(s, z, 13, 1, 0, slot, 4);
		sv_step(s, slot, "sched=E:1 finish=E", c.name);
		kvs_free(s);
	}
}
END_TEST

/*
 * vLLM v1 with Mamba prefix caching (tests/replay/sched-v1/
 * same-step-state-hit*): B's 12-token hit ends on the state block A's
 * chunk caches in the same step, whose state that step writes after B
 * reads it -- all 12 tokens are stale, B holding no earlier state.  With
 * defer_same_step_state_hits B waits a step and reads a written state.
 */
START_TEST(test_v1_stale_same_step)
{
	struct scase c = { "same step", 4, 40, 32, true,
			   { { "m", KVC_STATE, 0 }, { "attn", KVC_FULL, 0 } },
			   U, U, U, U, U, U, { { 0 } } };
	uint32_t a[13], cc[] = { 200, 201, 202 };
	char why[256];
	int slot[NREQ];
	kv_err e;
	kvs *s;

	for (uint32_t j = 0; j < 12; j++)
		a[j] = j;
	a[12] = 100;
	state_bs = 4;
	for (int defer = 0; defer < 2; defer++) {
		struct kvs_config sc;
		struct kvc_config kc;

		kvs_config_init(&sc);
		strcpy(sc.policy, "vllm-v1");
		kvc_config_default(&kc, KVC_VLLM_V1);
		kc.block_size = 4;
		kc.gpu_blocks = 40;
		kc.max_model_len = 32;
		kc.prefix_caching = true;
		kc.ngroups = 2;
		strcpy(kc.group[0].name, "m");
		kc.group[0].kind = KVC_STATE;
		kc.group[0].block_size = 4;
		strcpy(kc.group[1].name, "attn");
		kc.group[1].kind = KVC_FULL;
		kc.defer_same_step_state_hits = defer;
		s = kvs_new(&sc, &kc, &e, why, sizeof(why));
		ck_assert_msg(s != NULL, "%s", why);
		sv_add(s, a, 12, 2, 0, slot, 0);
		sv_add(s, a, 13, 2, 0, slot, 1);
		sv_add(s, cc, 3, 2, 0, slot, 2);
		if (defer) {
			sv_step(s, slot, "sched=A:12", c.name);
			sv_step(s, slot, "sched=A:1,B:1,C:3 finish=A", c.name);
		} else {
			sv_step(s, slot, "sched=A:12,B:1~12,C:3", c.name);
			sv_step(s, slot, "sched=A:1,B:1,C:1 finish=A,B,C",
				c.name);
		}
		kvs_free(s);
	}
	state_bs = 0;
}
END_TEST

/* ---- random walk -------------------------------------------------------- */

static uint64_t
sv_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static const struct scase walks[] = {
	{ "walk fcfs", 4, 40, 64, false, ATTN, 8, 64, U, U, U, U, { { 0 } } },
	{ "walk fcfs caching", 4, 40, 64, true, ATTN, 8, 48, U, U, U, U,
	  { { 0 } } },
	{ "walk no chunking", 4, 40, 64, true, ATTN, 8, 64, 0, U, U, U,
	  { { 0 } } },
	{ "walk threshold", 2, 70, 64, true, ATTN, 6, 40, U, 7, U, U,
	  { { 0 } } },
	{ "walk priority", 4, 40, 64, true, ATTN, 8, 32, U, U, 1, U,
	  { { 0 } } },
	{ "walk priority lookahead", 4, 40, 64, false, ATTN, 8, 32, U, U, 1,
	  3, { { 0 } } },
	{ "walk hybrid", 4, 60, 64, true,
	  { { "attn", KVC_FULL, 0 }, { "swa", KVC_SLIDING, 10 } },
	  8, 32, U, U, U, U, { { 0 } } },
	{ "walk hybrid tight", 4, 32, 64, false,
	  { { "swa", KVC_SLIDING, 6 }, { "attn", KVC_FULL, 0 } },
	  4, 16, U, 5, U, 1, { { 0 } } },
};

/*
 * Episodes of EPISODE steps on a fresh scheduler (kvc_audit() rehashes
 * every request's tokens, so a scheduler that lives for the whole walk
 * would make the audit quadratic), WALK_STEPS steps in all per walk.
 */
#define WALK_STEPS 15000
#define EPISODE 1500

static uint64_t
sv_episode(const struct scase *c, uint64_t *rng, int first)
{
	char why[256];
	kv_err e;
	kvs *s = sv_make(c, &e, why, sizeof(why));
	uint32_t tok[64], ended = 0, mml = c->mml;
	const struct kvs_step *st;
	uint64_t drain = 0, preempted = 0;

	ck_assert_msg(s != NULL, "%s: %s", c->name, why);
	for (int step = first; step < first + EPISODE; step++) {
		uint32_t r = (uint32_t)sv_rand(rng);
		uint32_t nfin = 0, nab = 0;

		if (r % 4 == 0 && kvs_nunfinished(s) < 24) {
			/* prompts from a few shared prefixes */
			uint32_t len = 1 + (uint32_t)(sv_rand(rng) %
						      (mml - 1));
			uint32_t base = (uint32_t)(sv_rand(rng) % 3) * 1000;
			kvs_req q;

			for (uint32_t i = 0; i < len; i++)
				tok[i] = base + (i < len / 2 ? i : i + r % 5);
			ck_assert_int_eq(kvs_add(s, tok, len,
						 1 + (r >> 8) % 24,
						 (int32_t)((r >> 16) % 4),
						 &q), KV_OK);
		}
		if (r % 37 == 1 && kvs_nreqs(s) > 0) {
			kvs_req q = (kvs_req)((r >> 8) % kvs_nreqs(s));
			kvs_status was = kvs_req_status(s, q);

			e = kvs_abort(s, q);
			ck_assert_int_eq(e, was == KVS_FINISHED ||
					 was == KVS_ABORTED ? KV_ESTATE :
					 KV_OK);
		}
		ck_assert_int_eq(kvs_schedule(s, &st), KV_OK);
		sv_check_schedule(s, st, c->name, step);
		preempted += st->npreempt;
		if (kvs_nunfinished(s) > 0)
			ck_assert_msg(st->nsched + st->npreempt > 0,
				      "%s %d: no progress", c->name, step);
		ck_assert_int_eq(kvs_complete(s, NULL, &st), KV_OK);
		for (uint32_t i = 0; i < st->nfinish; i++)
			ck_assert_int_eq(kvs_req_status(s, st->finish[i]),
					 KVS_FINISHED);
		/* conservation: every request queued once, or ended */
		for (uint32_t q = 0; q < kvs_nreqs(s); q++) {
			kvs_status x = kvs_req_status(s, (kvs_req)q);

			nfin += x == KVS_FINISHED;
			nab += x == KVS_ABORTED;
		}
		ck_assert_uint_eq(nfin + nab + kvs_nunfinished(s),
				  kvs_nreqs(s));
		ck_assert_uint_eq(kvs_queue_len(s, KVS_Q_WAITING) +
				  kvs_queue_len(s, KVS_Q_RUNNING),
				  kvs_nunfinished(s));
		ck_assert_uint_eq(kvs_queue_len(s, KVS_Q_SWAPPED), 0);
		ck_assert_uint_ge(nfin + nab, ended);
		ended = nfin + nab;
		sv_audit_ok(s, c->name, step);
	}
	/* No starvation: with arrivals stopped everything finishes. */
	while (kvs_nunfinished(s) > 0) {
		ck_assert_int_eq(kvs_step(s, &st), KV_OK);
		ck_assert_msg(++drain < 100000, "%s: does not drain",
			      c->name);
	}
	sv_audit_ok(s, c->name, first + EPISODE);
	ck_assert_uint_eq(kvc_free_blocks(kvs_kv(s), 0), c->gpu - 1);
	kvs_free(s);
	return preempted;
}

START_TEST(test_v1_walk)
{
	uint64_t rng = 0x2545f4914f6cdd1dull * (uint64_t)(_i + 1);
	uint64_t preempted = 0;

	for (int first = 0; first < WALK_STEPS; first += EPISODE)
		preempted += sv_episode(&walks[_i], &rng, first);
	/* the walks are sized to run out of blocks */
	ck_assert_msg(preempted > 100, "%s: only %llu preemptions",
		      walks[_i].name, (unsigned long long)preempted);
}
END_TEST

Suite *
sched_v1_suite(void)
{
	Suite *s = suite_create("policy vllm-v1");
	TCase *tc = tcase_create("cases");

	tcase_add_loop_test(tc, test_v1_cases, 0,
			    (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, test_v1_config);
	tcase_add_test(tc, test_v1_misuse);
	tcase_add_test(tc, test_v1_stale_withdrawn);
	tcase_add_test(tc, test_v1_stale_same_step);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tc = tcase_create("walk");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_v1_walk, 0,
			    (int)(sizeof(walks) / sizeof(walks[0])));
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(sched_v1_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
