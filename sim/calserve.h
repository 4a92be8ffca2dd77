/*
 * calserve.h -- fitting cost terms to measured serving runs (`kvsim
 * calibrate serving`, docs/cost-model.md §5.4).
 *
 * A case is one kvsim run configuration against one measurement: the mean
 * TTFT and E2E of a load stage of inference-perf or of a `vllm bench
 * serve --save-result` JSON.  The fit runs the simulator in the loop
 * (sim/run.h, in process) with the fitted terms set by name through the
 * calibration loader's table (calib.h), so any term of that table can be
 * fitted.  The loss is the mean over cases of the absolute log ratios of
 * predicted to measured mean TTFT, mean E2E and decode time per token;
 * it is minimised by GSL's Nelder-Mead simplex (nmsimplex2) in a space
 * where every term is free: an efficiency as its logit, a time as its
 * logarithm.
 *
 * Metrics (the truth, both sides):
 *   ttft = mean TTFT over successful requests
 *   e2e  = mean E2E over successful requests
 *   itl  = (e2e - ttft) / (out_len - 1), out_len the output tokens of a
 *          request (fixed in the runs this is for; inference-perf's own
 *          inter_token_latency mean counts stream chunks, not tokens)
 *
 * Errors: KV_EINVAL with "FILE:LINE:COL: what" (a bad value), "PATH:
 * what" (a missing key, a missing file) or a run's own message; KV_ENOMEM;
 * KV_ESTATE when a run cannot finish.  Nothing here prints.
 */
#ifndef SIM_CALSERVE_H
#define SIM_CALSERVE_H

#include "sim/cost.h"
#include "sim/runcfg.h"

#include <stddef.h>
#include <stdint.h>

struct cs_metrics {
	double ttft_s, e2e_s;		/* means over successful requests */
	double out_len;			/* output tokens a request; 0 unknown */
	uint64_t n;			/* successful requests */
};

/* One simulation against one measurement. */
struct cs_case {
	char label[512];		/* the result file, or "DIR stage N" */
	size_t run;			/* the RUN it came from */
	int stage;			/* >= 0: one stage of a whole run of
					 * the inference-perf configuration
					 * (workload.kind inference-perf); the
					 * cases of a run are consecutive */
	struct sim_config cfg;
	struct cs_metrics meas;
};

struct calserve {
	struct cs_case *c;
	size_t n, cap;
	size_t nruns;			/* RUN arguments read */
	uint64_t max_requests;		/* per stage; 0: all */
};

void calserve_init(struct calserve *cs, uint64_t max_requests);
void calserve_release(struct calserve *cs);

/*
 * Read one RUN: the kvsim configuration file `config` and `result`, one
 * of
 *   - an inference-perf result directory (config.yaml and
 *     stage_N_lifecycle_metrics.json): a case a stage, the configuration
 *     run with the stage's request count (rate x duration) and Poisson
 *     arrivals at its rate;
 *   - an inference-perf lifecycle metrics JSON (a stage or the summary):
 *     one case, the configuration as it is;
 *   - a `vllm bench serve --save-result` JSON: one case, as it is.
 * KV_OK or an error of the head comment.
 */
kv_err calserve_add(struct calserve *cs, const char *config,
		    const char *result, char *err, size_t errlen);

/* Read a measured-result JSON of either kind into *m (out_len 0 when the
 * file does not say). */
kv_err calserve_read_result(const char *path, struct cs_metrics *m,
			    char *err, size_t errlen);

/* Run case i with the terms set in cal (NULL: none); its metrics. */
kv_err calserve_predict(const struct calserve *cs, size_t i,
			const struct cost_calib *cal, struct cs_metrics *p,
			char *err, size_t errlen);

/*
 * The cases from i that one simulation predicts (1, or every stage of a
 * whole inference-perf run), into p[0..*n).  KV_OK or a run's error.
 */
kv_err calserve_predict_group(const struct calserve *cs, size_t i,
			      const struct cost_calib *cal,
			      struct cs_metrics *p, size_t *n, char *err,
			      size_t errlen);

/* itl of the head comment; out_len from m, else from p. */
double calserve_itl(const struct cs_metrics *m, const struct cs_metrics *p);

/* |p - m| / m of TTFT, E2E and ITL, in out[0..3). */
void calserve_ape(const struct cs_metrics *p, const struct cs_metrics *m,
		  double out[3]);

#define CS_MAX_TERMS 16
#define CS_MAX_STAGES 64	/* stages of one inference-perf run */

struct cs_fit {
	size_t nterms;
	const char *term[CS_MAX_TERMS];	/* names of calib.h's table */
	double start[CS_MAX_TERMS];
	double value[CS_MAX_TERMS];	/* out */
	size_t max_evals;		/* 0: 60 a term */
	double step0;			/* the first simplex's steps (logit,
					 * log); 0: 0.5 */
	double loss;			/* out: at value */
	size_t evals;			/* out: simulations of every case */
};

/*
 * Fit f->term over every case whose run is not skip (SIZE_MAX: none
 * skipped), from f->start.  KV_OK with f->value; an error of the head
 * comment (a run that fails, a term that is no term).
 */
kv_err calserve_fit(const struct calserve *cs, struct cs_fit *f, size_t skip,
		    char *err, size_t errlen);

/* *out (initialised here; cost_calib_release it) with f->term = v, each
 * with the source src.  KV_OK or an error of cost_calib_set. */
kv_err calserve_calib(const struct cs_fit *f, const double *v,
		      const char *src, struct cost_calib *out, char *err,
		      size_t errlen);

#endif
