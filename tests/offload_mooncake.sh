#!/bin/sh
# CPU offload on the Mooncake conversation trace of ../shared/traces
# (examples/cpu-offload-mooncake.yaml, cut to 600 requests): with the
# CPU tier, hits are served from it, the mean TTFT is lower than without
# it, and the bytes loaded agree with the hits (blocks x bytes a block,
# kv_bytes_per_token from `kvsim catalog show`).  Skipped (77) without
# the traces; tests/offload.sh covers the same on a synthetic workload.
: "${KVSIM:?}" "${top_srcdir:?}"
dir=${KVSIM_TRACES:-}
tr=$dir/mooncake_fast25_conversation_trace.jsonl.gz
if [ -z "$dir" ] || [ ! -r "$tr" ]; then
	echo "SKIP: no Mooncake trace in '${dir}'"
	exit 77
fi
T=${TMPDIR:-/tmp}/kvsim-offload-mc.$$
trap 'rm -rf "$T"' EXIT
mkdir -p "$T"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }
col() { # file name: the first data row's value
	awk -F, -v n="$2" 'NR == 1 { for (i = 1; i <= NF; i++)
		if ($i == n) c = i; next } { print $c; exit }' "$1"
}
run() { # dir, sets...
	d=$1; shift
	"$KVSIM" run -q --no-plot -o "$T/$d" \
		"$top_srcdir/examples/cpu-offload-mooncake.yaml" \
		--set "workload.trace=$tr" --set workload.max_requests=600 "$@"
}
run on || bad "run with offload"
run off --set engine.kv_offloading_size=0 || bad "run without offload"
hit=$(col "$T/on/summary.csv" offload_cpu_hit_tokens)
[ -n "$hit" ] && [ "$hit" -gt 0 ] && ok "CPU-tier hits: $hit tokens" ||
	bad "no CPU-tier hits ('$hit')"
t_on=$(col "$T/on/summary.csv" ttft_mean_s)
t_off=$(col "$T/off/summary.csv" ttft_mean_s)
awk -v a="$t_on" -v b="$t_off" 'BEGIN { exit !(a < b) }' &&
	ok "mean TTFT $t_on s with offload < $t_off s without" ||
	bad "mean TTFT $t_on s with offload, $t_off s without"
bs=$(col "$T/on/summary.csv" block_size)
bpt=$("$KVSIM" catalog show meta-llama/Llama-3.1-8B |
	sed -n 's/^kv_bytes_per_token: \([0-9,]*\) .*/\1/p' | tr -d ,)
blocks=$(awk -F, -v bs="$bs" 'NR == 1 { for (i = 1; i <= NF; i++)
	if ($i == "offload_hit_tokens_cpu") c = i; next }
	{ s += int(($c + bs - 1) / bs) } END { printf "%d\n", s }' \
	"$T/on/requests.csv")
lb=$(col "$T/on/summary.csv" offload_cpu_load_bytes)
[ "$lb" = "$((blocks * bpt * bs))" ] &&
	ok "load bytes $lb = $blocks blocks x $((bpt * bs))" ||
	bad "load bytes $lb, expected $blocks x $((bpt * bs))"
exit $fail
