"""IOzone's claims: the rates IOzone 3.x prints on its standard output (iozone.py's `parse`).

Read (all checked against real IOzone 3.489 outputs in tests/data/claims/iozone/):

- the main table: one row per (file size, record size), one fixed-width column per test.
  A test that did not run leaves its column blank, so values are placed by the column they
  sit under (right edges: IOzone right-aligns both headers and numbers), never by order;
- throughput mode (-t N): "Children see throughput for  2 initial writers = ..." and the
  lines under it (parent, min/max/avg per process, min xfer, per-child lines with -C);
- the -R report ("Writer report" ...: the same numbers again, as file size × record size
  tables; and "Throughput report" in throughput mode). Its claims repeat the table's and
  carry extra["from"] == "report": use without_report() to count each number once.

Example: for `iozone -i0 -i1 -i2 -s 1m -r 4k` (tests/data/claims/iozone/single.txt),
`parse(text)[0]` is Claim(test="write", value=1286378, unit="kB/s", bytes_per_s=1286378 * 1024,
file_size=1048576, record_size=4096, direction="write", ...), then rewrite, read, reread,
random read and random write.
"""

from __future__ import annotations

import re

from iowitness.analysis.judge.claim import Claim, UnparsableOutput

BANNER = "Iozone: Performance Test of File I/O"

# IOzone's rates. Its "kB" is 1024 bytes: iozone(1) gives every size "in Kbytes" and a run
# with "-s 1m" prints "File size set to 1024 kB"; iozone.c turns bytes per second into its
# unit with `writerate[j] >>= 10` (and `written_so_far += reclen/1024` in throughput mode).
# -O: "OPS Mode. Output is in operations per second."; -N: "Microseconds/op Mode. Output is
# in microseconds per operation." (iozone(1), options -O and -N; the lines IOzone prints).
RATES = {  # unit -> (Claim field, factor to bytes/s, ops/s or s/op)
    "kB/s": ("bytes_per_s", 1024),
    "ops/s": ("ops_per_s", 1),
    "us/op": ("seconds_per_op", 1e-6),
}
# IOzone's amounts ("Min xfer", a child's "xfer count"): kB of 1024 bytes as above, or operations with -O
AMOUNTS = {"kB": ("bytes", 1024), "ops": ("ops", 1)}

MODES = {  # the line that says which unit the run reports in
    "Output is in kBytes/sec": "kB/s",
    "Output is in Kbytes/sec": "kB/s",  # IOzone before 3.4xx
    "OPS Mode. Output is in operations per second.": "ops/s",
    "Microseconds/op Mode. Output is in microseconds per operation.": "us/op",
}

# the main table's columns (the two header lines joined) and each test's direction
DIRECTIONS = {
    "write": "write", "rewrite": "write", "read": "read", "reread": "read",
    "random read": "read", "random write": "write", "bkwd read": "read", "record rewrite": "write",
    "stride read": "read", "fwrite": "write", "frewrite": "write", "fread": "read", "freread": "read",
    "pwrite": "write", "repwrite": "write", "pread": "read", "repread": "read",
    "pwritev": "write", "repwritev": "write", "preadv": "read", "repreadv": "read",
    "mixed workload": "mixed",
}
# "Children see throughput for N <these>" (iozone.c's throughput tests; -i4 has none)
THROUGHPUT_TESTS = {
    "initial writers": "write", "rewriters": "rewrite", "readers": "read", "re-readers": "reread",
    "reverse readers": "bkwd read", "stride readers": "stride read", "random readers": "random read",
    "mixed workload": "mixed workload", "random writers": "random write", "pwrite writers": "pwrite",
    "pread readers": "pread", "fwriters": "fwrite", "freaders": "fread",
}
REPORTS = {  # -R section titles
    "Writer report": "write", "Re-writer report": "rewrite", "Reader report": "read",
    "Re-Reader report": "reread", "Random read report": "random read", "Random write report": "random write",
    "Backward read report": "bkwd read", "Record rewrite report": "record rewrite",
    "Stride read report": "stride read", "Fwrite report": "fwrite", "Re-Fwrite report": "frewrite",
    "Fread report": "fread", "Re-Fread report": "freread", "Pwrite report": "pwrite",
    "Re-Pwrite report": "repwrite", "Pread report": "pread", "Re-Pread report": "repread",
    "Pwritev report": "pwritev", "Re-Pwritev report": "repwritev", "Preadv report": "preadv",
    "Re-Preadv report": "repreadv",
}
THROUGHPUT_REPORT = {  # -R rows in throughput mode (iozone.c throughput_tests[])
    "Initial write": "write", "Rewrite": "rewrite", "Read": "read", "Re-read": "reread",
    "Reverse Read": "bkwd read", "Stride read": "stride read", "Random read": "random read",
    "Mixed workload": "mixed workload", "Random write": "random write", "Pwrite": "pwrite",
    "Pread": "pread", "Fwrite": "fwrite", "Fread": "fread",
}
REPORT_UNITS = {"kBytes/sec": "kB/s", "ops/sec": "ops/s", "microseconds/op": "us/op"}

