"""Real block devices for tests: a loop device (whole, or with one partition) holding ext4, a
tmpfs, and a cgroup-v1 blkio group that throttles a device to a known rate. Each is a context
manager that removes what it made, even when the test fails; names carry the test's pid and a
random part, so parallel runs on one machine never meet.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest


def _run(*argv: str) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout.strip()


def _tool(name: str) -> str:
    path = shutil.which(name) or (f"/usr/sbin/{name}" if os.path.exists(f"/usr/sbin/{name}") else None)
    if not path:
        pytest.skip(f"{name} is not installed")
    return path


def dev_numbers(block_device: str) -> tuple[int, int]:
    rdev = os.stat(block_device).st_rdev
    return os.major(rdev), os.minor(rdev)


def diskstats(name: str) -> dict[str, int]:
    """The counters of one /proc/diskstats line, read by the test itself (the ground truth)."""
    for line in Path("/proc/diskstats").read_text().splitlines():
        parts = line.split()
        if parts[2] == name:
            return {"reads": int(parts[3]), "read_bytes": int(parts[5]) * 512,
                    "writes": int(parts[7]), "write_bytes": int(parts[9]) * 512}
    raise AssertionError(f"{name} is not in /proc/diskstats")


def settled(name: str) -> dict[str, int]:
    """diskstats of a device once what another program started on it is over (udev's blkid
    probe after losetup, a remount's flush): two readings half a second apart the same."""
    last = diskstats(name)
    for _ in range(40):
        time.sleep(0.5)
        now = diskstats(name)
        if now == last:
            return now
        last = now
    raise AssertionError(f"{name} never fell quiet: {last}")


def loop_ext4(size_mb: int = 64, partitioned: bool = False):
    """(block device path, mount point) of ext4 on a fresh loop device, or on its first partition."""
    return loop_fs("ext4", size_mb, partitioned)


# how each file system is made: quietly, over whatever the image held, all its metadata written now
MKFS = {"ext4": ["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"], "btrfs": ["-q", "-f"],
        "xfs": ["-q", "-f"]}


@contextlib.contextmanager
def loop_fs(fs: str, size_mb: int = 64, partitioned: bool = False):
    """(block device path, mount point) of `fs` on a fresh loop device, or on its first partition."""
    losetup, mkfs = _tool("losetup"), _tool(f"mkfs.{fs}")
    work = Path(tempfile.mkdtemp(prefix=f"iow-loop-{os.getpid()}-"))
    image, mnt = work / "disk.img", work / "mnt"
    mnt.mkdir()
    loop, mounted = None, False
    try:
        with open(image, "wb") as f:
            f.truncate(size_mb << 20)
        loop = _run(losetup, "-f", "--show", *(["-P"] if partitioned else []), str(image))
        device = loop
        if partitioned:
            # one partition from sector 2048 to the end, added with the BLKPG ioctl: works on
            # kernels built without any partition-table parser (this one has none)
            _run(_tool("addpart"), loop, "1", "2048", str((size_mb << 11) - 2048))
            device = f"{loop}p1"
        for _ in range(50):   # the partition's node appears a moment after losetup -P
            if os.path.exists(device):
                break
            time.sleep(0.05)
        _run(mkfs, *MKFS[fs], device)
        _run("mount", device, str(mnt))
        mounted = True
        yield device, mnt
    finally:
        if mounted:
            subprocess.run(["umount", str(mnt)], check=False)
        if loop:
            # detaching a loop device drops its partitions with it
            subprocess.run([losetup, "-d", loop], check=False)
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def loop_raw(size_mb: int = 16):
    """The path of a fresh loop device with no file system: a disk a benchmark uses raw."""
    losetup = _tool("losetup")
    work = Path(tempfile.mkdtemp(prefix=f"iow-raw-{os.getpid()}-"))
    image, loop = work / "disk.img", None
    try:
        with open(image, "wb") as f:
            f.truncate(size_mb << 20)
        loop = _run(losetup, "-f", "--show", str(image))
        yield loop
    finally:
        if loop:
            subprocess.run([losetup, "-d", loop], check=False)
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def tmpfs(size_mb: int = 32):
    work = Path(tempfile.mkdtemp(prefix=f"iow-tmpfs-{os.getpid()}-"))
    mounted = False
    try:
        _run("mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(work))
        mounted = True
        yield work
    finally:
        if mounted:
            subprocess.run(["umount", str(work)], check=False)
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def pinned_in_page_cache(path: Path):
    """Every page of `path` held in the page cache (mlock of a shared read-only mapping) until
    the block ends: a warm read is then warm by construction, whatever the machine reclaims."""
    import ctypes
    import mmap
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mlock.argtypes = libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    size = path.stat().st_size
    fd = os.open(path, os.O_RDONLY)
    try:
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise AssertionError(f"mmap of {path}: {os.strerror(ctypes.get_errno())}")
        try:
            if libc.mlock(address, size) != 0:
                raise AssertionError(f"mlock of {path}: {os.strerror(ctypes.get_errno())}")
            yield
        finally:
            libc.munmap(address, size)   # unmapping unlocks
    finally:
        os.close(fd)


def _blkio_root() -> tuple[Path | None, bool]:
    """A cgroup-v1 blkio hierarchy: the machine's, or a private mount of it (mounted=True)."""
    for line in Path("/proc/mounts").read_text().splitlines():
        _, where, kind, options, *_ = line.split()
        if kind == "cgroup" and "blkio" in options.split(","):
            return Path(where), False
    return None, False


@contextlib.contextmanager
def blkio_throttle(major: int, minor: int, write_bps: int):
    """A blkio cgroup with blkio.throttle.write_bps_device set; yields its directory. Skips
    when cgroup v1 blkio is neither mounted nor mountable."""
    root, _ = _blkio_root()
    private = None
    if root is None:
        private = Path(tempfile.mkdtemp(prefix=f"iow-blkio-{os.getpid()}-"))
        if subprocess.run(["mount", "-t", "cgroup", "-o", "blkio", "none", str(private)],
                          capture_output=True).returncode != 0:
            private.rmdir()
            pytest.skip("cgroup-v1 blkio cannot be mounted here (the controller is bound to cgroup v2)")
        root = private
    group = root / f"iowitness-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        group.mkdir()
        (group / "blkio.throttle.write_bps_device").write_text(f"{major}:{minor} {write_bps}\n")
        yield group
    finally:
        for _ in range(100):   # processes that were in it must be gone before rmdir
            try:
                group.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)
        if private is not None:
            subprocess.run(["umount", str(private)], check=False)
            private.rmdir()


def in_cgroup(group: Path, argv: list[str]) -> list[str]:
    """argv run as a member of `group` (and so are all its children)."""
    return ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh", *argv]
