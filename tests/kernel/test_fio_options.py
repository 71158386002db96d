"""fio options that change what fio counts, for real: ramp_time (fio runs the job's first half
second and counts only what follows: the ground truth is fio's own count of the requests it
timed, its "issued rwts" line or its JSON total_ios, read by the test), loops (one job, its file
read three times: one figure over the three) and verify (fio's own verify-state file is not the
job's data; its verify pass is timed from its open to its last read, fio's JSON io_bytes the
ground truth of what it read) and trimwrite on a raw loop device (fio's trim bytes and the
written bytes the trace holds: the trims, discards with no call, cannot be judged)."""

from __future__ import annotations

import json
import re

import pytest

from iowitness import load
from tests.conftest import require_tool
from tests.support.blockdev import loop_raw
from tests.support.cli import iowitness


@pytest.mark.parametrize("output_format", ["normal", "json"])
def test_a_ramp_is_left_out_of_fios_figures(tmp_path, output_format):
    fio = require_tool("fio")
    data = tmp_path / "data.bin"
    data.write_bytes(bytes(range(256)) * 16384)   # 4 MiB
    trace = tmp_path / "fio.iwt"
    run = iowitness("run", "-q", "-o", str(trace), "--", fio, "--name=ramped", f"--filename={data}",
                    "--rw=randread", "--bs=4k", "--ramp_time=500ms", "--runtime=1", "--time_based",
                    "--rate_iops=1000", f"--output-format={output_format}", timeout=120)
    if output_format == "json":
        counted = json.loads(run.stdout[run.stdout.index("{"):])["jobs"][0]["read"]["total_ios"]
    else:
        counted = int(re.search(r"issued rwts: total=(\d+),", run.stdout).group(1))
    reads = int(load(trace).events["syscall"].isin(["read", "pread64"]).sum())
    # the ramp's half second at 1,000 IOPS ran requests fio did not count
    assert reads - counted >= 300, (reads, counted)
    check = iowitness("check", "-v", str(trace), check=False)
    out = check.stdout
    assert check.returncode == 0 and "DISAGREES" not in out, out
    verdict_lines = [line for line in out.splitlines() if line.startswith(("AGREES", "EXPLAINED"))]
    assert len(verdict_lines) == 2 and verdict_lines[0].startswith("AGREES") and "ramped read:" in verdict_lines[0], out
    # both the rate and the latencies are judged on the requests fio counted, and say so
    assert out.count(f"the first {reads - counted:,} calls ran before fio started counting") == 2, out
    assert f"fio counted {counted:,} requests, the trace {counted:,}" in out, out


def _fio_json(tmp_path, *options):
    fio = require_tool("fio")
    data = tmp_path / "data.bin"
    trace = tmp_path / "fio.iwt"
    run = iowitness("run", "-q", "-o", str(trace), "--", fio, "--name=job", f"--filename={data}", "--bs=64k",
                    "--size=8M", "--output-format=json", *options, timeout=120, cwd=str(tmp_path))
    job = json.loads(run.stdout[run.stdout.index("{"):])["jobs"][0]
    check = iowitness("check", "-v", str(trace), check=False)
    return job, load(trace).events, check.returncode, check.stdout


def test_loops_are_one_figure_over_the_jobs_runtime(tmp_path):
    job, events, rc, out = _fio_json(tmp_path, "--rw=read", "--loops=3")
    reads = events[events["syscall"].isin(["read", "pread64"])]
    # fio read the 8 MiB three times, and says so
    assert int(reads["ret"].sum()) == job["read"]["io_bytes"] == 3 * (8 << 20)
    # one job: its bytes over its time, not the three loops' rates added up (which read 0.31x)
    assert rc == 0 and "DISAGREES" not in out, out
    rate = next(line for line in out.splitlines() if line.startswith(("AGREES", "EXPLAINED")) and "job read:" in line)
    assert "phases 2–4" in rate or "phases 1–3" in rate, out


