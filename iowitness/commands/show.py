"""Print what a trace recorded: processes, files, per-syscall counts, bytes, latency, lost events.

With --events, one line per recorded call instead, in time order, as `perf script` or strace
print them (process, pid/tid, time, call, fd, offset, bytes asked, result, latency, phase,
file); --phase, --file, --syscall (-e), --pid (-p) and --slower MS (as fileslower) keep some
of them, and combine. Both
read the trace block by block: memory bounded by a block (and, for --events, the phases), not
by the events, whatever the trace's size.

With --block, one line per block request on the devices under the target files, in order of
completion, as bcc's biosnoop prints them: time, process and thread that submitted it,
device, op, sector, bytes, time queued (start to issue) and latency (issue to complete) in µs,
and the phase it belongs to ("3,4" when several phases could have caused it)
(docs/block-and-perfetto.md).

Example:
  iowitness show iozone.iwt
  iowitness show --events -e read,pread64 --phase 3 iozone.iwt | head
  iowitness show --events --slower 10 fio.iwt    # the calls of 10 ms or more, as fileslower 10
  iowitness show --block fio.iwt | sort -k9 -n | tail   # the slowest block requests
"""

from __future__ import annotations

import argparse
import sys

from iowitness.commands import _output


def _list(kind):
    def parse(text: str) -> list:
        try:
            return [kind(part) for part in text.removeprefix("trace=").split(",") if part]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: give a comma-separated list") from None
    return parse


def _milliseconds(text: str) -> int:
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value >= 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"{text!r}: give milliseconds, e.g. 10 or 0.05")
    return int(round(value * 1e6))


def add_arguments(parser) -> None:
    parser.add_argument("trace", metavar="TRACE", help="a trace saved by run or attach")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="the observer's cost with its ranges (per traced call, in all)")
    parser.add_argument("--events", action="store_true",
                        help="one line per recorded call (time in s since the recording began, latency in µs, "
                             "sizes in bytes) instead of the summary")
    parser.add_argument("--block", action="store_true",
                        help="one line per block request (time in s, sector, bytes, queue and latency in µs, the "
                             "phase and process), as biosnoop prints them")
    events = parser.add_argument_group("with --events, keep only the calls")
    events.add_argument("--phase", dest="phases", action="append", type=_list(int), default=[], metavar="N",
                        help="of phase N (as report numbers them); repeatable or N,M")
    events.add_argument("--file", dest="files", action="append", default=[], metavar="PATH",
                        help="on this file (its path, or its name alone); repeatable")
    events.add_argument("-e", "--syscall", dest="syscalls", action="append", type=_list(str), default=[],
                        metavar="CALL", help="of these calls (read,pwrite64; strace's -e trace=read is taken too)")
    events.add_argument("-p", "--pid", dest="pids", action="append", type=_list(int), default=[], metavar="PID",
                        help="of this process or thread; repeatable or PID,PID")
    events.add_argument("--slower", dest="slower_ns", type=_milliseconds, default=None, metavar="MS",
                        help="that took at least MS milliseconds (0.05: 50 µs), as bcc's fileslower MS")


def execute(args) -> int:
    from iowitness.errors import UsageError

    filters = {"phases": [n for ns in args.phases for n in ns], "files": args.files,
               "syscalls": [s for ss in args.syscalls for s in ss], "pids": [p for ps in args.pids for p in ps],
               "slower_ns": args.slower_ns}
    given = [f"--{name.removesuffix('_ns').rstrip('s')}" for name, value in filters.items() if value is not None
             and value != []]
    if given and not args.events:
        raise UsageError(f"{given[0]} filters the lines of --events; add --events")
    if args.block:
        if args.events:
            raise UsageError("--block and --events are two listings: give one")
        return _block(args.trace)
    if args.events:
        from iowitness.analysis.read import event_lines

        # block by block, as the summary below: memory bounded by a block and the phases, not by
        # the events; the same lines as from the loaded trace (event_lines.select and lines)
        with event_lines.streamed(args.trace, **filters) as lines:
            out = sys.stdout
            out.write(event_lines.HEADER + "\n")
            for line in lines:
                out.write(line + "\n")
            out.flush()
        return 0
    from iowitness.analysis.read import streamed
    from iowitness.reporters import summary  # pandas: only commands that analyse pay for it

    # block by block: memory bounded by a block of events, whatever the trace's length, and a
    # trace still being written is read up to its last whole chunk
    with streamed.open_trace(args.trace) as trace:
        from iowitness.commands.report import _verbose

        _output.print_text(summary.render(trace) + _verbose(args, trace))
    return 0


def _block(path: str) -> int:
    from iowitness.analysis.measure import block_views
    from iowitness.analysis.read import device_records
    from iowitness.commands import _reading
    from iowitness.errors import UsageError

    with _reading.trace_of(path) as trace:
        records = device_records.of(trace)
        if not records.has_block or not records.devices:
            raise UsageError(f"{path} holds no block request (none reached a block device under the target files, "
                             "or the trace was recorded without the device view)")
        phases = trace.report().phases if trace.summary is None else None
        out = sys.stdout
        for line in block_views.lines(trace, phases):
            out.write(line + "\n")
        out.flush()
    return 0
