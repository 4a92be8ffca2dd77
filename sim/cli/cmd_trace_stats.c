/*
 * cmd_trace_stats.c -- `kvsim trace-stats`: the statistics of a workload
 * stream (a trace file, or whatever a YAML `workload:` section builds),
 * with the definitions and the precision of ../shared/traces/README.md,
 * so its tables can be checked line by line.  --csv prints one tidy row
 * at full precision; --dump writes the stream itself as kvsim CSV.
 */
#include "config.h"

#include "sim/cli/cmd_trace_stats.h"
#include "sim/cli/opts.h"

#include "sim/cli/cmd_trace_stats.h"
#include "workloads/wl.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: kvsim trace-stats [OPTIONS] [FILE]\n\n"
	    "Statistics of a request trace (or of the workload a config "
	    "describes):\nrows, span, mean and 1-minute rates, input/output "
	    "lengths, and for traces\nwith hash ids the prefix-reuse ratio "
	    "under an infinite cache.\n\n"
	    "  --format F        auto (default), azure, mooncake, burstgpt, "
	    "splitwise,\n"
	    "                    vidur, llmservingsim, kvsim\n"
	    "  --config FILE     read the `workload:` section of a YAML file "
	    "(FILE, if\n"
	    "                    given, replaces its trace)\n"
	    "  --on-error M      stop (default) or skip malformed rows\n"
	    "  --order M         error (default), skip or sort out-of-order "
	    "rows\n"
	    "  --hash-block N    tokens per hash id (default 512)\n"
	    "  --block-size N    also measure reuse of N-token blocks of "
	    "token ids\n"
	    "  --seed N          seed for generators and identities "
	    "(default 0)\n"
	    "  --max-requests N  first N requests only\n"
	    "  --window S:E      only arrivals in [S, E) seconds (E may be "
	    "empty)\n"
	    "  --time-scale X    multiply arrival times by X\n"
	    "  --target-rate R   scale arrival times to R requests/s\n"
	    "  --tile K          repeat the stream K times\n"
	    "  --csv             one CSV row at full precision\n"
	    "  --dump            write the stream as kvsim CSV instead\n"
	    "  -h, --help        this text\n\n"
	    "Exit status: 0 ok, 2 bad usage or bad input "
	    "(FILE:LINE:COL: message).\n");
}

/* Integer with thousands separators. */
static const char *
grp(uint64_t v, char *buf, size_t size)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v);
	size_t k = 0;

	for (int i = 0; i < n && k + 1 < size; i++) {
		if (i > 0 && (n - i) % 3 == 0 && k + 1 < size)
			buf[k++] = ',';
		buf[k++] = tmp[i];
	}
	buf[k] = '\0';
	return buf;
}

/* A fixed-point number with `dec` decimals and grouped integer part. */
static const char *
grpf(double v, int dec, char *buf, size_t size)
{
	char tmp[64], ip[40];
	char *dot;
	uint64_t i;

	snprintf(tmp, sizeof(tmp), "%.*f", dec, fabs(v));
	dot = strchr(tmp, '.');
	if (dot != NULL)
		*dot = '\0';
	i = strtoull(tmp, NULL, 10);
	snprintf(buf, size, "%s%s%s%s", v < 0 ? "-" : "", grp(i, ip,
	    sizeof(ip)), dot != NULL ? "." : "", dot != NULL ? dot + 1 : "");
	return buf;
}

/* A median: an integer, or .5 when it falls between two values. */
static const char *
med(double v, char *buf, size_t size)
{
	return grpf(v, v == floor(v) ? 0 : 1, buf, size);
}

static void
wallclock(int64_t ns, char *buf, size_t size)
{
	int64_t s = ns / 1000000000, frac = ns % 1000000000, days, sod, y;
	unsigned m, d;

	/* floor division without negating: any int64, INT64_MIN included */
	if (frac < 0) {
		s--;
		frac += 1000000000;
	}
	days = s / 86400;
	sod = s % 86400;
	if (sod < 0) {
		days--;
		sod += 86400;
	}

	/* days_from_civil's inverse, as in workloads/wl_parse.c. */
	{
		int64_t z = days + 719468, era;
		unsigned doe, yoe, doy, mp;

		era = (z >= 0 ? z : z - 146096) / 146097;
		doe = (unsigned)(z - era * 146097);
		yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
		doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
		mp = (5 * doy + 2) / 153;
		d = doy - (153 * mp + 2) / 5 + 1;
		m = mp < 10 ? mp + 3 : mp - 9;
		y = (int64_t)yoe + era * 400 + (m <= 2);
	}
	if (frac % 100 == 0)
		snprintf(buf, size, "%04" PRId64 "-%02u-%02u %02d:%02d:%02d.%07"
		    PRId64, y, m, d, (int)(sod / 3600), (int)(sod / 60 % 60),
		    (int)(sod % 60), frac / 100);
	else
		snprintf(buf, size, "%04" PRId64 "-%02u-%02u %02d:%02d:%02d.%09"
		    PRId64, y, m, d, (int)(sod / 3600), (int)(sod / 60 % 60),
		    (int)(sod % 60), frac);
}

