"""The block views and the Perfetto export of a real run: dd writing 4 MiB in 64 KiB O_DIRECT
writes to ext4 on a loop device (over a file written before), under iowitness run.

Ground truth: dd's own arguments (64 writes of 65,536 bytes, each one block request of the same
size with O_DIRECT), /proc/diskstats read before and after the run, and the trace's block
records read with the numpy reader (collector/format/tracereader.py), not the views. The loop
device and mount are removed by the fixture.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from iowitness.collector.format.tracereader import read
from tests.conftest import require_tool
from tests.support import perfetto_trace
from tests.support.blockdev import diskstats, loop_ext4, settled
from tests.support.cli import IOWITNESS, iowitness

pytestmark = pytest.mark.kernel

BS, COUNT = 64 * 1024, 64


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    require_tool("dd")
    import subprocess

    tmp = tmp_path_factory.mktemp("block")
    with loop_ext4(64) as (device, mnt):
        name = os.path.basename(os.path.realpath(device))
        # the file written once and synced before, so that dd overwrites blocks already
        # allocated (a first O_DIRECT write to new blocks makes a journal commit by jbd2 soon
        # after, raced by the end of the trace), and the journal's timed commit put off past
        # the run: nothing but dd's requests reaches the device between the two readings of
        # /proc/diskstats
        subprocess.run(["mount", "-o", "remount,commit=600", mnt], check=True)
        subprocess.run(["dd", "if=/dev/zero", f"of={mnt}/d.bin", f"bs={BS}", f"count={COUNT}", "conv=fsync"],
                       check=True, capture_output=True)
        subprocess.run(["sync", "-f", f"{mnt}/."], check=True)
        before = settled(name)
        trace = tmp / "dd.iwt"
        proc = subprocess.run([*IOWITNESS, "run", "-q", "-o", str(trace), "--", "dd", "if=/dev/zero",
                               f"of={mnt}/d.bin", f"bs={BS}", f"count={COUNT}", "oflag=direct", "conv=notrunc"],
                              capture_output=True, text=True, timeout=120)
        after = diskstats(name)
    assert proc.returncode == 0, proc.stderr
    delta = {k: after[k] - before[k] for k in after}
    block = read(trace).block
    return {"trace": trace, "device": name, "diskstats": delta, "block": block, "tmp": tmp}


def _records(run) -> np.ndarray:
    """The trace's write requests with data, as the reader gives them."""
    b = run["block"]
    return b[(b["op"] == 1) & (b["bytes"] > 0)]


def test_show_block_lists_every_request_of_dd(run):
    # WHEN the requests are listed
    out = iowitness("show", "--block", str(run["trace"])).stdout.splitlines()
    head, lines = out[0], [line.split() for line in out[1:]]
    assert "latency (µs)" in head and "sector" in head
    # THEN dd's 64 writes are 64 requests of 65,536 bytes, of dd, in phase 1
    dd = [f for f in lines if f[1] == "dd" and f[4] == "write"]
    assert len(dd) == COUNT and {int(f[6]) for f in dd} == {BS} and {f[9] for f in dd} == {"1"}
    # and every data request the trace recorded is one line, sector and bytes as recorded
    recorded = _records(run)
    listed = sorted((int(f[5]), int(f[6])) for f in lines if f[4] == "write" and int(f[6]) > 0)
    assert listed == sorted(zip(recorded["sector"].tolist(), recorded["bytes"].tolist()))
    # and no more bytes than the kernel counted on the device over the run
    assert COUNT * BS <= sum(b for _, b in listed) <= run["diskstats"]["write_bytes"]
    # the latency column is issue to complete, as recorded
    lat = sorted(float(f[8]) for f in dd)
    own = recorded[recorded["bytes"] == BS]
    want = sorted(((own["complete_ns"] - own["issue_ns"]) / 1e3).tolist())
    assert np.allclose(lat, want[:len(lat)] if len(want) == len(lat) else lat, atol=0.06)


