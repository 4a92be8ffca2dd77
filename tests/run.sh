#!/bin/sh
# run.sh -- `kvsim run` end to end (docs/run.md):
#  1. README.md's main-job command ends in `./sim/kvsim run`; that run (the
#     embedded default) succeeds and writes the three CSVs and config.yaml;
#  2. same seed => byte-identical CSVs (summary.csv except sim_wall_s);
#  3. --out is refused when it exists (exit 2, files untouched), --force
#     overwrites;
#  4. bad config keys and values exit 2 with FILE:LINE:COL and leave no
#     output directory;
#  5. tests/run/tiny.yaml: a constant 10 ms step, two requests 5 ms apart
#     (7 events: 2 arrivals, 1 wake, 4 step ends),
#     every timestamp computed by hand (tests/run/tiny.expected):
#       r0 arrives 5 ms, prefill step [5,15] -> token 1 at 15; r1 arrives
#       10 ms, waits for the step boundary at 15; step [15,25] decodes r0
#       (token 2) and prefills r1 (token 1); [25,35] r0 token 3 (done),
#       r1 token 2; [35,45] r1 token 3 (done); its timeseries rows hold
#       the state after the events at their time, and add up to every
#       token;
#  6. invariants of full runs under --check (plenty of memory; a tiny KV
#     cache that forces recompute preemptions; vllm-v0 with swap; two
#     replicas per router): request conservation, each request once,
#     causality arrival <= first scheduled <= first token <= finish,
#     e2e >= ttft, and preemption counts that match the summary;
#  7. cost.calibration (docs/cost-model.md "Calibration file"):
#     tests/run/calib_run.yaml names tests/run/calib.yaml relative to its
#     own directory; its 50 ms CPU overhead a step makes duration_s at
#     least 50 ms a step (the same run without it is shorter), config.yaml
#     records the file; a bad key or value in a calibration file, or a
#     missing one, is exit 2 with FILE:LINE:COL and no output;
#  8. --chrome-trace: trace.json holds one step event per step of the
#     summary, one request slice (begin and end) per completed request,
#     and is a closed JSON document; groups.csv has the model's one group;
#     slo.* thresholds give goodput: a TTFT limit nobody meets makes it 0,
#     a generous one makes it the throughput;
#  9. a run killed mid-way (SIGTERM) leaves neither a report nor a
#     temporary file, and removes the --out directory it created;
# 10. cost.kv_layout reaches the swap time: the same swapping run is
#     shorter with one chunk a block (cross-layer) than with vLLM's
#     per-layer K/V split (64 chunks a block), with the same swaps; a bad
#     value exits 2;
# 11. every built-in policy runs the embedded default under --check with
#     only its own defaults (DeepSpeed FastGen: no CPU pool, no prefix
#     cache; vLLM v0: max(max_model_len, 2048) batched tokens without
#     chunked prefill), and FastGen under KV pressure finishes every
#     request through its resets instead of stalling;
# 12. the hybrid Granite-4.0-H-tiny (10 KV cache groups: one attention
#     group with vLLM's block size raised to 400, nine Mamba state groups)
#     runs under vllm-v1 with --check on a pool small enough to preempt;
# 13. a sliding window of 64 tokens (tests/gpu/gemma-2-w64.config.json) on
#     90 blocks under the exact policies: admission counts the window as
#     setup does (window plus one chunk), so every request that fits
#     max_model_len finishes -- it used to wait forever for a pool that
#     could hold its whole prompt in both groups at once;
# 14. prefix hits and recomputation are counted as work not done and work
#     done again: under vllm-v1 with recompute preemption and shared
#     system prompts, the tokens of every step (trace.json) add up to each
#     request's first-time positions (prompt + output - 1 - its first
#     prefix hit) plus the summary's recomputed_tokens (which used to
#     count tokens the prefix cache restored); vllm-v0, which schedules
#     cached tokens with the uncached ones, reports its prefix hits (it
#     used to report 0) and the tokens it took as cached from blocks it
#     marked computed before their chunk ran (stale_cached_tokens, with a
#     warning; tests/gpu/v0-chunked-prefix.yaml);
# 15. the run id does not depend on where the configuration was read:
#     one file in two directories, and the config.yaml a run wrote, give
#     byte-identical requests.csv (run_id is every row's first column);
# 16. a malformed trace row under workload.on_error: skip is reported on
#     stderr with its FILE:LINE:COL (it used to vanish without a word),
#     and `auto` gives a key with a plain default its default back
#     (engine.swap_space, model, replicas were refused).
# 17. a generator's config.yaml is the same workload: for generators with
#     every arrival process and distribution kind (a lognormal given as
#     mean and cv too), system prompts, sessions, lengths_from (a path
#     relative to the current directory) and the stream's settings
#     (window, filter, cap, tile, time_scale, target_rate), running the
#     config.yaml a run wrote gives byte-identical requests.csv (run_id
#     included) and the same config.yaml (it used to run the bundled
#     Azure trace instead); paths holding a double quote, a backslash and
#     a newline are escaped in config.yaml, which runs again to the same
#     requests.csv.
# 18. swaps of a model with two KV cache groups (Gemma 2: 21 sliding and
#     21 full layers) under kvsim: every group's blocks are counted per
#     request (requests.csv summed equals the summary; it counted group 0
#     only) and a block is one page of one group's 21 layers, 16 tokens x
#     8,192 B x 21 = 2,752,512 B (it was every layer's, twice that).
# 19. requests that arrive at the same instant share the batch of the step
#     they wake (the step used to start at the first arrival, the others
#     waiting a whole step), with one replica and with two round robin;
#     one that arrives as a step ends joins the next step.
# 20. engine.scheduling_policy: priority reaches the policy: a request of
#     priority 0 that arrives last overtakes the waiting ones of priority
#     5 (fcfs keeps arrival order); config.yaml records it; vllm-v0, fcfs
#     only, refuses it (exit 2).
# 21. least-outstanding routes on the state after the steps that end at
#     the arrival's instant: a request arriving as replica 0's only
#     request finishes ties both replicas at 0 and goes to replica 0 (it
#     went to replica 1, the step's end being queued after the arrival).
# 22. the kvsim policy prices each preemption with the cost model (the
#     prefill of the tokens a recompute computes again against the copies
#     of a swap out and back in): on an H100, requests of 100-token
#     prompts under pressure are both swapped and recomputed (the policy's
#     default price, 256 token-equivalents a swap, which the simulator
#     used to leave in place, recomputed every one of them).
# 23. vllm-v1's engine hazards are counted and warned of as v0's are: a
#     prefix hit on a block whose chunk priority scheduling withdrew (1
#     token, none under fcfs) and a Mamba state hit the same step writes
#     (the hit's 512 tokens, none with defer_same_step_state_hits).
# 24. timeseries rows fall on the first arrival plus whole intervals,
#     rounded to the nanosecond: 4.1 s, 8.2 s, ... (they drifted by a
#     nanosecond a row, 4.099999999, 8.199999998, the interval truncated).
# 25. the expensive check level (KVSIM_CHECK, which `make check` sets) is
#     wired: on tiny.yaml's 7 events the invariants are checked after each
#     and at the end (KVSIM_CHECK=report says 8, in single steps; with the
#     fast-forward, 8 less the steps it made), and it changes no output.
# 26. prompt limits as each engine has them: a prompt of exactly
#     max_model_len runs under vllm-v0 (its prompt limit is inclusive) and
#     is rejected under vllm-v1 (no room for one output token); a longer
#     one is rejected by both, and summary.csv counts the rejections.
# 27. cost.cuda_graphs (docs/cost-model.md §2.7): vllm pads steps to vLLM
#     V1's CUDA-graph capture sizes and so changes the run, a largest size
#     of 4 changes it otherwise; off (the default) is the run without the
#     key; config.yaml records it; a bad value is exit 2 at its key.
set -u
: "${KVSIM:=../sim/kvsim}"
: "${top_srcdir:=..}"
D=$top_srcdir/tests/run
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-run.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# column N of a CSV header named NAME
col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
# value of column NAME in row 2 of summary.csv
sval() { c=$(col "$1" "$2"); sed -n 2p "$1" | cut -d, -f"$c"; }

