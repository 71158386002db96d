"""Benchmarks on a raw disk: dd and fio given a block device (/dev/loopN with no file system),
traced by `iowitness run` without --file, as a user runs `fio --filename=/dev/nvme0n1`.

Ground truth: the workloads' own arguments (dd's count and block size, fio's size and block
size), the character devices they also use (/dev/zero, /dev/null: never targets), and
/proc/diskstats of each loop device read by the test before and after the run. The loop
devices are removed by their context managers, even when a test fails.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from iowitness import load
from iowitness.collector.format.tracereader import read
from tests.conftest import require_tool
from tests.support.blockdev import diskstats, loop_raw, settled
from tests.support.cli import iowitness

pytestmark = pytest.mark.kernel

BS, COUNT = 64 * 1024, 64
TOTAL = BS * COUNT


@pytest.fixture(scope="module")
def dd_run(tmp_path_factory):
    require_tool("dd")
    tmp = tmp_path_factory.mktemp("raw")
    with loop_raw(16) as disk_w, loop_raw(16) as disk_r:
        w, r = os.path.basename(disk_w), os.path.basename(disk_r)
        before = {w: settled(w), r: settled(r)}
        trace = tmp / "dd.iwt"
        script = (f"dd if=/dev/zero of={disk_w} bs={BS} count={COUNT} oflag=direct && "
                  f"dd if={disk_r} of=/dev/null bs={BS} count={COUNT} iflag=direct")
        iowitness("run", "-q", "-o", str(trace), "--", "sh", "-c", script, timeout=120)
        after = {w: diskstats(w), r: diskstats(r)}
        report = json.loads(iowitness("report", "--json", str(trace)).stdout)
        # dd's figure is read from dd's own command line: dd run directly, on the disk read above
        alone = tmp / "dd_read.iwt"
        iowitness("run", "-q", "-o", str(alone), "--", "dd", f"if={disk_r}", "of=/dev/null", f"bs={BS}",
                  f"count={COUNT}", "iflag=direct", timeout=120)
        check = iowitness("check", str(alone), check=False)
    delta = {d: {k: after[d][k] - before[d][k] for k in after[d]} for d in after}
    return {"trace": trace, "w": w, "r": r, "paths": (disk_w, disk_r), "delta": delta, "report": report,
            "check": check}


def test_the_disks_are_the_targets_and_the_character_devices_are_not(dd_run):
    t = read(dd_run["trace"])
    paths = {f["path"] for f in t.meta["files"]}
    assert paths == set(dd_run["paths"]), paths
    by_path = {f["path"]: f for f in t.meta["files"]}
    assert by_path[dd_run["paths"][0]]["block_device"] == dd_run["paths"][0]


def test_calls_and_bytes_are_dd_s_on_each_disk(dd_run):
    ev = load(dd_run["trace"]).events
    writes = ev[ev["syscall"].isin(["write", "pwrite64"])]
    reads = ev[ev["syscall"].isin(["read", "pread64"])]
    assert len(writes) == COUNT and int(writes["ret"].sum()) == TOTAL
    assert len(reads) == COUNT and int(reads["ret"].sum()) == TOTAL
    assert np.all(writes["ret"] == BS) and np.all(reads["ret"] == BS)


def test_the_device_view_is_each_disk_s_own_and_equals_diskstats(dd_run):
    report = dd_run["report"]
    phases = {p["phase"]: p for p in report["phases"]}
    views = {v["phase"]: v for v in report["device"]["phases"]}
    seen = {}
    for number, phase in phases.items():
        view = views[number]
        seen[phase["operation"]] = view
        assert view["device"] == os.path.basename(phase["path"]), (phase["path"], view["device"])
    # O_DIRECT on a raw disk: every byte dd moved is one request's, and nothing else writes there
    assert seen["write"]["device"] == dd_run["w"] and seen["write"]["write_bytes"] == TOTAL
    assert dd_run["delta"][dd_run["w"]]["write_bytes"] == TOTAL
    assert seen["read"]["device"] == dd_run["r"]
    # every read request is in the view, unless the kernel skipped a run of the completion
    # program (a completion interrupting it on the same CPU: its recursion_misses) or its ring
    # was full: the trace counts those, the report says the records are missing, and the view
    # is short by at most that many requests (a way a busy machine can take a request away that
    # the trace counts; the one failure seen, 63 of 64 under load, predates these diagnostics)
    missed = _completions_missed(dd_run["trace"])
    if missed:
        assert TOTAL - missed * BS <= seen["read"]["read_bytes"] <= TOTAL, _read_edges(dd_run)
    else:
        assert seen["read"]["read_bytes"] == TOTAL, _read_edges(dd_run)
    assert dd_run["delta"][dd_run["r"]]["read_bytes"] >= TOTAL


def _completions_missed(trace) -> int:
    """Block completions the trace knows it has no record of: runs of the completion program
    the kernel skipped, and records its ring had no room for."""
    counters = read(trace).meta["counters"]
    program = counters.get("probe_cost", {}).get("programs", {}).get("on_block_rq_complete", {})
    return int(program.get("recursion_misses", 0)) + int(counters.get("lost_block", 0))


def _read_edges(dd_run) -> str:
    """What a failure needs to be told apart (one CI run under load saw 63 of the 64 requests in
    the read phase's view, and a rerun could not repeat it; 10 more at load 8-10 neither): the
    trace's counts of block records lost or completion runs skipped, the phases, and the read
    disk's requests against the read calls' span."""
    phases = [{k: p.get(k) for k in ("phase", "operation", "ops", "bytes", "path")} for p in dd_run["report"]["phases"]]
    ev = load(dd_run["trace"]).events
    reads = ev[ev["syscall"] == "read"]
    first, last = int(reads["start_ns"].min()), int((reads["start_ns"] + reads["latency_ns"]).max())
    block = read(dd_run["trace"]).block
    done = block["complete_ns"].astype(np.int64)
    mine = block["op"] == 0
    outside = [(int(done[i]) - first, last - int(done[i]), int(block["bytes"][i]), int(block["tgid"][i]))
               for i in np.flatnonzero(mine & ((done < first) | (done >= last)))]
    counters = read(dd_run["trace"]).meta["counters"]
    lost = {k: counters.get(k) for k in ("lost_block", "missed_runs")}
    lost["recursion_misses"] = {name: p["recursion_misses"] for name, p in
                                counters.get("probe_cost", {}).get("programs", {}).items() if p.get("recursion_misses")}
    return (f"lost {lost}; phases {phases}; read calls {len(reads)} from {first} to {last}; "
            f"read requests {int(mine.sum())}, "
            f"{int(block['bytes'][mine].sum())} B; outside the calls' span (ns after the first start, ns before "
            f"the last end, bytes, tgid): {outside}")


def test_dd_s_own_figures_are_judged_on_the_disk(dd_run):
    # dd's 4 MiB from a loop device whose image is in the page cache take about 1.5 ms of calls:
    # its clock also spans the close after them, so the figure agrees, is explained by it (ratio
    # 0.947 in one CI run: "close inside the timed window") or, preempted under two CPU hogs, is
    # too short to tell why (0.820); what this test holds is that the figure is judged on the
    # raw disk's read phase, and never DISAGREES
    out = dd_run["check"].stdout
    assert out.startswith(("AGREES", "EXPLAINED", "CANNOT JUDGE")) and "dd read" in out and "phase 1" in out, out
    assert "DISAGREES" not in out and "no phase" not in out, out


def test_fio_on_a_raw_disk(tmp_path):
    fio = require_tool("fio")
    with loop_raw(16) as disk:
        trace = tmp_path / "fio.iwt"
        iowitness("run", "-q", "-o", str(trace), "--", fio, "--name=raw", f"--filename={disk}",
                  "--rw=randread", "--bs=4k", "--size=4M", "--direct=1", "--ioengine=psync",
                  timeout=180)
        ev = load(trace).events
        reads = ev[ev["syscall"].isin(["read", "pread64"])]
        # fio's randread with the default norandommap=0 reads every block of the 4 MiB once
        assert len(reads) == 1024 and int(reads["ret"].sum()) == 4 << 20
        assert int(reads["offset"].nunique()) == 1024
        check = iowitness("check", str(trace), check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "AGREES" in check.stdout, check.stdout


def test_hdparm_buffered_reads_on_a_raw_disk(tmp_path):
    # hdparm -t flushes the disk's buffers and times sequential 2 MiB reads for about 3 s;
    # judged with docs/specs/hdparm.toml. (-T's figure, whose loop of 2 ms calls a preemption
    # before its first call can put 5 % below the calls on a busy machine, is held by
    # tests/unit/test_rate_skip.py and was measured by hand: docs/specs/hdparm.toml)
    hdparm = require_tool("hdparm")
    spec = Path(__file__).resolve().parents[2] / "docs" / "specs" / "hdparm.toml"
    with loop_raw(64) as disk:
        trace = tmp_path / "hdparm.iwt"
        run = iowitness("run", "-o", str(trace), "--", hdparm, "-t", disk, timeout=180)
        ev = load(trace).events
        check = iowitness("check", "--spec", str(spec), str(trace), check=False)
    said = re.search(r"Timing buffered disk reads:\s+([\d.]+) MB in", run.stdout)
    assert said, run.stdout
    reads = ev[ev["syscall"] == "read"]
    # hdparm's own MB count (2^20 bytes) is the bytes its timed reads moved, all of the 64 MiB disk
    assert int(reads["ret"].sum()) == float(said.group(1)) * (1 << 20) == 64 << 20
    assert (reads["ret"] == 2 << 20).all()
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.startswith("AGREES") and "buffered disk reads" in check.stdout, check.stdout
