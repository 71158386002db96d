"""The Python reader's record layout, parsed from probes/events.h, against what clang compiled.

bpftool reads the BTF of the built object: sizes and offsets of every shared struct must be
the ones numpy uses, so the two sides of the ring buffer can never disagree."""

from __future__ import annotations

import re

import pytest

from iowitness import probes
from iowitness.probes.layout import LayoutError, layout, parse
from tests.support.btf import probe_btf_dump

SHARED = ("iow_event", "iow_meta", "iow_block", "iow_offcpu", "iow_output", "iow_settings", "iow_name_key",
          "iow_file_key",
          "iow_file_state", "iow_exclude", "iow_summary_key", "iow_summary")


def _btf_structs() -> dict[str, tuple[int, dict[str, int]]]:
    dump = probe_btf_dump()
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


def test_op_names_are_the_syscall_names_or_say_their_family():
    names = layout().names("iow_op", "IOW_OP_")
    assert names[layout().enums["iow_op"]["IOW_OP_PREAD64"]] == "pread64"
    assert names[layout().enums["iow_op"]["IOW_OP_URING_READ"]] == "uring_read"
    assert len(set(names.values())) == len(names) == 44


def test_the_parser_refuses_what_it_does_not_understand():
    # GIVEN a header with a field type the reader cannot map, THEN a clear error, not a guess
    with pytest.raises(LayoutError, match="cannot read field"):
        parse("#define IOW_LAYOUT_VERSION 1\nstruct iow_event {\n\tpid_t tgid;\n};\n")


# The kind of every op, written out by hand from the syscalls' manual pages: what the table in
# events.h must say, checked independently of it.
EXPECTED_KINDS = {
    "open": "open", "openat": "open", "openat2": "open", "creat": "open",
    "read": "read", "pread64": "read", "readv": "read", "preadv": "read", "preadv2": "read",
    "write": "write", "pwrite64": "write", "writev": "write", "pwritev": "write", "pwritev2": "write",
    "lseek": "seek", "fsync": "sync", "fdatasync": "sync", "close": "close",
    "dup": "dup", "dup2": "dup", "dup3": "dup", "fcntl": "fcntl", "ftruncate": "resize", "fallocate": "resize",
    "uring_read": "read", "uring_write": "write", "uring_fsync": "sync",
    "aio_read": "read", "aio_write": "write", "aio_fsync": "sync",
    "copy_file_range_from": "read", "copy_file_range_to": "write", "sendfile_from": "read",
    "sendfile_to": "write", "splice_from": "read", "splice_to": "write",
    "mmap": "map", "munmap": "map", "msync": "sync", "madvise": "map",
    "fault_read": "fault", "fault_write": "fault", "fadvise64": "advise", "readahead": "advise",
}


def test_every_op_has_exactly_one_kind_and_every_kind_is_named():
    # GIVEN the ops and kinds of events.h, WHEN the kind table is read
    ops = set(layout().names("iow_op", "IOW_OP_").values())
    kinds = set(layout().names("iow_kind", "IOW_KIND_").values())
    # THEN every op has a kind, and each is one of the enum's
    assert set(layout().op_kinds) == ops
    assert set(layout().op_kinds.values()) <= kinds


def test_each_op_has_the_kind_its_syscall_has():
    assert layout().op_kinds == EXPECTED_KINDS


def test_ops_of_a_kind_come_in_op_number_order():
    # GIVEN the kind table, WHEN the ops of one kind are asked for
    # THEN they come in IOW_OP order, as the analysis lists them
    assert layout().ops_of_kind("read") == ("read", "pread64", "readv", "preadv", "preadv2", "uring_read",
                                            "aio_read", "copy_file_range_from", "sendfile_from", "splice_from")
    assert layout().ops_of_kind("write") == ("write", "pwrite64", "writev", "pwritev", "pwritev2", "uring_write",
                                             "aio_write", "copy_file_range_to", "sendfile_to", "splice_to")
    assert layout().ops_of_kind("sync") == ("fsync", "fdatasync", "uring_fsync", "aio_fsync", "msync")
    assert layout().ops_of_kind("open") == ("open", "openat", "openat2", "creat")
    assert layout().ops_of_kind("resize") == ("ftruncate", "fallocate")
    for kind in set(EXPECTED_KINDS.values()):
        assert set(layout().ops_of_kind(kind)) == {op for op, k in EXPECTED_KINDS.items() if k == kind}


def test_an_unknown_kind_is_an_error_not_an_empty_answer():
    with pytest.raises(ValueError, match="no op kind 'reads'"):
        layout().ops_of_kind("reads")


def _events_h_with(old: str, new: str) -> str:
    text = probes.HEADER.read_text()
    assert old in text
    return text.replace(old, new)


def test_a_header_with_an_op_without_a_kind_is_refused():
    # GIVEN events.h with fsync's line taken out of the kind table
    text = _events_h_with("\tX(IOW_OP_FSYNC, IOW_KIND_SYNC) \\\n", "")
    # WHEN it is parsed, THEN the op without a kind is named
    with pytest.raises(LayoutError, match="no kind for IOW_OP_FSYNC"):
        parse(text)


def test_a_new_op_without_a_kind_is_refused():
    # GIVEN an op added to enum iow_op and not to the table
    text = _events_h_with("\tIOW_OP_FALLOCATE = 24,\n", "\tIOW_OP_FALLOCATE = 24,\n\tIOW_OP_SPLICE = 25,\n")
    with pytest.raises(LayoutError, match="no kind for IOW_OP_SPLICE"):
        parse(text)


def test_a_header_without_the_kind_table_is_refused():
    text = _events_h_with("#define IOW_OP_KINDS(X)", "#define IOW_OP_KINDS_RENAMED(X)")
    with pytest.raises(LayoutError, match="IOW_OP_KINDS table is missing"):
        parse(text)


def test_a_kind_line_naming_an_unknown_op_or_kind_or_a_second_kind_is_refused():
    with pytest.raises(LayoutError, match="IOW_OP_FSYNCC is not in enum iow_op"):
        parse(_events_h_with("X(IOW_OP_FSYNC, IOW_KIND_SYNC)", "X(IOW_OP_FSYNCC, IOW_KIND_SYNC)"))
    with pytest.raises(LayoutError, match="IOW_KIND_FLUSH is not in enum iow_kind"):
        parse(_events_h_with("X(IOW_OP_FSYNC, IOW_KIND_SYNC)", "X(IOW_OP_FSYNC, IOW_KIND_FLUSH)"))
    with pytest.raises(LayoutError, match="IOW_OP_FSYNC has two kinds"):
        parse(_events_h_with("X(IOW_OP_FSYNC, IOW_KIND_SYNC) \\\n",
                             "X(IOW_OP_FSYNC, IOW_KIND_SYNC) \\\n\tX(IOW_OP_FSYNC, IOW_KIND_CLOSE) \\\n"))
