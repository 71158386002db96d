"""Verdicts and claim matching (analysis/judge/verdict_rules.py, analysis/judge/match_claims.py) on event tables
written call by call (tests/support/synthetic.py).

Every expected figure is computed by hand in the test from the calls it writes: bytes over
the nanoseconds between the calls' starts and ends. The phases, groups and names come from
the analysis (stream_full.build), as `iowitness check` gets them.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from iowitness.analysis.benchmarks import iozone_groups, iozone_stonewall
from iowitness.analysis.judge import match_claims as matching, verdict_rules as verdicts
from iowitness.analysis.judge.claim import Claim
from iowitness.analysis.measure import buffering, figures as active_figures, stonewall as stonewalling, stream_full
from tests.support.blocks import assigned_of
from tests.support.synthetic import (
    O_CREAT,
    O_RDONLY,
    O_TRUNC,
    O_WRONLY,
    START_NS,
    Calls,
)

REC = 65536
MS = 1_000_000
F = "/data/bench.dat"


def built(calls: Calls, command: list[str], pid: int | None = None):
    """What `iowitness check` works on: the report of a trace, and the trace."""
    trace = SimpleNamespace(events=calls.frame(), meta={"command": command, "pid": pid})
    return stream_full.build(trace), trace


def claim(rate: float, *, source="iozone", test="write", direction="write", **more) -> Claim:
    return Claim(source=source, test=test, value=rate / 1024, unit="kB/s", printed=f"{test}: {rate}",
                 bytes_per_s=rate, direction=direction, **more)


# ---- one write phase, its fsync and close ---------------------------------------------------

# 200 writes of 64 KiB, 10 µs each, 90 µs apart; then a 20 ms fsync and a 1 µs close
WRITES, WRITE_NS, GAP_NS, FSYNC_NS = 200, 10_000, 90_000, 20 * MS
FIRST = START_NS + 1000                                     # after the 1 µs open
LAST = FIRST + (WRITES - 1) * (WRITE_NS + GAP_NS) + WRITE_NS
BYTES = WRITES * REC
CALLS_BPS = BYTES / ((LAST - FIRST) / 1e9)                  # 658,322,450.0 B/s
FSYNC_BPS = BYTES / ((LAST + FSYNC_NS - FIRST) / 1e9)       # 328,397,895.3 B/s
CLOSE_BPS = BYTES / ((LAST + FSYNC_NS + 1000 - FIRST) / 1e9)
BUSY_BPS = BYTES / (WRITES * WRITE_NS / 1e9)                # 6,553,600,000 B/s


@pytest.fixture(scope="module")
def one_phase():
    calls = Calls().open(F, O_WRONLY | O_CREAT | O_TRUNC)
    for i in range(WRITES):
        calls.write(REC, latency=WRITE_NS)
        if i < WRITES - 1:
            calls.gap(GAP_NS)
    calls.fsync(latency=FSYNC_NS).close()
    rep, _ = built(calls, ["iozone", "-i0", "-s", "12800k", "-r", "64k", "-f", F])
    return rep.phases


def test_figures_of_one_phase_by_hand(one_phase):
    # GIVEN one write phase whose every call time is known
    # WHEN its active figures are computed
    figures = active_figures.figures_of(one_phase, "write", "bytes")
    # THEN each is the bytes over its window, as computed by hand
    assert figures == pytest.approx({"calls": CALLS_BPS, "+fsync": FSYNC_BPS, "+close": CLOSE_BPS,
                                     "busy": BUSY_BPS}, rel=1e-12)


def test_a_claim_within_the_tolerance_of_its_window_agrees(one_phase):
    # GIVEN a claim 2 % above the calls figure, for a benchmark that timed the calls
    v = verdicts.judge(claim(CALLS_BPS * 1.02), one_phase, "calls", 0.05)
    # THEN it agrees, and the reasons name the 20 ms fsync its window left out
    assert (v.verdict, v.window, v.phases) == ("agrees", "calls", [1])
    assert v.ratio == pytest.approx(1.02)
    assert "fsync outside the timed window: the first fsync after its last write ends 20.0 ms after it" in v.reasons[0]


def test_an_fsync_after_reads_is_not_named_as_left_out():
    # GIVEN a read phase (200 reads timed as the writes above) followed by a 20 ms fsync, which
    # flushes nothing the reads did (dirty pages of earlier writes, if any)
    calls = Calls().open(F, O_RDONLY)
    for i in range(WRITES):
        calls.read(REC, latency=WRITE_NS)
        if i < WRITES - 1:
            calls.gap(GAP_NS)
    calls.fsync(latency=FSYNC_NS).close()
    rep, _ = built(calls, ["iozone", "-i1", "-s", "12800k", "-r", "64k", "-f", F])
    # WHEN a read claim that fits the calls is judged
    v = verdicts.judge(claim(CALLS_BPS, test="read", direction="read"), rep.phases, "calls", 0.05)
    # THEN it agrees and no reason says the fsync was left out of what it measured
    assert (v.verdict, v.window) == ("agrees", "calls")
    assert not [r for r in v.reasons if r.startswith("fsync outside the timed window")], v.reasons


def test_a_claim_that_fits_the_fsync_window_is_explained_by_it(one_phase):
    # GIVEN a claim equal to the figure up to the end of the fsync, judged as timing the calls
    v = verdicts.judge(claim(FSYNC_BPS), one_phase, "calls", 0.05)
    # THEN it is explained, first reason: the fsync was inside the benchmark's window
    assert v.verdict == "explained" and v.ratio == pytest.approx(FSYNC_BPS / CALLS_BPS)
    assert v.reasons[0].startswith("fsync inside the timed window: the first fsync after the "
                                   "last write ends 20.0 ms after it (19.9 ms of calls)"), v.reasons
    # AND judged as timing up to the fsync (IOzone -e), the same claim agrees
    assert verdicts.judge(claim(FSYNC_BPS), one_phase, "+fsync", 0.05).verdict == "agrees"


def test_a_claim_that_fits_the_calls_when_the_window_has_the_fsync_is_explained(one_phase):
    v = verdicts.judge(claim(CALLS_BPS), one_phase, "+fsync", 0.05)
    assert v.verdict == "explained"
    assert v.reasons[0].startswith("fsync outside the timed window: the fsync ends 20.0 ms after the last write")


def test_a_claim_that_fits_only_the_time_inside_the_calls_is_explained(one_phase):
    v = verdicts.judge(claim(BUSY_BPS), one_phase, "calls", 0.05)
    assert v.verdict == "explained" and v.reasons[0].startswith("the claim counts only the time inside the calls")


def test_a_claim_no_figure_fits_disagrees(one_phase):
    # GIVEN a claim three times the calls figure
    v = verdicts.judge(claim(3 * CALLS_BPS), one_phase, "calls", 0.05)
    # THEN it disagrees, and says by how much
    assert v.verdict == "disagrees" and not v.ok
    assert v.reasons[0].startswith("no active figure within 5%") and "(3.00×)" in v.reasons[0]


def test_a_trace_that_ended_before_its_benchmark_cannot_refute_a_claim():
    # GIVEN one write phase, and the same trace marked as ended before the benchmark (a fault
    # under run --on-fault continue: the benchmark ran on untraced)
    calls = Calls().open(F, O_WRONLY | O_CREAT | O_TRUNC)
    for _ in range(WRITES):
        calls.write(REC, latency=WRITE_NS).gap(GAP_NS)
    command = ["./bench"]
    rep, trace = built(calls.close(), command)
    c = claim(3 * CALLS_BPS, source="spec", extra={"match": "order"})
    [whole] = matching.match(rep, [c], "spec", command, trace=trace)
    trace.meta["left_running"] = True
    [cut] = matching.match(rep, [c], "spec", command, trace=trace)
    # THEN the claim the whole trace refutes cannot be judged on the part seen, and says why
    assert whole.verdict == "disagrees"
    assert cut.verdict == "cannot judge" and cut.reasons[0].startswith("the trace ended before the benchmark")


def test_a_claim_on_a_phase_too_short_to_time_cannot_be_judged():
    # GIVEN ten writes (below 100 calls): a clock's resolution dominates
    calls = Calls().open(F, O_WRONLY | O_CREAT | O_TRUNC)
    for _ in range(10):
        calls.write(REC)
    rep, _ = built(calls.close(), ["iozone", "-i0", "-s", "640k", "-r", "64k", "-f", F])
    v = verdicts.judge(claim(1e6), rep.phases, "calls", 0.05)
    assert v.verdict == "cannot judge" and "too short" in v.reasons[0]


def test_a_claim_that_is_not_a_rate_cannot_be_judged(one_phase):
    c = Claim(source="spec", test="total", value=0.5, unit="s", printed="Total: 0.5 s")
    assert verdicts.judge(c, one_phase, "calls", 0.05).verdict == "cannot judge"


# ---- two processes, stonewalling -------------------------------------------------------------

# A (f1): 10 writes of 1 ms from 0.001 ms; B (f2): 10 writes of 2 ms from 2.5 ms. A ends at
# 10.001 ms: B's writes that ended by then are the three ending at 4.5, 6.5 and 8.5 ms; B
# would see the stop flag before its next call, which starts at 10.5 ms.
A_FIRST, A_LAST = START_NS + 1000, START_NS + 1000 + 10 * MS
B_FIRST, B_LAST = START_NS + 2_500_000, START_NS + 2_500_000 + 20 * MS
B_COUNTED, B_STOP = 3 * REC, START_NS + 10_500_000
FILE = 10 * REC
IOZONE_T2 = ["iozone", "-t", "2", "-i0", "-s", "640k", "-r", "64k", "-F", "/data/f1", "/data/f2"]


def _rate(nbytes, start, end):
    return nbytes / ((end - start) / 1e9)


A_RATE = _rate(FILE, A_FIRST, A_LAST)                         # 65,536,000 B/s
B_RATE = _rate(FILE, B_FIRST, B_LAST)                         # 32,768,000 B/s
B_AT_STONEWALL = _rate(B_COUNTED, B_FIRST, B_STOP)            # 24,576,000 B/s


@pytest.fixture(scope="module")
def two_children():
    calls = Calls(tgid=1000).open("/data/f1", O_WRONLY | O_CREAT | O_TRUNC, at=START_NS)
    for _ in range(10):
        calls.write(REC, latency=MS)
    calls.fsync(latency=MS).close()
    calls.process(2000).open("/data/f2", O_WRONLY | O_CREAT | O_TRUNC, at=START_NS + 500)
    calls.at(B_FIRST)
    for _ in range(10):
        calls.write(REC, latency=2 * MS)
    calls.fsync(latency=MS).close()
    return built(calls, IOZONE_T2)


def _children_claim(rate, scope="children", **more):
    return claim(rate, scope=scope, processes=2, file_size=FILE, record_size=REC, **more)


def test_stonewall_figures_by_hand(two_children):
    # GIVEN two children writing their files at the same time, A finishing first
    rep, trace = two_children
    rows = rep.phases
    assert list(rep.groups["members"]) == [2]
    # WHEN the stonewall is found from the events
    stonewall = iozone_stonewall.stonewall_of(rows, None, rep.evidence, FILE, 2)
    # THEN it is A's end; B had done three records, and stops at its next call
    a, b = (int(rows.loc[rows["path"] == p, "phase"].iloc[0]) for p in ("/data/f1", "/data/f2"))
    assert (stonewall.at_ns, stonewall.finisher) == (A_LAST, a)
    assert stonewall.counted == {a: FILE, b: B_COUNTED} and stonewall.stop_ns[b] == B_STOP
    assert stonewall.share == pytest.approx((FILE + B_COUNTED) / (2 * FILE))
    # AND the children's figures are the sums of the members' rates, by hand
    figures = stonewalling.group_figures(rows, stonewall, "write", "bytes", "calls")
    assert figures["stonewall"] == pytest.approx(A_RATE + B_AT_STONEWALL)
    assert figures["calls from go"] == pytest.approx(A_RATE + _rate(FILE, A_FIRST, B_LAST))
    assert figures["stonewall from go"] == pytest.approx(A_RATE + _rate(B_COUNTED, A_FIRST, B_STOP))
    assert active_figures.figures_of(rows, "write", "bytes")["calls"] == pytest.approx(A_RATE + B_RATE)


def test_children_claim_counted_to_the_stonewall_is_explained_by_it(two_children):
    # GIVEN IOzone's "Children see" claim as IOzone counts it: to the stonewall
    rep, trace = two_children
    [v] = matching.match(rep, [_children_claim(A_RATE + B_AT_STONEWALL)], "iozone", IOZONE_T2, trace=trace)
    # THEN it is explained by the stonewalling, which the reasons quantify
    assert v.verdict == "explained" and len(v.phases) == 2
    assert v.reasons[0].startswith("stonewalling: the benchmark stops counting when the first member finishes")
    assert any("had done 65% of the test's bytes (832.0 KiB of 1.2 MiB)" in r for r in v.reasons), v.reasons
    # AND with -x (no stonewalling) the claim of the full calls agrees, with no such reason
    no_stonewall = IOZONE_T2[:1] + ["-x"] + IOZONE_T2[1:]
    [v] = matching.match(rep, [_children_claim(A_RATE + B_RATE)], "iozone", no_stonewall, trace=trace)
    assert v.verdict == "agrees" and not any("stonewalling" in r for r in v.reasons)


def test_per_process_and_min_xfer_claims(two_children):
    rep, trace = two_children
    claims = [_children_claim(B_AT_STONEWALL, "min process"), _children_claim(A_RATE, "max process"),
              _children_claim((A_RATE + B_AT_STONEWALL) / 2, "avg process"),
              Claim(source="iozone", test="write", value=B_COUNTED / 1024, unit="kB", printed="Min xfer",
                    scope="min xfer", direction="write", processes=2, file_size=FILE, record_size=REC,
                    extra={"bytes": B_COUNTED})]
    got = {v.claim.scope: v for v in matching.match(rep, claims, "iozone", IOZONE_T2, trace=trace)}
    assert got["max process"].verdict == "agrees"
    for scope in ("min process", "avg process", "min xfer"):
        assert got[scope].verdict == "explained" and got[scope].reasons[0].startswith("stonewalling"), got[scope]
    assert got["min xfer"].kind == "amount" and got["min xfer"].figures["stonewall"] == B_COUNTED


def test_iozone_min_restarts_after_a_child_at_zero():
    # iozone.c: if(!min_xfer) min_xfer=child->actual; if(child->actual < min_xfer) ...
    assert iozone_groups.iozone_min([2880, 0, 0, 4096]) == 4096
    assert iozone_groups.iozone_min([5, 3]) == 3
    assert iozone_groups.iozone_min([7, 0]) == 0
    assert iozone_groups.iozone_min([0, 0, 7]) == 7


# ---- a buffered stream ------------------------------------------------------------------------

def _late_flush(*tail_calls):
    calls = Calls().open(F, O_WRONLY | O_CREAT | O_TRUNC)
    for _ in range(3):
        calls.write(4096)
    for call in tail_calls:
        call(calls)
    rep, trace = built(calls, ["./bench"])
    return buffering.late_flushes(trace.events, assigned_of(rep), rep.phases)


def test_a_short_write_just_before_close_is_a_late_flush():
    # GIVEN three full 4 KiB writes, then 18 bytes and the close, as fclose does
    flushes = _late_flush(lambda c: c.write(18, latency=2000), lambda c: c.close())
    # THEN the 18 bytes are a final flush, and the reason says so
    assert flushes == {1: {"bytes": 18, "calls": 1, "record": 4096, "after_full_ns": 0, "close_after_ns": 0}}
    assert buffering.late_flush_reason(flushes[1]).startswith(
        "18 bytes written by a final flush just before close (a buffered stream)")


def test_no_late_flush_without_a_short_write_or_without_the_close():
    assert _late_flush(lambda c: c.close()) == {}
    assert _late_flush(lambda c: c.write(18), lambda c: c.fsync(), lambda c: c.close()) == {}


def test_a_last_buffer_written_at_close_is_the_account_even_where_the_busy_time_fits_too():
    # GIVEN a stream's 1,000 full 4 KiB buffers written back to back (10 µs each), then the last
    # one 200 ms later, at fclose: stdio_late_flush's shape. Back to back, the time inside the
    # calls and the loop's time are the same, so a claim of the loop's rate fits both
    calls = Calls().open(F, O_WRONLY | O_CREAT | O_TRUNC)
    for _ in range(1000):
        calls.write(4096, latency=10_000)
    calls.gap(200 * MS).write(4096, latency=10_000).close()
    rep, trace = built(calls, ["./bench"])
    loop_rate = 999 * 4096 / (999 * 10_000 / 1e9)
    claim = Claim("spec", "Write", loop_rate / 1e6, "MB/s", "Write: ...", bytes_per_s=loop_rate,
                  direction="write", extra={"match": "order"})
    # WHEN the claim is judged
    [v] = matching.match(rep, [claim], "spec", ["./bench"], trace=trace)
    # THEN it is explained by the final flush, the specific account, not by the time inside the calls
    assert v.verdict == "explained", v.reasons
    assert v.reasons[0].startswith("a final flush at close: the phase's last write (4,096 bytes"), v.reasons
    assert not [r for r in v.reasons if r.startswith(verdicts.BUSY_EXPLAINED)], v.reasons


def test_random_block_reads_of_a_buffered_stream_explain_a_low_claim():
    # GIVEN 200 reads of a 4 KiB block, each after a seek to a random block of a 1 MiB file,
    # 50 µs apart: what glibc does for an fseek and a few fgetc
    calls = Calls().open(F, O_RDONLY, size=1 << 20)
    for block in random.Random(1).choices(range(256), k=200):
        calls.lseek(block * 4096).read(4096).gap(50_000)
    rep, trace = built(calls.close(), ["./bench"])
    # AND a claim of 100 bytes per record, over the phase's time
    [phase] = rep.phases.itertuples()
    program_bytes = 200 * 100
    c = claim(program_bytes / phase.duration_s, source="spec", test="random read", direction="read",
              extra={"match": "operation", "operation": "read", "pattern": "random"})
    [v] = matching.match(rep, [c], "spec", ["./bench"], trace=trace)
    # THEN it is explained by the stream's block reads, with the bytes per read it implies
    assert v.verdict == "explained" and v.ratio == pytest.approx(100 / 4096)
    assert v.reasons[0].startswith("a buffered stream reads whole blocks: the kernel read 819,200 bytes in 200 "
                                   "random reads of 4,096 bytes"), v.reasons
    assert "(100 bytes per read)" in v.reasons[0]


def test_spec_numbers_on_one_line_are_about_one_phase():
    # GIVEN two read phases, and three claims by operation: two from one printed line
    calls = Calls().open(F, O_RDONLY, size=1 << 20)
    for _ in range(150):
        calls.read(4096)
    calls.close().open(F, O_RDONLY)
    for _ in range(150):
        calls.read(4096)
    rep, trace = built(calls.close(), ["./bench"])
    extra = {"match": "operation", "operation": "read"}
    line = "Read: 1000 ops/s, 1.00 us/op"
    claims = [Claim("spec", "read", 1000, "ops/s", line, ops_per_s=1000, direction="read", extra=extra),
              Claim("spec", "read", 1, "us/op", line, seconds_per_op=1e-6, direction="read", extra=extra),
              Claim("spec", "read", 1000, "ops/s", "Read again: 1000 ops/s", ops_per_s=1000, direction="read",
                    extra=extra)]
    # THEN the first two are about the first phase, the third about the second
    assert [v.phases for v in matching.match(rep, claims, "spec", ["./bench"], trace=trace)] == [[1], [1], [2]]


# ---- fio ---------------------------------------------------------------------------------------

FIO = ["fio", "--output-format=json", "--name=alpha", "--rw=write", "--filename=/data/alpha",
       "--name=beta", "--rw=read", "--filename=/data/beta"]


@pytest.fixture(scope="module")
def fio_run():
    # fio's main process (500) lays beta's file out, then the jobs (600, 700) run together
    calls = Calls(tgid=500).open("/data/beta", O_WRONLY | O_CREAT | O_TRUNC)
    for _ in range(200):
        calls.write(REC)
    calls.close()
    calls.process(600).open("/data/alpha", O_WRONLY | O_CREAT | O_TRUNC, at=START_NS + 10 * MS)
    for _ in range(200):
        calls.write(REC)
    calls.close()
    calls.process(700).open("/data/beta", O_RDONLY, at=START_NS + 10 * MS)
    for _ in range(200):
        calls.read(REC)
    return calls.close()


def _fio_claim(job, direction, **extra):
    return Claim(source="fio", test=f"{job} {direction}", value=1, unit="KiB/s", printed="", bytes_per_s=1024,
                 direction=direction, job=job, extra=extra)


def test_fio_claims_are_about_each_jobs_own_phase(fio_run):
    rep, trace = built(fio_run, FIO, pid=500)
    names = rep.phases.set_index("phase")["benchmark_name"]
    verdicts_ = matching.match(rep, [_fio_claim("alpha", "write"), _fio_claim("beta", "read")], "fio", FIO,
                               trace=trace)
    assert [[names[p] for p in v.phases] for v in verdicts_] == [["alpha write"], ["beta read"]]
    assert {v.kind for v in verdicts_} == {"bytes"}


def test_fio_group_reporting_claims_are_about_every_job_of_the_group(fio_run):
    # GIVEN --group_reporting: one entry named after the first job, both directions
    command = FIO[:2] + ["--group_reporting"] + FIO[2:]
    rep, trace = built(fio_run, command, pid=500)
    names = rep.phases.set_index("phase")["benchmark_name"]
    claims = [_fio_claim("alpha", "write", group_reporting=True), _fio_claim("alpha", "read", group_reporting=True)]
    # THEN "alpha read" is beta's reading, and beta's layout (a write) is in neither
    got = matching.match(rep, claims, "fio", command, trace=trace)
    assert [[names[p] for p in v.phases] for v in got] == [["alpha write"], ["beta read"]]


# ---- spec claims over several phases -------------------------------------------------------

def _four_threads_on_four_files():
    """Four threads, each writing 200 records of 4 KiB to a file of its own, all at once:
    every call takes 1 µs and they run side by side, so the test takes 200 µs of calls."""
    calls = Calls()
    for k in range(4):
        calls.thread(1000 + k).at(START_NS).open(f"/data/f{k}", O_WRONLY | O_CREAT | O_TRUNC, fd=3 + k)
    for i in range(200):
        for k in range(4):
            calls.thread(1000 + k).at(START_NS + 10_000 + i * 1000).write(4096, fd=3 + k)
    for k in range(4):
        calls.thread(1000 + k).at(START_NS + 300_000).close(fd=3 + k)
    return built(calls, ["./bench"])


def _spec_claims(text: str, toml: str) -> list[Claim]:
    from iowitness.analysis.benchmarks import spec
    return spec.parse(text, spec.loads(toml))


SPEC_TOTALS = """
[[claim]]
pattern = '^IOPS: (?P<value>\\d+)$'
test = "write"
direction = "write"
unit = "ops/s"
match = "operation"
{scope}
[[claim]]
pattern = '^MB/s: (?P<value>[\\d.]+)$'
test = "write"
direction = "write"
unit = "MB/s"
match = "operation"
{scope}
"""


@pytest.mark.parametrize("scope", ["", 'scope = "concurrent"'])
def test_a_total_over_concurrent_phases_is_judged_against_them_all(scope):
    # GIVEN four concurrent writers, 800 calls of 4 KiB in 200 µs in all: 4 M ops/s, 16,384 MB/s,
    # printed as two lines about the one test
    rep, trace = _four_threads_on_four_files()
    claims = _spec_claims("IOPS: 4000000\nMB/s: 16384\n", SPEC_TOTALS.format(scope=scope))
    # WHEN they are judged, with no scope (auto) or scope = "concurrent"
    got = matching.match(rep, claims, "spec", ["./bench"], trace=trace)
    # THEN both are about the four phases together, and agree
    assert [sorted(v.phases) for v in got] == [[1, 2, 3, 4]] * 2
    assert [v.verdict for v in got] == ["agrees", "agrees"], [v.reasons for v in got]


def test_a_figure_of_one_thread_stays_with_its_phase():
    # GIVEN the same run, and a claim that fits one writer's rate (1 M ops/s), not the total
    rep, trace = _four_threads_on_four_files()
    claims = _spec_claims("IOPS: 1000000\nMB/s: 4096\n", SPEC_TOTALS.format(scope=""))
    # THEN auto keeps it on its one phase, and it agrees there
    got = matching.match(rep, claims, "spec", ["./bench"], trace=trace)
    assert [v.phases for v in got] == [[1], [1]] and [v.verdict for v in got] == ["agrees", "agrees"]


def test_an_elapsed_time_is_judged_against_its_window_and_mb_can_be_declared():
    # GIVEN the run's elapsed time (200 µs of calls), and a MB/s that counts 2^20-byte MB
    rep, trace = _four_threads_on_four_files()
    toml = """
