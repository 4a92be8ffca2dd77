/*
 * kvs_int.h -- the scheduler's state, shared by kv_sched.c and the built-in
 * policies (kvs_*.c).  Not installed: a plugin sees only kvsched.h.
 *
 * The built-in policies read requests and queues through the inline
 * helpers below instead of the exported accessors: the running phase of a
 * step touches every running request, and a checked function call per
 * field was a measurable part of a replay.  The helpers check nothing;
 * callers pass handles they hold (a request of a queue, a live sequence).
 */
#ifndef KVS_INT_H
#define KVS_INT_H

#include "kvsched.h"
#include "kv_int.h"

struct kvs_rq {	/* one per request ever added: the bytes together */
	int32_t seq;
	uint32_t prompt, max_output, generated;
	uint32_t npreempt, recomputed;
	int32_t priority;
	uint8_t status;
	uint8_t conn;		/* KVS__C_* (a KV connector's marks) */
	bool inflight;		/* kvs_set_inflight: not scheduled */
};

/* Per request, the features few runs use (kvs_set_lora, kvs_propose,
 * kvs_set_n): a table of their own, allocated by the first of those calls
 * with a value other than 0 (before its state checks, so even one that
 * fails), so that a run without them keeps 32 bytes a request. */
struct kvs_rqx {
	uint32_t lora;		/* LoRA adapter, 0 the base model */
	uint32_t draft;		/* proposed drafts for its next step */
	uint32_t nsamp;		/* kvs_set_n: sequences of its group (0: 1) */
};

/* kvs_rq.conn: a load in flight (no kvs_load_done yet); that load failed;
 * a finished request whose blocks the connector holds (kvs_release). */
#define KVS__C_LOADING 1u
#define KVS__C_FAILED 2u
#define KVS__C_HELD 4u

/* A queue: a[0..n) in order, room for cap from a; the head's removals
 * move a forward (off entries past the allocation's start), so taking
 * the head of a long waiting queue moves nothing (kvs__qgrow). */
struct kvs_qu {
	kvs_req *a;
	uint32_t n, cap, off;
};

struct kvs {
	struct kvs_config cfg;
	const struct kvs_policy *pol;
	void *pstate;
	kvc *k;
	struct kvs_rq *rq;
	uint32_t nrq, caprq, nunfinished;
	struct kvs_rqx *rqx;		/* NULL until kvs__rqx_need */
	uint32_t caprqx;
	struct kvs_qu q[3];
	/* the step being scheduled / just completed */
	struct kvs_step step;
	bool pending;			/* scheduled, not completed */
	struct kvs_sched *sched;
	uint32_t nsched, capsched;
	kvs_req *pre, *fin;
	uint8_t *preswap;		/* capswap entries */
	uint32_t capswap;
	uint32_t npre, cappre, nfin, capfin;
	kvs_req *ign;			/* the step's ignored requests */
	uint32_t nign, capign;
	/* KV connector (kvs_set_connector), vllm-v1 only */
	struct kvs_connector conn;
	bool has_conn;
	struct kvs_crq {	/* with a connector, per request: its last
				 * load's prefix hit and external tokens */
		uint32_t local, ext;
	} *crq;
	uint32_t capcrq;
	kvs_req *load, *held;	/* the step's loads, held finishes */
	uint32_t nload, capload, nheld, capheld;
	uint32_t *cto;		/* kvs_complete: C of each sched */
	uint32_t capcto;
	struct kvc_ffreq *ff;	/* kvs_decode_run, per running request */
	uint32_t capff;
	uint64_t *ffq;		/* kvs_decode_run: events due, (step, i) */
	uint32_t capffq;
	uint64_t *fffin;	/* and the finishes, (step, i) in order */
	uint32_t capfffin;
	struct kvs_running *ffr;	/* ff_span's look at the running
					 * requests, for ff_run */
	uint32_t capffr;
	struct kvc_pair *pairs[3];
	uint32_t npairs[3], cappairs[3];
	char msg[256];
};

/* Request r (a valid handle). */
static inline struct kvs_rq *
kvs__rq(const kvs *s, kvs_req r)
{
	return &s->rq[r];
}

/* Request r's adapter, drafts and group size (0 without the table). */
static inline uint32_t
kvs__lora(const kvs *s, kvs_req r)
{
	return s->rqx != NULL ? s->rqx[r].lora : 0;
}

static inline uint32_t
kvs__draft(const kvs *s, kvs_req r)
{
	return s->rqx != NULL ? s->rqx[r].draft : 0;
}

static inline uint32_t
kvs__nsamp(const kvs *s, kvs_req r)
{
	return s->rqx != NULL ? s->rqx[r].nsamp : 0;
}

/* The table of struct kvs_rqx, zeroed for every request so far
 * (kv_sched.c); KV_ENOMEM. */
