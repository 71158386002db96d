#!/bin/bash
# IOzone -i0 -i1 -i2 and its replay, each left to the scheduler and held to one CPU (taskset; the
# player by a wrapper put in the native player's place, the real one put back after), alternating
# round after round. Read each run's phases with scripts/bench/replay_read_cpu.py's medians, e.g.
#   .venv/bin/python -c 'import sys; sys.path.insert(0, "scripts/bench"); import replay_read_cpu as r; print(r.medians(sys.argv[1]))' WORK/rep-free-0.iwt
# (replay31k's slot: the replay free 1,131 and 1,267 ns a read, median over 6 and 12 runs; held 1,046
# and 1,092; IOzone free 1,057 and 1,076, held 1,021 and 1,121)
# Usage: sudo scripts/bench/replay_pin_ab.sh WORK [ROUNDS]   (run from the repository's root)
set -e
E=$1; ROUNDS=${2:-6}
[ -n "$E" ] || { echo "usage: sudo scripts/bench/replay_pin_ab.sh WORK [ROUNDS]" >&2; exit 2; }
rm -rf "$E"; mkdir -p "$E/data"; I=$PWD/.venv/bin/iowitness
NP=$(.venv/bin/python -c "from iowitness.commands.replay import NATIVE_PLAYER; print(NATIVE_PLAYER)")
cp "$NP" "$E/real-player"
trap 'cp "$E/real-player" "$NP"' EXIT
IZ="iozone -i0 -i1 -i2 -s 32m -r 4k -f $E/data/iozone.tmp"
orig() { rm -rf "$E/data"; mkdir -p "$E/data"; $I run -q -o "$1" --file "$E/data" -- $2 $IZ > /dev/null 2>&1; }
rep() { if [ -n "$2" ]; then printf '#!/bin/sh\nexec taskset -c %s %s "$@"\n' "$2" "$E/real-player" > "$NP"; chmod +x "$NP"; fi
        rm -rf "$E/into"; $I replay -q "$E/o.iwt" --into "$E/into" -o "$1" > /dev/null 2>&1; cp "$E/real-player" "$NP"; rm -rf "$E/into"; }
orig "$E/o.iwt" ""
for k in $(seq 0 $((ROUNDS - 1))); do c=$((k % 2))
  orig "$E/orig-free-$k.iwt" ""; rep "$E/rep-free-$k.iwt" ""; rep "$E/rep-pin$c-$k.iwt" $c; orig "$E/orig-pin$c-$k.iwt" "taskset -c $c"
  echo "round $k $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
done
