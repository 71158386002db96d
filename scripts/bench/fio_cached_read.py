#!/usr/bin/env python3
"""fio 4 KiB psync sequential reads from the page cache: untraced vs traced by iowitness.

Kept for its old command line; it is observers.py restricted to one workload and to
iowitness (full mode) and the floor. See observers.py for everything else.

Usage (as root, from the repository, after scripts/setup.sh):
  .venv/bin/python scripts/bench/fio_cached_read.py --rounds 5 --seconds 5
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5)
    args = parser.parse_args()
    script = Path(__file__).resolve().with_name("observers.py")
    os.execv(sys.executable, [sys.executable, str(script), "--workloads", "fio-seq-read",
                              "--observers", "floor,iowitness", "--rounds", str(args.rounds),
                              "--seconds", str(args.seconds)])


if __name__ == "__main__":
    sys.exit(main())
