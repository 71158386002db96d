"""ioping's request lines on a busy machine, on a trace of its shape built call by call: the
shapes load gives its output (ioping.c's request loop) held to the judgement of
analysis/judge/request_anchor.py and latency.py.

ioping times `now(); pread(); now()` (ioping -D: O_DIRECT reads of tens of µs) and prints the
request's line into a fully buffered stdout; it flushes only before it sleeps until its next
request is due. A request that ends after that time (ioping woken late by the scheduler) is
not flushed: the next request starts at once, and both lines reach the pipe in one write after
the next call. A request preempted between its clock read and its call prints far more than
its call took. Neither may move which call a line is about: the k-th printed request is the
trace's k-th read, and the summary is over ioping's 19 counted requests."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from iowitness.analysis.judge import match_claims as matching, trace_verdicts as judged
from iowitness.analysis.measure import stream_full
from iowitness.analysis.read import printed
from iowitness.analysis.read.printed import PrintedLine
from tests.support.synthetic import O_CREAT, O_RDWR, Calls
from tests.unit.test_request_anchor import SPEC

KiB = 1024
US = 1_000
MS = 1_000_000
REQUESTS = 20
SEAM_NS = 2 * US          # ioping's clock reads and the syscall's entry and exit around each call
PREEMPTED_NS = 150 * US   # a request preempted between its clock read and its call
LINE = "4 KiB <<< . (ext4 /dev/vda 252.0 GiB): request={n} time={t} us{note}"


def _ioping_run(late: set[int], preempted: set[int]) -> tuple[Calls, list[tuple[str, int]]]:
    """ioping -D -c 20 -i 0.01 on a prepared file: each read takes 60 to 109 µs, ioping's clock
    2 µs more (150 µs more for a `preempted` request); a `late` request's line waits for the
    next request's flush, that request started at once."""
    calls = Calls().open("/d/ioping.tmp", O_RDWR | O_CREAT)
    for k in range(256):
        calls.pwrite(4 * KiB, k * 4 * KiB, latency=3 * US)
    calls.fsync(latency=2 * MS).gap(MS)
    lines: list[tuple[str, int]] = []
    held: list[str] = []
    times = []
    for n in range(1, REQUESTS + 1):
        took = (60 + (n * 7) % 50) * US
        if n in preempted:
            calls.gap(PREEMPTED_NS)
        calls.pread(4 * KiB, (n * 37 % 256) * 4 * KiB, latency=took)
        clock = took + SEAM_NS + (PREEMPTED_NS if n in preempted else 0)
        if n > 1:
            times.append(clock)
        held.append(LINE.format(n=n, t=f"{clock / US:.3g}", note=" (warmup)" if n == 1 else ""))
        if n in late:
            calls.gap(SEAM_NS)      # no flush, no sleep: the next request at once
            continue
        calls.gap(20 * US)
        lines += [(text, calls.now) for text in held]
        held = []
        calls.gap(10 * MS)
    calls.close()
    t = np.array(times) / US
    summary = [
        "", "--- . (ext4 /dev/vda 252.0 GiB) ioping statistics ---",
        f"{REQUESTS - 1} requests completed in {t.sum() / 1000:.3g} ms, 76 KiB read, 1 k iops, 10 MiB/s",
        f"generated {REQUESTS} requests in 190 ms, 80 KiB, 105 iops, 420 KiB/s",
        f"min/avg/max/mdev = {t.min():.3g} us / {t.mean():.3g} us / {t.max():.3g} us / {t.std():.3g} us"]
    lines += [(text, calls.now) for text in held + summary]
    return calls, lines


def _judge(calls: Calls, lines: list[tuple[str, int]], monkeypatch):
    trace = SimpleNamespace(events=calls.frame(), meta={"command": ["ioping", "-D", "."], "pid": None},
                            output={"stdout": "".join(text + "\n" for text, _ in lines), "stderr": ""})
    monkeypatch.setattr(printed, "lines_of", lambda tr: [PrintedLine(text, t, "stdout") for text, t in lines])
    source, claims = judged.claims_of(trace, None, spec=str(SPEC))
    return matching.match(stream_full.build(trace), claims, source, trace.meta["command"], trace=trace)


@pytest.mark.parametrize("late, preempted", [
    (set(), set()),
    ({3, 8, 12, 16}, set()),                    # a late request now and then: two lines in one write
    ({3, 4, 8, 9, 12, 13, 16, 17}, {6}),        # runs of two late requests: three lines in one write
    (set(range(2, 19)), set()),                 # late on nearly every request: the lines in a few writes
    ({5, 11}, {7, 15}),                         # late lines and preempted requests together
])
def test_late_lines_and_preempted_requests_keep_each_line_on_its_own_read(monkeypatch, late, preempted):
    # GIVEN ioping's 20 reads after it prepared its file, some lines flushed late, some requests preempted
    calls, lines = _ioping_run(late, preempted)
    # WHEN its output is judged with the shipped spec
    verdicts = _judge(calls, lines, monkeypatch)
    [requests] = [v for v in verdicts if v.claim.extra.get("requests")]
    summary = [v for v in verdicts if not v.claim.extra.get("requests")]
    # THEN the request lines are the trace's reads 2 to 20, each within its own read but the
    # preempted ones (held by the room around their call), and nothing disagrees
    assert requests.counts["requests"] == REQUESTS - 1, requests.reasons
    assert requests.counts["within"] == REQUESTS - 1 - len(preempted), requests.reasons
    assert not any("requests start at call" in r or "trace begins at" in r for r in requests.reasons), requests.reasons
    assert [v.claim.extra["statistic"] for v in summary] == ["min", "mean", "max", "mdev"]
    for v in verdicts:
        assert v.verdict != "disagrees", (v.claim.printed, v.reasons)
    # AND the summary is over ioping's 19 counted requests, its warm-up and the file's preparation left out
    for v in summary:
        assert v.counts.get("operations") == REQUESTS - 1, (v.claim.printed, v.reasons)
