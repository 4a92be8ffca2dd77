# Tests: one Check binary per module, replay scripts with golden output,
# shell tests for the command line and the layering rule.
TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)
AM_TESTS_ENVIRONMENT = \
	KVSIM=$(abs_top_builddir)/sim/kvsim; export KVSIM; \
	top_srcdir=$(abs_top_srcdir); export top_srcdir; \
	KVSIM_CHECK=1; export KVSIM_CHECK;
# Check's timeouts times 4 (unless the caller sets a multiplier): headroom
# for a loaded machine over each test case's own timeout
# (check_timeouts.sh, docs/TESTING.md).
AM_TESTS_ENVIRONMENT += \
	CK_TIMEOUT_MULTIPLIER=$${CK_TIMEOUT_MULTIPLIER:-4}; \
	export CK_TIMEOUT_MULTIPLIER;
TESTS += %reldir%/check_timeouts.sh
EXTRA_DIST += %reldir%/check_timeouts.sh

KV_TEST_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
KV_TEST_LIBS = core/libkvcore.la $(CHECK_LIBS)

check_PROGRAMS += %reldir%/check_core
%canon_reldir%_check_core_SOURCES = %reldir%/check_core.c
%canon_reldir%_check_core_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_core_LDADD = $(KV_TEST_LIBS)

check_PROGRAMS += %reldir%/check_exact
%canon_reldir%_check_exact_SOURCES = %reldir%/check_exact.c
%canon_reldir%_check_exact_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_exact_LDADD = $(KV_TEST_LIBS)

check_PROGRAMS += %reldir%/check_v0
%canon_reldir%_check_v0_SOURCES = %reldir%/check_v0.c
%canon_reldir%_check_v0_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_v0_LDADD = $(KV_TEST_LIBS)

check_PROGRAMS += %reldir%/check_v1
%canon_reldir%_check_v1_SOURCES = %reldir%/check_v1.c
%canon_reldir%_check_v1_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_v1_LDADD = $(KV_TEST_LIBS)

check_PROGRAMS += %reldir%/check_ds
%canon_reldir%_check_ds_SOURCES = %reldir%/check_ds.c
%canon_reldir%_check_ds_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_ds_LDADD = $(KV_TEST_LIBS)

check_PROGRAMS += %reldir%/check_size
%canon_reldir%_check_size_SOURCES = %reldir%/check_size.c
%canon_reldir%_check_size_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_size_LDADD = $(KV_TEST_LIBS)

TESTS += \
	%reldir%/replay.sh \
	%reldir%/badinput.sh \
	%reldir%/cli.sh \
	%reldir%/check_layering.sh \
	%reldir%/check_funclen.sh
EXTRA_DIST += %reldir%/replay.sh %reldir%/badinput.sh %reldir%/cli.sh \
	%reldir%/check_layering.sh %reldir%/check_funclen.sh \
	%reldir%/replay %reldir%/bad

check_PROGRAMS += %reldir%/check_stress
%canon_reldir%_check_stress_SOURCES = %reldir%/check_stress.c
%canon_reldir%_check_stress_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_stress_LDADD = $(KV_TEST_LIBS)

TESTS += $(check_PROGRAMS)

check_PROGRAMS += %reldir%/check_sched_v1
%canon_reldir%_check_sched_v1_SOURCES = %reldir%/check_sched_v1.c
%canon_reldir%_check_sched_v1_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_sched_v1_LDADD = $(KV_TEST_LIBS)

check_PROGRAMS += %reldir%/check_sched_v0
%canon_reldir%_check_sched_v0_SOURCES = %reldir%/check_sched_v0.c
%canon_reldir%_check_sched_v0_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_sched_v0_LDADD = $(KV_TEST_LIBS)

# workloads/ (issue 4): readers, transformations, config (check_wl),
# generators checked statistically (check_wl_gen), the real traces of
# ../shared/traces (check_wl_traces, wl_trace_stats.sh: exit 77 without
# them; KVSIM_TRACES overrides the folder) and the trace-stats command line.
AM_TESTS_ENVIRONMENT += \
	KVSIM_TRACES=$${KVSIM_TRACES:-$(abs_top_srcdir)/../shared/traces}; \
	export KVSIM_TRACES;
WL_TEST_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(GSL_CFLAGS)
WL_TEST_LIBS = workloads/libwl.la $(GSL_LIBS) $(YAML_LIBS) $(CHECK_LIBS)

