/*
 * check_exact.c -- mode `exact` (core/kv_exact.c, docs/replay-exact.md).
 *
 * Table-driven op scripts on a handle, one per scenario of core-spec §9
 * (cases A-F in their exact-mode form) plus the seed-bug-3 regression and
 * API misuse.  The runner checks, after every step:
 *   - kvc_audit() == 0;
 *   - every query agrees with a trial of its action on a clone (OK/yes =>
 *     success; success leaving the watermark free => OK/yes; NEVER =>
 *     failure), the property DESIGN.md calls decision/action consistency;
 *   - a query, and an action that fails, leave the state exactly as it was:
 *     sequences, tables, counts, prefix-cache answers and the order of the
 *     free lists (drained on clones, id by id).
 * A randomized run applies the same checks to thousands of operations over
 * hybrid groups, forks, swaps and prefix caching.
 */
#include "core/kv_int.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- configuration of a script -------------------------------------- */

struct gspec {
	const char *name;
	kvc_kind kind;
	uint32_t window, bs;
};

struct cspec {
	uint32_t bs, gpu, cpu, mml;
	double wm;
	bool pc;
	kvc_reuse reuse;
	struct gspec g[4];	/* name NULL ends */
};

static kvc *
mk(const struct cspec *c)
{
	struct kvc_config cfg;
	char why[256];
	kv_err e;
	kvc *k;
	uint32_t g;

	kvc_config_default(&cfg, KVC_EXACT);
	cfg.block_size = c->bs;
	cfg.gpu_blocks = c->gpu;
	cfg.cpu_blocks = c->cpu;
	cfg.watermark = c->wm;
	cfg.prefix_caching = c->pc;
	cfg.reuse = c->reuse;
	if (c->mml)
		cfg.max_model_len = c->mml;
	for (g = 0; g < 4 && c->g[g].name != NULL; g++) {
		snprintf(cfg.group[g].name, KVC_NAME_MAX, "%s", c->g[g].name);
		cfg.group[g].kind = c->g[g].kind;
		cfg.group[g].window = c->g[g].window;
		cfg.group[g].block_size = c->g[g].bs;
	}
	cfg.ngroups = g;
	k = kvc_new(&cfg, &e, why, sizeof(why));
	ck_assert_msg(k != NULL, "kvc_new: %s", why);
	return k;
}

/* ---- state rendering -------------------------------------------------- */

static void
tab_str(const kvc *k, int32_t s, char *buf, size_t len)
{
	size_t off = 0, n, i;
	uint32_t g;
	const int32_t *id;

	buf[0] = '\0';
	for (g = 0; g < kvc_ngroups(k); g++) {
		id = kvc_table(k, s, g, &n);
		off += (size_t)snprintf(buf + off, len - off, "%s[",
		    g ? " " : "");
		for (i = 0; i < n && off < len; i++) {
			if (id[i] == KVC_NULL)
				off += (size_t)snprintf(buf + off, len - off,
				    "%s-", i ? "," : "");
			else
				off += (size_t)snprintf(buf + off, len - off,
				    "%s%d", i ? "," : "", id[i]);
		}
		off += (size_t)snprintf(buf + off, len - off, "]");
	}
}

static void
pairs_str(const kvc *k, char *buf, size_t len)
{
	size_t n, i, off = 0;
	const struct kvc_pair *p = kvc_pairs(k, &n);

	buf[0] = '\0';
	for (i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%d>%d",
		    i ? "," : "", p[i].src, p[i].dst);
}

/*
 * The order of the GPU free list, observed by draining a clone with
 * one-token sequences of fresh tokens (each takes one block per group).
 */
static void
drain_str(const kvc *k, char *buf, size_t len)
{
	kvc *c = kvc_clone(k);
	size_t off = 0, n;
	uint32_t tok, g, i = 0;
	int32_t s;
	const int32_t *id;

	ck_assert_ptr_nonnull(c);
	buf[0] = '\0';
	for (;;) {
		tok = 3000000000u + i++;
		ck_assert_int_eq(kvc_seq_new(c, &tok, 1, &s), KV_OK);
		if (kvc_allocate(c, s, 0) != KV_OK)
			break;
		for (g = 0; g < kvc_ngroups(c) && off < len; g++) {
			id = kvc_table(c, s, g, &n);
			off += (size_t)snprintf(buf + off, len - off, "%d,",
			    id[0]);
		}
	}
	kvc_free(c);
}

/*
 * Everything observable, for "nothing changed" comparisons.  Calls only
 * queries on k (kvc_cached resets the pair buffer, so take it after
 * reading an action's pairs).
 */
static char *
fingerprint(kvc *k)
{
	size_t cap = 1 << 16, off = 0, tok;
	char *buf = malloc(cap), tb[4096];
	uint32_t s;

	ck_assert_ptr_nonnull(buf);
	for (s = 0; s < kvc_nseqs(k); s++) {
		const struct kvc_seq *q = &k->seq[s];

		tab_str(k, (int32_t)s, tb, sizeof(tb));
		tok = 0;
		if (q->state != KVC_DEAD)
			ck_assert_int_eq(kvc_cached(k, (int32_t)s, &tok),
			    KV_OK);
		off += (size_t)snprintf(buf + off, cap - off,
		    "%u:%d,%u,%u,%d,%zu,%u %s|", s, q->state, q->ntok,
		    q->ncomp, q->req, tok, q->ntok ? q->tok[q->ntok - 1] : 0,
		    tb);
	}
	off += (size_t)snprintf(buf + off, cap - off, "free %u cpu %u ",
	    kvc_free_blocks(k, 0), kvc_free_cpu(k));
	drain_str(k, buf + off, cap - off);
	return buf;
}

static void
audit_ok(const kvc *k, const char *where)
{
	char why[512];
	int rc = kvc_audit(k, why, sizeof(why));

	ck_assert_msg(rc == 0, "%s: audit %d: %s", where, rc, why);
}

/* ---- decision/action consistency ------------------------------------ */

enum act { ACT_ALLOC, ACT_APPEND, ACT_SWOUT, ACT_SWIN };

/* Try the action on a clone: success, and GPU blocks free after it. */
static bool
trial(const kvc *k, enum act a, int32_t s, uint32_t n, uint32_t L,
      uint32_t *left)
{
	kvc *c = kvc_clone(k);
	uint32_t *t, i;
	kv_err e = KV_OK;

	ck_assert_ptr_nonnull(c);
	switch (a) {
	case ACT_ALLOC:
		e = kvc_allocate(c, s, 0);
		break;
	case ACT_APPEND:
		t = malloc((n ? n : 1) * sizeof(*t));
		for (i = 0; i < n; i++)
			t[i] = 4000000000u + i;
		e = n ? kvc_append(c, s, t, n, L, L > 0) : KV_EINVAL;
		free(t);
		break;
	case ACT_SWOUT:
		e = kvc_swap_out(c, s);
		break;
	case ACT_SWIN:
		e = kvc_swap_in(c, s, L);
		break;
	}
	*left = kvc_free_blocks(c, 0);
	if (e == KV_OK)
		audit_ok(c, "trial");
	kvc_free(c);
	return e == KV_OK;
}

static uint32_t
wm_blocks(const kvc *k)
{
	const struct kvc_config *c = kvc_config_of(k);

	return (uint32_t)(c->watermark * (double)c->gpu_blocks);
}

static void
check_verdict(const kvc *k, const char *q, kvc_verdict v, bool ok,
	      uint32_t left, bool reverse)
{
	ck_assert_msg(v != KVC_VERDICT_OK || ok, "%s said OK, action fails",
	    q);
	/* NEVER: the action fails, or eats into the watermark that an
	 * empty pool could not spare either. */
	ck_assert_msg(v != KVC_VERDICT_NEVER || !ok || left < wm_blocks(k),
	    "%s said NEVER, action succeeds", q);
	if (reverse && ok && left >= wm_blocks(k))
		ck_assert_msg(v == KVC_VERDICT_OK, "%s said %d, action "
		    "succeeds leaving the watermark free", q, (int)v);
}

/* ---- op scripts ------------------------------------------------------- */

enum opk {
	OP_END = 0, OP_SEQ, OP_CANALLOC, OP_ALLOC, OP_APPEND, OP_CANAPPEND,
	OP_FORK, OP_CANSWOUT, OP_SWOUT, OP_CANSWIN, OP_SWIN, OP_FREE,
	OP_TABLE, OP_FREEB, OP_CACHED, OP_NEED, OP_COMPUTED
};

