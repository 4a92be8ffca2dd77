/*
 * check_sched_v0.c -- policy vllm-v0 (core/kvs_v0.c): vLLM v0's Scheduler
 * over mode vllm-v0 (docs/replay.md R59-R72).
 *
 * Scenario cases run as small op scripts: requests are queued, steps run,
 * and each step's decisions are compared with a line derived by hand from
 * the reference's Python (the form `kvsim replay` prints, less the step
 * number): scheduled requests and their token counts, victims, finished
 * requests and the swap-out, swap-in and copy-on-write pairs.  Tables and
 * free counts are checked where a case says so.  After every operation
 * kvs_audit() must pass, and every step must keep the scheduler's
 * promises: at most max_num_seqs scheduled and running, the batch within
 * the token budget when no prefix is cached (v0 charges only uncached
 * tokens), no request both scheduled and preempted.  The tests/replay/
 * sched-v0 scripts run the same scenarios through `kvsim replay`.  Then
 * the configuration rules (R59 defaults, R60 checks).  The randomized
 * invariant walk over every policy is check_sched_stress.
 */
#include "core/kvsched.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NREQ 8
#define MAXOP 40

enum op {
	O_END = 0,
	O_REQ,		/* request slot i: tokens a..a+n-1, output */
	O_STEP,		/* want: "sched=A:4 preempt=B ..." ("" = nothing) */
	O_ABORT,	/* rc: KV_OK or KV_ESTATE */
	O_TABLE,	/* want: "[1,2]" */
	O_FREEB		/* want: "gpu cpu" */
};

struct op_line {
	enum op op;
	int i;
	uint32_t a, n, out;
	kv_err rc;
	const char *want;
};

struct scase {
	const char *name;
	uint32_t bs, gpu, cpu, mml;
	bool caching;
	/* scheduler keys, KVS_UNSET (-1) for the default */
	int64_t S, B, chunked, swap, L;
	struct op_line s[MAXOP];
};

#define REQ(I, A, N, O) { .op = O_REQ, .i = (I), .a = (A), .n = (N),       \
			  .out = (O) }
#define STEP(W) { .op = O_STEP, .want = (W) }
#define ABORT(I, R) { .op = O_ABORT, .i = (I), .rc = (R) }
#define TAB(I, W) { .op = O_TABLE, .i = (I), .want = (W) }
#define FREEB(W) { .op = O_FREEB, .want = (W) }
#define U KVS_UNSET

