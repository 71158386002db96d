"""IOzone: its command line, its output, the names of its tests and the window it times.

Recognised by its program, `iozone`, and by its banner. Its output is read by
iozone_claims.py (parse, without_report); its throughput mode (-t N: groups of children,
the stonewall, per-process statistics) is iozone_groups.py. Here: what a command line says
(parse_command, tests, children), IOzone's names for phases, its window (-e, -c), and which
phase each claim is about.

Example: `name_phases(table, ["iozone", "-i0", "-i1", "-s", "1m"], pid)` names the phases
write, rewrite, read, reread in time order.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict

import numpy as np
import pandas as pd

from iowitness.analysis.benchmarks import iozone_bounds, iozone_clock, iozone_groups
from iowitness.analysis.benchmarks.iozone_claims import BANNER, first_traced_test, parse, without_report  # noqa: F401 (the interface)
from iowitness.analysis.judge.claim import Claim, Match
from iowitness.analysis.read import recorded_paths

NAME = "iozone"
PROGRAM = "iozone"
SIGNATURE = re.compile(re.escape(BANNER))

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
# size options (-s, -r, -n, -g, -y, -q): "-s #k (size in Kbytes) or -s #m (size in Mbytes) or
# -s #g (size in Gbytes)", kB without a suffix (iozone(1), -s); IOzone's kB is 1024 bytes
# -Q's per-test offset/latency logs, fopen()ed by name in IOzone's working directory (iozone.c)
_LATENCY_LOG = re.compile(r"(Child_\d+_)?(wol|rwol|rol|rrol|randrol|randwol|revol|strol|frol|fwol|prol|pwol)\.dat")
SIZE_SUFFIXES = {"": 1024, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}
_FLAG_VALUES = set("JjkVrtsfFdluUSLHPibXYgnyq")  # IOzone's getopt options that take a value


# ---- the command line ----

def tests(argv: list[str]) -> list[int]:
    """The -i tests an IOzone command line selects, in the order IOzone runs them."""
    selected, extended, i = set(), False, 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-i" and i + 1 < len(argv):
            selected.add(int(argv[i + 1]))
            i += 1
        elif re.fullmatch(r"-i\d+", arg):
            selected.add(int(arg[2:]))
        elif arg == "-E":
            extended = True
        i += 1
    if not selected:
        selected = set(IOZONE_DEFAULT_TESTS)
    selected.add(0)  # every other test needs the file the write test makes
    if not extended:
        selected -= {9, 10, 11, 12}
    return sorted(selected)


def processes(argv: list[str]) -> int | None:
    """N of IOzone's throughput mode (-t N), or None for a single-process run: a short test's
    N children form a group even when they do not overlap in time."""
    for i, arg in enumerate(argv):
        if arg == "-t" and i + 1 < len(argv) and argv[i + 1].isdigit():
            return int(argv[i + 1])
        if re.fullmatch(r"-t\d+", arg):
            return int(arg[2:])
    return None


def parse_command(argv: list[str]) -> dict:
    """What an IOzone command line says about the meaning of its numbers.

    >>> parse_command(["iozone", "-e", "-t", "2", "-i0", "-s", "1m"])["fsync_in_timing"]
    True
    """
    flags: set[str] = set()
    values: dict[str, str] = {}
    files: list[str] = []
    i = 1
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg.startswith("-+") and len(arg) >= 3:
            flags.add(arg[:3])
            if arg[2] in "mph" and len(arg) == 3 and i < len(argv):  # -+m file, -+p percent, -+h host
                values[arg[:3]] = argv[i]
                i += 1
            continue
        if not arg.startswith("-") or len(arg) < 2:
            continue
        for position, letter in enumerate(arg[1:], start=2):
            if letter in _FLAG_VALUES:
                value = arg[position:] or (argv[i] if i < len(argv) else "")
                if not arg[position:]:
                    i += 1
                values[letter] = value
                if letter == "F":  # -F takes every path up to the next option
                    files = [value]
                    while i < len(argv) and not argv[i].startswith("-"):
                        files.append(argv[i])
                        i += 1
                elif letter == "f":
                    files = [value]
                break
            flags.add(letter)
    unit = "ops/s" if "O" in flags else "us/op" if "N" in flags else "kB/s"
    try:
        selected = tests(argv)
    except ValueError:  # "-i x": IOzone itself would refuse it
        selected = None
    return {
        "tests": selected,
        "unit": unit,
        "fsync_in_timing": "e" in flags,
        "close_in_timing": "c" in flags,
        "o_direct": "I" in flags,
        "o_sync": "o" in flags,
        "o_dsync": "-+D" in flags,
        "processes": int(values["t"]) if values.get("t", "").isdigit() else None,
        "threads": "T" in flags,
        "stonewall": "x" not in flags,
        "keep_files": "w" in flags,
        "per_child": "C" in flags,
        # -d: microseconds the parent waits before letting each child go (iozone(1): "delay out of barrier")
        "delay_start_us": int(values["d"]) if values.get("d", "").isdigit() else 0,
        "auto": bool(flags & {"a", "A", "z"}),
        "report": "R" in flags,
        "file_size": _size(values.get("s")),
        "record_size": _size(values.get("r")),
        "min_file_size": _size(values.get("n")),
        "max_file_size": _size(values.get("g")),
        "min_record_size": _size(values.get("y")),
        "max_record_size": _size(values.get("q")),
        "files": files,
        "workbook": values.get("b") or None,
        "latency_logs": "Q" in flags,
    }


def _size(text: str | None) -> int | None:
    """An IOzone size option in bytes: a number of kB, or with a k, m or g suffix (iozone(1), -s)."""
    match = re.fullmatch(r"(\d+)([kKmMgG]?)", text or "")
    if not match:
        return None
    return int(match.group(1)) * SIZE_SUFFIXES[match.group(2).lower()]


def add_command(claims: list[Claim], argv: list[str]) -> None:
    options = parse_command(argv)
    for claim in claims:
        claim.extra["command"] = options


def window(argv: list[str]) -> str:
    """IOzone's timed window: -e adds the fsync after the last write, -c adds the close."""
    options = parse_command(argv) if argv else {}
    if options.get("close_in_timing"):
        return "+close"
    return "+fsync" if options.get("fsync_in_timing") else "calls"


