#!/bin/sh
# bench_capacity.sh -- `kvsim capacity` on the whole Azure conversation
# trace (19,366 requests; docs/BENCHMARKS.md "Capacity"): the default
# engine (Llama-3.1-8B, H100, vllm-v1), --slo ttft_s:p99<=2, three seeds,
# with and without the early stop.  Prints simulations, wall seconds and
# the answer.  KVSIM_TRACES: the traces folder.
set -u
: "${KVSIM:=sim/kvsim}"
: "${KVSIM_TRACES:=../shared/traces}"
tr=$(cd "$KVSIM_TRACES" 2>/dev/null && pwd)/azure_llm_2023_conv.csv
[ -r "$tr" ] || { echo "bench_capacity: no $tr (set KVSIM_TRACES)"; exit 0; }
out=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT
printf '%-26s %5s %11s %8s %12s\n' case jobs simulations wall_s max_qps
one() { # label jobs extra-option
	/usr/bin/time -f '%e' -o "$out/time" "$KVSIM" capacity -q --no-plot \
	    --force --out "$out/c" --set workload.trace="$tr" \
	    --set workload.format=azure --slo 'ttft_s:p99<=2' --seeds 3 \
	    --jobs "$2" $3 >/dev/null || return
	read -r wall <"$out/time"
	f=$out/c/capacity.csv
	c() { head -1 "$f" | tr ',' '\n' | grep -nx "$1" | cut -d: -f1; }
	s=$(sed -n 2p "$f" | cut -d, -f"$(c simulations)")
	q=$(sed -n 2p "$f" | cut -d, -f"$(c max_qps_under_slo)")
	printf '%-26s %5s %11s %8s %12s\n' "$1" "$2" "$s" "$wall" "$q"
}
one "azure-conv, early stop" 1 ""
one "azure-conv, early stop" 2 ""
one "azure-conv, no early stop" 1 --no-early-stop
exit 0
