#!/bin/sh
# mpi.sh -- `kvsim sweep` and `kvsim capacity` on the ranks of an MPI job
# (configure --with-mpi; docs/sweep.md "MPI").  Skipped (77) in a build
# without MPI.
#  1. a sweep of 48 points on 3 ranks (rank 0 hands them out, ranks 1 and
#     2 run them): sweep.csv is the serial one byte for byte, but for the
#     sim_wall_s values (each run's own wall time, which differs between
#     two serial runs too); the same files in the same places, each
#     point's summary.csv its serial one likewise; every point's progress
#     line on rank 0, both workers used, no stderr.txt or temporaries;
#  2. --resume on 3 ranks after deleting one point reruns only that one,
#     and sweep.csv comes back the same;
#  3. a point that fails on a worker: exit 1, its id and stderr.txt
#     reported and kept, the other point complete, no sweep.csv;
#  4. capacity over two configurations and three seeds (a search per job)
#     on 3 ranks: capacity.csv, capacity_points.csv and
#     capacity_groups.csv are the serial ones byte for byte, and so is
#     the table on standard output (but the line with the wall time);
#  5. one rank (mpirun -np 1) runs the sweep itself, the serial result;
#  6. bad usage under MPI: rank 0's message and exit status 2, no rank
#     left waiting.
set -u
: "${KVSIM:=../sim/kvsim}"
: "${top_srcdir:=..}"
if [ -z "${KVSIM_MPIRUN:-}" ]; then
	echo "SKIP: kvsim was configured without --with-mpi"
	exit 77
fi
# Open MPI refuses to start as root without these (containers, CI).
OMPI_ALLOW_RUN_AS_ROOT=1; export OMPI_ALLOW_RUN_AS_ROOT
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-mpi.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
mpi() { np=$1; shift; "$KVSIM_MPIRUN" -np "$np" --oversubscribe "$@"; }

col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
# a CSV with its sim_wall_s values replaced by W
wall() {
	c=$(col "$1" sim_wall_s)
	awk -F, -v OFS=, -v c="$c" 'NR > 1 { $c = "W" } { print }' "$1"
}
same_csv() {	# same_csv A B WHAT
	wall "$1" >"$T/x.a"; wall "$2" >"$T/x.b"
	cmp -s "$T/x.a" "$T/x.b" || { bad "$3: differs"; diff "$T/x.a" "$T/x.b" | head -5; }
}

# 1. 48 points (2 x 3 x 8), each a run of 40 generated requests.
sed '/^sweep:/,$d' "$top_srcdir/tests/sweep/grid.yaml" >"$T/g.yaml"
cat >>"$T/g.yaml" <<'EOF'
sweep:
  engine.block_size: [16, 32]
  engine.num_gpu_blocks_override: [auto, 100, 200]
  seed: [0, 1, 2, 3, 4, 5, 6, 7]
EOF
"$KVSIM" sweep -q --no-plot "$T/g.yaml" --out "$T/ser" --jobs 2 ||
	bad "serial sweep failed"
mpi 3 "$KVSIM" sweep --no-plot "$T/g.yaml" --out "$T/par" 2>"$T/par.err" ||
	{ bad "MPI sweep failed"; cat "$T/par.err"; }
[ "$(wc -l <"$T/ser/sweep.csv")" -eq 49 ] || bad "serial sweep.csv: not 49 lines"
cmp -s "$T/ser/sweep.csv" "$T/par/sweep.csv" && bad "sweep.csv: even sim_wall_s the same (a test that cannot fail?)"
same_csv "$T/ser/sweep.csv" "$T/par/sweep.csv" "MPI sweep.csv"
(cd "$T/ser" && find . | sort) >"$T/ser.ls"
(cd "$T/par" && find . | sort) >"$T/par.ls"
cmp -s "$T/ser.ls" "$T/par.ls" || bad "MPI sweep: other files than the serial one's"
for s in "$T"/ser/points/*/summary.csv; do
	id=$(basename "$(dirname "$s")")
	same_csv "$s" "$T/par/points/$id/summary.csv" "point $id summary.csv"
	cmp -s "$T/ser/points/$id/requests.csv" "$T/par/points/$id/requests.csv" ||
		bad "point $id requests.csv differs"
done
[ "$(grep -c '^kvsim sweep: \[[0-9]*/48\] [0-9a-f]* ok (.* s, rank [12])$' "$T/par.err")" -eq 48 ] ||
	bad "MPI sweep: not 48 progress lines: $(head -3 "$T/par.err")"
