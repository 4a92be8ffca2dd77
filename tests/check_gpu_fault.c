/*
 * check_gpu_fault.c -- the verifier is not vacuous: every fault the fault
 * backend injects (corrupt, drop, reorder, in swap-out, swap-in and
 * copy-on-write batches) is detected in a full run, the same run without
 * a fault passes, and a swap-in that lands before the swap-out of the
 * same step, on a block the swap-out frees, is caught.
 */
#include "gpu/kvdrive.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct kvgpu_geom
geom(uint32_t dev, uint32_t host, uint32_t bs)
{
	struct kvgpu_geom g = {
		.layers = 2, .kv_heads = 1, .head_dim = 4, .dtype_bytes = 2,
		.block_size = bs, .layout = KVGPU_FA_SPLIT, .dev_blocks = dev,
		.host_blocks = host, .hostmem = KVGPU_PINNED,
	};
	return g;
}

struct res {
	struct kvval_stats s;
	struct kvdrive_result r;
	uint64_t injected, hazards;
};

/*
 * A vLLM v0 run with swap preemption (or `policy`) on "fault:...";
 * hybrid: kvsim over a full, a sliding-window and a Mamba state group,
 * the fault in the last pair of its batch (the last group's block).
 */
static void
faulty_run_in(struct res *out, const char *policy, int swap,
	      enum kvgpu_fault f, enum kvgpu_dir dir, uint32_t skip,
	      bool hybrid)
{
	struct kvdrive_opts o;
	struct kvc_config kc;
	struct kvgpu_geom g;
	struct kvval_pool pool;
	struct kvval_opts vo = { KVGPU_PER_CHUNK, 0, 0, false, true };
	char why[512];
	bool refused;
	kvgpu *b;
	kvval *v;
	kv_err e;
	int rc;

	kvdrive_opts_init(&o);
	o.policy = policy;
	o.preemption = swap;
	if (hybrid) {
		static const kvc_kind kind[3] = {
			KVC_FULL, KVC_SLIDING, KVC_STATE
		};

		o.ngroups = 3;
		o.gpu_blocks = 96;
		for (int i = 0; i < 3; i++) {
			snprintf(o.group[i].name, sizeof(o.group[i].name),
				 "g%d", i);
			o.group[i].kind = kind[i];
			o.group[i].block_size = o.block_size;
		}
		o.group[1].window = 40;
		o.group[2].block_size = o.max_model_len;
	}
	kvdrive_kvc_config(&o, &kc);
	kvval_pool(&kc, kc.ngroups ? kc.ngroups : 1, &pool);
	g = geom(pool.dev_blocks, pool.host_blocks, pool.block_size);
	b = kvgpu_open("fault", &g, &e, why, sizeof(why));
	ck_assert_msg(b != NULL, "%s", why);
	ck_assert_int_eq(kvgpu_fault_arm(b, f, dir, skip), KV_OK);
	if (hybrid)
		ck_assert_int_eq(kvgpu_fault_pair(b, UINT32_MAX), KV_OK);
	v = kvval_new(b, &vo);
	rc = kvdrive_run(&o, v, &out->r, &refused, why, sizeof(why));
	ck_assert_msg(rc == 0, "%s", why);
	out->s = *kvval_stats(v);
	kvgpu_fault_stats(b, &out->injected, &out->hazards);
	kvval_free(v);
	kvgpu_close(b);
}

static void
faulty_run(struct res *out, const char *policy, int swap,
	   enum kvgpu_fault f, enum kvgpu_dir dir, uint32_t skip)
{
	faulty_run_in(out, policy, swap, f, dir, skip, false);
}

START_TEST(no_fault_passes)
{
	struct res r;

	faulty_run(&r, "vllm-v0", 1, KVGPU_FAULT_NONE, KVGPU_D2H, 0);
	ck_assert_uint_eq(r.injected, 0);
	ck_assert_msg(r.s.failures == 0, "%s", r.s.first_failure);
	ck_assert_uint_gt(r.r.swap_out_blocks, 0);
}
END_TEST

