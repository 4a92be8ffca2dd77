#!/bin/sh
# sweep.sh -- `kvsim sweep` end to end (docs/sweep.md):
#  1. tests/sweep/grid.yaml, a 2 x 2 grid with two seeds: sweep.csv has a
#     header of point_id, point_index, the three swept keys, then the
#     summary columns (its `seed` column left out: swept), and eight rows in
#     index order with the values of the odometer (first key slowest); each
#     row is its point's summary.csv row; points ran with their values
#     (config.yaml); no stderr.txt, no temporaries; plots of sweep.csv when
#     gnuplot is installed (none with --no-plot, none in the points);
#  2. ids are stable: adding a value to an axis keeps the other points' ids;
#  3. the same sweep twice: the same sweep.csv except sim_wall_s;
#  4. --shard 0/2 then --shard 1/2 into one directory: no sweep.csv after
#     the first, the plain one after the second; --merge, or an unsharded
#     --resume that runs nothing, rewrites it the same; --merge with a
#     point missing exits 1 and writes none;
#  5. --resume after deleting one point reruns only that one (its progress
#     line; the others' summary.csv keep their mtime); without --resume or
#     --force an existing sweep is refused (exit 2) and left alone;
#  6. bad sweep files (tests/sweep/bad_*.yaml, the expected FILE:LINE:COL
#     on their first line): exit 2, the message, no directory;
#  7. a point that fails at run time: exit 1, its id reported, its
#     stderr.txt kept, the other point complete, no sweep.csv, no
#     temporaries; --resume reruns only the failed one;
#  8. interrupted (SIGTERM) midway: exit 1, no sweep.csv, no temporaries,
#     no point left half-written.
set -u
: "${KVSIM:=../sim/kvsim}"
: "${top_srcdir:=..}"
D=$top_srcdir/tests/sweep
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-sweep.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
# a CSV without its sim_wall_s column
nowall() { c=$(col "$1" sim_wall_s); cut -d, -f"$c" --complement "$1"; }
notmp() { find "$1" -name '.*.tmp.*' | grep -q . && bad "$2: temporary files left"; }

# 1. The grid.
"$KVSIM" sweep -q "$D/grid.yaml" --out "$T/a" --jobs 3 ||
	bad "grid sweep failed"
S=$T/a/sweep.csv
[ -f "$S" ] || bad "no sweep.csv"
[ "$(wc -l <"$S")" -eq 9 ] || bad "sweep.csv: $(wc -l <"$S") lines, not 9"
head -1 "$S" | grep -q '^point_id,point_index,engine.block_size,engine.num_gpu_blocks_override,seed,requests,completed,' ||
	bad "sweep.csv header: $(head -1 "$S" | cut -c1-100)"
[ "$(head -1 "$S" | tr ',' '\n' | grep -cx seed)" = 1 ] ||
	bad "sweep.csv: more than one seed column"
for c in sim_wall_s preemptions ttft_p99_s throughput_req_s; do
	[ -n "$(col "$S" $c)" ] || bad "sweep.csv lacks $c"
done
exp='0,16,auto,0
1,16,auto,1
2,16,100,0
3,16,100,1
4,32,auto,0
5,32,auto,1
6,32,100,0
7,32,100,1'
[ "$(sed 1d "$S" | cut -d, -f2-5)" = "$exp" ] ||
	bad "sweep.csv rows: $(sed 1d "$S" | cut -d, -f2-5 | tr '\n' ' ')"
[ "$(ls "$T/a/points" | wc -l)" -eq 8 ] || bad "not 8 point directories"
# each row is its point's summary row (less the seed column)
sc=$(col "$T/a/points/$(sed -n 2p "$S" | cut -d, -f1)/summary.csv" seed)
sed 1d "$S" | while IFS=, read -r id idx bs nb seed rest; do
	p=$T/a/points/$id
	want=$(sed -n 2p "$p/summary.csv" | cut -d, -f"$sc" --complement)
	[ "$rest" = "$want" ] || echo "FAIL: row $idx is not $id's summary"
	grep -q "^  block_size: $bs\$" "$p/config.yaml" ||
		echo "FAIL: point $idx did not run with block_size $bs"
	[ -e "$p/stderr.txt" ] && echo "FAIL: point $idx kept a stderr.txt"
done | grep FAIL && fail=1
p2=$(sed -n 4p "$S" | cut -d, -f1)	# (16, 100, seed 0)
c=$(col "$T/a/points/$p2/summary.csv" preemptions)
[ "$(sed -n 2p "$T/a/points/$p2/summary.csv" | cut -d, -f"$c")" != 0 ] ||
	bad "the 100-block point has no preemptions"
