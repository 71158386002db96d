"""The probe against ground truth: every call known_io makes on its target, field by field,
and IOzone's per-syscall counts and bytes against strace on an identical run."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.conftest import require_tool
from tests.support.strace import file_calls_in, path_prefix, strace_command, strace_file_calls
from tests.support.workload import build_known_io, read_truth

FIELDS = ("op", "pid", "tid", "fd", "offset", "requested", "ret", "flags")


def _as_truth_rows(events):
    """Trace events in the known_io log's vocabulary (requested and offset as signed numbers)."""
    rows = []
    for e in events.itertuples():
        rows.append({"op": e.syscall, "pid": int(e.tgid), "tid": int(e.tid), "fd": int(e.fd),
                     "offset": int(e.offset), "requested": int(e.requested) - (1 << 64)
                     if int(e.requested) >= 1 << 63 else int(e.requested),
                     "ret": int(e.ret), "flags": int(e.flags)})
    return rows


@pytest.mark.parametrize("filter_by_file", [True, False], ids=["file-set", "all-files"])
def test_every_call_on_the_target_is_recorded_exactly(traced, tmp_path, filter_by_file):
    # GIVEN the known_io workload: a main thread, a second thread and a forked child doing
    # every covered syscall on target.dat, plus I/O on a file that is not a target
    exe = build_known_io()
    bench = tmp_path / "bench"
    (bench / "other").mkdir(parents=True)
    log = tmp_path / "truth.jsonl"
    target = bench / "target.dat"
    # WHEN it runs under iowitness, watching target.dat (or every file it opens)
    options = ("--file", str(target)) if filter_by_file else ()
    trace, _ = traced([str(exe), str(bench), str(log)], *options)
    truth = read_truth(log)
    events = trace.events
    if not filter_by_file:
        # the unfiltered trace also holds the log and the non-target file; compare target.dat only
        nontarget = events[events["path"].astype(str).str.endswith("nontarget.dat")]
        assert len(nontarget) > 0
        events = events[events["path"].astype(str) == str(target)]
    else:
        # THEN nothing from the non-target file or the log is in the trace
        assert set(events["path"].astype(str)) == {str(target)}
    recorded = _as_truth_rows(events)
    # THEN every logged call is in the trace once, with the same fields, and nothing else is
    key = lambda r: tuple(r[f] for f in FIELDS)  # noqa: E731
    assert Counter(map(key, recorded)) == Counter(map(key, truth))
    # AND every call took time
    assert (events["latency_ns"] > 0).all()
    assert len(truth) == 59


def test_iozone_counts_and_bytes_equal_strace(traced, tmp_path):
    # GIVEN an IOzone run of write, read, random, backward and stride tests on a small file
    iozone = require_tool("iozone")
    require_tool("strace")
    work = tmp_path / "w"
    work.mkdir()
    target = work / "iozone.tmp"
    command = [iozone, "-i0", "-i1", "-i2", "-i3", "-i5", "-s", "512k", "-r", "4k", "-f", str(target)]
    # WHEN the same run is made under strace -f and under iowitness
    truth = strace_file_calls(command, str(target), work, out=tmp_path / "strace.txt")
    trace, _ = traced(command)
    # THEN per-syscall counts and byte totals on the target are equal
    events = trace.events[trace.events["path"].astype(str) == str(target)]
    counts = events["syscall"].astype(str).value_counts().to_dict()
    data = events[events["ret"] > 0]
    byte_totals = {op: int(v) for op, v in data.groupby(data["syscall"].astype(str))["ret"].sum().items()
                   if op in truth["bytes"]}
    assert counts == truth["counts"]
    assert byte_totals == truth["bytes"]
    assert truth["counts"]["write"] >= 2 * 128
    # AND the trace stored those events in at most 16 bytes each (issue 5; format 2 blocks)
    assert trace.stored_bytes["events"] / len(trace.events) <= 16