/* Request slot i prints as the letter 'A' + i. */
static const struct scase cases[] = {
	/*
	 * core-spec case 37, v0 form: A's decode takes the last block; B,
	 * with nobody behind it, preempts itself (recompute); after A is
	 * aborted B re-prefills prompt + its generated token on A's blocks.
	 */
	{ "c37 decode preemption, abort, re-prefill", 4, 5, 0, 12, false,
	  2, U, U, U, U, {
		REQ(0, 0, 8, 3), REQ(1, 100, 8, 3),
		STEP("sched=A:8,B:8"),
		STEP("sched=A:1 preempt=B"), TAB(0, "[0,1,4]"), TAB(1, "[]"),
		FREEB("2 0"),
		ABORT(0, KV_OK),
		STEP("sched=B:9"), TAB(1, "[4,1,0]"),
		ABORT(0, KV_ESTATE),
		STEP("sched=B:1 finish=B"), FREEB("5 0"),
	} },
	/* core-spec case 38: 60 + 4, then 56 + 1 (prefills first) */
	{ "c38 chunking", 4, 40, 0, 64, false, 4, 64, 1, U, U, {
		REQ(0, 0, 60, 2), REQ(1, 100, 60, 2),
		STEP("sched=A:60,B:4"),
		STEP("sched=B:56,A:1 finish=A"),
		STEP("sched=B:1 finish=B"), FREEB("40 0"),
	} },
	/* core-spec case 39: with caching the chunk is 12, not 14 */
	{ "c39 chunking with prefix caching", 4, 40, 0, 64, true,
	  4, 64, 1, U, U, {
		REQ(0, 0, 50, 2), REQ(1, 100, 50, 2),
		STEP("sched=A:50,B:12"),
		STEP("sched=B:38,A:1 finish=A"),
		STEP("sched=B:1 finish=B"),
	} },
	/*
	 * core-spec case 40, v0 form: the sequence budget counts a request
	 * once; A (running, counted before the step) decodes and the swapped
	 * B still fits max_num_seqs 2 in the same step.
	 */
	{ "c40 budget by request: decode and swap-in", 4, 5, 8, 12, false,
	  2, U, U, 1, U, {
		REQ(0, 0, 4, 7), REQ(1, 10, 8, 3),
		STEP("sched=A:4,B:8"),
		STEP("sched=A:1,B:1"),
		STEP("sched=A:1 preempt=B swap_out=1>0,2>1,4>2"),
		TAB(1, "[0,1,2]"), FREEB("3 5"),
		STEP("sched=A:1,B:1 finish=B swap_in=0>4,1>2,2>1"),
		STEP("sched=A:1"), STEP("sched=A:1"),
		STEP("sched=A:1 finish=A"), FREEB("5 8"),
	} },
	/*
	 * Prefix hits reduce the charged tokens: B computes 28 but is
	 * charged 4, so C's 10 fit the 32-token budget beside it.
	 */
	{ "prefix hits charge less", 4, 20, 0, 32, true, 4, 32, U, U, U, {
		REQ(0, 0, 24, 1),
		STEP("sched=A:24 finish=A"), FREEB("20 0"),
		REQ(1, 0, 28, 1), REQ(2, 100, 10, 1),
		STEP("sched=B:28,C:10 finish=B,C"), FREEB("20 0"),
	} },
	/* the same without caching: C waits for the next step */
	{ "no prefix caching, no discount", 4, 20, 0, 32, false,
	  4, 32, U, U, U, {
		REQ(0, 0, 24, 1),
		STEP("sched=A:24 finish=A"),
		REQ(1, 0, 28, 1), REQ(2, 100, 10, 1),
		STEP("sched=B:28 finish=B"),
		STEP("sched=C:10 finish=C"),
	} },
	/*
	 * Budget exhaustion without chunking: B does not fit beside A; a
	 * prefill step runs no decode; C waits while 2 requests run.
	 */
	{ "budget exhaustion, max_num_seqs", 4, 20, 0, 16, false,
	  2, 16, U, U, U, {
		REQ(0, 0, 10, 2), REQ(1, 100, 10, 2), REQ(2, 200, 4, 1),
		STEP("sched=A:10"),
		STEP("sched=B:10"),
		STEP("sched=A:1,B:1 finish=A,B"),
		STEP("sched=C:4 finish=C"),
	} },
	/*
	 * Preemption order: the victim is the last running request.  B
	 * preempts C, then A preempts B; they come back B first.
	 */
	{ "preemption order, recompute", 4, 4, 0, 8, false,
	  4, U, U, U, U, {
		REQ(0, 0, 4, 3), REQ(1, 10, 4, 3), REQ(2, 20, 4, 3),
		STEP("sched=A:4,B:4,C:4"),
		STEP("sched=A:1,B:1 preempt=C"),
		TAB(0, "[0,3]"), TAB(1, "[1,2]"), TAB(2, "[]"),
		STEP("sched=A:1 preempt=B finish=A"),
		TAB(0, "[]"), FREEB("4 0"),
		STEP("sched=B:6,C:5 finish=B"),
		TAB(1, "[]"), TAB(2, "[2,1]"),
		STEP("sched=C:1 finish=C"),
	} },
	/*
	 * The same with swap: victims go to the CPU, and the swapped queue
	 * is served before D's prefill, which then runs alone.
	 */
	{ "preemption swap, swapped resume first", 4, 4, 8, 8, false,
	  4, U, U, 1, U, {
		REQ(0, 0, 4, 3), REQ(1, 10, 4, 3), REQ(2, 20, 4, 3),
		STEP("sched=A:4,B:4,C:4"),
		STEP("sched=A:1,B:1 preempt=C swap_out=2>0"),
		TAB(2, "[0]"), FREEB("0 7"),
		STEP("sched=A:1 preempt=B finish=A swap_out=1>1,2>2"),
		TAB(1, "[1,2]"),
		REQ(3, 30, 4, 1),
		STEP("sched=C:1,B:1 finish=B swap_in=0>3,1>2,2>1"),
		TAB(2, "[3,0]"),
		STEP("sched=D:4 finish=D"),
		STEP("sched=C:1 finish=C"), FREEB("4 8"),
	} },
	/*
	 * Swap without room on the CPU is the reference's RuntimeError
	 * (R65, R72); kvsim recomputes the victim instead.
	 */
	{ "swap without CPU room falls back to recompute", 4, 4, 1, 8, false,
	  4, U, U, 1, U, {
		REQ(0, 0, 4, 3), REQ(1, 10, 4, 3), REQ(2, 20, 4, 3),
		STEP("sched=A:4,B:4,C:4"),
		STEP("sched=A:1,B:1 preempt=C"), FREEB("0 1"),
		STEP("sched=A:1 preempt=B finish=A"),
		STEP("sched=B:6,C:5 finish=B"),
		STEP("sched=C:1 finish=C"),
	} },
	/* lookahead 3: reserved slots make B preempt itself on step 3 */
	{ "lookahead forces preemption", 4, 6, 0, 8, false, 4, U, U, U, 3, {
		REQ(0, 0, 4, 3), REQ(1, 10, 4, 3),
		STEP("sched=A:4,B:4"),
		STEP("sched=A:1,B:1"), TAB(0, "[0,2]"), TAB(1, "[1,3]"),
		FREEB("2 0"),
		STEP("sched=A:1 preempt=B finish=A"),
		STEP("sched=B:6 finish=B"),
	} },
	{ "lookahead 0: no preemption", 4, 6, 0, 8, false, 4, U, U, U, 0, {
		REQ(0, 0, 4, 3), REQ(1, 10, 4, 3),
		STEP("sched=A:4,B:4"),
		STEP("sched=A:1,B:1"), TAB(0, "[0,2]"), TAB(1, "[1,3]"),
		STEP("sched=A:1,B:1 finish=A,B"),
	} },
	/*
	 * Chunked prefill and swap: A's decode preempts B mid-prefill; B
	 * swaps back in for its whole remainder, listed before A's decode;
	 * then B, first in running, preempts A.
	 */
	{ "chunked prefill, swapped prefill", 4, 9, 8, 28, false,
	  4, 8, 1, 1, U, {
		REQ(0, 0, 16, 10), REQ(1, 100, 13, 2),
		STEP("sched=A:8"), STEP("sched=A:8"),
		STEP("sched=B:7,A:1"), TAB(1, "[5,6,7,8]"),
		STEP("sched=A:1 preempt=B swap_out=5>0,6>1,7>2,8>3"),
		FREEB("4 4"),
		STEP("sched=B:6,A:1 swap_in=0>8,1>7,2>6,3>5"),
		STEP("sched=B:1 preempt=A finish=B "
		     "swap_out=0>3,1>2,2>1,3>0,4>4"),
		STEP("sched=A:1 swap_in=3>5,2>6,1>7,0>8,4>4"),
		STEP("sched=A:1"), STEP("sched=A:1"), STEP("sched=A:1"),
		STEP("sched=A:1"), STEP("sched=A:1 finish=A"),
	} },
	/* caching rounds the budget left to blocks for decodes too */
	{ "chunked prefill, caching, decode rounding", 4, 20, 0, 16, true,
	  4, 6, 1, U, U, {
		REQ(0, 0, 1, 2), REQ(1, 1, 1, 3), REQ(2, 2, 1, 4),
		REQ(3, 3, 1, 2),
		STEP("sched=A:1,B:1,C:1"),
		STEP("sched=A:1,B:1,C:1 finish=A"),
		STEP("sched=D:1,B:1,C:1 finish=B"),
		STEP("sched=C:1,D:1 finish=C,D"),
	} },
	/* abort in every queue; an ended request answers fail */
	{ "abort in each queue", 4, 4, 8, 8, false, 4, U, U, 1, U, {
		REQ(0, 0, 4, 3), REQ(1, 10, 4, 3), REQ(2, 20, 4, 3),
		STEP("sched=A:4,B:4,C:4"),
		STEP("sched=A:1,B:1 preempt=C swap_out=2>0"),
		REQ(3, 30, 4, 1),
		ABORT(3, KV_OK),	/* waiting */
		ABORT(2, KV_OK),	/* swapped */
		TAB(2, "[]"), FREEB("0 8"),
		ABORT(0, KV_OK),	/* running */
		ABORT(0, KV_ESTATE), FREEB("2 8"),
		STEP("sched=B:1 finish=B"),
		ABORT(1, KV_ESTATE),	/* finished */
		FREEB("4 8"),
	} },
};

