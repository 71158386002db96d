"""One recording: drain the probe's rings into the trace until a stop condition, then close it.

The loop sleeps on the event ring (the probe wakes it only when a batch is waiting) with a
short timeout, so records reach the trace file within a second even when the benchmark is
slow, and a SIGKILLed collector leaves a trace readable up to its last flush.
"""

from __future__ import annotations

import os
import platform
import resource
import signal
import socket
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from iowitness import units
from iowitness.collector import backends, blockdev, gate_programs, mounts, processes, stats_windows, targets
from iowitness.collector.format.traceformat import STATS_SAMPLED, dev_name, lost_total, not_followed
from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.collector.probe import Probe
from iowitness.errors import OutputError
from iowitness.probes.layout import layout
from iowitness.version import __version__

# longest sleep: a ring that fills (the event area's doorbell, the others) or a launched or
# attached process that exits wakes the collector sooner; each wake-up costs a drain of every
# ring, which at a slow benchmark's few thousand calls per second was most of the collector's time
POLL_SECONDS = 0.5
FLUSH_SECONDS = 0.5
PROCESS_CHECK_SECONDS = 0.5   # processes the probe followed in later (forks) have no exit wake-up
STATUS_AFTER_SECONDS = 3.0
SUMMARY_SECONDS = 5.0   # --summary: how often a snapshot of the kernel's aggregates is saved
# programs whose skipped runs lose no record, only a time one has (a libaio request's kernel
# completion): counted apart from missed_runs, which are lost records
TIMES_ONLY = ("on_iomap_dio_complete",)


def clock_pair() -> dict:
    """CLOCK_MONOTONIC (the probe's clock) and wall time, read back to back."""
    mono = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    wall = time.time_ns()
    return {"monotonic_ns": mono, "realtime_ns": wall, "offset_ns": wall - mono}


def base_metadata(mode: str, command: list[str] | None, probe: Probe, trace_path: str,
                  attached: list[dict] | None = None) -> dict:
    """START's metadata. `attached`: what /proc said of each process attached to (attach --pid)."""
    uname = platform.uname()
    out_mount = mounts.mount_of(os.path.dirname(os.path.abspath(trace_path)))
    extra = {"attached": attached} if attached else {}
    return {
        "iowitness_version": __version__,
        "backend": backends.LIBBPF,
        "mode": mode,
        "command": command,
        **extra,
        # where relative paths of the command line (a fio job file) are found
        "cwd": (attached[0].get("cwd") if attached else None) or os.getcwd(),
        "collector_argv": sys.argv,
        "host": socket.gethostname(),
        "kernel": f"{uname.system} {uname.release} {uname.version} {uname.machine}",
        "clock_start": clock_pair(),
        "file_rules": [{"path": r.path, "directory": not r.name} for r in probe.config.file_set.rules],
        "all_files": probe.config.file_set.all_files,
        # what the all-files mode skips unless named with --file: a report says so when it
        # finds the benchmark's files among them
        "excluded_prefixes": list(targets.DEFAULT_EXCLUDES) if probe.config.file_set.all_files else [],
        "all_processes": probe.config.all_processes,
        "targets": [{"dev": f.kdev, "ino": f.ino, "path": f.path} for f in probe.config.file_set.known],
        "ring_buffer_bytes": probe.ring_bytes,
        # which probe object recorded (collector/kfeatures.py): "fast" or "compat", and why
        "probe_path": {"path": probe.choice.path, "why": probe.choice.why, "missing": probe.choice.missing},
        "summary_mode": probe.config.summary,
        # the collector's CPU time before recording (Python, numpy, loading the probe): fixed per
        # run, so the cost per event is judged on what comes after it
        "collector_cpu_start_s": _cpu_seconds(),
        "trace_file": {"path": os.path.abspath(trace_path),
                       "mount": out_mount.describe() if out_mount else None},
    }


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Stats:
    events: int = 0
    data_bytes: int = 0
    facts: int = 0
    block: int = 0
    files: dict = field(default_factory=dict)   # (dev, ino) -> description
    summarized_calls: int = 0                   # --summary: calls in the last snapshot
    sampled_calls: int = 0                      # calls made while BPF statistics were on
    sampled_s: float = 0.0                      # and for how long they were on


