"""IOzone's stonewalling: where IOzone's throughput mode (-t N without -x) stops counting each child.

iozone.c sets a shared flag when a child ends its loop; every other child stops counting at
its next look at the flag, between two calls, and leaves out the call it was in. Checked
against IOzone's own per-child counts (-C): per-child rates within about 1 %. The group's
figures counted that way are analysis/measure/stonewall.py's, as for any benchmark that stonewalls.
"""

from __future__ import annotations

import pandas as pd

from iowitness.analysis.measure.stonewall import Stonewall


def stonewall_of(rows: pd.DataFrame, group=None, evidence=None, file_size: int | None = None,
                 processes: int | None = None) -> Stonewall | None:
    """The stonewall of a group of concurrent phases, from its events when there are any, else
    from the group table (which takes the earliest end of any member and no next call).

    The share done at the stonewall is of the test's bytes (processes × file size) when they
    are known: members that stop at the flag (IOzone's rewriters break out of their loop)
    never move the rest, so a share of what they moved would hide it."""
    if len(rows) < 2:
        return None
    finisher = finisher_of(rows, file_size)
    at = int(finisher["data_last_ns"])
    total = float(rows["bytes"].sum())
    if file_size and processes:
        total = max(total, float(file_size) * processes)
    if evidence is None:
        if group is None:
            return None
        # the group table counts at the earliest end of any member; at another point, each
        # member's bytes by then are estimated as if it moved them at an even pace
        done = dict(zip(group["phases"], group["bytes_at_stonewall"]))
        exact = int(group["stonewall_ns"]) == at
        counted = {int(r.phase): float(done.get(r.phase, 0)) if exact else
                   float(r.bytes) * min(max((at - r.data_first_ns) / max(r.data_last_ns - r.data_first_ns, 1), 0), 1)
                   for r in rows.itertuples()}
        calls = {int(r.phase): counted[int(r.phase)] / r.record_size if r.record_size else 0 for r in rows.itertuples()}
        stop = {int(p): at for p in rows["phase"]}
    else:
        counted, calls, later = evidence.stonewall_counts([int(p) for p in rows["phase"]], at)
        counted = {int(p): float(counted.get(p, 0)) for p in rows["phase"]}
        calls = {int(p): int(calls.get(p, 0)) for p in rows["phase"]}
        stop = {int(p): int(later.get(p, at)) for p in rows["phase"]}
    fin = int(finisher["phase"])
    counted[fin], calls[fin] = float(finisher["bytes"]), int(finisher["ops"])
    return Stonewall(at, fin, counted, calls, stop, sum(counted.values()) / total if total else float("nan"), total)


def finisher_of(rows: pd.DataFrame, file_size: int | None) -> pd.Series:
    """The member whose end is the group's stonewall: the first to finish of those that moved
    the whole file (of them all when none did, or the file size is not known)."""
    whole = rows[rows["bytes"] == file_size] if file_size else rows.iloc[0:0]
    return (whole if len(whole) else rows).sort_values("data_last_ns").iloc[0]
