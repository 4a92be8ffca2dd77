#!/bin/sh
# kvsim validate: every policy, with swap and recompute preemption and
# with and without prefix caching, runs on the host backend with zero
# integrity failures and an exact fragmentation count (vLLM v0's stale
# cached tokens are counted apart, as an engine hazard), hybrid models
# (Mamba state, sliding-window and full groups) included; every fault of
# the fault backend fails the run (exit 1), in any group, and a fault run
# whose fault never fired fails too, naming the fault; the digest does
# not depend on the layout or copy strategy; a Mamba state hit on a block
# the same step computes (vLLM v1 at the pinned commit) fails, and passes
# with vLLM's later fix; a hit on a block that priority scheduling withdrew
# from the step that filled it fails too; reports are written, and an
# earlier run's are replaced only with --force; bad usage exits 2.
: "${KVSIM:?}" "${top_srcdir:?}"
cfg=$top_srcdir/tests/gpu/swap.yaml
tmp=${TMPDIR:-/tmp}/kvsim-validate.$$
mkdir -p "$tmp" || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# run NAME EXPECTED-RC ARGS...: output in $tmp/NAME.out
run() {
	name=$1 want=$2
	shift 2
	"$KVSIM" validate -q "$@" >"$tmp/$name.out" 2>&1
	got=$?
	[ "$got" -eq "$want" ] ||
		{ cat "$tmp/$name.out"; fail "$name: exit $got, want $want"; }
}

val() {	# val NAME KEY: a value of validate_summary.csv
	sed -n "s/^$2,//p" "$tmp/$1/validate_summary.csv"
}

for p in vllm-v0 vllm-v1 sarathi deepspeed-fastgen kvsim; do
	for m in swap recompute; do
		case $p:$m in
		vllm-v1:swap | sarathi:swap | deepspeed-fastgen:swap) continue ;;
		esac
		for pc in true false; do
			extra=
			if [ $p = deepspeed-fastgen ]; then
				# no prefix caching, no CPU pool; FastGen
				# stalls on 96 blocks (a scheduler matter)
				[ $pc = true ] && continue
				extra="--set engine.swap_space=0
				       --set engine.num_gpu_blocks_override=256"
			fi
			n=$p-$m-$pc
			run "$n" 0 "$cfg" --set policy=$p \
				--set engine.preemption_mode=$m \
				--set engine.enable_prefix_caching=$pc $extra \
				--out "$tmp/$n"
			[ "$(val "$n" failures)" = 0 ] || fail "$n: failures"
			[ "$(val "$n" frag_poison_slots)" = \
			  "$(val "$n" frag_unwritten_slots)" ] ||
				fail "$n: fragmentation count"
			[ "$(val "$n" full_checks)" -ge 160 ] ||
				fail "$n: not every request checked whole"
			pre=$(val "$n" preempt_$m)
			[ "$pre" -gt 0 ] || fail "$n: no $m preemption"
			if [ $m = swap ]; then
				grep -q '^swap_out,[1-9]' "$tmp/$n/validate.csv" ||
					fail "$n: no swap-out copies"
			fi
		done
	done
done
head -1 "$tmp/vllm-v0-swap-true/validate.csv" | grep -qx \
	'class,batches,blocks,chunks,bytes,measured_ns,submit_ns,model_ns,sim_charged_ns' ||
	fail "validate.csv header"
ls -a "$tmp/vllm-v0-swap-true" | grep -q tmp && fail "temporary file left"
# vLLM v0 counts a waiting request's cached tokens again at each look
# (PR #18957 drops the memo of a request it does not admit): none stale
# here (64 when kvsim kept the first count), none without prefix caching
[ "$(val vllm-v0-swap-true stale_cached_tokens)" = 0 ] ||
	fail "vllm-v0: stale cached tokens"
[ "$(val vllm-v0-swap-false stale_cached_tokens)" = 0 ] ||
	fail "vllm-v0 without prefix caching: stale cached tokens"
[ "$(val vllm-v1-recompute-true stale_cached_tokens)" = 0 ] ||
	fail "vllm-v1: stale cached tokens"
