"""The event layout, read from probes/events.h: the one place it is written.

The BPF program is compiled from events.h; this module parses the same file into numpy
dtypes, name tables and the kind of every op (the IOW_OP_KINDS table the probe expands into
kind_of_op()), so the Python reader cannot drift from the kernel side. The parser
understands only the plain style events.h keeps (see its opening comment) and refuses
anything else loudly. tests/unit/test_layout.py checks the result against the BTF of the
compiled object.

Example:

    >>> layout().op_kinds["pread64"]
    'read'
    >>> layout().ops_of_kind("sync")
    ('fsync', 'fdatasync')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

HEADER = Path(__file__).with_name("events.h")

_SCALARS = {
    "__u8": "u1", "__s8": "i1", "char": "u1",
    "__u16": "<u2", "__s16": "<i2",
    "__u32": "<u4", "__s32": "<i4",
    "__u64": "<u8", "__s64": "<i8",
}
_DEFINE = re.compile(r"^#define\s+(IOW_\w+)\s+(-?\w+)\s*(?:/\*.*)?$", re.M)
_ENUM = re.compile(r"enum\s+(\w+)\s*\{(.*?)\};", re.S)
_ENUM_ITEM = re.compile(r"(\w+)\s*=\s*(-?\w+)")
_STRUCT = re.compile(r"struct\s+(\w+)\s*\{(.*?)\};", re.S)
_FIELD = re.compile(r"^\s*(\w+)\s+(\w+)\s*(?:\[(\w+)\])?\s*;")
# the kind table: `#define IOW_OP_KINDS(X) \` then one `X(IOW_OP_NAME, IOW_KIND_NAME) \` per op
_KIND_TABLE = re.compile(r"^#define\s+IOW_OP_KINDS\(X\)\s*\\\n((?:[^\n]*\\\n)*[^\n]*)", re.M)
_KIND_ROW = re.compile(r"X\(\s*(\w+)\s*,\s*(\w+)\s*\)")
OP_ENUM, OP_PREFIX = "iow_op", "IOW_OP_"
KIND_ENUM, KIND_PREFIX = "iow_kind", "IOW_KIND_"


class LayoutError(Exception):
    """events.h holds something this parser does not understand."""


@dataclass(frozen=True)
class Layout:
    version: int
    constants: dict[str, int]
    enums: dict[str, dict[str, int]]
    structs: dict[str, np.dtype]
    # short op name -> short kind name, from IOW_OP_KINDS: {"pread64": "read", ...}
    op_kinds: dict[str, str] = field(default_factory=dict)

    @property
    def event(self) -> np.dtype:
        return self.structs["iow_event"]

    @property
    def meta(self) -> np.dtype:
        return self.structs["iow_meta"]

    def names(self, enum: str, prefix: str) -> dict[int, str]:
        """Enum values to short lowercase names: IOW_OP_PREAD64 -> 'pread64'."""
        return {v: k[len(prefix):].lower() for k, v in self.enums[enum].items()}

    def ops_of_kind(self, kind: str) -> tuple[str, ...]:
        """Short names of the ops of one kind, in IOW_OP order: ops_of_kind("sync") ->
        ('fsync', 'fdatasync'). An unknown kind is an error, not an empty tuple."""
        kinds = self.names(KIND_ENUM, KIND_PREFIX).values()
        if kind not in kinds:
            raise ValueError(f"no op kind {kind!r} in events.h (kinds: {', '.join(kinds)})")
        ops = self.names(OP_ENUM, OP_PREFIX)
        return tuple(ops[v] for v in sorted(ops) if self.op_kinds[ops[v]] == kind)


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _op_kinds(text: str, enums: dict[str, dict[str, int]]) -> dict[str, str]:
    """The IOW_OP_KINDS table, checked: every op of enum iow_op has exactly one kind of enum
    iow_kind, and every line names an op and a kind that exist."""
    ops, kinds = enums.get(OP_ENUM), enums.get(KIND_ENUM)
    if ops is None:
        return {}   # a header without ops (a test's fragment) has no table to check
    if kinds is None:
        raise LayoutError("events.h: enum iow_kind is missing: every op needs a kind")
    table = _KIND_TABLE.search(text)
    if not table:
        raise LayoutError("events.h: the IOW_OP_KINDS table is missing: every op needs a kind")
    found: dict[str, str] = {}
    for op, kind in _KIND_ROW.findall(table.group(1)):
        if op not in ops:
            raise LayoutError(f"events.h: IOW_OP_KINDS: {op} is not in enum iow_op")
        if kind not in kinds:
            raise LayoutError(f"events.h: IOW_OP_KINDS: {op}: {kind} is not in enum iow_kind")
        if op in found:
            raise LayoutError(f"events.h: IOW_OP_KINDS: {op} has two kinds")
        found[op] = kind
    missing = [op for op in ops if op not in found]
    if missing:
        raise LayoutError(f"events.h: IOW_OP_KINDS: no kind for {', '.join(missing)}")
    return {op[len(OP_PREFIX):].lower(): kind[len(KIND_PREFIX):].lower() for op, kind in found.items()}


def parse(text: str) -> Layout:
    constants = {name: int(value, 0) for name, value in _DEFINE.findall(text)}
    code = _strip_comments(text)
    enums = {}
    for name, body in _ENUM.findall(code):
        enums[name] = {k: int(v, 0) for k, v in _ENUM_ITEM.findall(body)}
    structs = {}
    for name, body in _STRUCT.findall(code):
        fields = []
        for line in body.strip().splitlines():
            if not line.strip():
                continue
            m = _FIELD.match(line)
            if not m or m.group(1) not in _SCALARS:
                raise LayoutError(f"events.h: struct {name}: cannot read field {line.strip()!r}")
            ctype, field, count = m.groups()
            if count is None:
                fields.append((field, _SCALARS[ctype]))
            else:
                n = constants[count] if count in constants else int(count, 0)
                fields.append((field, _SCALARS[ctype], (n,)))
        structs[name] = np.dtype(fields, align=True)
    if "IOW_LAYOUT_VERSION" not in constants:
        raise LayoutError("events.h: IOW_LAYOUT_VERSION is missing")
    return Layout(constants["IOW_LAYOUT_VERSION"], constants, enums, structs, _op_kinds(code, enums))


@cache
def layout() -> Layout:
    return parse(HEADER.read_text())
