/*
 * replay.c -- the replay script interpreter.
 *
 * A script is parsed one physical line at a time (R1-R5), setup lines build
 * a struct kvc_config (R6-R11, R35), and the first operation creates the
 * handle.  Each operation calls exactly one libkvcore function and prints
 * one line; the driver knows nothing about modes beyond the option rules
 * that are lexical (DeepSpeed refuses `lookahead=`, R36).  All semantics
 * live in core/.
 *
 * A `policy` line (docs/scheduler.md) adds scheduler setup keys, parsed
 * into a struct kvs_config for any policy (the policy's configure() rejects
 * what its reference lacks), and the first operation then creates a kvs
 * whose allocator the queries use.  The requests belong to the scheduler:
 * only `request`, `step`, `run`, `abort` and the queries `table`,
 * `free_blocks`, `audit` are operations (R50); with --check every step is
 * followed by kvs_audit().
 *
 * --check (DESIGN.md "Decision/action consistency"): before answering a
 * query, the matching action is tried on a clone of the state.  OK/yes must
 * imply success; success that leaves the watermark free must imply a verdict
 * other than NEVER, and in every mode but vllm-v0 (whose checks are
 * worst-case by design, core-spec §1.6) also other than LATER/no.  The first
 * disagreement is reported with the operation lines that led to it.  A
 * trial outside the reference's contract (KV_EREF) stops the run with
 * exit 2, as the action would.
 */
#include "sim/replay.h"
#include "sim/replay_int.h"

#include "core/kvcore.h"
#include "core/kvsched.h"
#include "sim/plugin.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>


int
rp_error(struct rp *r, const char *fmt, ...)
{
	va_list ap;

	if (r->nomem)
		return RP_BAD;
	fflush(r->out);
	fprintf(r->err, "%s:%ld: ", r->file, r->line);
	va_start(ap, fmt);
	vfprintf(r->err, fmt, ap);
	va_end(ap);
	fputc('\n', r->err);
	return RP_BAD;
}

/* realloc, or NULL (p still valid) with r->nomem set. */
void *
rp_xrealloc(struct rp *r, void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL)
		r->nomem = true;
	return q;
}

static char *
rp_strdup(struct rp *r, const char *s)
{
	char *d = strdup(s);

	if (d == NULL)
		r->nomem = true;
	return d;
}

/* Print one result line and remember it for `expect`. */
void
rp_emit(struct rp *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (r->nomem)
		return;
	va_start(ap, fmt);
	n = vsnprintf(r->last, r->lastcap, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n >= r->lastcap) {
		char *q = rp_xrealloc(r, r->last, (size_t)n + 1);

		if (q == NULL)
			return;
		r->last = q;
		r->lastcap = (size_t)n + 1;
		va_start(ap, fmt);
		vsnprintf(r->last, r->lastcap, fmt, ap);
		va_end(ap);
	}
	fputs(r->last, r->out);
	fputc('\n', r->out);
	r->have_last = true;
}

/* ---- lexical (R1-R4) ---------------------------------------------- */

static bool
rp_is_int(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static int
rp_uint(struct rp *r, const char *what, const char *s, uint64_t max,
	uint64_t *out)
{
	uint64_t v = 0;

	if (!rp_is_int(s))
		return rp_error(r, "%s: expected a non-negative integer, "
				"got '%s'", what, s);
	for (; *s; s++) {
		if (v > (max - (uint64_t)(*s - '0')) / 10)
			return rp_error(r, "%s: value out of range (at most "
					"%llu)", what, (unsigned long long)max);
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return RP_OK;
}

int
rp_u32(struct rp *r, const char *what, const char *s, uint32_t *out)
{
	uint64_t v;
	int rc = rp_uint(r, what, s, UINT32_MAX, &v);

	*out = (uint32_t)v;
	return rc;
}

/* A pool size: at most RP_MAXBLOCKS blocks. */
static int
rp_pool(struct rp *r, const char *what, const char *s, uint32_t *out)
{
	uint64_t v;
	int rc = rp_uint(r, what, s, RP_MAXBLOCKS, &v);

	*out = (uint32_t)v;
	return rc;
}

static bool
rp_valid_seqid(const char *s)
{
	if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
	      (*s >= '0' && *s <= '9') || *s == '_'))
		return false;
	for (s++; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '.' ||
		      *s == '-'))
			return false;
	return true;
}

static bool
rp_valid_group(const char *s)
{
	if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
	      *s == '_'))
		return false;
	for (s++; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return strcmp(s, "cpu") != 0;
}

/* Parse a token LIST (R3) into r->tok. */
static int
rp_tokens(struct rp *r, const char *s)
{
	r->ntok = 0;
	if (*s == '\0')
		return rp_error(r, "tokens: empty list");
	for (;;) {
		char item[64];
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		char *dots;
		uint32_t lo, hi;

		if (len == 0 || len >= sizeof(item))
			return rp_error(r, "tokens: bad item '%.*s'",
					(int)len, s);
		memcpy(item, s, len);
		item[len] = '\0';
		dots = strstr(item, "..");
		if (dots != NULL) {
			*dots = '\0';
			if (rp_u32(r, "tokens", item, &lo) ||
			    rp_u32(r, "tokens", dots + 2, &hi))
				return RP_BAD;
			if (lo > hi)
				return rp_error(r, "tokens: range %u..%u is "
						"empty (low > high)", lo, hi);
		} else {
			if (rp_u32(r, "tokens", item, &lo))
				return RP_BAD;
			hi = lo;
		}
		if ((uint64_t)hi - lo + 1 > RP_MAXTOKENS - r->ntok)
			return rp_error(r, "tokens: list too long (at most "
					"%u tokens)", RP_MAXTOKENS);
		if (r->ntok + (hi - lo + 1) > r->captok) {
			size_t cap = 2 * (r->ntok + (hi - lo + 1));
			uint32_t *t = rp_xrealloc(r, r->tok,
						  cap * sizeof(*t));

			if (t == NULL)
				return RP_BAD;
			r->tok = t;
			r->captok = cap;
		}
		for (uint64_t v = lo; v <= hi; v++)
			r->tok[r->ntok++] = (uint32_t)v;
		if (comma == NULL)
			break;
		s = comma + 1;
	}
	return RP_OK;
}

/* A parsed line: keyword, positionals, options. */

static int
rp_split(struct rp *r, char *s, struct rp_line *l)
{
	char *w;

	memset(l, 0, sizeof(*l));
	while (*s == ' ' || *s == '\t')
		s++;
	l->kw = s;
	while (*s && *s != ' ' && *s != '\t')
		s++;
	if (*s)
		*s++ = '\0';
	while (*s == ' ' || *s == '\t')
		s++;
	l->rest = s;
	if (strcmp(l->kw, "expect") == 0)
		return RP_OK;
	while (*s) {
		char *eq;

		w = s;
		while (*s && *s != ' ' && *s != '\t')
			s++;
		if (*s)
			*s++ = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		eq = strchr(w, '=');
		if (eq == NULL) {
			if (l->nopt > 0)
				return rp_error(r, "positional argument '%s' "
						"after an option", w);
			if (l->npos == RP_MAXWORDS)
				return rp_error(r, "too many arguments");
			l->pos[l->npos++] = w;
			continue;
		}
		if (eq == w)
			return rp_error(r, "option without a name: '%s'", w);
		*eq = '\0';
		for (int i = 0; i < l->nopt; i++)
			if (strcmp(l->key[i], w) == 0)
				return rp_error(r, "option '%s' given twice",
						w);
		if (l->nopt == RP_MAXWORDS)
			return rp_error(r, "too many options");
		l->key[l->nopt] = w;
		l->val[l->nopt++] = eq + 1;
	}
	return RP_OK;
}

/* Every option must be one of `allowed` (space separated). */
int
rp_opts_allowed(struct rp *r, const struct rp_line *l, const char *allowed)
{
	for (int i = 0; i < l->nopt; i++) {
		const char *p = allowed;
		size_t n = strlen(l->key[i]);
		bool ok = false;

		while (p && *p) {
			if (strncmp(p, l->key[i], n) == 0 &&
			    (p[n] == ' ' || p[n] == '\0')) {
				ok = true;
				break;
			}
			p = strchr(p, ' ');
			if (p)
				p++;
		}
		if (!ok)
			return rp_error(r, "%s: unknown option '%s'", l->kw,
					l->key[i]);
	}
	return RP_OK;
}

const char *
rp_opt(const struct rp_line *l, const char *key)
{
	for (int i = 0; i < l->nopt; i++)
		if (strcmp(l->key[i], key) == 0)
			return l->val[i];
	return NULL;
}

int
rp_npos(struct rp *r, const struct rp_line *l, int n)
{
	if (l->npos != n)
		return rp_error(r, "%s: expected %d argument%s, got %d", l->kw,
				n, n == 1 ? "" : "s", l->npos);
	return RP_OK;
}

