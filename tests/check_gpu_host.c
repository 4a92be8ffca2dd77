/*
 * check_gpu_host.c -- the host backend and the verifier (gpu/).
 *
 * Layouts map every word of a pool exactly once; fill/verify/poison/scan
 * and the digest mean what kvgpu.h says; every copy strategy moves whole
 * blocks in every layout; dependent batches are refused; and full runs of
 * every scheduler policy, with swap and recompute preemption and prefix
 * caching, execute on the host backend with zero integrity failures and
 * an exact fragmentation count, hybrid models (state, sliding and full
 * groups) included.
 */
#include "gpu/kvdrive.h"
#include "gpu/kv_layout.h"
#include "gpu/kvgpu_int.h"	/* white-box: kvgpu_check() */

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct kvgpu_geom
geom(enum kvgpu_layout l, uint32_t dev, uint32_t host)
{
	struct kvgpu_geom g = {
		.layers = 3, .kv_heads = 2, .head_dim = 4, .dtype_bytes = 2,
		.block_size = 4, .layout = l, .dev_blocks = dev,
		.host_blocks = host, .hostmem = KVGPU_PINNED,
	};
	return g;
}

static kvgpu *
open_host(const struct kvgpu_geom *g)
{
	char why[256];
	kv_err e;
	kvgpu *b = kvgpu_open("host", g, &e, why, sizeof(why));

	ck_assert_msg(b != NULL, "%s", why);
	return b;
}

/* Every (block, layer, K/V, slot, word) has its own word, and chunks are
 * contiguous runs of the block's words. */
START_TEST(layout_bijection)
{
	struct kvgpu_geom g = geom((enum kvgpu_layout)_i, 5, 0);
	struct kvgpu_lay y = { (uint32_t)_i, g.layers, g.block_size,
			       (uint32_t)(kvgpu_slot_bytes(&g) / 4), 5 };
	uint64_t total = 5 * kvgpu_block_bytes(&g) / 4;
	uint8_t *seen = calloc(total, 1);
	static const uint32_t chunks[] = { 6, 3, 3, 1 };

	ck_assert_uint_eq(kvgpu_chunks(&g), chunks[_i]);
	ck_assert_uint_eq(kvgpu_lay_chunks(&y), chunks[_i]);
	ck_assert_uint_eq(kvgpu_chunk_bytes(&g) * kvgpu_chunks(&g),
			  kvgpu_block_bytes(&g));
	for (uint32_t b = 0; b < 5; b++) {
		uint64_t in_chunks = 0;

		for (uint32_t l = 0; l < g.layers; l++)
			for (uint32_t kv = 0; kv < 2; kv++)
				for (uint32_t t = 0; t < g.block_size; t++)
					for (uint32_t w = 0; w < y.tw; w++) {
						uint64_t o = kvgpu_word_at(
							&y, b, l, kv, t, w);

						ck_assert_uint_lt(o, total);
						ck_assert_uint_eq(seen[o], 0);
						seen[o] = 1;
					}
		/* the block's words are exactly its chunks' words */
		for (uint32_t c = 0; c < kvgpu_lay_chunks(&y); c++) {
			uint64_t o = kvgpu_chunk_at(&y, b, c);

			for (uint64_t k = 0; k < kvgpu_lay_chunk_words(&y); k++)
				in_chunks += seen[o + k] == 1;
			for (uint64_t k = 0; k < kvgpu_lay_chunk_words(&y); k++)
				seen[o + k] = 2;
		}
		ck_assert_uint_eq(in_chunks, kvgpu_block_bytes(&g) / 4);
	}
	free(seen);
}
END_TEST

static void
slots_of(struct kvgpu_slot *s, int32_t block, uint32_t n, uint64_t key,
	 uint32_t pos0)
{
	for (uint32_t i = 0; i < n; i++)
		s[i] = (struct kvgpu_slot){ .block = block, .slot = i,
					    .pos = pos0 + i,
					    .key = key + i };
}

