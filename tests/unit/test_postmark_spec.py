"""The shipped postmark spec (docs/specs/postmark.toml) reads postmark's data lines in whatever
unit postmark scaled them to. One CI run under strace printed its read rate in kilobytes
("1.77 megabytes read (904.32 kilobytes per second)"), and the spec, which knew megabytes only,
refused the whole output."""

from __future__ import annotations

from pathlib import Path

import pytest

from iowitness.analysis.benchmarks import spec

SPEC = Path(__file__).resolve().parents[2] / "docs" / "specs" / "postmark.toml"
TAIL = ("Time:\n\t2 seconds total\n\t1 seconds of transactions (600 per second)\n\nData:\n"
        "\t{read}\n\t{written}\n")


def _claims(read: str, written: str):
    parsed = spec.parse(TAIL.format(read=read, written=written), spec.load(str(SPEC)))
    # one claim per line: the spec's rules per unit never both match one line
    assert sorted(c.test for c in parsed) == ["data read", "data written", "total"], parsed
    return {c.test: c for c in parsed}


def test_megabytes_per_second_are_mib():
    claims = _claims("1.77 megabytes read (1.77 megabytes per second)",
                     "3.72 megabytes written (3.72 megabytes per second)")
    assert claims["data read"].bytes_per_s == pytest.approx(1.77 * 2 ** 20)
    assert claims["data written"].bytes_per_s == pytest.approx(3.72 * 2 ** 20)
    assert claims["total"].value == 2


def test_a_slow_run_s_kilobytes_per_second_are_kib():
    # the CI run's lines: 1.77 MiB over postmark's 2 whole seconds is 906 KiB/s, printed 904.32
    claims = _claims("1.77 megabytes read (904.32 kilobytes per second)",
                     "3.72 megabytes written (1.86 megabytes per second)")
    assert claims["data read"].bytes_per_s == pytest.approx(904.32 * 1024)
    assert claims["data written"].bytes_per_s == pytest.approx(1.86 * 2 ** 20)
