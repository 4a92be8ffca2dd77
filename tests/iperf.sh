#!/bin/sh
# iperf.sh -- load as benchmark clients make it (docs/workloads.md,
# sections 10 and 11), end to end through `kvsim run`:
#  1. workload.kind inference-perf (tests/iperf/ip_config.yaml: constant
#     stages 5 req/s x 6 s and 20 req/s x 3 s, 3 groups x 4 prompts of a
#     64-token system prompt and a 32-token question, 8 output tokens):
#     exactly 30 and 60 requests, each with its stage in requests.csv and
#     summary_stages.csv; every output is 8 tokens (ignore_eos);
#  2. the stages drain: stage 1's first arrival comes after stage 0's last
#     request ended plus load.interval (1 s) and the 1 s lead;
#  3. prompt cycling (block size 16): the first request of each group
#     hits nothing, later ones of the group its 64-token system prompt,
#     and from request 12 of a stage on (the prompt list wraps) the whole
#     prompt but its last block (80 tokens);
#  4. poisson stages send exactly rate x duration requests too;
#  5. workload.max_concurrency N: never more than N requests between
#     arrival (sent) and finish, under --check (the replica's audits);
#  6. workload.timeout_s (just above the median E2E without one: about
#     half the requests take longer): those fail -- requests.csv status
#     failed, summary.csv's failed column counts them, latency metrics
#     over the others only -- and their blocks are freed (--check, and the
#     run ends with nothing running or waiting);
#  7. bad inference-perf configs exit 2 with FILE:LINE:COL and no output;
#     a key inference-perf does not read is a warning, the run goes on.
: "${KVSIM:?}" "${top_srcdir:?}"
d=$top_srcdir/tests/iperf
fail=0
t=${TMPDIR:-/tmp}/kvsim-iperf.$$
trap 'rm -rf "$t" "$t.err" "$t.out"' EXIT
ok() { echo "ok: $*"; }
no() { echo "FAIL: $*"; fail=1; }

run() {
	rm -rf "$t"
	"$KVSIM" run "$@" --out "$t" --no-plot -q >"$t.out" 2>"$t.err"
}

# column number of a header name in a CSV file
col() {
	head -1 "$1" | tr ',' '\n' | grep -n -x "$2" | cut -d: -f1
}

# 1. exact counts, stages, fixed outputs
if run "$d/run.yaml" --check; then
	r=$t/requests.csv
	cs=$(col "$r" stage)
	co=$(col "$r" output_tokens)
	n0=$(awk -F, -v c="$cs" 'NR > 1 && $c == 0' "$r" | wc -l)
	n1=$(awk -F, -v c="$cs" 'NR > 1 && $c == 1' "$r" | wc -l)
	[ "$n0" -eq 30 ] && [ "$n1" -eq 60 ] &&
	    ok "stage counts 30 and 60" ||
	    no "stage counts: $n0 and $n1 (want 30 and 60)"
	awk -F, -v c="$co" 'NR > 1 && $c != 8 { bad = 1 } END { exit bad }' \
	    "$r" && ok "every output 8 tokens" || no "outputs not all 8"
	s=$t/summary_stages.csv
	[ "$(cut -d, -f1-3 "$s" | tr '\n' ' ')" = \
	    "stage,completed,failed 0,30,0 1,60,0 " ] &&
	    ok "summary_stages.csv" || no "summary_stages.csv: $(cat "$s")"
	# 2. drain order
	ca=$(col "$r" arrival_s)
	cf=$(col "$r" finish_s)
	awk -F, -v s="$cs" -v a="$ca" -v f="$cf" '
	    NR > 1 && $s == 0 && $f > end0 { end0 = $f }
	    NR > 1 && $s == 1 && (first1 == "" || $a < first1) { first1 = $a }
	    END { exit !(first1 >= end0 + 2.0) }' "$r" &&
	    ok "stage 1 starts 2 s after stage 0 drained" ||
	    no "stage 1 starts before stage 0 drained"
	# 3. prefix hits as the prompts cycle
	ch=$(col "$r" cached_prefix_tokens)
	got=$(awk -F, -v s="$cs" -v h="$ch" 'NR > 1 && $s == 0 { print $h }' \
	    "$r" | head -14 | tr '\n' ' ')
	# the shuffled order puts groups' first prompts at 0, 1 and 4
	want="0 0 64 64 0 64 64 64 64 64 64 64 80 80 "
	[ "$got" = "$want" ] && ok "prefix hits as prompts cycle" ||
	    no "prefix hits: $got (want $want)"
	awk -F, -v s="$cs" -v h="$ch" 'NR > 1 && $s == 1 && $h != 80 {
	    bad = 1 } END { exit bad }' "$r" &&
	    ok "stage 1 hits its whole cached prompt" ||
	    no "stage 1 missed the cache"
	grep -q '^  kind: inference-perf$' "$t/config.yaml" &&
	    grep -q '^  config: .*ip_config.yaml' "$t/config.yaml" &&
	    ok "config.yaml records the kind and file" ||
	    no "config.yaml lacks kind/config"
