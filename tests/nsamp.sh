#!/bin/sh
# nsamp.sh -- parallel sampling (n > 1) in kvsim run (engine.parallel_sampling;
# docs/run.md "Parallel sampling"):
#  1. nsamp/tiny.yaml (a constant 10 ms step; one request at 5 ms, 32 prompt
#     tokens, 3 output tokens, n = 2) by hand: both children are scheduled
#     in step 1 in order; the second hits the first's full prompt block
#     (vLLM v1 caches blocks as it allocates them; the last block is never
#     a hit), so cached_prefix_tokens is 16; one row with the 6 tokens of
#     both samples, first token at 15 ms, finish at 35 ms, TPOT and ITL a
#     sample's 10 ms; summary.csv counts 1 parallel request of 2 samples,
#     and so does the run's table;
#  2. shared prompt blocks, vllm-v1 and vllm-v0 (prefix caching on): 8
#     requests of n = 4 take under half the peak KV of 32 requests of
#     n = 1 with distinct prompts and the same tokens out; under vllm-v1
#     the samples' prefix hits show it (none for n = 1);
#  3. determinism: the same run twice gives the same requests.csv and
#     summary.csv (but for the wall-clock column);
#  4. n = 1 runs have no parallel columns nor table line;
#     engine.parallel_sampling: fanout is auto's run and config.yaml names
#     it (auto writes nothing);
#  5. a client timeout fails a fanned-out request once, its children all
#     aborted (--check holds);
#  6. bad values exit 2 with where: fork under a policy other than vllm-v0,
#     an unknown mode in a file (FILE:LINE:COL) and in --set, fanout and
#     fork in a disaggregated run, n = 0 from a generator and from a trace;
#  7. fork (vllm-v0, docs/scheduler.md R110-R119): one request of 40
#     prompt tokens (2 full blocks of 16 and one of 8), n = 4, 3 tokens
#     out.  The row is fanout's; the group takes 3 blocks in its prefill
#     step, where fanout takes 6 (the 4 samples' own partial blocks), and
#     6 once the first decode copied the shared partial block for 3 of
#     the 4 sequences (cow_blocks 3; the last writes in place): a lower
#     mean, the same peak.  Without prefix caching fanout shares nothing
#     (12 blocks), the group its full blocks (6).  With the cost model, 8000
#     prompt tokens and 20 out, a group's decode costs what fanout's 4
#     children's decodes cost (each sequence reads its own KV): the same
#     mean ITL.
set -u
: "${KVSIM:=../sim/kvsim}"
: "${top_srcdir:=..}"
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-nsamp.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
val() { c=$(col "$1" "$2"); [ -n "$c" ] && sed -n "${3:-2}p" "$1" | cut -d, -f"$c"; }

RUN="$KVSIM run -q --no-plot --check"
D="$top_srcdir/tests/nsamp"

# 1.
$RUN "$D/tiny.yaml" --out "$T/tiny" || bad "tiny run"
cut -d, -f2-16 "$T/tiny/requests.csv" >"$T/tiny.got"
cat >"$T/tiny.want" <<'X'
request_id,replica,arrival_s,first_scheduled_s,first_token_s,finish_s,input_tokens,output_tokens,cached_prefix_tokens,ttft_s,tpot_s,e2e_s,queue_s,itl_mean_s,itl_max_s
0,0,0.005000000,0.005000000,0.015000000,0.035000000,32,6,16,0.010000000,0.010000000,0.030000000,0.000000000,0.010000000,0.010000000
X
cmp -s "$T/tiny.got" "$T/tiny.want" ||
	{ bad "tiny row"; diff "$T/tiny.want" "$T/tiny.got"; }
S="$T/tiny/summary.csv"
[ "$(val "$S" parallel_requests)" = 1 ] &&
	[ "$(val "$S" parallel_samples)" = 2 ] &&
	[ "$(val "$S" prefix_hit_tokens)" = 16 ] &&
	[ "$(val "$S" completed)" = 1 ] &&
	[ "$(val "$S" output_tokens)" = 6 ] ||
	bad "tiny summary: $(head -1 "$S" | tr ',' ' ')"

$KVSIM run --no-plot "$D/tiny.yaml" --out "$T/tinyv" 2>/dev/null |
	grep -q '^parallel sampling  *1 requests of n > 1, 2 samples' ||
	bad "the run's table has no parallel sampling line"