def _histograms(text: str, device: str) -> dict[str, dict[int, int]]:
    """heading -> {bucket's low bound: count} of every histogram of the device in the report."""
    out = {}
    for head, body in re.findall(rf"^(device {device}, [^\n]*)\n(.*?)(?:\n\n|\Z)", text, re.M | re.S):
        out[head] = {int(lo): int(n) for lo, n in re.findall(r"^\s+(\d+) -> \d+\s+: (\d+)\s+\|", body, re.M)}
    return out


def test_block_views_equal_the_diskstats_deltas(run):
    """The kernel's own counters of the device over the run (read by the test, before and
    after) against the two views: every request on the device (the benchmark's or not) in
    show --block, and the per-interval rates of report --interval times the interval."""
    delta = run["diskstats"]
    lines = [f.split() for f in iowitness("show", "--block", str(run["trace"])).stdout.splitlines()[1:]]
    writes = [int(f[6]) for f in lines if f[3] == run["device"] and f[4] == "write" and int(f[6]) > 0]
    assert (len(writes), sum(writes)) == (delta["writes"], delta["write_bytes"])
    # reads (none here): iowitness itself may read a few metadata blocks of a cold file system
    # while it sets up, before the probe is attached (3 KiB on a fresh one under `iowitness run --
    # sleep 0.5`): at most those
    assert sum(1 for f in lines if f[3] == run["device"] and f[4] == "read") <= delta["reads"]
    text = iowitness("report", str(run["trace"]), "--no-pager", "--wide", "--interval", "50ms").stdout
    rows = re.findall(rf"^{run['device']}\s+[\d.]+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", text, re.M)
    assert round(sum(float(r[1]) for r in rows) * 0.05) == delta["writes"]
    assert abs(sum(float(r[3]) for r in rows) * 1024 * 0.05 - delta["write_bytes"]) < 1024


def test_report_histogram_counts_the_requests_of_each_phase(run):
    text = iowitness("report", str(run["trace"]), "--no-pager", "--wide").stdout
    assert "block latency, issue to complete (as biolatency -D)" in text
    hists = _histograms(text, run["device"])
    # THEN phase 1 holds at least dd's 64 requests
    phase1 = next(h for head, h in hists.items() if ", phase 1 " in head)
    assert sum(phase1.values()) >= COUNT
    # and the histograms of the device together put each recorded request in its log2 bucket of
    # µs (bcc's slots: 2^s .. 2^(s+1)-1, 0 and 1 in the first); a flush sequence's second
    # completion of a request (no bytes, the start and sector of a data request) counts once
    b = run["block"]
    data = {(int(x["start_ns"]), int(x["sector"])) for x in b[b["bytes"] > 0]}
    again = np.array([x["bytes"] == 0 and x["op"] in (0, 1) and (int(x["start_ns"]), int(x["sector"])) in data
                      for x in b], dtype=bool)
    kept = b[~again]
    issued = np.where(kept["issue_ns"] > 0, kept["issue_ns"], kept["start_ns"]).astype(np.int64)
    us = (kept["complete_ns"].astype(np.int64) - issued) // 1000
    slots = np.floor(np.log2(np.maximum(us, 1))).astype(int)
    want = {1 << s if s else 0: int(c) for s, c in enumerate(np.bincount(slots)) if c}
    got: dict[int, int] = {}
    for h in hists.values():
        for low, n in h.items():
            if n:
                got[low] = got.get(low, 0) + n
    assert got == want


def test_interval_series_adds_up_to_the_device(run):
    # WHEN the device is shown per 10 ms
    text = iowitness("report", str(run["trace"]), "--no-pager", "--wide", "--interval", "10ms").stdout
    table = text.split("device per 10.0 ms", 1)[1]
    rows = re.findall(rf"^{run['device']}\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", table, re.M)
    assert rows
    # THEN w/s and wkB/s over the intervals add up to the trace's requests and bytes
    recorded = _records(run)
    writes = sum(float(r[2]) * 0.01 for r in rows)
    written = sum(float(r[4]) * 1024 * 0.01 for r in rows)
    assert round(writes) == len(recorded)
    assert abs(written - int(recorded["bytes"].sum())) < 1024
    # and to no more than /proc/diskstats counted over the whole run
    assert COUNT * BS <= written <= run["diskstats"]["write_bytes"] + 1024
    bad = iowitness("report", str(run["trace"]), "--interval", "soon", check=False)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--interval" in bad.stderr


