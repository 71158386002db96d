#!/usr/bin/env python3
"""`iowitness report TRACE --csv` on a synthetic 10-million-event trace: wall time and peak memory.

The trace is written with the collector's own TraceWriter, record for record in the probe's
layout, and shaped like IOzone in throughput mode with processes (`iozone -t 4 -i0 -i1 -i2
-r 4k`, run ROUNDS times): per round and test, four child processes start together, each
opens its own file, makes its data calls (random tests: an lseek before each), fsyncs and
closes; a FILE fact per open names the file, as the probe's side ring does. Events are
written in time order, in chunks of 32 Ki records (what the collector drains in about
0.1 s at 300 k events/s).

Each run is a fresh process; its peak resident memory is the kernel's ru_maxrss for that
process (os.wait4), its wall time includes Python start-up. Prints the median and range.
The process runs as a user's would: with its modules' bytecode written beforehand and without
PYTHONDONTWRITEBYTECODE (which this machine's shells export: with it, every run compiled all
~155 modules again, ~1.5 CPU-s).

Usage (from the repository, no root needed):
  .venv/bin/python scripts/bench/report_10m.py --runs 3
  .venv/bin/python scripts/bench/report_10m.py --trace /tmp/big.iwt --keep --runs 1
  .venv/bin/python scripts/bench/report_10m.py --trace /tmp/big.iwt --reuse --profile 25
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.probes.layout import layout

IOWITNESS = [sys.executable, "-m", "iowitness.cli"]
TARGET_SECONDS = 10.0
# Python's own switch: this machine's shells export it, and a timed process that inherits it
# compiles all ~155 modules again (~1.5 CPU-s a run) where a user's installed package has its bytecode
NO_BYTECODE = "PYTHONDONTWRITEBYTECODE"
TARGET_BYTES = 3 * 2**30

RECORD = 4096
CHUNK_EVENTS = 32 * 1024
DEV = (254 << 20) | 0          # kernel encoding of 254:0 (a virtio disk)
EXT4_MAGIC = 0xEF53
O_RDWR, O_CREAT = 0o2, 0o100
SEEK_SET = 0
# IOzone -i0 -i1 -i2 in its order: (name, direction, random?)
TESTS = [("write", "write", False), ("rewrite", "write", False), ("read", "read", False),
         ("reread", "read", False), ("random read", "read", True), ("random write", "write", True)]


def _ops() -> dict[str, int]:
    return {name: code for code, name in layout().names("iow_op", "IOW_OP_").items()}


def child_pass(rng, *, tgid: int, ino: int, start_ns: int, records: int, direction: str, random: bool) -> np.ndarray:
    """One child's pass over its file: openat, data calls (lseek + call when random), fsync, close."""
    op = _ops()
    data_op = op[direction]
    calls = records * (2 if random else 1)
    n = calls + 3
    ev = np.zeros(n, dtype=layout().event)
    kinds = np.empty(n, dtype=np.uint16)
    kinds[0], kinds[-2], kinds[-1] = op["openat"], op["fsync"], op["close"]
    offsets = (rng.permutation(records) if random else np.arange(records)).astype(np.int64) * RECORD
    if random:
        kinds[1:-2:2], kinds[2:-2:2] = op["lseek"], data_op
    else:
        kinds[1:-2] = data_op
    # latencies in ns: page-cache data calls of a few µs with a long tail, lseek ~0.1 µs
    latency = np.empty(n, dtype=np.int64)
    body = kinds[1:-2]
    latency[1:-2] = np.where(body == op["lseek"], 120,
                             (rng.lognormal(np.log(1500 if direction == "write" else 900), 0.5, len(body))).astype(np.int64))
    latency[0], latency[-2], latency[-1] = 20_000, int(rng.integers(2, 15)) * 1_000_000, 5_000
    gap = rng.integers(150, 400, n)          # user time between two calls
    start = start_ns + np.concatenate([[0], np.cumsum(latency[:-1] + gap[:-1])])
    ev["start_ns"], ev["latency_ns"], ev["op"] = start, latency, kinds
    ev["tgid"], ev["tid"], ev["dev"], ev["ino"], ev["fd"] = tgid, tgid, DEV, ino, 3
    ev["offset"] = -1
    ev["requested"] = 0
    ev["ret"] = 0
    ev["ret"][0], ev["flags"][0] = 3, (O_RDWR | O_CREAT) if direction == "write" else 0  # read: O_RDONLY
    if random:
        ev["requested"][1:-2:2] = offsets          # lseek: its offset argument, whence SEEK_SET
        ev["ret"][1:-2:2] = offsets
        ev["flags"][1:-2:2] = SEEK_SET
        data = slice(2, -2, 2)
    else:
        data = slice(1, -2)
    ev["offset"][data] = offsets
    ev["requested"][data] = RECORD
    ev["ret"][data] = RECORD
    return ev


