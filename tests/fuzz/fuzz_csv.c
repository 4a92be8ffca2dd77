/*
 * fuzz_csv.c -- the CSV reader of util/csv.h, both ways: streaming
 * (csv_init over the input in memory, every record read) and whole
 * (csv_table_read, and sweep_csv_read of reports/sweep_csv.h, which plot,
 * sweep and compare read through).  The first byte's bit 0 chooses.
 * What csv.h promises is checked: each record has the header's width,
 * positions start at 1 and never go back, an error has a kind and a
 * place.
 */
#include "tests/fuzz/fuzz.h"

#include "reports/sweep_csv.h"
#include "util/csv.h"

#include <stdlib.h>

void
fz_setup(void)
{
}

static void
stream(const uint8_t *data, size_t size)
{
	struct csv c;
	struct csv_error e;
	char msg[1024];
	FILE *in = fz_open_mem(data, size);
	unsigned long last = 0;

	if (csv_init(&c, in, &e) != KV_OK) {
		if (e.kind == CSV_OK)
			abort();
		csv_error_format(&e, "fuzz.csv", msg, sizeof(msg));
		csv_close(&c);
		fclose(in);
		return;
	}
	if (c.nhead < 1 || c.head_line < 1)
		abort();
	(void)csv_col(&c, c.head[c.nhead - 1]);
	for (;;) {
		if (csv_next(&c, &e) != KV_OK) {
			if (e.kind == CSV_OK || e.line < 1)
				abort();
			csv_error_format(&e, "fuzz.csv", msg, sizeof(msg));
			break;
		}
		if (c.nfield == 0)
			break;
		if (c.nfield != c.nhead || c.line <= last)
			abort();
		for (size_t i = 0; i < c.nfield; i++)
			if (c.fline[i] < c.line || c.fcol[i] < 1 ||
			    c.field[i] == NULL)
				abort();
		last = c.line;
	}
	csv_close(&c);
	fclose(in);
}

static void
table(const uint8_t *data, size_t size)
{
	struct csv_table t;
	struct csv_error e;
	char path[4200], err[1024];

	if (fz_write("table.csv", data, size, path, sizeof(path)) == NULL)
		return;
	if (csv_table_read(&t, path, &e) == KV_OK) {
		for (size_t r = 0; r < t.nrow; r++)
			for (size_t k = 0; k < t.ncol; k++)
				if (t.row[r][k] == NULL)
					abort();
		if (t.ncol > 0 && csv_table_col(&t, t.head[0]) != 0)
			abort();
	}
	csv_table_release(&t);
	(void)sweep_csv_read(&t, path, err, sizeof(err));
	csv_table_release(&t);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if ((data[0] & 1) == 0)
		stream(data + 1, size - 1);
	else
		table(data + 1, size - 1);
	return 0;
}