notmp "$T/a" "grid"
# plots of sweep.csv beside it when gnuplot is installed, none with --no-plot
if command -v gnuplot >/dev/null 2>&1; then
	[ -s "$T/a/index.html" ] || bad "no plots beside sweep.csv"
fi

# 2. Stable ids: a third block size keeps the other points' ids.
sed 's/engine.block_size: \[16, 32\]/engine.block_size: [16, 32, 64]/' \
	"$D/grid.yaml" >"$T/grid3.yaml"
"$KVSIM" sweep "$D/grid.yaml" --list | awk '{print $2, $3, $4, $5}' |
	sort >"$T/ids2"
"$KVSIM" sweep "$T/grid3.yaml" --list | awk '{print $2, $3, $4, $5}' |
	sort >"$T/ids3"
[ "$(comm -23 "$T/ids2" "$T/ids3" | wc -l)" = 0 ] ||
	bad "adding a value changed ids: $(comm -23 "$T/ids2" "$T/ids3")"
[ "$(wc -l <"$T/ids3")" = 12 ] || bad "a 3 x 2 x 2 grid is not 12 points"
"$KVSIM" sweep "$D/grid.yaml" --list --shard 1/3 | cut -d' ' -f1 |
	tr '\n' ' ' | grep -qx '1 4 7 ' || bad "--shard 1/3 is not points 1 4 7"

# 3. Determinism.
"$KVSIM" sweep -q "$D/grid.yaml" --out "$T/b" --jobs 1 --no-plot ||
	bad "sweep b"
[ -e "$T/b/index.html" ] && bad "--no-plot: plots made"
ls "$T"/a/points/*/index.html >/dev/null 2>&1 && bad "a point made plots"
nowall "$S" >"$T/wa"
nowall "$T/b/sweep.csv" >"$T/wb"
cmp -s "$T/wa" "$T/wb" || bad "the same sweep gave another sweep.csv"

# 4. Shards, then merge.
"$KVSIM" sweep -q "$D/grid.yaml" --out "$T/s" --shard 0/2 || bad "shard 0"
[ -e "$T/s/sweep.csv" ] && bad "a sweep.csv after half the shards"
[ "$(ls "$T/s/points" | wc -l)" -eq 4 ] || bad "shard 0/2 ran not 4 points"
"$KVSIM" sweep -q "$D/grid.yaml" --out "$T/s" --shard 1/2 || bad "shard 1"
[ -f "$T/s/sweep.csv" ] || bad "no sweep.csv after the last shard"
nowall "$T/s/sweep.csv" >"$T/ws"
cmp -s "$T/wa" "$T/ws" || bad "sharded sweep.csv differs from the plain one"
rm "$T/s/sweep.csv"
"$KVSIM" sweep -q "$D/grid.yaml" --out "$T/s" --merge || bad "--merge"
nowall "$T/s/sweep.csv" >"$T/ws"
cmp -s "$T/wa" "$T/ws" || bad "merged sweep.csv differs from the plain one"
rm "$T/s/sweep.csv"
"$KVSIM" sweep "$D/grid.yaml" --out "$T/s" --resume --no-plot 2>"$T/s.err" ||
	bad "unsharded --resume after the shards"
grep -q '0 to run, 8 complete already' "$T/s.err" ||
	bad "unsharded --resume ran points: $(head -1 "$T/s.err")"
nowall "$T/s/sweep.csv" >"$T/ws"
cmp -s "$T/wa" "$T/ws" || bad "--resume's sweep.csv differs from the plain one"
rm -r "$T/s/sweep.csv" "$T/s/points/$p2"
"$KVSIM" sweep -q "$D/grid.yaml" --out "$T/s" --merge 2>"$T/merge.err"
[ $? = 1 ] || bad "--merge with a point missing: not exit 1"
[ -e "$T/s/sweep.csv" ] && bad "--merge with a point missing wrote sweep.csv"
# a point whose summary.csv has other columns is bad input (exit 2, was 1)
rm -r "$T/s"
cp -r "$T/a" "$T/s"
rm "$T/s/sweep.csv"
p3=$(ls "$T/s/points" | sed -n 3p)
sed -i '1s/$/,extra/; 2s/$/,1/' "$T/s/points/$p3/summary.csv"
"$KVSIM" sweep -q "$D/grid.yaml" --out "$T/s" --merge 2>"$T/merge.err"
[ $? = 2 ] || bad "--merge over a point with other columns: not exit 2"
grep -q 'its columns differ' "$T/merge.err" ||
	bad "--merge over a point with other columns: $(cat "$T/merge.err")"

# 5. Resume: only the deleted point runs again.
stamps() { for d in "$1"/points/*; do echo "${d##*/} $(stat -c %y "$d/summary.csv")"; done; }
stamps "$T/a" >"$T/ino1"
victim=$(sed -n 7p "$S" | cut -d, -f1)
"$KVSIM" sweep -q "$D/grid.yaml" --out "$T/a" 2>"$T/refuse.err"
[ $? = 2 ] || bad "a second sweep into the same --out was not refused"
grep -q 'refusing to overwrite' "$T/refuse.err" || bad "no refusal message"
rm -r "$T/a/points/$victim"
"$KVSIM" sweep "$D/grid.yaml" --out "$T/a" --resume 2>"$T/resume.err" ||
	bad "--resume failed"