kv_err kvs__rqx_need(kvs *s);

static inline uint32_t
kvs__qlen(const kvs *s, kvs_queue q)
{
	return s->q[q].n;
}

/* Entry i < kvs__qlen(s, q) of queue q. */
static inline kvs_req
kvs__qat(const kvs *s, kvs_queue q, uint32_t i)
{
	return s->q[q].a[i];
}

/* Grow *p (elements of size sz, doubling) to hold n; KV_ENOMEM leaves it
 * as is (kv_sched.c). */
kv_err kvs__grow(void **p, uint32_t *cap, uint32_t n, size_t sz);

/* Room in queue q for n entries in all (kv_sched.c); KV_ENOMEM. */
kv_err kvs__qreserve(kvs *s, kvs_queue q, uint32_t n);

/* Append r to queue q, whose room kvs__qreserve made. */
static inline void
kvs__qpush(kvs *s, kvs_queue q, kvs_req r)
{
	s->q[q].a[s->q[q].n++] = r;
}

/*
 * KV connector, for policy vllm-v1 (kv_sched.c).  kvs__conn_match: the
 * connector's tokens past `local` for r (0 without a match hook).
 * kvs__conn_loading: r's blocks were allocated for a load of ext tokens
 * past local (kvc__v1_allocate_external): the alloc hook, status
 * KVS_WAITING_REMOTE, the step's load list.
 */
kv_err kvs__conn_match(kvs *s, kvs_req r, uint32_t local, uint32_t *ext);
kv_err kvs__conn_loading(kvs *s, kvs_req r, uint32_t local, uint32_t ext);
/* A KVS_WAITING_REMOTE request whose load is done, met at the head of the
 * waiting queue: its computed count and status (KVS_WAITING). */
kv_err kvs__conn_ready(kvs *s, kvs_req r);
/* r finished (instep: in kvs_complete) or was aborted, out of its queue:
 * request_finished, then its blocks freed unless held or still loading. */
kv_err kvs__conn_end(kvs *s, kvs_req r, bool instep);
kv_err kvs__conn_abort(kvs *s, kvs_req r);
/* kvs_complete with a connector: before, each scheduled request's C;
 * after, the computed hook for each. */
kv_err kvs__conn_before(kvs *s);
kv_err kvs__conn_after(kvs *s);
/* kvs_audit for a waiting request holding blocks, an ended one holding
 * them: 0 or an audit code. */
int kvs__conn_audit_waiting(const kvs *s, kvs_req r, char *why,
			    size_t whylen);
int kvs__conn_audit_ended(const kvs *s, kvs_req r, char *why,
			  size_t whylen);

/*
 * LoRA (kvs_lora.c).  kvs__lora_configure: max_loras checked for policy p
 * (KV_ECONFIG).  A set of adapters (vLLM's scheduled_loras; 0, the base
 * model, is never added).  kvs__lora_audit: the last step's adapters
 * within max_loras; 0 or an audit code.
 */
struct kvs_loraset {
	uint32_t *a;
	uint32_t n, cap;
};
kv_err kvs__lora_configure(const struct kvs_policy *p, struct kvs_config *c,
			   char *why, size_t whylen);
bool kvs__loraset_has(const struct kvs_loraset *set, uint32_t lora);
kv_err kvs__loraset_add(struct kvs_loraset *set, uint32_t lora);
int kvs__lora_audit(const kvs *s, char *why, size_t whylen);

/* The step record's views of the step's arrays (kv_sched.c). */
void kvs__publish(kvs *s);

/* Finish r in kvs_complete: its blocks freed, out of running. */
kv_err kvs__finish(kvs *s, kvs_req r);

/* vllm-v1's waiting phase, budget tokens left after a running phase made
 * elsewhere (the fast-forward's; kvs_v1.c). */
kv_err kvs__v1_admit(kvs *s, uint32_t budget);

/* The second half of a step whose entries verify drafts: accepted[i] of
 * sched[i].spec (kvs_spec.c). */
kv_err kvs__complete_spec(kvs *s, const uint32_t *tokens,
			  const uint32_t *accepted);

/* Set s's message; returns e (kv_sched.c). */
kv_err kvs__fail(kvs *s, kv_err e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Append the sampled token t to q's sequence and count it generated; on
 * failure s's message says why. */
static inline kv_err
kvs__out_token(kvs *s, struct kvs_rq *q, uint32_t t)
{
	kv_err e = kvc__add_token_fast(s->k, q->seq, t) ? KV_OK :
	    kvc_add_tokens(s->k, q->seq, &t, 1);

	if (e != KV_OK)
		return kvs__fail(s, e, "output token: %s", kvc_errmsg(s->k));
	q->generated++;
	return KV_OK;
}

#endif /* KVS_INT_H */
