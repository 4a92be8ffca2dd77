#!/bin/sh
# accuracy.sh -- kvsim against measured vLLM serving runs (docs/ACCURACY.md).
#
#   accuracy.sh [CALIBRATION.yaml | none]
#
# For every experiment of experiments.tsv (runs/<experiment>/: the
# measured inference-perf results and a kvsim.yaml), runs kvsim, then
# compares with the measured summary_lifecycle_metrics.json: the absolute
# percentage error (APE) of mean TTFT, mean E2E, decode time per output
# token ((mean E2E - mean TTFT) / (output_len - 1), output_len of
# results/config.yaml, on both sides) and p90/p99 of TTFT and E2E.  Prints
# a table per experiment and the median and p90 APE per metric, for the fit
# set and for the held-out set apart, and writes one CSV row per
# experiment and metric.  A calibration file, when given, is passed as
# cost.calibration to every run ("none": the cost model's defaults;
# without one a run takes kvsim's calibration for its GPU and vLLM).
#
# A missing run, file or metric, a kvsim failure or a run with no finished
# request stops it with exit 1 and names what is missing: no experiment
# or metric is dropped in silence.
#
# Environment (defaults in brackets):
#   KVSIM           the kvsim program [kvsim]
#   ACC_RUNS        the runs folder [runs/ next to this script]
#   ACC_LIST        the experiment list [experiments.tsv next to it]
#   ACC_OUT         kvsim's outputs, one folder per experiment and stage
#                   [accuracy-out]
#   ACC_CSV         the CSV written [accuracy.csv]
#   ACC_LOAD        how the load is made: `stages` (kvsim's generator, one
#                   run per stage: Poisson arrivals at the stage's rate,
#                   rate x duration requests) or `inference-perf` (one run,
#                   workload.kind: inference-perf reading results/config.yaml
#                   itself, stages, prompt cycling and the client timeout
#                   included) [inference-perf]
#   ACC_TIMEOUT_S   the client timeout of the measured runs: a simulated
#                   request whose E2E exceeds it counts as failed, as it
#                   did for the client [300]
#   ACC_MAX_REQUESTS  at most this many requests a stage (tests; 0: all) [0]
#   ACC_VLLM_VERSION  the measured runs' vLLM, passed as engine.vllm_version
#                   when this kvsim has that key (probed once) [0.15.1]

set -eu

here=$(cd "$(dirname "$0")" && pwd)
KVSIM=${KVSIM:-kvsim}
runs=${ACC_RUNS:-$here/runs}
list=${ACC_LIST:-$here/experiments.tsv}
out=${ACC_OUT:-accuracy-out}
csv=${ACC_CSV:-accuracy.csv}
load=${ACC_LOAD:-inference-perf}
timeout_s=${ACC_TIMEOUT_S:-300}
max_req=${ACC_MAX_REQUESTS:-0}
vllm_version=${ACC_VLLM_VERSION:-0.15.1}
calib=${1:-}

die() {
	echo "accuracy.sh: $*" >&2
	exit 1
}

[ $# -le 1 ] || die "usage: accuracy.sh [CALIBRATION.yaml | none]"
case $load in
stages|inference-perf) ;;
*) die "ACC_LOAD=$load: expected stages or inference-perf" ;;
esac
[ -f "$list" ] || die "$list: no experiment list"
[ -d "$runs" ] || die "$runs: no runs folder"
calib_set=
if [ "$calib" = none ]; then	# the cost model's defaults
	calib_set="cost.calibration=none"
elif [ -n "$calib" ]; then
	[ -f "$calib" ] || die "$calib: no such calibration file"
	calib=$(cd "$(dirname "$calib")" && pwd)/$(basename "$calib")
	calib_set="cost.calibration=$calib"
fi
mkdir -p "$out"

# acc_json FILE PATH: the number at PATH (keys joined by '/') of an
# inference-perf lifecycle report, which is indented JSON, one key a line.
acc_json() {
	awk -v want="$2" '
	{
		line = $0
		ind = match(line, /[^ ]/) - 1
		if (line ~ /^ *"[^"]*": /) {
			k = line
			sub(/^ *"/, "", k)
			sub(/".*/, "", k)
			d = ind / 2
			key[d] = k
			p = key[1]
			for (i = 2; i <= d; i++)
				p = p "/" key[i]
			if (p == want) {
				v = line
				sub(/^[^:]*: */, "", v)
				sub(/,$/, "", v)
				print v
				exit
			}
		}
	}' "$1"
}

# acc_measured EXP: "name value" lines of the measured metrics.
acc_measured() {
	j=$runs/$1/results/summary_lifecycle_metrics.json
	[ -f "$j" ] || die "$j: missing"
	for m in ttft:time_to_first_token e2e:request_latency; do
		name=${m%%:*}
		for q in mean p90 p99; do
			v=$(acc_json "$j" "successes/latency/${m#*:}/$q")
			case $v in
			''|null) die "$j: no successes/latency/${m#*:}/$q" ;;
			esac
			echo "${name}_$q $v"
		done
	done
}

