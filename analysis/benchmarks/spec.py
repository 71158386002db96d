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

import math
import re
import string
try:
    import tomllib
except ImportError:   # Python 3.9 and 3.10: the same parser, published apart (pyproject.toml pulls it in)
    import tomli as tomllib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from iowitness.analysis.claims import Claim, Match, UnparsableOutput
from iowitness.analysis.figures import figures_of
from iowitness.analysis.verdicts import claimed

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
# which phases a claim speaks for: the one phase its match finds, that phase and every phase
# concurrent with it (its group: the threads or files of one test), every phase of the run in
# the claim's direction; "auto" takes the concurrent set when the claim's figure fits it and
# not the one phase
SCOPES = ("auto", "phase", "concurrent", "run")
# what a benchmark may mean by "MB" and "kB" ([benchmark] mb, kb): decimal, binary, or the
# 1,024,000-byte "MB" of programs that divide by 1000 * 1024
MEGABYTES = (1000 ** 2, 1024 ** 2, 1024 * 1000)
KILOBYTES = (1000, 1024)
DIRECTIONS = ("read", "write", "mixed")
# the access patterns analysis/phases.py gives a phase
ACCESS = ("sequential", "random", "strided", "backward", "same record", "single call")
TOP_KEYS = ("version", "benchmark", "claim")
CLAIM_KEYS = ("pattern", "test", "direction", "unit", "match", "phase", "operation", "access", "required",
              "scope", "key")
BENCHMARK_KEYS = ("name", "mb", "kb")


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


@dataclass(frozen=True)
class Spec:
    name: str | None
    rules: tuple[Rule, ...]
    mb: int = 1000 ** 2
    kb: int = 1000


def load(path: str | Path) -> Spec:
    """A checked spec from a .toml file."""
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
                        "MB and kB)")
    mb, kb = benchmark.get("mb", 1000 ** 2), benchmark.get("kb", 1000)
    if mb not in MEGABYTES:
        raise SpecError(f"spec [benchmark] 'mb' is {mb!r}; give one of {', '.join(map(str, MEGABYTES))}")
    if kb not in KILOBYTES:
        raise SpecError(f"spec [benchmark] 'kb' is {kb!r}; give one of {', '.join(map(str, KILOBYTES))}")
    tables = source.get("claim")
    if not isinstance(tables, list) or not tables:
        raise SpecError("spec has no [[claim]] table")
    return Spec(benchmark.get("name"), tuple(_rule(n, t) for n, t in enumerate(tables, start=1)), mb, kb)


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
        for field in _fields(table.get(key, ""), lambda why, key=key: fail(key, why)):
            if field not in regex.groupindex:
                fail(key, f"uses {{{field}}} but the pattern has no (?P<{field}>...) group")
    direction = table.get("direction")
    if direction is not None and not _fields(direction, None) and direction not in DIRECTIONS:
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
    scope = table.get("scope", "auto")
    if scope not in SCOPES:
        fail("scope", f"{scope!r} is not one of {', '.join(SCOPES)}")
    for field in _fields(table.get("key", ""), lambda why: fail("key", why)):
        if field not in regex.groupindex and field != "test":
            fail("key", f"uses {{{field}}} but the pattern has no (?P<{field}>...) group")
    return Rule(number, regex, table["test"], direction, unit, match, table.get("phase", table["test"]),
                operation, table.get("access"), table.get("required", True), scope, table.get("key"))


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
    for line in text.splitlines():
        for rule in spec.rules:
            m = rule.regex.search(line)
            if m:
                matched.add(rule.number)
                claims.append(_claim(rule, m, line, spec, len(claims)))
    if not claims:
        raise UnparsableOutput("output does not fit the spec: no line matches any [[claim]] pattern")
    missing = [r for r in spec.rules if r.required and r.number not in matched]
    if missing:
        raise UnparsableOutput(f"output does not fit the spec: [[claim]] {missing[0].number} "
                               f"({missing[0].test!r}) matches no line (set required = false if it may be absent)")
    return claims


