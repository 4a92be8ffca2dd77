/*
 * cmd_validate.c -- `kvsim validate`: a simulation run (sim/run.h) with a
 * device backend executing every block operation its scheduler issues
 * (gpu/kvval.h): every computed slot holds the pattern of its token
 * prefix, checked bit-exactly after every swap, recompute, copy-on-write
 * and at completion.
 *
 * Reported: integrity failures (must be 0), the copies per class (swap-
 * out, swap-in, CoW) with their measured time, the time the cost model
 * gives the same copies (cost_copy_ns over the backend's geometry and
 * copy strategy) and the time the run charged for its swaps (the model's
 * geometry and defaults); the pool's measured fragmentation against the
 * slots no request has written; the digest of the run (equal on every
 * correct backend for the same configuration and seed).
 *
 * Geometry: "tiny" (the default: 2 layers of one 4-wide head, bf16 --
 * 16 bytes a slot, cheap enough for CI on the host) or "model" (the
 * model's own bytes per block and chunks per layout: what a device should
 * run).  Block ids, block size and pool sizes are always the run's.
 *
 * One backend and one verifier per replica, opened at the replica's
 * first step (its allocator gives the pool sizes).
 */
#include "config.h"

#include "sim/cli/cmd_validate.h"
#include "sim/cli/opts.h"
#include "sim/cli/simrun.h"

#include "gpu/kvval.h"
#include "sim/cost.h"
#include "sim/run.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int validate_main(int argc, char **argv);

struct vrep {
	kvgpu *g;
	kvval *v;
	int64_t sim_ns[KVGPU_NDIRS];	/* the run's charge for swaps */
};

struct vctx {
	const char *backend;
	enum kvgpu_strat strat;
	enum kvgpu_layout layout;
	bool model_geom;
	uint32_t frag_every;
	bool skip_stale;		/* --engine-hazards skip */
	struct vrep *rep;
	uint32_t nrep;
	struct cost_model cm;
	bool have_cm;
	uint64_t slot_bytes;		/* model geometry */
	uint32_t layers;
	uint32_t ngroups;		/* the allocator's KV cache groups */
};

static void
validate_usage(FILE *f)
{
	fprintf(f,
"usage: kvsim validate [CONFIG.yaml] [--backend host|cuda|fault:MODE]\n"
"                      [--set KEY=VALUE]... [--seed N] [--out DIR [--force]]\n"
"\n"
"Run a simulation with a device backend executing its block operations\n"
"and check every KV slot bit-exactly (docs/gpu.md).\n"
"\n"
"  -b, --backend NAME   host (default), cuda, fault:corrupt|drop|reorder|\n"
"                       invert[/DIR][@PAIR][:INNER] (test-only: exit 1\n"
"                       always, and a fault that never fired says so;\n"
"                       invert fires only where a swap-in reuses blocks\n"
"                       its step swapped out; DIR: the copies spoiled, d2h\n"
"                       (default), h2d, d2d, d2t or t2d (offload store or\n"
"                       load), peer (P/D transfer); PAIR: the pair\n"
"                       spoiled, N or last)\n"
"  -s, --set KEY=VALUE  override a configuration key (as kvsim run)\n"
"      --seed N         run seed\n"
"      --layout L       fa-split (default), fi-fused, ds-interleaved,\n"
"                       cross-layer\n"
"      --strategy S     per-chunk (default), batch, gather, staged\n"
"      --geometry G     tiny (default: cheap) or model (the model's bytes)\n"
"      --frag-every N   steps between fragmentation scans (16; 0 never)\n"
"      --engine-hazards write (default) or skip: an engine's stale prefix-\n"
"                       cache tokens are written as a correct engine would,\n"
"                       and counted; or left unwritten, as it leaves them\n"
"  -o, --out DIR        write validate.csv and validate_summary.csv there\n"
"  -f, --force          replace those two files if DIR has them\n"
"      --check          also audit the scheduler after every half step\n"
"  -q, --quiet          no startup lines\n"
"  -h, --help           this text\n"
"\n"
"Exit status: 0 every check passed, 1 an integrity failure, a fault\n"
"backend (caught or not) or a failed run, 2 bad usage or input.\n");
}

