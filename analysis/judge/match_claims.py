"""Which phase (or group of concurrent phases) each claim is about, and the verdict on it.

The benchmark's module (analysis/benchmarks/) says what is its own: which phases each claim
is about, the window it times, and for some claims its own way of counting (IOzone's
per-process statistics). Here is what holds for every benchmark: evidence from the trace
(a buffered stream's final flush, the device view, bytes counted against bytes moved) and
the judgement (analysis/judge/verdict_rules.py).

Example: `match(trace.report(), claims, "iozone", trace.meta["command"], trace=trace)` gives
one Verdict per claim, in the claims' order (IOzone's -R report copies and per-child lines
are left out: they repeat numbers judged once already).
"""

from __future__ import annotations

import pandas as pd

from iowitness.analysis import benchmarks
from iowitness.analysis.judge import (
    attached_windows,
    claim_windows,
    clock_after_calls,
    clock_tick,
    cut_short,
    open_window,
    output_files,
    precision,
    rate_edges,
    return_wait,
    room_bound,
    stated_period,
    strace_stops,
    submitted,
    timed_lines,
    verdict_rules as verdicts,
)
from iowitness.analysis.judge.claim import Claim
from iowitness.analysis.measure import buffering, device_checks
from iowitness.analysis.read import printed
from iowitness.analysis.report import ended_early, mid_run
from iowitness.collector import backends


