"""Verdicts on real runs whose right verdict is known by construction.

Each test runs a benchmark in a way that fixes what its number means: IOzone with and without
-e and -c (the fsync or close inside its timed window, iozone(1)), IOzone's throughput mode
with and without -x (stonewalling, iozone.c's stop flag), fio's JSON with and without
--group_reporting, dd with and without conv=fdatasync (dd(1): "physically write output file
data before finishing"), and a home-made stdio benchmark whose buffering and late flush are
written into its source (tests/workloads/stdio_bench.c). The expected verdict follows from
that, never from the analysis code; the tests check that iowitness finds it, with reasons
that carry the trace's numbers.

Sizes are large enough that every timed phase takes well over 10 ms (below that a phase is
"too short to time" and cannot be judged): 64 MiB for IOzone and for each of its children
(four children on a two-CPU machine take turns; with 4 MiB each, a child's whole file takes
about a millisecond, the scale of its waits for a CPU), 128-256 MiB for fio and dd.
"""

from __future__ import annotations

import json
import re

import pytest

from iowitness.analysis import benchmarks
from iowitness.analysis.benchmarks import spec
from iowitness.analysis.judge import match_claims as matching
from iowitness.analysis.read.run import load
from tests.conftest import REPO, require_tool
from tests.support import dd_clock
from tests.support.cli import iowitness
from tests.support.workload import build

KIB = 1024
MIB = 1024 * KIB
SPEC = REPO / "tests" / "data" / "claims" / "spec"
EXIT_DISAGREES, EXIT_USAGE = 1, 2  # iowitness/commands/check.py


def verdicts_of(trace, command=None, spec_path=None, tolerance=0.05):
    """The verdicts `iowitness check` gives, with the trace's events (late flushes, fio's
    layout process); `command` judges the claims as if the benchmark had run with it."""
    text = trace.output.get("stdout", "") + trace.output.get("stderr", "")
    if spec_path:
        source, claims = "spec", spec.parse(text, spec.load(spec_path))
    else:
        source, claims = benchmarks.claims_from(text, trace.meta["command"])
    return matching.match(trace.report(), claims, source, command or trace.meta["command"], tolerance,
                          trace.missing, trace=trace)


def check(trace, *options):
    return iowitness("check", trace.meta["path"], *options, check=False)


