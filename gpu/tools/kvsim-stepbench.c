/*
 * kvsim-stepbench -- time the parts of a model's step at its real shapes
 * (docs/gpu.md §5.2, docs/cost-model.md §5.3): each GEMM of a layer at token
 * counts 1..8192, a paged KV read over block tables with batch and context
 * swept, and an all-reduce-sized device-to-device copy.
 *
 *   kvsim-stepbench --shapes SHAPES.csv [--out DIR] [--host] [--quick]
 *                   [--reps N] [--deadline SECONDS]
 *   kvsim-stepbench --probe     exit 0 if a CUDA device answers, else 77
 *
 * SHAPES.csv is what `kvsim calibrate kernels --emit-shapes` writes
 * (model,tp,op,name,n,k,count,elem_bytes), so this program needs no
 * catalog and no YAML: it links core/ and gpu/ only, like kvsim-gpucheck.
 * DIR gets gemm.csv, kvread.csv and copy.csv, one row per repetition:
 *
 *   kind,model,tp,name,m,n,k,bytes,flops,rep,time_ns,measured
 *
 * (gemm: m tokens, n x k weight; kvread: m sequences of n tokens, k bytes
 * a token; copy: m tokens of n values, k = 1), each written to NAME.part,
 * flushed row by row and renamed when its section ends.  --host times the
 * same operations on the CPU (float GEMM loops, a KV read through the same
 * block tables, memcpy) and marks every row measured=no: the dry run that
 * exercises the whole path without a device; --quick shrinks the sweeps
 * and the shapes (n and k at most 256) to seconds.
 *
 * Exit status: 0 every section ran; 1 a section failed (its message on
 * stderr; the others still run); 2 bad usage or input; 77 no device.
 */
#include "config.h"

#include "gpu/tools/stepbench.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define SB_MAX_SHAPES 256
#define SB_KV_BLOCK 16			/* vLLM's default block size */
#define SB_KV_MAX_BYTES (4.0 * 1024 * 1024 * 1024)

struct sb_shape {
	char model[128], op[16], name[24];
	long tp, n, k, count, elem;
};

struct sb {
	const char *shapes_path, *out;
	bool host, quick;
	int reps;
	double deadline_s;
	int64_t t0;
	struct sb_shape sh[SB_MAX_SHAPES];
	size_t nsh;
	struct sb_dev *dev;
	int failures;
};

static int64_t
sb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool
sb_late(const struct sb *b)
{
	return b->deadline_s > 0 &&
	       (double)(sb_now_ns() - b->t0) / 1e9 > b->deadline_s;
}

/* ---- the shapes CSV ------------------------------------------------------ */

/* Split line (modified in place) at commas into f[0..8); the count. */
static int
sb_split(char *line, char *f[8])
{
	int n = 0;

	line[strcspn(line, "\r\n")] = '\0';
	for (char *p = line; n < 8; n++) {
		f[n] = p;
		p = strchr(p, ',');
		if (p == NULL)
			return n + 1;
		*p++ = '\0';
	}
	return 9;
}

static bool
sb_long(const char *s, long lo, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(s, &end, 10);
	return errno == 0 && end != s && *end == '\0' && *v >= lo;
}

/* Read b->shapes_path: 0, or 2 with a FILE:LINE message printed. */
static int
sb_read_shapes(struct sb *b)
{
	FILE *f = fopen(b->shapes_path, "r");
	char line[1024], *fl[8];
	unsigned long ln = 0;

	if (f == NULL) {
		fprintf(stderr, "kvsim-stepbench: %s: %s\n", b->shapes_path,
			strerror(errno));
		return 2;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		struct sb_shape *s = &b->sh[b->nsh];

		if (++ln == 1)
			continue;	/* the header */
		if (b->nsh == SB_MAX_SHAPES || sb_split(line, fl) != 8 ||
		    strlen(fl[0]) >= sizeof(s->model) ||
		    strlen(fl[2]) >= sizeof(s->op) ||
		    strlen(fl[3]) >= sizeof(s->name) ||
		    !sb_long(fl[1], 1, &s->tp) || !sb_long(fl[4], 1, &s->n) ||
		    !sb_long(fl[5], 1, &s->k) ||
		    !sb_long(fl[6], 1, &s->count) ||
		    !sb_long(fl[7], 1, &s->elem) ||
		    (strcmp(fl[2], "gemm") != 0 &&
		     strcmp(fl[2], "kvread") != 0 &&
		     strcmp(fl[2], "copy") != 0)) {
			fprintf(stderr, "kvsim-stepbench: %s:%lu: expected "
				"model,tp,op,name,n,k,count,elem_bytes (op "
				"gemm, kvread or copy; whole numbers >= 1; at "
				"most %d shapes)\n", b->shapes_path, ln,
				SB_MAX_SHAPES);
			fclose(f);
			return 2;
		}
		snprintf(s->model, sizeof(s->model), "%s", fl[0]);
		snprintf(s->op, sizeof(s->op), "%s", fl[2]);
		snprintf(s->name, sizeof(s->name), "%s", fl[3]);
		b->nsh++;
	}
	fclose(f);
	if (b->nsh == 0) {
		fprintf(stderr, "kvsim-stepbench: %s: no shapes\n",
			b->shapes_path);
		return 2;
	}
	return 0;
}

