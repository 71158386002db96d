"""What the HTML report's per-call charts draw, counted from the calls a block at a time.

    charts = chart_bins.gather(report, chosen)     # chosen: the phases that get a section
    charts.run                                     # the run's throughput over time (Timeline)
    charts.phases[3].latency, .timeline, .offsets, .depth

Every per-call chart of the page is binned (reporters/charts.py draws the bins): throughput
over time, the latency histogram, offset against time (every call drawn up to MAX_MARKERS,
then a density of cells) and the requests in flight. Bins need their edges before the first
call is counted, and the edges come from each phase's extent (its calls, first and last start,
last end, offset and latency range: analysis/phasing/call_extents.py), so the calls are read twice:
once for the extents (a streamed report opened for charts gathers them in its last pass), once
to count. The in-memory report hands its calls over as one block, a streamed report
(analysis/measure/stream_full.py) block by block; both go through this code, so the page is the same
bytes either way and memory is bounded by the bins, never by the calls. Each count is the one
numpy gives over all of a phase's calls at once, because each call's bin depends on the call
and the edges alone and the byte weights are whole numbers (their float sums are exact).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from iowitness import units
from iowitness.analysis import report as report_module
from iowitness.analysis.phasing import inflight
from iowitness.analysis.phasing.call_extents import Extents, counted
from iowitness.analysis.phasing.phases import READS

MAX_MARKERS = 400                 # above this many calls, offset-vs-time is binned (markers cost ~90 B each)
DENSITY_BINS = (360, 140)         # time × offset cells of a binned offset-vs-time chart
TIMELINE_BINS = 300               # at most, across a run
LATENCY_BINS_PER_DOUBLING = 4


def is_read(calls, rows: np.ndarray) -> np.ndarray:
    """Per row: a read call (else a write)."""
    syscall = calls.syscall
    if isinstance(syscall.dtype, pd.CategoricalDtype):
        read_codes = np.array([c in READS for c in syscall.cat.categories] + [False])
        return read_codes[syscall.cat.codes.to_numpy()[rows]]
    return syscall.iloc[rows].astype(str).isin(READS).to_numpy()


def time_scale(span_s: float) -> tuple[float, str]:
    """The multiplier from seconds and the unit a time axis spanning `span_s` reads best in."""
    if span_s < 0.002:
        return 1e6, "µs"
    if span_s < 0.5:
        return 1e3, "ms"
    return 1.0, "s"


class Timeline:
    """charts.timeline's bins: each call's bytes counted at its end, in seconds since `t0_ns`,
    over `calls` calls whose last ends at `last_end_ns`."""

    def __init__(self, calls: int, t0_ns: int, last_end_ns: int, nbins: int | None = None,
                 span: float | None = None):
        self.calls, self.t0_ns = calls, t0_ns
        if span is None:
            span = float(np.int64(last_end_ns - t0_ns) / 1e9) if calls else 1.0
            span = span if span > 0 else 1e-3
        self.nbins = nbins or int(min(TIMELINE_BINS, max(10, calls // 4)))
        self.span, self.width = span, span / self.nbins
        self.edges = np.histogram_bin_edges(np.empty(0), bins=self.nbins, range=(0, span))
        self.sums = np.zeros(self.nbins)

    def add(self, end_ns: np.ndarray, nbytes: np.ndarray) -> None:
        end_s = (end_ns - self.t0_ns) / 1e9
        self.sums += np.histogram(end_s, bins=self.nbins, range=(0, self.span), weights=nbytes.astype(float))[0]

    @property
    def rate(self) -> np.ndarray:
        return self.sums / self.width


class LatencyBins:
    """charts.latency_histogram's bins: calls per latency bin, 4 bins per doubling (µs)."""

    def __init__(self, calls: int, latency_min_ns: int, latency_max_ns: int):
        self.calls = calls
        lo = max(float(np.int64(latency_min_ns) / 1e3), 0.01)
        hi = max(float(np.int64(latency_max_ns) / 1e3), lo * 1.01)
        k = LATENCY_BINS_PER_DOUBLING
        self.edges = 2.0 ** np.arange(np.floor(np.log2(lo) * k) / k, np.log2(hi) + 1 / k, 1 / k)
        self.counts = np.zeros(len(self.edges) - 1, np.int64)

    def add(self, latency_ns: np.ndarray) -> None:
        latency_us = latency_ns / 1e3
        self.counts += np.histogram(np.clip(latency_us, self.edges[0], self.edges[-1]), bins=self.edges)[0]


