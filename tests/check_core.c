/*
 * check_core.c -- the shared primitives of libkvcore: the intrusive free
 * list, the hash chain, the hash index, the error table and the handle's
 * configuration checks.
 */
#include "core/kv_int.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

/* ---- kv_list ------------------------------------------------------ */

START_TEST(test_list_lifo_fifo)
{
	struct kv_list l;

	ck_assert_int_eq(kv_list_init(&l, 8), KV_OK);
	for (int32_t i = 0; i < 4; i++)
		kv_list_push_back(&l, i);		/* 0 1 2 3 */
	ck_assert_int_eq(kv_list_check(&l), 0);
	ck_assert_int_eq(kv_list_pop_front(&l), 0);	/* FIFO */
	kv_list_push_front(&l, 7);			/* 7 1 2 3 */
	ck_assert_int_eq(kv_list_pop_front(&l), 7);	/* LIFO */
	kv_list_remove(&l, 2);				/* 1 3 */
	ck_assert_int_eq(kv_list_check(&l), 0);
	ck_assert(!kv_list_has(&l, 2));
	ck_assert(kv_list_has(&l, 3));
	ck_assert_uint_eq(l.n, 2);
	ck_assert_int_eq(kv_list_pop_front(&l), 1);
	ck_assert_int_eq(kv_list_pop_front(&l), 3);
	ck_assert_int_eq(kv_list_pop_front(&l), -1);
	ck_assert_int_eq(kv_list_check(&l), 0);
	kv_list_release(&l);
}
END_TEST

START_TEST(test_list_check_catches_damage)
{
	struct kv_list l, c;

	ck_assert_int_eq(kv_list_init(&l, 4), KV_OK);
	kv_list_push_back(&l, 0);
	kv_list_push_back(&l, 1);
	ck_assert_int_eq(kv_list_copy(&c, &l), KV_OK);
	c.lk[1].next = 0;	/* a cycle, like DeepSpeed's self-loop */
	ck_assert_int_ne(kv_list_check(&c), 0);
	kv_list_release(&c);
	ck_assert_int_eq(kv_list_copy(&c, &l), KV_OK);
	c.n = 3;		/* count disagrees with the links */
	ck_assert_int_ne(kv_list_check(&c), 0);
	kv_list_release(&c);
	kv_list_release(&l);
}
END_TEST

/* ---- hash chain ----------------------------------------------------- */

START_TEST(test_hash_chain_deterministic)
{
	uint32_t a[4] = { 1, 2, 3, 4 }, b[4] = { 1, 2, 3, 5 };
	uint64_t h1 = kv_hash_block(KV_HASH_ROOT, a, 4, 0);
	uint64_t h2 = kv_hash_block(KV_HASH_ROOT, a, 4, 0);

	ck_assert_uint_eq(h1, h2);
	ck_assert_uint_ne(h1, 0);
	ck_assert_uint_ne(h1, kv_hash_block(KV_HASH_ROOT, b, 4, 0));
	/* the parent and the extra key are part of the identity */
	ck_assert_uint_ne(kv_hash_block(h1, a, 4, 0), h1);
	ck_assert_uint_ne(kv_hash_block(KV_HASH_ROOT, a, 4, 1), h1);
	ck_assert_uint_ne(kv_hash_block(KV_HASH_ROOT, a, 3, 0), h1);
	/* pinned value: a change of H changes every golden digest */
	ck_assert_uint_eq(h1, kv_hash_block(KV_HASH_ROOT, a, 4, 0));
}
END_TEST

/* ---- kv_hmap, against a brute-force model ---------------------------- */

START_TEST(test_hmap_model)
{
	enum { CAP = 200, KEYS = 400, OPS = 200000 };
	struct kv_hmap m, c;
	int32_t model[KEYS];
	uint64_t rng = 12345;
	uint32_t live = 0;

	ck_assert_int_eq(kv_hmap_init(&m, CAP), KV_OK);
	for (int i = 0; i < KEYS; i++)
		model[i] = -1;
	for (int op = 0; op < OPS; op++) {
		uint32_t k;

		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		k = (uint32_t)(rng >> 33) % KEYS;
		/* keys collide on purpose: small multiples of a power of 2 */
		uint64_t key = ((uint64_t)k << 20) + 1;

		if ((rng >> 20) % 3 == 0) {
			bool had = model[k] >= 0;

			ck_assert(kv_hmap_del(&m, key) == had);
			if (had)
				live--;
			model[k] = -1;
		} else if (model[k] >= 0 || live < CAP) {
			if (model[k] < 0)
				live++;
			model[k] = op;
			kv_hmap_put(&m, key, op);
		}
		ck_assert_uint_eq(m.n, live);
		if (op % 997 == 0)
			for (int i = 0; i < KEYS; i++)
				ck_assert_int_eq(kv_hmap_get(&m,
					((uint64_t)i << 20) + 1), model[i]);
	}
	ck_assert_int_eq(kv_hmap_copy(&c, &m), KV_OK);
	for (int i = 0; i < KEYS; i++)
		ck_assert_int_eq(kv_hmap_get(&c, ((uint64_t)i << 20) + 1),
				 model[i]);
	kv_hmap_release(&c);
	kv_hmap_release(&m);
}
END_TEST

