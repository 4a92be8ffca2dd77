# sim/cli/: the kvsim program: main.c (dispatch), one file per subcommand
# with its header, and the output folders they share.  The program keeps
# its place at sim/kvsim.
bin_PROGRAMS += sim/kvsim
sim_kvsim_SOURCES = \
	%reldir%/main.c \
	%reldir%/opts.c %reldir%/opts.h \
	%reldir%/children.c %reldir%/children.h \
	%reldir%/outdir.c %reldir%/outdir.h \
	%reldir%/simrun.c %reldir%/simrun.h \
	%reldir%/cmd_calibrate.c %reldir%/cmd_calibrate.h \
	%reldir%/cmd_calkern.c %reldir%/cmd_calkern.h \
	%reldir%/cmd_calserve.c %reldir%/cmd_calserve.h \
	%reldir%/cmd_capacity.c %reldir%/cmd_capacity.h \
	%reldir%/cmd_catalog.c %reldir%/cmd_catalog.h \
	%reldir%/cmd_compare.c %reldir%/cmd_compare.h \
	%reldir%/cmd_kvsize.c %reldir%/cmd_kvsize.h \
	%reldir%/cmd_plot.c %reldir%/cmd_plot.h \
	%reldir%/cmd_replay.c %reldir%/cmd_replay.h \
	%reldir%/cmd_run.c %reldir%/cmd_run.h \
	%reldir%/cmd_sweep.c %reldir%/cmd_sweep.h \
	%reldir%/cmd_trace_stats.c %reldir%/cmd_trace_stats.h \
	%reldir%/cmd_validate.c %reldir%/cmd_validate.h \
	%reldir%/mpipool.h
sim_kvsim_CFLAGS = $(AM_CFLAGS) $(GSL_CFLAGS)
# Policy plugins (sim/plugin.c) call kvs_* and kvc_* from the executable.
# -static: libkvcore's static archive, not its shared library (whose build
# tree path would stay in the installed program).
sim_kvsim_LDFLAGS = $(AM_LDFLAGS) -export-dynamic -static
sim_kvsim_LDADD = sim/libsim.la sim/model/libmodel.la reports/librpt.la \
	workloads/libwl.la gpu/libkvgpu.a util/libutil.la core/libkvcore.la \
	$(GSL_LIBS) $(YAML_LIBS) $(CUDA_LDFLAGS) $(CUDA_LIBS)
# MPI (configure --with-mpi): sweep and capacity jobs on MPI ranks.
if HAVE_MPI
sim_kvsim_SOURCES += %reldir%/mpipool.c
sim_kvsim_CFLAGS += $(MPI_CFLAGS)
sim_kvsim_LDADD += $(MPI_LIBS)
else
sim_kvsim_SOURCES += %reldir%/mpipool_none.c
endif
