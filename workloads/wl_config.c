/*
 * wl_config.c -- the workload configuration: defaults, checks, copies, and
 * the YAML `workload:` section, read and written back (keys and defaults:
 * docs/workloads.md).
 *
 * The YAML reader is strict: an unknown key, a value of the wrong type or
 * out of range is an error carrying the node's FILE:LINE:COL, so a typo
 * never silently falls back to a default.
 */
#include "config.h"

#include "workloads/wl_int.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/ydoc.h"

#define LEN_MAX ((int64_t)INT32_MAX)

static void
dist_fixed(struct wl_dist *d, double v, int64_t min, int64_t max)
{
	memset(d, 0, sizeof(*d));
	d->kind = WL_DIST_FIXED;
	d->value = v;
	d->min = min;
	d->max = max;
	d->s = 1.0;
}

void
wl_config_init(struct wl_config *c)
{
	struct wl_gen_config *g = &c->gen;

	memset(c, 0, sizeof(*c));
	c->format = WL_FMT_AUTO;
	c->on_error = WL_ON_ERROR_STOP;
	c->order = WL_ORDER_ERROR;
	c->sort_window = 4096;
	c->hash_block_tokens = 512;
	c->seed = 0;
	c->vocab_size = 32000;
	c->time_scale = 1.0;
	c->tile_copies = 1;
	g->requests = 1000;
	g->arrival.kind = WL_ARR_POISSON;
	g->arrival.rate = 1.0;
	g->arrival.cv = 1.0;
	g->arrival.on_s = 10.0;
	g->arrival.off_s = 10.0;
	dist_fixed(&g->prompt, 512, 1, LEN_MAX);
	dist_fixed(&g->output, 128, 1, LEN_MAX);
	dist_fixed(&g->priority, 0, INT32_MIN, INT32_MAX);
	dist_fixed(&g->n, 1, 1, 65536);
	g->lengths_format = WL_FMT_AUTO;
	g->system_zipf_s = 1.0;
	dist_fixed(&g->system_len, 256, 1, LEN_MAX);
	g->system_fraction = 1.0;
	dist_fixed(&g->turns, 1, 1, 1 << 20);
	g->think_s = 5.0;
	g->lora_zipf_s = 1.1;
	g->lora_fraction = 1.0;
}

static void
dist_release(struct wl_dist *d)
{
	free(d->values);
	free(d->weights);
	d->values = d->weights = NULL;
	d->nvalues = 0;
}

void
wl_config_release(struct wl_config *c)
{
	struct wl_gen_config *g = &c->gen;

	free(c->trace);
	c->trace = NULL;
	free(c->ip_config);
	c->ip_config = NULL;
	free(c->lora_names);
	c->lora_names = NULL;
	free(g->lengths_trace);
	g->lengths_trace = NULL;
	free(g->arrival.segs);
	g->arrival.segs = NULL;
	g->arrival.nsegs = 0;
	dist_release(&g->prompt);
	dist_release(&g->output);
	dist_release(&g->priority);
	dist_release(&g->n);
	dist_release(&g->system_len);
	dist_release(&g->turns);
}

static bool
dup_array(double **dst, const double *src, size_t n)
{
	*dst = NULL;
	if (src == NULL || n == 0)
		return true;
	*dst = malloc(n * sizeof(**dst));
	if (*dst == NULL)
		return false;
	memcpy(*dst, src, n * sizeof(**dst));
	return true;
}

static bool
dist_copy(struct wl_dist *d, const struct wl_dist *s)
{
	*d = *s;
	d->values = d->weights = NULL;
	return dup_array(&d->values, s->values, s->nvalues) &&
	    dup_array(&d->weights, s->weights, s->nvalues);
}

static bool
dup_str(char **dst, const char *src)
{
	*dst = NULL;
	if (src == NULL)
		return true;
	*dst = strdup(src);
	return *dst != NULL;
}

wl_err
wl_config_copy(struct wl_config *d, const struct wl_config *s)
{
	const struct wl_gen_config *sg = &s->gen;
	struct wl_gen_config *dg = &d->gen;
	bool ok;

	*d = *s;
	d->trace = NULL;
	d->ip_config = NULL;
	d->lora_names = NULL;
	dg->lengths_trace = NULL;
	dg->arrival.segs = NULL;
	dg->prompt.values = dg->prompt.weights = NULL;
	dg->output.values = dg->output.weights = NULL;
	dg->priority.values = dg->priority.weights = NULL;
	dg->n.values = dg->n.weights = NULL;
	dg->system_len.values = dg->system_len.weights = NULL;
	dg->turns.values = dg->turns.weights = NULL;
	ok = dup_str(&d->trace, s->trace) &&
	    dup_str(&d->ip_config, s->ip_config) &&
	    dup_str(&d->lora_names, s->lora_names) &&
	    dup_str(&dg->lengths_trace, sg->lengths_trace) &&
	    dist_copy(&dg->prompt, &sg->prompt) &&
	    dist_copy(&dg->output, &sg->output) &&
	    dist_copy(&dg->priority, &sg->priority) &&
	    dist_copy(&dg->n, &sg->n) &&
	    dist_copy(&dg->system_len, &sg->system_len) &&
	    dist_copy(&dg->turns, &sg->turns);
	if (ok && sg->arrival.segs != NULL && sg->arrival.nsegs > 0) {
		dg->arrival.segs = malloc(sg->arrival.nsegs *
		    sizeof(*dg->arrival.segs));
		ok = dg->arrival.segs != NULL;
		if (ok)
			memcpy(dg->arrival.segs, sg->arrival.segs,
			    sg->arrival.nsegs * sizeof(*dg->arrival.segs));
	}
	if (!ok) {
		wl_config_release(d);
		return WL_ENOMEM;
	}
	return WL_OK;
}

static wl_err
cfail(struct wl_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static wl_err
cfail(struct wl_error *err, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL) {
		wl_error_clear(err);
		va_start(ap, fmt);
		vsnprintf(err->what, sizeof(err->what), fmt, ap);
		va_end(ap);
	}
	return WL_ECONFIG;
}

wl_err wl__config_check(const struct wl_config *c, struct wl_error *err);

/*
 * The requests a generator bounded by its duration alone starts, about:
 * its arrival process's mean rate over duration_s (a session is one
 * request at least); a schedule that does not repeat, its pieces up to
 * duration_s (all of them without one).
 */
static double
gen_expected(const struct wl_gen_config *g)
{
	const struct wl_arrival *a = &g->arrival;
	double n = 0, t = 0;

	switch (a->kind) {
	case WL_ARR_ONOFF:
		return (a->rate * a->on_s + a->off_rate * a->off_s) /
		    (a->on_s + a->off_s) * g->duration_s;
	case WL_ARR_SCHEDULE:
		for (size_t i = 0; i < a->nsegs; i++) {
			double d = a->segs[i].duration_s;

			if (!a->repeat && g->duration_s > 0)
				d = fmin(d, fmax(g->duration_s - t, 0));
			n += a->segs[i].rate * d;
			t += a->segs[i].duration_s;
		}
		return a->repeat ? n / t * g->duration_s : n;
	default:
		return a->rate * g->duration_s;
	}
}

