/*
 * calkern.c -- step shapes for the device bench, and the efficiency fit
 * from its measurements (calkern.h).
 *
 * Rows are grouped into points (the median of their repetitions) as they
 * are read; every fit is a closed-form least squares on relative error,
 * one or two parameters, so no GSL is needed here.  The CSV is read through
 * sim/calfit.h, which gives every field its line and column.
 */
#include "config.h"

#include "sim/calkern.h"
#include "sim/calfit.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[CALKERN_NKINDS] = { "gemm", "kvread",
							"copy" };
static const char *const term_keys[CALKERN_NTERMS] = {
	"eff_compute", "eff_weights", "eff_kv_read", "eff_interconnect"
};

const char *
calkern_kind_name(enum calkern_kind k)
{
	return (unsigned)k < CALKERN_NKINDS ? kind_names[k] : "?";
}

const char *
calkern_term_key(enum calkern_term_id t)
{
	return (unsigned)t < CALKERN_NTERMS ? term_keys[t] : "?";
}

static kv_err
calkern__fail(char *err, size_t errlen, kv_err rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static kv_err
calkern__fail(char *err, size_t errlen, kv_err rc, const char *fmt, ...)
{
	va_list ap;

	if (errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* ---- shapes -------------------------------------------------------------- */

static void
calkern__shape(struct calkern_shape *s, const struct cat_model *m,
	       unsigned tp, enum calkern_kind kind, const char *name,
	       unsigned long n, unsigned long k, unsigned long count)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->model, sizeof(s->model), "%s", m->id);
	s->tp = tp;
	s->kind = kind;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->n = n;
	s->k = k;
	s->count = count;
	s->elem_bytes = m->dtype_bytes;
}

kv_err
calkern_shapes(const struct cat_model *m, unsigned tp,
	       struct calkern_shape *out, size_t cap, size_t *n, char *err,
	       size_t errlen)
{
	unsigned long h = m->hidden_size, hd = m->head_dim, kvh, q, inter;
	unsigned long L = m->num_layers;
	size_t i = 0;

	*n = 0;
	if (tp == 0 || cap < 7)
		return calkern__fail(err, errlen, KV_EINVAL, "%s: tp %u, "
				     "room for %zu shapes", m->id, tp, cap);
	if (cat_model_count(m, CAT_MIX_FULL) != m->num_layers ||
	    m->kv_lora_rank != 0 || m->num_kv_heads == 0)
		return calkern__fail(err, errlen, KV_ENOTSUP, "%s: only "
				     "decoders whose every layer is full "
				     "attention are benched (no MLA, sliding "
				     "window or recurrent state)", m->id);
	if (m->num_heads % tp != 0 || h % tp != 0 || m->vocab_size % tp != 0)
		return calkern__fail(err, errlen, KV_ENOTSUP, "%s: heads %u, "
				     "hidden %lu or vocabulary %u not "
				     "divisible by tp %u", m->id,
				     m->num_heads, h, m->vocab_size, tp);
	q = m->num_heads / tp;
	kvh = m->num_kv_heads / tp > 0 ? m->num_kv_heads / tp : 1;
	calkern__shape(&out[i++], m, tp, CALKERN_GEMM, "qkv",
		       (q + 2 * kvh) * hd, h, L);
	calkern__shape(&out[i++], m, tp, CALKERN_GEMM, "o", h, q * hd, L);
	if (m->num_experts == 0) {
		inter = m->intermediate_size / tp;
		calkern__shape(&out[i++], m, tp, CALKERN_GEMM, "gate_up",
			       (m->mlp_gated ? 2 : 1) * inter, h, L);
		calkern__shape(&out[i++], m, tp, CALKERN_GEMM, "down", h,
			       inter, L);
	} else {
		inter = (m->moe_intermediate_size ? m->moe_intermediate_size :
			 m->intermediate_size) / tp;
		calkern__shape(&out[i++], m, tp, CALKERN_GEMM,
			       "expert_gate_up", 2 * inter, h,
			       L * m->experts_per_tok);
		calkern__shape(&out[i++], m, tp, CALKERN_GEMM, "expert_down",
			       h, inter, L * m->experts_per_tok);
	}
	calkern__shape(&out[i++], m, tp, CALKERN_GEMM, "lm_head",
		       m->vocab_size / tp, h, 1);
	calkern__shape(&out[i++], m, tp, CALKERN_KVREAD, "kv", kvh, hd, L);
	calkern__shape(&out[i++], m, tp, CALKERN_COPY, "allreduce", h, 1,
		       2 * L + 1);
	*n = i;
	return KV_OK;
}

/* ---- measurements -------------------------------------------------------- */

void
calkern_set_init(struct calkern_set *s)
{
	memset(s, 0, sizeof(*s));
}

void
calkern_set_release(struct calkern_set *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->p[i].t);
	free(s->p);
	calkern_set_init(s);
}

