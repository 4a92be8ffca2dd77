/*
 * check_cost.c -- the cost model (sim/cost.h).
 *
 * The models and GPUs are built by hand (no YAML): the numbers are those of
 * docs/ecosystem.md §1.1 and §2; the parameter counts are worked out in the
 * comments with the catalog's own formula (cat_model_count_params).  Every
 * pinned figure is derived in the comment above its assertion, from the
 * defaults of docs/cost-model.md §5.
 */
#include "sim/calib.h"
#include "sim/cost.h"
#include "sim/calib.h"

#include "core/kvsize.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXL 128

struct fixture {
	struct cat_model m;
	struct cat_layer layer[MAXL];
};

/* Uniform layers of one mixer and FFN kind. */
static void
layers(struct fixture *f, uint32_t n, enum cat_mixer mix, enum cat_ffn ffn,
       uint32_t window)
{
	f->m.num_layers = n;
	f->m.layer = f->layer;
	for (uint32_t i = 0; i < n; i++)
		f->layer[i] = (struct cat_layer){ .mixer = mix, .ffn = ffn,
						  .window = window };
}

static void
base(struct fixture *f, const char *id)
{
	memset(f, 0, sizeof(*f));
	f->m.id = (char *)id;
	strcpy(f->m.dtype, "bfloat16");
	f->m.dtype_bytes = 2;
	f->m.weight_bytes = 2;
	f->m.mlp_gated = true;
	f->m.norms_per_layer = 2;
}

/*
 * Llama-3.1-8B: hidden 4096, 32 layers, 32 heads, 8 KV heads of 128,
 * intermediate 14336, vocab 128256, untied.
 *   per layer: attention 4096*4096*2 + 2*4096*1024 = 41,943,040,
 *              MLP 3*4096*14336 = 176,160,768, norms 8,192
 *              = 218,112,000; x32 = 6,979,584,000 (decoder)
 *   embedding and LM head 2 * 128256*4096 = 1,050,673,152, final norm 4096
 *   total = active = 8,030,261,248 parameters = 16.06 GB in bf16.
 */
#define LLAMA8_DEC 6979584000.0
#define LLAMA8_EMB 525336576.0

static void
llama8b(struct fixture *f)
{
	base(f, "meta-llama/Llama-3.1-8B");
	f->m.hidden_size = 4096;
	f->m.num_heads = 32;
	f->m.num_kv_heads = 8;
	f->m.head_dim = 128;
	f->m.v_head_dim = 128;
	f->m.intermediate_size = 14336;
	f->m.vocab_size = 128256;
	layers(f, 32, CAT_MIX_FULL, CAT_FFN_DENSE, 0);
	f->m.params = f->m.active_params = 8030261248ull;
}

/*
 * Qwen3-30B-A3B: hidden 2048, 48 layers, 32 heads, 4 KV heads of 128,
 * qk-norm, 128 experts, top-8, moe_intermediate 768, vocab 151936, untied.
 *   attention 2048*4096*2 + 2*2048*512 + 2*128 = 18,874,624
 *   one expert 3*2048*768 = 4,718,592; router 2048*128 = 262,144
 *   active layer 18,874,624 + 8*4,718,592 + 262,144 + 4,096 = 56,889,600
 *   x48 = 2,730,700,800; + 2*151936*2048 + 2048 = 3,353,032,704 active
 *   total layer 623,120,640; x48 + 622,331,904 = 30,532,122,624.
 */
static void
qwen3_30b_a3b(struct fixture *f)
{
	base(f, "Qwen/Qwen3-30B-A3B-Instruct-2507");
	f->m.hidden_size = 2048;
	f->m.num_heads = 32;
	f->m.num_kv_heads = 4;
	f->m.head_dim = 128;
	f->m.v_head_dim = 128;
	f->m.qk_norm = true;
	f->m.vocab_size = 151936;
	f->m.num_experts = 128;
	f->m.experts_per_tok = 8;
	f->m.moe_intermediate_size = 768;
	layers(f, 48, CAT_MIX_FULL, CAT_FFN_MOE, 0);
	f->m.params = 30532122624ull;
	f->m.active_params = 3353032704ull;
}

/*
 * DeepSeek-V3: hidden 7168, 61 layers (3 dense, 58 MoE), 128 heads, MLA
 * with q_lora 1536, kv_lora 512, rope 64, nope 128, v 128; 256 experts,
 * top-8, 1 shared, moe_intermediate 2048, dense intermediate 18432, vocab
 * 129280, fp8 weights.
 *   MLA 7168*1536 + 1536 + 1536*128*192 + 7168*576 + 512 + 512*128*256
 *       + 128*128*7168 = 187,107,328
 *   dense layer 187,107,328 + 3*7168*18432 + 14,336 = 583,483,392 (x3)
 *   MoE layer (active) 187,107,328 + 9*44,040,192 + 7168*256 + 256
 *       + 14,336 = 585,358,848 (x58)
 *   + 2*129280*7168 + 7168 -> 37,554,628,608 active.
 */
static void
deepseek_v3(struct fixture *f)
{
	base(f, "deepseek-ai/DeepSeek-V3");
	f->m.weight_bytes = 1;
	f->m.hidden_size = 7168;
	f->m.num_heads = 128;
	f->m.num_kv_heads = 0;
	f->m.head_dim = 192;
	f->m.v_head_dim = 128;
	f->m.intermediate_size = 18432;
	f->m.vocab_size = 129280;
	f->m.q_lora_rank = 1536;
	f->m.kv_lora_rank = 512;
	f->m.qk_nope_head_dim = 128;
	f->m.qk_rope_head_dim = 64;
	f->m.num_experts = 256;
	f->m.experts_per_tok = 8;
	f->m.moe_intermediate_size = 2048;
	f->m.shared_intermediate_size = 2048;
	f->m.router_bias = true;
	layers(f, 61, CAT_MIX_MLA, CAT_FFN_MOE, 0);
	for (int i = 0; i < 3; i++)
		f->layer[i].ffn = CAT_FFN_DENSE;
	f->m.active_params = 37554628608ull;
	f->m.params = 671000000000ull;
}

/* The same model with its attention as plain multi-head attention: 128 KV
 * heads of 192 (K and V both cached at the page's head size). */
static void
deepseek_v3_as_mha(struct fixture *f)
{
	deepseek_v3(f);
	f->m.num_kv_heads = 128;
	for (int i = 0; i < 61; i++)
		f->layer[i].mixer = CAT_MIX_FULL;
}

/* H100 SXM (ecosystem.md §2): 3.35 TB/s, 989.4 dense bf16 TFLOP/s,
 * NVLink4 900 GB/s both ways = 450 per direction, PCIe Gen5 64 per
 * direction. */
static struct cat_gpu
h100(void)
{
	struct cat_gpu g;

	memset(&g, 0, sizeof(g));
	g.id = (char *)"h100-sxm";
	g.hbm_bw = 3.35e12;
	g.flops[CAT_BF16] = 989.4e12;
	g.flops[CAT_FP16] = 989.4e12;
	g.flops[CAT_FP8] = 1978.9e12;
	g.interconnect_bw = 450e9;
	g.host_bw = 64e9;
	return g;
}

static void
init_ok(struct cost_model *cm, const struct cat_model *m,
	const struct cat_gpu *g, const struct cost_config *cfg)
{
	char why[256];
	kv_err rc = cost_model_init(cm, m, g, cfg, why, sizeof(why));

	ck_assert_msg(rc == KV_OK, "cost_model_init: %s", why);
}

static struct cost_config
cfg_tp(uint32_t tp)
{
	struct cost_config c;

	cost_config_init(&c);
	c.tp = tp;
	return c;
}

static int64_t
one(const struct cost_model *cm, uint64_t q, uint64_t ctx,
    struct cost_breakdown *bd)
{
	struct cat_mixer_seq s = { .q = q, .ctx = ctx };
	struct cost_batch b = { .seq = &s, .nseq = 1 };

	return cost_step_explain(cm, &b, bd);
}

static void
assert_near(double got, double want, double rel)
{
	double d = got - want;

	if (d < 0)
		d = -d;
	ck_assert_msg(d <= rel * (want < 0 ? -want : want),
		      "got %.9g, want %.9g (+-%.3g%%)", got, want, rel * 100);
}

/* ---- the decode roofline of a known model ------------------------------- */

/*
 * Llama-3.1-8B bf16, one H100, batch 1 decode at context 1023.
 *   The brief's 16.06 GB / 3.35 TB/s = 4.79 ms counts the input embedding
 *   table, which a step only gathers a row of.  What a step reads:
 *   (6,979,584,000 + 525,336,576) * 2 = 15,009,841,152 B -> 4.4806 ms at
 *   3.35 TB/s; with the 0.72 memory efficiency 6.2231 ms.
 *   activations 8,806,400 B a token -> +3.65 us
 *   KV: 32 layers x 4096 B x (1024 read + 1 written) = 134,348,800 B
 *   -> 55.70 us; its FLOPs (1024 pairs x 16384 x 32) take 0.83 us
 *   CPU 500 + 10 us.  Total 6.2268 + 0.0557 + 0.510 = 6.7925 ms.
 */
