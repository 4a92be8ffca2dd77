#!/bin/sh
# knobs.sh -- `kvsim run` with issue 20's engine knobs (docs/run.md
# "Scheduler and engine knobs"):
#  1. every key works in a file and with --set; a bad value is refused at
#     its FILE:LINE:COL (or its --set), exit 2, and so are vLLM's
#     SchedulerConfig refusals of the partial-prefill keys.
#  2. a run that gives a key its default is the run without it (the same
#     run id and files).
#  3. long_prefill_token_threshold caps chunks (a different run);
#     max_num_partial_prefills 2 makes vLLM derive the threshold as
#     int(max_model_len * 0.04) and is that run exactly.
#  4. pipeline_parallel_size 2: more than twice the KV tokens of one GPU,
#     and a slower batch than tensor_parallel_size 2 on the same GPUs;
#     one request at a time slower than one GPU (the sends), a loaded
#     replica faster (2 batches in flight).
#     kvsim capacity counts replicas x TP x PP GPUs.
#  5. quantization fp8: more KV tokens and faster steps; cpu_offload_gb 4:
#     more KV tokens, much slower steps.
#  6. config.yaml records the keys and runs again to the same results;
#     examples/engine-knobs.yaml runs.
set -u
: "${KVSIM:=../sim/kvsim}"
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-knobs.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
sval() { c=$(col "$1" "$2"); sed -n 2p "$1" | cut -d, -f"$c"; }
run() { # dir args...
	d=$1; shift
	"$KVSIM" run -q --no-plot --out "$T/$d" \
		--set workload.max_requests=120 --set workload.time_scale=0.02 \
		"$@" || bad "$d: run failed"
}
expect_bad() { # regex args...
	pat=$1; shift
	"$KVSIM" run -q --out "$T/bad" "$@" >/dev/null 2>"$T/err"
	rc=$?
	[ $rc -eq 2 ] || bad "$*: exit $rc, not 2"
	grep -Eq "$pat" "$T/err" || { bad "$*: message"; cat "$T/err"; }
	rm -rf "$T/bad"
}
# a > b as numbers
gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }

# 1.
printf 'engine:\n  block_size: 16\n  quantization: awq\n' >"$T/q.yaml"
expect_bad "q.yaml:3:17: engine.quantization: kvsim models fp8 only.*awq, awq_marlin, gptq" "$T/q.yaml"
printf 'engine:\n  cpu_offload_gb: -2\n' >"$T/o.yaml"
expect_bad "o.yaml:2:19: engine.cpu_offload_gb: expected GiB, a number >= 0" "$T/o.yaml"
printf 'engine:\n  pipeline_parallel_size: 0\n' >"$T/p.yaml"
expect_bad "p.yaml:2:27: engine.pipeline_parallel_size: expected an integer in \\[1, 64\\]" "$T/p.yaml"
expect_bad "^--set engine.long_prefill_token_threshold=-1: engine.long_prefill_token_threshold: expected an integer in \\[0," \
	--set engine.long_prefill_token_threshold=-1
expect_bad "^--set engine.max_num_partial_prefills=0: engine.max_num_partial_prefills: expected an integer in \\[1," \
	--set engine.max_num_partial_prefills=0
expect_bad "^--set engine.max_long_partial_prefills=x: " \
	--set engine.max_long_partial_prefills=x
printf 'engine:\n  max_long_partial_prefills: 3\n  max_num_partial_prefills: 2\n' >"$T/l.yaml"
expect_bad "l.yaml:2:30: max_long_partial_prefills \\(3\\) must be less than or equal to max_num_partial_prefills \\(2\\)" "$T/l.yaml"
expect_bad "^kvsim run: --set engine.max_num_partial_prefills=2: Chunked prefill must be enabled" \
	--set engine.max_num_partial_prefills=2 \
	--set engine.enable_chunked_prefill=false
expect_bad "^kvsim run: --set engine.long_prefill_token_threshold=5000: long_prefill_token_threshold \\(5000\\) cannot be greater than the max_model_len \\(4096\\)" \
	--set engine.max_num_partial_prefills=2 --set engine.max_model_len=4096 \
	--set engine.long_prefill_token_threshold=5000
expect_bad "max_num_partial_prefills > 1: kvsim models it for policy vllm-v1 only" \
	--set engine.max_num_partial_prefills=2 --set policy=vllm-v0
expect_bad "pipeline_parallel_size 33: the model has 32 layers" \
	--set engine.pipeline_parallel_size=33

# 2.
run none
run dflt --set engine.pipeline_parallel_size=1 --set engine.cpu_offload_gb=0 \
	--set engine.quantization=none --set engine.max_num_partial_prefills=1 \
	--set engine.max_long_partial_prefills=1
for f in requests.csv config.yaml; do
	cmp -s "$T/none/$f" "$T/dflt/$f" || bad "defaults: $f differs"
done
# summary.csv less the wall-clock column
w=$(col "$T/none/summary.csv" sim_wall_s)
for d in none dflt; do
	cut -d, -f"$w" --complement "$T/$d/summary.csv" >"$T/$d.sum"
done
cmp -s "$T/none.sum" "$T/dflt.sum" || bad "defaults: summary.csv differs"

