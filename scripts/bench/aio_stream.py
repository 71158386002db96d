#!/usr/bin/env python3
"""The libaio kernel-completion columns over blocks (aio_kernel.figures_streamed) vs in memory
(aio_kernel.figures), on synthetic requests: time of each, and that they are identical.

Requests come 32 per io_submit (one start time, 32 offsets), each with its completion 3 µs
after it; one phase. No root needed.

Usage: .venv/bin/python scripts/bench/aio_stream.py --requests 1000000 --block-rows 100000
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd

from iowitness.analysis.phasing import aio_kernel
from iowitness.probes.layout import layout


class Blocks:
    def __init__(self, events: pd.DataFrame, phase: np.ndarray, rows: int):
        self.events, self.phase, self.rows = events, phase, rows

    def blocks(self):
        for at in range(0, len(self.events), self.rows):
            part = self.events.iloc[at:at + self.rows]
            yield part, pd.DataFrame({"phase": self.phase[at:at + self.rows]}, index=part.index)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--block-rows", type=int, default=100_000)
    args = parser.parse_args()
    k = np.arange(args.requests)
    start = 1_000_000 + (k // 32) * 10_000
    offset = (k % 32) * 4096
    events = pd.DataFrame({"syscall": pd.Categorical(["aio_read"] * len(k)), "tgid": 10, "tid": 11,
                           "start_ns": start, "offset": offset, "end_ns": start + 9_000})
    done = np.zeros(len(k), dtype=layout().structs["iow_block"])
    done["tgid"], done["tid"], done["start_ns"], done["sector"] = 10, 11, start, offset
    done["complete_ns"], done["op"] = start + 3_000, aio_kernel.AIO_DONE
    phase, phases = np.ones(len(k), dtype=np.int64), pd.DataFrame({"phase": [1]})
    begin = time.perf_counter()
    whole = aio_kernel.figures(phases, events, phase, done)
    middle = time.perf_counter()
    streamed = aio_kernel.figures_streamed(phases, Blocks(events, phase, args.block_rows), done)
    end = time.perf_counter()
    pd.testing.assert_frame_equal(whole, streamed, check_exact=True)
    print(f"{len(k):,} requests: in memory {middle - begin:.2f} s, in blocks of {args.block_rows:,} "
          f"{end - middle:.2f} s, identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
