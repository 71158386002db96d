"""How each run differs from the first, per phase and metric, and the thresholds a CI gate sets.

`compare` matches phases across runs (reporters/compare.py); this module turns the
matched phases into numbers: each metric's value in every run, and its change against the
first run (the baseline), absolute and in percent. `--fail-if` expressions are read and judged
here, so that the text, JSON and exit code all come from one computation.

An expression is METRIC OP CHANGE, e.g. `p99>+10%` (the 99th percentile latency of some phase
grew by more than 10 %) or `wall<-5%` (some phase's wall-clock throughput fell by more than
5 %). CHANGE is a percentage, or an absolute amount with the metric's kind of unit
(`p99>+200us`, `wall<-50MiB/s`, `duration>+0.5s`, `bytes<-1MiB`, `ops>+100`). The change
judged is each later run's against the baseline's, phase by phase; a phase that is missing in
a run is named, not judged (no figure to compare).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from iowitness import units
from iowitness.errors import UsageError


@dataclass(frozen=True)
class Metric:
    name: str
    column: str | None   # the phase table's column; None: computed (active)
    unit: str            # the unit of the numbers in JSON: B/s, us, s, B, 1/s or ""
    what: str


METRICS = (
    Metric("active", None, "B/s", "the throughput the benchmark most likely timed (the verdict's window), else wall"),
    Metric("wall", "wall_Bps", "B/s", "bytes over first call start to last call end"),
    Metric("busy", "busy_Bps", "B/s", "bytes over the time spent inside the calls"),
    Metric("iops", "iops", "1/s", "calls per second of wall time"),
    Metric("mean", "lat_mean_us", "us", "mean call latency"),
    Metric("p50", "lat_p50_us", "us", "median call latency"),
    Metric("p90", "lat_p90_us", "us", "90th percentile call latency"),
    Metric("p99", "lat_p99_us", "us", "99th percentile call latency"),
    Metric("p99.9", "lat_p99.9_us", "us", "99.9th percentile call latency"),
    Metric("max", "lat_max_us", "us", "slowest call"),
    Metric("duration", "duration_s", "s", "the phase's wall time"),
    Metric("bytes", "bytes", "B", "bytes moved"),
    Metric("ops", "ops", "", "calls counted"),
)
BY_NAME = {m.name: m for m in METRICS}
TEXT_METRICS = ("active", "wall", "p50", "p99", "max", "duration")   # the text table's rows; JSON has all

# absolute CHANGE units, by the metric's unit: a factor to the JSON unit
_TIME_TO_US = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6}
_TIME_TO_S = {k: v / 1e6 for k, v in _TIME_TO_US.items()}
_ABSOLUTE = {
    "us": _TIME_TO_US,
    "s": _TIME_TO_S,
    "B/s": {f"{name}/s": factor for name, factor in units.BYTE_UNITS.items()},
    "B": dict(units.BYTE_UNITS),
    "1/s": {"": 1.0, "/s": 1.0},
    "": {"": 1.0},
}
_EXPRESSION = re.compile(r"^\s*(?P<metric>[a-z0-9.]+)\s*(?P<op>>=|<=|>|<)\s*(?P<number>[+-]?\d+(?:\.\d+)?)"
                         r"\s*(?P<unit>\S*)\s*$")
_OPS = {">": lambda a, b: a > b, "<": lambda a, b: a < b, ">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b}


@dataclass(frozen=True)
class Threshold:
    text: str
    metric: Metric
    op: str
    amount: float        # in the metric's JSON unit, or in percent
    percent: bool

    def crossed(self, change: dict) -> bool:
        value = change["delta_pct"] if self.percent else change["delta"]
        return value is not None and _OPS[self.op](value, self.amount)


def parse_threshold(text: str) -> Threshold:
    """One --fail-if expression; a UsageError naming what is wrong and how it should read."""
    example = "give one like p99>+10% or wall<-5% or p99>+200us"
    match = _EXPRESSION.match(text)
    if not match:
        raise UsageError(f"--fail-if {text!r} is not METRIC OP CHANGE; {example}")
    metric = BY_NAME.get(match["metric"])
    if metric is None:
        raise UsageError(f"--fail-if {text!r}: no metric {match['metric']!r}; the metrics are "
                         f"{', '.join(BY_NAME)}")
    number, unit = float(match["number"]), match["unit"]
    if unit == "%":
        return Threshold(text, metric, match["op"], number, True)
    factors = _ABSOLUTE[metric.unit]
    if unit not in factors:
        known = ", ".join(repr(u) if u else "no unit" for u in list(factors)[:8])
        what = f"{unit!r} is not a unit of" if unit else "give a % or a unit for"
        raise UsageError(f"--fail-if {text!r}: {what} {metric.name} ({metric.what}); it takes a percentage "
                         f"or one of {known}")
    return Threshold(text, metric, match["op"], number * factors[unit], False)


def _number(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value


def value_of(run, key: tuple, metric: Metric, active_rate) -> float | None:
    """One metric of one phase of one run; None when the run has no such phase or no figure."""
    phase = run.keys.get(key)
    if phase is None:
        return None
    if metric.column is None:
        return _number(active_rate(run, key))
    return _number(run.by_phase.at[phase, metric.column])


def change(base: float | None, value: float | None) -> dict:
    """Absolute and relative change of `value` against `base` (None where it cannot be said:
    a missing figure, or a percentage of a zero baseline)."""
    if base is None or value is None:
        return {"delta": None, "delta_pct": None}
    delta = value - base
    return {"delta": delta, "delta_pct": (100.0 * delta / abs(base)) if base else None}


def table(runs: list, keys: dict, active_rate) -> list[dict]:
    """Per phase key (in `keys` order, label as value): every metric's values and changes.
    The first run is the baseline; its own change is zero by definition and given as such."""
    out = []
    for key, label in keys.items():
        metrics = []
        for metric in METRICS:
            values = [value_of(run, key, metric, active_rate) for run in runs]
            changes = [change(values[0], v) for v in values]
            metrics.append({"metric": metric.name, "unit": metric.unit, "values": values,
                            "delta": [c["delta"] for c in changes], "delta_pct": [c["delta_pct"] for c in changes]})
        out.append({"phase": label, "name": key[0], "rank": key[1],
                    "present": [run.keys.get(key) is not None for run in runs],
                    "phase_numbers": [run.keys.get(key) for run in runs], "metrics": metrics})
    return out


def judge(thresholds: list[Threshold], rows: list[dict], labels: list[str]) -> list[dict]:
    """Per threshold: each (phase, run) where the change crossed it, and the phases it could not judge."""
    results = []
    for t in thresholds:
        hits, not_judged = [], []
        for row in rows:
            m = next(x for x in row["metrics"] if x["metric"] == t.metric.name)
            for i in range(1, len(labels)):
                c = {"delta": m["delta"][i], "delta_pct": m["delta_pct"][i]}
                if not (row["present"][0] and row["present"][i]):
                    not_judged.append({"phase": row["phase"], "run": labels[i], "why": "phase missing"})
                elif (c["delta_pct"] if t.percent else c["delta"]) is None:
                    missing = m["values"][0] is None or m["values"][i] is None
                    not_judged.append({"phase": row["phase"], "run": labels[i],
                                       "why": "no figure" if missing else "a zero baseline has no percentage"})
                elif t.crossed(c):
                    hits.append({"phase": row["phase"], "run": labels[i], "unit": m["unit"], "baseline": m["values"][0],
                                 "value": m["values"][i], **c})
        results.append({"expression": t.text, "metric": t.metric.name, "crossed": bool(hits), "hits": hits,
                        "not_judged": not_judged})
    return results