check_PROGRAMS += %reldir%/check_wl
%canon_reldir%_check_wl_SOURCES = %reldir%/check_wl.c
%canon_reldir%_check_wl_CFLAGS = $(WL_TEST_CFLAGS)
%canon_reldir%_check_wl_LDADD = $(WL_TEST_LIBS)

check_PROGRAMS += %reldir%/check_wl_gen
%canon_reldir%_check_wl_gen_SOURCES = %reldir%/check_wl_gen.c
%canon_reldir%_check_wl_gen_CFLAGS = $(WL_TEST_CFLAGS)
%canon_reldir%_check_wl_gen_LDADD = $(WL_TEST_LIBS)

check_PROGRAMS += %reldir%/check_wl_traces
%canon_reldir%_check_wl_traces_SOURCES = %reldir%/check_wl_traces.c
%canon_reldir%_check_wl_traces_CFLAGS = $(WL_TEST_CFLAGS)
%canon_reldir%_check_wl_traces_LDADD = $(WL_TEST_LIBS)

TESTS += %reldir%/wl_cli.sh %reldir%/wl_trace_stats.sh
EXTRA_DIST += %reldir%/wl_cli.sh %reldir%/wl_trace_stats.sh \
	%reldir%/fixtures/wl

# Catalogs and vLLM's KV sizing (issue 5 items 4-5): check_catalog (the
# data/ catalogs, config.json, the sizing fixtures, seed bug 2) and the
# kv-size / catalog command lines.  tests/catalog holds bad inputs.
check_PROGRAMS += %reldir%/check_catalog
%canon_reldir%_check_catalog_SOURCES = %reldir%/check_catalog.c
%canon_reldir%_check_catalog_CFLAGS = $(KV_TEST_CFLAGS) $(YAML_CFLAGS)
%canon_reldir%_check_catalog_LDADD = sim/model/libmodel.la util/libutil.la $(KV_TEST_LIBS) \
	$(YAML_LIBS)
TESTS += %reldir%/kvsize.sh
EXTRA_DIST += %reldir%/kvsize.sh %reldir%/catalog

# The cost model (issue 5 item 3): step, swap and recompute times.
check_PROGRAMS += %reldir%/check_cost
%canon_reldir%_check_cost_SOURCES = %reldir%/check_cost.c sim/cost.c \
	sim/cost.h sim/calib.c sim/calib.h
%canon_reldir%_check_cost_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_cost_LDADD = sim/model/libmodel.la util/libutil.la \
	$(KV_TEST_LIBS) $(YAML_LIBS)

# Scheduler policies sarathi, deepspeed-fastgen and kvsim (issue 3): their
# scenarios, the randomized invariant test of all five policies (>= 10^5
# steps each; KVSIM_SCHED_STEPS overrides), and policy plugins: the example
# of examples/plugin/ built as a libtool module, plus two broken builds of
# it, loaded by `kvsim replay` (plugin.sh).  The modules override
# AM_LIBTOOLFLAGS (--tag=disable-shared, Makefile.am): they are the only
# shared objects of the build.
check_PROGRAMS += %reldir%/check_sched_policies
%canon_reldir%_check_sched_policies_SOURCES = %reldir%/check_sched_policies.c
%canon_reldir%_check_sched_policies_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_sched_policies_LDADD = $(KV_TEST_LIBS)

check_PROGRAMS += %reldir%/check_sched_stress
%canon_reldir%_check_sched_stress_SOURCES = %reldir%/check_sched_stress.c
%canon_reldir%_check_sched_stress_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_sched_stress_LDADD = $(KV_TEST_LIBS)

KV_PLUGIN_LDFLAGS = -module -avoid-version -shared -rpath /nowhere \
	$(AM_LDFLAGS)
check_LTLIBRARIES += examples/plugin/libspf.la
examples_plugin_libspf_la_SOURCES = examples/plugin/spf.c
examples_plugin_libspf_la_CPPFLAGS = -I$(top_srcdir)/core
examples_plugin_libspf_la_LIBTOOLFLAGS =
examples_plugin_libspf_la_LDFLAGS = $(KV_PLUGIN_LDFLAGS)

check_LTLIBRARIES += %reldir%/libplugin_noentry.la
%canon_reldir%_libplugin_noentry_la_SOURCES = examples/plugin/spf.c
%canon_reldir%_libplugin_noentry_la_CPPFLAGS = -I$(top_srcdir)/core \
	-DSPF_NO_ENTRY
