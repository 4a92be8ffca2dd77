/*
 * check_offload.c -- the offload manager (core/kv_tier.c) and the
 * offloading connector (core/kv_offload.c), docs/offload.md.
 *
 * The manager's cases pin one rule each (LRU order, touch order, pending
 * and referenced slots never evicted, a store that cannot evict changes
 * nothing, slot reuse order); a seeded random walk then runs thousands of
 * operations against a small reference model of vLLM's
 * LRUOffloadingManager (an ordered list of hashes with a state each) and
 * compares every answer, the LRU order and the invariants (kvt_check).
 * The connector's cases check its configuration and, where the connector
 * API is built, a run whose loads agree with its hits.
 */
#include "core/kv_tier.h"
#include "core/kvoffload.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
check_ok(const struct kvt *t)
{
	char why[256] = "";
	int rc = kvt_check(t, why, sizeof(why));

	ck_assert_msg(rc == 0, "kvt_check %d: %s", rc, why);
}

/* Store hashes h[0..n) and complete them (ready). */
static void
put(struct kvt *t, const uint64_t *h, uint32_t n)
{
	uint32_t idx[16], nnew, nev;
	int32_t slot[16];

	ck_assert_int_eq(kvt_store_begin(t, h, n, idx, slot, &nnew, &nev),
			 KV_OK);
	for (uint32_t i = 0; i < nnew; i++)
		kvt_store_end(t, slot[i], true);
	check_ok(t);
}

/* The hashes on the LRU list, least recent first, as "1 2 3". */
static void
order(const struct kvt *t, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int32_t b = t->lru.head; b >= 0; b = t->lru.lk[b].next)
		o += (size_t)snprintf(buf + o, len - o, "%s%llu", o ? " " : "",
				      (unsigned long long)t->hash[b]);
}

