"""GNU dd: its claim, the transfer summary it prints on standard error when it ends; its
copy's name and window.

Recognised by its program, `dd`, and by its "records out" and "copied," lines.

    32+0 records in
    32+0 records out
    2097152 bytes (2.1 MB, 2.0 MiB) copied, 0.000852835 s, 2.5 GB/s

Claim.value and unit are the rate as printed (rounded to two or three digits: a 1-byte copy
in 1.2 s prints "0.0 kB/s"); bytes_per_s is the byte count over the seconds printed, which
is what dd rounded. status=progress lines (each starts with a carriage return, whole seconds)
are counted in extra["progress_lines"], not claimed. Numbers may use a decimal comma
(LC_NUMERIC); the words must be dd's English ones (translated messages are refused).
Checked against GNU coreutils 9.1 outputs in tests/data/claims/dd/.
"""

from __future__ import annotations

import os
import re

import pandas as pd

from iowitness.analysis.judge.claim import Claim, Match, UnparsableOutput
from iowitness.units import BYTE_UNITS

NAME = "dd"
PROGRAM = "dd"
SIGNATURE = re.compile(r"^\d+\+\d+ records out\s*$(?s:.*?)^\d+ bytes? .*copied, ", re.MULTILINE)
# dd's multiples of a byte are BYTE_UNITS (dd(1)): the summary prints the size with SI
# prefixes, then with binary ones ("2.1 MB, 2.0 MiB"), and the rate with SI prefixes ("2.5 GB/s")
# sources that only produce bytes: reading them is not the I/O a dd run measures
GENERATORS = ("/dev/zero", "/dev/urandom", "/dev/random")

_NUM = r"\d+(?:[.,]\d+)?"
_SUMMARY = re.compile(
    rf"^(?P<bytes>\d+) bytes? (?:\((?P<si>{_NUM}) (?P<si_unit>\w+)(?:, (?P<iec>{_NUM}) (?P<iec_unit>\w+))?\) )?"
    rf"copied, (?P<seconds>{_NUM}(?:e[-+]\d+)?) s, (?P<rate>{_NUM}|Infinity) (?P<unit>\w+)/s\s*$")
_RECORDS = re.compile(r"^(\d+\+\d+) records (in|out)$")


def parse(text: str) -> list[Claim]:
    """One claim per final summary (a dd sent SIGUSR1 prints one each time, then one at the end)."""
    claims: list[Claim] = []
    records: dict[str, str] = {}
    progress = 0
    seen_records_out = False
    # progress lines start with a carriage return, which Python's text mode may already have
    # made a newline: a summary is final only right after "records out". A summary cut short
    # cannot match: the pattern needs everything up to the final "/s".
    for line in re.split(r"\r\n|\r|\n", text):
        m = _RECORDS.match(line)
        if m:
            records[m.group(2)] = m.group(1)
            seen_records_out |= m.group(2) == "out"
            continue
        m = _SUMMARY.match(line)
        if m and seen_records_out:
            claims.append(_claim(m, line, records, progress, len(claims)))
            records, progress, seen_records_out = {}, 0, False
        elif m:
            progress += 1
    if not claims:
        if progress:
            raise UnparsableOutput("dd output has progress lines but no final summary after 'records out': cut short?")
        raise UnparsableOutput("not GNU dd output: no 'N+M records out' line followed by "
                               "'<bytes> bytes ... copied, <seconds> s, <rate>/s' (English messages: LC_MESSAGES=C)")
    return claims


def _number(text: str) -> float:
    return float(text.replace(",", "."))


