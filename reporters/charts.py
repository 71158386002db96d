"""The report's charts, drawn by matplotlib as SVG text to inline into the HTML report.

Why SVG from matplotlib: the page needs no JavaScript and no network, prints sharp at any
size, and the charts stay readable for as long as browsers read SVG. Every chart says what it
shows and in which units; series differ by grey level AND by marker, line style or hatching,
so a grey print keeps them apart. Per-call pictures of big phases are summarised (binned, not
sampled) and the chart says so.

Every function takes plain numbers, or the bins reporters/chart_bins.py counted, and
returns the <svg> element as a string.
"""

from __future__ import annotations

import functools
import io
import itertools

import numpy as np

from iowitness import escape, units
from iowitness.reporters.chart_bins import CURVE, DENSITY_BINS, time_scale
from iowitness.reporters.isolated_matplotlib import imported, style

# Okabe-Ito colours, ordered so neighbours differ in lightness too (they stay apart in grey)
COLOURS = ("#000000", "#E69F00", "#0072B2", "#56B4E9", "#D55E00", "#009E73", "#CC79A7", "#999999")
MARKERS = ("o", "s", "^", "D", "v", "x", "+", "*")
LINES = ("-", "--", ":", "-.")
HATCHES = ("", "///", "...", "xxx", "\\\\\\", "ooo", "---", "+++")
BAND_GREYS = ("#e4e4e4", "#f3f3f3")

WIDTH, HEIGHT = 7.2, 3.0          # inches; at 96 px per inch, about 690 × 290 px on screen
SWEEP_LEGEND_COLUMNS = 3          # a sweep chart's legend, under each of its two plots

_rc = {
    "svg.fonttype": "none",       # text stays text: smaller, searchable, the page's own font
    "font.family": "sans-serif", "font.size": 8.5, "axes.titlesize": 9.5, "axes.titleweight": "bold",
    "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True, "grid.color": "#dddddd",
    "grid.linewidth": 0.6, "legend.frameon": False, "legend.fontsize": 7.5, "path.simplify": True,
    "text.parse_math": False,     # a "$" in a file or job name is a dollar, not TeX to parse (or fail on)
    "text.usetex": False,
}

def _shown(value):
    """A chart's text argument with control characters shown (escape.visible); numbers as they are."""
    if isinstance(value, str):
        return escape.visible(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_shown(v) for v in value)
    return value


def _figure(height: float = HEIGHT, width: float = WIDTH, cols: int = 1, left: float = 0.75,
            top: float = 0.35, bottom: float = 0.62, legend: float = 0.0):
    """A figure with fixed margins in inches (an automatic layout costs more than the drawing);
    `legend` inches kept free right of the plot for its legend (_legend_right)."""
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend

    fig = Figure(figsize=(width, height))
    fig.subplots_adjust(left=left / width, right=1 - (0.2 + legend) / width, top=1 - top / height, bottom=bottom / height,
                        wspace=0.3)
    axes = fig.subplots(1, cols)
    return fig, axes


_serial = itertools.count(1)


def _styled(chart):
    """Draw `chart` with the report's style, leaving the caller's matplotlib settings as they were;
    its text arguments (titles, labels: names from the trace) shown by escape.visible."""
    @functools.wraps(chart)
    def draw(*args, **kwargs):
        matplotlib = imported()
        with matplotlib.rc_context(style(_rc)):
            return chart(*_shown(args), **{k: _shown(v) for k, v in kwargs.items()})
    return draw


def _svg(fig) -> str:
    matplotlib = imported()
    # ids inside each SVG (clip paths, markers) must not collide with another chart's on the page
    with matplotlib.rc_context({"svg.hashsalt": f"iow{next(_serial)}"}):
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    return text.replace("\n", "")


