#!/bin/sh
# mkman.sh KVSIM VERSION PKGDATADIR DOCDIR: write the kvsim(1) manual page
# on stdout.  The command list and each command's section are the
# program's own --help texts, so the page says what the program does; the
# rest (exit status, environment, files) is written here.
set -e
K=$1 version=$2 pkgdatadir=$3 docdir=$4
if [ -z "$docdir" ]; then
	echo "usage: mkman.sh KVSIM VERSION PKGDATADIR DOCDIR" >&2
	exit 2
fi

# roff text from plain text: backslashes, leading dots and quotes, and
# minus signs (so that options copy as ASCII hyphen-minus)
esc() {
	sed -e 's/\\/\\e/g' -e 's/^\([.'\'']\)/\\\&\1/' -e 's/-/\\-/g'
}

# the commands, from the "Commands:" list of kvsim --help
cmds=$("$K" --help | sed -n '/^Commands:/,/^$/p' |
	sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
[ -n "$cmds" ] || { echo "mkman.sh: no commands in '$K --help'" >&2; exit 1; }

cat <<EOF
.\" kvsim(1): made by man/mkman.sh from the commands' --help texts.
.TH KVSIM 1 "" "kvsim $version" "User Commands"
.SH NAME
kvsim \\- simulate KV\\-cache scheduling for LLM serving
.SH SYNOPSIS
.B kvsim
.RB [ \\-\\-help ]
.RB [ \\-\\-version ]
.I COMMAND
.RI [ ARGS ]
.SH DESCRIPTION
.B kvsim
simulates KV\\-cache scheduling for LLM serving on a real block allocator
(libkvcore): vLLM v0 and v1, SGLang\\-style exact reuse, DeepSpeed\\-FastGen,
Sarathi and its own policy, on catalog models and GPUs, driven by request
traces or synthetic workloads.
It also sizes the KV cache the way vLLM does at start\\-up, searches the
highest request rate meeting latency SLOs, runs sweeps, compares results
and replays scripts against the allocator core.
.PP
Each command takes
.B \\-\\-help
(printed on standard output, status 0).
An unknown option prints one line and a hint on standard error, status 2.
.SH COMMANDS
EOF
"$K" --help | sed -n '/^Commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z-]*\) *\(.*\)/\1 \2/p' |
while read -r c summary; do
	printf '.TP\n.B %s\n' "$(printf '%s' "$c" | esc)"
	printf '%s\n' "$summary" | esc
done
for c in $cmds; do
	printf '.SS "kvsim %s"\n' "$(printf '%s' "$c" | esc)"
	printf '.nf\n.in 0\n'
	"$K" "$c" --help | esc
	printf '.in\n.fi\n'
done
cat <<EOF
.SH EXIT STATUS
.TP
.B 0
done, every check held
.TP
.B 1
a check, SLO or regression failed, a run could not finish, or (kv\\-size)
one request of the maximum length does not fit
.TP
.B 2
bad usage or bad input (the message names the file and line where known)
.SH ENVIRONMENT
.TP
.B KVSIM_DATADIR
the directory of the model and GPU catalogs (models.yaml, gpus.yaml) and
the bundled data; default: the installed one,
.IR $(printf '%s' "$pkgdatadir" | esc) .
.TP
.B KVSIM_CHECK
when set to anything but 0, every simulation audits the scheduler and
allocator after every step, as
.B run \\-\\-check
does.
.TP
.B KVSIM_NO_FAST_FORWARD
when set to anything but 0, every simulation makes its decode steps one by
one, as
.B run \\-\\-no\\-fast\\-forward
does (docs/fastforward.md); the outputs are the same.
.TP
.B KVSIM_NO_TAKE_IN
when set to anything but 0, no fast\\-forward span takes in the requests
that arrive in it: each ends before the next arrival (docs/fastforward.md);
the outputs are the same.
.TP
.B KVSIM_FF_REPORT
when set,
.B kvsim run
says at the end how many of its steps the fast\\-forward made, and how
many of its requests went to the scheduler by key.
.TP
.B KVSIM_NO_KEYED
when set to anything but 0, every simulation hands the scheduler every
prompt's token ids, even those of prompts that share no block with any
other (docs/fastforward.md, "Prompts by key"); the outputs are the same.
.SH FILES
.TP
.I $(printf '%s' "$pkgdatadir" | esc)/models.yaml
.TQ
.I $(printf '%s' "$pkgdatadir" | esc)/gpus.yaml
the catalogs, each value with its source
.TP
.I $(printf '%s' "$pkgdatadir" | esc)/azure_llm_2023_conv_excerpt.csv
the trace of the embedded default workload (CC\\-BY\\-4.0, see TRACES.md
beside it)
.SH SEE ALSO
The user documentation, installed in
.IR $(printf '%s' "$docdir" | esc) :
README.md, and docs/run.md, docs/capacity.md, docs/sweep.md,
docs/compare.md, docs/catalog.md, docs/replay.md and the others there.
EOF