wl_err
wl__config_check(const struct wl_config *c, struct wl_error *err)
{
	const struct wl_gen_config *g = &c->gen;
	const struct wl_arrival *a = &g->arrival;
	const double horizon_s = (double)WL_HORIZON_NS / 1e9;
	double n;

	if (c->vocab_size < 1)
		return cfail(err, "workload.vocab_size must be >= 1");
	if (c->trace == NULL && c->dataset.kind == WL_DS_SHAREGPT &&
	    g->lengths_trace == NULL)
		return cfail(err, "workload.dataset: sharegpt needs path (the "
		    "ShareGPT JSON file, vLLM's --dataset-path)");
	if (c->hash_block_tokens < 1)
		return cfail(err, "workload.hash_block_tokens must be >= 1");
	if (c->sort_window < 1)
		return cfail(err, "workload.sort_window must be >= 1");
	if (!(c->time_scale > 0) || !isfinite(c->time_scale))
		return cfail(err, "workload.time_scale must be > 0");
	if (!(c->target_rate >= 0) || !isfinite(c->target_rate))
		return cfail(err, "workload.target_rate must be >= 0");
	if (!(c->spread_bursts >= 0 && c->spread_bursts <= 1))
		return cfail(err, "workload.spread_bursts must be in [0, 1]");
	if (!(c->window_start_s >= 0) || !(c->window_end_s >= 0) ||
	    (c->window_end_s > 0 && c->window_end_s <= c->window_start_s))
		return cfail(err, "workload.window: need 0 <= start_s < end_s");
	if (c->tile_copies < 1)
		return cfail(err, "workload.tile.copies must be >= 1");
	if (!(c->tile_period_s >= 0))
		return cfail(err, "workload.tile.period_s must be >= 0");
	if (c->window_start_s > horizon_s || c->window_end_s > horizon_s ||
	    c->tile_period_s > horizon_s)
		return cfail(err, "workload.window and tile.period_s must be "
		    "at most 1e9 s (the 31.7-year horizon of simulated time)");
	if (c->kind == WL_KIND_IPERF && c->ip_config == NULL)
		return cfail(err, "workload.kind: inference-perf needs "
		    "workload.config (inference-perf's config.yaml)");
	if (c->kind == WL_KIND_IPERF && (c->trace != NULL ||
	    c->time_scale != 1.0 || c->target_rate > 0 ||
	    c->spread_bursts > 0 || c->tile_copies > 1))
		return cfail(err, "workload.kind: inference-perf takes its "
		    "load from its config: trace, time_scale, target_rate, "
		    "spread_bursts and tile do not apply");
	if (!(c->timeout_s >= 0) || !isfinite(c->timeout_s))
		return cfail(err, "workload.timeout_s must be >= 0");
	if (c->trace != NULL && strcmp(c->trace, "-") == 0 &&
	    (c->tile_copies > 1 || c->target_rate > 0))
		return cfail(err, "workload: tiling and target_rate read the "
		    "trace more than once; standard input cannot be reread");
	if (c->trace != NULL)
		return WL_OK;
	switch (a->kind) {
	case WL_ARR_GAMMA:
		if (!(a->cv > 0) || !isfinite(a->cv))
			return cfail(err, "workload.generator.arrival.cv must "
			    "be > 0");
		/* FALLTHROUGH */
	case WL_ARR_POISSON:
	case WL_ARR_CONSTANT:
		if (!(a->rate > 0) || !isfinite(a->rate))
			return cfail(err, "workload.generator.arrival.rate "
			    "must be > 0");
		break;
	case WL_ARR_ONOFF:
		if (!(a->rate > 0) || !isfinite(a->rate) ||
		    !(a->off_rate >= 0) || !isfinite(a->off_rate) ||
		    !(a->on_s > 0) || !(a->off_s >= 0))
			return cfail(err, "workload.generator.arrival: onoff "
			    "needs rate > 0, on_s > 0, off_s >= 0, "
			    "off_rate >= 0");
		break;
	case WL_ARR_SCHEDULE: {
		bool any = false;

		if (a->nsegs == 0)
			return cfail(err, "workload.generator.arrival: "
			    "schedule needs segments");
		for (size_t i = 0; i < a->nsegs; i++) {
			if (!(a->segs[i].duration_s > 0) ||
			    !isfinite(a->segs[i].duration_s) ||
			    !(a->segs[i].rate >= 0) ||
			    !isfinite(a->segs[i].rate))
				return cfail(err, "workload.generator.arrival."
				    "segments[%zu]: need duration_s > 0 and "
				    "rate >= 0", i);
			any |= a->segs[i].rate > 0;
		}
		if (!any)
			return cfail(err, "workload.generator.arrival: every "
			    "segment has rate 0");
		break;
	}
	}
	if (g->requests == 0 && !(g->duration_s > 0) &&
	    c->max_requests == 0 && !(a->kind == WL_ARR_SCHEDULE &&
	    !a->repeat))
		return cfail(err, "workload.generator never ends: set "
		    "generator.requests or generator.duration_s");
	if (!(g->duration_s >= 0) || !(g->think_s >= 0) ||
	    !(g->system_fraction >= 0 && g->system_fraction <= 1) ||
	    !(g->system_zipf_s >= 0))
		return cfail(err, "workload.generator: duration_s, think_s "
		    ">= 0; prefix.fraction in [0, 1]; prefix.zipf_s >= 0");
	/* a run drawing them would not end (target_rate drew them all
	 * before the first request) */
	if (g->requests == 0 && c->max_requests == 0 &&
	    !((n = gen_expected(g)) <= WL_GEN_MOST))
		return cfail(err, "workload.generator: about %.3g requests "
		    "(the arrival rate over duration_s), more than 2^44, "
		    "which no run could finish: set generator.requests or "
		    "max_requests, or lower the rate or duration_s", n);
	return WL_OK;
}

/* YAML ----------------------------------------------------------------- */

struct ycx {
	const char *file;
	struct wl_error *err;
	char dir[512];		/* directory of file, "" for none */
};

static wl_err
yfail(struct ycx *x, const struct yd_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static wl_err
yfail(struct ycx *x, const struct yd_node *n, const char *fmt, ...)
{
	va_list ap;
	struct wl_error *e = x->err;

	if (e == NULL)
		return WL_ECONFIG;
	wl_error_clear(e);
	snprintf(e->file, sizeof(e->file), "%s", x->file ? x->file : "");
	if (n != NULL) {
		e->line = n->line;
		e->col = (uint32_t)n->col;
	}
	va_start(ap, fmt);
	vsnprintf(e->what, sizeof(e->what), fmt, ap);
	va_end(ap);
	return WL_ECONFIG;
}

static const char *
sval(const struct yd_node *n)
{
	return n->type == YD_SCALAR ? n->str : NULL;
}

static wl_err
y_double(struct ycx *x, const struct yd_node *n, const char *key, double lo,
    double *out)
{
	const char *s = sval(n);
	char *end;
	double v;

	if (s == NULL || yd_is_null(n))
		return yfail(x, n, "%s: expected a number", key);
	if (strcmp(s, ".inf") == 0 || strcmp(s, "inf") == 0 ||
	    strcmp(s, ".Inf") == 0)
		v = INFINITY;
	else {
		errno = 0;
		v = strtod(s, &end);
		if (*s == '\0' || *end != '\0' || isnan(v))
			return yfail(x, n, "%s: expected a number, found '%s'",
			    key, s);
		/* an underflow is a number (subnormal, or 0); an overflow
		 * is not one a double holds */
		if (errno == ERANGE && fabs(v) > DBL_MIN)
			return yfail(x, n, "%s: %s is out of range", key, s);
	}
	if (v < lo)
		return yfail(x, n, "%s: must be >= %g, found %s", key, lo, s);
	*out = v;
	return WL_OK;
}

static wl_err
y_finite(struct ycx *x, const struct yd_node *n, const char *key, double lo,
    double *out)
{
	wl_err rc = y_double(x, n, key, lo, out);

	if (rc == WL_OK && !isfinite(*out))
		return yfail(x, n, "%s: must be finite", key);
	return rc;
}

/* Seconds of simulated time: finite, lo .. the horizon (wl.h). */
static wl_err
y_seconds(struct ycx *x, const struct yd_node *n, const char *key, double lo,
    double *out)
{
	wl_err rc = y_finite(x, n, key, lo, out);

	if (rc == WL_OK && *out > (double)WL_HORIZON_NS / 1e9)
		return yfail(x, n, "%s: must be at most 1e9 s (the 31.7-year "
		    "horizon of simulated time)", key);
	return rc;
}

static wl_err
y_i64(struct ycx *x, const struct yd_node *n, const char *key, int64_t lo,
    int64_t hi, int64_t *out)
{
	const char *s = sval(n);
	int64_t v;

	if (s == NULL || yd_is_null(n) ||
	    wl__parse_i64(s, strlen(s), &v) != WL_NUM_OK) {
		double d;
		char *end;

		/* Also take integral numbers written like 1e6. */
		if (s == NULL || yd_is_null(n))
			return yfail(x, n, "%s: expected an integer", key);
		d = strtod(s, &end);
		if (*s == '\0' || *end != '\0' || d != floor(d) ||
		    fabs(d) > 9e15)
			return yfail(x, n, "%s: expected an integer, found "
			    "'%s'", key, s);
		v = (int64_t)d;
	}
	if (v < lo || v > hi)
		return yfail(x, n, "%s: must be in [%lld, %lld], found %s",
		    key, (long long)lo, (long long)hi, s);
	*out = v;
	return WL_OK;
}

static wl_err
y_u64(struct ycx *x, const struct yd_node *n, const char *key, uint64_t *out)
{
	int64_t v;
	wl_err rc = y_i64(x, n, key, 0, INT64_MAX, &v);

	if (rc == WL_OK)
		*out = (uint64_t)v;
	return rc;
}

static wl_err
y_u32(struct ycx *x, const struct yd_node *n, const char *key, uint32_t lo,
    uint32_t *out)
{
	int64_t v;
	wl_err rc = y_i64(x, n, key, lo, UINT32_MAX, &v);

	if (rc == WL_OK)
		*out = (uint32_t)v;
	return rc;
}

static wl_err
y_bool(struct ycx *x, const struct yd_node *n, const char *key, bool *out)
{
	const char *s = sval(n);

	if (s != NULL && (strcmp(s, "true") == 0 || strcmp(s, "yes") == 0 ||
	    strcmp(s, "on") == 0 || strcmp(s, "True") == 0)) {
		*out = true;
		return WL_OK;
	}
	if (s != NULL && (strcmp(s, "false") == 0 || strcmp(s, "no") == 0 ||
	    strcmp(s, "off") == 0 || strcmp(s, "False") == 0)) {
		*out = false;
		return WL_OK;
	}
	return yfail(x, n, "%s: expected true or false", key);
}

/* A file path, resolved against the config file's directory. */
static wl_err
y_path(struct ycx *x, const struct yd_node *n, const char *key, char **out)
{
	const char *s = sval(n);
	size_t need;

	if (s == NULL || yd_is_null(n) || s[0] == '\0')
		return yfail(x, n, "%s: expected a file name", key);
	free(*out);
	if (s[0] == '/' || strcmp(s, "-") == 0 || x->dir[0] == '\0') {
		*out = strdup(s);
	} else {
		need = strlen(x->dir) + strlen(s) + 2;
		*out = malloc(need);
		if (*out != NULL)
			snprintf(*out, need, "%s/%s", x->dir, s);
	}
	if (*out == NULL)
		return yfail(x, n, "out of memory");
	return WL_OK;
}

static wl_err
y_choice(struct ycx *x, const struct yd_node *n, const char *key,
    const char *const *names, int *out)
{
	const char *s = sval(n);
	char all[256] = "";

	for (int i = 0; names[i] != NULL; i++) {
		if (s != NULL && strcmp(s, names[i]) == 0) {
			*out = i;
			return WL_OK;
		}
		snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s",
		    i ? ", " : "", names[i]);
	}
	return yfail(x, n, "%s: expected one of %s, found '%s'", key, all,
	    s != NULL ? s : "(not a scalar)");
}