/*
 * One step.  Sequences are named by small slots (s, c).  Tokens lo..hi,
 * then lo2..hi2 when hi2 >= lo2.  `err` is the expected return; `want` the
 * expected text: a verdict, yes/no, a table "[..] [..]", pairs "a>b,..",
 * free counts "GPU CPU", a number.
 */
struct op {
	enum opk k;
	int s, c;
	uint32_t lo, hi, lo2, hi2;
	uint32_t n, L;
	bool has_n, has_L;
	kv_err err;
	const char *want;
};

#define SEQ(i, a, b) { .k = OP_SEQ, .s = (i), .lo = (a), .hi = (b), \
	.lo2 = 1, .hi2 = 0 }
#define SEQ2(i, a, b, c2, d) { .k = OP_SEQ, .s = (i), .lo = (a), \
	.hi = (b), .lo2 = (c2), .hi2 = (d) }
#define CANALLOC(i, l, w) { .k = OP_CANALLOC, .s = (i), .L = (l), \
	.want = (w) }
#define ALLOC(i, nn, e) { .k = OP_ALLOC, .s = (i), .n = (nn), .err = (e) }
#define APPEND(i, a, b, e, w) { .k = OP_APPEND, .s = (i), .lo = (a), \
	.hi = (b), .lo2 = 1, .hi2 = 0, .err = (e), .want = (w) }
#define APPENDL(i, a, b, l, e, w) { .k = OP_APPEND, .s = (i), .lo = (a), \
	.hi = (b), .lo2 = 1, .hi2 = 0, .L = (l), .has_L = true, \
	.err = (e), .want = (w) }
#define CANAPPEND(i, nn, l, w) { .k = OP_CANAPPEND, .s = (i), .n = (nn), \
	.has_n = true, .L = (l), .has_L = true, .want = (w) }
#define FORK(i, ch) { .k = OP_FORK, .s = (i), .c = (ch) }
#define FORKERR(i, ch, e) { .k = OP_FORK, .s = (i), .c = (ch), .err = (e) }
#define CANSWOUT(i, w) { .k = OP_CANSWOUT, .s = (i), .want = (w) }
#define SWOUT(i, e, w) { .k = OP_SWOUT, .s = (i), .err = (e), .want = (w) }
#define CANSWIN(i, l, w) { .k = OP_CANSWIN, .s = (i), .L = (l), \
	.want = (w) }
#define SWIN(i, l, e, w) { .k = OP_SWIN, .s = (i), .L = (l), .err = (e), \
	.want = (w) }
#define FREE(i, e) { .k = OP_FREE, .s = (i), .err = (e) }
#define TABLE(i, w) { .k = OP_TABLE, .s = (i), .want = (w) }
#define FREEB(w) { .k = OP_FREEB, .want = (w) }
#define CACHED(i, w) { .k = OP_CACHED, .s = (i), .want = (w) }
#define NEED(i, nn, l, w) { .k = OP_NEED, .s = (i), .n = (nn), .L = (l), \
	.want = (w) }
#define COMPUTED(i, e) { .k = OP_COMPUTED, .s = (i), .err = (e) }
#define END { .k = OP_END }

#define NSLOT 16

struct run {
	kvc *k;
	int32_t id[NSLOT];
	const char *name;
	int step;
};

static uint32_t *
mktok(const struct op *o, size_t *n)
{
	size_t m = o->hi - o->lo + 1, i = 0;
	uint32_t *t, v;

	if (o->hi2 >= o->lo2)
		m += o->hi2 - o->lo2 + 1;
	t = malloc(m * sizeof(*t));
	ck_assert_ptr_nonnull(t);
	for (v = o->lo; v <= o->hi; v++)
		t[i++] = v;
	for (v = o->lo2; o->hi2 >= o->lo2 && v <= o->hi2; v++)
		t[i++] = v;
	*n = m;
	return t;
}

static const char *const vname[] = { "OK", "LATER", "NEVER" };

/* Expect text equality. */
static void
want_str(struct run *r, const char *got, const char *want)
{
	if (want != NULL)
		ck_assert_msg(strcmp(got, want) == 0, "%s step %d: got '%s', "
		    "want '%s'", r->name, r->step, got, want);
}

static void
run_query(struct run *r, const struct op *o)
{
	kvc *k = r->k;
	int32_t s = r->id[o->s];
	char buf[4096];
	kvc_verdict v;
	bool yes, ok;
	uint32_t left, need[KVC_MAX_GROUPS], g;
	size_t n, off = 0;
	kv_err e = KV_OK;

	switch (o->k) {
	case OP_CANALLOC:
		e = kvc_can_allocate(k, s, o->L, &v);
		if (e == KV_OK) {
			want_str(r, vname[v], o->want);
			ok = trial(k, ACT_ALLOC, s, 0, 0, &left);
			check_verdict(k, "can_allocate", v, ok, left,
			    o->L == 0);
		}
		break;
	case OP_CANAPPEND:
		e = kvc_can_append(k, s, o->n, o->has_n, o->L, &yes);
		if (e == KV_OK) {
			want_str(r, yes ? "yes" : "no", o->want);
			if (o->n > 0) {
				ok = trial(k, ACT_APPEND, s, o->n, o->L,
				    &left);
				ck_assert_msg(yes == ok, "%s step %d: "
				    "can_append %d, action %d", r->name,
				    r->step, yes, ok);
			}
		}
		break;
	case OP_CANSWOUT:
		e = kvc_can_swap_out(k, s, &yes);
		if (e == KV_OK) {
			want_str(r, yes ? "yes" : "no", o->want);
			ok = trial(k, ACT_SWOUT, s, 0, 0, &left);
			ck_assert_msg(yes == ok, "%s step %d: "
			    "can_swap_out %d, action %d", r->name, r->step,
			    yes, ok);
		}
		break;
	case OP_CANSWIN:
		e = kvc_can_swap_in(k, s, o->L, &v);
		if (e == KV_OK) {
			want_str(r, vname[v], o->want);
			ok = trial(k, ACT_SWIN, s, 0, o->L, &left);
			check_verdict(k, "can_swap_in", v, ok, left, true);
		}
		break;
	case OP_TABLE:
		tab_str(k, s, buf, sizeof(buf));
		want_str(r, buf, o->want);
		break;
	case OP_FREEB:
		snprintf(buf, sizeof(buf), "%u %u", kvc_free_blocks(k, 0),
		    kvc_free_cpu(k));
		want_str(r, buf, o->want);
		for (g = 1; g < kvc_ngroups(k); g++)
			ck_assert_uint_eq(kvc_free_blocks(k, g),
			    kvc_free_blocks(k, 0));
		break;
	case OP_CACHED:
		e = kvc_cached(k, s, &n);
		if (e == KV_OK) {
			snprintf(buf, sizeof(buf), "%zu", n);
			want_str(r, buf, o->want);
		}
		break;
	case OP_NEED:
		e = kvc_blocks_needed(k, s, o->n, o->L, need);
		if (e == KV_OK) {
			buf[0] = '\0';
			for (g = 0; g < kvc_ngroups(k); g++)
				off += (size_t)snprintf(buf + off,
				    sizeof(buf) - off, "%s%u", g ? " " : "",
				    need[g]);
			want_str(r, buf, o->want);
		}
		break;
	default:
		ck_abort_msg("not a query");
	}
	ck_assert_msg(e == o->err, "%s step %d: got %s (%s), want %s",
	    r->name, r->step, kv_strerror(e), kvc_errmsg(k),
	    kv_strerror(o->err));
}

