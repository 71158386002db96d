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


def _pread_loop(traced, tmp_path, workdir, seconds: str):
    """pread_loop's 1-byte preads of a 4 KiB file that existed before the run, named with --file,
    for `seconds`: (its trace, the run, the target, the calls pread_loop counted itself)."""
    if not shutil.which("cc"):
        pytest.skip("cc is needed to build scripts/bench/pread_loop.c")
    exe = tmp_path / "pread_loop"
    subprocess.run(["cc", "-O2", "-o", str(exe), str(PREAD_LOOP)], check=True)
    target = workdir / "file"
    target.write_bytes(b"x" * 4096)
    original, proc = traced([str(exe), str(target), seconds], "--file", str(target))
    said = re.search(r"calls (\d+) ", proc.stdout + original.output.get("stdout", ""))
    assert said, proc.stdout
    return original, proc, target, int(said.group(1))


def test_a_file_named_with_file_replays_under_its_own_name(traced, tmp_path, workdir):
    # GIVEN pread_loop's 1-byte preads of a file that existed before the run, named with --file
    original, proc, target, calls = _pread_loop(traced, tmp_path, workdir, "0.05")
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


@pytest.mark.parametrize("timing", ["fast", "as-recorded"])
def test_a_trace_that_lost_calls_is_replayed_and_said_to_have_lost_them(tmp_path, timing):
    # GIVEN a trace of one thread's open, two 4 KiB writes and close, whose recording says it lost
    # 7 events (its collector fell behind: those calls are in no record)
    from tests.unit.test_replay import AT_FDCWD, write_trace

    trace = tmp_path / "t.iwt"
    write_trace(trace, [(b"/w/a", AT_FDCWD)], lost_events=7)
    # WHEN replayed, quietly
    into, out = tmp_path / "into", tmp_path / "replay.iwt"
    run = iowitness("replay", "-q", str(trace), "--into", str(into), "-o", str(out), "--timing", timing,
                    timeout=300)
    # THEN the calls the trace holds are replayed, its two writes' 8 KiB
    replayed = load(out)
    writes = replayed.events[replayed.events["syscall"].astype(str) == "pwrite64"]
    assert len(writes) == 2 and int(writes["ret"].sum()) == 8192
    # AND the replay says, even with -q, that its original misses calls, and how many: a replay
    # of a trace that lost calls is not the whole run
    assert "misses calls its run made (7 events lost): only the calls it holds are replayed" in run.stderr
    # AND the replay's trace keeps it, and its report says it beside the trace it replays
    assert replayed.meta["replay_of"]["original_missing"] == "7 events lost"
    report = iowitness("report", str(out)).stdout
    assert "that trace misses calls its run made (7 events lost): they were not replayed" in report


def test_a_replay_that_outruns_its_recording_counts_every_call_it_lost(traced, tmp_path, workdir):
    # GIVEN pread_loop's 1-byte preads of a cached file for 0.3 s, recorded, and its own count
    original, proc, target, calls = _pread_loop(traced, tmp_path, workdir, "0.3")
    assert original.lost == 0 and (original.events["syscall"].astype(str) == "pread64").sum() == calls
    # WHEN replayed as fast as it goes into a recording whose event area is 64 KiB (the collector
    # cannot keep up with a full-speed player in that: a 2 M calls/s replay outran the default's)
    out = tmp_path / "replay.iwt"
    run = iowitness("replay", "-q", str(tmp_path / "trace-0.iwt"), "--into", str(tmp_path / "into"), "-o",
                    str(out), "--timing", "fast", "--ring-buffer-mb", "0.0625", timeout=300)
    replayed = load(out)
    # THEN every call the player says it issued (pread_loop's count, and its open and close) is in
    # the replay's trace or in its count of lost events: none is lost silently
    issued = int(re.search(r"iowitness replay: ([\d,]+) calls", run.stdout + replayed.output.get("stdout", ""))
                 .group(1).replace(",", ""))
    assert issued == calls + 2
    assert replayed.event_count + replayed.lost == issued
    if replayed.lost:
        # AND the loss is said when the recording ends (even with -q), and over compare's changes
        assert f"{replayed.lost:,} lost" in run.stderr
        compared = iowitness("compare", str(tmp_path / "trace-0.iwt"), str(out)).stdout
        assert f"lost {replayed.lost:,} events: figures of the calls recorded only" in compared
