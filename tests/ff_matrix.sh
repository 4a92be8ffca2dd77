#!/bin/sh
# ff_matrix.sh -- the fast-forward of steady decode changes nothing
# (docs/fastforward.md): each case runs twice, with the fast-forward and
# with single steps only (--no-fast-forward, or KVSIM_NO_FAST_FORWARD=1 on
# alternate cases, so both switches are proved), and requests.csv,
# timeseries.csv and groups.csv must be byte-identical, and summary.csv
# too but for its sim_wall_s column (found by name, the header compared
# whole).  KVSIM_FF_REPORT=1 makes each run say how many of its steps the
# fast-forward made: a case marked "ff" must have made some there (a
# comparison of two single-step runs proves nothing) and none with the
# switch; a case marked "-" is one the fast-forward does not cover (it
# falls back to single steps), and must make none.  Some cases must also
# have written timeseries rows from inside spans, or left spans' last
# steps in flight (tails), made steps after those and ended some of them
# at a later arrival, or made the steps that admit requests held for them
# and gone on past them, or none of them.
#
# The cases: every built-in policy; vllm-v1 with prefix caching off, async
# scheduling off, a constant step time, priority scheduling, a KV cache
# small enough for recompute preemptions, an overload queued behind
# max_num_seqs, a generator's sessions with shared system prompts, a
# sliding-window model, an MLA
# model, a hybrid Mamba model, three replicas, a closed loop of clients
# (max_concurrency) and client timeouts, an API server slower than the
# steps and one slow to take requests in, timeseries rows every 5 ms (written inside spans: alone, with
# three replicas, and not with clients), the long-context Mooncake trace;
# vllm-v0 with swap preemption; and the features that fall back:
# speculative decoding, LoRA, parallel sampling (fanned out and forked),
# pipeline batches in flight, KV offload and P/D disaggregation.  The
# spans take the arrivals in (docs/fastforward.md, item 11) but where
# KVSIM_NO_TAKE_IN=1 runs the "-plain" cases, which prove the spans that
# end at each arrival (their tails and the steps after them).
: "${KVSIM:?}" "${top_srcdir:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-ffm.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
traces=${KVSIM_TRACES:-}
ex="$top_srcdir/examples"
fail=0
n=0
side=f
. "$top_srcdir/tests/matrix_lib.sh"

# steps ERRFILE: the steps the fast-forward made, from KVSIM_FF_REPORT
steps() {
	sed -n 's/^kvsim run: fast-forward: \([0-9]*\) of .*/\1/p' "$1"
}

# counted NAME WHAT SEDEXPR MIN MAX: the fast-forward run of case NAME
# says (KVSIM_FF_REPORT) it made at least MIN (at most MAX, - for any) of
# WHAT, the number SEDEXPR takes from its report, and the single-step
# run none
counted() {
	r=$(sed -n "$3" "$T/$1.f.err")
	z=$(sed -n "$3" "$T/$1.s.err")
	if [ -z "$r" ] || [ "$r" -lt "$4" ] ||
	    { [ "$5" != - ] && [ "$r" -gt "$5" ]; } || [ "${z:-x}" != 0 ]; then
		echo "FAIL $1: ${r:-no} $2 (single steps: ${z:-no}), want" \
		    "$4 to $5"
		fail=1
	else
		echo "ok $1: $r $2"
	fi
}

# rows NAME MIN MAX: timeseries rows written from inside spans (the rows'
# own writer proved)
rows() {
	counted "$1" "timeseries rows inside spans" \
	    's/^kvsim run: fast-forward rows: \([0-9]*\) of .*/\1/p' "$2" "$3"
}

# tails NAME MIN MAX: spans that left their last step in flight, its end
# made at its own time (docs/fastforward.md)
tails() {
	counted "$1" "spans with a tail" \
	    's/^kvsim run: fast-forward spans: [0-9]*, \([0-9]*\) .*/\1/p' \
	    "$2" "$3"
}

