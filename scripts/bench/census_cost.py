"""What END's chunk census costs (collector/format/tracecensus.py): the writer's walk of the chunk heads
at close (take) and the reader's comparison (gaps), on a trace of 100,000 small OUTPUT chunks,
the most chunks per byte a trace holds (an EVENTS chunk holds 8,192 events or more).

    .venv/bin/python scripts/bench/census_cost.py

Measured 2026-11-27 on the 2-core VM shared with 4 other sessions (5 runs each):
  take over 100,001 chunks: median 257 ms (239-280); gaps: median 139 ms (137-143);
  the whole read of that trace: median 627 ms (564-632). 2.5 us and 1.4 us per chunk.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

from iowitness.collector.format import tracecensus, tracereader
from iowitness.collector.format.traceformat import FORMAT_VERSION
from iowitness.collector.format.tracewriter import TraceWriter

CHUNKS, RUNS = 100_000, 5


def _figure(times: list[float]) -> str:
    return f"median {statistics.median(times) * 1e3:.0f} ms ({min(times) * 1e3:.0f}-{max(times) * 1e3:.0f})"


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "census.iwt")
        writer = TraceWriter(path, {"command": ["bench"]})
        for _ in range(CHUNKS):
            writer.write_output("stdout", b"x" * 40)
        writer.flush()
        takes = []
        for _ in range(RUNS):
            began = time.perf_counter()
            census = tracecensus.take(writer.fileno())
            takes.append(time.perf_counter() - began)
        writer.close({"exit_code": 0})
        data = memoryview(open(path, "rb").read())
        chunks = tracereader._good_chunks(data, FORMAT_VERSION)[0][:-1]
        gaps, reads = [], []
        for _ in range(RUNS):
            began = time.perf_counter()
            tracecensus.gaps(census, data, chunks)
            gaps.append(time.perf_counter() - began)
            began = time.perf_counter()
            tracereader.read(path)
            reads.append(time.perf_counter() - began)
        print(f"take over {len(chunks):,} chunks: {_figure(takes)}; gaps: {_figure(gaps)}; "
              f"whole read: {_figure(reads)}")


if __name__ == "__main__":
    main()
