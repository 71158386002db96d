"""Claims on the benchmark's output timeline (analysis/judge/claim_windows.py): each figure judged
among the calls that ended before its line and after the previous result line, on traces
built call by call whose lines are given the times they were written."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from iowitness.analysis.judge import match_claims as matching, trace_verdicts as judged
from iowitness.analysis.judge.claim_windows import ORDER_NOTE, TIMELINE_NOTE
from iowitness.analysis.measure import stream_full
from iowitness.analysis.read import printed
from iowitness.analysis.read.printed import PrintedLine
from tests.support.synthetic import O_CREAT, O_RDONLY, O_TRUNC, O_WRONLY, Calls

KiB = 1024
MS = 1_000_000


def _judge(calls, lines, spec_text, tmp_path, monkeypatch, *, given=None, meta=None, timed=True):
    """Verdicts on `lines` (text, t_ns) as the trace's output timeline (no times: timed=False)."""
    spec = tmp_path / "bench.toml"
    spec.write_text(spec_text)
    trace = SimpleNamespace(events=calls.frame(), meta={"command": ["./bench"], "pid": None, **(meta or {})},
                            output={"stdout": "".join(text + "\n" for text, _ in lines), "stderr": ""})
    monkeypatch.setattr(printed, "lines_of", lambda tr: [PrintedLine(text, t if timed else None, "stdout")
                                                         for text, t in lines])
    source, claims = judged.claims_of(trace, given, spec=str(spec))
    return matching.match(stream_full.build(trace), claims, source, ["./bench"], trace=trace)


def _test(calls, path, flags, count, latency, read=False):
    """One test: `count` calls of 64 KiB back to back on a file of its own; its rate in MB/s."""
    calls.open(path, flags)
    first = calls.now
    for _ in range(count):
        (calls.read if read else calls.write)(64 * KiB, latency=latency)
    rate = count * 64 * KiB / ((calls.now - first) / 1e9) / 1e6
    calls.close()
    return rate


def _four_tests(calls, directions=("write", "write", "write", "write")):
    """Four tests, each printing its line 1 ms after its last call: [(line, t_ns)]."""
    lines = []
    for i, direction in enumerate(directions):
        path = f"/d/f{i}"
        if direction == "read":
            calls.open(path, O_WRONLY | O_CREAT | O_TRUNC).write(64 * 64 * KiB).close().gap(MS)
        rate = _test(calls, path, O_RDONLY if direction == "read" else O_WRONLY | O_CREAT | O_TRUNC, 64,
                     (i + 1) * 2000, read=direction == "read")
        calls.gap(MS)
        lines.append((f"{direction} {i}: {rate:.1f} MB/s", calls.now))
        calls.gap(MS)
    return lines


PER_TEST = """
[[claim]]
pattern = '^(?P<op>write|read) 0: (?P<value>[\\d.]+) MB/s$'
test = "first {op}"
direction = "{op}"
unit = "MB/s"
scope = "run"

[[claim]]
pattern = '^write [1-9]: (?P<value>[\\d.]+) MB/s$'
test = "write"
direction = "write"
unit = "MB/s"
match = "operation"

[[claim]]
pattern = '^read [1-9]: (?P<value>[\\d.]+) MB/s$'
test = "read"
direction = "read"
unit = "MB/s"
match = "operation"
required = false
"""


def test_a_run_wide_claim_printed_before_later_tests_is_about_the_phases_before_its_line(tmp_path, monkeypatch):
    # GIVEN four write tests, the first printing a run-wide figure (scope "run") right after it ran
    calls = Calls()
    lines = _four_tests(calls)
    # WHEN the claims are judged on the output timeline
    got = _judge(calls, lines, PER_TEST, tmp_path, monkeypatch)
    # THEN every figure agrees; the run-wide one is about the first phase only, the phases
    # after its line being no part of it
    assert [v.verdict for v in got] == ["agrees"] * 4
    assert [v.phases for v in got] == [[1], [2], [3], [4]]
    assert all(v.placement == TIMELINE_NOTE for v in got)
    assert "the trace's start" in got[0].reasons[-1] and "write 0:" in got[1].reasons[-1]
    # AND without times the run-wide claim took all four phases (the seen false verdict)
    untimed = _judge(calls, lines, PER_TEST, tmp_path, monkeypatch, timed=False)
    assert untimed[0].phases == [1, 2, 3, 4] and untimed[0].verdict != "agrees"
    assert all(v.placement == ORDER_NOTE for v in untimed)


