/*
 * fuzz_calib.c -- a calibration file (sim/calib.h cost_calib_load), as
 * `cost.calibration` names one, on the input; what loads goes into a
 * cost model of a shipped model and GPU (sim/cost.h cost_model_init).
 */
#include "tests/fuzz/fz_cat.h"

#include "sim/calib.h"

void
fz_setup(void)
{
	fz_cat_load();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cost_calib c;
	struct cost_config cc;
	struct cost_model cm;
	char path[4200], err[4096];

	if (fz_write("calibration.yaml", data, size, path,
		     sizeof(path)) == NULL)
		return 0;
	if (cost_calib_load(path, &c, err, sizeof(err)) != KV_OK)
		return 0;
	cost_config_init(&cc);
	cc.calib = &c;
	(void)cost_model_init(&cm, cat_model_at(fz_cat(), 0),
			      cat_gpu_at(fz_cat(), 0), &cc, err,
			      sizeof(err));
	cost_calib_release(&c);
	return 0;
}
