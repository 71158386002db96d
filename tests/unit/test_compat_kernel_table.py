"""Every kernel interface the compatible probe object uses existed in Linux 5.8.

Read out of the compiled objects themselves (llvm-objdump for sections, instructions and
relocations; bpftool for the maps' BTF), looked up in probes/kernel_versions.py, whose rows cite
where each version comes from. The fast object is read the same way, so a reader that saw
nothing would fail here too.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from iowitness import probes
from iowitness.probes import kernel_versions as kv

UAPI_BPF_H = Path("/usr/include/linux/bpf.h")
_INSN = re.compile(r"^\s*(\d+):\s+((?:[0-9a-f]{2} ){7}[0-9a-f]{2})")
_RELOC = re.compile(r"R_BPF_\w+\s+(\S+)")
_SECTION = re.compile(r"^Disassembly of section (\S+):")


def _tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(f"{name}-14")
    if not path:
        pytest.skip(f"{name} is not installed (scripts/setup.sh installs llvm and bpftool)")
    return path


def _object(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is not built (make -C probes)")
    return path


def uses(path: Path) -> dict[str, dict]:
    """What one object asks of the kernel: {category: {item: where it was seen}}."""
    found: dict[str, dict] = defaultdict(dict)
    text = subprocess.run([_tool("llvm-objdump"), "-d", "-r", str(path)], capture_output=True, text=True,
                          check=True).stdout
    section, last = None, None
    for line in text.splitlines():
        if m := _SECTION.match(line):
            section = m.group(1)
            for prefix in kv.PROGRAM_TYPES:
                if section.startswith(prefix):
                    found["program types"][prefix] = section
                    if prefix == "tp_btf/":
                        found["tracepoints"][section[len(prefix):]] = section
            continue
        if m := _RELOC.search(line):
            if last and last["op"] == 0x85 and last["src"] == 1 and not m.group(1).startswith("."):
                found["kfuncs" if m.group(1) in kv.KFUNCS or m.group(1).startswith("bpf_") else
                      "instructions"][m.group(1) if m.group(1) in kv.KFUNCS else "bpf-to-bpf call"] = section
            if last and last["op"] == 0x18 and m.group(1).startswith((".rodata", ".bss", ".data")):
                found["instructions"]["map value address (global data)"] = section
            continue
        if not (m := _INSN.match(line)):
            continue
        raw = bytes.fromhex(m.group(2).replace(" ", ""))
        op, regs = raw[0], raw[1]
        off = int.from_bytes(raw[2:4], "little", signed=True)
        imm = int.from_bytes(raw[4:8], "little", signed=True)
        last = {"op": op, "src": regs >> 4}
        cls, code, mode = op & 0x07, op & 0xF0, op & 0xE0
        if op == 0x85 and regs >> 4 == 0:
            found["helpers"][imm] = section
        elif op == 0x85 and regs >> 4 == 1 and imm != -1:
            found["instructions"]["bpf-to-bpf call"] = section
        elif cls == 0x03 and mode == 0xC0:
            found["instructions"]["atomic add (XADD)" if imm == 0 else
                                  "atomic fetch/xchg/cmpxchg/and/or/xor"] = section
        elif cls == 0x06:
            found["instructions"]["JMP32 class"] = section
            if code == 0x00:
                found["instructions"]["cpu v4 (sign extension, sdiv/smod, bswap, gotol)"] = section
        elif (cls == 0x01 and mode == 0x80) or op == 0xD7 or \
                (cls in (0x04, 0x07) and code in (0x30, 0x90, 0xB0) and off != 0):
            found["instructions"]["cpu v4 (sign extension, sdiv/smod, bswap, gotol)"] = section
        if cls in (0x05, 0x06) and code not in (0x80, 0x90) and off < 0:
            found["instructions"]["bounded loop (backward jump)"] = section
    _maps(path, found)
    return found


def _maps(path: Path, found: dict) -> None:
    """Map types and flags from the object's BTF: each map of `.maps` is a struct whose `type`
    and `map_flags` members point to arrays as long as the value (libbpf's __uint)."""
    dump = json.loads(subprocess.run([_tool("bpftool"), "-j", "btf", "dump", "file", str(path)],
                                     capture_output=True, text=True, check=True).stdout)
    types = {t["id"]: t for t in dump["types"]}

    def number(type_id: int) -> int:
        return types[types[type_id]["type_id"]]["nr_elems"]

    for sec in (t for t in dump["types"] if t["kind"] == "DATASEC"):
        if sec["name"] != ".maps":
            # global data: an array map the loader makes read-only to programs (.rodata) and
            # memory-mapped when the kernel allows it
            found["map types"][2] = sec["name"]
            if sec["name"].startswith(".rodata"):
                found["map flags"][0x80] = sec["name"]
            continue
        for var in sec["vars"]:
            v = types[var["type_id"]]
            members = {m["name"]: m["type_id"] for m in types[v["type_id"]]["members"]}
            found["map types"][number(members["type"])] = v["name"]
            flags = number(members["map_flags"]) if "map_flags" in members else 0
            for bit in kv.MAP_FLAGS:
                if flags & bit:
                    found["map flags"][bit] = v["name"]


def versions(found: dict) -> dict[str, tuple[int, int]]:
    """Every use with the version that introduced it; KeyError for one not in the table."""
    table = {"helpers": lambda k: kv.HELPERS[k][1], "kfuncs": lambda k: kv.KFUNCS[k][0],
             "map types": lambda k: kv.MAP_TYPES[k][1], "map flags": lambda k: kv.MAP_FLAGS[k][1],
             "program types": lambda k: kv.PROGRAM_TYPES[k][1], "instructions": lambda k: kv.INSTRUCTIONS[k][0],
             "tracepoints": lambda k: (0, 0) if kv.TRACEPOINTS[k][1] else kv.TRACEPOINTS[k][0] or (99, 0)}
    out = {}
    for category, items in found.items():
        for item in items:
            try:
                out[f"{category}: {item}"] = table[category](item)
            except KeyError:
                raise AssertionError(f"{category} {item!r} (used in {items[item]}) is not in "
                                     "probes/kernel_versions.py: add it with the version and its source")
    return out


def test_the_compatible_object_needs_nothing_after_linux_5_8():
    # GIVEN the compatible object as built
    obj = _object(probes.COMPAT_OBJECT)
    # WHEN every interface it uses is looked up
    needed = versions(uses(obj))
    # THEN none came after 5.8, and the reader did see the basics it must use
    too_new = {k: kv.version_text(v) for k, v in needed.items() if v > kv.COMPAT_FLOOR}
    assert not too_new, f"the compatible object needs kernels newer than 5.8 for: {too_new}"
    assert max(needed.values()) == kv.COMPAT_FLOOR   # ring buffers: 5.8 is the floor, not lower
    for must in ("helpers: 113", "helpers: 131", "map types: 27", "program types: tp_btf/",
                 "tracepoints: sys_exit", "tracepoints: block_rq_issue"):
        assert must in needed, f"the reader missed {must}"


def test_the_fast_object_is_read_the_same_way_and_needs_more():
    # GIVEN the fast object
    obj = _object(probes.OBJECT)
    # WHEN read by the same reader
    needed = versions(uses(obj))
    # THEN it shows the features the loader probes for (collector/kfeatures.py FAST_NEEDS)
    for must in ("kfuncs: bpf_rdonly_cast", "helpers: 158", "helpers: 156", "helpers: 181", "helpers: 164",
                 "helpers: 195", "map types: 29"):
        assert must in needed, f"the reader missed {must} in the fast object"
    assert max(v for v in needed.values() if v != (99, 0)) == (6, 2)


def test_helper_numbers_in_the_table_are_the_kernels_own():
    # GIVEN the installed uapi header, where each helper has its number: FN(name, id, ...)
    if not UAPI_BPF_H.exists():
        pytest.skip(f"{UAPI_BPF_H} is missing (linux-libc-dev)")
    header = UAPI_BPF_H.read_text()
    numbered = {int(i): n for n, i in re.findall(r"FN\((\w+),\s*(\d+)", header)}
    if not numbered:
        # an older header numbers them by their order in __BPF_FUNC_MAPPER, from unspec = 0
        mapper = header[header.index("#define __BPF_FUNC_MAPPER"):]
        mapper = mapper[:mapper.index("\n\n")]
        numbered = dict(enumerate(re.findall(r"FN\((\w+)\)", mapper)))
    # THEN every helper row names the helper the kernel numbers so
    for helper_id, (name, _version, _source) in kv.HELPERS.items():
        assert numbered.get(helper_id) == name, f"helper {helper_id} is {numbered.get(helper_id)} in {UAPI_BPF_H}"


def test_the_loader_probes_what_the_fast_object_needs_beyond_the_floor():
    # GIVEN what the fast object needs that the compatible one does not
    from iowitness.collector import kfeatures

    fast, compat = versions(uses(_object(probes.OBJECT))), versions(uses(_object(probes.COMPAT_OBJECT)))
    beyond = {k for k, v in fast.items() if v > kv.COMPAT_FLOOR and k not in compat}
    # THEN each helper, kfunc and map type of it is one of the features the loader probes
    probed = {f"helpers: {p[1]}" if p[0] == "helper" else f"kfuncs: {p[1]}" if p[0] == "kfunc" else
              f"map types: {p[1]}" for _, p, _ in kfeatures.FAST_NEEDS if p[0] != "tracepoint_args"}
    assert {k for k in beyond if not k.startswith(("instructions", "tracepoints"))} <= probed