static kvs *
make(const struct scase *c, char *why, size_t whylen)
{
	struct kvs_config sc;
	struct kvc_config kc;
	kv_err e;

	kvs_config_init(&sc);
	snprintf(sc.policy, sizeof(sc.policy), "vllm-v0");
	sc.max_num_seqs = c->S;
	sc.max_num_batched_tokens = c->B;
	sc.chunked_prefill = c->chunked;
	sc.preemption = c->swap;
	sc.lookahead = c->L;
	kvc_config_default(&kc, KVC_VLLM_V0);
	kc.block_size = c->bs;
	kc.gpu_blocks = c->gpu;
	kc.cpu_blocks = c->cpu;
	kc.max_model_len = c->mml;
	kc.prefix_caching = c->caching;
	return kvs_new(&sc, &kc, &e, why, whylen);
}

static void
cat_pairs(char *buf, size_t len, const char *key,
	  const struct kvc_pair *p, uint32_t n)
{
	size_t o = strlen(buf);

	if (n == 0)
		return;
	o += (size_t)snprintf(buf + o, len - o, "%s%s=", o ? " " : "", key);
	for (uint32_t i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%d>%d",
				      i ? "," : "", p[i].src, p[i].dst);
}

static void
cat_reqs(char *buf, size_t len, const char *key, const kvs_req *r,
	 uint32_t n)
{
	size_t o = strlen(buf);

	if (n == 0)
		return;
	o += (size_t)snprintf(buf + o, len - o, "%s%s=", o ? " " : "", key);
	for (uint32_t i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%c", i ? "," : "",
				      'A' + r[i]);
}

