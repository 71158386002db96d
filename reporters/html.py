"""The report as one self-contained HTML file: tables (tables.py) and SVG charts (charts.py).

Order on the page: the verdict table, IOzone -a sweep charts (what a sweep's reader came
for), the run's throughput over time with its phases, the phase table (groups, queue depth,
the in-call time of each open-to-close stretch), one section per phase (claim vs active,
latency distribution, throughput over time, offset vs time, device vs syscall bytes, slowest
calls), then the run's metadata. A trace with hundreds of phases gets per-phase charts for the
ones that matter most (a claim that is not simply agreed with, then the longest) and says so:
every phase is in the tables, and the page stays small and quick to write (MAX_PHASE_SECTIONS).
"""

from __future__ import annotations

import os
import string
from importlib import resources

import numpy as np
import pandas as pd

from iowitness import escape, units
from iowitness.analysis import benchmarks
from iowitness.analysis.measure import figures as active_figures
from iowitness.reporters import block, chart_bins, charts, phase_ranges, stretches, sweep, tables

MAX_PHASE_SECTIONS = 12


esc = escape.html   # every value on the page goes through it: text and attributes alike


def page(title: str, body: str) -> str:
    from iowitness.version import __version__

    template = resources.files("iowitness.reporters").joinpath("templates/report.html").read_text()
    return string.Template(template).substitute(title=esc(title), body=body, version=esc(__version__))