%canon_reldir%_libplugin_noentry_la_LIBTOOLFLAGS =
%canon_reldir%_libplugin_noentry_la_LDFLAGS = $(KV_PLUGIN_LDFLAGS)

check_LTLIBRARIES += %reldir%/libplugin_badabi.la
%canon_reldir%_libplugin_badabi_la_SOURCES = examples/plugin/spf.c
%canon_reldir%_libplugin_badabi_la_CPPFLAGS = -I$(top_srcdir)/core \
	-DSPF_WRONG_ABI
%canon_reldir%_libplugin_badabi_la_LIBTOOLFLAGS =
%canon_reldir%_libplugin_badabi_la_LDFLAGS = $(KV_PLUGIN_LDFLAGS)

TESTS += %reldir%/plugin.sh
EXTRA_DIST += %reldir%/plugin.sh

# `kvsim run` (issue 5 items 1, 2, 6, 7): the event queue (check_engine) and
# the end-to-end run (run.sh: the README's main-job command, determinism,
# --out refusal, bad config keys/values, a hand-computed constant-cost
# scenario, invariants of a full run; tests/run holds its inputs).
check_PROGRAMS += %reldir%/check_engine
%canon_reldir%_check_engine_SOURCES = %reldir%/check_engine.c sim/engine.c \
	sim/engine.h
%canon_reldir%_check_engine_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_engine_LDADD = $(KV_TEST_LIBS)
TESTS += %reldir%/run.sh
EXTRA_DIST += %reldir%/run.sh %reldir%/run

# The replica's invariants (replica_check) after every call of small real
# runs, and each one broken on purpose.  It includes sim/replica.c to reach
# the fields it breaks.
check_PROGRAMS += %reldir%/check_replica
%canon_reldir%_check_replica_SOURCES = %reldir%/check_replica.c
%canon_reldir%_check_replica_CFLAGS = $(KV_TEST_CFLAGS) $(GSL_CFLAGS) \
	$(YAML_CFLAGS)
%canon_reldir%_check_replica_LDADD = sim/libsim.la sim/model/libmodel.la \
	reports/librpt.la workloads/libwl.la util/libutil.la \
	core/libkvcore.la $(GSL_LIBS) $(YAML_LIBS) $(CHECK_LIBS)

# reports/ (issue 6): quantiles against GSL and by hand, the ITL
# histogram's bound, goodput, the SLO syntax, the capacity search on
# synthetic thresholds; `kvsim capacity` end to end on a hand-sized system.
check_PROGRAMS += %reldir%/check_reports
%canon_reldir%_check_reports_SOURCES = %reldir%/check_reports.c
%canon_reldir%_check_reports_CFLAGS = $(KV_TEST_CFLAGS) $(GSL_CFLAGS)
%canon_reldir%_check_reports_LDADD = reports/librpt.la $(GSL_LIBS) \
	$(CHECK_LIBS)
TESTS += %reldir%/capacity.sh
EXTRA_DIST += %reldir%/capacity.sh %reldir%/capacity
TESTS += %reldir%/capacity_cost.sh %reldir%/run_progress.sh
EXTRA_DIST += %reldir%/capacity_cost.sh %reldir%/run_progress.sh
# Folders named like a test script (tests/run for run.sh): keep make's
# built-in `.sh:` rule from making a file of that name, which `make dist`
# would then ship in place of the folder.
%reldir%/run %reldir%/capacity: ;

# The CSV reader of util/csv.h (quoting, line ends, LINE:COL errors, the
# header lookup), which plot, sweep, compare and calibrate read through.
check_PROGRAMS += %reldir%/check_csv
%canon_reldir%_check_csv_SOURCES = %reldir%/check_csv.c
%canon_reldir%_check_csv_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_csv_LDADD = util/libutil.la $(CHECK_LIBS)

# Plots: check_plot tests plot.h's contract without gnuplot (statuses,
# messages, the PATH lookup, CDF data by hand); tests/plot.sh renders when
# gnuplot is installed (Debian: gnuplot-nox) and skips that part otherwise;
# tests/plot holds its inputs.
check_PROGRAMS += %reldir%/check_plot
%canon_reldir%_check_plot_SOURCES = %reldir%/check_plot.c
%canon_reldir%_check_plot_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
%canon_reldir%_check_plot_LDADD = reports/librpt.la util/libutil.la \
	$(GSL_LIBS) $(CHECK_LIBS)
