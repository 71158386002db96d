"""Names and paths from what was recorded: a relative path of the benchmark's command line
(IOzone's -F, fio's job file and its filename=/directory=) means the file in the benchmark's
working directory, whatever directory `iowitness check` runs in; fio jobs sharing one file are
told apart by their processes.

Real IOzone and fio runs under real probes; the ground truth is what each tool printed (IOzone's
per-child lines, fio's per-job bytes) and the paths the workload was given.
"""

from __future__ import annotations

import os

from iowitness.analysis.read.run import load
from tests.conftest import require_tool
from tests.support.cli import iowitness

MIB = 1024 * 1024
EXIT_AGREES = 0   # iowitness/commands/check.py


def _pinned_to_one_cpu():
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def test_iozone_child_lines_do_not_depend_on_the_directory_check_runs_in(workdir, tmp_path):
    # GIVEN IOzone -C in throughput mode, its files given relative to its cwd (-F f1 f2), pinned
    # to one CPU so that the two children differ (one finishes, the other is stopped mid-file)
    iozone = require_tool("iozone")
    out = tmp_path / "iozone.iwt"
    iowitness("run", "-q", "-o", str(out), "--", iozone, "-C", "-t", "2", "-i0", "-s", "8m", "-r", "4k",
              "-F", "f1", "f2", cwd=workdir, preexec_fn=_pinned_to_one_cpu)
    assert load(out).meta["cwd"] == str(workdir)
    # WHEN `check` runs in the benchmark's directory and in another one
    here = iowitness("check", str(out), cwd=workdir, check=False)
    elsewhere = iowitness("check", str(out), cwd="/", check=False)
    # THEN both say the same, and each child line fits its own child (child i is the i-th -F
    # file, IOzone's order)
    assert here.stdout == elsewhere.stdout
    assert here.returncode == elsewhere.returncode
    children = [line for line in here.stdout.splitlines() if "(child " in line]
    assert len(children) == 4 and all(line.startswith(("AGREES", "EXPLAINED")) for line in children), children


SHARED_JOBS = """\
[global]
directory=sub
filename=data.bin
size=64m
bs=64k
ioengine=psync

[writer]
rw=write
end_fsync=1

[reader]
stonewall
rw=read
"""


def test_fio_jobs_on_one_file_are_named_by_their_processes(workdir, tmp_path):
    # GIVEN a fio job file in the benchmark's directory: a write job, then (stonewall) a read
    # job on the same file, both relative to fio's cwd (directory=sub, filename=data.bin)
    fio = require_tool("fio")
    (workdir / "sub").mkdir()
    (workdir / "shared.fio").write_text(SHARED_JOBS)
    out = tmp_path / "fio.iwt"
    iowitness("run", "-q", "-o", str(out), "--", fio, "--output-format=json", "shared.fio", cwd=workdir)
    trace = load(out)
    # WHEN its phases are named and its claims checked from another directory
    phases = trace.phases()
    done = iowitness("check", str(out), cwd="/", check=False)
    # THEN the write job's phase is the writer's and the read job's the reader's, each of the
    # whole 64 MiB on sub/data.bin, each in its own process
    data = str(workdir / "sub" / "data.bin")
    jobs = phases[phases["benchmark_name"].isin(["writer write", "reader read"])]
    assert sorted(jobs["benchmark_name"]) == ["reader read", "writer write"], phases[["benchmark_name", "path"]]
    assert set(jobs["path"].astype(str)) == {data} and jobs["bytes"].tolist() == [64 * MIB] * 2
    assert jobs["tgid"].nunique() == 2
    # AND every claim of both jobs is judged, and check exits 0 (the issue: exit 1 on a healthy run)
    lines = done.stdout.splitlines()
    for job in ("writer write", "reader read"):
        mine = [line for line in lines if f" {job}" in line]
        assert len(mine) == 2 and not any(line.startswith(("CANNOT", "DISAGREES")) for line in mine), lines
    assert done.returncode == EXIT_AGREES, done.stdout


def test_a_child_that_exits_before_the_drain_has_its_relative_path_made_absolute(tmp_path):
    # GIVEN a shell that changes into sub/ and forks dd, which writes rel.dat (a relative path)
    # and exits at once, long before the collector reads its open; the shell lives on
    work = tmp_path / "w"
    (work / "sub").mkdir(parents=True)
    out = tmp_path / "t.iwt"
    iowitness("run", "-q", "-o", str(out), "--file", str(work / "sub"), "--", "sh", "-c",
              f"cd {work}/sub && dd if=/dev/zero of=rel.dat bs=4k count=4 2>/dev/null; sleep 0.5")
    # THEN the file is named by its absolute path (the directory dd started in: its parent's),
    # never the bare "rel.dat" that /proc/PID/cwd of a process gone could not resolve
    events = load(out).events
    assert (work / "sub" / "rel.dat").stat().st_size == 16384
    assert set(events["path"].astype(str)) == {str(work / "sub" / "rel.dat")}
