"""Read the tables back out of a report, HTML or Markdown, as rows of cell texts: what a
reader of either form sees, so the two can be compared."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser


class _Tables(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables: list[dict] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append({"class": dict(attrs).get("class", ""), "rows": []})
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append(" ")

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(re.sub(r"\s+", " ", "".join(self._cell)).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1]["rows"].append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def html_tables(text: str) -> list[dict]:
    """[{"class": ..., "rows": [[cell, ...], ...]}] for each <table>, header row first."""
    parser = _Tables()
    parser.feed(text)
    return parser.tables


def markdown_tables(text: str) -> list[list[list[str]]]:
    """Each pipe table's rows (header first, the --- line left out), cells unescaped as a
    Markdown reader does: a backslash before ASCII punctuation stands for that character."""
    tables, current = [], None
    for line in text.splitlines():
        if line.startswith("|") and line.rstrip().endswith("|"):
            cells = [re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", c.strip())
                     for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
            if all(re.fullmatch(r"-*:?-+:?", c) for c in cells):
                continue
            if current is None:
                current = []
                tables.append(current)
            current.append([html.unescape(c) for c in cells])
        else:
            current = None
    return tables