START_TEST(test_decode_roofline_llama8b)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model cm;
	struct cost_breakdown bd;
	int64_t t;

	llama8b(&f);
	init_ok(&cm, &f.m, &g, NULL);
	ck_assert_double_eq(cm.weight_bytes_fixed, 15009841152.0);
	ck_assert_double_eq(cm.flops_token, 2 * LLAMA8_DEC);
	ck_assert_double_eq(cm.flops_seq, 2 * LLAMA8_EMB);
	ck_assert_double_eq(cm.act_bytes_token, 8806400.0);
	/* before efficiency: 4.48 ms, under the brief's 4.8 ms bound */
	assert_near(cm.weight_bytes_fixed / cm.hbm_bw * 1e3, 4.4806, 1e-4);
	ck_assert(cm.weight_bytes_fixed / cm.hbm_bw <= 16.06e9 / 3.35e12);

	t = one(&cm, 1, 1023, &bd);
	ck_assert(bd.lin_memory_ns > bd.lin_compute_ns);	/* memory bound */
	assert_near(bd.lin_memory_ns, (15009841152.0 + 8806400.0) / 2412.0,
		    1e-9);
	ck_assert_double_eq(bd.attn_bytes, 134348800.0);
	assert_near(bd.attn_memory_ns, 55700.0, 1e-3);
	ck_assert_double_eq(bd.cpu_ns, 510000.0);
	assert_near((double)t, 6792500.0, 1e-3);
	ck_assert_int_eq(t, cost_step_ns(&cm, &(struct cost_batch){
				       &(struct cat_mixer_seq){ 1, 1023 }, 1 }));
}
END_TEST

/* ---- prefill turns compute-bound past the ridge -------------------------- */

/*
 * One Llama-3.1-8B prefill from context 0.  The weight read takes
 * 15,009,841,152 / (3.35e12 * 0.72) = 6,223,151 ns; each token adds
 * 2 * 6,979,584,000 / (989.4e12 * 0.65) = 21,705.9 ns of compute but also
 * 8,806,400 B of activations = 3,651.1 ns of memory, and the LM head of
 * the one sequence costs 1,633.7 ns of compute.  The linear layers turn
 * compute-bound at q* = (6,223,151 - 1,634) / (21,705.9 - 3,651.1) =
 * 344.6 -> 345 tokens (weights alone would give 6,223,151 / 21,705.9 =
 * 286.7: the ridge of 0.65 * 989.4 / (0.72 * 3.35) = 267 FLOP/B).
 */
START_TEST(test_prefill_crossover)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model cm;
	struct cost_breakdown bd;
	uint64_t lo = 1, hi = 100000;

	llama8b(&f);
	init_ok(&cm, &f.m, &g, NULL);
	one(&cm, 64, 0, &bd);
	ck_assert(bd.lin_memory_ns > bd.lin_compute_ns);
	one(&cm, 2048, 0, &bd);
	ck_assert(bd.lin_compute_ns > bd.lin_memory_ns);
	ck_assert(bd.attn_compute_ns > bd.attn_memory_ns);
	while (lo < hi) {	/* smallest compute-bound q */
		uint64_t mid = lo + (hi - lo) / 2;

		one(&cm, mid, 0, &bd);
		if (bd.lin_compute_ns >= bd.lin_memory_ns)
			hi = mid;
		else
			lo = mid + 1;
	}
	ck_assert_uint_eq(lo, 345);
	/* past the ridge the step grows linearly in tokens */
	{
		int64_t a = one(&cm, 4096, 0, NULL), b = one(&cm, 8192, 0,
							     NULL);

		ck_assert(b > 2 * a - 600000);
	}
}
END_TEST

/* ---- monotonicity ------------------------------------------------------- */

static uint64_t
lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static void
check_monotone(const struct cost_model *cm)
{
	uint64_t seed = 42;

	for (int it = 0; it < 300; it++) {
		struct cat_mixer_seq s[17];
		struct cost_batch b = { .seq = s, .nseq = 1 + lcg(&seed) % 16 };
		int64_t t0, t1;
		size_t k;

		for (size_t i = 0; i < b.nseq; i++) {
			bool pf = lcg(&seed) % 4 == 0;

			s[i].q = pf ? 1 + lcg(&seed) % 2048 :
				      1 + lcg(&seed) % 2;
			s[i].ctx = lcg(&seed) % 40000;
		}
		t0 = cost_step_ns(cm, &b);
		ck_assert(t0 > 0);
		k = lcg(&seed) % b.nseq;
		s[k].q += 1 + lcg(&seed) % 64;		/* more tokens */
		t1 = cost_step_ns(cm, &b);
		ck_assert_msg(t1 >= t0, "q up: %lld < %lld", (long long)t1,
			      (long long)t0);
		t0 = t1;
		s[k].ctx += 1 + lcg(&seed) % 5000;	/* longer context */
		t1 = cost_step_ns(cm, &b);
		ck_assert_msg(t1 >= t0, "ctx up: %lld < %lld", (long long)t1,
			      (long long)t0);
		t0 = t1;
		s[b.nseq] = (struct cat_mixer_seq){ 1, lcg(&seed) % 9000 };
		b.nseq++;				/* one more sequence */
		t1 = cost_step_ns(cm, &b);
		ck_assert(t1 >= t0);
	}
}

START_TEST(test_monotone)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model cm;
	struct cost_config c2 = cfg_tp(2), c8 = cfg_tp(8);

	llama8b(&f);
	init_ok(&cm, &f.m, &g, NULL);
	check_monotone(&cm);
	init_ok(&cm, &f.m, &g, &c2);
	check_monotone(&cm);
	qwen3_30b_a3b(&f);
	init_ok(&cm, &f.m, &g, NULL);
	check_monotone(&cm);
	deepseek_v3(&f);
	init_ok(&cm, &f.m, &g, &c8);
	check_monotone(&cm);
	/* decode step by step over a growing context never speeds up */
	llama8b(&f);
	init_ok(&cm, &f.m, &g, NULL);
	for (uint64_t c = 0, prev = 0; c < 130000; c += 997) {
		uint64_t t = (uint64_t)one(&cm, 1, c, NULL);

		ck_assert(t >= prev);
		prev = t;
	}
}
END_TEST

/* ---- tensor parallel ---------------------------------------------------- */

/*
 * TP 2 halves the weights and the KV heads each rank reads (8 -> 4), and
 * adds 2 all-reduces per layer + 1 for the embedding = 65, each
 * 20 us + 2 * (1/2) * 8192 B / (450 GB/s * 0.82) = 20,022.2 ns, so
 * 65 * 20,022.2 = 1,301,443 ns for one decode token.
 */
START_TEST(test_tensor_parallel)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model c1, c2;
	struct cost_config cfg2 = cfg_tp(2), cfg3 = cfg_tp(3);
	struct cost_breakdown b1, b2;
	char why[256];

	llama8b(&f);
	init_ok(&c1, &f.m, &g, NULL);
	init_ok(&c2, &f.m, &g, &cfg2);
	ck_assert_double_eq(c2.weight_bytes_fixed,
			    c1.weight_bytes_fixed / 2);
	ck_assert_double_eq(c2.flops_token, c1.flops_token / 2);
	ck_assert_uint_eq(c2.allreduces, 65);
	one(&c1, 1, 4095, &b1);
	one(&c2, 1, 4095, &b2);
	ck_assert_double_eq(b1.allreduce_ns, 0.0);
	ck_assert_double_eq(b2.attn_bytes, b1.attn_bytes / 2);
	ck_assert_double_eq(b2.lin_flops, b1.lin_flops / 2);
	/* activations into each matmul stay whole on every rank */
	assert_near(b2.lin_bytes, b1.lin_bytes / 2, 5e-4);
	ck_assert(b2.lin_bytes > b1.lin_bytes / 2);
	assert_near(b2.allreduce_ns, 65 * (20000.0 + 8192.0 / 369.0), 1e-9);
	/* the GPU part without the all-reduce halves */
	assert_near(b2.gpu_ns - b2.allreduce_ns, (b1.gpu_ns) / 2, 5e-4);
	/* and a prefill pays the ring bytes: 2048 tokens x 8 KiB */
	one(&c2, 2048, 0, &b2);
	assert_near(b2.allreduce_ns,
		    65 * (20000.0 + 2048 * 8192.0 / 369.0), 1e-9);
	/* 32 heads do not split 3 ways */
	ck_assert_int_eq(cost_model_init(&c2, &f.m, &g, &cfg3, why,
					 sizeof(why)), KV_EINVAL);
	ck_assert(strstr(why, "divisible by tensor parallel size (3)"));
	/* GQA with fewer KV heads than ranks replicates one head per rank */
	{
		struct cost_config c16 = cfg_tp(16);

		init_ok(&c2, &f.m, &g, &c16);
		ck_assert_double_eq(c2.group[0].fig.token_bytes,
				    (double)kvc_page_bytes(1, 128, 2, 1,
							   false));
	}
}
END_TEST

/* ---- swaps -------------------------------------------------------------- */

/*
 * Llama-3.1-8B, block 16, bf16: 32 layers x 2 x 16 x 8 x 128 x 2 =
 * 2,097,152 B a block.  Defaults: alpha 10 us, beta 5 us, B = 64 GB/s x
 * 0.78125 = 50 GB/s (0.02 ns/B).  128 blocks (a 2,048-token sequence,
 * gpu-design.md §2 worked example):
 *   fa-split:    64 calls, 8192 chunks: 0.64 + 40.96 + 5.369 = 46.969 ms
 *   fi-fused:    32 calls, 4096 chunks: 0.32 + 20.48 + 5.369 = 26.169 ms
 *   cross-layer:  1 call,   128 chunks: 0.01 +  0.64 + 5.369 =  6.019 ms
 */
