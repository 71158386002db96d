"""Writing a report or export file: checked before the work starts, so a bad path or --mode
fails in a second; written by iowitness/outputfile.py (fresh file, renamed into place, never
through a symlink, mode 0600 unless --mode says otherwise)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

from iowitness import escape
from iowitness.outputfile import Output, parse_mode


def destination(args, path: str) -> Output:
    """The output file `path` with the permissions of --mode, checked now (exit 2 for a bad
    --mode, 5 for a path that cannot be written)."""
    out = Output(path, parse_mode(args.mode))
    out.check()
    return out


class _StandardOutput:
    """A page written to stdout (`--html -`, as `-` means for most Unix tools)."""

    def write_text(self, text: str) -> None:
        sys.stdout.write(text)


def page_destination(args, path: str):
    """destination(), or stdout for `-`: a page piped on (to a file server, gzip, ssh)."""
    return _StandardOutput() if path == "-" else destination(args, path)


def print_text(text: str, pager: bool = False) -> None:
    """A report for a terminal: nothing in it (a file name, the benchmark's output) can move
    the cursor, change colours or fake a line: every control character is shown escaped.

    pager: when stdout is a terminal and the text is longer than its screen, show it through
    $PAGER (else less), with LESS=FRX unless LESS is set, as git does: -F quits at once when it
    fits after all, -R keeps colours, -X leaves the text on the screen. Never when piped."""
    text = escape.terminal(text, keep_newlines=True)
    if pager and _page(text):
        return
    print(text)


def width(wide: bool) -> int | None:
    """The columns a text report may use: None (no limit) with --wide or when stdout is no
    terminal (a file or a pipe gets every column, as ps and git give them; COLUMNS is not
    enough, since a parent may export it for its own terminal); on a terminal, COLUMNS when
    set (as ls reads it), else the terminal's width."""
    if wide or not sys.stdout.isatty():
        return None
    given = os.environ.get("COLUMNS", "")
    if given.isdigit() and int(given) > 0:
        return max(int(given), MIN_WIDTH)
    try:
        return max(os.get_terminal_size(sys.stdout.fileno()).columns, MIN_WIDTH)
    except OSError:
        return None


MIN_WIDTH = 40   # narrower than this, tables cannot keep a name and a figure side by side


def _page(text: str) -> bool:
    """Show `text` through the pager when stdout is a terminal it does not fit; False when it
    was not paged (piped, short enough, no pager found), so the caller prints it."""
    if not sys.stdout.isatty():
        return False
    try:
        rows = os.get_terminal_size(sys.stdout.fileno()).lines
    except OSError:
        return False
    if text.count("\n") + 1 < rows:
        return False
    command = os.environ.get("PAGER", "less").strip() or "cat"
    try:
        program = shlex.split(command)[0]
    except ValueError:
        return False
    if program == "cat" or not shutil.which(program):
        return False   # nothing to page with: printed as it is, never lost
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    sys.stdout.flush()
    proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)
    try:
        proc.stdin.write(text.encode("utf-8", "replace") + b"\n")
        proc.stdin.close()
    except BrokenPipeError:   # the reader quit the pager before the end: nothing more to show
        pass
    proc.wait()
    return True
