#!/bin/sh
# kvsim calibrate serving: a synthetic truth made by kvsim itself with known
# cost terms (eff_compute 0.55, eff_memory 0.82), written in
# inference-perf's lifecycle-metrics shape (a result directory of two
# stages, and a lone stage file) and in vllm bench serve's --save-result
# shape (with and without mean_e2el_ms); calibrate, started from the
# defaults, recovers both terms within 3% and its leave-one-out error is
# under 2%; kvsim run reads the file it writes.  (Prefill steps are
# compute-bound and decode steps memory-bound, so TTFT and the decode time
# tell the two apart; a per-step CPU time and eff_memory trade off
# against each other in decode and are not both recoverable from means.)  Bad input (a missing
# file, bad JSON, a missing key, a configuration that fails, bad usage)
# exits 2 with FILE:LINE where known and writes nothing.
: "${KVSIM:?}"
tmp=${TMPDIR:-/tmp}/kvsim-calserve.$$
mkdir -p "$tmp" || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat >"$tmp/truth.yaml" <<'T'
eff_compute: 0.55
eff_memory: 0.82
T
# one experiment: Llama-3.1-8B on an H100, prefixes shared by groups as in
# inference-perf's shared_prefix data, a fixed output length
mkcfg() {	# FILE RATE REQUESTS
	cat >"$1" <<C
model: meta-llama/Llama-3.1-8B
gpu: h100-sxm
workload:
  seed: 7
  generator: {requests: $3, arrival: {process: poisson, rate: $2}}
  dataset: {name: prefix_repetition, prefix_len: 100, suffix_len: 447,
            num_prefixes: 10, output_len: 64}
C
}
# the truth of a configuration: kvsim run with the known terms
truth() {	# CONFIG OUTDIR [SET...]
	cfg=$1 out=$2
	shift 2
	"$KVSIM" run -q --no-plot "$cfg" --set cost.calibration="$tmp/truth.yaml" \
		"$@" --out "$out" >"$tmp/truth.out" 2>&1 ||
		{ cat "$tmp/truth.out"; fail "truth run $cfg"; }
}
# requests.csv -> metrics JSON; $2: ip (inference-perf) or vllm, vllm-e2e
metrics() {	# REQUESTS_CSV KIND
	awk -F, -v kind="$2" '
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
{ n++; t += $c["ttft_s"]; e += $c["e2e_s"]; o += $c["output_tokens"]
  p += $c["tpot_s"] }
END {
	if (kind == "ip") {
		printf "{\n  \"load_summary\": {\"count\": %d},\n", n
		printf "  \"successes\": {\n    \"count\": %d,\n", n
		printf "    \"latency\": {\n"
		printf "      \"request_latency\": {\"mean\": %.9f},\n", e / n
		printf "      \"time_to_first_token\": {\"mean\": %.9f}\n", t / n
		printf "    }\n  },\n  \"failures\": {\"count\": 0}\n}\n"
	} else {
		printf "{\"completed\": %d, \"total_output_tokens\": %d,\n", n, o
		printf " \"mean_ttft_ms\": %.6f, \"mean_tpot_ms\": %.6f", \
		       1e3 * t / n, 1e3 * p / n
		if (kind == "vllm-e2e")
			printf ",\n \"mean_e2el_ms\": %.6f", 1e3 * e / n
		printf "}\n"
	}
}' "$1"
}

mkcfg "$tmp/a.yaml" 4 200
mkcfg "$tmp/b.yaml" 40 300
mkcfg "$tmp/c.yaml" 1 200
truth "$tmp/a.yaml" "$tmp/ta"
truth "$tmp/b.yaml" "$tmp/tb"
metrics "$tmp/ta/requests.csv" vllm >"$tmp/a.json"
metrics "$tmp/tb/requests.csv" vllm-e2e >"$tmp/b.json"
# an inference-perf result directory: two stages of 150 requests at 2 and
# 10 req/s (rate x duration), one run of its own configuration
# (workload.kind inference-perf), as calibrate predicts it
mkdir -p "$tmp/ip"
cat >"$tmp/ip/config.yaml" <<'T'
data:
  type: shared_prefix
  shared_prefix: {num_groups: 10, num_prompts_per_group: 10,
                  system_prompt_len: 100, question_len: 447, output_len: 64}
load:
  type: constant
  stages:
  - {rate: 2.0, duration: 75}
  - {rate: 10.0, duration: 15}
T
truth "$tmp/c.yaml" "$tmp/tip" --set workload.kind=inference-perf \
	--set workload.config="$tmp/ip/config.yaml"
for stage in 0 1; do
	awk -F, -v s=$stage 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i
		print; next } $c["stage"] == s' "$tmp/tip/requests.csv" \
		>"$tmp/tip/stage$stage.csv"
	[ "$(wc -l <"$tmp/tip/stage$stage.csv")" -eq 151 ] ||
		fail "stage $stage: not 150 requests"
	metrics "$tmp/tip/stage$stage.csv" ip \
		>"$tmp/ip/stage_${stage}_lifecycle_metrics.json"
