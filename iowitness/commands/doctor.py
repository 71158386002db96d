"""Check whether this machine can trace, and say what to do when it cannot.

Loads the real probe into the kernel and removes it again, so a green doctor means `run`
and `attach` will work.

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
        finally:
            probe.close()
    except IowitnessError as exc:
        return preflight.Check("load and attach", False, str(exc))
    return preflight.Check("load and attach", True, f"attached {', '.join(programs)}")


def execute(args) -> int:
    checks = preflight.run_checks()
    if all(c.ok for c in checks if c.blocking):
        checks.append(_load_probe())
    for c in checks:
        mark = "ok  " if c.ok else ("FAIL" if c.blocking else "note")
        print(f"{mark} {c.name:16} {c.detail}")
        if not c.ok and c.fix:
            print(f"     {'':16} fix: {c.fix}")
    failed = [c for c in checks if c.blocking and not c.ok]
    print("this machine can trace" if not failed else "this machine cannot trace yet")
    return EXIT_CANNOT_TRACE if failed else 0
