# sim/model/: the model and GPU catalogs (data/*.yaml), the Hugging Face
# config.json reader, the table of token-mixer kinds (mixer.c) and vLLM's
# KV sizing: shared by the simulator, kvsim and tests/check_catalog.  The
# catalogs are found at $KVSIM_DATADIR, else the installed pkgdatadir,
# else the source tree.
noinst_LTLIBRARIES += %reldir%/libmodel.la
%canon_reldir%_libmodel_la_SOURCES = \
	%reldir%/catalog.c %reldir%/catalog.h \
	%reldir%/mixer.c %reldir%/mixer.h \
	%reldir%/sizing.c %reldir%/sizing.h \
	%reldir%/sizing_pp.c
%canon_reldir%_libmodel_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DKVSIM_DATADIR='"$(pkgdatadir)"' \
	-DKVSIM_SRCDATADIR='"$(abs_top_srcdir)/data"'
%canon_reldir%_libmodel_la_CFLAGS = $(AM_CFLAGS) $(YAML_CFLAGS)
%canon_reldir%_libmodel_la_LIBADD = util/libutil.la $(YAML_LIBS)
# the data directories are compiled in: rebuild when configure changes them
$(%canon_reldir%_libmodel_la_OBJECTS): Makefile