def match(report, claims: list[Claim], source: str, command: list[str] | None,
          tolerance: float = verdicts.DEFAULT_TOLERANCE, missing: str = "",
          spec_window: str = "calls", trace=None, ceiling: dict | None = None) -> list[verdicts.Verdict]:
    """One verdict per claim. `trace` (the trace the report was built from) adds what only its
    events show: a buffered stream's final flush, and fio's layout process. `spec_window`: the
    window of a benchmark whose command line does not say."""
    # claims of no registered benchmark are matched as a spec's are: by order
    benchmark = benchmarks.by_name(source) or benchmarks.spec
    argv = benchmarks.shell_command.command_of(command)   # `sh -c "dd ..."` runs dd
    window = benchmark.window(argv) or spec_window
    # the benchmark's own log files (spec output_files) are output: no claim is about them
    report, output_note = output_files.apply(report, claims, trace)
    flushes = report.evidence.late_flushes(report.phases) if trace is not None else {}
    # each claim among the phases of its window on the output timeline, when its line has a time
    lines = printed.lines_of(trace) if trace is not None else []
    windows = claim_windows.windows_of(claims, report.phases, report.t0)
    if trace is not None and mid_run(trace.meta):
        # a window from the attach: its first tests may have ended before it (attached_windows.py)
        attached_windows.mark_surplus(claims, windows, report.phases)
    find = claim_windows.finder(benchmark, report, claims, argv, trace, windows)
    out = []
    edges: dict[int, claim_windows.Window] = {}
    judged_rows: dict[int, pd.DataFrame] = {}   # the phase rows each verdict was judged on
    for i, claim in enumerate(claims):
        placement = claim.extra.get("placement", claim_windows.ORDER_NOTE)
        placement = f"{placement}; {output_note}" if output_note else placement
        if i in windows and windows[i].before_trace:
            out.append(claim_windows.before_trace(claim, windows[i]))
            edges[id(out[-1])] = windows[i]
            continue
        found = find(claim)
        if found is None:
            continue
        low, timed_why = claim_windows.timed_start(claim, found.rows, lines)
        if found.judge is None:
            low, skipped_why = claim_windows.skipped_start(claim, found.rows, report, low)
            timed_why = "; ".join(w for w in (timed_why, skipped_why) if w)
        if found.start_ns is not None and (low is None or found.start_ns > low):
            low, timed_why = found.start_ns, "; ".join(w for w in (timed_why, found.start_why) if w)
        high, end_why = claim_windows.timed_end(claim, lines)
        if low is not None:
            claim.extra["timed_ns"] = low
        if found.judge is not None:
            out.append(found.judge(window, tolerance, missing))
            claim_windows.finish(out[-1], windows.get(i), report.t0, placement, timed_why, low is not None)
            edges[id(out[-1])] = windows.get(i)
            continue
        rows = found.rows if low is None and high is None else \
            claim_windows.timed_rows(claim, found.rows, report, low, high)
        # a stream's final flush is what shows its calls are a buffer's (buffering.stream_evidence)
        rows = rows.assign(late_flush=[int(p) in flushes for p in rows["phase"]])
        notes = list(found.notes)
        notes += buffering.late_flush_reasons({int(p): flushes[int(p)] for p in rows["phase"] if int(p) in flushes})
        notes += device_checks.claim_reasons(claim, rows, report.device, ceiling, window)
        timed_by = claim.extra.get("window", window)   # a spec's window, else the benchmark's
        verdict = verdicts.judge(claim, rows, timed_by, tolerance, missing, found.group, stonewall=found.stonewall,
                                 combine=found.combine, notes=tuple(notes), last_ns=found.last_ns,
                                 parent_start_ns=found.parent_start_ns)
        _bytes_reason(claim.extra.get("bytes") or found.bytes, rows, verdict)
        by_busy = verdict.verdict == "explained" and verdict.reasons[0].startswith(verdicts.BUSY_EXPLAINED)
        if (verdict.verdict in ("disagrees", "cannot judge") or by_busy) and len(rows) == 1 and trace is not None:
            _final_flush(claim, rows, verdict, trace, report, tolerance)
        if found.refine is not None:
            found.refine(verdict, rows, tolerance)
        timed_lines.apply(verdict, rows, low, high, tolerance)   # the spec's clock: from one line to another
        # ... or over the seconds its end line states ("execute 4 sec"), to their printed precision
        stated_period.apply(verdict, report, [int(p) for p in found.rows["phase"]],
                            claim_windows.stated_period(claim, lines), tolerance)
        judged_rows[id(verdict)] = rows
        claim_windows.finish_end(verdict, end_why, high is not None)
        claim_windows.finish(verdict, windows.get(i), report.t0, placement, timed_why, low is not None)
        edges[id(verdict)] = windows.get(i)
        out.append(verdict)
    return_wait.apply(out, report, trace, tolerance)   # a clock around each call: waits at its return
    precision.apply(out, tolerance)   # "1.2 GB/s" is 1.15 to 1.25, "0.00 ms" below 0.005
    strace = trace is not None and backends.backend_of(trace.meta) == backends.STRACE
    room_bound.apply(out, report, tolerance, trace, strace)   # a statistic between its calls' and their rooms'
    submitted.apply(out, report.phases)   # a clock around a call that only submits its request
    clock_tick.apply(out, report.phases, tolerance)   # postmark's whole seconds, fio's milliseconds
    open_window.apply(out, report.phases, tolerance)   # timed from the open to the close
    # several phases: a clock on through the syncs after them (fs_mark -S), which the trace saw,
    # before the edges' account, which would leave that EXPLAINED figure CANNOT JUDGE "at the edge"
    clock_after_calls.apply(out, judged_rows, report, tolerance)
    rate_edges.apply(out, judged_rows, report, trace, tolerance)   # a spec rate's clock over its window's edges
    cut_short.apply(out, report, trace)   # a test the trace's end cut: how far it got, never agrees
    began_late = mid_run(trace.meta) if trace is not None else None
    for partial in (began_late, ended_early(trace.meta)) if trace is not None else ():
        if not partial:
            continue
        # a benchmark's figure covers its whole test; a trace that began late or ended early saw
        # only part of it: a figure that fits is noted so, one that does not cannot be judged
        for verdict in out:
            seen = edges.get(id(verdict))
            if seen is not None and seen.start_ns is not None:
                continue   # its window began after a line the trace holds: the trace saw all of it
            # a figure that cannot be judged for another reason ("the phase is too short to tell
            # why", a clock that may have run on): on a partial trace, why is first that the trace
            # may have seen only part of its test (fs_mark attached in its last loop: 12 of its 400
            # files, 225 against 494 files/s, "too short to tell why" first)
            unjudged = verdict.verdict == "cannot judge" and partial is began_late \
                and not (seen is not None and seen.before_trace)
            # per-request lines whose requests before the trace are counted apart (request_anchor's
            # shift) are each judged whole: another account that fits them is no coincidence
            whole = bool(verdict.counts.get("before_trace"))
            if verdict.verdict == "disagrees" or unjudged or (verdict.verdict == "explained" and not whole
                                                              and _begun_before_trace(report.phases, verdict.phases)):
                # another account that fits the part of a test the trace saw, under way at the
                # attach, is a coincidence (fio attached mid-run: its 4 s rate "fits the time
                # inside the calls" of the last second): its words stay, after why
                verdicts.cannot_judge(verdict, partial)
            elif verdict.verdict in ("agrees", "explained"):
                verdict.reasons.append(partial)
    if trace is not None and backends.backend_of(trace.meta) == backends.STRACE:
        # strace stops the benchmark on every call's entry and exit: the stops lie inside the
        # benchmark's own clock and inside strace's -T, by amounts neither records
        for verdict in out:
            if verdict.verdict == "disagrees" and verdict.kind == "latency":
                verdicts.cannot_judge(verdict, STRACE_LATENCY)
            elif verdict.verdict == "disagrees" and verdict.kind in ("ops", "bytes") and (verdict.ratio or 1) < 1:
                # a rate below the calls': the stops slowed the benchmark between and around its calls
                verdicts.cannot_judge(verdict, STRACE_RATE)
            elif verdict.verdict == "disagrees" and verdict.kind in ("ops", "bytes") and (verdict.ratio or 0) > 1:
                # a rate above the calls': within what the stops the trace bounds explain (strace_stops.py)
                why = strace_stops.reason(verdict, judged_rows.get(id(verdict)), tolerance)
                if why:
                    verdicts.cannot_judge(verdict, why)
    return out


