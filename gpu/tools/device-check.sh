#!/bin/sh
# The device check (docs/gpu.md, docs/gpu-design.md §6): one command on
# the GPU machine, from the repository root, about 5 minutes on an H200.
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
# flushed row by row; run.log has everything the programs printed.
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
	if ! "$bin" --probe; then
		echo "== prebuilt binary unusable here: building with nvcc"
		mkdir -p build-gpu/fallback && : >build-gpu/fallback/config.h
		nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
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
	# 300 s overall; each section stops early when the deadline passes
	timeout 330 "$bin" --backend cuda --deadline 280 --out "$out"
	rc=$?
	if [ $rc -eq 0 ] && command -v compute-sanitizer >/dev/null 2>&1; then
		timeout 45 compute-sanitizer --tool memcheck "$bin" \
			--backend cuda --quick --sections integrity \
			--out "$out/sanitizer" || echo "compute-sanitizer: rc $?"
	fi
	return $rc
}

{ run; echo "== exit $?"; } 2>&1 | tee "$log"
rc=$(sed -n 's/^== exit //p' "$log" | tail -1)
exit "${rc:-1}"