static wl_err
y_map(struct ycx *x, const struct yd_node *n, const char *key)
{
	if (n == NULL || n->type != YD_MAP)
		return yfail(x, n, "%s: expected a mapping", key);
	return WL_OK;
}

/* Each pair (kn, vn) of the mapping `map`, in document order. */
#define Y_EACH(map, kn, vn) \
	for (size_t y_i_ = 0; y_i_ < (map)->n && \
	    ((kn) = (map)->kid[2 * y_i_]) != NULL && \
	    ((vn) = (map)->kid[2 * y_i_ + 1]) != NULL; y_i_++)

static wl_err
y_unknown(struct ycx *x, const struct yd_node *kn, const char *where)
{
	return yfail(x, kn, "unknown key '%s' in %s", sval(kn) ? sval(kn) :
	    "(not a scalar)", where);
}

static wl_err
y_list(struct ycx *x, const struct yd_node *n, const char *key, double **out,
    size_t *count)
{
	size_t k = 0;
	wl_err rc;

	if (n->type != YD_SEQ)
		return yfail(x, n, "%s: expected a list of numbers", key);
	free(*out);
	*out = NULL;
	*count = n->n;
	if (*count == 0)
		return yfail(x, n, "%s: empty list", key);
	*out = malloc(*count * sizeof(**out));
	if (*out == NULL)
		return yfail(x, n, "out of memory");
	for (k = 0; k < n->n; k++) {
		rc = y_finite(x, n->kid[k], key, -HUGE_VAL, &(*out)[k]);
		if (rc != WL_OK)
			return rc;
	}
	return WL_OK;
}

/* One adapter name of workload.lora_adapters, p[0..n), appended to *buf
 * (one per line) unless it is there already. */
static wl_err
y_lora_name(struct ycx *x, const struct yd_node *n, const char *p, size_t len,
    char **buf, size_t *used)
{
	char *b;

	if (len == 0 || len > 255 || memchr(p, '\n', len) != NULL)
		return yfail(x, n, "lora_adapters: a name of 1 to 255 bytes "
		    "on one line, got '%.*s'", (int)(len > 64 ? 64 : len), p);
	for (const char *q = *buf; q != NULL && *q != '\0';) {
		const char *e = strchr(q, '\n');

		if ((size_t)(e - q) == len && memcmp(q, p, len) == 0)
			return yfail(x, n, "lora_adapters: '%.*s' is listed "
			    "twice", (int)len, p);
		q = e + 1;
	}
	b = realloc(*buf, *used + len + 2);
	if (b == NULL)
		return yfail(x, n, "out of memory");
	memcpy(b + *used, p, len);
	*used += len;
	b[(*used)++] = '\n';
	b[*used] = '\0';
	*buf = b;
	return WL_OK;
}

/*
 * workload.lora_adapters: a list of names, or one scalar of names split
 * by commas (as --set gives it).
 */
static wl_err
y_lora_names(struct ycx *x, const struct yd_node *n, struct wl_config *c)
{
	char *buf = NULL;
	size_t used = 0;
	wl_err rc = WL_OK;

	if (n->type == YD_SEQ) {
		for (size_t i = 0; i < n->n && rc == WL_OK; i++) {
			const char *v = sval(n->kid[i]);

			rc = v == NULL ? yfail(x, n->kid[i], "lora_adapters: "
			    "expected a list of adapter names") :
			    y_lora_name(x, n->kid[i], v, strlen(v), &buf,
			    &used);
		}
	} else if (sval(n) != NULL) {
		for (const char *p = sval(n); rc == WL_OK;) {
			const char *e = strchr(p, ',');
			size_t len = e != NULL ? (size_t)(e - p) : strlen(p);

			while (len > 0 && *p == ' ')
				p++, len--;
			while (len > 0 && p[len - 1] == ' ')
				len--;
			rc = y_lora_name(x, n, p, len, &buf, &used);
			if (e == NULL)
				break;
			p = e + 1;
		}
	} else {
		rc = yfail(x, n, "lora_adapters: expected a list of adapter "
		    "names");
	}
	if (rc == WL_OK && buf == NULL)
		rc = yfail(x, n, "lora_adapters: empty list");
	if (rc != WL_OK) {
		free(buf);
		return rc;
	}
	free(c->lora_names);
	c->lora_names = buf;
	return WL_OK;
}

static const char *const dist_names[] = { "fixed", "uniform", "normal",
	"lognormal", "zipf", "empirical", NULL };

/* What a distribution's mapping said, before the kind is settled. */
struct ydist {
	double mean, sd, cv, mu, sigma;
	size_t nw;		/* weights read */
	bool have_values, have_weights, have_max;
	int kind;		/* dist_names index; -1 not given */
};

/* One key of a distribution's mapping. */
static wl_err
y_dist_key(struct ycx *x, const struct yd_node *kn, const struct yd_node *vn,
    const char *key, struct wl_dist *d, struct ydist *a)
{
	const char *k = sval(kn);

	if (k == NULL)
		return y_unknown(x, kn, key);
	if (strcmp(k, "dist") == 0)
		return y_choice(x, vn, "dist", dist_names, &a->kind);
	if (strcmp(k, "value") == 0)
		return y_finite(x, vn, k, -HUGE_VAL, &d->value);
	if (strcmp(k, "min") == 0)
		return y_i64(x, vn, k, d->min, d->max, &d->min);
	if (strcmp(k, "max") == 0) {
		a->have_max = true;
		return y_i64(x, vn, k, INT64_MIN, d->max, &d->max);
	}
	if (strcmp(k, "mean") == 0)
		return y_finite(x, vn, k, -HUGE_VAL, &a->mean);
	if (strcmp(k, "sd") == 0)
		return y_finite(x, vn, k, 0, &a->sd);
	if (strcmp(k, "cv") == 0)
		return y_finite(x, vn, k, 0, &a->cv);
	if (strcmp(k, "mu") == 0)
		return y_finite(x, vn, k, -HUGE_VAL, &a->mu);
	if (strcmp(k, "sigma") == 0)
		return y_finite(x, vn, k, 0, &a->sigma);
	if (strcmp(k, "s") == 0)
		return y_finite(x, vn, k, 0, &d->s);
	if (strcmp(k, "values") == 0) {
		a->have_values = true;
		return y_list(x, vn, k, &d->values, &d->nvalues);
	}
	if (strcmp(k, "weights") == 0) {
		a->have_weights = true;
		return y_list(x, vn, k, &d->weights, &a->nw);
	}
	return y_unknown(x, kn, key);
}

