#!/usr/bin/env bash
# reports_identical.sh — guard a change that must not change behaviour: record real traces
# once, write every report of them before and after the change, and diff the two.
#
#   sudo scripts/bench/reports_identical.sh record DIR        # real runs -> DIR/*.iwt
#   sudo scripts/bench/reports_identical.sh record-loop DIR   # the loop-device runs alone
#   scripts/bench/reports_identical.sh report DIR OUT         # each report of each trace -> OUT/
#   IOWITNESS=OLD/.venv/bin/iowitness scripts/bench/reports_identical.sh report DIR OUT_BEFORE   # an old checkout
#   diff -r OUT_BEFORE OUT_AFTER && echo identical
#
# The runs: IOzone (single run with and without -e, -a sweep, -t throughput mode, --summary),
# fio (two jobs, JSON), dd, and the home-made stdio benchmark with its spec, in /var/tmp (its
# disk's device view: BLOCK and OFF-CPU records, other programs' requests beside them); and on
# an ext4 loop device of their own: fio O_DIRECT random writes then reads, fio libaio O_DIRECT
# reads (the kernel's completions), dd O_DIRECT with fsync (the journal's flush sequences).
# Reports: show, show --block, report (text, --json, --csv, --markdown, --html, --interval 100ms),
# export --perfetto, check (text), compare of the IOzone pair and of the two loop-device fio runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
iw=${IOWITNESS:-.venv/bin/iowitness}   # IOWITNESS: another checkout's, for its reports

record() {
    local dir=$1 work
    mkdir -p "$dir"
    work=$(mktemp -d /var/tmp/iw-identical.XXXXXX)
    trap 'rm -rf "$work"; trap - RETURN' RETURN
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

record_loop() {
    local dir=$1 work loop
    work=$(mktemp -d /var/tmp/iw-identical-loop.XXXXXX)
    truncate -s 256M "$work/disk.img"
    loop=$(losetup -f --show "$work/disk.img")
    # the mount and the loop device go even when a run fails
    # (a RETURN trap outlives its function in bash: each one clears itself)
    trap 'umount "$work/mnt" 2>/dev/null || true; losetup -d "$loop" 2>/dev/null || true; rm -rf "$work"; trap - RETURN' RETURN
    mkfs.ext4 -q "$loop"
    mkdir "$work/mnt"
    mount "$loop" "$work/mnt"
    $iw run -q -o "$dir/loop_fio.iwt" -- fio --output-format=json --directory="$work/mnt" --size=16m --bs=4k \
        --direct=1 --name=w --rw=randwrite --name=r --rw=randread --stonewall
    $iw run -q -o "$dir/loop_aio.iwt" -- fio --output-format=json --directory="$work/mnt" --size=16m --bs=4k \
        --direct=1 --ioengine=libaio --iodepth=16 --name=r --rw=randread
    $iw run -q -o "$dir/loop_dd.iwt" -- dd if=/dev/zero of="$work/mnt/dd.out" bs=1M count=32 oflag=direct conv=fsync
}

report() {
    local dir=$1 out=$2 t name
    mkdir -p "$out"
    for t in "$dir"/*.iwt; do
        name=$(basename "$t" .iwt)
        local spec=()
        [ "$name" = stdio ] && spec=(--spec tests/data/claims/spec/stdio_bench.toml)
        $iw show "$t" > "$out/$name.show" 2>&1 || echo "exit $?" >> "$out/$name.show"
        $iw show --block "$t" > "$out/$name.block" 2>&1 || echo "exit $?" >> "$out/$name.block"
        $iw report "${spec[@]}" --html "$out/$name.html" "$t" > /dev/null 2>&1 || echo "exit $?" >> "$out/$name.html"
        $iw report --interval 100ms "$t" > "$out/$name.interval" 2>&1 || echo "exit $?" >> "$out/$name.interval"
        $iw export "$t" --perfetto "$out/$name.pftrace" > /dev/null 2>&1 || echo "exit $?" >> "$out/$name.pftrace"
        $iw report "${spec[@]}" "$t" > "$out/$name.txt" 2>&1 || echo "exit $?" >> "$out/$name.txt"
        $iw report "${spec[@]}" --json "$t" > "$out/$name.json" 2>&1 || echo "exit $?" >> "$out/$name.json"
        $iw report "${spec[@]}" --csv "$t" > "$out/$name.csv" 2>&1 || echo "exit $?" >> "$out/$name.csv"
        $iw report "${spec[@]}" --markdown "$t" > "$out/$name.md" 2>&1 || echo "exit $?" >> "$out/$name.md"
        $iw check "${spec[@]}" "$t" > "$out/$name.check" 2>&1 || echo "exit $?" >> "$out/$name.check"
    done
    $iw compare "$dir/iozone.iwt" "$dir/iozone_e.iwt" > "$out/compare.txt" 2>&1 || echo "exit $?" >> "$out/compare.txt"
    if [ -e "$dir/loop_fio.iwt" ]; then
        $iw compare "$dir/loop_fio.iwt" "$dir/loop_aio.iwt" > "$out/compare_loop.txt" 2>&1 \
            || echo "exit $?" >> "$out/compare_loop.txt"
    fi
}

case "${1:-}" in
    record) record "$2" && record_loop "$2" ;;
    record-loop) record_loop "$2" ;;
    report) report "$2" "$3" ;;
    *) echo "usage: $0 record DIR | record-loop DIR | report DIR OUT" >&2; exit 2 ;;
esac
