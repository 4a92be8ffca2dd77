/*
 * check_ds.c -- mode `deepspeed` (core/kv_ds.c): DeepSpeed FastGen's
 * per-group BlockedAllocator and the per-group scheduling contract
 * (docs/replay.md R35-R47, docs/core-spec.md §4 and §9).
 *
 * Three layers of tests:
 *   - the allocator alone (struct kv_dsa) with the inputs of core-spec §9
 *     cases 2-6, including the whole-call free validation;
 *   - get_kv_requirements with the numbers of cases 10 and 11;
 *   - table-driven op scripts on a handle: after every step kvc_audit() must
 *     pass, a clone must look identical, and a query or a failed action must
 *     leave the state (tables, counters, every free list in order)
 *     byte-for-byte as it was.
 */
#include "core/kv_ds.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---------------------------------------------------------- */

/* "a,b,c" of ids, for messages and comparisons. */
static void
ids_str(char *buf, size_t len, const int32_t *id, size_t n)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%d",
					i ? "," : "", id[i]);
}

/* The free list of allocator a, head first. */
static void
dsa_list_str(char *buf, size_t len, const struct kv_dsa *a)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int32_t id = a->free.head; id >= 0 && off < len;
	     id = a->free.lk[id].next)
		off += (size_t)snprintf(buf + off, len - off, "%s%d",
					off ? "," : "", id);
}

/* ---- the allocator alone (core-spec §9 cases 2-6) --------------------- */

START_TEST(test_dsa_case2_order)
{
	struct kv_dsa a;
	int32_t out[4];
	char s[64];

	ck_assert_int_eq(kv_dsa_init(&a, 4), KV_OK);
	ck_assert_int_eq(kv_dsa_allocate(&a, 2, out), KV_OK);
	ck_assert_int_eq(out[0], 0);
	ck_assert_int_eq(out[1], 1);
	ck_assert_int_eq(kv_dsa_allocate(&a, 2, out), KV_OK);
	ck_assert_int_eq(out[0], 2);
	ck_assert_int_eq(out[1], 3);
	ck_assert_int_eq(kv_dsa_free(&a, (int32_t[]){ 0 }, 1, NULL), KV_OK);
	ck_assert_int_eq(kv_dsa_free(&a, (int32_t[]){ 2 }, 1, NULL), KV_OK);
	dsa_list_str(s, sizeof(s), &a);
	ck_assert_str_eq(s, "2,0");
	ck_assert_int_eq(kv_dsa_allocate(&a, 2, out), KV_OK);
	ck_assert_int_eq(out[0], 2);
	ck_assert_int_eq(out[1], 0);
	/* any further allocation fails, atomically */
	out[0] = -7;
	ck_assert_int_eq(kv_dsa_allocate(&a, 1, out), KV_ENOSPC);
	ck_assert_int_eq(out[0], -7);
	ck_assert_uint_eq(kv_dsa_nfree(&a), 0);
	ck_assert_int_eq(kv_dsa_check(&a), 0);
	kv_dsa_release(&a);
}
END_TEST

/* One whole-call rejection: pool of n all used, free(ids) must fail. */
struct bad_free {
	const char *what;
	uint32_t nblocks;
	uint32_t prefree;		/* ids 0..prefree-1 freed first */
	int32_t ids[4];
	size_t nids;
	enum kv_dsa_fault_kind kind;
	size_t index;
	int32_t id;
};

static const struct bad_free bad_frees[] = {
	/* case 3: the reference accepts [3,3], makes a self-loop, counts 2 */
	{ "case 3: duplicate id", 4, 0, { 3, 3 }, 2, KV_DSA_REPEAT, 1, 3 },
	/* case 4: 7 out of range rejects the whole call, 1 stays used */
	{ "case 4: whole call", 3, 0, { 1, 7 }, 2, KV_DSA_RANGE, 1, 7 },
	/* case 5: an id already free ("Block 1 is already free") */
	{ "case 5: already free", 4, 2, { 2, 1 }, 2, KV_DSA_FREE, 1, 1 },
	{ "negative id", 4, 0, { 0, -1 }, 2, KV_DSA_RANGE, 1, -1 },
	{ "repeat after others", 4, 0, { 2, 0, 1, 0 }, 4, KV_DSA_REPEAT, 3,
	  0 },
	{ "id == nblocks", 4, 0, { 4 }, 1, KV_DSA_RANGE, 0, 4 },
};

START_TEST(test_dsa_free_validation)
{
	const struct bad_free *b = &bad_frees[_i];
	struct kv_dsa a;
	struct kv_dsa_fault f;
	int32_t out[8];
	char before[64], after[64];

	ck_assert_int_eq(kv_dsa_init(&a, b->nblocks), KV_OK);
	ck_assert_int_eq(kv_dsa_allocate(&a, b->nblocks, out), KV_OK);
	for (uint32_t i = 0; i < b->prefree; i++)
		ck_assert_int_eq(kv_dsa_free(&a, &out[i], 1, NULL), KV_OK);
	dsa_list_str(before, sizeof(before), &a);

	/* the validation alone */
	ck_assert_int_eq(kv_dsa_free_check(&a, b->ids, b->nids, &f),
			 KV_EINVAL);
	ck_assert_msg(f.kind == b->kind && f.index == b->index &&
		      f.id == b->id, "%s: fault %d at %zu (id %d)", b->what,
		      f.kind, f.index, f.id);
	/* the free call: rejected as a whole, nothing changed */
	ck_assert_int_eq(kv_dsa_free(&a, b->ids, b->nids, NULL), KV_EINVAL);
	dsa_list_str(after, sizeof(after), &a);
	ck_assert_str_eq(before, after);
	ck_assert_uint_eq(kv_dsa_nfree(&a), b->prefree);
	ck_assert_int_eq(kv_dsa_check(&a), 0);
	for (uint32_t i = b->prefree; i < b->nblocks; i++)
		ck_assert(kv_dsa_used(&a, (int32_t)i));
	/* the allocator never hands out an id twice afterwards */
	if (b->prefree == 0)
		ck_assert_int_eq(kv_dsa_allocate(&a, 1, out), KV_ENOSPC);
	kv_dsa_release(&a);
}
END_TEST

