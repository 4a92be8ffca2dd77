/*
 * kvsched.h -- scheduler policies over libkvcore, and the plugin ABI.
 *
 * A kvs holds the requests, the three queues (waiting, running, swapped),
 * one allocator handle (kvc) and a policy.  Each step has two halves:
 *
 *   kvs_schedule()  the policy decides the batch: which requests compute
 *                   how many tokens, which are preempted (recompute or
 *                   swap), and the block operations the executor performs
 *                   (swap-out map, swap-in map, copy-on-write pairs).
 *   kvs_complete()  the caller reports the model output: every scheduled
 *                   request whose computed tokens reach its length gains
 *                   one generated token; requests that reach their output
 *                   length or max_model_len finish and are freed.
 *
 * The scheduler is pure: no clock, no I/O, no randomness.  Time, arrival
 * order and costs belong to the caller (the simulator, or a replay script).
 *
 * Policies: "vllm-v0", "vllm-v1", "sarathi", "deepspeed-fastgen", "kvsim",
 * or the path of a plugin (a shared object exporting kvs_policy_entry(),
 * see the end of this file).  Each policy runs on an allocator mode:
 * vllm-v0 -> KVC_VLLM_V0, vllm-v1 -> KVC_VLLM_V1, deepspeed-fastgen ->
 * KVC_DEEPSPEED, the others -> KVC_EXACT (a plugin names its own).
 *
 * Normative semantics of vllm-v1 and vllm-v0 steps: docs/replay.md of the
 * design folder, rules R48-R72 (mirrored in docs/scheduler.md).
 *
 * Errors: kv_err as in kvcore.h; misuse leaves the state unchanged and
 * kvs_errmsg() says why.  All memory a step reports is owned by the kvs and
 * valid until the next call that changes it.
 */
#ifndef KVSCHED_H
#define KVSCHED_H

#include "kvcore.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KVS_ABI 4

/* "Not given": the policy picks its reference's default. */
#define KVS_UNSET (-1)

typedef struct kvs kvs;
typedef int32_t kvs_req;	/* request handle, 0.. in order of kvs_add() */

typedef enum kvs_status {
	KVS_WAITING = 0,	/* queued, no blocks (new or recompute-preempted) */
	KVS_RUNNING,		/* GPU blocks */
	KVS_SWAPPED,		/* CPU blocks (swap-preempted) */
	KVS_FINISHED,		/* reached its output length or max_model_len */
	KVS_ABORTED,
	/*
	 * Never run: vLLM v0's FINISHED_IGNORED (a prompt over the limit, or
	 * one can_allocate/can_swap_in answers NEVER for, kvs_emit_ignored),
	 * or refused by kvs_add (vLLM v1's input processing: no room for one
	 * output token).
	 */
	KVS_IGNORED,
	/*
	 * Blocks allocated for tokens a KV connector loads (vLLM's
	 * WAITING_FOR_REMOTE_KVS): in the waiting queue, not scheduled until
	 * kvs_load_done().
	 */
	KVS_WAITING_REMOTE
} kvs_status;

typedef enum kvs_queue {
	KVS_Q_WAITING = 0,
	KVS_Q_RUNNING,
	KVS_Q_SWAPPED
} kvs_queue;

/*
 * Scheduler configuration.  Integer fields are KVS_UNSET unless given; the
 * policy resolves defaults and rejects what its reference does not have
 * (e.g. `chunk_size` for vllm-v1) with KV_ECONFIG and a message.
 */
struct kvs_config {
	char policy[256];		/* name, or path to a plugin .so */
	int64_t max_num_seqs;
	int64_t max_num_batched_tokens;
	int64_t chunked_prefill;	/* 0 off, 1 on */
	int64_t long_prefill_threshold;
	int64_t preemption;		/* 0 recompute, 1 swap */
	int64_t chunk_size;		/* sarathi */
	int64_t priority;		/* 0 fcfs, 1 priority */
	int64_t lookahead;		/* slots per decode (speculative) */
	/*
	 * 0: the scheduler alone, as the reference's unit tests build it
	 * (replay scripts): no start-up check that one max_model_len request
	 * fits the pool.  Unset or 1: the engine's start-up check (kvsim
	 * run).  Read by the built-in vllm-v0 and vllm-v1 policies.
	 */
	int64_t capacity_check;
	/*
	 * LoRA adapters one step may schedule (vLLM's --max-loras): a
	 * waiting request whose adapter would be one too many is set aside
	 * (docs/scheduler.md R100-R109).  Unset: no limit.  vllm-v1 only.
	 */
	int64_t max_loras;
	/*
	 * num_speculative_tokens k (vllm-v1 only; the other policies refuse
	 * k > 0); unset or 0: no speculation.  EAGLE's lookahead is the
	 * `lookahead` field above, which the caller sets to k as vLLM sets
	 * num_lookahead_tokens for EAGLE.
	 */
	int64_t spec_tokens;
};