# exts NAME MIN MAX: steps made after a span's tail, until an arrival could
# join one; caught NAME MIN MAX: those of them ended at a later arrival,
# before its service in the API server (replica_ff_catch)
exts() {
	counted "$1" "steps after tails" \
	    's/^kvsim run: fast-forward steps after tails: \([0-9]*\),.*/\1/p' \
	    "$2" "$3"
}
# admits NAME MIN MAX: steps of spans that admitted the requests held for
# them (replica_ff), their time taken once the scheduler chose them;
# past NAME MIN MAX: those the span went on past, with the requests they
# admitted running
admits() {
	counted "$1" "admission steps in spans" \
	    's/^kvsim run: fast-forward admissions: \([0-9]*\) .*/\1/p' \
	    "$2" "$3"
}
past() {
	counted "$1" "admission steps gone past" \
	    's/^kvsim run: fast-forward admissions: [0-9]*[^,]*, \([0-9]*\) .*/\1/p' \
	    "$2" "$3"
}
# taken NAME MIN MAX: arrivals the spans took in before their time (held
# or admitted inside the span, their API-server work done by its walk)
taken() {
	counted "$1" "arrivals taken in" \
	    's/^kvsim run: fast-forward arrivals taken in: \([0-9]*\) .*/\1/p' \
	    "$2" "$3"
}
# plain NAME ff|- ARGS...: one's case with spans that take no arrival in
# (KVSIM_NO_TAKE_IN=1), each ending before the next arrival: the tails,
# the steps after them and their catching up at arrivals proved
plain() {
	KVSIM_NO_TAKE_IN=1
	export KVSIM_NO_TAKE_IN
	one "$@"
	unset KVSIM_NO_TAKE_IN
}
caught() {
	counted "$1" "steps after tails ended at an arrival" \
	    's/^kvsim run: fast-forward steps after tails: [0-9]*, \([0-9]*\) .*/\1/p' \
	    "$2" "$3"
}

# one NAME ff|- ARGS...: the case run both ways and compared
one() {
	name=$1 want=$2
	shift 2
	n=$((n + 1))
	if [ $((n % 2)) -eq 0 ]; then
		env KVSIM_FF_REPORT=1 "$KVSIM" run -q --no-plot \
		    --out "$T/$name.s" --no-fast-forward "$@" \
		    >/dev/null 2>"$T/$name.s.err"
	else
		env KVSIM_FF_REPORT=1 KVSIM_NO_FAST_FORWARD=1 "$KVSIM" run \
		    -q --no-plot --out "$T/$name.s" "$@" \
		    >/dev/null 2>"$T/$name.s.err"
	fi || { echo "FAIL $name: single steps: $(cat "$T/$name.s.err")"
		fail=1; return; }
	env KVSIM_FF_REPORT=1 "$KVSIM" run -q --no-plot --out "$T/$name.f" \
	    "$@" >/dev/null 2>"$T/$name.f.err" ||
	    { echo "FAIL $name: fast-forward: $(cat "$T/$name.f.err")"
	      fail=1; return; }
	same "$name" s f || return
	s=$(steps "$T/$name.s.err")
	f=$(steps "$T/$name.f.err")
	all=$(sed -n 's/^kvsim run: fast-forward: [0-9]* of \([0-9]*\).*/\1/p' \
	    "$T/$name.f.err")
	if [ "$s" != 0 ]; then
		echo "FAIL $name: single steps made ${s:-?} steps at once"
		fail=1
	elif [ "$want" = ff ] && [ "${f:-0}" -eq 0 ]; then
		echo "FAIL $name: the fast-forward made no step"
		fail=1
	elif [ "$want" = - ] && [ "${f:-1}" -ne 0 ]; then
		echo "FAIL $name: a case not covered made ${f:-?} steps at once"
		fail=1
	else
		echo "ok $name: $f of $all steps fast-forwarded"
	fi
}

R="--set workload.max_requests=400"
one default ff $R
taken default 300 -
admits default 100 -
past default 100 -
plain default-plain ff $R
taken default-plain 0 0
tails default-plain 100 -
exts default-plain 100 -
caught default-plain 10 -
admits default-plain 100 -
past default-plain 100 -
one noprefix ff $R --set engine.enable_prefix_caching=false
one sync ff $R --set engine.async_scheduling=false
taken sync 0 0
tails sync 0 0
exts sync 0 0
admits sync 0 0
past sync 0 0
one stepns ff $R --set cost.step_ns=20000000
exts stepns 100 -
one priority ff $R --set engine.scheduling_policy=priority
admits priority 100 -
past priority 100 -
S="--set engine.max_model_len=4096 --set engine.num_gpu_blocks_override=300"
one preempt ff $R $S
pos preempt preemptions
admits preempt 10 -
past preempt 10 -
one replicas3 ff $R --set replicas=3 --set router=least-outstanding
taken replicas3 0 0
tails replicas3 100 -
exts replicas3 0 0
admits replicas3 100 -
past replicas3 20 -
# overload behind max_num_seqs: requests wait while the batch is full
one seqlimit ff $R --set workload.time_scale=0.2 --set engine.max_num_seqs=16
pos seqlimit queue_p50_s
admits seqlimit 100 -
past seqlimit 10 -
# a generator's bursts, shared system prompts and sessions of several
# turns: prompts by their ids, prefix hits at admissions, and arrivals
# taken in with their ids
cat >"$T/sessions.yaml" <<'EOF'
workload:
  seed: 5
  generator:
    requests: 400
    arrival: {process: gamma, rate: 8, cv: 2.5}
    prompt: {dist: lognormal, mean: 800, cv: 1.2, min: 16, max: 8192}
    output: {dist: uniform, min: 1, max: 400}
    prefix: {systems: 4, zipf_s: 1.0, length: 300}
    sessions: {turns: {dist: uniform, min: 1, max: 4}, think_s: 5}