# ---- names for phases ----

def _direction_matches(expected: str, operation: str) -> bool:
    return expected == "mixed" or expected == operation


def name_units(units: pd.DataFrame, argv: list[str], first_test: str | None = None) -> list[str | None]:
    """Names for phase units (single phases or concurrent groups) in time order.

    IOzone runs its tests in number order for every (file size, record size) pair of a
    sweep, so the expected names repeat; a unit whose direction does not fit the next
    expected pass is matched to the next pass that fits. `first_test`: the test the trace's
    first unit is (a trace attached mid-run, first_traced_test), else IOzone's first.
    """
    try:
        sequence = [pass_ for t in tests(argv) for pass_ in IOZONE_TESTS[t]]
    except (ValueError, KeyError):   # "-i x", "-i 99": IOzone itself refuses them; no names then
        return [None] * len(units)
    names = []
    position = next((k for k, (name, _) in enumerate(sequence) if name == first_test), 0)
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


def own_files(argv: list[str], cwd: str | None = None):
    """IOzone's own files, output in no phase: -b's Excel workbook of the results, written after
    its last test (often on the inode its deleted test file freed, so it looked like a rewrite of
    it), and -Q's offset/latency logs in its working directory (wol.dat, rwol.dat, rol.dat,
    rrol.dat; Child_N_randrol.dat and the like in throughput mode), written during each test."""
    options = parse_command(argv)
    own = {recorded_paths.resolve(options["workbook"], cwd)} if options["workbook"] else set()
    here = recorded_paths.resolve(".", cwd) if options["latency_logs"] else None

    def is_own(path: str) -> bool:
        full = recorded_paths.resolve(path, cwd)
        return full in own or here is not None and os.path.dirname(full) == here \
            and bool(_LATENCY_LOG.fullmatch(os.path.basename(full)))

    return is_own


def name_phases(table: pd.DataFrame, argv: list[str], pid: int | None = None,
                cwd: str | None = None, first_test: str | None = None) -> pd.Series | None:
    """Each phase named after its group (a throughput-mode test's children share a name);
    `first_test`: the test the trace's first group is, when it began mid-run."""
    if not len(table):
        return None
    units = table.sort_values("data_first_ns").groupby("group", sort=False).agg(
        operation=("operation", lambda ops: ops.iloc[0] if len(set(ops)) == 1 else "mixed"))
    named = dict(zip(units.index, name_units(units, argv, first_test)))
    return table["group"].map(named)


# ---- which phases a claim is about ----

