# util/: the text formats every layer above core reads, in one place:
# YAML/JSON documents whose nodes keep FILE:LINE:COL and refuse duplicate
# keys (ydoc), and CSV tables with LINE:COL errors and columns found by
# name (csv).  It uses libc, libyaml and core's kv_err; nothing above.
noinst_LTLIBRARIES += %reldir%/libutil.la
%canon_reldir%_libutil_la_SOURCES = \
	%reldir%/ydoc.c %reldir%/ydoc.h \
	%reldir%/csv.c %reldir%/csv.h
%canon_reldir%_libutil_la_CFLAGS = $(AM_CFLAGS) $(YAML_CFLAGS)
%canon_reldir%_libutil_la_LIBADD = $(YAML_LIBS)

# The process pool: N jobs in child processes, K at a time, each job's
# status and result bytes in its own slot (sweep, compare --suite and
# capacity run their children through it).  libc only.
%canon_reldir%_libutil_la_SOURCES += %reldir%/pool.c %reldir%/pool.h
