#!/bin/sh
# accuracy.sh -- the accuracy harness (bench/accuracy/accuracy.sh,
# docs/ACCURACY.md) on short copies of two measured runs:
#  1. one single-stage run, 40 requests: exit 0, one CSV row per metric
#     (7), the measured values read from the right fields of
#     summary_lifecycle_metrics.json, decode time per token
#     (E2E - TTFT) / (output_len - 1), the simulated mean TTFT the mean of
#     kvsim's requests.csv, APE = |sim - measured| / measured;
#  2. the same inputs give the same CSV, byte for byte;
#  3. a two-stage run is simulated one run per stage, at each stage's rate,
#     and the stages' requests are pooled;
#  4. a calibration file given to the harness reaches kvsim (a 50 ms CPU
#     overhead a step makes every E2E longer), a missing one is exit 1;
#  5. a metric missing from the measured report, a missing run and a
#     missing kvsim.yaml are exit 1 naming what is missing, and leave no
#     CSV.

set -eu
: "${KVSIM:?set KVSIM to the kvsim binary}"
: "${top_srcdir:?set top_srcdir}"
harness=$top_srcdir/bench/accuracy/accuracy.sh
src=$top_srcdir/bench/accuracy/runs
one=20260217-162547-llama-2-7b-tp1-roleplay
two=20260217-231439-llama-2-7b-tp1-general

tmp=$(mktemp -d "${TMPDIR:-/tmp}/accuracy.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

mkdir "$tmp/runs"
cp -R "$src/$one" "$src/$two" "$tmp/runs/"
chmod -R u+w "$tmp/runs"	# a read-only source tree (distcheck)
printf '# experiment\tset\n%s\tfit\n' "$one" >"$tmp/one.tsv"
printf '%s\theld-out\n' "$two" >"$tmp/two.tsv"

# harness LIST CSV OUT [CALIBRATION]: the harness on the copies.
harness() {
	ACC_RUNS=$tmp/runs ACC_LIST=$1 ACC_CSV=$2 ACC_OUT=$3 ACC_LOAD=stages \
	    ACC_MAX_REQUESTS=40 sh "$harness" ${4:+"$4"}
}

# num CSV METRIC COLUMN: a value of the CSV (columns: 4 measured,
# 5 simulated, 6 APE).
num() {
	awk -F, -v m="$2" -v c="$3" '$3 == m { print $c }' "$1"
}

# close A B: equal to 1e-6 relative.
close() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		d = a - b; if (d < 0) d = -d
		m = b < 0 ? -b : b
		exit !(d <= 1e-6 * m + 1e-12)
	}'
}

# 1. one experiment
harness "$tmp/one.tsv" "$tmp/a.csv" "$tmp/out" >"$tmp/a.txt" ||
	fail "harness on $one"
[ "$(head -1 "$tmp/a.csv")" = "experiment,set,metric,measured,simulated,ape_pct" ] ||
	fail "CSV header"
[ "$(tail -n +2 "$tmp/a.csv" | wc -l)" -eq 7 ] || fail "7 metric rows"
for m in ttft_mean e2e_mean decode_tok ttft_p90 ttft_p99 e2e_p90 e2e_p99; do
	[ -n "$(num "$tmp/a.csv" $m 6)" ] || fail "no APE for $m"
done
grep -q "^median APE %  *fit" "$tmp/a.txt" || fail "no fit summary line"
close "$(num "$tmp/a.csv" ttft_mean 4)" 0.02712883728152974 ||
	fail "measured ttft_mean"
close "$(num "$tmp/a.csv" e2e_p99 4)" 2.3993211105307504 ||
	fail "measured e2e_p99"
close "$(num "$tmp/a.csv" decode_tok 4)" \
    "$(awk 'BEGIN { print (2.071120309134724 - 0.02712883728152974) / 250 }')" ||
	fail "measured decode_tok: (E2E - TTFT) / (251 - 1)"
reqs=$tmp/out/$one/stage_0/requests.csv
[ "$(tail -n +2 "$reqs" | wc -l)" -eq 40 ] || fail "40 requests simulated"
sim=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	{ s += $c["ttft_s"]; n++ } END { printf "%.9g\n", s / n }' "$reqs")
close "$(num "$tmp/a.csv" ttft_mean 5)" "$sim" || fail "simulated ttft_mean"
m=$(num "$tmp/a.csv" e2e_mean 4)
s=$(num "$tmp/a.csv" e2e_mean 5)
close "$(num "$tmp/a.csv" e2e_mean 6)" \
    "$(awk -v m="$m" -v s="$s" 'BEGIN { d = s - m; if (d < 0) d = -d
	printf "%.4f\n", 100 * d / m }')" || fail "APE of e2e_mean"

# 2. determinism
harness "$tmp/one.tsv" "$tmp/b.csv" "$tmp/out2" >/dev/null ||
	fail "second harness run"