void kvs_config_init(struct kvs_config *c);	/* every field unset */

/*
 * A scheduled request and the tokens the step takes it through.  `cached`
 * of them the engine takes from the prefix cache and does not compute:
 * vLLM v0 schedules an admitted prompt's cached tokens with its uncached
 * ones (replay R62's c); every other built-in policy schedules computed
 * tokens only (cached 0).  `stale`: the positions just before the ones
 * the step computes that the engine takes from prefix-cache blocks without
 * their KV in them.  At admission they are cached ones -- vLLM v0 counts
 * them from a memo taken while the request waited (the blocks may have
 * been evicted since), and counts blocks it marked computed after a
 * prompt's first chunk though later chunks never ran -- and its runner
 * skips them too.  In a decode they are computed ones: the block they
 * were computed in filled up and was promoted onto a cached block of the
 * same content whose leading slots they need another request allocated
 * and has not computed, nor computes in the step
 * (promote_to_immutable_block).  vLLM v1 (cached 0): an admission's hit
 * on a block whose chunk priority scheduling withdrew, or on a Mamba
 * state the same step writes.  Either way the engine's KV for them is
 * not there.  A hazard of the engine modelled, reported, never hidden.
 */
struct kvs_sched {
	kvs_req req;
	uint32_t ntokens;
	uint32_t cached;	/* <= ntokens */
	uint32_t stale;		/* <= cached + computed tokens before */
	/* draft tokens the step verifies for this entry (included in
	 * ntokens); 0 without speculation */
	uint32_t spec;
};

/* The tokens of e whose KV a correct engine writes in the step: the ones
 * it computes and the stale ones (the last positions before them). */
static inline uint32_t
kvs_sched_written(const struct kvs_sched *e)
{
	return e->ntokens - e->cached + e->stale;
}

/*
 * One step's decisions.  sched is in the scheduler's own order; preempt in
 * preemption order (preempt_swap[i] says whether victim i was swapped);
 * finish (filled by kvs_complete) in sched order.  Pairs are device-relative
 * ids as kvcore.h's.
 */
struct kvs_step {
	uint64_t number;		/* 1, 2, ... */
	const struct kvs_sched *sched;
	uint32_t nsched;
	const kvs_req *preempt;
	const uint8_t *preempt_swap;
	uint32_t npreempt;
	const kvs_req *finish;
	uint32_t nfinish;
	const struct kvc_pair *swap_out, *swap_in, *cow;
	uint32_t nswap_out, nswap_in, ncow;
	uint32_t batch_tokens;		/* sum of sched[].ntokens */
	/* requests the step dropped without running them (KVS_IGNORED),
	 * in the order the policy met them */
	const kvs_req *ignored;
	uint32_t nignored;
	/* KV connector (kvs_set_connector): requests whose blocks were
	 * allocated for a load this step (KVS_WAITING_REMOTE), and requests
	 * that finished this step with their blocks held for the connector */
	const kvs_req *load;
	uint32_t nload;
	const kvs_req *held;
	uint32_t nheld;
};

/*
 * Create a scheduler with its own allocator.  kc is the allocator
 * configuration; its mode must be the policy's (or KVC_EXACT left as the
 * default, which is then replaced by the policy's mode).  Returns NULL with
 * *err and a message in why on a bad configuration (including setup checks
 * such as "one max_model_len request must fit").
 */
kvs *kvs_new(const struct kvs_config *sc, const struct kvc_config *kc,
	     kv_err *err, char *why, size_t whylen);
void kvs_free(kvs *s);

