#!/bin/sh
# policy_defaults.sh -- each policy's own batch limits in `kvsim run`,
# `kvsim sweep` and `kvsim capacity` (docs/policies.md "Setup", docs/run.md):
#  1. run: with engine.max_num_seqs and engine.max_num_batched_tokens left
#     auto, config.yaml records each policy's limits (vllm-v1 vLLM serve's
#     8,192 / 1,024 on an H100; sarathi 512 / 128; deepspeed-fastgen
#     768 / 512; kvsim 2,048 / 128) -- every policy used to take vLLM's --
#     and the same run with those limits given is byte for byte the same
#     (requests.csv, run_id included: the limits given are the ones that
#     ran); sarathi's latencies are no longer vllm-v1's; a limit given
#     alone keeps the policy's other one;
#  2. config.yaml writes what the scheduler ran in place of `auto`
#     (enable_chunked_prefill, preemption_mode, scheduling_policy,
#     num_lookahead_slots; kvsim's per-victim preemption stays auto), and
#     running it again gives the same requests.csv and config.yaml;
#  3. a policy's refusal of a limit given against its default is the run's
#     error (sarathi: chunk_size below max_num_seqs), exit 2;
#  4. capacity: the policy set by --across or by --set takes its own
#     limits: a sarathi configuration's row equals the one with 512 / 128
#     given, and differs from vllm-v1's;
#  5. sweep: a policy swept as an axis (and one set in the base file) takes
#     its own limits at each point;
#  6. a plugin policy on the exact allocator (examples/plugin/spf.c) takes
#     its own limits too, those that follow the run's max_model_len
#     included: 64 sequences and max(max_model_len, 2048) tokens (skipped
#     when the build made no shared objects).
set -u
: "${KVSIM:=../sim/kvsim}"
: "${top_srcdir:=..}"
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-pold.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
val() { c=$(col "$1" "$2"); sed -n "${3:-2}p" "$1" | cut -d, -f"$c"; }
# the value of engine key KEY in a config.yaml
ekey() { sed -n "s/^  $2: //p" "$1"; }

RUN="$KVSIM run -q --no-plot --set workload.max_requests=300"