/* ---- sequence names ---------------------------------------------- */

static uint32_t
rp_strhash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static struct rp_id *
rp_find(struct rp *r, const char *name)
{
	if (r->ids == NULL)
		return NULL;
	for (uint32_t i = rp_strhash(name) & r->idmask;;
	     i = (i + 1) & r->idmask) {
		if (r->ids[i].name == NULL)
			return NULL;
		if (strcmp(r->ids[i].name, name) == 0)
			return &r->ids[i];
	}
}

/* RP_OK, or RP_BAD with r->nomem set (nothing inserted). */
static int
rp_insert(struct rp *r, const char *name, int32_t seq)
{
	uint32_t i;
	char *dup;

	if (2 * (r->nids + 1) > r->idmask + 1 || r->ids == NULL) {
		struct rp_id *old = r->ids;
		uint32_t oldsize = r->ids ? r->idmask + 1 : 0;
		uint32_t size = oldsize ? 2 * oldsize : 64;
		struct rp_id *ids = rp_xrealloc(r, NULL,
						size * sizeof(*ids));

		if (ids == NULL)
			return RP_BAD;
		r->ids = ids;
		memset(r->ids, 0, size * sizeof(*r->ids));
		r->idmask = size - 1;
		r->nids = 0;
		for (uint32_t j = 0; j < oldsize; j++)
			if (old[j].name != NULL) {
				for (i = rp_strhash(old[j].name) & r->idmask;
				     r->ids[i].name != NULL;
				     i = (i + 1) & r->idmask)
					;
				r->ids[i] = old[j];
				r->nids++;
			}
		free(old);
	}
	if ((dup = rp_strdup(r, name)) == NULL)
		return RP_BAD;
	for (i = rp_strhash(name) & r->idmask; r->ids[i].name != NULL;
	     i = (i + 1) & r->idmask)
		;
	r->ids[i].name = dup;
	r->ids[i].seq = seq;
	r->nids++;
	return RP_OK;
}

/* Positional i as a name the script declared, a "sequence" or a "request"
 * (what, for the messages). */
static int
rp_named(struct rp *r, const struct rp_line *l, int i, const char *what,
	 struct rp_id **id)
{
	if (!rp_valid_seqid(l->pos[i]))
		return rp_error(r, "bad %s id '%s'", what, l->pos[i]);
	*id = rp_find(r, l->pos[i]);
	if (*id == NULL)
		return rp_error(r, "%s: unknown %s '%s'", l->kw, what,
				l->pos[i]);
	return RP_OK;
}

/* Resolve positional i to a live sequence. */
int
rp_seq(struct rp *r, const struct rp_line *l, int i, int32_t *s)
{
	struct rp_id *id;

	if (rp_named(r, l, i, "sequence", &id))
		return RP_BAD;
	if (id->seq == RP_PENDING)
		return rp_error(r, "%s: sequence '%s' waits in its group "
				"until the group's first sequence is "
				"allocated", l->kw, l->pos[i]);
	if (kvc_seq_state(r->k, id->seq) == KVC_DEAD)
		return rp_error(r, "%s: sequence '%s' is dead (its request "
				"was freed)", l->kw, l->pos[i]);
	*s = id->seq;
	return RP_OK;
}

static int
rp_new_name(struct rp *r, const char *name)
{
	if (!rp_valid_seqid(name))
		return rp_error(r, "bad sequence id '%s'", name);
	if (rp_find(r, name) != NULL)
		return rp_error(r, "sequence id '%s' already used", name);
	return RP_OK;
}

/* ---- setup (R6-R11) ----------------------------------------------- */

static const char *const rp_setup_kw[] = {
	"mode", "block_size", "gpu_blocks", "cpu_blocks", "watermark",
	"prefix_caching", "max_model_len", "group",
	"defer_same_step_state_hits",
	/* scheduler keys (RP_SCHED_KW on) */
	"policy", "max_num_seqs", "max_num_batched_tokens", "chunked_prefill",
	"long_prefill_threshold", "preemption", "chunk_size", "sched_policy",
	"lookahead",
	/* KV connector (replay_conn.c) */
	"connector",
	/* offload tiers (replay_offload.c) */
	"offload",
	/* LoRA (R100-R109) */
	"max_loras",
	/* speculative decoding (replay_spec.c) */
	"spec_tokens", NULL
};

#define RP_GROUP_KW 7
#define RP_DEFER_KW 8
#define RP_POLICY_KW 9
#define RP_CONN_KW 18
#define RP_OFFLOAD_KW 19
#define RP_MAX_LORAS_KW 20
#define RP_SPEC_KW 21

static int
rp_setup_index(const char *kw)
{
	for (int i = 0; rp_setup_kw[i] != NULL; i++)
		if (strcmp(rp_setup_kw[i], kw) == 0)
			return i;
	return -1;
}

static bool
rp_valid_decimal(const char *s)
{
	const char *dot = strchr(s, '.');

	if (dot == NULL)
		return rp_is_int(s);
	if (dot == s || dot[1] == '\0')
		return false;
	for (const char *p = s; *p; p++)
		if (p != dot && (*p < '0' || *p > '9'))
			return false;
	return true;
}

/* The allocator mode, and the watermark default that goes with it (R7). */
static void
rp_apply_mode(struct rp *r, kvc_mode m)
{
	r->cfg.mode = m;
	if (!r->seen[4])
		r->cfg.watermark = m == KVC_VLLM_V0 ? 0.01 : 0.0;
}

static int
rp_onoff(struct rp *r, const struct rp_line *l, const char *on,
	 const char *off, int64_t *out)
{
	if (strcmp(l->pos[0], on) == 0)
		*out = 1;
	else if (strcmp(l->pos[0], off) == 0)
		*out = 0;
	else
		return rp_error(r, "%s: expected %s or %s, got '%s'", l->kw,
				on, off, l->pos[0]);
	return RP_OK;
}

/*
 * Scheduler setup keys: parsed into a struct kvs_config, generic for every
 * policy.  Values the policy does not have are its configure()'s to reject
 * (with the first operation).  `policy` also fixes the allocator mode.
 */
static int
rp_sched_setup(struct rp *r, int idx, struct rp_line *l)
{
	struct kvs_config *c = &r->scfg;
	const char *v = l->pos[0];
	uint32_t u;

	switch (idx) {
	case RP_POLICY_KW: {
		const struct kvs_policy *p;
		char why[1100];
		kv_err e;

		if (strlen(v) >= sizeof(c->policy))
			return rp_error(r, "policy: name too long");
		/* a path (it has a '/') is a plugin (sim/plugin.h) */
		e = sim_policy_find(v, &p, &r->plugin, why, sizeof(why));
		if (e != KV_OK)
			return rp_error(r, "%s%s", e == KV_EINVAL ?
					"policy: " : "", why);
		if (r->have_mode && r->cfg.mode != p->mode)
			return rp_error(r, "policy %s runs on mode %s, but "
					"the mode line says %s", v,
					kvc_mode_name(p->mode),
					kvc_mode_name(r->cfg.mode));
		strcpy(c->policy, v);
		r->pol = p;
		rp_apply_mode(r, p->mode);
		return RP_OK;
	}
	case RP_POLICY_KW + 3:
		return rp_onoff(r, l, "on", "off", &c->chunked_prefill);
	case RP_POLICY_KW + 5:
		return rp_onoff(r, l, "swap", "recompute", &c->preemption);
	case RP_POLICY_KW + 7:
		return rp_onoff(r, l, "priority", "fcfs", &c->priority);
	}
	if (rp_u32(r, l->kw, v, &u))
		return RP_BAD;
	switch (idx) {
	case RP_POLICY_KW + 1:
		c->max_num_seqs = u;
		break;
	case RP_POLICY_KW + 2:
		c->max_num_batched_tokens = u;
		break;
	case RP_POLICY_KW + 4:
		c->long_prefill_threshold = u;
		break;
	case RP_POLICY_KW + 6:
		c->chunk_size = u;
		break;
	case RP_POLICY_KW + 8:
		c->lookahead = u;
		break;
	case RP_MAX_LORAS_KW:
		c->max_loras = u;
		break;
	default:
		return rp_error(r, "internal: bad setup keyword");
	}
	return RP_OK;
}