START_TEST(test_swap)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model cm;
	struct cost_config cfg;
	int64_t step;

	llama8b(&f);
	init_ok(&cm, &f.m, &g, NULL);
	ck_assert_uint_eq(cm.block_bytes, 2097152u);
	ck_assert_uint_eq(cost_layout_chunks(&cm, COST_LAYOUT_FA_SPLIT), 64);
	ck_assert_uint_eq(cost_layout_chunks(&cm, COST_LAYOUT_FI_FUSED), 32);
	ck_assert_uint_eq(cost_layout_chunks(&cm, COST_LAYOUT_DS_INTERLEAVED),
			  32);
	ck_assert_uint_eq(cost_layout_chunks(&cm, COST_LAYOUT_CROSS_LAYER),
			  1);
	ck_assert_int_eq(cost_swap_ns(&cm, COST_D2H, 128,
				      COST_LAYOUT_FA_SPLIT), 46968709);
	ck_assert_int_eq(cost_swap_ns(&cm, COST_D2H, 128,
				      COST_LAYOUT_FI_FUSED), 26168709);
	ck_assert_int_eq(cost_swap_ns(&cm, COST_H2D, 128,
				      COST_LAYOUT_CROSS_LAYER), 6018709);
	ck_assert_int_eq(cost_swap_ns(&cm, COST_H2D, 0,
				      COST_LAYOUT_FA_SPLIT), 0);

	/* linear in blocks: each block adds chunks * beta + bytes / B */
	for (int l = 0; l < COST_NLAYOUTS; l++) {
		double slope = cost_layout_chunks(&cm, (enum cost_layout)l) *
				       5000.0 + 2097152 * 0.02;
		int64_t t1 = cost_swap_ns(&cm, COST_D2H, 1,
					  (enum cost_layout)l);

		for (uint64_t n = 2; n <= 600; n += 37) {
			double want = (double)t1 + slope * (double)(n - 1);
			int64_t t = cost_swap_ns(&cm, COST_D2H, n,
						 (enum cost_layout)l);

			ck_assert_msg(t >= want - 1 && t <= want + 1,
				      "%s n=%llu: %lld vs %.1f",
				      cost_layout_name((enum cost_layout)l),
				      (unsigned long long)n, (long long)t,
				      want);
		}
	}

	/* swap vs recompute flips with the layout (gpu-design.md §2): the
	 * 2,048-token prefill is compute bound, 2048 * 21.706 us + its
	 * attention (2,098,176 pairs x 16384 x 32 layers) = 46.3 ms */
	step = cost_recompute_ns(&cm, 2048);
	assert_near((double)step, 46.3e6, 5e-3);
	ck_assert(cost_swap_ns(&cm, COST_D2H, 128, COST_LAYOUT_CROSS_LAYER) <
		  step);
	ck_assert(cost_swap_ns(&cm, COST_D2H, 128, COST_LAYOUT_FA_SPLIT) >
		  step);
	ck_assert_int_eq(cost_recompute_ns(&cm, 0), 0);
	ck_assert(cost_recompute_ns(&cm, 4096) > 2 * step - 7000000);

	/* pageable host memory halves the bandwidth: the byte term doubles */
	cost_config_init(&cfg);
	cfg.hostmem = COST_HOST_PAGEABLE;
	init_ok(&cm, &f.m, &g, &cfg);
	ck_assert_int_eq(cost_swap_ns(&cm, COST_D2H, 128,
				      COST_LAYOUT_CROSS_LAYER),
			 10000 + 640000 + 10737418);
	/* the gather kernel: one launch, 0.05 us a chunk, 45 GB/s */
	cfg.hostmem = COST_HOST_PINNED;
	cfg.copy = COST_COPY_GATHER;
	init_ok(&cm, &f.m, &g, &cfg);
	ck_assert_int_eq(cost_swap_ns(&cm, COST_H2D, 128,
				      COST_LAYOUT_FA_SPLIT),
			 6000 + 8192 * 50 + 5965232);

	/* no host link: no swap; one memory pool: nothing moves */
	g.host_bw = 0;
	init_ok(&cm, &f.m, &g, NULL);
	ck_assert_int_eq(cost_swap_ns(&cm, COST_D2H, 4, COST_LAYOUT_FA_SPLIT),
			 -1);
	g.unified_memory = true;
	init_ok(&cm, &f.m, &g, NULL);
	ck_assert_int_eq(cost_swap_ns(&cm, COST_D2H, 4, COST_LAYOUT_FA_SPLIT),
			 0);
}
END_TEST

/* ---- determinism -------------------------------------------------------- */

START_TEST(test_determinism)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model a, b;
	struct cat_mixer_seq s[64], r[64];
	struct cost_batch ba = { s, 64 }, br = { r, 64 };
	uint64_t seed = 7;

	qwen3_30b_a3b(&f);
	init_ok(&a, &f.m, &g, NULL);
	init_ok(&b, &f.m, &g, NULL);
	for (int i = 0; i < 64; i++) {
		s[i].q = i % 5 == 0 ? 1 + lcg(&seed) % 3000 : 1;
		s[i].ctx = lcg(&seed) % 100000;
		r[63 - i] = s[i];
	}
	/* same inputs, same ns; the order of the batch does not matter */
	ck_assert_int_eq(cost_step_ns(&a, &ba), cost_step_ns(&a, &ba));
	ck_assert_int_eq(cost_step_ns(&a, &ba), cost_step_ns(&b, &ba));
	ck_assert_int_eq(cost_step_ns(&a, &ba), cost_step_ns(&a, &br));
	ck_assert_int_eq(memcmp(&a, &b, sizeof(a)), 0);
	/* an empty batch costs nothing; q = 0 entries are skipped */
	ck_assert_int_eq(cost_step_ns(&a, &(struct cost_batch){ NULL, 0 }),
			 0);
	s[0].q = 0;
	ba.nseq = 1;
	ck_assert_int_eq(cost_step_ns(&a, &ba), 0);
}
END_TEST

/* ---- MoE: active parameters and expert coverage ------------------------- */

/*
 * Qwen3-30B-A3B.  FLOPs per token = 2 x decoder active parameters =
 * 2 x 2,730,700,800.  Weights read: one token touches exactly its k = 8
 * experts, so (2,730,700,800 + 311,164,928 LM head) x 2 B = 6,083,731,456
 * B = the active weights; with T tokens E(1 - (1 - k/E)^T) experts:
 * 16 tokens -> 128 (1 - 0.9375^16) = 82.42, 4096 tokens -> 128 (all):
 * (2,730,700,800 - 48*8*4,718,592 + 311,164,928 + 128*48*4,718,592) x 2
 * = 60,441,911,296 B.
 */
START_TEST(test_moe)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model cm;
	struct cost_breakdown bd;
	struct cat_mixer_seq s[16];
	double prev = 0;

	qwen3_30b_a3b(&f);
	init_ok(&cm, &f.m, &g, NULL);
	ck_assert_uint_eq(cm.moe_layers, 48);
	ck_assert_double_eq(cm.flops_token, 2 * 2730700800.0);
	ck_assert_double_eq(cm.expert_bytes, 48 * 4718592.0 * 2);
	one(&cm, 1, 100, &bd);
	ck_assert_double_eq(bd.experts, 8.0);
	ck_assert_double_eq(bd.lin_bytes - cm.act_bytes_token, 6083731456.0);
	for (int i = 0; i < 16; i++)
		s[i] = (struct cat_mixer_seq){ 1, 100 };
	cost_step_explain(&cm, &(struct cost_batch){ s, 16 }, &bd);
	assert_near(bd.experts, 82.42, 1e-3);
	one(&cm, 4096, 0, &bd);
	assert_near(bd.experts, 128.0, 1e-9);
	assert_near(bd.lin_bytes - 4096 * cm.act_bytes_token, 60441911296.0,
		    1e-9);
	for (uint64_t t = 1; t <= 2048; t *= 2) {	/* coverage grows */
		one(&cm, t, 0, &bd);
		ck_assert(bd.experts >= prev);
		ck_assert(bd.experts <= 128.0);
		prev = bd.experts;
	}
	/* the dense-equivalent read would be 8x larger at batch 1: an MoE
	 * decode of 3.3B active parameters reads ~6.1 GB, not 61 GB */
	one(&cm, 1, 0, &bd);
	ck_assert(bd.lin_bytes < 6.2e9);
}
END_TEST

/* ---- MLA: the latent cache ---------------------------------------------- */

/*
 * DeepSeek-V3 caches kv_lora_rank + rope = 576 values a token a layer:
 * 1,152 B in bf16.  As multi-head attention with 128 KV heads of 192 the
 * same token takes 2 x 128 x 192 x 2 = 98,304 B, 85x more.  Under tensor
 * parallelism the latent is replicated, the MHA heads split.
 */