START_TEST(fill_verify_poison)
{
	struct kvgpu_geom g = geom(KVGPU_FA_SPLIT, 4, 2);
	kvgpu *b = open_host(&g);
	struct kvgpu_slot s[4];
	struct kvgpu_verdict d;
	int32_t all[4] = { 0, 1, 2, 3 };
	uint64_t n;

	/* a fresh pool is poison everywhere */
	ck_assert_int_eq(kvgpu_scan_poison(b, KVGPU_DEV, all, 4, &n), KV_OK);
	ck_assert_uint_eq(n, 16);
	slots_of(s, 2, 3, 0x1234567, 40);
	ck_assert_int_eq(kvgpu_fill(b, KVGPU_DEV, s, 3), KV_OK);
	ck_assert_int_eq(kvgpu_verify(b, KVGPU_DEV, s, 3, &d), KV_OK);
	ck_assert_uint_eq(d.words, 3 * 3 * 2 * 4);
	ck_assert_uint_eq(d.mismatches, 0);
	ck_assert_int_eq(kvgpu_scan_poison(b, KVGPU_DEV, all, 4, &n), KV_OK);
	ck_assert_uint_eq(n, 13);
	/* the wrong key, the wrong position, the wrong block all fail */
	s[1].key ^= 1;
	ck_assert_int_eq(kvgpu_verify(b, KVGPU_DEV, s, 3, &d), KV_OK);
	ck_assert_uint_eq(d.mismatches, 3 * 2 * 4);
	ck_assert_int_eq(d.first, 1);
	s[1].key ^= 1;
	s[2].pos++;
	ck_assert_int_eq(kvgpu_verify(b, KVGPU_DEV, s, 3, &d), KV_OK);
	ck_assert_int_eq(d.first, 2);
	s[2].pos--;
	s[0].block = 1;
	ck_assert_int_eq(kvgpu_verify(b, KVGPU_DEV, s, 1, &d), KV_OK);
	ck_assert_uint_eq(d.mismatches, 24);
	ck_assert_uint_eq(d.got, KVGPU_POISON);
	/* poisoning the block brings every slot back */
	ck_assert_int_eq(kvgpu_poison(b, KVGPU_DEV, all + 2, 1), KV_OK);
	ck_assert_int_eq(kvgpu_scan_poison(b, KVGPU_DEV, all, 4, &n), KV_OK);
	ck_assert_uint_eq(n, 16);
	/* bad arguments */
	s[0].block = 4;
	ck_assert_int_eq(kvgpu_fill(b, KVGPU_DEV, s, 1), KV_EINVAL);
	s[0].block = 0;
	s[0].slot = 4;
	ck_assert_int_eq(kvgpu_verify(b, KVGPU_DEV, s, 1, &d), KV_EINVAL);
	ck_assert_int_eq(kvgpu_poison(b, KVGPU_HOST, all + 2, 1), KV_EINVAL);
	kvgpu_close(b);
}
END_TEST

/* Every strategy, every layout: D2H, H2D and D2D move whole blocks. */
START_TEST(copy_round_trip)
{
	enum kvgpu_layout l = (enum kvgpu_layout)(_i / KVGPU_NSTRATS);
	enum kvgpu_strat st = (enum kvgpu_strat)(_i % KVGPU_NSTRATS);
	struct kvgpu_geom g = geom(l, 6, 5);
	kvgpu *b = open_host(&g);
	struct kvgpu_slot s[8], h[8];
	struct kvgpu_pair out[2] = { { 1, 4 }, { 3, 0 } };
	struct kvgpu_pair in[2] = { { 4, 5 }, { 0, 2 } };
	struct kvgpu_pair cow[1] = { { 5, 1 } };
	struct kvgpu_verdict d;
	struct kvgpu_timing t;
	int32_t two[2] = { 1, 3 };

	slots_of(s, 1, 4, 77, 0);
	slots_of(s + 4, 3, 4, 99, 4);
	ck_assert_int_eq(kvgpu_fill(b, KVGPU_DEV, s, 8), KV_OK);
	ck_assert_int_eq(kvgpu_copy(b, KVGPU_D2H, st, out, 2, &t), KV_OK);
	ck_assert_int_ge(t.dev_ns, 0);
	memcpy(h, s, sizeof(h));
	for (int i = 0; i < 8; i++)
		h[i].block = i < 4 ? 4 : 0;
	ck_assert_int_eq(kvgpu_verify(b, KVGPU_HOST, h, 8, &d), KV_OK);
	ck_assert_uint_eq(d.mismatches, 0);
	ck_assert_int_eq(kvgpu_poison(b, KVGPU_DEV, two, 2), KV_OK);
	ck_assert_int_eq(kvgpu_copy(b, KVGPU_H2D, st, in, 2, NULL), KV_OK);
	for (int i = 0; i < 8; i++)
		s[i].block = i < 4 ? 5 : 2;
	ck_assert_int_eq(kvgpu_verify(b, KVGPU_DEV, s, 8, &d), KV_OK);
	ck_assert_uint_eq(d.mismatches, 0);
	ck_assert_int_eq(kvgpu_check(b), 0);
	ck_assert_int_eq(kvgpu_copy(b, KVGPU_D2D, st, cow, 1, NULL), KV_OK);
	ck_assert_int_eq(kvgpu_check(b), 0);
	for (int i = 0; i < 4; i++)
		s[i].block = 1;
	ck_assert_int_eq(kvgpu_verify(b, KVGPU_DEV, s, 8, &d), KV_OK);
	ck_assert_uint_eq(d.mismatches, 0);
	kvgpu_close(b);
}
END_TEST

/* kvgpu_check() holds on open handles, after a refused batch, and names
 * each invariant broken by hand. */
