"""Asynchronous fio runs judged: phases, queue depth and verdicts of io_uring and libaio jobs.

tests/kernel/test_uring.py and test_aio.py prove that every request is recorded; this file
proves what the report makes of them. Ground truth is fio's own JSON (total_ios per job, the
iodepth it was given) and what O_DIRECT on a real disk must do (a queue of 16 fills up).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.support.cli import iowitness

SIZE = "16m"


def _run(tmp_path: Path, *options: str) -> tuple[dict, dict]:
    """fio under `iowitness run`; its JSON and `report --json` of the trace."""
    trace, out = tmp_path / "t.iwt", tmp_path / "fio.json"
    command = [require_tool("fio"), f"--directory={tmp_path}", f"--size={SIZE}", "--bs=4k", "--randrepeat=0",
               "--output-format=json", f"--output={out}", *options]
    iowitness("run", "-q", "-o", str(trace), "--", *command)
    report = json.loads(iowitness("report", str(trace), "--json", "--claims", str(out), "--format", "fio").stdout)
    return json.loads(out.read_text()), report


def _job_phases(report: dict) -> list[dict]:
    return [p for p in report["phases"] if p.get("benchmark_name") != "fio layout" and p["ops"] > 0]


@pytest.mark.parametrize("engine", ["io_uring", "libaio"])
def test_direct_random_reads_at_depth_16_fill_the_queue_and_agree(tmp_path, engine):
    # GIVEN two fio jobs of O_DIRECT 4 KiB random reads kept 16 deep, on this machine's disk
    fio, report = _run(tmp_path, "--name=j", f"--ioengine={engine}", "--iodepth=16", "--direct=1",
                       "--rw=randread", "--numjobs=2")
    phases = _job_phases(report)
    # THEN one phase per job, each with as many requests as fio counted for that job
    assert sorted(p["async_ops"] for p in phases) == sorted(j["read"]["total_ios"] for j in fio["jobs"])
    for p in phases:
        # AND a queue that reached fio's depth and never passed it; a disk keeps it mostly full
        assert p["depth_max"] == 16
        assert 4 <= p["depth_mean"] <= 16
        # AND the time in calls is the time covered by requests, never their sum (16x the window)
        assert p["busy_Bps"] >= p["wall_Bps"] * 0.98
    # AND each job's claim agrees, with the depth asked, fio's count and the trace's in its reasons
    # (fio's latency claims, after its rates, are judged in tests/kernel/test_latency_claims.py)
    verdicts = [v for v in report["verdicts"] if not v["claim"]["unit"] == "ns"]
    assert len(verdicts) == 2 and all(v["verdict"] == "agrees" for v in verdicts), [(v["verdict"], v["ratio"], v["figures"], v["reasons"]) for v in verdicts]
    for v in verdicts:
        text = " ".join(v["reasons"])
        assert f"iodepth=16 asked ({engine}); the trace saw at most 16 in flight" in text
        assert "fio counted" in text


def test_group_reporting_judges_the_jobs_together(tmp_path):
    # GIVEN two io_uring jobs reported as one group
    fio, report = _run(tmp_path, "--name=g", "--ioengine=io_uring", "--iodepth=8", "--direct=1",
                       "--rw=randwrite", "--numjobs=2", "--group_reporting")
    # THEN fio's one entry is judged against both jobs' phases, and agrees
    assert len(fio["jobs"]) == 1
    (verdict,) = [v for v in report["verdicts"] if v["claim"]["unit"] != "ns"]
    assert verdict["verdict"] == "agrees", (verdict["ratio"], verdict["figures"], verdict["reasons"])
    assert len(verdict["phases"]) == 2
    assert sum(p["async_ops"] for p in _job_phases(report)) == fio["jobs"][0]["write"]["total_ios"]


def test_a_synchronous_engine_given_a_depth_is_said_to_make_one_call_at_a_time(tmp_path):
    # GIVEN fio's default engine (psync) told iodepth=16, which it cannot use
    _, report = _run(tmp_path, "--name=s", "--iodepth=16", "--rw=randread")
    # THEN no phase has requests in flight, and the claim's reasons say why
    assert all(p["async_ops"] == 0 for p in _job_phases(report))
    (verdict,) = [v for v in report["verdicts"] if v["claim"]["unit"] != "ns"]
    assert any("ioengine=psync makes one call at a time" in r for r in verdict["reasons"]), verdict


def test_the_text_and_html_reports_show_the_queue(tmp_path):
    # GIVEN an io_uring job 8 deep
    _run(tmp_path, "--name=q", "--ioengine=io_uring", "--iodepth=8", "--direct=1", "--rw=randread")
    trace = tmp_path / "t.iwt"
    # THEN the text report has the queue-depth table, and the HTML the in-flight chart
    text = iowitness("report", str(trace)).stdout
    assert "queue depth (asynchronous requests" in text and "max in flight" in text
    page = tmp_path / "r.html"
    iowitness("report", str(trace), "--html", str(page))
    html = page.read_text()
    assert 'data-chart="depth' in html and "requests in flight (max 8" in html
    # AND show counts the io_uring_enter calls that drove the requests
    assert "io_uring_enter" in iowitness("show", str(trace)).stdout


def test_iozone_mmap_tests_become_phases_of_faults_and_are_judged(tmp_path):
    # GIVEN IOzone -B (its file mapped, written and read by memcpy) of a 16 MiB file in 64 KiB records
    trace = tmp_path / "b.iwt"
    iowitness("run", "-q", "-o", str(trace), "--", require_tool("iozone"), "-B", "-i0", "-i1", "-s", "16m",
              "-r", "64k", "-f", str(tmp_path / "iozone.tmp"), "-w")
    report = json.loads(iowitness("report", str(trace), "--json").stdout)
    named = {p["benchmark_name"]: p for p in report["phases"] if p["ops"] > 0}
    # THEN each of its four tests is a phase whose faults mapped the whole file, each byte once:
    # fault_bytes is the distinct bytes, so a page a read fault's fault-around mapped and a store
    # then write-faulted counts once (adding each fault's bytes, a CI run's write phase held
    # 2,571 faults over 16 MiB + 13 pages; which pages fault twice depends on the page cache)
    for test in ("write", "rewrite", "read", "reread"):
        assert named[test]["fault_bytes"] == 16 << 20, (test, named[test])
        assert named[test]["busy_Bps"] is None   # no time in calls: loads and stores are not timed
    # AND every claim is about its own phase, with the mapping named among the reasons
    verdicts = {v["claim"]["test"]: v for v in report["verdicts"]}
    assert set(verdicts) == {"write", "rewrite", "read", "reread"}
    for test, v in verdicts.items():
        assert v["phases"] == [named[test]["phase"]], v
        assert v["verdict"] in ("agrees", "explained") or any("memory mapping" in r for r in v["reasons"]), v
