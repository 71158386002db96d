"""compare of two groups of real runs: 3 dd runs on a loop device against 3 made slower for
real (the same dd in a cgroup-v1 blkio group throttled to 8 MiB/s on that device), and 3
against 3 made the same.

Ground truth, independent of iowitness: what dd was told to do (count x bs bytes with O_DIRECT,
count write calls), and the throttle: 4 MiB at 8 MiB/s take at least 0.5 s, while the same
writes unthrottled on a loop device take a few tens of milliseconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from tests.conftest import require_tool
from tests.support.blockdev import blkio_throttle, dev_numbers, in_cgroup, loop_ext4
from tests.support.cli import IOWITNESS, iowitness

pytestmark = pytest.mark.kernel
BS, COUNT = 64 * 1024, 64          # 4 MiB in 64 writes
RATE = 8 << 20


def _dd(tmp, mnt, name: str, group=None) -> str:
    out = tmp / f"{name}.iwt"
    command = [*IOWITNESS, "run", "-q", "-o", str(out), "--", "dd", "if=/dev/zero", f"of={mnt}/{name}.bin",
               f"bs={BS}", f"count={COUNT}", "oflag=direct"]
    proc = subprocess.run(in_cgroup(group, command) if group else command, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"{BS * COUNT} bytes" in proc.stderr     # dd's own count of what it wrote
    os.unlink(f"{mnt}/{name}.bin")
    return str(out)


@pytest.fixture(scope="module")
def groups(tmp_path_factory):
    """GIVEN 6 dd runs on a loop device as they are, and 3 in a cgroup throttled to 8 MiB/s; and
    the wall-clock time of the change, between the two (what a user who made it knows)."""
    require_tool("dd")
    tmp = tmp_path_factory.mktemp("groups")
    with loop_ext4(64) as (device, mnt):
        fast = [_dd(tmp, mnt, f"fast{i}") for i in range(6)]
        changed = time.time()
        with blkio_throttle(*dev_numbers(device), RATE) as group:
            slow = [_dd(tmp, mnt, f"slow{i}", group) for i in range(3)]
    return fast, slow, changed


def _metric(doc: dict, name: str) -> dict:
    row = next(r for r in doc["phases"] if r["phase"] == "dd write")
    return next(m for m in row["metrics"] if m["metric"] == name)


def test_throttled_runs_fail_the_gate_as_a_significant_change(groups):
    fast, slow, _ = groups
    # WHEN 3 runs are compared with 3 throttled ones, gated on throughput and duration
    proc = iowitness("compare", *fast[:3], "--", *slow, "--json", "--fail-if", "wall<-10%",
                     "--fail-if", "duration>+10%", check=False)
    doc = json.loads(proc.stdout)
    # THEN the gate fails: the throttled runs are slower, past the threshold and significant
    assert proc.returncode == 1, proc.stderr
    assert all(j["crossed"] for j in doc["fail_if"])
    duration = _metric(doc, "duration")
    assert min(duration["values"][1]) >= 0.45          # 4 MiB at 8 MiB/s: 0.5 s (the first burst may pass)
    assert duration["test"]["significant"] and duration["test"]["low"] > 1
    # AND the work is the same: 64 calls and 4 MiB in every run, no change, not significant
    ops, nbytes = _metric(doc, "ops"), _metric(doc, "bytes")
    assert ops["values"] == [[COUNT] * 3, [COUNT] * 3] and not ops["test"]["significant"]
    assert nbytes["median"] == [BS * COUNT, BS * COUNT]


# A gate far from noise and far from what the throttle did (about 0.5 s for a few ms, 100 times
# slower): an unthrottled dd of 4 MiB takes 3 ms, and on a busy machine one preemption is as long,
# so two groups of 3 such runs made the same can differ by half (one CI run: -34 %, "significant").
# What these tests hold is that the same work is not called a change, not that 3 ms is steady.
FAR_GATE = ["--fail-if", "wall<-90%", "--fail-if", "duration>+900%"]


def test_runs_made_the_same_do_not_fail_the_gate(groups):
    fast, _, _ = groups
    # WHEN 3 runs are compared with 3 more of the same, on a gate the throttle crosses
    proc = iowitness("compare", *fast[:3], "--", *fast[3:], *FAR_GATE, "--fail-if", "ops>+1%", check=False)
    # THEN it passes, and the table says each group's median and spread
    assert proc.returncode == 0, proc.stderr
    assert "dd write" in proc.stdout and "n=3" in proc.stdout


def test_the_same_runs_chosen_in_a_parquet_dataset(groups, tmp_path):
    """GIVEN the 9 runs exported into one dataset; the throttled ones chosen by when they ran
    (the wall clock when the throttle was set, between the last plain run and the first
    throttled one), as a user who knows when the change happened would. (The first throttled
    trace's own start is no bound to give: the runs table keeps start_time cut to the microsecond,
    and that start read from the trace and rounded to the microsecond can fall just after it.)"""
    pytest.importorskip("pyarrow", reason="pyarrow is in the parquet extra: pip install -e '.[parquet]'")
    from datetime import datetime, timezone

    fast, slow, changed = groups
    ds = tmp_path / "sweep"
    iowitness("export", "--parquet", str(ds), *fast, *slow)
    since = datetime.fromtimestamp(changed, timezone.utc)
    before, after = f"{ds}[trace=*fast[012].iwt]", f"{ds}[start_time>={since.isoformat()}]"
    gate = ["--json", "--fail-if", "wall<-10%", "--fail-if", "duration>+10%"]
    # WHEN the first 3 runs are compared with those since the change, from the dataset and from the traces
    chosen = iowitness("compare", before, after, *gate, check=False)
    traced = iowitness("compare", *fast[:3], "--", *slow, *gate, check=False)
    # THEN the gate fails the same way, on the same per-run figures: the dataset holds what the traces gave
    assert chosen.returncode == traced.returncode == 1, chosen.stderr
    left, right = json.loads(chosen.stdout), json.loads(traced.stdout)
    assert [len(g["runs"]) for g in left["groups"]] == [3, 3]
    assert left["phases"] == right["phases"] and left["fail_if"] == right["fail_if"]
    # AND the runs made the same, chosen by their trace's name, give what their traces give,
    # and pass a gate the throttled runs cross
    far = ["--json", *FAR_GATE]
    same = iowitness("compare", before, f"{ds}[trace=*fast[345].iwt]", *far, check=False)
    same_traced = iowitness("compare", *fast[:3], "--", *fast[3:], *far, check=False)
    assert same.returncode == same_traced.returncode == 0, same.stderr
    assert json.loads(same.stdout)["phases"] == json.loads(same_traced.stdout)["phases"]
    assert iowitness("compare", before, after, *far, check=False).returncode == 1
