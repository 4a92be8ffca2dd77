#!/bin/sh
# `kvsim kv-size` and `kvsim catalog`: vLLM's log lines for the fixtures of
# docs/ecosystem.md §3.2 and seed bug 2, exit status 0 / 1 (one request does
# not fit, vLLM's ValueError on stderr) / 2 (bad usage or input, with
# FILE:LINE:COL for a bad catalog or config.json).
: "${KVSIM:?}" "${top_srcdir:?}"
KVSIM_DATADIR=$top_srcdir/data
export KVSIM_DATADIR
cat=$top_srcdir/tests/catalog
fail=0
t=${TMPDIR:-/tmp}/kvsim-kvsize.$$
trap 'rm -rf "$t" "$t.err" "$t.d"' EXIT
ok() { echo "ok: $*"; }
no() { echo "FAIL: $*"; fail=1; }

# run NAME WANT-RC [ARGS...]: kvsim with ARGS, stdout in $t, stderr in $t.err
run() {
	name=$1 want=$2
	shift 2
	"$KVSIM" "$@" >"$t" 2>"$t.err"
	rc=$?
	if [ "$rc" != "$want" ]; then
		no "$name: exit $rc, want $want"
		sed 's/^/  | /' "$t" "$t.err"
		return 1
	fi
	return 0
}
# has NAME LINE: stdout holds exactly LINE
has() {
	if grep -qxF -e "$2" "$t"; then ok "$1"; else
		no "$1: no line \"$2\""; sed 's/^/  | /' "$t"; fi
}
# err NAME TEXT: stderr contains TEXT
err() {
	if grep -qF -e "$2" "$t.err"; then ok "$1"; else
		no "$1: stderr lacks \"$2\""; sed 's/^/  | /' "$t.err"; fi
}

# ---- §3.2: Llama-3-8B on an H100, vllm-project/vllm PR #10511 ----------
run pr10511 0 kv-size --model llama-3.1-8b --gpu h100-sxm \
    --gpu-memory 79.22GiB --weights 14.96GiB --non-torch 1.79GiB \
    --activation 1.26GiB --verbose &&
	has "pr10511 available" "Available KV cache memory: 53.29 GiB"
has "pr10511 breakdown" "model weights take 14.96GiB; non_torch_memory takes 1.79GiB; PyTorch activation peak memory takes 1.26GiB; the rest of the memory reserved for KV Cache is 53.29GiB."
has "pr10511 concurrency" "Maximum concurrency for 131,072 tokens per request: 3.33x"

# DESIGN.md's lines: the same 53.29 GiB given exactly
run design 0 kv-size -m meta-llama/Llama-3.1-8B -g h100 \
    --kv-cache-memory-bytes 53.29GiB &&
	has "design tokens" "GPU KV cache size: 436,544 tokens"
has "design concurrency" "Maximum concurrency for 131,072 tokens per request: 3.33x"
[ "$(sed -n 1p "$t")" = "Model loading took 14.9888 GiB" ] &&
    ok "design first line" || no "design first line: $(sed -n 1p "$t")"
run design-8k 0 kv-size -m llama-3.1-8b -g h100 --kv-cache-memory 53.29GiB \
    --max-model-len 8192 &&
	has "8k concurrency" "Maximum concurrency for 8,192 tokens per request: 53.29x"

# vllm-project/vllm PR #17122: Llama-3.1-8B-Instruct on an L40S
run pr17122 0 kv-size -m meta-llama/Llama-3.1-8B-Instruct -g l40s \
    --max-model-len 32768 --num-gpu-blocks-override 9916 &&
	has "pr17122 tokens" "GPU KV cache size: 158,656 tokens"
has "pr17122 concurrency" "Maximum concurrency for 32,768 tokens per request: 4.84x"
has "pr17122 override" "Overriding num_gpu_blocks=12109 with num_gpu_blocks_override=9916"

# kvplan's L4 case: 4.91 GiB of KV cannot hold one 131,072-token request
run l4 1 kv-size -m llama-3.1-8b -g l40s --kv-cache-memory-bytes 4.91GiB &&
	err "l4 estimate" "the estimated maximum model length is 40208."
err "l4 ValueError" "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed"
grep -q "GPU KV cache size" "$t" && no "l4 printed a cache size" ||
    ok "l4 no cache size"

# vLLM v1 on an H100, llm-d/llm-d-benchmark empirical results: every input
# from the catalog and kvsim's estimates
run llmd 0 kv-size -m llama-3.1-8b-instruct -g h100 --max-model-len 16000 \
    --block-size 128 --enable-prefix-caching &&
	has "llm-d available" "Available KV cache memory: 51.38 GiB"

