#!/bin/sh
# vllm_args.sh -- `kvsim run --vllm-args "..."` end to end (docs/run.md
# "vLLM's own flags"):
#  1. a run by --vllm-args writes the same reports, byte for byte
#     (summary.csv except sim_wall_s), as the same run by --set: the
#     positional model, a short alias, = and space forms, both boolean
#     forms, vLLM's human-readable integers, a quoted value;
#  2. the order: the config file, then --vllm-args (each in turn), then
#     --set; config.yaml records the last value;
#  3. the ignored options are listed on a startup line (none with -q);
#  4. refusals exit 2 with "--vllm-args: FLAG: ..." and write nothing to
#     --out: an option of vLLM's kvsim does not model, one that is not
#     vLLM's, a value vLLM refuses (a choice), one runcfg refuses, an
#     unterminated quote;
#  5. kvsim capacity takes --vllm-args the same way;
#  6. --help names the option and the order.
: "${KVSIM:?}" "${top_srcdir:?}"
KVSIM_DATADIR=$top_srcdir/data
export KVSIM_DATADIR
T=${TMPDIR:-/tmp}/kvsim-vargs.$$
trap 'rm -rf "$T"' EXIT
mkdir -p "$T" || exit 1
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

# the CSV summary less its sim_wall_s column (wall-clock time)
nowall() {
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "sim_wall_s")
		w = i } { $w = ""; print }' OFS=, "$1"
}

# same DIR-A DIR-B NAME: the two runs' reports are the same
same() {
	f0=$fail
	for f in requests.csv timeseries.csv groups.csv config.yaml; do
		cmp -s "$1/$f" "$2/$f" || { bad "$3: $f differs"
			diff "$1/$f" "$2/$f" | head -5; }
	done
	nowall "$1/summary.csv" >"$T/sa"
	nowall "$2/summary.csv" >"$T/sb"
	cmp -s "$T/sa" "$T/sb" || bad "$3: summary.csv differs"
	[ "$fail" = "$f0" ] && ok "$3: the same reports"
}

W="workload.max_requests=40"

# ---- 1. --vllm-args = --set --------------------------------------------
"$KVSIM" run -q --no-plot -o "$T/v" --set "$W" --vllm-args \
	"meta-llama/Llama-3.1-8B -tp 2 --max-num-seqs=24 \
	--max_num_batched_tokens 2k --block-size 32 --no-enable-prefix-caching \
	--gpu-memory-utilization '0.8' --kv-cache-dtype=fp8 \
	--max-model-len 8K --seed 3 --enable-chunked-prefill \
	--no-async-scheduling --swap-space \"8\"" || bad "vllm-args run failed"
"$KVSIM" run -q --no-plot -o "$T/s" --set "$W" \
	--set model=meta-llama/Llama-3.1-8B \
	--set engine.tensor_parallel_size=2 --set engine.max_num_seqs=24 \
	--set engine.max_num_batched_tokens=2000 --set engine.block_size=32 \
	--set engine.enable_prefix_caching=false \
	--set engine.gpu_memory_utilization=0.8 \
	--set engine.kv_cache_dtype=fp8 --set engine.max_model_len=8192 \
	--set seed=3 --set engine.enable_chunked_prefill=true \
	--set engine.async_scheduling=false --set engine.swap_space=8 ||
	bad "--set run failed"
same "$T/v" "$T/s" "--vllm-args vs --set"
grep -q '^  max_num_seqs: 24$' "$T/v/config.yaml" &&
	grep -q '^  block_size: 32$' "$T/v/config.yaml" &&
	grep -q '^  tensor_parallel_size: 2$' "$T/v/config.yaml" &&
	ok "config.yaml holds the --vllm-args values" ||
	bad "config.yaml lacks the --vllm-args values"

# ---- 1b. the keys of the scheduler knobs and LoRA --------------------
"$KVSIM" run -q --no-plot -o "$T/kv" --set "$W" --vllm-args \
	"-pp 2 -q fp8 --cpu-offload-gb 1.5 --max-num-partial-prefills 2 \
	--max-long-partial-prefills 1 --long-prefill-token-threshold 512 \
	--enable-lora --max-loras 2 --max-lora-rank 32 --max-cpu-loras 4" ||
	bad "knobs/LoRA vllm-args run failed"