START_TEST(test_mla)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model mla, mha, mla8, mha8;
	struct cost_config c8 = cfg_tp(8);
	struct cost_breakdown b1, b2;

	deepseek_v3(&f);
	init_ok(&mla, &f.m, &g, NULL);
	init_ok(&mla8, &f.m, &g, &c8);
	ck_assert_str_eq(mla.peak_flops_dtype, "fp8");
	ck_assert_uint_eq(mla.ngroups, 1);
	ck_assert_double_eq(mla.group[0].fig.token_bytes, 1152.0);
	ck_assert_double_eq(mla8.group[0].fig.token_bytes, 1152.0);
	ck_assert_uint_eq(mla.block_bytes, 61ull * 16 * 1152);
	ck_assert_uint_eq(cost_layout_chunks(&mla, COST_LAYOUT_FA_SPLIT), 61);
	deepseek_v3_as_mha(&f);
	init_ok(&mha, &f.m, &g, NULL);
	init_ok(&mha8, &f.m, &g, &c8);
	ck_assert_double_eq(mha.group[0].fig.token_bytes, 98304.0);
	ck_assert_double_eq(mha8.group[0].fig.token_bytes, 98304.0 / 8);
	ck_assert(mla.group[0].fig.token_bytes <
		  mha.group[0].fig.token_bytes);
	ck_assert(mla8.group[0].fig.token_bytes <
		  mha8.group[0].fig.token_bytes);

	one(&mla, 1, 8191, &b1);
	one(&mha, 1, 8191, &b2);
	ck_assert_double_eq(b1.attn_bytes, 61 * 1152.0 * (8192 + 1));
	ck_assert(b1.attn_bytes * 80 < b2.attn_bytes);
	/*
	 * Decode runs the absorbed path: 2 x 128 x (576 + 512) = 278,528 FLOPs
	 * a pair.  A prefill runs the expanded one, 2 x 128 x (192 + 128) =
	 * 81,920 a pair plus 2 x 512 x 128 x 256 = 33,554,432 a context token
	 * to up-project the latents.  Per sequence the cheaper path is
	 * charged: at context c the absorbed path wins while
	 * q (278,528 - 81,920) < 33,554,432, i.e. q < 171 for large c
	 * (FlashMLA's vLLM threshold is 128).
	 */
	ck_assert_double_eq(b1.attn_flops, 61 * 8192 * 278528.0);
	one(&mla, 2, 8190, &b1);	/* 16,383 pairs, absorbed */
	ck_assert_double_eq(b1.attn_flops, 61 * 16383 * 278528.0);
	one(&mla, 4096, 0, &b1);	/* 8,390,656 pairs, expanded */
	ck_assert_double_eq(b1.attn_flops, 61 * 8390656 * 81920.0);
	one(&mla, 160, 100000, &b1);	/* 16,012,880 pairs, absorbed */
	ck_assert_double_eq(b1.attn_flops, 61 * 16012880 * 278528.0);
	one(&mla, 180, 100000, &b1);	/* expanded */
	ck_assert_double_eq(b1.attn_flops,
			    61 * (18016290 * 81920.0 + 100000 * 33554432.0));
	{	/* the description names the latent and both paths */
		char *buf = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&buf, &len);

		ck_assert_ptr_nonnull(out);
		cost_describe(&mla8, out);
		fclose(out);
		ck_assert(strstr(buf, "  mla      x61  latent 1152 B") != NULL);
		ck_assert(strstr(buf, "(replicated)") != NULL);
		ck_assert(strstr(buf, "dense fp8 compute") != NULL);
		free(buf);
	}
}
END_TEST

/* ---- sliding windows and recurrent state -------------------------------- */

/* Granite-4.0-H-tiny's shape with 40 Mamba-2 layers (no attention). */
static void
granite_mamba2(struct fixture *f, const char *id)
{
	base(f, id);
	f->m.hidden_size = 1536;
	f->m.vocab_size = 100352;
	f->m.intermediate_size = 4096;
	f->m.ssm = (struct cat_ssm){ .d_inner = 3072, .d_state = 128,
				     .d_conv = 4, .n_groups = 1,
				     .n_heads = 48, .head_dim = 64 };
	layers(f, 40, CAT_MIX_MAMBA2, CAT_FFN_DENSE, 0);
	f->m.active_params = f->m.params = 7000000000ull;
}

/*
 * cost_step_decode: n decodes from their contexts' sum give the batch's
 * time and breakdown to the bit (dense, tensor parallel, MoE, a hybrid
 * with state layers); a windowed or MLA model needs the batch (-1).  The
 * memo's inline time (cost_decode_memo_quick) is the same for one group
 * of full attention, -1 otherwise; how many times it served, returned.
 * cost_step_decodes_and: the decodes from their sum, then prompt chunks
 * (one of q = 0, small ones and large ones) from their entries, the
 * batch's bits too, with no decodes at all as well.
 */
static void
decodes_and_same(const struct cost_model *cm, struct cat_mixer_seq *s,
		 uint32_t n, uint64_t sum, uint64_t seed)
{
	struct cost_breakdown a, b;

	for (uint32_t ne = 0; ne <= 5; ne++) {
		uint64_t se = 0;

		for (uint32_t i = n; i < n + ne; i++) {
			seed = seed * 6364136223846793005ull + 1;
			/* small chunks (under the graphs' sizes) and
			 * large ones */
			s[i].q = i == n + 1 ? 0 : ne % 2 ? (seed >> 33) % 48 + 2 :
			    (seed >> 33) % 8192;
			s[i].ctx = (seed >> 20) % 60000;
			se += s[i].q;
		}
		if (n == 0 && se == 0)
			continue;
		memset(&b, 0xa5, sizeof(b));
		ck_assert_int_eq(cost_step_decodes_and(cm, n, sum, s + n, ne,
						       &b),
				 cost_step_explain(cm, &(struct cost_batch){
				 s, n + ne }, &a));
		ck_assert_int_eq(memcmp(&a, &b, sizeof(a)), 0);
	}
}

static uint32_t
decode_same(const struct cost_model *cm, uint64_t seed)
{
	uint32_t quick = 0;
	struct cat_mixer_seq s[64 + 5];
	struct cost_breakdown a, b, c;
	struct cost_decode_memo m = { .cm = NULL };

	for (uint32_t r = 0; r < 3; r++)
	for (uint32_t n = 1; n <= 64; n += 9) {
		uint64_t sum = 0;

		for (uint32_t i = 0; i < n; i++) {
			seed = seed * 6364136223846793005ull + 1;
			s[i].q = 1;
			s[i].ctx = (seed >> 40) % 70000;
			sum += s[i].ctx;
		}
		ck_assert_int_eq(cost_step_decode(cm, n, sum, &b),
				 cost_step_explain(cm, &(struct cost_batch){
				 s, n }, &a));
		ck_assert_int_eq(memcmp(&a, &b, sizeof(a)), 0);
		decodes_and_same(cm, s, n, sum, seed);
		decodes_and_same(cm, s + n, 0, 0, seed + 1);
		/* the memo, kept across sizes and rounds: the same bits;
		 * then the next step of the same batch, from the memo */
		ck_assert_int_eq(cost_step_decode_memo(cm, &m, n, sum, &c),
				 a.total_ns);
		ck_assert_int_eq(memcmp(&a, &c, sizeof(a)), 0);
		for (uint32_t i = 0; i < n; i++)
			s[i].ctx++;
		ck_assert_int_eq(cost_step_decode_memo(cm, &m, n, sum + n,
						       &c),
				 cost_step_explain(cm, &(struct cost_batch){
				 s, n }, &a));
		ck_assert_int_eq(memcmp(&a, &c, sizeof(a)), 0);
		ck_assert_uint_eq(m.n, n);
		/* without a breakdown: the time, and the CPU term kept */
		ck_assert_int_eq(cost_step_decode_memo(cm, &m, n, sum + n,
						       NULL), a.total_ns);
		ck_assert(m.bd.cpu_ns == a.cpu_ns);
		ck_assert_int_eq(cost_decode_memo_quick(cm, &m, n, sum + n),
				 m.one ? a.total_ns : -1);
		quick += m.one;
		/* another size's memo: not this one's to answer */
		ck_assert_int_eq(cost_decode_memo_quick(cm, &m, n + 1,
							sum + n), -1);
	}
	return quick;
}

START_TEST(test_decode_sum)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model cm;
	struct cost_config c4 = cfg_tp(4);
	struct cost_breakdown b;

	llama8b(&f);
	init_ok(&cm, &f.m, &g, NULL);
	ck_assert_uint_eq(decode_same(&cm, 1), 3 * 8);	/* every size */
	init_ok(&cm, &f.m, &g, &c4);
	ck_assert_uint_eq(decode_same(&cm, 2), 3 * 8);
	/* pipeline stages and offloaded weights: the knobs' terms, in
	 * the inline time too */
	c4.pp = 2;
	c4.offload_bytes = 4e9;
	init_ok(&cm, &f.m, &g, &c4);
	ck_assert(cm.pp == 2 && cm.offload_bytes > 0);
	ck_assert_uint_eq(decode_same(&cm, 4), 3 * 8);
	/* CUDA graphs: a batch of decodes alone replays a full graph, one
	 * with a prompt's chunk a piecewise one */
	c4 = cfg_tp(1);
	c4.graph_max = 512;
	init_ok(&cm, &f.m, &g, &c4);
	ck_assert_uint_eq(cm.graph_max, 512);
	ck_assert_uint_eq(decode_same(&cm, 6), 3 * 8);
	c4 = cfg_tp(4);
	qwen3_30b_a3b(&f);	/* MoE */
	init_ok(&cm, &f.m, &g, NULL);
	decode_same(&cm, 5);
	/* a hybrid: full attention and Mamba-2 layers */
	granite_mamba2(&f, "hybrid");
	f.m.num_heads = 12;
	f.m.num_kv_heads = 4;
	f.m.head_dim = 128;
	for (uint32_t i = 0; i < 40; i += 10)
		f.layer[i].mixer = CAT_MIX_FULL;
	init_ok(&cm, &f.m, &g, NULL);
	ck_assert_uint_eq(cm.ngroups, 2);
	decode_same(&cm, 3);
	llama8b(&f);
	layers(&f, 32, CAT_MIX_SLIDING, CAT_FFN_DENSE, 4096);
	init_ok(&cm, &f.m, &g, NULL);
	ck_assert_int_eq(cost_step_decode(&cm, 4, 100, &b), -1);
	ck_assert_int_eq(cost_step_decodes_and(&cm, 4, 100, NULL, 0, &b), -1);
	deepseek_v3(&f);
	init_ok(&cm, &f.m, &g, NULL);
	ck_assert_int_eq(cost_step_decode(&cm, 4, 100, &b), -1);
	ck_assert_int_eq(cost_step_decodes_and(&cm, 4, 100, NULL, 0, &b), -1);
	ck_assert_int_eq(cost_step_decode_memo(&cm, &(struct cost_decode_memo){
			 .cm = NULL }, 4, 100, &b), -1);
}
END_TEST