# ---- seed bug 2: Granite-4.0-H-tiny, max_model_len 2048, block size 400 --
run granite 0 kv-size -m granite-4.0-h-tiny -g h100 --max-model-len 2048 \
    --kv-cache-memory-bytes 49152000 &&
	has "granite setting" "Setting attention block size to 400 tokens to ensure that attention page size is >= mamba page size."
has "granite padding" "Padding mamba page size by 1.59% to ensure that mamba page size and attention page size are exactly equal."
has "granite tokens" "GPU KV cache size: 400 tokens"
has "granite concurrency" "Maximum concurrency for 2,048 tokens per request: 1.00x"
run granite-short 1 kv-size -m granite-4.0-h-tiny -g h100 \
    --max-model-len 2048 --block-size 400 --kv-cache-memory-bytes 49151999 &&
	err "granite estimate" "the estimated maximum model length is 2000."
run granite-json 0 kv-size -m "$cat/granite-4.0-h-tiny.config.json" -g h100 \
    --max-model-len 2048 --kv-cache-memory-bytes 49152000 &&
	has "config.json tokens" "GPU KV cache size: 400 tokens"

# MLA on Hopper: FlashMLA's 64-token blocks
run mla 0 kv-size -m deepseek-v3 -g h200 -t 8 &&
	has "mla forced" "Forcing kv cache block size to 64 for FlashMLA backend."

# ---- bad usage and input: exit 2 -----------------------------------------
run help 0 kv-size --help && grep -q '^usage: kvsim kv-size' "$t" &&
    [ ! -s "$t.err" ] && ok "help" || no "help on stdout"
run no-gpu 2 kv-size --model llama-3.1-8b && err "no gpu" "required"
run unknown-model 2 kv-size -m no/such -g h100 && err "unknown model" "unknown model 'no/such'"
run unknown-gpu 2 kv-size -m llama-3.1-8b -g tpu && err "unknown gpu" "unknown GPU 'tpu'"
run bad-util 2 kv-size -m llama-3.1-8b -g h100 --gpu-memory-utilization 1.5 &&
	err "bad util" "--gpu-memory-utilization: bad value '1.5'"
run bad-size 2 kv-size -m llama-3.1-8b -g h100 --weights 14.96GB/s &&
	err "bad size" "--weights: bad value '14.96GB/s'"
run bad-int 2 kv-size -m llama-3.1-8b -g h100 --max-model-len -5 &&
	err "bad int" "--max-model-len: bad value '-5'"
# a block count the allocator cannot hold (it printed 2^64 - 1 tokens)
run bad-override 2 kv-size -m llama-3.1-8b -g h100 \
	--num-gpu-blocks-override 1073741825 &&
	err "bad override" "--num-gpu-blocks-override: bad value"
run bad-opt 2 kv-size -m llama-3.1-8b -g h100 --frobnicate &&
	err "unknown option" "kvsim kv-size: unrecognized option '--frobnicate'"
run no-value 2 kv-size -m llama-3.1-8b -g &&
	err "missing value" "option requires an argument -- 'g'"
run extra-arg 2 kv-size -m llama-3.1-8b -g h100 extra &&
	err "extra argument" "unexpected argument 'extra'"
run too-long 2 kv-size -m llama-3.1-8b -g h100 --max-model-len 200000 &&
	err "too long" "User-specified max_model_len (200000)"
run bad-kvdtype 2 kv-size -m llama-3.1-8b -g h100 --kv-cache-dtype fp4 &&
	err "bad kv dtype" "unknown kv_cache_dtype 'fp4'"
run bad-tp 2 kv-size -m granite-4.0-h-tiny -g h100 -t 8 &&
	err "bad tp" "must be divisible by tensor parallel size (8)"
run bad-json 2 kv-size -m "$cat/bad-value.config.json" -g h100 &&
	err "bad config.json" "bad-value.config.json:3:24: 'num_hidden_layers'"
mkdir -p "$t.d" && cp "$cat/bad-unknown-key.yaml" "$t.d/models.yaml" &&
    cp "$top_srcdir/data/gpus.yaml" "$t.d/gpus.yaml"
run bad-catalog 2 kv-size -m llama-3.1-8b -g h100 --datadir "$t.d" &&
	err "bad catalog" "models.yaml:9:7: unknown key 'num_kv_heads'"
run bad-catalog-env 2 catalog list --datadir "$t.d" &&
	err "catalog list bad" "models.yaml:9:7:"

