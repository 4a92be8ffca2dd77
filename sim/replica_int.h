/*
 * replica_int.h -- a replica's records, shared by the files of sim/ that
 * make its steps (replica.c; replica_ff.c, the fast-forward of steady
 * decode).  Not an interface: replica.h is.
 */
#ifndef SIM_REPLICA_INT_H
#define SIM_REPLICA_INT_H

#include "sim/replica.h"
#include "sim/replica_nsamp.h"
#include "sim/replica_pp.h"

#include <stdbool.h>
#include <stdint.h>

/* An unfinished request's milestones. */
struct rq {
	uint64_t id, out_key;
	int64_t arrival, first_sched, first_tok, last_tok;
	int64_t admit;		/* at the engine (arrival + frontend in) */
	int64_t cl_first, cl_last;	/* tokens at the client */
	uint32_t prompt, output, gen, hit;
	uint32_t high;		/* positions ever computed: 0..high-1 */
	uint64_t recomputed;	/* tokens computed below high again */
	uint64_t swapped_blocks;
	int64_t itl_sum, itl_max;
	bool scheduled;
	uint32_t stage;
	bool failed;		/* the client gave up on it at fail_ns */
	int64_t fail_ns;
	uint64_t off_hit[KVO_MAX_TIERS];	/* tokens loaded per tier */
	int64_t off_load_ns;	/* its loads' time, start to end */
	struct rnsamp_group *grp;	/* a child of a fanned-out request,
					 * or NULL */
	uint32_t lora;		/* its LoRA adapter, 0 none */
	uint64_t spec_drafts, spec_accepted;	/* speculative decoding */
	uint32_t nsamp;		/* its forked sequences (replica_cfg.fork),
				 * 1 otherwise */
	bool gdec;		/* its entry in the step in flight is a
				 * forked group's decode */
	bool keyed;		/* added by key (replica__key): its tokens
				 * are counted, not made */
};

/* A request that arrived but is not yet the scheduler's (async
 * scheduling: the step it can join was chosen before it came). */
struct pend {
	uint64_t id, out_key;
	int64_t arrival;
	int64_t at;		/* when it reaches the engine: arrival and
				 * the API server's time (cost.h) */
	int64_t fail_ns;	/* its client left while it waited */
	uint32_t prompt, output, stage;
	int32_t priority;
	bool failed;
	uint32_t *tok;		/* its prompt token ids (owned), or NULL */
	uint64_t key;		/* replica__key's, 0: by its ids */
	struct rnsamp_group *grp;	/* as struct rq's */

	uint32_t lora;
	uint32_t nsamp;		/* its n */
	bool taken;		/* a span took it in before its arrival */
};

/* A request a span took in before it arrived (replica_span.arr): its id,
 * its arrival t, its work in the API server in (cost_frontend_in_ns) and
 * the time that gives it at the engine, at. */
struct rtaken {
	uint64_t id;
	int64_t t, in, at;
};

