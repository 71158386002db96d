"""Tables of a --summary trace: the kernel's aggregates instead of per-call events.

A summary trace holds one row per (process, file, phase, syscall): calls, errors, short
calls, bytes, latency sum and maximum, first entry and last exit, calls that continued where
the previous one ended, and a log2 latency histogram (probes/events.h, struct iow_summary).
A phase is the stretch of a file between two of its opens, closes, fsyncs or fdatasyncs, as
the probe numbered them.

What such a trace cannot give, and the reports say so: per-call outliers, exact latency
percentiles (the histogram gives each to within a factor of two: the upper edge of its bin is
shown), access patterns other than the share of sequential calls, user-space gaps between
calls, re-read and re-write detection, and claim verdicts (they need the phases' per-call
timing windows).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness.analysis.phasing.phases import READS, SYNCS, WRITES

UNAVAILABLE = [
    "per-call outliers (no record per call)",
    "exact latency percentiles (log2 histogram: the upper edge of the bin is shown)",
    "access patterns beyond the share of sequential calls",
    "user-space gaps between calls",
    "re-read and re-write detection",
    "claim verdicts (they need per-call timing windows)",
]


def rows(trace) -> pd.DataFrame:
    """The summary rows with names: syscall, path, and the histogram as an array column."""
    summary = trace.summary
    frame = pd.DataFrame({name: summary[name] for name in summary.dtype.names if name != "hist"})
    frame["syscall"] = [trace._ops.get(int(op), f"op{op}") for op in summary["op"]]
    paths = {}
    files = trace.files
    for f in files.itertuples():
        paths[(int(f.dev), int(f.ino))] = f.path
    frame["path"] = [paths.get((int(d), int(i)), f"inode {i}") for d, i in zip(summary["dev"], summary["ino"])]
    frame["hist"] = list(summary["hist"])
    return frame


def percentile_upper_us(hist: np.ndarray, q: float) -> float:
    """The upper edge (µs) of the log2 bin that holds the q-th percentile call."""
    total = hist.sum()
    if not total:
        return float("nan")
    k = int(np.searchsorted(np.cumsum(hist), q / 100 * total))
    return 2.0 ** (k + 1) / 1e3


def _latency(group: pd.DataFrame) -> dict:
    hist = np.sum(np.stack(group["hist"].to_list()), axis=0)
    calls = int(group["calls"].sum())
    return {"mean_us": group["latency_ns"].sum() / calls / 1e3 if calls else float("nan"),
            "p50_max_us": percentile_upper_us(hist, 50), "p99_max_us": percentile_upper_us(hist, 99),
            "max_us": group["latency_max_ns"].max() / 1e3}


def syscall_table(frame: pd.DataFrame) -> pd.DataFrame:
    out = []
    for name, g in frame.groupby("syscall", sort=False):
        out.append({"syscall": name, "calls": int(g["calls"].sum()), "errors": int(g["errors"].sum()),
                    "bytes": int(g["bytes"].sum()), "short": int(g["short_calls"].sum()), **_latency(g)})
    table = pd.DataFrame(out)
    return table.sort_values("calls", ascending=False, kind="stable").reset_index(drop=True) if out else table


def phase_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per phase with data calls: process, file, phase number, direction, rates."""
    out = []
    keys = ["tgid", "dev", "ino", "epoch"]
    data = frame[frame["syscall"].isin(READS + WRITES)]
    syncs_of = frame[frame["syscall"].isin(SYNCS)].groupby(keys)[["calls", "latency_ns"]].sum()
    for key, g in data.groupby(keys, sort=True):
        tgid, epoch = key[0], key[3]
        syncs = syncs_of.loc[key] if key in syncs_of.index else {"calls": 0, "latency_ns": 0}
        reads = g["syscall"].isin(READS)
        operation = "read" if reads.all() else "write" if not reads.any() else "read+write"
        calls, nbytes = int(g["calls"].sum()), int(g["bytes"].sum())
        wall_s = (g["last_end_ns"].max() - g["first_start_ns"].min()) / 1e9
        busy_s = g["latency_ns"].sum() / 1e9
        out.append({"phase": len(out) + 1, "tgid": int(tgid), "path": g["path"].iloc[0], "boundary": int(epoch),
                    "operation": operation, "syscalls": " ".join(sorted(set(g["syscall"]))),
                    "calls": calls, "bytes": nbytes, "record_size": nbytes / calls if calls else 0.0,
                    "sequential_share": g["sequential"].sum() / calls if calls else float("nan"),
                    "errors": int(g["errors"].sum()), "short": int(g["short_calls"].sum()),
                    "first_ns": int(g["first_start_ns"].min()), "last_ns": int(g["last_end_ns"].max()),
                    "wall_Bps": nbytes / wall_s if wall_s > 0 else float("nan"),
                    "busy_Bps": nbytes / busy_s if busy_s > 0 else float("nan"),
                    "fsyncs": int(syncs["calls"]), "fsync_ns": int(syncs["latency_ns"]),
                    **_latency(g)})
    return pd.DataFrame(out)


def file_table(frame: pd.DataFrame) -> pd.DataFrame:
    reads = frame["syscall"].isin(READS)
    writes = frame["syscall"].isin(WRITES)
    table = pd.DataFrame({"path": frame["path"], "calls": frame["calls"],
                          "read_bytes": frame["bytes"].where(reads, 0),
                          "written_bytes": frame["bytes"].where(writes, 0)})
    return table.groupby("path", sort=False).sum().reset_index()


def process_table(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.groupby("tgid").agg(calls=("calls", "sum")).reset_index()
