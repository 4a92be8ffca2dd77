#!/bin/sh
# kvsim trace-stats on the committed fixtures: the table, --csv, --dump,
# and bad input: FILE:LINE:COL messages on stderr with exit status 2.
: "${KVSIM:?}" "${top_srcdir:?}"
fx=$top_srcdir/tests/fixtures/wl
fail=0
t=${TMPDIR:-/tmp}/kvsim-wl-cli.$$
trap 'rm -f "$t" "$t.err" "$t.csv" "$t.yaml"' EXIT
ok() { echo "ok: $*"; }
no() { echo "FAIL: $*"; fail=1; }

"$KVSIM" trace-stats --help >"$t" 2>"$t.err" &&
    grep -q '^usage: kvsim trace-stats' "$t" && [ ! -s "$t.err" ] &&
    ok "--help" || no "--help"
"$KVSIM" --help | grep -q 'trace-stats' && ok "listed in kvsim --help" ||
    no "listed in kvsim --help"

# The table, line by line.
"$KVSIM" trace-stats "$fx/mooncake.jsonl" >"$t" 2>"$t.err"
cat >"$t.csv" <<EOT
file: $fx/mooncake.jsonl
format: mooncake
rows: 5
first / last arrival: 0.000 / 6.001 s
span: 6.0 s
mean rate: 0.83 req/s
arrivals per 1-min bin: none (span under 60 s)
inter-arrival CV: 1.15
distinct timestamps: 3
input tokens: mean / median / p99 (min-max): 992.2 / 1,100 / 2,049 (100-2,049)
output tokens: mean / median / p99 (min-max): 67.2 / 10 / 300 (1-300)
offered load: 827 input tok/s, 56.0 output tok/s
total / unique 512-token blocks: 13 / 7
prefix-reuse ratio (blocks): 46.15 %
prefix-reuse ratio (tokens): 61.92 %
requests that reuse >= 1 leading block: 3 (60.0 %)
EOT
if cmp -s "$t" "$t.csv" && [ ! -s "$t.err" ]; then
	ok "mooncake table"
else
	no "mooncake table"; diff "$t.csv" "$t"; cat "$t.err"
fi
# Azure: wall-clock first/last, 1-minute bins, rejected rows reported.
"$KVSIM" trace-stats "$fx/azure.csv" >"$t" 2>"$t.err"
grep -qx 'first / last timestamp: 2023-11-16 18:15:46.6805900 / 2023-11-17 00:00:00.0000000' "$t" &&
    grep -qx 'arrivals per 1-min bin: min / median / max: 0 / 0 / 4 (344 bins, 343 empty)' "$t" &&
    ok "azure table" || { no "azure table"; cat "$t" "$t.err"; }
"$KVSIM" trace-stats "$fx/burstgpt.csv" >"$t" 2>"$t.err"
grep -qx 'not replayed: rejected: zero length 1' "$t" &&
    ok "rejections reported" || { no "rejections reported"; cat "$t"; }
# --csv: one header, one row.
"$KVSIM" trace-stats --csv "$fx/vidur.csv" >"$t" 2>"$t.err"
[ "$(wc -l <"$t")" -eq 2 ] && head -1 "$t" | grep -q '^file,format,rows,' &&
    sed -n 2p "$t" | grep -q ',vidur,4,0.000000000,10.000000000,' &&
    ok "--csv" || { no "--csv"; cat "$t"; }
# --dump writes kvsim CSV that reads back to the same bytes.
"$KVSIM" trace-stats --dump "$fx/kvsim.csv" >"$t.csv" &&
    "$KVSIM" trace-stats --dump "$t.csv" >"$t" && cmp -s "$t" "$t.csv" &&
    ok "--dump round trip" || no "--dump round trip"
# A generator from a YAML file, with a transformation.
"$KVSIM" trace-stats --config "$fx/yaml/gen.yaml" --max-requests 100 \
    --block-size 16 >"$t" 2>"$t.err" &&
    grep -qx 'rows: 100' "$t" && grep -qx 'format: generator' "$t" &&
    grep -q '^token-block reuse (16-token blocks): ' "$t" &&
    ok "--config generator" || { no "--config generator"; cat "$t" "$t.err"; }

# Bad input: the exact message, nothing on stdout, exit status 2.
bad() {
	want="kvsim trace-stats: $1"; shift
	"$KVSIM" trace-stats "$@" >"$t" 2>"$t.err"; rc=$?
	if [ $rc = 2 ] && [ ! -s "$t" ] && [ "$(cat "$t.err")" = "$want" ]; then
		ok "bad: $want"
	else
		no "bad (rc $rc): $*"; echo "want: $want"; echo "got:"; cat "$t.err"
	fi
}
bad "$fx/bad/empty.csv: empty file" "$fx/bad/empty.csv"
bad "$fx/bad/azure_negative.csv:3:29: ContextTokens is negative: '-5'" \
    "$fx/bad/azure_negative.csv"