static struct vrep *
rep_of(struct vctx *x, uint32_t r, kvs *s, char *why, size_t len)
{
	struct vrep *p;
	const struct kvc_config *kc = kvc_config_of(kvs_kv(s));
	struct kvval_pool pool;
	struct kvgpu_geom g;
	struct kvval_opts vo = { x->strat, x->frag_every, 0, x->skip_stale,
				 simrun_checks() };
	kv_err e;

	/* one page size for every group, the pool of every group's ids */
	x->ngroups = kvc_ngroups(kvs_kv(s));
	kvval_pool(kc, x->ngroups, &pool);
	g = (struct kvgpu_geom){ 2, 1, 4, 2, pool.block_size, x->layout,
				 pool.dev_blocks, pool.host_blocks,
				 KVGPU_PINNED, 0, { 0 } };

	if (r >= x->nrep) {
		struct vrep *q = realloc(x->rep, (r + 1) * sizeof(*q));

		if (q == NULL) {
			snprintf(why, len, "out of memory");
			return NULL;
		}
		memset(q + x->nrep, 0, (r + 1 - x->nrep) * sizeof(*q));
		x->rep = q;
		x->nrep = r + 1;
	}
	p = &x->rep[r];
	if (p->v != NULL)
		return p;
	if (x->model_geom) {
		g.layers = x->layers;
		g.kv_heads = 1;
		g.dtype_bytes = 1;
		g.head_dim = (uint32_t)x->slot_bytes;
	}
	p->g = kvgpu_open(x->backend, &g, &e, why, len);
	if (p->g == NULL)
		return NULL;
	p->v = kvval_new(p->g, &vo);
	if (p->v == NULL) {
		snprintf(why, len, "out of memory");
		return NULL;
	}
	return p;
}

static int
on_scheduled(void *ctx, uint32_t r, kvs *s, const struct kvs_step *st,
	     const uint32_t *start, int64_t now, char *why, size_t len)
{
	struct vctx *x = ctx;
	struct vrep *p = rep_of(x, r, s, why, len);
	int64_t t;

	(void)now;
	if (p == NULL)
		return 1;
	if (x->have_cm) {
		t = cost_swap_ns(&x->cm, COST_D2H, st->nswap_out,
				 x->cm.layout);
		p->sim_ns[KVGPU_D2H] += t > 0 ? t : 0;
		t = cost_swap_ns(&x->cm, COST_H2D, st->nswap_in, x->cm.layout);
		p->sim_ns[KVGPU_H2D] += t > 0 ? t : 0;
	}
	return kvval_scheduled(p->v, s, st, start, why, len);
}

static int
on_computed(void *ctx, uint32_t r, kvs *s, const struct kvs_step *st,
	    const uint32_t *start, int64_t now, char *why, size_t len)
{
	struct vctx *x = ctx;
	struct vrep *p = rep_of(x, r, s, why, len);

	(void)now;
	return p == NULL ? 1 : kvval_computed(p->v, s, st, start, why, len);
}

static int
on_completed(void *ctx, uint32_t r, kvs *s, const struct kvs_step *st,
	     int64_t now, char *why, size_t len)
{
	struct vctx *x = ctx;
	struct vrep *p = rep_of(x, r, s, why, len);

	(void)now;
	return p == NULL ? 1 : kvval_completed(p->v, s, st, why, len);
}

/* An offload transfer starts on replica r: run and check it there. */
static int
on_offload_xfer(void *ctx, uint32_t r, kvs *s, const struct kvo_xfer *xf,
		int64_t now, char *why, size_t len)
{
	struct vctx *x = ctx;
	struct vrep *p = rep_of(x, r, s, why, len);

	(void)now;
	return p == NULL ? 1 : kvval_offload(p->v, s, xf, why, len);
}

/* A P/D transfer from replica src into replica dst: the peer copy
 * between their backends, checked on dst. */
static int
on_kv_transfer(void *ctx, uint32_t src, kvs *ss, kvs_req sr, uint32_t dst,
	       kvs *ds, kvs_req dr, const struct kvc_pair *p, uint32_t n,
	       int64_t now, char *why, size_t len)
{
	struct vctx *x = ctx;

	(void)now;
	/* rep_of may move x->rep: both first, then the pointers */
	if (rep_of(x, src, ss, why, len) == NULL ||
	    rep_of(x, dst, ds, why, len) == NULL)
		return 1;
	return kvval_transfer(x->rep[dst].v, ds, dr, x->rep[src].v, ss, sr,
			      p, n, why, len);
}