static double
pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

static void
print_table(const char *file, const struct wl_info *inf,
    const struct wl_summary *s)
{
	char a[64], b[64], c[64], d[64], e[64];

	printf("file: %s\n", file);
	printf("format: %s\n", inf->format);
	printf("rows: %s\n", grp(s->rows, a, sizeof(a)));
	if (s->rows == 0)
		return;
	if (inf->has_epoch) {
		wallclock(inf->epoch_ns + s->first_ns, a, sizeof(a));
		wallclock(inf->epoch_ns + s->last_ns, b, sizeof(b));
		printf("first / last timestamp: %s / %s\n", a, b);
	} else {
		printf("first / last arrival: %s / %s s\n",
		    grpf((double)s->first_ns / 1e9, 3, a, sizeof(a)),
		    grpf((double)s->last_ns / 1e9, 3, b, sizeof(b)));
	}
	printf("span: %s s\n", grpf(s->span_s, 1, a, sizeof(a)));
	printf("mean rate: %.2f req/s\n", s->mean_rate);
	if (s->bins > 0)
		printf("arrivals per 1-min bin: min / median / max: %s / %s / "
		    "%s (%s bins, %s empty)\n", grp(s->bin_min, a, sizeof(a)),
		    med(s->bin_median, b, sizeof(b)),
		    grp(s->bin_max, c, sizeof(c)), grp(s->bins, d, sizeof(d)),
		    grp(s->bins_empty, e, sizeof(e)));
	else
		printf("arrivals per 1-min bin: none (span under 60 s)\n");
	printf("inter-arrival CV: %.3g\n", s->gap_cv);
	printf("distinct timestamps: %s\n", grp(s->distinct_ts, a, sizeof(a)));
	printf("input tokens: mean / median / p99 (min-max): %s / %s / %s "
	    "(%s-", grpf(s->in.mean, 1, a, sizeof(a)),
	    med(s->in.median, b, sizeof(b)), grp(s->in.p99, c, sizeof(c)),
	    grp(s->in.min, d, sizeof(d)));
	printf("%s)\n", grp(s->in.max, a, sizeof(a)));
	printf("output tokens: mean / median / p99 (min-max): %s / %s / %s "
	    "(%s-", grpf(s->out.mean, 1, a, sizeof(a)),
	    med(s->out.median, b, sizeof(b)), grp(s->out.p99, c, sizeof(c)),
	    grp(s->out.min, d, sizeof(d)));
	printf("%s)\n", grp(s->out.max, a, sizeof(a)));
	printf("offered load: %s input tok/s, %s output tok/s\n",
	    grpf(s->in_tok_s, 0, a, sizeof(a)),
	    grpf(s->out_tok_s, 1, b, sizeof(b)));
	if (s->has_hash) {
		printf("total / unique %" PRIu32 "-token blocks: %s / %s\n",
		    s->hash_block, grp(s->seg_total, a, sizeof(a)),
		    grp(s->seg_unique, b, sizeof(b)));
		printf("prefix-reuse ratio (blocks): %.2f %%\n",
		    pct(s->seg_matched, s->seg_total));
		printf("prefix-reuse ratio (tokens): %.2f %%\n",
		    pct(s->tok_matched, s->in.sum));
		printf("requests that reuse >= 1 leading block: %s (%.1f %%)\n",
		    grp(s->reuse_requests, a, sizeof(a)),
		    pct(s->reuse_requests, s->rows));
	}
	if (s->block_tokens > 0)
		printf("token-block reuse (%" PRIu32 "-token blocks): %s of %s "
		    "blocks (%.2f %%), %.2f %% of input tokens\n",
		    s->block_tokens, grp(s->blk_hit, a, sizeof(a)),
		    grp(s->blk_total, b, sizeof(b)),
		    pct(s->blk_hit, s->blk_total),
		    pct(s->blk_hit * s->block_tokens, s->in.sum));
}

