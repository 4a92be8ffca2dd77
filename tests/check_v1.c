/*
 * check_v1.c -- mode vllm-v1 (core/kv_v1.c): vLLM v1's KVCacheManager and
 * BlockPool.
 *
 * The cases of core-spec §9 that apply to v1 (25-34, and the v1 forms of
 * 1, 5, 7, 8) run as small op scripts through one interpreter: kvc_audit()
 * must pass after every step, and a step expected to fail must leave the
 * state exactly as it was (R16) unless the step says the sliding-window
 * release is allowed.  Then API misuse, configuration rules (R11), clone,
 * the PR #42615 double free, and a seeded random walk that checks every
 * query against a trial of its action on a clone.
 */
#include "core/kvcore.h"
#include "core/kv_int.h"	/* test_v1_free_damaged writes a table */

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSLOT 8
#define MAXSTEP 48

enum op {
	O_END = 0,
	O_SEQ,		/* declare slot i with tokens */
	O_ALLOC,	/* allocate, n = arg */
	O_APPEND,	/* append tokens, lookahead L if has_L */
	O_FREE,
	O_CANALLOC,	/* want: OK/LATER/NEVER */
	O_CANAPPEND,	/* n = arg (has_n), want: yes/no */
	O_CACHED,	/* want: tokens */
	O_TABLE,	/* want: "[1,2] [-,3]" one [] per group */
	O_FREEB,	/* want: free count (same in every group) */
	O_NEED,		/* blocks_needed(n = arg, L), want: "1 1" per group */
	O_COMPUTED
};

struct step {
	enum op op;
	int i;			/* sequence slot */
	uint32_t a, n, b, m;	/* tokens a..a+n-1 then b..b+m-1 */
	uint32_t arg, L;
	bool has_arg, has_L;
	kv_err rc;		/* expected result */
	bool release;		/* a failure may keep the SW release (R16) */
	const char *want;
};

struct grp {
	const char *name;
	kvc_kind kind;
	uint32_t window;
	uint32_t bs;		/* 0 = the case's block size */
};

struct vcase {
	const char *name;
	uint32_t bs, gpu, mml;
	bool caching;
	struct grp g[4];
	struct step s[MAXSTEP];
};

#define SEQ(I, A, N) { .op = O_SEQ, .i = (I), .a = (A), .n = (N) }
#define SEQ2(I, A, N, B, M)                                                 \
	{ .op = O_SEQ, .i = (I), .a = (A), .n = (N), .b = (B), .m = (M) }
#define ALLOC(I, R) { .op = O_ALLOC, .i = (I), .rc = (R) }
#define ALLOCN(I, N, R) { .op = O_ALLOC, .i = (I), .arg = (N), .rc = (R) }
#define APP(I, A, N, R) { .op = O_APPEND, .i = (I), .a = (A), .n = (N),    \
			  .rc = (R) }
#define APPL(I, A, N, LA, R) { .op = O_APPEND, .i = (I), .a = (A),          \
			       .n = (N), .L = (LA), .has_L = true, .rc = (R) }
#define APPSW(I, A, N, R) { .op = O_APPEND, .i = (I), .a = (A), .n = (N),  \
			    .rc = (R), .release = true }
#define FREE(I, R) { .op = O_FREE, .i = (I), .rc = (R) }
#define CANAL(I, LA, W) { .op = O_CANALLOC, .i = (I), .L = (LA), .want = (W) }
#define CANALE(I, R) { .op = O_CANALLOC, .i = (I), .rc = (R) }
#define CANAP(I, N, LA, W) { .op = O_CANAPPEND, .i = (I), .arg = (N),       \
			     .has_arg = true, .L = (LA), .want = (W) }
#define CACHED(I, W) { .op = O_CACHED, .i = (I), .want = (W) }
#define TAB(I, W) { .op = O_TABLE, .i = (I), .want = (W) }
#define FREEB(W) { .op = O_FREEB, .want = (W) }
#define NEED(I, N, LA, W) { .op = O_NEED, .i = (I), .arg = (N), .L = (LA), \
			    .want = (W) }
#define ATTN { { "attn", KVC_FULL, 0, 0 } }