# v0case NAME FILE SEED KEY [N]: tests/gpu/FILE with seed SEED passes
# with an exact fragmentation count and a positive KEY; for
# stale_cached_tokens, with --engine-hazards skip it fails N times
v0case() {
	run "$1" 0 "$top_srcdir/tests/gpu/$2" --seed "$3" --out "$tmp/$1"
	[ "$(val "$1" failures)" = 0 ] || fail "$1: failures"
	[ "$(val "$1" frag_poison_slots)" = \
	  "$(val "$1" frag_unwritten_slots)" ] || fail "$1: fragmentation"
	[ "$(val "$1" "$4")" -gt 0 ] || fail "$1: no $4"
	[ "$4" = stale_cached_tokens ] || return 0
	# left as the engine leaves them, the stale tokens fail (the count
	# before they were counted, below)
	run "$1-skip" 1 "$top_srcdir/tests/gpu/$2" --seed "$3" \
		--engine-hazards skip --out "$tmp/$1-skip"
	[ "$(val "$1-skip" failures)" = "$5" ] || fail "$1: skipped: failures"
}
# ... and takes blocks v0 marked computed after a prompt's first chunk,
# left in the cache by a preemption before the rest ran (6 integrity
# failures before they were counted)
v0case v0chunk v0-chunked-prefix.yaml 11 stale_cached_tokens 6
# ... and, with sessions, could promote a decode's filling block onto a
# cached block another request allocated and has not computed (2
# integrity failures before they were counted, 30 stale tokens while
# kvsim kept a waiting request's first count of cached tokens): with the
# count taken at admission (PR #18957) the next turn's first chunk starts
# at the block the decode fills, so none is promoted uncomputed here
run v0promo 0 "$top_srcdir/tests/gpu/v0-promotion.yaml" --seed 13 \
	--out "$tmp/v0promo"
[ "$(val v0promo failures)" = 0 ] || fail "v0promo: failures"
[ "$(val v0promo stale_cached_tokens)" = 0 ] ||
	fail "v0promo: stale cached tokens"
# v0 computes again blocks it shares (its memo of cached tokens predates
# them): they hold the request's data and are not poisoned, which used to
# fail the other holder (2 false failures)
v0case v0share v0-shared-recompute.yaml 27 own_data_blocks
# vLLM v1's Mamba prefix caching: a state block a 512 tokens, each full
# one holding the state at its end, which a hit starts from (1 failure
# when the verifier kept one state a request)
run mamba 0 "$top_srcdir/tests/gpu/mamba-prefix.yaml" --frag-every 1 \
	--out "$tmp/mamba"
[ "$(val mamba failures)" = 0 ] || fail "mamba prefix: failures"
[ "$(val mamba frag_poison_slots)" = "$(val mamba frag_unwritten_slots)" ] ||
	fail "mamba prefix: fragmentation"
[ "$(val mamba state_checks)" -gt 0 ] || fail "mamba prefix: no state check"
# ... whose tables hold a block a 512 tokens in each of the ten state
# groups: a pool the allocator cannot serve one max_model_len request
# from is refused (it used to be taken, and the request waited forever)
run mamba-small 2 "$top_srcdir/tests/gpu/mamba-prefix.yaml" \
	--set engine.num_gpu_blocks_override=12
grep -q 'needs 20 blocks' "$tmp/mamba-small.out" ||
	fail "mamba prefix: small pool not refused"

# ... a hit on a state the same step computes: vLLM at the pinned commit
# takes it, an engine hazard the run counts (the hit's 512 tokens;
# --engine-hazards skip leaves them as the engine does: 1 failure,
# exit 1); with its later fix, which defers the admission a step, there is
# none
run same-step 0 "$top_srcdir/tests/gpu/mamba-same-step.yaml" \
	--out "$tmp/same-step"
[ "$(val same-step failures)" = 0 ] || fail "same-step hit: failures"
[ "$(val same-step stale_cached_tokens)" = 512 ] ||
	fail "same-step hit: not counted"
grep -q 'engine hazard: 512 tokens' "$tmp/same-step.out" ||
	fail "same-step hit: not reported"