bad "$fx/bad/azure_fields.csv:3:32: expected 3 fields, found 2" \
    "$fx/bad/azure_fields.csv"
bad "$fx/bad/mooncake_bad.jsonl:2:53: missing key \"output_length\"" \
    "$fx/bad/mooncake_bad.jsonl"
bad "$fx/bad/azure_unsorted.csv:4:1: timestamp 1.000000000 s is earlier than the previous row's 4.000000000 s (set order: sort or order: skip)" \
    "$fx/bad/azure_unsorted.csv"
bad "$fx/azure.csv:1:1: not mooncake format: expected a JSON object per line, found 'TIMESTAMP,ContextTokens,GeneratedTokens'" \
    --format mooncake "$fx/azure.csv"
bad "$fx/yaml/bad_key.yaml:3:3: unknown key 'generatr' in workload" \
    --config "$fx/yaml/bad_key.yaml"
if "$KVSIM" trace-stats "$fx/mooncake.jsonl.gz" >/dev/null 2>&1; then
	bad "$fx/truncated.jsonl.gz: truncated gzip stream" \
	    "$fx/truncated.jsonl.gz"
else
	bad "$fx/mooncake.jsonl.gz: gzip-compressed input, and this kvsim was built without zlib; decompress it first (gzip -dc)" \
	    "$fx/mooncake.jsonl.gz"
fi
# Datetimes: years out of int64 nanoseconds (year 9999 read as 1816, 1600
# wrapped), a 29 February of a common year (read as 1 March), and
# timestamps more than 292 years apart (the difference wrapped; order: skip
# dropped the row) are errors in every order mode; 2024-02-29 is a date.
rng="(times from 1677-09-21 00:12:43.145224192 to 2262-04-11 23:47:16.854775807 are read)"
bad "$fx/bad/azure_year9999.csv:3:1: TIMESTAMP is out of range: '9999-01-01 00:00:00' $rng" \
    "$fx/bad/azure_year9999.csv"
bad "$fx/bad/azure_year1600.csv:2:1: TIMESTAMP is out of range: '1600-01-01 00:00:00.0000000' $rng" \
    "$fx/bad/azure_year1600.csv"
bad "$fx/bad/azure_feb29.csv:3:1: TIMESTAMP: expected YYYY-MM-DD HH:MM:SS[.fffffff], found '2023-02-29 00:00:00.0000000'" \
    "$fx/bad/azure_feb29.csv"
for o in error skip sort; do
	bad "$fx/bad/azure_span_back.csv:3:1: timestamp 1678-01-01 00:00:00 is more than 292 years before the first row's 2262-01-01 00:00:00 (line 2): arrival times count nanoseconds from the first row in 64 bits" \
	    --order $o "$fx/bad/azure_span_back.csv"
	bad "$fx/bad/azure_span_fwd.csv:3:1: timestamp 2262-01-01 00:00:00.500000000 is more than 292 years after the first row's 1678-01-01 00:00:00 (line 2): arrival times count nanoseconds from the first row in 64 bits" \
	    --order $o --on-error skip "$fx/bad/azure_span_fwd.csv"
done
"$KVSIM" trace-stats "$fx/azure_leap.csv" >"$t" 2>"$t.err" &&
    grep -qx 'first / last timestamp: 2024-02-28 23:59:59.5000000 / 2024-03-01 00:00:00.0000000' "$t" &&
    ok "29 February 2024" || { no "29 February 2024"; cat "$t" "$t.err"; }
# Token-block reuse costs per segment, not per token: two prompts of
# 2^31 - 1 tokens (a minute and 4 GiB each, token by token) at once.
if command -v timeout >/dev/null 2>&1; then limit="timeout 20"; else limit=; fi
$limit "$KVSIM" trace-stats --block-size 16 "$fx/huge_prompt.csv" >"$t" \
    2>"$t.err" &&
    grep -qx 'token-block reuse (16-token blocks): 134,217,727 of 268,435,454 blocks (50.00 %), 50.00 % of input tokens' "$t" &&
    ok "2^31 - 1-token prompts" ||
    { no "2^31 - 1-token prompts"; cat "$t" "$t.err"; }
