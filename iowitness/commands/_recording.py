"""What `run` and `attach` share: their options, and the life of one recording."""

from __future__ import annotations

import argparse
import math
import os
import re
import signal
import sys
import time

from iowitness.collector import blockdev, mounts, preflight, stats_windows
from iowitness.collector.format.traceformat import lost_total, missing_text, names_lost_text, not_followed_text
from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.collector.kfeatures import PATHS as PROBE_PATHS
from iowitness.collector.probe import (
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_PROCESSES,
    DEFAULT_RING_BYTES,
    MAX_RING_BYTES,
    MAX_SET_ENTRIES,
    Probe,
    ProbeConfig,
)
from iowitness.collector.session import Recorder, base_metadata
from iowitness.collector.targets import FileSet
from iowitness.errors import Interrupted, OutputError, UsageError
from iowitness.escape import terminal
from iowitness.outputfile import TRACE_HINT, Output, add_mode_option, parse_mode

BACKENDS = ("libbpf", "bpftrace")


def add_recording_options(parser: argparse.ArgumentParser, file_help: str) -> None:
    parser.add_argument("-o", "--output", metavar="TRACE",
                        help="where to save the trace (default: ./iowitness-NAME-DATE-TIME.iwt, or "
                             "NAME-DATE-TIME-2.iwt, -3... when that name is taken); a symlink is refused")
    add_mode_option(parser)
    # -P PATH: strace's "trace only calls on this path"
    parser.add_argument("-P", "--file", dest="files", action="append", default=[], metavar="PATH", help=file_help)
    parser.add_argument("--duration", type=float, metavar="SECONDS", help="stop after this many seconds")
    parser.add_argument("-q", "--quiet", action="store_true", help="no live status line on stderr")
    parser.add_argument("--ring-buffer-mb", type=float, default=DEFAULT_RING_BYTES / 2**20, metavar="MB",
                        help="size of the kernel-to-collector event buffer, shared out between the CPUs "
                             f"(default %(default)g, at most {MAX_RING_BYTES >> 20}; each CPU's share rounded up "
                             "to a power of two records)")
    # -c: strace's "count, no record per call"
    parser.add_argument("-c", "--summary", action="store_true",
                        help="keep only in-kernel aggregates per file, process, phase and syscall "
                             "(counts, bytes, latency histograms), no record per call: a trace that grows "
                             "with the run's duration, not its calls (about 15 KiB per second measured, "
                             "docs/performance.md), and almost no collector work for long runs (the benchmark "
                             "is slowed about as much as in full mode); report then has no per-call figures")
    parser.add_argument("--max-files", type=int, default=DEFAULT_MAX_FILES, metavar="N",
                        help="target files the probe can follow over the run (default %(default)s); an open "
                             "beyond it is counted as not followed, and every report says so")
    parser.add_argument("--max-processes", type=int, default=DEFAULT_MAX_PROCESSES, metavar="N",
                        help="processes of the benchmark the probe can follow at once (default %(default)s; "
                             "an exited process frees its place); a fork beyond it is counted as not followed")
    parser.add_argument("--backend", choices=BACKENDS, default="libbpf",
                        help="what records the calls: 'libbpf', the compiled probe (every call kind, the "
                             "device view, the least cost), or 'bpftrace', probes/iowitness.bt run by "
                             "bpftrace, for a machine where the compiled probe cannot load (iowitness doctor "
                             "says which): the same trace of the plain file syscalls, without io_uring, "
                             "libaio, mmap, the device view or --summary, at several times the cost per call "
                             "(default %(default)s)")
    parser.add_argument("--probe", choices=PROBE_PATHS, default=None,
                        help="which compiled probe to load: auto (default, or $IOWITNESS_PROBE) probes the "
                             "kernel and takes the fast one where it has every feature, else the compatible "
                             "one (Linux 5.8+: libaio, io_uring and mmap faults then counted as not "
                             "followed); fast or compat force one (iowitness doctor says which auto picks)")
    parser.add_argument("--no-bpf-stats", dest="bpf_stats", action="store_false",
                        help="do not ask the kernel to time iowitness's BPF programs (by default timed "
                             f"{stats_windows.policy_text()}; two clock reads per program run while on); "
                             "the report then cannot state the probe's cost")


def output_path(args, name: str) -> str:
    """The trace's name: -o, else a default one (open_recording may number it to make it new)."""
    parse_mode(args.mode)   # a bad --mode fails before the probe is loaded
    if args.output:
        return args.output
    stamp = time.strftime("%Y%m%d-%H%M%S")
    # the command's name, in characters any shell and terminal take as they are
    label = re.sub(r"[^A-Za-z0-9._+-]", "_", os.path.basename(name)).lstrip(".-") or "trace"
    return f"iowitness-{label}-{stamp}.iwt"


def check_output_is_not_a_target(path: str, file_set: FileSet) -> None:
    full = os.path.abspath(path)
    for rule in file_set.rules:
        if full == rule.path or (not rule.name and os.path.dirname(full) == rule.path):
            raise UsageError(f"the trace {full} would be written among the traced files; "
                             "choose another place with -o")
    parent = os.path.dirname(full)
    if not os.path.isdir(parent):
        raise OutputError(f"cannot write trace {full}: directory {parent} does not exist; "
                          "create it or choose another place with -o")
    if not os.access(parent, os.W_OK):
        raise OutputError(f"cannot write trace {full}: directory {parent} is not writable; "
                          "choose another place with -o")


