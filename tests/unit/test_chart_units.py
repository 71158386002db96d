"""Charts in human units, and no plot along a size a sweep kept at one value (reporters/charts.py).

Ground truth: the numbers handed to the chart, and the axis labels matplotlib writes as text
into the SVG (svg.fonttype none)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("matplotlib")

from iowitness.analysis.measure import figures  # noqa: E402
from iowitness.reporters import charts  # noqa: E402


def _texts(svg: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def test_a_latency_claim_is_charted_in_microseconds_not_raw_seconds():
    # GIVEN fio's claim of a 25 µs mean latency and the active figures (seconds per call)
    svg = charts.claim_vs_active(25e-6, "fio clat mean", {"calls": 24e-6, "window": 26e-6}, "window",
                                 "latency", figures.fmt)
    texts = " ".join(_texts(svg))
    # THEN the axis says µs and its ticks read 0, 5, 10, ... not 0.000005
    assert "latency per call (µs)" in texts and "seconds per call" not in texts
    assert not re.search(r"0\.0000", texts)


@pytest.mark.parametrize("file_sizes, record_sizes, plots", [
    ((1 << 20,), (4096, 8192, 16384), ["record size"]),             # one file size: no "vs file size"
    ((1 << 20, 2 << 20, 4 << 20), (4096,), ["file size"]),          # one record size: no "vs record size"
    ((1 << 20, 2 << 20), (4096, 8192), ["file size", "record size"]),
])
def test_a_sweep_charts_only_the_sizes_it_varied(file_sizes, record_sizes, plots):
    points = [(f, r, 100e6 + f / 1000 + r) for f in file_sizes for r in record_sizes]
    texts = " ".join(_texts(charts.sweep("write", points)))
    for what in ("file size", "record size"):
        assert (f"{what} (log scale" in texts) == (what in plots)