/* ---- host timings (the dry run) ------------------------------------------ */

/* Y = X W^T in float; the mean ns of iters runs. */
static int
sb_host_gemm(long m, long n, long k, int iters, double *ns)
{
	float *x = malloc(sizeof(float) * (size_t)(m * k + n * k + m * n));
	float *w, *y;
	int64_t t0;

	if (x == NULL)
		return -1;
	w = x + m * k;
	y = w + n * k;
	for (long i = 0; i < m * k + n * k; i++)
		x[i] = (float)(i % 7) / 8.0f;
	t0 = sb_now_ns();
	for (int it = 0; it < iters; it++)
		for (long i = 0; i < m; i++)
			for (long j = 0; j < n; j++) {
				float a = 0;

				for (long q = 0; q < k; q++)
					a += x[i * k + q] * w[j * k + q];
				y[i * n + j] = a;
			}
	*ns = (double)(sb_now_ns() - t0) / iters;
	free(x);
	return 0;
}

/* Sum every K/V value of batch sequences through a shuffled block table
 * (uint16 values standing for bf16). */
static int
sb_host_kvread(long batch, long ctx, long kvh, long hd, int iters,
	       double *ns)
{
	long nb = (ctx + SB_KV_BLOCK - 1) / SB_KV_BLOCK, page;
	long *tab = malloc(sizeof(long) * (size_t)(batch * nb));
	uint16_t *pool;
	uint64_t r = 0x9e3779b97f4a7c15ull, sum = 0;
	int64_t t0;

	page = 2 * SB_KV_BLOCK * kvh * hd;
	pool = malloc(sizeof(uint16_t) * (size_t)(page * batch * nb));
	if (tab == NULL || pool == NULL) {
		free(tab);
		free(pool);
		return -1;
	}
	for (long i = 0; i < page * batch * nb; i++)
		pool[i] = (uint16_t)i;
	for (long i = 0; i < batch * nb; i++)
		tab[i] = i;
	for (long i = batch * nb - 1; i > 0; i--) {
		long j, t;

		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		j = (long)(r % (uint64_t)(i + 1));
		t = tab[i], tab[i] = tab[j], tab[j] = t;
	}
	t0 = sb_now_ns();
	for (int it = 0; it < iters; it++)
		for (long s = 0; s < batch; s++)
			for (long t = 0; t < ctx; t++) {
				const uint16_t *p = pool +
					tab[s * nb + t / SB_KV_BLOCK] * page +
					(t % SB_KV_BLOCK) * kvh * hd;

				for (long e = 0; e < kvh * hd; e++)
					sum += p[e] + p[SB_KV_BLOCK * kvh * hd
							+ e];
			}
	*ns = (double)(sb_now_ns() - t0) / iters;
	free(tab);
	free(pool);
	return sum == 1 ? -1 : 0;	/* keeps the loop */
}

static int
sb_host_copy(size_t bytes, int iters, double *ns)
{
	char *a = malloc(bytes), *c = malloc(bytes);
	int64_t t0;

	if (a == NULL || c == NULL) {
		free(a);
		free(c);
		return -1;
	}
	memset(a, 1, bytes);
	t0 = sb_now_ns();
	for (int it = 0; it < iters; it++) {
		a[it % bytes] = (char)it;
		memcpy(c, a, bytes);
	}
	*ns = (double)(sb_now_ns() - t0) / iters;
	free(a);
	free(c);
	return 0;
}

/* ---- sections ------------------------------------------------------------ */

