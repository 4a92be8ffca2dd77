/*
 * check_spec_run.c -- speculative decoding in a run (sim/spec.h,
 * sim/runcfg_spec.h, sim/cost_spec.h): the acceptance draws, the
 * configuration keys and their refusals, the drafter's share of the GPU
 * and its time.
 */
#include "sim/cost_spec.h"
#include "sim/runcfg.h"
#include "sim/runcfg_spec.h"
#include "sim/spec.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct sim_spec
mk(enum sim_spec_method m, uint32_t k, double acc, double match)
{
	struct sim_spec_config c;
	struct sim_spec sp;

	sim_spec_config_init(&c);
	c.method = m;
	c.k = k;
	c.nacc = k;
	for (uint32_t i = 0; i < k; i++)
		c.acc[i] = acc;
	c.ngram_match = match;
	sim_spec_init(&sp, &c, 42);
	return sp;
}

/* Acceptance 0: no draft kept; 1: every draft kept. */
START_TEST(test_accept_bounds)
{
	struct sim_spec z = mk(SIM_SPEC_EAGLE, 3, 0.0, -1);
	struct sim_spec o = mk(SIM_SPEC_EAGLE, 3, 1.0, -1);

	for (uint64_t id = 0; id < 1000; id++) {
		ck_assert_uint_eq(sim_spec_accept(&z, id, 7, 3), 0);
		ck_assert_uint_eq(sim_spec_accept(&o, id, 7, 3), 3);
		ck_assert_uint_eq(sim_spec_accept(&o, id, 7, 2), 2);
		ck_assert_uint_eq(sim_spec_propose(&o, id, 7), 3);
	}
}
END_TEST

/* A constant rate a: the chain's mean length is a + a^2 + a^3 (k 3), the
 * first position's rate a; the draws repeat for the same key. */
START_TEST(test_accept_rate)
{
	struct sim_spec sp = mk(SIM_SPEC_EAGLE, 3, 0.7, -1);
	uint64_t n = 40000, first = 0, sum = 0;

	for (uint64_t id = 0; id < n; id++) {
		uint32_t a = sim_spec_accept(&sp, id, (uint32_t)(id % 97), 3);

		ck_assert_uint_eq(a, sim_spec_accept(&sp, id,
						     (uint32_t)(id % 97), 3));
		first += a > 0;
		sum += a;
	}
	ck_assert_double_eq_tol((double)first / (double)n, 0.7, 0.01);
	ck_assert_double_eq_tol((double)sum / (double)n,
				0.7 + 0.49 + 0.343, 0.02);
}
END_TEST

/* ngram: drafts only when a match is drawn. */
START_TEST(test_ngram_match)
{
	struct sim_spec never = mk(SIM_SPEC_NGRAM, 4, 0.5, 0.0);
	struct sim_spec half = mk(SIM_SPEC_NGRAM, 4, 0.5, 0.5);
	uint64_t got = 0;

	for (uint64_t id = 0; id < 10000; id++) {
		uint32_t n = sim_spec_propose(&half, id, 3);

		ck_assert_uint_eq(sim_spec_propose(&never, id, 3), 0);
		ck_assert(n == 0 || n == 4);
		got += n == 4;
	}
	ck_assert_double_eq_tol((double)got / 10000.0, 0.5, 0.02);
}
END_TEST

static kv_err
load(struct sim_config *c, const char *const *sets, size_t n, char *err,
     size_t len)
{
	return sim_config_from_args(c, NULL, sets, n, err, len);
}