START_TEST(lru_evicts_least_recent)
{
	struct kvt t;
	uint64_t a[] = { 1, 2, 3 }, b[] = { 4 };
	char buf[64];

	ck_assert_int_eq(kvt_init(&t, 3), KV_OK);
	put(&t, a, 3);
	put(&t, b, 1);		/* O10: 1 is the least recent */
	order(&t, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2 3 4");
	ck_assert_int_eq(kvt_find(&t, 1), -1);
	ck_assert_uint_eq(t.evicted, 1);
	kvt_release(&t);
}
END_TEST

START_TEST(touch_makes_first_most_recent)
{
	struct kvt t;
	uint64_t a[] = { 1, 2, 3 }, tch[] = { 2, 3, 9 }, b[] = { 4, 5 };
	char buf[64];

	ck_assert_int_eq(kvt_init(&t, 3), KV_OK);
	put(&t, a, 3);
	kvt_touch(&t, tch, 3);	/* O9: reversed, 2 ends most recent */
	order(&t, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1 3 2");
	put(&t, b, 2);
	order(&t, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2 4 5");
	kvt_release(&t);
}
END_TEST

START_TEST(pending_is_no_hit_and_not_evicted)
{
	struct kvt t;
	uint64_t a[] = { 1, 2 }, b[] = { 3 };
	uint32_t idx[4], nnew, nev;
	int32_t slot[4];

	ck_assert_int_eq(kvt_init(&t, 2), KV_OK);
	ck_assert_int_eq(kvt_store_begin(&t, a, 2, idx, slot, &nnew, &nev),
			 KV_OK);
	ck_assert_uint_eq(nnew, 2);
	ck_assert_uint_eq(kvt_lookup(&t, a, 2), 0);	/* O12 */
	ck_assert_int_eq(kvt_load_begin(&t, 1), -1);
	/* O8: nothing can be evicted: refused, nothing changes */
	ck_assert_int_eq(kvt_store_begin(&t, b, 1, idx, slot, &nnew, &nev),
			 KV_ENOSPC);
	ck_assert_uint_eq(kvt_used(&t), 2);
	ck_assert_int_ge(kvt_find(&t, 1), 0);
	kvt_store_end(&t, slot[0], true);
	kvt_store_end(&t, slot[1], false);	/* a failed store frees */
	ck_assert_uint_eq(kvt_used(&t), 1);
	ck_assert_uint_eq(kvt_lookup(&t, a, 2), 1);
	check_ok(&t);
	kvt_release(&t);
}
END_TEST

START_TEST(loading_slot_not_evicted)
{
	struct kvt t;
	uint64_t a[] = { 1, 2, 3 }, b[] = { 4 }, c[] = { 5, 6, 7 };
	uint32_t idx[4], nnew, nev;
	int32_t slot[4], s1;

	ck_assert_int_eq(kvt_init(&t, 3), KV_OK);
	put(&t, a, 3);
	s1 = kvt_load_begin(&t, 1);	/* O15 */
	ck_assert_int_ge(s1, 0);
	put(&t, b, 1);
	ck_assert_int_eq(kvt_find(&t, 1), s1);
	ck_assert_int_eq(kvt_find(&t, 2), -1);
	/* three new, only 3 and 4 evictable: refused whole */
	ck_assert_int_eq(kvt_store_begin(&t, c, 3, idx, slot, &nnew, &nev),
			 KV_ENOSPC);
	ck_assert_int_ge(kvt_find(&t, 3), 0);
	kvt_load_end(&t, s1);
	ck_assert_int_eq(kvt_store_begin(&t, c, 3, idx, slot, &nnew, &nev),
			 KV_OK);
	ck_assert_uint_eq(nev, 3);
	check_ok(&t);
	kvt_release(&t);
}
END_TEST

START_TEST(slot_ids_fresh_then_last_freed)
{
	struct kvt t;
	uint64_t a[] = { 1, 2, 3 }, b[] = { 4, 5 }, c[] = { 1 };
	uint32_t idx[4], nnew, nev;
	int32_t slot[4];

	ck_assert_int_eq(kvt_init(&t, 3), KV_OK);
	ck_assert_int_eq(kvt_store_begin(&t, a, 3, idx, slot, &nnew, &nev),
			 KV_OK);
	ck_assert_int_eq(slot[0], 0);
	ck_assert_int_eq(slot[2], 2);
	for (int i = 0; i < 3; i++)
		kvt_store_end(&t, slot[i], true);
	/* O16: 1 (slot 0) then 2 (slot 1) evicted; the last freed first */
	ck_assert_int_eq(kvt_store_begin(&t, b, 2, idx, slot, &nnew, &nev),
			 KV_OK);
	ck_assert_int_eq(slot[0], 1);
	ck_assert_int_eq(slot[1], 0);
	/* 4 and 5 pending: only 3 (slot 2) can make room for 1 again */
	ck_assert_int_eq(kvt_store_begin(&t, c, 1, idx, slot, &nnew, &nev),
			 KV_OK);
	ck_assert_uint_eq(nev, 1);
	ck_assert_int_eq(slot[0], 2);
	ck_assert_int_eq(kvt_find(&t, 3), -1);
	check_ok(&t);
	kvt_release(&t);
}
END_TEST

START_TEST(lookup_stops_at_first_miss)
{
	struct kvt t;
	uint64_t a[] = { 1, 2, 4 }, q[] = { 1, 2, 3, 4 };

	ck_assert_int_eq(kvt_init(&t, 4), KV_OK);
	put(&t, a, 3);
	ck_assert_uint_eq(kvt_lookup(&t, q, 4), 2);	/* O11 */
	ck_assert_uint_eq(kvt_lookup(&t, q + 3, 1), 1);
	kvt_release(&t);
}
END_TEST

/* ---- random walk against a reference model ---------------------- */

#define MCAP 6
#define MH 12

struct model {
	uint64_t ord[MCAP];	/* least recent first */
	int ref[MCAP];		/* -1 pending */
	uint32_t n;
};

static int
m_find(const struct model *m, uint64_t h)
{
	for (uint32_t i = 0; i < m->n; i++)
		if (m->ord[i] == h)
			return (int)i;
	return -1;
}

static void
m_remove(struct model *m, uint32_t i)
{
	memmove(m->ord + i, m->ord + i + 1, (m->n - i - 1) * sizeof(*m->ord));
	memmove(m->ref + i, m->ref + i + 1, (m->n - i - 1) * sizeof(*m->ref));
	m->n--;
}

static void
m_push(struct model *m, uint64_t h, int ref)
{
	m->ord[m->n] = h;
	m->ref[m->n++] = ref;
}

static bool
m_store(struct model *m, const uint64_t *h, uint32_t n)
{
	uint32_t k = 0, need, can = 0;
	uint64_t fresh[4];

	for (uint32_t i = 0; i < n; i++)
		if (m_find(m, h[i]) < 0)
			fresh[k++] = h[i];
	need = k > MCAP - m->n ? k - (MCAP - m->n) : 0;
	for (uint32_t i = 0; i < m->n; i++)
		if (m->ref[i] == 0)
			can++;
	if (can < need)
		return false;
	for (uint32_t i = 0; i < m->n && need > 0;)
		if (m->ref[i] == 0) {
			m_remove(m, i);
			need--;
		} else {
			i++;
		}
	for (uint32_t i = 0; i < k; i++)
		m_push(m, fresh[i], -1);
	return true;
}

static void
compare(const struct kvt *t, const struct model *m, int step)
{
	uint32_t i = 0;

	check_ok(t);
	ck_assert_msg(kvt_used(t) == m->n, "step %d: used %u, model %u",
		      step, kvt_used(t), m->n);
	for (int32_t b = t->lru.head; b >= 0; b = t->lru.lk[b].next, i++) {
		ck_assert_msg(t->hash[b] == m->ord[i], "step %d: LRU position "
			      "%u holds %llu, model %llu", step, i,
			      (unsigned long long)t->hash[b],
			      (unsigned long long)m->ord[i]);
		ck_assert_int_eq(t->ref[b], m->ref[i]);
	}
}

static void
walk_op(struct kvt *t, struct model *m, int32_t *loads, uint32_t *nloads,
	int step)
{
	uint64_t h[4];
	uint32_t n = 1 + (uint32_t)(rand() % 4), idx[4], nnew, nev, i;
	int32_t slot[4];
	int op = rand() % 6, j;
	bool ok;

	for (i = 0; i < n; i++)
		h[i] = 1 + (uint64_t)(rand() % MH);
	if (n > 1 && h[0] == h[1])
		n = 1;	/* a chain never repeats a hash */
	switch (op) {
	case 0:		/* prepare_store */
	case 1:
		if (n == 4 && (h[2] == h[0] || h[2] == h[1] || h[3] == h[0] ||
			       h[3] == h[1] || h[3] == h[2]))
			n = 2;
		if (n == 3 && (h[2] == h[0] || h[2] == h[1]))
			n = 2;
		ok = m_store(m, h, n);
		ck_assert_int_eq(kvt_store_begin(t, h, n, idx, slot, &nnew,
						 &nev), ok ? KV_OK : KV_ENOSPC);
		break;
	case 2:		/* complete_store of a pending hash */
		if ((j = m_find(m, h[0])) < 0 || m->ref[j] != -1)
			break;
		ok = rand() % 4 != 0;
		kvt_store_end(t, kvt_find(t, h[0]), ok);
		if (ok)
			m->ref[j] = 0;
		else
			m_remove(m, (uint32_t)j);
		break;
	case 3:		/* lookup */
		for (i = 0; i < n; i++)
			if ((j = m_find(m, h[i])) < 0 || m->ref[j] < 0)
				break;
		ck_assert_uint_eq(kvt_lookup(t, h, n), i);
		break;
	case 4:		/* touch */
		kvt_touch(t, h, n);
		for (i = n; i-- > 0;)
			if ((j = m_find(m, h[i])) >= 0) {
				int r = m->ref[j];

				m_remove(m, (uint32_t)j);
				m_push(m, h[i], r);
			}
		break;
	default:	/* prepare_load or complete_load */
		if (*nloads > 0 && rand() % 2) {
			int32_t b = loads[--*nloads];

			m->ref[m_find(m, t->hash[b])]--;
			kvt_load_end(t, b);
		} else if ((j = m_find(m, h[0])) >= 0 && m->ref[j] >= 0 &&
			   *nloads < 64) {
			loads[(*nloads)++] = kvt_load_begin(t, h[0]);
			m->ref[j]++;
		}
		break;
	}
	compare(t, m, step);
}

START_TEST(random_walk_matches_model)
{
	for (unsigned seed = 1; seed <= 20; seed++) {
		struct kvt t;
		struct model m = { .n = 0 };
		int32_t loads[64];
		uint32_t nloads = 0;

		srand(seed);
		ck_assert_int_eq(kvt_init(&t, MCAP), KV_OK);
		for (int step = 0; step < 2000; step++)
			walk_op(&t, &m, loads, &nloads, step);
		kvt_release(&t);
	}
}
END_TEST

/* ---- the connector ------------------------------------------------ */

START_TEST(config_errors)
{
	struct kvo_config c = { .kind = KVO_NATIVE, .block_tokens = 16,
				.ntiers = 2 };
	char why[128];
	kv_err e;

	ck_assert_ptr_null(kvo_new(&c, &e, why, sizeof(why)));
	ck_assert_int_eq(e, KV_ECONFIG);
	ck_assert_ptr_nonnull(strstr(why, "native: 1"));
	c.ntiers = 1;
	c.block_tokens = 0;
	ck_assert_ptr_null(kvo_new(&c, &e, why, sizeof(why)));
	ck_assert_ptr_nonnull(strstr(why, "block_tokens"));
}
END_TEST

static kvs *
v1_kvs(uint32_t blocks, bool caching, const char *policy)
{
	struct kvs_config sc;
	struct kvc_config kc;
	kv_err e;
	char why[128];

	kvs_config_init(&sc);
	snprintf(sc.policy, sizeof(sc.policy), "%s", policy);
	kvc_config_default(&kc, KVC_VLLM_V1);
	kc.gpu_blocks = blocks;
	kc.max_model_len = 64;
	kc.prefix_caching = caching;
	kc.block_size = 4;
	sc.max_num_batched_tokens = 64;
	sc.max_num_seqs = 8;
	return kvs_new(&sc, &kc, &e, why, sizeof(why));
}

START_TEST(attach_needs_v1_caching_and_multiple)
{
	struct kvo_config c = { .kind = KVO_NATIVE, .block_tokens = 6,
				.ntiers = 1 };
	kvo *o;
	kvs *s;
	kv_err e;

	c.tier[0].blocks = 8;
	ck_assert_ptr_nonnull(o = kvo_new(&c, &e, NULL, 0));
	ck_assert_ptr_nonnull(s = v1_kvs(32, true, "vllm-v1"));
	ck_assert_int_eq(kvo_attach(o, s), KV_ECONFIG);
	ck_assert_ptr_nonnull(strstr(kvo_errmsg(o), "multiple"));
	kvs_free(s);
	ck_assert_ptr_nonnull(s = v1_kvs(32, false, "vllm-v1"));
	ck_assert_int_eq(kvo_attach(o, s), KV_ENOTSUP);
	ck_assert_ptr_nonnull(strstr(kvo_errmsg(o), "prefix caching"));
	kvs_free(s);
	kvo_free(o);
}
END_TEST

/* ---- a whole run: accounting, invariants, determinism ------------- */

#define RNREQ 80
#define RMAXFLY 4096
#define RGPU 20

struct run_acc {
	uint64_t load_tokens[KVO_MAX_TIERS], load_gpu[KVO_MAX_TIERS];
	uint64_t store_gpu[KVO_MAX_TIERS];
	uint64_t ext_total, steps, loads;
	struct kvo_tier_stats st[KVO_MAX_TIERS];
};

struct fly {
	uint64_t id;
	int left;		/* steps until done */
};

static void
run_check(kvs *s, kvo *o)
{
	char why[256] = "";
	int rc = kvs_audit(s, why, sizeof(why));

	ck_assert_msg(rc == 0, "kvs_audit %d: %s", rc, why);
	rc = kvo_check(o, why, sizeof(why));
	ck_assert_msg(rc == 0, "kvo_check %d: %s", rc, why);
}

/* Take the transfers a step started: account them, put them in flight. */
static void
run_take(kvo *o, kvs *s, struct fly *fly, uint32_t *nfly,
	 struct run_acc *a, uint32_t f)
{
	const struct kvo_xfer *x;
	uint32_t n = kvo_started(o, &x);

	for (uint32_t i = 0; i < n; i++) {
		ck_assert_uint_eq(x[i].npairs, x[i].nblocks);
		if (x[i].dir == KVO_LOAD) {
			a->load_tokens[x[i].tier] += x[i].ntokens;
			a->load_gpu[x[i].tier] += x[i].nblocks;
			ck_assert_int_eq(kvs_req_status(s, x[i].req),
					 KVS_WAITING_REMOTE);
		} else {
			a->store_gpu[x[i].tier] += x[i].nblocks;
			ck_assert_uint_eq(x[i].nblocks % f, 0);
		}
		ck_assert_uint_lt(*nfly, RMAXFLY);
		fly[*nfly].id = x[i].id;
		fly[(*nfly)++].left = rand() % 4;
	}
}

/* Transfers whose time is up end (in start order); the rest age. */
static void
run_land(kvo *o, struct fly *fly, uint32_t *nfly, bool all)
{
	uint32_t keep = 0, n = *nfly;

	for (uint32_t i = 0; i < n; i++) {
		if (all || fly[i].left-- <= 0) {
			ck_assert_int_eq(kvo_done(o, fly[i].id, true), KV_OK);
			continue;
		}
		fly[keep++] = fly[i];
	}
	*nfly = keep;
}

static void
run_add(kvs *s, int i, struct run_acc *a)
{
	uint32_t tok[64], n = 0, p = (uint32_t)(rand() % 8);
	uint32_t plen = 8 + 4 * (p % 3), slen = 1 + (uint32_t)(rand() % 20);
	kvs_req r;

	(void)a;
	for (uint32_t t = 0; t < plen; t++)
		tok[n++] = 1000 * p + t;
	for (uint32_t t = 0; t < slen; t++)
		tok[n++] = 100000 + 100 * (uint32_t)i + t;
	ck_assert_int_eq(kvs_add(s, tok, n, 1 + (uint32_t)(rand() % 6), 0,
				 &r), KV_OK);
}

static void
run_one(enum kvo_kind kind, unsigned seed, struct run_acc *a)
{
	struct kvo_config c = { .kind = kind, .block_tokens = 4,
				.ntiers = 1 };
	struct fly *fly = malloc(RMAXFLY * sizeof(*fly));
	const struct kvs_step *st;
	uint32_t nfly = 0;
	int added = 0;
	kvo *o;
	kvs *s;
	kv_err e;

	memset(a, 0, sizeof(*a));
	c.tier[0].blocks = 12;
	if (kind == KVO_LMCACHE) {
		c.ntiers = 2;
		c.tier[0].blocks = 4;
		c.tier[1].blocks = 24;
	} else {
		c.block_tokens = 8;
	}
	srand(seed);
	ck_assert_ptr_nonnull(fly);
	ck_assert_ptr_nonnull(o = kvo_new(&c, &e, NULL, 0));
	/* room for the loads that wait behind a preempted head: with 16
	 * blocks, seed 7 stalls -- the waiting loop stops at a head that
	 * does not fit while landed loads behind it hold the blocks */
	ck_assert_ptr_nonnull(s = v1_kvs(RGPU + 1, true, "vllm-v1"));
	ck_assert_int_eq(kvo_attach(o, s), KV_OK);
	while (added < RNREQ || kvs_nunfinished(s) > 0 || nfly > 0) {
		for (int k = rand() % 3; k > 0 && added < RNREQ; k--)
			run_add(s, added++, a);
		ck_assert_int_eq(kvs_step(s, &st), KV_OK);
		for (uint32_t i = 0; i < st->nload; i++)
			a->ext_total += kvs_req_ext(s, st->load[i]);
		a->loads += st->nload;
		run_take(o, s, fly, &nfly, a, kind == KVO_NATIVE ? 2 : 1);
		run_check(s, o);
		run_land(o, fly, &nfly, false);
		run_check(s, o);
		ck_assert_uint_lt(++a->steps, 20000);
	}
	run_land(o, fly, &nfly, true);
	for (uint32_t t = 0; t < c.ntiers; t++)
		a->st[t] = *kvo_stats(o, t);
	/* every block is back: nothing held, nothing loading */
	ck_assert_uint_eq(kvc_free_blocks(kvs_kv(s), 0), RGPU);
	kvs_free(s);
	kvo_free(o);
	free(fly);
}

START_TEST(run_accounting_native)
{
	struct run_acc a, b;

	run_one(KVO_NATIVE, 7, &a);
	ck_assert_uint_gt(a.loads, 0);	/* the run exercises loads */
	/* bytes moved agree with the hits: the tokens the loads carry are
	 * the tier's hit tokens and the scheduler's ext tokens */
	ck_assert_uint_eq(a.load_tokens[0], a.st[0].hit_tokens);
	ck_assert_uint_eq(a.ext_total, a.st[0].hit_tokens);
	/* each GPU block loaded is one half of an offloaded block read */
	ck_assert_uint_le(a.load_gpu[0], 2 * a.st[0].load_blocks);
	ck_assert_uint_ge(a.load_gpu[0], a.st[0].load_blocks);
	ck_assert_uint_eq(a.store_gpu[0], 2 * a.st[0].store_blocks);
	ck_assert_uint_le(a.st[0].used_blocks, a.st[0].capacity_blocks);
	run_one(KVO_NATIVE, 7, &b);
	ck_assert_mem_eq(&a, &b, sizeof(a));	/* deterministic */
}
END_TEST

START_TEST(run_accounting_lmcache)
{
	struct run_acc a;
	uint64_t hit = 0;

	run_one(KVO_LMCACHE, 11, &a);
	ck_assert_uint_gt(a.loads, 0);
	for (uint32_t t = 0; t < 2; t++) {
		ck_assert_uint_eq(a.load_tokens[t], a.st[t].hit_tokens);
		ck_assert_uint_eq(a.load_gpu[t], a.st[t].load_blocks);
		hit += a.st[t].hit_tokens;
	}
	ck_assert_uint_eq(a.ext_total, hit);
	ck_assert_uint_gt(a.st[1].hit_tokens, 0);	/* the disk served */
	/* the disk takes every store; the CPU tier also takes copies up */
	ck_assert_uint_eq(a.store_gpu[1], a.st[1].store_blocks);
	ck_assert_uint_ge(a.st[0].store_blocks, a.store_gpu[0]);
}
END_TEST

static Suite *
offload_suite(void)
{
	Suite *s = suite_create("offload");
	TCase *tm = tcase_create("manager");
	TCase *tc = tcase_create("connector");

	tcase_add_test(tm, lru_evicts_least_recent);
	tcase_add_test(tm, touch_makes_first_most_recent);
	tcase_add_test(tm, pending_is_no_hit_and_not_evicted);
	tcase_add_test(tm, loading_slot_not_evicted);
	tcase_add_test(tm, slot_ids_fresh_then_last_freed);
	tcase_add_test(tm, lookup_stops_at_first_miss);
	tcase_add_test(tm, random_walk_matches_model);
	tcase_set_timeout(tm, 60);
	suite_add_tcase(s, tm);
	tcase_add_test(tc, config_errors);
	tcase_add_test(tc, attach_needs_v1_caching_and_multiple);
	tcase_add_test(tc, run_accounting_native);
	tcase_add_test(tc, run_accounting_lmcache);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(offload_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
