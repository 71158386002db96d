"""The observers scripts/bench/observers.py compares: how each wraps a workload's command.

untraced           the command alone
floor              empty BPF programs on tp_btf sys_enter/sys_exit and io_uring_submit_req/complete
                   (probes/floor.bpf.o), loaded by this process: what any tracer on these
                   tracepoints costs at least
iowitness          `iowitness run --file F`: one record per call, default ring and wake-ups
iowitness-summary  `iowitness run --summary --file F`: in-kernel aggregates only
iowitness-nostats  iowitness with --no-bpf-stats: what timing our programs costs (two clock
                   reads per program run); not in the default set
timing-floor       programs that only time every syscall (probes/timing_floor.bpf.o): two clock
                   reads and a per-CPU slot, the least a latency tracer does; not in the default set
strace             `strace -f -e trace=<iowitness's syscalls>` to a file
bpftrace           one printf per call on sys_exit of the same syscalls, for the command's
                   process tree only (followed through sched_process_fork)
perf-trace         `perf trace -e <the same syscalls>` to a file

Every tracer's output goes to `out` (tmpfs), off the benchmark's device.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from iowitness import probes
from iowitness.collector.libbpf import BpfObject
from iowitness.collector.probe import _kernel_has_tracepoint as kernel_has_tracepoint
from iowitness.probes.layout import layout

IOWITNESS = [sys.executable, "-m", "iowitness.cli"]
TRACEFS = Path("/sys/kernel/tracing/events/syscalls")


def traced_syscalls() -> list[str]:
    """The syscalls iowitness traces (probes/events.h), so every tracer watches the same set:
    an op is its syscall's name, but a copy's two sides are one syscall, asynchronous requests
    are seen by a syscall tracer only as the calls that submit and reap them, and a page fault
    is no syscall at all."""
    found = set()
    for name in layout().names("iow_op", "IOW_OP_").values():
        if name.startswith("uring_"):
            found.add("io_uring_enter")
        elif name.startswith("aio_"):
            found |= {"io_submit", "io_getevents"}
        elif not name.startswith("fault_"):
            found.add(name.removesuffix("_from").removesuffix("_to"))
    return sorted(found)


@dataclass
class Wrapped:
    argv: list[str]
    trace: Path | None = None       # iowitness's trace file, read after the run
    cleanup: list = field(default_factory=list)


class Observer:
    name = ""

    def unavailable(self) -> str | None:
        """Why this observer cannot run here, or None."""
        return None

    def wrap(self, command: list[str], files: list[str], out: Path, tag: str) -> Wrapped:
        return Wrapped(command)

    def lost(self, wrapped: Wrapped, stderr: str) -> int | None:
        return None

    def start(self) -> None:
        """Called just before the command starts."""

    def stop(self) -> None:
        """Called just after the command ends."""


class Untraced(Observer):
    name = "untraced"


class Floor(Observer):
    """A BPF object of programs that do little or nothing, loaded by this process."""
    name = "floor"
    object = probes.FLOOR_OBJECT

    def unavailable(self):
        return None if self.object.exists() else f"{self.object} is not built (make -C probes)"

    def start(self):
        self._obj = BpfObject(self.object)
        # the io_uring tracepoints exist only on kernels built with io_uring
        for program, tracepoint in (("floor_uring_submit", "io_uring_submit_req"),
                                    ("floor_uring_complete", "io_uring_complete")):
            if self.object == probes.FLOOR_OBJECT and not kernel_has_tracepoint(tracepoint):
                self._obj.skip_program(program)
        self._obj.load()
        self._obj.attach_all()

    def stop(self):
        self._obj.close()


class TimingFloor(Floor):
    name = "timing-floor"
    object = probes.TIMING_FLOOR_OBJECT


class Iowitness(Observer):
    def __init__(self, summary: bool, stats: bool = True, probe: str | None = None):
        # probe: "compat" records with the compatible object (collector/kfeatures.py)
        self.summary, self.stats, self.probe = summary, stats, probe
        self.name = (("iowitness-summary" if summary else "iowitness") + ("" if stats else "-nostats")
                     + (f"-{probe}" if probe else ""))

    def options(self, files: list[str]) -> list[str]:
        """The recording options of this mode, tracing `files` (run and attach take the same)."""
        options = (["--summary"] if self.summary else []) + ([] if self.stats else ["--no-bpf-stats"])
        options += ["--probe", self.probe] if self.probe else []
        return options + [arg for f in files for arg in ("--file", f)]

    def wrap(self, command, files, out, tag):
        trace = out / f"{tag}.iwt"
        return Wrapped([*IOWITNESS, "run", "-q", "-o", str(trace), *self.options(files), "--", *command],
                       trace=trace)


class Strace(Observer):
    name = "strace"

    def unavailable(self):
        return None if shutil.which("strace") else "strace is not installed (apt-get install strace)"

    def wrap(self, command, files, out, tag):
        log = out / f"{tag}.strace"
        return Wrapped(["strace", "-f", "-qq", "-o", str(log), "-e", "trace=" + ",".join(traced_syscalls()),
                        *command], cleanup=[log])


class Bpftrace(Observer):
    name = "bpftrace"

    def unavailable(self):
        if not shutil.which("bpftrace"):
            return "bpftrace is not installed (apt-get install bpftrace)"
        return None

    def wrap(self, command, files, out, tag):
        # the script goes to /tmp, not to `out`: tmpfs in /dev/shm is often mounted noexec
        log, script = out / f"{tag}.bpftrace", Path(tempfile.gettempdir()) / f"iowitness-bench-{tag}.sh"
        # bpftrace -c splits its argument on spaces without quoting, and wants an executable
        # it can find as a binary: /bin/sh with a script that execs the command
        script.write_text("#!/bin/sh\nexec " + shlex.join(command) + "\n")
        script.chmod(0o755)
        exits = [f"tracepoint:syscalls:sys_exit_{s}" for s in traced_syscalls()
                 if (TRACEFS / f"sys_exit_{s}").exists() or not TRACEFS.exists()]
        program = ("BEGIN { @traced[cpid] = 1; } "
                   "tracepoint:sched:sched_process_fork /@traced[pid]/ { @traced[args->child_pid] = 1; } "
                   + ",".join(exits) + " /@traced[pid]/ { printf(\"%lu %d %ld\\n\", nsecs, tid, args->ret); } "
                   "END { clear(@traced); }")
        return Wrapped(["bpftrace", "-o", str(log), "-e", program, "-c", f"/bin/sh {script}"], cleanup=[log, script])

    def lost(self, wrapped, stderr):
        text = stderr + (wrapped.cleanup[0].read_text(errors="replace")[-4096:]
                         if wrapped.cleanup[0].exists() else "")
        return sum(int(n) for n in re.findall(r"Lost (\d+) events", text))


class PerfTrace(Observer):
    name = "perf-trace"

    def unavailable(self):
        perf = shutil.which("perf")
        if not perf:
            return "perf is not installed (apt-get install linux-perf)"
        if os.system(f"{perf} trace -e pread64 -o /dev/null -- true >/dev/null 2>&1") != 0:
            return "perf trace does not run against this kernel"
        return None

    def wrap(self, command, files, out, tag):
        log = out / f"{tag}.perf"
        return Wrapped(["perf", "trace", "-o", str(log), "-e", ",".join(traced_syscalls()), "--", *command],
                       cleanup=[log])

    def lost(self, wrapped, stderr):
        log = wrapped.cleanup[0]
        text = stderr + (log.read_text(errors="replace") if log.exists() and log.stat().st_size < 1 << 28 else "")
        return sum(int(n) for n in re.findall(r"LOST (\d+) events", text))


def all_observers() -> dict[str, Observer]:
    found = [Untraced(), Floor(), Iowitness(False), Iowitness(True), Strace(), Bpftrace(), PerfTrace(),
             Iowitness(False, stats=False), Iowitness(True, stats=False), TimingFloor()]
    return {o.name: o for o in found}