"$KVSIM" run -q --no-plot -o "$T/ks" --set "$W" \
	--set engine.pipeline_parallel_size=2 --set engine.quantization=fp8 \
	--set engine.cpu_offload_gb=1.5 \
	--set engine.max_num_partial_prefills=2 \
	--set engine.max_long_partial_prefills=1 \
	--set engine.long_prefill_token_threshold=512 \
	--set engine.enable_lora=true --set engine.max_loras=2 \
	--set engine.max_lora_rank=32 --set engine.max_cpu_loras=4 ||
	bad "knobs/LoRA --set run failed"
same "$T/kv" "$T/ks" "knobs and LoRA by --vllm-args vs --set"
grep -q '^  pipeline_parallel_size: 2$' "$T/kv/config.yaml" &&
	grep -q '^  max_loras: 2$' "$T/kv/config.yaml" &&
	ok "config.yaml holds -pp and --max-loras" ||
	bad "config.yaml lacks -pp or --max-loras"

# ---- 1c. --speculative-config as JSON --------------------------------
"$KVSIM" run -q --no-plot -o "$T/sv" --set "$W" --vllm-args \
	"--speculative-config '{\"method\": \"eagle\", \"num_speculative_tokens\": 3, \"model\": \"yuhuili/EAGLE-LLaMA3.1-Instruct-8B\"}'" ||
	bad "speculative vllm-args run failed"
"$KVSIM" run -q --no-plot -o "$T/ss" --set "$W" \
	--set engine.speculative_config.method=eagle \
	--set engine.speculative_config.num_speculative_tokens=3 \
	--set engine.speculative_config.model=yuhuili/EAGLE-LLaMA3.1-Instruct-8B ||
	bad "speculative --set run failed"
same "$T/sv" "$T/ss" "--speculative-config JSON vs --set"
head -1 "$T/sv/summary.csv" | grep -q spec_acceptance_rate &&
	ok "the JSON run speculated" || bad "the JSON run has no spec columns"

# ---- 2. the order ------------------------------------------------------
printf 'engine:\n  max_num_seqs: 16\n  block_size: 64\n' >"$T/c.yaml"
"$KVSIM" run -q --no-plot -o "$T/o1" "$T/c.yaml" --set "$W" \
	--vllm-args "--max-num-seqs 32" --vllm-args "--max-num-seqs 40" ||
	bad "order run 1 failed"
grep -q '^  max_num_seqs: 40$' "$T/o1/config.yaml" &&
	grep -q '^  block_size: 64$' "$T/o1/config.yaml" &&
	ok "--vllm-args over the file, the later one last" ||
	bad "order: file then --vllm-args"
"$KVSIM" run -q --no-plot -o "$T/o2" --set engine.max_num_seqs=48 \
	"$T/c.yaml" --vllm-args "--max-num-seqs 32" --set "$W" ||
	bad "order run 2 failed"
grep -q '^  max_num_seqs: 48$' "$T/o2/config.yaml" &&
	ok "--set over --vllm-args, whatever their places" ||
	bad "order: --set after --vllm-args"

# ---- 3. ignored options ------------------------------------------------
"$KVSIM" run --no-plot -o "$T/i" --set "$W" --vllm-args \
	"--host 0.0.0.0 --port 8000 --served-model-name a b --max-num-seqs 24" \
	>"$T/i.out" || bad "ignored-options run failed"
grep -qxF "kvsim run: --vllm-args: ignored (no effect on KV or timing):\
 --host, --port, --served-model-name" "$T/i.out" &&
	ok "ignored options listed" || { bad "no ignored line"
	cat "$T/i.out"; }
"$KVSIM" run -q --no-plot -o "$T/iq" --set "$W" --vllm-args "--port 1" \
	>"$T/iq.out" || bad "quiet run failed"
[ ! -s "$T/iq.out" ] && ok "-q: no ignored line" || bad "-q printed"

