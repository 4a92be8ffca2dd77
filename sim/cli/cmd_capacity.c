/*
 * cmd_capacity.c -- `kvsim capacity`: static and dynamic capacity of one
 * or more configurations under SLOs (docs/capacity.md).
 *
 * Static: vLLM's sizing of the configuration (KV tokens, blocks, maximum
 * concurrency at max_model_len) and the concurrency at the workload's own
 * length mix -- the mean over its requests of the blocks each needs, per
 * KV cache group, from one pass over the stream.
 *
 * Dynamic: for each seed, reports/capacity.h's search over the arrival
 * rate (workload.target_rate), each evaluation a full simulation
 * (sim/run.h) judged on every --slo; a run whose TTFT or E2E quantile is
 * certainly over its limit stops early (run.h "sim_stop").  Seeds run in
 * parallel in child processes (--jobs), their results read back through
 * pipes in seed order, so the output does not depend on the scheduling.
 *
 * Writes capacity.csv (a row per configuration), capacity_points.csv
 * (every simulation) and capacity_groups.csv (static figures per group)
 * atomically in --out.  Exit: 0, 1 when a configuration meets its SLOs at
 * no rate >= --qps-min, 2 bad usage or input.
 */
#include "config.h"

#include "sim/cli/cmd_capacity.h"
#include "sim/cli/children.h"

#include "core/kvsize.h"
#include "reports/capacity.h"
#include "reports/plot.h"
#include "reports/rpt.h"
#include "sim/cli/mpipool.h"
#include "sim/cli/opts.h"
#include "sim/cli/simrun.h"
#include "sim/cli/outdir.h"
#include "sim/run.h"
#include "sim/runcfg.h"
#include "sim/vllmargs.h"
#include "sim/model/sizing.h"
#include "util/pool.h"
#include "workloads/wl.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int capacity_main(int argc, char **argv);
int auto_plot(const char *prog, const char *dir, bool quiet); /* cmd_run.c */

#define MAX_SLO 8
#define MAX_SEEDS 64
#define MAX_ACROSS 64
#define MAX_ACROSS_KEYS 8

static void
usage(FILE *f)
{
	fprintf(f,
"usage: kvsim capacity [CONFIG.yaml]... --slo METRIC:STAT<=SECONDS...\n"
"                      [--vllm-args ARGS]... [--set KEY=VALUE]...\n"
"                      [--across KEY=V1,V2,...]\n"
"                      [--seeds N] [--seed S] [--jobs K] [--qps-start Q]\n"
"                      [--qps-min Q] [--qps-max Q] [--tolerance F]\n"
"                      [--max-sims N] [--no-early-stop] [--progress]\n"
"                      [--out DIR] [--force] [--quiet] [--no-plot]\n"
"\n"
"The highest request rate at which each configuration meets every SLO,\n"
"found by bracketing and bisection on workload.target_rate, per seed,\n"
"and its static KV capacity (tokens, blocks, concurrency).\n"
"\n"
"  --slo S             e.g. ttft_s:p99<=2.0, tpot_s:p99<=0.1; metrics\n"
"                      ttft_s tpot_s itl_s e2e_s queue_s, statistics p50 p90\n"
"                      p95 p99 p999 mean max; repeatable (all must hold)\n"
"  --vllm-args ARGS    vllm serve's own options for every configuration,\n"
"                      as kvsim run takes them (before --set); repeatable\n"
"  -s, --set KEY=VALUE override a key of every configuration\n"
"  --across KEY=V,...  one configuration per value (e.g. gpu=a100-80g,h200);\n"
"                      repeatable: the keys go together, value i of each\n"
"                      in configuration i (gpu=h100-sxm,h200 --across\n"
"                      engine.tensor_parallel_size=4,2)\n"
"  --seeds N           seeds S..S+N-1 (default 3): one search each\n"
"  --seed S            the first seed (default 0)\n"
"  -j, --jobs K        searches run in parallel (default: online CPUs)\n"
"  --qps-start Q       first rate tried (default: the workload's own)\n"
"  --qps-min Q         below this, no capacity (default 0.01)\n"
"  --qps-max Q         not searched above (default 10000)\n"
"  --tolerance F       stop when the bracket is within F of its top (0.05)\n"
"  --max-sims N        simulations per search at most (default 40)\n"
"  --no-early-stop     run every simulation to its end\n"
"  --progress          a line per simulation on stderr (rate, verdict,\n"
"                      elapsed, ETA); the default on a terminal\n"
"  -o, --out DIR       reports (default kvsim-out/<time>)\n"
"  -f, --force         write into an existing --out\n"
"  -q, --quiet         no startup lines or table\n"
"      --no-plot       no plots (made when gnuplot is installed)\n"
"\n"
"Writes capacity.csv, capacity_points.csv and capacity_groups.csv.\n"
"Exit status: 0 ok, 1 an SLO is missed at every rate, 2 bad usage or input.\n");
}

/* One simulation's verdict, as the children send it back. */
struct point {
	uint32_t config, seed;
	double qps;
	double val[MAX_SLO];		/* each SLO's statistic */
	double ttft_p50, ttft_p99, tpot_p99, e2e_p99, queue_p99;
	double throughput, goodput, kv_usage_max;
	uint64_t completed, rejected, preemptions, max_running;
	uint8_t met, stopped;
};

/* A search's outcome. */
struct seedres {
	struct cap_search_result r;
	uint32_t npoints;
};

struct cap {
	/* options */
	struct cap_slo slo[MAX_SLO];
	size_t nslo;
	uint32_t seeds, jobs;
	struct cap_search_opts so;
	bool qps_start_given, early_stop, quiet;
	/* the configuration being searched */
	struct sim_config cfg;
	uint32_t config;
	uint64_t nreq;			/* the workload's requests */
	/* points of one search (in a child or inline) */
	struct point *pts;
	size_t npts, cappts;
	uint32_t seed;		/* the search's index: seed seed0 + seed */
	uint64_t seed0;		/* --seed */
	int argc;		/* the command's arguments, for the searches */
	char **argv;		/* on MPI ranks (search_ranks) */
	/* progress lines on stderr (--progress, or stderr a terminal) */
	bool progress;
	uint32_t nconfig;		/* configurations in all */
	double w0;			/* the command's start, wall seconds */
	double lo, hi;			/* the search's rates met, missed */
	uint32_t probes;		/* the search's simulations so far */
	double probe_s;			/* their wall time, summed */
};

/*
 * The simulations the search still needs, as reports/capacity.h's rule
 * goes: none once the bracket is within the tolerance, else one per
 * halving of it; unknown (-1) until a rate met and one missed are known.
 */
static int
cap_left(const struct cap *C)
{
	double w;
	int n = 0;

	if (!(C->lo > 0) || !(C->hi > 0))
		return -1;
	for (w = C->hi - C->lo; w > C->so.tol * C->hi && n < 64; w /= 2)
		n++;
	if (C->probes + (uint32_t)n > C->so.max_sims)
		n = C->probes < C->so.max_sims ? (int)(C->so.max_sims -
						       C->probes) : 0;
	return n;
}

/* One progress line: the probe, its verdict, the time and what is left
 * of this search. */
