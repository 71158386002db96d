"""strace import vs the probe: the same command, run once under `iowitness run` and once under
`strace -f -ttt -T -y`, gives the same phases with the same bytes and calls.

The probe reads file positions and identities in the kernel; the importer rebuilds them from
strace's text. Equal phases mean the rebuilding is right for known_io (threads, a fork, dup'ed
fds), fio (a forked job process, pread/pwrite) and IOzone (one file written, rewritten, read,
reread, with fsyncs). IOzone's own output reaches the import through its writes to stdout, so
the verdicts are compared too. Latency is not compared for equality: strace's -T includes the
ptrace stops (each test prints the two medians, for docs/performance.md).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from iowitness.analysis.read.run import load
from tests.conftest import require_tool
from tests.support.cli import iowitness
from tests.support.workload import build, build_known_io

pytestmark = pytest.mark.kernel


def _both(tmp_path: Path, command_of, target: str) -> tuple:
    """(probe trace, imported trace) of command_of(directory), each run in its own directory."""
    strace = require_tool("strace")
    runs = []
    for name in ("probe", "strace"):
        where = tmp_path / name
        where.mkdir()
        command = command_of(where)
        out = tmp_path / f"{name}.iwt"
        if name == "probe":
            iowitness("run", "-q", "-o", str(out), "--file", str(where / target), "--", *command, cwd=where)
        else:
            raw = tmp_path / "run.strace"
            subprocess.run([strace, "-f", "-ttt", "-T", "-y", "-s", "65536", "-o", str(raw), *command],
                           check=True, cwd=where, stdout=subprocess.DEVNULL, timeout=120)
            iowitness("import", str(raw), "-o", str(out), "--file", str(where / target))
        runs.append(load(out))
    return tuple(runs)


def _phases(trace) -> list[tuple]:
    p = trace.phases()
    return list(zip(p["name"], p["benchmark_name"].fillna(""), p["bytes"].astype(int), p["ops"].astype(int)))


def _medians(probe, imported) -> str:
    return (f"median call: probe {probe.events['latency_ns'].median() / 1e3:.1f} µs, "
            f"strace -T {imported.events['latency_ns'].median() / 1e3:.1f} µs")


def test_known_io_phases_equal(tmp_path):
    # GIVEN known_io, traced by the probe and, in an identical run, by strace
    exe = build_known_io()
    probe, imported = _both(tmp_path, lambda d: [str(exe), str(d), str(d.parent / f"{d.name}.log")], "target.dat")
    # THEN the phases, their bytes and calls are the same
    assert _phases(imported) == _phases(probe)
    assert len(imported.events) == len(probe.events)
    # AND each trace names the backend that made it
    assert (probe.meta["backend"], imported.meta["backend"]) == ("libbpf", "strace")
    print(_medians(probe, imported))


def test_fio_phases_equal(tmp_path):
    # GIVEN two fio jobs (a forked job process each), sequential writes then random reads
    fio = require_tool("fio")
    command = lambda d: [fio, "--output-format=json", "--name=w", "--rw=write", "--bs=4k", "--size=2m",
                         f"--filename={d / 'f.dat'}", "--name=r", "--stonewall", "--rw=randread", "--bs=4k",
                         "--size=2m", f"--filename={d / 'f.dat'}"]
    probe, imported = _both(tmp_path, command, "f.dat")
    # THEN fio's phases, bytes and calls are the same
    assert _phases(imported) == _phases(probe)
    assert [b for *_, b, _ in _phases(probe)] == [2 << 20, 2 << 20]
    print(_medians(probe, imported))


def test_iozone_phases_and_verdicts_equal(tmp_path):
    # GIVEN IOzone's write/rewrite and read/reread tests on one 8 MiB file
    iozone = require_tool("iozone")
    command = lambda d: [iozone, "-i0", "-i1", "-s", "8m", "-r", "64k", "-f", str(d / "iozone.tmp")]
    probe, imported = _both(tmp_path, command, "iozone.tmp")
    # THEN the phases are IOzone's, with the same bytes and calls
    assert _phases(imported) == _phases(probe)
    assert [n for _, n, *_ in _phases(imported)] == ["write", "rewrite", "read", "reread"]
    # AND IOzone's claims, read from its writes to stdout in the strace, are judged for the
    # same phases (the verdict words may differ: strace slows every call)
    verdicts = iowitness("check", str(tmp_path / "strace.iwt"), check=False).stdout
    assert verdicts.count("no phase of the trace matches") == 0
    for test in ("write", "rewrite", "read", "reread"):
        assert f"{test} (64.0 KiB records, 8.0 MiB file)" in verdicts
    print(_medians(probe, imported))


def test_advice_imported_as_the_probe_records_it(tmp_path):
    # GIVEN advice_known (posix_fadvise and readahead on its file, each logged with its
    # arguments), traced by the probe and, in an identical run, by strace
    exe = build("advice_known")
    probe, imported = _both(tmp_path, lambda d: [str(exe), str(d), str(d.parent / f"{d.name}.log")], "advice.dat")

    def advice(trace):
        e = trace.events[trace.events["syscall"].astype(str).isin(["fadvise64", "readahead"])]
        return [(str(r.syscall), int(r.offset), int(r.requested), int(r.flags), int(r.ret)) for r in e.itertuples()]
    # THEN both hold the workload's four pieces of advice, with its arguments, in its order
    truth = [(n, int(o), int(k), int(f), int(r)) for n, o, k, f, r in
             (line.split() for line in (tmp_path / "probe.log").read_text().splitlines())]
    assert len(truth) == 4
    assert advice(probe) == truth
    assert advice(imported) == truth