static const struct vcase cases[] = {
	{ "c01 FIFO reuse, tail first", 4, 9, 0, false, ATTN, {
		SEQ(0, 0, 10), SEQ(1, 100, 5),
		ALLOC(0, KV_OK), TAB(0, "[1,2,3]"),
		ALLOC(1, KV_OK), TAB(1, "[4,5]"),
		FREE(0, KV_OK), FREEB("6"),
		SEQ(2, 200, 9), ALLOC(2, KV_OK), TAB(2, "[6,7,8]"),
		SEQ(3, 300, 4), ALLOC(3, KV_OK), TAB(3, "[3]"),
		SEQ(4, 400, 8), ALLOC(4, KV_OK), TAB(4, "[2,1]"),
		FREEB("0"),
		SEQ(5, 500, 1), CANAL(5, 0, "LATER"), ALLOC(5, KV_ENOSPC),
	} },
	{ "c05 bad free", 4, 5, 0, false, ATTN, {
		SEQ(0, 0, 6), FREE(0, KV_ESTATE),
		ALLOC(0, KV_OK), FREE(0, KV_OK), FREE(0, KV_ESTATE),
		FREEB("4"), TAB(0, "[]"),
	} },
	{ "c07/c08 verdicts without watermark", 4, 11, 0, false, ATTN, {
		SEQ(0, 0, 36), SEQ(1, 0, 40), SEQ(2, 0, 41),
		CANAL(0, 0, "OK"), CANAL(1, 0, "OK"), CANAL(2, 0, "NEVER"),
		NEED(1, 0, 0, "10"), NEED(2, 0, 0, "11"),
		SEQ(3, 500, 12), ALLOC(3, KV_OK), FREEB("7"),
		SEQ(4, 0, 28), SEQ(5, 0, 24), SEQ(6, 0, 32),
		CANAL(4, 0, "OK"), CANAL(6, 0, "LATER"),
		CANAL(5, 5, "LATER"), CANAL(0, 5, "NEVER"),
		NEED(5, 0, 5, "8"),
		ALLOC(6, KV_ENOSPC), ALLOC(4, KV_OK), FREEB("0"),
	} },
	{ "c25 prefill/free order", 16, 11, 0, true, ATTN, {
		SEQ2(0, 0, 48, 100, 7), SEQ2(1, 0, 48, 200, 5),
		ALLOC(0, KV_OK), TAB(0, "[1,2,3,4]"),
		CACHED(1, "48"), NEED(1, 0, 0, "1"),
		ALLOC(1, KV_OK), TAB(1, "[1,2,3,5]"), FREEB("5"),
		FREE(0, KV_OK), FREE(1, KV_OK), FREEB("10"),
		SEQ2(2, 0, 48, 300, 6), NEED(2, 0, 0, "4"),
		ALLOC(2, KV_OK), TAB(2, "[1,2,3,6]"),
		FREE(2, KV_OK),
		SEQ(3, 1000, 160), ALLOC(3, KV_OK),
		TAB(3, "[7,8,9,10,4,5,6,3,2,1]"),
	} },
	{ "c26 eviction order across requests", 16, 11, 0, true, ATTN, {
		SEQ(0, 0, 87), SEQ(1, 500, 48),
		ALLOC(0, KV_OK), ALLOC(1, KV_OK), FREEB("1"),
		FREE(0, KV_OK), FREE(1, KV_OK),
		SEQ2(2, 0, 32, 900, 3), CACHED(2, "32"),
		ALLOC(2, KV_OK), TAB(2, "[1,2,10]"), FREEB("7"),
		SEQ(3, 2000, 112), ALLOC(3, KV_OK),
		TAB(3, "[6,5,4,3,9,8,7]"),
	} },
	{ "c27 other free blocks before hit blocks", 16, 3, 0, true, ATTN, {
		SEQ(0, 0, 16), SEQ(1, 16, 16),
		ALLOC(0, KV_OK), ALLOC(1, KV_OK),
		FREE(0, KV_OK), FREE(1, KV_OK),
		SEQ(2, 0, 32), CACHED(2, "16"), CANAL(2, 0, "OK"),
		NEED(2, 0, 0, "2"),
		ALLOC(2, KV_OK), TAB(2, "[1,2]"), FREEB("0"),
	} },
	{ "c28 no side effects on failure", 4, 5, 0, true, ATTN, {
		SEQ(0, 0, 8), ALLOC(0, KV_OK), FREE(0, KV_OK), FREEB("4"),
		SEQ2(1, 0, 8, 100, 12), CACHED(1, "8"), NEED(1, 0, 0, "5"),
		CANAL(1, 0, "NEVER"), ALLOC(1, KV_ENOSPC),
		FREEB("4"), CACHED(1, "8"), TAB(1, "[]"),
		SEQ(2, 200, 16), ALLOC(2, KV_OK), TAB(2, "[3,4,2,1]"),
	} },
	{ "c29 full hit still computes", 4, 10, 0, true, ATTN, {
		SEQ(0, 0, 8), ALLOC(0, KV_OK),
		SEQ(1, 0, 8), CACHED(1, "4"),
		SEQ(2, 0, 9), CACHED(2, "8"),
		ALLOC(1, KV_OK), TAB(1, "[1,3]"),
		FREE(0, KV_OK), ALLOC(2, KV_OK), TAB(2, "[1,2,4]"),
	} },
	{ "c30 hybrid hit", 16, 21, 0, true,
	  { { "full", KVC_FULL, 0, 0 }, { "sw1", KVC_SLIDING, 32, 0 },
	    { "sw2", KVC_SLIDING, 32, 0 } }, {
		SEQ(0, 0, 55), ALLOC(0, KV_OK),
		TAB(0, "[1,2,3,4] [5,6,7,8] [9,10,11,12]"),
		SEQ2(1, 0, 48, 700, 5), CACHED(1, "48"),
		NEED(1, 0, 0, "1 1 1"),
		ALLOC(1, KV_OK),
		TAB(1, "[1,2,3,13] [-,6,7,14] [-,10,11,15]"), FREEB("5"),
		FREE(0, KV_OK), FREE(1, KV_OK), FREEB("20"),
	} },
	{ "c31 sliding-window freeing", 4, 10, 0, false,
	  { { "sw", KVC_SLIDING, 4, 0 } }, {
		SEQ(0, 0, 12), ALLOC(0, KV_OK), TAB(0, "[1,2,3]"), FREEB("6"),
		NEED(0, 1, 0, "1"), CANAP(0, 1, 0, "yes"), FREEB("6"),
		APP(0, 12, 1, KV_OK), TAB(0, "[-,-,3,4]"), FREEB("7"),
		FREE(0, KV_OK), FREEB("9"),
	} },
	{ "c32 sliding-window skip boundaries", 2, 8, 0, false,
	  { { "sw", KVC_SLIDING, 4, 0 } }, {
		SEQ(0, 0, 12),
		ALLOCN(0, 4, KV_OK), TAB(0, "[1,2]"),
		ALLOCN(0, 1, KV_OK), TAB(0, "[1,2,3]"),
		ALLOCN(0, 1, KV_OK), TAB(0, "[-,2,3]"),
		ALLOCN(0, 1, KV_OK), TAB(0, "[-,2,3,4]"),
		ALLOCN(0, 4, KV_OK), TAB(0, "[-,-,3,4,5,6]"),
		ALLOCN(0, 1, KV_OK), TAB(0, "[-,-,-,-,5,6]"), FREEB("5"),
		SEQ(1, 50, 10), ALLOC(1, KV_OK), TAB(1, "[7,1,2,4,3]"),
	} },
	{ "c34 lookahead, never cached", 4, 10, 0, true, ATTN, {
		SEQ(0, 0, 3), NEED(0, 0, 2, "2"),
		SEQ(1, 0, 1), ALLOC(1, KV_OK), NEED(1, 3, 2, "1"),
		CANAP(1, 3, 2, "yes"),
		APPL(1, 1, 3, 2, KV_OK), TAB(1, "[1,2]"),
		SEQ(2, 0, 3), ALLOC(2, KV_OK),
		APPL(2, 3, 1, 4, KV_OK), TAB(2, "[3,4]"),
		SEQ(3, 0, 9), CACHED(3, "4"),
		APP(2, 4, 4, KV_OK), TAB(2, "[3,4]"), CACHED(3, "8"),
	} },
	{ "c34 lookahead capped by max_model_len", 4, 10, 6, false, ATTN, {
		SEQ(0, 0, 1), ALLOC(0, KV_OK), NEED(0, 3, 4, "1"),
		APPL(0, 1, 3, 4, KV_OK), TAB(0, "[1,2]"), FREEB("7"),
		APP(0, 4, 3, KV_EINVAL),
	} },
	{ "hybrid state + full, state hit within the full hit", 4, 12, 0,
	  true, { { "m", KVC_STATE, 0, 0 }, { "attn", KVC_FULL, 0, 0 } }, {
		SEQ(0, 0, 12), ALLOC(0, KV_OK), TAB(0, "[1,2,3] [4,5,6]"),
		FREE(0, KV_OK),
		SEQ(1, 1000, 12), ALLOC(1, KV_OK), TAB(1, "[7,8,9] [10,11,3]"),
		SEQ2(2, 0, 12, 100, 1), CACHED(2, "8"), NEED(2, 0, 0, "3 4"),
		CANAL(2, 0, "LATER"), ALLOC(2, KV_ENOSPC),
		FREE(1, KV_OK), CACHED(2, "8"),
		ALLOC(2, KV_OK), TAB(2, "[-,2,1,6] [4,5,9,8]"), FREEB("4"),
	} },
	{ "sliding hit searched from the right", 4, 10, 0, true,
	  { { "sw", KVC_SLIDING, 8, 0 } }, {
		SEQ(0, 0, 16), ALLOC(0, KV_OK), TAB(0, "[1,2,3,4]"),
		SEQ2(1, 0, 16, 99, 1), CACHED(1, "16"),
		ALLOC(1, KV_OK), TAB(1, "[-,-,3,4,5]"),
		APP(1, 98, 1, KV_OK), TAB(1, "[-,-,3,4,5]"), FREEB("4"),
	} },
	{ "sliding release survives a failed append", 4, 4, 0, false,
	  { { "sw", KVC_SLIDING, 4, 0 } }, {
		SEQ(0, 0, 12), ALLOC(0, KV_OK), FREEB("0"),
		CANAP(0, 5, 0, "yes"), CANAP(0, 9, 0, "no"),
		TAB(0, "[1,2,3]"), FREEB("0"),
		APPSW(0, 12, 9, KV_ENOSPC), TAB(0, "[-,-,3]"), FREEB("2"),
		APP(0, 12, 5, KV_OK), TAB(0, "[-,-,3,2,1]"), FREEB("0"),
	} },
	{ "chunked prefill caches only what is computed", 4, 10, 0, true,
	  ATTN, {
		SEQ(0, 0, 12), ALLOCN(0, 5, KV_OK), TAB(0, "[1,2]"),
		SEQ(1, 0, 13), CACHED(1, "4"),
		ALLOCN(0, 5, KV_OK), TAB(0, "[1,2,3]"), CACHED(1, "8"),
		ALLOC(0, KV_OK), CACHED(1, "12"),
		ALLOC(0, KV_ESTATE), CANALE(0, KV_ESTATE),
	} },
	{ "no caching: identical prompts share nothing", 4, 10, 0, false,
	  ATTN, {
		SEQ(0, 0, 8), ALLOC(0, KV_OK), SEQ(1, 0, 9), CACHED(1, "0"),
		ALLOC(1, KV_OK), TAB(1, "[3,4,5]"), FREEB("4"),
	} },
	{ "mixed block sizes without caching", 4, 20, 0, false,
	  { { "a", KVC_FULL, 0, 2 }, { "b", KVC_SLIDING, 8, 4 } }, {
		SEQ(0, 0, 9), NEED(0, 0, 0, "5 3"), ALLOC(0, KV_OK),
		TAB(0, "[1,2,3,4,5] [6,7,8]"), FREEB("11"),
		APP(0, 9, 4, KV_OK), TAB(0, "[1,2,3,4,5,9,10] [6,7,8,11]"),
		FREEB("8"),
		APP(0, 13, 4, KV_OK),
		TAB(0, "[1,2,3,4,5,9,10,12,13] [-,7,8,11,14]"), FREEB("6"),
		SEQ(1, 0, 5), ALLOC(1, KV_OK), TAB(1, "[15,16,17] [18,19]"),
		SEQ(2, 0, 1), CANAL(2, 0, "LATER"), ALLOC(2, KV_ENOSPC),
		FREE(0, KV_OK), FREEB("14"),
		ALLOC(2, KV_OK), TAB(2, "[6] [13]"),
	} },
};

