"""Claim against active measurement: a verdict per claim, with the reasons the trace proves.

For each claim the matching phase (or group of concurrent phases) gives several active
figures, because benchmarks time different things:

  window   the window the benchmark most likely timed, as its own flags say (IOzone -e adds
           the fsync after the last write, -c the close; dd with conv=fdatasync its sync)
  calls    first data call's start to last data call's end
  +fsync   the same, up to the end of the phase's last fsync/fdatasync
  +close   the same, up to the end of its close
  busy     bytes over the time spent inside the data calls only (what the seed study's
           DTrace script summed, and why its figures came out higher than IOzone's)

A claim agrees when it is within the tolerance of the window figure. When it is not, the
reasons are ranked by how well they account for the difference, each with its numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from iowitness.analysis import units
from iowitness.analysis.claims import Claim

DEFAULT_TOLERANCE = 0.05
# user time between calls worth naming: this share of the phase's window
USER_SHARE = 0.10


@dataclass
class Verdict:
    claim: Claim
    phases: list[int]
    verdict: str                      # "agrees" | "disagrees" | "explained" | "cannot judge"
    figures: dict[str, float] = field(default_factory=dict)   # name -> bytes/s (or ops/s, s/op)
    window: str = "calls"
    ratio: float | None = None        # claim / window figure
    reasons: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.verdict in ("agrees", "explained")


def _rate(nbytes: float, start_ns: float, end_ns: float) -> float:
    seconds = (end_ns - start_ns) / 1e9
    return nbytes / seconds if seconds > 0 else float("nan")


def figures_of(rows: pd.DataFrame, direction: str | None, kind: str) -> dict[str, float]:
    """Active figures for one phase or a group of concurrent phases (summed like IOzone's children)."""
    out: dict[str, float] = {}
    for name, end_col in (("calls", None), ("+fsync", "sync_end_ns"), ("+close", "close_end_ns")):
        values = []
        for r in rows.itertuples():
            nbytes = r.read_bytes if direction == "read" and r.operation == "mixed" else \
                r.write_bytes if direction == "write" and r.operation == "mixed" else r.bytes
            ops = r.read_ops if direction == "read" and r.operation == "mixed" else \
                r.ops - r.read_ops if direction == "write" and r.operation == "mixed" else r.ops
            end = r.data_last_ns if end_col is None else max(r.data_last_ns, getattr(r, end_col))
            amount = ops if kind == "ops" else nbytes
            values.append(_rate(amount, r.data_first_ns, end))
        out[name] = float(np.nansum(values)) if values else float("nan")
    busy = rows["bytes"].sum() / (rows["data_ns"].sum() / 1e9) if rows["data_ns"].sum() else float("nan")
    out["busy"] = float(busy) if kind != "ops" else float(rows["ops"].sum() / (rows["data_ns"].sum() / 1e9))
    if kind == "latency":
        out = {"mean latency": float((rows["lat_mean_us"] * rows["ops"]).sum() / rows["ops"].sum() / 1e6)}
    return out


def _claimed(claim: Claim) -> tuple[float | None, str]:
    if claim.bytes_per_s is not None:
        return claim.bytes_per_s, "bytes"
    if claim.ops_per_s is not None:
        return claim.ops_per_s, "ops"
    if claim.seconds_per_op is not None:
        return claim.seconds_per_op, "latency"
    return None, "bytes"


def _fmt(value: float, kind: str) -> str:
    if kind == "ops":
        return f"{value:,.0f} ops/s"
    if kind == "latency":
        return f"{value * 1e6:.2f} µs/op"
    return units.rate(value)


def judge(claim: Claim, rows: pd.DataFrame, window: str, tolerance: float, lost: int,
          group: pd.Series | None = None) -> Verdict:
    value, kind = _claimed(claim)
    phases = [int(p) for p in rows["phase"]]
    if value is None or rows.empty:
        return Verdict(claim, phases, "cannot judge", reasons=["no phase of the trace matches this claim"]
                       if rows.empty else ["the claim is not a rate or a latency"])
    figures = figures_of(rows, claim.direction, kind)
    if kind == "latency":
        window = "mean latency"
    if claim.scope == "parent" and group is not None:
        figures["parent"] = float(group["parent_Bps"])
        window = "parent"
    active = figures.get(window, float("nan"))
    ratio = value / active if active and active == active else None
    verdict = Verdict(claim, phases, "agrees", figures, window, ratio)
    reasons = verdict.reasons

    # evidence the trace holds, whatever the verdict
    duration = float(rows["duration_s"].max())
    fsync_s = float(rows["fsync_ns"].sum()) / 1e9
    if lost:
        reasons.append(f"the observer lost {lost} events: active figures may miss calls")
    if bool(rows["too_short"].any()):
        reasons.append(f"phase too short to time: {units.seconds(duration)}, {int(rows['ops'].sum())} calls "
                       "(below 10 ms or 100 calls, a clock's resolution and the benchmark's own overhead dominate)")
    if group is not None and group["share_at_stonewall"] == group["share_at_stonewall"] \
            and group["share_at_stonewall"] < 0.999:
        reasons.append(f"stonewalling: when the first member finished, the group had done "
                       f"{group['share_at_stonewall']:.0%} of its bytes")
    errors, short = int(rows["errors"].sum()), int(rows["short"].sum())
    if errors or short:
        reasons.append(f"{errors} failed and {short} short calls in the phase")

    if ratio is None or abs(ratio - 1) <= tolerance:
        _note_excluded_time(figures, window, fsync_s, duration, reasons, kind)
        return verdict

    # which other figure would the claim match?
    best, best_gap = None, None
    for name, figure in figures.items():
        if name == window or not figure or figure != figure:
            continue
        gap = abs(value / figure - 1)
        if best_gap is None or gap < best_gap:
            best, best_gap = name, gap
    if best is not None and best_gap <= tolerance:
        verdict.verdict = "explained"
        reasons.insert(0, _explain(best, window, figures, value, best_gap, fsync_s, duration, rows, kind))
    elif any(r.startswith("phase too short") or r.startswith("stonewalling") for r in reasons):
        verdict.verdict = "explained" if any(r.startswith("stonewalling") for r in reasons) else "cannot judge"
    else:
        verdict.verdict = "disagrees"
        reasons.insert(0, f"no active figure within {tolerance:.0%}: claim {_fmt(value, kind)}, "
                          f"{window} {_fmt(active, kind)} ({ratio:.2f}×)")
    user_share = float(rows["user_ns"].sum()) / 1e9 / duration if duration else 0
    if user_share >= USER_SHARE:
        reasons.append(f"user space between calls: {user_share:.0%} of the phase's time")
    return verdict


def _explain(best, window, figures, value, gap, fsync_s, duration, rows, kind) -> str:
    if best == "busy":
        return (f"the claim counts only time inside the calls ({_fmt(figures['busy'], kind)} busy); "
                f"{units.seconds(float(rows['user_ns'].sum()) / 1e9)} between calls is left out "
                f"(within {gap:.1%})")
    if best == "calls" and window in ("+fsync", "+close"):
        return (f"fsync or close outside the timed window: {units.seconds(fsync_s)} of fsync in a "
                f"{units.seconds(duration)} phase; the claim matches the active figure without it within {gap:.1%}")
    if best in ("+fsync", "+close"):
        return (f"{best[1:]} inside the timed window: {units.seconds(fsync_s)} of fsync; the claim matches the "
                f"active figure {best} within {gap:.1%}")
    return f"the claim matches the {best} figure ({_fmt(figures[best], kind)}) within {gap:.1%}"


def _note_excluded_time(figures, window, fsync_s, duration, reasons, kind) -> None:
    """For an agreeing claim: say what the benchmark's window left out, when it is large."""
    if window == "calls" and fsync_s > 0.1 * max(duration, 1e-9) and figures.get("+fsync"):
        reasons.append(f"fsync outside the timed window: {units.seconds(fsync_s)} of fsync after the "
                       f"{units.seconds(duration)} of calls; counting it, the rate would be "
                       f"{_fmt(figures['+fsync'], kind)}")
