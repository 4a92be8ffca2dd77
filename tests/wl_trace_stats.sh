#!/bin/sh
# kvsim trace-stats on the real traces of ../shared/traces: every number
# its README publishes, as printed (skipped, 77, without the traces).
: "${KVSIM:?}"
dir=${KVSIM_TRACES:-}
if [ -z "$dir" ] || [ ! -r "$dir/azure_llm_2023_code.csv" ]; then
	echo "SKIP: no traces in '${dir}'"
	exit 77
fi
fail=0
t=${TMPDIR:-/tmp}/kvsim-wl-ts.$$
trap 'rm -f "$t" "$t.err"' EXIT

check() {
	file=$1; shift
	if ! "$KVSIM" trace-stats "$dir/$file" >"$t" 2>"$t.err"; then
		echo "FAIL: $file"; cat "$t.err"; fail=1; return
	fi
	for want in "$@"; do
		if grep -qxF "$want" "$t"; then
			echo "ok: $file: $want"
		else
			echo "FAIL: $file: missing '$want'"; fail=1
		fi
	done
}

check azure_llm_2023_code.csv \
    'rows: 8,819' \
    'first / last timestamp: 2023-11-16 18:17:03.9799600 / 2023-11-16 19:14:19.9280160' \
    'span: 3,435.9 s' \
    'mean rate: 2.57 req/s' \
    'arrivals per 1-min bin: min / median / max: 0 / 111 / 632 (57 bins, 12 empty)' \
    'inter-arrival CV: 13.2' \
    'input tokens: mean / median / p99 (min-max): 2,047.8 / 1,469 / 7,436 (3-7,437)' \
    'output tokens: mean / median / p99 (min-max): 27.9 / 13 / 252 (6-1,899)' \
    'offered load: 5,256 input tok/s, 71.6 output tok/s'
check azure_llm_2023_conv.csv \
    'rows: 19,366' \
    'first / last timestamp: 2023-11-16 18:15:46.6805900 / 2023-11-16 19:14:08.4025270' \
    'span: 3,501.7 s' \
    'mean rate: 5.53 req/s' \
    'arrivals per 1-min bin: min / median / max: 191 / 327.5 / 507 (58 bins, 0 empty)' \
    'inter-arrival CV: 1.09' \
    'input tokens: mean / median / p99 (min-max): 1,154.7 / 1,020 / 4,142 (2-14,050)' \
    'output tokens: mean / median / p99 (min-max): 211.1 / 129 / 601 (7-1,000)' \
    'offered load: 6,386 input tok/s, 1,167.6 output tok/s'
if ! "$KVSIM" trace-stats "$dir/mooncake_fast25_synthetic_trace.jsonl.gz" \
    >/dev/null 2>&1; then
	echo "note: built without zlib; the Mooncake traces are refused"
	exit $fail
fi
check mooncake_fast25_conversation_trace.jsonl.gz \
    'rows: 12,031' \
    'first / last arrival: 0.000 / 3,536.999 s' \
    'span: 3,537.0 s' \
    'mean rate: 3.40 req/s' \
    'arrivals per 1-min bin: min / median / max: 144 / 207.5 / 247 (58 bins, 0 empty)' \
    'distinct timestamps: 1,180' \
    'input tokens: mean / median / p99 (min-max): 12,035.1 / 6,909 / 85,401 (891-126,195)' \
    'output tokens: mean / median / p99 (min-max): 342.6 / 350 / 1,120 (1-2,000)' \
    'offered load: 40,937 input tok/s, 1,165.4 output tok/s' \
    'total / unique 512-token blocks: 288,500 / 182,790' \
    'prefix-reuse ratio (blocks): 36.64 %' \
    'prefix-reuse ratio (tokens): 37.36 %' \
    'requests that reuse >= 1 leading block: 12,030 (100.0 %)'
check mooncake_fast25_synthetic_trace.jsonl.gz \
    'rows: 3,993' \
    'first / last arrival: 0.000 / 1,022.025 s' \
    'span: 1,022.0 s' \
    'mean rate: 3.91 req/s' \
    'arrivals per 1-min bin: min / median / max: 208 / 235 / 273 (17 bins, 0 empty)' \
    'distinct timestamps: 3,982' \
    'input tokens: mean / median / p99 (min-max): 15,325.5 / 11,587 / 66,458 (13-191,378)' \
    'output tokens: mean / median / p99 (min-max): 149.1 / 69 / 769 (1-893)' \
    'offered load: 59,876 input tok/s, 582.6 output tok/s' \
    'total / unique 512-token blocks: 121,877 / 43,924' \
    'prefix-reuse ratio (blocks): 63.96 %' \
    'prefix-reuse ratio (tokens): 65.12 %' \
    'requests that reuse >= 1 leading block: 1,782 (44.6 %)'
exit $fail