START_TEST(test_dsa_free_check_accepts_valid)
{
	struct kv_dsa a;
	struct kv_dsa_fault f;
	int32_t out[4];

	ck_assert_int_eq(kv_dsa_init(&a, 4), KV_OK);
	ck_assert_int_eq(kv_dsa_allocate(&a, 4, out), KV_OK);
	/* validation passes twice in a row (the stamps are per call) */
	ck_assert_int_eq(kv_dsa_free_check(&a, (int32_t[]){ 3, 1 }, 2, &f),
			 KV_OK);
	ck_assert_int_eq(f.kind, KV_DSA_OK);
	ck_assert_int_eq(kv_dsa_free_check(&a, (int32_t[]){ 3, 1 }, 2, &f),
			 KV_OK);
	ck_assert_int_eq(kv_dsa_free_check(&a, NULL, 0, &f), KV_OK);
	ck_assert_uint_eq(kv_dsa_nfree(&a), 0);
	/* a table [a, b, c] freed makes the list c, b, a (R45) */
	ck_assert_int_eq(kv_dsa_free(&a, (int32_t[]){ 3, 1, 2 }, 3, NULL),
			 KV_OK);
	ck_assert_int_eq(kv_dsa_allocate(&a, 3, out), KV_OK);
	ck_assert_int_eq(out[0], 2);
	ck_assert_int_eq(out[1], 1);
	ck_assert_int_eq(out[2], 3);
	kv_dsa_release(&a);
}
END_TEST

START_TEST(test_dsa_stamp_wraparound)
{
	struct kv_dsa a;
	int32_t out[2];

	ck_assert_int_eq(kv_dsa_init(&a, 2), KV_OK);
	ck_assert_int_eq(kv_dsa_allocate(&a, 2, out), KV_OK);
	a.epoch = UINT32_MAX - 1;
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(kv_dsa_free_check(&a, (int32_t[]){ 0, 1 }, 2,
						   NULL), KV_OK);
		ck_assert_int_eq(kv_dsa_free_check(&a, (int32_t[]){ 1, 1 }, 2,
						   NULL), KV_EINVAL);
	}
	ck_assert_uint_ne(a.epoch, 0);
	kv_dsa_release(&a);
}
END_TEST

/* case 6: OOM then recycle (test_blocked_allocator.py / v0 test shape) */
START_TEST(test_dsa_case6_oom_recycle)
{
	struct kv_dsa a;
	int32_t *ids = malloc(1024 * sizeof(*ids));
	int32_t one;

	ck_assert_ptr_nonnull(ids);
	ck_assert_int_eq(kv_dsa_init(&a, 1024), KV_OK);
	for (int i = 0; i < 1024; i++) {
		ck_assert_int_eq(kv_dsa_allocate(&a, 1, &ids[i]), KV_OK);
		ck_assert_int_eq(ids[i], i);
	}
	ck_assert_int_eq(kv_dsa_allocate(&a, 1, &one), KV_ENOSPC);
	for (int i = 0; i < 100; i++) {
		int32_t victim = ids[(i * 37) % 1024];

		ck_assert_int_eq(kv_dsa_free(&a, &victim, 1, NULL), KV_OK);
		ck_assert_int_eq(kv_dsa_allocate(&a, 1, &one), KV_OK);
		ck_assert_int_eq(one, victim);
		ck_assert_int_eq(kv_dsa_allocate(&a, 1, &one), KV_ENOSPC);
	}
	ck_assert_int_eq(kv_dsa_check(&a), 0);
	kv_dsa_release(&a);
	free(ids);
}
END_TEST

START_TEST(test_dsa_check_catches_damage)
{
	struct kv_dsa a, c;
	int32_t out[2];

	ck_assert_int_eq(kv_dsa_init(&a, 4), KV_OK);
	ck_assert_int_eq(kv_dsa_allocate(&a, 2, out), KV_OK);
	ck_assert_int_eq(kv_dsa_copy(&c, &a), KV_OK);
	ck_assert_int_eq(kv_dsa_check(&c), 0);
	/* the reference's self-loop: id 3 pointing at itself */
	c.free.lk[3].next = 3;
	ck_assert_int_ne(kv_dsa_check(&c), 0);
	kv_dsa_release(&c);
	ck_assert_int_eq(kv_dsa_copy(&c, &a), KV_OK);
	c.free.n++;		/* "2 free for 1" */
	ck_assert_int_ne(kv_dsa_check(&c), 0);
	kv_dsa_release(&c);
	ck_assert_int_eq(kv_dsa_check(&a), 0);
	kv_dsa_release(&a);
}
END_TEST

/* ---- get_kv_requirements (cases 10, 11) ------------------------------- */

struct req_case {
	uint64_t seen, new_tokens, held, max_new;
	uint32_t bs;
	uint64_t tokens;
	int64_t blocks;
};

static const struct req_case req_cases[] = {
	/* case 11: cdiv(300, 128) - 2 = 1 block */
	{ 200, 100, 2, 5, 128, 100, 1 },
	{ 200, 100, 2, 1, 128, 100, 1 },
	/* case 11: max_new_blocks 0 grants (0 + 2) * 128 - 200 = 56 */
	{ 200, 100, 2, 0, 128, 56, 0 },
	{ 200, 56, 2, 0, 128, 56, 0 },
	/* case 10: new placeholders against 2 then 1 remaining */
	{ 0, 4, 0, 2, 4, 4, 1 },
	{ 0, 4, 0, 1, 4, 4, 1 },
	/* case 10: 0 free, last block full: 0 tokens granted */
	{ 8, 1, 2, 0, 4, 0, 0 },
	{ 0, 9, 0, 1, 4, 4, 1 },
};

START_TEST(test_kv_requirements)
{
	const struct req_case *c = &req_cases[_i];
	uint64_t tokens;
	int64_t blocks;

	kv_ds_kv_requirements(c->seen, c->new_tokens, c->held, c->bs,
			      c->max_new, &tokens, &blocks);
	ck_assert_uint_eq(tokens, c->tokens);
	ck_assert_int_eq(blocks, c->blocks);
}
END_TEST

