#!/bin/sh
# The command line: --help and --version on stdout with status 0, usage
# errors with status 2 on stderr, scripts from standard input, and the
# bundled examples run clean (with --check).
: "${KVSIM:?}" "${top_srcdir:?}"
fail=0
t=${TMPDIR:-/tmp}/kvsim-cli.$$
trap 'rm -f "$t" "$t.err" "$t.kvr"' EXIT
ok() { echo "ok: $*"; }
no() { echo "FAIL: $*"; fail=1; }

"$KVSIM" --version >"$t" 2>"$t.err" && grep -q '^kvsim [0-9]' "$t" &&
    [ ! -s "$t.err" ] && ok "--version" || no "--version"
"$KVSIM" --help >"$t" 2>"$t.err" && grep -q 'replay' "$t" &&
    [ ! -s "$t.err" ] && ok "--help" || no "--help"
"$KVSIM" replay --help >"$t" && grep -q 'usage: kvsim replay' "$t" &&
    ok "replay --help" || no "replay --help"
"$KVSIM" frobnicate >"$t" 2>"$t.err"; rc=$?
[ $rc = 2 ] && grep -q "unknown command 'frobnicate'" "$t.err" &&
    ok "unknown command" || no "unknown command (rc $rc)"
"$KVSIM" >"$t" 2>"$t.err"; rc=$?
[ $rc = 2 ] && grep -q usage "$t.err" && ok "no command" || no "no command"
"$KVSIM" replay --frob x >"$t" 2>"$t.err"; rc=$?
[ $rc = 2 ] && ok "unknown replay option" || no "unknown replay option"
"$KVSIM" replay /nonexistent/x.kvr >"$t" 2>"$t.err"; rc=$?
[ $rc = 2 ] && grep -q 'x.kvr' "$t.err" && ok "missing file" ||
    no "missing file (rc $rc)"
printf 'gpu_blocks 4\nblock_size 2\nseq A tokens=1..3\nallocate A\nfree_blocks\n' |
    "$KVSIM" replay - >"$t" 2>"$t.err"