/* The run's own cost model (borrowed while R is open). */
static int
build_cost(struct vctx *x, const sim_run *R)
{
	const struct sz_result *sr = sim_run_sizing(R);

	x->cm = *sim_run_cost(R);
	x->have_cm = true;
	x->layers = x->cm.block_layers ? x->cm.block_layers : 1;
	x->slot_bytes = x->cm.block_bytes /
			(2ull * x->layers * sr->block_size);
	return 0;
}

static const char *const class_names[KVGPU_NDIRS] = {
	"swap_out", "swap_in", "cow"
};

/* kvval_stats.move[]: d2t, t2d, peer. */
#define NMOVES (KVGPU_NMOVES - KVGPU_NDIRS)
static const char *const move_names[NMOVES] = {
	"tier_out", "tier_in", "transfer"
};

/* Whether the run moved blocks to a tier or between replicas (the
 * reports gain their rows only then). */
static bool
has_moves(const struct kvval_stats *t)
{
	for (int m = 0; m < NMOVES; m++)
		if (t->move[m].batches > 0)
			return true;
	return false;
}

static void
class_add(struct kvval_class *a, const struct kvval_class *b)
{
	a->batches += b->batches;
	a->blocks += b->blocks;
	a->calls += b->calls;
	a->chunks += b->chunks;
	a->bytes += b->bytes;
	a->dev_ns += b->dev_ns;
	a->submit_ns += b->submit_ns;
}

/* The cost formula on the backend's own copies. */
static int64_t
model_ns(const struct vctx *x, int d, const struct kvval_class *c)
{
	if (!x->have_cm || d == KVGPU_D2D || c->blocks == 0)
		return -1;
	return cost_copy_ns(&x->cm, (enum cost_dir)d, (enum cost_copy)x->strat,
			    COST_HOST_PINNED, c->calls, c->chunks, c->bytes);
}

/* Write path through path.tmp and rename. */
static FILE *
tmp_open(const char *dir, const char *name, char *path, char *tmp,
	 size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/%s", dir, name);
	snprintf(tmp, len, "%s/.%s.tmp", dir, name);
	f = fopen(tmp, "w");
	if (f == NULL)
		fprintf(stderr, "kvsim validate: %s: %s\n", tmp,
			strerror(errno));
	return f;
}

static int
tmp_commit(FILE *f, const char *path, const char *tmp)
{
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		fprintf(stderr, "kvsim validate: %s: %s\n", path,
			strerror(errno));
		remove(tmp);
		return KVSIM_EXIT_USAGE;
	}
	return 0;
}

static void
sum_stats(const struct vctx *x, struct kvval_stats *t, int64_t *sim)
{
	memset(t, 0, sizeof(*t));
	for (int d = 0; d < KVGPU_NDIRS; d++)
		sim[d] = 0;
	for (uint32_t r = 0; r < x->nrep; r++) {
		const struct kvval_stats *s;

		if (x->rep[r].v == NULL)
			continue;
		s = kvval_stats(x->rep[r].v);
		if (t->failures == 0 && s->failures > 0) {
			int n = snprintf(t->first_failure,
					 sizeof(t->first_failure),
					 "replica %u: ", r);

			snprintf(t->first_failure + n,
				 sizeof(t->first_failure) - (size_t)n, "%.*s",
				 (int)(sizeof(t->first_failure) - (size_t)n -
				       1), s->first_failure);
		}
		t->steps += s->steps;
		t->preempt_swap += s->preempt_swap;
		t->preempt_recompute += s->preempt_recompute;
		t->written_slots += s->written_slots;
		t->verifies += s->verifies;
		t->verified_slots += s->verified_slots;
		t->verified_words += s->verified_words;
		t->mismatched_words += s->mismatched_words;
		t->failures += s->failures;
		t->full_checks += s->full_checks;
		t->frag_scans += s->frag_scans;
		t->frag_mismatches += s->frag_mismatches;
		t->frag_poison_slots += s->frag_poison_slots;
		t->frag_expected_slots += s->frag_expected_slots;
		t->frag_live_blocks += s->frag_live_blocks;
		t->frag_ahead_slots += s->frag_ahead_slots;
		t->own_blocks += s->own_blocks;
		t->dup_dsts += s->dup_dsts;
		t->stale_tokens += s->stale_tokens;
		t->window_slots += s->window_slots;
		t->state_checks += s->state_checks;
		t->digest = t->digest * 0x100000001b3ull ^ s->digest;
		for (int d = 0; d < KVGPU_NDIRS; d++) {
			class_add(&t->cls[d], &s->cls[d]);
			sim[d] += x->rep[r].sim_ns[d];
		}
		for (int m = 0; m < NMOVES; m++)
			class_add(&t->move[m], &s->move[m]);
		t->move_slots += s->move_slots;
		t->move_digests += s->move_digests;
	}
}

