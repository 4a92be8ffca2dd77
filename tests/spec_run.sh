#!/bin/sh
# spec_run.sh -- speculative decoding in `kvsim run` and `kvsim capacity`
# (engine.speculative_config; docs/speculative.md):
#  1. a constant 10 ms step, one request of 32 prompt and 13 output
#     tokens: without speculation 13 steps; EAGLE k=3 with acceptance 1
#     takes 4 (1 + 3 verifies of 4 tokens), summary spec_mean_accepted_len
#     4 and spec_acceptance_rate 1; acceptance 0 takes 13 steps, one token
#     each (mean accepted length 1), and holds 4 blocks at most where the
#     run without holds 3 (lookahead and drafts); requests.csv counts the
#     drafts;
#  2. on the roofline model (a light load of the bundled trace), EAGLE
#     k=3 (acceptance 0.7 a position) takes fewer steps per output token,
#     accepts 0.511 of its drafts (0.7 + 0.7^2 + 0.7^3 of 3), and its
#     head's KV layer and lookahead slots leave fewer GPU blocks (more KV
#     per sequence); a run without it keeps its columns;
#     examples/spec-eagle.yaml runs;
#  3. determinism: the same seed gives the same requests.csv and
#     summary.csv bytes (less the wall-clock column), another seed not;
#     --check holds throughout (the allocator and scheduler invariants);
#  4. bad values exit 2 with FILE:LINE:COL (k 0, acceptance 1.5, a list
#     of the wrong length, an unknown method, eagle without a model) or the
#     --set; other policies and async scheduling set true are refused;
#  5. `kvsim capacity` answers "does EAGLE k=3 raise the SLO-meeting rate"
#     on a small trace: with and without, both complete with a rate.
set -u
: "${KVSIM:=../sim/kvsim}"
: "${top_srcdir:=..}"
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-spec.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
val() { c=$(col "$1" "$2"); [ -n "$c" ] && sed -n "${3:-2}p" "$1" | cut -d, -f"$c"; }

RUN="$KVSIM run -q --no-plot --check"
SC=engine.speculative_config
EAGLE="--set $SC.method=eagle --set $SC.num_speculative_tokens=3
       --set $SC.model=yuhuili/EAGLE-LLaMA3.1-Instruct-8B"

# 1.
printf 'arrival_s,prompt_tokens,output_tokens\n0,32,13\n' >"$T/one.csv"
ONE="--set workload.trace=$T/one.csv --set workload.format=kvsim
     --set cost.step_ns=10000000 --set engine.num_gpu_blocks_override=101
     --set engine.max_model_len=1600"
$RUN $ONE --out "$T/n" || bad "one request without speculation"
$RUN $ONE $EAGLE --set $SC.acceptance=1 --out "$T/a1" ||
	bad "one request, acceptance 1"
$RUN $ONE $EAGLE --set $SC.acceptance=0 --out "$T/a0" ||
	bad "one request, acceptance 0"
[ "$(val "$T/n/summary.csv" steps)" = 13 ] || bad "no spec: not 13 steps"
[ -z "$(col "$T/n/summary.csv" spec_acceptance_rate)" ] ||
	bad "no spec: spec columns in summary.csv"
[ -z "$(col "$T/n/requests.csv" spec_draft_tokens)" ] ||
	bad "no spec: spec columns in requests.csv"
[ "$(val "$T/a1/summary.csv" steps)" = 4 ] ||
	bad "acceptance 1: $(val "$T/a1/summary.csv" steps) steps, not 4"
[ "$(val "$T/a1/summary.csv" output_tokens)" = 13 ] ||
	bad "acceptance 1: not 13 output tokens"
[ "$(val "$T/a1/summary.csv" spec_mean_accepted_len)" = 4.000000 ] ||
	bad "acceptance 1: mean accepted length not 4"
[ "$(val "$T/a1/summary.csv" spec_acceptance_rate)" = 1.000000 ] ||
	bad "acceptance 1: rate not 1"
# 3 verifies of 3 drafts, all kept
[ "$(val "$T/a1/requests.csv" spec_draft_tokens)" = 9 ] ||
	bad "acceptance 1: not 9 drafts"
[ "$(val "$T/a1/requests.csv" spec_accepted_tokens)" = 9 ] ||
	bad "acceptance 1: not 9 accepted"
[ "$(val "$T/a0/summary.csv" steps)" = 13 ] ||
	bad "acceptance 0: $(val "$T/a0/summary.csv" steps) steps, not 13"
[ "$(val "$T/a0/summary.csv" spec_mean_accepted_len)" = 1.000000 ] ||
	bad "acceptance 0: mean accepted length not 1"
[ "$(val "$T/a0/requests.csv" spec_accepted_tokens)" = 0 ] ||
	bad "acceptance 0: drafts accepted"
[ "$(val "$T/a0/requests.csv" spec_draft_tokens)" = 36 ] ||
	bad "acceptance 0: not 12 verifies of 3 drafts"
# more KV a sequence: 45 tokens hold 3 blocks of 16 (of 100 usable);
# EAGLE's 3 lookahead slots and 3 drafts on top of them, a fourth
[ "$(val "$T/n/summary.csv" kv_usage_max)" = 0.030000 ] ||
	bad "no spec: not 3 blocks at most"
[ "$(val "$T/a0/summary.csv" kv_usage_max)" = 0.040000 ] ||
	bad "acceptance 0: not 4 blocks at most"

