"""Claims of home-made benchmarks, read with a declarative TOML spec: no code to write.

    version = 1
    [benchmark]
    name = "stdio_bench"

    [[claim]]
    pattern = '^Sequential write: (?P<value>[\\d.]+) MB/s$'
    test = "sequential write"
    direction = "write"
    unit = "MB/s"

Each [[claim]] is a regular expression with a named group `value` (and optionally `unit`,
or any group the other keys use as "{name}"); every line it matches is one claim.
docs/claims-spec.md describes every key, the units and a worked example.

`load(path)` (a .toml file) or `loads(text)` checks a spec and raises SpecError naming the
key at fault; `parse(text, spec)` raises UnparsableOutput when the output does not fit it.

A registered benchmark like the others, with no program, no signature and no names of its
own: it is chosen with --spec, and its claims say which phases they are about (matcher).
"""

from __future__ import annotations

import difflib
import os
import re
import string

try:
    import tomllib
except ImportError:   # Python 3.9 and 3.10: the same parser, published apart (pyproject.toml pulls it in)
    import tomli as tomllib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from iowitness import shipped
from iowitness.analysis.benchmarks import spec_match
from iowitness.analysis.benchmarks.spec_units import UNITS, near, number, size
from iowitness.analysis.judge import latency
from iowitness.analysis.judge.claim import Claim, UnparsableOutput
from iowitness.analysis.phasing import operations

NAME = "spec"
PROGRAM = None    # any program: chosen with --spec
SIGNATURE = None  # any output: never sniffed, not a --format choice
SPEC_VERSION = 1

MATCHES = ("order", "name", "operation")
# which phases a claim speaks for: the one phase its match finds, that phase and every phase
# concurrent with it (its group: the threads or files of one test), every phase of the run in
# the claim's direction; "auto" takes the concurrent set when the claim's figure fits it and
# not the one phase; "window" every phase of the claim's window on the output timeline in its
# direction (a loop's files since the previous result line; the run's without times)
SCOPES = ("auto", "phase", "concurrent", "run", "window")
# what a benchmark may mean by "MB" and "kB" ([benchmark] mb, kb): decimal, binary, or the
# 1,024,000-byte "MB" of programs that divide by 1000 * 1024
MEGABYTES = (1000 ** 2, 1024 ** 2, 1024 * 1000)
KILOBYTES = (1000, 1024)
DIRECTIONS = ("read", "write", "mixed")
# the access patterns analysis/phasing/phases.py gives a phase
ACCESS = ("sequential", "random", "strided", "backward", "same record", "single call")
TOP_KEYS = ("version", "benchmark", "claim")
CLAIM_KEYS = ("pattern", "test", "direction", "unit", "match", "phase", "operation", "access", "required",
              "scope", "key", "statistic", "timed", "skip", "requests", "record_size", "rank", "columns",
              "timing_line", "timing_end_line", "warmup_seconds", "window", "sum_of", "count_line")
# what a column of `columns` may set for its figure: the rest is the [[claim]]'s
COLUMN_KEYS = ("test", "direction", "unit", "match", "phase", "operation", "access", "scope", "key", "statistic",
               "timed", "skip", "record_size", "rank", "timing_line", "timing_end_line", "warmup_seconds", "window",
               "sum_of")
INTEGER_KEYS = ("skip", "rank")
# what the benchmark timed, among the active figures (analysis/judge/verdict_rules.py): its calls
# from the first to the last, with the fsync or the close after them, or only the time inside
# them (each call timed from its own thread and summed: judge/return_wait.py)
WINDOWS = ("calls", "+fsync", "+close", "busy")
# what a figure over several phases adds up (sum_of): each process's own figure, its amount over
# its own first data call to its last, added up (fs_mark -t N: each child's files/sec, summed);
# without it, all the amounts over the set's wall time
SUMS = ("processes",)
BENCHMARK_KEYS = ("name", "mb", "kb", "multipliers", "clock_seconds", "output_files", "program")


class SpecError(ValueError):
    """A spec that cannot be used: the message names the key at fault."""


