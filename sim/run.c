/*
 * run.c -- one simulation run as a library call (run.h).
 *
 * config -> catalogs -> vLLM's KV sizing (startup lines) -> cost model ->
 * replicas (scheduler + allocator each) -> the event loop -> rows for the
 * report (reports/rpt.h) and totals.
 *
 * The loop (DESIGN.md "Data flow of one run"): the workload is streamed;
 * exactly one ARRIVAL event is pending at a time (the next request), so
 * memory does not grow with the trace (a fast-forward span reads a few
 * requests ahead, at most FF_AHEAD_MAX, to take them in: ff_peek).  An
 * arrival is routed to a replica
 * and wakes it (a WAKE event, which the queue orders behind every arrival
 * at the same instant, so simultaneous arrivals share a batch); a replica
 * that finishes a step as requests arrive is woken the same way, and
 * otherwise starts the next one at once (continuous batching) until it has
 * nothing to run.  Events are ordered by (time, kind, insertion number):
 * same config and seed, same bytes.
 */
#include "config.h"

#include "sim/run.h"

#include "core/kvsched.h"
#include "reports/rpt.h"
#include "sim/calib.h"
#include "sim/model/catalog.h"
#include "sim/cost.h"
#include "sim/ctrace.h"
#include "sim/engine.h"
#include "sim/offload.h"
#include "sim/pd.h"
#include "sim/pdcfg.h"
#include "sim/plugin.h"
#include "sim/replica.h"
#include "sim/runcfg.h"
#include "sim/runcfg_knobs.h"

#include "sim/spec.h"
#include "sim/vllmver.h"
#include "sim/model/sizing.h"
#include "workloads/wl.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A request waiting client-side for a slot (workload.max_concurrency). */
struct cwait {
	struct wl_request r;	/* segs and tokens: the copies below */
	struct wl_seg *segs;
	uint32_t *tokens;
};

/* A request read ahead of its arrival for the spans (ff_peek): its own
 * copies of the arrays the stream lends until its next call. */
struct ahead {
	struct wl_request r;	/* segs and tokens: the copies below */
	struct wl_seg *segs;
	uint32_t *tokens;
	size_t capsegs, captok;
};

/* Most requests a span reads ahead of the next arrival. */
#define FF_AHEAD_MAX 1024u

/* A sent request's client timeout (workload.timeout_s). */
struct ctmo {
	int64_t t;
	uint32_t replica;
	kvs_req h;
};

/*
 * Benchmark clients (docs/workloads.md, section 11): at most max_conc
 * requests in flight, the rest waiting in arrival order; a timeout per
 * request from when it is sent; stages that start when the one before
 * has drained.  All off: the loop is the open one of the top comment.
 */
struct client {
	bool on;
	uint32_t max_conc;	/* 0: no limit */
	int64_t timeout_ns;	/* 0: none */
	bool drain;		/* stages drain (wl_info.stages_drain) */
	int64_t gap_ns;		/* after a stage has drained */
	int64_t shift_ns;	/* added to the stream's arrivals */
	uint32_t stage;		/* the stage being sent */
	bool held;		/* the next request waits for the drain */
	uint64_t inflight, max_inflight, failed, ends;
	struct cwait *w;	/* waiting: w[wh .. wh + wn) */
	size_t wh, wn, wcap;
	struct ctmo *tq;	/* timeouts in send order: tq[th .. th+tn) */
	size_t th, tn, tcap;
	bool tmo_queued;	/* a TIMEOUT event is queued */
};

#define SIM_EV_TIMEOUT SIM_EV_USER

/* One pool of a disaggregated run (sim/pd.h): its configuration (the
 * top-level one with the pool's keys), GPU, sizing, cost model and the
 * scheduler's and allocator's settings. */
struct run_pool {
	struct sim_config cfg;		/* shallow: the workload is R's */
	const struct cat_gpu *gpu;
	struct sz_result sr;
	struct cost_model cm;
	struct kvs_config sc;
	struct kvc_config kc;
};

struct ticks;

struct sim_run {
	struct sim_config cfg;
	struct sim_run_opts o;
	cat *cat;
	struct cat_model *hf;		/* a config.json model (owned) */
	const struct cat_model *model;
	const struct cat_gpu *gpu;
	struct sz_result sr;
	struct cost_calib calib;	/* cost.calibration (owns sources) */
	char calib_path[1024];		/* the file calib came from, or "" */
	bool calib_auto;		/* chosen for the GPU and vLLM version */
	struct cost_model cm;		/* borrows calib's sources */
	void *plugin;			/* a plugin policy's handle */
	struct kvs_config sc;
	struct kvc_config kc;
	replica **rp;
	uint32_t nrp;
	bool *wake;			/* a WAKE is queued */
	wl_stream *ws;
	struct sim_evq q;
	rpt *rep;
	ctrace *ct;
	uint64_t rr;			/* round-robin counter */
	uint64_t arrived;
	uint64_t nparallel;	/* requests asking for n > 1 samples */
	uint64_t nparallel_samples;	/* and their samples */
	bool fanout;		/* n > 1 runs as n child requests */
	bool fork;		/* n > 1 runs as one forked group */
	uint64_t nsamples;	/* timeseries rows written */
	bool tty;
	uint64_t nreq_total;	/* the workload's requests, for the progress
				 * line's percentage; 0 unknown */
	bool saturated;
	uint64_t nchecks;		/* invariant checks (o.invariants) */
	struct client c;
	char run_id[32];
	double w0;
	struct rpt_totals t;
	/* disaggregation (cfg.pd.on): prefill and decode pools */
	struct run_pool *pool;
	sim_pd *pd;
	struct rpt_pd_pools pdt;
	/* the caller's message buffer, set by sim_run_open and
	 * sim_run_exec */
	char *err;
	size_t errlen;
	/* KV offload (sim/offload.h): on when off_on */
	bool off_on;
	struct sim_offload_setup off;
	/* LoRA adapters (sim/lora.h): on when lora_on */
	bool lora_on;
	struct sim_lora_setup lora;
	uint8_t *lora_seen;	/* adapters requested, by id */
	uint32_t caplora;
	uint64_t lora_adapters;

	/* speculative decoding (sim/spec.h): on when spec.on */
	struct sim_spec_run spec;

	/* fast-forward (replica_ff): the next timeseries row, and the steps
	 * made since the loop counted its last event (with the WAKEs of
	 * requests a span admitted before they came: events too), and all
	 * its steps */
	int64_t ff_tick;
	struct ticks *tk;	/* the loop's rows, while it runs (ff_row) */
	struct replica_rows ffrows;	/* the spans' rows (ff_rows_ok) */
	bool ffrows_on;
	uint64_t ff_steps, ff_total;
	uint64_t ff_rows;	/* rows written inside spans (ff_row) */
	uint64_t ff_spans, ff_tails;	/* replica_ff calls that made
					 * steps; those that left a tail */
	uint64_t ff_ext;	/* the steps made after tails */
	uint64_t ff_adm;	/* the spans ending with a step that admits */
	uint64_t ff_adm_steps;	/* the spans' steps that admitted requests */
	int64_t ff_end;		/* the end of the last fast-forwarded step */
	/* arrivals the spans take in (replica_arrivals; ff_take_in_ok): the
	 * replica spanned (ff_i), the loop's next request (ff_cur, when
	 * *ff_have), the requests read past it, la[lh .. lh + ln) in a
	 * ring of lcap, and where the stream ended (la_end) or what its
	 * bad line there says (la_msg, when la_bad); cur's arrays are
	 * la_cur's once a span has read past it (la_own); the requests
	 * taken in that have not arrived yet (ff_pend,
	 * replica_taken_pending's) */
	bool take_in;
	struct replica_arrivals ffarr;
	uint32_t ff_i;
	struct wl_request *ff_cur;
	bool *ff_have;
	struct ahead *la, la_cur;
	size_t lh, ln, lcap;
	bool la_own, la_end, la_bad;
	char la_msg[1200];
	uint64_t ff_pend;
};

/* A failure: "PROG: what" (PROG is opts.prog) into the caller's buffer,
 * and e back. */
