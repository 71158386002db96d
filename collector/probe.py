"""The iowitness probe, configured and running: the one place that knows its maps by name."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iowitness.collector import aggregates, blockdev, eventarea, kfeatures, libbpf, mounts, preflight
from iowitness.collector.format.traceformat import ASYNC_CALLS, LOST_SLOTS, STATS_OFF, STATS_SAMPLED, STATS_SYSCTL
from iowitness.collector.libbpf import BpfObject, possible_cpus
from iowitness.collector.ringbuf import RingReader
from iowitness.collector.targets import FileSet, KnownFile, exclude_entries, file_key, file_state, name_key
from iowitness.collector.wakeups import Wakeups
from iowitness.errors import CannotTrace
from iowitness.probes.layout import layout

DEFAULT_RING_BYTES = 64 << 20   # the event area's budget, shared out between the CPUs
MAX_RING_BYTES = 1 << 30        # rounded up per CPU, that stays under the kernel's 4 GiB per map
META_RING_BYTES = 1 << 20
# the output timeline: 4 MiB, about a thousand writes to fd 1 and 2 between two drains (probes/output.bpf.h)
OUTPUT_RING_BYTES = 4 << 20
DEVICE_RING_BYTES = 4 << 20   # block requests and off-CPU stretches: each its own ring of this size
DOORBELL_RING_BYTES = 1 << 16 # wake-ups only (collector/eventarea.py)
# Sizes of the kernel's target sets. Neither is preallocated: the kernel allocates an entry
# when a file or process joins, plus 16 bytes of hash buckets per possible entry at the load
# (4 MiB and 1 MiB for these defaults)
DEFAULT_MAX_FILES = 1 << 18       # target files over the whole run (files never leave the set)
DEFAULT_MAX_PROCESSES = 1 << 16   # processes of the set alive at once (they leave it at exit)
MAX_SET_ENTRIES = 1 << 24         # the largest either set may be asked to be (256 MiB of buckets)
DEFAULT_MAX_DEVICES = 4096
# programs only on_sys_exit reaches, by a tail call (probes/iowitness.bpf.c): loaded, not attached
TAIL_CALLED = ("on_aio_exit",)


@dataclass
class ProbeConfig:
    file_set: FileSet
    all_processes: bool = False
    ring_bytes: int = DEFAULT_RING_BYTES
    # aggregate in the kernel (struct iow_summary) instead of one ring record per call
    summary: bool = False
    # ask the kernel to time our programs (BPF_ENABLE_STATS) for the observer-cost line
    bpf_stats: bool = True
    # the kernel's sets: files followed over the run, processes alive at once (a fuller set
    # counts each miss: traceformat.NOT_FOLLOWED)
    max_files: int = DEFAULT_MAX_FILES
    max_processes: int = DEFAULT_MAX_PROCESSES
    # block devices the device view can watch (no option: a benchmark rarely spans more)
    max_devices: int = DEFAULT_MAX_DEVICES
    # which object: "auto" (probe the kernel), "fast" or "compat" (collector/kfeatures.py);
    # None: IOWITNESS_PROBE, else auto
    probe_path: str | None = None


def _kernel_has_tracepoint(name: str) -> bool:
    try:
        return f"btf_trace_{name}".encode() in Path("/sys/kernel/btf/vmlinux").read_bytes()
    except OSError:
        return True   # let the load say what is wrong


class Probe:
    def __init__(self, config: ProbeConfig):
        preflight.require_tracing()
        L = layout()
        self.config = config
        cpus = possible_cpus()
        # --summary writes no record: the smallest area is enough
        budget = 0 if config.summary else config.ring_bytes
        per_cpu = eventarea.events_per_cpu(budget, cpus, L.event.itemsize)
        self.ring_bytes = cpus * per_cpu * L.event.itemsize
        settings = np.zeros(1, dtype=L.structs["iow_settings"])
        settings["area_events"] = per_cpu
        settings["doorbell_events"] = per_cpu // eventarea.DOORBELL_SHARE
        settings["mode"] = (L.constants["IOW_MODE_ALL_FILES"] if config.file_set.all_files
                            else L.constants["IOW_MODE_FILE_SET"])
        settings["all_processes"] = int(config.all_processes)
        settings["collector_tgid"] = os.getpid()
        settings["summary"] = int(config.summary)

        self._block_devs = None   # the device filter, once the device view is open
        self._devices_not_watched = 0   # devices user space could not add to a full filter
        self.choice = kfeatures.choose(config.probe_path)
        self._obj = BpfObject(self.choice.object)
        try:
            self._obj.set_initial_value(".rodata.settings", settings.tobytes())
            self._obj.set_max_entries("event_area", cpus * per_cpu)
            self._obj.set_max_entries("event_positions", cpus)
            self._obj.set_max_entries("meta_events", META_RING_BYTES)
            self._obj.set_max_entries("doorbell", DOORBELL_RING_BYTES)
            self._obj.set_max_entries("block_events", DEVICE_RING_BYTES)
            self._obj.set_max_entries("offcpu_events", DEVICE_RING_BYTES)
            self._obj.set_max_entries("files", config.max_files)
            self._obj.set_max_entries("procs", config.max_processes)
            self._obj.set_max_entries("block_devs", config.max_devices)
            if self.choice.path == "compat":
                self._compat_programs()
            # block_io_start (Linux 6.5) only names who submitted a request; without it the
            # device view still has every request, with the submitter unknown
            if not _kernel_has_tracepoint("block_io_start"):
                self._obj.skip_program("on_block_io_start")
            # a kernel without io_uring (CONFIG_IO_URING=n) has none of its tracepoints: no
            # request can be made there, so nothing is missed by not loading them
            for program, tracepoint in (("on_uring_submit", "io_uring_submit_req"),
                                        ("on_uring_complete", "io_uring_complete"),
                                        ("on_uring_create", "io_uring_create")):
                if not _kernel_has_tracepoint(tracepoint):
                    self._obj.skip_program(program)
            # iomap's direct-I/O completion (a libaio request's kernel completion) exists only
            # with an iomap file system built in; without it a request has its reap time only
            if not _kernel_has_tracepoint("iomap_dio_complete"):
                self._obj.skip_program("on_iomap_dio_complete")
            self._obj.load()
            self._procs = self._obj.map("procs")
            self._files = self._obj.map("files")
            self._lost = self._obj.map("lost")
            self._async_calls = self._obj.map("async_calls")
            self._summary_slots = self._obj.map("summary_slots")
            self._summary = self._obj.map("summary")
            names = self._obj.map("names")
            for rule in config.file_set.rules:
                names.update(name_key(rule), b"\x01")
            self.register_files(config.file_set.known)
            excludes = self._obj.map("excludes")
            for slot, entry in enumerate(exclude_entries()):
                excludes.update(struct.pack("<I", slot), entry)
            doorbell = RingReader(self._obj.map("doorbell").fd, DOORBELL_RING_BYTES, np.dtype("<u8"))
            self.events = eventarea.EventArea(self._obj.map("event_area").fd, self._obj.map("event_positions").fd,
                                              doorbell, cpus, per_cpu, L.event)
            self.facts = RingReader(self._obj.map("meta_events").fd, META_RING_BYTES, L.meta)
            # the benchmark's writes to its fd 1 and 2 (probes/output.bpf.h): the output timeline
            self.printed = RingReader(self._obj.map("output_events").fd, OUTPUT_RING_BYTES, L.structs["iow_output"])
            self._open_device_view(L)
            # one sleep for every ring: the event area's doorbell, and the facts, block-request
            # and off-CPU rings when they fill (the probe wakes us then, not per record)
            self._wakeups = Wakeups()
            for reader in (doorbell, self.facts, self.block, self.offcpu, self.printed):
                self._wakeups.on_readable(reader.fd)
        except BaseException:
            self._obj.close()
            raise
        self._cpus = possible_cpus()
        self.attached = False
        # called right after the programs are attached, before the benchmark is let go
        self.on_attached: list = []
        self._stats_fd = None
        # stats_mode says how (traceformat.STATS_*), stats_source says it in words for people
        self.stats_mode, self.stats_source = STATS_OFF, "off"
        if config.bpf_stats:
            # sampled: timing every program run costs two clock reads per run (about 160 ns
            # per traced syscall in a tight loop here), so the statistics are on only in short windows (the
            # Recorder opens them); a sysctl that keeps them on for everyone is used as it is
            if libbpf.stats_enabled_by_sysctl():
                self.stats_mode, self.stats_source = STATS_SYSCTL, "sysctl kernel.bpf_stats_enabled"
            else:
                self.stats_mode, self.stats_source = STATS_SAMPLED, "BPF_ENABLE_STATS, sampled"

    def _compat_programs(self) -> None:
        """The compatible object keeps threads' spilled calls in a hash (not task storage):
        room for every thread of the process set, and the block_rq_issue program that fits
        this kernel's tracepoint (the request first since Linux 5.11, second before)."""
        self._obj.set_max_entries("starts", min(4 * self.config.max_processes, MAX_SET_ENTRIES))
        if kfeatures.tracepoint_args("block_rq_issue") == 2:
            self._obj.skip_program("on_block_rq_issue")
        else:
            self._obj.skip_program("on_block_rq_issue_q")

    def _open_device_view(self, L) -> None:
        """The block-request and off-CPU rings, and the device filter seeded from the file set."""
        self._block_devs = self._obj.map("block_devs")
        self.block = RingReader(self._obj.map("block_events").fd, DEVICE_RING_BYTES, L.structs["iow_block"])
        self.offcpu = RingReader(self._obj.map("offcpu_events").fd, DEVICE_RING_BYTES, L.structs["iow_offcpu"])
        table = mounts.mounts()
        paths = [r.path for r in self.config.file_set.rules] + [f.path for f in self.config.file_set.known]
        self.devices_from_start: set[int] = set()
        for path in paths:
            kdev, _ = blockdev.device_of(path, table)
            if kdev is not None:
                self.watch_device(kdev)
                self.devices_from_start.add(kdev)

    def wait(self, timeout: float) -> bool:
        """Sleep until a ring asks to be read, a process given to wake_on_exit exits, or the
        timeout passes. True when a process exited."""
        return self._wakeups.wait(timeout)

    def wake_on_exit(self, pid: int) -> None:
        """Let wait() return as soon as this process exits (a pidfd in the same epoll set)."""
        self._wakeups.on_exit(pid)

    def watch_device(self, kdev: int) -> None:
        if self._block_devs.lookup(struct.pack("<I", kdev), 1) is not None:
            return
        try:
            self._block_devs.update(struct.pack("<I", kdev), b"\x01")
        except CannotTrace:
            # the filter is full: counted beside the probe's own count of the same miss
            self._devices_not_watched += 1

    def watched_devices(self) -> list[int]:
        return [struct.unpack("<I", k)[0] for k in self._block_devs.keys(4)]

    def add_process(self, tgid: int) -> None:
        self._procs.update(struct.pack("<I", tgid), b"\x01")

    def processes(self) -> list[int]:
        return [struct.unpack("<I", k)[0] for k in self._procs.keys(4)]

    def forget_process(self, tgid: int) -> None:
        self._procs.delete(struct.pack("<I", tgid))

    def register_files(self, known: list[KnownFile]) -> None:
        """Files open before tracing (attach): targets from now on, and their disks watched."""
        table = mounts.mounts() if known else []
        for f in known:
            self._files.update(file_key(f.kdev, f.ino), file_state(f.generation))
            kdev, _ = blockdev.device_of(f.path, table)
            if kdev is not None and self._block_devs is not None:   # None: during the load
                self.watch_device(kdev)
                self.devices_from_start.add(kdev)

    def attach(self) -> list[str]:
        # sched_switch first: a call that blocks while sys_enter is attached keeps its entry
        # stamp across the switch only once on_sched_switch runs (an io_getevents of a
        # running fio, say, would otherwise lose its requests as not followed)
        programs = self._obj.attach_all(first=("on_sched_switch",), never=TAIL_CALLED)
        self.attached = True
        for hook in self.on_attached:
            hook()
        return programs

    def lost(self) -> dict[str, int]:
        """The kernel's counts of what it could not deliver or follow, by counter name."""
        counts = {}
        for name, slot in LOST_SLOTS.items():
            raw = self._lost.lookup(struct.pack("<I", layout().constants[slot]), 8 * self._cpus)
            counts[name] = sum(struct.unpack(f"<{self._cpus}Q", raw)) if raw else 0
        counts["devices_not_watched"] += self._devices_not_watched
        return counts

    def async_calls(self) -> dict[str, dict[str, int]]:
        """Calls that drive asynchronous I/O (io_uring_enter, io_submit, io_getevents): how
        many, and the time inside them, by name; only the ones made."""
        found = {}
        for name, slot in ASYNC_CALLS.items():
            raw = self._async_calls.lookup(struct.pack("<I", layout().constants[slot]), 16 * self._cpus)
            values = struct.unpack(f"<{2 * self._cpus}Q", raw) if raw else (0, 0)
            calls, ns = sum(values[0::2]), sum(values[1::2])
            if calls:
                found[name] = {"calls": calls, "ns": ns}
        return found

    def stats_window(self, on: bool) -> bool:
        """Open (on) or close a window of BPF statistics; False when the kernel refuses."""
        if on and self._stats_fd is None and self.stats_mode == STATS_SAMPLED:
            self._stats_fd = libbpf.enable_stats()
            if self._stats_fd is None:
                self.stats_mode, self.stats_source = STATS_OFF, "refused by the kernel (BPF_ENABLE_STATS)"
                return False
        elif not on and self._stats_fd is not None:
            os.close(self._stats_fd)
            self._stats_fd = None
        return True

    def program_cost(self) -> dict:
        """The kernel's own measure of our programs this run (zero when stats are off)."""
        programs = self._obj.program_stats()
        return {"source": self.stats_source, "mode": self.stats_mode,
                "run_time_ns": sum(p["run_time_ns"] for p in programs.values()),
                "run_cnt": sum(p["run_cnt"] for p in programs.values()),
                "programs": programs}

    def verified_instructions(self) -> dict[str, int]:
        """Per program, the instructions the verifier walked to load it (collector/libbpf.py)."""
        return self._obj.verified_instructions()

    def summary_records(self) -> np.ndarray:
        """--summary: the kernel's aggregates now, one row per key, the CPUs added up."""
        return aggregates.combine(self._summary_slots, self._summary, self._cpus)

    def close(self) -> None:
        if self._stats_fd is not None:
            os.close(self._stats_fd)
            self._stats_fd = None
        if getattr(self, "_wakeups", None):
            self._wakeups.close()
            self._wakeups = None
        for reader in (getattr(self, "events", None), getattr(self, "facts", None),
                       getattr(self, "block", None), getattr(self, "offcpu", None)):
            if reader:
                reader.close()
        self._obj.close()
