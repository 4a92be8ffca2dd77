/*
 * calkern.h -- the step's parts measured on a device, and the efficiencies
 * fitted from them (`kvsim calibrate kernels`, docs/cost-model.md §5.3).
 *
 * Two ends of one path.  The host side lists the shapes a model's step
 * runs (calkern_shapes: the per-rank matmuls of a layer, the KV read of an
 * attention layer, the all-reduce buffer), which `kvsim calibrate kernels
 * --emit-shapes` writes as a CSV for gpu/tools/kvsim-stepbench; the device
 * program times them and writes one row per repetition; calkern_read reads
 * those rows back and calkern_fit fits, against the GPU's catalog peaks:
 *
 *   eff_compute       compute-bound GEMMs:  t = flops / (peak * eff)
 *   eff_weights       weight-read-bound GEMMs (small token counts):
 *                     t = bytes / (hbm * eff)
 *   eff_kv_read       the paged KV read:   t = bytes / (hbm * eff)
 *   eff_interconnect  proxy from a device-to-device copy, which reads and
 *                     writes each byte: t = alpha + 2 * bytes / (hbm * eff)
 *
 * Each one-term fit minimises relative error (sum of (pred/t - 1)^2), so a
 * 10 us kernel counts as much as a 10 ms one.  Which GEMMs are compute- or
 * weight-bound is decided by arithmetic intensity against the GPU's ridge
 * point (peak / hbm), not by the fit.
 *
 * Held-out error: the terms are fitted again on half the data and predict
 * the other half -- every other shape in file order (a GEMM shape is one
 * matmul of one model, all its token counts together), or with a model
 * named, every shape of that model -- and the median and p90 relative
 * error of those predictions are reported.  The efficiencies kept are the
 * fit on all the data.
 *
 * Alternative rejected: one joint roofline fit max(flops/(P e1),
 * bytes/(B e2)) over every GEMM: the max makes the objective piecewise and
 * lets the middle of the range (neither bound) pull both terms.
 */
#ifndef SIM_CALKERN_H
#define SIM_CALKERN_H

#include "core/kvcore.h"
#include "sim/model/catalog.h"

#include <stdbool.h>
#include <stddef.h>

/* ---- shapes (host side) ------------------------------------------------- */

enum calkern_kind {
	CALKERN_GEMM,		/* one matmul: m tokens x (n x k) weight */
	CALKERN_KVREAD,		/* paged K/V read: m seqs x n tokens x k B */
	CALKERN_COPY,		/* device-to-device copy of bytes */
	CALKERN_NKINDS
};

/* The CSV names of the kinds: "gemm", "kvread", "copy". */
const char *calkern_kind_name(enum calkern_kind k);

/*
 * One shape of a model's step, per tensor-parallel rank.
 *   gemm:   name qkv, o, gate_up, down, expert_gate_up, expert_down,
 *           lm_head; n = output features, k = input features;
 *   kvread: name kv; n = KV heads of a rank, k = head size;
 *   copy:   name allreduce; n = hidden size, k = 1 (bytes a token =
 *           n * elem_bytes).
 * count: how many a step runs (layers; 1 for lm_head; 2 L + 1 all-reduces).
 */
struct calkern_shape {
	char model[128];
	unsigned tp;
	enum calkern_kind kind;
	char name[24];
	unsigned long n, k, count;
	unsigned elem_bytes;
};

/*
 * The shapes of model m at tensor parallelism tp into out[0..cap).  *n
 * gets how many.  KV_OK; KV_ENOTSUP with a message for a model this bench
 * does not cover (MLA, recurrent-state or sliding/chunked layers, a
 * dimension not divisible by tp); KV_EINVAL for tp 0 or cap too small.
 */
kv_err calkern_shapes(const struct cat_model *m, unsigned tp,
		      struct calkern_shape *out, size_t cap, size_t *n,
		      char *err, size_t errlen);

/* ---- measurements ------------------------------------------------------- */