# ---- 4. refusals ---------------------------------------------------------
# refused NAME MESSAGE ARGS: exit 2, MESSAGE on stderr, no --out
refused() {
	name=$1 msg=$2
	shift 2
	"$KVSIM" run -q --no-plot -o "$T/no" --set "$W" "$@" \
		>"$T/r.out" 2>"$T/r.err"
	rc=$?
	if [ "$rc" != 2 ]; then bad "$name: exit $rc, want 2"
	elif ! grep -qxF -e "$msg" "$T/r.err"; then
		bad "$name: stderr is not \"$msg\""; sed 's/^/  | /' "$T/r.err"
	elif [ -e "$T/no" ]; then bad "$name: wrote --out"
	else ok "$name"; fi
}
refused "unmodelled option" \
	"--vllm-args: --enable-expert-parallel: vLLM option kvsim does not\
 model" \
	--vllm-args "--max-num-seqs 8 --enable-expert-parallel"
refused "unmodelled alias" \
	"--vllm-args: -dp: vLLM option kvsim does not model" \
	--vllm-args "-dp 2"
refused "not vLLM's" "--vllm-args: --foo: not a vllm serve option" \
	--vllm-args "--foo=1"
refused "vLLM's choices" \
	"--vllm-args: --block-size: expected one of 1, 8, 16, 32, 64, 128,\
 256, got '24'" \
	--vllm-args "--block-size 24"
refused "runcfg's refusal" \
	"--vllm-args: --max-num-seqs: engine.max_num_seqs: expected a positive\
 integer, got 'many'" \
	--vllm-args "--max-num-seqs many"
refused "boolean with a value" \
	"--vllm-args: --enable-prefix-caching: takes no value\
 (--enable-prefix-caching or --no-enable-prefix-caching)" \
	--vllm-args "--enable-prefix-caching=true"
refused "a missing value" "--vllm-args: --max-num-seqs: expected a value" \
	--vllm-args "--max-num-seqs --block-size 16"
refused "unterminated quote" \
	"--vllm-args: unterminated \" at column 16" \
	--vllm-args "--max-num-seqs \"8"
refused "an unknown model" \
	"$(cd "$T" && "$KVSIM" run -q --no-plot -o "$T/no" \
	--set model=no/such-model 2>&1 >/dev/null |
	sed 's/--set model=no\/such-model/--vllm-args: model_tag/')" \
	--vllm-args "no/such-model"

# ---- 5. kvsim capacity -------------------------------------------------
C="$top_srcdir/tests/capacity/fixed.yaml"
"$KVSIM" capacity -q --no-plot "$C" --slo 'ttft_s:p99<=0.1' --seeds 1 \
	--jobs 2 -o "$T/cv" --vllm-args "--max-num-seqs 8 --port 1" ||
	bad "capacity --vllm-args failed"
"$KVSIM" capacity -q --no-plot "$C" --slo 'ttft_s:p99<=0.1' --seeds 1 \
	--jobs 2 -o "$T/cs" --set engine.max_num_seqs=8 ||
	bad "capacity --set failed"
for f in capacity.csv capacity_points.csv capacity_groups.csv; do
	cmp -s "$T/cv/$f" "$T/cs/$f" || bad "capacity: $f differs"
done
ok "capacity: --vllm-args = --set"
"$KVSIM" capacity -q --no-plot "$C" --slo 'ttft_s:p99<=0.1' -o "$T/no" \
	--vllm-args "--enable-eplb" 2>"$T/r.err"
rc=$?
[ "$rc" = 2 ] && [ ! -e "$T/no" ] && grep -qxF -e "--vllm-args: \
--enable-eplb: vLLM option kvsim does not model" "$T/r.err" &&
	ok "capacity: an unmodelled option refused" ||
	bad "capacity: refusal (exit $rc)"

# ---- 6. --help -------------------------------------------------------------
"$KVSIM" run --help >"$T/h" 2>&1
grep -q -- '--vllm-args' "$T/h" &&
	grep -q 'Order: CONFIG.yaml, then --vllm-args, then --set' "$T/h" &&
	ok "--help names --vllm-args and the order" ||
	bad "--help lacks --vllm-args"

exit $fail
