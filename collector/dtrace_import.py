"""`iowitness import --dtrace FILE`: the lines probes/iowitness.d printed on a DTrace system
(illumos, FreeBSD, macOS) into a trace of the same format as a recording.

The D script prints the bpftrace backend's line protocol (probes/iowitness.bt), so the lines
are read by the same parser (bpftrace_lines.LineParser). What DTrace cannot give is filled in
here: fileinfo_t has no device or inode, so every file is numbered by its path (device 0, as
an strace import does), and each call's fd is tied to the file its process opened on that fd
last before the call ended (a child's inherited fds through its parent, from the K lines).
DTrace's own "dtrace: N drops on CPU M" lines are counted as lost events.

Not yet run on a DTrace system: tested with lines in the script's format (tests/data/dtrace/).
"""

from __future__ import annotations

import bisect
import os
import re

import numpy as np

from iowitness.collector import backends
from iowitness.collector.bpftrace_lines import LineParser
from iowitness.collector.format.tracewriter import TraceWriter
from iowitness.errors import BadTrace, NotFound
from iowitness.probes.layout import layout
from iowitness.version import __version__

_DROPS = re.compile(rb"^dtrace: (\d+) (?:dynamic variable |aggregation |speculative )?drops?", re.MULTILINE)


def _text(raw: np.ndarray) -> str:
    return bytes(raw).split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def read(path: str) -> tuple[LineParser, int]:
    """The parsed lines of the file and the records DTrace said it dropped."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise NotFound(f"no such DTrace output: {path}") from None
    except OSError as exc:
        raise BadTrace(f"cannot read {path}: {exc.strerror or exc}") from None
    parser = LineParser()
    parser.feed(data if data.endswith(b"\n") else data + b"\n")
    if not parser.ready:
        raise BadTrace(f"{path} is not the output of probes/iowitness.d (no READY line): record with "
                       f"dtrace -q -c CMD -o FILE -s probes/iowitness.d")
    return parser, sum(int(m.group(1)) for m in _DROPS.finditer(data))


class _Files:
    """Each path a number (its inode in the trace), and which file each (pid, fd) held when."""

    def __init__(self, facts: np.ndarray, file_kind: int, fork_kind: int):
        self.inos: dict[str, int] = {}
        self.opens: dict[tuple[int, int], tuple[list[int], list[int]]] = {}   # (pid, fd) -> (times, inos)
        self.parent = {int(f["tgid"]): int(f["parent_tgid"]) for f in facts[facts["kind"] == fork_kind]}
        for f in np.sort(facts[facts["kind"] == file_kind], order="ts_ns"):
            ino = self.inos.setdefault(_text(f["path"]), len(self.inos) + 1)
            times, inos = self.opens.setdefault((int(f["tgid"]), int(f["fd"])), ([], []))
            times.append(int(f["ts_ns"]))
            inos.append(ino)

    def ino(self, pid: int, fd: int, end_ns: int) -> int:
        """The file pid's fd named at end_ns (0: no open of it was seen), asking its parents."""
        for _ in range(64):
            times, inos = self.opens.get((pid, fd), ((), ()))
            at = bisect.bisect_right(times, end_ns)
            if at:
                return inos[at - 1]
            if pid not in self.parent:
                return 0
            pid = self.parent[pid]
        return 0


def import_dtrace(path: str, out: str, mode: int | None = None) -> dict:
    """Read the D script's lines at `path` into a new trace at `out`; what was imported."""
    parser, dropped = read(path)
    lay = layout()
    kinds = lay.enums["iow_meta_kind"]
    events = np.concatenate(parser.events) if parser.events else np.zeros(0, lay.event)
    facts = np.concatenate(parser.facts) if parser.facts else np.zeros(0, lay.meta)
    events = events[np.argsort(events["start_ns"], kind="stable")]
    files = _Files(facts, kinds["IOW_META_FILE"], kinds["IOW_META_FORK"])
    ends = events["start_ns"] + events["latency_ns"]
    events["ino"] = [files.ino(int(e["tgid"]), int(e["fd"]), int(end)) for e, end in zip(events, ends)]
    events["dev"] = 0
    unnamed = int((events["ino"] == 0).sum())
    events = events[events["ino"] != 0]
    is_file = facts["kind"] == kinds["IOW_META_FILE"]
    facts["ino"][is_file] = [files.inos[_text(f["path"])] for f in facts[is_file]]
    facts["dev"] = 0
    execs = facts[facts["kind"] == kinds["IOW_META_EXEC"]]
    command = _text(execs[0]["path"]).split() if len(execs) else []
    first = int(events["start_ns"][0]) if len(events) else 0
    last = int(ends.max()) if len(ends) else first
    start = {
        "iowitness_version": __version__, "backend": backends.DTRACE, "mode": "import", "command": command,
        "cwd": "/", "host": "not recorded (DTrace import)", "kernel": "not recorded (DTrace import)",
        # DTrace's timestamp: monotonic from an arbitrary origin; no wall clock is printed
        "clock_start": {"monotonic_ns": first, "realtime_ns": first, "offset_ns": 0},
        "file_rules": [], "all_files": True, "excluded_prefixes": ["/dev/", "/proc/"], "all_processes": False,
        "targets": [], "summary_mode": False, "imported_from": [os.path.abspath(path)],
    }
    extra = {} if mode is None else {"mode": mode}
    counters = {"events": len(events), "facts": len(facts), "lost_events": dropped, "lost_meta": 0}
    with TraceWriter(out, start, **extra) as writer:
        writer.write_facts(facts)
        writer.write_events(events)
        writer.write_counters(counters)
        writer.close({
            "clock_end": {"monotonic_ns": last, "realtime_ns": last, "offset_ns": 0},
            "stop_reason": "end of the DTrace output", "counters": counters,
            "files": [{"dev": 0, "ino": ino, "path": p, "device": "none (DTrace import)"}
                      for p, ino in files.inos.items()],
            "exit_code": None,
            "dtrace": {"dropped": dropped, "calls_without_file": unnamed, "lines_not_read": parser.unknown_lines},
        })
    return {"events": len(events), "files": len(files.inos), "dropped": dropped, "without_file": unnamed,
            "unknown": parser.unknown_lines}
