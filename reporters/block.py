"""The block layer in the report: a log2 latency histogram per device and phase (as bcc's
biolatency -D prints it) and, with `report --interval`, the iostat -x columns per interval, as
text and as a chart in the HTML page. The figures are analysis/measure/block_views.py's."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iowitness import escape, units
from iowitness.analysis.measure import block_views
from iowitness.escape import terminal

HIST_TITLE = "block latency, issue to complete (as biolatency -D)"


def _phase_label(report, phase: int) -> str:
    if phase < 0:
        return "requests of no one phase"
    row = report.phases[report.phases["phase"] == phase]
    name = row["name"].iloc[0] if len(row) else None
    return f"phase {phase}" + (f" ({name})" if isinstance(name, str) and name else "")


def histograms(report, trace) -> list[tuple[str, str]]:
    """(heading, histogram text) per device and phase."""
    return [(f"device {h['device']}, {_phase_label(report, h['phase'])}: {h['requests']:,} requests",
             block_views.log2_text(h["counts"]))
            for h in block_views.histograms(trace, report.phases)]


def histogram_text(report, trace) -> str:
    shown = histograms(report, trace)
    if not shown:
        return ""
    out = [HIST_TITLE]
    for head, hist in shown:
        out += ["", terminal(head), hist]
    return "\n".join(out)


def parse_interval(text: str) -> int:
    """'1s', '500ms', '2' (seconds) -> nanoseconds; ValueError with the reason."""
    raw = text.strip().lower()
    for suffix, scale in (("ms", 10**6), ("us", 10**3), ("µs", 10**3), ("s", 10**9), ("m", 60 * 10**9)):
        if raw.endswith(suffix):
            raw, factor = raw[: -len(suffix)], scale
            break
    else:
        factor = 10**9
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{text!r}: give a duration such as 1s, 500ms or 2") from None
    ns = int(round(value * factor))
    if not value > 0 or ns < 10**6:
        raise ValueError(f"{text!r}: give an interval of at least 1ms")
    return ns


def interval_rows(trace, width_ns: int) -> pd.DataFrame:
    table = block_views.intervals(trace, width_ns)
    return table[block_views.INTERVAL_COLUMNS] if not table.empty else table


def interval_text(trace, width_ns: int, width: int | None = None) -> str:
    table = interval_rows(trace, width_ns)
    title = f"device per {units.seconds(width_ns / 1e9)} (iostat -x columns; kB = 1024 bytes, awaits in ms)"
    if table.empty:
        return f"{title}: no block request in this trace"
    shown = table.copy()
    shown["t_s"] = shown["t_s"].map(lambda s: f"{s:.3f}")
    for c in block_views.INTERVAL_COLUMNS[2:]:
        shown[c] = shown[c].map(lambda v: f"{v:.2f}")
    shown = shown.rename(columns={"t_s": "from (s)"})
    return units.table(shown, title=title, width=width)


def interval_chart(trace, width_ns: int) -> str:
    """Per device: read and write throughput per interval, and %util on a second axis."""
    from iowitness.reporters import charts

    table = interval_rows(trace, width_ns)
    if table.empty:
        return charts.empty("Device per interval: no block request in this trace.")
    return _chart(table, units.seconds(width_ns / 1e9), width_ns / 1e9)


def _steps(t: np.ndarray, values: np.ndarray, width_s: float) -> tuple[np.ndarray, np.ndarray]:
    """A step per interval, the last one drawn to its end too."""
    return np.r_[t, t[-1] + width_s], np.r_[values, values[-1]]


def _chart(table: pd.DataFrame, step: str, width_s: float) -> str:
    from iowitness.reporters import charts

    @charts._styled
    def draw(title: str) -> str:
        fig, ax = charts._figure(legend=1.3)
        largest = float(max(table["rkB/s"].max(), table["wkB/s"].max()) * 1024) or 1.0
        divisor = charts._rate_axis(ax, largest)
        colours = iter(charts.COLOURS)
        right = ax.twinx()
        for name, part in table.groupby("device", sort=True):
            t = part["t_s"].to_numpy(float)
            for column, what in (("rkB/s", "read"), ("wkB/s", "write")):
                values = part[column].to_numpy(float) * 1024 / divisor
                if values.any():
                    ax.step(*_steps(t, values, width_s), where="post", color=next(colours), lw=1.2,
                            label=f"{name} {what}")
            right.step(*_steps(t, part["%util"].to_numpy(float), width_s), where="post", color=next(colours),
                       lw=1, ls="--", label=f"{name} %util")
        right.set_ylim(0, 105)
        right.set_ylabel("%util")
        ax.set_xlabel("time since the recording began (s)")
        ax.set_ylim(bottom=0)
        handles = ax.get_legend_handles_labels()
        more = right.get_legend_handles_labels()
        ax.legend(handles[0] + more[0], handles[1] + more[1], loc="upper left", bbox_to_anchor=(1.08, 1.0),
                  borderaxespad=0, fontsize=7)
        ax.set_title(title, loc="left")
        charts._note(ax, f"each step one interval of {step}; throughput by completion, as iostat counts")
        return charts._svg(fig)

    return draw(f"device throughput and %util per {step}")


def html_section(report, trace, width_ns: int | None, figure, table) -> str:
    """The histograms (as text, in <pre>) and, with an interval, its table and chart; `figure`
    and `table` are reporters/html.py's (passed, so that neither module imports the other)."""
    esc = escape.html
    out = ['<h2 id="block">Block requests</h2>']
    shown = histograms(report, trace)
    if not shown:
        out.append('<p class="note">No block request in this trace.</p>')
        return "\n".join(out)
    out.append(f'<p class="note">{esc(HIST_TITLE[0].upper() + HIST_TITLE[1:])}.</p>')
    out += [f"<h4>{esc(head)}</h4><pre>{esc(hist)}</pre>" for head, hist in shown]
    if width_ns:
        rows = interval_rows(trace, width_ns)
        out.append(figure(interval_chart(trace, width_ns), "device-intervals", wide=True))
        if not rows.empty:
            shown_rows = rows.copy()
            for c in block_views.INTERVAL_COLUMNS[1:]:
                shown_rows[c] = shown_rows[c].map(lambda v: float(np.round(v, 3)))
            out.append(table(shown_rows, "intervals"))
    return "\n".join(out)
