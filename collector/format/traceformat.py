"""The trace contract (.iwt): constants, record descriptions, device names, the loss total.

Layout, byte by byte, in docs/trace-format.md. In short: a 16-byte header (magic, format
version) and then chunks, each `kind, crc32, length, payload`; from format 3 the CRC covers
the kind and the length as well as the payload (chunk_crc). The writer
(collector/format/tracewriter.py) only ever appends whole chunks, so whatever a SIGKILL leaves behind
is a run of good chunks plus at most one torn one; the reader (collector/format/tracereader.py) keeps
the good run and reports the rest as `truncated_bytes`.

Record chunks (EVENTS, FACTS, and any kind listed in RECORD_KINDS) hold a batch of records of
one dtype. Formats 2 and 3 store each batch as a block of collector/format/codec.py (columnar,
lossless, zstd: about 3 to 7 bytes per event instead of 72); format 1 stored the records as
they were.

The START chunk describes the record dtypes it was written with, and the reader builds its
dtypes from that description (checked by collector/format/traceschema.py), never from events.h: a
trace stays readable after the probe's layout changes. Nothing here imports pandas or the analysis.
"""

from __future__ import annotations

import json
import struct
import zlib

import numpy as np

from iowitness.probes.layout import Layout, layout

MAGIC = b"IOWTRACE"
FORMAT_VERSION = 3               # what the writer writes
# what the reader reads: 1 = raw record chunks, 2 = codec blocks, 3 = codec blocks and chunk
# heads under the CRC
READABLE_VERSIONS = (1, 2, 3)
HEADS_CHECKED_SINCE = 3
HEADER = struct.Struct("<8sII")        # magic, format version, reserved (0)
CHUNK = struct.Struct("<IIQ")          # kind, crc32, payload length
_CHUNK_FIELDS = struct.Struct("<IQ")   # kind and length as the format 3 CRC sees them


def chunk_crc(version: int, kind: int, payload) -> int:
    """The CRC a chunk head carries: of the payload alone before format 3; from format 3 of
    the kind and length (u32, u64, little-endian) followed by the payload, so that one flipped
    bit in a head can no longer move or rename a chunk unseen."""
    if version < HEADS_CHECKED_SINCE:
        return zlib.crc32(payload)
    return zlib.crc32(payload, zlib.crc32(_CHUNK_FIELDS.pack(kind, len(payload))))


# What a reader allocates is bounded before it allocates (docs/trace-format.md, "Limits"):
# a record block decodes to at most MAX_BLOCK_BYTES (the writer splits larger batches), and
# all the records of a trace to at most DECODE_FLOOR or DECODE_RATIO times the file's size,
# whichever is larger. Real traces' records take 10 to 30 times their bytes on disk.
MAX_BLOCK_BYTES = 64 << 20
DECODE_FLOOR = 64 << 20
DECODE_RATIO = 1024

START, EVENTS, FACTS, OUTPUT, COUNTERS, END = 1, 2, 3, 4, 5, 6
# the device view (docs/trace-format.md): block requests, off-CPU stretches, kernel counters
BLOCK, OFFCPU, SAMPLES = 7, 8, 9
# --summary traces: the kernel's aggregates (collector/aggregates.py), a self-describing
# snapshot: u32 length of a JSON dtype description, the description, then the rows; the
# last SUMMARY chunk of a trace holds the totals of the run
SUMMARY = 10
SUMMARY_HEAD = struct.Struct("<I")
# the benchmark's output timeline: its writes to fd 1 and 2 (struct iow_output, probes/output.bpf.h;
# collector/format/printed_timeline.py makes lines of them)
PRINTED = 11
STREAMS = {"stdout": 1, "stderr": 2}
# chunk kinds that hold a batch of records, and the key of their dtype in START's "layout";
# a new kind of record gets a number here and a description in describe_layout, nothing else
RECORD_KINDS = {EVENTS: "event", FACTS: "meta", BLOCK: "block", OFFCPU: "offcpu", PRINTED: "output"}
# record batches smaller than this wait in memory for the next flush and go out as one chunk:
# a slow benchmark's drains of a few events would each pay a block's fixed cost (60 bytes)
GATHER_ROWS = 8192
KIND_NAMES = {START: "start", EVENTS: "events", FACTS: "facts", OUTPUT: "output",
              COUNTERS: "counters", END: "end", BLOCK: "block", OFFCPU: "offcpu", SAMPLES: "samples",
              SUMMARY: "summary", PRINTED: "printed"}