START_TEST(test_window_and_state)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model cm;
	struct cost_breakdown a, b;

	/* every layer slides over 4096 tokens (Mistral-7B-v0.1 shape) */
	llama8b(&f);
	f.m.id = (char *)"sliding";
	layers(&f, 32, CAT_MIX_SLIDING, CAT_FFN_DENSE, 4096);
	init_ok(&cm, &f.m, &g, NULL);
	one(&cm, 1, 5000, &a);
	one(&cm, 1, 100000, &b);
	ck_assert_double_eq(a.attn_bytes, b.attn_bytes);
	/* 4095 + 1 read + 1 written */
	ck_assert_double_eq(a.attn_bytes, 32 * 4096.0 * 4097);
	ck_assert_double_eq(a.attn_flops, 32 * 4096 * 16384.0);
	one(&cm, 1, 1000, &b);	/* inside the window: full attention */
	ck_assert_double_eq(b.attn_bytes, 32 * 4096.0 * 1002);
	/* a 512-token chunk at context 100000 sees 4096 keys per token */
	one(&cm, 512, 100000, &b);
	ck_assert_double_eq(b.attn_flops, 32 * 512 * 4096 * 16384.0);

	/* chunked local attention (chunk 8192): the first token of a new
	 * chunk sees only itself */
	layers(&f, 32, CAT_MIX_CHUNKED, CAT_FFN_DENSE, 8192);
	init_ok(&cm, &f.m, &g, NULL);
	one(&cm, 1, 8192, &a);
	ck_assert_double_eq(a.attn_flops, 32 * 16384.0);

	/*
	 * Mamba-2 layers read and write a fixed state whatever the context:
	 * Granite-4.0-H-tiny's (d_conv 4, d_inner 3072, 1 group, d_state 128,
	 * 48 heads of 64) is 806,400 B in bf16 (core/kvsize.h).
	 */
	granite_mamba2(&f, "mamba2-only");
	init_ok(&cm, &f.m, &g, NULL);
	ck_assert_uint_eq(cm.paged_layers, 0);
	ck_assert_double_eq(cm.group[0].fig.state_bytes, 806400.0);
	one(&cm, 1, 10, &a);
	one(&cm, 1, 1000000, &b);
	ck_assert_double_eq(a.rec_bytes, b.rec_bytes);
	ck_assert_double_eq(a.rec_bytes, 40 * 2 * 806400.0);
	ck_assert_double_eq(a.attn_bytes, 0.0);
	ck_assert_int_eq(cost_swap_ns(&cm, COST_D2H, 3, COST_LAYOUT_FA_SPLIT),
			 0);
}
END_TEST

/* ---- calibration and description ---------------------------------------- */

START_TEST(test_calibration_and_describe)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model cm, def;
	struct cost_calib cal;
	struct cost_config cfg;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;
	char why[256];

	llama8b(&f);
	init_ok(&def, &f.m, &g, NULL);
	cost_calib_init(&cal);
	cal.eff_memory = (struct cost_term){ 0.9, "calib.yaml:3" };
	cal.cpu_step_ns = (struct cost_term){ 0.0, "calib.yaml:4" };
	cal.copy[COST_D2H][COST_COPY_PER_CHUNK][COST_HOST_PINNED].beta_ns =
		(struct cost_term){ 1000.0, "calib.yaml:9" };
	cost_config_init(&cfg);
	cfg.calib = &cal;
	init_ok(&cm, &f.m, &g, &cfg);
	ck_assert_str_eq(cm.eff_memory.src, "calib.yaml:3");
	ck_assert_double_eq(cm.eff_memory.v, 0.9);
	ck_assert_str_eq(cm.eff_compute.src, def.eff_compute.src);
	ck_assert(one(&cm, 1, 0, NULL) < one(&def, 1, 0, NULL) - 500000);
	/* the D2H per-chunk beta changed, H2D kept its default */
	ck_assert(cost_swap_ns(&cm, COST_D2H, 8, COST_LAYOUT_FA_SPLIT) <
		  cost_swap_ns(&cm, COST_H2D, 8, COST_LAYOUT_FA_SPLIT));

	/* a bad override is rejected */
	cal.eff_compute = (struct cost_term){ 0.0, "calib.yaml:5" };
	ck_assert_int_eq(cost_model_init(&cm, &f.m, &g, &cfg, why,
					 sizeof(why)), KV_EINVAL);

	/* every term is printed with its source */
	out = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(out);
	cost_describe(&def, out);
	fclose(out);
	ck_assert(strstr(buf, "inference-sim#482") != NULL);
	ck_assert(strstr(buf, "nccl-tests#212") != NULL);
	ck_assert(strstr(buf, "mfuPrefill") != NULL);
	ck_assert(strstr(buf, "S15") != NULL);
	ck_assert(strstr(buf, "(null)") == NULL);
	ck_assert(strstr(buf, "h2d staged pageable") != NULL);
	free(buf);

	/* models the cost model cannot use */
	f.m.active_params = 0;
	ck_assert_int_eq(cost_model_init(&cm, &f.m, &g, NULL, why,
					 sizeof(why)), KV_EINVAL);
	llama8b(&f);
	g.hbm_bw = 0;
	ck_assert_int_eq(cost_model_init(&cm, &f.m, &g, NULL, why,
					 sizeof(why)), KV_EINVAL);
}
END_TEST

/*
 * Terms by name (calib.h): every row of the loader's table can be set and
 * read back; an unknown name or a value out of range is refused and
 * leaves the term as it was; an overlay copies the set terms only, with
 * their sources, and the release frees them.
 */
START_TEST(test_calib_by_name)
{
	struct cost_calib a, b;
	char err[256];

	cost_calib_init(&a);
	cost_calib_init(&b);
	ck_assert_uint_ge(cost_calib_nterms(), 7);
	for (size_t i = 0; i < cost_calib_nterms(); i++) {
		const char *n = cost_calib_term_name(i);
		int k = cost_calib_term_kind(n);

		ck_assert(k == COST_CALIB_EFF || k == COST_CALIB_TIME);
		ck_assert_int_eq(cost_calib_set(&a, n, k == COST_CALIB_EFF ?
						0.5 : 1234.0, "t", err,
						sizeof(err)), KV_OK);
		ck_assert_str_eq(cost_calib_term(&a, n)->src, "t");
	}
	ck_assert_ptr_null(cost_calib_term_name(cost_calib_nterms()));
	ck_assert_double_eq(a.eff_memory.v, 0.5);
	ck_assert_double_eq(a.cpu_step_ns.v, 1234.0);
	ck_assert_int_eq(cost_calib_term_kind("eff_nothing"), -1);
	ck_assert_int_eq(cost_calib_set(&a, "eff_nothing", 0.5, NULL, err,
					sizeof(err)), KV_EINVAL);
	ck_assert(strstr(err, "eff_nothing") != NULL);
	ck_assert_int_eq(cost_calib_set(&a, "eff_memory", 1.5, NULL, err,
					sizeof(err)), KV_EINVAL);
	ck_assert_int_eq(cost_calib_set(&a, "cpu_seq_ns", -1, NULL, err,
					sizeof(err)), KV_EINVAL);
	ck_assert_double_eq(a.eff_memory.v, 0.5);

	ck_assert_int_eq(cost_calib_set(&b, "eff_memory", 0.9, "fit", err,
					sizeof(err)), KV_OK);
	ck_assert_int_eq(cost_calib_overlay(&a, &b, err, sizeof(err)),
			 KV_OK);
	ck_assert_double_eq(a.eff_memory.v, 0.9);
	ck_assert_str_eq(a.eff_memory.src, "fit");
	ck_assert_ptr_ne(a.eff_memory.src, b.eff_memory.src);
	ck_assert_double_eq(a.eff_compute.v, 0.5);	/* not set in b */
	cost_calib_release(&a);
	cost_calib_release(&b);
	ck_assert_ptr_null(a.eff_memory.src);
	ck_assert_ptr_null(a.cpu_token_ns.src);
}
END_TEST

/* ---- split terms (issue #18 item 3) -------------------------------------- */

/* A model with cal over the defaults. */
static void
init_cal(struct cost_model *cm, const struct cat_model *m,
	 const struct cat_gpu *g, const struct cost_calib *cal, uint32_t tp,
	 uint32_t graph_max)
{
	struct cost_config cfg = cfg_tp(tp);

	cfg.calib = cal;
	cfg.graph_max = graph_max;
	init_ok(cm, m, g, &cfg);
}

/*
 * Llama-3.1-8B decode at context 1023 (test_decode_roofline_llama8b):
 * weights 15,009,841,152 B, activations 8,806,400 B, KV 134,348,800 B.
 * Each split efficiency moves its own part only.
 */
