/*
 * cmd_run.c -- `kvsim run [CONFIG.yaml]`: one simulation run end to end.
 *
 * The run itself is sim/run.h; this file is the command: options, the
 * output directory, the summary table.  Reports: requests.csv,
 * timeseries.csv, summary.csv, groups.csv and the resolved config.yaml in
 * --out, and trace.json with --chrome-trace.
 *
 * Files are written under temporary names in --out and renamed at the end:
 * a failed run leaves no report.  --out is refused when it exists and is
 * not empty, unless --force.  Exit: 0 ok, 1 a --check invariant failed or
 * the run could not finish, 2 bad usage or input (FILE:LINE:COL).
 */
#include "config.h"

#include "sim/cli/cmd_run.h"

#include "reports/benchfmt.h"
#include "reports/plot.h"
#include "reports/rpt.h"
#include "sim/cli/opts.h"
#include "sim/cli/simrun.h"
#include "sim/cli/outdir.h"
#include "sim/run.h"
#include "sim/runcfg.h"
#include "sim/vllmargs.h"
#include "sim/model/sizing.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int run_main(int argc, char **argv);
int auto_plot(const char *prog, const char *dir, bool quiet);

static void
run_usage(FILE *f)
{
	fprintf(f,
"usage: kvsim run [CONFIG.yaml] [--vllm-args ARGS]... [--set KEY=VALUE]...\n"
"                 [--seed N] [--out DIR] [--force] [--check] [--quiet]\n"
"                 [--no-plot] [--chrome-trace] [--no-fast-forward]\n"
"                 [--result-format vllm-bench,inference-perf]\n"
"\n"
"Simulate serving a workload on a model, a GPU and an engine configuration.\n"
"Without CONFIG.yaml the embedded default runs: Llama-3.1-8B on an H100,\n"
"policy vllm-v1, the bundled excerpt of the Azure LLM conversation trace.\n"
"\n"
"      --vllm-args ARGS\n"
"                       vllm serve's own options (\"MODEL -tp 2\n"
"                       --max-num-seqs 128 --no-enable-prefix-caching\"),\n"
"                       split as a shell splits them; each sets its key\n"
"                       (docs/run.md lists them); repeatable\n"
"  -s, --set KEY=VALUE  override a key (engine.block_size=32, workload.\n"
"                       max_requests=100, policy=sarathi); repeatable\n"
"      --seed N         run seed (also the workload's)\n"
"  -o, --out DIR        where the reports go (default kvsim-out/<time>);\n"
"                       refused if DIR exists and is not empty\n"
"  -f, --force          write into an existing --out\n"
"      --check          audit the scheduler and allocator after every step\n"
"  -q, --quiet          no startup lines, table or progress\n"
"      --no-plot        no plots (made when gnuplot is installed)\n"
"      --chrome-trace   also write trace.json (Chrome trace events: open it\n"
"                       in ui.perfetto.dev)\n"
"      --no-fast-forward\n"
"                       make every decode step one by one (the outputs are\n"
"                       the same; KVSIM_NO_FAST_FORWARD=1 does it too)\n"
"      --result-format F\n"
"                       also write the result in another benchmark's\n"
"                       vocabulary: vllm-bench (vllm_bench.json),\n"
"                       inference-perf (inference_perf_summary.json),\n"
"                       or both, comma-separated\n"
"  -h, --help           this help\n"
"\n"
"Order: CONFIG.yaml, then --vllm-args, then --set, then --seed; a later\n"
"value of a key wins.  A vllm serve option kvsim does not model is refused\n"
"by name; --host, --port and the like are accepted and listed as ignored.\n"
"\n"
"Writes requests.csv, timeseries.csv, summary.csv, groups.csv and\n"
"config.yaml (the resolved configuration); docs/run.md lists every key\n"
"and column.\n"
"Exit status: 0 ok, 1 a --check invariant failed, 2 bad usage or input.\n");
}