def table(frame: pd.DataFrame, css: str = "", row_class=None, html_columns: tuple = ()) -> str:
    """An HTML table of display values; numbers right-aligned. `html_columns` hold markup already."""
    if frame.empty:
        return '<p class="note">none</p>'
    cols = list(frame.columns)
    numeric = units.numeric_columns(frame)
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    body = []
    for i, row in enumerate(frame.itertuples(index=False)):
        cells = []
        for c, v in zip(cols, row):
            text = v if c in html_columns else esc(tables.number(c, v) if isinstance(v, (int, np.integer)) else v)
            cls = ' class="num"' if c in numeric else ' class="reasons"' if c == "reasons" else ""
            cells.append(f"<td{cls}>{text}</td>")
        klass = f' class="{row_class(i)}"' if row_class else ""
        body.append(f"<tr{klass}>{''.join(cells)}</tr>")
    return (f'<div class="scroll"><table class="{css}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def figure(svg: str, name: str, wide: bool = False) -> str:
    if svg.startswith("<svg"):
        return f'<figure class="chart{" wide" if wide else ""}" data-chart="{esc(name)}">{svg}</figure>'
    return svg   # a "no chart" note


def warnings(trace) -> str:
    return "".join(f'<p class="warning">WARNING: {esc(w)}</p>' for w in tables.warnings(trace))


def _phase_link(phase, chosen) -> str:
    """A phase number, linked to its section when it has one."""
    return f'<a href="#phase-{int(phase)}">{int(phase)}</a>' if int(phase) in chosen else str(int(phase))


def verdict_table(verdicts, chosen=()) -> str:
    rows = tables.verdict_rows(verdicts)
    rows["phases"] = [phase_ranges.ranges(v.phases, lambda p: _phase_link(p, chosen), word=False)
                      for v in verdicts]
    rows["reasons"] = ["<br>".join(f"· {esc(r)}" for r in reasons.split(" · ")) if reasons else ""
                       for reasons in rows["reasons"]]
    kinds = [v.verdict.replace(" ", "-") for v in verdicts]
    return table(rows, "verdicts", row_class=lambda i: f"verdict-{kinds[i]}", html_columns=("reasons", "phases"))


def verdict_counts(verdicts) -> str:
    """"330 claims: 280 agree, 40 explained, 10 cannot judge"."""
    order = ("agrees", "explained", "disagrees", "cannot judge")
    counts = {k: sum(v.verdict == k for v in verdicts) for k in order}
    return (f"{len(verdicts):,} claims: " + ", ".join(f"{n:,} {'agree' if k == 'agrees' else k}"
                                                     for k, n in counts.items() if n))


def verdict_section(verdicts, note: str | None, chosen=(), folded: bool = False) -> str:
    """The verdicts, first on the page. folded (a sweep's hundreds of claims): their counts, the
    table behind a click, so that the sweep charts come next on the screen, not rows later."""
    out = ['<h2 id="verdicts">Claims vs active</h2>']
    if verdicts is None:
        out.append(f'<p class="note">No claims read: {esc(note or "no benchmark output")}.</p>')
    elif not verdicts:
        out.append('<p class="note">The benchmark\'s output holds no claims.</p>')
    else:
        out.append('<p class="lead">window = what the benchmark timed; busy = time inside the calls only; '
                   'ratio = claim / active in the window; each claim in the benchmark\'s own unit, then '
                   'iowitness\'s conversion.</p>')
        if folded:
            out.append(f'<details class="verdicts"><summary>{esc(verdict_counts(verdicts))}: click for '
                       "the table</summary>")
        out.append(verdict_table(verdicts, chosen))
        if folded:
            out.append("</details>")
    return "\n".join(out)


def run_timeline(report, drawn: chart_bins.Charts) -> str:
    phases = report.phases
    if phases.empty:
        return ""
    t0 = int(phases["data_first_ns"].min())
    bands = []
    for _, members in phases.groupby("group", sort=False):
        first = members.sort_values("data_first_ns").iloc[0]
        label = tables.phase_label(first) if len(members) == 1 else f"{tables.phase_label(first)} ×{len(members)}"
        lo, hi = members["data_first_ns"].min(), members["data_last_ns"].max()
        level = members["bytes"].sum() / ((hi - lo) / 1e9) if hi > lo else float("nan")
        bands.append(((lo - t0) / 1e9, (hi - t0) / 1e9,
                      f"{int(first['phase'])} {label}" if len(members) == 1 else label, float(level)))
    bands.sort()
    return figure(charts.timeline(drawn.run, bands, "throughput over time, with the phases"), "timeline")


def sweep_section(report, verdicts) -> str:
    points = sweep.points(report, verdicts)
    if not points:
        return ""
    words = benchmarks.sweep_of(report)
    who = words.WHO
    out = [f'<h2 id="sweep">Across the sweep ({who} {words.SWEEP_OPTION})</h2>',
           f'<p class="lead">Active throughput of each test in the window {who} timed (the wall rate where '
           f'no claim matched), against file size and record size: the charts {who} users build from '
           f'{words.LAYOUT_OPTION}.</p>']
    for test, pts in points.items():
        out.append(figure(charts.sweep(test, pts), f"sweep {test}", wide=True))
    return "\n".join(out)


def chosen_phases(report, verdicts, limit: int = MAX_PHASE_SECTIONS) -> list[int]:
    """The phases that get a section with charts: disputed claims first, then claimed, then longest."""
    phases = report.phases
    rank = {}
    for v in verdicts or []:
        for p in v.phases[:1]:
            rank[p] = min(rank.get(p, 2), 0 if v.verdict != "agrees" else 1)
    order = phases.assign(rank=phases["phase"].map(rank).fillna(2)).sort_values(
        ["rank", "duration_s"], ascending=[True, False], kind="stable")
    return sorted(int(p) for p in order["phase"].head(limit))


def _claim_charts(phase: int, verdicts) -> list[str]:
    out = []
    for v in verdicts or []:
        if not v.phases or v.phases[0] != phase or not v.figures:
            continue
        value = {"bytes": v.claim.bytes_per_s, "ops": v.claim.ops_per_s,
                 "latency": v.claim.seconds_per_op}.get(v.kind, v.claim.bytes_per_s)
        if value is None:
            continue
        label = f"claim: {tables.describe_claim(v.claim)}"
        out.append(figure(charts.claim_vs_active(value, label, v.figures, v.window, v.kind, active_figures.fmt),
                          f"claim {phase} {v.claim.test}"))
    return out


def device_chart(report, r) -> str:
    """Bytes the phase's calls moved vs bytes its device moved, where the report has a device
    view (Report.device: one row per phase with syscall_bytes, device_bytes, writeback_bytes)."""
    view = report.device
    rows = view[view["phase"] == r.phase] if isinstance(view, pd.DataFrame) and "device_bytes" in view else None
    if rows is None or rows.empty or rows["device_bytes"].isna().all():
        return charts.empty("Device vs syscall bytes: no device data in this trace.")
    row = rows.iloc[0]
    bars = [("syscalls", float(row.get("syscall_bytes", r.bytes))), ("device, in the phase", float(row["device_bytes"]))]
    if "writeback_bytes" in row and row["writeback_bytes"] == row["writeback_bytes"] and row["writeback_bytes"]:
        bars.append(("device, write-back after it", float(row["writeback_bytes"])))
    where = f" ({row['device']})" if isinstance(row.get("device"), str) else ""
    return figure(charts.device_vs_syscall(bars, f"bytes moved: the calls vs the block device{where}"),
                  f"device {int(r.phase)}")


def phase_section(r, drawn: chart_bins.Charts, report, verdicts) -> str:
    name = tables.phase_label(r)
    pattern = r.pattern + (f" {units.bytes_(r.stride)}" if r.stride else "")
    out = [f'<section class="phase" id="phase-{int(r.phase)}">',
           f"<h3>Phase {int(r.phase)}: {esc(name)} — {esc(pattern)}, {esc(units.bytes_(r.record_size))} records, "
           f"{esc(os.path.basename(r.path))}</h3>",
           f'<p class="facts">{esc(units.bytes_(r.bytes))} in {int(r.ops):,} calls over '
           f"{esc(units.seconds(r.duration_s))}; wall {esc(units.rate(r.wall_Bps))}, busy {esc(units.rate(r.busy_Bps))}; "
           f"latency p50 {esc(units.latency(r.lat_p50_us))}, p99 {esc(units.latency(r.lat_p99_us))}, "
           f"max {esc(units.latency(r.lat_max_us))}"
           + (f"; {esc(tables.flags(r))}" if tables.flags(r) else "") + "</p>"]
    claims = _claim_charts(int(r.phase), verdicts)
    others = [v for v in verdicts or [] if int(r.phase) in v.phases[1:]]
    if claims:
        out += claims
    elif others:
        out.append(charts.empty(f"The claims about this phase's group are charted under phase {others[0].phases[0]}."))
    else:
        out.append(charts.empty("No claim of the benchmark is about this phase."))
    mine = drawn.phases.get(int(r.phase))
    if mine is not None:
        out.append(figure(charts.latency_histogram(mine.latency, r.lat_p50_us, r.lat_p99_us, r.lat_max_us),
                          f"latency {int(r.phase)}"))
        out.append(figure(charts.timeline(mine.timeline, [(0.0, r.duration_s, "", float(r.wall_Bps))],
                                          "throughput over time in this phase"), f"throughput {int(r.phase)}"))
        out.append(figure(charts.offset_time(mine.offsets, f"offset vs time (access pattern: {pattern})"),
                          f"offset {int(r.phase)}"))
        if mine.depth is not None:
            depth = mine.depth.finish()
            out.append(figure(charts.depth_over_time(depth["t_s"].to_numpy(float), depth["depth"].to_numpy(float),
                                                     _asked_depth(r.phase, verdicts),
                                                     f"requests in flight (max {int(r.depth_max)}, "
                                                     f"mean {r.depth_mean:.1f})"), f"depth {int(r.phase)}"))
    out.append(device_chart(report, r))
    slow = report.outliers[report.outliers["phase"] == r.phase]
    out.append("<h4>Slowest calls</h4>" + table(tables.outlier_rows(slow).drop(columns="phase"), "outliers"))
    out.append("</section>")
    return "\n".join(out)


def _asked_depth(phase, verdicts) -> float | None:
    """The queue depth a claim about this phase says the benchmark asked for (fio's iodepth)."""
    for v in verdicts or []:
        if int(phase) in v.phases and v.claim.extra.get("iodepth"):
            return float(v.claim.extra["iodepth"])
    return None


def device_section(report, trace) -> str:
    """The device table (iostat -x over each phase's window) and the sentences around it."""
    notes = tables.device_notes(report, trace)
    rows = tables.device_rows(report)
    out = ['<h2 id="device">Device</h2>']
    out += [f'<p class="note">{esc(line)}</p>' for line in notes["before"]]
    if rows.empty:
        if not notes["before"]:
            out.append('<p class="note">No block device under the target files.</p>')
        return "\n".join(out)
    out += [f'<p class="note">{esc(tables.DEVICE_TITLE[0].upper() + tables.DEVICE_TITLE[1:])}.</p>', table(rows, "device"),
            "<h3>Where each phase's time went</h3>", "<ul>", *(f"<li>{esc(line)}</li>" for line in notes["limiter"]), "</ul>"]
    out += [f'<p class="note">{esc(line)}</p>' for line in notes["after"]]
    return "\n".join(out)


def render(report, trace, verdicts=None, note: str | None = None, interval_ns: int | None = None) -> str:
    """interval_ns: `report --interval`, the device's iostat -x columns per interval (reporters/block.py)."""
    chosen = chosen_phases(report, verdicts) if len(report.phases) else []
    path = trace.meta.get("path") or "trace"
    body = [f"<h1>iowitness report: {esc(os.path.basename(path))}</h1>",
            f'<p class="lead">{esc(" ".join(trace.meta.get("command") or []))}<br>benchmark: '
            f"{esc(report.benchmark or 'not recognised')}; {len(report.phases):,} phases; "
            f"lost events: {esc(tables.lost_figure(trace))}</p>", warnings(trace)]
    # what a reader came for first: the verdicts, then a sweep's charts; the tables after
    swept = sweep_section(report, verdicts) if len(report.phases) else ""
    body += [verdict_section(verdicts, note, set(chosen), folded=bool(swept) and len(verdicts or ()) > 20), swept]
    if report.phases.empty:
        body.append('<h2>Phases</h2><p class="note">No phases: the trace holds no read or write calls on '
                    "target files.</p>")
    else:
        drawn = chart_bins.gather(report, chosen)
        rows = tables.phase_rows(report.phases)
        rows["#"] = [_phase_link(p, chosen) for p in rows["#"]]
        body += ['<h2 id="phases">Phases</h2>', run_timeline(report, drawn), table(rows, "phases", html_columns=("#",))]
        if not report.groups.empty:
            body += [f"<h3>{esc(tables.GROUPS_TITLE)}</h3>", table(tables.group_rows(report.groups, report.phases))]
        depth = tables.depth_rows(report.phases)
        if not depth.empty:
            body += [f"<h3>{esc(tables.DEPTH_TITLE[0].upper() + tables.DEPTH_TITLE[1:])}</h3>", table(depth, "depth")]
        spans = stretches.stretch_rows(report, trace)
        if not spans.empty:
            body += [f'<h3 id="stretches">{esc(stretches.TITLE[0].upper() + stretches.TITLE[1:])}</h3>',
                     table(spans, "stretches")]
        body.append('<h2 id="each-phase">Each phase</h2>')
        if len(chosen) < len(report.phases):
            body.append(f'<p class="note">Charts for {len(chosen)} of {len(report.phases):,} phases: those with a '
                        "claim that does not simply agree, then claimed ones, then the longest. Every phase is in "
                        "the table above.</p>")
        wanted = set(chosen)
        for r in report.phases.itertuples():
            if int(r.phase) in wanted:
                body.append(phase_section(r, drawn, report, verdicts))
        body.append(device_section(report, trace))
        body.append(block.html_section(report, trace, interval_ns, figure, table))
    body += ['<h2 id="run">Run</h2>', table(tables.run_metadata(trace), "metadata")]
    return page(f"iowitness report: {os.path.basename(path)}", "\n".join(body))


def render_compare(runs, rows) -> str:
    """Several runs side by side: a table per phase name, one column per run, and overlaid charts;
    then the changes against the first run (`rows`: deltas.table, what --json and --fail-if use)."""
    from iowitness.analysis.runs import deltas
    from iowitness.reporters import compare

    names = [r.label for r in runs]
    body = [f"<h1>iowitness compare: {esc(' vs '.join(names))}</h1>",
            '<p class="lead">Phases are matched by name and rank (the first write with the first write). active = the claim\'s window '
            "where a claim matched the phase, else the wall rate.</p>",
            "".join(f"<h4>{esc(r.label)}</h4>{warnings(r.trace)}" for r in runs if warnings(r.trace)),
            '<h2 id="runs">Runs</h2>', table(compare.run_table(runs), "runs")]
    keys = compare.labels(runs)
    timelines, curves = chart_bins.compare_charts(runs, list(keys)[:compare.MAX_CDF_PHASES])
    if timelines:
        body.append(figure(charts.overlaid_timelines(timelines), "timelines"))
    shown = list(keys.items())[:compare.MAX_BAR_PHASES]
    if shown:
        values = [[compare.active_rate(run, key) for run in runs] for key, _ in shown]
        body.append(figure(charts.grouped_bars([label for _, label in shown], names, values,
                                               "active throughput per phase"), "bars"))
        if len(keys) > len(shown):
            body.append(f'<p class="note">The chart shows the first {len(shown)} of {len(keys)} phase names; '
                        "the tables below have all of them.</p>")
    body.append('<h2 id="phases">Each phase</h2>')
    for i, (label, frame) in enumerate(compare.phase_tables(runs)):
        key = list(keys)[i]
        body.append(f'<section class="phase compare"><h3>{esc(label)}</h3>{table(frame, "compare")}')
        if i < compare.MAX_CDF_PHASES:
            lat = curves[key]
            if any(c.latency_us is not None for c in lat):
                body.append(figure(charts.overlaid_cdfs(f"latency distribution: {label}", lat), f"cdf {label}"))
        body.append("</section>")
    if len(keys) > compare.MAX_CDF_PHASES:
        body.append(f'<p class="note">Latency charts for the first {compare.MAX_CDF_PHASES} of {len(keys)} phase '
                    "names.</p>")
    title = compare.changes_title(runs)
    body += [f'<h2 id="changes">{esc(title[0].upper() + title[1:])}</h2>', f'<p class="lead">{esc(compare.CHANGES_NOTE)}</p>',
             table(compare.delta_table(runs, rows, deltas.TEXT_METRICS), "changes")]
    return page(f"iowitness compare: {' vs '.join(names)}", "\n".join(body))
