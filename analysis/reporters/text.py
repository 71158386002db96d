"""The phase report as a terminal table, followed by groups and the slowest calls."""

from __future__ import annotations

import os

import pandas as pd

from iowitness.analysis import figures, observer, units

# an outlier line is printed for a phase whose slowest calls take this share of its time
OUTLIER_SHARE = 0.10


def _flags(row) -> str:
    marks = [f for f in ("O_DIRECT", "O_SYNC", "O_DSYNC", "O_APPEND") if getattr(row, f)]
    if row.reread:
        marks.append("re-read")
    if row.rewrite:
        marks.append("re-write")
    if row.errors:
        marks.append(f"{row.errors} failed call" + ("s" if row.errors > 1 else ""))
    if row.short:
        marks.append(f"{row.short} short")
    if row.too_short:
        marks.append("TOO SHORT TO TIME")
    return ", ".join(marks)


def phase_table(phases: pd.DataFrame) -> str:
    rows = []
    for r in phases.itertuples():
        rows.append({
            "#": r.phase, "name": r.benchmark_name or r.name,
            "pattern": r.pattern + (f" {units.bytes_(r.stride)}" if r.stride else "")
            if r.benchmark_name else "",
            "file": os.path.basename(r.path), "pid": r.tgid, "tid": r.tid if r.threads == 1 else f"{r.threads} thr",
            "record": units.bytes_(r.record_size), "bytes": units.bytes_(r.bytes), "ops": int(r.ops),
            "time": units.seconds(r.duration_s), "wall": units.rate(r.wall_Bps), "busy": units.rate(r.busy_Bps),
            "p50 µs": units.micros(r.lat_p50_us), "p99 µs": units.micros(r.lat_p99_us),
            "max µs": units.micros(r.lat_max_us),
            "fsync": f"{int(r.fsyncs)} / {units.seconds(r.fsync_ns / 1e9)}" if r.fsyncs else "",
            "user": units.seconds(r.user_ns / 1e9), "notes": _flags(r),
        })
    return units.table(pd.DataFrame(rows), title="phases")


def group_table(groups: pd.DataFrame, phases: pd.DataFrame) -> str:
    if groups.empty:
        return ""
    names = phases.set_index("phase")
    rows = []
    for g in groups.itertuples():
        first = names.loc[g.phases[0]]
        rows.append({"group": g.group, "name": first["benchmark_name"] or first["name"], "members": g.members,
                     "phases": " ".join(map(str, g.phases)), "bytes": units.bytes_(g.bytes),
                     "children": units.rate(g.children_Bps), "parent": units.rate(g.parent_Bps),
                     "at stonewall": f"{g.share_at_stonewall:.0%} done"})
    return units.table(pd.DataFrame(rows), title="groups (concurrent phases: children = sum of member rates, "
                                                  "parent = all bytes / group wall time)")


def outlier_lines(outliers: pd.DataFrame) -> str:
    lines = []
    for phase, calls in outliers.groupby("phase"):
        share = calls["share"].sum()
        if not share >= OUTLIER_SHARE:
            continue
        worst = ", ".join(f"{units.micros(c.latency_us)} µs at offset {c.offset} (+{units.seconds(c.at_s)})"
                          for c in calls.head(3).itertuples())
        lines.append(f"  phase {phase}: its {len(calls)} slowest calls take {share:.0%} of its time: {worst}")
    if not lines:
        return "slowest calls: in every phase the 5 slowest calls take less than 10 % of its time"
    return "slowest calls (phases where a few calls dominate)\n" + "\n".join(lines)


def render(report, trace) -> str:
    parts = [f"trace {trace.meta.get('path')}   benchmark: {report.benchmark or 'not recognised'}   "
             f"lost events: {trace.lost}", observer.line(trace)]
    if trace.lost:
        parts.append(f"WARNING: {trace.lost} events were lost; phases may miss calls")
    if not trace.meta.get("complete", True):
        parts.append("WARNING: the trace is INCOMPLETE (the collector stopped before the end); "
                     "the last phases may be cut short")
    if report.phases.empty:
        parts.append("no phases: the trace holds no read or write calls on target files")
        return "\n".join(parts)
    parts += ["", phase_table(report.phases)]
    groups = group_table(report.groups, report.phases)
    if groups:
        parts += ["", groups]
    parts += ["", outlier_lines(report.outliers)]
    return "\n".join(parts)


def _describe_claim(claim) -> str:
    where = []
    if claim.scope != "phase":
        where.append(claim.scope)
    if claim.record_size:
        where.append(f"{units.bytes_(claim.record_size)} records")
    if claim.file_size:
        where.append(f"{units.bytes_(claim.file_size)} file")
    label = claim.test + (f" ({', '.join(where)})" if where else "")
    value = f"{claim.value:,.0f}" if abs(claim.value) >= 1000 else f"{claim.value:g}"
    return f"{label}: claims {value} {claim.unit}"


def verdict_line(v) -> str:
    head = f"{v.verdict.upper():12} {_describe_claim(v.claim)}"
    if v.figures and v.window in v.figures:
        head += f"; active {figures.fmt(v.figures[v.window], v.kind)} ({v.window})"
    if v.ratio is not None:
        head += f", ratio {v.ratio:.3f}"
    if v.phases:
        head += f"; phase {', '.join(map(str, v.phases))}"
    if v.reasons:
        head += f" — {v.reasons[0]}"
    return head


def verdict_section(verdicts, note: str | None) -> str:
    if verdicts is None:
        return f"claims: none read ({note})"
    if not verdicts:
        return "claims: the output holds none"
    lines = ["claims vs active (window = what the benchmark timed; busy = time inside the calls only)"]
    for v in verdicts:
        lines.append("  " + verdict_line(v))
        for reason in v.reasons[1:]:
            lines.append(f"  {'':12} · {reason}")
    return "\n".join(lines)
