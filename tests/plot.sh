#!/bin/sh
# plot.sh -- `kvsim plot` (docs/plot.md, reports/plot.h).
#
# Part 1 needs no gnuplot (scripts only, --no-run or a PATH without it):
#  1. one run: a script per plot, the CDF data, index.html; stdout is the
#     index's path and nothing else;
#  2. the scripts, data and index are byte-identical when made again;
#  3. the CDF data is the run's own: sorted, from requests.csv's minimum to
#     its maximum, ending at fraction 1, and thinned to ~2,000 points; CRLF
#     line ends and quoted fields do not change it;
#  4. two runs overlay: one curve each, labelled by policy (the folder's
#     name added when two runs share a policy); their folders' timeseries
#     are read by a relative path; the default output is DIR1/plots;
#  5. capacity, sweep and compare results (tests/plot/*): the aggregated
#     data a hand computation gives;
#  6. bad input exits 2 with FILE:LINE and writes nothing: an extra field,
#     a bad number, an unterminated quote, a missing column, a missing
#     folder, a folder without results, bad options;
#  7. no gnuplot on PATH: the scripts and index, a note, exit 0; a gnuplot
#     that fails: exit 2, no image and no temporary file left; a gnuplot
#     that exits 0 with truncated images (a full disk): exit 2, no image
#     renamed, an earlier one kept, and `kvsim run` exits 1.
# Part 2 renders (exit 77 when gnuplot is not installed; Debian package
# gnuplot-nox):
#  8. every image is a valid PNG (signature, IHDR with a nonzero size) or
#     SVG (XML declaration, <svg ... </svg>); index.html references every
#     image and every file it references exists; gnuplot says nothing, even
#     on tiny inputs; a script reruns by hand; --format png makes PNGs
#     only; rendered output is still byte-identical where it is ours; under
#     a file size limit gnuplot's truncated PNG is refused.
set -u
: "${KVSIM:=../sim/kvsim}"
: "${top_srcdir:=..}"
FIX=$top_srcdir/tests/plot
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-plot.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

PLOTS1="ttft_cdf tpot_cdf e2e_cdf queue_cdf kv_usage throughput"

"$KVSIM" run --out "$T/a" --quiet || { echo "FAIL: kvsim run"; exit 1; }
"$KVSIM" run --out "$T/b" --quiet --set policy=sarathi ||
	{ echo "FAIL: kvsim run sarathi"; exit 1; }