static void
print_csv(const char *file, const struct wl_info *inf,
    const struct wl_summary *s, const struct wl_counts *c)
{
	printf("file,format,rows,first_s,last_s,span_s,mean_rate_req_s,"
	    "bins_1min,bins_empty,bin_min,bin_median,bin_max,gap_cv,"
	    "distinct_timestamps,input_mean_tokens,input_median_tokens,"
	    "input_p99_tokens,input_min_tokens,input_max_tokens,"
	    "output_mean_tokens,output_median_tokens,output_p99_tokens,"
	    "output_min_tokens,output_max_tokens,offered_input_tok_s,"
	    "offered_output_tok_s,hash_block_tokens,hash_blocks_total,"
	    "hash_blocks_unique,reuse_blocks_ratio,reuse_tokens_ratio,"
	    "reuse_requests,block_tokens,token_blocks_total,"
	    "token_blocks_hit,skipped,rejected\n");
	printf("\"%s\",%s,%" PRIu64 ",%.9f,%.9f,%.9f,%.17g,%" PRIu64 ",%"
	    PRIu64 ",%" PRIu64 ",%.17g,%" PRIu64 ",%.17g,%" PRIu64, file,
	    inf->format, s->rows, (double)s->first_ns / 1e9,
	    (double)s->last_ns / 1e9, s->span_s, s->mean_rate, s->bins,
	    s->bins_empty, s->bin_min, s->bin_median, s->bin_max, s->gap_cv,
	    s->distinct_ts);
	printf(",%.17g,%.17g,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.17g,%.17g,%"
	    PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.17g,%.17g", s->in.mean,
	    s->in.median, s->in.p99, s->in.min, s->in.max, s->out.mean,
	    s->out.median, s->out.p99, s->out.min, s->out.max, s->in_tok_s,
	    s->out_tok_s);
	printf(",%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",%.17g,%.17g,%" PRIu64
	    ",%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
	    s->hash_block, s->seg_total, s->seg_unique,
	    s->seg_total ? (double)s->seg_matched / (double)s->seg_total : 0,
	    s->in.sum ? (double)s->tok_matched / (double)s->in.sum : 0,
	    s->reuse_requests, s->block_tokens, s->blk_total, s->blk_hit,
	    c->skipped, c->rej_zero + c->rej_huge + c->rej_order +
	    c->rej_filter + c->rej_max_len);
}

static bool
arg_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (s == NULL || *s == '\0' || *s == '-')
		return false;
	v = strtoull(s, &end, 10);
	if (*end != '\0')
		return false;
	*out = v;
	return true;
}

static bool
arg_double(const char *s, double *out)
{
	char *end;

	if (s == NULL || *s == '\0')
		return false;
	*out = strtod(s, &end);
	return *end == '\0' && isfinite(*out);
}

