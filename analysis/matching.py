"""Which phase (or group of concurrent phases) each claim is about, and which window it timed.

IOzone claims name a test, a record size and a file size; in throughput mode they are about
all children together (or the slowest, fastest, average one). fio claims name a job and a
direction (with --group_reporting, a group named after its first job). A dd claim is about
its one copy. Spec claims say how they map (by order, by name, or by operation).

Example: `match(trace.report(), claims, "iozone", trace.meta["command"], trace=trace)` gives
one Verdict per claim, in the claims' order (IOzone's -R report copies and per-child lines
are left out: they repeat numbers judged once already).
"""

from __future__ import annotations

import os
from collections import defaultdict

import pandas as pd

from iowitness.analysis import buffering, device_checks, verdicts
from iowitness.analysis import figures as active_figures
from iowitness.analysis import stonewall as stonewalling
from iowitness.analysis.benchmarks import fio_jobs
from iowitness.analysis.claims import Claim, iozone

GROUP_SCOPES = {"children", "parent", "min process", "max process", "avg process", "min xfer"}
PER_PROCESS = {"min process", "max process", "avg process"}
# fio's rw values and the directions each one moves data in (fio HOWTO, "rw")
FIO_DIRECTIONS = {
    "read": {"read"}, "randread": {"read"}, "write": {"write"}, "randwrite": {"write"},
    "rw": {"read", "write"}, "readwrite": {"read", "write"}, "randrw": {"read", "write"},
    "trim": set(), "randtrim": set(), "trimwrite": {"write"},
}


def iozone_window(argv: list[str]) -> str:
    """IOzone's timed window: -e adds the fsync after the last write, -c adds the close."""
    options = iozone.parse_command(argv) if argv else {}
    if options.get("close_in_timing"):
        return "+close"
    return "+fsync" if options.get("fsync_in_timing") else "calls"


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
          spec_window: str = "calls", trace=None, ceiling: dict | None = None) -> list[verdicts.Verdict]:
    """One verdict per claim. `trace` (the trace the report was built from) adds what only its
    events show: a buffered stream's final flush, and fio's layout process."""
    phases, groups = report.phases, report.groups.set_index("group") if len(report.groups) else report.groups
    argv = command or []
    window = {"iozone": iozone_window(argv), "dd": dd_window(argv)}.get(source, spec_window)
    options = iozone.parse_command(argv) if source == "iozone" and argv else {}
    flushes = buffering.late_flushes(trace.events, report.assigned, phases) if trace is not None else {}
    root = trace.meta.get("pid") if trace is not None else None
    seen: dict[tuple, int] = defaultdict(int)
    lines: dict[tuple, tuple[str, int]] = {}
    # fio prints one entry per clone of a job (numjobs=N), all under the job's name
    entries = defaultdict(int)
    for c in claims:
        entries[(c.job, c.direction)] += source == "fio"
    out = []
    for claim in claims:
        if claim.extra.get("from") == "report" or claim.scope == "child":
            continue  # IOzone's -R tables repeat the main table; per-child lines add nothing to judge
        group, stonewall, notes, combine, last_ns = None, None, [], "sum", None
        if source == "iozone" and claim.scope in GROUP_SCOPES:
            named = _iozone_rows(claim, phases)
            numbers = list(dict.fromkeys(named.sort_values("data_first_ns")["group"]))
            key = ("group", claim.test, claim.scope, claim.record_size)
            k = seen[key]
            seen[key] += 1
            rows = named[named["group"] == numbers[k]] if k < len(numbers) else named.iloc[0:0]
            if k < len(numbers) and numbers[k] in groups.index:
                group = groups.loc[numbers[k]]
            notes += _missing_members(claim, rows)
            if trace is not None and len(rows):
                last_ns = _last_call_on(trace.events, options.get("files") or [], rows, phases)
            stonewall = stonewalling.stonewall_of(rows, group, trace.events if trace is not None else None,
                                              report.assigned, claim.file_size, claim.processes) \
                if options.get("stonewall", True) else None
            if claim.scope in PER_PROCESS | {"min xfer"} and len(rows):
                out.append(_per_process(claim, rows, stonewall, window, tolerance, lost, options, notes))
                continue
        elif source == "iozone":
            candidates = _iozone_rows(claim, phases).sort_values("data_first_ns")
            key = (claim.test, claim.record_size, claim.file_size)
            k = seen[key]
            seen[key] += 1
            rows = candidates.iloc[k:k + 1]
        elif source == "fio":
            rows, combine = _fio_rows(claim, phases, argv, root)
            if entries[(claim.job, claim.direction)] > 1 and combine == "sum":
                clones = list(dict.fromkeys(rows.sort_values("data_first_ns")["tid"]))
                k = seen[("fio", claim.job, claim.direction)]
                seen[("fio", claim.job, claim.direction)] += 1
                rows = rows[rows["tid"] == clones[k]] if k < len(clones) else rows.iloc[0:0]
        elif source == "dd":
            rows = phases[phases["benchmark_name"].astype(object).isin(["dd write", "dd read"])]
            rows = rows.sort_values("bytes", ascending=False).iloc[:1]
        else:
            rows = _spec_rows(claim, phases, seen, lines)
        notes += [buffering.late_flush_reason(flushes[int(p)]) for p in rows["phase"] if int(p) in flushes]
        notes += device_checks.claim_reasons(claim, rows, getattr(report, "device", None), ceiling, window)
        verdict = verdicts.judge(claim, rows, window, tolerance, lost, group,
                                 stonewall=stonewall, combine=combine, notes=tuple(notes), last_ns=last_ns)
        _bytes_reason(claim, rows, verdict)
        out.append(verdict)
    return out


