"""Phases and benchmark names on real IOzone, fio and dd runs, and `iowitness report` on them.

Ground truth is never the analysis code. It is what each benchmark says about itself:
IOzone's output (the column header and rows of its table, its throughput summaries, the
per-child xfer counts it prints with -C) and its arithmetic (-s file size, -r record size,
one pass over the file per column); fio's JSON (total_ios and io_bytes per job and
direction); dd's "records out" and "bytes copied" lines. What IOzone does without printing
it (the read test's one-record warm-up, the second backward pass, the stop flag of
throughput mode) is cited from its source, iozone.c, where it happens.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import struct

import pytest

from iowitness.analysis.read.run import load
from tests.conftest import require_tool
from tests.support.cli import iowitness

KIB = 1024
MIB = 1024 * KIB
READS = {"read", "pread64", "readv", "preadv", "preadv2"}
WRITES = {"write", "pwrite64", "writev", "pwritev", "pwritev2"}
EXIT_BAD_TRACE = 6  # docs/exit-codes.md


# ---- what the benchmarks printed -------------------------------------------------------

def iozone_table(stdout: str) -> list[dict]:
    """IOzone's result table as printed: per row, file kB, record kB and the names of the
    columns that hold a number, in printed order.

    The header is two lines; a word of the upper line that ends in the same character column
    as a word of the lower one prefixes it ("random" over "read" is "random read"). Numbers
    are right-aligned under their column name, give or take a character.
    """
    lines = stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if re.match(r"\s+kB\s+reclen\s", line))
    upper = {m.end(): m.group() for m in re.finditer(r"\S+", lines[at - 1])}
    columns = [(m.end(), f"{upper[m.end()]} {m.group()}" if m.end() in upper else m.group())
               for m in re.finditer(r"\S+", lines[at])]
    rows = []
    for line in lines[at + 1:]:
        cells = [(m.end(), m.group()) for m in re.finditer(r"\S+", line)]
        if not cells:
            continue
        if not all(re.fullmatch(r"\d+(\.\d+)?", text) for _, text in cells):
            break
        named = []
        for end, _ in cells:
            column_end, name = min(columns, key=lambda c: abs(c[0] - end))
            assert abs(column_end - end) <= 2, f"cannot tell which column {line!r} fills at {end}"
            named.append(name)
        assert named[:2] == ["kB", "reclen"], line
        rows.append({"kB": int(cells[0][1]), "reclen": int(cells[1][1]), "tests": named[2:]})
    return rows


def iozone_throughput(stdout: str) -> list[dict]:
    """Per throughput test, in printed order: its name, the number of children and, when
    IOzone ran with -C, each child's xfer count in bytes (child i works on the i-th -F file)."""
    tests = []
    for block in re.split(r"\n\s*\n", stdout):
        head = re.search(r"Children see throughput for\s+(\d+)\s+(.+?)\s+=", block)
        if head:
            xfer = [float(kb) * KIB for _, kb in re.findall(r"Child\[(\d+)\] xfer count =\s*([\d.]+) kB", block)]
            tests.append({"name": head.group(2), "children": int(head.group(1)), "xfer": xfer})
    return tests


def fio_json(stdout: str) -> dict:
    """fio's --output-format=json document (fio may print a line or two before it)."""
    return json.loads(stdout[re.search(r"^\{", stdout, re.MULTILINE).start():])


def _by_name(phases, column: str) -> dict:
    return phases.groupby(phases["benchmark_name"].astype(str))[column].sum().to_dict()


def _data_syscalls(trace, phase: int) -> set[str]:
    events = trace.events(phase=phase)
    names = set(events["syscall"].astype(str))
    return names & (READS | WRITES)


# ---- traces shared by several tests ------------------------------------------------------

@pytest.fixture(scope="module")
def iozone_all(tmp_path_factory):
    """IOzone tests 0-7 on a 1 MiB file in 4 KiB records, traced on that file only."""
    iozone = require_tool("iozone")
    where = tmp_path_factory.mktemp("iozone-all")
    target, out = where / "iozone.tmp", where / "all.iwt"
    iowitness("run", "-q", "-o", str(out), "--file", str(target), "--",
              iozone, "-i0", "-i1", "-i2", "-i3", "-i4", "-i5", "-i6", "-i7",
              "-s", "1m", "-r", "4k", "-f", str(target))
    return out


def _pinned_to_one_cpu():
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


# ---- IOzone ----------------------------------------------------------------------------