def describe_layout(lay: Layout) -> dict:
    """The JSON form of the record layout that START carries."""
    def struct_of(dtype: np.dtype) -> dict:
        fields = [(name, *dtype.fields[name][:2]) for name in dtype.names]
        return {"itemsize": dtype.itemsize,
                "fields": [[name, sub.base.str, offset, list(sub.shape)]
                           for name, sub, offset in fields]}

    return {
        "version": lay.version,
        "event": struct_of(lay.event),
        "meta": struct_of(lay.meta),
        "ops": {str(k): v for k, v in lay.names("iow_op", "IOW_OP_").items()},
        "meta_kinds": {str(k): v for k, v in lay.names("iow_meta_kind", "IOW_META_").items()},
        "block": struct_of(lay.structs["iow_block"]),
        "offcpu": struct_of(lay.structs["iow_offcpu"]),
        "output": struct_of(lay.structs["iow_output"]),
    }


MINOR_BITS = 20  # the kernel's dev_t, as the probe records it: major << 20 | minor


def kernel_dev(major: int, minor: int) -> int:
    return (major << MINOR_BITS) | minor


def dev_name(kdev: int) -> str:
    """A device number as the kernel encodes it, named the way /proc/diskstats does: 'major:minor'."""
    return f"{kdev >> MINOR_BITS}:{kdev & ((1 << MINOR_BITS) - 1)}"


# How the probe's own run time was measured: `mode` in the COUNTERS chunk's probe_cost
# (collector/stats_windows.py decides when the windows open)
STATS_SAMPLED = "sampled"   # in windows, switched on and off by the collector (BPF_ENABLE_STATS)
STATS_SYSCTL = "sysctl"     # on all run long, by the machine's kernel.bpf_stats_enabled
STATS_OFF = "off"           # not measured (--no-bpf-stats, or the kernel refused)


# Counters of calls and facts missing from a trace: the kernel's (what the probe could not
# deliver: collector/probe.py) and the collector's own (statistics runs it did not time). The
# device view's losses (lost_block, lost_offcpu) are reported apart: they miss no call.
LOSS_COUNTERS = ("lost_events", "lost_summary", "missed_runs")
# Facts the probe's meta ring could not take (a file's open with its name, a fork, an exec):
# no call is missing, but the calls on a file whose open was lost have no name. Said apart,
# in names_lost_text, never as "calls missed".
NAMES_LOST = "lost_meta"


# Counters of what the probe could not follow at all: a target file or a process its sets had
# no room for (--max-files, --max-processes), a thread the kernel gave no storage. Each hides
# an unknown number of calls, so they are said beside "lost", not added to it; the words are
# what every report prints.
NOT_FOLLOWED = {
    "files_not_followed": ("open of a target file", "opens of target files",
                           "the file set was full: raise --max-files"),
    "processes_not_followed": ("process", "processes", "the process set was full: raise --max-processes"),
    "threads_not_followed": ("thread", "threads", "the kernel gave them no task storage (memory was short), "
                             "or the compatible probe's thread map was full"),
    "requests_not_followed": ("asynchronous request", "asynchronous requests",
                              "submitted but never seen completing: left in flight when its process ended or "
                              "its libaio context was destroyed, reaped from the ring in user space, or more "
                              "in flight at once than the probe's in-flight map holds"),
    "transfers_not_decoded": ("transfer on a target file", "transfers on target files",
                              "made in a way the probe does not decode yet, such as an io_uring "
                              "op other than read, write and fsync"),
    "compat_not_followed": ("libaio/io_uring request or mmap of a target", "libaio/io_uring requests or mmaps "
                            "of targets", "the compatible probe (an older kernel, or --probe compat) does not "
                            "follow libaio, io_uring or page faults: iowitness doctor says why it was chosen"),
}