kvc *kvs_kv(kvs *s);			/* the allocator (borrowed) */
const struct kvs_config *kvs_config_of(const kvs *s);	/* resolved */
const char *kvs_policy_name(const kvs *s);
const char *kvs_errmsg(const kvs *s);

/*
 * Queue a request (tail of the waiting queue).  priority: lower first under
 * the priority order.  A prompt that leaves no room for one output token
 * (max_model_len tokens or more) is refused as vLLM v1's input processing
 * refuses it: the request gets a handle, status KVS_IGNORED, and is never
 * queued -- except on allocator mode vllm-v0, whose Scheduler takes any
 * prompt and ignores the ones over its limit when it meets them
 * (kvs_emit_ignored).  Errors: an empty prompt, max_output < 1.
 */
kv_err kvs_add(kvs *s, const uint32_t *tok, size_t ntok, uint32_t max_output,
	       int32_t priority, kvs_req *out);
/*
 * The same for a prompt whose ids are not given (kvc_seq_new_keyed): `key`
 * names content that no other request shares.  Its generated tokens are
 * counted, not kept.  Allocator mode vllm-v1 only.
 */
kv_err kvs_add_keyed(kvs *s, uint64_t key, size_t ntok, uint32_t max_output,
		     int32_t priority, kvs_req *out);

/* First half of a step. */
kv_err kvs_schedule(kvs *s, const struct kvs_step **out);

/*
 * Second half: apply the model output of the step just scheduled.  tokens,
 * if not NULL, gives the generated token of each sched entry (by index;
 * entries that generate nothing are ignored); NULL uses the deterministic
 * token 1000000 + position.  Fills the step's finish list.
 */
kv_err kvs_complete(kvs *s, const uint32_t *tokens,
		    const struct kvs_step **out);

/*
 * Speculative decoding (spec_tokens k > 0, docs/scheduler.md R81-R99).
 *
 * kvs_propose: the drafter's output for running request r after
 * kvs_complete: ndraft <= k draft tokens to verify in its next step
 * (vLLM's request.spec_token_ids); 0: none.
 *
 * kvs_complete_spec: kvs_complete for a step with drafts.  accepted[i] <=
 * sched[i].spec draft tokens of entry i were accepted, so the entry yields
 * accepted[i] + 1 tokens (fewer when it reaches max_output or
 * max_model_len); the computed tokens of the rejected ones are taken back
 * as vLLM does.  tokens (NULL: deterministic ids) holds for entry i
 * sched[i].spec + 1 ids starting at offset sum_{j<i}(sched[j].spec + 1).
 * accepted NULL: none accepted.  Without drafts it is kvs_complete().
 */
kv_err kvs_propose(kvs *s, kvs_req r, uint32_t ndraft);
kv_err kvs_complete_spec(kvs *s, const uint32_t *tokens,
			 const uint32_t *accepted,
			 const struct kvs_step **out);

/* kvs_schedule() then kvs_complete(s, NULL, out). */
kv_err kvs_step(kvs *s, const struct kvs_step **out);

/*
 * LoRA: r runs with adapter `lora` (0: the base model), set after kvs_add
 * and before r is first scheduled.  The adapter enters r's block hashes
 * (vLLM's extra keys: a prefix hit needs the same adapter) and counts
 * against max_loras in every step.  vllm-v1 only (KV_ENOTSUP elsewhere);
 * KV_ESTATE once r was scheduled.
 */
kv_err kvs_set_lora(kvs *s, kvs_req r, uint32_t lora);
uint32_t kvs_req_lora(const kvs *s, kvs_req r);	/* 0: base model */

/*
 * Pipeline parallel's batches in flight (docs/scheduler.md R122): while
 * r's output is in a batch that has not returned, vLLM's scheduler finds
 * no new token for it (num_new_tokens 0) and skips it.  A caller that
 * completes a batch when it is scheduled marks each request that gained
 * a token in it inflight until the batch returns; policy vllm-v1 then
 * schedules it in no step (running or waiting) and other policies ignore
 * the mark.  Unfinished requests only (KV_EINVAL otherwise).
 */
kv_err kvs_set_inflight(kvs *s, kvs_req r, bool inflight);