# 2.
for pol in vllm-v1 vllm-v0; do
	$RUN "$D/share.yaml" --set policy=$pol --out "$T/n4-$pol" ||
		bad "$pol n=4 run"
	$RUN "$D/share.yaml" --set policy=$pol \
		--set workload.generator.requests=32 \
		--set workload.generator.n.value=1 --out "$T/n1-$pol" ||
		bad "$pol n=1 run"
	a="$T/n4-$pol/summary.csv" b="$T/n1-$pol/summary.csv"
	u4=$(val "$a" kv_usage_max) u1=$(val "$b" kv_usage_max)
	awk -v a="$u4" -v b="$u1" 'BEGIN { exit !(a > 0 && 2 * a < b) }' ||
		bad "$pol: peak KV of n = 4 ($u4) not under half of n = 1's ($u1)"
	[ "$(val "$a" output_tokens)" = 1600 ] &&
		[ "$(val "$b" output_tokens)" = 1600 ] &&
		[ "$(val "$a" completed)" = 8 ] &&
		[ "$(val "$a" parallel_samples)" = 32 ] ||
		bad "$pol: tokens or rows"
	[ "$(val "$b" prefix_hit_tokens)" = 0 ] ||
		bad "$pol: distinct prompts hit the prefix cache"
done
h=$(val "$T/n4-vllm-v1/summary.csv" prefix_hit_tokens)
# each request: 3 samples hit the prompt's 62 full blocks (992 tokens)
[ "$h" = $((8 * 3 * 992)) ] || bad "vllm-v1: prefix hits $h, want $((8 * 3 * 992))"

# 3.
$RUN "$D/share.yaml" --out "$T/again" || bad "second run"
cmp -s "$T/n4-vllm-v1/requests.csv" "$T/again/requests.csv" ||
	bad "requests.csv differs between two runs"
wc=$(col "$T/again/summary.csv" sim_wall_s)
cut -d, -f"$wc" --complement "$T/n4-vllm-v1/summary.csv" >"$T/s1"
cut -d, -f"$wc" --complement "$T/again/summary.csv" >"$T/s2"
cmp -s "$T/s1" "$T/s2" || bad "summary.csv differs between two runs"

# 4.
head -1 "$T/n1-vllm-v1/summary.csv" | grep -q parallel &&
	bad "n = 1: parallel columns in summary.csv"
$KVSIM run --no-plot "$D/share.yaml" --set workload.generator.n.value=1 \
	--set workload.generator.requests=2 --out "$T/n1v" 2>/dev/null |
	grep -q '^parallel sampling' && bad "n = 1: a parallel sampling line"
grep -q parallel_sampling "$T/n4-vllm-v1/config.yaml" &&
	bad "auto written to config.yaml"
$RUN "$D/share.yaml" --set engine.parallel_sampling=fanout --out "$T/fan" ||
	bad "fanout run"
grep -qx '  parallel_sampling: fanout' "$T/fan/config.yaml" ||
	bad "config.yaml does not name fanout"
cut -d, -f2- "$T/fan/requests.csv" >"$T/r1"
cut -d, -f2- "$T/n4-vllm-v1/requests.csv" >"$T/r2"
cmp -s "$T/r1" "$T/r2" || bad "fanout is not auto's run"
$RUN "$T/fan/config.yaml" --out "$T/fan2" || bad "config.yaml runs again"

# 5.
$RUN "$D/share.yaml" --set workload.timeout_s=0.3 --out "$T/tmo" ||
	bad "timeout run"
S="$T/tmo/summary.csv"
[ "$(val "$S" failed)" = 8 ] && [ "$(val "$S" completed)" = 0 ] &&
	[ "$(wc -l <"$T/tmo/requests.csv")" = 9 ] ||
	bad "timeout: $(sed -n 2p "$S")"

# 6.
expect2() {	# expect2 WHAT PATTERN ARGS...
	what=$1 pat=$2; shift 2
	$KVSIM run -q --no-plot "$@" --out "$T/bad" >"$T/err" 2>&1
	rc=$?
	[ $rc = 2 ] || bad "$what: exit $rc, want 2"
	grep -q -- "$pat" "$T/err" || { bad "$what: message"; cat "$T/err"; }
}
for pol in vllm-v1 sarathi; do
	expect2 "fork $pol" "engine.parallel_sampling: fork" "$D/tiny.yaml" \
		--set policy=$pol --set engine.parallel_sampling=fork
done
expect2 "--set bogus" \
	"^--set engine.parallel_sampling=forks: .*expected auto, fanout or fork" \
	"$D/tiny.yaml" --set engine.parallel_sampling=forks
sed 's/^  async_scheduling: false/&\n  parallel_sampling: forks/' \
	"$D/tiny.yaml" >"$T/badmode.yaml"
expect2 "file bogus" "badmode.yaml:8:22: engine.parallel_sampling" \
	"$T/badmode.yaml"
sed 's/n: {dist: fixed, value: 2}/n: {dist: fixed, value: 0}/' \
	"$D/tiny.yaml" >"$T/badn.yaml"
expect2 "generator n 0" "badn.yaml:16:8: n: value 0" "$T/badn.yaml"
printf 'arrival_s,prompt_tokens,output_tokens,n\n0,10,5,2\n0.1,10,5,0\n' \
	>"$T/badn.csv"
