"""iowitness/units.py, the one place figures get their units: every unit path, the column
rule (one unit per column, said once in its header), a claim's own unit, and the text table
that fits a width.

Ground truth is arithmetic: 1 KiB = 1024 B, 1 kB = 1000 B, 1 ms = 1000 µs.
"""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from iowitness import units
from iowitness.analysis.judge.claim import Claim
from iowitness.analysis.judge.verdict_rules import Verdict
from iowitness.reporters import tables

NAN = float("nan")


@pytest.mark.parametrize("n, shown", [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
                                      (1024 ** 2, "1.0 MiB"), (5 * 1024 ** 3, "5.0 GiB"), (2 * 1024 ** 4, "2.0 TiB"),
                                      (3 * 1024 ** 5, "3072.0 TiB")])
def test_a_byte_count_alone_reads_in_binary_units(n, shown):
    # GIVEN a byte count WHEN shown alone THEN in the binary unit it reads best in, said once
    assert units.bytes_(n) == shown
    assert units.rate(n) == shown + "/s"


@pytest.mark.parametrize("us, shown", [(0.5, "0.50 µs"), (9.99, "9.99 µs"), (850, "850.0 µs"), (4057.7, "4.06 ms"),
                                       (12_000, "12.0 ms"), (999_000, "999.0 ms"), (1_200_000, "1.20 s"),
                                       (NAN, "-")])
def test_a_latency_alone_carries_exactly_one_unit(us, shown):
    # GIVEN a latency in µs WHEN shown alone THEN with one unit, never two ("32.2 ms µs")
    assert units.latency(us) == shown
    assert not re.search(r"(ms|s) µs", shown)


@pytest.mark.parametrize("us, shown", [(0.25, "0.25"), (12.5, "12.5"), (850, "850"), (32_200, "32,200"),
                                       (1_500_000, "1,500,000"), (NAN, "-")])
def test_micros_in_a_microsecond_column_never_changes_unit(us, shown):
    # GIVEN a value for a column headed "µs" WHEN shown THEN a bare number of µs, whatever its size
    assert units.micros(us) == shown


@pytest.mark.parametrize("s, shown", [(0.0000005, "0 µs"), (0.0005, "500 µs"), (0.0123, "12.3 ms"), (1.5, "1.500 s"),
                                      (250, "250 s"), (NAN, "-")])
def test_seconds_alone(s, shown):
    assert units.seconds(s) == shown


@pytest.mark.parametrize("value, shown", [(0, "0"), (4, "4"), (16384, "16,384"), (123.456, "123"), (12.34, "12.3"),
                                          (1.234, "1.23"), (0.0123, "0.01"), (0.004, "0.004"), (0.00001, "<0.0001"),
                                          (NAN, "-")])
def test_a_number_in_a_chosen_unit(value, shown):
    assert units.number(value) == shown


@pytest.mark.parametrize("values, kind, unit, cells", [
    ([512, 700, NAN], "bytes", "B", ["512", "700", "-"]),
    ([4096, 65536, 16 << 20], "bytes", "KiB", ["4", "64", "16,384"]),
    ([32 << 20, 1 << 20], "bytes", "MiB", ["32", "1"]),
    ([3 << 30, 1 << 30, 1 << 29], "bytes", "GiB", ["3", "1", "0.50"]),
    ([2 << 40, 3 << 40], "bytes", "TiB", ["2", "3"]),
    ([100e6, 50e6], "rate", "MiB/s", ["95.4", "47.7"]),
    ([0.5, 3.2, 800], "latency", "µs", ["0.50", "3.20", "800"]),
    ([12_000, 25_000, 3.0], "latency", "ms", ["12", "25", "0.003"]),
    ([2e6, 3.5e6], "latency", "s", ["2", "3.50"]),
    ([0.000_070, 0.000_020], "seconds", "µs", ["70", "20"]),
    ([0.012, 0.5], "seconds", "ms", ["12", "500"]),
    ([1.5, 20.0], "seconds", "s", ["1.50", "20"]),
    ([0, 0], "seconds", "µs", ["0", "0"]),
])
def test_a_column_takes_the_unit_of_its_typical_value(values, kind, unit, cells):
    # GIVEN a column's raw values WHEN formatted THEN one unit for the column, bare numbers in it
    assert units.column(values, kind) == (unit, cells)


def test_blank_zeros_and_headers():
    # GIVEN phases where only some fsynced WHEN their fsync time is a column THEN no fsync is blank
    assert units.column([0.0, 0.002], "seconds", blank_zero=True) == ("ms", ["", "2"])
    assert units.with_unit("p99", "ms") == "p99 ms"


@pytest.mark.parametrize("unit, factor, note", [
    ("kB/s", 1024, "kB = 1,024 B"),     # IOzone
    ("kB/s", 1000, "kB = 10^3 B"),      # fio's kB
    ("MB/s", 1e6, "MB = 10^6 B"),       # dd
    ("GB/s", 1e9, "GB = 10^9 B"),
    ("KiB/s", 1024, ""), ("MiB/s", 1 << 20, ""),   # IEC names mean one thing
    ("ops/s", 1, ""), ("us/op", 1e-6, ""), ("B/s", 1, ""),
])
def test_a_benchmarks_own_unit_says_what_it_is_worth_when_ambiguous(unit, factor, note):
    assert units.claim_unit_note(unit, factor) == note


