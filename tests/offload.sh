#!/bin/sh
# KV offload in `kvsim run` (docs/run.md "KV offload"), on a synthetic
# workload that never skips (tests/offload/syn.yaml: 32 shared prefixes of
# 2,048 tokens, a GPU pool that holds few of them):
#  1. without offload no offload column appears (the files keep theirs);
#  2. with a 16 GiB CPU tier (native connector) hits are served from it,
#     requests.csv's per-request hits add up to summary.csv's, and the mean
#     TTFT is lower than without;
#  3. the accounting: summary load bytes == the CPU hits' blocks x bytes a
#     block, store bytes == the blocks stored (still in the tier or
#     evicted) x bytes a block; bytes a block from `kvsim catalog show`'s
#     kv_bytes_per_token x block_size, not a constant;
#  4. config.yaml writes the offload keys back and runs again to the same
#     requests.csv;
#  5. LMCache with a small CPU tier and a disk tier serves hits from disk;
#  6. bad offload settings (tests/bad/offload-*.yaml): FILE:LINE:COL, exit 2;
#  7. a load started by step N (its request chosen at 0.40 s) is seen by
#     the step chosen after step N's output: N+1 (0.41 s) with the
#     synchronous loop, N+2 (0.42 s) with async scheduling, whose step N+1
#     is chosen while step N runs (tests/offload/timing.yaml);
#  8. `kvsim catalog list tiers` lists data/tiers.yaml's three media.
: "${KVSIM:?}" "${top_srcdir:?}"
T=${TMPDIR:-/tmp}/kvsim-offload.$$
trap 'rm -rf "$T"' EXIT
mkdir -p "$T"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }
SYN=$top_srcdir/tests/offload/syn.yaml

# column NAME of FILE's row ROW (2: the first data row; $ the last)
col() { # file name row
	awk -F, -v n="$2" -v r="$3" 'NR == 1 { for (i = 1; i <= NF; i++)
		if ($i == n) c = i; next }
		{ last = $c } r != "$" && NR == r { print $c; exit }
		END { if (r == "$") print last }' "$1"
}
# sum of column NAME over FILE's rows, each rounded up to a multiple of M
colsum() { # file name m
	awk -F, -v n="$2" -v m="$3" 'NR == 1 { for (i = 1; i <= NF; i++)
		if ($i == n) c = i; next }
		{ s += int(($c + m - 1) / m) } END { printf "%d\n", s }' "$1"
}

"$KVSIM" run -q --no-plot -o "$T/off" "$SYN" || bad "run without offload"
"$KVSIM" run -q --no-plot -o "$T/on" "$SYN" \
	--set engine.kv_offloading_size=16 || bad "run with offload"

# 1.
if grep -q offload_ "$T/off/requests.csv" "$T/off/summary.csv" \
	"$T/off/timeseries.csv" || grep -q '^[^#]*kv_offload' \
	"$T/off/config.yaml"; then
	bad "offload columns or keys without offload"
else
	ok "no offload columns without offload"
fi

# 2.
hit=$(col "$T/on/summary.csv" offload_cpu_hit_tokens 2)
rsum=$(colsum "$T/on/requests.csv" offload_hit_tokens_cpu 1)
[ -n "$hit" ] && [ "$hit" -gt 0 ] && ok "CPU-tier hits: $hit tokens" ||
	bad "no CPU-tier hits ('$hit')"
[ "$hit" = "$rsum" ] && ok "requests.csv hits add up ($rsum)" ||
	bad "requests.csv hits $rsum, summary $hit"
t_off=$(col "$T/off/summary.csv" ttft_mean_s 2)
t_on=$(col "$T/on/summary.csv" ttft_mean_s 2)
if awk -v a="$t_on" -v b="$t_off" 'BEGIN { exit !(a < b) }'; then
	ok "mean TTFT $t_on s with offload < $t_off s without"
else
	bad "mean TTFT $t_on s with offload, $t_off s without"
fi

# 3.
bs=$(col "$T/on/summary.csv" block_size 2)
bpt=$("$KVSIM" catalog show meta-llama/Llama-3.1-8B |
	sed -n 's/^kv_bytes_per_token: \([0-9,]*\) .*/\1/p' | tr -d ,)
bpb=$((bpt * bs))
blocks=$(colsum "$T/on/requests.csv" offload_hit_tokens_cpu "$bs")
lb=$(col "$T/on/summary.csv" offload_cpu_load_bytes 2)
[ "$lb" = "$((blocks * bpb))" ] &&
	ok "load bytes $lb = $blocks blocks x $bpb" ||
	bad "load bytes $lb, expected $blocks x $bpb = $((blocks * bpb))"