/*
 * The fault backend's own verdict (docs/gpu.md): a fault run passes no
 * check.  Its mode is the name's ("fault" alone: none).  0 when the
 * backend is not "fault..."; else 1, with "  FAILED: ..." printed unless
 * a fault that took effect was caught (the integrity failures say so).
 * A fault fires when it spoils a batch (kvgpu_fault_stats' injected;
 * invert's held swap-out must be overtaken by a swap-in onto a block it
 * reads).
 */
static const char *
dir_what(enum kvgpu_dir d)
{
	static const char *const w[KVGPU_NMOVES] = {
		"swap-out", "swap-in", "copy-on-write", "tier store",
		"tier load", "KV transfer"
	};

	return (unsigned)d < KVGPU_NMOVES ? w[d] : "?";
}

static const char *
dir_does(enum kvgpu_dir d)
{
	static const char *const w[KVGPU_NMOVES] = {
		"swaps", "swaps", "forks", "offloads", "loads from a tier",
		"disaggregates prefill and decode"
	};

	return (unsigned)d < KVGPU_NMOVES ? w[d] : "?";
}

static int
fault_verdict(const struct vctx *x, const struct kvval_stats *t, bool say)
{
	uint64_t inj = 0, haz = 0, i, h;
	enum kvgpu_fault f = KVGPU_FAULT_NONE;
	enum kvgpu_dir dir = KVGPU_D2H;
	char mode[32] = "none", dname[16] = "d2h";
	size_t n;

	if (strncmp(x->backend, "fault", 5) != 0 ||
	    (x->backend[5] != '\0' && x->backend[5] != ':'))
		return 0;
	if (x->backend[5] == ':' &&
	    (n = strcspn(x->backend + 6, ":@/")) > 0 && n < sizeof(mode))
		snprintf(mode, sizeof(mode), "%.*s", (int)n, x->backend + 6);
	(void)kvgpu_fault_parse(mode, &f);
	if (x->backend[5] == ':' && x->backend[6 + strlen(mode)] == '/' &&
	    (n = strcspn(x->backend + 7 + strlen(mode), ":@")) > 0 &&
	    n < sizeof(dname))
		snprintf(dname, sizeof(dname), "%.*s", (int)n,
			 x->backend + 7 + strlen(mode));
	(void)kvgpu_dir_parse(dname, &dir);
	for (uint32_t r = 0; r < x->nrep; r++)
		if (x->rep[r].g != NULL &&
		    kvgpu_fault_stats(x->rep[r].g, &i, &h) == KV_OK) {
			inj += i;
			haz += h;
		}
	if (!say)
		return 1;
	if (f == KVGPU_FAULT_NONE)
		printf("  FAILED: fault:none injects nothing: no fault was "
		       "tested (corrupt, drop, reorder or invert)\n");
	else if (inj == 0 && f == KVGPU_FAULT_INVERT)
		printf("  FAILED: fault:invert never fired: no step swapped in "
		       "onto a block its swap-out read (%" PRIu64 " hazards), "
		       "the only order it can spoil\n", haz);
	else if (inj == 0)
		printf("  FAILED: fault:%s%s%s never fired: the run copied no "
		       "%s batch%s that it could spoil (run one that %s)\n",
		       mode, dir != KVGPU_D2H ? "/" : "",
		       dir != KVGPU_D2H ? dname : "", dir_what(dir),
		       f == KVGPU_FAULT_REORDER ? " of two or more blocks" :
		       "", dir_does(dir));
	else if (t->failures == 0)
		printf("  FAILED: fault:%s spoiled %" PRIu64 " batch(es) and "
		       "no check failed: the verifier missed it\n", mode,
		       inj);
	return 1;
}