[ "$(val same-step steps)" = 2 ] || fail "same-step hit: steps"
run same-step-skip 1 "$top_srcdir/tests/gpu/mamba-same-step.yaml" \
	--engine-hazards skip --out "$tmp/same-step-skip"
[ "$(val same-step-skip failures)" = 1 ] || fail "same-step hit: not caught"
[ "$(val same-step-skip engine_hazards)" = skip ] ||
	fail "same-step hit: engine_hazards"
grep -q 'request 1 group 0 state after 512 tokens' \
	"$tmp/same-step-skip.out" || fail "same-step hit: not named"
# ... over two state blocks, the first computed a step earlier: the hit
# keeps only its last state block, so all 1024 tokens are stale (the
# verifier looked for the state after 512 tokens, which the request does
# not hold, and failed the run)
run late 0 "$top_srcdir/tests/gpu/mamba-same-step-late.yaml" --out "$tmp/late"
[ "$(val late failures)" = 0 ] || fail "late same-step hit: failures"
[ "$(val late stale_cached_tokens)" = 1024 ] ||
	fail "late same-step hit: $(val late stale_cached_tokens) stale"
run late-skip 1 "$top_srcdir/tests/gpu/mamba-same-step-late.yaml" \
	--engine-hazards skip --out "$tmp/late-skip"
grep -q 'request 1 group 0 state after 1024 tokens' "$tmp/late-skip.out" ||
	fail "late same-step hit: not named"
run late-defer 0 "$top_srcdir/tests/gpu/mamba-same-step-late.yaml" \
	--set engine.defer_same_step_state_hits=true --engine-hazards skip \
	--out "$tmp/late-defer"
[ "$(val late-defer stale_cached_tokens)" = 0 ] || fail "late deferred: stale"
run deferred 0 "$top_srcdir/tests/gpu/mamba-same-step.yaml" \
	--set engine.defer_same_step_state_hits=true --engine-hazards skip \
	--out "$tmp/deferred"
[ "$(val deferred failures)" = 0 ] || fail "deferred hit: failures"
[ "$(val deferred stale_cached_tokens)" = 0 ] || fail "deferred hit: stale"
[ "$(val deferred steps)" = 3 ] || fail "deferred hit: steps"
[ "$(val deferred state_checks)" -gt 0 ] || fail "deferred hit: no state"

# ... and a block cached by a request that priority scheduling withdrew
# from the step that filled it, hit later (open upstream): 1 stale token;
# left unwritten, 2 failures at that position; under fcfs none
run withdraw 0 "$top_srcdir/tests/gpu/v1-priority-withdraw.yaml" \
	--out "$tmp/withdraw"
[ "$(val withdraw failures)" = 0 ] || fail "withdrawn block: failures"
[ "$(val withdraw stale_cached_tokens)" = 1 ] ||
	fail "withdrawn block: not counted"
run withdraw-skip 1 "$top_srcdir/tests/gpu/v1-priority-withdraw.yaml" \
	--engine-hazards skip --out "$tmp/withdraw-skip"
[ "$(val withdraw-skip failures)" = 2 ] || fail "withdrawn block: not caught"
grep -q 'request 2 group 0 position 3 .* got deadbeef' \
	"$tmp/withdraw-skip.out" || fail "withdrawn block: not named"
run withdraw-fcfs 0 "$top_srcdir/tests/gpu/v1-priority-withdraw.yaml" \
	--set engine.scheduling_policy=fcfs --engine-hazards skip \
	--out "$tmp/withdraw-fcfs"
[ "$(val withdraw-fcfs failures)" = 0 ] || fail "withdrawn block: fcfs fails"
[ "$(val withdraw-fcfs stale_cached_tokens)" = 0 ] ||
	fail "withdrawn block: fcfs stale"
run hazards-bad 2 "$top_srcdir/tests/gpu/v1-priority-withdraw.yaml" \
	--engine-hazards frob
grep -q -- '--engine-hazards: write or skip' "$tmp/hazards-bad.out" ||
	fail "--engine-hazards frob: message"

