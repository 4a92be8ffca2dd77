#!/bin/sh
# capacity_cost.sh -- `kvsim capacity` comparing deployments (docs/capacity.md):
#  1. --across twice: the keys go together (gpu and tensor parallel size:
#     2 x H100 and 1 x H200 in one command); unequal value counts exit 2;
#  2. the cost columns are computed: gpus = tp x replicas, req_s_per_gpu =
#     max_qps_under_slo / gpus, usd_per_hour = gpus x the GPU's price (the
#     catalog's, as `kvsim catalog show` prints it, or
#     cost.gpu_usd_per_hour), usd_per_1m_output_tokens = usd_per_hour /
#     (3600 x max_qps_under_slo x mean_output_tokens) x 1e6;
#  3. a burst whose prompts exceed the KV cache is a warning with its
#     numbers; workload.spread_bursts spaces the burst (arrivals F mean
#     gaps apart, checked in requests.csv) and the warning goes;
#  4. on a trace, --seeds 3 runs one search and says so: the points are
#     those of a search with that seed alone, for each seed;
#  5. --progress prints a line per simulation on stderr (rate, verdict,
#     elapsed, ETA); without it, and with stderr not a terminal, none.
set -u
: "${KVSIM:=../sim/kvsim}"
: "${top_srcdir:=..}"
D=$top_srcdir/tests/capacity
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-capc.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
# value of column NAME in row ROW (default 2)
val() { c=$(col "$1" "$2"); sed -n "${3:-2}p" "$1" | cut -d, -f"$c"; }
# |a - b| <= 1e-6 |b|
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d
	m = b < 0 ? -b : b; exit !(d <= 1e-6 * m + 1e-12) }'; }

# 1.
"$KVSIM" capacity -q "$D/fixed.yaml" --slo 'ttft_s:p99<=0.1' --seeds 1 \
	--across gpu=h100-sxm,h200 --across engine.tensor_parallel_size=2,1 \
	--set replicas=2 --out "$T/a" >"$T/a.out" 2>&1 ||
	{ bad "capacity a"; cat "$T/a.out"; }
C=$T/a/capacity.csv
[ "$(wc -l <"$C")" = 3 ] || bad "two --across: not two rows"
[ "$(val "$C" gpu 2)/$(val "$C" tp 2)" = h100-sxm/2 ] || bad "row 1 gpu/tp"
[ "$(val "$C" gpu 3)/$(val "$C" tp 3)" = h200/1 ] || bad "row 2 gpu/tp"
[ "$(val "$C" across 2)" = 'gpu=h100-sxm;engine.tensor_parallel_size=2' ] ||
	bad "across column: $(val "$C" across 2)"
"$KVSIM" capacity -q "$D/fixed.yaml" --slo 'ttft_s:p99<=0.1' \
	--across gpu=h100-sxm,h200 --across engine.tensor_parallel_size=2 \
	--out "$T/b" >"$T/b.out" 2>&1
[ $? = 2 ] || bad "unequal --across counts: not exit 2"
grep -q 'value i of each' "$T/b.out" || bad "unequal --across: message"
[ -e "$T/b" ] && bad "unequal --across: wrote $T/b"

# 2.
price() { "$KVSIM" catalog show gpus "$1" | sed -n 's/^price: \([0-9.]*\) USD.*/\1/p'; }
for r in 2 3; do
	g=$(val "$C" gpu $r); tp=$(val "$C" tp $r); p=$(price "$g")
	q=$(val "$C" max_qps_under_slo $r); o=$(val "$C" mean_output_tokens $r)
	[ -n "$p" ] || bad "no catalog price for $g"
	[ "$(val "$C" gpus $r)" = $((tp * 2)) ] || bad "$g: gpus"
	near "$(val "$C" req_s_per_gpu $r)" \
		"$(awk -v q="$q" -v n=$((tp * 2)) 'BEGIN { printf "%.12g", q / n }')" ||
		bad "$g: req_s_per_gpu"
	near "$(val "$C" gpu_usd_per_hour $r)" "$p" || bad "$g: GPU price"
	h=$(awk -v p="$p" -v n=$((tp * 2)) 'BEGIN { printf "%.12g", p * n }')
	near "$(val "$C" usd_per_hour $r)" "$h" || bad "$g: usd_per_hour"
	near "$(val "$C" usd_per_1m_output_tokens $r)" "$(awk -v h="$h" \
		-v q="$q" -v o="$o" 'BEGIN { printf "%.12g", h / (3600 * q * o) * 1e6 }')" ||
		bad "$g: usd_per_1m_output_tokens"
done
[ "$(val "$C" mean_output_tokens 2)" = 4.000000 ] || bad "mean output"
"$KVSIM" capacity -q "$D/fixed.yaml" --slo 'ttft_s:p99<=0.1' --seeds 1 \
	--set cost.gpu_usd_per_hour=1.5 --out "$T/c" >"$T/c.out" 2>&1 ||
	bad "capacity c"