static void
print_table(const char *dir, rpt *rep, const struct rpt_totals *t,
	    bool fork)
{
	double d = (double)t->duration_ns / 1e9;

	printf("\n%-28s %s\n", "run", t->run_id);
	printf("%-28s %s on %s (tp %u), %s, %u replica%s\n", "setup",
	       t->model, t->gpu, t->tp, t->policy, t->replicas,
	       t->replicas == 1 ? "" : "s");
	printf("%-28s %" PRIu64 " (completed %" PRIu64 ", rejected %" PRIu64
	       ")\n", "requests", t->requests, rpt_completed(rep),
	       t->rejected);
	printf("%-28s %.3f s (%" PRIu64 " steps, %" PRIu64 " events)\n",
	       "simulated time", d, t->steps, t->events);
	printf("%-28s %.3f req/s, %.1f output tok/s\n", "throughput",
	       d > 0 ? (double)rpt_completed(rep) / d : 0.0,
	       d > 0 ? (double)rpt_output_tokens(rep) / d : 0.0);
	printf("%-28s %10s %10s %10s %10s\n", "latency (s)", "mean", "p50",
	       "p90", "p99");
	static const char *const m[] = { "ttft", "tpot", "e2e", "queue" };
	for (int i = 0; i < 4; i++)
		printf("  %-26s %10.4f %10.4f %10.4f %10.4f\n", m[i],
		       rpt_mean(rep, m[i]), rpt_quantile(rep, m[i], 0.5),
		       rpt_quantile(rep, m[i], 0.9),
		       rpt_quantile(rep, m[i], 0.99));
	printf("%-28s %" PRIu64 " (recomputed tokens %" PRIu64 ")\n",
	       "preemptions", t->preemptions, t->recomputed_tokens);
	printf("%-28s out %" PRIu64 ", in %" PRIu64 " blocks\n", "swaps",
	       t->swap_out_blocks, t->swap_in_blocks);
	printf("%-28s mean %.3f, max %.3f of %" PRIu64 " blocks\n",
	       "KV usage", t->kv_usage_mean, t->kv_usage_max,
	       t->num_gpu_blocks);
	printf("%-28s %.4f\n", "prefix hit rate",
	       t->prompt_tokens_admitted ? (double)t->prefix_hit_tokens /
	       (double)t->prompt_tokens_admitted : 0.0);
	if (t->stale_cached_tokens > 0)
		printf("%-28s %" PRIu64 "\n", "stale cached tokens",
		       t->stale_cached_tokens);
	if (t->parallel_requests > 0)
		printf("%-28s %" PRIu64 " requests of n > 1, %" PRIu64
		       " samples (%s)\n", "parallel sampling",
		       t->parallel_requests, t->parallel_samples, fork ?
		       "sequences forked after the prompt" :
		       "child requests");
	printf("%-28s %s\n", "reports", dir);
	printf("%-28s %.3f s\n", "wall time", t->sim_wall_s);
}

/*
 * Plots beside the reports when gnuplot is installed (docs/plot.md).  A
 * plot that fails (gnuplot failed, or an image or script could not be
 * written whole) leaves the reports as they are and is KVSIM_EXIT_FAIL
 * with "PROG: plots: why" printed; else KVSIM_EXIT_OK.
 */
int
auto_plot(const char *prog, const char *dir, bool quiet)
{
	struct plot_opts po;
	char why[1400];
	const char *dirs[1] = { dir };
	int st;

	if (!plot_have_gnuplot())
		return KVSIM_EXIT_OK;
	memset(&po, 0, sizeof(po));
	st = plot_dir(dirs, 1, &po, why, sizeof(why));
	if (st != PLOT_OK) {
		fprintf(stderr, "%s: plots: %s\n", prog, why);
		return KVSIM_EXIT_FAIL;
	}
	if (!quiet)
		printf("%-28s %s/index.html\n", "plots", dir);
	return KVSIM_EXIT_OK;
}

