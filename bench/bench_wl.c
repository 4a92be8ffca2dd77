/*
 * bench_wl.c -- workloads/ benchmarks (`make bench`): parse rate of every
 * trace format, generator throughput, and the memory of a stream tiled to
 * 10^7 requests.
 *
 * Inputs are written first to a temporary folder from one generated
 * stream (same requests in every format), then each is read back with
 * wl_stream_next() in a loop: best of three runs, requests/s and MB/s of
 * text.  Memory is measured in a child process per case (its peak RSS,
 * getrusage), so the cases do not hide each other; 10^6 and 10^7 tiled
 * requests must show the same peak.  Numbers: docs/BENCHMARKS.md.
 */
#include "config.h"

#include "workloads/wl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
die(const char *what, const struct wl_error *e)
{
	char msg[1200];

	if (e != NULL) {
		wl_error_format(e, msg, sizeof(msg));
		fprintf(stderr, "bench_wl: %s: %s\n", what, msg);
	} else {
		fprintf(stderr, "bench_wl: %s\n", what);
	}
	exit(1);
}

enum fmt { F_AZURE, F_BURST, F_SPLIT, F_VIDUR, F_KVSIM, F_MOON, F_LLMSS,
	NF };

static const char *const fname[NF] = { "azure.csv", "burstgpt.csv",
	"splitwise.csv", "vidur.csv", "kvsim.csv", "mooncake.jsonl",
	"llmss.jsonl" };

static void
row(FILE *f, enum fmt k, const struct wl_request *r, uint64_t i)
{
	int64_t t = r->arrival_ns;
	/* 2023-11-16 18:15:00 plus t, as Azure writes it. */
	int64_t s = t / 1000000000, frac = (t % 1000000000) / 100;
	int64_t sod = 18 * 3600 + 15 * 60 + s;

	switch (k) {
	case F_AZURE:
		fprintf(f, "2023-11-%02d %02d:%02d:%02d.%07" PRId64 ",%" PRIu32
		    ",%" PRIu32 "\r\n", (int)(16 + sod / 86400),
		    (int)(sod / 3600 % 24), (int)(sod / 60 % 60),
		    (int)(sod % 60), frac, r->prompt_tokens, r->output_tokens);
		break;
	case F_BURST:
		fprintf(f, "%.6f,ChatGPT,%" PRIu32 ",%" PRIu32 ",%" PRIu32
		    ",Conversation log\n", (double)t / 1e9, r->prompt_tokens,
		    r->output_tokens, r->prompt_tokens + r->output_tokens);
		break;
	case F_SPLIT:
		fprintf(f, "%" PRIu64 ",2,0,%.6f,1,%" PRIu32 ",%" PRIu32 "\n",
		    i, (double)t / 1e9, r->prompt_tokens, r->output_tokens);
		break;
	case F_VIDUR:
		fprintf(f, "%.6f,%" PRIu32 ",%" PRIu32 "\n", (double)t / 1e9,
		    r->prompt_tokens, r->output_tokens);
		break;
	case F_KVSIM:
		wl_write_kvsim_row(f, r);
		break;
	case F_MOON: {
		uint32_t nb = (r->prompt_tokens + 511) / 512;

		fprintf(f, "{\"timestamp\": %" PRId64 ", \"input_length\": %"
		    PRIu32 ", \"output_length\": %" PRIu32 ", \"hash_ids\": [",
		    t / 1000000, r->prompt_tokens, r->output_tokens);
		for (uint32_t b = 0; b < nb; b++)
			fprintf(f, "%s%" PRIu64, b ? ", " : "",
			    b < 2 ? (uint64_t)b : i * 64 + b);
		fputs("]}\n", f);
		break;
	}
	case F_LLMSS:
		fprintf(f, "{\"input_toks\": %" PRIu32 ", \"output_toks\": %"
		    PRIu32 ", \"arrival_time_ns\": %" PRId64 "}\n",
		    r->prompt_tokens, r->output_tokens, t);
		break;
	default:
		break;
	}
}

static const char *const header[NF] = {
	"TIMESTAMP,ContextTokens,GeneratedTokens\r\n",
	"Timestamp,Model,Request tokens,Response tokens,Total tokens,"
	    "Log Type\n",
	"request_id,request_type,application_id,arrival_timestamp,batch_size,"
	    "prompt_size,token_size\n",
	"arrived_at,num_prefill_tokens,num_decode_tokens\n",
	NULL, "", "",
};

