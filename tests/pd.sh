#!/bin/sh
# pd.sh -- prefill/decode disaggregation in `kvsim run` and `kvsim
# capacity` (docs/pd.md):
#  1. every request of a P/D run has a prefill replica in the prefill
#     pool and a decode replica in the decode pool; its transfer takes
#     the link's latency + bytes / bandwidth (rule P9), its bytes are the
#     blocks past the decode side's hit times the block's bytes (P8: for
#     Llama-3.1-8B at TP 1, 2 MiB a 16-token block), and summary.csv's
#     kv_transfer_bytes is their sum; TTFT covers prefill, queue and
#     transfer (P2); the pools' columns are there and sane;
#  2. a decode pool too small for the load makes requests wait for it
#     (decode_queue_s > 0) while the prefill side holds its blocks (P13);
#     with a short kv_transfer_timeout_s the late ones lose their blocks
#     and are computed on the decode side (P6);
#  3. --set disaggregation.* reaches the run, its config.yaml runs the
#     same run again, a colocated run keeps its
#     columns, and a capacity --across over two P:D points writes a row
#     each, with both pools' GPUs counted;
#  4. bad pool keys, links and catalogs exit 2 with FILE:LINE:COL;
#  5. examples/pd-azure.yaml runs.
: "${KVSIM:?}" "${top_srcdir:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-pd.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
sval() { c=$(col "$1" "$2"); sed -n 2p "$1" | cut -d, -f"$c"; }

# 40 requests of 1000 distinct prompt tokens, 20 output tokens, 10 a
# second: light load on 1 prefill + 2 decode replicas.
printf '%s\n' 'model: meta-llama/Llama-3.1-8B' 'policy: vllm-v1' \
	'disaggregation:' '  link: ib-ndr-400' '  prefill: {replicas: 1}' \
	'  decode: {replicas: 2}' 'workload:' \
	'  generator: {requests: 40, arrival: {process: constant,' \
	'    rate: 10}, prompt: {dist: fixed, value: 1000},' \
	'    output: {dist: fixed, value: 20}}' >"$T/pd.yaml"

"$KVSIM" run "$T/pd.yaml" -o "$T/a" --quiet --no-plot >"$T/a.log" 2>&1 ||
	{ bad "the P/D run failed"; cat "$T/a.log"; }
R=$T/a/requests.csv S=$T/a/summary.csv
if [ -f "$R" ]; then
	awk -F, -v pr="$(col "$R" prefill_replica)" \
	    -v dr="$(col "$R" decode_replica)" \
	    -v kt="$(col "$R" kv_transfer_s)" \
	    -v dq="$(col "$R" decode_queue_s)" \
	    -v pt="$(col "$R" input_tokens)" \
	    -v tt="$(col "$R" ttft_s)" '
	NR == 1 { next }
	{
		n++
		if ($pr != 0) { print "row " NR ": prefill replica " $pr; bad = 1 }
		if ($dr < 1 || $dr > 2) { print "row " NR ": decode replica " $dr; bad = 1 }
		# the decode side computes the last prompt token (P4)
		nb = int(($pt - 1 + 15) / 16)
		bytes = nb * 2097152
		want = 10e-6 + bytes / 50e9
		if ($kt - want > 1e-6 || want - $kt > 1e-6) {
			print "row " NR ": kv_transfer_s " $kt ", want " want; bad = 1
		}
		if ($tt < $kt + $dq) { print "row " NR ": ttft " $tt " < transfer + queue"; bad = 1 }
		sum += bytes
	}
	END {
		if (n != 40) { print n " rows, want 40"; bad = 1 }
		printf "%.0f\n", sum > "'"$T"'/bytes"
		exit bad
	}' "$R" || bad "requests.csv of the P/D run"
	[ "$(sval "$S" kv_transfer_bytes)" = "$(cat "$T/bytes")" ] ||
		bad "kv_transfer_bytes $(sval "$S" kv_transfer_bytes), want $(cat "$T/bytes")"
	[ "$(sval "$S" prefill_replicas)" = 1 ] && [ "$(sval "$S" decode_replicas)" = 2 ] &&
	[ "$(sval "$S" replicas)" = 3 ] || bad "pool sizes in summary.csv"
	for p in prefill decode; do
		u=$(sval "$S" ${p}_utilization)
		awk -v u="$u" 'BEGIN { exit !(u > 0 && u <= 1) }' ||
			bad "${p}_utilization $u not in (0, 1]"
	done
	# the prompts share nothing: no prefix hit, though the decode side
	# takes each prompt but its last token from the transfer
	[ "$(sval "$S" prefix_hit_rate)" = 0.000000 ] ||
		bad "prefix_hit_rate $(sval "$S" prefix_hit_rate) counts the loads"
	awk -v m="$(sval "$S" kv_transfer_mean_s)" \
	    -v p="$(sval "$S" kv_transfer_p99_s)" \
	    'BEGIN { exit !(m > 0 && p >= m) }' || bad "transfer mean/p99"