def test_a_verify_state_file_is_fios_own_not_a_phase(tmp_path):
    job, events, rc, out = _fio_json(tmp_path, "--rw=write", "--verify=md5")
    states = [p for p in events["path"].dropna().unique() if str(p).endswith("-verify.state")]
    # fio wrote its verify state (the test sees it in the trace) ...
    assert states, sorted(events["path"].dropna().unique())
    # ... and the write job's figures are over its data file's 8 MiB only
    assert job["write"]["io_bytes"] == 8 << 20
    assert rc == 0 and "DISAGREES" not in out, out
    assert "the counts differ" not in out and "verify.state" not in out, out


def test_a_verify_pass_is_judged_over_its_own_reads(tmp_path):
    # GIVEN fio writing 32 MiB at random offsets, then verifying them (crc32c): it opens the file
    # again, drops its cached pages, reads every block back and counts that pass as a read
    job, events, rc, out = _fio_json(tmp_path, "--rw=randwrite", "--bs=4k", "--size=32M", "--verify=crc32c")
    data = events[events["path"] == str(tmp_path / "data.bin")]
    reads = data[data["syscall"].isin(["read", "pread64"])]
    # (fio's own count: the verify read the 32 MiB it wrote, and the trace holds those reads)
    assert job["read"]["io_bytes"] == job["write"]["io_bytes"] == int(reads["ret"].sum()) == 32 << 20
    # THEN no figure disagrees: the verify's read rate is fio's runtime from before its cache
    # invalidation to its last read (it disagreed 0.82x, over the reads alone)
    assert "DISAGREES" not in out, out
    read = next(line for line in out.splitlines() if "job read:" in line)
    assert read.startswith(("AGREES", "EXPLAINED")), out


def test_trims_cannot_be_judged_and_say_why(tmp_path):
    # GIVEN fio's trimwrite on a raw loop device: each 64 KiB block discarded (an ioctl, which
    # the probe does not record), then written
    fio = require_tool("fio")
    trace = tmp_path / "fio.iwt"
    with loop_raw(32) as disk:
        run = iowitness("run", "-q", "-o", str(trace), "--", fio, "--name=tw", "--rw=trimwrite", "--bs=64k",
                        "--size=16m", f"--filename={disk}", "--direct=1", "--output-format=json", timeout=120)
    job = json.loads(run.stdout[run.stdout.index("{"):])["jobs"][0]
    events = load(trace).events
    writes = events[events["syscall"].isin(["write", "pwrite64"])]
    assert job["trim"]["io_bytes"] == job["write"]["io_bytes"] == int(writes["ret"].sum()) == 16 << 20
    # WHEN checked
    check = iowitness("check", str(trace), check=False)
    # THEN the trim rate and latency are CANNOT JUDGE, saying they are discards (they said "no
    # phase of the trace matches this claim"), and the write figures are judged
    trims = [line for line in check.stdout.splitlines() if "tw trim" in line]
    assert len(trims) == 2 and all(line.startswith("CANNOT JUDGE") and "discard requests" in line
                                   for line in trims), check.stdout
    assert "DISAGREES" not in check.stdout, check.stdout


def test_terse_output_is_read(tmp_path):
    # --minimal is terse version 3: fio's figures in a line of semicolons
    fio = require_tool("fio")
    data = tmp_path / "data.bin"
    trace = tmp_path / "fio.iwt"
    run = iowitness("run", "-q", "-o", str(trace), "--", fio, "--name=terse", f"--filename={data}",
                    "--rw=write", "--bs=64k", "--size=8M", "--minimal", timeout=120)
    fields = run.stdout.strip().split(";")
    assert fields[0] == "3" and fields[2] == "terse", run.stdout
    events = load(trace).events
    writes = events[events["syscall"].isin(["write", "pwrite64"]) & (events["path"] == str(data))]
    # the write block is the second direction's: its KiB equal the bytes the trace saw written
    assert int(fields[5 + 41]) * 1024 == int(writes["ret"].sum()) == 8 << 20
    check = iowitness("check", str(trace), check=False)
    assert check.returncode == 0 and "DISAGREES" not in check.stdout, check.stdout
    assert check.stdout.count("terse write") == 2, check.stdout   # its rate and its latency