/* One generated stream (Azure-like lengths) written in every format. */
static void
write_inputs(const char *dir, uint64_t n_csv, uint64_t n_json)
{
	FILE *f[NF];
	struct wl_config c;
	struct wl_error err;
	struct wl_request r;
	wl_stream *s;
	char path[1024];
	uint64_t i = 0;

	wl_config_init(&c);
	c.seed = 1;
	c.gen.requests = n_csv;
	c.gen.arrival.rate = 50;
	c.gen.prompt.kind = WL_DIST_LOGNORMAL;
	c.gen.prompt.mu = 6.8;
	c.gen.prompt.sigma = 0.9;
	c.gen.prompt.max = 16384;
	c.gen.output.kind = WL_DIST_LOGNORMAL;
	c.gen.output.mu = 4.8;
	c.gen.output.sigma = 1.0;
	c.gen.output.max = 2048;
	for (int k = 0; k < NF; k++) {
		snprintf(path, sizeof(path), "%s/%s", dir, fname[k]);
		f[k] = fopen(path, "w");
		if (f[k] == NULL)
			die("cannot write the inputs", NULL);
		if (k == F_KVSIM)
			wl_write_kvsim_header(f[k]);
		else
			fputs(header[k], f[k]);
	}
	if (wl_open(&c, &s, &err) != WL_OK)
		die("generator", &err);
	while (wl_stream_next(s, &r) == WL_OK) {
		for (int k = 0; k < NF; k++)
			if (k < F_MOON || i < n_json)
				row(f[k], (enum fmt)k, &r, i);
		i++;
	}
	wl_stream_free(s);
	for (int k = 0; k < NF; k++)
		fclose(f[k]);
	wl_config_release(&c);
}

/* Requests/s reading `c` to the end, best of `reps`; *n, *bytes out. */
static double
rate(const struct wl_config *c, int reps, uint64_t *n)
{
	double best = 0;

	for (int k = 0; k < reps; k++) {
		struct wl_error err;
		struct wl_request r;
		wl_stream *s;
		uint64_t cnt = 0, sum = 0;
		double t0 = now_s(), dt;
		wl_err rc;

		if (wl_open(c, &s, &err) != WL_OK)
			die("open", &err);
		while ((rc = wl_stream_next(s, &r)) == WL_OK) {
			cnt++;
			sum += r.prompt_tokens;
		}
		if (rc != WL_END)
			die("read", wl_stream_error(s));
		dt = now_s() - t0;
		wl_stream_free(s);
		if (sum == 0)
			die("no tokens read", NULL);
		if ((double)cnt / dt > best)
			best = (double)cnt / dt;
		*n = cnt;
	}
	return best;
}

static double
file_mb(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (double)st.st_size / 1e6 : 0;
}

/* Peak RSS (KiB) of a child that reads `c` to the end; *n requests. */
static long
child_rss(const struct wl_config *c, uint64_t *n, double *secs)
{
	int fd[2];
	pid_t pid;
	int status;
	struct {
		long rss;
		uint64_t n;
		double secs;
	} out = { 0, 0, 0 };

	if (pipe(fd) != 0)
		die("pipe", NULL);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork", NULL);
	if (pid == 0) {
		struct rusage ru;

		close(fd[0]);
		out.secs = now_s();
		out.secs = (double)rate(c, 1, &out.n) > 0 ? now_s() - out.secs :
		    0;
		getrusage(RUSAGE_SELF, &ru);
		out.rss = ru.ru_maxrss;
		if (write(fd[1], &out, sizeof(out)) != (ssize_t)sizeof(out))
			_exit(1);
		_exit(0);
	}
	close(fd[1]);
	if (read(fd[0], &out, sizeof(out)) != (ssize_t)sizeof(out))
		die("child failed", NULL);
	close(fd[0]);
	waitpid(pid, &status, 0);
	*n = out.n;
	*secs = out.secs;
	return out.rss;
}