START_TEST(check_invariants)
{
	struct kvgpu_geom g = geom(KVGPU_FI_FUSED, 6, 5);
	struct kvgpu_pair dep[2] = { { 1, 2 }, { 3, 2 } };
	struct kvgpu_pair out[1] = { { 1, 4 } };
	const struct kvgpu_ops *ops;
	struct kvgpu_ops broken;
	char why[256], name[64];
	uint32_t **pools, *pool1;
	kvgpu *b = open_host(&g), *f, *in;
	kv_err e;
	void *impl;

	ck_assert_int_eq(kvgpu_check(b), 0);
	/* a refused dependent batch leaves the scratch clear */
	ck_assert_int_eq(kvgpu_copy(b, KVGPU_D2D, KVGPU_PER_CHUNK, dep, 2,
				    NULL), KV_EINVAL);
	ck_assert_int_eq(kvgpu_check(b), 0);

	ops = b->ops;
	broken = *ops;
	broken.poke = NULL;
	b->ops = &broken;
	ck_assert_int_eq(kvgpu_check(b), 1);
	b->ops = ops;
	b->geom.dtype_bytes = 3;	/* 2 * 4 * 3 bytes: not whole words */
	b->geom.kv_heads = 1;
	b->geom.head_dim = 1;
	ck_assert_int_eq(kvgpu_check(b), 2);
	b->geom = g;
	b->lay[KVGPU_HOST].nb++;
	ck_assert_int_eq(kvgpu_check(b), 3);
	b->lay[KVGPU_HOST].nb--;
	memcpy(name, b->name, sizeof(name));
	snprintf(b->name, sizeof(b->name), "hostile");
	ck_assert_int_eq(kvgpu_check(b), 4);
	memcpy(b->name, name, sizeof(name));
	b->mark[3] = 1;
	ck_assert_int_eq(kvgpu_check(b), 5);
	b->mark[3] = 0;
	impl = b->impl;
	b->impl = NULL;
	ck_assert_int_eq(kvgpu_check(b), 6);
	b->impl = impl;
	pools = impl;	/* struct host starts with its two pools */
	pool1 = pools[1];
	pools[1] = NULL;
	ck_assert_int_eq(kvgpu_check(b), 10);
	pools[1] = pool1;
	ck_assert_int_eq(kvgpu_check(b), 0);
	kvgpu_close(b);

	/* fault: the wrapper holds an invert batch and stays sound; a broken
	 * wrapped handle shows as the wrapper's own invariant 20 */
	f = kvgpu_open("fault:invert", &g, &e, why, sizeof(why));
	ck_assert_msg(f != NULL, "%s", why);
	ck_assert_int_eq(kvgpu_copy(f, KVGPU_D2H, KVGPU_PER_CHUNK, out, 1,
				    NULL), KV_OK);
	ck_assert_int_eq(kvgpu_check(f), 0);
	in = *(kvgpu **)f->impl;	/* struct fault starts with it */
	in->lay[KVGPU_DEV].bs++;
	ck_assert_int_eq(kvgpu_check(in), 3);
	ck_assert_int_eq(kvgpu_check(f), 20);
	in->lay[KVGPU_DEV].bs--;
	in->geom.host_blocks++;
	in->lay[KVGPU_HOST].nb++;
	ck_assert_int_eq(kvgpu_check(in), 0);
	ck_assert_int_eq(kvgpu_check(f), 21);
	in->geom.host_blocks--;
	in->lay[KVGPU_HOST].nb--;
	ck_assert_int_eq(kvgpu_check(f), 0);
	kvgpu_close(f);
}
END_TEST

START_TEST(batches_independent)
{
	struct kvgpu_geom g = geom(KVGPU_FI_FUSED, 6, 5);
	kvgpu *b = open_host(&g);
	struct kvgpu_pair dup[2] = { { 1, 4 }, { 3, 4 } };
	struct kvgpu_pair chain[2] = { { 1, 2 }, { 2, 3 } };
	struct kvgpu_pair ok[2] = { { 1, 2 }, { 3, 4 } };
	struct kvgpu_pair far[1] = { { 1, 5 } };

	ck_assert_int_eq(kvgpu_copy(b, KVGPU_D2H, KVGPU_BATCH, dup, 2, NULL),
			 KV_EINVAL);
	ck_assert_ptr_nonnull(strstr(kvgpu_errmsg(b), "independent"));
	ck_assert_int_eq(kvgpu_copy(b, KVGPU_D2D, KVGPU_BATCH, chain, 2, NULL),
			 KV_EINVAL);
	ck_assert_int_eq(kvgpu_copy(b, KVGPU_D2D, KVGPU_BATCH, ok, 2, NULL),
			 KV_OK);
	/* the same pair across two pools is fine: 1 -> 2, 2 -> 3 is D2H */
	ck_assert_int_eq(kvgpu_copy(b, KVGPU_D2H, KVGPU_BATCH, chain, 2, NULL),
			 KV_OK);
	ck_assert_int_eq(kvgpu_copy(b, KVGPU_D2H, KVGPU_BATCH, far, 1, NULL),
			 KV_EINVAL);
	ck_assert_int_eq(kvgpu_copy(b, KVGPU_H2D, KVGPU_BATCH, far, 1, NULL),
			 KV_OK);
	kvgpu_close(b);
}
END_TEST

/* The digest reads whole blocks in logical order: equal contents give
 * equal digests in every layout; one flipped bit changes it. */