SETTINGS = {  # lines IOzone prints for the options that change what a number means
    "Include fsync in write timing": "fsync_in_timing",  # -e
    "Include close in write timing": "close_in_timing",  # -c
    "O_DIRECT feature enabled": "o_direct",  # -I
    "SYNC Mode.": "o_sync",  # -o
    ">>> O_DSYNC mode enabled. <<<": "o_dsync",  # -+D
    "Stonewall disabled": "no_stonewall",  # -x
    "Setting no_unlink": "keep_files",  # -w
    "Purge Mode On": "purge",  # -p
    "Using mmap files": "mmap",  # -B
    "No retest option selected": "no_retest",  # -+n
}

# the second pass of a test, which -+n ("No retest option selected") skips: IOzone still prints
# its column (and -R section), with 0 in it, a test that never ran, not a rate of zero
RETESTS = {"rewrite", "reread", "frewrite", "freread", "repwrite", "repread", "repwritev", "repreadv"}

# printed after "iozone test complete." when some test was too short for IOzone's clock
TIMER_WARNING = "Timer resolution is poor. Some small transfers may have"

# a value may end up to this many characters right or left of its header's right edge:
# IOzone 3.489 prints "read" and "random read" one place right of their headers ("%8s" over
# "%9ld"), "repread" one place left, and the optional pwritev columns two
ALIGNMENT_SLACK = 2

_VERSION = re.compile(r"Version \$Revision: (\d+)\.(\d+) \$")
_HEADER = re.compile(r"^\s+[kK]B\s+reclen\s")
_ROW = re.compile(r"^[ \d]*\d[ \d]*$")
_NUMBER = r"(?P<value>\d+(?:\.\d+)?)"
_CHILDREN = re.compile(r"^\s*(?P<who>Children see|Parent sees) throughput for\s+(?P<n>\d+)\s+(?P<name>.+?)\s*= *"
                       + _NUMBER + r" (?P<unit>[kK]B|ops)/sec\s*$")
_PER = re.compile(r"^\s*(?P<which>Min|Max|Avg) throughput per (?P<per>process|thread)\s*= *" + _NUMBER
                  + r" (?P<unit>[kK]B|ops)/sec\s*$")
_XFER = re.compile(r"^\s*Min xfer\s*= *" + _NUMBER + r" (?P<unit>[kK]B|ops)\s*$")
_CHILD = re.compile(r"^\s*Child\[(?P<child>\d+)\] xfer count = *(?P<xfer>\d+(?:\.\d+)?) (?P<xunit>[kK]B|ops), "
                    r"Throughput = *" + _NUMBER + r" (?P<unit>[kK]B|ops)/sec")
_EACH = re.compile(r"Each (?:process|thread) writes a (\d+) [kK]Byte file in (\d+) [kK]Byte records")


