/*
 * bench_core.c -- libkvcore micro-benchmarks (`make bench`).
 *
 * For each mode: allocate/free of a 128-block sequence, token-by-token
 * append, prefix-cache lookup (hit and miss), fork + copy-on-write, swap
 * out/in -- in ns per block, on a 1K-block and a 1M-block pool to show the
 * cost does not grow with the pool.  Heap allocations made by the library
 * during the timed loops are counted by wrapping malloc/calloc/realloc at
 * link time (-Wl,--wrap): steady state must make none.
 *
 * Results are printed as a table; docs/BENCHMARKS.md records them.
 */
#include "core/kvcore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned long long nalloc;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);

void *
__wrap_malloc(size_t n)
{
	nalloc++;
	return __real_malloc(n);
}

void *
__wrap_calloc(size_t n, size_t m)
{
	nalloc++;
	return __real_calloc(n, m);
}

void *
__wrap_realloc(void *p, size_t n)
{
	nalloc++;
	return __real_realloc(p, n);
}

#define NB 128		/* blocks per sequence */
#define BS 16

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static kvc *
make(kvc_mode m, uint32_t blocks, bool caching, uint32_t cpu)
{
	struct kvc_config c;
	char why[256];
	kv_err e;
	kvc *k;

	kvc_config_default(&c, m);
	c.block_size = BS;
	c.gpu_blocks = blocks;
	c.cpu_blocks = cpu;
	c.watermark = 0;
	c.prefix_caching = caching;
	c.max_model_len = 1u << 20;
	k = kvc_new(&c, &e, why, sizeof(why));
	if (k == NULL) {
		fprintf(stderr, "bench: %s: %s\n", kvc_mode_name(m), why);
		exit(1);
	}
	return k;
}

static uint32_t tok[NB * BS + 1];

static void
fill(uint32_t base)
{
	for (uint32_t i = 0; i < NB * BS + 1; i++)
		tok[i] = base + i;
}

struct result {
	double ns_per_block;
	unsigned long long allocs;
	bool ok;
};

static int
must(kv_err e, const char *what)
{
	if (e != KV_OK) {
		fprintf(stderr, "bench: %s: %s\n", what, kv_strerror(e));
		exit(1);
	}
	return 0;
}

/* allocate + free of one 128-block sequence, repeated */
static struct result
b_alloc_free(kvc_mode m, uint32_t pool, int reps)
{
	kvc *k = make(m, pool, false, 0);
	struct result r = { 0, 0, true };
	int32_t s;
	double t0;

	fill(1);
	must(kvc_seq_new(k, tok, NB * BS, &s), "seq");
	must(kvc_allocate(k, s, 0), "warm allocate");
	must(kvc_free_seq(k, s), "warm free");
	nalloc = 0;
	t0 = now_ns();
	for (int i = 0; i < reps; i++) {
		kvc_allocate(k, s, 0);
		kvc_free_seq(k, s);
	}
	r.ns_per_block = (now_ns() - t0) / reps / NB;
	r.allocs = nalloc;
	kvc_free(k);
	return r;
}

/* token-by-token append to 128 blocks, ns per block */
static struct result
b_append(kvc_mode m, uint32_t pool, int reps)
{
	kvc *k = make(m, pool, false, 0);
	struct result r = { 0, 0, true };
	double total = 0;

	fill(1);
	for (int i = 0; i < reps + 1; i++) {
		int32_t s;
		double t0;

		must(kvc_seq_new(k, tok, 1, &s), "seq");
		must(kvc_allocate(k, s, 0), "allocate");
		if (i == 1)
			nalloc = 0;
		t0 = now_ns();
		for (uint32_t j = 1; j < NB * BS; j++)
			kvc_append(k, s, &tok[j], 1, 0, false);
		if (i > 0)
			total += now_ns() - t0;
		kvc_free_seq(k, s);
	}
	r.ns_per_block = total / reps / NB;
	/* a new sequence's token array grows by doubling: O(log n) per seq */
	r.allocs = nalloc;
	kvc_free(k);
	return r;
}

/*
 * Prefix-cache lookup through admission: a new 128-block prompt is
 * allocated and freed.  Hit: the same tokens as a cached prompt, so every
 * block is found by its hash chain.  Miss: the first token differs, so the
 * whole chain misses and fresh blocks are taken.  Each iteration creates a
 * sequence (the library copies its tokens: one allocation, counted).
 */