START_TEST(digest_layout_free)
{
	uint64_t dg[KVGPU_NLAYOUTS], flipped;
	int32_t blocks[2] = { 2, 0 };

	for (int l = 0; l < KVGPU_NLAYOUTS; l++) {
		struct kvgpu_geom g = geom((enum kvgpu_layout)l, 3, 0);
		kvgpu *b = open_host(&g);
		struct kvgpu_slot s[4];

		slots_of(s, 2, 3, 5, 9);
		slots_of(s + 3, 0, 1, 6, 0);
		ck_assert_int_eq(kvgpu_fill(b, KVGPU_DEV, s, 4), KV_OK);
		ck_assert_int_eq(kvgpu_digest(b, KVGPU_DEV, blocks, 2, &dg[l]),
				 KV_OK);
		ck_assert_uint_eq(dg[l], dg[0]);
		s[3].key = 7;
		ck_assert_int_eq(kvgpu_fill(b, KVGPU_DEV, s + 3, 1), KV_OK);
		ck_assert_int_eq(kvgpu_digest(b, KVGPU_DEV, blocks, 2,
					      &flipped), KV_OK);
		ck_assert_uint_ne(flipped, dg[0]);
		kvgpu_close(b);
	}
}
END_TEST

START_TEST(open_errors)
{
	struct kvgpu_geom g = geom(KVGPU_FA_SPLIT, 3, 0);
	char why[256];
	kv_err e;

	ck_assert_ptr_null(kvgpu_open("tpu", &g, &e, why, sizeof(why)));
	ck_assert_int_eq(e, KV_EINVAL);
	ck_assert_ptr_null(kvgpu_open("fault:melt", &g, &e, why,
				      sizeof(why)));
	ck_assert_ptr_nonnull(strstr(why, "melt"));
	g.head_dim = 3;
	g.dtype_bytes = 1;
	g.kv_heads = 1;
	ck_assert_ptr_null(kvgpu_open("host", &g, &e, why, sizeof(why)));
	ck_assert_ptr_nonnull(strstr(why, "32-bit"));
}
END_TEST

/* ---- full runs -------------------------------------------------------- */

static const char *const policies[] = {
	"vllm-v0", "vllm-v1", "sarathi", "deepspeed-fastgen", "kvsim"
};

struct run {
	struct kvdrive_result r;
	struct kvval_stats s;
	int rc;
	bool refused;
	char why[512];
};

static void
run(struct run *out, const struct kvdrive_opts *o, const char *backend,
    enum kvgpu_layout layout)
{
	struct kvgpu_geom g = geom(layout, 0, 0);
	struct kvval_opts vo = { KVGPU_BATCH, 4, 3, false, true };
	struct kvval_pool pool;
	kvgpu *b;
	kvval *v;
	kv_err e;

	/* the pool follows the mode the policy puts the allocator in */
	kvdrive_pool(o, &pool);
	g.block_size = pool.block_size;
	g.dev_blocks = pool.dev_blocks;
	g.host_blocks = pool.host_blocks;
	b = kvgpu_open(backend, &g, &e, out->why, sizeof(out->why));
	ck_assert_msg(b != NULL, "%s", out->why);
	v = kvval_new(b, &vo);
	ck_assert_ptr_nonnull(v);
	out->rc = kvdrive_run(o, v, &out->r, &out->refused, out->why,
			      sizeof(out->why));
	out->s = *kvval_stats(v);
	kvval_free(v);
	kvgpu_close(b);
}

START_TEST(every_policy)
{
	const char *pol = policies[_i / 4];
	struct kvdrive_opts o;
	struct run R;

	kvdrive_opts_init(&o);
	o.policy = pol;
	o.preemption = (_i / 2) % 2;
	o.prefix_caching = _i % 2;
	run(&R, &o, "host", KVGPU_FA_SPLIT);
	if (R.refused) {
		/* a policy without swap (vLLM v1, FastGen) or prefix caching
		 * (FastGen) says so; the rest must run */
		ck_assert_msg(o.preemption == 1 || o.prefix_caching,
			      "%s refused: %s", pol, R.why);
		return;
	}
	ck_assert_msg(R.rc == 0, "%s: %s", pol, R.why);
	ck_assert_uint_eq(R.r.finished, o.requests);
	ck_assert_msg(R.s.failures == 0, "%s swap=%d prefix=%d: %s", pol,
		      o.preemption, o.prefix_caching, R.s.first_failure);
	ck_assert_uint_gt(R.r.preemptions, 0);	/* the pool is tight */
	ck_assert_uint_gt(R.s.verified_slots, 0);
	ck_assert_uint_ge(R.s.full_checks, o.requests);	/* every finish */
	ck_assert_uint_gt(R.s.frag_scans, 0);
	ck_assert_uint_eq(R.s.frag_poison_slots, R.s.frag_expected_slots);
	if (o.preemption == 1) {
		ck_assert_uint_gt(R.r.swap_out_blocks, 0);
		ck_assert_uint_eq(R.s.cls[KVGPU_D2H].blocks +
				  R.s.cls[KVGPU_H2D].blocks + R.s.dup_dsts,
				  R.r.swap_out_blocks + R.r.swap_in_blocks);
		ck_assert_uint_gt(R.s.preempt_swap, 0);
	} else {
		ck_assert_uint_gt(R.s.preempt_recompute, 0);
	}
}
END_TEST

/*
 * A step that schedules nothing (a P/D decode replica's step that only
 * allocates blocks for KV loads) comes with no start array: the hooks
 * take it, with and without skip_stale (they said "out of memory").
 */
