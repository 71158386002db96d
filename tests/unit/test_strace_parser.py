"""The strace parser, on real strace outputs (tests/data/strace/README.md has the commands).

strace is the tracer tests' second witness, so the numbers it yields are checked here against
a third source each time: known_io's own log of its calls, or IOzone's arithmetic.
"""

from pathlib import Path

import pytest

from tests.support.strace import parse_strace, path_prefix, strace_file_calls
from tests.support.workload import build_known_io, read_truth, truth_totals

DATA = Path(__file__).resolve().parents[1] / "data" / "strace"
RECORDED_IN = "/tmp/iowitness-strace"
KiB = 1024


def recorded(name: str) -> str:
    return (DATA / name).read_text()


def test_known_io_counts_match_its_own_log():
    # GIVEN strace's view of a known_io run, and the log known_io wrote of that same run
    text = recorded("known_io.txt")
    truth = truth_totals(read_truth(DATA / "known_io.jsonl"))

    # WHEN the calls on the target are counted
    seen = parse_strace(text, f"{RECORDED_IN}/known/target.dat")

    # THEN every op and every byte agrees, the failing read (-EBADF) and the thread's and
    # child's calls included
    assert seen == truth


def test_known_io_trace_covers_every_op_the_probe_records():
    # GIVEN the known_io log
    truth = truth_totals(read_truth(DATA / "known_io.jsonl"))

    # WHEN its ops are listed
    ops = set(truth["counts"])

    # THEN it exercises every syscall the probe records except openat2, which glibc never calls
    assert ops == {
        "open", "openat", "creat", "read", "write", "pread64", "pwrite64", "readv", "writev",
        "preadv", "pwritev", "preadv2", "pwritev2", "lseek", "fsync", "fdatasync", "close",
        "dup", "dup2", "dup3", "fcntl", "ftruncate", "fallocate",
    }


def test_known_io_nontarget_file_is_counted_apart():
    # GIVEN the known_io trace
    text = recorded("known_io.txt")

    # WHEN the calls on other/nontarget.dat are counted
    seen = parse_strace(text, f"{RECORDED_IN}/known/other/nontarget.dat")

    # THEN they are exactly what nontarget_io() in known_io.c makes (glibc's open() is an openat)
    assert seen["counts"] == {
        "openat": 1, "write": 1, "lseek": 1, "read": 1, "pwrite64": 1, "pread64": 1, "fsync": 1, "close": 1,
    }
    assert seen["bytes"] == {"write": 4096, "read": 4096, "pwrite64": 100, "pread64": 100}


def test_known_io_log_writes_match_the_log_itself():
    # GIVEN the known_io trace, and the log file it wrote one line per write
    text = recorded("known_io.txt")
    log = (DATA / "known_io.jsonl").read_bytes()

    # WHEN the calls on the log are counted
    seen = parse_strace(text, f"{RECORDED_IN}/known_io.jsonl")

    # THEN there is one write per line, and together they wrote the whole file
    assert seen["counts"]["write"] == log.count(b"\n")
    assert seen["bytes"]["write"] == len(log)


def test_prefix_takes_every_file_under_a_directory():
    # GIVEN the known_io trace, and both files known_io touches under its directory
    text = recorded("known_io.txt")
    target = parse_strace(text, f"{RECORDED_IN}/known/target.dat")
    other = parse_strace(text, f"{RECORDED_IN}/known/other/nontarget.dat")

    # WHEN the calls are counted by directory prefix
    seen = parse_strace(text, path_prefix(f"{RECORDED_IN}/known/"))

    # THEN the prefix takes both files, and not the log next to the directory
    for op in set(target["counts"]) | set(other["counts"]):
        assert seen["counts"][op] == target["counts"].get(op, 0) + other["counts"].get(op, 0), op


