"""IOzone's figures on a busy machine, on real traces (tests/data/traces/README.md): what two
CPU hogs beside a run did to IOzone's clock and to its children, and the verdicts on them.
Ground truth is what IOzone printed (its table and its throughput lines) and what the trace's
calls show, set down in the README's rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from iowitness import load
from iowitness.analysis.judge import trace_verdicts

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"


def _verdicts(name: str) -> list:
    return trace_verdicts.verdicts(load(str(TRACES / name)))


def test_a_per_operation_figure_holds_the_time_between_the_calls():
    # GIVEN IOzone -N's rewrite of 1,024 records of 4 KiB printed as 16 us/op, while its calls
    # took 2.84 µs each: its thread waited for a CPU between them (8.2 ms of the 16.9 ms)
    verdicts = {v.claim.test: v for v in _verdicts("iozone_N_preempted_between_calls.iwt")}
    rewrite = verdicts["rewrite"]
    assert rewrite.claim.seconds_per_op == 16e-6 and rewrite.figures["mean latency"] < 3e-6
    # WHEN judged THEN it agrees with IOzone's window over its operations (the calls around it
    # bound it: 16.5 µs/op), to the whole microsecond IOzone printed, and says why
    assert rewrite.verdict == "agrees", rewrite.reasons
    assert 16.4e-6 < rewrite.figures["bounded, least"] <= rewrite.figures["bounded, most"] < 16.6e-6
    assert "lies within it as printed" in rewrite.reasons[0], rewrite.reasons
    assert "which the calls' mean latency leaves out" in rewrite.reasons[0]
    # AND no figure of the run disagrees
    assert not [v for v in verdicts.values() if v.verdict == "disagrees"], verdicts


@pytest.mark.parametrize("name", ["iozone_t2_child_stopped_at_zero.iwt", "iozone_t2_reread_of_an_unread_file.iwt"])
def test_a_child_stopped_before_its_first_read_leaves_its_test_a_member_short(name):
    # GIVEN IOzone -t 2 whose second reader was stopped by the first one's stonewall before its
    # first read ("Min xfer = 0.00 kB" for the readers and the re-readers): each test's reads
    # are one child's, the re-reads 2 s later another's
    # (in the second trace the re-read test's other child read f2, which no one had read: its
    # phase is a first read by its file, yet of the re-read test by its time)
    verdicts = _verdicts(name)
    by = {(v.claim.test, v.claim.scope): v for v in verdicts}
    # WHEN judged THEN the re-reads are not taken into the read test's group: each test is
    # judged on its own phase, and the re-read claims find theirs
    assert by[("read", "max process")].phases != by[("reread", "max process")].phases
    for test in ("read", "reread"):
        assert by[(test, "max process")].verdict == "agrees", by[(test, "max process")].reasons
    # AND nothing disagrees (the read's parent line was judged over read and re-read, 2 s apart: 24x)
    assert not [v for v in verdicts if v.verdict == "disagrees"], [(v.claim.printed, v.reasons[:1]) for v in verdicts]


def test_a_parent_line_over_a_one_member_test_is_judged_on_the_parents_clock():
    # GIVEN IOzone -t 2 attached to (load 8): the re-read's child on f1 read nothing (let go after
    # the other had read all), and the parent, asleep from the go to 60 ms after the last close,
    # printed 209,950 kB/s for the re-readers: 32 MiB over its 156 ms, against 905 MiB/s of calls
    verdicts = [v for v in _verdicts("iozone_t2_attached_reread_one_member.iwt") if v.claim.test == "reread"]
    parent = next(v for v in verdicts if v.claim.scope == "parent")
    # WHEN judged THEN over the parent's window, to its wake after the last close (before: the
    # calls' own figure, 0.23x, a false DISAGREES), and no figure of the test disagrees
    assert parent.verdict == "agrees" and parent.window == "parent to close", parent.reasons
    assert abs(parent.ratio - 1) < 0.01, parent.figures
    assert any("woke 60.0 ms later" in r for r in parent.reasons), parent.reasons
    assert not [v for v in verdicts if v.verdict == "disagrees"], [(v.claim.printed, v.reasons[0]) for v in verdicts]


def test_a_parent_that_slept_again_after_the_last_close_is_timed_to_its_last_wake():
    # GIVEN IOzone -O -t 2 at load 25: the rewrite's parent woke 4.0 ms after the children's last
    # close, slept 55.4 ms more, woke and printed "Parent sees ... 8514.07 ops/sec"
    verdicts = {(v.claim.test, v.claim.scope): v for v in _verdicts("iozone_O_t2_parent_second_wake.iwt")}
    parent = verdicts[("rewrite", "parent")]
    # WHEN judged THEN it is explained by the parent's clock from the children's barrier to its
    # last wake before its line (8,434 ops/s) and from the first call to its first wake (9,771):
    # before, DISAGREES at 0.87x
    assert parent.verdict == "explained", parent.reasons
    assert 8_400 < parent.figures["parent from ready"] < 8_514.07 < parent.figures["parent to close"], parent.figures
    assert "stops at one of its wakes between the last close and its line" in parent.reasons[0], parent.reasons
    # AND no figure of the run disagrees
    assert not [v for v in verdicts.values() if v.verdict == "disagrees"], verdicts
