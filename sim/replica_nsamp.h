/*
 * replica_nsamp.h -- parallel sampling (n > 1) fanned out in a replica:
 * the group of child requests one workload request becomes, and the one
 * requests.csv row their rows merge into (docs/metrics.md).
 */
#ifndef SIM_REPLICA_NSAMP_H
#define SIM_REPLICA_NSAMP_H

#include "reports/rpt.h"

#include <stdbool.h>
#include <stdint.h>

struct rnsamp_group {
	uint32_t n;		/* children */
	uint32_t left;		/* children not yet ended */
	uint32_t nrows;		/* children merged into row */
	bool failed;		/* its client left (replica_fail) */
	struct rpt_req row;	/* the merged row */
};

/* A group of n children (NULL: out of memory). */
struct rnsamp_group *rnsamp_new(uint32_t n);

/*
 * A child of g ended without a row (dropped by the scheduler, or the
 * replica freed): true when it was the last one, g then freed.  NULL:
 * false.
 */
bool rnsamp_put(struct rnsamp_group *g);

/*
 * Merge child row o into g's row: the first token of any child, the
 * last child's finish, the tokens, preemptions, recomputation and swaps
 * of all children, the largest prefix hit.  The row is failed when any
 * child's is.
 */
void rnsamp_merge(struct rnsamp_group *g, const struct rpt_req *o);

#endif /* SIM_REPLICA_NSAMP_H */
