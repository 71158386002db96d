"""An IOzone test too short to time on its own calls, bounded by the calls around it.

IOzone reads its clock after the call before its loop and again before the call after it
(iozone.c read_perf_test: `lseek(fd,0,SEEK_SET); ... starttime2 = time_so_far();` then the
reads, then with -e the fsync and with -c the close, then `readtime = (time_so_far() -
starttime2) - time_res`; write_perf_test the same after its open). So the window it timed
holds the test's calls (and the fsync or close -e or -c adds) and lies within the gap between
the end of the thread's call before them and the start of its call after them: a claim about
B bytes is at most B over the first and at least B over the second. An IOzone -a phase of one
call (record = file size, 44 µs) cannot be timed on its one call (analysis/judge/verdict_rules.py: too
short), yet the two calls around it bound it as tightly as IOzone's clock can.

A claim within that bracket (with the tolerance, and latency.ALLOWANCE_S on each edge for
IOzone's time_res and the clock reads) is explained (it fits a window the calls around it
bound, not the calls' own figure, which may be far off for a call of some µs); outside it,
no window IOzone could have timed gives the figure and it disagrees. When no call precedes or
follows the phase in its thread, it cannot be judged and says so.

Example: a 64 KiB read of 1.4 µs between an lseek that ended 2.1 µs before it and an fsync
starting 3.0 µs after it: anything from 64 KiB / 7.5 µs (the 6.5 µs gap and the allowance)
to 64 KiB / 0.4 µs (the 1.4 µs call less the allowance) fits.
"""

from __future__ import annotations

import pandas as pd

from iowitness import units
from iowitness.analysis.judge import precision, verdict_rules as verdicts
from iowitness.analysis.judge.latency import ALLOWANCE_S
from iowitness.analysis.measure import stream_evidence
from iowitness.analysis.measure.figures import fmt
from iowitness.analysis.phasing import call_bounds


class Bounds:
    """The calls around every phase too short to time (or any phase, for a timed phase's
    claim), asked of the trace once for all: a sweep has hundreds of such phases, and its
    claims are matched in many windows of the output (a Bounds each, over some of the phases):
    the calls around every phase of the trace, to the end of each of the windows IOzone can
    time (the calls, with -e their fsync, with -c their close), come from one pass over the
    blocks for all of them (StreamedEvidence.ask; each phase's answer is its own, whichever
    others are asked with it)."""

    def __init__(self, report):
        self._report = report
        self._asked: dict[str, tuple] = {}

    def around(self, phase: int, window: str, *, short_only: bool = True) -> tuple[int, str | None, int, str | None]:
        """(end of the call before, its name, start of the call after, its name). `short_only`:
        asked for a phase too short to time (else for any phase, when a timed phase's claim
        needs it); the answer is the same."""
        if not self._asked:
            phases = self._report.all_phases
            records = phases[[c for c in ("data_last_ns", "sync_end_ns", "close_end_ns") if c in phases]] \
                .to_dict("records")
            questions = {end: stream_evidence.neighbours_question(
                [int(t) for t in phases["tid"]], [int(f) for f in phases["data_first_ns"]],
                [_inner_end(r, end) for r in records]) for end in _ENDS}
            self._report.evidence.ask(list(questions.values()))
            at = {int(p): i for i, p in enumerate(phases["phase"])}
            self._asked = {end: (at, self._report.evidence.neighbours(*question[1:]))
                           for end, question in questions.items()}
        at, (before, before_name, after, after_name) = self._asked[window if window in _ENDS else "calls"]
        i = at[int(phase)]
        return int(before[i]), before_name[i], int(after[i]), after_name[i]


# the ends of what IOzone timed (_inner_end): its calls', with -e its fsync's, with -c its close's
_ENDS = ("calls", "+fsync", "+close")


