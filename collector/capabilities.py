"""The capabilities `run` and `attach` use, so that they can run without root.

Found by running `iowitness run` and `attach` as an ordinary user holding only the listed
capabilities (tests/kernel/test_capabilities.py does it on every CI run), one taken away at a
time, on Linux 6.18:

- CAP_BPF and CAP_PERFMON are enough to record (load the programs, create the maps, attach
  the BTF tracepoints, read kernel memory in them).
- CAP_SYS_ADMIN: the kernel times BPF programs (BPF_ENABLE_STATS) only for it: without it the
  observer line says "probe time not measured" (or root turns the sysctl
  kernel.bpf_stats_enabled on for everyone).
- CAP_DAC_READ_SEARCH: tracefs is root's (mode 0700); without it io_destroy's syscall
  tracepoint is not attached, and libaio requests left in flight in a destroyed context are
  cleared at their process's exit instead.
- CAP_SYS_PTRACE: attach --pid to another user's process reads its open files and directory
  (/proc/PID/fd, cwd) only with it: files open before the attach are otherwise missed.
- CAP_SYS_RESOURCE: kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK, which libbpf
  raises only with it (or: ulimit -l unlimited, systemd LimitMEMLOCK=infinity).
"""

from __future__ import annotations

import platform
import resource
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Capability:
    name: str
    number: int
    required: bool
    without: str   # what goes missing without it


CAPABILITIES = (
    Capability("CAP_BPF", 39, True, "cannot load the probe"),
    Capability("CAP_PERFMON", 38, True, "cannot attach tracing programs"),
    Capability("CAP_SYS_ADMIN", 21, False,
               "the observer's probe time is not measured (BPF_ENABLE_STATS); or: sysctl kernel.bpf_stats_enabled=1"),
    Capability("CAP_DAC_READ_SEARCH", 2, False,
               "tracefs (root's) unreadable: io_destroy not traced, libaio requests of a destroyed context "
               "cleared at process exit"),
    Capability("CAP_SYS_PTRACE", 19, False,
               "attach --pid to another user's process misses the files it opened before the attach"),
)
MEMLOCK = Capability("CAP_SYS_RESOURCE", 24, True,
                     "this kernel (before 5.11) charges BPF maps to RLIMIT_MEMLOCK, which is too low")
MEMLOCK_KERNEL = (5, 11)
MEMLOCK_ENOUGH = 64 << 20
SYS_ADMIN = 21   # covers CAP_BPF and CAP_PERFMON as well (the kernel's bpf_capable, perfmon_capable)


def effective() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def _kernel() -> tuple[int, int]:
    try:
        major, minor = (int(x) for x in platform.release().split(".")[:2])
        return major, minor
    except ValueError:
        return (99, 0)


def _memlock_low() -> bool:
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return soft != resource.RLIM_INFINITY and soft < MEMLOCK_ENOUGH


def missing(caps: int | None = None) -> list[Capability]:
    """The capabilities this process lacks, required ones first."""
    caps = effective() if caps is None else caps
    has = lambda c: bool(caps >> c.number & 1) or (c.name in ("CAP_BPF", "CAP_PERFMON") and caps >> SYS_ADMIN & 1)
    wanted = list(CAPABILITIES)
    if _kernel() < MEMLOCK_KERNEL and _memlock_low():
        wanted.insert(2, MEMLOCK)
    return sorted((c for c in wanted if not has(c)), key=lambda c: not c.required)


def how_to_grant(names: list[str]) -> str:
    """The three ways to give a command these capabilities, in one line."""
    low = ",".join(n.lower() for n in names)
    plus = ",".join("+" + n[4:].lower() for n in names)
    python = Path(sys.executable).resolve()
    return (f"sudo setpriv --reuid=$USER --regid=$(id -g) --init-groups --inh-caps={plus} --ambient-caps={plus} "
            f"-- iowitness run ...; or systemd-run --uid=$USER -p AmbientCapabilities=\"{' '.join(names)}\" --pty "
            f"iowitness run ... (a unit: AmbientCapabilities={' '.join(names)}); or sudo setcap {low}+ep on a copy of "
            f"{python} that only iowitness runs with")
