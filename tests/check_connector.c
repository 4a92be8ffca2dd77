/*
 * check_connector.c -- the KV connector of policy vllm-v1 (kvsched.h's
 * struct kvs_connector; docs/scheduler.md "KV connectors").
 *
 * Covered: which policies and models take a connector, and when; an idle
 * connector (no offers, no holds) changes no step of a run; the hooks'
 * arguments and order (match with the prefix hit, alloc, computed with
 * each step's from/to after finished); the step's load and held lists;
 * kvs_audit with loads in flight, landed, failed and aborted; held blocks
 * counted used until kvs_release; a hook's error stops the step; and a
 * randomized run of loads, failures, holds and aborts under kvs_audit
 * that ends with every block free.
 */
#include "core/kvsched.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a connector the tests drive ---------------------------------------- */

#define TC_MAXREQ 4096
#define TC_MAXLOG 64

struct tc {
	uint32_t offer[TC_MAXREQ];	/* tokens match() offers */
	bool hold[TC_MAXREQ];		/* finished() holds */
	uint32_t local[TC_MAXREQ];	/* the local hit match() saw */
	kv_err fail_match;		/* match() returns this */
	/* calls in order: 'm', 'a', 'c', 'f' with the request and values */
	struct tc_call {
		char kind;
		kvs_req r;
		uint32_t x, y;
		int status;
	} log[TC_MAXLOG];
	uint32_t nlog;
};

static void
tc_log(struct tc *t, char kind, kvs *s, kvs_req r, uint32_t x, uint32_t y)
{
	if (t->nlog < TC_MAXLOG)
		t->log[t->nlog++] = (struct tc_call){ kind, r, x, y,
			(int)kvs_req_status(s, r) };
}

static kv_err
tc_match(void *ctx, kvs *s, kvs_req r, uint32_t local, uint32_t *ext)
{
	struct tc *t = ctx;

	if (t->fail_match != KV_OK)
		return t->fail_match;
	t->local[r] = local;
	*ext = t->offer[r];
	tc_log(t, 'm', s, r, local, *ext);
	return KV_OK;
}

static kv_err
tc_alloc(void *ctx, kvs *s, kvs_req r, uint32_t local, uint32_t ext)
{
	struct tc *t = ctx;

	t->offer[r] = 0;
	tc_log(t, 'a', s, r, local, ext);
	return KV_OK;
}

static kv_err
tc_computed(void *ctx, kvs *s, kvs_req r, uint32_t from, uint32_t to)
{
	tc_log(ctx, 'c', s, r, from, to);
	return KV_OK;
}

static kv_err
tc_finished(void *ctx, kvs *s, kvs_req r, bool *hold)
{
	struct tc *t = ctx;

	*hold = t->hold[r];
	tc_log(t, 'f', s, r, 0, 0);
	return KV_OK;
}

static struct kvs_connector
tc_conn(struct tc *t)
{
	struct kvs_connector c = { t, tc_match, tc_alloc, tc_computed,
				   tc_finished };

	return c;
}

/* ---- helpers ------------------------------------------------------------ */

static kvs *
mk(const char *policy, uint32_t bs, uint32_t gpu, uint32_t mml,
   uint32_t seqs, uint32_t budget, bool caching)
{
	struct kvs_config sc;
	struct kvc_config kc;
	char why[256];
	kv_err e;
	kvs *s;

	kvs_config_init(&sc);
	snprintf(sc.policy, sizeof(sc.policy), "%s", policy);
	sc.max_num_seqs = seqs;
	sc.max_num_batched_tokens = budget;
	sc.capacity_check = 0;
	kvc_config_default(&kc, KVC_EXACT);
	kc.block_size = bs;
	kc.gpu_blocks = gpu;
	kc.max_model_len = mml;
	kc.prefix_caching = caching;
	s = kvs_new(&sc, &kc, &e, why, sizeof(why));
	ck_assert_msg(s != NULL, "kvs_new: %s", why);
	return s;
}

/* A vllm-v1 kvs (bs 4, 32 blocks, caching) with t's connector. */
static kvs *
mkc(struct tc *t, uint32_t budget)
{
	kvs *s = mk("vllm-v1", 4, 32, 64, 4, budget, true);
	struct kvs_connector c;

	memset(t, 0, sizeof(*t));
	c = tc_conn(t);
	ck_assert_int_eq(kvs_set_connector(s, &c), KV_OK);
	return s;
}

static kvs_req
req(kvs *s, uint32_t base, uint32_t len, uint32_t out)
{
	uint32_t *t = malloc(len * sizeof(*t));
	kvs_req r;

	ck_assert_ptr_nonnull(t);
	for (uint32_t i = 0; i < len; i++)
		t[i] = base + i;
	ck_assert_int_eq(kvs_add(s, t, len, out, 0, &r), KV_OK);
	free(t);
	return r;
}