/* The replay form of a step, less "step K ". */
static void
fmt_step(const struct kvs_step *st, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	if (st->nsched > 0) {
		o += (size_t)snprintf(buf + o, len - o, "sched=");
		for (uint32_t i = 0; i < st->nsched && o < len; i++)
			o += (size_t)snprintf(buf + o, len - o, "%s%c:%u",
					      i ? "," : "",
					      'A' + st->sched[i].req,
					      st->sched[i].ntokens);
	}
	cat_reqs(buf, len, "preempt", st->preempt, st->npreempt);
	cat_reqs(buf, len, "finish", st->finish, st->nfinish);
	cat_pairs(buf, len, "swap_out", st->swap_out, st->nswap_out);
	cat_pairs(buf, len, "swap_in", st->swap_in, st->nswap_in);
	cat_pairs(buf, len, "cow", st->cow, st->ncow);
}

static void
check_step(const struct scase *c, kvs *s, const struct kvs_step *st)
{
	const struct kvs_config *sc = kvs_config_of(s);
	uint32_t tok = 0;

	ck_assert_uint_le(st->nsched, (uint64_t)sc->max_num_seqs);
	ck_assert_uint_le(kvs_queue_len(s, KVS_Q_RUNNING),
			  (uint64_t)sc->max_num_seqs);
	for (uint32_t i = 0; i < st->nsched; i++) {
		ck_assert_uint_ge(st->sched[i].ntokens, 1);
		tok += st->sched[i].ntokens;
		for (uint32_t j = 0; j < st->npreempt; j++)
			ck_assert_int_ne(st->sched[i].req, st->preempt[j]);
		for (uint32_t j = 0; j < i; j++)
			ck_assert_int_ne(st->sched[i].req, st->sched[j].req);
	}
	ck_assert_uint_eq(tok, st->batch_tokens);
	if (!c->caching)
		ck_assert_uint_le(tok, (uint64_t)sc->max_num_batched_tokens);
	for (uint32_t j = 0; j < st->npreempt; j++) {
		kvs_status want = st->preempt_swap[j] ? KVS_SWAPPED :
						       KVS_WAITING;

		if (kvs_req_status(s, st->preempt[j]) != KVS_ABORTED)
			ck_assert_int_eq(kvs_req_status(s, st->preempt[j]),
					 want);
	}
}

