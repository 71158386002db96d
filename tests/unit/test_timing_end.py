"""timing_end_line (docs/claims-spec.md): a figure that is an earlier line's again (dbench's
"Throughput", its last "execute" line's figure) ends at that line; a running total printed every
second counts the calls up to its own line, a file still open there cut at it. And a check over
many files gives one late-flush reason with the phase range, not one per phase."""

from __future__ import annotations

import re

import pytest

from iowitness.analysis.measure import buffering
from tests.support.synthetic import O_CREAT, O_TRUNC, O_WRONLY, Calls
from tests.unit.test_claim_windows import MS, KiB, _judge

SPEC = """
[[claim]]
pattern = '^total (?P<sec>\\d): (?P<value>[\\d.]+) MB/s$'
test = "total {sec}"
direction = "write"
unit = "MB/s"
scope = "run"
timing_line = '^go$'
{end}

[[claim]]
pattern = '^Throughput (?P<value>[\\d.]+) MB/s$'
test = "throughput"
direction = "write"
unit = "MB/s"
scope = "run"
timing_line = '^go$'
{end}
"""
END = "timing_end_line = '^total'"


def _cumulative():
    """A file open the whole run, 64 KiB writes at 2 per ms, then after the second total line
    20 times slower: lines 'total 1', 'total 2' (MB/s since 'go'), then 'Throughput' = total 2."""
    calls = Calls()
    lines = [("go", calls.now)]
    go = calls.now
    calls.open("/d/f", O_WRONLY | O_CREAT | O_TRUNC)
    moved = 0
    for sec in (1, 2):
        for _ in range(200):
            calls.write(64 * KiB, latency=400_000).gap(100_000)
            moved += 64 * KiB
        lines.append((f"total {sec}: {moved / ((calls.now - go) / 1e9) / 1e6:.2f} MB/s", calls.now))
    said = lines[-1][0].split(": ")[1]
    for _ in range(20):
        calls.write(64 * KiB, latency=10 * MS)
    calls.close().gap(MS)
    lines.append((f"Throughput {said}", calls.now))
    return calls, lines


@pytest.mark.parametrize("end", ["", END])
def test_a_final_figure_that_is_an_earlier_lines_ends_at_that_line(tmp_path, monkeypatch, end):
    # GIVEN a benchmark whose final figure repeats its last running total, its file open throughout
    calls, lines = _cumulative()
    # WHEN judged with and without timing_end_line
    verdicts = _judge(calls, lines, SPEC.replace("{end}", end), tmp_path, monkeypatch)
    by_test = {v.claim.test: v for v in verdicts}
    if end:
        # THEN every figure agrees: each total over the calls up to its line (the file still open
        # at it, cut there), the throughput over the calls up to the last total line
        for v in verdicts:
            assert v.verdict == "agrees", (v.claim.printed, v.ratio, v.reasons)
        assert any("timing_end_line" in r and "'total 2" in r for r in by_test["throughput"].reasons)
    else:
        # (without it: the running totals see no phase ended by their lines, the throughput the slow tail too)
        assert by_test["throughput"].verdict == "disagrees"


def test_late_flushes_of_many_phases_are_one_reason_with_their_range():
    # GIVEN the final flushes of 2,000 phases (the evidence buffering.late_flushes gives)
    flushes = {p: {"bytes": 100 + p % 7, "calls": 1, "record": 65536, "after_full_ns": 1000 + p % 3,
                   "close_after_ns": 2000} for p in range(3, 2003)}
    # WHEN made into reasons
    reasons = buffering.late_flush_reasons(flushes)
    # THEN one reason, with the count, the range and what varies among them
    assert len(reasons) == 1
    assert reasons[0].startswith("2,000 phases (phases 3–2,002) end with a final flush just before close")
    total = sum(f["bytes"] for f in flushes.values())
    assert "100 to 106 bytes each" in reasons[0] and f"{total:,} in all" in reasons[0]
    # AND one phase keeps its own words
    assert buffering.late_flush_reasons({5: flushes[5]}) == [buffering.late_flush_reason(flushes[5])]


@pytest.mark.parametrize("key, value, message", [
    ("window", '"wall"', "'window': 'wall' is not one of calls, +fsync, +close, busy"),
    ("timing_end_line", "'(['", "'timing_end_line': not a regular expression"),
])
def test_the_new_keys_are_checked(key, value, message):
    from iowitness.analysis.benchmarks import spec

    with pytest.raises(spec.SpecError, match=re.escape(f"spec [[claim]] 1 {message}")):
        spec.loads(f"[[claim]]\npattern = '^W: (?P<value>[\\d.]+)$'\ntest = \"w\"\nunit = \"MB/s\"\n{key} = {value}\n")


def test_a_busy_window_is_the_claims_window():
    from iowitness.analysis.benchmarks import spec

    checked = spec.loads("[[claim]]\npattern = '^W: (?P<value>[\\d.]+)$'\ntest = \"w\"\nunit = \"MB/s\"\n"
                         "window = \"busy\"\n")
    assert spec.parse("W: 12.5\n", checked)[0].extra["window"] == "busy"
