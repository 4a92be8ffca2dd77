#!/bin/sh
# core/ depends on nothing but the C standard library: every #include in
# core/ names a C11/POSIX-free standard header or a header of core/ itself;
# and nothing outside core/ but its white-box tests reads core's internal
# headers.
: "${top_srcdir:?}"
std='assert.h complex.h ctype.h errno.h fenv.h float.h inttypes.h iso646.h
limits.h locale.h math.h setjmp.h signal.h stdalign.h stdarg.h stdatomic.h
stdbool.h stddef.h stdint.h stdio.h stdlib.h stdnoreturn.h string.h tgmath.h
threads.h time.h uchar.h wchar.h wctype.h'
bad=0
for f in "$top_srcdir"/core/*.c "$top_srcdir"/core/*.h; do
	grep -n '^[[:space:]]*#[[:space:]]*include' "$f" | while IFS= read -r line; do
		hdr=$(printf '%s\n' "$line" | sed -n 's/.*include[[:space:]]*[<"]\([^>"]*\)[>"].*/\1/p')
		case " $(echo $std) " in
		*" $hdr "*) continue ;;
		esac
		if [ -f "$top_srcdir/core/$hdr" ]; then
			continue
		fi
		echo "${f#"$top_srcdir"/}: includes <$hdr>, which is not libc or core/"
		echo x >>"${TMPDIR:-/tmp}/kvsim-layering.$$"
	done
done
if [ -s "${TMPDIR:-/tmp}/kvsim-layering.$$" ]; then
	rm -f "${TMPDIR:-/tmp}/kvsim-layering.$$"
	exit 1
fi
grep -v '^[[:space:]]*#' "$top_srcdir/core/local.mk" |
    grep -n 'LIBADD\|_CFLAGS\|_CPPFLAGS' && {
	echo "core/local.mk: libkvcore takes no external flags or libraries"
	exit 1
}
# Outside core/ (and its white-box tests), only the installed headers.
if grep -rln 'core/kv_int\.h\|core/kvs_int\.h\|core/kv_ds\.h' \
    "$top_srcdir"/sim "$top_srcdir"/gpu "$top_srcdir"/reports \
    "$top_srcdir"/workloads "$top_srcdir"/bench 2>/dev/null |
    grep -E '\.(c|h|cu)$'; then
	echo "the files above include libkvcore's internal headers"
	exit 1
fi
echo "core/ includes only libc and itself"
exit $bad
