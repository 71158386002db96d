"""Which probe object this kernel can run: the fast one, or the compatible one (Linux 5.8+).

Chosen by asking the kernel, never by reading its version: a distribution kernel carries
back-ported features under an old number, and a custom one may lack what its number
promises. Each feature is probed the way the load itself would meet it: helpers and map types
by libbpf's own probes (it loads a two-instruction program or creates a one-entry map), the
kfunc and the tracepoint arguments from the kernel's BTF (what libbpf and the verifier read).

`IOWITNESS_PROBE=fast|compat|auto` (or `--probe`) overrides the choice; the kernel test tier
sets it to run its recording tests through the compatible object (tests/kernel/conftest.py).
"""

from __future__ import annotations

import array
import functools
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from iowitness import probes
from iowitness.errors import CannotTrace, UsageError

BTF = Path("/sys/kernel/btf/vmlinux")
PATHS = ("auto", "fast", "compat")
ENV = "IOWITNESS_PROBE"

# uapi enum values (include/uapi/linux/bpf.h): stable numbers
_PROG_RAW_TRACEPOINT = 17
_MAP_RINGBUF, _MAP_TASK_STORAGE = 27, 29

# (what, probe, the Linux version that brought it: probes/kernel_versions.py is the checked table)
# fast object only; without one of them the compatible object is loaded
FAST_NEEDS = (
    ("the bpf_rdonly_cast kfunc", ("kfunc", "bpf_rdonly_cast"), "6.2"),
    ("task storage maps", ("map", _MAP_TASK_STORAGE), "5.11"),
    ("bpf_task_storage_get in tracing programs", ("helper", 156), "5.12"),
    ("bpf_get_current_task_btf", ("helper", 158), "5.11"),
    ("bpf_for_each_map_elem", ("helper", 164), "5.13"),
    ("bpf_loop", ("helper", 181), "5.17"),
    ("bpf_map_lookup_percpu_elem", ("helper", 195), "5.19"),
    ("sched_switch's prev_state argument", ("tracepoint_args", "sched_switch", 4), "5.18"),
)
# both objects; without one of them nothing can be loaded
BOTH_NEED = (
    ("BPF ring buffers", ("map", _MAP_RINGBUF), "5.8"),
    ("bpf_ringbuf_reserve", ("helper", 131), "5.8"),
    ("bpf_probe_read_kernel", ("helper", 113), "5.5"),
    ("BTF-typed raw tracepoints (tp_btf) on sys_enter", ("tracepoint_args", "sys_enter", 2), "5.5"),
)


@dataclass
class Choice:
    path: str                 # "fast" or "compat"
    object: Path
    why: str                  # in words, for doctor and the trace's metadata
    missing: list[str] = field(default_factory=list)   # fast-path features this kernel lacks


# BTF kinds (include/uapi/linux/btf.h) and the 4-byte words that follow each type's 3-word header
_TYPEDEF, _PTR, _FUNC, _FUNC_PROTO = 8, 2, 12, 13
_EXTRA_FIXED = {1: 1, 3: 3, 14: 1, 17: 1}
_EXTRA_PER_MEMBER = {4: 3, 5: 3, 6: 2, 13: 2, 15: 3, 19: 3}


@functools.lru_cache(maxsize=1)
def _btf_index() -> tuple[dict[str, list[tuple[int, int, int]]], list[tuple[int, int, int]]]:
    """The kernel's BTF as {name: [(kind, vlen, type)]} for typedefs and functions, and every
    type by id. One pass over ~130,000 types: words, not struct.unpack, keep it near 0.3 s."""
    data = BTF.read_bytes()
    magic, _version, _flags, hdr_len, type_off, type_len, str_off, _str_len = struct.unpack_from("<HBBIIIII", data)
    if magic != 0xEB9F:
        raise CannotTrace(f"{BTF} is not BTF (magic {magic:#x})")
    strings = hdr_len + str_off
    words = array.array("I", data[hdr_len + type_off:hdr_len + type_off + type_len])
    fixed = [_EXTRA_FIXED.get(k, 0) for k in range(32)]
    per_member = [_EXTRA_PER_MEMBER.get(k, 0) for k in range(32)]
    by_id: list[tuple[int, int, int]] = [(0, 0, 0)]
    named: list[tuple[int, tuple[int, int, int]]] = []
    at, end = 0, len(words)
    while at < end:
        info = words[at + 1]
        kind, vlen = (info >> 24) & 0x1F, info & 0xFFFF
        entry = (kind, vlen, words[at + 2])
        by_id.append(entry)
        if kind == _TYPEDEF or kind == _FUNC:
            named.append((words[at], entry))
        at += 3 + fixed[kind] + vlen * per_member[kind]
    names: dict[str, list[tuple[int, int, int]]] = {}
    for name_off, entry in named:
        start = strings + name_off
        names.setdefault(data[start:data.index(b"\0", start)].decode(), []).append(entry)
    return names, by_id


def tracepoint_args(name: str) -> int:
    """How many arguments the kernel's tracepoint `name` gives a tp_btf program (its
    btf_trace_<name> typedef, minus the context pointer); 0 when there is no such tracepoint."""
    names, by_id = _btf_index()
    for kind, _vlen, target in names.get(f"btf_trace_{name}", []):
        if kind != _TYPEDEF:
            continue
        ptr = by_id[target]
        if ptr[0] == _PTR and by_id[ptr[2]][0] == _FUNC_PROTO:
            return by_id[ptr[2]][1] - 1
    return 0


def has_kfunc(name: str) -> bool:
    """The kernel's BTF has the function, which is how libbpf resolves a __ksym kfunc."""
    return any(kind == _FUNC for kind, _, _ in _btf_index()[0].get(name, []))


def _probe(what: tuple) -> bool:
    from iowitness.collector import libbpf

    if not BTF.exists():
        return False
    kind = what[0]
    if kind == "kfunc":
        return has_kfunc(what[1])
    if kind == "tracepoint_args":
        return tracepoint_args(what[1]) >= what[2]
    if kind == "map":
        return libbpf.probe_map_type(what[1])
    return libbpf.probe_helper(_PROG_RAW_TRACEPOINT, what[1])


def missing(needs) -> list[str]:
    """The features of `needs` this kernel lacks, each "what (Linux X)"."""
    return [f"{what} (Linux {version})" for what, probe, version in needs if not _probe(probe)]


def requested_path(option: str | None = None) -> str:
    value = option or os.environ.get(ENV) or "auto"
    if value not in PATHS:
        raise UsageError(f"the probe path must be one of {', '.join(PATHS)}, not {value!r}"
                         + (f" (from {ENV})" if not option else ""))
    return value


def choose(option: str | None = None) -> Choice:
    """The object to load here: fast when the kernel has all it needs, else compatible."""
    wanted = requested_path(option)
    lacking = missing(FAST_NEEDS)
    if wanted == "compat":
        return Choice("compat", probes.COMPAT_OBJECT, "compatible probe, asked for", lacking)
    if not lacking:
        return Choice("fast", probes.OBJECT, "fast probe: the kernel has every feature it uses")
    if wanted == "fast":
        raise CannotTrace(f"the fast probe cannot load here: the kernel lacks {'; '.join(lacking)}; "
                          "leave out --probe fast (the compatible probe is chosen by itself)")
    return Choice("compat", probes.COMPAT_OBJECT,
                  f"compatible probe: the kernel lacks {'; '.join(lacking)}", lacking)