static kv_err
rfail(sim_run *R, kv_err e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static kv_err
rfail(sim_run *R, kv_err e, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(R->err, R->errlen, "%s: ",
		     R->o.prog ? R->o.prog : "kvsim");
	if (n >= 0 && (size_t)n < R->errlen) {
		va_start(ap, fmt);
		vsnprintf(R->err + n, R->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return e;
}

/*
 * A replica's or the engine's failure ends the run (exit 1), whatever its
 * code: KV_EINVAL from below would read as bad input (run.h).
 */
static kv_err
run_err(kv_err e)
{
	return e == KV_EINVAL ? KV_ESTATE : e;
}

/* "PROG: what" on opts.diag (warnings, heartbeats), if there is one. */
static void
rnote(const sim_run *R, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
rnote(const sim_run *R, const char *fmt, ...)
{
	va_list ap;

	if (R->o.diag == NULL)
		return;
	fprintf(R->o.diag, "%s: ", R->o.prog ? R->o.prog : "kvsim");
	va_start(ap, fmt);
	vfprintf(R->o.diag, fmt, ap);
	va_end(ap);
}

/* The replica of [base, base + n) the router picks for r. */
static uint32_t
route_in(sim_run *R, const struct wl_request *r, uint32_t base, uint32_t n,
	 enum sim_router router, uint64_t *rr)
{
	uint32_t best = base;

	if (n == 1)
		return base;
	if (router == SIM_ROUTE_RR)
		return base + (uint32_t)((*rr)++ % n);
	if (router == SIM_ROUTE_PREFIX &&
	    r->prompt_tokens >= R->sr.block_size) {
		uint32_t bs = R->sr.block_size, tok[64], done = 0;
		uint64_t h = 0x9e3779b97f4a7c15ull;

		/* Hash the leading block (in chunks, no allocation). */
		while (done < bs) {
			uint32_t k = bs - done < 64 ? bs - done : 64;

			wl_request_tokens(r, done, k, R->cfg.wl.vocab_size,
					  tok);
			for (uint32_t i = 0; i < k; i++)
				h = wl_mix(h, tok[i]);
			done += k;
		}
		return base + (uint32_t)(h % n);
	}
	/* least outstanding tokens (also prefix-affinity's fallback) */
	for (uint32_t i = base + 1; i < base + n; i++)
		if (replica_outstanding(R->rp[i]) <
		    replica_outstanding(R->rp[best]))
			best = i;
	return best;
}

static uint32_t
route(sim_run *R, const struct wl_request *r)
{
	return route_in(R, r, 0, R->nrp, R->cfg.router, &R->rr);
}

/*
 * Whether replica i's admissions count for the prefix hit rate: every
 * replica's, but in a disaggregated run only the prefill pool's (the
 * decode side's "hits" are mostly the prompt it loaded, docs/pd.md).
 */
static bool
admits_prompt(const sim_run *R, uint32_t i)
{
	return R->pool == NULL || i < R->pool[0].cfg.replicas;
}

/* Timeseries rows after which a run says it writes many. */
#define SIM_MANY_SAMPLES 10000000ull

static void offload_sample(const sim_run *R, struct rpt_sample *s);

static void
sample(sim_run *R, int64_t t, uint64_t *last_prompt, uint64_t *last_gen,
       double interval_s)
{
	struct rpt_sample s;
	uint64_t pt = 0, gt = 0, hit = 0, adm = 0;

	memset(&s, 0, sizeof(s));
	s.t_ns = t;
	for (uint32_t i = 0; i < R->nrp; i++) {
		uint64_t a, b, c, d, e, f;
		const struct replica_stats *st = replica_stats(R->rp[i]);

		replica_state(R->rp[i], t, &a, &b, &c, &d, &e, &f);
		s.running += a;
		s.waiting += b;
		s.swapped += c;
		s.kv_blocks_used += d;
		s.kv_blocks_total += e;
		s.kv_frag_internal_tokens += f;
		s.preemptions_cum += st->preemptions;
		pt += st->prompt_tokens_done;
		gt += st->gen_tokens_done;
		if (admits_prompt(R, i)) {
			hit += st->prefix_hit_tokens;
			adm += st->prompt_tokens_admitted;
		}
	}
	s.prefix_hit_rate = adm ? (double)hit / (double)adm : 0.0;
	offload_sample(R, &s);
	if (R->ct != NULL)
		ctrace_counters(R->ct, t, &s);
	s.prompt_tok_s = (double)(pt - *last_prompt) / interval_s;
	s.gen_tok_s = (double)(gt - *last_gen) / interval_s;
	*last_prompt = pt;
	*last_gen = gt;
	(void)rpt_add_sample(R->rep, &s);
	/* a row per interval, idle ones too: a sparse workload stretched
	 * over a long simulated time writes very many (said once) */
	if (++R->nsamples == SIM_MANY_SAMPLES)
		rnote(R, "warning: %llu timeseries rows written so far, one "
		      "per %g simulated s (idle intervals too); a larger "
		      "output.timeseries_interval_s writes fewer\n",
		      (unsigned long long)SIM_MANY_SAMPLES,
		      R->cfg.timeseries_interval_s);
}

static kv_err offload_wake(sim_run *R, uint32_t i, int64_t now);
static kv_err
start_step(sim_run *R, uint32_t i, int64_t now)
{
	char why[1024];
	int64_t dt;
	bool started;
	kv_err e;

	if (R->pd != NULL)
		sim_pd_now(R->pd, now);
	e = replica_begin(R->rp[i], now, &dt, &started, why, sizeof(why));
	if (e != KV_OK)
		return rfail(R, run_err(e), "%s", why);
	if (started && sim_evq_push(&R->q, now + dt, SIM_EV_STEP_DONE, i,
				    NULL) != KV_OK)
		return rfail(R, KV_ENOMEM, "out of memory");
	return started ? KV_OK : offload_wake(R, i, now);
}

/* Queue a WAKE of replica i at now, unless one is queued. */
static kv_err
wake(sim_run *R, uint32_t i, int64_t now)
{
	if (R->wake[i])
		return KV_OK;
	R->wake[i] = true;
	if (sim_evq_push(&R->q, now, SIM_EV_WAKE, i, NULL) != KV_OK)
		return rfail(R, KV_ENOMEM, "out of memory");
	return KV_OK;
}

/* ---- KV offload (sim/offload.h) ---- */

/* Resolve engine.kv_offloading_size and kv_offload.* for the replicas. */
static kv_err
setup_offload(sim_run *R, const struct kvs_policy *pol)
{
	if (R->cfg.offload.size_gib <= 0)
		return KV_OK;
	R->off_on = true;
	/* "FILE:LINE:COL: what" (run.h): no PROG prefix */
	return sim_offload_resolve(&R->cfg, pol->name, R->sr.tp,
				   R->sr.block_size, &R->cm, &R->off, R->err,
				   R->errlen);
}

/* The tier names as the report's columns. */
static int
offload_report(sim_run *R)
{
	const char *names[KVO_MAX_TIERS];

	if (!R->off_on)
		return 0;
	for (uint32_t t = 0; t < R->off.kc.ntiers; t++)
		names[t] = R->off.kc.tier[t].name;
	return rpt_set_offload(R->rep, R->off.kc.ntiers, names);
}

/* Blocks used in each tier, over the replicas. */
static void
offload_sample(const sim_run *R, struct rpt_sample *s)
{
	struct sim_offload_tier_stats st;

	for (uint32_t i = 0; R->off_on && i < R->nrp; i++)
		for (uint32_t t = 0; t < R->off.kc.ntiers; t++) {
			sim_offload_stats(replica_offload(R->rp[i]), t, &st);
			s->offload_used_blocks[t] += st.used_blocks;
		}
}

/* Per tier: tokens loaded, bytes loaded and stored, blocks evicted. */
static void
offload_totals(const sim_run *R, struct rpt_totals *t)
{
	struct sim_offload_tier_stats st;

	for (uint32_t i = 0; R->off_on && i < R->nrp; i++)
		for (uint32_t k = 0; k < R->off.kc.ntiers; k++) {
			sim_offload_stats(replica_offload(R->rp[i]), k, &st);
			t->offload[k].hit_tokens += st.hit_tokens;
			t->offload[k].load_bytes += st.load_bytes;
			t->offload[k].store_bytes += st.store_bytes;
			t->offload[k].evicted_blocks += st.evicted_blocks;
		}
}

/* An idle replica with transfers in flight wakes when the next ends (a
 * request waiting on its load, a finished one's held blocks). */
static kv_err
offload_wake(sim_run *R, uint32_t i, int64_t now)
{
	int64_t t = R->off_on ? replica_offload_wake(R->rp[i], now) : -1;

	if (t >= 0 && sim_evq_push(&R->q, t > now ? t : now, SIM_EV_WAKE, i,
				   NULL) != KV_OK)
		return rfail(R, KV_ENOMEM, "out of memory");
	return KV_OK;
}

/* a's copy of request r: r with segs and tokens in a's arrays. */
static bool
ahead_copy(struct ahead *a, const struct wl_request *r)
{
	if (r->nsegs > a->capsegs) {
		struct wl_seg *g = realloc(a->segs, r->nsegs * sizeof(*g));

		if (g == NULL)
			return false;
		a->segs = g;
		a->capsegs = r->nsegs;
	}
	if (r->tokens != NULL && r->prompt_tokens > a->captok) {
		uint32_t *t = realloc(a->tokens,
				      (size_t)r->prompt_tokens * sizeof(*t));

		if (t == NULL)
			return false;
		a->tokens = t;
		a->captok = r->prompt_tokens;
	}
	a->r = *r;
	if (r->nsegs > 0)
		memcpy(a->segs, r->segs, r->nsegs * sizeof(*a->segs));
	if (r->tokens != NULL)
		memcpy(a->tokens, r->tokens,
		       (size_t)r->prompt_tokens * sizeof(*a->tokens));
	a->r.segs = r->nsegs > 0 ? a->segs : NULL;
	a->r.tokens = r->tokens != NULL ? a->tokens : NULL;
	return true;
}

static void
ahead_free(sim_run *R)
{
	for (size_t i = 0; i < R->lcap; i++) {
		free(R->la[i].segs);
		free(R->la[i].tokens);
	}
	free(R->la);
	free(R->la_cur.segs);
	free(R->la_cur.tokens);
	R->la = NULL;
	memset(&R->la_cur, 0, sizeof(R->la_cur));
	R->lh = R->ln = R->lcap = 0;
}

/*
 * The stream's next request into cur: the first read ahead (ff_peek),
 * else the stream's own; where a span read up to the stream's end or a
 * bad line, that end or that line's message comes now, in its place.
 */
static wl_err
stream_next(sim_run *R, struct wl_request *cur)
{
	if (R->ln > 0) {
		struct ahead a = R->la_cur;

		R->la_cur = R->la[R->lh];
		R->la[R->lh] = a;
		R->lh = (R->lh + 1) % R->lcap;
		R->ln--;
		*cur = R->la_cur.r;
		R->la_own = true;
		return WL_OK;
	}
	R->la_own = false;
	if (R->la_end)
		return WL_END;
	if (R->la_bad)
		return WL_EPARSE;
	return wl_stream_next(R->ws, cur);
}

static kv_err
next_arrival(sim_run *R, struct wl_request *cur, bool *have)
{
	wl_err we = stream_next(R, cur);
	char buf[1200];

	*have = false;
	if (we == WL_END)
		return KV_OK;
	if (we != WL_OK) {
		if (R->la_bad)
			return rfail(R, KV_EINVAL, "%s", R->la_msg);
		wl_error_format(wl_stream_error(R->ws), buf, sizeof(buf));
		return rfail(R, KV_EINVAL, "%s", buf);
	}
	*have = true;
	if (R->c.drain && cur->stage != R->c.stage) {
		/* a later stage: it starts when this one has drained */
		R->c.held = true;
		return KV_OK;
	}
	cur->arrival_ns += R->c.shift_ns;
	if (sim_evq_push(&R->q, cur->arrival_ns, SIM_EV_ARRIVAL, 0, NULL) !=
	    KV_OK)
		return rfail(R, KV_EINVAL, "request %" PRIu64 " arrives at "
			     "%" PRId64 " ns, before the clock", cur->id,
			     cur->arrival_ns);
	return KV_OK;
}

/*
 * The early stop of run.h: enough requests certainly over the SLO that its
 * quantile is over it whatever the rest do.
 */
static bool
stop_now(sim_run *R, int64_t now)
{
	static const char *const metric[SIM_W_N] = { "ttft", "queue", "e2e" };
	const struct sim_stop *s = &R->o.stop;
	uint64_t n = s->n_max;

	if (n == 0)
		return false;
	for (size_t j = 0; j < s->nwatch; j++) {
		const struct sim_watch *w = &s->w[j];
		uint64_t need = n - (uint64_t)(w->p * (double)(n - 1));
		uint64_t late = rpt_count_over(R->rep, metric[w->metric],
					       w->limit_s);

		for (uint32_t i = 0; i < R->nrp && late < need; i++)
			late += replica_late(R->rp[i], now, w->metric,
					     (int64_t)(w->limit_s * 1e9));
		if (late >= need)
			return true;
	}
	return false;
}

static int64_t
interval_ns(double s)
{
	double ns = s * 1e9 + 0.5;	/* 4.1 s: 4099999999.9999995 ns */

	return !(ns >= 1) ? 1 : ns >= (double)WL_HORIZON_NS ? WL_HORIZON_NS :
	       (int64_t)ns;
}

static double wall_now(void);

/*
 * A terminal's progress line: the share of the workload's requests done,
 * and the wall time left at the pace so far (when the count is known).
 */
static void
progress_line(const sim_run *R, int64_t t_s)
{
	uint64_t done = rpt_completed(R->rep);

	fprintf(R->o.diag, "\r[kvsim run] ");
	if (R->nreq_total > 0)
		fprintf(R->o.diag, "%3.0f%% ", 100.0 * (double)done /
			(double)R->nreq_total);
	fprintf(R->o.diag, "t=%.0fs arrived=%" PRIu64 " done=%" PRIu64,
		(double)t_s / 1e9, R->arrived, done);
	if (R->nreq_total > 0 && done > 0 && done <= R->nreq_total) {
		double el = wall_now() - R->w0;

		fprintf(R->o.diag, " ETA %.0fs", el * (double)(R->nreq_total -
			done) / (double)done);
	}
	fputs("   ", R->o.diag);
}

/* The workload's requests: one pass over a stream of its own (0 when it
 * cannot be read: the run's own stream then says why). */
static uint64_t
count_requests(const sim_run *R)
{
	struct wl_error we;
	struct wl_request r;
	wl_stream *ws = NULL;
	uint64_t n = 0;

	wl_error_clear(&we);
	if (wl_open(&R->cfg.wl, &ws, &we) != WL_OK)
		return 0;
	while (wl_stream_next(ws, &r) == WL_OK)
		n++;
	if (wl_stream_next(ws, &r) != WL_END)
		n = 0;
	wl_stream_free(ws);
	return n;
}

/* The loop's timeseries rows and progress lines. */
struct ticks {
	int64_t t_first;	/* the first arrival */
	int64_t ts_ns, next_ts;	/* timeseries interval, next row */
	int64_t hb_ns, next_hb;	/* heartbeat interval, next line */
	uint64_t lp, lg;	/* prompt, generated tokens at the last row */
};

static void
ticks_init(struct ticks *k, const sim_run *R, int64_t t_first)
{
	memset(k, 0, sizeof(*k));
	/* intervals within [1 ns, the horizon]: the clock adds them to times
	 * below the horizon without overflow */
	k->ts_ns = interval_ns(R->cfg.timeseries_interval_s);
	k->hb_ns = interval_ns(R->cfg.heartbeat_interval_s);
	k->t_first = t_first;
	k->next_ts = t_first + k->ts_ns;
	k->next_hb = t_first + k->hb_ns;
}

/* The next row, and the one after it due. */
static void
tick_row(sim_run *R, struct ticks *k)
{
	sample(R, k->next_ts, &k->lp, &k->lg, (double)k->ts_ns / 1e9);
	k->next_ts += k->ts_ns;
}

/*
 * The rows and progress lines due before an event at now.  true: stop
 * the run here, its SLO is certainly missed.
 */
static bool
tick(sim_run *R, struct ticks *k, int64_t now)
{
	/* a row at T holds the state after every event at T: the events of
	 * the interval (T - interval, T] */
	while (k->next_ts < now) {
		tick_row(R, k);
		if (R->o.stop.nwatch > 0 && stop_now(R, now))
			return true;
		if (R->tty && R->o.progress)
			progress_line(R, k->next_ts - k->t_first);
	}
	while (k->next_hb <= now) {
		if (!R->tty && R->o.progress)
			rnote(R, "t=%.0fs arrived=%" PRIu64 " completed=%"
			      PRIu64 "\n", (double)(k->next_hb - k->t_first) /
			      1e9, R->arrived, rpt_completed(R->rep));
		k->next_hb += k->hb_ns;
	}
	return false;
}

/* The first row after t: t's own when it is past t; INT64_MAX when that
 * is past the clock. */
static int64_t
ff_row_after(const struct ticks *k, int64_t t)
{
	uint64_t n;

	if (k->next_ts > t)
		return k->next_ts;
	n = (uint64_t)(t - k->next_ts) / (uint64_t)k->ts_ns + 1;
	if (n > (uint64_t)(INT64_MAX - k->next_ts) / (uint64_t)k->ts_ns)
		return INT64_MAX;
	return k->next_ts + (int64_t)n * k->ts_ns;
}

/* Clients (struct client) ---------------------------------------------- */

static kv_err send(sim_run *R, const struct wl_request *r, int64_t now);

/*
 * Room for one more at the end of the FIFO buf[*h .. *h + n) of *cap
 * elements of elem bytes: moved to the front, or grown.  false: out of
 * memory.
 */
static bool
fifo_room(void **buf, size_t *h, size_t n, size_t *cap, size_t elem)
{
	void *p;
	size_t c;

	if (*h + n < *cap)
		return true;
	if (*h > 0) {
		memmove(*buf, (char *)*buf + *h * elem, n * elem);
		*h = 0;
		return true;
	}
	c = *cap ? *cap * 2 : 256;
	if ((p = realloc(*buf, c * elem)) == NULL)
		return false;
	*buf = p;
	*cap = c;
	return true;
}

/* Queue the TIMEOUT event of the oldest timeout, unless one is queued. */
static kv_err
client_arm(sim_run *R)
{
	struct client *c = &R->c;

	if (c->tmo_queued || c->tn == 0)
		return KV_OK;
	if (sim_evq_push(&R->q, c->tq[c->th].t, SIM_EV_TIMEOUT, 0, NULL) !=
	    KV_OK)
		return rfail(R, KV_ENOMEM, "out of memory");
	c->tmo_queued = true;
	return KV_OK;
}

/* The request replica i queued last times out timeout_ns from now. */
static kv_err
client_timeout(sim_run *R, uint32_t i, int64_t now)
{
	struct client *c = &R->c;

	if (!fifo_room((void **)&c->tq, &c->th, c->tn, &c->tcap,
		       sizeof(*c->tq)))
		return rfail(R, KV_ENOMEM, "out of memory");
	c->tq[c->th + c->tn++] = (struct ctmo){
		.t = now + c->timeout_ns, .replica = i,
		.h = replica_last_handle(R->rp[i]),
	};
	return client_arm(R);
}

/* A TIMEOUT: every request due fails (unless it has ended). */
static kv_err
client_expire(sim_run *R, int64_t now)
{
	struct client *c = &R->c;
	char why[1024];
	kv_err e;

	c->tmo_queued = false;
	while (c->tn > 0 && c->tq[c->th].t <= now) {
		struct ctmo t = c->tq[c->th++];
		bool ended;

		c->tn--;
		e = replica_fail(R->rp[t.replica], t.h, now, R->rep, &ended,
				 why, sizeof(why));
		if (e != KV_OK)
			return rfail(R, run_err(e), "%s", why);
		if (!ended)
			continue;
		c->inflight--;
		c->failed++;
		/* its blocks are free: an idle replica may run again */
		if (!replica_busy(R->rp[t.replica]) &&
		    (e = wake(R, t.replica, now)) != KV_OK)
			return e;
	}
	return client_arm(R);
}

/* Keep a copy of r until a slot frees (the stream's buffers move on). */
static kv_err
client_wait(sim_run *R, const struct wl_request *r)
{
	struct client *c = &R->c;
	struct cwait *w;

	if (!fifo_room((void **)&c->w, &c->wh, c->wn, &c->wcap,
		       sizeof(*c->w)))
		return rfail(R, KV_ENOMEM, "out of memory");
	w = &c->w[c->wh + c->wn];
	memset(w, 0, sizeof(*w));
	w->r = *r;
	if (r->nsegs > 0) {
		w->segs = malloc(r->nsegs * sizeof(*w->segs));
		if (w->segs == NULL)
			return rfail(R, KV_ENOMEM, "out of memory");
		memcpy(w->segs, r->segs, r->nsegs * sizeof(*w->segs));
	}
	if (r->tokens != NULL) {
		w->tokens = malloc((size_t)r->prompt_tokens *
				   sizeof(*w->tokens));
		if (w->tokens == NULL) {
			free(w->segs);
			return rfail(R, KV_ENOMEM, "out of memory");
		}
		memcpy(w->tokens, r->tokens, (size_t)r->prompt_tokens *
		       sizeof(*w->tokens));
	}
	w->r.segs = w->segs;
	w->r.tokens = w->tokens;
	c->wn++;
	return KV_OK;
}

/*
 * After an event at now: requests that ended free their slots, waiting
 * requests go out (sent now: their latency counts from here), and a
 * stage held for the drain starts once nothing of the one before is
 * left.
 */
static kv_err
client_sync(sim_run *R, int64_t now, struct wl_request *cur)
{
	struct client *c = &R->c;
	uint64_t ends = 0;
	kv_err e;

	for (uint32_t i = 0; i < R->nrp; i++) {
		int64_t next = replica_client_ends(R->rp[i], now);

		/* a later end at the client: an event then to see it */
		if (next >= 0 && sim_evq_push(&R->q, next, SIM_EV_WAKE, i,
					      NULL) != KV_OK)
			return rfail(R, KV_ENOMEM, "out of memory");
		ends += replica_stats(R->rp[i])->ends;
	}
	c->inflight -= ends - c->ends;
	c->ends = ends;
	while (c->wn > 0 && (c->max_conc == 0 || c->inflight < c->max_conc)) {
		struct cwait w = c->w[c->wh++];

		c->wn--;
		w.r.arrival_ns = now;
		e = send(R, &w.r, now);
		free(w.segs);
		free(w.tokens);
		if (e != KV_OK)
			return e;
	}
	if (!c->held || c->inflight > 0 || c->wn > 0)
		return KV_OK;
	c->held = false;
	c->stage = cur->stage;
	c->shift_ns = now + c->gap_ns - cur->stage_ns;
	cur->arrival_ns += c->shift_ns;
	if (sim_evq_push(&R->q, cur->arrival_ns, SIM_EV_ARRIVAL, 0, NULL) !=
	    KV_OK)
		return rfail(R, KV_ENOMEM, "out of memory");
	return KV_OK;
}

static void
client_free(struct client *c)
{
	for (size_t i = 0; i < c->wn; i++) {
		free(c->w[c->wh + i].segs);
		free(c->w[c->wh + i].tokens);
	}
	free(c->w);
	free(c->tq);
	memset(c, 0, sizeof(*c));
}

/* Replica i was given a request at now: wake it when the request
 * reaches its engine. */
static kv_err
admit_wake(sim_run *R, uint32_t i, int64_t now)
{
	/* in the API server until then (cost.h): a WAKE of its own */
	if (replica_admit_at(R->rp[i]) > now &&
	    sim_evq_push(&R->q, replica_admit_at(R->rp[i]), SIM_EV_WAKE, i,
			 NULL) != KV_OK)
		return rfail(R, KV_ENOMEM, "out of memory");
	if (replica_admit_at(R->rp[i]) <= now && !replica_busy(R->rp[i]))
		return wake(R, i, now);
	return KV_OK;
}

/* Adapter a was requested: counted once (summary's lora_adapters). */
static kv_err
lora_note(sim_run *R, uint32_t a)
{
	if (a >= R->caplora) {
		uint32_t cap = R->caplora ? R->caplora : 64;
		uint8_t *p;

		while (cap <= a)
			cap *= 2;
		if ((p = realloc(R->lora_seen, cap)) == NULL)
			return KV_ENOMEM;
		memset(p + R->caplora, 0, cap - R->caplora);
		R->lora_seen = p;
		R->caplora = cap;
	}
	R->lora_adapters += !R->lora_seen[a];
	R->lora_seen[a] = 1;
	return KV_OK;
}

/* Send request r to a replica now: route it, wake the replica. */
static kv_err
send(sim_run *R, const struct wl_request *r, int64_t now)
{
	uint32_t i;
	char why[1024];
	bool rej, adm = false, taken = false;
	kv_err e;

	R->arrived++;
	R->nparallel += r->n > 1;
	R->nparallel_samples += r->n > 1 ? r->n : 0;

	if (R->lora_on && r->lora != 0 && lora_note(R, r->lora) != KV_OK)
		return rfail(R, KV_ENOMEM, "out of memory");
	if (R->pd != NULL) {
		e = sim_pd_add(R->pd, r, &i, &rej, why, sizeof(why));
	} else {
		i = route(R, r);
		/* a tail's steps ended by now go first (replica_ff_catch) */
		e = replica_ff_catch(R->rp[i], now, R->rep, why, sizeof(why));
		/* one a span took in is held or admitted already */
		taken = e == KV_OK && replica_taken_pending(R->rp[i]) > 0;
		rej = false;
		if (taken)
			e = replica_taken_arrive(R->rp[i], r, &adm, why,
						 sizeof(why));
		else if (e == KV_OK)
			e = replica_add(R->rp[i], r, &rej, why, sizeof(why));
	}
	if (e != KV_OK)
		return rfail(R, run_err(e), "%s", why);
	if (taken)
		R->ff_pend = replica_taken_pending(R->rp[i]);
	if (adm) {
		/* its WAKE at the engine finds the span's step running: an
		 * event, counted with the spans' steps */
		R->ff_steps++;
		return KV_OK;
	}
	if (!rej && R->c.on) {
		if (++R->c.inflight > R->c.max_inflight)
			R->c.max_inflight = R->c.inflight;
		if (R->c.timeout_ns > 0 &&
		    (e = client_timeout(R, i, now)) != KV_OK)
			return e;
	}
	return rej ? KV_OK : admit_wake(R, i, now);
}

/* An ARRIVAL: send the request (or let it wait for a slot), queue the
 * next one. */
static kv_err
arrive(sim_run *R, int64_t now, struct wl_request *cur, bool *have)
{
	kv_err e;

	if (R->c.max_conc > 0 && R->c.inflight >= R->c.max_conc)
		e = client_wait(R, cur);
	else
		e = send(R, cur, now);
	if (e != KV_OK)
		return e;
	return next_arrival(R, cur, have);
}

/*
 * The fast-forward's horizon for the replica whose step just ended: the
 * last instant before any queued event that can touch it.  Other
 * replicas' steps and wake-ups cannot -- unless clients react to their
 * ends -- nor can its own wake-ups: they find it busy (a wake-up at the
 * end of a step comes after the next step has begun), and the requests
 * they are for wait in the replica until their step (replica_ff stops
 * there).  *end: the horizon of a step that ends requests, whose rows go
 * into the report in time order with every replica's: before any event
 * but the replica's own wake-ups; none with clients, which react to an
 * end before the next step.  Timeseries rows (a row holds the state after
 * the events at its time): with `rows` the spans write those up to *end
 * themselves (replica_rows), and the horizon is at most the first row
 * after it; without, at most the next row.  *tail: the latest end of a
 * span's tail, the step in flight past the horizon: before any event but
 * an arrival (held in the replica for its step under async scheduling),
 * a step's end or a wake-up; none with clients, or where a row or a
 * progress line does more than read the state (ff_rows_ok).
 */
static int64_t
ff_horizon(const sim_run *R, uint32_t i, int64_t *end, int64_t *tail,
	   bool rows, const int64_t *arr)
{
	int64_t h = INT64_MAX, e = INT64_MAX, t1;

	*tail = R->c.on || !rows ? INT64_MIN : INT64_MAX;
	/* where the span takes arrivals in (arr), the first it does not
	 * stands for the queue's ARRIVAL: at *arr, or none (NULL) */
	if (R->take_in && arr != NULL)
		h = e = *arr - 1;
	for (size_t j = 0; j < R->q.n; j++) {
		const struct sim_ev *ev = &R->q.h[j];
		bool step = ev->kind == SIM_EV_STEP_DONE ||
			    ev->kind == SIM_EV_WAKE;

		if (R->take_in && ev->kind == SIM_EV_ARRIVAL)
			continue;
		if (!step && ev->kind != SIM_EV_ARRIVAL && ev->t - 1 < *tail)
			*tail = ev->t - 1;
		if (!(ev->kind == SIM_EV_WAKE && ev->arg == i) &&
		    ev->t - 1 < e)
			e = ev->t - 1;
		if (!R->c.on && step)
			continue;
		if (ev->t - 1 < h)
			h = ev->t - 1;
	}
	if (rows) {
		/* the rows up to e are written inside the spans; a span
		 * ends by the first row after e, and before the next
		 * progress line (its counts are those of the events before
		 * its time) */
		t1 = ff_row_after(R->tk, e);
		if (R->o.progress && !R->tty && R->tk->next_hb - 1 < t1)
			t1 = R->tk->next_hb - 1;
	} else {
		t1 = R->ff_tick;
		if (t1 < e)
			e = t1;
	}
	if (t1 < h)
		h = t1;
	*end = R->c.on ? INT64_MIN : e;
	return h;
}

/* Whether a span may write the timeseries rows that fall in it: not
 * when a row has more to do (the SLO stop's check, a terminal's
 * progress line) or clients react to ends. */
static bool
ff_rows_ok(const sim_run *R)
{
	return !R->c.on && R->o.stop.nwatch == 0 && R->ct == NULL &&
	       !(R->tty && R->o.progress);
}

/* replica_rows' writer: the next row (tick's), the replica's state as the
 * span says it stands then. */
static void
ff_row(void *arg)
{
	sim_run *R = arg;

	tick_row(R, R->tk);
	R->ff_tick = R->tk->next_ts;
	R->ff_rows++;
}

/*
 * Replica i's steady decode steps from *now, made at once (replica.h
 * replica_ff); *now moves to the end of the last.  Each counts as the
 * STEP_DONE event it replaces.  *tail: where the span left a step in
 * flight (its tail), its end, a STEP_DONE of its own; else INT64_MIN.
 * Not with P/D, whose pools hand requests over between steps.
 */
/*
 * A span's horizons from now (replica_span), where the next arrival it
 * does not take in is cur (NULL: none comes).
 */
static void
ff_bounds(sim_run *R, uint32_t i, int64_t now, const struct wl_request *cur,
	  struct replica_span *sp)
{
	sp->until = ff_horizon(R, i, &sp->until_end, &sp->tail_until,
			       R->ffrows_on,
			       cur != NULL ? &cur->arrival_ns : NULL);
	R->ffrows.limit = sp->until_end;
	/* steps after a tail: chosen before any request can reach the
	 * scheduler (the API server serves the next arrival before any
	 * later one, so its earliest admission bounds theirs), ended before
	 * the next row and the next progress line, on the one replica (no
	 * router reads it); arrivals in their time end them first (send) */
	sp->ext_sched = sp->ext_until = INT64_MIN;
	if (R->nrp == 1 && cur != NULL && !R->c.held &&
	    sp->tail_until > now) {
		sp->ext_sched = replica_admit_lb(R->rp[i], cur);
		sp->ext_until = ff_row_after(R->tk, sp->until) - 1;
		if (sp->tail_until < sp->ext_until)
			sp->ext_until = sp->tail_until;
		if (R->o.progress && !R->tty &&
		    R->tk->next_hb - 1 < sp->ext_until)
			sp->ext_until = R->tk->next_hb - 1;
	}
}

/*
 * replica_arrivals' peek: the k-th request to arrive from now, read
 * ahead of the stream (at most FF_AHEAD_MAX past the next); NULL with
 * *end set where the stream has no more, clear where it is not known (a
 * bad line, the limit, no memory).
 */
static const struct wl_request *
ff_peek(void *arg, uint32_t k, bool *end)
{
	sim_run *R = arg;

	*end = false;
	if (!*R->ff_have) {
		*end = true;
		return NULL;
	}
	if (k == 0)
		return R->ff_cur;
	if (k > FF_AHEAD_MAX)
		return NULL;
	while (R->ln < k) {
		struct wl_request r;
		wl_err we;

		if (R->la_end) {
			*end = true;
			return NULL;
		}
		if (R->la_bad)
			return NULL;
		/* the next request's arrays, before the stream moves on */
		if (!R->la_own) {
			if (!ahead_copy(&R->la_cur, R->ff_cur))
				return NULL;
			*R->ff_cur = R->la_cur.r;
			R->la_own = true;
		}
		if (R->ln == R->lcap) {
			size_t cap = R->lcap ? 2 * R->lcap : 16;
			struct ahead *a = calloc(cap, sizeof(*a));

			if (a == NULL)
				return NULL;
			for (size_t j = 0; j < R->ln; j++)
				a[j] = R->la[(R->lh + j) % R->lcap];
			free(R->la);
			R->la = a;
			R->lh = 0;
			R->lcap = cap;
		}
		we = wl_stream_next(R->ws, &r);
		if (we == WL_END) {
			R->la_end = true;
			continue;
		}
		if (we != WL_OK) {
			wl_error_format(wl_stream_error(R->ws), R->la_msg,
					sizeof(R->la_msg));
			R->la_bad = true;
			return NULL;
		}
		if (!ahead_copy(&R->la[(R->lh + R->ln) % R->lcap], &r))
			return NULL;
		R->ln++;
	}
	return &R->la[(R->lh + k - 1) % R->lcap].r;
}

/* Whether the first arrival that the spans have not taken in (ff_pend
 * are) comes at now; where it is not known (a bad line ahead), as if it
 * did (the step waits behind a WAKE). */
static bool
ff_untaken_at(sim_run *R, int64_t now)
{
	const struct wl_request *r;
	bool end;

	r = ff_peek(R, (uint32_t)R->ff_pend, &end);
	return r != NULL ? r->arrival_ns == now : !end;
}

/* replica_arrivals' bounds: ff_bounds for the replica being spanned. */
static void
ff_arr_bounds(void *arg, int64_t now, const struct wl_request *r,
	      struct replica_span *sp)
{
	sim_run *R = arg;

	ff_bounds(R, R->ff_i, now, r, sp);
}

/* Whether a span may take arrivals in (replica_arrivals): one replica,
 * its rows written by the spans, no clients, stages or trace. */
static bool
ff_take_in_ok(const sim_run *R)
{
	return R->nrp == 1 && R->pd == NULL && R->ffrows_on && !R->c.on &&
	       !R->c.drain && R->ct == NULL && !R->o.no_fast_forward &&
	       !R->o.no_take_in;
}

/*
 * A span's horizons from now (ff_bounds): where spans take arrivals in,
 * from the first they have not taken in; false when that one is not
 * known (a bad line ahead), and no span goes on.
 */
static bool
ff_span_bounds(sim_run *R, uint32_t i, int64_t now,
	       const struct wl_request *cur, bool have,
	       struct replica_span *sp)
{
	if (R->take_in) {
		bool end;

		R->ff_i = i;
		cur = ff_peek(R, (uint32_t)replica_taken_pending(R->rp[i]),
			      &end);
		if (cur == NULL && !end)
			return false;
		have = cur != NULL;
	}
	ff_bounds(R, i, now, have ? cur : NULL, sp);
	return true;
}

static kv_err
fast_forward(sim_run *R, uint32_t i, int64_t *now, int64_t *tail,
	     const struct wl_request *cur, bool have)
{
	char why[1024];
	struct replica_span sp;
	uint64_t spans;
	kv_err e;

	*tail = INT64_MIN;
	if (R->o.no_fast_forward || R->pd != NULL ||
	    !replica_ff_ready(R->rp[i], *now))
		return KV_OK;
	spans = R->ff_spans;
	sp.arr = R->take_in ? &R->ffarr : NULL;
	/* a span can end with a step that ends requests, and the next
	 * span start from the smaller batch (its horizons from its start,
	 * where spans take arrivals in) */
	do {
		if ((R->take_in || R->ff_spans == spans) &&
		    !ff_span_bounds(R, i, *now, cur, have, &sp))
			break;
		spans = R->ff_spans;
		e = replica_ff(R->rp[i], *now, &sp,
			       R->ffrows_on ? &R->ffrows : NULL, R->rep, why,
			       sizeof(why));
		if (e != KV_OK)
			return rfail(R, run_err(e), "%s", why);
		if (sp.nsteps == 0 && sp.tail_end == INT64_MIN)
			break;
		*now = sp.t_end;
		R->ff_steps += sp.nsteps + sp.ext;
		R->ff_total += sp.nsteps + (sp.tail_end != INT64_MIN) + sp.ext;
		R->ff_spans++;
		R->ff_tails += sp.tail_end != INT64_MIN;
		R->ff_ext += sp.ext;
		R->ff_adm += sp.adm_last;
		R->ff_adm_steps += sp.admitted;
		if (sp.nsteps > 0 && *now > R->ff_end)
			R->ff_end = *now;
	} while (sp.ended);
	*tail = sp.tail_end;
	if (R->take_in)
		R->ff_pend = replica_taken_pending(R->rp[i]);
	return KV_OK;
}

/* A STEP_DONE of replica i; cur is the next arrival, if have. */
static kv_err
step_done(sim_run *R, uint32_t i, int64_t now, struct wl_request *cur,
	  bool have)
{
	char why[1024];
	int64_t tail;
	kv_err e;

	if (R->pd != NULL)
		sim_pd_now(R->pd, now);
	e = replica_end(R->rp[i], now, R->rep, why, sizeof(why));
	if (e != KV_OK)
		return rfail(R, run_err(e), "%s", why);
	/* requests the clients send as these end join the next step */
	if (R->c.on && (e = client_sync(R, now, cur)) != KV_OK)
		return e;
	if ((e = fast_forward(R, i, &now, &tail, cur, have)) != KV_OK)
		return e;
	if (tail != INT64_MIN) {	/* the span's last step is in flight */
		if (sim_evq_push(&R->q, tail, SIM_EV_STEP_DONE, i, NULL) !=
		    KV_OK)
			return rfail(R, KV_ENOMEM, "out of memory");
		return KV_OK;
	}
	/* requests arriving at this instant (ordered after the step's end)
	 * join the next step: it starts from a WAKE, ordered after them
	 * (the first a span has not taken in: those it did arrived before) */
	if (R->ff_pend > 0)
		return ff_untaken_at(R, now) ? wake(R, i, now) :
					       start_step(R, i, now);
	if (have && !R->c.held && cur->arrival_ns == now)
		return wake(R, i, now);
	return start_step(R, i, now);
}

/* A P/D event (sim/pd.h). */
static kv_err
pd_event(sim_run *R, const struct sim_ev *ev)
{
	char why[1024] = "";
	kv_err e;

	if (R->pd == NULL)
		return rfail(R, KV_ESTATE, "P/D event in a colocated run");
	e = sim_pd_event(R->pd, ev, why, sizeof(why));
	/* an error of the run's own calls has its message already */
	if (e != KV_OK && why[0] != '\0')
		return rfail(R, run_err(e), "%s", why);
	return e == KV_OK ? KV_OK : run_err(e);
}

static kv_err
event(sim_run *R, const struct sim_ev *ev, struct wl_request *cur,
      bool *have)
{
	switch (ev->kind) {
	case SIM_EV_ARRIVAL:
		return arrive(R, ev->t, cur, have);
	case SIM_EV_WAKE:
		R->wake[ev->arg] = false;
		if (replica_busy(R->rp[ev->arg]))
			return KV_OK;
		return start_step(R, ev->arg, ev->t);
	case SIM_EV_STEP_DONE:
		return step_done(R, ev->arg, ev->t, cur, *have);
	case SIM_EV_TIMEOUT:
		return client_expire(R, ev->t);
	case SIM_EV_PD_HANDOFF:
	case SIM_EV_PD_XFER:
	case SIM_EV_PD_EXPIRE:
		return pd_event(R, ev);
	default:
		return rfail(R, KV_ESTATE, "event of unknown kind %" PRIu32,
			     ev->kind);
	}
}

/* The end of the workload: a replica with requests left has stalled. */
static kv_err
stalled(sim_run *R, int64_t t_last)
{
	for (uint32_t i = 0; i < R->nrp; i++) {
		uint64_t run, wait, swp, used, total, frag;

		replica_close(R->rp[i], t_last);
		if (!replica_has_work(R->rp[i]))
			continue;
		/* the policy schedules nothing more (vllm-v0, say, swaps a
		 * prefill back in only whole, and never when its rest is
		 * over the token budget) */
		replica_state(R->rp[i], INT64_MAX, &run, &wait, &swp, &used,
			      &total, &frag);
		return rfail(R, KV_ESTATE, "replica %u stalled with unfinished "
			     "requests (%" PRIu64 " running, %" PRIu64
			     " waiting, %" PRIu64 " swapped): the policy "
			     "schedules none of them%s", i, run, wait, swp,
			     swp > 0 && strcmp(R->cfg.policy, "vllm-v0") == 0 ?
			     " (vllm-v0 swaps a prefill back in only when "
			     "all its remaining tokens fit "
			     "max_num_batched_tokens, as vLLM v0 does: see "
			     "docs/scheduler.md)" : "");
	}
	return KV_OK;
}

/* opts.invariants: every module's invariants, now. */
static kv_err
invariants(sim_run *R)
{
	char why[512];
	int n;

	R->nchecks++;
	for (uint32_t i = 0; i < R->nrp; i++)
		if ((n = replica_check(R->rp[i], why, sizeof(why))) != 0)
			return rfail(R, KV_ESTATE, "invariant check: replica "
				     "%u: invariant %d (sim/replica.h): %s", i,
				     n, why);
	if ((n = wl_stream_check(R->ws)) != 0)
		return rfail(R, KV_ESTATE, "invariant check: request stream "
			     "invariant %d broken (workloads/wl.h)", n);
	if ((n = rpt_check(R->rep)) != 0)
		return rfail(R, KV_ESTATE, "invariant check: report invariant "
			     "%d broken (reports/rpt.h)", n);
	return KV_OK;
}

static bool
invariants_due(const sim_run *R, uint64_t events)
{
	return R->o.invariants &&
	       (events <= SIM_CHECK_DENSE || events % SIM_CHECK_DENSE == 0);
}

static kv_err
loop(sim_run *R, int64_t *t_first, int64_t *t_last, uint64_t *events)
{
	struct wl_request cur;
	struct sim_ev ev;
	struct ticks k;
	bool have;
	kv_err e;

	if ((e = next_arrival(R, &cur, &have)) != KV_OK)
		return e;
	*t_first = have ? cur.arrival_ns : 0;
	*t_last = *t_first;
	R->ff_end = INT64_MIN;
	ticks_init(&k, R, *t_first);
	R->tk = &k;
	R->ffrows = (struct replica_rows){ .next = &k.next_ts, .row = ff_row,
					   .arg = R };
	R->ffrows_on = ff_rows_ok(R);
	R->take_in = ff_take_in_ok(R);
	R->ff_cur = &cur;
	R->ff_have = &have;
	R->ffarr = (struct replica_arrivals){ .peek = ff_peek,
					      .bounds = ff_arr_bounds,
					      .arg = R };
	while (sim_evq_pop(&R->q, &ev)) {
		if (tick(R, &k, ev.t)) {
			R->saturated = true;
			return KV_OK;
		}
		R->ff_tick = k.next_ts;
		(*events)++;
		*t_last = ev.t;
		if (R->o.check && sim_evq_check(&R->q) != 0)
			return rfail(R, KV_ESTATE, "--check: event queue "
				     "invariant %d broken",
				     sim_evq_check(&R->q));
		if ((e = event(R, &ev, &cur, &have)) != KV_OK)
			return e;
		*events += R->ff_steps;
		R->ff_steps = 0;
		/* a fast-forward's last step was the STEP_DONE it replaces:
		 * the run's last event when nothing comes after it */
		if (R->ff_end > *t_last)
			*t_last = R->ff_end;
		if (R->c.on && (e = client_sync(R, ev.t, &cur)) != KV_OK)
			return e;
		if (invariants_due(R, *events) && (e = invariants(R)) != KV_OK)
			return e;
	}
	if (R->o.invariants && (e = invariants(R)) != KV_OK)
		return e;
	/* The last interval, closed at the end of the run (at its last
	 * tick, when the run ends on one). */
	if (k.next_ts - k.ts_ns < *t_last)
		sample(R, *t_last, &k.lp, &k.lg,
		       (double)(*t_last - (k.next_ts - k.ts_ns)) / 1e9);
	/* the line as the run ends: the last tick can be before the last
	 * requests finish */
	if (R->tty && R->o.progress) {
		progress_line(R, *t_last - k.t_first);
		fputc('\n', R->o.diag);
	}
	return stalled(R, *t_last);
}

/*
 * The model (catalog name, or a config.json path), GPU and policy (built-in
 * name, or a plugin's path) a configuration names.  KV_OK; KV_EINVAL with
 * "KEY: what" in err and *key "model", "gpu" or "policy" ("" for another
 * failure).  *hf and *plugin are owned by the caller when set.
 */
static kv_err
resolve(const struct sim_config *cfg, const cat *ct,
	const struct cat_model **model, struct cat_model **hf,
	const struct cat_gpu **gpu, const struct kvs_policy **pol,
	void **plugin, const char **key, char *err, size_t errlen)
{
	struct cat_err ce;
	struct stat sb;
	size_t len = strlen(cfg->model);
	char why[1100];

	*key = "model";
	*model = cat_find_model(ct, cfg->model);
	if (*model == NULL && stat(cfg->model, &sb) == 0 && len > 5 &&
	    strcmp(cfg->model + len - 5, ".json") == 0) {
		if (cat_model_from_hf(hf, cfg->model, &ce) != KV_OK) {
			*key = "";
			snprintf(err, errlen, "%s", ce.msg);
			return KV_EINVAL;
		}
		*model = *hf;
	}
	if (*model == NULL) {
		snprintf(err, errlen, "model: unknown model '%s' (kvsim "
			 "catalog list)", cfg->model);
		return KV_EINVAL;
	}
	*key = "gpu";
	if ((*gpu = cat_find_gpu(ct, cfg->gpu)) == NULL) {
		snprintf(err, errlen, "gpu: unknown GPU '%s' (kvsim catalog "
			 "list)", cfg->gpu);
		return KV_EINVAL;
	}
	/* A value with a '/' is a plugin's path (sim/plugin.h), as in
	 * `kvsim replay`; dlopen takes it relative to the current
	 * directory. */
	*key = "policy";
	if (sim_policy_find(cfg->policy, pol, plugin, why, sizeof(why)) !=
	    KV_OK) {
		snprintf(err, errlen, "policy: %s", why);
		return KV_EINVAL;
	}
	*key = "";
	return KV_OK;
}

kv_err
sim_run_check_names(const struct sim_config *cfg, const char **key,
		    char *err, size_t errlen)
{
	cat *ct = NULL;
	struct cat_err ce;
	const struct cat_model *m;
	struct cat_model *hf = NULL;
	const struct cat_gpu *g;
	const struct kvs_policy *pol;
	void *plugin = NULL;
	kv_err e;

	if (cat_load(&ct, NULL, &ce) != KV_OK) {
		*key = "";
		snprintf(err, errlen, "%s", ce.msg);
		return KV_EINVAL;
	}
	e = resolve(cfg, ct, &m, &hf, &g, &pol, &plugin, key, err, errlen);
	if (plugin != NULL)
		sim_plugin_unload(plugin);
	cat_model_free(hf);
	cat_free(ct);
	return e;
}

/*
 * setup(), in the order of run.c's header: every step KV_OK, or KV_EINVAL
 * (bad input) / KV_ENOMEM with the message in the caller's buffer.
 */

/*
 * The calibration file a run uses: cost.calibration when set; else, for
 * vllm-v1 with the roofline step model, the one kvsim ships for this GPU
 * and vLLM series (DATADIR/calib-GPU-vllm-MAJOR.MINOR.yaml, docs/cost-model.md
 * §5.5), when there is one; none with cost.calibration: none.  A version
 * that does not parse is refused later, by setup_loop.
 */
static void
setup_autocal(sim_run *R, const struct kvs_policy *pol)
{
	const struct sim_config *c = &R->cfg;
	struct sim_vllm_ver v;
	char path[sizeof(R->calib_path)], why[128];

	R->calib_auto = false;
	snprintf(R->calib_path, sizeof(R->calib_path), "%s", c->calibration);
	if (c->calibration[0] != '\0' || c->calibration_none ||
	    c->step_ns > 0 || R->plugin != NULL || pol->mode != KVC_VLLM_V1 ||
	    sim_vllm_parse(c->vllm_version[0] ? c->vllm_version :
			   SIM_VLLM_DEFAULT, &v, why, sizeof(why)) != KV_OK)
		return;
	if ((size_t)snprintf(path, sizeof(path), "%s/calib-%s-vllm-%u.%u.yaml",
			     cat_datadir(), R->gpu->id, v.major, v.minor) >=
	    sizeof(path) || access(path, R_OK) != 0)
		return;
	memcpy(R->calib_path, path, sizeof(path));
	R->calib_auto = true;
}

/* The catalogs; the model, GPU and policy; the calibration file. */
static kv_err
setup_names(sim_run *R, const struct kvs_policy **pol)
{
	char why[1024];
	struct cat_err ce;
	const char *key;

	if (cat_load(&R->cat, NULL, &ce) != KV_OK)
		return rfail(R, KV_EINVAL, "%s", ce.msg);
	if (resolve(&R->cfg, R->cat, &R->model, &R->hf, &R->gpu, pol,
		    &R->plugin, &key, why, sizeof(why)) != KV_OK) {
		if (key[0] == '\0')
			return rfail(R, KV_EINVAL, "%s", why);
		snprintf(R->err, R->errlen, "%s: %s",
			 sim_config_where(&R->cfg, key), why);
		return KV_EINVAL;
	}
	setup_autocal(R, *pol);
	if (R->calib_path[0] != '\0') {
		char cerr[1400];
		kv_err e = cost_calib_load(R->calib_path, &R->calib, cerr,
					   sizeof(cerr));

		/* messages that name their own place */
		if (e == KV_ENOENT)
			snprintf(R->err, R->errlen, "%s: cost.calibration: %s",
				 R->cfg.calibration_where, cerr);
		else if (e != KV_OK)
			snprintf(R->err, R->errlen, "%s", cerr);
		if (e != KV_OK)
			return KV_EINVAL;
	}
	if (R->o.calib != NULL) {
		char cerr[512];
		kv_err e = cost_calib_overlay(&R->calib, R->o.calib, cerr,
					      sizeof(cerr));

		if (e != KV_OK)
			return rfail(R, e, "%s", cerr);
	}
	return KV_OK;
}

/*
 * The batch limits of a policy that does not run on vLLM's engine
 * (sarathi, deepspeed-fastgen, kvsim, a plugin on the exact or deepspeed
 * allocator), when the configuration leaves one to it: the policy's own
 * defaults (docs/policies.md), not vLLM's serve defaults the sizing
 * would otherwise pick.  They are asked of the policy's configure with
 * the run's max_model_len over a pool so large that no fit check refuses
 * (the replicas' setup checks the real pool); a refusal of the settings
 * themselves is the run's error.
 * The resolved limits become the configuration's, so that the sizing
 * profiles the batch the engine runs and config.yaml names it.
 */
static kv_err
policy_limits(sim_run *R, const struct kvs_policy *pol)
{
	struct sz_engine *e = &R->cfg.eng;
	struct kvs_config sc;
	struct kvc_config kc;
	char why[1024];
	uint64_t mml;

	if (pol->mode == KVC_VLLM_V0 || pol->mode == KVC_VLLM_V1 ||
	    pol->configure == NULL ||
	    (e->max_num_seqs != 0 && e->max_num_batched_tokens != 0))
		return KV_OK;
	kvs_config_init(&sc);
	snprintf(sc.policy, sizeof(sc.policy), "%s", R->cfg.policy);
	if (e->max_num_seqs != 0)
		sc.max_num_seqs = e->max_num_seqs;
	if (e->max_num_batched_tokens != 0)
		sc.max_num_batched_tokens = (int64_t)e->max_num_batched_tokens;
	if (R->cfg.chunked_prefill >= 0)
		sc.chunked_prefill = R->cfg.chunked_prefill;
	if (R->cfg.preemption_mode >= 0)
		sc.preemption = R->cfg.preemption_mode;
	if (R->cfg.scheduling_policy >= 0)
		sc.priority = R->cfg.scheduling_policy;
	if (R->cfg.num_lookahead_slots >= 0)
		sc.lookahead = R->cfg.num_lookahead_slots;
	kvc_config_default(&kc, pol->mode);
	kc.block_size = e->block_size ? e->block_size : 16;
	kc.gpu_blocks = 1u << 30;
	kc.cpu_blocks = 1u << 30;
	/* a default may follow it (the example plugin's max(mml, 2048)) */
	mml = e->max_model_len ? e->max_model_len : R->model->max_model_len;
	kc.max_model_len = mml < UINT32_MAX ? (uint32_t)mml : UINT32_MAX;
	why[0] = '\0';
	if (pol->configure(&sc, &kc, why, sizeof(why)) != KV_OK)
		return rfail(R, KV_EINVAL, "%s: engine: %s", R->cfg.source,
			     why[0] ? why : "the policy refused its settings");
	if (sc.max_num_seqs < 1 || sc.max_num_seqs > UINT32_MAX ||
	    sc.max_num_batched_tokens < 1 ||
	    sc.max_num_batched_tokens > UINT32_MAX)
		return rfail(R, KV_EINVAL, "%s: engine: policy %s resolved "
			     "no batch limits", R->cfg.source, pol->name);
	e->max_num_seqs = (uint32_t)sc.max_num_seqs;
	e->max_num_batched_tokens = (uint64_t)sc.max_num_batched_tokens;
	return KV_OK;
}

/*
 * vllm-v1's engine loop (docs/run.md "Engine loop: async scheduling"): the
 * vLLM version, SIM_VLLM_DEFAULT unless named, and async scheduling, that
 * version's default unless set.  The other policies (and plugins) keep the
 * synchronous loop and take neither key.  The resolved values replace auto
 * in the configuration, so config.yaml names what ran.
 */
static kv_err
setup_loop(sim_run *R, const struct kvs_policy *pol)
{
	struct sim_config *c = &R->cfg;
	const char *where = c->async_where[0] ? c->async_where : c->source;
	struct sim_vllm_ver v;
	char why[128];

	if (R->plugin != NULL || pol->mode != KVC_VLLM_V1) {
		if (c->async_scheduling == 1 || c->vllm_version[0] != '\0')
			return rfail(R, KV_EINVAL, "%s: engine.%s is a vllm-v1 "
				     "setting; policy %s keeps the synchronous "
				     "loop", c->vllm_version[0] != '\0' ?
				     c->source : where,
				     c->vllm_version[0] != '\0' ?
				     "vllm_version" : "async_scheduling",
				     pol->name);
		c->async_scheduling = 0;
		return KV_OK;
	}
	if (c->vllm_version[0] == '\0')
		snprintf(c->vllm_version, sizeof(c->vllm_version), "%s",
			 SIM_VLLM_DEFAULT);
	if (sim_vllm_parse(c->vllm_version, &v, why, sizeof(why)) != KV_OK)
		return rfail(R, KV_EINVAL, "%s: engine.vllm_version: %s",
			     c->source, why);
	if (c->async_scheduling == 1 && !sim_vllm_has_async(&v))
		return rfail(R, KV_EINVAL, "%s: engine.async_scheduling: vLLM "
			     "%s has no async scheduling (kvsim takes it from "
			     "0.10.0)", where, c->vllm_version);
	if (c->async_scheduling < 0)
		c->async_scheduling = sim_vllm_async_default(&v);
	return KV_OK;
}

/* vLLM's KV sizing, with the engine defaults that depend on the policy;
 * its startup lines go to opts.log. */
static kv_err
setup_sizing(sim_run *R, const struct kvs_policy *pol)
{
	char why[1024];
	kv_err e;

	/* The engine defaults that depend on the policy, as the engines set
	 * them: DeepSpeed FastGen has no prefix cache; vLLM v0 without
	 * chunked prefill batches max(max_model_len, 2048) tokens (its
	 * SchedulerConfig), which the memory profile then sees. */
	if (R->cfg.defer_same_step_state_hits && pol->mode != KVC_VLLM_V1)
		return rfail(R, KV_EINVAL, "%s: engine.defer_same_step_state_"
			     "hits is a vllm-v1 setting; policy %s runs on %s",
			     R->cfg.source, pol->name,
			     kvc_mode_name(pol->mode));
	if (pol->mode == KVC_DEEPSPEED && R->cfg.eng.enable_prefix_caching < 0)
		R->cfg.eng.enable_prefix_caching = 0;
	if ((e = policy_limits(R, pol)) != KV_OK)
		return e;
	if (pol->mode == KVC_VLLM_V0 && R->cfg.chunked_prefill != 1 &&
	    R->cfg.eng.max_num_batched_tokens == 0 &&
	    sz_compute(R->model, R->gpu, &R->cfg.eng, &R->sr, why,
		       sizeof(why)) == KV_OK)
		R->cfg.eng.max_num_batched_tokens =
			R->sr.max_model_len > 2048 ? R->sr.max_model_len : 2048;
	if (sz_compute(R->model, R->gpu, &R->cfg.eng, &R->sr, why,
		       sizeof(why)) != KV_OK)
		return rfail(R, KV_EINVAL, "%s: %s", R->cfg.source, why);
	if (R->o.log != NULL) {
		if (!R->o.quiet)
			for (size_t i = 0; i < R->sr.nlog; i++)
				fprintf(R->o.log, "%s\n", R->sr.log[i]);
		fflush(R->o.log);
	}
	if (!R->sr.fits)
		return rfail(R, KV_EINVAL, "%s", R->sr.error);
	return KV_OK;
}

static kv_err
setup_cost(sim_run *R)
{
	char why[1024];
	struct cost_config cc;
	const struct cat_model *m = R->model;
	struct cat_model qm;

	cost_config_init(&cc);
	cc.tp = R->sr.tp;
	cc.pp = R->sr.pp;
	cc.offload_bytes = (double)R->sr.offload_bytes;
	if (strcmp(R->cfg.eng.quantization, "fp8") == 0) {
		/* --quantization fp8: one byte a weight, fp8 GEMMs */
		qm = *m;
		qm.weight_bytes = 1;
		m = &qm;
	}
	cc.block_size = R->sr.block_size;
	cc.kv_dtype_bytes = R->sr.kv_dtype_bytes;
	cc.ssm_dtype_bytes = R->sr.ssm_dtype_bytes;
	cc.calib = &R->calib;	/* every term unset without a file */
	/* the vLLM policies run behind vLLM's API server */
	cc.frontend = strncmp(R->cfg.policy, "vllm-", 5) == 0;
	if (R->cfg.kv_layout >= 0)
		cc.layout = (enum cost_layout)R->cfg.kv_layout;
	if (R->cfg.copy >= 0)
		cc.copy = (enum cost_copy)R->cfg.copy;
	if (R->cfg.host_memory >= 0)
		cc.hostmem = (enum cost_hostmem)R->cfg.host_memory;
	if (R->cfg.cuda_graphs != 0)
		cc.graph_max = R->cfg.cuda_graphs > 0 ?
			(uint32_t)R->cfg.cuda_graphs :
			cost_graph_max(R->sr.max_num_seqs,
				       R->sr.max_num_batched_tokens);
	if (cost_model_init(&R->cm, m, R->gpu, &cc, why,
			    sizeof(why)) != KV_OK)
		return rfail(R, KV_EINVAL, "cost model: %s", why);
	if (R->sr.ngroup > 1)
		cost_model_groups(&R->cm, R->sr.layers_per_group,
				  R->sr.page_bytes);
	return KV_OK;
}

/* The sizing's KV cache groups as the allocator's (a plain model: none,
 * the allocator's single full-attention group). */
static kv_err
setup_groups(sim_run *R)
{
	uint32_t ng = 0;

	if (R->sr.ngroup == 0 || (R->sr.ngroup == 1 &&
				  R->sr.group[0].kind == KVC_SPEC_FULL))
		return KV_OK;
	/* No silent caps: a model with more groups than the allocator
	 * takes is refused, not cut down. */
	if (R->sr.ngroup > KVC_MAX_GROUPS)
		return rfail(R, KV_EINVAL, "model %s: %zu KV cache groups; the "
			     "allocator takes at most %d", R->model->id,
			     R->sr.ngroup, KVC_MAX_GROUPS);
	for (size_t g = 0; g < R->sr.ngroup; g++) {
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
		else
			return rfail(R, KV_EINVAL, "model %s: KV cache group "
				     "kind %d is not simulated yet",
				     R->model->id, (int)sp->kind);
		ng++;
	}
	R->kc.ngroups = ng;
	return KV_OK;
}

/* The allocator's and the scheduler's configurations. */
static kv_err
setup_configs(sim_run *R, const struct kvs_policy *pol)
{
	char why[1024];
	double cpu = 0;	/* swap_space's blocks, below 2^50 (parse_dbl's 1e6) */

	if (R->sr.num_blocks > SIM_POOL_MAX_BLOCKS)
		/* no silent truncation, no pool past the simulator's memory */
		return rfail(R, KV_EINVAL, "%llu GPU blocks: more than a run's "
			     "2^26; raise engine.block_size or set "
			     "engine.num_gpu_blocks_override",
			     (unsigned long long)R->sr.num_blocks);
	kvc_config_default(&R->kc, pol->mode);
	R->kc.block_size = R->sr.block_size;
	R->kc.gpu_blocks = (uint32_t)R->sr.num_blocks;
	R->kc.prefix_caching = R->sr.prefix_caching;
	R->kc.max_model_len = (uint32_t)R->sr.max_model_len;
	R->kc.defer_same_step_state_hits = R->cfg.defer_same_step_state_hits;
	/* vLLM v1 and DeepSpeed FastGen have no CPU swap pool; the others
	 * get swap_space GiB. */
	if (R->cm.block_bytes > 0 && pol->mode != KVC_VLLM_V1 &&
	    pol->mode != KVC_DEEPSPEED)
		cpu = R->cfg.swap_space_gib * 1073741824.0 /
		      (double)R->cm.block_bytes;
	if (cpu >= SIM_POOL_MAX_BLOCKS + 1.0)
		return rfail(R, KV_EINVAL, "engine.swap_space: %llu CPU blocks "
			     "in %.6g GiB: more than a run's 2^26; lower "
			     "engine.swap_space", (unsigned long long)cpu,
			     R->cfg.swap_space_gib);
	R->kc.cpu_blocks = (uint32_t)cpu;
	kvs_config_init(&R->sc);
	snprintf(R->sc.policy, sizeof(R->sc.policy), "%s", R->cfg.policy);
	R->sc.max_num_seqs = R->sr.max_num_seqs;
	R->sc.max_num_batched_tokens = (int64_t)R->sr.max_num_batched_tokens;
	if (R->cfg.chunked_prefill >= 0)
		R->sc.chunked_prefill = R->cfg.chunked_prefill;
	if (R->cfg.preemption_mode >= 0)
		R->sc.preemption = R->cfg.preemption_mode;
	if (R->cfg.scheduling_policy >= 0)
		R->sc.priority = R->cfg.scheduling_policy;
	if (R->cfg.num_lookahead_slots >= 0)
		R->sc.lookahead = R->cfg.num_lookahead_slots;
	if (sim_knobs_sched(&R->cfg, &R->sr, &R->sc, why, sizeof(why)))
		return rfail(R, KV_EINVAL, "%s", why);
	return setup_groups(R);
}

/* 0 or 1 as the scheduler resolved it; -1 (auto) when it left it unset,
 * as kvsim leaves its per-victim preemption. */
static int
resolved_flag(int64_t v)
{
	return v == 0 || v == 1 ? (int)v : -1;
}

/*
 * The scheduler settings the policy resolved (every replica's are the
 * same) replace `auto` in the configuration, so that config.yaml and the
 * run id name what ran, and the file run again resolves the same way.
 */
static void
resolved_settings(sim_run *R)
{
	const struct kvs_config *sc = kvs_config_of(replica_kvs(R->rp[0]));

	R->cfg.chunked_prefill = resolved_flag(sc->chunked_prefill);
	R->cfg.preemption_mode = resolved_flag(sc->preemption);
	R->cfg.scheduling_policy = resolved_flag(sc->priority);
	if (sc->lookahead >= 0 && sc->lookahead <= 1024)
		R->cfg.num_lookahead_slots = sc->lookahead;
}

/* The benchmark clients the workload asks for (struct client). */
static kv_err
setup_client(sim_run *R)
{
	const struct wl_info *in = wl_stream_info(R->ws);
	struct client *c = &R->c;
	double t = R->cfg.wl.timeout_s > 0 ? R->cfg.wl.timeout_s :
		   in->ip_timeout_s;

	c->max_conc = R->cfg.wl.max_concurrency;
	c->timeout_ns = t > 0 ? interval_ns(t) : 0;
	c->drain = in->stages_drain;
	c->gap_ns = in->stage_gap_ns;
	c->on = c->max_conc > 0 || c->timeout_ns > 0 || c->drain;
	if (R->pd == NULL)	/* P/D pools: the timeout at the engine */
		for (uint32_t i = 0; i < R->nrp; i++)
			replica_set_client_timeout(R->rp[i], c->timeout_ns);
	if (in->nwarnings > 0)
		rnote(R, "warning: %s%s\n", in->warning, in->nwarnings > 1 ?
		      " (and more such keys)" : "");
	return KV_OK;
}

/* ---- disaggregation (sim/pd.h): the pools' setup and callbacks ---- */

static uint32_t
pd_route(void *ctx, const struct wl_request *r, uint32_t base, uint32_t n,
	 enum sim_router router, uint64_t *rr)
{
	return route_in(ctx, r, base, n, router, rr);
}

static kv_err
pd_added(void *ctx, uint32_t i, int64_t now)
{
	return admit_wake(ctx, i, now);
}

static kv_err
pd_wake(void *ctx, uint32_t i, int64_t now)
{
	sim_run *R = ctx;

	return replica_busy(R->rp[i]) ? KV_OK : wake(R, i, now);
}

/*
 * LoRA (docs/lora.md): vllm-v1 only; the adapters' size from the model
 * (their slots' weights join the weights in sizing), max_loras into the
 * scheduler; the copy rate is the cost model's host link unless given
 * (lora_link, once the cost model exists).
 */
static kv_err
setup_lora(sim_run *R, const struct kvs_policy *pol)
{
	const struct sim_lora_config *c = &R->cfg.lora;
	char what[200];

	if (!c->enable)
		return KV_OK;
	if (pol->mode != KVC_VLLM_V1)
		return rfail(R, KV_EINVAL, "%s: engine.enable_lora: policy %s "
			     "does not model LoRA adapters (vllm-v1 does)",
			     R->cfg.source, pol->name);
	if (sim_lora_check(c, what, sizeof(what)) != KV_OK)
		return rfail(R, KV_EINVAL, "%s: %s", R->cfg.source, what);
	sim_lora_setup_make(c, R->model, R->cfg.eng.tensor_parallel_size, 0,
			    &R->lora);
	R->cfg.eng.lora_bytes = (uint64_t)(R->lora.bytes * R->lora.max_loras);
	R->lora_on = true;
	return KV_OK;
}

static void
lora_link(sim_run *R)
{
	if (R->lora_on && R->cfg.lora.load_gbps <= 0 && R->cm.host_bw > 0)
		R->lora.load_bps = R->cm.host_bw;
	if (R->lora_on)
		R->sc.max_loras = R->lora.max_loras;
}

/* Pool p: R's configuration becomes the pool's for the setup steps,
 * whose results are kept in R->pool[p]. */
static kv_err
setup_pool(sim_run *R, const struct kvs_policy *pol,
	   const struct sim_config *top, int p)
{
	struct run_pool *P = &R->pool[p];
	const struct sim_pd_pool *pp = &top->pd.pool[p];
	char why[1024];
	kv_err e;

	if (sim_pd_pool_config(top, p, &R->cfg, why, sizeof(why)) != KV_OK) {
		snprintf(R->err, R->errlen, "%s", why);
		return KV_EINVAL;
	}
	if ((R->gpu = cat_find_gpu(R->cat, R->cfg.gpu)) == NULL) {
		snprintf(R->err, R->errlen, "%s: disaggregation.%s.gpu: "
			 "unknown GPU '%s' (kvsim catalog list)",
			 pp->gpu_where[0] ? pp->gpu_where : top->source,
			 sim_pd_pool_name(p), R->cfg.gpu);
		return KV_EINVAL;
	}
	if ((e = setup_loop(R, pol)) != KV_OK ||
	    (e = setup_sizing(R, pol)) != KV_OK ||
	    (e = setup_cost(R)) != KV_OK ||
	    (e = setup_configs(R, pol)) != KV_OK)
		return e;
	if (R->kc.ngroups > 1)
		return rfail(R, KV_EINVAL, "%s: disaggregation: model %s has "
			     "%u KV cache groups; transfers of hybrid models "
			     "are not simulated yet", top->source,
			     R->model->id, R->kc.ngroups);
	P->cfg = R->cfg;
	P->gpu = R->gpu;
	P->sr = R->sr;
	P->cm = R->cm;
	P->sc = R->sc;
	P->kc = R->kc;
	return KV_OK;
}

/*
 * Both pools, each with its own sizing and cost model (rule P11).  R's
 * configuration stays the top-level one (config.yaml and the run id
 * name it, with the pools' keys); its sizing, cost model and settings
 * are the prefill pool's.
 */
static kv_err
setup_pd(sim_run *R, const struct kvs_policy *pol)
{
	struct sim_config top = R->cfg;	/* shallow: owns R's workload */
	kv_err e = KV_OK;

	if (R->plugin != NULL || pol->mode != KVC_VLLM_V1)
		return rfail(R, KV_EINVAL, "%s: disaggregation: needs policy "
			     "vllm-v1 (vLLM's KV connectors); policy %s has "
			     "none", top.source, pol->name);
	R->pool = calloc(2, sizeof(*R->pool));
	if (R->pool == NULL)
		return rfail(R, KV_ENOMEM, "out of memory");
	for (int p = 0; p < 2 && e == KV_OK; p++)
		e = setup_pool(R, pol, &top, p);
	R->cfg = top;
	if (e != KV_OK)
		return e;
	R->cfg.async_scheduling = R->pool[0].cfg.async_scheduling;
	memcpy(R->cfg.vllm_version, R->pool[0].cfg.vllm_version,
	       sizeof(R->cfg.vllm_version));
	R->gpu = R->pool[0].gpu;
	R->sr = R->pool[0].sr;
	R->cm = R->pool[0].cm;
	R->sc = R->pool[0].sc;
	R->kc = R->pool[0].kc;
	if (R->pool[0].sr.block_size != R->pool[1].sr.block_size)
		return rfail(R, KV_EINVAL, "%s: disaggregation: the prefill "
			     "pool's block size (%u) is not the decode pool's "
			     "(%u); kvsim moves whole blocks of one size",
			     top.source, R->pool[0].sr.block_size,
			     R->pool[1].sr.block_size);
	return KV_OK;
}

/* The P/D state over the replicas (before they exist). */
static kv_err
pd_open(sim_run *R)
{
	struct sim_pd_side side[2];
	struct sim_pd_env env = {
		.rp = R->rp, .q = &R->q, .obs = R->o.obs, .ctx = R,
		.route = pd_route, .added = pd_added, .wake = pd_wake,
	};
	struct sim_link link;
	char why[1400];
	kv_err e;

	e = sim_link_find(NULL, R->cfg.pd.link, R->cfg.pd.link_where[0] ?
			  R->cfg.pd.link_where : R->cfg.source, &link, why,
			  sizeof(why));
	if (e != KV_OK) {
		snprintf(R->err, R->errlen, "%s", why);
		return KV_EINVAL;
	}
	for (int p = 0; p < 2; p++) {
		const struct run_pool *P = &R->pool[p];

		side[p].replicas = P->cfg.replicas;
		side[p].tp = P->sr.tp;
		side[p].block_size = P->sr.block_size;
		side[p].block_bytes = P->cm.block_bytes;
		side[p].router = P->cfg.router;
	}
	R->pd = sim_pd_new(side, &link, R->cfg.pd.timeout_s, &env, why,
			   sizeof(why));
	if (R->pd == NULL)
		return rfail(R, KV_ENOMEM, "%s", why);
	return KV_OK;
}

/* Replica i of a disaggregated run takes its pool's settings. */
static void
pool_replica(sim_run *R, uint32_t i, struct replica_cfg *rc)
{
	const struct run_pool *P = &R->pool[i >= R->pool[0].cfg.replicas];

	rc->sc = &P->sc;
	rc->kc = &P->kc;
	rc->cm = &P->cm;
	rc->step_ns = P->cfg.step_ns;
	rc->async_sched = P->cfg.async_scheduling == 1;
	rc->rowh = sim_pd_row_hook(R->pd);
}

/* The replicas, and the workload stream. */
static kv_err
setup_replicas(sim_run *R, const struct kvs_policy *pol)
{
	char why[1024];
	struct wl_error we;
	kv_err e;

	lora_link(R);
	R->nrp = R->pool != NULL ? R->pool[0].cfg.replicas +
		 R->pool[1].cfg.replicas : R->cfg.replicas;
	R->rp = calloc(R->nrp, sizeof(*R->rp));
	R->wake = calloc(R->nrp, sizeof(*R->wake));
	if (R->rp == NULL || R->wake == NULL)
		return rfail(R, KV_ENOMEM, "out of memory");
	if (R->pool != NULL && (e = pd_open(R)) != KV_OK)
		return e;
	for (uint32_t i = 0; i < R->nrp; i++) {
		struct replica_cfg rc = {
			.index = i, .sc = &R->sc, .kc = &R->kc, .cm = &R->cm,
			.step_ns = R->cfg.step_ns, .policy = pol,
			.vocab = R->cfg.wl.vocab_size, .check = R->o.check,
			.fast_forward = !R->o.no_fast_forward,
			.keyed = !R->o.no_keyed,
			.obs = R->o.obs, .ct = R->ct,
			.async_sched = R->cfg.async_scheduling == 1,
			.offload = R->off_on ? &R->off : NULL,
			.fanout = R->fanout,
			.fork = R->fork,

			.lora = R->lora_on ? &R->lora : NULL,

			.spec = R->spec.on ? &R->spec.sp : NULL,
			.spec_cost = R->spec.on ? &R->spec.cost : NULL,
		};

		if (R->pool != NULL)
			pool_replica(R, i, &rc);
		R->rp[i] = replica_new(&rc, why, sizeof(why));
		if (R->rp[i] == NULL)
			return rfail(R, KV_EINVAL, "%s: engine: %s",
				     R->cfg.source, why);
	}
	if (R->pd != NULL && (e = sim_pd_attach(R->pd, why, sizeof(why))) !=
	    KV_OK)
		return rfail(R, e, "%s", why);
	resolved_settings(R);
	wl_error_clear(&we);
	if (wl_open(&R->cfg.wl, &R->ws, &we) != WL_OK) {
		char buf[1200];

		wl_error_format(&we, buf, sizeof(buf));
		return rfail(R, KV_EINVAL, "%s", buf);
	}
	if ((e = setup_client(R)) != KV_OK)
		return e;
	/* a client that counts ends would count each request's two rows
	 * (prefill and decode) */
	if (R->pd != NULL && R->c.on)
		return rfail(R, KV_EINVAL, "%s: disaggregation: benchmark "
			     "clients (workload.max_concurrency, timeout_s, "
			     "stages) are not simulated with disaggregation "
			     "yet", R->cfg.source);
	return KV_OK;
}

/*
 * engine.parallel_sampling (docs/run.md): auto and fanout fan a request
 * with n > 1 out into n child requests, as vLLM v1 (ParentRequest) and
 * the pinned vLLM v0 (ParallelSampleSequenceGroup) do.  fork, v0's
 * older sequence group forked after the prompt (vLLM up to 0.6.3), runs
 * under policy vllm-v0 only (kvs_set_n, docs/scheduler.md R110-R119),
 * and not under kvsim validate, whose writes follow one sequence a
 * request; a disaggregated run takes neither (each request runs as one
 * sequence, with a warning).
 */
static kv_err
setup_nsamp(sim_run *R, const struct kvs_policy *pol)
{
	const struct sim_nsamp_config *n = &R->cfg.nsamp;
	const char *where = n->where[0] ? n->where : R->cfg.source;

	if (n->mode == SIM_NSAMP_FORK &&
	    strcmp(pol->name, "vllm-v0") != 0)
		return rfail(R, KV_EINVAL, "%s: engine.parallel_sampling: "
			     "fork: policy %s has no forked sequence groups "
			     "(vllm-v0 has; use auto or fanout)", where,
			     pol->name);
	if (n->mode == SIM_NSAMP_FORK && (R->cfg.pd.on || R->o.obs != NULL))
		return rfail(R, KV_EINVAL, "%s: engine.parallel_sampling: "
			     "fork is not modelled %s", where, R->cfg.pd.on ?
			     "in a disaggregated run" : "by kvsim validate");
	if (n->mode == SIM_NSAMP_FORK) {
		R->fork = true;
		return KV_OK;
	}
	if (n->mode == SIM_NSAMP_FANOUT && R->cfg.pd.on)
		return rfail(R, KV_EINVAL, "%s: engine.parallel_sampling: "
			     "fanout is not modelled in a disaggregated run",
			     where);
	R->fanout = !R->cfg.pd.on;
	return KV_OK;
}

static kv_err
setup(sim_run *R)
{
	const struct kvs_policy *pol;
	kv_err e;

	if ((e = setup_names(R, &pol)) != KV_OK ||
	    (e = setup_nsamp(R, pol)) != KV_OK)
		return e;
	if (R->cfg.pd.on && R->cfg.lora.enable)
		return rfail(R, KV_EINVAL, "%s: engine.enable_lora: LoRA "
			     "adapters are not simulated with disaggregation "
			     "yet", R->cfg.source);
	if (R->cfg.pd.on) {
		if ((e = sim_spec_open(&R->spec, &R->cfg, R->cat, R->model,
				       pol->name, true, false, R->err,
				       R->errlen)) != KV_OK)
			return e;
		/* offload is refused here (sim_offload_resolve) */
		if ((e = setup_offload(R, pol)) != KV_OK ||
		    (e = setup_pd(R, pol)) != KV_OK)
			return e;
		return setup_replicas(R, pol);
	}
	if ((e = sim_spec_open(&R->spec, &R->cfg, R->cat, R->model, pol->name,
			       pol->mode == KVC_VLLM_V1, R->plugin != NULL,
			       R->err, R->errlen)) != KV_OK ||
	    (e = setup_loop(R, pol)) != KV_OK ||
	    (e = setup_lora(R, pol)) != KV_OK ||
	    (e = setup_sizing(R, pol)) != KV_OK ||
	    (e = setup_cost(R)) != KV_OK ||
	    (e = setup_configs(R, pol)) != KV_OK ||
	    (e = sim_spec_ready(&R->spec, &R->cfg, R->gpu, &R->cm, &R->sc,
				R->err, R->errlen)) != KV_OK ||
	    (e = setup_offload(R, pol)) != KV_OK)
		return e;
	return setup_replicas(R, pol);
}

static void
teardown(sim_run *R)
{
	for (uint32_t i = 0; R->rp != NULL && i < R->nrp; i++)
		replica_free(R->rp[i]);
	free(R->rp);
	free(R->wake);
	free(R->lora_seen);
	sim_pd_free(R->pd);
	R->pd = NULL;
	free(R->pool);
	R->pool = NULL;
	wl_stream_free(R->ws);
	ahead_free(R);
	client_free(&R->c);
	sim_evq_release(&R->q);
	rpt_free(R->rep);
	/* a trace still open belongs to a run that failed: its FILE is the
	 * output directory's, which may have closed it already */
	ctrace_discard(R->ct);
	R->ct = NULL;
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

/* The run id: a digest of the resolved configuration. */
static kv_err
make_run_id(sim_run *R)
{
	uint64_t h;

	if (sim_config_digest(&R->cfg, &R->sr, &h) != KV_OK)
		return rfail(R, KV_ENOMEM, "out of memory");
	snprintf(R->run_id, sizeof(R->run_id), "%012" PRIx64,
		 (uint64_t)(h & 0xffffffffffffull));
	return KV_OK;
}

kv_err
sim_run_open(sim_run **out, const struct sim_config *cfg,
	     const struct sim_run_opts *o, char *err, size_t errlen)
{
	sim_run *R = calloc(1, sizeof(*R));
	kv_err e;

	*out = R;
	if (R == NULL) {
		snprintf(err, errlen, "%s: out of memory",
			 o->prog ? o->prog : "kvsim");
		return KV_ENOMEM;
	}
	R->err = err;
	R->errlen = errlen;
	R->w0 = wall_now();
	R->o = *o;
	R->cfg = *cfg;
	/* The copy owns its own workload allocations. */
	if (wl_config_copy(&R->cfg.wl, &cfg->wl) != WL_OK) {
		memset(&R->cfg.wl, 0, sizeof(R->cfg.wl));
		return rfail(R, KV_ENOMEM, "out of memory");
	}
	cost_calib_init(&R->calib);
	sim_evq_init(&R->q);
	R->tty = o->diag != NULL && isatty(fileno(o->diag));
	if ((e = setup(R)) != KV_OK || (e = make_run_id(R)) != KV_OK)
		return e;
	R->rep = rpt_new(R->run_id, NULL, NULL);
	if (R->rep == NULL ||
	    rpt_set_client(R->rep, R->c.drain, R->c.timeout_ns > 0) != 0 ||
	    offload_report(R) != 0)
		return rfail(R, KV_ENOMEM, "out of memory");
	rpt_set_pd(R->rep, R->pd != NULL);
	rpt_set_lora(R->rep, R->lora_on);

	rpt_set_spec(R->rep, R->spec.on);
	return KV_OK;
}

uint64_t
sim_run_max_inflight(const sim_run *R)
{
	return R->c.max_inflight;
}

uint64_t
sim_run_failed(const sim_run *R)
{
	return R->c.failed;
}

const char *
sim_run_calibration(const sim_run *R, bool *chosen)
{
	*chosen = R->calib_auto;
	return R->calib_path[0] != '\0' ? R->calib_path : NULL;
}

bool
sim_run_has_stages(const sim_run *R)
{
	return R->c.drain;
}

void
sim_run_outputs(sim_run *R, FILE *requests, FILE *timeseries,
		FILE *chrome_trace)
{
	rpt_set_files(R->rep, requests, timeseries);
	if (chrome_trace != NULL && R->ct == NULL) {
		R->ct = ctrace_new(chrome_trace, R->run_id);
		for (uint32_t i = 0; i < R->nrp; i++)
			replica_set_ctrace(R->rp[i], R->ct);
	}
}

/* The pools' columns of summary.csv (rpt_pd_pools). */
static void
pd_totals(sim_run *R, struct rpt_totals *t)
{
	uint32_t np = R->pool[0].cfg.replicas;

	memset(&R->pdt, 0, sizeof(R->pdt));
	for (int p = 0; p < 2; p++) {
		struct rpt_pd_pool *o = &R->pdt.pool[p];
		uint32_t lo = p ? np : 0, hi = p ? R->nrp : np;
		double busy = 0;

		o->gpu = R->pool[p].gpu->id;
		o->replicas = hi - lo;
		o->tp = R->pool[p].sr.tp;
		for (uint32_t i = lo; i < hi; i++)
			busy += (double)replica_stats(R->rp[i])->busy_ns;
		o->utilization = t->duration_ns > 0 && hi > lo ? busy /
			((double)t->duration_ns * (double)(hi - lo)) : 0.0;
	}
	t->pd = &R->pdt;
}

static void
totals(sim_run *R, int64_t t_first, int64_t t_last, uint64_t events)
{
	struct rpt_totals *t = &R->t;
	double fsum = 0, area = 0;
	uint64_t fsteps = 0;

	memset(t, 0, sizeof(*t));
	t->run_id = R->run_id;
	t->model = R->model->id;
	t->gpu = R->gpu->id;
	t->policy = R->cfg.policy;
	t->router = sim_router_name(R->cfg.router);
	if (R->calib_path[0] != '\0') {	/* the file's name, not where */
		const char *slash = strrchr(R->calib_path, '/');

		t->calibration = slash != NULL ? slash + 1 : R->calib_path;
	}
	t->trace = R->cfg.wl_trace_default ? SIM_DEFAULT_TRACE
		   : R->cfg.wl.trace ? R->cfg.wl.trace
		   : R->cfg.wl.kind == WL_KIND_IPERF ? R->cfg.wl.ip_config
		   : "(generator)";
	{
		/* the bundled trace by its name, also when a run's own
		 * config.yaml names it by its installed path */
		char bundled[1100];

		snprintf(bundled, sizeof(bundled), "%s/%s", cat_datadir(),
			 SIM_DEFAULT_TRACE);
		if (strcmp(t->trace, bundled) == 0)
			t->trace = SIM_DEFAULT_TRACE;
	}
	t->tp = R->sr.tp;
	t->block_size = R->sr.block_size;
	t->replicas = R->nrp;
	t->seed = R->cfg.seed;
	t->requests = R->arrived;
	t->duration_ns = t_last - t_first;
	t->num_gpu_blocks = R->sr.num_blocks;
	t->kv_cache_tokens = R->sr.cache_tokens;
	t->max_concurrency = R->sr.max_concurrency;
	t->events = events;
	t->block_bytes = R->cm.block_bytes;
	t->slo_ttft_s = R->cfg.slo_ttft_s;
	t->slo_tpot_s = R->cfg.slo_tpot_s;
	t->slo_e2e_s = R->cfg.slo_e2e_s;
	for (uint32_t i = 0; i < R->nrp; i++) {
		const struct replica_stats *s = replica_stats(R->rp[i]);

		t->rejected += s->rejected;
		t->preemptions += s->preemptions;
		t->recomputed_tokens += s->recomputed_tokens;
		t->swap_out_blocks += s->swap_out_blocks;
		t->swap_in_blocks += s->swap_in_blocks;
		t->cow_blocks += s->cow_blocks;
		if (admits_prompt(R, i))
			t->prefix_hit_tokens += s->prefix_hit_tokens;
		t->stale_cached_tokens += s->stale_cached_tokens;
		if (admits_prompt(R, i))
			t->prompt_tokens_admitted += s->prompt_tokens_admitted;
		t->steps += s->steps;
		fsum += s->frag_sum;
		fsteps += s->frag_steps;
		area += s->usage_area;
		if (s->usage_max > t->kv_usage_max)
			t->kv_usage_max = s->usage_max;
		if (s->max_batch > t->max_running)
			t->max_running = s->max_batch;
	}
	if (R->pd != NULL)
		pd_totals(R, t);
	offload_totals(R, t);
	/* summary.csv's columns: only where the samples ran */
	t->parallel_requests = R->fanout || R->fork ? R->nparallel : 0;
	t->parallel_samples = R->fanout || R->fork ? R->nparallel_samples : 0;

	for (uint32_t i = 0; R->lora_on && i < R->nrp; i++) {
		const struct replica_stats *s = replica_stats(R->rp[i]);

		t->lora_loads += s->lora_loads;
		t->lora_load_ns += s->lora_load_ns;
	}
	t->lora_adapters = R->lora_adapters;

	for (uint32_t i = 0; R->spec.on && i < R->nrp; i++) {
		const struct replica_stats *rs = replica_stats(R->rp[i]);

		t->spec_drafts += rs->spec_drafts;
		t->spec_accepted += rs->spec_accepted;
		t->spec_verifies += rs->spec_verifies;
	}
	t->frag_internal_mean = fsteps ? fsum / (double)fsteps : 0.0;
	t->kv_usage_mean = t->duration_ns > 0
		? area / (double)t->duration_ns / (double)R->nrp : 0.0;
	t->sim_wall_s = wall_now() - R->w0;
}

uint64_t
sim_run_invariant_checks(const sim_run *R)
{
	return R->nchecks;
}

uint64_t
sim_run_ff_steps(const sim_run *R, uint64_t *all)
{
	*all = 0;
	for (uint32_t i = 0; i < R->nrp; i++)
		*all += replica_stats(R->rp[i])->steps;
	return R->ff_total;
}

uint64_t
sim_run_ff_taken(const sim_run *R, uint64_t *all)
{
	uint64_t n = 0;

	*all = R->arrived;
	for (uint32_t i = 0; i < R->nrp; i++)
		n += replica_taken_total(R->rp[i]);
	return n;
}

uint64_t
sim_run_ff_ext(const sim_run *R, uint64_t *caught)
{
	*caught = 0;
	for (uint32_t i = 0; i < R->nrp; i++)
		*caught += replica_ff_caught(R->rp[i]);
	return R->ff_ext;
}

uint64_t
sim_run_ff_spans(const sim_run *R, uint64_t *tails, uint64_t *admits)
{
	*tails = R->ff_tails;
	*admits = R->ff_adm;
	return R->ff_spans;
}

uint64_t
sim_run_ff_adm(const sim_run *R, uint64_t *past)
{
	*past = R->ff_adm_steps - R->ff_adm;
	return R->ff_adm_steps;
}

uint64_t
sim_run_ff_rows(const sim_run *R, uint64_t *all)
{
	*all = R->nsamples;
	return R->ff_rows;
}

uint64_t
sim_run_keyed(const sim_run *R, uint64_t *all)
{
	uint64_t n = 0;

	*all = 0;
	for (uint32_t i = 0; i < R->nrp; i++) {
		*all += replica_stats(R->rp[i])->added;
		n += replica_stats(R->rp[i])->keyed;
	}
	return n;
}

kv_err
sim_run_exec(sim_run *R, char *err, size_t errlen)
{
	int64_t t_first = 0, t_last = 0;
	uint64_t events = 0;
	kv_err e;

	R->err = err;
	R->errlen = errlen;
	rpt_set_slo(R->rep, R->cfg.slo_ttft_s, R->cfg.slo_tpot_s,
		    R->cfg.slo_e2e_s);
	if (rpt_begin(R->rep) != 0)
		return rfail(R, KV_ESTATE, "writing the report failed");
	if (R->tty && R->o.progress)
		R->nreq_total = count_requests(R);
	if ((e = loop(R, &t_first, &t_last, &events)) != KV_OK)
		return e;
	if (R->saturated)
		for (uint32_t i = 0; i < R->nrp; i++)
			replica_close(R->rp[i], t_last);
	totals(R, t_first, t_last, events);
	R->t.stopped = R->saturated;
	if (R->ct != NULL) {
		int te = ctrace_end(R->ct);

		R->ct = NULL;
		if (te != 0)
			return rfail(R, KV_ESTATE, "writing the trace failed");
	}
	return KV_OK;
}

bool
sim_run_stopped(const sim_run *R)
{
	return R->saturated;
}

const struct rpt_totals *
sim_run_totals(const sim_run *R)
{
	return &R->t;
}

uint64_t
sim_run_parallel_requests(const sim_run *R)
{
	return R->nparallel;
}

bool
sim_run_parallel_fanout(const sim_run *R)
{
	return R->fanout;
}

bool
sim_run_parallel_fork(const sim_run *R)
{
	return R->fork;
}

const struct wl_counts *
sim_run_wl_counts(const sim_run *R)
{
	return R->ws != NULL ? wl_stream_counts(R->ws) : NULL;
}

rpt *
sim_run_report(sim_run *R)
{
	return R->rep;
}

const struct sz_result *
sim_run_sizing(const sim_run *R)
{
	return &R->sr;
}

const struct cost_model *
sim_run_cost(const sim_run *R)
{
	return &R->cm;
}

const struct sim_config *
sim_run_config(const sim_run *R)
{
	return &R->cfg;
}

const char *
sim_run_model(const sim_run *R)
{
	return R->model->id;
}

const char *
sim_run_gpu(const sim_run *R)
{
	return R->gpu->id;
}

double
sim_run_gpu_usd_per_hour(const sim_run *R)
{
	return R->cfg.gpu_usd_per_hour > 0 ? R->cfg.gpu_usd_per_hour
					   : R->gpu->usd_per_hour;
}

/* The GPUs of one replica: tensor parallel x pipeline stages. */
static uint32_t
replica_gpus(const struct sz_result *sr)
{
	return sr->tp * (sr->pp > 1 ? sr->pp : 1);
}

uint32_t
sim_run_gpus(const sim_run *R)
{
	if (R->pool == NULL)
		return replica_gpus(&R->sr) * R->nrp;
	return replica_gpus(&R->pool[0].sr) * R->pool[0].cfg.replicas +
	       replica_gpus(&R->pool[1].sr) * R->pool[1].cfg.replicas;
}

double
sim_run_usd_per_hour(const sim_run *R)
{
	double sum = 0;

	if (R->pool == NULL)
		return sim_run_gpu_usd_per_hour(R) * (double)sim_run_gpus(R);
	for (int p = 0; p < 2; p++) {
		const struct run_pool *P = &R->pool[p];
		double usd = R->cfg.gpu_usd_per_hour > 0 ?
			     R->cfg.gpu_usd_per_hour : P->gpu->usd_per_hour;

		if (usd <= 0)
			return 0.0;
		sum += usd * (double)(replica_gpus(&P->sr) *
				      P->cfg.replicas);
	}
	return sum;
}

static const char *
group_kind(enum kvc_spec_kind k)
{
	switch (k) {
	case KVC_SPEC_FULL:
		return "full";
	case KVC_SPEC_SLIDING:
		return "sliding";
	case KVC_SPEC_STATE:
		return "state";
	default:
		return "other";
	}
}

int
sim_run_groups_write(const sim_run *R, FILE *f)
{
	const struct rpt_totals *t = &R->t;
	uint32_t ng = R->nrp ? replica_stats(R->rp[0])->ngroups : 0;

	fputs("run_id,group,kind,block_size,window_tokens,blocks,"
	      "kv_usage_mean,kv_usage_max\n", f);
	for (uint32_t g = 0; g < ng; g++) {
		uint64_t blocks = 0;
		double area = 0, mx = 0;
		enum kvc_spec_kind kind = g < R->sr.ngroup
			? R->sr.group[g].kind : KVC_SPEC_FULL;
		uint32_t bs = g < R->sr.ngroup ? R->sr.group[g].block_size
			      : R->sr.block_size;
		uint64_t win = g < R->sr.ngroup &&
			       kind == KVC_SPEC_SLIDING
			       ? R->sr.group[g].window : 0;

		for (uint32_t i = 0; i < R->nrp; i++) {
			const struct replica_stats *s = replica_stats(R->rp[i]);

			blocks += s->group_blocks[g];
			area += s->group_area[g];
			if (s->group_max[g] > mx)
				mx = s->group_max[g];
		}
		fprintf(f, "%s,%" PRIu32 ",%s,%" PRIu32 ",%" PRIu64 ",%" PRIu64
			",%.6f,%.6f\n", R->run_id, g, group_kind(kind), bs, win,
			blocks, t->duration_ns > 0 ? area /
			(double)t->duration_ns / (double)R->nrp : 0.0, mx);
	}
	return ferror(f) ? -1 : 0;
}

const char *
sim_run_id(const sim_run *R)
{
	return R->run_id;
}

uint32_t
sim_run_nreplicas(const sim_run *R)
{
	return R->nrp;
}

void
sim_run_close(sim_run *R)
{
	if (R == NULL)
		return;
	teardown(R);
	free(R);
}