# only the run's own results (kvsim run may plot them itself)
for d in "$T/a" "$T/b"; do
	rm -f "$d"/*.gp "$d"/*.dat "$d"/*.png "$d"/*.svg "$d/index.html"
done
cp -r "$T/a" "$T/a.pristine"

# plot ARGS... -> $out (stdout), $err (stderr), $rc
plot() {
	"$KVSIM" plot "$@" >"$T/out" 2>"$T/err"
	rc=$?
	out=$(cat "$T/out")
	err=$(cat "$T/err")
}
# each file named on stdin exists in $1
exists_all() {
	while read -r f; do
		[ -e "$1/$f" ] || bad "$1: index.html references missing $f"
	done
}
refs() { grep -o '\(src\|href\)="[^"]*"' "$1" | sed 's/^[a-z]*="//; s/"$//'; }

# ---- 1. one run, scripts only --------------------------------------------
cp -r "$T/a.pristine" "$T/one"
plot "$T/one" --no-run
[ $rc = 0 ] || bad "--no-run: exit $rc: $err"
[ "$out" = "$T/one/index.html" ] || bad "--no-run: stdout is '$out'"
[ -z "$err" ] || bad "--no-run: stderr: $err"
for p in $PLOTS1; do
	[ -s "$T/one/$p.gp" ] || bad "no $p.gp"
	grep -q "^	set output '$p\.'\.f\.suffix\$" "$T/one/$p.gp" ||
		bad "$p.gp does not write $p.FORMAT"
done
for p in ttft_cdf tpot_cdf e2e_cdf queue_cdf; do
	[ -s "$T/one/$p.dat" ] || bad "no $p.dat"
done
grep -q "^data = 'timeseries.csv'\$" "$T/one/kv_usage.gp" ||
	bad "kv_usage.gp does not read timeseries.csv"
grep -q "column('kv_usage')" "$T/one/kv_usage.gp" &&
	grep -q "column('swapped')" "$T/one/kv_usage.gp" &&
	grep -q "axes x1y2" "$T/one/kv_usage.gp" ||
	bad "kv_usage.gp: usage and counts on two axes by column name"
ls "$T/one" | grep -q '\.png$\|\.svg$' && bad "--no-run rendered images"
[ -s "$T/one/index.html" ] || bad "no index.html"
refs "$T/one/index.html" | exists_all "$T/one"
for p in $PLOTS1; do
	refs "$T/one/index.html" | grep -qx "$p.gp" ||
		bad "index.html does not link $p.gp"
done
grep -q '<td>ttft_p99_s</td><td>' "$T/one/index.html" ||
	bad "index.html has no summary table"
grep -q '<img' "$T/one/index.html" && bad "--no-run index shows images"
[ -n "$(find "$T/one" -name '*.tmp.*')" ] && bad "temporary files left"

# ---- 2. byte-identical when made again -------------------------------------
mkdir "$T/save"
cp "$T"/one/*.gp "$T"/one/*.dat "$T/one/index.html" "$T/save/"
plot "$T/one" --no-run
for f in "$T"/save/*; do
	cmp -s "$f" "$T/one/${f##*/}" || bad "${f##*/} differs when made again"
done

# ---- 3. the CDF data ------------------------------------------------------
c=$(head -1 "$T/one/requests.csv" | tr ',' '\n' | grep -nx ttft_s | cut -d: -f1)
min=$(tail -n +2 "$T/one/requests.csv" | cut -d, -f"$c" | sort -g | head -1)
max=$(tail -n +2 "$T/one/requests.csv" | cut -d, -f"$c" | sort -g | tail -1)
d=$T/one/ttft_cdf.dat
[ "$(head -1 "$d")" = "ttft_s,fraction" ] || bad "ttft_cdf.dat header"
[ "$(sed -n 2p "$d")" = "$min,0.000000" ] || bad "ttft_cdf.dat starts $(sed -n 2p "$d"), min $min"
[ "$(tail -1 "$d")" = "$max,1.000000" ] || bad "ttft_cdf.dat ends $(tail -1 "$d"), max $max"
tail -n +2 "$d" | awk -F, 'NR > 1 && ($1 < v || $2 < f) { bad = 1 }
	{ v = $1; f = $2 } END { exit bad }' || bad "ttft_cdf.dat is not sorted"
n=$(wc -l <"$d")
[ "$n" -gt 500 ] && [ "$n" -le 2002 ] || bad "ttft_cdf.dat has $n lines"
# drawn as steps, the thinned curve is the exact CDF within 1/1000 at
# every value a request has
tail -n +2 "$T/one/requests.csv" | cut -d, -f"$c" | sort -g >"$T/vals"
awk -F, -v n="$(wc -l <"$T/vals")" '
NR == FNR { if (FNR > 1) { dv[m] = $1 + 0; df[m] = $2 + 0; m++ }; next }
{ v[++i] = $1 + 0 }
END {
	for (j = 1; j <= i; j++) {
		if (j < i && v[j + 1] == v[j])
			continue
		while (k < m && dv[k] <= v[j])
			s = df[k++]
		d = s - j / n
		if (d > 0.001000001 || d < -0.001000001) {
			print "at " v[j] ": CDF " j / n ", curve " s
			exit 1
		}
	}
}' "$d" "$T/vals" || bad "ttft_cdf.dat is not within 1/1000 of the CDF"

# RFC 4180 as written by others: CRLF line ends, quoted fields holding a
# comma, a doubled quote and a line break give the same CDF
mkdir "$T/crlf"
awk -F, -v OFS=, 'NR == 2 { $1 = "\"id, \"\"x\"\"\nnext\"" } { printf "%s\r\n", $0 }' \
	"$T/a.pristine/requests.csv" >"$T/crlf/requests.csv"
plot "$T/crlf" --no-run
[ $rc = 0 ] || bad "CRLF and quoted fields: exit $rc: $err"
cmp -s "$T/crlf/ttft_cdf.dat" "$T/one/ttft_cdf.dat" ||
	bad "CRLF and quoted fields: another CDF"

# ---- 4. two runs overlaid ---------------------------------------------------
cp -r "$T/a.pristine" "$T/two"
plot "$T/two" "$T/b" --no-run
[ $rc = 0 ] || bad "two runs: exit $rc: $err"
[ "$out" = "$T/two/plots/index.html" ] || bad "two runs: stdout '$out'"
g=$T/two/plots/ttft_cdf.gp
grep -q "'ttft_cdf_1.dat' using 1:2 with steps lw 2 title 'vllm-v1'" "$g" &&
	grep -q "'ttft_cdf_2.dat' using 1:2 with steps lw 2 title 'sarathi'" "$g" ||
	bad "ttft_cdf.gp does not overlay both runs"
[ -s "$T/two/plots/ttft_cdf_1.dat" ] && [ -s "$T/two/plots/ttft_cdf_2.dat" ] ||
	bad "overlay data files missing"
cmp -s "$T/two/plots/ttft_cdf_1.dat" "$T/one/ttft_cdf.dat" ||
	bad "run 1's CDF differs when overlaid"
grep -q "^data = '\.\./\.\./b/timeseries.csv'\$" "$T/two/plots/kv_usage_2.gp" &&
	grep -q "^data = '\.\./timeseries.csv'\$" "$T/two/plots/kv_usage_1.gp" ||
	bad "per-run plots do not read their timeseries by a relative path"
cp -r "$T/a.pristine" "$T/same"
plot "$T/one" "$T/same" --out "$T/ov" --no-run
[ $rc = 0 ] && [ "$out" = "$T/ov/index.html" ] || bad "--out: exit $rc '$out'"
grep -q "title 'vllm-v1 (one)'" "$T/ov/ttft_cdf.gp" &&
	grep -q "title 'vllm-v1 (same)'" "$T/ov/ttft_cdf.gp" ||
	bad "two runs of one policy are not told apart"

# ---- 5. capacity, sweep, compare -------------------------------------------
for x in capacity sweep compare; do
	cp -r "$FIX/$x" "$T/$x"
	plot "$T/$x" --no-run
	[ $rc = 0 ] || bad "$x: exit $rc: $err"
	refs "$T/$x/index.html" | exists_all "$T/$x"
done
k=$T/capacity/capacity_knee.dat
[ "$(head -1 "$k")" = "series,label,qps,slo_ratio_mean,slo_ratio_min,slo_ratio_max,points,meets_slo_fraction,no_value,stopped" ] ||
	bad "capacity_knee.dat header: $(head -1 "$k")"
# each SLO over its bound (capacity.csv's slo names two; the points file
# has the first's column only): configuration 0 at qps 6: p99 TTFT 1.9
# and 2.6 over two seeds against 2 s, one meets the SLO; qps 8 is
# saturated (no finite p99: one run stopped early, one infinite): no value
# to draw, but both misses count in the fraction and the probe is marked
# (no_value, stopped); labels say what differs (capacity.csv's `across`)
grep -qx '1,0: gpu=h100-sxm,6,1.125,0.95,1.3,2,0.500000,0,0' "$k" &&
	grep -qx '2,1: gpu=a100-sxm 80GB,3,0.5,0.45,0.55,2,1.000000,0,0' "$k" &&
	grep -qx '1,0: gpu=h100-sxm,8,NaN,NaN,NaN,2,0.000000,2,2' "$k" &&
	[ "$(wc -l <"$k")" = 8 ] ||
	bad "capacity_knee.dat: $(cat "$k")"
grep -q "^set ylabel 'ttft_s p99 <= 2 s, over the bound (1: at the SLO)'" \
	"$T/capacity/capacity_knee.gp" &&
	grep -q "1 with lines .* title 'SLO bound'" "$T/capacity/capacity_knee.gp" ||
	bad "capacity_knee.gp has no SLO line"
grep -q 'set logscale y' "$T/capacity/capacity_knee.gp" || bad "knee: no log y"
# the answers, capacity.csv's max_qps_under_slo, are marked
grep -q '^set arrow from 5.6, graph 0 to 5.6, graph 1 ' "$T/capacity/capacity_knee.gp" &&
	grep -q '^set arrow from 3.4, graph 0 to 3.4, graph 1 ' "$T/capacity/capacity_knee.gp" ||
	bad "knee: the answers are not marked"
# deployments by GPU and TP (the chart dropped the TP)
grep -qx 'h100-sxm TP1,5.6,5.2,6.1' "$T/capacity/capacity_gpu.dat" &&
	grep -qx 'a100-sxm 80GB TP1,3.4,3.1,3.6' "$T/capacity/capacity_gpu.dat" ||
	bad "capacity_gpu.dat: $(cat "$T/capacity/capacity_gpu.dat")"
grep -q '<td>a100-sxm, 80GB</td>' "$T/capacity/index.html" ||
	bad "index.html has no capacity.csv table"
s=$T/sweep/sweep_ttft.dat
grep -qx '2,policy=sarathi,8,1,0.9,1.1,2' "$s" &&
	grep -qx '1,policy=vllm-v1,2,0.11,0.11,0.11,1' "$s" &&
	[ "$(wc -l <"$s")" = 7 ] || bad "sweep_ttft.dat: $(cat "$s")"
grep -q "title 'policy=sarathi'" "$T/sweep/sweep_ttft.gp" || bad "sweep titles"
grep -q '<td>p006</td>' "$T/sweep/index.html" || bad "index.html has no sweep.csv table"
# a sweep whose rate does not vary: p99 TTFT per configuration as bars,
# the mean over seeds with min..max, labelled by the values of the swept
# keys that vary (named on the x axis; block_size, the summary's echo of
# engine.block_size, is not a key of its own); no bar for an infinite p99
mkdir "$T/grid"
printf '%s\n' \
	'point_id,point_index,engine.block_size,policy,seed,block_size,ttft_p99_s' \
	'p0,0,16,vllm-v1,1,16,0.5' 'p1,1,32,vllm-v1,1,32,0.7' \
	'p2,2,16,sarathi,1,16,0.4' 'p3,3,32,sarathi,1,32,inf' \
	'p4,4,16,vllm-v1,2,16,0.9' >"$T/grid/sweep.csv"
plot "$T/grid" --no-run
[ $rc = 0 ] || bad "sweep grid: exit $rc: $err"
[ "$(cat "$T/grid/sweep_ttft.dat")" = "label,ttft_p99_s_mean,ttft_p99_s_min,ttft_p99_s_max,points,rgb
16 / vllm-v1,0.7,0.5,0.9,2,4880560
32 / vllm-v1,0.7,0.7,0.7,1,4880560
16 / sarathi,0.4,0.4,0.4,1,4880560" ] ||
	bad "sweep_ttft.dat (bars): $(cat "$T/grid/sweep_ttft.dat")"
grep -qx "set xlabel 'block_size / policy'" "$T/grid/sweep_ttft.gp" ||
	bad "sweep bars: x axis does not name the keys"
# a sweep of seeds alone: one configuration, one bar over its seeds (it
# drew a bar a seed, labelled by point id)
mkdir "$T/seeds"
printf '%s\n' 'point_id,point_index,seed,ttft_p99_s' 'a1,0,0,0.2' \
	'b2,1,1,0.4' 'c3,2,2,0.3' >"$T/seeds/sweep.csv"
plot "$T/seeds" --no-run
[ $rc = 0 ] || bad "sweep of seeds: exit $rc: $err"
[ "$(sed -n 2p "$T/seeds/sweep_ttft.dat")" = "all points,0.3,0.2,0.4,3,4880560" ] ||
	bad "sweep of seeds: $(cat "$T/seeds/sweep_ttft.dat")"
# compare: bars labelled config:metric (two configurations), red for a
# regression, green for an improvement; no bar for an empty or infinite
# delta_pct
m=$T/compare/compare_delta.dat
[ "$(cat "$m")" = "label,delta_pct,verdict,rgb,shown_pct,note_y,note
conv:ttft_p99_s,17.845,regression,12582912,17.845,NaN,+17.8%
conv:tpot_p99_s,-7.291,improvement,2785066,-7.291,NaN,-7.29%
code:ttft_p99_s,0.5,not-significant,4880560,0.5,NaN,+0.5%" ] || bad "compare_delta.dat: $(cat "$m")"

# ---- 6. bad input -------------------------------------------------------
# badcase NAME FILE EXPECTED-MESSAGE (FILE already broken in $T/NAME)
badcase() {
	plot "$T/$1"
	[ $rc = 2 ] || bad "$1: exit $rc, expected 2"
	case $err in
	*"$3"*) ;;
	*) bad "$1: stderr '$err', expected '$3'" ;;
	esac
	[ -z "$out" ] || bad "$1: stdout '$out'"
	ls "$T/$1" 2>/dev/null | grep -q '\.gp$\|\.dat$\|index.html' &&
		bad "$1: bad input left output"
}
cp -r "$T/a.pristine" "$T/extra"
sed -i '5s/$/,1/' "$T/extra/requests.csv"
badcase extra requests.csv "extra/requests.csv:5: 23 fields, the header has 22"
cp -r "$T/a.pristine" "$T/num"
c=$(head -1 "$T/num/timeseries.csv" | tr ',' '\n' | grep -nx kv_usage | cut -d: -f1)
awk -F, -v OFS=, -v c="$c" 'NR == 7 { $c = "abc" } { print }' \
	"$T/a.pristine/timeseries.csv" >"$T/num/timeseries.csv"
badcase num timeseries.csv "num/timeseries.csv:7: column 'kv_usage': 'abc' is not a finite number"
cp -r "$T/a.pristine" "$T/quote"
printf 'requests,policy\n1,"vllm-v1\n' >"$T/quote/summary.csv"
badcase quote summary.csv "quote/summary.csv:2: unterminated quoted field"
cp -r "$T/a.pristine" "$T/nocol"
sed -i '1s/,kv_usage,/,kv_use,/' "$T/nocol/timeseries.csv"
badcase nocol timeseries.csv "nocol/timeseries.csv:1: no column 'kv_usage'"
mkdir "$T/capbad" && cp "$FIX/capacity/capacity.csv" "$T/capbad/"
sed 's/^1,1,3,/1,1,x3,/' "$FIX/capacity/capacity_points.csv" \
	>"$T/capbad/capacity_points.csv"
badcase capbad capacity_points.csv "capbad/capacity_points.csv:12: column 'qps': 'x3' is not a finite number"
# a bad value found while plotting (after the run's own CDFs) still
# writes nothing
cp -r "$T/a.pristine" "$T/late"
cp "$T/capbad"/*.csv "$T/late/"
badcase late capacity_points.csv "late/capacity_points.csv:12: column 'qps': 'x3' is not a finite number"
mkdir "$T/empty"
badcase empty - "empty: no kvsim results"
badcase missing - "missing: No such file or directory"
plot
[ $rc = 2 ] || bad "no folder: exit $rc"
for o in "--format gif" "--format png," "--bogus" "--out"; do
	# shellcheck disable=SC2086
	plot "$T/one" $o
	[ $rc = 2 ] || bad "plot $o: exit $rc"
done
plot --help
[ $rc = 0 ] && case $out in usage:*) true ;; *) false ;; esac ||
	bad "--help: exit $rc"

# ---- 7. without gnuplot, and with a failing one -----------------------------
mkdir "$T/nobin" "$T/fakebin"
cp -r "$T/a.pristine" "$T/nogp"
PATH=$T/nobin "$KVSIM" plot "$T/nogp" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 0 ] || bad "no gnuplot: exit $rc: $(cat "$T/err")"
[ "$(cat "$T/out")" = "$T/nogp/index.html" ] || bad "no gnuplot: stdout $(cat "$T/out")"
grep -q 'note: gnuplot not found on PATH' "$T/err" ||
	bad "no gnuplot: no note: $(cat "$T/err")"
[ "$(wc -l <"$T/err")" = 1 ] || bad "no gnuplot: more than one line on stderr"
for p in $PLOTS1; do [ -s "$T/nogp/$p.gp" ] || bad "no gnuplot: no $p.gp"; done
ls "$T/nogp" | grep -q '\.png$\|\.svg$' && bad "no gnuplot: images?"
refs "$T/nogp/index.html" | exists_all "$T/nogp"
printf '#!/bin/sh\necho "fake gnuplot fails" >&2\nexit 3\n' >"$T/fakebin/gnuplot"
chmod +x "$T/fakebin/gnuplot"
cp -r "$T/a.pristine" "$T/failgp"
PATH=$T/fakebin "$KVSIM" plot "$T/failgp" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 2 ] || bad "failing gnuplot: exit $rc"
grep -q 'gnuplot failed (exit status 3)' "$T/err" ||
	bad "failing gnuplot: stderr $(cat "$T/err")"
ls -a "$T/failgp" | grep -q '\.png\|\.svg\|\.tmp\.' &&
	bad "failing gnuplot left images or temporary files"

# a gnuplot that exits 0 after writing truncated images (a full disk):
# exit 2, the image named, no image renamed into place, no temporary file
# left, an earlier image kept as it was (the truncated PNG was renamed
# under its final name and the exit status was 0)
mkdir "$T/truncbin"
cat >"$T/truncbin/gnuplot" <<'EOF_GP'
#!/bin/sh
# -e "formats='...'; suffix='.tmp.PID'" NAME.gp...: every image cut short;
# with FAKE_WHOLE set, whole: a PNG of an IHDR and an IEND chunk, a closed
# SVG
fmts=${2#*formats=\'}	# builtins only: PATH holds just this folder
fmts=${fmts%%\'*}
suffix=${2##*suffix=\'}
suffix=${suffix%\'}
shift 2
for g; do
	n=${g%.gp}
	case " $fmts " in *" png "*)
		{ printf '\211PNG\r\n\032\n\000\000\000\rIHDR\000\000\003\300'
		  [ -z "${FAKE_WHOLE:-}" ] ||
			printf '\000\000\002X\010\002\000\000\000\000\000\000\000%b' \
				'\0000\0000\0000\0000IEND\0256B`\0202'
		} >"$n.png$suffix" ;;
	esac
	case " $fmts " in *" svg "*)
		{ printf '<?xml version="1.0"?>\n<svg width="960">\n<g/>\n'
		  [ -z "${FAKE_WHOLE:-}" ] || printf '</svg>\n'
		} >"$n.svg$suffix" ;;
	esac
done
EOF_GP
chmod +x "$T/truncbin/gnuplot"
cp -r "$T/a.pristine" "$T/whole"
FAKE_WHOLE=1 PATH=$T/truncbin "$KVSIM" plot "$T/whole" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 0 ] || bad "whole images refused: exit $rc: $(cat "$T/err")"
[ -s "$T/whole/ttft_cdf.png" ] && [ -s "$T/whole/ttft_cdf.svg" ] ||
	bad "whole images not renamed into place"
for fm in "" "--format svg" "--format png"; do
	cp -r "$T/a.pristine" "$T/trunc"
	echo old >"$T/trunc/ttft_cdf.png"
	echo old >"$T/trunc/ttft_cdf.svg"
	# shellcheck disable=SC2086
	PATH=$T/truncbin "$KVSIM" plot "$T/trunc" $fm >"$T/out" 2>"$T/err"
	rc=$?
	[ $rc = 2 ] || bad "truncated images $fm: exit $rc"
	case $fm in *svg) x=svg ;; *) x=png ;; esac
	grep -q "gnuplot wrote an incomplete $T/trunc/[a-z_]*\.$x (.*is the disk full?)" \
		"$T/err" || bad "truncated images $fm: stderr $(cat "$T/err")"
	[ "$(cat "$T/trunc/ttft_cdf.png") $(cat "$T/trunc/ttft_cdf.svg")" = \
	  "old old" ] || bad "truncated images $fm: an earlier image replaced"
	ls -a "$T/trunc" | grep -v '^ttft_cdf\.\(png\|svg\)$' |
		grep -q '\.png\|\.svg\|\.tmp\.' &&
		bad "truncated images $fm: images or temporary files left"
	[ -e "$T/trunc/index.html" ] && bad "truncated images $fm: index.html"
	rm -rf "$T/trunc"
done
# kvsim run plots its results itself: a plot that fails is exit 1 after
# the reports (it was a warning and exit 0)
PATH=$T/truncbin "$KVSIM" run -q --out "$T/runtrunc" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 1 ] || bad "kvsim run, truncated images: exit $rc"
grep -q '^kvsim run: plots: gnuplot wrote an incomplete' "$T/err" ||
	bad "kvsim run, truncated images: stderr $(cat "$T/err")"
[ -s "$T/runtrunc/summary.csv" ] || bad "kvsim run, truncated images: no reports"
ls -a "$T/runtrunc" | grep -q '\.png\|\.svg\|\.tmp\.' &&
	bad "kvsim run, truncated images: images or temporary files left"

if ! command -v gnuplot >/dev/null 2>&1; then
	[ $fail = 0 ] || exit 1
	echo "SKIP: gnuplot is not installed (Debian: gnuplot-nox); images not checked"
	exit 77
fi

# ---- 8. rendering ------------------------------------------------------
# png_ok FILE: signature, then an IHDR chunk with nonzero width and height
png_ok() {
	h=$(od -A n -t x1 -N 24 "$1" | tr -d ' \n')
	case $h in
	89504e470d0a1a0a0000000d49484452*) ;;
	*) return 1 ;;
	esac
	w=$(printf %s "$h" | cut -c33-40)
	ht=$(printf %s "$h" | cut -c41-48)
	[ "$w" != 00000000 ] && [ "$ht" != 00000000 ]
}
svg_ok() {
	head -1 "$1" | grep -q '^<?xml ' && grep -q '<svg' "$1" &&
		tail -c 20 "$1" | grep -q '</svg>'
}
# check_dir DIR FORMATS: every plot of DIR (its .gp files) has valid images
# in FORMATS, index.html shows them all, and all it references exists
check_dir() {
	n=0
	for g in "$1"/*.gp; do
		p=${g%.gp}
		for f in $2; do
			[ -s "$p.$f" ] || { bad "no ${p##*/}.$f"; continue; }
			"${f}_ok" "$p.$f" || bad "${p##*/}.$f is not a valid $f"
			refs "$1/index.html" | grep -qx "${p##*/}.$f" ||
				bad "index.html does not reference ${p##*/}.$f"
		done
		n=$((n + 1))
	done
	[ $n -gt 0 ] || bad "$1: no plots"
	refs "$1/index.html" | exists_all "$1"
	for i in "$1"/*.png "$1"/*.svg; do
		[ -e "$i" ] || continue
		refs "$1/index.html" | grep -qx "${i##*/}" ||
			bad "index.html does not reference ${i##*/}"
	done
	[ -n "$(find "$1" -name '*.tmp.*')" ] && bad "$1: temporary files left"
	return 0
}
cp -r "$T/a.pristine" "$T/r"
plot "$T/r" --title 'kvsim test'
[ $rc = 0 ] || bad "render: exit $rc: $err"
[ -z "$err" ] || bad "render: gnuplot said: $err"
[ "$out" = "$T/r/index.html" ] || bad "render: stdout '$out'"
check_dir "$T/r" "png svg"
for p in $PLOTS1; do
	[ -s "$T/r/$p.png" ] || bad "render: no $p.png"
