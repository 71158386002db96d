"""Several hosts' traces merged on one clock (analysis/runs/merged_trace.py): what IOzone's cluster
mode and fio's all-clients latency are judged on."""

from __future__ import annotations

import numpy as np

from iowitness.analysis.read.run import load
from iowitness.analysis.runs import merged_trace
from tests.support.trace_mutants import write_dd_trace


def test_two_hosts_with_the_same_process_numbers_stay_apart(tmp_path):
    # GIVEN two hosts' traces of one dd each, with the same PID and the same file
    write_dd_trace(tmp_path / "a.iwt")
    write_dd_trace(tmp_path / "b.iwt")
    a, b = load(tmp_path / "a.iwt"), load(tmp_path / "b.iwt")
    b.meta["clock_start"] = {**b.meta["clock_start"], "offset_ns": b.meta["clock_start"]["offset_ns"] + 5_000_000}
    # WHEN they are merged
    trace, where = merged_trace.merged([("a.iwt", a), ("b.iwt", b)], ["dd"], "cluster")
    # THEN every event of both is there, the second host's 5 ms later and under other numbers
    assert len(trace.events) == len(a.events) + len(b.events)
    assert [w.shift_ns for w in where] == [0, 5_000_000]
    assert where[1].lift == 1 << merged_trace.PID_SHIFT
    assert set(trace.events["tgid"].astype(np.int64)) == {4242, 4242 + (1 << merged_trace.PID_SHIFT)}
    assert np.all(np.diff(trace.events["start_ns"].to_numpy().astype(np.int64)) >= 0)
    # AND each host's phase is found again in the merged trace, with its bytes
    phases = trace.report().phases
    assert len(phases) == 2 and phases["bytes"].tolist() == [200 * 65536] * 2
    for host, place in zip((a, b), where):
        mine = merged_trace.phases_of(trace, place, host.report().phases)
        assert len(mine) == 1
        assert int(mine["data_first_ns"].iloc[0]) == int(host.report().phases["data_first_ns"].iloc[0]) + place.shift_ns
    # AND the merged trace carries no device view of its own (each host's is in its own report)
    assert trace.block is None