def _claim(m: re.Match, line: str, records: dict, progress: int, index: int) -> Claim:
    for unit in (m.group("si_unit"), m.group("iec_unit"), m.group("unit")):
        if unit is not None and unit not in BYTE_UNITS:
            raise UnparsableOutput(f"dd summary {line.strip()!r}: unit {unit!r} is not one dd prints")
    nbytes, seconds = int(m.group("bytes")), _number(m.group("seconds"))
    infinite = m.group("rate") == "Infinity"  # dd's clock did not move
    rate = float("inf") if infinite else _number(m.group("rate"))
    return Claim(
        source="dd", test="dd copy", value=rate, unit=f"{m.group('unit')}/s", printed=line.strip(),
        bytes_per_s=nbytes / seconds if seconds > 0 else None, index=index,
        extra={"bytes": nbytes, "seconds": seconds,
               "printed_bytes_per_s": None if infinite else rate * BYTE_UNITS[m.group("unit")],
               "records_in": records.get("in"), "records_out": records.get("out"),
               "progress_lines": progress,
               # its clock starts after its output's open and stops after it printed "records
               # in/out" (coreutils dd.c: finish_up, print_stats): the close is inside it and only
               # its own line bounds its end (judge/rate_edges.py)
               "clock_edges": {"window": "+close", "own_line": True}})


def parse_command(argv: list[str]) -> dict:
    """dd's operands that change what its number means, and the direction it measures.

    The direction is "write" when the input only generates bytes (/dev/zero, /dev/urandom) or
    is standard input and the output is a file; "read" when the output is /dev/null; None for
    a file-to-file copy, whose one rate covers both.

    >>> parse_command(["dd", "if=/dev/zero", "of=out", "bs=1M", "conv=fdatasync"])["direction"]
    'write'
    """
    operands = dict(a.split("=", 1) for a in argv[1:] if "=" in a)
    conv = operands.get("conv", "").split(",") if operands.get("conv") else []
    iflag = operands.get("iflag", "").split(",") if operands.get("iflag") else []
    oflag = operands.get("oflag", "").split(",") if operands.get("oflag") else []
    source, target = operands.get("if"), operands.get("of")
    if target == "/dev/null" and source not in GENERATORS and source is not None:
        direction = "read"
    elif target not in (None, "/dev/null") and (source is None or source in GENERATORS):
        direction = "write"
    else:
        direction = None
    return {
        "if": source, "of": target, "bs": operands.get("bs"), "count": operands.get("count"),
        "conv": conv, "iflag": iflag, "oflag": oflag, "status": operands.get("status"),
        # conv=fdatasync / fsync: "physically write output file data before finishing" (dd(1)),
        # inside the time dd reports; oflag=dsync / sync: every write waits for the device
        "sync_in_timing": bool({"fdatasync", "fsync"} & set(conv)),
        "sync_writes": bool({"dsync", "sync"} & set(oflag)),
        "o_direct": "direct" in iflag + oflag,
        "direction": direction,
        "test": {"read": "dd read", "write": "dd write"}.get(direction, "dd copy"),
        "program": os.path.basename(argv[0]) if argv else None,
    }


def add_command(claims: list[Claim], argv: list[str]) -> None:
    """The command line says which way the copy's one rate goes: its test becomes "dd write" or "dd read"."""
    options = parse_command(argv)
    for claim in claims:
        claim.extra["command"] = options
        claim.direction, claim.test = options["direction"], options["test"]


def processes(argv: list[str]) -> int | None:
    return None


def window(argv: list[str]) -> str:
    """dd stops its clock after conv=fdatasync/fsync has synced the output."""
    conv = ",".join(a.split("=", 1)[1] for a in argv[1:] if a.startswith("conv="))
    return "+fsync" if "fdatasync" in conv or "fsync" in conv else "calls"


def name_phases(phases: pd.DataFrame, argv: list[str], pid: int | None = None,
                cwd: str | None = None) -> list[str | None]:
    """"dd write" for the writes to of=, "dd read" for the reads of if=."""
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


def matcher(report, claims: list[Claim], argv: list[str], trace=None):
    """Every claim is about the copy: its biggest phase named "dd write" or "dd read"."""
    phases = report.phases

    def find(claim: Claim) -> Match:
        rows = phases[phases["benchmark_name"].astype(object).isin(["dd write", "dd read"])]
        return Match(rows.sort_values("bytes", ascending=False).iloc[:1])

    return find
