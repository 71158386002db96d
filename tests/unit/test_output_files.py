"""Spec output_files (analysis/judge/output_files.py): a benchmark's own log files are output,
not data. Synthetic calls shaped as fs_mark's: a loop of files, its result line written to a log
file as well as to stdout; the real fs_mark under run, attach and import is
tests/kernel/test_fs_mark.py."""

from __future__ import annotations

import pytest

from iowitness.analysis.benchmarks import spec
from iowitness.analysis.judge import output_files
from tests.support.synthetic import O_APPEND, O_CREAT, O_TRUNC, O_WRONLY, Calls
from tests.unit.test_claim_windows import MS, _judge

SPEC = """
[benchmark]
name = "loops"
{files}

[[claim]]
pattern = '^loop (?P<n>\\d): (?P<value>[\\d.]+) files/s$'
test = "loop {n}"
direction = "write"
unit = "ops/s"
timed = "open..close"
scope = "window"
"""


def _loops():
    """Two loops of 20 files (one 4 KiB write each, 1 ms apart); after each loop its line goes
    to the log file (/run/log.txt, opened in append mode) and to stdout."""
    calls = Calls()
    lines = []
    for loop in (1, 2):
        first = calls.now
        for i in range(20):
            calls.open(f"/d/{loop}-{i}", O_WRONLY | O_CREAT | O_TRUNC).write(4096, latency=MS // 2).close().gap(MS)
        rate = 20 / ((calls.now - first) / 1e9)
        text = f"loop {loop}: {rate:.1f} files/s"
        calls.gap(5 * MS).open("/run/log.txt", O_WRONLY | O_CREAT | O_APPEND).write(len(text) + 1).close()
        lines.append((text, calls.now + 1000))
        calls.gap(MS)
    return calls, lines


@pytest.mark.parametrize("files", ['output_files = ["log.txt"]', 'output_files = ["/run/*.txt"]'])
def test_the_benchmarks_log_file_is_in_no_claims_phases(tmp_path, monkeypatch, files):
    # GIVEN two loops whose lines are written to a log file too
    calls, lines = _loops()
    # WHEN judged with a spec naming the log file (by name, or by a path glob)
    verdicts = _judge(calls, lines, SPEC.replace("{files}", files), tmp_path, monkeypatch)
    # THEN each loop is its 20 files, and the report says the log was left out
    assert [v.verdict for v in verdicts] == ["agrees", "agrees"], [(v.ratio, v.reasons) for v in verdicts]
    assert [len(v.phases) for v in verdicts] == [20, 20]
    assert "2 phases on the benchmark's own output files (log.txt; spec output_files)" in verdicts[0].placement


def test_without_output_files_the_log_is_a_phase_of_the_loop(tmp_path, monkeypatch):
    # GIVEN the same loops WHEN judged without output_files THEN the log write is a phase of a loop
    calls, lines = _loops()
    verdicts = _judge(calls, lines, SPEC.replace("{files}", ""), tmp_path, monkeypatch)
    assert max(len(v.phases) for v in verdicts) == 21
    assert "output files" not in (verdicts[0].placement or "")


@pytest.mark.parametrize("value", ['"fs_log.txt"', '[""]', '[1]'])
def test_output_files_must_be_a_list_of_globs(value):
    with pytest.raises(spec.SpecError, match=r"^spec \[benchmark\] 'output_files' is .*; give a list of globs"):
        spec.loads(f'[benchmark]\noutput_files = {value}\n' + SPEC.split("\n", 4)[4])


def test_a_glob_without_a_slash_is_a_name_one_with_a_slash_a_path():
    assert output_files.matches("/w/fs_log.txt.123", ("fs_log.txt*",), None)
    assert not output_files.matches("/w/data/fs_log", ("fs_log.txt*",), None)
    assert output_files.matches("/bench/logs/a.log", ("logs/*.log",), "/bench")
    assert not output_files.matches("/other/logs/a.log", ("logs/*.log",), "/bench")
