/*
 * kvs_conn.c -- the scheduler side of a KV connector (kvsched.h's struct
 * kvs_connector; vLLM V1's KVConnectorBase_V1 as its Scheduler drives it),
 * for policy vllm-v1.  docs/scheduler.md "KV connectors" has the rules;
 * the reference is vllm/v1/core/sched/scheduler.py (release 0.15.1).
 *
 * A request's connector state is kvs_rq.conn (KVS__C_*) and kvs.crq's
 * local and ext:
 *
 *   load      the waiting phase found ext > 0 tokens past the prefix hit
 *             local: blocks for local + ext are allocated without caching
 *             (kvc__v1_allocate_external), status KVS_WAITING_REMOTE,
 *             LOADING until kvs_load_done().  The request stays in the
 *             waiting queue and costs no budget and no max_num_seqs slot.
 *   ready     the waiting phase meets it at the head with the load done
 *             (kvs__conn_ready: _update_waiting_for_remote_kv): ok -> C =
 *             the tokens its blocks hold, capped at T - 1, and those blocks
 *             cached; failed -> C = local, or with no local hit its blocks
 *             are freed and it is a new request again.  Status
 *             KVS_WAITING, blocks held; admission computes from C.
 *   finish    request_finished (kvs__conn_end): the connector may hold a
 *             finished or aborted request's blocks (HELD) until
 *             kvs_release().  An aborted request whose load is in flight
 *             keeps its blocks until kvs_load_done() (finish_requests'
 *             delay_free_blocks): the load is still writing them.
 *
 * The allocator sees a loading or loaded request as RUNNING (it holds
 * blocks, C >= 1); kvs_audit checks these states here.
 *
 * Cost: O(1) per request and hook call, plus the allocator's own work; a
 * run without a connector never enters this file but for kvs_req_ext().
 */
#include "kvs_int.h"

#include <stdlib.h>
#include <string.h>

extern const struct kvs_policy kvs__v1_policy;

static bool
kvs_conn__valid(const kvs *s, kvs_req r)
{
	return r >= 0 && (uint32_t)r < s->nrq;
}

kv_err
kvs_set_connector(kvs *s, const struct kvs_connector *c)
{
	const struct kvc_config *kc = kvc_config_of(s->k);

	s->msg[0] = '\0';
	if (s->pol != &kvs__v1_policy)
		return kvs__fail(s, KV_ENOTSUP, "KV connectors need policy "
				 "vllm-v1, not %s", s->pol->name);
	if (s->nrq > 0)
		return kvs__fail(s, KV_ESTATE, "a KV connector is attached "
				 "or detached before the first request");
	if (c == NULL) {
		memset(&s->conn, 0, sizeof(s->conn));
		s->has_conn = false;
		return KV_OK;
	}
	if (kc->ngroups != 1 || kc->group[0].kind != KVC_FULL)
		return kvs__fail(s, KV_ENOTSUP, "KV connectors need one "
				 "full-attention KV cache group (vLLM's "
				 "connectors without hybrid allocator "
				 "support); this model has %u groups",
				 kc->ngroups);
	s->conn = *c;
	s->has_conn = true;
	return KV_OK;
}

uint32_t
kvs_req_ext(const kvs *s, kvs_req r)
{
	return kvs_conn__valid(s, r) ? s->crq[r].ext : 0;
}

/* Free r's blocks (if it holds any) and its sequence: r has ended. */
static kv_err
kvs_conn__free(kvs *s, kvs_req r)
{
	struct kvs_rq *q = &s->rq[r];
	kv_err e;

	if (kvc_seq_state(s->k, q->seq) == KVC_RUNNING &&
	    (e = kvc_free_seq(s->k, q->seq)) != KV_OK)
		return kvs__fail(s, e, "free: %s", kvc_errmsg(s->k));
	if (kvc_seq_release(s->k, q->seq) == KV_OK)
		q->seq = -1;
	return KV_OK;
}

/*
 * Take connector mark `mark` off r (KV_ESTATE with "request R has no
 * <what>" when it lacks it); *freeit: r has ended and nothing else keeps
 * its blocks.
 */
static kv_err
kvs_conn__unmark(kvs *s, kvs_req r, uint8_t mark, const char *what,
		 bool *freeit)
{
	struct kvs_rq *q;

	s->msg[0] = '\0';
	if (!kvs_conn__valid(s, r))
		return kvs__fail(s, KV_ENOENT, "no such request");
	q = &s->rq[r];
	if (!(q->conn & mark))
		return kvs__fail(s, KV_ESTATE, "request %d has no %s", r, what);
	q->conn &= (uint8_t)~mark;
	*freeit = q->status != KVS_WAITING_REMOTE &&
	    !(q->conn & (KVS__C_HELD | KVS__C_LOADING));
	return KV_OK;
}