/* `group NAME kind=... [window=N] [block_size=N]` (R35). */
static int
rp_setup_group(struct rp *r, struct rp_line *l)
{
	struct kvc_config *c = &r->cfg;
	struct kvc_group_config *g;
	const char *kind, *win, *bs;

	if (rp_npos(r, l, 1) ||
	    rp_opts_allowed(r, l, "kind window block_size"))
		return RP_BAD;
	if (!rp_valid_group(l->pos[0]))
		return rp_error(r, "bad group name '%s'", l->pos[0]);
	if (strlen(l->pos[0]) >= KVC_NAME_MAX)
		return rp_error(r, "group name too long");
	if (c->ngroups == KVC_MAX_GROUPS)
		return rp_error(r, "at most %d groups",
				KVC_MAX_GROUPS);
	for (uint32_t i = 0; i < c->ngroups; i++)
		if (strcmp(c->group[i].name, l->pos[0]) == 0)
			return rp_error(r, "group '%s' declared twice",
					l->pos[0]);
	g = &c->group[c->ngroups];
	memset(g, 0, sizeof(*g));
	strcpy(g->name, l->pos[0]);
	kind = rp_opt(l, "kind");
	if (kind == NULL)
		return rp_error(r, "group: kind= is required");
	if (strcmp(kind, "full") == 0)
		g->kind = KVC_FULL;
	else if (strcmp(kind, "sliding") == 0)
		g->kind = KVC_SLIDING;
	else if (strcmp(kind, "state") == 0)
		g->kind = KVC_STATE;
	else
		return rp_error(r, "group: unknown kind '%s' (full, "
				"sliding, state)", kind);
	win = rp_opt(l, "window");
	if ((win != NULL) != (g->kind == KVC_SLIDING))
		return rp_error(r, "group: window= is required for, "
				"and only for, kind=sliding");
	if (win != NULL) {
		if (rp_u32(r, "window", win, &g->window))
			return RP_BAD;
		if (g->window == 0)
			return rp_error(r, "window must be at least 1");
	}
	bs = rp_opt(l, "block_size");
	if (bs != NULL) {
		if (rp_u32(r, "block_size", bs, &g->block_size))
			return RP_BAD;
		if (g->block_size == 0)
			return rp_error(r, "block_size must be at "
					"least 1");
	}
	c->ngroups++;
	return RP_OK;
}

static int
rp_setup(struct rp *r, int idx, struct rp_line *l)
{
	struct kvc_config *c = &r->cfg;
	uint32_t v;

	if (idx == RP_OFFLOAD_KW) {
		r->seen[idx] = true;
		return rp_off_setup(r, l);
	}
	if (idx != RP_GROUP_KW) {
		if (r->seen[idx])
			return rp_error(r, "%s given twice", l->kw);
		r->seen[idx] = true;
		if (rp_npos(r, l, 1) || rp_opts_allowed(r, l, ""))
			return RP_BAD;
	}
	if (idx == RP_CONN_KW)
		return rp_conn_setup(r, l);
	if (idx == RP_SPEC_KW)
		return rp_spec_setup(r, l);
	if (idx >= RP_POLICY_KW)
		return rp_sched_setup(r, idx, l);
	switch (idx) {
	case 0: {
		kvc_mode m;

		if (kvc_mode_parse(l->pos[0], &m) != 0)
			return rp_error(r, "unknown mode '%s' (exact, "
					"vllm-v0, vllm-v1, deepspeed)",
					l->pos[0]);
		if (r->pol != NULL && r->pol->mode != m)
			return rp_error(r, "mode %s conflicts with policy %s, "
					"which runs on mode %s", l->pos[0],
					r->pol->name,
					kvc_mode_name(r->pol->mode));
		rp_apply_mode(r, m);
		r->have_mode = true;
		return RP_OK;
	}
	case 1:
		if (rp_u32(r, "block_size", l->pos[0], &v))
			return RP_BAD;
		if (v == 0)
			return rp_error(r, "block_size must be at least 1");
		c->block_size = v;
		return RP_OK;
	case 2:
		if (rp_pool(r, "gpu_blocks", l->pos[0], &v))
			return RP_BAD;
		c->gpu_blocks = v;
		r->have_gpu = true;
		return RP_OK;
	case 3:
		if (rp_pool(r, "cpu_blocks", l->pos[0], &v))
			return RP_BAD;
		c->cpu_blocks = v;
		return RP_OK;
	case 4:
		if (!rp_valid_decimal(l->pos[0]))
			return rp_error(r, "watermark: expected a decimal "
					"number like 0.01, got '%s'",
					l->pos[0]);
		c->watermark = strtod(l->pos[0], NULL);
		return RP_OK;
	case 5:
		if (strcmp(l->pos[0], "on") == 0)
			c->prefix_caching = true;
		else if (strcmp(l->pos[0], "off") == 0)
			c->prefix_caching = false;
		else
			return rp_error(r, "prefix_caching: expected on or "
					"off, got '%s'", l->pos[0]);
		return RP_OK;
	case RP_DEFER_KW: {
		int64_t on;

		if (rp_onoff(r, l, "on", "off", &on))
			return RP_BAD;
		c->defer_same_step_state_hits = on != 0;
		return RP_OK;
	}
	case 6:
		if (rp_u32(r, "max_model_len", l->pos[0], &v))
			return RP_BAD;
		if (v == 0)
			return rp_error(r, "max_model_len must be at least 1");
		c->max_model_len = v;
		return RP_OK;
	case RP_GROUP_KW:
		return rp_setup_group(r, l);
	}
	return rp_error(r, "internal: bad setup keyword");
}

/* Create the handle at the first operation (or the end of the file). */
static int
rp_start(struct rp *r)
{
	char why[256];
	kv_err e;

	if (r->k != NULL)
		return RP_OK;
	if (!r->have_gpu)
		return rp_error(r, "gpu_blocks is required before the first "
				"operation");
	if (r->pol != NULL) {
		r->s = kvs_new_policy(r->pol, &r->scfg, &r->cfg, &e, why,
				      sizeof(why));
		if (r->s == NULL)
			return rp_error(r, "bad setup: %s", why[0] ? why :
					kv_strerror(e));
		r->k = kvs_kv(r->s);
		if (r->conn != NULL && rp_conn_attach(r) != RP_OK)
			return RP_BAD;
		return r->off != NULL ? rp_off_attach(r) : RP_OK;
	}
	for (int i = RP_POLICY_KW + 1; rp_setup_kw[i] != NULL; i++)
		if (r->seen[i])
			return rp_error(r, "%s needs a policy line (it sets up "
					"a scheduler)", rp_setup_kw[i]);
	r->k = kvc_new(&r->cfg, &e, why, sizeof(why));
	if (r->k == NULL)
		return rp_error(r, "bad setup: %s", why[0] ? why :
				kv_strerror(e));
	return RP_OK;
}

/* ---- operations --------------------------------------------------- */

/* Map a libkvcore error to a script error (KV_ENOSPC is handled by callers). */
static int
rp_kverr(struct rp *r, const char *kw, kv_err e)
{
	const char *m = kvc_errmsg(r->k);

	if (e == KV_EREF)
		return rp_error(r, "%s: outside the reference's contract (the "
				"%s reference would fail): %s", kw,
				kvc_mode_name(r->cfg.mode), m);
	return rp_error(r, "%s: %s%s%s", kw, kv_strerror(e), m[0] ? ": " : "",
			m);
}

static int
rp_opt_u32(struct rp *r, const struct rp_line *l, const char *key,
	   uint32_t *v, bool *has)
{
	const char *s = rp_opt(l, key);

	*has = s != NULL;
	*v = 0;
	if (s == NULL)
		return RP_OK;
	if (r->cfg.mode == KVC_DEEPSPEED && strcmp(key, "lookahead") == 0)
		return rp_error(r, "%s: lookahead= is not available in mode "
				"deepspeed (FastGen reserves no lookahead "
				"slots)", l->kw);
	return rp_u32(r, key, s, v);
}

/*
 * The last action's pairs as "src>dst,..." in a new string (the caller
 * frees it), or NULL with r->nomem set.
 */
static char *
rp_pairs_str(struct rp *r)
{
	size_t n, len = 0;
	const struct kvc_pair *p = kvc_pairs(r->k, &n);
	char *buf = rp_xrealloc(r, NULL, 24 * n + 1);

	if (buf == NULL)
		return NULL;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(buf + len, "%s%d>%d", i ? "," : "",
				       p[i].src, p[i].dst);
	return buf;
}

void
rp_hist_push(struct rp *r, const char *text)
{
	if (!r->o->check || r->nomem)
		return;
	if (r->nhist == r->caphist) {
		size_t cap = r->caphist ? 2 * r->caphist : 64;
		char **h = rp_xrealloc(r, r->hist, cap * sizeof(*h));
		long *hl;

		if (h == NULL)
			return;
		r->hist = h;
		hl = rp_xrealloc(r, r->histline, cap * sizeof(*hl));
		if (hl == NULL)
			return;
		r->histline = hl;
		r->caphist = cap;
	}
	r->hist[r->nhist] = rp_strdup(r, text);
	r->histline[r->nhist++] = r->line;
}