# a Hugging Face model directory: its config.json (was "input error")
mkdir -p "$t.d/hf-llama" && cp "$cat/llama-3.1-8b.config.json" \
    "$t.d/hf-llama/config.json"
run hf-dir 0 kv-size -m "$t.d/hf-llama" -g h100 \
    --kv-cache-memory-bytes 53.29GiB &&
	has "hf dir tokens" "GPU KV cache size: 436,544 tokens"
run hf-dir-slash 0 kv-size -m "$t.d/hf-llama/" -g h100 \
    --kv-cache-memory-bytes 53.29GiB &&
	has "hf dir/ tokens" "GPU KV cache size: 436,544 tokens"
mkdir -p "$t.d/hf-empty"
run hf-dir-empty 2 kv-size -m "$t.d/hf-empty" -g h100 &&
	err "hf dir without config" "hf-empty: a directory without a config.json"

# fp8 weights (vllm serve --quantization fp8): one byte per parameter; the
# KV cache keeps its dtype.  70B: 70,553,706,496 B + 131,072 x 128 x 2 B of
# rotary cache = 65.7395 GiB (131.45 GiB in bf16 does not load on an H100)
run fp8-weights 1 kv-size -m llama-3.1-70b -g h100 --quantization fp8 &&
	has "fp8 weights" "Model loading took 65.7395 GiB"
run fp8-short 0 kv-size -m llama-3.1-8b -g h100 -q fp8 \
    --kv-cache-memory-bytes 53.29GiB &&
	has "fp8 weights 8b" "Model loading took 7.5100 GiB"
has "fp8 kv unchanged" "GPU KV cache size: 436,544 tokens"
run bad-quant 2 kv-size -m llama-3.1-8b -g h100 --quantization awq &&
	err "bad quantization" "--quantization: bad value 'awq'"

# -v where the weights do not load: the real utilization and the bytes one
# request needs (it printed 0.00 and 0 bytes)
run oom-verbose 1 kv-size -m llama-3.1-70b -g h100 -v &&
	has "oom utilization" "the current vLLM instance can use total_gpu_memory (79.18GiB) x gpu_memory_utilization (0.90) = 71.26GiB"
has "oom needs" "kvsim: one 131072-token request needs 42,949,672,960 bytes"
grep -q "needs 0 bytes\|(0.00)" "$t" && no "oom zeros: $(cat "$t")" ||
    ok "oom no zeros"

# --block-size: vLLM's choices, or the size a hybrid computes (granite: 400)
run block-12 2 kv-size -m llama-3.1-8b -g h100 --block-size 12 &&
	err "block 12" "block_size 12: vLLM takes 1, 8, 16, 32, 64, 128 or 256"
run block-400 2 kv-size -m llama-3.1-8b -g h100 --block-size 400 &&
	err "block 400 dense" "block_size 400: vLLM takes"
run block-hybrid-12 2 kv-size -m granite-4.0-h-tiny -g h100 --block-size 12 &&
	err "block 12 hybrid" "or the 400 it computes for ibm-granite/granite-4.0-h-tiny"
for b in 1 8 32 64 128 256; do
	run "block-$b" 0 kv-size -m llama-3.1-8b -g h100 --block-size $b \
	    --kv-cache-memory-bytes 53.29GiB && ok "block $b"
done

# ---- catalog list / show -------------------------------------------------
run list 0 catalog list && grep -q '^meta-llama/Llama-3.1-8B ' "$t" &&
    grep -q '^h100-sxm ' "$t" && ok "catalog list" || no "catalog list"
run list-gpus 0 catalog list gpus && ! grep -q '^meta-llama' "$t" &&
    grep -q '^mi300x ' "$t" && ok "catalog list gpus" || no "list gpus"
run show 0 catalog show h100 && has "show id" "id: h100-sxm" &&
    grep -q '^    source: ' "$t" && ok "show sources" || no "show sources"
run show-model 0 catalog show models granite-4.0-h-tiny &&
	has "show layers" "layers: 4 full attention + 36 Mamba-2"
run show-json 0 catalog show "$cat/llama-3.1-8b.config.json" &&
	has "show json params" "params: 8,030,261,248 (active per token 8,030,261,248)"
run show-none 2 catalog show nothing && err "show unknown" "no model or GPU named 'nothing'"
run catalog-usage 2 catalog && err "catalog usage" "usage: kvsim catalog"
run catalog-help 0 catalog --help && grep -q '^usage: kvsim catalog' "$t" &&
    ok "catalog help" || no "catalog help"
exit $fail
