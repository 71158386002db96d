"""An IOzone -a sweep at a glance: per test, active throughput against file size and record
size, as IOzone -R lays out its own report (rows: file size, columns: record size), for the
text report's summary before the per-phase detail and for the HTML report's sweep charts.

A cell is the active figure in the window IOzone timed for the phase the claim names (the
wall rate where no claim matched), in IOzone's own unit (kB/s, kB = 1,024 B) so that it reads
beside IOzone's table; a mark after it gives the verdict when it is not "agrees" ("-": no active figure)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from iowitness import units
from iowitness.analysis.benchmarks import iozone

MARKS = {"agrees": "", "explained": "~", "disagrees": "!", "cannot judge": "?"}
LEGEND = "mark after a figure: ! disagrees with IOzone's, ~ differs and explained, ? cannot judge, none: agrees"


@dataclass
class Cell:
    file_size: int
    record_size: int
    Bps: float                  # active bytes per second
    verdict: str | None         # the claim's verdict, None where no claim matched


def cells(report, verdicts) -> dict[str, list[Cell]]:
    """Per IOzone test of a sweep, a cell per (file size, record size); {} when the run is no
    sweep (one file size and one record size in every test) or not IOzone's."""
    phases = report.phases
    if report.benchmark != "iozone" or phases.empty:
        return {}
    out: dict[str, list[Cell]] = {}
    seen = set()
    # with claims: a cell per number IOzone printed, where IOzone printed it (its test, file size
    # and record size), holding the active figure of the phase it was matched to; a claim
    # matched to the wrong phase is marked by its verdict, never left out or put elsewhere
    for v in verdicts or []:
        c = v.claim
        if v.kind != "bytes" or not c.file_size or not c.record_size or v.claim.scope != "phase":
            continue
        key = (c.test, int(c.file_size), int(c.record_size))
        if key in seen:
            continue
        seen.add(key)
        out.setdefault(c.test, []).append(Cell(key[1], key[2], float(v.figures.get(v.window, float("nan"))),
                                               v.verdict))
    command = (getattr(report.trace, "meta", None) or {}).get("command") or []
    if not verdicts and iozone.parse_command(command).get("auto"):
        # without claims, a sweep's (-a) phases: each named phase, its bytes as the file size and
        # its wall rate (not in a throughput run, whose stonewalled children move less than a file)
        for r in phases.itertuples():
            if not r.benchmark_name or "not reported" in r.benchmark_name:
                continue
            key = (r.benchmark_name, int(r.bytes), int(r.record_size))
            if r.wall_Bps != r.wall_Bps or not r.wall_Bps or key in seen:
                continue
            seen.add(key)
            out.setdefault(r.benchmark_name, []).append(Cell(key[1], key[2], float(r.wall_Bps), None))
    swept = any(len({c.file_size for c in cs}) > 1 or len({c.record_size for c in cs}) > 1 for cs in out.values())
    return out if swept else {}


def points(report, verdicts) -> dict[str, list[tuple[int, int, float]]]:
    """The same cells as (file size, record size, bytes/s), for the sweep charts (cells without
    an active figure left out)."""
    found = {test: [(c.file_size, c.record_size, c.Bps) for c in cs if c.Bps == c.Bps]
             for test, cs in cells(report, verdicts).items()}
    return {test: pts for test, pts in found.items() if pts}


def unit_of(verdicts) -> tuple[str, float]:
    """(unit, bytes per unit) of IOzone's throughput claims: its kB/s (1,024 B/s), or with -N/-O
    no byte unit at all, then KiB/s, the same number under its binary name."""
    for v in verdicts or []:
        if v.kind == "bytes" and v.claim.bytes_per_s and v.claim.value:
            return v.claim.unit, units.unit_worth(v.claim.unit, v.claim.bytes_per_s / v.claim.value)
    return "KiB/s", 1024.0


def matrix(test_cells: list[Cell], factor: float) -> pd.DataFrame:
    """One test's grid: a row per file size (in kB, IOzone's first column), a column per
    record size (in kB), each cell the figure in IOzone's unit with its verdict mark."""
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
    unit, factor = unit_of(verdicts)
    what = units.claim_unit_note(unit, factor)
    out = [units.wrap(f"sweep (IOzone -a, laid out as IOzone -R): active {unit}"
                      + (f" ({what})" if what else "") + " in the window IOzone timed, the wall rate where no "
                      "claim matched; rows: file size in kB, columns: record size in kB", width),
           units.wrap(LEGEND, width)]
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
