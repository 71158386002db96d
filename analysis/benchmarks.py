"""Benchmark names for phases: what IOzone, fio or dd would call each one.

Recognition uses only the traced command line (argv) and the phases themselves, never
the benchmark's output (that is for claims). A benchmark that is not recognised keeps the
generic names ("sequential write", "random read", ...).
"""

from __future__ import annotations

import configparser
import os
import re

import pandas as pd

# IOzone's tests by -i number: the passes each makes, in order, with their direction.
# Measured on IOzone 3.429 (Debian iozone3) with traces: bkwd read makes two passes and
# reports one; -i 9/10 (pwrite, pread) run only with -E; pwritev/preadv (-i 11/12) are
# not built into Debian's binary and make no phases.
IOZONE_TESTS = {
    0: [("write", "write"), ("rewrite", "write")],
    1: [("read", "read"), ("reread", "read")],
    2: [("random read", "read"), ("random write", "write")],
    3: [("bkwd read", "read"), ("bkwd read (second pass, not reported)", "read")],
    4: [("record rewrite", "write")],
    5: [("stride read", "read")],
    6: [("fwrite", "write"), ("frewrite", "write")],
    7: [("fread", "read"), ("freread", "read")],
    8: [("mixed workload", "mixed")],
    9: [("pwrite", "write"), ("repwrite", "write")],
    10: [("pread", "read"), ("repread", "read")],
    11: [("pwritev", "write"), ("repwritev", "write")],
    12: [("preadv", "read"), ("repreadv", "read")],
}
IOZONE_DEFAULT_TESTS = (0, 1, 2, 3, 4, 5, 6, 7)


def recognise(command: list[str] | None) -> str | None:
    if not command:
        return None
    program = os.path.basename(command[0])
    for known in ("iozone", "fio", "dd"):
        if program == known or program.startswith(known + "-"):
            return known
    return None


def iozone_tests(argv: list[str]) -> list[int]:
    """The -i tests an IOzone command line selects, in the order IOzone runs them."""
    tests, extended, i = set(), False, 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-i" and i + 1 < len(argv):
            tests.add(int(argv[i + 1]))
            i += 1
        elif re.fullmatch(r"-i\d+", arg):
            tests.add(int(arg[2:]))
        elif arg == "-E":
            extended = True
        i += 1
    if not tests:
        tests = set(IOZONE_DEFAULT_TESTS)
    tests.add(0)  # every other test needs the file the write test makes
    if not extended:
        tests -= {9, 10, 11, 12}
    return sorted(tests)


def iozone_children(argv: list[str]) -> int | None:
    """N of IOzone's throughput mode (-t N), or None for a single-process run."""
    for i, arg in enumerate(argv):
        if arg == "-t" and i + 1 < len(argv) and argv[i + 1].isdigit():
            return int(argv[i + 1])
        if re.fullmatch(r"-t\d+", arg):
            return int(arg[2:])
    return None


def _direction_matches(expected: str, operation: str) -> bool:
    return expected == "mixed" or expected == operation


def name_iozone(units: pd.DataFrame, argv: list[str]) -> list[str | None]:
    """Names for phase units (single phases or concurrent groups) in time order.

    IOzone runs its tests in number order for every (file size, record size) pair of a
    sweep, so the expected names repeat; a unit whose direction does not fit the next
    expected pass is matched to the next pass that fits.
    """
    sequence = [pass_ for t in iozone_tests(argv) for pass_ in IOZONE_TESTS[t]]
    names, position = [], 0
    for operation in units["operation"]:
        for attempt in range(len(sequence)):
            name, direction = sequence[(position + attempt) % len(sequence)]
            if _direction_matches(direction, operation):
                names.append(name)
                position = (position + attempt + 1) % len(sequence)
                break
        else:
            names.append(None)
    return names


def fio_jobs(argv: list[str], cwd: str | None = None) -> dict[str, dict]:
    """fio job names with their filename/directory, from --name options or job files."""
    jobs, current, shared = {}, None, {}
    for arg in argv[1:]:
        if arg.startswith("--name="):
            current = arg.split("=", 1)[1]
            jobs[current] = dict(shared)
        elif arg.startswith("--") and "=" in arg:
            key, value = arg[2:].split("=", 1)
            (jobs[current] if current else shared)[key] = value
        elif not arg.startswith("-") and os.path.isfile(os.path.join(cwd or "", arg)):
            parser = configparser.ConfigParser(allow_no_value=True, strict=False)
            try:
                parser.read(os.path.join(cwd or "", arg))
            except configparser.Error:
                continue
            for section in parser.sections():
                if section != "global":
                    jobs[section] = {**(dict(parser["global"]) if parser.has_section("global") else {}),
                                     **dict(parser[section])}
    return jobs


def name_fio(phases: pd.DataFrame, argv: list[str], root_pid: int | None = None) -> list[str | None]:
    """'job direction' per phase. fio's own process lays out missing files before the jobs
    start: those phases are 'fio layout', not the job (fio counts them nowhere)."""
    jobs = fio_jobs(argv)
    names = []
    # the main thread of fio's first process (jobs run as other processes, or with --thread as other threads)
    for path, operation, tid in zip(phases["path"], phases["operation"], phases["tid"]):
        if root_pid is not None and int(tid) == int(root_pid):
            names.append("fio layout")
            continue
        base = os.path.basename(str(path))
        job = None
        match = re.fullmatch(r"(.+)\.(\d+)\.(\d+)", base)
        if match and match.group(1) in jobs:
            job = match.group(1)
        else:
            for name, options in jobs.items():
                files = options.get("filename", "").split(":")
                if str(path) in files or base in files:
                    job = name
        if job is None and len(jobs) == 1:
            job = next(iter(jobs))
        names.append(f"{job} {operation}" if job else None)
    return names


def name_dd(phases: pd.DataFrame, argv: list[str]) -> list[str | None]:
    operands = dict(a.split("=", 1) for a in argv[1:] if "=" in a)
    names = []
    for path, operation in zip(phases["path"], phases["operation"]):
        if "of" in operands and os.path.basename(str(path)) == os.path.basename(operands["of"]) \
                and operation == "write":
            names.append("dd write")
        elif "if" in operands and os.path.basename(str(path)) == os.path.basename(operands["if"]) \
                and operation == "read":
            names.append("dd read")
        else:
            names.append(None)
    return names
