#!/bin/sh
# Every test case of every Check binary (tests/check_*.c) sets its own
# timeout (tcase_set_timeout) before it is added to its suite: Check's
# default of 4 s fails tests that take 2 s on an idle machine once the
# machine is loaded.  Each value is at least ten times the case's longest
# test measured idle; tests/local.mk also sets CK_TIMEOUT_MULTIPLIER
# (docs/TESTING.md).
: "${top_srcdir:?}"

# missing FILE...: "FILE:LINE NAME" for each suite_add_tcase(S, NAME)
# with no tcase_set_timeout(NAME, ...) since NAME's tcase_create, then
# "cases N" (how many suite_add_tcase calls were read).
missing() {
	awk '
		FNR == 1 { delete set }
		{
			line = $0
			while (match(line, \
			    /[A-Za-z_][A-Za-z0-9_]*[ \t]*=[ \t]*tcase_create\(/)) {
				v = substr(line, RSTART, RLENGTH)
				sub(/[ \t]*=.*/, "", v)
				set[v] = 0
				line = substr(line, RSTART + RLENGTH)
			}
		}
		match($0, /tcase_set_timeout\([A-Za-z_][A-Za-z0-9_]*,/) {
			v = substr($0, RSTART + 18, RLENGTH - 19)
			set[v] = 1
		}
		match($0, /suite_add_tcase\([^,]*, *[A-Za-z_][A-Za-z0-9_]*\)/) {
			v = substr($0, RSTART, RLENGTH - 1)
			sub(/.*, */, "", v)
			n++
			if (!set[v])
				printf "%s:%d %s\n", FILENAME, FNR, v
		}
		END { print "cases", n + 0 }' "$@"
}

cd "$top_srcdir" || exit 1
out=$(missing tests/check_*.c)
cases=$(printf '%s\n' "$out" | sed -n 's/^cases //p')
bad=$(printf '%s\n' "$out" | grep -v '^cases ')
# The scan must have read the suites, and must see a case without one.
[ "${cases:-0}" -gt 30 ] || {
	echo "read only ${cases:-0} test cases: the scan is broken"
	exit 1
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-timeouts.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
{
	printf '\tTCase *a = tcase_create("a"), *b = tcase_create("b");\n'
	printf '\ttcase_set_timeout(a, 60);\n'
	printf '\tsuite_add_tcase(s, a);\n\tsuite_add_tcase(s, b);\n'
} >"$tmp/check_x.c"
[ "$(missing "$tmp/check_x.c" | grep -c ' b$')" = 1 ] &&
    [ "$(missing "$tmp/check_x.c" | grep -c ' a$')" = 0 ] || {
	echo "the scan misses a test case without a timeout"
	exit 1
}
if [ -n "$bad" ]; then
	echo "test cases without tcase_set_timeout (docs/TESTING.md):"
	printf '%s\n' "$bad"
	exit 1
fi
echo "$cases test cases, each with its own timeout"
