/*
 * tiers.c -- the KV tier catalog, data/tiers.yaml, and transfer times
 * (tiers.h).
 */
#include "config.h"

#include "sim/tiers.h"

#include "sim/model/catalog.h"
#include "util/ydoc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kv_err
tiers__fail(char *err, size_t errlen, const char *file,
	    const struct yd_node *n, const char *what)
{
	if (n != NULL)
		snprintf(err, errlen, "%s:%lu:%lu: %s", file, n->line, n->col,
			 what);
	else
		snprintf(err, errlen, "%s: %s", file, what);
	return KV_EINVAL;
}

/* A number >= lo at key k of entry e; *out unchanged when absent. */
static kv_err
tiers__num(const struct yd_node *e, const char *k, double lo,
	   const char *file, double *out, char *err, size_t errlen)
{
	const struct yd_node *v = yd_get(e, k);
	char what[128], *end;
	double x;

	if (v == NULL)
		return KV_OK;
	errno = 0;
	x = v->type == YD_SCALAR ? strtod(v->str, &end) : NAN;
	if (v->type != YD_SCALAR || errno != 0 || end == v->str ||
	    *end != '\0' || !isfinite(x) || x < lo) {
		snprintf(what, sizeof(what), "%s: expected a number >= %g",
			 k, lo);
		return tiers__fail(err, errlen, file, v, what);
	}
	*out = x;
	return KV_OK;
}

/* One entry of the tiers: list into its medium's slot. */
static kv_err
tiers__entry(struct sim_tiers *t, const struct yd_node *e, const char *file,
	     bool *seen, char *err, size_t errlen)
{
	const struct yd_node *id = yd_get(e, "id"), *tier = yd_get(e, "tier");
	const struct yd_node *link = yd_get(e, "link");
	struct sim_tier *m = NULL;
	int k = -1;
	kv_err r;

	if (e->type != YD_MAP || id == NULL || id->type != YD_SCALAR)
		return tiers__fail(err, errlen, file, e,
				   "a tier needs an id");
	for (int i = 0; i < SIM_TIER_NMEDIA; i++)
		if (strcmp(id->str, sim_tier_medium_name(i)) == 0)
			k = i;
	if (k < 0)
		return tiers__fail(err, errlen, file, id, "unknown medium "
				   "(cpu-dram, local-nvme, remote-store)");
	m = &t->m[k];
	if (tier == NULL || tier->type != YD_SCALAR ||
	    (strcmp(tier->str, "cpu") != 0 && strcmp(tier->str, "disk") != 0 &&
	     strcmp(tier->str, "remote") != 0))
		return tiers__fail(err, errlen, file, tier ? tier : e,
				   "tier: expected cpu, disk or remote");
	snprintf(m->id, sizeof(m->id), "%s", id->str);
	snprintf(m->tier, sizeof(m->tier), "%s", tier->str);
	m->host = link != NULL && link->type == YD_SCALAR &&
		  strcmp(link->str, "host") == 0;
	if (link != NULL && !m->host)
		return tiers__fail(err, errlen, file, link,
				   "link: expected host");
	if ((r = tiers__num(e, "read_gbps", 1e-6, file, &m->read_gbps, err,
			    errlen)) != KV_OK ||
	    (r = tiers__num(e, "write_gbps", 1e-6, file, &m->write_gbps, err,
			    errlen)) != KV_OK ||
	    (r = tiers__num(e, "latency_us", 0, file, &m->latency_us, err,
			    errlen)) != KV_OK)
		return r;
	if (!m->host && (m->read_gbps <= 0 || m->write_gbps <= 0))
		return tiers__fail(err, errlen, file, e, "a medium without "
				   "link: host needs read_gbps and "
				   "write_gbps");
	seen[k] = true;
	return KV_OK;
}

/* The run's kv_offload.tiers overrides; an override of a host-link medium
 * times it by its numbers instead. */
static void
tiers__override(struct sim_tiers *t, const struct sim_offload_config *o)
{
	for (int k = 0; k < SIM_TIER_NMEDIA; k++) {
		const struct sim_tier_override *v = &o->tier[k];
		struct sim_tier *m = &t->m[k];

		if (v->read_gbps >= 0)
			m->read_gbps = v->read_gbps;
		if (v->write_gbps >= 0)
			m->write_gbps = v->write_gbps;
		if (v->latency_us >= 0)
			m->latency_us = v->latency_us;
		if (m->host && m->read_gbps > 0 && m->write_gbps > 0 &&
		    (v->read_gbps >= 0 || v->write_gbps >= 0))
			m->host = false;
	}
}

kv_err
sim_tiers_load(struct sim_tiers *t, const char *dir,
	       const struct sim_offload_config *o, char *err, size_t errlen)
{
	char path[1200];
	struct yd_doc d;
	const struct yd_node *list;
	bool seen[SIM_TIER_NMEDIA] = { false };
	kv_err e;

	memset(t, 0, sizeof(*t));
	snprintf(path, sizeof(path), "%s/tiers.yaml",
		 dir != NULL ? dir : cat_datadir());
	e = yd_read_path(&d, path, YD_LOADER | YD_UNIQUE, err, errlen);
	if (e != KV_OK)
		return e;
	list = d.root != NULL ? yd_get(d.root, "tiers") : NULL;
	if (list == NULL || list->type != YD_SEQ)
		e = tiers__fail(err, errlen, path, d.root,
				"expected a `tiers:` list");
	for (size_t i = 0; e == KV_OK && i < list->n; i++)
		e = tiers__entry(t, list->kid[i], path, seen, err, errlen);
	for (int k = 0; e == KV_OK && k < SIM_TIER_NMEDIA; k++)
		if (!seen[k]) {
			char what[96];

			snprintf(what, sizeof(what), "no entry for medium %s",
				 sim_tier_medium_name(k));
			e = tiers__fail(err, errlen, path, NULL, what);
		}
	yd_release(&d);
	if (e == KV_OK && o != NULL)
		tiers__override(t, o);
	return e;
}

const struct sim_tier *
sim_tiers_find(const struct sim_tiers *t, const char *tier)
{
	for (int k = 0; k < SIM_TIER_NMEDIA; k++)
		if (strcmp(t->m[k].tier, tier) == 0)
			return &t->m[k];
	return NULL;
}

int64_t
sim_tier_xfer_ns(const struct sim_tier *m, const struct cost_model *cm,
		 enum cost_layout layout, bool store, uint64_t nblocks,
		 uint64_t bytes)
{
	int64_t host = 0;
	double gbps, ns;

	if (nblocks == 0)
		return 0;
	if (cm != NULL) {
		host = cost_swap_ns(cm, store ? COST_D2H : COST_H2D, nblocks,
				    layout);
		if (host < 0)
			host = 0;
	}
	if (m->host)
		return host;
	if (strcmp(m->tier, "cpu") == 0)	/* the link itself, overridden */
		host = 0;
	gbps = store ? m->write_gbps : m->read_gbps;
	ns = m->latency_us * 1e3 + (double)bytes / gbps;
	return host + (int64_t)(ns + 0.5);
}
