"""The benchmark's output, line by line, with the time each line was written when the trace knows it.

A figure printed at time t is about calls that ended before t (docs/claims-spec.md); this is
where the analysis learns when each line was printed. A trace that recorded the benchmark's
writes to its standard output and error (its output timeline: probes/output.bpf.h, joined
with the captured text by collector/format/printed_timeline.py) gives each line the kernel
time of the write that ended it, on the trace's clock; a trace that only holds the captured
text (older traces, `--claims FILE` given after the fact) gives lines with no time, and the
claims are then matched by order alone.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PrintedLine:
    text: str              # one line, without its line end
    t_ns: int | None       # when the write that ended the line completed (trace clock); None: unknown
    stream: str            # "stdout" | "stderr"
    pid: int | None = None  # the process that wrote it, when known
    cut: bool = False      # a write of the line was longer than the timeline's bound: part of it is missing


def lines_of(trace) -> list[PrintedLine]:
    """The output lines of a trace in the order they were written (stdout, then stderr, when
    the trace holds no times)."""
    printed = getattr(trace, "printed", None)
    if printed is not None:
        return [PrintedLine(line.text, line.t_ns, line.stream, line.pid, line.cut) for line in printed.lines]
    out = []
    for stream in ("stdout", "stderr"):
        text = (getattr(trace, "output", None) or {}).get(stream, "")
        out += [PrintedLine(line, None, stream) for line in text.splitlines()]
    return out


def timeline_summary(trace) -> str | None:
    """"output: N writes, M cut at 4 KiB" for a trace with an output timeline; None without."""
    printed = getattr(trace, "printed", None)
    if printed is None:
        return None
    return printed.summary(int((getattr(trace, "counters", None) or {}).get("lost_output", 0)))
