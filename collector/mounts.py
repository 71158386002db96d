"""Where a file lives: its mount, file system, block device, and the kernel's device number.

The probe identifies a file by (super block device, inode) as the kernel sees them. User space
`stat` usually agrees, but not on btrfs, whose st_dev is a per-subvolume number; the mount
table (/proc/self/mountinfo) shows the super block's own device, so this module maps paths to
the kernel's number through the mount that holds them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from iowitness.collector.format.traceformat import dev_name, kernel_dev


@dataclass(frozen=True)
class Mount:
    kdev: int
    root: str
    mount_point: str
    fs_type: str
    source: str

    def describe(self) -> dict:
        return {"device": dev_name(self.kdev), "mount_point": self.mount_point,
                "fs_type": self.fs_type, "source": self.source,
                "block_device": self.source if self.source.startswith("/dev/") else None}


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal
    return field.encode().decode("unicode_escape") if "\\" in field else field


def mounts() -> list[Mount]:
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            parts, rparts = left.split(), right.split()
            major, minor = (int(x) for x in parts[2].split(":"))
            found.append(Mount(kernel_dev(major, minor), _unescape(parts[3]), _unescape(parts[4]),
                               rparts[0], _unescape(rparts[1]) if len(rparts) > 1 else ""))
    return found


def mount_of(path: str | Path, table: list[Mount] | None = None) -> Mount | None:
    """The mount holding `path` (resolved), by its device when stat agrees, else by prefix."""
    table = table if table is not None else mounts()
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        st = None
    candidates = [m for m in table if real == m.mount_point or real.startswith(m.mount_point.rstrip("/") + "/")]
    candidates.sort(key=lambda m: len(m.mount_point))
    if st is not None:
        same = [m for m in candidates if m.kdev == kernel_dev(os.major(st.st_dev), os.minor(st.st_dev))]
        if same:
            return same[-1]
    return candidates[-1] if candidates else None


def kernel_identity(path: str | Path, table: list[Mount] | None = None) -> tuple[int, int]:
    """(kernel device, inode) of an existing file or directory, as the probe will see it."""
    st = os.stat(path)
    mount = mount_of(path, table)
    kdev = mount.kdev if mount else kernel_dev(os.major(st.st_dev), os.minor(st.st_dev))
    return kdev, st.st_ino