START_TEST(empty_step)
{
	struct kvdrive_opts o;
	struct kvs_config sc;
	struct kvc_config kc;
	struct kvval_pool pool;
	struct kvval_opts vo = { KVGPU_PER_CHUNK, 1, 0, _i == 1, true };
	struct kvs_step st;
	struct kvgpu_geom g;
	char why[256];
	kv_err e;
	kvgpu *b;
	kvval *v;
	kvs *s;

	kvdrive_opts_init(&o);
	o.policy = "vllm-v1";
	kvs_config_init(&sc);
	snprintf(sc.policy, sizeof(sc.policy), "%s", o.policy);
	kvdrive_kvc_config(&o, &kc);
	kvdrive_pool(&o, &pool);
	s = kvs_new(&sc, &kc, &e, why, sizeof(why));
	ck_assert_msg(s != NULL, "%s", why);
	g = geom(KVGPU_FA_SPLIT, pool.dev_blocks, pool.host_blocks);
	g.block_size = pool.block_size;
	b = open_host(&g);
	v = kvval_new(b, &vo);
	ck_assert_ptr_nonnull(v);
	memset(&st, 0, sizeof(st));
	why[0] = '\0';
	ck_assert_msg(kvval_scheduled(v, s, &st, NULL, why, sizeof(why)) == 0,
		      "%s", why);
	ck_assert_msg(kvval_computed(v, s, &st, NULL, why, sizeof(why)) == 0,
		      "%s", why);
	ck_assert_msg(kvval_completed(v, s, &st, why, sizeof(why)) == 0,
		      "%s", why);
	ck_assert_uint_eq(kvval_stats(v)->failures, 0);
	kvval_free(v);
	kvgpu_close(b);
	kvs_free(s);
}
END_TEST

/*
 * A vllm-v1 run with a CPU tier (kvdrive offload: a native tier over the
 * scheduler) on a pool too small for its shared prefixes: prefixes are
 * stored and loaded back, every move is run on the backend's tier pool
 * and checked (0 failures), the blocks checked agree with the blocks the
 * manager moved, and the run's own checks still pass.  Offloaded blocks
 * of one and of two GPU blocks.
 */
START_TEST(offload_run)
{
	struct kvdrive_opts o;
	struct run R;

	kvdrive_opts_init(&o);
	o.policy = "vllm-v1";
	o.preemption = 0;
	o.gpu_blocks = 40;
	o.requests = 80;
	o.offload_blocks = 64;
	o.offload_block_tokens = _i ? 32 : 0;
	run(&R, &o, "host", KVGPU_FA_SPLIT);
	ck_assert_msg(R.rc == 0, "%s", R.why);
	ck_assert_uint_eq(R.r.finished, o.requests);
	ck_assert_msg(R.s.failures == 0, "%s", R.s.first_failure);
	ck_assert_uint_gt(R.r.offload_stores, 0);
	ck_assert_uint_gt(R.r.offload_loads, 0);
	ck_assert_uint_eq(R.s.move[0].blocks, R.r.offload_store_blocks);
	ck_assert_uint_eq(R.s.move[1].blocks, R.r.offload_load_blocks);
	ck_assert_uint_gt(R.s.move_slots, 0);
	ck_assert_uint_eq(R.s.frag_poison_slots, R.s.frag_expected_slots);
}
END_TEST

/*
 * Equal prompts recur (every prompt is one of three 40-token prefixes or
 * a piece of one): heavy prefix sharing, and vLLM v0 maps equal device
 * blocks to one cached CPU block when swapping out.
 */
START_TEST(equal_prompts)
{
	struct kvdrive_opts o;
	struct run R;

	kvdrive_opts_init(&o);
	o.policy = _i ? "kvsim" : "vllm-v0";
	o.prompt_min = 20;
	o.prompt_max = 60;
	o.share = 40;
	o.requests = 120;
	run(&R, &o, "host", KVGPU_FI_FUSED);
	ck_assert_msg(R.rc == 0, "%s", R.why);
	ck_assert_msg(R.s.failures == 0, "%s", R.s.first_failure);
	ck_assert_uint_eq(R.r.finished, o.requests);
	ck_assert_uint_gt(R.r.swap_out_blocks, 0);
	if (_i == 0)
		ck_assert_uint_gt(R.s.dup_dsts, 0);
}
END_TEST

/*
 * Hybrid models: several KV cache groups in one pool of one page size.
 * Shapes: Mamba state groups around a full-attention group (as Granite
 * 4.0-H: the state's block size is max_model_len); a sliding window of 40
 * tokens and a full group (as Gemma 2, nulls once the window moves on); a
 * sliding group of half the block size beside a full group (half pages).
 * Every shape under kvsim (swap and recompute) and vllm-v1 (recompute),
 * prefix caching on and off: zero failures, exact fragmentation, states
 * verified and window positions skipped where the shape has them.
 */
