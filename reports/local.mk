# reports/: run metrics (quantiles with GSL), the CSV writers of `kvsim
# run` (requests.csv, timeseries.csv, summary.csv) and the capacity search.
noinst_LTLIBRARIES += %reldir%/librpt.la
%canon_reldir%_librpt_la_SOURCES = %reldir%/rpt.c %reldir%/rpt.h \
	%reldir%/capacity.c %reldir%/capacity.h
%canon_reldir%_librpt_la_CFLAGS = $(AM_CFLAGS) $(GSL_CFLAGS)
%canon_reldir%_librpt_la_LIBADD = $(GSL_LIBS)
