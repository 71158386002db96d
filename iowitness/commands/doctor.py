"""Check whether this machine can trace, and say what to do when it cannot.

Loads the real probe into the kernel and removes it again, so a green doctor means `run`
and `attach` will work. Without root, it names each capability this process lacks (CAP_BPF
and CAP_PERFMON are required; CAP_SYS_ADMIN, CAP_DAC_READ_SEARCH and CAP_SYS_PTRACE each add
something), one line each, with the ways to grant it; and says whether strace is there for
`iowitness import`, where no probe can load. Where the compiled probe cannot load, it tries
the bpftrace backend the same way (bpftrace started on the shipped script, then stopped) and
says whether `--backend bpftrace` will work instead, or why not.

Example:
  sudo iowitness doctor
"""

from __future__ import annotations

from iowitness.collector import preflight
from iowitness.errors import EXIT_CANNOT_TRACE, IowitnessError


def add_arguments(parser) -> None:
    pass


def _load_probe() -> preflight.Check:
    from iowitness.collector.probe import Probe, ProbeConfig
    from iowitness.collector.targets import FileSet

    try:
        probe = Probe(ProbeConfig(file_set=FileSet(), ring_bytes=1 << 20))
        try:
            programs = probe.attach()
            verified = probe.verified_instructions()
        finally:
            probe.close()
    except IowitnessError as exc:
        return preflight.Check("load and attach", False, str(exc))
    return preflight.Check("load and attach", True, f"attached {', '.join(programs)}{_verifier_margin(verified)}")


def _verifier_margin(verified: dict[str, int]) -> str:
    """The program the kernel's verifier worked hardest on, against its limit: a kernel whose
    verifier prunes less can refuse a program that another kernel loads."""
    from iowitness.collector.libbpf import VERIFIER_LIMIT

    if not verified or not max(verified.values()):
        return ""
    name = max(verified, key=lambda n: verified[n])
    return f"; the verifier's most work: {name}, {verified[name]:,} of its {VERIFIER_LIMIT:,} instructions"


def bpftrace_line(compiled_loads: bool) -> str:
    """The bpftrace backend: recommended only where the compiled probe cannot load."""
    if compiled_loads:
        return "ok   bpftrace backend not needed: the compiled probe loads (it records more, at less cost per call)"
    from iowitness.collector import bpftrace_backend
    from iowitness.collector.probe import ProbeConfig
    from iowitness.collector.targets import FileSet

    missing = [c for c in bpftrace_backend.checks() if not c.ok]
    if missing:
        return (f"note bpftrace backend cannot be used either: {missing[0].detail}"
                + (f"; fix: {missing[0].fix}" if missing[0].fix else ""))
    try:
        probe = bpftrace_backend.BpftraceProbe(ProbeConfig(file_set=FileSet(), ring_bytes=1 << 20))
        try:
            probe.attach()
        finally:
            probe.close()
    except IowitnessError as exc:
        return f"note bpftrace backend cannot be used either: {exc}"
    return ("ok   bpftrace backend works here: record with iowitness run --backend bpftrace -- COMMAND "
            "(plain file syscalls only: no io_uring, libaio, mmap or device view)")


def capability_lines() -> list[str]:
    """One line per capability this process lacks: what is lost, and how to grant it."""
    from iowitness.collector import capabilities

    lines = []
    for cap in capabilities.missing():
        mark = "FAIL" if cap.required else "note"
        lines.append(f"{mark} {cap.name:19} missing: {cap.without}; grant it: {capabilities.how_to_grant([cap.name])}")
    return lines


def strace_line() -> str:
    import shutil

    if shutil.which("strace"):
        return "ok   strace import    strace -f -ttt -T -y -o run.strace -- CMD, then iowitness import run.strace -o run.iwt"
    return "note strace import    strace is not installed (apt install strace): the way in where no probe can load"


def execute(args) -> int:
    # an install without its probe (no toolchain when pip built it) is said first: pip shows a
    # build's messages only with -v, so this is where a user learns why run will not start
    probe_object = preflight.check_probe_object()
    if not probe_object.ok:
        print(f"FAIL {probe_object.name:16} {probe_object.detail}\n     {'':16} fix: {probe_object.fix}")
    for line in capability_lines():
        print(line)
    checks = preflight.run_checks()
    if all(c.ok for c in checks if c.blocking):
        checks.append(_load_probe())
    for c in checks:
        if c.name == probe_object.name and not probe_object.ok:
            continue   # said first
        mark = "ok  " if c.ok else ("FAIL" if c.blocking else "note")
        print(f"{mark} {c.name:16} {c.detail}")
        if not c.ok and c.fix:
            print(f"     {'':16} fix: {c.fix}")
    failed = [c for c in checks if c.blocking and not c.ok]
    print(strace_line())
    fallback = bpftrace_line(compiled_loads=not failed)
    print(fallback)
    if failed and fallback.startswith("ok"):
        print("this machine cannot load the compiled probe; it can trace with --backend bpftrace")
    else:
        print("this machine can trace" if not failed else "this machine cannot trace yet")
    return EXIT_CANNOT_TRACE if failed else 0
