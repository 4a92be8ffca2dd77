#!/bin/sh
# The device check (docs/gpu.md, docs/gpu-design.md §6): one command on
# the GPU machine, from the repository root: 71-91 s on an H200 (three
# runs, 2026-11-30); 8 minutes at most (DEADLINE and BUDGET below).
#
#   sh gpu/tools/device-check.sh OUTDIR           the run on the device
#   sh gpu/tools/device-check.sh --host OUTDIR    its host half (dry run:
#                                                 the host backend, --quick)
#   sh gpu/tools/device-check.sh --prepare BUILD  copy BUILD's static
#                                                 kvsim-gpucheck to build-gpu/
#
# The GPU machine has no GSL, libyaml, Check or network: the binary is
# built here (configure finds nvcc; cudart is linked statically) and
# travels in build-gpu/.  If it does not start there, the script builds
# one with nvcc from core/ and gpu/ alone (about a minute).  Every CSV is
# flushed row by row; run.log has everything the programs printed.  OUTDIR
# gets 8 files, no more: env.csv, integrity.csv, frag.csv,
# copy_sweep.csv, layout_sweep.csv, cow.csv, validate.csv and run.log
# (nvidia-smi's line is in run.log); the sanitizer's and kvsim validate's
# own outputs stay in $TMPDIR.
set -u
mode=device
case ${1:-} in
--host) mode=host; shift ;;
--prepare)
	b=${2:?usage: device-check.sh --prepare BUILDDIR}
	mkdir -p build-gpu/lib &&
	cp "$b/gpu/tools/kvsim-gpucheck" build-gpu/kvsim-gpucheck || exit 1
	echo "build-gpu/kvsim-gpucheck ready"
	# kvsim itself, for kvsim validate on the device, with the shared
	# libraries the GPU machine lacks (GSL, libyaml, zlib); cudart is
	# linked statically
	if [ -x "$b/sim/kvsim" ] && ldd "$b/sim/kvsim" >/dev/null 2>&1; then
		cp "$b/sim/kvsim" build-gpu/kvsim || exit 1
		for l in $(ldd "$b/sim/kvsim" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'); do
			case ${l##*/} in
			libc.so*|libm.so*|libstdc++*|libgcc_s*|ld-linux*) ;;
			*) cp -L "$l" build-gpu/lib/ || exit 1 ;;
			esac
		done
		echo "build-gpu/kvsim ready ($(ls build-gpu/lib | tr '\n' ' '))"
	fi
	exit 0 ;;
esac
out=${1:-${OUT:-gpu-out}}
mkdir -p "$out" || exit 2
# DEADLINE: seconds for the sections (default 240); BUDGET: the whole
# script's (default 480): kvsim validate and the sanitizer only run
# inside it
deadline=${DEADLINE:-240}
budget=${BUDGET:-480}
t0=$(date +%s)
log=$out/run.log
bin=build-gpu/kvsim-gpucheck

# kvsim validate (the real simulator, docs/gpu.md §3) on tests/gpu/swap.yaml:
# host and device backends with the tiny geometry must give one digest;
# the model's own geometry (2 MiB blocks) with three copy strategies
# measures the copies against the cost model.  validate.csv: one row a
# run and copy class, with the run's digest and failures.
validate_runs() { # DEVICE-BACKEND TIMING-GEOMETRY
	k=build-gpu/kvsim devb=$1 geo=$2
	[ -x "$k" ] || { echo "== no $k: kvsim validate skipped"; return 0; }
	t=${TMPDIR:-/tmp}/kvsim-validate.$$
	rm -rf "$t" && mkdir -p "$t" || return 1
	echo "run,class,batches,blocks,chunks,bytes,measured_ns,submit_ns,model_ns,sim_charged_ns,digest,failures" \
		>"$out/validate.csv.part"
	vrc=0 i=0
	for v in "host tiny per-chunk" "$devb tiny per-chunk" \
	    "$devb $geo per-chunk" "$devb $geo batch" "$devb $geo gather"; do
		set -- $v
		i=$((i + 1)) n=$i-$1-$2-$3
		echo "== kvsim validate $n"
		LD_LIBRARY_PATH=build-gpu/lib KVSIM_DATADIR=data timeout 90 \
			"$k" validate -q tests/gpu/swap.yaml --backend "$1" \
			--geometry "$2" --strategy "$3" --out "$t/$n" ||
			{ echo "kvsim validate $n: rc $?"; vrc=1; }
		d=$(sed -n 's/^digest,//p' "$t/$n/validate_summary.csv" 2>/dev/null)
		f=$(sed -n 's/^failures,//p' "$t/$n/validate_summary.csv" 2>/dev/null)
		sed 1d "$t/$n/validate.csv" 2>/dev/null |
			sed "s/^/$n,/; s/\$/,$d,$f/" >>"$out/validate.csv.part"
		eval "dig_$2_$(echo "$1" | tr -c 'a-z0-9\n' _)=\$d"
	done
	mv "$out/validate.csv.part" "$out/validate.csv"
	if [ -z "$dig_tiny_host" ] || [ "$dig_tiny_host" != "$(eval echo "\$dig_tiny_$(echo "$devb" | tr -c 'a-z0-9\n' _)")" ]; then
		echo "kvsim validate: host and $devb digests differ"
		vrc=1
	fi
	rm -rf "$t"
	return $vrc
}