/*
 * Fast-forward of steady decode (docs/fastforward.md).  A steady step:
 * policy vllm-v1 without a connector, speculation or lookahead, one
 * full-attention group, no LoRA limit; every unfinished request running
 * (none swapped, none in flight, no forked group) but those waiting
 * behind a full batch (as many running as max_num_seqs, or as
 * max_num_batched_tokens), each with one token to compute (T = C + 1),
 * all of them within the token budget.  Such a step schedules each
 * running request for one token in running order, admits none, and
 * samples one token for each.
 *
 * kvs_decode_span: how many of the next steps, at most kmax, are steady
 * and end no request (each stays below max_output and max_model_len) and
 * find their blocks free (no preemption); 0 when the next is not.
 * kvs_decode_span_end: the same, but the last of them may end requests;
 * *last (may be NULL) says whether it does.
 *
 * kvs_decode_run: those k <= kvs_decode_span_end(s, k) steps made at
 * once, with what k pairs of kvs_schedule and kvs_complete would have
 * done: the same allocator calls in the same order (the same blocks
 * taken, the same prefix-cache evictions and indexed blocks), the same
 * step numbers, tok[i * k + j] the token running request i samples in
 * step j (NULL: kvs_complete's deterministic ids), and the requests the
 * last step ends finished in running order.  taken (k entries, or NULL):
 * the blocks each step took from the free queue, before the finishes.
 * The step record lists those finishes and nothing else.  KV_EINVAL,
 * nothing done, when the k steps are not steady.
 *
 * kvs_decode_ready: the engine's half of the test alone, in constant
 * time: false when no step can be steady now (every span is 0), whatever
 * the running requests' own states; true says only that a span may be.
 */
bool kvs_decode_ready(const kvs *s);
uint32_t kvs_decode_span(const kvs *s, uint32_t kmax);
uint32_t kvs_decode_span_end(const kvs *s, uint32_t kmax, bool *last);
kv_err kvs_decode_run(kvs *s, uint32_t k, const uint32_t *tok,
		      uint32_t *taken);

/*
 * kvs_decode_plan: the span search and the run in one call, for a caller
 * that picks the length from what the search found (a simulator's clock)
 * and makes the tokens then.  ends: KVS_ENDS_NONE, no step ends a request
 * (kvs_decode_span's span); KVS_ENDS_LAST, the last may
 * (kvs_decode_span_end's); KVS_ENDS_ANY, any step may, and the steps after
 * it are those of the requests left, still steady: that needs nothing
 * waiting (a finish would make room for it), and is KVS_ENDS_LAST when
 * something waits.  With k > 0 such steps ahead, plan(arg, r, n, k, last,
 * &b) is told them, whether the k-th ends requests, and the running
 * requests as they stand, r[0..n) in running order, each with the step
 * whose token ends it (ends_at, from 0; at least k when none of the k
 * does; start 0).  It returns how many of those steps to make, k at most
 * (0: none), and fills b: tok[i * kk + j] the token request i samples in
 * step j of its answer kk (kk: b's stride where set; steps past a
 * request's end are not read; NULL: kvs_complete's ids, and no `more`),
 * taken[j] the blocks step j takes from the free
 * queue before its finishes, freed[j] the blocks its finishes give back
 * (kk entries each, or NULL).  Step j's finishes are the requests whose
 * ends_at is j, finished in running order as kvs_complete finishes them;
 * the step record lists every finish of the run, step by step, and
 * nothing else.  plan must not change s or its allocator: the run is not
 * searched again.  *made: the steps made (0 when the next step is not
 * steady, or plan said 0).  KV_EINVAL, nothing done, when plan asks for
 * more than k.
 */
