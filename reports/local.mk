# reports/ (issue 5 item 6): run metrics (quantiles with GSL) and the CSV
# writers of `kvsim run` (requests.csv, timeseries.csv, summary.csv).
noinst_LTLIBRARIES += %reldir%/librpt.la
%canon_reldir%_librpt_la_SOURCES = %reldir%/rpt.c %reldir%/rpt.h
%canon_reldir%_librpt_la_CFLAGS = $(AM_CFLAGS) $(GSL_CFLAGS)
%canon_reldir%_librpt_la_LIBADD = $(GSL_LIBS)