/* A lognormal from mu and sigma, or from mean and cv (or sd); what the
 * mapping leaves out of a lognormal kept from before. */
static wl_err
y_dist_lognormal(struct ycx *x, const struct yd_node *n, const char *key,
    struct wl_dist *d, enum wl_dist_kind prev, struct ydist *a)
{
	if (!isnan(a->mu) || !isnan(a->sigma)) {
		if (prev == WL_DIST_LOGNORMAL) {
			a->mu = isnan(a->mu) ? d->mu : a->mu;
			a->sigma = isnan(a->sigma) ? d->sigma : a->sigma;
		}
		if (isnan(a->mu) || isnan(a->sigma))
			return yfail(x, n, "%s: lognormal needs both mu and "
			    "sigma", key);
		d->mu = a->mu;
		d->sigma = a->sigma;
		return WL_OK;
	}
	if (isnan(a->cv) && !isnan(a->sd) && a->mean > 0)
		a->cv = a->sd / a->mean;
	if (prev == WL_DIST_LOGNORMAL) {
		double s2 = d->sigma * d->sigma;

		a->mean = isnan(a->mean) ? exp(d->mu + s2 / 2) : a->mean;
		a->cv = isnan(a->cv) ? sqrt(expm1(s2)) : a->cv;
	}
	if (isnan(a->mean) || isnan(a->cv) || !(a->mean > 0))
		return yfail(x, n, "%s: lognormal needs mu and sigma, or mean "
		    "and cv (or sd)", key);
	d->sigma = sqrt(log1p(a->cv * a->cv));
	d->mu = log(a->mean) - d->sigma * d->sigma / 2;
	return WL_OK;
}

/* The kind settled: its parameters from the mapping and from before. */
static wl_err
y_dist_finish(struct ycx *x, const struct yd_node *n, const char *key,
    struct wl_dist *d, enum wl_dist_kind prev, struct ydist *a)
{
	switch (d->kind) {
	case WL_DIST_UNIFORM:
		/* the default bound is the largest length there is: every
		 * request would be refused */
		if (prev != WL_DIST_UNIFORM && !a->have_max)
			return yfail(x, n, "%s: uniform needs max (and min, "
			    "default 1)", key);
		return WL_OK;
	case WL_DIST_NORMAL:
		if (prev == WL_DIST_NORMAL) {
			a->mean = isnan(a->mean) ? d->mean : a->mean;
			a->sd = isnan(a->sd) ? d->sd : a->sd;
		}
		if (isnan(a->mean) || isnan(a->sd))
			return yfail(x, n, "%s: normal needs mean and sd", key);
		d->mean = a->mean;
		d->sd = a->sd;
		return WL_OK;
	case WL_DIST_LOGNORMAL:
		return y_dist_lognormal(x, n, key, d, prev, a);
	case WL_DIST_EMPIRICAL:
		if (a->have_values && !a->have_weights) {
			free(d->weights);
			d->weights = NULL;
		}
		if (a->have_weights && a->nw != d->nvalues)
			return yfail(x, n, "%s: %zu weights for %zu values",
			    key, a->nw, d->nvalues);
		return WL_OK;
	default:
		return WL_OK;
	}
}

/*
 * A distribution: a number (fixed) or a mapping.  A mapping without `dist`
 * updates the distribution in place (so `--set workload.generator.prompt.
 * mean=900` keeps a lognormal's cv); parameters it does not name keep
 * their values when the kind is unchanged.
 */
static wl_err
y_dist(struct ycx *x, const struct yd_node *n, const char *key,
    struct wl_dist *d)
{
	const struct yd_node *kn, *vn;
	struct ydist a = { .mean = NAN, .sd = NAN, .cv = NAN, .mu = NAN,
	    .sigma = NAN, .kind = -1 };
	char what[200];
	wl_err rc;
	enum wl_dist_kind prev = d->kind;

	if (n->type == YD_SCALAR) {
		double v;

		rc = y_finite(x, n, key, -HUGE_VAL, &v);
		if (rc != WL_OK)
			return rc;
		dist_release(d);
		d->kind = WL_DIST_FIXED;
		d->value = v;
		if (!wl__dist_check(d, what, sizeof(what)))
			return yfail(x, n, "%s: %s", key, what);
		return WL_OK;
	}
	rc = y_map(x, n, key);
	if (rc != WL_OK)
		return rc;
	Y_EACH(n, kn, vn) {
		rc = y_dist_key(x, kn, vn, key, d, &a);
		if (rc != WL_OK)
			return rc;
	}
	d->kind = a.kind < 0 ? prev : (enum wl_dist_kind)a.kind;
	rc = y_dist_finish(x, n, key, d, prev, &a);
	if (rc != WL_OK)
		return rc;
	if (!wl__dist_check(d, what, sizeof(what)))
		return yfail(x, n, "%s: %s", key, what);
	return WL_OK;
}

static const char *const arrival_names[] = { "poisson", "gamma",
	"constant", "onoff", "schedule", NULL };

static wl_err
y_segments(struct ycx *x, const struct yd_node *n, struct wl_arrival *a)
{
	size_t k = 0;
	wl_err rc;

	if (n->type != YD_SEQ)
		return yfail(x, n, "segments: expected a list of "
		    "{duration_s, rate}");
	free(a->segs);
	a->nsegs = n->n;
	a->segs = calloc(a->nsegs ? a->nsegs : 1, sizeof(*a->segs));
	if (a->segs == NULL)
		return yfail(x, n, "out of memory");
	for (k = 0; k < n->n; k++) {
		const struct yd_node *e = n->kid[k], *kn, *vn;
		bool hd = false, hr = false;

		rc = y_map(x, e, "segments[]");
		if (rc != WL_OK)
			return rc;
		Y_EACH(e, kn, vn) {
			const char *key = sval(kn);

			if (key != NULL && strcmp(key, "duration_s") == 0) {
				rc = y_finite(x, vn, key, 0,
				    &a->segs[k].duration_s);
				hd = true;
			} else if (key != NULL && strcmp(key, "rate") == 0) {
				rc = y_finite(x, vn, key, 0, &a->segs[k].rate);
				hr = true;
			} else {
				return y_unknown(x, kn, "segments[]");
			}
			if (rc != WL_OK)
				return rc;
		}
		if (!hd || !hr || !(a->segs[k].duration_s > 0))
			return yfail(x, e, "segments[]: need duration_s > 0 "
			    "and rate");
	}
	return WL_OK;
}

static wl_err
y_arrival(struct ycx *x, const struct yd_node *n, struct wl_arrival *a)
{
	const struct yd_node *kn, *vn;
	wl_err rc = y_map(x, n, "arrival");
	int kind = (int)a->kind;

	if (rc != WL_OK)
		return rc;
	Y_EACH(n, kn, vn) {
		const char *k = sval(kn);

		if (k == NULL)
			return y_unknown(x, kn, "arrival");
		if (strcmp(k, "process") == 0)
			rc = y_choice(x, vn, k, arrival_names, &kind);
		else if (strcmp(k, "rate") == 0)
			rc = y_finite(x, vn, k, 0, &a->rate);
		else if (strcmp(k, "cv") == 0)
			rc = y_finite(x, vn, k, 0, &a->cv);
		else if (strcmp(k, "on_s") == 0)
			rc = y_finite(x, vn, k, 0, &a->on_s);
		else if (strcmp(k, "off_s") == 0)
			rc = y_finite(x, vn, k, 0, &a->off_s);
		else if (strcmp(k, "off_rate") == 0)
			rc = y_finite(x, vn, k, 0, &a->off_rate);
		else if (strcmp(k, "segments") == 0)
			rc = y_segments(x, vn, a);
		else if (strcmp(k, "repeat") == 0)
			rc = y_bool(x, vn, k, &a->repeat);
		else
			return y_unknown(x, kn, "arrival");
		if (rc != WL_OK)
			return rc;
	}
	a->kind = (enum wl_arrival_kind)kind;
	if ((a->kind == WL_ARR_POISSON || a->kind == WL_ARR_GAMMA ||
	    a->kind == WL_ARR_CONSTANT || a->kind == WL_ARR_ONOFF) &&
	    !(a->rate > 0))
		return yfail(x, n, "arrival: rate must be > 0");
	if (a->kind == WL_ARR_GAMMA && !(a->cv > 0))
		return yfail(x, n, "arrival: gamma needs cv > 0");
	if (a->kind == WL_ARR_ONOFF && !(a->on_s > 0))
		return yfail(x, n, "arrival: onoff needs on_s > 0");
	if (a->kind == WL_ARR_SCHEDULE && a->nsegs == 0)
		return yfail(x, n, "arrival: schedule needs segments");
	return WL_OK;
}

