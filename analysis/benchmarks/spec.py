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

import re
import string
import tomllib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from iowitness.analysis.claims import Claim, Match, UnparsableOutput

NAME = "spec"
PROGRAM = None    # any program: chosen with --spec
SIGNATURE = None  # any output: never sniffed, not a --format choice
SPEC_VERSION = 1

# The units a spec may name: (Claim field, factor to bytes/s, ops/s, s/op or seconds).
# SI prefixes are powers of 1000 (SI Brochure, 9th edition, table 7: k = 10^3, M = 10^6,
# G = 10^9); binary prefixes powers of 1024 (IEC 80000-13: Ki = 2^10, Mi = 2^20, Gi = 2^30).
# A program that divides by 1048576 prints MiB/s, whatever its label says: docs/claims-spec.md.
UNITS = {
    "B/s": ("bytes_per_s", 1),
    "kB/s": ("bytes_per_s", 1000), "MB/s": ("bytes_per_s", 1000 ** 2), "GB/s": ("bytes_per_s", 1000 ** 3),
    "KiB/s": ("bytes_per_s", 1024), "MiB/s": ("bytes_per_s", 1024 ** 2), "GiB/s": ("bytes_per_s", 1024 ** 3),
    "ops/s": ("ops_per_s", 1),
    "us/op": ("seconds_per_op", 1e-6), "ms/op": ("seconds_per_op", 1e-3),
    "s": ("seconds", 1),  # a test's elapsed time: extra["seconds"]
}
MATCHES = ("order", "name", "operation")
DIRECTIONS = ("read", "write", "mixed")
# the access patterns analysis/phases.py gives a phase
ACCESS = ("sequential", "random", "strided", "backward", "same record", "single call")
TOP_KEYS = ("version", "benchmark", "claim")
CLAIM_KEYS = ("pattern", "test", "direction", "unit", "match", "phase", "operation", "access", "required")


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


@dataclass(frozen=True)
class Spec:
    name: str | None
    rules: tuple[Rule, ...]


