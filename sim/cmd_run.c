/*
 * cmd_run.c -- `kvsim run [CONFIG.yaml]`: one simulation run end to end.
 *
 * config -> catalogs -> vLLM's KV sizing (startup lines) -> cost model ->
 * replicas (scheduler + allocator each) -> the event loop -> requests.csv,
 * timeseries.csv, summary.csv and the resolved config.yaml in --out.
 *
 * The loop (DESIGN.md "Data flow of one run"): the workload is streamed;
 * exactly one ARRIVAL event is pending at a time (the next request), so
 * memory does not grow with the trace.  An arrival is routed to a replica
 * and wakes it (a WAKE event queued behind any arrival at the same instant,
 * so simultaneous arrivals share a batch); a replica that finishes a step
 * starts the next one at once (continuous batching) until it has nothing
 * to run.  Events are ordered by (time, insertion number): same config and
 * seed, same bytes.
 *
 * Files are written under temporary names in --out and renamed at the end:
 * a failed run leaves no report.  --out is refused when it exists and is
 * not empty, unless --force.  Exit: 0 ok, 1 a --check invariant failed or
 * the run could not finish, 2 bad usage or input (FILE:LINE:COL).
 */
#include "config.h"

#include "core/kvsched.h"
#include "reports/rpt.h"
#include "sim/calib.h"
#include "sim/catalog.h"
#include "sim/plugin.h"
#include "sim/runcfg.h"
#include "sim/cost.h"
#include "sim/engine.h"
#include "sim/replica.h"
#include "sim/sizing.h"
#include "workloads/wl.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int run_main(int argc, char **argv);

static void
run_usage(FILE *f)
{
	fprintf(f,
"usage: kvsim run [CONFIG.yaml] [--set KEY=VALUE]... [--seed N] [--out DIR]\n"
"                 [--force] [--check] [--quiet]\n"
"\n"
"Simulate serving a workload on a model, a GPU and an engine configuration.\n"
"Without CONFIG.yaml the embedded default runs: Llama-3.1-8B on an H100,\n"
"policy vllm-v1, the bundled excerpt of the Azure LLM conversation trace.\n"
"\n"
"  -s, --set KEY=VALUE  override a key (engine.block_size=32, workload.\n"
"                       max_requests=100, policy=sarathi); repeatable\n"
"      --seed N         run seed (also the workload's)\n"
"  -o, --out DIR        where the reports go (default kvsim-out/<time>);\n"
"                       refused if DIR exists and is not empty\n"
"  -f, --force          write into an existing --out\n"
"      --check          audit the scheduler and allocator after every step\n"
"  -q, --quiet          no startup lines, table or progress\n"
"  -h, --help           this help\n"
"\n"
"Writes requests.csv, timeseries.csv, summary.csv and config.yaml (the\n"
"resolved configuration).  docs/run.md lists every key and column.\n"
"Exit status: 0 ok, 1 a --check invariant failed, 2 bad usage or input.\n");
}

/* ---- output files ------------------------------------------------------ */

#define NOUT 4
static const char *const out_name[NOUT] = { "requests.csv",
	"timeseries.csv", "summary.csv", "config.yaml" };

struct outset {
	char dir[1024];
	char tmp[NOUT][1200], fin[NOUT][1200];
	FILE *f[NOUT];
	bool created;
};

static int
mkdir_p(const char *path)
{
	char buf[1024];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0777) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0777) != 0 && errno != EEXIST)
		return -1;
	return 0;
}

static bool
dir_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	bool empty = true;

	if (d == NULL)
		return true;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			empty = false;
	closedir(d);
	return empty;
}

