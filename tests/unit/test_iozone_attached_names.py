"""IOzone -t attached after its first tests (tests/kernel/test_iozone_attached.py on the real
run): its lines keep their tabs in the output the trace recorded, its claims expand them, and
the trace's first group of phases is the first test whose lines the recording holds."""

from __future__ import annotations

import pandas as pd

from iowitness.analysis.benchmarks import iozone
from iowitness.analysis.judge import claim_windows
from iowitness.analysis.judge.claim import Claim
from iowitness.analysis.read.printed import PrintedLine

ARGV = ["iozone", "-t", "2", "-i", "0", "-i", "1", "-F", "f1", "f2"]
REWRITERS = "\tChildren see throughput for  2 rewriters \t= 1735132.53 kB/sec"


def test_a_recorded_line_with_tabs_is_the_claim_that_expanded_them():
    # GIVEN the rewriters' line as IOzone wrote it (tabs) and as its claim prints it (expanded)
    claim = Claim(source="iozone", test="rewrite", value=1735132.53, unit="kB/s",
                  printed=REWRITERS.expandtabs(8).strip())
    # WHEN placed on a recorded output of an attached trace that begins with that line
    note = claim_windows.place([claim], [PrintedLine(REWRITERS, 5_000, "stdout")], given=True, attached=True)
    # THEN it is placed at the line's time (before: "the lines given do not follow the recorded output")
    assert note == claim_windows.TIMELINE_NOTE and claim.printed_ns == 5_000


def test_the_first_test_whose_lines_were_recorded_names_the_first_phases():
    # GIVEN a recording that begins with the rewriters' block (the initial writers ended before it)
    assert iozone.first_traced_test(["", REWRITERS, "\tParent sees throughput for  2 rewriters \t= 7 kB/sec"]) \
        == "rewrite"
    assert iozone.first_traced_test(["Iozone: Performance Test of File I/O"]) is None
    # WHEN the trace's three groups (writes, reads, reads) are named from it
    units = pd.DataFrame({"operation": ["write", "read", "read"]})
    # THEN they are the rewriters, the readers and the re-readers, not the initial writers first
    assert iozone.name_units(units, ARGV, "rewrite") == ["rewrite", "read", "reread"]
    assert iozone.name_units(units, ARGV) == ["write", "read", "reread"]
