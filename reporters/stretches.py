"""The in-call time of each open–close stretch of a file: how long the process spent inside
its calls on that file between opening and closing it, as the per-file DTrace scripts of the
first studies printed it (reads, writes, syncs, the rest), for the text, Markdown and HTML
reports. A stretch is phases.py's span: one open file description (an open to the last close
of its fds; a file open before tracing began starts at its first call). The sums are
report.py's (stretch_calls, stretch_sums), gathered block by block (analysis/measure/stream_extras.py)."""

from __future__ import annotations

import os

import pandas as pd

from iowitness.reporters.tables import with_units

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
    return report.stretches if report.stretches is not None else pd.DataFrame()


def stretch_rows(report, trace) -> pd.DataFrame:
    """The stretches for people: one unit per column, said in its header."""
    raw = stretch_frame(report, trace)
    if raw.empty:
        return raw
    return rows_of(raw, report.t0)


def rows_of(raw: pd.DataFrame, t0: int) -> pd.DataFrame:
    """stretch_rows from stretch_frame's table and the trace's first start."""
    if raw.empty:
        return raw
    rows = pd.DataFrame({
        "#": range(1, len(raw) + 1), "file": [os.path.basename(str(p)) for p in raw["path"]],
        "pid": raw["tgid"].astype(int).to_list(), "phases": raw["phases"],
        "opened": (raw["first"] - t0) / 1e9, "open": (raw["last"] - raw["first"]) / 1e9,
        "calls": raw["calls"].astype(int).to_list(), "in calls": raw["in_calls"] / 1e9,
        "share": [f"{c / w:.0%}" if w > 0 else "-" for c, w in zip(raw["in_calls"], raw["last"] - raw["first"])],
        "reads": raw["reads"] / 1e9, "writes": raw["writes"] / 1e9, "sync": raw["sync"] / 1e9,
        "other": raw["other"] / 1e9})
    return with_units(rows, UNITS)