def _claim(rule: Rule, m: re.Match, line: str, spec: Spec, index: int) -> Claim:
    groups = {k: v for k, v in m.groupdict().items() if v is not None}
    where = f"[[claim]] {rule.number} on line {line.strip()!r}"
    try:
        value = float(groups.get("value", ""))
    except ValueError:
        raise UnparsableOutput(f"{where}: value {groups.get('value')!r} is not a number") from None
    unit = groups.get("unit", rule.unit)
    if unit not in UNITS:
        raise UnparsableOutput(f"{where}: unit {unit!r} is not one of {', '.join(UNITS)}")
    direction = _fill(rule.direction, groups, where, "direction") if rule.direction else None
    if direction is not None and direction not in DIRECTIONS:
        raise UnparsableOutput(f"{where}: direction {direction!r} is not one of {', '.join(DIRECTIONS)}")
    field, factor = UNITS[unit]
    # the benchmark's own MB and kB, when its spec says what they are
    factor = {"MB/s": spec.mb, "GB/s": spec.mb * spec.kb, "kB/s": spec.kb}.get(unit, factor)
    test = _fill(rule.test, groups, where, "test")
    extra = {"from": "spec", "rule": rule.number, "match": rule.match, "benchmark": spec.name,
             "groups": {k: v for k, v in groups.items() if k not in ("value", "unit")}, "scope": rule.scope,
             "key": _fill(rule.key, {"test": test, **groups}, where, "key") if rule.key else None}
    if rule.match == "name":
        extra["phase"] = _fill(rule.phase, groups, where, "phase")
    if rule.match == "operation":
        # "pattern" as in the phase table (analysis/phases.py): the access pattern
        extra.update(operation=rule.operation, pattern=rule.access)
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


def name_phases(table: pd.DataFrame, argv: list[str], pid: int | None = None) -> None:
    return None  # a spec names no phases: its claims match by order, name or operation


def matcher(report, claims: list[Claim], argv: list[str], trace=None):
    """Each claim as its [[claim]] table's `match` says: "order", the k-th phase in time order;
    "name", the k-th phase so named; "operation", the k-th with its operation (and access).
    Then its `scope` widens that phase to the set the claim speaks for.

    Claims about the same test share their phases: those with the same `key`, else a claim
    printed on the same line as the one before it, or with the same test name and another
    unit (a test's IOPS and its MB/s on two lines)."""
    phases = report.phases
    seen: dict[tuple, int] = defaultdict(int)
    chosen: dict[tuple, Match] = {}
    current = {"key": ("claims", 0), "claim": None, "units": set(), "number": 0}

    def same_test(claim: Claim) -> tuple:
        """What makes claims about the same test: their `key`; else the line of the claim
        before, or its test name with a unit not yet given for it (one figure in two units, a
        test's rate of calls and of bytes on two lines)."""
        if claim.extra.get("key"):
            return ("key", claim.extra["key"])
        before = current["claim"]
        if before is not None and (before.printed == claim.printed
                                   or (before.test == claim.test and claim.unit not in current["units"])):
            current["units"].add(claim.unit)
        else:
            current["number"] += 1
            current["key"], current["units"] = ("claims", current["number"]), {claim.unit}
        current["claim"] = claim
        return current["key"]

    def find(claim: Claim) -> Match:
        key = same_test(claim)
        if key not in chosen:
            chosen[key] = _widen(claim, _rows(claim, phases, seen), phases)
        return chosen[key]

    return find


def _rows(claim: Claim, phases: pd.DataFrame, seen) -> pd.DataFrame:
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
    if claim.extra.get("scope") in ("auto", "concurrent") and how == "order" and len(rows):
        # in order of tests: concurrent phases of one test are one step, not several
        rows = rows.drop_duplicates("group")
    key = ("spec", how, claim.extra.get("phase", claim.test) if how == "name"
           else (claim.extra.get("operation", claim.direction), claim.extra.get("pattern")) if how == "operation"
           else "")
    k = seen[key]
    seen[key] += 1
    return rows.iloc[k:k + 1]


def _widen(claim: Claim, rows: pd.DataFrame, phases: pd.DataFrame) -> Match:
    """The phases a claim speaks for, from the one its match found (docs/claims-spec.md, scope)."""
    scope = claim.extra.get("scope", "auto")
    if scope == "run":
        wanted = phases if claim.direction is None else \
            phases[phases["operation"].isin([claim.direction, "mixed"])]
        return Match(wanted.sort_values("data_first_ns"), combine="wall")
    if scope == "phase" or len(rows) != 1:
        return Match(rows)
    concurrent = phases[phases["group"] == rows.iloc[0]["group"]].sort_values("data_first_ns")
    if len(concurrent) < 2:
        return Match(rows)
    if scope == "concurrent" or _fits_better(claim, concurrent, rows):
        return Match(concurrent, combine="wall")
    return Match(rows)


def _fits_better(claim: Claim, concurrent: pd.DataFrame, one: pd.DataFrame) -> bool:
    """The claim's figure is nearer the concurrent set's (all its bytes over its wall time)
    than the one phase's: a total over the threads or files of a test."""
    value, kind = claimed(claim)
    if value is None or value <= 0 or kind in ("latency", "elapsed"):
        return False
    together = figures_of(concurrent, claim.direction, kind, "wall").get("calls")
    alone = figures_of(one, claim.direction, kind).get("calls")
    if not together or not alone or together != together or alone != alone:
        return False
    return abs(math.log(value / together)) < abs(math.log(value / alone))