def test_a_line_given_that_the_attached_trace_lacks_is_before_the_trace(tmp_path, monkeypatch):
    # GIVEN a benchmark of four tests (write, read, write, read) iowitness attached to after
    # the first: the trace holds the last three tests and their lines
    calls = Calls()
    _test(Calls(), "/d/f0", O_WRONLY | O_CREAT | O_TRUNC, 64, 2000)    # ran before the attach
    lines = _four_tests(calls, ("read", "write", "read"))
    first = ("write 0: 32768.0 MB/s", calls.now - 100 * MS)   # not in the recorded output
    spec_text = PER_TEST.replace('scope = "run"\n', "")
    meta = {"mode": "attach", "attached": [{"pid": 1000, "comm": "bench", "age_s": 3.0}]}
    # WHEN the whole output is given after the fact (--claims) and joined to the timeline
    renamed = [(text.replace(f" {i}:", f" {i + 1}:"), t) for i, (text, t) in enumerate(lines)]
    given = "\n".join(text for text, _ in [first] + renamed) + "\n"
    got = _judge(calls, renamed, spec_text, tmp_path, monkeypatch, given=given, meta=meta)
    # THEN the first test's figure is before the trace, never matched to a later phase; the
    # others agree, each with its own test's phase, their windows wholly in the trace
    assert got[0].verdict == "cannot judge" and got[0].phases == []
    assert got[0].reasons[0].startswith("before the trace")
    # (a read test writes its file first: a write phase, then the read phase)
    assert [v.verdict for v in got[1:]] == ["agrees"] * 3
    assert [v.claim.direction for v in got[1:]] == ["read", "write", "read"]
    assert got[1].phases == [2] and got[2].phases == [3] and got[3].phases == [5]


def test_a_figure_printed_before_the_first_call_is_before_the_trace(tmp_path, monkeypatch):
    # GIVEN a line printed before any call of the trace, then one test and its line
    calls = Calls()
    early = ("write 1: 100.0 MB/s", calls.now - MS)
    lines = _four_tests(calls, ("write",))
    spec_text = PER_TEST.replace("[1-9]", "[0-9]").split("[[claim]]")[2]  # the write rule
    got = _judge(calls, [early] + lines, "[[claim]]" + spec_text, tmp_path, monkeypatch)
    # THEN the early figure cannot be judged and the later one takes the phase
    assert got[0].verdict == "cannot judge" and got[0].phases == []
    assert got[1].verdict == "agrees" and got[1].phases == [1]


SUMMARY = """
[[claim]]
pattern = '^(?P<name>\\w+): (?P<value>[\\d.]+) MB/s$'
test = "{name}"
unit = "MB/s"

[[claim]]
pattern = '^(?P<name>\\w+) elapsed: (?P<value>[\\d.]+) s$'
test = "{name}"
unit = "s"
"""


