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


def assign(phases: pd.DataFrame) -> pd.Series:
    """Group number per phase (from 1, in time order); a phase alone is a group of one."""
    order = phases.sort_values("data_first_ns", kind="stable")
    group_of, group, members = {}, 0, []
    for row in order.itertuples():
        start, end = row.data_first_ns, row.data_last_ns
        joined = False
        if members:
            g_end = max(m.data_last_ns for m in members)
            shorter = [min(end - start, m.data_last_ns - m.data_first_ns) for m in members]
            overlap = [min(end, m.data_last_ns) - max(start, m.data_first_ns) for m in members]
            joined = start < g_end and row.tid not in {m.tid for m in members} and any(
                o > 0 and o >= OVERLAP_SHARE * s for o, s in zip(overlap, shorter))
        if not joined:
            group += 1
            members = []
        members.append(row)
        group_of[row.phase] = group
    return phases["phase"].map(group_of).astype(np.int64)


def table(phases: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """One row per group of two or more phases: children and parent rates, stonewall point."""
    rows = []
    data = events[events["data"]]
    for group, members in phases.groupby("group"):
        if len(members) < 2:
            continue
        first, last = members["data_first_ns"].min(), members["data_last_ns"].max()
        stonewall = members["data_last_ns"].min()
        done = data[data["phase"].isin(members["phase"]) & (data["end_ns"] <= stonewall)]
        at_stonewall = done.groupby("phase")["bytes"].sum().reindex(members["phase"]).fillna(0)
        operations = set(members["operation"])
        rows.append({
            "group": group, "phases": list(members["phase"]), "members": len(members),
            "operation": operations.pop() if len(operations) == 1 else "mixed",
            "bytes": int(members["bytes"].sum()),
            "children_Bps": float(members["wall_Bps"].sum()),
            "parent_Bps": float(members["bytes"].sum() / ((last - first) / 1e9)) if last > first else np.nan,
            "first_ns": int(first), "last_ns": int(last), "stonewall_ns": int(stonewall),
            "bytes_at_stonewall": [int(b) for b in at_stonewall],
            "share_at_stonewall": float(at_stonewall.sum() / members["bytes"].sum()) if members["bytes"].sum() else np.nan,
        })
    return pd.DataFrame(rows, columns=["group", "phases", "members", "operation", "bytes", "children_Bps",
                                       "parent_Bps", "first_ns", "last_ns", "stonewall_ns",
                                       "bytes_at_stonewall", "share_at_stonewall"])
