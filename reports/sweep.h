/*
 * sweep.h -- a grid of runs: the cross product of swept keys, each point
 * with a stable id, each a run directory, merged into one
 * sweep.csv (docs/sweep.md).
 *
 * Points.  Axes are kept in the order they were added; point i takes value
 * (i / stride[a]) % nval[a] of axis a, the first axis varying slowest (the
 * nested loops one would write).  A point's id is a digest of what it
 * runs, not of its index: 12 hex digits of FNV-1a over the point's
 * configuration digest (sweep_set_digests: the base configuration with
 * the point's values applied; none set, nothing) as 16 hex digits and a
 * newline, then the "key=value\n" lines sorted by key.  Adding a value to
 * an axis, or reordering the axes, renumbers indices but keeps every
 * other point's id and so its directory, which is what lets --resume and
 * --shard work on a grid that grows.  Adding an axis changes every id
 * (every point gained an assignment); so does a change of the base
 * configuration that reaches a point (--resume must not take a point run
 * with another base for this one).
 *
 * Layout of a sweep directory DIR:
 *   DIR/points/ID/        one `kvsim run --out` directory per point
 *   DIR/points/ID/stderr.txt   a failed point's standard error
 *   DIR/sweep.csv         written only when every point is complete
 *
 * A point is complete when DIR/points/ID/summary.csv is a well-formed table
 * of one row ending in a newline (kvsim run renames it into place whole).
 *
 * The points run as child processes through util/pool.h.
 *
 * Errors: kv_err codes with a message in the caller's buffer; nothing here
 * exits.
 */
#ifndef REPORTS_SWEEP_H
#define REPORTS_SWEEP_H

#include "core/kvcore.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SWEEP_ID_LEN 13			/* 12 hex digits and a NUL */
#define SWEEP_MAX_POINTS 1000000u

typedef struct sweep sweep;

sweep *sweep_new(void);
void sweep_free(sweep *s);

/* A new axis (KV_EINVAL: the key is already swept) and a value of the
 * last axis added (KV_EINVAL: a repeated value).  Strings are copied. */
kv_err sweep_add_axis(sweep *s, const char *key);
kv_err sweep_add_value(sweep *s, const char *value);

size_t sweep_naxes(const sweep *s);
const char *sweep_axis_key(const sweep *s, size_t axis);

/* The product of the axis sizes; 0 without axes; SIZE_MAX when it exceeds
 * SWEEP_MAX_POINTS. */
size_t sweep_npoints(const sweep *s);
const char *sweep_value(const sweep *s, size_t point, size_t axis);
void sweep_point_id(const sweep *s, size_t point, char id[SWEEP_ID_LEN]);

/*
 * The configuration digest of every point (digest[0 .. sweep_npoints)),
 * copied, after the last axis and value are added; ids include them from
 * then on.  KV_OK, KV_EINVAL (no points, or too many), KV_ENOMEM.
 */
kv_err sweep_set_digests(sweep *s, const uint64_t *digest);

/* false when two points share an id (*a < *b): a digest collision. */
bool sweep_ids_unique(const sweep *s, size_t *a, size_t *b);

/* "DIR/points/ID" into buf; false if it does not fit. */
bool sweep_point_dir(const sweep *s, const char *dir, size_t point,
		     char *buf, size_t len);

/* The run directory holds a complete summary.csv. */
bool sweep_run_complete(const char *rundir);
/* Before a run directory's run starts again (an incomplete one kept by
 * --resume): its reports, stderr.txt and any temporaries removed. */
void sweep_run_clean(const char *rundir);

/*
 * Write DIR/sweep.csv: point_id, point_index, one column per swept key
 * (named by the key, the value as given), then the points' summary.csv
 * columns (less any named like a swept key), one row a point in index
 * order.  Written to a temporary name and renamed.  KV_OK; KV_ENOENT when
 * points are not complete (*missing of them; nothing written);
 * KV_EINVAL when summaries disagree on their columns or are malformed
 * (err); KV_ENOMEM.
 */
kv_err sweep_merge(const sweep *s, const char *dir, size_t *missing,
		   char *err, size_t errlen);

/* ---- atomic files -------------------------------------------------------- */

/*
 * Open a temporary file beside `path` (".NAME.tmp.PID"); tmp receives its
 * name.  sweep_commit() closes it and renames it over `path` (0 ok, -1 on
 * a write error: the temporary is removed); sweep_abandon() closes and
 * removes it.
 */
FILE *sweep_create(const char *path, char *tmp, size_t tmplen);
int sweep_commit(FILE *f, const char *tmp, const char *path);
void sweep_abandon(FILE *f, const char *tmp);

#endif
