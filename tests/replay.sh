#!/bin/sh
# Run every replay script under tests/replay/.  A script passes when kvsim
# exits 0 (its `expect` lines hold) and, where NAME.out exists beside it,
# its output equals that golden file byte for byte.  Every script also runs
# under --check (decision/action consistency on every query).
: "${KVSIM:?}" "${top_srcdir:?}"
fail=0
n=0
tmp=${TMPDIR:-/tmp}/kvsim-replay.$$
trap 'rm -f "$tmp"' EXIT
for f in $(find "$top_srcdir/tests/replay" -name '*.kvr' | LC_ALL=C sort); do
	n=$((n + 1))
	rel=${f#"$top_srcdir"/}
	if ! "$KVSIM" replay "$f" >"$tmp" 2>&1; then
		echo "FAIL: $rel"
		cat "$tmp"
		fail=1
		continue
	fi
	if [ -f "${f%.kvr}.out" ] && ! cmp -s "$tmp" "${f%.kvr}.out"; then
		echo "FAIL: $rel: output differs from ${rel%.kvr}.out"
		diff -u "${f%.kvr}.out" "$tmp" | head -40
		fail=1
		continue
	fi
	if ! "$KVSIM" replay --check "$f" >/dev/null 2>"$tmp"; then
		echo "FAIL: $rel under --check"
		cat "$tmp"
		fail=1
		continue
	fi
	echo "ok: $rel"
done
echo "$n scripts"
[ "$n" -gt 0 ] || { echo "no replay scripts found"; exit 99; }
exit $fail
