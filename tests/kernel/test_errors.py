"""Every input a user can get wrong: one line on stderr, a documented exit code, no traceback."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from iowitness import cli
from iowitness.collector import preflight
from iowitness.errors import EXIT_BAD_TRACE, EXIT_CANNOT_TRACE, EXIT_NOT_FOUND, EXIT_OUTPUT, EXIT_USAGE
from tests.support.cli import IOWITNESS, iowitness


def _one_clean_line(proc):
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def test_not_root(tmp_path):
    # GIVEN an unprivileged user (nobody), WHEN it asks to trace, THEN: "run as root", exit 3
    setpriv = shutil.which("setpriv")
    if not setpriv:
        pytest.skip("setpriv (util-linux) is not installed")
    drop = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]
    probe = subprocess.run([*drop, *IOWITNESS[:1], "-c", "import iowitness"], capture_output=True, cwd="/")
    if probe.returncode != 0:
        pytest.skip("user nobody cannot run this checkout's Python (its directories are private)")
    proc = subprocess.run([*drop, *IOWITNESS, "run", "-o", "/tmp/iowitness-never-written.iwt", "--", "true"],
                          capture_output=True, text=True, timeout=60, cwd="/")
    assert proc.returncode == EXIT_CANNOT_TRACE
    assert "root" in _one_clean_line(proc)


def test_btf_missing(monkeypatch, tmp_path, capsys):
    # GIVEN a kernel without BTF (simulated: the BTF file is looked for where none is)
    monkeypatch.setattr(preflight, "BTF", tmp_path / "no-btf")
    # WHEN run is asked to trace, THEN it says what is missing and what to do, exit 3
    code = cli.main(["run", "-q", "-o", str(tmp_path / "x.iwt"), "--", "true"])
    err = capsys.readouterr().err
    assert code == EXIT_CANNOT_TRACE
    assert "no-btf is missing" in err and "CONFIG_DEBUG_INFO_BTF" in err
    assert not (tmp_path / "x.iwt").exists()


def test_pid_not_found():
    proc = iowitness("attach", "--pid", "999999999", check=False)
    assert proc.returncode == EXIT_NOT_FOUND
    assert "no process with PID 999999999" in _one_clean_line(proc)


def test_command_not_found(tmp_path):
    proc = iowitness("run", "-o", str(tmp_path / "x.iwt"), "--", "no-such-benchmark-xyz", check=False)
    assert proc.returncode == EXIT_NOT_FOUND
    assert "command not found: no-such-benchmark-xyz" in _one_clean_line(proc)
    assert not (tmp_path / "x.iwt").exists()


def test_attach_file_in_a_missing_directory(tmp_path):
    proc = iowitness("attach", "--file", str(tmp_path / "nodir" / "f"), check=False)
    assert proc.returncode == EXIT_NOT_FOUND
    assert "does not exist" in _one_clean_line(proc)


def test_attach_file_that_does_not_exist_yet_waits_for_it(tmp_path):
    # GIVEN a file that does not exist yet, WHEN attaching to it for a second,
    # THEN iowitness says it waits for the file, and ends cleanly at the deadline
    proc = iowitness("attach", "--file", str(tmp_path / "later.dat"), "--duration", "1",
                     "-o", str(tmp_path / "w.iwt"), check=False)
    assert proc.returncode == 0, proc.stderr
    assert "does not exist yet; waiting for it to be created" in proc.stderr


def test_output_directory_not_writable(tmp_path):
    proc = iowitness("run", "-o", str(tmp_path / "missing-dir" / "x.iwt"), "--", "true", check=False)
    assert proc.returncode == EXIT_OUTPUT
    assert "does not exist" in _one_clean_line(proc)


def test_trace_output_among_the_traced_files(tmp_path):
    proc = iowitness("run", "--file", str(tmp_path), "-o", str(tmp_path / "x.iwt"), "--", "true", check=False)
    assert proc.returncode == EXIT_USAGE
    assert "among the traced files" in _one_clean_line(proc)


@pytest.mark.parametrize("size", ["0", "1025", "3000000"])
def test_event_buffer_size_out_of_range(tmp_path, size):
    proc = iowitness("run", "--ring-buffer-mb", size, "-o", str(tmp_path / "x.iwt"), "--", "true", check=False)
    assert proc.returncode == EXIT_USAGE
    assert "--ring-buffer-mb must be" in _one_clean_line(proc)
    assert not (tmp_path / "x.iwt").exists()


def test_not_a_trace(tmp_path):
    bogus = tmp_path / "bogus.iwt"
    bogus.write_text("hello")
    proc = iowitness("show", str(bogus), check=False)
    assert proc.returncode == EXIT_BAD_TRACE
    _one_clean_line(proc)
    missing = iowitness("show", str(tmp_path / "none.iwt"), check=False)
    assert missing.returncode == EXIT_BAD_TRACE
    assert "no such trace" in _one_clean_line(missing)


def test_check_on_a_trace_without_benchmark_output(tmp_path):
    # GIVEN an attach trace (attach never sees the benchmark's output)
    out = tmp_path / "attached.iwt"
    iowitness("attach", "--file", str(tmp_path / "quiet.dat"), "--duration", "1", "-q", "-o", str(out))
    # WHEN its claims are checked, THEN one line says where the claims must come from, exit 2
    proc = iowitness("check", str(out), check=False)
    assert proc.returncode == EXIT_USAGE
    assert "--claims FILE" in _one_clean_line(proc)
    # AND report still shows the (empty) phases and says why no claims were read
    shown = iowitness("report", str(out))
    assert "no benchmark output" in shown.stdout