/*
 * One point: the median time of the repetitions of one (kind, model, tp,
 * name, m, n, k).  hold: index of its group among its kind's, in order of
 * first appearance (groups with odd index are held out); model as in the
 * CSV.
 */
struct calkern_point {
	enum calkern_kind kind;
	char model[128];
	char key[200];		/* kind|model|tp|name|m|n|k */
	char group[200];	/* gemm: model|tp|name; else key */
	double m, n, k, bytes, flops;
	double t_ns;		/* median, > 0 */
	size_t hold;
	double *t;		/* the repetitions */
	size_t nt, capt;
};

struct calkern_set {
	struct calkern_point *p;
	size_t n, cap;
	size_t rows;		/* rows read */
	size_t unmeasured;	/* rows with measured=no */
	size_t ngroups[CALKERN_NKINDS];
};

void calkern_set_init(struct calkern_set *s);
void calkern_set_release(struct calkern_set *s);

/*
 * Read a stepbench CSV (header kind,model,tp,name,m,n,k,bytes,flops,rep,
 * time_ns,measured; docs/gpu.md §5.2) and add its rows to *s.  KV_OK;
 * KV_EINVAL with "FILE:LINE:COL: what" (a missing column, an unknown kind,
 * a size that is not a whole number >= 1, a gemm whose flops are not
 * 2 m n k, a time that is not > 0, measured not yes/no, no row at all,
 * an unreadable file); KV_ENOMEM.  On failure *s may hold some of the
 * file's rows: release it.
 */
kv_err calkern_read(const char *path, struct calkern_set *s, char *err,
		    size_t errlen);

/* ---- fit ----------------------------------------------------------------- */

struct calkern_peaks {
	double flops;		/* dense FLOP/s of the compute dtype */
	double hbm;		/* bytes/s */
};

/* One fitted efficiency. */
struct calkern_term {
	bool ok;		/* enough points to fit */
	double eff;		/* fit on all its points */
	double alpha_ns;	/* copy only: the fixed term */
	size_t points;		/* points it was fitted on */
	size_t held;		/* points predicted by the held-out fit */
	double med_rel, p90_rel;	/* held-out |pred - t| / t */
	double fit_med_rel;	/* in-sample, of the fit on all points */
};

enum calkern_term_id {
	CALKERN_COMPUTE, CALKERN_WEIGHTS, CALKERN_KV_READ, CALKERN_INTERCONNECT,
	CALKERN_NTERMS
};

/* The calibration file keys: eff_compute, eff_weights, eff_kv_read,
 * eff_interconnect. */
const char *calkern_term_key(enum calkern_term_id t);

struct calkern_fit {
	struct calkern_term term[CALKERN_NTERMS];
	double ridge;		/* peaks.flops / peaks.hbm, FLOP a byte */
};

/* KV reads smaller than this are launch-bound and left out of the fit. */
#define CALKERN_KV_MIN_BYTES (8.0 * 1024 * 1024)

/*
 * Fit every term it has points for.  hold_model NULL: hold out every other
 * group; otherwise the points of that model (KV_EINVAL if it has none).
 * KV_OK (a term with fewer than 2 points, or without a held-out half, has
 * ok false or held 0); KV_EINVAL for peaks not > 0.
 */
kv_err calkern_fit(const struct calkern_set *s,
		   const struct calkern_peaks *pk, const char *hold_model,
		   struct calkern_fit *f, char *err, size_t errlen);

/* What the fitted term t predicts for point p (ns). */
double calkern_predict(const struct calkern_fit *f,
		       const struct calkern_peaks *pk, enum calkern_term_id t,
		       const struct calkern_point *p);

/* The term a point is evidence for, or CALKERN_NTERMS (a GEMM between the
 * two bounds, a KV read below CALKERN_KV_MIN_BYTES). */
enum calkern_term_id calkern_classify(const struct calkern_point *p,
				      double ridge);

#endif