IOZONE_COLUMNS = ["write", "rewrite", "read", "reread", "random read", "random write", "bkwd read",
                  "record rewrite", "stride read", "fwrite", "frewrite", "fread", "freread"]


def test_iozone_phases_are_named_after_iozones_columns_in_its_order(iozone_all):
    # GIVEN IOzone's tests 0-7 on a 1 MiB file in 4 KiB records, and the table IOzone printed
    trace = load(iozone_all)
    printed = iozone_table(trace.output["stdout"])
    assert [(row["kB"], row["reclen"]) for row in printed] == [(1024, 4)]
    assert printed[0]["tests"] == IOZONE_COLUMNS
    # WHEN the phases are rebuilt from the trace
    phases = trace.phases()
    names = list(phases["benchmark_name"])
    # THEN each printed column is a phase, in IOzone's order, with one more phase right after
    # "bkwd read": IOzone reads the file backwards twice and prints the first pass only
    # (iozone.c, reverse_perf_test: revreadtime[2], store_value(revreadrate[0]))
    second = names.index("bkwd read") + 1
    assert names[second].startswith("bkwd read") and names[second] != "bkwd read"
    assert phases["pattern"].iloc[second] == "backward"
    assert names[:second] + names[second + 1:] == printed[0]["tests"]
    # AND every pass covers the 1 MiB file once, in 4 KiB records, on that file
    assert phases["bytes"].tolist() == [MIB] * len(names)
    assert phases["ops"].tolist() == [MIB // (4 * KIB)] * len(names)
    assert set(phases["record_size"]) == {4 * KIB}
    assert set(phases["path"].astype(str)) == {trace.meta["command"][-1]}
    # AND the read test's first call is a warm-up kept out of the figures: each of its two
    # passes reads one record and seeks back to 0 first (iozone.c, read_perf_test: "Need to
    # prime the instruction cache & TLB"); no other test does
    warmups = dict(zip(names, phases["warmup_ops"]))
    assert warmups.pop("read") == 1 and warmups.pop("reread") == 1
    assert set(warmups.values()) == {0}


def test_iozone_pwrite_and_pread_tests_use_the_positional_calls(traced, workdir):
    # GIVEN IOzone's pwrite and pread tests, which run only with -E
    iozone = require_tool("iozone")
    target = workdir / "iozone.tmp"
    trace, _ = traced([iozone, "-E", "-i0", "-i9", "-i10", "-s", "1m", "-r", "4k", "-f", str(target)],
                      "--file", str(target))
    printed = iozone_table(trace.output["stdout"])
    assert printed[0]["tests"] == ["write", "rewrite", "pwrite", "repwrite", "pread", "repread"]
    # WHEN the phases are rebuilt
    phases = trace.phases()
    # THEN they are IOzone's columns in order, each 1 MiB
    assert list(phases["benchmark_name"]) == printed[0]["tests"]
    assert phases["bytes"].tolist() == [MIB] * 6
    # AND the p* phases are made of pwrite64 / pread64 calls only, the others of write
    calls = {name: _data_syscalls(trace, int(n)) for name, n in zip(phases["benchmark_name"], phases["phase"])}
    assert calls == {"write": {"write"}, "rewrite": {"write"},
                     "pwrite": {"pwrite64"}, "repwrite": {"pwrite64"},
                     "pread": {"pread64"}, "repread": {"pread64"}}


AUTO = ["-a", "-n", "64k", "-g", "256k", "-y", "4k", "-q", "16k", "-i0", "-i1"]


@pytest.fixture
def iozone_auto(traced, workdir):
    """IOzone's automatic mode over 64-256 KiB files and 4-16 KiB records, tests 0 and 1."""
    iozone = require_tool("iozone")
    target = workdir / "iozone.tmp"
    trace, _ = traced([iozone, *AUTO, "-f", str(target)], "--file", str(target))
    return trace


def test_iozone_auto_mode_phases_follow_every_row_of_its_table(iozone_auto):
    # GIVEN an IOzone sweep and the rows it printed: one per (file size, record size)
    trace = iozone_auto
    printed = iozone_table(trace.output["stdout"])
    assert [(r["kB"], r["reclen"]) for r in printed] == [(f, r) for f in (64, 128, 256) for r in (4, 8, 16)]
    # WHEN the phases are rebuilt
    phases = trace.phases()
    # THEN each row is four phases in the row's order, named after its columns, with the row's
    # record size and one pass over the row's file size each
    expected = [(name, row["reclen"] * KIB, row["kB"] * KIB) for row in printed for name in row["tests"]]
    assert len(expected) == 9 * 4
    got = list(zip(phases["benchmark_name"], phases["record_size"], phases["bytes"]))
    assert got == expected


def test_iozone_auto_mode_starts_every_row_on_a_new_file(iozone_auto):
    # GIVEN the same sweep: before each row's write test IOzone deletes the file and creates it
    # again (strace of this command shows unlink + creat before every row), so each row's
    # "write" writes a new file and its "read" reads data no earlier test read
    trace = iozone_auto
    phases = trace.phases()
    creats = trace.events[trace.events["syscall"].astype(str) == "creat"]
    assert len(creats) == 9
    # WHEN the phases are rebuilt
    flags = list(zip(phases["benchmark_name"], phases["rewrite"], phases["reread"]))
    # THEN only each row's second pass is a re-write or a re-read
    row = [("write", False, False), ("rewrite", True, False), ("read", False, False), ("reread", False, True)]
    assert flags == row * 9


def _throughput(traced, workdir, *iozone_args, **popen):
    """IOzone throughput mode on two files: the trace, the two -F paths, what IOzone printed."""
    iozone = require_tool("iozone")
    files = [str(workdir / "f1"), str(workdir / "f2")]
    if popen:
        # `traced` cannot pass settings to the process: run the CLI directly
        out = workdir.parent / "throughput.iwt"
        iowitness("run", "-q", "-o", str(out), "--", iozone, *iozone_args, "-F", *files, **popen)
        trace = load(out)
    else:
        trace, _ = traced([iozone, *iozone_args, "-F", *files])
    return trace, files, iozone_throughput(trace.output["stdout"])


def test_iozone_throughput_mode_without_stonewalling_is_one_group_per_test(traced, workdir):
    # GIVEN IOzone with two processes and no stonewalling (-x: every child does all its work),
    # on 64 MiB files: each child's pass takes tens of milliseconds, far longer than the time
    # between the two children's starts (up to a few milliseconds on a busy 2-CPU machine)
    trace, files, printed = _throughput(traced, workdir, "-x", "-C", "-t", "2", "-i0", "-s", "64m", "-r", "4k")
    assert [(t["name"], t["children"]) for t in printed] == [("initial writers", 2), ("rewriters", 2)]
    # WHEN the phases and groups are rebuilt
    phases = trace.phases()
    groups = trace.report().groups
    # THEN each IOzone test is one group of its two children, named after the test
    assert groups["members"].tolist() == [2, 2]
    by_phase = phases.set_index("phase")
    names = [sorted(by_phase.loc[g, "benchmark_name"]) for g in groups["phases"]]
    assert names == [["write", "write"], ["rewrite", "rewrite"]]
    # AND each member wrote its whole file, as IOzone's per-child xfer counts say
    for group, test in zip(groups.itertuples(), printed):
        members = by_phase.loc[group.phases]
        assert sorted(members["path"].astype(str)) == files
        assert members["bytes"].tolist() == [64 * MIB] * 2
        assert test["xfer"] == [64 * MIB] * 2
    # AND both figures are there, and the children's sum of rates is at least the parent's
    # figure (each child's time is within the group's wall time)
    for g in groups.itertuples():
        assert math.isfinite(g.children_Bps) and math.isfinite(g.parent_Bps)
        assert g.children_Bps >= g.parent_Bps > 0
        assert g.bytes == 128 * MIB


def test_iozone_throughput_groups_of_short_tests_follow_iozones_tests(traced, workdir):
    # GIVEN the same on 16 KiB files: each child's pass (4 calls) takes some microseconds, less
    # than the time between the two children's starts (tens of microseconds at best), so the
    # two children of a test do not overlap
    trace, files, printed = _throughput(traced, workdir, "-x", "-t", "2", "-i0", "-s", "16k", "-r", "4k")
    assert [(t["name"], t["children"]) for t in printed] == [("initial writers", 2), ("rewriters", 2)]
    # WHEN the phases are rebuilt
    phases = trace.phases()
    # THEN IOzone's two tests are still two groups of two children, named after the test:
    # IOzone starts the rewriters only when every initial writer is done
    groups = trace.report().groups
    by_phase = phases.set_index("phase")
    names = [sorted(by_phase.loc[g, "benchmark_name"]) for g in groups["phases"]]
    assert names == [["write", "write"], ["rewrite", "rewrite"]]
    assert list(phases["benchmark_name"]) == ["write", "write", "rewrite", "rewrite"]
    # AND every child was traced: each file got its 16 KiB twice (write and rewrite), each pass
    # from a child process of its own (IOzone forks new children per test), never from the parent
    events = trace.events
    writes = events[events["syscall"] == "write"]
    paths = writes["path"].astype(str)
    assert {f: int(writes[paths == f]["ret"].sum()) for f in files} == {f: 2 * 16 * KIB for f in files}
    assert {f: writes[paths == f]["tgid"].nunique() for f in files} == {f: 2 for f in files}
    assert trace.meta["pid"] not in set(writes["tgid"])
    assert "Children see throughput" in trace.output["stdout"]


def test_iozone_stonewall_point_agrees_with_iozones_per_child_counts(traced, workdir):
    # GIVEN IOzone with two processes and stonewalling on (no -x): the first child to finish
    # sets a stop flag; each other child notes how much it has written when it sees the flag
    # (iozone.c thread_write_test / thread_rwrite_test: *stop_flag, child_stat->actual), and
    # -C prints that per child. Pinned to one CPU, the children take turns as on a loaded
    # machine, so the other child is caught mid-file in both tests
    trace, files, printed = _throughput(traced, workdir, "-C", "-t", "2", "-i0", "-s", "8m", "-r", "4k",
                                        preexec_fn=_pinned_to_one_cpu)
    assert [(t["name"], t["children"]) for t in printed] == [("initial writers", 2), ("rewriters", 2)]
    # WHEN the groups are rebuilt
    phases = trace.phases().set_index("phase")
    groups = trace.report().groups
    # a child IOzone stopped before its first write has no phase and is printed with 0 kB; so
    # is a child that made one write and then saw the flag (IOzone looks at the flag after
    # each write and counts the writes before it): its one-record phase can join a group
    test_of = {"write": "initial writers", "rewrite": "rewriters"}
    grouped = set()
    for group in groups.itertuples():
        name = test_of[phases.loc[group.phases[0], "benchmark_name"]]
        (test,) = [t for t in printed if t["name"] == name]
        grouped.add(name)
        path_of = phases.loc[group.phases, "path"].astype(str).tolist()
        at_stonewall = dict(zip(path_of, group.bytes_at_stonewall))
        iozone_says = dict(zip(files, test["xfer"]))
        assert sum(x > 0 for x in test["xfer"]) <= group.members <= len(test["xfer"])
        assert all(at_stonewall[p] <= 4 * KIB for p in path_of if iozone_says[p] == 0)
        # THEN the first finisher is the child IOzone says did all of its 8 MiB
        assert max(iozone_says.values()) == 8 * MIB
        # AND each child's bytes at the stonewall are IOzone's count for it, within a record:
        # IOzone decides in user space after each write returns whether the flag was up,
        # the trace cuts where the finisher's last write ended in the kernel
        off = {os.path.basename(p): {"trace": at_stonewall[p], "iozone": iozone_says[p]}
               for p in files if abs(at_stonewall[p] - iozone_says[p]) > 4 * KIB}
        assert not off, f"{test['name']}: bytes at the stonewall differ from IOzone's: {off}"
        assert 0 < group.share_at_stonewall <= 1
    # AND a test without a group is one where IOzone credits at most one child
    assert all(sum(x > 0 for x in t["xfer"]) <= 1 for t in printed if t["name"] not in grouped)


# ---- fio -------------------------------------------------------------------------------

def test_fio_jobs_name_their_phases(traced, workdir):
    # GIVEN two fio jobs, each with its own file (fio's command line: options after --name=X
    # belong to job X); the read job's file exists already, so fio reads it as it is
    fio = require_tool("fio")
    alpha, beta = workdir / "a", workdir / "b"
    beta.write_bytes(b"\0" * MIB)
    trace, _ = traced([fio, "--output-format=json",
                       "--name=alpha", "--rw=write", "--bs=4k", "--size=1m", f"--filename={alpha}",
                       "--name=beta", "--rw=read", "--bs=4k", "--size=1m", f"--filename={beta}"])
    jobs = {j["jobname"]: j for j in fio_json(trace.output["stdout"])["jobs"]}
    # WHEN the phases are rebuilt
    phases = trace.phases()
    # THEN there is one phase per job, named after the job and its direction, on the job's file
    assert sorted(zip(phases["benchmark_name"], phases["path"].astype(str))) == [
        ("alpha write", str(alpha)), ("beta read", str(beta))]
    # AND each moved what fio says it did: 1 MiB in 256 calls
    assert _by_name(phases, "bytes") == {"alpha write": jobs["alpha"]["write"]["io_bytes"],
                                         "beta read": jobs["beta"]["read"]["io_bytes"]} == {
        "alpha write": MIB, "beta read": MIB}
    assert _by_name(phases, "ops") == {"alpha write": jobs["alpha"]["write"]["total_ios"],
                                       "beta read": jobs["beta"]["read"]["total_ios"]}


def test_fio_default_file_names_and_layout(traced, workdir):
    # GIVEN two fio jobs with fio's default file names (JOB.0.0 in --directory, a global option
    # as it comes before the first --name); delta reads a file that does not exist yet, so fio
    # first lays it out (writes it whole) before the jobs start
    fio = require_tool("fio")
    trace, _ = traced([fio, "--output-format=json", f"--directory={workdir}", "--bs=4k",
                       "--name=gamma", "--rw=write", "--size=1m",
                       "--name=delta", "--rw=randread", "--size=512k"])
    jobs = {j["jobname"]: j for j in fio_json(trace.output["stdout"])["jobs"]}
    # WHEN the phases are rebuilt
    phases = trace.phases()
    by_name = dict(zip(phases["benchmark_name"], zip(phases["path"].astype(str), phases["bytes"], phases["pattern"])))
    # THEN the jobs' own phases are named after them, on their default files
    assert by_name["gamma write"] == (str(workdir / "gamma.0.0"), MIB, "sequential")
    assert by_name["delta read"] == (str(workdir / "delta.0.0"), 512 * KIB, "random")
    # AND what each job's phases moved is what fio says the job did, per direction: the
    # layout is fio's preparation, not I/O of the job (fio counts it nowhere)
    for job, report in jobs.items():
        for direction in ("read", "write"):
            named = phases[phases["benchmark_name"] == f"{job} {direction}"]
            assert int(named["bytes"].sum()) == report[direction]["io_bytes"], (job, direction)


def test_fio_randrw_job_is_one_mixed_phase(traced, workdir):
    # GIVEN a fio random read/write job, 70 % reads, one call per I/O (psync), on a file that
    # exists already (no layout)
    fio = require_tool("fio")
    target = workdir / "mix"
    target.write_bytes(b"\0" * 4 * MIB)
    trace, _ = traced([fio, "--output-format=json", "--name=mix", f"--filename={target}", "--rw=randrw",
                       "--rwmixread=70", "--ioengine=psync", "--bs=4k", "--size=4m"])
    job = fio_json(trace.output["stdout"])["jobs"][0]
    # WHEN the phases are rebuilt
    phases = trace.phases()
    # THEN the job is one mixed phase, not hundreds of little runs
    assert len(phases) == 1
    phase = phases.iloc[0]
    assert phase["operation"] == "mixed"
    assert str(phase["benchmark_name"]).startswith("mix")
    # AND its reads and writes are fio's own counts, so the read share is close to 70 %
    assert int(phase["read_ops"]) == job["read"]["total_ios"]
    assert int(phase["ops"]) - int(phase["read_ops"]) == job["write"]["total_ios"]
    assert int(phase["bytes"]) == job["read"]["io_bytes"] + job["write"]["io_bytes"] == 4 * MIB
    assert abs(phase["read_fraction"] - 0.7) <= 0.1


# ---- dd --------------------------------------------------------------------------------

def test_dd_write_is_one_sequential_phase(traced, workdir):
    # GIVEN dd writing 32 records of 64 KiB from /dev/zero (no file filter: /dev is never a target)
    target = workdir / "dd.out"
    trace, _ = traced(["dd", "if=/dev/zero", f"of={target}", "bs=64k", "count=32"])
    said = trace.output["stderr"]
    records = int(re.search(r"^(\d+)\+0 records out$", said, re.MULTILINE).group(1))
    copied = int(re.search(r"^(\d+) bytes .*copied", said, re.MULTILINE).group(1))
    assert (records, copied) == (32, 2 * MIB)
    # WHEN the phases are rebuilt
    phases = trace.phases()
    # THEN it is one sequential write phase named as dd, of what dd says it copied
    assert len(phases) == 1
    phase = phases.iloc[0]
    assert (phase["benchmark_name"], phase["pattern"], phase["path"]) == ("dd write", "sequential", str(target))
    assert (int(phase["bytes"]), int(phase["ops"]), int(phase["record_size"])) == (copied, records, 64 * KIB)


# ---- iowitness report ----------------------------------------------------------------------

def test_report_prints_the_phase_table(iozone_all):
    # GIVEN a real IOzone trace, WHEN `iowitness report` prints it
    proc = iowitness("report", str(iozone_all))
    # THEN it says which benchmark, and each phase's IOzone name is in the table
    assert "benchmark: iozone" in proc.stdout
    for name in IOZONE_COLUMNS:
        assert re.search(rf"\s{re.escape(name)}\s", proc.stdout), name
    assert proc.stderr == ""


def test_report_json_has_every_phase(iozone_all):
    # GIVEN a real IOzone trace, WHEN `iowitness report --json` prints it
    doc = json.loads(iowitness("report", str(iozone_all), "--json").stdout)
    # THEN it parses and holds the same phases as the Python API, in order, and the trace is complete
    phases = load(iozone_all).phases()
    assert [p["phase"] for p in doc["phases"]] == phases["phase"].tolist()
    assert [p["benchmark_name"] for p in doc["phases"]] == phases["benchmark_name"].tolist()
    assert [p["bytes"] for p in doc["phases"]] == [MIB] * len(phases)
    assert doc["benchmark"] == "iozone" and doc["complete"] is True


def test_report_csv_is_a_header_and_one_line_per_phase(iozone_all):
    # GIVEN a real IOzone trace, WHEN `iowitness report --csv` prints it
    text = iowitness("report", str(iozone_all), "--csv").stdout
    rows = list(csv.reader(io.StringIO(text)))
    # THEN the first line names the columns and each other line is a phase
    phases = load(iozone_all).phases()
    header, body = rows[0], rows[1:]
    assert {"phase", "benchmark_name", "bytes", "record_size"} <= set(header)
    assert len(body) == len(phases)
    assert [r[header.index("benchmark_name")] for r in body] == phases["benchmark_name"].tolist()


def _chunks(data: bytes) -> list[tuple[int, int, int]]:
    """(kind, payload offset, payload length) of each chunk (docs/trace-format.md: a 16-byte
    header, then chunks of u32 kind, u32 crc32, u64 length, payload)."""
    chunks, at = [], 16
    while at + 16 <= len(data):
        kind, _, length = struct.unpack_from("<IIQ", data, at)
        chunks.append((kind, at + 16, length))
        at += 16 + length
    return chunks


def test_report_on_a_truncated_trace_reports_what_is_left(traced, workdir, tmp_path):
    # GIVEN a trace whose events came in two batches (the collector writes what it gathered
    # as one chunk every FLUSH_SECONDS, 0.5 s, or a little later: the pause must outlast a
    # flush interval by a margin), cut in the middle of the last batch
    target = workdir / "data"
    trace, _ = traced(["/bin/sh", "-c", f"dd if=/dev/zero of={target} bs=4k count=64 2>/dev/null; sleep 1.5; "
                                        f"dd if={target} of=/dev/null bs=4k 2>/dev/null"], "--file", str(target))
    whole = open(trace.meta["path"], "rb").read()
    events = [c for c in _chunks(whole) if c[0] == 2]
    assert len(events) >= 2
    _, payload, length = events[-1]
    cut = tmp_path / "cut.iwt"
    cut.write_bytes(whole[:payload + length // 2])
    # WHEN `iowitness report` reads it, as text and as JSON
    text = iowitness("report", str(cut), check=False)
    as_json = iowitness("report", str(cut), "--json", check=False)
    # THEN nothing fails: exit 0, nothing on stderr
    assert (text.returncode, text.stderr) == (0, "")
    assert (as_json.returncode, as_json.stderr) == (0, "")
    # AND the phases of the first batch are there: dd's 64 writes of 4 KiB
    doc = json.loads(as_json.stdout)
    assert doc["complete"] is False
    assert doc["phases"][0]["operation"] == "write" and doc["phases"][0]["bytes"] == 64 * 4 * KIB
    # AND the text report says that the trace is incomplete
    assert "incomplete" in text.stdout.lower()


def test_report_on_garbage_exits_6_with_one_line(tmp_path):
    # GIVEN a file of random bytes
    garbage = tmp_path / "garbage.iwt"
    garbage.write_bytes(os.urandom(64 * KIB))
    # WHEN `iowitness report` is asked to read it
    proc = iowitness("report", str(garbage), check=False)
    # THEN it exits 6 (a trace that cannot be read) with one line on stderr and nothing else
    assert proc.returncode == EXIT_BAD_TRACE
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("iowitness: ")
    assert proc.stdout == ""