static void
audit_ok(const kvs *s)
{
	char why[256];
	int rc = kvs_audit(s, why, sizeof(why));

	ck_assert_msg(rc == 0, "kvs_audit %d: %s", rc, why);
}

static const struct kvs_step *
step(kvs *s)
{
	const struct kvs_step *st;

	ck_assert_msg(kvs_step(s, &st) == KV_OK, "step: %s", kvs_errmsg(s));
	audit_ok(s);
	return st;
}

static uint32_t
free_blocks(const kvs *s)
{
	return kvc_free_blocks(kvs_kv((kvs *)s), 0);
}

/* ---- tests -------------------------------------------------------------- */

START_TEST(only_v1_before_requests)
{
	struct tc t;
	struct kvs_connector c;
	struct kvs_config sc;
	struct kvc_config kc;
	char why[256];
	kv_err e;
	kvs *s;

	memset(&t, 0, sizeof(t));
	c = tc_conn(&t);
	s = mk("vllm-v0", 4, 32, 64, 4, 64, false);
	ck_assert_int_eq(kvs_set_connector(s, &c), KV_ENOTSUP);
	ck_assert_ptr_nonnull(strstr(kvs_errmsg(s), "vllm-v1"));
	kvs_free(s);
	s = mk("vllm-v1", 4, 32, 64, 4, 64, true);
	ck_assert_int_eq(kvs_set_connector(s, &c), KV_OK);
	ck_assert_int_eq(kvs_set_connector(s, NULL), KV_OK);
	ck_assert_int_eq(kvs_set_connector(s, &c), KV_OK);
	req(s, 0, 8, 1);
	ck_assert_int_eq(kvs_set_connector(s, NULL), KV_ESTATE);
	kvs_free(s);
	/* a hybrid model (two groups): vLLM's connectors without HMA */
	kvs_config_init(&sc);
	snprintf(sc.policy, sizeof(sc.policy), "vllm-v1");
	sc.capacity_check = 0;
	kvc_config_default(&kc, KVC_EXACT);
	kc.block_size = 4;
	kc.gpu_blocks = 64;
	kc.max_model_len = 64;
	kc.ngroups = 2;
	snprintf(kc.group[0].name, sizeof(kc.group[0].name), "full");
	kc.group[0].kind = KVC_FULL;
	snprintf(kc.group[1].name, sizeof(kc.group[1].name), "swa");
	kc.group[1].kind = KVC_SLIDING;
	kc.group[1].window = 8;
	s = kvs_new(&sc, &kc, &e, why, sizeof(why));
	ck_assert_msg(s != NULL, "kvs_new: %s", why);
	ck_assert_int_eq(kvs_set_connector(s, &c), KV_ENOTSUP);
	kvs_free(s);
}
END_TEST

/*
 * An attached connector that offers nothing and holds nothing: the same
 * steps, block for block, as no connector (a run with preemptions).
 */
START_TEST(idle_connector_changes_nothing)
{
	struct tc t;
	struct kvs_connector c;
	kvs *a = mk("vllm-v1", 4, 24, 64, 4, 24, true);
	kvs *b = mk("vllm-v1", 4, 24, 64, 4, 24, true);
	uint32_t n = 0;

	memset(&t, 0, sizeof(t));
	c = tc_conn(&t);
	c.computed = NULL;	/* the log would overflow; not needed here */
	ck_assert_int_eq(kvs_set_connector(b, &c), KV_OK);
	for (uint32_t i = 0; i < 12; i++) {
		req(a, 100 * (i % 3), 10 + 3 * i, 2 + i % 7);
		req(b, 100 * (i % 3), 10 + 3 * i, 2 + i % 7);
	}
	while (kvs_nunfinished(a) > 0) {
		const struct kvs_step *x = step(a), *y = step(b);

		ck_assert_uint_eq(x->nsched, y->nsched);
		for (uint32_t i = 0; i < x->nsched; i++) {
			ck_assert_int_eq(x->sched[i].req, y->sched[i].req);
			ck_assert_uint_eq(x->sched[i].ntokens,
					  y->sched[i].ntokens);
		}
		ck_assert_uint_eq(x->npreempt, y->npreempt);
		ck_assert_uint_eq(x->nfinish, y->nfinish);
		ck_assert_uint_eq(y->nload, 0);
		ck_assert_uint_eq(y->nheld, 0);
		ck_assert_uint_eq(free_blocks(a), free_blocks(b));
		n += x->npreempt;
		ck_assert_uint_lt(x->number, 1000);
	}
	ck_assert_uint_eq(kvs_nunfinished(b), 0);
	ck_assert_uint_gt(n, 0);	/* the run did preempt */
	kvs_free(a);
	kvs_free(b);
}
END_TEST