/* corrupt, drop, reorder x swap-out, swap-in; skip 0 and 3. */
START_TEST(fault_detected)
{
	enum kvgpu_fault f = (enum kvgpu_fault)(KVGPU_FAULT_CORRUPT + _i % 3);
	enum kvgpu_dir dir = (_i / 3) % 2 ? KVGPU_H2D : KVGPU_D2H;
	uint32_t skip = _i / 6 ? 3 : 0;
	struct res r;

	faulty_run(&r, "vllm-v0", 1, f, dir, skip);
	ck_assert_uint_eq(r.injected, 1);
	ck_assert_msg(r.s.failures > 0, "%s in %s (skip %u) not detected",
		      kvgpu_fault_name(f), kvgpu_dir_name(dir), skip);
	ck_assert_uint_gt(r.s.mismatched_words, 0);
	if (f == KVGPU_FAULT_CORRUPT) {	/* one bit of one word */
		const char *w = strstr(r.s.first_failure, "want ");
		unsigned want, got;

		ck_assert_ptr_nonnull(w);
		ck_assert_int_eq(sscanf(w, "want %x got %x", &want, &got), 2);
		ck_assert_uint_eq(want ^ got, 1);
	}
	ck_assert_ptr_nonnull(strstr(r.s.first_failure,
				     dir == KVGPU_D2H ? "after swap-out" :
				     "after compute"));
}
END_TEST

/*
 * Hybrid: the clean run passes and verifies states; corrupt and drop in
 * the last pair of a swap-out or swap-in batch -- a block of a group
 * other than 0 -- are detected and the failure names that group.
 */
START_TEST(fault_in_other_group)
{
	enum kvgpu_fault f = _i < 2 ? KVGPU_FAULT_CORRUPT : KVGPU_FAULT_DROP;
	enum kvgpu_dir dir = _i % 2 ? KVGPU_H2D : KVGPU_D2H;
	const char *at;
	unsigned grp;
	struct res r;

	faulty_run_in(&r, "kvsim", 1, KVGPU_FAULT_NONE, dir, 0, true);
	ck_assert_msg(r.s.failures == 0, "%s", r.s.first_failure);
	ck_assert_uint_gt(r.s.state_checks, 0);
	ck_assert_uint_gt(r.s.window_slots, 0);
	ck_assert_uint_gt(r.r.swap_out_blocks, 0);
	faulty_run_in(&r, "kvsim", 1, f, dir, 0, true);
	ck_assert_uint_eq(r.injected, 1);
	ck_assert_msg(r.s.failures > 0, "%s in %s not detected",
		      kvgpu_fault_name(f), kvgpu_dir_name(dir));
	at = strstr(r.s.first_failure, "group ");
	ck_assert_ptr_nonnull(at);
	ck_assert_int_eq(sscanf(at, "group %u", &grp), 1);
	ck_assert_msg(grp > 0, "%s", r.s.first_failure);
}
END_TEST

/*
 * Copy-on-write (kvdrive_cow): the copy the allocator asks for when a
 * fork's first append meets the shared partial block, executed on the
 * backend, gives the child its prefix; a corrupted or dropped copy shows
 * in the child's check.  Every copy strategy.
 */
static uint64_t
cow(enum kvgpu_fault f, enum kvgpu_strat st)
{
	uint64_t bad;
	char why[256];

	ck_assert_msg(kvdrive_cow("host", f, st, &bad, why, sizeof(why)) == 0,
		      "%s", why);
	return bad;
}

START_TEST(cow_fault_detected)
{
	enum kvgpu_strat st = (enum kvgpu_strat)_i;

	ck_assert_uint_eq(cow(KVGPU_FAULT_NONE, st), 0);
	ck_assert_uint_eq(cow(KVGPU_FAULT_CORRUPT, st), 1);
	ck_assert_uint_gt(cow(KVGPU_FAULT_DROP, st), 0);
}
END_TEST

/*
 * The ordering hazard (kvdrive_hazard): A swapped out and B swapped in
 * over A's freed blocks in one step.  In the order issued, both arrive;
 * with the swap-in first (fault "invert"), A's host copy holds B's data.
 * Every copy strategy.
 */
