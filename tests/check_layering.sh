#!/bin/sh
# The layering of the tree (DESIGN.md "Layering"), checked on every
# #include, every directory edge:
#
#   sim/cli ──► sim ──► sim/model ──► util ──► core ──► libc
#                │ └──► workloads ──► util, core
#                │ └──► reports ───► util, core
#                └────► gpu ───────► core
#
# An arrow is "may include"; a part may always include itself.  Nothing
# includes upward, and nothing but the command line (sim/cli) includes the
# command line: not the libraries, not the tests, not the benchmarks --
# except the fuzz harnesses (tests/fuzz), which include the command files
# whose static readers they feed (sweep and suite files, compare's and
# calibrate's CSVs).
#
# Besides the edges:
#  - core/ includes only the C standard library and core/; its local.mk
#    adds no external flags or libraries;
#  - outside core/ (and its white-box tests) only core's installed headers;
#  - libyaml is read in util/ only (one YAML front end), CUDA in gpu/ only,
#    GSL nowhere below workloads/reports/sim;
#  - the libraries never end the process: no exit() or abort() outside
#    sim/cli and the test and benchmark programs.
: "${top_srcdir:?}"
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$top_srcdir" || exit 1
fail=0
say() {
	echo "$*"
	fail=1
}

# part FILE: the layer a file of the tree belongs to.
part() {
	case $1 in
	core/*) echo core ;;
	util/*) echo util ;;
	workloads/*) echo workloads ;;
	reports/*) echo reports ;;
	gpu/*) echo gpu ;;
	sim/cli/*) echo sim/cli ;;
	sim/model/*) echo sim/model ;;
	sim/*) echo sim ;;
	bench/*) echo bench ;;
	tests/fuzz/*) echo tests/fuzz ;;
	tests/*) echo tests ;;
	examples/*) echo examples ;;
	*) echo other ;;
	esac
}

# allowed PART: the parts PART may include.
allowed() {
	case $1 in
	core) echo "core" ;;
	util) echo "util core" ;;
	workloads) echo "workloads util core" ;;
	reports) echo "reports util core" ;;
	gpu) echo "gpu core" ;;
	sim/model) echo "sim/model util core" ;;
	sim) echo "sim sim/model workloads reports gpu util core" ;;
	sim/cli) echo "sim/cli sim sim/model workloads reports gpu util core" ;;
	bench | tests) echo "sim sim/model workloads reports gpu util core" ;;
	tests/fuzz) echo "tests/fuzz sim/cli sim sim/model workloads reports" \
	    "gpu util core" ;;
	examples) echo "core" ;;
	*) echo "" ;;
	esac
}

std='assert.h complex.h ctype.h errno.h fenv.h float.h inttypes.h iso646.h
limits.h locale.h math.h setjmp.h signal.h stdalign.h stdarg.h stdatomic.h
stdbool.h stddef.h stdint.h stdio.h stdlib.h stdnoreturn.h string.h tgmath.h
threads.h time.h uchar.h wchar.h wctype.h'

sources=$(find core util workloads reports gpu sim bench tests examples \
    -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) | LC_ALL=C sort)
[ -n "$sources" ] || {
	echo "no sources found under $top_srcdir"
	exit 1
}
nedges=0
for f in $sources; do
	from=$(part "$f")
	dir=${f%/*}
	ok=" $(allowed "$from") "
	hdrs=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]\([^>"]*\)[>"].*/\1/p' "$f")
	for h in $hdrs; do
		# Resolve as the compiler does with -I$(top_srcdir): the
		# including file's folder first, then the top of the tree.
		if [ -f "$dir/$h" ]; then
			target="$dir/$h"
		elif [ -f "$h" ]; then
			target=$h
		else
			target=
		fi
		if [ "$from" = core ]; then
			case " $(echo $std) " in
			*" $h "*) continue ;;
			esac
			[ -n "$target" ] && [ "$(part "$target")" = core ] ||
			    say "$f: includes <$h>, which is not libc or core/"
			continue
		fi
		if [ -z "$target" ]; then
			case $from in tests | tests/fuzz | bench) continue ;; esac
			case $h in
			yaml.h) [ "$from" = util ] ||
			    say "$f: includes <yaml.h>; only util/ reads YAML" ;;
			cuda*.h | cuda/* | cuda_runtime*) [ "$from" = gpu ] ||
			    say "$f: includes <$h>; CUDA belongs to gpu/" ;;
			gsl/*) case $from in
			    util | gpu | examples) say "$f: includes <$h>; GSL is not used below workloads/reports/sim" ;;
			    esac ;;
			esac
			continue
		fi
		[ "$target" = config.h ] && continue
		to=$(part "$target")
		nedges=$((nedges + 1))
		case $ok in
		*" $to "*) ;;
		*) say "$f: includes $target ($from may not use $to)" ;;
		esac
	done
done
[ "$nedges" -gt 0 ] || say "no include edges found: the check read nothing"

grep -v '^[[:space:]]*#' core/local.mk | grep -n 'LIBADD\|_CFLAGS\|_CPPFLAGS' &&
    say "core/local.mk: libkvcore takes no external flags or libraries"

# Outside core/ (and its white-box tests), only the installed headers.
bad=$(grep -rln 'core/kv_int\.h\|core/kvs_int\.h\|core/kv_ds\.h' \
    sim gpu reports workloads util bench 2>/dev/null | grep -E '\.(c|h|cu)$')
[ -z "$bad" ] || say "$bad: include libkvcore's internal headers"

# The libraries return errors; only the program ends the process.
for f in $sources; do
	case $(part "$f") in
	sim/cli | tests | tests/fuzz | bench | other) continue ;;
	esac
	case $f in gpu/tools/*) continue ;; esac
	grep -n '\(^\|[^_a-z]\)\(exit\|abort\)[[:space:]]*(' "$f" |
	    grep -v '^[0-9]*:[[:space:]]*\*\|^[0-9]*:[[:space:]]*/[*/]' |
	    while IFS= read -r line; do
		echo "$f:${line%%:*}: ends the process (only sim/cli may)"
	done
done | grep . && fail=1

[ $fail -eq 0 ] || exit 1
echo "layering holds: $nedges include edges checked"

# The check must be able to fail: on a copy of the tree with one upward
# edge and one exit() in a library added, it must name both.
[ -n "$KVSIM_LAYERING_COPY" ] && exit 0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvsim-layering.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cp -R core util workloads reports gpu sim bench tests examples "$tmp" ||
    exit 1
printf '#include "sim/cli/cmd_run.h"\n' >>"$tmp/reports/rpt.c"
printf 'static void f(void) { exit(3); }\n' >>"$tmp/util/ydoc.c"
out=$(KVSIM_LAYERING_COPY=1 top_srcdir=$tmp sh "$self" 2>&1) && {
	echo "the check passed a tree with an upward include and an exit()"
	exit 1
}
case $out in
*"reports/rpt.c: includes sim/cli/cmd_run.h (reports may not use sim/cli)"*) ;;
*) echo "the check missed reports/rpt.c -> sim/cli: $out"; exit 1 ;;
esac
case $out in
*"util/ydoc.c:"*": ends the process"*) ;;
*) echo "the check missed exit() in util/ydoc.c: $out"; exit 1 ;;
esac
echo "and it fails on a tree that breaks it"