def parse(text: str) -> list[Claim]:
    """Every number IOzone printed as a result, in order of appearance (Claim.index)."""
    if BANNER not in text:
        raise UnparsableOutput(f"not IOzone output: no '{BANNER}' banner")
    version = _VERSION.search(text)
    if not version:
        raise UnparsableOutput("IOzone output without its 'Version $Revision: 3.NNN $' line")
    if version.group(1) != "3":
        raise UnparsableOutput(f"IOzone {version.group(1)}.{version.group(2)} is not a version this parser reads "
                               "(IOzone 3.x, checked against 3.489)")
    lines = _complete_lines(text)
    mode = next((unit for line in lines for marker, unit in MODES.items() if marker in line), None)
    if mode is None:
        raise UnparsableOutput("IOzone output ends before its 'Output is in ...' line")
    common = {"version": f"{version.group(1)}.{version.group(2)}",
              "settings": sorted({name for line in lines for marker, name in SETTINGS.items()
                                  if line.strip() == marker})}
    if any(line.startswith(TIMER_WARNING) for line in lines):
        common["timer_warning"] = True

    found: list[tuple[tuple[int, int], Claim]] = []
    rows = _table(lines, mode, found)
    _throughput(lines, mode, found)
    _reports(lines, mode, rows, found)
    if not found:
        # IOzone refuses some runs after its banner ("Microsecond mode not supported in
        # throughput mode."): its last words say why
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
        raise UnparsableOutput("IOzone output ends before any result: no table row, no 'Children see throughput' line"
                               + (f"; its last line: {last[:120]!r}" if last else ""))
    claims = [claim for _, claim in sorted(found, key=lambda item: item[0])]
    if "no_retest" in common["settings"]:
        claims = [claim for claim in claims if claim.test not in RETESTS]
    for index, claim in enumerate(claims):
        claim.index = index
        claim.extra = {**common, **claim.extra}
    return claims


def first_traced_test(lines: list[str]) -> str | None:
    """The test whose throughput lines come first in the output a trace attached mid-run
    recorded ("Children see throughput for  2 rewriters"): IOzone prints a test's lines as it
    ends, so the tests before it ended before the attach, and the trace's first group of
    phases is this one's (under way at the attach, or begun after it). None: no such line."""
    for line in lines:
        m = _CHILDREN.match(line.expandtabs(8))
        if m and m.group("name") in THROUGHPUT_TESTS:
            return THROUGHPUT_TESTS[m.group("name")]
    return None


def without_report(claims: list[Claim]) -> list[Claim]:
    """The claims once each: drops the -R report's copies of the table's numbers."""
    return [c for c in claims if c.extra.get("from") != "report"]


def _complete_lines(text: str) -> list[str]:
    # a last line without its newline may have been cut in the middle of a number
    lines = text.replace("\r\n", "\n").split("\n")
    return [line.expandtabs(8) for line in lines[:-1]]


def _fields(unit: str, value: float) -> dict:
    field, factor = RATES[unit]
    return {field: value * factor}


def _claim(test: str, value: float, unit: str, printed: str, **more) -> Claim:
    return Claim(source="iozone", test=test, value=value, unit=unit, printed=printed.strip(),
                 direction=DIRECTIONS[test], **_fields(unit, value), **more)


def _columns(top: str, header: str) -> list[tuple[str, int]]:
    """(name, right edge) of each column: "random" over "read" is "random read"."""
    above = {m.end(): m.group() for m in re.finditer(r"\S+", top)}
    columns = []
    for m in re.finditer(r"\S+", header):
        name = f"{above.pop(m.end())} {m.group()}" if m.end() in above else m.group()
        if name not in ("kB", "KB", "reclen") and name not in DIRECTIONS:
            raise UnparsableOutput(f"IOzone table has a column '{name}' this parser does not know")
        columns.append(("kB" if name == "KB" else name, m.end()))
    if above:
        raise UnparsableOutput(f"IOzone table header word '{next(iter(above.values()))}' stands over no column")
    return columns


def _place(line: str, columns: list[tuple[str, int]]) -> dict[str, int]:
    """Each number of a table row under the column whose right edge it shares."""
    placed: dict[str, int] = {}
    for m in re.finditer(r"\d+", line):
        i = min(range(len(columns)), key=lambda k: abs(columns[k][1] - m.end()))
        name, edge = columns[i]
        left_neighbour_end = columns[i - 1][1] if i else 0
        # two numbers run together (a value wider than its field) start inside the left column
        if abs(edge - m.end()) > ALIGNMENT_SLACK or name in placed or m.start() < left_neighbour_end - 1:
            raise UnparsableOutput(f"IOzone table row {line.strip()!r}: {m.group()} does not line up with a column")
        placed[name] = int(m.group())
    if "kB" not in placed or "reclen" not in placed:
        raise UnparsableOutput(f"IOzone table row {line.strip()!r} has no file size or record size")
    return placed