static void
cap_progress(struct cap *C, double qps, bool met, double t_probe)
{
	double now = cli_wall_s();
	int left;

	C->probes++;
	C->probe_s += t_probe;
	if (met && qps > C->lo)
		C->lo = qps;
	if (!met && (!(C->hi > 0) || qps < C->hi))
		C->hi = qps;
	left = cap_left(C);
	fprintf(stderr, "kvsim capacity: config %" PRIu32 "/%" PRIu32
		" seed %" PRIu64 " probe %" PRIu32 ": %.6g req/s %s "
		"(%.1f s), elapsed %.1f s, ETA ", C->config + 1, C->nconfig,
		C->seed0 + C->seed, C->probes, qps, met ? "met" : "missed",
		t_probe, now - C->w0);
	if (left < 0)
		fputs("? (bracketing)\n", stderr);
	else
		fprintf(stderr, "%.1f s (%d more)\n", (double)left *
			C->probe_s / (double)C->probes, left);
	fflush(stderr);
}

static int
push_point(struct cap *C, const struct point *p)
{
	if (C->npts == C->cappts) {
		size_t cap = C->cappts ? C->cappts * 2 : 64;
		struct point *n = realloc(C->pts, cap * sizeof(*n));

		if (n == NULL)
			return -1;
		C->pts = n;
		C->cappts = cap;
	}
	C->pts[C->npts++] = *p;
	return 0;
}

static double
stat_of(rpt *rep, const struct cap_slo *s)
{
	if (s->p < 0)
		return rpt_mean(rep, s->metric);
	return rpt_quantile(rep, s->metric, s->p);
}

/* cap_eval_fn: one simulation at qps. */
static int
eval(void *ctx, double qps, bool *met)
{
	struct cap *C = ctx;
	struct sim_config c = C->cfg;	/* shallow: sim_run_open copies */
	struct sim_run_opts o;
	struct point p;
	sim_run *R = NULL;
	rpt *rep;
	const struct rpt_totals *t;
	double dur, w = cli_wall_s();
	int rc;

	memset(&o, 0, sizeof(o));
	o.prog = "kvsim capacity";
	o.quiet = true;
	c.seed = C->seed0 + C->seed;
	c.wl.seed = c.seed;
	c.wl.target_rate = qps;
	if (C->early_stop) {
		/* every quantile SLO on a metric that unfinished requests
		 * can already be known to exceed */
		for (size_t i = 0; i < C->nslo; i++) {
			const struct cap_slo *s = &C->slo[i];
			struct sim_watch *w = &o.stop.w[o.stop.nwatch];

			if (s->p < 0 || o.stop.nwatch == SIM_MAX_WATCH)
				continue;
			if (strcmp(s->metric, "ttft") == 0)
				w->metric = SIM_W_TTFT;
			else if (strcmp(s->metric, "queue") == 0)
				w->metric = SIM_W_QUEUE;
			else if (strcmp(s->metric, "e2e") == 0)
				w->metric = SIM_W_E2E;
			else
				continue;
			w->p = s->p;
			w->limit_s = s->limit_s;
			o.stop.nwatch++;
		}
		o.stop.n_max = C->nreq;
	}
	rc = simrun_open(&R, &c, &o);
	if (rc == 0)
		rc = simrun_exec(R);
	if (rc != 0) {
		sim_run_close(R);
		return rc;
	}
	rep = sim_run_report(R);
	t = sim_run_totals(R);
	memset(&p, 0, sizeof(p));
	p.config = C->config;
	p.seed = C->seed;
	p.qps = qps;
	p.stopped = t->stopped;
	p.met = !t->stopped;
	for (size_t i = 0; i < C->nslo; i++) {
		p.val[i] = stat_of(rep, &C->slo[i]);
		if (!(p.val[i] <= C->slo[i].limit_s))
			p.met = 0;
	}
	if (rpt_completed(rep) == 0)
		p.met = 0;
	p.ttft_p50 = rpt_quantile(rep, "ttft", 0.5);
	p.ttft_p99 = rpt_quantile(rep, "ttft", 0.99);
	p.tpot_p99 = rpt_quantile(rep, "tpot", 0.99);
	p.e2e_p99 = rpt_quantile(rep, "e2e", 0.99);
	p.queue_p99 = rpt_quantile(rep, "queue", 0.99);
	dur = (double)t->duration_ns / 1e9;
	p.throughput = dur > 0 ? (double)rpt_completed(rep) / dur : 0;
	p.goodput = dur > 0 ? (double)rpt_good(rep) / dur : 0;
	p.kv_usage_max = t->kv_usage_max;
	p.completed = rpt_completed(rep);
	p.rejected = t->rejected;
	p.preemptions = t->preemptions;
	p.max_running = t->max_running;
	sim_run_close(R);
	*met = p.met;
	if (C->progress)
		cap_progress(C, qps, p.met, cli_wall_s() - w);
	if (push_point(C, &p) != 0) {
		fprintf(stderr, "kvsim capacity: out of memory\n");
		return KVSIM_EXIT_FAIL;
	}
	return KVSIM_EXIT_OK;
}

/* ---- seeds in child processes ------------------------------------------ */

static int
write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One search; its points are appended to C->pts. */
static int
search_seed(struct cap *C, uint32_t seed, struct seedres *out)
{
	size_t first = C->npts;
	int rc;

	C->seed = seed;
	C->lo = C->hi = 0;
	C->probes = 0;
	C->probe_s = 0;
	rc = cap_search(&C->so, eval, C, &out->r);
	out->npoints = (uint32_t)(C->npts - first);
	return rc;
}

/* pool_run_fn, in a child: search seed `index` and write the seedres,
 * then its points, to fd. */
static int
seed_job(void *ctx, size_t index, int fd)
{
	struct cap *C = ctx;
	struct seedres r;
	int status;

	C->npts = 0;
	memset(&r, 0, sizeof(r));
	status = search_seed(C, (uint32_t)index, &r);
	if (status != 0)
		return status;
	if (write_all(fd, &r, sizeof(r)) != 0 ||
	    write_all(fd, C->pts, C->npts * sizeof(*C->pts)) != 0)
		return KVSIM_EXIT_FAIL;
	return KVSIM_EXIT_OK;
}

/* A finished seed job: its status, or its seedres and points taken. */
static int
seed_result(struct cap *C, const struct pool_job *j, struct seedres *res)
{
	size_t want;

	if (j->status == KVSIM_EXIT_FAIL || j->status == KVSIM_EXIT_USAGE)
		return j->status;
	if (j->status != 0 || j->resultlen < sizeof(*res))
		return KVSIM_EXIT_FAIL;
	memcpy(res, j->result, sizeof(*res));
	want = sizeof(*res) + (size_t)res->npoints * sizeof(struct point);
	if (j->resultlen != want)
		return KVSIM_EXIT_FAIL;
	for (uint32_t i = 0; i < res->npoints; i++) {
		struct point p;

		memcpy(&p, j->result + sizeof(*res) + i * sizeof(p),
		       sizeof(p));
		if (push_point(C, &p) != 0)
			return KVSIM_EXIT_FAIL;
	}
	return KVSIM_EXIT_OK;
}

/*
 * Every seed's search on the worker ranks of an MPI job, a search per
 * job: `kvsim capacity --mpi-task CONFIG,SEED ARGS...` (cap_task) writes
 * what seed_job would to its standard output.  A search is one job, not
 * each of its simulations: each rate it tries depends on the verdict at
 * the one before.
 */
