# reports/ (issue 6 items 3-4): `kvsim sweep` (grids of runs as child
# processes, sweep.csv) and `kvsim compare` (regression verdicts with
# Welch's t-test, compare.csv), built into the kvsim program.
sim_kvsim_SOURCES += \
	reports/sweep.c reports/sweep.h \
	reports/sweep_csv.c reports/sweep_csv.h \
	reports/compare.c reports/compare.h \
	sim/cmd_sweep.c sim/cmd_compare.c
sim_kvsim_CFLAGS += $(GSL_CFLAGS)

TESTS += tests/sweep.sh tests/compare.sh
EXTRA_DIST += tests/sweep.sh tests/compare.sh tests/sweep tests/compare
# tests/sweep and tests/compare are folders of inputs: empty rules keep
# make's built-in `.sh:` suffix rule from making copies of the scripts
# under their names (which `make dist` would ship instead of the folders).
tests/sweep: ;
tests/compare: ;

# The CSV reader, grids and ids, thresholds, Welch's t-test and verdicts.
check_PROGRAMS += tests/check_sweep
tests_check_sweep_SOURCES = tests/check_sweep.c \
	reports/sweep.c reports/sweep.h \
	reports/sweep_csv.c reports/sweep_csv.h \
	reports/compare.c reports/compare.h
tests_check_sweep_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(GSL_CFLAGS)
tests_check_sweep_LDADD = reports/librpt.la $(GSL_LIBS) $(CHECK_LIBS)