static int
rp_disagree(struct rp *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int
rp_disagree(struct rp *r, const char *fmt, ...)
{
	va_list ap;

	if (r->nomem)
		return RP_FAIL;
	fflush(r->out);
	fprintf(r->err, "%s:%ld: check: ", r->file, r->line);
	va_start(ap, fmt);
	vfprintf(r->err, fmt, ap);
	va_end(ap);
	fprintf(r->err, "\n%s:%ld: check: operations that led here:\n",
		r->file, r->line);
	for (size_t i = 0; i < r->nhist; i++)
		fprintf(r->err, "  %ld: %s\n", r->histline[i], r->hist[i]);
	return RP_FAIL;
}

/* Least free count over the groups after an action on clone c. */
static uint32_t
rp_min_free(const kvc *c)
{
	uint32_t m = UINT32_MAX;

	for (uint32_t g = 0; g < kvc_ngroups(c); g++) {
		uint32_t f = kvc_free_blocks(c, g);

		if (f < m)
			m = f;
	}
	return m;
}

enum rp_action { RA_ALLOCATE, RA_APPEND, RA_SWAP_OUT, RA_SWAP_IN };

/* Run action a on clone c: its kv_err (KV_ENOMEM with r->nomem set when
 * the trial's own scratch could not be had). */
static kv_err
rp_trial_action(struct rp *r, kvc *c, enum rp_action a, int32_t s,
		uint32_t n, uint32_t L)
{
	uint32_t *t;
	kv_err e = KV_OK;

	switch (a) {
	case RA_ALLOCATE:
		return kvc_allocate(c, s, 0);
	case RA_APPEND:
		t = rp_xrealloc(r, NULL, (n ? n : 1) * sizeof(*t));
		if (t == NULL)
			return KV_ENOMEM;
		/* Fresh token values that no prompt in a script uses. */
		for (uint32_t i = 0; i < n; i++)
			t[i] = UINT32_MAX - i;
		e = n == 0 ? kvc_append_slots(c, s, L) :
			     kvc_append(c, s, t, n, L, L > 0);
		free(t);
		return e;
	case RA_SWAP_OUT:
		return kvc_swap_out(c, s);
	case RA_SWAP_IN:
		return kvc_swap_in(c, s, L);
	}
	return KV_EINVAL;
}

static const char *const rp_action_name[] = {
	"allocate", "append", "swap_out", "swap_in"
};

/*
 * Try an action on a clone.  *ok = it succeeded; *left = the least free
 * count after it.  Misuse errors other than KV_ENOSPC and KV_EREF also
 * count as "does not succeed".  A trial outside the reference's contract
 * (KV_EREF) is no answer either way: the run stops with exit 2 and the
 * message the action gives when run directly.  Out of memory: RP_FAIL with
 * r->nomem set.
 */
static int
rp_trial(struct rp *r, enum rp_action a, int32_t s, uint32_t n, uint32_t L,
	 bool *ok, uint32_t *left)
{
	kvc *c = kvc_clone(r->k);
	kv_err e;

	if (c == NULL) {
		r->nomem = true;
		return RP_FAIL;
	}
	e = rp_trial_action(r, c, a, s, n, L);
	if (e == KV_EREF) {
		int rc = rp_error(r, "%s (the --check trial of this query): "
				  "outside the reference's contract (the %s "
				  "reference would fail): %s",
				  rp_action_name[a],
				  kvc_mode_name(r->cfg.mode), kvc_errmsg(c));

		kvc_free(c);
		return rc;
	}
	*ok = e == KV_OK;
	*left = rp_min_free(c);
	if (*ok) {
		char why[256];

		if (kvc_audit(c, why, sizeof(why)) != 0) {
			kvc_free(c);
			return rp_disagree(r, "the trial action leaves a "
					   "broken state: %s", why);
		}
	}
	kvc_free(c);
	return r->nomem ? RP_FAIL : RP_OK;
}

static uint32_t
rp_watermark_blocks(const struct rp *r)
{
	return (uint32_t)(r->cfg.watermark * (double)r->cfg.gpu_blocks);
}

/* Check a three-way verdict against the trial of its action. */
static int
rp_check_verdict(struct rp *r, const char *q, kvc_verdict v, bool ok,
		 uint32_t left, bool exact_reverse)
{
	static const char *const vn[] = { "OK", "LATER", "NEVER" };
	uint32_t wm = rp_watermark_blocks(r);

	if (v == KVC_VERDICT_OK && !ok)
		return rp_disagree(r, "%s said OK but the action fails", q);
	if (!exact_reverse || !ok || left < wm)
		return RP_OK;
	if (v == KVC_VERDICT_NEVER)
		return rp_disagree(r, "%s said NEVER but the action succeeds",
				   q);
	if (v == KVC_VERDICT_LATER && r->cfg.mode != KVC_VLLM_V0)
		return rp_disagree(r, "%s said %s but the action succeeds "
				   "with the watermark free", q, vn[v]);
	return RP_OK;
}

static int
rp_check_bool(struct rp *r, const char *q, bool yes, bool ok)
{
	if (yes && !ok)
		return rp_disagree(r, "%s said yes but the action fails", q);
	if (!yes && ok && r->cfg.mode != KVC_VLLM_V0)
		return rp_disagree(r, "%s said no but the action succeeds", q);
	return RP_OK;
}

static const char *const rp_verdict_name[] = { "OK", "LATER", "NEVER" };

/* `table NAME`: sequence s's block ids per group (R19). */
static void
rp_table(struct rp *r, const char *name, int32_t s)
{
	char *buf;
	size_t cap = 64, len;

	for (uint32_t g = 0; g < kvc_ngroups(r->k); g++) {
		size_t tn;

		kvc_table(r->k, s, g, &tn);
		cap += 16 * tn + KVC_NAME_MAX + 8;
	}
	buf = rp_xrealloc(r, NULL, cap + strlen(name));
	if (buf == NULL)
		return;
	len = (size_t)sprintf(buf, "table %s", name);
	for (uint32_t g = 0; g < kvc_ngroups(r->k); g++) {
		size_t tn;
		const int32_t *id = kvc_table(r->k, s, g, &tn);

		len += (size_t)sprintf(buf + len, " %s=[",
				       kvc_group_name(r->k, g));
		for (size_t i = 0; i < tn; i++) {
			if (i)
				buf[len++] = ',';
			if (id[i] == KVC_NULL)
				buf[len++] = '-';
			else
				len += (size_t)sprintf(buf + len, "%d", id[i]);
		}
		buf[len++] = ']';
		buf[len] = '\0';
	}
	rp_emit(r, "%s", buf);
	free(buf);
}

/* `free_blocks` (R20). */
static void
rp_free_blocks(struct rp *r)
{
	char *buf;
	size_t len;

	buf = rp_xrealloc(r, NULL, 64 * (kvc_ngroups(r->k) + 2));
	if (buf == NULL)
		return;
	len = (size_t)sprintf(buf, "free_blocks");
	for (uint32_t g = 0; g < kvc_ngroups(r->k); g++)
		len += (size_t)sprintf(buf + len, " %s=%u",
				       kvc_group_name(r->k, g),
				       kvc_free_blocks(r->k, g));
	sprintf(buf + len, " cpu=%u", kvc_free_cpu(r->k));
	rp_emit(r, "%s", buf);
	free(buf);
}

/* `free_blocks` or `audit` (R20, R31): no operand, the same in both
 * modes; with a policy, the audit also checks the scheduler's lists. */
static int
rp_pool_line(struct rp *r, struct rp_line *l, const char *text)
{
	char why[512];
	int bad;

	(void)text;
	if (rp_npos(r, l, 0) || rp_opts_allowed(r, l, ""))
		return RP_BAD;
	if (strcmp(l->kw, "free_blocks") == 0) {
		rp_free_blocks(r);
		return RP_OK;
	}
	bad = r->s != NULL ? kvs_audit(r->s, why, sizeof(why))
			   : kvc_audit(r->k, why, sizeof(why));
	if (bad == 0)
		rp_emit(r, "audit ok");
	else
		rp_emit(r, "audit FAIL %s", why);
	return RP_OK;
}

/* Resolve positional i to a declared request. */
int
rp_req(struct rp *r, const struct rp_line *l, int i, kvs_req *out)
{
	struct rp_id *id;

	if (rp_named(r, l, i, "request", &id))
		return RP_BAD;
	*out = id->seq;
	return RP_OK;
}

/* "KW ID ok" (and the line into the history) or "KW ID fail". */
static int
rp_outcome(struct rp *r, const struct rp_line *l, const char *text, bool ok)
{
	rp_emit(r, "%s %s %s", l->kw, l->pos[0], ok ? "ok" : "fail");
	if (ok)
		rp_hist_push(r, text);
	return RP_OK;
}

/* The operand of a one-sequence operation: one positional, a live
 * sequence, and only the options `allowed`. */
static int
rp_seq_arg(struct rp *r, const struct rp_line *l, const char *allowed,
	   int32_t *s)
{
	if (rp_npos(r, l, 1) || rp_opts_allowed(r, l, allowed) ||
	    rp_seq(r, l, 0, s))
		return RP_BAD;
	return RP_OK;
}

/*
 * The operations without a policy (R12-R31), one function each, in the
 * order of docs/replay.md.  Each gets the parsed line and the line as
 * written (for the --check history); the dispatcher (rp_op) has set the
 * allocator's clock and, for those that name a sequence first, checked
 * there is a positional.
 */
/* `seq ID group=ROOT`: one more waiting sequence of ROOT's group. */
static int
rp_op_seq_group(struct rp *r, const struct rp_line *l)
{
	const char *rname = rp_opt(l, "group");
	struct rp_id *root = rp_find(r, rname), *id;
	char **p;

	if (rp_opt(l, "tokens") != NULL)
		return rp_error(r, "seq: group= and tokens= together (the "
				"sequences of a group share its prompt)");
	if (r->cfg.mode != KVC_VLLM_V0 && r->cfg.mode != KVC_EXACT)
		return rp_error(r, "seq: groups of several waiting sequences "
				"are for modes vllm-v0 and exact (mode %s has "
				"no fork)", kvc_mode_name(r->cfg.mode));
	if (root == NULL || root->seq < 0 ||
	    kvc_seq_state(r->k, root->seq) != KVC_WAITING ||
	    kvc_seq_request(r->k, root->seq) != root->seq)
		return rp_error(r, "seq: group=%s is not a waiting request's "
				"first sequence", rname);
	p = rp_xrealloc(r, r->pend, (r->npend + 1) * sizeof(*p));
	if (p == NULL)
		return RP_FAIL;
	r->pend = p;
	if ((r->pend[r->npend] = rp_strdup(r, l->pos[0])) == NULL)
		return RP_FAIL;
	r->npend++;
	if (rp_insert(r, l->pos[0], RP_PENDING) != RP_OK)
		return RP_BAD;
	id = rp_find(r, l->pos[0]);
	id->root = root->seq;
	return RP_OK;
}

static int
rp_op_seq(struct rp *r, struct rp_line *l, const char *text)
{
	const char *t;
	int32_t s;
	kv_err e;

	if (rp_npos(r, l, 1) || rp_opts_allowed(r, l, "tokens group") ||
	    rp_new_name(r, l->pos[0]))
		return RP_BAD;
	if (rp_opt(l, "group") != NULL) {
		int rc = rp_op_seq_group(r, l);

		if (rc == RP_OK)
			rp_hist_push(r, text);
		return rc;
	}
	t = rp_opt(l, "tokens");
	if (t == NULL)
		return rp_error(r, "seq: tokens= is required");
	if (rp_tokens(r, t))
		return RP_BAD;
	e = kvc_seq_new(r->k, r->tok, r->ntok, &s);
	if (e != KV_OK)
		return rp_kverr(r, l->kw, e);
	if (rp_insert(r, l->pos[0], s) != RP_OK)
		return RP_BAD;
	rp_hist_push(r, text);
	return RP_OK;
}

/* After `allocate` of s: fork the sequences waiting in its group, in
 * declaration order (vLLM v0's allocate forks the first one's table). */
static int
rp_group_fork(struct rp *r, int32_t s)
{
	int32_t child;
	kv_err e;

	for (size_t j = 0; j < r->npend; j++) {
		struct rp_id *id = rp_find(r, r->pend[j]);

		if (id == NULL || id->seq != RP_PENDING || id->root != s)
			continue;
		if ((e = kvc_fork(r->k, s, &child)) != KV_OK)
			return rp_kverr(r, "allocate (fork of the group)", e);
		id->seq = child;
	}
	return RP_OK;
}

static int
rp_op_new_step(struct rp *r, struct rp_line *l, const char *text)
{
	if (rp_npos(r, l, 0) || rp_opts_allowed(r, l, ""))
		return RP_BAD;
	kvc_step_begin(r->k);
	rp_hist_push(r, text);
	rp_emit(r, "new_step ok");
	return RP_OK;
}

/* `time T`: the clock of the following operations (R30's access times). */
static int
rp_op_time(struct rp *r, struct rp_line *l, const char *text)
{
	uint32_t t;

	if (rp_npos(r, l, 1) || rp_opts_allowed(r, l, "") ||
	    rp_u32(r, "time", l->pos[0], &t))
		return RP_BAD;
	if (r->have_clock && t < r->clock)
		return rp_error(r, "time: %u is before the clock (%lld); "
				"time never goes back", t,
				(long long)r->clock);
	r->have_clock = true;
	r->clock = t;
	rp_hist_push(r, text);
	return RP_OK;
}

static int
rp_op_fork(struct rp *r, struct rp_line *l, const char *text)
{
	int32_t s, child;
	kv_err e;

	if (rp_npos(r, l, 2) || rp_opts_allowed(r, l, "") ||
	    rp_seq(r, l, 0, &s) || rp_new_name(r, l->pos[1]))
		return RP_BAD;
	e = kvc_fork(r->k, s, &child);
	if (e != KV_OK)
		return rp_kverr(r, l->kw, e);
	if (rp_insert(r, l->pos[1], child) != RP_OK)
		return RP_BAD;
	rp_emit(r, "fork %s %s ok", l->pos[0], l->pos[1]);
	rp_hist_push(r, text);
	return RP_OK;
}

/*
 * `can_allocate S [lookahead=L]` and `can_swap_in S [lookahead=L]`: a
 * three-way verdict, tried on a clone under --check (only a plain
 * can_allocate is checked in reverse: a lookahead is not the action's).
 */
static int
rp_op_can_verdict(struct rp *r, struct rp_line *l, const char *text)
{
	bool in = strcmp(l->kw, "can_swap_in") == 0, has_L, ok;
	uint32_t L = 0, left;
	kvc_verdict v;
	int32_t s;
	kv_err e;
	int rc;

	(void)text;
	if (rp_seq_arg(r, l, "lookahead", &s) ||
	    rp_opt_u32(r, l, "lookahead", &L, &has_L))
		return RP_BAD;
	e = in ? kvc_can_swap_in(r->k, s, L, &v)
	       : kvc_can_allocate(r->k, s, L, &v);
	if (e != KV_OK)
		return rp_kverr(r, l->kw, e);
	rp_emit(r, "%s %s %s", l->kw, l->pos[0], rp_verdict_name[v]);
	if (!r->o->check)
		return RP_OK;
	if ((rc = rp_trial(r, in ? RA_SWAP_IN : RA_ALLOCATE, s, 0,
			   in ? L : 0, &ok, &left)) != RP_OK)
		return rc;
	return rp_check_verdict(r, l->kw, v, ok, left, in || L == 0);
}

/* `allocate S [n=N]` (ok or fail) and `computed S [n=N]`. */
static int
rp_op_count(struct rp *r, struct rp_line *l, const char *text)
{
	bool alloc = strcmp(l->kw, "allocate") == 0, has_n;
	uint32_t n = 0;
	int32_t s;
	kv_err e;

	if (rp_seq_arg(r, l, "n", &s) || rp_opt_u32(r, l, "n", &n, &has_n))
		return RP_BAD;
	if (alloc && has_n && n == 0)
		return rp_error(r, "allocate: n must be at least 1");
	e = alloc ? kvc_allocate(r->k, s, n) : kvc_computed(r->k, s, n, has_n);
	if (e != KV_OK && !(alloc && e == KV_ENOSPC))
		return rp_kverr(r, l->kw, e);
	if (alloc && e == KV_OK && rp_group_fork(r, s) != RP_OK)
		return RP_BAD;
	return rp_outcome(r, l, text, e == KV_OK);
}

/*
 * `append ID tokens=LIST [lookahead=L]`: the tokens and their slots;
 * `append ID tokens=LIST unseen`: the tokens alone (vLLM v0's
 * append_token_id before append_slots; a RUNNING sequence's unseen tokens);
 * `append ID [lookahead=L]`: the slots of the unseen tokens (append_slots).
 */
static int
rp_op_append(struct rp *r, struct rp_line *l, const char *text)
{
	const char *t;
	uint32_t L = 0;
	bool has_L, unseen;
	int32_t s;
	size_t np;
	char *buf;
	kv_err e;

	unseen = l->npos == 2 && strcmp(l->pos[1], "unseen") == 0;
	if (l->npos == 2 && !unseen)
		return rp_error(r, "append: the second word can only be "
				"'unseen', not '%s'", l->pos[1]);
	if (unseen)
		l->npos = 1;
	if (rp_seq_arg(r, l, unseen ? "tokens" : "tokens lookahead", &s) ||
	    rp_opt_u32(r, l, "lookahead", &L, &has_L))
		return RP_BAD;
	t = rp_opt(l, "tokens");
	if (t == NULL && unseen)
		return rp_error(r, "append: unseen needs tokens=");
	if (unseen && r->cfg.mode == KVC_DEEPSPEED)
		return rp_error(r, "append: unseen tokens are not available "
				"in mode deepspeed (its descriptor learns a "
				"sequence's tokens when they are scheduled)");
	if (t == NULL && kvc_seq_state(r->k, s) != KVC_RUNNING)
		return rp_error(r, "append: without tokens= (the slots of the "
				"unseen tokens) the sequence must be RUNNING");
	if (t != NULL && rp_tokens(r, t))
		return RP_BAD;
	if (unseen)
		e = kvc_add_tokens(r->k, s, r->tok, r->ntok);
	else if (t == NULL)
		e = kvc_append_slots(r->k, s, L);
	else
		e = kvc_append(r->k, s, r->tok, r->ntok, L, has_L);
	if (e != KV_OK && e != KV_ENOSPC)
		return rp_kverr(r, l->kw, e);
	if (e != KV_OK) {
		rp_emit(r, "append %s fail", l->pos[0]);
		return RP_OK;
	}
	kvc_pairs(r->k, &np);
	if (np == 0 || unseen) {
		rp_emit(r, "append %s ok", l->pos[0]);
	} else if ((buf = rp_pairs_str(r)) != NULL) {
		rp_emit(r, "append %s ok cow=%s", l->pos[0], buf);
		free(buf);
	}
	rp_hist_push(r, text);
	return RP_OK;
}

static int
rp_op_can_append(struct rp *r, struct rp_line *l, const char *text)
{
	uint32_t n = 0, L = 0, left;
	bool has_n, has_L, yes, ok;
	int32_t s;
	kv_err e;
	int rc;

	(void)text;
	if (rp_seq_arg(r, l, "n lookahead", &s) ||
	    rp_opt_u32(r, l, "n", &n, &has_n) ||
	    rp_opt_u32(r, l, "lookahead", &L, &has_L))
		return RP_BAD;
	e = kvc_can_append(r->k, s, n, has_n, L, &yes);
	if (e != KV_OK)
		return rp_kverr(r, l->kw, e);
	rp_emit(r, "can_append %s %s", l->pos[0], yes ? "yes" : "no");
	if (r->o->check && has_n && n > RP_MAXTOKENS)
		return rp_error(r, "--check: n=%u is more tokens than a trial "
				"append may hold (%u)", n, RP_MAXTOKENS);
	if (!r->o->check)
		return RP_OK;	/* n=0: the trial is append_slots */
	if ((rc = rp_trial(r, RA_APPEND, s, has_n ? n : 1, L, &ok,
			   &left)) != RP_OK)
		return rc;
	return rp_check_bool(r, "can_append", yes, ok);
}

static int
rp_op_can_swap_out(struct rp *r, struct rp_line *l, const char *text)
{
	bool yes, ok;
	uint32_t left;
	int32_t s;
	kv_err e;
	int rc;

	(void)text;
	if (rp_seq_arg(r, l, "", &s))
		return RP_BAD;
	e = kvc_can_swap_out(r->k, s, &yes);
	if (e != KV_OK)
		return rp_kverr(r, l->kw, e);
	rp_emit(r, "can_swap_out %s %s", l->pos[0], yes ? "yes" : "no");
	if (!r->o->check)
		return RP_OK;
	if ((rc = rp_trial(r, RA_SWAP_OUT, s, 0, 0, &ok, &left)) != RP_OK)
		return rc;
	return rp_check_bool(r, "can_swap_out", yes, ok);
}

static int
rp_op_swap(struct rp *r, struct rp_line *l, const char *text)
{
	const char *kw = l->kw;
	bool in = kw[5] == 'i', has_L;
	uint32_t L = 0;
	int32_t s;
	char *buf;
	kv_err e;

	if (rp_seq_arg(r, l, in ? "lookahead" : "", &s) ||
	    rp_opt_u32(r, l, "lookahead", &L, &has_L))
		return RP_BAD;
	e = in ? kvc_swap_in(r->k, s, L) : kvc_swap_out(r->k, s);
	if (e != KV_OK && e != KV_ENOSPC)
		return rp_kverr(r, kw, e);
	if (e != KV_OK) {
		rp_emit(r, "%s %s fail", kw, l->pos[0]);
		return RP_OK;
	}
	if ((buf = rp_pairs_str(r)) != NULL) {
		rp_emit(r, "%s %s ok map=%s", kw, l->pos[0], buf);
		free(buf);
	}
	rp_hist_push(r, text);
	return RP_OK;
}

static int
rp_op_free(struct rp *r, struct rp_line *l, const char *text)
{
	int32_t s;
	kv_err e;

	if (rp_seq_arg(r, l, "", &s))
		return RP_BAD;
	e = kvc_free_seq(r->k, s);
	if (e != KV_OK && e != KV_ENOSPC && e != KV_ESTATE)
		return rp_kverr(r, l->kw, e);
	if (e == KV_ESTATE && kvc_seq_state(r->k, s) != KVC_WAITING)
		return rp_kverr(r, l->kw, e);
	return rp_outcome(r, l, text, e == KV_OK);
}

/* The one positional of `table`/`state`: a sequence, or with a policy a
 * request (its sequence, -1 while it has none). */
int
rp_table_seq(struct rp *r, const struct rp_line *l, int32_t *s)
{
	kvs_req q;

	if (rp_npos(r, l, 1) || rp_opts_allowed(r, l, ""))
		return RP_BAD;
	if (r->s == NULL)
		return rp_seq(r, l, 0, s);
	if (rp_req(r, l, 0, &q))
		return RP_BAD;
	*s = kvs_req_seq(r->s, q);
	return RP_OK;
}

/* `table ID`: a sequence's, or with a policy a request's (R19, R50). */
static int
rp_op_table(struct rp *r, struct rp_line *l, const char *text)
{
	int32_t s;

	(void)text;
	if (rp_table_seq(r, l, &s))
		return RP_BAD;
	rp_table(r, l->pos[0], s);
	return RP_OK;
}

static int
rp_op_cached(struct rp *r, struct rp_line *l, const char *text)
{
	size_t tokens;
	int32_t s;
	kv_err e;

	(void)text;
	if (rp_seq_arg(r, l, "", &s))
		return RP_BAD;
	e = kvc_cached(r->k, s, &tokens);
	if (e != KV_OK)
		return rp_kverr(r, l->kw, e);
	rp_emit(r, "cached %s %zu", l->pos[0], tokens);
	return RP_OK;
}

/* ---- scheduler lines (docs/scheduler.md) ------------------------- */

/* A growing output line (its text cut short, r->nomem set, when memory
 * runs out). */

void
rp_buf_add(struct rp_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *p;

	va_start(ap, fmt);
	n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0,
		      fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (b->p == NULL || b->len + (size_t)n >= b->cap) {
		size_t cap = 2 * (b->len + (size_t)n + 64);

		if ((p = rp_xrealloc(b->r, b->p, cap)) == NULL)
			return;
		b->p = p;
		b->cap = cap;
		va_start(ap, fmt);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

static void
rp_buf_pairs(struct rp_buf *b, const char *key, const struct kvc_pair *p,
	     uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		rp_buf_add(b, "%s%d>%d", i ? "," : key, p[i].src, p[i].dst);
}

static void
rp_buf_reqs(struct rp *r, struct rp_buf *b, const char *key,
	    const kvs_req *q, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		rp_buf_add(b, "%s%s", i ? "," : key, r->reqname[q[i]]);
}

/*
 * `step K sched=ID:n,... preempt=... finish=... swap_out=... swap_in=...
 * cow=...`, empty fields omitted (R54, R69).
 */
static void
rp_step_line(struct rp *r, const struct kvs_step *st)
{
	struct rp_buf b = { r, NULL, 0, 0 };

	rp_buf_add(&b, "step %llu", (unsigned long long)st->number);
	for (uint32_t i = 0; i < st->nsched; i++)
		rp_buf_add(&b, "%s%s:%u", i ? "," : " sched=",
			   r->reqname[st->sched[i].req], st->sched[i].ntokens);
	rp_buf_reqs(r, &b, " preempt=", st->preempt, st->npreempt);
	rp_buf_reqs(r, &b, " finish=", st->finish, st->nfinish);
	rp_buf_reqs(r, &b, " ignored=", st->ignored, st->nignored);
	rp_buf_pairs(&b, " swap_out=", st->swap_out, st->nswap_out);
	rp_buf_pairs(&b, " swap_in=", st->swap_in, st->nswap_in);
	rp_buf_pairs(&b, " cow=", st->cow, st->ncow);
	for (uint32_t i = 0; i < st->nload; i++)
		rp_buf_add(&b, "%s%s:%u", i ? "," : " load=",
			   r->reqname[st->load[i]],
			   kvs_req_ext(r->s, st->load[i]));
	rp_buf_reqs(r, &b, " held=", st->held, st->nheld);
	if (r->off != NULL)
		rp_off_step(r, &b);
	rp_spec_step(r, &b, st);
	rp_emit(r, "%s", b.p);
	free(b.p);
}

/* One step, its line, and under --check the scheduler's invariants. */
static int
rp_one_step(struct rp *r, const struct kvs_step **out)
{
	char why[512];
	kv_err e;

	if (r->o->max_steps != 0 && r->nsteps++ == r->o->max_steps)
		return rp_error(r, "step: past the limit of %llu steps "
				"(--max-steps)",
				(unsigned long long)r->o->max_steps);
	if (r->scfg.spec_tokens > 0) {
		e = kvs_schedule(r->s, NULL);
		if (e == KV_OK && rp_spec_complete(r, out) != RP_OK)
			return RP_BAD;
	} else {
		e = kvs_step(r->s, out);
	}
	if (e != KV_OK)
		return rp_error(r, "step: %s", kvs_errmsg(r->s)[0] ?
				kvs_errmsg(r->s) : kv_strerror(e));
	rp_step_line(r, *out);
	if (r->off != NULL && rp_off_settle(r) != RP_OK)
		return RP_BAD;
	if (r->o->check && kvs_audit(r->s, why, sizeof(why)) != 0)
		return rp_disagree(r, "scheduler invariant broken after step "
				   "%llu: %s",
				   (unsigned long long)(*out)->number, why);
	return RP_OK;
}

/* Remember request q's name (the script's id) for the step lines. */
static int
rp_name_request(struct rp *r, const char *name, kvs_req q)
{
	if (rp_insert(r, name, q) != RP_OK)
		return RP_BAD;
	if ((uint32_t)q >= r->capreqname) {
		uint32_t cap = 2 * (uint32_t)q + 16;
		const char **n = rp_xrealloc(r, r->reqname, cap * sizeof(*n));

		if (n == NULL)
			return RP_BAD;
		r->reqname = n;
		r->capreqname = cap;
	}
	r->reqname[q] = rp_find(r, name)->name;
	return RP_OK;
}

static int
rp_sched_request(struct rp *r, struct rp_line *l, const char *text)
{
	const char *t = rp_opt(l, "tokens"), *o = rp_opt(l, "output");
	const char *pr = rp_opt(l, "priority"), *lo = rp_opt(l, "lora");
	const char *ns = rp_opt(l, "n");
	uint32_t n, p = 0, lora = 0, nsamp = 1;
	kvs_req q;
	kv_err e;

	if (rp_npos(r, l, 1) ||
	    rp_opts_allowed(r, l, "tokens output priority lora n"))
		return RP_BAD;
	if (!rp_valid_seqid(l->pos[0]))
		return rp_error(r, "bad request id '%s'", l->pos[0]);
	if (rp_find(r, l->pos[0]) != NULL)
		return rp_error(r, "request id '%s' already used", l->pos[0]);
	if (t == NULL || o == NULL)
		return rp_error(r, "request: tokens= and output= are required");
	if (rp_tokens(r, t) || rp_u32(r, "output", o, &n))
		return RP_BAD;
	if (n < 1)
		return rp_error(r, "request: output must be at least 1");
	if (pr != NULL) {
		if (kvs_config_of(r->s)->priority != 1)
			return rp_error(r, "request: priority= needs "
					"sched_policy priority");
		if (rp_u32(r, "priority", pr, &p))
			return RP_BAD;
		if (p > INT32_MAX)
			return rp_error(r, "priority: at most %d", INT32_MAX);
	}
	if (lo != NULL && rp_u32(r, "lora", lo, &lora))
		return RP_BAD;
	if (ns != NULL && (rp_u32(r, "n", ns, &nsamp) || nsamp < 1))
		return nsamp < 1 ? rp_error(r, "request: n must be at least "
					    "1") : RP_BAD;
	e = kvs_add(r->s, r->tok, r->ntok, n, (int32_t)p, &q);
	if (e == KV_OK && lora != 0)
		e = kvs_set_lora(r->s, q, lora);
	if (e == KV_OK && nsamp != 1)
		e = kvs_set_n(r->s, q, nsamp);
	if (e != KV_OK)
		return rp_error(r, "request: %s", kvs_errmsg(r->s)[0] ?
				kvs_errmsg(r->s) : kv_strerror(e));
	if (rp_name_request(r, l->pos[0], q) != RP_OK)
		return RP_BAD;
	rp_hist_push(r, text);
	if (kvs_req_status(r->s, q) == KVS_IGNORED)
		rp_emit(r, "request %s rejected", l->pos[0]);
	return RP_OK;
}

/*
 * The operations with a policy (R50), one function each: the scheduler
 * owns the requests.
 */
static int
rp_sched_step(struct rp *r, struct rp_line *l, const char *text)
{
	const struct kvs_step *st;

	if (rp_npos(r, l, 0) || rp_opts_allowed(r, l, ""))
		return RP_BAD;
	rp_hist_push(r, text);
	return rp_one_step(r, &st);
}

/*
 * Whether step st moved the run on: a request finished, was ignored or
 * started a load, or one it scheduled has computed past the furthest it
 * had reached in this run (far[], their sum *sum).  A step that only
 * computes again what a preemption undid does not.
 */
static bool
rp_run_moved(struct rp *r, const struct kvs_step *st, uint32_t *far,
	     uint64_t *sum)
{
	bool moved = st->nfinish > 0 || st->nignored > 0 || st->nload > 0;

	for (uint32_t i = 0; i < st->nsched; i++) {
		kvs_req h = st->sched[i].req;
		int32_t q = kvs_req_seq(r->s, h);
		size_t c;

		if (q < 0)
			continue;
		c = kvc_seq_computed(kvs_kv(r->s), q);
		if (c > far[h]) {
			*sum += c - far[h];
			far[h] = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
			moved = true;
		}
	}
	return moved;
}

static int
rp_sched_run(struct rp *r, struct rp_line *l, const char *text)
{
	const char *v = rp_opt(l, "steps");
	const struct kvs_step *st;
	uint32_t max = 0, *far;
	uint64_t still = 0, sum = 0;
	int rc = RP_OK;

	if (rp_npos(r, l, 0) || rp_opts_allowed(r, l, "steps"))
		return RP_BAD;
	if (v != NULL) {
		if (rp_u32(r, "steps", v, &max))
			return RP_BAD;
		if (max == 0)
			return rp_error(r, "run: steps must be at least 1");
	}
	rp_hist_push(r, text);
	/* without steps=, the furthest each request has computed (no
	 * request is added while the run goes on) */
	far = NULL;
	if (max == 0) {
		if ((far = rp_xrealloc(r, NULL, (size_t)kvs_nreqs(r->s) *
				       sizeof(*far))) == NULL)
			return RP_BAD;
		memset(far, 0, (size_t)kvs_nreqs(r->s) * sizeof(*far));
	}
	for (uint32_t i = 0; kvs_nunfinished(r->s) > 0 &&
	     (max == 0 || i < max); i++) {
		if ((rc = rp_one_step(r, &st)) != RP_OK)
			break;
		if (st->nsched == 0 && st->npreempt == 0 &&
		    st->nfinish == 0 && st->nignored == 0 &&
		    st->nload == 0 && kvs_nunfinished(r->s) > 0) {
			rc = rp_error(r, "run: step %llu made no progress "
				      "with %u requests unfinished; it "
				      "would repeat forever",
				      (unsigned long long)st->number,
				      kvs_nunfinished(r->s));
			break;
		}
		/*
		 * Without steps=, a cycle ends the run too: steps that
		 * only compute again what preemptions undo, more than
		 * twice over the tokens every request has reached (a
		 * request that runs alone and needs more than the pool,
		 * each chunk preempting it: vLLM's engine would spin).
		 */
		if (far != NULL)
			still = rp_run_moved(r, st, far, &sum) ? 0 : still + 1;
		if (far != NULL && kvs_nunfinished(r->s) > 0 &&
		    still > 2 * (sum + kvs_nunfinished(r->s)) + 64) {
			rc = rp_error(r, "run: %llu steps up to step %llu "
				      "finished no request and took none "
				      "past the tokens it had computed "
				      "before, with %u requests unfinished: "
				      "preemptions undo what the steps "
				      "compute, and the run would repeat "
				      "forever (run steps=N makes N steps)",
				      (unsigned long long)still,
				      (unsigned long long)st->number,
				      kvs_nunfinished(r->s));
			break;
		}
		if (r->nomem) {
			rc = RP_BAD;
			break;
		}
	}
	free(far);
	return rc;
}

static int
rp_sched_abort(struct rp *r, struct rp_line *l, const char *text)
{
	kvs_req q;
	kv_err e;

	if (rp_npos(r, l, 1) || rp_opts_allowed(r, l, "") ||
	    rp_req(r, l, 0, &q))
		return RP_BAD;
	e = kvs_abort(r->s, q);
	if (e != KV_OK && e != KV_ESTATE)
		return rp_error(r, "abort: %s", kvs_errmsg(r->s));
	return rp_outcome(r, l, text, e == KV_OK);
}

/* ---- dispatch ----------------------------------------------------- */

typedef int (*rp_op_fn)(struct rp *r, struct rp_line *l, const char *text);

/*
 * Every operation keyword: its function without a policy (kvc, NULL: it
 * needs one) and with one (kvs, NULL: the scheduler owns what it would
 * touch), and whether it names a sequence first (checked before the
 * keyword is looked at further, R12).
 */
static const struct rp_opdef {
	const char *kw;
	rp_op_fn kvc, kvs;
	bool names_seq;
} rp_opdefs[] = {
	{ "seq", rp_op_seq, NULL, false },
	{ "free_blocks", rp_pool_line, rp_pool_line, false },
	{ "audit", rp_pool_line, rp_pool_line, false },
	{ "new_step", rp_op_new_step, NULL, false },
	{ "time", rp_op_time, NULL, false },
	{ "fork", rp_op_fork, NULL, false },
	{ "can_allocate", rp_op_can_verdict, NULL, true },
	{ "allocate", rp_op_count, NULL, true },
	{ "append", rp_op_append, NULL, true },
	{ "can_append", rp_op_can_append, NULL, true },
	{ "computed", rp_op_count, NULL, true },
	{ "can_swap_out", rp_op_can_swap_out, NULL, true },
	{ "can_swap_in", rp_op_can_verdict, NULL, true },
	{ "swap_out", rp_op_swap, NULL, true },
	{ "swap_in", rp_op_swap, NULL, true },
	{ "free", rp_op_free, NULL, true },
	{ "table", rp_op_table, rp_op_table, true },
	{ "cached", rp_op_cached, NULL, true },
	{ "state", rp_op_state, rp_op_state, true },
	{ "evictor", rp_op_evictor, rp_op_evictor, false },
	{ "queue", NULL, rp_op_queue, false },
	{ "request", NULL, rp_sched_request, false },
	{ "step", NULL, rp_sched_step, false },
	{ "run", NULL, rp_sched_run, false },
	{ "abort", NULL, rp_sched_abort, false },
	{ "external", NULL, rp_conn_external, false },
	{ "hold", NULL, rp_conn_hold, false },
	{ "loaded", NULL, rp_conn_loaded, false },
	{ "release", NULL, rp_conn_release, false },
	{ "xfer", NULL, rp_off_xfer, false },
	{ "xfer_done", NULL, rp_off_xfer_done, false },
	{ "offload_state", NULL, rp_off_state, false },
	{ "propose", NULL, rp_spec_propose, false },
	{ "accept", NULL, rp_spec_accept, false },
};

/* One operation line.  `text` is the line as written, for the history. */
static int
rp_op(struct rp *r, struct rp_line *l, const char *text)
{
	const struct rp_opdef *op = NULL;

	for (size_t i = 0; i < sizeof(rp_opdefs) / sizeof(*rp_opdefs); i++)
		if (strcmp(rp_opdefs[i].kw, l->kw) == 0)
			op = &rp_opdefs[i];
	if (r->s != NULL) {
		if (op != NULL && op->kvs == NULL)
			return rp_error(r, "%s is not available with a "
					"policy: the scheduler owns the "
					"requests (request, step, run, abort, "
					"table, free_blocks, audit)", l->kw);
		if (op == NULL)
			return rp_error(r, "unknown keyword '%s'", l->kw);
		return op->kvs(r, l, text);
	}
	kvc_set_time(r->k, r->have_clock ? r->clock : r->line);
	if (op != NULL && op->kvc == NULL)
		return rp_error(r, "%s needs a policy line (scheduler steps, "
				"docs/scheduler.md)", l->kw);
	if ((op == NULL || op->names_seq) && l->npos < 1)
		return rp_error(r, "%s: expected a sequence id", l->kw);
	if (op == NULL)
		return rp_error(r, "unknown keyword '%s'", l->kw);
	return op->kvc(r, l, text);
}

/* Strip the comment and blanks; returns NULL for an empty line. */
static char *
rp_clean(char *s)
{
	char *hash = strchr(s, '#'), *end;

	if (hash != NULL)
		*hash = '\0';
	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' ||
			   end[-1] == '\n' || end[-1] == '\r'))
		*--end = '\0';
	return *s ? s : NULL;
}

static int
rp_expect(struct rp *r, const struct rp_line *l)
{
	if (!r->have_last)
		return (void)rp_error(r, "expect: no output line yet"), RP_FAIL;
	if (strcmp(r->last, l->rest) != 0) {
		fflush(r->out);
		fprintf(r->err, "%s:%ld: expect failed\n  expected: %s\n"
			"  got:      %s\n", r->file, r->line, l->rest,
			r->last);
		return RP_FAIL;
	}
	return RP_OK;
}

static void
rp_release(struct rp *r)
{
	if (r->s != NULL)
		kvs_free(r->s);
	else
		kvc_free(r->k);
	sim_plugin_unload(r->plugin);
	rp_conn_free(r);
	rp_spec_free(r);
	rp_off_free(r);
	free(r->reqname);
	if (r->ids != NULL)
		for (uint32_t i = 0; i <= r->idmask; i++)
			free(r->ids[i].name);
	for (size_t j = 0; j < r->npend; j++)
		free(r->pend[j]);
	free(r->pend);
	free(r->ids);
	free(r->tok);
	free(r->last);
	for (size_t i = 0; i < r->nhist; i++)
		free(r->hist[i]);
	free(r->hist);
	free(r->histline);
}

/*
 * One physical line (got bytes in buf): setup, expect or an operation.
 * *copy keeps the line as written for the --check history.
 */
static int
rp_line_run(struct rp *r, char *buf, ssize_t got, char **copy,
	    bool *ops_started)
{
	struct rp_line l;
	char *s;
	int idx, rc;

	r->line++;
	if (memchr(buf, '\0', (size_t)got) != NULL)
		return rp_error(r, "NUL byte in line");
	s = rp_clean(buf);
	if (s == NULL)
		return RP_OK;
	free(*copy);
	if ((*copy = rp_strdup(r, s)) == NULL)
		return RP_BAD;
	if (rp_split(r, s, &l))
		return RP_BAD;
	idx = rp_setup_index(l.kw);
	if (idx >= 0) {
		if (*ops_started)
			return rp_error(r, "setup line '%s' after the first "
					"operation", l.kw);
		return rp_setup(r, idx, &l);
	}
	if (strcmp(l.kw, "expect") == 0)
		return rp_expect(r, &l);
	*ops_started = true;
	if ((rc = rp_start(r)) != RP_OK)
		return rc;
	return rp_op(r, &l, *copy);
}

kv_err
replay_run(FILE *in, const char *name, FILE *out, FILE *err,
	   const struct replay_opts *o, enum replay_result *res)
{
	struct rp r;
	char *buf = NULL, *copy = NULL;
	size_t cap = 0;
	ssize_t got;
	int rc = RP_OK;
	bool ops_started = false;

	memset(&r, 0, sizeof(r));
	r.file = name;
	r.out = out;
	r.err = err;
	r.o = o;
	r.lastcap = 256;
	r.last = rp_xrealloc(&r, NULL, r.lastcap);
	kvc_config_default(&r.cfg, KVC_EXACT);
	kvs_config_init(&r.scfg);
	/* the scheduler alone, as the references' unit tests build it */
	r.scfg.capacity_check = 0;

	while (!r.nomem && (got = getline(&buf, &cap, in)) != -1)
		if ((rc = rp_line_run(&r, buf, got, &copy, &ops_started)) !=
		    RP_OK)
			break;
	if (rc == RP_OK && !r.nomem && ferror(in))
		rc = rp_error(&r, "read error: %s", strerror(errno));
	if (rc == RP_OK && !r.nomem && !ops_started)
		rc = rp_start(&r);
	free(buf);
	free(copy);
	rp_release(&r);
	fflush(out);
	*res = r.nomem ? REPLAY_BAD : (enum replay_result)rc;
	return r.nomem ? KV_ENOMEM : KV_OK;
}
