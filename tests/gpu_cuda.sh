#!/bin/sh
# The CUDA backend on a real device: integrity replays with every fault
# injected, copy-on-write timing, and the host/CUDA digest comparison
# (kvsim-gpucheck exits 1 when a digest differs).  Skipped (77) unless
# KVSIM_GPU=1 and a CUDA device answers; a build without CUDA has no
# device by construction.
: "${KVSIM:?}"
check=$(dirname "$KVSIM")/../gpu/tools/kvsim-gpucheck
if [ "${KVSIM_GPU:-0}" != 1 ]; then
	echo "KVSIM_GPU is not 1: skipped"
	exit 77
fi
"$check" --probe || exit 77
out=${TMPDIR:-/tmp}/kvsim-gpu-cuda.$$
"$check" --backend cuda --quick --sections integrity,cow --out "$out"
rc=$?
rm -rf "$out"
exit $rc
