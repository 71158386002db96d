"""Writing a report file: checked before the work starts, so a bad path fails in a second."""

from __future__ import annotations

import os

from iowitness.errors import OutputError


def check_writable(path: str) -> None:
    """Fail now, with one line, if `path` cannot be written (no such directory, no permission)."""
    folder = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        raise OutputError(f"cannot write {path}: it is a directory; give a file name")
    if not os.path.isdir(folder):
        raise OutputError(f"cannot write {path}: no such directory {folder}")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise OutputError(f"cannot write {path}: permission denied; choose another output path")


def write_text(path: str, text: str) -> None:
    """Write the whole file (a temporary beside it, then renamed: no half-written report)."""
    temporary = f"{path}.part"
    try:
        with open(temporary, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(temporary, path)
    except OSError as exc:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}; choose another output path") from None