def test_an_elapsed_line_sharing_a_test_name_joins_that_test(tmp_path, monkeypatch):
    # GIVEN three tests (write, read, rewrite) printed at the end: their rates, then their
    # elapsed times, each elapsed line named as its test
    calls = Calls()
    rates, times = [], []
    for name, flags, read in (("write", O_WRONLY | O_CREAT | O_TRUNC, False), ("read", O_RDONLY, True),
                              ("rewrite", O_WRONLY, False)):
        begin = calls.now + 1000   # its first call starts after the open
        rates.append((name, _test(calls, "/d/f", flags, 64, 3000, read=read)))
        times.append((name, (calls.now - 1000 - begin) / 1e9))
        calls.gap(MS)
    end = calls.now + MS
    lines = [(f"{n}: {r:.1f} MB/s", end + k * 1000) for k, (n, r) in enumerate(rates)]
    lines += [(f"{n} elapsed: {s:.6f} s", end + (3 + k) * 1000) for k, (n, s) in enumerate(times)]
    # WHEN judged on the timeline
    got = _judge(calls, lines, SUMMARY, tmp_path, monkeypatch)
    # THEN each elapsed line is about its own test's phase, and no rate lost its phase
    assert [v.phases for v in got] == [[1], [2], [3], [1], [2], [3]]
    assert [v.verdict for v in got] == ["agrees"] * 6


def _two_clients(timing_line=False):
    """Two threads writing a file each every 10 ms: a 1 s warm-up (the first three calls of each 30 ms long),
    then a timed second (one call of 200 µs); the benchmark resets its statistics between."""
    calls = Calls()
    base = calls.now
    for tid, path in ((1000, "/d/a"), (1001, "/d/b")):
        calls.thread(tid).at(base + (tid - 1000) * 1000).open(path, O_WRONLY | O_CREAT | O_TRUNC)
    lines = []
    for k in range(200):
        for tid, fd in ((1000, 3), (1001, 4)):
            latency = 30 * MS if k < 3 else 200_000 if k == 150 and tid == 1001 else \
                50_000 if k < 100 else 40_000
            calls.thread(tid).at(base + 10 * MS + k * 10 * MS + (tid - 1000) * 3 * MS).write(64 * KiB, fd=fd,
                                                                                            latency=latency)
    timed_from = base + 10 * MS + 100 * 10 * MS - MS
    if timing_line:
        lines.append(("measuring", timed_from))
    end = calls.now + MS
    lines += [(f"throughput: {2 * 100 * 64 * KiB / 1.0 / 1e6:.2f} MB/s", end), ("max latency: 200.0 us", end + 1000)]
    for tid in (1000, 1001):
        calls.thread(tid).close(fd=3 if tid == 1000 else 4)
    return calls, lines


TWO_CLIENTS = """
[[claim]]
pattern = '^throughput: (?P<value>[\\d.]+) MB/s$'
test = "write"
direction = "write"
unit = "MB/s"
scope = "concurrent"
{when}

[[claim]]
pattern = '^max latency: (?P<value>[\\d.]+) us$'
test = "write"
direction = "write"
unit = "us"
statistic = "max"
scope = "concurrent"
{when}
"""


@pytest.mark.parametrize("when", ["warmup_seconds = 1.0", "timing_line = '^measuring$'"])
def test_a_timed_period_after_a_warm_up_leaves_the_warm_up_out(when, tmp_path, monkeypatch):
    # GIVEN two clients with a 1 s warm-up the benchmark resets, then a timed second
    calls, lines = _two_clients(timing_line="timing_line" in when)
    # WHEN the spec says where the timed period starts
    got = _judge(calls, lines, TWO_CLIENTS.format(when=when), tmp_path, monkeypatch)
    # THEN the throughput and the max latency agree: the 30 ms warm-up call is left out
    assert [v.verdict for v in got] == ["agrees", "agrees"], [v.reasons[:2] for v in got]
    assert got[1].counts["operations"] == 200
    assert any("timed period" in r for r in got[0].reasons)
    # AND without it the max latency is judged against the warm-up call: DISAGREES
    plain = _judge(calls, lines, TWO_CLIENTS.format(when=""), tmp_path, monkeypatch)
    assert plain[1].verdict == "disagrees"


def test_a_timing_line_without_times_cannot_judge_a_disagreement(tmp_path, monkeypatch):
    # GIVEN the two clients' output with no times, and a spec whose timed period starts at a line
    calls, lines = _two_clients(timing_line=True)
    got = _judge(calls, lines, TWO_CLIENTS.format(when="timing_line = '^measuring$'"), tmp_path, monkeypatch,
                 timed=False)
    # THEN the max latency (against the warm-up call) cannot be judged, and says why
    assert got[1].verdict == "cannot judge" and "timing_line cannot be placed" in got[1].reasons[0]