static void
run_action(struct run *r, const struct op *o)
{
	kvc *k = r->k;
	int32_t s = o->s >= 0 ? r->id[o->s] : -1, child = -1;
	uint32_t *t = NULL;
	size_t n = 0;
	char buf[4096];
	kv_err e = KV_OK;

	switch (o->k) {
	case OP_SEQ:
		t = mktok(o, &n);
		e = kvc_seq_new(k, t, n, &r->id[o->s]);
		break;
	case OP_ALLOC:
		e = kvc_allocate(k, s, o->n);
		break;
	case OP_APPEND:
		t = mktok(o, &n);
		e = kvc_append(k, s, t, n, o->L, o->has_L);
		break;
	case OP_FORK:
		e = kvc_fork(k, s, &child);
		if (e == KV_OK)
			r->id[o->c] = child;
		break;
	case OP_SWOUT:
		e = kvc_swap_out(k, s);
		break;
	case OP_SWIN:
		e = kvc_swap_in(k, s, o->L);
		break;
	case OP_FREE:
		e = kvc_free_seq(k, s);
		break;
	case OP_COMPUTED:
		e = kvc_computed(k, s, o->n, o->has_n);
		break;
	default:
		ck_abort_msg("not an action");
	}
	free(t);
	ck_assert_msg(e == o->err, "%s step %d: got %s (%s), want %s",
	    r->name, r->step, kv_strerror(e), kvc_errmsg(k),
	    kv_strerror(o->err));
	if (e == KV_OK && o->want != NULL &&
	    (o->k == OP_APPEND || o->k == OP_SWOUT || o->k == OP_SWIN)) {
		pairs_str(k, buf, sizeof(buf));
		want_str(r, buf, o->want);
	}
}

static bool
is_query(enum opk k)
{
	return k == OP_CANALLOC || k == OP_CANAPPEND || k == OP_CANSWOUT ||
	    k == OP_CANSWIN || k == OP_TABLE || k == OP_FREEB ||
	    k == OP_CACHED || k == OP_NEED;
}

static void
run_ops(const char *name, const struct cspec *c, const struct op *ops)
{
	struct run r = { .name = name };
	char *before, *after, where[128];
	int i;

	r.k = mk(c);
	for (i = 0; i < NSLOT; i++)
		r.id[i] = -1;
	for (i = 0; ops[i].k != OP_END; i++) {
		bool q = is_query(ops[i].k);

		r.step = i;
		before = fingerprint(r.k);
		if (q)
			run_query(&r, &ops[i]);
		else
			run_action(&r, &ops[i]);
		snprintf(where, sizeof(where), "%s step %d", name, i);
		audit_ok(r.k, where);
		if (q || (ops[i].err != KV_OK && ops[i].k != OP_COMPUTED)) {
			after = fingerprint(r.k);
			ck_assert_msg(strcmp(before, after) == 0, "%s: state "
			    "changed\n before %s\n after  %s", where, before,
			    after);
			free(after);
		}
		free(before);
	}
	kvc_free(r.k);
}

/* ---- scripts ----------------------------------------------------------- */

#define ATTN { { "attn", KVC_FULL, 0, 0 } }

struct script {
	const char *name;
	struct cspec c;
	const struct op *ops;
};

/* A1: free-list reuse.  LIFO reproduces the v0/DeepSpeed order. */
static const struct op a1_lifo[] = {
	SEQ(0, 0, 9), ALLOC(0, 0, KV_OK), TABLE(0, "[0,1,2]"),
	SEQ(1, 100, 104), ALLOC(1, 0, KV_OK), TABLE(1, "[3,4]"),
	FREE(0, KV_OK), FREEB("6 0"),
	SEQ(2, 200, 208), ALLOC(2, 0, KV_OK), TABLE(2, "[2,1,0]"),
	END
};

/* A1': the default (FIFO/LRU): the queue's front first, tails first. */
static const struct op a1_fifo[] = {
	SEQ(0, 0, 9), ALLOC(0, 0, KV_OK), TABLE(0, "[0,1,2]"),
	SEQ(1, 100, 104), ALLOC(1, 0, KV_OK), TABLE(1, "[3,4]"),
	FREE(0, KV_OK),
	SEQ(2, 200, 208), ALLOC(2, 0, KV_OK), TABLE(2, "[5,6,7]"),
	SEQ(3, 300, 307), ALLOC(3, 0, KV_OK), TABLE(3, "[2,1]"),
	FREE(1, KV_OK), FREE(1, KV_ESTATE),
	SEQ(4, 400, 411), ALLOC(4, 0, KV_OK), TABLE(4, "[0,4,3]"),
	FREEB("0 0"), SEQ(5, 500, 500), CANALLOC(5, 0, "LATER"),
	ALLOC(5, 0, KV_ENOSPC),
	END
};

/* B7/B8: watermark verdicts (wm = floor(0.1 * 10) = 1). */
static const struct op b7_b8[] = {
	SEQ(0, 0, 35), CANALLOC(0, 0, "OK"),
	SEQ(1, 100, 136), CANALLOC(1, 0, "NEVER"),
	/* NEVER under the watermark; the action itself takes all 10 */
	ALLOC(1, 0, KV_OK), FREEB("0 0"), FREE(1, KV_OK),
	SEQ(2, 200, 211), ALLOC(2, 0, KV_OK), FREEB("7 0"),
	SEQ(3, 300, 327), CANALLOC(3, 0, "LATER"),
	SEQ(4, 400, 423), CANALLOC(4, 0, "OK"),
	SEQ(5, 500, 531), CANALLOC(5, 1, "LATER"),
	/* 28 tokens fit the 7 free blocks but leave 0 < wm: LATER, and
	 * the action itself (no watermark) succeeds. */
	ALLOC(3, 0, KV_OK), FREEB("0 0"),
	END
};

/* B9: a failed allocation takes nothing (v0 leaks the last block). */
static const struct op b9[] = {
	SEQ(0, 0, 7), ALLOC(0, 0, KV_OK), FREEB("1 0"),
	SEQ(1, 100, 109), CANALLOC(1, 0, "LATER"), ALLOC(1, 0, KV_ENOSPC),
	FREEB("1 0"), TABLE(1, "[]"),
	FREE(0, KV_OK), ALLOC(1, 0, KV_OK), TABLE(1, "[2,1,0]"),
	END
};

/* C12: fork then copy-on-write of the shared partial block. */
static const struct op c12[] = {
	SEQ(0, 0, 5), ALLOC(0, 0, KV_OK), TABLE(0, "[0,1]"), FREEB("8 0"),
	FORK(0, 1), TABLE(1, "[0,1]"), FREEB("8 0"),
	NEED(1, 1, 0, "1"), CANAPPEND(1, 1, 0, "yes"),
	APPEND(1, 6, 6, KV_OK, "1>2"), TABLE(1, "[0,2]"), FREEB("7 0"),
	NEED(0, 1, 0, "0"),
	APPEND(0, 7, 7, KV_OK, ""), TABLE(0, "[0,1]"), FREEB("7 0"),
	FREE(0, KV_OK), FREEB("10 0"), TABLE(0, "[]"),
	END
};

/* C13: no copy when the shared last block is full. */
static const struct op c13[] = {
	SEQ(0, 0, 15), ALLOC(0, 0, KV_OK), FORK(0, 1),
	APPEND(1, 16, 16, KV_OK, ""), TABLE(1, "[0,1,2]"),
	APPEND(0, 16, 16, KV_OK, ""), TABLE(0, "[0,1,3]"),
	END
};

/* C14: bs 8, prompt 7, append 129 with 10 lookahead = 18 new blocks. */
static const struct op c14[] = {
	SEQ(0, 0, 6), ALLOC(0, 0, KV_OK), FREEB("99 0"),
	NEED(0, 129, 10, "18"),
	APPENDL(0, 7, 135, 10, KV_OK, ""), FREEB("81 0"),
	END
};

/* C15: the exact append check (v0 says no and preempts needlessly). */
static const struct op c15[] = {
	SEQ(0, 0, 5), ALLOC(0, 0, KV_OK), SEQ(1, 100, 103),
	ALLOC(1, 0, KV_OK), FREEB("0 0"),
	CANAPPEND(0, 1, 0, "yes"), CANAPPEND(0, 3, 0, "no"),
	APPEND(0, 6, 6, KV_OK, ""), FREEB("0 0"), TABLE(0, "[0,1]"),
	CANAPPEND(0, 1, 0, "yes"), CANAPPEND(0, 1, 1, "no"),
	CANAPPEND(1, 1, 0, "no"), APPEND(1, 104, 104, KV_ENOSPC, NULL),
	END
};

/* C16: exact blocks for (held, new, lookahead), bs 4. */
static const struct op c16[] = {
	SEQ(0, 0, 3), ALLOC(0, 0, KV_OK),
	NEED(0, 0, 0, "0"),
	SEQ(1, 10, 14), ALLOC(1, 0, KV_OK),
	NEED(1, 0, 0, "0"), NEED(1, 3, 0, "0"), NEED(1, 4, 0, "1"),
	SEQ(2, 20, 27), ALLOC(2, 0, KV_OK),
	NEED(2, 1, 0, "1"), NEED(2, 1, 3, "1"), NEED(2, 1, 4, "2"),
	SEQ(3, 30, 35), ALLOC(3, 0, KV_OK), NEED(3, 0, 6, "1"),
	END
};

