/*
 * check_knobs.c -- the sizing and cost of issue 20's engine knobs:
 * pipeline parallel (sim/model/sizing_pp.c: vLLM's layer split and the
 * smallest stage's pool) and CPU weight offload (sizing.c, cost_knobs.c).
 * Expected figures are derived from the catalog's Llama-3.1-8B (32
 * layers, hidden 4096, vocab 128,256, untied) by hand in the comments.
 */
#include "sim/cost.h"
#include "sim/model/catalog.h"
#include "sim/model/sizing.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB 1073741824.0

/* The catalog, read once by main before the tests (forked) run. */
static cat *C;

static const struct cat_model *
llama8b(void)
{
	const struct cat_model *m = cat_find_model(C, "meta-llama/Llama-3.1-8B");

	ck_assert(m != NULL && m->num_layers == 32 && !m->tie_word_embeddings);
	return m;
}

static const struct cat_gpu *
h100(void)
{
	const struct cat_gpu *g = cat_find_gpu(C, "h100-sxm");

	ck_assert(g != NULL);
	return g;
}

static void
size_pp(uint32_t pp, double offload, struct sz_result *r)
{
	struct sz_engine e;
	char why[512];

	sz_engine_init(&e);
	e.pipeline_parallel_size = pp;
	e.cpu_offload_gb = offload;
	ck_assert_msg(sz_compute(llama8b(), h100(), &e, r, why,
				 sizeof(why)) == KV_OK, "%s", why);
	ck_assert(r->fits);
}

static uint32_t
spec_layers(const struct sz_result *r)
{
	uint32_t n = 0;

	for (size_t i = 0; i < r->nspec; i++)
		n += r->spec[i].nlayers;
	return n;
}

/*
 * P = 3 over 32 layers: 32 // 3 = 10 each, the 2 left over to the two
 * stages before the last (get_pp_indices): 11, 11, 10.  Stage 0 holds the
 * embedding and 11 layers, stage 1 11 layers, stage 2 10 layers and the
 * LM head: stage 0 has the most weights of the two 11-layer stages and so
 * the smallest pool.  Its parameters: (params - 2 * 128,256 * 4096) * 11
 * / 32 plus one 128,256 x 4096 embedding.
 */
START_TEST(test_pp_split)
{
	const struct cat_model *m = llama8b();
	struct sz_result *r = malloc(sizeof(*r));
	uint64_t emb = 128256ull * 4096, body = m->params - 2 * emb;
	uint64_t stage = (uint64_t)((double)body * 11 / 32) + emb;

	ck_assert_ptr_nonnull(r);
	size_pp(3, 0, r);
	ck_assert_uint_eq(r->pp, 3);
	ck_assert_uint_eq(r->pp_stage, 0);
	ck_assert_uint_eq(spec_layers(r), 11);
	ck_assert_uint_eq(r->weights_bytes,
			  stage * 2 + m->max_model_len * m->rotary_dim * 2);
	size_pp(1, 0, r);
	ck_assert_uint_eq(r->pp, 1);
	ck_assert_uint_eq(spec_layers(r), 32);
	free(r);
}
END_TEST

/*
 * P = 2: each stage holds 16 layers' KV and about half the weights, so a
 * block costs half the bytes and the memory left for KV grows: more than
 * twice P = 1's blocks (the stage's 7.5 GiB of weights freed), less than
 * 2.5 times.
 */
START_TEST(test_pp_blocks)
{
	struct sz_result *r1 = malloc(sizeof(*r1)), *r2 = malloc(sizeof(*r2));
	struct sz_engine e;
	char why[256];

	ck_assert(r1 != NULL && r2 != NULL);
	size_pp(1, 0, r1);
	size_pp(2, 0, r2);
	ck_assert_uint_eq(spec_layers(r2), 16);
	ck_assert_uint_eq(r2->page_bytes, r1->page_bytes);
	ck_assert_uint_gt(r2->num_blocks, 2 * r1->num_blocks);
	ck_assert_uint_lt(r2->num_blocks, 5 * r1->num_blocks / 2);
	/* more stages than layers */
	sz_engine_init(&e);
	e.pipeline_parallel_size = 33;
	ck_assert_int_eq(sz_compute(llama8b(), h100(), &e, r2, why,
				    sizeof(why)), KV_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "32 layers"));
	free(r1);
	free(r2);
}
END_TEST