static enum pool_end
search_ranks(struct cap *C, struct pool_job *job, char *err, size_t errlen)
{
	struct pool_opts po = { .stop_on_fail = true };
	char exe[4096], spec[MAX_SEEDS][32];
	char **argv = calloc((size_t)C->seeds * ((size_t)C->argc + 4),
			     sizeof(*argv));
	enum pool_end end;

	if (argv == NULL || !children_self_exe(exe, sizeof(exe))) {
		snprintf(err, errlen, "out of memory, or no /proc/self/exe");
		free(argv);
		return POOL_ERROR;
	}
	for (uint32_t s = 0; s < C->seeds; s++) {
		char **a = argv + (size_t)s * ((size_t)C->argc + 4);

		snprintf(spec[s], sizeof(spec[s]), "%" PRIu32 ",%" PRIu32,
			 C->config, s);
		a[0] = exe;
		a[1] = C->argv[0];
		a[2] = "--mpi-task";
		a[3] = spec[s];
		for (int i = 1; i < C->argc; i++)
			a[3 + i] = C->argv[i];
		job[s].argv = a;
		job[s].id = spec[s];
	}
	end = mpipool_exec(job, C->seeds, &po, true, err, errlen);
	for (uint32_t s = 0; s < C->seeds; s++) {
		job[s].argv = NULL;
		job[s].id = NULL;
	}
	free(argv);
	return end;
}

/*
 * Every seed's search, results in seed order in res[].  In parallel the
 * seeds run in child processes (util/pool.h) or on MPI ranks
 * (search_ranks), which finish in any order;
 * their results are taken back in seed order so that the points come
 * out the same every time.  A failed seed stops the launching.
 */
static int
search_all(struct cap *C, struct seedres *res)
{
	struct pool_job job[MAX_SEEDS];
	struct pool_opts po = {
		.par = C->jobs, .run = seed_job, .ctx = C,
		.stop_on_fail = true,
	};
	char err[256];
	int rc = KVSIM_EXIT_OK;
	bool ranks = mpipool_active();

	if (!ranks && (C->jobs <= 1 || C->seeds == 1)) {
		for (uint32_t s = 0; s < C->seeds && rc == 0; s++)
			rc = search_seed(C, s, &res[s]);
		return rc;
	}
	memset(job, 0, sizeof(job));
	if ((ranks ? search_ranks(C, job, err, sizeof(err))
	     : pool_exec(job, C->seeds, &po, err, sizeof(err))) ==
	    POOL_ERROR) {
		fprintf(stderr, "kvsim capacity: %s\n", err);
		rc = KVSIM_EXIT_FAIL;
	}
	for (uint32_t s = 0; s < C->seeds && rc == 0; s++)
		if (job[s].status >= 0)
			rc = seed_result(C, &job[s], &res[s]);
	pool_jobs_release(job, C->seeds);
	return rc;
}

/* ---- static capacity ----------------------------------------------------- */

/* The largest burst: requests arriving at one instant. */
struct burst {
	uint64_t n;			/* its requests */
	uint64_t prompt_tokens;		/* their prompts, summed */
	int64_t at_ns;			/* the instant, from the first */
	uint64_t line;			/* the first's trace line; 0 none */
};

struct mix {
	uint64_t nreq;
	double span_s;
	double mean_tokens;		/* prompt + output */
	double mean_output;		/* output tokens */
	struct burst burst;		/* the most prompt tokens at once */
	double mean_blocks;		/* over every group */
	double group_blocks[SZ_MAX_GROUPS];
};

/* Request r into the running burst cur; the largest kept in best. */
static void
burst_add(struct burst *cur, struct burst *best, const struct wl_request *r,
	  int64_t t0, bool first)
{
	if (first || r->arrival_ns != t0 + cur->at_ns) {
		memset(cur, 0, sizeof(*cur));
		cur->at_ns = r->arrival_ns - t0;
		cur->line = r->src_line;
	}
	cur->n++;
	cur->prompt_tokens += r->prompt_tokens;
	if (cur->prompt_tokens > best->prompt_tokens)
		*best = *cur;
}

static int
workload_mix(const struct sim_config *cfg, const struct sz_result *sr,
	     struct mix *m)
{
	struct wl_config wc;
	struct wl_error we;
	wl_stream *ws = NULL;
	struct wl_request r;
	wl_err e;
	double tok = 0, out = 0, blk = 0, gb[SZ_MAX_GROUPS] = { 0 };
	struct burst cur = { 0, 0, 0, 0 };
	int64_t t0 = 0, t1 = 0;
	char buf[1200];

	memset(m, 0, sizeof(*m));
	wl_error_clear(&we);
	if (wl_config_copy(&wc, &cfg->wl) != WL_OK) {
		fprintf(stderr, "kvsim capacity: out of memory\n");
		return KVSIM_EXIT_FAIL;
	}
	wc.target_rate = 0;
	if (wl_open(&wc, &ws, &we) != WL_OK) {
		wl_error_format(&we, buf, sizeof(buf));
		fprintf(stderr, "kvsim capacity: %s\n", buf);
		wl_config_release(&wc);
		return KVSIM_EXIT_USAGE;
	}
	while ((e = wl_stream_next(ws, &r)) == WL_OK) {
		uint64_t len = (uint64_t)r.prompt_tokens + r.output_tokens;
		struct kvc_limits lim = sr->lim;

		if (m->nreq == 0)
			t0 = r.arrival_ns;
		t1 = r.arrival_ns;
		burst_add(&cur, &m->burst, &r, t0, m->nreq == 0);
		m->nreq++;
		out += (double)r.output_tokens;
		if (len > sr->max_model_len)
			len = sr->max_model_len;
		lim.max_model_len = len;
		tok += (double)len;
		blk += (double)kvc_blocks_per_request(sr->group, sr->ngroup,
						      &lim);
		for (size_t g = 0; g < sr->ngroup; g++)
			gb[g] += (double)kvc_worst_blocks(&sr->group[g], &lim);
	}
	if (e != WL_END) {
		wl_error_format(wl_stream_error(ws), buf, sizeof(buf));
		fprintf(stderr, "kvsim capacity: %s\n", buf);
		wl_stream_free(ws);
		wl_config_release(&wc);
		return KVSIM_EXIT_USAGE;
	}
	wl_stream_free(ws);
	wl_config_release(&wc);
	if (m->nreq == 0) {
		fprintf(stderr, "kvsim capacity: the workload has no "
			"requests\n");
		return KVSIM_EXIT_USAGE;
	}
	m->span_s = (double)(t1 - t0) / 1e9;
	m->mean_tokens = tok / (double)m->nreq;
	m->mean_output = out / (double)m->nreq;
	m->mean_blocks = blk / (double)m->nreq;
	for (size_t g = 0; g < sr->ngroup; g++)
		m->group_blocks[g] = gb[g] / (double)m->nreq;
	return KVSIM_EXIT_OK;
}

static const char *
kind_name(enum kvc_spec_kind k)
{
	static const char *const names[] = { "full", "sliding", "chunked",
		"state", "cross" };

	return (size_t)k < sizeof(names) / sizeof(names[0]) ? names[k]
							     : "other";
}

/* ---- driver ----------------------------------------------------------- */

/*
 * The median seed: the one whose answer is the median, the lower of the
 * two middle answers for an even number (ties to the lower seed).  Every
 * per-configuration figure comes from its search, so the answer is a rate
 * that one simulation met, and the columns beside it describe that one.
 */
static uint32_t
median_seed(const double *q, uint32_t n)
{
	uint32_t ord[MAX_SEEDS];

	for (uint32_t i = 0; i < n; i++) {
		uint32_t j = i;

		/* insertion sort by (answer, seed): n is small */
		while (j > 0 && q[ord[j - 1]] > q[i]) {
			ord[j] = ord[j - 1];
			j--;
		}
		ord[j] = i;
	}
	return ord[(n - 1) / 2];
}