START_TEST(test_split_efficiencies)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model def, cm;
	struct cost_calib cal;
	struct cost_breakdown b0, b;

	llama8b(&f);
	init_ok(&def, &f.m, &g, NULL);
	/* unset, they follow eff_memory and eff_compute, sources included */
	ck_assert_double_eq(def.eff_weights.v, 0.72);
	ck_assert_str_eq(def.eff_weights.src, def.eff_memory.src);
	ck_assert_str_eq(def.eff_kv_read.src, def.eff_memory.src);
	ck_assert_double_eq(def.eff_attn_compute.v, 0.65);
	ck_assert_str_eq(def.eff_attn_compute.src, def.eff_compute.src);
	one(&def, 1, 1023, &b0);

	/* eff_memory set alone: the weights and KV reads follow it */
	cost_calib_init(&cal);
	cal.eff_memory = (struct cost_term){ 0.9, "c.yaml:1" };
	init_cal(&cm, &f.m, &g, &cal, 1, 0);
	ck_assert_double_eq(cm.eff_weights.v, 0.9);
	ck_assert_str_eq(cm.eff_kv_read.src, "c.yaml:1");

	/* eff_weights: the weight read only (activations stay at 0.72) */
	cost_calib_init(&cal);
	cal.eff_weights = (struct cost_term){ 0.9, "c.yaml:2" };
	init_cal(&cm, &f.m, &g, &cal, 1, 0);
	one(&cm, 1, 1023, &b);
	assert_near(b.lin_memory_ns, 15009841152.0 / 3015.0 +
		    8806400.0 / 2412.0, 1e-12);
	ck_assert_double_eq(b.attn_memory_ns, b0.attn_memory_ns);
	ck_assert_double_eq(b.attn_compute_ns, b0.attn_compute_ns);
	ck_assert_double_eq(b.lin_compute_ns, b0.lin_compute_ns);

	/* eff_kv_read: the KV read only */
	cost_calib_init(&cal);
	cal.eff_kv_read = (struct cost_term){ 0.36, "c.yaml:3" };
	init_cal(&cm, &f.m, &g, &cal, 1, 0);
	one(&cm, 1, 1023, &b);
	assert_near(b.attn_memory_ns, 2 * b0.attn_memory_ns, 1e-12);
	ck_assert_double_eq(b.lin_memory_ns, b0.lin_memory_ns);
	ck_assert_double_eq(b.attn_compute_ns, b0.attn_compute_ns);
	/* ... and a GQA model's too while eff_kv_read_gqa is unset */
	ck_assert_double_eq(cm.eff_kv_read_gqa.v, 0.36);
	ck_assert_str_eq(cm.eff_kv_read_gqa.src, "c.yaml:3");

	/* eff_kv_read_gqa: the KV read of a GQA model (8 KV heads for 32
	 * query heads) ... */
	cal.eff_kv_read_gqa = (struct cost_term){ 0.18, "c.yaml:5" };
	init_cal(&cm, &f.m, &g, &cal, 1, 0);
	one(&cm, 1, 1023, &b);
	assert_near(b.attn_memory_ns, 4 * b0.attn_memory_ns, 1e-12);
	ck_assert_double_eq(b.lin_memory_ns, b0.lin_memory_ns);
	/* ... and not of the same model with one KV head a query head,
	 * which reads at eff_kv_read */
	f.m.num_kv_heads = 32;
	init_ok(&def, &f.m, &g, NULL);
	one(&def, 1, 1023, &b0);
	init_cal(&cm, &f.m, &g, &cal, 1, 0);
	one(&cm, 1, 1023, &b);
	assert_near(b.attn_memory_ns, 2 * b0.attn_memory_ns, 1e-12);
	f.m.num_kv_heads = 8;
	init_ok(&def, &f.m, &g, NULL);

	/* eff_attn_compute: attention FLOPs only, not the GEMMs */
	cost_calib_init(&cal);
	cal.eff_attn_compute = (struct cost_term){ 0.325, "c.yaml:4" };
	init_cal(&cm, &f.m, &g, &cal, 1, 0);
	one(&def, 2048, 0, &b0);
	one(&cm, 2048, 0, &b);
	assert_near(b.attn_compute_ns, 2 * b0.attn_compute_ns, 1e-12);
	ck_assert_double_eq(b.lin_compute_ns, b0.lin_compute_ns);
	ck_assert_double_eq(b.attn_memory_ns, b0.attn_memory_ns);
	ck_assert(b.total_ns > b0.total_ns);
}
END_TEST

/*
 * eff_experts: the routed experts' weight read of an MoE model, and only
 * that.  Qwen3-30B-A3B, one decode token (8 of 128 experts): the fixed
 * weights at eff_weights, the experts at eff_experts, the activations at
 * eff_memory.  Unset it follows eff_weights, to the nanosecond; a dense
 * model has no expert bytes for it to move.
 */
START_TEST(test_expert_efficiency)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model def, cm;
	struct cost_calib cal;
	struct cost_breakdown b0, b;
	double pw, pe, act;

	qwen3_30b_a3b(&f);
	cost_calib_init(&cal);
	cal.eff_weights = (struct cost_term){ 0.9, "c.yaml:1" };
	init_cal(&def, &f.m, &g, &cal, 1, 0);
	ck_assert_double_eq(def.eff_experts.v, 0.9);
	ck_assert_str_eq(def.eff_experts.src, "c.yaml:1");
	one(&def, 1, 1023, &b0);
	ck_assert_double_eq(b0.experts, 8.0);

	cal.eff_experts = (struct cost_term){ 0.45, "c.yaml:2" };
	init_cal(&cm, &f.m, &g, &cal, 1, 0);
	one(&cm, 1, 1023, &b);
	pw = 3350.0 * 0.9;
	pe = 3350.0 * 0.45;
	act = b0.lin_memory_ns - cm.weight_bytes_fixed / pw -
	      8.0 * cm.expert_bytes / pw;
	assert_near(b.lin_memory_ns, cm.weight_bytes_fixed / pw +
		    8.0 * cm.expert_bytes / pe + act, 1e-12);
	/* the experts' part doubles, the rest stays */
	assert_near(b.lin_memory_ns - b0.lin_memory_ns,
		    8.0 * cm.expert_bytes / pw, 1e-9);
	ck_assert_double_eq(b.attn_memory_ns, b0.attn_memory_ns);
	ck_assert_double_eq(b.lin_compute_ns, b0.lin_compute_ns);
	ck_assert(b.total_ns > b0.total_ns);

	/* a dense model: nothing to move */
	llama8b(&f);
	init_cal(&cm, &f.m, &g, &cal, 1, 0);
	cal.eff_experts = (struct cost_term){ 0, NULL };
	init_cal(&def, &f.m, &g, &cal, 1, 0);
	ck_assert_int_eq(one(&cm, 1, 1023, &b), one(&def, 1, 1023, &b0));
}
END_TEST

/*
 * All-reduce latency by degree: allreduce_ns at 2 ranks plus
 * allreduce_rank_ns for each rank beyond.  Llama-3.1-8B at TP 4, one
 * token: 65 x (20 + 2 x 1.2 us + 1.5 x 8192 B / 369 B/ns).
 */
START_TEST(test_allreduce_degree)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model c2, c4, d4;
	struct cost_calib cal;
	struct cost_breakdown b2, b4, e4;
	struct cost_config cfg4 = cfg_tp(4);

	llama8b(&f);
	init_ok(&d4, &f.m, &g, &cfg4);
	one(&d4, 1, 100, &e4);
	assert_near(e4.allreduce_ns, 65 * (20000.0 + 1.5 * 8192.0 / 369.0),
		    1e-12);
	cost_calib_init(&cal);
	cal.allreduce_rank_ns = (struct cost_term){ 1200.0, "c.yaml:1" };
	init_cal(&c2, &f.m, &g, &cal, 2, 0);
	init_cal(&c4, &f.m, &g, &cal, 4, 0);
	one(&c2, 1, 100, &b2);
	one(&c4, 1, 100, &b4);
	/* two ranks: the 2-GPU latency alone */
	assert_near(b2.allreduce_ns, 65 * (20000.0 + 8192.0 / 369.0), 1e-12);
	assert_near(b4.allreduce_ns,
		    65 * (22400.0 + 1.5 * 8192.0 / 369.0), 1e-12);
	ck_assert_double_eq(b4.gpu_ns - b4.allreduce_ns,
			    e4.gpu_ns - e4.allreduce_ns);
}
END_TEST

/*
 * Fixed GPU time: gpu_step_ns once a forward pass, gpu_layer_ns a decoder
 * layer and gpu_seq_layer_ns a sequence an attention layer, added to the
 * roofline's GPU time and nothing else; 0 by default.  The decode sum of
 * the fast-forward takes them too.
 */
START_TEST(test_gpu_fixed)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model def, cm, c2;
	struct cost_calib cal;
	struct cost_breakdown b0, b, p0, p, t0, t;
	struct cat_mixer_seq pf = { .q = 2000, .ctx = 0 };
	struct cat_mixer_seq two[2] = { { .q = 1, .ctx = 500 },
					{ .q = 1, .ctx = 900 } };

	llama8b(&f);
	init_ok(&def, &f.m, &g, NULL);
	ck_assert_double_eq(def.gpu_step_ns.v, 0);
	ck_assert_double_eq(def.gpu_layer_ns.v, 0);
	one(&def, 1, 1023, &b0);
	ck_assert_double_eq(b0.fixed_ns, 0);
	cost_calib_init(&cal);
	cal.gpu_step_ns = (struct cost_term){ 300000.0, "c.yaml:1" };
	cal.gpu_layer_ns = (struct cost_term){ 25000.0, "c.yaml:2" };
	cal.gpu_seq_layer_ns = (struct cost_term){ 400.0, "c.yaml:3" };
	init_cal(&cm, &f.m, &g, &cal, 1, 0);
	one(&cm, 1, 1023, &b);
	/* 32 layers, all attention, one sequence */
	ck_assert_double_eq(b.fixed_ns, 300000.0 + 32 * 25000.0 + 32 * 400.0);
	ck_assert_double_eq(b.gpu_ns, b0.gpu_ns + b.fixed_ns);
	ck_assert_double_eq(b.lin_memory_ns, b0.lin_memory_ns);
	ck_assert_double_eq(b.attn_memory_ns, b0.attn_memory_ns);
	ck_assert_double_eq(b.cpu_ns, b0.cpu_ns);
	ck_assert_int_eq(b.total_ns, b0.total_ns + 1112800);
	/* a prefill pays it once too, not a token */
	cost_step_explain(&def, &(struct cost_batch){ &pf, 1 }, &p0);
	cost_step_explain(&cm, &(struct cost_batch){ &pf, 1 }, &p);
	ck_assert_double_eq(p.gpu_ns, p0.gpu_ns + 1112800.0);
	/* two sequences: the per-sequence part twice */
	cost_step_explain(&def, &(struct cost_batch){ two, 2 }, &t0);
	cost_step_explain(&cm, &(struct cost_batch){ two, 2 }, &t);
	ck_assert_double_eq(t.fixed_ns, 1100000.0 + 2 * 32 * 400.0);
	ck_assert_double_eq(t.gpu_ns, t0.gpu_ns + t.fixed_ns);
	decode_same(&cm, 7);
	init_cal(&c2, &f.m, &g, &cal, 2, 0);
	decode_same(&c2, 8);
}
END_TEST