/* D17: swap round trip, bs 8, 4 GPU + 4 CPU, 23 tokens. */
static const struct op d17[] = {
	SEQ(0, 0, 22), ALLOC(0, 0, KV_OK), TABLE(0, "[0,1,2]"),
	CANSWOUT(0, "yes"), SWOUT(0, KV_OK, "0>0,1>1,2>2"),
	TABLE(0, "[0,1,2]"), FREEB("4 1"),
	CANSWIN(0, 3, "OK"), CANSWIN(0, 8, "OK"), CANSWIN(0, 10, "NEVER"),
	NEED(0, 0, 8, "4"), SWIN(0, 10, KV_ENOSPC, NULL),
	SEQ(1, 100, 114), ALLOC(1, 0, KV_OK), FREEB("2 1"),
	CANSWIN(0, 3, "LATER"), CANSWIN(0, 8, "LATER"),
	CANSWIN(0, 10, "NEVER"), SWIN(0, 3, KV_ENOSPC, NULL),
	FREE(1, KV_OK), SWIN(0, 8, KV_OK, "0>1,1>0,2>2"),
	TABLE(0, "[1,0,2,3]"), FREEB("0 4"),
	END
};

/* D17 with prefix caching: the cached free blocks cost one each. */
static const struct op d17pc[] = {
	SEQ(0, 0, 22), ALLOC(0, 0, KV_OK),
	SWOUT(0, KV_OK, "0>0,1>1,2>2"), FREEB("4 1"),
	CANSWIN(0, 3, "OK"), CANSWIN(0, 10, "NEVER"),
	SEQ(1, 100, 114), ALLOC(1, 0, KV_OK), TABLE(1, "[3,2]"),
	CANSWIN(0, 3, "LATER"), CANSWIN(0, 8, "LATER"),
	CANSWIN(0, 10, "NEVER"), NEED(0, 0, 3, "4"),
	FREE(1, KV_OK),
	/* blocks 0 and 1 are still cached on the GPU: no copy for them */
	SWIN(0, 3, KV_OK, "2>2"), TABLE(0, "[0,1,2,3]"),
	END
};

/* D18: unseen tokens count (seed bug 3), 1 GPU + 1 CPU, bs 8. */
static const struct op d18[] = {
	SEQ(0, 0, 4), ALLOC(0, 0, KV_OK), SWOUT(0, KV_OK, "0>0"),
	APPEND(0, 5, 5, KV_OK, NULL),
	CANSWIN(0, 0, "OK"), CANSWIN(0, 2, "OK"), CANSWIN(0, 3, "NEVER"),
	CANSWIN(0, 10, "NEVER"), SWIN(0, 3, KV_ENOSPC, NULL),
	SWIN(0, 2, KV_OK, "0>0"), TABLE(0, "[0]"), FREEB("0 1"),
	END
};

/* D19: a forked pair keeps sharing across swap: 3 and 3, not 6 and 6. */
static const struct op d19[] = {
	SEQ(0, 0, 9), ALLOC(0, 0, KV_OK), FORK(0, 1), FREEB("7 10"),
	CANSWOUT(1, "yes"), SWOUT(1, KV_OK, "0>0,1>1,2>2"), FREEB("10 7"),
	TABLE(0, "[0,1,2]"), TABLE(1, "[0,1,2]"),
	NEED(0, 0, 0, "3"), CANSWIN(0, 0, "OK"),
	SWIN(0, 0, KV_OK, "0>3,1>4,2>5"), FREEB("7 10"),
	TABLE(0, "[3,4,5]"), TABLE(1, "[3,4,5]"),
	/* the sharing survives: one write copies, the other does not */
	APPEND(1, 50, 50, KV_OK, "5>6"), APPEND(0, 60, 60, KV_OK, ""),
	FREE(1, KV_OK), FREEB("10 10"), TABLE(1, "[]"), TABLE(0, "[]"),
	END
};

/* D20: swap-in of blocks the GPU prefix cache holds: in use cost 0,
 * cached free cost 1, and neither is copied. */
static const struct op d20[] = {
	SEQ(0, 0, 12), ALLOC(0, 0, KV_OK), TABLE(0, "[0,1,2,3]"),
	SEQ2(1, 0, 11, 99, 99), CACHED(1, "12"), ALLOC(1, 0, KV_OK),
	TABLE(1, "[0,1,2,4]"), SWOUT(0, KV_OK, "0>0,1>1,2>2,3>3"),
	FREEB("6 6"), NEED(0, 0, 0, "1"),
	CANSWIN(0, 0, "OK"),
	FREE(1, KV_OK), FREEB("10 6"), NEED(0, 0, 0, "4"),
	SWIN(0, 0, KV_OK, "3>5"), TABLE(0, "[0,1,2,5]"), FREEB("6 10"),
	END
};

/* E21: sharing on allocate. */
static const struct op e21[] = {
	SEQ(0, 0, 9), ALLOC(0, 0, KV_OK), TABLE(0, "[0,1,2]"), FREEB("7 0"),
	SEQ(1, 0, 9), CACHED(1, "8"), NEED(1, 0, 0, "1"),
	ALLOC(1, 0, KV_OK), TABLE(1, "[0,1,3]"), FREEB("6 0"),
	SEQ(2, 0, 9), CACHED(2, "8"),
	FREE(0, KV_OK), FREEB("7 0"), FREE(1, KV_OK), FREEB("10 0"),
	CACHED(2, "8"), NEED(2, 0, 0, "3"),
	END
};

/* E22: equal contents filled later are not indexed twice (no de-dup on
 * fill: table ids never change); the first block stays the hit. */
static const struct op e22[] = {
	SEQ2(0, 1, 4, 9, 9), ALLOC(0, 0, KV_OK), TABLE(0, "[0,1]"),
	SEQ(1, 1, 1), ALLOC(1, 0, KV_OK), TABLE(1, "[2]"),
	APPEND(1, 2, 4, KV_OK, ""), TABLE(1, "[2]"),
	SEQ2(2, 1, 4, 7, 7), CACHED(2, "4"), ALLOC(2, 0, KV_OK),
	TABLE(2, "[0,3]"), FREEB("0 0"),
	FREE(0, KV_OK), FREE(2, KV_OK), CACHED(1, "0"),
	END
};

/* E23: eviction takes the tail of a freed chain first. */
static const struct op e23[] = {
	SEQ(0, 0, 5), ALLOC(0, 0, KV_OK), TABLE(0, "[0,1,2]"),
	FREE(0, KV_OK), SEQ(1, 0, 6), CACHED(1, "6"),
	SEQ(2, 100, 100), ALLOC(2, 0, KV_OK), TABLE(2, "[3]"),
	SEQ(3, 200, 200), ALLOC(3, 0, KV_OK), TABLE(3, "[2]"),
	CACHED(1, "4"),
	SEQ(4, 300, 300), ALLOC(4, 0, KV_OK), TABLE(4, "[1]"),
	CACHED(1, "2"),
	END
};

/* E24: a prefix survives eviction of its tail. */
static const struct op e24[] = {
	SEQ(0, 0, 31), ALLOC(0, 0, KV_OK), FREE(0, KV_OK),
	SEQ(1, 100, 115), ALLOC(1, 0, KV_OK), TABLE(1, "[7,6,5,4]"),
	SEQ(2, 0, 32), CACHED(2, "16"),
	END
};

/* E28: a failed admission leaves its hit blocks free and cached. */
static const struct op e28[] = {
	SEQ(0, 0, 8), ALLOC(0, 0, KV_OK), FREE(0, KV_OK), FREEB("4 0"),
	SEQ(1, 0, 19), CACHED(1, "8"), NEED(1, 0, 0, "5"),
	CANALLOC(1, 0, "NEVER"), ALLOC(1, 0, KV_ENOSPC),
	FREEB("4 0"), CACHED(1, "8"),
	SEQ(2, 0, 14), NEED(2, 0, 0, "4"), ALLOC(2, 0, KV_OK),
	TABLE(2, "[0,1,3,2]"),
	END
};