/* --cpu-offload-gb 4: 4 GiB fewer weights on the GPU, 4 GiB more for
 * KV; more than the weights: all of them offloaded. */
START_TEST(test_offload_sizing)
{
	struct sz_result *r0 = malloc(sizeof(*r0)), *r = malloc(sizeof(*r));

	ck_assert(r0 != NULL && r != NULL);
	size_pp(1, 0, r0);
	size_pp(1, 4, r);
	ck_assert_uint_eq(r0->offload_bytes, 0);
	ck_assert_uint_eq(r->offload_bytes, 4 * 1073741824ull);
	ck_assert_uint_eq(r->weights_bytes,
			  r0->weights_bytes - 4 * 1073741824ull);
	ck_assert_int_eq(r->available_bytes,
			 r0->available_bytes + 4 * 1073741824ll);
	size_pp(1, 100, r);
	ck_assert_uint_eq(r->weights_bytes, 0);
	ck_assert_uint_eq(r->offload_bytes, r0->weights_bytes);
	free(r0);
	free(r);
}
END_TEST

static int64_t
step(uint32_t pp, double offload, uint64_t q, struct cost_breakdown *bd,
     struct cost_model *cm)
{
	struct cost_config cc;
	struct cat_mixer_seq s = { q, 100 };
	char why[256];

	cost_config_init(&cc);
	cc.pp = pp;
	cc.offload_bytes = offload;
	ck_assert_msg(cost_model_init(cm, llama8b(), h100(), &cc, why,
				      sizeof(why)) == KV_OK, "%s", why);
	return cost_step_explain(cm, &(struct cost_batch){ &s, 1 }, bd);
}

/*
 * A batch of 512 tokens through 2 stages: one send of hidden_states and
 * residual, 2 x 512 x 4096 x 2 B = 8,388,608 B, at the link's rate times
 * its efficiency, plus the link latency; everything else as one GPU.
 */
START_TEST(test_pp_cost)
{
	struct cost_breakdown b1, b2;
	struct cost_model cm;
	int64_t t1 = step(1, 0, 512, &b1, &cm), t2 = step(2, 0, 512, &b2, &cm);
	double send = cm.allreduce_ns.v + 8388608.0 /
		      (cm.link_bw * cm.eff_interconnect.v / 1e9);

	ck_assert_double_eq(b1.pp_send_ns, 0);
	ck_assert_double_eq_tol(b2.pp_send_ns, send, 1e-6);
	ck_assert_double_eq_tol(b2.gpu_ns, b1.gpu_ns + send, 1e-6);
	ck_assert_int_eq(t2 - t1, (int64_t)llround(b2.total_ns - b1.total_ns));
	ck_assert_int_gt(t2, t1);
	/* three stages: two sends */
	step(3, 0, 512, &b2, &cm);
	ck_assert_double_eq_tol(b2.pp_send_ns, 2 * send, 1e-6);
}
END_TEST

/* 4 GiB of offloaded weights cross the host link every step. */
START_TEST(test_offload_cost)
{
	struct cost_breakdown b0, b;
	struct cost_model cm;

	step(1, 0, 1, &b0, &cm);
	step(1, 4 * GIB, 1, &b, &cm);
	ck_assert(cm.host_bw > 0);
	ck_assert_double_eq_tol(b.offload_ns, 4 * GIB / cm.host_bw * 1e9,
				1e-6);
	ck_assert_double_eq_tol(b.gpu_ns, b0.gpu_ns + b.offload_ns, 1e-6);
	ck_assert_double_eq(b0.offload_ns, 0);
}
END_TEST

static Suite *
knobs_suite(void)
{
	Suite *s = suite_create("knobs");
	TCase *tc = tcase_create("knobs");

	tcase_set_timeout(tc, 30);

	tcase_add_test(tc, test_pp_split);
	tcase_add_test(tc, test_pp_blocks);
	tcase_add_test(tc, test_offload_sizing);
	tcase_add_test(tc, test_pp_cost);
	tcase_add_test(tc, test_offload_cost);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	char dir[4096];
	struct cat_err e;
	SRunner *sr;
	int failed;

	snprintf(dir, sizeof(dir), "%s/data", top != NULL && *top ? top : ".");
	if (cat_load(&C, dir, &e) != KV_OK) {
		fprintf(stderr, "check_knobs: %s\n", e.msg);
		return EXIT_FAILURE;
	}
	sr = srunner_create(knobs_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	cat_free(C);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