else
	no "inference-perf run failed: $(cat "$t.err")"
fi

# 4. poisson
if run "$d/run_poisson.yaml"; then
	[ "$(cut -d, -f1-3 "$t/summary_stages.csv" | tr '\n' ' ')" = \
	    "stage,completed,failed 0,30,0 1,60,0 " ] &&
	    ok "poisson stage counts" || no "poisson: $(cat "$t/summary_stages.csv")"
else
	no "poisson run failed: $(cat "$t.err")"
fi

# 5. max_concurrency
for n in 1 3; do
	if run "$d/run.yaml" --check --set workload.max_concurrency=$n; then
		r=$t/requests.csv
		ca=$(col "$r" arrival_s)
		cf=$(col "$r" finish_s)
		# +1 at each send, -1 at each finish (ends first at a tie)
		m=$(awk -F, -v a="$ca" -v f="$cf" 'NR > 1 {
		    print $a, 1; print $f, 0 }' "$r" | sort -k1,1g -k2,2n |
		    awk '{ c += $2 ? 1 : -1; if (c > m) m = c } END {
		    print m }')
		[ "$m" -le "$n" ] && ok "max_concurrency $n: at most $m in flight" ||
		    no "max_concurrency $n: $m in flight"
		[ "$(wc -l <"$r")" -eq 91 ] && ok "max_concurrency $n: all sent" ||
		    no "max_concurrency $n: $(wc -l <"$r") rows"
	else
		no "max_concurrency $n run failed: $(cat "$t.err")"
	fi
done
run "$d/run.yaml" --set workload.max_concurrency=1
e1=$(cut -d, -f3 "$t/summary.csv" | tail -1)
run "$d/run.yaml"
e0=$(cut -d, -f3 "$t/summary.csv" | tail -1)
# section 6's timeout: between this run's median E2E and the next larger
# one, so that no request ends exactly at it
c=$(col "$t/requests.csv" e2e_s)
med=$(awk -F, -v c="$c" 'NR > 1 { print $c }' "$t/requests.csv" | sort -g |
	awk '{ v[NR] = $1 } END { k = int(NR / 2)
	    for (i = k + 1; i <= NR && v[i] == v[k]; i++) ;
	    printf "%.9f\n", i <= NR ? (v[k] + v[i]) / 2 : v[k] + 1e-3 }')
