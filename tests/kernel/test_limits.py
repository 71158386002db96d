"""The probe's fixed-size sets driven past their sizes: every miss counted, stored and said.

The workload is tests/workloads/crowd.c, whose I/O is known exactly from its arguments; the
file contents it leaves behind are the independent proof of what its processes really did.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from iowitness.analysis.read.run import load
from tests.support import blockdev
from tests.support.cli import IOWITNESS, iowitness
from tests.support.workload import build


@pytest.fixture(scope="module")
def crowd() -> Path:
    return build("crowd")


def _pwrites_by_child(trace, parent: int) -> int:
    events = trace.events
    return int(((events["syscall"] == "pwrite64") & (events["tgid"] != parent)).sum())


def test_files_beyond_the_file_set_are_counted_and_said_in_every_report(crowd, tmp_path, workdir, traced):
    # GIVEN a file set of 10 and a benchmark that creates and writes 30 files in the traced directory
    trace, proc = traced([str(crowd), "files", str(workdir), "30"], "--file", str(workdir), "--max-files", "10")

    # THEN every file was written (the independent proof) ...
    assert sorted(p.stat().st_size for p in workdir.iterdir()) == [4096] * 30
    # ... the trace holds the 10 files it could follow, whole ...
    events = trace.events
    followed = set(events["path"].dropna())
    assert len(followed) == 10
    assert int((events["syscall"] == "write").sum()) == 10 and int((events["syscall"] == "close").sum()) == 10
    # ... and the 20 others are counted in the kernel, stored in the trace and said at the end of the run
    assert trace.counters["files_not_followed"] == 20
    assert "20 opens of target files not followed (the file set was full: raise --max-files)" in proc.stderr

    # AND every report says so beside "lost"
    saved = Path(trace.meta["path"])
    shown = iowitness("show", str(saved)).stdout
    assert "lost 0 (20 opens of target files not followed" in shown
    text = iowitness("report", str(saved)).stdout
    assert "lost events: 0 (20 opens of target files not followed" in text
    assert "the probe could not follow everything" in text
    doc = json.loads(iowitness("report", str(saved), "--json").stdout)
    assert doc["not_followed"] == {"files_not_followed": 20}
    assert "20 opens of target files not followed" in iowitness("report", str(saved), "--markdown").stdout
    html = tmp_path / "r.html"
    iowitness("report", str(saved), "--html", str(html))
    assert "20 opens of target files not followed" in html.read_text()


def test_check_fails_on_a_trace_that_misses_calls_unless_told_otherwise(crowd, tmp_path, workdir, traced):
    # GIVEN a home-made benchmark whose claim is true, traced with a file set too small for it
    spec = tmp_path / "crowd.toml"
    spec.write_text("version = 1\n[[claim]]\n"
                    "pattern = '^crowd: \\d+ files, \\d+ bytes, (?P<value>[\\d.]+) (?P<unit>MB/s)$'\n"
                    'test = "write"\n')
    trace, _ = traced([str(crowd), "files", str(workdir), "30"], "--file", str(workdir), "--max-files", "10")
    saved = trace.meta["path"]

    # WHEN check judges it
    failed = iowitness("check", saved, "--spec", str(spec), check=False)
    allowed = iowitness("check", saved, "--spec", str(spec), "--allow-loss", check=False)

    # THEN it fails, saying why, unless --allow-loss lets the verdicts alone decide
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "FAILS: the trace misses calls (20 opens of target files not followed" in failed.stdout
    assert "FAILS" not in allowed.stdout


def test_children_beyond_the_process_set_are_counted(crowd, workdir, traced):
    # GIVEN room for 20 processes at once, and a benchmark with 50 children alive at once
    trace, proc = traced([str(crowd), "alive", str(workdir), "50"], "--max-processes", "20")

    # THEN all 50 wrote their byte (the file is the proof) ...
    assert (workdir / "shared").read_bytes() == b"x" * 50
    # ... the benchmark and 19 children were followed, the 31 others counted, not dropped silently
    parent = int(trace.meta["pid"])
    assert _pwrites_by_child(trace, parent) == 19
    assert trace.counters["processes_not_followed"] == 31
    assert "31 processes not followed" in proc.stderr


def test_exited_children_free_their_place_in_the_process_set(crowd, workdir, traced):
    # GIVEN room for 20 processes at once, and 400 children made one after the other
    trace, _ = traced([str(crowd), "forks", str(workdir), "400"], "--max-processes", "20")

    # THEN every child was followed: an exited one leaves the set
    assert (workdir / "shared").read_bytes() == b"x" * 400
    parent = int(trace.meta["pid"])
    assert _pwrites_by_child(trace, parent) == 400
    assert trace.counters.get("processes_not_followed", 0) == 0 and trace.lost == 0


def _spawn_with_pid(pid: int, command: list[str], attempts: int = 200) -> subprocess.Popen:
    """A process that gets exactly `pid` (the kernel's next PID set through ns_last_pid); it
    waits for a line on stdin before it does anything."""
    for _ in range(attempts):
        Path("/proc/sys/kernel/ns_last_pid").write_text(str(pid - 1))
        stranger = subprocess.Popen(command, stdin=subprocess.PIPE, text=True)
        if stranger.pid == pid:
            return stranger
        stranger.kill()
        stranger.wait()
    pytest.fail(f"could not get PID {pid} for the stranger in {attempts} attempts (a busy machine?)")


def test_a_stranger_that_reuses_an_exited_childs_pid_is_not_traced(crowd, tmp_path, workdir):
    # GIVEN a traced benchmark whose child wrote 100 bytes and exited
    out = tmp_path / "t.iwt"
    run = subprocess.Popen([*IOWITNESS, "run", "-q", "-o", str(out), "--", str(crowd), "reuse", str(workdir)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pidfile = workdir / "child.pid"
        for _ in range(3000):
            if pidfile.exists() and pidfile.read_text().endswith("\n"):
                break
            time.sleep(0.01)
        child = int(pidfile.read_text())

        # WHEN an unrelated process (not a descendant of the benchmark) gets the child's PID and
        # appends 777 bytes to the same file while the run goes on
        stranger = _spawn_with_pid(child, ["sh", "-c", f"read go; printf '%777s' '' >> {workdir / 'shared'}"])
        stranger.communicate("go\n", timeout=30)
        assert stranger.returncode == 0
    finally:
        (workdir / "go").touch()
        stdout, stderr = run.communicate(timeout=120)
    assert run.returncode == 0, stderr

    # THEN the stranger really wrote (the file is the proof), and none of its calls are in the trace
    assert (workdir / "shared").stat().st_size == 100 + 777
    trace = load(out)
    mine = trace.events[trace.events["tgid"] == child]
    assert list(mine["syscall"]) == ["openat", "write", "close"]
    assert int(mine["ret"].max()) == 100
    assert not (trace.events["ret"] == 777).any()


def test_block_devices_beyond_the_device_filter_are_counted(tmp_path):
    # GIVEN a probe whose device filter has room for one device, and targets on two disks
    # (this machine's root disk under tmp_path, and a fresh loop device)
    from iowitness.collector import targets
    from iowitness.collector.probe import Probe, ProbeConfig
    with blockdev.loop_ext4() as (_, mount):
        on_root, on_loop = tmp_path / "a", Path(mount) / "b"
        # WHEN user space watches the disks of named targets at start ...
        probe = Probe(ProbeConfig(file_set=targets.file_set([str(on_root), str(on_loop)]), bpf_stats=False,
                                  max_devices=1))
        try:
            # THEN one is watched and the other counted
            assert len(probe.watched_devices()) == 1
            assert probe.lost()["devices_not_watched"] == 1
        finally:
            probe.close()

        # WHEN the probe itself meets the second disk at an open (every file of a process is a target)
        probe = Probe(ProbeConfig(file_set=targets.FileSet(), bpf_stats=False, max_devices=1))
        try:
            writer = subprocess.Popen(["sh", "-c", f"read go; echo a > {on_root}; echo b > {on_loop}"],
                                      stdin=subprocess.PIPE, text=True)
            probe.add_process(writer.pid)
            probe.attach()
            writer.communicate("go\n", timeout=30)
            # THEN both files were written, one disk is watched and the other counted in the kernel
            assert on_root.read_text() == "a\n" and on_loop.read_text() == "b\n"
            assert len(probe.watched_devices()) == 1
            assert probe.lost()["devices_not_watched"] == 1
        finally:
            probe.close()
