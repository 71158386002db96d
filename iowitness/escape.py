"""Text from a trace, made safe for each output format: one function per format, used by every reporter.

Everything a trace holds came from the traced programs or the machine, not from iowitness:
file names, process names, the command line, the benchmark's output and the claims read from
it. A file name may hold ESC (a terminal would obey `\\x1b[2J`), a newline (a fake report
line), `<script>`, a table pipe, or bytes that are not UTF-8 (undecodable bytes of a command
line arrive as surrogates). So every format shows such characters, never emits them:

  visible(s)   control characters (C0, DEL, C1), bidirectional overrides and line separators
               written as escapes: \\n \\r \\t \\x1b \\x9b \\u202e; an undecodable byte as \\xff
  terminal(s)  visible(s) for a terminal; keep_newlines=True for a whole report
  html(s)      visible(s), then &, <, >, " and ' as entities (safe in text and in attributes)
  markdown(s)  visible(s), then every character Markdown gives a meaning backslash-escaped:
               no raw HTML, no link, no code span, no table cell ended by a pipe
  csv(frame)   visible(s) in every text cell, then the csv module's quoting
JSON needs nothing here: json.dumps escapes every control and non-ASCII character itself.
"""

from __future__ import annotations

import html as _html
import re

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# C0 and DEL, C1, Arabic letter mark, LRM/RLM, line and paragraph separators, LRE..RLO,
# LRI..PDI, and surrogates (undecodable bytes)
_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
_HIDDEN_BUT_NEWLINE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
                                 "\ud800-\udfff]")
_MARKDOWN = re.compile(r"([\\`*_\[\]<>|&~!$#])")
# a list item or a setext heading's underline opens only with a space (or nothing) after it:
# "- x", "12. x", "=", not "-5" or "8.0 MiB", which stay as they are
_MARKDOWN_LEAD = re.compile(r"^(\s*)([-+=]|\d+(?=[.)]))(?=[.)]?(\s|$))")


def _shown(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if 0xDC80 <= code <= 0xDCFF:      # a byte Python could not decode (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(value, keep_newlines: bool = False) -> str:
    """str(value) with every character that could act instead of being shown written as an escape."""
    text = str(value)
    return (_HIDDEN_BUT_NEWLINE if keep_newlines else _HIDDEN).sub(_shown, text)


def terminal(value, keep_newlines: bool = False) -> str:
    """For a terminal: a value (a name inside a line), or with keep_newlines a whole report."""
    return visible(value, keep_newlines)


def html(value) -> str:
    return _html.escape(visible(value), quote=True)


def markdown(value) -> str:
    text = _MARKDOWN.sub(r"\\\1", visible(value))
    # at the start of a cell or list item, "- x", "+ x", "1. x" would open a list
    return _MARKDOWN_LEAD.sub(lambda m: m.group(1) + ("\\" + m.group(2) if not m.group(2).isdigit()
                                                      else m.group(2) + "\\"), text)


def csv(frame) -> str:
    """A DataFrame as CSV, its text cells shown with visible() (a raw ESC would reach the
    terminal of `report --csv`); quoting by pandas (the csv module): commas, quotes, and
    newlines escaped by visible, keep every row one line."""
    shown = frame.copy()
    for column in shown.columns:
        if shown[column].dtype == object or str(shown[column].dtype) in ("str", "string"):
            shown[column] = shown[column].map(lambda v: _cell(visible(v)) if isinstance(v, str) else v)
    return shown.to_csv(index=False)


_FORMULA = re.compile(r"^[=+@]|^-(?![\d.]+$|$)")


def _cell(text: str) -> str:
    """A text cell a spreadsheet would read as a formula (=, +, @, or - not before a number;
    a file named "=HYPERLINK(...)") starts with a quote, as OWASP advises: shown, not run."""
    return "'" + text if _FORMULA.match(text) else text
