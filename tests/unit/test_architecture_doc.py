"""docs/architecture.md held to the code where a test can hold it: every file it names exists,
every module of the package is named on it, and the layers of its picture are those
tests/unit/test_layers.py enforces, in the same order.

Read from the page's text and the source tree only (nothing is imported), so a module moved or
renamed fails here with the names to fix on the page.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from tests.unit.test_layers import SHARED, layer, modules

try:
    import tomllib
except ImportError:   # Python 3.9 and 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
PAGE = "docs/architecture.md"
# Modules the page covers by a group of its own words instead of by name: {module: the words}.
# Empty while the page names every module; an entry must be a module of the package.
GROUPED: dict[str, str] = {}
# a file name as the page writes one: `collector/format/tracewriter.py`, `phases.py`, `stream_*.py`
FILE = re.compile(r"(?<![\w/.*-])((?:[\w*-]+/)*[\w*-]+\.py)\b")


def named(text: str) -> dict[str, list[int]]:
    """{file name or path as written: [line numbers]} of every .py the page names."""
    found: dict[str, list[int]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        for token in FILE.findall(line):
            found.setdefault(token, []).append(number)
    return found


def repo_files() -> list[str]:
    skip = {".git", ".venv", "build", "__pycache__", ".pytest_cache", ".ruff_cache"}
    return [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py")
            if not skip & set(p.relative_to(ROOT).parts)]


def matches(token: str, path: str) -> bool:
    """The page's `token` names the repository file `path` (a file name, or the end of a path)."""
    if "/" not in token:
        return fnmatch.fnmatchcase(path.rpartition("/")[2], token)
    return fnmatch.fnmatchcase(path, token) or fnmatch.fnmatchcase(path, "*/" + token)