def test_mixed_over_a_run_is_all_its_reads_and_writes(tmp_path, monkeypatch):
    # GIVEN a write test and a read test, and a run-wide "mixed" elapsed time
    calls = Calls()
    lines = _four_tests(calls, ("write", "read"))
    lines.append((f"total: {(lines[-1][1] - 1_000_000_000) / 1e9:.6f} s", lines[-1][1] + 1000))
    spec_text = """
[[claim]]
pattern = '^total: (?P<value>[\\d.]+) s$'
test = "total"
direction = "mixed"
unit = "s"
scope = "run"
"""
    got = _judge(calls, lines, spec_text, tmp_path, monkeypatch)
    # THEN it covers every phase of the run, none of which is a mixed one
    assert got[0].phases == [1, 2, 3]


def test_a_summary_after_per_test_elapsed_lines_takes_each_test_its_phase(tmp_path, monkeypatch):
    # GIVEN three tests, each printing its elapsed time when it ends, then a summary of their
    # rates at the end, all named as their tests
    calls = Calls()
    lines, rates = [], []
    for name, flags, read in (("write", O_WRONLY | O_CREAT | O_TRUNC, False), ("read", O_RDONLY, True),
                              ("rewrite", O_WRONLY, False)):
        begin = calls.now + 1000
        rates.append((name, _test(calls, "/d/f", flags, 64, 3000, read=read)))
        lines.append((f"{name} elapsed: {(calls.now - 1000 - begin) / 1e9:.6f} s", calls.now + MS))
        calls.gap(2 * MS)
    lines += [(f"{n}: {r:.1f} MB/s", calls.now + k * 1000) for k, (n, r) in enumerate(rates)]
    # WHEN judged on the timeline
    got = _judge(calls, lines, SUMMARY, tmp_path, monkeypatch)
    # THEN each elapsed line is about its test, and the summary's rates too (the elapsed lines
    # of the same tests are no edge of the summary's window)
    assert [v.phases for v in got] == [[1], [2], [3], [1], [2], [3]]
    assert [v.verdict for v in got] == ["agrees"] * 6
    assert "by its test's earlier line 'write elapsed:" in got[3].reasons[-1]
    # AND by order the elapsed lines took the phases the rates needed
    untimed = _judge(calls, lines, SUMMARY, tmp_path, monkeypatch, timed=False)
    assert [v.phases for v in untimed][3:] != [[1], [2], [3]]


@pytest.mark.parametrize("keys,message", [
    ("timing_line = '(unclosed'", "spec [[claim]] 1 'timing_line': not a regular expression: "),
    ("warmup_seconds = -1", "spec [[claim]] 1 'warmup_seconds': must be 0 or more seconds"),
    ('warmup_seconds = "1s"', "spec [[claim]] 1 'warmup_seconds': must be a number of seconds"),
    ("warmup_seconds = 1\ntiming_line = 'go'", "spec [[claim]] 1 'warmup_seconds': give either timing_line or "
                                               "warmup_seconds"),
])
def test_the_timed_period_keys_are_checked(keys, message):
    # GIVEN a spec whose timed period is wrong THEN one line names the key
    from iowitness.analysis.benchmarks import spec
    text = "[[claim]]\npattern = '^w: (?P<value>[\\d.]+)$'\ntest = \"w\"\nunit = \"MB/s\"\n" + keys + "\n"
    with pytest.raises(spec.SpecError) as raised:
        spec.loads(text)
    assert str(raised.value).startswith(message)