START_TEST(test_config_ok)
{
	const char *sets[] = {
		"engine.speculative_config.method=eagle",
		"engine.speculative_config.num_speculative_tokens=3",
		"engine.speculative_config.model=yuhuili/EAGLE-LLaMA3.1-"
		"Instruct-8B",
		"engine.speculative_config.acceptance=0.8",
	};
	const char *lst[] = {
		"engine.speculative_config.method=ngram",
		"engine.speculative_config.num_speculative_tokens=2",
		"engine.speculative_config.acceptance=[0.9, 0.5]",
		"engine.speculative_config.prompt_lookup_max=4",
	};
	struct sim_config c;
	char err[1024];

	ck_assert_int_eq(load(&c, sets, 4, err, sizeof(err)), KV_OK);
	ck_assert_int_eq(c.spec.method, SIM_SPEC_EAGLE);
	ck_assert_uint_eq(c.spec.nacc, 3);
	ck_assert_double_eq(c.spec.acc[2], 0.8);
	sim_config_release(&c);
	ck_assert_int_eq(load(&c, lst, 4, err, sizeof(err)), KV_OK);
	ck_assert_double_eq(c.spec.acc[1], 0.5);
	/* vLLM: prompt_lookup_min takes prompt_lookup_max's value */
	ck_assert_uint_eq(c.spec.lookup_min, 4);
	ck_assert_double_eq(c.spec.ngram_match, SIM_SPEC_NGRAM_MATCH_DEFAULT);
	sim_config_release(&c);
}
END_TEST

