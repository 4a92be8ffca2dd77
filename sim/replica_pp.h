/*
 * replica_pp.h -- pipeline parallel's batches in flight in a replica
 * (docs/scheduler.md R122, docs/run.md "Scheduler and engine knobs"):
 * the P stages' timeline and the queue of batches whose output has not
 * returned (vLLM's batch queue, max_concurrent_batches = P).
 *
 * A batch whose whole-model time is dt takes dt / P on each stage (the
 * first dt % P stages 1 ns more), enters a stage when the batch before it
 * has left that stage, and returns when it leaves the last.  The replica
 * schedules batches while fewer than P are in flight, and otherwise
 * waits for the oldest one's return.  The queue
 * holds what the replica reports when the batch returns: the requests it
 * gave a token and those it finished.
 */
#ifndef SIM_REPLICA_PP_H
#define SIM_REPLICA_PP_H

#include "core/kvsched.h"

#include <stdbool.h>
#include <stdint.h>

struct rpp_batch {
	int64_t ret;		/* its output returns */
	kvs_req *req;		/* the requests it gave a token */
	uint32_t nreq, capreq;
	kvs_req *fin;		/* the requests it finished */
	uint32_t nfin, capfin;
};

struct rpp {
	uint32_t p;		/* stages, and batches in flight at most */
	int64_t *free;		/* per stage: when its last batch leaves */
	struct rpp_batch *b;	/* ring of p: b[head], ... oldest first */
	uint32_t head, n;
};

/* p >= 2 stages; NULL: out of memory. */
struct rpp *rpp_new(uint32_t p);
void rpp_free(struct rpp *q);

/* A stage's share of a batch of whole-model time dt (stage j < p). */
int64_t rpp_stage_ns(const struct rpp *q, int64_t dt, uint32_t j);

/*
 * A batch of whole-model time dt that enters the first stage at now (or
 * when it frees): the stages' times advance and its return is the
 * result.  Call it only when rpp_full() is false.
 */
int64_t rpp_time(struct rpp *q, int64_t now, int64_t dt);

/* The queue: full (p batches in flight), oldest, push, pop. */
bool rpp_full(const struct rpp *q);
struct rpp_batch *rpp_oldest(struct rpp *q);	/* NULL: empty */
/* A new batch returning at ret, its lists empty; NULL when full. */
struct rpp_batch *rpp_push(struct rpp *q, int64_t ret);
void rpp_pop(struct rpp *q);
/* Append h to a batch's list (KV_ENOMEM). */
kv_err rpp_add(kvs_req **v, uint32_t *n, uint32_t *cap, kvs_req h);

/* h is finished in a batch still in flight (its row is still to come). */
bool rpp_finishing(const struct rpp *q, kvs_req h);

/* The oldest batch's return; INT64_MAX when nothing is in flight. */
int64_t rpp_wake(const struct rpp *q);

#endif /* SIM_REPLICA_PP_H */