enum kvs_ends {
	KVS_ENDS_NONE,
	KVS_ENDS_LAST,
	KVS_ENDS_ANY
};
struct kvs_running {
	kvs_req req;
	int32_t seq;		/* its kvc sequence */
	uint32_t computed;	/* C, kvc_seq_computed */
	uint32_t tokens;	/* T = C + 1, kvc_seq_len */
	uint32_t blocks;	/* its group-0 table, kvc_table */
	uint32_t generated;	/* kvs_req_generated */
	uint32_t ends_at;	/* the step whose token ends it */
	uint32_t start;		/* the run's step it first makes (below) */
};
struct kvs_decode_bufs {
	const uint32_t *tok;
	uint32_t *taken;
	uint32_t *freed;
	/* the last step admits (NULL: it does not): at its start, before
	 * its running phase, admit(arg) adds the requests that may join
	 * it (kvs_add, kvs_add_keyed); after the running phase, vllm-v1's
	 * waiting phase schedules them as kvs_schedule would, with the
	 * budget the running requests left, and scheduled(arg) (may be
	 * NULL) sees the step record list them, their tables as the step
	 * leaves them; at the step's end, after the running requests'
	 * finishes, each admitted request whose prompt is computed samples
	 * first(arg, r) (first NULL: kvs_complete's ids) and finishes as
	 * kvs_complete finishes it.  The step record then
	 * lists the admitted requests (sched, as kvs_schedule lists them)
	 * and every finish of the run; *adm_taken (NULL: not wanted): the
	 * blocks the waiting phase took from the free queue (taken[] of the
	 * last step counts the running phase's only). */
	kv_err (*admit)(void *arg);
	kv_err (*scheduled)(void *arg);
	uint32_t (*first)(void *arg, kvs_req r);
	void *arg;
	uint32_t *adm_taken;
	/* tok's row length (0: the steps planned; set it where `more` may
	 * make the run longer) */
	uint32_t stride;
	/*
	 * The run past the step that admits (NULL: it ends there).  When
	 * the step admitted every request it scheduled whole, nothing waits
	 * and the steps after it can be steady, more(arg, r, n, k, last, b)
	 * is called as a planner is, after the step's finishes and its
	 * admitted requests' first tokens: r[0..n) the requests it admitted
	 * that go on running (those that ended with their first token are
	 * not among them), each with start the run's next step and ends_at
	 * a step of the run; k the steady steps after it, for every request
	 * running (their blocks free, and the ends as `ends` allows); last,
	 * whether the k-th ends requests.  It returns the steps to add, k at
	 * most (0: the run ends with the admission), and may set b's tok
	 * (rows of stride entries; a request that joins at start has its
	 * tokens from tok[i * stride + start] on, i counting every request
	 * of the run in running order, those that ended too) and admit
	 * again, or clear it: the run's new last step then admits, as the
	 * first did (admit, scheduled, first, and more again).  taken and
	 * freed must hold the run's new length.
	 */
	uint32_t (*more)(void *arg, const struct kvs_running *r, uint32_t n,
			 uint32_t k, bool last, struct kvs_decode_bufs *b);
};
typedef uint32_t (*kvs_decode_planner)(void *arg,
				       const struct kvs_running *r,
				       uint32_t n, uint32_t k, bool last,
				       struct kvs_decode_bufs *b);
kv_err kvs_decode_plan(kvs *s, uint32_t kmax, enum kvs_ends ends,
		       kvs_decode_planner plan, void *arg, uint32_t *made);

/*
 * Parallel sampling as vLLM v0 up to 0.6.3 runs it (docs/scheduler.md
 * R110-R119): r is one group of n sequences.  Its prompt is prefilled
 * once; when the prompt's first token is sampled, n - 1 children are
 * forked from it (kvc_fork: every block shared, the partial last one
 * copied on the first append), each decode step computes one token of
 * every sequence, and r finishes when they all have max_output tokens.
 * Set after kvs_add and before r is first scheduled; n 0 or 1: one
 * sequence.  vllm-v0 only (KV_ENOTSUP elsewhere); KV_ESTATE once r was
 * scheduled.  kvs_req_n: r's n (1 unless set).
 */
kv_err kvs_set_n(kvs *s, kvs_req r, uint32_t n);
uint32_t kvs_req_n(const kvs *s, kvs_req r);

/* Abort an unfinished request: out of its queue, blocks freed. */
kv_err kvs_abort(kvs *s, kvs_req r);