/* The notes under the table and the verdict of the integrity checks. */
static void
report_verdict(const struct vctx *x, const sim_run *R,
	       const struct kvval_stats *t)
{
	if (sim_run_parallel_requests(R) > 0)
		printf("  %" PRIu64 " requests asked for parallel "
		       "sampling (n > 1): %s\n", sim_run_parallel_requests(R),
		       sim_run_parallel_fanout(R) ? "each ran as n child "
		       "requests sharing the prompt" : "each ran as one "
		       "sequence, nothing forked");
	if (t->stale_tokens > 0)
		printf("  engine hazard: %" PRIu64 " tokens taken from "
		       "prefix-cache blocks that do not hold their KV "
		       "(docs/scheduler.md); %s\n", t->stale_tokens,
		       x->skip_stale ? "left unwritten, as the engine "
		       "modelled leaves them (--engine-hazards skip)" :
		       "written here as a correct engine would, never "
		       "computed by the engine modelled");
	if (t->failures > 0)
		printf("  FAILED: %" PRIu64 " integrity failure(s); first: "
		       "%s\n", t->failures, t->first_failure);
	else
		printf("  integrity: 0 failures\n");
	(void)fault_verdict(x, t, true);
}

/* The report on stdout: the run, the copies, the checks, the verdict. */
static void
report_print(const struct vctx *x, const sim_run *R,
	     const struct kvval_stats *t, const int64_t *sim)
{
	const struct kvgpu_geom *geo = x->nrep && x->rep[0].g ?
				       kvgpu_geom_of(x->rep[0].g) : NULL;

	printf("\nkvsim validate: backend %s, %s layout, %s copies, %s "
	       "geometry (%" PRIu64 " bytes a block), run %s\n", x->backend,
	       kvgpu_layout_name(x->layout), kvgpu_strat_name(x->strat),
	       x->model_geom ? "model" : "tiny",
	       geo ? kvgpu_block_bytes(geo) : 0, sim_run_id(R));
	printf("  steps %" PRIu64 ", preemptions %" PRIu64 " swap + %" PRIu64
	       " recompute, slots written %" PRIu64 "\n", t->steps,
	       t->preempt_swap, t->preempt_recompute, t->written_slots);
	printf("  checks %" PRIu64 " (%" PRIu64 " whole requests), slots "
	       "verified %" PRIu64 ", words %" PRIu64 "\n", t->verifies,
	       t->full_checks, t->verified_slots, t->verified_words);
	printf("  %-9s %8s %10s %14s %14s %14s\n", "copies", "blocks",
	       "bytes", "measured_ns", "model_ns", "sim_charged_ns");
	for (int d = 0; d < KVGPU_NDIRS; d++) {
		const struct kvval_class *c = &t->cls[d];

		printf("  %-9s %8" PRIu64 " %10" PRIu64 " %14" PRId64
		       " %14" PRId64 " %14" PRId64 "\n", class_names[d],
		       c->blocks, c->bytes, c->dev_ns, model_ns(x, d, c),
		       d == KVGPU_D2D ? (int64_t)-1 : sim[d]);
	}
	for (int m = 0; has_moves(t) && m < NMOVES; m++)
		printf("  %-9s %8" PRIu64 " %10" PRIu64 " %14" PRId64
		       " %14d %14d\n", move_names[m], t->move[m].blocks,
		       t->move[m].bytes, t->move[m].dev_ns, -1, -1);
	if (has_moves(t))
		printf("  offload and KV transfers: %" PRIu64 " slots verified "
		       "after the moves, %" PRIu64 " stored blocks of "
		       "finished requests compared whole\n", t->move_slots,
		       t->move_digests);
	printf("  groups %u: %" PRIu64 " states verified, %" PRIu64
	       " positions outside a sliding window skipped\n", x->ngroups,
	       t->state_checks, t->window_slots);
	printf("  fragmentation: %" PRIu64 " scans, %" PRIu64 " poisoned "
	       "slots measured, %" PRIu64 " unwritten by the verifier's "
	       "account\n", t->frag_scans, t->frag_poison_slots,
	       t->frag_expected_slots);
	if (t->own_blocks > 0)
		printf("  %" PRIu64 " blocks new to a request past its "
		       "computed tokens held its own data already (shared "
		       "blocks it computes again): rewritten, not poisoned; "
		       "%" PRIu64 " slots of live blocks held KV ahead of "
		       "their requests' computed tokens at the scans\n",
		       t->own_blocks, t->frag_ahead_slots);
	printf("  digest %016" PRIx64 "\n", t->digest);
	report_verdict(x, R, t);
}