TESTS += %reldir%/plot.sh
EXTRA_DIST += %reldir%/plot.sh %reldir%/plot

# Sweeps and compare: check_sweep tests the CSV reader, grids and ids,
# thresholds, Welch's t-test and verdicts; the scripts run the commands.
check_PROGRAMS += %reldir%/check_sweep
%canon_reldir%_check_sweep_SOURCES = %reldir%/check_sweep.c
%canon_reldir%_check_sweep_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(GSL_CFLAGS)
%canon_reldir%_check_sweep_LDADD = reports/librpt.la util/libutil.la \
	$(GSL_LIBS) $(CHECK_LIBS)
TESTS += %reldir%/sweep.sh %reldir%/compare.sh
EXTRA_DIST += %reldir%/sweep.sh %reldir%/compare.sh %reldir%/sweep \
	%reldir%/compare
# tests/plot, tests/sweep and tests/compare are folders of inputs.  Without
# these empty rules make's built-in `.sh:` suffix rule makes a copy of the
# script named like the folder in the build tree, and `make dist` ships
# that copy instead of the folder.
%reldir%/plot: ;
%reldir%/sweep: ;
%reldir%/compare: ;

# The process pool under sweep, compare --suite and capacity (util/pool.h).
check_PROGRAMS += %reldir%/check_pool
%canon_reldir%_check_pool_SOURCES = %reldir%/check_pool.c
%canon_reldir%_check_pool_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_pool_LDADD = util/libutil.la $(KV_TEST_LIBS)

# vLLM's bench datasets as workloads (check_wl_bench) and the run's result
# in vLLM bench / inference-perf vocabulary (check_benchfmt, bench.sh).
check_PROGRAMS += %reldir%/check_wl_bench
%canon_reldir%_check_wl_bench_SOURCES = %reldir%/check_wl_bench.c
%canon_reldir%_check_wl_bench_CFLAGS = $(WL_TEST_CFLAGS)
%canon_reldir%_check_wl_bench_LDADD = $(WL_TEST_LIBS)
check_PROGRAMS += %reldir%/check_benchfmt
%canon_reldir%_check_benchfmt_SOURCES = %reldir%/check_benchfmt.c
%canon_reldir%_check_benchfmt_CFLAGS = $(KV_TEST_CFLAGS) $(GSL_CFLAGS)
%canon_reldir%_check_benchfmt_LDADD = reports/librpt.la util/libutil.la \
	$(GSL_LIBS) $(YAML_LIBS) $(CHECK_LIBS)
TESTS += %reldir%/bench.sh
EXTRA_DIST += %reldir%/bench.sh

# sweep and capacity on MPI ranks (configure --with-mpi; skipped without).
if HAVE_MPI
AM_TESTS_ENVIRONMENT += KVSIM_MPIRUN='$(MPIRUN)'; export KVSIM_MPIRUN;
endif
TESTS += %reldir%/mpi.sh
EXTRA_DIST += %reldir%/mpi.sh

# Each policy's own batch limits in run, sweep and capacity, and the
# resolved scheduler settings in config.yaml (issue 22 item 1).
TESTS += %reldir%/policy_defaults.sh
EXTRA_DIST += %reldir%/policy_defaults.sh

# A sweep point's id covers its configuration (--resume after a change of
# the base reruns), and each point is checked with its own policy (issue
# 22 item 7).
TESTS += %reldir%/sweep_resume.sh
EXTRA_DIST += %reldir%/sweep_resume.sh

# The manual page covers every command and option; docs/*.md all installed
# (man/local.mk; `make installcheck` checks the installed files).
TESTS += %reldir%/man.sh
EXTRA_DIST += %reldir%/man.sh

# kvsim calibrate kernels (issue #18 item 6): the efficiency fit on
# synthetic stepbench CSVs, and the shapes -> dry run -> fit path.
check_PROGRAMS += %reldir%/check_calkern
%canon_reldir%_check_calkern_SOURCES = %reldir%/check_calkern.c \
	sim/calkern.c sim/calkern.h sim/calfit.c sim/calfit.h
%canon_reldir%_check_calkern_CFLAGS = $(KV_TEST_CFLAGS) $(GSL_CFLAGS)
%canon_reldir%_check_calkern_LDADD = sim/model/libmodel.la util/libutil.la \
	core/libkvcore.la $(GSL_LIBS) $(YAML_LIBS) $(CHECK_LIBS)