/* Requests. */
uint32_t kvs_nreqs(const kvs *s);
uint32_t kvs_nunfinished(const kvs *s);
kvs_status kvs_req_status(const kvs *s, kvs_req r);
int32_t kvs_req_seq(const kvs *s, kvs_req r);	/* its kvc sequence */
uint32_t kvs_req_prompt_len(const kvs *s, kvs_req r);
uint32_t kvs_req_max_output(const kvs *s, kvs_req r);
uint32_t kvs_req_generated(const kvs *s, kvs_req r);
int32_t kvs_req_priority(const kvs *s, kvs_req r);
uint32_t kvs_req_preemptions(const kvs *s, kvs_req r);
uint32_t kvs_req_recomputed(const kvs *s, kvs_req r); /* tokens recomputed */

/* Queues, for policies and observers. */
uint32_t kvs_queue_len(const kvs *s, kvs_queue q);
kvs_req kvs_queue_at(const kvs *s, kvs_queue q, uint32_t i);

/*
 * Internal fragmentation of the running requests, for a per-step metric:
 * over each running request, slots = (blocks in its group-0 table) *
 * block_size and unused = slots - tokens where positive.  Returns the sum
 * of unused, stores the sum of slots in *slots (may be NULL).  The same
 * as that loop over kvs_queue_at()/kvc_table()/kvc_seq_len(), in one call
 * of O(running) loads.
 */
uint64_t kvs_running_unused(const kvs *s, uint32_t block_size,
			    uint64_t *slots);

/*
 * Invariants: kvc_audit(), every unfinished request in exactly one queue
 * with the matching status, waiting requests hold no blocks and have no
 * computed tokens, running ones hold blocks, running <= max_num_seqs, and
 * the last step's batch within its token budget.  0 or the number of the
 * first broken invariant, with a message.
 */
int kvs_audit(const kvs *s, char *why, size_t whylen);

/* ---- the policy interface (built-in policies and plugins) ----------- */

/*
 * A policy decides one step by calling the helpers below on the kvs it is
 * given.  It may keep state of its own (init's *state).  schedule() must
 * leave the kvs consistent (kvs_audit() == 0) and must never let an
 * admission answer disagree with its action: an allocation it was told
 * fits must succeed.
 */
struct kvs_policy {
	uint32_t abi;		/* KVS_ABI */
	const char *name;
	kvc_mode mode;		/* the allocator mode it runs on */
	/* Resolve defaults into *c and validate it (and kc); KV_ECONFIG. */
	kv_err (*configure)(struct kvs_config *c, const struct kvc_config *kc,
			    char *why, size_t whylen);
	kv_err (*init)(kvs *s, void **state);	/* optional */
	void (*release)(void *state);		/* optional */
	kv_err (*schedule)(kvs *s, void *state);
	/*
	 * Optional: the second half of a step (model output), when the
	 * policy's reference processes it differently from the default
	 * kvs_complete_default().
	 */
	kv_err (*complete)(kvs *s, void *state, const uint32_t *tokens);
};

/* A plugin exports this symbol (C linkage). */
typedef const struct kvs_policy *(*kvs_policy_entry_fn)(void);
#define KVS_POLICY_ENTRY "kvs_policy_entry"

/* Helpers for policies.  All act within the step being scheduled. */

/* Queue surgery: insert at index i (0 = front, len = back), remove at i. */
kv_err kvs_queue_insert(kvs *s, kvs_queue q, uint32_t i, kvs_req r);
kvs_req kvs_queue_remove(kvs *s, kvs_queue q, uint32_t i);

/* Record r as scheduled for n tokens this step (status RUNNING). */
kv_err kvs_emit_sched(kvs *s, kvs_req r, uint32_t n);
/* The same, `cached` of the n from the prefix cache, `stale` positions
 * before the computed ones without their KV there (KV_EINVAL unless
 * cached <= n and stale <= cached + the request's computed tokens). */
kv_err kvs_emit_sched_cached(kvs *s, kvs_req r, uint32_t n, uint32_t cached,
			     uint32_t stale);
/*
 * Preempt r: recompute frees its blocks (status WAITING, computed tokens
 * counted as to be recomputed); swap moves them to the CPU (status
 * SWAPPED, pairs appended to the step's swap_out list; KV_ENOSPC and no
 * change when the CPU pool cannot take them).  Both record r in the step's
 * preempt list.  Queue moves are the policy's.
 */
