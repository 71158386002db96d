"""A child of IOzone's throughput mode whose clock started before the group's first call
(analysis/benchmarks/iozone_groups.py from_ready): two children built call by call as iozone.c
makes them (each opens its file, says it is ready, and is let go with the other; its clock read,
then its writes), child 0 waiting 8 ms for a CPU between its clock read and its first write,
after child 1 had begun. Its -C line is made from its clock as iozone.c computes it."""

from __future__ import annotations

import pytest

from iowitness.analysis.benchmarks import iozone_groups
from iowitness.analysis.judge import match_claims as matching
from iowitness.analysis.judge.claim import Claim
from tests.support.synthetic import O_CREAT, O_TRUNC, O_WRONLY, START_NS, Calls
from tests.unit.test_verdicts import REC, built, claim

MS = 1_000_000
RECORDS = 120                      # 120 writes of 64 KiB per child, 0.2 ms each: 24 ms
FILE = RECORDS * REC
COMMAND = ["iozone", "-t", "2", "-x", "-i0", "-s", f"{FILE // 1024}k", "-r", "64k", "-C", "-F", "/data/f0",
           "/data/f1"]
GO = START_NS + MS                 # both children let go; both opened their files before
CLOCK_0 = GO + 100_000             # child 0 reads its clock, then waits 8 ms for a CPU
FIRST_0, FIRST_1 = CLOCK_0 + 8 * MS, GO + 4 * MS   # child 1 begins first, itself 4 ms late


def _child(calls: Calls, path: str, opened: int, first: int, wait_after: int = 0) -> int:
    calls.open(path, O_WRONLY | O_CREAT | O_TRUNC, at=opened).at(first)
    for _ in range(RECORDS):
        calls.write(REC, latency=200_000)
    end = calls.now
    calls.gap(wait_after).fsync(latency=MS).close()
    return end


@pytest.fixture(scope="module")
def late_child():
    calls = Calls(tgid=1000)
    end_0 = _child(calls, "/data/f0", START_NS, FIRST_0)
    end_1 = _child(calls.process(2000), "/data/f1", START_NS + 300_000, FIRST_1)
    return built(calls, COMMAND), end_0, end_1


def _line(rate: float, child: int = 0):
    return claim(rate, scope="child", processes=2, file_size=FILE, record_size=REC, extra={"child": child})


def _rate(start: int, end: int) -> float:
    return FILE / ((end - start) / 1e9)


def test_a_child_clock_started_before_the_groups_first_call_is_explained_by_the_barrier(late_child):
    (rep, trace), end_0, _ = late_child
    # GIVEN child 0's line as IOzone timed it: from its clock read, 3.9 ms before the group's first call
    said = _rate(CLOCK_0, end_0)
    assert said < 0.9 * _rate(FIRST_1, end_0)       # below even the "from go" figure
    # WHEN judged
    [v] = matching.match(rep, [_line(said)], "iozone", COMMAND, trace=trace)
    # THEN explained: no child went before both had opened their files, and timed from there
    # the figure brackets the claim with the child's own
    assert v.verdict == "explained", v.reasons
    assert v.reasons[0].startswith("a child's clock may run beyond its calls: it starts no earlier than the "
                                   "children's barrier"), v.reasons
    assert "each after its openat" in v.reasons[0] and "no later than the start of its next call" in v.reasons[0]
    assert v.figures["calls from ready"] == pytest.approx(_rate(START_NS + 300_000 + 1000, end_0), rel=1e-3)


def test_a_doctored_child_line_below_the_barrier_still_disagrees(late_child):
    (rep, trace), end_0, _ = late_child
    # GIVEN child 0's line doctored to half of what its clock gave
    [v] = matching.match(rep, [_line(0.5 * _rate(CLOCK_0, end_0))], "iozone", COMMAND, trace=trace)
    # THEN it disagrees: no start the trace allows gives it
    assert v.verdict == "disagrees", v.reasons