static wl_err
y_lengths_from(struct ycx *x, const struct yd_node *n,
    struct wl_gen_config *g)
{
	const struct yd_node *kn, *vn;
	wl_err rc = y_map(x, n, "lengths_from");

	if (rc != WL_OK)
		return rc;
	Y_EACH(n, kn, vn) {
		const char *s = sval(kn);

		if (s != NULL && strcmp(s, "trace") == 0) {
			rc = y_path(x, vn, s, &g->lengths_trace);
			if (rc != WL_OK)
				return rc;
		} else if (s != NULL && strcmp(s, "format") == 0) {
			g->lengths_sharegpt = sval(vn) != NULL &&
			    strcmp(sval(vn), "sharegpt") == 0;
			if (!g->lengths_sharegpt && (sval(vn) == NULL ||
			    !wl_format_parse(sval(vn), &g->lengths_format)))
				return yfail(x, vn, "format: unknown trace "
				    "format");
		} else if (s != NULL && strcmp(s, "output_len") == 0) {
			rc = y_u32(x, vn, s, 0, &g->lengths_output);
			if (rc != WL_OK)
				return rc;
		} else
			return y_unknown(x, kn, "lengths_from");
	}
	if (g->lengths_trace == NULL)
		return yfail(x, n, "lengths_from: needs trace");
	return WL_OK;
}

static wl_err
y_prefix(struct ycx *x, const struct yd_node *n, struct wl_gen_config *g)
{
	const struct yd_node *kn, *vn;
	wl_err rc = y_map(x, n, "prefix");

	if (rc != WL_OK)
		return rc;
	Y_EACH(n, kn, vn) {
		const char *s = sval(kn);

		if (s != NULL && strcmp(s, "systems") == 0)
			rc = y_u32(x, vn, s, 0, &g->systems);
		else if (s != NULL && strcmp(s, "zipf_s") == 0)
			rc = y_finite(x, vn, s, 0, &g->system_zipf_s);
		else if (s != NULL && strcmp(s, "length") == 0)
			rc = y_dist(x, vn, s, &g->system_len);
		else if (s != NULL && strcmp(s, "fraction") == 0) {
			rc = y_finite(x, vn, s, 0, &g->system_fraction);
			if (rc == WL_OK && g->system_fraction > 1)
				rc = yfail(x, vn, "fraction: must be in "
				    "[0, 1]");
		} else
			return y_unknown(x, kn, "prefix");
		if (rc != WL_OK)
			return rc;
	}
	return WL_OK;
}

/* `lora: {adapters: N, popularity: zipf|uniform, zipf_s: S, fraction: F}` */
static wl_err
y_lora(struct ycx *x, const struct yd_node *n, struct wl_gen_config *g)
{
	const struct yd_node *kn, *vn;
	wl_err rc = y_map(x, n, "lora");

	if (rc != WL_OK)
		return rc;
	Y_EACH(n, kn, vn) {
		const char *s = sval(kn), *v = sval(vn);

		if (s == NULL)
			return y_unknown(x, kn, "lora");
		if (strcmp(s, "adapters") == 0)
			rc = y_u32(x, vn, s, 1, &g->lora_adapters);
		else if (strcmp(s, "zipf_s") == 0)
			rc = y_finite(x, vn, s, 0, &g->lora_zipf_s);
		else if (strcmp(s, "popularity") == 0) {
			if (v != NULL && strcmp(v, "uniform") == 0)
				g->lora_zipf_s = 0;
			else if (v == NULL || strcmp(v, "zipf") != 0)
				rc = yfail(x, vn, "popularity: expected zipf "
				    "or uniform");
		} else if (strcmp(s, "fraction") == 0) {
			rc = y_finite(x, vn, s, 0, &g->lora_fraction);
			if (rc == WL_OK && g->lora_fraction > 1)
				rc = yfail(x, vn, "fraction: must be in "
				    "[0, 1]");
		} else
			return y_unknown(x, kn, "lora");
		if (rc != WL_OK)
			return rc;
	}
	return WL_OK;
}

static wl_err
y_sessions(struct ycx *x, const struct yd_node *n, struct wl_gen_config *g)
{
	const struct yd_node *kn, *vn;
	wl_err rc = y_map(x, n, "sessions");

	if (rc != WL_OK)
		return rc;
	Y_EACH(n, kn, vn) {
		const char *s = sval(kn);

		if (s != NULL && strcmp(s, "turns") == 0)
			rc = y_dist(x, vn, s, &g->turns);
		else if (s != NULL && strcmp(s, "think_s") == 0)
			rc = y_finite(x, vn, s, 0, &g->think_s);
		else if (s != NULL && strcmp(s, "max_context") == 0)
			rc = y_u64(x, vn, s, &g->max_context);
		else
			return y_unknown(x, kn, "sessions");
		if (rc != WL_OK)
			return rc;
	}
	return WL_OK;
}

static wl_err
y_generator(struct ycx *x, const struct yd_node *n, struct wl_gen_config *g)
{
	const struct yd_node *kn, *vn;
	wl_err rc = y_map(x, n, "generator");

	if (rc != WL_OK)
		return rc;
	Y_EACH(n, kn, vn) {
		const char *k = sval(kn);

		if (k == NULL)
			return y_unknown(x, kn, "generator");
		if (strcmp(k, "requests") == 0)
			rc = y_u64(x, vn, k, &g->requests);
		else if (strcmp(k, "duration_s") == 0)
			rc = y_finite(x, vn, k, 0, &g->duration_s);
		else if (strcmp(k, "arrival") == 0)
			rc = y_arrival(x, vn, &g->arrival);
		else if (strcmp(k, "prompt") == 0)
			rc = y_dist(x, vn, k, &g->prompt);
		else if (strcmp(k, "output") == 0)
			rc = y_dist(x, vn, k, &g->output);
		else if (strcmp(k, "priority") == 0)
			rc = y_dist(x, vn, k, &g->priority);
		else if (strcmp(k, "n") == 0)
			rc = y_dist(x, vn, k, &g->n);
		else if (strcmp(k, "lengths_from") == 0)
			rc = y_lengths_from(x, vn, g);
		else if (strcmp(k, "prefix") == 0)
			rc = y_prefix(x, vn, g);
		else if (strcmp(k, "sessions") == 0)
			rc = y_sessions(x, vn, g);
		else if (strcmp(k, "lora") == 0)
			rc = y_lora(x, vn, g);
		else
			return y_unknown(x, kn, "generator");
		if (rc != WL_OK)
			return rc;
	}
	return WL_OK;
}

static const char *const kind_names[] = { "kvsim", "inference-perf",
	NULL };
static const char *const on_error_names[] = { "stop", "skip", NULL };
static const char *const order_names[] = { "error", "skip", "sort", NULL };

static wl_err
y_window(struct ycx *x, const struct yd_node *n, struct wl_config *c)
{
	const struct yd_node *kn, *vn;
	wl_err rc = y_map(x, n, "window");

	if (rc != WL_OK)
		return rc;
	Y_EACH(n, kn, vn) {
		const char *s = sval(kn);
		double e;

		if (s != NULL && strcmp(s, "start_s") == 0) {
			rc = y_seconds(x, vn, s, 0, &c->window_start_s);
		} else if (s != NULL && strcmp(s, "end_s") == 0) {
			/* .inf: no end */
			rc = y_double(x, vn, s, 0, &e);
			if (rc == WL_OK && isfinite(e))
				rc = y_seconds(x, vn, s, 0, &e);
			if (rc == WL_OK)
				c->window_end_s = isfinite(e) ? e : 0;
		} else
			return y_unknown(x, kn, "window");
		if (rc != WL_OK)
			return rc;
	}
	if (c->window_end_s > 0 && c->window_end_s <= c->window_start_s)
		return yfail(x, n, "window: end_s must be greater than "
		    "start_s");
	return WL_OK;
}

