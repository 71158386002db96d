"""Which name a replayed file gets, recorded by the real probe.

pread_loop (scripts/bench/pread_loop.c) recorded with `iowitness run --file FILE`: FILE exists
before the run, so the collector registers it by inode and the probe records no open of it; its
name is in the trace's targets only. Its replay used to place it at /unnamed/dev0-ino... (the
targets' (dev, ino) key was not cut to 64 bits as the events' is). The ground truth is
pread_loop's own count of its calls."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from iowitness.analysis.read.run import load
from tests.support.cli import iowitness
from tests.unit.test_replay_stream import write_target_trace

pytestmark = pytest.mark.kernel
PREAD_LOOP = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "pread_loop.c"


def test_a_file_named_with_file_replays_under_its_own_name(traced, tmp_path, workdir):
    if not shutil.which("cc"):
        pytest.skip("cc is needed to build scripts/bench/pread_loop.c")
    exe = tmp_path / "pread_loop"
    subprocess.run(["cc", "-O2", "-o", str(exe), str(PREAD_LOOP)], check=True)
    target = workdir / "file"
    target.write_bytes(b"x" * 4096)
    # GIVEN pread_loop's 1-byte preads of a file that existed before the run, named with --file
    original, proc = traced([str(exe), str(target), "0.05"], "--file", str(target))
    said = re.search(r"calls (\d+) ", proc.stdout + original.output.get("stdout", ""))
    assert said, proc.stdout
    calls = int(said.group(1))
    assert (original.events["syscall"].astype(str) == "pread64").sum() == calls
    # (the cause: the probe records no open of a file registered by inode; its name is a target's)
    named = original.files[original.files["path"].astype(str) == str(target)]
    assert list(named["source"]) == ["target"]
    # WHEN replayed as fast as it goes
    into, out = tmp_path / "into", tmp_path / "replay.iwt"
    run = iowitness("replay", "-q", str(tmp_path / "trace-0.iwt"), "--into", str(into), "-o", str(out),
                    "--timing", "fast", timeout=300)
    replayed = load(out)
    # THEN the file is replayed under its own name, every one of pread_loop's preads on it
    assert replayed.meta["replay_of"]["files"] == {"file": str(target)}
    preads = replayed.events[replayed.events["syscall"].astype(str) == "pread64"]
    assert len(preads) == calls and set(preads["path"].astype(str)) == {str(into / "file")}
    assert "no name for" not in run.stdout + replayed.output.get("stdout", "")


def test_a_file_the_trace_cannot_name_is_replayed_and_said(tmp_path):
    # GIVEN a trace with a file read through an fd opened before the recording and named nowhere
    # (inode 501 on device 254:0), beside a --file target (tests/unit/test_replay_stream.py)
    trace = tmp_path / "t.iwt"
    write_target_trace(trace, (254 << 20) | 0)
    # WHEN replayed
    into, out = tmp_path / "into", tmp_path / "replay.iwt"
    run = iowitness("replay", "-q", str(trace), "--into", str(into), "-o", str(out), "--timing", "fast",
                    timeout=300)
    replayed = load(out)
    # THEN its 3 reads of 4 KiB are replayed on a file made for them, named by device and inode
    # (opened once first: the trace never saw the fd opened)
    unnamed = into / "unnamed" / "dev254:0-ino501"
    on_it = replayed.events[replayed.events["path"].astype(str) == str(unnamed)]
    reads = on_it[on_it["syscall"].astype(str) == "pread64"]
    assert len(reads) == 3 and int(reads["ret"].sum()) == 3 * 4096
    assert list(on_it["syscall"].astype(str)) == ["openat2", "pread64", "pread64", "pread64"]
    # AND the replay's output says why it has no name, and where it went
    text = run.stdout + replayed.output.get("stdout", "")
    assert ("no name for dev254:0-ino501 in the trace (no open of it was recorded: opened before the recording "
            "began, or the record lost): replayed as unnamed/dev254:0-ino501 under the replay's directory") in text
