#!/bin/sh
# async_sched.sh -- vllm-v1's engine loop with async scheduling
# (engine.async_scheduling, engine.vllm_version; docs/run.md "Engine loop:
# async scheduling"):
#  1. tests/run/tiny.yaml (a constant 10 ms step; requests at 5 and 10 ms,
#     3 output tokens) under async, every timestamp by hand: request 1
#     arrives during step 1, after step 2 was chosen, so it is first
#     computed in step 3 (25-35 ms) and its first token is at 35 ms (25 ms
#     sync, in step 2); request 0's tokens come every step and it finishes
#     when its last token does (35 ms), without a step more;
#  2. a light load on the roofline model: the mean TTFT is about one decode
#     step more than sync's (between 0.5 and 1.5 mean TPOT more), and every
#     step's CPU time is hidden behind the GPU: the mean TPOT is less;
#  3. CPU overlap: one request alone with a 2 ms CPU term per step
#     (calibration) decodes 2 ms a token faster under async (its steps
#     take max(cpu, gpu), not cpu + gpu), to the nanosecond;
#  4. preemption: all requests at t = 0 on a KV cache too small for them
#     (recompute preemptions): the scheduler's decisions are sync's, so
#     requests.csv is sync's but for first_scheduled_s and queue_s, which
#     are one step earlier for every request not in the first step (the
#     step was chosen while the one before it ran); --check holds;
#  5. defaults: no keys give vllm_version "0.15.1" and async_scheduling
#     true in config.yaml, and a startup line; 0.13.0 resolves false,
#     0.14.0 true; an explicit false wins; config.yaml runs again the same;
#     other policies resolve false;
#  6. async_scheduling=false reproduces the loop before async scheduling
#     existed: the embedded default's requests.csv (run_id column left out)
#     has the checksum of that run made before the change;
#  7. bad values exit 2 with where: an unknown version in a file
#     (FILE:LINE:COL), a bad boolean (--set), async on a version without
#     it, either key with another policy.
set -u
: "${KVSIM:=../sim/kvsim}"
: "${top_srcdir:=..}"
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-async.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
val() { c=$(col "$1" "$2"); sed -n "${3:-2}p" "$1" | cut -d, -f"$c"; }
ekey() { sed -n "s/^  $2: //p" "$1"; }
# a - b > lo * c and a - b < hi * c
between() { awk -v a="$1" -v b="$2" -v c="$3" -v lo="$4" -v hi="$5" \
	'BEGIN { d = a - b; exit !(d > lo * c && d < hi * c) }'; }

RUN="$KVSIM run -q --no-plot"
D="$top_srcdir/tests/run"

# 1.
$RUN "$D/tiny.yaml" --set engine.async_scheduling=true --out "$T/tiny" ||
	bad "tiny async run"
cut -d, -f2-16 "$T/tiny/requests.csv" >"$T/tiny.got"
cat >"$T/tiny.want" <<'EOF'
request_id,replica,arrival_s,first_scheduled_s,first_token_s,finish_s,input_tokens,output_tokens,cached_prefix_tokens,ttft_s,tpot_s,e2e_s,queue_s,itl_mean_s,itl_max_s
0,0,0.005000000,0.005000000,0.015000000,0.035000000,32,3,0,0.010000000,0.010000000,0.030000000,0.000000000,0.010000000,0.010000000
1,0,0.010000000,0.015000000,0.035000000,0.055000000,32,3,0,0.025000000,0.010000000,0.045000000,0.005000000,0.010000000,0.010000000
EOF
cmp -s "$T/tiny.got" "$T/tiny.want" ||
	{ bad "tiny async timestamps"; diff "$T/tiny.want" "$T/tiny.got"; }
$RUN "$D/tiny.yaml" --set engine.async_scheduling=false --out "$T/tinys" ||
	bad "tiny sync run"
[ "$(val "$T/tinys/requests.csv" first_token_s 3)" = 0.025000000 ] ||
	bad "tiny sync: request 1's first token not in step 2"

