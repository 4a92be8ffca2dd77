/*
 * rpt_int.h -- the layout of the run-metrics collector, shared by rpt.c
 * and the white-box tests of rpt_check() (tests/check_reports.c).
 * Nothing else may look inside a struct rpt.
 */
#ifndef REPORTS_RPT_INT_H
#define REPORTS_RPT_INT_H

#include "reports/rpt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The per-request metrics, one vector of samples each. */
enum { RPT_M_TTFT = 0, RPT_M_TPOT, RPT_M_E2E, RPT_M_QUEUE, RPT_M_N };

struct rpt_vec {			/* one metric's samples, in seconds */
	double *v;
	size_t n, cap;
	bool sorted;
	double sum;
	double watch;		/* rpt_count_over's last x (NAN: none) */
	uint64_t over;		/* values > watch */
};

/* The ITL histogram's buckets (rpt.h: RPT_ITL_EXACT, RPT_ITL_SUB). */
#define RPT_ITL_NB (RPT_ITL_EXACT + (63 - 8) * RPT_ITL_SUB)

/* The run id as a CSV field: quoted, its quotes doubled, where needed. */
#define RPT_RUN_CSV_MAX (2 * 127 + 2)

struct rpt {
	char run_id[128];
	char run_csv[RPT_RUN_CSV_MAX];	/* run_id as rpt_csv_field writes it */
	size_t run_csv_n;
	FILE *reqs, *ts;
	struct rpt_vec m[RPT_M_N];
	uint64_t completed, out_tokens, in_tokens;
	int64_t itl_sum_ns, itl_max_ns;
	uint64_t itl_n;
	uint64_t *itl_hist;	/* RPT_ITL_NB counts */
	uint64_t itl_count;
	double slo_ttft, slo_tpot, slo_e2e;
	uint64_t good;
	/* benchmark clients (rpt_set_client) */
	bool col_stage, col_status;
	uint64_t failed;
	int64_t t0, t1;		/* first arrival, last end (any row) */
	bool any;
	struct rpt **stage;	/* a collector without files per stage */
	size_t nstage;
	double fe_in_sum, fe_out_sum;	/* frontend ns, over completed */
	/* disaggregation (rpt_set_pd, rpt_pd.c) */
	bool col_pd;
	struct rpt_vec xfer;	/* kv_transfer_s of completed requests */
	double dq_sum;		/* decode_queue_s, summed */
	uint64_t xfer_bytes;

	/* KV offload columns (rpt_set_offload) */
	uint32_t noff;
	char offname[RPT_MAX_TIERS][16];
	/* LoRA columns (rpt_set_lora, rpt_lora.c) */
	bool col_lora;

	/* speculative decoding columns (rpt_set_spec, rpt_spec.c) */
	bool col_spec;
};

/* rpt_client.c: a failed request's row and counts; the extra columns of
 * a row (each with its comma, then the newline); the row's stage
 * collector.  0 or -1 as rpt.h's calls. */
/* Append x to v (its sum and rpt_count_over's count too); -1 on ENOMEM. */
int rpt__vec_push(struct rpt_vec *v, double x);
/* The p-quantile of v, linear between order statistics (sorts v). */
double rpt__vec_quantile(struct rpt_vec *v, double p);
/* Sort v[0..n), finite numbers, ascending in place (rpt_sort.c): the
 * order gsl_sort gives. */
void rpt__sort(double *v, size_t n);
int rpt__add_failed(rpt *r, const struct rpt_req *q);
char *rpt__put_client(const rpt *r, const struct rpt_req *q, bool ok,
		      char *p);
int rpt__stage_add(rpt *r, const struct rpt_req *q);
void rpt__span(rpt *r, const struct rpt_req *q);
void rpt__client_free(rpt *r);
char *rpt__put_u(char *p, uint64_t v);
char *rpt__put_sec(char *p, int64_t ns);
/* x as printf's "%.*f" with prec 0..9 writes it: at most RPT_FIXED_MAX
 * bytes ("-" and DBL_MAX's 309 digits, ".", 9 more, and the NUL). */
#define RPT_FIXED_MAX 330
char *rpt__put_fixed(char *p, double x, int prec);
char *rpt__put_tail(char *p, const struct rpt_req *q);
char *rpt__put_head(rpt *r, const struct rpt_req *q, char *line);
/* rpt_offload.c: the offload columns of a header (each with its comma;
 * which: 0 requests, 1 timeseries, 2 summary), a requests.csv row, a
 * timeseries row and the summary row.  Nothing when offload is off. */
void rpt__offload_head(const rpt *r, FILE *f, int which);
char *rpt__put_offload(const rpt *r, const struct rpt_req *q, char *p);
/* rpt_lora.c: LoRA's columns (which as rpt__offload_head's: 0
 * requests.csv, 2 summary.csv), a row's, the summary's. */
void rpt__lora_head(const rpt *r, FILE *f, int which);
char *rpt__put_lora(const rpt *r, const struct rpt_req *q, char *p);
void rpt__lora_summary(const rpt *r, const struct rpt_totals *t, FILE *f);
void rpt__offload_sample(const rpt *r, const struct rpt_sample *s);
void rpt__offload_summary(const rpt *r, const struct rpt_totals *t, FILE *f);

/* rpt_spec.c: the speculative decoding columns, as rpt_offload.c's.
 * Nothing when speculation is off. */
void rpt__spec_head(const rpt *r, FILE *f, int which);
char *rpt__put_spec(const rpt *r, const struct rpt_req *q, char *p);
void rpt__spec_summary(const rpt *r, const struct rpt_totals *t, FILE *f);

/* rpt_pd.c: a completed request's transfer (0 or -1); its columns
 * (each with its comma); the summary's columns (header, then values). */
int rpt__pd_add(rpt *r, const struct rpt_req *q);
char *rpt__put_pd(const rpt *r, const struct rpt_req *q, char *p);
void rpt__pd_summary_head(const rpt *r, FILE *f);
void rpt__pd_summary(rpt *r, const struct rpt_totals *t, FILE *f);
void rpt__pd_free(rpt *r);

#endif
