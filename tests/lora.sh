#!/bin/sh
# LoRA adapters in `kvsim run` (docs/lora.md):
#  1. a run without LoRA has no lora column (the files keep theirs);
#  2. a kvsim CSV trace's `lora` names become ids 1..N in order of first
#     appearance ("" the base model), and summary.csv counts 3 adapters;
#  3. 16 Zipf-popular adapters: max_loras 1 gives smaller batches (mean
#     running) and longer queueing than max_loras 4;
#  4. the generator is deterministic (same seed, same adapters) and adapter
#     1 is the most requested, each of 1..4 more than adapter 16;
#  5. the adapter slots' weights come out of the KV cache: fewer blocks
#     with LoRA on, fewer with max_loras 4 than with 1;
#  6. config.yaml writes the LoRA keys back and runs to the same rows;
#  7. bad values: FILE:LINE:COL (or the run's source), exit 2.
: "${KVSIM:?}" "${top_srcdir:?}"
T=${TMPDIR:-/tmp}/kvsim-lora.$$
trap 'rm -rf "$T"' EXIT
mkdir -p "$T"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }
EX=$top_srcdir/examples/lora-zipf.yaml
D=$top_srcdir/tests/lora

# column NAME of FILE's row ROW (2: the first data row)
col() { # file name row
	awk -F, -v n="$2" -v r="$3" 'NR == 1 { for (i = 1; i <= NF; i++)
		if ($i == n) c = i; next } NR == r { print $c; exit }' "$1"
}
# mean of column NAME over FILE's rows
mean() { # file name
	awk -F, -v n="$2" 'NR == 1 { for (i = 1; i <= NF; i++)
		if ($i == n) c = i; next } { s += $c; k++ }
		END { printf "%.6f\n", k ? s / k : 0 }' "$1"
}
run() { # out args...
	o=$1; shift
	"$KVSIM" run "$@" -o "$T/$o" >"$T/$o.log" 2>&1 ||
		{ bad "run $o: $(tail -1 "$T/$o.log")"; return 1; }
}

# 1
run off "$EX" --set engine.enable_lora=false
if head -1 "$T/off/requests.csv" | grep -q lora ||
   head -1 "$T/off/summary.csv" | grep -q lora; then
	bad "a run without LoRA has lora columns"
else ok "no lora columns without LoRA"; fi

# 2
run trace "$D/trace.yaml"
got=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "lora") c = i;
	next } { printf "%s ", $c }' "$T/trace/requests.csv")
[ "$got" = "1 0 2 1 3 " ] && ok "trace names to ids: $got" ||
	bad "trace ids '$got', want '1 0 2 1 3 '"
[ "$(col "$T/trace/summary.csv" lora_adapters 2)" = 3 ] &&
	ok "3 adapters requested" || bad "lora_adapters not 3"

# 3
run m1 "$EX" --set engine.max_loras=1
run m4 "$EX" --set engine.max_loras=4
r1=$(mean "$T/m1/timeseries.csv" running)
r4=$(mean "$T/m4/timeseries.csv" running)
q1=$(mean "$T/m1/requests.csv" queue_s)
q4=$(mean "$T/m4/requests.csv" queue_s)
if awk -v a="$r1" -v b="$r4" -v c="$q1" -v d="$q4" \
    'BEGIN { exit !(a < b && c > d) }'; then
	ok "max_loras 1: running $r1 < $r4, queue $q1 s > $q4 s"
else bad "max_loras 1 vs 4: running $r1 vs $r4, queue $q1 vs $q4"; fi
l4=$(col "$T/m4/summary.csv" lora_loads 2)
[ "${l4:-0}" -ge 16 ] 2>/dev/null && ok "$l4 adapter loads" ||
	bad "lora_loads '$l4' (16 adapters, 4 slots: at least 16)"