/* The options that take a value (the others: --csv, --dump, -h). */
static bool
valued_option(const char *name)
{
	static const char *const names[] = { "--format", "--config",
		"--on-error", "--order", "--block-size", "--hash-block",
		"--seed", "--max-requests", "--tile", "--time-scale",
		"--target-rate", "--window", NULL };

	for (int i = 0; names[i] != NULL; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

static int bad_usage(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static int
bad_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kvsim trace-stats: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nRun 'kvsim trace-stats --help' for usage.\n");
	return KVSIM_EXIT_USAGE;
}

struct ts_args {
	const char *file, *config, *fmt, *on_error, *order;
	uint64_t block, hb, seed, maxreq, tile;
	double ws, we, tscale, trate;
	bool csv, dump, have_seed;
};

/* The value v of option `name` (one valued_option() knows). */
static int
ts_value(struct ts_args *t, const char *name, const char *v)
{
#define BADV(what) bad_usage("%s: expected %s, got '%s'", name, what, v)
	if (strcmp(name, "--format") == 0)
		t->fmt = v;
	else if (strcmp(name, "--config") == 0)
		t->config = v;
	else if (strcmp(name, "--on-error") == 0)
		t->on_error = v;
	else if (strcmp(name, "--order") == 0)
		t->order = v;
	else if (strcmp(name, "--block-size") == 0) {
		if (!arg_u64(v, &t->block) || t->block == 0 ||
		    t->block >= (1u << 20))
			return BADV("an integer in [1, 1048575]");
	} else if (strcmp(name, "--hash-block") == 0) {
		if (!arg_u64(v, &t->hb) || t->hb == 0 || t->hb >= (1u << 24))
			return BADV("an integer in [1, 16777215]");
	} else if (strcmp(name, "--seed") == 0) {
		if (!arg_u64(v, &t->seed))
			return BADV("an integer >= 0");
		t->have_seed = true;
	} else if (strcmp(name, "--max-requests") == 0) {
		if (!arg_u64(v, &t->maxreq))
			return BADV("an integer >= 0 (0: all)");
	} else if (strcmp(name, "--tile") == 0) {
		if (!arg_u64(v, &t->tile) || t->tile == 0 ||
		    t->tile >= (1u << 24))
			return BADV("an integer in [1, 16777215]");
	} else if (strcmp(name, "--time-scale") == 0) {
		if (!arg_double(v, &t->tscale) || !(t->tscale > 0))
			return BADV("a number > 0");
	} else if (strcmp(name, "--target-rate") == 0) {
		if (!arg_double(v, &t->trate) || !(t->trate > 0))
			return BADV("requests/s, a number > 0");
	} else {	/* --window */
		char lo[64];
		const char *colon = strchr(v, ':');

		if (colon == NULL || colon - v >= (ptrdiff_t)sizeof(lo))
			return BADV("S:E seconds, 0 <= S < E");
		snprintf(lo, sizeof(lo), "%.*s", (int)(colon - v), v);
		if (!arg_double(lo[0] ? lo : "0", &t->ws) || t->ws < 0 ||
		    (colon[1] != '\0' && (!arg_double(colon + 1, &t->we) ||
		    t->we <= t->ws)))
			return BADV("S:E seconds, 0 <= S < E");
	}
#undef BADV
	return KVSIM_EXIT_OK;
}

/* The arguments (by hand: "--name=value" and "--name value"); -1 after
 * --help. */
static int
ts_parse(struct ts_args *t, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		const char *eq = NULL;
		char name[32];
		int rc;

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return -1;
		}
		if (strcmp(a, "--csv") == 0) {
			t->csv = true;
			continue;
		}
		if (strcmp(a, "--dump") == 0) {
			t->dump = true;
			continue;
		}
		if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
			if (t->file != NULL)
				return bad_usage("more than one FILE ('%s')",
				    a);
			t->file = a;
			continue;
		}
		eq = strchr(a, '=');
		snprintf(name, sizeof(name), "%.*s", eq != NULL ?
		    (int)(eq - a) : (int)strlen(a), a);
		if (!valued_option(name))
			return cli_bad_option("kvsim trace-stats", name);
		if (eq != NULL)
			v = eq + 1;
		else if (i + 1 < argc)
			v = argv[++i];
		else
			return cli_missing_value("kvsim trace-stats", a);
		if ((rc = ts_value(t, name, v)) != 0)
			return rc;
	}
	return KVSIM_EXIT_OK;
}

/* --format, --on-error and --order into cfg. */
static int
ts_modes(const struct ts_args *t, struct wl_config *cfg)
{
	if (t->fmt != NULL && !wl_format_parse(t->fmt, &cfg->format))
		return bad_usage("unknown --format '%s'", t->fmt);
	if (t->on_error != NULL) {
		if (strcmp(t->on_error, "stop") == 0)
			cfg->on_error = WL_ON_ERROR_STOP;
		else if (strcmp(t->on_error, "skip") == 0)
			cfg->on_error = WL_ON_ERROR_SKIP;
		else
			return bad_usage("unknown --on-error '%s'",
			    t->on_error);
	}
	if (t->order != NULL) {
		if (strcmp(t->order, "error") == 0)
			cfg->order = WL_ORDER_ERROR;
		else if (strcmp(t->order, "skip") == 0)
			cfg->order = WL_ORDER_SKIP;
		else if (strcmp(t->order, "sort") == 0)
			cfg->order = WL_ORDER_SORT;
		else
			return bad_usage("unknown --order '%s'", t->order);
	}
	return KVSIM_EXIT_OK;
}