/* 0 ok; 2 refused or bad; message printed. */
static int
out_open(struct outset *o, const char *dir, bool force)
{
	struct stat sb;

	memset(o, 0, sizeof(*o));
	snprintf(o->dir, sizeof(o->dir), "%s", dir);
	if (stat(dir, &sb) == 0) {
		if (!S_ISDIR(sb.st_mode)) {
			fprintf(stderr, "kvsim run: --out %s: not a directory\n",
				dir);
			return 2;
		}
		if (!force && !dir_empty(dir)) {
			fprintf(stderr, "kvsim run: --out %s exists and is not "
				"empty; refusing to overwrite it (use --force)\n",
				dir);
			return 2;
		}
	} else {
		if (mkdir_p(dir) != 0) {
			fprintf(stderr, "kvsim run: --out %s: %s\n", dir,
				strerror(errno));
			return 2;
		}
		o->created = true;
	}
	for (int i = 0; i < NOUT; i++) {
		snprintf(o->fin[i], sizeof(o->fin[i]), "%s/%s", dir,
			 out_name[i]);
		snprintf(o->tmp[i], sizeof(o->tmp[i]), "%s/.%s.tmp.%ld", dir,
			 out_name[i], (long)getpid());
		o->f[i] = fopen(o->tmp[i], "w");
		if (o->f[i] == NULL) {
			fprintf(stderr, "kvsim run: %s: %s\n", o->tmp[i],
				strerror(errno));
			return 2;
		}
	}
	return 0;
}

static void
out_abort(struct outset *o)
{
	for (int i = 0; i < NOUT; i++) {
		if (o->f[i] != NULL)
			fclose(o->f[i]);
		o->f[i] = NULL;
		if (o->tmp[i][0])
			unlink(o->tmp[i]);
	}
	if (o->created)
		rmdir(o->dir);
}

static int
out_commit(struct outset *o)
{
	for (int i = 0; i < NOUT; i++) {
		if (fclose(o->f[i]) != 0) {
			o->f[i] = NULL;
			fprintf(stderr, "kvsim run: %s: %s\n", o->tmp[i],
				strerror(errno));
			out_abort(o);
			return 1;
		}
		o->f[i] = NULL;
	}
	for (int i = 0; i < NOUT; i++)
		if (rename(o->tmp[i], o->fin[i]) != 0) {
			fprintf(stderr, "kvsim run: %s: %s\n", o->fin[i],
				strerror(errno));
			out_abort(o);
			return 1;
		}
	return 0;
}

/* ---- the run ----------------------------------------------------------- */

struct run {
	struct sim_config cfg;
	cat *cat;
	struct cat_model *hf;		/* a config.json model (owned) */
	const struct cat_model *model;
	const struct cat_gpu *gpu;
	struct sz_result sr;
	struct cost_calib calib;	/* cost.calibration (owns sources) */
	struct cost_model cm;		/* borrows calib's sources */
	void *plugin;			/* a plugin policy's handle */
	struct kvs_config sc;
	struct kvc_config kc;
	replica **rp;
	uint32_t nrp;
	bool *wake;
	wl_stream *ws;
	struct sim_evq q;
	rpt *rep;
	struct outset out;
	uint64_t rr;			/* round-robin counter */
	uint64_t arrived;
	bool check, quiet, tty;
	char run_id[32];
};