/* validate.csv: one row per copy class. */
static int
report_classes(const struct vctx *x, const char *outdir,
	       const struct kvval_stats *t, const int64_t *sim)
{
	char path[1100], tmp[1100];
	FILE *f;

	f = tmp_open(outdir, "validate.csv", path, tmp, sizeof(path));
	if (f == NULL)
		return KVSIM_EXIT_USAGE;
	fprintf(f, "class,batches,blocks,chunks,bytes,measured_ns,"
		"submit_ns,model_ns,sim_charged_ns\n");
	for (int d = 0; d < KVGPU_NDIRS; d++) {
		const struct kvval_class *c = &t->cls[d];
		int64_t mn = model_ns(x, d, c);

		fprintf(f, "%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRId64 ",%" PRId64 ",", class_names[d],
			c->batches, c->blocks, c->chunks, c->bytes, c->dev_ns,
			c->submit_ns);
		if (mn >= 0)
			fprintf(f, "%" PRId64, mn);
		fputc(',', f);
		if (d != KVGPU_D2D && x->have_cm)
			fprintf(f, "%" PRId64, sim[d]);
		fputc('\n', f);
	}
	for (int m = 0; has_moves(t) && m < NMOVES; m++) {
		const struct kvval_class *c = &t->move[m];

		fprintf(f, "%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRId64 ",%" PRId64 ",,\n", move_names[m],
			c->batches, c->blocks, c->chunks, c->bytes, c->dev_ns,
			c->submit_ns);
	}
	return tmp_commit(f, path, tmp);
}

/* validate_summary.csv: key,value rows of the whole run. */
static int
report_summary(const struct vctx *x, const char *outdir, const sim_run *R,
	       const struct kvval_stats *t)
{
	char path[1100], tmp[1100];
	FILE *f;

	f = tmp_open(outdir, "validate_summary.csv", path, tmp, sizeof(path));
	if (f == NULL)
		return KVSIM_EXIT_USAGE;
	fprintf(f, "key,value\nbackend,%s\nlayout,%s\nstrategy,%s\n"
		"geometry,%s\nrun,%s\nsteps,%" PRIu64 "\n"
		"preempt_swap,%" PRIu64 "\npreempt_recompute,%" PRIu64 "\n"
		"written_slots,%" PRIu64 "\nchecks,%" PRIu64 "\n"
		"full_checks,%" PRIu64 "\nverified_slots,%" PRIu64 "\n"
		"verified_words,%" PRIu64 "\nmismatched_words,%" PRIu64 "\n"
		"failures,%" PRIu64 "\nfrag_scans,%" PRIu64 "\n"
		"frag_live_blocks,%" PRIu64 "\nfrag_unwritten_slots,%" PRIu64
		"\nfrag_poison_slots,%" PRIu64 "\nfrag_ahead_slots,%" PRIu64
		"\nown_data_blocks,%" PRIu64 "\ndup_destinations,%" PRIu64
		"\ngroups,%u\nstate_checks,%" PRIu64 "\nwindow_skipped_slots,%"
		PRIu64 "\nstale_cached_tokens,%" PRIu64 "\nengine_hazards,%s"
		"\ndigest,%016" PRIx64 "\n", x->backend,
		kvgpu_layout_name(x->layout), kvgpu_strat_name(x->strat),
		x->model_geom ? "model" : "tiny", sim_run_id(R), t->steps,
		t->preempt_swap, t->preempt_recompute, t->written_slots,
		t->verifies, t->full_checks, t->verified_slots,
		t->verified_words, t->mismatched_words, t->failures,
		t->frag_scans, t->frag_live_blocks, t->frag_expected_slots,
		t->frag_poison_slots, t->frag_ahead_slots, t->own_blocks,
		t->dup_dsts, x->ngroups, t->state_checks, t->window_slots,
		t->stale_tokens, x->skip_stale ? "skip" : "write", t->digest);
	if (has_moves(t))
		fprintf(f, "move_verified_slots,%" PRIu64 "\n"
			"move_digest_blocks,%" PRIu64 "\n", t->move_slots,
			t->move_digests);
	return tmp_commit(f, path, tmp);
}

