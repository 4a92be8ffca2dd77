#!/bin/sh
# The device check (docs/gpu.md, docs/gpu-design.md §6): one command on
# the GPU machine, from the repository root, about 5 minutes on an H200
# (7 at most with an nvcc build; DEADLINE and BUDGET below).
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
# gets 8 files, no more: nvidia-smi.csv,
# env.csv, integrity.csv, frag.csv, copy_sweep.csv, layout_sweep.csv,
# cow.csv and run.log; the sanitizer's own CSVs stay in $TMPDIR.
set -u
mode=device
case ${1:-} in
--host) mode=host; shift ;;
--prepare)
	b=${2:?usage: device-check.sh --prepare BUILDDIR}
	mkdir -p build-gpu &&
	cp "$b/gpu/tools/kvsim-gpucheck" build-gpu/kvsim-gpucheck &&
	echo "build-gpu/kvsim-gpucheck ready"
	exit $? ;;
esac
out=${1:-${OUT:-gpu-out}}
mkdir -p "$out" || exit 2
# DEADLINE: seconds for the sections (default 240); BUDGET: the whole
# script's (default 420), the sanitizer only runs inside it
deadline=${DEADLINE:-240}
budget=${BUDGET:-420}
t0=$(date +%s)
log=$out/run.log
bin=build-gpu/kvsim-gpucheck

run() {
	echo "== $(date -u '+%Y-%m-%dT%H:%M:%SZ') $mode check"
	if [ "$mode" = host ]; then
		[ -x "$bin" ] || { echo "no $bin (run --prepare first)"; return 2; }
		"$bin" --backend host --quick --out "$out"
		return $?
	fi
	nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current \
		--format=csv >"$out/nvidia-smi.csv" 2>&1
	cat "$out/nvidia-smi.csv"
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