def judge(claim, rows: pd.DataFrame, bounds: Bounds, window: str, tolerance: float,
          missing: str) -> verdicts.Verdict:
    """verdicts.judge, and for a phase too short to time that it cannot judge, the bracket."""
    verdict = verdicts.judge(claim, rows, window, tolerance, missing)
    if verdict.verdict != "cannot judge" or len(rows) != 1 or not bool(rows["too_short"].any()):
        return verdict
    value, kind = verdicts.claimed(claim)
    if value is None or kind not in ("bytes", "ops", "latency"):
        return verdict
    row = rows.iloc[0]
    before, before_name, after, after_name = bounds.around(int(row["phase"]), window)
    if before == call_bounds.NONE_BEFORE or after == call_bounds.NONE_AFTER:
        missing_side = "before" if before == call_bounds.NONE_BEFORE else "after"
        verdict.reasons.insert(1, f"no call of its thread {missing_side} it in the trace to bound IOzone's clock")
        return verdict
    inner_s = max((_inner_end(row, window) - int(row["data_first_ns"])) / 1e9 - ALLOWANCE_S, 1e-9)
    outer_s = (after - before) / 1e9 + ALLOWANCE_S
    amount = float(row["bytes"]) if kind == "bytes" else float(row["ops"])
    low, high = figure_range(kind, amount, inner_s, outer_s)
    # a figure printed to few digits (-N's whole microseconds, cut down) is judged to them
    below, above = precision.printed_span(claim, value, kind)
    fits = fits_bracket(value, low, high, tolerance, (below, above))
    timed = {"+fsync": "its calls and the fsync after them", "+close": "its calls and the close after them"}.get(
        window, f"its {int(row['ops']):,} call{'s' if int(row['ops']) != 1 else ''}")
    why = (f"too short to time on its own calls, bounded by the calls around it: IOzone's clock ran at least over "
           f"{timed} ({units.seconds(inner_s + ALLOWANCE_S)}) and at most from the end of the {before_name} before "
           f"to the start of the {after_name} after ({units.seconds(outer_s - ALLOWANCE_S)}), ± "
           f"{ALLOWANCE_S * 1e6:g} µs: {fmt(low, kind)} to {fmt(high, kind)}")
    verdict.reasons.pop(0)   # "... too short to tell why": now told
    if fits:   # explained, not agrees: the claim fits a window the calls bound, not the calls' own figure
        verdict.verdict = "explained"
        verdict.reasons.insert(0, f"{why}, and the claim {fmt(value, kind)} "
                                  f"{precision.fit_words(value, low, high, (below, above), tolerance, kind)}")
    else:
        verdict.verdict = "disagrees"
        verdict.reasons.insert(0, f"{why}; the claim {fmt(value, kind)} is outside it by more than {tolerance:.0%}: "
                                  "no window between those calls gives it")
    verdict.figures.update({"bounded, least": low, "bounded, most": high})
    return verdict


def figure_range(kind: str, amount: float, inner_s: float, outer_s: float) -> tuple[float, float]:
    """(least, most) of the claim's figure when IOzone's clock ran at least `inner_s` and at
    most `outer_s` over `amount` (bytes or operations): a rate, or with "latency" a time per
    operation."""
    if kind == "latency":
        return inner_s / amount, outer_s / amount
    return amount / outer_s, amount / inner_s


def fits_bracket(value: float, low: float, high: float, tolerance: float,
                 printed: tuple[float, float] = (0.0, 0.0)) -> bool:
    """Within the bracket and the tolerance; `printed`: how far below and above the printed
    figure the true one may lie (precision.printed_span)."""
    below, above = printed
    return low * (1 - tolerance) <= value + above and value - below <= high * (1 + tolerance)


def _inner_end(row, window: str) -> int:
    """The end of what IOzone timed at least: the last data call, or the fsync / close -e / -c add."""
    end = int(row["data_last_ns"])
    column = {"+fsync": "sync_end_ns", "+close": "close_end_ns"}.get(window)
    added = row.get(column) if column else None
    if added is not None and added == added and int(added) > end:
        return int(added)
    return end
