"""Refuse, before reading it, a trace whose events table cannot fit in this machine's memory.

Every command reads a trace block by block, whatever its size (`show`, `report` in every form,
`check`, `compare`, `export`, a run over several hosts: analysis/measure/stream_full.py). What
still holds every event in memory is the Python API's `iowitness.load()` (its `events` table):
about 240 bytes per event at the peak (docs/performance.md, 10 million events: 2.42 GiB). A
trace file stores an event in 3 to 7 bytes, so a file of S bytes holds at least S / 8 events
and needs at least 30 S bytes. When even that exceeds the memory available (MemAvailable plus
free swap), the load could only end in the kernel's out-of-memory killer, without a word; it is
refused with one instead, naming what does work at any size. A trace that may fit is never
refused: the bound is the least it could need.

IOWITNESS_NO_MEMORY_CHECK=1 skips the check (a machine whose memory frees up as it goes).
"""

from __future__ import annotations

import os

from iowitness import units
from iowitness.errors import TooLarge

LOADED_BYTES_PER_EVENT = 240
MOST_STORED_BYTES_PER_EVENT = 8
ENV = "IOWITNESS_NO_MEMORY_CHECK"


def available_bytes(meminfo: str | None = None) -> int | None:
    """MemAvailable plus SwapFree, in bytes; None when /proc/meminfo cannot say."""
    try:
        if meminfo is None:
            with open("/proc/meminfo") as f:
                meminfo = f.read()
        fields = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in meminfo.splitlines()
                  if line.split(":")[0] in ("MemAvailable", "SwapFree")}
    except (OSError, ValueError, IndexError):
        return None
    return sum(fields.values()) if "MemAvailable" in fields else None


def least_bytes(*paths) -> int | None:
    """The least memory the traces at `paths` need held together; None when one cannot be read."""
    size = _stored(paths)
    return None if size is None else _least(size)


def _stored(paths) -> int | None:
    try:
        return sum(os.stat(path).st_size for path in paths)
    except OSError:
        return None


def _least(size: int) -> int:
    return size // MOST_STORED_BYTES_PER_EVENT * LOADED_BYTES_PER_EVENT


def check(*paths, available: int | None = None) -> None:
    """TooLarge when the traces at `paths`, held in memory together, certainly cannot fit here."""
    if os.environ.get(ENV):
        return
    size = _stored(paths)
    if size is None:
        return   # the reader says what is wrong with the path
    least = _least(size)
    available = available_bytes() if available is None else available
    least_events = least // LOADED_BYTES_PER_EVENT
    if available is None or least <= available:
        return
    named = paths[0] if len(paths) == 1 else f"{len(paths)} traces"
    raise TooLarge(f"{named} ({units.bytes_(size)}) holds at least {least_events:,} events, and iowitness.load() "
                   f"holds every event in memory: at least {units.bytes_(least)}, where this machine has "
                   f"{units.bytes_(available)} available. The commands (`iowitness show`, `report`, `check`, `compare`, "
                   f"`export`) read a trace of any size block by block; or load it where there is more memory "
                   f"({ENV}=1 tries anyway).")


def check_declared(path, events: int, available: int | None = None) -> None:
    """TooLarge when the events a trace's chunks declare (counted from their heads, before any is
    decoded) certainly cannot be held here: a small file can declare far more events than its size
    suggests (a crafted one: 1 MB declaring 15 million), and check() judges by the size alone."""
    if os.environ.get(ENV):
        return
    need = events * LOADED_BYTES_PER_EVENT
    available = available_bytes() if available is None else available
    if available is None or need <= available:
        return
    raise TooLarge(f"{path} declares {events:,} events in its {units.bytes_(_stored([path]) or 0)}, and iowitness.load() "
                   f"holds every event in memory: about {units.bytes_(need)}, where this machine has "
                   f"{units.bytes_(available)} available; it was refused before any was decoded. `iowitness show`, "
                   f"`report`, `check`, `compare` and `export` read a trace of any size block by block ({ENV}=1 tries anyway).")
