/*
 * check_pd.c -- prefill/decode disaggregation (sim/pd.h, sim/pdcfg.h,
 * docs/pd.md): a pool's configuration is the top-level one with its own
 * keys; the section written to config.yaml reads back to the same text;
 * and a run hands its observer one transfer per request, from a prefill
 * replica to a decode replica, with a block pair for every block past
 * the decode side's hit (rules P4, P5).
 */
#include "config.h"

#include "sim/pdcfg.h"
#include "sim/run.h"
#include "sim/runcfg.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const pd_sets[] = {
	"disaggregation.prefill.replicas=2",
	"disaggregation.decode.replicas=3",
	"disaggregation.decode.gpu=h200",
	"disaggregation.decode.tensor_parallel_size=2",
	"disaggregation.decode.router=least-outstanding",
	"disaggregation.decode.engine.max_num_seqs=64",
	"disaggregation.link=nvlink-4",
	"engine.max_num_seqs=128",
};

START_TEST(test_pool_config)
{
	struct sim_config c, p;
	char err[2048];

	ck_assert_int_eq(sim_config_from_args(&c, NULL, pd_sets, 8, err,
					      sizeof(err)), KV_OK);
	ck_assert(c.pd.on);
	ck_assert_int_eq(sim_pd_pool_config(&c, SIM_PD_PREFILL, &p, err,
					    sizeof(err)), KV_OK);
	ck_assert_uint_eq(p.replicas, 2);
	ck_assert_str_eq(p.gpu, "h100-sxm");
	ck_assert_uint_eq(p.eng.max_num_seqs, 128);
	ck_assert_int_eq(p.router, SIM_ROUTE_RR);
	ck_assert_int_eq(sim_pd_pool_config(&c, SIM_PD_DECODE, &p, err,
					    sizeof(err)), KV_OK);
	ck_assert_uint_eq(p.replicas, 3);
	ck_assert_str_eq(p.gpu, "h200");
	ck_assert_uint_eq(p.eng.tensor_parallel_size, 2);
	ck_assert_uint_eq(p.eng.max_num_seqs, 64);
	ck_assert_int_eq(p.router, SIM_ROUTE_LEAST);
	/* the top level keeps its own */
	ck_assert_uint_eq(c.eng.max_num_seqs, 128);
	ck_assert_str_eq(c.gpu, "h100-sxm");
	sim_config_release(&c);
}
END_TEST

/* sim_config_write's text of c */
static char *
written(const struct sim_config *c)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	ck_assert_ptr_nonnull(f);
	sim_config_write(c, NULL, f);
	ck_assert_int_eq(fclose(f), 0);
	return buf;
}

START_TEST(test_roundtrip)
{
	struct sim_config c, d;
	char err[2048], path[] = "/tmp/check_pd.XXXXXX";
	char *a, *b, *sa, *sb;
	int fd = mkstemp(path);
	FILE *f;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(sim_config_from_args(&c, NULL, pd_sets, 8, err,
					      sizeof(err)), KV_OK);
	a = written(&c);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	fputs(a, f);
	ck_assert_int_eq(fclose(f), 0);
	sim_config_init(&d);
	ck_assert_msg(sim_config_load(&d, path, err, sizeof(err)) == KV_OK,
		      "%s", err);
	b = written(&d);
	/* past the first line, which names the source */
	sa = strchr(a, '\n');
	sb = strchr(b, '\n');
	ck_assert_str_eq(sa, sb);
	ck_assert_ptr_nonnull(strstr(a, "disaggregation:\n"));
	ck_assert_ptr_nonnull(strstr(a, "      max_num_seqs: \"64\"\n"));
	unlink(path);
	free(a);
	free(b);
	sim_config_release(&c);
	sim_config_release(&d);
}
END_TEST

START_TEST(test_colocated_writes_nothing)
{
	struct sim_config c;
	char err[256], *a;

	ck_assert_int_eq(sim_config_from_args(&c, NULL, NULL, 0, err,
					      sizeof(err)), KV_OK);
	a = written(&c);
	ck_assert_ptr_null(strstr(a, "disaggregation"));
	free(a);
	sim_config_release(&c);
}
END_TEST

struct seen {
	uint32_t calls, pairs, bad;
	uint32_t np;
};

static int
on_transfer(void *ctx, uint32_t src, kvs *src_s, kvs_req src_req,
	    uint32_t dst, kvs *dst_s, kvs_req dst_req,
	    const struct kvc_pair *pairs, uint32_t npairs, int64_t now,
	    char *why, size_t whylen)
{
	struct seen *s = ctx;
	/* 300-token prompts, nothing shared: blocks 0..18 hold tokens
	 * 0..298, the ones the decode side loads (P4) */
	uint32_t want = (300 - 1 + 15) / 16;

	(void)src_req;
	(void)dst_req;
	(void)now;
	(void)why;
	(void)whylen;
	s->calls++;
	s->pairs += npairs;
	if (src >= s->np || dst < s->np || src_s == dst_s || npairs != want)
		s->bad++;
	for (uint32_t i = 0; i < npairs; i++)
		if (pairs[i].src < 0 || pairs[i].dst < 0)
			s->bad++;
	return 0;
}

START_TEST(test_transfer_observer)
{
	static const char *const sets[] = {
		"disaggregation.prefill.replicas=1",
		"disaggregation.decode.replicas=2",
		"workload.generator.requests=20",
		"workload.generator.arrival.process=constant",
		"workload.generator.arrival.rate=20",
		"workload.generator.prompt.dist=fixed",
		"workload.generator.prompt.value=300",
		"workload.generator.output.dist=fixed",
		"workload.generator.output.value=8",
	};
	struct seen s = { .np = 1 };
	struct sim_observer obs = { .ctx = &s, .kv_transfer = on_transfer };
	struct sim_run_opts o = { .prog = "check_pd", .quiet = true,
				  .obs = &obs };
	struct sim_config c;
	char err[SIM_RUN_ERRLEN];
	sim_run *R;

	ck_assert_msg(sim_config_from_args(&c, NULL, sets, 9, err,
					   sizeof(err)) == KV_OK, "%s", err);
	ck_assert_msg(sim_run_open(&R, &c, &o, err, sizeof(err)) == KV_OK,
		      "%s", err);
	ck_assert_msg(sim_run_exec(R, err, sizeof(err)) == KV_OK, "%s",
		      err);
	ck_assert_uint_eq(sim_run_nreplicas(R), 3);
	ck_assert_uint_eq(sim_run_gpus(R), 3);
	ck_assert_uint_eq(s.calls, 20);
	ck_assert_uint_eq(s.pairs, 20 * 19);
	ck_assert_uint_eq(s.bad, 0);
	ck_assert_uint_eq(sim_run_totals(R)->requests, 20);
	sim_run_close(R);
	sim_config_release(&c);
}
END_TEST

static Suite *
pd_suite(void)
{
	Suite *s = suite_create("pd");
	TCase *tc = tcase_create("pd");

	tcase_add_test(tc, test_pool_config);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_colocated_writes_nothing);
	tcase_add_test(tc, test_transfer_observer);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(pd_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