/* ---- the interpreter ---------------------------------------------- */

static kvc *
v1_make_defer(const struct vcase *c, bool defer)
{
	struct kvc_config cfg;
	kv_err e;
	char why[256];
	kvc *k;

	kvc_config_default(&cfg, KVC_VLLM_V1);
	cfg.block_size = c->bs;
	cfg.gpu_blocks = c->gpu;
	cfg.prefix_caching = c->caching;
	cfg.defer_same_step_state_hits = defer;
	if (c->mml)
		cfg.max_model_len = c->mml;
	for (uint32_t g = 0; g < 4 && c->g[g].name != NULL; g++) {
		strcpy(cfg.group[g].name, c->g[g].name);
		cfg.group[g].kind = c->g[g].kind;
		cfg.group[g].window = c->g[g].window;
		cfg.group[g].block_size = c->g[g].bs;
		cfg.ngroups = g + 1;
	}
	k = kvc_new(&cfg, &e, why, sizeof(why));
	ck_assert_msg(k != NULL, "%s: kvc_new: %s", c->name, why);
	return k;
}

static kvc *
v1_make(const struct vcase *c)
{
	return v1_make_defer(c, false);
}

static void
v1_tokens(const struct step *st, uint32_t *buf, size_t *n)
{
	*n = 0;
	for (uint32_t j = 0; j < st->n; j++)
		buf[(*n)++] = st->a + j;
	for (uint32_t j = 0; j < st->m; j++)
		buf[(*n)++] = st->b + j;
}

static void
v1_table_str(const kvc *k, int32_t s, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (uint32_t g = 0; g < kvc_ngroups(k); g++) {
		size_t n;
		const int32_t *id = kvc_table(k, s, g, &n);

		len += (size_t)snprintf(buf + len, cap - len, "%s[",
					g ? " " : "");
		for (size_t i = 0; i < n; i++) {
			if (id[i] == KVC_NULL)
				len += (size_t)snprintf(buf + len, cap - len,
							"%s-", i ? "," : "");
			else
				len += (size_t)snprintf(buf + len, cap - len,
							"%s%d", i ? "," : "",
							id[i]);
		}
		len += (size_t)snprintf(buf + len, cap - len, "]");
	}
}

/* Everything observable: sequences, tables, free counts. */
static void
v1_fingerprint(const kvc *k, char *buf, size_t cap)
{
	size_t len = 0;
	char t[1024];

	for (uint32_t s = 0; s < kvc_nseqs(k); s++) {
		v1_table_str(k, (int32_t)s, t, sizeof(t));
		len += (size_t)snprintf(buf + len, cap - len,
					"%u:%d/%zu/%zu %s; ", s,
					kvc_seq_state(k, (int32_t)s),
					kvc_seq_len(k, (int32_t)s),
					kvc_seq_computed(k, (int32_t)s), t);
	}
	for (uint32_t g = 0; g < kvc_ngroups(k); g++)
		len += (size_t)snprintf(buf + len, cap - len, "f%u=%u ", g,
					kvc_free_blocks(k, g));
}

static void
v1_audit_ok(const kvc *k, const char *name, int step)
{
	char why[512];
	int rc = kvc_audit(k, why, sizeof(why));

	ck_assert_msg(rc == 0, "%s, step %d: audit %d: %s", name, step, rc,
		      why);
}