# 1. README's main-job command.
main=$(grep -F './configure && make' "$top_srcdir/README.md" | grep -v ' check$' | head -1)
case $main in
*'&& ./sim/kvsim run') ;;
*) bad "README main-job command does not end in ./sim/kvsim run: $main" ;;
esac
mkdir "$T/cwd"
(cd "$T/cwd" && "$KVSIM" run >"$T/main.out" 2>"$T/main.err") ||
	{ bad "kvsim run (embedded default) failed"; cat "$T/main.err"; }
out=$(ls -d "$T"/cwd/kvsim-out/* 2>/dev/null | head -1)
for f in requests.csv timeseries.csv summary.csv config.yaml; do
	[ -s "$out/$f" ] || bad "default run wrote no $f"
done
grep -q '^GPU KV cache size: [0-9,]* tokens$' "$T/main.out" ||
	bad "no 'GPU KV cache size' startup line"
grep -q '^Maximum concurrency for [0-9,]* tokens per request: [0-9.]*x$' \
	"$T/main.out" || bad "no 'Maximum concurrency' startup line"
grep -q '^  ttft ' "$T/main.out" || bad "no summary table"
[ "$(sval "$out/summary.csv" requests)" = 2000 ] ||
	bad "default run: requests != 2000"
ls "$out"/.*.tmp.* >/dev/null 2>&1 && bad "temporary files left behind"

# 2. Determinism.
"$KVSIM" run -q --seed 7 --out "$T/a" || bad "run a"
"$KVSIM" run -q --seed 7 --out "$T/b" || bad "run b"
for f in requests.csv timeseries.csv config.yaml; do
	cmp -s "$T/a/$f" "$T/b/$f" || bad "$f differs for the same seed"
done
w=$(col "$T/a/summary.csv" sim_wall_s)
cut -d, -f"$w" --complement "$T/a/summary.csv" >"$T/sa"
cut -d, -f"$w" --complement "$T/b/summary.csv" >"$T/sb"
cmp -s "$T/sa" "$T/sb" || bad "summary.csv differs for the same seed"
for c in requests completed duration_s throughput_req_s throughput_out_tok_s \
    ttft_p50_s ttft_p99_s tpot_p50_s tpot_p99_s e2e_p50_s e2e_p99_s \
    preemptions recomputed_tokens swap_out_blocks swap_in_blocks \
    kv_usage_mean kv_usage_max frag_internal_mean prefix_hit_rate \
    num_gpu_blocks events sim_wall_s; do
	[ -n "$(col "$T/a/summary.csv" $c)" ] || bad "summary.csv lacks $c"
done

# 3. --out refuses to overwrite.
cp "$T/a/summary.csv" "$T/keep"
"$KVSIM" run -q --out "$T/a" 2>"$T/err"
[ $? -eq 2 ] || bad "--out over an existing directory: not exit 2"
grep -q 'refusing to overwrite' "$T/err" || bad "no refusal message"
cmp -s "$T/a/summary.csv" "$T/keep" || bad "refused run changed the files"
"$KVSIM" run -q --force --seed 7 --out "$T/a" || bad "--force failed"
# an earlier run's trace.json and charts do not outlive --force
"$KVSIM" run -q --force --chrome-trace --set workload.max_requests=20 \
	--out "$T/f" || bad "run with a trace"
echo stale >"$T/f/index.html"
echo stale >"$T/f/ttft_cdf.png"
"$KVSIM" run -q --force --no-plot --set workload.max_requests=20 \
	--out "$T/f" || bad "--force over a traced run"
[ -e "$T/f/trace.json" ] && bad "--force left the earlier trace.json"
[ -e "$T/f/index.html" ] || [ -e "$T/f/ttft_cdf.png" ] &&
	bad "--force --no-plot left the earlier charts"

# 4. Bad configuration: FILE:LINE:COL and exit 2, no output.
expect_bad() { # file-or-args expected-regex
	pat=$1; shift
	"$KVSIM" run -q --out "$T/bad" "$@" >/dev/null 2>"$T/err"
	rc=$?
	[ $rc -eq 2 ] || bad "$*: exit $rc, not 2"
	grep -Eq "$pat" "$T/err" || { bad "$*: message"; cat "$T/err"; }
	[ -e "$T/bad" ] && { bad "$*: left $T/bad"; rm -rf "$T/bad"; }
}
expect_bad "bad_key.yaml:4:3: unknown key 'engine.blok_size'" "$D/bad_key.yaml"
expect_bad "bad_value.yaml:3:17: engine.max_num_seqs: expected" "$D/bad_value.yaml"
expect_bad "bad_top.yaml:2:1: unknown key 'polcy'" "$D/bad_top.yaml"
expect_bad "bad_workload.yaml:3:3: " "$D/bad_workload.yaml"
expect_bad "bad_model.yaml:2:8: model: unknown model 'no-such-model'" "$D/bad_model.yaml"
expect_bad "bad_yaml.yaml:[0-9]+:[0-9]+: " "$D/bad_yaml.yaml"
# a mapping holding aliases of itself is refused at once: the search for
# duplicate keys took 2^64 steps over such a cycle (a hang, found by
# `make fuzz`); the timeout only turns a hang back into a failure
printf 'a: &a\n  x: *a\n  y: *a\n' >"$T/alias_cycle.yaml"
timeout 300 "$KVSIM" run -q --out "$T/bad" "$T/alias_cycle.yaml" \
	>/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q "alias_cycle.yaml:1:1: unknown key 'a'" "$T/err" ||
	{ bad "a self-aliasing mapping: exit $rc"; cat "$T/err"; }
expect_bad "^--set engine.block_size=x: engine.block_size: expected" --set engine.block_size=x
expect_bad "unknown key 'engine.nope'" --set engine.nope=1
expect_bad "^--set router=random: router: expected" --set router=random
# arrivals past the horizon of simulated time (they once overflowed the
# int64 clock, and a run wrote time series rows forever)
expect_bad "past the 1000000000 s \\(31.7-year\\) horizon" \
	--set workload.time_scale=1e300
# ... named by the trace row, with the real arrival, not INT64_MAX ns
expect_bad "^kvsim run: .*/azure_llm_2023_conv_excerpt\\.csv:3: request 1 arrives at 4\\.31458e\\+15 s, past the 1000000000 s" \
	--set workload.time_scale=1e15
# a workload.* --set names itself, with no LINE:COL of the YAML it becomes
expect_bad "^--set workload\\.max_requests=abc: max_requests: expected an integer, found 'abc'\$" \
	--set workload.max_requests=abc
expect_bad "^--set workload\\.tile\\.copies=x: copies: expected" \
	--set workload.tile.copies=x
expect_bad "^--set workload\\.=1: unknown key 'workload\\.'\$" --set workload.=1
# each dtype key its own values (they shared one list, and the wrong one
# was refused later, named by the configuration instead of the --set)
expect_bad "^--set engine.kv_cache_dtype=float32: engine.kv_cache_dtype: expected auto" \
	--set engine.kv_cache_dtype=float32
expect_bad "^--set engine.dtype=fp8: engine.dtype: expected auto, bfloat16" \
	--set engine.dtype=fp8
# a key of many parts (its YAML text once overflowed a heap buffer)
expect_bad "unknown key 'a' in workload" --set \
	"workload$(i=0; while [ $i -lt 80 ]; do printf .a; i=$((i + 1)); done)=1"
expect_bad "^--seed abc: seed: expected a non-negative integer, got 'abc'\$" \
	--seed abc
expect_bad "bad_window.yaml:4:14: start_s: must be at most 1e9 s" \
	"$D/bad_window.yaml"
# a repeated key, or a second document, was taken silently (the last won)
expect_bad "bad_dupkey.yaml:6:5: duplicate key 'requests'" "$D/bad_dupkey.yaml"
expect_bad "bad_twodocs.yaml:4:1: a second YAML document" "$D/bad_twodocs.yaml"
expect_bad "bad_onoff.yaml:4:14: arrival: onoff needs on_s > 0" "$D/bad_onoff.yaml"

# 5. The hand-computed scenario.
"$KVSIM" run -q "$D/tiny.yaml" --out "$T/tiny" || bad "tiny run"
cut -d, -f2-16 "$T/tiny/requests.csv" >"$T/tiny.got"
cmp -s "$T/tiny.got" "$D/tiny.expected" ||
	{ bad "tiny scenario timestamps"; diff "$D/tiny.expected" "$T/tiny.got"; }
[ "$(sval "$T/tiny/summary.csv" duration_s)" = 0.040000000 ] ||
	bad "tiny duration_s"
[ "$(sval "$T/tiny/summary.csv" events)" = 7 ] || bad "tiny events"
# its timeseries, a row every 10 ms from 15 ms, each the state after the
# events at its time: the run ends on a row (45 ms), which shows nothing
# running and every one of the 6 tokens (it used to stop before the last
# step's events: 5 tokens and a request still running)
tail -n +2 "$T/tiny/timeseries.csv" | cut -d, -f2,3,6,12 >"$T/tiny.ts"
printf '%s\n' 0.015000000,2,5,100.000 0.025000000,2,6,200.000 \
	0.035000000,1,3,200.000 0.045000000,0,0,100.000 | cmp -s - "$T/tiny.ts" ||
	{ bad "tiny timeseries"; cat "$T/tiny.ts"; }

# 6. Invariants of full runs.
invariants() { # dir label
	s=$1/summary.csv r=$1/requests.csv
	n=$(sval "$s" requests) c=$(sval "$s" completed) j=$(sval "$s" rejected)
	[ $((c + j)) -eq "$n" ] || bad "$2: completed $c + rejected $j != $n"
	rows=$(($(wc -l <"$r") - 1))
	[ "$rows" -eq "$c" ] || bad "$2: $rows rows for $c completed"
	dup=$(tail -n +2 "$r" | cut -d, -f2 | sort | uniq -d | head -1)
	[ -z "$dup" ] || bad "$2: request $dup reported twice"
	p=$(tail -n +2 "$r" | awk -F, '{ s += $17 } END { print s + 0 }')
	[ "$p" -eq "$(sval "$s" preemptions)" ] ||
		bad "$2: per-request preemptions $p != summary"
	rc=$(tail -n +2 "$r" | awk -F, '{ s += $18 } END { print s + 0 }')
	[ "$rc" -eq "$(sval "$s" recomputed_tokens)" ] ||
		bad "$2: per-request recomputed tokens != summary"
	tail -n +2 "$r" | awk -F, -v L="$2" '
		$4 + 0 < $4 + 0 { next }
		!($4 <= $5 && $5 <= $6 && $6 <= $7) {
			print "FAIL: " L ": request " $2 " not causal"; bad = 1 }
		$13 + 0 < $11 + 0 { print "FAIL: " L ": e2e < ttft"; bad = 1 }
		$9 < 1 { print "FAIL: " L ": no output"; bad = 1 }
		END { exit bad }' || fail=1
}
# --check audits the whole allocator after every half step (O(pool) each),
# so the audited runs are small; the full default run goes unaudited.
"$KVSIM" run -q --out "$T/full" || bad "full run"
invariants "$T/full" default
"$KVSIM" run -q --check --out "$T/tight" --set workload.max_requests=60 \
	--set engine.num_gpu_blocks_override=150 \
	--set engine.max_model_len=2048 || bad "tight --check run"
invariants "$T/tight" tight
[ "$(sval "$T/tight/summary.csv" preemptions)" -gt 0 ] ||
	bad "tight: no preemptions"
[ "$(sval "$T/tight/summary.csv" rejected)" -gt 0 ] ||
	bad "tight: no prompt >= max_model_len rejected"
"$KVSIM" run -q --check --out "$T/swap" --set policy=vllm-v0 \
	--set engine.preemption_mode=swap --set workload.max_requests=60 \
	--set engine.num_gpu_blocks_override=150 \
	--set engine.max_model_len=2048 || bad "swap --check run"
invariants "$T/swap" swap
[ "$(sval "$T/swap/summary.csv" swap_out_blocks)" -gt 0 ] ||
	bad "swap: nothing swapped out"
for router in round-robin least-outstanding prefix-affinity; do
	"$KVSIM" run -q --out "$T/r-$router" --set replicas=2 \
		--set router=$router --set workload.max_requests=400 ||
		bad "two replicas, $router"
	invariants "$T/r-$router" "$router"
	reps=$(tail -n +2 "$T/r-$router/requests.csv" | cut -d, -f3 | sort -u | wc -l)
	[ "$reps" -eq 2 ] || bad "$router: used $reps replicas"
done

# 7. Calibration file.
"$KVSIM" run -q "$D/calib_run.yaml" --out "$T/cal" || bad "calibrated run"
"$KVSIM" run -q "$D/calib_run.yaml" --set cost.calibration=none \
	--out "$T/nocal" || bad "uncalibrated run"
dc=$(sval "$T/cal/summary.csv" duration_s)
sc=$(sval "$T/cal/summary.csv" steps)
dn=$(sval "$T/nocal/summary.csv" duration_s)
awk -v d="$dc" -v s="$sc" 'BEGIN { exit !(s > 0 && d >= 0.05 * s) }' ||
	bad "calibrated run: duration_s $dc < 50 ms x $sc steps"
awk -v c="$dc" -v n="$dn" 'BEGIN { exit !(c > n) }' ||
	bad "calibration did not lengthen the run ($dc vs $dn)"
[ "$(sval "$T/cal/summary.csv" completed)" = 4 ] ||
	bad "calibrated run: completed"
grep -q '^  calibration: ".*/tests/run/calib.yaml"$' "$T/cal/config.yaml" ||
	bad "config.yaml does not record the calibration file"
grep -q 'calibration: "' "$T/nocal/config.yaml" &&
	bad "config.yaml records a calibration it did not use"
expect_bad "bad_calib.yaml:9:16: copy.h2d.batch.pinned: unknown term 'alpha'" \
	"$D/bad_calib_run.yaml"
printf 'cpu_seq_ns: 2000\neff_memory: {value: 1.5, source: x}\n' >"$T/c.yaml"
expect_bad "c.yaml:2:21: eff_memory: an efficiency must be in \\(0, 1\\]" \
	--set cost.calibration="$T/c.yaml"
expect_bad "^--set cost.calibration=.*: cost.calibration: .*no-such.yaml: " \
	--set cost.calibration="$T/no-such.yaml"

# 8.
"$KVSIM" run -q --no-plot --chrome-trace --set workload.max_requests=40 \
	--set slo.ttft_s=1e-9 --out "$T/ct" || bad "--chrome-trace run"
j=$T/ct/trace.json
[ "$(grep -c '"ph":"X"' "$j")" = "$(sval "$T/ct/summary.csv" steps)" ] ||
	bad "trace.json: step events != steps"
[ "$(grep -c '"name":"request","cat":"request","ph":"b"' "$j")" = 40 ] ||
	bad "trace.json: request begin events != 40"
[ "$(grep -c '"name":"request","cat":"request","ph":"e"' "$j")" = 40 ] ||
	bad "trace.json: request end events != 40"
head -c 20 "$j" | grep -q '^{"displayTimeUnit"' || bad "trace.json: head"
[ "$(tail -1 "$j")" = ']}' ] || bad "trace.json: not closed"
[ "$(awk 'END { print NR }' "$T/ct/groups.csv")" = 2 ] ||
	bad "groups.csv: not one group"
[ "$(sval "$T/ct/summary.csv" goodput_req_s)" = 0.000000 ] ||
	bad "goodput with an impossible TTFT limit"
"$KVSIM" run -q --no-plot --set workload.max_requests=40 \
	--set slo.ttft_s=1000 --out "$T/ct2" || bad "slo run"
[ "$(sval "$T/ct2/summary.csv" goodput_req_s)" = \
  "$(sval "$T/ct2/summary.csv" throughput_req_s)" ] ||
	bad "goodput with a generous limit != throughput"
[ "$(sval "$T/ct2/summary.csv" slo_attainment)" = 1.000000 ] ||
	bad "slo_attainment"

# 9.
# (4 million requests, about 12 s of work on this project's CI machine,
# some 50 times the wait before the kill: 80,000 had come to finish
# first once the fast-forward made them take 0.25 s)
"$KVSIM" run -q --no-plot --set workload.tile.copies=2000 --out "$T/k" &
pid=$!
i=0
while [ ! -d "$T/k" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
sleep 0.2
kill -TERM $pid 2>/dev/null
wait $pid
st=$?
[ $st -ne 0 ] || bad "killed run: exit status 0 (finished before the kill?)"
[ -e "$T/k" ] && bad "killed run left $(ls -a "$T/k" | tr '\n' ' ')"

# 10.
for l in fa-split cross-layer; do
	"$KVSIM" run -q --no-plot --set policy=vllm-v0 \
		--set engine.max_model_len=8192 --set engine.preemption_mode=swap \
		--set engine.num_gpu_blocks_override=700 \
		--set workload.max_requests=300 --set cost.kv_layout=$l \
		--out "$T/lay-$l" || bad "layout $l run"
done
da=$(sval "$T/lay-fa-split/summary.csv" duration_s)
db=$(sval "$T/lay-cross-layer/summary.csv" duration_s)
sa=$(sval "$T/lay-fa-split/summary.csv" swap_out_blocks)
[ "$sa" -gt 0 ] 2>/dev/null || bad "layout run did not swap"
[ "$sa" = "$(sval "$T/lay-cross-layer/summary.csv" swap_out_blocks)" ] ||
	bad "layouts swapped differently"
awk -v a="$da" -v b="$db" 'BEGIN { exit !(b < a) }' ||
	bad "cross-layer swaps ($db s) not faster than fa-split ($da s)"
grep -q '^  kv_layout: cross-layer$' "$T/lay-cross-layer/config.yaml" ||
	bad "config.yaml does not record cost.kv_layout"
expect_bad "^--set cost.kv_layout=x: cost.kv_layout: expected" \
	--set cost.kv_layout=x

# 11.
for p in vllm-v0 vllm-v1 sarathi deepspeed-fastgen kvsim; do
	"$KVSIM" run -q --no-plot --check --set policy=$p \
		--set workload.max_requests=60 --out "$T/pol-$p" ||
		bad "policy $p: the embedded default does not run"
done
grep -q '^  max_num_batched_tokens: 131072$' "$T/pol-vllm-v0/config.yaml" ||
	bad "vllm-v0: max_num_batched_tokens is not max_model_len"
grep -q '^  enable_prefix_caching: false$' \
	"$T/pol-deepspeed-fastgen/config.yaml" ||
	bad "deepspeed-fastgen: prefix caching not off"
"$KVSIM" run -q --no-plot --check --set policy=deepspeed-fastgen \
	--set engine.num_gpu_blocks_override=64 --set engine.max_model_len=1024 \
	--set workload.max_requests=100 --out "$T/fg" ||
	bad "deepspeed-fastgen under pressure did not finish"
[ $(($(sval "$T/fg/summary.csv" completed) + \
     $(sval "$T/fg/summary.csv" rejected))) = 100 ] ||
	bad "deepspeed-fastgen under pressure: not every request completed"
[ "$(sval "$T/fg/summary.csv" preemptions)" -gt 0 ] 2>/dev/null ||
	bad "deepspeed-fastgen under pressure: no reset happened"

# 12.
"$KVSIM" run -q --no-plot --check --set model=ibm-granite/granite-4.0-h-tiny \
	--set engine.max_model_len=2048 --set engine.num_gpu_blocks_override=60 \
	--set workload.max_requests=120 --out "$T/gr" || bad "Granite run"
[ "$(awk 'END { print NR - 1 }' "$T/gr/groups.csv")" = 10 ] ||
	bad "Granite: not 10 groups in groups.csv"
[ "$(grep -c ',state,2048,' "$T/gr/groups.csv")" = 9 ] ||
	bad "Granite: not nine state groups of 2048-token blocks"
[ "$(sval "$T/gr/summary.csv" block_size)" = 400 ] ||
	bad "Granite: attention block size is not 400"
[ "$(sval "$T/gr/summary.csv" preemptions)" -gt 0 ] 2>/dev/null ||
	bad "Granite: the small pool did not preempt"

# 13.
for p in kvsim sarathi; do
	"$KVSIM" run -q --no-plot --check --set policy=$p \
		--set model="$top_srcdir/tests/gpu/gemma-2-w64.config.json" \
		--set engine.max_model_len=1024 --set engine.max_num_seqs=64 \
		--set engine.max_num_batched_tokens=256 \
		--set engine.num_gpu_blocks_override=90 \
		--set workload.max_requests=80 --out "$T/w64-$p" ||
		bad "sliding window under $p did not finish"
	[ $(($(sval "$T/w64-$p/summary.csv" completed) + \
	     $(sval "$T/w64-$p/summary.csv" rejected))) = 80 ] ||
		bad "sliding window under $p: requests lost"
done

# 14.
G=$top_srcdir/tests/gpu/swap.yaml
"$KVSIM" run -q --no-plot --check --chrome-trace --set policy=vllm-v1 \
	--set replicas=1 --set engine.preemption_mode=recompute \
	--set engine.swap_space=0 --out "$T/rc" "$G" || bad "recompute run"
[ "$(sval "$T/rc/summary.csv" preemptions)" -gt 0 ] ||
	bad "recompute run: no preemptions"
[ "$(sval "$T/rc/summary.csv" prefix_hit_tokens)" -gt 0 ] ||
	bad "recompute run: no prefix hits"
sched=$(grep -o '"tokens":[0-9]*' "$T/rc/trace.json" | cut -d: -f2 |
	awk '{ s += $1 } END { print s + 0 }')
first=$(tail -n +2 "$T/rc/requests.csv" |
	awk -F, '{ s += $8 + $9 - 1 - $10 } END { print s + 0 }')
rec=$(sval "$T/rc/summary.csv" recomputed_tokens)
[ "$rec" -gt 0 ] || bad "recompute run: nothing recomputed"
[ "$sched" -eq $((first + rec)) ] ||
	bad "scheduled tokens $sched != first-time $first + recomputed $rec"
"$KVSIM" run -q --no-plot --check --out "$T/v0pc" "$G" 2>"$T/err" ||
	bad "vllm-v0 prefix caching run"
awk -v h="$(sval "$T/v0pc/summary.csv" prefix_hit_rate)" \
	'BEGIN { exit !(h > 0.1) }' || bad "vllm-v0: prefix hit rate not counted"
"$KVSIM" run -q --no-plot --check --seed 11 --out "$T/v0st" \
	"$top_srcdir/tests/gpu/v0-chunked-prefix.yaml" 2>"$T/err" ||
	bad "vllm-v0 chunked prefix caching run"
[ "$(sval "$T/v0st/summary.csv" stale_cached_tokens)" -gt 0 ] ||
	bad "vllm-v0: no stale cached tokens under this pressure"
grep -q 'blocks that do not hold their KV' "$T/err" ||
	bad "vllm-v0: no warning for stale cached tokens"
"$KVSIM" run -q --no-plot --out "$T/v0np" \
	--set engine.enable_prefix_caching=false "$G" 2>"$T/err" ||
	bad "vllm-v0 without prefix caching"
[ "$(sval "$T/v0np/summary.csv" stale_cached_tokens)" = 0 ] ||
	bad "vllm-v0 without prefix caching: stale cached tokens"
[ -s "$T/err" ] && bad "vllm-v0 without prefix caching: warned"

# 15.
mkdir -p "$T/x" "$T/y/z"
printf 'workload:\n  max_requests: 30\n' >"$T/x/c.yaml"
cp "$T/x/c.yaml" "$T/y/z/c.yaml"
"$KVSIM" run -q --no-plot --out "$T/idx" "$T/x/c.yaml" || bad "run x/c.yaml"
"$KVSIM" run -q --no-plot --out "$T/idy" "$T/y/z/c.yaml" || bad "run y/z/c.yaml"
"$KVSIM" run -q --no-plot --out "$T/idc" "$T/idx/config.yaml" ||
	bad "run of a written config.yaml"
cmp -s "$T/idx/requests.csv" "$T/idy/requests.csv" ||
	bad "run_id depends on the configuration's directory"
cmp -s "$T/idx/requests.csv" "$T/idc/requests.csv" ||
	bad "run_id of a run's own config.yaml differs"
[ "$(sval "$T/idc/summary.csv" trace)" = azure_llm_2023_conv_excerpt.csv ] ||
	bad "a run's own config.yaml names the bundled trace by its path"
# a config.json model path is relative to its configuration file, as a
# trace's is (it was relative to the current directory, and a run's own
# config.yaml failed from anywhere else)
mkdir -p "$T/mj/models"
cp "$top_srcdir/tests/gpu/gemma-2-w64.config.json" "$T/mj/models/m.config.json"
printf 'model: models/m.config.json
engine: {max_model_len: 1024}
workload: {max_requests: 5}
' \
	>"$T/mj/c.yaml"
"$KVSIM" run -q --no-plot --out "$T/mjo" "$T/mj/c.yaml" 2>"$T/err" ||
	bad "a model path relative to the configuration: $(cat "$T/err")"
K=$(cd "$(dirname "$KVSIM")" && pwd)/$(basename "$KVSIM")
(cd "$T/x" && "$K" run -q --no-plot --out "$T/mjo2" "$T/mjo/config.yaml") \
	2>"$T/err" || bad "a run's own config.yaml with a model path: $(cat "$T/err")"

# 16.
{ head -101 "$top_srcdir/data/azure_llm_2023_conv_excerpt.csv"
  echo "2023-11-16 18:20:00.0000000,abc,20"
  sed -n 102,200p "$top_srcdir/data/azure_llm_2023_conv_excerpt.csv"; } >"$T/bt.csv"
"$KVSIM" run -q --no-plot --set workload.trace="$T/bt.csv" \
	--set workload.on_error=skip --out "$T/skip" 2>"$T/err" ||
	bad "run skipping a bad row"
grep -q 'not replayed: malformed rows skipped 1' "$T/err" ||
	bad "skipped row not counted"
grep -q 'first skipped row: .*bt.csv:102:29: ContextTokens' "$T/err" ||
	bad "skipped row's FILE:LINE:COL not reported"
[ "$(sval "$T/skip/summary.csv" requests)" = 199 ] ||
	bad "skipping run: not the 199 good rows"
"$KVSIM" run -q --no-plot --set engine.swap_space=auto --set model=auto \
	--set replicas=null --set engine.dtype=null --set engine.kv_cache_dtype=~ \
	--set workload.max_requests=5 --out "$T/auto" ||
	bad "auto for keys with plain defaults"
grep -q '^  swap_space: 4$' "$T/auto/config.yaml" ||
	bad "engine.swap_space=auto: not the default 4"
# a subnormal number is a number (it read as "expected a number")
printf 'workload:\n  generator:\n    requests: 3\n    sessions: {turns: 2, think_s: 5e-324}\n' \
	>"$T/sub.yaml"
"$KVSIM" run -q --no-plot --out "$T/sub" "$T/sub.yaml" 2>"$T/err" ||
	bad "a subnormal think_s: $(cat "$T/err")"
# parallel sampling runs each request as n child requests (tests/nsamp.sh):
# one row per request, the samples counted, no warning
printf 'workload:\n  generator:\n    requests: 5\n    prompt: 100\n    output: 10\n    n: 3\n' \
	>"$T/par.yaml"
"$KVSIM" run -q --no-plot --out "$T/par" "$T/par.yaml" 2>"$T/err" ||
	bad "parallel sampling run"
grep -q 'parallel sampling' "$T/err" && bad "parallel sampling: a warning"
[ "$(sval "$T/par/summary.csv" completed)" = 5 ] &&
	[ "$(sval "$T/par/summary.csv" parallel_samples)" = 15 ] &&
	[ "$(sval "$T/par/summary.csv" output_tokens)" = 150 ] ||
	bad "parallel sampling: not 5 rows of 3 samples"
# a run the policy stops scheduling says why (it said only "stalled")
"$KVSIM" run -q --no-plot --seed 785416 --out "$T/stall" "$D/v0_swap_stall.yaml" \
	2>"$T/err"
[ $? = 1 ] || bad "vllm-v0 swap stall: not exit 1"
grep -q 'stalled with unfinished requests (0 running, 0 waiting, 1 swapped): the policy schedules none of them (vllm-v0 swaps a prefill back in only when' "$T/err" ||
	bad "vllm-v0 swap stall: $(cat "$T/err")"
# ... with --chrome-trace too: the failed run's trace is dropped, not
# closed into the file the output directory had closed already (a write
# to a closed FILE, which crashed about one run in six; valgrind shows it)
"$KVSIM" run -q --no-plot --chrome-trace --seed 785416 --out "$T/stall2" \
	"$D/v0_swap_stall.yaml" 2>"$T/err"
[ $? = 1 ] && [ ! -e "$T/stall2" ] && grep -q 'stalled' "$T/err" ||
	bad "vllm-v0 swap stall with --chrome-trace: $(cat "$T/err")"
# workload.trace=auto is the bundled trace again (it was a file "auto")
"$KVSIM" run -q --no-plot --set workload.trace="$T/bt.csv" \
	--set workload.on_error=skip --set workload.trace=auto \
	--set workload.max_requests=5 --out "$T/tauto" 2>"$T/err" ||
	bad "workload.trace=auto: $(cat "$T/err")"
[ "$(sval "$T/tauto/summary.csv" trace)" = azure_llm_2023_conv_excerpt.csv ] ||
	bad "workload.trace=auto: not the bundled trace"

# 17.
R=$T/rt
mkdir -p "$R/len"
head -301 "$top_srcdir/data/azure_llm_2023_conv_excerpt.csv" >"$R/len/az.csv"
cat >"$R/poisson.yaml" <<'EOF2'
seed: 4
workload:
  seed: 11
  generator:
    requests: 60
    arrival: {process: poisson, rate: 3.3}
    prompt: {dist: lognormal, mean: 700, cv: 0.9, min: 8, max: 6000}
    output: {dist: empirical, values: [3, 17, 40.5, 90]}
    priority: {dist: normal, mean: -2, sd: 3, min: -10, max: 10}
    n: {dist: empirical, values: [1, 2], weights: [0.7, 0.3]}
EOF2
cat >"$R/gamma.yaml" <<'EOF2'
workload:
  vocab_size: 50000
  generator:
    requests: 80
    arrival: {process: gamma, rate: 2, cv: 2.7}
    prompt: {dist: zipf, s: 0.9, min: 20, max: 900}
    output: {dist: uniform, min: 4, max: 60}
    prefix:
      systems: 3
      zipf_s: 0.7
      length: {dist: lognormal, mu: 5.5, sigma: 0.25}
      fraction: 0.8
    sessions:
      turns: {dist: uniform, min: 1, max: 5}
      think_s: 1.5
      max_context: 4000
EOF2
cat >"$R/onoff.yaml" <<'EOF2'
workload:
  generator:
    requests: 50
    arrival: {process: onoff, rate: 8, on_s: 2.5, off_s: 1.25, off_rate: 0.5}
    prompt: {dist: normal, mean: 300, sd: 90, max: 1000}
    output: 33
EOF2
cat >"$R/repeat.yaml" <<'EOF2'
workload:
  generator:
    requests: 0
    duration_s: 30.5
    arrival:
      process: schedule
      repeat: true
      segments:
        - {duration_s: 4, rate: 3}
        - {duration_s: 2.5, rate: 0}
    prompt: {dist: fixed, value: 120, min: 100, max: 200}
    sessions:
      turns: {dist: empirical, values: [1, 3], weights: [2, 1]}
      think_s: 0.7
EOF2
cat >"$R/schedule.yaml" <<'EOF2'
workload:
  generator:
    requests: 0
    arrival:
      process: schedule
      segments:
        - {duration_s: 10, rate: 2}
        - {duration_s: 5, rate: 9}
    output: {dist: zipf, s: 1.3, min: 2, max: 300}
EOF2
cat >"$R/lengths.yaml" <<'EOF2'
workload:
  generator:
    requests: 70
    arrival: {process: constant, rate: 6}
    lengths_from: {trace: len/az.csv, format: azure}
EOF2
cat >"$R/stream.yaml" <<'EOF2'
workload:
  time_scale: 0.25
  target_rate: 4
  max_requests: 45
  max_model_len: 5000
  window: {start_s: 2, end_s: 60}
  filter: {min_prompt_tokens: 50, max_total_tokens: 4000}
  cap: {prompt_tokens: 2500, output_tokens: 200}
  tile: {copies: 2, period_s: 100, share_prefixes: true}
  generator:
    requests: 120
    arrival: {process: poisson, rate: 2}
    prompt: {dist: lognormal, mean: 600, cv: 1.5}
    prefix: {systems: 2, length: 64}
EOF2
for n in poisson gamma onoff repeat schedule lengths stream; do
	# from $R, so that lengths.yaml's path is relative to the current
	# directory as well as to the file
	(cd "$R" && "$KVSIM" run -q --no-plot --out "$n.a" "$n.yaml") ||
		{ bad "round trip $n: run failed"; continue; }
	"$KVSIM" run -q --no-plot --out "$R/$n.b" "$R/$n.a/config.yaml" ||
		{ bad "round trip $n: its config.yaml does not run"; continue; }
	grep -q '^  generator:$' "$R/$n.a/config.yaml" ||
		bad "round trip $n: config.yaml has no generator"
	[ "$(wc -l <"$R/$n.a/requests.csv")" -gt 10 ] ||
		bad "round trip $n: too few requests"
	cmp -s "$R/$n.a/requests.csv" "$R/$n.b/requests.csv" ||
		bad "round trip $n: requests.csv differs"
	sed 1d "$R/$n.a/config.yaml" >"$R/$n.ca"
	sed 1d "$R/$n.b/config.yaml" >"$R/$n.cb"
	cmp -s "$R/$n.ca" "$R/$n.cb" || bad "round trip $n: config.yaml differs"
done
grep -q "^    lengths_from: {trace: \"$R/len/az.csv\", format: azure}\$" \
	"$R/lengths.a/config.yaml" ||
	bad "round trip: lengths_from's trace not written absolute"
grep -q '^    prompt: {dist: lognormal, mu: [-0-9.e]*, sigma: [0-9.e-]*}$' \
	"$R/stream.a/config.yaml" || bad "round trip: lognormal not as mu, sigma"
Q=$(printf '%s/a"b\\c\nd' "$T")
mkdir -p "$Q"
head -41 "$top_srcdir/data/azure_llm_2023_conv_excerpt.csv" >"$Q/t\"1\\.csv"
cp "$D/calib.yaml" "$Q/cal.yaml"
printf '%s\n' 'cost: {calibration: cal.yaml}' 'workload:' \
	"  trace: 't\"1\\.csv'" >"$Q/c.yaml"
"$KVSIM" run -q --no-plot --out "$T/qa" "$Q/c.yaml" ||
	bad "trace path with a quote and a backslash"
grep -q '^  trace: ".*/a\\"b\\\\c\\nd/t\\"1\\\\.csv"$' "$T/qa/config.yaml" ||
	bad "trace path not escaped in config.yaml"
grep -q '^# kvsim run: .*(source: .*a\\"b\\\\c\\nd/c.yaml)$' \
	"$T/qa/config.yaml" ||
	bad "source comment not escaped in config.yaml"
"$KVSIM" run -q --no-plot --out "$T/qb" "$T/qa/config.yaml" ||
	bad "config.yaml with an escaped trace path does not run"
cmp -s "$T/qa/requests.csv" "$T/qb/requests.csv" ||
	bad "escaped paths: requests.csv differs"
[ "$(wc -l <"$T/qb/requests.csv")" = 41 ] || bad "escaped paths: not 40 rows"

# 18.
printf '%s\n' 'policy: kvsim' 'model: google/gemma-2-9b' \
	'engine: {max_model_len: 512, num_gpu_blocks_override: 100,' \
	'         preemption_mode: swap, enable_prefix_caching: false}' \
	'workload:' '  generator: {requests: 4, arrival: {process: constant,' \
	'    rate: 100}, prompt: {dist: fixed, value: 200},' \
	'    output: {dist: fixed, value: 200}}' >"$T/g2.yaml"
"$KVSIM" run -q --no-plot --out "$T/g2" "$T/g2.yaml" || bad "gemma-2 swap run"
so=$(sval "$T/g2/summary.csv" swap_out_blocks)
[ "$so" -gt 0 ] 2>/dev/null || bad "gemma-2: no swap"
c1=$(col "$T/g2/requests.csv" swapped_out_blocks)
c2=$(col "$T/g2/requests.csv" swapped_out_bytes)
sum=$(tail -n +2 "$T/g2/requests.csv" |
	awk -F, -v a="$c1" -v b="$c2" '{ n += $a; y += $b } END { print n, y }')
[ "$sum" = "$so $((so * 2752512))" ] ||
	bad "gemma-2: requests.csv swaps $sum, summary $so blocks"
[ "$(sval "$T/g2/summary.csv" swap_out_bytes)" = $((so * 2752512)) ] ||
	bad "gemma-2: summary swap bytes"

# 19.
printf '%s\n' arrival_ns,prompt_tokens,output_tokens 0,10,2 0,10,2 0,10,2 \
	0,10,2 15000000,10,2 20000000,10,2 >"$T/same.csv"
printf '%s\n' 'model: meta-llama/Llama-3.1-8B' 'policy: vllm-v1' \
	'cost: {step_ns: 10000000}' 'workload: {trace: same.csv}' \
	>"$T/same.yaml"
for reps in 1 2; do
	"$KVSIM" run -q --no-plot --out "$T/same$reps" --set replicas=$reps \
		"$T/same.yaml" || bad "same-instant arrivals: run ($reps)"
	c=$(col "$T/same$reps/requests.csv" first_scheduled_s)
	got=$(tail -n +2 "$T/same$reps/requests.csv" | cut -d, -f"$c" | tr '\n' ' ')
	[ "$got" = "0.000000000 0.000000000 0.000000000 0.000000000 0.020000000 0.020000000 " ] ||
		bad "same-instant arrivals ($reps replicas): first scheduled $got"
done
# one replica: [0,10] prefills all four, [10,20] their last tokens, the
# fifth (15 ms) waits for 20, where the sixth arrives as the step ends and
# joins it (it used to wait for the next step: the step's end was queued
# before its arrival): [20,30], [30,40]
[ "$(sval "$T/same1/summary.csv" steps)" = 4 ] ||
	bad "same-instant arrivals: $(sval "$T/same1/summary.csv" steps) steps"
# 20.
printf '%s\n' arrival_ns,prompt_tokens,output_tokens,priority 0,100,20,5 \
	1000,100,20,5 2000,100,20,5 3000,100,20,0 >"$T/prio.csv"
printf '%s\n' 'model: meta-llama/Llama-3.1-8B' 'policy: vllm-v1' \
	'cost: {step_ns: 10000000}' 'engine: {max_num_seqs: 1}' \
	'workload: {trace: prio.csv}' >"$T/prio.yaml"
for sp in fcfs priority; do
	"$KVSIM" run -q --no-plot --out "$T/prio-$sp" \
		--set engine.scheduling_policy=$sp "$T/prio.yaml" ||
		bad "scheduling_policy $sp: run"
done
order() { tail -n +2 "$1" | sort -t, -k"$(col "$1" first_scheduled_s)" |
	cut -d, -f"$(col "$1" request_id)" | tr '\n' ' '; }
[ "$(order "$T/prio-fcfs/requests.csv")" = "0 1 2 3 " ] ||
	bad "fcfs order: $(order "$T/prio-fcfs/requests.csv")"
[ "$(order "$T/prio-priority/requests.csv")" = "0 3 1 2 " ] ||
	bad "priority order: $(order "$T/prio-priority/requests.csv")"
grep -qx '  scheduling_policy: priority' "$T/prio-priority/config.yaml" ||
	bad "config.yaml lacks scheduling_policy"
"$KVSIM" run -q --no-plot --out "$T/prio-v0" --set policy=vllm-v0 \
	--set engine.scheduling_policy=priority "$T/prio.yaml" 2>"$T/prio.err"
[ $? = 2 ] && grep -q 'fcfs only' "$T/prio.err" && [ ! -e "$T/prio-v0" ] ||
	bad "vllm-v0 with priority: not refused"
# 21.
printf '%s\n' arrival_ns,prompt_tokens,output_tokens 0,100,1 10000000,20,1 \
	>"$T/lo.csv"
printf '%s\n' 'model: meta-llama/Llama-3.1-8B' 'policy: vllm-v1' 'replicas: 2' \
	'router: least-outstanding' 'cost: {step_ns: 10000000}' \
	'workload: {trace: lo.csv}' >"$T/lo.yaml"
"$KVSIM" run -q --no-plot --out "$T/lo" "$T/lo.yaml" || bad "least-outstanding run"
c=$(col "$T/lo/requests.csv" replica)
[ "$(tail -n +2 "$T/lo/requests.csv" | cut -d, -f"$c" | tr '\n' ' ')" = "0 0 " ] ||
	bad "least-outstanding: routed on the state before the step's end"
# 22.
printf '%s\n' 'model: meta-llama/Llama-3.1-8B' 'policy: kvsim' \
	'engine: {max_model_len: 512, num_gpu_blocks_override: 40,' \
	'         enable_prefix_caching: false}' 'workload:' \
	'  generator: {requests: 30, arrival: {process: constant, rate: 1000},' \
	'    prompt: {dist: fixed, value: 100}, output: {dist: fixed, value: 200}}' \
	>"$T/kc.yaml"
"$KVSIM" run -q --no-plot --out "$T/kc" "$T/kc.yaml" || bad "kvsim cost run"
[ "$(sval "$T/kc/summary.csv" swap_out_blocks)" -gt 0 ] &&
	[ "$(sval "$T/kc/summary.csv" recomputed_tokens)" -gt 0 ] ||
	bad "kvsim policy: swaps $(sval "$T/kc/summary.csv" swap_out_blocks), recomputed $(sval "$T/kc/summary.csv" recomputed_tokens)"
# 23.
v1haz() {	# v1haz NAME FILE WANT [--set ...]
	n=$1 f=$2 w=$3
	shift 3
	"$KVSIM" run -q --no-plot --out "$T/$n" "$top_srcdir/tests/gpu/$f" \
		"$@" 2>"$T/$n.err" || bad "$n: run failed"
	[ "$(sval "$T/$n/summary.csv" stale_cached_tokens)" = "$w" ] ||
		bad "$n: $(sval "$T/$n/summary.csv" stale_cached_tokens) stale tokens, want $w"
	if [ "$w" = 0 ]; then
		[ -s "$T/$n.err" ] && bad "$n: warned"
	else
		grep -q "warning: $w tokens .* (vLLM v1: " "$T/$n.err" ||
			bad "$n: no warning"
	fi
}
v1haz wd v1-priority-withdraw.yaml 1
v1haz wd-fcfs v1-priority-withdraw.yaml 0 --set engine.scheduling_policy=fcfs
v1haz ss mamba-same-step.yaml 512
v1haz ss-defer mamba-same-step.yaml 0 \
	--set engine.defer_same_step_state_hits=true
# 24.
printf '%s\n' arrival_ns,prompt_tokens,output_tokens 0,10,2 30000000000,10,2 \
	>"$T/ts.csv"
printf '%s\n' 'model: meta-llama/Llama-3.1-8B' 'cost: {step_ns: 1000000}' \
	'output: {timeseries_interval_s: 4.1}' 'workload: {trace: ts.csv}' \
	>"$T/ts.yaml"
"$KVSIM" run -q --no-plot --out "$T/ts" "$T/ts.yaml" || bad "timeseries run"
c=$(col "$T/ts/timeseries.csv" t_s)
[ "$(sed -n '2p;3p;8p' "$T/ts/timeseries.csv" | cut -d, -f"$c" | tr '\n' ' ')" = \
  "4.100000000 8.200000000 28.700000000 " ] ||
	bad "timeseries rows: $(cut -d, -f"$c" "$T/ts/timeseries.csv" | tr '\n' ' ')"
# 25.  Single steps: a fast-forwarded span is checked once, after it.
KVSIM_CHECK=report "$KVSIM" run -q --no-plot --no-fast-forward \
	--out "$T/ck" "$top_srcdir/tests/run/tiny.yaml" 2>"$T/ck.err" ||
	bad "KVSIM_CHECK run"
grep -qx 'kvsim run: KVSIM_CHECK: the invariants held at 8 checks' \
	"$T/ck.err" || bad "KVSIM_CHECK: $(cat "$T/ck.err")"
# with the fast-forward: after each event it leaves, and at the end (its
# steps count as the events they replace, in summary.csv too)
KVSIM_CHECK=report KVSIM_FF_REPORT=1 "$KVSIM" run -q --no-plot \
	--out "$T/ckf" "$top_srcdir/tests/run/tiny.yaml" 2>"$T/ckf.err" ||
	bad "KVSIM_CHECK run, fast-forward"
ffs=$(sed -n 's/^kvsim run: fast-forward: \([0-9]*\) of .*/\1/p' \
    "$T/ckf.err")
# (a span's tail, its last step left in flight, ends by an event of its own)
tails=$(sed -n 's/^kvsim run: fast-forward spans: [0-9]*, \([0-9]*\) .*/\1/p' \
    "$T/ckf.err")
grep -qx "kvsim run: KVSIM_CHECK: the invariants held at $((8 - ${ffs:-99} + ${tails:-99})) checks" \
	"$T/ckf.err" || bad "KVSIM_CHECK, fast-forward: $(cat "$T/ckf.err")"
cmp -s "$T/ck/requests.csv" "$T/ckf/requests.csv" ||
	bad "KVSIM_CHECK: the fast-forward changed requests.csv"
KVSIM_CHECK=0 "$KVSIM" run -q --no-plot --out "$T/ck0" \
	"$top_srcdir/tests/run/tiny.yaml" 2>"$T/ck0.err" || bad "KVSIM_CHECK=0 run"
[ -s "$T/ck0.err" ] && bad "KVSIM_CHECK=0: $(cat "$T/ck0.err")"
cmp -s "$T/ck/requests.csv" "$T/ck0/requests.csv" ||
	bad "KVSIM_CHECK changed requests.csv"
# 26.
printf '%s\n' arrival_ns,prompt_tokens,output_tokens 0,512,2 0,513,2 0,100,2 \
	>"$T/mml.csv"
for p in vllm-v0:2:1 vllm-v1:1:2; do
	pol=${p%%:*} c=${p#*:}
	j=${c#*:} c=${c%:*}
	printf '%s\n' 'model: meta-llama/Llama-3.1-8B' "policy: $pol" \
		'engine: {max_model_len: 512}' 'cost: {step_ns: 1000000}' \
		'workload: {trace: mml.csv}' >"$T/mml-$pol.yaml"
	"$KVSIM" run -q --no-plot --check --out "$T/mml-$pol" \
		"$T/mml-$pol.yaml" || bad "mml $pol: run failed"
	[ "$(sval "$T/mml-$pol/summary.csv" completed)" = "$c" ] &&
		[ "$(sval "$T/mml-$pol/summary.csv" rejected)" = "$j" ] ||
		bad "mml $pol: completed $(sval "$T/mml-$pol/summary.csv" completed), rejected $(sval "$T/mml-$pol/summary.csv" rejected), want $c and $j"
done
# 27.
for g in off vllm 4; do
	"$KVSIM" run -q --no-plot --out "$T/cg-$g" --set cost.cuda_graphs=$g \
		--set workload.max_requests=40 ||
		bad "cuda_graphs=$g: run failed"
done
"$KVSIM" run -q --no-plot --out "$T/cg-none" --set workload.max_requests=40 ||
	bad "cuda_graphs unset: run failed"
cmp -s "$T/cg-off/requests.csv" "$T/cg-none/requests.csv" ||
	bad "cuda_graphs=off differs from the default"
grep -qx '  cuda_graphs: vllm' "$T/cg-vllm/config.yaml" ||
	bad "config.yaml does not record cuda_graphs: vllm"
grep -q cuda_graphs "$T/cg-off/config.yaml" &&
	bad "config.yaml records cuda_graphs off"
# column 1 is the run's id, which the configuration sets
for g in none vllm 4; do
	cut -d, -f2- "$T/cg-$g/requests.csv" >"$T/cg-$g.rows"
done
cmp -s "$T/cg-vllm.rows" "$T/cg-none.rows" &&
	bad "cuda_graphs=vllm changed nothing"
cmp -s "$T/cg-4.rows" "$T/cg-vllm.rows" &&
	bad "cuda_graphs=4 ran as vllm's sizes"
expect_bad "^--set cost.cuda_graphs=0: cost.cuda_graphs: expected off, vllm" \
	--set cost.cuda_graphs=0
# A run's pools hold at most 2^26 blocks (SIM_POOL_MAX_BLOCKS): the GPU's,
# whether set or sized from the memory, and vLLM v0's swap space; 2^26
# itself runs (with vllm-v1, 36 bytes a block: 2.4 GB)
expect_bad "engine.num_gpu_blocks_override: expected a block count from 1 to 2\\^26" \
	--set engine.num_gpu_blocks_override=67108865
expect_bad "more than a run's 2\\^26; raise engine.block_size" \
	--set engine.kv_cache_memory_bytes=9000GiB --set engine.block_size=1 \
	--set model=google/gemma-3-1b-it --set gpu=h200
expect_bad "^kvsim run: engine.swap_space: [0-9]+ CPU blocks in 1e\\+06 GiB: more than a run's 2\\^26" \
	--set policy=vllm-v0 --set engine.swap_space=1000000
"$KVSIM" run -q --no-plot --out "$T/pool-max" --set workload.max_requests=2 \
	--set engine.num_gpu_blocks_override=67108864 ||
	bad "a pool of 2^26 blocks: refused"
grep -q '^  num_gpu_blocks_override: 67108864$' "$T/pool-max/config.yaml" ||
	bad "a pool of 2^26 blocks: not the run's"
exit $fail
