"""`iowitness run` on real IOzone and dd: exit codes, output, lost events (that it traces every child
and thread of IOzone in throughput mode: test_phases_real, test_known_calls)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from iowitness.analysis.measure import observer
from iowitness.analysis.read.run import load
from iowitness.collector.stats_windows import MIN_CALLS, RECHECK_S, WINDOW_MAX_S, WINDOW_S
from iowitness.errors import BadTrace
from tests.conftest import require_tool
from tests.support.cli import IOWITNESS


def _data(trace, syscall):
    ev = trace.events
    return ev[ev["syscall"] == syscall]


def test_run_passes_exit_code_and_output_through(traced, workdir):
    # GIVEN a command that prints and fails with a known code
    out = workdir / "exit.iwt"
    proc = subprocess.run([*IOWITNESS, "run", "-q", "-o", str(out), "--", "/bin/sh", "-c",
                           "echo to-out; echo to-err >&2; exit 7"], capture_output=True, text=True, timeout=60)
    # THEN iowitness exits 7, the output passed through and is kept in the trace
    assert proc.returncode == 7
    assert "to-out" in proc.stdout and "to-err" in proc.stderr
    trace = load(out)
    assert trace.meta["exit_code"] == 7
    assert trace.output["stdout"] == "to-out\n" and trace.output["stderr"] == "to-err\n"


def test_a_tiny_ring_buffer_counts_lost_events(tmp_path, workdir):
    # GIVEN an event area of 4 KiB (64 records per CPU, the smallest) and a flood of small writes
    out = tmp_path / "tiny.iwt"
    target = workdir / "flood.bin"
    proc = subprocess.run([*IOWITNESS, "run", "-q", "-o", str(out), "--ring-buffer-mb", "0.004", "--",
                           "dd", "if=/dev/zero", f"of={target}", "bs=512", "count=200000"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # THEN what could not be delivered is counted, and delivered + lost = what dd did
    trace = load(out)
    delivered = _data(trace, "write")
    writes = len(delivered)
    assert trace.counters["lost_events"] > 0
    assert writes + trace.counters["lost_events"] >= 200000
    # AND every record that was delivered is whole, though each CPU's 64-record ring wrapped
    # around thousands of times: dd's writes, 512 bytes each, at distinct rising offsets
    offsets = delivered["offset"].to_numpy()
    assert (delivered["ret"] == 512).all() and (offsets % 512 == 0).all()
    assert (offsets[1:] > offsets[:-1]).all()
    # AND `show` says so
    shown = subprocess.run([*IOWITNESS, "show", str(out)], capture_output=True, text=True, timeout=60)
    assert f"lost {trace.lost:,}" in shown.stdout


def test_a_killed_collector_leaves_a_readable_trace(tmp_path, workdir):
    # GIVEN a collector recording a benchmark that writes steadily
    out = tmp_path / "killed.iwt"
    target = workdir / "slow.bin"
    script = f"for i in $(seq 1 400); do echo line$i >> {target}; sleep 0.01; done"
    collector = subprocess.Popen([*IOWITNESS, "run", "-q", "-o", str(out), "--", "/bin/sh", "-c", script],
                                 start_new_session=True)
    try:
        # (wait until some flushed writes are on disk: the reader takes a torn tail in its stride)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.5)
            try:
                if len(_data(load(out), "write")) >= 50:
                    break
            except BadTrace:  # not written yet, or its start is still on the way
                continue
        # WHEN it is killed without warning
        os.kill(collector.pid, signal.SIGKILL)
        collector.wait(10)
    finally:
        os.killpg(collector.pid, signal.SIGKILL) if collector.poll() is None else None
        subprocess.run(["pkill", "-f", f"line\\$i >> {target}"], check=False)
    # THEN the trace loads, says it is incomplete, and holds what was flushed
    trace = load(out)
    assert trace.meta["complete"] is False
    writes = _data(trace, "write")
    assert len(writes) >= 50
    assert (writes["ret"] > 0).all()


def test_iozone_4k_records_on_a_cached_file_lose_nothing(traced, workdir):
    # GIVEN IOzone write/rewrite/read/reread with 4 KiB records on a 64 MiB file (page cache)
    iozone = require_tool("iozone")
    target = workdir / "iozone.tmp"
    trace, _ = traced([iozone, "-i0", "-i1", "-s", "64m", "-r", "4k", "-f", str(target)], "--file", str(target))
    # THEN the observer kept up: nothing lost, every write of both passes is there
    assert trace.lost == 0
    writes = _data(trace, "write")
    assert len(writes) == 2 * 16384
    assert int(writes["ret"].sum()) == 2 * 64 * 2**20
    reads = _data(trace, "read")
    assert int(reads["ret"].sum()) >= 2 * 64 * 2**20


def test_the_trace_names_each_target_file_system(traced, workdir):
    # GIVEN a traced dd run, WHEN its metadata is read
    target = workdir / "dd.out"
    trace, _ = traced(["dd", "if=/dev/zero", f"of={target}", "bs=4k", "count=8"], "--file", str(target))
    described = [f for f in trace.meta["files"] if f["path"] == str(target)]
    # THEN the file system and mount agree with findmnt, an independent reader of the mount table
    found = subprocess.run(["findmnt", "-n", "-o", "FSTYPE,TARGET", "--target", str(target)],
                           capture_output=True, text=True, check=True).stdout.split()
    assert len(described) == 1
    assert [described[0]["fs_type"], described[0]["mount_point"]] == found
    assert trace.meta["clock_start"]["offset_ns"] > 0


def test_the_collector_wakes_when_the_benchmark_exits_not_at_its_next_poll(workdir):
    # GIVEN a loaded probe whose wake-ups include a process that exits after 0.3 s
    from iowitness.collector import targets
    from iowitness.collector.probe import Probe, ProbeConfig
    probe = Probe(ProbeConfig(file_set=targets.file_set([str(workdir / "f")]), bpf_stats=False))
    child = subprocess.Popen(["sleep", "0.3"])
    try:
        probe.wake_on_exit(child.pid)
        # WHEN the collector sleeps with a long timeout
        began = time.monotonic()
        exited = probe.wait(10.0)
        slept = time.monotonic() - began
        # THEN it is woken by the exit, long before the timeout (ground truth: the process
        # is gone, which the kernel says through waitpid)
        assert exited and slept < 5.0
        assert child.wait(timeout=5) == 0
        # AND the exit wakes it once: the next sleep lasts its whole timeout, no busy loop
        began = time.monotonic()
        assert probe.wait(0.2) is False and time.monotonic() - began >= 0.15
    finally:
        child.kill()
        child.wait()
        probe.close()


def _paced_writer(target, sleep_first: float, pause: float, seconds: float) -> str:
    """A command that pwrites one byte every `pause` seconds (0: as fast as it can) for
    `seconds`, after `sleep_first`, and prints how many calls it made: the ground truth."""
    return ("import os, sys, time\n"
            f"fd = os.open({str(target)!r}, os.O_CREAT | os.O_WRONLY, 0o644)\n"
            f"time.sleep({sleep_first})\n"
            "calls, began = 0, time.monotonic()\n"
            f"while time.monotonic() - began < {seconds}:\n"
            f"    os.pwrite(fd, b'x', 0); calls += 1\n"
            f"    if {pause}: time.sleep({pause})\n"
            "print(calls, time.monotonic() - began)\n")


def _require_statistics_off() -> None:
    """The windows exist only while the machine's sysctl leaves the statistics off: set by
    someone else (a profiler, another collector), they are on all run long, and the run says so."""
    if Path("/proc/sys/kernel/bpf_stats_enabled").read_text().strip() == "1":
        pytest.skip("kernel.bpf_stats_enabled is 1 (set outside this test): the statistics are on all run "
                    "long, there is no window to test")


def test_bpf_statistics_are_on_for_a_tenth_of_a_second_of_a_busy_run(traced, workdir):
    _require_statistics_off()
    # GIVEN a command that pwrites as fast as it can for 1.5 s and counts its calls
    target = workdir / "busy"
    # WHEN it runs under iowitness
    trace, _ = traced(["python3", "-c", _paced_writer(target, 0, 0, 1.5)], "--file", str(target))
    calls, elapsed = int(trace.output["stdout"].split()[0]), float(trace.output["stdout"].split()[1])
    cost = trace.counters["probe_cost"]
    # THEN the kernel timed the programs in one window at the start (Python's start-up
    # included): at least WINDOW_S and the MIN_CALLS calls a window waits for, never the whole
    # run. On a busy machine the calls come slower and the window waits for them (up to
    # WINDOW_MAX_S): past WINDOW_S it closes as soon as it has them, give or take what the
    # program does in one look of the recorder (RECHECK_S) and one drain
    assert cost["mode"] == "sampled"
    assert 0.8 * WINDOW_S <= cost["sampled_s"] <= WINDOW_MAX_S + 0.2, cost
    assert MIN_CALLS <= cost["sampled_calls"] < calls / 2, (cost, calls)
    if cost["sampled_s"] > WINDOW_S + 0.2:
        assert cost["sampled_calls"] <= MIN_CALLS + calls / elapsed * (RECHECK_S + 0.2), (cost, calls, elapsed)


def test_bpf_statistics_wait_for_a_slow_benchmarks_first_calls(traced, workdir):
    _require_statistics_off()
    # GIVEN a command that sleeps 0.3 s before its first call, then pwrites every 2 ms
    target = workdir / "slow"
    # WHEN it runs under iowitness
    trace, _ = traced(["python3", "-c", _paced_writer(target, 0.3, 0.002, 1.5)], "--file", str(target))
    calls, seconds = trace.output["stdout"].split()
    rate = int(calls) / float(seconds)
    cost = trace.counters["probe_cost"]
    # THEN the window stayed open past its 0.1 s for calls to time, up to its 1 s maximum (at
    # this pace 10,000 calls take longer), and timed some: the report can state their cost
    assert 0.95 <= cost["sampled_s"] <= 1.3, cost
    assert 0 < cost["sampled_calls"] <= rate * cost["sampled_s"], (cost, rate)


def _counted_writer(target, calls: int) -> str:
    """A command that pwrites one byte `calls` times as fast as it can."""
    return ("import os\n"
            f"fd = os.open({str(target)!r}, os.O_CREAT | os.O_WRONLY, 0o644)\n"
            f"for _ in range({calls}):\n"
            "    os.pwrite(fd, b'x', 0)\n")


def test_the_probe_time_in_all_brackets_what_the_kernel_measures_all_run_long(traced, workdir):
    # GIVEN a command that makes a fixed number of pwrites, as fast as it can
    target = workdir / "counted"
    command = ["python3", "-c", _counted_writer(target, 600_000)]
    # WHEN it runs once with the statistics in windows (the default), and once with the
    # sysctl keeping them on for the whole run: the kernel then times every program run, the
    # ground truth for the programs' total time
    sysctl = Path("/proc/sys/kernel/bpf_stats_enabled")
    before = sysctl.read_text()
    try:
        sysctl.write_text("0")
        sampled, _ = traced(command, "--file", str(target))
        sysctl.write_text("1")
        whole, _ = traced(command, "--file", str(target))
    finally:
        sysctl.write_text(before)
    estimate, truth = observer.cost(sampled), observer.cost(whole)
    # THEN the whole run was timed (one figure) and the windowed run gives a range, both
    # scalings of the same windows
    assert "sysctl" in truth["bpf_stats"] and truth["probe_time_s"] == truth["probe_time_s_by_calls"]
    assert "sampled" in estimate["bpf_stats"] and estimate["probe_sampled_calls"] < estimate["calls"] / 2
    low, high = sorted((estimate["probe_time_s"], estimate["probe_time_s_by_calls"]))
    # AND the truth lies in that range, give or take this VM's run-to-run noise (the two runs
    # are separate: a per-run speed can differ by a third)
    assert low / 1.5 <= truth["probe_time_s"] <= high * 1.5, (low, high, truth["probe_time_s"])
    # AND the verbose line says it as a range, the report's line as one figure: at most its share
    # of the run's time; on a busy machine, where the programs' time on all CPUs (every process's
    # syscalls enter them) passes the run's own (2 %-189 % beside two CPU hogs), at least its floor
    assert " in all" in observer.detail(sampled)
    line = observer.line(sampled)
    if estimate["probe_share_max"] > 1 and estimate["probe_share_min"] is not None:
        assert "probe at least" in line and "busy machine" in line, line
    else:
        assert "probe at most" in line, line


SIGNAL_PROBE = ('yes | head -1 >/dev/null; echo "yes: ${PIPESTATUS[0]}"; '
                'grep -E "^Sig(Ign|Blk)" /proc/self/status')


def test_the_benchmark_gets_the_signal_dispositions_it_would_have_had_without_us(traced):
    # GIVEN a shell that reports how `yes` ends in a pipe its reader closes, and which
    # signals it starts with ignored and blocked; the same shell started directly is the truth
    direct = subprocess.run(["bash", "-c", SIGNAL_PROBE], capture_output=True, text=True, check=True).stdout
    # WHEN it runs under iowitness
    trace, proc = traced(["bash", "-c", SIGNAL_PROBE])
    # THEN it sees what it sees without us: `yes` dies of SIGPIPE (141), not of EPIPE (1),
    # and no signal is ignored or blocked that was not before
    assert "yes: 141" in direct
    assert proc.stdout == direct and trace.output["stdout"] == direct


PRINTER = ('for i in $(seq 1 30); do echo "line $i"; echo "$i" >> "$1"; sleep 0.05; done; '
           'echo "printed 30" >&2')


def test_a_killed_collector_loses_neither_the_benchmark_nor_its_output(tmp_path):
    # GIVEN a benchmark that prints 30 lines over 1.5 s and counts them in a file of its own,
    # run with --on-fault continue (the default stops it: tests/kernel/test_faults.py)
    counted, out = tmp_path / "counted", tmp_path / "killed.iwt"
    proc = subprocess.Popen([*IOWITNESS, "run", "-q", "--on-fault", "continue", "-o", str(out), "--",
                             "bash", "-c", PRINTER, "printer",
                             str(counted)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # WHEN the collector is killed with SIGKILL while the benchmark prints
    deadline = time.monotonic() + 30
    while not (counted.exists() and counted.read_text().count("\n") >= 3) and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.kill()
    stdout, stderr = proc.communicate(timeout=60)   # the capture holds our pipes until the benchmark ends
    # THEN the benchmark ran to its end, and every line it printed reached the user and the trace
    assert counted.read_text().split() == [str(i) for i in range(1, 31)]
    lines = [f"line {i}" for i in range(1, 31)]
    assert stdout.splitlines() == lines and "printed 30" in stderr
    trace = load(out)
    assert trace.meta["complete"] is False
    assert trace.output["stdout"].splitlines() == lines and trace.output["stderr"] == "printed 30\n"


def test_a_reader_that_closes_our_output_gives_the_benchmark_sigpipe(tmp_path):
    # GIVEN `yes` under iowitness, its output read by `head -1`
    out = tmp_path / "yes.iwt"
    shell = f"{' '.join(IOWITNESS)} run -q -o {out} -- yes | head -1; echo \"rc ${{PIPESTATUS[0]}}\""
    # WHEN head exits after one line
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=60)
    # THEN yes dies of SIGPIPE as it does without us, and iowitness passes its 141 on
    assert done.stdout.splitlines() == ["y", "rc 141"]
    assert load(out).meta["exit_code"] == 141


def test_processes_left_running_are_followed_while_they_work(traced, workdir):
    # GIVEN a shell that starts a loop in the background and exits at once: 30 dd runs of 10
    # writes each, 0.25 s apart, so the loop works well past the 5 s a silent holder is given
    data = workdir / "left.dat"
    loop = (f"for i in $(seq 1 30); do dd if=/dev/zero of={data} bs=4k count=10 conv=fsync 2>/dev/null; "
            "sleep 0.25; done &")
    # WHEN iowitness runs the shell
    trace, proc = traced(["sh", "-c", loop])
    # THEN the trace follows the loop to its end: every write dd made (the loop's own count)
    writes = _data(trace, "write")
    writes = writes[writes["path"].astype(str) == str(data)]
    assert len(writes) == 300 and int(writes["ret"].sum()) == 300 * 4096, len(writes)
    assert not trace.meta.get("left_running") and "left running" not in proc.stderr


def test_a_process_left_holding_the_output_idle_ends_the_trace_and_is_said(workdir):
    # GIVEN a shell that leaves a sleep of 60 s holding its output, and exits
    out, said = workdir / "idle.iwt", workdir / "said.txt"
    started = time.monotonic()
    # (our output to files: the capture passes the sleep's output through until it exits, so a
    # pipe would stay open 60 s after iowitness has)
    with open(said, "w") as stderr:
        proc = subprocess.run([*IOWITNESS, "run", "-q", "-o", str(out), "--", "sh", "-c", "sleep 60 &"],
                              stdout=subprocess.DEVNULL, stderr=stderr, timeout=120)
    # THEN iowitness does not wait for it: the trace ends some seconds after the shell, and says
    # why even with -q, in one line; the report's verdicts would say the trace ended early
    assert proc.returncode == 0 and time.monotonic() - started < 50, said.read_text()
    [line] = [ln for ln in said.read_text().splitlines() if ln.startswith("iowitness")]
    assert "processes it left running still hold its output, with no traced call for 5 s" in line, line
    trace = load(out)
    assert trace.meta["left_running"] is True and trace.meta["exit_code"] == 0 and trace.meta["complete"] is True
    subprocess.run(["pkill", "-f", "^sleep 60$"], check=False)


def test_a_ctrl_c_while_following_processes_left_running_ends_the_trace(workdir):
    # GIVEN a shell that leaves a 60 s loop of dd runs working in the background, and exits
    data, out = workdir / "busy.dat", workdir / "busy.iwt"
    loop = f"for i in $(seq 1 600); do dd if=/dev/zero of={data} bs=4k count=4 2>/dev/null; sleep 0.1; done &"
    said = workdir / "said.txt"
    started = time.monotonic()
    # (our output to files: the capture passes the loop's output through until it ends, so a
    # pipe would stay open after iowitness has)
    with open(said, "w") as stderr_file:
        run = subprocess.Popen([*IOWITNESS, "run", "-q", "-o", str(out), "--", "sh", "-c", loop],
                               stdout=subprocess.DEVNULL, stderr=stderr_file)
    try:
        while not (data.exists() and out.exists()):   # the loop works: the shell was let go
            assert run.poll() is None and time.monotonic() - started < 60, said.read_text()
            time.sleep(0.05)
        time.sleep(1)
        # WHEN iowitness gets a Ctrl-C while it follows the loop
        run.send_signal(signal.SIGINT)
        run.wait(timeout=45)
        stderr = said.read_text()
    finally:
        run.kill()
        subprocess.run(["pkill", "-f", f"of={data}"], check=False)
        subprocess.run(["pkill", "-f", "seq 1 600"], check=False)
    # THEN it ends the trace within seconds, not with the loop's 60, and the trace is readable
    assert time.monotonic() - started < 50, stderr
    assert "Traceback" not in stderr
    assert load(out).meta["complete"] is True
