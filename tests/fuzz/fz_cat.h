/*
 * fz_cat.h -- the shipped catalog, loaded once per harness process
 * (fz_cat.c).
 */
#ifndef TESTS_FUZZ_FZ_CAT_H
#define TESTS_FUZZ_FZ_CAT_H

#include "tests/fuzz/fuzz.h"

#include "sim/model/catalog.h"

/* Load data/'s catalog (cat_datadir()); aborts when it does not load. */
void fz_cat_load(void);

/* The catalog fz_cat_load read. */
const cat *fz_cat(void);

#endif
