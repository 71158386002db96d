"""Writing a report or export file: checked before the work starts, so a bad path or --mode
fails in a second; written by iowitness/outputfile.py (fresh file, renamed into place, never
through a symlink, mode 0600 unless --mode says otherwise)."""

from __future__ import annotations

from iowitness import escape
from iowitness.outputfile import Output, parse_mode


def destination(args, path: str) -> Output:
    """The output file `path` with the permissions of --mode, checked now (exit 2 for a bad
    --mode, 5 for a path that cannot be written)."""
    out = Output(path, parse_mode(args.mode))
    out.check()
    return out


def print_text(text: str) -> None:
    """A report for a terminal: nothing in it (a file name, the benchmark's output) can move
    the cursor, change colours or fake a line: every control character is shown escaped."""
    print(escape.terminal(text, keep_newlines=True))
