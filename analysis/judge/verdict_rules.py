"""Claim against active measurement: a verdict per claim, with the reasons the trace proves.

For each claim the matching phase (or group of concurrent phases) gives several active
figures, because benchmarks time different things:

  calls     first data call's start to last data call's end
  +fsync    the same, up to the end of the first fsync/fdatasync after the last data call
  +close    the same, up to the end of its close
  busy      bytes over the time spent inside the data calls only (what the seed study's
            DTrace script summed, and why its figures came out higher than IOzone's)
  stonewall for concurrent phases whose benchmark stops counting when the first one ends
            (IOzone's throughput mode): each member's bytes done by then, over its time to then

The window is the figure the benchmark most likely timed, as its own flags say (IOzone -e
adds the fsync after the last write, -c the close; dd with conv=fdatasync its sync). A claim
agrees when it is within the tolerance of the window figure. When it is not, it is explained
when another figure fits within the tolerance (the simplest account first: PREFERENCE) or a
buffered stream's block reads account for it; otherwise it disagrees, or cannot be judged
when the phase is too short to time. The reasons that follow are ranked: the explanation,
then what could distort any figure (lost events, a phase too short, stonewalling, failed
calls), then what the trace shows about the calls themselves.

Example: `judge(claim, report.phases[report.phases.phase == 1], "calls", 0.05)` for IOzone's
"write" claim of a run with -e gives Verdict(verdict="explained", window="calls",
reasons=["fsync inside the timed window: ...", ...]) when the command line said nothing of -e.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from iowitness import units
from iowitness.analysis.judge.claim import Claim
from iowitness.analysis.measure.buffering import note_records, read_amplification
from iowitness.analysis.measure.figures import figures_of, fmt
from iowitness.analysis.measure.stonewall import (
    Stonewall,
    bracket_reason,
    bracketed,
    group_figures,
    stonewall_reason,
)
from iowitness.analysis.phasing import operations
from iowitness.analysis.phasing.phases import SHORT_OPS, SHORT_SECONDS

DEFAULT_TOLERANCE = 0.05
# user time between calls worth naming: this share of the phase's window
USER_SHARE = 0.10
# an fsync after the calls worth naming for an agreeing claim: this share of the calls' time
FSYNC_SHARE = 0.10
# when several figures fit a claim, the simplest account of the difference comes first
PREFERENCE = ("calls", "+fsync", "+close", "stonewall", "parent stonewall", "parent to close", "parent", "busy")


@dataclass
class Verdict:
    claim: Claim
    phases: list[int]
    verdict: str                      # "agrees" | "disagrees" | "explained" | "cannot judge"
    figures: dict[str, float] = field(default_factory=dict)   # name -> bytes/s (or ops/s, s/op, bytes)
    window: str = "calls"
    ratio: float | None = None        # claim / window figure
    reasons: list[str] = field(default_factory=list)
    kind: str = "bytes"               # what the figures count: "bytes" (per s), "ops" (per s),
                                      # "latency" (s per op), "amount" (bytes, not a rate),
                                      # "count" (operations, not a rate)
    counts: dict[str, int] = field(default_factory=dict)  # what a latency verdict counted: "operations",
                                      # "requests", "within" (not figures: those are all of `kind`)
    placement: str = ""               # how the claim was placed: claim_windows.TIMELINE_NOTE or ORDER_NOTE

    @property
    def ok(self) -> bool:
        return self.verdict in ("agrees", "explained")


def claimed(claim: Claim) -> tuple[float | None, str]:
    if claim.bytes_per_s is not None:
        return claim.bytes_per_s, "bytes"
    if claim.ops_per_s is not None:
        return claim.ops_per_s, "ops"
    if claim.seconds_per_op is not None:
        return claim.seconds_per_op, "latency"
    if claim.extra.get("seconds") is not None:
        return float(claim.extra["seconds"]), "elapsed"
    return None, "bytes"


def judge(claim: Claim, rows: pd.DataFrame, window: str, tolerance: float, missing: str = "",
          group=None, *, stonewall: Stonewall | None = None, combine: str = "sum", notes: tuple = (),
          last_ns: int | None = None, parent_start_ns: int | None = None) -> Verdict:
    """The verdict on one claim about `rows` (one phase, or the members of a group).

    group: the group table's row when the claim is about concurrent phases; stonewall: where
    the benchmark stopped counting, when it stops at the first member's end (IOzone without
    -x; see stonewall_of); notes: evidence found elsewhere (late flushes, missing members),
    ranked after the causes found here; last_ns: the end of the group's last call, when a
    process of the group that moved no data made it; parent_start_ns: where the parent's clock
    starts, when not at the group's first data call (IOzone -d).
    """
    value, kind = claimed(claim)
    phases = [int(p) for p in rows["phase"]]
    if value is None or rows.empty:
        return Verdict(claim, phases, "cannot judge", kind=kind, reasons=[
            "no phase of the trace matches this claim" if rows.empty else "the claim is not a rate, a latency or a time"])
    # a rate of operations of several calls counts operations, not calls (analysis/phasing/operations.py)
    timed = claim.extra.get("timed") if kind == "ops" else None
    counted = operations.per_operation(rows, timed)
    figures = figures_of(counted, claim.direction, kind, combine)
    if kind == "latency":
        window = "mean latency"
    # a parent's clock runs from its go to its last child's end, whatever the members: with one
    # (the other child stopped before its first call) its line is no figure of the calls alone
    grouped = group is not None or stonewall is not None or claim.scope == "parent"
    if grouped and kind not in ("latency", "elapsed"):
        figures.update(group_figures(counted, stonewall, claim.direction, kind, window, last_ns, parent_start_ns))
        if claim.scope == "parent":
            window = "parent to close"
        else:
            figures.pop("parent"), figures.pop("parent to close"), figures.pop("parent stonewall", None)
    figures = {name: float(figure) for name, figure in figures.items()}
    active = figures.get(window, float("nan"))
    ratio = float(value / active) if active and active == active else 1.0 if value == 0 and active == 0 else None
    verdict = Verdict(claim, phases, "agrees", figures, window, ratio, kind=kind)
    reasons = verdict.reasons

    # what could distort any figure, whatever the verdict
    if missing:
        reasons.append(missing_reason(missing))
    if too_short(rows):
        reasons.append(too_short_reason(rows))
    if stonewall is not None and stonewall.share < 0.999:
        counted_so = figures.get("parent stonewall" if claim.scope == "parent" else "stonewall")
        reasons.append(stonewall_reason(stonewall, rows)
                       + (f"; counted so, the figure is {fmt(counted_so, kind)}" if counted_so else ""))
    errors, short = int(rows["errors"].sum()), int(rows["short"].sum())
    if errors or short:
        reasons.append(", ".join(part for part in (f"{errors} failed calls" if errors else "",
                                                   f"{short} short calls (fewer bytes than asked: the end of "
                                                   f"the file, or a partial transfer)" if short else "") if part)
                       + " in the phase")
    reasons.extend(notes)

    if mapped(rows) and claim.source == "spec":
        # a spec says nothing of the bytes its benchmark asked for: a figure that fits the faults
        # fits by chance (sysbench --file-io-mode=mmap once agreed at 1.01x: 312 MiB of reads, 8 MiB mapped)
        return cannot_judge(verdict, mapped_reason(rows, value, active, kind))
    if ratio is None:
        # nothing to set the claim against: never an agreement by default
        return cannot_judge(verdict, f"no active figure to set the claim against: the {window} window measures "
                                     f"{fmt(active, kind) if active == active else 'nothing'} (a phase of one call, "
                                     "or no time between its first and last call)")
    if within(ratio, tolerance, without_ratio=False):
        _note_window(rows, figures, window, kind, reasons)
        note_records(claim, rows, value, kind, tolerance, reasons)
        _note_user_time(rows, reasons)
        return verdict

    # a stonewall the benchmark is known to apply comes before any other account
    preference = PREFERENCE if stonewall is None or stonewall.share >= 0.999 else \
        ("stonewall", "parent stonewall") + PREFERENCE
    fitting = [name for name in dict.fromkeys(preference) if name != window and name in figures
               and figures[name] and figures[name] == figures[name] and abs(value / figures[name] - 1) <= tolerance]
    amplification = read_amplification(claim, rows, value, kind, tolerance)
    between = bracketed(value, figures, tolerance) if claim.scope != "parent" else None
    explanation = (_explain(fitting[0], window, figures, value, rows, kind) if fitting
                   else bracket_reason(between, value, figures, kind) if between else amplification)
    if not explanation and kind == "ops" and not operations.is_several(timed):
        # the spec silent, and the phases repeat a group of calls the claim counts as one
        found = operations.explain(value, rows, claim.direction, window, tolerance,
                                   lambda counted: figures_of(counted, claim.direction, kind, combine))
        if found:
            explanation, _, figures[f"{window} per {found[1]}"] = found
    settle(verdict, value, active, explanation, too_short(rows), tolerance)
    if verdict.verdict == "disagrees" and kind == "ops" and ratio:
        hint = operations.whole_hint(1 / ratio, int(counted["ops"].sum()), tolerance)
        if hint:
            # a whole n-fold off, with no group of calls in sight: never a false DISAGREES at 1/n
            verdict.verdict = "cannot judge"
            reasons.insert(0, hint)
    if verdict.verdict != "explained" and mapped(rows):
        # before "too short" or an n-fold hint: faults are no count of the benchmark's requests
        cannot_judge(verdict, mapped_reason(rows, value, active, kind))
    if not amplification:
        note_records(claim, rows, value, kind, tolerance, reasons)
    _note_user_time(rows, reasons)
    return verdict


# ---- the rules every verdict follows (judge above, and a benchmark's own statistics) ----

def within(ratio: float | None, slack: float, *, without_ratio: bool) -> bool:
    """Whether a claim agrees: its ratio to the window figure is within `slack` of 1.

    Without a ratio (the window figure is 0 or missing) the answer is `without_ratio`; judge()
    says cannot judge before it asks."""
    return without_ratio if ratio is None else abs(ratio - 1) <= slack


def settle(verdict: Verdict, value: float, active: float, explanation: str | None, too_short: bool,
           tolerance: float, statistic: str | None = None) -> None:
    """The verdict on a claim outside the slack of its window figure, and its first reason:
    explained by the account that fits (`explanation`), else cannot judge when the phase is too
    short to time, else disagrees. `statistic` names what the claim is a statistic of, over
    the members of a group (IOzone's "min process"): its reasons are worded after it."""
    if explanation:
        verdict.verdict = "explained"
        verdict.reasons.insert(0, explanation)
        return
    window, kind, ratio = verdict.window, verdict.kind, verdict.ratio
    if too_short and statistic:
        cannot_judge(verdict, f"{statistic}: claim {fmt(value, kind)}, {window} {fmt(active, kind)}, "
                              "and the phases are too short to tell why")
    elif too_short:
        cannot_judge(verdict, f"no active figure within {tolerance:.0%} (claim {fmt(value, kind)}, {window} "
                              f"{fmt(active, kind)}, {ratio:.2f}×), and the phase is too short to tell why")
    elif statistic:
        verdict.verdict = "disagrees"
        verdict.reasons.insert(0, f"{statistic}: claim {fmt(value, kind)} vs {window} {fmt(active, kind)}"
                                  + (f" ({ratio:.2f}×)" if ratio else ""))
    else:
        verdict.verdict = "disagrees"
        verdict.reasons.insert(0, f"no active figure within {tolerance:.0%}: claim {fmt(value, kind)}, "
                                  f"{window} {fmt(active, kind)} ({ratio:.2f}×)")


def cannot_judge(verdict: Verdict, why: str) -> Verdict:
    verdict.verdict = "cannot judge"
    verdict.reasons.insert(0, why)
    return verdict


def missing_reason(missing: str) -> str:
    """missing: what the trace misses, in traceformat.missing_text's words."""
    return f"the trace misses calls ({missing}): active figures may be low"


def too_short(rows: pd.DataFrame) -> bool:
    """Whether what a claim covers is too short to time: one phase by its own flag; several by
    their window (the first data call of any to the last one's end) and their calls in total,
    never by their smallest member (a group of long phases with one tiny member is timeable)."""
    if len(rows) <= 1:
        return bool(rows["too_short"].any())
    return _covered_s(rows) < SHORT_SECONDS or int(rows["ops"].sum()) < SHORT_OPS


def _covered_s(rows: pd.DataFrame) -> float:
    if len(rows) <= 1:
        return float(rows["duration_s"].max())
    return float(rows["data_last_ns"].max() - rows["data_first_ns"].min()) / 1e9


def too_short_reason(rows: pd.DataFrame, calls: bool = True) -> str:
    """Why no figure of these phases can be trusted; `calls`: say how many calls and what the limits are."""
    text = f"{'phase' if len(rows) <= 1 else 'phases'} too short to time: {units.seconds(_covered_s(rows))}"
    if calls:
        text += (f", {int(rows['ops'].sum())} calls (below 10 ms or 100 calls, a clock's resolution and the "
                 "benchmark's own overhead dominate)")
    return text


def _after(rows: pd.DataFrame, col: str) -> float:
    """Seconds from the last data call to the end of `col` (the first fsync or close after it), at most."""
    gaps = (rows[col] - rows["data_last_ns"]).clip(lower=0)
    return float(gaps.max()) / 1e9 if len(gaps) else 0.0


def _what(rows: pd.DataFrame) -> str:
    return "read" if set(rows["operation"]) == {"read"} else "write"


BUSY_EXPLAINED = "the claim counts only the time inside the calls"   # the first words of that account


def _explain(best: str, window: str, figures: dict, value: float, rows, kind: str) -> str:
    gap = abs(value / figures[best] - 1)
    calls_s = float(rows["duration_s"].max())
    fitted = f"{fmt(figures[best], kind)}, within {gap:.1%} of the claim"
    last = f"last {_what(rows)}"
    if best == "+fsync" and window == "calls":
        return (f"fsync inside the timed window: the first fsync after the {last} ends "
                f"{units.seconds(_after(rows, 'sync_end_ns'))} after it ({units.seconds(calls_s)} of calls); "
                f"counting it, the active figure is {fitted}")
    if best == "+close" and window in ("calls", "+fsync"):
        return (f"close inside the timed window: the close ends {units.seconds(_after(rows, 'close_end_ns'))} after "
                f"the {last} ({units.seconds(calls_s)} of calls); counting it, the active figure is {fitted}")
    if best == "calls" and window in ("+fsync", "+close"):
        what = "fsync" if window == "+fsync" else "close"
        added = _after(rows, "sync_end_ns" if window == "+fsync" else "close_end_ns")
        return (f"{what} outside the timed window: the {what} ends {units.seconds(added)} after the {last}, "
                f"yet the claim fits the calls alone: {fitted}")
    if best == "+fsync" and window == "+close":
        return (f"close outside the timed window: the claim fits the calls and the fsync, without the close: {fitted}")
    if best == "busy":
        user = max(calls_s - float(rows["data_ns"].max()) / 1e9, 0)
        return (f"{BUSY_EXPLAINED} ({fitted}); "
                f"{units.seconds(user)} between calls is left out")
    if best == "stonewall":
        return (f"stonewalling: the benchmark stops counting when the first member finishes; "
                f"each member's bytes done by then over its time until then add up to {fitted}")
    if best == "parent stonewall":
        return (f"stonewalling: the parent counts the bytes the members had done "
                f"when the first member finished, over the time until the last member closed its file: {fitted}")
    if best == "parent":
        return f"the parent's time ends at the last data call, not at the members' close: {fitted}"
    return f"the claim fits the {best} figure: {fitted}"


def _note_window(rows, figures, window, kind, reasons) -> None:
    """For an agreeing claim: what the benchmark's window took in or left out, when it is large."""
    calls_s = float(rows["duration_s"].max())
    after = _after(rows, "sync_end_ns")
    if after <= FSYNC_SHARE * max(calls_s, 1e-9) or not figures.get("+fsync"):
        return
    if window == "calls" and _what(rows) == "write":
        # an fsync after reads flushes none of the phase's bytes: leaving it out changes nothing it measured
        reasons.append(f"fsync outside the timed window: the first fsync after its last {_what(rows)} ends "
                       f"{units.seconds(after)} after it ({units.seconds(calls_s)} of calls); counting it, the rate would be "
                       f"{fmt(figures['+fsync'], kind)}")
    elif window in ("+fsync", "+close"):
        reasons.append(f"fsync inside the timed window: the first fsync after its last {_what(rows)} ends "
                       f"{units.seconds(after)} after it ({units.seconds(calls_s)} of calls); without it the rate would be "
                       f"{fmt(figures['calls'], kind)}")


def mapped(rows: pd.DataFrame) -> bool:
    """Whether most of the data the rows count moved through a memory mapping (their data
    calls are mostly page faults): the benchmark's own requests are then loads and stores."""
    return "faults" in rows and int(rows["faults"].sum()) * 2 >= max(int(rows["ops"].sum()), 1)


def mapped_reason(rows: pd.DataFrame, value: float, active: float, kind: str) -> str:
    # a page once mapped serves every later load and store with no fault, and a fault maps the
    # pages around it whether they are touched or not: the faults bound no count of requests
    # or bytes either way (sysbench fileio --file-io-mode=mmap read 7x more than it faulted)
    return (f"data moved through a memory mapping: the trace counts {int(rows['faults'].sum()):,} page faults "
            f"mapping {units.bytes_(int(rows['fault_bytes'].sum()))} ({fmt(active, kind)}), {MAPPED_REQUESTS}, "
            f"so the claim {fmt(value, kind)} cannot be set against them")


MAPPED_REQUESTS = ("not the benchmark's requests: loads and stores on a mapping make no call, and a page "
                   "already mapped serves any number of them")
# a latency's requests on a mapping: even one fault per request gives no time (the probe records
# a fault's moment; its latency_ns is 0, flag LATENCY_UNKNOWN: docs/trace-format.md)
MAPPED_LATENCY = ("not the benchmark's requests, and untimed: loads and stores on a mapping make no call, the "
                  "trace records when each fault happened, not how long it took, and a page already mapped "
                  "serves any number of requests with no fault")


def _note_user_time(rows: pd.DataFrame, reasons: list[str]) -> None:
    faults = int(rows["faults"].sum()) if "faults" in rows else 0
    if faults:
        # loads and stores on a mapping make no call: the time between faults is not user space
        major = int(rows["major_faults"].sum())
        reasons.append(f"data moved through a memory mapping: {faults:,} page faults ({major:,} major) mapped "
                       f"{units.bytes_(int(rows['fault_bytes'].sum()))}; the loads and stores themselves make no "
                       "syscall and are not timed, so the window is the first fault to the last")
        return
    duration = float(rows["duration_s"].max())
    # time between the data calls that no call covered (several threads overlap theirs): an
    # fdatasync after every write, or another call, is time in the kernel, not in user space;
    # never more than the phase table's own user time (its thread's calls elsewhere out too)
    zero = pd.Series(0, index=rows.index)
    in_calls = rows["data_ns"] + rows.get("fsync_ns", zero) + rows.get("other_calls_ns", zero).clip(lower=0)
    user = (rows["duration_s"] - in_calls / 1e9 / rows["threads"]).clip(lower=0)
    if "user_ns" in rows:
        user = user.clip(upper=rows["user_ns"] / 1e9)
    user = user.max()
    share = float(user) / duration if duration else 0
    if share >= USER_SHARE:
        reasons.append(f"user space between calls: {share:.0%} of the phase's time "
                       f"({units.seconds(float(user))} of {units.seconds(duration)})")