START_TEST(ordering_hazard)
{
	enum kvgpu_strat st = (enum kvgpu_strat)_i;
	struct kvdrive_hazard h;
	char why[256];

	ck_assert_msg(kvdrive_hazard("host", st, &h, why, sizeof(why)) == 0,
		      "%s", why);
	ck_assert_uint_gt(h.reused, 0);	/* B reuses A's blocks */
	ck_assert_uint_eq(h.a_bad, 0);
	ck_assert_uint_eq(h.b_bad, 0);
	ck_assert_msg(kvdrive_hazard("fault:invert", st, &h, why,
				     sizeof(why)) == 0, "%s", why);
	ck_assert_uint_gt(h.hazards, 0);	/* the held blocks reused */
	ck_assert_uint_gt(h.a_bad, 0);	/* ... and A's data is lost */
	ck_assert_uint_eq(h.b_bad, 0);	/* B itself arrived intact */
}
END_TEST

/*
 * A held swap-out that no swap-in overtakes spoils nothing and is not
 * counted: this run (kvsim, swap preemption) never swaps in onto a block
 * its step swapped out, so the fault never fires -- injected 0, which
 * kvsim validate fails -- and every swap-out still arrives.  (It counted
 * 1 injected, and the test passed whether or not the hazard happened.)
 */
START_TEST(invert_in_a_run)
{
	struct res r;

	faulty_run(&r, "kvsim", 1, KVGPU_FAULT_INVERT, KVGPU_D2H, 0);
	ck_assert_uint_gt(r.r.swap_out_blocks, 0);
	ck_assert_uint_eq(r.hazards, 0);
	ck_assert_uint_eq(r.injected, 0);
	ck_assert_msg(r.s.failures == 0, "%s", r.s.first_failure);
}
END_TEST

START_TEST(arm_needs_fault_backend)
{
	struct kvgpu_geom g = geom(4, 4, 4);
	char why[256];
	kv_err e;
	kvgpu *b = kvgpu_open("host", &g, &e, why, sizeof(why));
	uint64_t i, h;

	ck_assert_int_eq(kvgpu_fault_arm(b, KVGPU_FAULT_DROP, KVGPU_D2H, 0),
			 KV_EINVAL);
	ck_assert_int_eq(kvgpu_fault_stats(b, &i, &h), KV_EINVAL);
	kvgpu_close(b);
	b = kvgpu_open("fault:drop:host", &g, &e, why, sizeof(why));
	ck_assert_msg(b != NULL, "%s", why);
	kvgpu_close(b);
	ck_assert_ptr_null(kvgpu_open("fault:drop:fault", &g, &e, why,
				      sizeof(why)));
}
END_TEST

/*
 * Tier moves and P/D transfers: corrupt, drop and reorder in a tier
 * store (d2t), a tier load (t2d) and a peer copy are each caught by the
 * verifier.  The fault must have fired (a run it never touched would
 * prove nothing), and the failure names the move.
 */
START_TEST(move_fault_detected)
{
	static const enum kvgpu_dir dirs[3] = {
		KVGPU_D2T, KVGPU_T2D, KVGPU_PEER
	};
	enum kvgpu_fault f = (enum kvgpu_fault)(KVGPU_FAULT_CORRUPT + _i % 3);
	enum kvgpu_dir dir = dirs[_i / 3];
	struct kvdrive_moves m;
	char name[64], why[512];

	snprintf(name, sizeof(name), "fault:%s/%s", kvgpu_fault_name(f),
		 kvgpu_dir_name(dir));
	ck_assert_msg(kvdrive_moves(name, KVGPU_PER_CHUNK, &m, why,
				    sizeof(why)) == 0, "%s", why);
	ck_assert_msg(m.injected >= 1, "%s never fired: nothing was tested",
		      name);
	ck_assert_msg(m.failures > 0, "%s fired %llu time(s), not detected",
		      name, (unsigned long long)m.injected);
}
END_TEST

/* A fault armed on a move the run never makes does not fire, and the
 * name's direction must be a known one (invert: d2h only). */