kv_err kvs_preempt_recompute(kvs *s, kvs_req r);
kv_err kvs_preempt_swap(kvs *s, kvs_req r);
/* Append the allocator's last pairs (kvc_pairs) to a step list. */
enum kvs_pairs { KVS_SWAP_OUT, KVS_SWAP_IN, KVS_COW };
kv_err kvs_emit_pairs(kvs *s, enum kvs_pairs which);

/*
 * Ignore r (vLLM v0's FINISHED_IGNORED): r is WAITING or SWAPPED and out
 * of its queue already; its blocks are freed, its status KVS_IGNORED, and
 * the step's ignored list names it.
 */
kv_err kvs_emit_ignored(kvs *s, kvs_req r);

/* Set a request's status (the queue moves are the policy's). */
void kvs_set_status(kvs *s, kvs_req r, kvs_status st);

/* The default second half of a step (see kvs_complete()). */
kv_err kvs_complete_default(kvs *s, const uint32_t *tokens);

/* Resolve a built-in policy by name (NULL if unknown). */
const struct kvs_policy *kvs_builtin_policy(const char *name);

/* kvs_new() with a given policy (a plugin's); checks p->abi. */
kvs *kvs_new_policy(const struct kvs_policy *p, const struct kvs_config *sc,
		    const struct kvc_config *kc, kv_err *err, char *why,
		    size_t whylen);

/* The step being scheduled (for policies; valid during schedule()). */
const struct kvs_step *kvs_current_step(const kvs *s);

/*
 * The state p->init() created for s, if s runs policy p; else NULL.  Lets a
 * policy offer calls of its own beside the kvs_* API (kvspolicy.h).
 */
void *kvs_policy_state(const kvs *s, const struct kvs_policy *p);


/* ---- KV connectors (vLLM V1's KVConnectorBase_V1, scheduler side) ---- */
/*
 * A connector loads the KV of a request's prefix from elsewhere (a CPU or
 * disk tier, a prefill instance) and may keep a finished request's blocks
 * while it copies them out.  Policy vllm-v1 only (the others answer
 * KV_ENOTSUP).  Each hook may be NULL (match: no tokens; hold: never).
 *
 * match:    vLLM's get_num_new_matched_tokens: *ext tokens past `local`
 *           (the GPU prefix hit, in tokens) the connector can load for r;
 *           0 none.  The scheduler cuts ext to the request's tokens,
 *           allocates blocks for local + ext, and when the load lands
 *           leaves at least one token to compute (docs/scheduler.md R74,
 *           R75).  Not asked for a request of one token.
 * alloc:    update_state_after_alloc: the blocks are allocated; the load
 *           starts and r waits (KVS_WAITING_REMOTE) for kvs_load_done.
 * computed: at the end of kvs_complete, for every scheduled request in
 *           sched order: its computed tokens went from `from` to `to` in
 *           the step (the store hook; r may have finished in it, its
 *           finished hook having run first).
 * finished: request_finished (finished or aborted): *hold keeps r's blocks
 *           allocated until kvs_release(s, r).
 */
struct kvs_connector {
	void *ctx;
	kv_err (*match)(void *ctx, kvs *s, kvs_req r, uint32_t local,
			uint32_t *ext);
	kv_err (*alloc)(void *ctx, kvs *s, kvs_req r, uint32_t local,
			uint32_t ext);
	kv_err (*computed)(void *ctx, kvs *s, kvs_req r, uint32_t from,
			   uint32_t to);
	kv_err (*finished)(void *ctx, kvs *s, kvs_req r, bool *hold);
};
/* Attach c (copied) before the first kvs_add; NULL detaches. */
kv_err kvs_set_connector(kvs *s, const struct kvs_connector *c);
/*
 * The load of r finished (ok) or failed (its tokens are not there and get
 * computed).  r becomes ready; a later step admits it.  For r aborted
 * while loading, its blocks are freed now (unless held).  KV_ESTATE: no
 * load of r in flight.
 */
kv_err kvs_load_done(kvs *s, kvs_req r, bool ok);
/* Free the blocks a connector held for a finished request (KV_ESTATE:
 * none held). */
kv_err kvs_release(kvs *s, kvs_req r);
/* The tokens r's last load brought (0: none, or the load failed). */
uint32_t kvs_req_ext(const kvs *s, kvs_req r);
#ifdef __cplusplus
}
#endif
#endif /* KVSCHED_H */