/* E29: a full hit still computes one token. */
static const struct op e29[] = {
	SEQ(0, 0, 7), ALLOC(0, 0, KV_OK),
	SEQ(1, 0, 7), CACHED(1, "4"), SEQ(2, 0, 8), CACHED(2, "8"),
	ALLOC(1, 0, KV_OK), TABLE(1, "[0,2]"),
	END
};

/* F31: sliding window: the next decode releases 2 blocks, takes 1. */
static const struct op f31[] = {
	SEQ(0, 0, 11), ALLOC(0, 0, KV_OK), TABLE(0, "[0,1,2]"),
	FREEB("5 0"), NEED(0, 1, 0, "0"),
	APPEND(0, 12, 12, KV_OK, ""), TABLE(0, "[-,-,2,3]"), FREEB("6 0"),
	END
};

/* F32: window boundaries, W 4, bs 2 (released = newest first). */
static const struct op f32[] = {
	SEQ(0, 0, 3), ALLOC(0, 0, KV_OK), TABLE(0, "[0,1]"),
	APPEND(0, 4, 4, KV_OK, ""), TABLE(0, "[0,1,2]"),	/* C0 4 */
	APPEND(0, 5, 5, KV_OK, ""), TABLE(0, "[-,1,2]"),	/* C0 5 */
	APPEND(0, 6, 6, KV_OK, ""), TABLE(0, "[-,1,2,3]"),	/* C0 6 */
	APPEND(0, 7, 10, KV_OK, ""), TABLE(0, "[-,-,2,3,4,5]"),	/* C0 7 */
	APPEND(0, 11, 11, KV_OK, ""),				/* C0 11 */
	TABLE(0, "[-,-,-,-,4,5]"),
	/* the queue got 0, then 1, then 3, 2 (newest first) */
	SEQ(1, 100, 109), ALLOC(1, 0, KV_OK), TABLE(1, "[6,7,0,1,3]"),
	END
};

/* F32 with LIFO reuse: the newest released block is reused first. */
static const struct op f32_lifo[] = {
	SEQ(0, 0, 6), ALLOC(0, 0, KV_OK), TABLE(0, "[0,1,2,3]"),
	APPEND(0, 7, 7, KV_OK, ""), TABLE(0, "[-,-,2,3]"),
	SEQ(1, 100, 103), ALLOC(1, 0, KV_OK), TABLE(1, "[1,0]"),
	END
};

/* F34: lookahead capped by max_model_len; lookahead is never cached. */
static const struct op f34[] = {
	SEQ(0, 0, 2), NEED(0, 0, 2, "2"), NEED(0, 0, 4, "2"),
	CANALLOC(0, 4, "OK"),
	SEQ(1, 10, 13), ALLOC(1, 0, KV_OK),
	APPENDL(1, 14, 14, 1, KV_OK, ""), TABLE(1, "[0,1]"),
	SEQ2(2, 10, 14, 20, 20), CACHED(2, "4"),
	END
};

/* Chunked prefill: allocate n continues; fork needs a computed seq. */
static const struct op chunk[] = {
	SEQ(0, 0, 9), ALLOC(0, 4, KV_OK), TABLE(0, "[0]"),
	FORKERR(0, 1, KV_ESTATE), CANAPPEND(0, 1, 0, "yes"),
	ALLOC(0, 3, KV_OK), TABLE(0, "[0,1]"),
	ALLOC(0, 0, KV_OK), TABLE(0, "[0,1,2]"),
	ALLOC(0, 1, KV_ESTATE), COMPUTED(0, KV_OK),
	FORK(0, 1), TABLE(1, "[0,1,2]"),
	END
};

/* Chunked prefill on a sliding group releases as it goes: a prompt that
 * cannot be allocated whole is admitted in chunks. */
static const struct op chunk_sw[] = {
	SEQ(0, 0, 23), CANALLOC(0, 0, "NEVER"), ALLOC(0, 0, KV_ENOSPC),
	ALLOC(0, 8, KV_OK), TABLE(0, "[0,1]"),
	ALLOC(0, 8, KV_OK), TABLE(0, "[-,1,2,3]"),
	ALLOC(0, 8, KV_OK), TABLE(0, "[-,-,-,3,0,2]"),
	END
};

/* Hybrid groups: full + sliding + state, one shared pool. */
static const struct op hybrid[] = {
	SEQ(0, 0, 9), NEED(0, 0, 0, "3 3 1"), CANALLOC(0, 0, "OK"),
	ALLOC(0, 0, KV_OK), TABLE(0, "[0,1,2] [3,4,5] [6]"), FREEB("5 12"),
	FORK(0, 1), NEED(1, 2, 0, "1 1 1"),
	APPEND(1, 10, 11, KV_OK, "2>7,5>8,6>9"),
	TABLE(1, "[0,1,7] [-,4,8] [9]"), TABLE(0, "[0,1,2] [3,4,5] [6]"),
	FREEB("2 12"), NEED(0, 1, 0, "0 0 0"),
	APPEND(0, 20, 20, KV_OK, ""), TABLE(0, "[0,1,2] [-,4,5] [6]"),
	FREEB("3 12"), SWOUT(0, KV_OK, "0>0,1>1,2>2,4>3,5>4,6>5,7>6,8>7,9>8"),
	END
};

/* Prefix caching with a sliding group: hits need the window only. */
static const struct op sw_hit[] = {
	SEQ(0, 0, 16), ALLOC(0, 0, KV_OK),
	TABLE(0, "[0,1,2,3,4] [5,6,7,8,9]"),
	SEQ(1, 0, 16), CACHED(1, "16"), FREE(0, KV_OK), FREEB("16 0"),
	NEED(1, 0, 0, "5 3"), ALLOC(1, 0, KV_OK),
	TABLE(1, "[0,1,2,3,10] [-,-,7,8,11]"),
	END
};

/* seed bug 3: swap-in counts unseen tokens, lookahead, and shared
 * blocks once; one block fewer flips OK to LATER at the boundary. */
static const struct op seedbug3_ok[] = {
	SEQ(0, 0, 9), ALLOC(0, 0, KV_OK), FORK(0, 1),
	SEQ(2, 100, 107), ALLOC(2, 0, KV_OK), FREEB("3 16"),
	SWOUT(0, KV_OK, "0>0,1>1,2>2"), FREEB("6 13"),
	APPEND(0, 10, 10, KV_OK, NULL), APPEND(1, 20, 22, KV_OK, NULL),
	/* 3 blocks back + P: copy of the shared partial + 1 + Q: 1 */
	NEED(0, 0, 2, "6"), CANSWIN(0, 2, "OK"),
	SWIN(0, 2, KV_OK, "0>5,1>6,2>7,2>2"), FREEB("0 16"),
	TABLE(0, "[5,6,2,1]"), TABLE(1, "[5,6,7,0]"),
	END
};

static const struct op seedbug3_later[] = {
	SEQ(0, 0, 9), ALLOC(0, 0, KV_OK), FORK(0, 1),
	SEQ(2, 100, 111), ALLOC(2, 0, KV_OK), FREEB("2 16"),
	SWOUT(0, KV_OK, "0>0,1>1,2>2"), FREEB("5 13"),
	APPEND(0, 10, 10, KV_OK, NULL), APPEND(1, 20, 22, KV_OK, NULL),
	NEED(0, 0, 2, "6"), CANSWIN(0, 2, "LATER"),
	SWIN(0, 2, KV_ENOSPC, NULL), CANSWIN(0, 1, "OK"),
	CANSWIN(0, 0, "OK"), FREEB("5 13"),
	FREE(2, KV_OK), CANSWIN(0, 2, "OK"), CANSWIN(0, 20, "NEVER"),
	END
};

