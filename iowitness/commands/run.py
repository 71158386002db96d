"""Launch a benchmark and trace its file syscalls from its first instruction.

The benchmark's output passes through live and is kept in the trace; iowitness exits with
the benchmark's exit code. With no --file, every regular file the benchmark (and every
process it starts) reads or writes is traced, except system files (see docs/tracing.md).

When the recording ends before the benchmark (--duration, Ctrl-C, SIGTERM), the benchmark
and its descendants get SIGINT, and SIGKILL if they still run 5 s later (said on stderr).
When the trace cannot be written (a full disk) or iowitness is killed or crashes, the trace
is kept up to the fault. --on-fault continue leaves the benchmark running instead, after a
fault or a Ctrl-C or SIGTERM to iowitness (docs/usage.md, "When a run fails").

Example:
  sudo iowitness run -o iozone.iwt -- iozone -i0 -i1 -s 64m -r 4k -f /tmp/w/iozone.tmp
  sudo iowitness run --file /tmp/w/iozone.tmp -- iozone -i0 -s 64m -r 4k -f /tmp/w/iozone.tmp
  sudo iowitness run --backend bpftrace -- iozone -i0 -i1 -s 64m -r 4k -f /tmp/w/iozone.tmp
"""

from __future__ import annotations

import argparse
import sys
import time

from iowitness.collector import stopping, targets
from iowitness.collector.launch import FOLLOW_IDLE_S, Launched, resolve_command
from iowitness.collector.session import Recorder
from iowitness.commands import _recording
from iowitness.errors import Interrupted, OutputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _recording.add_recording_options(
        parser, "trace only this file (or every file directly in this directory); repeatable")
    parser.add_argument("--on-fault", choices=("stop", "continue"), default="stop",
                        help="what becomes of the benchmark when the recording fails before it ends (the trace "
                             "cannot be written, iowitness gets SIGINT or SIGTERM, is killed or crashes): 'stop' "
                             "sends it and its descendants SIGINT, then SIGKILL if they still run "
                             f"{stopping.GRACE_S:g} s later; 'continue' lets it run on untraced, its output still "
                             "passed through (default %(default)s)")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]",
                        help="the benchmark to launch")


def execute(args) -> int:
    signals = _recording.SignalLatch()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    _recording.check_numbers(args)
    _recording.require_backend(args)
    resolve_command(command)
    file_set = targets.file_set(args.files)
    # replay launches its player: its traces are named for the replay, not for python
    path = _recording.output_path(args, getattr(args, "trace_label", None) or command[0])
    _recording.check_output_is_not_a_target(path, file_set)
    probe = _recording.make_probe(args, file_set, all_processes=False)
    try:
        signals.check("while the probe was loading: the benchmark was not started, nothing was written")
        recorder = _recording.open_recording(args, probe, path, "run", command)
        path = recorder.writer.path
        child = Launched(command, recorder.writer.fileno(), args.on_fault)
        recorder.terminal = child.terminal
        try:
            probe.add_process(child.pid)
            probe.wake_on_exit(child.pid)
            probe.attach()
            recorder.install_signal_handlers()
            signals.check(f"before the benchmark started: it was not run, and the trace {path} holds no call")
        except BaseException:
            child.abort()
            recorder.abandon()
            raise
        child.release()
        try:
            return _record(args, recorder, child, path)
        except OutputError as fault:   # the trace cannot be written: a full disk, an I/O error
            recorder.abandon()
            if getattr(fault, "trace_lost", False):   # its name now holds another file: nothing to add
                raise
            raise OutputError(f"{fault}; the trace holds the run up to here, and {_after_fault(args, child)}") from None
        except BaseException:
            # a crash: the trace keeps what was written; once we are gone, the output capture
            # does with the benchmark what --on-fault says (collector/launch.py, _Watchdog)
            recorder.abandon()
            raise
    finally:
        probe.close()


def _record(args, recorder: Recorder, child: Launched, path: str) -> int:
    """Record until the benchmark exits or the recording is ended; the exit code to give."""
    def launched_exited():
        return None if child.poll() is None else "the command exited"

    reason = recorder.loop(launched_exited, args.duration)
    if child.poll() is None and recorder.stop_signal is not None and args.on_fault == "continue":
        reason += f"; the benchmark (PID {child.pid}) runs on untraced (--on-fault continue)"
        end = recorder.finish({"exit_code": None, "pid": child.pid, "stop_reason": reason, "left_running": True})
        child.let_go()
        # an error, said even with -q: we end without the benchmark's exit code to pass on
        raise Interrupted(_recording.saved(reason, path, end["counters"]), recorder.stop_signal)
    # processes the command left running are followed while they work only when it ended by
    # itself: after --duration or a Ctrl-C the trace ends within FOLLOW_IDLE_S, as asked
    follow = child.poll() is not None

    def trace_meanwhile(seconds: float) -> bool:
        """Drain while waiting; True when a traced call came (a process left running still works)."""
        before = recorder.stats.events
        recorder.probe.wait(seconds)
        recorder.drain()
        return follow and recorder.stop_signal is None and recorder.stats.events > before

    if child.poll() is None:   # --duration passed, or iowitness got SIGINT or SIGTERM
        stopped = child.stop(trace_meanwhile)
        child.poll()
        if stopped.killed:
            # said even with -q: a benchmark that had to be killed did not end as it meant to
            print(f"iowitness: {stopped.outcome()}", file=sys.stderr)
    # the capture appends the benchmark's last output before END marks the trace complete
    ending = {"exit_code": child.returncode, "pid": child.pid}
    if not child.finish_output(meanwhile=trace_meanwhile):
        reason += (f"; processes it left running still hold its output, with no traced call for "
                   f"{FOLLOW_IDLE_S:g} s: they run on untraced")
        ending.update(stop_reason=reason, left_running=True)
    end = recorder.finish(ending)
    child.let_go()
    if ending.get("left_running"):   # said even with -q: the trace ends before what the command started
        print(f"iowitness: warning: {_recording.saved(reason, path, end['counters'])}", file=sys.stderr)
    else:
        _recording.finished(args, reason, path, end["counters"])
    return child.returncode if child.returncode is not None else 1


def _after_fault(args, child: Launched) -> str:
    """Deal with the benchmark as --on-fault says, after the trace failed; what became of it."""
    if child.poll() is not None:
        outcome = f"the benchmark had exited (exit code {child.returncode})"
    elif args.on_fault == "continue":
        outcome = (f"the benchmark (PID {child.pid}) runs on untraced (--on-fault continue), "
                   "its output still passed through")
    else:
        stopped = child.stop(time.sleep)
        child.poll()
        outcome = f"{stopped.outcome()} (--on-fault stop)"
    child.let_go()
    if args.on_fault == "stop" or child.returncode is not None:
        child.finish_output()   # every line it printed reaches the user before our last word
    return outcome