/* Hook arguments and order; the step's load list; kvs_req_ext. */
START_TEST(hooks_in_order)
{
	struct tc t;
	const struct kvs_step *st;
	kvs *s = mkc(&t, 6);
	kvs_req a, b;

	a = req(s, 0, 8, 1);
	st = step(s);	/* A: 6 of 8 (budget 6) */
	ck_assert_uint_eq(st->nsched, 1);
	st = step(s);	/* A: 2 more, samples, finishes */
	ck_assert_uint_eq(st->nfinish, 1);
	/* B shares A's two blocks: local hit 8, 8 more offered */
	b = req(s, 0, 20, 1);
	t.offer[b] = 8;
	t.nlog = 0;
	st = step(s);
	ck_assert_uint_eq(st->nload, 1);
	ck_assert_int_eq(st->load[0], b);
	ck_assert_uint_eq(kvs_req_ext(s, b), 8);
	ck_assert_int_eq(kvs_req_status(s, b), KVS_WAITING_REMOTE);
	ck_assert_uint_eq(t.nlog, 2);
	ck_assert_int_eq(t.log[0].kind, 'm');
	ck_assert_uint_eq(t.log[0].x, 8);
	ck_assert_int_eq(t.log[1].kind, 'a');
	ck_assert_uint_eq(t.log[1].x, 8);
	ck_assert_uint_eq(t.log[1].y, 8);
	/* the load counts no budget: nothing was scheduled */
	ck_assert_uint_eq(st->nsched, 0);
	ck_assert_int_eq(kvs_load_done(s, b, true), KV_OK);
	ck_assert_int_eq(kvs_load_done(s, b, true), KV_ESTATE);
	t.nlog = 0;
	st = step(s);	/* C = 16: the 4 left; B samples and finishes */
	ck_assert_uint_eq(st->nsched, 1);
	ck_assert_uint_eq(st->sched[0].ntokens, 4);
	ck_assert_uint_eq(st->nfinish, 1);
	/* finished (in the output loop) before computed (after it) */
	ck_assert_uint_eq(t.nlog, 2);
	ck_assert_int_eq(t.log[0].kind, 'f');
	ck_assert_int_eq(t.log[0].status, KVS_FINISHED);
	ck_assert_int_eq(t.log[1].kind, 'c');
	ck_assert_uint_eq(t.log[1].x, 16);
	ck_assert_uint_eq(t.log[1].y, 20);
	ck_assert_int_eq(t.log[1].status, KVS_FINISHED);
	(void)a;
	kvs_free(s);
}
END_TEST

/* Audit with loads in flight and landed; held blocks counted used. */
START_TEST(audit_and_held_blocks)
{
	struct tc t;
	const struct kvs_step *st;
	kvs *s = mkc(&t, 64);
	uint32_t all = free_blocks(s);
	kvs_req a, b;

	a = req(s, 0, 16, 2);
	b = req(s, 100, 16, 2);
	t.offer[a] = 8;
	t.offer[b] = 12;
	t.hold[a] = true;
	st = step(s);		/* both load; audit_ok inside */
	ck_assert_uint_eq(st->nload, 2);
	ck_assert_uint_eq(free_blocks(s), all - 2 - 3);
	ck_assert_uint_eq(kvs_queue_len(s, KVS_Q_WAITING), 2);
	ck_assert_int_eq(kvs_load_done(s, a, true), KV_OK);
	audit_ok(s);		/* one landed, one in flight */
	ck_assert_int_eq(kvs_load_done(s, b, false), KV_OK);
	audit_ok(s);		/* and one failed */
	st = step(s);		/* A from 8; B recomputes all 16 */
	ck_assert_uint_eq(st->nsched, 2);
	ck_assert_uint_eq(st->sched[0].ntokens, 8);
	ck_assert_uint_eq(st->sched[1].ntokens, 16);
	ck_assert_uint_eq(kvs_req_ext(s, a), 8);
	ck_assert_uint_eq(kvs_req_ext(s, b), 0);
	st = step(s);		/* both finish; A's blocks are held */
	ck_assert_uint_eq(st->nfinish, 2);
	ck_assert_uint_eq(st->nheld, 1);
	ck_assert_int_eq(st->held[0], a);
	ck_assert_uint_eq(kvs_nunfinished(s), 0);
	ck_assert_uint_eq(free_blocks(s), all - 5);	/* A: 17 tokens */
	ck_assert_int_eq(kvs_release(s, b), KV_ESTATE);
	ck_assert_int_eq(kvs_release(s, a), KV_OK);
	audit_ok(s);
	ck_assert_uint_eq(free_blocks(s), all);
	ck_assert_int_eq(kvs_release(s, a), KV_ESTATE);
	kvs_free(s);
}
END_TEST

