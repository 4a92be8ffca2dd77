# The kvsim program.
bin_PROGRAMS += %reldir%/kvsim
%canon_reldir%_kvsim_SOURCES = \
	%reldir%/main.c \
	%reldir%/replay.c \
	%reldir%/replay.h \
	%reldir%/plugin.c \
	%reldir%/plugin.h \
	%reldir%/trace_stats.c \
	%reldir%/trace_stats.h \
	%reldir%/cmd_catalog.c \
	%reldir%/cmd_kvsize.c \
	%reldir%/cost.c \
	%reldir%/cost.h \
	%reldir%/calib.c %reldir%/calib.h \
	%reldir%/engine.c %reldir%/engine.h \
	%reldir%/replica.c %reldir%/replica.h \
	%reldir%/runcfg.c %reldir%/runcfg.h \
	%reldir%/run.c %reldir%/run.h \
	%reldir%/ctrace.c %reldir%/ctrace.h \
	%reldir%/outdir.c %reldir%/outdir.h \
	%reldir%/cmd_run.c \
	%reldir%/cmd_capacity.c
%canon_reldir%_kvsim_CFLAGS = $(AM_CFLAGS) $(YAML_CFLAGS)
# Policy plugins (sim/plugin.c) call kvs_* and kvc_* from the executable.
%canon_reldir%_kvsim_LDFLAGS = $(AM_LDFLAGS) -export-dynamic
%canon_reldir%_kvsim_LDADD = reports/librpt.la core/libkvcore.la \
	workloads/libwl.la $(GSL_LIBS) $(YAML_LIBS) \
	%reldir%/libsimcat.la

# Model/GPU catalogs (data/*.yaml), the config.json reader and vLLM's KV
# sizing: shared by kvsim and tests/check_catalog.  The catalogs are found
# at $KVSIM_DATADIR, else the installed pkgdatadir, else the source tree.
noinst_LTLIBRARIES += %reldir%/libsimcat.la
%canon_reldir%_libsimcat_la_SOURCES = \
	%reldir%/ydoc.c %reldir%/ydoc.h \
	%reldir%/catalog.c %reldir%/catalog.h \
	%reldir%/sizing.c %reldir%/sizing.h
%canon_reldir%_libsimcat_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DKVSIM_DATADIR='"$(pkgdatadir)"' \
	-DKVSIM_SRCDATADIR='"$(abs_top_srcdir)/data"'
%canon_reldir%_libsimcat_la_CFLAGS = $(AM_CFLAGS) $(YAML_CFLAGS)
%canon_reldir%_libsimcat_la_LIBADD = $(YAML_LIBS)
# the data directories are compiled in: rebuild when configure changes them
$(%canon_reldir%_libsimcat_la_OBJECTS): Makefile
# kvsim validate and kvsim calibrate (gpu/local.mk has the library).
%canon_reldir%_kvsim_SOURCES += %reldir%/cmd_validate.c %reldir%/cmd_calibrate.c %reldir%/calfit.c %reldir%/calfit.h
%canon_reldir%_kvsim_LDADD += gpu/libkvgpu.a core/libkvcore.la $(CUDA_LDFLAGS) $(CUDA_LIBS)
