/*
 * bench_sched.c -- scheduler cost per step (`make bench`).
 *
 * For every built-in policy and a batch of 8, 64, 256 and 1,024 running
 * sequences: admit the batch (16-token prompts, outputs too long to end
 * during the run, a pool large enough that nobody is preempted), then time
 * decode-only steps.  Reported per scheduled sequence:
 *   schedule  kvs_schedule() alone: the policy's decisions and the
 *             allocator calls it makes (one slot per decode);
 *   step      kvs_schedule() + kvs_complete(): the model output too (one
 *             token per sequence, finish checks).
 * Each figure is the MEDIAN over the timed steps of (time of the step /
 * scheduled sequences): robust to other load on a shared machine, which
 * inflates a mean.  Heap allocations made during the timed steps are
 * counted by wrapping
 * malloc/calloc/realloc at link time: steady state must make none.
 * Target: O(batch), <= 50 ns per scheduled sequence.  docs/BENCHMARKS.md
 * ("Scheduler") records the numbers.
 */
#include "core/kvsched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned long long nalloc;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);

void *
__wrap_malloc(size_t n)
{
	nalloc++;
	return __real_malloc(n);
}

void *
__wrap_calloc(size_t n, size_t m)
{
	nalloc++;
	return __real_calloc(n, m);
}

void *
__wrap_realloc(void *p, size_t n)
{
	nalloc++;
	return __real_realloc(p, n);
}

#define PROMPT 16
#define BS 16
#define MML 8192

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static const struct {
	const char *policy;
	kvc_mode mode;
} pols[] = {
	{ "kvsim", KVC_EXACT },
	{ "sarathi", KVC_EXACT },
	{ "deepspeed-fastgen", KVC_DEEPSPEED },
	{ "vllm-v1", KVC_VLLM_V1 },
	{ "vllm-v0", KVC_VLLM_V0 },
};

static kvs *
make(int p, uint32_t batch, uint32_t steps)
{
	struct kvs_config sc;
	struct kvc_config kc;
	char why[256];
	uint32_t tok[PROMPT];
	kv_err e;
	kvs *s;

	kvs_config_init(&sc);
	snprintf(sc.policy, sizeof(sc.policy), "%s", pols[p].policy);
	kvc_config_default(&kc, pols[p].mode);
	kc.block_size = BS;
	kc.max_model_len = MML;
	/* Room for every sequence to the end of the run, and more. */
	kc.gpu_blocks = batch * ((PROMPT + steps + 64) / BS + 2) + 1024;
	sc.max_num_seqs = batch;
	if (strcmp(pols[p].policy, "sarathi") == 0)
		sc.chunk_size = batch * PROMPT;
	else
		sc.max_num_batched_tokens = batch * PROMPT > MML ?
					    batch * PROMPT : MML;
	s = kvs_new(&sc, &kc, &e, why, sizeof(why));
	if (s == NULL) {
		fprintf(stderr, "bench_sched: %s: %s\n", pols[p].policy, why);
		exit(1);
	}
	for (uint32_t i = 0; i < batch; i++) {
		kvs_req r;

		for (uint32_t j = 0; j < PROMPT; j++)
			tok[j] = i * PROMPT + j;
		if (kvs_add(s, tok, PROMPT, MML, 0, &r) != KV_OK) {
			fprintf(stderr, "bench_sched: add: %s\n",
				kvs_errmsg(s));
			exit(1);
		}
	}
	return s;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void
fail(kvs *s, const char *what)
{
	fprintf(stderr, "bench_sched: %s: %s\n", what, kvs_errmsg(s));
	exit(1);
}

int
main(void)
{
	static const uint32_t batches[] = { 8, 64, 256, 1024 };
	enum { steps = 2000 };
	static double ts[steps], ta[steps];
	/* KVSIM_BENCH_POLICY=name runs one policy only (profiling). */
	const char *only = getenv("KVSIM_BENCH_POLICY");

	printf("# scheduler, decode-only steps, ns per scheduled sequence\n");
	printf("%-18s %6s %10s %10s %8s\n", "policy", "batch", "schedule",
	       "step", "mallocs");
	for (int p = 0; p < (int)(sizeof(pols) / sizeof(*pols)); p++)
		for (int b = 0; b < 4; b++) {
			if (only != NULL && strcmp(only, pols[p].policy) != 0)
				continue;
			uint32_t batch = batches[b], i, warm;
			const struct kvs_step *st;
			unsigned long long a0;
			double t0, tsched;
			kvs *s = make(p, batch, (uint32_t)steps + 64);

			/* Admit everybody, then a few decodes to warm up. */
			for (warm = 0; warm < 64; warm++)
				if (kvs_step(s, &st) != KV_OK)
					fail(s, "warm-up");
			if (kvs_queue_len(s, KVS_Q_RUNNING) != batch ||
			    kvs_queue_len(s, KVS_Q_WAITING) != 0) {
				fprintf(stderr, "bench_sched: %s: %u of %u "
					"running after warm-up\n",
					pols[p].policy,
					kvs_queue_len(s, KVS_Q_RUNNING), batch);
				return 1;
			}
			a0 = nalloc;
			for (i = 0; i < steps; i++) {
				t0 = now_ns();
				if (kvs_schedule(s, &st) != KV_OK)
					fail(s, "schedule");
				tsched = now_ns();
				ts[i] = tsched - t0;
				if (st->nsched != batch || st->npreempt != 0) {
					fprintf(stderr, "bench_sched: %s: step "
						"%u scheduled %u, preempted "
						"%u\n", pols[p].policy, i,
						st->nsched, st->npreempt);
					return 1;
				}
				if (kvs_complete(s, NULL, &st) != KV_OK)
					fail(s, "complete");
				ta[i] = now_ns() - t0;
			}
			printf("%-18s %6u %10.1f %10.1f %8llu\n",
			       pols[p].policy, batch,
			       median(ts, steps) / batch,
			       median(ta, steps) / batch, nalloc - a0);
			kvs_free(s);
		}
	return 0;
}
