/*
 * engine.h -- the discrete-event queue of a simulation run.
 *
 * Simulated time is int64 nanoseconds.  Events are ordered by (time, kind,
 * insertion number): at one instant the steps that end come first, then
 * the arrivals, then the wake-ups (so an arrival is routed on the state
 * after every step that ends with it, and a replica woken at that instant
 * sees every request that arrived in it), whatever order they were pushed
 * in; the insertion number is the queue's own counter, so events of one
 * kind at one time come out in the order they were pushed (FIFO), whatever
 * the heap's layout.  This is what makes a run deterministic.
 *
 * Invariant (sim_evq_check): the heap property on (t, kind, seq) holds, and the
 * clock (the time of the last event popped) never decreases: pushing an
 * event before the clock is misuse (KV_EINVAL); popping asserts it.
 *
 * Cost: push and pop O(log n); the queue holds only pending events (one
 * arrival per workload stream and at most two per replica in a run), so n
 * stays small and memory does not grow with the trace.
 *
 * Alternatives rejected: a calendar queue (faster for huge n, but n is
 * tiny here); double-precision times (ties and rounding make runs depend on
 * summation order).
 */
#ifndef SIM_ENGINE_H
#define SIM_ENGINE_H

#include "core/kvcore.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sim_ev_kind {	/* in the order of events at one instant */
	SIM_EV_STEP_DONE = 0,	/* a replica's step ends (arg: replica) */
	SIM_EV_ARRIVAL,		/* a request arrives (arg: unused) */
	SIM_EV_WAKE,		/* a replica may start a step (arg: replica) */
	SIM_EV_USER		/* first kind free for tests and extensions */
};

struct sim_ev {
	int64_t t;		/* ns */
	uint64_t seq;		/* insertion number, set by sim_evq_push */
	uint32_t kind;		/* enum sim_ev_kind */
	uint32_t arg;
};

/* Caller storage; sim_evq_init / sim_evq_release. */
struct sim_evq {
	struct sim_ev *h;	/* binary min-heap on (t, seq) */
	size_t n, cap;
	uint64_t next_seq;	/* insertion counter */
	int64_t now;		/* time of the last event popped */
	uint64_t popped;	/* events processed */
};

void sim_evq_init(struct sim_evq *q);
void sim_evq_release(struct sim_evq *q);

/*
 * Queue an event at time t >= now.  KV_EINVAL (nothing queued) for t <
 * now; KV_ENOMEM.  The event's seq is returned in *seq if not NULL.
 */
kv_err sim_evq_push(struct sim_evq *q, int64_t t, uint32_t kind,
		    uint32_t arg, uint64_t *seq);

/* Remove the earliest event into *ev and advance the clock; false if
 * empty. */
bool sim_evq_pop(struct sim_evq *q, struct sim_ev *ev);

/* The earliest event without removing it (NULL if empty). */
const struct sim_ev *sim_evq_peek(const struct sim_evq *q);

static inline size_t
sim_evq_len(const struct sim_evq *q)
{
	return q->n;
}

/*
 * Invariants: 0, or 1 heap order broken, 2 an event before the clock,
 * 3 a seq not below the counter.
 */
int sim_evq_check(const struct sim_evq *q);

#endif
