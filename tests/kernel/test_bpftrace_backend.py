"""The bpftrace backend against the compiled probe, on identical real runs of IOzone and fio.

Each benchmark is run twice, once under each backend, with the same arguments on the same
file system. The ground truth for bytes is the benchmark itself (IOzone's file size, fio's
JSON io_bytes); the two traces must then agree call for call on what each call was (op,
offset, bytes asked, bytes done, flags, fd, file), phase for phase on bytes and calls, and
verdict for verdict. Latencies cannot be equal (two runs, and each observer times the call
from inside its own programs): the tolerance is stated where it is checked.
"""

from __future__ import annotations

import json
import shlex
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest

from iowitness.analysis import benchmarks
from iowitness.analysis.judge import match_claims as matching
from iowitness.analysis.read.run import load
from tests.conftest import require_tool
from tests.support.cli import IOWITNESS, iowitness

MIB = 1 << 20
CALL_FIELDS = ["syscall", "offset", "requested", "ret", "flags", "fd", "path"]
# per phase, the bpftrace trace's median call latency within this factor of the compiled
# probe's, either way. Why so wide: the two runs are separate (a page-cache read takes 5-7 µs
# and a loaded two-CPU machine moves that by tens of per cent), and bpftrace's programs stamp
# the start after their fd-table walk and the end before their record, the compiled probe's
# at other points of theirs (docs/performance.md, "bpftrace backend")
MEDIAN_FACTOR = 2.0
# and below this many µs apart, any medians are close (a 2 µs call against a 4 µs one)
MEDIAN_SLACK_US = 5.0


@pytest.fixture(autouse=True)
def _bpftrace():
    if not shutil.which("bpftrace"):
        pytest.skip("bpftrace is not installed (scripts/setup.sh installs it)")


def _run(tmp_path, backend: str, command: list[str]):
    out = tmp_path / f"{backend}.iwt"
    proc = iowitness("run", "-q", "--backend", backend, "-o", str(out), "--", *command)
    return load(out), proc


def _calls(trace):
    events = trace.events.sort_values("start_ns", kind="stable")
    return events[CALL_FIELDS].astype({"path": str}).reset_index(drop=True)


def _verdicts(trace):
    text = trace.output.get("stdout", "") + trace.output.get("stderr", "")
    source, claims = benchmarks.claims_from(text, trace.meta["command"])
    found = matching.match(trace.report(), claims, source, trace.meta["command"], 0.05, trace.missing, trace=trace)
    # the throughput claims: fio's latency claims (its clat against the traced call times, a few
    # µs a cached call) came out 'agrees' under one backend and 'explained' under the other in
    # one try of three here; whether two runs of one backend differ as much is not measured.
    # Latencies are compared through the medians instead, with their tolerance stated above
    return sorted((v.claim.test, v.verdict) for v in found if not v.claim.test.endswith(" latency"))


def _medians_close(a, b, names=None) -> list[str]:
    far = []
    for name, x, y in zip(a["benchmark_name"], a["lat_p50_us"], b["lat_p50_us"]):
        if names is not None and name not in names:
            continue
        if abs(x - y) > MEDIAN_SLACK_US and not (1 / MEDIAN_FACTOR <= y / x <= MEDIAN_FACTOR):
            far.append(f"{name}: libbpf {x:.1f} µs, bpftrace {y:.1f} µs")
    return far


def _compare(libbpf, bpftrace, latency_phases=None, same_verdicts=True):
    """What must be equal between the two traces of identical runs."""
    assert bpftrace.meta["backend"] == "bpftrace" and libbpf.meta.get("backend", "libbpf") == "libbpf"
    assert bpftrace.counters["lost_events"] == 0
    # by name: concurrent jobs (fio's) start in either order from run to run
    pa, pb = (t.phases().sort_values(["benchmark_name", "path"], kind="stable").reset_index(drop=True)
              for t in (libbpf, bpftrace))
    assert list(pa["benchmark_name"]) == list(pb["benchmark_name"])
    assert list(pa["bytes"]) == list(pb["bytes"]) and list(pa["ops"]) == list(pb["ops"])
    assert list(pa["pattern"]) == list(pb["pattern"])
    if same_verdicts:
        # each claim holds under both or under neither; AGREES against EXPLAINED is the run's
        # timing, not the backend's (a 16 MiB cached re-read of some ms judged on its calls in one
        # run and by the calls around it in the other: a fresh-clone CI run, once)
        held = [[(t, v in ("agrees", "explained")) for t, v in _verdicts(trace)] for trace in (libbpf, bpftrace)]
        assert held[0] == held[1], (_verdicts(libbpf), _verdicts(bpftrace))
    else:
        assert [t for t, _ in _verdicts(libbpf)] == [t for t, _ in _verdicts(bpftrace)]
    assert not _medians_close(pa, pb, latency_phases), _medians_close(pa, pb, latency_phases)
    return pa, pb


