"""The report as Markdown, for pasting into an issue or a wiki: the HTML report's tables,
without its charts (tables.py builds both)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness import escape, units
from iowitness.reporters import stretches, tables


def _cell(value, column: str = "") -> str:
    is_int = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    return escape.markdown(tables.number(column, value) if is_int else value)


def table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table; numbers (and their columns) right-aligned."""
    if frame.empty:
        return "_none_"
    cols = list(frame.columns)
    found = units.numeric_columns(frame)
    numeric = [c in found for c in cols]
    lines = ["| " + " | ".join(_cell(c) for c in cols) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v, c) for c, v in zip(cols, row)) + " |")
    return "\n".join(lines)


def warnings(trace) -> list[str]:
    return [f"**WARNING:** {_cell(w)}" for w in tables.warnings(trace)]


def device_section(report, trace) -> list[str]:
    """The device table (iostat -x over each phase's window) and the sentences around it."""
    notes = tables.device_notes(report, trace)
    rows = tables.device_rows(report)
    out = [f"- {_cell(line)}" for line in notes["before"]]
    if rows.empty:
        return out or ["No block device under the target files."]
    if out:
        out.append("")
    out += [f"{_cell(tables.DEVICE_TITLE[0].upper() + tables.DEVICE_TITLE[1:])}.", "", table(rows), "",
            "Where each phase's time went:", ""]
    out += [f"- {_cell(line)}" for line in notes["limiter"]]
    if notes["after"]:
        out += ["", *(f"- {_cell(line)}" for line in notes["after"])]
    return out


def render(report, trace, verdicts=None, note: str | None = None) -> str:
    name = trace.meta.get("path") or "trace"
    parts = [f"# iowitness report: {_cell(name)}", "",
             f"Benchmark: {_cell(report.benchmark or 'not recognised')}. "
             f"Lost events: {_cell(tables.lost_figure(trace))}.", ""]
    parts += [w + "\n" for w in warnings(trace)]
    parts += ["## Claims vs active", ""]
    if verdicts is None:
        parts.append(f"No claims read: {_cell(note or 'no benchmark output')}.")
    elif not verdicts:
        parts.append("The benchmark's output holds no claims.")
    else:
        parts += ["Window = what the benchmark timed; busy = time inside the calls only.", "",
                  table(tables.verdict_rows(verdicts))]
    parts += ["", "## Phases", ""]
    if report.phases.empty:
        parts.append("No phases: the trace holds no read or write calls on target files.")
    else:
        parts.append(table(tables.phase_rows(report.phases)))
        if not report.groups.empty:
            parts += ["", f"### {tables.GROUPS_TITLE[0].upper()}{tables.GROUPS_TITLE[1:]}", "",
                      table(tables.group_rows(report.groups, report.phases))]
        depth = tables.depth_rows(report.phases)
        if not depth.empty:
            parts += ["", f"### {tables.DEPTH_TITLE[0].upper()}{tables.DEPTH_TITLE[1:]}", "", table(depth)]
        spans = stretches.stretch_rows(report, trace)
        if not spans.empty:
            parts += ["", f"### {stretches.TITLE[0].upper()}{stretches.TITLE[1:]}", "", table(spans)]
        parts += ["", "### Slowest calls of each phase", "", table(tables.outlier_rows(report.outliers))]
        parts += ["", "## Device", "", *device_section(report, trace)]
    parts += ["", "## Run", "", table(tables.run_metadata(trace)), ""]
    return "\n".join(parts)


def render_compare(runs, rows) -> str:
    """The comparison's tables: the runs, one table per phase name with a column per run, then
    the changes against the first run (`rows`: deltas.table, what --json and --fail-if use)."""
    from iowitness.analysis.runs import deltas
    from iowitness.reporters import compare

    parts = [f"# iowitness compare: {_cell(' vs '.join(r.label for r in runs))}", ""]
    for run in runs:
        parts += [f"{_cell(run.label)}: {_cell(w)}\n" for w in warnings(run.trace)]
    parts += ["## Runs", "", table(compare.run_table(runs)), "", "## Each phase", "",
              "Phases are matched by name and rank (the first write with the first write). active = the claim's window where a claim "
              "matched the phase, else the wall rate.", ""]
    for label, frame in compare.phase_tables(runs):
        parts += [f"### {_cell(label)}", "", table(frame), ""]
    title = compare.changes_title(runs)
    parts += [f"## {_cell(title[0].upper() + title[1:])}", "", _cell(compare.CHANGES_NOTE), "",
              table(compare.delta_table(runs, rows, deltas.TEXT_METRICS)), ""]
    return "\n".join(parts)
