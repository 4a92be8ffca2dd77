/*
 * fuzz_compare.c -- `kvsim compare`'s summary reader (reports/compare.h
 * cmp_side_load: a run's summary.csv or a sweep's sweep.csv) and the
 * comparison of the two sides (compare_sides of sim/cli/cmd_compare.c,
 * included here to reach it; compare.csv goes to the temporary
 * directory).  The input up to its first NUL byte is the baseline's
 * file, the rest the candidate's; with no NUL both sides read the same.
 */
#include "sim/cli/cmd_compare.c"

#include "tests/fuzz/fuzz.h"

void
fz_setup(void)
{
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t nb = nul != NULL ? (size_t)(nul - data) : size;
	char pb[4200], pc[4200], out[4200], err[1400];
	cmp_side *b = cmp_side_new(), *c = cmp_side_new();
	struct opts o;

	memset(&o, 0, sizeof(o));
	o.alpha = 0.05;
	o.c.no_plot = true;
	o.c.quiet = true;
	if (b == NULL || c == NULL ||
	    fz_write("base.csv", data, nb, pb, sizeof(pb)) == NULL ||
	    fz_write("cand.csv", nul != NULL ? nul + 1 : data,
		     nul != NULL ? size - nb - 1 : size, pc,
		     sizeof(pc)) == NULL ||
	    snprintf(out, sizeof(out), "%s/out.csv", fz_dir()) < 0)
		goto done;
	if (cmp_side_load(b, pb, err, sizeof(err)) == KV_OK &&
	    cmp_side_load(c, pc, err, sizeof(err)) == KV_OK)
		(void)compare_sides(b, c, "base", "cand", &o, out);
done:
	cmp_side_free(b);
	cmp_side_free(c);
	return 0;
}
