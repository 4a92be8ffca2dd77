/*
 * fz_cat.c -- the shipped catalog (data/models.yaml, data/gpus.yaml) for
 * the harnesses that size or cost what they read against it
 * (fuzz_catalog, fuzz_calib).
 */
#include "tests/fuzz/fz_cat.h"

#include <stdlib.h>

/* Set once by fz_cat_load (from fz_setup), read-only afterwards. */
static cat *fz__shipped;

void
fz_cat_load(void)
{
	struct cat_err e;

	if (cat_load(&fz__shipped, NULL, &e) != KV_OK) {
		fprintf(stderr, "fuzz: the shipped catalog: %s\n", e.msg);
		abort();
	}
}

const cat *
fz_cat(void)
{
	return fz__shipped;
}