def test_iozone_same_calls_phases_and_verdicts(tmp_path, workdir):
    # GIVEN IOzone's write, rewrite, read, reread, random read and random write of a 16 MiB file
    # in 64 KiB records, run once under each backend
    iozone = require_tool("iozone")
    command = [iozone, "-i0", "-i1", "-i2", "-s", "16m", "-r", "64k", "-f", str(workdir / "iozone.tmp")]
    libbpf, _ = _run(tmp_path, "libbpf", command)
    (workdir / "iozone.tmp").unlink(missing_ok=True)
    bpftrace, _ = _run(tmp_path, "bpftrace", command)
    # WHEN the traces are compared
    # THEN every call is the same call (IOzone's random offsets come from a fixed seed)
    a, b = _calls(libbpf), _calls(bpftrace)
    assert len(a) == len(b) and (a == b).all(axis=None), (a[(a != b).any(axis=1)].head(), b[(a != b).any(axis=1)].head())
    # AND the six phases have IOzone's 16 MiB each, and the same verdicts
    # (latencies of the reads only: IOzone's write passes met the page cache and write-back
    # the previous run left, and their median went from 152 µs under the compiled probe to
    # 15 µs under bpftrace in one pair of runs here; an observer adds time, it cannot take
    # nine tenths away, so that was the run, not the backend)
    _compare(libbpf, bpftrace, latency_phases={"read", "reread", "random read"})
    names = list(bpftrace.phases()["benchmark_name"])
    assert names == list(libbpf.phases()["benchmark_name"])
    assert names == ["write", "rewrite", "read", "reread", "random read", "random write"]
    pa = libbpf.phases()
    assert set(pa["bytes"]) == {16 * MIB}


def _cached_file(path, size: int) -> None:
    """A file of `size` bytes, written and read back once: in the page cache for the next reader."""
    with open(path, "wb") as f:
        f.write(np.random.default_rng(7).integers(0, 256, size, dtype=np.uint8).tobytes())
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


def test_fio_same_phases_bytes_and_verdicts(tmp_path, workdir):
    # GIVEN fio with a pwrite job and then a read job (each job runs in a process forked by
    # fio), run once under each backend. The reader's file is made and read by the test before
    # each run and fio is told to keep it cached (--invalidate=0), the jobs run one after the
    # other (--stonewall): when fio laid the file out itself, one run in three read it back
    # from the disk (26.7 µs a call against 2.7 µs cached, the device view said 16 MiB read),
    # and the latencies then differed by the run, not by the backend. 128 MiB: cached, 16 MiB
    # took 3 ms under the compiled probe, too short to judge (10 ms), and 28 ms under bpftrace
    fio = require_tool("fio")
    command = [fio, "--output-format=json",
               "--name=alpha", "--rw=write", "--bs=4k", "--size=16m", "--ioengine=psync",
               f"--filename={workdir / 'alpha.dat'}",
               "--name=beta", "--stonewall", "--invalidate=0", "--rw=read", "--bs=16k", "--size=128m",
               "--ioengine=sync", f"--filename={workdir / 'beta.dat'}"]
    runs = {}
    for backend in ("libbpf", "bpftrace"):
        for f in workdir.iterdir():
            f.unlink()
        _cached_file(workdir / "beta.dat", 128 * MIB)
        runs[backend] = _run(tmp_path, backend, command)
    (libbpf, run_a), (bpftrace, run_b) = runs["libbpf"], runs["bpftrace"]
    # WHEN the traces are compared (the same claims, each on its job's phase; the verdicts not
    # compared here: under bpftrace fio's own clock takes in ~3x the traced call time (bpftrace's
    # cost falls between fio's clock reads and the call), and these 16-60 ms cached phases then
    # flipped one verdict between backends in about 1 run of 3 at the end of the session: an open
    # finding of issue 17, not a margin to widen. IOzone's verdicts are compared above)
    _compare(libbpf, bpftrace, same_verdicts=False)
    # THEN each job's phase holds the bytes fio says it moved, under either backend
    for trace, proc in ((libbpf, run_a), (bpftrace, run_b)):
        jobs = {j["jobname"]: j for j in json.loads(proc.stdout)["jobs"]}
        phases = trace.phases().set_index("benchmark_name")
        assert phases.loc["alpha write", "bytes"] == jobs["alpha"]["write"]["io_bytes"] == 16 * MIB
        assert phases.loc["beta read", "bytes"] == jobs["beta"]["read"]["io_bytes"] == 128 * MIB
    # AND the processes are the same tree: fio, and one forked process per job
    for trace in (libbpf, bpftrace):
        assert list(trace.processes["kind"]) == ["exec", "fork", "fork"]
    # AND the calls are the same calls
    a, b = _calls(libbpf), _calls(bpftrace)
    assert len(a) == len(b)
    for column in ("syscall", "requested", "ret", "offset", "path"):
        assert sorted(map(str, a[column])) == sorted(map(str, b[column])), column


