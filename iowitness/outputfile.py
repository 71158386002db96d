"""Creating output files safely when running as root: every file iowitness writes comes from here.

The rule (docs/outputs-and-safety.md): a file is never opened through a name someone else may have
planted. Each output is created fresh, with O_CREAT|O_EXCL|O_NOFOLLOW, under a random
temporary name in the destination's directory, then renamed onto the destination, all relative to the
destination's directory, reached without following a link another user could have placed
(iowitness/safepath.py). Only a regular file is ever replaced: a destination that is a symlink
is refused (exit 5), since the user may have meant its target, and so is a device node, a FIFO
or a socket (`-o /dev/null` must not turn the system's /dev/null into a file); the rename swaps
atomically (renameat2 RENAME_EXCHANGE) and puts back whatever took the name meanwhile. New
files get mode 0600 (a trace holds the command line,
every traced path and the benchmark's output), or exactly the `--mode` given: the umask does
not apply, so the mode asked for is the mode on disk. Under `sudo`, every output belongs to the user
who ran sudo (SUDO_UID, SUDO_GID), so that they can read what they asked for.
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import stat

from iowitness import safepath
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
        folder, name = self._place()
        try:
            self._vet(folder, name)
        finally:
            os.close(folder)

    def check_folder(self) -> None:
        os.close(self._place()[0])

    def write(self, produce) -> None:
        """Make the whole file by calling produce(binary file object), under a temporary name
        renamed onto the destination at the end: no half-written output, no link followed;
        nothing is left behind when it fails."""
        folder, name = self._place()
        try:
            self._vet(folder, name)
            fd, temporary = self._temporary(folder, name, append=False)
            try:
                with os.fdopen(fd, "wb") as f:
                    produce(f)
                self._install(folder, temporary, name)
            except BaseException as exc:
                _remove(folder, temporary)
                if isinstance(exc, OSError):
                    raise self.error(exc.strerror or str(exc)) from None
                raise
        finally:
            os.close(folder)

    def write_text(self, text: str) -> None:
        # backslashreplace: text from a trace may hold undecodable bytes (surrogates) yet
        # every escaper shows them; this is the last guard, never a traceback
        self.write(lambda f: f.write(text.encode("utf-8", errors="backslashreplace")))

    def open_growing(self) -> int:
        """For a file written while a run goes (the trace): an fd, opened O_APPEND and locked
        (flock LOCK_EX, as the trace writer holds it for its life), of a new empty file that
        already holds the destination's name, so a run killed at any moment leaves its file there.
        Made under a temporary name and renamed at once: an old file of that name is replaced
        (as O_TRUNC did) without ever being opened for writing; one another run is still writing
        is refused (two runs never write one file)."""
        folder, name = self._place()
        try:
            self._vet(folder, name)
            fd, temporary = self._temporary(folder, name, append=True)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    pass   # a file system without locks: the run's end still checks its name
                self._install(folder, temporary, name, recording=True)
            except BaseException as exc:
                os.close(fd)
                _remove(folder, temporary)
                if isinstance(exc, OSError):
                    raise self.error(exc.strerror or str(exc)) from None
                raise
            return fd
        finally:
            os.close(folder)

    def open_numbered(self) -> tuple[int, str]:
        """For a default name: a file no other holds, `NAME.iwt`, else `NAME-2.iwt`, `NAME-3.iwt`...
        each created exclusively, so two runs that pick a name at the same moment get one each; a
        name held by anything, a planted link included, is passed over. (fd opened O_APPEND, path)."""
        folder = self._place()[0]
        stem, suffix = os.path.splitext(self.path)
        try:
            for n in range(1, _TRIES + 1):
                path = f"{stem}-{n}{suffix}" if n > 1 else self.path
                try:
                    return _create(folder, os.path.basename(path), self.mode, append=True), path
                except FileExistsError:
                    continue
                except OSError as exc:
                    raise self.error(exc.strerror or str(exc)) from None
            raise self.error(f"{_TRIES} files of that name exist already")
        finally:
            os.close(folder)

    def _place(self) -> tuple[int, str]:
        """(an O_PATH fd of the destination's directory, reached without an untrusted link; the
        file's name in it)."""
        folder, name = os.path.split(self.path)
        if name in ("", ".", ".."):
            raise self.error("it is a directory", "give a file name or ")
        shown = os.path.dirname(os.path.abspath(self.path)) or "/"
        try:
            fd = safepath.open_folder(folder)
        except safepath.Refused as exc:
            raise self.error(str(exc), "give the directory itself, remove the link or ") from None
        except FileNotFoundError:
            raise self.error(f"no such directory {shown}", "create it or ") from None
        except NotADirectoryError as exc:
            raise self.error(str(exc.strerror) if "is not a directory" in str(exc.strerror) else
                             f"{shown} is not a directory") from None
        except OSError as exc:
            raise self.error(f"{shown}: {exc.strerror or exc}") from None
        if not os.access(".", os.W_OK, dir_fd=fd):
            os.close(fd)
            raise self.error(f"directory {shown} is not writable")
        return fd, name

    def _vet(self, folder: int, name: str) -> os.stat_result | None:
        """What the destination holds now: None (nothing) or a regular file; anything else refused."""
        try:
            found = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self.error(exc.strerror or str(exc)) from None
        if stat.S_ISLNK(found.st_mode):
            raise self.error("it is a symbolic link, and iowitness never writes through one (it could "
                             "point anywhere)", "remove it or ")
        if stat.S_ISDIR(found.st_mode):
            raise self.error("it is a directory", "give a file name or ")
        if not stat.S_ISREG(found.st_mode):
            raise self.error(f"it is {safepath.kind(found.st_mode)}, not a regular file, and iowitness "
                             "never replaces one", "")
        return found

    def _install(self, folder: int, temporary: str, name: str, recording: bool = False) -> None:
        """Rename the finished temporary file onto `name`: onto nothing (RENAME_NOREPLACE) or by
        swapping with a regular file (RENAME_EXCHANGE) that is then removed, so whatever took the
        name meanwhile (a device node, a FIFO, a link) is put back, never replaced. recording: a
        trace another run is still writing (it holds its lock) is refused."""
        for _ in range(_TRIES):
            old = self._vet(folder, name)
            if old is not None and recording and _being_recorded(folder, name):
                raise self.error("another iowitness run is recording into it now", "wait for it or ")
            try:
                safepath.renameat2(folder, temporary, name,
                                   safepath.RENAME_NOREPLACE if old is None else safepath.RENAME_EXCHANGE)
            except (FileExistsError, FileNotFoundError):
                continue   # the name was taken, or freed, since it was looked at: look again
            except OSError as exc:
                if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
                    raise
                self._vet(folder, name)   # no such rename here (NFS, an old kernel): checked, then replaced
                os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
                return
            if old is None:
                return
            swapped = os.stat(temporary, dir_fd=folder, follow_symlinks=False)
            if stat.S_ISREG(swapped.st_mode):
                _remove(folder, temporary)
                return
            safepath.renameat2(folder, temporary, name, safepath.RENAME_EXCHANGE)   # put it back
            raise self.error(f"it became {safepath.kind(swapped.st_mode)} while being written", "")
        raise self.error("its name kept changing while being written")

    def _temporary(self, folder: int, base: str, append: bool) -> tuple[int, str]:
        """A new file of a random name in the destination's directory: (fd, its name there)."""
        for _ in range(_TRIES):
            name = f".{base}.{secrets.token_hex(6)}.part"
            try:
                return _create(folder, name, self.mode, append), name
            except FileExistsError:
                continue
            except OSError as exc:
                raise self.error(exc.strerror or str(exc)) from None
        raise self.error(f"no free temporary name in {os.path.dirname(os.path.abspath(self.path))}")


def make_folder(path: str, mode: int) -> None:
    """os.makedirs(path, mode, exist_ok=True), each directory reached without an untrusted link
    (safepath.Refused) and the last one refused when it is a link or no directory (OSError)."""
    parent, name = os.path.split(path.rstrip("/"))
    if name in ("", ".", ".."):
        return
    try:
        folder = safepath.open_folder(parent)
    except FileNotFoundError:
        make_folder(parent, mode)
        folder = safepath.open_folder(parent)
    try:
        try:
            os.mkdir(name, mode, dir_fd=folder)
            owner = sudo_user()
            if owner is not None:   # as the files in it: the user who ran sudo can reach them
                os.chown(name, *owner, dir_fd=folder, follow_symlinks=False)
        except FileExistsError:
            found = os.stat(name, dir_fd=folder, follow_symlinks=False)
            if not stat.S_ISDIR(found.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, f"{path} is {safepath.kind(found.st_mode)}") from None
    finally:
        os.close(folder)


def still_holds(path: str, fd: int) -> bool:
    """Whether `path` still names the file open as `fd` (another run, or a user, may have
    replaced or removed it while it was written): a run says "saved" only then."""
    try:
        named, held = os.stat(path, follow_symlinks=False), os.fstat(fd)
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _being_recorded(folder: int, name: str) -> bool:
    """Whether a trace writer holds `name` locked (collector/format/tracewriter.py, open_growing)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
                     dir_fd=folder)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


def _create(folder: int, name: str, mode: int, append: bool) -> int:
    """Create `name` in the directory open as `folder`, which must not exist (not even as a
    dangling link); its fd. append: every write lands at the end, whole, even when another
    process (the launched benchmark's output capture) appends to the same file."""
    fd = os.open(name, _FLAGS | (os.O_APPEND if append else 0), mode, dir_fd=folder)
    try:
        os.fchmod(fd, mode)   # the umask took bits away from what was asked
        owner = sudo_user()
        if owner is not None:
            os.fchown(fd, *owner)
    except OSError:
        os.close(fd)
        raise
    return fd


def sudo_user() -> tuple[int, int] | None:
    """(uid, gid) of the user who ran `sudo iowitness ...` (SUDO_UID, SUDO_GID), to whom root's
    outputs are given, with their mode kept (0600: that user reads them, no one else); None when
    not root under sudo."""
    if os.geteuid() != 0:
        return None
    try:
        uid, gid = int(os.environ["SUDO_UID"]), int(os.environ["SUDO_GID"])
    except (KeyError, ValueError):
        return None
    return (uid, gid) if 0 < uid < 2**32 - 1 and 0 <= gid < 2**32 - 1 else None


def _remove(folder: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=folder)
    except OSError:
        pass