def one_line_error(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


# ---- IOzone, one process -----------------------------------------------------------------

def _iozone(tmp_path_factory, name, *flags):
    iozone = require_tool("iozone")
    where = tmp_path_factory.mktemp(f"iozone-{name}")
    out = where / "run.iwt"
    iowitness("run", "-q", "-o", str(out), "--", iozone, *flags, "-i0", "-s", "64m", "-r", "64k",
              "-f", str(where / "iozone.tmp"))
    return load(out)


@pytest.fixture(scope="module")
def iozone_plain(tmp_path_factory):
    return _iozone(tmp_path_factory, "plain")


@pytest.fixture(scope="module")
def iozone_e(tmp_path_factory):
    return _iozone(tmp_path_factory, "e", "-e")


def _fsync_matters(verdict):
    """IOzone fsyncs after its writes with or without -e; the premise of the window tests is
    that this fsync takes long enough to tell the windows apart (it did on every machine we
    ran on: 64 MiB of dirty pages take tens of ms to reach a disk)."""
    if not verdict.figures["+fsync"] < 0.9 * verdict.figures["calls"]:
        pytest.skip(f"the fsync after 64 MiB was too quick here to tell the windows apart: {verdict.figures}")


def test_iozone_without_e_agrees_with_the_calls_window_and_names_the_fsync_left_out(iozone_plain):
    # GIVEN IOzone's write and rewrite tests without -e: IOzone fsyncs the file after the
    # last write, outside its timing (iozone(1), -e: "Include flush (fsync,fflush) in the
    # timing calculations")
    # WHEN its claims are judged
    verdicts = verdicts_of(iozone_plain)
    # THEN each is about one phase, timed from the first to the last write, and agrees
    assert [v.claim.test for v in verdicts] == ["write", "rewrite"]
    for v in verdicts:
        assert len(v.phases) == 1 and v.window == "calls" and v.verdict == "agrees", v
        # (within 5% of the calls' own figure; on a busy machine IOzone's clock may run on
        # through a wait for a CPU at a call's return: then within what the calls around bound)
        if abs(v.ratio - 1) > 0.05:
            assert v.reasons[0].startswith("IOzone's clock ran at least over its calls"), v.reasons
            assert v.figures["bounded, least"] * 0.95 <= v.claim.bytes_per_s <= v.figures["calls"] * 1.05
        # AND when the fsync is long, the reasons say it was left out, with its numbers
        if v.figures["+fsync"] < 0.9 * v.figures["calls"]:
            note = next(r for r in v.reasons if r.startswith("fsync outside the timed window"))
            assert re.search(r"after its last write ends \d[\d.]* m?s after it", note), note
    # AND `iowitness check` exits 0
    proc = check(iozone_plain)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [line.split()[0] for line in proc.stdout.splitlines()] == ["AGREES", "AGREES"]


def test_iozone_with_e_times_up_to_the_fsync(iozone_e):
    # GIVEN IOzone -e: the fsync after the last write is inside its timing
    # WHEN its claims are judged
    verdicts = verdicts_of(iozone_e)
    # THEN the window runs to the end of the fsync, and the claims agree with it
    for v in verdicts:
        assert v.window == "+fsync" and v.verdict == "agrees", v
    assert check(iozone_e).returncode == 0


def test_iozone_with_c_times_up_to_the_close(tmp_path_factory):
    # GIVEN IOzone -c: the close is inside its timing (iozone(1), -c)
    trace = _iozone(tmp_path_factory, "c", "-c")
    # WHEN its claims are judged
    verdicts = verdicts_of(trace)
    # THEN the window runs to the end of the close, and the claims agree with it
    for v in verdicts:
        assert v.window == "+close" and v.verdict == "agrees", v


def test_iozone_e_run_judged_as_without_e_is_explained_by_the_fsync_inside(iozone_e):
    # GIVEN a run with -e, judged as if the command line had not said -e
    plain_command = [a for a in iozone_e.meta["command"] if a != "-e"]
    # WHEN its claims are judged against the calls alone
    verdicts = verdicts_of(iozone_e, command=plain_command)
    # THEN each claim is explained, first reason: the fsync was inside the timed window
    for v in verdicts:
        _fsync_matters(v)
        assert v.window == "calls" and v.verdict == "explained", v
        assert v.reasons[0].startswith("fsync inside the timed window"), v.reasons
        assert abs(v.claim.bytes_per_s / v.figures["+fsync"] - 1) <= 0.05


def test_iozone_run_without_e_judged_as_with_e_is_explained_by_the_fsync_outside(iozone_plain):
    # GIVEN a run without -e, judged as if the command line had said -e
    command = iozone_plain.meta["command"]
    with_e = command[:1] + ["-e"] + command[1:]
    # WHEN its claims are judged against the window up to the fsync
    verdicts = verdicts_of(iozone_plain, command=with_e)
    # THEN each claim is explained: it fits the calls alone, the fsync was outside
    for v in verdicts:
        _fsync_matters(v)
        assert v.window == "+fsync" and v.verdict == "explained", v
        assert v.reasons[0].startswith("fsync outside the timed window"), v.reasons


# ---- IOzone throughput mode ----------------------------------------------------------------

def _min_xfer_kb(stdout: str) -> list[float]:
    return [float(kb) for kb in re.findall(r"Min xfer\s*=\s*([\d.]+) kB", stdout)]


def _throughput(traced, workdir, *flags):
    iozone = require_tool("iozone")
    files = [str(workdir / f"f{i}") for i in range(1, 5)]
    trace, _ = traced([iozone, *flags, "-t", "4", "-i0", "-s", "64m", "-r", "64k", "-F", *files])
    return trace


def test_iozone_per_child_lines_are_judged_each_against_its_own_child(traced, workdir):
    # GIVEN IOzone -C: after each test's summary, one line per child with its xfer count and
    # throughput (child i works on the i-th -F file)
    trace = _throughput(traced, workdir, "-C")
    printed = re.findall(r"Child\[(\d+)\] xfer count", trace.output["stdout"])
    # WHEN its claims are judged
    verdicts = [v for v in verdicts_of(trace) if v.claim.scope == "child"]
    # THEN every child line IOzone printed is judged, in its order, and agrees or is explained
    assert [v.claim.extra["child"] for v in verdicts] == [int(c) for c in printed] and len(printed) == 8
    for v in verdicts:
        assert v.ok, (v.verdict, v.claim.printed, v.figures, v.reasons)
    # AND `check` shows each, named by its child
    shown = check(trace).stdout
    assert all(f"(child {i}," in shown for i in range(4)), shown


def test_iozone_stagger_parent_is_timed_from_the_last_child_let_go(traced, workdir):
    # GIVEN IOzone -t 4 -d 50000: the parent lets the children go 50 ms apart and starts its
    # clock after the last one (iozone.c: Poll(delay_start) before each child, then starttime1)
    trace = _throughput(traced, workdir, "-d", "50000")
    # WHEN its initial writers' parent claim is judged
    [parent] = [v for v in verdicts_of(trace) if v.claim.scope == "parent" and v.claim.test == "write"]
    # THEN the parent's figures run from the last go, and the claim fits them
    assert parent.ok, (parent.verdict, parent.claim.printed, parent.figures, parent.reasons)
    phases = trace.phases()
    last_start = int(phases[phases["benchmark_name"] == "write"]["data_first_ns"].max())
    first_start = int(phases[phases["benchmark_name"] == "write"]["data_first_ns"].min())
    assert last_start - first_start >= 3 * 50_000_000 * 0.9   # the children started 50 ms apart


def test_iozone_throughput_with_stonewalling_is_explained_by_it(traced, workdir):
    # GIVEN IOzone with four processes and stonewalling on (no -x): when the first child
    # ends its file, the others stop counting (iozone.c: *stop_flag); "Min xfer" is what
    # the child that counted least had done by then
    trace = _throughput(traced, workdir)
    stdout = trace.output["stdout"]
    # WHEN its claims are judged
    verdicts = verdicts_of(trace)
    # THEN every claim is judged, and agrees or is explained
    assert {v.claim.scope for v in verdicts} == {"children", "parent", "min process", "max process",
                                                "avg process", "min xfer"}
    for v in verdicts:
        assert v.ok, (v.verdict, v.claim.printed, v.figures, v.reasons)
    # AND the children's and parent's claims are about the group of the test's processes:
    # four in the initial write (every child writes its whole file there); a rewriter that
    # sees the flag before its first write moves nothing, and the reasons say so
    by_test = {}
    for v in verdicts:
        if v.claim.scope in ("children", "parent"):
            by_test.setdefault(v.claim.test, []).append(v)
    assert sorted(by_test) == ["rewrite", "write"]
    assert all(len(v.phases) == 4 for v in by_test["write"])
    for v in by_test["rewrite"]:
        assert len(v.phases) == 4 or any("moved no data" in r for r in v.reasons), v.reasons
    # AND where IOzone's "Min xfer" is below the file size, the stonewalling is named, with
    # the share of the test's bytes done at that point
    for test, min_kb in zip(["write", "rewrite"], _min_xfer_kb(stdout)):
        if min_kb < 64 * 1024:
            for v in by_test[test]:
                named = [r for r in v.reasons if re.match(r"stonewalling: .* had done \d+% of the test's bytes", r)]
                assert named, v.reasons
    assert check(trace).returncode == 0


def test_iozone_throughput_without_stonewalling_agrees(traced, workdir):
    # GIVEN the same with -x: every child counts its whole file over its whole time
    trace = _throughput(traced, workdir, "-x")
    assert _min_xfer_kb(trace.output["stdout"]) == [64 * 1024, 64 * 1024]
    # WHEN its claims are judged
    verdicts = verdicts_of(trace)
    # THEN each is about all four children's phases and fits the calls of each: it agrees,
    # or a child waiting for a CPU when the parent said go explains it (the reasons say so)
    for v in verdicts:
        window = "parent to close" if v.claim.scope == "parent" else "calls"
        assert len(v.phases) == 4 and v.window == window and v.ok, (v.claim.printed, v.figures, v.reasons)
        assert not any("stonewalling" in r for r in v.reasons)
    # AND the children's total agrees with the calls
    [children] = [v for v in verdicts if v.claim.scope == "children" and v.claim.test == "write"]
    assert children.verdict == "agrees" or "may start before its first call" in children.reasons[0]


# ---- fio -----------------------------------------------------------------------------------

def _fio_jobs(workdir, *extra):
    fio = require_tool("fio")
    return [fio, "--output-format=json", *extra,
            "--name=alpha", "--rw=write", "--bs=4k", "--size=128m", "--ioengine=psync",
            f"--filename={workdir / 'alpha.dat'}",
            "--name=beta", "--rw=read", "--bs=64k", "--size=256m", "--ioengine=psync",
            f"--filename={workdir / 'beta.dat'}"]


def _rates(verdicts):
    """The verdicts on fio's rates; its latency claims (one per job and direction, after them)
    are judged in tests/kernel/test_latency_claims.py."""
    return [v for v in verdicts if "fio_latency" not in v.claim.extra]


def _fio_agrees(verdicts, expected):
    assert sorted(v.claim.test for v in verdicts) == sorted(expected)
    for v in verdicts:
        # fio's bw is io_bytes over its runtime in whole ms: over 100 ms, within 1 %
        assert v.verdict == "agrees" and len(v.phases) == 1, (v.claim.printed, v.figures, v.reasons)
        assert abs(v.ratio - 1) <= 0.05


def test_fio_json_two_jobs_agree(traced, workdir):
    # GIVEN a writer job and a reader job on separate files (fio lays the reader's file out
    # first, in its main process)
    trace, _ = traced(_fio_jobs(workdir))
    # WHEN the claims of fio's JSON are judged
    verdicts = _rates(verdicts_of(trace))
    # THEN each job's claim is about its own phase (not the layout) and agrees
    _fio_agrees(verdicts, ["alpha write", "beta read"])
    names = trace.phases().set_index("phase")["benchmark_name"]
    assert [names[v.phases[0]] for v in sorted(verdicts, key=lambda v: v.claim.test)] == ["alpha write", "beta read"]
    assert check(trace).returncode == 0


def test_fio_group_reporting_claims_are_about_the_group(traced, workdir):
    # GIVEN the same jobs with --group_reporting: one entry, named after the first job,
    # with each direction's bytes over the group's runtime for that direction
    trace, _ = traced(_fio_jobs(workdir, "--group_reporting"))
    # WHEN its claims are judged
    verdicts = _rates(verdicts_of(trace))
    # THEN "alpha read" is beta's reading, "alpha write" alpha's writing, and both agree
    _fio_agrees(verdicts, ["alpha write", "alpha read"])
    names = trace.phases().set_index("phase")["benchmark_name"]
    assert {v.claim.test: names[v.phases[0]] for v in verdicts} == {"alpha write": "alpha write",
                                                                    "alpha read": "beta read"}


def test_check_reads_fio_output_saved_to_a_file(traced, workdir, tmp_path):
    # GIVEN fio writing its JSON to a file (--output) instead of standard output
    saved = tmp_path / "saved.json"
    trace, _ = traced(_fio_jobs(workdir, f"--output={saved}"))
    assert json.loads(saved.read_text())["jobs"]
    # WHEN `iowitness check` reads the claims from that file
    proc = check(trace, "--claims", str(saved))
    # THEN both claims agree: exit 0, one line each (and one for each job's latency, which
    # agrees or is explained: tests/kernel/test_latency_claims.py)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line.split()[0:3] for line in proc.stdout.splitlines()]
    assert sorted(line for line in lines if line[2].endswith(":")) == [["AGREES", "alpha", "write:"],
                                                                      ["AGREES", "beta", "read:"]]
    assert sorted(line[1:] for line in lines if not line[2].endswith(":")) == [["alpha", "write"], ["beta", "read"]]
    assert all(line[0] in ("AGREES", "EXPLAINED") for line in lines), proc.stdout
    # AND without --claims there is nothing to check: a usage error
    proc = check(trace)
    assert proc.returncode == EXIT_USAGE and one_line_error(proc)


# ---- dd ------------------------------------------------------------------------------------

def _dd(traced, workdir, *conv):
    dd = require_tool("dd")
    trace, _ = traced([dd, "if=/dev/zero", f"of={workdir / 'dd.dat'}", "bs=1M", "count=256", *conv])
    return trace


def test_dd_without_fdatasync_times_the_writes(traced, workdir):
    # GIVEN dd writing 256 MiB without a sync: its clock stops after the last write
    trace = _dd(traced, workdir)
    # WHEN its claim is judged
    [v] = verdicts_of(trace)
    # THEN the window is the writes alone, and dd's number (bytes over its seconds) agrees; on a
    # busy machine dd may wait for a CPU between its clock reads and its calls, which the off-CPU
    # records show (analysis/judge/rate_edges.py): EXPLAINED so only when they do. A wait inside
    # its reopen (open, dup2, close) is before its clock (coreutils dd.c): no reason may count it
    # (beside two hogs dd once waited 9.0 ms between its open and its first write, and the
    # open-to-close window, which holds the reopen, explained the figure instead)
    assert v.window == "calls", v
    assert dd_clock.why_not_honest(v, trace) is None, (dd_clock.why_not_honest(v, trace), v)
    assert v.claim.extra["bytes"] == 256 * MIB


def test_dd_with_fdatasync_times_the_sync_too(traced, workdir):
    # GIVEN dd with conv=fdatasync: it syncs the output before it stops its clock
    trace = _dd(traced, workdir, "conv=fdatasync")
    # WHEN its claim is judged
    [v] = verdicts_of(trace)
    # THEN the window runs to the end of the fdatasync, and the claim agrees with it
    assert v.window == "+fsync" and v.verdict == "agrees", v
    assert v.figures["+fsync"] < v.figures["calls"]
    syncs = trace.events[trace.events["syscall"].astype(str) == "fdatasync"]
    assert len(syncs) == 1


# ---- a home-made stdio benchmark -------------------------------------------------------------

@pytest.fixture(scope="module")
def stdio_bench(tmp_path_factory):
    """tests/workloads/stdio_bench.c on a 32 MiB file, traced."""
    where = tmp_path_factory.mktemp("stdio")
    exe, out = build("stdio_bench"), where / "run.iwt"
    iowitness("run", "-q", "-o", str(out), "--", str(exe), str(where / "bench.dat"), "32")
    return load(out)


# what the program writes (tests/workloads/stdio_bench.c): 100-byte records and a 1000-byte tail
STDIO_FILE_BYTES = 32 * MIB // 100 * 100 + 1000
STDIO_BLOCK = 4096  # glibc's buffer: st_blksize of the test file system


def test_stdio_benchmark_claims_are_matched_and_judged(stdio_bench):
    # GIVEN the four tests of the home-made benchmark and a spec for its output
    # WHEN its claims are judged
    verdicts = verdicts_of(stdio_bench, spec_path=SPEC / "stdio_seed.toml")
    by_test = {v.claim.test: v for v in verdicts}
    # THEN each test's claim is about its own phase
    assert list(by_test) == ["sequential write", "random read", "sequential read", "random write"]
    names = stdio_bench.phases().set_index("phase")["name"]
    assert {t: names[v.phases[0]] for t, v in by_test.items()} == {t: t for t in by_test}
    # AND the sequential tests and the random write agree: the program counts the bytes the
    # kernel moved, whatever the size of the calls
    for test in ("sequential write", "sequential read", "random write"):
        assert by_test[test].verdict == "agrees", by_test[test]
    # AND `iowitness check` with the spec exits 0
    proc = check(stdio_bench, "--spec", str(SPEC / "stdio_seed.toml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_stdio_benchmark_shows_the_streams_blocks_and_late_flush(stdio_bench):
    # GIVEN the sequential write test: 100-byte fprintf records through a stdio stream,
    # the clock stopped before fclose
    [v] = [v for v in verdicts_of(stdio_bench, spec_path=SPEC / "stdio_seed.toml")
           if v.claim.test == "sequential write"]
    # THEN the reasons say the kernel saw 4096-byte writes, not the program's records
    blocks = STDIO_FILE_BYTES // STDIO_BLOCK
    sizes = next(r for r in v.reasons if r.startswith("the kernel saw"))
    assert sizes.startswith(f"the kernel saw {blocks + 1:,} writes of {STDIO_BLOCK:,} bytes"), sizes
    # AND they name the final flush: the bytes still in the buffer, written by fclose just
    # before its close, after the program stopped its clock
    flush = STDIO_FILE_BYTES - blocks * STDIO_BLOCK
    assert any(r.startswith(f"{flush:,} bytes written by a final flush just before close") for r in v.reasons), \
        v.reasons


def test_stdio_random_reads_are_explained_by_the_streams_block_reads(stdio_bench):
    # GIVEN the random read test: an fseek and 100 bytes of fgetc per record; glibc reads a
    # whole 4096-byte block at each seek, so the kernel reads 41 times what the program uses
    [v] = [v for v in verdicts_of(stdio_bench, spec_path=SPEC / "stdio_seed.toml")
           if v.claim.test == "random read"]
    # WHEN its claim (bytes the program got, per second) is judged
    # THEN it is far below the kernel's figure, and explained by the block reads, with the
    # bytes per read the claim implies
    assert v.ratio < 0.1 and v.verdict == "explained", v
    assert v.reasons[0].startswith("a buffered stream reads whole blocks"), v.reasons
    per_read = float(re.search(r"\(([\d,]+) bytes per read\)", v.reasons[0]).group(1).replace(",", ""))
    assert 80 <= per_read <= 125, v.reasons[0]


def test_stdio_claims_matched_by_order_give_the_same_verdicts(stdio_bench):
    # GIVEN a spec that maps the n-th claim to the n-th phase
    by_name = verdicts_of(stdio_bench, spec_path=SPEC / "stdio_seed.toml")
    by_order = verdicts_of(stdio_bench, spec_path=SPEC / "stdio_seed_order.toml")
    # THEN each claim gets the same phase and verdict either way
    assert [(v.phases, v.verdict) for v in by_order] == [(v.phases, v.verdict) for v in by_name]


# ---- iowitness check: exit codes ---------------------------------------------------------------

def test_check_exit_codes(traced, workdir, tmp_path):
    # GIVEN a dd run whose claim agrees
    trace = _dd(traced, workdir)
    assert check(trace).returncode == 0
    # WHEN its output is edited to claim three times the rate (a third of the seconds)
    stderr = trace.output["stderr"]
    m = re.search(r"copied, ([\d.]+) s, ([\d.]+) (\w+/s)", stderr)
    seconds, rate = float(m.group(1)), float(m.group(2))
    edited = tmp_path / "edited.txt"
    edited.write_text(stderr.replace(m.group(0), f"copied, {seconds / 3:.6f} s, {rate * 3:.1f} {m.group(3)}"))
    proc = check(trace, "--claims", str(edited))
    # THEN the claim disagrees: exit 1, its line says why
    assert proc.returncode == EXIT_DISAGREES, proc.stdout + proc.stderr
    assert proc.stdout.startswith("DISAGREES") and "no active figure within 5%" in proc.stdout
    # AND a tolerance that is not a number is a usage error, one line on stderr
    proc = check(trace, "--tolerance", "garbage")
    assert proc.returncode == EXIT_USAGE and "--tolerance" in one_line_error(proc)
    # AND so is a --claims file that no benchmark printed
    text = tmp_path / "notes.txt"
    text.write_text("this is a note about the run\nnothing to check here\n")
    proc = check(trace, "--claims", str(text))
    assert proc.returncode == EXIT_USAGE and one_line_error(proc)
