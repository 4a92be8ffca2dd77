/*
 * check_lora_run.c -- LoRA in `kvsim run` (sim/lora.c, docs/lora.md):
 * the configuration keys' refusals, an adapter's size from the model,
 * and the replica's adapter caches: which steps load an adapter, from
 * disk or from CPU memory, and what the loads cost, derived by hand.
 */
#include "sim/cost.h"
#include "sim/cost_lora.h"
#include "sim/lora.h"
#include "sim/model/catalog.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

/* 1 GB adapters, 1 GB/s both ways: a disk load 2 s, a CPU one 1 s. */
static void
lc_setup(struct sim_lora_setup *su, uint32_t gpu, uint32_t cpu)
{
	memset(su, 0, sizeof(*su));
	su->max_loras = gpu;
	su->max_cpu = cpu;
	su->bytes = 1e9;
	su->load_bps = 1e9;
	su->disk_bps = 1e9;
}

static int64_t
lc_step(struct sim_lora_cache *lc, uint32_t a, uint32_t b)
{
	uint32_t ids[2] = { a, b };

	return sim_lora_cache_step(lc, ids, b != 0 ? 2 : 1);
}

#define S 1000000000LL

START_TEST(cache_lru)
{
	struct sim_lora_setup su;
	struct sim_lora_cache lc;

	lc_setup(&su, 2, 3);
	ck_assert_int_eq(sim_lora_cache_init(&lc, &su), KV_OK);
	ck_assert_int_eq(lc_step(&lc, 1, 0), 2 * S);	/* disk, copy */
	ck_assert_int_eq(lc_step(&lc, 1, 0), 0);	/* in a slot */
	ck_assert_int_eq(lc_step(&lc, 2, 0), 2 * S);	/* slots {1, 2} */
	/* 3 takes 1's slot (least recently used); CPU {1, 2, 3} */
	ck_assert_int_eq(lc_step(&lc, 3, 0), 2 * S);
	/* 1 is in CPU memory: a copy only, into 2's slot */
	ck_assert_int_eq(lc_step(&lc, 1, 0), 1 * S);
	/* 4 and 1 in one step: 4 evicts 2 from CPU (LRU, not in the step)
	 * and 3 from the GPU (1 runs in the step, 3 is older) */
	ck_assert_int_eq(lc_step(&lc, 4, 1), 2 * S);
	ck_assert_int_eq(lc_step(&lc, 2, 0), 2 * S);	/* from disk again */
	ck_assert_uint_eq(lc.loads, 6);
	ck_assert_uint_eq(lc.disk_loads, 5);
	ck_assert_int_eq(lc.load_ns, 11 * S);
	sim_lora_cache_release(&lc);
}
END_TEST

START_TEST(config_keys)
{
	struct sim_lora_config c;
	char what[200];

	sim_lora_config_init(&c);
	ck_assert(!c.enable);
	ck_assert_int_eq(c.max_loras, 1);
	ck_assert_int_eq(c.max_lora_rank, 16);
	ck_assert_int_eq(sim_lora_set_key(&c, "engine.max_lora_rank", "320",
					  what, sizeof(what)), KV_OK);
	ck_assert_int_eq(c.max_lora_rank, 320);
	ck_assert_int_eq(sim_lora_set_key(&c, "engine.max_lora_rank", "24",
					  what, sizeof(what)), KV_ECONFIG);
	ck_assert_int_eq(sim_lora_set_key(&c, "engine.max_loras", "0", what,
					  sizeof(what)), KV_ECONFIG);
	ck_assert_int_eq(sim_lora_set_key(&c, "lora.disk_gbps", "-1", what,
					  sizeof(what)), KV_ECONFIG);
	ck_assert_int_eq(sim_lora_set_key(&c, "engine.max_num_seqs", "4",
					  what, sizeof(what)), KV_ENOTSUP);
	ck_assert_int_eq(sim_lora_set_key(&c, "engine.enable_lora", "true",
					  what, sizeof(what)), KV_OK);
	ck_assert_int_eq(sim_lora_set_key(&c, "engine.max_loras", "4", what,
					  sizeof(what)), KV_OK);
	ck_assert_int_eq(sim_lora_set_key(&c, "engine.max_cpu_loras", "2",
					  what, sizeof(what)), KV_OK);
	ck_assert_int_eq(sim_lora_check(&c, what, sizeof(what)), KV_ECONFIG);
	ck_assert_int_eq(sim_lora_set_key(&c, "engine.max_cpu_loras", "null",
					  what, sizeof(what)), KV_OK);
	ck_assert_int_eq(sim_lora_check(&c, what, sizeof(what)), KV_OK);
}
END_TEST

/* Llama-3.1-8B's shapes: 69,632 weights a rank and layer. */
START_TEST(adapter_size)
{
	struct sim_lora_config c;
	struct sim_lora_setup su;
	struct cat_model m;

	memset(&m, 0, sizeof(m));
	m.num_layers = 32;
	m.hidden_size = 4096;
	m.num_heads = 32;
	m.num_kv_heads = 8;
	m.head_dim = 128;
	m.intermediate_size = 14336;
	m.dtype_bytes = 2;
	sim_lora_config_init(&c);
	sim_lora_setup_make(&c, &m, 1, 0, &su);
	ck_assert_double_eq(su.bytes, 16.0 * 69632 * 32 * 2);
	ck_assert_double_eq(su.flops_token, 2.0 * 16 * 69632 * 32);
	ck_assert_uint_eq(su.max_cpu, 1);
	sim_lora_setup_make(&c, &m, 2, 0, &su);
	ck_assert_double_eq(su.bytes, 16.0 * 69632 * 32);
}
END_TEST

/* The GEMM term: the larger of FLOPs at achieved compute and the
 * adapters' bytes at achieved HBM bandwidth; nothing without LoRA. */
START_TEST(gemm_term)
{
	struct cost_model cm;

	memset(&cm, 0, sizeof(cm));
	cm.peak_flops = 1e15;
	cm.eff_compute.v = 0.5;
	cm.hbm_bw = 2e12;
	cm.eff_memory.v = 0.5;
	/* 1000 tokens x 1e9 FLOPs at 5e14: 2 ms; 2 x 1e8 B at 1e12: 0.2 ms */
	ck_assert_int_eq(cost_lora_ns(&cm, 1000, 2, 1e9, 1e8), 2000000);
	/* 1 token: 2 us of FLOPs, 200 us of weights */
	ck_assert_int_eq(cost_lora_ns(&cm, 1, 2, 1e9, 1e8), 200000);
	ck_assert_int_eq(cost_lora_ns(&cm, 0, 0, 1e9, 1e8), 0);
}
END_TEST

int
main(void)
{
	Suite *su = suite_create("lora_run");
	TCase *tc = tcase_create("lora");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, cache_lru);
	tcase_add_test(tc, config_keys);
	tcase_add_test(tc, adapter_size);
	tcase_add_test(tc, gemm_term);
	suite_add_tcase(su, tc);
	sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
