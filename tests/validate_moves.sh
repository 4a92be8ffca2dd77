#!/bin/sh
# kvsim validate over KV offload and prefill/decode disaggregation
# (docs/gpu.md §1.1, §3): the simulator's offload transfers and P/D KV
# transfers run on the host backend's tier pools and as peer copies
# between replicas' backends, and every slot moved is checked:
#  1. a vllm-v1 run with a CPU tier on a pool too small for its shared
#     prefixes stores and loads blocks with 0 integrity failures, the
#     move rows and summary keys are there, and a run without offload
#     keeps its reports as before (no move rows);
#  2. a fault in a tier store, a tier load, and a fault on a direction
#     the run never uses, all exit 1: the first two caught, the last
#     named as never fired;
#  3. a P/D run moves every request's KV from its prefill replica into
#     its decode replica with 0 failures, and a corrupted or dropped
#     transfer is caught.
# Each part needs the simulator side of its feature (the offload keys,
# the disaggregation section); a build without it says so and skips
# that part, and skips the whole script (77) when it has neither.
: "${KVSIM:?}" "${top_srcdir:?}"
cfg=$top_srcdir/tests/gpu/swap.yaml
tmp=${TMPDIR:-/tmp}/kvsim-validate-moves.$$
mkdir -p "$tmp" || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

run() {	# run NAME EXPECTED-RC ARGS...: output in $tmp/NAME.out
	name=$1 want=$2
	shift 2
	"$KVSIM" validate -q "$@" >"$tmp/$name.out" 2>&1
	got=$?
	[ "$got" -eq "$want" ] ||
		{ cat "$tmp/$name.out"; fail "$name: exit $got, want $want"; }
}
val() {	# val NAME KEY: a value of validate_summary.csv
	sed -n "s/^$2,//p" "$tmp/$1/validate_summary.csv"
}
row() {	# row NAME CLASS N: field N of validate.csv's CLASS row (2
	# batches, 3 blocks)
	awk -F, -v c="$2" -v f="$3" '$1 == c { print $f }' \
		"$tmp/$1/validate.csv"
}

# 1-2. offload: a CPU tier of 0.5 GiB of Llama-3.1-8B blocks (tiny
# geometry on the backend: the ids and counts are the run's)
off="--set policy=vllm-v1 --set engine.preemption_mode=recompute
     --set engine.kv_offloading_size=0.5"
# shellcheck disable=SC2086
run off 0 "$cfg" $off --out "$tmp/off"
[ "$(val off failures)" = 0 ] || fail "offload: failures"
st=$(row off tier_out 3) ld=$(row off tier_in 3)
[ "${st:-0}" -gt 0 ] && [ "${ld:-0}" -gt 0 ] ||
	fail "offload: no stores ($st) or no loads ($ld)"
[ "$(val off move_verified_slots)" -gt 0 ] ||
	fail "offload: no slot checked after the moves"
run plain 0 "$cfg" --set policy=vllm-v1 \
	--set engine.preemption_mode=recompute --out "$tmp/plain"
grep -q '^tier_\|^transfer' "$tmp/plain/validate.csv" &&
	fail "a run without offload has move rows"
grep -q '^move_' "$tmp/plain/validate_summary.csv" &&
	fail "a run without offload has move keys"
small="--set workload.generator.requests=60"
for f in corrupt/d2t drop/t2d reorder/t2d; do
	n=off-$(echo "$f" | tr / -)
	# shellcheck disable=SC2086
	run "$n" 1 "$cfg" $off $small --backend "fault:$f"
	grep -q 'FAILED: [1-9][0-9]* integrity failure.*after an offload' \
		"$tmp/$n.out" || fail "fault $f not caught"
done
# shellcheck disable=SC2086
run off-idle 1 "$cfg" $off $small --backend fault:corrupt/peer
grep -q 'FAILED: fault:corrupt/peer never fired' "$tmp/off-idle.out" ||
	fail "off-idle: $(cat "$tmp/off-idle.out")"
# the LMCache-like chain with a disk tier: loads from the disk and the
# copies up into the CPU tier (docs/offload.md O24) are checked too
lmc="--set engine.kv_offloading_backend=lmcache
     --set kv_offload.lmcache.chunk_size=32
     --set kv_offload.lmcache.max_local_cpu_size=0.02
     --set kv_offload.lmcache.local_disk=true
     --set kv_offload.lmcache.max_local_disk_size=1"
# shellcheck disable=SC2086
run lmc 0 "$cfg" $off $lmc --out "$tmp/lmc"
[ "$(val lmc failures)" = 0 ] || fail "lmcache: failures"
[ "$(row lmc tier_in 3)" -gt 0 ] || fail "lmcache: no loads"

# 3. P/D: 1 prefill and 2 decode replicas, distinct prompts
printf '%s\n' 'model: meta-llama/Llama-3.1-8B' 'policy: vllm-v1' \
	'disaggregation:' '  link: ib-ndr-400' '  prefill: {replicas: 1}' \
	'  decode: {replicas: 2}' 'workload:' \
	'  generator: {requests: 40, arrival: {process: constant,' \
	'    rate: 10}, prompt: {dist: uniform, min: 100, max: 600},' \
	'    output: {dist: fixed, value: 20}}' >"$tmp/pd.yaml"
run pd 0 "$tmp/pd.yaml" --out "$tmp/pd"
[ "$(val pd failures)" = 0 ] || fail "P/D: failures"
[ "$(row pd transfer 2)" -ge 40 ] ||
	fail "P/D: $(row pd transfer 2) transfers for 40 requests"
[ "$(val pd move_verified_slots)" -gt 0 ] ||
	fail "P/D: no slot checked after the transfers"
for f in corrupt/peer drop/peer@last; do
	n=pd-$(echo "$f" | tr /@ --)
	run "$n" 1 "$tmp/pd.yaml" --backend "fault:$f"
	grep -q 'FAILED: [1-9][0-9]* integrity failure.*after a KV transfer' \
		"$tmp/$n.out" || fail "fault $f not caught"
done
echo "validate_moves: ok"