def _legend_right(ax, **kwargs) -> None:
    """The legend beside the plot, in the margin _figure(legend=...) kept for it: a legend never
    covers data (inside the axes, "best" still hides points of a dense sweep)."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, **kwargs)


def _note(ax, text: str) -> None:
    """A line under the plot saying what was summarised, and how."""
    ax.annotate(text, xy=(0, 0), xycoords="figure fraction", xytext=(4, 2), textcoords="offset points",
                fontsize=7, color="#333333", ha="left", va="bottom")


def _rate_axis(ax, largest: float, axis: str = "y") -> float:
    """Label a byte-rate axis in the binary unit its largest value reads best in; returns the divisor."""
    divisor, name = units.scale_of(largest if largest == largest else 0)
    label = f"throughput ({name}/s)"
    (ax.set_ylabel if axis == "y" else ax.set_xlabel)(label)
    return divisor


def _bytes_axis(ax, largest: float, what: str, axis: str = "y") -> float:
    divisor, name = units.scale_of(largest)
    (ax.set_ylabel if axis == "y" else ax.set_xlabel)(f"{what} ({name})")
    return divisor


def _time_axis(ax, span_s: float, what: str) -> float:
    """Seconds, or ms or µs when the span is short; returns the multiplier from seconds."""
    scale, unit = time_scale(span_s)
    ax.set_xlabel(f"{what} ({unit})")
    return scale


def _latency_ticks(ax, axis: str = "x") -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    target = ax.xaxis if axis == "x" else ax.yaxis
    lo, hi = ax.get_xlim() if axis == "x" else ax.get_ylim()
    narrow = hi / max(lo, 1e-9) < 1000   # under three decades: 1-2-5 ticks, else one label a decade
    target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if narrow else (1.0,), numticks=8))
    target.set_major_formatter(FuncFormatter(lambda v, _: _decade(v)))
    # no minor ticks: each tick is an object to lay out, and decades read well enough
    target.set_minor_locator(NullLocator())


def _decade(us: float) -> str:
    """A tick of a log latency axis: 1 µs, 100 µs, 10 ms, 1 s."""
    if us < 1000:
        return f"{us:g} µs"
    return f"{us / 1e3:g} ms" if us < 1e6 else f"{us / 1e6:g} s"


def _count_ticks(ax) -> None:
    """A log axis of counts in plain numbers (1, 10, 100, 1,000), not 10^n."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    ax.yaxis.set_major_locator(LogLocator(base=10, numticks=6))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else ""))
    ax.yaxis.set_minor_locator(NullLocator())


def empty(message: str) -> str:
    """Not a chart: a line saying why there is none (kept out of the chart checks)."""
    return f'<p class="nochart">{escape.html(message)}</p>'


# ---- one run ------------------------------------------------------------------------------