static void
put_cfg_cols(FILE *f, uint32_t id, const char *source, const char *across,
	     const struct sim_config *c, const struct sz_result *sr,
	     const char *model, const char *gpu)
{
	fprintf(f, "%" PRIu32 ",", id);
	rpt_csv_field(f, source);
	fputc(',', f);
	rpt_csv_field(f, across);
	fputc(',', f);
	rpt_csv_field(f, model);
	fputc(',', f);
	rpt_csv_field(f, gpu);
	fprintf(f, ",%" PRIu32 ",", sr->tp);
	rpt_csv_field(f, c->policy);
	fprintf(f, ",%" PRIu32 ",", sr->block_size);
	rpt_csv_field(f, c->eng.kv_cache_dtype[0] ? c->eng.kv_cache_dtype
						 : "auto");
	fprintf(f, ",%.6g,%" PRIu64 ",", c->eng.gpu_memory_utilization,
		sr->max_model_len);
	rpt_csv_field(f, c->wl.trace ? c->wl.trace : "(generator)");
}

struct cfgsrc {
	const char *file;		/* NULL: the embedded default */
	char across[1024];		/* "KEY=VALUE[;KEY=VALUE...]" or "" */
	char set[MAX_ACROSS_KEYS][256];	/* each KEY=VALUE, a --set */
	size_t nset;
};

/* One --across KEY=V1,V2,...: its key and values. */
struct across_key {
	char key[128];
	char *vals;			/* the values' text, split in place */
	const char *list[MAX_ACROSS];
	size_t n;
};

struct cap_cmd {
	struct cap C;
	struct cli_opts o;		/* --set, --out, --force, --quiet,
					 * --no-plot */
	const char **files;
	size_t nfiles;
	const char **vargs;		/* --vllm-args, in order */
	size_t nvargs;
	struct across_key ak[MAX_ACROSS_KEYS];	/* --across, in order */
	size_t nak;
	size_t nacross;			/* values of each (all alike) */
	struct cfgsrc *srcs;
	size_t ncfg;
	char outdir[1024];
	char slotxt[512];		/* the SLOs, ';'-separated */
	bool any_none;			/* an SLO missed at every rate */
	bool task;			/* --mpi-task: one search, on a rank */
	uint32_t task_config, task_seed;
};

/* --slo S (at most MAX_SLO). */
static int
cap_opt_slo(struct cap *C, const char *v)
{
	char why[1400];

	if (C->nslo == MAX_SLO) {
		fprintf(stderr, "kvsim capacity: at most %d --slo\n", MAX_SLO);
		return KVSIM_EXIT_USAGE;
	}
	if (cap_slo_parse(v, &C->slo[C->nslo], why, sizeof(why)) != 0) {
		fprintf(stderr, "kvsim capacity: %s\n", why);
		return KVSIM_EXIT_USAGE;
	}
	C->nslo++;
	return KVSIM_EXIT_OK;
}

/*
 * --across KEY=V1,V2,..., repeatable: the keys go together, value i of
 * each in configuration i (gpu=h100-sxm,h200 with
 * engine.tensor_parallel_size=4,2: 4 x H100 and 2 x H200), so every
 * --across lists as many values.
 */
