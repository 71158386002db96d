"""Where a recorded file goes inside DIR, and the only code that creates anything there.

A trace from elsewhere is data, not instructions. Its paths are mapped, never followed:
each is made absolute (a relative one joined to the run's cwd, or put under `at-dirfd-N/` when
it was relative to a directory fd the trace cannot name), normalised lexically (`..` cannot
climb above `/`), and placed under DIR relative to the deepest directory every recorded file
shares. Inside DIR every directory is walked one component at a time with O_NOFOLLOW from
DIR's own fd, so a symlink planted inside DIR is refused, not followed; a file that exists is
refused unless --force (then it is removed and made anew, a symlink never).
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat

from iowitness.errors import OutputError, UsageError

AT_FDCWD = -100
NAME_MAX = 255
PATH_MAX = 4096
# a plan names at most this many files (a hostile trace cannot make it create without bound)
MAX_FILES = 100_000
# what a replay writes where the trace recorded no data: this text, repeated (player.c too)
PATTERN = b"iowitness replay: data was not recorded, this is its stand-in. "


def absolute(path: str, dirfd: int, cwd: str | None) -> str:
    """The recorded path as an absolute, lexically normal path (a pseudo one for a dirfd)."""
    if not path.startswith("/"):
        if dirfd == AT_FDCWD and cwd and cwd.startswith("/"):
            path = f"{cwd}/{path}"
        elif dirfd == AT_FDCWD:
            path = f"/cwd/{path}"
        else:
            path = f"/at-dirfd-{dirfd}/{path}"
    # "/" first: normpath of an absolute path cannot climb above it ("/../../etc" is "/etc")
    return posixpath.normpath("/" + path.lstrip("/"))


def relative_layout(paths: list[str]) -> list[str]:
    """Each absolute path's place under DIR: relative to the deepest directory all share."""
    if not paths:
        return []
    if len(paths) > MAX_FILES:
        raise UsageError(f"the trace names {len(paths):,} files, more than a replay creates ({MAX_FILES:,})")
    root = posixpath.commonpath([posixpath.dirname(p) for p in paths])
    out = []
    for p in paths:
        rel = posixpath.relpath(p, root)
        parts = rel.split("/")
        if rel in ("", ".") or any(part in ("", ".", "..") for part in parts):
            raise UsageError(f"the trace's file {p!r} has no name a replay can give it")
        for part in parts:
            if len(part.encode("utf-8", "surrogateescape")) > NAME_MAX:
                raise UsageError(f"the trace's file {p!r} has a name longer than {NAME_MAX} bytes")
        if len(rel.encode("utf-8", "surrogateescape")) > PATH_MAX // 2:
            raise UsageError(f"the trace's file {p!r} is nested too deep to replay")
        out.append(rel)
    files = set(out)
    for rel in out:
        parts = rel.split("/")
        for k in range(1, len(parts)):
            if "/".join(parts[:k]) in files:
                raise UsageError(f"the trace names {'/'.join(parts[:k])!r} both as a file and as a directory "
                                 "of another file; a replay cannot make both")
    return out


def directories(rels: list[str]) -> list[str]:
    """Every directory the files need, parents first ("" is DIR itself)."""
    found = {""}
    for rel in rels:
        parts = rel.split("/")[:-1]
        for k in range(1, len(parts) + 1):
            found.add("/".join(parts[:k]))
    return sorted(found, key=lambda d: (d.count("/") if d else -1, d))


