"""The phase report as a terminal table, followed by groups and the slowest calls."""

from __future__ import annotations

import pandas as pd

from iowitness import units
from iowitness.analysis.measure import observer
from iowitness.analysis.read import printed
from iowitness.collector import backends
from iowitness.escape import terminal
from iowitness.reporters import block, phase_ranges, stretches, sweep, tables

# an outlier line is printed for a phase whose slowest calls take this share of its time
OUTLIER_SHARE = 0.10


def phase_table(phases: pd.DataFrame, width: int | None = None) -> str:
    return units.table(tables.phase_rows(phases), title="phases", width=width, drop=tables.PHASE_DROP)


def group_table(groups: pd.DataFrame, phases: pd.DataFrame, width: int | None = None) -> str:
    if groups.empty:
        return ""
    return units.table(tables.group_rows(groups, phases), title=tables.GROUPS_TITLE, width=width,
                       drop=tables.GROUP_DROP)


def outlier_lines(outliers: pd.DataFrame) -> str:
    lines = []
    for phase, calls in outliers.groupby("phase"):
        share = calls["share"].sum()
        if not share >= OUTLIER_SHARE:
            continue
        worst = ", ".join(f"{units.latency(c.latency_us)} at offset {c.offset:,} (+{units.seconds(c.at_s)})"
                          for c in calls.head(3).itertuples())
        lines.append(f"  phase {phase}: its {len(calls)} slowest calls take {share:.0%} of its time: {worst}")
    if not lines:
        return "slowest calls: in every phase the 5 slowest calls take less than 10 % of its time"
    return "slowest calls (phases where a few calls dominate)\n" + "\n".join(lines)


def render(report, trace, verdicts=None, width: int | None = None) -> str:
    """The text report, every line at most `width` columns (None: as long as it needs). An
    IOzone -a sweep starts with its grid per test (sweep.py), before the per-phase detail."""
    # each line from names in the trace is escaped whole: a newline in a name stays on its line
    parts = [terminal(f"trace {trace.meta.get('path')}   benchmark: {report.benchmark or 'not recognised'}   "
                      f"lost events: {tables.lost_figure(trace)}   backend: {backends.backend_of(trace.meta)}"),
             terminal(observer.line(trace))]
    timeline = printed.timeline_summary(trace)   # "output: N writes, M cut at 4 KiB" (traces with a timeline)
    if timeline:
        parts.append(terminal(timeline))
    replayed = trace.meta.get("replay_of")
    if replayed:   # iowitness replay: the trace it replays (docs/replay.md)
        parts.append(terminal(f"replay of {tables.replay_of_text(replayed)}"))
    parts += [terminal(f"WARNING: {w}") for w in tables.warnings(trace)]
    if report.phases.empty:
        parts.append("no phases: the trace holds no read or write calls on target files")
        return units.wrap("\n".join(parts), width)
    grid = sweep.text_section(report, verdicts, width)
    if grid:
        parts += ["", grid]
    parts += ["", phase_table(report.phases, width)]
    groups = group_table(report.groups, report.phases, width)
    if groups:
        parts += ["", groups]
    depth = tables.depth_rows(report.phases)
    if not depth.empty:
        parts += ["", units.table(depth, title=tables.DEPTH_TITLE, width=width)]
    spans = stretches.stretch_rows(report, trace)
    if not spans.empty:
        parts += ["", units.table(spans, title=stretches.TITLE, width=width, drop=stretches.DROP)]
    parts += ["", outlier_lines(report.outliers)]
    parts += ["", device_section(report, trace, width)]
    latency = block.histogram_text(report, trace)
    if latency:
        parts += ["", latency]
    return units.wrap("\n".join(parts), width)


def device_section(report, trace, width: int | None = None) -> str:
    """Per phase: what reached the device over the phase's window (iostat -x terms), and the limiter."""
    rows = tables.device_rows(report)
    if rows.empty:
        return "\n".join(map(terminal, tables.device_notes(report, trace)["before"]
                              or ["device view: no block device under the target files"]))
    notes = tables.device_notes(report, trace)
    out = [*map(terminal, notes["before"]),
           units.table(rows, title=tables.DEVICE_TITLE, width=width, drop=tables.DEVICE_DROP),
           "limiter (where each phase's time went)"]
    out += [f"  {terminal(line)}" for line in notes["limiter"]]
    return "\n".join(out + [terminal(line) for line in notes["after"]])


def verdict_line(v) -> str:
    head = f"{v.verdict.upper():12} {tables.describe_claim(v.claim)}: claims {tables.claimed_value(v.claim)}"
    if v.figures and v.window in v.figures:
        head += f"; active {tables.active_value(v)} ({v.window})"
    if v.ratio is not None:
        head += f", ratio {v.ratio:.3f}"
    if v.phases:
        head += f"; {phase_ranges.ranges(v.phases)}"
    if v.reasons:
        head += f" — {v.reasons[0]}"
    return terminal(head)


def verdict_details(v) -> list[str]:
    """What `check -v` prints under a verdict line: every reason after the first, and every
    phase when the line gave them as ranges."""
    lines = [f"  · {terminal(reason)}" for reason in v.reasons[1:]]
    if len(phase_ranges.runs(v.phases)) > 1:
        lines.append(f"  · phases: {', '.join(map(str, v.phases))}")
    return lines


def verdict_section(verdicts, note: str | None, width: int | None = None) -> str:
    if verdicts is None:
        return units.wrap(terminal(f"claims: none read ({note})"), width)
    if not verdicts:
        return "claims: the output holds none"
    # a verdict's continuation lines start under its claim, its reasons' under the reason
    lines = [units.wrap("claims vs active (window = what the benchmark timed; busy = time inside the calls only; "
                        "each claim in the benchmark's own unit, then iowitness's conversion)", width)]
    placement = next((v.placement for v in verdicts if v.placement), "")
    if placement:   # on the output timeline, or by order (analysis/judge/claim_windows.py)
        lines.append(units.wrap(f"  {placement}", width))
    for v in verdicts:
        lines.append(units.wrap("  " + verdict_line(v), width, indent=" " * 13))
        for reason in v.reasons[1:]:
            lines.append(units.wrap(f"  {'':12} · {terminal(reason)}", width))
    return "\n".join(lines)
