/*
 * fuzz_ydoc.c -- the YAML/JSON front end (util/ydoc.h) on the input as a
 * document.  The first byte chooses the reading: bit 0 YD_LOADER, bit 1
 * YD_UNIQUE, bit 2 YD_NEXTDOC (the last two only with the first, as
 * ydoc.h says).  The tree read is walked, checking what ydoc.h promises:
 * scalars carry text, maps 2n children, positions start at 1, and in the
 * strict reading keys are scalars, never repeated, nesting at most 256
 * deep.  A loader tree may share nodes or hold a cycle (aliases), so the
 * walk is bounded.
 */
#include "tests/fuzz/fuzz.h"

#include "util/ydoc.h"

#include <stdlib.h>
#include <string.h>

#define WALK_BUDGET 100000

void
fz_setup(void)
{
}

static void
walk(const struct yd_node *n, int depth, bool strict, long *budget)
{
	if (n == NULL || --*budget < 0 || depth > 300)
		return;
	if (n->line < 1 || n->col < 1)
		abort();
	if (strict && depth > 257)
		abort();
	switch (n->type) {
	case YD_SCALAR:
		if (n->str == NULL)
			abort();
		return;
	case YD_MAP:
		for (size_t i = 0; i < n->n; i++) {
			const struct yd_node *k = yd_key(n, i);

			if (k == NULL || yd_val(n, i) == NULL)
				abort();
			if (strict && k->type != YD_SCALAR)
				abort();
			for (size_t j = 0; strict && j < i; j++)
				if (strcmp(yd_key(n, j)->str, k->str) == 0)
					abort();
			if (k->type == YD_SCALAR && yd_get(n, k->str) == NULL)
				abort();
			walk(k, depth + 1, strict, budget);
			walk(yd_val(n, i), depth + 1, strict, budget);
		}
		return;
	case YD_SEQ:
		for (size_t i = 0; i < n->n; i++)
			walk(n->kid[i], depth + 1, strict, budget);
		return;
	default:
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct yd_doc d;
	unsigned flags = 0;
	char err[1024];
	long budget = WALK_BUDGET;
	FILE *in;

	if (size > 0) {
		if (data[0] & 1)
			flags = YD_LOADER |
				(data[0] & (YD_UNIQUE | YD_NEXTDOC));
		data++;
		size--;
	}
	in = fz_open_mem(data, size);
	if (yd_read(&d, in, "fuzz.yaml", flags, err, sizeof(err)) == KV_OK) {
		walk(d.root, 0, flags == 0, &budget);
		budget = WALK_BUDGET;
		walk(d.next, 0, flags == 0, &budget);
		(void)yd_is_null(d.root);
	} else if (d.err_what > strlen(err)) {
		abort();
	}
	yd_release(&d);
	fclose(in);
	return 0;
}
