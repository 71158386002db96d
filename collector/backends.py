"""Which backend made a trace, and what that backend cannot see: said in every report.

START's `backend` key names it. Traces written before the key existed were all recorded by
the compiled probe, so a trace without it reads as LIBBPF.
"""

from __future__ import annotations

LIBBPF = "libbpf"
STRACE = "strace"
BPFTRACE = "bpftrace"   # probes/iowitness.bt (collector/bpftrace_backend.py): a recording, with counters
DTRACE = "dtrace"       # probes/iowitness.d on illumos, FreeBSD or macOS (collector/dtrace_import.py)

# a file of an imported trace has no device number: strace names files by path only
NO_DEVICE = "none (strace import)"

# what each backend cannot see, in words every reporter prints (tables.warnings)
BLIND_SPOTS = {
    STRACE: ("imported from strace: latencies are strace's -T and include its ptrace stops (inflated, "
             "most for short calls); no device view, block I/O, off-CPU time or observer cost "
             "(strace cannot see them); file offsets rebuilt from the calls"),
    DTRACE: ("imported from DTrace (probes/iowitness.d, not yet run on a DTrace system): plain file syscalls "
             "only, files told apart by path (no device or inode), no device view, block I/O, off-CPU time or "
             "observer cost"),
    BPFTRACE: ("recorded with the bpftrace backend: plain file syscalls only (no io_uring, libaio, mmap or "
               "page-fault records), no device view, block I/O or off-CPU time, no output timeline (the "
               "benchmark's lines have no times), and no measure of the probe's own time"),
}


def backend_of(meta: dict) -> str:
    return str(meta.get("backend") or LIBBPF)


def blind_spot(meta: dict) -> str | None:
    return BLIND_SPOTS.get(backend_of(meta))