class Recorder:
    def __init__(self, probe: Probe, writer: TraceWriter, quiet: bool = False):
        self.probe, self.writer, self.quiet = probe, writer, quiet
        self.stats = Stats()
        self._stop_reason: str | None = None
        self.stop_signal: int | None = None   # SIGINT or SIGTERM, when one ended the recording
        # op -> is a read or write, as a table: indexing costs a third of np.isin per event
        self._is_data = np.zeros(1 << 16, dtype=bool)
        ops = layout().names("iow_op", "IOW_OP_")
        self._is_data[[v for v, name in ops.items() if layout().op_kinds[name] in ("read", "write")]] = True
        self._started = time.monotonic()
        self._status_shown = False
        # shared with a launched benchmark's output capture (statusline.py); None for attach
        self.terminal = None
        self._windows = stats_windows.Windows(self._started)
        self._watched = 0
        self._cpu_at_recording_start: float | None = None
        # per traced process, its working directory as last read, and its parent (fork facts):
        # a process that has exited by the drain has its relative paths resolved by these
        self._cwd: dict[int, str] = {}
        self._parent: dict[int, int] = {}
        # attach --pid: the programs the process attached to runs (collector/gate_programs.py):
        # the one that is the benchmark is the trace's command at the end
        self.gate: gate_programs.GatePrograms | None = None
        # the first counters once the probe is attached: the diskstats cross-check starts there
        if probe.attached:
            self.sample_device_counters()
        else:
            probe.on_attached.append(self.sample_device_counters)
        # the first window opens now, before the benchmark is let go: a short run is timed whole
        self.stats_window(True)

    def request_stop(self, reason: str) -> None:
        if self._stop_reason is None:
            self._stop_reason = reason

    def install_signal_handlers(self) -> None:
        def handler(signum, _frame):
            if self.stop_signal is None:
                self.stop_signal = signum
            self.request_stop("interrupted" if signum == signal.SIGINT else "terminated")
        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)

    def abandon(self) -> None:
        """After a fault: close the trace as it is, without END (it reads as incomplete, with
        every chunk written before the fault), and never raise: the fault is what to report."""
        self.clear_status()
        try:
            self.writer.abort()
        except OutputError:
            pass   # the records still waiting could not be written either; the file is closed

    def drain(self) -> int:
        events = self.probe.events.read()
        if events.size:
            self.writer.write_events(events)
            self.stats.events += events.size
            data = self._is_data[events["op"]] & (events["ret"] > 0)
            self.stats.data_bytes += int(events["ret"][data].sum())
        facts = self.probe.facts.read()
        if facts.size:
            self._describe_files(facts)
            if self.gate is not None:
                self.gate.note(facts, layout().enums["iow_meta_kind"])
            self.writer.write_facts(facts)
            self.stats.facts += facts.size
            self._note_new_devices()
        block, offcpu = self.probe.block.read(), self.probe.offcpu.read()
        self.writer.write_device(block, offcpu)
        printed = getattr(self.probe, "printed", None)   # backends without the output timeline: None
        if printed is not None:
            self.writer.write_printed(printed.read())
        self.stats.block += block.size
        return events.size + facts.size + block.size + offcpu.size

    def _note_new_devices(self) -> None:
        """A device the probe just started watching (a target opened on it) gets its counters read
        at once, so that the diskstats cross-check can start there."""
        watched = len(self.probe.watched_devices())
        if watched != self._watched:
            self._watched = watched
            self.sample_device_counters()

    def sample_device_counters(self) -> None:
        """/proc/diskstats and /proc/stat now: the device view's independent cross-check."""
        try:
            self.writer.write_sample(blockdev.sample())
        except OSError:
            pass  # a machine without /proc/diskstats: the view then rests on the probe alone

    def note_known_files(self, known) -> None:
        """Files registered from user space (open before tracing): stored as file facts too."""
        if not known:
            return
        facts = np.zeros(len(known), dtype=layout().meta)
        facts["kind"] = layout().enums["iow_meta_kind"]["IOW_META_FILE"]
        facts["ts_ns"] = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        facts["fd"] = facts["dirfd"] = -1
        limit = facts["path"].shape[1] - 1
        for i, f in enumerate(known):
            facts[i]["dev"], facts[i]["ino"], facts[i]["tgid"] = f.kdev, f.ino, f.tgid
            raw = os.fsencode(f.path)[:limit]
            facts[i]["path"][:len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        self._describe_files(facts)
        self.writer.write_facts(facts)
        self.stats.facts += len(known)

    def _describe_files(self, facts: np.ndarray) -> None:
        """Make relative paths absolute (in place, before the facts are written) and note each file."""
        file_kind = layout().enums["iow_meta_kind"]["IOW_META_FILE"]
        fork_kind = layout().enums["iow_meta_kind"]["IOW_META_FORK"]
        for fact in facts[facts["kind"] == fork_kind]:
            self._parent[int(fact["tgid"])] = int(fact["parent_tgid"])
            self._cwd_of(int(fact["tgid"]))   # read while the child is likely still there
        table = None
        for i in np.flatnonzero(facts["kind"] == file_kind):
            fact = facts[i]
            # bytes that are not UTF-8 stay the bytes they were (surrogateescape), in the trace too
            path = os.fsdecode(bytes(fact["path"]).split(b"\0", 1)[0])
            if path and not path.startswith("/"):
                # relative to the process's directory, readable while the process lives; one
                # that has exited: the directory it was last seen in, or else its parent's,
                # which it started in (a benchmark's short-lived children: IOzone -t)
                base = (self._cwd_of(int(fact["tgid"])) if fact["dirfd"] == -100
                        else _link(f"/proc/{fact['tgid']}/fd/{fact['dirfd']}"))
                if base is not None:
                    path = os.path.normpath(os.path.join(base, path))
                raw = os.fsencode(path)[:facts["path"].shape[1] - 1]
                facts["path"][i] = 0
                facts["path"][i, :len(raw)] = np.frombuffer(raw, dtype=np.uint8)
            key = (int(fact["dev"]), int(fact["ino"]), path)
            if key in self.stats.files:
                continue
            table = table or mounts.mounts()
            mount = next((m for m in table if m.kdev == key[0]), None)
            # in END's JSON as the reader shows names: undecodable bytes as \xff escapes
            shown = os.fsencode(path).decode("utf-8", errors="backslashreplace")
            self.stats.files[key] = {"dev": key[0], "ino": key[1], "path": shown,
                                     **(mount.describe() if mount else {"device": dev_name(key[0])})}
            own = blockdev.special_device(path)
            if own is not None:
                # a disk opened as a file (fio on /dev/sdb): its I/O is its own device's
                self.stats.files[key].update(block_device=os.path.realpath(path), device=dev_name(own))
            elif mount is not None and blockdev.sysfs_dir(key[0]) is None:
                # btrfs: the probe watched the file's anonymous device number, which no block
                # request carries; the disk is the mount's source, watched from now on
                disk, _ = blockdev.device_of(path, table)
                if disk is not None:
                    self.probe.watch_device(disk)

    def _cwd_of(self, tgid: int) -> str | None:
        """A traced process's working directory: read from /proc while it lives, else the one
        last read, else its nearest ancestor's (None: none known)."""
        seen: set[int] = set()
        while tgid and tgid not in seen:
            seen.add(tgid)
            now = _link(f"/proc/{tgid}/cwd")
            if now is not None:
                self._cwd[tgid] = now
            if tgid in self._cwd:
                return self._cwd[tgid]
            tgid = self._parent.get(tgid, 0)
        return None

    def counters(self) -> dict:
        cost = self.probe.program_cost()
        # runs the kernel skipped because the program was already running on that CPU (a block
        # completion interrupting the block probe, say): what they would have recorded is missing
        missed = sum(p["recursion_misses"] for name, p in cost["programs"].items() if name not in TIMES_ONLY)
        counters = {"events": self.stats.events, "facts": self.stats.facts, "block_requests": self.stats.block,
                    **self.probe.lost(), "missed_runs": missed}
        times_missed = sum(cost["programs"].get(name, {}).get("recursion_misses", 0) for name in TIMES_ONLY)
        if times_missed:
            counters["aio_completions_missed"] = times_missed
        async_calls = self.probe.async_calls()
        if async_calls:
            counters["async_calls"] = async_calls
        if self.probe.config.summary:
            counters["calls"] = self.stats.summarized_calls
        counters["probe_cost"] = {**cost, "sampled_calls": self.stats.sampled_calls,
                                  "sampled_s": round(self.stats.sampled_s, 6)}
        return counters

    def _calls(self) -> int:
        if self.probe.config.summary:
            return int(self.probe.summary_records()["calls"].sum())
        return self.stats.events

    @property
    def _stats_in_windows(self) -> bool:
        """BPF statistics are turned on and off by us (not off, not kept on by the sysctl, not
        refused by the kernel)."""
        return self.probe.stats_mode == STATS_SAMPLED

    def stats_window(self, on: bool) -> None:
        """Open or close a window of BPF statistics, counting the calls made inside it."""
        if not self._stats_in_windows:
            return
        if on == self._windows.is_open:
            return
        self.drain()   # calls made before the switch belong to the other side of it
        now = time.monotonic()
        if on:
            if self.probe.stats_window(True):
                self._windows.opened(now, self._calls())
        else:
            self.probe.stats_window(False)
            calls, seconds = self._windows.closed(now, self._calls())
            self.stats.sampled_calls += calls
            self.stats.sampled_s += seconds

    def _update_window(self, now: float) -> None:
        """Open the statistics window when it is due, close it when it is done."""
        if not self._stats_in_windows:
            return
        if self._windows.due(now):
            self.stats_window(True)
        elif self._windows.is_open and self._windows.done(now, self._calls()):
            self.stats_window(False)

    def _to_window_edge(self, now: float) -> float:
        """Seconds until the statistics window should open or be looked at again (inf: never)."""
        return self._windows.to_edge(now) if self._stats_in_windows else float("inf")

    def save_summary(self) -> None:
        """--summary: a snapshot of the kernel's aggregates; the last one holds the run's totals."""
        rows = self.probe.summary_records()
        self.stats.summarized_calls = int(rows["calls"].sum())
        self.writer.write_summary(rows)

    def _status(self, force_line: bool = False) -> None:
        elapsed = time.monotonic() - self._started
        if self.quiet or elapsed < STATUS_AFTER_SECONDS:
            return
        c = self.counters()
        line = (f"[iowitness] {elapsed:6.1f} s  events {c['events']:,} "
                f"({c['events'] / elapsed:,.0f}/s)  bytes {units.bytes_(self.stats.data_bytes)}  "
                f"lost {lost_total(c):,}")
        unfollowed = not_followed(c)   # {"files_not_followed": 20, ...}
        if unfollowed:
            line += "  NOT FOLLOWED " + ", ".join(f"{n:,} {name.split('_')[0]}" for name, n in unfollowed.items())
        if sys.stderr.isatty():
            if self.terminal is not None and not self.terminal.drawable:
                # the benchmark is mid-line or shows its own progress line (statusline.py)
                self.clear_status()
                return
            sys.stderr.write("\r\x1b[K" + line)
            self._status_shown = True
            if self.terminal is not None:
                self.terminal.shown(True)
        elif force_line:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def clear_status(self) -> None:
        # a line the capture cleared already may hold the benchmark's output by now: left alone
        if self._status_shown and (self.terminal is None or self.terminal.is_shown):
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
        self._status_shown = False
        if self.terminal is not None:
            self.terminal.shown(False)

    def loop(self, is_finished, duration: float | None = None, on_tick=None) -> str:
        """Drain until is_finished() names a reason, a stop is requested, or duration passes."""
        if self._cpu_at_recording_start is None:
            # what came before (Python, numpy, loading and attaching the probe, starting the
            # benchmark) is start-up, paid once per run whatever the benchmark does
            self._cpu_at_recording_start = _cpu_seconds()
        last_flush = last_check = last_status = last_line = time.monotonic()
        last_summary = last_flush
        self._update_window(last_flush)
        deadline = None if duration is None else time.monotonic() + duration
        while self._stop_reason is None:
            now = time.monotonic()
            # wake for the deadline and for the next edge of a statistics window, so that a
            # window lasts stats_windows.WINDOW_S and not up to a whole sleep more
            timeout = min(POLL_SECONDS, self._to_window_edge(now))
            if deadline is not None:
                timeout = max(0.0, min(timeout, deadline - now))
            exited = self.probe.wait(timeout)
            self.drain()
            if on_tick:
                on_tick()
            now = time.monotonic()
            if exited or now - last_check >= PROCESS_CHECK_SECONDS:
                last_check = now
                reason = is_finished()
                if reason:
                    self.request_stop(reason)
            if deadline is not None and now >= deadline:
                self.request_stop(f"--duration {duration:g} s reached")
            self._update_window(now)
            if self.probe.config.summary and now - last_summary >= SUMMARY_SECONDS:
                self.save_summary()
                last_summary = now
            if now - last_flush >= FLUSH_SECONDS:
                self.sample_device_counters()
                self.writer.write_counters(self.counters())
                self.writer.flush()
                last_flush = now
            if now - last_status >= 1.0:
                last_status = now
                force = now - last_line >= 10.0
                if force:
                    last_line = now
                self._status(force_line=force)
        return self._stop_reason

    def finish(self, end_meta: dict) -> dict:
        """Drain what is left, write the last counters and the end record, close the trace."""
        # write-back of the benchmark's last writes may still be under way: the kernel's
        # periodic flusher runs every dirty_writeback_centisecs; the samples say what followed
        self.sample_device_counters()
        # a backend that delivers through another process (bpftrace) ends it first: its last
        # records then reach us before the last drain
        getattr(self.probe, "finish", lambda: None)()
        while self.drain():
            pass
        self.stats_window(False)
        self.clear_status()
        if self.probe.config.summary:
            self.save_summary()
        counters = self.counters()
        self.writer.write_counters(counters)
        self.writer.flush()   # the records still gathered in the writer count in trace_file_bytes
        end = {"clock_end": clock_pair(), "stop_reason": self._stop_reason, "counters": counters,
               "files": list(self.stats.files.values()), **end_meta}
        benchmark, programs = (self.gate.benchmark(time.clock_gettime_ns(time.CLOCK_MONOTONIC)) if self.gate
                               else (None, None))
        if benchmark is not None:
            # the process attached to ran another program since, or a shell attached to ran one:
            # that is the benchmark (START's command stays what was attached to, in "attached")
            end["command_exec"] = benchmark
            end["command"] = benchmark["cmdline"] or [benchmark["path"]]
            if benchmark["cwd"]:
                end["cwd"] = benchmark["cwd"]
        if programs is not None:
            end["gate_programs"] = programs
        # a backend without the block probe (bpftrace) leaves it out: reports then say so,
        # instead of "no block device under the target files"
        end["device_view"] = self.device_view() if getattr(self.probe, "has_device_view", True) else None
        usage = resource.getrusage(resource.RUSAGE_SELF)
        end["collector_cpu_s"] = {"user": usage.ru_utime, "system": usage.ru_stime}
        if self._cpu_at_recording_start is not None:
            end["collector_cpu_recording_s"] = usage.ru_utime + usage.ru_stime - self._cpu_at_recording_start
        end["trace_file_bytes"] = self.writer.file_bytes()
        self.writer.close(end)
        return end


    def device_view(self) -> dict:
        """The devices the block probe watched, and for files without one, why not."""
        watched = self.probe.watched_devices()
        none = {}
        for f in self.stats.files.values():
            source = f.get("block_device")
            if blockdev.sysfs_dir(f["dev"]) is None and not (source and os.path.exists(source)):
                none[f["path"]] = (f"{f.get('mount_point') or 'its mount'} is {f.get('fs_type') or 'a file system'}, "
                                   "which has no block device: its I/O never reaches a disk")
        return {**blockdev.header(), "devices": [blockdev.describe(d) for d in sorted(watched)],
                "no_block_device": none, "offcpu": not self.probe.config.all_processes,
                "watched_from_start": sorted(self.probe.devices_from_start)}


def processes_gone(probe: Probe):
    """A stop condition: every process of the set has exited."""
    def check() -> str | None:
        alive = 0
        for tgid in probe.processes():
            if processes.alive(tgid):
                alive += 1
            else:
                probe.forget_process(tgid)
        return None if alive else "every traced process exited"
    return check


def _link(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None
