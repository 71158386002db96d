"""A sweep of many small dd runs written by the real trace writer, with everything known.

Recording a hundred real runs takes minutes; the dataset tests need a hundred runs whose every
figure is known, not a hundred recordings. Each run here is what `dd bs=64k count=N` leaves in
a trace (open, N writes back to back, close; dd's summary line as its output), written by
collector/tracewriter.TraceWriter as the collector writes one. The run's host, file system,
start time, call latency and whether dd's printed rate is true vary with its number, so a
query over the dataset has an answer computed here, from the plan, not from iowitness.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.probes.layout import layout
from tests.support.synthetic import DEV, O_CREAT, O_TRUNC, O_WRONLY, Calls, event_records

BS = 65536
HOSTS = ("node-a", "node-b", "node-c")
FILE_SYSTEMS = ("ext4", "xfs", "btrfs")
EPOCH_NS = 1_790_000_000 * 10**9      # the first run's wall-clock start
MONOTONIC_NS = 5 * 10**12


@dataclass(frozen=True)
class Planned:
    number: int
    host: str
    fs_type: str
    count: int             # writes of BS bytes
    latency_ns: int        # of each write
    lies: bool             # dd's printed time is a tenth of the real one
    wall_start_ns: int

    @property
    def seconds(self) -> float:
        return self.count * self.latency_ns / 1e9

    @property
    def wall_Bps(self) -> float:
        return self.count * BS / self.seconds


def plan(n: int) -> list[Planned]:
    """n runs, an hour apart; run k lies when k % 10 == 7 (and a later one of its kind does not)."""
    return [Planned(k, HOSTS[k % 3], FILE_SYSTEMS[(k // 3) % 3], 40 + k % 17, 20_000 + 1000 * (k % 23),
                    k % 10 == 7, EPOCH_NS + k * 3600 * 10**9) for k in range(n)]


def _records(run: Planned) -> np.ndarray:
    calls = Calls(tgid=1000 + run.number, latency=run.latency_ns, start_ns=MONOTONIC_NS)
    calls.open(f"/data/{run.fs_type}/f", O_WRONLY | O_CREAT | O_TRUNC, latency=10_000)
    for _ in range(run.count):
        calls.write(BS)
    frame = calls.close(latency=5000).frame()
    return event_records(frame)


def _text(value: str, size: int) -> np.ndarray:
    out = np.zeros(size, np.uint8)
    raw = value.encode()[:size - 1]
    out[:len(raw)] = np.frombuffer(raw, np.uint8)
    return out


def write(run: Planned, path: Path) -> None:
    lay = layout()
    events = _records(run)
    first, ino = int(events["start_ns"][0]), int(events["ino"][0])
    clock = {"monotonic_ns": first - 10**6, "realtime_ns": run.wall_start_ns,
             "offset_ns": run.wall_start_ns - (first - 10**6)}
    command = ["dd", "if=/dev/zero", f"of=/data/{run.fs_type}/f", "bs=64k", f"count={run.count}"]
    start = {"mode": "run", "command": command, "cwd": "/data", "host": run.host, "kernel": "Linux 6.18",
             "clock_start": clock, "targets": [], "summary_mode": False}
    facts = np.zeros(1, lay.meta)
    facts["kind"] = [k for k, n in lay.names("iow_meta_kind", "IOW_META_").items() if n == "file"]
    facts["ts_ns"], facts["tgid"], facts["dev"], facts["ino"] = first, 1000 + run.number, DEV, ino
    facts["comm"] = _text("dd", facts["comm"].shape[1])
    facts["path"][0] = _text(f"/data/{run.fs_type}/f", 256)
    printed_s = run.seconds / (10 if run.lies else 1)
    output = (f"{run.count}+0 records in\n{run.count}+0 records out\n"
              f"{run.count * BS} bytes copied, {printed_s:.9f} s, {run.count * BS / printed_s / 1e6:.1f} MB/s\n")
    end_ns = int(events["start_ns"][-1] + events["latency_ns"][-1]) + 10**6
    counters = {"events": len(events), "facts": 1, "lost_events": 0, "lost_meta": 0}
    with TraceWriter(path, start) as writer:
        writer.write_facts(facts)
        writer.write_events(events)
        writer.write_output("stderr", output.encode())
        writer.write_counters(counters)
        writer.close({"clock_end": {**clock, "monotonic_ns": end_ns}, "stop_reason": "the command exited",
                      "exit_code": 0, "pid": 1000 + run.number, "counters": counters,
                      "files": [{"dev": DEV, "ino": ino, "path": f"/data/{run.fs_type}/f", "device": "8:1",
                                 "fs_type": run.fs_type, "mount_point": f"/data/{run.fs_type}"}]})