def warn_if_output_shares_a_disk(path: str, file_set: FileSet) -> None:
    """One line when the trace will be written to the disk that holds a traced file: the
    benchmark's device then also sees the collector's writes (docs/performance.md says how much)."""
    table = mounts.mounts()
    disk = blockdev.disk_under(os.path.dirname(os.path.abspath(path)), table)
    if disk is None:
        return
    for rule in file_set.rules:
        if blockdev.disk_under(rule.path, table) == disk:
            print(terminal(f"iowitness: warning: the trace {os.path.abspath(path)} goes to disk {disk}, which "
                           f"also holds {rule.path}: the benchmark's device will see the trace's writes "
                           "(a few bytes per event); choose another place with -o"), file=sys.stderr)
            return


def check_numbers(args) -> None:
    """The numeric options, before anything is loaded or created (nan passes every comparison)."""
    if not math.isfinite(args.ring_buffer_mb) or args.ring_buffer_mb <= 0:
        raise UsageError(f"--ring-buffer-mb must be positive, not {args.ring_buffer_mb:g}")
    if args.ring_buffer_mb * 2**20 > MAX_RING_BYTES:
        raise UsageError(f"--ring-buffer-mb must be at most {MAX_RING_BYTES >> 20}, not {args.ring_buffer_mb:g}")
    if args.duration is not None and not (math.isfinite(args.duration) and args.duration > 0):
        raise UsageError(f"--duration must be a positive number of seconds, not {args.duration:g}; "
                         "leave it out to record until the end")
    for option, value in (("--max-files", args.max_files), ("--max-processes", args.max_processes)):
        if not 1 <= value <= MAX_SET_ENTRIES:
            raise UsageError(f"{option} must be between 1 and {MAX_SET_ENTRIES:,}, not {value}")


def probe_config(args, file_set: FileSet, all_processes: bool) -> ProbeConfig:
    check_numbers(args)
    return ProbeConfig(file_set=file_set, all_processes=all_processes,
                       ring_bytes=int(args.ring_buffer_mb * 2**20), summary=args.summary,
                       bpf_stats=args.bpf_stats, max_files=args.max_files, max_processes=args.max_processes,
                       probe_path=args.probe)


def require_backend(args) -> None:
    """What the chosen backend needs from this machine, checked before anything is created."""
    if getattr(args, "backend", "libbpf") == "bpftrace":
        from iowitness.collector import bpftrace_backend
        bpftrace_backend.require()
    else:
        preflight.require_tracing()


def make_probe(args, file_set: FileSet, all_processes: bool):
    """The chosen backend, loaded: a Probe, or a BpftraceProbe (started at its attach)."""
    config = probe_config(args, file_set, all_processes)
    if getattr(args, "backend", "libbpf") == "bpftrace":
        from iowitness.collector.bpftrace_backend import BpftraceProbe
        return BpftraceProbe(config)
    return Probe(config)


def open_recording(args, probe: Probe, path: str, mode: str, command, attached: list[dict] | None = None) -> Recorder:
    """The recorder of a new trace at `path`; a default name is taken exclusively (another run
    may pick it in the same second): recorder.writer.path is the one used."""
    warn_if_output_shares_a_disk(path, probe.config.file_set)
    out = Output(path, parse_mode(args.mode), "trace", TRACE_HINT)
    fd, path = (out.open_growing(), path) if args.output else out.open_numbered()
    try:
        meta = base_metadata(mode, command, probe, path, attached)
        if getattr(probe, "backend", None):   # the compiled probe's traces leave it out: libbpf
            meta["backend"] = probe.backend
        meta.update(getattr(args, "extra_meta", None) or {})   # replay: the trace it replays
        writer = TraceWriter(path, meta, fd=fd)
    except BaseException:
        os.close(fd)
        raise
    return Recorder(probe, writer, quiet=args.quiet)


def saved(reason: str, path: str, counters: dict) -> str:
    """The last line of a recording: why it stopped, where it went, what it holds."""
    lost = lost_total(counters)
    held = (f"{counters['calls']:,} calls summarized" if "calls" in counters
            else f"{counters['events']:,} events")
    unfollowed = ", ".join(t for t in (not_followed_text(counters), names_lost_text(counters)) if t)
    return f"{reason}; saved {path}: {held}, {lost:,} lost" + (f", {unfollowed}" if unfollowed else "")


def finished(args, reason: str, path: str, counters: dict) -> None:
    """Say the last line; a trace that misses calls is said even with --quiet."""
    line = saved(reason, path, counters)
    if missing_text(counters) or names_lost_text(counters):
        print(f"iowitness: warning: {line}", file=sys.stderr)
    else:
        say(args, line)


def say(args, message: str) -> None:
    if not args.quiet:
        print(f"iowitness: {terminal(message)}", file=sys.stderr)


class SignalLatch:
    """SIGINT and SIGTERM noted, not raised, from the start of a recording command until its
    Recorder takes them over. Raised as KeyboardInterrupt they could land anywhere: inside a
    ctypes callback of libbpf's loader (where Python prints a traceback and carries on, the
    Ctrl-C lost), or between two steps of setting up the benchmark. `check` acts on them at
    the points where stopping is clean. A signal the user had ignored (nohup) stays ignored."""

    def __init__(self):
        self.signum: int | None = None
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) is not signal.SIG_IGN:
                signal.signal(sig, self._note)

    def _note(self, signum, _frame) -> None:
        if self.signum is None:
            self.signum = signum

    def check(self, what: str) -> None:
        """Raise Interrupted (exit 128 + the signal) when a signal came: `what` says what was not done."""
        if self.signum is not None:
            name = "interrupted" if self.signum == signal.SIGINT else "terminated"
            raise Interrupted(f"{name} {what}", self.signum)