/* The point under key, added (with hold group g) when new; NULL when
 * memory runs out. */
static struct calkern_point *
calkern__point(struct calkern_set *s, const char *key)
{
	struct calkern_point *q;

	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->p[i].key, key) == 0)
			return &s->p[i];
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;

		q = realloc(s->p, cap * sizeof(*q));
		if (q == NULL)
			return NULL;
		s->p = q;
		s->cap = cap;
	}
	q = &s->p[s->n++];
	memset(q, 0, sizeof(*q));
	snprintf(q->key, sizeof(q->key), "%s", key);
	return q;
}

static int
calkern__add_time(struct calkern_point *q, double t)
{
	if (q->nt == q->capt) {
		size_t cap = q->capt ? q->capt * 2 : 8;
		double *x = realloc(q->t, cap * sizeof(*x));

		if (x == NULL)
			return -1;
		q->t = x;
		q->capt = cap;
	}
	q->t[q->nt++] = t;
	return 0;
}

/* The columns of a stepbench CSV, in the order looked up. */
enum { C_KIND, C_MODEL, C_TP, C_NAME, C_M, C_N, C_K, C_BYTES, C_FLOPS,
       C_REP, C_TIME, C_MEASURED, C_NCOLS };
static const char *const cols[C_NCOLS] = {
	"kind", "model", "tp", "name", "m", "n", "k", "bytes", "flops",
	"rep", "time_ns", "measured"
};

/* Field i as a whole number >= lo: 0, or -1 with the message in c->err. */
static int
calkern__whole(struct calfit_csv *c, int i, double lo, double *v)
{
	if (calfit_csv_num(c, i, v) != 0)
		return -1;
	if (*v == floor(*v) && *v >= lo && *v <= 9007199254740992.0)
		return 0;
	snprintf(c->err, sizeof(c->err), "%s:%lu:%lu: %s: expected a whole "
		 "number of %.0f or more, got '%s'", c->path, c->line,
		 c->col[i], c->head[i], lo, c->field[i]);
	return -1;
}

/* Check the current row into v[] (indexed by column) and *kind; 0, or -1
 * with the message in c->err. */
