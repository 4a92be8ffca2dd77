# sim/: the simulator library: the event engine, replicas and router, the
# run configuration, the cost model and its calibration, the replay
# interpreter and policy plugins.  It returns kv_err and messages; only the
# command line (sim/cli/) prints for the user or exits.
noinst_LTLIBRARIES += %reldir%/libsim.la
%canon_reldir%_libsim_la_SOURCES = \
	%reldir%/engine.c %reldir%/engine.h \
	%reldir%/replica.c %reldir%/replica.h \
	%reldir%/replica_int.h %reldir%/replica_ff.c \
	%reldir%/runcfg.c %reldir%/runcfg.h \
	%reldir%/run.c %reldir%/run.h \
	%reldir%/ctrace.c %reldir%/ctrace.h \
	%reldir%/cost.c %reldir%/cost.h \
	%reldir%/calib.c %reldir%/calib.h \
	%reldir%/calfit.c %reldir%/calfit.h \
	%reldir%/calkern.c %reldir%/calkern.h \
	%reldir%/calserve.c %reldir%/calserve.h \
	%reldir%/replay.c %reldir%/replay.h %reldir%/replay_int.h \
	%reldir%/replay_state.c %reldir%/replay_conn.c \
	%reldir%/replay_offload.c \
	%reldir%/replay_spec.c \
	%reldir%/plugin.c %reldir%/plugin.h \
	%reldir%/vllmver.c %reldir%/vllmver.h \
	%reldir%/tiers.c %reldir%/tiers.h \
	%reldir%/offload.c %reldir%/offload.h
%canon_reldir%_libsim_la_CFLAGS = $(AM_CFLAGS) $(GSL_CFLAGS)
# Prefill/decode disaggregation (docs/pd.md).
%canon_reldir%_libsim_la_SOURCES += %reldir%/pd.c %reldir%/pd.h \
	%reldir%/pdcfg.c %reldir%/pdcfg.h
# Issue 20 engine knobs (docs/run.md "Scheduler and engine knobs").
%canon_reldir%_libsim_la_SOURCES += %reldir%/runcfg_knobs.c \
	%reldir%/runcfg_knobs.h %reldir%/cost_knobs.c

# Parallel sampling fanned out in a replica (docs/run.md).
%canon_reldir%_libsim_la_SOURCES += %reldir%/replica_nsamp.c \
	%reldir%/replica_nsamp.h

# LoRA adapters (issue 20, docs/lora.md).
%canon_reldir%_libsim_la_SOURCES += %reldir%/lora.c %reldir%/lora.h \
	%reldir%/cost_lora.c %reldir%/cost_lora.h

# `kvsim run --vllm-args`: vllm serve's options onto the run keys
# (docs/run.md "vLLM's own flags").
%canon_reldir%_libsim_la_SOURCES += %reldir%/vllmargs.c %reldir%/vllmargs.h

# Speculative decoding (docs/speculative.md).
%canon_reldir%_libsim_la_SOURCES += %reldir%/runcfg_spec.c %reldir%/runcfg_spec.h \
	%reldir%/spec.c %reldir%/spec.h %reldir%/cost_spec.c %reldir%/cost_spec.h

# Pipeline parallel's batches in flight (docs/scheduler.md R122).
%canon_reldir%_libsim_la_SOURCES += %reldir%/replica_pp.c \
	%reldir%/replica_pp.h