/* Abort while loading keeps the blocks until the load ends. */
START_TEST(abort_while_loading)
{
	struct tc t;
	kvs *s = mkc(&t, 64);
	uint32_t all = free_blocks(s);
	kvs_req a;

	a = req(s, 0, 16, 2);
	t.offer[a] = 12;
	step(s);
	ck_assert_int_eq(kvs_abort(s, a), KV_OK);
	ck_assert_int_eq(kvs_req_status(s, a), KVS_ABORTED);
	ck_assert_uint_eq(free_blocks(s), all - 3);
	audit_ok(s);
	ck_assert_int_eq(kvs_load_done(s, a, true), KV_OK);
	ck_assert_uint_eq(free_blocks(s), all);
	audit_ok(s);
	ck_assert_int_eq(kvs_abort(s, a), KV_ESTATE);
	kvs_free(s);
}
END_TEST

/* A hook's error fails the step with the connector's word in the message. */
START_TEST(hook_error_stops)
{
	struct tc t;
	const struct kvs_step *st;
	kvs *s = mkc(&t, 64);

	req(s, 0, 16, 2);
	t.fail_match = KV_EINVAL;
	ck_assert_int_eq(kvs_step(s, &st), KV_EINVAL);
	ck_assert_ptr_nonnull(strstr(kvs_errmsg(s), "connector"));
	kvs_free(s);
}
END_TEST

/*
 * Random offers, landed and failed loads, holds, releases and aborts, a
 * pool small enough to preempt: kvs_audit after every action, and at the
 * end, every request ended and released, every block free.
 */
START_TEST(random_run)
{
	struct tc t;
	struct kvs_connector c;
	kvs *s = mk("vllm-v1", 4, 48, 128, 6, 48, true);
	uint32_t all = free_blocks(s), seed = 12345, nload = 0, nheld = 0;
	kvs_req r;

	memset(&t, 0, sizeof(t));
	c = tc_conn(&t);
	c.computed = NULL;
	ck_assert_int_eq(kvs_set_connector(s, &c), KV_OK);
	for (uint32_t it = 0; it < 3000; it++) {
		const struct kvs_step *st;

		seed = seed * 1103515245u + 12345u;
		if (kvs_nreqs(s) < 600 && (seed >> 16) % 3 == 0) {
			uint32_t len = 2 + (seed >> 8) % 60;

			r = req(s, 1000 * ((seed >> 4) % 5), len,
				1 + (seed >> 12) % 9);
			t.offer[r] = (seed >> 20) % 4 == 0 ? 0 :
			    (seed >> 22) % (len + 8);
			t.hold[r] = (seed >> 25) % 3 == 0;
		}
		st = step(s);
		nload += st->nload;
		nheld += st->nheld;
		for (kvs_req q = 0; q < (kvs_req)kvs_nreqs(s); q++) {
			kvs_status x = kvs_req_status(s, q);

			seed = seed * 1103515245u + 12345u;
			if ((seed >> 16) % 4 == 0)
				(void)kvs_load_done(s, q, (seed >> 20) % 5);
			if (x == KVS_FINISHED && (seed >> 18) % 5 == 0)
				(void)kvs_release(s, q);
			if ((x == KVS_WAITING_REMOTE || x == KVS_RUNNING) &&
			    (seed >> 24) % 97 == 0)
				ck_assert_int_eq(kvs_abort(s, q), KV_OK);
		}
		audit_ok(s);
	}
	/* drain: land every load, run to the end, release everything */
	for (uint32_t it = 0; kvs_nunfinished(s) > 0; it++) {
		for (kvs_req q = 0; q < (kvs_req)kvs_nreqs(s); q++) {
			(void)kvs_load_done(s, q, true);
			(void)kvs_release(s, q);
		}
		step(s);
		ck_assert_uint_lt(it, 100000);
	}
	for (kvs_req q = 0; q < (kvs_req)kvs_nreqs(s); q++) {
		(void)kvs_load_done(s, q, true);
		(void)kvs_release(s, q);
	}
	audit_ok(s);
	ck_assert_uint_eq(free_blocks(s), all);
	ck_assert_uint_gt(nload, 50);
	ck_assert_uint_gt(nheld, 20);
	kvs_free(s);
}
END_TEST

static Suite *
suite(void)
{
	Suite *su = suite_create("connector");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, only_v1_before_requests);
	tcase_add_test(tc, idle_connector_changes_nothing);
	tcase_add_test(tc, hooks_in_order);
	tcase_add_test(tc, audit_and_held_blocks);
	tcase_add_test(tc, abort_while_loading);
	tcase_add_test(tc, hook_error_stops);
	tcase_add_test(tc, random_run);
	suite_add_tcase(su, tc);
	return su;
}

int
main(void)
{
	SRunner *sr = srunner_create(suite());
	int nf;

	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
