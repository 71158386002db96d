"""libbpf through ctypes: open → set settings → load → attach, each step named when it fails.

Only the handful of libbpf calls iowitness needs are declared here. The fixed load order
follows libbpf-bootstrap: settings are `const volatile` globals written between open and
load, so the verifier sees them as constants and prunes the branches they switch off.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from pathlib import Path

from iowitness.errors import CannotTrace

_c = ctypes
_vp = _c.c_void_p


def _load_library():
    for name in ("libbpf.so.1", ctypes.util.find_library("bpf")):
        if not name:
            continue
        try:
            return _c.CDLL(name, use_errno=True)
        except OSError:
            continue
    raise CannotTrace("libbpf is not installed; install it with: apt-get install libbpf1 (scripts/setup.sh does)")


_PRINT_FN = _c.CFUNCTYPE(_c.c_int, _c.c_int, _c.c_char_p, _vp)
_lib = None
_libc = _c.CDLL(None, use_errno=True)
_libc.vsnprintf.argtypes = [_c.c_char_p, _c.c_size_t, _c.c_char_p, _vp]
_log: list[str] = []


@_PRINT_FN
def _collect_log(level, fmt, va_list):
    # libbpf hands a printf format and a va_list; let libc format it
    buf = _c.create_string_buffer(1024)
    _libc.vsnprintf(buf, len(buf), fmt, va_list)
    _log.append(buf.value.decode(errors="replace"))
    del _log[:-200]
    return 0


def lib():
    global _lib
    if _lib is None:
        _lib = _load_library()
        sig = {
            "libbpf_set_print": (_vp, [_PRINT_FN]),
            "bpf_object__open_file": (_vp, [_c.c_char_p, _vp]),
            "bpf_object__load": (_c.c_int, [_vp]),
            "bpf_object__close": (None, [_vp]),
            "bpf_object__find_map_by_name": (_vp, [_vp, _c.c_char_p]),
            "bpf_object__next_program": (_vp, [_vp, _vp]),
            "bpf_program__name": (_c.c_char_p, [_vp]),
            "bpf_program__attach": (_vp, [_vp]),
            "bpf_object__find_program_by_name": (_vp, [_vp, _c.c_char_p]),
            "bpf_program__set_autoload": (_c.c_int, [_vp, _c.c_bool]),
            "bpf_program__autoload": (_c.c_bool, [_vp]),
            "bpf_link__destroy": (_c.c_int, [_vp]),
            "bpf_map__set_max_entries": (_c.c_int, [_vp, _c.c_uint32]),
            "bpf_map__set_initial_value": (_c.c_int, [_vp, _c.c_char_p, _c.c_size_t]),
            "bpf_map__fd": (_c.c_int, [_vp]),
            "bpf_map_update_elem": (_c.c_int, [_c.c_int, _c.c_char_p, _c.c_char_p, _c.c_uint64]),
            "bpf_map_lookup_elem": (_c.c_int, [_c.c_int, _c.c_char_p, _c.c_char_p]),
            "bpf_map_delete_elem": (_c.c_int, [_c.c_int, _c.c_char_p]),
            "bpf_map_get_next_key": (_c.c_int, [_c.c_int, _c.c_char_p, _c.c_char_p]),
            "libbpf_num_possible_cpus": (_c.c_int, []),
            "bpf_program__fd": (_c.c_int, [_vp]),
            "bpf_obj_get_info_by_fd": (_c.c_int, [_c.c_int, _vp, _c.POINTER(_c.c_uint32)]),
            "bpf_enable_stats": (_c.c_int, [_c.c_int]),
            "libbpf_probe_bpf_helper": (_c.c_int, [_c.c_int, _c.c_int, _vp]),
            "libbpf_probe_bpf_map_type": (_c.c_int, [_c.c_int, _vp]),
        }
        for name, (restype, argtypes) in sig.items():
            fn = getattr(_lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        _lib.libbpf_set_print(_collect_log)
    return _lib


def _why(err: int) -> str:
    return os.strerror(abs(err)) if err else "unknown error"


def _log_tail(lines: int = 6) -> str:
    text = " | ".join(line.strip() for line in _log[-lines:] if line.strip())
    return f" (libbpf: {text})" if text else ""


class Map:
    """A loaded BPF map, addressed by its fd; keys and values are bytes."""

    def __init__(self, name: str, fd: int):
        self.name, self.fd = name, fd

    def update(self, key: bytes, value: bytes) -> None:
        if lib().bpf_map_update_elem(self.fd, key, value, 0) != 0:
            err = _c.get_errno()
            raise CannotTrace(f"cannot fill BPF map {self.name}: {_why(err)}"
                              + ("; the map is full" if err == errno.E2BIG else ""))

    def lookup(self, key: bytes, value_size: int) -> bytes | None:
        buf = _c.create_string_buffer(value_size)
        if lib().bpf_map_lookup_elem(self.fd, key, buf) != 0:
            return None
        return buf.raw

    def delete(self, key: bytes) -> None:
        lib().bpf_map_delete_elem(self.fd, key)

    def keys(self, key_size: int) -> list[bytes]:
        found, prev, nxt = [], None, _c.create_string_buffer(key_size)
        while lib().bpf_map_get_next_key(self.fd, prev, nxt) == 0:
            found.append(nxt.raw)
            prev = nxt.raw
        return found


class BpfObject:
    """One BPF object file through its whole life: open, configure, load, attach, close."""

    def __init__(self, path: Path):
        if not Path(path).exists():
            raise CannotTrace(f"BPF probe {path} is missing; rebuild it with: make -C probes "
                              "(or reinstall iowitness: pip install .)")
        _log.clear()
        self._obj = lib().bpf_object__open_file(str(path).encode(), None)
        if not self._obj:
            raise CannotTrace(f"opening BPF probe {path} failed: {_why(_c.get_errno())}{_log_tail()}")
        self._links: list[int] = []
        self._loaded = False

    def _map_ptr(self, name: str):
        ptr = lib().bpf_object__find_map_by_name(self._obj, name.encode())
        if not ptr:
            raise CannotTrace(f"BPF probe has no map {name}; the probe and iowitness do not match, reinstall")
        return ptr

    def set_max_entries(self, name: str, entries: int) -> None:
        if lib().bpf_map__set_max_entries(self._map_ptr(name), entries) != 0:
            raise CannotTrace(f"cannot size BPF map {name} to {entries}: {_why(_c.get_errno())}")

    def set_initial_value(self, name: str, data: bytes) -> None:
        if lib().bpf_map__set_initial_value(self._map_ptr(name), data, len(data)) != 0:
            raise CannotTrace(f"cannot set BPF settings in {name}: {_why(_c.get_errno())}; "
                              "the probe and iowitness do not match, reinstall")

    def skip_program(self, name: str) -> None:
        """Neither load nor attach this program (before load): its tracepoint is missing here."""
        prog = lib().bpf_object__find_program_by_name(self._obj, name.encode())
        if prog:
            lib().bpf_program__set_autoload(prog, False)

    def load(self) -> None:
        err = lib().bpf_object__load(self._obj)
        if err:
            hint = ""
            if abs(err) in (errno.EPERM, errno.EACCES):
                hint = "; run as root (BPF needs CAP_BPF and CAP_PERFMON)"
            elif abs(err) == errno.ENOMEM:
                hint = "; the kernel could not allocate the probe's maps: try a smaller --ring-buffer-mb"
            raise CannotTrace(f"loading the BPF probe into the kernel failed: {_why(err)}{hint}{_log_tail()}")
        self._loaded = True

    def map(self, name: str) -> Map:
        fd = lib().bpf_map__fd(self._map_ptr(name))
        if fd < 0:
            raise CannotTrace(f"BPF map {name} has no fd: {_why(fd)}")
        return Map(name, fd)

    def attach_all(self, first: tuple[str, ...] = (), never: tuple[str, ...] = ()) -> list[str]:
        """Attach every loaded program: those named in `first` before the others, in that
        order (a program that keeps state the others rely on must see everything they see);
        those named in `never` stay loaded and unattached (another program tail-calls them)."""
        programs, prog = [], None
        while True:
            prog = lib().bpf_object__next_program(self._obj, prog)
            if not prog:
                break
            programs.append((lib().bpf_program__name(prog).decode(), prog))
        rank = {name: i for i, name in enumerate(first)}
        programs.sort(key=lambda p: rank.get(p[0], len(rank)))
        names = []
        for name, prog in programs:
            if not lib().bpf_program__autoload(prog) or name in never:
                continue
            link = lib().bpf_program__attach(prog)
            if not link:
                raise CannotTrace(f"attaching BPF program {name} failed: {_why(_c.get_errno())}"
                                  f"{_log_tail()}; run `iowitness doctor`")
            self._links.append(link)
            names.append(name)
        return names

    def program_stats(self) -> dict[str, dict]:
        """The kernel's own measure of each loaded program: runs and time spent in it (counted
        only while BPF statistics are enabled, see enable_stats; zeros otherwise), and the runs
        it skipped because the program was already running on that CPU (always counted)."""
        stats, prog = {}, None
        while True:
            prog = lib().bpf_object__next_program(self._obj, prog)
            if not prog:
                return stats
            info = _c.create_string_buffer(_PROG_INFO_SIZE)
            size = _c.c_uint32(_PROG_INFO_SIZE)
            if lib().bpf_obj_get_info_by_fd(lib().bpf_program__fd(prog), info, _c.byref(size)) != 0:
                continue
            field = lambda at: _c.c_uint64.from_buffer(info, at).value  # noqa: E731
            stats[lib().bpf_program__name(prog).decode()] = {
                "run_time_ns": field(_RUN_TIME_AT), "run_cnt": field(_RUN_CNT_AT),
                "recursion_misses": field(_RECURSION_MISSES_AT)}

    def verified_instructions(self) -> dict[str, int]:
        """Per loaded program, the instructions the kernel's verifier walked to accept it (its
        limit is 1,000,000; Linux 5.16 and later, 0 before): how far a program is from a
        verifier that prunes less refusing it."""
        counts, prog = {}, None
        while True:
            prog = lib().bpf_object__next_program(self._obj, prog)
            if not prog:
                return counts
            if lib().bpf_program__fd(prog) < 0:
                continue
            info = _c.create_string_buffer(_PROG_INFO_SIZE)
            size = _c.c_uint32(_PROG_INFO_SIZE)
            if lib().bpf_obj_get_info_by_fd(lib().bpf_program__fd(prog), info, _c.byref(size)) == 0:
                counts[lib().bpf_program__name(prog).decode()] = _c.c_uint32.from_buffer(info, _VERIFIED_AT).value

    def close(self) -> None:
        for link in self._links:
            lib().bpf_link__destroy(link)
        self._links.clear()
        if self._obj:
            lib().bpf_object__close(self._obj)
            self._obj = None


# struct bpf_prog_info (include/uapi/linux/bpf.h, a stable ABI): run_time_ns and run_cnt
# sit at these offsets since Linux 5.1, recursion_misses since 5.12, verified_insns (a __u32)
# since 5.16 (an older kernel leaves them 0); the kernel fills what fits in the size we pass
_RUN_TIME_AT, _RUN_CNT_AT, _RECURSION_MISSES_AT, _VERIFIED_AT, _PROG_INFO_SIZE = 192, 200, 208, 216, 224
VERIFIER_LIMIT = 1_000_000   # instructions the kernel's verifier walks before it refuses a program
_BPF_STATS_RUN_TIME = 0


def enable_stats() -> int | None:
    """Turn on the kernel's per-program run time and count for as long as the returned fd
    is open (BPF_ENABLE_STATS, Linux 5.8); None when the kernel refuses.

    While on, every BPF program on the machine pays two clock reads per run; the sysctl
    kernel.bpf_stats_enabled does the same for everyone until it is turned off again.
    """
    fd = lib().bpf_enable_stats(_BPF_STATS_RUN_TIME)
    return fd if fd >= 0 else None


def stats_enabled_by_sysctl() -> bool:
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


def probe_helper(prog_type: int, helper: int) -> bool:
    """Does the kernel let a program of this type call this helper (libbpf loads a tiny one)?"""
    return lib().libbpf_probe_bpf_helper(prog_type, helper, None) == 1


def probe_map_type(map_type: int) -> bool:
    """Can the kernel create a map of this type (libbpf creates a one-entry one)?"""
    return lib().libbpf_probe_bpf_map_type(map_type, None) == 1


def possible_cpus() -> int:
    return lib().libbpf_num_possible_cpus()
