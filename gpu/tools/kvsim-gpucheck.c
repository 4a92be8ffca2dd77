/*
 * kvsim-gpucheck -- the device check (docs/gpu-design.md §6, docs/gpu.md):
 * copy sweep, layout sweep, copy-on-write, integrity replay and capacity
 * probe on one backend, written as CSV files.
 *
 * It links core/ and gpu/ only -- no GSL, libyaml or Check, which the GPU
 * machine does not have -- and carries its own CSV writer.  The fit of the
 * sweep (kvsim calibrate) happens back on the build machine.
 *
 *   kvsim-gpucheck [--backend host|cuda] [--out DIR] [--quick]
 *                  [--deadline SECONDS] [--sections LIST]
 *                  [--order contiguous|scattered]
 *   kvsim-gpucheck --probe      exit 0 if a CUDA device answers, else 77
 *
 * Sections (LIST is comma-separated; default all): env, capacity, sweep,
 * layout, cow, integrity.  --quick shrinks every section to seconds (the
 * host dry run).  Each CSV is written to NAME.part, flushed row by row (a
 * killed run keeps its rows), and renamed to NAME when its section ends.
 *
 * Exit status: 0 every integrity check passed, every injected fault was
 * detected and the host and device digests agree; 1 otherwise; 2 bad
 * usage; 77 (--probe, or --backend cuda without a device).
 */
#include "config.h"

#include "core/kvsize.h"
#include "gpu/kvdrive.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct ck {
	const char *backend, *out;
	bool quick;
	double deadline_s;
	int64_t t0;
	char sections[256];
	int failures;
};

/*
 * --order scattered: the blocks of a timed copy are blocks 0..n-1 in a
 * shuffled order on each side (a fixed seed), as an engine's free list
 * hands them out, instead of the same n blocks in order; the CSVs are
 * the same.
 */
static bool scattered;

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool
late(const struct ck *c)
{
	return (double)(now_ns() - c->t0) / 1e9 > c->deadline_s;
}

static bool
wanted(const struct ck *c, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = c->sections; *p;) {
		size_t m = strcspn(p, ",");

		if (m == n && strncmp(p, name, n) == 0)
			return true;
		p += m + (p[m] == ',');
	}
	return false;
}

/* ---- CSV files: NAME.part, renamed when done ----------------------- */

struct csv {
	FILE *f;
	char path[1024], part[1040];
};

static int
csv_open(struct csv *w, const struct ck *c, const char *name,
	 const char *header)
{
	snprintf(w->path, sizeof(w->path), "%s/%s", c->out, name);
	snprintf(w->part, sizeof(w->part), "%s.part", w->path);
	w->f = fopen(w->part, "w");
	if (w->f == NULL) {
		fprintf(stderr, "kvsim-gpucheck: %s: %s\n", w->part,
			strerror(errno));
		return -1;
	}
	fprintf(w->f, "%s\n", header);
	fflush(w->f);
	return 0;
}