enum { F_REQ, F_TS, F_SUM, F_CFG, F_GRP, F_TRACE };

static const char *const out_names[] = { "requests.csv", "timeseries.csv",
	"summary.csv", "config.yaml", "groups.csv", "trace.json" };

struct run_cmd {
	struct cli_opts o;
	struct sim_config *cfg;
	struct sim_run_opts *ro;
	const char *file;
	char outdir[1024];
	char seedset[128];
	const char **vargs;	/* --vllm-args values, in order */
	size_t nvargs;
	char ignored[1024];	/* the vllm serve options ignored */
	bool ctrace;
	unsigned bench;		/* enum bench_format mask */
};

/* Options, the positional arguments and the configuration they make. */
static int
run_parse(struct run_cmd *x, int argc, char **argv)
{
	static const struct option lo[] = {
		CLI_LO_SET,
		CLI_LO_SEED,
		CLI_LO_OUT,
		CLI_LO_FORCE,
		{ "check", no_argument, NULL, 'c' },
		CLI_LO_QUIET,
		{ "chrome-trace", no_argument, NULL, 'T' },
		{ "no-fast-forward", no_argument, NULL, 'F' },
		{ "result-format", required_argument, NULL, 'R' },
		{ "vllm-args", required_argument, NULL, 'V' },
		CLI_LO_NO_PLOT,
		CLI_LO_HELP,
		CLI_LO_END
	};
	char err[1400];
	int c, rc;

	optind = 1;
	while ((c = cli_getopt(&x->o, argc, argv, "s:o:fqh", lo)) != -1) {
		switch (c) {
		case 'c':
			x->ro->check = true;
			break;
		case 'T':
			x->ctrace = true;
			break;
		case 'F':
			x->ro->no_fast_forward = true;
			break;
		case 'V':
			x->vargs[x->nvargs++] = optarg;
			break;
		case 'R':
			if (!bench_format_parse(optarg, &x->bench, err,
						sizeof(err))) {
				fprintf(stderr, "kvsim run: --result-format "
					"%s: %s\n", optarg, err);
				return KVSIM_EXIT_USAGE;
			}
			break;
		case 'h':
			run_usage(stdout);
			return -1;
		case CLI_OPT_BAD:
			return KVSIM_EXIT_USAGE;
		default:
			run_usage(stderr);
			return KVSIM_EXIT_USAGE;
		}
	}
	x->ro->quiet = x->o.quiet;
	if (x->o.out != NULL)
		snprintf(x->outdir, sizeof(x->outdir), "%s", x->o.out);
	if ((rc = cli_positional("kvsim run", argc, argv, optind, x->o.sets,
				 &x->o.nsets, &x->file, x->o.seed, x->seedset,
				 sizeof(x->seedset))) != 0)
		return rc;
	if (sim_vargs_config(x->cfg, x->file, x->vargs, x->nvargs,
			     x->o.sets, x->o.nsets, x->ignored,
			     sizeof(x->ignored), err, sizeof(err)) != KV_OK) {
		fprintf(stderr, "%s\n", err);
		return KVSIM_EXIT_USAGE;
	}
	return KVSIM_EXIT_OK;
}