@dataclass(frozen=True)
class Rule:
    number: int  # 1-based, as people count [[claim]] tables
    regex: re.Pattern
    test: str
    direction: str | None
    unit: str | None
    match: str
    phase: str | None
    operation: str | None
    access: str | None
    required: bool
    scope: str
    key: str | None
    statistic: str | None = None     # a latency statistic (analysis/judge/latency.py), or a template
    timed: str = "call"              # what one operation is: analysis/phasing/operations.py (latency and ops/s)
    skip: int = 0                    # the benchmark's warm-up operations, left out of its figures
    requests: bool = False           # one line per request: judged together (latency.judge_requests)
    record_size: str | None = None   # the phase's record size (a template), to choose it by
    rank: int | None = None          # the rank-th phase (1-based, time order) that matches
    value_group: str = "value"       # the group holding the number (a column's group)
    column: str | None = None        # the column of `columns` this rule reads
    timing_line: str | None = None   # a regex: the last line before the claim matching it starts the timed period
    warmup_seconds: float | None = None  # the timed period starts this long after the phases' first data call
    timing_end_line: str | None = None  # a regex: the last line (up to the claim's own) matching it ends the period
    window: str | None = None        # what the benchmark timed (WINDOWS); None: the benchmark's default
    sum_of: str | None = None        # SUMS: a figure over several phases is its processes' own figures added up
    timed_given: bool = False        # the table says `timed` (else a summary of request lines takes theirs)
    count_line: str | None = None    # a regex with a `count` group: the last line before the claim matching it
    #                                  says how many operations the test counted, its last ones


@dataclass(frozen=True)
class Spec:
    name: str | None
    rules: tuple[Rule, ...]
    mb: int = 1000 ** 2
    kb: int = 1000
    multiplier_base: int = 1000
    clock_seconds: float | None = None   # the tick of the benchmark's clock (postmark's time(): 1 s)
    output_files: tuple[str, ...] = ()   # globs: the benchmark's own log files, output not data (judge/output_files.py)
    # the command lines whose output it reads: the program's basename, then words among its
    # arguments (["sysbench", "fileio"]); a shipped spec so marked is chosen without --spec
    program: tuple[str, ...] = ()