TESTS += %reldir%/calkern.sh
EXTRA_DIST += %reldir%/calkern.sh %reldir%/gpu/stepbench.sh \
	%reldir%/gpu/stepbench-shapes.csv

# Load as benchmark clients make it: inference-perf configs (stages,
# shared_prefix prompts), max_concurrency, client timeouts (tests/iperf
# holds the inputs).
TESTS += %reldir%/iperf.sh
EXTRA_DIST += %reldir%/iperf.sh %reldir%/iperf
check_PROGRAMS += %reldir%/check_wl_iperf
%canon_reldir%_check_wl_iperf_SOURCES = %reldir%/check_wl_iperf.c
%canon_reldir%_check_wl_iperf_CFLAGS = $(WL_TEST_CFLAGS)
%canon_reldir%_check_wl_iperf_LDADD = $(WL_TEST_LIBS)

# vllm-v1's engine loop with async scheduling: timing, defaults by vLLM
# version, bad values (issue 18 item 1).
TESTS += %reldir%/async_sched.sh
EXTRA_DIST += %reldir%/async_sched.sh

# The fast-forward of steady decode changes no output: every policy and
# feature run with it and with single steps, compared byte for byte
# (issue 21, docs/fastforward.md).
TESTS += %reldir%/ff_matrix.sh
EXTRA_DIST += %reldir%/ff_matrix.sh %reldir%/matrix_lib.sh
# and on random traces, whose arrivals the spans take in.
TESTS += %reldir%/ff_random.sh
EXTRA_DIST += %reldir%/ff_random.sh

# Prompts that share no block go to the scheduler by key, without their
# ids: no output changes (issue 21 item 2, docs/fastforward.md).
TESTS += %reldir%/keyed_matrix.sh
EXTRA_DIST += %reldir%/keyed_matrix.sh

# kvsim calibrate serving: known terms come back from synthetic measured
# runs in inference-perf's and vllm bench's shapes; bad input exits 2
# (issue 18 item 4).
TESTS += %reldir%/calibrate_serving.sh
EXTRA_DIST += %reldir%/calibrate_serving.sh

# The accuracy harness (issue 18, bench/accuracy/accuracy.sh): short
# copies of two measured runs; a missing metric, run or kvsim.yaml fails.
TESTS += %reldir%/accuracy.sh
EXTRA_DIST += %reldir%/accuracy.sh

# The API server's time (issue 18, docs/cost-model.md §5.3): the FIFO
# delay arithmetic and its backlog; in `kvsim run`, TTFT and E2E grow by
# exactly the frontend terms at light load, the backlog under load, the
# defaults per policy and the calibration keys.
check_PROGRAMS += %reldir%/check_frontend
%canon_reldir%_check_frontend_SOURCES = %reldir%/check_frontend.c
%canon_reldir%_check_frontend_CFLAGS = $(KV_TEST_CFLAGS) $(GSL_CFLAGS)
%canon_reldir%_check_frontend_LDADD = sim/libsim.la sim/model/libmodel.la \
	reports/librpt.la workloads/libwl.la util/libutil.la \
	core/libkvcore.la $(GSL_LIBS) $(YAML_LIBS) $(CHECK_LIBS)
TESTS += %reldir%/frontend.sh
EXTRA_DIST += %reldir%/frontend.sh %reldir%/gpu/no-frontend.yaml \
	%reldir%/run/frontend0.requests %reldir%/run/frontend0.summary \
	%reldir%/run/frontend0.timeseries

# The calibration kvsim ships for a GPU and vLLM series, chosen when
# cost.calibration is unset (docs/cost-model.md 5.6).
TESTS += %reldir%/autocal.sh
EXTRA_DIST += %reldir%/autocal.sh

# The KV connector of policy vllm-v1 (issue 19): hooks, the step's load
# and held lists, audit with loads in flight and held blocks, an idle
# connector changing nothing, and a randomized run under kvs_audit.
check_PROGRAMS += %reldir%/check_connector
%canon_reldir%_check_connector_SOURCES = %reldir%/check_connector.c
%canon_reldir%_check_connector_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_connector_LDADD = $(KV_TEST_LIBS)

# Issue 19: the offload manager and the offloading connector
# (core/kv_tier.c, core/kv_offload.c; docs/offload.md).
check_PROGRAMS += %reldir%/check_offload
%canon_reldir%_check_offload_SOURCES = %reldir%/check_offload.c
%canon_reldir%_check_offload_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_offload_LDADD = $(KV_TEST_LIBS)

