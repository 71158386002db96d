"""Trace a benchmark that is already running: by PID, or every process touching a file.

--pid follows the process, its existing children and everything they start from now on;
files it already has open are traced from their next call. --file alone traces any process
on the machine that opens or uses that file (or any file directly in that directory); a
file that does not exist yet is traced from its creation, its directory must exist.
Both together trace only those files of those processes. Stops when every traced process
has exited (--pid), after --duration, or on Ctrl-C.

Example:
  sudo iowitness attach -p 4242 -o fio.iwt
  sudo iowitness attach --file /mnt/test/fio.0.0 --duration 60
"""

from __future__ import annotations

import argparse
import os
import sys

from iowitness.collector import gate_programs, processes, targets
from iowitness.collector.session import processes_gone
from iowitness.commands import _recording
from iowitness.errors import NotFound, OutputError, UsageError
from iowitness.escape import terminal


def add_arguments(parser) -> None:
    # -p as strace, perf and bpftrace spell it; "-p 1,2" as perf takes a list
    parser.add_argument("-p", "--pid", dest="pid_lists", action="append", type=_pids, default=[], metavar="PID",
                        help="a running process to follow, with its children; repeatable, or a comma-separated "
                             "list (-p 4242,4243)")
    _recording.add_recording_options(
        parser, "a file (or directory) to watch; without --pid, any process that uses it; repeatable")


def _pids(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a PID or a comma-separated list of PIDs") from None


def execute(args) -> int:
    signals = _recording.SignalLatch()
    args.pids = [pid for pids in args.pid_lists for pid in pids]
    if not args.pids and not args.files:
        raise UsageError("say what to attach to: --pid PID or --file PATH")
    _recording.check_numbers(args)
    _recording.require_backend(args)
    for pid in args.pids:
        if pid <= 0 or not processes.alive(pid):   # a zombie has exited: nothing of it to trace
            raise NotFound(f"no process with PID {pid}; check it with: ps -p {pid}")
    file_set = targets.file_set(args.files)
    label = f"pid{args.pids[0]}" if args.pids else os.path.basename(os.path.abspath(args.files[0]))
    path = _recording.output_path(args, label)
    _recording.check_output_is_not_a_target(path, file_set)
    all_processes = not args.pids
    probe = _recording.make_probe(args, file_set, all_processes)
    try:
        signals.check("while the probe was loading: nothing was written")
        pids = processes.descendants(set(args.pids))
        # a trace that begins mid-run still names its benchmark and its processes, and says how
        # far into the run it began: the PIDs given first, then their children
        attached = [processes.describe(pid) for pid in [*args.pids, *sorted(pids - set(args.pids))]]
        command = attached[0]["cmdline"] if attached else None
        recorder = _recording.open_recording(args, probe, path, "attach", command, attached)
        path = recorder.writer.path
        recorder.gate = gate_programs.GatePrograms(args.pids[0], attached[0]["comm"]) if args.pids else None
        for pid in pids:
            probe.add_process(pid)
            probe.wake_on_exit(pid)
        # files opened before the attach: registered before attaching (no later call is missed)
        # and once more after (a file opened in between is not missed either)
        known = {}
        for _ in range(2):
            for pid in pids:
                for f in targets.open_files_of(pid, file_set):
                    known[(f.kdev, f.ino)] = f
            probe.register_files(list(known.values()))
            if not probe.attached:
                probe.attach()
        recorder.note_known_files(list(known.values()))
        late = getattr(probe, "late_additions", lambda: [])()
        if late:   # bpftrace's sets are fixed when it starts
            print(terminal(f"iowitness: warning: --backend bpftrace: found after bpftrace started, not traced: "
                           f"{', '.join(late[:5])}{' ...' if len(late) > 5 else ''}"), file=sys.stderr)
        recorder.install_signal_handlers()
        if signals.signum is not None:
            recorder.abandon()
            signals.check(f"while attaching: the trace {path} holds what came before")
        if args.pids and not any(processes.alive(pid) for pid in pids):
            recorder.abandon()
            raise NotFound(f"process {args.pids[0]} exited while iowitness was attaching to it; "
                           f"nothing of it was traced ({path} holds no call)")
        if args.files and not args.pids:
            missing = [p for p in args.files if not os.path.exists(p)]
            for p in missing:
                _recording.say(args, f"{p} does not exist yet; waiting for it to be created")
            finished = (lambda: None)
        else:
            finished = processes_gone(probe)
        _recording.say(args, f"attached; recording to {path} (Ctrl-C to stop)")
        try:
            reason = recorder.loop(finished, args.duration)
            end = recorder.finish({"pids": sorted(pids)})
        except OutputError as fault:   # a full disk: what was written stays readable
            recorder.abandon()
            if getattr(fault, "trace_lost", False):   # its name now holds another file: nothing to add
                raise
            raise OutputError(f"{fault}; the trace holds the recording up to here "
                              "(attach never signals the processes it watches)") from None
        except BaseException:
            recorder.abandon()
            raise
    finally:
        probe.close()
    _recording.finished(args, reason, path, end["counters"])
    return 0
