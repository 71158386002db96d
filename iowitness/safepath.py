"""Reaching the directory of an output without following a link someone else could have placed.

`iowitness run -o u/sub/t.iwt` as root, where another user made `u/sub` a link to a directory only
root may write, would put (or replace) root's file there. The kernel's fs.protected_symlinks stops
this only in sticky directories and only for the last component; here the same rule holds for
every component of every path iowitness writes: a symbolic link is followed only when it belongs
to root or to this user (the effective uid) and lies in a directory no other user can change (owned
by root or this user, and writable by no one else unless sticky, as /tmp is, where others cannot
remove it). A link root made itself (/var/run -> /run) is followed; one a user planted is refused.

The walk holds an O_PATH descriptor of each directory it reaches and opens the next component
relative to it with O_NOFOLLOW, so nothing can be swapped for a link between the check and the
use: the output is then created, checked and renamed relative to the last descriptor
(iowitness/outputfile.py).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import stat
from collections import deque

MAX_LINKS = 40   # as the kernel's path walk (ELOOP beyond)
_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2


class Refused(Exception):
    """A component of the path is a link another user could have placed: the reason, one phrase."""


def trusted(uid: int) -> bool:
    return uid in (0, os.geteuid())


def open_folder(folder: str) -> int:
    """An O_PATH descriptor of `folder` ("" is the working directory), reached component by
    component; a link is followed only when trusted (module docstring), else Refused. Other
    failures are the OSError of the component that failed (FileNotFoundError, NotADirectoryError)."""
    fd = os.open("/" if folder.startswith("/") else ".", _DIR_FLAGS)
    parts, walked, links = deque(folder.split("/")), "/" if folder.startswith("/") else "", 0
    try:
        while parts:
            part = parts.popleft()
            if part in ("", "."):
                continue
            try:
                following = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise
                found = os.stat(part, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISLNK(found.st_mode):
                    raise NotADirectoryError(errno.ENOTDIR,
                                             f"{os.path.join(walked, part)} is not a directory") from None
                _vet_link(fd, found, os.path.join(walked, part))
                links += 1
                if links > MAX_LINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP)) from None
                target = os.readlink(part, dir_fd=fd)
                if target.startswith("/"):
                    os.close(fd)
                    fd, walked = os.open("/", _DIR_FLAGS), "/"
                parts.extendleft(reversed(target.split("/")))
                continue
            os.close(fd)
            fd, walked = following, os.path.join(walked, part)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _vet_link(folder_fd: int, link: os.stat_result, shown: str) -> None:
    if not trusted(link.st_uid):
        raise Refused(f"{shown} is a symbolic link of another user (uid {link.st_uid}), who could point it "
                      "anywhere")
    held = os.fstat(folder_fd)
    others_write = held.st_mode & 0o002 or (held.st_mode & 0o020 and held.st_gid != 0)
    if not trusted(held.st_uid) or (others_write and not held.st_mode & stat.S_ISVTX):
        raise Refused(f"{shown} is a symbolic link in a directory another user can change, who could "
                      "point it anywhere")


_libc = None


def renameat2(folder_fd: int, old: str, new: str, flags: int) -> None:
    """renameat2(2) within one directory; OSError(EINVAL/ENOSYS) where the file system or the C
    library has no such flag (the caller then falls back to rename(2))."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    call = getattr(_libc, "renameat2", None)
    if call is None:
        raise OSError(errno.ENOSYS, "renameat2 is not in this C library")
    if call(folder_fd, os.fsencode(old), folder_fd, os.fsencode(new), ctypes.c_uint(flags)) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def kind(mode: int) -> str:
    """What a file that is not a regular one is, for a message."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"
