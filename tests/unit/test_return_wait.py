"""A clock around each call and the waits for a CPU at the calls' return (analysis/judge/return_wait.py),
on stress-ng --hdd --hdd-opts fsync's shape built call by call: only the waits after calls that moved
data are its clock's, as stress-ng adds a call's time only when it did ("if (ret > 0) duration
+= ..." in stress-hdd.c). Ground truth: the built calls' own times."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from iowitness.analysis.judge import match_claims as matching, trace_verdicts as judged
from iowitness.analysis.measure import stream_full
from iowitness.probes.layout import layout
from tests.support.synthetic import O_CREAT, O_RDWR, Calls

SPEC = Path(__file__).resolve().parents[2] / "docs" / "specs" / "stress-ng_hdd.toml"
KiB, US = 1024, 1_000
EOPNOTSUPP = 95


def _hdd_reads() -> tuple[Calls, int]:
    """1,024 lseek+read pairs of 64 KiB (the read 8 µs), and after the 512th a preadv2 that fails
    (EOPNOTSUPP); returns the calls and the failed call's end."""
    calls = Calls().open("/d/stress-ng-hdd", O_RDWR | O_CREAT)
    failed_end = 0
    for k in range(1024):
        calls.lseek(k * 64 * KiB, latency=1 * US).gap(200)
        calls.read(64 * KiB, latency=8 * US).gap(3 * US)
        if k == 511:
            calls.raw("preadv2", offset=k * 64 * KiB, requested=64 * KiB, ret=-EOPNOTSUPP, latency=2 * US)
            failed_end = calls.now
            calls.gap(5_010 * US)
    return calls.close(), failed_end


def test_a_wait_after_a_failed_call_is_not_the_benchmarks_clock():
    # GIVEN stress-ng's reads, its thread preempted for 5 ms right after the failed preadv2
    # (off-CPU, runnable: preempted at its return to user space), and its read rate as its clock
    # read it: 64 MiB over 1,024 x (lseek + read + its clock's own µs), 9.5 µs each: 6,579 MiB/s
    calls, failed_end = _hdd_reads()
    off = np.zeros(1, dtype=layout().structs["iow_offcpu"])
    off["off_ns"], off["on_ns"], off["state"] = failed_end + 1_500, failed_end + 5_001_500, 0
    events = calls.frame()
    off["tid"] = off["tgid"] = int(events["tid"].iloc[0])
    line = "stress-ng: metrc: [10735] hdd                 6578.95 MB/sec read rate (geometic mean of 1 instances)"
    trace = SimpleNamespace(events=events, offcpu=off, meta={"command": ["stress-ng", "--hdd", "1"], "pid": None},
                            output={"stdout": line + "\n", "stderr": ""})
    source, claims = judged.claims_of(trace, None, spec=str(SPEC))
    # WHEN judged with the shipped spec (window = "busy": 64 MiB over the reads' 8.2 ms, 7,810 MiB/s)
    [verdict] = matching.match(stream_full.build(trace), claims, source, trace.meta["command"], trace=trace)
    # THEN the wait after the failed call is not counted among the waits at the reads' return
    # (counted, the figure with the waits fell to 4,852 MiB/s, below the claim: DISAGREES), and
    # the claim, between the calls' wall figure and the busy one, cannot be judged, saying so
    assert verdict.verdict == "cannot judge", verdict.reasons
    assert verdict.reasons[0].startswith("the benchmark times each call from its own thread"), verdict.reasons[0]
    assert "0 of 1,024 calls were preempted at their return" in verdict.reasons[0], verdict.reasons[0]
