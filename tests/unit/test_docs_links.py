"""The front door stays a front door: README.md at most 250 lines, and every link between the
README, CONTRIBUTING.md and docs/ leads to a file that exists (and to a heading that exists,
when it names one)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s#]*)(?:#([^)\s]*))?\)")


def anchors(page: Path) -> set[str]:
    """The anchors a Markdown renderer gives the page's headings (GitHub's rule)."""
    heads = [line.lstrip("#").strip() for line in page.read_text().splitlines() if re.match(r"#{1,6} ", line)]
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in heads}


def test_the_readme_is_a_front_page():
    # GIVEN the README WHEN its lines are counted THEN it is a page, not the manual
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines <= 250, f"README.md has {lines} lines (at most 250): move the detail into a docs/ page and link it"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_link_leads_somewhere(page):
    # GIVEN a page's relative links
    broken = []
    for number, line in enumerate(page.read_text().splitlines(), 1):
        for target, anchor in LINK.findall(line):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            # WHEN followed from the page's folder
            where = (page.parent / target) if target else page
            # THEN the file is there, and the heading the link names
            if not where.exists():
                broken.append(f"line {number}: {target} does not exist")
            elif anchor and where.suffix == ".md" and anchor not in anchors(where):
                broken.append(f"line {number}: {target}#{anchor} names no heading of {where.name}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)
