"""IOzone's other units, for real: -N prints whole microseconds per operation, cut down (a
rewrite whose calls alone took 1.77 µs each printed "1"), and -O operations per second. Every
figure of the table is judged on its own test's phase and none DISAGREES; with -t, -O's
per-process lines in operations too. And -+n, whose
skipped retests print 0: no claims; -b and -Q, whose workbook and latency logs are IOzone's
output: no phase; -B, through a mapping: no DISAGREES."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import require_tool
from tests.support.cli import iowitness


@pytest.mark.parametrize("flag, unit", [("-N", "us/op"), ("-O", "ops/s")])
def test_iozone_microseconds_and_operations_per_second(tmp_path, flag, unit):
    iozone = require_tool("iozone")
    trace = tmp_path / "iozone.iwt"
    run = iowitness("run", "-q", "-o", str(trace), "--", iozone, "-i0", "-i1", "-s", "4m", "-r", "4k", flag,
                    "-f", str(tmp_path / "f"), timeout=120)
    assert "Output is in" in run.stdout or "Mode. Output" in run.stdout, run.stdout
    check = iowitness("check", str(trace), check=False)
    verdicts = [re.match(r"(AGREES|EXPLAINED|DISAGREES|CANNOT JUDGE) +(\w+) \(", line)
                for line in check.stdout.splitlines()]
    lines = [m.string for m in verdicts if m]
    assert [m.group(2) for m in verdicts if m] == ["write", "rewrite", "read", "reread"], check.stdout
    assert all(f" {unit}" in line for line in lines), check.stdout
    assert check.returncode == 0 and "DISAGREES" not in check.stdout, check.stdout


def test_iozone_throughput_in_operations_judges_every_per_process_line(tmp_path):
    # GIVEN IOzone -O -t 2: the children's and parent's ops/sec, then the min/max/avg per
    # process in ops/sec and "Min xfer" in ops (each child's 2,048 records of 4 KiB)
    iozone = require_tool("iozone")
    trace = tmp_path / "iozone.iwt"
    run = iowitness("run", "-q", "-o", str(trace), "--", iozone, "-O", "-t", "2", "-i0", "-s", "8m", "-r", "4k",
                    "-F", str(tmp_path / "f1"), str(tmp_path / "f2"), timeout=120)
    xfers = [float(x) for x in re.findall(r"Min xfer\s*=\s*([\d.]+) ops", run.stdout)]
    # (IOzone's own count; 0 when a rewriter saw the stonewall's flag before its first write)
    assert len(xfers) == 2 and all(0 <= x <= 2048 for x in xfers), run.stdout
    # WHEN checked
    check = iowitness("check", str(trace), check=False)
    verdicts = re.findall(r"^(AGREES|EXPLAINED|DISAGREES|CANNOT JUDGE) +(\w+) \((\w+(?: \w+)?),", check.stdout, re.M)
    # THEN all 12 figures (write and rewrite: children, parent, min, max, avg, min xfer) are
    # judged, in operations: before, the per-process ones were CANNOT JUDGE "the claim is not
    # a rate or an amount" (set against bytes), and check exited 1 on a healthy run
    assert len(verdicts) == 12 and {scope for _, _, scope in verdicts} == {
        "children", "parent", "min process", "max process", "avg process", "min xfer"}, check.stdout
    assert all(v in ("AGREES", "EXPLAINED") for v, _, _ in verdicts), check.stdout
    assert "Min xfer" not in check.stdout or " ops;" in check.stdout, check.stdout
    assert check.returncode == 0, check.stdout


def test_iozone_without_retests_judges_the_tests_that_ran(tmp_path):
    # GIVEN IOzone -+n: it skips the rewrite and the reread, yet prints 0 in their columns
    iozone = require_tool("iozone")
    trace = tmp_path / "iozone.iwt"
    file_size = 4 * 1024 * 1024

    # WHEN it runs traced, then is checked
    run = iowitness("run", "-q", "-o", str(trace), "--", iozone, "-+n", "-i0", "-i1", "-s", "4m", "-r", "64k",
                    "-f", str(tmp_path / "f"), timeout=120)
    assert "No retest option selected" in run.stdout, run.stdout
    check = iowitness("check", str(trace), check=False)
    phases = json.loads(iowitness("report", "--json", str(trace)).stdout)["phases"]

    # THEN the trace holds one pass of each, the file size IOzone was given (-s 4m), no more
    assert sorted((p["operation"], p["bytes"]) for p in phases) == [("read", file_size), ("write", file_size)], phases
    # AND only the write and the read are claims, judged on their phases: no "claims 0 kB/s"
    # CANNOT JUDGE, and `check` exits 0 on this healthy run
    verdicts = re.findall(r"^(AGREES|EXPLAINED|DISAGREES|CANNOT JUDGE) +(\w+) \(", check.stdout, re.M)
    assert [test for _, test in verdicts] == ["write", "read"], check.stdout
    assert check.returncode == 0 and "DISAGREES" not in check.stdout, check.stdout


def test_iozone_workbook_is_output_not_a_phase(tmp_path):
    # GIVEN IOzone -b: after its tests it writes an Excel workbook of the results, often on the
    # inode its just-deleted test file freed
    iozone = require_tool("iozone")
    trace, workbook, file_size = tmp_path / "iozone.iwt", tmp_path / "results.xls", 4 * 1024 * 1024

    # WHEN it runs traced
    iowitness("run", "-q", "-o", str(trace), "--", iozone, "-i0", "-i1", "-s", "4m", "-r", "64k",
              "-b", str(workbook), "-f", str(tmp_path / "f"), timeout=120)
    phases = json.loads(iowitness("report", "--json", str(trace)).stdout)["phases"]

    # THEN its four tests are the phases, each the file size IOzone was given (-s 4m); the
    # workbook's bytes (its size on disk) are in none (before: a fifth phase, "re-write" of f)
    assert workbook.stat().st_size > 0
    assert [(p["benchmark_name"], p["bytes"]) for p in phases] == [
        ("write", file_size), ("rewrite", file_size), ("read", file_size), ("reread", file_size)], phases


def test_iozone_through_mapped_files_does_not_disagree(tmp_path):
    # GIVEN IOzone -B: it writes and reads its file through a memory mapping (loads and stores,
    # which make no call; the trace sees the page faults)
    iozone = require_tool("iozone")
    trace = tmp_path / "iozone.iwt"
    run = iowitness("run", "-q", "-o", str(trace), "--", iozone, "-B", "-i0", "-i1", "-s", "8m", "-r", "64k",
                    "-f", str(tmp_path / "f"), timeout=120)
    assert "Using mmap files" in run.stdout, run.stdout

    # WHEN it is checked
    check = iowitness("check", str(trace), check=False)
    phases = json.loads(iowitness("report", "--json", str(trace)).stdout)["phases"]

    # THEN the write's phase is page faults mapping the file IOzone was given (-s 8m)
    write = next(p for p in phases if p["benchmark_name"] == "write")
    assert write["faults"] > 0 and write["fault_bytes"] == 8 * 1024 * 1024, write
    # AND no figure DISAGREES (write and rewrite did, 1.12x and 1.26x): a write or rewrite the
    # faults do not give cannot be judged, and says it is data moved through a mapping (the read
    # and reread, 2 ms of calls, may be CANNOT JUDGE on a busy machine as too short to time)
    assert "DISAGREES" not in check.stdout, check.stdout
    writes = [line for line in check.stdout.splitlines() if re.search(r" (write|rewrite) \(", line)]
    assert len(writes) == 2, check.stdout
    assert all("memory mapping" in line for line in writes if line.startswith("CANNOT JUDGE")), check.stdout


def test_iozone_latency_logs_are_output_not_phases(tmp_path):
    # GIVEN IOzone -Q: during each test it logs offsets and latencies to wol.dat, rwol.dat,
    # rol.dat and rrol.dat in its working directory
    iozone = require_tool("iozone")
    trace, file_size = tmp_path / "iozone.iwt", 4 * 1024 * 1024
    iowitness("run", "-q", "-o", str(trace), "--", iozone, "-Q", "-i0", "-i1", "-s", "4m", "-r", "64k",
              "-f", str(tmp_path / "f"), cwd=str(tmp_path), timeout=120)
    assert all((tmp_path / name).stat().st_size > 0 for name in ("wol.dat", "rwol.dat", "rol.dat", "rrol.dat"))

    # WHEN it is reported and checked
    phases = json.loads(iowitness("report", "--json", str(trace)).stdout)["phases"]
    check = iowitness("check", str(trace), check=False)

    # THEN its four tests are the phases, each the -s size, and each figure is judged on its
    # own (before: the logs were phases between them, three claims "no phase of the trace
    # matches" and `check` exited 1)
    assert [(p["benchmark_name"], p["bytes"]) for p in phases] == [
        ("write", file_size), ("rewrite", file_size), ("read", file_size), ("reread", file_size)], phases
    assert "no phase of the trace matches" not in check.stdout and "DISAGREES" not in check.stdout, check.stdout
