"""Which phase (or group of concurrent phases) each claim is about, and which window it timed.

IOzone claims name a test, a record size and a file size; in throughput mode they are about
all children together (or the slowest, fastest, average one). fio claims name a job and a
direction. A dd claim is about its one copy. Spec claims say how they map (by order, by
name, or by operation).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd

from iowitness.analysis import verdicts
from iowitness.analysis.claims import Claim

GROUP_SCOPES = {"children", "parent", "min process", "max process", "avg process"}


def iozone_window(argv: list[str]) -> str:
    """IOzone's timed window: -e adds the fsync after the last write, -c adds the close."""
    letters = set()
    for arg in argv[1:]:
        if arg.startswith("-") and not arg.startswith("-+") and arg[1:].isalpha():
            letters |= set(arg[1:])
    if "c" in letters:
        return "+close"
    return "+fsync" if "e" in letters else "calls"


def dd_window(argv: list[str]) -> str:
    """dd stops its clock after conv=fdatasync/fsync has synced the output."""
    conv = ",".join(a.split("=", 1)[1] for a in argv[1:] if a.startswith("conv="))
    return "+fsync" if "fdatasync" in conv or "fsync" in conv else "calls"


def _named(phases: pd.DataFrame, test: str) -> pd.DataFrame:
    return phases[phases["benchmark_name"].astype(object) == test]


def _iozone_rows(claim: Claim, phases: pd.DataFrame) -> pd.DataFrame:
    rows = _named(phases, claim.test)
    if claim.record_size:
        rows = rows[rows["record_size"] == claim.record_size]
    if claim.file_size and claim.scope == "phase":
        rows = rows[rows["bytes"] == claim.file_size] if (rows["bytes"] == claim.file_size).any() else rows
    return rows


def match(report, claims: list[Claim], source: str, command: list[str] | None,
          tolerance: float = verdicts.DEFAULT_TOLERANCE, lost: int = 0,
          spec_window: str = "calls") -> list[verdicts.Verdict]:
    phases, groups = report.phases, report.groups.set_index("group") if len(report.groups) else report.groups
    argv = command or []
    window = {"iozone": iozone_window(argv), "dd": dd_window(argv)}.get(source, spec_window)
    seen: dict[tuple, int] = defaultdict(int)
    out = []
    for claim in claims:
        if claim.extra.get("from") == "report" or claim.scope == "child":
            continue  # IOzone's -R tables repeat the main table; per-child lines add nothing to judge
        group = None
        if source == "iozone" and claim.scope in GROUP_SCOPES:
            named = _iozone_rows(claim, phases)
            numbers = list(dict.fromkeys(named.sort_values("data_first_ns")["group"]))
            key = ("group", claim.test, claim.scope, claim.record_size)
            k = seen[key]
            seen[key] += 1
            rows = named[named["group"] == numbers[k]] if k < len(numbers) else named.iloc[0:0]
            if k < len(numbers) and numbers[k] in groups.index:
                group = groups.loc[numbers[k]]
            if claim.scope in ("min process", "max process", "avg process") and len(rows):
                out.append(_per_process(claim, rows, window, tolerance, lost))
                continue
            if claim.scope == "children" and group is None and len(rows) == 1:
                pass  # one child: its group is the phase itself
        elif source == "iozone":
            candidates = _iozone_rows(claim, phases).sort_values("data_first_ns")
            key = (claim.test, claim.record_size, claim.file_size)
            k = seen[key]
            seen[key] += 1
            rows = candidates.iloc[k:k + 1]
        elif source == "fio":
            names = {f"{claim.job} {claim.direction}", f"{claim.job} mixed"}
            rows = phases[phases["benchmark_name"].astype(object).isin(names)]
        elif source == "dd":
            rows = phases[phases["benchmark_name"].astype(object).isin(["dd write", "dd read"])]
            rows = rows.sort_values("bytes", ascending=False).iloc[:1]
        else:
            rows = _spec_rows(claim, phases, seen)
        if claim.scope == "min xfer":
            out.append(verdicts.Verdict(claim, [int(p) for p in rows["phase"]], "cannot judge",
                                        reasons=["a transfer size, not a rate"]))
            continue
        verdict = verdicts.judge(claim, rows, window, tolerance, lost, group)
        _bytes_reason(claim, rows, verdict)
        out.append(verdict)
    return out


def _spec_rows(claim: Claim, phases: pd.DataFrame, seen) -> pd.DataFrame:
    how = claim.extra.get("match", "order")
    ordered = phases.sort_values("data_first_ns")
    if how == "name":
        phase_name = claim.extra.get("phase", claim.test)
        rows = ordered[(ordered["benchmark_name"].astype(object) == phase_name) | (ordered["name"] == phase_name)]
    elif how == "operation":
        rows = ordered[ordered["operation"] == claim.extra.get("operation", claim.direction)]
        if claim.extra.get("pattern"):
            rows = rows[rows["pattern"] == claim.extra["pattern"]]
    else:
        rows = ordered
    key = ("spec", how, claim.extra.get("phase", claim.test) if how == "name"
           else claim.extra.get("operation", claim.direction) if how == "operation" else "")
    k = seen[key]
    seen[key] += 1
    return rows.iloc[k:k + 1]


def _per_process(claim, rows, window, tolerance, lost) -> verdicts.Verdict:
    """IOzone's min/max/avg throughput per process: the same statistic over the members."""
    per_member = [verdicts.figures_of(rows.iloc[[i]], claim.direction, "bytes") for i in range(len(rows))]
    reduce = {"min process": np.nanmin, "max process": np.nanmax, "avg process": np.nanmean}[claim.scope]
    figures = {name: float(reduce([m[name] for m in per_member])) for name in per_member[0]}
    value = claim.bytes_per_s
    active = figures[window]
    ratio = value / active if active else None
    verdict = verdicts.Verdict(claim, [int(p) for p in rows["phase"]], "agrees", figures, window, ratio)
    if ratio is None or abs(ratio - 1) > tolerance:
        verdict.verdict = "disagrees"
        verdict.reasons.append(f"{claim.scope}: claim {value:,.0f} B/s vs {window} {active:,.0f} B/s")
    return verdict


def _bytes_reason(claim: Claim, rows: pd.DataFrame, verdict: verdicts.Verdict) -> None:
    """Bytes the benchmark says it moved against bytes the kernel moved for it."""
    said = claim.extra.get("bytes") or (claim.file_size if claim.scope == "phase" and claim.source == "iozone"
                                        else None)
    if not said or rows.empty:
        return
    moved = int(rows["bytes"].sum())
    if moved != said:
        verdict.reasons.append(f"the benchmark counts {said:,} bytes, the kernel moved {moved:,} "
                               f"({moved / said:.2f}×): buffering or read-ahead between them")
