/*
 * check_calkern.c -- the kernel-efficiency fit (sim/calkern.h): synthetic
 * stepbench CSVs made from known efficiencies with noise must give those
 * efficiencies back, with small held-out error; bad rows are refused at
 * their FILE:LINE:COL; the step shapes of a dense and a MoE model.
 */
#include "config.h"

#include "sim/calkern.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* H200 catalog peaks: 989.4 TFLOP/s bf16, 4.8 TB/s. */
static const struct calkern_peaks pk = { 989.4e12, 4.8e12 };

static const double want[CALKERN_NTERMS] = { 0.78, 0.86, 0.71, 0.9 };
#define COPY_ALPHA_NS 4000.0

/* Multiplicative noise in [1 - a, 1 + a] from a fixed LCG. */
static double
noise(uint64_t *r, double a)
{
	*r = *r * 6364136223846793005ull + 1442695040888963407ull;
	return 1 + a * (2.0 * (double)(*r >> 11) / 9007199254740992.0 - 1);
}

/*
 * A CSV of two models' GEMMs (m 1..8192), KV reads and copies timed as the
 * model says with the efficiencies of want[], 3 repetitions each.
 */
static void
make_csv(const char *path, double amp)
{
	static const struct { const char *name; long n, k; } g[] = {
		{ "qkv", 6144, 4096 }, { "o", 4096, 4096 },
		{ "gate_up", 28672, 4096 }, { "down", 4096, 14336 },
	};
	static const char *const models[] = { "a/one", "b/two" };
	FILE *f = fopen(path, "w");
	uint64_t r = 42;

	ck_assert_ptr_nonnull(f);
	fprintf(f, "kind,model,tp,name,m,n,k,bytes,flops,rep,time_ns,"
		"measured\n");
	for (int md = 0; md < 2; md++)
		for (size_t i = 0; i < 4; i++)
			for (long m = 1; m <= 8192; m *= 2) {
				long n = g[i].n / (md + 1), k = g[i].k;
				double fl = 2.0 * m * n * k;
				double by = 2.0 * (m * k + n * k + m * n);
				double tc = fl / (pk.flops * want[0]) * 1e9;
				double tw = by / (pk.hbm * want[1]) * 1e9;
				double t = tc > tw ? tc : tw;

				for (int rep = 0; rep < 3; rep++)
					fprintf(f, "gemm,%s,%d,%s,%ld,%ld,%ld,"
						"%.0f,%.0f,%d,%.1f,yes\n",
						models[md], md + 1, g[i].name,
						m, n, k, by, fl, rep,
						t * noise(&r, amp));
			}
	for (int md = 0; md < 2; md++)
		for (long b = 1; b <= 256; b *= 4)
			for (long c = 256; c <= 16384; c *= 4) {
				long tb = 2 * 8 * 128 * 2 / (md + 1);
				double by = (double)b * c * tb;
				double t = by / (pk.hbm * want[2]) * 1e9;

				for (int rep = 0; rep < 3; rep++)
					fprintf(f, "kvread,%s,1,kv,%ld,%ld,"
						"%ld,%.0f,0,%d,%.1f,yes\n",
						models[md], b, c, tb, by, rep,
						t * noise(&r, amp));
			}
	for (long tok = 1; tok <= 8192; tok *= 4) {
		double by = tok * 4096.0 * 2;
		double t = COPY_ALPHA_NS + 2 * by / (pk.hbm * want[3]) * 1e9;

		for (int rep = 0; rep < 3; rep++)
			fprintf(f, "copy,a/one,1,allreduce,%ld,4096,1,%.0f,0,"
				"%d,%.1f,yes\n", tok, by, rep,
				t * noise(&r, amp));
	}
	ck_assert_int_eq(fclose(f), 0);
}

static void
tmpname(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "%s/check_calkern.%ld.%s.csv",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid(),
		 tag);
}

START_TEST(recovers_known_efficiencies)
{
	struct calkern_set s;
	struct calkern_fit f;
	char path[512], err[512];

	tmpname(path, sizeof(path), "fit");
	make_csv(path, 0.03);
	calkern_set_init(&s);
	ck_assert_int_eq(calkern_read(path, &s, err, sizeof(err)), KV_OK);
	ck_assert_uint_eq(s.unmeasured, 0);
	ck_assert_int_eq(calkern_fit(&s, &pk, NULL, &f, err, sizeof(err)),
			 KV_OK);
	for (int t = 0; t < CALKERN_NTERMS; t++) {
		ck_assert_msg(f.term[t].ok, "%s not fitted",
			      calkern_term_key(t));
		ck_assert_msg(fabs(f.term[t].eff / want[t] - 1) < 0.03,
			      "%s: %g, want %g", calkern_term_key(t),
			      f.term[t].eff, want[t]);
		ck_assert_uint_gt(f.term[t].held, 0);
		ck_assert_msg(f.term[t].med_rel < 0.05, "%s held out %g",
			      calkern_term_key(t), f.term[t].med_rel);
	}
	ck_assert_double_eq_tol(f.term[CALKERN_INTERCONNECT].alpha_ns,
				COPY_ALPHA_NS, 0.1 * COPY_ALPHA_NS);
	/* a whole model held out */
	ck_assert_int_eq(calkern_fit(&s, &pk, "b/two", &f, err, sizeof(err)),
			 KV_OK);
	ck_assert_uint_gt(f.term[CALKERN_COMPUTE].held, 0);
	ck_assert(f.term[CALKERN_COMPUTE].med_rel < 0.05);
	ck_assert_int_eq(calkern_fit(&s, &pk, "c/none", &f, err, sizeof(err)),
			 KV_EINVAL);
	calkern_set_release(&s);
	unlink(path);
}
END_TEST