struct replica {
	uint32_t index;
	kvs *s;
	const struct cost_model *cm;
	int64_t step_ns;
	uint32_t vocab, block_size, max_model_len;
	uint64_t blocks_total;	/* usable GPU blocks (v1: less null) */
	bool check;
	bool busy;
	const struct sim_observer *obs;
	const struct replica_row_hook *rowh;
	ctrace *ct;
	uint32_t *start;	/* the step's first computed position per
				 * scheduled request (observer) */
	struct rq **byreq;	/* kvs_req -> record (NULL once finished) */
	size_t nbyreq, capbyreq;
	struct rq *freelist;	/* recycled records, linked through id */
	uint32_t *tok;		/* prompt token scratch */
	size_t captok;
	struct cat_mixer_seq *seq;	/* batch scratch */
	kvs_req *sreq;		/* the step's scheduled requests */
	uint32_t *stok;		/* and their output tokens */
	size_t capsched;
	uint32_t nsched;
	uint64_t outstanding;
	kvs_req *abort;		/* failed while a step was in flight */
	size_t nabort, capabort;
	struct replica_stats st;
	/* async scheduling (replica.h) */
	bool async;
	struct pend *pend;	/* arrived, not yet added: pend[phead..npend) */
	size_t phead, npend, cappend;
	int64_t sched_t;	/* when the step begun last was chosen */
	bool piped;		/* a step ended at pipe_t with the next one
				 * already chosen at next_s */
	int64_t pipe_t, next_s;
	/* the API server in front (cost.h): requests wait in pend until
	 * they reach the engine, at pend.at */
	struct cost_fifo fe;
	int64_t admit_at;	/* the last request added reaches the engine */
	int64_t *cend;		/* client end times still to come, in order
				 * (the API server's FIFO): cend[hcend..ncend) */
	size_t hcend, ncend, capcend;
	int64_t cend_armed;	/* the next one replica_client_ends told */
	/* replica_set_client_timeout: a request's client leaves at arrival
	 * + client_tmo (0: never); late[0..nlate): requests that finished
	 * in the engine but reached their client after that, failed, whose
	 * TIMEOUT is still to come */
	int64_t client_tmo;
	kvs_req *late;
	size_t nlate, caplate;
	sim_offload *off;	/* KV offload, or NULL */
	int64_t off_armed;	/* the wake replica_offload_wake told */
	/* parallel sampling fanned out (replica_cfg.fanout): per handle,
	 * its sample index, so a client's failure reaches the siblings */
	bool fanout;
	uint32_t *samp;
	size_t capsamp;
	bool fork;		/* replica_cfg.fork */
	struct cat_mixer_seq *fseq;	/* step_time's batch of them */
	size_t capfseq;

	/* LoRA (cfg->lora): the adapter caches, the step's adapters */
	bool lora_on;
	bool keyed;		/* unique prompts go by key (replica__key) */
	struct sim_lora_cache lc;
	uint32_t *lids;

	/* speculative decoding (replica_cfg.spec), or NULL */
	const struct sim_spec *spec;
	const struct cost_spec *spec_cost;
	uint32_t *spectok, *specacc;	/* kvs_complete_spec's arrays */
	size_t capspectok, capspecacc;

	/* pipeline parallel's batches in flight (replica_pp.h), or NULL:
	 * one batch at a time */
	struct rpp *pp;