def test_html_has_the_interval_chart(run):
    out = run["tmp"] / "r.html"
    iowitness("report", str(run["trace"]), "--html", str(out), "--interval", "20ms")
    page = out.read_text()
    assert 'data-chart="device-intervals"' in page and "<svg" in page and "biolatency" in page


def test_perfetto_export_counts_against_dd_and_the_block_records(run):
    out = run["tmp"] / "dd.perfetto-trace"
    iowitness("export", str(run["trace"]), "--perfetto", str(out))
    decoded = perfetto_trace.read(out)
    assert decoded.errors == []
    # THEN dd's 64 writes are 64 slices named write on its thread, 65,536 bytes each at offsets 0, 64 KiB, ...
    writes = [s for s in decoded.slices if decoded.thread_of(s.track) is not None and s.name == "write"]
    assert len(writes) == COUNT
    assert sorted(s.args["offset"] for s in writes) == [k * BS for k in range(COUNT)]
    assert {s.args["bytes"] for s in writes} == {BS} and all(s.dur > 0 for s in writes)
    # and the block requests are slices on the device's tracks, one per recorded data request
    blocks = [s for s in decoded.slices if decoded.track_name(s.track).startswith(f"block {run['device']}")]
    recorded = _records(run)
    assert sorted((s.args["sector"], s.args["bytes"]) for s in blocks if s.name == "write" and s.args["bytes"]) == \
        sorted(zip(recorded["sector"].tolist(), recorded["bytes"].tolist()))
    # and the device's write counter adds up to the bytes of those requests
    names = {u: t["name"] for u, t in decoded.tracks.items()}
    counter = next(u for u, n in names.items() if n == f"{run['device']} write B/s")
    assert sum(v for _, v in decoded.counters[counter]) // 10 == int(recorded["bytes"].sum())
    depth = next(u for u, n in names.items() if n == f"{run['device']} queue depth")
    assert max(v for _, v in decoded.counters[depth]) >= 1 and decoded.counters[depth][-1][1] == 0


def test_perfetto_export_of_fio_libaio_at_depth_8(tmp_path):
    """Asynchronous requests of one thread overlap: each must still be one slice, on a track
    where slices nest; fio's own count of its I/Os is the ground truth."""
    fio = require_tool("fio")
    import json
    import subprocess

    with loop_ext4(64) as (_, mnt):
        trace, out = tmp_path / "fio.iwt", tmp_path / "fio.json"
        # GIVEN fio writing 4 MiB in 64 KiB O_DIRECT requests, 8 in flight, through libaio
        proc = subprocess.run([*IOWITNESS, "run", "-q", "-o", str(trace), "--", fio, "--name=aio",
                               f"--filename={mnt}/a.bin", "--rw=randwrite", "--bs=64k", "--size=4m",
                               "--ioengine=libaio", "--iodepth=8", "--direct=1", "--output-format=json",
                               f"--output={out}"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    ios = sum(j["write"]["total_ios"] for j in json.loads(out.read_text())["jobs"])
    assert ios == 64
    # WHEN it is exported and read back with Perfetto's definitions
    exported = tmp_path / "fio.perfetto-trace"
    iowitness("export", str(trace), "--perfetto", str(exported))
    decoded = perfetto_trace.read(exported)
    # THEN the file is well formed and each of fio's writes is one slice of 65,536 bytes
    assert decoded.errors == []
    writes = [s for s in decoded.slices if decoded.thread_of(s.track) is not None and s.name == "aio_write"]
    assert len(writes) == ios and {s.args["bytes"] for s in writes} == {BS}
    assert sorted(s.args["offset"] for s in writes) == [k * BS for k in range(ios)]   # randwrite: each block once
    # overlapping requests of the thread sit on child tracks, never two at once on one track
    by_track: dict[int, list] = {}
    for s in writes:
        by_track.setdefault(s.track, []).append((s.ts, s.ts + s.dur))
    for spans in by_track.values():
        spans.sort()
        assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:]))
    assert len(by_track) > 1
