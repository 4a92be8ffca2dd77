/*
 * wl_iperf.c -- the request stream of an inference-perf benchmark
 * (workload.kind: inference-perf), read from inference-perf's own
 * config.yaml (docs/workloads.md, section 10).
 *
 * What inference-perf does, and what is built here the same way:
 *
 *  - A stage of rate R and duration D sends exactly int(R x D) requests.
 *    load.type constant: that many exponential gaps of mean 1/R, rescaled
 *    so that they sum to D.  poisson: each second, a Poisson(R) count of
 *    requests spread over the second as a constant stage of that count
 *    and 1 s would, until int(R x D) are sent.  The first request of a
 *    stage goes out one gap after the stage's start plus 1 s (the lead its
 *    load generator leaves to fill the queue).
 *  - A stage waits until every request of the one before has finished
 *    or failed, then load.interval seconds more.  The stream cannot know
 *    when that is: it gives each request its stage and the stream time
 *    its stage starts at (wl_request.stage, stage_ns), and the client in
 *    the run loop shifts each stage when the previous one has drained.
 *  - A request fails when it has not finished load.request_timeout
 *    seconds after it was sent; when that is null, inference-perf's
 *    aiohttp session keeps aiohttp's default total timeout, 300 s.
 *  - data.type shared_prefix: num_groups x num_prompts_per_group prompts,
 *    prompt (g, p) = group g's system prompt (system_prompt_len tokens,
 *    the same for the whole group) then its own question (question_len
 *    tokens), shuffled once.  Request k of a stage (k from 0 in each
 *    stage) sends prompt k mod (groups x prompts) of the shuffled list,
 *    with max_tokens output_len and ignore_eos: every output is exactly
 *    output_len tokens.
 *
 * Keys inference-perf knows but kvsim cannot honour (another data type,
 * multi-turn chat, length distributions, a sweep, trace replay) are
 * errors with FILE:LINE:COL.  Keys inference-perf itself ignores (its
 * pydantic models drop unknown keys) are ignored here too, with a
 * warning through wl_info.
 */
#include "config.h"

#include "util/ydoc.h"
#include "workloads/wl_int.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Namespaces of the keys derived here (wl_int.h keeps the others). */
#define IP_NS_SYS	0x49505359u	/* group system prompts */
#define IP_NS_Q		0x495051u	/* questions */
#define IP_NS_PERM	0x49505045u	/* the shuffle's RNG stream */
#define IP_NS_STAGE	0x49505354u	/* each stage's RNG stream */

struct ip_stage {
	double rate, duration;
};

struct ip_cfg {
	bool poisson;
	double interval_s;
	double timeout_s;
	struct ip_stage *st;
	size_t nst;
	uint32_t groups, per_group, sys_len, q_len, out_len;
};

struct ip {
	struct wl_stage base;
	struct ip_cfg c;
	uint64_t seed;
	const char *file;
	uint32_t *perm;		/* the shuffled prompt order */
	uint32_t nprompts;
	struct wl_seg segs[2];
	/* the stage being sent */
	size_t stage;
	uint64_t n, k;		/* its requests, sent so far */
	int64_t start_ns;	/* its start (stream time) */
	int64_t last_ns;	/* the last arrival sent */
	gsl_rng *rng;
	double t;		/* seconds since the stage's start */
	double scale;		/* constant: D / sum of the gaps */
	/* poisson: the current second's gaps */
	double *gaps;
	size_t ngaps, gi, gcap;
};

/* Parsing ----------------------------------------------------------------- */

struct ipx {
	const char *file;
	struct wl_stream *p;
	struct ip_cfg *c;
};

