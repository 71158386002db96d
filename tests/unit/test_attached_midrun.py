"""A figure about a whole test whose trace began in its middle (an attach): another account that
fits the part the trace saw is a coincidence, not an explanation (analysis/judge/match_claims.py).
fio attached 2.9 s into a 4 s time-based job printed 65 MiB/s over its 4 s; the trace's last
second read at 61.1 MiB/s, and its time inside the calls at 64.5: EXPLAINED, "the claim counts
only the time inside the calls". Traces built call by call whose times are known."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from iowitness.analysis.judge import match_claims as matching, trace_verdicts as judged
from iowitness.analysis.measure import stream_full
from iowitness.analysis.read import printed
from iowitness.analysis.read.printed import PrintedLine
from tests.support.synthetic import O_RDONLY, Calls

KiB = 1024
SPEC = """
[[claim]]
pattern = '^read: (?P<value>[\\d.]+) MiB/s$'
test = "read"
direction = "read"
unit = "MiB/s"
"""
ATTACHED = {"mode": "attach", "attached": [{"pid": 1000, "comm": "bench", "age_s": 2.9}]}


def _reads(opened_in_trace: bool) -> tuple[Calls, float]:
    """1,000 reads of 4 KiB, 50 µs each and 10 µs apart; the rate inside the calls, in MiB/s."""
    calls = Calls().open("/d/data", O_RDONLY, traced=opened_in_trace, size=4096 * KiB)
    for k in range(1000):
        calls.pread(4 * KiB, (k % 1024) * 4 * KiB, latency=50_000).gap(10_000)
    return calls.close(), 4 * KiB / 50e-6 / (1 << 20)


def _judged(calls: Calls, value: float, meta: dict, tmp_path, monkeypatch):
    spec = tmp_path / "bench.toml"
    spec.write_text(SPEC)
    line = f"read: {value:.1f} MiB/s"
    trace = SimpleNamespace(events=calls.frame(), meta={"command": ["./bench"], "pid": None, **meta},
                            output={"stdout": line + "\n", "stderr": ""})
    monkeypatch.setattr(printed, "lines_of", lambda tr: [PrintedLine(line, calls.now + 1_000_000, "stdout")])
    source, claims = judged.claims_of(trace, None, spec=str(spec))
    [verdict] = matching.match(stream_full.build(trace), claims, source, ["./bench"], trace=trace)
    return verdict


@pytest.mark.parametrize("opened_in_trace, attached, expected", [
    (False, True, "cannot judge"),    # the test was under way at the attach: a coincidence
    (True, True, "explained"),        # attached before the test opened its file: the trace saw it whole
    (False, False, "explained"),      # not attached (a file opened before the trace, under run): as before
])
def test_another_account_of_a_test_under_way_at_the_attach_is_no_explanation(opened_in_trace, attached, expected,
                                                                             tmp_path, monkeypatch):
    # GIVEN reads whose rate inside the calls is 78.1 MiB/s (over their wall, 65.1), and a figure
    # that fits the time inside the calls only
    calls, inside = _reads(opened_in_trace)
    # WHEN judged on a trace attached mid-run, or not
    verdict = _judged(calls, inside, ATTACHED if attached else {}, tmp_path, monkeypatch)
    # THEN under way at the attach it cannot be judged, saying the trace began mid-run, its
    # other account kept after that; otherwise it is explained by the time inside the calls
    assert verdict.verdict == expected, verdict.reasons
    assert any("time inside the calls" in r for r in verdict.reasons), verdict.reasons
    if expected == "cannot judge":
        assert verdict.reasons[0].startswith("the trace began 2.900 s after bench (PID 1000) started")


@pytest.mark.parametrize("attached", [True, False])
def test_a_short_stretch_of_a_test_the_attach_cut_says_so_first(attached, tmp_path, monkeypatch):
    # GIVEN the last 12 reads of a test (too short to time: below 100 calls) and a figure 2.2x
    # their rate: fs_mark attached in its last loop saw 12 of its 400 files, 225 against its 494
    # files/s
    calls = Calls().open("/d/data", O_RDONLY, traced=False, size=4096 * KiB)
    for k in range(12):
        calls.pread(4 * KiB, k * 4 * KiB, latency=50_000).gap(10_000)
    calls.close()
    wall = 4 * KiB * 12 / ((12 * 60_000 - 10_000) / 1e9) / (1 << 20)
    # WHEN judged on a trace attached mid-run, or not
    verdict = _judged(calls, 2.2 * wall, ATTACHED if attached else {}, tmp_path, monkeypatch)
    # THEN it cannot be judged either way; attached, its first reason is that the trace began in
    # the test's middle (before: "the phase is too short to tell why" first), which stays after it
    assert verdict.verdict == "cannot judge", verdict.reasons
    assert verdict.reasons[0].endswith("too short to tell why") != attached, verdict.reasons
    if attached:
        assert verdict.reasons[0].startswith("the trace began 2.900 s after bench (PID 1000) started")
        assert verdict.reasons[1].endswith("too short to tell why"), verdict.reasons


@pytest.mark.parametrize("meta, hinted", [(ATTACHED, True), ({}, False)])
def test_an_attach_after_the_benchmarks_header_says_to_give_its_whole_output(meta, hinted, tmp_path):
    from pathlib import Path

    # GIVEN IOzone -t's real output from its first "Children see throughput" line on: what a trace
    # attached after its banner and header records (IOzone -C -t 2, attached 3 s in)
    whole = (Path(__file__).resolve().parents[1] / "data" / "claims" / "iozone" / "throughput.txt").read_text()
    seen = whole[whole.index("\tChildren see throughput"):]
    trace = SimpleNamespace(events=Calls().frame(), meta={"command": ["iozone", "-t", "2"], "pid": None, **meta},
                            output={"stdout": seen, "stderr": ""})
    # WHEN its claims are read from the recorded output
    with pytest.raises(judged.NoClaims) as raised:
        judged.claims_of(trace)
    # THEN one line says why and, attached, what to do: give the whole output with --claims
    assert str(raised.value).startswith("not IOzone output: no 'Iozone: Performance Test of File I/O' banner")
    assert ("give its whole output with --claims FILE" in str(raised.value)) == hinted, str(raised.value)