START_TEST(test_v1_cases)
{
	const struct vcase *c = &cases[_i];
	kvc *k = v1_make(c);
	int32_t slot[NSLOT];
	static uint32_t tok[4096];
	static char before[8192], after[8192];
	char buf[1024];

	for (int i = 0; i < NSLOT; i++)
		slot[i] = -1;
	v1_audit_ok(k, c->name, -1);
	for (int j = 0; j < MAXSTEP && c->s[j].op != O_END; j++) {
		const struct step *st = &c->s[j];
		int32_t s = slot[st->i];
		kv_err e = KV_OK;
		size_t n;

		v1_fingerprint(k, before, sizeof(before));
		switch (st->op) {
		case O_SEQ:
			v1_tokens(st, tok, &n);
			e = kvc_seq_new(k, tok, n, &slot[st->i]);
			break;
		case O_ALLOC:
			e = kvc_allocate(k, s, st->arg);
			break;
		case O_APPEND:
			v1_tokens(st, tok, &n);
			e = kvc_append(k, s, tok, n, st->L, st->has_L);
			break;
		case O_FREE:
			e = kvc_free_seq(k, s);
			break;
		case O_CANALLOC: {
			kvc_verdict v;
			static const char *const vn[] = { "OK", "LATER",
							  "NEVER" };

			e = kvc_can_allocate(k, s, st->L, &v);
			if (e == KV_OK && st->want != NULL)
				ck_assert_msg(strcmp(vn[v], st->want) == 0,
					      "%s, step %d: can_allocate %s, "
					      "want %s", c->name, j, vn[v],
					      st->want);
			break;
		}
		case O_CANAPPEND: {
			bool yes;

			e = kvc_can_append(k, s, st->arg, st->has_arg, st->L,
					   &yes);
			if (e == KV_OK)
				ck_assert_msg(strcmp(yes ? "yes" : "no",
						     st->want) == 0,
					      "%s, step %d: can_append %d",
					      c->name, j, yes);
			break;
		}
		case O_CACHED: {
			size_t t;

			e = kvc_cached(k, s, &t);
			snprintf(buf, sizeof(buf), "%zu", t);
			ck_assert_msg(e != KV_OK || strcmp(buf, st->want) == 0,
				      "%s, step %d: cached %s, want %s",
				      c->name, j, buf, st->want);
			break;
		}
		case O_TABLE:
			v1_table_str(k, s, buf, sizeof(buf));
			ck_assert_msg(strcmp(buf, st->want) == 0,
				      "%s, step %d: table %s, want %s",
				      c->name, j, buf, st->want);
			break;
		case O_FREEB:
			for (uint32_t g = 0; g < kvc_ngroups(k); g++) {
				snprintf(buf, sizeof(buf), "%u",
					 kvc_free_blocks(k, g));
				ck_assert_msg(strcmp(buf, st->want) == 0,
					      "%s, step %d: free %s, want %s",
					      c->name, j, buf, st->want);
			}
			ck_assert_uint_eq(kvc_free_cpu(k), 0);
			break;
		case O_NEED: {
			uint32_t need[KVC_MAX_GROUPS];
			size_t len = 0;

			e = kvc_blocks_needed(k, s, st->arg, st->L, need);
			for (uint32_t g = 0; g < kvc_ngroups(k); g++)
				len += (size_t)snprintf(buf + len,
							sizeof(buf) - len,
							"%s%u", g ? " " : "",
							need[g]);
			ck_assert_msg(e != KV_OK || strcmp(buf, st->want) == 0,
				      "%s, step %d: need %s, want %s",
				      c->name, j, buf, st->want);
			break;
		}
		case O_COMPUTED:
			e = kvc_computed(k, s, st->arg, st->has_arg);
			break;
		case O_END:
			break;
		}
		ck_assert_msg(e == st->rc, "%s, step %d: %s (%s), want %s",
			      c->name, j, kv_strerror(e), kvc_errmsg(k),
			      kv_strerror(st->rc));
		v1_audit_ok(k, c->name, j);
		v1_fingerprint(k, after, sizeof(after));
		if (e != KV_OK && !st->release)
			ck_assert_msg(strcmp(before, after) == 0,
				      "%s, step %d: failed but changed "
				      "state:\n%s\n%s", c->name, j, before,
				      after);
		if (st->op >= O_CANALLOC && st->op != O_COMPUTED)
			ck_assert_msg(strcmp(before, after) == 0,
				      "%s, step %d: a query changed state",
				      c->name, j);
	}
	kvc_free(k);
}
END_TEST

/* ---- misuse ---------------------------------------------------------- */

static kvc *
v1_small(bool caching)
{
	static const struct vcase c = { "small", 4, 10, 16, false, ATTN,
					 { { 0 } } };
	struct vcase cc = c;

	cc.caching = caching;
	return v1_make(&cc);
}