static struct result
b_lookup(kvc_mode m, uint32_t pool, int reps, bool hit)
{
	kvc *k = make(m, pool, true, 0);
	struct result r = { 0, 0, true };
	int32_t a;
	size_t n = 0;
	double t0;

	fill(7);
	must(kvc_seq_new(k, tok, NB * BS + 1, &a), "seq");
	must(kvc_allocate(k, a, 0), "allocate");
	kvc_computed(k, a, 0, false);
	must(kvc_free_seq(k, a), "free");	/* its blocks stay cached */
	must(kvc_seq_new(k, tok, NB * BS + 1, &a), "seq");
	kvc_cached(k, a, &n);
	if (n != NB * BS) {
		fprintf(stderr, "bench: %s: cached prompt found %zu tokens\n",
			kvc_mode_name(m), n);
		r.ok = false;
	}
	nalloc = 0;
	t0 = now_ns();
	for (int i = 0; i < reps; i++) {
		if (!hit)
			tok[0] = 1000000000u + (uint32_t)i;
		if (kvc_seq_new(k, tok, NB * BS + 1, &a) != KV_OK ||
		    kvc_allocate(k, a, 0) != KV_OK) {
			r.ok = false;
			break;
		}
		kvc_computed(k, a, 0, false);
		kvc_free_seq(k, a);
	}
	r.ns_per_block = (now_ns() - t0) / reps / NB;
	r.allocs = nalloc;
	kvc_free(k);
	return r;
}

/*
 * The lookup alone: `cached` on a 128-block prompt (plus one token) whose
 * blocks are all cached (hit: the whole hash chain is walked) or whose first
 * token differs (miss: the walk stops at the first block; reported per
 * lookup).  vllm-v0 memoises the answer for a sequence in prefill, so there
 * the hit is asked of a running, fully computed sequence, and the miss is
 * not measured.
 */
static struct result
b_cached(kvc_mode m, uint32_t pool, int reps, bool hit)
{
	kvc *k = make(m, pool, true, 0);
	struct result r = { 0, 0, true };
	int32_t a, q;
	size_t n = 0, want = hit ? NB * BS : 0;
	double t0;

	fill(7);
	must(kvc_seq_new(k, tok, NB * BS + 1, &a), "seq");
	must(kvc_allocate(k, a, 0), "allocate");
	kvc_computed(k, a, 0, false);
	if (m == KVC_VLLM_V0) {
		q = a;
	} else {
		must(kvc_free_seq(k, a), "free");
		if (!hit)
			tok[0] = 999999999u;
		must(kvc_seq_new(k, tok, NB * BS + 1, &q), "seq");
	}
	nalloc = 0;
	t0 = now_ns();
	for (int i = 0; i < reps; i++)
		kvc_cached(k, q, &n);
	r.ns_per_block = (now_ns() - t0) / reps / (hit ? NB : 1);
	r.allocs = nalloc;
	if (n != want) {
		fprintf(stderr, "bench: %s: cached %zu, want %zu\n",
			kvc_mode_name(m), n, want);
		r.ok = false;
	}
	kvc_free(k);
	return r;
}

/* append a block's worth of tokens per call, up to 128 blocks */
static struct result
b_append_block(kvc_mode m, uint32_t pool, int reps)
{
	kvc *k = make(m, pool, false, 0);
	struct result r = { 0, 0, true };
	double total = 0;
	int32_t s;

	fill(1);
	must(kvc_seq_new(k, tok, BS, &s), "seq");
	for (int i = 0; i < reps + 1; i++) {
		double t0;

		must(kvc_allocate(k, s, 0), "allocate");
		if (i == 1)
			nalloc = 0;
		t0 = now_ns();
		for (uint32_t j = 1; j < NB; j++)
			kvc_append(k, s, &tok[j * BS], BS, 0, false);
		if (i > 0)
			total += now_ns() - t0;
		kvc_free_seq(k, s);
		/* back to one block: a fresh sequence, outside the timing */
		if (i < reps) {
			must(kvc_seq_new(k, tok, BS, &s), "seq");
		}
	}
	r.ns_per_block = total / reps / (NB - 1);
	r.allocs = nalloc;
	kvc_free(k);
	return r;
}

