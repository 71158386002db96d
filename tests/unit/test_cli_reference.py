"""docs/cli.md is generated from --help; it must never go stale, and every command shows an example."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("cli_reference", REPO / "scripts" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_is_current():
    # GIVEN the help the commands print now, THEN docs/cli.md holds exactly that
    assert (REPO / "docs" / "cli.md").read_text() == _generator().render(), \
        "docs/cli.md is stale: run .venv/bin/python scripts/cli_reference.py"


def test_man_page_and_completion_are_current():
    # GIVEN the parser now, THEN the man page and the bash completion are what it generates
    gen = _generator()
    assert (REPO / "docs" / "iowitness.1").read_text() == gen.render_man(), \
        "docs/iowitness.1 is stale: run .venv/bin/python scripts/cli_reference.py"
    assert (REPO / "docs" / "iowitness.bash").read_text() == gen.render_completion(), \
        "docs/iowitness.bash is stale: run .venv/bin/python scripts/cli_reference.py"


def test_every_command_help_ends_with_an_example():
    from iowitness.cli import COMMANDS

    gen = _generator()
    for name in COMMANDS:
        assert "Example:" in gen.help_text([name]), name