/*
 * CPU: scheduling + input preparation.  Defaults: 500 us a step of
 * scheduling, 10 us a sequence of preparation.  The old names set the
 * same terms.
 */
START_TEST(test_cpu_split)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model def, cm;
	struct cost_calib cal;
	struct cat_mixer_seq s[3] = { { 1, 10 }, { 1, 20 }, { 5, 0 } };
	struct cost_batch batch = { s, 3 };
	struct cost_breakdown b0, b;

	llama8b(&f);
	init_ok(&def, &f.m, &g, NULL);
	cost_step_explain(&def, &batch, &b0);
	ck_assert_double_eq(b0.cpu_sched_ns, 500000.0);
	ck_assert_double_eq(b0.cpu_prep_ns, 30000.0);
	ck_assert_double_eq(b0.cpu_ns, b0.cpu_sched_ns + b0.cpu_prep_ns);

	/* each new term moves its own half by its own count */
	cost_calib_init(&cal);
	cal.cpu_sched_seq_ns = (struct cost_term){ 1000.0, "c.yaml:1" };
	cal.cpu_sched_token_ns = (struct cost_term){ 100.0, "c.yaml:2" };
	cal.cpu_prep_step_ns = (struct cost_term){ 7000.0, "c.yaml:3" };
	init_cal(&cm, &f.m, &g, &cal, 1, 0);
	cost_step_explain(&cm, &batch, &b);
	ck_assert_double_eq(b.cpu_sched_ns, 500000.0 + 3000.0 + 700.0);
	ck_assert_double_eq(b.cpu_prep_ns, 37000.0);
	ck_assert_double_eq(b.gpu_ns, b0.gpu_ns);
	ck_assert_int_eq(b.total_ns - b0.total_ns, 3000 + 700 + 7000);

	/* the old names are the new terms */
	cost_calib_init(&cal);
	cal.cpu_step_ns = (struct cost_term){ 1e6, "c.yaml:4" };
	cal.cpu_seq_ns = (struct cost_term){ 2e4, "c.yaml:5" };
	cal.cpu_token_ns = (struct cost_term){ 30.0, "c.yaml:6" };
	init_cal(&cm, &f.m, &g, &cal, 1, 0);
	ck_assert_str_eq(cm.cpu_sched_step_ns.src, "c.yaml:4");
	ck_assert_double_eq(cm.cpu_prep_seq_ns.v, 2e4);
	ck_assert_double_eq(cm.cpu_prep_token_ns.v, 30.0);
	cost_step_explain(&cm, &batch, &b);
	ck_assert_double_eq(b.cpu_sched_ns, 1e6);
	ck_assert_double_eq(b.cpu_prep_ns, 6e4 + 7 * 30.0);
}
END_TEST

/*
 * CUDA graphs (vLLM V1 FULL_AND_PIECEWISE): capture sizes 1, 2, 4, 8, 16,
 * ..., 248, 256, 272, ...; the largest min(2 max_num_seqs, 512, budget).
 */
START_TEST(test_graph_sizes)
{
	ck_assert_uint_eq(cost_graph_max(128, 8192), 256);
	ck_assert_uint_eq(cost_graph_max(128, 1024), 256);
	ck_assert_uint_eq(cost_graph_max(1024, 8192), 512);
	ck_assert_uint_eq(cost_graph_max(1024, 0), 512);
	ck_assert_uint_eq(cost_graph_max(150, 8192), 288);
	ck_assert_uint_eq(cost_graph_max(1024, 100), 96);
	ck_assert_uint_eq(cost_graph_max(1, 8192), 2);
	ck_assert_uint_eq(cost_graph_max(0, 8192), 0);
	ck_assert_uint_eq(cost_graph_pad(1, 256), 1);
	ck_assert_uint_eq(cost_graph_pad(3, 256), 4);
	ck_assert_uint_eq(cost_graph_pad(5, 256), 8);
	ck_assert_uint_eq(cost_graph_pad(9, 256), 16);
	ck_assert_uint_eq(cost_graph_pad(249, 512), 256);
	ck_assert_uint_eq(cost_graph_pad(257, 512), 272);
	ck_assert_uint_eq(cost_graph_pad(257, 256), 257);	/* no graph */
	ck_assert_uint_eq(cost_graph_pad(3, 0), 3);
}
END_TEST

/*
 * Llama-3.1-8B with graphs up to 256 tokens: 3 decodes run one full graph
 * padded to 4 tokens; a prefill of 100 with 2 decodes runs piecewise,
 * padded to 104, with a launch floor of 32 attention layers x 15 us; 600
 * tokens run without a graph, floor 32 layers x 50 us.  Both floors are
 * below the 6.2 ms weight read; an eager launch of 1 ms a layer is not.
 */
START_TEST(test_graph_steps)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model off, on, slow;
	struct cost_calib cal;
	struct cat_mixer_seq dec[3] = { { 1, 10 }, { 1, 20 }, { 1, 30 } };
	struct cat_mixer_seq mix[3] = { { 100, 0 }, { 1, 20 }, { 1, 30 } };
	struct cost_breakdown a, b;

	llama8b(&f);
	init_ok(&off, &f.m, &g, NULL);
	init_cal(&on, &f.m, &g, NULL, 1, cost_graph_max(128, 8192));
	ck_assert_uint_eq(on.graph_max, 256);
	/* a capture size is kept; a size between two is rounded down */
	init_cal(&slow, &f.m, &g, NULL, 1, 300);
	ck_assert_uint_eq(slow.graph_max, 288);

	cost_step_explain(&off, &(struct cost_batch){ dec, 3 }, &a);
	cost_step_explain(&on, &(struct cost_batch){ dec, 3 }, &b);
	ck_assert_int_eq(a.graph, COST_GRAPH_OFF);
	ck_assert_uint_eq(a.graph_tokens, 3);
	ck_assert_int_eq(b.graph, COST_GRAPH_FULL);
	ck_assert_uint_eq(b.graph_tokens, 4);
	ck_assert_double_eq(b.launch_ns, 0.0);
	assert_near(b.lin_flops - a.lin_flops, on.flops_token, 1e-9);
	ck_assert_double_eq(b.attn_bytes, a.attn_bytes);
	ck_assert(b.total_ns >= a.total_ns);

	cost_step_explain(&on, &(struct cost_batch){ mix, 3 }, &b);
	ck_assert_int_eq(b.graph, COST_GRAPH_PIECEWISE);
	ck_assert_uint_eq(b.graph_tokens, 104);
	ck_assert_double_eq(b.launch_ns, 32 * 15000.0);
	ck_assert(b.gpu_ns > b.launch_ns);

	ck_assert_int_eq(one(&on, 600, 0, &b), one(&off, 600, 0, &a));
	ck_assert_int_eq(b.graph, COST_GRAPH_EAGER);
	ck_assert_uint_eq(b.graph_tokens, 600);
	ck_assert_double_eq(b.launch_ns, 32 * 50000.0);

	/* a launch floor above the GPU work is the GPU time */
	cost_calib_init(&cal);
	cal.graph_eager_layer_ns = (struct cost_term){ 1e6, "c.yaml:1" };
	init_cal(&slow, &f.m, &g, &cal, 1, 256);
	one(&slow, 600, 0, &b);
	ck_assert_double_eq(b.gpu_ns, 32e6);
	ck_assert_int_eq(b.total_ns, 32000000 + 500000 + 10000);
	/* and it does not touch a decode step under a full graph */
	ck_assert_int_eq(cost_step_ns(&slow, &(struct cost_batch){ dec, 3 }),
			 cost_step_ns(&on, &(struct cost_batch){ dec, 3 }));
}
END_TEST

/* cost_describe prints every split term with its source. */
START_TEST(test_describe_split)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model cm;
	struct cost_calib cal;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;
	static const char *const want[] = {
		"eff.weights", "eff.kv_read", "eff.attn_compute",
		"allreduce a rank > 2", "NVIDIA/nccl#1334",
		"cpu sched per step", "cpu sched per seq",
		"cpu sched per token",
		"cpu prep per step", "cpu prep per seq", "cpu prep per token",
		"graph piecewise layer", "graph eager layer", "S16",
		"c.yaml:7", "CUDA graphs up to 256 tokens",
	};

	llama8b(&f);
	cost_calib_init(&cal);
	cal.eff_kv_read = (struct cost_term){ 0.5, "c.yaml:7" };
	init_cal(&cm, &f.m, &g, &cal, 1, 256);
	out = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(out);
	cost_describe(&cm, out);
	fclose(out);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_msg(strstr(buf, want[i]) != NULL, "no '%s'", want[i]);
	ck_assert(strstr(buf, "(null)") == NULL);
	free(buf);
}
END_TEST

/* ---- the calibration file: the split terms by name --------------------- */

