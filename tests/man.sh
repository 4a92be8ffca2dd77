#!/bin/sh
# The manual page (man/kvsim.1, made by man/mkman.sh): it covers every
# command of `kvsim --help` and every long option of each command's own
# --help, and renders without warnings (but for lines too long to
# adjust: long install paths); every docs/*.md is in the list
# `make install` installs into $(docdir).
: "${KVSIM:?}" "${top_srcdir:?}"
fail=0
page=${KVSIM%/*}/../man/kvsim.1
t=${TMPDIR:-/tmp}/kvsim-man.$$
trap 'rm -f "$t" "$t.err"' EXIT
ok() { echo "ok: $*"; }
no() { echo "FAIL: $*"; fail=1; }

[ -s "$page" ] && ok "man/kvsim.1 built" || { no "no $page"; exit 1; }
if command -v groff >/dev/null 2>&1; then
	groff -man -Tutf8 -ww -Wbreak "$page" >"$t" 2>"$t.err"
	[ ! -s "$t.err" ] && ok "renders without warnings" ||
	    { no "groff warnings"; cat "$t.err"; }
	# one `ul`-free text to search: overstrikes out, hyphens plain
	sed 's/.\x08//g; s/\xe2\x80\x90/-/g' "$t" >"$t.err"
	mv "$t.err" "$t"
else
	sed 's/\\-/-/g; s/\\e/\\/g; s/^\\&//' "$page" >"$t"
fi
cmds=$("$KVSIM" --help | sed -n '/^Commands:/,/^$/p' |
    sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
[ -n "$cmds" ] || no "no commands in kvsim --help"
for c in $cmds; do
	grep -q "kvsim $c\$" "$t" || grep -q "^ *kvsim $c *\$" "$t" ||
	    { no "no section for $c"; continue; }
	miss=
	for o in $("$KVSIM" "$c" --help | grep -o -- '--[a-z][a-z0-9-]*' |
	    sort -u); do
		grep -q -- "$o" "$t" || miss="$miss $o"
	done
	[ -z "$miss" ] && ok "$c: every option" || no "$c: missing$miss"
done
# the list in Makefile.am that installs docs/*.md
for f in "$top_srcdir"/docs/*.md; do
	n=docs/${f##*/}
	grep -q "[[:space:]]$n\\( \\|\$\\)" "$top_srcdir/Makefile.am" ||
	    no "$n is not installed (Makefile.am nobase_dist_doc_DATA)"
done
[ -f "$top_srcdir/LICENSE" ] && ok "LICENSE" || no "no LICENSE"
exit $fail