static uint64_t
fnv1a(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

static uint32_t
route(struct run *R, const struct wl_request *r)
{
	uint32_t best = 0;

	if (R->nrp == 1)
		return 0;
	if (R->cfg.router == SIM_ROUTE_RR)
		return (uint32_t)(R->rr++ % R->nrp);
	if (R->cfg.router == SIM_ROUTE_PREFIX &&
	    r->prompt_tokens >= R->sr.block_size) {
		uint32_t bs = R->sr.block_size, tok[64], done = 0;
		uint64_t h = 0x9e3779b97f4a7c15ull;

		/* Hash the leading block (in chunks, no allocation). */
		while (done < bs) {
			uint32_t n = bs - done < 64 ? bs - done : 64;

			wl_request_tokens(r, done, n, R->cfg.wl.vocab_size,
					  tok);
			for (uint32_t i = 0; i < n; i++)
				h = wl_mix(h, tok[i]);
			done += n;
		}
		return (uint32_t)(h % R->nrp);
	}
	/* least outstanding tokens (also prefix-affinity's fallback) */
	for (uint32_t i = 1; i < R->nrp; i++)
		if (replica_outstanding(R->rp[i]) <
		    replica_outstanding(R->rp[best]))
			best = i;
	return best;
}

static void
sample(struct run *R, int64_t t, uint64_t *last_prompt, uint64_t *last_gen,
       double interval_s)
{
	struct rpt_sample s;
	uint64_t pt = 0, gt = 0, hit = 0, adm = 0;

	memset(&s, 0, sizeof(s));
	s.t_ns = t;
	for (uint32_t i = 0; i < R->nrp; i++) {
		uint64_t a, b, c, d, e, f;
		const struct replica_stats *st = replica_stats(R->rp[i]);

		replica_state(R->rp[i], &a, &b, &c, &d, &e, &f);
		s.running += a;
		s.waiting += b;
		s.swapped += c;
		s.kv_blocks_used += d;
		s.kv_blocks_total += e;
		s.kv_frag_internal_tokens += f;
		s.preemptions_cum += st->preemptions;
		pt += st->prompt_tokens_done;
		gt += st->gen_tokens_done;
		hit += st->prefix_hit_tokens;
		adm += st->prompt_tokens_admitted;
	}
	s.prefix_hit_rate = adm ? (double)hit / (double)adm : 0.0;
	s.prompt_tok_s = (double)(pt - *last_prompt) / interval_s;
	s.gen_tok_s = (double)(gt - *last_gen) / interval_s;
	*last_prompt = pt;
	*last_gen = gt;
	(void)rpt_add_sample(R->rep, &s);
}

static int
start_step(struct run *R, uint32_t i, int64_t now)
{
	char why[1024];
	int64_t dt;
	bool started;
	kv_err e;

	e = replica_begin(R->rp[i], now, &dt, &started, why, sizeof(why));
	if (e != KV_OK) {
		fprintf(stderr, "kvsim run: %s\n", why);
		return 1;
	}
	if (started && sim_evq_push(&R->q, now + dt, SIM_EV_STEP_DONE, i,
				    NULL) != KV_OK) {
		fprintf(stderr, "kvsim run: out of memory\n");
		return 1;
	}
	return 0;
}

static int
next_arrival(struct run *R, struct wl_request *cur, bool *have)
{
	wl_err we = wl_stream_next(R->ws, cur);
	char buf[1200];

	*have = false;
	if (we == WL_END)
		return 0;
	if (we != WL_OK) {
		wl_error_format(wl_stream_error(R->ws), buf, sizeof(buf));
		fprintf(stderr, "kvsim run: %s\n", buf);
		return 2;
	}
	if (sim_evq_push(&R->q, cur->arrival_ns, SIM_EV_ARRIVAL, 0, NULL) !=
	    KV_OK) {
		fprintf(stderr, "kvsim run: request %" PRIu64 " arrives at "
			"%" PRId64 " ns, before the clock\n", cur->id,
			cur->arrival_ns);
		return 2;
	}
	*have = true;
	return 0;
}

static int
loop(struct run *R, int64_t *t_first, int64_t *t_last, uint64_t *events)
{
	struct wl_request cur;
	struct sim_ev ev;
	bool have;
	int rc;
	int64_t ts_ns = (int64_t)(R->cfg.timeseries_interval_s * 1e9);
	int64_t hb_ns = (int64_t)(R->cfg.heartbeat_interval_s * 1e9);
	int64_t next_ts = 0, next_hb = hb_ns;
	uint64_t lp = 0, lg = 0;
	bool first = true;

	if (ts_ns < 1)
		ts_ns = 1;
	if (hb_ns < 1)
		hb_ns = 1;
	if ((rc = next_arrival(R, &cur, &have)) != 0)
		return rc;
	*t_first = have ? cur.arrival_ns : 0;
	*t_last = *t_first;
	next_ts = *t_first + ts_ns;
	next_hb = *t_first + hb_ns;
	while (sim_evq_pop(&R->q, &ev)) {
		int64_t now = ev.t;

		while (next_ts <= now) {
			sample(R, next_ts, &lp, &lg,
			       R->cfg.timeseries_interval_s);
			next_ts += ts_ns;
			if (R->tty && !R->quiet)
				fprintf(stderr, "\r[kvsim run] t=%.0fs "
					"arrived=%" PRIu64 " done=%" PRIu64
					"   ", (double)(next_ts - *t_first) /
					1e9, R->arrived,
					rpt_completed(R->rep));
		}
		while (next_hb <= now) {
			if (!R->tty && !R->quiet)
				fprintf(stderr, "kvsim run: t=%.0fs "
					"arrived=%" PRIu64 " completed=%"
					PRIu64 "\n",
					(double)(next_hb - *t_first) / 1e9,
					R->arrived, rpt_completed(R->rep));
			next_hb += hb_ns;
		}
		(*events)++;
		*t_last = now;
		first = false;
		if (R->check && sim_evq_check(&R->q) != 0) {
			fprintf(stderr, "kvsim run: --check: event queue "
				"invariant %d broken\n", sim_evq_check(&R->q));
			return 1;
		}
		switch (ev.kind) {
		case SIM_EV_ARRIVAL: {
			uint32_t i = route(R, &cur);
			bool rej;
			char why[1024];

			R->arrived++;
			if (replica_add(R->rp[i], &cur, &rej, why,
					sizeof(why)) != KV_OK) {
				fprintf(stderr, "kvsim run: %s\n", why);
				return 1;
			}
			if (!rej && !replica_busy(R->rp[i]) && !R->wake[i]) {
				R->wake[i] = true;
				if (sim_evq_push(&R->q, now, SIM_EV_WAKE, i,
						 NULL) != KV_OK)
					return 1;
			}
			if ((rc = next_arrival(R, &cur, &have)) != 0)
				return rc;
			break;
		}
		case SIM_EV_WAKE:
			R->wake[ev.arg] = false;
			if (!replica_busy(R->rp[ev.arg]) &&
			    (rc = start_step(R, ev.arg, now)) != 0)
				return rc;
			break;
		case SIM_EV_STEP_DONE: {
			char why[1024];

			if (replica_end(R->rp[ev.arg], now, R->rep, why,
					sizeof(why)) != KV_OK) {
				fprintf(stderr, "kvsim run: %s\n", why);
				return 1;
			}
			if ((rc = start_step(R, ev.arg, now)) != 0)
				return rc;
			break;
		}
		default:
			return 1;
		}
	}
	(void)first;
	/* The last interval, closed at the end of the run. */
	if (next_ts - ts_ns < *t_last)
		sample(R, *t_last, &lp, &lg,
		       (double)(*t_last - (next_ts - ts_ns)) / 1e9);
	if (R->tty && !R->quiet)
		fputc('\n', stderr);
	for (uint32_t i = 0; i < R->nrp; i++) {
		replica_close(R->rp[i], *t_last);
		if (replica_has_work(R->rp[i])) {
			fprintf(stderr, "kvsim run: replica %u stalled with "
				"unfinished requests\n", i);
			return 1;
		}
	}
	return 0;
}

static int
setup(struct run *R)
{
	char why[1024];
	struct cat_err ce;
	struct cost_config cc;
	const struct kvs_policy *pol;
	struct stat sb;
	size_t len = strlen(R->cfg.model);
	const char *mw = R->cfg.model_where[0] ? R->cfg.model_where
					       : R->cfg.source;
	const char *gw = R->cfg.gpu_where[0] ? R->cfg.gpu_where
					     : R->cfg.source;

	if (cat_load(&R->cat, NULL, &ce) != KV_OK) {
		fprintf(stderr, "kvsim run: %s\n", ce.msg);
		return 2;
	}
	R->model = cat_find_model(R->cat, R->cfg.model);
	if (R->model == NULL && stat(R->cfg.model, &sb) == 0 &&
	    len > 5 && strcmp(R->cfg.model + len - 5, ".json") == 0) {
		if (cat_model_from_hf(&R->hf, R->cfg.model, &ce) != KV_OK) {
			fprintf(stderr, "kvsim run: %s\n", ce.msg);
			return 2;
		}
		R->model = R->hf;
	}
	if (R->model == NULL) {
		fprintf(stderr, "%s: model: unknown model '%s' (kvsim catalog "
			"list)\n", mw, R->cfg.model);
		return 2;
	}
	R->gpu = cat_find_gpu(R->cat, R->cfg.gpu);
	if (R->gpu == NULL) {
		fprintf(stderr, "%s: gpu: unknown GPU '%s' (kvsim catalog "
			"list)\n", gw, R->cfg.gpu);
		return 2;
	}
	/* A value with a '/' is a plugin's path (sim/plugin.h), as in
	 * `kvsim replay`; dlopen takes it relative to the current
	 * directory. */
	if (strchr(R->cfg.policy, '/') != NULL) {
		pol = sim_plugin_load(R->cfg.policy, &R->plugin, why,
				      sizeof(why));
		if (pol == NULL) {
			fprintf(stderr, "%s: policy: cannot load '%s': %s\n",
				R->cfg.policy_where[0] ? R->cfg.policy_where
						       : R->cfg.source,
				R->cfg.policy, why);
			return 2;
		}
	} else if ((pol = kvs_builtin_policy(R->cfg.policy)) == NULL) {
		fprintf(stderr, "%s: policy: unknown policy '%s' (vllm-v0, "
			"vllm-v1, sarathi, deepspeed-fastgen, kvsim, or the "
			"path of a plugin)\n",
			R->cfg.policy_where[0] ? R->cfg.policy_where
					       : R->cfg.source, R->cfg.policy);
		return 2;
	}
	if (R->cfg.calibration[0] != '\0') {
		char cerr[1400];
		kv_err e = cost_calib_load(R->cfg.calibration, &R->calib,
					   cerr, sizeof(cerr));

		if (e == KV_ENOENT)
			fprintf(stderr, "%s: cost.calibration: %s\n",
				R->cfg.calibration_where, cerr);
		else if (e != KV_OK)
			fprintf(stderr, "%s\n", cerr);
		if (e != KV_OK)
			return 2;
	}
	if (sz_compute(R->model, R->gpu, &R->cfg.eng, &R->sr, why,
		       sizeof(why)) != KV_OK) {
		fprintf(stderr, "kvsim run: %s: %s\n", R->cfg.source, why);
		return 2;
	}
	if (!R->quiet)
		for (size_t i = 0; i < R->sr.nlog; i++)
			printf("%s\n", R->sr.log[i]);
	fflush(stdout);
	if (!R->sr.fits) {
		fprintf(stderr, "kvsim run: %s\n", R->sr.error);
		return 2;
	}
	cost_config_init(&cc);
	cc.tp = R->sr.tp;
	cc.block_size = R->sr.block_size;
	cc.kv_dtype_bytes = R->sr.kv_dtype_bytes;
	cc.ssm_dtype_bytes = R->sr.ssm_dtype_bytes;
	cc.calib = &R->calib;	/* every term unset without a file */
	if (cost_model_init(&R->cm, R->model, R->gpu, &cc, why,
			    sizeof(why)) != KV_OK) {
		fprintf(stderr, "kvsim run: cost model: %s\n", why);
		return 2;
	}

	kvc_config_default(&R->kc, pol->mode);
	R->kc.block_size = R->sr.block_size;
	R->kc.gpu_blocks = (uint32_t)R->sr.num_blocks;
	R->kc.prefix_caching = R->sr.prefix_caching;
	R->kc.max_model_len = (uint32_t)R->sr.max_model_len;
	/* vLLM v1 has no CPU swap pool; the others get swap_space GiB. */
	if (R->cm.block_bytes > 0 && pol->mode != KVC_VLLM_V1)
		R->kc.cpu_blocks = (uint32_t)(R->cfg.swap_space_gib *
					      1073741824.0 /
					      (double)R->cm.block_bytes);
	if (R->sr.ngroup > 1 || (R->sr.ngroup == 1 &&
				 R->sr.group[0].kind != KVC_SPEC_FULL)) {
		uint32_t ng = 0;

		for (size_t g = 0; g < R->sr.ngroup && ng < KVC_MAX_GROUPS;
		     g++) {
			const struct kvc_spec *sp = &R->sr.group[g];
			struct kvc_group_config *gc = &R->kc.group[ng];

			memset(gc, 0, sizeof(*gc));
			snprintf(gc->name, sizeof(gc->name), "g%zu", g);
			gc->block_size = sp->block_size;
			if (sp->kind == KVC_SPEC_FULL)
				gc->kind = KVC_FULL;
			else if (sp->kind == KVC_SPEC_SLIDING) {
				gc->kind = KVC_SLIDING;
				gc->window = sp->window;
			} else if (sp->kind == KVC_SPEC_STATE)
				gc->kind = KVC_STATE;
			else {
				fprintf(stderr, "kvsim run: model %s: KV cache "
					"group kind %d is not simulated yet\n",
					R->model->id, (int)sp->kind);
				return 2;
			}
			ng++;
		}
		R->kc.ngroups = ng;
	}

	kvs_config_init(&R->sc);
	snprintf(R->sc.policy, sizeof(R->sc.policy), "%s", R->cfg.policy);
	R->sc.max_num_seqs = R->sr.max_num_seqs;
	R->sc.max_num_batched_tokens = (int64_t)R->sr.max_num_batched_tokens;
	if (R->cfg.chunked_prefill >= 0)
		R->sc.chunked_prefill = R->cfg.chunked_prefill;
	if (R->cfg.preemption_mode >= 0)
		R->sc.preemption = R->cfg.preemption_mode;
	if (R->cfg.num_lookahead_slots >= 0)
		R->sc.lookahead = R->cfg.num_lookahead_slots;

	R->nrp = R->cfg.replicas;
	R->rp = calloc(R->nrp, sizeof(*R->rp));
	R->wake = calloc(R->nrp, sizeof(*R->wake));
	if (R->rp == NULL || R->wake == NULL) {
		fprintf(stderr, "kvsim run: out of memory\n");
		return 1;
	}
	for (uint32_t i = 0; i < R->nrp; i++) {
		struct replica_cfg rc = {
			.index = i, .sc = &R->sc, .kc = &R->kc, .cm = &R->cm,
			.step_ns = R->cfg.step_ns, .policy = pol,
			.vocab = R->cfg.wl.vocab_size, .check = R->check,
		};

		R->rp[i] = replica_new(&rc, why, sizeof(why));
		if (R->rp[i] == NULL) {
			fprintf(stderr, "%s: engine: %s\n", R->cfg.source, why);
			return 2;
		}
	}
	{
		struct wl_error we;
		char buf[1200];

		wl_error_clear(&we);
		if (wl_open(&R->cfg.wl, &R->ws, &we) != WL_OK) {
			wl_error_format(&we, buf, sizeof(buf));
			fprintf(stderr, "kvsim run: %s\n", buf);
			return 2;
		}
	}
	return 0;
}

static void
teardown(struct run *R)
{
	for (uint32_t i = 0; R->rp != NULL && i < R->nrp; i++)
		replica_free(R->rp[i]);
	free(R->rp);
	free(R->wake);
	wl_stream_free(R->ws);
	sim_evq_release(&R->q);
	rpt_free(R->rep);
	cat_model_free(R->hf);
	cat_free(R->cat);
	sim_config_release(&R->cfg);
	cost_calib_release(&R->calib);
	/* last: the replicas' schedulers ran the plugin's code */
	sim_plugin_unload(R->plugin);
}

static double
wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
print_table(const struct run *R, rpt *rep, const struct rpt_totals *t)
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
	printf("%-28s %s\n", "reports", R->out.dir);
	printf("%-28s %.3f s\n", "wall time", t->sim_wall_s);
}

