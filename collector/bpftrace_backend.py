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
import re
import select
import shutil
import subprocess
import threading
import time
from pathlib import Path

import numpy as np

from iowitness import probes
from iowitness.collector import preflight
from iowitness.collector.targets import KnownFile
from iowitness.collector.traceformat import LOST_SLOTS, STATS_OFF
from iowitness.errors import CannotTrace, UsageError
from iowitness.probes.layout import layout

SCRIPT = Path(probes.__file__).parent / "iowitness.bt"
SETTINGS_MARK = "// SETTINGS"
# bytes of a path kept (bpftrace's string size; 160 is the most the open's exit program fits
# in its 512-byte stack with the rest of its record): longer paths are cut in the trace
STRLEN = 160
# entries of every bpftrace map: the files followed over the run, the processes alive at once,
# the calls in flight. Hash maps are allocated whole at the start (about 100 bytes a key)
MAP_KEYS = 65536
READY_TIMEOUT_S = 120.0   # bpftrace compiles the script first: seconds on a loaded machine
PIPE_BYTES = 1 << 20
_LOST = re.compile(rb"^Lost (\d+) events")
_PROBE_PREFIX = "tracepoint:syscalls:sys_exit_"


def bpftrace_path() -> str | None:
    return shutil.which("bpftrace")


