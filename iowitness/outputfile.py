"""Creating output files safely when running as root: every file iowitness writes comes from here.

The rule (docs/outputs-and-safety.md): a file is never opened through a name someone else may have
planted. Each output is created fresh, with O_CREAT|O_EXCL|O_NOFOLLOW, under a random
temporary name in the destination's directory, then renamed onto the destination: rename(2)
replaces whatever the destination name holds, a planted symlink included, and never follows
it. A destination that already is a symlink is refused (exit 5) rather than replaced, since
the user may have meant its target. New files get mode 0600 (a trace holds the command line,
every traced path and the benchmark's output), or exactly the `--mode` given: the umask does
not apply, so the mode asked for is the mode on disk.
"""

from __future__ import annotations

import os
import secrets

from iowitness.errors import OutputError, UsageError

DEFAULT_MODE = 0o600
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_TRIES = 100   # temporary names, and numbered default names, tried before giving up
TRACE_HINT = "choose another place with -o"


def parse_mode(text: str | None) -> int:
    """The permission bits of `--mode` ("0640", "640" or "0o640"); DEFAULT_MODE when not given."""
    if text is None:
        return DEFAULT_MODE
    digits = text[2:] if text.lower().startswith("0o") else text
    if not digits or len(digits) > 4 or any(c not in "01234567" for c in digits):
        raise UsageError(f"--mode {text!r} is not an octal file mode; give one like --mode 0640")
    mode = int(digits, 8)
    if mode & ~0o777:
        raise UsageError(f"--mode {text}: setuid, setgid and sticky bits are refused; give permission bits "
                         "only, like --mode 0640")
    return mode


def add_mode_option(parser) -> None:
    parser.add_argument("--mode", metavar="OCTAL",
                        help="permissions of the files written, taken as given (the umask does not apply); "
                             "default 0600: only their owner reads them. Example: --mode 0640")


class Output:
    """One file to write: where, with which permissions, and what to say when it cannot be."""

    def __init__(self, path, mode: int = DEFAULT_MODE, what: str = "",
                 hint: str = "choose another output path"):
        self.path, self.mode, self.hint = str(path), mode, hint
        self._name = f"{what} {self.path}" if what else self.path

    def error(self, reason: str, advice: str = "") -> OutputError:
        """One line: what failed, why, what to do (`advice` comes before the usual hint)."""
        return OutputError(f"cannot write {self._name}: {reason}; {advice}{self.hint}")

    def check(self) -> None:
        """Fail now, in one line, when the destination cannot become a file of ours."""
        if os.path.islink(self.path):
            raise self.error("it is a symbolic link, and iowitness never writes through one (it could "
                             "point anywhere)", "remove it or ")
        if os.path.isdir(self.path):
            raise self.error("it is a directory", "give a file name or ")
        self.check_folder()

    def check_folder(self) -> None:
        folder = os.path.dirname(os.path.abspath(self.path)) or "/"
        if not os.path.isdir(folder):
            raise self.error(f"no such directory {folder}", "create it or ")
        if not os.access(folder, os.W_OK):
            raise self.error(f"directory {folder} is not writable")

    def write(self, produce) -> None:
        """Make the whole file by calling produce(binary file object), under a temporary name
        renamed onto the destination at the end: no half-written output, no link followed;
        nothing is left behind when it fails."""
        self.check()
        fd, temporary = self._temporary(append=False)
        try:
            with os.fdopen(fd, "wb") as f:
                produce(f)
            if os.path.islink(self.path):   # planted since the check: the user did not name a link
                raise self.error("it became a symbolic link while being written", "remove it or ")
            os.replace(temporary, self.path)
        except BaseException as exc:
            _remove(temporary)
            if isinstance(exc, OSError):
                raise self.error(exc.strerror or str(exc)) from None
            raise

    def write_text(self, text: str) -> None:
        # backslashreplace: text from a trace may hold undecodable bytes (surrogates) yet
        # every escaper shows them; this is the last guard, never a traceback
        self.write(lambda f: f.write(text.encode("utf-8", errors="backslashreplace")))

    def open_growing(self) -> int:
        """For a file written while a run goes (the trace): an fd, opened O_APPEND, of a new empty
        file that already holds the destination's name, so a run killed at any moment leaves its
        file there. Made under a temporary name and renamed at once: an old file of that name is
        replaced (as O_TRUNC did) without ever being opened."""
        self.check()
        fd, temporary = self._temporary(append=True)
        try:
            os.replace(temporary, self.path)
        except OSError as exc:
            os.close(fd)
            _remove(temporary)
            raise self.error(exc.strerror or str(exc)) from None
        return fd

    def open_numbered(self) -> tuple[int, str]:
        """For a default name: a file no other holds, `NAME.iwt`, else `NAME-2.iwt`, `NAME-3.iwt`...
        each created exclusively, so two runs that pick a name at the same moment get one each; a
        name held by anything, a planted link included, is passed over. (fd opened O_APPEND, path)."""
        self.check_folder()
        stem, suffix = os.path.splitext(self.path)
        for n in range(1, _TRIES + 1):
            path = f"{stem}-{n}{suffix}" if n > 1 else self.path
            try:
                return _create(path, self.mode, append=True), path
            except FileExistsError:
                continue
            except OSError as exc:
                raise self.error(exc.strerror or str(exc)) from None
        raise self.error(f"{_TRIES} files of that name exist already")

    def _temporary(self, append: bool) -> tuple[int, str]:
        """A new file of a random name in the destination's directory: (fd, its path)."""
        folder, base = os.path.split(os.path.abspath(self.path))
        for _ in range(_TRIES):
            name = os.path.join(folder, f".{base}.{secrets.token_hex(6)}.part")
            try:
                return _create(name, self.mode, append), name
            except FileExistsError:
                continue
            except OSError as exc:
                raise self.error(exc.strerror or str(exc)) from None
        raise self.error(f"no free temporary name in {folder}")


def _create(path: str, mode: int, append: bool) -> int:
    """Create `path`, which must not exist (not even as a dangling link); its fd.
    append: every write lands at the end, whole, even when another process (the launched
    benchmark's output capture) appends to the same file."""
    fd = os.open(path, _FLAGS | (os.O_APPEND if append else 0), mode)
    try:
        os.fchmod(fd, mode)   # the umask took bits away from what was asked
    except OSError:
        os.close(fd)
        raise
    return fd


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
