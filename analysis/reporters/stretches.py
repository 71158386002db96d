"""The in-call time of each open–close stretch of a file: how long the process spent inside
its calls on that file between opening and closing it, as the per-file DTrace scripts of the
first studies printed it (reads, writes, syncs, the rest), for the text, Markdown and HTML
reports. A stretch is phases.py's span: one open file description (an open to the last close
of its fds; a file open before tracing began starts at its first call)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from iowitness.analysis.phases import READS, SYNCS, WRITES
from iowitness.analysis.reporters.tables import with_units

TITLE = ("stretches (each open to close of a target file: time inside its calls, by kind; share = in calls / "
         "open to close; opened: since the trace's first call)")
# what a narrow terminal loses first, in this order
DROP = ("pid", "other", "sync", "opened", "calls", "phases")
UNITS = {"opened": ("seconds", "opened", False), "open": ("seconds", "open to close", False),
         "in calls": ("seconds", "in calls", False), "reads": ("seconds", "reads", True),
         "writes": ("seconds", "writes", True), "sync": ("seconds", "sync", True),
         "other": ("seconds", "other", True)}


def stretch_frame(report, trace) -> pd.DataFrame:
    """One row per stretch with any call, in the order they opened: raw numbers (ns, counts)."""
    events = trace.events
    if events.empty or "span" not in report.assigned:
        return pd.DataFrame()
    span = report.assigned["span"].to_numpy()
    keep = span >= 0
    if not keep.any():
        return pd.DataFrame()
    syscall = events["syscall"].astype(str).to_numpy()[keep]
    latency = events["latency_ns"].to_numpy(np.int64)[keep]
    kind = np.select([np.isin(syscall, READS), np.isin(syscall, WRITES), np.isin(syscall, SYNCS)],
                     ["reads", "writes", "sync"], "other")
    phase = report.assigned["phase"].to_numpy()[keep]
    frame = pd.DataFrame({"span": span[keep], "path": events["path"].to_numpy()[keep],
                          "tgid": events["tgid"].to_numpy()[keep], "start": events["start_ns"].to_numpy(np.int64)[keep],
                          "end": events["end_ns"].to_numpy(np.int64)[keep], "latency": latency, "kind": kind,
                          "phase": phase})
    by = frame.groupby("span", sort=False)
    out = by.agg(path=("path", "first"), tgid=("tgid", "first"), first=("start", "min"), last=("end", "max"),
                 calls=("latency", "size"), in_calls=("latency", "sum"))
    split = frame.pivot_table(index="span", columns="kind", values="latency", aggfunc="sum", fill_value=0)
    for k in ("reads", "writes", "sync", "other"):
        out[k] = split[k] if k in split else 0
    out["phases"] = by["phase"].agg(lambda p: " ".join(str(int(x)) for x in sorted(set(p)) if x > 0))
    return out.sort_values("first", kind="stable").reset_index()


def stretch_rows(report, trace) -> pd.DataFrame:
    """The stretches for people: one unit per column, said in its header."""
    raw = stretch_frame(report, trace)
    if raw.empty:
        return raw
    t0 = int(trace.events["start_ns"].min())
    rows = pd.DataFrame({
        "#": range(1, len(raw) + 1), "file": [os.path.basename(str(p)) for p in raw["path"]],
        "pid": raw["tgid"].astype(int).to_list(), "phases": raw["phases"],
        "opened": (raw["first"] - t0) / 1e9, "open": (raw["last"] - raw["first"]) / 1e9,
        "calls": raw["calls"].astype(int).to_list(), "in calls": raw["in_calls"] / 1e9,
        "share": [f"{c / w:.0%}" if w > 0 else "-" for c, w in zip(raw["in_calls"], raw["last"] - raw["first"])],
        "reads": raw["reads"] / 1e9, "writes": raw["writes"] / 1e9, "sync": raw["sync"] / 1e9,
        "other": raw["other"] / 1e9})
    return with_units(rows, UNITS)
