#!/bin/sh
# run.sh -- run each libFuzzer harness of tests/fuzz/ for a fixed time
# (`make fuzz`; docs/TESTING.md).
#
#   run.sh SRCDIR OUTDIR SECONDS TARGET...
#
# Each harness OUTDIR/fuzz_TARGET starts from its committed seeds
# (SRCDIR/tests/fuzz/corpus/TARGET, read only) and the inputs earlier runs
# kept (OUTDIR/corpus/TARGET, where new ones go), with its dictionary.
# Crash, leak, timeout and out-of-memory inputs are written under
# OUTDIR/crashes/TARGET/, the log to OUTDIR/log/TARGET.log, temporary
# files under OUTDIR/tmp.  Prints the executions each target did; exits
# 1 if any harness found something (naming the inputs), 0 otherwise.
# FUZZ_FLAGS adds libFuzzer flags to every run.
set -u
srcdir=$1 out=$2 secs=$3
shift 3

dict_of() {
	case $1 in
	replay) echo replay ;;
	trace) echo trace ;;
	catalog) echo catalog ;;
	calib) echo calib ;;
	csv | compare | calibrate) echo csv ;;
	*) echo config ;;
	esac
}

mkdir -p "$out/tmp" "$out/log" || exit 1
failed=
for t in "$@"; do
	bin=$out/fuzz_$t
	seeds=$srcdir/tests/fuzz/corpus/$t
	dict=$srcdir/tests/fuzz/$(dict_of "$t").dict
	log=$out/log/$t.log
	mkdir -p "$out/corpus/$t" "$out/crashes/$t" || exit 1
	if [ ! -x "$bin" ]; then
		echo "fuzz $t: $bin is not built (make fuzz-build)" >&2
		failed="$failed $t"
		continue
	fi
	# -close_fd_mask=3: the readers' own messages (stdout, stderr) are
	# not wanted; libFuzzer and the sanitizers report on a copy of stderr
	TMPDIR=$out/tmp "$bin" -max_total_time="$secs" -timeout=60 \
		-rss_limit_mb=6144 -close_fd_mask=3 -print_final_stats=1 \
		-dict="$dict" -artifact_prefix="$out/crashes/$t/" \
		${FUZZ_FLAGS:-} "$out/corpus/$t" "$seeds" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" |
	       tail -n 1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" |
	       tail -n 1)
	cov=$(grep -E '^#[0-9]+' "$log" | tail -n 1 |
	      sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	if [ $rc -eq 0 ]; then
		echo "fuzz $t: ${runs:-?} executions in ${secs} s" \
		     "(${rate:-?}/s), coverage ${cov:-?}, no finding"
	else
		echo "fuzz $t: FAILED (exit $rc) after ${runs:-?}" \
		     "executions; $log:" >&2
		grep -E '^(==[0-9]+==|SUMMARY|.*runtime error)' "$log" |
			head -n 16 >&2
		grep -E 'Test unit written' "$log" | head -n 4 >&2
		failed="$failed $t"
	fi
done
if [ -n "$failed" ]; then
	echo "fuzz: findings or failures in:$failed (inputs under" \
	     "$out/crashes/)" >&2
	exit 1
fi
exit 0
