#!/bin/sh
# ff_random.sh -- the fast-forward against single steps on random traces
# (docs/fastforward.md): each case is a trace drawn from its seed -- bursts
# of requests at one instant, gaps of a nanosecond to 0.3 s,
# prompts of 1, 2, 16 to 18 tokens (block edges) and up to 3,900, outputs
# of 1, 2 or up to 600 tokens, priorities -- and an engine drawn with it
# (a KV cache small enough for preemptions, a small max_num_seqs, a token
# budget that chunks prompts, timeseries rows every few ms, a slow API
# server, priority scheduling), run with the fast-forward (its spans
# taking the arrivals in) and with single steps (KVSIM_NO_FAST_FORWARD=1),
# with KVSIM_CHECK=1; requests.csv, timeseries.csv and groups.csv must be
# byte-identical, and summary.csv but for sim_wall_s.  The spans must
# have taken arrivals in across the cases (KVSIM_FF_REPORT=1), or the
# comparison proves less than it says.
: "${KVSIM:?}" "${top_srcdir:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-ffr.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
fail=0
taken=0
. "$top_srcdir/tests/matrix_lib.sh"

# trace SEED FILE: the seed's requests in the kvsim CSV format (a MINSTD
# generator in awk's exact integer range, so every awk draws the same)
trace() {
	awk -v seed="$1" '
	function draw(n) { x = (x * 48271) % 2147483647; return x % n }
	BEGIN {
		x = seed * 7919 + 1
		n = 50 + draw(3) * 100
		print "arrival_ns,prompt_tokens,output_tokens,priority"
		t = 0
		for (i = 0; i < n; i++) {
			m = draw(10)
			if (m < 3) g = 0
			else if (m < 6) g = 1 + draw(3000000)
			else g = draw(300) * 1000000
			t += g
			k = draw(6)
			p = k == 0 ? 1 : k == 1 ? 2 : k < 5 ? 14 + k : \
			    1 + draw(3900)
			k = draw(3)
			o = k == 0 ? 1 : k == 1 ? 2 : 1 + draw(600)
			print t "," p "," o "," (seed % 3 == 0 ? draw(3) : 0)
		}
	}' >"$2"
}

for s in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24; do
	name=c$s
	trace "$s" "$T/$name.csv"
	set -- --set workload.trace="$T/$name.csv" --set workload.format=kvsim
	case $((s % 4)) in
	0) set -- "$@" --set engine.max_model_len=4096 \
	       --set engine.num_gpu_blocks_override=$((300 + s * 7)) ;;
	1) set -- "$@" --set engine.max_num_seqs=$((2 + s % 7)) ;;
	2) set -- "$@" --set engine.max_num_batched_tokens=$((256 + s * 37)) \
	       --set engine.max_num_seqs=$((4 + s)) ;;
	3) set -- "$@" --set output.timeseries_interval_s=0.00$((1 + s % 9)) ;;
	esac
	if [ $((s % 3)) -eq 0 ]; then
		printf 'frontend_tokenize_ns: %d\nfrontend_stream_ns: %d\n' \
		    $((s * 1500)) $((s % 7 * 300000)) >"$T/$name.cal.yaml"
		set -- "$@" --set cost.calibration="$T/$name.cal.yaml" \
		    --set engine.scheduling_policy=priority
	fi
	env KVSIM_CHECK=1 KVSIM_FF_REPORT=1 "$KVSIM" run -q --no-plot \
	    --out "$T/$name.f" "$@" >/dev/null 2>"$T/$name.f.err" ||
	    { echo "FAIL $name: fast-forward: $(cat "$T/$name.f.err")"
	      fail=1; continue; }
	env KVSIM_NO_FAST_FORWARD=1 "$KVSIM" run -q --no-plot \
	    --out "$T/$name.s" "$@" >/dev/null 2>"$T/$name.s.err" ||
	    { echo "FAIL $name: single steps: $(cat "$T/$name.s.err")"
	      fail=1; continue; }
	same "$name" f s || continue
	k=$(sed -n 's/^kvsim run: fast-forward arrivals taken in: \([0-9]*\) .*/\1/p' \
	    "$T/$name.f.err")
	taken=$((taken + ${k:-0}))
	echo "ok $name: ${k:-no} arrivals taken in"
done
if [ "$taken" -lt 500 ]; then
	echo "FAIL: the spans took in $taken arrivals in all, not 500"
	fail=1
fi
exit $fail
