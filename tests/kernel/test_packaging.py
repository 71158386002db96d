"""`pip install .` (a regular, non-editable install) ships a working probe inside the package; and
`pip install iowitness` without extras: run and the text reports work without pyarrow and
matplotlib, and what needs them says in one line which extra to install. Both install the one
wheel built here (a module fixture: building it compiles the probe and the player)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.wheel import build_wheel

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from this checkout the way `pip install .` builds it."""
    return build_wheel(tmp_path_factory.mktemp("wheels"))


def test_wheel_carries_the_probe_and_works_when_installed(tmp_path, wheel):
    # GIVEN a wheel built from this checkout the way `pip install .` builds it
    names = zipfile.ZipFile(wheel).namelist()
    # THEN the compiled probe and its record header are package data, under one namespace
    assert "iowitness/probes/build/iowitness.bpf.o" in names
    assert "iowitness/probes/build/iowitness_compat.bpf.o" in names   # older kernels' (kfeatures.py)
    assert "iowitness/probes/events.h" in names
    # AND the native replay player, built with the same compiler (replay/player.c)
    assert "iowitness/replay/build/iowitness-player" in names
    assert not any(n.split("/")[0] in ("collector", "analysis", "probes") for n in names)
    # AND the files it ships besides code: schemas, specs, man page, completion (iowitness/shipped.py)
    for shipped in ("schema/report.schema.json", "schema/compare-groups.schema.json", "specs/sysbench_fileio.toml",
                    "iowitness.1", "iowitness.bash"):
        assert f"iowitness/share/{shipped}" in names, shipped
    assert any(n.endswith(".data/data/share/man/man1/iowitness.1") for n in names)
    # WHEN it is installed apart from the checkout
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run([sys.executable, "-c", "import iowitness.probes as p; print(p.OBJECT)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, check=True)
    assert where.stdout.strip().startswith(str(site))
    # AND --print-schema and --list-specs read the installed copies
    schema = subprocess.run([sys.executable, "-m", "iowitness.cli", "--print-schema", "report"],
                            capture_output=True, text=True, env=env, cwd=tmp_path, check=True)
    assert schema.stdout == (REPO / "docs" / "schema" / "report.schema.json").read_text()
    listed = subprocess.run([sys.executable, "-m", "iowitness.cli", "--list-specs"],
                            capture_output=True, text=True, env=env, cwd=tmp_path, check=True)
    assert any(line.startswith(f"sysbench_fileio\t{site}/iowitness/share/specs/sysbench_fileio.toml\t")
               for line in listed.stdout.splitlines()), listed.stdout
    # THEN doctor loads and attaches that installed probe
    doctor = subprocess.run([sys.executable, "-m", "iowitness.cli", "doctor"],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "this machine can trace" in doctor.stdout
    assert str(site) in doctor.stdout
    # AND the installed package records and analyses a run end to end (every subpackage shipped)
    trace = tmp_path / "dd.iwt"
    run = subprocess.run([sys.executable, "-m", "iowitness.cli", "run", "-q", "-o", str(trace), "--",
                          "dd", "if=/dev/zero", f"of={tmp_path / 'dd.out'}", "bs=64k", "count=16"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    report = subprocess.run([sys.executable, "-m", "iowitness.cli", "check", str(trace)],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    # (a 1 MiB copy may be too short to judge: any verdict shows the analysis ran)
    assert report.returncode in (0, 1), report.stdout + report.stderr
    assert report.stdout.split()[0] in ("AGREES", "EXPLAINED", "DISAGREES", "CANNOT")
    assert "dd write" in report.stdout
    # AND its HTML report finds the page template shipped as package data
    page = tmp_path / "dd.html"
    html = subprocess.run([sys.executable, "-m", "iowitness.cli", "report", str(trace), "--html", str(page)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert html.returncode == 0, html.stderr
    assert "iowitness/reporters/templates/report.html" in names
    assert "<svg" in page.read_text() and "dd write" in page.read_text()


def test_run_and_report_in_a_venv_without_pyarrow_and_matplotlib(tmp_path, wheel):
    # GIVEN a fresh venv with iowitness installed from its wheel, its declared dependencies
    # only (numpy, pandas, zstandard: pip resolves them, from its cache when it has them)
    venv = tmp_path / "lean"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True,
                   timeout=120)
    python = str(venv / "bin" / "python")
    # (the pip outside installs into the venv, run by the venv's Python (--python): a copy of pip in
    # the venv, ensurepip's, took 28 s at load 7, and compiling every module of numpy and pandas
    # 7 of 11 CPU-s of their install; neither is part of what is tested, and Python compiles what
    # the commands import when they import it)
    install = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-compile",
                              "--disable-pip-version-check", str(wheel)],
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
