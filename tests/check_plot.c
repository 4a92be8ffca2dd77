/*
 * check_plot.c -- the C contract of reports/plot.h, without gnuplot:
 * plot_out_dir(), the gnuplot lookup on PATH, the statuses and messages
 * of plot_dir() (bad input writes nothing; no gnuplot is a note and the
 * scripts; a write that fails leaves no temporary file and the earlier
 * files), and the CDF data worked out by hand, ties included.
 * tests/plot.sh covers the command line and the rendered images.
 */
#include "reports/plot.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* A fresh folder under TMPDIR; removed by rm_flat(). */
static void
mk_tmp(char *buf, size_t len, const char *what)
{
	const char *t = getenv("TMPDIR");
	snprintf(buf, len, "%s/kvsim-check-plot-%s.XXXXXX", t ? t : "/tmp",
		 what);
	ck_assert_ptr_nonnull(mkdtemp(buf));
}

/* Remove a folder and the files in it (no subfolders here). */
static void
rm_flat(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[4096];

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

static void
put(const char *dir, const char *name, const char *text)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

static char *
slurp(const char *dir, const char *name)
{
	static char buf[8192];
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "r");
	if (!f)
		return NULL;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static bool
exists(const char *dir, const char *name)
{
	char p[4096];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) == 0;
}

