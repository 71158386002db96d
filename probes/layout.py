"""The event layout, read from probes/events.h: the one place it is written.

The BPF program is compiled from events.h; this module parses the same file into numpy
dtypes and name tables, so the Python reader cannot drift from the kernel side. The parser
understands only the plain style events.h keeps (see its opening comment) and refuses
anything else loudly. tests/kernel/test_layout.py checks the result against the BTF of the
compiled object.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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


class LayoutError(Exception):
    """events.h holds something this parser does not understand."""


@dataclass(frozen=True)
class Layout:
    version: int
    constants: dict[str, int]
    enums: dict[str, dict[str, int]]
    structs: dict[str, np.dtype]

    @property
    def event(self) -> np.dtype:
        return self.structs["iow_event"]

    @property
    def meta(self) -> np.dtype:
        return self.structs["iow_meta"]

    def names(self, enum: str, prefix: str) -> dict[int, str]:
        """Enum values to short lowercase names: IOW_OP_PREAD64 -> 'pread64'."""
        return {v: k[len(prefix):].lower() for k, v in self.enums[enum].items()}


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


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
    return Layout(constants["IOW_LAYOUT_VERSION"], constants, enums, structs)


@cache
def layout() -> Layout:
    return parse(HEADER.read_text())
