"""The README's worked example is what iowitness prints: the demo's IOzone run traced here, and
every heading, table header, row and claim of the README's copy found in the real output.

Numbers (and the unit after each) differ from run to run and are compared as placeholders;
what a run's timing decides (the notes column, the limiter, the verdict words) is not
compared. What the README shows must exist in today's output: a renamed column, table or
claim fails here until the README's example is made again from a real run (scripts/demo.sh).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import require_tool
from tests.support.cli import iowitness

README = Path(__file__).resolve().parents[2] / "README.md"
# a number standing alone, with the unit that may follow it: "8,223", "472.8 ms", "4.2 GiB/s"
NUMBER = re.compile(r"(?<![\w.])-?\d[\d,.]*(?:\s?(?:ns|µs|ms|s|B|KiB|MiB|GiB|kB/s|KiB/s|MiB/s|GiB/s|%))?(?![\w.])")
VERDICT = re.compile(r"(AGREES|EXPLAINED|DISAGREES|CANNOT JUDGE)\s+(.*?): claims ")


# a column's unit is chosen from its typical value ("wall GiB/s" on a fast run, "wall MiB/s" on a slow one)
UNITS = {"ns", "µs", "ms", "s", "B", "KiB", "MiB", "GiB", "B/s", "KiB/s", "MiB/s", "GiB/s"}


def normal(line: str) -> str:
    return " ".join("U" if word in UNITS else word for word in NUMBER.sub("N", line).split())


def example() -> list[str]:
    """The lines of the code block under the README's "## A worked example"."""
    section = README.read_text().split("\n## A worked example\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```\n", 2)[1].splitlines()


def key(line: str) -> str:
    """A row's name: its words before its first number ("write sequential iozone.tmp", "read")."""
    words = line.split()
    if words and words[0] == "N":
        words = words[1:]
    return " ".join(words[:words.index("N")] if "N" in words else words)


def test_the_readmes_example_is_what_the_demo_prints(tmp_path):
    iozone = require_tool("iozone")
    # GIVEN the README's worked example, cut from a run of scripts/demo.sh
    lines = [line.strip() for line in example()]
    assert any(line.startswith("$ iowitness report") for line in lines), "README: the worked example was not found"
    # WHEN the demo's IOzone run is traced here, then shown and reported
    work = tmp_path / "w"
    work.mkdir()
    run = iowitness("run", "-o", "demo.iwt", "--", iozone, "-i0", "-i1", "-i2", "-s", "64m", "-r", "64k",
                    "-f", str(work / "iozone.tmp"), cwd=tmp_path)
    real_text = "\n".join([run.stdout, run.stderr, iowitness("show", "demo.iwt", cwd=tmp_path).stdout,
                           iowitness("report", "demo.iwt", cwd=tmp_path).stdout])
    real = [normal(line) for line in real_text.splitlines()]
    real_keys = {key(line) for line in real}
    real_claims = {m.group(2) for m in map(VERDICT.search, real_text.splitlines()) if m}
    missing = []
    for line in lines:
        if not line or line == "..." or line.startswith(("$", "observer", "phase ", "·")):
            continue   # commands, cuts, and what the run's own timing decides
        claim = VERDICT.search(line)
        if claim:
            # THEN each claim the README shows is judged in the real report, about the same test
            if claim.group(2) not in real_claims:
                missing.append(f"claim: {claim.group(2)}")
        elif "N" not in normal(line).split():
            # AND each heading and table header is printed as the README shows it
            if normal(line) not in real:
                missing.append(f"line: {line}")
        elif key(normal(line)) and key(normal(line)) not in real_keys:
            # AND each row the README shows is a row of the real output
            missing.append(f"row: {key(normal(line))}")
    assert not missing, ("README's worked example shows what iowitness no longer prints; run scripts/demo.sh and "
                         "paste its output again:\n  " + "\n  ".join(missing))
