# Tests: one Check binary per module, replay scripts with golden output,
# shell tests for the command line and the layering rule.
TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)
AM_TESTS_ENVIRONMENT = \
	KVSIM=$(abs_top_builddir)/sim/kvsim; export KVSIM; \
	top_srcdir=$(abs_top_srcdir); export top_srcdir;

KV_TEST_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
KV_TEST_LIBS = core/libkvcore.la $(CHECK_LIBS)

check_PROGRAMS += %reldir%/check_core
%canon_reldir%_check_core_SOURCES = %reldir%/check_core.c
%canon_reldir%_check_core_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_core_LDADD = $(KV_TEST_LIBS)

check_PROGRAMS += %reldir%/check_exact
%canon_reldir%_check_exact_SOURCES = %reldir%/check_exact.c
%canon_reldir%_check_exact_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_exact_LDADD = $(KV_TEST_LIBS)

check_PROGRAMS += %reldir%/check_v0
%canon_reldir%_check_v0_SOURCES = %reldir%/check_v0.c
%canon_reldir%_check_v0_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_v0_LDADD = $(KV_TEST_LIBS)

check_PROGRAMS += %reldir%/check_v1
%canon_reldir%_check_v1_SOURCES = %reldir%/check_v1.c
%canon_reldir%_check_v1_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_v1_LDADD = $(KV_TEST_LIBS)

check_PROGRAMS += %reldir%/check_ds
%canon_reldir%_check_ds_SOURCES = %reldir%/check_ds.c
%canon_reldir%_check_ds_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_ds_LDADD = $(KV_TEST_LIBS)

check_PROGRAMS += %reldir%/check_size
%canon_reldir%_check_size_SOURCES = %reldir%/check_size.c
%canon_reldir%_check_size_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_size_LDADD = $(KV_TEST_LIBS)

TESTS += \
	%reldir%/replay.sh \
	%reldir%/badinput.sh \
	%reldir%/cli.sh \
	%reldir%/check_layering.sh
EXTRA_DIST += %reldir%/replay.sh %reldir%/badinput.sh %reldir%/cli.sh \
	%reldir%/check_layering.sh %reldir%/replay %reldir%/bad

check_PROGRAMS += %reldir%/check_stress
%canon_reldir%_check_stress_SOURCES = %reldir%/check_stress.c
%canon_reldir%_check_stress_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_stress_LDADD = $(KV_TEST_LIBS)

TESTS += $(check_PROGRAMS)

check_PROGRAMS += %reldir%/check_sched_v1
%canon_reldir%_check_sched_v1_SOURCES = %reldir%/check_sched_v1.c
%canon_reldir%_check_sched_v1_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_sched_v1_LDADD = $(KV_TEST_LIBS)

check_PROGRAMS += %reldir%/check_sched_v0
%canon_reldir%_check_sched_v0_SOURCES = %reldir%/check_sched_v0.c
%canon_reldir%_check_sched_v0_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_sched_v0_LDADD = $(KV_TEST_LIBS)