/* Write text to a temporary file; its path in path. */
static void
write_tmp(char *path, size_t len, const char *text)
{
	FILE *f;
	int fd;

	snprintf(path, len, "%s/check_cost.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* Load text; KV_OK or the error in err. */
static kv_err
load_text(const char *text, struct cost_calib *c, char *err, size_t errlen,
	  char *path, size_t plen)
{
	kv_err rc;

	write_tmp(path, plen, text);
	rc = cost_calib_load(path, c, err, errlen);
	unlink(path);
	return rc;
}

START_TEST(test_calib_file_terms)
{
	static const char good[] =
		"eff_weights: 0.8\n"
		"eff_kv_read: {value: 0.6, source: fit}\n"
		"eff_attn_compute: 0.5\n"
		"allreduce_rank_ns: 1200\n"
		"cpu_sched_seq_ns: 100\n"
		"cpu_sched_token_ns: 1\n"
		"cpu_prep_step_ns: 2000\n"
		"cpu_prep_seq_ns: 3000\n"
		"cpu_prep_token_ns: 4\n"
		"graph_piecewise_layer_ns: 10000\n"
		"graph_eager_layer_ns: 40000\n"
		"gpu_step_ns: 250000\n"
		"gpu_layer_ns: {value: 30000, source: fit}\n"
		"gpu_seq_layer_ns: 350\n"
		"cpu_step_ns: 600000\n"
		"eff_kv_read_gqa: 0.45\n"
		"eff_experts: {value: 0.55, source: fused MoE}\n";
	static const char old[] =
		"eff_memory: 0.8\ncpu_step_ns: 1\ncpu_seq_ns: 2\n"
		"cpu_token_ns: 3\nallreduce_ns: 4\n";
	struct cost_calib c;
	char err[1024], path[256], want[512];

	ck_assert_int_eq(load_text(good, &c, err, sizeof(err), path,
				   sizeof(path)), KV_OK);
	ck_assert_double_eq(c.eff_weights.v, 0.8);
	ck_assert(strstr(c.eff_kv_read.src, "fit (") == c.eff_kv_read.src);
	ck_assert_double_eq(c.eff_attn_compute.v, 0.5);
	ck_assert_double_eq(c.allreduce_rank_ns.v, 1200);
	ck_assert_double_eq(c.cpu_sched_seq_ns.v, 100);
	ck_assert_double_eq(c.cpu_sched_token_ns.v, 1);
	ck_assert_double_eq(c.cpu_prep_step_ns.v, 2000);
	ck_assert_double_eq(c.cpu_prep_seq_ns.v, 3000);
	ck_assert_double_eq(c.cpu_prep_token_ns.v, 4);
	ck_assert_double_eq(c.graph_piecewise_layer_ns.v, 10000);
	ck_assert_double_eq(c.graph_eager_layer_ns.v, 40000);
	ck_assert_double_eq(c.gpu_step_ns.v, 250000);
	ck_assert_double_eq(c.gpu_layer_ns.v, 30000);
	ck_assert(strstr(c.gpu_layer_ns.src, "fit (") == c.gpu_layer_ns.src);
	ck_assert_double_eq(c.gpu_seq_layer_ns.v, 350);
	ck_assert_double_eq(c.cpu_sched_step_ns.v, 600000);
	snprintf(want, sizeof(want), "%s:15", path);
	ck_assert_str_eq(c.cpu_sched_step_ns.src, want);
	ck_assert_double_eq(c.eff_kv_read_gqa.v, 0.45);
	ck_assert_double_eq(c.eff_experts.v, 0.55);
	ck_assert(strstr(c.eff_experts.src, "fused MoE (") == c.eff_experts.src);
	ck_assert(c.eff_memory.src == NULL);
	cost_calib_release(&c);

	/* the old keys load as before, into the terms they name */
	ck_assert_int_eq(load_text(old, &c, err, sizeof(err), path,
				   sizeof(path)), KV_OK);
	ck_assert_double_eq(c.cpu_sched_step_ns.v, 1);
	ck_assert_double_eq(c.cpu_prep_seq_ns.v, 2);
	ck_assert_double_eq(c.cpu_prep_token_ns.v, 3);
	ck_assert_double_eq(c.allreduce_ns.v, 4);
	ck_assert(c.eff_weights.src == NULL);	/* follows eff_memory */
	cost_calib_release(&c);
}
END_TEST

START_TEST(test_calib_file_bad)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "eff_kv_read: 1.5\n", ":1:14: eff_kv_read: an efficiency "
		  "must be in (0, 1]" },
		{ "eff_weights: 0\n", ":1:14: eff_weights: an efficiency" },
		{ "eff_kv_read_gqa: 2\n", ":1:18: eff_kv_read_gqa: an "
		  "efficiency must be in (0, 1]" },
		{ "eff_attn_compute: x\n", ":1:19: eff_attn_compute: "
		  "expected a number, got 'x'" },
		{ "allreduce_rank_ns: -1\n", ":1:20: allreduce_rank_ns: "
		  "expected a number in [0, 1e12]" },
		{ "cpu_prep_step_ns: 2e12\n", ":1:19: cpu_prep_step_ns: "
		  "expected a number in [0, 1e12]" },
		{ "graph_eager_layer_ns: [1]\n", ":1:23: "
		  "graph_eager_layer_ns: expected a number" },
		{ "gpu_layer_ns: -5\n", ":1:15: gpu_layer_ns: "
		  "expected a number in [0, 1e12]" },
		{ "eff_memory: 0.5\ncpu_seq_ns: 1\ncpu_prep_seq_ns: 2\n",
		  ":3:1: cpu_prep_seq_ns: the same term as 'cpu_seq_ns'" },
		{ "cpu_sched_step_ns: 2\ncpu_step_ns: 1\n",
		  ":2:1: cpu_step_ns: the same term as 'cpu_sched_step_ns'" },
		{ "eff_kv: 0.5\n", ":1:1: unknown key 'eff_kv' (eff_compute, "
		  "eff_memory, eff_interconnect, allreduce_ns, cpu_step_ns, "
		  "cpu_seq_ns, cpu_token_ns, eff_weights, eff_kv_read, "
		  "eff_attn_compute, allreduce_rank_ns, cpu_sched_step_ns, " },
	};
	struct cost_calib c;
	char err[1024], path[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(load_text(bad[i].text, &c, err, sizeof(err),
					   path, sizeof(path)), KV_EINVAL);
		ck_assert_msg(strncmp(err, path, strlen(path)) == 0 &&
			      strstr(err, bad[i].want) ==
				      err + strlen(path),
			      "case %zu: %s", i, err);
		/* a failed load keeps nothing */
		ck_assert(c.eff_memory.src == NULL);
		ck_assert(c.cpu_seq_ns.src == NULL);
	}
}
END_TEST

/*
 * The API server's terms (docs/cost-model.md §5.5): 0 without one, vLLM's
 * defaults with one, a calibration's value over either; described with
 * their sources.
 */
START_TEST(test_frontend_terms)
{
	struct fixture f;
	struct cat_gpu g = h100();
	struct cost_model cm;
	struct cost_calib cal;
	struct cost_config cfg;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	llama8b(&f);
	cost_config_init(&cfg);
	init_ok(&cm, &f.m, &g, &cfg);
	ck_assert_double_eq(cm.frontend_request_ns.v, 0.0);
	ck_assert_double_eq(cm.frontend_tokenize_ns.v, 0.0);
	ck_assert_double_eq(cm.frontend_stream_ns.v, 0.0);
	ck_assert(strstr(cm.frontend_stream_ns.src, "no API server") != NULL);
	ck_assert_int_eq(cost_frontend_in_ns(&cm, 1000), 0);
	cfg.frontend = true;
	init_ok(&cm, &f.m, &g, &cfg);
	ck_assert_double_eq(cm.frontend_request_ns.v, 1e6);
	ck_assert_double_eq(cm.frontend_tokenize_ns.v, 1100.0);
	ck_assert_double_eq(cm.frontend_stream_ns.v, 25000.0);
	ck_assert_int_eq(cost_frontend_in_ns(&cm, 1000), 2100000);
	ck_assert_int_eq(cost_frontend_out_ns(&cm), 25000);
	out = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(out);
	cost_describe(&cm, out);
	fclose(out);
	ck_assert(strstr(buf, "frontend stream") != NULL);
	ck_assert(strstr(buf, "PR #12287") != NULL);
	free(buf);
	/* a calibration wins, with or without an API server by default */
	cost_calib_init(&cal);
	cal.frontend_stream_ns = (struct cost_term){ 7000.0, "c.yaml:2" };
	cfg.calib = &cal;
	init_ok(&cm, &f.m, &g, &cfg);
	ck_assert_int_eq(cost_frontend_out_ns(&cm), 7000);
	ck_assert_str_eq(cm.frontend_stream_ns.src, "c.yaml:2");
	ck_assert_double_eq(cm.frontend_request_ns.v, 1e6);
	cfg.frontend = false;
	init_ok(&cm, &f.m, &g, &cfg);
	ck_assert_int_eq(cost_frontend_out_ns(&cm), 7000);
	ck_assert_int_eq(cost_frontend_in_ns(&cm, 1000), 0);
}
END_TEST

static Suite *
cost_suite(void)
{
	Suite *s = suite_create("cost");
	TCase *tc = tcase_create("cost");

	tcase_add_test(tc, test_decode_roofline_llama8b);
	tcase_add_test(tc, test_prefill_crossover);
	tcase_add_test(tc, test_monotone);
	tcase_add_test(tc, test_tensor_parallel);
	tcase_add_test(tc, test_swap);
	tcase_add_test(tc, test_determinism);
	tcase_add_test(tc, test_moe);
	tcase_add_test(tc, test_mla);
	tcase_add_test(tc, test_window_and_state);
	tcase_add_test(tc, test_calibration_and_describe);
	tcase_add_test(tc, test_calib_by_name);
	tcase_add_test(tc, test_frontend_terms);
	tcase_add_test(tc, test_split_efficiencies);
	tcase_add_test(tc, test_expert_efficiency);
	tcase_add_test(tc, test_allreduce_degree);
	tcase_add_test(tc, test_cpu_split);
	tcase_add_test(tc, test_gpu_fixed);
	tcase_add_test(tc, test_graph_sizes);
	tcase_add_test(tc, test_graph_steps);
	tcase_add_test(tc, test_describe_split);
	tcase_add_test(tc, test_calib_file_terms);
	tcase_add_test(tc, test_calib_file_bad);
	tcase_add_test(tc, test_decode_sum);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(cost_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
