/*
 * check_lora.c -- LoRA adapters in the scheduler (core/kvs_lora.c,
 * core/kvs_v1.c, the hash key in core/kv_v1.c; docs/scheduler.md
 * R100-R109): a prefix hit needs the same adapter, the refusals of
 * kvs_set_lora and max_loras, and a seeded random run of policy vllm-v1
 * with max_loras under kvs_audit() whose every step is checked to
 * schedule at most max_loras adapters, to set aside a waiting request
 * only for a reason vLLM has, and to finish every request.
 */
#include "core/kvsched.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A scheduler of policy pol on allocator mode `mode`. */
static kvs *
lt_new_policy(const char *pol, kvc_mode mode, int64_t max_loras,
	      bool caching, uint32_t gpu, int64_t B)
{
	struct kvs_config sc;
	struct kvc_config kc;
	char why[512];
	kv_err e;
	kvs *s;

	kvs_config_init(&sc);
	strcpy(sc.policy, pol);
	sc.max_loras = max_loras;
	sc.max_num_seqs = 8;
	sc.max_num_batched_tokens = B;
	kvc_config_default(&kc, mode);
	kc.block_size = 4;
	kc.gpu_blocks = gpu;
	kc.max_model_len = 64;
	kc.prefix_caching = caching;
	s = kvs_new(&sc, &kc, &e, why, sizeof(why));
	ck_assert_msg(s != NULL, "%s", why);
	return s;
}

static kvs *
lt_new(int64_t max_loras, bool caching, uint32_t gpu, int64_t B)
{
	return lt_new_policy("vllm-v1", KVC_VLLM_V1, max_loras, caching, gpu,
			     B);
}

static kvs_req
lt_add(kvs *s, uint32_t first, uint32_t n, uint32_t out, uint32_t lora)
{
	uint32_t tok[64];
	kvs_req r;

	for (uint32_t i = 0; i < n; i++)
		tok[i] = first + i;
	ck_assert_int_eq(kvs_add(s, tok, n, out, 0, &r), KV_OK);
	if (lora != 0)
		ck_assert_int_eq(kvs_set_lora(s, r, lora), KV_OK);
	ck_assert_uint_eq(kvs_req_lora(s, r), lora);
	return r;
}

static size_t
lt_cached(kvs *s, kvs_req r)
{
	size_t h = 0;

	ck_assert_int_eq(kvc_cached(kvs_kv(s), kvs_req_seq(s, r), &h), KV_OK);
	return h;
}

/* The same tokens under adapters 1, 2 and the base model: hits only
 * within an adapter. */
START_TEST(hash_separation)
{
	const struct kvs_step *st;
	kvs *s = lt_new(KVS_UNSET, true, 64, 64);
	kvs_req a, b, c, d, e;
	char why[256];

	a = lt_add(s, 0, 16, 4, 1);
	ck_assert_int_eq(kvs_schedule(s, &st), KV_OK);
	ck_assert_int_eq(kvs_complete(s, NULL, &st), KV_OK);
	b = lt_add(s, 0, 16, 2, 2);
	c = lt_add(s, 0, 16, 2, 1);
	d = lt_add(s, 0, 16, 2, 0);
	ck_assert_uint_eq(lt_cached(s, b), 0);
	ck_assert_uint_eq(lt_cached(s, c), 12);
	ck_assert_uint_eq(lt_cached(s, d), 0);
	ck_assert_int_eq(kvs_step(s, &st), KV_OK);
	/* the base model's blocks serve the base model only */
	e = lt_add(s, 0, 16, 2, 0);
	ck_assert_uint_eq(lt_cached(s, e), 12);
	(void)a;
	ck_assert_int_eq(kvs_audit(s, why, sizeof(why)), 0);
	kvs_free(s);
}
END_TEST

/* kvs_new refuses max_loras under policy pol with a message naming
 * want. */
static void
lt_refused(const char *pol, kvc_mode mode, int64_t max_loras,
	   const char *want)
{
	struct kvs_config sc;
	struct kvc_config kc;
	char why[512];
	kv_err e;

	kvs_config_init(&sc);
	strcpy(sc.policy, pol);
	sc.max_loras = max_loras;
	kvc_config_default(&kc, mode);
	kc.gpu_blocks = 64;
	kc.max_model_len = 64;
	ck_assert_ptr_null(kvs_new(&sc, &kc, &e, why, sizeof(why)));
	ck_assert_int_eq(e, KV_ECONFIG);
	ck_assert_msg(strstr(why, want) != NULL, "%s", why);
}