done
# a lone stage file: the configuration as it is
truth "$tmp/a.yaml" "$tmp/td" --set workload.generator.arrival.rate=8
mkcfg "$tmp/d.yaml" 8 200
metrics "$tmp/td/requests.csv" ip >"$tmp/d.json"

"$KVSIM" calibrate serving --fit eff_compute=0.65,eff_memory=0.72 \
	--out "$tmp/fit.yaml" --device "H100 synthetic" --date 2026-12-05 \
	"$tmp/a.yaml" "$tmp/a.json" "$tmp/b.yaml" "$tmp/b.json" \
	"$tmp/c.yaml" "$tmp/ip" "$tmp/d.yaml" "$tmp/d.json" \
	>"$tmp/fit.out" 2>&1 || { cat "$tmp/fit.out"; fail "calibrate"; }
cat "$tmp/fit.out"
grep -q 'stage 1$' "$tmp/fit.out" || fail "the directory's second stage"
awk '
/^eff_memory:/ { v = $3; sub(",", "", v); if (v < 0.82 * 0.97 ||
	v > 0.82 * 1.03) bad = bad " eff_memory " v; n++ }
/^eff_compute:/ { v = $3; sub(",", "", v); if (v < 0.55 * 0.97 ||
	v > 0.55 * 1.03) bad = bad " eff_compute " v; n++ }
END { if (bad != "" || n != 2) { print "off:" bad, n; exit 1 } }
' "$tmp/fit.yaml" || { cat "$tmp/fit.yaml"; fail "fitted terms"; }
grep -q '^  data: ".*a.json, .*b.json, .*ip, .*d.json"$' "$tmp/fit.yaml" ||
	fail "meta.data"
grep -q '^  holdout: "leave-one-out over 4 runs (5 cases)' "$tmp/fit.yaml" ||
	fail "meta.holdout"
# the leave-one-out medians: each under 2%
grep '^leave-one-out' "$tmp/fit.out" | awk '{
	for (i = 1; i <= NF; i++) if ($i ~ /%/) { v = $i; sub("%.*", "", v)
		if (v + 0 >= 2) bad = 1; n++ } }
	END { exit bad || n != 3 }' || fail "leave-one-out error"

# kvsim run reads it
"$KVSIM" run -q --no-plot "$tmp/a.yaml" --set cost.calibration="$tmp/fit.yaml" \
	--out "$tmp/run" >"$tmp/run.out" 2>&1 ||
	{ cat "$tmp/run.out"; fail "kvsim run with the calibration"; }

# bad input: exit 2, the place in the message, nothing written
bad() {	# WHAT PATTERN ARGS...
	what=$1 pat=$2
	shift 2
	rm -f "$tmp/bad.yaml"
	"$KVSIM" calibrate serving --out "$tmp/bad.yaml" "$@" >"$tmp/bad.out" \
		2>&1
	rc=$?
	[ $rc -eq 2 ] || { cat "$tmp/bad.out"; fail "$what: exit $rc"; }
	grep -q -- "$pat" "$tmp/bad.out" || { cat "$tmp/bad.out"; fail "$what"; }
	[ ! -e "$tmp/bad.yaml" ] && [ ! -e "$tmp/bad.yaml.tmp" ] ||
		fail "$what: a file was written"
}
bad "missing file" "$tmp/none.json: No such file" \
	"$tmp/a.yaml" "$tmp/none.json"
printf '{"completed": 10,\n "mean_ttft_ms": [1, 2}\n' >"$tmp/syntax.json"
bad "bad JSON" "syntax.json:2:" "$tmp/a.yaml" "$tmp/syntax.json"
printf '{"successes": {"count": 5,\n  "latency": {"request_latency": {"mean": 1}}}}\n' \
	>"$tmp/nokey.json"
bad "missing key" "nokey.json:2:14: no 'time_to_first_token'" \
	"$tmp/a.yaml" "$tmp/nokey.json"
printf '{"completed": 10, "total_output_tokens": 640,\n "mean_ttft_ms": "fast", "mean_tpot_ms": 5}\n' \
	>"$tmp/nan.json"
bad "not a number" "nan.json:2:18: mean_ttft_ms: expected a number" \
	"$tmp/a.yaml" "$tmp/nan.json"
sed 's/Llama-3.1-8B/No-Such-Model/' "$tmp/a.yaml" >"$tmp/nomodel.yaml"
bad "a configuration that fails" "nomodel.yaml:1:8: model: unknown model" \
	"$tmp/nomodel.yaml" "$tmp/a.json"
mkdir -p "$tmp/ipbad"
printf 'load: {type: constant, stages: [{rate: 2}]}\n' >"$tmp/ipbad/config.yaml"
bad "a stage without duration" "ipbad/config.yaml:1:33: no 'duration'" \
	"$tmp/a.yaml" "$tmp/ipbad"
bad "odd arguments" "expected CONFIG RESULT pairs" "$tmp/a.yaml"
bad "unknown term" "unknown term 'eff_nothing'" --fit eff_nothing \
	"$tmp/a.yaml" "$tmp/a.json"
bad "bad start" "bad start value" --fit eff_memory=1.5 \
	"$tmp/a.yaml" "$tmp/a.json"
echo "PASS: calibrate serving"
