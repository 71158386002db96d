"""IOzone's clock on a busy machine (analysis/benchmarks/iozone_clock.py): a single run's write
and rewrite built call by call as iozone.c's write_perf_test makes them (open, fsync, the
writes, then outside the timing the fsync and close), with a wait between the last write and
the fsync after it that no call shows (a thread preempted at the write's return). The claim is
made from the window IOzone's clock ran, as iozone.c computes it (kB/s = bytes / time / 1024),
never from the code under test."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from iowitness.analysis.judge import match_claims as matching, trace_verdicts as judged
from iowitness.analysis.measure import stream_full
from iowitness.analysis.read import printed
from iowitness.analysis.read.printed import PrintedLine
from tests.support.synthetic import O_CREAT, O_RDWR, O_TRUNC, O_WRONLY, Calls

KiB = 1024
US = 1_000
MS = 1_000_000
RECORDS = 128
WRITE_NS = 100 * US   # each 64 KiB write: 12.8 ms of calls per pass, 8 MiB


def _pass(calls: Calls, wait_after_ns: int, *, clock_lead_ns: int = 2 * US, wait_between_ns: int = 0) -> float:
    """One write_perf_test pass: open, fsync, the clock, RECORDS writes (a wait of
    `wait_between_ns` after the first), the clock after a wait of `wait_after_ns` past the last
    write, fsync, close. IOzone's kB/s for it."""
    calls.open("/d/iozone.tmp", O_RDWR).fsync().gap(clock_lead_ns)
    start = calls.now - clock_lead_ns // 2          # IOzone's clock read, between fsync and write
    for i in range(RECORDS):
        calls.write(64 * KiB, latency=WRITE_NS).gap(2 * US + (wait_between_ns if i == 0 else 0))
    calls.gap(wait_after_ns)
    stop = calls.now                                 # its clock read, before the fsync after
    calls.gap(2 * US).fsync(latency=5 * MS).close().gap(MS)
    return RECORDS * 64 * KiB / ((stop - start) / 1e9) / 1024


# IOzone 3.489's table header, as it prints it (tests/data/claims/iozone)
TABLE = ("                                                              random    random     bkwd    record    stride"
         "                                    \n"
         "              kB  reclen    write  rewrite    read    reread    read     write     read   rewrite      read"
         "   fwrite frewrite    fread  freread\n")


def _judge(tmp_path, monkeypatch, *, wait_ns: int, factor: float = 1.0, flags=(), per_op: bool = False,
           wait_between_ns: int = 0):
    """The run judged; `per_op`: run and printed as IOzone -N (whole microseconds per operation,
    cut down, as iozone.c prints them); `wait_between_ns`: the rewrite's thread waits that long
    for a CPU between two of its writes."""
    calls = Calls().open("/d/iozone.tmp", O_WRONLY | O_CREAT | O_TRUNC).close().gap(MS)
    write = _pass(calls, 10 * US)
    rewrite = _pass(calls, wait_ns, wait_between_ns=wait_between_ns) * factor
    command = ["iozone", "-i0", "-s", "8m", "-r", "64k", *(["-N"] if per_op else []), "-f", "/d/iozone.tmp"]
    mode = "\tMicroseconds/op Mode. Output is in microseconds per operation.\n" if per_op else \
        "\tOutput is in kBytes/sec\n"
    header = ("\tIozone: Performance Test of File I/O\n\t        Version $Revision: 3.489 $\n"
              "\tCommand line used: " + " ".join(command) + "\n" + mode + TABLE)
    if per_op:   # us/op from kB/s: 64 KiB records, the clock's seconds over RECORDS operations
        write, rewrite = (int(1e6 / (figure * 1024 / (64 * KiB))) for figure in (write, rewrite))
    line = f"{8192:16d}{64:8d}{write:9.0f}{rewrite:9.0f}"
    lines = [(text, calls.now) for text in header.splitlines()] + [(line, calls.now + MS), ("", calls.now + MS),
                                                                 ("iozone test complete.", calls.now + MS)]
    trace = SimpleNamespace(events=calls.frame(), meta={"command": command, "pid": None},
                            output={"stdout": "".join(text + "\n" for text, _ in lines), "stderr": ""})
    monkeypatch.setattr(printed, "lines_of", lambda tr: [PrintedLine(text, t, "stdout") for text, t in lines])
    source, claims = judged.claims_of(trace)
    judged_as = [command[0], *flags, *command[1:]]
    return {v.claim.test: v for v in matching.match(stream_full.build(trace), claims, source, judged_as, trace=trace)}


