"""What `run` and `attach` share: their options, and the life of one recording."""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import time

from iowitness.collector import blockdev, mounts, stats_windows
from iowitness.collector.probe import DEFAULT_RING_BYTES, MAX_RING_BYTES, Probe, ProbeConfig
from iowitness.collector.session import Recorder, base_metadata
from iowitness.collector.targets import FileSet
from iowitness.collector.traceformat import lost_total
from iowitness.collector.tracewriter import TraceWriter
from iowitness.errors import Interrupted, OutputError, UsageError


def add_recording_options(parser: argparse.ArgumentParser, file_help: str) -> None:
    parser.add_argument("-o", "--output", metavar="TRACE",
                        help="where to save the trace (default: ./iowitness-NAME-DATE-TIME.iwt)")
    parser.add_argument("--file", dest="files", action="append", default=[], metavar="PATH", help=file_help)
    parser.add_argument("--duration", type=float, metavar="SECONDS", help="stop after this many seconds")
    parser.add_argument("-q", "--quiet", action="store_true", help="no live status line on stderr")
    parser.add_argument("--ring-buffer-mb", type=float, default=DEFAULT_RING_BYTES / 2**20, metavar="MB",
                        help="size of the kernel-to-collector event buffer, shared out between the CPUs "
                             f"(default %(default)g, at most {MAX_RING_BYTES >> 20}; each CPU's share rounded up "
                             "to a power of two records)")
    parser.add_argument("--summary", action="store_true",
                        help="keep only in-kernel aggregates per file, process, phase and syscall "
                             "(counts, bytes, latency histograms), no record per call: a trace of a few "
                             "KiB and almost no collector work for long runs (the benchmark is slowed about "
                             "as much as in full mode); report then has no per-call figures")
    parser.add_argument("--no-bpf-stats", dest="bpf_stats", action="store_false",
                        help="do not ask the kernel to time iowitness's BPF programs (by default timed "
                             f"{stats_windows.policy_text()}; two clock reads per program run while on); "
                             "the report then cannot state the probe's cost")


def output_path(args, name: str) -> str:
    if args.output:
        return args.output
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return f"iowitness-{os.path.basename(name) or 'trace'}-{stamp}.iwt"


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
            print(f"iowitness: warning: the trace {os.path.abspath(path)} goes to disk {disk}, which "
                  f"also holds {rule.path}: the benchmark's device will see the trace's writes "
                  "(a few bytes per event); choose another place with -o", file=sys.stderr)
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


def probe_config(args, file_set: FileSet, all_processes: bool) -> ProbeConfig:
    check_numbers(args)
    return ProbeConfig(file_set=file_set, all_processes=all_processes,
                       ring_bytes=int(args.ring_buffer_mb * 2**20), summary=args.summary,
                       bpf_stats=args.bpf_stats)


def open_recording(args, probe: Probe, path: str, mode: str, command, attached: list[dict] | None = None) -> Recorder:
    warn_if_output_shares_a_disk(path, probe.config.file_set)
    writer = TraceWriter(path, base_metadata(mode, command, probe, path, attached))
    return Recorder(probe, writer, quiet=args.quiet)


def saved(reason: str, path: str, counters: dict) -> str:
    """The last line of a recording: why it stopped, where it went, what it holds."""
    lost = lost_total(counters)
    held = (f"{counters['calls']:,} calls summarized" if "calls" in counters
            else f"{counters['events']:,} events")
    return f"{reason}; saved {path}: {held}, {lost:,} lost"


def say(args, message: str) -> None:
    if not args.quiet:
        print(f"iowitness: {message}", file=sys.stderr)


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