static void csv_row(struct csv *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
csv_row(struct csv *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(w->f, fmt, ap);
	va_end(ap);
	fputc('\n', w->f);
	fflush(w->f);
}

static int
csv_close(struct csv *w)
{
	if (w->f == NULL)
		return 0;
	if (fclose(w->f) != 0 || rename(w->part, w->path) != 0) {
		fprintf(stderr, "kvsim-gpucheck: %s: %s\n", w->path,
			strerror(errno));
		return -1;
	}
	w->f = NULL;
	return 0;
}

static kvgpu *
open_backend(const char *name, const struct kvgpu_geom *g, bool quiet)
{
	char why[512];
	kv_err e;
	kvgpu *b = kvgpu_open(name, g, &e, why, sizeof(why));

	if (b == NULL && !quiet)
		fprintf(stderr, "kvsim-gpucheck: %s: %s\n", name, why);
	return b;
}

/* Llama-3-8B: 32 layers, 8 KV heads of 128, bf16, 16-token blocks. */
static struct kvgpu_geom
llama8b(enum kvgpu_layout l, uint32_t dev, uint32_t host)
{
	struct kvgpu_geom g = { 32, 8, 128, 2, 16, l, dev, host,
				KVGPU_PINNED, 0, { 0 } };
	return g;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* ---- env and capacity ---------------------------------------------- */

static void
env_fact(void *ctx, const char *key, const char *value)
{
	char v[256];
	size_t i;

	for (i = 0; value[i] && i + 1 < sizeof(v); i++)
		v[i] = value[i] == ',' ? ';' : value[i];
	v[i] = '\0';
	csv_row(ctx, "%s,%s", key, v);
}

static void
section_env(struct ck *c, struct csv *w)
{
	struct kvgpu_geom g = llama8b(KVGPU_FA_SPLIT, 1, 1);
	struct kvgpu_mem m;
	kvgpu *b = open_backend(c->backend, &g, false);
	char why[256] = "";

	csv_row(w, "backend,%s", c->backend);
	csv_row(w, "cuda_available,%d", kvgpu_cuda_available(why, sizeof(why)));
	csv_row(w, "cuda_probe,%s", why[0] ? why : "ok");
	csv_row(w, "quick,%d", c->quick);
	csv_row(w, "block_bytes_llama3_8b,%" PRIu64, kvgpu_block_bytes(&g));
	if (b != NULL && kvgpu_mem_info(b, &m) == KV_OK) {
		csv_row(w, "mem_total_bytes,%" PRIu64, m.total);
		csv_row(w, "mem_free0_bytes,%" PRIu64, m.free0);
	}
	if (b != NULL && kvgpu_describe(b, env_fact, w) != KV_OK)
		csv_row(w, "describe,%s", kvgpu_errmsg(b));
	kvgpu_close(b);
}

/*
 * vLLM's sizing for Llama-3-8B at gpu_memory_utilization 0.9 with 16 GiB
 * of weights, through the simulator's own arithmetic (core/kvsize.h):
 * page = kvc_page_bytes(8 heads, 128, bf16, 16 tokens), blocks =
 * kvc_blocks_for_budget(total * 0.9 - weights, page, 32 layers).  The pool
 * of that many blocks must then allocate, and its first and last blocks
 * (the far end: offsets past 2^32 words) must hold what is written there.
 * On the host backend the pool is not allocated (it would be the size of
 * a GPU).
 */
static void
section_capacity(struct ck *c, struct csv *w)
{
	struct kvgpu_geom g = llama8b(KVGPU_FA_SPLIT, 1, 0);
	struct kvgpu_mem m0, m1;
	kvgpu *b = open_backend(c->backend, &g, false);
	uint64_t blocks, page = kvc_page_bytes(8, 128, 2, 16, false);
	double avail;

	if (b == NULL || kvgpu_mem_info(b, &m0) != KV_OK || m0.total == 0) {
		csv_row(w, "capacity_probe,skipped (no device memory to "
			"size: %s)", c->backend);
		kvgpu_close(b);
		return;
	}
	kvgpu_close(b);
	avail = (double)m0.total * 0.9 - 16.0 * 1073741824.0;
	blocks = avail > 0 ? kvc_blocks_for_budget((uint64_t)avail, page, 32)
			   : 0;
	if (blocks > UINT32_MAX)
		blocks = UINT32_MAX;
	csv_row(w, "sim_page_bytes,%" PRIu64, page);
	csv_row(w, "sim_num_blocks,%" PRIu64, blocks);
	csv_row(w, "sim_kv_tokens,%" PRIu64, blocks * 16);
	g.dev_blocks = (uint32_t)blocks;
	b = blocks > 0 ? open_backend(c->backend, &g, false) : NULL;
	csv_row(w, "pool_alloc_ok,%d", b != NULL);
	if (b != NULL && kvgpu_mem_info(b, &m1) == KV_OK) {
		csv_row(w, "pool_bytes,%" PRIu64, m1.dev_bytes);
		csv_row(w, "pool_free0_bytes,%" PRIu64, m1.free0);
		csv_row(w, "pool_free1_bytes,%" PRIu64, m1.free1);
		csv_row(w, "pool_overhead_bytes,%" PRId64,
			(int64_t)(m1.free0 - m1.free1) - (int64_t)m1.dev_bytes);
	}
	if (b != NULL) {
		struct kvgpu_slot sl[32];
		struct kvgpu_verdict d;
		int ok;

		for (uint32_t i = 0; i < 32; i++)
			sl[i] = (struct kvgpu_slot){
				.block = i < 16 ? 0 : (int32_t)(blocks - 1),
				.slot = i % 16, .pos = i, .key = 0x5eed };
		ok = kvgpu_fill(b, KVGPU_DEV, sl, 32) == KV_OK &&
		     kvgpu_verify(b, KVGPU_DEV, sl, 32, &d) == KV_OK &&
		     d.mismatches == 0;
		csv_row(w, "pool_ends_verified,%d", ok);
		if (!ok)
			c->failures++;
	}
	if (b == NULL)
		c->failures++;
	kvgpu_close(b);
}

/* ---- sweeps ---------------------------------------------------------- */

/* Time `reps` copies of pairs i -> i, i < n (after 2 warm-ups). */
static int
time_copies(kvgpu *b, enum kvgpu_dir dir, enum kvgpu_strat st, uint32_t n,
	    int reps, struct kvgpu_timing *t)
{
	struct kvgpu_pair *p = malloc(n * sizeof(*p));
	int rc = 0;

	if (p == NULL)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		p[i] = (struct kvgpu_pair){ i, dir == KVGPU_D2D ? i + n : i };
	if (scattered) {
		uint64_t x = 0x9e3779b97f4a7c15ull;

		for (uint32_t i = n; i > 1; i--)
			for (int side = 0; side < 2; side++) {
				int64_t *u, *v, t;

				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				u = side ? &p[i - 1].dst : &p[i - 1].src;
				v = side ? &p[x % i].dst : &p[x % i].src;
				t = *u, *u = *v, *v = t;
			}
	}
	for (int r = -2; r < reps && rc == 0; r++) {
		struct kvgpu_timing tt;

		if (kvgpu_copy(b, dir, st, p, n, &tt) != KV_OK) {
			rc = -1;
			break;
		}
		if (r >= 0)
			t[r] = tt;
	}
	free(p);
	return rc;
}

/* One sweep point: every strategy and direction, `reps` rows each. */
static void
sweep_point(struct csv *w, kvgpu *b, uint64_t chunk, uint32_t n,
	    enum kvgpu_hostmem hm, int reps)
{
	struct kvgpu_timing t[7];

	for (int s = 0; s < KVGPU_NSTRATS; s++)
		for (int d = 0; d < 2; d++) {
			enum kvgpu_strat st = (enum kvgpu_strat)s;
			enum kvgpu_dir dir = (enum kvgpu_dir)d;
			uint64_t tot = chunk * n;

			if (hm == KVGPU_PAGEABLE && st != KVGPU_PER_CHUNK)
				continue;
			if (time_copies(b, dir, st, n, reps, t))
				continue;	/* not supported */
			for (int r = 0; r < reps; r++)
				csv_row(w, "sweep,%s,%s,%s,%" PRIu64 ",%u,"
					"%" PRIu64 ",%d,%" PRId64 ",%" PRId64
					",%.3f", kvgpu_strat_name(st),
					kvgpu_dir_name(dir),
					kvgpu_hostmem_name(hm), chunk, n, tot,
					r, t[r].dev_ns, t[r].submit_ns,
					t[r].dev_ns > 0 ? (double)tot /
					(double)t[r].dev_ns : 0.0);
		}
}

/*
 * Chunk sizes x chunk counts x strategy x direction x host memory.  A
 * chunk is one block of a cross-layer pool of 1 layer and 1 token, so
 * n chunks are n pairs.
 */
static void
section_sweep(struct ck *c, struct csv *w)
{
	static const uint64_t chunk_full[] = { 4096, 16384, 32768, 65536,
					       262144, 2097152, 8388608 };
	static const uint32_t n_full[] = { 1, 16, 256, 2048 };
	static const uint64_t chunk_quick[] = { 4096, 65536, 1048576 };
	static const uint32_t n_quick[] = { 1, 8, 64 };
	const uint64_t *chunk = c->quick ? chunk_quick : chunk_full;
	const uint32_t *nn = c->quick ? n_quick : n_full;
	size_t nchunk = c->quick ? 3 : 7, nnn = c->quick ? 3 : 4;
	uint64_t cap = c->quick ? 64ull << 20 : 512ull << 20;
	int reps = c->quick ? 3 : 7;

	for (int hm = 0; hm < KVGPU_NHOSTMEMS; hm++)
		for (size_t i = 0; i < nchunk && !late(c); i++) {
			uint32_t maxn = 0;
			struct kvgpu_geom g = { 1, 1, (uint32_t)(chunk[i] / 8),
						4, 1, KVGPU_CROSS_LAYER, 0, 0,
						(enum kvgpu_hostmem)hm, 0,
						{ 0 } };
			kvgpu *b;

			for (size_t j = 0; j < nnn; j++)
				if (chunk[i] * nn[j] <= cap)
					maxn = nn[j];
			g.dev_blocks = g.host_blocks = maxn;
			b = open_backend(c->backend, &g, false);
			if (b == NULL) {
				c->failures++;
				continue;
			}
			for (size_t j = 0; j < nnn && !late(c); j++)
				if (nn[j] <= maxn)
					sweep_point(w, b, chunk[i], nn[j],
						    (enum kvgpu_hostmem)hm,
						    reps);
			kvgpu_close(b);
		}
}

/* One layout point: per-chunk, batch, gather x both directions. */
static void
layout_point(struct csv *w, kvgpu *b, const struct kvgpu_geom *g,
	     uint32_t nb, int reps)
{
	static const enum kvgpu_strat strats[] = { KVGPU_PER_CHUNK,
						   KVGPU_BATCH, KVGPU_GATHER };
	struct kvgpu_timing t[7];

	for (size_t s = 0; s < 3; s++)
		for (int d = 0; d < 2; d++) {
			enum kvgpu_dir dir = (enum kvgpu_dir)d;

			if (time_copies(b, dir, strats[s], nb, reps, t))
				continue;
			for (int r = 0; r < reps; r++)
				csv_row(w, "llama-3-8b,%s,%s,%s,%u,%" PRIu64
					",%" PRIu64 ",%d,%" PRId64,
					kvgpu_layout_name(g->layout),
					kvgpu_dir_name(dir),
					kvgpu_strat_name(strats[s]), nb,
					(uint64_t)nb * kvgpu_chunks(g),
					(uint64_t)nb * kvgpu_block_bytes(g), r,
					t[r].dev_ns);
		}
}

static void
section_layout(struct ck *c, struct csv *w)
{
	static const uint32_t nfull[] = { 1, 8, 64, 512 };
	static const uint32_t nquick[] = { 1, 8 };
	const uint32_t *nb = c->quick ? nquick : nfull;
	size_t nnb = c->quick ? 2 : 4;
	int reps = c->quick ? 3 : 7;

	for (int l = 0; l < KVGPU_NLAYOUTS && !late(c); l++) {
		uint32_t maxn = nb[nnb - 1];
		struct kvgpu_geom g = llama8b((enum kvgpu_layout)l, maxn,
					      maxn);
		kvgpu *b = open_backend(c->backend, &g, false);

		if (b == NULL) {
			c->failures++;
			continue;
		}
		for (size_t j = 0; j < nnb && !late(c); j++)
			layout_point(w, b, &g, nb[j], reps);
		kvgpu_close(b);
	}
}

static void
section_cow(struct ck *c, struct csv *w)
{
	static const uint32_t pfull[] = { 1, 64, 1024 };
	static const uint32_t pquick[] = { 1, 8 };
	const uint32_t *np = c->quick ? pquick : pfull;
	size_t nnp = c->quick ? 2 : 3;
	int reps = c->quick ? 3 : 7;
	struct kvgpu_timing t[7];

	for (int l = 0; l < KVGPU_NLAYOUTS && !late(c); l++) {
		uint32_t maxn = np[nnp - 1];
		struct kvgpu_geom g = llama8b((enum kvgpu_layout)l, 2 * maxn,
					      0);
		kvgpu *b = open_backend(c->backend, &g, false);

		if (b == NULL) {
			c->failures++;
			continue;
		}
		for (size_t j = 0; j < nnp && !late(c); j++)
			for (int s = 0; s < 2; s++) {
				enum kvgpu_strat st = s ? KVGPU_GATHER :
						     KVGPU_PER_CHUNK;

				if (time_copies(b, KVGPU_D2D, st, np[j], reps,
						t))
					continue;
				for (int r = 0; r < reps; r++)
					csv_row(w, "%s,%s,%u,%" PRIu64 ",%d,"
						"%" PRId64,
						kvgpu_layout_name(g.layout),
						kvgpu_strat_name(st), np[j],
						(uint64_t)np[j] *
						kvgpu_block_bytes(&g), r,
						t[r].dev_ns);
			}
		kvgpu_close(b);
	}
}

/* ---- integrity ------------------------------------------------------- */

struct trace {
	const char *name, *policy;
	int swap;
	bool prefix_caching;
	uint64_t seed;
	int shape;		/* enum kvdrive_shape; -1: one full group */
	uint64_t offload;	/* CPU tier blocks (kvdrive offload); 0: none */
};

struct outcome {
	int rc;
	struct kvdrive_result r;
	struct kvval_stats s;
	uint64_t injected, hazards;
	char why[512];
};

static void
replay(const char *backend, const struct trace *t, bool quick,
       enum kvgpu_fault f, uint32_t skip, struct outcome *o)
{
	struct kvdrive_opts d;
	struct kvval_pool pool;
	struct kvgpu_geom g = { 4, 2, 64, 2, 16, KVGPU_FA_SPLIT, 0, 0,
				KVGPU_PINNED, 0, { 0 } };
	struct kvval_opts vo = { KVGPU_BATCH, 8, 0, false, false };
	bool refused;
	kvgpu *b;
	kvval *v;

	memset(o, 0, sizeof(*o));
	kvdrive_opts_init(&d);
	d.policy = t->policy;
	d.preemption = t->swap;
	d.prefix_caching = t->prefix_caching;
	d.seed = t->seed;
	d.requests = quick ? 60 : 300;
	if (t->offload > 0) {
		/* a pool too small for the shared prefixes: they come back
		 * from the CPU tier */
		d.offload_blocks = t->offload;
		d.gpu_blocks = 40;
	}
	if (t->shape >= 0) {
		/* hybrids: a pool that still preempts with 2-4 groups */
		kvdrive_hybrid(&d, (enum kvdrive_shape)t->shape);
		d.gpu_blocks = 96;
		d.cpu_blocks = 192;
	}
	kvdrive_pool(&d, &pool);
	g.block_size = pool.block_size;
	g.dev_blocks = pool.dev_blocks;
	g.host_blocks = pool.host_blocks;
	b = open_backend(backend, &g, false);
	if (b == NULL) {
		o->rc = 1;
		snprintf(o->why, sizeof(o->why), "cannot open %s", backend);
		return;
	}
	if (f != KVGPU_FAULT_NONE)
		kvgpu_fault_arm(b, f, t->offload ? KVGPU_T2D : KVGPU_D2H,
				skip);
	v = kvval_new(b, &vo);
	o->rc = v == NULL ? 1 : kvdrive_run(&d, v, &o->r, &refused, o->why,
					     sizeof(o->why));
	if (v != NULL)
		o->s = *kvval_stats(v);
	kvgpu_fault_stats(b, &o->injected, &o->hazards);
	kvval_free(v);
	kvgpu_close(b);
}

static void
integrity_row(struct csv *w, const struct trace *t, const char *fault,
	      const struct outcome *o, uint64_t host_digest, int detected)
{
	const char *ff = o->rc != 0 ? o->why : o->s.first_failure;
	char first[160];
	size_t i;

	/* the first failure, without commas */
	for (i = 0; ff[i] && i + 1 < sizeof(first); i++)
		first[i] = ff[i] == ',' ? ';' : ff[i];
	first[i] = '\0';
	csv_row(w, "%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ","
		"%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%s,%016" PRIx64 ","
		"%016" PRIx64 ",%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64,
		t->name, fault, o->r.steps, o->r.preemptions,
		o->r.swap_out_blocks, o->r.swap_in_blocks, o->r.cow_blocks,
		o->s.verified_slots, o->s.mismatched_words, first,
		o->s.digest, host_digest, detected, o->s.state_checks,
		o->s.window_slots, o->hazards);
}

/* One trace again with fault f armed on the backend under test, on the
 * second swap-out batch (an offload trace: tier load): it must be
 * detected. */
static void
inject(struct ck *c, struct csv *w, const struct trace *t,
       enum kvgpu_fault f, uint64_t host_digest)
{
	char name[64];
	struct outcome o;

	snprintf(name, sizeof(name), "fault:%s:%s", kvgpu_fault_name(f),
		 c->backend);
	replay(name, t, c->quick, f, 1, &o);
	integrity_row(w, t, kvgpu_fault_name(f), &o, host_digest,
		      o.s.failures > 0);
	if (o.rc != 0 || o.injected != 1 || o.s.failures == 0) {
		fprintf(stderr, "kvsim-gpucheck: %s: fault %s not detected "
			"(%s)\n", t->name, kvgpu_fault_name(f),
			o.rc ? o.why : o.injected != 1 ? "not injected" :
			"no failure");
		c->failures++;
	}
}

/*
 * The ordering hazard with every copy strategy (kvdrive_hazard): in the
 * order issued A's host copy and B's blocks arrive whole; with the
 * swap-in run first ("fault:invert" over the backend) A's host copy must
 * be found wrong.  Rows in integrity.csv: trace "hazard-STRATEGY".
 */
static void
hazards(struct ck *c, struct csv *w)
{
	for (int s = 0; s < KVGPU_NSTRATS && !late(c); s++)
		for (int inv = 0; inv < 2; inv++) {
			enum kvgpu_strat st = (enum kvgpu_strat)s;
			struct kvdrive_hazard h;
			char name[64], why[512];
			bool bad;

			snprintf(name, sizeof(name), "%s%s",
				 inv ? "fault:invert:" : "", c->backend);
			if (kvdrive_hazard(name, st, &h, why, sizeof(why))) {
				fprintf(stderr, "kvsim-gpucheck: %s\n", why);
				c->failures++;
				continue;
			}
			bad = h.reused == 0 || h.b_bad != 0 ||
			      (inv ? h.a_bad == 0 || h.hazards == 0 :
				     h.a_bad != 0);
			csv_row(w, "hazard-%s,%s,2,2,%" PRIu64 ",%" PRIu64
				",0,%" PRIu64 ",%" PRIu64 ",%s,0,0,%d,0,0,"
				"%" PRIu64, kvgpu_strat_name(st),
				inv ? "invert" : "none", h.out_blocks,
				h.in_blocks, h.slots_checked,
				h.a_bad + h.b_bad, bad ? "wrong outcome" : "",
				inv && h.a_bad > 0, h.hazards);
			if (bad) {
				fprintf(stderr, "kvsim-gpucheck: hazard %s "
					"%s: A %" PRIu64 " B %" PRIu64 " words "
					"wrong; %" PRIu64 " reused\n",
					kvgpu_strat_name(st), name, h.a_bad,
					h.b_bad, h.reused);
				c->failures++;
			}
		}
}

/*
 * Copy-on-write with every copy strategy (kvdrive_cow): the child of a
 * fork gets its prefix through the D2D copy; a corrupted or dropped copy
 * must be found.  Rows: trace "cow-STRATEGY", fault none|corrupt|drop.
 */
static void
cows(struct ck *c, struct csv *w)
{
	static const enum kvgpu_fault fs[] = {
		KVGPU_FAULT_NONE, KVGPU_FAULT_CORRUPT, KVGPU_FAULT_DROP
	};

	for (int s = 0; s < KVGPU_NSTRATS && !late(c); s++)
		for (size_t i = 0; i < 3; i++) {
			enum kvgpu_strat st = (enum kvgpu_strat)s;
			uint64_t bad;
			char why[512];
			bool wrong;

			if (kvdrive_cow(c->backend, fs[i], st, &bad, why,
					sizeof(why))) {
				fprintf(stderr, "kvsim-gpucheck: %s\n", why);
				c->failures++;
				continue;
			}
			wrong = fs[i] == KVGPU_FAULT_NONE ? bad != 0 :
				bad == 0;
			csv_row(w, "cow-%s,%s,1,0,0,0,1,6,%" PRIu64 ",%s,0,0,"
				"%d,0,0,0", kvgpu_strat_name(st),
				kvgpu_fault_name(fs[i]), bad,
				wrong ? "wrong outcome" : "",
				fs[i] != KVGPU_FAULT_NONE && bad > 0);
			if (wrong) {
				fprintf(stderr, "kvsim-gpucheck: cow %s %s: %"
					PRIu64 " words wrong\n",
					kvgpu_strat_name(st),
					kvgpu_fault_name(fs[i]), bad);
				c->failures++;
			}
		}
}

/*
 * Offload tier moves and a P/D transfer with every copy strategy
 * (kvdrive_moves): a store to a tier pool (pinned host memory on CUDA),
 * the load back, and a peer copy between two backends (on CUDA two
 * device pools on the device); clean they check 120 slots and pass, and
 * a fault in each kind of move must fire and be found.  Rows: trace
 * "moves-STRATEGY", fault none or MODE/DIR; tokens_checked is the slots
 * verified after the moves, mismatches the failures.
 */
static void
moves(struct ck *c, struct csv *w)
{
	static const char *const fs[] = {
		"none", "corrupt/d2t", "drop/t2d", "reorder/peer"
	};

	for (int s = 0; s < KVGPU_NSTRATS && !late(c); s++)
		for (size_t i = 0; i < 4; i++) {
			enum kvgpu_strat st = (enum kvgpu_strat)s;
			struct kvdrive_moves m;
			char name[96], why[512];
			bool clean = i == 0, wrong;

			if (clean)
				snprintf(name, sizeof(name), "%s", c->backend);
			else
				snprintf(name, sizeof(name), "fault:%s:%s",
					 fs[i], c->backend);
			if (kvdrive_moves(name, st, &m, why, sizeof(why))) {
				fprintf(stderr, "kvsim-gpucheck: moves %s: "
					"%s\n", name, why);
				c->failures++;
				continue;
			}
			wrong = clean ? m.failures != 0 || m.move_slots != 120 :
				m.injected == 0 || m.failures == 0;
			csv_row(w, "moves-%s,%s,1,0,0,0,0,%" PRIu64 ",%" PRIu64
				",%s,0,0,%d,0,0,0", kvgpu_strat_name(st), fs[i],
				m.move_slots, clean ? m.failures : 0,
				wrong ? "wrong outcome" : "",
				!clean && !wrong);
			if (wrong) {
				fprintf(stderr, "kvsim-gpucheck: moves %s %s: "
					"%" PRIu64 " failures, %" PRIu64
					" injected\n", kvgpu_strat_name(st),
					fs[i], m.failures, m.injected);
				c->failures++;
			}
		}
}

static void
section_integrity(struct ck *c, struct csv *w, struct csv *fr)
{
	static const struct trace traces[] = {
		{ "v0-swap", "vllm-v0", 1, true, 11, -1, 0 },
		{ "kvsim-swap", "kvsim", 1, true, 12, -1, 0 },
		{ "v1-recompute", "vllm-v1", 0, true, 13, -1, 0 },
		{ "sliding-swap", "kvsim", 1, true, 14, KVDRIVE_SLIDING, 0 },
		{ "mamba-swap", "kvsim", 1, false, 15, KVDRIVE_MAMBA, 0 },
		{ "v1-mamba-recompute", "vllm-v1", 0, false, 16,
		  KVDRIVE_MAMBA, 0 },
		{ "v1-offload", "vllm-v1", 0, true, 17, -1, 64 },
	};
	const size_t ntraces = sizeof(traces) / sizeof(traces[0]);
	static const enum kvgpu_fault faults[] = {
		KVGPU_FAULT_CORRUPT, KVGPU_FAULT_DROP, KVGPU_FAULT_REORDER
	};

	for (size_t i = 0; i < ntraces && !late(c); i++) {
		const struct trace *t = &traces[i];
		struct outcome dev, host;

		replay(c->backend, t, c->quick, KVGPU_FAULT_NONE, 0, &dev);
		replay("host", t, c->quick, KVGPU_FAULT_NONE, 0, &host);
		integrity_row(w, t, "none", &dev, host.s.digest, 0);
		csv_row(fr, "%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRIu64, t->name, dev.r.steps, dev.s.frag_scans,
			dev.s.frag_live_blocks, dev.s.frag_expected_slots,
			dev.s.frag_poison_slots);
		if (dev.rc != 0 || dev.s.failures != 0 ||
		    dev.s.digest != host.s.digest) {
			fprintf(stderr, "kvsim-gpucheck: %s: %s%s\n", t->name,
				dev.rc ? dev.why : dev.s.first_failure,
				dev.s.digest != host.s.digest ?
				" (digest differs from the host's)" : "");
			c->failures++;
		}
		if (t->swap == 0 && t->offload == 0)
			continue;
		/* every fault must be detected, on the backend under test */
		for (size_t f = 0; f < 3 && !late(c); f++)
			inject(c, w, t, faults[f], host.s.digest);
	}
	hazards(c, w);
	cows(c, w);
	moves(c, w);
}

/* ---- main -------------------------------------------------------------- */

static void
usage(FILE *f)
{
	fprintf(f, "usage: kvsim-gpucheck [--backend host|cuda] [--out DIR] "
		"[--quick]\n"
		"                      [--deadline SECONDS] [--sections LIST]\n"
		"                      [--order contiguous|scattered]\n"
		"       kvsim-gpucheck --probe\n"
		"sections: env,capacity,sweep,layout,cow,integrity (default "
		"all)\n");
}

/* Median time of each sweep point of 64 KiB and 2 MiB chunks. */
static void
summary(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[512], key[160] = "", cur[160];
	int64_t v[8];
	unsigned long long bytes = 0;
	int n = 0;

	if (f == NULL)
		return;
	printf("\n%-44s %12s %8s\n", "strategy,dir,hostmem,chunk,n",
	       "median_ns", "GB/s");
	for (;;) {
		char st[32], dir[8], hm[16];
		unsigned long long cb = 0, nc, tb = 0;
		long long dev = 0, sub;
		int rep;
		double gb;
		bool row = fgets(line, sizeof(line), f) != NULL;

		if (row && sscanf(line, "sweep,%31[^,],%7[^,],%15[^,],%llu,"
				  "%llu,%llu,%d,%lld,%lld,%lf", st, dir, hm,
				  &cb, &nc, &tb, &rep, &dev, &sub, &gb) != 10)
			continue;
		if (row)
			snprintf(cur, sizeof(cur), "%s,%s,%s,%llu,%llu", st,
				 dir, hm, cb, nc);
		if (!row || strcmp(cur, key) != 0) {
			if (n > 0) {
				qsort(v, (size_t)n, sizeof(v[0]), cmp_i64);
				printf("%-44s %12lld %8.2f\n", key,
				       (long long)v[n / 2], v[n / 2] > 0 ?
				       (double)bytes / (double)v[n / 2] : 0.0);
			}
			n = 0;
			if (!row)
				break;
			snprintf(key, sizeof(key), "%s", cur);
			bytes = tb;
		}
		if ((cb == 65536 || cb == 2097152) && n < 8)
			v[n++] = dev;
	}
	fclose(f);
}

int
main(int argc, char **argv)
{
	struct ck c = { "host", ".", false, 300, 0, "", 0 };
	struct csv w;
	char why[256];

	/* a line at a time: a run killed at its deadline keeps its log */
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(c.sections, sizeof(c.sections),
		 "env,capacity,sweep,layout,cow,integrity");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--probe") == 0) {
			bool ok = kvgpu_cuda_available(why, sizeof(why));

			printf("%s\n", ok ? "cuda: ok" : why);
			return ok ? 0 : 77;
		} else if (strcmp(a, "--quick") == 0) {
			c.quick = true;
		} else if (strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (i + 1 < argc && strcmp(a, "--backend") == 0) {
			c.backend = argv[++i];
		} else if (i + 1 < argc && strcmp(a, "--out") == 0) {
			c.out = argv[++i];
		} else if (i + 1 < argc && strcmp(a, "--deadline") == 0) {
			c.deadline_s = atof(argv[++i]);
		} else if (i + 1 < argc && strcmp(a, "--order") == 0 &&
			   (strcmp(argv[i + 1], "scattered") == 0 ||
			    strcmp(argv[i + 1], "contiguous") == 0)) {
			scattered = strcmp(argv[++i], "scattered") == 0;
		} else if (i + 1 < argc && strcmp(a, "--sections") == 0) {
			snprintf(c.sections, sizeof(c.sections), "%s",
				 argv[++i]);
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (strcmp(c.backend, "cuda") == 0 &&
	    !kvgpu_cuda_available(why, sizeof(why))) {
		fprintf(stderr, "kvsim-gpucheck: %s\n", why);
		return 77;
	}
	if (mkdir(c.out, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "kvsim-gpucheck: %s: %s\n", c.out,
			strerror(errno));
		return 2;
	}
	c.t0 = now_ns();
	if ((wanted(&c, "env") || wanted(&c, "capacity")) &&
	    csv_open(&w, &c, "env.csv", "key,value") == 0) {
		if (wanted(&c, "env"))
			section_env(&c, &w);
		if (wanted(&c, "capacity"))
			section_capacity(&c, &w);
		csv_close(&w);
	}
	if (wanted(&c, "integrity")) {
		struct csv fr;

		if (csv_open(&w, &c, "integrity.csv", "trace,fault,steps,"
			     "preemptions,swap_out_blks,swap_in_blks,"
			     "cow_pairs,tokens_checked,mismatches,first_bad,"
			     "dev_digest,host_digest,detected,"
			     "states_checked,window_skipped,hazards") == 0 &&
		    csv_open(&fr, &c, "frag.csv", "trace,steps,scans,"
			     "live_blocks,sim_unwritten_slots,"
			     "measured_poison_slots") == 0) {
			section_integrity(&c, &w, &fr);
			csv_close(&fr);
		}
		csv_close(&w);
	}
	if ((wanted(&c, "sweep") || wanted(&c, "layout") ||
	     wanted(&c, "cow")) && csv_open(&w, &c, "copy_sweep.csv",
		     "section,strategy,dir,hostmem,chunk_bytes,n_chunks,"
		     "total_bytes,rep,dev_ns,submit_ns,gbps") == 0) {
		if (wanted(&c, "sweep"))
			section_sweep(&c, &w);
		csv_close(&w);
	}
	if (wanted(&c, "layout") &&
	    csv_open(&w, &c, "layout_sweep.csv", "model,layout,dir,strategy,"
		     "logical_blocks,chunks,total_bytes,rep,dev_ns") == 0) {
		section_layout(&c, &w);
		csv_close(&w);
	}
	if (wanted(&c, "cow") &&
	    csv_open(&w, &c, "cow.csv",
		     "layout,strategy,pairs,bytes,rep,dev_ns") == 0) {
		section_cow(&c, &w);
		csv_close(&w);
	}
	{
		char p[1100];

		snprintf(p, sizeof(p), "%s/copy_sweep.csv", c.out);
		summary(p);
	}
	printf("\nkvsim-gpucheck: backend %s, %.1f s, %s\n", c.backend,
	       (double)(now_ns() - c.t0) / 1e9,
	       c.failures ? "FAILED" : "all checks passed");
	return c.failures ? 1 : 0;
}
