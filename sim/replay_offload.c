/*
 * replay_offload.c -- the offloading connector (core/kvoffload.h) in
 * `policy vllm-v1` replay scripts (docs/offload.md, "Replay lines").
 *
 *   offload native blocks=N [block_tokens=T]          setup
 *   offload lmcache tiers=cpu:N[,disk:M][,remote:R] [chunk=T]
 *   xfer hold|auto        transfers wait for xfer_done / complete at the
 *                         end of the step that started them (default)
 *   xfer_done [ID] [fail] complete the transfers in flight (of request ID)
 *                         in start order: "xfer_done ID ok" ("xfer_done
 *                         ok" for all), "... none" when there were none
 *   offload_state         "offload_state cpu=U/C ..." per tier
 *
 * A step line gains `fetch=ID:N@TIER,...` (loads started: N offloaded
 * blocks from TIER) and `store=ID:N@TIER,...` (stores started).
 */
#include "sim/replay_int.h"

#include "core/kvoffload.h"

#include <stdlib.h>
#include <string.h>

struct rp_off {
	struct kvo_config cfg;
	kvo *o;
	uint32_t f;		/* GPU blocks per offloaded block */
	long line;		/* the `offload` line */
	bool hold;		/* `xfer hold` */
	struct rp_off_x {
		uint64_t id;
		kvs_req req;
	} *fly;			/* transfers in flight, in start order */
	uint32_t nfly, capfly;
};

static const char *const rp_off_tiers[] = { "cpu", "disk", "remote" };

/* `tiers=cpu:N,disk:M`: each name once, in the chain's order. */
static int
rp_off_tiers_opt(struct rp *r, struct kvo_config *c, const char *v)
{
	char buf[256], *save = NULL, *it;
	int next = 0;

	if (strlen(v) >= sizeof(buf))
		return rp_error(r, "offload: tiers= is too long");
	strcpy(buf, v);
	for (it = strtok_r(buf, ",", &save); it != NULL;
	     it = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(it, ':');
		int t;
		uint32_t n;

		if (colon == NULL)
			return rp_error(r, "offload: tier '%s' has no :N", it);
		*colon = '\0';
		for (t = next; t < KVO_MAX_TIERS; t++)
			if (strcmp(it, rp_off_tiers[t]) == 0)
				break;
		if (t == KVO_MAX_TIERS)
			return rp_error(r, "offload: tier '%s' (expected cpu, "
					"disk, remote, each once, in that "
					"order)", it);
		if (rp_u32(r, "tier blocks", colon + 1, &n))
			return RP_BAD;
		snprintf(c->tier[c->ntiers].name, sizeof(c->tier[0].name),
			 "%s", it);
		c->tier[c->ntiers++].blocks = n;
		next = t + 1;
	}
	if (c->ntiers == 0 || strcmp(c->tier[0].name, "cpu") != 0)
		return rp_error(r, "offload lmcache: the chain starts with a "
				"cpu tier");
	return RP_OK;
}

int
rp_off_setup(struct rp *r, struct rp_line *l)
{
	struct kvo_config c = { .kind = KVO_NATIVE };
	const char *v;
	uint32_t n;

	if (r->off != NULL)
		return rp_error(r, "offload given twice");
	if (l->npos != 1)
		return rp_error(r, "offload: expected native or lmcache");
	if (strcmp(l->pos[0], "native") == 0) {
		if (rp_opts_allowed(r, l, "blocks block_tokens"))
			return RP_BAD;
		if ((v = rp_opt(l, "blocks")) == NULL)
			return rp_error(r, "offload native: blocks= is "
					"required");
		c.ntiers = 1;
		snprintf(c.tier[0].name, sizeof(c.tier[0].name), "cpu");
		if (rp_u32(r, "blocks", v, &n))
			return RP_BAD;
		c.tier[0].blocks = n;
		v = rp_opt(l, "block_tokens");
	} else if (strcmp(l->pos[0], "lmcache") == 0) {
		c.kind = KVO_LMCACHE;
		if (rp_opts_allowed(r, l, "tiers chunk"))
			return RP_BAD;
		if ((v = rp_opt(l, "tiers")) == NULL)
			return rp_error(r, "offload lmcache: tiers= is "
					"required");
		if (rp_off_tiers_opt(r, &c, v))
			return RP_BAD;
		c.block_tokens = 256;
		v = rp_opt(l, "chunk");
	} else {
		return rp_error(r, "offload: expected native or lmcache, got "
				"'%s'", l->pos[0]);
	}
	if (v != NULL && rp_u32(r, "block tokens", v, &c.block_tokens))
		return RP_BAD;
	if ((r->off = rp_xrealloc(r, NULL, sizeof(*r->off))) == NULL)
		return RP_BAD;
	memset(r->off, 0, sizeof(*r->off));
	r->off->cfg = c;
	r->off->line = r->line;
	return RP_OK;
}

/* An error of the `offload` line, found when the script starts. */
static int
rp_off_fail(struct rp *r, const char *msg)
{
	long cur = r->line;
	int rc;

	r->line = r->off->line;
	rc = rp_error(r, "%s", msg);
	r->line = cur;
	return rc;
}

int
rp_off_attach(struct rp *r)
{
	struct rp_off *f = r->off;
	uint32_t bs = kvc_config_of(r->k)->group[0].block_size;
	char why[256] = "";
	kv_err e;

	if (r->conn != NULL)
		return rp_off_fail(r, "offload and `connector scripted` "
				   "exclude each other");
	if (f->cfg.block_tokens == 0)
		f->cfg.block_tokens = bs;
	f->f = bs ? f->cfg.block_tokens / bs : 1;
	if ((f->o = kvo_new(&f->cfg, &e, why, sizeof(why))) == NULL)
		return rp_off_fail(r, why[0] ? why : kv_strerror(e));
	if (kvo_attach(f->o, r->s) != KV_OK)
		return rp_off_fail(r, kvo_errmsg(f->o));
	return RP_OK;
}