run() {
	echo "== $(date -u '+%Y-%m-%dT%H:%M:%SZ') $mode check"
	if [ "$mode" = host ]; then
		[ -x "$bin" ] || { echo "no $bin (run --prepare first)"; return 2; }
		"$bin" --backend host --quick --out "$out" || return $?
		validate_runs host tiny	# the model geometry is slow on a CPU
		return $?
	fi
	# nvidia-smi's facts go to run.log only: OUTDIR holds eight files
	nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current \
		--format=csv 2>&1
	"$bin" --probe
	rc=$?
	# 77: the binary ran and found no device (a build would not help);
	# anything else but 0: it did not start here (loader, glibc, driver)
	[ $rc -eq 77 ] && return 77
	if [ $rc -ne 0 ]; then
		echo "== prebuilt binary unusable here (rc $rc): building with nvcc"
		mkdir -p build-gpu/fallback && : >build-gpu/fallback/config.h
		nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
		nvcc=$(readlink -f "$nvcc")
		timeout 150 "$nvcc" -O2 -arch=sm_90 -std=c++17 -I. \
			-Ibuild-gpu/fallback -c gpu/backend_cuda.cu \
			-o build-gpu/fallback/backend_cuda.o || return 1
		timeout 120 cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I. \
			-Ibuild-gpu/fallback core/*.c gpu/kvgpu.c \
			gpu/cpu_pool.c gpu/backend_host.c gpu/backend_fault.c \
			gpu/validate.c gpu/drive.c \
			gpu/tools/kvsim-gpucheck.c build-gpu/fallback/backend_cuda.o \
			-L"$(dirname "$nvcc")/../lib64" -lcudart_static -ldl \
			-lpthread -lrt -lstdc++ -o build-gpu/kvsim-gpucheck.fallback ||
			return 1
		bin=build-gpu/kvsim-gpucheck.fallback
		"$bin" --probe || return 77
	fi
	# every section stops early once DEADLINE seconds have passed
	timeout $((deadline + 40)) "$bin" --backend cuda --deadline "$deadline" \
		--out "$out"
	rc=$?
	left=$((budget - ($(date +%s) - t0)))
	if [ $left -ge 100 ]; then
		validate_runs cuda model || rc=1
	else
		echo "== kvsim validate skipped: ${left} s of the budget left"
	fi
	# compute-sanitizer on the quick integrity replay, if time is left
	left=$((budget - ($(date +%s) - t0)))
	if [ $rc -eq 0 ] && [ $left -ge 60 ] &&
	    command -v compute-sanitizer >/dev/null 2>&1; then
		timeout 45 compute-sanitizer --tool memcheck "$bin" \
			--backend cuda --quick --sections integrity \
			--out "${TMPDIR:-/tmp}/kvsim-sanitizer" ||
			echo "compute-sanitizer: rc $?"
	fi
	return $rc
}

{ run; echo "== exit $?"; } 2>&1 | tee "$log"
rc=$(sed -n 's/^== exit //p' "$log" | tail -1)
exit "${rc:-1}"
