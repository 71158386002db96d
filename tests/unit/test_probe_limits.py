"""The limits the command line states are the compiled probe's: read from its BTF with bpftool."""

from __future__ import annotations

import re

import pytest

from iowitness import probes
from iowitness.collector import targets
from iowitness.errors import UsageError
from tests.support.btf import probe_btf_dump


def _map_max_entries(name: str) -> int:
    """A map's max_entries as compiled: `__uint(max_entries, N)` is a pointer to an array of N."""
    dump = probe_btf_dump()
    types, current = {}, None
    for line in dump.splitlines():
        head = re.match(r"\[(\d+)\] \w+ ", line)
        if head:
            current = int(head.group(1))
            of, elems = re.search(r" type_id=(\d+)", line), re.search(r" nr_elems=(\d+)", line)
            types[current] = {"type": of and of.group(1), "elems": elems and elems.group(1), "members": {}}
            continue
        member = re.match(r"\s+'(\w+)' type_id=(\d+)", line)
        if member and current is not None:
            types[current]["members"][member.group(1)] = int(member.group(2))
    var = re.search(rf"\] VAR '{name}' type_id=(\d+)", dump)
    assert var, f"no map {name} in {probes.OBJECT}"
    pointer = types[types[int(var.group(1))]["members"]["max_entries"]]
    return int(types[int(pointer["type"])]["elems"])


def test_the_file_rule_limit_is_the_size_of_the_probes_names_map():
    # GIVEN the compiled probe, THEN --file takes as many paths as its names map holds
    assert targets.NAME_RULES_MAX == _map_max_entries("names")


def test_more_file_paths_than_the_map_holds_are_refused_before_anything_is_loaded(tmp_path):
    # GIVEN one path more than the map holds (a path named twice counts once)
    paths = [str(tmp_path / f"f{i}") for i in range(targets.NAME_RULES_MAX)]
    assert len(targets.file_set(paths + paths[:5]).rules) == targets.NAME_RULES_MAX
    # WHEN the file set is built, THEN a usage error that says the limit and the way round it
    with pytest.raises(UsageError, match=r"1,025 --file paths, but the probe holds at most 1,024; name their directory"):
        targets.file_set(paths + [str(tmp_path / "one-more")])
