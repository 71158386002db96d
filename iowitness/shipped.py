"""Files iowitness ships besides its code: the JSON schemas of its outputs, the claim specs of
benchmarks it has no module for, the man page and the bash completion.

In a checkout they are under docs/; an installed wheel carries a copy under iowitness/share/
(setup.py copies them at build time), so `iowitness --print-schema` and `--list-specs` work
from a wheel alone.
"""

from __future__ import annotations

from pathlib import Path

SHARE = Path(__file__).resolve().parent / "share"      # in an installed wheel
DOCS = Path(__file__).resolve().parents[1] / "docs"     # in a checkout (and an editable install)
# where each kind of file lives under share/ (the same names under docs/)
FILES = {"schema": "schema/*.schema.json", "specs": "specs/*.toml", "man": "iowitness.1",
         "completion": "iowitness.bash"}


def root() -> Path:
    return SHARE if SHARE.is_dir() else DOCS


def schemas() -> dict[str, Path]:
    """Schema name (report, compare, ...) -> its file."""
    return {p.name.removesuffix(".schema.json"): p for p in sorted(root().glob(FILES["schema"]))}


def specs() -> dict[str, Path]:
    """Spec name (sysbench_fileio, ...) -> its file."""
    return {p.stem: p for p in sorted(root().glob(FILES["specs"]))}


def spec_summary(path: Path) -> str:
    """The spec's first comment line, without its '# ', as it says what the spec reads."""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("#") and line.strip("# "):
            return line.lstrip("# ").strip()
    return ""
