#!/bin/sh
# frontend.sh -- the API server's time in `kvsim run` (docs/cost-model.md
# §5.3, docs/metrics.md):
#  1. at light load (two requests 1 s apart) the frontend terms of a
#     calibration file add exactly request + tokenize x prompt + stream to
#     each TTFT and E2E, nothing to TPOT and ITL; frontend_in_s and
#     frontend_out_s say which part is which, and summary.csv has their
#     means;
#  2. with every frontend term 0 the run's outputs equal the engine-only
#     run byte for byte but for the new columns (all 0);
#  3. under load: four requests arriving together, 1 ms of output work a
#     token: the API server sends one step's four tokens one after another,
#     so their client delays are 1, 2, 3 and 4 ms (the FIFO backlog);
#  4. defaults: the vLLM policies get vLLM's API server (1 ms + 1.1 us a
#     prompt token in, 25 us a token out), the others none;
#  5. the calibration keys load, and a bad value exits 2 with
#     FILE:LINE:COL and writes nothing.
: "${KVSIM:?}" "${top_srcdir:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-frontend.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
sval() { c=$(col "$1" "$2"); sed -n 2p "$1" | cut -d, -f"$c"; }
# every row's value of column $2
rows() { c=$(col "$1" "$2"); tail -n +2 "$1" | cut -d, -f"$c"; }
NOFE=$top_srcdir/tests/gpu/no-frontend.yaml

printf '%s\n' 'model: meta-llama/Llama-3.1-8B' 'policy: vllm-v1' \
	'workload:' '  generator: {requests: 2, arrival: {process: constant,' \
	'    rate: 1}, prompt: {dist: fixed, value: 100},' \
	'    output: {dist: fixed, value: 5}}' >"$T/light.yaml"
printf '%s\n' 'frontend_request_ns: {value: 2000000, source: "test"}' \
	'frontend_tokenize_ns: 1000' 'frontend_stream_ns: 300000' >"$T/fe.yaml"
printf '%s\n' 'frontend_request_ns: 0' 'frontend_tokenize_ns: 0' \
	'frontend_stream_ns: 1000000' >"$T/stream.yaml"

run() {	# run NAME CONFIG [--set ...]
	n=$1 f=$2
	shift 2
	"$KVSIM" run -q --no-plot --out "$T/$n" "$f" "$@" 2>"$T/$n.err" ||
		bad "$n: run failed: $(cat "$T/$n.err")"
}

# 1.
run eng "$T/light.yaml" --set cost.calibration="$NOFE"
run fe "$T/light.yaml" --set cost.calibration="$T/fe.yaml"
# in: 2 ms + 100 x 1 us = 2.1 ms; out: 0.3 ms a token
for m in ttft_s e2e_s; do
	rows "$T/eng/requests.csv" $m >"$T/eng.$m"
	rows "$T/fe/requests.csv" $m >"$T/fe.$m"
	got=$(paste -d' ' "$T/eng.$m" "$T/fe.$m" |
		awk '{ printf "%.9f ", $2 - $1 }')
	[ "$got" = "0.002400000 0.002400000 " ] ||
		bad "light load: $m grew by $got, want 2.4 ms each"
done
for m in tpot_s itl_mean_s itl_max_s; do
	[ "$(rows "$T/eng/requests.csv" $m)" = \
	  "$(rows "$T/fe/requests.csv" $m)" ] || bad "light load: $m changed"
done
[ "$(rows "$T/fe/requests.csv" frontend_in_s | tr '\n' ' ')" = \
  "0.002100000 0.002100000 " ] || bad "light load: frontend_in_s"
[ "$(rows "$T/fe/requests.csv" frontend_out_s | tr '\n' ' ')" = \
  "0.000300000 0.000300000 " ] || bad "light load: frontend_out_s"
[ "$(sval "$T/fe/summary.csv" frontend_in_mean_s)" = 0.002100000 ] ||
	bad "summary: frontend_in_mean_s"
[ "$(sval "$T/fe/summary.csv" frontend_out_mean_s)" = 0.000300000 ] ||
	bad "summary: frontend_out_mean_s"
# the engine's own milestones moved by the way in only
[ "$(rows "$T/fe/requests.csv" queue_s | tr '\n' ' ')" = \
  "$(rows "$T/eng/requests.csv" queue_s |
	awk '{ printf "%.9f ", $1 + 0.0021 }')" ] || bad "light load: queue_s"

# 2. all 0: today's outputs (tests/run/frontend0.*, written before the
# API server was modelled) byte for byte, but for the two new columns
run zero "$T/light.yaml" --set cost.calibration="$NOFE" \
    --set engine.async_scheduling=false