# section 6b's timeout: inside the median request's way out through the
# API server (the engine finished it before, its client has it after)
cf=$(col "$t/requests.csv" frontend_out_s)
mid=$(awk -F, -v c="$c" -v f="$cf" 'NR > 1 && $f > 0 { print $c, $f }' \
	"$t/requests.csv" | sort -g | awk '{ e[NR] = $1; f[NR] = $2 }
	END { k = int((NR + 1) / 2); printf "%.9f\n", e[k] - f[k] / 2 }')
awk -v a="$e1" -v b="$e0" 'BEGIN { exit !(a > b) }' &&
    ok "one client at a time takes longer ($e1 s > $e0 s)" ||
    no "max_concurrency 1 did not slow the run ($e1 vs $e0)"

# 6. timeouts: just above the median E2E without a timeout, failing the
#    requests slower than it (about half)
if run "$d/run.yaml" --check --set workload.timeout_s="$med"; then
	r=$t/requests.csv
	cst=$(col "$r" status)
	nf=$(awk -F, -v c="$cst" 'NR > 1 && $c == "failed"' "$r" | wc -l)
	nok=$(awk -F, -v c="$cst" 'NR > 1 && $c == "ok"' "$r" | wc -l)
	sf=$(awk -F, -v c="$(col "$t/summary.csv" failed)" 'NR == 2 {
	    print $c }' "$t/summary.csv")
	sc=$(cut -d, -f2 "$t/summary.csv" | tail -1)
	[ "$nf" -gt 0 ] && [ "$nok" -gt 0 ] && [ "$sf" -eq "$nf" ] &&
	    [ "$sc" -eq "$nok" ] &&
	    ok "timeouts: $nf failed, $nok completed, summary agrees" ||
	    no "timeouts: $nf failed / $nok ok, summary failed $sf completed $sc"
	ce=$(col "$r" e2e_s)
	awk -F, -v c="$cst" -v e="$ce" -v m="$med" 'NR > 1 && $c == "failed" &&
	    ($e < m - 1e-6 || $e > m + 1e-6) { bad = 1 } END { exit bad }' "$r" &&
	    ok "failed requests end at their timeout" ||
	    no "a failed request's e2e is not the timeout"
	tail -1 "$t/timeseries.csv" | awk -F, '{ exit !($3 == 0 && $4 == 0) }' &&
	    ok "nothing left running or waiting" || no "requests left over"
	e99=$(awk -F, -v c="$(col "$t/summary.csv" e2e_max_s)" 'NR == 2 {
	    print $c }' "$t/summary.csv")
	awk -v x="$e99" -v m="$med" 'BEGIN { exit !(x < m) }' &&
	    ok "latency metrics over completed requests only" ||
	    no "e2e max $e99 counts a failed request"
else
	no "timeout run failed: $(cat "$t.err")"
fi

# 6b. a request whose end reaches its client after the timeout fails, even
#     though the engine finished it before: no completed request is late
if run "$d/run.yaml" --check --set workload.timeout_s="$mid"; then
	r=$t/requests.csv
	awk -F, -v s="$(col "$r" status)" -v e="$(col "$r" e2e_s)" \
	    -v m="$mid" 'NR > 1 && $s == "ok" && $e > m + 1e-9 { bad = 1 }
	    END { exit bad }' "$r" &&
	    ok "no request completes after its timeout ($mid s)" ||
	    no "a request completed after its timeout ($mid s)"
else
	no "timeout run (6b) failed: $(cat "$t.err")"
fi

# 7. bad configs, warnings
for b in datatype:6:9 loadtype:17:9 multiturn:16:29 dist:14:19; do
	name=${b%%:*}
	at=${b#*:}
	rm -rf "$t"
	"$KVSIM" run "$d/run_bad_$name.yaml" --out "$t" -q >"$t.out" 2>"$t.err"
	rc=$?
	[ "$rc" -eq 2 ] && [ ! -e "$t" ] &&
	    grep -q "bad_$name.yaml:$at: " "$t.err" &&
	    ok "bad $name: exit 2 at $at" ||
	    no "bad $name: exit $rc, $(cat "$t.err")"
done
if run "$d/run_warn_key.yaml"; then
	grep -q "warn_key.yaml:19:3: key 'warmup_s' in load: inference-perf" \
	    "$t.err" && ok "an unread key is a warning" ||
	    no "no warning: $(cat "$t.err")"
else
	no "warn_key run failed: $(cat "$t.err")"
fi
rm -rf "$t"
"$KVSIM" run "$d/run.yaml" --set workload.kind=inference-perf \
    --set workload.config=/nonexistent.yaml --out "$t" -q >"$t.out" 2>"$t.err"
[ $? -eq 2 ] && grep -q '/nonexistent.yaml' "$t.err" &&
    ok "a missing inference-perf config: exit 2" ||
    no "missing config: $(cat "$t.err")"

exit $fail
