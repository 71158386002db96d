#!/usr/bin/env bash
# kernel_tier_time.sh — the kernel tier as scripts/test.sh runs it (two processes for the files
# that may run side by side, then the `serial` files alone), timed part by part, with the load
# average before and after each part; optionally with N CPU hogs (`yes > /dev/null`) running
# throughout, killed at the end by their pids. As root, in a worktree set up by scripts/setup.sh.
# --procs P runs the side-by-side part on P processes (scripts/test.sh's count by default);
# --parallel-only leaves the serial part out. Each part's CPU time is its processes' user + sys
# seconds (GNU time, /usr/bin/time: pytest, its workers, every benchmark and collector they
# waited for), which on a shared machine says more than the wall time.
#
#   sudo scripts/bench/kernel_tier_time.sh [--hogs N] [--procs P] [--parallel-only] [--out DIR]
#
# Writes DIR/summary (one line per part: exit code, seconds, CPU-s, load averages), DIR/parallel.log and
# DIR/serial.log (each with every test's duration, --durations=0) and the JUnit XML of each.
set -uo pipefail
cd "$(dirname "$0")/../.."
hogs=0
procs=$(sed -n 's/.*pytest -n \([0-9]*\) --dist loadfile -m "not serial".*tests\/kernel$/\1/p' scripts/test.sh)
serial=1
out=$(mktemp -d /tmp/kernel-tier-time-XXXX)
while [ $# -gt 0 ]; do
    case "$1" in
        --hogs) hogs=$2; shift 2 ;;
        --procs) procs=$2; shift 2 ;;
        --parallel-only) serial=0; shift ;;
        --out) out=$2; mkdir -p "$out"; shift 2 ;;
        *) echo "kernel_tier_time.sh: unknown argument $1 (--hogs N, --procs P, --parallel-only, --out DIR)" >&2; exit 2 ;;
    esac
done
pids=()
for _ in $(seq 1 "$hogs"); do
    timeout 3600 sh -c 'yes > /dev/null' &
    pids+=($!)
done
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done' EXIT
summary=$out/summary
echo "hogs $hogs, procs $procs, start $(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)" > "$summary"
part() {
    local name=$1; shift
    local start=$SECONDS before code user sys
    before=$(cut -d' ' -f1-3 /proc/loadavg)
    # GNU time: the user and sys seconds of pytest and of every process it waited for (its workers,
    # and each benchmark and collector they waited for)
    /usr/bin/time -f "%U %S" -o "$out/$name.cpu" \
        .venv/bin/python -m pytest -p no:cacheprovider --durations=0 --junitxml="$out/$name.xml" "$@" \
        > "$out/$name.log" 2>&1
    code=$?
    read -r user sys < <(tail -1 "$out/$name.cpu")
    echo "$name: exit $code, $((SECONDS - start)) s, CPU $user user-s + $sys sys-s, load before $before, after $(cut -d' ' -f1-3 /proc/loadavg)" >> "$summary"
}
total=$SECONDS
part parallel -n "$procs" --dist loadfile -m "not serial" tests/kernel
[ "$serial" -eq 0 ] || part serial -m serial tests/kernel
echo "kernel tier: $((SECONDS - total)) s, end $(date -u +%T)" >> "$summary"
cat "$summary"