#define UNCHANGED(k, call, want)                                            \
	do {                                                                \
		static char b_[4096], a_[4096];                             \
		kv_err e_;                                                  \
		v1_fingerprint((k), b_, sizeof(b_));                        \
		e_ = (call);                                                \
		ck_assert_msg(e_ == (want), "%s: got %s (%s)", #call,       \
			      kv_strerror(e_), kvc_errmsg(k));              \
		ck_assert_msg(e_ == KV_OK || kvc_errmsg(k)[0] != '\0',      \
			      "%s: no message", #call);                     \
		v1_fingerprint((k), a_, sizeof(a_));                        \
		ck_assert_str_eq(b_, a_);                                   \
		v1_audit_ok((k), #call, __LINE__);                          \
	} while (0)

START_TEST(test_v1_misuse)
{
	kvc *k = v1_small(true);
	uint32_t tok[20];
	int32_t w, r, child;
	kvc_verdict v;
	bool yes;
	size_t n;
	uint32_t need[KVC_MAX_GROUPS];

	for (uint32_t i = 0; i < 20; i++)
		tok[i] = i;
	ck_assert_int_eq(kvc_seq_new(k, tok, 6, &w), KV_OK);
	ck_assert_int_eq(kvc_seq_new(k, tok, 6, &r), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, r, 0), KV_OK);
	/* longer than max_model_len 16 */
	ck_assert_int_eq(kvc_seq_new(k, tok, 17, &child), KV_EINVAL);
	UNCHANGED(k, kvc_append(k, r, tok, 11, 0, false), KV_EINVAL);
	UNCHANGED(k, kvc_append(k, w, tok, 11, 0, false), KV_EINVAL);
	UNCHANGED(k, kvc_append(k, w, tok, 1, 0, true), KV_EINVAL);
	UNCHANGED(k, kvc_append(k, r, tok, 0, 0, false), KV_EINVAL);
	/* wrong state */
	UNCHANGED(k, kvc_can_allocate(k, r, 0, &v), KV_ESTATE);
	UNCHANGED(k, kvc_can_append(k, w, 1, true, 0, &yes), KV_ESTATE);
	UNCHANGED(k, kvc_computed(k, w, 0, false), KV_ESTATE);
	UNCHANGED(k, kvc_allocate(k, r, 0), KV_ESTATE);	/* C = T */
	UNCHANGED(k, kvc_free_seq(k, w), KV_ESTATE);
	/* bad n */
	UNCHANGED(k, kvc_can_append(k, r, 0, true, 0, &yes), KV_EINVAL);
	UNCHANGED(k, kvc_can_append(k, r, 11, true, 0, &yes), KV_EINVAL);
	UNCHANGED(k, kvc_blocks_needed(k, r, 11, 0, need), KV_EINVAL);
	/* T + n past 2^32 is too long, not a few tokens */
	UNCHANGED(k, kvc_can_append(k, r, UINT32_MAX, true, 0, &yes),
		  KV_EINVAL);
	UNCHANGED(k, kvc_blocks_needed(k, r, UINT32_MAX, 0, need), KV_EINVAL);
	/* not in v1 */
	UNCHANGED(k, kvc_fork(k, r, &child), KV_ENOTSUP);
	UNCHANGED(k, kvc_swap_out(k, r), KV_ENOTSUP);
	UNCHANGED(k, kvc_can_swap_out(k, r, &yes), KV_ENOTSUP);
	UNCHANGED(k, kvc_swap_in(k, r, 0), KV_ENOTSUP);
	UNCHANGED(k, kvc_can_swap_in(k, r, 0, &v), KV_ENOTSUP);
	/* no such sequence */
	UNCHANGED(k, kvc_allocate(k, 99, 0), KV_ENOENT);
	UNCHANGED(k, kvc_free_seq(k, -1), KV_ENOENT);
	UNCHANGED(k, kvc_cached(k, 42, &n), KV_ENOENT);
	UNCHANGED(k, kvc_blocks_needed(k, 7, 1, 0, need), KV_ENOENT);
	/* still a healthy handle */
	UNCHANGED(k, kvc_computed(k, r, 3, true), KV_OK);
	ck_assert_int_eq(kvc_append(k, r, tok, 10, 0, false), KV_OK);
	ck_assert_uint_eq(kvc_seq_computed(k, r), 16);
	UNCHANGED(k, kvc_append(k, r, tok, 1, 0, false), KV_EINVAL);
	kvc_free(k);
}
END_TEST

/* R11 and the reference coordinators' rules. */
START_TEST(test_v1_config)
{
	static const struct {
		const char *name;
		bool caching, ok;
		uint32_t cpu;
		double wm;
		kvc_reuse reuse;
		struct grp g[4];
		uint32_t bs[4];
	} t[] = {
		{ "plain", true, true, 0, 0, 0, ATTN, { 0 } },
		{ "cpu blocks", false, false, 4, 0, 0, ATTN, { 0 } },
		{ "watermark", false, false, 0, 0.01, 0, ATTN, { 0 } },
		{ "lifo", false, false, 0, 0, KVC_REUSE_LIFO, ATTN, { 0 } },
		{ "fifo", false, true, 0, 0, KVC_REUSE_FIFO_LRU, ATTN, { 0 } },
		{ "two full, caching", true, false, 0, 0, 0,
		  { { "a", KVC_FULL, 0, 0 }, { "b", KVC_FULL, 0, 0 } }, { 0 } },
		{ "two full, no caching", false, true, 0, 0, 0,
		  { { "a", KVC_FULL, 0, 0 }, { "b", KVC_FULL, 0, 0 } }, { 0 } },
		{ "full+sw+state, caching", true, false, 0, 0, 0,
		  { { "a", KVC_FULL, 0, 0 }, { "b", KVC_SLIDING, 8, 0 },
		    { "c", KVC_STATE, 0, 0 } }, { 0 } },
		{ "full+sw+state, no caching", false, true, 0, 0, 0,
		  { { "a", KVC_FULL, 0, 0 }, { "b", KVC_SLIDING, 8, 0 },
		    { "c", KVC_STATE, 0, 0 } }, { 0 } },
		{ "two windows, caching", true, false, 0, 0, 0,
		  { { "a", KVC_FULL, 0, 0 }, { "b", KVC_SLIDING, 8, 0 },
		    { "c", KVC_SLIDING, 16, 0 } }, { 0 } },
		{ "interleaved, caching", true, false, 0, 0, 0,
		  { { "a", KVC_FULL, 0, 0 }, { "b", KVC_SLIDING, 8, 0 },
		    { "c", KVC_FULL, 0, 0 } }, { 0 } },
		{ "other first, caching", true, true, 0, 0, 0,
		  { { "b", KVC_SLIDING, 8, 0 }, { "a", KVC_FULL, 0, 0 } },
		  { 0 } },
		{ "block sizes differ, caching", true, false, 0, 0, 0,
		  { { "a", KVC_FULL, 0, 0 }, { "b", KVC_SLIDING, 8, 0 } },
		  { 4, 8 } },
		{ "block sizes differ, no caching", false, true, 0, 0, 0,
		  { { "a", KVC_FULL, 0, 0 }, { "b", KVC_SLIDING, 8, 0 } },
		  { 4, 8 } },
		{ "state alone, caching", true, true, 0, 0, 0,
		  { { "m", KVC_STATE, 0, 0 } }, { 0 } },
		{ "sliding alone, caching", true, true, 0, 0, 0,
		  { { "s", KVC_SLIDING, 3, 0 } }, { 0 } },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct kvc_config cfg;
		char why[256] = "";
		kv_err e;
		kvc *k;

		kvc_config_default(&cfg, KVC_VLLM_V1);
		cfg.gpu_blocks = 16;
		cfg.block_size = 4;
		cfg.prefix_caching = t[i].caching;
		cfg.cpu_blocks = t[i].cpu;
		cfg.watermark = t[i].wm;
		cfg.reuse = t[i].reuse;
		for (uint32_t g = 0; g < 4 && t[i].g[g].name; g++) {
			strcpy(cfg.group[g].name, t[i].g[g].name);
			cfg.group[g].kind = t[i].g[g].kind;
			cfg.group[g].window = t[i].g[g].window;
			cfg.group[g].block_size = t[i].bs[g];
			cfg.ngroups = g + 1;
		}
		k = kvc_new(&cfg, &e, why, sizeof(why));
		ck_assert_msg((k != NULL) == t[i].ok, "%s: %s", t[i].name,
			      why);
		if (k == NULL) {
			ck_assert_int_eq(e, KV_ECONFIG);
			ck_assert_msg(why[0] != '\0', "%s: no message",
				      t[i].name);
		} else {
			ck_assert_uint_eq(kvc_free_blocks(k, 0), 15);
			v1_audit_ok(k, t[i].name, 0);
		}
		kvc_free(k);
	}
}
END_TEST

/* The null block alone: nothing is ever usable. */
START_TEST(test_v1_null_only)
{
	static const struct vcase c = { "null", 4, 1, 0, false, ATTN,
					 { { 0 } } };
	kvc *k = v1_make(&c);
	uint32_t t = 7;
	int32_t s;
	kvc_verdict v;

	ck_assert_uint_eq(kvc_free_blocks(k, 0), 0);
	ck_assert_int_eq(kvc_seq_new(k, &t, 1, &s), KV_OK);
	ck_assert_int_eq(kvc_can_allocate(k, s, 0, &v), KV_OK);
	ck_assert_int_eq(v, KVC_VERDICT_NEVER);
	ck_assert_int_eq(kvc_allocate(k, s, 0), KV_ENOSPC);
	v1_audit_ok(k, "null", 0);
	kvc_free(k);
}
END_TEST

/*
 * vllm-project/vllm PR #42615: a block freed twice in one call landed in
 * the free queue twice.  Shared blocks are released once per holder and
 * queued once, whatever the order of the frees.
 */
START_TEST(test_v1_no_double_free)
{
	static const struct vcase c = { "df", 4, 9, 0, true, ATTN,
					 { { 0 } } };
	kvc *k = v1_make(&c);
	uint32_t tok[40];
	int32_t a, b, d;
	size_t n;
	const int32_t *id;
	bool seen[9] = { false };

	for (uint32_t i = 0; i < 40; i++)
		tok[i] = i;
	ck_assert_int_eq(kvc_seq_new(k, tok, 9, &a), KV_OK);
	ck_assert_int_eq(kvc_seq_new(k, tok, 10, &b), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, a, 0), KV_OK);	/* [1,2,3] */
	ck_assert_int_eq(kvc_allocate(k, b, 0), KV_OK);	/* [1,2,4] */
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 4);
	ck_assert_int_eq(kvc_free_seq(k, b), KV_OK);
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 5);
	ck_assert_int_eq(kvc_free_seq(k, b), KV_ESTATE);
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 5);
	ck_assert_int_eq(kvc_free_seq(k, a), KV_OK);
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 8);
	v1_audit_ok(k, "df", 0);
	/* All 8 usable ids, each handed out exactly once. */
	ck_assert_int_eq(kvc_seq_new(k, tok + 8, 32, &d), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, d, 0), KV_OK);
	id = kvc_table(k, d, 0, &n);
	ck_assert_uint_eq(n, 8);
	for (size_t i = 0; i < n; i++) {
		ck_assert(id[i] >= 1 && id[i] <= 8);
		ck_assert(!seen[id[i]]);
		seen[id[i]] = true;
	}
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 0);
	v1_audit_ok(k, "df", 1);
	kvc_free(k);
}
END_TEST

