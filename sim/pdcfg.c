/*
 * pdcfg.c -- the disaggregation: section of a run's configuration and the
 * link catalog (pdcfg.h).
 *
 * Pool keys are checked where they are read (the engine keys by runcfg's
 * own setters, on a scratch configuration) and kept as given; a pool's
 * configuration is the top-level one with them applied
 * (sim_pd_pool_config), so every key a pool leaves out is the top-level
 * value.
 */
#include "config.h"

#include "sim/pdcfg.h"

#include "sim/model/catalog.h"
#include "sim/runcfg.h"
#include "util/ydoc.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *const pool_names[2] = { "prefill", "decode" };

const char *
sim_pd_pool_name(int pool)
{
	return pool_names[pool == SIM_PD_DECODE];
}

static kv_err
pdfail(char *err, size_t errlen, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static kv_err
pdfail(char *err, size_t errlen, const char *where, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "%s: ", where);

	if (n >= 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return KV_EINVAL;
}

static int
pd_router(const char *v)
{
	for (int r = 0; r < 3; r++)
		if (strcmp(v, sim_router_name((enum sim_router)r)) == 0)
			return r;
	return -1;
}

/* One engine key of a pool: checked by runcfg's setter, then kept. */
static kv_err
pool_engine(struct sim_pd_pool *p, const char *key, const char *v,
	    const char *where, char *err, size_t errlen)
{
	struct sim_config scratch;
	struct sim_pd_set *s = NULL;
	kv_err e;

	if (strlen(key) >= sizeof(p->eng[0].key) ||
	    strlen(v) >= sizeof(p->eng[0].val))
		return pdfail(err, errlen, where, "%s: too long", key);
	sim_config_init(&scratch);
	e = sim_config_set_key(&scratch, key, v, where, err, errlen);
	sim_config_release(&scratch);
	if (e != KV_OK)
		return e;
	for (uint32_t i = 0; i < p->neng; i++)
		if (strcmp(p->eng[i].key, key) == 0)
			s = &p->eng[i];
	if (s == NULL) {
		if (p->neng == SIM_PD_MAX_ENGINE)
			return pdfail(err, errlen, where, "more than %d engine "
				      "keys in one pool", SIM_PD_MAX_ENGINE);
		s = &p->eng[p->neng++];
	}
	snprintf(s->key, sizeof(s->key), "%s", key);
	snprintf(s->val, sizeof(s->val), "%s", v);
	snprintf(s->where, sizeof(s->where), "%s", where);
	return KV_OK;
}

/* A scalar key of a pool ("replicas", "engine.max_num_seqs", ...). */
static kv_err
pool_key(struct sim_pd_pool *p, const char *pool, const char *key,
	 const char *v, const char *where, char *err, size_t errlen)
{
	uint64_t u;
	int r;

	if (strcmp(key, "replicas") == 0) {
		if (!sim_config_parse_u64(v, 1, 4096, &u))
			return pdfail(err, errlen, where, "disaggregation.%s."
				      "replicas: expected an integer in "
				      "[1, 4096], got '%s'", pool, v);
		p->replicas = (uint32_t)u;
	} else if (strcmp(key, "gpu") == 0) {
		if (v[0] == '\0' || strlen(v) >= sizeof(p->gpu))
			return pdfail(err, errlen, where, "disaggregation.%s."
				      "gpu: expected a catalog GPU, got '%s'",
				      pool, v);
		snprintf(p->gpu, sizeof(p->gpu), "%s", v);
		snprintf(p->gpu_where, sizeof(p->gpu_where), "%s", where);
	} else if (strcmp(key, "tensor_parallel_size") == 0) {
		if (!sim_config_parse_u64(v, 1, 1024, &u))
			return pdfail(err, errlen, where, "disaggregation.%s."
				      "tensor_parallel_size: expected an "
				      "integer in [1, 1024], got '%s'", pool,
				      v);
		p->tp = (uint32_t)u;
	} else if (strcmp(key, "router") == 0) {
		if ((r = pd_router(v)) < 0)
			return pdfail(err, errlen, where, "disaggregation.%s."
				      "router: expected round-robin, "
				      "least-outstanding or prefix-affinity, "
				      "got '%s'", pool, v);
		p->router = r;
	} else if (strncmp(key, "engine.", 7) == 0) {
		return pool_engine(p, key, v, where, err, errlen);
	} else {
		return pdfail(err, errlen, where, "unknown key "
			      "'disaggregation.%s.%s'", pool, key);
	}
	return KV_OK;
}

/* key: below "disaggregation." ("link", "prefill.replicas", ...). */
static kv_err
pd_key(struct sim_config *c, const char *key, const char *v,
       const char *where, char *err, size_t errlen)
{
	struct sim_pd_config *pd = &c->pd;
	double d;

	pd->on = true;
	for (int i = 0; i < 2; i++) {
		size_t n = strlen(pool_names[i]);

		if (strncmp(key, pool_names[i], n) == 0 && key[n] == '.')
			return pool_key(&pd->pool[i], pool_names[i],
					key + n + 1, v, where, err, errlen);
	}
	if (strcmp(key, "link") == 0) {
		if (v[0] == '\0' || strlen(v) >= sizeof(pd->link))
			return pdfail(err, errlen, where, "disaggregation.link:"
				      " expected a link of data/links.yaml, "
				      "got '%s'", v);
		snprintf(pd->link, sizeof(pd->link), "%s", v);
		snprintf(pd->link_where, sizeof(pd->link_where), "%s", where);
		return KV_OK;
	}
	if (strcmp(key, "kv_transfer_timeout_s") == 0) {
		if (!sim_config_parse_dbl(v, 1e-3, 1e9, &d))
			return pdfail(err, errlen, where, "disaggregation."
				      "kv_transfer_timeout_s: expected seconds "
				      "from 1e-3 to 1e9, got '%s'", v);
		pd->timeout_s = d;
		return KV_OK;
	}
	return pdfail(err, errlen, where, "unknown key 'disaggregation.%s'",
		      key);
}

kv_err
sim_pd_set(struct sim_config *c, const char *key, const char *v,
	   const char *where, char *err, size_t errlen)
{
	return pd_key(c, key, v, where, err, errlen);
}

static void
pd_mark(char *buf, size_t len, const char *file, const struct yd_node *n)
{
	snprintf(buf, len, "%s:%lu:%lu", file, n->line, n->col);
}

/*
 * The mapping vn under prefix ("prefill", "prefill.engine", or "" at the
 * top): every scalar leaf through pd_key, each named at its value (an
 * unknown key at the key).
 */
static kv_err
pd_walk(struct sim_config *c, const char *prefix, const struct yd_node *vn,
	const char *file, int depth, char *err, size_t errlen)
{
	char where[SIM_WHERE_LEN], full[256];

	if (vn->type != YD_MAP) {
		pd_mark(where, sizeof(where), file, vn);
		return pdfail(err, errlen, where, "disaggregation%s%s: "
			      "expected a mapping", prefix[0] ? "." : "",
			      prefix);
	}
	c->pd.on = true;
	for (size_t i = 0; i < vn->n; i++) {
		const struct yd_node *k = yd_key(vn, i), *v = yd_val(vn, i);
		kv_err e;

		pd_mark(where, sizeof(where), file, k);
		if (k->type != YD_SCALAR)
			return pdfail(err, errlen, where, "expected a key");
		snprintf(full, sizeof(full), "%s%s%s", prefix,
			 prefix[0] ? "." : "", k->str);
		if (v->type != YD_MAP && (depth == 0 ?
		    strcmp(full, "prefill") == 0 || strcmp(full, "decode") == 0
		    : depth == 1 && strcmp(k->str, "engine") == 0)) {
			pd_mark(where, sizeof(where), file, v);
			e = pdfail(err, errlen, where, "disaggregation.%s: "
				   "expected a mapping", full);
		} else if (v->type == YD_MAP && depth < 2) {
			e = pd_walk(c, full, v, file, depth + 1, err, errlen);
		} else if (v->type != YD_SCALAR) {
			pd_mark(where, sizeof(where), file, v);
			e = pdfail(err, errlen, where, "disaggregation.%s: "
				   "expected a scalar value", full);
		} else {
			char vw[SIM_WHERE_LEN];

			pd_mark(vw, sizeof(vw), file, v);
			e = pd_key(c, full, v->str, vw, err, errlen);
			/* an unknown key is named at the key */
			if (e != KV_OK && strstr(err, "unknown key") != NULL)
				e = pdfail(err, errlen, where, "unknown key "
					   "'disaggregation.%s'", full);
		}
		if (e != KV_OK)
			return e;
	}
	return KV_OK;
}

kv_err
sim_pd_load(struct sim_config *c, const struct yd_node *vn, const char *file,
	    char *err, size_t errlen)
{
	return pd_walk(c, "", vn, file, 0, err, errlen);
}

/* "KEY: "VALUE"" with YAML's double-quote escapes. */
static void
pd_put_str(FILE *f, const char *indent, const char *k, const char *v)
{
	fprintf(f, "%s%s: \"", indent, k);
	for (const char *s = v; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputs("\"\n", f);
}

void
sim_pd_write(const struct sim_config *c, FILE *f)
{
	const struct sim_pd_config *pd = &c->pd;

	if (!pd->on)
		return;
	fprintf(f, "disaggregation:\n");
	pd_put_str(f, "  ", "link", pd->link);
	fprintf(f, "  kv_transfer_timeout_s: %.17g\n", pd->timeout_s);
	for (int i = 0; i < 2; i++) {
		const struct sim_pd_pool *p = &pd->pool[i];

		fprintf(f, "  %s:\n    replicas: %" PRIu32 "\n", pool_names[i],
			p->replicas ? p->replicas : c->replicas);
		if (p->gpu[0] != '\0')
			pd_put_str(f, "    ", "gpu", p->gpu);
		if (p->tp > 0)
			fprintf(f, "    tensor_parallel_size: %" PRIu32 "\n",
				p->tp);
		fprintf(f, "    router: %s\n", sim_router_name(
			p->router >= 0 ? (enum sim_router)p->router :
			c->router));
		if (p->neng > 0)
			fprintf(f, "    engine:\n");
		for (uint32_t j = 0; j < p->neng; j++)
			pd_put_str(f, "      ", p->eng[j].key + 7,
				   p->eng[j].val);
	}
}

kv_err
sim_pd_pool_config(const struct sim_config *c, int pool,
		   struct sim_config *out, char *err, size_t errlen)
{
	const struct sim_pd_pool *p = &c->pd.pool[pool == SIM_PD_DECODE];
	kv_err e;

	*out = *c;
	out->replicas = p->replicas ? p->replicas : c->replicas;
	if (p->gpu[0] != '\0') {
		snprintf(out->gpu, sizeof(out->gpu), "%s", p->gpu);
		snprintf(out->gpu_where, sizeof(out->gpu_where), "%s",
			 p->gpu_where);
	}
	if (p->tp > 0)
		out->eng.tensor_parallel_size = p->tp;
	if (p->router >= 0)
		out->router = (enum sim_router)p->router;
	for (uint32_t j = 0; j < p->neng; j++) {
		e = sim_config_set_key(out, p->eng[j].key, p->eng[j].val,
				       p->eng[j].where, err, errlen);
		if (e != KV_OK)
			return e;
	}
	return KV_OK;
}

/* One entry of links.yaml, checked. */
static kv_err
link_entry(const struct yd_node *it, const char *path, struct sim_link *l,
	   char *err, size_t errlen)
{
	static const char *const keys[] = { "id", "bandwidth_gbps",
					    "latency_us" };
	const struct yd_node *v[3];
	char where[1200];

	pd_mark(where, sizeof(where), path, it);
	if (it->type != YD_MAP)
		return pdfail(err, errlen, where, "expected a link: a mapping "
			      "of id, bandwidth_gbps, latency_us");
	for (size_t i = 0; i < it->n; i++) {
		const struct yd_node *k = yd_key(it, i);
		bool known = false;

		for (int j = 0; j < 3; j++)
			known |= k->type == YD_SCALAR &&
				 strcmp(k->str, keys[j]) == 0;
		if (!known) {
			pd_mark(where, sizeof(where), path, k);
			return pdfail(err, errlen, where, "unknown key '%s' "
				      "(a link has id, bandwidth_gbps, "
				      "latency_us)", k->type == YD_SCALAR ?
				      k->str : "?");
		}
	}
	for (int j = 0; j < 3; j++) {
		v[j] = yd_get(it, keys[j]);
		if (v[j] == NULL)
			return pdfail(err, errlen, where, "link without %s",
				      keys[j]);
		pd_mark(where, sizeof(where), path, v[j]);
		if (v[j]->type != YD_SCALAR)
			return pdfail(err, errlen, where, "%s: expected a "
				      "scalar value", keys[j]);
	}
	pd_mark(where, sizeof(where), path, v[0]);
	if (v[0]->str[0] == '\0' || strlen(v[0]->str) >= sizeof(l->id))
		return pdfail(err, errlen, where, "id: expected a name");
	snprintf(l->id, sizeof(l->id), "%s", v[0]->str);
	pd_mark(where, sizeof(where), path, v[1]);
	if (!sim_config_parse_dbl(v[1]->str, 1e-6, 1e6, &l->gbps))
		return pdfail(err, errlen, where, "bandwidth_gbps: expected "
			      "GB/s from 1e-6 to 1e6, got '%s'", v[1]->str);
	pd_mark(where, sizeof(where), path, v[2]);
	if (!sim_config_parse_dbl(v[2]->str, 0, 1e9, &l->latency_us))
		return pdfail(err, errlen, where, "latency_us: expected "
			      "microseconds from 0 to 1e9, got '%s'",
			      v[2]->str);
	return KV_OK;
}

kv_err
sim_link_list(const char *dir, struct sim_link **out, size_t *n, char *err,
	      size_t errlen)
{
	char path[1100], msg[1400], where[1200];
	const struct yd_node *ls;
	struct yd_doc doc;
	kv_err e;

	*out = NULL;
	*n = 0;
	snprintf(path, sizeof(path), "%s/links.yaml",
		 dir != NULL ? dir : cat_datadir());
	e = yd_read_path(&doc, path, YD_LOADER | YD_UNIQUE, msg, sizeof(msg));
	if (e != KV_OK) {
		snprintf(err, errlen, "%s", msg);
		yd_release(&doc);
		return e == KV_ENOMEM || e == KV_ENOENT ? e : KV_EINVAL;
	}
	ls = doc.root != NULL ? yd_get(doc.root, "links") : NULL;
	if (ls == NULL || ls->type != YD_SEQ || ls->n == 0) {
		if (ls != NULL)
			pd_mark(where, sizeof(where), path, ls);
		else
			snprintf(where, sizeof(where), "%s", path);
		yd_release(&doc);
		return pdfail(err, errlen, where, "expected links: a list of "
			      "links");
	}
	*out = calloc(ls->n, sizeof(**out));
	if (*out == NULL) {
		yd_release(&doc);
		snprintf(err, errlen, "out of memory");
		return KV_ENOMEM;
	}
	for (size_t i = 0; i < ls->n; i++) {
		e = link_entry(ls->kid[i], path, &(*out)[i], err, errlen);
		for (size_t j = 0; e == KV_OK && j < i; j++)
			if (strcmp((*out)[j].id, (*out)[i].id) == 0) {
				pd_mark(where, sizeof(where), path,
					ls->kid[i]);
				e = pdfail(err, errlen, where, "link '%s' "
					   "listed twice", (*out)[i].id);
			}
		if (e != KV_OK) {
			free(*out);
			*out = NULL;
			yd_release(&doc);
			return e;
		}
	}
	*n = ls->n;
	yd_release(&doc);
	return KV_OK;
}

kv_err
sim_link_find(const char *dir, const char *id, const char *where,
	      struct sim_link *out, char *err, size_t errlen)
{
	struct sim_link *ls;
	size_t n;
	kv_err e = sim_link_list(dir, &ls, &n, err, errlen);

	if (e != KV_OK)
		return e;
	for (size_t i = 0; i < n; i++)
		if (strcmp(ls[i].id, id) == 0) {
			*out = ls[i];
			free(ls);
			return KV_OK;
		}
	free(ls);
	return pdfail(err, errlen, where, "disaggregation.link: unknown link "
		      "'%s' (kvsim catalog list links)", id);
}