def test_a_wait_after_the_last_write_inside_iozones_clock_agrees(tmp_path, monkeypatch):
    # GIVEN a rewrite whose thread waited 2 ms for a CPU after its last write, before IOzone
    # read its clock: its figure is 14% below the calls' own
    verdicts = _judge(tmp_path, monkeypatch, wait_ns=2 * MS)
    rewrite = verdicts["rewrite"]
    assert rewrite.ratio < 0.9
    # WHEN judged THEN it agrees: the calls around bound the clock, and the claim lies within
    assert rewrite.verdict == "agrees" and rewrite.window == "calls", rewrite.reasons
    assert rewrite.reasons[0].startswith("IOzone's clock ran at least over its calls"), rewrite.reasons
    assert "to the start of the fsync after" in rewrite.reasons[0]
    assert rewrite.figures["bounded, least"] <= rewrite.claim.bytes_per_s <= rewrite.figures["bounded, most"]
    # AND the write without a wait agrees on its calls, as before
    assert verdicts["write"].verdict == "agrees" and abs(verdicts["write"].ratio - 1) < 0.01


@pytest.mark.parametrize("factor", [0.6, 1.3])
def test_a_doctored_claim_outside_the_bracket_still_disagrees(tmp_path, monkeypatch, factor):
    # GIVEN the same run, its rewrite figure doctored below or above anything the calls bound
    rewrite = _judge(tmp_path, monkeypatch, wait_ns=2 * MS, factor=factor)["rewrite"]
    # WHEN judged THEN it disagrees, and says what the calls around bound
    assert rewrite.verdict == "disagrees", rewrite.reasons
    assert rewrite.reasons[0].startswith("no active figure within 5%")
    assert any("no window IOzone's clock could have run" in r for r in rewrite.reasons), rewrite.reasons


def test_judged_as_with_e_the_wait_is_still_the_fsync_outside(tmp_path, monkeypatch):
    # GIVEN the run judged as if it had said -e (the fsync inside the timing)
    rewrite = _judge(tmp_path, monkeypatch, wait_ns=2 * MS, flags=["-e"])["rewrite"]
    # WHEN judged THEN it is explained: it misses the window with the fsync, fits its calls'
    assert rewrite.window == "+fsync" and rewrite.verdict == "explained", rewrite.reasons
    assert rewrite.reasons[0].startswith("fsync outside the timed window"), rewrite.reasons


def test_a_per_operation_claim_holds_the_time_between_the_calls(tmp_path, monkeypatch):
    # GIVEN IOzone -N, whose rewrite thread waited 8 ms for a CPU between two writes: its us/op
    # is its clock's time over its operations (iozone.c), 60 % above the writes' mean latency
    rewrite = _judge(tmp_path, monkeypatch, wait_ns=10 * US, per_op=True, wait_between_ns=8 * MS)["rewrite"]
    assert rewrite.kind == "latency" and rewrite.claim.seconds_per_op > 1.5 * WRITE_NS / 1e9
    # WHEN judged THEN it agrees with the window the calls around bound, per operation, and says
    # that the mean latency leaves the time between the calls out
    assert rewrite.verdict == "agrees", rewrite.reasons
    assert rewrite.reasons[0].startswith("IOzone's clock ran at least over its calls"), rewrite.reasons
    assert "which the calls' mean latency leaves out" in rewrite.reasons[0]
    assert rewrite.figures["bounded, least"] < rewrite.figures["bounded, most"]


@pytest.mark.parametrize("factor", [0.5, 2.0])
def test_a_doctored_per_operation_claim_still_disagrees(tmp_path, monkeypatch, factor):
    # GIVEN the same -N run, its rewrite's us/op doctored to half or twice what IOzone measured
    # (the kB/s figure it comes from doubled or halved)
    rewrite = _judge(tmp_path, monkeypatch, wait_ns=10 * US, per_op=True, wait_between_ns=8 * MS,
                     factor=factor)["rewrite"]
    # WHEN judged THEN it disagrees, and says what the calls around bound
    assert rewrite.verdict == "disagrees", rewrite.reasons
    assert any("no window IOzone's clock could have run" in r for r in rewrite.reasons), rewrite.reasons