static wl_err
y_filter(struct ycx *x, const struct yd_node *n, struct wl_config *c)
{
	static const char *const keys[] = { "min_prompt_tokens",
	    "max_prompt_tokens", "min_output_tokens", "max_output_tokens",
	    "max_total_tokens" };
	uint64_t *dst[] = { &c->min_prompt, &c->max_prompt, &c->min_output,
	    &c->max_output, &c->max_total };
	const struct yd_node *kn, *vn;
	wl_err rc = y_map(x, n, "filter");

	if (rc != WL_OK)
		return rc;
	Y_EACH(n, kn, vn) {
		const char *s = sval(kn);
		size_t i = 0;

		while (s != NULL && i < sizeof(keys) / sizeof(keys[0]) &&
		    strcmp(s, keys[i]) != 0)
			i++;
		if (s == NULL || i == sizeof(keys) / sizeof(keys[0]))
			return y_unknown(x, kn, "filter");
		rc = y_u64(x, vn, s, dst[i]);
		if (rc != WL_OK)
			return rc;
	}
	return WL_OK;
}

static wl_err
y_cap(struct ycx *x, const struct yd_node *n, struct wl_config *c)
{
	const struct yd_node *kn, *vn;
	wl_err rc = y_map(x, n, "cap");

	if (rc != WL_OK)
		return rc;
	Y_EACH(n, kn, vn) {
		const char *s = sval(kn);

		if (s != NULL && strcmp(s, "prompt_tokens") == 0)
			rc = y_u64(x, vn, s, &c->cap_prompt);
		else if (s != NULL && strcmp(s, "output_tokens") == 0)
			rc = y_u64(x, vn, s, &c->cap_output);
		else
			return y_unknown(x, kn, "cap");
		if (rc != WL_OK)
			return rc;
	}
	return WL_OK;
}

static wl_err
y_tile(struct ycx *x, const struct yd_node *n, struct wl_config *c)
{
	const struct yd_node *kn, *vn;
	wl_err rc = y_map(x, n, "tile");

	if (rc != WL_OK)
		return rc;
	Y_EACH(n, kn, vn) {
		const char *s = sval(kn);

		if (s != NULL && strcmp(s, "copies") == 0)
			rc = y_u32(x, vn, s, 1, &c->tile_copies);
		else if (s != NULL && strcmp(s, "period_s") == 0)
			rc = y_seconds(x, vn, s, 0, &c->tile_period_s);
		else if (s != NULL && strcmp(s, "share_prefixes") == 0)
			rc = y_bool(x, vn, s, &c->tile_share);
		else
			return y_unknown(x, kn, "tile");
		if (rc != WL_OK)
			return rc;
	}
	return WL_OK;
}

/* Whether key k is one of dataset kind `kind`'s own (vLLM's flags). */
static bool
ds_has_key(enum wl_dataset_kind kind, const char *k)
{
	static const char *const keys[][5] = {
		[WL_DS_RANDOM] = { "input_len", "output_len", "range_ratio",
		    "prefix_len", NULL },
		[WL_DS_SHAREGPT] = { "path", "output_len", NULL },
		[WL_DS_PREFIX_REP] = { "prefix_len", "suffix_len",
		    "num_prefixes", "output_len", NULL },
	};

	if (kind == WL_DS_NONE)
		return false;
	for (int i = 0; keys[kind][i] != NULL; i++)
		if (strcmp(keys[kind][i], k) == 0)
			return true;
	return false;
}

/* One number or path of a dataset mapping. */
static wl_err
y_dataset_key(struct ycx *x, const struct yd_node *kn,
    const struct yd_node *vn, struct wl_config *c)
{
	struct wl_dataset *ds = &c->dataset;
	const char *k = sval(kn);

	if (k == NULL || strcmp(k, "name") == 0)
		return k == NULL ? y_unknown(x, kn, "dataset") : WL_OK;
	if (!ds_has_key(ds->kind, k))
		return yfail(x, kn, "dataset: %s is not a key of %s (%s)", k,
		    wl__dataset_name(ds->kind), ds->kind == WL_DS_RANDOM ?
		    "input_len, output_len, range_ratio, prefix_len" :
		    ds->kind == WL_DS_SHAREGPT ? "path, output_len" :
		    "prefix_len, suffix_len, num_prefixes, output_len");
	if (strcmp(k, "path") == 0)
		return y_path(x, vn, k, &c->gen.lengths_trace);
	if (strcmp(k, "range_ratio") == 0)
		return y_finite(x, vn, k, 0, &ds->range_ratio);
	if (strcmp(k, "input_len") == 0)
		return y_u32(x, vn, k, 1, &ds->input_len);
	if (strcmp(k, "output_len") == 0)
		return y_u32(x, vn, k, ds->kind == WL_DS_SHAREGPT ? 0 : 1,
		    &ds->output_len);
	if (strcmp(k, "prefix_len") == 0)
		return y_u32(x, vn, k, 0, &ds->prefix_len);
	if (strcmp(k, "suffix_len") == 0)
		return y_u32(x, vn, k, 1, &ds->suffix_len);
	return y_u32(x, vn, k, 1, &ds->num_prefixes);
}

/*
 * `dataset: {name: random|sharegpt|prefix_repetition, ...}`: vLLM's bench
 * datasets, applied to the generator at once (wl_bench.c).  A new name
 * starts from vLLM's defaults; the same name (or none) updates the
 * numbers set before.  A dataset replaces the trace.
 */
static wl_err
y_dataset(struct ycx *x, const struct yd_node *n, struct wl_config *c)
{
	const struct yd_node *kn, *vn, *nm;
	enum wl_dataset_kind k;
	char why[300];
	wl_err rc = y_map(x, n, "dataset");

	if (rc != WL_OK)
		return rc;
	if ((nm = yd_get(n, "name")) != NULL) {
		if (sval(nm) == NULL || !wl__dataset_parse(sval(nm), &k))
			return yfail(x, nm, "dataset: name: expected one of "
			    "random, sharegpt, prefix_repetition");
		if (k != c->dataset.kind) {
			wl__dataset_defaults(&c->dataset, k);
			if (k == WL_DS_SHAREGPT) {
				free(c->gen.lengths_trace);
				c->gen.lengths_trace = NULL;
			}
		}
	} else if (c->dataset.kind == WL_DS_NONE)
		return yfail(x, n, "dataset: needs name (random, sharegpt, "
		    "prefix_repetition)");
	Y_EACH(n, kn, vn) {
		rc = y_dataset_key(x, kn, vn, c);
		if (rc != WL_OK)
			return rc;
	}
	if (wl__dataset_apply(&c->dataset, &c->gen, why, sizeof(why)) !=
	    WL_OK)
		return yfail(x, n, "dataset: %s", why);
	free(c->trace);
	c->trace = NULL;
	return WL_OK;
}

/* The trace's own settings: where it is, how it is read and checked. */
static wl_err
y_trace_key(struct ycx *x, const char *k, const struct yd_node *vn,
    struct wl_config *c, bool *known)
{
	wl_err rc = WL_OK;
	int v;

	*known = true;
	if (strcmp(k, "trace") == 0) {
		if (!yd_is_null(vn))
			return y_path(x, vn, k, &c->trace);
		free(c->trace);
		c->trace = NULL;
	} else if (strcmp(k, "format") == 0) {
		if (sval(vn) == NULL || !wl_format_parse(sval(vn), &c->format))
			return yfail(x, vn, "format: expected one of auto, "
			    "azure, mooncake, burstgpt, splitwise, vidur, "
			    "llmservingsim, kvsim");
	} else if (strcmp(k, "on_error") == 0) {
		if ((rc = y_choice(x, vn, k, on_error_names, &v)) == WL_OK)
			c->on_error = (enum wl_on_error)v;
	} else if (strcmp(k, "order") == 0) {
		if ((rc = y_choice(x, vn, k, order_names, &v)) == WL_OK)
			c->order = (enum wl_order)v;
	} else if (strcmp(k, "sort_window") == 0)
		rc = y_u32(x, vn, k, 1, &c->sort_window);
	else
		*known = false;
	return rc;
}