/* ---- op scripts on a handle -------------------------------------------- */

enum ds_op {
	OP_END = 0,
	OP_SEQ,		/* n tokens */
	OP_CAN_ALLOC,	/* out = verdict; L = lookahead */
	OP_ALLOC,	/* n */
	OP_APPEND,	/* n tokens; L given when has_l */
	OP_CAN_APPEND,	/* n, has_n; out = yes; L */
	OP_COMPUTED,
	OP_FREE,
	OP_FORK,
	OP_CAN_SWAP_OUT,
	OP_SWAP_OUT,
	OP_CAN_SWAP_IN,
	OP_SWAP_IN,
	OP_CACHED,	/* out = tokens */
	OP_NEEDED,	/* n; want = "g0,g1,..." */
	OP_TABLE,	/* want = "NAME=[ids] ..." */
	OP_FREE_BLOCKS,	/* want = "NAME=F ... cpu=0" */
	OP_STATE	/* want = "T S state" */
};

struct ds_step {
	enum ds_op op;
	char seq;		/* 'A'..'Z' */
	uint32_t n;
	bool has_n, has_l;
	uint32_t L;
	kv_err err;
	int out;
	const char *want;
};

#define SEQ(c, t)		{ .op = OP_SEQ, .seq = c, .n = t }
#define SEQ_E(c, t, e)		{ .op = OP_SEQ, .seq = c, .n = t, .err = e }
#define CAN_ALLOC(c, v)		{ .op = OP_CAN_ALLOC, .seq = c,             \
				  .out = KVC_VERDICT_##v }
#define ALLOC(c)		{ .op = OP_ALLOC, .seq = c }
#define ALLOC_E(c, e)		{ .op = OP_ALLOC, .seq = c, .err = e }
#define ALLOC_N(c, k, e)	{ .op = OP_ALLOC, .seq = c, .n = k,         \
				  .has_n = true, .err = e }
#define APPEND(c, k, e)		{ .op = OP_APPEND, .seq = c, .n = k, .err = e }
#define CAN_APPEND(c, k, y)	{ .op = OP_CAN_APPEND, .seq = c, .n = k,    \
				  .has_n = true, .out = y }
#define CAN_APPEND1(c, y)	{ .op = OP_CAN_APPEND, .seq = c, .out = y }
#define FREE(c, e)		{ .op = OP_FREE, .seq = c, .err = e }
#define TABLE(c, w)		{ .op = OP_TABLE, .seq = c, .want = w }
#define FREEB(w)		{ .op = OP_FREE_BLOCKS, .want = w }
#define NEEDED(c, k, w)		{ .op = OP_NEEDED, .seq = c, .n = k,        \
				  .want = w }
#define STATE(c, w)		{ .op = OP_STATE, .seq = c, .want = w }
#define MISUSE(o, c, e)		{ .op = o, .seq = c, .err = e }

struct ds_group {
	const char *name;
	uint32_t bs;		/* 0 = global */
};

struct ds_scenario {
	const char *name;
	uint32_t gpu_blocks, block_size, max_model_len;
	struct ds_group grp[3];	/* name NULL ends; none = one group attn */
	struct ds_step step[48];
};

