"""The bpftrace backend: probes/iowitness.bt run by bpftrace, its lines turned into the records
of the compiled probe, so that the Recorder writes the same trace (collector/session.py).

For machines where the compiled probe cannot load (an older kernel, a policy that allows
bpftrace only). BpftraceProbe answers what the Recorder, `run` and `attach` ask of a Probe;
what bpftrace cannot do is said, not faked: no device view (block requests, off-CPU time),
no io_uring/libaio/mmap records, no --summary, no measure of the probe's own run time, and
the sets are fixed when bpftrace starts (a process or file given after that is not added).
"""

from __future__ import annotations

import fcntl
import os
import select
import shutil
import subprocess
import threading
import time
from pathlib import Path

import numpy as np

from iowitness.collector import backends, preflight
from iowitness.collector.bpftrace_lines import SCRIPT, STRLEN, LineParser, script_text
from iowitness.collector.format.traceformat import LOST_SLOTS, STATS_OFF
from iowitness.collector.kfeatures import Choice
from iowitness.collector.targets import KnownFile
from iowitness.collector.wakeups import Wakeups
from iowitness.errors import CannotTrace, UsageError
from iowitness.probes.layout import layout

# entries of every bpftrace map: the files followed over the run, the processes alive at once,
# the calls in flight. Hash maps are allocated whole at the start (about 100 bytes a key)
MAP_KEYS = 65536
READY_TIMEOUT_S = 120.0   # bpftrace compiles the script first: seconds on a loaded machine
PIPE_BYTES = 1 << 20

def bpftrace_path() -> str | None:
    return shutil.which("bpftrace")


def _is_dir(path: Path) -> bool:
    """False too where this user may not look (root's 0700 tracefs): bpftrace could not either."""
    try:
        return path.is_dir()
    except OSError:
        return False


