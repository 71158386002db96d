"""copy_file_range, sendfile and splice (probes/transfer.bpf.h): a record per target side, checked
against strace on the same run (cp), against a workload that logs every transfer it makes
(transfer_known.c), and the clone ioctls the probe can only count."""

from __future__ import annotations

import hashlib
import random
from collections import Counter

import pytest

from tests.conftest import require_tool
from tests.support.blockdev import loop_ext4, loop_fs
from tests.support.strace import parse_transfers
from tests.support.workload import build, read_truth

MIB = 1 << 20
FIELDS = ("op", "fd", "flags", "offset", "requested", "ret")
TRANSFER_OPS = {f"{call}_{side}" for call in ("copy_file_range", "sendfile", "splice") for side in ("from", "to")}


def _known_bytes(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


def _transfers(events):
    rows = events[events["syscall"].astype(str).isin(TRANSFER_OPS)]
    return rows.sort_values(["start_ns", "op"], kind="stable")


def _as_rows(events) -> list[dict]:
    return [{"op": str(e.syscall), "fd": int(e.fd), "flags": int(e.flags), "offset": int(e.offset),
             "requested": int(e.requested), "ret": int(e.ret)} for e in events.itertuples()]


def _strace_argv(out) -> list[str]:
    return [require_tool("strace"), "-f", "-qq", "-y", "-e", "trace=copy_file_range,sendfile,splice,ioctl",
            "-o", str(out), "--"]


def test_cp_between_two_targets_is_recorded_on_both_sides(traced, tmp_path):
    # GIVEN 32 MiB of known random bytes in a file on ext4, and cp (coreutils 9 copies with
    # copy_file_range after a FICLONE that ext4 refuses)
    cp = require_tool("cp")
    size = 32 * MIB
    data = _known_bytes(size, seed=16)
    with loop_ext4(96) as (_, mnt):
        src, dst = mnt / "src.dat", mnt / "dst.dat"
        src.write_bytes(data)
        strace_out = tmp_path / "strace.txt"
        # WHEN cp copies it to another target, under strace inside the same iowitness run
        trace, _ = traced([*_strace_argv(strace_out), cp, str(src), str(dst)],
                          "--file", str(src), "--file", str(dst))
        copied = hashlib.sha256(dst.read_bytes()).digest()
    truth = [c for c in parse_transfers(strace_out.read_text()) if c["in_path"] == str(src)]
    if not truth or {c["op"] for c in truth} != {"copy_file_range"}:
        pytest.skip(f"cp did not copy with copy_file_range here: {truth}")
    assert copied == hashlib.sha256(data).digest()
    events = _transfers(trace.events)
    sources = events[events["path"].astype(str) == str(src)]
    dests = events[events["path"].astype(str) == str(dst)]
    # THEN one FROM record on the source and one TO record on the destination per call, with
    # strace's returns in strace's order, and nothing else
    assert sources["syscall"].astype(str).tolist() == ["copy_file_range_from"] * len(truth)
    assert dests["syscall"].astype(str).tolist() == ["copy_file_range_to"] * len(truth)
    assert sources["ret"].tolist() == [c["ret"] for c in truth] == dests["ret"].tolist()
    assert len(events) == 2 * len(truth)
    # AND the fds are strace's, each side naming the other in flags
    assert set(sources["fd"]) == {truth[0]["in_fd"]} and set(sources["flags"]) == {truth[0]["out_fd"]}
    assert set(dests["fd"]) == {truth[0]["out_fd"]} and set(dests["flags"]) == {truth[0]["in_fd"]}
    # AND the bytes from the source = the bytes to the destination = the file's size, in
    # contiguous ranges from offset 0 on both sides
    for side in (sources, dests):
        rets = side["ret"].tolist()
        assert sum(rets) == size
        assert side["offset"].tolist() == [sum(rets[:i]) for i in range(len(rets))]
    # AND the refused FICLONE was no transfer: nothing counted as undecoded
    assert trace.counters["transfers_not_decoded"] == 0 and trace.lost == 0


@pytest.fixture
def known_transfers(tmp_path):
    """(command, source, destination, log) of transfer_known on a 256 KiB source of known bytes."""
    exe = build("transfer_known")
    work = tmp_path / "w"
    work.mkdir()
    src, dst, log = work / "src.dat", work / "dst.dat", tmp_path / "truth.jsonl"
    src.write_bytes(_known_bytes(256 * 1024, seed=7))
    return [str(exe), str(src), str(dst), str(log)], src, dst, log


@pytest.mark.parametrize("filter_by_file", [True, False], ids=["file-set", "all-files"])
def test_every_transfer_of_a_known_workload_is_recorded_exactly(traced, known_transfers, filter_by_file):
    # GIVEN transfer_known: sendfile, splice through a pipe and copy_file_range, with and
    # without offset pointers, a short copy, one at the end of the file and a refused one
    command, src, dst, log = known_transfers
    # WHEN it runs under iowitness watching both files (or every file it opens)
    options = ("--file", str(src), "--file", str(dst)) if filter_by_file else ()
    trace, _ = traced(command, *options)
    truth = read_truth(log)
    events = _transfers(trace.events)
    # THEN every side it logged is in the trace once, field for field, and nothing else
    key = lambda r: tuple(r[f] for f in FIELDS)  # noqa: E731
    assert Counter(map(key, _as_rows(events))) == Counter(map(key, truth))
    assert len(truth) == 22
    # AND the two records of one call share its times; a pipe side has no record
    for op in ("copy_file_range", "sendfile"):
        both = events[events["syscall"].astype(str).str.startswith(op)]
        assert (both.groupby("start_ns")["latency_ns"].nunique() == 1).all()
        assert (both.groupby("start_ns").size() == 2).all()
    splices = events[events["syscall"].astype(str).str.startswith("splice")]
    assert splices.groupby("start_ns").size().tolist() == [1] * 4
    assert set(events["path"].astype(str)) == {str(src), str(dst)}


@pytest.mark.parametrize("side", ["source", "destination"])
def test_a_transfer_with_one_target_side_gives_one_record(traced, known_transfers, side):
    # GIVEN the same workload, with only one of its two files named as a target
    command, src, dst, log = known_transfers
    target = src if side == "source" else dst
    # WHEN it runs
    trace, _ = traced(command, "--file", str(target))
    truth = read_truth(log)
    target_fd = truth[0]["fd"] if side == "source" else truth[1]["fd"]
    expected = [r for r in truth if r["fd"] == target_fd]
    # THEN exactly the logged sides of that file are recorded: one record per call that has
    # the file on one side, none for the other file
    events = _transfers(trace.events)
    key = lambda r: tuple(r[f] for f in FIELDS)  # noqa: E731
    assert Counter(map(key, _as_rows(events))) == Counter(map(key, expected))
    assert len(expected) == 11
    assert set(events["path"].astype(str)) == {str(target)}


def test_summary_mode_adds_up_the_transfers(traced, known_transfers):
    # GIVEN the same workload under --summary
    command, src, dst, log = known_transfers
    trace, _ = traced(command, "--summary", "--file", str(src), "--file", str(dst))
    truth = read_truth(log)
    # THEN the aggregates hold every logged side: calls and bytes per op
    rows = trace.summary
    names = {v: k for k, v in trace._ops.items()}
    for op in TRANSFER_OPS:
        mine = [r for r in truth if r["op"] == op]
        got = rows[rows["op"] == names[op]]
        assert int(got["calls"].sum()) == len(mine), op
        assert int(got["bytes"].sum()) == sum(max(r["ret"], 0) for r in mine), op
        assert int(got["errors"].sum()) == sum(r["ret"] < 0 for r in mine), op
    assert len(trace.raw_events()) == 0 and trace.lost == 0


def test_a_reflink_copy_is_counted_as_undecoded(traced, tmp_path):
    # GIVEN btrfs, where cp --reflink=always clones the file with one FICLONE ioctl (no bytes
    # moved by any syscall)
    cp = require_tool("cp")
    size = 8 * MIB
    with loop_fs("btrfs", 128) as (_, mnt):
        src, dst = mnt / "src.dat", mnt / "dst.dat"
        src.write_bytes(_known_bytes(size, seed=3))
        strace_out = tmp_path / "strace.txt"
        # WHEN it is cloned under iowitness watching both files
        trace, _ = traced([*_strace_argv(strace_out), cp, "--reflink=always", str(src), str(dst)],
                          "--file", str(src), "--file", str(dst))
        assert dst.read_bytes() == src.read_bytes()
    clones = [line for line in strace_out.read_text().splitlines() if "FICLONE" in line and line.endswith("= 0")]
    # THEN the one successful clone strace saw is counted as a transfer the probe could not
    # decode, and no transfer record pretends to know its bytes
    assert len(clones) == 1
    assert trace.counters["transfers_not_decoded"] == 1
    assert len(_transfers(trace.events)) == 0


def test_clone_dedupe_and_encoded_ioctls_on_a_target_are_counted_once_each(traced, tmp_path):
    # GIVEN clone_known on btrfs: FICLONE, FICLONERANGE and FIDEDUPERANGE into the destination
    # that succeed, one FICLONERANGE the kernel refuses, an encoded read of the source that
    # returns its bytes and one at its end that returns none (its own output says which)
    exe = build("clone_known")
    with loop_fs("btrfs", 128) as (_, mnt):
        src, dst, other = mnt / "src.dat", mnt / "dst.dat", mnt / "other.dat"
        src.write_bytes(_known_bytes(256 * 1024, seed=11))
        # WHEN it runs with the source, the destination, or neither named as the target
        counted = {}
        for name, target in (("source", src), ("destination", dst), ("neither", other)):
            trace, proc = traced([str(exe), str(src), str(dst)], "--file", str(target))
            assert proc.stdout.splitlines()[-1] == "cloned 4"
            counted[name] = trace.counters["transfers_not_decoded"]
            assert len(_transfers(trace.events)) == 0
        assert dst.read_bytes()[:65536] == src.read_bytes()[:65536]
    # THEN each successful clone or dedupe with a target on either side is counted once, and
    # the encoded read that moved bytes when the source is a target; the refused clone and the
    # empty read are not, and nothing is counted when neither file is a target
    assert counted == {"source": 4, "destination": 3, "neither": 0}
