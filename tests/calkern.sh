#!/bin/sh
# kvsim calibrate kernels end to end without a device: the committed
# shapes of the device script are what --emit-shapes writes today; the
# step bench's host dry run writes well-formed CSVs (measured=no) that the
# fit reads into a calibration file marked not measured; bad CSVs exit 2
# with FILE:LINE:COL and write nothing; kvsim run reads the file (the two
# terms of the split cost model are left out while this kvsim's loader
# does not know them).
: "${KVSIM:?}" "${top_srcdir:?}"
bench=$(dirname "$KVSIM")/../gpu/tools/kvsim-stepbench
tmp=${TMPDIR:-/tmp}/kvsim-calkern.$$
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

# shapes: the models of tests/gpu/stepbench.sh
models=$(sed -n 's/^models=//p' "$top_srcdir/tests/gpu/stepbench.sh" | tr -d "'")
[ -n "$models" ] || fail "no models= line in tests/gpu/stepbench.sh"
"$KVSIM" calibrate kernels --emit-shapes $models --out "$tmp/shapes.csv" ||
	fail "--emit-shapes"
cmp "$tmp/shapes.csv" "$top_srcdir/tests/gpu/stepbench-shapes.csv" ||
	fail "tests/gpu/stepbench-shapes.csv is stale: regenerate it"
rc=0
"$KVSIM" calibrate kernels --emit-shapes mistralai/Mistral-7B-v0.1 \
	--out "$tmp/no.csv" 2>"$tmp/err" || rc=$?
[ $rc -eq 2 ] && [ ! -e "$tmp/no.csv" ] && grep -q 'sliding window' "$tmp/err" ||
	fail "a sliding-window model: rc $rc"

# the host dry run
"$bench" --shapes "$top_srcdir/tests/gpu/stepbench-shapes.csv" --host \
	--quick --out "$tmp/sb" >"$tmp/sb.out" || fail "dry run rc $?"
for k in gemm kvread copy; do
	f=$tmp/sb/$k.csv
	[ -s "$f" ] && [ ! -e "$f.part" ] || fail "$k.csv missing"
	awk -F, -v k=$k 'NR == 1 {
		if ($0 != "kind,model,tp,name,m,n,k,bytes,flops,rep,time_ns,measured") bad = 1; next }
	    NF != 12 || $1 != k || $12 != "no" || !($11 > 0) ||
	    (k == "gemm" && $9 != 2 * $5 * $6 * $7) { bad = 1 }
	    END { exit bad || NR < 2 }' "$f" || fail "$k.csv malformed"
done
"$KVSIM" calibrate kernels "$tmp"/sb/*.csv --out "$tmp/c.yaml" \
	>"$tmp/fit.out" 2>&1 || { cat "$tmp/fit.out"; fail "fit of the dry run"; }
grep -q '^  measured: false$' "$tmp/c.yaml" || fail "not marked unmeasured"
grep -q '^eff_weights: {value: ' "$tmp/c.yaml" || fail "no eff_weights"

# bad input: exit 2, FILE:LINE:COL, nothing written
sed '3s/,no$/,perhaps/' "$tmp/sb/gemm.csv" >"$tmp/bad.csv"
rc=0
"$KVSIM" calibrate kernels "$tmp/bad.csv" --out "$tmp/bad.yaml" \
	2>"$tmp/err" >/dev/null || rc=$?
[ $rc -eq 2 ] && [ ! -e "$tmp/bad.yaml" ] && [ ! -e "$tmp/bad.yaml.tmp" ] &&
	grep -q "^$tmp/bad.csv:3:[0-9]*: measured" "$tmp/err" ||
	{ cat "$tmp/err"; fail "bad measured: rc $rc"; }
printf 'kind,model\n' >"$tmp/short.csv"
rc=0
"$KVSIM" calibrate kernels "$tmp/short.csv" --out "$tmp/bad.yaml" \
	2>"$tmp/err" >/dev/null || rc=$?
[ $rc -eq 2 ] && [ ! -e "$tmp/bad.yaml" ] && grep -q "no column 'tp'" "$tmp/err" ||
	fail "missing column: rc $rc"

# kvsim run reads the file
cp "$top_srcdir/tests/gpu/swap.yaml" "$tmp/run.yaml"
cal=$tmp/c.yaml
printf 'eff_weights: 0.5\n' >"$tmp/probe.yaml"
if ! "$KVSIM" run -q --no-plot "$tmp/run.yaml" --set cost.calibration="$tmp/probe.yaml" \
	--set workload.max_requests=5 --out "$tmp/probe" >/dev/null 2>&1; then
	echo "this kvsim does not load eff_weights/eff_kv_read yet: loading without them"
	grep -v '^eff_weights:\|^eff_kv_read:' "$tmp/c.yaml" >"$tmp/c2.yaml"
	cal=$tmp/c2.yaml
fi
"$KVSIM" run -q --no-plot "$tmp/run.yaml" --set cost.calibration="$cal" \
	--set workload.max_requests=20 --out "$tmp/run" >"$tmp/run.out" 2>&1 ||
	{ cat "$tmp/run.out"; fail "kvsim run with the calibration"; }
echo "calibrate kernels: shapes, dry run, fit, bad input and load ok"
