/*
 * sweep_csv.h -- the reports kvsim itself wrote (summary.csv, sweep.csv),
 * read back by `kvsim sweep` to merge points and by `kvsim compare`.
 *
 * The reading is util/csv.h's (RFC 4180, a whole table); this adds the
 * wording of its errors that sweep and compare users see.  The table is
 * read whole: these files are one row a run or a sweep point, never a
 * trace.
 */
#ifndef REPORTS_SWEEP_CSV_H
#define REPORTS_SWEEP_CSV_H

#include "core/kvcore.h"
#include "util/csv.h"

#include <stddef.h>

/*
 * Read `path` into t.  KV_OK; KV_ENOENT when it cannot be opened
 * (err: "PATH: strerror"); KV_EINVAL for a malformed table (err:
 * "PATH:LINE: what"); KV_ENOMEM.  On failure the table is empty
 * (csv_table_release is still safe).
 */
kv_err sweep_csv_read(struct csv_table *t, const char *path, char *err,
		      size_t errlen);

#endif
