"""A sweep at a glance (IOzone -a): per test, active throughput against file size and record size,
rows: file size, columns: record size (as IOzone -R lays out its own report), for the text
report's summary before the per-phase detail and for the HTML report's sweep charts.

The cells, the unit they are given in and the words that name them are the benchmark's
(analysis/benchmarks/iozone_sweep.py, through the registry's sweep_of); here is their layout: a
mark after a figure gives the verdict when it is not "agrees" ("-": no active figure)."""

from __future__ import annotations

import pandas as pd

from iowitness import units
from iowitness.analysis import benchmarks

MARKS = {"agrees": "", "explained": "~", "disagrees": "!", "cannot judge": "?"}
LEGEND = "mark after a figure: ! disagrees with {who}'s, ~ differs and explained, ? cannot judge, none: agrees"


def cells(report, verdicts) -> dict:
    """Per test of a sweep, its cells (analysis/benchmarks/iozone_sweep.Cell); {} when the run is
    no sweep or its benchmark has none."""
    module = benchmarks.sweep_of(report)
    return module.cells(report, verdicts) if module else {}


def points(report, verdicts) -> dict[str, list[tuple[int, int, float]]]:
    """The same cells as (file size, record size, bytes/s), for the sweep charts (cells without
    an active figure left out)."""
    found = {test: [(c.file_size, c.record_size, c.Bps) for c in cs if c.Bps == c.Bps]
             for test, cs in cells(report, verdicts).items()}
    return {test: pts for test, pts in found.items() if pts}


def matrix(test_cells: list, factor: float) -> pd.DataFrame:
    """One test's grid: a row per file size (in kB, IOzone -R's first column), a column per
    record size (in kB), each cell the figure in the benchmark's unit with its verdict mark."""
    files = sorted({c.file_size for c in test_cells})
    records = sorted({c.record_size for c in test_cells})
    grid = {(c.file_size, c.record_size): c for c in test_cells}
    rows = []
    for f in files:
        row = {"file kB": f"{f // 1024:,}"}
        for rec in records:
            c = grid.get((f, rec))
            row[f"{rec // 1024:,}"] = ("" if c is None else "-" + MARKS.get(c.verdict or "", "") if c.Bps != c.Bps
                                      else f"{c.Bps / factor:,.0f}{MARKS.get(c.verdict or '', '')}")
        rows.append(row)
    return pd.DataFrame(rows)


def text_section(report, verdicts, width: int | None) -> str:
    """The sweep's summary for the terminal: per test, its grid (split into column groups when
    wider than the terminal), or "" when the run is no sweep."""
    found = cells(report, verdicts)
    if not found:
        return ""
    module = benchmarks.sweep_of(report)
    unit, factor = module.unit_of(verdicts)
    what = units.claim_unit_note(unit, factor)
    who = module.WHO
    out = [units.wrap(f"sweep ({who} {module.SWEEP_OPTION}, laid out as {who} {module.LAYOUT_OPTION}): active {unit}"
                      + (f" ({what})" if what else "") + f" in the window {who} timed, the wall rate where no "
                      "claim matched; rows: file size in kB, columns: record size in kB", width),
           units.wrap(LEGEND.format(who=who), width)]
    for test, test_cells in found.items():
        frame = matrix(test_cells, factor)
        out.append("")
        for part in _column_groups(frame, width):
            out.append(units.table(part, title=test))
    return "\n".join(out)


def _column_groups(frame: pd.DataFrame, width: int | None) -> list[pd.DataFrame]:
    """The grid cut into groups of record-size columns that each fit `width`, each group with
    the file-size column again (as R prints a wide matrix)."""
    if not width:
        return [frame]
    first, rest = frame.columns[0], list(frame.columns[1:])
    wide = {c: max(len(c), *(len(str(v)) for v in frame[c])) for c in frame.columns}
    groups, current, used = [], [], wide[first]
    for c in rest:
        if current and used + 2 + wide[c] > width:
            groups.append(current)
            current, used = [], wide[first]
        current.append(c)
        used += 2 + wide[c]
    groups.append(current)
    return [frame[[first, *g]] for g in groups]
