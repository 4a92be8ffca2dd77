#!/bin/sh
# The step bench on a device (docs/gpu.md §5.2): one command on the GPU
# machine, from the repository root, about 2-4 minutes on an H200.
#
#   sh tests/gpu/stepbench.sh OUTDIR           the run on the device
#   sh tests/gpu/stepbench.sh --host OUTDIR    the CPU dry run (--quick)
#
# It times the shapes of tests/gpu/stepbench-shapes.csv (written on the
# build machine by: kvsim calibrate kernels --emit-shapes $models; the
# device has no catalog), with build-gpu/kvsim-stepbench when it starts
# there (cp BUILDDIR/gpu/tools/kvsim-stepbench build-gpu/), else a binary
# built here with nvcc from core/ and gpu/ alone.  cuBLAS is opened at run
# time from the toolkit beside nvcc.  OUTDIR gets gemm.csv, kvread.csv,
# copy.csv and run.log.  Back on the build machine:
#   kvsim calibrate kernels OUTDIR/*.csv --gpu h200 --device "NVIDIA H200" \
#       --date DATE --out data/costmodel-h200-kernels.yaml
models='meta-llama/Meta-Llama-3-8B meta-llama/Llama-3.1-70B@4 mistralai/Mixtral-8x7B-v0.1@2 Qwen/Qwen3-32B@2'
set -u
mode=device
[ "${1:-}" = --host ] && { mode=host; shift; }
out=${1:-${OUT:-stepbench-out}}
mkdir -p "$out" || exit 2
shapes=tests/gpu/stepbench-shapes.csv
bin=build-gpu/kvsim-stepbench
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
lib=$(dirname "$(readlink -f "$nvcc")")/../lib64
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

build() {
	echo "== building kvsim-stepbench with $nvcc"
	mkdir -p build-gpu/fallback && : >build-gpu/fallback/config.h
	timeout 150 "$nvcc" -O2 -arch=sm_90 -std=c++17 -I. -Ibuild-gpu/fallback \
		-c gpu/tools/stepbench_cuda.cu -o build-gpu/fallback/stepbench_cuda.o &&
	timeout 60 cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I. \
		-Ibuild-gpu/fallback gpu/tools/kvsim-stepbench.c \
		build-gpu/fallback/stepbench_cuda.o -L"$lib" -lcudart_static \
		-ldl -lpthread -lrt -lstdc++ -o build-gpu/kvsim-stepbench.fallback
}

run() {
	echo "== $(date -u '+%Y-%m-%dT%H:%M:%SZ') stepbench ($mode)"
	if [ $mode = host ]; then
		[ -x "$bin" ] || bin=gpu/tools/kvsim-stepbench
		"$bin" --shapes "$shapes" --host --quick --out "$out"
		return $?
	fi
	nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
		--format=csv 2>&1
	"$bin" --probe
	rc=$?
	[ $rc -eq 77 ] && return 77
	if [ $rc -ne 0 ]; then
		build || return 1
		bin=build-gpu/kvsim-stepbench.fallback
		"$bin" --probe || return 77
	fi
	timeout 420 "$bin" --shapes "$shapes" --deadline 360 --out "$out"
}

{ run; echo "== exit $?"; } 2>&1 | tee "$out/run.log"
rc=$(sed -n 's/^== exit //p' "$out/run.log" | tail -1)
exit "${rc:-1}"