/* The workload configuration: --config, FILE, then the options. */
static int
ts_config(const struct ts_args *t, struct wl_config *cfg)
{
	struct wl_error err;
	char msg[1200];
	int rc;

	if (t->config != NULL && wl_config_load(t->config, cfg, &err) !=
	    WL_OK) {
		wl_error_format(&err, msg, sizeof(msg));
		fprintf(stderr, "kvsim trace-stats: %s\n", msg);
		return KVSIM_EXIT_USAGE;
	}
	if (t->file != NULL) {
		free(cfg->trace);
		cfg->trace = strdup(t->file);
		if (cfg->trace == NULL) {
			fprintf(stderr, "kvsim trace-stats: out of memory\n");
			return KVSIM_EXIT_USAGE;
		}
	} else if (t->config == NULL) {
		return bad_usage("no FILE (and no --config)");
	}
	if ((rc = ts_modes(t, cfg)) != 0)
		return rc;
	if (t->hb)
		cfg->hash_block_tokens = (uint32_t)t->hb;
	if (t->have_seed)
		cfg->seed = t->seed;
	if (t->maxreq)
		cfg->max_requests = t->maxreq;
	if (t->tile)
		cfg->tile_copies = (uint32_t)t->tile;
	if (t->tscale > 0)
		cfg->time_scale = t->tscale;
	if (t->trate > 0)
		cfg->target_rate = t->trate;
	if (t->ws >= 0) {
		cfg->window_start_s = t->ws;
		cfg->window_end_s = t->we > 0 ? t->we : 0;
	}
	return KVSIM_EXIT_OK;
}

/* The table (or --csv) of the statistics, and what was left out. */
static void
ts_print(const struct ts_args *t, const struct wl_config *cfg,
	 wl_stream *s, wl_stats *st)
{
	const struct wl_counts *c = wl_stream_counts(s);
	struct wl_summary sum;
	char msg[1200];

	wl_stats_summary(st, &sum);
	if (t->csv)
		print_csv(cfg->trace ? cfg->trace : "(generator)",
		    wl_stream_info(s), &sum, c);
	else
		print_table(cfg->trace ? cfg->trace : "(generator)",
		    wl_stream_info(s), &sum);
	wl_counts_format(c, msg, sizeof(msg));
	if (msg[0] != '\0' && !t->csv)
		printf("not replayed: %s\n", msg);
	if (c->skipped > 0) {
		wl_error_format(&c->first_skip, msg, sizeof(msg));
		fprintf(stderr, "kvsim trace-stats: first skipped row: "
		    "%s\n", msg);
	}
}

/* Read the stream: its statistics, or its rows with --dump. */
static int
ts_read(const struct ts_args *t, const struct wl_config *cfg)
{
	struct wl_error err;
	struct wl_request r;
	wl_stream *s = NULL;
	wl_stats *st = NULL;
	wl_err rc;
	int status = KVSIM_EXIT_USAGE;
	char msg[1200];

	rc = wl_open(cfg, &s, &err);
	if (rc != WL_OK)
		goto fail;
	if (t->dump) {
		if (wl_write_kvsim_header(stdout) != WL_OK)
			goto wfail;
	} else {
		st = wl_stats_new((uint32_t)t->block, cfg->vocab_size,
		    wl_stream_info(s)->hash_block);
		if (st == NULL) {
			fprintf(stderr, "kvsim trace-stats: out of memory\n");
			goto out;
		}
	}
	while ((rc = wl_stream_next(s, &r)) == WL_OK) {
		if (t->dump) {
			if (wl_write_kvsim_row(stdout, &r) != WL_OK)
				goto wfail;
		} else if (wl_stats_add(st, &r) != WL_OK) {
			fprintf(stderr, "kvsim trace-stats: out of memory\n");
			goto out;
		}
	}
	if (rc != WL_END) {
		err = *wl_stream_error(s);
		goto fail;
	}
	if (!t->dump)
		ts_print(t, cfg, s, st);
	if (fflush(stdout) != 0)
		goto wfail;
	status = KVSIM_EXIT_OK;
	goto out;
wfail:
	fprintf(stderr, "kvsim trace-stats: write error on standard output\n");
	status = KVSIM_EXIT_USAGE;
	goto out;
fail:
	wl_error_format(&err, msg, sizeof(msg));
	fprintf(stderr, "kvsim trace-stats: %s\n", msg);
	status = KVSIM_EXIT_USAGE;
out:
	wl_stats_free(st);
	wl_stream_free(s);
	return status;
}

int
trace_stats_main(int argc, char **argv)
{
	struct ts_args t = { .ws = -1, .we = -1 };
	struct wl_config cfg;
	int rc;

	wl_config_init(&cfg);
	if ((rc = ts_parse(&t, argc, argv)) == 0 &&
	    (rc = ts_config(&t, &cfg)) == 0)
		rc = ts_read(&t, &cfg);
	wl_config_release(&cfg);
	return rc < 0 ? KVSIM_EXIT_OK : rc;
}
