#!/usr/bin/env python3
"""typecheck.py — run mypy on the iowitness package as it installs.

The package's folders are mapped into one namespace by pyproject.toml
([tool.setuptools.package-dir]: iowitness.analysis is analysis/, ...), which mypy cannot read,
and the editable install's import hook is invisible to it. So this lays the namespace out as
symbolic links in a scratch folder (.venv/typecheck/, remade each run, a few milliseconds) and
runs mypy on `-p iowitness` there, with the settings of [tool.mypy] in pyproject.toml.
Extra arguments go to mypy. Exit code: mypy's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:   # Python 3.9 and 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def lay_out(tree: Path) -> None:
    """tree/iowitness/... as the installed package: each package's folder where it installs."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {name: ROOT / folder for name, folder in config["package-dir"].items()}
    shutil.rmtree(tree, ignore_errors=True)
    # the top package is a real folder, so that packages mapped from elsewhere can be put in it
    top = tree / "iowitness"
    top.mkdir(parents=True)
    for entry in folders["iowitness"].iterdir():
        if entry.name != "__pycache__":
            (top / entry.name).symlink_to(entry)
    for name, folder in sorted(folders.items()):
        if name == "iowitness":
            continue
        place = tree.joinpath(*name.split("."))
        if not place.exists():
            place.symlink_to(folder)
        elif place.resolve() != folder.resolve():
            sys.exit(f"typecheck: {name} would be both {place.resolve()} and {folder}")


def main() -> int:
    tree = ROOT / ".venv" / "typecheck"
    lay_out(tree)
    env = dict(os.environ, MYPYPATH=str(tree))
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
               "--cache-dir", str(ROOT / ".venv" / "mypy_cache"), "-p", "iowitness", *sys.argv[1:]]
    return subprocess.run(command, cwd=tree, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