# Issue 19: kvsim validate over KV offload and P/D transfers (docs/gpu.md
# 1.1 and 3).
TESTS += %reldir%/validate_moves.sh
EXTRA_DIST += %reldir%/validate_moves.sh

# Prefill/decode disaggregation (issue 19, docs/pd.md): per-request
# replicas and transfers, back-pressure, --set, capacity over P:D points,
# bad pool keys and links.
TESTS += %reldir%/pd.sh
EXTRA_DIST += %reldir%/pd.sh
check_PROGRAMS += %reldir%/check_pd
%canon_reldir%_check_pd_SOURCES = %reldir%/check_pd.c
%canon_reldir%_check_pd_CFLAGS = $(KV_TEST_CFLAGS) $(GSL_CFLAGS) \
	$(YAML_CFLAGS)
%canon_reldir%_check_pd_LDADD = sim/libsim.la sim/model/libmodel.la \
	reports/librpt.la workloads/libwl.la util/libutil.la \
	core/libkvcore.la $(GSL_LIBS) $(YAML_LIBS) $(CHECK_LIBS)

# Issue 19: KV offload in `kvsim run` (sim/offload.c; docs/run.md "KV
# offload"): a synthetic workload that never skips, and the Mooncake
# conversation trace of ../shared/traces (exit 77 without it).
TESTS += %reldir%/offload.sh %reldir%/offload_mooncake.sh
EXTRA_DIST += %reldir%/offload.sh %reldir%/offload_mooncake.sh \
	%reldir%/offload/syn.yaml %reldir%/offload/timing.yaml \
	%reldir%/offload/timing.csv examples/cpu-offload-mooncake.yaml

# Issue 20 engine knobs: pipeline parallel, CPU weight offload, fp8
# quantization and the partial-prefill keys (docs/run.md "Scheduler and
# engine knobs"): their sizing and cost terms, and `kvsim run` with them.
%canon_reldir%_check_cost_SOURCES += sim/cost_knobs.c
check_PROGRAMS += %reldir%/check_knobs
%canon_reldir%_check_knobs_SOURCES = %reldir%/check_knobs.c sim/cost.c \
	sim/cost_knobs.c sim/calib.c
%canon_reldir%_check_knobs_CFLAGS = $(KV_TEST_CFLAGS) $(YAML_CFLAGS)
%canon_reldir%_check_knobs_LDADD = sim/model/libmodel.la util/libutil.la \
	$(KV_TEST_LIBS) $(YAML_LIBS) -lm
TESTS += %reldir%/knobs.sh
EXTRA_DIST += %reldir%/knobs.sh examples/engine-knobs.yaml

# Issue 20: parallel sampling (n > 1) in `kvsim run` (docs/run.md
# "Parallel sampling"): the fanned-out request by hand, shared prompt
# blocks under vllm-v1 and vllm-v0, bad values.
TESTS += %reldir%/nsamp.sh
EXTRA_DIST += %reldir%/nsamp.sh %reldir%/nsamp/tiny.yaml \
	%reldir%/nsamp/share.yaml examples/parallel-sampling.yaml

# Issue 20, LoRA adapters (core/kvs_lora.c; docs/scheduler.md R100-R109):
# hash separation across adapters, refusals, max_loras under kvs_audit.
check_PROGRAMS += %reldir%/check_lora
%canon_reldir%_check_lora_SOURCES = %reldir%/check_lora.c
%canon_reldir%_check_lora_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_lora_LDADD = $(KV_TEST_LIBS)
# LoRA in `kvsim run` (docs/lora.md): the trace column, the Zipf
# generator, max_loras 1 vs 4, sizing, config.yaml, bad values.
TESTS += %reldir%/lora.sh
EXTRA_DIST += %reldir%/lora.sh %reldir%/lora/trace.csv \
	%reldir%/lora/trace.yaml %reldir%/lora/bad_max_loras.yaml \
	%reldir%/lora/bad_rank.yaml %reldir%/lora/bad_fraction.yaml \
	examples/lora-zipf.yaml
# LoRA in `kvsim run` (sim/lora.c): configuration keys, adapter size, the
# replica's adapter caches and their load times, derived by hand.
check_PROGRAMS += %reldir%/check_lora_run
%canon_reldir%_check_lora_run_SOURCES = %reldir%/check_lora_run.c \
	sim/lora.c sim/lora.h sim/cost_lora.c sim/cost_lora.h
