"""The phase report for machines: JSON (everything) and CSV (the phase table)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from iowitness import escape
from iowitness.analysis.measure.observer import cost as observer_cost
from iowitness.analysis.report import LATENCY_BINS_US
from iowitness.collector.format.traceformat import not_followed
from iowitness.reporters import tables

SCHEMA_VERSION = 1   # of report --json, a --summary trace's too (aggregate.py); docs/schema/report.schema.json
                     # describes both forms (tests/unit/test_report_schema.py validates against it)


def _plain(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return None if value != value else float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _records(frame: pd.DataFrame) -> list[dict]:
    return [{k: _plain(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


def histograms(report) -> dict[int, list[int]]:
    """Per phase, counts of its data calls' latencies in log2 µs bins (gathered by the report's pass)."""
    return report.histograms if report.histograms is not None else {}


def verdict_records(verdicts) -> list[dict]:
    from dataclasses import asdict

    return [{"claim": {k: _plain(v) for k, v in asdict(v.claim).items()}, "phases": v.phases,
             "verdict": v.verdict, "kind": v.kind, "window": v.window, "ratio": _plain(v.ratio),
             "figures": {k: _plain(x) for k, x in v.figures.items()}, "reasons": v.reasons,
             "counts": {k: int(x) for k, x in (v.counts or {}).items()}, "placement": v.placement}
            for v in verdicts or []]


def device_json(report, trace) -> dict:
    """The device view: per phase figures and limiter, the diskstats cross-check, devices, gaps."""
    from iowitness.analysis.measure import device, device_checks

    table = report.device if report.device is not None else pd.DataFrame()
    phases = _records(table)
    for p, r in zip(phases, table.itertuples()):
        p["limiter_text"] = device.limiter_line(r)
    view = trace.meta.get("device_view") or {}
    return {"devices": view.get("devices", []), "no_block_device": view.get("no_block_device", {}),
            "phases": phases, "cross_check": _records(device_checks.cross_check(trace)),
            "lost_block": int(trace.counters.get("lost_block", 0)),
            "devices_not_watched": int(trace.counters.get("devices_not_watched", 0)), "notes": device.no_device_lines(trace)}


def to_json(report, trace, verdicts=None) -> str:
    phases = _records(report.phases)
    hist = histograms(report)
    # the outliers made records once, then dealt to their phases in their order (a frame's
    # records per phase cost ~3 ms each: 0.9 s for the 292 phases of a 10 M-event trace)
    outliers: dict = {}
    for record in _records(report.outliers):
        outliers.setdefault(record["phase"], []).append(record)
    for p in phases:
        p["latency_histogram_us"] = {"bins": LATENCY_BINS_US, "counts": hist[p["phase"]]}
        p["outliers"] = outliers.get(p["phase"], [])
    doc = {
        "schema_version": SCHEMA_VERSION,
        "trace": trace.meta.get("path"), "command": trace.meta.get("command"), "benchmark": report.benchmark,
        "lost_events": int(trace.lost), "not_followed": not_followed(trace.counters),
        "complete": trace.meta.get("complete"), "warnings": tables.warnings(trace),
        "observer": observer_cost(trace),
        "phases": phases, "groups": _records(report.groups),
        "verdicts": verdict_records(verdicts),
        "device": device_json(report, trace),
    }
    return json.dumps(doc, indent=2)   # ensure_ascii: every control character of a name escaped


def to_csv(report) -> str:
    return escape.csv(report.phases)
