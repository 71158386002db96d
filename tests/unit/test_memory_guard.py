"""The check that refuses, before reading it, a trace whose analysis cannot fit in memory
(analysis/read/memory_guard.py): the bound is the least the trace can need, never a guess above it."""

from __future__ import annotations

import pytest

from iowitness.analysis.read import memory_guard
from iowitness.analysis.read.run import load
from iowitness.errors import BadTrace, TooLarge
from tests.support.cli import iowitness

GIB = 1 << 30


def _file(tmp_path, size: int):
    path = tmp_path / "big.iwt"
    with open(path, "wb") as f:
        f.truncate(size)   # sparse: the size without the disk
    return path


def test_a_trace_that_may_fit_is_never_refused(tmp_path):
    # GIVEN a 1 GiB trace (at least 134 million events: 30 GiB at 240 bytes each)
    path = _file(tmp_path, GIB)
    # WHEN 31 GiB are available THEN it is let through; with 29 GiB it is refused
    memory_guard.check(path, available=31 * GIB)
    with pytest.raises(TooLarge, match="at least 134,217,728 events"):
        memory_guard.check(path, available=29 * GIB)


def test_several_traces_held_together_count_together(tmp_path):
    (tmp_path / "a").mkdir()
    a, b = _file(tmp_path / "a", GIB // 2), _file(tmp_path, GIB // 2)
    memory_guard.check(a, available=16 * GIB)
    with pytest.raises(TooLarge, match="2 traces"):
        memory_guard.check(a, b, available=16 * GIB)


def test_meminfo_gives_available_memory_and_free_swap():
    meminfo = "MemTotal: 100 kB\nMemFree: 10 kB\nMemAvailable: 50 kB\nSwapTotal: 8 kB\nSwapFree: 4 kB\n"
    assert memory_guard.available_bytes(meminfo) == 54 * 1024
    assert memory_guard.available_bytes("nonsense") is None


def _client_output(tmp_path):
    """The least fio --client JSON output that makes several traces one run over several hosts."""
    out = tmp_path / "client.json"
    out.write_text('{"fio version": "fio-3.33", "client_stats": [{"hostname": "a"}]}\n')
    return str(out)


def test_load_refuses_in_one_line_before_reading(tmp_path, monkeypatch):
    # GIVEN a 4 TiB trace file (sparse), far beyond any memory here
    path = _file(tmp_path, 4 << 40)
    monkeypatch.delenv(memory_guard.ENV, raising=False)
    # WHEN the Python API, which holds every event, loads it
    # THEN it is refused before reading, in one line naming what works at any size
    with pytest.raises(TooLarge) as refused:
        load(path)
    assert "\n" not in str(refused.value) and "iowitness show" in str(refused.value)
    # AND with the check switched off the reader is reached (and says what the file is not)
    monkeypatch.setenv(memory_guard.ENV, "1")
    with pytest.raises(BadTrace):
        load(path)


def test_the_commands_that_can_stream_choose_it_for_a_trace_too_large(tmp_path, monkeypatch):
    # GIVEN the same 4 TiB file: report, check, compare (every form, --html too) and export (a
    # dataset or one file) read it block by block by themselves, and show --events always does,
    # so the reader is reached at once and says what the file is not
    path = _file(tmp_path, 4 << 40)
    other = tmp_path / "other.iwt"
    other.write_bytes(b"")
    monkeypatch.delenv(memory_guard.ENV, raising=False)
    # a run over several hosts too
    for command in (["report", str(path), str(other), "--claims", _client_output(tmp_path)],
                    ["report", str(path)], ["report", str(path), "--json"], ["check", str(path)],
                    ["compare", str(path), str(path)], ["export", str(path), "--parquet", str(tmp_path / "ds")],
                    ["export", str(path), "--parquet", str(tmp_path / "o.parquet")],
                    ["show", "--events", "--phase", "2", "-e", "read", str(path)],
                    ["report", str(path), "--html", str(tmp_path / "r.html")],
                    ["compare", str(path), str(path), "--html", str(tmp_path / "c.html")]):
        # (each a fork of the warm command process, tests/support/cli.py, with this environment: ten
        # fresh Pythons spent 15-18 s of a loaded machine on imports)
        proc = iowitness(*command, check=False, timeout=60)
        assert proc.returncode == 6 and "not an iowitness trace" in proc.stderr, (command, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
