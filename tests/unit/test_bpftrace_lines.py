"""The bpftrace backend's user side: bpftrace's lines into the compiled probe's records.

The fixture is real bpftrace output of probes/iowitness.bt around a small IOzone run
(tests/data/bpftrace/README.md says how it was made); what IOzone did is known from its
arguments and from strace of the same command: four 64 KiB writes, four rewrites, and for
the read and the reread a first record read once, an lseek back to 0, then four reads.
"""

from __future__ import annotations

import numpy as np
import pytest

from iowitness.collector import bpftrace_lines
from iowitness.collector.bpftrace_lines import LineParser, script_text, settings_text
from iowitness.collector.targets import FileRule, KnownFile
from iowitness.errors import UsageError
from iowitness.probes.layout import layout
from tests.conftest import REPO

FIXTURE = REPO / "tests" / "data" / "bpftrace" / "iozone-i0-i1-256k.txt"
KIB = 1024


def _parsed(chunks) -> LineParser:
    parser = LineParser()
    for chunk in chunks:
        parser.feed(chunk)
    return parser


def _ops(events) -> list[str]:
    names = layout().names("iow_op", "IOW_OP_")
    return [names[int(op)] for op in events["op"]]


def test_iozone_lines_become_its_calls():
    # GIVEN bpftrace's output around IOzone -i0 -i1 -s 256k -r 64k
    parser = _parsed([FIXTURE.read_bytes()])
    events = np.concatenate(parser.events)
    ops = _ops(events)
    # WHEN the data calls are taken out
    writes = events[[op == "write" for op in ops]]
    reads = events[[op == "read" for op in ops]]
    # THEN there are IOzone's 8 writes and 10 reads of 64 KiB, at the offsets strace shows
    assert list(writes["offset"]) == [0, 64 * KIB, 128 * KIB, 192 * KIB] * 2
    assert list(reads["offset"]) == [0, 0, 64 * KIB, 128 * KIB, 192 * KIB] * 2
    for calls in (writes, reads):
        assert set(calls["requested"]) == {64 * KIB} and set(calls["ret"]) == {64 * KIB}
    assert ops.count("lseek") == 2
    # AND every call is on the one file, on ext4's device 254:0 in the kernel's encoding
    assert set(events["dev"]) == {254 << 20} and len(set(events["ino"])) == 1
    assert parser.ready and parser.lost == 0 and parser.unknown_lines == 0
    # AND opens carry their fd and flags, calls without an offset have -1
    opens = events[[op in ("openat", "creat") for op in ops]]
    assert all(opens["fd"] == opens["ret"]) and all(opens["offset"] == -1)
    assert 0o1101 in set(opens["flags"])   # creat: O_CREAT | O_WRONLY | O_TRUNC


def test_facts_name_the_file_and_the_exec():
    # GIVEN the same output
    facts = np.concatenate(_parsed([FIXTURE.read_bytes()]).facts)
    kinds = layout().enums["iow_meta_kind"]
    files = facts[facts["kind"] == kinds["IOW_META_FILE"]]
    # THEN each open of the target is a FILE fact with its path, and AT_FDCWD reads as -100
    # whether bpftrace printed it sign-extended (creat) or zero-extended (openat's int field)
    paths = {bytes(p).split(b"\0")[0] for p in files["path"]}
    assert paths == {b"/tmp/i17b/cap/iozone.tmp"}
    assert set(files["dirfd"]) == {-100}
    assert set(files["s_magic"]) == {0xEF53}   # ext4
    execs = facts[facts["kind"] == kinds["IOW_META_EXEC"]]
    assert [bytes(p).split(b"\0")[0] for p in execs["path"]] == [b"/usr/bin/iozone"]


@pytest.mark.parametrize("size", [1, 7, 100, 4096])
def test_lines_cut_anywhere_by_the_pipe_parse_the_same(size):
    # GIVEN the output delivered in pieces of any size (a pipe read ends anywhere)
    data = FIXTURE.read_bytes()
    whole = np.concatenate(_parsed([data]).events)
    pieces = np.concatenate(_parsed([data[i:i + size] for i in range(0, len(data), size)]).events)
    # THEN the records are the same
    assert whole.tobytes() == pieces.tobytes()


def test_losses_and_unknown_lines_are_counted():
    # GIVEN bpftrace's own loss lines and a record line this collector cannot read
    parser = _parsed([b"Lost 1532 events\nLost 20 events\n",
                      b"E\ttracepoint:syscalls:sys_exit_read\t1\t2\n",
                      b"E\ttracepoint:syscalls:sys_exit_getpid\t1\t2\t3\t4\t5\t6\t7\t8\t9\t10\t11\n"])
    # THEN both count as lost records, and no event is made up
    assert parser.lost == 1552 and parser.unknown_lines == 2 and not parser.events


def test_settings_hold_the_sets_and_refuse_what_bpftrace_cannot_match():
    # GIVEN a process, a file rule, a directory rule and a file already open
    rules = [FileRule(254 << 20, 12, "data.bin", "/w/data.bin"), FileRule(254 << 20, 13, "", "/w2")]
    text = settings_text([4242], rules, [KnownFile(254 << 20, 99, "/w/open.bin")])
    # THEN each becomes a map entry of the script's BEGIN
    assert "@procs[(uint64)4242] = (uint64)1;" in text
    assert f'@names[(uint64){254 << 20}, (uint64)12, "data.bin"] = (uint64)1;' in text
    assert f"@dirs[(uint64){254 << 20}, (uint64)13] = (uint64)1;" in text
    assert f"@files[(uint64){254 << 20}, (uint64)99] = (uint64)1;" in text
    # AND a name with a quote is refused in one line instead of breaking the script
    with pytest.raises(UsageError, match="--backend bpftrace cannot match"):
        settings_text([], [FileRule(1, 2, 'a"b', '/w/a"b')], [])


def test_the_shipped_script_has_its_header_and_one_settings_place():
    # GIVEN the script as installed
    text = bpftrace_lines.SCRIPT.read_text()
    # THEN it opens as every .bt script here does: name, purpose, example, how to read, overhead
    head = text.split("*/", 1)[0]
    for part in ("iowitness.bt", "Example output", "How to read it", "Overhead"):
        assert part in head
    # AND the settings go in exactly one place, inside BEGIN
    assert text.count(bpftrace_lines.SETTINGS_MARK) == 1
    filled = script_text([7], [], [])
    assert "@procs[(uint64)7]" in filled.split("BEGIN", 1)[1].split("}", 1)[0]


def test_the_scripts_example_output_is_real():
    # GIVEN the example lines in the script's header
    head = bpftrace_lines.SCRIPT.read_text().split("How to read it", 1)[0].split("Example output", 1)[1]
    examples = [line.split("*   ", 1)[1] for line in head.splitlines() if line.startswith(" *   ")]
    # THEN each is a line bpftrace printed in the fixture run it names
    printed = set(FIXTURE.read_text().splitlines())
    assert len(examples) >= 8 and all(line in printed for line in examples)
