/*
 * fuzz_catalog.c -- the catalog files (sim/model/catalog.h): the first
 * byte chooses models.yaml (0), gpus.yaml (1) or a Hugging Face
 * config.json (2, any other value too); the rest is the file.  What
 * loads is used as `kvsim kv-size` would use it: each model counted and
 * sized on a GPU of the shipped catalog, each GPU with a shipped model.
 */
#include "tests/fuzz/fz_cat.h"

#include "sim/model/sizing.h"

#include <stdlib.h>

void
fz_setup(void)
{
	fz_cat_load();
}

static void
size_one(const struct cat_model *m, const struct cat_gpu *g)
{
	struct sz_engine eng;
	struct sz_result *r = malloc(sizeof(*r));
	uint64_t total, active;
	char why[1024];

	if (r == NULL)
		return;
	cat_model_count_params(m, &total, &active);
	(void)cat_model_is_hybrid(m);
	sz_engine_init(&eng);
	(void)sz_compute(m, g, &eng, r, why, sizeof(why));
	free(r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct cat_gpu *g0 = cat_gpu_at(fz_cat(), 0);
	const struct cat_model *m0 = cat_model_at(fz_cat(), 0);
	struct cat_model *hf = NULL;
	struct cat_err e;
	char path[4200];
	cat *c = NULL;
	unsigned sel;

	if (size < 1)
		return 0;
	sel = data[0];
	if (fz_write(sel == 0 ? "models.yaml" : sel == 1 ? "gpus.yaml" :
		     "config.json", data + 1, size - 1, path,
		     sizeof(path)) == NULL)
		return 0;
	if (sel == 0 && cat_load_files(&c, path, NULL, &e) == KV_OK) {
		for (size_t i = 0; i < cat_nmodels(c); i++)
			size_one(cat_model_at(c, i), g0);
	} else if (sel == 1 && cat_load_files(&c, NULL, path, &e) == KV_OK) {
		for (size_t i = 0; i < cat_ngpus(c); i++)
			size_one(m0, cat_gpu_at(c, i));
	} else if (sel > 1 && cat_model_from_hf(&hf, path, &e) == KV_OK) {
		size_one(hf, g0);
	}
	cat_model_free(hf);
	cat_free(c);
	return 0;
}