START_TEST(hybrid_groups)
{
	int shape = _i / 6, mode = (_i / 2) % 3;
	struct kvdrive_opts o;
	struct run R;

	kvdrive_opts_init(&o);
	o.policy = mode == 2 ? "vllm-v1" : "kvsim";
	o.preemption = mode == 0;
	o.prefix_caching = _i % 2;
	o.gpu_blocks = shape == 2 ? 100 : 96;
	o.cpu_blocks = 192;
	o.requests = 30;
	if (shape == 2) {	/* half pages: more requests at once */
		o.per_step = 4;
		o.prompt_max = 300;
	}
	kvdrive_hybrid(&o, (enum kvdrive_shape)shape);
	run(&R, &o, "host", shape == 1 ? KVGPU_FI_FUSED : KVGPU_FA_SPLIT);
	if (R.refused) {
		/* vLLM v1 caches prefixes with one block size for
		 * every group only */
		ck_assert_msg(shape != 1 && mode == 2 && o.prefix_caching,
			      "shape %d %s refused: %s", shape, o.policy,
			      R.why);
		return;
	}
	ck_assert_msg(R.rc == 0, "shape %d %s: %s", shape, o.policy, R.why);
	ck_assert_uint_eq(R.r.finished, o.requests);
	ck_assert_msg(R.s.failures == 0, "shape %d %s swap=%d prefix=%d: %s",
		      shape, o.policy, o.preemption, o.prefix_caching,
		      R.s.first_failure);
	ck_assert_uint_gt(R.r.preemptions, 0);
	ck_assert_uint_ge(R.s.full_checks, o.requests);
	ck_assert_uint_gt(R.s.frag_scans, 0);
	ck_assert_uint_eq(R.s.frag_poison_slots, R.s.frag_expected_slots);
	if (shape == 0)	/* three states a request, at least at finish */
		ck_assert_uint_ge(R.s.state_checks, 3ull * o.requests);
	else
		ck_assert_uint_eq(R.s.state_checks, 0);
	if (shape > 0)
		ck_assert_uint_gt(R.s.window_slots, 0);
	if (o.preemption == 1)
		ck_assert_uint_gt(R.s.cls[KVGPU_D2H].blocks, 0);
}
END_TEST

/*
 * DeepSpeed FastGen gives every group its own block ids: two full groups
 * (block sizes 16 and 8) in a pool of gpu_blocks per group, each group's
 * blocks apart from the other's.
 */
START_TEST(deepspeed_groups)
{
	struct kvdrive_opts o;
	struct run R;

	kvdrive_opts_init(&o);
	kvdrive_hybrid(&o, KVDRIVE_HALF);
	o.group[1].kind = KVC_FULL;
	o.group[1].window = 0;
	o.policy = "deepspeed-fastgen";
	o.preemption = 0;
	o.prefix_caching = false;
	o.gpu_blocks = 256;
	o.cpu_blocks = 0;
	o.requests = 30;
	o.per_step = 6;
	run(&R, &o, "host", KVGPU_FA_SPLIT);
	ck_assert_msg(R.rc == 0, "%s", R.why);
	ck_assert_uint_eq(R.r.finished, o.requests);
	ck_assert_msg(R.s.failures == 0, "%s", R.s.first_failure);
	ck_assert_uint_ge(R.s.full_checks, o.requests);
	ck_assert_uint_eq(R.s.frag_poison_slots, R.s.frag_expected_slots);
}
END_TEST

/* A backend whose pool is smaller than the allocator's is refused at the
 * first step, with a message. */
START_TEST(pool_too_small)
{
	struct kvdrive_opts o;
	struct kvc_config kc;
	struct kvgpu_geom g = geom(KVGPU_FA_SPLIT, 0, 0);
	struct kvval_opts vo = { KVGPU_BATCH, 0, 0, false, true };
	struct kvdrive_result r;
	char why[256];
	bool refused;
	kvgpu *b;
	kvval *v;

	kvdrive_opts_init(&o);
	kvdrive_hybrid(&o, KVDRIVE_HALF);
	o.policy = "kvsim";
	o.gpu_blocks = 96;
	kvdrive_kvc_config(&o, &kc);
	g.block_size = 8;	/* the full group's pages need 16 */
	g.dev_blocks = kc.gpu_blocks;
	g.host_blocks = kc.cpu_blocks;
	b = open_host(&g);
	v = kvval_new(b, &vo);
	ck_assert_int_eq(kvdrive_run(&o, v, &r, &refused, why, sizeof(why)),
			 1);
	ck_assert_ptr_nonnull(strstr(why, "cannot hold"));
	kvval_free(v);
	kvgpu_close(b);
}
END_TEST

/* The same run in another layout and copy strategy gives the same
 * digest; another seed does not. */
START_TEST(digest_same_run)
{
	struct kvdrive_opts o;
	struct run a, b, c;

	kvdrive_opts_init(&o);
	run(&a, &o, "host", KVGPU_FA_SPLIT);
	run(&b, &o, "host", KVGPU_CROSS_LAYER);
	ck_assert_int_eq(a.rc, 0);
	ck_assert_int_eq(b.rc, 0);
	ck_assert_uint_eq(a.s.failures + b.s.failures, 0);
	ck_assert_uint_ne(a.s.digest, 0);
	ck_assert_uint_eq(a.s.digest, b.s.digest);
	o.seed = 2;
	run(&c, &o, "host", KVGPU_FA_SPLIT);
	ck_assert_uint_ne(a.s.digest, c.s.digest);
}
END_TEST

/*
 * Tier pools, every layout and strategy: device blocks stored to a tier
 * (D2T) and loaded back into other device blocks (T2D) hold their
 * slots; a tier that grows keeps its blocks; a geometry with tiers opens
 * them.
 */