def test_without_a_call_before_the_start_a_start_wait_cannot_be_judged(late_child, monkeypatch):
    (rep, trace), end_0, _ = late_child
    # GIVEN a trace without the children's opens (no barrier it can show)
    real = iozone_groups.Around.__init__

    def no_barrier(self, evidence, rows):
        real(self, evidence, rows)
        self.ready = None
    monkeypatch.setattr(iozone_groups.Around, "__init__", no_barrier)
    # WHEN child 0's line is judged
    [v] = matching.match(rep, [_line(_rate(CLOCK_0, end_0))], "iozone", COMMAND, trace=trace)
    # THEN it cannot be judged, and says why: a start wait the trace cannot bound
    assert v.verdict == "cannot judge", v.reasons
    assert "the trace holds no call before it to bound where" in v.reasons[0]
    # AND a shortfall bigger than any start wait still disagrees
    [v] = matching.match(rep, [_line(0.3 * _rate(CLOCK_0, end_0))], "iozone", COMMAND, trace=trace)
    assert v.verdict == "disagrees", v.reasons


def test_a_child_clock_read_late_after_its_last_call_is_explained_up_to_its_next_call():
    # GIVEN child 0 reading its clock just before its first write, and again only after a
    # 6 ms wait for a CPU at its last write's return, before its fsync
    calls = Calls(tgid=1000)
    first_0 = GO + 100_000
    end_0 = _child(calls, "/data/f0", START_NS, first_0, wait_after=6 * MS)
    _child(calls.process(2000), "/data/f1", START_NS + 300_000, GO + 200_000)
    rep, trace = built(calls, COMMAND)
    said = FILE / ((end_0 + 6 * MS - first_0) / 1e9)
    # WHEN its line is judged
    [v] = matching.match(rep, [_line(said)], "iozone", COMMAND, trace=trace)
    # THEN explained: its clock could stop as late as its fsync's start
    assert v.verdict == "explained", v.reasons
    assert "no later than the start of its next call" in v.reasons[0]
    # AND doctored to half, it disagrees
    [v] = matching.match(rep, [_line(0.5 * said)], "iozone", COMMAND, trace=trace)
    assert v.verdict == "disagrees", v.reasons


@pytest.mark.parametrize("records, verdict", [(100, "explained"), (30, "disagrees")])
def test_a_min_xfer_counted_past_the_stonewall_is_explained_by_a_late_stop(records, verdict):
    # GIVEN two children with stonewalling (no -x), child 1 let go 10 ms after child 0: 70 of its
    # 120 records done when child 0 finished; IOzone's Min xfer says child 1 counted 100 (the stop
    # reached it late) or, doctored, 30
    calls = Calls(tgid=1000)
    _child(calls, "/data/f0", START_NS, GO)
    _child(calls.process(2000), "/data/f1", START_NS + 300_000, GO + 10 * MS)
    command = [a for a in COMMAND if a != "-x"]
    rep, trace = built(calls, command)
    said = records * REC
    min_xfer = Claim(source="iozone", test="write", value=said / 1024, unit="kB", printed="Min xfer",
                     scope="min xfer", direction="write", processes=2, file_size=FILE, record_size=REC,
                     extra={"bytes": said})
    # WHEN judged
    [v] = matching.match(rep, [min_xfer], "iozone", command, trace=trace)
    # THEN between the count at the stonewall and the whole file: explained by a late stop
    assert v.verdict == verdict, v.reasons
    if verdict == "explained":
        assert v.reasons[0].startswith("the stop reached the children after the first one finished")


def _parent_line(rate: float, kind: str) -> Claim:
    if kind == "bytes":
        return claim(rate, scope="parent", processes=2, file_size=FILE, record_size=REC)
    ops = rate / REC   # IOzone -O: the same line in operations (one write of a record each)
    return Claim(source="iozone", test="write", value=ops, unit="ops/sec", printed=f"write: {ops} ops/sec",
                 ops_per_s=ops, direction="write", scope="parent", processes=2, file_size=FILE, record_size=REC)