int
main(int argc, char **argv)
{
	char dir[] = "/tmp/bench_wl.XXXXXX";
	char path[1024];
	const char *traces = getenv("KVSIM_TRACES");
	uint64_t n_csv = 2000000, n_json = 400000, n;
	struct wl_config c;
	double secs;

	if (argc > 1)
		n_csv = strtoull(argv[1], NULL, 10);
	if (n_json > n_csv)
		n_json = n_csv;
	if (mkdtemp(dir) == NULL)
		die("mkdtemp", NULL);
	printf("workloads benchmark: %" PRIu64 " CSV rows, %" PRIu64
	    " JSONL rows (zlib: %s)\n\n", n_csv, n_json,
	    wl_gzip_supported() ? "yes" : "no");
	write_inputs(dir, n_csv, n_json);
	if (wl_gzip_supported()) {
		char cmd[2200];

		snprintf(cmd, sizeof(cmd), "gzip -6 -c %s/mooncake.jsonl > "
		    "%s/mooncake.jsonl.gz", dir, dir);
		if (system(cmd) != 0)
			die("gzip", NULL);
	}

	printf("| input | requests | MB | requests/s | MB/s |\n");
	printf("|---|---:|---:|---:|---:|\n");
	for (int k = 0; k <= NF; k++) {
		double r, mb;
		const char *name = k < NF ? fname[k] : "mooncake.jsonl.gz";

		if (k == NF && !wl_gzip_supported())
			break;
		wl_config_init(&c);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		c.trace = strdup(path);
		r = rate(&c, 3, &n);
		mb = file_mb(path);
		printf("| %s | %" PRIu64 " | %.1f | %.2f M | %.0f |\n", name, n,
		    mb, r / 1e6, r * mb / (double)n);
		wl_config_release(&c);
	}

	printf("\n| generator | requests/s |\n|---|---:|\n");
	{
		static const char *const what[] = {
			"poisson, fixed lengths",
			"gamma cv 3, lognormal + uniform lengths",
			"+ 16 system prompts (zipf), sessions of 1-8 turns",
		};

		for (int k = 0; k < 3; k++) {
			wl_config_init(&c);
			c.gen.requests = 2000000;
			c.gen.arrival.rate = 100;
			if (k >= 1) {
				c.gen.arrival.kind = WL_ARR_GAMMA;
				c.gen.arrival.cv = 3;
				c.gen.prompt.kind = WL_DIST_LOGNORMAL;
				c.gen.prompt.mu = 6.8;
				c.gen.prompt.sigma = 0.9;
				c.gen.output.kind = WL_DIST_UNIFORM;
				c.gen.output.min = 1;
				c.gen.output.max = 512;
			}
			if (k == 2) {
				c.gen.systems = 16;
				c.gen.turns.kind = WL_DIST_UNIFORM;
				c.gen.turns.min = 1;
				c.gen.turns.max = 8;
			}
			printf("| %s | %.2f M |\n", what[k],
			    rate(&c, 3, &n) / 1e6);
			wl_config_release(&c);
		}
	}

	printf("\n| tiled stream (child process) | requests | seconds | "
	    "peak RSS |\n|---|---:|---:|---:|\n");
	{
		const char *src;
		uint64_t rows;
		char real[1024];

		snprintf(real, sizeof(real), "%s/azure_llm_2023_conv.csv",
		    traces != NULL ? traces : "../shared/traces");
		if (access(real, R_OK) == 0) {
			src = real;
			rows = 19366;
		} else {
			snprintf(path, sizeof(path), "%s/azure.csv", dir);
			src = path;
			rows = n_csv;
		}
		for (int k = 0; k < 3; k++) {
			static const uint64_t target[] = { 0, 1000000,
				10000000 };
			long rss;

			wl_config_init(&c);
			c.trace = strdup(src);
			c.tile_copies = k == 0 ? 1 : (uint32_t)((target[k] +
			    rows - 1) / rows);
			rss = child_rss(&c, &n, &secs);
			printf("| %s x %" PRIu32 " | %" PRIu64 " | %.2f | %.1f "
			    "MiB |\n", strrchr(src, '/') + 1, c.tile_copies, n,
			    secs, (double)rss / 1024);
			wl_config_release(&c);
		}
	}
	for (int k = 0; k < NF; k++) {
		snprintf(path, sizeof(path), "%s/%s", dir, fname[k]);
		remove(path);
	}
	snprintf(path, sizeof(path), "%s/mooncake.jsonl.gz", dir);
	remove(path);
	rmdir(dir);
	return 0;
}
