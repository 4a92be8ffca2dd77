/*
 * calib.c -- the calibration file reader (calib.h).
 *
 * The document is read whole with util/ydoc.h, then walked once: every key
 * is looked up in a table of the terms (top level) or the copy tree
 * (direction, strategy, host memory, term), so an unknown key is reported
 * at its own position and a bad value at the value's.  Sources are
 * composed as each term is set; on any error everything set so far is
 * freed, so a failed load keeps nothing.
 */
#include "config.h"

#include "sim/calib.h"
#include "util/ydoc.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cl {
	const char *file;
	struct cost_calib *c;
	char *err;
	size_t errlen;
};

static kv_err
cl_fail(struct cl *p, const struct yd_node *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static kv_err
cl_fail(struct cl *p, const struct yd_node *n, const char *fmt, ...)
{
	va_list ap;
	size_t len;

	if (p->errlen == 0)
		return KV_EINVAL;
	snprintf(p->err, p->errlen, "%s:%lu:%lu: ", p->file, n->line, n->col);
	len = strlen(p->err);
	va_start(ap, fmt);
	vsnprintf(p->err + len, p->errlen - len, fmt, ap);
	va_end(ap);
	return KV_EINVAL;
}

/*
 * The largest time term: 1000 s.  A term is a per-step, per-sequence,
 * per-token, per-call or per-byte cost; anything larger is a typo, and a
 * step of years would make the run write a timeseries row for every
 * simulated interval of it.
 */
#define CL_MAX_NS 1e12

/* What a term may hold. */
enum cl_kind {
	CL_EFF,		/* an efficiency: (0, 1] */
	CL_TIME		/* ns, ns per byte: [0, CL_MAX_NS] */
};

/*
 * Set *t from the node v: a number, or {value: X, source: S, note: N}.
 * name is the key, for messages.  null (or a null value) leaves *t unset.
 */
static kv_err
cl_term(struct cl *p, const char *name, const struct yd_node *v,
	enum cl_kind kind, struct cost_term *t)
{
	const char *note = NULL;
	const struct yd_node *at = v;
	char *end, *src;
	double x;
	int n;

	if (yd_is_null(v))
		return KV_OK;
	if (v->type == YD_MAP) {
		const struct yd_node *s = yd_get(v, "source");

		for (size_t i = 0; i < v->n; i++) {
			const char *k = yd_key(v, i)->str;

			if (strcmp(k, "value") != 0 &&
			    strcmp(k, "source") != 0 && strcmp(k, "note") != 0)
				return cl_fail(p, yd_key(v, i),
					       "%s: unknown key '%s' (value, "
					       "source, note)", name, k);
		}
		if (s != NULL && !yd_is_null(s)) {
			if (s->type != YD_SCALAR)
				return cl_fail(p, s, "%s: source: expected "
					       "text", name);
			note = s->str;
		}
		at = yd_get(v, "value");
		if (at == NULL)
			return cl_fail(p, v, "%s: a {source: ...} needs a "
				       "value", name);
		if (yd_is_null(at))
			return KV_OK;
	}
	if (at->type != YD_SCALAR)
		return cl_fail(p, at, "%s: expected a number", name);
	errno = 0;
	x = strtod(at->str, &end);
	if (errno != 0 || end == at->str || *end != '\0' || !isfinite(x))
		return cl_fail(p, at, "%s: expected a number, got '%s'", name,
			       at->str);
	if (kind == CL_EFF && !(x > 0.0 && x <= 1.0))
		return cl_fail(p, at, "%s: an efficiency must be in (0, 1], "
			       "got '%s'", name, at->str);
	if (kind == CL_TIME && !(x >= 0.0 && x <= CL_MAX_NS))
		return cl_fail(p, at, "%s: expected a number in [0, 1e12] "
			       "(ns), got '%s'", name, at->str);
	if (note != NULL)
		n = snprintf(NULL, 0, "%s (%s:%lu)", note, p->file, at->line);
	else
		n = snprintf(NULL, 0, "%s:%lu", p->file, at->line);
	src = malloc((size_t)n + 1);
	if (src == NULL) {
		snprintf(p->err, p->errlen, "%s: out of memory", p->file);
		return KV_ENOMEM;
	}
	if (note != NULL)
		snprintf(src, (size_t)n + 1, "%s (%s:%lu)", note, p->file,
			 at->line);
	else
		snprintf(src, (size_t)n + 1, "%s:%lu", p->file, at->line);
	free((char *)t->src);	/* NULL: keys are unique (ydoc) */
	t->v = x;
	t->src = src;
	return KV_OK;
}

static kv_err
cl_map(struct cl *p, const struct yd_node *v, const char *a, const char *b,
       const char *c)
{
	if (v->type != YD_MAP)
		return cl_fail(p, v, "%s%s%s%s%s: expected a mapping", a,
			       b ? "." : "", b ? b : "", c ? "." : "",
			       c ? c : "");
	return KV_OK;
}

/* copy: {DIR: {STRATEGY: {HOSTMEM: {alpha_ns, beta_ns, ns_per_byte}}}} */
static kv_err
cl_copy(struct cl *p, const struct yd_node *cp)
{
	static const char *const dirs = "d2h, h2d";
	static const char *const copies = "per-chunk, batch, gather, staged";
	static const char *const hms = "pinned, pageable";
	static const char *const terms = "alpha_ns, beta_ns, ns_per_byte";
	kv_err rc;

	if (yd_is_null(cp))
		return KV_OK;
	if ((rc = cl_map(p, cp, "copy", NULL, NULL)) != KV_OK)
		return rc;
	for (size_t i = 0; i < cp->n; i++) {
		const struct yd_node *dk = yd_key(cp, i), *dv = yd_val(cp, i);
		int d;

		for (d = 0; d < COST_NDIRS; d++)
			if (strcmp(dk->str, cost_dir_name((enum cost_dir)d))
			    == 0)
				break;
		if (d == COST_NDIRS)
			return cl_fail(p, dk, "copy: unknown direction '%s' "
				       "(%s)", dk->str, dirs);
		if (yd_is_null(dv))
			continue;
		if ((rc = cl_map(p, dv, "copy", dk->str, NULL)) != KV_OK)
			return rc;
		for (size_t j = 0; j < dv->n; j++) {
			const struct yd_node *ck = yd_key(dv, j);
			const struct yd_node *cv = yd_val(dv, j);
			enum cost_copy c;

			if (!cost_copy_parse(ck->str, &c))
				return cl_fail(p, ck, "copy.%s: unknown copy "
					       "strategy '%s' (%s)", dk->str,
					       ck->str, copies);
			if (yd_is_null(cv))
				continue;
			rc = cl_map(p, cv, "copy", dk->str, ck->str);
			if (rc != KV_OK)
				return rc;
			for (size_t k = 0; k < cv->n; k++) {
				const struct yd_node *hk = yd_key(cv, k);
				const struct yd_node *hv = yd_val(cv, k);
				struct cost_copy_terms *t;
				enum cost_hostmem h;

				if (!cost_hostmem_parse(hk->str, &h))
					return cl_fail(p, hk, "copy.%s.%s: "
						       "unknown host memory "
						       "'%s' (%s)", dk->str,
						       ck->str, hk->str, hms);
				if (yd_is_null(hv))
					continue;
				if (hv->type != YD_MAP)
					return cl_fail(p, hv, "copy.%s.%s.%s: "
						       "expected a mapping "
						       "(%s)",
						       dk->str, ck->str,
						       hk->str, terms);
				t = &p->c->copy[d][c][h];
				for (size_t m = 0; m < hv->n; m++) {
					const struct yd_node *tk =
						yd_key(hv, m);
					const struct yd_node *tv =
						yd_val(hv, m);
					struct cost_term *dst;
					char full[160];

					if (strcmp(tk->str, "alpha_ns") == 0)
						dst = &t->alpha_ns;
					else if (strcmp(tk->str, "beta_ns") ==
						 0)
						dst = &t->beta_ns;
					else if (strcmp(tk->str,
							"ns_per_byte") == 0)
						dst = &t->ns_per_byte;
					else
						return cl_fail(
							p, tk, "copy.%s.%s.%s:"
							" unknown term '%s' "
							"(%s)", dk->str,
							ck->str, hk->str,
							tk->str, terms);
					snprintf(full, sizeof(full),
						 "copy.%s.%s.%s.%s", dk->str,
						 ck->str, hk->str, tk->str);
					rc = cl_term(p, full, tv, CL_TIME,
						     dst);
					if (rc != KV_OK)
						return rc;
				}
			}
		}
	}
	return KV_OK;
}

/*
 * meta: where the numbers come from (kvsim calibrate writes it): text
 * fields, and `measured`, true only for device measurements.  Read and
 * checked; the terms' own sources carry what cost_describe prints.
 */
static kv_err
cl_meta(struct cl *p, const struct yd_node *m)
{
	static const char *const keys[] = { "device", "date", "measured",
					    "data", "holdout", "note" };

	if (yd_is_null(m))
		return KV_OK;
	if (m->type != YD_MAP)
		return cl_fail(p, m, "meta: expected a mapping");
	for (size_t i = 0; i < m->n; i++) {
		const struct yd_node *k = yd_key(m, i), *v = yd_val(m, i);
		size_t j;

		for (j = 0; j < sizeof(keys) / sizeof(keys[0]); j++)
			if (strcmp(k->str, keys[j]) == 0)
				break;
		if (j == sizeof(keys) / sizeof(keys[0]))
			return cl_fail(p, k, "meta: unknown key '%s' (device, "
				       "date, measured, data, holdout, note)",
				       k->str);
		if (v->type != YD_SCALAR)
			return cl_fail(p, v, "meta.%s: expected text", k->str);
		if (j == 2 && strcmp(v->str, "true") != 0 &&
		    strcmp(v->str, "false") != 0)
			return cl_fail(p, v, "meta.measured: true or false, "
				       "got '%s'", v->str);
	}
	return KV_OK;
}

/*
 * The top-level terms, one row each: the key, where the term sits and what
 * it may hold.  An old name and its new one point at the same term (a
 * union in struct cost_calib); a file may name it once.
 */
static const struct cl_row {
	const char *key;
	size_t off;
	enum cl_kind kind;
} cl_rows[] = {
#define ROW(k, kind) { #k, offsetof(struct cost_calib, k), kind }
	ROW(eff_compute, CL_EFF),
	ROW(eff_memory, CL_EFF),
	ROW(eff_interconnect, CL_EFF),
	ROW(allreduce_ns, CL_TIME),
	ROW(cpu_step_ns, CL_TIME),
	ROW(cpu_seq_ns, CL_TIME),
	ROW(cpu_token_ns, CL_TIME),
	ROW(eff_weights, CL_EFF),
	ROW(eff_kv_read, CL_EFF),
	ROW(eff_attn_compute, CL_EFF),
	ROW(allreduce_rank_ns, CL_TIME),
	ROW(cpu_sched_step_ns, CL_TIME),
	ROW(cpu_sched_seq_ns, CL_TIME),
	ROW(cpu_sched_token_ns, CL_TIME),
	ROW(cpu_prep_step_ns, CL_TIME),
	ROW(cpu_prep_seq_ns, CL_TIME),
	ROW(cpu_prep_token_ns, CL_TIME),
	ROW(graph_piecewise_layer_ns, CL_TIME),
	ROW(graph_eager_layer_ns, CL_TIME),
	ROW(gpu_step_ns, CL_TIME),
	ROW(gpu_layer_ns, CL_TIME),
	ROW(gpu_seq_layer_ns, CL_TIME),
	ROW(frontend_request_ns, CL_TIME),
	ROW(frontend_tokenize_ns, CL_TIME),
	ROW(frontend_stream_ns, CL_TIME),
	ROW(eff_kv_read_gqa, CL_EFF),
	ROW(eff_experts, CL_EFF),
#undef ROW
};

#define CL_NROWS (sizeof(cl_rows) / sizeof(cl_rows[0]))

/* "unknown key" with every key the table has. */
static kv_err
cl_unknown(struct cl *p, const struct yd_node *k)
{
	char list[1024];
	size_t len = 0;

	list[0] = '\0';
	for (size_t t = 0; t < CL_NROWS && len < sizeof(list); t++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s, ",
					cl_rows[t].key);
	return cl_fail(p, k, "unknown key '%s' (%scopy, meta)", k->str, list);
}

/* The other name of the term at off, if it has one and the file set it. */
static const char *
cl_alias(const struct yd_node *root, size_t i, size_t off)
{
	for (size_t j = 0; j < i; j++) {
		const char *k = yd_key(root, j)->str;

		for (size_t t = 0; t < CL_NROWS; t++)
			if (cl_rows[t].off == off &&
			    strcmp(k, cl_rows[t].key) == 0)
				return k;
	}
	return NULL;
}

static kv_err
cl_root(struct cl *p, const struct yd_node *root)
{
	kv_err rc;

	if (root == NULL)
		return KV_OK;	/* an empty file: nothing overridden */
	if (root->type != YD_MAP)
		return cl_fail(p, root, "expected a mapping of cost terms");
	for (size_t i = 0; i < root->n; i++) {
		const struct yd_node *k = yd_key(root, i), *v = yd_val(root, i);
		const char *other;
		size_t t;

		if (strcmp(k->str, "copy") == 0 ||
		    strcmp(k->str, "meta") == 0) {
			rc = k->str[0] == 'c' ? cl_copy(p, v) : cl_meta(p, v);
			if (rc != KV_OK)
				return rc;
			continue;
		}
		for (t = 0; t < CL_NROWS; t++)
			if (strcmp(k->str, cl_rows[t].key) == 0)
				break;
		if (t == CL_NROWS)
			return cl_unknown(p, k);
		if ((other = cl_alias(root, i, cl_rows[t].off)) != NULL)
			return cl_fail(p, k, "%s: the same term as '%s', "
				       "named before; name it once", k->str,
				       other);
		rc = cl_term(p, k->str, v, cl_rows[t].kind,
			     (struct cost_term *)((char *)p->c +
						  cl_rows[t].off));
		if (rc != KV_OK)
			return rc;
	}
	return KV_OK;
}

kv_err
cost_calib_load(const char *path, struct cost_calib *c, char *err,
		size_t errlen)
{
	struct yd_doc d;
	struct cl p = { path, c, err, errlen };
	kv_err rc;

	cost_calib_init(c);
	rc = yd_load_path(&d, path, err, errlen);
	if (rc != KV_OK) {
		yd_release(&d);
		return rc;
	}
	rc = cl_root(&p, d.root);
	yd_release(&d);
	if (rc != KV_OK)
		cost_calib_release(c);
	return rc;
}

static void
release_term(struct cost_term *t)
{
	free((char *)t->src);
	t->src = NULL;
	t->v = 0.0;
}

void
cost_calib_release(struct cost_calib *c)
{
	if (c == NULL)
		return;
	for (int d = 0; d < COST_NDIRS; d++)
		for (int k = 0; k < COST_NCOPIES; k++)
			for (int h = 0; h < COST_NHOSTMEMS; h++) {
				release_term(&c->copy[d][k][h].alpha_ns);
				release_term(&c->copy[d][k][h].beta_ns);
				release_term(&c->copy[d][k][h].ns_per_byte);
			}
	/* each term once: an old name shares its storage with the new */
	for (size_t t = 0; t < CL_NROWS; t++)
		release_term((struct cost_term *)((char *)c + cl_rows[t].off));
}

/* ---- terms by name ------------------------------------------------------ */

static const struct cl_row *
cl_find(const char *name)
{
	for (size_t t = 0; t < CL_NROWS; t++)
		if (strcmp(name, cl_rows[t].key) == 0)
			return &cl_rows[t];
	return NULL;
}

size_t
cost_calib_nterms(void)
{
	return CL_NROWS;
}

const char *
cost_calib_term_name(size_t i)
{
	return i < CL_NROWS ? cl_rows[i].key : NULL;
}

int
cost_calib_term_kind(const char *name)
{
	const struct cl_row *t = cl_find(name);

	if (t == NULL)
		return -1;
	return t->kind == CL_EFF ? COST_CALIB_EFF : COST_CALIB_TIME;
}

const struct cost_term *
cost_calib_term(const struct cost_calib *c, const char *name)
{
	const struct cl_row *t = cl_find(name);

	if (t == NULL)
		return NULL;
	return (const struct cost_term *)((const char *)c + t->off);
}

kv_err
cost_calib_set(struct cost_calib *c, const char *name, double v,
	       const char *src, char *err, size_t errlen)
{
	const struct cl_row *t = cl_find(name);
	struct cost_term *dst;
	char *copy;

	if (t == NULL) {
		snprintf(err, errlen, "unknown cost term '%s'", name);
		return KV_EINVAL;
	}
	if (!isfinite(v) || (t->kind == CL_EFF && !(v > 0.0 && v <= 1.0)) ||
	    (t->kind == CL_TIME && !(v >= 0.0 && v <= CL_MAX_NS))) {
		snprintf(err, errlen, "%s: %.17g is out of range (%s)", name,
			 v, t->kind == CL_EFF ? "(0, 1]" : "[0, 1e12] ns");
		return KV_EINVAL;
	}
	copy = strdup(src != NULL ? src : name);
	if (copy == NULL) {
		snprintf(err, errlen, "%s: out of memory", name);
		return KV_ENOMEM;
	}
	dst = (struct cost_term *)((char *)c + t->off);
	free((char *)dst->src);
	dst->v = v;
	dst->src = copy;
	return KV_OK;
}

kv_err
cost_calib_overlay(struct cost_calib *c, const struct cost_calib *from,
		   char *err, size_t errlen)
{
	for (size_t t = 0; t < CL_NROWS; t++) {
		const struct cost_term *s = (const struct cost_term *)
			((const char *)from + cl_rows[t].off);
		kv_err rc;

		if (s->src == NULL)
			continue;
		rc = cost_calib_set(c, cl_rows[t].key, s->v, s->src, err, errlen);
		if (rc != KV_OK)
			return rc;
	}
	return KV_OK;
}