static int
calkern__row(struct calfit_csv *c, const int col[C_NCOLS], double v[],
	     int *kind, bool *measured)
{
	const char *f;
	int i;

	f = c->field[col[C_KIND]];
	for (*kind = 0; *kind < CALKERN_NKINDS; (*kind)++)
		if (strcmp(f, kind_names[*kind]) == 0)
			break;
	if (*kind == CALKERN_NKINDS) {
		i = col[C_KIND];
		goto bad_text;
	}
	if (c->field[col[C_MODEL]][0] == '\0' ||
	    c->field[col[C_NAME]][0] == '\0') {
		i = col[c->field[col[C_MODEL]][0] == '\0' ? C_MODEL : C_NAME];
		goto bad_text;
	}
	f = c->field[col[C_MEASURED]];
	if (strcmp(f, "yes") != 0 && strcmp(f, "no") != 0) {
		i = col[C_MEASURED];
		goto bad_text;
	}
	*measured = f[0] == 'y';
	for (i = C_TP; i <= C_REP; i++)
		if (i != C_NAME && calkern__whole(c, col[i],
						  i >= C_FLOPS ? 0 : 1,
						  &v[i]) != 0)
			return -1;
	if (calfit_csv_num(c, col[C_TIME], &v[C_TIME]) != 0)
		return -1;
	if (!(v[C_TIME] > 0)) {
		i = col[C_TIME];
		snprintf(c->err, sizeof(c->err), "%s:%lu:%lu: time_ns: "
			 "expected a time > 0, got '%s'", c->path, c->line,
			 c->col[i], c->field[i]);
		return -1;
	}
	if (*kind == CALKERN_GEMM &&
	    v[C_FLOPS] != 2 * v[C_M] * v[C_N] * v[C_K]) {
		i = col[C_FLOPS];
		snprintf(c->err, sizeof(c->err), "%s:%lu:%lu: flops: %s is "
			 "not 2 m n k (%.17g)", c->path, c->line, c->col[i],
			 c->field[i], 2 * v[C_M] * v[C_N] * v[C_K]);
		return -1;
	}
	return 0;
bad_text:
	snprintf(c->err, sizeof(c->err), "%s:%lu:%lu: %s: unexpected '%s' (%s)",
		 c->path, c->line, c->col[i], c->head[i], c->field[i],
		 i == col[C_KIND] ? "gemm, kvread or copy" :
		 i == col[C_MEASURED] ? "yes or no" : "not empty");
	return -1;
}

/* The point of the current row (v as calkern__row left it). */
static kv_err
calkern__store(struct calkern_set *s, struct calfit_csv *c,
	       const int col[C_NCOLS], const double v[], int kind)
{
	char key[200];
	struct calkern_point *q;

	snprintf(key, sizeof(key), "%s|%s|%.0f|%s|%.0f|%.0f|%.0f",
		 kind_names[kind], c->field[col[C_MODEL]], v[C_TP],
		 c->field[col[C_NAME]], v[C_M], v[C_N], v[C_K]);
	q = calkern__point(s, key);
	if (q == NULL || calkern__add_time(q, v[C_TIME]) != 0)
		return KV_ENOMEM;
	if (q->nt == 1) {
		q->kind = (enum calkern_kind)kind;
		if (kind == CALKERN_GEMM)
			snprintf(q->group, sizeof(q->group), "%s|%.0f|%s",
				 c->field[col[C_MODEL]], v[C_TP],
				 c->field[col[C_NAME]]);
		else
			snprintf(q->group, sizeof(q->group), "%s", key);
		snprintf(q->model, sizeof(q->model), "%s",
			 c->field[col[C_MODEL]]);
		q->m = v[C_M];
		q->n = v[C_N];
		q->k = v[C_K];
		q->bytes = v[C_BYTES];
		q->flops = v[C_FLOPS];
	} else if (q->bytes != v[C_BYTES] || q->flops != v[C_FLOPS]) {
		snprintf(c->err, sizeof(c->err), "%s:%lu:%lu: bytes and flops "
			 "differ from an earlier repetition of the same shape",
			 c->path, c->line, c->col[col[C_BYTES]]);
		return KV_EINVAL;
	}
	return KV_OK;
}

/*
 * The group a point is held out with: a GEMM's matmul (model, tp, name:
 * all its token counts), else the point itself.  Numbered in order of
 * first appearance within its kind.
 */
static void
calkern__groups(struct calkern_set *s)
{
	memset(s->ngroups, 0, sizeof(s->ngroups));
	for (size_t i = 0; i < s->n; i++) {
		struct calkern_point *q = &s->p[i];
		size_t j;

		q->t_ns = calfit_quantile(q->t, q->nt, 0.5);
		for (j = 0; j < i; j++)
			if (s->p[j].kind == q->kind &&
			    strcmp(s->p[j].group, q->group) == 0)
				break;
		q->hold = j < i ? s->p[j].hold : s->ngroups[q->kind]++;
	}
}

