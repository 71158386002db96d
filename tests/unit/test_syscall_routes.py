"""The probe's syscall table (probes/ops.bpf.h, syscall_routes) against the kernel's syscall
numbers and against events.h's kinds.

The table gives each traced x86-64 syscall number its op and its route (how on_sys_enter and
on_sys_exit handle it); nothing but these tests ties a route to its op's kind, so a line that
sends an open down the plain-fd route, or a number that is not its syscall's, fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iowitness import probes
from iowitness.probes.layout import layout

UNISTD = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")   # linux-libc-dev: the kernel's own numbers
ROW = re.compile(r"^\s*\[(\d+)\] = \{ (\w+), IOW_ROUTE_(\w+) \},", re.M)
# the route each kind of syscall op takes (mapping and transfer ops are told by name below)
ROUTE_OF_KIND = {"open": "OPEN", "close": "CLOSE", "read": "FD", "write": "FD", "seek": "FD", "sync": "FD",
                 "dup": "FD", "fcntl": "FD", "resize": "FD", "advise": "FD"}
MAPPING = {"mmap", "munmap", "msync", "madvise"}


def _rows() -> list[tuple[int, str, str]]:
    text = (probes.HERE / "ops.bpf.h").read_text()
    table = text[text.index("syscall_routes[IOW_SYSCALL_TABLE] = {"):]
    return [(int(n), op, route) for n, op, route in ROW.findall(table[:table.index("};")])]


def _syscall_of(op: str) -> str:
    """The syscall an op comes from: a transfer's two sides are one call."""
    return op.removeprefix("IOW_OP_").lower().removesuffix("_from")


def test_every_route_fits_its_ops_kind():
    # GIVEN the table's rows and events.h's kind of every op
    kinds = layout().op_kinds
    rows = _rows()
    assert len(rows) >= 30
    for number, op, route in rows:
        # THEN each op goes the way its kind says
        if op.startswith("IOW_ASYNC_") or op == "0":
            assert route in ("ASYNC", "AIO_DESTROY", "FDS_GONE"), (number, op, route)
        elif route == "DUP":   # a dup that may close its newfd (the fd memo, probes/targets.bpf.h)
            assert op in ("IOW_OP_DUP2", "IOW_OP_DUP3"), (number, op, route)
        elif op == "IOW_CALL_IOCTL" or op.endswith("_FROM"):
            assert route == "TRANSFER", (number, op, route)
        elif _syscall_of(op) in MAPPING:
            assert route == "MAPPING", (number, op, route)
        else:
            assert route == ROUTE_OF_KIND[kinds[op.removeprefix("IOW_OP_").lower()]], (number, op, route)


def test_every_syscall_op_has_one_row():
    # GIVEN every op of events.h that a syscall of its own makes (not io_uring or libaio
    # requests, faults, or a transfer's second side)
    ops = [name for name in layout().op_kinds
           if not name.startswith(("uring_", "aio_", "fault_")) and not name.endswith("_to")]
    # WHEN the table is read
    tabled = [op.removeprefix("IOW_OP_").lower() for _, op, _ in _rows() if op.startswith("IOW_OP_")]
    # THEN each is there exactly once
    assert sorted(tabled) == sorted(ops)


@pytest.mark.skipif(not UNISTD.exists(), reason=f"{UNISTD} is not installed (Debian: linux-libc-dev)")
def test_every_number_is_its_syscalls():
    # GIVEN the kernel's own syscall numbers (the uapi header)
    numbers = {name: int(n) for name, n in re.findall(r"#define __NR_(\w+) (\d+)", UNISTD.read_text())}
    names = {"IOW_CALL_IOCTL": "ioctl", "IOW_ASYNC_URING_ENTER": "io_uring_enter", "IOW_ASYNC_IO_SUBMIT": "io_submit"}
    for number, op, route in _rows():
        # THEN each row sits at its syscall's number
        if op == "IOW_ASYNC_IO_GETEVENTS":
            assert number in (numbers["io_getevents"], numbers["io_pgetevents"])
        elif route == "AIO_DESTROY":
            assert number == numbers["io_destroy"]
        elif route == "FDS_GONE":   # calls that may close fds without being recorded
            assert number in (numbers["close_range"], numbers["execve"], numbers["execveat"], numbers["unshare"])
        else:
            assert number == numbers[names.get(op) or _syscall_of(op)], op