struct sb_out {
	FILE *f;
	char part[1100], path[1024];
};

static int
sb_open(const struct sb *b, const char *name, struct sb_out *o)
{
	snprintf(o->path, sizeof(o->path), "%s/%s", b->out, name);
	snprintf(o->part, sizeof(o->part), "%s.part", o->path);
	o->f = fopen(o->part, "w");
	if (o->f == NULL) {
		fprintf(stderr, "kvsim-stepbench: %s: %s\n", o->part,
			strerror(errno));
		return -1;
	}
	fprintf(o->f, "kind,model,tp,name,m,n,k,bytes,flops,rep,time_ns,"
		"measured\n");
	return 0;
}

static int
sb_close(struct sb_out *o)
{
	if (fclose(o->f) != 0 || rename(o->part, o->path) != 0) {
		fprintf(stderr, "kvsim-stepbench: %s: %s\n", o->path,
			strerror(errno));
		return -1;
	}
	return 0;
}

/* One point: the operation op of shape s at (m, n, k) the bench runs, with
 * its bytes and flops; reps rows. */
struct sb_pt {
	const struct sb_shape *s;
	long m, n, k, kvh, hd;
	double bytes, flops;
};

static int
sb_time(struct sb *b, const struct sb_pt *p, double *ns, char *err,
	size_t errlen)
{
	int it = b->host ? (b->quick ? 3 : 2) : 10;
	const char *op = p->s->op;

	if (b->host) {
		int rc = op[0] == 'g' ? sb_host_gemm(p->m, p->n, p->k, it, ns) :
			 op[0] == 'k' ? sb_host_kvread(p->m, p->n, p->kvh,
						       p->hd, it, ns) :
			 sb_host_copy((size_t)p->bytes, it, ns);

		if (rc != 0)
			snprintf(err, errlen, "out of memory");
		return rc;
	}
	if (op[0] == 'g')
		return sb_dev_gemm(b->dev, p->m, p->n, p->k, it, ns, err,
				   errlen);
	if (op[0] == 'k')
		return sb_dev_kvread(b->dev, p->m, p->n, SB_KV_BLOCK, p->kvh,
				     p->hd, it, ns, err, errlen);
	return sb_dev_copy(b->dev, (size_t)p->bytes, it, ns, err, errlen);
}

static int
sb_point(struct sb *b, struct sb_out *o, const struct sb_pt *p)
{
	char err[256];

	for (int r = 0; r < b->reps; r++) {
		double ns = 0;

		if (sb_time(b, p, &ns, err, sizeof(err)) != 0) {
			fprintf(stderr, "kvsim-stepbench: %s %s %s m=%ld: "
				"%s\n", p->s->op, p->s->model, p->s->name,
				p->m, err);
			return -1;
		}
		fprintf(o->f, "%s,%s,%ld,%s,%ld,%ld,%ld,%.0f,%.0f,%d,%.1f,%s\n",
			p->s->op, p->s->model, p->s->tp, p->s->name, p->m,
			p->n, p->k, p->bytes, p->flops, r, ns > 0 ? ns : 0.1,
			b->host ? "no" : "yes");
		fflush(o->f);
	}
	return 0;
}

/* The points of shape s into pts (at most 32); the count. */
static size_t
sb_points(const struct sb *b, const struct sb_shape *s, struct sb_pt *pts)
{
	static const long batches[] = { 1, 8, 32, 128, 256 };
	static const long ctxs[] = { 256, 1024, 4096, 16384 };
	static const long toks[] = { 1, 16, 256, 4096, 8192 };
	long n = b->quick && s->n > 256 ? 256 : s->n;
	long k = b->quick && s->k > 256 ? 256 : s->k;
	size_t np = 0;

	if (s->op[0] == 'g') {
		for (long m = 1; m <= (b->quick ? 16 : 8192);
		     m *= b->quick ? 4 : 2)
			pts[np++] = (struct sb_pt){ s, m, n, k, 0, 0,
				(double)((m * k + n * k + m * n) * s->elem),
				2.0 * m * n * k };
	} else if (s->op[0] == 'k') {
		for (size_t i = 0; i < (b->quick ? 2 : 5); i++)
			for (size_t j = 0; j < (b->quick ? 2 : 4); j++) {
				long bt = b->quick ? (long)(1 + 3 * i) :
					  batches[i];
				long c = b->quick ? 64L << (2 * j) : ctxs[j];
				long tb = 2 * s->n * s->k * s->elem;

				if ((double)bt * c * tb > SB_KV_MAX_BYTES)
					continue;
				pts[np++] = (struct sb_pt){ s, bt, c, tb,
					s->n, s->k, (double)bt * c * tb, 0 };
			}
	} else {
		for (size_t i = 0; i < (b->quick ? 3 : 5); i++)
			pts[np++] = (struct sb_pt){ s, toks[i], s->n, 1, 0, 0,
				(double)(toks[i] * s->n * s->elem), 0 };
	}
	return np;
}