def test_a_warm_up_of_whole_seconds_is_a_number_too():
    # GIVEN warmup_seconds = 2 (a TOML integer) THEN it is read as 2.0 s
    from iowitness.analysis.benchmarks import spec
    checked = spec.loads("[[claim]]\npattern = '^w: (?P<value>[\\d.]+)$'\ntest = \"w\"\nunit = \"MB/s\"\n"
                         "warmup_seconds = 2\n")
    assert spec.parse("w: 1.0\n", checked)[0].extra["warmup_seconds"] == 2.0


def test_claims_given_that_do_not_follow_the_recorded_output_are_matched_by_order(tmp_path, monkeypatch):
    # GIVEN a trace of four tests with its timeline, and --claims text of another run
    calls = Calls()
    lines = _four_tests(calls)
    other = "".join(f"write {i}: {100 + i}.0 MB/s\n" for i in range(4))
    # WHEN judged THEN no claim gets a time, and the verdicts say they were matched by order
    got = _judge(calls, lines, PER_TEST, tmp_path, monkeypatch, given=other)
    assert all(v.claim.printed_ns is None for v in got)
    assert {v.placement for v in got} == {"claims matched by order: the lines given do not follow the recorded output"}


REQUESTS = """
[[claim]]
pattern = '^request=(?P<request>\\d+) time=(?P<value>[\\d.]+) us$'
test = "request"
direction = "read"
unit = "us"
requests = true
match = "operation"

[[claim]]
pattern = '^(?P<value>\\d+) requests read$'
test = "summary"
direction = "read"
unit = "s"
match = "operation"
scope = "phase"
required = false

[[claim]]
pattern = '^avg = (?P<value>[\\d.]+) us$'
test = "summary"
direction = "read"
unit = "us"
match = "operation"
"""


def test_a_summary_after_per_request_lines_is_about_the_requests(tmp_path, monkeypatch):
    # GIVEN a benchmark (ioping's shape) that prints one line per request as it goes, then a
    # summary of them all; each line written as it is printed
    calls = Calls()
    calls.open("/d/f", O_RDONLY)
    lines = []
    for k in range(1, 21):
        calls.read(4 * KiB, latency=10_000)
        calls.gap(MS)
        lines.append((f"request={k} time=10.0 us", calls.now))
        calls.gap(MS)
    calls.close()
    lines.append(("avg = 10.0 us", calls.now))
    # WHEN its claims are judged on the output timeline
    verdicts = _judge(calls, lines, REQUESTS, tmp_path, monkeypatch)
    # THEN the request lines are no edge of the summary's window: the summary's mean is judged
    # over the 20 reads the request lines were about, not over an empty window
    summary = [v for v in verdicts if v.claim.test == "summary"]
    assert [v.verdict for v in summary] == ["agrees"], [(v.verdict, v.reasons) for v in summary]
    assert list(summary[0].phases) == list(verdicts[0].phases)


def test_numbered_request_lines_agree_when_the_warm_up_line_is_left_out(tmp_path, monkeypatch):
    # GIVEN ioping -D's shape: 21 reads of 100 µs, each printed with its number and a time 2 µs
    # above its call; request 1 marked "(warmup)", which the spec's pattern leaves out
    calls = Calls()
    calls.open("/d/f", O_RDONLY)
    lines = []
    for k in range(1, 22):
        calls.read(4 * KiB, latency=100_000)
        calls.gap(MS)
        lines.append((f"request={k} time=102.0 us" + (" (warmup)" if k == 1 else ""), calls.now))
        calls.gap(MS)
    calls.close()
    lines.append(("avg = 102.0 us", calls.now))
    # WHEN judged
    [verdict] = [v for v in _judge(calls, lines, REQUESTS, tmp_path, monkeypatch) if v.claim.test == "request"]
    # THEN the 20 lines are each within their own read (requests 2-21 against reads 2-21) and
    # agree: the trace's one more read is the warm-up no line names (it was CANNOT JUDGE, "gap in
    # user space", for the 21 reads against 20 lines)
    assert verdict.verdict == "agrees" and verdict.counts == {"requests": 20, "within": 20}, verdict.reasons
    assert "numbered up to 21, 1 more are requests whose lines the spec leaves out" in verdict.reasons[0]