kv_err
calkern_read(const char *path, struct calkern_set *s, char *err,
	     size_t errlen)
{
	struct calfit_csv c;
	int col[C_NCOLS], kind, r;
	double v[C_NCOLS];
	size_t rows = 0;
	bool measured;
	kv_err rc = KV_EINVAL;

	if (calfit_csv_open(&c, path) != 0)
		goto out;
	for (int i = 0; i < C_NCOLS; i++)
		if ((col[i] = calfit_csv_col(&c, cols[i])) < 0)
			goto out;
	while ((r = calfit_csv_next(&c)) == 1) {
		if (calkern__row(&c, col, v, &kind, &measured) != 0)
			goto out;
		if ((rc = calkern__store(s, &c, col, v, kind)) != KV_OK)
			goto out;
		rc = KV_EINVAL;
		rows++;
		if (!measured)
			s->unmeasured++;
	}
	if (r < 0)
		goto out;
	if (rows == 0) {
		snprintf(c.err, sizeof(c.err), "%s:%lu:1: no measurement rows",
			 path, c.line + 1);
		goto out;
	}
	s->rows += rows;
	calkern__groups(s);
	rc = KV_OK;
out:
	if (rc == KV_ENOMEM)
		snprintf(c.err, sizeof(c.err), "%s: out of memory", path);
	if (rc != KV_OK)
		snprintf(err, errlen, "%s", c.err);
	calfit_csv_close(&c);
	return rc;
}

/* ---- fit ----------------------------------------------------------------- */

enum calkern_term_id
calkern_classify(const struct calkern_point *p, double ridge)
{
	double ai;

	switch (p->kind) {
	case CALKERN_GEMM:
		ai = p->flops / p->bytes;
		if (ai >= 2 * ridge)
			return CALKERN_COMPUTE;
		return ai <= ridge / 8 ? CALKERN_WEIGHTS : CALKERN_NTERMS;
	case CALKERN_KVREAD:
		return p->bytes >= CALKERN_KV_MIN_BYTES ? CALKERN_KV_READ :
		       CALKERN_NTERMS;
	case CALKERN_COPY:
		return CALKERN_INTERCONNECT;
	default:
		return CALKERN_NTERMS;
	}
}

/* The time of point p at efficiency 1 and no fixed term (ns). */
static double
calkern__ideal(const struct calkern_peaks *pk, enum calkern_term_id t,
	       const struct calkern_point *p)
{
	switch (t) {
	case CALKERN_COMPUTE:
		return p->flops / pk->flops * 1e9;
	case CALKERN_INTERCONNECT:
		return 2 * p->bytes / pk->hbm * 1e9;
	default:
		return p->bytes / pk->hbm * 1e9;
	}
}

double
calkern_predict(const struct calkern_fit *f, const struct calkern_peaks *pk,
		enum calkern_term_id t, const struct calkern_point *p)
{
	const struct calkern_term *x = &f->term[t];

	return x->alpha_ns + calkern__ideal(pk, t, p) / x->eff;
}

/* Which points a fit or an error takes. */
enum calkern_pick { PICK_ALL, PICK_FIT, PICK_HELD };

struct calkern_ctx {
	const struct calkern_set *s;
	const struct calkern_peaks *pk;
	const char *hold_model;
	double ridge;
};

static bool
calkern__picked(const struct calkern_ctx *x, enum calkern_term_id t,
		const struct calkern_point *p, enum calkern_pick pick)
{
	bool held;

	if (calkern_classify(p, x->ridge) != t)
		return false;
	if (pick == PICK_ALL)
		return true;
	held = x->hold_model != NULL ? strcmp(p->model, x->hold_model) == 0 :
	       p->hold % 2 == 1;
	return held == (pick == PICK_HELD);
}

