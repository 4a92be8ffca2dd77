# Plots (issue 6 item 5): reports/plot.c writes gnuplot scripts, their data,
# PNG/SVG images and index.html from result folders; sim/cmd_plot.c is
# `kvsim plot`.  Both are linked into kvsim (plot.c uses only libc and
# POSIX, and runs gnuplot when it is on PATH).  tests/plot.sh renders when
# gnuplot is installed (Debian: gnuplot-nox) and skips that part otherwise;
# tests/plot holds its inputs.
sim_kvsim_SOURCES += %reldir%/plot.c %reldir%/plot.h sim/cmd_plot.c
TESTS += tests/plot.sh
EXTRA_DIST += tests/plot.sh tests/plot

# check_plot: plot.h's contract without gnuplot (statuses, messages, the
# PATH lookup, CDF data by hand).
check_PROGRAMS += tests/check_plot
tests_check_plot_SOURCES = tests/check_plot.c %reldir%/plot.c %reldir%/plot.h
tests_check_plot_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_plot_LDADD = $(CHECK_LIBS)
# tests/plot is a folder of inputs.  Without this rule, make's built-in
# `.sh:` suffix rule makes a copy of tests/plot.sh named tests/plot in the
# build tree, and `make dist` ships that copy instead of the folder.
tests/plot: ;
