/*
 * cmd_calserve.c -- `kvsim calibrate serving`: fit step-time and frontend
 * cost terms to measured serving runs and write a calibration file that
 * `kvsim run` reads (cost.calibration; docs/cost-model.md §5.4).
 *
 *   kvsim calibrate serving [--out FILE] [--fit TERM[=START],...]
 *       [--max-requests N] [--max-evals N] CONFIG RESULT [CONFIG RESULT...]
 *
 * Each CONFIG RESULT pair is a run: a kvsim configuration describing the
 * experiment (model, GPU, engine, workload) and what was measured
 * (sim/calserve.h).  The fit runs the simulator in the loop; then each run
 * is predicted by a fit on the others (leave-one-out), the error the file
 * records in meta.holdout.  The file is written only when everything was
 * read and every simulation finished.
 */
#include "config.h"

#include "sim/cli/cmd_calserve.h"
#include "sim/cli/opts.h"

#include "sim/calfit.h"
#include "sim/calib.h"
#include "sim/calserve.h"
#include "sim/run.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_errno.h>

#define DEFAULT_FIT "eff_compute=0.65,eff_memory=0.72,cpu_step_ns=500000"

struct serve_cmd {
	struct cli_opts o;		/* --out */
	const char *fit, *device, *date;
	unsigned long long max_requests, max_evals, loo_evals;
	struct cs_fit f;
	char names[1024];		/* f.term point into it */
};

/* Per case: the measurement's predictions, fitted and left out. */
struct serve_row {
	struct cs_metrics fit, loo;
	double ape_fit[3], ape_loo[3];
	bool have_loo;
};

void
calibrate_serving_usage(FILE *f)
{
	fprintf(f,
"usage: kvsim calibrate serving [--out FILE] [--fit TERM[=START],...]\n"
"           [--max-requests N] [--max-evals N] [--loo-evals N]\n"
"           [--device NAME]\n"
"           [--date DATE] CONFIG RESULT [CONFIG RESULT ...]\n"
"\n"
"Fit cost terms so that kvsim's mean TTFT, mean E2E and decode time per\n"
"token match measured serving runs, and write a calibration file for\n"
"cost.calibration (docs/cost-model.md 5.4).  Each CONFIG RESULT pair is a\n"
"run: a kvsim configuration of the experiment, and an inference-perf\n"
"result directory (a stage a case), an inference-perf lifecycle metrics\n"
"JSON, or a `vllm bench serve --save-result` JSON.\n"
"\n"
"  -o, --out FILE       the calibration file (default calibration.yaml)\n"
"      --fit LIST       terms to fit, by their calibration-file names,\n"
"                       each with an optional start value (default\n"
"                       " DEFAULT_FIT ")\n"
"      --max-requests N at most N requests of a result file's run (default\n"
"                       1000; 0 all); a result directory runs its\n"
"                       inference-perf configuration whole\n"
"      --max-evals N    simulations of every case a fit (default 60 a\n"
"                       term; half that for each leave-one-out fit)\n"
"      --loo-evals N    simulations a leave-one-out fit (it starts from\n"
"                       the full fit)\n"
"      --device NAME, --date DATE  recorded in meta\n"
"\n"
"Exit status: 0 ok, 1 a simulation could not finish, 2 bad usage or\n"
"input (nothing written).\n");
}