/* fork a 128-block sequence, append one token to the child (CoW), free */
static struct result
b_fork_cow(kvc_mode m, uint32_t pool, int reps)
{
	kvc *k = make(m, pool, false, 0);
	struct result r = { 0, 0, true };
	int32_t a, c;
	double t0;

	fill(1);
	/* a partial last block, so the child's append copies it */
	must(kvc_seq_new(k, tok, NB * BS - 1, &a), "seq");
	must(kvc_allocate(k, a, 0), "allocate");
	nalloc = 0;
	t0 = now_ns();
	for (int i = 0; i < reps; i++) {
		if (kvc_fork(k, a, &c) != KV_OK ||
		    kvc_append(k, c, tok, 1, 0, false) != KV_OK) {
			r.ok = false;
			break;
		}
		/* free the child only: free the whole request, re-admit */
		kvc_free_seq(k, a);
		kvc_allocate(k, a, 0);
	}
	r.ns_per_block = (now_ns() - t0) / reps / NB;
	r.allocs = nalloc;	/* each fork makes a sequence: not steady */
	kvc_free(k);
	return r;
}

/* swap a 128-block sequence out and back in */
static struct result
b_swap(kvc_mode m, uint32_t pool, int reps)
{
	kvc *k = make(m, pool, false, NB * 2);
	struct result r = { 0, 0, true };
	int32_t a;
	double t0;

	fill(1);
	must(kvc_seq_new(k, tok, NB * BS, &a), "seq");
	must(kvc_allocate(k, a, 0), "allocate");
	kvc_computed(k, a, 0, false);
	must(kvc_swap_out(k, a), "warm swap_out");
	must(kvc_swap_in(k, a, 0), "warm swap_in");
	nalloc = 0;
	t0 = now_ns();
	for (int i = 0; i < reps; i++) {
		kvc_swap_out(k, a);
		kvc_swap_in(k, a, 0);
	}
	r.ns_per_block = (now_ns() - t0) / reps / NB / 2;
	r.allocs = nalloc;
	kvc_free(k);
	return r;
}


static void
row(const char *bench, const char *unit, kvc_mode m, uint32_t pool,
    struct result r)
{
	printf("%-14s %-10s %8u %10.1f %-10s %8llu%s\n", bench,
	       kvc_mode_name(m), pool, r.ns_per_block, unit, r.allocs,
	       r.ok ? "" : "  (check failed)");
}

int
main(int argc, char **argv)
{
	static const uint32_t pools[] = { 1024, 1u << 20 };
	int reps = argc > 1 ? atoi(argv[1]) : 2000;

	printf("# block_size %d, %d-block sequences; mallocs = heap "
	       "allocations during the timed loop\n", BS, NB);
	printf("%-14s %-10s %8s %10s %-10s %8s\n", "benchmark", "mode",
	       "pool", "ns", "per", "mallocs");
	for (int p = 0; p < 2; p++) {
		uint32_t pool = pools[p];

		for (int m = 0; m < 4; m++) {
			kvc_mode mode = (kvc_mode)m;
			struct result t;

			row("alloc+free", "block", mode, pool,
			    b_alloc_free(mode, pool, reps));
			t = b_append(mode, pool, reps / 20 + 1);
			row("append-token", "block", mode, pool, t);
			t.ns_per_block /= BS;
			row("append-token", "token", mode, pool, t);
			row("append-block", "block", mode, pool,
			    b_append_block(mode, pool, reps / 20 + 1));
			if (mode != KVC_DEEPSPEED) {
				row("lookup-hit", "block", mode, pool,
				    b_cached(mode, pool, reps, true));
				if (mode != KVC_VLLM_V0)
					row("lookup-miss", "lookup", mode,
					    pool, b_cached(mode, pool, reps,
							   false));
				row("admit-hit", "block", mode, pool,
				    b_lookup(mode, pool, reps, true));
				row("admit-miss", "block", mode, pool,
				    b_lookup(mode, pool, reps, false));
			}
			if (mode == KVC_EXACT || mode == KVC_VLLM_V0) {
				row("fork+cow", "block", mode, pool,
				    b_fork_cow(mode, pool, reps));
				row("swap", "block", mode, pool,
				    b_swap(mode, pool, reps));
			}
		}
	}
	return 0;
}