static wl_err
ipfail(struct ipx *x, const struct yd_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static wl_err
ipfail(struct ipx *x, const struct yd_node *n, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return wl__fail(x->p, WL_ECONFIG, x->file, n ? n->line : 0,
	    n ? (uint32_t)n->col : 0, "%s", what);
}

/* A key inference-perf ignores: a warning (the first kept, all counted). */
static void
ipwarn(struct ipx *x, const struct yd_node *kn, const char *where)
{
	struct wl_info *in = &x->p->info;

	if (in->nwarnings++ == 0)
		snprintf(in->warning, sizeof(in->warning), "%s:%lu:%lu: "
		    "key '%s' in %s: inference-perf does not read it; "
		    "ignored, as inference-perf does", x->file, kn->line,
		    kn->col, kn->str ? kn->str : "?", where);
}

static const char *
ipstr(const struct yd_node *n)
{
	return n != NULL && n->type == YD_SCALAR ? n->str : NULL;
}

static bool
ipnull(const struct yd_node *n)
{
	return n->type == YD_SCALAR && yd_is_null(n);
}

static wl_err
ipnum(struct ipx *x, const struct yd_node *n, const char *key, double lo,
    double *out)
{
	const char *s = ipstr(n);
	char *end;
	double v;

	if (n->type == YD_MAP)
		return ipfail(x, n, "%s: a distribution is not supported by "
		    "kvsim (a number is)", key);
	if (s == NULL || *s == '\0')
		return ipfail(x, n, "%s: expected a number", key);
	v = strtod(s, &end);
	if (*end != '\0' || !isfinite(v) || !(v >= lo))
		return ipfail(x, n, "%s: expected a number >= %g, found '%s'",
		    key, lo, s);
	*out = v;
	return WL_OK;
}

static wl_err
ipu32(struct ipx *x, const struct yd_node *n, const char *key, uint32_t *out)
{
	double v;
	wl_err rc = ipnum(x, n, key, 0, &v);

	if (rc != WL_OK)
		return rc;
	if (v != floor(v) || v > (double)(1u << 30))
		return ipfail(x, n, "%s: expected a whole number of at most "
		    "2^30 (a distribution of lengths is not supported)", key);
	*out = (uint32_t)v;
	return WL_OK;
}

static bool
ipin(const char *k, const char *const *names)
{
	for (size_t i = 0; names[i] != NULL; i++)
		if (strcmp(k, names[i]) == 0)
			return true;
	return false;
}

/* A key whose value must be null (or false, or an empty list) here. */
static wl_err
ipoff(struct ipx *x, const struct yd_node *vn, const char *key,
    const char *what)
{
	const char *s = ipstr(vn);

	if (ipnull(vn) || (s != NULL && (strcmp(s, "false") == 0 ||
	    strcmp(s, "False") == 0)) || (vn->type == YD_SEQ && vn->n == 0))
		return WL_OK;
	return ipfail(x, vn, "%s: %s is not supported by kvsim", key, what);
}

static wl_err
ip_shared(struct ipx *x, const struct yd_node *n)
{
	static const char *const ignored[] = { "seed", NULL };
	const struct yd_node *kn, *vn;
	struct ip_cfg *c = x->c;
	wl_err rc = WL_OK;

	if (n->type != YD_MAP)
		return ipfail(x, n, "data.shared_prefix: expected a mapping");
	for (size_t i = 0; i < n->n && rc == WL_OK; i++) {
		const char *k;

		kn = n->kid[2 * i];
		vn = n->kid[2 * i + 1];
		k = ipstr(kn) ? ipstr(kn) : "";
		if (strcmp(k, "num_groups") == 0 ||
		    strcmp(k, "num_unique_system_prompts") == 0)
			rc = ipu32(x, vn, k, &c->groups);
		else if (strcmp(k, "num_prompts_per_group") == 0 ||
		    strcmp(k, "num_users_per_system_prompt") == 0)
			rc = ipu32(x, vn, k, &c->per_group);
		else if (strcmp(k, "system_prompt_len") == 0)
			rc = ipu32(x, vn, k, &c->sys_len);
		else if (strcmp(k, "question_len") == 0)
			rc = ipu32(x, vn, k, &c->q_len);
		else if (strcmp(k, "output_len") == 0)
			rc = ipu32(x, vn, k, &c->out_len);
		else if (strcmp(k, "enable_multi_turn_chat") == 0)
			rc = ipoff(x, vn, k, "multi-turn chat");
		else if (strcmp(k, "question_distribution") == 0 ||
		    strcmp(k, "output_distribution") == 0)
			rc = ipoff(x, vn, k, "a length distribution");
		else if (!ipin(k, ignored))
			ipwarn(x, kn, "data.shared_prefix");
	}
	if (rc == WL_OK && (c->groups == 0 || c->per_group == 0))
		rc = ipfail(x, n, "data.shared_prefix: num_groups and "
		    "num_prompts_per_group must be >= 1");
	if (rc == WL_OK && c->sys_len + c->q_len == 0)
		rc = ipfail(x, n, "data.shared_prefix: system_prompt_len + "
		    "question_len must be >= 1");
	if (rc == WL_OK && c->out_len == 0)
		rc = ipfail(x, n, "data.shared_prefix: output_len must be "
		    ">= 1");
	return rc;
}

static wl_err
ip_data(struct ipx *x, const struct yd_node *n)
{
	static const char *const ignored[] = { "path", "input_distribution",
		"output_distribution", NULL };
	const struct yd_node *kn, *vn, *sp = NULL;
	const char *type = NULL;
	wl_err rc = WL_OK;

	if (n->type != YD_MAP)
		return ipfail(x, n, "data: expected a mapping");
	for (size_t i = 0; i < n->n && rc == WL_OK; i++) {
		const char *k;

		kn = n->kid[2 * i];
		vn = n->kid[2 * i + 1];
		k = ipstr(kn) ? ipstr(kn) : "";
		if (strcmp(k, "type") == 0) {
			type = ipstr(vn);
			if (type == NULL || strcmp(type, "shared_prefix") != 0)
				rc = ipfail(x, vn, "data.type: kvsim reads "
				    "shared_prefix only, found '%s'",
				    type ? type : "(not a scalar)");
		} else if (strcmp(k, "shared_prefix") == 0) {
			sp = vn;
		} else if (strcmp(k, "trace") == 0) {
			rc = ipoff(x, vn, k, "a trace");
		} else if (!ipin(k, ignored)) {
			ipwarn(x, kn, "data");
		}
	}
	if (rc != WL_OK)
		return rc;
	if (type == NULL)
		return ipfail(x, n, "data: type missing (kvsim reads "
		    "shared_prefix)");
	if (sp == NULL || ipnull(sp))
		return ipfail(x, n, "data: shared_prefix missing");
	return ip_shared(x, sp);
}

static wl_err
ip_stages(struct ipx *x, const struct yd_node *n)
{
	struct ip_cfg *c = x->c;

	if (n->type != YD_SEQ || n->n == 0)
		return ipfail(x, n, "load.stages: expected a list of stages");
	c->st = calloc(n->n, sizeof(*c->st));
	if (c->st == NULL)
		return wl__fail(x->p, WL_ENOMEM, NULL, 0, 0, "out of memory");
	c->nst = n->n;
	for (size_t i = 0; i < n->n; i++) {
		const struct yd_node *s = n->kid[i], *r, *d;
		wl_err rc;

		if (s->type != YD_MAP)
			return ipfail(x, s, "load.stages: expected a mapping "
			    "of rate and duration");
		r = yd_get(s, "rate");
		d = yd_get(s, "duration");
		if (r == NULL || d == NULL)
			return ipfail(x, s, "load.stages: a stage needs rate "
			    "and duration");
		for (size_t j = 0; j < s->n; j++) {
			const char *k = ipstr(s->kid[2 * j]);

			if (k == NULL || (strcmp(k, "rate") != 0 &&
			    strcmp(k, "duration") != 0))
				ipwarn(x, s->kid[2 * j], "load.stages");
		}
		if ((rc = ipnum(x, r, "rate", 0, &c->st[i].rate)) != WL_OK ||
		    (rc = ipnum(x, d, "duration", 0, &c->st[i].duration)) !=
		    WL_OK)
			return rc;
		if (!(c->st[i].rate > 0) || !(c->st[i].duration > 0) ||
		    c->st[i].rate * c->st[i].duration > 1e9)
			return ipfail(x, s, "load.stages: rate and duration "
			    "must be > 0, at most 1e9 requests a stage");
	}
	return WL_OK;
}

static wl_err
ip_load_key(struct ipx *x, const char *k, const struct yd_node *vn,
    bool *known)
{
	struct ip_cfg *c = x->c;
	const char *s = ipstr(vn);

	*known = true;
	if (strcmp(k, "type") == 0) {
		if (s != NULL && strcmp(s, "constant") == 0)
			c->poisson = false;
		else if (s != NULL && strcmp(s, "poisson") == 0)
			c->poisson = true;
		else
			return ipfail(x, vn, "load.type: kvsim reads constant "
			    "and poisson, found '%s'", s ? s : "(not a "
			    "scalar)");
		return WL_OK;
	}
	if (strcmp(k, "interval") == 0)
		return ipnum(x, vn, k, 0, &c->interval_s);
	if (strcmp(k, "stages") == 0)
		return ip_stages(x, vn);
	if (strcmp(k, "request_timeout") == 0)
		return ipnull(vn) ? WL_OK : ipnum(x, vn, k, 0, &c->timeout_s);
	if (strcmp(k, "sweep") == 0)
		return ipoff(x, vn, k, "a sweep");
	if (strcmp(k, "trace") == 0)
		return ipoff(x, vn, k, "trace replay");
	if (strcmp(k, "lora_traffic_split") == 0)
		return ipoff(x, vn, k, "LoRA traffic");
	if (strcmp(k, "circuit_breakers") == 0)
		return ipoff(x, vn, k, "a circuit breaker");
	*known = false;
	return WL_OK;
}

static wl_err
ip_load(struct ipx *x, const struct yd_node *n)
{
	/* the client's own capacity (processes, connections) and seed */
	static const char *const ignored[] = { "num_workers",
		"worker_max_concurrency", "worker_max_tcp_connections",
		"base_seed", NULL };
	wl_err rc = WL_OK;

	if (n->type != YD_MAP)
		return ipfail(x, n, "load: expected a mapping");
	x->c->interval_s = 1.0;		/* inference-perf's default */
	/* request_timeout null: its HTTP session keeps aiohttp's own
	 * default, a 300 s total timeout a request */
	x->c->timeout_s = 300.0;
	for (size_t i = 0; i < n->n && rc == WL_OK; i++) {
		const struct yd_node *kn = n->kid[2 * i];
		const char *k = ipstr(kn) ? ipstr(kn) : "";
		bool known;

		rc = ip_load_key(x, k, n->kid[2 * i + 1], &known);
		if (rc == WL_OK && !known && !ipin(k, ignored))
			ipwarn(x, kn, "load");
	}
	if (rc == WL_OK && x->c->nst == 0)
		rc = ipfail(x, n, "load: stages missing");
	return rc;
}

static wl_err
ip_parse(struct ipx *x, const struct yd_node *root)
{
	/* sections that do not shape the load */
	static const char *const ignored[] = { "api", "metrics", "report",
		"storage", "server", "tokenizer", "circuit_breakers", NULL };
	const struct yd_node *d = NULL, *l = NULL;
	wl_err rc;

	if (root == NULL || root->type != YD_MAP)
		return ipfail(x, root, "expected inference-perf's config, a "
		    "mapping with data and load");
	for (size_t i = 0; i < root->n; i++) {
		const struct yd_node *kn = root->kid[2 * i];
		const char *k = ipstr(kn) ? ipstr(kn) : "";

		if (strcmp(k, "data") == 0)
			d = root->kid[2 * i + 1];
		else if (strcmp(k, "load") == 0)
			l = root->kid[2 * i + 1];
		else if (!ipin(k, ignored))
			ipwarn(x, kn, "the top level");
	}
	if (d == NULL || l == NULL)
		return ipfail(x, root, "inference-perf config: data and load "
		    "are needed");
	if ((rc = ip_data(x, d)) != WL_OK)
		return rc;
	return ip_load(x, l);
}

static wl_err
ip_read(struct wl_stream *p, const char *path, struct ip_cfg *c)
{
	struct yd_doc doc;
	char msg[1024];
	struct ipx x;
	wl_err rc;
	kv_err e;

	memset(&x, 0, sizeof(x));
	x.file = path;
	x.p = p;
	x.c = c;
	e = yd_read_path(&doc, path, YD_LOADER, msg, sizeof(msg));
	if (e == KV_ENOMEM)
		return wl__fail(p, WL_ENOMEM, NULL, 0, 0, "out of memory");
	if (e != KV_OK)
		return wl__fail(p, e == KV_ENOENT ? WL_EIO : WL_ECONFIG, path,
		    doc.err_line, (uint32_t)doc.err_col, "%s",
		    e == KV_ENOENT ? "cannot open the inference-perf config" :
		    msg + doc.err_what);
	rc = ip_parse(&x, doc.root);
	yd_release(&doc);
	return rc;
}

/* The stream ------------------------------------------------------------- */

/* Start stage s: its RNG, its request count, its start in stream time. */
static wl_err
ip_stage_begin(struct ip *ip, size_t s)
{
	const struct ip_stage *st = &ip->c.st[s];

	ip->stage = s;
	ip->n = (uint64_t)(st->rate * st->duration);
	ip->k = 0;
	ip->t = 1.0;	/* the load generator's lead */
	ip->start_ns = ip->last_ns;
	ip->ngaps = ip->gi = 0;
	if (ip->rng != NULL)
		gsl_rng_free(ip->rng);
	ip->rng = wl__rng_new(ip->seed, wl_mix(IP_NS_STAGE, s));
	if (ip->rng == NULL)
		return wl__fail(ip->base.p, WL_ENOMEM, NULL, 0, 0,
		    "out of memory");
	if (!ip->c.poisson && ip->n > 0) {
		/* two passes over the same gaps: their sum, then each */
		gsl_rng *r = wl__rng_new(ip->seed, wl_mix(IP_NS_STAGE, s));
		double sum = 0;

		if (r == NULL)
			return wl__fail(ip->base.p, WL_ENOMEM, NULL, 0, 0,
			    "out of memory");
		for (uint64_t i = 0; i < ip->n; i++)
			sum += gsl_ran_exponential(r, 1.0 / st->rate);
		gsl_rng_free(r);
		ip->scale = sum > 0 ? st->duration / sum : 0;
	}
	return WL_OK;
}

/* The next gap of a poisson stage: a new second's gaps when these end. */
static wl_err
ip_poisson_gap(struct ip *ip, double *gap)
{
	double wait = 0, sum = 0;
	unsigned int c;

	while (ip->gi == ip->ngaps) {
		c = gsl_ran_poisson(ip->rng, ip->c.st[ip->stage].rate);
		if (c == 0) {
			wait += 1.0;
			continue;
		}
		if (!wl__grow((void **)&ip->gaps, &ip->gcap, c,
		    sizeof(*ip->gaps)))
			return wl__fail(ip->base.p, WL_ENOMEM, NULL, 0, 0,
			    "out of memory");
		for (unsigned int i = 0; i < c; i++)
			sum += ip->gaps[i] = gsl_ran_exponential(ip->rng,
			    1.0 / c);
		for (unsigned int i = 0; i < c; i++)
			ip->gaps[i] /= sum;
		ip->ngaps = c;
		ip->gi = 0;
	}
	*gap = wait + ip->gaps[ip->gi++];
	return WL_OK;
}

static wl_err
ip_next(struct wl_stage *st, struct wl_request *r)
{
	struct ip *ip = (struct ip *)st;
	uint32_t pi, g;
	double gap = 0;
	wl_err rc;

	while (ip->k == ip->n) {
		if (ip->stage + 1 >= ip->c.nst)
			return WL_END;
		if ((rc = ip_stage_begin(ip, ip->stage + 1)) != WL_OK)
			return rc;
	}
	if (ip->c.poisson) {
		if ((rc = ip_poisson_gap(ip, &gap)) != WL_OK)
			return rc;
	} else {
		gap = gsl_ran_exponential(ip->rng, 1.0 /
		    ip->c.st[ip->stage].rate) * ip->scale;
	}
	ip->t += gap;
	pi = ip->perm[ip->k % ip->nprompts];
	g = pi / ip->c.per_group;
	memset(r, 0, sizeof(*r));
	r->arrival_ns = ip->start_ns + (int64_t)llround(ip->t * 1e9);
	if (r->arrival_ns < ip->last_ns)
		r->arrival_ns = ip->last_ns;
	ip->last_ns = r->arrival_ns;
	r->nsegs = 0;
	if (ip->c.sys_len > 0) {
		ip->segs[r->nsegs].key = wl_mix(wl_mix(ip->seed, IP_NS_SYS), g);
		ip->segs[r->nsegs++].len = ip->c.sys_len;
	}
	if (ip->c.q_len > 0) {
		ip->segs[r->nsegs].key = wl_mix(wl_mix(ip->seed, IP_NS_Q), pi);
		ip->segs[r->nsegs++].len = ip->c.q_len;
	}
	r->segs = ip->segs;
	r->prompt_tokens = ip->c.sys_len + ip->c.q_len;
	r->output_tokens = ip->c.out_len;
	r->n = 1;
	r->out_key = wl_mix(wl_mix(wl_mix(ip->seed, WL_NS_OUT), ip->stage),
	    ip->k);
	r->stage = (uint32_t)ip->stage;
	r->stage_ns = ip->start_ns;
	ip->k++;
	ip->base.p->cnt.rows++;
	return WL_OK;
}

static void
ip_free(struct wl_stage *st)
{
	struct ip *ip = (struct ip *)st;

	if (ip->rng != NULL)
		gsl_rng_free(ip->rng);
	free(ip->c.st);
	free(ip->perm);
	free(ip->gaps);
	free(ip);
}

static int
ip_check(const struct wl_stage *st)
{
	const struct ip *ip = (const struct ip *)st;

	return ip->k <= ip->n && st->nout >= ip->k ? 0 : WL_CHECK_GEN;
}

static const struct wl_stage_ops ip_ops = { ip_next, ip_free, ip_check };

/* The shuffled prompt order (inference-perf shuffles its list once). */
static wl_err
ip_shuffle(struct ip *ip)
{
	gsl_rng *r;

	ip->nprompts = ip->c.groups * ip->c.per_group;
	ip->perm = malloc((size_t)ip->nprompts * sizeof(*ip->perm));
	r = wl__rng_new(ip->seed, IP_NS_PERM);
	if (ip->perm == NULL || r == NULL) {
		if (r != NULL)
			gsl_rng_free(r);
		return wl__fail(ip->base.p, WL_ENOMEM, NULL, 0, 0,
		    "out of memory");
	}
	for (uint32_t i = 0; i < ip->nprompts; i++)
		ip->perm[i] = i;
	for (uint32_t i = ip->nprompts; i > 1; i--) {
		uint32_t j = (uint32_t)gsl_rng_uniform_int(r, i), t;

		t = ip->perm[i - 1];
		ip->perm[i - 1] = ip->perm[j];
		ip->perm[j] = t;
	}
	gsl_rng_free(r);
	return WL_OK;
}

wl_err
wl__iperf_open(struct wl_stream *p, const struct wl_config *c,
    struct wl_stage **out)
{
	struct ip *ip = calloc(1, sizeof(*ip));
	wl_err rc;

	if (ip == NULL)
		return wl__fail(p, WL_ENOMEM, NULL, 0, 0, "out of memory");
	ip->base.ops = &ip_ops;
	ip->base.p = p;
	ip->seed = c->seed;
	ip->file = c->ip_config;
	p->info.nwarnings = 0;
	p->info.warning[0] = '\0';
	rc = ip_read(p, c->ip_config, &ip->c);
	if (rc == WL_OK && (uint64_t)ip->c.groups * ip->c.per_group >
	    (1u << 24))
		rc = wl__fail(p, WL_ECONFIG, c->ip_config, 0, 0,
		    "data.shared_prefix: at most 2^24 prompts");
	if (rc == WL_OK)
		rc = ip_shuffle(ip);
	if (rc == WL_OK)
		rc = ip_stage_begin(ip, 0);
	if (rc != WL_OK) {
		ip_free(&ip->base);
		return rc;
	}
	p->info.format = "inference-perf";
	p->info.stages_drain = true;
	p->info.stage_gap_ns = (int64_t)llround(ip->c.interval_s * 1e9);
	p->info.ip_timeout_s = ip->c.timeout_s;
	p->info.nstages = (uint32_t)ip->c.nst;
	*out = &ip->base;
	return WL_OK;
}
