"""The HTML report's chart bins (reporters/chart_bins.py) and the requests-in-flight
series (analysis/inflight.DepthSeries) counted a block at a time: the same numbers as over all
the calls at once, and as numpy's own histograms of each phase's calls."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iowitness.analysis import report as report_module
from iowitness.analysis.measure import stream_full
from iowitness.analysis.phasing import inflight
from iowitness.analysis.phasing.call_extents import Extents
from iowitness.analysis.read.run import load
from iowitness.reporters import chart_bins
from tests.support.bench import script
from tests.support.blocks import BLOCKS, Blocks, assigned_of, calls_of


@pytest.fixture(scope="module")
def trace_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("bins") / "iozone.iwt"
    script("report_10m").build_trace(path, 30_000, 4, 2)
    return path


@pytest.fixture(scope="module")
def loaded(trace_path):
    return load(trace_path).report()


@pytest.fixture(scope="module")
def small_loaded(tmp_path_factory):
    """The same IOzone shape in 3,000 events: the same 48 phases, of 44 calls each."""
    path = tmp_path_factory.mktemp("bins") / "iozone-small.iwt"
    script("report_10m").build_trace(path, 3_000, 4, 2)
    return load(path).report()


def _in_blocks(report, rows):
    cut = Blocks(report.trace.events, assigned_of(report), rows)
    return lambda: (report_module.Calls(events, a) for events, a in cut.blocks())


def _same(a: chart_bins.Charts, b: chart_bins.Charts) -> None:
    np.testing.assert_array_equal(a.run.sums, b.run.sums)
    assert a.phases.keys() == b.phases.keys()
    for p, mine in a.phases.items():
        theirs = b.phases[p]
        np.testing.assert_array_equal(mine.latency.counts, theirs.latency.counts)
        np.testing.assert_array_equal(mine.timeline.sums, theirs.timeline.sums)
        assert mine.offsets.markers == theirs.offsets.markers
        if mine.offsets.markers:
            for x, y in zip(mine.offsets.points(), theirs.offsets.points()):
                np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_array_equal(mine.offsets.counts, theirs.offsets.counts)
            for x, y in zip(mine.offsets.edges(), theirs.offsets.edges()):
                np.testing.assert_array_equal(x, y)


# blocks of 7 rows, not 1: one-row blocks of this 30,000-event trace took 503 s on a loaded
# machine (a whole block's overhead per event); 7 rows still put a block edge inside every phase's
# run, and tests/unit/test_stream_assign.py holds blocks of one row. The 7-row blocks cut the
# 3,000-event trace of the same shape (its 48 phases of 44 calls, not 466: 423 blocks, not 4,282,
# six block edges or more inside every phase); 37 and 1,000 rows cut the 30,000-event one
@pytest.mark.parametrize("rows", [7 if rows == 1 else rows for rows in BLOCKS])
def test_blocks_give_the_bins_of_all_the_calls_at_once(request, rows):
    # GIVEN an IOzone-shaped report, its phases with hundreds of calls (or dozens)
    loaded = request.getfixturevalue("small_loaded" if rows == 7 else "loaded")
    chosen = [int(p) for p in loaded.phases["phase"]]
    whole = chart_bins.gather(loaded, chosen)
    # WHEN its calls are counted in blocks, THEN every bin holds the same figure
    _same(chart_bins.gather(loaded, chosen, _in_blocks(loaded, rows)), whole)
    assert whole.run.sums.sum() == loaded.phases["bytes"].sum()


def test_the_bins_are_numpys_histograms_of_each_phases_calls(loaded):
    # GIVEN each phase's counted calls, picked out by hand from the events
    calls = calls_of(loaded, loaded.trace.events)
    chosen = [int(p) for p in loaded.phases["phase"]]
    drawn = chart_bins.gather(loaded, chosen)
    for r in loaded.phases.itertuples():
        rows = np.flatnonzero(calls.data & (calls.phase == r.phase))
        mine = drawn.phases[int(r.phase)]
        # THEN the latency bins count every call once and agree with np.histogram on their edges
        latency_us = calls.latency_ns[rows] / 1e3
        assert mine.latency.counts.sum() == len(rows) == mine.calls
        expected, _ = np.histogram(np.clip(latency_us, mine.latency.edges[0], mine.latency.edges[-1]),
                                   bins=mine.latency.edges)
        np.testing.assert_array_equal(mine.latency.counts, expected)
        # the phase's timeline spans its calls and holds their bytes
        end_s = (calls.end_ns[rows] - int(r.data_first_ns)) / 1e9
        assert mine.timeline.span == float(end_s.max())
        assert mine.timeline.sums.sum() == calls.bytes[rows].sum() == r.bytes
        # and the offset picture spans the calls' offsets, every call in one cell
        if not mine.offsets.markers:
            x = (calls.start_ns[rows] - int(r.data_first_ns)) / 1e9 * mine.offsets.scale
            y = calls.offset[rows].astype(float) / mine.offsets.divisor
            counts, xe, ye = np.histogram2d(x, y, bins=chart_bins.DENSITY_BINS)
            np.testing.assert_array_equal(mine.offsets.counts, counts)
            np.testing.assert_array_equal(mine.offsets.edges()[0], xe)
            np.testing.assert_array_equal(mine.offsets.edges()[1], ye)


def _reference_depth(start, end, points):
    """The series as depth_series made it over every request at once (before DepthSeries)."""
    _, when, _, depth = inflight._sweep(np.zeros(len(start), np.int64), start, end)
    t0, t1 = int(when[0]), int(when[-1])
    if t1 <= t0:
        return pd.DataFrame({"t_s": [0.0], "depth": [int(depth.max())]})
    bucket = np.minimum((when - t0) * points // (t1 - t0), points - 1)
    highest = pd.Series(depth).groupby(bucket).max()
    return pd.DataFrame({"t_s": highest.index.to_numpy() * (t1 - t0) / points / 1e9, "depth": highest.to_numpy()})


@pytest.mark.parametrize("seed", range(12))
def test_the_depth_series_in_blocks_is_the_series_of_all_requests(seed):
    # GIVEN requests of a queue of random depth, some starting and ending on the same
    # nanosecond as others (ties: ends before starts), in order of their start
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    start = np.sort(rng.integers(0, int(rng.choice([5, 1000, 10**7])), n)).astype(np.int64)
    end = start + rng.choice([0, 1, 7, 1000, 10**5], n) * rng.integers(0, 3, n)
    points = int(rng.choice([1, 7, 400]))
    expected = _reference_depth(start, end, points)
    for rows in (1, 37, 1000, n):
        # WHEN they are given a block at a time
        series = inflight.DepthSeries(int(start.min()), int(end.max()), points)
        for at in range(0, n, rows):
            series.add(start[at:at + rows], end[at:at + rows])
        # THEN the series is the one made of all of them at once
        pd.testing.assert_frame_equal(series.finish(), expected, check_exact=True)
        assert series.depth == 0   # every request that started has ended


def test_a_phase_without_counted_calls_gets_no_charts(loaded):
    # GIVEN a chosen phase number the report does not hold, and none at all
    drawn = chart_bins.gather(loaded, [10**6])
    # THEN no phase is drawn but the run's timeline still is
    assert drawn.phases == {} and drawn.run.sums.sum() == loaded.phases["bytes"].sum()


def test_a_streamed_report_opened_for_charts_gathers_the_extents_in_its_last_pass(trace_path, loaded):
    # GIVEN the extents of every phase's calls, from the calls in memory
    whole = Extents(int(loaded.phases["phase"].max()))
    whole.add(calls_of(loaded, loaded.trace.events))
    # WHEN the trace is read block by block for a page, and for another form
    with stream_full.open_report(trace_path, block_rows=41, charts=True) as trace:
        gathered = trace.report().chart_extents
    with stream_full.open_report(trace_path, block_rows=41) as trace:
        assert trace.report().chart_extents is None   # a form without charts pays nothing for them
    # THEN the extents the report gathered are those, figure for figure
    for name, column in vars(whole).items():
        np.testing.assert_array_equal(getattr(gathered, name), column, err_msg=name)