static const struct ds_scenario scenarios[] = {
	{
		/* core-spec §9 case 2 on the handle: bs 1, one block a seq */
		"case 2: DeepSpeed allocator order", 4, 1, 8192, { { 0 } },
		{
			SEQ('A', 1), SEQ('B', 1), SEQ('C', 1), SEQ('D', 1),
			SEQ('E', 2), SEQ('F', 1),
			ALLOC('A'), ALLOC('B'), ALLOC('C'), ALLOC('D'),
			TABLE('A', "attn=[0]"), TABLE('D', "attn=[3]"),
			FREE('A', KV_OK), FREE('C', KV_OK),
			FREEB("attn=2 cpu=0"),
			CAN_ALLOC('E', OK), ALLOC('E'),
			TABLE('E', "attn=[2,0]"),
			CAN_ALLOC('F', LATER), ALLOC_E('F', KV_ENOSPC),
			TABLE('F', "attn=[]"), FREEB("attn=0 cpu=0"),
		},
	},
	{
		/* replay.md R45's example */
		"R45: LIFO across tables", 8, 2, 8192, { { 0 } },
		{
			SEQ('A', 5), SEQ('B', 4), SEQ('C', 3), SEQ('D', 9),
			ALLOC('A'), ALLOC('B'), ALLOC('C'),
			TABLE('A', "attn=[0,1,2]"), TABLE('B', "attn=[3,4]"),
			TABLE('C', "attn=[5,6]"), FREEB("attn=1 cpu=0"),
			FREE('A', KV_OK), FREE('C', KV_OK),
			CAN_ALLOC('D', OK), ALLOC('D'),
			TABLE('D', "attn=[6,5,2,1,0]"),
			FREEB("attn=1 cpu=0"), STATE('A', "5 0 waiting"),
			/* A re-admitted from the start (recompute) */
			CAN_ALLOC('A', LATER), ALLOC_E('A', KV_ENOSPC),
			FREE('D', KV_OK), ALLOC('A'),
			TABLE('A', "attn=[0,1,2]"), STATE('A', "5 5 running"),
		},
	},
	{
		/* case 10 in the per-group contract */
		"case 10: placeholders and a full last block", 4, 4, 8192,
		{ { 0 } },
		{
			SEQ('X', 8), SEQ('A', 3), SEQ('B', 4), SEQ('C', 1),
			ALLOC('X'), FREEB("attn=2 cpu=0"),
			CAN_ALLOC('A', OK), ALLOC('A'),
			CAN_ALLOC('B', OK), ALLOC('B'),
			FREEB("attn=0 cpu=0"),
			CAN_ALLOC('C', LATER), ALLOC_E('C', KV_ENOSPC),
			/* X's last block is full: 0 tokens granted */
			CAN_APPEND1('X', false), APPEND('X', 1, KV_ENOSPC),
			STATE('X', "8 8 running"),
			/* A's block has room for one token, not two */
			CAN_APPEND1('A', true), CAN_APPEND('A', 2, false),
			APPEND('A', 2, KV_ENOSPC), STATE('A', "3 3 running"),
			APPEND('A', 1, KV_OK), STATE('A', "4 4 running"),
			TABLE('A', "attn=[2]"), CAN_APPEND1('A', false),
		},
	},
	{
		/* case 11: bs 128, 200 seen in 2 blocks, none free */
		"case 11: requirement math", 2, 128, 8192, { { 0 } },
		{
			SEQ('A', 200), ALLOC('A'), TABLE('A', "attn=[0,1]"),
			NEEDED('A', 100, "1"), NEEDED('A', 56, "0"),
			CAN_APPEND('A', 56, true), CAN_APPEND('A', 57, false),
			CAN_APPEND('A', 100, false),
			APPEND('A', 100, KV_ENOSPC),
			APPEND('A', 56, KV_OK), STATE('A', "256 256 running"),
			CAN_APPEND1('A', false),
		},
	},
	{
		"case 11 with a free block", 3, 128, 8192, { { 0 } },
		{
			SEQ('A', 200), ALLOC('A'), NEEDED('A', 100, "1"),
			CAN_APPEND('A', 100, true), APPEND('A', 100, KV_OK),
			TABLE('A', "attn=[0,1,2]"), FREEB("attn=0 cpu=0"),
			STATE('A', "300 300 running"),
		},
	},
	{
		/* seed bug 1: group 0 has room, group 1 does not */
		"seed bug 1: per-group free counts", 4, 16, 8192,
		{ { "big", 16 }, { "small", 4 } },
		{
			SEQ('A', 16), SEQ('B', 1), SEQ('C', 20),
			CAN_ALLOC('A', OK), NEEDED('A', 0, "1,4"), ALLOC('A'),
			TABLE('A', "big=[0] small=[0,1,2,3]"),
			FREEB("big=3 small=0 cpu=0"),
			CAN_ALLOC('B', LATER), ALLOC_E('B', KV_ENOSPC),
			TABLE('B', "big=[] small=[]"),
			FREEB("big=3 small=0 cpu=0"),
			/* 5 small blocks > 4 in the group: never */
			CAN_ALLOC('C', NEVER), ALLOC_E('C', KV_ENOSPC),
			CAN_APPEND1('A', false), APPEND('A', 1, KV_ENOSPC),
			FREE('A', KV_OK), FREEB("big=4 small=4 cpu=0"),
			CAN_ALLOC('B', OK), ALLOC('B'),
			TABLE('B', "big=[0] small=[3]"),
		},
	},
	{
		/* per-group ids and block sizes, one group short */
		"multi-group: ids per group", 6, 2, 8192,
		{ { "a", 0 }, { "b", 4 } },
		{
			SEQ('A', 5), SEQ('B', 3),
			ALLOC('A'), TABLE('A', "a=[0,1,2] b=[0,1]"),
			ALLOC('B'), TABLE('B', "a=[3,4] b=[2]"),
			FREEB("a=1 b=3 cpu=0"),
			APPEND('A', 1, KV_OK), TABLE('A', "a=[0,1,2] b=[0,1]"),
			APPEND('A', 1, KV_OK),
			TABLE('A', "a=[0,1,2,5] b=[0,1]"),
			FREEB("a=0 b=3 cpu=0"),
			/* group b has room, group a does not */
			NEEDED('B', 2, "1,1"), CAN_APPEND('B', 2, false),
			APPEND('B', 2, KV_ENOSPC), TABLE('B', "a=[3,4] b=[2]"),
			STATE('B', "3 3 running"),
			CAN_APPEND1('B', true), APPEND('B', 1, KV_OK),
			TABLE('B', "a=[3,4] b=[2]"),
			FREE('A', KV_OK), FREEB("a=4 b=5 cpu=0"),
			FREE('B', KV_OK), FREEB("a=6 b=6 cpu=0"),
		},
	},
	{
		/* group 0 needs nothing, a later group needs a block */
		"multi-group: a later group grows alone", 3, 4, 8192,
		{ { "big", 0 }, { "small", 2 } },
		{
			SEQ('A', 2), SEQ('B', 2), ALLOC('A'),
			TABLE('A', "big=[0] small=[0]"),
			NEEDED('A', 1, "0,1"), APPEND('A', 1, KV_OK),
			TABLE('A', "big=[0] small=[0,1]"),
			ALLOC('B'), TABLE('B', "big=[1] small=[2]"),
			FREEB("big=1 small=0 cpu=0"),
			/* B's next token: big has room, small has none */
			NEEDED('B', 1, "0,1"), CAN_APPEND1('B', false),
			APPEND('B', 1, KV_ENOSPC), STATE('B', "2 2 running"),
			FREE('A', KV_OK), FREEB("big=2 small=2 cpu=0"),
			APPEND('B', 1, KV_OK),
			TABLE('B', "big=[1] small=[2,1]"),
		},
	},
	{
		/* R39 RUNNING: a chunked prompt (Dynamic SplitFuse) */
		"chunked prefill", 8, 4, 8192, { { 0 } },
		{
			SEQ('A', 10), ALLOC_N('A', 3, KV_OK),
			STATE('A', "10 3 running"), TABLE('A', "attn=[0]"),
			CAN_APPEND1('A', true), NEEDED('A', 0, "2"),
			ALLOC_N('A', 5, KV_OK), STATE('A', "10 8 running"),
			TABLE('A', "attn=[0,1]"),
			ALLOC('A'), STATE('A', "10 10 running"),
			TABLE('A', "attn=[0,1,2]"),
			ALLOC_E('A', KV_ESTATE), ALLOC_N('A', 1, KV_ESTATE),
			/* an append while a chunk is pending sends all of it */
			FREE('A', KV_OK), ALLOC_N('A', 2, KV_OK),
			TABLE('A', "attn=[2]"), APPEND('A', 1, KV_OK),
			STATE('A', "11 11 running"),
			TABLE('A', "attn=[2,1,0]"),
			FREE('A', KV_OK), STATE('A', "11 0 waiting"),
			ALLOC_N('A', 100, KV_OK), STATE('A', "11 11 running"),
			TABLE('A', "attn=[0,1,2]"),
		},
	},
	{
		/* WAITING append only adds tokens; max_model_len bounds all */
		"waiting append and max_model_len", 4, 4, 12, { { 0 } },
		{
			SEQ_E('Z', 13, KV_EINVAL), SEQ('A', 10),
			APPEND('A', 2, KV_OK), STATE('A', "12 0 waiting"),
			TABLE('A', "attn=[]"), FREEB("attn=4 cpu=0"),
			APPEND('A', 1, KV_EINVAL), STATE('A', "12 0 waiting"),
			NEEDED('A', 0, "3"), CAN_ALLOC('A', OK), ALLOC('A'),
			MISUSE(OP_CAN_APPEND, 'A', KV_EINVAL),
			APPEND('A', 1, KV_EINVAL), FREEB("attn=1 cpu=0"),
		},
	},
	{
		/* an admission that can never fit */
		"never", 4, 4, 8192, { { 0 } },
		{
			SEQ('A', 17), SEQ('B', 16),
			CAN_ALLOC('A', NEVER), ALLOC_E('A', KV_ENOSPC),
			CAN_ALLOC('B', OK), ALLOC('B'),
			TABLE('B', "attn=[0,1,2,3]"), CAN_ALLOC('A', NEVER),
		},
	},
	{
		/* misuse: an error, and the state unchanged */
		"API misuse leaves the state unchanged", 4, 4, 8192, { { 0 } },
		{
			SEQ('A', 5), SEQ('B', 3),
			MISUSE(OP_FREE, 'A', KV_ENOSPC),
			MISUSE(OP_CAN_APPEND, 'A', KV_ESTATE),
			MISUSE(OP_COMPUTED, 'A', KV_ESTATE),
			MISUSE(OP_FORK, 'A', KV_ENOTSUP),
			MISUSE(OP_CAN_SWAP_OUT, 'A', KV_ENOTSUP),
			MISUSE(OP_SWAP_OUT, 'A', KV_ENOTSUP),
			MISUSE(OP_CAN_SWAP_IN, 'A', KV_ENOTSUP),
			MISUSE(OP_SWAP_IN, 'A', KV_ENOTSUP),
			{ .op = OP_CAN_ALLOC, .seq = 'A', .L = 1,
			  .err = KV_EINVAL },
			{ .op = OP_APPEND, .seq = 'A', .n = 1, .has_l = true,
			  .err = KV_EINVAL },
			{ .op = OP_NEEDED, .seq = 'A', .L = 2,
			  .err = KV_EINVAL },
			{ .op = OP_CACHED, .seq = 'A', .out = 0 },
			NEEDED('A', 7, "2"),	/* n ignored while waiting */
			ALLOC('A'), TABLE('A', "attn=[0,1]"),
			MISUSE(OP_CAN_ALLOC, 'A', KV_ESTATE),
			{ .op = OP_CAN_APPEND, .seq = 'A', .L = 1,
			  .err = KV_EINVAL },
			{ .op = OP_CAN_APPEND, .seq = 'A', .n = 0,
			  .has_n = true, .err = KV_EINVAL },
			{ .op = OP_APPEND, .seq = 'A', .n = 1, .has_l = true,
			  .err = KV_EINVAL },
			{ .op = OP_COMPUTED, .seq = 'A', .n = 99,
			  .has_n = true },
			MISUSE(OP_FORK, 'A', KV_ENOTSUP),
			MISUSE(OP_CAN_SWAP_OUT, 'A', KV_ENOTSUP),
			MISUSE(OP_SWAP_OUT, 'A', KV_ENOTSUP),
			{ .op = OP_CACHED, .seq = 'A', .out = 0 },
			ALLOC_E('A', KV_ESTATE),
			MISUSE(OP_TABLE, 'Q', KV_ENOENT),
			TABLE('A', "attn=[0,1]"), STATE('A', "5 5 running"),
			FREE('A', KV_OK), MISUSE(OP_FREE, 'A', KV_ENOSPC),
			FREEB("attn=4 cpu=0"),
		},
	},
};

