# man/: the kvsim(1) manual page, made at build time by mkman.sh from the
# program's own --help texts (so it cannot drift from them) and installed
# by `make install`.  Not distributed: every build makes its own.
nodist_man_MANS = %reldir%/kvsim.1
EXTRA_DIST += %reldir%/mkman.sh
CLEANFILES += %reldir%/kvsim.1 %reldir%/kvsim.1.tmp
%reldir%/kvsim.1: %reldir%/mkman.sh sim/kvsim$(EXEEXT) Makefile
	$(AM_V_GEN)$(MKDIR_P) %reldir% && \
	$(SHELL) $(srcdir)/%reldir%/mkman.sh sim/kvsim$(EXEEXT) \
	    '$(PACKAGE_VERSION)' '$(pkgdatadir)' '$(docdir)' \
	    >%reldir%/kvsim.1.tmp && \
	mv %reldir%/kvsim.1.tmp $@