/* API misuse: an error code and nothing changed. */
static const struct op misuse[] = {
	SEQ(0, 0, 9), SEQ(1, 0, 40),
	ALLOC(1, 0, KV_EINVAL), CANALLOC(1, 0, "NEVER"),
	FREE(0, KV_ESTATE), COMPUTED(0, KV_ESTATE),
	{ .k = OP_CANAPPEND, .s = 0, .err = KV_ESTATE },
	FORKERR(0, 2, KV_ESTATE), SWOUT(0, KV_ESTATE, NULL),
	{ .k = OP_CANSWOUT, .s = 0, .err = KV_ESTATE },
	SWIN(0, 0, KV_ESTATE, NULL),
	{ .k = OP_CANSWIN, .s = 0, .err = KV_ESTATE },
	APPENDL(0, 10, 10, 1, KV_EINVAL, NULL),
	APPEND(0, 10, 40, KV_EINVAL, NULL),
	ALLOC(0, 0, KV_OK),
	{ .k = OP_CANALLOC, .s = 0, .err = KV_ESTATE },
	ALLOC(0, 0, KV_ESTATE),
	{ .k = OP_CANAPPEND, .s = 0, .n = 23, .has_n = true,
	  .err = KV_EINVAL },
	APPEND(0, 10, 32, KV_EINVAL, NULL),
	{ .k = OP_NEED, .s = 0, .n = 23, .err = KV_EINVAL },
	{ .k = OP_COMPUTED, .s = 0, .n = 11, .has_n = true,
	  .err = KV_EINVAL },
	/* no CPU pool: swap_out does not fit */
	CANSWOUT(0, "no"), SWOUT(0, KV_ENOSPC, NULL),
	FORK(0, 2), FREE(2, KV_OK),
	/* the child died with the request */
	{ .k = OP_TABLE, .s = 2, .want = "[]" },
	{ .k = OP_CACHED, .s = 2, .err = KV_ENOENT },
	FREE(2, KV_ENOENT), APPEND(2, 1, 1, KV_ENOENT, NULL),
	FORKERR(2, 3, KV_ENOENT), FREE(0, KV_ESTATE),
	END
};

static const struct script scripts[] = {
	{ "a1_lifo", { 4, 8, 0, 0, 0, false, KVC_REUSE_LIFO, ATTN },
	  a1_lifo },
	{ "a1_fifo", { 4, 8, 0, 0, 0, false, KVC_REUSE_DEFAULT, ATTN },
	  a1_fifo },
	{ "b7_b8", { 4, 10, 0, 0, 0.1, false, 0, ATTN }, b7_b8 },
	{ "b9", { 4, 3, 0, 0, 0, false, 0, ATTN }, b9 },
	{ "c12", { 4, 10, 0, 0, 0, false, 0, ATTN }, c12 },
	{ "c13", { 8, 10, 0, 0, 0, false, 0, ATTN }, c13 },
	{ "c14", { 8, 100, 0, 0, 0, false, 0, ATTN }, c14 },
	{ "c15", { 4, 3, 0, 0, 0, false, 0, ATTN }, c15 },
	{ "c16", { 4, 20, 0, 0, 0, false, 0, ATTN }, c16 },
	{ "d17", { 8, 4, 4, 0, 0, false, 0, ATTN }, d17 },
	{ "d17pc", { 8, 4, 4, 0, 0, true, 0, ATTN }, d17pc },
	{ "d18", { 8, 1, 1, 0, 0, false, 0, ATTN }, d18 },
	{ "d19", { 4, 10, 10, 0, 0, false, 0, ATTN }, d19 },
	{ "d20", { 4, 10, 10, 0, 0, true, 0, ATTN }, d20 },
	{ "e21", { 4, 10, 0, 0, 0, true, 0, ATTN }, e21 },
	{ "e22", { 4, 4, 0, 0, 0, true, 0, ATTN }, e22 },
	{ "e23", { 2, 4, 0, 0, 0, true, 0, ATTN }, e23 },
	{ "e24", { 4, 8, 0, 0, 0, true, 0, ATTN }, e24 },
	{ "e28", { 4, 4, 0, 0, 0, true, 0, ATTN }, e28 },
	{ "e29", { 4, 10, 0, 0, 0, true, 0, ATTN }, e29 },
	{ "f31", { 4, 8, 0, 0, 0, false, 0,
	  { { "sw", KVC_SLIDING, 4, 0 } } }, f31 },
	{ "f32", { 2, 8, 0, 0, 0, false, 0,
	  { { "sw", KVC_SLIDING, 4, 0 } } }, f32 },
	{ "f32_lifo", { 2, 8, 0, 0, 0, false, KVC_REUSE_LIFO,
	  { { "sw", KVC_SLIDING, 4, 0 } } }, f32_lifo },
	{ "f34", { 4, 10, 0, 6, 0, true, 0, ATTN }, f34 },
	{ "chunk", { 4, 10, 0, 0, 0, false, 0, ATTN }, chunk },
	{ "chunk_sw", { 4, 4, 0, 0, 0, false, 0,
	  { { "sw", KVC_SLIDING, 4, 0 } } }, chunk_sw },
	{ "hybrid", { 4, 12, 12, 0, 0, false, 0,
	  { { "full", KVC_FULL, 0, 0 }, { "sw", KVC_SLIDING, 5, 0 },
	    { "mamba", KVC_STATE, 0, 0 } } }, hybrid },
	{ "sw_hit", { 4, 16, 0, 0, 0, true, 0,
	  { { "full", KVC_FULL, 0, 0 }, { "sw", KVC_SLIDING, 8, 0 } } },
	  sw_hit },
	{ "seedbug3_ok", { 4, 8, 16, 0, 0, false, 0, ATTN }, seedbug3_ok },
	{ "seedbug3_later", { 4, 8, 16, 0, 0, false, 0, ATTN },
	  seedbug3_later },
	{ "misuse", { 4, 10, 0, 32, 0, false, 0, ATTN }, misuse },
};

#define NSCRIPTS ((int)(sizeof(scripts) / sizeof(scripts[0])))

START_TEST(test_script)
{
	run_ops(scripts[_i].name, &scripts[_i].c, scripts[_i].ops);
}
END_TEST

/*
 * The named regression of seed bug 3 (vllm-project/vllm PR #8824): a
 * forked request swapped out, unseen tokens appended to both sequences,
 * swap-in with lookahead.  The verdict must equal the action's outcome at
 * the exact boundary: with 6 free blocks OK (and the action succeeds with
 * 0 left), with 5 LATER (and the action fails, changing nothing).
 */
START_TEST(test_seedbug3_swap_in_unseen_lookahead_shared)
{
	static const struct cspec c = { 4, 9, 16, 0, 0, false, 0, ATTN };
	uint32_t tok[16], i, left, need[KVC_MAX_GROUPS];
	int32_t p, q, x, y;
	kvc_verdict v;
	kvc *k = mk(&c), *d;
	char *before, *after;

	for (i = 0; i < 16; i++)
		tok[i] = i;
	ck_assert_int_eq(kvc_seq_new(k, tok, 10, &p), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, p, 0), KV_OK);
	ck_assert_int_eq(kvc_fork(k, p, &q), KV_OK);
	ck_assert_int_eq(kvc_seq_new(k, tok + 10, 4, &x), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, x, 0), KV_OK);	/* 1 block */
	ck_assert_int_eq(kvc_seq_new(k, tok + 14, 1, &y), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, y, 0), KV_OK);	/* 1 block */
	ck_assert_int_eq(kvc_swap_out(k, q), KV_OK);
	ck_assert_uint_eq(kvc_free_cpu(k), 13);	/* 3 shared blocks, once */
	ck_assert_int_eq(kvc_append(k, p, tok, 1, 0, false), KV_OK);
	ck_assert_int_eq(kvc_append(k, q, tok, 3, 0, false), KV_OK);
	audit_ok(k, "setup");
	/* 3 swapped back + copy of the shared partial block for p + one
	 * lookahead block each: 6, against 3 + 0 if unseen tokens and
	 * lookahead were ignored, or 3 + 3 if sharing were lost. */
	ck_assert_int_eq(kvc_blocks_needed(k, p, 0, 2, need), KV_OK);
	ck_assert_uint_eq(need[0], 6);
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 7);

	/* 7 free: OK, and the swap-in leaves 1. */
	ck_assert_int_eq(kvc_can_swap_in(k, p, 2, &v), KV_OK);
	ck_assert_int_eq(v, KVC_VERDICT_OK);
	ck_assert(trial(k, ACT_SWIN, p, 0, 2, &left));
	ck_assert_uint_eq(left, 1);

	/* 6 free: the exact boundary, still OK, leaves 0. */
	ck_assert_int_eq(kvc_free_seq(k, y), KV_OK);
	ck_assert_int_eq(kvc_append(k, x, tok, 1, 0, false), KV_OK);
	ck_assert_int_eq(kvc_append(k, x, tok, 4, 0, false), KV_OK);
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 6);
	ck_assert_int_eq(kvc_can_swap_in(k, p, 2, &v), KV_OK);
	ck_assert_int_eq(v, KVC_VERDICT_OK);
	ck_assert(trial(k, ACT_SWIN, p, 0, 2, &left));
	ck_assert_uint_eq(left, 0);

	/* 5 free: LATER, and the action fails with no change. */
	ck_assert_int_eq(kvc_append(k, x, tok, 4, 0, false), KV_OK);
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 5);
	ck_assert_int_eq(kvc_can_swap_in(k, p, 2, &v), KV_OK);
	ck_assert_int_eq(v, KVC_VERDICT_LATER);
	before = fingerprint(k);
	ck_assert_int_eq(kvc_swap_in(k, p, 2), KV_ENOSPC);
	after = fingerprint(k);
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
	audit_ok(k, "after the failed swap-in");
	/* a smaller lookahead fits again: 5 blocks */
	ck_assert_int_eq(kvc_can_swap_in(k, p, 1, &v), KV_OK);
	ck_assert_int_eq(v, KVC_VERDICT_OK);

	/* Execute at the boundary on a clone: one pair per distinct CPU
	 * block, then p's private copy of the shared partial block. */
	d = kvc_clone(k);
	ck_assert_int_eq(kvc_free_seq(d, x), KV_OK);
	ck_assert_int_eq(kvc_swap_in(d, q, 2), KV_OK);
	ck_assert_uint_eq(kvc_seq_computed(d, p), 11);
	ck_assert_uint_eq(kvc_seq_computed(d, q), 13);
	{
		size_t np;
		const struct kvc_pair *pp = kvc_pairs(d, &np);

		ck_assert_uint_eq(np, 4);
		ck_assert_int_eq(pp[3].src, pp[2].src);	/* from CPU */
		ck_assert_int_ne(pp[3].dst, pp[2].dst);
	}
	audit_ok(d, "clone");
	kvc_free(d);
	kvc_free(k);
}
END_TEST

