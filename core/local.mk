# libkvcore: the allocator core.  C11 and libc only: no external flags, no
# LIBADD (tests/check_layering.sh enforces it).  Installed shared and
# static: the empty _LIBTOOLFLAGS lifts Makefile.am's --tag=disable-shared
# for this library alone.  The programs of the build still link its static
# archive (their link keeps --tag=disable-shared), so kvsim, the tests and
# the benchmarks' malloc wrapping are what they were.
lib_LTLIBRARIES += %reldir%/libkvcore.la
%canon_reldir%_libkvcore_la_LIBTOOLFLAGS =
%canon_reldir%_libkvcore_la_SOURCES = \
	%reldir%/kv_int.h \
	%reldir%/kv_mgr.c \
	%reldir%/kv_list.c \
	%reldir%/kv_hash.c \
	%reldir%/kv_exact.c \
	%reldir%/kv_v0.c \
	%reldir%/kv_v1.c \
	%reldir%/kv_ds.c \
	%reldir%/kv_ds.h \
	%reldir%/kv_size.c \
	%reldir%/kv_sched.c \
	%reldir%/kvs_conn.c \
	%reldir%/kvs_int.h \
	%reldir%/kvs_v0.c \
	%reldir%/kvs_v1.c \
	%reldir%/kvs_spec.c \
	%reldir%/kvs_exact.h \
	%reldir%/kvs_exact.c \
	%reldir%/kvs_sarathi.c \
	%reldir%/kvs_fastgen.c \
	%reldir%/kvs_kvsim.c \
	%reldir%/kv_tier.h \
	%reldir%/kv_tier.c \
	%reldir%/kv_offload.c \
	%reldir%/kvs_lora.c \
	%reldir%/kvs_fork.c \
	%reldir%/kvs_ff.c
%canon_reldir%_libkvcore_la_LDFLAGS = -version-info 0:0:0 $(AM_LDFLAGS)

kvcoreincludedir = $(includedir)/kvcore
kvcoreinclude_HEADERS = %reldir%/kvcore.h %reldir%/kvsize.h \
	%reldir%/kvsched.h %reldir%/kvspolicy.h %reldir%/kvoffload.h

pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = %reldir%/kvcore.pc
EXTRA_DIST += %reldir%/kvcore.pc.in
