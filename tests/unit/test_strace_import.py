"""`iowitness import`: real strace runs of known_io (tests/workloads/known_io.c) into traces.

known_io logs every call it makes on its target (op, thread, fd, offset, bytes asked, return,
flags) itself: that log is the ground truth each imported call is checked against, field for
field, offsets included (strace prints no file position for read and write: the importer
rebuilds it). strace traces its own child without root, so these tests need no BPF.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from iowitness.analysis.read.run import load
from tests.support.cli import iowitness
from tests.support.workload import build_known_io, read_truth

U64 = 2**64


def _strace(tmp_path: Path, *flags: str) -> tuple[Path, Path, Path]:
    """known_io under strace with `flags`; (strace -o name, target, known_io's log)."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed (scripts/setup.sh installs it)")
    exe = build_known_io()
    work, log, out = tmp_path / "t", tmp_path / "log.jsonl", tmp_path / "run.strace"
    work.mkdir()
    proc = subprocess.run([strace, *flags, "-o", str(out), str(exe), str(work), str(log)],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0 and "ptrace" in proc.stderr:
        pytest.skip(f"strace cannot trace here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    return out, work / "target.dat", log


def _calls(trace) -> Counter:
    ev = trace.events
    return Counter(zip(ev["syscall"].astype(str), ev["tid"].astype(int), ev["fd"].astype(int),
                       ev["offset"].astype(int), ev["requested"].astype(int), ev["ret"].astype(int),
                       ev["flags"].astype(int)))


def _truth(log: Path) -> Counter:
    return Counter((r["op"], r["tid"], r["fd"], r["offset"], r["requested"], r["ret"], r["flags"])
                   for r in read_truth(log))


@pytest.mark.parametrize("flags", [
    ("-f", "-ttt", "-T", "-y"),
    ("-f", "-ttt", "-T", "-yy", "-s", "4096"),
    ("-ff", "-ttt", "-T", "-y"),          # one file per process: run.strace.PID
], ids=["f-y", "f-yy", "ff"])
def test_every_imported_call_equals_known_ios_own_log(tmp_path, flags):
    # GIVEN known_io run under strace (threads, a fork, dup'ed fds sharing a position, a
    # short read, a failed call), and the log known_io wrote of its own calls
    out, target, log = _strace(tmp_path, *flags)

    # WHEN the strace output is imported, on the target file only
    trace_path = tmp_path / "run.iwt"
    iowitness("import", str(out), "-o", str(trace_path), "--file", str(target))
    trace = load(trace_path)

    # THEN every call is there once, with the same thread, fd, offset, size, return and flags
    assert _calls(trace) == _truth(log)
    # ... the process and the forked child apart, the thread inside its process
    truth = read_truth(log)
    assert set(zip(trace.events["tgid"].astype(int), trace.events["tid"].astype(int))) == \
        {(r["pid"], r["tid"]) for r in truth}
    # ... and the trace names its backend, and its command when strace kept it whole
    assert trace.meta["backend"] == "strace"
    if "-s" in flags:
        assert trace.meta["command"][1:] == [str(target.parent), str(log)]
    else:
        assert trace.meta["strace"]["command_cut"]


def test_terminal_output_with_pid_brackets_reads_the_same(tmp_path):
    # GIVEN strace writing to its stderr, as on a terminal: other processes' lines as "[pid N] "
    strace = shutil.which("strace") or pytest.skip("strace is not installed")
    exe = build_known_io()
    work, log, out = tmp_path / "t", tmp_path / "log.jsonl", tmp_path / "stderr.strace"
    work.mkdir()
    with open(out, "w") as err:
        done = subprocess.run([strace, "-f", "-ttt", "-T", "-y", str(exe), str(work), str(log)],
                              stderr=err, timeout=60)
    assert done.returncode == 0
    assert "[pid " in out.read_text()

    # WHEN imported
    iowitness("import", str(out), "-o", str(tmp_path / "run.iwt"), "--file", str(work / "target.dat"))

    # THEN the calls are known_io's, as with -o
    assert _calls(load(tmp_path / "run.iwt")) == _truth(log)


def test_report_says_what_strace_cannot_see(tmp_path):
    # GIVEN an imported known_io run
    out, target, _ = _strace(tmp_path, "-f", "-ttt", "-T", "-y")
    trace = tmp_path / "run.iwt"
    iowitness("import", str(out), "-o", str(trace), "--file", str(target))

    # WHEN it is reported as text and as JSON
    text = iowitness("report", str(trace)).stdout
    machine = json.loads(iowitness("report", "--json", str(trace)).stdout)

    # THEN both say the backend, that latencies are inflated, and that the device view and
    # the observer's cost are not available, instead of showing numbers for them
    assert "backend: strace" in text
    assert "no device view: a trace made by strace holds no block I/O" in text
    assert "observer cost not available (strace import)" in text
    assert any("inflated" in w and "no device view" in w for w in machine["warnings"])


def test_lines_a_process_interrupts_are_joined(tmp_path):
    # GIVEN the shapes strace writes when two threads interleave, a signal arrives, a call never
    # returns and a process exits (strace 6.1's words; the name holds an escaped '>')
    text = "\n".join([
        '10 1700000000.000001 openat(AT_FDCWD</d>, "f", O_RDWR|O_CREAT|O_APPEND, 0644) = 3</d/a\\76b> <0.000010>',
        '10 1700000000.000002 write(3</d/a\\76b>, "x=\\"1\\", y"..., 100 <unfinished ...>',
        '11 1700000000.000003 --- SIGALRM {si_signo=SIGALRM, si_code=SI_KERNEL} ---',
        '10 1700000000.000010 <... write resumed>) = 100 <0.000008>',
        '10 1700000000.000011 read(3</d/a\\76b>, 0x55, 4096) = -1 EBADF (Bad file descriptor) <0.000002>',
        '10 1700000000.000012 fsync(3</d/a\\76b> <unfinished ...>',
        '10 1700000000.000020 +++ killed by SIGKILL +++',
    ]) + "\n"
    src = tmp_path / "lines.strace"
    src.write_text(text)

    # WHEN imported
    iowitness("import", str(src), "-o", str(tmp_path / "t.iwt"))
    ev = load(tmp_path / "t.iwt").events

    # THEN the write keeps its first half's start and its second half's return and latency, the
    # failed read is -EBADF, the fsync that never returned is absent, the path is unescaped
    assert list(ev["syscall"].astype(str)) == ["openat", "write", "read"]
    write = ev.iloc[1]
    assert (int(write["start_ns"]), int(write["latency_ns"]), int(write["ret"]), int(write["offset"])) == \
        (1700000000000002000, 8000, 100, 0)
    assert int(ev.iloc[2]["ret"]) == -9
    assert set(ev["path"].astype(str)) == {"/d/a>b"}


@pytest.mark.parametrize("content, words", [
    ("hello\n", "not strace output"),
    ("10 read(3</d/f>, \"\", 4) = 0\n" * 3, "without -ttt timestamps"),
])
def test_a_file_that_is_not_strace_ttt_output_is_refused_in_one_line(tmp_path, content, words):
    # GIVEN a file that is not strace -ttt output
    src = tmp_path / "x.strace"
    src.write_text(content)

    # WHEN imported
    proc = iowitness("import", str(src), "-o", str(tmp_path / "t.iwt"), check=False)

    # THEN one line says why and how to record, and no trace is left
    assert proc.returncode == 6 and words in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert "strace -f -ttt -T -y" in proc.stderr
    assert not (tmp_path / "t.iwt").exists()


def test_a_missing_strace_file_is_one_line(tmp_path):
    proc = iowitness("import", str(tmp_path / "nothing"), "-o", str(tmp_path / "t.iwt"), check=False)
    assert proc.returncode == 4 and "no such strace output" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_the_benchmarks_output_is_its_writes_to_a_terminal_or_pipe_not_to_its_files(tmp_path):
    # GIVEN dd under strace -yy (fds on devices decorated twice: `2</dev/null<char 1:3>>`);
    # dd writes its data through fd 1 (of=) and its figures to fd 2
    strace = shutil.which("strace") or pytest.skip("strace is not installed")
    data, raw = tmp_path / "dd.out", tmp_path / "dd.strace"
    subprocess.run([strace, "-f", "-ttt", "-T", "-yy", "-s", "4096", "-o", str(raw), "dd", "if=/dev/zero",
                    f"of={data}", "bs=4k", "count=16"], check=True, capture_output=True, timeout=60)

    # WHEN imported, on the data file only
    iowitness("import", str(raw), "-o", str(tmp_path / "dd.iwt"), "--file", str(data))
    trace = load(tmp_path / "dd.iwt")

    # THEN the output is dd's report alone, its 16 writes are the file's, and check reads dd's claim
    assert "16+0 records out\n65536 bytes" in trace.output["stderr"] and trace.output["stdout"] == ""
    writes = trace.events[trace.events["syscall"].astype(str) == "write"]
    assert (len(writes), int(writes["ret"].sum()), set(writes["fd"])) == (16, 65536, {1})
    assert "dd write" in iowitness("check", str(tmp_path / "dd.iwt"), check=False).stdout


def test_the_benchmarks_first_process_is_the_one_whose_exec_gave_the_command(tmp_path):
    # GIVEN known_io under strace -f: its first line is its exec, with its pid
    raw, _, _ = _strace(tmp_path, "-f", "-ttt", "-T", "-y")
    execve = next(line for line in raw.read_text().splitlines() if " execve(" in line)
    # WHEN imported
    iowitness("import", str(raw), "-o", str(tmp_path / "run.iwt"))
    trace = load(tmp_path / "run.iwt")
    # THEN the trace's pid is that process, as a run's is the process it started (fio's layout
    # is told from its jobs by it: under import its layout writes were taken for the job's, and
    # a randrw job's write rate was judged over them, CANNOT JUDGE at 0.23x)
    assert trace.meta["pid"] == int(execve.split()[0]), (trace.meta["pid"], execve)
