"""The block device under a file, and what the kernel counts for it (/proc/diskstats, /proc/stat).

The device view needs the device the kernel accounts a file's I/O to: a partition's own
diskstats line for a file system on a partition, the whole disk's for one on a whole disk, the
loop device for one on a loop device. The mount's device number is that device for most file
systems; btrfs shows an anonymous number (major 0) instead, so the mount's source (/dev/...)
is asked for its own device number. tmpfs, NFS, overlay and the like have no block device:
`device_of` says so and why.

No pandas here: the collector imports this module.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from iowitness.collector import mounts
from iowitness.collector.format.traceformat import dev_name, kernel_dev

SECTOR = 512
# /proc/diskstats fields after major, minor and name (Documentation/admin-guide/iostats.rst)
DISKSTATS_FIELDS = ("reads", "reads_merged", "sectors_read", "read_ms", "writes", "writes_merged",
                    "sectors_written", "write_ms", "in_flight", "io_ms", "weighted_ms",
                    "discards", "discards_merged", "sectors_discarded", "discard_ms", "flushes", "flush_ms")
# /proc/stat "cpu" line fields, in clock ticks
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def sysfs_dir(kdev: int) -> Path | None:
    """/sys/dev/block/MAJ:MIN resolved, or None when the number is no block device."""
    link = Path("/sys/dev/block") / dev_name(kdev)
    return link.resolve() if link.exists() else None


def _whole_disk(where: Path) -> Path:
    """The sysfs directory of the disk a device's sysfs directory belongs to (itself for a disk)."""
    return where.parent if (where / "partition").exists() else where


def describe(kdev: int) -> dict:
    """Name, whole disk, partition or not, loop backing file: what a reader of the view needs."""
    where = sysfs_dir(kdev)
    info = {"device": dev_name(kdev), "dev": kdev, "name": where.name if where else None}
    if where is None:
        return info
    disk = _whole_disk(where)
    info.update(partition=disk != where, disk=disk.name)
    for key, path in (("backing_file", disk / "loop" / "backing_file"), ("rotational", disk / "queue" / "rotational"),
                      ("logical_block_size", disk / "queue" / "logical_block_size")):
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        info[key] = int(text) if text.isdigit() else text
    return info


def special_device(path: str) -> int | None:
    """The kernel device number of `path` when it is itself a block device (/dev/sdb, a
    /dev/disk/by-id link to one), else None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return kernel_dev(os.major(st.st_rdev), os.minor(st.st_rdev)) if stat.S_ISBLK(st.st_mode) else None


def device_of(path: str, table: list[mounts.Mount] | None = None) -> tuple[int | None, str]:
    """(kernel device number of the block device under `path`, None) or (None, why there is none).
    A block device opened as a file is its own device."""
    own = special_device(path)
    if own is not None:
        return own, ""
    mount = mounts.mount_of(path, table)
    if mount is None:
        return None, f"no mount holds {path}"
    if sysfs_dir(mount.kdev) is not None:
        return mount.kdev, ""
    if mount.source.startswith("/dev/"):
        try:
            rdev = os.stat(mount.source).st_rdev
        except OSError:
            rdev = 0
        if rdev:
            kdev = kernel_dev(os.major(rdev), os.minor(rdev))
            if sysfs_dir(kdev) is not None:
                return kdev, ""
    return None, (f"{mount.mount_point} is {mount.fs_type}, which has no block device: "
                  f"its I/O never reaches a disk the kernel's block layer sees")


def disk_under(path: str, table: list[mounts.Mount] | None = None) -> str | None:
    """The whole disk ("vda" for a file on vda1) under path's file system, or None when it has
    none (tmpfs, overlay, proc). btrfs too: its files carry an anonymous device number, so the
    disk is found through the mount's source, as device_of does."""
    kdev, _ = device_of(path, table)   # a device it names has a sysfs directory
    return _whole_disk(sysfs_dir(kdev)).name if kdev is not None else None


def read_diskstats(text: str | None = None) -> dict[str, list[int]]:
    """MAJ:MIN -> the 17 counters of /proc/diskstats, for devices that did any I/O."""
    if text is None:
        with open("/proc/diskstats") as f:
            text = f.read()
    out = {}
    width = len(DISKSTATS_FIELDS)
    for line in text.splitlines():
        parts = line.split()
        # an idle device (no read, no write, nothing in flight) is skipped before any number is
        # parsed: the collector samples every 0.5 s, and most lines are idle loop devices
        if len(parts) < 14 or parts[3] == parts[7] == parts[11] == "0":
            continue
        values = list(map(int, parts[3:3 + width]))
        out[f"{parts[0]}:{parts[1]}"] = values + [0] * (width - len(values))
    return out


def read_cpu() -> list[int]:
    """The machine's CPU time by kind (CPU_FIELDS), in clock ticks, from /proc/stat."""
    with open("/proc/stat") as f:
        first = f.readline().split()
    return [int(v) for v in first[1:1 + len(CPU_FIELDS)]]


def sample() -> dict:
    """One SAMPLES record: the monotonic time, every active device's counters, the CPU line."""
    return {"ts_ns": time.clock_gettime_ns(time.CLOCK_MONOTONIC), "diskstats": read_diskstats(),
            "cpu": read_cpu()}


def header() -> dict:
    """What SAMPLES readers need to decode the lists."""
    return {"diskstats_fields": list(DISKSTATS_FIELDS), "cpu_fields": list(CPU_FIELDS),
            "clock_ticks_per_s": os.sysconf("SC_CLK_TCK"), "sector_bytes": SECTOR}
