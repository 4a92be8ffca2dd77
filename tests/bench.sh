#!/bin/sh
# bench.sh -- vLLM's benchmark vocabulary on the command line (docs/run.md
# "Result formats", docs/workloads.md "vLLM's benchmark datasets"):
#  1. `kvsim run --result-format vllm-bench,inference-perf` writes
#     vllm_bench.json and inference_perf_summary.json beside the CSVs:
#     completed, total tokens and the request throughput are the summary's,
#     median_ttft_ms is the median of requests.csv's ttft_s times 1000
#     (computed here with sort and awk), and the same run gives the same
#     bytes;
#  2. a prefix_repetition workload hits the prefix cache (summary and the
#     inference-perf summary's cached prompt tokens), a random one without
#     a prefix does not;
#  3. a sharegpt workload runs from a user's file (the fixture's three
#     conversations that pass vLLM's filters);
#  4. an unknown format is exit 2 with one line and no --out; --force
#     without --result-format removes an earlier run's result files; a bad
#     dataset is FILE:LINE:COL, exit 2.
set -u
: "${KVSIM:=../sim/kvsim}"
: "${top_srcdir:=..}"
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
sval() { c=$(col "$1" "$2"); sed -n 2p "$1" | cut -d, -f"$c"; }
# a top-level number of vllm_bench.json (one key a line)
jval() { sed -n "s/^  \"$2\": \([^,]*\),*$/\1/p" "$1"; }
# the number of inference-perf's "cached" prompt tokens
ipcached() { sed -n 's/^      "cached": \([0-9]*\),*$/\1/p' "$1"; }
# a - b within 1e-9 relative
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d;
	m = b < 0 ? -b : b; exit !(d <= 1e-9 * (m + 1e-9)) }'; }

cat >"$T/rand.yaml" <<'EOF'
seed: 4
workload:
  generator: {requests: 300, arrival: {process: poisson, rate: 20}}
  dataset: {name: random, input_len: 400, output_len: 40, range_ratio: 0.5}
EOF

# 1. the two files and their numbers
O=$T/o1
"$KVSIM" run "$T/rand.yaml" -q --no-plot -o "$O" \
	--result-format vllm-bench,inference-perf >"$T/o1.out" 2>&1 ||
	{ bad "run with --result-format failed"; cat "$T/o1.out"; }
for f in vllm_bench.json inference_perf_summary.json; do
	[ -s "$O/$f" ] || bad "$f not written"
done
V=$O/vllm_bench.json
S=$O/summary.csv
[ "$(jval "$V" completed)" = "$(sval "$S" completed)" ] ||
	bad "completed $(jval "$V" completed) != summary's"
[ "$(jval "$V" total_input_tokens)" = "$(sval "$S" input_tokens)" ] ||
	bad "total_input_tokens $(jval "$V" total_input_tokens)"
[ "$(jval "$V" total_output_tokens)" = "$(sval "$S" output_tokens)" ] ||
	bad "total_output_tokens $(jval "$V" total_output_tokens)"
# summary.csv has 6 decimals
awk -v a="$(jval "$V" request_throughput)" \
	-v b="$(sval "$S" throughput_req_s)" \
	'BEGIN { d = a - b; exit !(d < 5e-7 && d > -5e-7) }' ||
	bad "request_throughput $(jval "$V" request_throughput)"
c=$(col "$O/requests.csv" ttft_s)
med=$(tail -n +2 "$O/requests.csv" | cut -d, -f"$c" | sort -g | awk '
	{ v[NR] = $1 } END { if (NR % 2) m = v[(NR + 1) / 2];
	else m = (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.12g", m * 1000 }')
near "$(jval "$V" median_ttft_ms)" "$med" ||
	bad "median_ttft_ms $(jval "$V" median_ttft_ms), requests.csv: $med"
"$KVSIM" run "$T/rand.yaml" -q --no-plot -o "$T/o2" \
	--result-format inference-perf,vllm-bench >/dev/null 2>&1 ||
	bad "second run failed"
cmp -s "$V" "$T/o2/vllm_bench.json" || bad "vllm_bench.json differs"
cmp -s "$O/inference_perf_summary.json" \
	"$T/o2/inference_perf_summary.json" ||
	bad "inference_perf_summary.json differs"

# 2. prefix_repetition shares prefixes; random without a prefix does not
[ "$(ipcached "$O/inference_perf_summary.json")" = 0 ] ||
	bad "random workload hit the cache"
cat >"$T/prep.yaml" <<'EOF'
workload:
  generator: {requests: 200, arrival: {process: poisson, rate: 20}}
  dataset: {name: prefix_repetition, prefix_len: 512, suffix_len: 64,
            num_prefixes: 4, output_len: 16}
EOF
"$KVSIM" run "$T/prep.yaml" -q --no-plot -o "$T/p" \
	--result-format inference-perf >"$T/p.out" 2>&1 ||
	{ bad "prefix_repetition run failed"; cat "$T/p.out"; }
hit=$(sval "$T/p/summary.csv" prefix_hit_rate)
awk -v h="$hit" 'BEGIN { exit !(h > 0.5) }' ||
	bad "prefix_repetition: prefix_hit_rate $hit"
cached=$(ipcached "$T/p/inference_perf_summary.json")
[ "${cached:-0}" -gt 0 ] || bad "prefix_repetition: cached $cached"

# 3. sharegpt from a file
FX=$top_srcdir/tests/fixtures/wl/sharegpt
"$KVSIM" run -q --no-plot -o "$T/s" \
	--set workload.dataset.name=sharegpt \
	--set "workload.dataset.path=$FX/small.json" \
	--set workload.generator.requests=50 >"$T/s.out" 2>&1 ||
	{ bad "sharegpt run failed"; cat "$T/s.out"; }
c=$(col "$T/s/requests.csv" input_tokens)
bad_in=$(tail -n +2 "$T/s/requests.csv" | cut -d, -f"$c" |
	grep -cvx '12\|100\|15')
[ "$bad_in" = 0 ] || bad "sharegpt: $bad_in prompts not of the fixture"

# 4. bad input
"$KVSIM" run -q --no-plot -o "$T/x" --result-format vllm >"$T/x.out" 2>&1
rc=$?
[ $rc = 2 ] || bad "--result-format vllm: exit $rc"
m="kvsim run: --result-format vllm: unknown result format 'vllm'"
grep -qxF "$m (vllm-bench, inference-perf)" "$T/x.out" ||
	{ bad "--result-format vllm message"; cat "$T/x.out"; }
[ ! -e "$T/x" ] || bad "--out made for a bad option"
"$KVSIM" run "$T/rand.yaml" -q --no-plot -o "$O" --force >/dev/null 2>&1 ||
	bad "--force run failed"
[ ! -e "$V" ] || bad "--force kept an earlier vllm_bench.json"
printf 'workload:\n  dataset: {name: random, range_ratio: 1.5}\n' \
	>"$T/bad.yaml"
"$KVSIM" run "$T/bad.yaml" -q --no-plot -o "$T/b" >"$T/b.out" 2>&1
rc=$?
[ $rc = 2 ] || bad "bad dataset: exit $rc"
grep -q "bad.yaml:2:12: dataset: range_ratio must be in \[0, 1)" \
	"$T/b.out" || { bad "bad dataset message"; cat "$T/b.out"; }
[ ! -e "$T/b" ] || bad "--out made for a bad dataset"

exit $fail