/* The startup lines, before the run. */
static void
run_announce(sim_run *R)
{
	const struct sim_config *rc2 = sim_run_config(R);
	const char *cal;
	bool chosen;

	printf("kvsim run: %s on %s (tp %u), policy %s, %u replica%s, "
	       "router %s, seed %" PRIu64 "\n", sim_run_model(R),
	       sim_run_gpu(R), sim_run_sizing(R)->tp, rc2->policy,
	       rc2->replicas, rc2->replicas == 1 ? "" : "s",
	       sim_router_name(rc2->router), rc2->seed);
	printf("kvsim run: workload %s\n",
	       rc2->wl.trace ? rc2->wl.trace : "(generator)");
	if (rc2->vllm_version[0] != '\0')
		printf("kvsim run: engine loop of vLLM %s, async scheduling "
		       "%s\n", rc2->vllm_version,
		       rc2->async_scheduling == 1 ? "on" : "off");
	if ((cal = sim_run_calibration(R, &chosen)) != NULL)
		printf("kvsim run: cost calibration %s%s\n", cal, chosen ?
		       " (kvsim's for this GPU and vLLM version)" : "");
	else if (rc2->step_ns == 0)
		printf("kvsim run: cost model defaults, no calibration\n");
	fflush(stdout);
}

/* What the run left out or could not model, on stderr after it. */
static void
run_warnings(sim_run *R, const struct rpt_totals *t)
{
	/* rows skipped (workload.on_error: skip) and requests left out,
	 * as trace-stats reports them (docs/workloads.md) */
	const struct wl_counts *wc = sim_run_wl_counts(R);
	char msg[512];

	if (wc != NULL) {
		wl_counts_format(wc, msg, sizeof(msg));
		if (msg[0] != '\0')
			fprintf(stderr, "kvsim run: not replayed: %s\n", msg);
		if (wc->skipped > 0) {
			wl_error_format(&wc->first_skip, msg, sizeof(msg));
			fprintf(stderr, "kvsim run: first skipped row: %s\n",
				msg);
		}
	}
	if (sim_run_parallel_requests(R) > 0 && !sim_run_parallel_fanout(R) &&
	    !sim_run_parallel_fork(R))
		fprintf(stderr, "kvsim run: warning: %" PRIu64 " requests ask "
			"for parallel sampling (n > 1); each ran as one "
			"sequence: a disaggregated run does not fan them out "
			"(docs/run.md)\n", sim_run_parallel_requests(R));
	if (t->stale_cached_tokens > 0)
		fprintf(stderr, "kvsim run: warning: %" PRIu64 " tokens were "
			"taken from prefix-cache blocks that do not hold "
			"their KV: the engine modelled never computes it there "
			"(%s, docs/scheduler.md)\n", t->stale_cached_tokens,
			strcmp(sim_run_config(R)->policy, "vllm-v1") == 0 ?
			"vLLM v1: a block whose chunk priority scheduling "
			"withdrew, or a Mamba state the same step writes" :
			"vLLM v0: its early computed marks, its promotion "
			"of a filling block onto a cached one");
}

/*
 * After the reports are in place: with --force, an earlier run's outputs
 * that this one does not write again would sit beside reports they do
 * not describe; then the table and the plots (auto_plot's status).
 */