/*
 * Every free id of k and d, in free-queue order, must agree: a sequence of
 * distinct tokens takes them all in each.
 */
static void
v1_same_queue(kvc *k, kvc *d, uint32_t first)
{
	uint32_t n = kvc_free_blocks(k, 0), tok[64];
	int32_t x, y;
	size_t nx, ny;
	const int32_t *ix, *iy;

	ck_assert_uint_eq(n, kvc_free_blocks(d, 0));
	ck_assert_uint_le(n * 4, 64);
	for (uint32_t i = 0; i < n * 4; i++)
		tok[i] = first + i;
	ck_assert_int_eq(kvc_seq_new(k, tok, n * 4, &x), KV_OK);
	ck_assert_int_eq(kvc_seq_new(d, tok, n * 4, &y), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, x, 0), KV_OK);
	ck_assert_int_eq(kvc_allocate(d, y, 0), KV_OK);
	ix = kvc_table(k, x, 0, &nx);
	iy = kvc_table(d, y, 0, &ny);
	ck_assert_uint_eq(nx, n);
	ck_assert_uint_eq(ny, n);
	for (size_t i = 0; i < nx; i++)
		ck_assert_int_eq(ix[i], iy[i]);
	ck_assert_int_eq(kvc_free_seq(k, x), KV_OK);
	ck_assert_int_eq(kvc_free_seq(d, y), KV_OK);
}

/*
 * A damaged table (white box).  A free block in it: kvc_free_seq refuses
 * the whole call, after the one-pass release had let the blocks behind it
 * go, and leaves every count and the free queue's order as they were.  A
 * block twice in it: released once, as the two passes release it.
 */
START_TEST(test_v1_free_damaged)
{
	static const struct vcase c = { "dmg", 4, 12, 0, true, ATTN,
					 { { 0 } } };
	static const int32_t bad[] = { 0, 12, 13, -2, INT32_MIN };
	kvc *k = v1_make(&c), *d;
	uint32_t tok[16];
	int32_t a, b, save, spare = -1;
	size_t na, nb;
	const int32_t *ia, *ib;
	char f1[4096], f2[4096];
	struct kvc_seq *qb;

	for (uint32_t i = 0; i < 16; i++)
		tok[i] = i;
	ck_assert_int_eq(kvc_seq_new(k, tok, 9, &a), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, a, 0), KV_OK);	/* 3 blocks */
	ck_assert_int_eq(kvc_seq_new(k, tok, 16, &b), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, b, 0), KV_OK);	/* 2 hit, 2 new */
	ia = kvc_table(k, a, 0, &na);
	ib = kvc_table(k, b, 0, &nb);
	ck_assert_uint_eq(nb, 4);
	ck_assert_int_eq(ib[0], ia[0]);	/* shared: 2 references */
	for (int32_t id = 1; id < 12 && spare < 0; id++) {
		bool used = false;

		for (size_t i = 0; i < na; i++)
			used |= ia[i] == id;
		for (size_t i = 0; i < nb; i++)
			used |= ib[i] == id;
		if (!used)
			spare = id;
	}
	ck_assert_int_ge(spare, 1);
	d = kvc_clone(k);
	ck_assert_ptr_nonnull(d);
	v1_fingerprint(k, f1, sizeof(f1));
	/* the table's head is free: its tail went before it was seen */
	qb = &k->seq[b];
	save = qb->tab[0].id[0];
	qb->tab[0].id[0] = spare;
	ck_assert_int_eq(kvc_free_seq(k, b), KV_EREF);
	ck_assert_ptr_nonnull(strstr(kvc_errmsg(k), "double free"));
	qb->tab[0].id[0] = save;
	v1_fingerprint(k, f2, sizeof(f2));
	ck_assert_str_eq(f1, f2);
	/* ids outside the pool's 1 .. 11, the last the release meets: the
	 * null block, one past the end, negatives that are not KVC_NULL;
	 * refused, the blocks after them given back */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		qb->tab[0].id[0] = bad[i];
		ck_assert_int_eq(kvc_free_seq(k, b), KV_EREF);
		qb->tab[0].id[0] = save;
		v1_fingerprint(k, f2, sizeof(f2));
		ck_assert_str_eq(f1, f2);
	}
	v1_audit_ok(k, "dmg", 0);
	v1_same_queue(k, d, 100);
	/* the same release in both, then the same queue */
	ck_assert_int_eq(kvc_free_seq(k, b), KV_OK);
	ck_assert_int_eq(kvc_free_seq(d, b), KV_OK);
	v1_same_queue(k, d, 200);
	/* a's last block listed twice (its third dropped): the two
	 * passes release it once and go on */
	qb = &k->seq[a];
	save = qb->tab[0].id[2];
	qb->tab[0].id[2] = qb->tab[0].id[1];
	ck_assert_int_eq(kvc_free_seq(k, a), KV_OK);
	ck_assert_uint_eq(kvc_free_blocks(k, 0),
			  kvc_free_blocks(d, 0) + 2);
	/* in d the same by hand: a's blocks 1 and 0 are released, block 2
	 * stays taken (its reference is lost with the damage) */
	{
		struct kvc_seq *qd = &d->seq[a];

		qd->tab[0].id[2] = qd->tab[0].id[1];
		qd->tab[0].n = 2;
		(void)save;
	}
	ck_assert_int_eq(kvc_free_seq(d, a), KV_OK);
	v1_same_queue(k, d, 300);
	kvc_free(k);
	kvc_free(d);
}
END_TEST

