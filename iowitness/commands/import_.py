"""Import an strace text trace (no BPF, no root) into a trace that report, check and compare read.

Record the benchmark with strace, decorating every fd with its file (-y or -yy), the time of
each call (-ttt) and its duration (-T), following its threads and children (-f, or -ff for one
file per process: give the -o name and every NAME.PID is read):

  strace -f -ttt -T -y -s 4096 -o run.strace -- ./mybench

-s 4096 keeps what the benchmark prints whole, so that its claims can be judged; or save its
output apart and give it with --output. strace's latencies include its ptrace stops: the
report says they are inflated, and that a trace from strace has no device view, no block I/O
and no observer cost.

On illumos, FreeBSD or macOS, record with the D script probes/iowitness.d and import its
lines with --dtrace (not yet run on a DTrace system; docs/dtrace.md):

  dtrace -q -c './mybench' -o run.d.txt -s probes/iowitness.d /data/bench

Example:
  iowitness import run.strace -o run.iwt && iowitness report run.iwt
  iowitness import --dtrace run.d.txt -o run.iwt
"""

from __future__ import annotations

from iowitness.commands import _output
from iowitness.errors import UsageError
from iowitness.outputfile import add_mode_option


def add_arguments(parser) -> None:
    parser.add_argument("strace", metavar="STRACE", nargs="*",
                        help="strace -o output: a file, or the NAME of strace -ff's NAME.PID files")
    parser.add_argument("--dtrace", metavar="FILE",
                        help="import the lines probes/iowitness.d printed on a DTrace system instead")
    parser.add_argument("-o", "--output-trace", dest="out", metavar="TRACE", required=True,
                        help="the trace to write (.iwt)")
    parser.add_argument("--file", dest="files", action="append", default=[], metavar="PATH",
                        help="only this file (or every file directly in this directory), as `run --file`; "
                             "repeatable; default: every file outside system directories, as `run` does")
    parser.add_argument("--output", dest="stdout", metavar="FILE",
                        help="the benchmark's output saved apart (its claims); default: what the "
                             "strace shows it writing on fd 1 and 2")
    add_mode_option(parser)


def execute(args) -> int:
    from iowitness.collector.strace_files import import_strace
    from iowitness.outputfile import parse_mode

    _output.destination(args, args.out)
    if args.dtrace is not None:
        return _dtrace(args, parse_mode(args.mode))
    if not args.strace:
        raise UsageError("give the strace output to import (or --dtrace FILE)")
    done = import_strace(args.strace, args.out, args.files, args.stdout, parse_mode(args.mode))
    notes = []
    if done["without_latency"]:
        notes.append(f"{done['without_latency']:,} calls without -T latency (0 in the trace)")
    if done["output_cut"]:
        notes.append("strace shortened the benchmark's output: record with -s 4096 or give --output")
    if done["command_cut"]:
        notes.append("strace shortened the command line: record with -s 4096 to keep it whole")
    if done["undecorated"]:
        notes.append(f"{done['undecorated']:,} fd calls without a path: record with -y")
    return _wrote(args.out, done, f"{done['lines']:,} strace lines", notes)


def _wrote(out: str, done: dict, source: str, notes: list[str]) -> int:
    """Say what was written from what, with what the import could not take as it was."""
    tail = f" ({'; '.join(notes)})" if notes else ""
    _output.print_text(f"wrote {out}: {done['events']:,} events on {done['files']:,} files from {source}{tail}")
    return 0


def _dtrace(args, mode) -> int:
    from iowitness.collector.dtrace_import import import_dtrace

    if args.strace or args.files or args.stdout:
        raise UsageError("--dtrace FILE takes no strace file, --file or --output (the D script's argument "
                         "chooses the files)")
    done = import_dtrace(args.dtrace, args.out, mode)
    notes = [f"{done['dropped']:,} records dropped by DTrace"] if done["dropped"] else []
    if done["without_file"]:
        notes.append(f"{done['without_file']:,} calls on an fd whose open was not seen, left out")
    return _wrote(args.out, done, "the DTrace output (probes/iowitness.d; not yet run on a DTrace system)", notes)