# 1.
for pl in vllm-v1:8192:1024 sarathi:512:128 deepspeed-fastgen:768:512 \
    kvsim:2048:128; do
	p=${pl%%:*}; rest=${pl#*:}; tok=${rest%%:*}; seqs=${rest#*:}
	$RUN --set policy=$p --out "$T/$p" || { bad "run $p"; continue; }
	c="$T/$p/config.yaml"
	[ "$(ekey "$c" max_num_batched_tokens)" = "$tok" ] &&
		[ "$(ekey "$c" max_num_seqs)" = "$seqs" ] ||
		bad "$p: limits $(ekey "$c" max_num_batched_tokens) / $(ekey "$c" max_num_seqs), want $tok / $seqs"
	$RUN --set policy=$p --set engine.max_num_batched_tokens=$tok \
		--set engine.max_num_seqs=$seqs --out "$T/$p-given" ||
		bad "run $p with its limits given"
	cmp -s "$T/$p/requests.csv" "$T/$p-given/requests.csv" ||
		bad "$p: the limits given do not run as the defaults"
	# 2. round trip
	"$KVSIM" run -q --no-plot "$c" --out "$T/$p-again" ||
		bad "$p: config.yaml does not run"
	cmp -s "$T/$p/requests.csv" "$T/$p-again/requests.csv" ||
		bad "$p: config.yaml run again differs"
	grep -v '^#' "$c" >"$T/c1"
	grep -v '^#' "$T/$p-again/config.yaml" >"$T/c2"
	cmp -s "$T/c1" "$T/c2" || bad "$p: config.yaml run again writes another"
done
for k in ttft_p50_s ttft_p99_s tpot_p50_s e2e_p99_s; do
	[ "$(val "$T/sarathi/summary.csv" $k)" != \
	  "$(val "$T/vllm-v1/summary.csv" $k)" ] && break
	[ $k = e2e_p99_s ] && bad "sarathi's latencies are vllm-v1's"
done
# one limit given: the other is the policy's (sarathi: max_num_batched_tokens
# given alone is its chunk_size)
$RUN --set policy=sarathi --set engine.max_num_seqs=64 --out "$T/s64" ||
	bad "sarathi max_num_seqs 64"
[ "$(ekey "$T/s64/config.yaml" max_num_batched_tokens)" = 512 ] &&
	[ "$(ekey "$T/s64/config.yaml" max_num_seqs)" = 64 ] ||
	bad "sarathi with max_num_seqs 64: not 512 / 64"
$RUN --set policy=deepspeed-fastgen --set engine.max_num_batched_tokens=1024 \
	--out "$T/f1024" || bad "fastgen 1024"
[ "$(ekey "$T/f1024/config.yaml" max_num_seqs)" = 512 ] ||
	bad "fastgen with 1024 tokens: max_num_seqs not 512"

# 2. resolved settings in config.yaml
want() { # policy chunked preemption scheduling lookahead
	c="$T/$1/config.yaml"
	got="$(ekey "$c" enable_chunked_prefill) $(ekey "$c" preemption_mode) $(ekey "$c" scheduling_policy) $(ekey "$c" num_lookahead_slots)"
	[ "$got" = "$2 $3 $4 $5" ] || bad "$1: config.yaml has '$got', want '$2 $3 $4 $5'"
}
want vllm-v1 true recompute fcfs 0
want sarathi true recompute fcfs 0
want deepspeed-fastgen true recompute fcfs 0
want kvsim true auto fcfs 0
$RUN --set policy=vllm-v0 --out "$T/vllm-v0" || bad "run vllm-v0"
want vllm-v0 false recompute fcfs 0
"$KVSIM" run -q --no-plot "$T/vllm-v0/config.yaml" --out "$T/v0-again" &&
	cmp -s "$T/vllm-v0/requests.csv" "$T/v0-again/requests.csv" ||
	bad "vllm-v0: config.yaml run again differs"
$RUN --set policy=kvsim --set engine.preemption_mode=swap --out "$T/ks" ||
	bad "kvsim swap"
[ "$(ekey "$T/ks/config.yaml" preemption_mode)" = swap ] ||
	bad "kvsim: preemption_mode swap not recorded"

# 3.
$RUN --set policy=sarathi --set engine.max_num_seqs=1024 --out "$T/bad" \
	2>"$T/err"
[ $? -eq 2 ] || bad "sarathi with 1024 sequences and 512 tokens: not exit 2"
grep -q 'chunk_size must be at least max_num_seqs' "$T/err" ||
	{ bad "sarathi 1024 sequences: message"; cat "$T/err"; }
[ -e "$T/bad" ] && bad "a refused run left its --out"

# 4. capacity: --across and --set
F=$top_srcdir/tests/capacity/fixed.yaml
CAP="$KVSIM capacity -q $F --slo ttft_s:p99<=0.1 --seeds 1 --no-plot --set engine.max_num_seqs=auto"
$CAP --across policy=vllm-v1,sarathi --out "$T/ca" >/dev/null 2>&1 ||
	bad "capacity --across policy"
$CAP --set policy=sarathi --out "$T/cs" >/dev/null 2>&1 ||
	bad "capacity --set policy=sarathi"
$CAP --set policy=sarathi --set engine.max_num_seqs=128 \
	--set engine.max_num_batched_tokens=512 --out "$T/cg" >/dev/null 2>&1 ||
	bad "capacity sarathi 512 / 128 given"
for k in num_gpu_blocks kv_cache_tokens max_qps_under_slo min_fail_qps \
    simulations; do
	g=$(val "$T/cg/capacity.csv" $k)
	[ "$(val "$T/ca/capacity.csv" $k 3)" = "$g" ] ||
		bad "capacity --across sarathi: $k $(val "$T/ca/capacity.csv" $k 3), want $g"
	[ "$(val "$T/cs/capacity.csv" $k)" = "$g" ] ||
		bad "capacity --set sarathi: $k $(val "$T/cs/capacity.csv" $k), want $g"
done
[ "$(val "$T/ca/capacity.csv" num_gpu_blocks 2)" != \
  "$(val "$T/ca/capacity.csv" num_gpu_blocks 3)" ] ||
	bad "capacity: sarathi sized as vllm-v1"
[ "$(val "$T/ca/capacity.csv" max_qps_under_slo 2)" != \
  "$(val "$T/ca/capacity.csv" max_qps_under_slo 3)" ] ||
	bad "capacity: sarathi's answer is vllm-v1's"

# 5. sweep: policy as an axis, and from the base file
printf '%s\n' 'policy: sarathi' 'workload: {max_requests: 50}' \
	'sweep:' '  policy: [vllm-v1, deepspeed-fastgen, kvsim]' \
	'  seed: [0, 1]' >"$T/sw.yaml"
"$KVSIM" sweep -q --no-plot --jobs 2 "$T/sw.yaml" --out "$T/sw" ||
	bad "sweep over policies"
printf '%s\n' 'policy: sarathi' 'workload: {max_requests: 50}' \
	'sweep:' '  seed: [0, 1]' >"$T/sb.yaml"
"$KVSIM" sweep -q --no-plot --jobs 2 "$T/sb.yaml" --out "$T/sb" ||
	bad "sweep with sarathi in the base"
for d in "$T"/sw/points/* "$T"/sb/points/*; do
	c="$d/config.yaml"
	p=$(sed -n 's/^policy: "\(.*\)"$/\1/p' "$c")
	case $p in
	vllm-v1) w="8192 1024" ;;
	deepspeed-fastgen) w="768 512" ;;
	kvsim) w="2048 128" ;;
	sarathi) w="512 128" ;;
	*) bad "sweep point $d: policy '$p'"; continue ;;
	esac
	got="$(ekey "$c" max_num_batched_tokens) $(ekey "$c" max_num_seqs)"
	[ "$got" = "$w" ] || bad "sweep point $p: limits $got, want $w"
done
[ "$(ls "$T/sw/points" | wc -l)" = 6 ] || bad "sweep: not 6 points"
[ "$(ls "$T/sb/points" | wc -l)" = 2 ] || bad "sweep (base): not 2 points"

# 6.
so=$(cd "$(dirname "$KVSIM")/.." && pwd)/examples/plugin/.libs/libspf.so
if [ -f "$so" ]; then
	$RUN --set policy="$so" --set engine.max_model_len=4096 \
		--out "$T/spf" 2>"$T/err" || { bad "spf plugin run"; cat "$T/err"; }
	[ "$(ekey "$T/spf/config.yaml" max_num_batched_tokens) $(ekey "$T/spf/config.yaml" max_num_seqs)" = "4096 64" ] ||
		bad "spf plugin: limits not 4096 / 64"
fi
exit $fail
