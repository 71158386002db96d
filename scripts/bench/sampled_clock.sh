#!/usr/bin/env bash
# sampled_clock.sh — what iowitness would cost if it read the clock on 1 call in N only.
#
# Purpose: an experiment, not a mode. --summary must stay within 0.05 of the empty-program
# floor (issue 5), and the two clock reads a per-call latency needs cost about that much on
# their own (the timing floor). This builds a variant of the probe in which
# bpf_ktime_get_ns() is replaced by a per-CPU cache refreshed from the real clock every N
# calls (default 256), installs it in place of probes/build/iowitness.bpf.o for the length of
# one interleaved.py run, and restores the real object on any exit. Every other instruction of
# the probe is unchanged, so the run shows the cost of all the probe's work but the clock.
# The variant's latencies and phase times are meaningless: only the ratios are read.
#
# Example (2 vCPU VM; the last column is the observer's ratio minus the floor's of the same
# cycle, median over the cycles):
#
#     scripts/bench/sampled_clock.sh 256 --workloads fio-seq-read,fio-rand-read \
#         --observers floor,timing-floor,iowitness-summary --cycles 20 --slot 2
#     workload       observer           ratio median (range)    stretches  minus floor, same cycle
#     fio-seq-read   floor              0.948 (0.830..1.178)    20
#     fio-seq-read   timing-floor       0.893 (0.818..1.040)    20         -0.062 (20)
#     fio-seq-read   iowitness-summary  0.842 (0.691..1.027)    20         -0.108 (20)
#     fio-rand-read  floor              0.954 (0.869..1.013)    20
#     fio-rand-read  timing-floor       0.904 (0.800..1.021)    20         -0.053 (20)
#     fio-rand-read  iowitness-summary  0.873 (0.766..0.996)    20         -0.088 (20)
#
# How to read it: the same run with the real probe (interleaved.py) gave -0.102 and -0.125 for
# summary mode; what is left without the clock is the probe's other work (docs/performance-log.md,
# "Sixth round").
#
# Usage (as root, from the repository, after scripts/setup.sh; nothing else may run iowitness
# meanwhile, since the installed probe object is swapped):
#   scripts/bench/sampled_clock.sh [N] [interleaved.py options]
set -euo pipefail
cd "$(dirname "$0")/../.."

every=256
if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then
	every=$1
	shift
fi
if (( every < 1 || (every & (every - 1)) != 0 )); then
	echo "sampled_clock.sh: N must be a power of two (got $every)" >&2
	exit 2
fi
if (( EUID != 0 )); then
	echo "sampled_clock.sh: run as root (the benchmark loads BPF programs)" >&2
	exit 2
fi
object=probes/build/iowitness.bpf.o
if [[ ! -f $object ]]; then
	echo "sampled_clock.sh: $object is not built (run scripts/setup.sh or make -C probes)" >&2
	exit 2
fi

work=$(mktemp -d)
cp "$object" "$work/real.bpf.o"
restore() {
	if [[ -d $work ]]; then
		cp "$work/real.bpf.o" "$object"
		rm -rf "$work"
	fi
}
trap restore EXIT
trap 'exit 130' INT TERM   # through the EXIT trap

# the cache goes right after the includes; the macro then replaces every later clock read
awk -v mask=$((every - 1)) '
	{ print }
	/^#include "events.h"/ {
		print "struct sampled_clock { __u64 calls, last_ns; };"
		print "struct {"
		print "\t__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);"
		print "\t__uint(max_entries, 1);"
		print "\t__type(key, __u32);"
		print "\t__type(value, struct sampled_clock);"
		print "} sampled_clocks SEC(\".maps\");"
		print "static __always_inline __u64 sampled_ns(void)"
		print "{"
		print "\t__u32 zero = 0;"
		print "\tstruct sampled_clock *c = bpf_map_lookup_elem(&sampled_clocks, &zero);"
		print "\tif (!c)"
		print "\t\treturn 1;"
		print "\tif ((c->calls++ & " mask ") == 0)"
		print "\t\tc->last_ns = bpf_ktime_get_ns();"
		print "\treturn c->last_ns | 1;   /* never 0: 0 means no call in progress */"
		print "}"
		print "#define bpf_ktime_get_ns() sampled_ns()"
	}' probes/iowitness.bpf.c > "$work/iowitness.bpf.c"
cp probes/Makefile probes/events.h probes/*.bpf.h "$work/"
make -s -C "$work" OUT=build build/iowitness.bpf.o   # the probe's own build rule and flags
cp "$work/build/iowitness.bpf.o" "$object"
echo "probe with the clock read on 1 call in $every per CPU installed; the real one comes back on exit" >&2
.venv/bin/python scripts/bench/interleaved.py "$@"
