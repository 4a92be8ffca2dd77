#!/bin/sh
# plugin.sh -- user policies loaded by `kvsim replay` and `kvsim run`
# (sim/plugin.c).
#
# examples/plugin/spf.c (shortest prompt first) is built by `make check` as
# a libtool module; a replay with it must print the steps its rules give.
# The same source built without its entry symbol, and built for another
# policy ABI, must be refused with exit 2 and a message that says why, and
# so must a path that does not exist.  `kvsim run` with `policy:
# ./libspf.so` (a path: it has a '/') on a tiny generated workload must
# finish under --check, write summary.csv naming the plugin, and finish
# the requests that queued behind the first one shortest prompt first (one
# sequence at a time); a plugin it cannot load is exit 2.  Skips (77) when
# the build made no shared objects (./configure --disable-shared).
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

# kvsim run: eight requests 1 us apart, one sequence a step.  The first
# runs alone; the other seven are all waiting when it finishes.
cat >"$tmp/run.yaml" <<EOS
policy: ./libspf.so
engine:
  max_model_len: 2048
  max_num_seqs: 1
workload:
  generator:
    requests: 8
    arrival: {process: constant, rate: 1000000}
    prompt: {dist: uniform, min: 16, max: 1024}
    output: {dist: fixed, value: 2}
EOS
if ! (cd "$(dirname "$so")" &&
      "$KVSIM" run -q --check --out "$tmp/run" "$tmp/run.yaml") \
      >"$tmp/out" 2>"$tmp/err"; then
	echo "FAIL: kvsim run with the spf plugin"; cat "$tmp/out" "$tmp/err"
	fail=1
elif [ ! -s "$tmp/run/summary.csv" ]; then
	echo "FAIL: kvsim run with the spf plugin wrote no summary.csv"; fail=1
else
	# summary.csv: policy ./libspf.so, 8 requests, 8 completed
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$c["policy"] != "./libspf.so" || $c["requests"] != 8 ||
		$c["completed"] != 8 { print "FAIL: kvsim run spf summary:";
			print; bad = 1 }
		END { exit bad }' "$tmp/run/summary.csv" || fail=1
	# requests.csv (finish order), input_tokens is column 8
	tail -n +3 "$tmp/run/requests.csv" | cut -d, -f8 >"$tmp/order"
	sort -n "$tmp/order" | cmp -s - "$tmp/order" || {
		echo "FAIL: kvsim run spf: not shortest prompt first:"
		cat "$tmp/run/requests.csv"; fail=1; }
	[ "$(wc -l <"$tmp/order")" -eq 7 ] || {
		echo "FAIL: kvsim run spf: wanted 8 rows"; fail=1; }
fi
"$KVSIM" run -q --out "$tmp/run2" --set policy="$badabi" \
	"$tmp/run.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "policy: cannot load .*ABI" "$tmp/err" ||
   [ -e "$tmp/run2" ]; then
	echo "FAIL: kvsim run --set policy=$badabi: exit $rc, wanted 2:"
	cat "$tmp/err"; fail=1
fi
exit $fail