void
rp_off_free(struct rp *r)
{
	if (r->off == NULL)
		return;
	kvo_free(r->off->o);
	free(r->off->fly);
	free(r->off);
	r->off = NULL;
}

/* The step's new transfers: into the in-flight list, and the fields. */
void
rp_off_step(struct rp *r, struct rp_buf *b)
{
	struct rp_off *f = r->off;
	const struct kvo_xfer *x;
	uint32_t n = kvo_started(f->o, &x), nl = 0, ns = 0;
	struct rp_off_x *fly;

	if (f->nfly + n > f->capfly) {
		uint32_t cap = 2 * (f->nfly + n) + 16;

		if ((fly = rp_xrealloc(r, f->fly, cap * sizeof(*fly))) == NULL)
			return;
		f->fly = fly;
		f->capfly = cap;
	}
	for (int dir = KVO_LOAD; dir <= KVO_STORE; dir++)
		for (uint32_t i = 0; i < n; i++) {
			uint32_t *k = dir == KVO_LOAD ? &nl : &ns;

			if (x[i].dir != dir)
				continue;
			rp_buf_add(b, "%s%s:%u@%s", (*k)++ ? "," :
				   dir == KVO_LOAD ? " fetch=" : " store=",
				   r->reqname[x[i].req],
				   (x[i].nblocks + f->f - 1) / f->f,
				   f->cfg.tier[x[i].tier].name);
		}
	for (uint32_t i = 0; i < n; i++) {
		f->fly[f->nfly].id = x[i].id;
		f->fly[f->nfly++].req = x[i].req;
	}
}

/* Complete the transfers in flight of request q (all when q < 0). */
static int
rp_off_finish(struct rp *r, kvs_req q, bool ok, uint32_t *ndone)
{
	struct rp_off *f = r->off;
	uint32_t keep = 0, n = f->nfly;

	*ndone = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct rp_off_x x = f->fly[i];
		kv_err e;

		if (q >= 0 && x.req != q) {
			f->fly[keep++] = x;
			continue;
		}
		(*ndone)++;
		if ((e = kvo_done(f->o, x.id, ok)) != KV_OK)
			return rp_error(r, "xfer_done: %s", kvo_errmsg(f->o)[0]
					? kvo_errmsg(f->o) : kvs_errmsg(r->s));
	}
	f->nfly = keep;
	return RP_OK;
}

/* After a step's line: its transfers end with it unless `xfer hold`. */
int
rp_off_settle(struct rp *r)
{
	uint32_t n;

	if (r->off->hold)
		return RP_OK;
	return rp_off_finish(r, -1, true, &n);
}

static int
rp_off_need(struct rp *r, const struct rp_line *l)
{
	if (r->off == NULL || r->off->o == NULL)
		return rp_error(r, "%s needs an `offload` setup line", l->kw);
	return RP_OK;
}

int
rp_off_xfer(struct rp *r, struct rp_line *l, const char *text)
{
	if (rp_off_need(r, l) || rp_npos(r, l, 1) ||
	    rp_opts_allowed(r, l, ""))
		return RP_BAD;
	if (strcmp(l->pos[0], "hold") != 0 && strcmp(l->pos[0], "auto") != 0)
		return rp_error(r, "xfer: expected hold or auto, got '%s'",
				l->pos[0]);
	r->off->hold = strcmp(l->pos[0], "hold") == 0;
	rp_hist_push(r, text);
	return RP_OK;
}

int
rp_off_xfer_done(struct rp *r, struct rp_line *l, const char *text)
{
	kvs_req q = -1;
	bool ok = true;
	int np = l->npos;
	uint32_t n;

	if (rp_off_need(r, l) || rp_opts_allowed(r, l, ""))
		return RP_BAD;
	if (np > 0 && strcmp(l->pos[np - 1], "fail") == 0) {
		ok = false;
		np--;
	}
	if (np > 1)
		return rp_error(r, "xfer_done: expected [ID] [fail]");
	if (np == 1 && rp_req(r, l, 0, &q))
		return RP_BAD;
	if (rp_off_finish(r, q, ok, &n))
		return RP_BAD;
	rp_emit(r, "xfer_done%s%s %s", np ? " " : "", np ? l->pos[0] : "",
		n == 0 ? "none" : ok ? "ok" : "fail");
	rp_hist_push(r, text);
	return RP_OK;
}

int
rp_off_state(struct rp *r, struct rp_line *l, const char *text)
{
	struct rp_buf b = { r, NULL, 0, 0 };

	(void)text;
	if (rp_off_need(r, l) || rp_npos(r, l, 0) ||
	    rp_opts_allowed(r, l, ""))
		return RP_BAD;
	rp_buf_add(&b, "offload_state");
	for (uint32_t t = 0; t < kvo_ntiers(r->off->o); t++) {
		const struct kvo_tier_stats *st = kvo_stats(r->off->o, t);

		rp_buf_add(&b, " %s=%llu/%llu", r->off->cfg.tier[t].name,
			   (unsigned long long)st->used_blocks,
			   (unsigned long long)st->capacity_blocks);
	}
	rp_emit(r, "%s", b.p);
	free(b.p);
	return RP_OK;
}
