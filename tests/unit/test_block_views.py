"""The block views (analysis/measure/block_views.py) on block records written by hand, where every
expected figure follows from the records by counting: the phase of each request, bcc's log2
buckets and how biolatency draws them, the iostat -x columns per interval, the queue depth."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from iowitness.analysis.measure import block_views
from iowitness.probes.layout import layout
from iowitness.reporters import block as block_report

MS = 1_000_000
T0 = 1000 * MS
DEV = 7 << 20 | 0


def _trace(rows) -> SimpleNamespace:
    """rows: (start_ms, issue_ms, complete_ms, bytes, op, tid) on a clock starting at T0."""
    block = np.zeros(len(rows), dtype=layout().structs["iow_block"])
    for i, (start, issue, complete, size, op, tid) in enumerate(rows):
        block[i]["start_ns"], block[i]["issue_ns"] = T0 + start * MS, T0 + issue * MS
        block[i]["complete_ns"], block[i]["bytes"], block[i]["op"] = T0 + complete * MS, size, op
        block[i]["tid"] = block[i]["tgid"] = tid
        block[i]["dev"], block[i]["sector"] = DEV, 8 * i
        block[i]["comm"][:2] = np.frombuffer(b"dd", np.uint8)
    return SimpleNamespace(meta={"clock_start": {"monotonic_ns": T0},
                                 "device_view": {"devices": [{"dev": DEV, "device": "7:0", "name": "loop0"}]}},
                           block=block)


def _phases(*rows) -> pd.DataFrame:
    """rows: (phase, tid, first_ms, last_ms)."""
    table = pd.DataFrame(rows, columns=["phase", "tid", "first_ns", "last_ns"])
    for c in ("first_ns", "last_ns"):
        table[c] = T0 + table[c] * MS
    table["sync_end_ns"] = table["close_end_ns"] = table["last_ns"]
    return table


def test_each_request_belongs_to_the_phase_of_its_submitter_or_of_the_only_window():
    trace = _trace([(0, 0, 1, 4096, 1, 10),     # in phase 1's window only
                    (5, 5, 6, 4096, 1, 20),     # in both windows, submitted by phase 2's thread
                    (5, 5, 7, 4096, 1, 99),     # in both windows, by neither thread
                    (30, 30, 31, 4096, 1, 99)])  # in no window
    rows = block_views.requests(trace, _phases((1, 10, 0, 10), (2, 20, 4, 20)))
    assert rows["phase"].tolist() == [1, 2, -1, -1]
    assert rows["phases"].tolist() == ["1", "2", "1,2", "-"]


def test_latency_is_issue_to_complete_and_queue_is_start_to_issue():
    rows = block_views.requests(_trace([(0, 2, 5, 4096, 0, 1)]), None)
    assert rows["latency_ns"].tolist() == [3 * MS] and rows["queue_ns"].tolist() == [2 * MS]
    assert rows["op"].tolist() == ["read"] and rows["device"].tolist() == ["loop0"]


def test_log2_buckets_and_drawing_follow_bcc():
    # bcc's slots: 0 and 1 in slot 0, then 2..3, 4..7, ...
    assert block_views.log2_slots(np.array([0, 1, 2, 3, 4, 7, 8, 1023, 1024])).tolist() == \
        [0, 0, 1, 1, 2, 2, 3, 9, 10]
    text = block_views.log2_text([0, 2, 4])
    # as print_log2_hist draws them: the header, then "low -> high : count |stars|", 40 stars for the most
    assert text.splitlines() == [
        "     usecs               : count     distribution",
        "         0 -> 1          : 0        |                                        |",
        "         2 -> 3          : 2        |********************                    |",
        "         4 -> 7          : 4        |****************************************|"]


def test_histograms_are_per_device_and_phase():
    trace = _trace([(0, 0, 1, 4096, 1, 10), (0, 1, 2, 4096, 1, 10), (15, 15, 16, 4096, 1, 20)])
    hists = block_views.histograms(trace, _phases((1, 10, 0, 10), (2, 20, 12, 20)))
    assert [(h["device"], h["phase"], h["requests"]) for h in hists] == [("loop0", 1, 2), ("loop0", 2, 1)]
    # 1000 µs lands in slot 9 (512..1023)
    assert hists[0]["counts"][9] == 2 and sum(hists[0]["counts"]) == 2


def test_intervals_are_iostat_x_over_each_interval():
    # GIVEN two 4 KiB writes in the first 10 ms and one 8 KiB read in the second
    trace = _trace([(0, 0, 2, 4096, 1, 1), (2, 2, 4, 4096, 1, 1), (12, 12, 17, 8192, 0, 1)])
    table = block_views.intervals(trace, 10 * MS)
    assert table["t_s"].tolist() == [0.0, 0.01]
    first, second = table.iloc[0], table.iloc[1]
    assert first["w/s"] == pytest.approx(200) and first["wkB/s"] == pytest.approx(800)
    assert first["w_await"] == pytest.approx(2.0) and first["%util"] == pytest.approx(40.0)
    assert first["aqu-sz"] == pytest.approx(0.4) and first["areq-sz"] == pytest.approx(4.0)
    assert second["r/s"] == pytest.approx(100) and second["rkB/s"] == pytest.approx(800)
    assert second["r_await"] == pytest.approx(5.0) and second["w/s"] == 0


def test_queue_depth_steps_with_requests_in_flight():
    rows = block_views.requests(_trace([(0, 0, 4, 4096, 1, 1), (1, 1, 2, 4096, 1, 1), (4, 4, 5, 4096, 1, 1)]), None)
    times, depth = block_views.queue_depth(rows)["loop0"]
    # at 4 ms one completes as the next starts: the completion first, so the depth stays 1
    assert ((times - T0) // MS).tolist() == [0, 1, 2, 4, 5] and depth.tolist() == [1, 2, 1, 1, 0]


@pytest.mark.parametrize("text,ns", [("1s", 10**9), ("500ms", 5 * 10**8), ("2", 2 * 10**9), ("0.25s", 25 * 10**7)])
def test_interval_durations(text, ns):
    assert block_report.parse_interval(text) == ns


@pytest.mark.parametrize("text", ["soon", "0", "-1s", "10us"])
def test_bad_interval_durations_say_why(text):
    with pytest.raises(ValueError, match="give"):
        block_report.parse_interval(text)


def test_show_block_of_a_trace_without_block_records_says_so(tmp_path):
    from tests.support.cli import iowitness
    from tests.support.synthetic import O_CREAT, O_WRONLY, Calls
    from tests.unit.test_stream_export import write_trace

    trace = tmp_path / "t.iwt"
    write_trace(trace, Calls().open("/data/f", O_WRONLY | O_CREAT).write(4096).close().frame())
    # WHEN a trace recorded with no block device under its files is listed with --block
    done = iowitness("show", "--block", str(trace), check=False)
    # THEN one line says why, and no traceback
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no block request" in done.stderr
    both = iowitness("show", "--block", "--events", str(trace), check=False)
    assert both.returncode == 2 and "give one" in both.stderr


def test_intervals_split_request_sizes_and_count_discards_and_flushes_as_iostat_x():
    # GIVEN in the first 10 ms a 4 KiB write and a 12 KiB read, a 1 MiB discard (op 3) and two
    # flushes (op 2) of 1 and 3 ms; nothing in the second
    trace = _trace([(0, 0, 1, 4096, 1, 1), (0, 0, 2, 12288, 0, 1), (1, 1, 3, 1 << 20, 3, 1),
                    (4, 4, 5, 0, 2, 1), (5, 5, 8, 0, 2, 1), (12, 12, 13, 4096, 1, 1)])
    first, second = block_views.intervals(trace, 10 * MS).iloc[:2].to_dict("records")
    # THEN the per-direction request sizes are iostat's rareq-sz and wareq-sz (kB), the discards
    # d/s and dkB/s (not in w/s: iostat counts them apart), the flushes f/s and their mean f_await (ms)
    assert (first["rareq-sz"], first["wareq-sz"], first["areq-sz"]) == (12.0, 4.0, 8.0)
    assert first["w/s"] == pytest.approx(100) and first["r/s"] == pytest.approx(100)
    assert first["d/s"] == pytest.approx(100) and first["dkB/s"] == pytest.approx(102400)
    assert first["dareq-sz"] == pytest.approx(1024) and first["d_await"] == pytest.approx(2.0)
    assert first["f/s"] == pytest.approx(200) and first["f_await"] == pytest.approx(2.0)
    assert (second["d/s"], second["f/s"], second["f_await"], second["rareq-sz"]) == (0, 0, 0, 0)