[ "$(cat "$t")" = "allocate A ok
free_blocks attn=2 cpu=0" ] && ok "stdin" || { no "stdin"; cat "$t" "$t.err"; }
printf 'gpu_blocks 4\nseq A tokens=1\nallocate B\n' |
    "$KVSIM" replay - >"$t" 2>"$t.err"; rc=$?
[ $rc = 2 ] && grep -q '^<stdin>:3: ' "$t.err" && ok "stdin error" ||
    no "stdin error"
# A trace path given with --set resolves against the current directory.
d=${TMPDIR:-/tmp}/kvsim-cli-run.$$
if (cd "$top_srcdir" && "$KVSIM" run -q --out "$d" \
    --set workload.trace=tests/fixtures/wl/azure.csv \
    --set workload.format=azure) >"$t" 2>"$t.err" &&
    [ -s "$d/summary.csv" ]; then
	ok "run --set workload.trace=RELATIVE"
else
	no "run --set workload.trace=RELATIVE"; cat "$t.err"
fi
rm -rf "$d"
# --check will not trial an append of more tokens than a script may hold
# (vllm-v0 answers can_append n=4294967295 without a bound; the trial once
# materialised the 2^32 tokens)
printf 'mode vllm-v0\ngpu_blocks 10\nseq A tokens=0\nallocate A\ncan_append A n=4294967295\n' >"$t.kvr"
"$KVSIM" replay --check "$t.kvr" >"$t" 2>"$t.err"
if [ $? -eq 2 ] && grep -q "kvr:5: --check: n=4294967295 is more tokens" "$t.err" &&
    grep -qx 'can_append A no' "$t"; then
	ok "replay --check refuses a huge trial append"
else
	no "replay --check refuses a huge trial append"; cat "$t.err"
fi
rm -f "$t.kvr"
# --max-steps N: the script stops at the step after N (a preemption cycle
# asked for 300 steps), exit 2, the N steps' lines printed; N enough: as
# without it
cyc=$top_srcdir/tests/replay/sched-v1/run-cycle-steps
"$KVSIM" replay --max-steps 50 "$cyc.kvr" >"$t" 2>"$t.err"
if [ $? -eq 2 ] && [ "$(wc -l <"$t")" = 50 ] &&
    [ "$(tail -n 1 "$t")" = "step 50 preempt=B" ] &&
    grep -q "run-cycle-steps.kvr:11: step: past the limit of 50 steps" "$t.err"
then
	ok "replay --max-steps 50"
else
	no "replay --max-steps 50"; cat "$t.err"
fi
"$KVSIM" replay --max-steps 300 "$cyc.kvr" >"$t" 2>"$t.err" &&
    cmp -s "$t" "$cyc.out" && ok "replay --max-steps 300" ||
    { no "replay --max-steps 300"; cat "$t.err"; }
for v in 0 -1 " -1" +5 x 18446744073709551616; do
	"$KVSIM" replay --max-steps "$v" "$cyc.kvr" >"$t" 2>"$t.err"; rc=$?
	[ $rc = 2 ] && [ ! -s "$t" ] &&
	    grep -q "^kvsim replay: --max-steps: expected a count" "$t.err" &&
	    ok "replay --max-steps $v refused" ||
	    { no "replay --max-steps $v (rc $rc)"; cat "$t.err"; }
done
# An unknown option: one line naming it and one hint, status 2, for every
# command (some printed their whole help to stderr)
for c in run sweep compare capacity replay kv-size catalog trace-stats plot \
    validate calibrate; do
	"$KVSIM" $c --no-such-option >"$t" 2>"$t.err"; rc=$?
	if [ $rc = 2 ] && [ ! -s "$t" ] && [ "$(cat "$t.err")" = "kvsim $c: \
unrecognized option '--no-such-option'
Try 'kvsim $c --help'." ]; then
		ok "$c: unknown option"
	else
		no "$c: unknown option (rc $rc)"; sed 's/^/  | /' "$t.err"
	fi
done
# a missing value and an ambiguous abbreviation: getopt's line, the hint
for args in "run --out" "kv-size --gpu" "catalog --datadir" "plot --out" \
    "trace-stats --tile" "run --s 1" "replay --max-steps"; do
	c=${args%% *}
	# shellcheck disable=SC2086
	"$KVSIM" $args >"$t" 2>"$t.err"; rc=$?
	if [ $rc = 2 ] && [ "$(wc -l <"$t.err")" = 2 ] &&
	    grep -q "^kvsim $c: option '--[a-z-]*' \(requires an argument\|is ambiguous\)" "$t.err" &&
	    [ "$(sed -n 2p "$t.err")" = "Try 'kvsim $c --help'." ]; then
		ok "$args: one line and a hint"
	else
		no "$args (rc $rc)"; sed 's/^/  | /' "$t.err"
	fi
done
"$KVSIM" --no-such-option >"$t" 2>"$t.err"; rc=$?
[ $rc = 2 ] && [ "$(cat "$t.err")" = "kvsim: unrecognized option '--no-such-option'
Try 'kvsim --help'." ] && ok "kvsim --no-such-option" ||
    { no "kvsim --no-such-option (rc $rc)"; cat "$t.err"; }
"$KVSIM" frobnicate >"$t" 2>"$t.err"
[ "$(wc -l <"$t.err")" = 2 ] && grep -qx "Try 'kvsim --help'." "$t.err" &&
    ok "unknown command: a hint, not the help" ||
    { no "unknown command: a hint"; cat "$t.err"; }
for f in "$top_srcdir"/examples/*.kvr; do
	"$KVSIM" replay --check "$f" >"$t" 2>"$t.err" &&
	    ok "example ${f##*/}" || { no "example ${f##*/}"; cat "$t.err"; }
done
exit $fail