fi

# 2. one decode replica of 100 blocks: requests of 64 blocks wait for it
"$KVSIM" run "$T/pd.yaml" -o "$T/b" --quiet --no-plot \
	--set disaggregation.decode.engine.num_gpu_blocks_override=100 \
	--set disaggregation.decode.engine.max_model_len=1500 \
	--set disaggregation.decode.replicas=1 \
	>"$T/b.log" 2>&1 || { bad "the tiny decode run failed"; cat "$T/b.log"; }
if [ -f "$T/b/requests.csv" ]; then
	waited=$(awk -F, -v dq="$(col "$T/b/requests.csv" decode_queue_s)" \
		'NR > 1 && $dq > 0.01 { n++ } END { print n + 0 }' "$T/b/requests.csv")
	[ "$waited" -gt 10 ] || bad "$waited requests waited for the tiny decode pool"
	awk -v a="$(sval "$T/b/summary.csv" decode_queue_mean_s)" \
	    -v b="$(sval "$S" decode_queue_mean_s)" 'BEGIN { exit !(a > b) }' ||
		bad "decode_queue_mean_s did not grow with a tiny decode pool"
fi

# 2b. the same with a 50 ms hold (rule P6): the prefill side frees the
# blocks of the requests still waiting then; their loads fail, the decode
# side computes their prompts, and they still finish
"$KVSIM" run "$T/pd.yaml" -o "$T/b2" --quiet --no-plot \
	--set disaggregation.decode.engine.num_gpu_blocks_override=100 \
	--set disaggregation.decode.engine.max_model_len=1500 \
	--set disaggregation.decode.replicas=1 \
	--set disaggregation.kv_transfer_timeout_s=0.05 \
	>"$T/b2.log" 2>&1 || { bad "the timeout run failed"; cat "$T/b2.log"; }
if [ -f "$T/b2/requests.csv" ]; then
	R2=$T/b2/requests.csv
	lost=$(awk -F, -v kt="$(col "$R2" kv_transfer_s)" \
		'NR > 1 && $kt == 0 { n++ } END { print n + 0 }' "$R2")
	[ "$lost" -gt 10 ] && [ "$(tail -n +2 "$R2" | wc -l)" = 40 ] ||
		bad "timeout: $lost loads failed of $(tail -n +2 "$R2" | wc -l) rows"
	awk -v a="$(sval "$T/b2/summary.csv" kv_transfer_bytes)" \
	    -v b="$(sval "$T/b/summary.csv" kv_transfer_bytes)" \
	    'BEGIN { exit !(a < b) }' || bad "timeout: bytes did not drop"
fi

# 3. --set, colocated columns, capacity over P:D points
"$KVSIM" run "$T/pd.yaml" -o "$T/c" --quiet --no-plot \
	--set disaggregation.prefill.replicas=2 >"$T/c.log" 2>&1 ||
	{ bad "--set disaggregation.prefill.replicas=2 failed"; cat "$T/c.log"; }
[ -f "$T/c/summary.csv" ] && [ "$(sval "$T/c/summary.csv" prefill_replicas)" = 2 ] ||
	bad "--set disaggregation.prefill.replicas=2 not in summary.csv"
grep -q 'disaggregation:' "$T/c/config.yaml" 2>/dev/null ||
	bad "config.yaml lacks the disaggregation section"
# the resolved config.yaml runs the same run again, run id included
"$KVSIM" run "$T/c/config.yaml" -o "$T/c2" --quiet --no-plot >"$T/c2.log" 2>&1 &&
	cmp -s "$T/c/requests.csv" "$T/c2/requests.csv" ||
	bad "config.yaml of a P/D run does not run the same"
"$KVSIM" run -o "$T/d" --quiet --no-plot --set workload.max_requests=5 \
	>"$T/d.log" 2>&1 || bad "a colocated run failed"
