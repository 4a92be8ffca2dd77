/*
 * replay_conn.c -- a scripted KV connector for `policy vllm-v1` replay
 * scripts (docs/scheduler.md, "KV connectors"): the script says which
 * tokens the connector can load for a request, which finished requests it
 * keeps the blocks of, and when each load ends or held blocks go back.
 *
 *   connector scripted        setup: attach it (policy vllm-v1 only)
 *   external ID n=N           the next match for ID offers N tokens past
 *                             its prefix hit (0: none); a load that starts
 *                             uses the offer up; prints nothing
 *   hold ID                   when ID finishes or is aborted, the
 *                             connector keeps its blocks; prints nothing
 *   loaded ID [fail]          ID's load ended (failed): kvs_load_done;
 *                             prints "loaded ID ok", or "loaded ID fail"
 *                             when ID has no load in flight
 *   release ID                kvs_release: "release ID ok" or "... fail"
 */
#include "sim/replay_int.h"

#include <stdlib.h>
#include <string.h>

struct rp_conn {
	uint32_t *offer;	/* by kvs_req: tokens the next match offers */
	uint8_t *hold;		/* by kvs_req: keep its blocks at the end */
	uint32_t cap;
};

static kv_err
rp_conn_match(void *ctx, kvs *s, kvs_req q, uint32_t local, uint32_t *ext)
{
	const struct rp_conn *c = ctx;

	(void)s;
	(void)local;
	*ext = (uint32_t)q < c->cap ? c->offer[q] : 0;
	return KV_OK;
}

static kv_err
rp_conn_alloc(void *ctx, kvs *s, kvs_req q, uint32_t local, uint32_t ext)
{
	struct rp_conn *c = ctx;

	(void)s;
	(void)local;
	(void)ext;
	if ((uint32_t)q < c->cap)
		c->offer[q] = 0;
	return KV_OK;
}

static kv_err
rp_conn_finished(void *ctx, kvs *s, kvs_req q, bool *hold)
{
	const struct rp_conn *c = ctx;

	(void)s;
	*hold = (uint32_t)q < c->cap && c->hold[q];
	return KV_OK;
}

int
rp_conn_setup(struct rp *r, struct rp_line *l)
{
	if (strcmp(l->pos[0], "scripted") != 0)
		return rp_error(r, "connector: expected scripted, got '%s'",
				l->pos[0]);
	if (r->conn == NULL &&
	    (r->conn = rp_xrealloc(r, NULL, sizeof(*r->conn))) == NULL)
		return RP_BAD;
	memset(r->conn, 0, sizeof(*r->conn));
	return RP_OK;
}

int
rp_conn_attach(struct rp *r)
{
	struct kvs_connector c = {
		.ctx = r->conn,
		.match = rp_conn_match,
		.alloc = rp_conn_alloc,
		.finished = rp_conn_finished,
	};
	kv_err e = kvs_set_connector(r->s, &c);

	if (e != KV_OK)
		return rp_error(r, "connector: %s", kvs_errmsg(r->s));
	return RP_OK;
}

void
rp_conn_free(struct rp *r)
{
	if (r->conn == NULL)
		return;
	free(r->conn->offer);
	free(r->conn->hold);
	free(r->conn);
	r->conn = NULL;
}

/* The request named by positional 0, with room for it in the arrays. */
static int
rp_conn_req(struct rp *r, struct rp_line *l, int npos, const char *opts,
	    kvs_req *q)
{
	struct rp_conn *c = r->conn;
	uint32_t *o;
	uint8_t *h;
	uint32_t cap;

	if (c == NULL)
		return rp_error(r, "%s needs a `connector scripted` line",
				l->kw);
	if (l->npos < 1 || l->npos > npos)
		return rp_error(r, "%s: expected a request id%s", l->kw,
				npos > 1 ? " and an optional word" : "");
	if (rp_opts_allowed(r, l, opts) || rp_req(r, l, 0, q))
		return RP_BAD;
	if ((uint32_t)*q < c->cap)
		return RP_OK;
	cap = 2 * (uint32_t)*q + 16;
	if ((o = rp_xrealloc(r, c->offer, cap * sizeof(*o))) == NULL)
		return RP_BAD;
	c->offer = o;
	if ((h = rp_xrealloc(r, c->hold, cap * sizeof(*h))) == NULL)
		return RP_BAD;
	c->hold = h;
	memset(o + c->cap, 0, (cap - c->cap) * sizeof(*o));
	memset(h + c->cap, 0, (cap - c->cap) * sizeof(*h));
	c->cap = cap;
	return RP_OK;
}

int
rp_conn_external(struct rp *r, struct rp_line *l, const char *text)
{
	const char *v = rp_opt(l, "n");
	kvs_req q;
	uint32_t n;

	if (rp_conn_req(r, l, 1, "n", &q))
		return RP_BAD;
	if (v == NULL)
		return rp_error(r, "external: n= is required");
	if (rp_u32(r, "n", v, &n))
		return RP_BAD;
	r->conn->offer[q] = n;
	rp_hist_push(r, text);
	return RP_OK;
}

int
rp_conn_hold(struct rp *r, struct rp_line *l, const char *text)
{
	kvs_req q;

	if (rp_conn_req(r, l, 1, "", &q))
		return RP_BAD;
	r->conn->hold[q] = 1;
	rp_hist_push(r, text);
	return RP_OK;
}

/* "KW ID ok" (accepted; into the history) or "KW ID fail" (refused). */
static int
rp_conn_outcome(struct rp *r, const struct rp_line *l, const char *text,
		kv_err e)
{
	if (e != KV_OK && e != KV_ESTATE)
		return rp_error(r, "%s: %s", l->kw, kvs_errmsg(r->s));
	rp_emit(r, "%s %s %s", l->kw, l->pos[0], e == KV_OK ? "ok" : "fail");
	if (e == KV_OK)
		rp_hist_push(r, text);
	return RP_OK;
}

int
rp_conn_loaded(struct rp *r, struct rp_line *l, const char *text)
{
	kvs_req q;
	bool ok = true;

	if (rp_conn_req(r, l, 2, "", &q))
		return RP_BAD;
	if (l->npos == 2) {
		if (strcmp(l->pos[1], "fail") != 0)
			return rp_error(r, "loaded: expected fail or nothing "
					"after the id, got '%s'", l->pos[1]);
		ok = false;
	}
	return rp_conn_outcome(r, l, text, kvs_load_done(r->s, q, ok));
}

int
rp_conn_release(struct rp *r, struct rp_line *l, const char *text)
{
	kvs_req q;

	if (rp_conn_req(r, l, 1, "", &q))
		return RP_BAD;
	return rp_conn_outcome(r, l, text, kvs_release(r->s, q));
}