/* Without noise the fit is exact; it separates the two GEMM bounds. */
START_TEST(exact_without_noise)
{
	struct calkern_set s;
	struct calkern_fit f;
	char path[512], err[512];

	tmpname(path, sizeof(path), "exact");
	make_csv(path, 0);
	calkern_set_init(&s);
	ck_assert_int_eq(calkern_read(path, &s, err, sizeof(err)), KV_OK);
	ck_assert_int_eq(calkern_fit(&s, &pk, NULL, &f, err, sizeof(err)),
			 KV_OK);
	for (int t = 0; t < CALKERN_NTERMS; t++)
		ck_assert_double_eq_tol(f.term[t].eff, want[t], 1e-3);
	calkern_set_release(&s);
	unlink(path);
}
END_TEST

static const struct {
	const char *row, *where;
} bad[] = {
	{ "gemm,a,1,qkv,2,3,4,100,47,0,10,yes", ":2:24: flops" },
	{ "tensor,a,1,qkv,2,3,4,100,48,0,10,yes", ":2:1: kind" },
	{ "gemm,a,1,qkv,0,3,4,100,0,0,10,yes", ":2:14: m" },
	{ "gemm,a,1,qkv,2,3,4,100,48,0,0,yes", ":2:29: time_ns" },
	{ "gemm,a,1,qkv,2,3,4,100,48,0,10,maybe", ":2:32: measured" },
	{ "gemm,a,1,qkv,2,3,4,1e2x,48,0,10,yes", ":2:20: bytes" },
	{ "copy,a,1,allreduce,2,3", ":2:" },
};

START_TEST(bad_rows)
{
	struct calkern_set s;
	char path[512], err[512], want_at[600];
	FILE *f;

	tmpname(path, sizeof(path), "bad");
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "kind,model,tp,name,m,n,k,bytes,flops,rep,time_ns,"
		"measured\n%s\n", bad[_i].row);
	fclose(f);
	calkern_set_init(&s);
	ck_assert_int_eq(calkern_read(path, &s, err, sizeof(err)), KV_EINVAL);
	snprintf(want_at, sizeof(want_at), "%s%s", path, bad[_i].where);
	ck_assert_msg(strncmp(err, want_at, strlen(want_at)) == 0,
		      "got '%s', want '%s...'", err, want_at);
	calkern_set_release(&s);
	unlink(path);
}
END_TEST

START_TEST(shapes)
{
	struct cat_model m;
	struct cat_layer lay[2] = { { CAT_MIX_FULL, CAT_FFN_DENSE, 0 },
				    { CAT_MIX_FULL, CAT_FFN_DENSE, 0 } };
	struct calkern_shape sh[16];
	char err[256];
	size_t n;

	memset(&m, 0, sizeof(m));
	m.id = (char *)"t/model";
	m.dtype_bytes = 2;
	m.num_layers = 2;
	m.layer = lay;
	m.hidden_size = 4096;
	m.num_heads = 32;
	m.num_kv_heads = 8;
	m.head_dim = 128;
	m.intermediate_size = 14336;
	m.vocab_size = 128256;
	m.mlp_gated = true;
	ck_assert_int_eq(calkern_shapes(&m, 2, sh, 16, &n, err, sizeof(err)),
			 KV_OK);
	ck_assert_uint_eq(n, 7);
	ck_assert_str_eq(sh[0].name, "qkv");
	ck_assert_uint_eq(sh[0].n, (16 + 2 * 4) * 128);
	ck_assert_uint_eq(sh[2].n, 14336);	/* gate and up, halved */
	ck_assert_uint_eq(sh[3].k, 7168);
	ck_assert_uint_eq(sh[5].kind, CALKERN_KVREAD);
	ck_assert_uint_eq(sh[5].n, 4);
	ck_assert_uint_eq(sh[6].count, 5);	/* 2 L + 1 all-reduces */
	m.num_experts = 8;
	m.experts_per_tok = 2;
	ck_assert_int_eq(calkern_shapes(&m, 1, sh, 16, &n, err, sizeof(err)),
			 KV_OK);
	ck_assert_str_eq(sh[2].name, "expert_gate_up");
	ck_assert_uint_eq(sh[2].count, 4);
	lay[1].mixer = CAT_MIX_SLIDING;
	ck_assert_int_eq(calkern_shapes(&m, 1, sh, 16, &n, err, sizeof(err)),
			 KV_ENOTSUP);
	ck_assert_int_eq(calkern_shapes(&m, 0, sh, 16, &n, err, sizeof(err)),
			 KV_EINVAL);
}
END_TEST

static Suite *
calkern_suite(void)
{
	Suite *s = suite_create("calkern");
	TCase *tc = tcase_create("fit");

	/* about 0.05 s idle */
	tcase_set_timeout(tc, 5);
	tcase_add_test(tc, recovers_known_efficiencies);
	tcase_add_test(tc, exact_without_noise);
	tcase_add_loop_test(tc, bad_rows, 0, (int)(sizeof(bad) /
						   sizeof(bad[0])));
	tcase_add_test(tc, shapes);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(calkern_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
