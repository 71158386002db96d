"""An strace-imported rate above the trace's: within what ptrace's stops explain, measured from
the trace itself.

strace stops the benchmark at every call's entry and exit; its -ttt times and -T latencies
are taken by strace when it gets to each stop, so the trace's calls and the time between them
both hold stop time, by amounts strace does not record (docs/strace-import.md). A benchmark's
own clock holds stops too, but not necessarily the same ones: a figure above the trace's is
then no proof of a wrong figure. What the trace bounds: at most all the time between the
claim's calls (user space and stops, the phases' user_ns) and, on every call, at most the
fastest such call's time (lat_min_us: a call cannot have taken less than nothing) may be
stop time. Without them the calls' time could be as short as

    T - user time between the calls - calls x the fastest call's time

so a claim above the trace's figure but at or below amount / that time (within the
tolerance) is CANNOT JUDGE with those numbers; above even that it still DISAGREES.

    apply(verdicts, tolerance)   # on an strace import's verdicts
"""

from __future__ import annotations

from iowitness import units
from iowitness.analysis.measure.figures import amount_of, fmt


def _bound(verdict, rows) -> tuple[float, float, float, int] | None:
    """(the highest figure the stops allow, s between calls, s of fastest calls, calls)."""
    figure = verdict.figures.get(verdict.window)
    if not figure or figure != figure or rows is None or rows.empty:
        return None
    amount = float(sum(amount_of(r, verdict.claim.direction, verdict.kind) for r in rows.itertuples()))
    if amount <= 0:
        return None
    seconds = amount / figure
    between = float(rows["user_ns"].clip(lower=0).sum()) / 1e9 if "user_ns" in rows.columns else 0.0
    calls = int(rows["ops"].sum())
    fastest = float(rows["lat_min_us"].min()) / 1e6 * calls if "lat_min_us" in rows.columns else 0.0
    left = seconds - between - (fastest if fastest == fastest else 0.0)
    if left <= 0:
        return float("inf"), between, fastest, calls
    return amount / left, between, fastest, calls


def reason(verdict, rows, tolerance: float) -> str | None:
    """Why a rate above the trace's cannot be judged under strace, or None when the stops the
    trace bounds cannot explain it."""
    from iowitness.analysis.judge.verdict_rules import claimed

    value, kind = claimed(verdict.claim)
    found = _bound(verdict, rows)
    if value is None or found is None:
        return None
    highest, between, fastest, calls = found
    if value > highest * (1 + tolerance):
        return None
    top = "no bound" if highest == float("inf") else f"up to {fmt(highest, kind)}"
    return (f"imported from strace: the claim is above the trace's {fmt(verdict.figures[verdict.window], kind)} "
            f"({verdict.ratio:.2f}x), within what ptrace's stops explain: the {units.seconds(between)} between the "
            f"calls and the fastest call's time on each of the {calls:,} calls ({units.seconds(fastest)} in all) "
            f"may be stop time, which strace does not record; without them the rate is {top}. Record with "
            "iowitness run or attach to judge it")