struct run {
	const struct ds_scenario *sc;
	kvc *k;
	int32_t id[26];
	int step;
};

/* Everything observable, and every free list in order. */
static void
snapshot(const kvc *k, char *buf, size_t len)
{
	const struct kvc_ds *ds = k->ms;
	size_t off = 0;
	char ids[512];

	for (uint32_t i = 0; i < kvc_nseqs(k) && off < len; i++) {
		off += (size_t)snprintf(buf + off, len - off, "%u:%d/%zu/%zu",
					i, kvc_seq_state(k, (int32_t)i),
					kvc_seq_len(k, (int32_t)i),
					kvc_seq_computed(k, (int32_t)i));
		for (uint32_t g = 0; g < kvc_ngroups(k) && off < len; g++) {
			size_t n;
			const int32_t *t = kvc_table(k, (int32_t)i, g, &n);

			ids_str(ids, sizeof(ids), t, n);
			off += (size_t)snprintf(buf + off, len - off, "[%s]",
						ids);
		}
		if (off < len)
			off += (size_t)snprintf(buf + off, len - off, " ");
	}
	for (uint32_t g = 0; g < kvc_ngroups(k) && off < len; g++) {
		dsa_list_str(ids, sizeof(ids), &ds->grp[g]);
		off += (size_t)snprintf(buf + off, len - off, "|%u:%s",
					kvc_free_blocks(k, g), ids);
	}
}

static void
table_str(const kvc *k, int32_t s, char *buf, size_t len)
{
	size_t off = 0;
	char ids[512];

	buf[0] = '\0';
	for (uint32_t g = 0; g < kvc_ngroups(k); g++) {
		size_t n;
		const int32_t *t = kvc_table(k, s, g, &n);

		ids_str(ids, sizeof(ids), t, n);
		off += (size_t)snprintf(buf + off, len - off, "%s%s=[%s]",
					g ? " " : "", kvc_group_name(k, g),
					ids);
	}
}