/* §9 case 6: OOM then recycle, 1024 blocks of 16. */
START_TEST(test_oom_then_recycle)
{
	static const struct cspec c = { 16, 1024, 0, 0, 0, false, 0, ATTN };
	kvc *k = mk(&c);
	int32_t s[1025], t, u;
	uint32_t tok;
	size_t n;
	const int32_t *id;
	int i;

	for (i = 0; i < 1025; i++) {
		tok = (uint32_t)i;
		ck_assert_int_eq(kvc_seq_new(k, &tok, 1, &s[i]), KV_OK);
		ck_assert_int_eq(kvc_allocate(k, s[i], 0),
		    i < 1024 ? KV_OK : KV_ENOSPC);
	}
	audit_ok(k, "full");
	for (i = 0; i < 100; i++) {
		int32_t want;

		id = kvc_table(k, s[i * 7], 0, &n);
		want = id[0];
		ck_assert_int_eq(kvc_free_seq(k, s[i * 7]), KV_OK);
		tok = 5000u + (uint32_t)i;
		ck_assert_int_eq(kvc_seq_new(k, &tok, 1, &t), KV_OK);
		ck_assert_int_eq(kvc_allocate(k, t, 0), KV_OK);
		id = kvc_table(k, t, 0, &n);
		ck_assert_int_eq(id[0], want);
		ck_assert_int_eq(kvc_seq_new(k, &tok, 1, &u), KV_OK);
		ck_assert_int_eq(kvc_allocate(k, u, 0), KV_ENOSPC);
		s[i * 7] = t;
	}
	audit_ok(k, "recycled");
	kvc_free(k);
}
END_TEST

/*
 * §8.3 item 6: a release is validated as a whole before any mutation.
 * The API never names raw ids, so the damage is done by hand: a table
 * naming one block more often than its count, or an id out of range,
 * rejects the whole free (and swap) with nothing changed.
 */
START_TEST(test_free_validated_whole)
{
	static const struct cspec c = { 4, 4, 4, 0, 0, false, 0, ATTN };
	uint32_t tok[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	int32_t a, b, keep;
	kvc *k = mk(&c);
	char *before, *after;

	ck_assert_int_eq(kvc_seq_new(k, tok, 8, &a), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, a, 0), KV_OK);
	ck_assert_int_eq(kvc_seq_new(k, tok, 8, &b), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, b, 0), KV_OK);	/* [2,3] */
	/* b names block 3 twice: [3,3] (like DeepSpeed's free([3,3])) */
	keep = k->seq[b].tab[0].id[0];
	k->seq[b].tab[0].id[0] = 3;
	before = fingerprint(k);
	ck_assert_int_eq(kvc_free_seq(k, b), KV_EINVAL);
	ck_assert_int_eq(kvc_swap_out(k, b), KV_EINVAL);
	after = fingerprint(k);
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
	/* out of range: [1, 7] */
	k->seq[b].tab[0].id[0] = keep;
	keep = k->seq[a].tab[0].id[1];
	k->seq[a].tab[0].id[1] = 7;
	ck_assert_int_eq(kvc_free_seq(k, a), KV_EINVAL);
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 0);
	k->seq[a].tab[0].id[1] = keep;
	audit_ok(k, "repaired");
	ck_assert_int_eq(kvc_free_seq(k, a), KV_OK);
	ck_assert_int_eq(kvc_free_seq(k, b), KV_OK);
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 4);
	audit_ok(k, "freed");
	kvc_free(k);
}
END_TEST

/* The audit catches damage (each invariant it numbers). */
START_TEST(test_audit_catches_damage)
{
	static const struct cspec c = { 4, 4, 0, 0, 0, true, 0, ATTN };
	uint32_t tok[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	int32_t a;
	kvc *k = mk(&c);
	char why[256];
	int32_t keep;

	ck_assert_int_eq(kvc_seq_new(k, tok, 6, &a), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, a, 0), KV_OK);
	audit_ok(k, "fresh");
	keep = k->seq[a].tab[0].id[1];
	k->seq[a].tab[0].id[1] = 3;		/* count mismatch */
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 1);
	k->seq[a].tab[0].id[1] = keep;
	k->seq[a].tab[0].aux[0] ^= 1;		/* hash not its contents' */
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 4);
	k->seq[a].tab[0].aux[0] ^= 1;
	k->seq[a].tab[0].id[0] = KVC_NULL;	/* null in a full group */
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 5);
	k->seq[a].tab[0].id[0] = 0;
	audit_ok(k, "repaired");
	kvc_free(k);
}
END_TEST

/* Configuration checks of the mode. */
START_TEST(test_config)
{
	struct kvc_config cfg;
	char why[128];
	kv_err e;
	kvc *k;

	kvc_config_default(&cfg, KVC_EXACT);
	cfg.gpu_blocks = 4;
	cfg.watermark = 1.0;
	k = kvc_new(&cfg, &e, why, sizeof(why));
	ck_assert_ptr_null(k);
	ck_assert_int_eq(e, KV_ECONFIG);
	cfg.watermark = 0.5;
	cfg.reuse = (kvc_reuse)7;
	ck_assert_ptr_null(kvc_new(&cfg, &e, why, sizeof(why)));
	cfg.reuse = KVC_REUSE_LIFO;
	k = kvc_new(&cfg, &e, why, sizeof(why));
	ck_assert_ptr_nonnull(k);
	ck_assert_uint_eq(kvc_free_blocks(k, 0), 4);	/* no null block */
	ck_assert_uint_eq(kvc_free_cpu(k), 0);
	kvc_free(k);
}
END_TEST

/* ---- randomized consistency ------------------------------------------ */

static uint64_t
rnd(uint64_t *st)
{
	*st = *st * 6364136223846793005ull + 1442695040888963407ull;
	return *st >> 33;
}

static const struct cspec fuzzcfg[] = {
	{ 4, 40, 24, 64, 0.1, true, 0, ATTN },
	{ 4, 40, 24, 64, 0, true, KVC_REUSE_LIFO, ATTN },
	{ 2, 60, 40, 48, 0.05, true, 0,
	  { { "full", KVC_FULL, 0, 0 }, { "sw", KVC_SLIDING, 5, 0 } } },
	{ 2, 60, 40, 48, 0, true, 0,
	  { { "full", KVC_FULL, 0, 4 }, { "sw", KVC_SLIDING, 7, 2 } } },
	{ 4, 60, 40, 64, 0, false, KVC_REUSE_LIFO,
	  { { "full", KVC_FULL, 0, 0 }, { "sw", KVC_SLIDING, 6, 0 },
	    { "mamba", KVC_STATE, 0, 0 } } },
	{ 4, 40, 0, 64, 0, true, 0,
	  { { "full", KVC_FULL, 0, 0 }, { "mamba", KVC_STATE, 0, 0 } } },
	{ 3, 30, 30, 40, 0, true, 0,
	  { { "sw", KVC_SLIDING, 4, 0 } } },
};