def test_lost_records_are_counted_from_bpftrace(tmp_path, workdir):
    # GIVEN dd writing 60,000 records of 512 bytes under bpftrace with a perf buffer of one page
    # per CPU, and bpftrace stopped (SIGSTOP) while dd runs, so that the buffer must overflow
    # (left running, it drained one page fast enough on a quiet machine and lost nothing)
    dd = f"dd if=/dev/zero of={shlex.quote(str(workdir / 'out'))} bs=512 count=60000"
    command = ["sh", "-c", "tracer=$(pgrep -n -x bpftrace) || exit 9; kill -STOP $tracer; "
               f"trap 'kill -CONT $tracer' EXIT; {dd}"]
    out = tmp_path / "small.iwt"
    proc = iowitness("run", "-q", "--backend", "bpftrace", "--ring-buffer-mb", "0.001", "-o", str(out),
                     "--", *command, check=False)
    trace = load(out)
    # WHEN the records that arrived are added to the ones bpftrace said it lost
    writes = int((trace.events["syscall"] == "write").sum())
    lost = trace.counters["lost_events"]
    # THEN nothing is missing silently: every write dd made (its own count: 60000+0 records
    # out) is either in the trace or counted lost, and the opens and close make up the rest
    assert "60000+0 records out" in proc.stderr + trace.output.get("stderr", "")
    assert lost > 0, "the small buffer lost nothing: the test no longer tests loss"
    assert writes + lost >= 60000
    assert writes + lost <= 60000 + 3   # at most dd's open, close and ftruncate besides
    # AND the report says so
    report = iowitness("report", str(out)).stdout
    assert f"lost events: {lost:,}" in report.splitlines()[0]


def test_attach_by_file_records_any_process(tmp_path, workdir):
    # GIVEN attach --file on a file that does not exist yet, under bpftrace
    target = workdir / "later.dat"
    out = tmp_path / "attach.iwt"
    attach = subprocess.Popen([*IOWITNESS, "attach", "--backend", "bpftrace", "--file", str(target),
                               "-o", str(out), "--duration", "120"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        # WHEN another process creates and writes it once bpftrace is attached (attach says so)
        for line in attach.stderr:
            if "attached;" in line:
                break
        data = np.arange(3 * 4096, dtype=np.uint8).tobytes()
        with open(target, "wb") as f:
            f.write(data[:8192])
            f.flush()
            f.write(data[8192:])
        attach.send_signal(signal.SIGINT)
        attach.communicate(timeout=60)
    finally:
        if attach.poll() is None:
            attach.kill()
            attach.wait()
    trace = load(out)
    # THEN its writes are in the trace, with their bytes, and nothing of other files
    writes = trace.events[trace.events["syscall"] == "write"]
    assert int(writes["ret"].sum()) == len(data)
    assert list(writes["offset"]) == [0, 8192]
    assert set(trace.events["path"].astype(str)) == {str(target)}


DOCTOR_WITHOUT_OBJECT = """
import sys
from pathlib import Path
import iowitness.probes
iowitness.probes.OBJECT = Path("/nonexistent/iowitness.bpf.o")
from iowitness.cli import main
sys.argv = ["iowitness", "doctor"]
sys.exit(main())
"""


def test_doctor_recommends_bpftrace_only_where_the_compiled_probe_cannot_load():
    # GIVEN this machine, where the compiled probe loads
    proc = iowitness("doctor")
    # THEN doctor does not recommend bpftrace
    assert "bpftrace backend not needed" in proc.stdout
    # GIVEN the same machine without the compiled object (an install without clang, say)
    without = subprocess.run([sys.executable, "-c", DOCTOR_WITHOUT_OBJECT], capture_output=True, text=True,
                             timeout=300)
    # THEN doctor tried bpftrace for real and recommends it, in its last two lines
    lines = without.stdout.strip().splitlines()
    assert lines[-2].startswith("ok   bpftrace backend works here"), without.stdout + without.stderr
    assert lines[-1] == "this machine cannot load the compiled probe; it can trace with --backend bpftrace"
    assert without.returncode == 3 and "Traceback" not in without.stderr
