"""The Perfetto export loaded by Perfetto's own trace processor, where one is at hand.

No package registry serves trace_processor_shell: the `perfetto` package downloads it at
first use (from Perfetto's own servers), and neither PyPI, npm, crates.io, Maven, Go nor
Debian has it (docs/block-and-perfetto.md says what was tried). So this test runs where a
binary is: IOWITNESS_TRACE_PROCESSOR=/path/to/trace_processor_shell, or one on PATH. Without
one it skips; tests/support/perfetto_trace.py checks every export here with Perfetto's own
message definitions instead.

Ground truth: the synthetic run's calls (tests/support/run_groups.py): one open, 400 writes of
4 KiB, one close, by one thread, in one phase.
"""

from __future__ import annotations

import os
import shutil

import pytest

from tests.support.cli import iowitness
from tests.support.run_groups import CALLS, write_run


def _binary() -> str:
    found = os.environ.get("IOWITNESS_TRACE_PROCESSOR") or shutil.which("trace_processor_shell") \
        or shutil.which("trace_processor")
    if not found:
        pytest.skip("no Perfetto trace processor here: no registry serves trace_processor_shell; set "
                    "IOWITNESS_TRACE_PROCESSOR to one downloaded from Perfetto to run this test")
    return found


def test_the_trace_processor_counts_every_call_as_a_slice(tmp_path):
    binary = _binary()
    tp_api = pytest.importorskip("perfetto.trace_processor", reason="the perfetto package is in the test extra")
    # GIVEN a run of 400 writes exported for Perfetto
    run, out = tmp_path / "w.iwt", tmp_path / "w.perfetto-trace"
    write_run(run, 50e3, seed=3)
    iowitness("export", str(run), "--perfetto", str(out))
    # WHEN Perfetto's trace processor loads it
    tp = tp_api.TraceProcessor(trace=str(out), config=tp_api.TraceProcessorConfig(bin_path=binary))
    try:
        def rows(sql: str) -> list:
            return list(tp.query(sql))

        on_threads = rows("select s.name as name, count(*) as n from slice s join thread_track t on s.track_id = t.id "
                          "group by s.name")
        phases = rows("select count(*) as n from slice s join track t on s.track_id = t.id "
                      "where t.name like '%phase%'")
    finally:
        tp.close()
    # THEN every call is one slice on its thread's track: the 400 writes, and 402 calls in all
    counts = {r.name: r.n for r in on_threads}
    assert counts.get("write") == CALLS and sum(counts.values()) == CALLS + 2, counts
    # and the run's one phase is a slice on the phases' track
    assert phases[0].n >= 1