static void
free_str(const kvc *k, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (uint32_t g = 0; g < kvc_ngroups(k); g++)
		off += (size_t)snprintf(buf + off, len - off, "%s=%u ",
					kvc_group_name(k, g),
					kvc_free_blocks(k, g));
	snprintf(buf + off, len - off, "cpu=%u", kvc_free_cpu(k));
}

static kvc *
scenario_new(const struct ds_scenario *sc)
{
	struct kvc_config c;
	char why[256];
	kv_err e;
	kvc *k;

	kvc_config_default(&c, KVC_DEEPSPEED);
	c.gpu_blocks = sc->gpu_blocks;
	c.block_size = sc->block_size;
	c.max_model_len = sc->max_model_len;
	for (uint32_t g = 0; g < 3 && sc->grp[g].name != NULL; g++) {
		strcpy(c.group[g].name, sc->grp[g].name);
		c.group[g].kind = KVC_FULL;
		c.group[g].block_size = sc->grp[g].bs;
		c.ngroups = g + 1;
	}
	k = kvc_new(&c, &e, why, sizeof(why));
	ck_assert_msg(k != NULL, "%s: kvc_new: %s", sc->name, why);
	return k;
}

/* Run one step; returns its error. */
static kv_err
step_run(struct run *r, const struct ds_step *st, char *got, size_t len)
{
	kvc *k = r->k;
	int32_t s = -1;
	uint32_t tok[512], need[KVC_MAX_GROUPS];
	kvc_verdict v;
	bool yes;
	size_t n;
	int32_t child;
	kv_err e = KV_OK;

	got[0] = '\0';
	if (st->seq != 0 && st->op != OP_SEQ) {
		s = r->id[st->seq - 'A'];
		if (s < 0)
			s = 1000;	/* never declared: KV_ENOENT */
	}
	for (uint32_t i = 0; i < st->n && i < 512; i++)
		tok[i] = 100 + i;
	switch (st->op) {
	case OP_END:
		break;
	case OP_SEQ:
		e = kvc_seq_new(k, tok, st->n, &s);
		if (e == KV_OK)
			r->id[st->seq - 'A'] = s;
		break;
	case OP_CAN_ALLOC:
		e = kvc_can_allocate(k, s, st->L, &v);
		if (e == KV_OK)
			snprintf(got, len, "%d", v);
		break;
	case OP_ALLOC:
		e = kvc_allocate(k, s, st->has_n ? st->n : 0);
		break;
	case OP_APPEND:
		e = kvc_append(k, s, tok, st->n, st->L, st->has_l);
		break;
	case OP_CAN_APPEND:
		e = kvc_can_append(k, s, st->n, st->has_n, st->L, &yes);
		if (e == KV_OK)
			snprintf(got, len, "%d", yes);
		break;
	case OP_COMPUTED:
		e = kvc_computed(k, s, st->n, st->has_n);
		break;
	case OP_FREE:
		e = kvc_free_seq(k, s);
		break;
	case OP_FORK:
		e = kvc_fork(k, s, &child);
		break;
	case OP_CAN_SWAP_OUT:
		e = kvc_can_swap_out(k, s, &yes);
		break;
	case OP_SWAP_OUT:
		e = kvc_swap_out(k, s);
		break;
	case OP_CAN_SWAP_IN:
		e = kvc_can_swap_in(k, s, 0, &v);
		break;
	case OP_SWAP_IN:
		e = kvc_swap_in(k, s, 0);
		break;
	case OP_CACHED:
		e = kvc_cached(k, s, &n);
		if (e == KV_OK)
			snprintf(got, len, "%zu", n);
		break;
	case OP_NEEDED:
		e = kvc_blocks_needed(k, s, st->n, st->L, need);
		if (e == KV_OK) {
			size_t off = 0;

			for (uint32_t g = 0; g < kvc_ngroups(k); g++)
				off += (size_t)snprintf(got + off, len - off,
							"%s%u", g ? "," : "",
							need[g]);
		}
		break;
	case OP_TABLE:
		if (s < 0 || (uint32_t)s >= kvc_nseqs(k))
			return KV_ENOENT;
		table_str(k, s, got, len);
		break;
	case OP_FREE_BLOCKS:
		free_str(k, got, len);
		break;
	case OP_STATE: {
		static const char *const names[] = { "waiting", "running",
						     "swapped", "dead" };

		snprintf(got, len, "%zu %zu %s", kvc_seq_len(k, s),
			 kvc_seq_computed(k, s), names[kvc_seq_state(k, s)]);
		break;
	}
	}
	return e;
}

static bool
is_query(enum ds_op op)
{
	switch (op) {
	case OP_CAN_ALLOC:
	case OP_CAN_APPEND:
	case OP_COMPUTED:
	case OP_CAN_SWAP_OUT:
	case OP_CAN_SWAP_IN:
	case OP_CACHED:
	case OP_NEEDED:
	case OP_TABLE:
	case OP_FREE_BLOCKS:
	case OP_STATE:
		return true;
	default:
		return false;
	}
}

