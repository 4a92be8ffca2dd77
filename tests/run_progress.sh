#!/bin/sh
# run_progress.sh -- `kvsim run`'s progress line on a terminal (script(1)
# gives it one): the share of the workload's requests done, rising to
# 100%, and the wall time left (ETA).  Skipped without script(1).
set -u
: "${KVSIM:=../sim/kvsim}"
command -v script >/dev/null 2>&1 || { echo "SKIP: no script(1)"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-runp.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

case $KVSIM in /*) k=$KVSIM ;; *) k=$(pwd)/$KVSIM ;; esac
# 400 requests at 10 a second: 40 simulated seconds, a line a second
script -qec "'$k' run --set workload.max_requests=400 --out '$T/o' --no-plot" \
	/dev/null >"$T/tty" 2>&1 </dev/null || bad "run on a terminal"
tr '\r' '\n' <"$T/tty" | grep '^\[kvsim run\]' >"$T/lines"
[ -s "$T/lines" ] || { bad "no progress line"; cat "$T/tty"; }
grep -vq '^\[kvsim run\] *[0-9]*% t=[0-9]*s arrived=[0-9]* done=[0-9]*' \
	"$T/lines" && bad "a line without a percentage: $(grep -v '%' "$T/lines" | head -1)"
grep -q 'ETA [0-9]*s' "$T/lines" || bad "no ETA"
# the percentage is done / 400
awk '{ p = $3 + 0; d = $6; sub(/done=/, "", d)
	x = p - 100 * d / 400; if (x > 0.5 || x < -0.5) exit 1 }' "$T/lines" ||
	bad "percentage is not done / 400"
tail -1 "$T/lines" | grep -q '^\[kvsim run\] 100% ' ||
	bad "last line not 100%: $(tail -1 "$T/lines")"
exit $fail