def _table(lines: list[str], unit: str, found: list) -> list[dict[str, int]]:
    rows: list[dict[str, int]] = []
    for h, header in enumerate(lines):
        if not _HEADER.match(header) or h == 0:
            continue
        columns = _columns(lines[h - 1], header)
        for n in range(h + 1, len(lines)):
            line = lines[n]
            if not line.strip() or not _ROW.match(line):
                break
            placed = _place(line, columns)
            rows.append(placed)
            for position, (name, _) in enumerate(columns[2:], start=2):
                if name in placed:
                    # with -N the table holds whole microseconds, cut down: "1" is 1 to 2 µs/op
                    # (judge/precision.py); its kB/s and ops/s are whole numbers of units too small to matter
                    extra = {"from": "table", **({"printed_value": str(placed[name]), "printed_truncated": True}
                                                 if unit == "us/op" else {})}
                    found.append(((n, position), _claim(
                        name, float(placed[name]), unit, line, file_size=placed["kB"] * 1024,
                        record_size=placed["reclen"] * 1024, extra=extra)))
    return rows


def _throughput(lines: list[str], unit: str, found: list) -> None:
    file_size = record_size = None
    current = None  # (test, processes) of the last "Children see" line
    for n, line in enumerate(lines):
        each = _EACH.search(line)
        if each:
            file_size, record_size = int(each.group(1)) * 1024, int(each.group(2)) * 1024
        m = _CHILDREN.match(line)
        if m:
            name = m.group("name")
            if name not in THROUGHPUT_TESTS:
                raise UnparsableOutput(f"IOzone throughput line for a test this parser does not know: {name!r}")
            current = (THROUGHPUT_TESTS[name], int(m.group("n")))
            scope = "children" if m.group("who") == "Children see" else "parent"
            found.append(((n, 0), _rate_claim(current, scope, m, line, file_size, record_size)))
            continue
        for pattern in (_PER, _XFER, _CHILD):
            m = pattern.match(line)
            if not m:
                continue
            if current is None:
                raise UnparsableOutput(f"IOzone line {line.strip()!r} comes before any 'Children see throughput' line")
            if pattern is _PER:
                claim = _rate_claim(current, f"{m.group('which').lower()} process", m, line, file_size, record_size)
                claim.extra["per"] = m.group("per")
            elif pattern is _XFER:
                amount, factor = AMOUNTS[_unit(m.group("unit"))]
                claim = Claim(source="iozone", test=current[0], value=float(m.group("value")),
                              unit=_unit(m.group("unit")), printed=line.strip(), scope="min xfer",
                              direction=DIRECTIONS[current[0]], processes=current[1], file_size=file_size,
                              record_size=record_size,
                              extra={"from": "throughput", amount: float(m.group("value")) * factor})
            else:
                claim = _rate_claim(current, "child", m, line, file_size, record_size)
                amount, factor = AMOUNTS[_unit(m.group("xunit"))]
                claim.extra.update(child=int(m.group("child")), xfer=float(m.group("xfer")),
                                   **{f"xfer_{amount}": float(m.group("xfer")) * factor})
            found.append(((n, 0), claim))


def _unit(printed: str) -> str:
    return "kB" if printed in ("kB", "KB") else "ops"


def _rate_claim(current, scope, m, line, file_size, record_size) -> Claim:
    unit = _unit(m.group("unit")) + "/s"
    return Claim(source="iozone", test=current[0], value=float(m.group("value")), unit=unit,
                 printed=line.strip(), scope=scope, direction=DIRECTIONS[current[0]], processes=current[1],
                 file_size=file_size, record_size=record_size, extra={"from": "throughput"},
                 **_fields(unit, float(m.group("value"))))


