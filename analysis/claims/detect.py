"""Which benchmark printed an output, and its claims.

The traced command line decides (its program's basename: iozone, fio, dd), else the output
itself (IOzone's banner, fio's JSON "fio version" or job header, dd's "records out" and
"copied,"); a hint (--format) overrides both. When the command is known, what it says is
added to the claims: IOzone's and dd's parsed options in extra["command"], dd's direction.

Example: `source, claims = claims_from(stderr_text, ["dd", "if=/dev/zero", "of=out", "bs=1M"])`
gives ("dd", [Claim(test="dd write", direction="write", ...)]).
"""

from __future__ import annotations

import re

from iowitness.analysis.benchmarks import recognise
from iowitness.analysis.claims import Claim, UnparsableOutput, dd, fio, iozone

ADAPTERS = {"iozone": iozone.parse, "fio": fio.parse, "dd": dd.parse}

# what each benchmark's output always holds
SIGNATURES = {
    "iozone": re.compile(re.escape(iozone.BANNER)),
    "fio": re.compile(r'^\{\s*"fio version"|^\S.*: \(groupid=\d+, jobs=\d+\): err=', re.MULTILINE),
    "dd": re.compile(r"^\d+\+\d+ records out\s*$(?s:.*?)^\d+ bytes? .*copied, ", re.MULTILINE),
}
UNKNOWN = "cannot tell which benchmark printed this; give --format iozone|fio|dd or a --spec"


def claims_from(text: str, command: list[str] | None, hint: str | None = None) -> tuple[str, list[Claim]]:
    """(source, claims) for a benchmark's output; UnparsableOutput with one line when it cannot be read."""
    if hint is not None and hint not in ADAPTERS:
        raise UnparsableOutput(f"unknown --format {hint!r}: give iozone, fio or dd, or a --spec")
    source = hint or recognise(command) or _sniff(text)
    claims = ADAPTERS[source](text)
    if command and recognise(command) == source:
        _add_command(source, claims, command)
    return source, claims


def _sniff(text: str) -> str:
    found = [name for name, signature in SIGNATURES.items() if signature.search(text)]
    if not found:
        raise UnparsableOutput(UNKNOWN)
    if len(found) > 1:
        raise UnparsableOutput(f"this output looks like both {found[0]} and {found[1]}: give --format")
    return found[0]


def _add_command(source: str, claims: list[Claim], command: list[str]) -> None:
    if source == "iozone":
        options = iozone.parse_command(command)
        for claim in claims:
            claim.extra["command"] = options
    elif source == "dd":
        options = dd.parse_command(command)
        for claim in claims:
            claim.extra["command"] = options
            claim.direction, claim.test = options["direction"], options["test"]
    elif source == "fio" and "--group_reporting" in command:
        for claim in claims:
            claim.extra["group_reporting"] = True
