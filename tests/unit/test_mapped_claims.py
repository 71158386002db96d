"""Claims about data moved through a memory mapping (analysis/judge/verdict_rules.py, `mapped`),
on a real trace (tests/data/traces/README.md): sysbench fileio --file-io-mode=mmap reads its
files with loads from a mapping, which make no call; the trace sees only the page faults, and a
page once mapped serves any number of reads. Its figures cannot be set against the faults."""

from __future__ import annotations

import re
from pathlib import Path

from iowitness import load
from iowitness.analysis.judge import trace_verdicts

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "tests" / "data" / "traces" / "sysbench_mmap_rndrd.iwt"
SPEC = ROOT / "docs" / "specs" / "sysbench_fileio.toml"


def test_rates_of_reads_from_a_mapping_cannot_be_judged_against_its_page_faults():
    # GIVEN sysbench's random reads from 4 mapped files of 8 MiB, traced
    trace = load(str(TRACE))
    output = trace.output.get("stdout", "")
    events = int(re.search(r"total number of events:\s+(\d+)", output).group(1))
    faults = int((trace.events["syscall"] == "fault_read").sum())
    # sysbench's own count: 541,349 reads of 16 KiB; the trace's: 512 faults, each mapping 64 KiB
    assert (events, faults) == (541349, 512)

    # WHEN its claims are judged as `check --spec docs/specs/sysbench_fileio.toml` judges them
    verdicts = {(v.claim.test, v.claim.unit, v.claim.value): v for v in trace_verdicts.verdicts(trace, spec=str(SPEC))}

    # THEN reads/s and MiB/s cannot be judged, and say why: before, both DISAGREED (7.04x, 1.76x)
    for key in (("read", "ops/s", 270333.90), ("read", "MiB/s", 4223.97)):
        verdict = verdicts[key]
        assert verdict.verdict == "cannot judge", (key, verdict.reasons)
        assert verdict.reasons[0].startswith("data moved through a memory mapping: the trace counts 512 page faults"), \
            verdict.reasons[0]
    # AND its latencies, which time loads no call holds, say the phases are page faults
    latencies = [v for v in verdicts.values() if v.claim.test == "latency"]
    assert latencies and all(v.verdict == "cannot judge" and "they are page faults" in v.reasons[0]
                             for v in latencies), [v.reasons for v in latencies]
    assert not [v for v in verdicts.values() if v.verdict == "disagrees"]