def open_into(into: str, create: bool) -> int:
    """DIR's fd (DIR made when `create` and missing; DIR itself is the user's word, so a
    symlink there is followed once, on purpose)."""
    if create:
        try:
            os.makedirs(into, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create {into}: {exc.strerror}") from None
    try:
        return os.open(into, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise OutputError(f"{into} does not exist") from None
    except NotADirectoryError:
        raise UsageError(f"--into {into} is not a directory") from None
    except OSError as exc:
        raise OutputError(f"cannot open {into}: {exc.strerror}") from None


def walk(into_fd: int, into: str, rel_dir: str, create: bool) -> int | None:
    """The fd of DIR/rel_dir, reached one component at a time, never through a symlink;
    None when a component is missing and `create` is false."""
    fd = os.dup(into_fd)
    done = into
    try:
        for part in [p for p in rel_dir.split("/") if p]:
            done = f"{done}/{part}"
            if create:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                if create:
                    raise
                os.close(fd)
                return None
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UsageError(f"{done} is a symlink or not a directory: refused, a replay writes only "
                                     "inside --into and never through a symlink") from None
                raise OutputError(f"cannot open {done}: {exc.strerror}") from None
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def check(into: str, rels: list[str], force: bool) -> None:
    """Refuse, before anything is created, what a replay would overwrite or follow."""
    if not os.path.exists(into):
        return
    into_fd = open_into(into, create=False)
    try:
        dir_fds = {}
        for d in directories(rels):
            dir_fds[d] = walk(into_fd, into, d, create=False)
        try:
            for rel in rels:
                d, name = posixpath.split(rel)
                fd = dir_fds[d]
                if fd is None:
                    continue
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                where = f"{into}/{rel}"
                if stat.S_ISLNK(st.st_mode):
                    raise UsageError(f"{where} is a symlink: refused, a replay never writes through one")
                if not stat.S_ISREG(st.st_mode):
                    raise UsageError(f"{where} exists and is not a regular file: refused")
                if not force:
                    raise UsageError(f"{where} exists: a replay does not overwrite it without --force")
        finally:
            for fd in dir_fds.values():
                if fd is not None:
                    os.close(fd)
    finally:
        os.close(into_fd)


def prepare(into: str, rels: list[str], sizes: list[int], precreate: list[bool], force: bool,
            cold: list[bool] | None = None) -> list[str]:
    """Make DIR's directories and the files the trace found already there (`precreate`), each
    `sizes` bytes of PATTERN, written to disk, and out of the page cache where `cold` says the
    original found it so; a file the trace creates itself is only removed (--force). The
    directories made, as absolute paths (the probe's file set)."""
    check(into, rels, force)
    into_fd = open_into(into, create=True)
    made = []
    try:
        dir_fds: dict[str, int] = {}
        for d in directories(rels):
            fd = walk(into_fd, into, d, create=True)
            assert fd is not None   # create=True makes every missing component
            dir_fds[d] = fd
        try:
            for k, (rel, size, pre) in enumerate(zip(rels, sizes, precreate)):
                d, name = posixpath.split(rel)
                _make_file(dir_fds[d], name, f"{into}/{rel}", size if pre else None, force,
                           bool(cold and cold[k]))
        finally:
            for fd in dir_fds.values():
                os.close(fd)
        made = [os.path.join(os.path.realpath(into), d) if d else os.path.realpath(into) for d in directories(rels)]
    finally:
        os.close(into_fd)
    return made


def _make_file(dir_fd: int, name: str, where: str, size: int | None, force: bool, cold: bool = False) -> None:
    if force:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None:
            if not stat.S_ISREG(st.st_mode):
                raise UsageError(f"{where} exists and is not a regular file: refused")
            os.unlink(name, dir_fd=dir_fd)
    if size is None:
        return
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
    except FileExistsError:
        raise UsageError(f"{where} appeared while the replay was preparing it: refused") from None
    except OSError as exc:
        raise OutputError(f"cannot create {where}: {exc.strerror}") from None
    try:
        chunk = PATTERN * 1024
        left = size
        while left > 0:
            left -= os.write(fd, chunk[:min(left, len(chunk))])
        os.fsync(fd)
        if cold:   # its pages are clean now: dropped, as the original found the file
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError as exc:
        raise OutputError(f"cannot write {where}: {exc.strerror}") from None
    finally:
        os.close(fd)