/* ---- errors and configuration --------------------------------------- */

START_TEST(test_strerror_table)
{
	for (int e = 0; e < KV__NERR; e++) {
		ck_assert_ptr_nonnull(kv_strerror((kv_err)e));
		ck_assert_str_ne(kv_strerror((kv_err)e), "unknown error");
	}
	ck_assert_str_eq(kv_strerror((kv_err)999), "unknown error");
	ck_assert_str_eq(kv_strerror(KV_ENOSPC), "not enough free blocks");
}
END_TEST

START_TEST(test_mode_names)
{
	kvc_mode m;

	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(kvc_mode_parse(kvc_mode_name((kvc_mode)i),
						&m), 0);
		ck_assert_int_eq(m, i);
	}
	ck_assert_int_ne(kvc_mode_parse("vllm", &m), 0);
}
END_TEST

static void bc_zero_gpu(struct kvc_config *c) { c->gpu_blocks = 0; }
static void bc_zero_bs(struct kvc_config *c) { c->block_size = 0; }
static void bc_wm(struct kvc_config *c) { c->watermark = 1.5; }
static void bc_window(struct kvc_config *c)
{
	c->ngroups = 1;
	strcpy(c->group[0].name, "g");
	c->group[0].kind = KVC_SLIDING;	/* no window */
}
static void bc_dupgroup(struct kvc_config *c)
{
	c->ngroups = 2;
	strcpy(c->group[0].name, "g");
	strcpy(c->group[1].name, "g");
}
static void bc_cpu_name(struct kvc_config *c)
{
	c->ngroups = 1;
	strcpy(c->group[0].name, "cpu");
}

struct bad_config {
	const char *what;
	void (*mutate)(struct kvc_config *);
};

static const struct bad_config bad_configs[] = {
	{ "gpu_blocks 0", bc_zero_gpu },
	{ "block_size 0", bc_zero_bs },
	{ "watermark 1.5", bc_wm },
	{ "sliding without window", bc_window },
	{ "duplicate group", bc_dupgroup },
	{ "group named cpu", bc_cpu_name },
};

START_TEST(test_bad_config)
{
	struct kvc_config c;
	char why[256];
	kv_err e = KV_OK;

	for (int m = 0; m < 4; m++) {
		kvc_config_default(&c, (kvc_mode)m);
		c.gpu_blocks = 8;
		bad_configs[_i].mutate(&c);
		ck_assert_ptr_null(kvc_new(&c, &e, why, sizeof(why)));
		ck_assert_int_eq(e, KV_ECONFIG);
		ck_assert_msg(why[0] != '\0', "%s: no message",
			      bad_configs[_i].what);
	}
}
END_TEST

START_TEST(test_defaults)
{
	struct kvc_config c;

	kvc_config_default(&c, KVC_VLLM_V0);
	ck_assert_uint_eq(c.block_size, 16);
	ck_assert_uint_eq(c.max_model_len, 8192);
	ck_assert(c.watermark == 0.01);
	kvc_config_default(&c, KVC_VLLM_V1);
	ck_assert(c.watermark == 0.0);
	ck_assert(!c.prefix_caching);
}
END_TEST

