#!/bin/sh
# bench_run.sh -- `kvsim run` speed and memory (docs/BENCHMARKS.md,
# "Simulation"): the whole Azure conversation trace (19,366 requests) and
# the same trace cut or tiled to about 10^4, 10^5 and 10^6 requests (and
# 10^7 where BENCH_RUN_MAX is 517 or more: 2.2 GB of requests.csv and
# about a minute a run in ff mode, three in single), on the
# default engine (Llama-3.1-8B, H100, vllm-v1), then a heavy load (the
# first 10^4 requests on a KV cache of 400 blocks, max_model_len 4096:
# requests queued all run long and 1,800 recompute preemptions).  Each case
# runs in both modes: with the fast-forward of steady decode ("ff") and
# with single steps only ("single", --no-fast-forward;
# docs/fastforward.md), whose outputs are the same.  Prints requests,
# simulated seconds, the steps made (and how many the fast-forward made),
# wall and user CPU seconds, simulated requests per wall-second, user CPU
# microseconds per simulated request (the figure for a flat cost per
# request: the wall time adds the kernel's copying of the outputs), wall
# nanoseconds per simulated token (prompt and output), and max RSS.  Plots
# are off (--no-plot): they time gnuplot, not the simulation.  Each case
# runs BENCH_RUN_REPEAT times (3), the modes in turn, and its rows give the
# least wall and user seconds of those runs (the rate and the ns a token
# from that wall time) and the largest RSS: on a shared machine one run in
# a few can be slowed by half, and the least of a few is the steadier
# figure.  KVSIM_TRACES: the traces folder; BENCH_RUN_MAX: largest tile
# count (52); BENCH_RUN_MODES: the modes ("ff single").
set -u
: "${KVSIM:=sim/kvsim}"
: "${KVSIM_TRACES:=../shared/traces}"
: "${BENCH_RUN_MODES:=ff single}"
: "${BENCH_RUN_REPEAT:=3}"
tr=$(cd "$KVSIM_TRACES" 2>/dev/null && pwd)/azure_llm_2023_conv.csv
[ -r "$tr" ] || { echo "bench_run: no $tr (set KVSIM_TRACES)"; exit 0; }
out=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT
printf '%-22s %-6s %9s %9s %9s %7s %7s %7s %9s %7s %7s %7s\n' case mode \
    requests sim_s steps ff_pct wall_s user_s req_per_s us_req ns_tok rss_mb
col() { # column $1 of mode $2's summary
	awk -F, -v c="$1" 'NR == 1 { for (i = 1; i <= NF; i++)
		if ($i == c) k = i; next } { print $k; exit }' \
	    "$out/summary.$2"
}
run1() { # mode copies max_requests [sets...]: one run, its time appended
	mo=$1 c=$2 m=$3
	shift 3
	flag=
	[ "$mo" = single ] && flag=--no-fast-forward
	KVSIM_FF_REPORT=1 /usr/bin/time -f '%e %U %M' -o "$out/time" \
	    "$KVSIM" run -q --force --no-plot $flag --out "$out/r" \
	    --set workload.trace="$tr" --set workload.format=azure \
	    --set workload.tile.copies="$c" \
	    --set workload.max_requests="$m" "$@" \
	    >/dev/null 2>"$out/err.$mo" || { cat "$out/err.$mo"; return 1; }
	cat "$out/time" >>"$out/times.$mo"
	cp "$out/r/summary.csv" "$out/summary.$mo"
}
one() { # label copies max_requests [sets...]
	l=$1
	shift
	rm -f "$out"/times.*
	i=0
	while [ "$i" -lt "$BENCH_RUN_REPEAT" ]; do
		i=$((i + 1))
		for mode in $BENCH_RUN_MODES; do
			run1 "$mode" "$@" || return
		done
	done
	for mode in $BENCH_RUN_MODES; do
		ff=$(sed -n 's/^kvsim run: fast-forward: \([0-9]*\) of.*/\1/p' \
		    "$out/err.$mode")
		awk -v l="$l" -v mo="$mode" -v n="$(col requests "$mode")" \
		    -v d="$(col duration_s "$mode")" -v s="$(col steps "$mode")" \
		    -v ff="${ff:-0}" -v tk="$(col input_tokens "$mode")" \
		    -v to="$(col output_tokens "$mode")" '
		    NR == 1 || $1 < w { w = $1 }
		    NR == 1 || $2 < u { u = $2 }
		    $3 > r { r = $3 }
		    END {
		    printf "%-22s %-6s %9d %9.1f %9d %7.1f %7.2f %7.2f %9.0f %7.3f %7.1f %7.1f\n",
		        l, mo, n, d, s, (s > 0 ? 100 * ff / s : 0), w, u,
		        (w > 0 ? n / w : 0), (n > 0 ? u * 1e6 / n : 0),
		        (tk + to > 0 ? w * 1e9 / (tk + to) : 0), r / 1024 }' \
		    "$out/times.$mode"
	done
}
one "azure-conv 10^4" 1 10000
one "azure-conv (all)" 1 0
one "azure-conv x6 (10^5)" 6 100000
[ "${BENCH_RUN_MAX:-52}" -ge 52 ] && one "azure-conv x52 (10^6)" 52 1000000
[ "${BENCH_RUN_MAX:-52}" -ge 517 ] &&
    one "azure-conv x517 (10^7)" 517 10000000
one "heavy: 400 blocks" 1 10000 --set engine.num_gpu_blocks_override=400 \
    --set engine.max_model_len=4096
exit 0