# 3.
run lpt --set engine.long_prefill_token_threshold=64
cut -d, -f2- "$T/none/requests.csv" >"$T/none.rows"
cut -d, -f2- "$T/lpt/requests.csv" >"$T/lpt.rows"
cmp -s "$T/none.rows" "$T/lpt.rows" && bad "threshold 64 changed nothing"
run part --set engine.max_model_len=4096 --set engine.max_num_partial_prefills=2
run p163 --set engine.max_model_len=4096 \
	--set engine.long_prefill_token_threshold=163
run m4k --set engine.max_model_len=4096
cut -d, -f2- "$T/part/requests.csv" >"$T/part.rows"
cut -d, -f2- "$T/p163/requests.csv" >"$T/p163.rows"
cut -d, -f2- "$T/m4k/requests.csv" >"$T/m4k.rows"
cmp -s "$T/part.rows" "$T/p163.rows" ||
	bad "max_num_partial_prefills 2 is not threshold int(4096 * 0.04)"
cmp -s "$T/part.rows" "$T/m4k.rows" &&
	bad "max_num_partial_prefills 2 changed nothing"

# 4.
run pp2 --set engine.pipeline_parallel_size=2
run tp2 --set engine.tensor_parallel_size=2
k1=$(sval "$T/none/summary.csv" kv_cache_tokens)
k2=$(sval "$T/pp2/summary.csv" kv_cache_tokens)
gt "$k2" "$((2 * k1))" || bad "pp 2: $k2 KV tokens, not more than 2 x $k1"
gt "$(sval "$T/pp2/summary.csv" tpot_mean_s)" \
	"$(sval "$T/tp2/summary.csv" tpot_mean_s)" ||
	bad "pp 2 is not slower a token than tp 2"
# one request at a time, no batch overlaps another: a token takes the
# whole model plus the sends
run one1 --set engine.max_num_seqs=1
run pp2one --set engine.pipeline_parallel_size=2 --set engine.max_num_seqs=1
gt "$(sval "$T/pp2one/summary.csv" tpot_mean_s)" \
	"$(sval "$T/one1/summary.csv" tpot_mean_s)" ||
	bad "pp 2 is not slower a token than one GPU (the sends)"
# with requests to fill them, 2 batches in flight (R122) serve faster
# than one GPU
gt "$(sval "$T/pp2/summary.csv" throughput_out_tok_s)" \
	"$(sval "$T/none/summary.csv" throughput_out_tok_s)" ||
	bad "pp 2's batches in flight serve no faster than one GPU"

for pp in 1 2; do
	"$KVSIM" capacity -q "${top_srcdir:-..}/tests/capacity/fixed.yaml" \
		--slo 'ttft_s:p99<=0.1' --seeds 1 --out "$T/cap$pp" \
		--set replicas=2 --set engine.pipeline_parallel_size=$pp \
		>/dev/null 2>&1 || bad "capacity pp $pp failed"
done
[ "$(sval "$T/cap1/capacity.csv" gpus)" = 2 ] &&
	[ "$(sval "$T/cap2/capacity.csv" gpus)" = 4 ] ||
	bad "capacity: $(sval "$T/cap2/capacity.csv" gpus) GPUs for 2 replicas of pp 2, not 4"

# 5.
run fp8 --set engine.quantization=fp8
run off --set engine.cpu_offload_gb=4
gt "$(sval "$T/fp8/summary.csv" kv_cache_tokens)" "$k1" ||
	bad "fp8: no more KV tokens"
gt "$(sval "$T/none/summary.csv" tpot_mean_s)" \
	"$(sval "$T/fp8/summary.csv" tpot_mean_s)" || bad "fp8: not faster"
gt "$(sval "$T/off/summary.csv" kv_cache_tokens)" "$k1" ||
	bad "cpu_offload_gb: no more KV tokens"
gt "$(sval "$T/off/summary.csv" tpot_mean_s)" \
	"$(sval "$T/none/summary.csv" tpot_mean_s)" ||
	bad "cpu_offload_gb: not slower"

# 6.
grep -qx '  pipeline_parallel_size: 2' "$T/pp2/config.yaml" ||
	bad "config.yaml does not record pipeline_parallel_size"
grep -qx '  quantization: fp8' "$T/fp8/config.yaml" ||
	bad "config.yaml does not record quantization"
grep -qx '  cpu_offload_gb: 4' "$T/off/config.yaml" ||
	bad "config.yaml does not record cpu_offload_gb"
grep -qx '  max_num_partial_prefills: 2' "$T/part/config.yaml" ||
	bad "config.yaml does not record max_num_partial_prefills"
for d in pp2 off; do
	"$KVSIM" run -q --no-plot --out "$T/$d-again" "$T/$d/config.yaml" ||
		bad "$d: config.yaml does not run"
	cmp -s "$T/$d/requests.csv" "$T/$d-again/requests.csv" ||
		bad "$d: config.yaml runs otherwise"
done
# the example runs
"$KVSIM" run -q --no-plot --out "$T/ex" --set workload.max_requests=30 \
	"${top_srcdir:-..}/examples/engine-knobs.yaml" ||
	bad "examples/engine-knobs.yaml does not run"
exit $fail