EOF
one sessions ff "$T/sessions.yaml"
pos sessions prefix_hit_tokens
taken sessions 300 -
one sliding - $R --set model=mistralai/Mistral-7B-v0.1
one mla ff $R --set model=deepseek-ai/DeepSeek-V3 --set gpu=h200 \
    --set engine.tensor_parallel_size=8
one mamba - $R --set model=ibm-granite/granite-4.0-h-tiny \
    --set engine.max_model_len=8192
one clients ff $R --set workload.max_concurrency=8
taken clients 0 0
tails clients 0 0
exts clients 0 0
admits clients 0 0
past clients 0 0
# an API server slower than the steps: its FIFO never drains
printf 'frontend_stream_ns: 2e6\n' >"$T/slowfe.yaml"
one slow-frontend ff $R --set cost.calibration="$T/slowfe.yaml"
taken slow-frontend 300 -
plain slow-frontend-plain ff $R --set cost.calibration="$T/slowfe.yaml"
exts slow-frontend-plain 100 -
# an API server slow to take requests in (40 us a prompt token): steps go
# on long after each arrival, and later arrivals come in their time
printf 'frontend_tokenize_ns: 40000\n' >"$T/slowin.yaml"
one slow-input ff $R --set cost.calibration="$T/slowin.yaml"
taken slow-input 300 -
admits slow-input 100 -
past slow-input 100 -
plain slow-input-plain ff $R --set cost.calibration="$T/slowin.yaml"
tails slow-input-plain 100 -
exts slow-input-plain 500 -
caught slow-input-plain 100 -
admits slow-input-plain 100 -
past slow-input-plain 100 -
# and prompts over max_model_len refused there: a refused request holds
# no place in its FIFO, so it bounds nothing after it
one slow-input-refused ff $R --set cost.calibration="$T/slowin.yaml" \
    --set engine.max_model_len=1024
pos slow-input-refused rejected
taken slow-input-refused 100 -
plain slow-input-refused-plain ff $R \
    --set cost.calibration="$T/slowin.yaml" --set engine.max_model_len=1024
exts slow-input-refused-plain 100 -
one timeouts ff $R --set workload.timeout_s=2 $S
taken timeouts 0 0
tails timeouts 0 0
exts timeouts 0 0
admits timeouts 0 0
past timeouts 0 0
# timeseries rows inside spans: many to a span; with three replicas only
# up to the others' next event; with clients (which react to ends) none,
# the spans cut at each row as before (rows every 0.1 s: a span fits)
F="--set output.timeseries_interval_s=0.005"
one rows ff $R $F
rows rows 1000 -
taken rows 300 -
admits rows 100 -
past rows 100 -
plain rows-plain ff $R $F
rows rows-plain 1000 -
tails rows-plain 100 -
exts rows-plain 0 -
admits rows-plain 100 -
past rows-plain 100 -
one rows-replicas3 ff $R $F --set replicas=3 --set router=round-robin
rows rows-replicas3 100 -
tails rows-replicas3 100 -
one rows-clients ff $R --set output.timeseries_interval_s=0.1 \
    --set workload.max_concurrency=8
rows rows-clients 0 0
pos timeouts failed
for p in vllm-v0 sarathi deepspeed-fastgen kvsim; do
	one "policy-$p" - $R --set policy=$p
done
one v0swap - $R --set policy=vllm-v0 --set engine.preemption_mode=swap $S
pos v0swap swap_out_blocks
one spec - "$ex/spec-eagle.yaml" $R
one lora - "$ex/lora-zipf.yaml" $R
one nsamp-fanout ff "$ex/parallel-sampling.yaml" $R
one nsamp-fork - "$ex/parallel-sampling.yaml" $R --set policy=vllm-v0 \
    --set engine.parallel_sampling=fork
one pp - "$ex/engine-knobs.yaml" $R
one pd - "$ex/pd-azure.yaml" $R
mc=$traces/mooncake_fast25_conversation_trace.jsonl.gz
if [ -n "$traces" ] && [ -r "$mc" ]; then
	one mooncake ff --set workload.trace="$mc" \
	    --set workload.format=mooncake $R
	one offload - "$ex/cpu-offload-mooncake.yaml" $R \
	    --set workload.trace="$mc"
else
	echo "skip mooncake, offload: no Mooncake trace in '$traces'"
fi
exit $fail