int
run_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "set", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'S' },
		{ "out", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "check", no_argument, NULL, 'c' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct run *R;
	char err[1400], outdir[1024] = "";
	const char **sets;
	size_t nsets = 0;
	const char *seed = NULL;
	bool force = false;
	int c, rc = 0;
	double w0 = wall_now();
	struct rpt_totals t;
	int64_t t_first = 0, t_last = 0;
	uint64_t events = 0;

	sets = calloc((size_t)argc + 1, sizeof(*sets));
	R = calloc(1, sizeof(*R));
	if (sets == NULL || R == NULL) {
		free(sets);
		free(R);
		fprintf(stderr, "kvsim run: out of memory\n");
		return 1;
	}
	sim_config_init(&R->cfg);
	cost_calib_init(&R->calib);
	sim_evq_init(&R->q);
	optind = 1;
	while ((c = getopt_long(argc, argv, "s:o:fqh", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			sets[nsets++] = optarg;
			break;
		case 'S':
			seed = optarg;
			break;
		case 'o':
			snprintf(outdir, sizeof(outdir), "%s", optarg);
			break;
		case 'f':
			force = true;
			break;
		case 'c':
			R->check = true;
			break;
		case 'q':
			R->quiet = true;
			break;
		case 'h':
			run_usage(stdout);
			goto done;
		default:
			run_usage(stderr);
			rc = 2;
			goto done;
		}
	}
	/* Hydra-style positional a.b=c overrides, then one config file. */
	for (int i = optind; i < argc; i++) {
		if (strchr(argv[i], '=') != NULL) {
			sets[nsets++] = argv[i];
			continue;
		}
		if (R->cfg.source[0] != '(') {
			fprintf(stderr, "kvsim run: more than one config "
				"file\n");
			rc = 2;
			goto done;
		}
		if (sim_config_load(&R->cfg, argv[i], err, sizeof(err)) !=
		    KV_OK) {
			fprintf(stderr, "%s\n", err);
			rc = 2;
			goto done;
		}
	}
	for (size_t i = 0; i < nsets; i++)
		if (sim_config_set(&R->cfg, sets[i], err, sizeof(err)) !=
		    KV_OK) {
			fprintf(stderr, "%s\n", err);
			rc = 2;
			goto done;
		}
	if (seed != NULL) {
		char a[128];

		snprintf(a, sizeof(a), "seed=%s", seed);
		if (sim_config_set(&R->cfg, a, err, sizeof(err)) != KV_OK) {
			fprintf(stderr, "%s\n", err);
			rc = 2;
			goto done;
		}
	}
	if (sim_config_finish(&R->cfg, err, sizeof(err)) != KV_OK) {
		fprintf(stderr, "kvsim run: %s\n", err);
		rc = 2;
		goto done;
	}
	R->tty = isatty(STDERR_FILENO);
	if ((rc = setup(R)) != 0)
		goto done;
	if (outdir[0] == '\0') {
		time_t now = time(NULL);
		struct tm tm;
		char stamp[64];

		localtime_r(&now, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
		snprintf(outdir, sizeof(outdir), "kvsim-out/%s", stamp);
		for (int k = 2; k < 1000 && access(outdir, F_OK) == 0; k++)
			snprintf(outdir, sizeof(outdir), "kvsim-out/%s-%d",
				 stamp, k);
	}
	if ((rc = out_open(&R->out, outdir, force)) != 0) {
		out_abort(&R->out);
		goto done;
	}
	{
		/* The run id: a digest of the resolved configuration. */
		char *buf = NULL;
		size_t n = 0;
		FILE *mf = open_memstream(&buf, &n);

		if (mf == NULL) {
			rc = 1;
			out_abort(&R->out);
			goto done;
		}
		sim_config_write(&R->cfg, &R->sr, mf);
		fclose(mf);
		snprintf(R->run_id, sizeof(R->run_id), "%012" PRIx64,
			 (uint64_t)(fnv1a(buf, n) & 0xffffffffffffull));
		free(buf);
	}
	sim_config_write(&R->cfg, &R->sr, R->out.f[3]);
	R->rep = rpt_new(R->run_id, R->out.f[0], R->out.f[1]);
	if (R->rep == NULL || rpt_begin(R->rep) != 0) {
		fprintf(stderr, "kvsim run: out of memory\n");
		rc = 1;
		out_abort(&R->out);
		goto done;
	}
	if (!R->quiet) {
		printf("kvsim run: %s on %s (tp %u), policy %s, %u replica%s, "
		       "router %s, seed %" PRIu64 "\n", R->model->id,
		       R->gpu->id, R->sr.tp, R->cfg.policy, R->nrp,
		       R->nrp == 1 ? "" : "s", sim_router_name(R->cfg.router),
		       R->cfg.seed);
		printf("kvsim run: workload %s\n",
		       R->cfg.wl.trace ? R->cfg.wl.trace : "(generator)");
		fflush(stdout);
	}
	rc = loop(R, &t_first, &t_last, &events);
	if (rc != 0) {
		out_abort(&R->out);
		goto done;
	}

	memset(&t, 0, sizeof(t));
	t.run_id = R->run_id;
	t.model = R->model->id;
	t.gpu = R->gpu->id;
	t.policy = R->cfg.policy;
	t.router = sim_router_name(R->cfg.router);
	t.trace = R->cfg.wl_trace_default ? SIM_DEFAULT_TRACE
		  : R->cfg.wl.trace ? R->cfg.wl.trace : "(generator)";
	t.tp = R->sr.tp;
	t.block_size = R->sr.block_size;
	t.replicas = R->nrp;
	t.seed = R->cfg.seed;
	t.requests = R->arrived;
	t.duration_ns = t_last - t_first;
	t.num_gpu_blocks = R->sr.num_blocks;
	t.kv_cache_tokens = R->sr.cache_tokens;
	t.max_concurrency = R->sr.max_concurrency;
	t.events = events;
	{
		double fsum = 0, area = 0;
		uint64_t fsteps = 0;

		for (uint32_t i = 0; i < R->nrp; i++) {
			const struct replica_stats *s = replica_stats(R->rp[i]);

			t.rejected += s->rejected;
			t.preemptions += s->preemptions;
			t.recomputed_tokens += s->recomputed_tokens;
			t.swap_out_blocks += s->swap_out_blocks;
			t.swap_in_blocks += s->swap_in_blocks;
			t.cow_blocks += s->cow_blocks;
			t.prefix_hit_tokens += s->prefix_hit_tokens;
			t.prompt_tokens_admitted += s->prompt_tokens_admitted;
			t.steps += s->steps;
			fsum += s->frag_sum;
			fsteps += s->frag_steps;
			area += s->usage_area;
			if (s->usage_max > t.kv_usage_max)
				t.kv_usage_max = s->usage_max;
		}
		t.frag_internal_mean = fsteps ? fsum / (double)fsteps : 0.0;
		t.kv_usage_mean = t.duration_ns > 0
			? area / (double)t.duration_ns / (double)R->nrp : 0.0;
	}
	t.sim_wall_s = wall_now() - w0;
	if (rpt_summary_write(R->rep, &t, R->out.f[2]) != 0) {
		fprintf(stderr, "kvsim run: writing summary.csv failed\n");
		rc = 1;
		out_abort(&R->out);
		goto done;
	}
	if ((rc = out_commit(&R->out)) != 0)
		goto done;
	if (!R->quiet)
		print_table(R, R->rep, &t);
done:
	teardown(R);
	free(R);
	free(sets);
	return rc;
}