/*
 * Least squares on relative error over the picked points: eff (and, for
 * the copy, alpha >= 0).  The number of points, 0 when fewer than 2 or the
 * fit has no positive rate.
 */
static size_t
calkern__fit1(const struct calkern_ctx *x, enum calkern_term_id t,
	      enum calkern_pick pick, struct calkern_term *out)
{
	double su = 0, sv = 0, suu = 0, suv = 0, svv = 0, a, alpha = 0, det;
	size_t n = 0;

	for (size_t i = 0; i < x->s->n; i++) {
		const struct calkern_point *p = &x->s->p[i];
		double u, v;

		if (!calkern__picked(x, t, p, pick))
			continue;
		u = 1 / p->t_ns;
		v = calkern__ideal(x->pk, t, p) / p->t_ns;
		su += u;
		sv += v;
		suu += u * u;
		suv += u * v;
		svv += v * v;
		n++;
	}
	if (n < 2 || !(svv > 0))
		return 0;
	a = sv / svv;
	det = suu * svv - suv * suv;
	if (t == CALKERN_INTERCONNECT && det > 0) {
		double al = (su * svv - sv * suv) / det;
		double aa = (suu * sv - suv * su) / det;

		if (al >= 0 && aa > 0) {
			alpha = al;
			a = aa;
		}
	}
	if (!(a > 0))
		return 0;
	out->eff = 1 / a;
	out->alpha_ns = alpha;
	return n;
}

/* Median and p90 of |pred/t - 1| over the picked points; the count. */
static size_t
calkern__err(const struct calkern_ctx *x, const struct calkern_fit *f,
	     enum calkern_term_id t, enum calkern_pick pick, double *med,
	     double *p90)
{
	double *e = malloc((x->s->n + 1) * sizeof(*e));
	size_t n = 0;

	*med = *p90 = NAN;
	if (e == NULL)
		return 0;
	for (size_t i = 0; i < x->s->n; i++) {
		const struct calkern_point *p = &x->s->p[i];

		if (calkern__picked(x, t, p, pick))
			e[n++] = fabs(calkern_predict(f, x->pk, t, p) /
				      p->t_ns - 1);
	}
	if (n > 0) {
		*med = calfit_quantile(e, n, 0.5);
		*p90 = calfit_quantile(e, n, 0.9);
	}
	free(e);
	return n;
}

kv_err
calkern_fit(const struct calkern_set *s, const struct calkern_peaks *pk,
	    const char *hold_model, struct calkern_fit *f, char *err,
	    size_t errlen)
{
	struct calkern_ctx x = { s, pk, hold_model, 0 };
	bool found = hold_model == NULL;

	memset(f, 0, sizeof(*f));
	if (!(pk->flops > 0) || !(pk->hbm > 0))
		return calkern__fail(err, errlen, KV_EINVAL, "the GPU's "
				     "peak FLOP/s and memory bandwidth must "
				     "be known (> 0)");
	for (size_t i = 0; i < s->n && !found; i++)
		found = strcmp(s->p[i].model, hold_model) == 0;
	if (!found)
		return calkern__fail(err, errlen, KV_EINVAL, "--holdout-model "
				     "%s: no row of that model", hold_model);
	x.ridge = f->ridge = pk->flops / pk->hbm;
	for (int t = 0; t < CALKERN_NTERMS; t++) {
		struct calkern_term *tm = &f->term[t], half;
		struct calkern_fit hf = *f;
		double m;

		tm->points = calkern__fit1(&x, t, PICK_ALL, tm);
		tm->ok = tm->points > 0;
		if (!tm->ok)
			continue;
		calkern__err(&x, f, t, PICK_ALL, &tm->fit_med_rel, &m);
		memset(&half, 0, sizeof(half));
		if (calkern__fit1(&x, t, PICK_FIT, &half) == 0)
			continue;
		hf.term[t] = half;
		tm->held = calkern__err(&x, &hf, t, PICK_HELD, &tm->med_rel,
					&tm->p90_rel);
	}
	return KV_OK;
}