kv_err
kvs_load_done(kvs *s, kvs_req r, bool ok)
{
	bool freeit = false;
	kv_err e = kvs_conn__unmark(s, r, KVS__C_LOADING, "load in flight",
				    &freeit);

	if (e != KV_OK)
		return e;
	if (s->rq[r].status == KVS_WAITING_REMOTE && !ok)
		s->rq[r].conn |= KVS__C_FAILED;
	/* aborted while loading: _update_from_kv_xfer_finished frees it */
	return freeit ? kvs_conn__free(s, r) : KV_OK;
}

kv_err
kvs_release(kvs *s, kvs_req r)
{
	bool freeit = false;
	kv_err e = kvs_conn__unmark(s, r, KVS__C_HELD,
				    "blocks held for a connector", &freeit);

	if (e != KV_OK)
		return e;
	return freeit ? kvs_conn__free(s, r) : KV_OK;
}

kv_err
kvs__conn_match(kvs *s, kvs_req r, uint32_t local, uint32_t *ext)
{
	uint32_t T = (uint32_t)kvc_seq_len(s->k, s->rq[r].seq);
	kv_err e;

	*ext = 0;
	/* one token: nothing to load, it is computed anyway */
	if (s->conn.match == NULL || T <= 1 || local >= T)
		return KV_OK;
	if ((e = s->conn.match(s->conn.ctx, s, r, local, ext)) != KV_OK) {
		*ext = 0;
		if (s->msg[0] == '\0')
			kvs__fail(s, e, "connector: match: %s",
				  kv_strerror(e));
		return e;
	}
	if (*ext > T - local)
		*ext = T - local;
	return KV_OK;
}

kv_err
kvs__conn_loading(kvs *s, kvs_req r, uint32_t local, uint32_t ext)
{
	struct kvs_rq *q = &s->rq[r];
	kv_err e;

	if (kvs__grow((void **)&s->load, &s->capload, s->nload + 1,
		      sizeof(*s->load)) != KV_OK)
		return kvs__fail(s, KV_ENOMEM, "out of memory");
	s->crq[r].local = local;
	s->crq[r].ext = ext;
	if (s->conn.alloc != NULL &&
	    (e = s->conn.alloc(s->conn.ctx, s, r, local, ext)) != KV_OK) {
		if (s->msg[0] == '\0')
			kvs__fail(s, e, "connector: alloc: %s",
				  kv_strerror(e));
		return e;
	}
	q->status = KVS_WAITING_REMOTE;
	q->conn = (uint8_t)((q->conn & ~KVS__C_FAILED) | KVS__C_LOADING);
	s->load[s->nload++] = r;
	s->step.load = s->load;
	s->step.nload = s->nload;
	return KV_OK;
}

kv_err
kvs__conn_ready(kvs *s, kvs_req r)
{
	struct kvs_rq *q = &s->rq[r];
	const struct kvc_seq *x = kvc__seq(s->k, q->seq);
	uint64_t c;
	kv_err e;

	if (q->conn & KVS__C_FAILED) {
		/* _update_requests_with_invalid_blocks cut C to the first
		 * failed block: the load's first, so C = local */
		q->conn &= ~KVS__C_FAILED;
		s->crq[r].ext = 0;
		e = s->crq[r].local > 0 ?
		    kvc__v1_set_computed(s->k, q->seq, s->crq[r].local) :
		    kvc_free_seq(s->k, q->seq);
	} else {
		c = (uint64_t)x->tab[0].n * kvc__bs(s->k, 0);
		if (c >= x->ntok)
			c = x->ntok - 1;
		e = kvc__v1_set_computed(s->k, q->seq, (uint32_t)c);
	}
	if (e != KV_OK)
		return kvs__fail(s, e, "load done: %s", kvc_errmsg(s->k));
	q->status = KVS_WAITING;
	return KV_OK;
}

