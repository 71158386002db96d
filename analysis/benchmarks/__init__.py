"""The benchmarks iowitness knows: one module each, and the registry below.

Everything about one benchmark lives in its module, and nothing about it anywhere else. Each
module in BENCHMARKS provides:

  NAME                        its name: Claim.source, report.benchmark, a --format choice
  PROGRAM                     the basename of its program (also "PROGRAM-3.33"), or None when no
                              command line can be recognised (spec.py: chosen with --spec)
  SIGNATURE                   a compiled regex every output of it matches, or None: never
                              sniffed, and not a --format choice (spec.py)
  parse(text)                 its claims, list[Claim]; raises UnparsableOutput naming what it
                              expected (spec.py: parse(text, spec)); a claim whose operation is
                              several calls says so in extra["timed"] (analysis/phasing/operations.py:
                              "calls+sync", "8 calls", "open..close"): its ops/s and latency are
                              then judged per operation
  add_command(claims, argv)   adds what its command line says to the claims, when argv runs it
  processes(argv)             how many processes run each test together, when argv says
                              (IOzone -t N); None: their overlap in time decides
  name_phases(table, argv, pid, cwd)  its name for each phase of the phase table (a list or
                              Series), or None to leave them unnamed; pid: the traced process,
                              cwd: its working directory (relative paths of its command line)
  own_files(argv, cwd)        optional: a test on paths, true for the benchmark's own files (a job
                              file, its output, its logs): their calls are in no phase
  window(argv)                the window it times ("calls", "+fsync", "+close"), or None when
                              its command line does not say (then: calls)
  matcher(report, claims, argv, trace)  a function claim -> Match (analysis/judge/claim.py): the
                              phases the claim is about, or None for a claim that repeats a
                              number judged once already

  sweep (optional, in SWEEPS)  a benchmark that sweeps file and record sizes (IOzone -a):
                              its module's cells(report, verdicts), {test: [Cell]} ({} for no
                              sweep), unit_of(verdicts), (unit, bytes per unit), and the words
                              the reports name it with: WHO, SWEEP_OPTION, LAYOUT_OPTION (iozone_sweep.py)

A module too big for one file keeps its parts beside it (iozone_claims.py, iozone_groups.py);
only the registered module is asked.

Add a benchmark: a new module here with the above, its line in BENCHMARKS, and its tests
(real output of the real tool under tests/data/claims/<name>/, with the command that made it).

Example: `claims_from(stderr_text, ["dd", "if=/dev/zero", "of=out", "bs=1M"])` gives
("dd", [Claim(test="dd write", direction="write", ...)]).
"""

from __future__ import annotations

import os

from iowitness.analysis.benchmarks import dd, fio, iozone, iozone_sweep, shell_command, spec
from iowitness.analysis.judge.claim import Claim, UnparsableOutput

# the order sniffing names them in, when an output fits two
BENCHMARKS = (iozone, fio, dd, spec)
# NAME -> the module of its sweep grid, for the benchmarks that sweep file and record sizes
SWEEPS = {iozone.NAME: iozone_sweep}


def by_name(name: str | None):
    """The module of the benchmark called `name`, or None."""
    return next((module for module in BENCHMARKS if module.NAME == name), None)


def recognise(command: list[str] | None) -> str | None:
    """The benchmark a traced command line runs, from its program's basename, or None (a shell's
    `-c` simple command is the command it runs: shell_command.py)."""
    command = shell_command.command_of(command)
    if not command:
        return None
    program = os.path.basename(command[0])
    for module in BENCHMARKS:
        known = module.PROGRAM
        if known and (program == known or program.startswith(known + "-")):
            return module.NAME
    return None


def formats() -> list[str]:
    """The benchmarks whose output can be read alone: --format's choices."""
    return [module.NAME for module in BENCHMARKS if module.SIGNATURE is not None]


def unknown() -> str:
    """What to say when no benchmark's signature is in an output."""
    return f"cannot tell which benchmark printed this; give --format {'|'.join(formats())} or a --spec"


UNKNOWN = unknown()


def sniff(text: str) -> str:
    """The benchmark whose signature the output holds; UnparsableOutput when none or two do."""
    found = [module.NAME for module in BENCHMARKS if module.SIGNATURE is not None and module.SIGNATURE.search(text)]
    if not found:
        raise UnparsableOutput(unknown())
    if len(found) > 1:
        raise UnparsableOutput(f"this output looks like both {found[0]} and {found[1]}: give --format")
    return found[0]


def claims_from(text: str, command: list[str] | None, hint: str | None = None) -> tuple[str, list[Claim]]:
    """(source, claims) for a benchmark's output; UnparsableOutput with one line when it cannot be read.

    The traced command line decides which benchmark printed it, else the output itself (its
    SIGNATURE); a hint (--format) overrides both. When the command runs that benchmark, what
    it says is added to the claims (add_command)."""
    names = formats()
    command = shell_command.command_of(command)
    if hint is not None and hint not in names:
        choices = ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]
        raise UnparsableOutput(f"unknown --format {hint!r}: give {choices}, or a --spec")
    source = hint or recognise(command) or sniff(text)
    module = by_name(source)
    claims = module.parse(text)
    if command and recognise(command) == source:
        module.add_command(claims, command)
    return source, claims



def sweep_of(report):
    """The module of a report's sweep grid (SWEEPS), or None when its benchmark sweeps nothing."""
    return SWEEPS.get(report.benchmark)
