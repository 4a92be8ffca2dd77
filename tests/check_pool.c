/*
 * check_pool.c -- util/pool.h: N jobs over K workers, every job's status
 * and result in its own slot whatever the order of completion, failures
 * reported with their exit status (or 128 + the signal), and a failed
 * job stopping the launching when asked.
 *
 * The run jobs sleep longer the lower their index, so that with K > 1
 * they finish in about the reverse of their start order.
 */
#include "util/pool.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N 12

struct span {
	uint64_t index;
	int64_t t0, t1;		/* CLOCK_MONOTONIC ns */
};

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* pool_run_fn: sleep (N - index) * 4 ms, report the span; the indices
 * in ctx's fail list exit 3. */
static int
job_sleep(void *ctx, size_t index, int fd)
{
	const int *fail = ctx;
	struct span s = { index, now_ns(), 0 };
	struct timespec d = { 0, (long)(N - index) * 4000000L };

	nanosleep(&d, NULL);
	s.t1 = now_ns();
	if (write(fd, &s, sizeof(s)) != (ssize_t)sizeof(s))
		return 1;
	return fail != NULL && fail[index] ? 3 : 0;
}

/* The most spans open at one time. */
static unsigned
max_overlap(const struct pool_job *job, size_t n)
{
	unsigned most = 0;

	for (size_t i = 0; i < n; i++) {
		const struct span *a = (const void *)job[i].result;
		unsigned open = 0;

		for (size_t j = 0; j < n; j++) {
			const struct span *b = (const void *)job[j].result;

			open += b->t0 <= a->t0 && a->t0 < b->t1;
		}
		most = open > most ? open : most;
	}
	return most;
}

static void
run_k(unsigned k)
{
	struct pool_job job[N];
	struct pool_opts o = { .par = k, .run = job_sleep };
	char err[256];

	memset(job, 0, sizeof(job));
	ck_assert_int_eq(pool_exec(job, N, &o, err, sizeof(err)), POOL_DONE);
	for (size_t i = 0; i < N; i++) {
		const struct span *s = (const void *)job[i].result;

		ck_assert_int_eq(job[i].status, 0);
		ck_assert_uint_eq(job[i].resultlen, sizeof(*s));
		ck_assert_uint_eq(s->index, i);
		ck_assert(job[i].wall_s > 0);
	}
	ck_assert_uint_le(max_overlap(job, N), k);
	if (k > 1)
		ck_assert_uint_ge(max_overlap(job, N), 2);
	pool_jobs_release(job, N);
}

START_TEST(test_k_workers)
{
	static const unsigned ks[] = { 1, 3, N, 64 };

	run_k(ks[_i]);
}
END_TEST

/* Failed run jobs keep their status and result; the others are ok. */
START_TEST(test_run_failures)
{
	struct pool_job job[N];
	int fail[N] = { 0 };
	struct pool_opts o = { .par = 4, .run = job_sleep, .ctx = fail };
	char err[256];

	fail[0] = fail[5] = fail[11] = 1;
	memset(job, 0, sizeof(job));
	ck_assert_int_eq(pool_exec(job, N, &o, err, sizeof(err)), POOL_DONE);
	for (size_t i = 0; i < N; i++) {
		ck_assert_int_eq(job[i].status, fail[i] ? 3 : 0);
		ck_assert_uint_eq(((const struct span *)(const void *)
				   job[i].result)->index, i);
	}
	pool_jobs_release(job, N);
}
END_TEST

/* A mkdtemp() template under TMPDIR (else /tmp). */
static void
tmp_name(char *buf, size_t len)
{
	const char *t = getenv("TMPDIR");

	snprintf(buf, len, "%s/check_pool.XXXXXX", t && *t ? t : "/tmp");
}