START_TEST(tier_round_trip)
{
	enum kvgpu_layout l = (enum kvgpu_layout)(_i / KVGPU_NSTRATS);
	enum kvgpu_strat st = (enum kvgpu_strat)(_i % KVGPU_NSTRATS);
	struct kvgpu_geom g = geom(l, 6, 0);
	kvgpu *b;
	struct kvgpu_slot s[8], t[8];
	struct kvgpu_pair out[2] = { { 1, 2 }, { 3, 0 } };
	struct kvgpu_pair in[2] = { { 2, 5 }, { 0, 4 } };
	struct kvgpu_verdict d;
	int32_t two[2] = { 1, 3 };

	g.tiers = 2;
	g.tier_blocks[0] = 1;
	g.tier_blocks[1] = 3;
	b = open_host(&g);
	ck_assert_uint_eq(kvgpu_geom_of(b)->tiers, 2);
	ck_assert_int_eq(kvgpu_check(b), 0);
	slots_of(s, 1, 4, 77, 0);
	slots_of(s + 4, 3, 4, 99, 4);
	ck_assert_int_eq(kvgpu_fill(b, KVGPU_DEV, s, 8), KV_OK);
	/* tier 1 has 3 blocks: 0 and 2 are in range */
	ck_assert_int_eq(kvgpu_tier_copy(b, KVGPU_D2T, 1, st, out, 2, NULL),
			 KV_OK);
	memcpy(t, s, sizeof(t));
	for (int i = 0; i < 8; i++)
		t[i].block = i < 4 ? 2 : 0;
	ck_assert_int_eq(kvgpu_verify(b, KVGPU_TIER0 + 1, t, 8, &d), KV_OK);
	ck_assert_uint_eq(d.mismatches, 0);
	/* tier 0 saw nothing: still poison */
	t[0].block = 0;
	ck_assert_int_eq(kvgpu_verify(b, KVGPU_TIER0, t, 1, &d), KV_OK);
	ck_assert_uint_gt(d.mismatches, 0);
	/* grow tier 1 past its blocks: they stay */
	ck_assert_int_eq(kvgpu_tier_grow(b, 1, 9), KV_OK);
	ck_assert_uint_eq(kvgpu_geom_of(b)->tier_blocks[1], 9);
	ck_assert_int_eq(kvgpu_check(b), 0);
	t[0].block = 2;
	ck_assert_int_eq(kvgpu_verify(b, KVGPU_TIER0 + 1, t, 8, &d), KV_OK);
	ck_assert_uint_eq(d.mismatches, 0);
	ck_assert_int_eq(kvgpu_poison(b, KVGPU_DEV, two, 2), KV_OK);
	ck_assert_int_eq(kvgpu_tier_copy(b, KVGPU_T2D, 1, st, in, 2, NULL),
			 KV_OK);
	for (int i = 0; i < 8; i++)
		s[i].block = i < 4 ? 5 : 4;
	ck_assert_int_eq(kvgpu_verify(b, KVGPU_DEV, s, 8, &d), KV_OK);
	ck_assert_uint_eq(d.mismatches, 0);
	ck_assert_int_eq(kvgpu_check(b), 0);
	kvgpu_close(b);
}
END_TEST

/* Bad tier calls are refused before anything moves. */
START_TEST(tier_errors)
{
	struct kvgpu_geom g = geom(KVGPU_FA_SPLIT, 4, 0);
	kvgpu *b = open_host(&g);
	struct kvgpu_pair p[2] = { { 0, 1 }, { 1, 1 } };
	char why[256];
	kv_err e;

	/* no tier yet */
	ck_assert_int_eq(kvgpu_tier_copy(b, KVGPU_D2T, 0, KVGPU_PER_CHUNK, p,
					 1, NULL), KV_EINVAL);
	ck_assert_int_eq(kvgpu_tier_grow(b, 1, 4), KV_EINVAL);	/* a gap */
	ck_assert_int_eq(kvgpu_tier_grow(b, 0, 4), KV_OK);
	ck_assert_int_eq(kvgpu_tier_grow(b, 0, 2), KV_OK);	/* no shrink */
	ck_assert_uint_eq(kvgpu_geom_of(b)->tier_blocks[0], 4);
	/* a destination twice; a direction of kvgpu_copy; out of range */
	ck_assert_int_eq(kvgpu_tier_copy(b, KVGPU_D2T, 0, KVGPU_PER_CHUNK, p,
					 2, NULL), KV_EINVAL);
	ck_assert_int_eq(kvgpu_tier_copy(b, KVGPU_D2H, 0, KVGPU_PER_CHUNK, p,
					 1, NULL), KV_EINVAL);
	p[0].dst = 4;
	ck_assert_int_eq(kvgpu_tier_copy(b, KVGPU_D2T, 0, KVGPU_PER_CHUNK, p,
					 1, NULL), KV_EINVAL);
	ck_assert_int_eq(kvgpu_copy(b, KVGPU_D2T, KVGPU_PER_CHUNK, p, 1, NULL),
			 KV_EINVAL);
	ck_assert_int_eq(kvgpu_check(b), 0);
	kvgpu_close(b);
	g.tiers = KVGPU_MAX_TIERS + 1;
	ck_assert_ptr_null(kvgpu_open("host", &g, &e, why, sizeof(why)));
	ck_assert_int_eq(e, KV_EINVAL);
}
END_TEST

