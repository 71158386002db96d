"""A device's ceiling, measured: sequential O_DIRECT writes and reads of a scratch file.

`iowitness report --device-ceiling measure` writes a scratch file in a target file's
directory with O_DIRECT (the page cache cannot answer), 1 MiB at a time, for at most
MEASURE_SECONDS or MEASURE_BYTES, reads it back the same way, and deletes it. The rates are
what this process gets from the device now: run it where the benchmark ran (the same cgroup,
the same device) for a ceiling that means something.
"""

from __future__ import annotations

import mmap
import os
import time

from iowitness import safepath
from iowitness.errors import NotFound

BLOCK = 1 << 20
MEASURE_BYTES = 256 << 20
MEASURE_SECONDS = 2.0


def _timed(fd: int, buf: mmap.mmap, write: bool, limit_bytes: int) -> tuple[int, float]:
    done, start = 0, time.monotonic()
    while done < limit_bytes and time.monotonic() - start < MEASURE_SECONDS:
        n = os.pwritev(fd, [buf], done) if write else os.preadv(fd, [buf], done)
        if n <= 0:
            break
        done += n
    if write:
        os.fsync(fd)
    return done, time.monotonic() - start


def measure(directory: str) -> dict:
    """{"read": bytes/s, "write": bytes/s, "source": how} for the device under `directory`."""
    if not os.path.isdir(directory):
        raise NotFound(f"--device-ceiling measure: {directory} does not exist on this machine; "
                       "give the rate instead, e.g. --device-ceiling 200MB/s")
    name = f".iowitness-ceiling-{os.getpid()}"
    try:   # the directory is named by a trace: reached without a link another user placed
        folder = safepath.open_folder(directory)
    except (safepath.Refused, OSError) as exc:
        raise NotFound(f"--device-ceiling measure: {directory}: {getattr(exc, 'strerror', None) or exc}; give the "
                       "rate instead, e.g. --device-ceiling 200MB/s") from None
    buf = mmap.mmap(-1, BLOCK)   # page-aligned, as O_DIRECT wants
    buf.write(os.urandom(4096) * (BLOCK // 4096))
    try:
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_DIRECT, 0o600, dir_fd=folder)
    except OSError as exc:
        os.close(folder)
        buf.close()
        raise NotFound(f"--device-ceiling measure: cannot open a scratch file with O_DIRECT in {directory}: "
                       f"{exc.strerror}; give the rate instead, e.g. --device-ceiling 200MB/s") from None
    try:
        written, write_s = _timed(fd, buf, True, MEASURE_BYTES)
        read, read_s = _timed(fd, buf, False, written)
    except OSError as exc:    # a full disk, an I/O error: say so, never a traceback
        raise NotFound(f"--device-ceiling measure: O_DIRECT I/O in {directory} failed: {exc.strerror}; "
                       "give the rate instead, e.g. --device-ceiling 200MB/s") from None
    finally:
        os.close(fd)
        os.unlink(name, dir_fd=folder)
        os.close(folder)
        buf.close()
    return {"write": written / write_s if write_s > 0 else None, "read": read / read_s if read_s > 0 else None,
            "source": f"measured with O_DIRECT in {directory}: {written >> 20} MiB written, {read >> 20} MiB read"}
