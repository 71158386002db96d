"""The probe's per-CPU fast path against ground truth: calls that sleep and move between CPUs,
threads on both CPUs at once, and --summary phases while the per-CPU memos are warm."""

from __future__ import annotations

import os
import sys
import textwrap

import numpy as np

KIB = 1024


def test_calls_that_sleep_in_the_kernel_keep_their_whole_latency(traced, workdir):
    # GIVEN dd writing 200 blocks with O_DSYNC on a disk-backed file: each write sleeps until
    # the device has the data, so the thread leaves its CPU inside the call (and may come
    # back on the other one)
    out = workdir / "dsync.bin"
    trace, _ = traced(["dd", "if=/dev/zero", f"of={out}", "bs=4k", "count=200", "oflag=dsync"],
                      "--file", str(out))
    # THEN every write dd was asked to do is in the trace (ground truth: its arguments)
    events = trace.events
    writes = events[events["syscall"].astype(str) == "write"]
    assert len(writes) == 200 and int(writes["ret"].sum()) == 200 * 4 * KIB
    # AND the threads really slept inside those calls (the scheduler's own records)
    offcpu = trace.offcpu
    assert offcpu is not None and len(offcpu) > 0
    start = writes["start_ns"].to_numpy(np.int64)
    end = start + writes["latency_ns"].to_numpy(np.int64)
    slept = 0
    for off, on in zip(offcpu["off_ns"].astype(np.int64), offcpu["on_ns"].astype(np.int64)):
        inside = np.flatnonzero((start <= off) & (on <= end))
        if len(inside):
            # AND a call that slept lasts at least as long as its sleep: its entry time survived
            # the switch (sys_exit found it in the thread's storage, not on the CPU)
            slept += 1
            assert end[inside[0]] - start[inside[0]] >= on - off
    assert slept >= 100


def test_processes_on_both_cpus_are_all_recorded_in_order(traced, workdir):
    # GIVEN two processes (one per CPU) each writing 20,000 records of 512 bytes to a file
    files = [workdir / "a.bin", workdir / "b.bin"]
    script = " ".join(f"dd if=/dev/zero of={f} bs=512 count=20000 2>/dev/null &" for f in files) + " wait"
    trace, _ = traced(["/bin/sh", "-c", script], "--file", str(files[0]), "--file", str(files[1]))
    # THEN each file has exactly its 20,000 writes, and nothing was lost
    assert trace.lost == 0
    events = trace.events
    for f in files:
        mine = events[(events["path"].astype(str) == str(f)) & (events["syscall"].astype(str) == "write")]
        assert len(mine) == 20000 and int(mine["ret"].sum()) == 20000 * 512
        # AND each thread's calls come in the order it made them: the offsets climb by 512
        assert (np.diff(mine["offset"].to_numpy(np.int64)) == 512).all()


def test_summary_phases_split_at_fsync_on_a_file_already_in_use(traced, workdir):
    # GIVEN one process writing 300 blocks, fsync, 200 blocks, fsync, on one fd: the second
    # phase starts while the CPU's memo of the file (and of its aggregate) is warm
    out = workdir / "two.bin"
    program = textwrap.dedent(f"""
        import os
        fd = os.open({str(out)!r}, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        block = b"x" * 4096
        for n in (300, 200):
            for _ in range(n):
                os.write(fd, block)
            os.fsync(fd)
        os.close(fd)
    """)
    trace, _ = traced([sys.executable, "-c", program], "--summary", "--file", str(out))
    # THEN the aggregates hold two write phases of 300 and 200 calls (the program's own counts)
    rows = trace.summary
    ops = {v: k for k, v in trace._ops.items()}
    writes = rows[rows["op"] == ops["write"]]
    per_phase = sorted(int(c) for c in writes["calls"])
    assert per_phase == [200, 300]
    assert int(writes["bytes"].sum()) == 500 * 4096
    assert int(rows[rows["op"] == ops["fsync"]]["calls"].sum()) == 2
    assert os.path.getsize(out) == 500 * 4096


def test_a_thread_that_execs_records_its_new_ids(traced, workdir):
    # GIVEN a process whose second thread, after a pread of its own, execs a program that
    # preads the same file and prints its pid and tid: the exec gives that thread the
    # leader's pid (the kernel's de_thread), perhaps without it leaving its CPU, while the
    # probe's CPU slot keeps the ids of the thread that claimed it
    data = workdir / "exec.bin"
    data.write_bytes(b"x" * 4096)
    after = (f"import os, threading; fd = os.open({str(data)!r}, os.O_RDONLY); os.pread(fd, 1, 7); "
             "print(os.getpid(), threading.get_native_id())")
    before = textwrap.dedent(f"""
        import os, sys, threading
        def run():
            fd = os.open({str(data)!r}, os.O_RDONLY)
            os.pread(fd, 1, 3)
            print(os.getpid(), threading.get_native_id(), flush=True)
            os.execv(sys.executable, [sys.executable, "-c", {after!r}])
        threading.Thread(target=run).start()
        threading.Event().wait()
    """)
    trace, _ = traced([sys.executable, "-c", before], "--file", str(data))
    (pid, tid_before), (pid_after, tid_after) = [tuple(map(int, line.split()))
                                                 for line in trace.output["stdout"].split("\n") if line.strip()]
    # THEN the pread before the exec carries the second thread's own tid, and the one after
    # it carries the ids the program printed (ground truth: getpid and the thread's native id)
    events = trace.events
    preads = events[events["syscall"].astype(str) == "pread64"]
    by_offset = {int(e.offset): (int(e.tgid), int(e.tid)) for e in preads.itertuples()}
    assert tid_before != pid and pid_after == pid and tid_after == pid
    assert by_offset == {3: (pid, tid_before), 7: (pid_after, tid_after)}
