#!/usr/bin/env bash
# reports_identical.sh — guard a change that must not change behaviour: record real traces
# once, write every report of them before and after the change, and diff the two.
#
#   sudo scripts/bench/reports_identical.sh record DIR        # real runs -> DIR/*.iwt
#   scripts/bench/reports_identical.sh report DIR OUT         # each report of each trace -> OUT/
#   diff -r OUT_BEFORE OUT_AFTER && echo identical
#
# The runs: IOzone (single run with and without -e, -a sweep, -t throughput mode, --summary),
# fio (two jobs, JSON), dd, and the home-made stdio benchmark with its spec. Reports: show,
# report (text, --json, --csv, --markdown), check (text), compare of the IOzone pair. The
# HTML report is left out: it names the time it was written.
set -euo pipefail
cd "$(dirname "$0")/../.."
iw=.venv/bin/iowitness

record() {
    local dir=$1 work
    mkdir -p "$dir"
    work=$(mktemp -d /var/tmp/iw-identical.XXXXXX)
    trap 'rm -rf "$work"' RETURN
    $iw run -q -o "$dir/iozone.iwt" -- iozone -i0 -i1 -i2 -s 32m -r 64k -f "$work/iozone.tmp"
    $iw run -q -o "$dir/iozone_e.iwt" -- iozone -e -i0 -i1 -s 16m -r 4k -f "$work/iozone.tmp"
    $iw run -q -o "$dir/iozone_a.iwt" -- iozone -a -n 64k -g 1m -y 4k -q 64k -i0 -i1 -f "$work/iozone.tmp"
    $iw run -q -o "$dir/iozone_t.iwt" -- iozone -t 2 -i0 -i1 -s 8m -r 16k -F "$work/t1" "$work/t2"
    $iw run -q --summary -o "$dir/iozone_summary.iwt" -- iozone -i0 -i1 -s 16m -r 4k -f "$work/iozone.tmp"
    $iw run -q -o "$dir/fio.iwt" -- fio --output-format=json --directory="$work" --size=16m --bs=4k \
        --name=w --rw=write --name=r --rw=randread --stonewall
    $iw run -q -o "$dir/dd.iwt" -- dd if=/dev/zero of="$work/dd.out" bs=1M count=32 conv=fsync
    gcc -O1 -Wall -Werror -o "$work/stdio_bench" tests/data/claims/spec/stdio_bench.c
    $iw run -q -o "$dir/stdio.iwt" -- "$work/stdio_bench" "$work/stdio.dat"
}

report() {
    local dir=$1 out=$2 t name
    mkdir -p "$out"
    for t in "$dir"/*.iwt; do
        name=$(basename "$t" .iwt)
        local spec=()
        [ "$name" = stdio ] && spec=(--spec tests/data/claims/spec/stdio_bench.toml)
        $iw show "$t" > "$out/$name.show" 2>&1 || echo "exit $?" >> "$out/$name.show"
        $iw report "${spec[@]}" "$t" > "$out/$name.txt" 2>&1 || echo "exit $?" >> "$out/$name.txt"
        $iw report "${spec[@]}" --json "$t" > "$out/$name.json" 2>&1 || echo "exit $?" >> "$out/$name.json"
        $iw report "${spec[@]}" --csv "$t" > "$out/$name.csv" 2>&1 || echo "exit $?" >> "$out/$name.csv"
        $iw report "${spec[@]}" --markdown "$t" > "$out/$name.md" 2>&1 || echo "exit $?" >> "$out/$name.md"
        $iw check "${spec[@]}" "$t" > "$out/$name.check" 2>&1 || echo "exit $?" >> "$out/$name.check"
    done
    $iw compare "$dir/iozone.iwt" "$dir/iozone_e.iwt" > "$out/compare.txt" 2>&1 || echo "exit $?" >> "$out/compare.txt"
}

case "${1:-}" in
    record) record "$2" ;;
    report) report "$2" "$3" ;;
    *) echo "usage: $0 record DIR | report DIR OUT" >&2; exit 2 ;;
esac
