#!/usr/bin/env python3
"""Exact per-phase latency percentiles: numpy vs DuckDB vs Polars vs block-wise radix select.

What the report computes per phase (p50, p90, p99, p99.9 of the data calls' latencies, in µs,
numpy's "linear" method), on N synthetic latencies over P phases (lognormal around 1.5 µs
with a tail, the shape of page-cache calls). Each engine runs in a fresh process; its peak
resident memory is the kernel's ru_maxrss for that process (os.wait4) and includes the input
arrays (N × 16 bytes) for the engines that need them all in memory. The radix select
(analysis/phasing/quantiles.py) regenerates the same values block by block (1 Mi calls per block,
each block from its own seed), so it never holds them all: what it would do over a trace's
blocks. "identical" says whether the figures equal numpy's bit for bit.

Usage (from the repository, no root needed; DuckDB and Polars are skipped when not installed):
  .venv/bin/python scripts/bench/percentiles.py --calls 50000000 --phases 300 --runs 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

PERCENTS = [50, 90, 99, 99.9]
BLOCK = 1 << 20
ENGINES = ("one-pass", "numpy", "duckdb", "polars", "radix-blocks")


def block(i: int, calls: int, phases: int) -> tuple[np.ndarray, np.ndarray]:
    """Block i of the synthetic calls: (phase, latency_ns); the same for every engine."""
    rng = np.random.default_rng(1000 + i)
    n = min(BLOCK, calls - i * BLOCK)
    # phases run one after another: a phase is a stretch of consecutive calls
    phase = ((i * BLOCK + np.arange(n)) * phases // calls).astype(np.int64)
    latency = rng.lognormal(np.log(1500), 0.5, n).astype(np.int64)
    tail = rng.random(n) < 0.001
    latency[tail] = rng.integers(10**5, 10**8, int(tail.sum()))
    return phase, latency


def blocks(calls: int, phases: int):
    return (block(i, calls, phases) for i in range(-(-calls // BLOCK)))


def whole(calls: int, phases: int) -> tuple[np.ndarray, np.ndarray]:
    parts = list(blocks(calls, phases))
    return np.concatenate([p for p, _ in parts]), np.concatenate([v for _, v in parts])


def by_numpy(calls: int, phases: int) -> np.ndarray:
    phase, latency = whole(calls, phases)
    # what analysis/phasing/phases.py does: calls in phase order, one np.percentile per phase
    order = np.argsort(phase, kind="stable")
    lat_us = latency[order] / 1e3
    bounds = np.searchsorted(phase[order], np.arange(phases + 1))
    return np.array([np.percentile(lat_us[a:b], PERCENTS) for a, b in zip(bounds[:-1], bounds[1:])])


def by_duckdb(calls: int, phases: int) -> np.ndarray:
    import duckdb
    phase, latency = whole(calls, phases)
    lat_us = latency / 1e3
    con = duckdb.connect()
    con.register("calls", {"phase": phase, "lat_us": lat_us})
    rows = con.execute("SELECT phase, quantile_cont(lat_us, [0.5, 0.9, 0.99, 0.999]) FROM calls "
                       "GROUP BY phase ORDER BY phase").fetchall()
    return np.array([r[1] for r in rows])


def by_polars(calls: int, phases: int) -> np.ndarray:
    import polars as pl
    phase, latency = whole(calls, phases)
    frame = pl.DataFrame({"phase": phase, "lat_us": latency / 1e3})
    out = frame.group_by("phase").agg([pl.col("lat_us").quantile(p / 100, interpolation="linear").alias(str(p))
                                       for p in PERCENTS]).sort("phase")
    return out.select([str(p) for p in PERCENTS]).to_numpy()


def by_one_pass(calls: int, phases: int) -> np.ndarray:
    """Making the blocks once and counting them: what every engine pays before computing
    (the radix select pays it once per pass, as it would decode a trace once per pass)."""
    count = np.zeros(phases, dtype=np.int64)
    for phase, _ in blocks(calls, phases):
        count += np.bincount(phase, minlength=phases)
    return np.full((phases, len(PERCENTS)), np.nan)


def by_radix(calls: int, phases: int) -> np.ndarray:
    from iowitness.analysis.phasing import quantiles
    return quantiles.percentiles(lambda: blocks(calls, phases), phases, PERCENTS)


def child(engine: str, calls: int, phases: int, out: str) -> None:
    run = {"one-pass": by_one_pass, "numpy": by_numpy, "duckdb": by_duckdb, "polars": by_polars, "radix-blocks": by_radix}[engine]
    begin = time.perf_counter()
    result = np.asarray(run(calls, phases), dtype=np.float64)
    print(f"{time.perf_counter() - begin:.3f}", flush=True)
    np.save(out, result)


def measure(engine: str, calls: int, phases: int, out: str) -> tuple[float, int]:
    proc = subprocess.Popen([sys.executable, __file__, "--child", engine, "--calls", str(calls),
                             "--phases", str(phases), "--out", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    text, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    proc.stdout.close()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(err.strip().splitlines()[-1] if err.strip() else f"{engine} failed")
    return float(text.strip().splitlines()[-1]), usage.ru_maxrss * 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50_000_000)
    parser.add_argument("--phases", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.calls, args.phases, args.out)
        return 0
    import tempfile
    folder = tempfile.mkdtemp(prefix="iowitness-pct-")
    reference = None
    print(f"{args.calls:,} calls over {args.phases} phases; compute time (in the process, after start-up) "
          f"and peak RSS of the whole process, median and range of {args.runs} runs")
    try:
        for engine in args.engines.split(","):
            out = os.path.join(folder, f"{engine}.npy")
            try:
                results = [measure(engine, args.calls, args.phases, out) for _ in range(args.runs)]
            except RuntimeError as exc:
                print(f"{engine:13} not measured: {exc}")
                continue
            got = np.load(out)
            if reference is None and engine == "numpy":
                reference = got
            if reference is None or engine == "one-pass":
                same = "n/a"
            elif got.tobytes() == reference.tobytes():
                same = "yes"
            else:
                same = f"no (max |diff| {np.nanmax(np.abs(got - reference)):.3g} µs)"
            walls, peaks = [r[0] for r in results], [r[1] / 2**30 for r in results]
            print(f"{engine:13} time {statistics.median(walls):7.2f} s ({min(walls):.2f} .. {max(walls):.2f})  "
                  f"peak RSS {statistics.median(peaks):5.2f} GiB ({min(peaks):.2f} .. {max(peaks):.2f})  "
                  f"identical to numpy: {same}", flush=True)
    finally:
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