def checks() -> list[preflight.Check]:
    """What the bpftrace backend needs: privileges, BTF (the script reads kernel structs by
    their BTF types), tracefs (bpftrace attaches syscall tracepoints through it) and bpftrace."""
    found = bpftrace_path()
    tool = (preflight.Check("bpftrace", True, found) if found else
            preflight.Check("bpftrace", False, "bpftrace is not installed",
                            "install it: apt-get install bpftrace (dnf install bpftrace)"))
    tracefs = any(_is_dir(Path(root, "events", "syscalls"))
                  for root in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"))
    fs = (preflight.Check("tracefs", True, "syscall tracepoints found") if tracefs else
          preflight.Check("tracefs", False, "no syscall tracepoints under /sys/kernel/tracing",
                          "mount it (mount -t tracefs nodev /sys/kernel/tracing) and run as root"))
    return [preflight.check_privileges(), preflight.check_btf(), tool, fs]


def require() -> None:
    for check in checks():
        if not check.ok:
            raise CannotTrace(f"--backend bpftrace: {check.detail}; {check.fix}")


class _Batches:
    """What the Recorder reads from a ring (`read()`), filled by the parser."""

    def __init__(self, source: list, dtype: np.dtype):
        self._source, self._dtype = source, dtype

    def read(self) -> np.ndarray:
        if not self._source:
            return np.zeros(0, dtype=self._dtype)
        batches = list(self._source)
        self._source.clear()
        return batches[0] if len(batches) == 1 else np.concatenate(batches)

    def close(self) -> None:
        pass


class BpftraceProbe:
    """bpftrace running probes/iowitness.bt, with the face of collector.probe.Probe."""

    backend = backends.BPFTRACE
    has_device_view = False   # no block-request or off-CPU probes: END has no device_view

    def __init__(self, config):
        require()
        if config.summary:
            raise UsageError("--summary needs the compiled probe: leave out --backend bpftrace")
        self.config = config
        self.ring_bytes = 0
        self.attached = False
        self.on_attached: list = []
        self.stats_mode, self.stats_source = STATS_OFF, "not measured by the bpftrace backend"
        self.devices_from_start: set[int] = set()
        # START's probe_path: no compiled object, the script
        self.choice = Choice(path="bpftrace", object=SCRIPT, why="--backend bpftrace: probes/iowitness.bt run by bpftrace")
        self._processes: set[int] = set()
        self._known: dict[tuple[int, int], KnownFile] = {}
        self._late: list[str] = []   # what was given after bpftrace started: said, not followed
        self._parser = LineParser()
        self.events = _Batches(self._parser.events, layout().event)
        self.facts = _Batches(self._parser.facts, layout().meta)
        self.block = _Batches([], layout().structs["iow_block"])
        self.offcpu = _Batches([], layout().structs["iow_offcpu"])
        self._proc: subprocess.Popen | None = None
        self._stderr: list[bytes] = []
        self._wakeups = Wakeups()
        # the script itself is checked now: a name bpftrace cannot match fails before any launch
        script_text([], config.file_set.rules, config.file_set.known)
        self.register_files(config.file_set.known)

    # the sets: given before attach(), written into the script
    def add_process(self, tgid: int) -> None:
        if self.attached and tgid not in self._processes:
            self._late.append(f"process {tgid}")
        self._processes.add(tgid)

    def processes(self) -> list[int]:
        return sorted(self._processes)

    def forget_process(self, tgid: int) -> None:
        self._processes.discard(tgid)

    def register_files(self, known: list[KnownFile]) -> None:
        for f in known:
            if (f.kdev, f.ino) not in self._known and self.attached:
                self._late.append(f.path)
            self._known.setdefault((f.kdev, f.ino), f)

    def watch_device(self, kdev: int) -> None:
        pass   # no device view with bpftrace

    def watched_devices(self) -> list[int]:
        return []

    def attach(self) -> list[str]:
        """Start bpftrace and return once its probes are attached (its BEGIN printed READY)."""
        text = script_text(sorted(self._processes), self.config.file_set.rules, list(self._known.values()))
        cpus = os.cpu_count() or 1
        # the event budget (--ring-buffer-mb) shared out as perf-buffer pages per CPU, a power of two
        pages = 1 << max(3, (max(1, self.config.ring_bytes // cpus // 4096)).bit_length() - 1)
        env = {**os.environ, "BPFTRACE_STRLEN": str(STRLEN), "BPFTRACE_PERF_RB_PAGES": str(pages),
               "BPFTRACE_MAP_KEYS_MAX": str(MAP_KEYS), "BPFTRACE_NO_CPP_DEMANGLE": "1"}
        argv = [bpftrace_path() or "bpftrace", "-e", text, str(int(not self.config.all_processes)),
                str(int(not self.config.file_set.all_files)), str(os.getpid())]
        self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, env=env, start_new_session=True)
        out = self._proc.stdout.fileno()
        try:
            fcntl.fcntl(out, fcntl.F_SETPIPE_SZ, PIPE_BYTES)   # room while the collector writes
        except OSError:
            pass
        os.set_blocking(out, False)
        threading.Thread(target=self._keep_stderr, daemon=True).start()
        self._wakeups.on_readable(out)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self._parser.ready:
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self._pump()
                if self._parser.ready:
                    break
                self._stop()
                raise CannotTrace(f"bpftrace did not start: {self._why()}")
            select.select([out], [], [], 0.2)
            self._pump()
        self.attached = True
        for hook in self.on_attached:
            hook()
        return ["bpftrace"]

    def _keep_stderr(self) -> None:
        for line in self._proc.stderr:
            self._stderr.append(line)
            del self._stderr[:-20]

    def _why(self) -> str:
        lines = [line.decode(errors="replace").strip() for line in self._stderr]
        # bpftrace 0.17 warns about RLIMIT_MEMLOCK even when the load then works
        useful = [line for line in lines if line and "RLIMIT_MEMLOCK" not in line and "WARNING" not in line
                  and not line.startswith("~")]
        if useful:
            return useful[0]
        return f"it exited with code {self._proc.returncode}" if self._proc.returncode is not None else "no answer"

    def _pump(self) -> None:
        """Read what bpftrace has printed so far (never blocks)."""
        if self._proc is None:
            return
        while True:
            try:
                data = os.read(self._proc.stdout.fileno(), 1 << 20)
            except BlockingIOError:
                return
            if not data:
                return
            self._parser.feed(data)

    def wait(self, timeout: float) -> bool:
        exited = self._wakeups.wait(timeout)
        self._pump()
        # the set as the script keeps it: processes forked in it joined, exited ones left
        self._processes.update(self._parser.forked)
        self._parser.forked.clear()
        for tgid in self._parser.exited:
            self._processes.discard(tgid)
        self._parser.exited.clear()
        if self._proc is not None and self._proc.poll() is not None and self.attached:
            self._pump()
            raise CannotTrace(f"bpftrace stopped during the recording: {self._why()}")
        return exited

    def wake_on_exit(self, pid: int) -> None:
        self._wakeups.on_exit(pid)

    def lost(self) -> dict[str, int]:
        counts = {name: 0 for name in LOST_SLOTS}
        counts["lost_events"] = self._parser.lost
        # lines in a form this collector does not know are records it could not keep
        counts["lost_events"] += self._parser.unknown_lines
        # @files holds MAP_KEYS entries: its placeholder, the files known at the start, the rest
        room = MAP_KEYS - 1 - len(self._known)
        counts["files_not_followed"] = max(0, self._parser.files_added - room)
        return counts

    def late_additions(self) -> list[str]:
        """Processes and files named after bpftrace started: not in its sets."""
        return list(self._late)

    def async_calls(self) -> dict:
        return {}

    def stats_window(self, on: bool) -> bool:
        return False

    def program_cost(self) -> dict:
        return {"source": self.stats_source, "mode": STATS_OFF, "run_time_ns": 0, "run_cnt": 0, "programs": {}}

    def summary_records(self) -> np.ndarray:
        raise UsageError("--summary needs the compiled probe")

    def _stop(self) -> None:
        """SIGINT: bpftrace runs END, prints its last records and exits."""
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.send_signal(2)
        deadline = time.monotonic() + 10
        while self._proc.poll() is None and time.monotonic() < deadline:
            select.select([self._proc.stdout.fileno()], [], [], 0.1)
            self._pump()
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._pump()

    def finish(self) -> None:
        """End bpftrace and keep what it printed up to its end (called before the last drain)."""
        self._flush_losses()
        self._stop()

    def _flush_losses(self) -> None:
        """One record on every CPU (the script's S mark, made by our getppid there): a perf
        buffer tells the records it lost only ahead of its next record, so without one after
        the benchmark's last call, the last losses would go untold."""
        if self._proc is None or self._proc.poll() is not None:
            return
        try:
            mine = os.sched_getaffinity(0)
        except OSError:
            return
        cpus = sorted(mine)
        try:
            for cpu in cpus:
                os.sched_setaffinity(0, {cpu})
                os.getppid()
        except OSError:
            pass
        finally:
            os.sched_setaffinity(0, mine)
        deadline = time.monotonic() + 5
        while not self._parser.marks >= set(cpus) and time.monotonic() < deadline:
            select.select([self._proc.stdout.fileno()], [], [], 0.1)
            self._pump()

    def close(self) -> None:
        self._stop()
        self._wakeups.close()
        if self._proc is not None:
            for stream in (self._proc.stdout, self._proc.stderr):
                try:
                    stream.close()
                except OSError:
                    pass