/* --fit: "a=1,b,c=2" into x->f. */
static int
serve_parse_fit(struct serve_cmd *x)
{
	char *s = x->names, *tok, *save = NULL;

	if (strlen(x->fit) >= sizeof(x->names)) {
		fprintf(stderr, "kvsim calibrate: --fit: too long\n");
		return KVSIM_EXIT_USAGE;
	}
	strcpy(x->names, x->fit);
	x->f.nterms = 0;
	for (tok = strtok_r(s, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		int kind;
		double v;

		if (eq != NULL)
			*eq = '\0';
		kind = cost_calib_term_kind(tok);
		if (kind < 0 || x->f.nterms == CS_MAX_TERMS) {
			fprintf(stderr, "kvsim calibrate: --fit: %s '%s' (",
				kind < 0 ? "unknown term" : "too many terms at",
				tok);
			for (size_t i = 0; i < cost_calib_nterms(); i++)
				fprintf(stderr, "%s%s", i ? ", " : "",
					cost_calib_term_name(i));
			fprintf(stderr, ")\n");
			return KVSIM_EXIT_USAGE;
		}
		v = kind == COST_CALIB_EFF ? 0.7 : 1e4;
		if (eq != NULL) {
			errno = 0;
			v = strtod(eq + 1, &end);
			if (errno != 0 || end == eq + 1 || *end != '\0' ||
			    !isfinite(v) || v < 0 ||
			    (kind == COST_CALIB_EFF && !(v > 0 && v <= 1))) {
				fprintf(stderr, "kvsim calibrate: --fit: %s: "
					"bad start value '%s'\n", tok, eq + 1);
				return KVSIM_EXIT_USAGE;
			}
		}
		for (size_t i = 0; i < x->f.nterms; i++)
			if (strcmp(x->f.term[i], tok) == 0) {
				fprintf(stderr, "kvsim calibrate: --fit: %s "
					"named twice\n", tok);
				return KVSIM_EXIT_USAGE;
			}
		x->f.term[x->f.nterms] = tok;
		x->f.start[x->f.nterms++] = v;
	}
	if (x->f.nterms == 0) {
		fprintf(stderr, "kvsim calibrate: --fit: no term\n");
		return KVSIM_EXIT_USAGE;
	}
	return KVSIM_EXIT_OK;
}

static int
serve_count(const char *opt, const char *arg, unsigned long long *out)
{
	char *end;

	errno = 0;
	*out = strtoull(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || arg[0] == '-') {
		fprintf(stderr, "kvsim calibrate: %s: expected a whole number, "
			"got '%s'\n", opt, arg);
		return KVSIM_EXIT_USAGE;
	}
	return KVSIM_EXIT_OK;
}

/* Options; the CONFIG RESULT pairs stay in argv[optind..).  -1: --help. */
static int
serve_parse(struct serve_cmd *x, int argc, char **argv)
{
	static const struct option lo[] = {
		CLI_LO_OUT,
		{ "fit", required_argument, NULL, 'F' },
		{ "max-requests", required_argument, NULL, 'R' },
		{ "max-evals", required_argument, NULL, 'E' },
		{ "loo-evals", required_argument, NULL, 'L' },
		{ "device", required_argument, NULL, 'D' },
		{ "date", required_argument, NULL, 'd' },
		CLI_LO_HELP,
		CLI_LO_END
	};
	int c, rc = KVSIM_EXIT_OK;

	optind = 1;
	while (rc == KVSIM_EXIT_OK &&
	       (c = cli_getopt(&x->o, argc, argv, "o:h", lo)) != -1) {
		switch (c) {
		case 'F':
			x->fit = optarg;
			break;
		case 'R':
			rc = serve_count("--max-requests", optarg,
					 &x->max_requests);
			break;
		case 'E':
			rc = serve_count("--max-evals", optarg, &x->max_evals);
			break;
		case 'L':
			rc = serve_count("--loo-evals", optarg, &x->loo_evals);
			break;
		case 'D':
			x->device = optarg;
			break;
		case 'd':
			x->date = optarg;
			break;
		case 'h':
			calibrate_serving_usage(stdout);
			return -1;
		case CLI_OPT_BAD:
			return KVSIM_EXIT_USAGE;
		default:
			calibrate_serving_usage(stderr);
			return KVSIM_EXIT_USAGE;
		}
	}
	if (rc != KVSIM_EXIT_OK)
		return rc;
	if (optind >= argc || (argc - optind) % 2 != 0) {
		fprintf(stderr, "kvsim calibrate: serving: expected CONFIG "
			"RESULT pairs, got %d argument%s\n", argc - optind,
			argc - optind == 1 ? "" : "s");
		calibrate_serving_usage(stderr);
		return KVSIM_EXIT_USAGE;
	}
	return serve_parse_fit(x);
}

/* A library error: 2 for bad input, else 1. */
static int
serve_fail(kv_err rc, const char *err)
{
	fprintf(stderr, "kvsim calibrate: %s\n", err);
	return rc == KV_EINVAL ? KVSIM_EXIT_USAGE : KVSIM_EXIT_FAIL;
}

/* Predict case i with f's terms at v. */
static kv_err
serve_predict(const struct calserve *cs, const struct cs_fit *f, size_t i,
	      const double *v, struct cs_metrics *p, char *err, size_t errlen)
{
	struct cost_calib cal;
	kv_err rc = calserve_calib(f, v, "fit", &cal, err, errlen);

	if (rc != KV_OK)
		return rc;
	rc = calserve_predict(cs, i, &cal, p, err, errlen);
	cost_calib_release(&cal);
	return rc;
}

/* Leave each run out in turn: fit the others, predict it. */
static kv_err
serve_loo(const struct calserve *cs, struct serve_cmd *x,
	  struct serve_row *row, char *err, size_t errlen)
{
	for (size_t r = 0; r < cs->nruns; r++) {
		struct cs_fit f = x->f;
		double t0 = cli_wall_s();
		kv_err rc;

		memcpy(f.start, x->f.value, sizeof(f.start));
		f.step0 = 0.1;	/* near the full fit: smaller steps, and half
				 * the full fit's budget */
		f.max_evals = x->loo_evals ? (size_t)x->loo_evals :
			      (x->f.max_evals ? x->f.max_evals :
			       60 * x->f.nterms) / 2;
		if ((rc = calserve_fit(cs, &f, r, err, errlen)) != KV_OK)
			return rc;
		for (size_t i = 0; i < cs->n; i++) {
			if (cs->c[i].run != r)
				continue;
			rc = serve_predict(cs, &f, i, f.value, &row[i].loo,
					   err, errlen);
			if (rc != KV_OK)
				return rc;
			calserve_ape(&row[i].loo, &cs->c[i].meas,
				     row[i].ape_loo);
			row[i].have_loo = true;
		}
		printf("left out run %zu: %zu simulations of the others, "
		       "%.1f s\n", r + 1, f.evals, cli_wall_s() - t0);
		fflush(stdout);
	}
	return KV_OK;
}

/* Medians of the APEs (fitted, or left out) over the cases that have
 * them: med[0..3) TTFT, E2E, ITL; the count. */
static size_t
serve_medians(const struct calserve *cs, const struct serve_row *row,
	      bool loo, double med[3])
{
	double *x = malloc((cs->n + 1) * sizeof(*x));
	size_t n = 0;

	med[0] = med[1] = med[2] = NAN;
	if (x == NULL)
		return 0;
	for (int k = 0; k < 3; k++) {
		n = 0;
		for (size_t i = 0; i < cs->n; i++)
			if (!loo || row[i].have_loo)
				x[n++] = loo ? row[i].ape_loo[k] :
					       row[i].ape_fit[k];
		med[k] = n ? calfit_quantile(x, n, 0.5) : NAN;
	}
	free(x);
	return n;
}

/*
 * The table: per case, measured and fitted means (TTFT and E2E in s, the
 * decode time per token in ms), the fit's APE and the leave-one-out APE.
 */
static void
serve_table(const struct calserve *cs, const struct serve_row *row)
{
	printf("%3s %9s %9s %9s %9s %8s %8s | %-20s | %-20s | %s\n", "run",
	       "ttft_s", "fitted", "e2e_s", "fitted", "itl_ms", "fitted",
	       "fit APE% ttft e2e itl", "LOO APE% ttft e2e itl", "case");
	for (size_t i = 0; i < cs->n; i++) {
		const struct cs_case *c = &cs->c[i];
		const struct serve_row *w = &row[i];

		printf("%3zu %9.4f %9.4f %9.4f %9.4f %8.3f %8.3f | %6.1f "
		       "%6.1f %6.1f | ", c->run + 1, c->meas.ttft_s,
		       w->fit.ttft_s, c->meas.e2e_s, w->fit.e2e_s,
		       1e3 * calserve_itl(&c->meas, &w->fit),
		       1e3 * calserve_itl(&w->fit, &w->fit),
		       100 * w->ape_fit[0], 100 * w->ape_fit[1],
		       100 * w->ape_fit[2]);
		if (w->have_loo)
			printf("%6.1f %6.1f %6.1f", 100 * w->ape_loo[0],
			       100 * w->ape_loo[1], 100 * w->ape_loo[2]);
		else
			printf("%20s", "-");
		printf(" | %s\n", c->label);
	}
}

/* The calibration file, through a temporary renamed into place. */
static int
serve_write(const struct serve_cmd *x, const struct calserve *cs,
	    const char *const *results, size_t nresults, const char *holdout,
	    const char *src)
{
	const char *out = x->o.out != NULL ? x->o.out : "calibration.yaml";
	char tmp[1100];
	FILE *f = cli_tmp_open("kvsim calibrate", out, tmp, sizeof(tmp));

	if (f == NULL)
		return KVSIM_EXIT_USAGE;
	fprintf(f, "# Cost terms fitted by kvsim calibrate serving "
		"(docs/cost-model.md 5.4)\n# to the mean TTFT, mean E2E and "
		"decode time per token of %zu case%s\n# from %zu run%s, the "
		"simulator in the loop.\nmeta:\n  device: ", cs->n,
		cs->n == 1 ? "" : "s", cs->nruns, cs->nruns == 1 ? "" : "s");
	cli_yaml_str(f, x->device);
	fprintf(f, "\n  date: ");
	cli_yaml_str(f, x->date);
	fprintf(f, "\n  measured: false\n  data: \"");
	for (size_t i = 0; i < nresults; i++) {
		fputs(i ? ", " : "", f);
		cli_yaml_esc(f, results[i]);
	}
	fprintf(f, "\"\n  holdout: ");
	cli_yaml_str(f, holdout);
	fputc('\n', f);
	for (size_t t = 0; t < x->f.nterms; t++) {
		fprintf(f, "%s: {value: %.6g, source: ", x->f.term[t],
			x->f.value[t]);
		cli_yaml_str(f, src);
		fprintf(f, "}\n");
	}
	if (cli_tmp_commit("kvsim calibrate", f, tmp, out) != 0)
		return KVSIM_EXIT_USAGE;
	printf("wrote %s\n", out);
	return KVSIM_EXIT_OK;
}

/* The fit over every run, printed. */
static int
serve_fit_all(const struct calserve *cs, struct serve_cmd *x,
	      struct serve_row *row)
{
	char err[SIM_RUN_ERRLEN];
	double t0 = cli_wall_s();
	kv_err rc;

	x->f.max_evals = (size_t)x->max_evals;
	if ((rc = calserve_fit(cs, &x->f, SIZE_MAX, err, sizeof(err))) !=
	    KV_OK)
		return serve_fail(rc, err);
	printf("fit: %zu case%s of %zu run%s, %zu simulations of each, "
	       "loss %.4g, %.1f s\n", cs->n, cs->n == 1 ? "" : "s",
	       cs->nruns, cs->nruns == 1 ? "" : "s", x->f.evals, x->f.loss,
	       cli_wall_s() - t0);
	for (size_t t = 0; t < x->f.nterms; t++)
		printf("  %-24s %12.6g  (start %.6g)\n", x->f.term[t],
		       x->f.value[t], x->f.start[t]);
	fflush(stdout);
	for (size_t i = 0; i < cs->n; i++) {
		rc = serve_predict(cs, &x->f, i, x->f.value, &row[i].fit, err,
				   sizeof(err));
		if (rc != KV_OK)
			return serve_fail(rc, err);
		calserve_ape(&row[i].fit, &cs->c[i].meas, row[i].ape_fit);
	}
	return KVSIM_EXIT_OK;
}

/* Read the runs, fit, leave each out, print, write. */
static int
serve_exec(struct serve_cmd *x, int npairs, char **pairs)
{
	char err[SIM_RUN_ERRLEN], holdout[512], src[600];
	const char **results = calloc((size_t)npairs + 1, sizeof(*results));
	struct serve_row *row = NULL;
	struct calserve cs;
	double med[3], t0 = cli_wall_s();
	int rc = KVSIM_EXIT_OK;
	kv_err e;

	calserve_init(&cs, x->max_requests);
	if (results == NULL)
		goto nomem;
	for (int i = 0; i < npairs; i++) {
		results[i] = pairs[2 * i + 1];
		e = calserve_add(&cs, pairs[2 * i], pairs[2 * i + 1], err,
				 sizeof(err));
		if (e != KV_OK) {
			rc = serve_fail(e, err);
			goto done;
		}
	}
	if ((row = calloc(cs.n, sizeof(*row))) == NULL)
		goto nomem;
	if ((rc = serve_fit_all(&cs, x, row)) != KVSIM_EXIT_OK)
		goto done;
	if (cs.nruns >= 2 &&
	    (e = serve_loo(&cs, x, row, err, sizeof(err))) != KV_OK) {
		rc = serve_fail(e, err);
		goto done;
	}
	serve_table(&cs, row);
	serve_medians(&cs, row, false, med);
	printf("fitted: median APE TTFT %.1f%%, E2E %.1f%%, ITL %.1f%%\n",
	       100 * med[0], 100 * med[1], 100 * med[2]);
	if (cs.nruns >= 2) {
		size_t n = serve_medians(&cs, row, true, med);

		snprintf(holdout, sizeof(holdout), "leave-one-out over %zu "
			 "runs (%zu cases): median APE TTFT %.1f%%, E2E "
			 "%.1f%%, ITL %.1f%%", cs.nruns, n, 100 * med[0],
			 100 * med[1], 100 * med[2]);
	} else {
		snprintf(holdout, sizeof(holdout), "none: leave-one-out "
			 "needs 2 runs or more");
	}
	printf("%s\n", holdout);
	printf("total %.1f s\n", cli_wall_s() - t0);
	snprintf(src, sizeof(src), "kvsim calibrate serving, %zu runs; %s",
		 cs.nruns, holdout);
	rc = serve_write(x, &cs, results, (size_t)npairs, holdout, src);
	goto done;
nomem:
	fprintf(stderr, "kvsim calibrate: out of memory\n");
	rc = KVSIM_EXIT_FAIL;
done:
	free(row);
	free(results);
	calserve_release(&cs);
	return rc;
}

int
calibrate_serving_main(int argc, char **argv)
{
	struct serve_cmd x = {
		.fit = DEFAULT_FIT, .device = "unknown", .date = "unknown",
		.max_requests = 1000
	};
	int rc;

	if (cli_opts_init(&x.o, "kvsim calibrate", CLI_OUT, argc) != 0) {
		cli_opts_release(&x.o);
		return KVSIM_EXIT_FAIL;
	}
	gsl_set_error_handler_off();
	rc = serve_parse(&x, argc, argv);
	if (rc == KVSIM_EXIT_OK)
		rc = serve_exec(&x, (argc - optind) / 2, argv + optind);
	else if (rc < 0)
		rc = KVSIM_EXIT_OK;
	cli_opts_release(&x.o);
	return rc;
}
