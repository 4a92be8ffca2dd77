# gpu/: device backends (host, fault, CUDA), the verifier and the device
# check program.  Plain static archive (not libtool): the CUDA object comes
# from nvcc through the .cu.o rule below (docs/style.md §6).
noinst_LIBRARIES = %reldir%/libkvgpu.a
%canon_reldir%_libkvgpu_a_SOURCES = \
	%reldir%/kvgpu.h %reldir%/kvgpu_int.h \
	%reldir%/kv_pattern.h %reldir%/kv_layout.h \
	%reldir%/kvgpu.c %reldir%/cpu_pool.c \
	%reldir%/backend_host.c %reldir%/backend_fault.c \
	%reldir%/kvval.h %reldir%/validate.c \
	%reldir%/kvdrive.h %reldir%/drive.c
# Distributed whatever this host has (a tarball made without CUDA must
# still build the backend where nvcc exists).
EXTRA_DIST += %reldir%/backend_cuda.cu %reldir%/backend_cuda_stub.c \
	%reldir%/tools/device-check.sh
if HAVE_CUDA
%canon_reldir%_libkvgpu_a_LIBADD = %reldir%/backend_cuda.$(OBJEXT)
%canon_reldir%_libkvgpu_a_DEPENDENCIES = %reldir%/backend_cuda.$(OBJEXT)
CLEANFILES += %reldir%/backend_cuda.$(OBJEXT)
%reldir%/backend_cuda.$(OBJEXT): %reldir%/backend_cuda.cu \
		%reldir%/kvgpu.h %reldir%/kvgpu_int.h %reldir%/kv_pattern.h \
		%reldir%/kv_layout.h config.h
	$(AM_V_at)$(MKDIR_P) %reldir%
	$(AM_V_GEN)$(NVCC) $(NVCCFLAGS) $(CUDA_CPPFLAGS) -I$(top_srcdir) \
		-I$(top_builddir) -c -o $@ $(srcdir)/%reldir%/backend_cuda.cu
else
%canon_reldir%_libkvgpu_a_SOURCES += %reldir%/backend_cuda_stub.c
endif
KVGPU_LIBS = %reldir%/libkvgpu.a core/libkvcore.la $(CUDA_LDFLAGS) \
	$(CUDA_LIBS)

# The device check program: core/ and gpu/ only (the GPU machine has no
# GSL, libyaml or Check).  gpu/tools/device-check.sh runs it there.
noinst_PROGRAMS += %reldir%/tools/kvsim-gpucheck
%canon_reldir%_tools_kvsim_gpucheck_SOURCES = %reldir%/tools/kvsim-gpucheck.c
%canon_reldir%_tools_kvsim_gpucheck_LDADD = $(KVGPU_LIBS)

# Tests of gpu/ and of the commands built on it.
GPU_TEST_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
check_PROGRAMS += tests/check_gpu_host tests/check_gpu_fault \
	tests/check_calibrate
tests_check_gpu_host_SOURCES = tests/check_gpu_host.c
tests_check_gpu_host_CFLAGS = $(GPU_TEST_CFLAGS)
tests_check_gpu_host_LDADD = $(KVGPU_LIBS) $(CHECK_LIBS)
tests_check_gpu_fault_SOURCES = tests/check_gpu_fault.c
tests_check_gpu_fault_CFLAGS = $(GPU_TEST_CFLAGS)
tests_check_gpu_fault_LDADD = $(KVGPU_LIBS) $(CHECK_LIBS)
tests_check_calibrate_SOURCES = tests/check_calibrate.c sim/calfit.c \
	sim/calfit.h
tests_check_calibrate_CFLAGS = $(GPU_TEST_CFLAGS) $(GSL_CFLAGS)
tests_check_calibrate_LDADD = util/libutil.la $(GSL_LIBS) $(CHECK_LIBS)
# (tests/local.mk's TESTS += $(check_PROGRAMS) runs the binaries above;
# the scripts find kvsim-gpucheck beside $KVSIM.)
TESTS += tests/gpucheck.sh tests/gpu_cuda.sh tests/validate.sh \
	tests/calibrate.sh
EXTRA_DIST += tests/gpucheck.sh tests/gpu_cuda.sh tests/validate.sh \
	tests/calibrate.sh tests/gpu/swap.yaml tests/gpu/model.yaml \
	tests/gpu/gemma-2-w64.config.json tests/gpu/v0-chunked-prefix.yaml \
	tests/gpu/v0-promotion.yaml tests/gpu/v0-shared-recompute.yaml \
	tests/gpu/mamba-prefix.yaml tests/gpu/mamba-same-step.yaml \
	tests/gpu/mamba-same-step.csv tests/gpu/mamba-same-step-late.yaml \
	tests/gpu/mamba-same-step-late.csv tests/gpu/v1-priority-withdraw.yaml \
	tests/gpu/v1-priority-withdraw.csv

# The step bench (docs/gpu.md §5.2): GEMMs, a paged KV read and a copy at
# the catalog models' shapes, for `kvsim calibrate kernels`.  core/ and
# gpu/ only; cuBLAS is opened at run time (stepbench_cuda.cu).
noinst_PROGRAMS += %reldir%/tools/kvsim-stepbench
%canon_reldir%_tools_kvsim_stepbench_SOURCES = \
	%reldir%/tools/kvsim-stepbench.c %reldir%/tools/stepbench.h
EXTRA_DIST += %reldir%/tools/stepbench_cuda.cu %reldir%/tools/stepbench_stub.c
if HAVE_CUDA
%canon_reldir%_tools_kvsim_stepbench_LDADD = \
	%reldir%/tools/stepbench_cuda.$(OBJEXT) $(KVGPU_LIBS) -ldl
# (naming DEPENDENCIES drops automake's own list: the libraries too, or a
# parallel build links before they exist)
%canon_reldir%_tools_kvsim_stepbench_DEPENDENCIES = \
	%reldir%/tools/stepbench_cuda.$(OBJEXT) %reldir%/libkvgpu.a \
	core/libkvcore.la
CLEANFILES += %reldir%/tools/stepbench_cuda.$(OBJEXT)
%reldir%/tools/stepbench_cuda.$(OBJEXT): %reldir%/tools/stepbench_cuda.cu \
		%reldir%/tools/stepbench.h config.h
	$(AM_V_at)$(MKDIR_P) %reldir%/tools
	$(AM_V_GEN)$(NVCC) $(NVCCFLAGS) $(CUDA_CPPFLAGS) -I$(top_srcdir) \
		-I$(top_builddir) -c -o $@ \
		$(srcdir)/%reldir%/tools/stepbench_cuda.cu
else
%canon_reldir%_tools_kvsim_stepbench_SOURCES += \
	%reldir%/tools/stepbench_stub.c
%canon_reldir%_tools_kvsim_stepbench_LDADD = $(KVGPU_LIBS)
endif