/* One key of the `workload:` mapping. */
static wl_err
y_workload_key(struct ycx *x, const struct yd_node *kn,
    const struct yd_node *vn, struct wl_config *c)
{
	const char *k = sval(kn);
	bool known;
	wl_err rc;
	int v;

	if (k == NULL)
		return y_unknown(x, kn, "workload");
	rc = y_trace_key(x, k, vn, c, &known);
	if (known)
		return rc;
	if (strcmp(k, "kind") == 0) {
		if ((rc = y_choice(x, vn, k, kind_names, &v)) == WL_OK)
			c->kind = (enum wl_kind)v;
		return rc;
	}
	if (strcmp(k, "config") == 0)
		return y_path(x, vn, k, &c->ip_config);
	if (strcmp(k, "lora_adapters") == 0)
		return y_lora_names(x, vn, c);
	if (strcmp(k, "max_concurrency") == 0)
		return y_u32(x, vn, k, 0, &c->max_concurrency);
	if (strcmp(k, "timeout_s") == 0)
		return y_finite(x, vn, k, 0, &c->timeout_s);
	if (strcmp(k, "hash_block_tokens") == 0)
		return y_u32(x, vn, k, 1, &c->hash_block_tokens);
	if (strcmp(k, "seed") == 0)
		return y_u64(x, vn, k, &c->seed);
	if (strcmp(k, "vocab_size") == 0)
		return y_u32(x, vn, k, 1, &c->vocab_size);
	if (strcmp(k, "time_scale") == 0) {
		rc = y_finite(x, vn, k, 0, &c->time_scale);
		if (rc == WL_OK && !(c->time_scale > 0))
			rc = yfail(x, vn, "time_scale: must be > 0");
		return rc;
	}
	if (strcmp(k, "target_rate") == 0)
		return y_finite(x, vn, k, 0, &c->target_rate);
	if (strcmp(k, "spread_bursts") == 0) {
		rc = y_finite(x, vn, k, 0, &c->spread_bursts);
		if (rc == WL_OK && !(c->spread_bursts <= 1))
			rc = yfail(x, vn, "spread_bursts: must be in [0, 1] "
			    "(a fraction of the mean gap between arrivals)");
		return rc;
	}
	if (strcmp(k, "max_requests") == 0)
		return y_u64(x, vn, k, &c->max_requests);
	if (strcmp(k, "max_model_len") == 0)
		return y_u64(x, vn, k, &c->max_model_len);
	if (strcmp(k, "window") == 0)
		return y_window(x, vn, c);
	if (strcmp(k, "filter") == 0)
		return y_filter(x, vn, c);
	if (strcmp(k, "cap") == 0)
		return y_cap(x, vn, c);
	if (strcmp(k, "tile") == 0)
		return y_tile(x, vn, c);
	if (strcmp(k, "generator") == 0)
		return y_generator(x, vn, &c->gen);
	if (strcmp(k, "dataset") == 0)
		return y_dataset(x, vn, c);
	return y_unknown(x, kn, "workload");
}

wl_err
wl_config_from_yaml(const struct yd_node *node, const char *file,
    struct wl_config *c, struct wl_error *err)
{
	struct ycx x;
	const struct yd_node *kn, *vn;
	wl_err rc;
	const char *slash;

	memset(&x, 0, sizeof(x));
	x.file = file;
	x.err = err;
	/*
	 * Paths resolve against the config file's directory; values given on
	 * the command line ("--set KEY=VALUE", no file) against the current one.
	 */
	if (file != NULL && strncmp(file, "--", 2) != 0 &&
	    (slash = strrchr(file, '/')) != NULL) {
		size_t n = (size_t)(slash - file);

		if (n == 0)
			snprintf(x.dir, sizeof(x.dir), "/");
		else if (n < sizeof(x.dir))
			snprintf(x.dir, sizeof(x.dir), "%.*s", (int)n, file);
	}
	rc = y_map(&x, node, "workload");
	if (rc != WL_OK)
		return rc;
	Y_EACH(node, kn, vn) {
		rc = y_workload_key(&x, kn, vn, c);
		if (rc != WL_OK)
			return rc;
	}
	return WL_OK;
}

wl_err
wl_config_load(const char *path, struct wl_config *c, struct wl_error *err)
{
	struct yd_doc doc;
	const struct yd_node *node;
	char msg[sizeof(err->what) + 4200];	/* "PATH:LINE:COL: what" */
	FILE *f;
	kv_err e;
	wl_err rc;

	f = fopen(path, "rb");
	if (f == NULL) {
		wl__error_set(err, path, 0, 0, "cannot open: %s",
		    strerror(errno));
		return WL_EIO;
	}
	/* libyaml's document loader's reading: no check for repeated keys,
	 * the rest of the file after the first document unread */
	e = yd_read(&doc, f, path, YD_LOADER, msg, sizeof(msg));
	fclose(f);
	if (e == KV_ENOMEM) {
		wl__error_set(err, path, 0, 0, "out of memory");
		return WL_ENOMEM;
	}
	if (e != KV_OK) {
		wl__error_set(err, path, doc.err_line, (uint32_t)doc.err_col,
		    "%s", msg + doc.err_what);
		return WL_ECONFIG;
	}
	if (doc.root == NULL) {
		wl__error_set(err, path, 0, 0, "empty YAML document");
		rc = WL_ECONFIG;
	} else {
		node = yd_get(doc.root, "workload");
		rc = wl_config_from_yaml(node != NULL ? node : doc.root, path,
		    c, err);
	}
	yd_release(&doc);
	return rc;
}

/* Writing it back ------------------------------------------------------- */

/* The code point of the valid UTF-8 sequence at s, and its length; 0 if
 * the bytes there are not one (overlong, a surrogate, cut short). */
static int
utf8_seq(const unsigned char *s, uint32_t *cp)
{
	uint32_t c, min;
	int n;

	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	n = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
	min = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
	c = s[0] & (0x7fu >> n);
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3fu);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

void
wl_yaml_escape(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s != '\0') {
		uint32_t cp;
		int n;

		if (*s == '"' || *s == '\\') {
			fputc('\\', f);
			fputc(*s++, f);
		} else if (*s >= 0x20 && *s < 0x7f) {
			fputc(*s++, f);
		} else if (*s < 0x80) {
			/* libyaml refuses control characters, even quoted */
			if (*s == '\t')
				fputs("\\t", f);
			else if (*s == '\n')
				fputs("\\n", f);
			else if (*s == '\r')
				fputs("\\r", f);
			else
				fprintf(f, "\\x%02X", *s);
			s++;
		} else if ((n = utf8_seq(s, &cp)) == 0) {
			fprintf(f, "\\x%02X", *s++);
		} else if (cp <= 0x9f || cp == 0x2028 || cp == 0x2029 ||
		    cp == 0xfeff || cp == 0xfffe || cp == 0xffff) {
			/* C1 controls, NEL and the Unicode line and paragraph
			 * separators (which a quoted scalar would fold), the
			 * byte-order mark and the two non-characters */
			fprintf(f, cp <= 0xff ? "\\x%02" PRIX32 :
			    "\\u%04" PRIX32, cp);
			s += n;
		} else {
			fwrite(s, 1, (size_t)n, f);
			s += n;
		}
	}
}