# 2.
L="--set workload.max_requests=300"
$RUN $L --out "$T/la" || bad "light load async"
$RUN $L --set engine.async_scheduling=false --out "$T/ls" ||
	bad "light load sync"
ta=$(val "$T/la/summary.csv" ttft_mean_s)
ts=$(val "$T/ls/summary.csv" ttft_mean_s)
pa=$(val "$T/la/summary.csv" tpot_mean_s)
ps=$(val "$T/ls/summary.csv" tpot_mean_s)
between "$ta" "$ts" "$pa" 0.5 1.5 ||
	bad "light load: mean TTFT $ta async, $ts sync, TPOT $pa: not one step more"
awk -v a="$pa" -v s="$ps" 'BEGIN { exit !(a < s) }' ||
	bad "light load: mean TPOT $pa async, not below sync's $ps"

# 3.
cat >"$T/cpu.yaml" <<'EOF'
cpu_step_ns: {value: 2000000, source: "tests/async_sched.sh"}
cpu_seq_ns: 0
cpu_token_ns: 0
EOF
printf 'arrival_s,prompt_tokens,output_tokens\n0,16,50\n' >"$T/one.csv"
ONE="--set workload.trace=$T/one.csv --set workload.format=kvsim
     --set cost.calibration=$T/cpu.yaml"
$RUN $ONE --out "$T/oa" || bad "one request async"
$RUN $ONE --set engine.async_scheduling=false --out "$T/os" ||
	bad "one request sync"
ia=$(val "$T/oa/requests.csv" itl_mean_s)
is=$(val "$T/os/requests.csv" itl_mean_s)
awk -v a="$ia" -v s="$is" 'BEGIN { d = s - a - 0.002;
	exit !(d > -2e-9 && d < 2e-9) }' ||
	bad "one request: ITL $ia async, $is sync: not 2 ms less"

# 4.
awk 'BEGIN { print "arrival_s,prompt_tokens,output_tokens";
	for (i = 0; i < 8; i++) print "0,64,64" }' >"$T/burst.csv"
B="--check --set workload.trace=$T/burst.csv --set workload.format=kvsim
   --set cost.step_ns=10000000 --set engine.num_gpu_blocks_override=24
   --set engine.max_model_len=256"
$RUN $B --out "$T/pa" || bad "preemption async"
$RUN $B --set engine.async_scheduling=false --out "$T/ps" ||
	bad "preemption sync"
[ "$(val "$T/pa/summary.csv" preemptions)" -gt 0 ] 2>/dev/null ||
	bad "preemption: no preemptions"
[ "$(val "$T/pa/summary.csv" completed)" = 8 ] || bad "preemption: not all done"
# every column but run_id, first_scheduled_s and queue_s
fs=$(col "$T/pa/requests.csv" first_scheduled_s)
qs=$(col "$T/pa/requests.csv" queue_s)
for x in pa ps; do
	awk -F, -v f="$fs" -v q="$qs" 'NR > 1 { $1 = $f = $q = ""; print }' \
		"$T/$x/requests.csv" >"$T/$x.rest"
	awk -F, -v f="$fs" 'NR > 1 { print $f }' "$T/$x/requests.csv" \
		>"$T/$x.fs"
done
cmp -s "$T/pa.rest" "$T/ps.rest" ||
	{ bad "preemption: async decisions differ from sync's";
	  diff "$T/ps.rest" "$T/pa.rest" | head; }
paste -d' ' "$T/pa.fs" "$T/ps.fs" | awk '{ want = $2 > 0 ? $2 - 0.01 : 0;
	d = $1 - want; if (d < -1e-9 || d > 1e-9) bad = 1 }
	END { exit bad }' ||
	{ bad "preemption: first scheduled not one step earlier";
	  paste "$T/pa.fs" "$T/ps.fs" | head; }

# 5.
"$KVSIM" run --no-plot --set workload.max_requests=20 --out "$T/d" \
	>"$T/d.out" || bad "default run"
