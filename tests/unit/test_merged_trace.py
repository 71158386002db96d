"""Several hosts' traces merged on one clock, block by block (analysis/runs/merged_trace.py): what
IOzone's cluster mode and fio's all-clients latency are judged on.

Ground truth: each host's events as the in-memory reader gives them (iowitness.load), moved by
hand and sorted stably by start time: not the merge under test."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iowitness.analysis.read import stream_events
from iowitness.analysis.read.run import load
from iowitness.analysis.runs import merged_trace
from tests.support.hosts import opened_hosts
from tests.support.trace_mutants import dd_events, write_dd_trace


def _expected(paths, shifts_ns, lifts):
    """The merged table as it must be: every host's events moved, then in stable time order."""
    parts = []
    for path, shift, lift in zip(paths, shifts_ns, lifts):
        events = load(path).events
        parts.append(pd.DataFrame({"start_ns": events["start_ns"].to_numpy().astype(np.int64) + shift,
                                   "tgid": events["tgid"].to_numpy().astype(np.int64) + lift,
                                   "tid": events["tid"].to_numpy().astype(np.int64) + lift,
                                   "syscall": events["syscall"].astype(str).to_numpy(),
                                   "ret": events["ret"].to_numpy(), "offset": events["offset"].to_numpy()}))
    table = pd.concat(parts, ignore_index=True)
    return table.iloc[np.argsort(table["start_ns"].to_numpy(), kind="stable")].reset_index(drop=True)


def _merged_table(blocks):
    frames = list(blocks)
    table = pd.concat(frames)
    assert list(table.index) == list(range(len(table)))
    return len(frames), pd.DataFrame({"start_ns": table["start_ns"].to_numpy().astype(np.int64),
                                      "tgid": table["tgid"].to_numpy().astype(np.int64),
                                      "tid": table["tid"].to_numpy().astype(np.int64),
                                      "syscall": table["syscall"].astype(str).to_numpy(),
                                      "ret": table["ret"].to_numpy(), "offset": table["offset"].to_numpy()})


def test_two_hosts_with_the_same_process_numbers_stay_apart(tmp_path):
    # GIVEN two hosts' traces of one dd each, with the same PID and the same file, the second 5 ms later
    write_dd_trace(tmp_path / "a.iwt")
    write_dd_trace(tmp_path / "b.iwt")
    paths = [tmp_path / "a.iwt", tmp_path / "b.iwt"]
    with opened_hosts(paths, [0, 5_000_000]) as traces:
        # WHEN they are merged
        with merged_trace.open_merged(traces, ["dd"], "cluster") as merged:
            trace, where = merged.trace, merged.where
            # THEN every event of both is there, the second host's 5 ms later and under other numbers
            lift = 1 << merged_trace.PID_SHIFT
            assert [w.shift_ns for w in where] == [0, 5_000_000] and [w.lift for w in where] == [0, lift]
            _, table = _merged_table(merged.blocks())
            assert trace.event_count == len(table) == sum(len(load(p).events) for p in paths)
            assert set(table["tgid"]) == {4242, 4242 + lift}
            assert np.all(np.diff(table["start_ns"].to_numpy()) >= 0)
            # AND each host's phase is found again in the merged trace, with its bytes
            phases = trace.report().phases
            assert len(phases) == 2 and phases["bytes"].tolist() == [200 * 65536] * 2
            for (_, host), place in zip(traces, where):
                mine = merged_trace.phases_of(trace, place, host.report().phases)
                assert len(mine) == 1
                assert (int(mine["data_first_ns"].iloc[0])
                        == int(host.report().phases["data_first_ns"].iloc[0]) + place.shift_ns)
            # AND the merged trace carries no device view of its own (each host's is in its own report)
            assert trace.block is None


@pytest.mark.parametrize("shift_ns", [0, 1, 150_000, 40_000_000],
                         ids=["same times", "one ns apart", "interleaved", "one after the other"])
@pytest.mark.parametrize("block_rows", [5, 64, stream_events.BLOCK_ROWS])
def test_blocks_of_several_hosts_come_in_time_order_with_the_earlier_host_first_at_a_tie(tmp_path, shift_ns,
                                                                                       block_rows):
    # GIVEN three hosts' traces, read in blocks of `block_rows` rows, their clocks `shift_ns` apart;
    # on each, two threads start calls at the same nanoseconds, across the chunks' edges too
    paths = [tmp_path / f"{k}.iwt" for k in range(3)]
    events = dd_events()
    # rows 67 and 68 too: the first chunk's last and the second's first
    events["start_ns"][2::2] = events["start_ns"][1::2][:len(events[2::2])]
    events["tid"][2::2] += 1
    for path in paths:
        write_dd_trace(path, events)
    shifts = [0, shift_ns, 2 * shift_ns]
    with opened_hosts(paths, shifts, block_rows) as traces:
        # WHEN they are merged
        with merged_trace.open_merged(traces, ["dd"], "cluster") as merged:
            count, table = _merged_table(merged.blocks())
            # THEN the rows are every host's, moved, in stable time order: at equal times host 0, 1, 2
            lifts = [w.lift for w in merged.where]
            pd.testing.assert_frame_equal(table, _expected(paths, shifts, lifts))
            # AND small blocks (a block is at least one of the writer's three chunks) give several
            # blocks, each with the whole run's categories
            assert count >= 3 or block_rows == stream_events.BLOCK_ROWS
            assert set(next(iter(merged.blocks()))["syscall"].cat.categories) >= set(table["syscall"])
            phases = merged.trace.report().phases
    # AND the phases do not depend on the block size
    with opened_hosts(paths, shifts) as traces, merged_trace.open_merged(traces, ["dd"], "cluster") as whole:
        pd.testing.assert_frame_equal(phases, whole.trace.report().phases)


def test_a_merged_run_without_events_gives_one_empty_block(tmp_path):
    # GIVEN two hosts whose traces hold no event at all
    paths = [tmp_path / "a.iwt", tmp_path / "b.iwt"]
    for path in paths:
        write_dd_trace(path, dd_events()[:0])
    with opened_hosts(paths, [0, 0]) as traces, merged_trace.open_merged(traces, ["dd"], "cluster") as merged:
        # WHEN its blocks are read THEN one empty block with the table's columns comes
        blocks = list(merged.blocks())
        assert len(blocks) == 1 and len(blocks[0]) == 0 and "syscall" in blocks[0]
        assert merged.trace.event_count == 0