def _rows(claim: Claim, phases: pd.DataFrame) -> pd.DataFrame:
    # masks over the table's columns, one take of its rows at the end: a sweep has hundreds of
    # claims over hundreds of phases of ~70 columns
    mask = phases["benchmark_name"].astype(object).to_numpy() == claim.test
    if claim.record_size:
        # loads and stores on a mapping (-B) have no size the trace sees: their phase may hold
        # no call of the record size at all
        faults = phases["faults"].to_numpy() > 0 if "faults" in phases else False
        mask &= (phases["record_size"].to_numpy() == claim.record_size) | faults
    if claim.file_size and claim.scope == "phase":
        # in a sweep (-a) the same test and record size run on every file size: the file size
        # tells them apart. Bytes moved, else the extent reached (a random test may skip
        # records); the k-th claim is then about the k-th phase of its own file size
        for column in ("bytes", "extent"):
            if column in phases:
                sized = mask & (phases[column].to_numpy() == claim.file_size)
                if sized.any():
                    return phases[sized]
    return phases[mask]


def with_extents(phases: pd.DataFrame, trace, evidence) -> pd.DataFrame:
    """The phase table with each phase's extent: the end of the furthest byte its data calls
    reached (a single run's file size, whatever the pattern)."""
    if trace is None or not len(phases) or evidence is None:
        return phases
    reach = evidence.reach()
    return phases.assign(extent=phases["phase"].map(reach).fillna(0).astype(np.int64))


def matcher(report, claims: list[Claim], argv: list[str], trace=None):
    """Claims in order: the k-th claim on a test (and record and file size) is about the k-th
    phase so named; in throughput mode, the k-th group so named (iozone_groups.py)."""
    phases = report.phases
    if parse_command(argv).get("auto") if argv else False:
        phases = with_extents(phases, trace, report.evidence)
    groups = report.groups.set_index("group") if len(report.groups) else report.groups
    options = parse_command(argv) if argv else {}
    if options.get("files"):   # -F f1 f2: relative to IOzone's cwd, not the reader's
        options["files"] = recorded_paths.resolve_all(options["files"], recorded_paths.cwd_of(trace))
    seen: dict[tuple, int] = defaultdict(int)
    bounds = iozone_bounds.Bounds(report)
    timed = window(argv) if argv else "calls"

    def group_of(claim: Claim, seen: dict[tuple, int]):
        """A group claim's members and group row: the k-th group so named."""
        named = _rows(claim, phases)
        numbers = list(dict.fromkeys(named.sort_values("data_first_ns")["group"]))
        key = ("group", claim.test, claim.scope, claim.record_size, claim.extra.get("child"))
        k = seen[key]
        seen[key] += 1
        rows = named[named["group"] == numbers[k]] if k < len(numbers) else named.iloc[0:0]
        group = groups.loc[numbers[k]] if k < len(numbers) and numbers[k] in groups.index else None
        return rows, group

    if trace is not None and report.evidence is not None:
        # every group claim's questions of the events at once: one pass over the blocks
        ahead: dict[tuple, int] = defaultdict(int)
        report.evidence.ask([q for c in claims if c.scope in iozone_groups.SCOPES and c.extra.get("from") != "report"
                             for q in iozone_groups.questions(c, group_of(c, ahead)[0], options)])

    def find(claim: Claim) -> Match | None:
        if claim.extra.get("from") == "report":
            return None  # the -R tables repeat the main table
        if claim.scope in iozone_groups.SCOPES:
            rows, group = group_of(claim, seen)
            return iozone_groups.match(claim, rows, group, report, trace, options)
        candidates = _rows(claim, phases).sort_values("data_first_ns")
        key = (claim.test, claim.record_size, claim.file_size)
        k = seen[key]
        seen[key] += 1
        # a single run's claim says how big the file was
        rows = candidates.iloc[k:k + 1]
        if trace is not None and len(rows) == 1 and bool(rows["too_short"].any()):
            # too short to time on its own calls: bounded by the calls around it
            return Match(rows, judge=lambda window, tolerance, missing, rows=rows:
                         iozone_bounds.judge(claim, rows, bounds, window, tolerance, missing))
        # timed: the calls around it bound IOzone's clock when a wait for a CPU lies outside its calls
        return Match(rows, bytes=claim.file_size if claim.scope == "phase" else None,
                     refine=None if trace is None else lambda verdict, rows, tolerance:
                     iozone_clock.refine(verdict, rows, bounds, tolerance, timed))

    return find