/* Each bad value is refused, named by its --set. */
START_TEST(test_config_bad)
{
	static const struct { const char *set[4]; const char *want; } t[] = {
		{ { "engine.speculative_config.num_speculative_tokens=0" },
		  "num_speculative_tokens=0: engine.speculative_config."
		  "num_speculative_tokens: expected an integer from 1" },
		{ { "engine.speculative_config.acceptance=1.5" },
		  "acceptance=1.5: engine.speculative_config.acceptance: "
		  "expected a number in [0, 1]" },
		{ { "engine.speculative_config.acceptance=0.5,-0.1" },
		  "expected numbers in [0, 1]" },
		{ { "engine.speculative_config.method=medusa" },
		  "method=medusa: engine.speculative_config.method: expected "
		  "ngram, eagle" },
		{ { "engine.speculative_config.method=eagle",
		    "engine.speculative_config.num_speculative_tokens=3" },
		  "method=eagle: engine.speculative_config.model: method "
		  "eagle needs" },
		{ { "engine.speculative_config.method=ngram",
		    "engine.speculative_config.num_speculative_tokens=3",
		    "engine.speculative_config.acceptance=0.5,0.5" },
		  "acceptance=0.5,0.5: engine.speculative_config.acceptance: "
		  "2 values, expected one per speculative token" },
		{ { "engine.speculative_config.method=ngram",
		    "engine.speculative_config.num_speculative_tokens=3",
		    "engine.speculative_config.prompt_lookup_max=3",
		    "engine.speculative_config.prompt_lookup_min=6" },
		  "prompt_lookup_min=6: engine.speculative_config."
		  "prompt_lookup_min 6 must be <= prompt_lookup_max 3" },
		{ { "engine.speculative_config.num_speculative_tokens=3" },
		  "method: required" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct sim_config c;
		char err[1024];
		size_t n = 0;

		while (n < 4 && t[i].set[n] != NULL)
			n++;
		ck_assert_msg(load(&c, t[i].set, n, err, sizeof(err)) ==
			      KV_EINVAL, "case %zu accepted", i);
		ck_assert_msg(strstr(err, t[i].want) != NULL, "case %zu: %s",
			      i, err);
		ck_assert_msg(strncmp(err, "--set ", 6) == 0, "%s", err);
		sim_config_release(&c);
	}
}
END_TEST

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* A list in the file: FILE:LINE:COL of the bad item; a measured CSV of
 * vLLM's per-position rates, relative to the file, made conditional. */
START_TEST(test_config_file)
{
	char dir[] = "/tmp/check_spec_runXXXXXX", cfg[128], csv[128];
	char err[1024];
	struct sim_config c;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(cfg, sizeof(cfg), "%s/run.yaml", dir);
	snprintf(csv, sizeof(csv), "%s/acc.csv", dir);
	write_file(cfg, "engine:\n  speculative_config:\n    method: ngram\n"
		   "    num_speculative_tokens: 3\n"
		   "    acceptance: [0.5, 2, 0.5]\n");
	ck_assert_int_eq(sim_config_from_args(&c, cfg, NULL, 0, err,
					      sizeof(err)), KV_EINVAL);
	ck_assert_msg(strstr(err, "run.yaml:5:23: engine.speculative_config."
			     "acceptance: expected a number in [0, 1], got "
			     "'2'") != NULL, "%s", err);
	sim_config_release(&c);
	write_file(csv, "position,acceptance\n1,0.8\n2,0.6\n3,0.3\n4,0.1\n");
	write_file(cfg, "engine:\n  speculative_config:\n    method: ngram\n"
		   "    num_speculative_tokens: 3\n"
		   "    acceptance: acc.csv\n");
	ck_assert_msg(sim_config_from_args(&c, cfg, NULL, 0, err,
					   sizeof(err)) == KV_OK, "%s", err);
	ck_assert_uint_eq(c.spec.nacc, 3);
	ck_assert_double_eq_tol(c.spec.acc[0], 0.8, 1e-12);
	ck_assert_double_eq_tol(c.spec.acc[1], 0.75, 1e-12);
	ck_assert_double_eq_tol(c.spec.acc[2], 0.5, 1e-12);
	sim_config_release(&c);
	/* rates that rise are not vLLM's per-position rates */
	write_file(csv, "position,acceptance\n1,0.5\n2,0.6\n3,0.3\n");
	ck_assert_int_eq(sim_config_from_args(&c, cfg, NULL, 0, err,
					      sizeof(err)), KV_EINVAL);
	ck_assert_msg(strstr(err, "acc.csv: position 2's rate") != NULL, "%s",
		      err);
	sim_config_release(&c);
	unlink(csv);
	unlink(cfg);
	rmdir(dir);
}
END_TEST

/* The resolved text reads back to the same configuration. */
START_TEST(test_config_write)
{
	const char *sets[] = {
		"engine.speculative_config.method=draft_model",
		"engine.speculative_config.num_speculative_tokens=2",
		"engine.speculative_config.model=meta-llama/Llama-3.1-8B",
		"engine.speculative_config.acceptance=0.9,0.3",
	};
	char path[] = "/tmp/check_spec_runXXXXXX", err[1024];
	struct sim_config c, d;
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");

	ck_assert_int_eq(load(&c, sets, 4, err, sizeof(err)), KV_OK);
	sim_config_write(&c, NULL, f);
	fclose(f);
	ck_assert_int_eq(sim_config_from_args(&d, path, NULL, 0, err,
					      sizeof(err)), KV_OK);
	ck_assert_int_eq(d.spec.method, SIM_SPEC_DRAFT);
	ck_assert_uint_eq(d.spec.k, 2);
	ck_assert_str_eq(d.spec.model, "meta-llama/Llama-3.1-8B");
	ck_assert_double_eq(d.spec.acc[1], 0.3);
	sim_config_release(&c);
	sim_config_release(&d);
	unlink(path);
}
END_TEST

/* EAGLE's head: one KV layer of the target's shape joins its group, so
 * the same memory holds fewer blocks. */
START_TEST(test_sizing)
{
	struct sim_spec_config sc;
	struct cat_err ce;
	struct sz_engine e;
	struct sz_result a, b;
	const struct cat_model *m, *d;
	const struct cat_gpu *g;
	uint64_t w, w3;
	uint32_t layers;
	char why[512];
	cat *ct;

	ck_assert_int_eq(cat_load(&ct, NULL, &ce), KV_OK);
	m = cat_find_model(ct, "meta-llama/Llama-3.1-8B");
	d = cat_find_model(ct, "meta-llama/Llama-3.1-70B");
	g = cat_find_gpu(ct, "h100-sxm");
	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(g);
	ck_assert_ptr_nonnull(d);
	sim_spec_config_init(&sc);
	sc.method = SIM_SPEC_EAGLE;
	sc.k = 3;
	sim_spec_sizing(&sc, m, NULL, 1, 2, &w, &layers);
	ck_assert_uint_eq(layers, 1);
	/* one decoder layer (218,112,000 params) + fc 2*4096^2, bf16 */
	ck_assert_uint_gt(w, 2 * (218112000ull + 2 * 4096ull * 4096));
	ck_assert_uint_lt(w, 2 * (218112000ull + 2 * 4096ull * 4096) * 11 /
			  10);
	sc.method = SIM_SPEC_EAGLE3;
	sim_spec_sizing(&sc, m, NULL, 1, 2, &w3, &layers);
	ck_assert_uint_gt(w3, w);
	sz_engine_init(&e);
	ck_assert_int_eq(sz_compute(m, g, &e, &a, why, sizeof(why)), KV_OK);
	e.spec_kv_layers = 1;
	e.spec_weights_bytes = w;
	ck_assert_int_eq(sz_compute(m, g, &e, &b, why, sizeof(why)), KV_OK);
	ck_assert_uint_eq(b.weights_bytes, a.weights_bytes + w);
	ck_assert_uint_lt(b.num_blocks, a.num_blocks * 32 / 33 + 1);
	/* draft_model: Llama-3.1-8B for Llama-3.1-70B, both of 8 KV heads
	 * of 128 a layer: its 32 layers, 32 layers of the target's shape */
	sc.method = SIM_SPEC_DRAFT;
	sim_spec_sizing(&sc, d, m, 4, 2, &w, &layers);
	ck_assert_uint_eq(layers, 32);
	/* 8.03e9 params in bf16 over 4 ranks */
	ck_assert_uint_gt(w, 3900000000ull);
	ck_assert_uint_lt(w, 4200000000ull);
	cat_free(ct);
}
END_TEST

/* The drafter's time: k forwards, more for a larger k; none off. */
START_TEST(test_cost)
{
	struct cost_model cm;
	struct cost_spec cs;
	struct cat_mixer_seq seq[4] = { { 4, 1000 }, { 4, 2000 },
					{ 4, 500 }, { 4, 10 } };
	int64_t t3, t1;

	memset(&cm, 0, sizeof(cm));
	cm.peak_flops = 989e12;
	cm.hbm_bw = 3.35e12;
	cm.eff_compute.v = 0.7;
	cm.eff_memory.v = 0.8;
	memset(&cs, 0, sizeof(cs));
	ck_assert_int_eq(cost_spec_draft_ns(&cs, seq, 4), 0);
	cs.kind = COST_SPEC_HEAD;
	cs.target = &cm;
	cs.k = 3;
	cs.head_bytes = 1.5e9;
	cs.head_flops_token = 1.5e9;
	cs.head_kv_token = 4096;
	t3 = cost_spec_draft_ns(&cs, seq, 4);
	cs.k = 1;
	t1 = cost_spec_draft_ns(&cs, seq, 4);
	/* 1.5 GB at 2.68 TB/s: 560 us a forward */
	ck_assert_int_gt(t1, 550000);
	ck_assert_int_lt(t1, 570000);
	ck_assert_int_gt(t3, 3 * t1 - 1000);
	cs.kind = COST_SPEC_NGRAM;
	ck_assert_int_eq(cost_spec_draft_ns(&cs, seq, 4),
			 (int64_t)(4 * COST_SPEC_NGRAM_NS));
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("spec_run");
	TCase *tc = tcase_create("core");

	/* all nine take under 2 s */
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_accept_bounds);
	tcase_add_test(tc, test_accept_rate);
	tcase_add_test(tc, test_ngram_match);
	tcase_add_test(tc, test_config_ok);
	tcase_add_test(tc, test_config_bad);
	tcase_add_test(tc, test_config_file);
	tcase_add_test(tc, test_config_write);
	tcase_add_test(tc, test_sizing);
	tcase_add_test(tc, test_cost);
	suite_add_tcase(s, tc);
	return s;
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