START_TEST(test_scenario)
{
	const struct ds_scenario *sc = &scenarios[_i];
	struct run r = { .sc = sc };
	static char before[8192], after[8192], cl[8192];
	char got[512], why[256];

	for (int i = 0; i < 26; i++)
		r.id[i] = -1;
	r.k = scenario_new(sc);
	ck_assert_int_eq(kvc_audit(r.k, why, sizeof(why)), 0);
	for (r.step = 0; sc->step[r.step].op != OP_END; r.step++) {
		const struct ds_step *st = &sc->step[r.step];
		kv_err e;
		kvc *c;

		snapshot(r.k, before, sizeof(before));
		e = step_run(&r, st, got, sizeof(got));
		ck_assert_msg(e == st->err, "%s, step %d: got %s, want %s (%s)",
			      sc->name, r.step, kv_strerror(e),
			      kv_strerror(st->err), kvc_errmsg(r.k));
		if (e == KV_OK && st->op == OP_CAN_ALLOC) {
			ck_assert_msg(atoi(got) == st->out, "%s, step %d: "
				      "verdict %s, want %d", sc->name, r.step,
				      got, st->out);
		} else if (e == KV_OK && (st->op == OP_CAN_APPEND ||
					  st->op == OP_CACHED)) {
			ck_assert_msg(atoi(got) == st->out, "%s, step %d: "
				      "got %s, want %d", sc->name, r.step, got,
				      st->out);
		} else if (e == KV_OK && st->want != NULL) {
			ck_assert_msg(strcmp(got, st->want) == 0, "%s, step %d:"
				      " got '%s', want '%s'", sc->name, r.step,
				      got, st->want);
		}
		ck_assert_msg(kvc_audit(r.k, why, sizeof(why)) == 0,
			      "%s, step %d: audit: %s", sc->name, r.step, why);
		snapshot(r.k, after, sizeof(after));
		if (e != KV_OK || is_query(st->op))
			ck_assert_msg(strcmp(before, after) == 0,
				      "%s, step %d: state changed\n"
				      "  before %s\n  after  %s",
				      sc->name, r.step, before, after);
		/* the clone is a deep, equal, independent copy */
		c = kvc_clone(r.k);
		ck_assert_ptr_nonnull(c);
		snapshot(c, cl, sizeof(cl));
		ck_assert_str_eq(cl, after);
		ck_assert_int_eq(kvc_audit(c, why, sizeof(why)), 0);
		kvc_free(c);
	}
	kvc_free(r.k);
}
END_TEST

/* ---- named regression: seed bug 1 ------------------------------------- */

/*
 * deepspeedai/DeepSpeed issue #5407 / PR #8503: can_schedule compared the
 * per-group free list with an integer, and the fix reads group 0 only.
 * Two groups: group 0 has room, group 1 has none.  can_allocate must not
 * say OK and allocate must fail with nothing changed in either group.
 */
START_TEST(test_seedbug1_per_group_free_counts)
{
	struct kvc_config c;
	uint32_t tok[16];
	int32_t a, b, d;
	kvc_verdict v;
	bool yes;
	size_t n;
	char why[256];
	kvc *k;

	for (int i = 0; i < 16; i++)
		tok[i] = (uint32_t)i;
	kvc_config_default(&c, KVC_DEEPSPEED);
	c.gpu_blocks = 2;
	c.block_size = 8;
	c.ngroups = 2;
	strcpy(c.group[0].name, "g0");
	c.group[0].block_size = 8;
	strcpy(c.group[1].name, "g1");
	c.group[1].block_size = 4;
	k = kvc_new(&c, NULL, why, sizeof(why));
	ck_assert_msg(k != NULL, "%s", why);

	/* A (8 tokens): g0 takes 1 of 2, g1 takes 2 of 2 */
	ck_assert_int_eq(kvc_seq_new(k, tok, 8, &a), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, a, 0), KV_OK);
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 1);
	ck_assert_uint_eq(kvc_free_blocks(k, 1), 0);
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);

	/* B (1 token): group 0 alone would admit it */
	ck_assert_int_eq(kvc_seq_new(k, tok, 1, &b), KV_OK);
	ck_assert_int_eq(kvc_can_allocate(k, b, 0, &v), KV_OK);
	ck_assert_int_ne(v, KVC_VERDICT_OK);
	ck_assert_int_eq(v, KVC_VERDICT_LATER);
	ck_assert_int_eq(kvc_allocate(k, b, 0), KV_ENOSPC);
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 1);	/* no change */
	ck_assert_uint_eq(kvc_free_blocks(k, 1), 0);
	ck_assert_int_eq(kvc_seq_state(k, b), KVC_WAITING);
	kvc_table(k, b, 0, &n);
	ck_assert_uint_eq(n, 0);
	kvc_table(k, b, 1, &n);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);

	/* the same for growth: A's next token fits g0's block, not g1's */
	ck_assert_int_eq(kvc_can_append(k, a, 1, true, 0, &yes), KV_OK);
	ck_assert(!yes);
	ck_assert_int_eq(kvc_append(k, a, tok, 1, 0, false), KV_ENOSPC);
	ck_assert_uint_eq(kvc_seq_len(k, a), 8);
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 1);
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);

	/* and a request too big for group 1 alone is NEVER */
	ck_assert_int_eq(kvc_seq_new(k, tok, 9, &d), KV_OK);
	ck_assert_int_eq(kvc_can_allocate(k, d, 0, &v), KV_OK);
	ck_assert_int_eq(v, KVC_VERDICT_NEVER);

	/* once group 1 has room, B is admitted in both groups */
	ck_assert_int_eq(kvc_free_seq(k, a), KV_OK);
	ck_assert_int_eq(kvc_can_allocate(k, b, 0, &v), KV_OK);
	ck_assert_int_eq(v, KVC_VERDICT_OK);
	ck_assert_int_eq(kvc_allocate(k, b, 0), KV_OK);
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 1);
	ck_assert_uint_eq(kvc_free_blocks(k, 1), 1);
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);
	kvc_free(k);
}
END_TEST

/* ---- configuration (R35) ---------------------------------------------- */

static void
cfg_sliding(struct kvc_config *c)
{
	c->ngroups = 1;
	strcpy(c->group[0].name, "sw");
	c->group[0].kind = KVC_SLIDING;
	c->group[0].window = 8;
}

static void
cfg_state(struct kvc_config *c)
{
	c->ngroups = 2;
	strcpy(c->group[0].name, "attn");
	strcpy(c->group[1].name, "mamba");
	c->group[1].kind = KVC_STATE;
}

static void
cfg_cpu(struct kvc_config *c)
{
	c->cpu_blocks = 1;
}

static void
cfg_watermark(struct kvc_config *c)
{
	c->watermark = 0.01;
}

static void
cfg_prefix(struct kvc_config *c)
{
	c->prefix_caching = true;
}

static void
cfg_fifo(struct kvc_config *c)
{
	c->reuse = KVC_REUSE_FIFO_LRU;
}

static void (*const bad_cfgs[])(struct kvc_config *) = {
	cfg_sliding, cfg_state, cfg_cpu, cfg_watermark, cfg_prefix, cfg_fifo,
};

