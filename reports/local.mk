# reports/: run metrics (quantiles with GSL) and the CSV writers of `kvsim
# run` (requests.csv, timeseries.csv, summary.csv), the capacity search,
# sweeps (grids of runs as child processes, sweep.csv), regression compare
# (Welch's t-test, compare.csv) and plots (gnuplot scripts, their data,
# PNG/SVG images and index.html; gnuplot runs when it is on PATH).
noinst_LTLIBRARIES += %reldir%/librpt.la
%canon_reldir%_librpt_la_SOURCES = %reldir%/rpt.c %reldir%/rpt.h \
	%reldir%/rpt_sort.c \
	%reldir%/rpt_int.h \
	%reldir%/capacity.c %reldir%/capacity.h \
	%reldir%/sweep.c %reldir%/sweep.h \
	%reldir%/sweep_csv.c %reldir%/sweep_csv.h \
	%reldir%/compare.c %reldir%/compare.h \
	%reldir%/plot.c %reldir%/plot.h %reldir%/plot_int.h \
	%reldir%/plot_buf.c %reldir%/plot_data.c %reldir%/plot_gp.c \
	%reldir%/plot_run.c %reldir%/plot_series.c %reldir%/plot_cap.c \
	%reldir%/plot_sweep.c %reldir%/plot_html.c
%canon_reldir%_librpt_la_CFLAGS = $(AM_CFLAGS) $(GSL_CFLAGS)
%canon_reldir%_librpt_la_LIBADD = $(GSL_LIBS)
# vLLM bench and inference-perf result files (kvsim run --result-format)
%canon_reldir%_librpt_la_SOURCES += %reldir%/benchfmt.c %reldir%/benchfmt.h
# benchmark clients: failed requests, stages (rpt_set_client)
%canon_reldir%_librpt_la_SOURCES += %reldir%/rpt_client.c
%canon_reldir%_librpt_la_SOURCES += %reldir%/rpt_pd.c

%canon_reldir%_librpt_la_SOURCES += %reldir%/rpt_offload.c
%canon_reldir%_librpt_la_SOURCES += %reldir%/rpt_lora.c

# Speculative decoding columns (docs/speculative.md).
%canon_reldir%_librpt_la_SOURCES += %reldir%/rpt_spec.c
