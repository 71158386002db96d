"""ioping -W's requests found among the writes that prepared its file (analysis/judge/request_anchor.py):
its real output (tests/data/claims/ioping/write.txt) read with the shipped spec, on a trace of its
shape built call by call (256 writes of 4 KiB and an fsync, then one pwrite and its fdatasync per
request, each request's line written just after it), the printed times those calls took."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from iowitness.analysis.benchmarks import spec
from iowitness.analysis.judge import match_claims as matching, trace_verdicts as judged
from iowitness.analysis.measure import stream_full
from iowitness.analysis.read import printed
from iowitness.analysis.read.printed import PrintedLine
from tests.support.synthetic import O_CREAT, O_RDWR, Calls

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "docs" / "specs" / "ioping.toml"
OUTPUT = (ROOT / "tests" / "data" / "claims" / "ioping" / "write.txt").read_text()
KiB = 1024
MS = 1_000_000
PREPARED = 256   # ioping's working set, 1 MiB by default for a directory, in 4 KiB writes
REQUEST = re.compile(r"request=(\d+) time=([\d.]+) (us|ms)")


def _ioping_write_run(printed_first: int = 1) -> tuple[Calls, list[tuple[str, int]]]:
    """ioping -W's calls, each request's write and fdatasync taking the time its line prints
    less 2 µs of ioping's own clock, and its output lines (text, when written) from request
    `printed_first` on (an attach after the earlier ones: their calls are not in the trace)."""
    calls = Calls()
    lines = []
    requests = [(int(n), float(t) * (1000 if unit == "us" else 1_000_000)) for n, t, unit in REQUEST.findall(OUTPUT)]
    if printed_first == 1:
        calls.open("/d/ioping.tmp", O_RDWR | O_CREAT)
        for k in range(PREPARED):
            calls.pwrite(4 * KiB, k * 4 * KiB, latency=3_000)
        calls.fsync(latency=2 * MS).gap(MS)
    else:
        calls.open("/d/ioping.tmp", O_RDWR)
    texts = iter(OUTPUT.splitlines())
    for n, took_ns in requests:
        text = next(texts)
        if n < printed_first:
            continue
        write_ns = int(took_ns - 2_000) // 3
        calls.pwrite(4 * KiB, (n * 7919 % PREPARED) * 4 * KiB, latency=write_ns)
        calls.fsync(syscall="fdatasync", latency=int(took_ns - 2_000) - write_ns)
        calls.gap(20_000)
        lines.append((text, calls.now))
        calls.gap(10 * MS)
    calls.close()
    lines += [(text, calls.now) for text in texts]
    return calls, lines


def _judge(calls: Calls, lines: list[tuple[str, int]], monkeypatch, meta: dict | None = None):
    trace = SimpleNamespace(events=calls.frame(), meta={"command": ["ioping", "-W", "."], "pid": None, **(meta or {})},
                            output={"stdout": "".join(text + "\n" for text, _ in lines), "stderr": ""})
    monkeypatch.setattr(printed, "lines_of", lambda tr: [PrintedLine(text, t, "stdout") for text, t in lines])
    source, claims = judged.claims_of(trace, None, spec=str(SPEC))
    return matching.match(stream_full.build(trace), claims, source, trace.meta["command"], trace=trace)


def test_the_shipped_spec_reads_ioping_write_requests_and_a_summary_of_them():
    # GIVEN ioping -W's real output: nine write request lines after the warm-up, and a summary
    # WHEN read with the shipped spec
    claims = spec.parse(OUTPUT, SPEC)
    # THEN the request lines are writes timed with their fdatasync, numbered 2 to 10, and the
    # summary takes theirs (its own "read" is for a quiet run): the write requests, not reads
    lines = [c for c in claims if c.extra.get("requests")]
    assert [c.extra["request"] for c in lines] == list(range(2, 11))
    assert {(c.direction, c.extra["timed"]) for c in lines} == {("write", "call+sync")}
    summary = [c for c in claims if not c.extra.get("requests")]
    assert [(c.extra["statistic"], c.direction, c.extra["timed"], c.extra["skip"]) for c in summary] == [
        (s, "write", "call+sync", 1) for s in ("min", "mean", "max", "mdev")]


def test_ioping_write_figures_are_about_its_requests_not_the_file_it_prepared(monkeypatch):
    # GIVEN ioping -W's shape: its 256 preparing writes and the requests' writes in one phase
    calls, lines = _ioping_write_run()
    # WHEN its output is judged with the shipped spec
    verdicts = _judge(calls, lines, monkeypatch)
    # THEN every figure agrees: the request lines each against its own write and fdatasync, the
    # summary over ioping's 9 counted requests (request 1, its warm-up, skipped), not over
    # the preparation's 256 writes (every figure was CANNOT JUDGE, or DISAGREES as writes)
    assert len({tuple(v.phases) for v in verdicts}) == 1
    assert [v.verdict for v in verdicts] == ["agrees"] * 5, [(v.claim.printed, v.reasons) for v in verdicts]
    assert verdicts[0].counts == {"requests": 9, "within": 9}
    assert [v.counts["operations"] for v in verdicts[1:]] == [9] * 4
    for v in verdicts:
        assert any(r.startswith(f"the benchmark's requests start at call {PREPARED + 1}") for r in v.reasons), v.reasons


def test_request_lines_attached_after_the_first_requests_are_each_about_their_own(monkeypatch):
    # GIVEN ioping -W attached after its request 5: the trace holds requests 5 to 10, whose
    # lines are numbered 5 to 10, and none of the preparation
    calls, lines = _ioping_write_run(printed_first=5)
    # WHEN judged
    [requests] = [v for v in _judge(calls, lines, monkeypatch) if v.claim.extra.get("requests")]
    # THEN request n is the trace's (n - 4)-th write: each line within its own (before: "none for
    # the printed requests", the numbers past the trace's count)
    assert requests.verdict == "agrees", requests.reasons
    assert requests.counts == {"requests": 6, "within": 6, "before_trace": 4}
    assert any(r.startswith("the trace begins at the benchmark's request 5") for r in requests.reasons)


QUIET = (ROOT / "tests" / "data" / "claims" / "ioping" / "write_quiet.txt").read_text()
SUMMARY = re.compile(r"min/avg/max/mdev = ([\d.]+) (us|ms) / ([\d.]+) (us|ms) / ([\d.]+) (us|ms)")


def _quiet_write_run() -> tuple[Calls, list[tuple[str, int]]]:
    """ioping -W -q's calls (its 1 MiB working set written, then ten requests of a pwrite and its
    fdatasync: the warm-up, then nine of the times its summary gives, the least, the most and
    seven at the mean of the rest) and its four summary lines, written at the end."""
    (least, u1, mean, u2, most, u3), = SUMMARY.findall(QUIET)
    scale = {"us": 1_000, "ms": 1_000_000}
    low, avg, high = float(least) * scale[u1], float(mean) * scale[u2], float(most) * scale[u3]
    rest = (avg * 9 - low - high) / 7
    calls = Calls()
    calls.open("/d/ioping.tmp", O_RDWR | O_CREAT)
    for k in range(PREPARED):
        calls.pwrite(4 * KiB, k * 4 * KiB, latency=3_000)
    calls.fsync(latency=2 * MS).gap(MS)
    for n, took_ns in enumerate([3 * high] + [low, high] + [rest] * 7):
        write_ns = int(took_ns) // 3
        calls.pwrite(4 * KiB, (n * 7919 % PREPARED) * 4 * KiB, latency=write_ns)
        calls.fsync(syscall="fdatasync", latency=int(took_ns) - write_ns)
        calls.gap(10 * MS)
    calls.close()
    return calls, [(text, calls.now) for text in QUIET.splitlines()]


def test_ioping_quiet_write_summary_is_about_its_counted_write_requests(monkeypatch):
    # GIVEN ioping -W -q's real output: no request line, a summary whose "9 requests completed
    # in ..., 36 KiB written" line alone says how many requests and that they are writes
    claims = spec.parse(QUIET, SPEC)
    # WHEN read with the shipped spec THEN its four figures are about 9 write requests (its
    # count_line), each a write and its fdatasync, after the 1 skipped
    assert [(c.extra["statistic"], c.direction, c.extra["timed"], c.extra["count"], c.extra["skip"])
            for c in claims] == [(s, "write", "call+sync", 9, 1) for s in ("min", "mean", "max", "mdev")]
    # AND judged on a trace of its shape (the warm-up 3x the slowest request), the 256 writes
    # preparing the file left out: min, mean and max agree over exactly those nine
    calls, lines = _quiet_write_run()
    verdicts = _judge(calls, lines, monkeypatch, meta={"command": ["ioping", "-W", "-q", "."]})
    for v in verdicts:
        assert v.verdict != "disagrees", (v.claim.printed, v.reasons)
        assert any(r.startswith("the benchmark's requests start at call 257 ") for r in v.reasons), v.reasons
    assert [(v.claim.extra["statistic"], v.verdict, v.counts.get("operations")) for v in verdicts[:3]] == [
        ("min", "agrees", 9), ("mean", "agrees", 9), ("max", "agrees", 9)]


def test_a_count_line_needs_its_count_group(tmp_path):
    # GIVEN a spec whose count_line has no `count` group
    bad = tmp_path / "bad.toml"
    bad.write_text(SPEC.read_text().replace("(?P<count>\\d+) requests completed", "\\d+ requests completed"))
    # WHEN loaded THEN one line says what is missing
    with pytest.raises(spec.SpecError, match=r"'count_line': has no \(\?P<count>"):
        spec.load(bad)


LATENCY_SPEC = ROOT / "tests" / "workloads" / "latency_bench.toml"


def _latency_bench_attached_in_request_1(count: int = 300) -> tuple[Calls, list[tuple[str, int]]]:
    """`latency_bench PATH COUNT 4096 sync` (tests/workloads/latency_bench.c) attached while
    stopped inside its request 1, as the census's attach can land on a busy machine: the trace
    holds that request's fdatasync, not its pwrite; then one pwrite and fdatasync per request.
    Its stdout a file: every line and the summary written at its end, 4 KiB at a time."""
    calls = Calls().open("/d/lat", O_RDWR | O_CREAT, traced=False)
    took_us = [4_701_797.953]   # request 1: the stop lies inside its clock
    calls.fsync(syscall="fdatasync", latency=300_000).gap(3_000)
    for k in range(1, count):
        write_ns, sync_ns = 20_000 + k % 7 * 1_000, 300_000 + k % 13 * 40_000
        calls.pwrite(4 * KiB, k * 4 * KiB, latency=write_ns)
        calls.fsync(syscall="fdatasync", latency=sync_ns)
        took_us.append((write_ns + sync_ns + 2_000) / 1e3)   # its clock: 2 µs around the two calls
        calls.gap(3_000)
    calls.close().gap(50_000)
    mean = sum(took_us) / count
    mdev = (sum(t * t for t in took_us) / count - mean * mean) ** 0.5
    texts = [f"req {k + 1} 4096 bytes {t:.3f} us" for k, t in enumerate(took_us)]
    texts.append(f"{count} requests, min/avg/max/mdev = {min(took_us):.3f}/{mean:.3f}/{max(took_us):.3f}/"
                 f"{mdev:.3f} us")
    # each line's time: the write that ended it, one per 4 KiB of the buffer, 10 µs apart
    end, written, lines = calls.now, 0, []
    for text in texts:
        written += len(text) + 1
        lines.append((text, end + (written // 4096 + 1) * 10_000))
    return calls, lines


def test_request_lines_printed_at_the_end_of_a_trace_attached_in_request_1_are_each_judged(monkeypatch):
    # GIVEN latency_bench attached inside its request 1 (its pwrite before the trace), printing
    # its 300 lines at its end into a file, and judged with its shipped spec (timed = "call")
    calls, lines = _latency_bench_attached_in_request_1()
    meta = {"command": ["./latency_bench", "/d/lat", "300", "4096", "sync"], "mode": "attach",
            "attached": [{"pid": 1000, "comm": "latency_bench", "age_s": 4.6}]}
    trace = SimpleNamespace(events=calls.frame(), meta={"pid": None, **meta},
                            output={"stdout": "".join(text + "\n" for text, _ in lines), "stderr": ""})
    monkeypatch.setattr(printed, "lines_of", lambda tr: [PrintedLine(text, t, "stdout") for text, t in lines])
    source, claims = judged.claims_of(trace, None, spec=str(LATENCY_SPEC))
    verdicts = matching.match(stream_full.build(trace), claims, source, meta["command"], trace=trace)
    # WHEN the request lines are judged
    [requests] = [v for v in verdicts if v.claim.extra.get("requests")]
    # THEN request n is the trace's operation n - 1, and requests 2 to 300 are each within their
    # own pwrite and fdatasync: EXPLAINED (the spec says call), request 1 counted as before the
    # trace (before: the k-th line against the k-th operation, 0 of 300 within, CANNOT JUDGE)
    assert requests.verdict == "explained", requests.reasons
    assert requests.counts["before_trace"] == 1 and requests.counts["requests"] == 300
    assert requests.reasons[0].startswith("299 of 300 requests within"), requests.reasons[0]
    assert any(r.startswith("the trace begins at the benchmark's request 2: its 300 request lines were written "
                            "together") for r in requests.reasons), requests.reasons
    # AND the summary, over request 1 too (its 4.7 s max), is never DISAGREES: the trace saw
    # only the end of that request
    for v in verdicts:
        assert v.verdict != "disagrees", (v.claim.printed, v.reasons)
    [most] = [v for v in verdicts if v.claim.extra.get("statistic") == "max"]
    assert most.verdict == "cannot judge" and "attached mid-run" in most.reasons[0], most.reasons
