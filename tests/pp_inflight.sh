#!/bin/sh
# pp_inflight.sh -- `kvsim run` with pipeline parallel's batches in flight
# (docs/scheduler.md R122, docs/run.md "Scheduler and engine knobs") on
# tests/pp/saturate.yaml, a saturated replica with a constant batch time:
#  1. pipeline_parallel_size 2 serves about twice the output tokens a
#     second of one batch at a time (1.9 to 2.05 x): the same batches, in
#     half the time;
#  2. its mean inter-token time is two stages, the batch time (10 ms);
#  3. policy vllm-v0 keeps one batch at a time: pp 2 is its pp 1 run.
set -u
: "${KVSIM:=../sim/kvsim}"
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-pp.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
sval() { c=$(col "$1" "$2"); sed -n 2p "$1" | cut -d, -f"$c"; }
# a / b within [lo, hi]
ratio() { awk -v a="$1" -v b="$2" -v lo="$3" -v hi="$4" \
	'BEGIN { r = a / b; exit !(r >= lo && r <= hi) }'; }
Y="${top_srcdir:-..}/tests/pp/saturate.yaml"
for pp in 1 2; do
	"$KVSIM" run -q --no-plot --check --out "$T/pp$pp" "$Y" \
		--set engine.pipeline_parallel_size=$pp ||
		bad "pp $pp: run failed"
done
s1="$T/pp1/summary.csv"
s2="$T/pp2/summary.csv"
[ "$(sval "$s1" completed)" = 400 ] && [ "$(sval "$s2" completed)" = 400 ] ||
	bad "not every request completed"
# 1.
o1=$(sval "$s1" throughput_out_tok_s)
o2=$(sval "$s2" throughput_out_tok_s)
ratio "$o2" "$o1" 1.9 2.05 ||
	bad "pp 2 serves $o2 output tokens/s, one batch at a time $o1"
[ "$(sval "$s2" steps)" = "$(sval "$s1" steps)" ] ||
	bad "pp 2: $(sval "$s2" steps) batches, pp 1 $(sval "$s1" steps)"
ratio "$(sval "$s2" duration_s)" "$(sval "$s1" duration_s)" 0.49 0.53 ||
	bad "pp 2 ran $(sval "$s2" duration_s) s, pp 1 $(sval "$s1" duration_s) s"
# 2.
ratio "$(sval "$s2" itl_mean_s)" 0.010 0.999 1.05 ||
	bad "pp 2: mean inter-token time $(sval "$s2" itl_mean_s) s, not 10 ms"
# 3.
for pp in 1 2; do
	"$KVSIM" run -q --no-plot --out "$T/v0-$pp" "$Y" --set policy=vllm-v0 \
		--set engine.pipeline_parallel_size=$pp --set engine.max_model_len=2048 \
		--set engine.max_num_batched_tokens=2048 ||
		bad "vllm-v0 pp $pp: run failed"
done
cut -d, -f2- "$T/v0-1/requests.csv" >"$T/v0-1.rows"
cut -d, -f2- "$T/v0-2/requests.csv" >"$T/v0-2.rows"
cmp -s "$T/v0-1.rows" "$T/v0-2.rows" ||
	bad "vllm-v0: pp 2 is not one batch at a time"
exit $fail