@pytest.mark.parametrize("kind", ["bytes", "ops"])
def test_a_parent_clock_started_at_the_go_before_the_groups_first_call_is_explained_by_the_barrier(late_child, kind):
    (rep, trace), _, _ = late_child
    # GIVEN the parent's line as iozone.c times it: from its clock read as it lets the children
    # go, 4 ms before the group's first call (both children waited for a CPU), to the last close
    # (the "Parent sees" rewrite line of IOzone -O -t 2 was a false DISAGREES at 0.94x, load 17)
    events = trace.events
    last_close = int(events.loc[events["syscall"] == "close", "end_ns"].max())
    said = 2 * FILE / ((last_close - GO) / 1e9)
    assert said < 0.9 * 2 * FILE / ((last_close - FIRST_1) / 1e9)   # below the figure from the first call
    # WHEN judged
    [v] = matching.match(rep, [_parent_line(said, kind)], "iozone", COMMAND, trace=trace)
    # THEN explained: the parent lets no child go before both opened their files, and timed
    # from there its figure brackets the claim with the one from the group's first call
    assert v.verdict == "explained", v.reasons
    assert v.reasons[0].startswith("the parent's clock starts when it lets the children go, no earlier than the "
                                   "children's barrier"), v.reasons
    barrier = START_NS + 300_000 + 1000   # the end of child 1's open (1 µs)
    assert v.figures["parent from ready"] == pytest.approx(said * (last_close - GO) / (last_close - barrier)
                                                           / (REC if kind == "ops" else 1), rel=1e-3)
    # AND doctored to 0.7x, below what any start the trace allows gives, it disagrees
    [v] = matching.match(rep, [_parent_line(0.7 * said, kind)], "iozone", COMMAND, trace=trace)
    assert v.verdict == "disagrees", v.reasons


def test_a_parent_line_over_one_member_is_timed_by_the_parents_clock_not_the_calls():
    # GIVEN IOzone -t 2's re-read as a busy machine makes it: child 0 let go after child 1 had
    # finished (it saw the stop flag, opened, synced and closed its file, and read nothing: IOzone
    # prints Min xfer as child 1's, its minimum restarting after a 0), child 1 reading all; the
    # parent's line is the bytes over its clock, from the go to the last child's close (attached
    # at load 8: "Parent sees 209,950 kB/s" against 905 MiB/s of calls, 0.23x, a false DISAGREES)
    calls = Calls(tgid=1000)
    calls.open("/data/f0", O_WRONLY, at=START_NS).at(GO + 2 * MS).fsync(latency=MS).close()
    child_1 = calls.process(2000)
    child_1.open("/data/f1", O_WRONLY, at=START_NS + 300_000).at(GO)
    for _ in range(RECORDS):
        child_1.write(REC, latency=200_000)
    child_1.fsync(latency=30 * MS).close()
    rep, trace = built(calls, COMMAND)
    said = FILE / ((child_1.now - GO) / 1e9)
    parent = claim(said, scope="parent", processes=2, file_size=FILE, record_size=REC)
    # WHEN its line is judged
    [v] = matching.match(rep, [parent], "iozone", COMMAND, trace=trace)
    # THEN against the parent's window, to the last close: it agrees, one child moving no data
    assert v.verdict == "agrees" and v.window == "parent to close", (v.window, v.reasons)
    assert any("1 of the 2 processes moved no data" in r for r in v.reasons), v.reasons
    # AND doctored to half, it disagrees
    [v] = matching.match(rep, [claim(0.5 * said, scope="parent", processes=2, file_size=FILE, record_size=REC)],
                         "iozone", COMMAND, trace=trace)
    assert v.verdict == "disagrees", v.reasons