near "$(val "$T/c/capacity.csv" usd_per_hour)" 1.5 ||
	bad "cost.gpu_usd_per_hour not used"
"$KVSIM" capacity -q "$D/fixed.yaml" --slo 'ttft_s:p99<=0.1' --seeds 1 \
	--set gpu=mi300x --out "$T/d" >"$T/d.out" 2>&1 || bad "capacity d"
[ -z "$(val "$T/d/capacity.csv" usd_per_hour)" ] ||
	bad "a GPU with no price has a cost"

# 3.
B=$T/burst.csv
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n' >"$B"
for t in 00 00 00 00 05 10 15 20; do
	printf '2023-11-16 18:00:%s.0000000,100,4\n' $t >>"$B"
done
small="--set workload.trace=$B --set engine.num_gpu_blocks_override=20
	--set engine.max_model_len=256"
# shellcheck disable=SC2086
"$KVSIM" capacity -q $small --slo 'ttft_s:p99<=1' --seeds 1 \
	--out "$T/e" >"$T/e.out" 2>"$T/e.err" || bad "capacity e"
grep -q "warning: 4 requests arrive at one instant (0.000 s.*burst.csv:2) with 400 prompt tokens, more than the 320 tokens of the KV cache" \
	"$T/e.err" || { bad "no burst warning"; cat "$T/e.err"; }
# shellcheck disable=SC2086
"$KVSIM" capacity -q $small --set workload.spread_bursts=0.5 \
	--slo 'ttft_s:p99<=1' --seeds 1 --out "$T/f" >"$T/f.out" 2>"$T/f.err" ||
	bad "capacity f"
grep -q warning "$T/f.err" && bad "burst warning with spread_bursts"
# 8 requests over 20 s: mean gap 2.5 s, F 0.5: 1.25 s apart at least
"$KVSIM" run -q --set workload.trace="$B" --set workload.spread_bursts=0.5 \
	--out "$T/g" --no-plot >"$T/g.out" 2>&1 || bad "run g"
a=$(awk -F, -v c="$(col "$T/g/requests.csv" arrival_s)" 'NR > 1 {
	printf "%s%.2f", (NR > 2 ? " " : ""), $c }' "$T/g/requests.csv")
[ "$a" = "0.00 1.25 2.50 3.75 5.00 10.00 15.00 20.00" ] ||
	bad "spread arrivals: $a"
"$KVSIM" run -q --set workload.trace="$B" --set workload.spread_bursts=2 \
	--out "$T/h" --no-plot >"$T/h.out" 2>&1
[ $? = 2 ] || bad "spread_bursts=2 accepted"

# 4.
# shellcheck disable=SC2086
"$KVSIM" capacity $small --slo 'ttft_s:p99<=0.02' --seeds 3 --seed 4 \
	--qps-max 100 --out "$T/i" --no-plot >"$T/i.out" 2>&1
grep -q 'one search stands for seeds 4..6' "$T/i.out" ||
	bad "trace seeds: no note"
# shellcheck disable=SC2086
"$KVSIM" capacity -q $small --slo 'ttft_s:p99<=0.02' --seeds 1 --seed 5 \
	--qps-max 100 --out "$T/j" >"$T/j.out" 2>&1
P=$T/i/capacity_points.csv
[ "$(awk -F, 'NR > 1 && $2 == 5' "$P" | cut -d, -f3-)" = \
  "$(awk -F, 'NR > 1' "$T/j/capacity_points.csv" | cut -d, -f3-)" ] ||
	bad "seed 5's points differ from its own search"
for s in 4 6; do
	[ "$(awk -F, -v s=$s 'NR > 1 && $2 == s' "$P" | cut -d, -f3-)" = \
	  "$(awk -F, 'NR > 1 && $2 == 5' "$P" | cut -d, -f3-)" ] ||
		bad "seed $s's points"
done
[ "$(val "$T/i/capacity.csv" seeds)" = 3 ] || bad "trace: seeds column"

# 5.
"$KVSIM" capacity -q "$D/fixed.yaml" --slo 'ttft_s:p99<=0.1' --seeds 1 \
	--progress --out "$T/k" >"$T/k.out" 2>"$T/k.err" || bad "capacity k"
n=$(awk 'END { print NR - 1 }' "$T/k/capacity_points.csv")
[ "$(grep -c '^kvsim capacity: config 1/1 seed 0 probe [0-9]*: [0-9.e+]* req/s \(met\|missed\) ([0-9.]* s), elapsed [0-9.]* s, ETA ' "$T/k.err")" = "$n" ] ||
	{ bad "progress lines"; cat "$T/k.err"; }
grep -q 'probe 1: .* ETA ? (bracketing)' "$T/k.err" || bad "progress ETA ?"
grep -q 'ETA [0-9.]* s ([0-9]* more)' "$T/k.err" || bad "progress ETA"
grep -q progress "$T/a.out" && bad "progress lines without --progress"
grep -q 'probe' "$T/a.out" && bad "probe lines without --progress"

exit $fail
