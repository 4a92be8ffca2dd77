#!/bin/sh
# The CUDA backend on a real device: integrity replays with every fault
# injected, offload tier moves and P/D peer copies, copy-on-write timing, and the host/CUDA digest comparison
# (kvsim-gpucheck exits 1 when a digest differs), and kvsim validate's
# digest of one run equal on host and CUDA.  Skipped (77) unless
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
trap 'rm -rf "$out"' EXIT
"$check" --backend cuda --quick --sections integrity,cow --out "$out" ||
	exit 1
# offload tier moves (pinned tier pools) and P/D transfers (a peer copy
# between two device pools): 4 strategies, clean and 3 faults each
[ "$(grep -c '^moves-' "$out/integrity.csv")" = 16 ] ||
	{ echo "FAIL: tier and peer moves missing from integrity.csv"; exit 1; }
# a vllm-v1 run with a CPU tier (kvdrive offload), clean and 3 faults
[ "$(grep -c '^v1-offload,' "$out/integrity.csv")" = 4 ] ||
	{ echo "FAIL: the offload trace is missing from integrity.csv"; exit 1; }
# kvsim validate: the same run on both backends, the same digest
cfg=${top_srcdir:?}/tests/gpu/swap.yaml
for b in host cuda; do
	"$KVSIM" validate -q "$cfg" --backend $b --out "$out/$b" || exit 1
done
dh=$(sed -n 's/^digest,//p' "$out/host/validate_summary.csv")
dc=$(sed -n 's/^digest,//p' "$out/cuda/validate_summary.csv")
[ -n "$dh" ] && [ "$dh" = "$dc" ] ||
	{ echo "FAIL: host digest $dh, cuda digest $dc"; exit 1; }
echo "cuda: integrity, faults and digests ok"
