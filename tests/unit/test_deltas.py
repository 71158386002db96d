"""--fail-if expressions and the change arithmetic of compare (analysis/runs/deltas.py)."""

from __future__ import annotations

import pytest

from iowitness.analysis.runs import deltas
from iowitness.errors import UsageError


@pytest.mark.parametrize("text, amount, percent", [
    ("p99>+10%", 10.0, True), ("wall<-5%", -5.0, True), ("p99 > 10 %", 10.0, True),
    ("p99>+200us", 200.0, False), ("p99>+2ms", 2000.0, False), ("max>=1s", 1e6, False),
    ("wall<-50MiB/s", -50 * 2**20, False), ("duration>+500ms", 0.5, False), ("bytes<-1MB", -1e6, False),
    ("ops>+100", 100.0, False), ("iops<-10/s", -10.0, False),
])
def test_expressions_are_read_into_the_metric_unit(text, amount, percent):
    # GIVEN an expression as a user writes it, WHEN it is read
    t = deltas.parse_threshold(text)
    # THEN its amount is in the unit the JSON gives the metric in, or a percentage
    assert t.amount == pytest.approx(amount) and t.percent is percent


@pytest.mark.parametrize("text", ["", "p99", "p99>", ">10%", "p99=>10%", "p99>ten%", "p99>+10%%", "p99>1e3%",
                                  "lat>1%", "p99>+5MiB/s", "wall<-5", "bytes>+3s", "p99>nan"])
def test_a_bad_expression_is_a_usage_error(text):
    with pytest.raises(UsageError, match="--fail-if"):
        deltas.parse_threshold(text)


def test_change_of_a_zero_or_missing_baseline_has_no_percentage():
    assert deltas.change(0.0, 5.0) == {"delta": 5.0, "delta_pct": None}
    assert deltas.change(None, 5.0) == {"delta": None, "delta_pct": None}
    assert deltas.change(200.0, 150.0) == {"delta": -50.0, "delta_pct": -25.0}


def test_thresholds_compare_the_signed_change():
    # GIVEN a fall of 6 % and a rise of 6 %
    fall, rise = {"delta": -6.0, "delta_pct": -6.0}, {"delta": 6.0, "delta_pct": 6.0}
    # THEN wall<-5% is crossed by the fall only, p99>+5% by the rise only
    assert deltas.parse_threshold("wall<-5%").crossed(fall) and not deltas.parse_threshold("wall<-5%").crossed(rise)
    assert deltas.parse_threshold("p99>+5%").crossed(rise) and not deltas.parse_threshold("p99>+5%").crossed(fall)
