"""Phases per open file description, on real programs whose I/O the tests know exactly.

tests/workloads/stdio_reopen.c keeps its first stream open while it opens the same file three
more times (a random read, a sequential read, an "r+" random write) and prints its own
figures. Ground truth: its arithmetic (MIB MiB of 100-byte records, OPS records per random
test), its own printed claims, and strace of the same program for the calls it makes.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from iowitness.analysis.benchmarks import spec
from iowitness.analysis.judge import match_claims as matching
from iowitness.analysis.read.run import load
from tests.support.blocks import assigned_of
from tests.support.cli import iowitness
from tests.support.workload import build

WORKLOADS = Path(__file__).resolve().parents[1] / "workloads"
MIB_ARG, OPS, RECORD = 32, 20000, 100


@pytest.fixture(scope="module")
def reopen(tmp_path_factory):
    """stdio_reopen on a 32 MiB file with 20,000 random records per random test, traced."""
    where = tmp_path_factory.mktemp("reopen")
    exe, out = build("stdio_reopen"), where / "run.iwt"
    iowitness("run", "-q", "-o", str(out), "--", str(exe), str(where / "data"), str(MIB_ARG), str(OPS))
    return load(out)


def test_each_open_of_the_file_is_a_phase_of_its_own(reopen):
    # GIVEN four tests on one file, the first stream still open during the other three
    phases = reopen.phases().sort_values("data_first_ns")
    # THEN there are four phases, one per test, in the order the program ran them
    assert list(phases["operation"]) == ["write", "read", "read", "write"]
    assert list(phases["pattern"]) == ["sequential", "random", "sequential", "random"]
    # AND the sequential tests moved exactly what the program wrote and read
    records = MIB_ARG * 1024 * 1024 // RECORD
    assert int(phases.iloc[0]["bytes"]) == records * RECORD == int(phases.iloc[2]["bytes"])


def test_an_update_streams_read_before_write_is_one_write_phase_with_its_reads_noted(reopen):
    # GIVEN the "r+" random write: glibc reads the block each record lands in, then writes it
    phase = reopen.phases().sort_values("data_first_ns").iloc[3]
    # THEN it is one random-write phase of the program's OPS records of 100 bytes, its
    # block reads counted apart (about one per record: a record in the block read last needs
    # none, a record across two blocks may leave a read that no write follows inside it)
    assert phase["name"] == "random write" and int(phase["write_bytes"]) == OPS * RECORD
    assert 0.95 * OPS <= int(phase["fill_ops"]) <= OPS and int(phase["read_ops"]) <= 0.01 * OPS
    text = iowitness("report", reopen.meta["path"]).stdout
    assert "read-before-write" in text


def test_every_claim_is_judged_on_its_own_test(reopen):
    # GIVEN the program's four printed figures, read with its spec (in the order the tests ran)
    text = reopen.output["stdout"]
    claims = spec.parse(text, spec.load(WORKLOADS / "stdio_reopen.toml"))
    verdicts = matching.match(reopen.report(), claims, "spec", reopen.meta["command"], 0.05, reopen.missing,
                              trace=reopen)
    order = list(reopen.phases().sort_values("data_first_ns")["phase"])
    # THEN each is judged against the phase of its own test
    assert [v.phases for v in verdicts] == [[p] for p in order]
    # AND what the kernel saw agrees with what the program says for the three tests whose bytes
    # are the program's own, and explains the random read (4 KiB read per 100-byte record)
    assert [v.verdict for v in verdicts] == ["agrees", "explained", "agrees", "agrees"], \
        [(v.claim.test, v.verdict, v.reasons) for v in verdicts]
    assert "buffered stream reads whole blocks" in verdicts[1].reasons[0]


def test_the_trace_has_as_many_stretches_as_strace_has_opens(reopen, tmp_path):
    # GIVEN the same program run under strace
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    log, data = tmp_path / "strace.txt", tmp_path / "data"
    subprocess.run(["strace", "-f", "-e", "trace=openat", "-o", str(log), reopen.meta["command"][0], str(data),
                    str(MIB_ARG), str(OPS)], check=True, capture_output=True)
    opens = sum(f'openat(AT_FDCWD, "{data}"' in line for line in log.read_text().splitlines())
    # WHEN the trace's calls on its data file are grouped by open file description
    events, assigned = reopen.events, assigned_of(reopen.report())
    mine = events["path"].astype(str).str.endswith("/data").to_numpy()
    # THEN there is one stretch per open, and one phase per stretch
    assert opens == 4
    assert assigned.loc[mine, "span"].nunique() == opens
    assert assigned.loc[mine & (assigned["phase"] > 0).to_numpy(), "phase"].nunique() == opens


def test_a_streams_last_full_buffer_written_at_fclose_after_the_clock_explains_the_claim(tmp_path):
    # GIVEN a stdio program whose 1,000 full blocks leave the last one in the stream until
    # fclose, which it calls 0.2 s after stopping its clock
    exe, out = build("stdio_late_flush"), tmp_path / "run.iwt"
    iowitness("run", "-q", "-o", str(out), "--", str(exe), str(tmp_path / "data"))
    trace = load(out)
    # WHEN its claim is judged
    claims = spec.parse(trace.output["stdout"], spec.load(WORKLOADS / "stdio_late_flush.toml"))
    [verdict] = matching.match(trace.report(), claims, "spec", trace.meta["command"], 0.05, trace.missing, trace=trace)
    # THEN the calls' window (which runs to the flush) is far off, and the reason is the last
    # full buffer, written by fclose after the other work: without it the figure fits
    writes = trace.events[trace.events["syscall"] == "write"]
    assert int(writes["ret"].sum()) == 4_096_000 and int(writes["ret"].iloc[-1]) == 4096
    assert verdict.verdict == "explained", verdict.reasons
    assert verdict.reasons[0].startswith("a final flush at close: the phase's last write (4,096 bytes")