used=$(col "$T/on/timeseries.csv" offload_cpu_used_blocks '$')
ev=$(col "$T/on/summary.csv" offload_cpu_evicted_blocks 2)
sb=$(col "$T/on/summary.csv" offload_cpu_store_bytes 2)
[ -n "$used" ] && [ "$used" -gt 0 ] &&
	[ "$sb" = "$(((used + ev) * bpb))" ] &&
	ok "store bytes $sb = ($used used + $ev evicted) blocks x $bpb" ||
	bad "store bytes $sb, expected ($used + $ev) x $bpb"

# 4.
grep -q '^  kv_offloading_size: 16$' "$T/on/config.yaml" &&
	grep -q '^kv_offload:$' "$T/on/config.yaml" &&
	ok "config.yaml has the offload keys" ||
	bad "config.yaml lacks the offload keys"
"$KVSIM" run -q --no-plot -o "$T/again" "$T/on/config.yaml" ||
	bad "config.yaml does not run"
cmp -s "$T/on/requests.csv" "$T/again/requests.csv" &&
	ok "config.yaml runs to the same requests.csv" ||
	bad "config.yaml runs to another requests.csv"

# 5.
"$KVSIM" run -q --no-plot -o "$T/lmc" "$SYN" \
	--set engine.kv_offloading_size=1 \
	--set engine.kv_offloading_backend=lmcache \
	--set kv_offload.lmcache.local_disk=true \
	--set kv_offload.lmcache.max_local_disk_size=32 ||
	bad "lmcache run"
dh=$(col "$T/lmc/summary.csv" offload_disk_hit_tokens 2)
dsum=$(colsum "$T/lmc/requests.csv" offload_hit_tokens_disk 1)
[ -n "$dh" ] && [ "$dh" -gt 0 ] && [ "$dh" = "$dsum" ] &&
	ok "lmcache disk-tier hits: $dh tokens" ||
	bad "lmcache disk-tier hits '$dh', requests.csv $dsum"
head -1 "$T/lmc/timeseries.csv" |
	grep -q ',offload_cpu_used_blocks,offload_disk_used_blocks$' &&
	ok "timeseries has a used-blocks column per tier" ||
	bad "timeseries offload columns"

# 6.
expect_bad() { # file message
	"$KVSIM" run -q --out "$T/bad" "$top_srcdir/tests/bad/$1" \
		>/dev/null 2>"$T/err"
	rc=$?
	if [ $rc -eq 2 ] && grep -qF "$2" "$T/err" && [ ! -e "$T/bad" ]; then
		ok "$1"
	else
		bad "$1: exit $rc: $(cat "$T/err")"
		rm -rf "$T/bad"
	fi
}
expect_bad offload-policy.yaml "offload-policy.yaml:3:23: engine.kv_offloading_size: KV offload needs policy vllm-v1"
expect_bad offload-block.yaml "offload-block.yaml:4:15: kv_offload.block_size: 24 tokens is not a multiple of the GPU block size (16)"
expect_bad offload-tier.yaml "offload-tier.yaml:5:29: kv_offload.tiers.local-nvme.read_gbps: expected GB/s"
expect_bad offload-medium.yaml "offload-medium.yaml:5:5: unknown key 'kv_offload.tiers.tape'"
expect_bad offload-backend.yaml "offload-backend.yaml:3:26: engine.kv_offloading_backend: expected native or lmcache"
expect_bad offload-size.yaml "offload-size.yaml:2:23: engine.kv_offloading_size: 0.001 GiB holds no offloaded block"
expect_bad offload-disk.yaml "offload-disk.yaml:6:17: kv_offload.lmcache.local_disk needs max_local_disk_size"

# 7.
for a in false:0.010000000 true:0.020000000; do
	"$KVSIM" run -q --no-plot -o "$T/tm$a" \
		"$top_srcdir/tests/offload/timing.yaml" \
		--set "engine.async_scheduling=${a%:*}" || bad "timing run"
	row=$(awk -F, '$2 == 3' "$T/tm$a/requests.csv")
	q=$(echo "$row" | cut -d, -f14)
	h=$(echo "$row" | cut -d, -f23)
	[ "$h" = 160 ] && [ "$q" = "${a#*:}" ] &&
		ok "async_scheduling ${a%:*}: loaded request queued $q s" ||
		bad "async_scheduling ${a%:*}: request 3 hit '$h', queued" \
		    "'$q' s, not ${a#*:}"
done

# 8.
"$KVSIM" catalog list tiers >"$T/tiers" || bad "catalog list tiers"
[ "$(awk 'NR > 1 { printf "%s:%s ", $1, $2 }' "$T/tiers")" = \
  "cpu-dram:cpu local-nvme:disk remote-store:remote " ] &&
	grep -q '^local-nvme .* 13.0 GB/s  *6.6 GB/s  *100 us$' "$T/tiers" &&
	ok "catalog list tiers" || { bad "catalog list tiers"; cat "$T/tiers"; }
exit $fail
