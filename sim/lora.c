/*
 * lora.c -- LoRA adapters in `kvsim run` (lora.h): the configuration
 * keys, an adapter's size and FLOPs from the model, and the adapter
 * caches of a replica (vLLM's LRUCacheWorkerLoRAManager: adapters
 * registered in a CPU cache of max_cpu_loras, activated into max_loras
 * GPU slots, each least recently used first out).
 */
#include "config.h"

#include "sim/lora.h"
#include "sim/model/catalog.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* vLLM's MaxLoRARanks. */
static const int64_t lora_ranks[] = { 1, 8, 16, 32, 64, 128, 256, 320, 512 };

void
sim_lora_config_init(struct sim_lora_config *c)
{
	c->enable = false;
	c->max_loras = 1;
	c->max_lora_rank = 16;
	c->max_cpu_loras = -1;
	c->load_gbps = -1;
	c->disk_gbps = 3.0;
}

static const char *const lora_keys[] = {
	"engine.enable_lora", "engine.max_loras", "engine.max_lora_rank",
	"engine.max_cpu_loras", "lora.load_gbps", "lora.disk_gbps", NULL
};

bool
sim_lora_is_key(const char *key)
{
	for (int i = 0; lora_keys[i] != NULL; i++)
		if (strcmp(lora_keys[i], key) == 0)
			return true;
	return false;
}

static bool
lora_int(const char *v, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	long long x;

	if (v[0] < '0' || v[0] > '9')
		return false;
	x = strtoll(v, &end, 10);
	if (*end != '\0' || x < lo || x > hi)
		return false;
	*out = x;
	return true;
}

static bool
lora_gbps(const char *v, double *out)
{
	char *end;
	double x = strtod(v, &end);

	if (end == v || *end != '\0' || !(x > 0 && x <= 1e6))
		return false;
	*out = x;
	return true;
}

static kv_err
lora_bad(char *what, size_t whatlen, const char *msg)
{
	snprintf(what, whatlen, "%s", msg);
	return KV_ECONFIG;
}

kv_err
sim_lora_set_key(struct sim_lora_config *c, const char *key, const char *v,
		 char *what, size_t whatlen)
{
	struct sim_lora_config d;
	bool null = v[0] == '\0' || strcmp(v, "~") == 0 ||
		    strcmp(v, "null") == 0 || strcmp(v, "auto") == 0;

	sim_lora_config_init(&d);
	if (strcmp(key, "engine.enable_lora") == 0) {
		if (null)
			c->enable = d.enable;
		else if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0)
			c->enable = v[0] == 't';
		else
			return lora_bad(what, whatlen, "expected true or "
					"false");
	} else if (strcmp(key, "engine.max_loras") == 0) {
		if (null)
			c->max_loras = d.max_loras;
		else if (!lora_int(v, 1, 1 << 16, &c->max_loras))
			return lora_bad(what, whatlen, "expected an integer "
					"from 1 to 65536 (vLLM's max_loras "
					"is at least 1)");
	} else if (strcmp(key, "engine.max_lora_rank") == 0) {
		int64_t r = 0;
		size_t i;

		if (null) {
			c->max_lora_rank = d.max_lora_rank;
			return KV_OK;
		}
		for (i = 0; i < sizeof(lora_ranks) / sizeof(*lora_ranks); i++)
			if (lora_int(v, 1, 512, &r) && r == lora_ranks[i])
				break;
		if (i == sizeof(lora_ranks) / sizeof(*lora_ranks))
			return lora_bad(what, whatlen, "expected one of "
					"vLLM's ranks 1, 8, 16, 32, 64, 128, "
					"256, 320, 512");
		c->max_lora_rank = r;
	} else if (strcmp(key, "engine.max_cpu_loras") == 0) {
		if (null)
			c->max_cpu_loras = d.max_cpu_loras;
		else if (!lora_int(v, 1, 1 << 20, &c->max_cpu_loras))
			return lora_bad(what, whatlen, "expected a positive "
					"integer (at least max_loras)");
	} else if (strcmp(key, "lora.load_gbps") == 0 ||
		   strcmp(key, "lora.disk_gbps") == 0) {
		double *dst = key[5] == 'l' ? &c->load_gbps : &c->disk_gbps;

		if (null)
			*dst = key[5] == 'l' ? d.load_gbps : d.disk_gbps;
		else if (!lora_gbps(v, dst))
			return lora_bad(what, whatlen, "expected GB/s, a "
					"number > 0");
	} else {
		return KV_ENOTSUP;
	}
	return KV_OK;
}

kv_err
sim_lora_check(const struct sim_lora_config *c, char *what, size_t whatlen)
{
	if (c->enable && c->max_cpu_loras >= 0 &&
	    c->max_cpu_loras < c->max_loras) {
		snprintf(what, whatlen, "engine.max_cpu_loras (%" PRId64 ") "
			 "must be >= engine.max_loras (%" PRId64 "), as "
			 "vLLM's LoRAConfig requires", c->max_cpu_loras,
			 c->max_loras);
		return KV_ECONFIG;
	}
	return KV_OK;
}