def _last_call_on(events: pd.DataFrame, files: list[str], rows: pd.DataFrame, phases: pd.DataFrame) -> int | None:
    """The end of the last call on the benchmark's files (IOzone's -F) during a group's test:
    from its first data call to the next phase's first call. A child that moved no data
    still opened and closed its file, and the parent waited for it."""
    if not files:
        return None
    start = int(rows["data_first_ns"].min())
    later = phases.loc[phases["first_ns"] > int(rows["last_ns"].max()), "first_ns"]
    end = int(later.min()) if len(later) else None
    paths = events["path"].astype(str)
    mine = paths.isin([os.path.abspath(f) for f in files]).to_numpy() & (events["start_ns"].to_numpy() >= start)
    if end is not None:
        mine &= events["start_ns"].to_numpy() < end
    return int(events.loc[mine, "end_ns"].max()) if mine.any() else None


def _fio_rows(claim: Claim, phases: pd.DataFrame, argv: list[str], root) -> tuple[pd.DataFrame, str]:
    """A job's phases in the claim's direction; with --group_reporting, those of every job of
    the group that moves data in that direction, as one figure over the group's runtime."""
    names = phases["benchmark_name"].astype(object)
    jobs = fio_jobs(argv)
    members = [claim.job]
    if claim.extra.get("group_reporting") or "--group_reporting" in argv:
        order = list(jobs)
        if claim.job in order:
            members = [claim.job]
            for job in order[order.index(claim.job) + 1:]:
                if "new_group" in jobs[job] or "stonewall" in jobs[job] or "wait_for_previous" in jobs[job]:
                    break
                members.append(job)
    wanted = set()
    for job in members:
        rw = jobs.get(job, {}).get("rw", jobs.get(job, {}).get("readwrite", "read"))
        moves = FIO_DIRECTIONS.get(rw.split(":")[0], {"read", "write"})
        if claim.direction in moves or job == claim.job and len(members) == 1:
            wanted |= {f"{job} {claim.direction}", f"{job} mixed"}
    rows = phases[names.isin(wanted)]
    # fio lays files out in its main process before the jobs start: not a job's I/O
    if root is not None and (rows["tgid"] != root).any():
        rows = rows[rows["tgid"] != root]
    return rows, "span" if len(members) > 1 else "sum"


def _spec_rows(claim: Claim, phases: pd.DataFrame, seen, lines) -> pd.DataFrame:
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
           else (claim.extra.get("operation", claim.direction), claim.extra.get("pattern")) if how == "operation"
           else "")
    # several numbers on one printed line (ops/s and µs/op) are about the same phase
    previous = lines.get(key)
    if previous is not None and previous[0] == claim.printed:
        k = previous[1]
    else:
        k = seen[key]
        seen[key] += 1
    lines[key] = (claim.printed, k)
    return rows.iloc[k:k + 1]


def _missing_members(claim: Claim, rows: pd.DataFrame) -> list[str]:
    if not claim.processes or len(rows) >= claim.processes:
        return []
    idle = claim.processes - len(rows)
    return [f"{idle} of the {claim.processes} processes moved no data in this test (the trace has "
            f"{len(rows)} phase{'s' if len(rows) != 1 else ''}): they count as 0 in the benchmark's figures"]