kv_err
kvs__conn_end(kvs *s, kvs_req r, bool instep)
{
	struct kvs_rq *q = &s->rq[r];
	bool hold = false, blocks = kvc_seq_state(s->k, q->seq) == KVC_RUNNING;
	kv_err e;

	if (s->conn.finished != NULL &&
	    (e = s->conn.finished(s->conn.ctx, s, r, &hold)) != KV_OK) {
		if (s->msg[0] == '\0')
			kvs__fail(s, e, "connector: finished: %s",
				  kv_strerror(e));
		return e;
	}
	if (hold && blocks) {
		if (instep) {
			if (kvs__grow((void **)&s->held, &s->capheld,
				      s->nheld + 1, sizeof(*s->held)) != KV_OK)
				return kvs__fail(s, KV_ENOMEM, "out of memory");
			s->held[s->nheld++] = r;
			s->step.held = s->held;
			s->step.nheld = s->nheld;
		}
		q->conn |= KVS__C_HELD;
	}
	if (q->conn & (KVS__C_HELD | KVS__C_LOADING))
		return KV_OK;
	return kvs_conn__free(s, r);
}

kv_err
kvs__conn_abort(kvs *s, kvs_req r)
{
	struct kvs_rq *q = &s->rq[r];
	kvs_queue qu = q->status == KVS_RUNNING ? KVS_Q_RUNNING :
	    q->status == KVS_SWAPPED ? KVS_Q_SWAPPED : KVS_Q_WAITING;

	for (uint32_t i = 0; i < s->q[qu].n; i++)
		if (s->q[qu].a[i] == r) {
			kvs_queue_remove(s, qu, i);
			break;
		}
	/* a landed load not yet admitted is no longer in flight */
	q->conn &= ~KVS__C_FAILED;
	q->status = KVS_ABORTED;
	s->nunfinished--;
	return kvs__conn_end(s, r, false);
}

kv_err
kvs__conn_before(kvs *s)
{
	if (s->conn.computed == NULL)
		return KV_OK;
	if (kvs__grow((void **)&s->cto, &s->capcto, s->nsched,
		      sizeof(*s->cto)) != KV_OK)
		return kvs__fail(s, KV_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < s->nsched; i++)
		s->cto[i] = (uint32_t)kvc_seq_computed(s->k,
					s->rq[s->sched[i].req].seq);
	return KV_OK;
}

kv_err
kvs__conn_after(kvs *s)
{
	kv_err e;

	if (s->conn.computed == NULL)
		return KV_OK;
	for (uint32_t i = 0; i < s->nsched; i++) {
		uint32_t to = s->cto[i], n = s->sched[i].ntokens;

		if ((e = s->conn.computed(s->conn.ctx, s, s->sched[i].req,
					  to - n, to)) != KV_OK) {
			if (s->msg[0] == '\0')
				kvs__fail(s, e, "connector: computed: %s",
					  kv_strerror(e));
			return e;
		}
	}
	return KV_OK;
}

int
kvs__conn_audit_waiting(const kvs *s, kvs_req r, char *why, size_t whylen)
{
	const struct kvs_rq *q = &s->rq[r];
	size_t C = kvc_seq_computed(s->k, q->seq);
	bool bad;

	if (kvc_seq_state(s->k, q->seq) != KVC_RUNNING || C == 0) {
		kvc__failbuf(why, whylen, KV_EINVAL, "request %d (status %d) "
			     "waits for a load without blocks", r, q->status);
		return 208;
	}
	if (q->status == KVS_WAITING_REMOTE)
		bad = s->crq[r].ext == 0 || (q->conn & KVS__C_HELD) != 0 ||
		    (q->conn & (KVS__C_LOADING | KVS__C_FAILED)) ==
		    (KVS__C_LOADING | KVS__C_FAILED);
	else
		bad = q->status != KVS_WAITING || q->conn != 0 ||
		    C >= kvc_seq_len(s->k, q->seq);
	if (bad) {
		kvc__failbuf(why, whylen, KV_EINVAL, "request %d: status %d, "
			     "connector marks %u, %zu computed of %zu", r,
			     q->status, q->conn, C,
			     kvc_seq_len(s->k, q->seq));
		return 209;
	}
	return 0;
}

int
kvs__conn_audit_ended(const kvs *s, kvs_req r, char *why, size_t whylen)
{
	const struct kvs_rq *q = &s->rq[r];

	if (kvc_seq_state(s->k, q->seq) != KVC_RUNNING ||
	    ((q->conn & KVS__C_LOADING) != 0 && q->status != KVS_ABORTED) ||
	    (q->conn & KVS__C_FAILED) != 0) {
		kvc__failbuf(why, whylen, KV_EINVAL, "ended request %d "
			     "(status %d, connector marks %u) holds no "
			     "blocks or holds them wrongly", r, q->status,
			     q->conn);
		return 210;
	}
	return 0;
}