# 4
run m4b "$EX" --set engine.max_loras=4
cmp -s "$T/m4/requests.csv" "$T/m4b/requests.csv" &&
	ok "same seed, same rows" || bad "two runs differ"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "lora") c = i;
	next } { n[$c]++ } END { for (a = 1; a <= 16; a++) print a, n[a] + 0 }' \
	"$T/m4/requests.csv" >"$T/pop"
if awk '{ n[$1] = $2 } END { for (a = 2; a <= 16; a++)
	if (n[a] > n[1]) exit 1; for (a = 1; a <= 4; a++)
	if (n[a] <= n[16]) exit 1 }' "$T/pop"; then
	ok "adapter 1 most popular ($(head -1 "$T/pop"), $(tail -1 "$T/pop"))"
else bad "popularity order: $(tr '\n' ' ' <"$T/pop")"; fi

# 5
b0=$(col "$T/off/summary.csv" num_gpu_blocks 2)
b1=$(col "$T/m1/summary.csv" num_gpu_blocks 2)
b4=$(col "$T/m4/summary.csv" num_gpu_blocks 2)
[ "$b4" -lt "$b1" ] && [ "$b1" -lt "$b0" ] &&
	ok "KV blocks $b0 > $b1 > $b4" || bad "KV blocks $b0, $b1, $b4"

# 6
run again "$T/m4/config.yaml"
cut -d, -f2- "$T/m4/requests.csv" >"$T/a"
cut -d, -f2- "$T/again/requests.csv" >"$T/b"
cmp -s "$T/a" "$T/b" && ok "config.yaml runs again" ||
	bad "config.yaml runs differently"

# 7
for f in bad_max_loras bad_rank bad_fraction; do
	"$KVSIM" run "$D/$f.yaml" -o "$T/$f" >/dev/null 2>"$T/err"
	rc=$?
	if [ $rc -eq 2 ] && grep -q "$D/$f.yaml:[0-9]*:[0-9]*: " "$T/err"
	then ok "$f: $(cat "$T/err")"
	else bad "$f: exit $rc, $(cat "$T/err")"; fi
done
for s in "engine.max_cpu_loras=2" "policy=vllm-v0"; do
	"$KVSIM" run "$EX" --set "$s" -o "$T/x" >/dev/null 2>"$T/err"
	rc=$?
	[ $rc -eq 2 ] && grep -q "lora" "$T/err" &&
		ok "$s refused: $(cat "$T/err")" ||
		bad "$s: exit $rc, $(cat "$T/err")"
done
"$KVSIM" run "$EX" --set engine.max_loras=0 -o "$T/x" >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q -- "--set engine.max_loras=0" "$T/err" &&
	ok "--set max_loras=0 refused" || bad "--set max_loras=0: $(cat "$T/err")"
# 8. workload.lora_adapters: ids are places in the list, and a trace row
# naming an adapter not in it is refused at its FILE:LINE:COL
run listed "$D/trace.yaml" --set workload.lora_adapters="chat, sql, summarize"
got=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "lora") c = i;
	next } { printf "%s ", $c }' "$T/listed/requests.csv")
[ "$got" = "2 0 1 2 3 " ] && ok "listed adapters' ids: $got" ||
	bad "listed ids '$got', want '2 0 1 2 3 '"
"$KVSIM" run "$D/trace.yaml" --set workload.lora_adapters=chat,summarize \
	-o "$T/unk" >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q "trace.csv:2:10: .*unknown adapter 'sql'" "$T/err" &&
	[ ! -e "$T/unk/requests.csv" ] &&
	ok "an unknown adapter refused: $(cat "$T/err")" ||
	bad "unknown adapter: exit $rc, $(cat "$T/err")"
printf 'workload:\n  lora_adapters: [chat, sql, chat]\n' >"$T/dup.yaml"
"$KVSIM" run "$T/dup.yaml" -o "$T/dup" >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q "dup.yaml:2:[0-9]*: .*'chat' is listed twice" \
	"$T/err" && ok "a name listed twice refused" ||
	bad "listed twice: exit $rc, $(cat "$T/err")"
exit $fail
