"""What to watch: the process set and the file set, turned into the probe's map entries.

File set rules (the probe applies them in the kernel):
  - a FILE path becomes a name rule (its directory's identity + its name): the file is a target
    whenever it is opened under that name, including after being deleted and re-created;
    if it exists now, its inode is registered too, so fds opened before tracing count;
  - a DIRECTORY path becomes a rule for every file opened directly inside it;
  - with no path at all, every regular file the processes open is a target, except on
    pseudo file systems (proc, sysfs, ...), non-regular files (pipes, sockets, ttys,
    devices) and paths starting with one of DEFAULT_EXCLUDES.
"""

from __future__ import annotations

import fcntl
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from iowitness.collector import mounts
from iowitness.errors import NotFound, UsageError
from iowitness.probes.layout import layout

# Paths opened by the dynamic loader, language runtimes and the system, not by a benchmark.
DEFAULT_EXCLUDES = (
    "/proc/", "/sys/", "/dev/", "/run/",
    "/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/local/lib/",
    "/usr/share/", "/etc/",
)


@dataclass
class FileRule:
    dir_kdev: int
    dir_ino: int
    name: str          # "" = any file in the directory
    path: str


@dataclass
class KnownFile:
    kdev: int
    ino: int
    path: str
    tgid: int = 0   # the process that had it open, when found through /proc/PID/fd
    generation: int | None = None


# entries of the probe's `names` map (probes/targets.bpf.h), one per --file path: a test reads
# the map's size from the compiled object and fails when the two disagree
NAME_RULES_MAX = 1024

FS_IOC_GETVERSION = 0x80087601  # _IOR('v', 1, long)


def inode_generation(path: str | Path) -> int | None:
    """The inode's generation number, where the file system tells it (ext4, btrfs)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    try:
        buf = fcntl.ioctl(fd, FS_IOC_GETVERSION, b"\0" * 8)
        return struct.unpack("<Q", buf)[0] & 0xFFFFFFFF
    except OSError:
        return None
    finally:
        os.close(fd)


@dataclass
class FileSet:
    rules: list[FileRule] = field(default_factory=list)
    known: list[KnownFile] = field(default_factory=list)

    @property
    def all_files(self) -> bool:
        return not self.rules and not self.known


def file_set(paths: list[str]) -> FileSet:
    """Rules and known inodes for the paths a user named. A file may not exist yet; its directory must."""
    fs = FileSet()
    table = mounts.mounts()
    max_name = layout().constants["IOW_NAME_MAX"] - 1
    paths = list(dict.fromkeys(os.path.abspath(raw) for raw in paths))   # a path named twice is one rule
    if len(paths) > NAME_RULES_MAX:
        raise UsageError(f"{len(paths):,} --file paths, but the probe holds at most {NAME_RULES_MAX:,}; "
                         "name their directory instead (one path for every file directly in it)")
    for path in paths:
        if os.path.isdir(path):
            kdev, ino = mounts.kernel_identity(path, table)
            fs.rules.append(FileRule(kdev, ino, "", path))
            continue
        parent, name = os.path.split(path)
        if not os.path.isdir(parent):
            raise NotFound(f"directory {parent} does not exist, so {name} cannot appear in it; "
                           "create it first or check the path")
        if len(name.encode()) > max_name:
            raise UsageError(f"file name {name!r} is longer than {max_name} bytes, which the probe matches")
        kdev, ino = mounts.kernel_identity(parent, table)
        fs.rules.append(FileRule(kdev, ino, name, path))
        if os.path.exists(path):
            fkdev, fino = mounts.kernel_identity(path, table)
            fs.known.append(KnownFile(fkdev, fino, path, generation=inode_generation(path)))
    return fs


def open_files_of(pid: int, fs: FileSet) -> list[KnownFile]:
    """Regular files process `pid` holds open now that the file set covers (all, when it has no rules)."""
    found = []
    table = mounts.mounts()
    fd_dir = Path(f"/proc/{pid}/fd")
    try:
        entries = list(fd_dir.iterdir())
    except OSError:
        return found
    wanted_dirs = {(r.dir_kdev, r.dir_ino) for r in fs.rules if not r.name}
    wanted_paths = {r.path for r in fs.rules if r.name}
    for entry in entries:
        try:
            target = os.readlink(entry)
            st = os.stat(entry)
        except OSError:
            continue
        if not target.startswith("/") or not (st.st_mode & 0o170000 == 0o100000):
            continue
        kdev, ino = mounts.kernel_identity(entry, table)
        if fs.all_files:
            if target.startswith(DEFAULT_EXCLUDES):
                continue
        elif target not in wanted_paths:
            try:
                parent = mounts.kernel_identity(os.path.dirname(target), table)
            except OSError:
                continue
            if parent not in wanted_dirs:
                continue
        found.append(KnownFile(kdev, ino, target, pid, inode_generation(entry)))
    return found


def name_key(rule: FileRule) -> bytes:
    key = np.zeros(1, dtype=layout().structs["iow_name_key"])
    key["dir_ino"], key["dir_dev"] = rule.dir_ino, rule.dir_kdev
    encoded = rule.name.encode()
    key["name"][0, :len(encoded)] = np.frombuffer(encoded, dtype=np.uint8)
    return key.tobytes()


def file_key(kdev: int, ino: int) -> bytes:
    key = np.zeros(1, dtype=layout().structs["iow_file_key"])
    key["ino"], key["dev"] = ino, kdev
    return key.tobytes()


def file_state(generation: int | None) -> bytes:
    value = np.zeros(1, dtype=layout().structs["iow_file_state"])
    if generation is not None:
        value["generation"], value["generation_known"] = generation, 1
    return value.tobytes()


def exclude_entries(prefixes=DEFAULT_EXCLUDES) -> list[bytes]:
    entry = layout().structs["iow_exclude"]
    limit = layout().constants["IOW_EXCLUDE_LEN"]
    if len(prefixes) > layout().constants["IOW_EXCLUDE_MAX"]:
        raise UsageError("too many exclusion prefixes for the probe")
    out = []
    for prefix in prefixes:
        raw = prefix.encode()[:limit]
        value = np.zeros(1, dtype=entry)
        value["prefix"][0, :len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        out.append(value.tobytes())
    return out