def load(path: str | Path) -> Spec:
    """A checked spec from a .toml file, or the spec shipped under that name (`ioping`:
    `iowitness --list-specs`) when no such file exists."""
    if not Path(path).exists() and str(path) in shipped.specs():
        path = shipped.specs()[str(path)]
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise SpecError(f"cannot read spec {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:   # TOML is UTF-8 (toml.io, "Spec")
        raise SpecError(f"spec {path} is not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}); "
                        "save it as UTF-8") from None
    return loads(text)


def loads(source: str | dict) -> Spec:
    """A checked spec from TOML text, or from a dict already read from TOML."""
    if isinstance(source, str):
        try:
            source = tomllib.loads(source)
        except tomllib.TOMLDecodeError as e:
            raise SpecError(f"spec is not valid TOML: {e}") from None
    unknown = sorted(set(source) - set(TOP_KEYS))
    if unknown:
        raise SpecError(f"spec has an unknown key '{unknown[0]}' (known: {', '.join(TOP_KEYS)})")
    version = source.get("version", SPEC_VERSION)
    if version != SPEC_VERSION:
        raise SpecError(f"spec 'version' is {version!r}; this iowitness reads version {SPEC_VERSION}")
    benchmark = source.get("benchmark", {})
    if not isinstance(benchmark, dict) or not isinstance(benchmark.get("name", ""), str) \
            or set(benchmark) - set(BENCHMARK_KEYS):
        raise SpecError("spec [benchmark] takes 'name' (a string), 'mb' and 'kb' (the bytes in the benchmark's "
                        "MB and kB), 'multipliers' (\"decimal\" or \"binary\": what k, M, G after a number mean), "
                        "'clock_seconds' (the tick of its clock), 'output_files' (globs of its own log files), "
                        "'program' (the command it reads: a program's name, or [name, words among its arguments])")
    if benchmark.get("multipliers", "decimal") not in ("decimal", "binary"):
        raise SpecError(f"spec [benchmark] 'multipliers' is {benchmark['multipliers']!r}; give \"decimal\" "
                        "(k = 1000) or \"binary\" (k = 1024)")
    mb, kb = benchmark.get("mb", 1000 ** 2), benchmark.get("kb", 1000)
    if mb not in MEGABYTES:
        raise SpecError(f"spec [benchmark] 'mb' is {mb!r}; give one of {', '.join(map(str, MEGABYTES))}")
    if kb not in KILOBYTES:
        raise SpecError(f"spec [benchmark] 'kb' is {kb!r}; give one of {', '.join(map(str, KILOBYTES))}")
    clock = benchmark.get("clock_seconds")
    if clock is not None and (isinstance(clock, bool) or not isinstance(clock, (int, float)) or not 0 < clock <= 60):
        raise SpecError(f"spec [benchmark] 'clock_seconds' is {clock!r}; give the tick of the benchmark's clock in "
                        "seconds (1 for a benchmark timing with time(), 0.001 for milliseconds)")
    output_files = benchmark.get("output_files", [])
    if not isinstance(output_files, list) or not all(isinstance(g, str) and g.strip() for g in output_files):
        raise SpecError(f"spec [benchmark] 'output_files' is {output_files!r}; give a list of globs of the "
                        "benchmark's own log files, such as [\"fs_log.txt*\"] (a name, or a path with /)")
    program = benchmark.get("program", [])
    program = [program] if isinstance(program, str) else program
    if not isinstance(program, list) or not all(isinstance(w, str) and w.strip() for w in program):
        raise SpecError(f"spec [benchmark] 'program' is {benchmark['program']!r}; give the program's name, such as "
                        "\"ioping\", or a list of it and words among its arguments, such as [\"sysbench\", \"fileio\"]")
    tables = source.get("claim")
    if not isinstance(tables, list) or not tables:
        raise SpecError("spec has no [[claim]] table")
    rules = tuple(rule for n, t in enumerate(tables, start=1) for rule in _rules(n, t))
    return Spec(benchmark.get("name"), rules, mb, kb,
                1024 if benchmark.get("multipliers") == "binary" else 1000,
                float(clock) if clock is not None else None, tuple(output_files), tuple(program))


def shipped_for(command: list[str]) -> tuple[str, Spec] | None:
    """(name, spec) of the one shipped spec whose `program` the command runs, or None (none, or
    several: then --spec chooses)."""
    if not command:
        return None
    found = []
    for name, path in shipped.specs().items():
        try:
            spec = load(path)
        except SpecError:
            continue   # a damaged install: --list-specs shows it, --spec says what is wrong
        if reads(spec, command):
            found.append((name, spec))
    return found[0] if len(found) == 1 else None


def reads(spec: Spec, command: list[str]) -> bool:
    """Whether `command` runs what the spec's `program` names (its basename, versioned as
    "name-3.3" too, and every further word among the arguments)."""
    if not spec.program or not command:
        return False
    name, *words = spec.program
    basename = os.path.basename(str(command[0]))
    return (basename == name or basename.startswith(name + "-")) and all(w in map(str, command[1:]) for w in words)


def _rules(number: int, table: dict) -> list[Rule]:
    """The rules of one [[claim]] table: itself, or one per column of its `columns`."""
    if not isinstance(table, dict):
        raise SpecError(f"spec [[claim]] {number} is not a table")
    columns = table.get("columns")
    if columns is None:
        return [_rule(number, table)]
    if not isinstance(columns, dict) or not columns:
        raise SpecError(f"spec [[claim]] {number} 'columns': must be a table of group = {{ test = ..., ... }}")
    base = {k: v for k, v in table.items() if k != "columns"}
    out = []
    for group, overrides in columns.items():
        if not isinstance(overrides, dict):
            raise SpecError(f"spec [[claim]] {number} 'columns.{group}': must be a table such as "
                            f"{{ test = \"write\", unit = \"MB/s\" }}")
        unknown = sorted(set(overrides) - set(COLUMN_KEYS))
        if unknown:
            raise SpecError(f"spec [[claim]] {number} 'columns.{group}.{unknown[0]}': unknown key "
                            f"(known: {', '.join(COLUMN_KEYS)})")
        out.append(_rule(number, {**base, **overrides}, column=group, own=tuple(overrides)))
    return out


def _rule(number: int, table: dict, column: str | None = None, own: tuple = ()) -> Rule:
    def fail(key: str, why: str):
        # a key the column set is named under it; the others are the [[claim]]'s
        raise SpecError(f"spec [[claim]] {number} '{f'columns.{column}.' if key in own else ''}{key}': {why}")

    unknown = sorted(set(table) - set(CLAIM_KEYS))
    if unknown:
        close = difflib.get_close_matches(unknown[0], CLAIM_KEYS, 1)
        fail(unknown[0], (f"unknown key; did you mean '{close[0]}'? " if close else "unknown key ")
             + f"(known: {', '.join(CLAIM_KEYS)})")
    for key in CLAIM_KEYS:
        if key == "columns" or key not in table:
            continue
        want = bool if key in ("required", "requests") else int if key in INTEGER_KEYS else \
            float if key == "warmup_seconds" else str
        fits = isinstance(table[key], (int, float) if want is float else want)
        if not fits or (want in (int, float) and isinstance(table[key], bool)):
            fail(key, "must be " + {bool: "true or false", int: "a whole number", str: "a string",
                                    float: "a number of seconds"}[want])
    if "pattern" not in table:
        fail("pattern", "missing: a regular expression with a (?P<value>...) group")
    try:
        regex = re.compile(table["pattern"])
    except re.error as e:
        fail("pattern", f"not a regular expression: {e}")
    value_group = column or "value"
    if value_group not in regex.groupindex:
        fail("pattern", f"has no (?P<{value_group}>...) group for the number"
                        + (" of this column" if column else ""))
    if "test" not in table:
        fail("test", "missing: the benchmark's name for the test, or \"{group}\"")
    for key in ("test", "direction", "phase", "statistic", "record_size"):
        for field in _fields(table.get(key, ""), lambda why, key=key: fail(key, why)):
            if field not in regex.groupindex:
                fail(key, f"uses {{{field}}} but the pattern has no (?P<{field}>...) group")
    direction = table.get("direction")
    if direction is not None and not _fields(direction, None) and direction not in DIRECTIONS:
        fail("direction", f"{direction!r} is not one of {', '.join(DIRECTIONS)}")
    unit = table.get("unit")
    if unit is None and "unit" not in regex.groupindex:
        fail("unit", "missing, and the pattern has no (?P<unit>...) group")
    unit_fields = _fields(unit, lambda why: fail("unit", why)) if unit is not None else []
    for field in unit_fields:
        # a template: each column's unit from a group of its own ("min/avg/max = 5.1 us / 1.2 ms / ...")
        if field not in regex.groupindex:
            fail("unit", f"uses {{{field}}} but the pattern has no (?P<{field}>...) group")
    if unit is not None and not unit_fields and unit not in UNITS:
        fail("unit", f"{unit!r} is not one of {', '.join(UNITS)}" + near(unit))
    match = table.get("match", "order")
    if match not in MATCHES:
        fail("match", f"{match!r} is not one of {', '.join(MATCHES)}")
    needs = {"phase": "name", "operation": "operation", "access": "operation"}
    for key, wanted in needs.items():
        if key in table and match != wanted:
            fail(key, f'goes only with match = "{wanted}"')
    operation = table.get("operation", direction)
    if match == "operation":
        if operation not in DIRECTIONS:
            fail("operation", f'match = "operation" needs the phase operation ({", ".join(DIRECTIONS)}), '
                              'here or as a fixed direction')
        if "access" in table and table["access"] not in ACCESS:
            fail("access", f"{table['access']!r} is not one of {', '.join(ACCESS)}")
    scope = table.get("scope", "auto")
    if scope not in SCOPES:
        fail("scope", f"{scope!r} is not one of {', '.join(SCOPES)}")
    for field in _fields(table.get("key", ""), lambda why: fail("key", why)):
        if field not in regex.groupindex and field != "test":
            fail("key", f"uses {{{field}}} but the pattern has no (?P<{field}>...) group")
    statistic = table.get("statistic")
    if statistic is not None and not _fields(statistic, None) and latency.statistic_name(statistic) is None:
        fail("statistic", f"{statistic!r} is not one of {', '.join(latency.STATISTICS)} (p99, p99.9, ...), avg")
    if statistic is not None and unit is not None and not unit_fields and UNITS[unit][0] != "seconds_per_op":
        fail("statistic", f"goes with a time per operation (ns/op, us/op, ms/op, s/op, ns, us, ms), not {unit!r}")
    try:
        timed = operations.canonical(table.get("timed", "call"))
    except ValueError as e:
        fail("timed", str(e))
    for key in INTEGER_KEYS:
        if key in table and table[key] < (0 if key == "skip" else 1):
            fail(key, f"must be {'0 or more' if key == 'skip' else '1 or more'}")
    if table.get("skip") and timed != "call" and unit is not None and not unit_fields \
            and UNITS[unit][0] != "seconds_per_op":
        fail("skip", f"a rate's skip leaves out single calls: with timed = {timed!r} give it on the latency "
                     "claim, or use timing_line or warmup_seconds for the rate")
    requests = table.get("requests", False)
    if requests and unit is not None and not unit_fields and UNITS[unit][0] != "seconds_per_op":
        fail("requests", f"per-request lines are latencies: give a time per operation as the unit, not {unit!r}")
    for key in ("timing_line", "timing_end_line"):
        if key in table:
            try:
                re.compile(table[key])
            except re.error as e:
                fail(key, f"not a regular expression: {e}")
    if "count_line" in table:
        try:
            groups = re.compile(table["count_line"]).groupindex
        except re.error as e:
            fail("count_line", f"not a regular expression: {e}")
        if "count" not in groups:
            fail("count_line", "has no (?P<count>...) group for the number of operations the test counted")
    if "timing_line" in table:
        if "warmup_seconds" in table:
            fail("warmup_seconds", "give either timing_line or warmup_seconds: both say where the timed period starts")
    if "warmup_seconds" in table and not 0 <= table["warmup_seconds"] < 1e6:
        fail("warmup_seconds", "must be 0 or more seconds (1.5 for a warm-up of 1.5 s)")
    if "window" in table and table["window"] not in WINDOWS:
        fail("window", f"{table['window']!r} is not one of {', '.join(WINDOWS)}")
    if "sum_of" in table and table["sum_of"] not in SUMS:
        fail("sum_of", f"{table['sum_of']!r} is not one of {', '.join(SUMS)} (each process's own figure, added up)")
    record_size = table.get("record_size")
    if record_size is not None and not _fields(record_size, None) and size(record_size) is None:
        fail("record_size", f"{record_size!r} is not a size (4096, 4k, 64KiB) nor a template such as \"{{size}}\"")
    return Rule(number, regex, table["test"], direction, unit, match, table.get("phase", table["test"]),
                operation, table.get("access"), table.get("required", True), scope, table.get("key"),
                statistic, timed, table.get("skip", 0), requests, record_size, table.get("rank"),
                value_group, column, table.get("timing_line"), table.get("warmup_seconds"),
                table.get("timing_end_line"), table.get("window"), table.get("sum_of"), "timed" in table,
                table.get("count_line"))


def _fields(template: str, fail) -> list[str]:
    """The groups a template names. Only plain {name} fields (and {{ }} for braces) are allowed:
    a conversion (!r), a format spec ({x:>99999999999}), an index or an attribute ({x.y}) would
    make str.format raise, allocate without bound, or reach into Python objects; fail(why) says
    so (with fail None, the template is known to be checked already)."""
    help_ = "write {name} for a group of the pattern, and {{ or }} for a brace"
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as e:
        fail(f"is not a template ({e}); {help_}")
    fields = []
    for _, field, spec, conversion in parts:
        if field is None:
            continue
        if not field.isidentifier() or spec or conversion:
            shown = field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            fail(f"{{{shown}}} is not a plain group name; {help_}")
        fields.append(field)
    return fields


def _fill(template: str, groups: dict, where: str, key: str) -> str:
    """A checked template (_fields) with the groups of one match; a group the line left
    unmatched (an optional one) cannot fill it."""
    try:
        return template.format_map(groups)
    except KeyError as e:
        raise UnparsableOutput(f"{where}: '{key}' uses {{{e.args[0]}}}, which this line leaves unmatched") from None


def parse(text: str, spec: Spec | str | Path) -> list[Claim]:
    """One claim per line a [[claim]] pattern matches, in order of the lines, then of the rules.

    `spec` is a loaded Spec or the path of a .toml file."""
    spec = spec if isinstance(spec, Spec) else load(spec)
    claims: list[Claim] = []
    matched: set[int] = set()
    counted: dict[str, re.Match] = {}   # count_line -> its last match so far
    for line in text.splitlines():
        for rule in spec.rules:
            if rule.count_line is not None:
                found = re.search(rule.count_line, line)
                counted[rule.count_line] = found or counted.get(rule.count_line)
            m = rule.regex.search(line)
            if m:
                matched.add(rule.number)
                if rule.column and m.group(rule.value_group) is None:
                    # an optional column the line leaves out: a figure the benchmark did not print
                    # (bonnie++'s "+++++" for a test too fast to time, its per-char tests under -f)
                    continue
                claims.append(_claim(rule, m, line, spec, len(claims)))
                if rule.count_line is not None and counted.get(rule.count_line):
                    _counted(claims[-1], counted[rule.count_line])
    if not claims and matched:
        raise UnparsableOutput(f"output gives no figure: the lines [[claim]] {min(matched)} matches leave "
                               "every column's group out (a test too fast to time, or not run)")
    if not claims:
        raise UnparsableOutput("output does not fit the spec: no line matches any [[claim]] pattern")
    missing = [r for r in spec.rules if r.required and r.number not in matched]
    if missing:
        raise UnparsableOutput(f"output does not fit the spec: [[claim]] {missing[0].number} "
                               f"({missing[0].test!r}) matches no line (set required = false if it may be absent)")
    _like_its_requests(claims, {(r.number, r.column): r for r in spec.rules})
    return claims


def _counted(claim: Claim, line: re.Match) -> None:
    """What the claim's count_line says: how many operations its test counted (its last ones),
    and, by a group named `read` or `write` that it fills, their direction (ioping -q's
    "19 requests completed in 109.8 ms, 76 KiB written": no request line says writes)."""
    claim.extra["count"] = int(line.group("count"))
    claim.extra["count_line_text"] = line.string.strip()
    for direction in ("read", "write"):
        if direction in line.re.groupindex and line.group(direction) is not None and claim.direction != direction:
            claim.direction = direction
            claim.extra["direction_from"] = "its count_line"


def _like_its_requests(claims: list[Claim], rules: dict) -> None:
    """A claim whose test has per-request lines of one direction is about those requests (one
    test, one set of phases): it takes their direction, its own being for an output without
    them (ioping -q), and their `timed` unless its table says its own (ioping's summary after
    its "<<<" read or ">>>" write request lines)."""
    lines: dict[str, list[Claim]] = {}
    for c in claims:
        if c.extra.get("requests"):
            lines.setdefault(c.test, []).append(c)
    for c in claims:
        mine = lines.get(c.test)
        if c.extra.get("requests") or not mine:
            continue
        directions = {r.direction for r in mine}
        if len(directions) != 1 or None in directions:
            continue
        if c.direction != mine[0].direction:
            c.direction = mine[0].direction
            c.extra["direction_from"] = "its test's request lines"
        if "timed" in c.extra and not rules[(c.extra["rule"], c.extra.get("column"))].timed_given:
            c.extra["timed"] = mine[0].extra.get("timed", "call")


def _claim(rule: Rule, m: re.Match, line: str, spec: Spec, index: int) -> Claim:
    groups = {k: v for k, v in m.groupdict().items() if v is not None}
    where = f"[[claim]] {rule.number}{f' column {rule.column!r}' if rule.column else ''} on line {line.strip()!r}"
    printed = groups.get(rule.value_group, "")
    value = number(printed, spec.multiplier_base)
    if value is None:
        raise UnparsableOutput(f"{where}: value {printed!r} is not a number (digits, a point, an exponent, "
                               "and one of k, K, m, M, g, G after it)") from None
    unit = groups.get("unit", rule.unit)
    if unit is not None and "{" in unit:
        unit = _fill(unit, groups, where, "unit")
    if unit not in UNITS:
        raise UnparsableOutput(f"{where}: unit {unit!r} is not one of {', '.join(UNITS)}")
    direction = _fill(rule.direction, groups, where, "direction") if rule.direction else None
    if direction is not None and direction not in DIRECTIONS:
        raise UnparsableOutput(f"{where}: direction {direction!r} is not one of {', '.join(DIRECTIONS)}")
    field, factor = UNITS[unit]
    # the benchmark's own MB and kB, when its spec says what they are
    factor = {"MB/s": spec.mb, "GB/s": spec.mb * spec.kb, "kB/s": spec.kb}.get(unit, factor)
    test = _fill(rule.test, groups, where, "test")
    columns = (rule.value_group, "unit")
    extra = {"from": "spec", "rule": rule.number, "match": rule.match, "benchmark": spec.name,
             "groups": {k: v for k, v in groups.items() if k not in columns}, "scope": rule.scope,
             "key": _fill(rule.key, {"test": test, **groups}, where, "key") if rule.key else None,
             # as printed: judged to its last digit (analysis/judge/precision.py)
             "printed_value": printed, "multiplier_base": spec.multiplier_base}
    if spec.clock_seconds is not None:
        extra["clock_s"] = spec.clock_seconds
    if spec.output_files:
        extra["output_files"] = spec.output_files
    if rule.column:
        extra["column"] = rule.column
    if rule.match == "name":
        extra["phase"] = _fill(rule.phase, groups, where, "phase")
    if rule.match == "operation":
        # "pattern" as in the phase table (analysis/phasing/phases.py): the access pattern
        extra.update(operation=rule.operation, pattern=rule.access)
    if rule.record_size is not None:
        size_text = _fill(rule.record_size, groups, where, "record_size")
        extra["record_size"] = size(size_text)
        if extra["record_size"] is None:
            raise UnparsableOutput(f"{where}: record_size {size_text!r} is not a size (4096, 4k, 64KiB)")
    if rule.rank is not None:
        extra["rank"] = rule.rank
    if rule.timing_line is not None:
        extra["timing_line"] = rule.timing_line
    if rule.timing_end_line is not None:
        extra["timing_end_line"] = rule.timing_end_line
    if rule.window is not None:
        extra["window"] = rule.window
    if rule.sum_of is not None:
        extra["sum_of"] = rule.sum_of
    if rule.warmup_seconds is not None:
        extra["warmup_seconds"] = float(rule.warmup_seconds)
    if field == "seconds_per_op":
        statistic = _fill(rule.statistic, groups, where, "statistic") if rule.statistic else "mean"
        extra["statistic"] = latency.statistic_name(statistic)
        if extra["statistic"] is None:
            raise UnparsableOutput(f"{where}: statistic {statistic!r} is not one of "
                                   f"{', '.join(latency.STATISTICS)}, avg")
        extra.update(timed=rule.timed, skip=rule.skip)
        if rule.requests:
            extra["requests"] = True
            if "request" in groups:
                extra["request"] = int(groups["request"]) if groups["request"].isdigit() else None
    elif field == "ops_per_s" and rule.timed != "call":
        extra["timed"] = rule.timed    # a rate of operations of several calls (analysis/phasing/operations.py)
    elif rule.skip:
        extra["skip"] = rule.skip      # a rate's warm-up calls: its window starts after them (judge/claim_windows.py)
    fields = {}
    if field == "seconds":
        extra["seconds"] = value * factor
    else:
        fields[field] = value * factor
    return Claim(source="spec", test=test, value=value, unit=unit, printed=line.strip(),
                 direction=direction, index=index, extra=extra, **fields)


def add_command(claims: list[Claim], argv: list[str]) -> None:
    pass  # never recognised by its command line


def processes(argv: list[str]) -> int | None:
    return None


def window(argv: list[str]) -> str | None:
    return None  # the caller's (matching.match's spec_window)


def name_phases(table: pd.DataFrame, argv: list[str], pid: int | None = None, cwd: str | None = None) -> None:
    return None  # a spec names no phases: its claims match by order, name or operation


def matcher(report, claims: list[Claim], argv: list[str], trace=None):
    """Each claim's phases as its [[claim]] table says (spec_match.py; docs/claims-spec.md)."""
    return spec_match.matcher(report, claims, argv, trace)
