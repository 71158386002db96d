"""sysbench fileio's figures are over its whole run (docs/specs/sysbench_fileio.toml, scope "run"):
its real seqwr output (tests/data/claims/sysbench/seqwr_dsync.txt) on a trace of its shape built
call by call, the first file's 512 writes of 16 KiB, then 182 of the second's, more slowly."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from iowitness.analysis.judge import match_claims as matching, trace_verdicts as judged
from iowitness.analysis.measure import stream_full
from tests.support.synthetic import O_DSYNC, O_RDWR, Calls

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "docs" / "specs" / "sysbench_fileio.toml"
OUTPUT = ROOT / "tests" / "data" / "claims" / "sysbench" / "seqwr_dsync.txt"
KiB = 1024


def test_sequential_writes_over_two_files_are_judged_over_both():
    # GIVEN sysbench's seqwr on O_DSYNC files: 512 writes of 2.62 ms on the first file (382/s),
    # then 182 of 3.64 ms on the second, an fsync every 100 writes; 694 writes in 2.0 s
    calls = Calls()
    done = 0
    for path, count, each_ns in (("/d/test_file.0", 512, 2_620_000), ("/d/test_file.1", 182, 3_640_000)):
        calls.open(path, O_RDWR | O_DSYNC, size=8192 * KiB)
        for k in range(count):
            calls.pwrite(16 * KiB, k * 16 * KiB, latency=each_ns - 20_000).gap(20_000)
            done += 1
            if done % 100 == 0:
                calls.fsync(latency=30_000)
    trace = SimpleNamespace(events=calls.frame(), meta={"command": ["sysbench", "fileio", "run"], "pid": None},
                            output={"stdout": OUTPUT.read_text(), "stderr": ""})
    source, claims = judged.claims_of(trace, None, spec=str(SPEC))
    # WHEN its real output (writes/s 343.47, written 5.37 MiB/s) is judged with the shipped spec
    verdicts = matching.match(stream_full.build(trace), claims, source, trace.meta["command"], trace=trace)
    # THEN both rates are over both files' writes and agree (taken over the first file alone,
    # its concurrent set, they were 382 writes/s against 343)
    rates = [v for v in verdicts if v.claim.test == "write"]
    assert len(rates) == 2, [(v.claim.test, v.claim.printed) for v in verdicts]
    for v in rates:
        assert v.phases == [1, 2] and v.verdict == "agrees", (v.claim.printed, v.phases, v.verdict, v.reasons)
