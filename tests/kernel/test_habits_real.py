"""Real runs for issue 20's matching and habits: IOzone -a where the record size reaches the
file size, a fio job file with two jobs, `show --events` against strace on the same run, the
status line beside dd's own progress line, and the Python API's verdicts."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from pathlib import Path

from iowitness.analysis.judge import trace_verdicts as judged
from tests.conftest import require_tool
from tests.kernel.test_aio import direct_dir  # noqa: F401 (a fixture: O_DIRECT on tmp_path or a loop device)
from tests.support.cli import IOWITNESS, iowitness
from tests.support.strace import SYSCALLS, parse_strace

MIB = 1024 * 1024


def test_iozone_sweep_where_record_size_reaches_file_size(traced, direct_dir):
    # GIVEN an IOzone -a sweep over 1 and 2 MiB files with 1 and 2 MiB records: the 1 MiB
    # file is read in one record, so IOzone's prime read and its timed read are the same call.
    # -I (O_DIRECT): a 1 MiB read from the page cache takes ~50 µs, and IOzone's own clock
    # reads around it are then a few % of it, more under load; from the device it takes ms
    iozone = require_tool("iozone")
    trace, proc = traced([iozone, "-I", "-a", "-i0", "-i1", "-n", "1m", "-g", "2m", "-y", "1m", "-q", "2m",
                          "-f", str(direct_dir / "iozone.tmp")])
    # WHEN its table is judged, from Python as `report` does
    report = trace.report()
    verdicts = judged.verdicts(trace)
    # THEN each of the 12 claims (write, rewrite, read, reread for (1,1), (2,1), (2,2) MiB) is
    # about one phase of its own test, record size and file size, each phase claimed once
    assert [(v.claim.file_size // MIB, v.claim.record_size // MIB) for v in verdicts[::4]] == [(1, 1), (2, 1), (2, 2)]
    phases = report.phases.set_index("phase")
    for v in verdicts:
        assert len(v.phases) == 1, (v.claim.test, v.phases)
        row = phases.loc[v.phases[0]]
        assert row["benchmark_name"] == v.claim.test
        assert row["record_size"] == v.claim.record_size
        # the prime read is out of the phase's bytes: the bytes are the file's, as IOzone counts
        assert row["bytes"] == v.claim.file_size, (v.claim.test, v.claim.file_size, row["bytes"])
    assert sorted(p for v in verdicts for p in v.phases) == sorted(set(p for v in verdicts for p in v.phases))
    # AND every claim fits its phase (before, the 2 MiB file's read and reread attached to the
    # 1 MiB file's phases and could not be judged)
    assert all(v.ok for v in verdicts), [(v.claim.test, v.claim.file_size, v.verdict, v.ratio) for v in verdicts]
    # AND the Python API gives the same verdicts as a table
    table = report.verdicts
    assert list(table["verdict"]) == [v.verdict for v in verdicts]
    assert list(table["printed"]) == [v.claim.value for v in verdicts]


def test_fio_job_file_two_jobs_has_no_phase_for_fios_own_files(traced, workdir, tmp_path):
    # GIVEN a fio job file with two jobs, a bandwidth log, and fio's JSON written to --output
    fio = require_tool("fio")
    job = workdir / "two.fio"
    job.write_text(f"[global]\nsize=1m\nbs=4k\nioengine=psync\ndirectory={workdir}\n\n"
                   "[writer]\nrw=write\nwrite_bw_log=wlog\n\n[reader]\nrw=read\n")
    out = workdir / "out.json"
    trace, _ = traced([fio, f"--output={out}", "--output-format=json", "two.fio"], cwd=workdir)
    events = trace.events
    # (the trace holds fio's reads of its job file and its writes of the output and the log)
    # (a file opened by a process that exits before the collector reads its /proc/PID/cwd
    # keeps the relative name it was opened by: fio's log, written by the job as it ends)
    own = {"two.fio", "out.json", "wlog_bw.1.log"}
    seen = {os.path.basename(p) for p in events["path"].astype(str)}
    assert own <= seen, seen
    # WHEN the phases are rebuilt (here, in another working directory than fio's)
    phases = trace.report().phases
    # THEN none is on fio's own files, and the jobs' phases carry the jobs' names
    assert not {os.path.basename(p) for p in phases["path"].astype(str)} & own
    named = dict(zip(phases["path"].astype(str) + " " + phases["benchmark_name"].astype(str), phases["bytes"]))
    assert named[f"{workdir}/writer.0.0 writer write"] == MIB
    assert named[f"{workdir}/reader.0.0 reader read"] == MIB
    assert set(phases["benchmark_name"]) <= {"writer write", "reader read", "fio layout"}
    # AND fio's own JSON, given with --claims, is judged on the jobs' phases
    verdicts = judged.verdicts(trace, out.read_text())
    by_test = {v.claim.test: phases.set_index("phase").loc[v.phases, "path"].astype(str).tolist() for v in verdicts}
    # (each job's throughput and, since issue 21, its latency figures: both on the job's own file)
    assert by_test == {"writer write": [f"{workdir}/writer.0.0"], "reader read": [f"{workdir}/reader.0.0"],
                       "writer write latency": [f"{workdir}/writer.0.0"],
                       "reader read latency": [f"{workdir}/reader.0.0"]}
    # AND with no output captured, the hint says what happened in this run (not "attach")
    why = trace.report().verdicts.attrs["why"]
    assert "printed nothing" in why and "attach" not in why
    assert why.endswith(f"it wrote its results to {out} (--output): give them with --claims {out}")


def _event_lines(text: str) -> list[list[str]]:
    lines = text.splitlines()
    assert lines[0].startswith("process") and "latency (µs)" in lines[0]
    return [line.split() for line in lines[1:]]


def test_show_events_agrees_with_strace_on_the_same_run(traced, workdir, tmp_path):
    # GIVEN dd writing 16 x 64 KiB and reading them back, under strace, all under iowitness run
    strace = require_tool("strace")
    dd = require_tool("dd")
    target = workdir / "out"
    log = tmp_path / "strace.txt"
    script = (f"{dd} if=/dev/zero of={target} bs=64k count=16 status=none && "
              f"{dd} if={target} of=/dev/null bs=16k status=none")
    trace, _ = traced([strace, "-f", "-qq", "-y", "-e", "trace=" + ",".join(SYSCALLS), "-o", str(log),
                       "--", "sh", "-c", script])
    path = str(trace.events.loc[trace.events["path"].astype(str).str.endswith("/out"), "path"].iloc[0])
    # WHEN show --events prints the calls on that file
    shown = _event_lines(iowitness("show", "--events", "--file", path, str(tmp_path / "trace-0.iwt")).stdout)
    # THEN each line is one call strace saw, call for call and byte for byte
    truth = parse_strace(log.read_text(encoding="utf-8", errors="surrogateescape"), os.path.realpath(path))
    counts, moved = {}, {}
    for fields in shown:
        call, result = fields[3], fields[7]
        counts[call] = counts.get(call, 0) + 1
        if call in ("read", "write"):
            moved[call] = moved.get(call, 0) + int(result)
        assert fields[-1] == path
    assert counts == truth["counts"], (counts, truth)
    assert moved == {"write": 16 * 65536, "read": 16 * 65536} == truth["bytes"]
    # AND the filters combine: only the reads, only in one phase
    reads = _event_lines(iowitness("show", "--events", "-e", "read", "--file", "out",
                                   str(tmp_path / "trace-0.iwt")).stdout)
    assert len(reads) == truth["counts"]["read"]
    phase = int(reads[0][9])
    one = _event_lines(iowitness("show", "--events", "--phase", str(phase), "-e", "read",
                                 str(tmp_path / "trace-0.iwt")).stdout)
    # (64 reads of 16 KiB, then the read at the end of the file that returns 0)
    assert [f[5] for f in one] == [str(16384 * k) for k in range(65)]
    assert [f[7] for f in one] == ["16384"] * 64 + ["0"]


def _run_in_a_terminal(argv: list[str], cwd: Path, timeout: float = 60) -> str:
    """Run argv with stdout and stderr on a new pseudo-terminal; everything it showed."""
    main, side = pty.openpty()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=side, stderr=side, cwd=cwd, close_fds=True)
    os.close(side)
    seen = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(main, 65536)
                except OSError:   # EIO: every writer closed its side
                    break
                if not chunk:
                    break
                seen += chunk
            elif proc.poll() is not None:
                break
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(main)
    return seen.decode(errors="replace")


def test_status_line_stays_off_dds_progress_line(workdir, tmp_path):
    # GIVEN dd with status=progress (it rewrites its own line with \r every second) fed 64 KiB
    # a second for 6 s: past the moment the status line is first drawn (3 s)
    dd = require_tool("dd")
    feed = "for i in 1 2 3 4 5 6; do head -c 65536 /dev/zero; sleep 1; done"
    argv = [*IOWITNESS, "run", "-o", str(tmp_path / "t.iwt"), "--", "sh", "-c",
            f"{feed} | {dd} of={workdir / 'out'} bs=64k iflag=fullblock status=progress"]
    # WHEN it runs under iowitness on a terminal
    screen = _run_in_a_terminal(argv, tmp_path)
    # THEN dd's progress line is there, and from its first \r on, no status line was drawn over it
    first = screen.find("copied")
    assert first >= 0 and screen.count("copied") >= 3, screen
    after = screen[first:]
    assert "[iowitness]" not in after.split("records out")[0], after
    assert "\x1b[K" not in after.split("records out")[0], after