START_TEST(test_bad_config)
{
	struct kvc_config c;
	char why[256] = "";
	kv_err e = KV_OK;

	kvc_config_default(&c, KVC_DEEPSPEED);
	c.gpu_blocks = 4;
	bad_cfgs[_i](&c);
	ck_assert_ptr_null(kvc_new(&c, &e, why, sizeof(why)));
	ck_assert_int_eq(e, KV_ECONFIG);
	ck_assert_msg(why[0] != '\0', "no message");
}
END_TEST

START_TEST(test_good_config)
{
	struct kvc_config c;
	char why[256];
	kvc *k;

	kvc_config_default(&c, KVC_DEEPSPEED);
	c.gpu_blocks = 3;
	c.reuse = KVC_REUSE_LIFO;
	k = kvc_new(&c, NULL, why, sizeof(why));
	ck_assert_msg(k != NULL, "%s", why);
	ck_assert_uint_eq(kvc_ngroups(k), 1);
	ck_assert_str_eq(kvc_group_name(k, 0), "attn");
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 3);
	ck_assert_uint_eq(kvc_free_blocks(k, 1), 0);
	ck_assert_uint_eq(kvc_free_cpu(k), 0);
	kvc_free(k);
}
END_TEST

/* ---- audit, flush validation and clone independence ------------------- */

static kvc *
two_seqs(int32_t *a, int32_t *b)
{
	static const struct ds_scenario sc = { "two", 6, 4, 8192, { { 0 } },
					       { { 0 } } };
	uint32_t tok[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	kvc *k = scenario_new(&sc);

	ck_assert_int_eq(kvc_seq_new(k, tok, 8, a), KV_OK);
	ck_assert_int_eq(kvc_seq_new(k, tok, 5, b), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, *a, 0), KV_OK);	/* [0,1] */
	ck_assert_int_eq(kvc_allocate(k, *b, 0), KV_OK);	/* [2,3] */
	return k;
}

START_TEST(test_audit_catches_damage)
{
	char why[256], before[4096], after[4096];
	int32_t a, b, save;
	kvc *k = two_seqs(&a, &b);
	struct kvc_seq *qb = &k->seq[b];
	struct kvc_ds *ds = k->ms;

	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);

	/* an id in two tables */
	save = qb->tab[0].id[0];
	qb->tab[0].id[0] = 0;
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 1);
	/* an id twice in one table, which a flush refuses as a whole
	 * (R47 a, core-spec §8.3 item 6): nothing freed in any group */
	qb->tab[0].id[0] = 3;			/* table [3,3] */
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 1);
	snapshot(k, before, sizeof(before));
	ck_assert_int_eq(kvc_free_seq(k, b), KV_EREF);
	snapshot(k, after, sizeof(after));
	ck_assert_str_eq(before, after);
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 2);
	ck_assert_int_eq(kvc_seq_state(k, b), KVC_RUNNING);
	qb->tab[0].id[0] = save;
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);

	/* a free id in a table */
	save = qb->tab[0].id[1];
	qb->tab[0].id[1] = 5;
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 1);
	ck_assert_int_eq(kvc_free_seq(k, b), KV_EREF);
	qb->tab[0].id[1] = 99;			/* out of range */
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 1);
	ck_assert_int_eq(kvc_free_seq(k, b), KV_EREF);
	qb->tab[0].id[1] = save;

	/* held blocks disagree with S */
	qb->ncomp = 4;
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 5);
	qb->ncomp = 5;

	/* a used block nobody holds: used + free != total */
	kv_list_remove(&ds->grp[0].free, 5);
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 3);
	kv_list_push_front(&ds->grp[0].free, 5);

	/* a broken free list */
	ds->grp[0].free.n++;
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 2);
	ds->grp[0].free.n--;

	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);
	ck_assert_int_eq(kvc_free_seq(k, b), KV_OK);
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);
	kvc_free(k);
}
END_TEST

START_TEST(test_clone_independent)
{
	char why[256], before[4096], after[4096];
	uint32_t tok[4] = { 9, 9, 9, 9 };
	int32_t a, b;
	size_t n;
	kvc *k = two_seqs(&a, &b);
	kvc *c;

	snapshot(k, before, sizeof(before));
	c = kvc_clone(k);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(kvc_free_seq(c, a), KV_OK);
	ck_assert_int_eq(kvc_append(c, b, tok, 4, 0, false), KV_OK);
	ck_assert_int_eq(kvc_audit(c, why, sizeof(why)), 0);
	ck_assert_int_eq(kvc_table(c, b, 0, &n)[2], 1);	/* LIFO reuse */
	snapshot(k, after, sizeof(after));
	ck_assert_str_eq(before, after);
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);
	kvc_free(c);
	kvc_free(k);
}
END_TEST

static Suite *
ds_suite(void)
{
	Suite *s = suite_create("ds");
	TCase *tc = tcase_create("allocator");
	TCase *tm = tcase_create("mode");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_dsa_case2_order);
	tcase_add_loop_test(tc, test_dsa_free_validation, 0,
			    sizeof(bad_frees) / sizeof(bad_frees[0]));
	tcase_add_test(tc, test_dsa_free_check_accepts_valid);
	tcase_add_test(tc, test_dsa_stamp_wraparound);
	tcase_add_test(tc, test_dsa_case6_oom_recycle);
	tcase_add_test(tc, test_dsa_check_catches_damage);
	tcase_add_loop_test(tc, test_kv_requirements, 0,
			    sizeof(req_cases) / sizeof(req_cases[0]));
	suite_add_tcase(s, tc);

	tcase_set_timeout(tm, 60);
	tcase_add_loop_test(tm, test_scenario, 0,
			    sizeof(scenarios) / sizeof(scenarios[0]));
	tcase_add_test(tm, test_seedbug1_per_group_free_counts);
	tcase_add_loop_test(tm, test_bad_config, 0,
			    sizeof(bad_cfgs) / sizeof(bad_cfgs[0]));
	tcase_add_test(tm, test_good_config);
	tcase_add_test(tm, test_audit_catches_damage);
	tcase_add_test(tm, test_clone_independent);
	suite_add_tcase(s, tm);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(ds_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