%canon_reldir%_check_lora_run_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_lora_run_LDADD = $(KV_TEST_LIBS)

# Speculative decoding in a run (issue 20, docs/speculative.md): acceptance draws,
# the speculative_config keys and refusals, sizing and the drafter's time
# (check_spec_run); `kvsim run` and `kvsim capacity` with EAGLE (spec_run.sh).
check_PROGRAMS += %reldir%/check_spec_run
%canon_reldir%_check_spec_run_SOURCES = %reldir%/check_spec_run.c
%canon_reldir%_check_spec_run_CFLAGS = $(KV_TEST_CFLAGS) $(GSL_CFLAGS) \
	$(YAML_CFLAGS)
%canon_reldir%_check_spec_run_LDADD = sim/libsim.la sim/model/libmodel.la \
	reports/librpt.la workloads/libwl.la util/libutil.la \
	core/libkvcore.la $(GSL_LIBS) $(YAML_LIBS) $(CHECK_LIBS)
TESTS += %reldir%/spec_run.sh
EXTRA_DIST += %reldir%/spec_run.sh examples/spec-eagle.yaml

# speculative decoding in policy vllm-v1 (issue 20, core/kvs_spec.c)
check_PROGRAMS += %reldir%/check_spec
%canon_reldir%_check_spec_SOURCES = %reldir%/check_spec.c
%canon_reldir%_check_spec_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_spec_LDADD = $(KV_TEST_LIBS)

# Issue 20 item 5: `kvsim run --vllm-args` (sim/vllmargs.c, docs/run.md
# "vLLM's own flags"): the splitter and the option table (check_vllmargs),
# and runs by --vllm-args against the same runs by --set (vllm_args.sh).
check_PROGRAMS += %reldir%/check_vllmargs
%canon_reldir%_check_vllmargs_SOURCES = %reldir%/check_vllmargs.c
%canon_reldir%_check_vllmargs_CFLAGS = $(KV_TEST_CFLAGS) $(GSL_CFLAGS) \
	$(YAML_CFLAGS)
%canon_reldir%_check_vllmargs_LDADD = sim/libsim.la sim/model/libmodel.la \
	reports/librpt.la workloads/libwl.la util/libutil.la \
	core/libkvcore.la $(GSL_LIBS) $(YAML_LIBS) $(CHECK_LIBS)
TESTS += %reldir%/vllm_args.sh
EXTRA_DIST += %reldir%/vllm_args.sh

# Pipeline parallel's batches in flight (docs/scheduler.md R122): a
# replica's timeline by hand for 2 stages, and kvsim run's throughput and
# inter-token time with them.
check_PROGRAMS += %reldir%/check_replica_pp
%canon_reldir%_check_replica_pp_SOURCES = %reldir%/check_replica_pp.c
%canon_reldir%_check_replica_pp_CFLAGS = $(KV_TEST_CFLAGS) $(GSL_CFLAGS) \
	$(YAML_CFLAGS)
%canon_reldir%_check_replica_pp_LDADD = sim/libsim.la sim/model/libmodel.la \
	reports/librpt.la workloads/libwl.la util/libutil.la \
	core/libkvcore.la $(GSL_LIBS) $(YAML_LIBS) $(CHECK_LIBS)
TESTS += %reldir%/pp_inflight.sh
EXTRA_DIST += %reldir%/pp_inflight.sh %reldir%/pp/saturate.yaml

# v0fork: parallel sampling by forked sequences (vllm-v0)
check_PROGRAMS += %reldir%/check_ff
%canon_reldir%_check_ff_SOURCES = %reldir%/check_ff.c
%canon_reldir%_check_ff_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_ff_LDADD = $(KV_TEST_LIBS)
check_PROGRAMS += %reldir%/check_keyed
%canon_reldir%_check_keyed_SOURCES = %reldir%/check_keyed.c
%canon_reldir%_check_keyed_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_keyed_LDADD = $(KV_TEST_LIBS)
check_PROGRAMS += %reldir%/check_fork
%canon_reldir%_check_fork_SOURCES = %reldir%/check_fork.c
%canon_reldir%_check_fork_CFLAGS = $(KV_TEST_CFLAGS)
%canon_reldir%_check_fork_LDADD = $(KV_TEST_LIBS)