static int
run_after(const struct run_cmd *x, sim_run *R, const struct rpt_totals *t)
{
	int rc = KVSIM_EXIT_OK;

	if (x->o.force) {
		char p[1100];

		snprintf(p, sizeof(p), "%s/%s", x->outdir,
			 out_names[F_TRACE]);
		if (!x->ctrace)
			(void)unlink(p);
		for (unsigned b = BENCH_VLLM; b <= BENCH_INFERENCE_PERF;
		     b <<= 1) {
			snprintf(p, sizeof(p), "%s/%s", x->outdir,
				 bench_format_file(b));
			if ((x->bench & b) == 0)
				(void)unlink(p);
		}
		if (x->o.no_plot || !plot_have_gnuplot())
			plot_forget_run(x->outdir);
	}
	if (!x->ro->quiet)
		print_table(x->outdir, sim_run_report(R), t,
			    sim_run_parallel_fork(R));
	if (!x->o.no_plot)
		rc = auto_plot("kvsim run", x->outdir, x->ro->quiet);
	if (simrun_checks_report())	/* the level's proof of work */
		fprintf(stderr, "kvsim run: KVSIM_CHECK: the invariants held "
			"at %llu checks\n",
			(unsigned long long)sim_run_invariant_checks(R));
	if (getenv("KVSIM_FF_REPORT") != NULL) {	/* the fast-forward's */
		uint64_t all, adm, ff = sim_run_ff_steps(R, &all);

		fprintf(stderr, "kvsim run: fast-forward: %llu of %llu steps\n",
			(unsigned long long)ff, (unsigned long long)all);
		ff = sim_run_ff_spans(R, &all, &adm);
		fprintf(stderr, "kvsim run: fast-forward spans: %llu, %llu "
			"of them with a tail, %llu ending with an admission\n",
			(unsigned long long)ff, (unsigned long long)all,
			(unsigned long long)adm);
		ff = sim_run_ff_adm(R, &all);
		fprintf(stderr, "kvsim run: fast-forward admissions: %llu "
			"steps that admitted, %llu of them gone past\n",
			(unsigned long long)ff, (unsigned long long)all);
		ff = sim_run_ff_ext(R, &all);
		fprintf(stderr, "kvsim run: fast-forward steps after tails: "
			"%llu, %llu of them ended at an arrival\n",
			(unsigned long long)ff, (unsigned long long)all);
		ff = sim_run_ff_taken(R, &all);
		fprintf(stderr, "kvsim run: fast-forward arrivals taken in: "
			"%llu of %llu\n", (unsigned long long)ff,
			(unsigned long long)all);
		ff = sim_run_ff_rows(R, &all);
		fprintf(stderr, "kvsim run: fast-forward rows: %llu of %llu "
			"timeseries rows written inside spans\n",
			(unsigned long long)ff, (unsigned long long)all);
		ff = sim_run_keyed(R, &all);
		fprintf(stderr, "kvsim run: keyed prompts: %llu of %llu "
			"requests\n", (unsigned long long)ff,
			(unsigned long long)all);
	}
	return rc;
}

/* The files of --out: the reports, trace.json, the result formats
 * (their indexes in bi[]). */
static size_t
run_names(const struct run_cmd *x, const char **names, size_t *bi)
{
	size_t n = x->ctrace ? 6 : 5;

	for (size_t i = 0; i < n; i++)
		names[i] = out_names[i];
	for (unsigned b = BENCH_VLLM, k = 0; b <= BENCH_INFERENCE_PERF;
	     b <<= 1, k++) {
		bi[k] = n;
		if (x->bench & b)
			names[n++] = bench_format_file(b);
	}
	return n;
}

/* --result-format: the result files, from requests.csv as written. */
static int
run_bench(const struct run_cmd *x, sim_run *R, const struct rpt_totals *t,
	  struct outdir *od, const size_t *bi)
{
	struct bench_info info;
	rpt *rep = sim_run_report(R);
	char err[600];
	FILE *in;

	if (x->bench == 0)
		return 0;
	memset(&info, 0, sizeof(info));
	info.model = t->model;
	info.requests = t->requests;
	info.duration_ns = t->duration_ns;
	info.have_slo = t->slo_ttft_s > 0 || t->slo_tpot_s > 0 ||
	    t->slo_e2e_s > 0;
	info.good = rpt_good(rep);
	info.itl_p50_s = rpt_quantile(rep, "itl", 0.5);
	info.itl_p99_s = rpt_quantile(rep, "itl", 0.99);
	if (fflush(od->f[F_REQ]) != 0 ||
	    (in = fopen(od->tmp[F_REQ], "r")) == NULL) {
		fprintf(stderr, "kvsim run: reading requests.csv back "
			"failed\n");
		return -1;
	}
	for (unsigned b = BENCH_VLLM, k = 0; b <= BENCH_INFERENCE_PERF;
	     b <<= 1, k++) {
		if ((x->bench & b) == 0)
			continue;
		if (bench_write(b, in, &info, od->f[bi[k]], err,
				sizeof(err)) != KV_OK) {
			fprintf(stderr, "kvsim run: writing %s failed: %s\n",
				bench_format_file(b), err);
			fclose(in);
			return -1;
		}
	}
	fclose(in);
	return 0;
}

