/*
 * csv.h -- one CSV reader for the tables kvsim reads back: its own reports
 * (summary.csv, sweep.csv, requests.csv, ...) and device measurements.
 *
 * Format (RFC 4180): one header row; fields separated by commas; a field
 * may be quoted, and then holds commas, line breaks and "" for a quote;
 * records end in LF or CRLF, the last one may lack it or end in a bare
 * CR.  Any other CR not followed by LF is data.  Blank lines are not
 * records and are skipped, before the header too.  Every record must have
 * as many fields as the header.  Positions are 1-based; a column is a
 * byte offset in its line plus one.
 *
 * Errors are structured (struct csv_error: kind, line, column) so that
 * each caller words them as its users have always seen them; csv_what()
 * and csv_error_format() give a plain wording for new callers.
 *
 * Two ways to read:
 *   csv_open/csv_next/csv_close stream a file a record at a time; memory
 *     is one read buffer and the current record, whatever the file size.
 *   csv_table_read reads a small file whole into a table of strings.
 *
 * The trace readers (workloads/) have their own line splitter: traces
 * never quote a line break, and it hands out fields in place, neither
 * copied nor NUL-terminated (about 3x less time a row than csv_next()).
 *
 * Ownership: the reader and the table own every string they point to;
 * record strings live until the next csv_next(), table strings until
 * csv_table_release().
 */
#ifndef UTIL_CSV_H
#define UTIL_CSV_H

#include "core/kvcore.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum csv_errkind {
	CSV_OK = 0,
	CSV_EOPEN,		/* fopen failed: sys_errno; line 0 */
	CSV_EREAD,		/* a read failed: sys_errno */
	CSV_ENOMEM,
	CSV_EEMPTY,		/* no header row (an empty or blank file):
				 * line 1, column 1 */
	CSV_EUNTERMINATED,	/* a quoted field runs to the end of the file:
				 * line:col of its opening quote */
	CSV_ETEXT_AFTER_QUOTE,	/* "ab"c: line:col of the c */
	CSV_EQUOTE_IN_FIELD,	/* ab"c: line:col of the quote */
	CSV_EWIDTH,		/* a record with nfield fields, the header
				 * has nhead: the record's line, column 1 */
	CSV_EDUPCOL,		/* a header name given twice (a lookup by
				 * name could not tell them apart): name,
				 * line:col of the second, first_col of the
				 * first */
};

struct csv_error {
	enum csv_errkind kind;
	unsigned long line, col;	/* where it was found */
	unsigned long record;		/* the line its record starts on */
	size_t nfield, nhead;		/* CSV_EWIDTH */
	int sys_errno;			/* CSV_EOPEN, CSV_EREAD */
	unsigned long first_col;	/* CSV_EDUPCOL: the first one's column */
	char name[64];			/* CSV_EDUPCOL: the name (cut to fit) */
};

/* A plain description of a kind: "unterminated quoted field", ... */
const char *csv_what(enum csv_errkind kind);

/*
 * "PATH:LINE:COL: what" into buf: "PATH: strerror" for CSV_EOPEN, with
 * ": strerror" after it for CSV_EREAD and " (N fields, the header has M)"
 * for CSV_EWIDTH; "PATH:LINE:COL: column 'NAME' appears twice (first at
 * column C)" for CSV_EDUPCOL.
 */
void csv_error_format(const struct csv_error *e, const char *path,
		      char *buf, size_t len);

/* ---- streaming ---------------------------------------------------------- */

struct csv {
	/* the header */
	char **head;
	size_t nhead;
	unsigned long head_line;
	/* the current record; nfield == 0 at the end of the file */
	char **field;
	size_t nfield;
	unsigned long line;	/* the line the record starts on */
	unsigned long *fline;	/* nfield: the line and column of each */
	unsigned long *fcol;	/*   field's first byte (its quote if any) */
	bool terminated;	/* the input read so far ends in a line break */
	/* private */
	FILE *f;
	bool own;
	char *in;
	size_t pos, len;
	bool eof;
	int rerr;
	unsigned long lno, cno;
	char *rec;
	size_t reclen, reccap;
	size_t *off;
	size_t fcap;
	char *headbuf;
};

/*
 * Open `path` (csv_open) or read from `f` (csv_init; f stays the caller's)
 * and read the header.  A header that names a column twice is refused
 * (CSV_EDUPCOL; empty names excepted, since no lookup asks for one): every
 * column is looked up by name, and the second of two equal names would be
 * silently ignored.  KV_OK; KV_ENOENT (CSV_EOPEN), KV_ENOMEM, or
 * KV_EINVAL with e filled.  On failure the reader holds nothing, though
 * csv_close() is still safe.
 */
kv_err csv_open(struct csv *c, const char *path, struct csv_error *e);
kv_err csv_init(struct csv *c, FILE *f, struct csv_error *e);

/*
 * The next record into c->field[0..nfield), checked against the header's
 * width.  KV_OK with c->nfield == 0 at the end; KV_EINVAL or KV_ENOMEM
 * with e filled.
 */
kv_err csv_next(struct csv *c, struct csv_error *e);

/* The index of the header column `name`, or -1. */
long csv_col(const struct csv *c, const char *name);

void csv_close(struct csv *c);

/* ---- a whole table ------------------------------------------------------ */

struct csv_table {
	char *path;		/* a copy of the path read */
	size_t ncol;		/* header fields */
	char **head;		/* ncol names */
	size_t nrow;		/* records after the header */
	char ***row;		/* nrow x ncol fields */
	unsigned long *line;	/* nrow: the line each record starts on */
	bool terminated;	/* the file ends in a line break */
	/* private */
	char *text;
	char **cells;
};

/*
 * Read `path` whole.  Returns and fills e as csv_open() and csv_next().
 * On failure the table is empty (csv_table_release is still safe).
 */
kv_err csv_table_read(struct csv_table *t, const char *path,
		      struct csv_error *e);
void csv_table_release(struct csv_table *t);

/* The index of the column named `name`, or -1. */
long csv_table_col(const struct csv_table *t, const char *name);

#endif