static int
cap_opt_across(struct cap_cmd *x, const char *v)
{
	const char *eq = strchr(v, '=');
	struct across_key *k = &x->ak[x->nak];
	char *tok, *save = NULL;

	if (eq == NULL || eq == v || (size_t)(eq - v) >= sizeof(k->key)) {
		fprintf(stderr, "kvsim capacity: --across %s: expected "
			"KEY=V1,V2,...\n", v);
		return KVSIM_EXIT_USAGE;
	}
	if (x->nak == MAX_ACROSS_KEYS) {
		fprintf(stderr, "kvsim capacity: at most %d --across\n",
			MAX_ACROSS_KEYS);
		return KVSIM_EXIT_USAGE;
	}
	snprintf(k->key, sizeof(k->key), "%.*s", (int)(eq - v), v);
	for (size_t i = 0; i < x->nak; i++)
		if (strcmp(x->ak[i].key, k->key) == 0) {
			fprintf(stderr, "kvsim capacity: --across %s: the "
				"key is given twice\n", k->key);
			return KVSIM_EXIT_USAGE;
		}
	if ((k->vals = strdup(eq + 1)) == NULL)
		return KVSIM_EXIT_FAIL;
	x->nak++;
	for (tok = strtok_r(k->vals, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		if (k->n == MAX_ACROSS) {
			fprintf(stderr, "kvsim capacity: --across: at most "
				"%d values\n", MAX_ACROSS);
			return KVSIM_EXIT_USAGE;
		}
		k->list[k->n++] = tok;
	}
	if (k->n == 0) {
		fprintf(stderr, "kvsim capacity: --across %s: no values\n", v);
		return KVSIM_EXIT_USAGE;
	}
	if (x->nak > 1 && k->n != x->ak[0].n) {
		fprintf(stderr, "kvsim capacity: --across %s has %zu values, "
			"--across %s %zu: the keys go together, value i of "
			"each in configuration i\n", k->key, k->n,
			x->ak[0].key, x->ak[0].n);
		return KVSIM_EXIT_USAGE;
	}
	x->nacross = k->n;
	return KVSIM_EXIT_OK;
}

/* --seed S, a non-negative integer. */
static int
cap_opt_seed(struct cap *C, const char *v)
{
	char *end = NULL;

	errno = 0;
	C->seed0 = strtoull(v, &end, 10);
	if (*v == '\0' || *v == '-' || *end != '\0' || errno != 0) {
		fprintf(stderr, "kvsim capacity: --seed %s: expected a "
			"non-negative integer\n", v);
		return KVSIM_EXIT_USAGE;
	}
	return KVSIM_EXIT_OK;
}

/* --seeds N ('N'), --jobs K ('j'), --max-sims N ('x'). */
static int
cap_opt_count(struct cap *C, int c, const char *v)
{
	char *end = NULL;
	unsigned long u;

	errno = 0;
	u = strtoul(v, &end, 10);
	if (*v == '\0' || *end != '\0' || errno != 0 || u < 1 ||
	    (c == 'N' && u > MAX_SEEDS) || u > 100000) {
		fprintf(stderr, "kvsim capacity: --%s %s: expected an integer "
			"in 1..%d\n", c == 'N' ? "seeds" : c == 'j' ? "jobs"
			: "max-sims", v, c == 'N' ? MAX_SEEDS : 100000);
		return KVSIM_EXIT_USAGE;
	}
	if (c == 'N')
		C->seeds = (uint32_t)u;
	else if (c == 'j')
		C->jobs = (uint32_t)u;
	else
		C->so.max_sims = (uint32_t)u;
	return KVSIM_EXIT_OK;
}

/* --qps-start ('Q'), --qps-min ('m'), --qps-max ('M'), --tolerance. */
static int
cap_opt_rate(struct cap *C, int c, const char *v)
{
	char *end = NULL;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (*v == '\0' || *end != '\0' || errno != 0 || !(d > 0) ||
	    !isfinite(d) || (c == 't' && d >= 1)) {
		fprintf(stderr, "kvsim capacity: bad value '%s' for --%s\n", v,
			c == 'Q' ? "qps-start" : c == 'm' ? "qps-min"
			: c == 'M' ? "qps-max" : "tolerance (0 < F < 1)");
		return KVSIM_EXIT_USAGE;
	}
	if (c == 'Q') {
		C->so.qps_start = d;
		C->qps_start_given = true;
	} else if (c == 'm') {
		C->so.qps_min = d;
	} else if (c == 'M') {
		C->so.qps_max = d;
	} else {
		C->so.tol = d;
	}
	return KVSIM_EXIT_OK;
}

/* --mpi-task CONFIG,SEED (given by search_ranks, not by users). */
static int
cap_opt_task(struct cap_cmd *x, const char *v)
{
	unsigned long c, s = MAX_SEEDS;
	char *end;

	errno = 0;
	c = strtoul(v, &end, 10);
	if (*end == ',')
		s = strtoul(end + 1, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || c > UINT32_MAX ||
	    s >= MAX_SEEDS) {
		fprintf(stderr, "kvsim capacity: --mpi-task CONFIG,SEED\n");
		return KVSIM_EXIT_USAGE;
	}
	x->task = true;
	x->task_config = (uint32_t)c;
	x->task_seed = (uint32_t)s;
	return KVSIM_EXIT_OK;
}

static const struct option cap_lo[] = {
	{ "slo", required_argument, NULL, 'L' },
	CLI_LO_SET,
	{ "vllm-args", required_argument, NULL, 'V' },
	{ "across", required_argument, NULL, 'A' },
	{ "seeds", required_argument, NULL, 'N' },
	CLI_LO_SEED,
	CLI_LO_JOBS,
	{ "qps-start", required_argument, NULL, 'Q' },
	{ "qps-min", required_argument, NULL, 'm' },
	{ "qps-max", required_argument, NULL, 'M' },
	{ "tolerance", required_argument, NULL, 't' },
	{ "max-sims", required_argument, NULL, 'x' },
	{ "no-early-stop", no_argument, NULL, 'E' },
	{ "mpi-task", required_argument, NULL, 'T' },	/* search_ranks */
	{ "progress", no_argument, NULL, 'P' },
	CLI_LO_OUT,
	CLI_LO_FORCE,
	CLI_LO_QUIET,
	CLI_LO_NO_PLOT,
	CLI_LO_HELP,
	CLI_LO_END
};

/* The options, then the positional arguments (KEY=VALUE is a --set);
 * -1 after --help. */
static int
cap_parse(struct cap_cmd *x, int argc, char **argv)
{
	struct cap *C = &x->C;
	int c, rc = KVSIM_EXIT_OK;

	optind = 1;
	while (rc == 0 &&
	       (c = cli_getopt(&x->o, argc, argv, "s:j:o:fqh", cap_lo)) != -1) {
		switch (c) {
		case 'L':
			rc = cap_opt_slo(C, optarg);
			break;
		case 'A':
			rc = cap_opt_across(x, optarg);
			break;
		case CLI_OPT_SEED:
			rc = cap_opt_seed(C, optarg);
			break;
		case 'N': case 'j': case 'x':
			rc = cap_opt_count(C, c, optarg);
			break;
		case 'Q': case 'm': case 'M': case 't':
			rc = cap_opt_rate(C, c, optarg);
			break;
		case 'E':
			C->early_stop = false;
			break;
		case 'V':
			x->vargs[x->nvargs++] = optarg;
			break;
		case 'T':
			rc = cap_opt_task(x, optarg);
			break;
		case 'P':
			C->progress = true;
			break;
		case 'h':
			usage(stdout);
			return -1;
		case CLI_OPT_BAD:
			return KVSIM_EXIT_USAGE;
		default:
			usage(stderr);
			return KVSIM_EXIT_USAGE;
		}
	}
	if (rc != 0)
		return rc;
	C->quiet = x->o.quiet;
	/* a terminal gets the lines unless --quiet; --progress forces them */
	if (!C->progress)
		C->progress = !C->quiet && isatty(STDERR_FILENO);
	if (x->o.out != NULL)
		snprintf(x->outdir, sizeof(x->outdir), "%s", x->o.out);
	for (int i = optind; i < argc; i++) {
		if (strchr(argv[i], '=') != NULL)
			x->o.sets[x->o.nsets++] = argv[i];
		else
			x->files[x->nfiles++] = argv[i];
	}
	return KVSIM_EXIT_OK;
}

/* The options together; the configurations to search (files x --across
 * values) and the SLOs' text. */
static int
cap_sources(struct cap_cmd *x)
{
	const struct cap *C = &x->C;

	if (C->nslo == 0) {
		fprintf(stderr, "kvsim capacity: give at least one --slo, e.g. "
			"--slo ttft_s:p99<=2.0\n");
		return KVSIM_EXIT_USAGE;
	}
	if (C->so.qps_min > C->so.qps_max) {
		fprintf(stderr, "kvsim capacity: --qps-min is above "
			"--qps-max\n");
		return KVSIM_EXIT_USAGE;
	}
	x->ncfg = (x->nfiles ? x->nfiles : 1) * (x->nacross ? x->nacross : 1);
	if ((x->srcs = calloc(x->ncfg, sizeof(*x->srcs))) == NULL)
		return KVSIM_EXIT_FAIL;
	for (size_t i = 0; i < x->ncfg; i++) {
		size_t a = x->nacross ? i % x->nacross : 0;
		struct cfgsrc *sc = &x->srcs[i];

		sc->file = x->nfiles ? x->files[x->nacross ? i / x->nacross
						: i] : NULL;
		for (size_t k = 0; k < x->nak; k++) {
			size_t n = strlen(sc->across);

			snprintf(sc->set[k], sizeof(sc->set[k]), "%s=%s",
				 x->ak[k].key, x->ak[k].list[a]);
			snprintf(sc->across + n, sizeof(sc->across) - n,
				 "%s%s", k ? ";" : "", sc->set[k]);
		}
		sc->nset = x->nak;
	}
	for (size_t i = 0; i < C->nslo; i++) {
		char one[96];
		size_t n = strlen(x->slotxt);

		cap_slo_format(&C->slo[i], one, sizeof(one));
		snprintf(x->slotxt + n, sizeof(x->slotxt) - n, "%s%s",
			 i ? ";" : "", one);
	}
	return KVSIM_EXIT_OK;
}

/* Every configuration read (and rejected) before anything runs. */
static int
cap_load(struct cap_cmd *x, struct sim_config *all)
{
	size_t nsets = x->o.nsets;
	const char **sets = calloc(nsets + MAX_ACROSS_KEYS, sizeof(*sets));
	char why[1400], ign[1024] = "";
	int rc = KVSIM_EXIT_OK;

	if (sets == NULL)
		return KVSIM_EXIT_FAIL;
	if (nsets > 0)
		memcpy(sets, x->o.sets, nsets * sizeof(*sets));
	for (size_t i = 0; i < x->ncfg && rc == 0; i++) {
		const struct cfgsrc *sc = &x->srcs[i];

		/* --across comes after every --set */
		for (size_t k = 0; k < sc->nset; k++)
			sets[nsets + k] = sc->set[k];
		if (sim_vargs_config(&all[i], sc->file, x->vargs, x->nvargs,
				     sets, nsets + sc->nset, i == 0 ? ign :
				     NULL, sizeof(ign), why,
				     sizeof(why)) != KV_OK) {
			fprintf(stderr, "%s\n", why);
			rc = KVSIM_EXIT_USAGE;
		}
	}
	if (rc == 0 && ign[0] != '\0' && !x->C.quiet && !x->task)
		printf("kvsim capacity: --vllm-args: ignored (no effect on KV "
		       "or timing): %s\n", ign);
	free(sets);
	return rc;
}

static void
cap_headers(FILE *fc, FILE *fp, FILE *fg, size_t nslo)
{
	fputs("config_id,config,across,model,gpu,tp,policy,block_size,"
	      "kv_cache_dtype,gpu_memory_utilization,max_model_len,"
	      "trace,requests,trace_rate_req_s,num_gpu_blocks,"
	      "kv_cache_tokens,max_concurrency,mean_request_tokens,"
	      "mean_request_blocks,max_concurrency_trace_mix,slo,seeds,"
	      "max_qps_under_slo,max_qps_min,max_qps_max,"
	      "max_qps_per_seed,min_fail_qps,"
	      "max_concurrency_under_slo,goodput_at_max_req_s,"
	      "search_iterations,simulations,stopped_early,capped,"
	      "met_at_no_rate,mean_output_tokens,gpus,req_s_per_gpu,"
	      "gpu_usd_per_hour,usd_per_hour,usd_per_1m_output_tokens\n",
	      fc);
	fputs("config_id,seed,qps,meets_slo,stopped_early,completed,"
	      "rejected,throughput_req_s,goodput_req_s,ttft_p50_s,"
	      "ttft_p99_s,tpot_p99_s,e2e_p99_s,queue_p99_s,"
	      "kv_usage_max,preemptions,max_running", fp);
	for (size_t i = 0; i < nslo; i++)
		fprintf(fp, ",slo%zu_value_s", i + 1);
	fputc('\n', fp);
	fputs("config_id,group,kind,block_size,blocks,"
	      "blocks_per_request_max_len,blocks_per_request_mean,"
	      "concurrency_max_len,concurrency_trace_mix\n", fg);
}

/* One row of capacity_points.csv. */
static void
cap_point_row(FILE *fp, const struct cap *C, const struct point *p)
{
	fprintf(fp, "%" PRIu32 ",%" PRIu64 ",%.17g,%d,%d,%" PRIu64 ",%"
		PRIu64 ",%.6f,%.6f", p->config, C->seed0 + p->seed, p->qps,
		p->met, p->stopped, p->completed, p->rejected, p->throughput,
		p->goodput);
	/* A run stopped early has no final statistics: what it had so far
	 * is below the truth, so the fields are left empty. */
	if (p->stopped)
		fputs(",,,,,", fp);
	else
		fprintf(fp, ",%.9f,%.9f,%.9f,%.9f,%.9f", p->ttft_p50,
			p->ttft_p99, p->tpot_p99, p->e2e_p99, p->queue_p99);
	fprintf(fp, ",%.6f,%" PRIu64 ",%" PRIu64, p->kv_usage_max,
		p->preemptions, p->max_running);
	for (size_t j = 0; j < C->nslo; j++)
		if (p->stopped)
			fputc(',', fp);
		else
			fprintf(fp, ",%.9f", p->val[j]);
	fputc('\n', fp);
}

/* A configuration's searches, summed up. */
struct cap_outcome {
	double q[MAX_SEEDS];		/* each seed's answer */
	uint32_t ms;			/* the median seed */
	double med, mn, mx;
	uint32_t sims, stopped, iters;
	bool capped, none;
	const struct point *best;	/* behind the median seed's answer */
};

static void
cap_outcome(const struct cap *C, const struct seedres *res,
	    struct cap_outcome *u)
{
	memset(u, 0, sizeof(*u));
	for (uint32_t s = 0; s < C->seeds; s++) {
		u->q[s] = res[s].r.max_qps;
		u->sims += res[s].r.sims;
		if (res[s].r.sims > u->iters)
			u->iters = res[s].r.sims;
	}
	u->ms = median_seed(u->q, C->seeds);
	/* the flags of the answer reported: the median seed's (another
	 * seed's shows in max_qps_min) */
	u->capped = res[u->ms].r.capped;
	u->none = res[u->ms].r.none;
	for (size_t k = 0; k < C->npts; k++) {
		const struct point *p = &C->pts[k];

		u->stopped += p->stopped;
		if (p->met && p->seed == u->ms &&
		    p->qps == res[u->ms].r.max_qps)
			u->best = p;
	}
	u->med = u->q[u->ms];
	u->mn = u->mx = u->q[0];
	for (uint32_t s = 1; s < C->seeds; s++) {
		if (u->q[s] < u->mn)
			u->mn = u->q[s];
		if (u->q[s] > u->mx)
			u->mx = u->q[s];
	}
}

/*
 * What the deployment costs at its answer: gpus = tensor parallel size x
 * replicas (summed over a disaggregated run's pools), usd_hour for all of
 * them, usd_gpu a GPU's (their mean over the pools; 0: no price known).
 * The output
 * tokens an hour at the answer are its rate times the workload's mean
 * output, so $/1M output tokens = usd_hour / (3600 qps mean_output) 1e6.
 */
struct cap_cost {
	uint32_t gpus;
	double per_gpu;			/* req/s per GPU */
	double usd_gpu, usd_hour;	/* 0: unknown */
	double usd_1m_out;		/* 0: unknown or no answer */
};

static void
cap_cost(struct cap_cost *k, const sim_run *R, double qps,
	 double mean_output)
{
	double usd_hour = sim_run_usd_per_hour(R);

	memset(k, 0, sizeof(*k));
	k->gpus = sim_run_gpus(R);
	k->per_gpu = k->gpus ? qps / (double)k->gpus : 0.0;
	if (usd_hour > 0 && k->gpus > 0)
		k->usd_gpu = sim_run_config(R)->pd.on ?
			     usd_hour / (double)k->gpus :
			     sim_run_gpu_usd_per_hour(R);
	k->usd_hour = k->usd_gpu > 0 ? usd_hour : 0.0;
	if (k->usd_hour > 0 && qps > 0 && mean_output > 0)
		k->usd_1m_out = k->usd_hour / (3600.0 * qps * mean_output) *
				1e6;
}

/* The cost columns of capacity.csv, empty where unknown. */
static void
cap_cost_cols(FILE *fc, const struct mix *mx, const struct cap_cost *k)
{
	fprintf(fc, ",%.6f,%" PRIu32 ",%.9g,", mx->mean_output, k->gpus,
		k->per_gpu);
	if (k->usd_gpu > 0)
		fprintf(fc, "%.9g,%.9g", k->usd_gpu, k->usd_hour);
	else
		fputc(',', fc);
	fputc(',', fc);
	if (k->usd_1m_out > 0)
		fprintf(fc, "%.9g", k->usd_1m_out);
	fputc('\n', fc);
}

/* The figures of capacity.csv after the configuration's columns. */
static void
cap_config_row(FILE *fc, const struct cap_cmd *x, const struct sz_result *sr,
	       const struct mix *mx, const struct seedres *res,
	       const struct cap_outcome *u)
{
	const struct cap *C = &x->C;

	fprintf(fc, ",%" PRIu64 ",%.6f,%" PRIu64 ",%" PRIu64 ",%.2f,%.1f,"
		"%.2f,%.2f,", mx->nreq, mx->span_s > 0 ?
		(double)mx->nreq / mx->span_s : 0.0, sr->num_blocks,
		sr->cache_tokens, sr->max_concurrency, mx->mean_tokens,
		mx->mean_blocks, mx->mean_blocks > 0 ?
		(double)sr->num_blocks / mx->mean_blocks : 0.0);
	rpt_csv_field(fc, x->slotxt);
	/* rates exactly as simulated (the fewest digits that read back): a
	 * rerun at the reported rate is the same simulation */
	fprintf(fc, ",%" PRIu32 ",", C->seeds);
	wl_yaml_num(fc, u->med);
	fputc(',', fc);
	wl_yaml_num(fc, u->mn);
	fputc(',', fc);
	wl_yaml_num(fc, u->mx);
	fputc(',', fc);
	for (uint32_t s = 0; s < C->seeds; s++) {
		if (s)
			fputc(';', fc);
		wl_yaml_num(fc, u->q[s]);
	}
	fputc(',', fc);
	wl_yaml_num(fc, res[u->ms].r.min_fail_qps);
	fprintf(fc, ",%" PRIu64 ",%.6f,%" PRIu32 ",%" PRIu32 ",%" PRIu32
		",%d,%d", u->best ? u->best->max_running : 0,
		u->best ? u->best->goodput : 0.0, u->iters, u->sims,
		u->stopped, u->capped, u->none);
}

/* capacity_groups.csv: the static figures of each KV cache group. */
static void
cap_group_rows(FILE *fg, size_t i, const struct sz_result *sr,
	       const struct mix *mx)
{
	for (size_t g = 0; g < sr->ngroup; g++) {
		const struct kvc_spec *sp = &sr->group[g];
		uint64_t w = kvc_worst_blocks(sp, &sr->lim);

		fprintf(fg, "%zu,%zu,%s,%" PRIu32 ",%" PRIu64 ",%" PRIu64
			",%.2f,%.2f,%.2f\n", i, g, kind_name(sp->kind),
			sp->block_size, sr->num_blocks, w,
			mx->group_blocks[g], w ? (double)sr->num_blocks /
			(double)w : 0.0, mx->group_blocks[g] > 0 ?
			(double)sr->num_blocks / mx->group_blocks[g] : 0.0);
	}
}

/* The static and dynamic lines of a configuration on stdout. */
static void
cap_print(const struct cap_cmd *x, const struct sz_result *sr,
	  const struct mix *mx, const struct cap_outcome *u,
	  const struct cap_cost *k)
{
	printf("static: %" PRIu64 " KV tokens, %" PRIu64 " blocks, max "
	       "concurrency %.2fx at %" PRIu64 " tokens, %.2fx at the "
	       "workload's mix (mean %.0f tokens)\n", sr->cache_tokens,
	       sr->num_blocks, sr->max_concurrency, sr->max_model_len,
	       mx->mean_blocks > 0 ? (double)sr->num_blocks /
	       mx->mean_blocks : 0.0, mx->mean_tokens);
	printf("dynamic: %s -> max %.4g req/s (seeds %.4g..%.4g; workload "
	       "%.4g req/s), %" PRIu32 " simulations (%" PRIu32 " stopped "
	       "early)%s\n", x->slotxt, u->med, u->mn, u->mx,
	       mx->span_s > 0 ? (double)mx->nreq / mx->span_s : 0.0,
	       u->sims, u->stopped, u->capped ? ", met at the highest rate "
	       "tried (--qps-max or --max-sims)" : u->none ? ", missed at "
	       "every rate tried (down to --qps-min, or as far as "
	       "--max-sims allowed)" : "");
	printf("cost: %" PRIu32 " GPU%s, %.4g req/s per GPU", k->gpus,
	       k->gpus == 1 ? "" : "s", k->per_gpu);
	if (k->usd_gpu > 0)
		printf(", $%.4g/h ($%.4g per GPU-hour)", k->usd_hour,
		       k->usd_gpu);
	else
		printf(", no GPU price (set cost.gpu_usd_per_hour)");
	if (k->usd_1m_out > 0)
		printf(", $%.4g per 1M output tokens at %.4g req/s",
		       k->usd_1m_out, u->med);
	putchar('\n');
}

/*
 * The warning behind many "met at no rate" answers: requests arriving at
 * one instant whose prompts, together, exceed the KV cache.  A lower rate
 * moves bursts apart but keeps each together.
 */
static void
cap_burst_warn(const struct sim_config *c, const struct sz_result *sr,
	       uint32_t replicas, const struct mix *mx)
{
	const struct burst *b = &mx->burst;
	uint64_t cache = sr->cache_tokens * replicas;

	if (b->n < 2 || b->prompt_tokens <= cache)
		return;
	fprintf(stderr, "kvsim capacity: warning: %" PRIu64 " requests "
		"arrive at one instant (%.3f s into the workload", b->n,
		(double)b->at_ns / 1e9);
	if (c->wl.trace != NULL && b->line > 0)
		fprintf(stderr, ", %s:%" PRIu64, c->wl.trace, b->line);
	fprintf(stderr, ") with %" PRIu64 " prompt tokens, more than the "
		"%" PRIu64 " tokens of the KV cache%s: a lower rate moves "
		"bursts apart but keeps each together, so the SLOs may hold "
		"at no rate; workload.spread_bursts=F (0 < F <= 1) spaces "
		"arrivals at least F mean gaps apart (docs/capacity.md)\n",
		b->prompt_tokens, cache, replicas > 1 ? " (all replicas)"
		: "");
}

/*
 * Whether every seed gives the same simulations: a trace, whose seed
 * changes only its synthetic token ids (which prompts share a prefix,
 * and so the cache's hits, stay the same), with nothing that reads the
 * ids' values: not the prefix-affinity router over replicas, not a
 * plugin policy.
 */
static bool
cap_seed_free(const struct sim_config *c)
{
	return c->wl.trace != NULL && strchr(c->policy, '/') == NULL &&
	       !(c->router == SIM_ROUTE_PREFIX && c->replicas > 1);
}

/* One search stands for every seed: res[0] and its points copied to
 * seeds 1..seeds-1, as each seed's search would have made them. */
static int
cap_replicate(struct cap *C, struct seedres *res)
{
	size_t n0 = C->npts;

	for (uint32_t s = 1; s < C->seeds; s++) {
		res[s] = res[0];
		for (size_t k = 0; k < n0; k++) {
			struct point p = C->pts[k];

			p.seed = s;
			if (push_point(C, &p) != 0)
				return KVSIM_EXIT_FAIL;
		}
	}
	return KVSIM_EXIT_OK;
}

/* Every seed's search, or one standing for all of them. */
static int
cap_search_seeds(struct cap *C, struct seedres *res)
{
	uint32_t seeds = C->seeds;
	int rc;

	if (seeds == 1 || !cap_seed_free(&C->cfg))
		return search_all(C, res);
	if (!C->quiet)
		printf("seeds: the workload is a trace: a seed changes only "
		       "its synthetic token ids, not what the simulation "
		       "does, so one search stands for seeds %" PRIu64
		       "..%" PRIu64 "\n", C->seed0,
		       C->seed0 + seeds - 1);
	fflush(stdout);
	C->seeds = 1;
	rc = search_all(C, res);
	C->seeds = seeds;
	return rc != 0 ? rc : cap_replicate(C, res);
}

/* Configuration i's workload mix, and C set to search it. */
static int
cap_prepare(struct cap *C, const struct sim_config *all, size_t i,
	    const struct sz_result *sr, struct mix *mx)
{
	int rc;

	if ((rc = workload_mix(&all[i], sr, mx)) != 0)
		return rc;
	C->cfg = all[i];
	C->config = (uint32_t)i;
	C->nreq = mx->nreq;
	C->npts = 0;
	if (!C->qps_start_given)
		C->so.qps_start = mx->span_s > 0
			? (double)mx->nreq / mx->span_s : 1.0;
	return KVSIM_EXIT_OK;
}

/*
 * --mpi-task CONFIG,SEED: the search of one seed of one configuration,
 * on a worker rank; its seedres and points to standard output
 * (seed_job), nothing else there, no reports.
 */
static int
cap_task(struct cap_cmd *x)
{
	struct sim_config *all = calloc(x->ncfg, sizeof(*all));
	struct sim_run_opts o;
	sim_run *R = NULL;
	struct mix mx;
	int rc;

	if (all == NULL)
		return KVSIM_EXIT_FAIL;
	memset(&o, 0, sizeof(o));
	o.prog = "kvsim capacity";
	o.quiet = true;
	rc = cap_load(x, all);
	if (rc == 0 && (x->task_config >= x->ncfg ||
			x->task_seed >= x->C.seeds)) {
		fprintf(stderr, "kvsim capacity: --mpi-task: no such "
			"configuration or seed\n");
		rc = KVSIM_EXIT_USAGE;
	}
	if (rc == 0)
		rc = simrun_open(&R, &all[x->task_config], &o);
	if (rc == 0)
		rc = cap_prepare(&x->C, all, x->task_config,
				 sim_run_sizing(R), &mx);
	if (rc == 0)
		rc = seed_job(&x->C, x->task_seed, STDOUT_FILENO);
	sim_run_close(R);
	for (size_t i = 0; i < x->ncfg; i++)
		sim_config_release(&all[i]);
	free(all);
	return rc;
}

/* Search configuration i and write its rows. */
static int
cap_config(struct cap_cmd *x, struct sim_config *all, size_t i,
	   struct seedres *res, struct outdir *od)
{
	struct cap *C = &x->C;
	struct sim_run_opts o;
	sim_run *R = NULL;
	const struct sz_result *sr;
	struct mix mx;
	struct cap_outcome u;
	struct cap_cost k;
	const char *src = x->srcs[i].file ? x->srcs[i].file
			  : "(embedded default)";
	int rc;

	memset(&o, 0, sizeof(o));
	o.prog = "kvsim capacity";
	o.quiet = C->quiet;
	if (!C->quiet)
		printf("== configuration %zu: %s%s%s\n", i, src,
		       x->srcs[i].across[0] ? " " : "", x->srcs[i].across);
	fflush(stdout);
	/* sizing (vLLM's startup lines), then the mix */
	rc = simrun_open(&R, &all[i], &o);
	if (rc != 0) {
		sim_run_close(R);
		return rc;
	}
	sr = sim_run_sizing(R);
	if ((rc = cap_prepare(C, all, i, sr, &mx)) != 0)
		goto out;
	cap_burst_warn(&all[i], sr, sim_run_nreplicas(R), &mx);
	if ((rc = cap_search_seeds(C, res)) != 0)
		goto out;
	cap_outcome(C, res, &u);
	cap_cost(&k, R, u.med, mx.mean_output);
	for (size_t k = 0; k < C->npts; k++)
		cap_point_row(od->f[1], C, &C->pts[k]);
	put_cfg_cols(od->f[0], (uint32_t)i, src, x->srcs[i].across, &all[i],
		     sr, sim_run_model(R), sim_run_gpu(R));
	cap_config_row(od->f[0], x, sr, &mx, res, &u);
	cap_cost_cols(od->f[0], &mx, &k);
	cap_group_rows(od->f[2], i, sr, &mx);
	if (!C->quiet)
		cap_print(x, sr, &mx, &u, &k);
	x->any_none |= u.none;
out:
	sim_run_close(R);
	return rc;
}

/* Every configuration searched, its reports written and committed. */
static int
cap_run(struct cap_cmd *x)
{
	static const char *const names[] = { "capacity.csv",
		"capacity_points.csv", "capacity_groups.csv" };
	struct sim_config *all = calloc(x->ncfg, sizeof(*all));
	struct seedres *res = calloc(MAX_SEEDS, sizeof(*res));
	struct outdir od;
	int rc;

	memset(&od, 0, sizeof(od));
	if (all == NULL || res == NULL) {
		free(all);
		free(res);
		return KVSIM_EXIT_FAIL;
	}
	rc = cap_load(x, all);
	if (rc == 0) {
		if (x->outdir[0] == '\0')
			outdir_default(x->outdir, sizeof(x->outdir));
		rc = outdir_open(&od, "kvsim capacity", x->outdir,
				 x->o.force, names, 3);
	}
	if (rc != 0)
		goto out;
	cap_headers(od.f[0], od.f[1], od.f[2], x->C.nslo);
	for (size_t i = 0; i < x->ncfg && rc == 0; i++)
		rc = cap_config(x, all, i, res, &od);
	if (rc == 0 &&
	    (ferror(od.f[0]) || ferror(od.f[1]) || ferror(od.f[2]))) {
		fprintf(stderr, "kvsim capacity: write error\n");
		rc = KVSIM_EXIT_FAIL;
	}
	if (rc == 0)
		rc = outdir_commit(&od);
	else
		outdir_abort(&od);
out:
	for (size_t i = 0; i < x->ncfg; i++)
		sim_config_release(&all[i]);
	free(all);
	free(res);
	return rc;
}

int
capacity_main(int argc, char **argv)
{
	struct cap_cmd x;
	struct cap *C = &x.C;
	struct timespec w0, w1;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &w0);
	memset(&x, 0, sizeof(x));
	C->seeds = 3;
	C->so.qps_min = 0.01;
	C->so.qps_max = 10000;
	C->so.tol = 0.05;
	C->so.max_sims = 40;
	C->early_stop = true;
	rc = cli_opts_init(&x.o, "kvsim capacity", CLI_SET | CLI_OUT |
			   CLI_FORCE | CLI_QUIET | CLI_NO_PLOT, argc);
	C->jobs = (uint32_t)x.o.jobs;
	x.files = calloc((size_t)argc + 1, sizeof(*x.files));
	x.vargs = calloc((size_t)argc + 1, sizeof(*x.vargs));
	if (rc != 0 || x.files == NULL || x.vargs == NULL) {
		if (rc == 0)
			fprintf(stderr, "kvsim capacity: out of memory\n");
		rc = KVSIM_EXIT_FAIL;
		goto done;
	}
	if ((rc = cap_parse(&x, argc, argv)) != 0) {
		if (rc < 0)
			rc = KVSIM_EXIT_OK;
		goto done;
	}
	C->argc = argc;
	C->argv = argv;
	C->w0 = (double)w0.tv_sec + (double)w0.tv_nsec / 1e9;
	if ((rc = cap_sources(&x)) != 0)
		goto done;
	C->nconfig = (uint32_t)x.ncfg;
	if (x.task) {
		rc = cap_task(&x);
		goto done;
	}
	if ((rc = cap_run(&x)) != 0)
		goto done;
	clock_gettime(CLOCK_MONOTONIC, &w1);
	if (!C->quiet)
		printf("reports: %s (%.2f s)\n", x.outdir,
		       (double)(w1.tv_sec - w0.tv_sec) +
		       (double)(w1.tv_nsec - w0.tv_nsec) / 1e9);
	if (!x.o.no_plot)
		rc = auto_plot("kvsim capacity", x.outdir, C->quiet);
	if (x.any_none)
		rc = KVSIM_EXIT_FAIL;
done:
	free(C->pts);
	free(x.srcs);
	for (size_t k = 0; k < x.nak; k++)
		free(x.ak[k].vals);
	free(x.files);
	free(x.vargs);
	cli_opts_release(&x.o);
	return rc;
}