# the digest is the run's, whatever the layout and copy strategy
d0=$(val vllm-v0-swap-true digest)
run lay 0 "$cfg" --layout cross-layer --strategy gather --out "$tmp/lay"
[ "$(val lay digest)" = "$d0" ] || fail "digest depends on the layout"
run seed 0 "$cfg" --seed 7 --check --out "$tmp/seed"
[ "$(val seed digest)" != "$d0" ] || fail "digest ignores the seed"

# the verifier is not vacuous: every fault fails the run
for f in corrupt drop reorder; do
	run fault-$f 1 "$cfg" --backend fault:$f
	grep -q 'FAILED: [1-9][0-9]* integrity failure' "$tmp/fault-$f.out" ||
		fail "fault $f not reported"
	grep -q 'never fired\|missed it' "$tmp/fault-$f.out" &&
		fail "fault $f: fired and caught, reported otherwise"
done
# ... and a fault run cannot pass idle: a fault that never fired is exit 1
# naming it (a run that copies nothing, the default run, passed with "0
# failures"; so did fault:none and invert, which no step here exposes)
idle() {	# idle NAME WHAT ARGS...
	n=$1 what=$2
	shift 2
	run "$n" 1 "$@"
	grep -q "FAILED: $what" "$tmp/$n.out" || fail "$n: $(cat "$tmp/$n.out")"
	grep -q 'integrity: 0 failures' "$tmp/$n.out" || fail "$n: failures"
}
small="--set workload.max_requests=50"
# shellcheck disable=SC2086
idle idle-corrupt 'fault:corrupt never fired: the run copied no swap-out' \
	--backend fault:corrupt $small
# shellcheck disable=SC2086
idle idle-reorder 'fault:reorder never fired: .* of two or more blocks' \
	--backend fault:reorder:host $small
# shellcheck disable=SC2086
idle idle-fault 'fault:none injects nothing' --backend fault $small
idle fault-none 'fault:none injects nothing' "$cfg" --backend fault:none
idle fault-invert 'fault:invert never fired: no step swapped in onto a block its swap-out read' \
	"$cfg" --backend fault:invert
# a fault on offload or P/D moves, in a run that makes none, fails naming
# the move (tests/validate_moves.sh runs the ones that fire)
# shellcheck disable=SC2086
idle idle-store 'fault:corrupt/d2t never fired: the run copied no tier store batch' \
	--backend fault:corrupt/d2t $small
# shellcheck disable=SC2086
idle idle-peer 'fault:drop/peer never fired: the run copied no KV transfer batch' \
	--backend fault:drop/peer@last:host $small
run baddir 2 "$cfg" --backend fault:corrupt/sideways
grep -q "bad direction 'sideways'" "$tmp/baddir.out" || fail "dir msg"

# the model's own geometry (2 MiB blocks of Llama-3.1-8B), small pools
run model 0 "$top_srcdir/tests/gpu/model.yaml" --geometry model \
	--out "$tmp/model"
grep -q 'geometry (2097152 bytes a block)' "$tmp/model.out" ||
	fail "model geometry"
[ "$(val model preempt_swap)" -gt 0 ] || fail "model geometry: no swap"

# hybrid models under vllm-v1 with small pools that preempt: every KV
# cache group executed and verified, 0 failures, exact fragmentation.
# Granite 4.0-H: nine Mamba state groups and one attention group of 400
# tokens a block; Gemma 2: a sliding-window group and a full group (its
# window of 4096 tokens never moves at 1024), and the same model with a
# window of 64 tokens (tests/gpu/gemma-2-w64.config.json), whose sliding
# tables hold nulls.
hyb() {	# hyb NAME MODEL ARGS...: a clean vllm-v1 run
	n=$1 m=$2
	shift 2
	run "$n" 0 --set model="$m" --set policy=vllm-v1 \
		--set workload.max_requests=80 "$@" --out "$tmp/$n"
	[ "$(val "$n" failures)" = 0 ] || fail "$n: failures"
	[ "$(val "$n" frag_scans)" -gt 0 ] || fail "$n: no scan"
	[ "$(val "$n" frag_poison_slots)" = \
	  "$(val "$n" frag_unwritten_slots)" ] || fail "$n: fragmentation"
	[ "$(val "$n" preempt_recompute)" -gt 0 ] || fail "$n: no preemption"
}
# (the synchronous loop: its arrival timing is the one that preempts here)
hyb granite ibm-granite/granite-4.0-h-tiny \
	--set engine.max_model_len=2048 --set engine.num_gpu_blocks_override=60 \
	--set engine.async_scheduling=false
