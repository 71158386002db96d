"""strace import speed on the command the docs recommend (docs/strace-import.md): strace lines
per second of CPU of `iowitness import`, whole process (start-up included), median and range.

The strace: fio, 4 KiB writes then random reads of 64 MiB, recorded with
`strace -f -ttt -T -y -s 4096` (every data buffer printed: about 16 KB a line) and, to compare,
with `-s 64`. Each import runs in a fresh process; its CPU is the kernel's (os.wait4).

    .venv/bin/python scripts/bench/strace_import.py --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

IOWITNESS = [sys.executable, "-m", "iowitness.cli"]
FIO = ["fio", "--name=w", "--rw=write", "--bs=4k", "--size=64m", "--ioengine=psync",
       "--name=r", "--stonewall", "--rw=randread", "--bs=4k", "--size=64m", "--ioengine=psync"]


def _cpu_of(argv: list[str]) -> float:
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, argv
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="iow-strace-bench-") as tmp:
        for size in ("4096", "64"):
            log = Path(tmp, f"s{size}.strace")
            subprocess.run(["strace", "-f", "-ttt", "-T", "-y", "-s", size, "-o", str(log), "--",
                            FIO[0], f"--filename={tmp}/f", *FIO[1:]], check=True, capture_output=True)
            lines = sum(1 for _ in log.open("rb"))
            rates = []
            for r in range(args.rounds):
                out = Path(tmp, f"s{size}-{r}.iwt")
                rates.append(lines / _cpu_of([*IOWITNESS, "import", str(log), "-o", str(out)]))
                out.unlink()
            print(f"strace -s {size}: {lines:,} lines, {log.stat().st_size / 2**20:,.0f} MiB; import "
                  f"{statistics.median(rates):,.0f} lines per CPU-second (range {min(rates):,.0f}–{max(rates):,.0f}, "
                  f"{args.rounds} rounds)")


if __name__ == "__main__":
    main()