START_TEST(test_out_dir)
{
	const char *one[] = { "res" }, *two[] = { "a", "b" };
	struct plot_opts o = { .out = "elsewhere" };
	char buf[64];

	ck_assert_int_eq(plot_out_dir(one, 1, NULL, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "res");
	ck_assert_int_eq(plot_out_dir(two, 2, NULL, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "a/plots");
	ck_assert_int_eq(plot_out_dir(two, 2, &o, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "elsewhere");
	ck_assert_int_eq(plot_out_dir(two, 2, NULL, buf, 7), -1);
}
END_TEST

START_TEST(test_gnuplot_on_path)
{
	char bin[512], p[600];

	mk_tmp(bin, sizeof(bin), "bin");
	ck_assert_int_eq(setenv("PATH", bin, 1), 0);
	ck_assert(!plot_have_gnuplot());
	put(bin, "gnuplot", "#!/bin/sh\nexit 0\n");
	ck_assert(!plot_have_gnuplot());	/* not executable */
	snprintf(p, sizeof(p), "%s/gnuplot", bin);
	ck_assert_int_eq(chmod(p, 0755), 0);
	ck_assert(plot_have_gnuplot());
	snprintf(p, sizeof(p), "/nonexistent-kvsim:%s", bin);
	ck_assert_int_eq(setenv("PATH", p, 1), 0);
	ck_assert(plot_have_gnuplot());
	unsetenv("PATH");
	ck_assert(!plot_have_gnuplot());
	rm_flat(bin);
}
END_TEST

START_TEST(test_missing_dir)
{
	const char *dirs[] = { "/nonexistent-kvsim/results" };
	char why[256];

	ck_assert_int_eq(plot_dir(dirs, 1, NULL, why, sizeof(why)),
			 PLOT_EINPUT);
	ck_assert_str_eq(why, "/nonexistent-kvsim/results: No such file or "
			 "directory");
	/* no room for a message is fine */
	ck_assert_int_eq(plot_dir(dirs, 1, NULL, NULL, 0), PLOT_EINPUT);
	ck_assert_int_eq(plot_dir(dirs, 0, NULL, why, sizeof(why)),
			 PLOT_EINPUT);
}
END_TEST

/* Four requests; TTFT 0.3, 0.1, 0.2, 0.2; TPOT empty (one token each). */
static const char reqs[] =
	"request_id,ttft_s,tpot_s,e2e_s,queue_s\n"
	"0,0.3,,1.0,0\n"
	"1,0.1,,1.0,0\n"
	"2,0.2,,1.0,0\n"
	"3,0.2,,1.0,0\n";

START_TEST(test_no_gnuplot)
{
	char dir[512], bin[512], why[1024];
	const char *dirs[1];

	mk_tmp(dir, sizeof(dir), "res");
	mk_tmp(bin, sizeof(bin), "bin");
	dirs[0] = dir;
	put(dir, "requests.csv", reqs);
	ck_assert_int_eq(setenv("PATH", bin, 1), 0);
	ck_assert_int_eq(plot_dir(dirs, 1, NULL, why, sizeof(why)),
			 PLOT_NO_GNUPLOT);
	ck_assert_msg(strncmp(why, "gnuplot not found on PATH", 25) == 0,
		      "why: %s", why);
	/* the CDF: (min, 0), then the top of each run of equal values */
	ck_assert_str_eq(slurp(dir, "ttft_cdf.dat"),
			 "ttft_s,fraction\n"
			 "0.100000000,0.000000\n"
			 "0.100000000,0.250000\n"
			 "0.200000000,0.750000\n"
			 "0.300000000,1.000000\n");
	ck_assert(exists(dir, "ttft_cdf.gp"));
	ck_assert(exists(dir, "queue_cdf.gp"));
	ck_assert(!exists(dir, "tpot_cdf.gp"));	/* no TPOT at all */
	ck_assert(!exists(dir, "kv_usage.gp"));	/* no timeseries.csv */
	ck_assert_ptr_nonnull(strstr(slurp(dir, "index.html"),
				     "<a href=\"ttft_cdf.gp\">"));
	ck_assert_ptr_null(strstr(slurp(dir, "index.html"), "<img"));

	/* --no-run: PLOT_OK, and the same files */
	struct plot_opts o = { .no_run = true };
	ck_assert_int_eq(plot_dir(dirs, 1, &o, why, sizeof(why)), PLOT_OK);
	ck_assert_str_eq(why, "");
	rm_flat(dir);
	rm_flat(bin);
}
END_TEST

START_TEST(test_bad_csv_writes_nothing)
{
	char dir[512], why[1024], want[1100];
	const char *dirs[1];
	struct plot_opts o = { .no_run = true };

	mk_tmp(dir, sizeof(dir), "bad");
	dirs[0] = dir;
	put(dir, "requests.csv", "ttft_s,tpot_s,e2e_s,queue_s\n"
	    "0.1,,1,0\n0.2,1\n");
	ck_assert_int_eq(plot_dir(dirs, 1, &o, why, sizeof(why)),
			 PLOT_EINPUT);
	snprintf(want, sizeof(want), "%s/requests.csv:3: 2 fields, the "
		 "header has 4", dir);
	ck_assert_str_eq(why, want);
	ck_assert(!exists(dir, "index.html"));
	ck_assert(!exists(dir, "ttft_cdf.gp"));

	put(dir, "requests.csv", "ttft_s,tpot_s,e2e_s\n0.1,,1\n");
	ck_assert_int_eq(plot_dir(dirs, 1, &o, why, sizeof(why)),
			 PLOT_EINPUT);
	snprintf(want, sizeof(want), "%s/requests.csv:1: no column "
		 "'queue_s'", dir);
	ck_assert_str_eq(why, want);

	/* a column named twice: which one the plots would read is a
	 * guess */
	put(dir, "requests.csv", "ttft_s,tpot_s,e2e_s,queue_s,ttft_s\n"
	    "0.1,,1,0,9\n");
	ck_assert_int_eq(plot_dir(dirs, 1, &o, why, sizeof(why)),
			 PLOT_EINPUT);
	snprintf(want, sizeof(want), "%s/requests.csv:1:29: column 'ttft_s' "
		 "appears twice (first at column 1)", dir);
	ck_assert_str_eq(why, want);
	ck_assert(!exists(dir, "index.html"));

	put(dir, "requests.csv", "");
	ck_assert_int_eq(plot_dir(dirs, 1, &o, why, sizeof(why)),
			 PLOT_EINPUT);
	snprintf(want, sizeof(want), "%s/requests.csv:1: empty file (no "
		 "header row)", dir);
	ck_assert_str_eq(why, want);
	ck_assert(!exists(dir, "index.html"));
	rm_flat(dir);
}
END_TEST

/*
 * A write that fails (a file size limit standing in for a full disk) is
 * PLOT_EFAIL naming the file: no temporary file left, the files of an
 * earlier call kept as they were.
 */
START_TEST(test_write_fails)
{
	char dir[512], why[1024], before[8192];
	const char *dirs[1];
	struct plot_opts o = { .no_run = true };
	struct rlimit rl = { 64, 64 };
	DIR *d;
	struct dirent *e;

	mk_tmp(dir, sizeof(dir), "full");
	dirs[0] = dir;
	put(dir, "requests.csv", reqs);
	ck_assert_int_eq(plot_dir(dirs, 1, &o, why, sizeof(why)), PLOT_OK);
	snprintf(before, sizeof(before), "%s", slurp(dir, "ttft_cdf.gp"));
	ck_assert(signal(SIGXFSZ, SIG_IGN) != SIG_ERR);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	ck_assert_int_eq(plot_dir(dirs, 1, &o, why, sizeof(why)), PLOT_EFAIL);
	ck_assert_msg(strstr(why, "File too large") != NULL, "why: %s", why);
	ck_assert_str_eq(slurp(dir, "ttft_cdf.gp"), before);
	ck_assert_ptr_nonnull(d = opendir(dir));
	while ((e = readdir(d)) != NULL)
		ck_assert_msg(strstr(e->d_name, ".tmp.") == NULL, "%s left",
			      e->d_name);
	closedir(d);
	rm_flat(dir);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("plot");
	TCase *tc = tcase_create("all");

	tcase_add_test(tc, test_out_dir);
	tcase_add_test(tc, test_gnuplot_on_path);
	tcase_add_test(tc, test_missing_dir);
	tcase_add_test(tc, test_no_gnuplot);
	tcase_add_test(tc, test_bad_csv_writes_nothing);
	tcase_add_test(tc, test_write_fails);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