	/* fast-forward (replica_ff.c): on, and its scratch */
	bool ff;
	/* a row inside a span (replica_rows): replica_state's running,
	 * used blocks and unused slots at its time */
	bool ffrow;
	uint64_t ffrow_running, ffrow_used, ffrow_frag;
	/* and its waiting requests, when a span's last step admitted
	 * requests that had not reached the scheduler at the row's time
	 * (ffrow_waitset), less those of taken[ffrow_tk0 .. ffrow_tk1)
	 * that arrive after it */
	bool ffrow_waitset;
	uint64_t ffrow_wait, ffrow_tk0, ffrow_tk1;
	/* the requests spans took in, numbered from 0 in order: tk[0 ..
	 * ntk) are numbers tkbase on; those up to tk_served had their
	 * work in the API server done, those up to tk_arrived arrived,
	 * those up to tk_adm reached the scheduler (in pend order) */
	struct rtaken *tk;
	size_t ntk, captk;
	uint64_t tkbase, tk_n, tk_served, tk_arrived, tk_adm;
	uint32_t *fftok, *fftaken, *fffreed;
	uint32_t *fftokn;	/* the tokens out at each step's end */
	int64_t *fft;
	size_t capfftok, capffk;
	struct kvs_running *ffrun;	/* the batch, in running order */
	uint32_t *ffend;	/* the steps that end requests */
	uint32_t *ffpos;	/* the batch's places in ffrun */
	size_t capffrun;
	/* a span's notes, step by step (replica_ff.c's walk): the next
	 * step j of the kn made; the tail jt (kn: none), the first step past
	 * the horizon, in flight (on), whose end and the steps after it
	 * replica_end and replica_ff_catch take at their times, the last
	 * ending at t_end; whether step j's begin notes are taken; the
	 * batch's first step seg, its n requests, the run's finishes from
	 * f on, the steps that end requests from e on (nend in ffend), and
	 * whether the last step made ended some; the slots and tokens
	 * after the step's allocations, the blocks the run took and its
	 * ends gave back, the free blocks before it; the output tokens so
	 * far (gen_tokens_done's; while the tail is in flight, ahead of it
	 * by ahead, for the rows); step j's start t, a token's time in the
	 * API server w */
	struct ff_walk {
		bool on, begun, ended;
		uint32_t j, kn, jt, seg, n, f, e, nend;
		uint64_t slots, ntok, used, back, free0, gen, ahead;
		int64_t t, w, t_end;
		/* the next step that admits requests (jadm; kn: none),
		 * ffadm[a]'s */
		uint32_t jadm, a;
	} ffw;
	/* a span's steps that admit requests, in step order (ffadm[0 ..
	 * nffadm)): the step j, chosen at sched_t; the nadm
	 * requests it scheduled, their batch entries (the step record's,
	 * the request and the cost model's entry: ffasched, ffareq and
	 * ffaseq from off on); the blocks its waiting phase took, their
	 * tables' slots and their tokens before the step's output; the
	 * requests waiting before it (the rows'; those of taken[tk0 ..
	 * tk1) among them wait from their arrival); and, when the span goes
	 * on past it, the njoin of them that go on running (in ffrun from
	 * join at), the others having ended with their first token (nend;
	 * UINT32_MAX: the span's last step, whose finishes are all the
	 * run's left) */
	struct ff_adm {
		uint32_t j, nadm, off, taken, njoin, join, nend;
		uint64_t slots, ntok, wait0, tk0, tk1;
		int64_t sched_t;
	} *ffadm;
	uint32_t nffadm, capffadm;
	struct kvs_sched *ffasched;
	kvs_req *ffareq;
	struct cat_mixer_seq *ffaseq;
	uint32_t capffa;
	struct cat_mixer_seq *ffseq;	/* an admission step's batch */
	size_t capffseq;
	uint64_t ffcaught;	/* tail steps ended at an arrival */
	/* the step-time memos of batches of decodes alone, by batch size
	 * (n mod FF_MEMOS): they hold what depends on n alone, so they
	 * serve every span (ff_time) and every such single step
	 * (replica__step_time) */
#define FF_MEMOS 64
	struct cost_decode_memo ffmemo[FF_MEMOS];
	int64_t ffs, ffgmax;	/* ff_tokens: the step's service start,
				 * the largest gap common to all */
};

/*
 * The cost model whose API server terms apply: none with a constant step
 * time (step_ns > 0 replaces the whole cost model, the frontend too).
 */
static inline const struct cost_model *
replica__fe(const replica *rp)
{
	return rp->step_ns > 0 ? NULL : rp->cm;
}

/*
 * The helpers of replica.c the fast-forward repeats step by step, each as
 * the single steps use it: the KV-usage integral closed at now with the
 * free blocks of each group free[g] (replica__usage_free; usage_mark reads
 * them from the allocator); a step's duration (replica__step_time, *cpu
 * its CPU part); async scheduling's end of a step (replica__async_dt); the
 * tokens a step gave req[0..n) (replica__note_tokens), and one
 * request's, its output count now g (replica__gain).
 */
void replica__usage_free(replica *rp, int64_t now, const uint64_t *free);
/* A span takes in request r, arriving later (replica_span.arr): held
 * until at, in, its work in the API server, done when its time comes
 * (replica__taken_serve: the next one's; KV_ESTATE when it does not give
 * at). */
kv_err replica__take(replica *rp, const struct wl_request *r, int64_t in,
		     int64_t at, char *why, size_t whylen);