def test_iozone_throughput_files_equal_strace(traced, tmp_path):
    # GIVEN IOzone throughput mode with threads (-T): calls of several threads interleave
    iozone = require_tool("iozone")
    require_tool("strace")
    work = tmp_path / "w"
    work.mkdir()
    command = [iozone, "-x", "-t", "2", "-T", "-i0", "-i1", "-s", "256k", "-r", "4k",
               "-F", str(work / "a"), str(work / "b")]
    # WHEN iowitness traces a run under strace -f (IOzone in throughput mode sleeps 2 s before
    # each test: one run, both observers, instead of one run each)
    trace, _ = traced(strace_command(command, tmp_path / "strace.txt"))
    truth = file_calls_in(tmp_path / "strace.txt", path_prefix(str(work) + "/"))
    # THEN the trace's calls on IOzone's files are strace's, syscall by syscall
    events = trace.events[trace.events["path"].astype(str).str.startswith(str(work) + "/")]
    assert events["syscall"].astype(str).value_counts().to_dict() == truth["counts"]
    # AND each file got its 256 KiB twice (write and rewrite), from threads of one process: a
    # thread per file and per test (IOzone starts new threads for each test)
    writes = events[events["syscall"] == "write"]
    paths = writes["path"].astype(str)
    assert writes.groupby(paths)["ret"].sum().to_dict() == {str(work / "a"): 2 * 256 * 1024,
                                                            str(work / "b"): 2 * 256 * 1024}
    assert writes["tgid"].nunique() == 1
    assert writes.groupby(paths)["tid"].nunique().to_dict() == {str(work / "a"): 2, str(work / "b"): 2}
    assert writes["tid"].nunique() == 4


def test_a_file_deleted_and_recreated_stays_a_target(traced, tmp_path):
    # GIVEN an IOzone -a sweep, which deletes and re-creates its file for every
    # (file size, record size) pair, traced with --file on that one name
    iozone = require_tool("iozone")
    require_tool("strace")
    work = tmp_path / "w"
    work.mkdir()
    target = work / "sweep.tmp"
    command = [iozone, "-a", "-n", "64k", "-g", "128k", "-y", "4k", "-q", "16k", "-i0", "-i1", "-f", str(target)]
    truth = strace_file_calls(command, str(target), work, out=tmp_path / "strace.txt")
    trace, _ = traced(command, "--file", str(target))
    # THEN every incarnation of the file is traced: counts equal strace's
    events = trace.events
    assert events["syscall"].astype(str).value_counts().to_dict() == truth["counts"]
    assert set(events["path"].astype(str)) == {str(target)}


def test_a_recreated_file_with_a_new_inode_is_matched_by_name(traced, tmp_path):
    # GIVEN a file written, deleted and re-created while a second name (K) keeps its first inode,
    # so the new T cannot have the same number (ext4 may hand a freed number straight back:
    # beside two CPU hogs and another worker's files it did); then K removed and another file
    # S made, which may take that first number
    work = tmp_path / "w"
    work.mkdir()
    target, keeper, spacer, first = work / "T", work / "K", work / "S", tmp_path / "first-inode"
    script = (f"printf a > {target}; stat -c %i {target} > {first}; ln {target} {keeper}; rm {target}; "
              f"printf ccc > {target}; rm {keeper}; printf bb > {spacer}")
    trace, _ = traced(["/bin/sh", "-c", script], "--file", str(target))
    events = trace.events
    writes = events[events["syscall"] == "write"]
    # THEN both incarnations are traced, each by its own inode (as stat gave them), and S is not,
    # even when it took the first one's number
    assert writes["ret"].tolist() == [1, 3]
    assert writes["ino"].tolist() == [int(first.read_text()), target.stat().st_ino]
    assert set(events["path"].astype(str)) == {str(target)}


def test_export_to_parquet_reads_in_duckdb(traced, tmp_path):
    # GIVEN a real trace of dd writing 64 blocks of 4 KiB
    duckdb = __import__("pytest").importorskip("duckdb")
    target = tmp_path / "dd.out"
    trace, _ = traced(["dd", "if=/dev/zero", f"of={target}", "bs=4k", "count=64"])
    out = tmp_path / "dd.parquet"
    from tests.support.cli import iowitness
    # WHEN exported through the command line
    iowitness("export", str(trace.meta["path"]), "--parquet", str(out))
    # THEN DuckDB reads the file as it is: 64 writes, 256 KiB, on dd's output file
    rows = duckdb.sql(f"select count(*), sum(ret) from '{out}' "
                      f"where syscall = 'write' and path = '{target}'").fetchall()
    assert rows == [(64, 64 * 4096)]