def checks() -> list[preflight.Check]:
    """What the bpftrace backend needs: privileges, BTF (the script reads kernel structs by
    their BTF types), tracefs (bpftrace attaches syscall tracepoints through it) and bpftrace."""
    found = bpftrace_path()
    tool = (preflight.Check("bpftrace", True, found) if found else
            preflight.Check("bpftrace", False, "bpftrace is not installed",
                            "install it: apt-get install bpftrace (dnf install bpftrace)"))
    tracefs = any(Path(root, "events", "syscalls").is_dir()
                  for root in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"))
    fs = (preflight.Check("tracefs", True, "syscall tracepoints found") if tracefs else
          preflight.Check("tracefs", False, "no syscall tracepoints under /sys/kernel/tracing",
                          "mount it: mount -t tracefs nodev /sys/kernel/tracing"))
    return [preflight.check_privileges(), preflight.check_btf(), tool, fs]


def require() -> None:
    for check in checks():
        if not check.ok:
            raise CannotTrace(f"--backend bpftrace: {check.detail}; {check.fix}")


def _string_literal(text: str, what: str) -> str:
    """`text` as a bpftrace string literal; refused when bpftrace could not match it exactly."""
    if len(text.encode()) >= STRLEN or not text.isprintable() or '"' in text or "\\" in text:
        raise UsageError(f"--backend bpftrace cannot match {what} {text!r} (quotes, backslashes, control "
                         f"characters or {STRLEN} bytes or more); use the default backend or name its directory")
    return f'"{text}"'


def settings_text(processes: list[int], rules, known: list[KnownFile]) -> str:
    """The map entries that go where the script says SETTINGS: the sets the kernel filters on."""
    lines = [f"@procs[(uint64){pid}] = (uint64)1;" for pid in processes]
    for rule in rules:
        if rule.name:
            lines.append(f"@names[(uint64){rule.dir_kdev}, (uint64){rule.dir_ino}, "
                         f"{_string_literal(rule.name, 'the file name')}] = (uint64)1;")
        else:
            lines.append(f"@dirs[(uint64){rule.dir_kdev}, (uint64){rule.dir_ino}] = (uint64)1;")
    lines += [f"@files[(uint64){f.kdev}, (uint64){f.ino}] = (uint64)1;" for f in known]
    return "\n\t".join(lines)


def script_text(processes: list[int], rules, known: list[KnownFile]) -> str:
    text = SCRIPT.read_text()
    if SETTINGS_MARK not in text:
        raise CannotTrace(f"{SCRIPT} has no '{SETTINGS_MARK}' line; reinstall iowitness")
    return text.replace(SETTINGS_MARK, settings_text(processes, rules, known), 1)


class LineParser:
    """bpftrace's lines (probes/iowitness.bt says what each holds) into the compiled probe's
    records: events (layout().event) and facts (layout().meta), with bpftrace's own count of
    the records its perf buffer had no room for."""

    def __init__(self):
        lay = layout()
        self._event, self._meta = lay.event, lay.meta
        self._ops = {name: value for value, name in lay.names("iow_op", "IOW_OP_").items()}
        kinds = lay.enums["iow_meta_kind"]
        self._file, self._fork, self._exec = kinds["IOW_META_FILE"], kinds["IOW_META_FORK"], kinds["IOW_META_EXEC"]
        self._rest = b""
        self.events: list[np.ndarray] = []
        self.facts: list[np.ndarray] = []
        self.lost = 0
        self.exited: list[int] = []
        self.marks: set[int] = set()   # CPUs whose end mark arrived
        self.files_added = 0           # files the script made targets (its N line, at the end)
        self.forked: list[int] = []    # processes that joined the set (K lines)
        self.ready = False
        self.unknown_lines = 0

    def feed(self, data: bytes) -> None:
        lines = (self._rest + data).split(b"\n")
        self._rest = lines.pop()
        calls = [line for line in lines if line[:2] == b"E\t"]
        records = self._events_of(calls) if calls else None
        if records is not None and len(records):
            self.events.append(records)
        facts = []
        if len(calls) < len(lines):
            for line in lines:
                tag = line[:2]
                if tag == b"E\t":
                    continue
                if tag in (b"F\t", b"K\t", b"P\t"):
                    facts.append(line)
                    if tag == b"K\t":
                        self.forked.append(int(line.split(b"\t")[3]))
                elif tag == b"X\t":
                    self.exited.append(int(line[2:]))
                elif tag == b"N\t":
                    self.files_added = int(line[2:])
                elif tag == b"S\t":
                    self.marks.add(int(line[2:]))
                elif line.startswith(b"Lost "):
                    match = _LOST.match(line)
                    self.lost += int(match.group(1)) if match else 0
                elif line == b"READY":
                    self.ready = True
                # "Attaching N probes...", the maps bpftrace prints as it ends: nothing to keep
        if facts:
            self.facts.append(self._facts_of(facts))

    def _events_of(self, lines: list[bytes]) -> np.ndarray:
        """E lines into records: the probe names replaced by op numbers in the joined text, then
        every number read by numpy at once (splitting line by line in Python cost 15 µs a line)."""
        text = b"\n".join(lines)
        for name, value in self._ops.items():
            text = text.replace(b"\t%s%s\t" % (_PROBE_PREFIX.encode(), name.encode()), b"\t%d\t" % value)
        numbers = np.fromstring(text.replace(b"E\t", b" "), dtype=np.int64, sep=" ") \
            if b"tracepoint" not in text else np.zeros(0, np.int64)
        if numbers.size != 12 * len(lines):
            return self._events_of_rows(lines)   # a line this collector does not know: one by one
        return self._records(numbers.reshape(-1, 12))

    def _events_of_rows(self, lines: list[bytes]) -> np.ndarray:
        rows = []
        for line in lines:
            parts = line.split(b"\t")
            op = self._ops.get(parts[1].decode(errors="replace")[len(_PROBE_PREFIX):]) if len(parts) > 1 else None
            try:
                if op is None or len(parts) != 13:
                    raise ValueError
                rows.append([op, *map(int, parts[2:])])
            except ValueError:
                self.unknown_lines += 1
        return self._records(np.array(rows, dtype=np.int64).reshape(-1, 12))

    def _records(self, v: np.ndarray) -> np.ndarray:
        # columns: op start latency tgid tid fd dev ino offset requested ret flags
        out = np.zeros(len(v), dtype=self._event)
        out["op"], out["start_ns"], out["latency_ns"] = v[:, 0], v[:, 1], v[:, 2]
        out["tgid"], out["tid"], out["fd"], out["dev"] = v[:, 3], v[:, 4], v[:, 5], v[:, 6]
        out["ino"], out["offset"], out["requested"] = v[:, 7], v[:, 8], v[:, 9]
        out["ret"], out["flags"] = v[:, 10], v[:, 11]
        return out

    def _facts_of(self, lines: list[bytes]) -> np.ndarray:
        out = np.zeros(len(lines), dtype=self._meta)
        out["fd"] = out["dirfd"] = -1
        comm_max, path_max = out["comm"].shape[1] - 1, out["path"].shape[1] - 1
        for i, line in enumerate(lines):
            row = out[i:i + 1]
            if line[:1] == b"F":
                # F ts tgid fd dirfd dev ino magic comm path (the path may hold tabs: last)
                p = line.split(b"\t", 9)
                row["kind"], row["ts_ns"], row["tgid"], row["fd"] = self._file, int(p[1]), int(p[2]), int(p[3])
                # the tracepoint's int dirfd arrives zero-extended (AT_FDCWD as 4294967196)
                row["dirfd"] = np.int64(int(p[4])).astype(np.uint32).view(np.int32)
                row["dev"], row["ino"], row["s_magic"] = int(p[5]), int(p[6]), int(p[7])
                comm, path = p[8], p[9] if len(p) > 9 else b""
            elif line[:1] == b"K":
                # K ts parent child comm
                p = line.split(b"\t", 4)
                row["kind"], row["ts_ns"], row["parent_tgid"], row["tgid"] = self._fork, int(p[1]), int(p[2]), int(p[3])
                comm, path = p[4], b""
            else:
                # P ts tgid comm file
                p = line.split(b"\t", 4)
                row["kind"], row["ts_ns"], row["tgid"] = self._exec, int(p[1]), int(p[2])
                comm, path = p[3], p[4] if len(p) > 4 else b""
            row["comm"][0, :min(len(comm), comm_max)] = np.frombuffer(comm[:comm_max], np.uint8)
            row["path"][0, :min(len(path), path_max)] = np.frombuffer(path[:path_max], np.uint8)
        return out


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

    backend = "bpftrace"
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
        self._wakeups = select.epoll()
        self._exit_fds: set[int] = set()
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
        self._wakeups.register(out, select.EPOLLIN)
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
        lines = [l.decode(errors="replace").strip() for l in self._stderr]
        # bpftrace 0.17 warns about RLIMIT_MEMLOCK even when the load then works
        useful = [l for l in lines if l and "RLIMIT_MEMLOCK" not in l and "WARNING" not in l
                  and not l.startswith("~")]
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
        exited = False
        for fd, _ in self._wakeups.poll(timeout):
            if fd in self._exit_fds:
                self._wakeups.unregister(fd)
                self._exit_fds.discard(fd)
                os.close(fd)
                exited = True
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
        try:
            fd = os.pidfd_open(pid)
        except (OSError, AttributeError):
            return
        self._exit_fds.add(fd)
        self._wakeups.register(fd, select.EPOLLIN)

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
        for fd in self._exit_fds:
            os.close(fd)
        self._exit_fds.clear()
        if self._proc is not None:
            for stream in (self._proc.stdout, self._proc.stderr):
                try:
                    stream.close()
                except OSError:
                    pass
