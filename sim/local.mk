# The kvsim program.
bin_PROGRAMS += %reldir%/kvsim
%canon_reldir%_kvsim_SOURCES = \
	%reldir%/main.c \
	%reldir%/replay.c \
	%reldir%/replay.h
%canon_reldir%_kvsim_LDADD = core/libkvcore.la
