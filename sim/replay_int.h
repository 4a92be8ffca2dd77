/*
 * replay_int.h -- what sim/replay.c shares with sim/replay_state.c: the
 * interpreter's state, a parsed line, the output helpers, and the
 * printing operations (queue, state, evictor) kept in their own file.
 */
#ifndef SIM_REPLAY_INT_H
#define SIM_REPLAY_INT_H

#include "core/kvcore.h"
#include "core/kvsched.h"
#include "sim/replay.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RP_MAXWORDS 64
#define RP_MAXTOKENS (1u << 26)
/* Most blocks a pool of a script may have: room for any test of the
 * semantics, and a bound on the memory a script can ask for. */
#define RP_MAXBLOCKS (1u << 22)

struct rp_id {
	char *name;
	int32_t seq;		/* RP_PENDING: waits in its group (below) */
	int32_t root;		/* RP_PENDING: the group's first sequence */
};

/* A sequence declared with `seq ID group=ROOT`: forked at `allocate ROOT`. */
#define RP_PENDING (-2)

struct rp {
	const char *file;
	FILE *out, *err;
	const struct replay_opts *o;
	long line;
	/* setup */
	struct kvc_config cfg;
	bool seen[32];
	bool have_gpu, have_mode;
	kvc *k;			/* owned, or kvs_kv(s) with a policy */
	/* scheduler (docs/scheduler.md): set up by `policy` */
	struct kvs_config scfg;
	const struct kvs_policy *pol;
	void *plugin;		/* sim_policy_find() handle */
	kvs *s;
	const char **reqname;	/* by kvs_req, borrowed from ids */
	uint32_t capreqname;
	/* sequence names: open addressing, never deleted (R12) */
	struct rp_id *ids;
	uint32_t idmask, nids;
	/* token scratch */
	uint32_t *tok;
	size_t ntok, captok;
	/* last output line, for `expect` */
	char *last;
	size_t lastcap;
	bool have_last;
	/* --check history: the operation lines so far */
	char **hist;
	long *histline;
	size_t nhist, caphist;
	/* sequences declared with group=, in order (names) */
	char **pend;
	size_t npend;
	/* the v0 LRU clock: the line number until a `time T` line */
	bool have_clock;
	int64_t clock;
	/* memory ran out: nothing more is written, replay_run stops at the
	 * end of the line and returns KV_ENOMEM */
	bool nomem;
	uint64_t nsteps;	/* scheduler steps made (opts' max_steps) */
	/* `connector scripted` (replay_conn.c), or NULL */
	struct rp_conn *conn;
	/* `offload ...` (replay_offload.c), or NULL */
	struct rp_off *off;
	/* speculative decoding lines (replay_spec.c), or NULL */
	struct rp_spec *spec;
};

enum { RP_OK = REPLAY_OK, RP_FAIL = REPLAY_FAIL, RP_BAD = REPLAY_BAD };

struct rp_line {
	char *kw;
	char *pos[RP_MAXWORDS];
	int npos;
	char *key[RP_MAXWORDS], *val[RP_MAXWORDS];
	int nopt;
	char *rest;		/* text after the keyword, for `expect` */
};

struct rp_buf {
	struct rp *r;
	char *p;
	size_t len, cap;
};

void *rp_xrealloc(struct rp *r, void *p, size_t n);
int rp_error(struct rp *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void rp_emit(struct rp *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void rp_buf_add(struct rp_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int rp_npos(struct rp *r, const struct rp_line *l, int n);
int rp_opts_allowed(struct rp *r, const struct rp_line *l,
		    const char *allowed);
int rp_seq(struct rp *r, const struct rp_line *l, int i, int32_t *s);
int rp_req(struct rp *r, const struct rp_line *l, int i, kvs_req *out);
int rp_table_seq(struct rp *r, const struct rp_line *l, int32_t *s);

/* replay_state.c: `queue`, `state ID`, `evictor`. */
int rp_op_queue(struct rp *r, struct rp_line *l, const char *text);
int rp_op_state(struct rp *r, struct rp_line *l, const char *text);
int rp_op_evictor(struct rp *r, struct rp_line *l, const char *text);

void rp_hist_push(struct rp *r, const char *text);
int rp_u32(struct rp *r, const char *what, const char *s, uint32_t *out);
const char *rp_opt(const struct rp_line *l, const char *key);

/* replay_conn.c: `connector scripted` and its lines. */
int rp_conn_setup(struct rp *r, struct rp_line *l);
int rp_conn_attach(struct rp *r);
void rp_conn_free(struct rp *r);
int rp_conn_external(struct rp *r, struct rp_line *l, const char *text);
int rp_conn_hold(struct rp *r, struct rp_line *l, const char *text);
int rp_conn_loaded(struct rp *r, struct rp_line *l, const char *text);
int rp_conn_release(struct rp *r, struct rp_line *l, const char *text);

/* replay_offload.c: `offload ...` and its lines (docs/offload.md). */
int rp_off_setup(struct rp *r, struct rp_line *l);
int rp_off_attach(struct rp *r);
void rp_off_free(struct rp *r);
void rp_off_step(struct rp *r, struct rp_buf *b);
int rp_off_settle(struct rp *r);
int rp_off_xfer(struct rp *r, struct rp_line *l, const char *text);
int rp_off_xfer_done(struct rp *r, struct rp_line *l, const char *text);
int rp_off_state(struct rp *r, struct rp_line *l, const char *text);

/* replay_spec.c: `spec_tokens`, `propose`, `accept`, and the steps that
 * verify drafts (docs/scheduler.md R81-R99). */
int rp_spec_setup(struct rp *r, struct rp_line *l);
void rp_spec_free(struct rp *r);
int rp_spec_propose(struct rp *r, struct rp_line *l, const char *text);
int rp_spec_accept(struct rp *r, struct rp_line *l, const char *text);
int rp_spec_complete(struct rp *r, const struct kvs_step **out);
void rp_spec_step(struct rp *r, struct rp_buf *b, const struct kvs_step *st);

#endif /* SIM_REPLAY_INT_H */