def iozone_min(values) -> float:
    """IOzone's "Min throughput" and "Min xfer": a minimum that restarts after a child at 0.

    iozone.c: `if(!min_throughput) min_throughput=child_stat->throughput; if(child_stat->throughput
    < min_throughput) min_throughput=...` over the children in order: a 0 is taken, then
    replaced by the next child's value.
    """
    low = 0.0
    for v in values:
        if not low:
            low = v
        if v < low:
            low = v
    return low


def _children(members: pd.DataFrame, processes: int, files: list[str]) -> pd.DataFrame:
    """The members in IOzone's child order (child i works on the i-th -F file), with a row of
    zeros for every child that moved no data."""
    slots = {os.path.abspath(f): i for i, f in enumerate(files)}
    members = members.assign(slot=[slots.get(os.path.abspath(str(p)), len(files) + i)
                                   for i, p in enumerate(members["path"])])
    members = members.sort_values("slot", kind="stable").reset_index(drop=True)
    if processes > len(members):
        taken = set(members["slot"])
        free = [i for i in range(processes + len(members)) if i not in taken][:processes - len(members)]
        idle = pd.DataFrame({"phase": -1, "path": "", "own": 0.0, "stonewall": 0.0, "own from go": 0.0,
                             "stonewall from go": 0.0, "amount": 0.0, "counted": 0.0, "slot": free})
        members = pd.concat([members, idle]).sort_values("slot", kind="stable").reset_index(drop=True)
    return members


def _per_process(claim, rows, stonewall, window, tolerance, lost, options, notes) -> verdicts.Verdict:
    """IOzone's min/max/avg throughput per process and its min xfer: the same statistic over
    the children, each as IOzone counts it (to the stonewall unless -x)."""
    end_col = dict(active_figures.WINDOWS).get(window)
    members = stonewalling.member_rates(rows, stonewall, claim.direction, "bytes", end_col)
    processes = max(claim.processes or 0, len(members))
    children = _children(members, processes, options.get("files") or [])
    if claim.scope == "min xfer":
        kind, value = "amount", claim.extra.get("bytes")
        columns = {window: "amount", "stonewall": "counted"}
    else:
        kind, value = "bytes", claim.bytes_per_s
        columns = {window: "own", "stonewall": "stonewall", f"{window} from go": "own from go",
                   "stonewall from go": "stonewall from go"}
    statistic = {"min process": iozone_min, "min xfer": iozone_min, "max process": max,
                 "avg process": lambda v: sum(v) / processes}[claim.scope]
    figures = {name: float(statistic(list(children[col]))) for name, col in columns.items()
               if stonewall is not None or not name.startswith("stonewall")}
    reasons = [verdicts.lost_reason(lost)] if lost else []
    if bool(rows["too_short"].any()):
        reasons.append(verdicts.too_short_reason(rows, calls=False))
    if stonewall is not None and stonewall.share < 0.999:
        reasons.append(stonewalling.stonewall_reason(stonewall, rows))
    if claim.scope in ("min process", "min xfer"):
        col = columns["stonewall" if stonewall is not None else window]
        if iozone_min(list(children[col])) != min(children[col]):
            reasons.append(f"IOzone's minimum restarts after a child at 0 (iozone.c: if(!min) min=next): the "
                           f"lowest child is {active_figures.fmt(float(min(children[col])), kind)}, IOzone's rule gives "
                           f"{active_figures.fmt(figures.get('stonewall', figures[window]), kind)}")
    reasons += list(notes)
    active = figures[window]
    ratio = None if value is None else float(value / active) if active else 1.0 if value == 0 else None
    verdict = verdicts.Verdict(claim, [int(p) for p in rows["phase"]], "agrees", figures, window, ratio, reasons,
                               kind=kind)
    if value is None:
        return verdicts.cannot_judge(verdict, "the claim is not a rate or an amount")
    # a count of records: one record more or less at the stonewall is IOzone's own rounding
    slack = (rows["record_size"].max() / value if kind == "amount" and value else 0) + tolerance
    if verdicts.within(ratio, slack, without_ratio=False):
        return verdict
    other = figures.get("stonewall")
    between = stonewalling.bracketed(value, figures, tolerance) if kind != "amount" else None
    if window != "stonewall" and other is not None and (abs(value / other - 1) <= slack if other else value == 0):
        explanation = (f"stonewalling: counted up to the moment the first child finished, as IOzone does, "
                       f"the {claim.scope} is {active_figures.fmt(other, kind)}, within "
                       f"{abs(value / other - 1) if other else 0:.1%} of the claim")
    else:
        explanation = stonewalling.bracket_reason(between, value, figures, kind) if between else None
    verdicts.settle(verdict, value, active, explanation, bool(rows["too_short"].any()), tolerance,
                    statistic=claim.scope)
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