@_styled
def timeline(bins, bands: list[tuple[float, float, str, float]], title: str) -> str:
    """Throughput over time, from each call's bytes counted at its end, with the phases as bands
    and each phase's own average (its bytes over its span) as a dashed level: a phase shorter
    than a bin is diluted in the binned line, never in its level.

    bins: chart_bins.Timeline (seconds since the run's first data call); bands: (start_s,
    end_s, label, bytes/s).
    """
    labelled, rotated = len(bands) <= 24, 8 < len(bands) <= 24
    fig, ax = _figure(height=HEIGHT + (1.0 if rotated else 0), top=1.45 if rotated else 0.55,
                      legend=1.25 if len(bands) > 1 else 0.0)
    span, nbins, width, edges, rate = bins.span, bins.nbins, bins.width, bins.edges, bins.rate
    scale = _time_axis(ax, span, "time since the first data call")
    levels = [b[3] for b in bands if b[3] == b[3]]
    divisor = _rate_axis(ax, max([float(rate.max()) if len(rate) else 0] + levels))
    for i, (lo, hi, label, level) in enumerate(bands):
        ax.axvspan(lo * scale, max(hi, lo + width / 2) * scale, color=BAND_GREYS[i % 2], zorder=0, lw=0)
        if level == level:
            # a marker too: a phase far shorter than the run is a dot, not an invisible dash
            ax.plot([lo * scale, hi * scale], [level / divisor] * 2, color=COLOURS[4], lw=2, ls="--")
            ax.plot([(lo + hi) / 2 * scale], [level / divisor], color=COLOURS[4], marker="D", ms=3.5, ls="",
                    label="phase average\n(its bytes / its span)" if i == 0 else None)
        if labelled:
            ax.annotate(label, xy=((lo + hi) / 2 * scale, 1.0), xycoords=("data", "axes fraction"),
                        ha="center" if not rotated else "left", va="bottom", fontsize=6.5,
                        rotation=60 if rotated else 0, rotation_mode="anchor")
    ax.step(edges[:-1] * scale, rate / divisor, where="post", color=COLOURS[0], lw=1, label="binned")
    ax.set_ylim(bottom=0)
    ax.set_xlim(0, span * scale)
    if len(bands) > 1:
        _legend_right(ax, fontsize=7)
        ax.set_title(title, pad=(60 if rotated else 14) if labelled else 6)
    else:   # one phase: no labels above the plot, so the legend goes there, clear of the data
        ax.legend(loc="lower right", bbox_to_anchor=(1, 1.0), ncol=2, fontsize=7)
        ax.set_title(title, loc="left")
    _note(ax, f"binned: each call's bytes counted at its end, in {nbins} bins of {units.seconds(width)}"
              + (f"; grey bands: phases{' (labelled)' if labelled else f' ({len(bands)}, unlabelled)'}"
                 if len(bands) > 1 else ""))
    return _svg(fig)


@_styled
def claim_vs_active(claim_Bps: float, claim_label: str, figures: dict[str, float], window: str,
                    kind: str, fmt) -> str:
    """Horizontal bars: the claim, then each active figure; the window's figure is hatched."""
    names = ["claim"] + list(figures)
    values = [claim_Bps] + [figures[n] for n in figures]
    longest = max(len(n) for n in names) + len(" (window)")
    fig, ax = _figure(height=0.95 + 0.24 * len(names), left=0.2 + 0.062 * longest, top=0.45, bottom=0.5)
    finite = [v for v in values if v == v and v is not None]
    largest = max(finite) if finite else 0
    if kind == "bytes":
        divisor = _rate_axis(ax, largest, axis="x")
    elif kind == "latency":   # seconds per call: in the unit its largest value reads best in (25 µs, not 0.000025)
        scale, unit = (1e9, "ns") if largest < 2e-6 else time_scale(largest)
        divisor = 1.0 / scale
        ax.set_xlabel(f"latency per call ({unit})")
    elif kind == "amount":
        divisor = _bytes_axis(ax, largest, "bytes", axis="x")
    else:
        divisor = 1.0
        ax.set_xlabel({"ops": "calls per second"}.get(kind, kind))
    y = np.arange(len(names))[::-1]
    for i, (name, value) in enumerate(zip(names, values)):
        claim, in_window = i == 0, name == window
        ax.barh(y[i], (value if value == value else 0) / divisor, height=0.62,
                color=COLOURS[0] if claim else ("#7a7a7a" if in_window else "#c8c8c8"),
                hatch="" if claim else ("///" if in_window else ""), edgecolor="#000000", lw=0.6)
        ax.annotate(fmt(value, kind) if value == value else "-", xy=((value if value == value else 0) / divisor, y[i]),
                    xytext=(3, 0), textcoords="offset points", va="center", fontsize=7)
    ax.set_yticks(y, [f"{n} (window)" if n == window else n for n in names])
    ax.set_xlim(0, largest / divisor * 1.25 if largest else 1)
    ax.grid(axis="y", visible=False)
    ax.set_title(f"{claim_label}\nclaim vs active figures (hatched: the window the benchmark timed)",
                 fontsize=8.5)
    return _svg(fig)