# Arrivals past the horizon of simulated time: the real arrival (not the
# int64 clock's clamped INT64_MAX ns, 9.22337e+09 s) and the trace row.
hz="past the 1000000000 s (31.7-year) horizon of simulated time: check the arrival rate, think_s, time_scale, window or the trace's timestamps"
bad "$fx/azure.csv:3: request 1 arrives at 4.31458e+15 s, $hz" \
    --time-scale 1e15 "$fx/azure.csv"
bad "$fx/azure.csv:6: request 4 arrives at 6e+09 s, $hz" \
    --target-rate 1e-9 "$fx/azure.csv"
printf 'workload:\n  trace: %s\n  tile: {copies: 3, period_s: 9e8}\n' \
    "$fx/azure.csv" >"$t.yaml"
bad "$fx/azure.csv:2: request 12 arrives at 1.8e+09 s, $hz" --config "$t.yaml"
printf 'workload:\n  generator: {requests: 3, arrival: {process: constant, rate: 1e-12}}\n' \
    >"$t.yaml"
bad "request 0 arrives at 1e+12 s, $hz" --config "$t.yaml"
# a session's next turn past it: named when it is reached (the think
# time once overflowed the clock); a think time so long it is infinite
printf 'workload:\n  generator:\n    requests: 3\n    arrival: {process: constant, rate: 1}\n    sessions: {turns: {dist: uniform, min: 2, max: 2}, think_s: %s}\n' \
    1e12 >"$t.yaml"
bad "request 2 arrives at 5.778e+11 s, $hz" --config "$t.yaml"
sed 's/think_s: 1e12/think_s: 1e300/' "$t.yaml" >"$t.2.yaml"
bad "request 2 arrives at inf s, $hz" --config "$t.2.yaml"
# ... and dropped with the session, unsaid, when a duration ends first
printf 'workload:\n  generator:\n    duration_s: 10\n    arrival: {process: constant, rate: 1}\n    sessions: {turns: {dist: uniform, min: 2, max: 2}, think_s: 1e12}\n' \
    >"$t.yaml"
"$KVSIM" trace-stats --config "$t.yaml" >"$t" 2>"$t.err" &&
    grep -qx 'rows: 9' "$t" && ok "turns past a duration: dropped" ||
    { no "turns past a duration: dropped"; cat "$t" "$t.err"; }
# on_error skip: counted, reported, the first one named on stderr.
"$KVSIM" trace-stats --on-error skip "$fx/bad/mooncake_bad.jsonl" \
    >"$t" 2>"$t.err"; rc=$?
[ $rc = 0 ] && grep -qx 'rows: 2' "$t" &&
    grep -qx 'not replayed: malformed rows skipped 4' "$t" &&
    grep -qx "kvsim trace-stats: first skipped row: $fx/bad/mooncake_bad.jsonl:2:53: missing key \"output_length\"" "$t.err" &&
    ok "--on-error skip" || { no "--on-error skip"; cat "$t" "$t.err"; }
# Usage errors.
for args in "" "--frob x" "--format nope $fx/azure.csv" \
    "--block-size 0 $fx/azure.csv" "--window 5:1 $fx/azure.csv" \
    "$fx/azure.csv $fx/vidur.csv"; do
	# shellcheck disable=SC2086
	"$KVSIM" trace-stats $args >"$t" 2>"$t.err"; rc=$?
	[ $rc = 2 ] && [ ! -s "$t" ] && grep -q 'trace-stats' "$t.err" &&
	    ok "usage: '$args'" || no "usage: '$args' (rc $rc)"
done
# ... each naming what is wrong (an unknown option used to be "needs a
# value", a bad value "unknown option or bad value")
usage() { # want args...
	want=$1
	shift
	"$KVSIM" trace-stats "$@" >"$t" 2>"$t.err"; rc=$?
	[ $rc = 2 ] && [ ! -s "$t" ] && grep -qxF "kvsim trace-stats: $want" "$t.err" &&
	    ok "usage: $want" || { no "usage: $*"; cat "$t.err"; }
}
usage "unrecognized option '--frob'" "$fx/azure.csv" --frob
usage "unrecognized option '--frob'" --frob=3 "$fx/azure.csv"
usage "option '--tile' requires an argument" "$fx/azure.csv" --tile
usage "--hash-block: expected an integer in [1, 16777215], got '0'" \
    --hash-block 0 "$fx/azure.csv"
usage "--tile: expected an integer in [1, 16777215], got 'x'" --tile=x \
    "$fx/azure.csv"
usage "--time-scale: expected a number > 0, got '-1'" --time-scale -1 \
    "$fx/azure.csv"
usage "--window: expected S:E seconds, 0 <= S < E, got '3'" --window 3 \
    "$fx/azure.csv"
usage "--seed: expected an integer >= 0, got 'x'" --seed x "$fx/azure.csv"
exit $fail
