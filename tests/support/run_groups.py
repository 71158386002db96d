"""Synthetic runs for compare of groups: traces of one file written call by call, each run's
call latencies drawn from a log-normal distribution whose median the test sets (so a test
knows the true change between two groups, and how much identical runs scatter)."""

from __future__ import annotations

import zlib

import numpy as np

from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.probes.layout import layout
from tests.support.synthetic import DEV, O_CREAT, O_TRUNC, O_WRONLY, Calls, event_records

CALLS = 400


def _text(value: str, size: int) -> np.ndarray:
    out = np.zeros(size, np.uint8)
    raw = value.encode()[:size - 1]
    out[:len(raw)] = np.frombuffer(raw, np.uint8)
    return out


def write_run(path, median_ns: float, seed: int, sigma: float = 0.3, calls: int = CALLS,
              name: str = "/data/f", op: str = "write", host: str = "node-a") -> None:
    """GIVEN a run of `calls` 4 KiB writes (or reads: op="read") whose latencies scatter
    log-normally around `median_ns`, on `host`; each path a run of its own PID (so that each is a
    run of its own in a dataset: analysis/dataset.run_id)."""
    rng = np.random.default_rng(seed)
    latencies = np.maximum(1000, rng.lognormal(np.log(median_ns), sigma, calls)).astype(int)
    c = Calls().open(name, O_WRONLY | O_CREAT | O_TRUNC) if op == "write" else Calls().open(name, size=4096 * calls)
    for lat in latencies:
        getattr(c, op)(4096, latency=int(lat))
    frame = c.close().frame()
    events = event_records(frame)
    lay = layout()
    first = int(events["start_ns"][0])
    facts = np.zeros(1, lay.meta)
    facts["kind"] = [k for k, n in lay.names("iow_meta_kind", "IOW_META_").items() if n == "file"]
    facts["ts_ns"], facts["tgid"], facts["dev"] = first, 1000, DEV
    facts["ino"] = int(frame["ino"].iloc[0])
    facts["comm"] = _text("writer", facts["comm"].shape[1])
    facts["path"][0] = _text(name, 256)
    start = {"mode": "run", "command": ["writer", name], "cwd": "/data", "host": host, "kernel": "Linux 6.18",
             "targets": [], "summary_mode": False,
             "clock_start": {"monotonic_ns": first - 10**6, "realtime_ns": 0, "offset_ns": 0}}
    counters = {"events": len(events), "facts": 1, "lost_events": 0, "lost_meta": 0}
    with TraceWriter(path, start) as writer:
        writer.write_facts(facts)
        writer.write_events(events)
        writer.write_counters(counters)
        writer.close({"stop_reason": "the command exited", "exit_code": 0,
                      "pid": 1000 + zlib.crc32(str(path).encode()) % 30000, "counters": counters,
                      "files": [{"dev": DEV, "ino": int(facts["ino"][0]), "path": name, "device": "8:1",
                                 "fs_type": "xfs", "mount_point": "/data"}]})
