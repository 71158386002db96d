"""Active figures of a phase or of a group of phases, and how they are written for people.

  calls     first data call's start to last data call's end
  +fsync    the same, up to the end of the first fsync/fdatasync after the last data call
  +close    the same, up to the end of the first close after it
  busy      bytes over the time spent inside the data calls only (what the seed study's
            DTrace script summed, and why its figures came out higher than IOzone's)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness import units

WINDOWS = (("calls", None), ("+fsync", "sync_end_ns"), ("+close", "close_end_ns"))
# what the figures read of a phase row: taken apart from the table's ~70 columns before going
# row by row (itertuples of every column made a 210-claim IOzone sweep take 10 s)
ROW_COLUMNS = ("operation", "ops", "read_ops", "bytes", "read_bytes", "write_bytes", "data_first_ns",
               "data_last_ns", "sync_end_ns", "close_end_ns", "data_ns")


def rate(amount: float, start_ns: float, end_ns: float) -> float:
    seconds = (end_ns - start_ns) / 1e9
    return amount / seconds if seconds > 0 else float("nan")


def amount_of(r, direction: str | None, kind: str) -> float:
    """Bytes (or calls) of one phase row in the claim's direction: a mixed phase splits."""
    mixed = r.operation == "mixed"
    if kind == "ops":
        return r.read_ops if mixed and direction == "read" else \
            r.ops - r.read_ops if mixed and direction == "write" else r.ops
    return r.read_bytes if mixed and direction == "read" else \
        r.write_bytes if mixed and direction == "write" else r.bytes


def window_end(r, end_col: str | None) -> float:
    return r.data_last_ns if end_col is None else max(r.data_last_ns, getattr(r, end_col))


def figures_of(rows: pd.DataFrame, direction: str | None, kind: str, combine: str = "sum") -> dict[str, float]:
    """Active figures for one phase or a group of phases.

    combine "sum" adds the members' own rates (IOzone's children); "span" is all of them
    over the longest member's time (fio's group_reporting: bytes over the group's runtime);
    "wall" all of them over the set's wall time, first call to last (a program's total over
    its threads or files); "processes" each process's own "wall" figure, added up (fs_mark -t N
    adds its children's files/sec, each over its own loop). An "elapsed" claim (a test's time in
    seconds) gets times, not rates.
    """
    if kind == "latency":
        return {"mean latency": float((rows["lat_mean_us"] * rows["ops"]).sum() / rows["ops"].sum() / 1e6)}
    if kind == "elapsed":
        # a test's elapsed time: from the first data call to each window's end, over all the rows
        first = rows["data_first_ns"].min()
        out = {name: float(max(window_end(r, end_col) for r in rows.itertuples()) - first) / 1e9
               for name, end_col in WINDOWS}
        out["busy"] = float(rows["data_ns"].sum()) / 1e9 / max(int(rows["threads"].max()), 1)
        return out
    out: dict[str, float] = {}
    members = list(rows[[c for c in ROW_COLUMNS if c in rows.columns]].itertuples())
    amounts = [amount_of(r, direction, kind) for r in members]
    for name, end_col in WINDOWS:
        if combine == "span":
            longest = max((window_end(r, end_col) - r.data_first_ns for r in members), default=0)
            out[name] = rate(sum(amounts), 0, longest)
        elif combine == "wall":   # all the bytes over the set's wall time: a total over concurrent phases
            end = max((window_end(r, end_col) for r in members), default=0)
            out[name] = rate(sum(amounts), rows["data_first_ns"].min() if len(rows) else 0, end)
        elif combine == "processes":
            out[name] = _per_process(rows, amounts, members, end_col)
        else:
            rates = [rate(a, r.data_first_ns, window_end(r, end_col)) for a, r in zip(amounts, members)]
            out[name] = float(np.nansum(rates)) if rates else float("nan")
    busy = [a / (r.data_ns / 1e9) if r.data_ns else float("nan") for a, r in zip(amounts, members)]
    if combine in ("span", "wall", "processes"):
        inside = rows["data_ns"]
        if combine in ("wall", "processes") and "tid" in rows.columns:
            # a thread's phases one after the other (a run's files) add up: the busiest thread's time
            inside = inside.groupby(rows["tid"].to_numpy()).sum()
        longest = inside.max() / 1e9 if len(rows) else 0
        out["busy"] = sum(amounts) / longest if longest else float("nan")
    else:
        out["busy"] = float(np.nansum(busy)) if busy and not all(b != b for b in busy) else float("nan")
    return out


def _per_process(rows: pd.DataFrame, amounts: list, members: list, end_col: str | None) -> float:
    """Each process's amount over its own first data call to its last window end, added up."""
    spans: dict[int, list[float]] = {}
    for pid, amount, r in zip(rows["tgid"].to_numpy(), amounts, members):
        total, first, end = spans.get(int(pid), [0.0, float("inf"), 0.0])
        spans[int(pid)] = [total + amount, min(first, r.data_first_ns), max(end, window_end(r, end_col))]
    rates = [rate(total, first, end) for total, first, end in spans.values()]
    return float(np.nansum(rates)) if rates else float("nan")


def fmt(value: float, kind: str) -> str:
    """A figure as people read it, by what it counts."""
    if kind == "ops":
        return f"{value:,.0f} ops/s"
    if kind == "latency":
        return f"{value * 1e6:.2f} µs/op"
    if kind == "amount":
        return f"{value:,.0f} B"
    if kind == "count":     # an amount of operations, not a rate (IOzone -O's "Min xfer = 1568.00 ops")
        return f"{value:,.0f} ops"
    if kind == "elapsed":
        return units.seconds(value)
    return units.rate(value)
