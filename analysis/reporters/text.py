"""The phase report as a terminal table, followed by groups and the slowest calls."""

from __future__ import annotations

import pandas as pd

from iowitness.analysis import device, device_checks, figures, observer, units
from iowitness.analysis.reporters import tables

# an outlier line is printed for a phase whose slowest calls take this share of its time
OUTLIER_SHARE = 0.10


def phase_table(phases: pd.DataFrame) -> str:
    return units.table(tables.phase_rows(phases), title="phases")


def group_table(groups: pd.DataFrame, phases: pd.DataFrame) -> str:
    if groups.empty:
        return ""
    return units.table(tables.group_rows(groups, phases), title=tables.GROUPS_TITLE)


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
    parts += [f"WARNING: {w}" for w in tables.warnings(trace)]
    if report.phases.empty:
        parts.append("no phases: the trace holds no read or write calls on target files")
        return "\n".join(parts)
    parts += ["", phase_table(report.phases)]
    groups = group_table(report.groups, report.phases)
    if groups:
        parts += ["", groups]
    parts += ["", outlier_lines(report.outliers)]
    parts += ["", device_section(report, trace)]
    return "\n".join(parts)


def _ms(value) -> str:
    return "-" if value != value else f"{value:.2f}"


def device_section(report, trace) -> str:
    """Per phase: what reached the device over the phase's window (iostat -x terms), and the limiter."""
    lines = device.no_device_lines(trace)
    table = report.device
    if table is None or table.empty or table["device"].isna().all():
        return "\n".join(lines or ["device view: no block device under the target files"])
    names = report.phases.set_index("phase")
    rows = []
    for r in table.itertuples():
        if r.device is None or r.device != r.device:
            continue
        name = names.loc[r.phase]
        rows.append({"#": r.phase, "name": name["benchmark_name"] or name["name"], "device": r.device,
                     "read": units.bytes_(r.read_bytes), "r/s": f"{r.reads / r.window_s:,.0f}" if r.window_s else "-",
                     "rMB/s": f"{r.read_Bps / 1e6:,.1f}", "r_await": _ms(r.r_await_ms),
                     "written": units.bytes_(r.write_bytes), "w/s": f"{r.writes / r.window_s:,.0f}" if r.window_s else "-",
                     "wMB/s": f"{r.write_Bps / 1e6:,.1f}", "w_await": _ms(r.w_await_ms),
                     "areq-sz": units.bytes_(r.areq_bytes) if r.areq_bytes == r.areq_bytes else "-",
                     "aqu-sz": f"{r.aqu_sz:.2f}", "%util": f"{r.util * 100:.1f}",
                     "dev/syscall": f"{r.device_ratio:.2f}" if r.device_ratio == r.device_ratio else "-",
                     "other progs": units.bytes_(r.other_bytes) if r.other_bytes else "",
                     "write-back after": (f"{units.bytes_(r.writeback_bytes)} in {units.seconds(r.writeback_s)}"
                                          if r.writeback_bytes else ""),
                     "iowait": device.pct(r.iowait)})
    out = [units.table(pd.DataFrame(rows), title="device (block layer over each phase's window, as iostat -x; "
                                                  "await in ms, MB = 10^6 bytes; dev/syscall: the benchmark's "
                                                  "own device bytes over its syscall bytes; other progs: bytes "
                                                  "other programs moved on the device meanwhile)")]
    out.append("limiter (where each phase's time went)")
    for r in table.itertuples():
        name = names.loc[r.phase]
        out.append(f"  phase {r.phase} {name['benchmark_name'] or name['name']}: {device.limiter_line(r)}")
    check = device_checks.cross_check(trace)
    for c in check.itertuples():
        if not (c.probe_read_bytes or c.probe_write_bytes or c.diskstats_read_bytes or c.diskstats_write_bytes):
            out.append(f"cross-check {c.device}: nothing to compare: the device did no I/O between the samples "
                       f"that bracket its watched time ({units.seconds(c.seconds)}); trace with --file for a "
                       "device watched from the start")
            continue
        verdict = "agree" if c.agree else "DISAGREE"
        out.append(f"cross-check {c.device} over {units.seconds(c.seconds)}: block probe vs /proc/diskstats {verdict}: "
                   f"read {units.bytes_(c.probe_read_bytes)} vs {units.bytes_(c.diskstats_read_bytes)} "
                   f"({c.probe_reads:,} vs {c.diskstats_reads:,} requests), written "
                   f"{units.bytes_(c.probe_write_bytes)} vs {units.bytes_(c.diskstats_write_bytes)} "
                   f"({c.probe_writes:,} vs {c.diskstats_writes:,} requests)")
    lost = int(trace.counters.get("lost_block", 0))
    if lost:
        out.append(f"WARNING: {lost} block requests were lost; device figures are low")
    return "\n".join(lines + out)


def verdict_line(v) -> str:
    head = f"{v.verdict.upper():12} {tables.describe_claim(v.claim)}: claims {tables.claimed_value(v.claim)}"
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
