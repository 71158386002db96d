"""Install paths: without a compiler, the analysis side installs and works; on the lowest
declared Python (3.9), it reads and reports traces.

The compiler is hidden by giving pip a PATH without clang (a folder holding only the few
shell tools a build calls). The traces it reads are real: one recorded by the probe from this
checkout, one imported from a real strace run (import needs no probe).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.support.cli import iowitness
from tests.support.wheel import build_wheel

pytestmark = pytest.mark.kernel
REPO = Path(__file__).resolve().parents[2]
LOWEST = "3.9"


def _no_compiler_path(tmp_path: Path) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "bash", "env", "uname", "cat", "ls", "rm", "mkdir"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """(a probe trace, a trace imported from strace, the strace file) of dd writing 256 KiB."""
    where = tmp_path_factory.mktemp("traces")
    strace = require_tool("strace")
    data = where / "dd.out"
    dd = ["dd", "if=/dev/zero", f"of={data}", "bs=4k", "count=64"]
    iowitness("run", "-q", "-o", str(where / "probe.iwt"), "--file", str(data), "--", *dd)
    subprocess.run([strace, "-f", "-ttt", "-T", "-y", "-s", "4096", "-o", str(where / "dd.strace"), *dd], check=True,
                   capture_output=True, timeout=60)
    iowitness("import", str(where / "dd.strace"), "-o", str(where / "strace.iwt"), "--file", str(data))
    return where / "probe.iwt", where / "strace.iwt", where / "dd.strace"


@pytest.fixture(scope="module")
def pure_wheel(tmp_path_factory):
    where = tmp_path_factory.mktemp("wheel")
    env = {**os.environ, "PATH": _no_compiler_path(where)}
    return build_wheel(where, env), env


def _commands(trace: Path, imported: Path, raw: Path, out: Path) -> list[list[str]]:
    return [["report", str(trace)], ["show", str(trace)], ["check", str(imported)],
            ["compare", str(trace), str(imported)], ["export", str(trace), "--parquet", str(out / "t.parquet")],
            ["import", str(raw), "-o", str(out / "again.iwt")], ["report", str(imported), "--json"]]


def test_without_a_compiler_the_analysis_side_installs_and_run_says_what_to_install(tmp_path, traces, pure_wheel):
    # GIVEN the wheel pip builds from this checkout with no clang on PATH
    wheel, env = pure_wheel

    # THEN it is pure Python (tagged any) and carries no x86-64 probe object
    assert wheel.name.endswith("-py3-none-any.whl")
    assert not [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith((".bpf.o", "iowitness-player"))]

    # WHEN it is installed apart from the checkout and used without the compiler
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    env = {**env, "PYTHONPATH": str(site)}
    cli = lambda *a: subprocess.run([sys.executable, "-m", "iowitness.cli", *a], capture_output=True, text=True,
                                    env=env, cwd=tmp_path, timeout=120)

    # THEN report, show, check, compare, export and import work on real traces
    probe, imported, raw = traces
    for command in _commands(probe, imported, raw, tmp_path):
        done = cli(*command)
        assert done.returncode in (0, 1), f"{command}: {done.stderr}"
        assert "Traceback" not in done.stderr
    assert "dd write" in cli("report", str(probe)).stdout
    # AND run refuses in one line that says what to install
    refused = cli("run", "-q", "-o", str(tmp_path / "x.iwt"), "--", "true")
    assert refused.returncode == 3 and len(refused.stderr.splitlines()) == 1
    assert "install clang" in refused.stderr and "iowitness import" in refused.stderr


def _python(version: str) -> str | None:
    """An interpreter of that version that runs (a pyenv shim for a version not installed does not)."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for candidate in [*sorted(glob.glob(f"{root}/versions/{version}.*/bin/python{version}")), shutil.which(f"python{version}")]:
        if candidate and subprocess.run([candidate, "-c", ""], capture_output=True).returncode == 0:
            return candidate
    return None


def test_the_lowest_declared_python_reads_and_reports_traces(tmp_path, traces, pure_wheel):
    # GIVEN Python 3.9, the lowest version pyproject.toml declares, with the wheel and the
    # dependencies of report, check and import installed from the package index into a fresh venv
    python = _python(LOWEST)
    if python is None:
        pytest.skip(f"no Python {LOWEST} here (pyenv install {LOWEST}): cannot test the lowest declared version")
    wheel, env = pure_wheel
    venv = tmp_path / "venv"
    # the packages are installed by that Python's own pip, run by the venv's Python (--python): a
    # copy of pip in the venv (ensurepip's) took 28 s at load 7, and compiling every module of numpy
    # and pandas 7 of 11 CPU-s of their install (--no-compile: Python compiles what the commands
    # import); neither is part of what is tested. An interpreter without pip gives its venv one
    own_pip = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, timeout=60).returncode == 0
    subprocess.run([python, "-m", "venv", *(["--without-pip"] if own_pip else []), str(venv)], check=True,
                   capture_output=True, timeout=120)
    venv_python = str(venv / "bin" / "python")
    # the dependencies these commands load (pyarrow and matplotlib are for export and HTML,
    # whose code does not change with the Python version): a minute less to install
    pip = [*([python, "-m", "pip", "--python", venv_python] if own_pip else [venv_python, "-m", "pip"]),
           "install", "-q", "--no-compile", "--disable-pip-version-check"]
    subprocess.run([*pip, "--no-deps", str(wheel)], check=True, capture_output=True, timeout=300)
    subprocess.run([*pip, "numpy", "pandas", "zstandard", "tomli"], check=True, capture_output=True, timeout=900)

    # WHEN the analysis commands run on the real traces
    probe, imported, raw = traces
    commands = [["report", str(probe)], ["check", str(imported)], ["import", str(raw), "-o", str(tmp_path / "i.iwt")]]
    for command in commands:
        done = subprocess.run([str(venv / "bin" / "iowitness"), *command], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=120)
        # THEN none crashes (3.9 has no tomllib: report crashed before tomli stood in)
        assert done.returncode in (0, 1), f"{command}: {done.stderr}"
        assert "Traceback" not in done.stderr