expect2 "trace n 0" "badn.csv:3:10: n:" "$D/tiny.yaml" \
	--set workload.trace="$T/badn.csv" --set workload.format=kvsim
printf '%s\n' 'model: meta-llama/Llama-3.1-8B' 'policy: vllm-v1' \
	'disaggregation:' '  link: ib-ndr-400' '  prefill: {replicas: 1}' \
	'  decode: {replicas: 1}' 'workload:' \
	'  generator: {requests: 4, prompt: {dist: fixed, value: 100},' \
	'    output: {dist: fixed, value: 5}, n: {dist: fixed, value: 2}}' \
	>"$T/pd.yaml"
expect2 "fanout in P/D" "fanout is not modelled in a disaggregated run" \
	"$T/pd.yaml" --set engine.parallel_sampling=fanout
expect2 "fork in P/D" "fork is not modelled in a disaggregated run" \
	"$T/pd.yaml" --set policy=vllm-v0 --set engine.parallel_sampling=fork
# auto there: one sequence each, and the warning says so
$KVSIM run -q --no-plot "$T/pd.yaml" --out "$T/pd" >"$T/err" 2>&1 ||
	bad "P/D run"
grep -q "4 requests ask for parallel sampling.*each ran as one sequence" \
	"$T/err" || { bad "P/D warning"; cat "$T/err"; }

# 7.
blocks() {	# blocks SUMMARY COLUMN: the column times num_gpu_blocks, rounded
	awk -v u="$(val "$1" "$2")" -v g="$(val "$1" num_gpu_blocks)" \
		'BEGIN { printf "%.0f", u * g }'
}
F="--set policy=vllm-v0 --set workload.generator.prompt.value=40
	--set workload.generator.n.value=4"
for pc in true false; do
	for m in fanout fork; do
		$RUN "$D/tiny.yaml" $F --set engine.parallel_sampling=$m \
			--set engine.enable_prefix_caching=$pc \
			--out "$T/$m-$pc" || bad "$m run (prefix caching $pc)"
	done
done
a="$T/fanout-true/summary.csv" b="$T/fork-true/summary.csv"
[ "$(blocks "$a" kv_usage_max)" = 6 ] && [ "$(blocks "$b" kv_usage_max)" = 6 ] &&
	[ "$(blocks "$a" kv_usage_mean)" = 6 ] &&
	[ "$(blocks "$b" kv_usage_mean)" = 5 ] ||
	bad "fork: blocks $(blocks "$b" kv_usage_max) peak $(blocks "$b" \
kv_usage_mean) mean, fanout $(blocks "$a" kv_usage_max) $(blocks "$a" \
kv_usage_mean); want 6 5 and 6 6"
[ "$(val "$b" cow_blocks)" = 3 ] && [ "$(val "$a" cow_blocks)" = 0 ] &&
	[ "$(val "$b" output_tokens)" = 12 ] &&
	[ "$(val "$b" parallel_requests)" = 1 ] &&
	[ "$(val "$b" parallel_samples)" = 4 ] || bad "fork: summary"
cut -d, -f2- "$T/fanout-true/requests.csv" >"$T/r1"
cut -d, -f2- "$T/fork-true/requests.csv" >"$T/r2"
cmp -s "$T/r1" "$T/r2" || { bad "fork: the row is not fanout's";
	diff "$T/r1" "$T/r2"; }
[ "$(blocks "$T/fanout-false/summary.csv" kv_usage_max)" = 12 ] &&
	[ "$(blocks "$T/fork-false/summary.csv" kv_usage_max)" = 6 ] ||
	bad "fork without prefix caching: peak not 6 blocks against 12"
grep -qx '  parallel_sampling: fork' "$T/fork-true/config.yaml" ||
	bad "config.yaml does not name fork"
$RUN "$T/fork-true/config.yaml" --out "$T/fork2" ||
	bad "fork: config.yaml runs again"
$KVSIM run --no-plot "$D/tiny.yaml" $F --set engine.parallel_sampling=fork \
	--out "$T/forkv" 2>"$T/err" | grep -q \
	'^parallel sampling  *1 requests of n > 1, 4 samples (sequences forked' ||
	bad "fork: the run's table"
[ -s "$T/err" ] && { bad "fork: a warning"; cat "$T/err"; }
for m in fanout fork; do
	$RUN "$D/tiny.yaml" $F --set engine.parallel_sampling=$m \
		--set cost.step_ns=0 --set workload.generator.prompt.value=8000 \
		--set workload.generator.output.value=20 --out "$T/cost-$m" ||
		bad "$m run with the cost model"
done
i1=$(val "$T/cost-fanout/requests.csv" itl_mean_s)
i2=$(val "$T/cost-fork/requests.csv" itl_mean_s)
[ -n "$i1" ] && [ "$i1" = "$i2" ] ||
	bad "fork: mean ITL $i2, fanout's $i1 (a group decodes n sequences)"
exit $fail