[ "$(ekey "$T/d/config.yaml" vllm_version)" = '"0.15.1"' ] &&
	[ "$(ekey "$T/d/config.yaml" async_scheduling)" = true ] ||
	bad "default: $(grep -E 'vllm_version|async_sch' "$T/d/config.yaml")"
grep -q '^kvsim run: engine loop of vLLM 0.15.1, async scheduling on$' \
	"$T/d.out" || bad "no engine loop startup line"
"$KVSIM" run -q --no-plot "$T/d/config.yaml" --out "$T/d2" ||
	bad "config.yaml again"
cmp -s "$T/d/requests.csv" "$T/d2/requests.csv" ||
	bad "config.yaml run again differs"
for vw in 0.13.0:false 0.14.0:true 0.15.1.post1:true 0.10.1:false; do
	v=${vw%%:*}; w=${vw#*:}
	$RUN --set workload.max_requests=5 --set engine.vllm_version=$v \
		--out "$T/v$v" || { bad "version $v"; continue; }
	[ "$(ekey "$T/v$v/config.yaml" async_scheduling)" = $w ] ||
		bad "version $v: async_scheduling not $w"
done
$RUN --set workload.max_requests=5 --set engine.async_scheduling=false \
	--out "$T/off" || bad "explicit false"
[ "$(ekey "$T/off/config.yaml" async_scheduling)" = false ] ||
	bad "explicit false not kept"
$RUN --set workload.max_requests=5 --set policy=sarathi --out "$T/sar" ||
	bad "sarathi"
[ "$(ekey "$T/sar/config.yaml" async_scheduling)" = false ] &&
	! grep -q vllm_version "$T/sar/config.yaml" ||
	bad "sarathi: not the synchronous loop"

# 6. made with the build before async scheduling: kvsim run --out X, then
#    cut -d, -f2- X/requests.csv | cksum
#    (no API server: it came later; the columns of then, 2 to 20)
printf 'frontend_request_ns: 0\nfrontend_tokenize_ns: 0\nfrontend_stream_ns: 0\n' \
    >"$T/nofe.yaml"
$RUN --set engine.async_scheduling=false --set cost.calibration="$T/nofe.yaml" \
    --out "$T/main" || bad "sync default"
got=$(cut -d, -f2-20 "$T/main/requests.csv" | cksum)
[ "$got" = "2067125152 304168" ] ||
	bad "async_scheduling=false: requests.csv is not the loop's before ($got)"

# 7.
exit2() {	# exit2 NAME PATTERN ARGS...
	n=$1; p=$2; shift 2
	"$KVSIM" run -q --no-plot --out "$T/x" "$@" 2>"$T/$n.err" >/dev/null
	rc=$?
	[ "$rc" = 2 ] || bad "$n: exit $rc, want 2"
	grep -q "$p" "$T/$n.err" || { bad "$n: message"; cat "$T/$n.err"; }
	[ ! -e "$T/x/requests.csv" ] || bad "$n: wrote requests.csv"
}
printf 'engine:\n  vllm_version: 0.99.0\n' >"$T/v.yaml"
exit2 unknown "v.yaml:2:17: engine.vllm_version: unknown vLLM version" \
	"$T/v.yaml"
exit2 notver "engine.vllm_version: unknown vLLM version.*got 'abc'" \
	--set engine.vllm_version=abc
exit2 notbool "^--set engine.async_scheduling=maybe: .*expected true or false" \
	--set engine.async_scheduling=maybe
printf 'engine:\n  vllm_version: "0.9.2"\n  async_scheduling: true\n' \
	>"$T/old.yaml"
exit2 old "old.yaml:3:21: engine.async_scheduling: vLLM 0.9.2 has no" \
	"$T/old.yaml"
exit2 sarasync "engine.async_scheduling is a vllm-v1 setting" \
	--set policy=sarathi --set engine.async_scheduling=true
exit2 saraver "engine.vllm_version is a vllm-v1 setting" \
	--set policy=sarathi --set engine.vllm_version=0.15.1

exit $fail
