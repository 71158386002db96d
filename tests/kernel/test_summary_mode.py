"""--summary: in-kernel aggregates against what dd was told to do, and the observer's cost line."""

from __future__ import annotations

import json

from tests.support.cli import iowitness

KIB = 1024


def test_summary_counts_match_what_dd_was_asked_to_do(traced, workdir):
    # GIVEN dd writing 300 blocks of 4 KiB and syncing (ground truth: its own arguments)
    out = workdir / "dd.out"
    # WHEN it runs under iowitness --summary on that file
    trace, _ = traced(["dd", "if=/dev/zero", f"of={out}", "bs=4k", "count=300", "conv=fdatasync"],
                      "--summary", "--file", str(out))
    # THEN no call was recorded one by one, and the aggregates hold every write
    assert len(trace.raw_events()) == 0 and trace.lost == 0
    rows = trace.summary
    ops = {v: k for k, v in trace._ops.items()}
    writes = rows[rows["op"] == ops["write"]]
    assert int(writes["calls"].sum()) == 300
    assert int(writes["bytes"].sum()) == 300 * 4 * KIB
    assert int(writes["sequential"].sum()) == 300
    assert int(writes["hist"].sum()) == 300
    assert int(rows[rows["op"] == ops["fdatasync"]]["calls"].sum()) == 1
    # AND the writes form one phase, ended by the fdatasync
    report = json.loads(iowitness("report", "--json", str(trace.meta["path"])).stdout)
    (phase,) = report["phases"]
    assert (phase["operation"], phase["calls"], phase["bytes"], phase["fsyncs"]) == ("write", 300, 300 * 4 * KIB, 1)
    assert report["mode"] == "summary" and "per-call outliers (no record per call)" in report["unavailable"]
    # AND show says it is a summary trace, with the same totals
    shown = iowitness("show", str(trace.meta["path"])).stdout
    assert "mode      summary" in shown and "1.2 MiB" in shown


def test_every_report_states_the_observer_cost(traced, workdir):
    # GIVEN a full-mode trace of 200 reads of a file
    data = workdir / "in.bin"
    data.write_bytes(b"\0" * 200 * 4 * KIB)
    trace, _ = traced(["dd", f"if={data}", "of=/dev/null", "bs=4k"], "--file", str(data))
    # THEN the kernel's measure of the probe programs was saved (BPF statistics while recording)
    cost = trace.counters["probe_cost"]
    assert cost["run_cnt"] > 2 * 200 and cost["run_time_ns"] > 0
    # AND the runs the kernel skipped (recursion) are counted per program and in all
    assert trace.counters["missed_runs"] == sum(p["recursion_misses"] for p in cost["programs"].values())
    # AND report (text and JSON) and show state events, lost and the probe's time per call
    text = iowitness("report", str(trace.meta["path"])).stdout
    headline = next(line for line in text.splitlines() if line.startswith("observer"))
    assert "0 lost" in headline and "of the run's time" in headline and "ns per traced call" not in headline
    text = iowitness("report", "--verbose", str(trace.meta["path"])).stdout
    observer_line = [line for line in text.splitlines() if line.startswith("observer")][-1]
    assert "0 lost" in observer_line and "ns per traced call" in observer_line
    doc = json.loads(iowitness("report", "--json", str(trace.meta["path"])).stdout)["observer"]
    assert doc["lost"] == 0 and doc["calls"] == len(trace.raw_events()) >= 200
    assert doc["probe_ns_per_call_max"] > 0
    assert "ns per traced call" in iowitness("show", "-v", str(trace.meta["path"])).stdout
    # AND the collector's CPU while recording is part of its whole CPU time, start-up excluded
    meta = trace.meta
    whole = meta["collector_cpu_s"]["user"] + meta["collector_cpu_s"]["system"]
    assert 0 < meta["collector_cpu_recording_s"] <= whole - meta["collector_cpu_start_s"]
    assert doc["collector_cpu_s_per_m"] == meta["collector_cpu_recording_s"] / doc["calls"] * 1e6
    assert "per million calls while recording" in observer_line