def package_folders() -> dict[str, str]:
    """{folder: package} from pyproject.toml's package-dir: where each package's files are."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    return {folder.rstrip("/"): package for package, folder in config.items()}


def module_of(path: str) -> str:
    """The module a path of the picture stands for: `reporters/` is
    iowitness.reporters, `iowitness/cli.py` is iowitness.cli."""
    path = path.rstrip("/")
    folder, stem = (path.rpartition("/")[0], path.rpartition("/")[2][:-3]) if path.endswith(".py") else (path, "")
    folders = package_folders()
    best = max((f for f in folders if folder == f or folder.startswith(f + "/")), key=len, default=None)
    assert best is not None, f"{PAGE}: `{path}` is in no folder pyproject.toml maps to a package"
    rest = [p for p in folder[len(best):].split("/") if p] + ([stem] if stem else [])
    return ".".join([folders[best], *rest])


def picture() -> tuple[list[tuple[int, list[str]]], list[str]]:
    """The page's first picture: its layers top to bottom, each as (line number, [paths]), and
    the paths of its closing paragraph, the modules shared by every layer."""
    lines = DOC.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("```"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    block = list(enumerate(lines[start + 1:end], start + 2))
    gap = next((k for k, (_, line) in enumerate(block) if not line.strip()), len(block))
    layers = []
    for number, line in block[:gap]:
        if re.match(r" [^\s│]", line):   # a layer's first line; its other lines are indented
            column = re.split(r"\s{2,}", line.strip())[0]
            layers.append((number, [p.strip() for p in column.split(",") if p.strip()]))
    shared, folder = [], ""
    for token in FILE.findall("\n".join(line for _, line in block[gap:])):
        if "/" in token:
            folder = token.rpartition("/")[0] + "/"
        shared.append(token if "/" in token else folder + token)
    return layers, shared


def test_every_file_the_page_names_exists():
    # GIVEN the .py files docs/architecture.md names WHEN looked for in the repository
    files = repo_files()
    absent = {token: lines for token, lines in named(DOC.read_text()).items()
              if not any(matches(token, path) for path in files)}
    # THEN each is there
    assert not absent, (f"{PAGE} names files that do not exist: "
                        + ", ".join(f"`{t}` (line {', '.join(map(str, n))})" for t, n in sorted(absent.items()))
                        + ". Write each module's new name on the page, or take the name out.")


def test_every_module_of_the_package_is_named_on_the_page():
    # GIVEN every module of the package (its __init__.py files aside) and the page's names
    tokens = list(named(DOC.read_text()))
    unnamed = {}
    for module, path in sorted(modules().items()):
        rel = path.relative_to(ROOT).as_posix()
        if path.name == "__init__.py" or module in GROUPED:
            continue
        # WHEN the page is searched for it
        if not any(matches(token, rel) for token in tokens):
            unnamed[module] = rel
    # THEN each is named: a module the page does not name is a room nobody told the reader of
    assert not unnamed, (f"{PAGE} does not name these modules: "
                         + ", ".join(f"{m} ({rel})" for m, rel in unnamed.items())
                         + ". Name each on the page (its file name, e.g. `"
                         + next(iter(unnamed.values())).rpartition("/")[2]
                         + "`, in the Layout section), or, where the page covers it by a group,"
                         " add it to GROUPED in tests/unit/test_architecture_doc.py with the page's words.")


def test_grouped_modules_exist():
    # GIVEN the modules this test lets the page cover by a group THEN each is a module still
    stale = sorted(set(GROUPED) - set(modules()))
    assert not stale, f"GROUPED in tests/unit/test_architecture_doc.py names modules that do not exist: {stale}"


def test_the_pictures_layers_are_those_test_layers_enforces_in_its_order():
    # GIVEN the layers the page's picture draws, top to bottom, each module given its layer by
    # tests/unit/test_layers.py's own rule
    layers, _ = picture()
    assert len(layers) >= 3, f"{PAGE}: no picture of the layers found in its first ``` block"
    absent = [f"`{p}` (line {number})" for number, paths in layers for p in paths if not (ROOT / p).exists()]
    assert not absent, f"{PAGE}'s picture of the layers names folders or files that do not exist: {', '.join(absent)}"
    levels = []
    for number, paths in layers:
        mods = {p: module_of(p) for p in paths}
        found = {m: layer(m) for m in mods.values()}
        # THEN the modules drawn on one layer are on one layer of test_layers.py
        assert len(set(found.values())) == 1, (
            f"{PAGE} line {number} draws {sorted(found)} as one layer, test_layers.py gives them layers {found}")
        levels.append((number, paths, next(iter(found.values()))))
    # AND each layer of the picture is above the next, as test_layers.py ranks them
    for (n1, p1, l1), (n2, p2, l2) in zip(levels, levels[1:]):
        assert l1 > l2, (f"{PAGE} draws {p1} (line {n1}) above {p2} (line {n2}), but test_layers.py puts them "
                         f"at layers {l1} and {l2}: reorder the picture or the layers")
    # AND every layer test_layers.py has, but the shared one, is drawn
    drawn = {level for _, _, level in levels}
    missing = {}
    for module in sorted(modules()):
        missing.setdefault(layer(module), module)
    missing = {level: module for level, module in missing.items() if level and level not in drawn}
    assert not missing, (f"test_layers.py has layers the picture of {PAGE} does not draw: "
                         + ", ".join(f"layer {level} (e.g. {m})" for level, m in sorted(missing.items())))


def test_the_shared_modules_of_the_picture_are_test_layers_shared_ones():
    # GIVEN the modules the picture's closing paragraph says every layer shares
    _, shared = picture()
    absent = [p for p in shared if not (ROOT / p).exists()]
    assert not absent, f"{PAGE}'s picture names shared modules that do not exist: {absent}"
    drawn = {module_of(p) for p in shared}
    # THEN they are test_layers.py's SHARED, no more, no fewer
    assert drawn == set(SHARED), (f"{PAGE}'s shared modules and test_layers.py's SHARED differ: only on the page "
                                  f"{sorted(drawn - set(SHARED))}, only in SHARED {sorted(set(SHARED) - drawn)}")