START_TEST(test_v1_clone)
{
	static const struct vcase c = { "clone", 4, 12, 0, true,
	  { { "f", KVC_FULL, 0, 0 }, { "s", KVC_SLIDING, 4, 0 } }, { { 0 } } };
	kvc *k = v1_make(&c), *d;
	uint32_t tok[16];
	int32_t a, b;
	static char f1[4096], f2[4096];

	for (uint32_t i = 0; i < 16; i++)
		tok[i] = i;
	ck_assert_int_eq(kvc_seq_new(k, tok, 9, &a), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, a, 0), KV_OK);
	ck_assert_int_eq(kvc_seq_new(k, tok, 12, &b), KV_OK);
	d = kvc_clone(k);
	ck_assert_ptr_nonnull(d);
	v1_fingerprint(k, f1, sizeof(f1));
	v1_fingerprint(d, f2, sizeof(f2));
	ck_assert_str_eq(f1, f2);
	v1_audit_ok(d, "clone", 0);
	/* The copy moves on its own. */
	ck_assert_int_eq(kvc_allocate(d, b, 0), KV_OK);
	ck_assert_int_eq(kvc_free_seq(d, a), KV_OK);
	v1_audit_ok(d, "clone", 1);
	v1_audit_ok(k, "clone", 2);
	v1_fingerprint(k, f2, sizeof(f2));
	ck_assert_str_eq(f1, f2);
	/* ... and so does the original, with the same results. */
	ck_assert_int_eq(kvc_allocate(k, b, 0), KV_OK);
	ck_assert_int_eq(kvc_free_seq(k, a), KV_OK);
	v1_fingerprint(k, f1, sizeof(f1));
	v1_fingerprint(d, f2, sizeof(f2));
	ck_assert_str_eq(f1, f2);
	kvc_free(d);
	kvc_free(k);
}
END_TEST

/*
 * vLLM #29387 (after the pinned commit): a request whose state-group hit
 * ends on a block another request cached in the same step waits a step,
 * since the state at that block is an output of the step.  Off, the pinned
 * commit admits it at once.
 */
START_TEST(test_v1_same_step_state_hit)
{
	static const struct vcase c = { "defer", 4, 30, 0, true,
	  { { "m", KVC_STATE, 0, 0 }, { "f", KVC_FULL, 0, 0 } }, { { 0 } } };
	uint32_t tok[13], need[KVC_MAX_GROUPS];
	int32_t a, b;
	size_t h;
	kvc_verdict v;
	kvc *k, *d;

	for (uint32_t i = 0; i < 13; i++)
		tok[i] = i < 12 ? i : 100;
	k = v1_make_defer(&c, true);
	kvc_step_begin(k);
	ck_assert_int_eq(kvc_seq_new(k, tok, 12, &a), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, a, 0), KV_OK);	/* caches 3 */
	ck_assert_int_eq(kvc_seq_new(k, tok, 13, &b), KV_OK);
	ck_assert_int_eq(kvc_cached(k, b, &h), KV_OK);
	ck_assert_uint_eq(h, 12);
	ck_assert_int_eq(kvc_can_allocate(k, b, 0, &v), KV_OK);
	ck_assert_int_eq(v, KVC_VERDICT_LATER);
	ck_assert_int_eq(kvc_blocks_needed(k, b, 0, 0, need), KV_OK);
	ck_assert_uint_eq(need[0], 31);		/* num_gpu_blocks + 1 */
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 23);
	ck_assert_int_eq(kvc_allocate(k, b, 0), KV_ENOSPC);
	ck_assert_ptr_nonnull(strstr(kvc_errmsg(k), "cached in this step"));
	ck_assert_int_eq(kvc_seq_state(k, b), KVC_WAITING);
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 23);
	v1_audit_ok(k, "defer", 0);
	d = kvc_clone(k);	/* the step's blocks go with a copy */
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(kvc_allocate(d, b, 0), KV_ENOSPC);
	kvc_free(d);
	/* the next step: the state after 12 tokens is computed */
	kvc_step_begin(k);
	ck_assert_int_eq(kvc_can_allocate(k, b, 0, &v), KV_OK);
	ck_assert_int_eq(v, KVC_VERDICT_OK);
	ck_assert_int_eq(kvc_allocate(k, b, 0), KV_OK);
	ck_assert_uint_eq(kvc_seq_computed(k, b), 13);
	v1_audit_ok(k, "defer", 1);
	kvc_free(k);

	/* the pinned commit: the hit is taken in the same step */
	k = v1_make(&c);
	kvc_step_begin(k);
	ck_assert_int_eq(kvc_seq_new(k, tok, 12, &a), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, a, 0), KV_OK);
	ck_assert_int_eq(kvc_seq_new(k, tok, 13, &b), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, b, 0), KV_OK);
	ck_assert_int_eq(kvc_cached(k, a, &h), KV_OK);
	kvc_free(k);

	/* a vllm-v1 setting: other modes refuse it */
	{
		struct kvc_config cfg;
		kv_err e;
		char why[256];

		kvc_config_default(&cfg, KVC_EXACT);
		cfg.gpu_blocks = 8;
		cfg.defer_same_step_state_hits = true;
		ck_assert_ptr_null(kvc_new(&cfg, &e, why, sizeof(why)));
		ck_assert_int_eq(e, KV_ECONFIG);
		ck_assert_ptr_nonnull(strstr(why, "vllm-v1"));
	}
}
END_TEST

/* ---- random walk with decision/action consistency ----------------- */