# The probe's per-CPU `lost` slots (probes/events.h IOW_LOST_*), by the counter name the trace
# carries: the one table the collector reads them with and the schema checks them by.
LOST_SLOTS = {
    "lost_events": "IOW_LOST_EVENTS", "lost_meta": "IOW_LOST_META", "lost_block": "IOW_LOST_BLOCK",
    "lost_offcpu": "IOW_LOST_OFFCPU", "lost_summary": "IOW_LOST_SUMMARY",
    "files_not_followed": "IOW_LOST_FILES", "processes_not_followed": "IOW_LOST_PROCESSES",
    "threads_not_followed": "IOW_LOST_THREADS", "devices_not_watched": "IOW_LOST_DEVICES",
    "requests_not_followed": "IOW_LOST_REQUESTS", "transfers_not_decoded": "IOW_LOST_UNDECODED",
    "compat_not_followed": "IOW_LOST_COMPAT", "lost_output": "IOW_LOST_OUTPUT",
}

# The ops of asynchronous requests (probes/events.h IOW_OP_URING_*, IOW_OP_AIO_*): their
# start is the submission and their end the completion, and one thread has many in flight
ASYNC_OP_PREFIXES = ("uring_", "aio_")


def async_ops() -> tuple[str, ...]:
    """The names of the asynchronous request ops, in op number order."""
    return tuple(name for name in layout().names("iow_op", "IOW_OP_").values() if name.startswith(ASYNC_OP_PREFIXES))


# Calls that drive asynchronous I/O without moving file data (probes/events.h IOW_ASYNC_*):
# the COUNTERS chunk's `async_calls` holds {"calls", "ns"} under these names.
ASYNC_CALLS = {"io_uring_enter": "IOW_ASYNC_URING_ENTER", "io_submit": "IOW_ASYNC_IO_SUBMIT",
               "io_getevents": "IOW_ASYNC_IO_GETEVENTS"}


def lost_total(counters: dict) -> int:
    """The one "lost" figure every line and report prints."""
    return sum(int(counters.get(name, 0)) for name in LOSS_COUNTERS)


def not_followed(counters: dict) -> dict[str, int]:
    """The NOT_FOLLOWED counters that are not zero."""
    return {name: int(counters[name]) for name in NOT_FOLLOWED if int(counters.get(name, 0))}


def not_followed_text(counters: dict) -> str:
    """What the probe could not follow, in words; "" when it followed everything."""
    parts = []
    for name, count in not_followed(counters).items():
        one, many, why = NOT_FOLLOWED[name]
        parts.append(f"{count:,} {one if count == 1 else many} not followed ({why})")
    return "; ".join(parts)


def names_lost_text(counters: dict) -> str:
    """The facts lost, in words; "" when none was."""
    lost = int(counters.get(NAMES_LOST, 0))
    if not lost:
        return ""
    return (f"{lost:,} file-open and process record{'s' if lost != 1 else ''} lost: every call is in the trace, "
            "but calls on a file whose open was lost have no file name")


def missing_text(counters: dict) -> str:
    """What the trace misses, in words; "" when it misses nothing. Every report, the end-of-run
    line and every verdict say it the same way."""
    lost = f"{lost_total(counters):,} events lost" if lost_total(counters) else ""
    return "; ".join(part for part in (lost, not_followed_text(counters)) if part)


def ops_of_kind(kind: str) -> tuple[str, ...]:
    """The ops of one kind ("read", "write", "sync", "open", "close", "seek", ...) by the names
    traces give them: the one table of operation kinds, in probes/events.h."""
    return layout().ops_of_kind(kind)


def json_bytes(obj) -> bytes:
    # default=str: metadata may hold Paths and the like that the caller did not convert
    return json.dumps(obj, default=str, separators=(",", ":")).encode()


def spoken(numbers) -> str:
    """(1, 2, 3) -> '1, 2 and 3'."""
    words = [str(n) for n in numbers]
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)
