#!/bin/sh
# The device check's host half (the dry run of gpu/tools/device-check.sh):
# kvsim-gpucheck --quick on the host backend writes every CSV with its
# header, finds no integrity failure, detects every injected fault, and
# its host/"device" digests agree.
: "${KVSIM:?}"
check=$(dirname "$KVSIM")/../gpu/tools/kvsim-gpucheck
out=${TMPDIR:-/tmp}/kvsim-gpucheck.$$
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$check" --backend host --quick --out "$out" >"$out.log" 2>&1 ||
	{ cat "$out.log"; rm -f "$out.log"; fail "kvsim-gpucheck failed"; }
rm -f "$out.log"
for f in env copy_sweep layout_sweep cow integrity frag; do
	[ -s "$out/$f.csv" ] || fail "$f.csv missing"
	[ ! -e "$out/$f.csv.part" ] || fail "$f.csv.part left behind"
done
head -1 "$out/copy_sweep.csv" | grep -qx \
	'section,strategy,dir,hostmem,chunk_bytes,n_chunks,total_bytes,rep,dev_ns,submit_ns,gbps' ||
	fail "copy_sweep.csv header"
# every strategy in both directions, pinned; per-chunk pageable
for s in per-chunk,d2h,pinned per-chunk,h2d,pinned batch,d2h,pinned \
    gather,h2d,pinned staged,d2h,pinned per-chunk,d2h,pageable; do
	grep -q "^sweep,$s," "$out/copy_sweep.csv" || fail "no $s rows"
done
# integrity: clean traces pass with equal digests, every fault detected
# (7 traces, 4 of them swap with 3 faults each, one with a CPU tier and 3
# faults in its tier loads; the ordering hazard with
# 4 strategies, in order and inverted; copy-on-write with 4 strategies,
# clean, corrupted and dropped; offload tier moves and a P/D transfer
# with 4 strategies, clean and with a fault in a store, a load and a peer
# copy); hybrids check states and skip window positions
awk -F, 'NR > 1 && $2 == "none" && ($9 != 0 || $11 != $12) { bad = 1 }
	 NR > 1 && $2 != "none" && $13 != 1 { bad = 1 }
	 $1 == "mamba-swap" && $14 == 0 { bad = 1 }
	 $1 == "sliding-swap" && $15 == 0 { bad = 1 }
	 $1 ~ /^hazard-/ && $2 == "invert" && $16 == 0 { bad = 1 }
	 $1 ~ /^moves-/ && $2 == "none" && $8 != 120 { bad = 1 }
	 NR > 1 { n++ }
	 END { exit bad || n != 58 }' "$out/integrity.csv" ||
	{ cat "$out/integrity.csv"; fail "integrity.csv"; }
awk -F, 'NR > 1 && $5 != $6 { bad = 1 } END { exit bad }' "$out/frag.csv" ||
	fail "frag.csv: measured poison differs from the simulator's count"
echo "device check host half: ok"