for r in 1 2; do
	grep -q "ok (.* s, rank $r)" "$T/par.err" || bad "rank $r ran no point"
done
find "$T/par" -name stderr.txt -o -name '.*.tmp.*' | grep -q . &&
	bad "MPI sweep: stderr.txt or temporaries left"

# 2. --resume reruns only the point deleted.
id=$(ls "$T/par/points" | sed -n 5p)
rm -rf "${T:?}/par/points/$id"
mpi 3 "$KVSIM" sweep --no-plot --resume "$T/g.yaml" --out "$T/par" 2>"$T/res.err" ||
	bad "MPI --resume failed"
grep -q "^kvsim sweep: \[1/1\] $id ok" "$T/res.err" ||
	bad "MPI --resume did not rerun just $id: $(grep '\[' "$T/res.err")"
same_csv "$T/ser/sweep.csv" "$T/par/sweep.csv" "MPI sweep.csv after --resume"

# 3. A point that fails on a worker.
mpi 3 "$KVSIM" sweep -q --no-plot "$top_srcdir/tests/sweep/fail.yaml" \
	--out "$T/f" >"$T/f.out" 2>&1
rc=$?
[ $rc -eq 1 ] || bad "failing point: exit $rc, not 1"
n=$(ls "$T"/f/points/*/stderr.txt 2>/dev/null | wc -l)
[ "$n" -eq 1 ] || bad "failing point: $n stderr.txt kept, not 1"
grep -q 'point.* failed (their stderr.txt is kept); no sweep.csv' "$T/f.out" ||
	bad "failing point: no report: $(head -3 "$T/f.out")"
[ -f "$T/f/sweep.csv" ] && bad "failing point: a sweep.csv"
[ "$(ls "$T"/f/points/*/summary.csv | wc -l)" -eq 1 ] ||
	bad "failing point: the other point is not complete"

# 4. Capacity: a search per job, the serial answer.
C="$top_srcdir/tests/capacity/fixed.yaml --slo ttft_s:p99<=0.05 --seeds 3
 --across engine.max_num_seqs=1,2 --no-plot"
# shellcheck disable=SC2086
"$KVSIM" capacity $C --jobs 1 --out "$T/cs" >"$T/cs.out" ||
	bad "serial capacity failed"
# shellcheck disable=SC2086
mpi 3 "$KVSIM" capacity $C --out "$T/cp" >"$T/cp.out" 2>"$T/cp.err" ||
	{ bad "MPI capacity failed"; cat "$T/cp.err"; }
for f in capacity.csv capacity_points.csv capacity_groups.csv; do
	cmp -s "$T/cs/$f" "$T/cp/$f" || bad "MPI capacity: $f differs"
done
[ "$(wc -l <"$T/cs/capacity_points.csv")" -gt 20 ] ||
	bad "capacity: too few points to compare"
grep -v '^reports: ' "$T/cs.out" >"$T/cs.tab"
grep -v '^reports: ' "$T/cp.out" >"$T/cp.tab"
cmp -s "$T/cs.tab" "$T/cp.tab" ||
	{ bad "MPI capacity: standard output differs"; diff "$T/cs.tab" "$T/cp.tab" | head; }

# 5. One rank: the sweep runs on it, as without MPI.
mpi 1 "$KVSIM" sweep -q --no-plot "$top_srcdir/tests/sweep/grid.yaml" \
	--out "$T/one" || bad "one-rank sweep failed"
"$KVSIM" sweep -q --no-plot "$top_srcdir/tests/sweep/grid.yaml" \
	--out "$T/one-ser" || bad "serial grid sweep failed"
same_csv "$T/one-ser/sweep.csv" "$T/one/sweep.csv" "one-rank sweep.csv"

# 6. Bad usage: rank 0 says why, the workers are let go.
mpi 3 "$KVSIM" capacity --slo nonsense >"$T/u.out" 2>&1
rc=$?
[ $rc -eq 2 ] || bad "bad --slo under MPI: exit $rc, not 2"
[ "$(grep -c 'kvsim capacity: ' "$T/u.out")" -eq 1 ] ||
	bad "bad --slo under MPI: not one message: $(cat "$T/u.out")"

exit $fail