static void
run_case(const struct scase *c)
{
	char why[256], buf[1024];
	kvs_req id[NREQ];
	kvs *s = make(c, why, sizeof(why));

	ck_assert_msg(s != NULL, "%s: %s", c->name, why);
	for (int k = 0; k < MAXOP && c->s[k].op != O_END; k++) {
		const struct op_line *o = &c->s[k];
		const struct kvs_step *st;
		uint32_t tok[256];
		kv_err e;

		switch (o->op) {
		case O_REQ:
			ck_assert_uint_le(o->n, 256);
			for (uint32_t t = 0; t < o->n; t++)
				tok[t] = o->a + t;
			e = kvs_add(s, tok, o->n, o->out, 0, &id[o->i]);
			ck_assert_msg(e == KV_OK, "%s op %d: %s", c->name, k,
				      kvs_errmsg(s));
			ck_assert_int_eq(id[o->i], o->i);
			break;
		case O_STEP:
			e = kvs_step(s, &st);
			ck_assert_msg(e == KV_OK, "%s op %d: %s", c->name, k,
				      kvs_errmsg(s));
			fmt_step(st, buf, sizeof(buf));
			ck_assert_msg(strcmp(buf, o->want) == 0,
				      "%s op %d (step %llu): got '%s', want "
				      "'%s'", c->name, k,
				      (unsigned long long)st->number, buf,
				      o->want);
			check_step(c, s, st);
			break;
		case O_ABORT:
			e = kvs_abort(s, id[o->i]);
			ck_assert_msg(e == o->rc, "%s op %d: abort %c: %s",
				      c->name, k, 'A' + o->i, kv_strerror(e));
			break;
		case O_TABLE: {
			size_t n, off = 1;
			const int32_t *t = kvc_table(kvs_kv(s),
						     kvs_req_seq(s, id[o->i]),
						     0, &n);

			buf[0] = '[';
			for (size_t i = 0; i < n; i++)
				off += (size_t)snprintf(buf + off,
							sizeof(buf) - off,
							"%s%d", i ? "," : "",
							t[i]);
			snprintf(buf + off, sizeof(buf) - off, "]");
			ck_assert_msg(strcmp(buf, o->want) == 0,
				      "%s op %d: table %c: got %s, want %s",
				      c->name, k, 'A' + o->i, buf, o->want);
			break;
		}
		case O_FREEB:
			snprintf(buf, sizeof(buf), "%u %u",
				 kvc_free_blocks(kvs_kv(s), 0),
				 kvc_free_cpu(kvs_kv(s)));
			ck_assert_msg(strcmp(buf, o->want) == 0,
				      "%s op %d: free blocks %s, want %s",
				      c->name, k, buf, o->want);
			break;
		case O_END:
			break;
		}
		ck_assert_msg(kvs_audit(s, why, sizeof(why)) == 0,
			      "%s op %d: audit: %s", c->name, k, why);
	}
	kvs_free(s);
}

START_TEST(test_case)
{
	run_case(&cases[_i]);
}
END_TEST

/* ---- configuration (R59, R60) ----------------------------------------- */

struct ccase {
	const char *name;
	uint32_t bs, gpu, cpu, mml, ngroups;
	double wm;
	int64_t S, B, chunked, swap, L, prio, H, chunk;
	/* resolved, or 0 with `err` naming a word of the message */
	int64_t wantS, wantB;
	const char *err;
};

static const struct ccase ccases[] = {
	{ "defaults", 16, 600, 0, 8192, 0, 0.01, U, U, U, U, U, U, U, U,
	  128, 8192, NULL },
	{ "chunked default budget", 16, 600, 0, 8192, 0, 0.01,
	  U, U, 1, U, U, U, U, U, 128, 2048, NULL },
	{ "short mml: 2048, capped by S x mml", 4, 40, 0, 100, 0, 0.01,
	  4, U, U, U, U, U, U, U, 4, 400, NULL },
	{ "short mml, chunked", 4, 40, 0, 100, 0, 0.01,
	  64, U, 1, U, U, U, U, U, 64, 2048, NULL },
	{ "B < mml without chunking", 4, 40, 0, 64, 0, 0.01,
	  U, 32, U, U, U, U, U, U, 0, 0, "smaller than max_model_len" },
	{ "B < mml with chunking is fine", 4, 40, 0, 64, 0, 0.01,
	  8, 32, 1, U, U, U, U, U, 8, 32, NULL },
	{ "B < S", 4, 40, 0, 64, 0, 0.01, 33, 32, 1, U, U, U, U, U,
	  0, 0, "greater than or equal to max_num_seqs" },
	{ "swap without CPU blocks", 4, 40, 0, 64, 0, 0.01,
	  U, U, U, 1, U, U, U, U, 0, 0, "cpu_blocks" },
	{ "one max_model_len request must fit", 4, 17, 0, 64, 0, 0.01,
	  U, U, U, U, U, U, U, U, 0, 0, "needs 18 blocks" },
	{ "exactly fits", 4, 18, 0, 64, 0, 0.01,
	  U, U, U, U, U, U, U, U, 128, 2048, NULL },
	{ "watermark counts", 4, 18, 0, 64, 0, 0.1,
	  U, U, U, U, U, U, U, U, 0, 0, "(1 of 18)" },
	{ "lookahead counts twice", 4, 18, 0, 64, 0, 0.01,
	  U, U, U, U, 1, U, U, U, 0, 0, "needs 19 blocks" },
	{ "priority", 4, 40, 0, 64, 0, 0.01, U, U, U, U, U, 1, U, U,
	  0, 0, "priority" },
	{ "long_prefill_threshold", 4, 40, 0, 64, 0, 0.01,
	  U, U, U, U, U, U, 8, U, 0, 0, "long_prefill_threshold" },
	{ "chunk_size", 4, 40, 0, 64, 0, 0.01, U, U, U, U, U, U, U, 8,
	  0, 0, "chunk_size" },
	{ "sliding window", 4, 40, 0, 64, 1, 0.01, U, U, U, U, U, U, U, U,
	  0, 0, "kind=full" },
	{ "max_num_seqs 0", 4, 40, 0, 64, 0, 0.01, 0, U, U, U, U, U, U, U,
	  0, 0, "max_num_seqs" },
};

