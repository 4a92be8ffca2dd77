/*
 * fuzz_calibrate.c -- `kvsim calibrate`'s CSV readers (sim/calfit.h
 * calfit_csv_* under read_sweep and read_layout of
 * sim/cli/cmd_calibrate.c, included here to reach them).  The first
 * byte's bit 0 chooses the copy sweep (then fitted, as the command fits
 * it) or the layout sweep of --holdout; the rest is the CSV file.
 */
#include "sim/cli/cmd_calibrate.c"

#include "tests/fuzz/fuzz.h"

void
fz_setup(void)
{
	gsl_set_error_handler_off();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fitted fit[2][4][2];
	struct pts s = { 0 };
	char path[4200];
	size_t rows;

	if (size < 1 ||
	    fz_write("sweep.csv", data + 1, size - 1, path,
		     sizeof(path)) == NULL)
		return 0;
	if ((data[0] & 1) == 0) {
		memset(fit, 0, sizeof(fit));
		if (read_sweep(path, &s, &rows) == 0)
			(void)calibrate_fit(&s, fit);
	} else {
		(void)read_layout(path, &s);
	}
	pts_free(&s);
	return 0;
}