# 2.
L="--set workload.max_requests=200"
$RUN $L --out "$T/ln" || bad "light load without speculation"
$RUN $L $EAGLE --out "$T/le" || bad "light load with EAGLE"
spt() { awk -v s="$(val "$1/summary.csv" steps)" \
	-v o="$(val "$1/summary.csv" output_tokens)" 'BEGIN { print s / o }'; }
awk -v e="$(spt "$T/le")" -v n="$(spt "$T/ln")" 'BEGIN { exit !(e < 0.8 * n) }' ||
	bad "EAGLE: $(spt "$T/le") steps per output token, not below 0.8 x $(spt "$T/ln")"
bn=$(val "$T/ln/summary.csv" num_gpu_blocks)
be=$(val "$T/le/summary.csv" num_gpu_blocks)
[ "$be" -lt "$bn" ] 2>/dev/null ||
	bad "EAGLE: $be GPU blocks, not fewer than $bn"
# 0.7 a position, given the ones before: 0.7 + 0.49 + 0.343 of 3
r=$(val "$T/le/summary.csv" spec_acceptance_rate)
m=$(val "$T/le/summary.csv" spec_mean_accepted_len)
awk -v r="$r" -v m="$m" 'BEGIN { exit !(r > 0.48 && r < 0.54 &&
	m > 2.45 && m < 2.61) }' ||
	bad "EAGLE: acceptance rate $r, mean length $m; expected 0.511, 2.533"
grep -q "speculative_config:" "$T/le/config.yaml" ||
	bad "config.yaml has no speculative_config"
$RUN "$T/le/config.yaml" --out "$T/le2" || bad "config.yaml again"
cmp -s "$T/le/requests.csv" "$T/le2/requests.csv" ||
	bad "config.yaml run again: other requests.csv"

$RUN "$top_srcdir/examples/spec-eagle.yaml" --set workload.max_requests=40 \
	--out "$T/ex" || bad "examples/spec-eagle.yaml"
[ "$(val "$T/ex/summary.csv" completed)" = 40 ] ||
	bad "examples/spec-eagle.yaml: not 40 completed"

# 3.
$RUN $L $EAGLE --out "$T/le3" || bad "EAGLE again"
cmp -s "$T/le/requests.csv" "$T/le3/requests.csv" ||
	bad "same seed: other requests.csv"
$RUN $L $EAGLE --seed 7 --out "$T/le7" || bad "EAGLE seed 7"
cmp -s "$T/le/requests.csv" "$T/le7/requests.csv" &&
	bad "seed 7: the same requests.csv"

# 4.
refuse() {	# refuse WANT ARGS...
	want=$1; shift
	$RUN "$@" --out "$T/x" >"$T/err" 2>&1
	rc=$?
	[ "$rc" = 2 ] || bad "$want: exit $rc, not 2"
	grep -qF -- "$want" "$T/err" || { bad "$want: not said"; cat "$T/err"; }
	rm -rf "$T/x"
}
y() { printf 'engine:\n  speculative_config:\n%s\n' "$1" >"$T/bad.yaml"; }
y '    method: eagle
    model: h
    num_speculative_tokens: 0'
refuse "bad.yaml:5:29: $SC.num_speculative_tokens: expected an integer" \
	"$T/bad.yaml"
y '    method: ngram
    num_speculative_tokens: 2
    acceptance: 1.5'
refuse "bad.yaml:5:17: $SC.acceptance: expected a number in [0, 1]" \
	"$T/bad.yaml"
y '    method: ngram
    num_speculative_tokens: 2
    acceptance: [0.9, 0.8, 0.7]'
refuse "bad.yaml:5:17: $SC.acceptance: 3 values, expected one per" \
	"$T/bad.yaml"
y '    method: medusa'
refuse "bad.yaml:3:13: $SC.method: expected ngram, eagle" "$T/bad.yaml"
y '    method: eagle
    num_speculative_tokens: 3'
refuse "bad.yaml:3:13: $SC.model: method eagle needs" "$T/bad.yaml"
refuse "--set $SC.num_speculative_tokens=-1: $SC.num_speculative_tokens" \
	--set $SC.method=ngram --set $SC.num_speculative_tokens=-1
refuse "policy vllm-v0 has no speculative decoding" $EAGLE \
	--set policy=vllm-v0
refuse "--set engine.async_scheduling=true: engine.async_scheduling: kvsim runs speculative decoding on the synchronous loop" \
	$EAGLE --set engine.async_scheduling=true

# 5.
C="$KVSIM capacity -q --no-plot --slo tpot_s:p99<=0.02 --seeds 1 --jobs 1
   --max-sims 8 --set workload.max_requests=150"
$C --out "$T/cn" >"$T/cn.out" 2>&1 || { bad "capacity without"; cat "$T/cn.out"; }
$C $EAGLE --out "$T/ce" >"$T/ce.out" 2>&1 || { bad "capacity with EAGLE"; cat "$T/ce.out"; }
qn=$(val "$T/cn/capacity.csv" max_qps_under_slo)
qe=$(val "$T/ce/capacity.csv" max_qps_under_slo)
[ -n "$qn" ] && [ -n "$qe" ] || bad "capacity: no rate ($qn, $qe)"
echo "capacity under tpot_s:p99<=0.02: $qn req/s without, $qe with EAGLE k=3"

exit $fail