# the run id (a hash of the configuration) and sim_wall_s aside
# (requests.csv: the two frontend columns; summary.csv: calibration and
# the two frontend means)
n=$(head -1 "$T/zero/requests.csv" | tr ',' '\n' | grep -c .)
cut -d, -f1-$((n - 2)) "$T/zero/requests.csv" >"$T/zero.requests"
n=$(head -1 "$T/zero/summary.csv" | tr ',' '\n' | grep -c .)
cut -d, -f1-$((n - 3)) "$T/zero/summary.csv" >"$T/zero.summary"
cut -d, -f2- "$T/zero.requests" >"$T/zero.r"
sw=$(col "$T/zero.summary" sim_wall_s)
id=$(col "$T/zero.summary" run_id)
cut -d, -f"$sw,$id" --complement "$T/zero.summary" >"$T/zero.s"
cut -d, -f2- "$T/zero/timeseries.csv" >"$T/zero.t"
cmp -s "$T/zero.r" "$top_srcdir/tests/run/frontend0.requests" ||
	bad "all 0: requests.csv is not today's"
cmp -s "$T/zero.s" "$top_srcdir/tests/run/frontend0.summary" ||
	bad "all 0: summary.csv is not today's"
cmp -s "$T/zero.t" "$top_srcdir/tests/run/frontend0.timeseries" ||
	bad "all 0: timeseries.csv is not today's"
run nofe "$T/light.yaml" --set policy=kvsim
[ "$(rows "$T/nofe/requests.csv" frontend_in_s | tr '\n' ' ')" = \
  "0.000000000 0.000000000 " ] || bad "kvsim policy: a way in"
[ "$(rows "$T/nofe/requests.csv" frontend_out_s | tr '\n' ' ')" = \
  "0.000000000 0.000000000 " ] || bad "kvsim policy: a way out"

# 3. four requests together; the last step's four tokens leave 1 ms apart
printf '%s\n' arrival_ns,prompt_tokens,output_tokens 0,64,4 0,64,4 0,64,4 \
	0,64,4 >"$T/four.csv"
printf '%s\n' 'model: meta-llama/Llama-3.1-8B' 'policy: vllm-v1' \
	'workload: {trace: four.csv}' >"$T/four.yaml"
run four "$T/four.yaml" --set cost.calibration="$T/stream.yaml"
run four0 "$T/four.yaml" --set cost.calibration="$NOFE"
[ "$(rows "$T/four/requests.csv" frontend_out_s | sort | tr '\n' ' ')" = \
  "0.001000000 0.002000000 0.003000000 0.004000000 " ] ||
	bad "backlog: frontend_out_s" \
	    "$(rows "$T/four/requests.csv" frontend_out_s | tr '\n' ' ')"
[ "$(rows "$T/four/requests.csv" frontend_in_s | sort -u)" = 0.000000000 ] ||
	bad "backlog: no way in, but frontend_in_s"
rows "$T/four0/requests.csv" ttft_s >"$T/four0.t"
rows "$T/four/requests.csv" ttft_s >"$T/four.t"
got=$(paste -d' ' "$T/four0.t" "$T/four.t" |
	awk '{ printf "%.9f\n", $2 - $1 }' | sort | tr '\n' ' ')
[ "$got" = "0.001000000 0.002000000 0.003000000 0.004000000 " ] ||
	bad "backlog: TTFT grew by $got"

# 4. defaults (of the cost model: not kvsim's H100 calibration, which
# fits frontend_request_ns)
run def "$T/light.yaml" --set cost.calibration=none
[ "$(sval "$T/def/requests.csv" frontend_in_s)" = 0.001110000 ] ||
	bad "vllm-v1 default: frontend_in_s" \
	    "$(sval "$T/def/requests.csv" frontend_in_s)"
[ "$(sval "$T/def/requests.csv" frontend_out_s)" = 0.000025000 ] ||
	bad "vllm-v1 default: frontend_out_s"
run def0 "$T/light.yaml" --set policy=vllm-v0
[ "$(sval "$T/def0/requests.csv" frontend_in_s)" = 0.001110000 ] ||
	bad "vllm-v0 default: frontend_in_s"
run defds "$T/light.yaml" --set policy=deepspeed-fastgen
[ "$(sval "$T/defds/summary.csv" frontend_in_mean_s)" = 0.000000000 ] ||
	bad "deepspeed-fastgen: an API server"

# 5. bad values: FILE:LINE:COL, exit 2, nothing written
printf '%s\n' 'frontend_request_ns: 5' 'frontend_stream_ns: -1' >"$T/bad1.yaml"
printf '%s\n' 'frontend_tokenize_ns: {value: fast}' >"$T/bad2.yaml"
printf '%s\n' 'frontend_detok_ns: 3' >"$T/bad3.yaml"
for b in "bad1:2:21: frontend_stream_ns: expected a number in [0, 1e12]" \
	 "bad2:1:31: frontend_tokenize_ns: expected a number, got 'fast'" \
	 "bad3:1:1: unknown key 'frontend_detok_ns'"; do
	n=${b%%:*}
	"$KVSIM" run -q --no-plot --out "$T/o$n" "$T/light.yaml" \
		--set cost.calibration="$T/$n.yaml" >"$T/$n.out" 2>&1
	rc=$?
	[ $rc = 2 ] || bad "$n: exit $rc, want 2"
	grep -qF "$T/$n.yaml:${b#*:}" "$T/$n.out" ||
		bad "$n: message: $(cat "$T/$n.out")"
	[ -e "$T/o$n" ] && bad "$n: wrote $T/o$n"
done
exit $fail
