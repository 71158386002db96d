"""Names a hostile local user can give files, processes and output, and a small trace full of
them: for the checks that every output format shows them and never obeys them."""

from __future__ import annotations

import os

import numpy as np

# one name with every trap: a colour escape, a newline (a fake line), a CR, markup, a table pipe,
# a code span, quotes, TeX dollars, a bidi override, a C1 CSI, DEL, and bytes that are not UTF-8
HOSTILE_BYTES = (b"x\x1b[31mRED\x1b[0m\nFAKE LINE\r<script>alert(1)<b x=\"y\">|pipe|`tick`\"dq'sq"
                 b"$\\frac{1}{0}$\xe2\x80\xae\xc2\x9b2J\x7f\xff\xfe.dat")
HOSTILE = HOSTILE_BYTES.decode("utf-8", errors="backslashreplace")   # a path as read: \\xff for a non-UTF-8 byte
HOSTILE_ARG = os.fsdecode(HOSTILE_BYTES)                    # what Python's argv holds (surrogates)
# what must never reach a reader raw (the text-like parts are checked per format)
RAW_CONTROLS = ("\x1b", "\r", "\x7f", "\x9b", "\u202e")


def no_raw_controls(text: str, newlines_allowed: bool = True) -> list[str]:
    """The control characters `text` emits raw (newlines allowed between lines of a report)."""
    bad = [c for c in text if (ord(c) < 0x20 and not (newlines_allowed and c == "\n"))
           or 0x7f <= ord(c) <= 0x9f or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
           or 0xd800 <= ord(c) <= 0xdfff]
    return sorted(set(bad))


def write_hostile_trace(path, output: bytes = b"", counters: dict | None = None) -> None:
    """A complete trace of one process named HOSTILE writing 64 KiB in 4 KiB records to a file
    named HOSTILE, run as `bench HOSTILE_ARG`, whose output is `output` (`counters`: more of them)."""
    from iowitness.collector.format.tracewriter import TraceWriter
    from iowitness.probes.layout import layout

    lay = layout()
    op = {name: number for number, name in lay.names("iow_op", "IOW_OP_").items()}
    kind = {name: number for number, name in lay.names("iow_meta_kind", "IOW_META_").items()}
    dev, ino, tgid = (8 << 20) | 1, 12, 41
    rows = [dict(op="openat", offset=-1, ret=3, flags=0o1101)]
    rows += [dict(op="write", offset=i * 4096, requested=4096, ret=4096) for i in range(16)]
    rows += [dict(op="close", offset=-1)]
    events = np.zeros(len(rows), lay.event)
    for i, (record, row) in enumerate(zip(events, rows)):
        record["start_ns"], record["latency_ns"] = 1_000_000_000 + i * 1_000_000, 20_000
        record["dev"], record["ino"], record["tgid"], record["tid"], record["fd"] = dev, ino, tgid, tgid, 3
        for field, value in row.items():
            record[field] = op[value] if field == "op" else value
    facts = np.zeros(1, lay.meta)
    facts["kind"], facts["dev"], facts["ino"], facts["tgid"], facts["fd"] = kind["file"], dev, ino, tgid, 3
    facts["dirfd"], facts["ts_ns"] = -100, 1
    name = b"/data/" + HOSTILE_BYTES[:200]
    facts["path"][0, :len(name)] = np.frombuffer(name, np.uint8)
    comm = HOSTILE_BYTES[:15]
    facts["comm"][0, :len(comm)] = np.frombuffer(comm, np.uint8)
    start = {"command": ["bench", HOSTILE_ARG], "mode": "run", "host": "h\x1b]0;pwned\x07",
             "clock_start": {"monotonic_ns": 999_000_000, "realtime_ns": 0, "offset_ns": 0}}
    with TraceWriter(path, start) as writer:
        writer.write_events(events)
        writer.write_facts(facts)
        if output:
            writer.write_output("stdout", output)
        writer.write_counters({"events": len(rows), "lost_events": 0, "lost_meta": 0, **(counters or {})})
        writer.close({"exit_code": 0, "clock_end": {"monotonic_ns": 1_100_000_000}})
