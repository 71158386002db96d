"""Queue depth and busy time of asynchronous requests (analysis/phasing/inflight.py, phase_table.table)."""

import numpy as np
import pandas as pd

from iowitness.analysis.phasing import inflight
from iowitness.analysis.phasing.stream_table import of_frame as table
from tests.support.synthetic import O_RDONLY, Calls


def _depth_run(depth: int, requests: int, latency: int = 1000):
    """One thread keeps `depth` reads of 4 KiB in flight: a new one each latency/depth ns."""
    calls = Calls().open("/data/f", O_RDONLY, size=1 << 30)
    t0 = calls.now + 10
    for i in range(requests):
        calls.request("uring_read", 4096, 4096 * ((i * 7919) % 100_000), latency=latency, at=t0 + i * latency // depth)
    calls.at(t0 + requests * latency // depth + 2 * latency).close()
    return calls.frame()


def test_a_queue_kept_full_covers_its_window_once_and_shows_its_depth():
    # GIVEN 4,000 reads kept 8 deep, each 1 µs
    phases = table(_depth_run(depth=8, requests=4000))
    row = phases[phases["ops"] > 0].iloc[0]
    # THEN the phase's time in calls is its window, not 8x it, and its depth is 8
    assert row["async_ops"] == 4000
    window = 4000 * 1000 // 8 - 1000 // 8 + 1000
    assert row["data_ns"] == window
    assert row["busy_Bps"] == row["bytes"] / (window / 1e9)
    assert row["depth_max"] == 8
    assert abs(row["depth_mean"] - 4000 * 1000 / window) < 1e-9
    # AND almost every submission found 8 in flight counting itself (fio's bucket "8"); the
    # ramp-up's 1 to 3 (3 of 4,000) are under 0.1 % and not shown, 4 to 7 are bucket "4"
    assert row["depth_levels"] == "4=0.1%, 8=99.8%"


def test_plain_syscalls_keep_their_sum_and_no_depth():
    # GIVEN a thread of 200 plain reads
    calls = Calls().open("/data/f", O_RDONLY, size=1 << 20)
    for _ in range(200):
        calls.read(4096, latency=2000)
    phases = table(calls.close().frame())
    row = phases[phases["ops"] > 0].iloc[0]
    # THEN nothing changes for them: data time is the sum, depth is not given
    assert row["async_ops"] == 0 and row["data_ns"] == 200 * 2000
    assert np.isnan(row["depth_max"]) and row["depth_levels"] == ""


def test_covered_time_is_the_union_of_intervals_per_phase():
    # GIVEN intervals [0,10] [5,20] [30,40] in phase 1 and [0,5] [5,6] in phase 2 (touching)
    phase = np.array([1, 1, 1, 2, 2])
    start = np.array([0, 5, 30, 0, 5])
    end = np.array([10, 20, 40, 5, 6])
    covered = inflight.covered_ns(phase, start, end)
    # THEN phase 1 covers 20 + 10 and phase 2 covers 6; touching intervals do not overlap
    assert covered.to_dict() == {1: 30, 2: 6}
    depth = inflight.depth_table(phase, start, end)
    assert depth.loc[1, "depth_max"] == 2 and depth.loc[2, "depth_max"] == 1
    assert depth.loc[2, "depth_level_1"] == 1.0


def test_the_depth_series_keeps_a_short_burst_visible():
    # GIVEN one long request and a burst of 50 short ones in its middle
    start = np.r_[0, np.full(50, 500_000)]
    end = np.r_[1_000_000, np.full(50, 500_100)]
    series = inflight.depth_series(start, end, points=100)
    # THEN the series has at most 100 points and shows the 51 in flight
    assert len(series) <= 100 and series["depth"].max() == 51
    assert isinstance(series, pd.DataFrame) and series["t_s"].iloc[0] == 0.0


def _fio_claim(iodepth, engine="io_uring", levels=None):
    from iowitness.analysis.judge.claim import Claim
    return Claim(source="fio", test="j read", value=1.0, unit="KiB/s", printed="", job="j", direction="read",
                 extra={"iodepth": iodepth, "ioengine": engine, "iodepth_level": levels or {}})


def test_fio_depth_note_says_asked_counted_and_seen():
    from iowitness.analysis.benchmarks.fio import depth_note
    # GIVEN a phase kept 8 deep, and fio's claim that asked 8 and counted 8 at 99.9 %
    rows = table(_depth_run(depth=8, requests=4000))
    rows = rows[rows["ops"] > 0]
    note = depth_note(_fio_claim(8, levels={"1": 0.1, "8": 99.9, "16": 0.0}), rows)
    # THEN the note says all three, and no warning about a shallow queue
    assert note.startswith("queue depth: iodepth=8 asked (io_uring); the trace saw at most 8 in flight, 8.0 on average")
    assert "at submission 4=0.1%, 8=99.8%" in note and "fio counted 1=0.1%, 8=99.9% (iodepth_level: " in note
    assert "never got deeper" not in note
    # WHEN fio asked 32 of the same run THEN the shallow queue is said
    assert "never got deeper than 8 of the 32 asked" in depth_note(_fio_claim(32), rows)


def test_fio_depth_note_for_a_synchronous_engine_says_iodepth_did_nothing():
    from iowitness.analysis.benchmarks.fio import depth_note
    calls = Calls().open("/data/f", O_RDONLY, size=1 << 20)
    for _ in range(200):
        calls.read(4096)
    rows = table(calls.close().frame())
    rows = rows[rows["ops"] > 0]
    assert "ioengine=psync makes one call at a time" in depth_note(_fio_claim(16, "psync"), rows)
    assert depth_note(_fio_claim(1, "psync"), rows) is None


def test_requests_on_a_registered_file_join_the_open_that_named_it():
    # GIVEN a file opened as fd 3 and read by io_uring through the ring's registered file 0
    # (fd 0 is also stdin: the index must not be taken for it), then closed
    calls = Calls().open("/data/f", O_RDONLY, size=1 << 30)
    t0 = calls.now + 10
    for i in range(300):
        calls.request("uring_read", 4096, 4096 * i, latency=1000, fixed_index=0, at=t0 + i * 250)
    events = calls.at(t0 + 300 * 250 + 2000).close().frame()
    phases = table(events)
    # THEN open, requests and close are one phase of one description: its flags come from the open
    data = phases[phases["ops"] > 0]
    assert len(data) == 1 and int(data.iloc[0]["ops"]) == 300 and data.iloc[0]["pattern"] == "sequential"
    assert data.iloc[0]["open_flags"] == O_RDONLY and data.iloc[0]["first_ns"] < t0


def test_a_copy_between_two_targets_is_one_call_on_each_side():
    # GIVEN cp's way: copy_file_range asking for 2^63 - 1 bytes, moving 8 MiB, then 0 at the end
    from tests.support.synthetic import O_CREAT, O_WRONLY
    calls = Calls().open("/data/src", O_RDONLY, size=8 << 20).open("/data/dst", O_WRONLY | O_CREAT)
    calls.copy(3, 4, 2**63 - 1, 8 << 20, 0, latency=5_000_000).copy(3, 4, 2**63 - 1, 0, 8 << 20, latency=1000)
    phases = table(calls.close(fd=4).close(fd=3).frame())
    # THEN a read phase on the source and a write phase on the destination, 8 MiB each,
    # no short call, the record size is what a call moved, and neither phase is said to have
    # spent the copy's 5 ms in calls on the other file (they are one call; the other file's
    # open and close, 1 µs each, are)
    data = phases[phases["ops"] > 0].set_index("path")
    for path, operation in (("/data/src", "read"), ("/data/dst", "write")):
        row = data.loc[path]
        assert row["operation"] == operation and row["bytes"] == 8 << 20
        assert row["short"] == 0 and row["record_size"] == 8 << 20
        assert row["other_targets_ns"] <= 2000
