"""Launch a benchmark and trace its file syscalls from its first instruction.

The benchmark's output passes through live and is kept in the trace; iowitness exits with
the benchmark's exit code. With no --file, every regular file the benchmark (and every
process it starts) reads or writes is traced, except system files (see README, "What is
traced").

Example:
  sudo iowitness run -o iozone.iwt -- iozone -i0 -i1 -s 64m -r 4k -f /tmp/w/iozone.tmp
  sudo iowitness run --file /tmp/w/iozone.tmp -- iozone -i0 -s 64m -r 4k -f /tmp/w/iozone.tmp
"""

from __future__ import annotations

import argparse

from iowitness.collector import preflight, targets
from iowitness.collector.launch import Launched, resolve_command
from iowitness.collector.probe import Probe
from iowitness.commands import _recording


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _recording.add_recording_options(
        parser, "trace only this file (or every file directly in this directory); repeatable")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]",
                        help="the benchmark to launch")


def execute(args) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    preflight.require_tracing()
    resolve_command(command)
    file_set = targets.file_set(args.files)
    path = _recording.output_path(args, command[0])
    _recording.check_output_is_not_a_target(path, file_set)
    probe = Probe(_recording.probe_config(args, file_set, all_processes=False))
    try:
        recorder = _recording.open_recording(args, probe, path, "run", command)
        path = recorder.writer.path
        child = Launched(command, recorder.writer.fileno())
        try:
            probe.add_process(child.pid)
            probe.wake_on_exit(child.pid)
            probe.attach()
        except BaseException:
            child.abort()
            raise
        recorder.install_signal_handlers()
        child.release()

        def launched_exited():
            return None if child.poll() is None else "the command exited"

        reason = recorder.loop(launched_exited, args.duration)
        if child.poll() is None:
            child.interrupt()
            for _ in range(50):
                if child.poll() is not None:
                    break
                recorder.probe.wait(0.1)
                recorder.drain()
        # the capture appends the benchmark's last output before END marks the trace complete
        child.finish_output()
        end = recorder.finish({"exit_code": child.returncode, "pid": child.pid})
    finally:
        probe.close()
    _recording.finished(args, reason, path, end["counters"])
    return child.returncode if child.returncode is not None else 1