/* Section op (gemm, kvread, copy) into op.csv. */
static void
sb_section(struct sb *b, const char *op)
{
	struct sb_pt pts[32];
	struct sb_out o;
	char name[32];
	size_t rows = 0;

	snprintf(name, sizeof(name), "%s.csv", op);
	if (sb_open(b, name, &o) != 0) {
		b->failures++;
		return;
	}
	for (size_t i = 0; i < b->nsh; i++) {
		size_t np;

		if (strcmp(b->sh[i].op, op) != 0)
			continue;
		np = sb_points(b, &b->sh[i], pts);
		for (size_t j = 0; j < np && !sb_late(b); j++) {
			if (sb_point(b, &o, &pts[j]) != 0) {
				b->failures++;
				break;
			}
			rows += (size_t)b->reps;
		}
	}
	if (sb_close(&o) != 0)
		b->failures++;
	printf("%-7s %6zu rows%s\n", op, rows, sb_late(b) ?
	       " (deadline reached)" : "");
}

static void
sb_usage(FILE *f)
{
	fprintf(f, "usage: kvsim-stepbench --shapes SHAPES.csv [--out DIR] "
		"[--host] [--quick]\n                       [--reps N] "
		"[--deadline SECONDS]\n       kvsim-stepbench --probe\n");
}

/* The options into b: 0, -1 (--probe done: exit status in *rc), or 2. */
static int
sb_args(struct sb *b, int argc, char **argv, int *rc)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;

		if (strcmp(a, "--probe") == 0) {
			*rc = sb_dev_probe() == 0 ? 0 : 77;
			return -1;
		} else if (strcmp(a, "--host") == 0) {
			b->host = true;
		} else if (strcmp(a, "--quick") == 0) {
			b->quick = true;
		} else if (v != NULL && strcmp(a, "--shapes") == 0) {
			b->shapes_path = argv[++i];
		} else if (v != NULL && strcmp(a, "--out") == 0) {
			b->out = argv[++i];
		} else if (v != NULL && strcmp(a, "--reps") == 0) {
			b->reps = (int)strtol(argv[++i], &end, 10);
			if (*end != '\0' || b->reps < 1 || b->reps > 1000)
				goto bad;
		} else if (v != NULL && strcmp(a, "--deadline") == 0) {
			b->deadline_s = strtod(argv[++i], &end);
			if (*end != '\0' || !(b->deadline_s > 0))
				goto bad;
		} else {
			goto bad;
		}
	}
	if (b->shapes_path != NULL)
		return 0;
bad:
	sb_usage(stderr);
	return 2;
}

int
main(int argc, char **argv)
{
	struct sb b = { .out = "." };
	char name[256] = "host CPU", err[256];
	int rc = 0, probe = 0;

	b.t0 = sb_now_ns();
	if ((rc = sb_args(&b, argc, argv, &probe)) != 0)
		return rc < 0 ? probe : rc;
	if (b.reps == 0)
		b.reps = b.quick ? 2 : 5;
	if ((rc = sb_read_shapes(&b)) != 0)
		return rc;
	if (mkdir(b.out, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "kvsim-stepbench: %s: %s\n", b.out,
			strerror(errno));
		return 2;
	}
	if (!b.host && sb_dev_open(&b.dev, name, sizeof(name), err,
				   sizeof(err)) != 0) {
		fprintf(stderr, "kvsim-stepbench: %s\n", err);
		return 77;
	}
	printf("kvsim-stepbench: %zu shapes on %s%s\n", b.nsh, name,
	       b.host ? " (dry run, measured=no)" : "");
	sb_section(&b, "gemm");
	sb_section(&b, "kvread");
	sb_section(&b, "copy");
	sb_dev_close(b.dev);
	return b.failures > 0 ? 1 : 0;
}