class Offsets:
    """charts.offset_time's picture of a phase: where in the file each call went, over time
    (seconds since `first_ns`, the phase's first data call). Every call up to MAX_MARKERS;
    above, calls per cell of a DENSITY_BINS grid spanning the calls' time and offset ranges."""

    def __init__(self, calls: int, first_ns: int, extents: Extents, phase: int):
        self.calls, self.first_ns = calls, first_ns
        start_lo, start_hi = (np.int64(v - first_ns) / 1e9
                              for v in (extents.first_start[phase], extents.last_start[phase]))
        self.span = float(start_hi) if calls else 0.0
        self.scale, self.time_unit = time_scale(self.span)
        self.largest = float(extents.offset_max[phase]) if calls else 0.0
        self.divisor, self.offset_unit = units.scale_of(self.largest)
        self.markers = calls <= MAX_MARKERS
        if self.markers:
            self._points: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        else:
            self.range = ((start_lo * self.scale, start_hi * self.scale),
                          (float(extents.offset_min[phase]) / self.divisor, self.largest / self.divisor))
            self.counts = np.zeros(DENSITY_BINS)

    def add(self, start_ns: np.ndarray, offset: np.ndarray, read: np.ndarray) -> None:
        x = (start_ns - self.first_ns) / 1e9 * self.scale
        y = offset.astype(float) / self.divisor
        if self.markers:
            self._points.append((x, y, read))
            return
        counts, self.x_edges, self.y_edges = np.histogram2d(x, y, bins=DENSITY_BINS, range=self.range)
        self.counts += counts

    def points(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every call's (x, y, is_read), in the chart's units, in the order of the calls."""
        if not self._points:
            return np.empty(0), np.empty(0), np.empty(0, bool)
        return tuple(np.concatenate(parts) for parts in zip(*self._points))

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """The density's cell edges (the same whether or not a call was counted)."""
        if not hasattr(self, "x_edges"):
            _, self.x_edges, self.y_edges = np.histogram2d(np.empty(0), np.empty(0), bins=DENSITY_BINS,
                                                           range=self.range)
        return self.x_edges, self.y_edges


@dataclass
class PhaseCharts:
    """What one phase's section draws."""
    calls: int
    latency: LatencyBins
    timeline: Timeline
    offsets: Offsets
    depth: inflight.DepthSeries | None = None


@dataclass
class Charts:
    """What the page draws: the run's timeline (None without phases) and each chosen phase's charts."""
    run: Timeline | None
    phases: dict[int, PhaseCharts] = field(default_factory=dict)

    def add(self, calls) -> None:
        rows = counted(calls)
        if self.run is not None and len(rows):
            self.run.add(calls.end_ns[rows], calls.bytes[rows])
        wanted = np.zeros(max(self.phases, default=0) + 1, dtype=bool)
        wanted[list(self.phases)] = True
        phase = calls.phase[rows]
        rows = rows[(phase < len(wanted)) & wanted[np.minimum(phase, len(wanted) - 1)]]
        if not len(rows):
            return
        rows = rows[np.argsort(calls.phase[rows], kind="stable")]
        phase = calls.phase[rows]
        bounds = np.flatnonzero(np.r_[True, phase[1:] != phase[:-1], True])
        read = is_read(calls, rows)
        for b, e in zip(bounds[:-1], bounds[1:]):
            mine, drawn = rows[b:e], self.phases[int(phase[b])]
            drawn.latency.add(calls.latency_ns[mine])
            drawn.timeline.add(calls.end_ns[mine], calls.bytes[mine])
            drawn.offsets.add(calls.start_ns[mine], calls.offset[mine], read[b:e])
            if drawn.depth is not None:
                drawn.depth.add(calls.start_ns[mine], calls.end_ns[mine])

    def finish(self) -> "Charts":
        for drawn in self.phases.values():
            if drawn.depth is not None:
                drawn.depth.finish()
        return self


def blocks_of(report):
    """A new pass over the report's calls (report.Calls), block by block, per call."""
    return lambda: (report_module.Calls(events, a) for events, a in report.event_blocks())


def _extents(report, blocks) -> Extents:
    """The report's call extents: gathered by a streamed report's last pass when it was opened
    for charts (stream_full.open_report(charts=True)), else one pass over `blocks`."""
    known = report.chart_extents
    if known is not None:
        return known
    extents = Extents(int(report.phases["phase"].max()))
    for calls in blocks():
        extents.add(calls)
    return extents


def gather(report, chosen, blocks=None) -> Charts:
    """The run's timeline and the charts of the `chosen` phases of `report`, counted from
    `blocks` (blocks_of(report) by default): two passes over the calls, or one when a streamed
    report gathered the extents already."""
    blocks = blocks or blocks_of(report)
    table = report.phases
    if table.empty:
        return Charts(None)
    extents = _extents(report, blocks)
    t0 = int(table["data_first_ns"].min())
    charts = Charts(Timeline(int(extents.calls.sum()), t0, int(extents.last_end.max())))
    for r in table[table["phase"].isin(chosen)].itertuples():
        p, n = int(r.phase), int(extents.calls[r.phase])
        if not n:
            continue
        first = int(r.data_first_ns)
        charts.phases[p] = PhaseCharts(
            n, LatencyBins(n, extents.latency_min[p], extents.latency_max[p]),
            Timeline(n, first, int(extents.last_end[p])), Offsets(n, first, extents, p),
            inflight.DepthSeries(extents.first_start[p], extents.last_end[p]) if getattr(r, "async_ops", 0) else None)
    for calls in blocks():
        charts.add(calls)
    return charts.finish()


# the share of calls at each point of a latency curve: 401 exact quantiles, whatever the calls
CURVE = np.linspace(0, 1, 401)


@dataclass
class Curve:
    """A latency curve of one phase (µs at each share of CURVE) and its p99; None: no calls."""
    label: str
    latency_us: np.ndarray | None
    p99: float | None


def compare_charts(runs, keys) -> tuple[list[tuple[str, Timeline]], dict[tuple, list[Curve]]]:
    """compare --html's charts: each run's throughput over time, on one span for all of them,
    and per phase key of `keys` each run's latency curve (quantiles.quantiles over blocks: the
    values np.quantile gives over all the calls at once)."""
    measured = []
    for run in runs:
        if run.report.phases.empty:
            continue
        blocks = blocks_of(run.report)
        extents = _extents(run.report, blocks)
        t0 = int(run.report.phases["data_first_ns"].min())
        measured.append((run, blocks, extents, t0))
    spans = [float(np.int64(e.last_end.max() - t0) / 1e9) for _, _, e, t0 in measured if e.calls.sum()]
    span = max(spans, default=1.0) or 1e-3
    timelines, curves = [], {key: [] for key in keys}
    for run, blocks, extents, t0 in measured:
        timeline = Timeline(int(extents.calls.sum()), t0, 0, nbins=TIMELINE_BINS, span=span)
        for calls in blocks():
            rows = counted(calls)
            timeline.add(calls.end_ns[rows], calls.bytes[rows])
        timelines.append((run.label, timeline))
    read = {id(run): (blocks, extents) for run, blocks, extents, _ in measured}
    for run in runs:
        found = _curves(run, *read[id(run)], keys) if id(run) in read else [(None, None)] * len(keys)
        for key, (values, p99) in zip(keys, found):
            curves[key].append(Curve(run.label, values, p99))
    return timelines, curves


def _curves(run, blocks, extents: Extents, keys) -> list[tuple]:
    """(curve, p99) of `run`'s phase of each key: (None, None) where it has no such phase or no
    call in it."""
    from iowitness.analysis.phasing import quantiles

    phases = [run.keys.get(key) for key in keys]
    chosen = sorted({p for p in phases if p is not None and extents.calls[p]})
    if not chosen:
        return [(None, None)] * len(keys)
    index = np.full(len(extents.calls), -1, np.int64)
    index[chosen] = np.arange(len(chosen))

    def latencies():
        for calls in blocks():
            rows = counted(calls)
            rows = rows[calls.phase[rows] < len(index)]
            yield index[calls.phase[rows]], calls.latency_ns[rows]
    extent = (extents.calls[chosen], extents.latency_min[chosen], extents.latency_max[chosen])
    values = quantiles.quantiles(latencies, len(chosen), np.r_[CURVE, 0.99], extent=extent)
    out = []
    for p in phases:
        at = index[p] if p is not None else -1
        out.append((values[at, :-1], float(values[at, -1])) if at >= 0 else (None, None))
    return out