done
grep -q "^set title 'kvsim test: TTFT CDF'\$" "$T/r/ttft_cdf.gp" ||
	bad "--title is not in the plot titles"
grep -q '<h1>kvsim test</h1>' "$T/r/index.html" || bad "--title is not the index's"
mkdir "$T/save2"
cp "$T"/r/*.gp "$T"/r/*.dat "$T/r/index.html" "$T/save2/"
plot "$T/r" --title 'kvsim test'
for f in "$T"/save2/*; do
	cmp -s "$f" "$T/r/${f##*/}" || bad "${f##*/} differs when rendered again"
done
for f in "$T"/save/*.dat; do
	cmp -s "$f" "$T/r/${f##*/}" || bad "${f##*/}: rendering changed the data"
done
# a script reruns by hand, in its folder
(cd "$T/r" && gnuplot -e "formats='svg'" ttft_cdf.gp) 2>"$T/err" ||
	bad "gnuplot ttft_cdf.gp by hand: $(cat "$T/err")"

plot "$T/two" "$T/b"
[ $rc = 0 ] || bad "render two runs: exit $rc: $err"
check_dir "$T/two/plots" "png svg"
grep -q '>vllm-v1<' "$T/two/plots/ttft_cdf.svg" &&
	grep -q '>sarathi<' "$T/two/plots/ttft_cdf.svg" ||
	bad "the overlaid CDF's legend does not name both runs"

# tiny inputs (one request, one interval, one point, equal values) render
# without a gnuplot warning about an empty range
mkdir "$T/tiny1" "$T/tiny2"
head -2 "$T/a.pristine/requests.csv" >"$T/tiny1/requests.csv"
head -2 "$T/a.pristine/timeseries.csv" >"$T/tiny1/timeseries.csv"
printf 'config_id,qps,ttft_p99_s\n0,2,0.5\n' >"$T/tiny2/capacity_points.csv"
printf 'metric,delta_pct\nx,0\ny,0\n' >"$T/tiny2/compare.csv"
printf 'point_id,workload.target_rate,ttft_p99_s\np0,1,0.5\np1,2,0.5\n' \
	>"$T/tiny2/sweep.csv"
for x in capacity sweep grid compare tiny1 tiny2; do
	plot "$T/$x"
	[ $rc = 0 ] || bad "render $x: exit $rc: $err"
	[ -z "$err" ] || bad "render $x: gnuplot said: $err"
	check_dir "$T/$x" "png svg"
done

# the real gnuplot on a full disk (here a file size limit: 8 blocks of
# 512 or 1024 bytes hold the scripts and data, not a PNG): it exits 0 with a
# truncated PNG, which is refused; nothing else is left
mkdir "$T/full"
cp "$T/tiny1/requests.csv" "$T/tiny1/timeseries.csv" "$T/full/"
(trap '' XFSZ; ulimit -f 8 && exec "$KVSIM" plot "$T/full") >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 2 ] || bad "file size limit: exit $rc: $(cat "$T/err")"
grep -q "gnuplot wrote an incomplete $T/full/[a-z_]*\.png" "$T/err" ||
	bad "file size limit: stderr $(cat "$T/err")"
ls -a "$T/full" | grep -q '\.png\|\.svg\|\.tmp\.' &&
	bad "file size limit: images or temporary files left"

cp -r "$T/a.pristine" "$T/png"
plot "$T/png" --format png
[ $rc = 0 ] || bad "--format png: exit $rc: $err"
check_dir "$T/png" png
ls "$T/png" | grep -q '\.svg$' && bad "--format png made SVGs"
exit $fail
