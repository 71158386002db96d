#!/usr/bin/env bash
# cli_forks_time.sh — what tests/support/cli_forks.py saves: the same pytest run with every
# iowitness() call a fork of the warm server (IOWITNESS_TEST_FORKS=1) and a new Python each
# (IOWITNESS_TEST_FORKS=0), alternately, N pairs; per run its exit code, wall seconds, CPU seconds
# (user + system of pytest and every process it waited for: /usr/bin/time) and the load average.
# As root for kernel files, in a worktree set up by scripts/setup.sh.
#
#   sudo scripts/bench/cli_forks_time.sh [--pairs N] [-- PYTEST ARGS]
#   sudo scripts/bench/cli_forks_time.sh --pairs 2 -- tests/kernel/test_exit_codes.py
#
# Prints one line per run, then the medians and ranges of each mode.
set -uo pipefail
cd "$(dirname "$0")/../.."
pairs=1
while [ $# -gt 0 ]; do
    case "$1" in
        --pairs) pairs=$2; shift 2 ;;
        --) shift; break ;;
        *) echo "cli_forks_time.sh: unknown argument $1 (--pairs N, then -- PYTEST ARGS)" >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] || { echo "cli_forks_time.sh: say which tests to run, after --" >&2; exit 2; }
results=$(mktemp /tmp/cli-forks-time-XXXX)
for i in $(seq 1 "$pairs"); do
    for mode in 1 0; do
        load=$(cut -d' ' -f1 /proc/loadavg)
        timing=$(mktemp)
        IOWITNESS_TEST_FORKS=$mode /usr/bin/time -f "%e %U %S" -o "$timing" \
            .venv/bin/python -m pytest -q -p no:cacheprovider "$@" > /dev/null 2>&1
        code=$?
        read -r wall user sys < "$timing"
        rm -f "$timing"
        cpu=$(echo "$user + $sys" | bc)
        echo "forks=$mode exit $code wall $wall s cpu $cpu s load $load" | tee -a "$results"
    done
done
for mode in 1 0; do
    for what in wall cpu; do
        grep "^forks=$mode " "$results" | sed -E "s/.* $what ([0-9.]+) s.*/\1/" | sort -n |
            awk -v m="$mode" -v w="$what" '{v[NR]=$1} END {printf "forks=%s %s: median %.1f s, range %.1f-%.1f s (%d runs)\n", m, w, (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2), v[1], v[NR], NR}'
    done
done
rm -f "$results"