/*
 * The peer copy: host to host (memcpy), and from a fault wrapper (the
 * copy through words) in every layout; the destination holds the
 * source's slots, other blocks stay poison; mismatched geometries and
 * one backend are refused.
 */
START_TEST(peer_copy)
{
	enum kvgpu_layout l = (enum kvgpu_layout)(_i / 2);
	struct kvgpu_geom g = geom(l, 5, 0), h = geom(l, 7, 0);
	kvgpu *a, *b;
	struct kvgpu_slot s[8];
	struct kvgpu_pair p[2] = { { 1, 6 }, { 4, 0 } };
	struct kvgpu_verdict d;
	char why[256];
	kv_err e;

	a = kvgpu_open(_i % 2 ? "fault:none" : "host", &g, &e, why,
		       sizeof(why));
	ck_assert_msg(a != NULL, "%s", why);
	b = open_host(&h);
	slots_of(s, 1, 4, 5, 0);
	slots_of(s + 4, 4, 4, 9, 4);
	ck_assert_int_eq(kvgpu_fill(a, KVGPU_DEV, s, 8), KV_OK);
	ck_assert_int_eq(kvgpu_peer_copy(b, a, KVGPU_PER_CHUNK, p, 2, NULL),
			 KV_OK);
	for (int i = 0; i < 8; i++)
		s[i].block = i < 4 ? 6 : 0;
	ck_assert_int_eq(kvgpu_verify(b, KVGPU_DEV, s, 8, &d), KV_OK);
	ck_assert_uint_eq(d.mismatches, 0);
	s[0].block = 1;
	ck_assert_int_eq(kvgpu_verify(b, KVGPU_DEV, s, 1, &d), KV_OK);
	ck_assert_uint_gt(d.mismatches, 0);
	ck_assert_int_eq(kvgpu_peer_copy(b, b, KVGPU_PER_CHUNK, p, 1, NULL),
			 KV_EINVAL);
	p[0].src = 5;	/* past the source's 5 blocks */
	ck_assert_int_eq(kvgpu_peer_copy(b, a, KVGPU_PER_CHUNK, p, 1, NULL),
			 KV_EINVAL);
	kvgpu_close(b);
	h.block_size = 8;
	b = open_host(&h);
	ck_assert_int_eq(kvgpu_peer_copy(b, a, KVGPU_PER_CHUNK, p + 1, 1,
					 NULL), KV_EINVAL);
	ck_assert_int_eq(kvgpu_check(a), 0);
	ck_assert_int_eq(kvgpu_check(b), 0);
	kvgpu_close(a);
	kvgpu_close(b);
}
END_TEST

/* The verifier over tier moves and a P/D transfer: every strategy
 * passes, and checks every slot moved. */
START_TEST(moves_verified)
{
	struct kvdrive_moves m;
	char why[512];

	ck_assert_msg(kvdrive_moves("host", (enum kvgpu_strat)_i, &m, why,
				    sizeof(why)) == 0, "%s", why);
	ck_assert_uint_eq(m.failures, 0);
	ck_assert_uint_eq(m.store_blocks, 10);
	ck_assert_uint_eq(m.load_blocks, 10);
	ck_assert_uint_eq(m.peer_blocks, 10);
	ck_assert_uint_eq(m.move_slots, 3 * 40);
	ck_assert_uint_eq(m.injected, 0);
}
END_TEST

static Suite *
gpu_host_suite(void)
{
	Suite *s = suite_create("gpu_host");
	TCase *t = tcase_create("backend");

	tcase_add_loop_test(t, layout_bijection, 0, KVGPU_NLAYOUTS);
	tcase_add_test(t, fill_verify_poison);
	tcase_add_loop_test(t, copy_round_trip, 0,
			    KVGPU_NLAYOUTS * KVGPU_NSTRATS);
	tcase_add_test(t, batches_independent);
	tcase_add_test(t, check_invariants);
	tcase_add_test(t, digest_layout_free);
	tcase_add_test(t, open_errors);
	tcase_add_loop_test(t, tier_round_trip, 0,
			    KVGPU_NLAYOUTS * KVGPU_NSTRATS);
	tcase_add_test(t, tier_errors);
	tcase_add_loop_test(t, peer_copy, 0, 2 * KVGPU_NLAYOUTS);
	tcase_add_loop_test(t, moves_verified, 0, KVGPU_NSTRATS);
	tcase_set_timeout(t, 60);
	suite_add_tcase(s, t);
	t = tcase_create("runs");
	tcase_set_timeout(t, 60);
	tcase_add_loop_test(t, every_policy, 0,
			    (int)(sizeof(policies) / sizeof(policies[0])) * 4);
	tcase_add_loop_test(t, equal_prompts, 0, 2);
	tcase_add_loop_test(t, offload_run, 0, 2);
	tcase_add_loop_test(t, empty_step, 0, 2);
	tcase_add_test(t, digest_same_run);
	tcase_add_loop_test(t, hybrid_groups, 0, 18);
	tcase_add_test(t, deepspeed_groups);
	tcase_add_test(t, pool_too_small);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(gpu_host_suite());
	int nf;

	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
