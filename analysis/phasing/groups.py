"""Concurrent phases of several processes or threads doing the same test: one group.

IOzone's throughput mode (-t) reports two figures for such a group: "children" (the sum of
each child's own rate) and "parent" (all bytes over the group's wall time), and stops the
clock when the first child finishes (stonewalling). The group table gives both figures and
the stonewall point: when the first member finished and how much each other had done.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# two phases are concurrent when they overlap for this share of the shorter one
OVERLAP_SHARE = 0.5


def assign(phases: pd.DataFrame, members: int | None = None) -> pd.Series:
    """Group number per phase (from 1, in time order); a phase alone is a group of one.

    With `members` (IOzone -t N), the next N phases of the same operation from different
    threads form a group even when they do not overlap: a short test's children can finish
    one after the other. Otherwise phases that overlap in time form a group.
    """
    order = phases.sort_values("data_first_ns", kind="stable")
    group_of, group, current = {}, 0, []
    for row in order.itertuples():
        if members:
            joined = bool(current) and len(current) < members and row.operation == current[0].operation \
                and row.tid not in {m.tid for m in current} and _same_test(row, current)
        else:
            joined = bool(current) and _overlaps(row, current)
        if not joined:
            group += 1
            current = []
        current.append(row)
        group_of[row.phase] = group
    return phases["phase"].map(group_of).astype(np.int64)


def _same_test(row, current) -> bool:
    """Whether a phase can be of the same test as a group's members. A child the benchmark
    stopped before its first call (IOzone's stonewall on a busy machine: "Min xfer = 0.00 kB")
    leaves its test a member short, and the next test's first phase must not take its place: a
    phase is of another test when it is a re-read among first reads (a rewrite among first
    writes, or the other way) and it began (its open) after the last member ended (every child
    opens before IOzone's barrier; the next test starts only when all are done). Both, never one
    alone: a re-read test's child may read a file no one read before (a first read by its file),
    and a phase's open may come after another member's end on one CPU."""
    flags = ("reread", "rewrite")
    same_kind = all(getattr(row, f, False) == getattr(current[0], f, False) for f in flags)
    return same_kind or row.first_ns < max(m.last_ns for m in current)


def _overlaps(row, current) -> bool:
    start, end = row.data_first_ns, row.data_last_ns
    # one thread's phases on several files at once (sysbench fileio --file-num) overlap too:
    # its phases one after the other never do
    if start >= max(m.data_last_ns for m in current):
        return False
    for m in current:
        overlap = min(end, m.data_last_ns) - max(start, m.data_first_ns)
        shorter = min(end - start, m.data_last_ns - m.data_first_ns)
        if overlap > 0 and overlap >= OVERLAP_SHARE * shorter:
            return True
    return False


COLUMNS = ["group", "phases", "members", "operation", "bytes", "children_Bps", "parent_Bps", "first_ns",
           "last_ns", "stonewall_ns", "bytes_at_stonewall", "share_at_stonewall"]


def table(phases: pd.DataFrame, calls) -> pd.DataFrame:
    """One row per group of two or more phases: children and parent rates, stonewall point.

    The stonewall is when the first member to do all its work finished (a member the
    benchmark stopped early may end sooner, having done less).
    """
    multi = multi_phase(phases)
    if multi.empty:
        return pd.DataFrame(columns=COLUMNS)
    limit = stonewall_limits(multi)
    # bytes each member had done by its group's stonewall, in one pass over the data calls
    done = np.zeros(len(limit))
    add_done(done, limit, calls.data, calls.phase, calls.end_ns, calls.ret)
    return rows(multi, done)


def multi_phase(phases: pd.DataFrame) -> pd.DataFrame:
    """The phases of the groups of two or more."""
    return phases.groupby("group").filter(lambda g: len(g) > 1)


def stonewalls(multi: pd.DataFrame) -> dict:
    """Per group: when the first member to do all its work finished."""
    stonewall = {}
    for group, members in multi.groupby("group"):
        complete = members[members["bytes"] == members["bytes"].max()]
        stonewall[group] = int(complete["data_last_ns"].min())
    return stonewall


def stonewall_limits(multi: pd.DataFrame) -> np.ndarray:
    """Per phase number up to the last member's: its group's stonewall, -1 for a phase in no group."""
    limit_of_phase = multi.set_index("phase")["group"].map(stonewalls(multi))
    limit = np.full(int(limit_of_phase.index.max()) + 1, -1, dtype=np.int64)
    limit[limit_of_phase.index.to_numpy()] = limit_of_phase.to_numpy()
    return limit


def add_done(done: np.ndarray, limit: np.ndarray, data: np.ndarray, phase: np.ndarray, end_ns: np.ndarray,
             ret: np.ndarray) -> None:
    """Add to `done` (per phase) the bytes of the data calls of group members that ended by
    their group's stonewall, one call after the other (so blocks of calls, added in order,
    sum as all of them at once, bit for bit)."""
    slot = np.maximum(phase, 0)
    limit_of_call = np.full(len(phase), -1, dtype=np.int64)
    known = slot < len(limit)
    limit_of_call[known] = limit[slot[known]]
    member_calls = np.flatnonzero(data & (limit_of_call >= 0))
    inside = member_calls[end_ns[member_calls] <= limit_of_call[member_calls]]
    np.add.at(done, phase[inside], np.maximum(ret[inside], 0).astype(np.float64))


def rows(multi: pd.DataFrame, done: np.ndarray) -> pd.DataFrame:
    """The group table from its phases and the bytes each had done by its group's stonewall."""
    stonewall = stonewalls(multi)
    done = pd.Series(done)
    rows = []
    for group, members in multi.groupby("group"):
        first, last = members["data_first_ns"].min(), members["data_last_ns"].max()
        at_stonewall = done.reindex(members["phase"]).fillna(0)
        operations = set(members["operation"])
        total = members["bytes"].sum()
        rows.append({
            "group": group, "phases": list(members["phase"]), "members": len(members),
            "operation": operations.pop() if len(operations) == 1 else "mixed", "bytes": int(total),
            "children_Bps": float(members["wall_Bps"].sum()),
            "parent_Bps": float(total / ((last - first) / 1e9)) if last > first else np.nan,
            "first_ns": int(first), "last_ns": int(last), "stonewall_ns": stonewall[group],
            "bytes_at_stonewall": [int(b) for b in at_stonewall],
            "share_at_stonewall": float(at_stonewall.sum() / total) if total else np.nan,
        })
    return pd.DataFrame(rows, columns=COLUMNS)