def file_fact(*, tgid: int, ino: int, ts_ns: int, path: str) -> np.ndarray:
    fact = np.zeros(1, dtype=layout().meta)
    kinds = {name: code for code, name in layout().names("iow_meta_kind", "IOW_META_").items()}
    fact["ts_ns"], fact["ino"], fact["kind"], fact["tgid"] = ts_ns, ino, kinds["file"], tgid
    fact["dev"], fact["fd"], fact["dirfd"], fact["s_magic"] = DEV, 3, -100, EXT4_MAGIC
    fact["comm"][0, :6] = np.frombuffer(b"iozone", np.uint8)
    raw = path.encode()
    fact["path"][0, :len(raw)] = np.frombuffer(raw, np.uint8)
    return fact


def build_trace(path: Path, events: int, children: int, rounds: int, seed: int = 1) -> int:
    """Write the synthetic trace; returns the number of events written."""
    rng = np.random.default_rng(seed)
    per_child_round = events / (children * rounds)
    # per child and round: 4 sequential passes of R calls and 2 random ones of 2R, plus 3 calls each
    records = max(1, int((per_child_round - 18) // 8))
    files = [f"/mnt/bench/iozone.f{i}" for i in range(children)]
    command = ["iozone", "-t", str(children), "-i0", "-i1", "-i2", "-s", f"{records * RECORD // 1024}k",
               "-r", "4k", "-F", *files]
    start_meta = {"iowitness_version": "synthetic", "mode": "run", "command": command,
                  "host": "synthetic", "kernel": "synthetic", "targets": [],
                  "clock_start": {"monotonic_ns": 10**12, "realtime_ns": 0, "offset_ns": 0}}
    written, now, tgid = 0, 10**12 + 10**9, 50_000
    with TraceWriter(path, start_meta) as writer:
        for _ in range(rounds):
            for _, direction, random in TESTS:
                passes, facts = [], []
                for c in range(children):
                    tgid += 1
                    begin = now + int(rng.integers(0, 200_000))     # children start within 0.2 ms
                    passes.append(child_pass(rng, tgid=tgid, ino=1000 + c, start_ns=begin, records=records,
                                             direction=direction, random=random))
                    facts.append(file_fact(tgid=tgid, ino=1000 + c, ts_ns=begin, path=files[c]))
                writer.write_facts(np.concatenate(facts))
                block = np.concatenate(passes)
                block = block[np.argsort(block["start_ns"], kind="stable")]
                for at in range(0, len(block), CHUNK_EVENTS):
                    writer.write_events(block[at:at + CHUNK_EVENTS])
                written += len(block)
                now = int(block["start_ns"][-1] + block["latency_ns"][-1]) + 2 * 10**9  # IOzone: sync; sleep 2
        writer.write_counters({"events": written, "lost_events": 0, "lost_meta": 0})
        writer.close({"exit_code": 0, "stopped": "the command exited",
                      "clock_end": {"monotonic_ns": now, "realtime_ns": 0, "offset_ns": 0}})
    return written


def user_environment(**extra: str) -> dict[str, str]:
    """This process's environment as a user's shell has it, plus `extra`: without
    PYTHONDONTWRITEBYTECODE, so a timed iowitness process reads its modules' bytecode."""
    return {**{k: v for k, v in os.environ.items() if k != NO_BYTECODE}, **extra}


def write_bytecode(checkout: Path) -> None:
    """Compile checkout's modules once, untimed (what installing a package does), so that
    no timed run pays for it: with its own Python, whose version tags the bytecode."""
    python = checkout / ".venv/bin/python"
    packages = [str(d) for d in sorted(checkout.iterdir()) if (d / "__init__.py").exists() and d.name != "tests"]
    subprocess.run([str(python if python.exists() else sys.executable), "-m", "compileall", "-q", *packages],
                   check=True, stdout=subprocess.DEVNULL, env=user_environment())


def measure(trace: Path) -> tuple[float, int, int]:
    """One `iowitness report TRACE --csv` in a fresh process: (wall seconds, peak RSS bytes, CSV lines)."""
    with tempfile.TemporaryFile() as out:
        begin = time.perf_counter()
        proc = subprocess.Popen([*IOWITNESS, "report", str(trace), "--csv"], stdout=out, stderr=subprocess.PIPE,
                                env=user_environment())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - begin
        proc.returncode = os.waitstatus_to_exitcode(status)
        stderr = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
        if proc.returncode != 0:
            sys.exit(f"iowitness report exited {proc.returncode}:\n{stderr}")
        out.seek(0)
        lines = out.read().count(b"\n")
    return wall, usage.ru_maxrss * 1024, lines   # ru_maxrss: KiB on Linux


def profile(trace: Path, top: int) -> None:
    """What `report --csv` spends its time on, in this process (cProfile, by own time)."""
    from iowitness.analysis.read.run import load
    from iowitness.reporters import machine

    profiler = cProfile.Profile()
    profiler.enable()
    report = load(trace).report()
    machine.to_csv(report)
    profiler.disable()
    for order in ("cumulative", "tottime"):
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(top)
        print(f"\n--- by {order} ---")
        print(text.getvalue()[text.getvalue().find("   ncalls"):])


def add_trace_options(parser: argparse.ArgumentParser, runs: int = 3) -> None:
    """The options every script over this synthetic trace takes (see synthetic_trace)."""
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--children", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--runs", type=int, default=runs)
    parser.add_argument("--trace", type=Path, help="where to write the trace (default: a temporary file)")
    parser.add_argument("--reuse", action="store_true", help="use the trace at --trace as it is")
    parser.add_argument("--keep", action="store_true", help="keep the trace afterwards")


@contextlib.contextmanager
def synthetic_trace(args):
    """The trace add_trace_options asked for: written (and said so), or reused; removed
    afterwards unless kept or reused."""
    trace = args.trace or Path(tempfile.mkdtemp(prefix="iowitness-bench-")) / "synthetic.iwt"
    if not args.reuse:
        begin = time.perf_counter()
        n = build_trace(trace, args.events, args.children, args.rounds)
        print(f"wrote {n:,} events ({trace.stat().st_size / 2**20:,.0f} MiB, "
              f"{trace.stat().st_size / n:.2f} bytes/event) to {trace} "
              f"in {time.perf_counter() - begin:.1f} s", flush=True)
    try:
        yield trace
    finally:
        if not args.keep and not args.reuse:
            trace.unlink()
            if args.trace is None:
                trace.parent.rmdir()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_options(parser)
    parser.add_argument("--profile", type=int, metavar="N", default=0,
                        help="also profile one report in-process and print the top N functions")
    args = parser.parse_args()

    walls, peaks = [], []
    write_bytecode(Path(__file__).resolve().parents[2])
    with synthetic_trace(args) as trace:
        for i in range(args.runs):
            wall, peak, lines = measure(trace)
            walls.append(wall)
            peaks.append(peak)
            print(f"run {i + 1}: {wall:6.2f} s  peak RSS {peak / 2**30:5.2f} GiB  ({lines - 1} phases in the CSV)",
                  flush=True)
        if args.profile:
            profile(trace, args.profile)

    def line(name, values, fmt, target):
        median = statistics.median(values)
        verdict = "meets" if median < target else "MISSES"
        print(f"{name:22} median {fmt(median)}  range {fmt(min(values))} .. {fmt(max(values))}  "
              f"({verdict} the target, under {fmt(target)})")
    if not walls:
        return 0
    print(f"\niowitness report --csv, {args.runs} runs")
    line("wall time", walls, lambda v: f"{v:.2f} s", TARGET_SECONDS)
    line("peak resident memory", peaks, lambda v: f"{v / 2**30:.2f} GiB", TARGET_BYTES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