START_TEST(move_fault_names)
{
	struct kvgpu_geom g = geom(4, 4, 4);
	struct kvdrive_moves m;
	char why[512];
	kv_err e;

	ck_assert_int_eq(kvdrive_moves("fault:corrupt/d2h", KVGPU_PER_CHUNK,
				       &m, why, sizeof(why)), 0);
	ck_assert_uint_eq(m.injected, 0);
	ck_assert_uint_eq(m.failures, 0);
	ck_assert_ptr_null(kvgpu_open("fault:corrupt/sideways", &g, &e, why,
				      sizeof(why)));
	ck_assert_int_eq(e, KV_EINVAL);
	ck_assert_ptr_null(kvgpu_open("fault:invert/peer", &g, &e, why,
				      sizeof(why)));
	ck_assert_int_eq(e, KV_EINVAL);
}
END_TEST

/*
 * A vllm-v1 run with a CPU tier (kvdrive offload): corrupt, drop and
 * reorder in a tier store and in a tier load, after 0 and 2 clean
 * batches, must fire and each is detected; the clean run passes.
 */
START_TEST(offload_fault_detected)
{
	enum kvgpu_fault f = (enum kvgpu_fault)(_i % 4);
	enum kvgpu_dir dir = (_i / 4) % 2 ? KVGPU_T2D : KVGPU_D2T;
	uint32_t skip = _i / 8 ? 2 : 0;
	struct kvdrive_opts o;
	struct kvdrive_result r;
	struct kvval_pool pool;
	struct kvval_opts vo = { KVGPU_PER_CHUNK, 0, 0, false, true };
	struct kvgpu_geom g;
	const struct kvval_stats *st;
	uint64_t inj, haz;
	char why[512];
	bool refused;
	kvgpu *b;
	kvval *v;
	kv_err e;

	kvdrive_opts_init(&o);
	o.policy = "vllm-v1";
	o.preemption = 0;
	o.gpu_blocks = 40;
	o.requests = 60;
	o.offload_blocks = 64;
	kvdrive_pool(&o, &pool);
	g = geom(pool.dev_blocks, pool.host_blocks, pool.block_size);
	b = kvgpu_open("fault", &g, &e, why, sizeof(why));
	ck_assert_msg(b != NULL, "%s", why);
	ck_assert_int_eq(kvgpu_fault_arm(b, f, dir, skip), KV_OK);
	v = kvval_new(b, &vo);
	ck_assert_msg(kvdrive_run(&o, v, &r, &refused, why, sizeof(why)) == 0,
		      "%s", why);
	st = kvval_stats(v);
	kvgpu_fault_stats(b, &inj, &haz);
	ck_assert_uint_gt(r.offload_loads, 0);
	if (f == KVGPU_FAULT_NONE) {
		ck_assert_uint_eq(inj, 0);
		ck_assert_msg(st->failures == 0, "%s", st->first_failure);
	} else {
		ck_assert_msg(inj == 1, "%s/%s (skip %u) never fired",
			      kvgpu_fault_name(f), kvgpu_dir_name(dir), skip);
		ck_assert_msg(st->failures > 0, "%s/%s (skip %u) not detected",
			      kvgpu_fault_name(f), kvgpu_dir_name(dir), skip);
		ck_assert_ptr_nonnull(strstr(st->first_failure,
					     dir == KVGPU_D2T ?
					     "after an offload store" :
					     "after an offload load"));
	}
	kvval_free(v);
	kvgpu_close(b);
}
END_TEST

static Suite *
gpu_fault_suite(void)
{
	Suite *s = suite_create("gpu_fault");
	TCase *t = tcase_create("faults");

	tcase_set_timeout(t, 60);
	tcase_add_test(t, no_fault_passes);
	tcase_add_loop_test(t, fault_detected, 0, 12);
	tcase_add_loop_test(t, fault_in_other_group, 0, 4);
	tcase_add_loop_test(t, cow_fault_detected, 0, KVGPU_NSTRATS);
	tcase_add_loop_test(t, ordering_hazard, 0, KVGPU_NSTRATS);
	tcase_add_test(t, invert_in_a_run);
	tcase_add_test(t, arm_needs_fault_backend);
	tcase_add_loop_test(t, move_fault_detected, 0, 9);
	tcase_add_test(t, move_fault_names);
	tcase_add_loop_test(t, offload_fault_detected, 0, 16);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(gpu_fault_suite());
	int nf;

	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