START_TEST(test_config)
{
	const struct ccase *c = &ccases[_i];
	struct kvs_config sc;
	struct kvc_config kc;
	char why[256];
	kv_err e;
	kvs *s;

	kvs_config_init(&sc);
	snprintf(sc.policy, sizeof(sc.policy), "vllm-v0");
	sc.max_num_seqs = c->S;
	sc.max_num_batched_tokens = c->B;
	sc.chunked_prefill = c->chunked;
	sc.preemption = c->swap;
	sc.lookahead = c->L;
	sc.priority = c->prio;
	sc.long_prefill_threshold = c->H;
	sc.chunk_size = c->chunk;
	kvc_config_default(&kc, KVC_VLLM_V0);
	kc.block_size = c->bs;
	kc.gpu_blocks = c->gpu;
	kc.cpu_blocks = c->cpu;
	kc.max_model_len = c->mml;
	kc.watermark = c->wm;
	if (c->ngroups) {
		kc.ngroups = 1;
		snprintf(kc.group[0].name, sizeof(kc.group[0].name), "attn");
		kc.group[0].kind = KVC_SLIDING;
		kc.group[0].window = 8;
	}
	s = kvs_new(&sc, &kc, &e, why, sizeof(why));
	if (c->wantS == 0) {
		ck_assert_msg(s == NULL, "%s: accepted", c->name);
		ck_assert_int_eq(e, KV_ECONFIG);
		ck_assert_msg(strstr(why, c->err) != NULL, "%s: '%s'",
			      c->name, why);
		return;
	}
	ck_assert_msg(s != NULL, "%s: %s", c->name, why);
	ck_assert_int_eq(kvs_config_of(s)->max_num_seqs, c->wantS);
	ck_assert_int_eq(kvs_config_of(s)->max_num_batched_tokens, c->wantB);
	ck_assert_int_eq(kvs_config_of(s)->chunked_prefill,
			 c->chunked == U ? 0 : c->chunked);
	ck_assert_int_eq(kvs_config_of(s)->preemption, 0);
	ck_assert_int_eq(kvs_config_of(s)->lookahead, 0);
	ck_assert_int_eq(kvs_config_of(s)->priority, 0);
	ck_assert_str_eq(kvs_policy_name(s), "vllm-v0");
	ck_assert_int_eq(kvc_config_of(kvs_kv(s))->mode, KVC_VLLM_V0);
	kvs_free(s);
}
END_TEST

/* No output is refused; a prompt of max_model_len tokens or more is
 * queued (vLLM v0's Scheduler takes it; its steps ignore the ones over the
 * prompt limit). */
START_TEST(test_request_limits)
{
	const struct scase c = { "limits", 4, 20, 0, 16, false,
				 4, U, U, U, U, { { 0 } } };
	uint32_t tok[16] = { 0 };
	char why[256];
	kvs_req r;
	kvs *s = make(&c, why, sizeof(why));

	ck_assert_msg(s != NULL, "%s", why);
	ck_assert_int_eq(kvs_add(s, tok, 16, 1, 0, &r), KV_OK);
	ck_assert_int_eq(kvs_req_status(s, r), KVS_WAITING);
	ck_assert_int_eq(kvs_add(s, tok, 15, 0, 0, &r), KV_EINVAL);
	ck_assert_int_eq(kvs_add(s, tok, 15, 1, 0, &r), KV_OK);
	ck_assert_int_eq(kvs_audit(s, why, sizeof(why)), 0);
	kvs_free(s);
}
END_TEST

