/*
 * sweep_csv.h -- a small CSV table reader for the reports kvsim itself
 * wrote (summary.csv, sweep.csv), read back by `kvsim sweep` to merge
 * points and by `kvsim compare`.
 *
 * RFC 4180: one header row, fields separated by commas, a field may be
 * quoted ("" is a quote inside quotes), records end in LF or CRLF, the
 * last one may lack it.  Every record must have as many fields as the
 * header.  The table is read whole: these files are one row a run or a
 * sweep point, never a trace.
 *
 * Ownership: sweep_csv_read() fills a caller-owned struct; every string it
 * points to lives until sweep_csv_release().
 */
#ifndef REPORTS_SWEEP_CSV_H
#define REPORTS_SWEEP_CSV_H

#include "core/kvcore.h"

#include <stdbool.h>
#include <stddef.h>

struct sweep_csv {
	size_t ncol;		/* header fields */
	char **head;		/* ncol names */
	size_t nrow;		/* records after the header */
	char ***row;		/* nrow x ncol fields */
	unsigned long *line;	/* nrow: the line each record starts on */
	bool terminated;	/* the last record ends in a newline */
	/* private */
	char *buf;
	char **cells;
	size_t ncells;
};

/*
 * Read `path`.  KV_OK; KV_ENOENT when it cannot be opened; KV_EINVAL for
 * a malformed table (err: "PATH:LINE: what"); KV_ENOMEM.  On failure the
 * table is empty (sweep_csv_release is still safe).
 */
kv_err sweep_csv_read(struct sweep_csv *t, const char *path, char *err,
		      size_t errlen);
void sweep_csv_release(struct sweep_csv *t);

/* The index of the column named `name`, or -1. */
long sweep_csv_col(const struct sweep_csv *t, const char *name);

#endif