kv_err replica__taken_serve(replica *rp, char *why, size_t whylen);
/* The requests held for a step chosen at t, handed to the scheduler. */
kv_err replica__admit_due(replica *rp, int64_t t, char *why, size_t whylen);
/* note_sched in two halves: st's entries, for the cost model, at
 * rp->seq[off] on (replica__sched_batch); then, from n such entries
 * (sched, and seq's for the cost model), each request's milestones and
 * the work counted (replica__sched_notes). */
void replica__sched_batch(replica *rp, const struct kvs_step *st,
			  uint32_t off);
void replica__sched_notes(replica *rp, const struct kvs_sched *sched,
			  const struct cat_mixer_seq *seq, uint32_t n);
int64_t replica__step_time(replica *rp, const struct kvs_step *st,
			   int64_t *cpu);
/* ... of the batch seq[0 .. st->nsched) (rp->seq's own: replica__step_time) */
int64_t replica__batch_time(replica *rp, const struct cat_mixer_seq *seq,
			    const struct kvs_step *st, int64_t *cpu);
/* ... of a step without swaps or copies whose batch is n decodes with
 * contexts summing to ctx, then seq[0 .. ns), without the decodes' entries
 * (cost_step_decodes_and); -1 where it needs them. */
int64_t replica__sums_time(replica *rp, uint32_t n, uint64_t ctx,
			   const struct cat_mixer_seq *seq, uint32_t ns,
			   int64_t *cpu);
/* Room for n entries in the step's batch arrays (seq, sreq, start). */
kv_err replica__sched_reserve(replica *rp, uint32_t n);

/* The end of a step's time from the cost model: at least 1 ns, *cpu the
 * model's CPU part. */
static inline int64_t
replica__step_tail(int64_t dt, const struct cost_breakdown *bd, int64_t *cpu)
{
	/* time always moves: no zero-length steps */
	if (dt < 1)
		dt = 1;
	if (bd->cpu_ns > 0)
		*cpu = bd->cpu_ns < (double)(dt - 1) ?
		    (int64_t)(bd->cpu_ns + 0.5) : dt - 1;
	return dt;
}

/* replica__step_time of n steady decodes whose contexts sum to ctx_sum
 * (cost_step_decode_memo, with the caller's zeroed memo), or -1 where
 * the batch itself is needed. */
int64_t replica__decode_time(replica *rp, struct cost_decode_memo *m,
			     uint32_t n, uint64_t ctx_sum, int64_t *cpu);
/*
 * Async scheduling: the step chosen at sched_t needs cpu ns of CPU, then
 * the GPU from when the step before it has run (now: replica_begin is
 * called at that step's end, or at sched_t when the replica was idle);
 * its output is back at the end of its GPU time, and the next step is
 * chosen once this one is launched and the one before it is back.  The
 * time to this step's end from now.
 */
static inline int64_t
replica__async_dt(replica *rp, int64_t now, int64_t dt, int64_t cpu)
{
	int64_t launch = rp->sched_t + cpu;
	int64_t start = launch > now ? launch : now;
	int64_t end = start + (dt - cpu);

	rp->piped = true;
	rp->next_s = start;
	rp->pipe_t = end;
	return end - now;
}

/* Finished request h's row for the report, its record freed (at the end
 * of the step that finished it, at now). */
kv_err replica__finish(replica *rp, kvs_req h, int64_t now, rpt *rep,
		       char *why, size_t whylen);
void replica__gain(replica *rp, struct rq *q, uint32_t g, int64_t now,
		   rpt *rep);
kv_err replica__note_tokens(replica *rp, const kvs_req *req, uint32_t n,
			    int64_t now, rpt *rep, char *why, size_t whylen);

/* replica_end of a span's tail (replica_ff.c). */
kv_err replica__ff_end(replica *rp, int64_t now, rpt *rep, char *why,
		       size_t whylen);

#endif