FILES_PER_SECOND = """
[[claim]]
pattern = '^files: (?P<value>[\\d.]+)$'
test = "files"
direction = "write"
unit = "ops/s"
timed = "open..close"
scope = "window"
"""


def _two_processes(calls):
    """fs_mark -t 2's shape: two processes, each creating 60 files of 16 KiB one after another,
    the second started 5 ms after the first and twice as slow; each file an open, a write and a
    close. Returns each process's files per second over its own first call to its last."""
    rates, first = [], calls.now
    for tgid, start, write_ns in ((2001, 0, 900_000), (2002, 5 * MS, 1_900_000)):
        calls.process(tgid).at(first + start)
        began = calls.now
        for i in range(60):
            calls.open(f"/d/p{tgid}/f{i}", O_WRONLY | O_CREAT | O_TRUNC, latency=20_000)
            calls.write(16 * KiB, latency=write_ns).close(latency=10_000).gap(70_000)
        rates.append(60 / ((calls.now - 70_000 - began) / 1e9))
    return rates, first


@pytest.mark.parametrize("sum_of, agrees", [('sum_of = "processes"\n', True), ("", False)])
def test_a_figure_that_adds_up_each_processs_own_rate(sum_of, agrees, tmp_path, monkeypatch):
    # GIVEN two processes making 60 files each, and a line printing the sum of their own files/s
    calls = Calls()
    rates, first = _two_processes(calls)
    total = sum(rates)
    lines = [(f"files: {total:.1f}", first + 200 * MS)]

    # WHEN judged with a spec that says the figure adds up each process's own (sum_of), or not
    got = _judge(calls, lines, FILES_PER_SECOND + sum_of, tmp_path, monkeypatch)

    # THEN with sum_of = "processes" it agrees at each process's rate added up (1,000 + 500 files/s);
    # over all 120 files at once (125 ms of wall time, 960 files/s) it is 1.56x off and disagrees
    [verdict] = got
    assert len(verdict.phases) == 120
    if agrees:
        assert verdict.verdict == "agrees" and abs(verdict.figures["calls"] / total - 1) < 1e-6, verdict.reasons
        assert verdict.claim.extra["sum_of"] == "processes"
    else:
        assert verdict.verdict == "disagrees" and 1.5 < verdict.ratio < 1.6, (verdict.ratio, verdict.reasons)


def test_sum_of_takes_only_processes():
    from iowitness.analysis.benchmarks import spec
    with pytest.raises(spec.SpecError) as raised:
        spec.loads(FILES_PER_SECOND + 'sum_of = "threads"\n')
    assert "'sum_of': 'threads' is not one of processes" in str(raised.value)


def _files_then_fsync_pass(calls):
    """fs_mark -S 3's shape: 120 files made (open, a 16 KiB write, close), then each reopened,
    fsynced (2 ms) and closed, last first; its line 50 ms later (the benchmark's own work, its
    unlinks, untraced here). Returns (first open's start,
    the last fsync's end, the line's time)."""
    first = calls.now
    for i in range(120):
        calls.open(f"/d/f{i}", O_WRONLY | O_CREAT | O_TRUNC, latency=20_000)
        calls.write(16 * KiB, latency=500_000).close(latency=10_000).gap(50_000)
    for i in reversed(range(120)):
        calls.open(f"/d/f{i}", O_RDONLY, latency=10_000).fsync(latency=2 * MS)
        last_fsync = calls.now
        calls.close(latency=10_000).gap(20_000)
    return first, last_fsync, calls.now + 50 * MS


