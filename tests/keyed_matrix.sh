#!/bin/sh
# keyed_matrix.sh -- prompts that share no block go to the scheduler by
# key, without their token ids (kvs_add_keyed; docs/fastforward.md,
# "Prompts by key"), and that changes no output: each case runs twice,
# by key (the default) and with every prompt by its ids
# (KVSIM_NO_KEYED=1), and requests.csv, timeseries.csv and groups.csv
# must be byte-identical, and summary.csv too but for its sim_wall_s
# column.  KVSIM_FF_REPORT=1 makes each run say how many of its requests
# went by key: a case marked "key" must have sent some (two runs by ids
# prove nothing) and none with the switch; a case marked "-" is one where
# prompts need their ids (another allocator, an observer, KV offload, P/D,
# speculative decoding, prompts that share blocks), and must send none.
#
# The cases: vllm-v1 on the embedded trace excerpt with prefix caching on
# and off, async scheduling off, priority, recompute preemptions (the
# requests come back to their own cached blocks), the same under --check
# (the prefix index audited at every step), three replicas, an overload
# behind max_num_seqs, sliding-window, MLA and hybrid Mamba models,
# clients and timeouts, LoRA, a trace tiled with salted copies, a
# generator's one-turn sessions, parallel sampling (its n = 1 requests by
# key, the fanned-out samples by ids); and the cases that go by ids: the
# other policies, tiled copies that share prompts, a generator's system
# prompts and multi-turn sessions, speculative decoding, P/D.
: "${KVSIM:?}" "${top_srcdir:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-keyed.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
ex="$top_srcdir/examples"
fail=0
side=k
. "$top_srcdir/tests/matrix_lib.sh"

# keyed ERRFILE: the requests that went by key, from KVSIM_FF_REPORT
keyed() {
	sed -n 's/^kvsim run: keyed prompts: \([0-9]*\) of .*/\1/p' "$1"
}

# one NAME key|- ARGS...: the case run both ways and compared
one() {
	name=$1 want=$2
	shift 2
	env KVSIM_FF_REPORT=1 KVSIM_NO_KEYED=1 "$KVSIM" run -q --no-plot \
	    --out "$T/$name.i" "$@" >/dev/null 2>"$T/$name.i.err" ||
	    { echo "FAIL $name: by ids: $(cat "$T/$name.i.err")"
	      fail=1; return; }
	env KVSIM_FF_REPORT=1 "$KVSIM" run -q --no-plot --out "$T/$name.k" \
	    "$@" >/dev/null 2>"$T/$name.k.err" ||
	    { echo "FAIL $name: by key: $(cat "$T/$name.k.err")"
	      fail=1; return; }
	same "$name" i k || return
	i=$(keyed "$T/$name.i.err")
	k=$(keyed "$T/$name.k.err")
	all=$(sed -n 's/^kvsim run: keyed prompts: [0-9]* of \([0-9]*\).*/\1/p' \
	    "$T/$name.k.err")
	if [ "${i:-1}" != 0 ]; then
		echo "FAIL $name: KVSIM_NO_KEYED=1 sent ${i:-?} by key"
		fail=1
	elif [ "$want" = key ] && [ "${k:-0}" -eq 0 ]; then
		echo "FAIL $name: no request went by key"
		fail=1
	elif [ "$want" = - ] && [ "${k:-1}" -ne 0 ]; then
		echo "FAIL $name: ${k:-?} requests went by key"
		fail=1
	else
		echo "ok $name: $k of $all requests by key"
	fi
}

R="--set workload.max_requests=400"
S="--set engine.max_model_len=4096 --set engine.num_gpu_blocks_override=300"
one default key $R
one noprefix key $R --set engine.enable_prefix_caching=false
one sync key $R --set engine.async_scheduling=false
one priority key $R --set engine.scheduling_policy=priority
one preempt key $R $S
pos preempt preemptions
one preempt-check key --set workload.max_requests=150 $S --check
pos preempt-check preemptions
one replicas3 key $R --set replicas=3 --set router=least-outstanding
one seqlimit key $R --set workload.time_scale=0.2 --set engine.max_num_seqs=16
one sliding key $R --set model=mistralai/Mistral-7B-v0.1 $S
one mla key $R --set model=deepseek-ai/DeepSeek-V3 --set gpu=h200 \
    --set engine.tensor_parallel_size=8
one mamba key $R --set model=ibm-granite/granite-4.0-h-tiny \
    --set engine.max_model_len=8192
one clients key $R --set workload.max_concurrency=8
one timeouts key $R --set workload.timeout_s=2 $S
pos timeouts failed
one tiled key --set workload.max_requests=200 --set workload.tile.copies=2
one tiled-shared - --set workload.max_requests=200 \
    --set workload.tile.copies=2 --set workload.tile.share_prefixes=true
pos tiled-shared prefix_hit_rate
for p in vllm-v0 sarathi deepspeed-fastgen kvsim; do
	one "policy-$p" - $R --set policy=$p
done
one lora key "$ex/lora-zipf.yaml" $R
# a generator: one-turn sessions without a system prompt go by key; with
# system prompts, or with later turns that begin with the earlier ones,
# by ids
G="--set workload.generator.requests=300"
G="$G --set workload.generator.arrival.process=poisson"
G="$G --set workload.generator.arrival.rate=8"
one generator key $G
one gen-system - $G --set workload.generator.prefix.systems=4 \
    --set workload.generator.prefix.length=256
pos gen-system prefix_hit_rate
one gen-sessions - $G --set workload.generator.sessions.turns=3
pos gen-sessions prefix_hit_rate
one nsamp-fanout key "$ex/parallel-sampling.yaml" $R
one spec - "$ex/spec-eagle.yaml" $R
one pd - "$ex/pd-azure.yaml" $R
exit $fail