/*
 * Cached tokens in the step's entries (kvs_sched.cached, .stale).  A's
 * 16-token prompt is left in the prefix cache; B shares it.  Admitted at
 * once, B is scheduled for 20 tokens of which 16 cached, none stale.
 * Kept waiting behind D (max_num_seqs 1) while D's decodes evict A's last
 * block, B's count of cached tokens is dropped at every look that does
 * not admit it (vLLM PR #18957) and taken again: B is admitted with the
 * 12 tokens still cached, none stale.  (Before that fix the first count,
 * 16, was kept, and 4 of them were no longer in the cache.)
 */
START_TEST(test_cached_tokens)
{
	const struct scase c = { "cached", 4, 8, 0, 24, true,
				 1, 24, U, U, U, { { 0 } } };
	uint32_t tok[20];
	const struct kvs_step *st;
	bool wait = _i == 1;
	char why[256];
	kvs_req r;
	kvs *s = make(&c, why, sizeof(why));

	ck_assert_msg(s != NULL, "%s", why);
	for (uint32_t t = 0; t < 16; t++)
		tok[t] = t;
	ck_assert_int_eq(kvs_add(s, tok, 16, 1, 0, &r), KV_OK);
	ck_assert_int_eq(kvs_step(s, &st), KV_OK);
	ck_assert_uint_eq(st->nsched, 1);
	ck_assert_uint_eq(st->sched[0].ntokens, 16);
	ck_assert_uint_eq(st->sched[0].cached, 0);
	ck_assert_uint_eq(st->nfinish, 1);
	if (wait) {
		uint32_t d[8];

		for (uint32_t t = 0; t < 8; t++)
			d[t] = 200 + t;
		ck_assert_int_eq(kvs_add(s, d, 8, 12, 0, &r), KV_OK);
	}
	for (uint32_t t = 16; t < 20; t++)
		tok[t] = 100 + t;
	ck_assert_int_eq(kvs_add(s, tok, 20, 1, 0, &r), KV_OK);
	do {
		ck_assert_int_eq(kvs_step(s, &st), KV_OK);
		ck_assert_uint_eq(st->nsched, 1);
		ck_assert_uint_le(st->sched[0].stale, st->sched[0].cached);
		ck_assert_uint_le(st->sched[0].cached,
				  st->sched[0].ntokens);
	} while (st->sched[0].req != r);
	ck_assert_uint_eq(st->sched[0].ntokens, 20);
	ck_assert_uint_eq(st->sched[0].cached, wait ? 12 : 16);
	ck_assert_uint_eq(st->sched[0].stale, 0);
	ck_assert_int_eq(kvs_audit(s, why, sizeof(why)), 0);
	kvs_free(s);
}
END_TEST

/*
 * Promotion onto a block whose KV is not computed, read in the step that
 * computes it.  A (prompt 0..6) and B, whose prompt is A's with A's first
 * output token (1000007, kvs_complete's default) and one more, are
 * admitted in one step of 11 tokens: A's 7, B's first 4.  B's allocation
 * registers its block of positions 4..7 in the prefix cache, uncomputed.
 * In the next step A's decode fills A's own block of 4..7 with the same
 * content and promote_to_immutable_block drops it for B's: A reads its
 * positions 4..6 there.  B's chunk of that step computes 4..8, and the
 * forward pass writes every token's KV of a layer before attention reads
 * any, so nothing is lost: stale 0, where the allocator alone reports 3
 * (check_v0's test_promotion_lost).  Without the shared token nothing is
 * promoted.  tests/gpu/v0-promotion.yaml has promotions whose block is
 * computed steps later: stale tokens.
 */
