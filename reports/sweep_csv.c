/*
 * sweep_csv.c -- read a report table back (sweep_csv.h): util/csv.h's
 * table reader, its errors worded as sweep and compare have always
 * worded them.
 */
#include "config.h"

#include "reports/sweep_csv.h"

#include <stdio.h>

kv_err
sweep_csv_read(struct csv_table *t, const char *path, char *err,
	       size_t errlen)
{
	struct csv_error e;
	kv_err rc = csv_table_read(t, path, &e);

	if (rc == KV_OK)
		return rc;
	if (e.kind == CSV_EREAD && e.line == 1 && e.col == 1)
		e.kind = CSV_EEMPTY;	/* nothing could be read (a folder) */
	switch (e.kind) {
	case CSV_EEMPTY:
		snprintf(err, errlen, "%s:1: empty file (no header)", path);
		break;
	case CSV_EUNTERMINATED:
		snprintf(err, errlen, "%s:%lu: unterminated quoted field",
			 path, e.record);
		break;
	case CSV_EWIDTH:
		snprintf(err, errlen, "%s:%lu: wrong number of fields "
			 "(expected %zu fields, got %zu)", path, e.record,
			 e.nhead, e.nfield);
		break;
	case CSV_EOPEN:
	case CSV_EDUPCOL:
		csv_error_format(&e, path, err, errlen);
		break;
	default:
		/* a quote out of place, a read error, no memory */
		snprintf(err, errlen, "%s:%lu: %s", path, e.line,
			 csv_what(e.kind));
		break;
	}
	return rc;
}
