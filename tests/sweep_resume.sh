#!/bin/sh
# sweep_resume.sh -- a sweep point's id covers its whole configuration, and
# each point is checked with its own values (docs/sweep.md):
#  1. --resume after the base file changed (another model) reruns every
#     point and sweep.csv is the new base's; the point ids used to hash the
#     swept values alone, so --resume took the old model's points for the
#     new one's;
#  2. two sweeps with the same axes over different bases (an 8B and a 70B
#     model) have different ids; what does not change what a point runs
#     keeps them: comments, the order of the base's keys, the file's
#     directory (the bundled trace), --out, and a base value every point
#     overrides (a swept key);
#  3. the values of a point are checked together, against the point's own
#     policy: a knob the base's policy refuses but every swept policy takes
#     is accepted (it was refused), and a combination one swept policy
#     refuses is refused before anything runs, exit 2 at the value (it ran,
#     and that point failed).
set -u
: "${KVSIM:=../sim/kvsim}"
: "${top_srcdir:=..}"
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-swres.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
ids() { "$KVSIM" sweep --list "$@" 2>&1 | cut -d' ' -f1-2; }

# 1.
base() { # model
	printf '%s\n' "model: $1" 'workload: {max_requests: 20}' \
		'sweep:' '  seed: [0, 1]'
}
base meta-llama/Llama-3.1-8B >"$T/s.yaml"
"$KVSIM" sweep -q --no-plot "$T/s.yaml" --out "$T/o" || bad "first sweep"
base Qwen/Qwen2.5-7B-Instruct >"$T/s.yaml"
"$KVSIM" sweep --no-plot --resume "$T/s.yaml" --out "$T/o" 2>"$T/err" ||
	bad "resumed sweep"
grep -q '2 points, 2 to run, 0 complete already' "$T/err" ||
	{ bad "--resume after a new base did not rerun the points"; cat "$T/err"; }
m=$(col "$T/o/sweep.csv" model)
[ "$(cut -d, -f"$m" "$T/o/sweep.csv" | sed 1d | sort -u)" = \
  Qwen/Qwen2.5-7B-Instruct ] || bad "sweep.csv holds another model's points"
"$KVSIM" sweep --no-plot --resume "$T/s.yaml" --out "$T/o" 2>"$T/err" ||
	bad "second resume"
grep -q '2 points, 0 to run, 2 complete already' "$T/err" ||
	bad "--resume of an unchanged sweep reran points"

# 2.
printf '%s\n' 'model: meta-llama/Llama-3.1-8B' 'engine: {tensor_parallel_size: 4}' \
	'sweep:' '  seed: [0, 1]' >"$T/8b.yaml"
printf '%s\n' 'model: meta-llama/Llama-3.1-70B' 'engine: {tensor_parallel_size: 4}' \
	'sweep:' '  seed: [0, 1]' >"$T/70b.yaml"
ids "$T/8b.yaml" >"$T/i8"
ids "$T/70b.yaml" >"$T/i70"
[ -s "$T/i8" ] && [ -s "$T/i70" ] || bad "--list failed"
cut -d' ' -f2 "$T/i8" "$T/i70" | sort | uniq -d | grep -q . &&
	bad "an 8B and a 70B sweep share point ids"
# the same configuration written otherwise, elsewhere, or with a base
# seed the axis overrides
mkdir "$T/elsewhere"
printf '%s\n' '# the same sweep' 'engine:' '  tensor_parallel_size: 4  # four' \
	'seed: 5' 'model: "meta-llama/Llama-3.1-8B"' 'sweep:' '  seed: [0, 1]' \
	>"$T/elsewhere/8b.yaml"
ids "$T/elsewhere/8b.yaml" --out "$T/other" >"$T/i8b"
cmp -s "$T/i8" "$T/i8b" || bad "ids changed with comments, key order, directory, --out or an overridden seed"
# a base value that reaches the points changes them
printf '%s\n' 'model: meta-llama/Llama-3.1-8B' 'engine: {tensor_parallel_size: 4}' \
	'workload: {max_requests: 7}' 'sweep:' '  seed: [0, 1]' >"$T/8c.yaml"
ids "$T/8c.yaml" >"$T/i8c"
cut -d' ' -f2 "$T/i8" "$T/i8c" | sort | uniq -d | grep -q . &&
	bad "workload.max_requests in the base did not change the ids"

# 3.
printf '%s\n' 'policy: sarathi' 'workload: {max_requests: 20}' 'sweep:' \
	'  policy: [vllm-v1, kvsim]' \
	'  engine.scheduling_policy: [fcfs, priority]' >"$T/ok.yaml"
"$KVSIM" sweep -q --no-plot "$T/ok.yaml" --out "$T/ok" 2>"$T/err" ||
	{ bad "priority under vllm-v1 and kvsim refused for the base's sarathi"; cat "$T/err"; }
[ "$(sed 1d "$T/ok/sweep.csv" | wc -l)" = 4 ] || bad "ok.yaml: not 4 points"
printf '%s\n' 'policy: vllm-v1' 'workload: {max_requests: 20}' 'sweep:' \
	'  policy: [vllm-v1, sarathi]' \
	'  engine.scheduling_policy: [priority]' >"$T/no.yaml"
"$KVSIM" sweep -q --no-plot "$T/no.yaml" --out "$T/no" 2>"$T/err"
[ $? -eq 2 ] || bad "sarathi with priority: not exit 2"
grep -q 'no.yaml:5:30: policy=sarathi engine.scheduling_policy=priority: .*sarathi schedules fcfs only' \
	"$T/err" || { bad "sarathi with priority: message"; cat "$T/err"; }
[ -e "$T/no" ] && bad "a refused sweep left its directory"
exit $fail
