"""The probe's memo of the last target call's fd (probes/targets.bpf.h, fd_memo_*) never takes
another file for the target: a target's fd closed (by close, dup2, close_range, an exec's
close-on-exec, a process's exit) and the same fd number given to a file that is not a target.

Ground truth is the workload's own count of the 1-byte preads it makes on the target (the
other files get 2-byte preads): the trace must hold exactly those, and no 2-byte pread. The
workload runs pinned to one CPU, so every call meets the memo of the one before; each
closed struct file is likely given to the next open (the kernel's per-CPU slab lists), which
is what a memo keyed only by address would take for the target."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

# one file per step; each step's target preads are counted by the workload and printed
WORKLOAD = textwrap.dedent(r"""
    import ctypes, os, sys

    target, other, after_exec = sys.argv[1], sys.argv[2], sys.argv[3]
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    N = 40
    count = 0

    def on_target(fd):
        global count
        for i in range(N):
            assert os.pread(fd, 1, i) == b"t"
        count += N

    def on_other(fd):
        for i in range(N):
            assert os.pread(fd, 2, 2 * i) == b"oo"

    # close, then the same fd number for another file
    fd = os.open(target, os.O_RDONLY)
    on_target(fd)
    os.close(fd)
    o = os.open(other, os.O_RDONLY)
    assert o == fd
    on_other(o)
    os.close(o)
    # the target again on that fd: recorded again
    fd = os.open(target, os.O_RDONLY)
    on_target(fd)
    # dup2 of another file over the target's fd
    o = os.open(other, os.O_RDONLY)
    os.dup2(o, fd)
    on_other(fd)
    os.close(fd)
    os.close(o)
    # close_range (the syscall itself: 436 on x86-64)
    fd = os.open(target, os.O_RDONLY)
    on_target(fd)
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.syscall(436, fd, fd, 0) == 0, ctypes.get_errno()
    o = os.open(other, os.O_RDONLY)
    assert o == fd
    on_other(o)
    os.close(o)
    # a child's exit drops its whole fd table; the next child's table and files come after
    for step in ("target", "other"):
        pid = os.fork()
        if pid == 0:
            f = os.open(target if step == "target" else other, os.O_RDONLY)
            (on_target if step == "target" else on_other)(f)
            os._exit(0)
        os.waitpid(pid, 0)
    count += N
    # exec: the target's fd closed on exec, and the new program (static: no loader's opens and
    # closes before) opens another file on that number and makes 2-byte preads on it
    fd = os.open(target, os.O_RDONLY | os.O_CLOEXEC)
    on_target(fd)
    print(count, flush=True)
    os.execv(after_exec, [after_exec, other, str(fd)])
""")


# the program exec'd last: 40 2-byte preads of argv[1], which must open on fd argv[2]
AFTER_EXEC = textwrap.dedent(r"""
    #include <fcntl.h>
    #include <stdlib.h>
    #include <unistd.h>
    int main(int argc, char **argv)
    {
        char buf[2];
        int fd = open(argv[1], O_RDONLY);

        if (argc != 3 || fd != atoi(argv[2]))
            return 3;
        for (int i = 0; i < 40; i++)
            if (pread(fd, buf, 2, 2 * i) != 2)
                return 4;
        return 0;
    }
""")


@pytest.mark.kernel
def test_a_closed_targets_fd_given_to_another_file_is_never_taken_for_it(traced, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to load the probe")
    # GIVEN a target and another file, and a workload that reads the target on an fd, drops
    # the fd each way a process can and reads the other file on the same fd number
    target, other = tmp_path / "target.dat", tmp_path / "other.dat"
    target.write_bytes(b"t" * 4096)
    other.write_bytes(b"o" * 4096)
    script = tmp_path / "fds.py"
    script.write_text(WORKLOAD)
    source, after_exec = tmp_path / "after_exec.c", tmp_path / "after_exec"
    source.write_text(AFTER_EXEC)
    built = subprocess.run(["cc", "-static", "-O2", "-o", str(after_exec), str(source)], capture_output=True, text=True)
    if built.returncode != 0:
        pytest.skip(f"cannot build a static program (libc6-dev): {built.stderr.strip()[-200:]}")
    # WHEN it runs under iowitness watching the target only
    trace, proc = traced([sys.executable, str(script), str(target), str(other), str(after_exec)], "--file", str(target))
    preads = trace.events[trace.events["syscall"] == "pread64"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    # THEN the trace holds exactly the workload's preads of the target, every one 1 byte, and
    # none of the other file's (2 bytes)
    expected = sum(int(line) for line in proc.stdout.split())
    assert expected == 5 * 40
    assert len(preads) == expected, preads["requested"].value_counts().to_dict()
    assert set(preads["requested"].astype(int)) == {1}
    assert set(preads["path"].astype(str)) == {str(target)}
    # AND nothing was lost
    assert trace.lost == 0