[ "$(val granite groups)" = 10 ] || fail "granite: groups"
[ "$(val granite state_checks)" -ge 720 ] ||
	fail "granite: 9 states of every request not verified"
hyb gemma google/gemma-2-9b \
	--set engine.max_model_len=1024 --set engine.num_gpu_blocks_override=140
[ "$(val gemma groups)" = 2 ] || fail "gemma: groups"
hyb gemma-w64 "$top_srcdir/tests/gpu/gemma-2-w64.config.json" \
	--set engine.max_model_len=1024 --set engine.max_num_seqs=64 \
	--set engine.max_num_batched_tokens=256 \
	--set engine.num_gpu_blocks_override=90
[ "$(val gemma-w64 window_skipped_slots)" -gt 0 ] ||
	fail "gemma-w64: the window never moved"

# corruption in a group other than 0 is caught: Granite under kvsim with
# swap preemption swaps a request group by group, so the last pair of a
# swap-out batch is a block of the last group (9, attention); the first
# is group 0's Mamba state
gr="--set model=ibm-granite/granite-4.0-h-tiny --set policy=kvsim
    --set engine.preemption_mode=swap --set engine.max_model_len=2048
    --set engine.num_gpu_blocks_override=20 --set workload.max_requests=80"
# shellcheck disable=SC2086
run granite-swap 0 $gr --out "$tmp/granite-swap"
[ "$(val granite-swap preempt_swap)" -gt 0 ] || fail "granite: no swap"
# shellcheck disable=SC2086
run granite-last 1 $gr --backend fault:corrupt@last
grep -q 'FAILED: .* request [0-9]* group 9 position' \
	"$tmp/granite-last.out" || fail "granite: group 9 fault not reported"
# shellcheck disable=SC2086
run granite-state 1 $gr --backend fault:drop
grep -q 'FAILED: .* request [0-9]* group 0 state after [0-9]* tokens' \
	"$tmp/granite-state.out" || fail "granite: state fault not reported"
run badpair 2 "$cfg" --backend fault:corrupt@x

# no device here: --backend cuda is refused before the run (exit 2)
check=$(dirname "$KVSIM")/../gpu/tools/kvsim-gpucheck
if ! "$check" --probe >/dev/null 2>&1; then
	run cuda 2 "$cfg" --backend cuda
	grep -q 'no CUDA device\|without CUDA' "$tmp/cuda.out" ||
		fail "cuda refusal message"
fi

# bad usage and input
run badlayout 2 "$cfg" --layout diagonal
run badgeom 2 "$cfg" --geometry huge
run badbackend 2 "$cfg" --backend tpu
grep -q "unknown backend 'tpu'" "$tmp/badbackend.out" || fail "backend msg"
printf 'model: meta-llama/Llama-3.1-8B\nengine: {block_size: x}\n' \
	>"$tmp/bad.yaml"
run badcfg 2 "$tmp/bad.yaml"
grep -q "bad.yaml:2:" "$tmp/badcfg.out" || fail "FILE:LINE of bad input"
# an earlier run's reports are kept unless --force (a failing fault run
# once replaced a passing run's validate.csv)
cp "$tmp/lay/validate_summary.csv" "$tmp/keep.csv"
run overwrite 2 "$cfg" --backend fault:drop --out "$tmp/lay"
grep -q 'refusing to overwrite' "$tmp/overwrite.out" || fail "no refusal"
cmp -s "$tmp/lay/validate_summary.csv" "$tmp/keep.csv" ||
	fail "a refused run changed the reports"
run forced 0 "$cfg" --seed 7 --out "$tmp/lay" --force
[ "$(val lay digest)" = "$(val seed digest)" ] ||
	fail "--force did not replace the reports"
echo "validate: ok"
