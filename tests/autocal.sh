#!/bin/sh
# autocal.sh -- the calibration kvsim ships for a GPU and a vLLM series
# (docs/cost-model.md §5.6): a vllm-v1 run on that GPU whose
# cost.calibration is unset uses DATADIR/calib-GPU-vllm-MAJOR.MINOR.yaml,
# says so in a startup line and in summary.csv's calibration column, and
# its step times follow the file; another vLLM series, another GPU, another
# policy, cost.calibration: none, a file named by the configuration and a
# constant step time do not take it.  The shipped H100 file loads.
: "${KVSIM:?}" "${top_srcdir:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-autocal.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
sval() { c=$(col "$1" "$2"); sed -n 2p "$1" | cut -d, -f"$c"; }

# a data directory: the catalogs and a calibration for h100-sxm, vLLM 0.15
# whose memory efficiency is a tenth of the default's (slow decode)
mkdir "$T/data"
cp "$top_srcdir/data/models.yaml" "$top_srcdir/data/gpus.yaml" "$T/data/"
printf 'eff_memory: {value: 0.072, source: "autocal test"}\n' \
	>"$T/data/calib-h100-sxm-vllm-0.15.yaml"
printf 'cpu_step_ns: 0\n' >"$T/mine.yaml"
cat >"$T/run.yaml" <<'Y'
model: meta-llama/Llama-3.1-8B
gpu: h100-sxm
policy: vllm-v1
workload:
  generator: {requests: 4, arrival: {process: constant, rate: 1}}
  dataset: {name: random, input_len: 64, output_len: 16}
Y
run() {	# NAME [ARGS...]
	n=$1
	shift
	KVSIM_DATADIR=$T/data "$KVSIM" run "$T/run.yaml" --no-plot \
	    --out "$T/$n" "$@" >"$T/$n.out" 2>&1 ||
		{ cat "$T/$n.out"; bad "$n: run failed"; }
}

run auto
grep -q "^kvsim run: cost calibration .*/calib-h100-sxm-vllm-0.15.yaml (kvsim's for this GPU and vLLM version)$" \
	"$T/auto.out" || bad "auto: no startup line naming the file"
[ "$(sval "$T/auto/summary.csv" calibration)" = calib-h100-sxm-vllm-0.15.yaml ] ||
	bad "auto: summary.csv calibration column"
run none --set cost.calibration=none
[ -z "$(sval "$T/none/summary.csv" calibration)" ] ||
	bad "cost.calibration=none: a calibration was used"
grep -q "^kvsim run: cost model defaults, no calibration$" "$T/none.out" ||
	bad "none: no startup line for the defaults"
grep -q "^  calibration: none$" "$T/none/config.yaml" ||
	bad "none: config.yaml does not keep calibration: none"
# the file's terms ran: the slow memory makes every decode slower
a=$(sval "$T/auto/summary.csv" tpot_mean_s)
b=$(sval "$T/none/summary.csv" tpot_mean_s)
awk -v a="$a" -v b="$b" 'BEGIN { exit !(a > 5 * b) }' ||
	bad "auto: TPOT $a is not the slow file's (defaults $b)"
run v14 --set engine.vllm_version=0.14.0
[ -z "$(sval "$T/v14/summary.csv" calibration)" ] ||
	bad "vLLM 0.14: took the 0.15 file"
run h200 --set gpu=h200
[ -z "$(sval "$T/h200/summary.csv" calibration)" ] ||
	bad "h200: took the H100 file"
run sarathi --set policy=sarathi
[ -z "$(sval "$T/sarathi/summary.csv" calibration)" ] ||
	bad "sarathi: took vLLM's file"
run step --set cost.step_ns=1000000
[ -z "$(sval "$T/step/summary.csv" calibration)" ] ||
	bad "cost.step_ns: took a calibration"
run mine --set cost.calibration="$T/mine.yaml"
[ "$(sval "$T/mine/summary.csv" calibration)" = mine.yaml ] ||
	bad "a named file: not the one used"
# the configuration written runs again to the same choice
KVSIM_DATADIR=$T/data "$KVSIM" run "$T/auto/config.yaml" --no-plot \
    --out "$T/again" >"$T/again.out" 2>&1 || bad "config.yaml of auto"
[ "$(sval "$T/again/summary.csv" calibration)" = calib-h100-sxm-vllm-0.15.yaml ] ||
	bad "config.yaml of auto: another calibration"

# the shipped file loads and is the one a plain H100 run takes
shipped=$top_srcdir/data/calib-h100-sxm-vllm-0.15.yaml
[ -f "$shipped" ] || bad "no shipped H100 calibration"
"$KVSIM" run "$T/run.yaml" --no-plot --out "$T/shipped" \
    --set cost.calibration="$shipped" >"$T/shipped.out" 2>&1 ||
	{ cat "$T/shipped.out"; bad "the shipped calibration does not load"; }
exit $fail
