"""`pip install iowitness` without extras: run and the text reports work without pyarrow and
matplotlib, and what needs them says in one line which extra to install."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_run_and_report_in_a_venv_without_pyarrow_and_matplotlib(tmp_path):
    # GIVEN a fresh venv with iowitness installed from its wheel, its declared dependencies
    # only (numpy, pandas, zstandard: pip resolves them, from its cache when it has them)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(REPO)],
                   check=True, capture_output=True, timeout=600)
    venv = tmp_path / "lean"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
    python = str(venv / "bin" / "python")
    install = subprocess.run([python, "-m", "pip", "install", "-q", str(next(wheels.glob("iowitness-*.whl")))],
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr
    missing = subprocess.run([python, "-c", "import importlib.util as u; "
                              "print(u.find_spec('pyarrow'), u.find_spec('matplotlib'))"],
                             capture_output=True, text=True, check=True, cwd=tmp_path)
    assert missing.stdout.split() == ["None", "None"]

    def iowitness(*args):
        return subprocess.run([python, "-m", "iowitness.cli", *args], capture_output=True, text=True,
                              cwd=tmp_path, timeout=300)

    # WHEN it records dd and reports on it
    trace = tmp_path / "dd.iwt"
    run = iowitness("run", "-q", "-o", str(trace), "--", "dd", "if=/dev/zero", f"of={tmp_path / 'dd.out'}",
                    "bs=64k", "count=16")
    # THEN the run, the text report and show work
    assert run.returncode == 0, run.stderr
    report = iowitness("report", str(trace))
    assert report.returncode == 0, report.stderr
    assert "dd write" in report.stdout
    assert iowitness("show", "--events", "-e", "write", str(trace)).stdout.count(" write ") == 16
    # AND the HTML report and the Parquet export each say in one line what to install, and write nothing
    html = iowitness("report", str(trace), "--html", str(tmp_path / "r.html"))
    assert (html.returncode, html.stderr) == (4, "iowitness: report --html needs matplotlib, which is not "
                                                 "installed: pip install 'iowitness[html]' (or pip install "
                                                 "matplotlib)\n")
    parquet = iowitness("export", str(trace), "--parquet", str(tmp_path / "e.parquet"))
    assert parquet.returncode == 4 and parquet.stderr.count("\n") == 1
    assert "pip install 'iowitness[parquet]'" in parquet.stderr
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "e.parquet").exists()
