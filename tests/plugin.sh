#!/bin/sh
# plugin.sh -- user policies loaded by `kvsim replay` (sim/plugin.c).
#
# examples/plugin/spf.c (shortest prompt first) is built by `make check` as
# a libtool module; a run with it must print the steps its rules give.
# The same source built without its entry symbol, and built for another
# policy ABI, must be refused with exit 2 and a message that says why, and
# so must a path that does not exist.  Skips (77) when the build made no
# shared objects (./configure --disable-shared).
: "${KVSIM:?}"
builddir=$(cd "$(dirname "$KVSIM")/.." && pwd)
so=$builddir/examples/plugin/.libs/libspf.so
noentry=$builddir/tests/.libs/libplugin_noentry.so
badabi=$builddir/tests/.libs/libplugin_badabi.so
for f in "$so" "$noentry" "$badabi"; do
	if [ ! -f "$f" ]; then
		echo "SKIP: $f not built (shared libraries disabled?)"
		exit 77
	fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-plugin.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

script() {	# script FILE POLICY: a small run, shortest prompt first
	cat >"$1" <<EOS
policy $2
block_size 4
gpu_blocks 64
max_model_len 64
max_num_seqs 4
request A tokens=0..19 output=2
request B tokens=100..103 output=2
request C tokens=200..209 output=1
step
expect step 1 sched=B:4,C:10,A:20 finish=C
run
expect step 2 sched=B:1,A:1 finish=B,A
audit
expect audit ok
EOS
}

script "$tmp/spf.kvr" "$so"
if ! "$KVSIM" replay --check "$tmp/spf.kvr" >"$tmp/out" 2>"$tmp/err"; then
	echo "FAIL: spf plugin run"; cat "$tmp/out" "$tmp/err"; fail=1
fi

refused() {	# refused PATH WORDS: exit 2 and WORDS in the message
	script "$tmp/bad.kvr" "$1"
	"$KVSIM" replay "$tmp/bad.kvr" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -ne 2 ] || ! grep -q "$2" "$tmp/err"; then
		echo "FAIL: $1: exit $rc, wanted 2 and '$2':"
		cat "$tmp/err"
		fail=1
	fi
}

refused "$noentry" "kvs_policy_entry"
refused "$badabi" "ABI"
refused "$tmp/no/such/libpolicy.so" "cannot load"
exit $fail