# acc_output_len EXP: data.shared_prefix.output_len of results/config.yaml.
acc_output_len() {
	c=$runs/$1/results/config.yaml
	n=$(awk '$1 == "output_len:" { print $2; exit }' "$c")
	case $n in
	''|*[!0-9]*) die "$c: no data.shared_prefix.output_len" ;;
	esac
	[ "$n" -ge 2 ] || die "$c: output_len $n: need 2 or more"
	echo "$n"
}

# acc_stages EXP: "rate requests" a line, one per load stage.
acc_stages() {
	c=$runs/$1/results/config.yaml
	awk -v cap="$max_req" '
	$1 == "-" && $2 == "rate:" { rate = $3; next }
	$1 == "duration:" && rate != "" {
		n = int(rate * $2 + 0.5)
		if (cap > 0 && n > cap)
			n = cap
		print rate, n
		rate = ""
	}' "$c"
}

# acc_kvsim EXP DIR [KEY=VALUE]...: one kvsim run of the experiment.
acc_kvsim() {
	e=$1
	d=$2
	shift 2
	set -- "$@" ${calib_set:+"$calib_set"} ${version_set:+"$version_set"}
	args=
	for kv in "$@"; do
		args="$args --set $kv"
	done
	# shellcheck disable=SC2086
	if ! "$KVSIM" run "$runs/$e/kvsim.yaml" --quiet --no-plot --force \
	    -o "$d" $args >"$d.log" 2>&1; then
		cat "$d.log" >&2
		die "$e: kvsim run failed (log: $d.log)"
	fi
	[ -f "$d/requests.csv" ] || die "$d/requests.csv: missing"
}

# acc_simulate EXP: runs kvsim, prints the requests.csv files to pool.
acc_simulate() {
	e=$1
	[ -f "$runs/$e/kvsim.yaml" ] || die "$runs/$e/kvsim.yaml: missing"
	mkdir -p "$out/$e"
	if [ "$load" = inference-perf ]; then
		acc_kvsim "$e" "$out/$e/all" workload.kind=inference-perf \
		    "workload.config=$runs/$e/results/config.yaml" \
		    "workload.timeout_s=$timeout_s"
		echo "$out/$e/all/requests.csv"
		return
	fi
	s=0
	acc_stages "$e" >"$out/$e/stages"
	[ -s "$out/$e/stages" ] || die "$runs/$e/results/config.yaml: no stages"
	while read -r rate n; do
		acc_kvsim "$e" "$out/$e/stage_$s" \
		    "workload.generator.requests=$n" \
		    "workload.generator.arrival.rate=$rate"
		echo "$out/$e/stage_$s/requests.csv"
		s=$((s + 1))
	done <"$out/$e/stages"
}

# acc_simulated FILE...: "name value" lines of the pooled simulated
# requests (successes: finished within the client timeout, and not marked
# failed where requests.csv has a `status` column).  Quantiles as numpy's
# linear percentile, which inference-perf uses.
acc_simulated() {
	for f in "$@"; do
		awk -F, -v lim="$timeout_s" '
		NR == 1 {
			for (i = 1; i <= NF; i++)
				col[$i] = i
			if (!("ttft_s" in col) || !("e2e_s" in col)) {
				print "no ttft_s/e2e_s column" > "/dev/stderr"
				exit 1
			}
			next
		}
		("status" in col) && $col["status"] != "ok" { next }
		$col["e2e_s"] + 0 > lim + 0 { next }
		{ print $col["ttft_s"], $col["e2e_s"] }' "$f" ||
			die "$f: unreadable requests.csv"
	done >"$out/pool"
	[ -s "$out/pool" ] || die "$*: no request finished within ${timeout_s} s"
	for c in 1:ttft 2:e2e; do
		sort -g -k"${c%%:*},${c%%:*}" "$out/pool" | awk -v k="${c%%:*}" \
		    -v name="${c#*:}" '
		{ v[NR] = $k; s += $k }
		function q(p,   h, lo) {
			h = (NR - 1) * p + 1
			lo = int(h)
			if (lo >= NR)
				return v[NR]
			return v[lo] + (h - lo) * (v[lo + 1] - v[lo])
		}
		END {
			printf "%s_mean %.9g\n%s_p90 %.9g\n%s_p99 %.9g\n",
			    name, s / NR, name, q(0.9), name, q(0.99)
		}'
	done
}