def test_iozone_write_and_read_passes():
    # GIVEN IOzone's write/rewrite (-i0) and read/reread (-i1) of a 256 KiB file in 4 KiB records
    text = recorded("iozone_small.txt")
    records = 256 // 4

    # WHEN the calls on its test file are counted
    seen = parse_strace(text, f"{RECORDED_IN}/iozone.tmp")

    # THEN each pass writes or reads the file once, record by record
    assert seen["counts"]["write"] == 2 * records
    assert seen["bytes"]["write"] == 2 * 256 * KiB
    # and each read pass first reads one record to prime caches and seeks back to 0
    # (iozone.c 3.4xx, read_perf_test: "Need to prime the instruction cache & TLB")
    assert seen["counts"]["read"] == 2 * (records + 1)
    assert seen["bytes"]["read"] == 2 * (records + 1) * 4 * KiB
    assert seen["counts"]["lseek"] == 2


def test_iozone_closes_every_fd_it_opens():
    # GIVEN the single-process IOzone trace
    text = recorded("iozone_small.txt")

    # WHEN the calls on its test file are counted
    seen = parse_strace(text, f"{RECORDED_IN}/iozone.tmp")["counts"]

    # THEN every successful open, by any of the open calls, has its close
    opens = sum(seen.get(op, 0) for op in ("open", "openat", "openat2", "creat"))
    assert opens > 0
    assert opens == seen["close"]


@pytest.mark.parametrize("name", ["f1", "f2"])
def test_iozone_threads_each_file_written_twice(name):
    # GIVEN two IOzone threads writing 128 KiB files in 4 KiB records, calls interleaved
    # (some split in "<unfinished ...>" / "<... resumed>" halves, one openat of f1 among them)
    text = recorded("iozone_threads.txt")

    # WHEN the calls on one thread's file are counted
    seen = parse_strace(text, f"{RECORDED_IN}/{name}")

    # THEN the initial write and the rewrite each wrote it whole, each with one open and close
    # (thread_write_test, thread_rwrite_test)
    assert seen["counts"]["write"] == 2 * (128 // 4)
    assert seen["bytes"]["write"] == 2 * 128 * KiB
    assert seen["counts"]["openat"] == 2
    assert seen["counts"]["close"] == 2


def test_iozone_threads_predicate_takes_both_files():
    # GIVEN the two-thread IOzone trace
    text = recorded("iozone_threads.txt")

    # WHEN the calls are counted with a predicate for both files
    seen = parse_strace(text, lambda p: p in {f"{RECORDED_IN}/f1", f"{RECORDED_IN}/f2"})

    # THEN both threads' writes are there
    assert seen["counts"]["write"] == 2 * 2 * (128 // 4)
    assert seen["bytes"]["write"] == 2 * 2 * 128 * KiB


def test_escaped_and_deleted_path():
    # GIVEN a file named with '<', '>', ', ', ') = 5' and 'ü', unlinked while still open
    text = recorded("odd_path_deleted.txt")

    # WHEN the calls on it are counted by its real name
    seen = parse_strace(text, f"{RECORDED_IN}/odd <name>, x) = 5 \u00fc.dat")

    # THEN the Python one-liner's open, 100-byte write and close are all found
    assert seen == {"counts": {"openat": 1, "write": 1, "close": 1}, "bytes": {"write": 100}}


def test_call_resumed_without_its_start_is_refused():
    # GIVEN the known_io trace cut just after a call's "<unfinished ...>" half
    lines = recorded("known_io.txt").splitlines(keepends=True)
    first_unfinished = next(i for i, line in enumerate(lines) if line.endswith("<unfinished ...>\n"))
    cut = "".join(lines[first_unfinished + 1 :])

    # WHEN it is parsed
    # THEN the orphan "<... resumed>" half is an error, not a silently lost call
    with pytest.raises(ValueError, match="resumed but never started"):
        parse_strace(cut, f"{RECORDED_IN}/known/target.dat")


def test_strace_of_a_live_known_io_run(tmp_path):
    # GIVEN known_io built here, its target directory, and its log outside that directory
    exe = build_known_io()
    target_dir = tmp_path / "target"
    target_dir.mkdir()
    log = tmp_path / "truth.jsonl"

    # WHEN it runs under strace
    seen = strace_file_calls([exe, target_dir, log], target_dir / "target.dat", tmp_path)

    # THEN strace and known_io's own log agree on every op and byte
    assert seen == truth_totals(read_truth(log))