def load(path: str | Path) -> Spec:
    """A checked spec from a .toml file."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise SpecError(f"cannot read spec {path}: {e.strerror}") from None
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
    if not isinstance(benchmark, dict) or not isinstance(benchmark.get("name", ""), str) or set(benchmark) - {"name"}:
        raise SpecError("spec [benchmark] takes one key, 'name', a string")
    tables = source.get("claim")
    if not isinstance(tables, list) or not tables:
        raise SpecError("spec has no [[claim]] table")
    return Spec(benchmark.get("name"), tuple(_rule(n, t) for n, t in enumerate(tables, start=1)))


def _rule(number: int, table: dict) -> Rule:
    def fail(key: str, why: str):
        raise SpecError(f"spec [[claim]] {number} '{key}': {why}")

    unknown = sorted(set(table) - set(CLAIM_KEYS))
    if unknown:
        fail(unknown[0], f"unknown key (known: {', '.join(CLAIM_KEYS)})")
    for key in CLAIM_KEYS:
        if key in table and not isinstance(table[key], bool if key == "required" else str):
            fail(key, "must be " + ("true or false" if key == "required" else "a string"))
    if "pattern" not in table:
        fail("pattern", "missing: a regular expression with a (?P<value>...) group")
    try:
        regex = re.compile(table["pattern"])
    except re.error as e:
        fail("pattern", f"not a regular expression: {e}")
    if "value" not in regex.groupindex:
        fail("pattern", "has no (?P<value>...) group for the number")
    if "test" not in table:
        fail("test", "missing: the benchmark's name for the test, or \"{group}\"")
    for key in ("test", "direction", "phase"):
        for field in _fields(table.get(key, "")):
            if field not in regex.groupindex:
                fail(key, f"uses {{{field}}} but the pattern has no (?P<{field}>...) group")
    direction = table.get("direction")
    if direction is not None and not _fields(direction) and direction not in DIRECTIONS:
        fail("direction", f"{direction!r} is not one of {', '.join(DIRECTIONS)}")
    unit = table.get("unit")
    if unit is None and "unit" not in regex.groupindex:
        fail("unit", "missing, and the pattern has no (?P<unit>...) group")
    if unit is not None and unit not in UNITS:
        fail("unit", f"{unit!r} is not one of {', '.join(UNITS)}")
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
    return Rule(number, regex, table["test"], direction, unit, match, table.get("phase", table["test"]),
                operation, table.get("access"), table.get("required", True))


def _fields(template: str) -> list[str]:
    try:
        return [field for _, field, _, _ in string.Formatter().parse(template) if field is not None]
    except ValueError:
        return ["?"]  # an unbalanced brace: reported as a group the pattern lacks


def parse(text: str, spec: Spec | str | Path) -> list[Claim]:
    """One claim per line a [[claim]] pattern matches, in order of the lines, then of the rules.

    `spec` is a loaded Spec or the path of a .toml file."""
    spec = spec if isinstance(spec, Spec) else load(spec)
    claims: list[Claim] = []
    matched: set[int] = set()
    for line in text.splitlines():
        for rule in spec.rules:
            m = rule.regex.search(line)
            if m:
                matched.add(rule.number)
                claims.append(_claim(rule, m, line, spec.name, len(claims)))
    if not claims:
        raise UnparsableOutput("output does not fit the spec: no line matches any [[claim]] pattern")
    missing = [r for r in spec.rules if r.required and r.number not in matched]
    if missing:
        raise UnparsableOutput(f"output does not fit the spec: [[claim]] {missing[0].number} "
                               f"({missing[0].test!r}) matches no line (set required = false if it may be absent)")
    return claims


def _claim(rule: Rule, m: re.Match, line: str, benchmark: str | None, index: int) -> Claim:
    groups = {k: v for k, v in m.groupdict().items() if v is not None}
    where = f"[[claim]] {rule.number} on line {line.strip()!r}"
    try:
        value = float(groups.get("value", ""))
    except ValueError:
        raise UnparsableOutput(f"{where}: value {groups.get('value')!r} is not a number") from None
    unit = groups.get("unit", rule.unit)
    if unit not in UNITS:
        raise UnparsableOutput(f"{where}: unit {unit!r} is not one of {', '.join(UNITS)}")
    direction = rule.direction.format(**groups) if rule.direction else None
    if direction is not None and direction not in DIRECTIONS:
        raise UnparsableOutput(f"{where}: direction {direction!r} is not one of {', '.join(DIRECTIONS)}")
    field, factor = UNITS[unit]
    extra = {"from": "spec", "rule": rule.number, "match": rule.match, "benchmark": benchmark,
             "groups": {k: v for k, v in groups.items() if k not in ("value", "unit")}}
    if rule.match == "name":
        extra["phase"] = rule.phase.format(**groups)
    if rule.match == "operation":
        # "pattern" as in the phase table (analysis/phases.py): the access pattern
        extra.update(operation=rule.operation, pattern=rule.access)
    fields = {}
    if field == "seconds":
        extra["seconds"] = value * factor
    else:
        fields[field] = value * factor
    return Claim(source="spec", test=rule.test.format(**groups), value=value, unit=unit, printed=line.strip(),
                 direction=direction, index=index, extra=extra, **fields)


def add_command(claims: list[Claim], argv: list[str]) -> None:
    pass  # never recognised by its command line


def processes(argv: list[str]) -> int | None:
    return None


def window(argv: list[str]) -> str | None:
    return None  # the caller's (matching.match's spec_window)


def name_phases(table: pd.DataFrame, argv: list[str], pid: int | None = None) -> None:
    return None  # a spec names no phases: its claims match by order, name or operation


def matcher(report, claims: list[Claim], argv: list[str], trace=None):
    """Each claim as its [[claim]] table's `match` says: "order", the k-th phase in time order;
    "name", the k-th phase so named; "operation", the k-th with its operation (and access)."""
    phases = report.phases
    seen: dict[tuple, int] = defaultdict(int)
    lines: dict[tuple, tuple[str, int]] = {}

    def find(claim: Claim) -> Match:
        return Match(_rows(claim, phases, seen, lines))

    return find


def _rows(claim: Claim, phases: pd.DataFrame, seen, lines) -> pd.DataFrame:
    how = claim.extra.get("match", "order")
    ordered = phases.sort_values("data_first_ns")
    if how == "name":
        phase_name = claim.extra.get("phase", claim.test)
        rows = ordered[(ordered["benchmark_name"].astype(object) == phase_name) | (ordered["name"] == phase_name)]
    elif how == "operation":
        rows = ordered[ordered["operation"] == claim.extra.get("operation", claim.direction)]
        if claim.extra.get("pattern"):
            rows = rows[rows["pattern"] == claim.extra["pattern"]]
    else:
        rows = ordered
    key = ("spec", how, claim.extra.get("phase", claim.test) if how == "name"
           else (claim.extra.get("operation", claim.direction), claim.extra.get("pattern")) if how == "operation"
           else "")
    # several numbers on one printed line (ops/s and µs/op) are about the same phase
    previous = lines.get(key)
    if previous is not None and previous[0] == claim.printed:
        k = previous[1]
    else:
        k = seen[key]
        seen[key] += 1
    lines[key] = (claim.printed, k)
    return rows.iloc[k:k + 1]