grep -q '1 to run, 7 complete already' "$T/resume.err" ||
	bad "--resume: $(head -1 "$T/resume.err")"
grep -q "\[1/1\] $victim ok" "$T/resume.err" ||
	bad "--resume did not run $victim: $(sed -n 2p "$T/resume.err")"
stamps "$T/a" >"$T/ino2"
[ "$(diff "$T/ino1" "$T/ino2" | grep '^>' | grep -vc "^> $victim ")" = 0 ] ||
	bad "--resume rewrote other points: $(diff "$T/ino1" "$T/ino2")"
nowall "$S" >"$T/wr"
cmp -s "$T/wa" "$T/wr" || bad "sweep.csv after --resume differs"

# 6. Bad sweep files: exit 2, FILE:LINE:COL, nothing run.
for f in "$D"/bad_*.yaml; do
	loc=$(sed -n '1s/.*expect: //p' "$f")
	"$KVSIM" sweep "$f" --out "$T/bad" 2>"$T/bad.err"
	rc=$?
	[ $rc = 2 ] || bad "${f##*/}: exit $rc, not 2"
	grep -q "^$f:$loc: " "$T/bad.err" ||
		bad "${f##*/}: not at $loc: $(head -1 "$T/bad.err")"
	[ -e "$T/bad" ] && { bad "${f##*/}: left $T/bad"; rm -rf "$T/bad"; }
done
"$KVSIM" sweep "$D/grid.yaml" --shard 2/2 2>/dev/null
[ $? = 2 ] || bad "--shard 2/2 accepted"
"$KVSIM" sweep "$D/grid.yaml" --jobs 0 2>/dev/null
[ $? = 2 ] || bad "--jobs 0 accepted"

# 7. A failing point.
"$KVSIM" sweep -q "$D/fail.yaml" --out "$T/f" 2>"$T/f.err"
[ $? = 1 ] || bad "a failing point: not exit 1"
fid=$("$KVSIM" sweep "$D/fail.yaml" --list | awk '$1 == 1 {print $2}')
okid=$("$KVSIM" sweep "$D/fail.yaml" --list | awk '$1 == 0 {print $2}')
grep -q "$fid" "$T/f.err" || bad "the failed point's id is not reported"
grep -q 'past the .* horizon' "$T/f/points/$fid/stderr.txt" 2>/dev/null ||
	bad "the failed point's stderr.txt lacks run's message"
[ -f "$T/f/points/$okid/summary.csv" ] || bad "the good point did not run"
[ -e "$T/f/sweep.csv" ] && bad "sweep.csv written although a point failed"
notmp "$T/f" "failing sweep"
"$KVSIM" sweep "$D/fail.yaml" --out "$T/f" --resume 2>"$T/f2.err"
grep -q '1 to run, 1 complete already' "$T/f2.err" ||
	bad "--resume after a failure: $(head -1 "$T/f2.err")"

# 8. Interrupted midway.
"$KVSIM" sweep -q "$D/slow.yaml" --out "$T/k" --jobs 2 2>"$T/k.err" &
pid=$!
# wait until a point's run has its output files open, then stop the sweep
i=0
while [ $i -lt 100 ] && ! find "$T/k" -name '.*.tmp.*' 2>/dev/null | grep -q .; do
	sleep 0.1
	i=$((i + 1))
done
sleep 0.2
kill -TERM $pid
wait $pid
rc=$?
[ $rc = 1 ] || bad "interrupted sweep: exit $rc, not 1"
[ -e "$T/k/sweep.csv" ] && bad "interrupted sweep wrote sweep.csv"
notmp "$T/k" "interrupted sweep"
for d in "$T"/k/points/*; do
	[ -d "$d" ] || continue
	for f in requests.csv timeseries.csv summary.csv config.yaml; do
		[ -e "$d/$f" ] && bad "interrupted point ${d##*/} left $f"
	done
done

exit $fail
