"""The Python reader's record layout, parsed from probes/events.h, against what clang compiled.

bpftool reads the BTF of the built object: sizes and offsets of every shared struct must be
the ones numpy uses, so the two sides of the ring buffer can never disagree."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from iowitness import probes
from iowitness.probes.layout import LayoutError, layout, parse

SHARED = ("iow_event", "iow_meta", "iow_block", "iow_offcpu", "iow_settings", "iow_name_key", "iow_file_key",
          "iow_file_state", "iow_exclude", "iow_summary_key", "iow_summary")


def _btf_structs() -> dict[str, tuple[int, dict[str, int]]]:
    bpftool = shutil.which("bpftool") or ("/usr/sbin/bpftool" if shutil.os.path.exists("/usr/sbin/bpftool") else None)
    if not bpftool or not probes.OBJECT.exists():
        pytest.skip("needs bpftool and the built probe (scripts/setup.sh)")
    dump = subprocess.run([bpftool, "btf", "dump", "file", str(probes.OBJECT)],
                          capture_output=True, text=True, check=True).stdout
    structs, current = {}, None
    for line in dump.splitlines():
        head = re.match(r"\[\d+\] STRUCT '(\w+)' size=(\d+)", line)
        if head:
            current = head.group(1)
            structs[current] = (int(head.group(2)), {})
            continue
        member = re.match(r"\s+'(\w+)' type_id=\d+ bits_offset=(\d+)", line)
        if member and current:
            structs[current][1][member.group(1)] = int(member.group(2)) // 8
        elif not line.startswith("\t"):
            current = None
    return structs


def test_every_shared_struct_matches_the_compiled_object():
    # GIVEN the structs clang compiled into the probe, WHEN numpy dtypes are parsed from events.h
    btf = _btf_structs()
    for name in SHARED:
        dtype = layout().structs[name]
        size, members = btf[name]
        # THEN size, field names and offsets agree
        assert dtype.itemsize == size, name
        assert {f: dtype.fields[f][1] for f in dtype.names} == members, name


def test_the_ring_record_is_72_bytes_and_8_byte_aligned():
    assert layout().event.itemsize == 72
    assert layout().event.itemsize % 8 == 0


def test_op_names_are_the_syscall_names():
    names = layout().names("iow_op", "IOW_OP_")
    assert names[layout().enums["iow_op"]["IOW_OP_PREAD64"]] == "pread64"
    assert len(set(names.values())) == len(names) == 24


def test_the_parser_refuses_what_it_does_not_understand():
    # GIVEN a header with a field type the reader cannot map, THEN a clear error, not a guess
    with pytest.raises(LayoutError, match="cannot read field"):
        parse("#define IOW_LAYOUT_VERSION 1\nstruct iow_event {\n\tpid_t tgid;\n};\n")