# engine.vllm_version: the measured runs' vLLM where kvsim knows the key
# (it chooses that version's engine defaults, async scheduling among
# them); a kvsim without it rejects the key with exit 2.
version_set=
probe=$(awk -F'\t' '$1 !~ /^#/ && $1 != "" { print $1; exit }' "$list")
if [ -n "$probe" ] && [ -f "$runs/$probe/kvsim.yaml" ] &&
    "$KVSIM" run "$runs/$probe/kvsim.yaml" --quiet --no-plot --force \
    -o "$out/probe" --set workload.generator.requests=1 \
    --set "engine.vllm_version=$vllm_version" >/dev/null 2>&1; then
	version_set="engine.vllm_version=$vllm_version"
	echo "engine.vllm_version=$vllm_version; load: $load"
else
	echo "engine.vllm_version: not known to this kvsim; load: $load"
fi

echo "experiment,set,metric,measured,simulated,ape_pct" >"$csv.tmp"
n=0
while IFS='	' read -r exp set; do
	case $exp in
	''|'#'*) continue ;;
	esac
	case $set in
	fit|held-out) ;;
	*) die "$list: $exp: set '$set': expected fit or held-out" ;;
	esac
	[ -d "$runs/$exp" ] || die "$runs/$exp: missing run"
	olen=$(acc_output_len "$exp")
	acc_measured "$exp" >"$out/measured" || exit 1
	files=$(acc_simulate "$exp") || exit 1
	# shellcheck disable=SC2086
	acc_simulated $files >"$out/simulated" || exit 1
	awk -v ex="$exp" -v set="$set" -v olen="$olen" '
	FNR == NR { m[$1] = $2; next }
	{ s[$1] = $2 }
	END {
		m["decode_tok"] = (m["e2e_mean"] - m["ttft_mean"]) / (olen - 1)
		s["decode_tok"] = (s["e2e_mean"] - s["ttft_mean"]) / (olen - 1)
		split("ttft_mean e2e_mean decode_tok ttft_p90 ttft_p99 " \
		    "e2e_p90 e2e_p99", names, " ")
		for (i = 1; i <= 7; i++) {
			k = names[i]
			if (!(k in m) || !(k in s) || m[k] <= 0) {
				printf "accuracy.sh: %s: metric %s missing\n",
				    ex, k > "/dev/stderr"
				exit 1
			}
			ape = (s[k] > m[k] ? s[k] - m[k] : m[k] - s[k]) / m[k]
			printf "%s,%s,%s,%.9g,%.9g,%.4f\n", ex, set, k, m[k],
			    s[k], 100 * ape
		}
	}' "$out/measured" "$out/simulated" >>"$csv.tmp" || exit 1
	n=$((n + 1))
done <"$list"
[ "$n" -gt 0 ] || die "$list: no experiment"
mv "$csv.tmp" "$csv"

# The table: APE % per experiment and metric, then per set the median
# and p90 over its experiments (numpy's linear percentile).
awk -F, '
NR == 1 { next }
{
	if (!($1 in seen)) {
		seen[$1] = 1
		order[++ne] = $1
		eset[$1] = $2
	}
	ape[$1, $3] = $6
	if (!($3 in mseen)) {
		mseen[$3] = 1
		metric[++nm] = $3
	}
}
function q(a, n, p,   h, lo) {
	h = (n - 1) * p + 1
	lo = int(h)
	return lo >= n ? a[n] : a[lo] + (h - lo) * (a[lo + 1] - a[lo])
}
function sortn(a, n,   i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
}
END {
	printf "APE %% per experiment (kvsim vs measured)\n"
	printf "%-48s %-8s", "experiment", "set"
	for (j = 1; j <= nm; j++)
		printf " %10s", metric[j]
	printf "\n"
	for (i = 1; i <= ne; i++) {
		printf "%-48s %-8s", order[i], eset[order[i]]
		for (j = 1; j <= nm; j++)
			printf " %10.1f", ape[order[i], metric[j]]
		printf "\n"
	}
	split("fit held-out", sets, " ")
	for (k = 1; k <= 2; k++) {
		for (stat = 1; stat <= 2; stat++) {
			printf "%-48s %-8s", (stat == 1 ? "median APE %" : \
			    "p90 APE %"), sets[k]
			for (j = 1; j <= nm; j++) {
				c = 0
				for (i = 1; i <= ne; i++)
					if (eset[order[i]] == sets[k])
						v[++c] = ape[order[i], metric[j]]
				if (c == 0) {
					printf " %10s", "-"
					continue
				}
				sortn(v, c)
				printf " %10.1f", q(v, c, stat == 1 ? 0.5 : 0.9)
			}
			printf "\n"
		}
	}
}' "$csv"
echo "wrote $csv"