/* The report on stdout, then validate.csv and validate_summary.csv in
 * outdir (none when outdir is NULL). */
static int
report(const struct vctx *x, const char *outdir, const sim_run *R)
{
	struct kvval_stats t;
	int64_t sim[KVGPU_NDIRS];
	int rc;

	sum_stats(x, &t, sim);
	report_print(x, R, &t, sim);
	if (outdir == NULL)
		return KVSIM_EXIT_OK;
	if (mkdir(outdir, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "kvsim validate: %s: %s\n", outdir,
			strerror(errno));
		return KVSIM_EXIT_USAGE;
	}
	if ((rc = report_classes(x, outdir, &t, sim)) != 0)
		return rc;
	return report_summary(x, outdir, R, &t);
}

/* An option of validate's own: --backend, --layout, --strategy,
 * --geometry, --frag-every, --engine-hazards. */
static int
validate_opt(struct vctx *x, int c, char *optarg)
{
	char *end;

	switch (c) {
	case 'b':
		x->backend = optarg;
		break;
	case 'L':
		if (!kvgpu_layout_parse(optarg, &x->layout)) {
			fprintf(stderr, "kvsim validate: --layout: unknown "
				"layout '%s'\n", optarg);
			return KVSIM_EXIT_USAGE;
		}
		break;
	case 'C':
		if (!kvgpu_strat_parse(optarg, &x->strat)) {
			fprintf(stderr, "kvsim validate: --strategy: unknown "
				"strategy '%s'\n", optarg);
			return KVSIM_EXIT_USAGE;
		}
		break;
	case 'G':
		if (strcmp(optarg, "tiny") != 0 &&
		    strcmp(optarg, "model") != 0) {
			fprintf(stderr, "kvsim validate: --geometry: tiny or "
				"model, not '%s'\n", optarg);
			return KVSIM_EXIT_USAGE;
		}
		x->model_geom = strcmp(optarg, "model") == 0;
		break;
	case 'F':
		errno = 0;
		x->frag_every = (uint32_t)strtoul(optarg, &end, 10);
		if (errno != 0 || *end != '\0' || *optarg == '-') {
			fprintf(stderr, "kvsim validate: --frag-every: not a "
				"count: '%s'\n", optarg);
			return KVSIM_EXIT_USAGE;
		}
		break;
	case 'H':
		if (strcmp(optarg, "write") != 0 &&
		    strcmp(optarg, "skip") != 0) {
			fprintf(stderr, "kvsim validate: --engine-hazards: "
				"write or skip, not '%s'\n", optarg);
			return KVSIM_EXIT_USAGE;
		}
		x->skip_stale = strcmp(optarg, "skip") == 0;
		break;
	}
	return KVSIM_EXIT_OK;
}

/* The options; -1 after --help. */
static int
validate_parse(struct cli_opts *o, struct vctx *x, struct sim_run_opts *ro,
	       int argc, char **argv)
{
	static const struct option lo[] = {
		{ "backend", required_argument, NULL, 'b' },
		CLI_LO_SET,
		CLI_LO_SEED,
		{ "layout", required_argument, NULL, 'L' },
		{ "strategy", required_argument, NULL, 'C' },
		{ "geometry", required_argument, NULL, 'G' },
		{ "frag-every", required_argument, NULL, 'F' },
		{ "engine-hazards", required_argument, NULL, 'H' },
		CLI_LO_OUT,
		CLI_LO_FORCE,
		CLI_LO_QUIET,
		{ "check", no_argument, NULL, 'c' },
		CLI_LO_HELP,
		CLI_LO_END
	};
	int c, rc;

	optind = 1;
	while ((c = cli_getopt(o, argc, argv, "b:s:o:fqh", lo)) != -1) {
		switch (c) {
		case 'b': case 'L': case 'C': case 'G': case 'F': case 'H':
			if ((rc = validate_opt(x, c, optarg)) != 0)
				return rc;
			break;
		case 'c':
			ro->check = true;
			break;
		case 'h':
			validate_usage(stdout);
			return -1;
		case CLI_OPT_BAD:
			return KVSIM_EXIT_USAGE;
		default:
			validate_usage(stderr);
			return KVSIM_EXIT_USAGE;
		}
	}
	ro->quiet = o->quiet;
	return KVSIM_EXIT_OK;
}