@_styled
def latency_histogram(bins, p50: float, p99: float, top: float) -> str:
    """Calls per latency bin (chart_bins.LatencyBins: 4 bins per doubling, log axes), with p50,
    p99 and max marked."""
    fig, ax = _figure(legend=1.05)
    ax.stairs(bins.counts, bins.edges, fill=True, color="#bdbdbd", edgecolor="#000000", lw=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(bottom=0.7)
    for value, name, dash in ((p50, "p50", "--"), (p99, "p99", ":"), (top, "max", "-.")):
        ax.axvline(value, color=COLOURS[2] if name != "max" else COLOURS[4], ls=dash, lw=1.4,
                   label=f"{name} {units.latency(value)}")
    _latency_ticks(ax)
    _count_ticks(ax)
    ax.set_xlabel("latency per call (log scale)")
    ax.set_ylabel("calls (log scale)")
    _legend_right(ax)
    ax.set_title(f"latency distribution of {bins.calls:,} data calls")
    return _svg(fig)


@_styled
def offset_time(offsets, title: str) -> str:
    """Where in the file each call went, over time: the access pattern (chart_bins.Offsets)."""
    if offsets.markers:
        x, y, is_read = offsets.points()
    both = offsets.markers and bool(is_read.any() and (~is_read).any())
    fig, ax = _figure(legend=0.6 if both else 0.0)
    ax.set_xlabel(f"time since the phase's first data call ({offsets.time_unit})")
    ax.set_ylabel(f"file offset ({offsets.offset_unit})")
    if offsets.markers:
        for mask, name, marker, colour in ((~is_read, "write", "s", COLOURS[4]), (is_read, "read", "o", COLOURS[2])):
            if mask.any():
                ax.plot(x[mask], y[mask], ls="", marker=marker, ms=3.2, mew=0, color=colour, label=name)
        if both:
            _legend_right(ax)
        _note(ax, f"every one of the {offsets.calls:,} data calls drawn")
    else:
        from matplotlib.colors import LinearSegmentedColormap, LogNorm

        # one call is a clear mid grey (a random pattern is mostly cells of one call), the busiest black
        calls = LinearSegmentedColormap.from_list("calls", ["#8a8a8a", "#000000"])

        counts, (xe, ye) = offsets.counts, offsets.edges()
        masked = np.ma.masked_equal(counts.T, 0)
        # an image, not a mesh of cells: one small PNG inside the SVG, drawn fast
        ax.imshow(masked, origin="lower", extent=(xe[0], xe[-1], ye[0], ye[-1]), aspect="auto",
                  interpolation="nearest", cmap=calls, norm=LogNorm(vmin=1, vmax=max(2, counts.max())))
        ax.grid(False)
        _note(ax, f"all {offsets.calls:,} data calls, binned into {DENSITY_BINS[0]} × {DENSITY_BINS[1]} cells "
                  f"(grey: one call, black: the most, log scale) to keep the page small")
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    return _svg(fig)


@_styled
def depth_over_time(t_s: np.ndarray, depth: np.ndarray, asked: float | None, title: str) -> str:
    """Asynchronous requests in flight over a phase (the highest count of each time bucket), and
    the depth the benchmark asked for as a dashed level when it said."""
    fig, ax = _figure()
    span = float(t_s.max()) if len(t_s) else 0.0
    scale = _time_axis(ax, span, "time since the phase's first request")
    ax.step(t_s * scale, depth, where="post", color=COLOURS[0], lw=1, label="in flight (highest per bucket)")
    if asked:
        ax.axhline(asked, color=COLOURS[4], lw=1.5, ls="--", label=f"asked: {asked:g}")
    ax.set_ylim(bottom=0, top=max(float(depth.max()) if len(depth) else 1, asked or 0) * 1.1 + 0.5)
    ax.set_ylabel("requests in flight")
    ax.legend(loc="lower right", bbox_to_anchor=(1, 1.0), ncol=2, fontsize=7)
    ax.set_title(title, loc="left")
    _note(ax, f"each request counted from its submission to its completion, {len(t_s):,} time buckets")
    return _svg(fig)


@_styled
def device_vs_syscall(bars: list[tuple[str, float]], title: str) -> str:
    """Bytes the calls moved vs bytes the device moved: one bar each, told apart by hatching."""
    longest = max(len(name) for name, _ in bars)
    fig, ax = _figure(height=1.1 + 0.3 * len(bars), left=0.2 + 0.062 * longest, top=0.4, bottom=0.5)
    divisor = _bytes_axis(ax, max(v for _, v in bars), "bytes", axis="x")
    y = np.arange(len(bars))[::-1]
    for i, (name, value) in enumerate(bars):
        ax.barh(y[i], value / divisor, 0.6, color=("#c8c8c8", "#5a5a5a", "#9a9a9a")[i % 3],
                hatch=("", "///", "...")[i % 3], edgecolor="#000000", lw=0.6)
        ax.annotate(units.bytes_(value), xy=(value / divisor, y[i]), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=7)
    ax.set_yticks(y, [name for name, _ in bars])
    ax.set_xlim(0, max(v for _, v in bars) / divisor * 1.25 or 1)
    ax.grid(axis="y", visible=False)
    ax.set_title(title)
    return _svg(fig)


@_styled
def sweep(test: str, points: list[tuple[int, int, float]]) -> str:
    """IOzone -a: throughput against file size (one line per record size) and against record
    size (one line per file size). points: (file_size, record_size, bytes/s)."""
    arr = np.array(points, dtype=float)
    # a plot against a size the sweep kept at one value would be one column of points: left out
    plots = [p for p in ((1, 0, "file size", "record"), (0, 1, "record size", "file")) if len(set(arr[:, p[1]])) > 1]
    plots = plots or [(1, 0, "file size", "record")]
    # each plot's legend goes under it, in rows of LEGEND_COLUMNS, never over the lines
    rows = -(-max(len(set(arr[:, p[0]])) for p in plots) // SWEEP_LEGEND_COLUMNS)
    below = 0.16 * rows + 0.1
    fig, axes = _figure(height=3.2 + below, width=WIDTH + 1.2 if len(plots) == 2 else WIDTH, cols=len(plots),
                        bottom=0.62 + below)
    axes = list(axes) if len(plots) == 2 else [axes]
    plot_height = 3.2 - 0.35 - 0.62
    divisor = _rate_axis(axes[0], float(arr[:, 2].max()))
    axes[-1].set_ylabel(axes[0].get_ylabel())
    for ax, (line_col, x_col, what, line_what) in zip(axes, plots):
        keys = sorted(set(arr[:, line_col]))
        for i, key in enumerate(keys):
            rows_of = arr[arr[:, line_col] == key]
            rows_of = rows_of[np.argsort(rows_of[:, x_col])]
            ax.plot(rows_of[:, x_col], rows_of[:, 2] / divisor, color=COLOURS[i % len(COLOURS)],
                    marker=MARKERS[i % len(MARKERS)], ls=LINES[(i // len(COLOURS)) % len(LINES)], ms=3.5, lw=1,
                    label=f"{units.bytes_(key)} {line_what}")
        ax.set_xscale("log", base=2)
        from matplotlib.ticker import FuncFormatter

        # short ticks (16K, 1M): a sweep has a tick per power of two, and "128 KiB" overlaps its neighbours
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: units.bytes_(v).replace(".0 ", "").replace("iB", "")))
        ax.set_xlabel(f"{what} (log scale; K = KiB, M = MiB)")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=6.5, ncol=SWEEP_LEGEND_COLUMNS, loc="upper center",
                  bbox_to_anchor=(0.5, -0.5 / plot_height), borderaxespad=0)
    fig.suptitle(f"{test}: active throughput across the sweep", fontsize=9.5, fontweight="bold")
    return _svg(fig)


def _legend_inches(labels: list[str]) -> float:
    """The margin a legend of these labels needs beside the plot, capped at half the figure."""
    return min(WIDTH / 2, 0.45 + 0.055 * max((len(str(x)) for x in labels), default=4))


# ---- several runs -------------------------------------------------------------------------

@_styled
def overlaid_timelines(runs: list[tuple[str, object]]) -> str:
    """Throughput over time of several runs on one axis. runs: (label, chart_bins.Timeline),
    every Timeline on the same span and bins."""
    fig, ax = _figure(legend=_legend_inches([label for label, _ in runs]))
    span, nbins, width, edges = runs[0][1].span, runs[0][1].nbins, runs[0][1].width, runs[0][1].edges
    rates = [timeline.rate for _, timeline in runs]
    scale = _time_axis(ax, span, "time since each run's first data call")
    divisor = _rate_axis(ax, max((float(r.max()) for r in rates if len(r)), default=0))
    for i, ((label, _), rate) in enumerate(zip(runs, rates)):
        ax.step(edges[:-1] * scale, rate / divisor, where="post", color=COLOURS[i % len(COLOURS)],
                ls=LINES[i % len(LINES)], lw=1.1, label=label)
    ax.set_ylim(bottom=0)
    _legend_right(ax)
    ax.set_title("throughput over time")
    _note(ax, f"each call's bytes counted at its end, in {nbins} bins of {units.seconds(width)}")
    return _svg(fig)


@_styled
def grouped_bars(names: list[str], runs: list[str], values: list[list[float]], title: str) -> str:
    """One group of bars per phase name, one bar per run (hatched differently)."""
    longest = max((len(n) for n in names), default=4)
    fig, ax = _figure(height=1.3 + 0.22 * len(names) * max(1, len(runs)) ** 0.6, left=0.2 + 0.062 * longest,
                      top=0.6, bottom=0.5)
    finite = [v for row in values for v in row if v == v]
    divisor = _rate_axis(ax, max(finite, default=0), axis="x")
    height = 0.8 / max(1, len(runs))
    y = np.arange(len(names))[::-1]
    for j, run in enumerate(runs):
        ax.barh(y + 0.4 - height * (j + 0.5), [(row[j] if row[j] == row[j] else 0) / divisor for row in values],
                height, color=COLOURS[j % len(COLOURS)] if j else "#3a3a3a", hatch=HATCHES[j % len(HATCHES)],
                edgecolor="#000000", lw=0.5, label=run)
    ax.set_yticks(y, names)
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=min(len(runs), 3), fontsize=7)
    ax.set_title(title, loc="right")
    return _svg(fig)


@_styled
def overlaid_cdfs(title: str, runs: list) -> str:
    """Latency CDFs of the same phase in several runs, p99 marked on each (chart_bins.Curve:
    401 exact quantiles, whatever the number of calls: the curve is the data's own)."""
    fig, ax = _figure(legend=_legend_inches([_shown(c.label) for c in runs]))
    for i, curve in enumerate(runs):
        if curve.latency_us is None:
            continue
        colour = COLOURS[i % len(COLOURS)]
        label, p99 = _shown(curve.label), curve.p99   # a Curve is no tuple: _styled did not show it
        ax.plot(curve.latency_us, CURVE, color=colour, ls=LINES[i % len(LINES)], lw=1.2, label=label)
        ax.plot([p99], [0.99], marker=MARKERS[i % len(MARKERS)], color=colour, ms=5, ls="")
    ax.set_xscale("log")
    _latency_ticks(ax)
    ax.set_xlabel("latency per call (log scale)")
    ax.set_ylabel("share of calls at or below")
    ax.set_ylim(0, 1.02)
    _legend_right(ax)
    ax.set_title(title)
    _note(ax, "markers: p99 of each run")
    return _svg(fig)
