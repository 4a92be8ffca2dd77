# Fuzzing (docs/TESTING.md): libFuzzer harnesses built with clang
# (FUZZ_CC, checked by configure) under ASan+UBSan, outside the automake
# build: tests/fuzz/fuzz.mk compiles the libraries' sources again,
# instrumented, under tests/fuzz/build of the build tree.
#   make fuzz-build                 build every harness
#   make fuzz [FUZZ_SECONDS=60]     build, then run each for that long;
#                                   fails if any finds something
#   make fuzz FUZZ_TARGETS='trace csv'   only those harnesses
#   make fuzz FUZZ_FLAGS='-jobs=2'  libFuzzer flags for every run
FUZZ_SECONDS = 60
FUZZ_TARGETS = replay trace ydoc runcfg set workload catalog sweep suite \
	calib calibrate compare csv
FUZZ_OUT = tests/fuzz/build

fuzz-build: config.h
	@if test "x$(FUZZ_OK)" != xyes; then \
	  echo "make fuzz: '$(FUZZ_CC)' cannot build libFuzzer harnesses" \
	    "(-fsanitize=fuzzer,address,undefined): install clang (Debian:" \
	    "apt-get install clang) or name one with ./configure" \
	    "FUZZ_CC=..." >&2; \
	  exit 1; \
	fi
	$(AM_V_at)$(MAKE) -f $(srcdir)/%reldir%/fuzz.mk \
	  srcdir='$(srcdir)' abs_top_srcdir='$(abs_top_srcdir)' \
	  FUZZ_CC='$(FUZZ_CC)' FUZZ_OUT='$(FUZZ_OUT)' AR='$(AR)' \
	  FUZZ_TARGETS='$(FUZZ_TARGETS)' HAVE_ZLIB='$(FUZZ_HAVE_ZLIB)' \
	  pkgdatadir='$(pkgdatadir)' \
	  YAML_CFLAGS='$(YAML_CFLAGS)' YAML_LIBS='$(YAML_LIBS)' \
	  GSL_CFLAGS='$(GSL_CFLAGS)' GSL_LIBS='$(GSL_LIBS)' \
	  ZLIB_CFLAGS='$(ZLIB_CFLAGS)' ZLIB_LIBS='$(ZLIB_LIBS)' \
	  LIBS='$(LIBS)'

fuzz: fuzz-build
	$(AM_V_at)FUZZ_FLAGS='$(FUZZ_FLAGS)' \
	  $(SHELL) $(srcdir)/%reldir%/run.sh '$(srcdir)' \
	  '$(FUZZ_OUT)' '$(FUZZ_SECONDS)' $(FUZZ_TARGETS)

fuzz-clean:
	-rm -rf $(FUZZ_OUT)

clean-local: fuzz-clean

.PHONY: fuzz fuzz-build fuzz-clean

if HAVE_ZLIB
FUZZ_HAVE_ZLIB = yes
else
FUZZ_HAVE_ZLIB = no
endif

EXTRA_DIST += %reldir%/fuzz.mk %reldir%/run.sh %reldir%/fuzz.h \
	%reldir%/fz_util.c %reldir%/fz_run.c %reldir%/fz_run.h \
	%reldir%/fz_cat.c %reldir%/fz_cat.h \
	%reldir%/fuzz_replay.c %reldir%/fuzz_trace.c %reldir%/fuzz_ydoc.c \
	%reldir%/fuzz_runcfg.c %reldir%/fuzz_set.c %reldir%/fuzz_workload.c \
	%reldir%/fuzz_catalog.c %reldir%/fuzz_sweep.c %reldir%/fuzz_suite.c \
	%reldir%/fuzz_calib.c %reldir%/fuzz_calibrate.c \
	%reldir%/fuzz_compare.c %reldir%/fuzz_csv.c %reldir%/replay.dict \
	%reldir%/trace.dict %reldir%/config.dict %reldir%/catalog.dict \
	%reldir%/calib.dict %reldir%/csv.dict %reldir%/corpus