cmp -s "$tmp/a.csv" "$tmp/b.csv" || fail "same inputs, different CSV"

# 3. two stages pooled
harness "$tmp/two.tsv" "$tmp/c.csv" "$tmp/out3" >/dev/null ||
	fail "harness on $two"
[ "$(cat "$tmp/out3/$two/stages")" = "$(printf '8.0 40\n20.0 40')" ] ||
	fail "stages: $(cat "$tmp/out3/$two/stages")"
grep -q "rate: 20" "$tmp/out3/$two/stage_1/config.yaml" ||
	fail "stage 1 not at 20 req/s"
sim=$(cat "$tmp/out3/$two/stage_0/requests.csv" \
    "$tmp/out3/$two/stage_1/requests.csv" | awk -F, '
	$1 == "run_id" { for (i = 1; i <= NF; i++) c[$i] = i; next }
	{ s += $c["e2e_s"]; n++ } END { printf "%d %.9g\n", n, s / n }')
[ "${sim%% *}" -eq 80 ] || fail "pooled requests: ${sim%% *}"
close "$(num "$tmp/c.csv" e2e_mean 5)" "${sim#* }" || fail "pooled e2e_mean"

# 4. calibration
harness "$tmp/one.tsv" "$tmp/d.csv" "$tmp/out4" \
    "$top_srcdir/tests/run/calib.yaml" >/dev/null || fail "with calibration"
awk -v a="$(num "$tmp/d.csv" e2e_mean 5)" -v b="$(num "$tmp/a.csv" e2e_mean 5)" \
    'BEGIN { exit !(a > b + 0.05) }' || fail "calibration did not reach kvsim"
if harness "$tmp/one.tsv" "$tmp/e.csv" "$tmp/out5" "$tmp/nonexistent.yaml" \
    >/dev/null 2>"$tmp/err"; then
	fail "missing calibration file accepted"
fi
grep -q "nonexistent.yaml" "$tmp/err" || fail "missing calibration not named"

# 5. missing metric, run, kvsim.yaml
j=$tmp/runs/$one/results/summary_lifecycle_metrics.json
cp "$j" "$tmp/json.orig"
sed 's/"time_to_first_token"/"time_to_first_tokens"/' "$tmp/json.orig" >"$j"
if harness "$tmp/one.tsv" "$tmp/f.csv" "$tmp/out6" >/dev/null 2>"$tmp/err"; then
	fail "a missing metric was accepted"
fi
grep -q "time_to_first_token/mean" "$tmp/err" || fail "missing metric not named"
[ ! -e "$tmp/f.csv" ] || fail "CSV written despite a missing metric"
cp "$tmp/json.orig" "$j"

printf '%s\tfit\n' 20990101-000000-none >>"$tmp/one.tsv"
if harness "$tmp/one.tsv" "$tmp/g.csv" "$tmp/out7" >/dev/null 2>"$tmp/err"; then
	fail "a missing run was accepted"
fi
grep -q "20990101-000000-none: missing run" "$tmp/err" || fail "missing run not named"
[ ! -e "$tmp/g.csv" ] || fail "CSV written despite a missing run"

rm "$tmp/runs/$two/kvsim.yaml"
if harness "$tmp/two.tsv" "$tmp/h.csv" "$tmp/out8" >/dev/null 2>"$tmp/err"; then
	fail "a missing kvsim.yaml was accepted"
fi
grep -q "kvsim.yaml: missing" "$tmp/err" || fail "missing kvsim.yaml not named"
# The default load: inference-perf's own config.yaml (workload.kind
# inference-perf), on a copy whose stage lasts 5 s: rate x 5 requests.
mkdir "$tmp/ip"
cp -R "$src/$one" "$tmp/ip/"
chmod -R u+w "$tmp/ip"
sed 's/duration: [0-9]*/duration: 5/' "$src/$one/results/config.yaml" \
    >"$tmp/ip/$one/results/config.yaml"
printf '# experiment\tset\n%s\tfit\n' "$one" >"$tmp/ip.tsv"
ACC_RUNS=$tmp/ip ACC_LIST=$tmp/ip.tsv ACC_CSV=$tmp/ip.csv ACC_OUT=$tmp/ipo \
    sh "$harness" >"$tmp/ip.txt" 2>&1 || fail "inference-perf load: $(tail -3 "$tmp/ip.txt")"
rate=$(awk '$1 == "-" && $2 == "rate:" { print $3; exit }' \
    "$tmp/ip/$one/results/config.yaml")
want=$(awk -v r="$rate" 'BEGIN { print int(r * 5) }')
got=$(tail -n +2 "$tmp/ipo/$one/all/requests.csv" | wc -l)
[ "$got" -eq "$want" ] ||
	fail "inference-perf load: $got requests, not rate x 5 = $want"

echo "accuracy.sh: ok"
