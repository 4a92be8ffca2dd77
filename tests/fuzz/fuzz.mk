# fuzz.mk -- builds the libFuzzer harnesses of tests/fuzz/ with clang.
#
# A GNU make file of its own, run by `make fuzz-build` (tests/fuzz/local.mk)
# from the build directory with the configured values on its command line:
#   srcdir FUZZ_CC FUZZ_OUT AR HAVE_ZLIB pkgdatadir abs_top_srcdir
#   YAML_CFLAGS YAML_LIBS GSL_CFLAGS GSL_LIBS ZLIB_CFLAGS ZLIB_LIBS LIBS
# The libraries' sources are compiled again here, instrumented for
# coverage and ASan+UBSan, into one archive under FUZZ_OUT (the main build
# compiles them with $(CC) through libtool, not instrumented); each
# harness links its own object, the shared helpers and that archive, so
# the linker takes only the library objects a harness reaches.  Nothing
# is written under srcdir.

FUZZ_TARGETS ?= replay trace ydoc runcfg set workload catalog sweep suite \
	calib calibrate compare csv

FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS ?= -g -O1 -fno-omit-frame-pointer
FUZZ_ALL_CFLAGS = $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link \
	-std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra \
	-Wno-unused-function -I$(srcdir) -I. \
	-DKVSIM_DATADIR='"$(pkgdatadir)"' \
	-DKVSIM_SRCDATADIR='"$(abs_top_srcdir)/data"' \
	$(YAML_CFLAGS) $(GSL_CFLAGS) $(ZLIB_CFLAGS)
ifeq ($(HAVE_ZLIB),yes)
FUZZ_ALL_CFLAGS += -DFUZZ_HAVE_ZLIB
endif

# The libraries' sources, as their local.mk files list them: everything
# but the program's main(), the CUDA backend, the gzip choice and MPI (the
# harnesses take mpipool_none.c: a sweep or capacity here never runs on ranks).
wl_gz = $(if $(filter yes,$(HAVE_ZLIB)),wl_gz.c,wl_gz_none.c)
lib_src = $(wildcard $(srcdir)/core/*.c) \
	$(wildcard $(srcdir)/util/*.c) \
	$(filter-out %/wl_gz.c %/wl_gz_none.c, \
		$(wildcard $(srcdir)/workloads/*.c)) \
	$(srcdir)/workloads/$(wl_gz) \
	$(wildcard $(srcdir)/reports/*.c) \
	$(wildcard $(srcdir)/gpu/*.c) \
	$(wildcard $(srcdir)/sim/model/*.c) \
	$(wildcard $(srcdir)/sim/*.c) \
	$(filter-out %/main.c %/mpipool.c, $(wildcard $(srcdir)/sim/cli/*.c))
lib_obj = $(patsubst $(srcdir)/%.c,$(FUZZ_OUT)/obj/%.o,$(lib_src))
helper_obj = $(FUZZ_OUT)/obj/tests/fuzz/fz_util.o
run_obj = $(FUZZ_OUT)/obj/tests/fuzz/fz_run.o
cat_obj = $(FUZZ_OUT)/obj/tests/fuzz/fz_cat.o

all: $(FUZZ_TARGETS:%=$(FUZZ_OUT)/fuzz_%)

$(FUZZ_OUT)/obj/%.o: $(srcdir)/%.c
	@mkdir -p $(@D)
	@echo "  FUZZCC   $*.c"
	@$(FUZZ_CC) $(FUZZ_ALL_CFLAGS) -MMD -MP -c -o $@ $<

# A policy naming a path would dlopen it: never in a harness (fz_util.c).
$(FUZZ_OUT)/obj/sim/plugin.o: FUZZ_ALL_CFLAGS += -Ddlopen=fz_dlopen

$(FUZZ_OUT)/libkvfuzz.a: $(lib_obj)
	@rm -f $@
	@echo "  AR       $@"
	@$(AR) cr $@ $(lib_obj)

$(FUZZ_OUT)/fuzz_runcfg $(FUZZ_OUT)/fuzz_set: $(run_obj)
$(FUZZ_OUT)/fuzz_catalog $(FUZZ_OUT)/fuzz_calib: $(cat_obj)

$(FUZZ_OUT)/fuzz_%: $(FUZZ_OUT)/obj/tests/fuzz/fuzz_%.o $(helper_obj) \
		$(FUZZ_OUT)/libkvfuzz.a
	@echo "  FUZZLD   $@"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ \
		$(filter %.o,$^) $(FUZZ_OUT)/libkvfuzz.a $(YAML_LIBS) \
		$(GSL_LIBS) $(ZLIB_LIBS) $(LIBS) -lm

.PHONY: all
.SECONDARY:

-include $(shell find $(FUZZ_OUT)/obj -name '*.d' 2>/dev/null)
