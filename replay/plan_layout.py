"""The replay plan's layout: the code of each call it issues and its records (calls, waits,
threads), apart from replay/plan.py so that the modules plan.py uses (order, cache) read them
without importing the plan.

Example: `OP["pread64"]`, `np.zeros(n, CALL)`.
"""

from __future__ import annotations

import numpy as np

OPS = ("open", "close", "read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev",
       "preadv2", "pwritev2", "lseek", "fsync", "fdatasync", "ftruncate", "fallocate", "dup",
       "fadvise64", "readahead", "aio_read", "aio_write", "aio_fsync", "uring_read", "uring_write", "uring_fsync")
OP = {name: k for k, name in enumerate(OPS)}
READS = ("read", "pread64", "readv", "preadv", "preadv2", "aio_read", "uring_read")
WRITES = ("write", "pwrite64", "writev", "pwritev", "pwritev2", "aio_write", "uring_write")
# asynchronous requests (libaio, io_uring): submitted, then reaped at their recorded depth
ASYNC = ("aio_read", "aio_write", "aio_fsync", "uring_read", "uring_write", "uring_fsync")

CALL = np.dtype([("op", "u1"), ("file", "i4"), ("tgid", "u4"), ("fd", "i4"), ("ret", "i8"), ("flags", "u4"),
                 ("offset", "i8"), ("size", "i8"), ("gap_ns", "u8"), ("start_ns", "u8"), ("ring", "u2"),
                 ("depth", "i4")])
# the plan's own bit in an asynchronous request's flags (the trace's use bits 0-17): the original
# waited for a completion before it, so its think time ran from that completion (player.c restarts
# the think time after a reap that waited only there; elsewhere its wait overlaps the think time)
WAITED_BEFORE = 1 << 30
WAIT = np.dtype([("call", "i8"), ("thread", "u4"), ("count", "i8")])
THREAD = np.dtype([("tgid", "u4"), ("tid", "u4"), ("first", "i8"), ("count", "i8")])
