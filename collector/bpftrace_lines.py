"""What the bpftrace backend says to bpftrace and what it reads back: the script with the
collector's settings put in, and bpftrace's lines (probes/iowitness.bt says what each holds)
turned into the compiled probe's records (layout().event and layout().meta)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from iowitness import probes
from iowitness.collector.targets import KnownFile
from iowitness.errors import CannotTrace, UsageError
from iowitness.probes.layout import layout

SCRIPT = Path(probes.__file__).parent / "iowitness.bt"
SETTINGS_MARK = "// SETTINGS"
# bytes of a path kept (bpftrace's string size; 160 is the most the open's exit program fits
# in its 512-byte stack with the rest of its record): longer paths are cut in the trace
STRLEN = 160
_LOST = re.compile(rb"^Lost (\d+) events")
_PROBE_PREFIX = "tracepoint:syscalls:sys_exit_"


def _string_literal(text: str, what: str) -> str:
    """`text` as a bpftrace string literal; refused when bpftrace could not match it exactly."""
    if len(text.encode()) >= STRLEN or not text.isprintable() or '"' in text or "\\" in text:
        raise UsageError(f"--backend bpftrace cannot match {what} {text!r} (quotes, backslashes, control "
                         f"characters or {STRLEN} bytes or more); use the default backend or name its directory")
    return f'"{text}"'


def settings_text(processes: list[int], rules, known: list[KnownFile]) -> str:
    """The map entries that go where the script says SETTINGS: the sets the kernel filters on."""
    lines = [f"@procs[(uint64){pid}] = (uint64)1;" for pid in processes]
    for rule in rules:
        if rule.name:
            lines.append(f"@names[(uint64){rule.dir_kdev}, (uint64){rule.dir_ino}, "
                         f"{_string_literal(rule.name, 'the file name')}] = (uint64)1;")
        else:
            lines.append(f"@dirs[(uint64){rule.dir_kdev}, (uint64){rule.dir_ino}] = (uint64)1;")
    lines += [f"@files[(uint64){f.kdev}, (uint64){f.ino}] = (uint64)1;" for f in known]
    return "\n\t".join(lines)


def script_text(processes: list[int], rules, known: list[KnownFile]) -> str:
    text = SCRIPT.read_text()
    if SETTINGS_MARK not in text:
        raise CannotTrace(f"{SCRIPT} has no '{SETTINGS_MARK}' line; reinstall iowitness")
    return text.replace(SETTINGS_MARK, settings_text(processes, rules, known), 1)


class LineParser:
    """bpftrace's lines (probes/iowitness.bt says what each holds) into the compiled probe's
    records: events (layout().event) and facts (layout().meta), with bpftrace's own count of
    the records its perf buffer had no room for."""

    def __init__(self):
        lay = layout()
        self._event, self._meta = lay.event, lay.meta
        self._ops = {name: value for value, name in lay.names("iow_op", "IOW_OP_").items()}
        kinds = lay.enums["iow_meta_kind"]
        self._file, self._fork, self._exec = kinds["IOW_META_FILE"], kinds["IOW_META_FORK"], kinds["IOW_META_EXEC"]
        self._rest = b""
        self.events: list[np.ndarray] = []
        self.facts: list[np.ndarray] = []
        self.lost = 0
        self.exited: list[int] = []
        self.marks: set[int] = set()   # CPUs whose end mark arrived
        self.files_added = 0           # files the script made targets (its N line, at the end)
        self.forked: list[int] = []    # processes that joined the set (K lines)
        self.ready = False
        self.unknown_lines = 0

    def feed(self, data: bytes) -> None:
        lines = (self._rest + data).split(b"\n")
        self._rest = lines.pop()
        calls = [line for line in lines if line[:2] == b"E\t"]
        records = self._events_of(calls) if calls else None
        if records is not None and len(records):
            self.events.append(records)
        facts = []
        if len(calls) < len(lines):
            for line in lines:
                tag = line[:2]
                if tag == b"E\t":
                    continue
                if tag in (b"F\t", b"K\t", b"P\t"):
                    facts.append(line)
                    if tag == b"K\t":
                        self.forked.append(int(line.split(b"\t")[3]))
                elif tag == b"X\t":
                    self.exited.append(int(line[2:]))
                elif tag == b"N\t":
                    self.files_added = int(line[2:])
                elif tag == b"S\t":
                    self.marks.add(int(line[2:]))
                elif line.startswith(b"Lost "):
                    match = _LOST.match(line)
                    self.lost += int(match.group(1)) if match else 0
                elif line == b"READY":
                    self.ready = True
                # "Attaching N probes...", the maps bpftrace prints as it ends: nothing to keep
        if facts:
            self.facts.append(self._facts_of(facts))

    def _events_of(self, lines: list[bytes]) -> np.ndarray:
        """E lines into records: the probe names replaced by op numbers in the joined text, then
        every number read by numpy at once (splitting line by line in Python cost 15 µs a line)."""
        text = b"\n".join(lines)
        for name, value in self._ops.items():
            text = text.replace(b"\t%s%s\t" % (_PROBE_PREFIX.encode(), name.encode()), b"\t%d\t" % value)
        numbers = np.fromstring(text.replace(b"E\t", b" "), dtype=np.int64, sep=" ") \
            if b"tracepoint" not in text else np.zeros(0, np.int64)
        if numbers.size != 12 * len(lines):
            return self._events_of_rows(lines)   # a line this collector does not know: one by one
        return self._records(numbers.reshape(-1, 12))

    def _events_of_rows(self, lines: list[bytes]) -> np.ndarray:
        rows = []
        for line in lines:
            parts = line.split(b"\t")
            op = self._ops.get(parts[1].decode(errors="replace")[len(_PROBE_PREFIX):]) if len(parts) > 1 else None
            try:
                if op is None or len(parts) != 13:
                    raise ValueError
                rows.append([op, *map(int, parts[2:])])
            except ValueError:
                self.unknown_lines += 1
        return self._records(np.array(rows, dtype=np.int64).reshape(-1, 12))

    def _records(self, v: np.ndarray) -> np.ndarray:
        # columns: op start latency tgid tid fd dev ino offset requested ret flags
        out = np.zeros(len(v), dtype=self._event)
        out["op"], out["start_ns"], out["latency_ns"] = v[:, 0], v[:, 1], v[:, 2]
        out["tgid"], out["tid"], out["fd"], out["dev"] = v[:, 3], v[:, 4], v[:, 5], v[:, 6]
        out["ino"], out["offset"], out["requested"] = v[:, 7], v[:, 8], v[:, 9]
        out["ret"], out["flags"] = v[:, 10], v[:, 11]
        return out

    def _facts_of(self, lines: list[bytes]) -> np.ndarray:
        out = np.zeros(len(lines), dtype=self._meta)
        out["fd"] = out["dirfd"] = -1
        comm_max, path_max = out["comm"].shape[1] - 1, out["path"].shape[1] - 1
        for i, line in enumerate(lines):
            row = out[i:i + 1]
            if line[:1] == b"F":
                # F ts tgid fd dirfd dev ino magic comm path (the path may hold tabs: last)
                p = line.split(b"\t", 9)
                row["kind"], row["ts_ns"], row["tgid"], row["fd"] = self._file, int(p[1]), int(p[2]), int(p[3])
                # the tracepoint's int dirfd arrives zero-extended (AT_FDCWD as 4294967196)
                row["dirfd"] = np.int64(int(p[4])).astype(np.uint32).view(np.int32)
                row["dev"], row["ino"], row["s_magic"] = int(p[5]), int(p[6]), int(p[7])
                comm, path = p[8], p[9] if len(p) > 9 else b""
            elif line[:1] == b"K":
                # K ts parent child comm
                p = line.split(b"\t", 4)
                row["kind"], row["ts_ns"], row["parent_tgid"], row["tgid"] = self._fork, int(p[1]), int(p[2]), int(p[3])
                comm, path = p[4], b""
            else:
                # P ts tgid comm file
                p = line.split(b"\t", 4)
                row["kind"], row["ts_ns"], row["tgid"] = self._exec, int(p[1]), int(p[2])
                comm, path = p[3], p[4] if len(p) > 4 else b""
            row["comm"][0, :min(len(comm), comm_max)] = np.frombuffer(comm[:comm_max], np.uint8)
            row["path"][0, :min(len(path), path_max)] = np.frombuffer(path[:path_max], np.uint8)
        return out
