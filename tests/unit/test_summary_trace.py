"""A --summary trace without the kernel: SUMMARY chunks round trip, the last snapshot wins,
and show/report build their tables from it (collector/format/tracereader.py, analysis/read/aggregates.py)."""

from __future__ import annotations

import numpy as np

from iowitness.analysis.measure import observer
from iowitness.analysis.read import aggregates
from iowitness.analysis.read.run import load
from iowitness.collector.aggregates import combine_values, record_dtype
from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.probes.layout import layout
from iowitness.reporters import aggregate, summary

OP = {name: number for number, name in layout().names("iow_op", "IOW_OP_").items()}


def _rows(*specs):
    rows = np.zeros(len(specs), record_dtype())
    for row, spec in zip(rows, specs):
        for field, value in spec.items():
            row[field] = value
    return rows


def test_the_last_summary_snapshot_is_the_trace_s_summary(tmp_path):
    # GIVEN a trace with two snapshots of the aggregates, the second one later in the run
    path = tmp_path / "s.iwt"
    with TraceWriter(path, {"summary_mode": True, "clock_start": {"monotonic_ns": 0}}) as w:
        w.write_summary(_rows({"ino": 7, "op": OP["write"], "calls": 1}))
        hist = np.zeros(layout().constants["IOW_HIST_BUCKETS"], np.uint64)
        hist[12] = 100   # 100 calls of 4.1 .. 8.2 µs
        last = _rows({"ino": 7, "dev": 1, "tgid": 5, "epoch": 1, "op": OP["write"], "calls": 100,
                      "bytes": 409600, "requested": 409600, "sequential": 100, "latency_ns": 500_000,
                      "latency_max_ns": 8000, "first_start_ns": 1_000_000, "last_end_ns": 2_000_000, "hist": hist},
                     {"ino": 7, "dev": 1, "tgid": 5, "epoch": 1, "op": OP["fsync"], "calls": 1,
                      "latency_ns": 30_000, "latency_max_ns": 30_000})
        w.write_summary(last)
        w.write_counters({"events": 0, "calls": 101, "lost_events": 0, "lost_meta": 0, "lost_summary": 0})
        w.close({"clock_end": {"monotonic_ns": 10**9}, "collector_cpu_s": {"user": 0.1, "system": 0.0},
                 "trace_file_bytes": 2000})
    # WHEN it is loaded
    trace = load(path)
    # THEN the summary is the last snapshot, field for field
    assert trace.summary.dtype == last.dtype and trace.summary.tobytes() == last.tobytes()
    # AND the phase table has one write phase of 100 calls, 4 KiB records, ended by one fsync
    (phase,) = aggregates.phase_table(aggregates.rows(trace)).itertuples()
    assert (phase.operation, phase.calls, phase.record_size, phase.fsyncs) == ("write", 100, 4096, 1)
    assert phase.wall_Bps == 409600 / 1e-3 and phase.p50_max_us == 2 ** 13 / 1e3
    # AND show, report and the observer line work from it
    assert "summary" in summary.render(trace) and "101 calls summarized" in observer.line(trace)
    assert "not available in summary mode" in aggregate.render(trace)


def test_per_cpu_values_add_up_with_earliest_start_and_latest_end():
    # GIVEN one key's values on two CPUs, the second CPU unused
    per_cpu = np.zeros(3, layout().structs["iow_summary"])
    fields = ("calls", "bytes", "first_start_ns", "last_end_ns", "latency_max_ns")
    for cpu, values in ((0, (2, 10, 50, 90, 7)), (2, (1, 5, 20, 60, 9))):
        for name, value in zip(fields, values):
            per_cpu[cpu][name] = value
    # WHEN they are combined
    row = combine_values(per_cpu)
    # THEN counts add up, the first start is the earliest, the end and the maximum the largest
    assert (row["calls"], row["bytes"], row["first_start_ns"], row["last_end_ns"], row["latency_max_ns"]) \
        == (3, 15, 20, 90, 9)
