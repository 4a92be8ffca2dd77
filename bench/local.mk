# `make bench`: allocator micro-benchmarks, numbers in docs/BENCHMARKS.md.
EXTRA_PROGRAMS = %reldir%/bench_core
%canon_reldir%_bench_core_SOURCES = %reldir%/bench_core.c
%canon_reldir%_bench_core_CFLAGS = $(AM_CFLAGS) -O2
%canon_reldir%_bench_core_LDADD = core/libkvcore.la
%canon_reldir%_bench_core_LDFLAGS = $(AM_LDFLAGS) \
	-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc
CLEANFILES += %reldir%/bench_core %reldir%/results.txt

bench: %reldir%/bench_core
	%reldir%/bench_core | tee %reldir%/results.txt
.PHONY: bench
