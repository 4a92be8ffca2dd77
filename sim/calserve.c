/*
 * calserve.c -- fitting cost terms to measured serving runs (calserve.h).
 *
 * Reading: the measured files are JSON, read with util/ydoc.h (positions
 * on every node), so a bad value is "FILE:LINE:COL: what" and a missing
 * key "FILE:LINE:COL: no KEY" at the mapping that lacks it.  The run
 * configurations are read once, by sim_config_from_args, with the
 * overrides a stage needs.
 *
 * Fitting: every loss evaluation runs each case's simulation to the end
 * with the candidate terms (sim_run_opts.calib); nothing is kept between
 * evaluations, so the loss is a pure function of the terms and the fit is
 * deterministic.
 */
#define _XOPEN_SOURCE 700	/* realpath() */

#include "config.h"

#include "sim/calserve.h"
#include "sim/calib.h"
#include "sim/run.h"
#include "util/ydoc.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multimin.h>

static kv_err
cs_fail(char *err, size_t errlen, kv_err rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static kv_err
cs_fail(char *err, size_t errlen, kv_err rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

void
calserve_init(struct calserve *cs, uint64_t max_requests)
{
	memset(cs, 0, sizeof(*cs));
	cs->max_requests = max_requests;
}

void
calserve_release(struct calserve *cs)
{
	for (size_t i = 0; i < cs->n; i++)
		sim_config_release(&cs->c[i].cfg);
	free(cs->c);
	memset(cs, 0, sizeof(*cs));
}

/* ---- the measured files ------------------------------------------------- */

/*
 * The number at the dotted path under map: KV_OK; KV_EINVAL with the
 * position of the mapping that lacks a key, or of a value that is not a
 * number (or is negative).
 */
static kv_err
js_num(const char *file, const struct yd_node *map, const char *path,
       double *out, char *err, size_t errlen)
{
	const struct yd_node *n = map;
	char key[128], *end;
	const char *p = path;

	while (*p != '\0') {
		size_t len = strcspn(p, ".");
		const struct yd_node *k;

		snprintf(key, sizeof(key), "%.*s", (int)len, p);
		if (n == NULL || n->type != YD_MAP)
			return cs_fail(err, errlen, KV_EINVAL, "%s:%lu:%lu: "
				       "%s: expected a mapping", file,
				       n ? n->line : 0, n ? n->col : 0, path);
		k = yd_get(n, key);
		if (k == NULL)
			return cs_fail(err, errlen, KV_EINVAL, "%s:%lu:%lu: "
				       "no '%s' (%s)", file, n->line, n->col,
				       key, path);
		n = k;
		p += len + (p[len] == '.');
	}
	if (n->type != YD_SCALAR || yd_is_null(n))
		return cs_fail(err, errlen, KV_EINVAL, "%s:%lu:%lu: %s: "
			       "expected a number", file, n->line, n->col,
			       path);
	errno = 0;
	*out = strtod(n->str, &end);
	if (errno != 0 || end == n->str || *end != '\0' || !isfinite(*out) ||
	    *out < 0)
		return cs_fail(err, errlen, KV_EINVAL, "%s:%lu:%lu: %s: "
			       "expected a number of 0 or more, got '%s'",
			       file, n->line, n->col, path, n->str);
	return KV_OK;
}

/* inference-perf's lifecycle metrics: seconds. */
static kv_err
read_ip(const char *file, const struct yd_node *root, struct cs_metrics *m,
	char *err, size_t errlen)
{
	double n;
	kv_err rc;

	if ((rc = js_num(file, root, "successes.count", &n, err,
			 errlen)) != KV_OK ||
	    (rc = js_num(file, root, "successes.latency.time_to_first_token."
			 "mean", &m->ttft_s, err, errlen)) != KV_OK ||
	    (rc = js_num(file, root, "successes.latency.request_latency.mean",
			 &m->e2e_s, err, errlen)) != KV_OK)
		return rc;
	m->n = (uint64_t)n;
	m->out_len = 0;	/* its output_len counts stream chunks */
	return KV_OK;
}

/*
 * vLLM's `bench serve --save-result`: milliseconds.  mean_e2el_ms is
 * there only when --percentile-metrics names e2el; without it the mean
 * E2E is mean TTFT + mean TPOT x (out_len - 1), exact for a fixed output
 * length.
 */
static kv_err
read_vllm(const char *file, const struct yd_node *root, struct cs_metrics *m,
	  char *err, size_t errlen)
{
	double n, out, ttft, e2e, tpot;
	kv_err rc;

	if ((rc = js_num(file, root, "completed", &n, err, errlen)) != KV_OK ||
	    (rc = js_num(file, root, "total_output_tokens", &out, err,
			 errlen)) != KV_OK ||
	    (rc = js_num(file, root, "mean_ttft_ms", &ttft, err, errlen)) !=
	    KV_OK)
		return rc;
	if (n < 1)
		return cs_fail(err, errlen, KV_EINVAL, "%s:%lu:%lu: "
			       "completed: no successful request", file,
			       yd_get(root, "completed")->line,
			       yd_get(root, "completed")->col);
	m->n = (uint64_t)n;
	m->out_len = out / n;
	m->ttft_s = ttft / 1e3;
	if (yd_get(root, "mean_e2el_ms") != NULL) {
		rc = js_num(file, root, "mean_e2el_ms", &e2e, err, errlen);
		m->e2e_s = e2e / 1e3;
		return rc;
	}
	rc = js_num(file, root, "mean_tpot_ms", &tpot, err, errlen);
	m->e2e_s = (ttft + tpot * (m->out_len > 1 ? m->out_len - 1 : 0)) /
		   1e3;
	return rc;
}

kv_err
calserve_read_result(const char *path, struct cs_metrics *m, char *err,
		     size_t errlen)
{
	struct yd_doc d;
	kv_err rc;

	memset(m, 0, sizeof(*m));
	rc = yd_load_path(&d, path, err, errlen);
	if (rc != KV_OK) {
		yd_release(&d);
		return rc == KV_ENOMEM ? rc : KV_EINVAL;
	}
	if (d.root == NULL || d.root->type != YD_MAP)
		rc = cs_fail(err, errlen, KV_EINVAL, "%s:%lu:%lu: expected a "
			     "JSON object of metrics", path,
			     d.root ? d.root->line : 1,
			     d.root ? d.root->col : 1);
	else if (yd_get(d.root, "successes") != NULL)
		rc = read_ip(path, d.root, m, err, errlen);
	else if (yd_get(d.root, "mean_ttft_ms") != NULL)
		rc = read_vllm(path, d.root, m, err, errlen);
	else
		rc = cs_fail(err, errlen, KV_EINVAL, "%s:%lu:%lu: neither "
			     "inference-perf lifecycle metrics (successes) "
			     "nor a vllm bench serve result (mean_ttft_ms)",
			     path, d.root->line, d.root->col);
	if (rc == KV_OK && (m->n == 0 || !(m->ttft_s > 0) ||
			    !(m->e2e_s >= m->ttft_s)))
		rc = cs_fail(err, errlen, KV_EINVAL, "%s: no successful "
			     "request, or a mean E2E below the mean TTFT: "
			     "nothing to fit", path);
	yd_release(&d);
	return rc;
}

/* ---- cases -------------------------------------------------------------- */

static struct cs_case *
cs_push(struct calserve *cs)
{
	if (cs->n == cs->cap) {
		size_t cap = cs->cap ? cs->cap * 2 : 8;
		struct cs_case *c = realloc(cs->c, cap * sizeof(*c));

		if (c == NULL)
			return NULL;
		cs->c = c;
		cs->cap = cap;
	}
	memset(&cs->c[cs->n], 0, sizeof(cs->c[0]));
	return &cs->c[cs->n++];
}

/* The model, GPU and policy exist: "WHERE: what" at the key's place. */
static kv_err
cs_check_names(const struct sim_config *cfg, char *err, size_t errlen)
{
	char why[1024];
	const char *key = "";
	kv_err rc = sim_run_check_names(cfg, &key, why, sizeof(why));

	if (rc == KV_OK)
		return KV_OK;
	if (key[0] == '\0')
		return cs_fail(err, errlen, rc, "%s", why);
	return cs_fail(err, errlen, rc, "%s: %s", sim_config_where(cfg, key),
		       why);
}

/* One case: the configuration with sets, against the metrics in file. */
static kv_err
cs_case_add(struct calserve *cs, const char *config, const char *file,
	    const char *label, const char *const *sets, size_t nsets,
	    double out_len, char *err, size_t errlen)
{
	struct cs_case *c;
	struct cs_metrics m;
	kv_err rc;

	if ((rc = calserve_read_result(file, &m, err, errlen)) != KV_OK)
		return rc;
	if (out_len > 0)
		m.out_len = out_len;
	if ((c = cs_push(cs)) == NULL)
		return cs_fail(err, errlen, KV_ENOMEM, "out of memory");
	rc = sim_config_from_args(&c->cfg, config, sets, nsets, err, errlen);
	/* the fitted terms go over the configuration's own calibration, or
	 * over the defaults: never over the one kvsim ships (§5.6), so a
	 * fit does not depend on what it is meant to replace */
	if (rc == KV_OK && c->cfg.calibration[0] == '\0')
		c->cfg.calibration_none = true;
	if (rc == KV_OK)
		rc = cs_check_names(&c->cfg, err, errlen);
	if (rc != KV_OK) {
		sim_config_release(&c->cfg);
		cs->n--;
		return rc == KV_ENOMEM ? rc : KV_EINVAL;
	}
	snprintf(c->label, sizeof(c->label), "%s", label);
	c->run = cs->nruns;
	c->stage = -1;
	c->meas = m;
	return KV_OK;
}

/*
 * An inference-perf result directory: a case a stage of config.yaml, all
 * predicted by one run of that configuration itself (workload.kind
 * inference-perf: exact counts, stages that drain, prompt cycling, the
 * client timeout), each against stage_N_lifecycle_metrics.json.
 */
static kv_err
cs_dir_add(struct calserve *cs, const char *config, const char *dir,
	   char *err, size_t errlen)
{
	char path[1200], file[1200], label[600], absdir[PATH_MAX];
	char s_cfg[PATH_MAX + 64];
	const char *sets[2] = { "workload.kind=inference-perf", s_cfg };
	const struct yd_node *st;
	double out_len = 0;
	struct yd_doc d;
	kv_err rc;

	snprintf(path, sizeof(path), "%s/config.yaml", dir);
	if ((rc = yd_load_path(&d, path, err, errlen)) != KV_OK) {
		yd_release(&d);
		return rc == KV_ENOMEM ? rc : KV_EINVAL;
	}
	if (d.root != NULL && d.root->type == YD_MAP &&
	    yd_get(d.root, "data") != NULL &&
	    yd_get(yd_get(d.root, "data"), "shared_prefix") != NULL &&
	    (rc = js_num(path, d.root, "data.shared_prefix.output_len",
			 &out_len, err, errlen)) != KV_OK)
		goto out;
	st = d.root && d.root->type == YD_MAP && yd_get(d.root, "load") ?
	     yd_get(yd_get(d.root, "load"), "stages") : NULL;
	if (st == NULL || st->type != YD_SEQ || st->n == 0) {
		rc = cs_fail(err, errlen, KV_EINVAL, "%s:%lu:%lu: no "
			     "load.stages", path, d.root ? d.root->line : 1,
			     d.root ? d.root->col : 1);
		goto out;
	}
	if (st->n > CS_MAX_STAGES) {
		rc = cs_fail(err, errlen, KV_EINVAL, "%s:%lu:%lu: more than "
			     "%d load stages", path, st->line, st->col,
			     CS_MAX_STAGES);
		goto out;
	}
	if (realpath(dir, absdir) == NULL) {
		rc = cs_fail(err, errlen, KV_EINVAL, "%s: %s", dir,
			     strerror(errno));
		goto out;
	}
	snprintf(s_cfg, sizeof(s_cfg), "workload.config=%s/config.yaml",
		 absdir);
	for (size_t i = 0; i < st->n; i++) {
		double rate, dur;

		/* the stage as inference-perf reads it (the run checks the
		 * rest of the file) */
		if ((rc = js_num(path, st->kid[i], "rate", &rate, err,
				 errlen)) != KV_OK ||
		    (rc = js_num(path, st->kid[i], "duration", &dur, err,
				 errlen)) != KV_OK)
			goto out;
		if (!(rate > 0) || !(rate * dur >= 1)) {
			rc = cs_fail(err, errlen, KV_EINVAL, "%s:%lu:%lu: a "
				     "stage of no request", path,
				     st->kid[i]->line, st->kid[i]->col);
			goto out;
		}
		snprintf(file, sizeof(file), "%s/stage_%zu_lifecycle_"
			 "metrics.json", dir, i);
		snprintf(label, sizeof(label), "%s stage %zu", dir, i);
		rc = cs_case_add(cs, config, file, label, sets, 2, out_len,
				 err, errlen);
		if (rc != KV_OK)
			goto out;
		cs->c[cs->n - 1].stage = (int)i;
	}
out:
	yd_release(&d);
	return rc;
}

kv_err
calserve_add(struct calserve *cs, const char *config, const char *result,
	     char *err, size_t errlen)
{
	struct stat sb;
	kv_err rc;

	if (stat(result, &sb) != 0)
		return cs_fail(err, errlen, KV_EINVAL, "%s: %s", result,
			       strerror(errno));
	if (S_ISDIR(sb.st_mode))
		rc = cs_dir_add(cs, config, result, err, errlen);
	else
		rc = cs_case_add(cs, config, result, result, NULL, 0, 0, err,
				 errlen);
	if (rc == KV_OK)
		cs->nruns++;
	return rc;
}

/* ---- prediction --------------------------------------------------------- */

/* The metrics of the requests r collected (NULL: none). */
static void
cs_metrics_of(const rpt *r, struct cs_metrics *p)
{
	memset(p, 0, sizeof(*p));
	if (r == NULL)
		return;
	p->n = rpt_completed(r);
	p->ttft_s = rpt_mean(r, "ttft");
	p->e2e_s = rpt_mean(r, "e2e");
	p->out_len = p->n ? (double)rpt_output_tokens(r) / (double)p->n : 0;
}

kv_err
calserve_predict_group(const struct calserve *cs, size_t i,
		       const struct cost_calib *cal, struct cs_metrics *p,
		       size_t *n, char *err, size_t errlen)
{
	const struct cs_case *c = &cs->c[i];
	struct sim_run_opts o;
	sim_run *R = NULL;
	kv_err rc;

	*n = 1;
	if (c->stage >= 0)
		while (i + *n < cs->n && cs->c[i + *n].run == c->run &&
		       cs->c[i + *n].stage >= 0)
			(*n)++;
	memset(&o, 0, sizeof(o));
	memset(p, 0, *n * sizeof(*p));
	o.prog = "kvsim calibrate";
	o.quiet = true;
	o.calib = cal;
	rc = sim_run_open(&R, &c->cfg, &o, err, errlen);
	if (rc == KV_OK)
		rc = sim_run_exec(R, err, errlen);
	if (rc == KV_OK) {
		const rpt *rep = sim_run_report(R);

		for (size_t j = 0; j < *n; j++)
			cs_metrics_of(c->stage >= 0 ? rpt_stage(rep,
				      (uint32_t)cs->c[i + j].stage) : rep,
				      &p[j]);
	}
	sim_run_close(R);
	return rc;
}

kv_err
calserve_predict(const struct calserve *cs, size_t i,
		 const struct cost_calib *cal, struct cs_metrics *p,
		 char *err, size_t errlen)
{
	size_t first = i, n;
	struct cs_metrics *all;
	kv_err rc;

	while (cs->c[i].stage >= 0 && first > 0 &&
	       cs->c[first - 1].run == cs->c[i].run)
		first--;
	all = calloc(cs->n - first, sizeof(*all));
	if (all == NULL)
		return cs_fail(err, errlen, KV_ENOMEM, "out of memory");
	rc = calserve_predict_group(cs, first, cal, all, &n, err, errlen);
	if (rc == KV_OK)
		*p = all[i - first];
	free(all);
	return rc;
}

double
calserve_itl(const struct cs_metrics *m, const struct cs_metrics *p)
{
	double len = m->out_len > 0 ? m->out_len : p->out_len;

	return len > 1 ? (m->e2e_s - m->ttft_s) / (len - 1) : 0;
}

void
calserve_ape(const struct cs_metrics *p, const struct cs_metrics *m,
	     double out[3])
{
	double im = calserve_itl(m, p), ip = calserve_itl(p, p);

	out[0] = fabs(p->ttft_s - m->ttft_s) / m->ttft_s;
	out[1] = fabs(p->e2e_s - m->e2e_s) / m->e2e_s;
	out[2] = im > 0 ? fabs(ip - im) / im : 0;
}

/* ---- the fit ------------------------------------------------------------ */

kv_err
calserve_calib(const struct cs_fit *f, const double *v, const char *src,
	       struct cost_calib *out, char *err, size_t errlen)
{
	kv_err rc = KV_OK;

	cost_calib_init(out);
	for (size_t t = 0; t < f->nterms && rc == KV_OK; t++)
		rc = cost_calib_set(out, f->term[t], v[t], src, err, errlen);
	if (rc != KV_OK)
		cost_calib_release(out);
	return rc;
}

struct fitctx {
	const struct calserve *cs;
	const struct cs_fit *f;
	size_t skip;
	size_t evals;
	kv_err rc;
	char *err;
	size_t errlen;
};

/* Free coordinate -> term value, and back. */
static double
to_value(const char *term, double x)
{
	if (cost_calib_term_kind(term) == COST_CALIB_EFF) {
		double v = 1.0 / (1.0 + exp(-x));

		return v < 1e-6 ? 1e-6 : v;
	}
	return x > 27.6 ? 1e12 : exp(x);	/* log(1e12) */
}

static double
to_free(const char *term, double v)
{
	if (cost_calib_term_kind(term) == COST_CALIB_EFF) {
		if (v > 0.999)
			v = 0.999;
		if (v < 1e-6)
			v = 1e-6;
		return log(v / (1 - v));
	}
	return log(v < 1.0 ? 1.0 : v);
}

/*
 * The absolute log ratio of p to m, large when p is no time at all.  Not
 * its square: an overloaded run whose queue kvsim misses by 1000x would
 * weigh as much as fifty runs off by 2x, and pull every term to it; the
 * absolute value keeps the fit near the median error.
 */
static double
abslog(double p, double m)
{
	if (!(m > 0))
		return 0;
	if (!(p > 0))
		return 10;
	return fabs(log(p / m));
}

/* The loss after a failure: finite (the simplex refuses infinities); the
 * fit stops at its next check. */
#define FIT_FAILED 1e300

static double
fit_loss(const gsl_vector *x, void *arg)
{
	struct fitctx *c = arg;
	double v[CS_MAX_TERMS], loss = 0;
	struct cost_calib cal;
	size_t used = 0;

	if (c->rc != KV_OK)
		return FIT_FAILED;
	for (size_t t = 0; t < c->f->nterms; t++)
		v[t] = to_value(c->f->term[t], gsl_vector_get(x, t));
	c->rc = calserve_calib(c->f, v, "fit", &cal, c->err, c->errlen);
	if (c->rc != KV_OK)
		return FIT_FAILED;
	c->evals++;
	for (size_t i = 0, n = 1; i < c->cs->n; i += n) {
		struct cs_metrics p[CS_MAX_STAGES];

		n = 1;
		if (c->cs->c[i].run == c->skip)
			continue;
		c->rc = calserve_predict_group(c->cs, i, &cal, p, &n, c->err,
					       c->errlen);
		if (c->rc != KV_OK)
			break;
		for (size_t j = 0; j < n; j++) {
			const struct cs_metrics *m = &c->cs->c[i + j].meas;

			loss += abslog(p[j].ttft_s, m->ttft_s) +
				abslog(p[j].e2e_s, m->e2e_s) +
				abslog(calserve_itl(&p[j], &p[j]),
				      calserve_itl(m, &p[j]));
			used++;
		}
	}
	cost_calib_release(&cal);
	if (c->rc != KV_OK)
		return FIT_FAILED;
	return used ? loss / (double)used : 0;
}

kv_err
calserve_fit(const struct calserve *cs, struct cs_fit *f, size_t skip,
	     char *err, size_t errlen)
{
	struct fitctx c = { cs, f, skip, 0, KV_OK, err, errlen };
	gsl_multimin_function fn = { fit_loss, f->nterms, &c };
	gsl_multimin_fminimizer *m;
	gsl_vector *x, *step;
	size_t max = f->max_evals ? f->max_evals : 60 * f->nterms;
	double s0 = f->step0 > 0 ? f->step0 : 0.5;
	int st;

	if (f->nterms == 0 || f->nterms > CS_MAX_TERMS)
		return cs_fail(err, errlen, KV_EINVAL, "fit 1 to %d terms, "
			       "not %zu", CS_MAX_TERMS, f->nterms);
	for (size_t t = 0; t < f->nterms; t++)
		if (cost_calib_term_kind(f->term[t]) < 0)
			return cs_fail(err, errlen, KV_EINVAL, "unknown cost "
				       "term '%s'", f->term[t]);
	m = gsl_multimin_fminimizer_alloc(gsl_multimin_fminimizer_nmsimplex2,
					  f->nterms);
	x = gsl_vector_alloc(f->nterms);
	step = gsl_vector_alloc(f->nterms);
	if (m == NULL || x == NULL || step == NULL) {
		c.rc = cs_fail(err, errlen, KV_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t t = 0; t < f->nterms; t++) {
		gsl_vector_set(x, t, to_free(f->term[t], f->start[t]));
		gsl_vector_set(step, t, s0);
	}
	/*
	 * A simplex can collapse in a long valley (terms that trade off,
	 * such as a per-step CPU time and a memory efficiency) short of the
	 * minimum: restart it around its best point, with smaller steps,
	 * until a restart gains nothing.
	 */
	for (int round = 0; round < 4 && c.rc == KV_OK && c.evals < max;
	     round++) {
		double before = round ? m->fval : GSL_POSINF;

		if (round > 0) {
			gsl_vector_memcpy(x, m->x);
			gsl_vector_set_all(step, fmin(s0, 0.2) / round);
		}
		gsl_multimin_fminimizer_set(m, &fn, x, step);
		st = GSL_CONTINUE;
		while (c.rc == KV_OK && st == GSL_CONTINUE && c.evals < max) {
			if (gsl_multimin_fminimizer_iterate(m) != GSL_SUCCESS)
				break;
			st = gsl_multimin_test_size(
				gsl_multimin_fminimizer_size(m), 1e-3);
		}
		if (!(m->fval < before * (1 - 1e-3)))
			break;
	}
	if (c.rc == KV_OK) {
		for (size_t t = 0; t < f->nterms; t++)
			f->value[t] = to_value(f->term[t],
					       gsl_vector_get(m->x, t));
		f->loss = m->fval;
		f->evals = c.evals;
	}
done:
	gsl_multimin_fminimizer_free(m);
	gsl_vector_free(x);
	gsl_vector_free(step);
	return c.rc;
}