START_TEST(test_promotion_same_step)
{
	const struct scase c = { "promotion", 4, 16, 0, 32, true,
				 4, 11, 1, U, U, { { 0 } } };
	uint32_t a[7], b[9];
	bool shared = _i == 0;
	const struct kvs_step *st;
	uint32_t i;
	char why[256];
	kvs_req ra, rb;
	kvs *s = make(&c, why, sizeof(why));

	ck_assert_msg(s != NULL, "%s", why);
	for (uint32_t t = 0; t < 7; t++)
		a[t] = b[t] = t;
	b[7] = shared ? 1000007 : 77;
	b[8] = 200;
	ck_assert_int_eq(kvs_add(s, a, 7, 4, 0, &ra), KV_OK);
	ck_assert_int_eq(kvs_add(s, b, 9, 1, 0, &rb), KV_OK);
	ck_assert_int_eq(kvs_step(s, &st), KV_OK);
	ck_assert_uint_eq(st->nsched, 2);
	ck_assert_uint_eq(st->sched[0].ntokens, 7);
	ck_assert_uint_eq(st->sched[1].ntokens, 4);
	ck_assert_int_eq(kvs_schedule(s, &st), KV_OK);
	ck_assert_uint_eq(st->nsched, 2);
	i = st->sched[0].req == ra ? 0 : 1;
	ck_assert_int_eq(st->sched[i].req, ra);
	ck_assert_uint_eq(st->sched[i].ntokens, 1);
	ck_assert_uint_eq(st->sched[i].stale, 0);
	ck_assert_uint_eq(st->sched[1 - i].ntokens, 5);
	ck_assert_uint_eq(st->sched[1 - i].stale, 0);
	/* promoted: A's entry 1 is B's */
	{
		size_t na, nb;
		const int32_t *ta = kvc_table(kvs_kv(s),
					      kvs_req_seq(s, ra), 0, &na);
		const int32_t *tb = kvc_table(kvs_kv(s),
					      kvs_req_seq(s, rb), 0, &nb);

		ck_assert_uint_ge(na, 2);
		ck_assert_uint_ge(nb, 2);
		ck_assert_int_eq(ta[1] == tb[1], shared);
	}
	ck_assert_int_eq(kvs_complete(s, NULL, &st), KV_OK);
	ck_assert_int_eq(kvs_audit(s, why, sizeof(why)), 0);
	kvs_free(s);
}
END_TEST

/*
 * Stale cached tokens another request computes in the same step.  X's
 * 22-token prompt runs its first chunk of 16 (budget 16, blocks of 4); v0
 * then marks all five of its full blocks computed, though block 4
 * (positions 16..19) is not.  Y, queued after that step with X's first 20
 * tokens, is admitted with 20 cached tokens while X's second chunk
 * (16..21) runs: the layer's KV of block 4 is written before Y's attention
 * reads it, so none is stale.  With X aborted after its first chunk
 * nobody computes block 4: Y's last 4 cached tokens are stale.
 */
START_TEST(test_stale_same_step)
{
	const struct scase c = { "stale-now", 4, 16, 0, 32, true,
				 4, 16, 1, U, U, { { 0 } } };
	bool abort_x = _i == 1;
	uint32_t x[22], y[22];
	const struct kvs_step *st;
	char why[256];
	kvs_req rx, ry;
	uint32_t i;
	kvs *s = make(&c, why, sizeof(why));

	ck_assert_msg(s != NULL, "%s", why);
	for (uint32_t t = 0; t < 22; t++)
		x[t] = y[t] = t;
	y[20] = 99;
	y[21] = 98;
	ck_assert_int_eq(kvs_add(s, x, 22, 2, 0, &rx), KV_OK);
	ck_assert_int_eq(kvs_step(s, &st), KV_OK);
	ck_assert_uint_eq(st->nsched, 1);
	ck_assert_uint_eq(st->sched[0].ntokens, 16);
	if (abort_x)
		ck_assert_int_eq(kvs_abort(s, rx), KV_OK);
	ck_assert_int_eq(kvs_add(s, y, 22, 1, 0, &ry), KV_OK);
	ck_assert_int_eq(kvs_step(s, &st), KV_OK);
	ck_assert_uint_eq(st->nsched, abort_x ? 1 : 2);
	for (i = 0; st->sched[i].req != ry; i++)
		ck_assert_uint_lt(i + 1, st->nsched);
	ck_assert_uint_eq(st->sched[i].ntokens, 22);
	ck_assert_uint_eq(st->sched[i].cached, 20);
	ck_assert_uint_eq(st->sched[i].stale, abort_x ? 4 : 0);
	if (!abort_x)
		ck_assert_uint_eq(st->sched[1 - i].ntokens, 6);
	ck_assert_int_eq(kvs_audit(s, why, sizeof(why)), 0);
	kvs_free(s);
}
END_TEST

static Suite *
sched_v0_suite(void)
{
	Suite *s = suite_create("sched_v0");
	TCase *tc = tcase_create("scenarios");

	tcase_add_loop_test(tc, test_case, 0,
			    (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_loop_test(tc, test_cached_tokens, 0, 2);
	tcase_add_loop_test(tc, test_promotion_same_step, 0, 2);
	tcase_add_loop_test(tc, test_stale_same_step, 0, 2);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tc = tcase_create("config");
	tcase_add_loop_test(tc, test_config, 0,
			    (int)(sizeof(ccases) / sizeof(ccases[0])));
	tcase_add_test(tc, test_request_limits);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(sched_v0_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