/* Before the run, which may be long: an earlier run's reports are not
 * replaced unless asked, and the backend must open (name, device). */
static int
validate_ready(const char *outdir, bool force, const struct vctx *x)
{
	static const char *const names[] = { "validate.csv",
					     "validate_summary.csv" };
	struct kvgpu_geom g = { 1, 1, 4, 1, 1, x->layout, 1, 1, KVGPU_PINNED,
				0, { 0 } };
	char err[1400];
	kvgpu *probe;
	kv_err e;

	for (int i = 0; outdir != NULL && !force && i < 2; i++) {
		char p[1100];

		snprintf(p, sizeof(p), "%s/%s", outdir, names[i]);
		if (access(p, F_OK) == 0) {
			fprintf(stderr, "kvsim validate: --out %s holds %s; "
				"refusing to overwrite it (use --force)\n",
				outdir, names[i]);
			return KVSIM_EXIT_USAGE;
		}
	}
	probe = kvgpu_open(x->backend, &g, &e, err, sizeof(err));
	if (probe == NULL) {
		fprintf(stderr, "kvsim validate: --backend %s: %s\n",
			x->backend, err);
		return KVSIM_EXIT_USAGE;
	}
	kvgpu_close(probe);
	return KVSIM_EXIT_OK;
}

int
validate_main(int argc, char **argv)
{
	struct vctx x = { "host", KVGPU_PER_CHUNK, KVGPU_FA_SPLIT, false, 16,
			  false, NULL, 0, { 0 }, false, 0, 0, 0 };
	struct sim_observer obs = { &x, on_scheduled, on_computed,
				    on_completed, on_offload_xfer,
				    on_kv_transfer };
	struct sim_config cfg;
	struct sim_run_opts ro;
	struct cli_opts co;
	sim_run *R = NULL;
	const char *file = NULL, *outdir;
	char err[1400], seedset[128];
	int rc;

	memset(&ro, 0, sizeof(ro));
	ro.prog = "kvsim validate";
	ro.obs = &obs;
	sim_config_init(&cfg);
	if ((rc = cli_opts_init(&co, "kvsim validate", CLI_SET | CLI_SEED |
				CLI_OUT | CLI_FORCE | CLI_QUIET, argc)) != 0)
		goto done;
	if ((rc = validate_parse(&co, &x, &ro, argc, argv)) != 0) {
		if (rc < 0)
			rc = KVSIM_EXIT_OK;
		goto done;
	}
	outdir = co.out;
	if ((rc = cli_positional("kvsim validate", argc, argv, optind,
				 co.sets, &co.nsets, &file, co.seed, seedset,
				 sizeof(seedset))) != 0)
		goto done;
	if ((rc = validate_ready(outdir, co.force, &x)) != 0)
		goto done;
	if (sim_config_from_args(&cfg, file, co.sets, co.nsets, err,
				 sizeof(err)) != KV_OK) {
		fprintf(stderr, "%s\n", err);
		rc = KVSIM_EXIT_USAGE;
		goto done;
	}
	if ((rc = simrun_open(&R, &cfg, &ro)) != 0)
		goto done;
	if ((rc = build_cost(&x, R)) != 0)
		goto done;
	if (x.model_geom && !x.have_cm) {
		fprintf(stderr, "kvsim validate: --geometry model needs a "
			"catalog model\n");
		rc = KVSIM_EXIT_USAGE;
		goto done;
	}
	rc = simrun_exec(R);
	if (rc != 0 && x.nrep == 0)
		goto done;
	{
		int r2 = report(&x, outdir, R);
		struct kvval_stats t;
		int64_t sim[KVGPU_NDIRS];

		sum_stats(&x, &t, sim);
		if (r2 != 0)
			rc = r2;
		else if (rc == 0 && (t.failures > 0 ||
				     fault_verdict(&x, &t, false)))
			rc = KVSIM_EXIT_FAIL;
	}
done:
	for (uint32_t r = 0; r < x.nrep; r++) {
		kvval_free(x.rep[r].v);
		kvgpu_close(x.rep[r].g);
	}
	free(x.rep);
	sim_run_close(R);
	sim_config_release(&cfg);
	cli_opts_release(&co);
	return rc;
}
