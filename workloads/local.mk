# workloads/: request streams from real traces and synthetic generators.
# Uses GSL (RNGs, distributions), util/'s YAML reader (the `workload:`
# section) and, when configure finds it, zlib (gzip traces); see
# docs/workloads.md.
noinst_LTLIBRARIES += %reldir%/libwl.la
%canon_reldir%_libwl_la_SOURCES = \
	%reldir%/wl.h \
	%reldir%/wl_int.h \
	%reldir%/wl_err.c \
	%reldir%/wl_util.c \
	%reldir%/wl_io.c \
	%reldir%/wl_parse.c \
	%reldir%/wl_json.c \
	%reldir%/wl_trace.c \
	%reldir%/wl_xform.c \
	%reldir%/wl_dist.c \
	%reldir%/wl_gen.c \
	%reldir%/wl_stream.c \
	%reldir%/wl_config.c \
	%reldir%/wl_stats.c \
	%reldir%/wl_write.c
if HAVE_ZLIB
%canon_reldir%_libwl_la_SOURCES += %reldir%/wl_gz.c
else
%canon_reldir%_libwl_la_SOURCES += %reldir%/wl_gz_none.c
endif
%canon_reldir%_libwl_la_CFLAGS = $(AM_CFLAGS) $(GSL_CFLAGS) $(ZLIB_CFLAGS)
%canon_reldir%_libwl_la_LIBADD = util/libutil.la $(GSL_LIBS) $(ZLIB_LIBS) -lm
# vLLM's benchmark datasets (workload.dataset: random, sharegpt,
# prefix_repetition) as settings of the generator
%canon_reldir%_libwl_la_SOURCES += %reldir%/wl_bench.c
# inference-perf's load (workload.kind: inference-perf)
%canon_reldir%_libwl_la_SOURCES += %reldir%/wl_iperf.c