@pytest.mark.parametrize("unit, ratio, worth", [
    ("MB/s", 997_472, 1e6),          # dd's "156 MB/s" for 155.6 MB/s
    ("kB/s", 1024, 1024),            # IOzone's kB
    ("kB/s", 1003, 1000), ("GB/s", 1.07e9, 1024 ** 3), ("MiB/s", 1 << 20, 1 << 20),
    ("ops/s", 1.0, 1.0), ("us/op", 1e-6, 1e-6),
])
def test_what_a_printed_unit_is_worth_from_the_benchmarks_own_rounded_figures(unit, ratio, worth):
    assert units.unit_worth(unit, ratio) == worth


def _verdict(claim: Claim, active: float, kind: str = "bytes") -> Verdict:
    return Verdict(claim, [1], "agrees", {"window": active}, "window", 1.0, kind=kind)


def test_a_verdict_shows_the_benchmarks_unit_next_to_iowitness_conversion():
    # GIVEN IOzone's "130201" kB/s (kB = 1024 B) and an active figure of 127 MiB/s
    claim = Claim("iozone", "write", 130201, "kB/s", "", bytes_per_s=130201 * 1024)
    v = _verdict(claim, 127 * 1024 ** 2)
    # THEN the claim reads as printed, then converted, with what its kB is
    assert tables.claimed_value(claim) == "130,201 kB/s (= 127.1 MiB/s; kB = 1,024 B)"
    # AND the active figure reads in iowitness's unit and in IOzone's: 127 MiB/s = 130,048 kB/s
    assert tables.active_value(v) == "127.0 MiB/s = 130,048 kB/s"
    # GIVEN dd's decimal MB/s THEN the same, saying MB = 10^6 B
    dd = Claim("dd", "write", 807, "MB/s", "", bytes_per_s=806.6e6)   # dd rounds what it prints
    assert tables.claimed_value(dd) == f"807 MB/s (= {806.6e6 / 1024 ** 2:.1f} MiB/s; MB = 10^6 B)"
    assert tables.active_value(_verdict(dd, 800e6)) == f"{800e6 / 1024 ** 2:.1f} MiB/s = 800 MB/s"
    # GIVEN a claim already in iowitness's unit (ops/s) THEN no conversion is repeated
    ops = Claim("fio", "randread", 25000, "ops/s", "", ops_per_s=25000)
    assert tables.claimed_value(ops) == "25,000 ops/s"
    assert tables.active_value(_verdict(ops, 24000, "ops")) == "24,000 ops/s"
    # GIVEN a latency in µs per op THEN iowitness's µs/op and the benchmark's us/op
    lat = Claim("fio", "read", 85.5, "us/op", "", seconds_per_op=85.5e-6)
    assert tables.active_value(_verdict(lat, 90e-6, "latency")) == "90.00 µs/op = 90 us/op"


def _frame(rows: int = 3) -> pd.DataFrame:
    return pd.DataFrame({"#": range(1, rows + 1), "name": ["random write"] * rows, "pid": [4242] * rows,
                         "bytes MiB": ["64"] * rows, "p99 µs": ["12.5"] * rows, "user ms": ["3.20"] * rows,
                         "notes": ["re-write, 2 failed calls, 12 short, TOO SHORT TO TIME"] * rows})


@pytest.mark.parametrize("width", [40, 60, 80, 200])
def test_a_table_fits_its_width_leaving_out_columns_in_the_order_given(width):
    # GIVEN a table wider than 60 columns and an order to leave columns out in
    frame = _frame()
    text = units.table(frame, title="phases", width=width, drop=("pid", "user", "p99"))
    lines = text.splitlines()
    # THEN no line is longer than the width
    assert max(map(len, lines)) <= width
    # AND the columns left out, if any, are the first of the order given, named in the title with --wide
    flat = " ".join(text.split())
    said = re.search(r"left out to fit \d+ columns: (.*); --wide shows all", flat)
    hidden = said.group(1).split(", ") if said else []
    assert hidden == ["pid", "user ms", "p99 µs"][:len(hidden)]
    # AND a table that fits is left as it is
    full = units.table(frame, title="phases")
    if max(map(len, full.splitlines())) <= width:
        assert text == full
    # AND no word of the notes is lost: each row's notes, wrapped under their column, read whole
    assert flat.count("re-write, 2 failed calls, 12 short, TOO SHORT TO TIME") == 3


def test_numbers_align_right_text_left_and_a_wide_table_is_unchanged():
    frame = pd.DataFrame({"name": ["a", "bbb"], "p99 ms": ["1.5", "12.5"], "share": ["5%", "58%"],
                          "tid": ["4 thr", "17"], "cell": ["6,416,040?", "12"]})
    lines = units.table(frame).splitlines()
    assert lines[0] == "name  p99 ms  share    tid        cell"
    assert lines[1] == "a        1.5     5%  4 thr  6,416,040?"
    assert lines[2] == "bbb     12.5    58%     17          12"
    assert units.table(frame, width=None) == units.table(frame)


def test_prose_folds_with_its_indent_kept():
    text = "  " + " ".join(["word"] * 30)
    folded = units.wrap(text, 40).splitlines()
    assert all(len(line) <= 40 for line in folded) and folded[1].startswith("    word")
    assert units.wrap(text, None) == text


def test_scale_of_an_axis():
    assert units.scale_of(500) == (1.0, "B")
    assert units.scale_of(3 * 1024 ** 2) == (1024.0 ** 2, "MiB")
    assert math.isclose(units.scale_of(5 * 1024 ** 4)[0], 1024.0 ** 4)
