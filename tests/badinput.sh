#!/bin/sh
# Bad replay input: every script under tests/bad/ must stop with exit status
# 2 (1 for a failed expect) and a "FILE:LINE: message" on stderr.  The first
# line of each script says what to expect:
#   # want: STATUS LINE TEXT
# where TEXT must appear in the message; "# want --check:" runs the script
# under --check (a reference disagreement it must report).  Output printed
# before the error must stay printed: where NAME.out exists, stdout must
# equal it.
: "${KVSIM:?}" "${top_srcdir:?}"
fail=0
n=0
out=${TMPDIR:-/tmp}/kvsim-bad-out.$$
err=${TMPDIR:-/tmp}/kvsim-bad-err.$$
trap 'rm -f "$out" "$err"' EXIT
for f in $(find "$top_srcdir/tests/bad" -name '*.kvr' | LC_ALL=C sort); do
	n=$((n + 1))
	rel=${f#"$top_srcdir"/}
	want=$(sed -n '1s/^# want: //p' "$f")
	check=
	if [ -z "$want" ]; then
		want=$(sed -n '1s/^# want --check: //p' "$f")
		check=--check
	fi
	status=${want%% *}
	rest=${want#* }
	line=${rest%% *}
	text=${rest#* }
	"$KVSIM" replay $check "$f" >"$out" 2>"$err"
	rc=$?
	if [ "$rc" != "$status" ]; then
		echo "FAIL: $rel: exit $rc, want $status"; cat "$err"; fail=1; continue
	fi
	if ! grep -qF "$f:$line: " "$err"; then
		echo "FAIL: $rel: no '$rel:$line:' in the message"; cat "$err"; fail=1; continue
	fi
	if ! grep -qF -- "$text" "$err"; then
		echo "FAIL: $rel: message lacks '$text'"; cat "$err"; fail=1; continue
	fi
	if [ -f "${f%.kvr}.out" ] && ! cmp -s "$out" "${f%.kvr}.out"; then
		echo "FAIL: $rel: stdout differs from ${rel%.kvr}.out"; fail=1; continue
	fi
	echo "ok: $rel"
done
[ "$n" -gt 0 ] || { echo "no scripts in tests/bad"; exit 99; }
exit $fail
