"""Stonewalling: the figures of a group of concurrent members counted by a benchmark that stops
counting when its first member finishes, and the reasons a verdict gives for them.

Where each member stops is the benchmark's own rule, found by its module (IOzone's:
analysis/benchmarks/iozone_stonewall.py) and handed to the verdict in its Match; here is what
holds for any such benchmark: the members' rates to the stonewall, the group's children and
parent figures, and the figures timed from the group's start signal ("from go").
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from iowitness import units
from iowitness.analysis.measure.figures import WINDOWS, amount_of, fmt, rate, window_end


@dataclass
class Stonewall:
    """Where a benchmark that stops counting when its first member finishes (IOzone's
    throughput mode without -x: analysis/benchmarks/iozone_stonewall.py) stops each member."""
    at_ns: int                 # the end of the finisher's last data call
    finisher: int              # its phase: the first member to move its whole file
    counted: dict              # phase -> bytes of its data calls that ended by then
    calls: dict                # phase -> how many
    stop_ns: dict              # phase -> the start of its next call after at_ns: it stops there
    share: float               # the group's bytes done by then, of the test's (or of all it moved)
    intended: float            # the test's bytes: processes × file size, when known


def member_rates(rows: pd.DataFrame, stonewall: Stonewall | None, direction: str | None, kind: str,
                 end_col: str | None, go_ns: int | None = None) -> pd.DataFrame:
    """Per member of a group: its rate over its own window ("own"), and as a benchmark that
    stops counting at the stonewall sees it ("stonewall"; the finisher counts everything).

    Each also "from go": timed from the group's first data call instead of its own. A
    benchmark that starts every member's clock at one signal (IOzone's parent says go, each
    child reads its clock, then writes) times a member that was not on a CPU at the signal
    from before its first call, by up to that much: the two figures bracket what it saw.
    `go_ns`: an earlier bound of the signal than the group's first data call, when the
    benchmark's module knows one (the "from go" figures are then timed from it).
    """
    go = rows["data_first_ns"].min() if len(rows) else 0
    if go_ns is not None and len(rows):
        go = min(go, go_ns)
    out = []
    for r in rows.itertuples():
        amount = amount_of(r, direction, kind)
        end = window_end(r, end_col)
        own, own_go = rate(amount, r.data_first_ns, end), rate(amount, go, end)
        if stonewall is None or r.phase == stonewall.finisher:
            at_stonewall, at_stonewall_go, done = own, own_go, amount
        else:
            done = stonewall.calls[r.phase] if kind == "ops" else stonewall.counted[r.phase]
            stop = stonewall.stop_ns[r.phase]
            at_stonewall = rate(done, r.data_first_ns, stop) if done else 0.0
            at_stonewall_go = rate(done, go, stop) if done else 0.0
        out.append({"phase": r.phase, "path": r.path, "own": own, "stonewall": at_stonewall,
                    "own from go": own_go, "stonewall from go": at_stonewall_go,
                    "amount": amount, "counted": done})
    return pd.DataFrame(out, columns=["phase", "path", "own", "stonewall", "own from go", "stonewall from go",
                                      "amount", "counted"])


def group_figures(rows: pd.DataFrame, stonewall: Stonewall | None, direction: str | None, kind: str,
                  window: str, last_ns: int | None = None, parent_start_ns: int | None = None) -> dict[str, float]:
    """The children's figures of a group (the sum of the members' rates: to the stonewall,
    and each of them and the window's timed from go, see member_rates) and the parent's: the
    group's bytes over its time from the first data call to the last data call, or to the
    last member's last call (its close, the nearest the trace comes to the children's exit), or
    to `last_ns` when that is later (a process of the group that moved no data closed last);
    from `parent_start_ns` instead of the first data call when the benchmark says so."""
    members = member_rates(rows, stonewall, direction, kind, dict(WINDOWS).get(window))
    # the parent's clock: from the first data call, or from where the benchmark starts it
    first = rows["data_first_ns"].min() if parent_start_ns is None else parent_start_ns
    last = max(int(rows["last_ns"].max()), last_ns or 0)
    total, counted = members["amount"].sum(), members["counted"].sum()
    out = {"parent": rate(total, first, rows["data_last_ns"].max()),
           "parent to close": rate(total, first, last),
           f"{window} from go": float(members["own from go"].sum())}
    if stonewall is not None:
        out["stonewall"] = float(members["stonewall"].sum())
        out["stonewall from go"] = float(members["stonewall from go"].sum())
        out["parent stonewall"] = rate(counted, first, last)
    return out


def bracketed(value: float, figures: dict, tolerance: float) -> str | None:
    """The first figure whose "from go" twin brackets the value, within the tolerance."""
    for name in ("calls", "+fsync", "+close", "stonewall"):
        low, high = figures.get(f"{name} from go"), figures.get(name)
        if low is None or high is None or not (low == low and high == high):
            continue
        low, high = min(low, high), max(low, high)
        if low * (1 - tolerance) <= value <= high * (1 + tolerance):
            return name
    return None


def bracket_reason(name: str, value: float, figures: dict, kind: str) -> str:
    what = "stonewalling, and " if name == "stonewall" else ""
    return (f"{what}a member's clock may start before its first call: timed from its own first call the "
            f"figure is {fmt(figures[name], kind)}, from the group's first call (the start signal) "
            f"{fmt(figures[name + ' from go'], kind)}; the claim, {fmt(value, kind)}, lies between: a member "
            f"waiting for a CPU at the signal started its calls late, which no call shows")


def stonewall_reason(stonewall: Stonewall, rows: pd.DataFrame) -> str:
    first = int(rows["data_first_ns"].min())
    done, total = sum(stonewall.counted.values()), stonewall.intended
    finisher = rows[rows["phase"] == stonewall.finisher].iloc[0]
    return (f"stonewalling: the first member to finish (phase {stonewall.finisher}, {finisher['path']}) ended "
            f"{units.seconds((stonewall.at_ns - first) / 1e9)} after the group's first call; by then the group "
            f"had done {stonewall.share:.0%} of the test's bytes ({units.bytes_(done)} of {units.bytes_(total)}), "
            f"and a benchmark that stops counting there reports only those")