static uint64_t
v1_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static const struct vcase walks[] = {
	{ "walk full", 4, 24, 64, true, ATTN, { { 0 } } },
	{ "walk full, no caching", 4, 24, 64, false, ATTN, { { 0 } } },
	{ "walk sliding", 4, 20, 64, true, { { "s", KVC_SLIDING, 6, 0 } },
	  { { 0 } } },
	{ "walk state", 4, 20, 64, true, { { "m", KVC_STATE, 0, 0 } },
	  { { 0 } } },
	{ "walk hybrid sw", 4, 40, 64, true,
	  { { "f", KVC_FULL, 0, 0 }, { "s1", KVC_SLIDING, 9, 0 },
	    { "s2", KVC_SLIDING, 9, 0 } }, { { 0 } } },
	{ "walk hybrid state", 2, 40, 48, true,
	  { { "m", KVC_STATE, 0, 0 }, { "f", KVC_FULL, 0, 0 } }, { { 0 } } },

	{ "walk mixed sizes", 2, 40, 48, false,
	  { { "f", KVC_FULL, 0, 0 }, { "s", KVC_SLIDING, 5, 4 } },
	  { { 0 } } },
	/* the last: with defer_same_step_state_hits and steps */
	{ "walk hybrid state, same-step hits deferred", 2, 40, 48, true,
	  { { "m", KVC_STATE, 0, 0 }, { "f", KVC_FULL, 0, 0 } }, { { 0 } } },
};

#define NWALKS (sizeof(walks) / sizeof(walks[0]))

START_TEST(test_v1_walk)
{
	const struct vcase *c = &walks[_i];
	bool defer = (size_t)_i == NWALKS - 1;
	kvc *k = v1_make_defer(c, defer);
	uint64_t rng = 0x9e3779b97f4a7c15ull + (uint64_t)_i;
	uint32_t mml = c->mml, tok[64];
	int32_t seqs[12];
	uint32_t nseq = 0;
	static char before[8192], after[8192];
	bool sliding = false;

	for (uint32_t g = 0; g < 4 && c->g[g].name != NULL; g++)
		sliding |= c->g[g].kind == KVC_SLIDING;
	for (int step = 0; step < 3000; step++) {
		uint32_t r = (uint32_t)v1_rand(&rng);
		int32_t s;
		size_t T;
		kv_err e;
		kvc *trial;

		if (nseq < 12 && (nseq == 0 || r % 16 == 0)) {
			/* Prompts from a few shared prefixes. */
			uint32_t len =
			    1 + (uint32_t)(v1_rand(&rng) % (mml / 2));
			uint32_t base = (uint32_t)(v1_rand(&rng) % 3) * 1000;

			for (uint32_t i = 0; i < len; i++)
				tok[i] = base + (i < len / 2 ? i : i + r % 7);
			ck_assert_int_eq(kvc_seq_new(k, tok, len, &s), KV_OK);
			seqs[nseq++] = s;
			continue;
		}
		if (defer && r % 8 == 1) {
			kvc_step_begin(k);	/* a no-op for the others */
			continue;
		}
		s = seqs[(r >> 4) % nseq];
		T = kvc_seq_len(k, s);
		v1_fingerprint(k, before, sizeof(before));
		if (kvc_seq_state(k, s) == KVC_WAITING) {
			kvc_verdict v;
			uint32_t need[KVC_MAX_GROUPS], sum = 0, fr;

			ck_assert_int_eq(kvc_can_allocate(k, s, 0, &v), KV_OK);
			ck_assert_int_eq(kvc_blocks_needed(k, s, 0, 0, need),
					 KV_OK);
			for (uint32_t g = 0; g < kvc_ngroups(k); g++)
				sum += need[g];
			fr = kvc_free_blocks(k, 0);
			trial = kvc_clone(k);
			ck_assert_ptr_nonnull(trial);
			e = kvc_allocate(trial, s, 0);
			ck_assert_msg((v == KVC_VERDICT_OK) == (e == KV_OK),
				      "%s %d: verdict %d, trial %s", c->name,
				      step, v, kv_strerror(e));
			ck_assert((sum <= fr) == (e == KV_OK));
			if (e == KV_OK)
				ck_assert_uint_eq(kvc_free_blocks(trial, 0),
						  fr - sum);
			kvc_free(trial);
			e = kvc_allocate(k, s, (r >> 8) % 3 == 0 ?
					 1 + (r >> 12) % 9 : 0);
			ck_assert(e == KV_OK || e == KV_ENOSPC);
			if (e == KV_ENOSPC && r % 5 == 0 && nseq > 1) {
				/* make room: free some running request */
				for (uint32_t i = 0; i < nseq; i++)
					if (kvc_seq_state(k, seqs[i]) ==
					    KVC_RUNNING) {
						ck_assert_int_eq(
						    kvc_free_seq(k, seqs[i]),
						    KV_OK);
						break;
					}
			}
		} else if (r % 11 == 0) {
			ck_assert_int_eq(kvc_free_seq(k, s), KV_OK);
		} else if (kvc_seq_computed(k, s) < T && r % 2) {
			e = kvc_allocate(k, s, 1 + (r >> 8) % 6);
			ck_assert(e == KV_OK || e == KV_ENOSPC);
		} else if (T < mml) {
			uint32_t n = 1 + (r >> 8) % 5, L = (r >> 12) % 4;
			bool yes;

			if (T + n > mml)
				n = mml - (uint32_t)T;
			for (uint32_t i = 0; i < n; i++)
				tok[i] = (uint32_t)(T + i) % 97;
			ck_assert_int_eq(kvc_can_append(k, s, n, true, L,
							&yes), KV_OK);
			trial = kvc_clone(k);
			ck_assert_ptr_nonnull(trial);
			e = kvc_append(trial, s, tok, n, L, L > 0);
			ck_assert_msg(yes == (e == KV_OK), "%s %d: can_append "
				      "%d, trial %s", c->name, step, yes,
				      kv_strerror(e));
			kvc_free(trial);
			e = kvc_append(k, s, tok, n, L, L > 0);
			ck_assert(e == KV_OK || e == KV_ENOSPC);
			if (e == KV_ENOSPC)
				ck_assert_uint_eq(kvc_seq_len(k, s), T);
			v1_fingerprint(k, after, sizeof(after));
			if (e == KV_ENOSPC && !sliding)
				ck_assert_str_eq(before, after);
		} else {
			ck_assert_int_eq(kvc_free_seq(k, s), KV_OK);
		}
		v1_audit_ok(k, c->name, step);
	}
	kvc_free(k);
}
END_TEST

Suite *
v1_suite(void)
{
	Suite *s = suite_create("vllm-v1");
	TCase *tc = tcase_create("cases");

	tcase_add_loop_test(tc, test_v1_cases, 0,
			    (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tc = tcase_create("misuse");
	tcase_add_test(tc, test_v1_misuse);
	tcase_add_test(tc, test_v1_config);
	tcase_add_test(tc, test_v1_null_only);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tc = tcase_create("pool");
	tcase_add_test(tc, test_v1_no_double_free);
	tcase_add_test(tc, test_v1_free_damaged);
	tcase_add_test(tc, test_v1_clone);
	tcase_add_test(tc, test_v1_same_step_state_hit);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tc = tcase_create("walk");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_v1_walk, 0, (int)NWALKS);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(v1_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