[benchmark]
mb = 1048576
[[claim]]
pattern = '^Total: (?P<value>[\\d.]+) s$'
test = "total"
unit = "s"
scope = "run"
[[claim]]
pattern = '^Rate: (?P<value>[\\d.]+) MB/s$'
test = "write"
direction = "write"
unit = "MB/s"
match = "operation"
scope = "concurrent"
"""
    claims = _spec_claims("Total: 0.0002 s\nRate: 15625\n".replace("Rate: 15625", "Rate: 15625 MB/s"), toml)
    got = matching.match(rep, claims, "spec", ["./bench"], trace=trace)
    # THEN the time is judged as a time over the whole run, and the rate with the declared MB
    assert got[0].kind == "elapsed" and sorted(got[0].phases) == [1, 2, 3, 4] and got[0].verdict == "agrees"
    assert got[1].verdict == "agrees" and claims[1].bytes_per_s == 15625 * 1048576


def test_claims_with_one_key_share_their_phases():
    # GIVEN two claims by order, on separate lines with other tests between them, and one key
    rep, trace = _four_threads_on_four_files()
    toml = """
[[claim]]
pattern = '^(?P<test>\\w+) IOPS: (?P<value>\\d+)$'
test = "{test}"
unit = "ops/s"
key = "{test}"
scope = "phase"
[[claim]]
pattern = '^(?P<test>\\w+) latency: (?P<value>[\\d.]+) us/op$'
test = "{test}"
unit = "us/op"
key = "{test}"
scope = "phase"
"""
    claims = _spec_claims("a IOPS: 1000000\nb IOPS: 1000000\na latency: 1 us/op\n", toml)
    got = matching.match(rep, claims, "spec", ["./bench"], trace=trace)
    # THEN the two "a" claims are about one phase, "b" about the next
    assert [v.phases for v in got] == [[1], [2], [1]]


def test_records_of_a_buffers_size_are_called_a_streams_only_with_evidence():
    # GIVEN a program that pwrites 4 KiB records (a stdio buffer's size, but with its own
    # offsets), and the same through write(2), each claimed in a spec at what the calls did
    def phase_of(call: str, flush: bool):
        calls = Calls().open(F, O_WRONLY | O_CREAT | O_TRUNC)
        for i in range(150):
            getattr(calls, call)(4096, i * 4096) if call == "pwrite" else calls.write(4096)
        if flush:   # what fclose writes of a stream's last, partly filled buffer
            calls.pwrite(100, 150 * 4096) if call == "pwrite" else calls.write(100)
        return built(calls.close(), ["./bench"])

    def reasons(call: str, flush: bool = False) -> list[str]:
        rep, trace = phase_of(call, flush)
        bps = float(rep.phases.iloc[0]["wall_Bps"])
        c = Claim("spec", "w", bps, "B/s", "w", bytes_per_s=bps, direction="write", extra={"match": "order"})
        return matching.match(rep, [c], "spec", ["./bench"], trace=trace)[0].reasons
    # THEN 4 KiB write(2) calls are not called a stream's buffer when nothing shows a stream
    # (a program's own 4 KiB requests look the same): no false reason
    assert not any("a stdio buffer's size" in r for r in reasons("write"))
    assert not any("a stdio buffer's size" in r for r in reasons("pwrite"))
    # AND they are when a shorter last write just before close shows fclose's flush; never pwrite
    assert any("a stdio buffer's size" in r for r in reasons("write", flush=True))
    assert not any("a stdio buffer's size" in r for r in reasons("pwrite", flush=True))


def test_a_claim_with_no_active_figure_to_set_against_is_not_an_agreement():
    # GIVEN a phase of one write: no time between its first and last call, no rate to measure
    rep, trace = built(Calls().open(F, O_WRONLY | O_CREAT | O_TRUNC).write(4096, latency=0).close(), ["./bench"])
    # WHEN a rate is claimed for it
    [v] = matching.match(rep, [claim(1e6, source="spec", extra={"match": "order"})], "spec", ["./bench"], trace=trace)
    # THEN it cannot be judged, and says why; it is never taken as agreeing
    assert v.verdict == "cannot judge" and v.reasons[0].startswith("no active figure to set the claim against")


def test_an_iozone_command_line_iozone_would_refuse_names_no_phase_and_raises_nothing():
    # GIVEN a trace whose recorded IOzone command says "-i x" (IOzone refuses it)
    calls = Calls().open(F, O_WRONLY | O_CREAT | O_TRUNC)
    for _ in range(150):
        calls.write(4096)
    # WHEN the report is built THEN its phases keep their generic names
    rep, _ = built(calls.close(), ["iozone", "-i", "x", "-s", "600k"])
    assert rep.benchmark == "iozone" and rep.phases["benchmark_name"].isna().all()
