"""Can this machine trace? Each check says what is wrong and what to do about it.

`require_tracing()` runs the blocking checks before any probe is loaded, so a user sees
"run as root" instead of a verifier log. `iowitness doctor` prints every check.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

from iowitness import probes
from iowitness.collector import kfeatures
from iowitness.errors import CannotTrace, IowitnessError

BTF = Path("/sys/kernel/btf/vmlinux")
TRACEFS = Path("/sys/kernel/tracing")
CAP_PERFMON, CAP_BPF, CAP_SYS_ADMIN = 38, 39, 21


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    blocking: bool = True


def _effective_caps() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def check_privileges() -> Check:
    from iowitness.collector import capabilities

    lacking = [c.name for c in capabilities.missing(_effective_caps()) if c.required]
    if not lacking:
        return Check("privileges", True, "root" if os.geteuid() == 0 else "CAP_BPF + CAP_PERFMON")
    return Check("privileges", False, f"not root and no {' or '.join(lacking)}",
                 "run iowitness as root (sudo), or grant " + " and ".join(lacking) + ": `iowitness doctor` says how")


def check_btf() -> Check:
    if BTF.exists():
        return Check("kernel BTF", True, str(BTF))
    return Check("kernel BTF", False, f"{BTF} is missing",
                 "boot a kernel built with CONFIG_DEBUG_INFO_BTF=y (most distribution kernels since 5.4 are)")


def check_arch() -> Check:
    machine = platform.machine()
    if machine == "x86_64":
        return Check("architecture", True, machine)
    return Check("architecture", False, f"{machine}: the probe knows the x86-64 syscall table only",
                 "run on an x86-64 machine")


def check_kernel() -> Check:
    """What this kernel can run, asked of the kernel itself (collector/kfeatures.py), never read
    from its version number. Needs BTF and privileges: the probes load tiny programs."""
    release = platform.release()
    if not check_privileges().ok:
        return Check("kernel features", True, f"{release}: not probed (probing loads BPF: needs the privileges)",
                     blocking=False)
    if not BTF.exists():
        return Check("kernel features", False, f"{release}: no BTF, so no feature can be probed",
                     "boot a kernel built with CONFIG_DEBUG_INFO_BTF=y")
    try:
        lacking = kfeatures.missing(kfeatures.BOTH_NEED)
    except IowitnessError as exc:
        return Check("kernel features", False, f"{release}: {exc}", blocking=False)
    if lacking:
        return Check("kernel features", False, f"{release} lacks {'; '.join(lacking)}",
                     "use Linux 5.8 or newer with BTF, or trace with strace (iowitness import)")
    return Check("kernel features", True, f"{release}: BPF ring buffers, tp_btf, bpf_probe_read_kernel")


def check_probe_path() -> Check:
    """Which object `run` will load: the fast one, or the compatible one and what it leaves out."""
    if not check_privileges().ok or not BTF.exists():
        return Check("probe path", True, "not probed (needs the privileges and BTF)", blocking=False)
    try:
        choice = kfeatures.choose()
    except IowitnessError as exc:
        return Check("probe path", False, str(exc))
    detail = choice.why
    if choice.path == "compat":
        detail += ("; libaio, io_uring and mmap page faults are then counted as not followed, "
                   "and the off-CPU state of a thread is read from the thread")
    return Check("probe path", True, detail, blocking=False)


def check_probe_object() -> Check:
    path = probes.OBJECT
    if check_privileges().ok and BTF.exists():
        try:
            path = kfeatures.choose().object
        except IowitnessError:
            pass
    if path.exists():
        return Check("probe object", True, str(path))
    return Check("probe object", False, f"{path} is missing: this iowitness was installed without its BPF probe "
                 "(no clang at install time)",
                 "install clang, llvm, libbpf-dev, bpftool and make, then install iowitness again (or make -C probes "
                 "in a checkout); without them, record with strace and `iowitness import`")


def _exists(path: Path) -> bool:
    """Path.exists, but a directory a non-root user may not enter (a mounted tracefs is 0700)
    counts as there instead of raising: it is mounted, only not for this user."""
    try:
        return path.exists()
    except OSError:
        return True


def check_tracefs() -> Check:
    # tp_btf programs attach by BTF id and never touch tracefs; it only matters for other tools
    mounted = _exists(TRACEFS / "trace_pipe") or _exists(Path("/sys/kernel/debug/tracing/trace_pipe"))
    detail = "mounted" if mounted else "not mounted (not needed: iowitness attaches by BTF, not through tracefs)"
    return Check("tracefs", True, detail, blocking=False)


CHECKS = (check_privileges, check_btf, check_arch, check_kernel, check_probe_path, check_probe_object, check_tracefs)


def run_checks() -> list[Check]:
    return [check() for check in CHECKS]


def require_tracing() -> None:
    for check in run_checks():
        if check.blocking and not check.ok:
            raise CannotTrace(f"{check.detail}; {check.fix}")