void
sim_lora_write_engine(const struct sim_lora_config *c, FILE *f)
{
	if (!c->enable)
		return;
	fprintf(f, "  enable_lora: true\n  max_loras: %" PRId64 "\n"
		"  max_lora_rank: %" PRId64 "\n", c->max_loras,
		c->max_lora_rank);
	if (c->max_cpu_loras >= 0)
		fprintf(f, "  max_cpu_loras: %" PRId64 "\n", c->max_cpu_loras);
}

void
sim_lora_write_section(const struct sim_lora_config *c, FILE *f)
{
	if (!c->enable)
		return;
	fprintf(f, "lora:\n");
	if (c->load_gbps > 0)
		fprintf(f, "  load_gbps: %.17g\n", c->load_gbps);
	fprintf(f, "  disk_gbps: %.17g\n", c->disk_gbps);
}

void
sim_lora_setup_make(const struct sim_lora_config *c,
		    const struct cat_model *m, uint32_t tp, double host_bw,
		    struct sim_lora_setup *out)
{
	double h = m->hidden_size, hd = m->head_dim, in = m->intermediate_size;
	double io, t = tp ? tp : 1;

	/* qkv_proj, o_proj, gate_up_proj, down_proj: in + out each */
	io = (h + (m->num_heads + 2.0 * m->num_kv_heads) * hd) +
	     (m->num_heads * hd + h) + (h + 2 * in) + (in + h);
	memset(out, 0, sizeof(*out));
	out->max_loras = (uint32_t)c->max_loras;
	out->max_cpu = (uint32_t)(c->max_cpu_loras >= 0 ? c->max_cpu_loras :
				  c->max_loras);
	out->rank = (uint32_t)c->max_lora_rank;
	out->bytes = (double)c->max_lora_rank * io * m->num_layers *
		     (m->dtype_bytes ? m->dtype_bytes : 2) / t;
	out->flops_token = 2.0 * (double)c->max_lora_rank * io *
			   m->num_layers / t;
	out->load_bps = c->load_gbps > 0 ? c->load_gbps * 1e9 :
			host_bw > 0 ? host_bw : 25e9;
	out->disk_bps = c->disk_gbps * 1e9;
}

kv_err
sim_lora_cache_init(struct sim_lora_cache *lc, const struct sim_lora_setup *su)
{
	memset(lc, 0, sizeof(*lc));
	lc->su = su;
	lc->gpu = calloc(su->max_loras, sizeof(*lc->gpu));
	lc->gpu_t = calloc(su->max_loras, sizeof(*lc->gpu_t));
	lc->cpu = calloc(su->max_cpu, sizeof(*lc->cpu));
	lc->cpu_t = calloc(su->max_cpu, sizeof(*lc->cpu_t));
	if (lc->gpu == NULL || lc->gpu_t == NULL || lc->cpu == NULL ||
	    lc->cpu_t == NULL) {
		sim_lora_cache_release(lc);
		return KV_ENOMEM;
	}
	return KV_OK;
}

void
sim_lora_cache_release(struct sim_lora_cache *lc)
{
	free(lc->gpu);
	free(lc->gpu_t);
	free(lc->cpu);
	free(lc->cpu_t);
	memset(lc, 0, sizeof(*lc));
}

static bool
lora_in(const uint32_t *ids, uint32_t n, uint32_t a)
{
	for (uint32_t i = 0; i < n; i++)
		if (ids[i] == a)
			return true;
	return false;
}

/*
 * Find a in slots[0..cap) and mark it used; else put it in a free slot or
 * the least recently used one whose adapter the step does not run.
 * *hit says a was there.
 */
static void
lora_touch(uint32_t *slot, uint64_t *used, uint32_t cap, uint32_t a,
	   uint64_t now, const uint32_t *ids, uint32_t n, bool *hit)
{
	uint32_t at = cap;

	*hit = false;
	for (uint32_t i = 0; i < cap; i++)
		if (slot[i] == a) {
			used[i] = now;
			*hit = true;
			return;
		}
	for (uint32_t i = 0; i < cap && at == cap; i++)
		if (slot[i] == 0)
			at = i;
	if (at == cap)
		for (uint32_t i = 0; i < cap; i++)
			if (!lora_in(ids, n, slot[i]) &&
			    (at == cap || used[i] < used[at]))
				at = i;
	if (at == cap)
		return;		/* every slot runs in this step: n > cap */
	slot[at] = a;
	used[at] = now;
}

int64_t
sim_lora_cache_step(struct sim_lora_cache *lc, const uint32_t *ids,
		    uint32_t n)
{
	const struct sim_lora_setup *su = lc->su;
	double s = 0;
	bool hit;

	for (uint32_t i = 0; i < n; i++) {
		lc->clock++;
		lora_touch(lc->cpu, lc->cpu_t, su->max_cpu, ids[i], lc->clock,
			   ids, n, &hit);
		if (!hit) {
			lc->disk_loads++;
			s += su->bytes / su->disk_bps;
		}
		lora_touch(lc->gpu, lc->gpu_t, su->max_loras, ids[i],
			   lc->clock, ids, n, &hit);
		if (!hit) {
			lc->loads++;
			s += su->bytes / su->load_bps;
		}
	}
	lc->load_ns += (int64_t)(s * 1e9 + 0.5);
	return (int64_t)(s * 1e9 + 0.5);
}
