# `make bench`: allocator micro-benchmarks, numbers in docs/BENCHMARKS.md.
# They link libkvcore's static archive (-static), so that --wrap sees its
# allocations.
EXTRA_PROGRAMS = %reldir%/bench_core
%canon_reldir%_bench_core_SOURCES = %reldir%/bench_core.c
%canon_reldir%_bench_core_CFLAGS = $(AM_CFLAGS) -O2
%canon_reldir%_bench_core_LDADD = core/libkvcore.la
%canon_reldir%_bench_core_LDFLAGS = $(AM_LDFLAGS) -static \
	-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc
CLEANFILES += %reldir%/bench_core %reldir%/results.txt

bench: %reldir%/bench_core %reldir%/bench_wl %reldir%/bench_sched
	%reldir%/bench_core | tee %reldir%/results.txt
	%reldir%/bench_sched | tee %reldir%/results_sched.txt
	KVSIM_TRACES=$${KVSIM_TRACES:-$(abs_top_srcdir)/../shared/traces} \
	    %reldir%/bench_wl | tee %reldir%/results_wl.txt
.PHONY: bench

# workloads/ (issue 4): parse rate per format, generator throughput, peak
# RSS of a stream tiled to 10^7 requests.
EXTRA_PROGRAMS += %reldir%/bench_wl
%canon_reldir%_bench_wl_SOURCES = %reldir%/bench_wl.c
%canon_reldir%_bench_wl_CFLAGS = $(AM_CFLAGS) -O2
%canon_reldir%_bench_wl_LDADD = workloads/libwl.la $(GSL_LIBS) $(YAML_LIBS)
CLEANFILES += %reldir%/bench_wl %reldir%/results_wl.txt

# Scheduler policies (issue 3): cost per decode-only step at batch 8 to
# 1,024, ns per scheduled sequence (docs/BENCHMARKS.md, "Scheduler").
EXTRA_PROGRAMS += %reldir%/bench_sched
%canon_reldir%_bench_sched_SOURCES = %reldir%/bench_sched.c
%canon_reldir%_bench_sched_CFLAGS = $(AM_CFLAGS) -O2
%canon_reldir%_bench_sched_LDADD = core/libkvcore.la
%canon_reldir%_bench_sched_LDFLAGS = $(AM_LDFLAGS) -static \
	-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc
CLEANFILES += %reldir%/bench_sched %reldir%/results_sched.txt

# `kvsim run` (issue 5): simulated requests per wall-second and max RSS on
# the Azure conversation trace, whole and tiled to 10^4..10^6 requests
# (docs/BENCHMARKS.md, "Simulation").  Needs the traces folder.
EXTRA_DIST += %reldir%/bench_run.sh
bench-run: sim/kvsim
	KVSIM=sim/kvsim KVSIM_TRACES=$${KVSIM_TRACES:-$(abs_top_srcdir)/../shared/traces} \
	    $(SHELL) $(srcdir)/%reldir%/bench_run.sh | tee %reldir%/results_run.txt
bench: bench-run
CLEANFILES += %reldir%/results_run.txt
.PHONY: bench-run

# `kvsim capacity` (issue 6): a capacity search on the whole Azure
# conversation trace, its simulations and wall time (docs/BENCHMARKS.md,
# "Capacity").  Needs the traces folder.
EXTRA_DIST += %reldir%/bench_capacity.sh
bench-capacity: sim/kvsim
	KVSIM=sim/kvsim KVSIM_TRACES=$${KVSIM_TRACES:-$(abs_top_srcdir)/../shared/traces} \
	    $(SHELL) $(srcdir)/%reldir%/bench_capacity.sh | tee %reldir%/results_capacity.txt
bench: bench-capacity
CLEANFILES += %reldir%/results_capacity.txt
.PHONY: bench-capacity

# `make accuracy` (issue 18): kvsim against 16 measured vLLM v0.15.1 runs
# (bench/accuracy/README.md), APE per experiment and metric, median and
# p90 per metric for the fit and held-out sets (docs/ACCURACY.md).
# CALIBRATION=FILE passes a calibration file to every run.  Not part of
# `make check`; tests/accuracy.sh checks the harness on short copies.
EXTRA_DIST += %reldir%/accuracy
accuracy: sim/kvsim
	@$(MKDIR_P) %reldir%/accuracy
	KVSIM=$(abs_top_builddir)/sim/kvsim ACC_OUT=accuracy-out \
	    ACC_CSV=%reldir%/accuracy/accuracy.csv \
	    $(SHELL) $(srcdir)/%reldir%/accuracy/accuracy.sh $(CALIBRATION)
.PHONY: accuracy
