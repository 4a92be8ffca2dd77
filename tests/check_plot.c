/*
 * check_plot.c -- the C contract of reports/plot.h, without gnuplot:
 * plot_out_dir(), the gnuplot lookup on PATH, the statuses and messages
 * of plot_dir() (bad input writes nothing; no gnuplot is a note and the
 * scripts; a write that fails leaves no temporary file and the earlier
 * files), the CDF data worked out by hand, ties included, and what the
 * scripts and data say: the knee's SLOs, marks and tics, the
 * deployments' TP, the throughput bins and the KV axis, compare_delta's
 * scale and margins.
 * tests/plot.sh covers the command line and the rendered images.
 */
#include "reports/plot.h"

#include <check.h>
#include <dirent.h>
#include <stdbool.h>
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

/* Whether a script sets `set Ytics (...)` with at least n values. */
static bool
tics_at_least(const char *gp, const char *set, size_t n)
{
	const char *p = strstr(gp, set);
	size_t k = 1;

	if (!p)
		return false;
	for (p += strlen(set); *p && *p != ')'; p++)
		k += *p == ',';
	return k >= n;
}

/*
 * A TPOT SLO the knee did not show: p99 TTFT stays under its bound to
 * 9.4 req/s while p99 TPOT crosses its bound past 7.37, the answer.  Both
 * SLOs are drawn over their bounds (sloK_value_s over capacity.csv's
 * slo), the probe that missed and the one stopped early are in the data
 * (they were dropped), the answer is marked, the log axis has tics enough
 * to read (it had one label) and the key sits below the plot.
 */
START_TEST(test_knee_every_slo)
{
	char dir[512], why[1024];
	const char *dirs[1];
	struct plot_opts o = { .no_run = true };

	mk_tmp(dir, sizeof(dir), "knee");
	dirs[0] = dir;
	put(dir, "capacity.csv",
	    "config_id,gpu,tp,slo,max_qps_under_slo\n"
	    "0,h100-sxm,1,ttft_s:p99<=2;tpot_s:p99<=0.1,7.37\n");
	put(dir, "capacity_points.csv",
	    "config_id,seed,qps,meets_slo,stopped_early,ttft_p99_s,"
	    "tpot_p99_s,slo1_value_s,slo2_value_s\n"
	    "0,0,4,1,0,0.4,0.03,0.4,0.03\n"
	    "0,0,7.37,1,0,0.9,0.08,0.9,0.08\n"
	    "0,0,9.4,0,0,1.5,0.2,1.5,0.2\n"
	    "0,0,12,0,1,,,,\n");
	ck_assert_int_eq(plot_dir(dirs, 1, &o, why, sizeof(why)), PLOT_OK);
	const char *d = slurp(dir, "capacity_knee.dat");
	ck_assert_ptr_nonnull(d);
	ck_assert_msg(strstr(d, "2,0 / tpot_s p99 <= 0.1 s,9.4,2,2,2,1,"
			     "0.000000,0,0\n") != NULL, "%s", d);
	ck_assert_msg(strstr(d, "1,0 / ttft_s p99 <= 2 s,9.4,0.75,0.75,0.75,"
			     "1,0.000000,0,0\n") != NULL, "%s", d);
	ck_assert_msg(strstr(d, "2,0 / tpot_s p99 <= 0.1 s,12,NaN,NaN,NaN,1,"
			     "0.000000,1,1\n") != NULL, "%s", d);
	const char *gp = slurp(dir, "capacity_knee.gp");
	ck_assert_ptr_nonnull(strstr(gp, "set arrow from 7.37, graph 0 to "
				     "7.37, graph 1 nohead"));
	ck_assert_ptr_nonnull(strstr(gp, "1 with lines dt 2 lw 2 lc rgb "
				     "'#c00000' title 'SLO bound'"));
	ck_assert_ptr_nonnull(strstr(gp, "column('no_value') > 0"));
	ck_assert_ptr_nonnull(strstr(gp, "column('meets_slo_fraction') < 1"));
	ck_assert_ptr_nonnull(strstr(gp, "\nset key below\n"));
	ck_assert_msg(tics_at_least(gp, "set ytics (", 4), "%s", gp);
	rm_flat(dir);
}
END_TEST

/* Deployments are told apart by their TP (the per-GPU chart dropped it)
 * and replicas. */