/* Programs: exit statuses, a signal, stderr.txt kept only on failure. */
START_TEST(test_exec)
{
	char dir[448], path[512], dir0[448];
	char *ok[] = { "/bin/sh", "-c", "echo fine >&2", NULL };
	char *five[] = { "/bin/sh", "-c", "echo five >&2; exit 5", NULL };
	char *kill9[] = { "/bin/sh", "-c", "kill -9 $$", NULL };
	char *none[] = { "/nonexistent/program", NULL };
	struct pool_job job[4];
	struct pool_opts o = { .par = 2 };
	char err[256], line[64];
	FILE *f;

	tmp_name(dir, sizeof(dir));
	tmp_name(dir0, sizeof(dir0));
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_ptr_nonnull(mkdtemp(dir0));
	memset(job, 0, sizeof(job));
	job[0].argv = ok;
	job[0].dir = dir0;
	job[1].argv = five;
	job[1].dir = dir;
	job[2].argv = kill9;
	job[3].argv = none;
	job[3].dir = dir;
	ck_assert_int_eq(pool_exec(job, 2, &o, err, sizeof(err)), POOL_DONE);
	ck_assert_int_eq(job[0].status, 0);
	ck_assert_int_eq(job[1].status, 5);
	snprintf(path, sizeof(path), "%s/stderr.txt", dir);
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	ck_assert_str_eq(line, "five\n");
	fclose(f);
	unlink(path);
	ck_assert_int_eq(pool_exec(job + 2, 2, &o, err, sizeof(err)),
			 POOL_DONE);
	ck_assert_int_eq(job[2].status, 128 + 9);
	ck_assert_int_eq(job[3].status, 127);
	ck_assert_int_eq(unlink(path), 0);	/* "cannot run ..." */
	ck_assert_int_eq(rmdir(dir), 0);
	ck_assert_int_eq(rmdir(dir0), 0);	/* empty: stderr.txt gone */
}
END_TEST

/* stop_on_fail: one at a time, job 2 fails, jobs 3.. never run. */
START_TEST(test_stop_on_fail)
{
	struct pool_job job[6];
	int fail[N] = { 0 };
	struct pool_opts o = { .par = 1, .run = job_sleep, .ctx = fail,
			       .stop_on_fail = true };
	char err[256];

	fail[2] = 1;
	memset(job, 0, sizeof(job));
	ck_assert_int_eq(pool_exec(job, 6, &o, err, sizeof(err)), POOL_DONE);
	ck_assert_int_eq(job[0].status, 0);
	ck_assert_int_eq(job[1].status, 0);
	ck_assert_int_eq(job[2].status, 3);
	for (size_t i = 3; i < 6; i++) {
		ck_assert_int_eq(job[i].status, -1);
		ck_assert_uint_eq(job[i].resultlen, 0);
	}
	pool_jobs_release(job, 6);
}
END_TEST

/* Progress lines: one a job, numbered in completion order. */
START_TEST(test_log)
{
	char *ok[] = { "/bin/true", NULL };
	char *bad[] = { "/bin/false", NULL };
	char dir[448];
	struct pool_job job[2];
	struct pool_opts o = { .par = 1, .who = "t" };
	char err[256], buf[1024];
	size_t n;

	tmp_name(dir, sizeof(dir));
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_ptr_nonnull(o.log = tmpfile());
	memset(job, 0, sizeof(job));
	job[0] = (struct pool_job){ .argv = ok, .dir = dir, .id = "a" };
	job[1] = (struct pool_job){ .argv = bad, .dir = dir, .id = "b" };
	ck_assert_int_eq(pool_exec(job, 2, &o, err, sizeof(err)), POOL_DONE);
	rewind(o.log);
	n = fread(buf, 1, sizeof(buf) - 1, o.log);
	buf[n] = '\0';
	fclose(o.log);
	ck_assert_ptr_nonnull(strstr(buf, "t: [1/2] a ok ("));
	ck_assert_ptr_nonnull(strstr(buf, "t: [2/2] b FAILED (exit 1): "
				     "(no message)\nt:   its standard error: "));
	snprintf(buf, sizeof(buf), "%s/stderr.txt", dir);
	ck_assert_int_eq(unlink(buf), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

static Suite *
pool_suite(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("pool");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_k_workers, 0, 4);
	tcase_add_test(tc, test_run_failures);
	tcase_add_test(tc, test_exec);
	tcase_add_test(tc, test_stop_on_fail);
	tcase_add_test(tc, test_log);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(pool_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
