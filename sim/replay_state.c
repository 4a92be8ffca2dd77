/*
 * replay_state.c -- the replay lines that print scheduler and allocator
 * state without changing it: `queue` (the scheduler's queues with each
 * request's computed tokens), `state ID` (each table slot's block with its
 * reference count and flags) and `evictor` (the blocks an allocation
 * would evict, in order).  docs/replay.md, docs/scheduler.md.
 */
#include "sim/replay_int.h"

#include <stdlib.h>

/* Print the line built in b, free it; RP_OK. */
static int
rp_buf_emit(struct rp_buf *b)
{
	if (b->p != NULL)
		rp_emit(b->r, "%s", b->p);
	free(b->p);
	return RP_OK;
}

/* `queue waiting=[ID:C,...] running=[...] swapped=[...]` (C computed). */
int
rp_op_queue(struct rp *r, struct rp_line *l, const char *text)
{
	static const char *const qname[] = { "waiting", "running", "swapped" };
	struct rp_buf b = { r, NULL, 0, 0 };

	(void)text;
	if (rp_npos(r, l, 0) || rp_opts_allowed(r, l, ""))
		return RP_BAD;
	rp_buf_add(&b, "queue");
	for (int q = KVS_Q_WAITING; q <= KVS_Q_SWAPPED; q++) {
		uint32_t n = kvs_queue_len(r->s, (kvs_queue)q);

		rp_buf_add(&b, " %s=[", qname[q]);
		for (uint32_t i = 0; i < n; i++) {
			kvs_req x = kvs_queue_at(r->s, (kvs_queue)q, i);
			int32_t s = kvs_req_seq(r->s, x);

			/* a load in flight: vLLM's num_computed_tokens is 0 */
			bool none = s < 0 ||
			    kvs_req_status(r->s, x) == KVS_WAITING_REMOTE;

			rp_buf_add(&b, "%s%s:%zu", i ? "," : "", r->reqname[x],
				   none ? (size_t)0 : kvc_seq_computed(r->k, s));
		}
		rp_buf_add(&b, "]");
	}
	return rp_buf_emit(&b);
}

/* `state ID GROUP=[id/ref[c][h],-,...] ...`: each slot's block. */
int
rp_op_state(struct rp *r, struct rp_line *l, const char *text)
{
	struct rp_buf b = { r, NULL, 0, 0 };
	struct kvc_block_state st;
	bool cpu;
	int32_t s;

	(void)text;
	if (rp_table_seq(r, l, &s))
		return RP_BAD;
	cpu = s >= 0 && kvc_seq_state(r->k, s) == KVC_SWAPPED;
	rp_buf_add(&b, "state %s", l->pos[0]);
	for (uint32_t g = 0; g < kvc_ngroups(r->k); g++) {
		size_t tn = 0;
		const int32_t *id = s < 0 ? NULL : kvc_table(r->k, s, g, &tn);

		rp_buf_add(&b, " %s=[", kvc_group_name(r->k, g));
		for (size_t i = 0; i < tn; i++) {
			if (id[i] == KVC_NULL) {
				rp_buf_add(&b, "%s-", i ? "," : "");
				continue;
			}
			if (kvc_block_state(r->k, cpu, id[i], &st) != KV_OK) {
				free(b.p);
				return rp_error(r, "state: %s",
						kvc_errmsg(r->k));
			}
			rp_buf_add(&b, "%s%d/%d%s%s", i ? "," : "", id[i],
				   st.ref, st.computed ? "c" : "",
				   st.cached ? "h" : "");
		}
		rp_buf_add(&b, "]");
	}
	return rp_buf_emit(&b);
}

/* `evictor [id@time,...]` (vllm-v0) or `evictor [id,...]` (vllm-v1). */
int
rp_op_evictor(struct rp *r, struct rp_line *l, const char *text)
{
	struct rp_buf b = { r, NULL, 0, 0 };
	struct kvc_block_state *ev;
	size_t n;

	(void)text;
	if (rp_npos(r, l, 0) || rp_opts_allowed(r, l, ""))
		return RP_BAD;
	ev = rp_xrealloc(r, NULL, (r->cfg.gpu_blocks + 1) * sizeof(*ev));
	if (ev == NULL)
		return RP_FAIL;
	if (kvc_evictor(r->k, ev, r->cfg.gpu_blocks, &n) != KV_OK) {
		free(ev);
		return rp_error(r, "evictor: %s", kvc_errmsg(r->k));
	}
	rp_buf_add(&b, "evictor [");
	for (size_t i = 0; i < n; i++) {
		rp_buf_add(&b, "%s%d", i ? "," : "", ev[i].id);
		if (ev[i].time >= 0)
			rp_buf_add(&b, "@%lld", (long long)ev[i].time);
	}
	rp_buf_add(&b, "]");
	free(ev);
	return rp_buf_emit(&b);
}
