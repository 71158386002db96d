"""The strace files of one run, read in time order and written as one .iwt trace.

`strace -f -o run.strace` writes one file with a pid column; `strace -ff -o run.strace`
writes run.strace.PID per process with none. Given a name that is not a file but the prefix
of such files, all of them are read and their lines merged by time (a clone's line, stamped
at its entry, then comes before its child's first line).
"""

from __future__ import annotations

import glob
import heapq
import os
import re

from iowitness.collector import strace_lines
from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.collector.strace_import import WANTED, Importer, start_meta
from iowitness.errors import BadTrace, NotFound

# calls whose return is the caller's own thread id: glibc's start-up set_tid_address, getpid, gettid
_OWN_ID = re.compile(r"^\d+\.\d+\s+(?:set_tid_address\(.*|getpid\(\s*|gettid\(\s*)\)\s+=\s+(\d+)")
_PID_COLUMN = re.compile(r"^\d+\s+\d+\.\d+\s")
_TIME = re.compile(r"^(?:\[pid\s+\d+\]\s+|\d+\s+)?(\d+)\.(\d+)\s")


def sources(names: list[str]) -> list[tuple[str, int | None]]:
    """(file, pid of an -ff file or None) for each name: a file, or the prefix of -ff files."""
    out = []
    for name in names:
        if os.path.isfile(name):
            suffix = name.rsplit(".", 1)[-1]
            out.append((name, int(suffix) if suffix.isdigit() and glob.glob(glob.escape(name.rsplit(".", 1)[0]) + ".*[0-9]") else None))
            continue
        parts = [p for p in glob.glob(glob.escape(name) + ".*") if p.rsplit(".", 1)[-1].isdigit()]
        if not parts:
            if os.path.exists(name):
                raise BadTrace(f"{name} is not a regular file; give the file strace -o wrote")
            raise NotFound(f"no such strace output: {name} (nor {name}.PID files from strace -ff)")
        out += sorted(((p, int(p.rsplit(".", 1)[-1])) for p in parts), key=lambda s: s[1])
    return out


def _own_pid(path: str) -> int | None:
    """The pid of the lines without a pid column (the first process, when strace -f wrote to a
    terminal; every line without -f): the first call of theirs that returned it."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                if _PID_COLUMN.match(line):
                    return None   # strace -f -o FILE: every line has its pid; none is needed (nor a read of it all)
                m = _OWN_ID.match(line)
                if m:
                    return int(m.group(1))
    except OSError:
        pass
    return None


def _lines(path: str, pid: int | None):
    """(time key, pid, line) of each line: the key orders the merge of -ff files."""
    try:
        f = open(path, encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise BadTrace(f"cannot read {path}: {exc.strerror or exc}") from None
    last = 0
    with f:
        for line in f:
            m = _TIME.match(line)
            if m:
                last = int(m.group(1)) * 10**6 + int(m.group(2).ljust(6, "0")[:6])
            yield last, pid, line


def import_strace(names: list[str], out: str, rules: list[str], output_file: str | None = None,
                  mode: int | None = None) -> dict:
    """Read the strace files `names` into a new trace at `out`; what was imported, for the
    command's last line."""
    files = sources(names)
    imp = Importer(rules)
    readers = {path: strace_lines.LineReader(pid or _own_pid(path) or 1, WANTED) for path, pid in files}
    merged = heapq.merge(*(_lines(path, path) for path, _ in files), key=lambda t: t[0])
    for _, path, line in merged:
        reader = readers[path]
        item = reader.feed(line)
        if item is not None:
            imp.feed(item)
    for path, reader in readers.items():
        strace_lines.check_readable(reader, path)
    events, facts = imp.event_records(), imp.fact_records()
    output = imp.output
    if output_file is not None:
        try:
            with open(output_file, "rb") as f:
                output = [("stdout", f.read())]
        except OSError as exc:
            raise NotFound(f"cannot read the benchmark's output {output_file}: {exc.strerror or exc}") from None
    skipped = sum(r.skipped for r in readers.values())
    lines = sum(r.lines for r in readers.values())
    extra = {} if mode is None else {"mode": mode}
    with TraceWriter(out, start_meta(imp, [p for p, _ in files], rules), **extra) as writer:
        writer.write_facts(facts)
        writer.write_events(events)
        writer.write_printed(imp.printed_records())
        for stream, data in output:
            writer.write_output(stream, data)
        counters = {"events": len(events), "facts": len(facts), "lost_events": 0, "lost_meta": 0}
        writer.write_counters(counters)
        writer.close({
            "clock_end": {"monotonic_ns": imp.last_ns, "realtime_ns": imp.last_ns, "offset_ns": 0},
            "stop_reason": "end of the strace output",
            "counters": counters,
            "files": imp.files(),
            "exit_code": imp.exit_code,
            "exit_signal": imp.exit_signal,
            "strace": {"lines": lines, "lines_not_read": skipped, "calls_without_latency": imp.without_latency,
                       "fd_calls_without_path": imp.undecoded_fds, "command_cut": imp.command_cut,
                       "output_cut": imp.output_cut and output_file is None,
                       "output_from": output_file or "the trace's writes to fd 1 and 2"},
        })
    return {"events": len(events), "files": len(imp.inos), "lines": lines, "skipped": skipped,
            "without_latency": imp.without_latency, "output_cut": imp.output_cut and output_file is None,
            "command_cut": imp.command_cut, "undecorated": imp.undecoded_fds}
