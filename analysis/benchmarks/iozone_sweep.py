"""IOzone's -a sweep: per test, the active throughput of each (file size, record size) IOzone
printed a figure for, the cells of the grid IOzone -R lays out (rows: file size, columns: record
size). reporters/sweep.py lays the grid out for the text report and the HTML report's charts.

A cell is the active figure in the window IOzone timed for the phase the claim names (the
wall rate where no claim matched); unit_of gives IOzone's own unit (kB/s, kB = 1,024 B) so that
the grid reads beside IOzone's table.
"""

from __future__ import annotations

from dataclasses import dataclass

from iowitness import units
from iowitness.analysis.benchmarks import iozone

# the words the reports give the grid: whose figures and windows, its option that sweeps, and its
# option for the report whose layout the grid copies
WHO, SWEEP_OPTION, LAYOUT_OPTION = "IOzone", "-a", "-R"


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


def unit_of(verdicts) -> tuple[str, float]:
    """(unit, bytes per unit) of IOzone's throughput claims: its kB/s (1,024 B/s), or with -N/-O
    no byte unit at all, then KiB/s, the same number under its binary name."""
    for v in verdicts or []:
        if v.kind == "bytes" and v.claim.bytes_per_s and v.claim.value:
            return v.claim.unit, units.unit_worth(v.claim.unit, v.claim.bytes_per_s / v.claim.value)
    return "KiB/s", 1024.0