def _reports(lines: list[str], unit: str, rows: list[dict[str, int]], found: list) -> None:
    n = 0
    while n < len(lines):
        title = re.fullmatch(r'"\s*(.+?)\s*"\s*', lines[n])
        if title and title.group(1) in REPORTS:
            n = _report(lines, n + 1, REPORTS[title.group(1)], title.group(1), unit, rows, found)
            continue
        if title and title.group(1).startswith("Throughput report"):
            n = _throughput_report(lines, n + 1, found)
            continue
        n += 1  # sections this parser does not read (CPU utilisation with -+u)


def _report(lines, n, test, title, unit, rows, found) -> int:
    """One -R section: the first line lists record sizes, then one line per file size."""
    header = lines[n] if n < len(lines) else ""
    record_sizes = [int(v) for v in re.findall(r'"(\d+)"', header)]
    cells = []  # (line number, line, file size kB, position in line, value)
    n += 1
    while n < len(lines) and lines[n].strip():
        m = re.fullmatch(r'"(\d+)"((?:\s+\d+)*)\s*', lines[n])
        if not m:
            raise UnparsableOutput(f"IOzone -R {title!r} line {lines[n].strip()!r} is not a file size and its values")
        for position, value in enumerate(m.group(2).split()):
            cells.append((n, lines[n], int(m.group(1)), position, int(value)))
        n += 1
    ran = [row for row in rows if test in row][:len(cells)]
    if rows and len(ran) == len(cells):
        # IOzone keeps the report in the table's row order (a cut report is a prefix of it):
        # the table says which record size each value is for
        places = [(row["kB"], row["reclen"]) for row in ran]
        if any(cell[2] != kb or cell[4] != row[test] for cell, (kb, _), row in zip(cells, places, ran)):
            raise UnparsableOutput(f"IOzone -R {title!r} does not repeat the table above it")
    elif not rows and all(sum(1 for c in cells if c[0] == line_no) == len(record_sizes) for line_no, *_ in cells):
        places = [(cell[2], record_sizes[cell[3]]) for cell in cells]
    else:
        raise UnparsableOutput(f"IOzone -R {title!r}: cannot tell which record size each value is for")
    for (line_no, line, _, position, value), (kb, reclen) in zip(cells, places):
        found.append(((line_no, position), _claim(test, float(value), unit, line, file_size=kb * 1024,
                                                  record_size=reclen * 1024, extra={"from": "report"})))
    return n


def _throughput_report(lines, n, found) -> int:
    """-R in throughput mode: one line per test, one value per process count of the run."""
    unit = record_size = None
    children = [c for _, c in found if c.scope == "children"]
    while n < len(lines):
        line = lines[n].strip()
        m = re.fullmatch(r'"Record size = (\d+) kBytes\s*"', line)
        if m:
            record_size = int(m.group(1)) * 1024
        m = re.fullmatch(r'"Output is in (.+)"', line)
        if m:
            if m.group(1) not in REPORT_UNITS:
                raise UnparsableOutput(f"IOzone throughput report in a unit this parser does not know: {m.group(1)!r}")
            unit = REPORT_UNITS[m.group(1)]
        m = re.fullmatch(r'"\s*(.+?)\s*"((?:\s+\d+\.\d+)+)\s*', line)
        if m:
            if m.group(1) not in THROUGHPUT_REPORT:
                raise UnparsableOutput(f"IOzone throughput report has a test this parser does not know: {m.group(1)!r}")
            test = THROUGHPUT_REPORT[m.group(1)]
            runs = [c for c in children if c.test == test]
            counts = [c.processes for c in runs]
            values = [float(v) for v in m.group(2).split()]
            if unit is None or len(counts) != len(values):
                raise UnparsableOutput(f"IOzone throughput report line {line!r}: "
                                       "cannot tell its unit or process counts")
            for position, (value, run) in enumerate(zip(values, runs)):
                found.append(((n, position), Claim(
                    source="iozone", test=test, value=value, unit=unit, printed=line, scope="children",
                    direction=DIRECTIONS[test], processes=run.processes, file_size=run.file_size,
                    record_size=record_size,
                    extra={"from": "report"}, **_fields(unit, value))))
        elif line.startswith('"') and not line.startswith(('"Record size', '"Output is in')):
            break
        n += 1
    return n