void
wl_yaml_num(FILE *f, double v)
{
	char buf[32];

	for (int p = 15; p <= 17; p++) {
		snprintf(buf, sizeof(buf), "%.*g", p, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	fputs(buf, f);
}

/* A path in quotes, made absolute unless it is "-" (standard input). */
static void
put_path(FILE *f, const char *path)
{
	char cwd[4096];

	fputc('"', f);
	if (path[0] != '/' && strcmp(path, "-") != 0 &&
	    getcwd(cwd, sizeof(cwd)) != NULL) {
		wl_yaml_escape(f, cwd);
		fputc('/', f);
	}
	wl_yaml_escape(f, path);
	fputc('"', f);
}

static void
put_list(FILE *f, const char *key, const double *v, size_t n)
{
	fprintf(f, ", %s: [", key);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			fputs(", ", f);
		wl_yaml_num(f, v[i]);
	}
	fputc(']', f);
}

/*
 * A distribution in flow style: its kind, the kind's own parameters, and
 * min and max where they are not the defaults `def` holds (always for
 * uniform and zipf, whose support they are).  min comes before max: the
 * reader takes a min only within the bounds it holds, and from the
 * defaults it only ever raises min and lowers max, so a configuration it
 * read has def->min <= min <= max <= def->max.
 */
/* ", key: v" of a flow mapping. */
static void
put_pair(FILE *f, const char *key, double v)
{
	fprintf(f, ", %s: ", key);
	wl_yaml_num(f, v);
}

static void
put_dist(FILE *f, const struct wl_dist *d, const struct wl_dist *def)
{
	bool support = d->kind == WL_DIST_UNIFORM || d->kind == WL_DIST_ZIPF;

	fprintf(f, "{dist: %s", dist_names[d->kind]);
	switch (d->kind) {
	case WL_DIST_FIXED:
		put_pair(f, "value", d->value);
		break;
	case WL_DIST_UNIFORM:
		break;
	case WL_DIST_NORMAL:
		put_pair(f, "mean", d->mean);
		put_pair(f, "sd", d->sd);
		break;
	case WL_DIST_LOGNORMAL:
		/* mean and cv were turned into these: the exact form */
		put_pair(f, "mu", d->mu);
		put_pair(f, "sigma", d->sigma);
		break;
	case WL_DIST_ZIPF:
		put_pair(f, "s", d->s);
		break;
	case WL_DIST_EMPIRICAL:
		put_list(f, "values", d->values, d->nvalues);
		if (d->weights != NULL)
			put_list(f, "weights", d->weights, d->nvalues);
		break;
	}
	if (support || d->min != def->min)
		fprintf(f, ", min: %" PRId64, d->min);
	if (support || d->max != def->max)
		fprintf(f, ", max: %" PRId64, d->max);
	fputs("}\n", f);
}

static void
put_arrival(FILE *f, const struct wl_arrival *a, int in)
{
	fprintf(f, "%*sarrival:\n%*sprocess: %s\n", in, "", in + 2, "",
	    arrival_names[a->kind]);
	if (a->kind != WL_ARR_SCHEDULE) {
		fprintf(f, "%*srate: ", in + 2, "");
		wl_yaml_num(f, a->rate);
		fputc('\n', f);
	}
	if (a->kind == WL_ARR_GAMMA) {
		fprintf(f, "%*scv: ", in + 2, "");
		wl_yaml_num(f, a->cv);
		fputc('\n', f);
	}
	if (a->kind == WL_ARR_ONOFF) {
		fprintf(f, "%*son_s: ", in + 2, "");
		wl_yaml_num(f, a->on_s);
		fprintf(f, "\n%*soff_s: ", in + 2, "");
		wl_yaml_num(f, a->off_s);
		fprintf(f, "\n%*soff_rate: ", in + 2, "");
		wl_yaml_num(f, a->off_rate);
		fputc('\n', f);
	}
	if (a->kind == WL_ARR_SCHEDULE) {
		fprintf(f, "%*srepeat: %s\n%*ssegments:\n", in + 2, "",
		    a->repeat ? "true" : "false", in + 2, "");
		for (size_t i = 0; i < a->nsegs; i++) {
			fprintf(f, "%*s- {duration_s: ", in + 4, "");
			wl_yaml_num(f, a->segs[i].duration_s);
			put_pair(f, "rate", a->segs[i].rate);
			fputs("}\n", f);
		}
	}
}

static void
put_generator(FILE *f, const struct wl_gen_config *g,
    const struct wl_gen_config *def, int in)
{
	fprintf(f, "%*sgenerator:\n", in, "");
	in += 2;
	fprintf(f, "%*srequests: %" PRIu64 "\n%*sduration_s: ", in, "",
	    g->requests, in, "");
	wl_yaml_num(f, g->duration_s);
	fputc('\n', f);
	put_arrival(f, &g->arrival, in);
	fprintf(f, "%*sprompt: ", in, "");
	put_dist(f, &g->prompt, &def->prompt);
	fprintf(f, "%*soutput: ", in, "");
	put_dist(f, &g->output, &def->output);
	fprintf(f, "%*spriority: ", in, "");
	put_dist(f, &g->priority, &def->priority);
	fprintf(f, "%*sn: ", in, "");
	put_dist(f, &g->n, &def->n);
	if (g->lengths_trace != NULL) {
		fprintf(f, "%*slengths_from: {trace: ", in, "");
		put_path(f, g->lengths_trace);
		if (g->lengths_sharegpt)
			fprintf(f, ", format: sharegpt, output_len: %" PRIu32
			    "}\n", g->lengths_output);
		else
			fprintf(f, ", format: %s}\n",
			    wl_format_name(g->lengths_format));
	}
	fprintf(f, "%*sprefix:\n%*ssystems: %" PRIu32 "\n%*szipf_s: ", in, "",
	    in + 2, "", g->systems, in + 2, "");
	wl_yaml_num(f, g->system_zipf_s);
	fprintf(f, "\n%*slength: ", in + 2, "");
	put_dist(f, &g->system_len, &def->system_len);
	fprintf(f, "%*sfraction: ", in + 2, "");
	wl_yaml_num(f, g->system_fraction);
	fprintf(f, "\n%*ssessions:\n%*sturns: ", in, "", in + 2, "");
	put_dist(f, &g->turns, &def->turns);
	fprintf(f, "%*sthink_s: ", in + 2, "");
	wl_yaml_num(f, g->think_s);
	fprintf(f, "\n%*smax_context: %" PRIu64 "\n", in + 2, "",
	    g->max_context);
	if (g->lora_adapters > 0) {
		fprintf(f, "%*slora: {adapters: %" PRIu32 ", zipf_s: ", in,
		    "", g->lora_adapters);
		wl_yaml_num(f, g->lora_zipf_s);
		fprintf(f, ", fraction: ");
		wl_yaml_num(f, g->lora_fraction);
		fprintf(f, "}\n");
	}
}

void
wl_config_write_yaml(const struct wl_config *c, FILE *f, int in)
{
	struct wl_config def;

	wl_config_init(&def);
	if (c->kind == WL_KIND_IPERF) {
		fprintf(f, "%*skind: inference-perf\n%*sconfig: ", in, "", in,
		    "");
		put_path(f, c->ip_config);
		fputc('\n', f);
	} else if (c->trace != NULL) {
		fprintf(f, "%*strace: ", in, "");
		put_path(f, c->trace);
		fprintf(f, "\n%*sformat: %s\n", in, "",
		    wl_format_name(c->format));
	} else {
		put_generator(f, &c->gen, &def.gen, in);
	}
	fprintf(f, "%*sseed: %" PRIu64 "\n", in, "", c->seed);
	fprintf(f, "%*svocab_size: %" PRIu32 "\n", in, "", c->vocab_size);
	fprintf(f, "%*stime_scale: ", in, "");
	wl_yaml_num(f, c->time_scale);
	fputc('\n', f);
	if (c->target_rate > 0) {
		fprintf(f, "%*starget_rate: ", in, "");
		wl_yaml_num(f, c->target_rate);
		fputc('\n', f);
	}
	if (c->spread_bursts > 0) {
		fprintf(f, "%*sspread_bursts: ", in, "");
		wl_yaml_num(f, c->spread_bursts);
		fputc('\n', f);
	}
	fprintf(f, "%*smax_requests: %" PRIu64 "\n", in, "", c->max_requests);
	fprintf(f, "%*son_error: %s\n%*sorder: %s\n", in, "",
	    on_error_names[c->on_error], in, "", order_names[c->order]);
	fprintf(f, "%*ssort_window: %" PRIu32 "\n", in, "", c->sort_window);
	fprintf(f, "%*shash_block_tokens: %" PRIu32 "\n", in, "",
	    c->hash_block_tokens);
	/* The rest only where it is not the default (then it is off). */
	if (c->max_model_len != 0)
		fprintf(f, "%*smax_model_len: %" PRIu64 "\n", in, "",
		    c->max_model_len);
	if (c->max_concurrency != 0)
		fprintf(f, "%*smax_concurrency: %" PRIu32 "\n", in, "",
		    c->max_concurrency);
	if (c->timeout_s != 0) {
		fprintf(f, "%*stimeout_s: ", in, "");
		wl_yaml_num(f, c->timeout_s);
		fputc('\n', f);
	}
	if (c->window_start_s != 0 || c->window_end_s != 0) {
		fprintf(f, "%*swindow: {start_s: ", in, "");
		wl_yaml_num(f, c->window_start_s);
		put_pair(f, "end_s", c->window_end_s);
		fputs("}\n", f);
	}
	if (c->min_prompt != 0 || c->max_prompt != 0 || c->min_output != 0 ||
	    c->max_output != 0 || c->max_total != 0)
		fprintf(f, "%*sfilter: {min_prompt_tokens: %" PRIu64
		    ", max_prompt_tokens: %" PRIu64 ", min_output_tokens: %"
		    PRIu64 ", max_output_tokens: %" PRIu64
		    ", max_total_tokens: %" PRIu64 "}\n", in, "",
		    c->min_prompt, c->max_prompt, c->min_output, c->max_output,
		    c->max_total);
	if (c->cap_prompt != 0 || c->cap_output != 0)
		fprintf(f, "%*scap: {prompt_tokens: %" PRIu64
		    ", output_tokens: %" PRIu64 "}\n", in, "", c->cap_prompt,
		    c->cap_output);
	if (c->tile_copies != 1 || c->tile_period_s != 0 || c->tile_share) {
		fprintf(f, "%*stile: {copies: %" PRIu32 ", period_s: ", in, "",
		    c->tile_copies);
		wl_yaml_num(f, c->tile_period_s);
		fprintf(f, ", share_prefixes: %s}\n",
		    c->tile_share ? "true" : "false");
	}
	wl_config_release(&def);
}
