#!/bin/sh
# bench_run.sh -- `kvsim run` speed and memory (docs/BENCHMARKS.md,
# "Simulation"): the whole Azure conversation trace (19,366 requests) and
# the same trace cut or tiled to about 10^4, 10^5 and 10^6 requests, on the
# default engine (Llama-3.1-8B, H100, vllm-v1).  Prints requests, simulated
# seconds, wall and user CPU seconds, simulated requests per wall-second
# and max RSS.  Plots are off (--no-plot): they time gnuplot, not the
# simulation.  On a shared machine the user seconds are the steadier
# figure.  KVSIM_TRACES: the traces folder; BENCH_RUN_MAX: largest tile
# count (52).
set -u
: "${KVSIM:=sim/kvsim}"
: "${KVSIM_TRACES:=../shared/traces}"
tr=$(cd "$KVSIM_TRACES" 2>/dev/null && pwd)/azure_llm_2023_conv.csv
[ -r "$tr" ] || { echo "bench_run: no $tr (set KVSIM_TRACES)"; exit 0; }
out=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT
noplot=
"$KVSIM" run --help 2>/dev/null | grep -q -- --no-plot && noplot=--no-plot
printf '%-22s %9s %11s %8s %8s %12s %9s\n' case requests sim_s wall_s \
    user_s req_per_s rss_mb
one() { # label copies max_requests
	/usr/bin/time -f '%e %U %M' -o "$out/time" "$KVSIM" run -q --force \
	    $noplot --out "$out/r" --set workload.trace="$tr" \
	    --set workload.format=azure --set workload.tile.copies="$2" \
	    --set workload.max_requests="$3" >/dev/null || return
	read -r wall user rss <"$out/time"
	n=$(sed -n 2p "$out/r/summary.csv" | cut -d, -f1)
	d=$(sed -n 2p "$out/r/summary.csv" | cut -d, -f3)
	awk -v l="$1" -v n="$n" -v d="$d" -v w="$wall" -v u="$user" \
	    -v m="$rss" 'BEGIN {
	    printf "%-22s %9d %11.1f %8.2f %8.2f %12.0f %9.1f\n", l, n, d,
	        w, u, (w > 0 ? n / w : 0), m / 1024 }'
}
one "azure-conv 10^4" 1 10000
one "azure-conv (all)" 1 0
one "azure-conv x6 (10^5)" 6 100000
[ "${BENCH_RUN_MAX:-52}" -ge 52 ] && one "azure-conv x52 (10^6)" 52 1000000
exit 0