/* Open the reports, run, write the summary and commit. */
static int
run_exec(struct run_cmd *x, sim_run *R)
{
	struct outdir od;
	struct rpt_totals t;
	const char *names[OUTDIR_MAX];
	size_t bi[2], n, si;
	int rc;

	memset(&od, 0, sizeof(od));
	if (x->outdir[0] == '\0')
		outdir_default(x->outdir, sizeof(x->outdir));
	n = run_names(x, names, bi);
	/* inference-perf stages: a summary per stage */
	si = n;
	if (sim_run_has_stages(R))
		names[n++] = "summary_stages.csv";
	if ((rc = outdir_open(&od, "kvsim run", x->outdir, x->o.force,
			      names, n)) != 0) {
		outdir_abort(&od);
		return rc;
	}
	sim_config_write(sim_run_config(R), sim_run_sizing(R), od.f[F_CFG]);
	sim_run_outputs(R, od.f[F_REQ], od.f[F_TS],
			x->ctrace ? od.f[F_TRACE] : NULL);
	if (!x->ro->quiet) {
		run_announce(R);
		if (x->ignored[0] != '\0')
			printf("kvsim run: --vllm-args: ignored (no effect on "
			       "KV or timing): %s\n", x->ignored);
	}
	if ((rc = simrun_exec(R)) != 0) {
		outdir_abort(&od);
		return rc;
	}
	t = *sim_run_totals(R);
	run_warnings(R, &t);
	if (rpt_summary_write(sim_run_report(R), &t, od.f[F_SUM]) != 0 ||
	    sim_run_groups_write(R, od.f[F_GRP]) != 0 ||
	    (sim_run_has_stages(R) &&
	     rpt_stages_write(sim_run_report(R), od.f[si]) != 0)) {
		fprintf(stderr, "kvsim run: writing summary.csv failed\n");
		outdir_abort(&od);
		return KVSIM_EXIT_FAIL;
	}
	if (run_bench(x, R, &t, &od, bi) != 0) {
		outdir_abort(&od);
		return KVSIM_EXIT_FAIL;
	}
	if ((rc = outdir_commit(&od)) != 0)
		return rc;
	return run_after(x, R, &t);
}

int
run_main(int argc, char **argv)
{
	struct run_cmd x;
	struct sim_config cfg;
	struct sim_run_opts ro;
	sim_run *R = NULL;
	int rc;

	memset(&x, 0, sizeof(x));
	memset(&ro, 0, sizeof(ro));
	ro.prog = "kvsim run";
	x.cfg = &cfg;
	x.ro = &ro;
	if (cli_opts_init(&x.o, "kvsim run", CLI_SET | CLI_SEED | CLI_OUT |
			  CLI_FORCE | CLI_QUIET | CLI_NO_PLOT, argc) != 0) {
		cli_opts_release(&x.o);
		return KVSIM_EXIT_FAIL;
	}
	sim_config_init(&cfg);
	if ((x.vargs = calloc((size_t)argc + 1, sizeof(*x.vargs))) == NULL) {
		fprintf(stderr, "kvsim run: out of memory\n");
		rc = KVSIM_EXIT_FAIL;
		goto done;
	}
	rc = run_parse(&x, argc, argv);
	if (rc != KVSIM_EXIT_OK) {
		if (rc < 0)
			rc = KVSIM_EXIT_OK;
		goto done;
	}
	ro.progress = !ro.quiet;
	if ((rc = simrun_open(&R, &cfg, &ro)) != 0)
		goto done;
	rc = run_exec(&x, R);
done:
	sim_run_close(R);
	sim_config_release(&cfg);
	cli_opts_release(&x.o);
	free(x.vargs);
	return rc;
}