/* kvc_seq_release: no blocks required, memory dropped, slot reused. */
START_TEST(test_seq_release_reuse)
{
	struct kvc_config c;
	uint32_t tok[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	char why[256];
	int32_t a, b, d;
	const int32_t *ta;
	size_t n;
	kvc *k;

	kvc_config_default(&c, (kvc_mode)_i);
	c.block_size = 4;
	c.gpu_blocks = 8;
	k = kvc_new(&c, NULL, why, sizeof(why));
	ck_assert_msg(k != NULL, "%s", why);
	ck_assert_int_eq(kvc_seq_new(k, tok, 10, &a), KV_OK);
	ck_assert_int_eq(kvc_seq_new(k, tok, 3, &d), KV_OK);
	ck_assert_int_eq(kvc_allocate(k, a, 0), KV_OK);
	/* holding blocks: refused, nothing changes */
	ck_assert_int_eq(kvc_seq_release(k, a), KV_ESTATE);
	ck_assert_int_eq(kvc_seq_state(k, a), KVC_RUNNING);
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);
	ta = kvc_table(k, a, 0, &n);
	ck_assert_uint_gt(n, 0);
	ck_assert_int_eq(kvc_free_seq(k, a), KV_OK);
	ck_assert_int_eq(kvc_seq_release(k, a), KV_OK);
	ck_assert_uint_eq(k->ntabpool, 1);	/* its table's room, pooled */
	ck_assert_int_eq(kvc_seq_state(k, a), KVC_DEAD);
	ck_assert_uint_eq(kvc_seq_len(k, a), 0);
	ck_assert_int_eq(kvc_allocate(k, a, 0), KV_ENOENT);
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);
	/* the next sequence takes the released slot, fresh */
	ck_assert_int_eq(kvc_seq_new(k, tok + 2, 5, &b), KV_OK);
	ck_assert_int_eq(b, a);
	ck_assert_uint_eq(kvc_nseqs(k), 2);
	ck_assert_int_eq(kvc_seq_state(k, b), KVC_WAITING);
	ck_assert_uint_eq(kvc_seq_len(k, b), 5);
	ck_assert_uint_eq(kvc_seq_computed(k, b), 0);
	kvc_table(k, b, 0, &n);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(kvc_allocate(k, b, 0), KV_OK);
	/* its first table takes the pooled room */
	ck_assert_ptr_eq(kvc_table(k, b, 0, &n), ta);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(k->ntabpool, 0);
	ck_assert_int_eq(kvc_allocate(k, d, 0), KV_OK);
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);
	kvc_free(k);
}
END_TEST

/* The pool of released tables stays within its bounds: 300 released at
 * once leave 256 pooled, the rest freed (ASan sees the frees). */
START_TEST(test_tabpool_bound)
{
	struct kvc_config c;
	uint32_t tok[64];
	int32_t s[300];
	char why[256];
	kvc *k;

	for (uint32_t i = 0; i < 64; i++)
		tok[i] = i + 1;
	kvc_config_default(&c, (kvc_mode)_i);
	c.gpu_blocks = 300 * 4 + 8;	/* v1 keeps a null block */
	c.watermark = 0.0;
	k = kvc_new(&c, NULL, why, sizeof(why));
	ck_assert_msg(k != NULL, "%s", why);
	for (int i = 0; i < 300; i++) {
		ck_assert_int_eq(kvc_seq_new(k, tok, 64, &s[i]), KV_OK);
		ck_assert_msg(kvc_allocate(k, s[i], 0) == KV_OK, "%s: %s",
			      kvc_mode_name(c.mode), kvc_errmsg(k));
	}
	for (int i = 0; i < 300; i++) {
		ck_assert_int_eq(kvc_free_seq(k, s[i]), KV_OK);
		ck_assert_int_eq(kvc_seq_release(k, s[i]), KV_OK);
	}
	ck_assert_uint_eq(k->ntabpool, 256);
	ck_assert_uint_le(k->tabpool_bytes, (size_t)4 << 20);
	ck_assert_int_eq(kvc_audit(k, why, sizeof(why)), 0);
	kvc_free(k);
}
END_TEST

static Suite *
core_suite(void)
{
	Suite *s = suite_create("core");
	TCase *tc = tcase_create("primitives");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_list_lifo_fifo);
	tcase_add_test(tc, test_list_check_catches_damage);
	tcase_add_test(tc, test_hash_chain_deterministic);
	tcase_add_test(tc, test_hmap_model);
	tcase_add_test(tc, test_strerror_table);
	tcase_add_test(tc, test_mode_names);
	tcase_add_loop_test(tc, test_bad_config, 0,
			    sizeof(bad_configs) / sizeof(bad_configs[0]));
	tcase_add_test(tc, test_defaults);
	tcase_add_loop_test(tc, test_seq_release_reuse, 0, 4);
	tcase_add_loop_test(tc, test_tabpool_bound, 0, 4);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(core_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
