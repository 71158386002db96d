"""fio's layout under `attach -p`: fio's own process writes each missing file before its jobs
start, and those writes are no job's (fio counts them nowhere). The process is the trace's
command: meta "pid" under `run`, the first PID attached to under `attach -p`, which has no
"pid" (recorded_paths.command_pid). Attached before the layout (the verdict census stops fio at
its start, attaches, lets it go), the layout's 32 MiB of writes were named the job's, and the
randrw job's write rate (84.6 MiB/s) was set against them: 0.34x, left CANNOT JUDGE only by
the attach. A trace built call by call: fio's process 1000 lays out mix.0.0, its job 1001 reads
and writes it at random."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from iowitness.analysis.measure import stream_full
from iowitness.analysis.read.recorded_paths import command_pid
from tests.support.synthetic import O_CREAT, O_RDWR, O_WRONLY, Calls

KiB = 1024
COMMAND = ["fio", "--name=mix", "--rw=randrw", "--bs=4k", "--size=1m", "--ioengine=psync", "--directory=/d"]
ATTACHED = {"mode": "attach", "attached": [{"pid": 1000, "comm": "fio", "cmdline": COMMAND, "age_s": 6.1}]}


def _trace(meta: dict):
    calls = Calls(tgid=1000).open("/d/mix.0.0", O_WRONLY | O_CREAT)
    for k in range(256):
        calls.pwrite(4 * KiB, k * 4 * KiB, latency=3_000)
    calls.close()
    job = calls.process(1001).gap(5_000_000).open("/d/mix.0.0", O_RDWR)
    for k in range(256):
        offset = (k * 97 % 256) * 4 * KiB
        job.pwrite(4 * KiB, offset, latency=10_000) if k % 2 else job.pread(4 * KiB, offset, latency=80_000)
    job.close()
    return SimpleNamespace(events=calls.frame(), meta={"command": COMMAND, **meta})


@pytest.mark.parametrize("meta", [{"pid": 1000}, {"pid": None, **ATTACHED}], ids=["run", "attach"])
def test_fios_layout_is_named_so_under_run_and_attach(meta):
    # GIVEN fio's process laying out its file, then its job on it; recorded by run or attach -p
    trace = _trace(meta)
    # WHEN reported
    phases = stream_full.build(trace).phases
    # THEN the layout's phase is fio's layout, the job's phase the job's: under attach too
    # (before: the attach's trace had no "pid", and the layout was named "mix write")
    layout = phases[phases["tid"] == 1000]
    assert list(layout["benchmark_name"]) == ["fio layout"], phases[["tid", "benchmark_name"]]
    assert not (phases.loc[phases["tid"] == 1001, "benchmark_name"] == "fio layout").any()


def test_the_commands_process_is_the_run_s_or_the_first_attached():
    assert command_pid({"pid": 42, "attached": [{"pid": 7}]}) == 42
    assert command_pid({"pid": None, "attached": [{"pid": 7}, {"pid": 8}]}) == 7
    assert command_pid({"mode": "attach", "attached": []}) is None