#define NFUZZ ((int)(sizeof(fuzzcfg) / sizeof(fuzzcfg[0])))

/* Each configuration under two seeds. */
START_TEST(test_fuzz_consistency)
{
	const struct cspec *c = &fuzzcfg[_i % NFUZZ];
	kvc *k = mk(c);
	uint64_t st = 0x12345u + (uint64_t)_i * 7919u;
	int32_t ids[64];
	uint32_t nids = 0, tok[64], i, n, L, left;
	kvc_verdict v;
	bool yes, ok;
	char *before, *after, where[64];
	int step;
	kv_err e;

	for (step = 0; step < 4000; step++) {
		uint32_t op = (uint32_t)(rnd(&st) % 13);
		int32_t s = nids ? ids[rnd(&st) % nids] : -1;
		kvc_state want = op >= 9 && op <= 10 ? KVC_SWAPPED :
		    op >= 5 ? KVC_RUNNING : KVC_WAITING, sst;

		/* a few tries at a sequence in the state the op wants */
		for (i = 0; i < 6 && s >= 0 && kvc_seq_state(k, s) != want;
		     i++)
			s = ids[rnd(&st) % nids];
		sst = s >= 0 ? kvc_seq_state(k, s) : KVC_DEAD;

		snprintf(where, sizeof(where), "fuzz %d step %d op %u", _i,
		    step, op);
		n = 1 + (uint32_t)(rnd(&st) % 12);
		L = (uint32_t)(rnd(&st) % 4 == 0 ? rnd(&st) % 9 : 0);
		/* tokens from a small alphabet: prefixes repeat */
		for (i = 0; i < 64; i++)
			tok[i] = (uint32_t)(rnd(&st) % 3 == 0 ? rnd(&st) % 2 :
			    i);
		if (op == 0 || s < 0) {
			if (nids < 64 && kvc_seq_new(k, tok,
			    1 + rnd(&st) % 30, &ids[nids]) == KV_OK)
				nids++;
			continue;
		}
		if (sst == KVC_DEAD)
			continue;
		/* mostly operations that the state allows */
		if (sst == KVC_SWAPPED && op != 3 && op != 11)
			op = rnd(&st) % 3 ? 9 + (uint32_t)(rnd(&st) % 2) : op;
		else if (sst == KVC_RUNNING && (op == 9 || op == 10))
			op = rnd(&st) % 2 ? 8 : 3;
		else if (sst == KVC_WAITING && op > 4 && op != 11)
			op = 1 + (uint32_t)(rnd(&st) % 2);
		before = fingerprint(k);
		e = KV_OK;
		switch (op) {
		case 1:
			if (kvc_can_allocate(k, s, L, &v) == KV_OK) {
				ok = trial(k, ACT_ALLOC, s, 0, 0, &left);
				check_verdict(k, where, v, ok, left, L == 0);
			}
			break;
		case 2:
			e = kvc_allocate(k, s, rnd(&st) % 2 ? n : 0);
			break;
		case 3:
		case 4:
			e = kvc_append(k, s, tok, n, L,
			    sst == KVC_RUNNING && L > 0);
			break;
		case 5:
			if (kvc_can_append(k, s, n, true, L, &yes) == KV_OK) {
				ok = trial(k, ACT_APPEND, s, n, L, &left);
				ck_assert_msg(yes == ok, "%s: can_append",
				    where);
			}
			break;
		case 6:
			if (nids < 64 && kvc_fork(k, s, &ids[nids]) == KV_OK)
				nids++;
			break;
		case 7:
			if (kvc_can_swap_out(k, s, &yes) == KV_OK) {
				ok = trial(k, ACT_SWOUT, s, 0, 0, &left);
				ck_assert_msg(yes == ok, "%s: can_swap_out",
				    where);
			}
			break;
		case 8:
			e = kvc_swap_out(k, s);
			break;
		case 9:
			if (kvc_can_swap_in(k, s, L, &v) == KV_OK) {
				ok = trial(k, ACT_SWIN, s, 0, L, &left);
				check_verdict(k, where, v, ok, left, true);
			}
			break;
		case 10:
			e = kvc_swap_in(k, s, L);
			break;
		case 11:
			e = rnd(&st) % 3 == 0 ? kvc_free_seq(k, s) : KV_OK;
			break;
		case 12: {
			uint32_t need[KVC_MAX_GROUPS], g, sum = 0;

			if (sst == KVC_RUNNING &&
			    kvc_blocks_needed(k, s, n, L, need) == KV_OK) {
				for (g = 0; g < kvc_ngroups(k); g++)
					sum += need[g];
				ok = trial(k, ACT_APPEND, s, n, L, &left);
				/* with no sliding release, need == taken */
				if (ok && c->g[1].name == NULL &&
				    c->g[0].kind == KVC_FULL)
					ck_assert_uint_eq(sum,
					    kvc_free_blocks(k, 0) - left);
			}
			break;
		}
		}
		audit_ok(k, where);
		if (e != KV_OK || op == 1 || op == 5 || op == 7 || op == 9 ||
		    op == 12) {
			after = fingerprint(k);
			ck_assert_msg(strcmp(before, after) == 0, "%s: state "
			    "changed (%s)\n before %s\n after  %s", where,
			    kv_strerror(e), before, after);
			free(after);
		}
		free(before);
		/* keep the pool turning over */
		for (i = 0; i < 8 && kvc_free_blocks(k, 0) < c->gpu / 3 &&
		    nids > 0; i++) {
			s = ids[rnd(&st) % nids];
			if (kvc_seq_state(k, s) == KVC_RUNNING ||
			    kvc_seq_state(k, s) == KVC_SWAPPED)
				ck_assert_int_eq(kvc_free_seq(k, s), KV_OK);
		}
	}
	kvc_free(k);
}
END_TEST

/* kvc_clone() is deep: the copy and the original evolve apart. */
START_TEST(test_clone_is_deep)
{
	static const struct cspec c = { 4, 8, 8, 0, 0, true, 0, ATTN };
	uint32_t tok[12] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 };
	int32_t a, b;
	kvc *k = mk(&c), *d;
	char *fk, *fd;

	ck_assert_int_eq(kvc_seq_new(k, tok, 9, &a), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, a, 0), KV_OK);
	d = kvc_clone(k);
	ck_assert_ptr_nonnull(d);
	fk = fingerprint(k);
	fd = fingerprint(d);
	ck_assert_str_eq(fk, fd);
	free(fd);
	ck_assert_int_eq(kvc_swap_out(d, a), KV_OK);
	ck_assert_int_eq(kvc_seq_new(d, tok, 12, &b), KV_OK);
	ck_assert_int_eq(kvc_allocate(d, b, 0), KV_OK);
	audit_ok(d, "clone");
	fd = fingerprint(k);
	ck_assert_str_eq(fk, fd);
	audit_ok(k, "original");
	free(fk);
	free(fd);
	kvc_free(d);
	kvc_free(k);
}
END_TEST

Suite *exact_suite(void);

Suite *
exact_suite(void)
{
	Suite *s = suite_create("exact");
	TCase *tc = tcase_create("scripts");
	TCase *tu = tcase_create("units");
	TCase *tf = tcase_create("fuzz");

	tcase_add_loop_test(tc, test_script, 0, NSCRIPTS);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tcase_add_test(tu, test_seedbug3_swap_in_unseen_lookahead_shared);
	tcase_add_test(tu, test_oom_then_recycle);
	tcase_add_test(tu, test_free_validated_whole);
	tcase_add_test(tu, test_audit_catches_damage);
	tcase_add_test(tu, test_config);
	tcase_add_test(tu, test_clone_is_deep);
	tcase_set_timeout(tu, 60);
	suite_add_tcase(s, tu);
	tcase_set_timeout(tf, 120);
	tcase_add_loop_test(tf, test_fuzz_consistency, 0, 2 * NFUZZ);
	suite_add_tcase(s, tf);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(exact_suite());
	int nfail;

	srunner_run_all(sr, CK_NORMAL);
	nfail = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nfail == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