STRACE_RATE = ("imported from strace: its ptrace stops on every call's entry and exit slow the benchmark "
               "around its calls by amounts strace does not record, so a rate below the calls' cannot be judged; "
               "record with iowitness run or attach to judge it")
STRACE_LATENCY = ("imported from strace: its ptrace stops on every call's entry and exit lie inside the "
                  "benchmark's clock and strace's -T alike, by amounts neither records, so a latency that does "
                  "not fit cannot be judged; record with iowitness run or attach to judge it")


def _begun_before_trace(phases: pd.DataFrame, mine: list[int]) -> bool:
    """Whether one of the verdict's phases was under way when the trace began: its process opened
    its file before the trace (no open of that file by that process in the trace up to it)."""
    if not mine or "opens" not in phases:
        return False
    for row in phases[phases["phase"].isin(mine)].itertuples():
        same = phases[(phases["path"] == row.path) & (phases["tgid"] == row.tgid)
                      & (phases["first_ns"] <= row.first_ns)]
        if int(same["opens"].sum()) == 0:
            return True
    return False


def _final_flush(claim: Claim, rows: pd.DataFrame, verdict: verdicts.Verdict, trace, report, tolerance: float) -> None:
    """A claim that fits its stream's phase without the last buffer fclose wrote: explained."""
    final = report.evidence.final_write(report.phases, int(rows.iloc[0]["phase"]))
    value, kind = verdicts.claimed(claim)
    why = buffering.final_write_reason(claim, rows, final, value, kind, tolerance) if final else None
    if why and verdict.verdict == "explained":
        # a stream's last buffer written at close is the specific account; another figure that
        # fits too (the time inside the calls, on a busy machine) is a coincidence beside it
        verdict.reasons[0] = why
    elif why:
        verdict.verdict = "explained"
        verdict.reasons.insert(0, why)


def _bytes_reason(said: int | None, rows: pd.DataFrame, verdict: verdicts.Verdict) -> None:
    """Bytes the benchmark says it moved against bytes the kernel moved for it."""
    if not said or rows.empty:
        return
    moved = int(rows["bytes"].sum())
    if moved != said:
        verdict.reasons.append(f"the benchmark counts {said:,} bytes, the kernel moved {moved:,} "
                               f"({moved / said:.2f}×): buffering or read-ahead between them")