START_TEST(refusals)
{
	const struct kvs_step *st;
	kvs *s;
	kvs_req r;
	uint32_t tok[4] = { 1, 2, 3, 4 };

	/* once scheduled, the adapter is fixed */
	s = lt_new(2, true, 64, 64);
	r = lt_add(s, 0, 8, 3, 1);
	ck_assert_int_eq(kvs_step(s, &st), KV_OK);
	ck_assert_int_eq(kvs_set_lora(s, r, 2), KV_ESTATE);
	ck_assert_uint_eq(kvs_req_lora(s, r), 1);
	ck_assert_int_eq(kvs_set_lora(s, 99, 1), KV_EINVAL);
	kvs_free(s);
	lt_refused("vllm-v1", KVC_VLLM_V1, 0, "max_loras must be");
	/* a policy without LoRA refuses the limit and the adapter */
	lt_refused("vllm-v0", KVC_VLLM_V0, 1, "policy vllm-v0 does not");
	s = lt_new_policy("vllm-v0", KVC_VLLM_V0, KVS_UNSET, true, 64, 64);
	ck_assert_int_eq(kvs_add(s, tok, 4, 2, 0, &r), KV_OK);
	ck_assert_int_eq(kvs_set_lora(s, r, 1), KV_ENOTSUP);
	ck_assert_uint_eq(kvs_req_lora(s, r), 0);
	kvs_free(s);
}
END_TEST

static uint64_t
lt_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* The adapters of a step's schedule; 0 not counted. */
static uint32_t
lt_adapters(const kvs *s, const struct kvs_step *st, uint32_t *set)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < st->nsched; i++) {
		uint32_t l = kvs_req_lora(s, st->sched[i].req), j;

		for (j = 0; j < n && set[j] != l; j++)
			;
		if (l != 0 && j == n)
			set[n++] = l;
	}
	return n;
}

/*
 * After a step with no preemption that left budget and seats, a waiting
 * request with an adapter the step does not schedule may be left only
 * when the step schedules max_loras adapters, or an earlier waiting
 * request stopped the phase (no blocks) -- checked on the head only.
 */
static void
lt_check_skip(const kvs *s, const struct kvs_step *st, uint32_t nad,
	      const uint32_t *set, int64_t max, int64_t B)
{
	kvs_req h;
	uint32_t l, j;

	if (st->npreempt > 0 || st->batch_tokens >= B ||
	    kvs_queue_len(s, KVS_Q_WAITING) == 0 ||
	    kvs_queue_len(s, KVS_Q_RUNNING) >= 8)
		return;
	h = kvs_queue_at(s, KVS_Q_WAITING, 0);
	l = kvs_req_lora(s, h);
	for (j = 0; j < nad && set[j] != l; j++)
		;
	if (l != 0 && j == nad)
		ck_assert_msg(nad == (uint64_t)max, "step %llu: request %d "
			      "(adapter %u) waits with %u of %lld adapters",
			      (unsigned long long)st->number, h, l, nad,
			      (long long)max);
}

START_TEST(random_walk)
{
	static const int64_t maxes[] = { 1, 2, 3 };
	uint64_t rng = 0x9e3779b97f4a7c15ull + (uint64_t)_i;
	int64_t max = maxes[_i % 3], B = 48;
	uint32_t set[64], added = 0, steps = 0;
	char why[256];
	kvs *s = lt_new(max, (_i & 1) != 0, 80, B);

	while (steps < 3000) {
		const struct kvs_step *st;
		uint32_t nad;
		int rc;

		if (added < 600 && lt_rand(&rng) % 3 == 0) {
			uint32_t n = 1 + (uint32_t)(lt_rand(&rng) % 20);
			uint32_t o = 1 + (uint32_t)(lt_rand(&rng) % 12);
			uint32_t first = (uint32_t)(lt_rand(&rng) % 4) * 1000;

			lt_add(s, first, n, o, (uint32_t)(lt_rand(&rng) % 6));
			added++;
		}
		if (kvs_nunfinished(s) == 0 && added >= 600)
			break;
		ck_assert_int_eq(kvs_step(s, &st), KV_OK);
		steps++;
		nad = lt_adapters(s, st, set);
		ck_assert_msg(nad <= (uint64_t)max, "step %llu: %u adapters",
			      (unsigned long long)st->number, nad);
		lt_check_skip(s, st, nad, set, max, B);
		rc = kvs_audit(s, why, sizeof(why));
		ck_assert_msg(rc == 0, "audit %d: %s", rc, why);
	}
	while (kvs_nunfinished(s) > 0 && steps < 20000) {
		const struct kvs_step *st;

		ck_assert_int_eq(kvs_step(s, &st), KV_OK);
		ck_assert_uint_le(lt_adapters(s, st, set), (uint64_t)max);
		steps++;
	}
	ck_assert_uint_eq(kvs_nunfinished(s), 0);
	kvs_free(s);
}
END_TEST

static Suite *
lora_suite(void)
{
	Suite *su = suite_create("lora");
	TCase *tc = tcase_create("core");

	/* the random walks take under 0.1 s each idle */
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, hash_separation);
	tcase_add_test(tc, refusals);
	tcase_add_loop_test(tc, random_walk, 0, 6);
	suite_add_tcase(su, tc);
	return su;
}

int
main(void)
{
	SRunner *sr = srunner_create(lora_suite());
	int nf;

	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