if grep -q 'prefill_replica\|kv_transfer' "$T/d/requests.csv" "$T/d/summary.csv"; then
	bad "a colocated run has P/D columns"
fi
"$KVSIM" capacity "$T/pd.yaml" --slo ttft_s:p99\<=5 --seeds 1 --max-sims 4 \
	--across disaggregation.prefill.replicas=1,2 \
	--across disaggregation.decode.replicas=2,1 \
	-o "$T/cap" --quiet --no-plot >"$T/cap.log" 2>&1 ||
	{ bad "capacity --across P:D failed"; cat "$T/cap.log"; }
if [ -f "$T/cap/capacity.csv" ]; then
	[ "$(tail -n +2 "$T/cap/capacity.csv" | wc -l)" = 2 ] ||
		bad "capacity.csv: not two rows"
	[ "$(sval "$T/cap/capacity.csv" gpus)" = 3 ] ||
		bad "capacity.csv gpus $(sval "$T/cap/capacity.csv" gpus), want 3"
fi

# 4. bad input: tests/bad/pd-*.yaml say where they fail ("# want: 2 L:C TEXT")
for f in "$top_srcdir"/tests/bad/pd-*.yaml; do
	want=$(sed -n '1s/^# want: //p' "$f")
	lc=$(echo "$want" | cut -d' ' -f2) text=$(echo "$want" | cut -d' ' -f3-)
	"$KVSIM" run "$f" -o "$T/bad" --quiet >"$T/bad.out" 2>"$T/bad.err"
	rc=$?
	[ "$rc" = 2 ] || bad "$f: exit $rc, want 2"
	grep -qF "$f:$lc: " "$T/bad.err" || { bad "$f: no $lc"; cat "$T/bad.err"; }
	grep -qF -- "$text" "$T/bad.err" || { bad "$f: lacks '$text'"; cat "$T/bad.err"; }
	[ ! -e "$T/bad/summary.csv" ] || bad "$f: wrote a summary"
	rm -rf "$T/bad"
done
"$KVSIM" run --set policy=sarathi --set disaggregation.prefill.replicas=1 \
	-o "$T/bad" --quiet >/dev/null 2>"$T/bad.err"
[ $? = 2 ] && grep -q 'needs policy vllm-v1' "$T/bad.err" ||
	bad "disaggregation with policy sarathi: not refused"
"$KVSIM" run "$T/pd.yaml" --set workload.max_concurrency=4 \
	-o "$T/bad" --quiet >/dev/null 2>"$T/bad.err"
[ $? = 2 ] && grep -q 'benchmark clients' "$T/bad.err" ||
	bad "disaggregation with a benchmark client: not refused"
mkdir -p "$T/data"
cp "$top_srcdir"/data/*.yaml "$T/data/"
sed 's/bandwidth_gbps: 50$/bandwidth_gbps: fast/' "$top_srcdir/data/links.yaml" \
	>"$T/data/links.yaml"
KVSIM_DATADIR=$T/data "$KVSIM" catalog list links >/dev/null 2>"$T/cat.err"
[ $? = 2 ] && grep -q 'links.yaml:[0-9]*:[0-9]*: bandwidth_gbps' "$T/cat.err" ||
	{ bad "a bad links.yaml: not refused with FILE:LINE:COL"; cat "$T/cat.err"; }
[ "$("$KVSIM" catalog list links | tail -n +2 | wc -l)" = 8 ] ||
	bad "kvsim catalog list links: not 8 links"

# 5. examples/pd-azure.yaml runs on the bundled excerpt: every request
# completes through both pools
"$KVSIM" run "$top_srcdir/examples/pd-azure.yaml" -o "$T/ex" --quiet \
	--no-plot >"$T/ex.log" 2>&1 || { bad "examples/pd-azure.yaml failed"; cat "$T/ex.log"; }
if [ -f "$T/ex/summary.csv" ]; then
	[ "$(sval "$T/ex/summary.csv" completed)" -gt 0 ] &&
	[ "$(sval "$T/ex/summary.csv" completed)" = \
	  "$(sval "$T/ex/summary.csv" requests)" ] ||
		bad "pd-azure: not every request completed"
	[ "$(sval "$T/ex/summary.csv" decode_replicas)" = 3 ] ||
		bad "pd-azure: decode_replicas $(sval "$T/ex/summary.csv" decode_replicas)"
fi
exit $fail
