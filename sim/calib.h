/*
 * calib.h -- read a calibration file into a struct cost_calib (cost.h).
 *
 * A calibration file is YAML (docs/cost-model.md "Calibration file"): keys
 * named after the cost terms, each a number or {value: X, source: "..."}:
 *
 *   cpu_step_ns: {value: 1.2e6, source: "nsys, vLLM 0.11 on H100"}
 *   eff_compute: 0.7
 *   copy:
 *     d2h:
 *       per-chunk:
 *         pinned: {alpha_ns: 9000, beta_ns: 4800, ns_per_byte: 0.021}
 *   meta: {device: "H200", date: "2026-11-30", measured: true}
 *
 * meta (written by `kvsim calibrate`) says where the file comes from:
 * text fields device, date, data, holdout, note, and measured (true or
 * false); it sets no term.
 *
 * Every term it sets gets the source "SOURCE (FILE:LINE)", or "FILE:LINE"
 * without one, so cost_describe says where each number came from.  Terms
 * the file does not name (or names with null) stay unset: the model keeps
 * its default.
 *
 * Unknown keys, a value that is not a number, an efficiency outside (0, 1]
 * and a time outside [0, 1e12] ns are errors "FILE:LINE:COL: what" at the offending key
 * or value (the caller exits 2); the whole file is checked before anything
 * is kept.
 *
 * Why a separate file from runcfg.c: the same loader serves any command
 * that builds a cost model, and it uses sim/ydoc.h (positions on every
 * node) like the catalogs whose defaults it overrides.
 */
#ifndef SIM_CALIB_H
#define SIM_CALIB_H

#include "sim/cost.h"

#include <stddef.h>

/*
 * Read the file at path into *c (initialised here: terms not in the file
 * are left unset).  The source strings of the terms it sets are heap
 * copies owned by *c until cost_calib_release(c); a cost model built from
 * *c borrows them.  KV_OK; KV_EINVAL with "FILE:LINE:COL: what" in err;
 * KV_ENOENT ("PATH: strerror") if the file cannot be read; KV_ENOMEM.  On
 * failure *c has every term unset and owns nothing.
 */
kv_err cost_calib_load(const char *path, struct cost_calib *c, char *err,
		       size_t errlen);

/* Free the sources cost_calib_load set and unset every term.  Only for a
 * struct cost_calib filled by cost_calib_load (or cost_calib_init). */
void cost_calib_release(struct cost_calib *c);

/*
 * The top-level terms by name, through the loader's table (every key a
 * file may set at the top level, copy and meta aside): a term added to
 * the table can be set by name at once (`kvsim calibrate serving --fit`).
 */
enum { COST_CALIB_EFF = 0, COST_CALIB_TIME = 1 };

size_t cost_calib_nterms(void);
/* The i-th term's name; NULL past the end. */
const char *cost_calib_term_name(size_t i);
/* COST_CALIB_EFF (in (0, 1]), COST_CALIB_TIME (ns, [0, 1e12]); -1 for a
 * name that is no term. */
int cost_calib_term_kind(const char *name);
/* The term called name in c (unset: src NULL); NULL for no such term. */
const struct cost_term *cost_calib_term(const struct cost_calib *c,
					const char *name);

/*
 * Set the term called name to v with the source src (copied; NULL: the
 * name), for a struct cost_calib that cost_calib_release frees.  KV_OK;
 * KV_EINVAL "NAME: what" for an unknown name or a value out of its
 * range; KV_ENOMEM.  On failure the term is unchanged.
 */
kv_err cost_calib_set(struct cost_calib *c, const char *name, double v,
		      const char *src, char *err, size_t errlen);

/* Every top-level term set in from is set in c too (sources copied): an
 * error of cost_calib_set, c keeping the terms set before it. */
kv_err cost_calib_overlay(struct cost_calib *c, const struct cost_calib *from,
			  char *err, size_t errlen);

#endif