@pytest.mark.parametrize("claimed, verdict, reason", [
    ("through", "explained", "its clock ran through the syncs after its calls"),
    ("line", "cannot judge", "its clock may have run on after its calls, up to its line"),
    ("below", "disagrees", "no active figure within 5%"),
])
def test_a_clock_that_ran_on_through_a_fsync_pass_after_the_files(claimed, verdict, reason, tmp_path, monkeypatch):
    # GIVEN files made, then fsynced in a pass of their own (which no file's phase holds), and
    # the benchmark's files/sec: over its files and the pass (its clock, fs_mark's), up to the
    # line, or below anything its calls allow
    calls = Calls()
    first, last_fsync, line = _files_then_fsync_pass(calls)
    through = 120 / ((last_fsync - first) / 1e9)
    value = {"through": through, "line": 120 / ((line - first) / 1e9) * 1.02, "below": through / 3}[claimed]

    # WHEN judged as a loop's files/sec (before: DISAGREES ~0.2x, or "one operation may be n calls")
    [got] = _judge(calls, [(f"files: {value:.1f}", line)], FILES_PER_SECOND, tmp_path, monkeypatch)

    # THEN the fsync pass explains the first, the line's edge leaves the second unjudged, and
    # the third, below even the figure up to its line, disagrees
    assert got.verdict == verdict and got.reasons[0].startswith(reason), (got.verdict, got.reasons)
    if claimed == "below":
        assert any(r.startswith("even up to its line") for r in got.reasons), got.reasons


def test_a_clock_after_the_calls_stops_at_the_next_tests_data(tmp_path, monkeypatch):
    # GIVEN the files and their fsync pass, then 5 ms later the same process's next test (a
    # read of another file), all before the line 90 ms after the pass
    calls = Calls()
    first, last_fsync, line = _files_then_fsync_pass(calls)
    line += 40 * MS   # 5.5x below the calls: no whole n-fold either
    calls.at(last_fsync + 5 * MS).open("/d/next", O_RDONLY, size=64 * KiB).read(64 * KiB).close()
    value = 120 / ((line - first) / 1e9) * 1.02   # fits only a clock that ran on to the line

    # WHEN judged as the loop's files/sec
    [got] = _judge(calls, [(f"files: {value:.1f}", line)], FILES_PER_SECOND, tmp_path, monkeypatch)

    # THEN no clock of this test ran into the next test's data: it disagrees, and says how far
    # its clock could have gone
    assert got.verdict == "disagrees", (got.verdict, got.reasons)
    assert any(r.startswith("even up to its processes' next data call") for r in got.reasons), got.reasons


@pytest.mark.parametrize("option", ["timing_line", "timing_end_line"])
def test_a_spec_line_that_cannot_be_placed_or_found_says_what_is_counted(option):
    # GIVEN a claim printed at 5 ms whose spec names a line that starts or ends its timed period
    import pandas as pd

    from iowitness.analysis.judge.claim_windows import timed_end, timed_start
    placed = (lambda c, lines: timed_start(c, pd.DataFrame(), lines)) if option == "timing_line" else timed_end
    claim = SimpleNamespace(extra={option: "^measuring$"}, printed_ns=5 * MS, printed="rate 10 MB/s")
    lines = [PrintedLine("warming up", 1 * MS, "stdout"), PrintedLine("measuring", 2 * MS, "stdout"),
             PrintedLine("rate 10 MB/s", 5 * MS, "stdout")]
    # WHEN the line is there THEN the period starts or ends at its time
    assert placed(claim, lines)[0] == 2 * MS
    # WHEN no line up to the claim's matches THEN no bound, and why: every call is counted
    assert placed(claim, lines[:1] + lines[2:]) == (
        None, f"no line {'before' if option == 'timing_line' else 'up to'} this one matches the spec's {option} "
              "'^measuring$': every call is counted")
    # WHEN the output has no times THEN no bound, and what is counted that the spec meant to leave out
    untimed = SimpleNamespace(extra=claim.extra, printed_ns=None, printed=claim.printed)
    left_in = "the warm-up" if option == "timing_line" else "those after the benchmark stopped its clock"
    assert placed(untimed, lines) == (None, f"the spec's {option} cannot be placed: the output has no times, so "
                                            f"every call of the phases is counted, {left_in} too")