START_TEST(test_capacity_gpu_tp)
{
	char dir[512], why[1024];
	const char *dirs[1];
	struct plot_opts o = { .no_run = true };

	mk_tmp(dir, sizeof(dir), "tp");
	dirs[0] = dir;
	put(dir, "capacity.csv", "config_id,gpu,tp,replicas,max_qps_under_slo\n"
	    "0,h100-sxm,4,1,12\n1,h200,2,2,15\n");
	ck_assert_int_eq(plot_dir(dirs, 1, &o, why, sizeof(why)), PLOT_OK);
	ck_assert_str_eq(slurp(dir, "capacity_gpu.dat"),
			 "label,max_qps_under_slo,max_qps_min,max_qps_max\n"
			 "h100-sxm TP4,12,12,12\nh200 TP2 x2,15,15,15\n");
	rm_flat(dir);
}
END_TEST

/*
 * An hour of 1-second rows: the throughput chart bins them (20 rows a
 * bin: 180 bins, the rule of at most 200), each the mean rate over its
 * time, where it drew 3,600 spikes; KV usage is on a 0-1 axis (0.08 filled
 * an autoscaled one).
 */
START_TEST(test_timeseries_bins)
{
	char dir[512], why[1024], p[600];
	const char *dirs[1];
	struct plot_opts o = { .no_run = true };

	mk_tmp(dir, sizeof(dir), "ts");
	dirs[0] = dir;
	snprintf(p, sizeof(p), "%s/timeseries.csv", dir);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs("t_s,kv_usage,running,waiting,swapped,prompt_tok_s,gen_tok_s\n",
	      f);
	for (int t = 1; t <= 3600; t++)
		fprintf(f, "%d,0.08,3,0,0,%d,500\n", t, t % 2 ? 0 : 1000);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(plot_dir(dirs, 1, &o, why, sizeof(why)), PLOT_OK);
	ck_assert_ptr_nonnull(strstr(slurp(dir, "kv_usage.gp"),
				     "\nset yrange [0:1]\n"));
	const char *gp = slurp(dir, "throughput.gp");
	ck_assert_ptr_nonnull(strstr(gp, "set ylabel 'tokens/s (mean over 20 "
				     "s bins of 20 rows)'"));
	ck_assert_ptr_nonnull(strstr(gp, "'throughput.dat' using "));
	const char *d = slurp(dir, "throughput.dat");
	size_t lines = 0;
	for (const char *q = d; *q; q++)
		lines += *q == '\n';
	ck_assert_uint_eq(lines, 1 + 180 + 1);
	ck_assert(strncmp(d, "t_s,prompt_tok_s,gen_tok_s\n0,500,500\n20,500,"
			  "500\n", 43) == 0);
	ck_assert_ptr_nonnull(strstr(d, "\n3580,500,500\n3600,500,500\n"));
	rm_flat(dir);
}
END_TEST

/*
 * compare_delta: a metric without a threshold (kv_usage_mean, +900 %) no
 * longer sets the scale: it is clipped at the thresholded metrics' edge,
 * grey, its value written on it; long labels stand upright with the room
 * below they need (they were cut off).
 */
START_TEST(test_compare_delta_scale)
{
	char dir[512], why[1024];
	const char *dirs[1];
	struct plot_opts o = { .no_run = true };

	mk_tmp(dir, sizeof(dir), "cmp");
	dirs[0] = dir;
	put(dir, "compare.csv",
	    "config,metric,delta_pct,threshold,verdict\n"
	    "azure_llm_2023_conv_excerpt,ttft_p99_s,7,+5%,regression\n"
	    "azure_llm_2023_conv_excerpt,kv_usage_mean,900,none,ok\n"
	    "mooncake_conversation_trace,ttft_p99_s,-3,+5%,ok\n");
	ck_assert_int_eq(plot_dir(dirs, 1, &o, why, sizeof(why)), PLOT_OK);
	ck_assert_str_eq(slurp(dir, "compare_delta.dat"),
	    "label,delta_pct,verdict,rgb,shown_pct,note_y,note\n"
	    "azure_llm_2023_conv_excerpt:ttft_p99_s,7,regression,12582912,7,"
	    "NaN,+7%\n"
	    "azure_llm_2023_conv_excerpt:kv_usage_mean,900,ok,10132122,7,3.5,"
	    "+900%\n"
	    "mooncake_conversation_trace:ttft_p99_s,-3,ok,4880560,-3,NaN,"
	    "-3%\n");
	const char *gp = slurp(dir, "compare_delta.gp");
	ck_assert_ptr_nonnull(strstr(gp, "\nset yrange [-4:8]\n"));
	ck_assert_ptr_nonnull(strstr(gp, "\nset xtics rotate by 90 right "
				     "font ',9'\nset bmargin 19\n"));
	ck_assert_ptr_nonnull(strstr(gp, "with labels"));
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
	tcase_add_test(tc, test_knee_every_slo);
	tcase_add_test(tc, test_capacity_gpu_tp);
	tcase_add_test(tc, test_timeseries_bins);
	tcase_add_test(tc, test_compare_delta_scale);
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
