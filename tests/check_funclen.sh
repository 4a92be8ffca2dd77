#!/bin/sh
# No function of the product (core, util, workloads, reports, gpu, sim)
# runs over 150 lines: a longer one does several things, and each of them
# deserves a name (docs/style.md §7).  Definitions are KNF (.clang-format):
# the name at the start of a line, the body's braces in column 0.  Tests,
# benchmarks and examples are not held to it.
: "${top_srcdir:?}"
limit=${KVSIM_FUNC_LINES:-150}

# longest DIR...: "LINES FILE:LINE NAME" for every function over $limit.
longest() {
	find "$@" -type f \( -name '*.c' -o -name '*.cu' \) | LC_ALL=C sort |
	    xargs awk -v lim="$limit" '
		FNR == 1 { inside = 0 }
		/^[A-Za-z_][A-Za-z0-9_]*\(/ { name = $0; sub(/\(.*/, "", name) }
		/^\{/ { start = FNR; inside = 1; next }
		/^\}/ && inside {
			n = FNR - start - 1
			if (n > lim)
				printf "%d %s:%d %s\n", n, FILENAME, start, name
			inside = 0
			seen++
		}
		END { print "total", seen + 0 }'
}

cd "$top_srcdir" || exit 1
out=$(longest core util workloads reports gpu sim)
total=$(printf '%s\n' "$out" | sed -n 's/^total //p')
long=$(printf '%s\n' "$out" | grep -v '^total ')
# The scan must have read the tree, and must see a long function.
[ "${total:-0}" -gt 500 ] || {
	echo "read only ${total:-0} function bodies: the scan is broken"
	exit 1
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-funclen.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
{
	printf 'static int\nlong_one(void)\n{\n'
	i=0
	while [ $i -le "$limit" ]; do
		echo "	(void)0;"
		i=$((i + 1))
	done
	printf '}\n'
} >"$tmp/long.c"
case $(longest "$tmp") in
*"long.c:3 long_one"*) ;;
*) echo "the scan missed a function of $((limit + 1)) lines"; exit 1 ;;
esac
if [ -n "$long" ]; then
	echo "functions over $limit lines:"
	printf '%s\n' "$long" | sort -rn
	exit 1
fi
echo "$total functions, none over $limit lines"
